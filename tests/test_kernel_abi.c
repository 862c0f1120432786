/* test_kernel_abi.c - the host and the device agree on clgrad's kernel
 * interface. Both sides are generated from cl/layout.py by
 * tools/gen-layout.py: clg_layout.h (CLG_SB_*, clg_args_<list> and their
 * setters) for src/, clg_layout.cl (SB_*, <LIST>_PARAMS; OPT_*, DT_* from
 * clgrad.h's enums) in front of every program. This test fails if they drift apart anyway:
 *   - every kernel of the library programs, built from source with
 *     -cl-kernel-arg-info, has exactly the arguments of its list: their
 *     count, names, type names, address and type qualifiers, as the device
 *     reports them (a kernel that writes its own parameter list instead of
 *     the macro, or a generator that emits different facts on the two
 *     sides, shows here);
 *   - every kernel in those programs has a list, and every list's kernels
 *     exist;
 *   - each generated setter sets every argument with a size the device
 *     accepts (a host type of the wrong width fails clSetKernelArg);
 *   - a kernel compiled with the programs' common source sees each SB_*
 *     equal to the C enum CLG_SB_*, and SB_WORDS to CLG_SB_WORDS;
 *   - every OPT_* and DT_* the kernels see (clg_layout.cl makes them from
 *     clgrad.h) equals its member of clg_optimizer or clg_dtype;
 *   - the comparison itself catches a swap, a wrong type, a missing
 *     argument, a lost qualifier and a wrong address space (mutated
 *     parameter lists built from the table). */
#include "clg_layout.h"
#include "clgrad_advanced.h"
#include "internal.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static clg_context *ctx;

static int setup(void **state)
{
    /* Arg info exists only for programs built from source (OpenCL spec,
     * clGetKernelArgInfo): never take a program from the disk cache. */
    setenv("CLGRAD_CACHE_DIR", "off", 1);
    int rc = tu_group_setup(state);
    ctx = tu_ctx;
    return rc;
}

/* ------------------------------------------------------------ comparison */

static char *arg_string(cl_kernel k, cl_uint i, cl_kernel_arg_info what)
{
    size_t n = 0;
    cl_int err = clGetKernelArgInfo(k, i, what, 0, NULL, &n);
    if (err != CL_SUCCESS) {
        print_error("clGetKernelArgInfo(%u) failed: %d\n", (unsigned)i, (int)err);
        return NULL;
    }
    char *s = calloc(1, n + 1);
    assert_non_null(s);
    assert_int_equal(clGetKernelArgInfo(k, i, what, n, s, NULL), CL_SUCCESS);
    return s;
}

/* Compares kernel k with argument list l; prints each difference and
 * returns how many there are (0: they agree). */
static int compare_args(cl_kernel k, const char *where, const clg_layout_list *l)
{
    int bad = 0;
    cl_uint n = 0;
    assert_int_equal(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL), CL_SUCCESS);
    if (n != l->n_args) {
        print_message("%s: the kernel has %u arguments, list %s has %u\n", where, (unsigned)n,
                      l->name, (unsigned)l->n_args);
        bad++;
    }
    for (cl_uint i = 0; i < n && i < l->n_args; i++) {
        const clg_layout_arg *a = &l->args[i];
        char *name = arg_string(k, i, CL_KERNEL_ARG_NAME);
        char *type = arg_string(k, i, CL_KERNEL_ARG_TYPE_NAME);
        if (!name || !type) {
            bad++;
        } else {
            if (strcmp(name, a->name) != 0) {
                print_message("%s: argument %u is \"%s\", list %s says \"%s\"\n", where,
                              (unsigned)i, name, l->name, a->name);
                bad++;
            }
            if (strcmp(type, a->type_name) != 0) {
                print_message("%s: argument %u (%s) has type \"%s\", list %s says \"%s\"\n",
                              where, (unsigned)i, a->name, type, l->name, a->type_name);
                bad++;
            }
        }
        free(name);
        free(type);
        cl_kernel_arg_address_qualifier addr = 0;
        cl_kernel_arg_type_qualifier qual = 0;
        assert_int_equal(clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof addr,
                                            &addr, NULL),
                         CL_SUCCESS);
        assert_int_equal(
            clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof qual, &qual, NULL),
            CL_SUCCESS);
        if (addr != a->address) {
            print_message("%s: argument %u (%s) has address qualifier 0x%x, list %s says 0x%x\n",
                          where, (unsigned)i, a->name, (unsigned)addr, l->name,
                          (unsigned)a->address);
            bad++;
        }
        /* volatile and pipe never occur in clgrad; const and restrict are
         * what the lists say */
        const cl_bitfield mask = CL_KERNEL_ARG_TYPE_CONST | CL_KERNEL_ARG_TYPE_RESTRICT;
        if ((qual & mask) != a->type_qualifier) {
            print_message("%s: argument %u (%s) has type qualifiers 0x%x, list %s says 0x%x\n",
                          where, (unsigned)i, a->name, (unsigned)(qual & mask), l->name,
                          (unsigned)a->type_qualifier);
            bad++;
        }
    }
    return bad;
}

static const clg_layout_kernel *find_kernel(const char *program, const char *kernel)
{
    for (size_t i = 0; i < clg__layout_n_kernels; i++)
        if (!strcmp(clg__layout_kernels[i].program, program) &&
            !strcmp(clg__layout_kernels[i].kernel, kernel))
            return &clg__layout_kernels[i];
    return NULL;
}

/* ------------------------------------------------------------ library kernels */

/* Builds library program `program` with options (plus arg info) through
 * clgrad, as the launchers get it, and checks every kernel in it. */
static void check_program(const char *program, const char *options)
{
    char opt[256];
    snprintf(opt, sizeof opt, "-cl-kernel-arg-info %s", options);
    cl_program prog = NULL;
    int cached = 1;
    OK(clg_context_program(ctx, program, opt, &prog, &cached));
    assert_int_equal(cached, 0); /* arg info needs a build from source */

    size_t n = 0;
    assert_int_equal(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &n), CL_SUCCESS);
    char *names = calloc(1, n + 1);
    assert_non_null(names);
    assert_int_equal(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, n, names, NULL),
                     CL_SUCCESS);

    int bad = 0, found = 0;
    char *save = NULL;
    for (char *kn = strtok_r(names, ";", &save); kn; kn = strtok_r(NULL, ";", &save)) {
        char where[160];
        snprintf(where, sizeof where, "cl/%s.cl: %s (%s)", program, kn, options);
        const clg_layout_kernel *d = find_kernel(program, kn);
        if (!d) {
            print_message("%s: no argument list in cl/layout.py\n", where);
            bad++;
            continue;
        }
        found++;
        cl_int err;
        cl_kernel k = clCreateKernel(prog, kn, &err);
        assert_int_equal(err, CL_SUCCESS);
        bad += compare_args(k, where, d->list);

        /* the generated setter, on zeroed arguments (NULL buffers are
         * valid arguments): every index exists, every size is accepted */
        void *zero = calloc(1, d->list->struct_size);
        assert_non_null(zero);
        const char *failed = NULL;
        err = d->list->set(k, zero, &failed);
        if (err != CL_SUCCESS) {
            print_message("%s: clg__set_args_%s failed on argument %s: %d\n", where,
                          d->list->name, failed ? failed : "?", (int)err);
            bad++;
        }
        free(zero);
        clReleaseKernel(k);
    }
    free(names);

    /* every kernel the table gives this program exists in it */
    int expected = 0;
    for (size_t i = 0; i < clg__layout_n_kernels; i++)
        expected += !strcmp(clg__layout_kernels[i].program, program);
    if (found != expected) {
        print_message("cl/%s.cl (%s): %d of its %d kernels in cl/layout.py exist\n", program,
                      options, found, expected);
        bad++;
    }
    assert_int_equal(bad, 0);
}

static void test_library_kernels_match_lists(void **state)
{
    (void)state;
    /* every program the table names, with its default variant */
    for (size_t i = 0; i < clg__layout_n_kernels; i++) {
        const char *p = clg__layout_kernels[i].program;
        int first = 1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(clg__layout_kernels[j].program, p))
                first = 0;
        if (first)
            check_program(p, "");
    }
    /* accumulate.cl defines `accumulate` twice, once per STATS variant */
    check_program("accumulate", "-DSTATS=1");
}

/* ------------------------------------------------------------ own programs */

/* Appends printf-formatted text to a growing string. */
static void append(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    *s = realloc(*s, *len + (size_t)n + 1);
    assert_non_null(*s);
    va_start(ap, fmt);
    vsnprintf(*s + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
}

/* Appends the chunks of embedded source `name` to parts[*n..]. */
static void add_source(const char **parts, size_t *n, size_t cap, const char *name)
{
    const char *const *src = clg__kernel_source(name);
    assert_non_null(src);
    for (size_t i = 0; src[i]; i++) {
        assert_true(*n < cap);
        parts[(*n)++] = src[i];
    }
}

/* A program of the embedded common source (clg_layout.cl and common.cl,
 * exactly what every library program starts with), then library program
 * `program`'s own source with what the build puts in front of it (NULL:
 * none), then `tail`. */
static cl_program build_after(const char *program, const char *tail, const char *options)
{
    enum { MAX_PARTS = 256 };
    const char *parts[MAX_PARTS];
    size_t n = 0;
    add_source(parts, &n, MAX_PARTS - 1, "common");
    if (program)
        add_source(parts, &n, MAX_PARTS - 1, program);
    parts[n++] = tail;
    cl_int err;
    cl_program p = clCreateProgramWithSource(clg_context_cl(ctx), (cl_uint)n, parts, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_device_id dev = clg_context_device(ctx);
    err = clBuildProgram(p, 1, &dev, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        print_error("build failed (%d):\n%s\n%s\n", (int)err, tail, log);
    }
    assert_int_equal(err, CL_SUCCESS);
    return p;
}

static cl_program build_with_common(const char *tail, const char *options)
{
    return build_after(NULL, tail, options);
}

/* The values n OpenCL C expressions have on the device, compiled after
 * program's source (build_after), into got[0..n). */
static void probe(const char *program, const char *const *exprs, size_t n, cl_uint *got)
{
    char *src = NULL;
    size_t len = 0;
    append(&src, &len, "\nkernel void abi_probe(global uint *out)\n{\n");
    for (size_t i = 0; i < n; i++)
        append(&src, &len, "    out[%zu] = %s;\n", i, exprs[i]);
    append(&src, &len, "}\n");
    cl_program p = build_after(program, src, "");
    free(src);

    cl_int err;
    cl_kernel k = clCreateKernel(p, "abi_probe", &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem out = clCreateBuffer(clg_context_cl(ctx), CL_MEM_WRITE_ONLY, n * sizeof(cl_uint),
                                NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(clSetKernelArg(k, 0, sizeof out, &out), CL_SUCCESS);
    size_t one = 1;
    cl_command_queue q = clg_context_queue(ctx);
    assert_int_equal(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(q, out, CL_TRUE, 0, n * sizeof *got, got, 0, NULL, NULL),
                     CL_SUCCESS);
    clReleaseMemObject(out);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

static void test_step_block_indices_match(void **state)
{
    (void)state;
    /* host side first: the table is the enum, indices unique and in range */
    unsigned char used[CLG_SB_WORDS] = {0};
    for (size_t i = 0; i < clg__layout_n_words; i++) {
        const clg_layout_word *w = &clg__layout_words[i];
        assert_true(w->index >= 0 && w->index < CLG_SB_WORDS);
        assert_int_equal(used[w->index], 0);
        used[w->index] = 1;
        assert_true(w->type == 'f' || w->type == 'u');
    }

    /* the device's value of every SB_*, then SB_WORDS */
    size_t n = clg__layout_n_words + 1;
    char(*exprs)[64] = calloc(n, sizeof *exprs);
    const char **ptrs = calloc(n, sizeof *ptrs);
    cl_uint *got = calloc(n, sizeof *got);
    assert_true(exprs && ptrs && got);
    for (size_t i = 0; i < n; i++) {
        if (i < clg__layout_n_words)
            snprintf(exprs[i], sizeof exprs[i], "SB_%s", clg__layout_words[i].name);
        else
            snprintf(exprs[i], sizeof exprs[i], "SB_WORDS");
        ptrs[i] = exprs[i];
    }
    probe(NULL, ptrs, n, got);
    int bad = 0;
    for (size_t i = 0; i < clg__layout_n_words; i++)
        if (got[i] != (cl_uint)clg__layout_words[i].index) {
            print_message("SB_%s is %u on the device, CLG_SB_%s is %d on the host\n",
                          clg__layout_words[i].name, (unsigned)got[i],
                          clg__layout_words[i].name, clg__layout_words[i].index);
            bad++;
        }
    if (got[n - 1] != CLG_SB_WORDS) {
        print_message("SB_WORDS is %u on the device, CLG_SB_WORDS %d\n", (unsigned)got[n - 1],
                      (int)CLG_SB_WORDS);
        bad++;
    }
    assert_int_equal(bad, 0);
    free(got);
    free(ptrs);
    free(exprs);
}

/* The codes the kernels switch on (-D OPT, G_DTYPE, STATE_DTYPE, ...) are
 * clgrad.h's enum values: every member of clg_optimizer and clg_dtype, as
 * the C compiler sees it, equals the OPT_* or DT_* the device sees after the
 * update program's source (clg_layout.cl, common.cl, optim.cl, update.cl),
 * so that a hand copy left in a kernel file shows too. */
static void test_enum_codes_match(void **state)
{
    (void)state;
#define CODE(c_name, cl_name, name) {#c_name, #cl_name, (cl_uint)(c_name)},
    static const struct {
        const char *c_name, *cl_name;
        cl_uint value;
    } codes[] = {CLG_LAYOUT_OPTIMIZERS(CODE) CLG_LAYOUT_DTYPES(CODE)};
#undef CODE
    enum { N = sizeof codes / sizeof codes[0] };
    const char *exprs[N];
    for (size_t i = 0; i < N; i++)
        exprs[i] = codes[i].cl_name;
    cl_uint got[N];
    probe("update", exprs, N, got);
    int bad = 0;
    for (size_t i = 0; i < N; i++)
        if (got[i] != codes[i].value) {
            print_message("%s is %u on the device, %s is %u on the host\n", codes[i].cl_name,
                          (unsigned)got[i], codes[i].c_name, (unsigned)codes[i].value);
            bad++;
        }
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------ the check can fail */

enum mutation { M_NONE, M_SWAP_NAMES, M_SWAP_TYPES, M_DROP_LAST, M_NO_RESTRICT, M_NO_CONST,
                M_CONSTANT };

/* Parameter declarations of list l, mutated; NULL if l has nothing to
 * mutate that way. */
static char *mutated_params(const clg_layout_list *l, enum mutation m)
{
    cl_uint n = l->n_args;
    const char **d = calloc(n, sizeof *d);
    assert_non_null(d);
    for (cl_uint i = 0; i < n; i++)
        d[i] = l->args[i].decl;
    char *edited = NULL; /* one declaration rewritten */
    int ok = m == M_NONE || m == M_DROP_LAST;
    if (m == M_DROP_LAST)
        n--;
    for (cl_uint i = 0; !ok && i < n; i++) {
        const clg_layout_arg *a = &l->args[i], *b = i + 1 < n ? &l->args[i + 1] : NULL;
        if ((m == M_SWAP_NAMES && b && !strcmp(a->type_name, b->type_name) &&
             a->type_qualifier == b->type_qualifier && a->address == b->address) ||
            (m == M_SWAP_TYPES && b && strcmp(a->type_name, b->type_name) &&
             a->address == b->address)) {
            /* same types: only the names trade places; else the types */
            d[i] = b->decl;
            d[i + 1] = a->decl;
            ok = 1;
        }
        const char *from = m == M_NO_RESTRICT ? "restrict"
                           : m == M_NO_CONST  ? "const "
                           : m == M_CONSTANT  ? "global "
                                              : NULL;
        const char *at = from ? strstr(a->decl, from) : NULL;
        if (at && (m != M_CONSTANT || a->type_qualifier & CL_KERNEL_ARG_TYPE_CONST)) {
            /* constant pointers must point to const data in OpenCL C */
            const char *to = m == M_CONSTANT ? "constant " : "";
            size_t len = strlen(a->decl) - strlen(from) + strlen(to);
            edited = calloc(1, len + 1);
            assert_non_null(edited);
            snprintf(edited, len + 1, "%.*s%s%s", (int)(at - a->decl), a->decl, to,
                     at + strlen(from));
            d[i] = edited;
            ok = 1;
        }
    }
    char *s = NULL;
    size_t len = 0;
    for (cl_uint i = 0; ok && i < n; i++)
        append(&s, &len, "%s%s", i ? ", " : "", d[i]);
    free(d);
    free(edited);
    return s;
}

static void test_comparison_catches_mismatches(void **state)
{
    (void)state;
    static const char *const what[] = {
        "unchanged",         "two arguments of one type swapped",
        "two arguments of different types swapped",
        "one argument less", "restrict dropped",
        "const dropped",     "global -> constant"};
    /* the longest list: it has every kind of argument */
    const clg_layout_list *l = clg__layout_kernels[0].list;
    for (size_t i = 1; i < clg__layout_n_kernels; i++)
        if (clg__layout_kernels[i].list->n_args > l->n_args)
            l = clg__layout_kernels[i].list;
    for (int m = M_NONE; m <= M_CONSTANT; m++) {
        char *params = mutated_params(l, (enum mutation)m);
        assert_non_null(params); /* every mutation applies to that list */
        char *src = NULL;
        size_t len = 0;
        append(&src, &len, "\nkernel void mutant(%s) { }\n", params);
        free(params);
        cl_program p = build_with_common(src, "-cl-kernel-arg-info");
        free(src);
        cl_int err;
        cl_kernel k = clCreateKernel(p, "mutant", &err);
        assert_int_equal(err, CL_SUCCESS);
        print_message("mutant of list %s, %s:\n", l->name, what[m]);
        int bad = compare_args(k, "  mutant", l);
        if (m == M_NONE)
            assert_int_equal(bad, 0);
        else
            assert_true(bad > 0);
        clReleaseKernel(k);
        clReleaseProgram(p);
    }
}

TU_MAIN("kernel_abi", setup, tu_group_teardown, cmocka_unit_test(test_library_kernels_match_lists),
        cmocka_unit_test(test_step_block_indices_match), cmocka_unit_test(test_enum_codes_match),
        cmocka_unit_test(test_comparison_catches_mismatches))
