/* test_accum.c - the accumulation cycle: mean and sum normalization,
 * weighted micro-steps, a partial last window (clg_flush), a variable-k
 * schedule, and the accumulator contents. Exact cases use plain SGD with
 * lr 1 from p = 0, so that p after one update is exactly -ĝ. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t small_counts[] = {1, 1009, 13};
static const twin_layout small_layout = TWIN_ONE_GROUP(small_counts);

static clg_config sgd_lr1(unsigned k, clg_normalize norm, int fuse)
{
    clg_config cfg = tu_config(CLG_SGD, 1.0f, k);
    cfg.normalize = norm;
    cfg.fuse_last_micro_step = fuse;
    return cfg;
}

/* Twin from p = 0 (both sides). */
static void twin_zero(twin *tw, const clg_config *cfg)
{
    twin_init(tw, tu_ctx, cfg, &small_layout, 5);
    memset(tw->host, 0, tw->n * sizeof(float));
    OK(clg_model_upload_params(tw->model, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));
    memset(tw->ref.p, 0, tw->n * sizeof(double));
}

static void fill(float *g, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        g[i] = v;
}

/* Every param must equal want exactly. */
static void assert_params_all(twin *tw, float want, const char *what)
{
    OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));
    for (size_t i = 0; i < tw->n; i++)
        if (memcmp(&tw->host[i], &want, sizeof want))
            fail_msg("%s: param %zu = %.9g, want exactly %.9g", what, i, (double)tw->host[i],
                     (double)want);
}

static void run_exact(int fuse, clg_normalize norm, unsigned k, const float *gs, const float *ws,
                      float want, const char *what)
{
    clg_config cfg = sgd_lr1(k, norm, fuse);
    twin tw;
    twin_zero(&tw, &cfg);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    float wsum = 0;
    for (unsigned m = 0; m < k; m++) {
        fill(g, tw.n, gs[m]);
        assert_int_equal(clg_micro_step_index(tw.model), m);
        assert_true(clg_accum_beta(tw.model) == (m == 0 ? 0.0f : 1.0f));
        int updated = twin_micro(&tw, g, ws[m]);
        assert_int_equal(updated, m == k - 1);
        wsum += ws[m];
        if (m + 1 < k) {
            clg_stats s = twin_stats(&tw);
            if (s.weight_sum != wsum)
                fail_msg("%s: weight_sum %g after %u micro-steps, want %g", what,
                         (double)s.weight_sum, m + 1, (double)wsum);
        }
    }
    assert_params_all(&tw, want, what);
    /* and the reference agrees with the literal */
    assert_true(tw.ref.p[0] == (double)want);
    free(g);
    twin_free(&tw);
}

static const float g1234[] = {1, 2, 3, 4};
static const float ones[] = {1, 1, 1, 1};

static void test_mean_is_exact(void **state)
{
    (void)state;
    /* (1+2+3+4)/4 = 2.5: exact in fp32 on every path */
    run_exact(1, CLG_NORM_MEAN, 4, g1234, ones, -2.5f, "mean path C");
    run_exact(0, CLG_NORM_MEAN, 4, g1234, ones, -2.5f, "mean path A");
}

static void test_sum_is_exact(void **state)
{
    (void)state;
    run_exact(1, CLG_NORM_SUM, 4, g1234, ones, -10.0f, "sum path C");
    run_exact(0, CLG_NORM_SUM, 4, g1234, ones, -10.0f, "sum path A");
}

static void test_weighted_mean(void **state)
{
    (void)state;
    /* weights 1, 1, 2 on gradients 1, 2, 3: (1 + 2 + 6) / 4 = 2.25 */
    static const float g[] = {1, 2, 3};
    static const float w[] = {1, 1, 2};
    run_exact(1, CLG_NORM_MEAN, 3, g, w, -2.25f, "weighted path C");
    run_exact(0, CLG_NORM_MEAN, 3, g, w, -2.25f, "weighted path A");
    /* sum mode with weights: the weighted sum as is */
    run_exact(0, CLG_NORM_SUM, 3, g, w, -9.0f, "weighted sum path A");
}

/* Token-weighted micro-batches (Hugging Face's 2024 fix): each micro-batch
 * brings its mean gradient S_k/n_k with weight n_k; the update must use
 * Σ S_k / Σ n_k, not the mean of the means. */
static void test_token_weighted(void **state)
{
    (void)state;
    static const float w[] = {3, 5, 8, 1};
    clg_config cfg = sgd_lr1(4, CLG_NORM_MEAN, 1);
    twin tw;
    twin_zero(&tw, &cfg);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    double *want = tu_xmalloc(tw.n * sizeof(double));
    memset(want, 0, tw.n * sizeof(double));
    for (unsigned m = 0; m < 4; m++) {
        twin_gradient(&tw, 0, m, g);
        for (size_t i = 0; i < tw.n; i++)
            want[i] += (double)w[m] * g[i];
        twin_micro(&tw, g, w[m]);
    }
    for (size_t i = 0; i < tw.n; i++)
        want[i] = -want[i] / 17.0;
    /* the reference against the closed form (double rounding only) */
    for (size_t i = 0; i < tw.n; i++)
        assert_true(fabs(tw.ref.p[i] - want[i]) <= 1e-15);
    /* device: fp32 sums of 4 terms and one scale: a few ulps, well inside
     * PyTorch's fp32 tolerances */
    twin_check(&tw, REF_RTOL, REF_ATOL, "token weighted");
    OK(clg_model_download_params(tw.model, CLG_ALL_TENSORS, tw.host, (size_t)clg_model_param_count(tw.model), NULL));
    assert_int_equal(ref_compare("token weighted tight", tw.host, want, tw.n, 1e-6, 0), 0);
    free(want);
    free(g);
    twin_free(&tw);
}

static void test_partial_window(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        clg_config cfg = sgd_lr1(4, CLG_NORM_MEAN, fuse);
        twin tw;
        twin_zero(&tw, &cfg);
        float *g = tu_xmalloc(tw.n * sizeof(float));
        float *before = twin_snapshot(&tw);
        /* an empty cycle cannot be flushed, and that changes nothing */
        assert_int_equal(clg_flush(tw.model, NULL), CLG_ERR_STATE);
        twin_assert_unchanged(&tw, before, "flush of an empty cycle");
        free(before);
        for (unsigned m = 0; m < 3; m++) {
            fill(g, tw.n, (float)(m + 1));
            assert_int_equal(twin_micro(&tw, g, 1.0f), 0);
        }
        OK(clg_flush(tw.model, NULL));
        assert_int_equal(ref_flush(&tw.ref), 0);
        /* (1+2+3)/3 = 2: divides by what it holds, not by k = 4. The scale
         * 1/3 is not exact in fp32; 6 * fl(1/3) still rounds to 2, but
         * allow one ulp for an implementation that scales differently */
        OK(clg_model_download_params(tw.model, CLG_ALL_TENSORS, tw.host, (size_t)clg_model_param_count(tw.model), NULL));
        for (size_t i = 0; i < tw.n; i++)
            if (fabs(tw.host[i] + 2.0) > 2.4e-7)
                fail_msg("partial window (fuse %d): param %zu = %.9g, want -2", fuse, i,
                         (double)tw.host[i]);
        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.updates, 1);
        assert_int_equal(clg_micro_step_index(tw.model), 0);
        /* the next cycle is a normal full one */
        for (unsigned m = 0; m < 4; m++) {
            fill(g, tw.n, 4.0f);
            assert_int_equal(twin_micro(&tw, g, 1.0f), m == 3);
        }
        twin_check(&tw, REF_RTOL, REF_ATOL, "after partial window");
        free(g);
        twin_free(&tw);
    }
}

static unsigned k_of(uint64_t t, void *user)
{
    (void)user;
    return 1 + (unsigned)(t % 3); /* 1, 2, 3, 1, 2, 3, ... */
}

static void test_variable_k(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.lr = 1e-2f;
    cfg.k_schedule = k_of;
    cfg.accum_steps = 4; /* ignored when k_schedule is set */
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 77);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    unsigned step = 0;
    for (uint64_t t = 0; t < 6; t++) {
        unsigned k = k_of(t, NULL);
        for (unsigned m = 0; m < k; m++) {
            if (m > 0)
                assert_int_equal(clg_cycle_length(tw.model), k);
            twin_gradient(&tw, t, m, g);
            int updated = twin_micro(&tw, g, 1.0f + (float)(step++ % 3));
            assert_int_equal(updated, m == k - 1);
        }
        char what[48];
        snprintf(what, sizeof what, "variable k, after update %u (k %u)", (unsigned)t + 1, k);
        twin_check(&tw, REF_RTOL, REF_ATOL, what);
    }
    clg_stats s = twin_stats(&tw);
    assert_int_equal(s.updates, 6);
    assert_int_equal(s.micro_steps, 12);
    free(g);
    twin_free(&tw);
}

/* The k schedule's index counts completed cycles, skipped ones included
 * (clgrad.h): the host knows it without reading the device. Cycle 1 holds
 * a NaN and is skipped; the cycles after it still get k_of(2), k_of(3),
 * ..., so an index of applied updates would end them one micro-step off. */
static void test_variable_k_counts_skipped_cycles(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.lr = 1e-2f;
    cfg.k_schedule = k_of;
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 78);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (uint64_t t = 0; t < 6; t++) {
        unsigned k = k_of(t, NULL);
        for (unsigned m = 0; m < k; m++) {
            twin_gradient(&tw, t, m, g);
            if (t == 1 && m == 0)
                g[tw.n / 2] = NAN;
            assert_int_equal(twin_micro(&tw, g, 1.0f), m == k - 1);
        }
        char what[64];
        snprintf(what, sizeof what, "k schedule with a skipped cycle, after cycle %u",
                 (unsigned)t + 1);
        twin_check(&tw, REF_RTOL, REF_ATOL, what);
    }
    clg_stats s = twin_stats(&tw);
    assert_int_equal(s.cycles, 6);
    assert_int_equal(s.updates, 5);
    assert_int_equal(s.skipped_updates, 1);
    assert_int_equal(s.micro_steps, 12);
    free(g);
    twin_free(&tw);
}

static unsigned k_two_then_one(uint64_t t, void *user)
{
    (void)user;
    return t == 0 ? 2 : 1;
}

/* A one-micro-step cycle after a longer one: its only micro-step is the
 * first of the cycle, so the accumulator's old content (the previous
 * cycle's sum) must not be read, on either path. SGD lr 1 from p = 0 with
 * all gradients 1: p = -1 after each update, exactly. */
static void test_k1_after_longer_cycle(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        clg_config cfg = sgd_lr1(1, CLG_NORM_MEAN, fuse);
        cfg.k_schedule = k_two_then_one;
        twin tw;
        twin_zero(&tw, &cfg);
        float *g = tu_xmalloc(tw.n * sizeof(float));
        fill(g, tw.n, 1.0f);
        assert_int_equal(twin_micro(&tw, g, 1.0f), 0);
        assert_int_equal(twin_micro(&tw, g, 1.0f), 1);
        assert_params_all(&tw, -1.0f, fuse ? "k 2 (path C)" : "k 2 (path A)");
        assert_int_equal(twin_micro(&tw, g, 1.0f), 1);
        assert_params_all(&tw, -2.0f, fuse ? "k 1 after k 2 (path C)" : "k 1 after k 2 (path A)");
        assert_int_equal(twin_micro(&tw, g, 1.0f), 1);
        assert_params_all(&tw, -3.0f, fuse ? "2nd k 1 (path C)" : "2nd k 1 (path A)");
        free(g);
        twin_free(&tw);
    }
}

/* clg_reset_cycle drops what the cycle holds: the next micro-step is the
 * first of a new cycle, on either path. */
static void test_reset_cycle(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        clg_config cfg = clg_config_init(CLG_ADAM);
        cfg.accum_steps = 3;
        cfg.fuse_last_micro_step = fuse;
        twin tw;
        twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 17);
        float *g = tu_xmalloc(tw.n * sizeof(float));
        float *snap = twin_snapshot(&tw);
        for (unsigned m = 0; m < 2; m++) {
            twin_gradient(&tw, 9, m, g);
            twin_micro(&tw, g, 5.0f);
        }
        clg_reset_cycle(tw.model);
        ref_reset_cycle(&tw.ref);
        assert_int_equal(clg_micro_step_index(tw.model), 0);
        assert_true(clg_accum_beta(tw.model) == 0.0f);
        twin_assert_unchanged(&tw, snap, "reset cycle");
        for (unsigned c = 0; c < 2; c++)
            for (unsigned m = 0; m < 3; m++) {
                twin_gradient(&tw, c, m, g);
                assert_int_equal(twin_micro(&tw, g, 1.0f), m == 2);
            }
        twin_check(&tw, REF_RTOL, REF_ATOL, fuse ? "after reset (path C)" : "after reset (path A)");
        free(snap);
        free(g);
        twin_free(&tw);
    }
}

/* Path A writes acc = w*g on the first micro-step (no read of old content)
 * and acc += w*g after; the download shows the unnormalized sum. */
static void test_accumulator_contents(void **state)
{
    (void)state;
    clg_config cfg = sgd_lr1(4, CLG_NORM_MEAN, 0);
    twin tw;
    twin_zero(&tw, &cfg);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    float *acc = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned cycle = 0; cycle < 2; cycle++) {
        for (unsigned m = 0; m < 3; m++) {
            twin_gradient(&tw, cycle, m, g);
            twin_micro(&tw, g, 0.5f + (float)m);
            OK(clg_model_download_acc(tw.model, CLG_ALL_TENSORS, acc, (size_t)clg_model_param_count(tw.model), NULL));
            /* fp32 sum of at most 3 products: within 2^-22 relative of
             * the magnitudes involved; since the terms share their sign
             * (twin_gradient's base dominates), relative to the sum */
            assert_int_equal(ref_compare("accumulator", acc, tw.ref.acc, tw.n, 4.8e-7, 0), 0);
        }
        fill(g, tw.n, 0.0f);
        twin_micro(&tw, g, 1.0f);
    }
    free(acc);
    free(g);
    twin_free(&tw);
}

TU_MAIN("accum", tu_group_setup, tu_group_teardown,
        cmocka_unit_test(test_mean_is_exact),         cmocka_unit_test(test_sum_is_exact),
        cmocka_unit_test(test_weighted_mean),         cmocka_unit_test(test_token_weighted),
        cmocka_unit_test(test_partial_window),        cmocka_unit_test(test_variable_k),
        cmocka_unit_test(test_variable_k_counts_skipped_cycles),
        cmocka_unit_test(test_k1_after_longer_cycle), cmocka_unit_test(test_accumulator_contents),
        cmocka_unit_test(test_reset_cycle))
