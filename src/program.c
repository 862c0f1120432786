/* program.c - builds clgrad's embedded OpenCL programs, and a caller's
 * (clg_context_program_source), for a context, once per (name, options,
 * source): from the context's list, else from the disk cache, else from
 * source (common.cl in front of cl/<name>.cl or of the caller's chunks). A
 * cache entry that cannot be used (damaged, refused by the driver, or
 * another program's binary) is rebuilt from source and rewritten, and the
 * context notes it (clg_context_cache_repairs). */
#include "internal.h"
#include "device_info.h"
#include "program_cache.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenCL 3.0 query, absent from headers that target 2.0. */
#define CLG_DEVICE_OPENCL_C_ALL_VERSIONS 0x1066
#define CLG_VERSION_MAJOR(v)             ((v) >> 22)
#define CLG_VERSION_MINOR(v)             (((v) >> 12) & 0x3FF)

typedef struct {
    cl_uint version;
    char name[64];
} clg_name_version;

/* Options (after their "-cl-" prefix) that would let the compiler assume no
 * inf/NaN or reorder float math: the non-finite checks and the reference
 * tests depend on IEEE. */
static const char *const forbidden_options[] = {
    "fast-relaxed-math", "finite-math-only", "unsafe-math-optimizations",
    "no-signed-zeros",   "mad-enable",
};

/* Does an OpenCL 3.0 device list OpenCL C 3.0 among its versions? (OpenCL
 * 3.0 devices may keep reporting "OpenCL C 1.2" as CL_DEVICE_OPENCL_C_VERSION
 * for older applications.) */
static int supports_c30(const clg_context *ctx)
{
    int major, minor;
    clg__parse_cl_version(ctx->info.device_version, "OpenCL ", &major, &minor);
    if (major < 3)
        return 0;
    size_t n = 0;
    if (clGetDeviceInfo(ctx->device, CLG_DEVICE_OPENCL_C_ALL_VERSIONS, 0, NULL, &n) != CL_SUCCESS ||
        n < sizeof(clg_name_version))
        return 0;
    clg_name_version *v = malloc(n);
    int found = 0;
    if (v &&
        clGetDeviceInfo(ctx->device, CLG_DEVICE_OPENCL_C_ALL_VERSIONS, n, v, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < n / sizeof *v; i++)
            if (CLG_VERSION_MAJOR(v[i].version) == 3 && CLG_VERSION_MINOR(v[i].version) == 0)
                found = 1;
    free(v);
    return found;
}

/* "-cl-std=CLX.Y" for the device, or "" for an OpenCL C 1.0 device. */
static const char *std_option(const clg_context *ctx)
{
    if (ctx->opencl_c_major >= 3 || supports_c30(ctx))
        return "-cl-std=CL3.0";
    if (ctx->opencl_c_major == 2)
        return "-cl-std=CL2.0";
    if (ctx->opencl_c_major == 1 && ctx->opencl_c_minor >= 2)
        return "-cl-std=CL1.2";
    if (ctx->opencl_c_major == 1 && ctx->opencl_c_minor == 1)
        return "-cl-std=CL1.1";
    return "";
}

/* Appends the build log to a failure message (the start of the log, where
 * the first error is, survives truncation). */
static clg_status build_failed(clg_context *ctx, cl_program prog, cl_int err, const char *name,
                               const char *options)
{
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
        n > 0 && (log = malloc(n + 1)) != NULL) {
        if (clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, n, log, NULL) !=
            CL_SUCCESS)
            n = 0;
        log[n] = '\0';
    }
    const char *ename = clg__cl_error_name(err);
    clg_status st = clg__fail(ctx, CLG_ERR_BUILD,
                              "clg__program(\"%s\"): clBuildProgram failed: %s (%d) with options "
                              "\"%s\"; build log:\n%s",
                              name, ename ? ename : "unknown OpenCL error", (int)err, options,
                              log && log[0] ? log : "(empty)");
    free(log);
    return st;
}

static bool identifier_char(char c) { return c == '_' || isalnum((unsigned char)c); }

/* Whether name occurs in the source as a whole identifier, followed
 * (after blanks) by the identifier then when then is not NULL. The chunks
 * are cut at line ends (tools/embed-cl.py), so no identifier spans two. */
static bool find_identifier(const char *const *parts, size_t nparts, const char *name,
                            const char *then)
{
    size_t n = strlen(name);
    for (size_t i = 0; n > 0 && i < nparts; i++)
        for (const char *p = strstr(parts[i], name); p; p = strstr(p + 1, name)) {
            if ((p > parts[i] && identifier_char(p[-1])) || identifier_char(p[n]))
                continue;
            const char *next = p + n + strspn(p + n, " \t\r\n");
            if (!then || (strncmp(next, then, strlen(then)) == 0 &&
                          !identifier_char(next[strlen(then)])))
                return true;
        }
    return false;
}

/* A program built from a cached binary is the one the source makes, as far
 * as can be told without compiling: every kernel it has is named in the
 * source and can be created, and it has kernels if the source declares
 * any. The digest only says that the entry is whole: anyone can recompute
 * it, e.g. over another program's binary stored under this key. On a
 * mismatch, why says what was wrong. */
static bool cached_program_fits(cl_program prog, const char *const *parts, size_t nparts,
                                char *why, size_t whylen)
{
    size_t n_kernels = 0, len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof n_kernels, &n_kernels, NULL) !=
            CL_SUCCESS ||
        (n_kernels > 0 &&
         clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len) != CL_SUCCESS)) {
        snprintf(why, whylen, "does not list its kernels");
        return false;
    }
    if (n_kernels == 0) {
        snprintf(why, whylen, "has no kernel, but its source declares some");
        return !find_identifier(parts, nparts, "kernel", "void") &&
               !find_identifier(parts, nparts, "__kernel", "void");
    }
    char *names = malloc(len + 1);
    if (!names || clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, len, names, NULL) != CL_SUCCESS) {
        free(names);
        snprintf(why, whylen, "does not list its kernels");
        return false;
    }
    names[len] = '\0';
    bool fits = true;
    for (char *k = names; fits && *k; k += strcspn(k, ";"), k += *k == ';') {
        size_t n = strcspn(k, ";");
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), k);
        cl_int err = CL_SUCCESS;
        cl_kernel kernel = NULL;
        if (n >= sizeof name || !find_identifier(parts, nparts, name, NULL)) {
            snprintf(why, whylen, "has kernel '%.64s', which its source does not name", name);
            fits = false;
        } else if ((kernel = clCreateKernel(prog, name, &err)) == NULL || err != CL_SUCCESS) {
            const char *ename = clg__cl_error_name(err);
            snprintf(why, whylen, "has kernel '%.64s', which the driver cannot create (%s)", name,
                     ename ? ename : "unknown OpenCL error");
            fits = false;
        }
        if (kernel)
            clReleaseKernel(kernel);
    }
    free(names);
    return fits;
}

/* Tries the disk cache; returns the built program, or NULL on a miss and on
 * an entry that cannot be used, which *unusable then describes. The driver
 * sees only a binary that passed clg__cache_load's integrity and key
 * checks: a damaged one must never reach clCreateProgramWithBinary, where
 * some drivers (Mesa's rusticl) abort instead of returning an error. */
static cl_program load_cached(clg_context *ctx, const uint8_t key[CLG_CACHE_KEY_SIZE],
                              const char *options, const char *const *parts, size_t nparts,
                              char *unusable, size_t len)
{
    unusable[0] = '\0';
    unsigned char *bin = NULL;
    size_t size = 0;
    clg_cache_result found = clg__cache_load(key, &bin, &size);
    if (found == CLG_CACHE_REJECTED)
        snprintf(unusable, len, "is damaged, truncated or not written for this program");
    if (found != CLG_CACHE_HIT)
        return NULL;
    cl_int err, bin_status = CL_SUCCESS;
    const unsigned char *b = bin;
    cl_program prog =
        clCreateProgramWithBinary(ctx->cl, 1, &ctx->device, &size, &b, &bin_status, &err);
    free(bin);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        if (err == CL_SUCCESS)
            clReleaseProgram(prog);
        snprintf(unusable, len, "holds a binary the driver does not take");
        return NULL;
    }
    if (clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL) != CL_SUCCESS) {
        clReleaseProgram(prog); /* stale or foreign binary: rebuild from source */
        snprintf(unusable, len, "holds a binary the driver does not build");
        return NULL;
    }
    char why[160];
    if (!cached_program_fits(prog, parts, nparts, why, sizeof why)) {
        clReleaseProgram(prog);
        snprintf(unusable, len, "holds another program: its binary %s", why);
        return NULL;
    }
    return prog;
}

/* Records, once per program and context, that a cache entry could not be
 * used and what became of it (clg_context_cache_repairs). */
static void note_repair(clg_context *ctx, const char *name, bool caller_source,
                        const char *unusable, bool rewritten)
{
    char what[96];
    if (caller_source)
        snprintf(what, sizeof what, "program \"%.64s\"", name);
    else
        snprintf(what, sizeof what, "cl/%.64s.cl", name);
    mtx_lock(&ctx->lock);
    ctx->cache_repairs++;
    snprintf(ctx->cache_note, sizeof ctx->cache_note,
             "kernel cache: the entry of %s %s; rebuilt from source%s", what, unusable,
             rewritten ? " and the entry rewritten" : " (the entry could not be rewritten)");
    mtx_unlock(&ctx->lock);
}

/* Saves the freshly built binary; any failure only costs a rebuild later.
 * True when the entry was written. */
static bool store_cached(cl_program prog, const uint8_t key[CLG_CACHE_KEY_SIZE])
{
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return false;
    unsigned char *bin = malloc(size);
    if (!bin)
        return false;
    bool stored = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) ==
                      CL_SUCCESS &&
                  clg__cache_store(key, bin, size);
    free(bin);
    return stored;
}

/* Builds common.cl followed by own (NULL: nothing) with the options, from
 * the disk cache when it holds a usable entry. */
static clg_status build(clg_context *ctx, const char *name, const char *const *own,
                        bool caller_source, const char *user_options, cl_program *out,
                        int *from_cache)
{
    const char *const *common = clg__kernel_source("common");
    if (!common)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg__program: no kernel file cl/common.cl is embedded in clgrad");

    size_t nparts = 0;
    for (const char *const *c = common; *c; c++)
        nparts++;
    for (const char *const *c = own; c && *c; c++)
        nparts++;
    /* A program of empty files still needs one (empty) string. */
    const char **parts = malloc((nparts + 1) * sizeof *parts);
    if (!parts)
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg__program: out of host memory");
    size_t k = 0;
    for (const char *const *c = common; *c; c++)
        parts[k++] = *c;
    for (const char *const *c = own; c && *c; c++)
        parts[k++] = *c;
    if (k == 0)
        parts[k++] = "";

    const char *std = std_option(ctx);
    size_t olen = strlen(std) + strlen(user_options) + 2;
    char *options = malloc(olen);
    if (!options) {
        free(parts);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg__program: out of host memory");
    }
    snprintf(options, olen, "%s%s%s", std, *std && *user_options ? " " : "", user_options);

    uint8_t key[CLG_CACHE_KEY_SIZE];
    clg__cache_key(ctx, parts, k, options, key);
    clg_status st = CLG_SUCCESS;
    char unusable[256];
    cl_program prog = load_cached(ctx, key, options, parts, k, unusable, sizeof unusable);
    if (prog) {
        *from_cache = 1;
    } else {
        *from_cache = 0;
        cl_int err;
        prog = clCreateProgramWithSource(ctx->cl, (cl_uint)k, parts, NULL, &err);
        if (err != CL_SUCCESS) {
            st = clg__cl_fail(ctx, err, "clg__program", "clCreateProgramWithSource");
            prog = NULL;
        } else {
            err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
            if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ||
                err == CL_COMPILER_NOT_AVAILABLE) {
                st = build_failed(ctx, prog, err, name, options);
            } else if (err != CL_SUCCESS) {
                st = clg__cl_fail(ctx, err, "clg__program", "clBuildProgram");
            } else {
                bool rewritten = store_cached(prog, key);
                if (unusable[0])
                    note_repair(ctx, name, caller_source, unusable, rewritten);
            }
            if (st != CLG_SUCCESS) {
                clReleaseProgram(prog);
                prog = NULL;
            }
        }
    }
    free(options);
    free(parts);
    *out = prog;
    return st;
}

/* The checks both entry points make; *options becomes "" for NULL. */
static clg_status check_request(clg_context *ctx, const char *who, const char *name,
                                const char **options, cl_program *program, int *from_cache)
{
    if (from_cache)
        *from_cache = 0;
    if (!ctx || !name || !program)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         !ctx    ? "ctx"
                         : !name ? "name"
                                 : "program");
    *program = NULL;
    if (!*options)
        *options = "";
    for (size_t i = 0; i < sizeof forbidden_options / sizeof forbidden_options[0]; i++)
        if (strstr(*options, forbidden_options[i]))
            return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                             "%s(\"%s\"): option -cl-%s is not allowed (it breaks "
                             "the inf/NaN checks and IEEE results)",
                             who, name, forbidden_options[i]);
    return CLG_SUCCESS;
}

/* The context's program of name, options and source own (NULL: common.cl
 * alone), built on first use; digest is NULL for clgrad's own cl/<name>.cl,
 * else the SHA-256 of the caller's chunks own. */
static clg_status context_program(clg_context *ctx, const char *name, const char *const *own,
                                  const uint8_t *digest, const char *options,
                                  cl_program *program, int *from_cache)
{
    /* The lock is held during a build so that two threads never compile the
     * same program twice; it is recursive, so clg__fail inside is fine. */
    mtx_lock(&ctx->lock);
    for (clg_program_entry *e = ctx->programs; e; e = e->next)
        if (strcmp(e->name, name) == 0 && strcmp(e->options, options) == 0 &&
            e->caller_source == (digest != NULL) &&
            (!digest || memcmp(e->source_digest, digest, sizeof e->source_digest) == 0)) {
            *program = e->program;
            mtx_unlock(&ctx->lock);
            return CLG_SUCCESS; /* already in memory: not loaded from disk now */
        }

    clg_program_entry *e = calloc(1, sizeof *e);
    char *n = strdup(name), *o = strdup(options);
    if (!e || !n || !o) {
        free(e);
        free(n);
        free(o);
        mtx_unlock(&ctx->lock);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg__program: out of host memory");
    }
    cl_program prog = NULL;
    int cached = 0;
    clg_status st = build(ctx, name, own, digest != NULL, options, &prog, &cached);
    if (st != CLG_SUCCESS) {
        free(e);
        free(n);
        free(o);
        mtx_unlock(&ctx->lock);
        return st;
    }
    e->name = n;
    e->options = o;
    e->caller_source = digest != NULL;
    if (digest)
        memcpy(e->source_digest, digest, sizeof e->source_digest);
    e->program = prog;
    e->next = ctx->programs;
    ctx->programs = e;
    mtx_unlock(&ctx->lock);
    *program = prog;
    if (from_cache)
        *from_cache = cached;
    return CLG_SUCCESS;
}

clg_status clg__program(clg_context *ctx, const char *name, const char *options,
                        cl_program *program, int *from_cache)
{
    clg_status st = check_request(ctx, "clg__program", name, &options, program, from_cache);
    if (st != CLG_SUCCESS)
        return st;
    const char *const *own = strcmp(name, "common") == 0 ? NULL : clg__kernel_source(name);
    if (!own && strcmp(name, "common") != 0)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg__program: no kernel file cl/%s.cl is embedded in clgrad (a "
                         "tool builds its own kernels with clg_context_program_source)",
                         name);
    return context_program(ctx, name, own, NULL, options, program, from_cache);
}

clg_status clg__program_source(clg_context *ctx, const char *name, const char *const *chunks,
                               const char *options, cl_program *program, int *from_cache)
{
    const char *who = "clg__program_source";
    clg_status st = check_request(ctx, who, name, &options, program, from_cache);
    if (st != CLG_SUCCESS)
        return st;
    if (!chunks || !name[0])
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s", who,
                         !chunks ? "chunks is NULL" : "name is empty");
    uint8_t digest[32];
    clg_sha256 sha;
    clg__sha256_init(&sha);
    for (const char *const *c = chunks; *c; c++)
        clg__sha256_update(&sha, *c, strlen(*c));
    clg__sha256_final(&sha, digest);
    return context_program(ctx, name, chunks, digest, options, program, from_cache);
}

clg_status clg__kernel(clg_context *ctx, cl_program program, const char *kernel_name,
                       cl_kernel *kernel)
{
    if (!ctx || !program || !kernel_name || !kernel)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "clg__kernel: %s is NULL",
                         !ctx           ? "ctx"
                         : !program     ? "program"
                         : !kernel_name ? "name"
                                        : "kernel");
    cl_int err;
    *kernel = clCreateKernel(program, kernel_name, &err);
    if (err != CL_SUCCESS) {
        *kernel = NULL;
        char what[160];
        snprintf(what, sizeof what, "clg__kernel(\"%s\")", kernel_name);
        return clg__cl_fail(ctx, err, what, "clCreateKernel");
    }
    return CLG_SUCCESS;
}
