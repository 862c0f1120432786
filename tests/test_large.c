/* test_large.c - reductions and updates at a real size: 4,198,896
 * parameters (> 2^22) in 8 tensors and 2 param groups, with
 * CLGRAD_MAX_ALLOC = 7 MiB so that the arenas split into 3 chunks, one of
 * them holding both groups. Against the double reference
 * (tests/reference.c), on paths A and B, k = 3, for 3 updates each:
 *
 *  - the global norm of the normalized gradient: relative 1e-5. It is a
 *    sum of 4.2M squares in fp32 through per-work-item partials, a
 *    work-group tree and the prologue's fixed-order sum of the partials of
 *    every chunk: about 30 roundings deep, 2e-6 relative on the sum at
 *    worst, 1e-6 on the norm; 1e-5 leaves a factor 10;
 *  - clipping with clip_norm at about a third of the norm: the coefficient
 *    relative 1e-5 (the norm's error), the clipped update in the params;
 *  - the update (AdamW, SGD with momentum 0.9): params and every state
 *    within PyTorch's fp32 tolerances (rtol 1.3e-6, atol 1e-5), as the
 *    small-model tests; the clip coefficient's relative error (<= 1e-6)
 *    stays below them (SGD: lr * coef * g, 1e-3 relative at most of p's
 *    change; Adam: m / sqrt(v) cancels it).
 *
 * A chunk boundary or a group's segment mishandled by a kernel (a partial
 * left out of the norm, a chunk not updated, the wrong group's lr or weight
 * decay) shows up here and not in the 1000-parameter tests, which fit in
 * one chunk. Run time on 2 CPU cores with PoCL: about 30 s. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 7 MiB: 1,833,984 floats per buffer at most. */
#define MAX_ALLOC "7340032"
#define NORM_RTOL 1e-5
/* Per-tensor norms: one work-group per tensor, each work-item summing up to
 * 1.2M / 256 = 4700 squares in sequence, then a tree: about 4700 / 4 + 8
 * roundings deep along one lane at worst (3.5e-5 relative on the sum,
 * 1.8e-5 on the norm); 5e-5. */
#define TENSOR_NORM_RTOL 5e-5

enum { K = 3, UPDATES = 3 };

static const float lr_mult[] = {1.0f, 0.5f};
static const float wd[] = {-1.0f, 0.0f};
/* a prime-ish mix: big tensors that fill chunks, a 17 and a 1 */
static const size_t counts[] = {1200007, 700001, 333333, 65537, 17, 900001, 1, 999999};
static const int groups[] = {0, 1, 0, 1, 1, 0, 1, 0};
static const twin_layout large_layout = {2, lr_mult, wd, 8, counts, groups};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The largest relative error seen of the global and per-tensor norms. */
static double worst_norm_err, worst_tensor_norm_err;

static void assert_rel(const char *what, double got, double want, double rtol)
{
    double e = fabs(got - want) / fabs(want);
    double *worst = rtol == NORM_RTOL ? &worst_norm_err : &worst_tensor_norm_err;
    if (e > *worst)
        *worst = e;
    if (!(fabs(got - want) <= rtol * fabs(want)))
        fail_msg("%s: got %.9g, reference %.12g (relative error %.3g, rtol %g)", what, got, want,
                 fabs(got - want) / fabs(want), rtol);
}

/* The layout is what the test is about: >= 2^22 parameters, >= 3 chunks,
 * a chunk with both groups. */
static void check_layout(const twin *tw)
{
    assert_true(tw->n >= (size_t)1 << 22);
    const clg_model *m = tw->model;
    if (m->n_chunks < 3)
        fail_msg("CLGRAD_MAX_ALLOC=%s: %zu chunk(s), want >= 3 (max alloc %llu)", MAX_ALLOC,
                 m->n_chunks, (unsigned long long)clg_context_max_alloc(tw->ctx));
    size_t mixed = 0;
    for (size_t c = 0; c < m->n_chunks; c++)
        mixed += m->chunk_segs[c] > 1;
    assert_true(mixed >= 1);
}

/* One run: UPDATES cycles of K micro-steps on path A (twin_micro, external
 * fp32 gradients, fuse_last_micro_step = 0) or B (twin_micro_b, w*g written
 * into the accumulator), with clip_norm = 0 (statistics off) or about a
 * third of the norm. Checks norm, clip coefficient, params and states after
 * every update. */
static void large_run(clg_optimizer opt, char path, int clip, int tensor_norms, uint64_t seed)
{
    char what[96];
    int path_b = path == 'B';
    snprintf(what, sizeof what, "%s path %c%s%s", opt == CLG_SGD ? "sgd momentum" : "adamw",
             path, clip ? " clip" : "", tensor_norms ? " tensor norms" : "");
    double t0 = now_s();
    clg_config cfg = clg_config_init(opt);
    cfg.accum_steps = K;
    cfg.fuse_last_micro_step = path == 'C';
    cfg.tensor_norms = tensor_norms;
    if (opt == CLG_SGD) {
        cfg.lr = 1e-3f;
        cfg.momentum = 0.9f;
        cfg.weight_decay = 1e-4f;
    } else {
        cfg.lr = 1e-3f;
    }
    /* twin_gradient: |g| about 0.75 per element, so the norm of the
     * weighted mean of K micro-steps is about 0.75 * sqrt(n) = 1540 */
    cfg.clip_norm = clip ? 500.0f : 0.0f;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &large_layout, seed);
    check_layout(&tw);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned u = 0; u < UPDATES; u++) {
        for (unsigned m = 0; m < K; m++) {
            twin_gradient(&tw, u, m, g);
            float w = 1.0f + 0.5f * (float)m;
            int updated = path_b ? twin_micro_b(&tw, g, w) : twin_micro(&tw, g, w);
            assert_int_equal(updated, m == K - 1);
        }
        char label[128];
        snprintf(label, sizeof label, "%s, update %u", what, u + 1);
        if (clip) {
            clg_stats s = twin_stats(&tw);
            assert_true(tw.ref.grad_norm > 1000.0);
            assert_true(tw.ref.clip_coef < 0.5);
            assert_rel(label, s.grad_norm, tw.ref.grad_norm, NORM_RTOL);
            assert_rel(label, s.clip_coef, tw.ref.clip_coef, NORM_RTOL);
            assert_int_equal(s.updates, u + 1);
        }
        if (tensor_norms) {
            float norms[8];
            OK(clg_model_tensor_norms(tw.model, norms, 8));
            for (int t = 0; t < 8; t++) {
                char tl[160];
                snprintf(tl, sizeof tl, "%s: norm of tensor %d (%zu elements)", label, t,
                         counts[t]);
                assert_rel(tl, norms[t], tw.ref.tensor_norm[t], TENSOR_NORM_RTOL);
            }
        }
        twin_check(&tw, REF_RTOL, REF_ATOL, label);
    }
    print_message("%s: %zu params in %zu chunks, %d updates of k = %d checked in %.1f s\n", what,
                  tw.n, tw.model->n_chunks, UPDATES, K, now_s() - t0);
    free(g);
    twin_free(&tw);
}

static void test_large_norm_and_clip_path_a(void **state)
{
    (void)state;
    large_run(CLG_ADAMW, 'A', 1, 1, 201);
    large_run(CLG_SGD, 'A', 1, 0, 202);
}

static void test_large_norm_and_clip_path_b(void **state)
{
    (void)state;
    large_run(CLG_ADAMW, 'B', 1, 0, 203);
    large_run(CLG_SGD, 'B', 1, 1, 204);
}

/* Without statistics: the plain update, every chunk and both groups, on
 * paths A, B and C (the update kernel reads the last micro-step's
 * gradients itself). */
static void test_large_update(void **state)
{
    (void)state;
    large_run(CLG_ADAMW, 'A', 0, 0, 205);
    large_run(CLG_SGD, 'B', 0, 0, 206);
    large_run(CLG_ADAMW, 'C', 0, 0, 207);
    large_run(CLG_SGD, 'C', 0, 0, 208);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_norm_and_clip_path_a),
        cmocka_unit_test(test_large_norm_and_clip_path_b),
        cmocka_unit_test(test_large_update),
    };
    int rc = TU_RUN_GROUP_MAX_ALLOC("large", tests, tu_group_setup, MAX_ALLOC);
    printf("largest relative error: global norm %.3g (rtol %g), per-tensor norm %.3g (rtol %g)\n",
           worst_norm_err, NORM_RTOL, worst_tensor_norm_err, TENSOR_NORM_RTOL);
    return rc;
}
