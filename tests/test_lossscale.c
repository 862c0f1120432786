/* test_lossscale.c - loss scaling on the device. Dynamic: the scale
 * sequence step by step against GradScaler's rule (init 2^16, growth 2,
 * backoff 0.5, here interval 3, with min/max clamps), the caller scales
 * its gradients by the current scale, the update unscales (params follow
 * the unscaled reference), inf cycles are skipped. Static: a constant
 * scale, also in sum mode. Blocking vs non-blocking reads of the scale. */
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

static float read_scale_view(twin *tw)
{
    clg_view v;
    OK(clg_model_loss_scale_view(tw->model, &v));
    float s = 0;
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE,
                                         v.offset * sizeof(float), sizeof s, &s, 0, NULL, NULL),
                     CL_SUCCESS);
    return s;
}

/* One cycle of k micro-steps whose gradients the caller multiplies by the
 * current scale L (a power of two: the product is exact in fp32). */
static void scaled_cycle(twin *tw, unsigned k, uint64_t cycle, int poison, double L)
{
    float *g = tu_xmalloc(tw->n * sizeof(float));
    for (unsigned m = 0; m < k; m++) {
        twin_gradient(tw, cycle, m, g);
        for (size_t i = 0; i < tw->n; i++)
            g[i] = (float)(g[i] * L);
        if (poison && m == k - 1)
            g[tw->n / 2] = INFINITY;
        twin_micro(tw, g, 1.0f);
    }
    free(g);
}

/* GradScaler's rule as both sequences below play it: init 2^16, growth 2,
 * backoff 0.5, interval 3, clamped to [2^14, 2^18]. */
static void set_clamped_rule(clg_config *cfg)
{
    cfg->loss_scale_init = 65536.0f;
    cfg->loss_scale_growth = 2.0f;
    cfg->loss_scale_backoff = 0.5f;
    cfg->loss_scale_interval = 3;
    cfg->loss_scale_min = 16384.0f;  /* 2^14 */
    cfg->loss_scale_max = 262144.0f; /* 2^18 */
}

/* Their cycles, C = clean, I = inf. Reaches the max clamp (2^18) after 6
 * clean cycles and holds it, backs off to the min clamp (2^14) and holds
 * it, grows again; a clean run interrupted by an inf resets the growth
 * tracker. */
static const char cycle_pattern[] = "CCCCCCCCCIIIIIICCCICCCCCC";

static void test_dynamic_sequence(void **state)
{
    (void)state;
    clg_config cfg = tu_config(CLG_ADAMW, 1e-2f, 2);
    cfg.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    set_clamped_rule(&cfg);
    /* nonfinite stays IGNORE: dynamic scaling upgrades it to skip-update */
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 101);

    double prev = tw.ref.loss_scale;
    uint64_t updates = 0, skipped = 0;
    int at_max = 0, at_min = 0;
    float scale = 0;
    OK(clg_model_loss_scale(tw.model, 1, &scale));
    assert_true(scale == 65536.0f);
    for (size_t c = 0; cycle_pattern[c]; c++) {
        double L = tw.ref.loss_scale;
        /* the device's scale for this cycle, exactly (powers of two) */
        OK(clg_model_loss_scale(tw.model, 1, &scale));
        if ((double)scale != L)
            fail_msg("cycle %zu: loss scale %g, GradScaler gives %g", c, (double)scale, L);
        assert_true(read_scale_view(&tw) == scale);
        int bad = cycle_pattern[c] == 'I';
        scaled_cycle(&tw, 2, c, bad, L);
        updates += !bad;
        skipped += bad;
        /* non-blocking: the value of the last completed read, at most one
         * update stale */
        float nb = 0;
        OK(clg_model_loss_scale(tw.model, 0, &nb));
        if ((double)nb != tw.ref.loss_scale && (double)nb != L && (double)nb != prev)
            fail_msg("cycle %zu: non-blocking scale %g, want %g or the stale %g", c, (double)nb,
                     tw.ref.loss_scale, L);
        prev = L;
        /* non-blocking statistics: at most one update stale */
        clg_stats snb = clg_stats_init();
        OK(clg_model_stats(tw.model, 0, &snb));
        if (snb.updates + snb.skipped_updates + 1 < updates + skipped)
            fail_msg("cycle %zu: non-blocking stats %llu+%llu updates, more than one stale "
                     "(now %llu+%llu)",
                     c, (unsigned long long)snb.updates, (unsigned long long)snb.skipped_updates,
                     (unsigned long long)updates, (unsigned long long)skipped);
        at_max += tw.ref.loss_scale == 262144.0;
        at_min += tw.ref.loss_scale == 16384.0;
        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.updates, updates);
        assert_int_equal(s.skipped_updates, skipped);
        assert_int_equal(s.last_nonfinite, bad);
        if ((double)s.loss_scale != tw.ref.loss_scale)
            fail_msg("cycle %zu: stats.loss_scale %g, want %g", c, (double)s.loss_scale,
                     tw.ref.loss_scale);
        /* unscaled: the reference sees the same scaled grads and L */
        twin_check(&tw, REF_RTOL, REF_ATOL, "dynamic loss scaling");
    }
    /* the sequence did hold at both clamps */
    assert_int_equal(at_max, 4);
    assert_int_equal(at_min, 8);
    /* after a sync, a non-blocking read started after the last update has
     * completed: the next non-blocking call is current */
    float nb = 0;
    OK(clg_model_loss_scale(tw.model, 0, &nb));
    OK(clg_model_sync(tw.model));
    OK(clg_model_loss_scale(tw.model, 0, &nb));
    assert_true((double)nb == tw.ref.loss_scale);
    twin_free(&tw);
}

/* The clamps, checked directly on the GradScaler sequence the reference
 * produces (and the device followed above). */
static void test_reference_sequence(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAM);
    set_clamped_rule(&cfg);
    static const double want[] = {65536,  65536,  131072, 131072, 131072, 262144,
                                  262144, 262144, 262144,                         /* C x9 */
                                  131072, 65536,  32768,  16384,  16384,  16384,  /* I x6 */
                                  16384,  16384,  32768,  16384,                  /* CCC I */
                                  16384,  16384,  32768,  32768,  32768,  65536}; /* C x6 */
    double scale = 65536;
    unsigned tracker = 0;
    for (size_t c = 0; cycle_pattern[c]; c++) {
        ref_loss_scale_update(&cfg, &scale, &tracker, cycle_pattern[c] == 'I');
        if (scale != want[c])
            fail_msg("reference GradScaler step %zu: %g, want %g", c, scale, want[c]);
    }
}

static void test_static_scale(void **state)
{
    (void)state;
    for (int sum = 0; sum <= 1; sum++) {
        clg_config cfg = clg_config_init(CLG_SGD);
        cfg.lr = sum ? 0.02f : 0.1f;
        cfg.momentum = 0.9f;
        cfg.accum_steps = 3;
        cfg.normalize = sum ? CLG_NORM_SUM : CLG_NORM_MEAN;
        cfg.loss_scale = CLG_LOSS_SCALE_STATIC;
        cfg.loss_scale_init = 1024.0f;
        twin tw;
        twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 102);
        for (unsigned c = 0; c < 3; c++) {
            float scale = 0;
            OK(clg_model_loss_scale(tw.model, 1, &scale));
            assert_true(scale == 1024.0f);
            scaled_cycle(&tw, 3, c, 0, 1024.0);
            twin_check(&tw, REF_RTOL, REF_ATOL, sum ? "static scale, sum" : "static scale");
        }
        twin_free(&tw);
    }
}

static void test_no_scaling_reads_one(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAM);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 103);
    float scale = 0;
    OK(clg_model_loss_scale(tw.model, 1, &scale));
    assert_true(scale == 1.0f);
    OK(clg_model_loss_scale(tw.model, 0, &scale));
    assert_true(scale == 1.0f);
    twin_free(&tw);
}

TU_MAIN("lossscale", tu_group_setup, tu_group_teardown,
        cmocka_unit_test(test_reference_sequence),
        cmocka_unit_test(test_dynamic_sequence),
        cmocka_unit_test(test_static_scale),
        cmocka_unit_test(test_no_scaling_reads_one))
