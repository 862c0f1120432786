/* test_noise.c - the gradient noise scale (McCandlish et al. 2018, app. A)
 * on synthetic gradients with known mean and covariance: each micro-batch
 * of b samples brings G + noise, the noise the mean of b per-sample
 * N(0, sigma^2 I) draws, i.e. N(0, sigma^2/b) per element, with weight b.
 * Truth: tr(Sigma) = n sigma^2 (per sample), |G|^2 known, B_simple =
 * tr(Sigma)/|G|^2 in samples. The device's EMA must match the reference's
 * EMA computed from the same data, and land within 10% of the truth. */
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

/* Per update: tr(Sigma) estimate 384 +- 27 and |G|^2 1024 +- 25 (cross
 * terms and chi-square noise, n = 4096, b = 8, k = 4); the EMA with
 * alpha 0.9 averages ~19 updates: a few percent, well inside 10%. */
enum { N = 4096, B = 8, K = 4, UPDATES = 120 };
static const double SIGMA = 1.0;
static const double G_ELEM = 0.5;

/* The noise-scale estimate on, its EMA with alpha 0.9, k micro-steps a
 * cycle. */
static clg_config noise_config(clg_optimizer opt, unsigned k)
{
    clg_config cfg = clg_config_init(opt);
    cfg.accum_steps = k;
    cfg.noise_scale = 1;
    cfg.noise_scale_ema = 0.9f;
    return cfg;
}

static void noise_case(int fuse, clg_optimizer opt)
{
    clg_config cfg = noise_config(opt, K);
    cfg.lr = 1e-3f;
    cfg.fuse_last_micro_step = fuse;
    static const size_t counts[] = {N - 100, 100};
    const twin_layout lay = TWIN_ONE_GROUP(counts);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &lay, 121);

    float *g = tu_xmalloc(N * sizeof(float));
    float *mean = tu_xmalloc(N * sizeof(float));
    tu_rng r = tu_rng_seed(122);
    double g2 = 0;
    for (size_t i = 0; i < N; i++) {
        mean[i] = (float)((tu_rng_u64(&r) & 1) ? G_ELEM : -G_ELEM);
        g2 += (double)mean[i] * mean[i];
    }
    const double tr = N * SIGMA * SIGMA, b_simple = tr / g2;
    const double sd = SIGMA / sqrt((double)B);
    for (unsigned u = 0; u < UPDATES; u++) {
        for (unsigned m = 0; m < K; m++) {
            for (size_t i = 0; i < N; i++)
                g[i] = (float)(mean[i] + sd * tu_rng_normal(&r));
            twin_micro(&tw, g, (float)B);
        }
    }
    clg_stats s = twin_stats(&tw);
    fprintf(stderr,
            "noise scale (fuse %d): device B_simple %.4f |G|^2 %.2f tr %.1f; reference %.4f "
            "%.2f %.1f; truth %.4f %.2f %.1f\n",
            fuse, (double)s.noise_scale, (double)s.noise_g2, (double)s.noise_trace,
            tw.ref.noise_scale, tw.ref.noise_g2, tw.ref.noise_tr, b_simple, g2, tr);
    assert_int_equal(tw.ref.noise_count, UPDATES);
    /* against the reference from the same data: the estimates subtract
     * fp32 norms (|G_small|^2 - |G_big|^2 = 384 out of ~1500, a 4x
     * cancellation of ~1e-5 relative reduction error): 1e-3 */
    const double rtol = 1e-3;
    if (!(fabs(s.noise_trace - tw.ref.noise_tr) <= rtol * tw.ref.noise_tr))
        fail_msg("noise trace %.6g, reference %.6g", (double)s.noise_trace, tw.ref.noise_tr);
    if (!(fabs(s.noise_g2 - tw.ref.noise_g2) <= rtol * tw.ref.noise_g2))
        fail_msg("noise |G|^2 %.6g, reference %.6g", (double)s.noise_g2, tw.ref.noise_g2);
    if (!(fabs(s.noise_scale - tw.ref.noise_scale) <= 2 * rtol * tw.ref.noise_scale))
        fail_msg("noise scale %.6g, reference %.6g", (double)s.noise_scale, tw.ref.noise_scale);
    /* against the truth: within 10% */
    if (!(fabs(s.noise_scale - b_simple) <= 0.1 * b_simple))
        fail_msg("B_simple %.4f, truth %.4f: off by more than 10%%", (double)s.noise_scale,
                 b_simple);
    if (!(fabs(s.noise_trace - tr) <= 0.1 * tr))
        fail_msg("tr(Sigma) %.1f, truth %.1f", (double)s.noise_trace, tr);
    if (!(fabs(s.noise_g2 - g2) <= 0.1 * g2))
        fail_msg("|G|^2 %.2f, truth %.2f", (double)s.noise_g2, g2);
    /* the params still follow the reference */
    twin_check(&tw, REF_RTOL, REF_ATOL, "noise scale model");
    free(mean);
    free(g);
    twin_free(&tw);
}

static void test_noise_path_c(void **state)
{
    (void)state;
    noise_case(1, CLG_ADAMW);
}

static void test_noise_path_a(void **state)
{
    (void)state;
    noise_case(0, CLG_SGD);
}

/* k = 1 has one batch size only: no estimate, the statistic stays NaN. */
static void test_noise_needs_two_sizes(void **state)
{
    (void)state;
    clg_config cfg = noise_config(CLG_SGD, 1);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 123);
    for (unsigned u = 0; u < 3; u++)
        twin_cycle(&tw, u, 1, 0.0f);
    clg_stats s = twin_stats(&tw);
    assert_true(isnan(s.noise_scale));
    assert_int_equal(tw.ref.noise_count, 0);
    twin_check(&tw, REF_RTOL, REF_ATOL, "noise k=1");
    twin_free(&tw);
}

TU_MAIN("noise", tu_group_setup, tu_group_teardown, cmocka_unit_test(test_noise_path_c),
        cmocka_unit_test(test_noise_path_a), cmocka_unit_test(test_noise_needs_two_sizes))
