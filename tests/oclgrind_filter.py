#!/usr/bin/env python3
"""oclgrind_filter.py PASS LOG - reads an Oclgrind log, sets aside the known
false positives of Oclgrind 21.10 (Debian 12) and fails (exit 1) on
anything else, printing the first reports. Used by scripts/oclgrind-check.sh.

Known false positives (each reproduced outside clgrad with a 5-line kernel,
buffers fully initialized with CL_MEM_COPY_HOST_PTR):
  vector-store  "Uninitialized value written to local memory" where the
                stored operand is a vector constant holding undef/poison:
                building a vector from initialized scalars, e.g.
                  local float2 s[16]; s[l] = (float2)(x, 1.0f);
                or s[l].x = x; s[l].y = 1.0f;  (the IR operand shows
                <float poison, float 1.0>; cf. Oclgrind issue #126).
  freeze        "OCLGRIND FATAL ERROR ... Unsupported instruction: freeze"
                from the uninitialized-value plugin (LLVM emits `freeze`
                for i / d and i % d together); only allowed in pass A,
                pass B checks the same kernels without that plugin.
"""
import re
import sys


def blocks_of(text):
    return [b.strip("\n") for b in re.split(r"\n[ \t]*\n", text) if b.strip()]


def classify(block, pass_name):
    lines = [l.strip() for l in block.splitlines()]
    head = lines[0] if lines else ""
    ir = next((l for l in lines[1:] if l.startswith(("store ", "%", "call ", "tail call "))), "")
    if head.startswith("Uninitialized value written to") and re.match(
            r"store <\d+ x [a-z0-9]+> (undef|<[^>]*(undef|poison)[^>]*>)", ir):
        return "vector-store"
    if (pass_name == "A" and head.startswith("OCLGRIND FATAL ERROR")
            and any("Unsupported instruction: freeze" in l for l in lines)):
        return "freeze"
    if head.startswith("Oclgrind: ") and "errors generated" in head:
        return None  # the error limit: never reached with --max-errors
    return None


def main():
    pass_name, path = sys.argv[1], sys.argv[2]
    with open(path, errors="replace") as f:
        blocks = blocks_of(f.read())
    known, real = {}, []
    for b in blocks:
        kind = classify(b, pass_name)
        if kind:
            known[kind] = known.get(kind, 0) + 1
        else:
            real.append(b)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(known.items())) or "none"
    print(f"pass {pass_name}: {len(real)} report(s); known Oclgrind false positives set aside: "
          f"{summary}")
    for b in real[:20]:
        print(b + "\n", file=sys.stderr)
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
