#!/usr/bin/env python3
"""check-layers.py - no circles between the files of a folder.

A file depends on another when it uses a clg__ symbol (function or
variable) that the other defines; with --all-symbols (for the tools, whose
internals have no prefix), any symbol defined at file scope without
`static`. Every strongly connected set of two or
more files is a circle: files that reach each other's internals, which the
design keeps layered (docs/design.md). Prints each file's dependencies with
--verbose, every circle found, and exits 1 if there is one.

Usage: check-layers.py [--verbose] [--all-symbols] FOLDER...   (e.g. src src/mpi)
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
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


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


def graph(folders, all_symbols=False):
    decl, use = (DECL_ANY, USE_ANY) if all_symbols else (DECL, USE)
    texts = {}
    for folder in folders:
        for name in sorted(os.listdir(folder)):
            if name.endswith('.c'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as f:
                    texts[path] = strip(f.read())
    owner = {}
    for path, text in texts.items():
        for sym in definitions(text, decl):
            owner.setdefault(sym, path)
    deps = {}
    for path, text in texts.items():
        used = {}
        for sym in set(use.findall(text)):
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


def main(argv):
    verbose = '--verbose' in argv
    all_symbols = '--all-symbols' in argv
    folders = [a for a in argv if a not in ('--verbose', '--all-symbols')]
    if not folders:
        print(__doc__.strip())
        return 2
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
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
