/* testutil.h - helpers shared by clgrad's tests: a device context that skips
 * (exit 77) only when no OpenCL platform exists at all and
 * CLGRAD_REQUIRE_DEVICE is not set, the CMocka group
 * fixtures that hold one for a whole test program, seeded random data,
 * scratch directories and whole-file reads and writes. */
#ifndef CLGRAD_TESTUTIL_H
#define CLGRAD_TESTUTIL_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

/* Exit code that makes `meson test` report SKIP. */
#define TU_SKIP 77
/* Exit code of a device test that finds no OpenCL platform while
 * CLGRAD_REQUIRE_DEVICE is set: any failure but 77. */
#define TU_NO_DEVICE_FAILURE 1

/* True if at least one OpenCL platform exists. */
int tu_have_platform(void);

/* True if CLGRAD_REQUIRE_DEVICE is set to anything but "" or "0" (CI and
 * `make test` set it to 1): then no device test may skip. */
int tu_device_required(void);

/* A context on the default device (CLGRAD_DEVICE or the first GPU, else the
 * first device). No OpenCL platform at all: prints a loud reason to stderr
 * and exits 77, or 1 under CLGRAD_REQUIRE_DEVICE. Any other failure: prints
 * clg_last_error and aborts, because with a platform present every device
 * test must run. */
clg_context *tu_context_or_skip(void);

/* Exits as tu_context_or_skip does if there is no OpenCL platform; for tests
 * that create their own contexts. */
void tu_require_platform(void);

/* CMocka group fixtures: tu_group_setup creates tu_ctx (tu_context_or_skip),
 * tu_group_setup_tmpdir also a fresh scratch directory tu_tmpdir (named
 * after the program, under $TMPDIR or /tmp), and
 * tu_group_teardown removes whichever of the two exists. A test program
 * whose setup does more wraps them. */
extern clg_context *tu_ctx;
extern char *tu_tmpdir;
int tu_group_setup(void **state);
int tu_group_setup_tmpdir(void **state);
int tu_group_teardown(void **state);

/* A context made as tu_context_or_skip makes one, with CLGRAD_MAX_ALLOC
 * set to bytes while it is created (a context reads it once, then) and
 * restored after: a context whose arenas split into chunks of that size,
 * beside tu_ctx's. */
clg_context *tu_context_with_max_alloc(const char *bytes);

/* The run of a test program's group `tests` between setup (tu_group_setup
 * or tu_group_setup_tmpdir) and tu_group_teardown with CLGRAD_MAX_ALLOC
 * set to max_alloc for the whole program, so that tu_ctx's arenas split
 * into chunks of that size; returns cmocka's exit code. */
struct CMUnitTest;
#define TU_RUN_GROUP_MAX_ALLOC(name, tests, setup, max_alloc)                                       \
    tu_run_group_max_alloc((name), (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (max_alloc))
int tu_run_group_max_alloc(const char *name, const struct CMUnitTest *tests, size_t n,
                           int (*setup)(void **), const char *max_alloc);

/* The main() of a test program, written once: runs the tests listed
 * after teardown (cmocka_unit_test(...) entries) as the CMocka group name
 * between the group fixtures setup and teardown (NULL: none); the
 * program's exit code is cmocka's. */
#define TU_MAIN(name, setup, teardown, ...)                                                        \
    int main(void)                                                                                 \
    {                                                                                              \
        const struct CMUnitTest tu_tests[] = {__VA_ARGS__};                                        \
        return cmocka_run_group_tests_name(name, tu_tests, setup, teardown);                      \
    }

/* OK(call): fails the test unless call returned CLG_SUCCESS, naming the
 * call, its file and line, the status and tu_ctx's last error (the
 * thread's when tu_ctx is NULL). */
#define OK(call) tu_check_ok((call), #call, __FILE__, __LINE__)
void tu_check_ok(clg_status st, const char *what, const char *file, int line);

/* Deterministic random numbers (splitmix64), independent of libc's rand. */
typedef struct tu_rng {
    uint64_t s;
} tu_rng;
tu_rng tu_rng_seed(uint64_t seed);
uint64_t tu_rng_u64(tu_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float tu_rng_float(tu_rng *r);
/* Uniform in [lo, hi). */
float tu_rng_uniform(tu_rng *r, float lo, float hi);
/* Standard normal (Box-Muller). */
double tu_rng_normal(tu_rng *r);

/* Fills x[0..n) with uniform values in [lo, hi) from seed. */
void tu_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi);
/* Fills x[0..n) with normal values of given standard deviation from seed. */
void tu_fill_normal(float *x, size_t n, uint64_t seed, float stddev);

/* clg_config_init(opt) with lr and accum_steps set. */
clg_config tu_config(clg_optimizer opt, float lr, unsigned accum_steps);

/* AdamW with lr 1e-2, weight decay 0.01 and k micro-steps a cycle; with_stats:
 * also clipping at norm 0.5 and dynamic loss scaling from 1024, so that the
 * end of each cycle needs the gradient's norm. */
clg_config tu_adamw_config(unsigned k, int with_stats);

/* Uploads params uniform in [-1, 1) from seed (tu_fill_uniform) to every
 * tensor of the finalized model m; fails the test on error. */
void tu_upload_uniform_params(clg_model *m, uint64_t seed);

/* A model of cfg on tu_ctx, not finalized, with param group 1 "no_decay"
 * (lr_mult 0.5, weight decay 0) and n tensors "t<i>" of counts[i]
 * elements, in group 1 where in_group1[i] is non-zero, else group 0. */
clg_model *tu_grouped_model(const clg_config *cfg, size_t n, const size_t *counts,
                            const int *in_group1);

/* Writes host (clg_model_param_count elements of elem_bytes: 4 for an fp32
 * accumulator, 2 for bf16 bits, in tensor order) into every tensor's
 * accumulator view, as a backward on path B would; blocking. */
void tu_write_acc(clg_model *m, const void *host, size_t elem_bytes);

/* A device buffer of tu_ctx holding a copy of bytes from host; and a
 * blocking read of bytes from offset_bytes of mem. Fail the test on error. */
cl_mem tu_buffer_from(const void *host, size_t bytes);
void tu_buffer_read(cl_mem mem, size_t offset_bytes, void *host, size_t bytes);

/* A contrastive config of batch x dim with bank rows of dtype, the rest
 * clg_contrastive_config_init's; and the object of a config on tu_ctx. */
clg_contrastive_config tu_contrastive_config(size_t batch, size_t dim, size_t bank,
                                             clg_dtype dtype);
clg_contrastive *tu_contrastive_create(const clg_contrastive_config *cfg);

/* Creates a fresh directory under $TMPDIR (or /tmp) named after prefix and
 * returns its malloc'ed path; aborts on failure. tu_rmdir_tree removes it. */
char *tu_mkdtemp(const char *prefix);
void tu_rmdir_tree(const char *path);
/* "<tu_tmpdir>/<name>", malloc'ed. */
char *tu_tmp_path(const char *name);

/* The whole file at path, malloc'ed with a NUL after its *n bytes; fails
 * the test if it cannot be read. */
uint8_t *tu_read_file(const char *path, size_t *n);
/* Writes n bytes to path (created or truncated); fails the test on error. */
void tu_write_file(const char *path, const void *data, size_t n);

/* malloc that aborts on failure (tests only). */
void *tu_xmalloc(size_t n);

#endif /* CLGRAD_TESTUTIL_H */
