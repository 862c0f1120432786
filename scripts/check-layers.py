#!/usr/bin/env python3
"""check-layers.py - no circles between the files of a folder, and with
--order no include that points up.

Circles. A file depends on another when it uses a clg__ symbol (function or
variable) that the other defines; with --all-symbols (for the tools, whose
internals have no prefix), any symbol defined at file scope without
`static`. A header's `static inline` functions count as defined by the .c
of the same name (qstate.h's by qstate.c), whose dependencies then include
what their bodies use; a header with no .c is a file of its own. Every
strongly connected set of two or more files is a circle: files that reach
each other's internals, which the design keeps layered (docs/design.md).

Order. With --order the folders are given bottom first: every
`#include "x.h"` of a .c, .cc or .h file in them names the header's folder
(the includer's own first, then the one listed folder that holds x.h;
headers elsewhere, generated ones and clgrad's, are ignored), and an
include of a folder later in the order is a back-up arrow. Folders joined
by commas are peers: none may include another's headers. A use of a
symbol (as above) defined in a later folder or a peer is one too.

Prints each file's dependencies (and each include across folders) with
--verbose, every circle and back-up arrow found, and exits 1 if there is one.

Usage: check-layers.py [--verbose] [--all-symbols] [--order] FOLDER...
       (e.g. src src/mpi; --order tools/common tools/gemm a,b tools/train)
"""
import os
import re
import sys

# A definition at file scope: a column-0 declaration of clg__name that a
# body ('{') or an initializer ('=') follows before any ';'.
DECL = re.compile(r'^[A-Za-z_][\w \t\*]*?\b(clg__\w+)\s*(\(|\[|=)', re.M)
USE = re.compile(r'\bclg__\w+\b')
# --all-symbols: any column-0 definition that is not static.
DECL_ANY = re.compile(r'^(?!static\b)(?!typedef\b)(?!int main\b)[A-Za-z_][\w \t\*]*?\b(\w+)\s*(\(|\[|=)', re.M)
USE_ANY = re.compile(r'\b[A-Za-z_]\w*\b')
# A header's inline function: its name, then its body from the '{'.
INLINE = re.compile(r'^static\s+inline\b[^;{(]*?\b(\w+)\s*\([^;{]*\{', re.M)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def strip(text):
    return STRING.sub('""', COMMENT.sub(' ', text))


def definitions(text, decl):
    found = set()
    for m in decl.finditer(text):
        rest = text[m.start():]
        body = re.search(r'[;{]', rest)
        if body is None:
            continue
        if rest[body.start()] == '{' or '=' in rest[:body.start()]:
            found.add(m.group(1))
    return found


def inlines(text):
    """{name: body} of the header text's static inline functions."""
    found = {}
    for m in INLINE.finditer(text):
        depth, end = 0, m.end() - 1
        for end in range(m.end() - 1, len(text)):
            depth += {'{': 1, '}': -1}.get(text[end], 0)
            if depth == 0:
                break
        found[m.group(1)] = text[m.end():end]
    return found


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def graph(folders, all_symbols=False):
    decl, use = (DECL_ANY, USE_ANY) if all_symbols else (DECL, USE)
    texts, headers = {}, {}
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith('.c'):
                texts[path] = strip(read(path))
            elif name.endswith('.h'):
                headers[path] = inlines(strip(read(path)))
    owner = {}
    for path, text in texts.items():
        for sym in definitions(text, decl):
            owner.setdefault(sym, path)
    # Each header's inlines belong to its .c, or to the header itself.
    bodies = {path: [text] for path, text in texts.items()}
    for path, funcs in headers.items():
        if not funcs:
            continue
        home = path[:-2] + '.c'
        home = home if home in texts else path
        for sym, body in funcs.items():
            owner.setdefault(sym, home)
            bodies.setdefault(home, []).append(body)
    deps = {}
    for path, parts in bodies.items():
        used = {}
        for sym in set(use.findall('\n'.join(parts))):
            other = owner.get(sym)
            if other is not None and other != path:
                used.setdefault(other, []).append(sym)
        deps[path] = used
    return deps


def circles(deps):
    """Tarjan's strongly connected components of two or more files."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def back_up_arrows(ranks, verbose):
    """Each include of a folder later in the order (or of a peer), as a
    message; ranks maps each folder to its place in the order."""
    holder, found = {}, []
    for folder in ranks:
        for name in sorted(os.listdir(folder)):
            if name.endswith('.h'):
                if name in holder:
                    found.append(f'{name} is in both {holder[name]} and {folder}: '
                                 'an include of it names either')
                holder.setdefault(name, folder)
    for folder, rank in ranks.items():
        for name in sorted(os.listdir(folder)):
            if not name.endswith(('.c', '.cc', '.h')):
                continue
            path = os.path.join(folder, name)
            for line, text in enumerate(read(path).splitlines(), 1):
                m = INCLUDE.match(text)
                if m is None:
                    continue
                header = m.group(1)
                local = os.path.normpath(os.path.join(folder, header))
                if os.path.exists(local):
                    target = os.path.dirname(local)
                else:
                    target = holder.get(header)
                if target is None or target not in ranks or target == folder:
                    continue
                if verbose:
                    print(f'{path}:{line}: {header} ({target})')
                if ranks[target] > rank:
                    found.append(f'{path}:{line}: includes "{header}" of {target}, '
                                 f'above {folder}')
                elif ranks[target] == rank:
                    found.append(f'{path}:{line}: includes "{header}" of {target}, '
                                 f'a peer of {folder}')
    return found


def upward_uses(deps, ranks):
    """Each use of a symbol that a file of a later folder (or of a peer)
    defines: the same arrow without an include (a prototype of its own)."""
    found = []
    for path in sorted(deps):
        here = os.path.dirname(path)
        for other in sorted(deps[path]):
            there = os.path.dirname(other)
            if there != here and ranks[there] >= ranks[here]:
                found.append(f'{path} uses {other} of {there}: '
                             f'{", ".join(sorted(deps[path][other]))}')
    return found


def main(argv):
    flags = ('--verbose', '--all-symbols', '--order')
    verbose = '--verbose' in argv
    all_symbols = '--all-symbols' in argv
    order = '--order' in argv
    args = [a for a in argv if a not in flags]
    if not args:
        print(__doc__.strip())
        return 2
    ranks = {}
    for rank, group in enumerate(args):
        for folder in group.split(',') if order else [group]:
            ranks[os.path.normpath(folder)] = rank
    folders = list(ranks)
    deps = graph(folders, all_symbols)
    if verbose:
        for path in sorted(deps):
            for other in sorted(deps[path]):
                print(f'{path} -> {other}: {", ".join(sorted(deps[path][other]))}')
    found = circles(deps)
    for comp in found:
        print('circle: ' + ' <-> '.join(comp))
        for a in comp:
            for b in comp:
                if b in deps[a]:
                    print(f'  {a} uses {b}: {", ".join(sorted(deps[a][b]))}')
    print(f'{len(deps)} files, {len(found)} circle(s)')
    arrows = back_up_arrows(ranks, verbose) + upward_uses(deps, ranks) if order else []
    for arrow in arrows:
        print('back-up arrow: ' + arrow)
    if order:
        print(f'{len(folders)} folders in order, {len(arrows)} back-up arrow(s)')
    return 1 if found or arrows else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
