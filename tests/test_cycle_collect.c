/* test_cycle_collect.c - the deferred end of cycle (clg_step_collect +
 * clg_finish_cycle) against plain clg_step on the same gradients, at a real
 * size: 950,035 parameters in 5 tensors and 2 param groups, with
 * CLGRAD_MAX_ALLOC = 2 MiB so that the arenas split into several chunks.
 * Each case runs two models from the same initial params, AdamW, k = 3,
 * 4 updates:
 *
 *  - nothing between the two calls, no statistics: bitwise the params and
 *    both Adam states of clg_step (path A, which clg_step ends on the fused
 *    path C; path B);
 *  - AdamW with clip_norm and dynamic loss scaling, one cycle holding an
 *    inf (the update is skipped and the scale backs off on both): the same
 *    updates, skips and loss scales, and params and states within PyTorch's
 *    fp32 tolerances (rtol 1.3e-6, atol 1e-5) on path A, where clg_step
 *    folds the statistics into the last accumulate pass and the deferred
 *    end runs them as a pass of its own (the norm may differ by its
 *    rounding, which clipping carries into the update); bitwise on path B,
 *    where both run the same statistics pass;
 *  - the accumulator overwritten between the calls with twice its value and
 *    weight_sum twice the cycle's: in mean mode the same update as nothing
 *    done (scaling by 2 is exact in fp32, norm and clip included), bitwise;
 *  - the pending model refuses clg_step, clg_flush and clg_checkpoint_save,
 *    and clg_reset_cycle drops the cycle. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2 MiB: 524,288 floats per buffer at most. */
#define MAX_ALLOC "2097152"
/* PyTorch's fp32 tolerances (torch.testing.assert_close), as the reference
 * tests use. */
#define RTOL 1.3e-6
#define ATOL 1e-5

enum { K = 3, UPDATES = 4, N_TENSORS = 5 };
static const size_t counts[N_TENSORS] = {400009, 300007, 17, 250001, 1};
static const int in_group1[N_TENSORS] = {0, 1, 1, 0, 1};

typedef struct pair {
    clg_model *m[2]; /* [0]: clg_step, [1]: clg_step_collect + clg_finish_cycle */
    clg_grads *g[2];
    size_t n;
} pair;

static clg_model *build(const clg_config *cfg)
{
    clg_model *m = tu_grouped_model(cfg, N_TENSORS, counts, in_group1);
    OK(clg_model_finalize(m));
    if (m->n_chunks < 3)
        fail_msg("CLGRAD_MAX_ALLOC=%s: %zu chunk(s), want >= 3", MAX_ALLOC, m->n_chunks);
    tu_upload_uniform_params(m, 42);
    return m;
}

static void pair_init(pair *p, const clg_config *cfg)
{
    for (int i = 0; i < 2; i++) {
        p->m[i] = build(cfg);
        OK(clg_grads_create(p->m[i], CLG_FP32, &p->g[i]));
    }
    p->n = (size_t)clg_model_param_count(p->m[0]);
}

static void pair_free(pair *p)
{
    for (int i = 0; i < 2; i++) {
        clg_grads_destroy(p->g[i]);
        clg_model_destroy(p->m[i]);
    }
}

/* Gradient of micro-step `micro` of update `u`: uniform in [-1, 1); one
 * element is inf in cycle inf_cycle (if >= 0). */
static void gradient(float *g, size_t n, unsigned u, unsigned micro, int inf_cycle)
{
    tu_fill_uniform(g, n, 1000u * u + micro + 7, -1.0f, 1.0f);
    if ((int)u == inf_cycle && micro == 1)
        g[n / 2] = INFINITY;
}

/* Path B as a backward would do it: w*g into the accumulator views, beta 0
 * on the first micro-step, added on the host after. */
static void write_path_b(clg_model *m, const float *g, float w, float *scratch, size_t n)
{
    if (clg_accum_beta(m) == 0.0f) {
        for (size_t i = 0; i < n; i++)
            scratch[i] = w * g[i];
    } else {
        OK(clg_model_download_acc(m, CLG_ALL_TENSORS, scratch, n, NULL));
        for (size_t i = 0; i < n; i++)
            scratch[i] += w * g[i];
    }
    tu_write_acc(m, scratch, 4);
}

typedef enum { BETWEEN_NOTHING, BETWEEN_DOUBLE } between;

/* One micro-step of model i of p with gradient g and weight w; collect:
 * clg_step_collect, and at the cycle's end `what` between the two calls. */
static void micro(pair *p, int i, int collect, const float *g, float w, int path_b,
                  between what, float *scratch, double *weight_sum)
{
    clg_model *m = p->m[i];
    const clg_grads *gr = NULL;
    if (path_b)
        write_path_b(m, g, w, scratch, p->n);
    else {
        OK(clg_grads_upload(p->g[i], CLG_ALL_TENSORS, g, p->n, NULL));
        gr = p->g[i];
    }
    *weight_sum += w;
    int done = 0;
    if (!collect) {
        OK(clg_step(m, gr, w, &done, NULL));
        return;
    }
    OK(clg_step_collect(m, gr, w, &done, NULL));
    if (!done)
        return;
    assert_true(m->pending);
    float ws = (float)*weight_sum;
    if (what == BETWEEN_DOUBLE) {
        OK(clg_model_download_acc(m, CLG_ALL_TENSORS, scratch, p->n, NULL));
        for (size_t e = 0; e < p->n; e++)
            scratch[e] *= 2.0f;
        tu_write_acc(m, scratch, 4);
        ws *= 2.0f;
    }
    OK(clg_finish_cycle(m, ws, NULL));
    assert_false(m->pending);
    *weight_sum = 0.0;
}

/* Runs UPDATES cycles on both models; returns the largest relative error
 * seen over params and both states (0: bitwise). */
static double run_pair(const clg_config *cfg, int path_b, between what, int inf_cycle,
                       int bitwise)
{
    pair p;
    pair_init(&p, cfg);
    float *g = tu_xmalloc(p.n * sizeof *g);
    float *scratch = tu_xmalloc(p.n * sizeof *scratch);
    double ws[2] = {0.0, 0.0};
    for (unsigned u = 0; u < UPDATES; u++)
        for (unsigned k = 0; k < K; k++) {
            gradient(g, p.n, u, k, inf_cycle);
            /* uneven weights: mean mode must divide by their sum */
            float w = 1.0f + 0.5f * (float)k + 0.25f * (float)u;
            for (int i = 0; i < 2; i++)
                micro(&p, i, i, g, w, path_b, what, scratch, &ws[i]);
        }
    clg_stats s[2];
    for (int i = 0; i < 2; i++) {
        s[i] = clg_stats_init();
        OK(clg_model_stats(p.m[i], 1, &s[i]));
    }
    assert_int_equal(s[0].updates, s[1].updates);
    assert_int_equal(s[0].skipped_updates, s[1].skipped_updates);
    assert_int_equal(s[0].cycles, s[1].cycles);
    assert_int_equal(s[0].micro_steps, s[1].micro_steps);
    assert_true(s[0].loss_scale == s[1].loss_scale);
    if (inf_cycle >= 0)
        assert_int_equal(s[1].skipped_updates, 1);
    assert_int_equal(s[1].cycles, UPDATES);

    float *a = tu_xmalloc(p.n * sizeof *a);
    double worst = 0.0;
    for (int arena = -1; arena < 2; arena++) {
        for (int i = 0; i < 2; i++) {
            float *dst = i == 0 ? a : scratch;
            if (arena < 0)
                OK(clg_model_download_params(p.m[i], CLG_ALL_TENSORS, dst, p.n, NULL));
            else
                OK(clg_model_download_state(p.m[i], arena, CLG_ALL_TENSORS, dst, p.n, NULL));
        }
        const char *what_s = arena < 0 ? "params" : arena == 0 ? "m" : "v";
        if (bitwise && memcmp(a, scratch, p.n * sizeof *a) != 0) {
            for (size_t e = 0; e < p.n; e++)
                if (memcmp(&a[e], &scratch[e], sizeof *a) != 0)
                    fail_msg("%s[%zu]: clg_step %.9g, collect + finish %.9g (want bitwise)",
                             what_s, e, a[e], scratch[e]);
        }
        for (size_t e = 0; e < p.n; e++) {
            double d = fabs((double)a[e] - (double)scratch[e]);
            if (!(d <= ATOL + RTOL * fabs((double)a[e])))
                fail_msg("%s[%zu]: clg_step %.9g, collect + finish %.9g (rtol %g, atol %g)",
                         what_s, e, a[e], scratch[e], RTOL, ATOL);
            double r = d / fmax(fabs((double)a[e]), 1e-30);
            if (r > worst)
                worst = r;
        }
    }
    free(a);
    free(g);
    free(scratch);
    pair_free(&p);
    return worst;
}

static void test_plain_path_a_bitwise(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 0); /* clg_step ends on path C */
    run_pair(&c, 0, BETWEEN_NOTHING, -1, 1);
}

static void test_plain_path_b_bitwise(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 0);
    run_pair(&c, 1, BETWEEN_NOTHING, -1, 1);
}

static void test_clip_dynamic_scale_path_a(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 1);
    double e = run_pair(&c, 0, BETWEEN_NOTHING, 2, 0);
    print_message("path A, clip + dynamic loss scale: largest relative difference %.3g\n", e);
}

static void test_clip_dynamic_scale_path_b_bitwise(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 1);
    run_pair(&c, 1, BETWEEN_NOTHING, 2, 1);
}

/* Model 0 collects too here (the same path), so that the comparison is of
 * the doubling alone. */
static void test_doubled_accumulator_same_mean_update(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 1);
    pair p;
    pair_init(&p, &c);
    float *g = tu_xmalloc(p.n * sizeof *g);
    float *scratch = tu_xmalloc(p.n * sizeof *scratch);
    double ws[2] = {0.0, 0.0};
    for (unsigned u = 0; u < UPDATES; u++)
        for (unsigned k = 0; k < K; k++) {
            gradient(g, p.n, u, k, 2);
            float w = 1.0f + 0.5f * (float)k;
            for (int i = 0; i < 2; i++)
                micro(&p, i, 1, g, w, 0, i == 0 ? BETWEEN_NOTHING : BETWEEN_DOUBLE, scratch,
                      &ws[i]);
        }
    float *a = tu_xmalloc(p.n * sizeof *a);
    OK(clg_model_download_params(p.m[0], CLG_ALL_TENSORS, a, p.n, NULL));
    OK(clg_model_download_params(p.m[1], CLG_ALL_TENSORS, scratch, p.n, NULL));
    for (size_t e = 0; e < p.n; e++)
        if (memcmp(&a[e], &scratch[e], sizeof *a) != 0)
            fail_msg("params[%zu]: acc %.9g, 2 x acc with 2 x weight_sum %.9g (want bitwise)", e,
                     a[e], scratch[e]);
    clg_stats s = clg_stats_init();
    OK(clg_model_stats(p.m[1], 1, &s));
    assert_int_equal(s.skipped_updates, 1);
    assert_int_equal(s.updates, UPDATES - 1);
    free(a);
    free(g);
    free(scratch);
    pair_free(&p);
}

static void test_pending_refuses_then_reset(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 0);
    c.accum_steps = 1;
    clg_model *m = build(&c);
    int ready = 0;
    OK(clg_step_collect(m, NULL, 1.0f, &ready, NULL));
    assert_int_equal(ready, 1);
    int upd = 7;
    assert_int_equal(clg_step(m, NULL, 1.0f, &upd, NULL), CLG_ERR_STATE);
    assert_non_null(strstr(clg_last_error(tu_ctx), "pending"));
    assert_int_equal(upd, 0);
    assert_int_equal(clg_step_collect(m, NULL, 1.0f, &upd, NULL), CLG_ERR_STATE);
    assert_int_equal(clg_flush(m, NULL), CLG_ERR_STATE);
    char *dir = tu_mkdtemp("test_cycle_collect");
    char path[512];
    snprintf(path, sizeof path, "%s/x.ckpt", dir);
    assert_int_equal(clg_checkpoint_save(m, path, NULL, NULL, 0), CLG_ERR_STATE);
    OK(clg_reset_cycle(m));
    assert_int_equal(clg_finish_cycle(m, 1.0f, NULL), CLG_ERR_STATE);
    OK(clg_step(m, NULL, 1.0f, &upd, NULL));
    assert_int_equal(upd, 1);
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    tu_rmdir_tree(dir);
    free(dir);
    clg_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_path_a_bitwise),
        cmocka_unit_test(test_plain_path_b_bitwise),
        cmocka_unit_test(test_clip_dynamic_scale_path_a),
        cmocka_unit_test(test_clip_dynamic_scale_path_b_bitwise),
        cmocka_unit_test(test_doubled_accumulator_same_mean_update),
        cmocka_unit_test(test_pending_refuses_then_reset),
    };
    return TU_RUN_GROUP_MAX_ALLOC("cycle_collect", tests, tu_group_setup, MAX_ALLOC);
}
