/* testutil.h - helpers shared by clgrad's tests: a device context that skips
 * (exit 77) only when no OpenCL platform exists at all, seeded random data,
 * and scratch directories. */
#ifndef CLGRAD_TESTUTIL_H
#define CLGRAD_TESTUTIL_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

/* Exit code that makes `meson test` report SKIP. */
#define TU_SKIP 77

/* True if at least one OpenCL platform exists. */
int tu_have_platform(void);

/* A context on the default device (CLGRAD_DEVICE or the first GPU, else the
 * first device). No OpenCL platform at all: prints a loud reason to stderr
 * and exits 77. Any other failure: prints clg_last_error and aborts, because
 * with a platform present every device test must run. */
clg_context *tu_context_or_skip(void);

/* Exits 77 with a loud message if there is no OpenCL platform; for tests
 * that create their own contexts. */
void tu_require_platform(void);

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

/* Creates a fresh directory under $TMPDIR (or /tmp) named after prefix and
 * returns its malloc'ed path; aborts on failure. tu_rmdir_tree removes it. */
char *tu_mkdtemp(const char *prefix);
void tu_rmdir_tree(const char *path);

/* malloc that aborts on failure (tests only). */
void *tu_xmalloc(size_t n);

#endif /* CLGRAD_TESTUTIL_H */
