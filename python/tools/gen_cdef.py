#!/usr/bin/env python3
"""gen_cdef.py - cffi's cdef of clgrad, made from the public headers.

The binding never restates a clgrad struct, enum or prototype by hand: this
script turns include/clgrad.h and include/clgrad_advanced.h into the
declarations cffi parses, at every build. What it changes:
  - comments and preprocessor lines go, except `#define CLG_NAME value`,
    which becomes `#define CLG_NAME ...` (cffi asks the compiler for it);
  - CLG_API goes; the `extern "C"` block of C++ goes;
  - a static inline function (clg_config_init, clg_stats_init, ...) keeps
    its prototype: in cffi's API mode the generated C calls it;
  - OpenCL's handle and integer types, which the headers take from
    <CL/cl.h>, are declared in front (opaque pointers and integers whose
    width the compiler supplies).
Usage: gen_cdef.py HEADER... > cdef.h
"""
import re
import sys

# OpenCL's types that clgrad's headers use. "int..." lets cffi take the width
# and signedness from the compiled <CL/cl.h>.
OPENCL_PRELUDE = """
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_event *cl_event;
typedef int... cl_int;
typedef int... cl_uint;
typedef int... cl_ulong;
typedef int... cl_device_type;
"""


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def drop_preprocessor(text):
    """Drops directives and the C++ block; keeps clgrad's constants."""
    out, skip_cplusplus = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#ifdef __cplusplus"):
            skip_cplusplus = True
            continue
        if skip_cplusplus:
            skip_cplusplus = not stripped.startswith("#endif")
            continue
        m = re.match(r"#\s*define\s+(CLG_[A-Z0-9_]+)\s+\S", stripped)
        if m and m.group(1) != "CLG_API":
            out.append("#define %s ..." % m.group(1))
        elif not stripped.startswith("#"):
            out.append(line)
    return "\n".join(out)


def inline_to_prototypes(text):
    """static inline T f(args) { body }  ->  T f(args);"""
    out, pos = [], 0
    for m in re.finditer(r"static\s+inline\s+", text):
        if m.start() < pos:
            continue
        brace = text.index("{", m.end())
        depth, end = 0, brace
        while True:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
            if depth == 0:
                break
        out.append(text[pos:m.start()])
        out.append(text[m.end():brace].rstrip() + ";")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def cdef_of(header_text):
    text = drop_preprocessor(strip_comments(header_text))
    text = re.sub(r"\bCLG_API\s+", "", text)
    return inline_to_prototypes(text)


def main(paths):
    parts = [OPENCL_PRELUDE]
    for path in paths:
        with open(path, encoding="utf-8") as f:
            parts.append(cdef_of(f.read()))
    text = "\n".join(parts)
    return re.sub(r"\n\s*\n+", "\n", text) + "\n"


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1:]))
