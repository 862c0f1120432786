#!/usr/bin/env python3
"""gen-layout.py - generates both sides of clgrad's host/device interface.

Usage: gen-layout.py cl/layout.py --enums include/clgrad.h
                     --header clg_layout.h --tables clg_layout.c --cl clg_layout.cl

From the one description in cl/layout.py (step-block words, the argument
list of every library kernel) it writes:
  clg_layout.h   for src/: the CLG_SB_* enum; per argument list a struct
                 clg_args_<name> with one field per argument (its host type),
                 CLG_ARGS_<NAME>_COUNT, and an inline setter
                 clg__set_args_<name>(kernel, &args, &failed) that calls
                 clSetKernelArg for every argument, in order, with
                 sizeof(field); plus the types of the tables below.
  clg_layout.c   the tables the ABI test compares with what the device
                 reports (clGetKernelArgInfo, a kernel that writes SB_*).
  clg_layout.cl  for the kernels: the SB_* defines and, per list, a
                 <NAME>_PARAMS macro holding the parameter list, embedded in
                 front of common.cl (tools/embed-cl.py --prepend).
From the public header (--enums) it takes the enums the kernels switch on,
so that clgrad.h stays their one list: clg_optimizer becomes OPT_<X> (the
-D OPT value) and clg_dtype DT_<X> in clg_layout.cl, and clg_layout.h gets
every member with its name as an X-macro list (CLG_LAYOUT_OPTIMIZERS,
CLG_LAYOUT_DTYPES): src/status.c's names and the tests that hold the
kernels and the clients' tables to the enum.
Any inconsistency in the description (a repeated name or index, an index
out of range, a type it cannot map) or an enum it cannot find or read
fails the build with a message.
"""
import argparse
import os
import re
import runpy
import sys

# OpenCL C scalar types a kernel argument may have, with their host types.
# Sizes agree by the OpenCL spec (cl_platform.h); the ABI test checks them
# on the device anyway (clSetKernelArg refuses a wrong size).
SCALAR_HOST = {
    "char": "cl_char",
    "uchar": "cl_uchar",
    "short": "cl_short",
    "ushort": "cl_ushort",
    "int": "cl_int",
    "uint": "cl_uint",
    "long": "cl_long",
    "ulong": "cl_ulong",
    "float": "cl_float",
    "double": "cl_double",
}
# Pointee types a buffer argument may have (vector types included).
POINTEE = set(SCALAR_HOST) | {"void", "half"} | {
    t + str(n) for t in SCALAR_HOST for n in (2, 3, 4, 8, 16)}
ADDRESS = {
    "global": "CL_KERNEL_ARG_ADDRESS_GLOBAL",
    "constant": "CL_KERNEL_ARG_ADDRESS_CONSTANT",
}
# Names an argument must not take: C and OpenCL C keywords and types.
RESERVED = set(POINTEE) | {
    "auto", "break", "case", "const", "continue", "default", "do", "else", "enum",
    "extern", "for", "goto", "if", "inline", "register", "restrict", "return",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "volatile", "while", "bool", "global", "local", "constant",
    "private", "kernel", "read_only", "write_only", "size_t", "ptrdiff_t",
}
TYPE_RE = re.compile(
    r"^(?:(?P<space>global|constant|local|private)\s+)?(?P<const>const\s+)?"
    r"(?P<base>[a-z][a-z0-9]*)\s*(?P<ptr>\*)?\s*(?P<restrict>restrict)?$")
IDENT_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


class LayoutError(Exception):
    pass


def fail(msg):
    raise LayoutError(msg)


def check_comment(text, where):
    if not isinstance(text, str) or "*/" in text or "\n" in text:
        fail("%s: the meaning must be one line of text without */" % where)


def parse_type(cl_type, where):
    """The facts of one OpenCL C parameter type: host type, the type name and
    qualifiers clGetKernelArgInfo reports, and the text of the parameter."""
    m = TYPE_RE.match(cl_type.strip())
    if not m:
        fail("%s: cannot parse the OpenCL C type %r" % (where, cl_type))
    base, ptr = m.group("base"), m.group("ptr") is not None
    if ptr:
        if m.group("space") not in ADDRESS:
            # local pointers are sized at launch, private ones are not
            # kernel arguments: neither fits a by-value struct field
            fail("%s: a pointer argument must be global or constant: %r" % (where, cl_type))
        if base not in POINTEE:
            fail("%s: unknown pointee type %r" % (where, base))
        quals = []
        if m.group("const"):
            quals.append("CL_KERNEL_ARG_TYPE_CONST")
        if m.group("restrict"):
            quals.append("CL_KERNEL_ARG_TYPE_RESTRICT")
        return {
            "host": "cl_mem",
            "type_name": base + "*",
            "address": ADDRESS[m.group("space")],
            "qualifier": " | ".join(quals) if quals else "CL_KERNEL_ARG_TYPE_NONE",
            # "global float *restrict" + "p" -> "global float *restrict p"
            "decl_prefix": cl_type.strip() + ("" if cl_type.strip().endswith("*") else " "),
        }
    if m.group("space") or m.group("const") or m.group("restrict"):
        fail("%s: a scalar argument takes no address space or qualifier: %r"
             % (where, cl_type))
    if base not in SCALAR_HOST:
        fail("%s: unknown scalar type %r" % (where, base))
    return {
        "host": SCALAR_HOST[base],
        "type_name": base,
        "address": "CL_KERNEL_ARG_ADDRESS_PRIVATE",
        "qualifier": "CL_KERNEL_ARG_TYPE_NONE",
        "decl_prefix": base + " ",
    }


def load(path):
    # run_path compiles the file in memory: no __pycache__ in the source tree
    sys.dont_write_bytecode = True
    d = runpy.run_path(path)
    try:
        words, sb, sigs = d["STEP_BLOCK_WORDS"], d["STEP_BLOCK"], d["SIGNATURES"]
    except KeyError as e:
        fail("%s defines no %s" % (path, e))
    if not isinstance(words, int) or words <= 0:
        fail("STEP_BLOCK_WORDS must be a positive integer")

    names, indices, step_block = set(), {}, []
    for entry in sb:
        if len(entry) != 4:
            fail("STEP_BLOCK: %r is not (name, index, type, meaning)" % (entry,))
        name, index, kind, doc = entry
        where = "STEP_BLOCK %s" % name
        if not re.match(r"^[A-Z][A-Z0-9_]*$", str(name)):
            fail("%s: the name must be upper case" % where)
        if name in names:
            fail("%s: named twice" % where)
        if not isinstance(index, int) or not 0 <= index < words:
            fail("%s: index %r is outside 0..%d" % (where, index, words - 1))
        if index in indices:
            fail("%s: index %d is also %s's" % (where, index, indices[index]))
        if kind not in ("f", "u"):
            fail("%s: type must be 'f' or 'u'" % where)
        check_comment(doc, where)
        names.add(name)
        indices[index] = name
        step_block.append((name, index, kind, doc))

    lists, seen_lists, seen_kernels = [], set(), {}
    for sig in sigs:
        lname = sig.get("name")
        if not isinstance(lname, str) or not IDENT_RE.match(lname):
            fail("SIGNATURES: bad list name %r" % (lname,))
        if lname in seen_lists:
            fail("SIGNATURES: list %s described twice" % lname)
        seen_lists.add(lname)
        kernels = []
        for pk in sig.get("kernels", []):
            prog, sep, kern = pk.partition(":")
            if not sep or not IDENT_RE.match(prog) or not IDENT_RE.match(kern):
                fail("list %s: %r is not program:kernel" % (lname, pk))
            if pk in seen_kernels:
                fail("list %s: kernel %s already has list %s" % (lname, pk, seen_kernels[pk]))
            seen_kernels[pk] = lname
            kernels.append((prog, kern))
        if not kernels:
            fail("list %s: no kernel uses it" % lname)
        args, arg_names = [], set()
        for a in sig.get("args", []):
            if len(a) != 3:
                fail("list %s: %r is not (name, type, meaning)" % (lname, a))
            aname, cl_type, doc = a
            where = "list %s, argument %s" % (lname, aname)
            if not IDENT_RE.match(aname) or aname in RESERVED:
                fail("%s: not a usable name" % where)
            if aname in arg_names:
                fail("%s: named twice" % where)
            arg_names.add(aname)
            check_comment(doc, where)
            info = parse_type(cl_type, where)
            info.update(name=aname, cl_type=cl_type.strip(), doc=doc)
            args.append(info)
        if not args:
            fail("list %s has no arguments" % lname)
        lists.append({"name": lname, "kernels": kernels, "args": args})
    return words, step_block, lists


# clgrad.h's enums the kernels see: (C enum, OpenCL C prefix, the X-macro
# list in clg_layout.h). Member CLG_<X>, or CLG_<ENUM>_<X> (CLG_DTYPE_NONE),
# becomes <prefix><X>, the names the kernels have always used, and its name
# is <x> in lower case ("adamw", "bf16", "none"), which clg_optimizer_name
# and clg_dtype_name return (src/status.c) and flags and checkpoints spell.
ENUMS = [
    ("clg_optimizer", "OPT_", "CLG_LAYOUT_OPTIMIZERS"),
    ("clg_dtype", "DT_", "CLG_LAYOUT_DTYPES"),
]
ENUM_MEMBER_RE = re.compile(r"^(CLG_[A-Z0-9_]+)\s*=\s*([0-9]+)$")


def strip_c_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def load_enums(path):
    """[(enum, [(C name, OpenCL C name, value, name)], list macro)] for ENUMS, read
    from the header. Strict: every member must be CLG_<NAME> = <decimal>,
    names and values distinct, so that what the kernels get is exactly the
    C enum (tests/test_kernel_abi.c checks it on the device too)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = strip_c_comments(f.read())
    except OSError as e:
        fail("cannot read %s" % e)
    enums = []
    for enum, prefix, macro in ENUMS:
        found = re.findall(r"typedef\s+enum\s+%s\s*\{([^}]*)\}\s*%s\s*;" % (enum, enum), text)
        if len(found) != 1:
            fail("expected one `typedef enum %s { ... } %s;`, found %d" % (enum, enum, len(found)))
        body = found[0].strip()
        entries = [e.strip() for e in body.split(",")]
        if entries and entries[-1] == "":
            entries.pop()  # a trailing comma
        members, names, values = [], set(), {}
        own = "CLG_%s_" % enum[len("clg_"):].upper()
        for e in entries:
            m = ENUM_MEMBER_RE.match(e)
            if not m:
                fail("enum %s: cannot read %r (members must be CLG_<NAME> = <number>)"
                     % (enum, e))
            c_name, value = m.group(1), int(m.group(2))
            short = c_name[len(own):] if c_name.startswith(own) else c_name[len("CLG_"):]
            cl_name = prefix + short
            if cl_name in names:
                fail("enum %s: %s is %s a second time" % (enum, c_name, cl_name))
            if value in values:
                fail("enum %s: %s has %s's value %d" % (enum, c_name, values[value], value))
            names.add(cl_name)
            values[value] = c_name
            members.append((c_name, cl_name, value, short.lower()))
        if not members:
            fail("enum %s has no members" % enum)
        enums.append((enum, members, macro))
    return enums


HEAD = "generated by tools/gen-layout.py from cl/layout.py and clgrad.h; do not edit"


def users(lst, prefix=""):
    """"accumulate.cl: check_finite, stats.cl: acc_sumsq" for a list."""
    by_prog = {}
    for prog, kern in lst["kernels"]:
        by_prog.setdefault(prog, []).append(kern)
    return ", ".join("%s%s.cl: %s" % (prefix, p, ", ".join(k)) for p, k in by_prog.items())


def c_string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def opening(name, *about):
    """The comment a generated file starts with: its name, HEAD, then the
    lines of about (the last one closing the comment)."""
    return (["/* %s - %s." % (name, HEAD)] + [" * " + a for a in about[:-1]] +
            [" * %s */" % about[-1]])


def gen_header(words, step_block, lists, enums):
    o = opening("clg_layout.h",
                "The step block's word indices and the argument list of every clgrad",
                "kernel; the kernels get the same from clg_layout.cl.")
    o += ["#ifndef CLGRAD_CLG_LAYOUT_H",
          "#define CLGRAD_CLG_LAYOUT_H",
          "",
          '#include "clgrad.h"',
          "",
          "/* Word indices of the device step block (f: float bits, u: uint). */",
          "enum {"]
    width = max(len(n) for n, _, _, _ in step_block) + len("CLG_SB_ = ,") + 3
    for name, index, kind, doc in sorted(step_block, key=lambda w: w[1]):
        o.append(("    %-*s/* %s: %s */" % (width, "CLG_SB_%s = %d," % (name, index), kind, doc)))
    o.append("    CLG_SB_WORDS = %d" % words)
    o.append("};")
    o.append("")
    for enum, members, macro in enums:
        o.append("/* Every member of clgrad.h's enum %s, as X(C name, OpenCL C name, name). */"
                 % enum)
        o.append("#define %s(X) %s" % (macro, "\\"))
        for i, (c_name, cl_name, _, name) in enumerate(members):
            o.append("    X(%s, %s, %s)%s" % (c_name, cl_name, c_string(name),
                                             " \\" if i + 1 < len(members) else ""))
        o.append("")
    for lst in lists:
        n, args = lst["name"], lst["args"]
        o.append("/* Arguments of %s (%s_PARAMS). */" % (users(lst, "cl/"), n.upper()))
        o.append("typedef struct clg_args_%s {" % n)
        fw = max(len("%s %s;" % (a["host"], a["name"])) for a in args) + 1
        for a in args:
            o.append("    %-*s/* %s: %s */" % (fw, "%s %s;" % (a["host"], a["name"]), a["cl_type"],
                                             a["doc"]))
        o.append("} clg_args_%s;" % n)
        o.append("#define CLG_ARGS_%s_COUNT %d" % (n.upper(), len(args)))
        o.append("")
        o.append("/* Sets every argument of k from a, in the kernel's order. Returns")
        o.append(" * CL_SUCCESS, or the first error with *failed naming the argument. */")
        head = "static inline cl_int clg__set_args_%s(" % n
        o.append("%scl_kernel k, const clg_args_%s *a," % (head, n))
        o.append("%sconst char **failed)" % (" " * len(head)))
        o.append("{")
        o.append("    cl_int e;")
        for i, a in enumerate(args):
            o.append("    %sif ((e = clSetKernelArg(k, %d, sizeof a->%s, &a->%s)) != CL_SUCCESS)"
                     % ("" if i == 0 else "else ", i, a["name"], a["name"]))
            o.append('        *failed = "%d (%s)";' % (i, a["name"]))
        o.append("    return e;")
        o.append("}")
        o.append("")
    o += [
        "/* ---- the description as data, for tests/test_kernel_abi.c (clg_layout.c) */",
        "",
        "typedef struct clg_layout_arg {",
        "    const char *name;              /* CL_KERNEL_ARG_NAME */",
        "    const char *decl;              /* as in <NAME>_PARAMS */",
        "    const char *type_name;         /* CL_KERNEL_ARG_TYPE_NAME */",
        "    cl_uint address;               /* CL_KERNEL_ARG_ADDRESS_QUALIFIER */",
        "    cl_bitfield type_qualifier;    /* CL_KERNEL_ARG_TYPE_QUALIFIER */",
        "    size_t size;                   /* bytes clSetKernelArg passes */",
        "} clg_layout_arg;",
        "",
        "typedef struct clg_layout_list {",
        "    const char *name;",
        "    cl_uint n_args;",
        "    const clg_layout_arg *args;",
        "    size_t struct_size;            /* sizeof(clg_args_<name>) */",
        "    /* clg__set_args_<name> on a clg_args_<name> */",
        "    cl_int (*set)(cl_kernel k, const void *args, const char **failed);",
        "} clg_layout_list;",
        "",
        "typedef struct clg_layout_kernel {",
        "    const char *program;           /* cl/<program>.cl */",
        "    const char *kernel;",
        "    const clg_layout_list *list;",
        "} clg_layout_kernel;",
        "",
        "typedef struct clg_layout_word {",
        "    const char *name;              /* SB_<name> in OpenCL C */",
        "    int index;                     /* CLG_SB_<name> */",
        "    char type;                     /* 'f' or 'u' */",
        "} clg_layout_word;",
        "",
        "extern const clg_layout_kernel clg__layout_kernels[];",
        "extern const size_t clg__layout_n_kernels;",
        "extern const clg_layout_word clg__layout_words[];",
        "extern const size_t clg__layout_n_words;",
        "",
        "#endif /* CLGRAD_CLG_LAYOUT_H */",
    ]
    return o


def gen_tables(words, step_block, lists, enums):
    o = opening("clg_layout.c",
                "The description as data: what tests/test_kernel_abi.c expects the",
                "device to report for every kernel and step-block word.")
    o += ['#include "clg_layout.h"', ""]
    for lst in lists:
        n = lst["name"]
        o.append("static const clg_layout_arg args_%s[] = {" % n)
        for a in lst["args"]:
            o.append("    {%s, %s, %s, %s, %s, sizeof(%s)}," % (
                c_string(a["name"]), c_string(a["decl_prefix"] + a["name"]),
                c_string(a["type_name"]), a["address"], a["qualifier"], a["host"]))
        o.append("};")
        o.append("")
        o.append("static cl_int set_%s(cl_kernel k, const void *args, const char **failed)" % n)
        o.append("{")
        o.append("    return clg__set_args_%s(k, (const clg_args_%s *)args, failed);" % (n, n))
        o.append("}")
        o.append("")
        o.append("static const clg_layout_list list_%s = {" % n)
        o.append("    %s, %d, args_%s, sizeof(clg_args_%s), set_%s};" % (
            c_string(n), len(lst["args"]), n, n, n))
        o.append("")
    o.append("const clg_layout_kernel clg__layout_kernels[] = {")
    for lst in lists:
        for prog, kern in lst["kernels"]:
            o.append("    {%s, %s, &list_%s}," % (c_string(prog), c_string(kern), lst["name"]))
    o.append("};")
    o.append("const size_t clg__layout_n_kernels = sizeof clg__layout_kernels / "
             "sizeof clg__layout_kernels[0];")
    o.append("")
    o.append("/* index: the C enum itself, so that the test compares it with SB_* */")
    o.append("const clg_layout_word clg__layout_words[] = {")
    for name, index, kind, _ in sorted(step_block, key=lambda w: w[1]):
        o.append("    {%s, CLG_SB_%s, '%s'}," % (c_string(name), name, kind))
    o.append("};")
    o.append("const size_t clg__layout_n_words = sizeof clg__layout_words / "
             "sizeof clg__layout_words[0];")
    return o


def gen_cl(words, step_block, lists, enums):
    o = opening("clg_layout.cl",
                "Compiled in front of common.cl: the step block's word indices (as",
                "CLG_SB_* in the host's clg_layout.h), the parameter list of every",
                "clgrad kernel, as `kernel void update(UPDATE_PARAMS)`, and the codes",
                "of clgrad.h's enums the kernels switch on.")
    o.append("")
    for enum, members, _ in enums:
        o.append("/* enum %s */" % enum)
        for c_name, cl_name, value, _ in members:
            o.append("#define %s %d /* %s */" % (cl_name, value, c_name))
        o.append("")
    for name, index, kind, doc in sorted(step_block, key=lambda w: w[1]):
        o.append("#define SB_%s %d /* %s: %s */" % (name, index, kind, doc))
    o.append("#define SB_WORDS %d" % words)
    o.append("")
    for lst in lists:
        o.append("/* %s */" % users(lst))
        decls = [a["decl_prefix"] + a["name"] for a in lst["args"]]
        o.append("#define %s_PARAMS %s" % (lst["name"].upper(), "\\"))
        for i, d in enumerate(decls):
            o.append("    %s%s" % (d, ", \\" if i + 1 < len(decls) else ""))
        o.append("")
    return o


def write(path, lines):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("description")
    ap.add_argument("--enums", required=True, help="include/clgrad.h")
    ap.add_argument("--header", required=True)
    ap.add_argument("--tables", required=True)
    ap.add_argument("--cl", required=True)
    args = ap.parse_args()
    try:
        layout = load(args.description)
    except LayoutError as e:
        sys.exit("gen-layout.py: %s: %s" % (args.description, e))
    try:
        layout += (load_enums(args.enums),)
    except LayoutError as e:
        sys.exit("gen-layout.py: %s: %s" % (args.enums, e))
    write(args.header, gen_header(*layout))
    write(args.tables, gen_tables(*layout))
    write(args.cl, gen_cl(*layout))


if __name__ == "__main__":
    main()
