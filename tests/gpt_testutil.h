/* gpt_testutil.h - what the GPT kernel tests share: the kernels built on
 * tu_ctx, device views with guard elements on both sides (a launcher
 * that writes outside its view is caught), token windows, and comparison
 * against the double reference with stated tolerances. */
#ifndef CLGRAD_GPT_TESTUTIL_H
#define CLGRAD_GPT_TESTUTIL_H

#include "gpt_kernels.h"

#include <stddef.h>
#include <stdint.h>

extern gpt_kernels gk;

/* CMocka group fixtures: tu_ctx and gk. */
int gt_setup(void **state);
int gt_teardown(void **state);

/* A view of n floats at element offset off in a buffer of off + n + 5
 * floats; the guards hold GT_GUARD, the view host's values (NULL: NaN, so
 * that a kernel that must not read it shows). */
#define GT_GUARD 12345.0f
clg_view gt_view(const float *host, size_t n, size_t off);
/* Reads the view into host and checks that the guards are intact. */
void gt_read(clg_view v, float *host);
void gt_free(clg_view v);
/* A buffer of n ints or floats for scratch (never read back). */
cl_mem gt_scratch(size_t bytes);

/* Token windows: B sequences through a shuffled idx at an offset, with a
 * skewed byte distribution (a few frequent bytes, most never seen).
 * tok, target: the reference's view (ref_gpt_tokens). */
typedef struct gt_tokens {
    gpt_tokens t;
    int *tok, *target;
} gt_tokens;
gt_tokens gt_make_tokens(unsigned B, unsigned T, uint64_t seed);
void gt_free_tokens(gt_tokens *t);

/* Host arrays (freed by the caller). */
float *gt_uniform(size_t n, uint64_t seed, float lo, float hi);
double *gt_doubles(size_t n);

/* |got - ref| <= abs_tol + rel_tol * |ref| everywhere (NaN fails). */
void gt_close(const float *got, const double *ref, size_t n, double abs_tol, double rel_tol,
              const char *what);
/* ref = beta * old + sum (beta 0: sum alone), in place in sum. */
void gt_apply_beta(double *sum, const float *old, size_t n, float beta);

#endif /* CLGRAD_GPT_TESTUTIL_H */
