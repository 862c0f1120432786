/* twin.h - runs a clgrad model and the double reference side by side (the
 * "twins"): same layout, same initial params, same gradients, and checks
 * that the device's params and states agree with the reference. Used by
 * the device tests of the core and of the numerical-safety features. */
#ifndef CLGRAD_TEST_TWIN_H
#define CLGRAD_TEST_TWIN_H

#include "reference.h"

#include <stddef.h>
#include <stdint.h>

typedef struct twin_layout {
    size_t n_groups;      /* including group 0 */
    const float *lr_mult; /* per group; [0] must be 1 (clgrad's group 0) */
    const float *wd;      /* per group; < 0: the config's; [0] must be < 0 */
    size_t n_tensors;
    const size_t *counts;
    const int *groups;
} twin_layout;

/* Two groups ("decay": lr_mult 1, config wd; "no_decay": lr_mult 0.5, wd 0)
 * and tensors of 1009 (prime), 1, 37, 24, 16 and 3 elements: a prime
 * count, a single element, counts not divisible by 4/8/16. */
extern const twin_layout twin_default_layout;

/* The layout of the array counts (at most TWIN_ONE_GROUP_MAX tensors): one
 * group (group 0: lr_mult 1, the config's wd) holding every tensor. A
 * constant initializer, for a layout at file scope too. */
#define TWIN_ONE_GROUP_MAX 8
#define TWIN_ONE_GROUP(counts)                                                                     \
    {                                                                                              \
        1, twin_one_group_lr_mult, twin_one_group_wd, sizeof(counts) / sizeof((counts)[0]),        \
            (counts), twin_one_group_groups                                                        \
    }
extern const float twin_one_group_lr_mult[1];
extern const float twin_one_group_wd[1];
extern const int twin_one_group_groups[TWIN_ONE_GROUP_MAX];

typedef struct twin {
    clg_context *ctx;
    clg_model *model;
    clg_grads *grads; /* fp32 external gradients */
    ref_model ref;
    size_t n;      /* parameters */
    float *host;   /* scratch, n floats */
    uint64_t seed; /* for twin_gradient */
} twin;

/* Builds the device model (and its fp32 grads) and the reference, uploads
 * random initial params (uniform in [-1, 1) from seed). Fails the test on
 * any error. */
void twin_init(twin *tw, clg_context *ctx, const clg_config *cfg, const twin_layout *lay,
               uint64_t seed);
void twin_free(twin *tw);

/* A gradient for micro-step `micro` of cycle `cycle`: per element a base
 * of fixed magnitude 0.5..1 and a sign drawn per cycle (so that a cycle's
 * sum never cancels to ~0 and relative fp32 errors stay relative) plus
 * uniform noise in [-0.5, 0.5). */
void twin_gradient(const twin *tw, uint64_t cycle, unsigned micro, float *g);

/* One micro-step on both twins with fp32 grads g and weight w (path A/C).
 * Asserts that both agree on whether an update happened; returns it. */
int twin_micro(twin *tw, const float *g, float w);

/* The same on path B: writes w*g into the accumulator views, honoring
 * clg_accum_beta (0: overwrite; 1: add, done on the host: read, add,
 * write), then clg_step(model, NULL, w). */
int twin_micro_b(twin *tw, const float *g, float w);

/* Cycle `cycle` of k micro-steps on path A/C: twin_gradient(cycle, m)
 * with weight 1 + dw * m. */
void twin_cycle(twin *tw, uint64_t cycle, unsigned k, float dw);
/* Downloads params and every state and compares with the reference within
 * rtol/atol; fails the test (after printing the offenders) otherwise. */
void twin_check(twin *tw, double rtol, double atol, const char *what);

/* Snapshots params and states (malloc'ed, the caller frees) and compares a
 * snapshot bitwise with the device's current content. */
float *twin_snapshot(twin *tw);
void twin_assert_unchanged(twin *tw, const float *snapshot, const char *what);

/* Blocking statistics, failing the test on error. */
clg_stats twin_stats(twin *tw);

#endif /* CLGRAD_TEST_TWIN_H */
