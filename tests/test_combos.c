/* test_combos.c - features combined, each against the double reference:
 * loss scaling with clipping and per-tensor norms, clipping on path B,
 * sum mode with both clips, the noise scale under a loss scale, skipped
 * micro-steps with a partial window (clg_flush) and with the fused-path
 * setting, and a chunked context on path B with clipping. */
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

/* Norms: fp32 reductions of ~1000 squares, see test_numerics.c. */
#define NORM_RTOL 4e-5

enum { PATH_A, PATH_B, PATH_C };

typedef struct combo {
    const char *name;
    clg_optimizer opt;
    int path;
    float clip_norm, clip_value;
    clg_normalize normalize;
    clg_loss_scale_mode loss_scale;
    float scale_init;
    int tensor_norms;
    int grad_norm; /* the norm for logging alone: the update as without it */
} combo;

/* Runs 4 cycles of k = 3; gradients are multiplied by the current loss
 * scale (a power of two: exact). */
static void run_combo(clg_context *c, const combo *cb)
{
    clg_config cfg = clg_config_init(cb->opt);
    cfg.lr = cb->opt == CLG_SGD ? 0.05f : 1e-2f;
    cfg.momentum = 0.9f;
    cfg.weight_decay = 0.01f;
    cfg.accum_steps = 3;
    cfg.fuse_last_micro_step = cb->path == PATH_C;
    cfg.clip_norm = cb->clip_norm;
    cfg.clip_value = cb->clip_value;
    cfg.normalize = cb->normalize;
    cfg.loss_scale = cb->loss_scale;
    if (cb->scale_init > 0)
        cfg.loss_scale_init = cb->scale_init;
    cfg.tensor_norms = cb->tensor_norms;
    cfg.grad_norm = cb->grad_norm;
    twin tw;
    twin_init(&tw, c, &cfg, &twin_default_layout, 131);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned u = 0; u < 4; u++) {
        double L = tw.ref.loss_scale;
        for (unsigned m = 0; m < 3; m++) {
            twin_gradient(&tw, u, m, g);
            for (size_t i = 0; i < tw.n; i++)
                g[i] = (float)(g[i] * L);
            if (cb->path == PATH_B)
                twin_micro_b(&tw, g, 1.0f + (float)m);
            else
                twin_micro(&tw, g, 1.0f + (float)m);
        }
        char what[128];
        snprintf(what, sizeof what, "%s, update %u", cb->name, u + 1);
        twin_check(&tw, REF_RTOL, REF_ATOL, what);
        clg_stats s = twin_stats(&tw);
        if (!isnan(tw.ref.grad_norm) &&
            !(fabs(s.grad_norm - tw.ref.grad_norm) <= NORM_RTOL * tw.ref.grad_norm))
            fail_msg("%s: grad_norm %.9g, want %.9g", what, (double)s.grad_norm, tw.ref.grad_norm);
        if (cb->clip_norm > 0 &&
            !(fabs(s.clip_coef - tw.ref.clip_coef) <= NORM_RTOL * tw.ref.clip_coef))
            fail_msg("%s: clip_coef %.9g, want %.9g", what, (double)s.clip_coef, tw.ref.clip_coef);
        if (cb->tensor_norms) {
            float norms[6];
            OK(clg_model_tensor_norms(tw.model, norms, clg_model_tensor_count(tw.model)));
            for (int t = 0; t < 6; t++)
                if (!(fabs(norms[t] - tw.ref.tensor_norm[t]) <= NORM_RTOL * tw.ref.tensor_norm[t]))
                    fail_msg("%s: tensor %d norm %.9g, want %.9g", what, t, (double)norms[t],
                             tw.ref.tensor_norm[t]);
        }
    }
    free(g);
    twin_free(&tw);
}

static const combo combos[] = {
    {"static scale + clip + tensor norms, adam, path C", CLG_ADAM, PATH_C, 5.0f, 0, CLG_NORM_MEAN,
     CLG_LOSS_SCALE_STATIC, 4096.0f, 1, 0},
    {"dynamic scale + clip, adamw, path A", CLG_ADAMW, PATH_A, 5.0f, 0, CLG_NORM_MEAN,
     CLG_LOSS_SCALE_DYNAMIC, 0, 0, 0},
    {"clip norm, sgd, path B", CLG_SGD, PATH_B, 5.0f, 0, CLG_NORM_MEAN, CLG_LOSS_SCALE_NONE, 0, 1,
     0},
    {"clip value + static scale, sgd, path B", CLG_SGD, PATH_B, 0, 0.4f, CLG_NORM_MEAN,
     CLG_LOSS_SCALE_STATIC, 256.0f, 0, 0},
    {"sum mode + clip norm + clip value, adamw, path A", CLG_ADAMW, PATH_A, 20.0f, 1.0f,
     CLG_NORM_SUM, CLG_LOSS_SCALE_NONE, 0, 1, 0},
    {"sum mode + dynamic scale, lion, path C", CLG_LION, PATH_C, 0, 0, CLG_NORM_SUM,
     CLG_LOSS_SCALE_DYNAMIC, 0, 0, 0},
    /* issue 35: --metrics's norm, nothing else (no clip, no skipping) */
    {"grad norm alone, adamw, path C", CLG_ADAMW, PATH_C, 0, 0, CLG_NORM_MEAN,
     CLG_LOSS_SCALE_NONE, 0, 0, 1},
    {"grad norm alone, sgd, path B", CLG_SGD, PATH_B, 0, 0, CLG_NORM_MEAN, CLG_LOSS_SCALE_NONE, 0,
     0, 1},
};

static void test_combo(void **state)
{
    run_combo(tu_ctx, (const combo *)*state);
}

/* Chunked arenas (4 KiB buffers) on path B with clipping: the acc views
 * of different chunks and the norm across chunks. */
static void test_chunked_path_b(void **state)
{
    (void)state;
    clg_context *small = tu_context_with_max_alloc("4096");
    static const combo cb = {"chunked clip, adam, path B", CLG_ADAM, PATH_B, 5.0f, 0, CLG_NORM_MEAN,
                             CLG_LOSS_SCALE_NONE,          0,        1, 0};
    run_combo(small, &cb);
    static const combo cc = {"chunked static scale + clip, sgd, path C",
                             CLG_SGD,
                             PATH_C,
                             5.0f,
                             0.5f,
                             CLG_NORM_MEAN,
                             CLG_LOSS_SCALE_STATIC,
                             1024.0f,
                             1,
                             0};
    run_combo(small, &cc);
    clg_context_destroy(small);
}

/* Noise scale with a loss scale: the estimates are of unscaled gradients. */
static void test_noise_with_loss_scale(void **state)
{
    (void)state;
    clg_config cfg = tu_config(CLG_SGD, 1e-3f, 4);
    cfg.noise_scale = 1;
    cfg.noise_scale_ema = 0.8f;
    cfg.loss_scale = CLG_LOSS_SCALE_STATIC;
    cfg.loss_scale_init = 512.0f;
    cfg.fuse_last_micro_step = 0;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 132);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned u = 0; u < 6; u++)
        for (unsigned m = 0; m < 4; m++) {
            twin_gradient(&tw, u, m, g);
            for (size_t i = 0; i < tw.n; i++)
                g[i] *= 512.0f;
            twin_micro(&tw, g, 2.0f + (float)m);
        }
    clg_stats s = twin_stats(&tw);
    /* differences of fp32 norms: see test_noise.c */
    if (!(fabs(s.noise_trace - tw.ref.noise_tr) <= 1e-3 * fabs(tw.ref.noise_tr)) ||
        !(fabs(s.noise_g2 - tw.ref.noise_g2) <= 1e-3 * fabs(tw.ref.noise_g2)))
        fail_msg("noise with loss scale: trace %.6g |G|^2 %.6g, reference %.6g %.6g",
                 (double)s.noise_trace, (double)s.noise_g2, tw.ref.noise_tr, tw.ref.noise_g2);
    twin_check(&tw, REF_RTOL, REF_ATOL, "noise with loss scale");
    free(g);
    twin_free(&tw);
}

/* Skip-micro with a partial window: clg_flush after two finite and one
 * skipped micro-step of k = 4 divides by the two finite weights. Also
 * with the fused-path setting left on (the default). */
static void test_skip_micro_flush(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        clg_config cfg = tu_config(CLG_ADAM, 1e-2f, 4);
        cfg.nonfinite = CLG_NONFINITE_SKIP_MICRO;
        cfg.fuse_last_micro_step = fuse;
        twin tw;
        twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 133);
        float *g = tu_xmalloc(tw.n * sizeof(float));
        for (unsigned c = 0; c < 3; c++) {
            for (unsigned m = 0; m < 3; m++) {
                twin_gradient(&tw, c, m, g);
                if (m == c)
                    g[c * 100] = NAN;
                assert_int_equal(twin_micro(&tw, g, 1.0f + (float)m), 0);
            }
            OK(clg_flush(tw.model, NULL));
            assert_int_equal(ref_flush(&tw.ref), 0);
            twin_check(&tw, REF_RTOL, REF_ATOL,
                       fuse ? "skip micro + flush (fuse on)" : "skip micro + flush");
        }
        /* a full cycle with a skipped step in it */
        for (unsigned m = 0; m < 5; m++) {
            twin_gradient(&tw, 7, m, g);
            if ((int)m == 3 - fuse)
                g[0] = INFINITY;
            assert_int_equal(twin_micro(&tw, g, 1.0f), m == 4);
        }
        twin_check(&tw, REF_RTOL, REF_ATOL, "skip micro full cycle");
        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.updates, 4);
        assert_int_equal(s.skipped_micro_steps, 4);
        free(g);
        twin_free(&tw);
    }
}

int main(void)
{
    enum { NC = sizeof combos / sizeof combos[0] };
    struct CMUnitTest tests[NC + 3];
    for (size_t i = 0; i < NC; i++) {
        struct CMUnitTest t = {combos[i].name, test_combo, NULL, NULL, (void *)&combos[i]};
        tests[i] = t;
    }
    struct CMUnitTest extra[3] = {
        cmocka_unit_test(test_chunked_path_b),
        cmocka_unit_test(test_noise_with_loss_scale),
        cmocka_unit_test(test_skip_micro_flush),
    };
    memcpy(tests + NC, extra, sizeof extra);
    return _cmocka_run_group_tests("combos", tests, NC + 3, tu_group_setup, tu_group_teardown);
}
