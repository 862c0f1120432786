"""The binding against the header: every struct of include/clgrad.h and
clgrad_advanced.h (as they are now, through tools/gen_cdef.py) has the same
fields in the binding, and cffi's offset and size of every field and
struct equal the compiled header's (offsetof/sizeof, clgrad_py_layout). A
stale binding (a struct changed without a rebuild) or a cdef that differs
from the header fails here."""
import os
import sys

import cffi

from clgrad import ffi, lib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gen_cdef  # noqa: E402

INCLUDE = os.path.join(HERE, "..", "..", "include")


def compiled_layout():
    rows, i = [], 0
    t, f, off, size = (ffi.new("const char **"), ffi.new("const char **"),
                       ffi.new("size_t *"), ffi.new("size_t *"))
    while lib.clgrad_py_layout(i, t, f, off, size):
        rows.append((ffi.string(t[0]).decode(),
                     ffi.string(f[0]).decode() if f[0] != ffi.NULL else None, off[0], size[0]))
        i += 1
    return rows


def test_layout_matches_compiled_header():
    rows = compiled_layout()
    assert len(rows) > 100
    for struct, field, offset, size in rows:
        if field is None:
            assert ffi.sizeof(struct) == size, struct
        else:
            assert ffi.offsetof(struct, field) == offset, (struct, field)
            assert ffi.sizeof(ffi.typeof(struct).fields[[n for n, _ in ffi.typeof(struct).fields]
                                                        .index(field)][1].type) == size


def test_fields_match_current_header():
    headers = [os.path.join(INCLUDE, h) for h in ("clgrad.h", "clgrad_advanced.h")]
    parser = cffi.FFI()
    parser.cdef(gen_cdef.main(headers))
    structs = [k[len("typedef "):] for k, (tp, _) in parser._parser._declarations.items()
               if k.startswith("typedef ") and type(tp).__name__ == "StructType"
               and tp.fldnames is not None]
    assert "clg_config" in structs and "clg_stats" in structs
    for s in structs:
        ours = [n for n, _ in ffi.typeof(s).fields]
        assert ours == list(parser._parser._declarations["typedef " + s][0].fldnames), s
