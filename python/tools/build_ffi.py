#!/usr/bin/env python3
"""build_ffi.py - writes the C source of clgrad's cffi extension (API mode).

The cdef comes from gen_cdef.py (the public headers as they are); the
generated C includes clgrad.h itself, so that every struct offset, enum value
and constant the binding uses is the C compiler's. A layout table of every
struct field (offsetof and sizeof, compiled from the header) is built in as
clgrad_py_layout(), which tests/test_layout.py compares with what cffi sees.
Usage: build_ffi.py OUTPUT.c HEADER...
"""
import os
import sys

import cffi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_cdef  # noqa: E402

LAYOUT_CDEF = """
int clgrad_py_layout(size_t i, const char **type, const char **field,
                     size_t *offset, size_t *size);
"""


def layout_source(ffi):
    """C table of (struct, field, offsetof, sizeof) for every struct of the
    cdef; a row with field NULL gives the struct's own sizeof."""
    rows = []
    for key, (tp, _) in sorted(ffi._parser._declarations.items()):
        if (not key.startswith("typedef ") or type(tp).__name__ != "StructType"
                or tp.fldnames is None):  # opaque handles (clg_model)
            continue
        name = key[len("typedef "):]
        rows.append('{"%s", 0, 0, sizeof(%s)}' % (name, name))
        for field in tp.fldnames:
            rows.append('{"%s", "%s", offsetof(%s, %s), sizeof(((%s *)0)->%s)}'
                        % (name, field, name, field, name, field))
    return """
#include <stddef.h>
static const struct { const char *type, *field; size_t offset, size; } layout[] = {
    %s
};
int clgrad_py_layout(size_t i, const char **type, const char **field,
                     size_t *offset, size_t *size)
{
    if (i >= sizeof layout / sizeof *layout)
        return 0;
    *type = layout[i].type, *field = layout[i].field;
    *offset = layout[i].offset, *size = layout[i].size;
    return 1;
}
""" % ",\n    ".join(rows)


def main(output, headers):
    ffi = cffi.FFI()
    ffi.cdef(gen_cdef.main(headers) + LAYOUT_CDEF)
    ffi.set_source("clgrad._clgrad_cffi",
                   "#include <clgrad.h>\n#include <clgrad_advanced.h>\n" + layout_source(ffi))
    ffi.emit_c_code(output)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
