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

/* Runs the CMocka group three times, with gk built for 64 items per row
 * (a work-group per row), 4 and 1 (gpt_kernels_init_rows); the number of
 * failed tests. */
struct CMUnitTest;
int gt_run_both(const struct CMUnitTest *tests, size_t n);

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
 * skewed distribution (a few frequent tokens, 0 and V - 1 among them, most
 * never seen), gpt_token_bytes(V) bytes a token. tok, target: the
 * reference's view (ref_gpt_tokens). gt_make_tokens: the bytes (V 256). */
typedef struct gt_tokens {
    gpt_tokens t;
    int *tok, *target;
} gt_tokens;
gt_tokens gt_make_tokens(unsigned B, unsigned T, uint64_t seed);
gt_tokens gt_make_tokens_v(unsigned B, unsigned T, unsigned V, uint64_t seed);
void gt_free_tokens(gt_tokens *t);

/* gpt_embed on k (its vocabulary V) of B sequences of T tokens (seed's)
 * against ref_gpt_embed: wte, wpe and the output at odd offsets in
 * guards, within one rounding (rel 1e-7). */
void gt_check_embed(const gpt_kernels *k, unsigned B, unsigned T, unsigned C, uint64_t seed);

/* Host arrays (freed by the caller). */
float *gt_uniform(size_t n, uint64_t seed, float lo, float hi);
double *gt_doubles(size_t n);

/* The betas of the accumulating launchers' tests: 0 (over NaN: the old
 * value must not be read), 1 and 0.5. */
#define GT_N_BETAS 3
extern const float gt_betas[GT_N_BETAS];
/* The absolute tolerance of a float sum of n terms of size ~1 against the
 * exact one: 1e-6 + 2e-7 n. */
double gt_sum_tol(size_t terms);

/* |got - ref| <= abs_tol + rel_tol * |ref| everywhere (NaN fails). */
void gt_close(const float *got, const double *ref, size_t n, double abs_tol, double rel_tol,
              const char *what);
/* ref = beta * old + sum (beta 0: sum alone), in place in sum. */
void gt_apply_beta(double *sum, const float *old, size_t n, float beta);

#endif /* CLGRAD_GPT_TESTUTIL_H */
