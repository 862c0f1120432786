#!/usr/bin/env python3
"""check-client-kernels.py - no client's kernel is in libclgrad.

The trainer's kernels (tools/train/) and the bench's (bench/cl/) are
embedded into those programs and built through clg_context_program_source;
the library carries its own kernels only. Every kernel a client's .cl file
defines is looked for in the library's binary, where the embedded sources
lie as plain text (tools/embed-cl.py cuts them at line ends only, so a
kernel's declaration is never split). As a control, the library must show
at least one kernel of its own (one the named library .cl files define), so
that a library whose sources are not found as text fails too.

Usage: check-client-kernels.py LIBRARY --library a.cl ... --client b.cl ...
Exits 1 naming each client kernel found in LIBRARY.
"""
import argparse
import re
import sys

# __kernel, then any __attribute__((...)) (one level of parentheses inside)
PREFIX = r"\b(?:__)?kernel\s+(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*void\s+"
KERNEL = re.compile(PREFIX + r"([A-Za-z_]\w*)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def kernels(path):
    with open(path, encoding="latin-1") as f:
        return set(KERNEL.findall(COMMENT.sub(" ", f.read())))


def defined_in(binary, name):
    pattern = PREFIX.encode() + re.escape(name.encode()) + rb"\s*\("
    return re.search(pattern, binary) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("library")
    ap.add_argument("--library", dest="library_cl", nargs="+", required=True)
    ap.add_argument("--client", nargs="+", required=True)
    args = ap.parse_args()
    with open(args.library, "rb") as f:
        binary = f.read()

    own = set().union(*(kernels(p) for p in args.library_cl))
    if not any(defined_in(binary, k) for k in own):
        sys.exit("check-client-kernels.py: none of the library's own kernels found in %s: "
                 "the check cannot see embedded sources" % args.library)
    bad = []
    for path in args.client:
        names = kernels(path)
        if not names:
            sys.exit("check-client-kernels.py: %s defines no kernel" % path)
        bad += ["%s (%s)" % (k, path) for k in sorted(names) if defined_in(binary, k)]
    if bad:
        print("client kernels embedded in %s (a client embeds its own: "
              "clg_context_program_source):" % args.library)
        for b in bad:
            print("  " + b)
        return 1
    print("no client kernel in %s (%d client files)" % (args.library, len(args.client)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
