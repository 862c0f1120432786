/* test_program_cache.c - the on-disk program cache: a second load (new
 * context) comes from the cache, CLGRAD_CACHE_DIR=off never caches, default
 * locations, and damaged, truncated or foreign entries are rejected by
 * clgrad's own checks before any driver sees them, fall back to a source
 * build and are repaired. A binary the driver refuses falls back too, and
 * so does another program's binary under a recomputed digest. Each repair
 * is noted once in the context (clg_context_cache_repairs). Build failures
 * carry the build log. The programs are a source of the test's own, built
 * as a tool builds its kernels (clg_context_program_source): a context
 * keeps one program per name, options and source; clgrad's own programs
 * (clg_context_program) go through the same cache.
 *
 * This program defines clCreateProgramWithBinary and clBuildProgram itself
 * (forwarding to the ICD loader's): the library is linked statically into
 * it, so its calls land here. That counts which bytes reach the driver, and
 * lets a test play a driver that refuses a binary without handing a real
 * one junk (Mesa's rusticl aborts the process on a damaged binary). */
#define _GNU_SOURCE
#include <setjmp.h>
#include "clgrad_advanced.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "program_cache.h"
#include "testutil.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The documented layout (src/program_cache.c): magic 8, format version 4,
 * reserved 4, key 32, binary length 8, digest 32, then the binary. The
 * digest is the SHA-256 of the 56 header bytes before it and the binary. */
#define HEADER_SIZE  88
#define OFF_VERSION  8
#define OFF_RESERVED 12
#define OFF_KEY      16
#define OFF_LENGTH   48
#define OFF_DIGEST   56
#define CACHE_FORMAT 2

/* --- the driver's view: every binary clgrad hands to the ICD loader ------ */

typedef cl_program (*create_with_binary_fn)(cl_context, cl_uint, const cl_device_id *,
                                            const size_t *, const unsigned char **, cl_int *,
                                            cl_int *);
typedef cl_int (*build_program_fn)(cl_program, cl_uint, const cl_device_id *, const char *,
                                   void(CL_CALLBACK *)(cl_program, void *), void *);

typedef enum driver_mode {
    DRIVER_REAL,          /* forward everything */
    DRIVER_REJECT_CREATE, /* clCreateProgramWithBinary fails: CL_INVALID_BINARY */
    DRIVER_REJECT_BUILD,  /* the binary loads, clBuildProgram on it fails */
} driver_mode;

static driver_mode mode = DRIVER_REAL;
static int binary_loads;           /* calls of clCreateProgramWithBinary */
static unsigned char *last_binary; /* a copy of the last binary passed */
static size_t last_binary_size;
static cl_program last_binary_program; /* what the driver returned for it */

static void *real_symbol(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "test_program_cache: dlsym(RTLD_NEXT, \"%s\") failed: %s\n", name,
                dlerror());
        abort();
    }
    return f;
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list, const size_t *lengths,
    const unsigned char **binaries, cl_int *binary_status, cl_int *errcode_ret)
{
    static create_with_binary_fn real;
    if (!real)
        *(void **)&real = real_symbol("clCreateProgramWithBinary");
    binary_loads++;
    if (num_devices == 1 && lengths && binaries && binaries[0]) {
        free(last_binary);
        last_binary = tu_xmalloc(lengths[0]);
        memcpy(last_binary, binaries[0], lengths[0]);
        last_binary_size = lengths[0];
    }
    if (mode == DRIVER_REJECT_CREATE) {
        if (binary_status)
            binary_status[0] = CL_INVALID_BINARY;
        if (errcode_ret)
            *errcode_ret = CL_INVALID_BINARY;
        return NULL;
    }
    last_binary_program =
        real(context, num_devices, device_list, lengths, binaries, binary_status, errcode_ret);
    return last_binary_program;
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices,
                                               const cl_device_id *device_list, const char *options,
                                               void(CL_CALLBACK *notify)(cl_program, void *),
                                               void *user_data)
{
    static build_program_fn real;
    if (!real)
        *(void **)&real = real_symbol("clBuildProgram");
    if (mode == DRIVER_REJECT_BUILD && program && program == last_binary_program) {
        /* once: the source build that follows may get the same handle */
        last_binary_program = NULL;
        return CL_BUILD_PROGRAM_FAILURE;
    }
    return real(program, num_devices, device_list, options, notify, user_data);
}

static char *tmp;        /* scratch directory of this test run */
static char cache[4096]; /* CLGRAD_CACHE_DIR, nested to test mkdir -p */

static int group_setup(void **state)
{
    (void)state;
    tu_require_platform();
    unsetenv("CLGRAD_DEVICE");
    tmp = tu_mkdtemp("clgrad-cache-test");
    snprintf(cache, sizeof cache, "%s/nested/cache", tmp);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_rmdir_tree(tmp);
    free(tmp);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    setenv("CLGRAD_CACHE_DIR", cache, 1);
    return 0;
}

/* Points CLGRAD_CACHE_DIR at <tmp>/<name>, a cache of the test's own; its
 * path in dir. */
static void use_cache_under_tmp(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s", tmp, name);
    setenv("CLGRAD_CACHE_DIR", dir, 1);
}

/* XDG_CACHE_HOME and HOME pointed under tmp by a test, and the HOME to
 * give back after it. */
typedef struct fake_home {
    char xdg[4200], home[4200];
    char *saved_home;
} fake_home;

/* Names <tmp>/<prefix>xdg and <tmp>/<prefix>home and saves HOME; sets
 * neither variable. */
static void fake_home_names(fake_home *f, const char *prefix)
{
    snprintf(f->xdg, sizeof f->xdg, "%s/%sxdg", tmp, prefix);
    snprintf(f->home, sizeof f->home, "%s/%shome", tmp, prefix);
    f->saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
}

/* Unsets XDG_CACHE_HOME and gives HOME back. */
static void fake_home_restore(fake_home *f)
{
    unsetenv("XDG_CACHE_HOME");
    if (f->saved_home) {
        setenv("HOME", f->saved_home, 1);
        free(f->saved_home);
    }
}

/* Number of finished entries in dir; the path of the last one in *path. */
static int entries(const char *dir, char *path, size_t cap, int *temps)
{
    int n = 0;
    if (temps)
        *temps = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strstr(e->d_name, ".tmp") && temps)
            (*temps)++;
        if (len == 64 + 4 && strcmp(e->d_name + 64, ".bin") == 0) {
            n++;
            if (path)
                snprintf(path, cap, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* CL_PROGRAM_KERNEL_NAMES is a ';'-separated list in an order each
 * implementation picks (PoCL and rusticl differ): sorts the names in place,
 * so that two lists of the same kernels compare equal as strings. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sort_kernel_names(char *names, size_t cap)
{
    char *copy = strdup(names);
    assert_non_null(copy);
    char *tok[1024];
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        assert_true(n < sizeof tok / sizeof tok[0]);
        tok[n++] = t;
    }
    qsort(tok, n, sizeof tok[0], cmp_str);
    size_t len = 0;
    names[0] = '\0';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(names + len, cap - len, "%s%s", i ? ";" : "", tok[i]);
    assert_true(len < cap);
    free(copy);
}

/* What the context of the last load() noted (clg_context_cache_repairs). */
static uint64_t last_repairs;
static char last_note[512];

/* The program most tests build: a tool's source, in two chunks as
 * tools/embed-cl.py cuts a file. */
static const char *const sample_source[] = {
    "__kernel void sample_copy(__global const float *a, __global float *b)\n"
    "{\n"
    "    b[get_global_id(0)] = a[get_global_id(0)];\n"
    "}\n",
    "__kernel void sample_scale(__global float *a, float s)\n"
    "{\n"
    "    a[get_global_id(0)] *= s;\n"
    "}\n",
    NULL};
/* Another program (another source under the same name; the binary the
 * forgery passes off as the sample's). */
static const char *const foreign_source[] = {
    "__kernel void foreign_fill(__global float *a, float v)\n"
    "{\n"
    "    a[get_global_id(0)] = v;\n"
    "}\n",
    NULL};

/* Program name: clgrad's own (source NULL) or the caller's source. */
static clg_status get_program(clg_context *ctx, const char *name, const char *const *source,
                              const char *options, cl_program *p, int *cached)
{
    return source ? clg_context_program_source(ctx, name, source, options, p, cached)
                  : clg_context_program(ctx, name, options, p, cached);
}

/* Loads program name of source (NULL: clgrad's own) with options in a
 * fresh context; returns from_cache. kernel_names (if not NULL) gets the
 * program's kernel names, sorted. */
static int load_program(const char *name, const char *const *source, const char *options,
                        char *kernel_names, size_t cap)
{
    clg_context *ctx = tu_context_or_skip();
    cl_program p = NULL;
    int cached = -1;
    int loads_before = binary_loads;
    clg_status st = get_program(ctx, name, source, options, &p, &cached);
    last_repairs = clg_context_cache_repairs(ctx, last_note, sizeof last_note);
    /* a hit is exactly one binary given to the driver; a miss is none,
     * unless a test's driver refused the binary or the entry was repaired
     * (the callers count those) */
    if (st == CLG_SUCCESS && mode == DRIVER_REAL && last_repairs == 0)
        assert_int_equal(binary_loads - loads_before, cached == 1);
    if (st != CLG_SUCCESS)
        fprintf(stderr, "%s: %s\n", name, clg_last_error(ctx));
    assert_int_equal(st, CLG_SUCCESS);
    assert_non_null(p);
    cl_build_status bs = CL_BUILD_ERROR;
    assert_int_equal(clGetProgramBuildInfo(p, clg_context_device(ctx), CL_PROGRAM_BUILD_STATUS,
                                           sizeof bs, &bs, NULL),
                     CL_SUCCESS);
    assert_int_equal(bs, CL_BUILD_SUCCESS);
    if (kernel_names) {
        kernel_names[0] = '\0';
        size_t n = 0;
        /* a program without kernels may answer CL_INVALID_VALUE: then "" */
        if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, cap, kernel_names, &n) != CL_SUCCESS)
            kernel_names[0] = '\0';
        sort_kernel_names(kernel_names, cap);
    }
    /* nothing to repair in a cache hit */
    if (cached == 1)
        assert_int_equal(last_repairs, 0);
    clg_context_destroy(ctx);
    assert_true(cached == 0 || cached == 1);
    return cached;
}

/* load_program of the sample, the program most tests use. */
static int load(const char *options, char *kernel_names, size_t cap)
{
    return load_program("sample", sample_source, options, kernel_names, cap);
}

/* The context of the last load() rebuilt one entry, for the reason
 * unusable, and rewrote it. */
static void expect_repair_noted(const char *unusable)
{
    char want[512];
    snprintf(want, sizeof want,
             "kernel cache: the entry of program \"sample\" %s; rebuilt from source and the entry "
             "rewritten",
             unusable);
    assert_int_equal(last_repairs, 1);
    assert_string_equal(last_note, want);
}

static void test_second_load_comes_from_cache(void **state)
{
    (void)state;
    char names1[4096], names2[4096], path[4200];
    int temps;
    assert_int_equal(load("-DCLG_TEST_CACHE=1", names1, sizeof names1), 0);
    assert_int_equal(entries(cache, path, sizeof path, &temps), 1);
    assert_int_equal(temps, 0);
    assert_int_equal(load("-DCLG_TEST_CACHE=1", names2, sizeof names2), 1);
    assert_string_equal(names1, "sample_copy;sample_scale");
    assert_string_equal(names1, names2); /* the same program came back */
    assert_int_equal(entries(cache, NULL, 0, NULL), 1);

    /* the entry starts with the documented header */
    size_t n;
    unsigned char *buf = tu_read_file(path, &n);
    assert_true(n > HEADER_SIZE);
    assert_memory_equal(buf, "CLGRADPC", 8);
    free(buf);

    /* other options are another program, another entry */
    assert_int_equal(load("-DCLG_TEST_CACHE=2", NULL, 0), 0);
    assert_int_equal(entries(cache, NULL, 0, NULL), 2);
    assert_int_equal(load("-DCLG_TEST_CACHE=2", NULL, 0), 1);
}

/* Runs sample_scale of p on {1, -2, 0.5, 4} with s = 3 and checks the
 * result against the host's: the caller's source is what runs. */
static void check_sample_runs(clg_context *ctx, cl_program p)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, "sample_scale", &err);
    assert_int_equal(err, CL_SUCCESS);
    float host[4] = {1.0f, -2.0f, 0.5f, 4.0f}, got[4];
    cl_mem a = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof host, host, &err);
    assert_int_equal(err, CL_SUCCESS);
    float s = 3.0f;
    size_t global = 4;
    assert_int_equal(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
    assert_int_equal(clSetKernelArg(k, 1, sizeof s, &s), CL_SUCCESS);
    assert_int_equal(clEnqueueNDRangeKernel(clg_context_queue(ctx), k, 1, NULL, &global, NULL, 0,
                                            NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(ctx), a, CL_TRUE, 0, sizeof got, got,
                                         0, NULL, NULL),
                     CL_SUCCESS);
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == host[i] * s);
    clReleaseMemObject(a);
    clReleaseKernel(k);
}

/* A context keeps one program per name, options and source: the same call
 * gives the same program; another source under the same name, or a
 * caller's source under one of clgrad's names, is another program (and
 * another cache entry). */
static void test_caller_sources_are_programs_of_their_own(void **state)
{
    (void)state;
    char dir[4200];
    use_cache_under_tmp(dir, sizeof dir, "sources");
    clg_context *ctx = tu_context_or_skip();
    const char *opt = "-DCLG_TEST_SOURCE=1";
    cl_program sample = NULL, again = NULL, foreign = NULL, own = NULL, named_own = NULL;
    int cached = -1;
    assert_int_equal(clg_context_program_source(ctx, "sample", sample_source, opt, &sample,
                                                &cached),
                     CLG_SUCCESS);
    assert_int_equal(cached, 0);
    check_sample_runs(ctx, sample);
    assert_int_equal(clg_context_program_source(ctx, "sample", sample_source, opt, &again, NULL),
                     CLG_SUCCESS);
    assert_ptr_equal(again, sample);
    assert_int_equal(clg_context_program_source(ctx, "sample", foreign_source, opt, &foreign,
                                                &cached),
                     CLG_SUCCESS);
    assert_int_equal(cached, 0);
    assert_true(foreign != sample);
    char names[256] = "";
    assert_int_equal(
        clGetProgramInfo(foreign, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL),
        CL_SUCCESS);
    assert_string_equal(names, "foreign_fill");
    assert_int_equal(entries(dir, NULL, 0, NULL), 2);
    /* a caller's source named "stats" (the sample's source: its entry),
     * then clgrad's "stats" (through the same cache: a third entry) */
    assert_int_equal(clg_context_program_source(ctx, "stats", sample_source, opt, &named_own,
                                                &cached),
                     CLG_SUCCESS);
    assert_int_equal(cached, 1);
    assert_true(named_own != sample);
    check_sample_runs(ctx, named_own);
    assert_int_equal(clg_context_program(ctx, "stats", opt, &own, NULL), CLG_SUCCESS);
    assert_true(own != named_own);
    assert_int_equal(entries(dir, NULL, 0, NULL), 3);
    clg_context_destroy(ctx);
    /* new contexts find both kinds in the disk cache */
    assert_int_equal(load_program("sample", sample_source, opt, NULL, 0), 1);
    assert_int_equal(load_program("stats", NULL, opt, NULL, 0), 1);
    assert_int_equal(entries(dir, NULL, 0, NULL), 3);
}

static void test_cache_off(void **state)
{
    (void)state;
    fake_home f;
    fake_home_names(&f, "off-");
    setenv("XDG_CACHE_HOME", f.xdg, 1);
    setenv("HOME", f.home, 1);
    setenv("CLGRAD_CACHE_DIR", "off", 1);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    setenv("CLGRAD_CACHE_DIR", "OFF", 1);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    struct stat st;
    assert_int_not_equal(stat(f.xdg, &st), 0);
    assert_int_not_equal(stat(f.home, &st), 0);
    assert_int_equal(entries(cache, NULL, 0, NULL), 2); /* only the first test's */
    fake_home_restore(&f);
}

/* The first build of CLG_TEST_DEFAULT is compiled and cached in dir
 * (parent/sub), the second loaded from there. */
static void expect_default_cache(const char *parent, const char *sub)
{
    char dir[4300];
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 0);
    snprintf(dir, sizeof dir, "%s/%s", parent, sub);
    assert_int_equal(entries(dir, NULL, 0, NULL), 1);
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 1);
}

static void test_default_locations(void **state)
{
    (void)state;
    fake_home f;
    fake_home_names(&f, "");
    unsetenv("CLGRAD_CACHE_DIR");

    setenv("XDG_CACHE_HOME", f.xdg, 1);
    expect_default_cache(f.xdg, "clgrad");

    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", f.home, 1);
    expect_default_cache(f.home, ".cache/clgrad");

    fake_home_restore(&f);
}

/* Every way an entry can go wrong. Each must fail one of clgrad's own checks
 * (magic, format version, key, length, file size, digest), so that the
 * driver never sees it. An entry that passes them all is one clgrad wrote
 * for this key, bit for bit; junk forged to pass them would test only the
 * driver (and abort the process on rusticl), so there is no such case. */
typedef enum damage {
    FLIP_FIRST_BINARY_BYTE,
    FLIP_MIDDLE_BINARY_BYTE,
    FLIP_LAST_BINARY_BYTE,
    FLIP_MAGIC,
    WRONG_FORMAT_VERSION,
    FORMAT_1_ENTRY,   /* the old layout: digest of the binary alone */
    NONZERO_RESERVED, /* covered by the digest */
    FLIP_KEY_BYTE,
    FLIP_DIGEST_BYTE,
    LENGTH_FIELD_PLUS_ONE,
    LENGTH_FIELD_MINUS_ONE,
    ZERO_LENGTH_FIELD,
    HUGE_LENGTH_FIELD,
    SHORTER_BY_ONE_CONSISTENT, /* last byte cut, length field to match */
    TRUNCATE_ONE_BYTE,
    TRUNCATE_HALF,
    HEADER_ONLY,
    TRUNCATE_HEADER,
    EMPTY_FILE,
    APPEND_BYTE,
    FOREIGN_ENTRY,            /* a valid entry of another program under this name */
    FOREIGN_PAYLOAD,          /* this header, another entry's binary and digest */
    JUNK_WITH_PAYLOAD_DIGEST, /* this header, junk, a digest of the junk alone */
    DAMAGE_KINDS
} damage;

static const char *const damage_names[] = {
    "flip first binary byte",
    "flip middle binary byte",
    "flip last binary byte",
    "flip magic",
    "wrong format version",
    "format 1 entry",
    "nonzero reserved field",
    "flip key byte",
    "flip digest byte",
    "length field + 1",
    "length field - 1",
    "zero length field",
    "huge length field",
    "shorter by one byte, length field to match",
    "truncate one byte",
    "truncate half",
    "header only",
    "truncate header",
    "empty file",
    "append a byte",
    "foreign entry",
    "foreign payload and digest",
    "junk with a digest of the junk alone",
};

static void put_len(unsigned char *h, uint64_t len)
{
    for (int i = 0; i < 8; i++)
        h[OFF_LENGTH + i] = (unsigned char)(len >> (8 * i));
}

static void sha256_of(const void *data, size_t n, unsigned char out[32])
{
    clg_sha256 s;
    clg__sha256_init(&s);
    clg__sha256_update(&s, data, n);
    clg__sha256_final(&s, out);
}

/* Writes the intact entry good[0..n) to path with damage kind applied;
 * foreign[0..fn) is a valid entry of another program. */
static void write_damaged(damage kind, const char *path, const unsigned char *good, size_t n,
                          const unsigned char *foreign, size_t fn)
{
    size_t cap = n + fn + 64;
    unsigned char *buf = tu_xmalloc(cap);
    memcpy(buf, good, n);
    size_t len = n;
    switch (kind) {
    case FLIP_FIRST_BINARY_BYTE: buf[HEADER_SIZE] ^= 0x01; break;
    case FLIP_MIDDLE_BINARY_BYTE: buf[HEADER_SIZE + (n - HEADER_SIZE) / 2] ^= 0x40; break;
    case FLIP_LAST_BINARY_BYTE: buf[n - 1] ^= 0x80; break;
    case FLIP_MAGIC: buf[0] ^= 1; break;
    case WRONG_FORMAT_VERSION: buf[OFF_VERSION] = CACHE_FORMAT + 1; break;
    case FORMAT_1_ENTRY:
        buf[OFF_VERSION] = 1;
        sha256_of(buf + HEADER_SIZE, n - HEADER_SIZE, buf + OFF_DIGEST);
        break;
    case NONZERO_RESERVED: buf[OFF_RESERVED] = 1; break;
    case FLIP_KEY_BYTE: buf[OFF_KEY + 7] ^= 0x10; break;
    case FLIP_DIGEST_BYTE: buf[OFF_DIGEST + 31] ^= 0x01; break;
    case LENGTH_FIELD_PLUS_ONE: put_len(buf, n - HEADER_SIZE + 1); break;
    case LENGTH_FIELD_MINUS_ONE: put_len(buf, n - HEADER_SIZE - 1); break;
    case ZERO_LENGTH_FIELD: put_len(buf, 0); break;
    case HUGE_LENGTH_FIELD: put_len(buf, UINT64_MAX); break;
    case SHORTER_BY_ONE_CONSISTENT:
        put_len(buf, n - HEADER_SIZE - 1);
        len = n - 1;
        break;
    case TRUNCATE_ONE_BYTE: len = n - 1; break;
    case TRUNCATE_HALF: len = n / 2; break;
    case HEADER_ONLY: len = HEADER_SIZE; break;
    case TRUNCATE_HEADER: len = 20; break;
    case EMPTY_FILE: len = 0; break;
    case APPEND_BYTE:
        buf[n] = 0;
        len = n + 1;
        break;
    case FOREIGN_ENTRY:
        memcpy(buf, foreign, fn);
        len = fn;
        break;
    case FOREIGN_PAYLOAD:
        /* the foreign digest is valid for the foreign header only */
        memcpy(buf + OFF_LENGTH, foreign + OFF_LENGTH, 8);
        memcpy(buf + OFF_DIGEST, foreign + OFF_DIGEST, 32);
        memcpy(buf + HEADER_SIZE, foreign + HEADER_SIZE, fn - HEADER_SIZE);
        len = fn;
        break;
    case JUNK_WITH_PAYLOAD_DIGEST: {
        static const char junk[] = "this is not a program binary";
        put_len(buf, sizeof junk);
        sha256_of(junk, sizeof junk, buf + OFF_DIGEST);
        memcpy(buf + HEADER_SIZE, junk, sizeof junk);
        len = HEADER_SIZE + sizeof junk;
        break;
    }
    default: fail();
    }
    tu_write_file(path, buf, len);
    free(buf);
}

/* The digest an entry of n bytes should carry, computed here from the
 * documented layout, independently of src/program_cache.c. */
static void documented_digest(const unsigned char *e, size_t n, unsigned char d[32])
{
    clg_sha256 s;
    clg__sha256_init(&s);
    clg__sha256_update(&s, e, OFF_DIGEST);
    clg__sha256_update(&s, e + HEADER_SIZE, n - HEADER_SIZE);
    clg__sha256_final(&s, d);
}

/* The entry carries its documented digest, length, version and zero
 * reserved bytes. */
static void check_documented_digest(const unsigned char *e, size_t n)
{
    unsigned char d[32];
    documented_digest(e, n, d);
    assert_memory_equal(d, e + OFF_DIGEST, 32);
    uint64_t len = 0;
    for (int i = 0; i < 8; i++)
        len |= (uint64_t)e[OFF_LENGTH + i] << (8 * i);
    assert_true(len == n - HEADER_SIZE);
    assert_int_equal(e[OFF_VERSION], CACHE_FORMAT);
    for (int i = OFF_RESERVED; i < OFF_KEY; i++)
        assert_int_equal(e[i], 0);
}

/* The entry at path, checked to be a documented one (check_documented_digest)
 * for key; malloc'ed, its size in *n. */
static unsigned char *read_entry_for(const char *path, const uint8_t *key, size_t *n)
{
    unsigned char *e = tu_read_file(path, n);
    check_documented_digest(e, *n);
    assert_memory_equal(e + OFF_KEY, key, CLG_CACHE_KEY_SIZE);
    return e;
}

/* The only entry in dir, read (its size in *n) and removed. */
static unsigned char *take_only_entry(const char *dir, size_t *n)
{
    char path[4400];
    assert_int_equal(entries(dir, path, sizeof path, NULL), 1);
    unsigned char *e = tu_read_file(path, n);
    assert_int_equal(unlink(path), 0);
    return e;
}

static void test_damaged_entries_fall_back_and_repair(void **state)
{
    (void)state;
    char dir[4200], path[4400];
    use_cache_under_tmp(dir, sizeof dir, "damage");
    /* an entry of another program to pass off as this one */
    assert_int_equal(load("-DCLG_TEST_FOREIGN=1", NULL, 0), 0);
    size_t fn;
    unsigned char *foreign = take_only_entry(dir, &fn);

    char names_ok[4096];
    assert_int_equal(load("-DCLG_TEST_DAMAGE=1", names_ok, sizeof names_ok), 0);
    assert_string_equal(names_ok, "sample_copy;sample_scale");
    assert_int_equal(entries(dir, path, sizeof path, NULL), 1);
    size_t n;
    unsigned char *good = tu_read_file(path, &n);
    assert_true(n > HEADER_SIZE);
    check_documented_digest(good, n);
    check_documented_digest(foreign, fn);
    uint8_t key[CLG_CACHE_KEY_SIZE];
    memcpy(key, good + OFF_KEY, sizeof key);
    /* the file is named after the key it holds */
    char hex[2 * CLG_CACHE_KEY_SIZE + 1];
    for (int i = 0; i < CLG_CACHE_KEY_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    assert_non_null(strstr(path, hex));

    for (int k = 0; k < DAMAGE_KINDS; k++) {
        print_message("damage: %s\n", damage_names[k]);
        /* intact before: the driver gets exactly the stored binary */
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", NULL, 0), 1);
        assert_true(last_binary_size == n - HEADER_SIZE);
        assert_memory_equal(last_binary, good + HEADER_SIZE, n - HEADER_SIZE);

        write_damaged((damage)k, path, good, n, foreign, fn);
        /* clgrad's own checks reject it... */
        unsigned char *bin = (unsigned char *)"not touched";
        size_t size = 12345;
        if (clg__cache_load(key, &bin, &size) != CLG_CACHE_REJECTED)
            fail_msg("damage \"%s\": clg__cache_load did not reject the entry",
                     damage_names[k]);
        assert_null(bin);
        assert_int_equal(size, 0);
        /* ...so no binary reaches the driver (load() counts the calls): the
         * program is rebuilt from source, the same kernels */
        char names[4096];
        int loads = binary_loads;
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", names, sizeof names), 0);
        assert_int_equal(binary_loads, loads);
        assert_string_equal(names, names_ok);
        expect_repair_noted("is damaged, truncated or not written for this program");
        /* and the entry was replaced by a good one */
        int temps;
        assert_int_equal(entries(dir, NULL, 0, &temps), 1);
        assert_int_equal(temps, 0);
        size_t rn;
        free(read_entry_for(path, key, &rn));
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", NULL, 0), 1);
    }
    free(good);
    free(foreign);
}

/* A binary that passes clgrad's checks but that the driver refuses (a
 * driver update that kept its version string, say) is rebuilt from source
 * and the entry rewritten; played by this program's clCreateProgramWithBinary
 * and clBuildProgram, so no real driver is handed a bad binary. */
static void test_driver_refusal_falls_back(void **state)
{
    (void)state;
    char dir[4200], path[4400];
    use_cache_under_tmp(dir, sizeof dir, "refusal");
    char names_ok[4096], names[4096];
    assert_int_equal(load("-DCLG_TEST_REFUSAL=1", names_ok, sizeof names_ok), 0);
    assert_int_equal(entries(dir, path, sizeof path, NULL), 1);
    const driver_mode modes[] = {DRIVER_REJECT_CREATE, DRIVER_REJECT_BUILD};
    for (size_t i = 0; i < 2; i++) {
        print_message("driver refuses the binary in %s\n", modes[i] == DRIVER_REJECT_CREATE
                                                               ? "clCreateProgramWithBinary"
                                                               : "clBuildProgram");
        mode = modes[i];
        int loads = binary_loads;
        assert_int_equal(load("-DCLG_TEST_REFUSAL=1", names, sizeof names), 0);
        mode = DRIVER_REAL;
        assert_int_equal(binary_loads, loads + 1); /* it was offered once */
        assert_string_equal(names, names_ok);
        expect_repair_noted(modes[i] == DRIVER_REJECT_CREATE
                                ? "holds a binary the driver does not take"
                                : "holds a binary the driver does not build");
        assert_int_equal(entries(dir, NULL, 0, NULL), 1);
        assert_int_equal(load("-DCLG_TEST_REFUSAL=1", NULL, 0), 1);
    }
}

/* The forgery: another program's binary (foreign_source's) stored
 * under this program's key, with the digest recomputed over it. It passes
 * every check of the entry, so the driver builds it; the program then has
 * kernels its source does not name. Before the check, the cache handed it
 * out as the program and every kernel lookup failed, run after run. Now
 * it is rebuilt from source, the entry rewritten, and the context notes
 * it once. */
static void test_foreign_binary_is_repaired(void **state)
{
    (void)state;
    char dir[4200], path[4400];
    use_cache_under_tmp(dir, sizeof dir, "forged");
    char foreign_names[4096], names_ok[4096], names[4096];
    assert_int_equal(load_program("foreign", foreign_source, "", foreign_names,
                                  sizeof foreign_names),
                     0);
    size_t fn;
    unsigned char *foreign = take_only_entry(dir, &fn);
    assert_int_equal(load("-DCLG_TEST_FORGED=1", names_ok, sizeof names_ok), 0);
    assert_int_equal(last_repairs, 0);
    assert_string_equal(last_note, "");
    assert_int_equal(entries(dir, path, sizeof path, NULL), 1);
    size_t n;
    unsigned char *good = tu_read_file(path, &n);

    /* this entry's header, the foreign binary, the length and digest to match */
    size_t bin = fn - HEADER_SIZE, forged_size = HEADER_SIZE + bin;
    unsigned char *forged = tu_xmalloc(forged_size);
    memcpy(forged, good, OFF_LENGTH);
    put_len(forged, bin);
    memcpy(forged + HEADER_SIZE, foreign + HEADER_SIZE, bin);
    documented_digest(forged, forged_size, forged + OFF_DIGEST);
    tu_write_file(path, forged, forged_size);
    check_documented_digest(forged, forged_size);
    uint8_t key[CLG_CACHE_KEY_SIZE];
    memcpy(key, good + OFF_KEY, sizeof key);
    unsigned char *loaded = NULL;
    size_t loaded_size = 0;
    assert_int_equal(clg__cache_load(key, &loaded, &loaded_size), CLG_CACHE_HIT);
    free(loaded);

    /* offered to the driver once, then rebuilt from source */
    int loads = binary_loads;
    assert_int_equal(load("-DCLG_TEST_FORGED=1", names, sizeof names), 0);
    assert_int_equal(binary_loads, loads + 1);
    assert_string_equal(names, names_ok);
    /* the kernel named is the foreign program's */
    const char *q = strchr(last_note, '\'');
    assert_non_null(q);
    char kernel[128];
    snprintf(kernel, sizeof kernel, "%.*s", (int)strcspn(q + 1, "'"), q + 1);
    assert_non_null(strstr(foreign_names, kernel));
    assert_string_equal(kernel, "foreign_fill");
    char unusable[256];
    snprintf(unusable, sizeof unusable,
             "holds another program: its binary has kernel '%s', which its source does not "
             "name",
             kernel);
    expect_repair_noted(unusable);

    /* the entry is this program's again: a hit, nothing to repair */
    size_t rn;
    unsigned char *repaired = read_entry_for(path, key, &rn);
    assert_false(rn == forged_size &&
                 memcmp(repaired + HEADER_SIZE, forged + HEADER_SIZE, bin) == 0);
    free(repaired);
    assert_int_equal(load("-DCLG_TEST_FORGED=1", names, sizeof names), 1);
    assert_string_equal(names, names_ok);
    assert_string_equal(last_note, "");
    free(forged);
    free(good);
    free(foreign);
}

static void test_unusable_cache_dir_never_fails_a_build(void **state)
{
    (void)state;
    char file[4200], under_file[4300];
    snprintf(file, sizeof file, "%s/a-file", tmp);
    tu_write_file(file, "x", 1);
    snprintf(under_file, sizeof under_file, "%s/sub", file); /* a directory under a file */
    const char *dirs[] = {under_file, "/proc/clgrad-cannot-exist/cache"};
    for (size_t i = 0; i < 2; i++) {
        setenv("CLGRAD_CACHE_DIR", dirs[i], 1);
        assert_int_equal(load("-DCLG_TEST_UNUSABLE=1", NULL, 0), 0);
        assert_int_equal(load("-DCLG_TEST_UNUSABLE=1", NULL, 0), 0);
    }
}

static void test_build_failure_carries_log(void **state)
{
    (void)state;
    clg_context *ctx = tu_context_or_skip();
    cl_program p = (cl_program)0x1;
    int cached = -1;
    /* The embedded sources are fine; an #error forced in through a macro
     * that the -D value cannot satisfy would need source access, so break
     * the build with a redefinition under -Werror instead. */
    clg_status st = clg_context_program_source(
        ctx, "sample", sample_source, "-Werror -DCLG_TEST_REDEF=1 -DCLG_TEST_REDEF=2", &p, &cached);
    assert_int_equal(st, CLG_ERR_BUILD);
    assert_null(p);
    assert_int_equal(cached, 0);
    const char *msg = clg_last_error(ctx);
    assert_non_null(strstr(msg, "build log"));
    assert_non_null(strstr(msg, "CLG_TEST_REDEF"));
    assert_int_equal(entries(cache, NULL, 0, NULL), 2); /* nothing cached */
    /* the context is still usable */
    assert_int_equal(
        clg_context_program_source(ctx, "sample", sample_source, "-DCLG_TEST_CACHE=1", &p, &cached),
        CLG_SUCCESS);
    assert_int_equal(cached, 1);
    clg_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_second_load_comes_from_cache, setup),
        cmocka_unit_test_setup(test_caller_sources_are_programs_of_their_own, setup),
        cmocka_unit_test_setup(test_cache_off, setup),
        cmocka_unit_test_setup(test_default_locations, setup),
        cmocka_unit_test_setup(test_damaged_entries_fall_back_and_repair, setup),
        cmocka_unit_test_setup(test_driver_refusal_falls_back, setup),
        cmocka_unit_test_setup(test_foreign_binary_is_repaired, setup),
        cmocka_unit_test_setup(test_unusable_cache_dir_never_fails_a_build, setup),
        cmocka_unit_test_setup(test_build_failure_carries_log, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
