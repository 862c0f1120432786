#!/usr/bin/env python3
"""embed-cl.py - turns OpenCL C files into a C source file.

Usage: embed-cl.py a.cl b.cl ... [--prepend a front.cl ...] --output clg_kernels.c
       [--function NAME --header NAME.h]

Each file becomes a NULL-terminated array of string chunks, every chunk
shorter than 4095 characters (the longest string literal C compilers must
accept), split on line boundaries; clg__kernel_source("a") returns the
chunks of a.cl. The library then needs no file from the source tree at run
time.

A client of clgrad (the trainer, the bench) embeds its own kernel files
the same way, with --function naming its lookup (e.g. train_kernel_source)
and --header the header declaring it, written next to the C file and
included by it; it builds them with clg_context_program_source
(clgrad_advanced.h), through clgrad's kernel cache. The library's own
lookup, clg__kernel_source, is declared by src/internal.h.

--prepend a front.cl puts front.cl's source in front of a.cl's, in the same
chunks, so that the kernel cache key, a hash of the chunks, covers it:
the generated clg_layout.cl (tools/gen-layout.py) goes in front of
common.cl, hence into every program; cl/optim.cl, the optimizer step, in
front of update.cl, update_q.cl and handrolled.cl (one file may go in front
of several).
No embedded file may #define a macro a prepended file defines: a second
definition would silently replace the first.
"""
import argparse
import os
import re
import sys

MAX_CHUNK = 4000  # characters of source per chunk, below the 4095 limit


def split_chunks(text):
    chunks, cur, size = [], [], 0
    for line in text.splitlines(keepends=True):
        # a single line longer than a chunk is cut into pieces
        while len(line) > MAX_CHUNK:
            if cur:
                chunks.append("".join(cur))
                cur, size = [], 0
            chunks.append(line[:MAX_CHUNK])
            line = line[MAX_CHUNK:]
        if size + len(line) > MAX_CHUNK and cur:
            chunks.append("".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += len(line)
    if cur:
        chunks.append("".join(cur))
    return chunks


def c_escape(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "?":
            out.append("\\?")  # no trigraphs
        elif 32 <= o < 127:
            out.append(ch)
        else:
            # 3-digit octal escapes never swallow the next character
            out.append("\\%03o" % o)
    return "".join(out)


def c_literal(chunk):
    # one literal piece per source line, concatenated by the compiler
    lines = chunk.splitlines(keepends=True)
    return "\n".join('    "%s"' % c_escape(l) for l in lines)


DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def read(path):
    # latin-1: one character per byte, so chunk sizes count bytes
    with open(path, encoding="latin-1", newline="") as f:
        return f.read()


def write(path, lines):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--prepend", nargs=2, action="append", default=[],
                    metavar=("NAME", "FILE"))
    ap.add_argument("--output", required=True)
    ap.add_argument("--function", default="clg__kernel_source",
                    help="the name of the lookup function")
    ap.add_argument("--header", help="writes a header declaring the lookup function")
    args = ap.parse_args()
    if (args.header is None) != (args.function == "clg__kernel_source"):
        sys.exit("embed-cl.py: --function and --header go together")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", args.function):
        sys.exit("embed-cl.py: --function %s is no C identifier" % args.function)

    prepend, in_front = {}, {}
    for name, path in args.prepend:
        if name in prepend:
            sys.exit("embed-cl.py: two files to prepend to %s" % name)
        prepend[name] = (path, read(path))
        for macro in DEFINE_RE.findall(prepend[name][1]):
            in_front[macro] = path

    entries = []
    seen = set()
    for path in args.files:
        base = os.path.basename(path)
        if not base.endswith(".cl"):
            continue  # the script itself may come first in the input list
        name = base[:-3]
        if name in seen:
            sys.exit("embed-cl.py: %s embedded twice" % name)
        seen.add(name)
        ident = "clg_src_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        text = read(path)
        for macro in DEFINE_RE.findall(text):
            if macro in in_front:
                sys.exit("embed-cl.py: %s defines %s, which the prepended %s already "
                         "defines" % (path, macro, os.path.basename(in_front[macro])))
        origin = base
        if name in prepend:
            origin += ", after %s" % os.path.basename(prepend[name][0])
            text = prepend[name][1] + text
        entries.append((name, ident, origin, split_chunks(text)))
    missing = set(prepend) - seen
    if missing:
        sys.exit("embed-cl.py: --prepend names no embedded file: %s" % ", ".join(sorted(missing)))

    out_name = os.path.basename(args.output)
    include = os.path.basename(args.header) if args.header else "internal.h"
    out = ["/* %s - generated by tools/embed-cl.py; do not edit. */" % out_name,
           '#include "%s"' % include, "", "#include <stddef.h>", "#include <string.h>", ""]
    for name, ident, origin, chunks in entries:
        out.append("/* %s */" % origin)
        out.append("static const char *const %s[] = {" % ident)
        for chunk in chunks:
            out.append(c_literal(chunk) + ",")
        out.append("    NULL};")
        out.append("")
    out.append("static const struct {")
    out.append("    const char *name;")
    out.append("    const char *const *chunks;")
    out.append("} clg_sources[] = {")
    for name, ident, _, _ in entries:
        out.append('    {"%s", %s},' % (c_escape(name), ident))
    out.append("};")
    out.append("")
    out.append("const char *const *%s(const char *name)" % args.function)
    out.append("{")
    out.append("    if (!name)")
    out.append("        return NULL;")
    out.append("    for (size_t i = 0; i < sizeof clg_sources / sizeof clg_sources[0]; i++)")
    out.append("        if (strcmp(clg_sources[i].name, name) == 0)")
    out.append("            return clg_sources[i].chunks;")
    out.append("    return NULL;")
    out.append("}")
    write(args.output, out)
    if args.header:
        guard = re.sub(r"[^A-Za-z0-9]", "_", os.path.basename(args.header)).upper()
        write(args.header, [
            "/* %s - generated by tools/embed-cl.py; do not edit. */" % include,
            "#ifndef %s" % guard, "#define %s" % guard, "",
            "/* The source chunks of kernel file <name>.cl (NULL-terminated, for",
            " * clg_context_program_source), or NULL when no such file is embedded:",
            " * %s. */" % ", ".join(e[0] + ".cl" for e in entries),
            "const char *const *%s(const char *name);" % args.function, "",
            "#endif /* %s */" % guard])


if __name__ == "__main__":
    main()
