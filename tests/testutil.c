/* testutil.c - helpers shared by clgrad's tests (see testutil.h). */
#define _GNU_SOURCE
#include "testutil.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tu_have_platform(void)
{
    cl_uint n = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &n);
    return err == CL_SUCCESS && n > 0;
}

int tu_device_required(void)
{
    const char *v = getenv("CLGRAD_REQUIRE_DEVICE");
    return v && *v && strcmp(v, "0") != 0;
}

void tu_require_platform(void)
{
    if (tu_have_platform())
        return;
    /* CI and `make test` set CLGRAD_REQUIRE_DEVICE=1: there a missing driver
     * is a broken setup, and a SKIP would let every device test pass
     * unseen. */
    if (tu_device_required()) {
        fprintf(stderr,
                "\n*** FAIL: no OpenCL platform found (clGetPlatformIDs returned none),\n"
                "*** and CLGRAD_REQUIRE_DEVICE=%s forbids skipping device tests.\n"
                "*** Install an OpenCL driver, e.g. pocl-opencl-icd, or check OCL_ICD_VENDORS.\n\n",
                getenv("CLGRAD_REQUIRE_DEVICE"));
        exit(TU_NO_DEVICE_FAILURE);
    }
    fprintf(stderr, "\n*** SKIP: no OpenCL platform found (clGetPlatformIDs returned none).\n"
                    "*** Install an OpenCL driver, e.g. pocl-opencl-icd, to run device tests\n"
                    "*** (CLGRAD_REQUIRE_DEVICE=1 turns this skip into a failure).\n\n");
    exit(TU_SKIP);
}

clg_context *tu_context_or_skip(void)
{
    tu_require_platform();
    clg_context *ctx = NULL;
    clg_status st = clg_context_create(&ctx, NULL);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "tu_context_or_skip: clg_context_create failed: %s: %s\n",
                clg_status_string(st), clg_last_error(NULL));
        abort();
    }
    return ctx;
}

clg_context *tu_ctx;
char *tu_tmpdir;

int tu_group_setup(void **state)
{
    (void)state;
    tu_ctx = tu_context_or_skip();
    return 0;
}

int tu_group_setup_tmpdir(void **state)
{
    tu_group_setup(state);
    tu_tmpdir = tu_mkdtemp(program_invocation_short_name);
    return 0;
}

int tu_group_teardown(void **state)
{
    (void)state;
    if (tu_tmpdir) {
        tu_rmdir_tree(tu_tmpdir);
        free(tu_tmpdir);
        tu_tmpdir = NULL;
    }
    clg_context_destroy(tu_ctx);
    tu_ctx = NULL;
    return 0;
}

clg_context *tu_context_with_max_alloc(const char *bytes)
{
    const char *old = getenv("CLGRAD_MAX_ALLOC");
    char *saved = old ? strdup(old) : NULL;
    setenv("CLGRAD_MAX_ALLOC", bytes, 1);
    clg_context *ctx = tu_context_or_skip();
    if (saved) {
        setenv("CLGRAD_MAX_ALLOC", saved, 1);
        free(saved);
    } else {
        unsetenv("CLGRAD_MAX_ALLOC");
    }
    return ctx;
}

int tu_run_group_max_alloc(const char *name, const struct CMUnitTest *tests, size_t n,
                           int (*setup)(void **), const char *max_alloc)
{
    /* before tu_ctx exists: the context reads it once */
    setenv("CLGRAD_MAX_ALLOC", max_alloc, 1);
    return _cmocka_run_group_tests(name, tests, n, setup, tu_group_teardown);
}

void tu_check_ok(clg_status st, const char *what, const char *file, int line)
{
    if (st != CLG_SUCCESS)
        fail_msg("%s:%d: %s -> %s: %s", file, line, what, clg_status_string(st),
                 clg_last_error(tu_ctx));
}

tu_rng tu_rng_seed(uint64_t seed)
{
    tu_rng r = {seed ^ 0x9E3779B97F4A7C15ull};
    return r;
}

uint64_t tu_rng_u64(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tu_rng_float(tu_rng *r)
{
    return (float)(tu_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float tu_rng_uniform(tu_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * tu_rng_float(r);
}

double tu_rng_normal(tu_rng *r)
{
    /* 53-bit uniforms in (0, 1] keep log() finite */
    double u1 = ((double)(tu_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(tu_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void tu_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    tu_rng r = tu_rng_seed(seed);
    for (size_t i = 0; i < n; i++)
        x[i] = tu_rng_uniform(&r, lo, hi);
}

void tu_fill_normal(float *x, size_t n, uint64_t seed, float stddev)
{
    tu_rng r = tu_rng_seed(seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(tu_rng_normal(&r) * stddev);
}

clg_config tu_config(clg_optimizer opt, float lr, unsigned accum_steps)
{
    clg_config c = clg_config_init(opt);
    c.lr = lr;
    c.accum_steps = accum_steps;
    return c;
}

clg_config tu_adamw_config(unsigned k, int with_stats)
{
    clg_config c = tu_config(CLG_ADAMW, 1e-2f, k);
    c.weight_decay = 0.01f;
    if (with_stats) {
        c.clip_norm = 0.5f;
        c.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
        c.loss_scale_init = 1024.0f;
    }
    return c;
}

void tu_upload_uniform_params(clg_model *m, uint64_t seed)
{
    size_t n = clg_model_param_count(m);
    float *p = tu_xmalloc(n * sizeof *p);
    tu_fill_uniform(p, n, seed, -1.0f, 1.0f);
    OK(clg_model_upload_params(m, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL));
    free(p);
}

clg_model *tu_grouped_model(const clg_config *cfg, size_t n, const size_t *counts,
                            const int *in_group1)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, cfg, &m));
    int g1, t;
    OK(clg_model_add_group(m, "no_decay", 0.5f, 0.0f, &g1));
    assert_int_equal(g1, 1);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        OK(clg_model_add_tensor(m, name, counts[i], in_group1[i] ? g1 : 0, &t));
    }
    return m;
}

void tu_write_acc(clg_model *m, const void *host, size_t elem_bytes)
{
    size_t off = 0; /* bytes */
    for (size_t t = 0; t < clg_model_tensor_count(m); t++) {
        clg_view v;
        OK(clg_model_acc_view(m, (int)t, &v));
        assert_int_equal(clEnqueueWriteBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE,
                                              v.offset * elem_bytes, v.count * elem_bytes,
                                              (const char *)host + off, 0, NULL, NULL),
                         CL_SUCCESS);
        off += v.count * elem_bytes;
    }
}

cl_mem tu_buffer_from(const void *host, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(tu_ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, (void *)host, &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

void tu_buffer_read(cl_mem mem, size_t offset_bytes, void *host, size_t bytes)
{
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), mem, CL_TRUE, offset_bytes,
                                         bytes, host, 0, NULL, NULL),
                     CL_SUCCESS);
}

clg_contrastive_config tu_contrastive_config(size_t batch, size_t dim, size_t bank,
                                             clg_dtype dtype)
{
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = batch;
    cfg.dim = dim;
    cfg.bank_size = bank;
    cfg.dtype = dtype;
    return cfg;
}

clg_contrastive *tu_contrastive_create(const clg_contrastive_config *cfg)
{
    clg_contrastive *c = NULL;
    OK(clg_contrastive_create(tu_ctx, cfg, &c));
    return c;
}

void *tu_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "tu_xmalloc: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

char *tu_mkdtemp(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    size_t n = strlen(tmp) + strlen(prefix) + 16;
    char *path = tu_xmalloc(n);
    snprintf(path, n, "%s/%s-XXXXXX", tmp, prefix);
    if (!mkdtemp(path)) {
        perror("tu_mkdtemp: mkdtemp");
        abort();
    }
    return path;
}

void tu_rmdir_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *child = tu_xmalloc(n);
            snprintf(child, n, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                tu_rmdir_tree(child);
            else
                unlink(child);
            free(child);
        }
        closedir(d);
    }
    rmdir(path);
}

char *tu_tmp_path(const char *name)
{
    size_t len = strlen(tu_tmpdir) + strlen(name) + 2;
    char *p = tu_xmalloc(len);
    snprintf(p, len, "%s/%s", tu_tmpdir, name);
    return p;
}

uint8_t *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = tu_xmalloc((size_t)len + 1);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = 0;
    *n = (size_t)len;
    return buf;
}

void tu_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot create %s: %s", path, strerror(errno));
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}
