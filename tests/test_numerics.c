/* test_numerics.c - the statistics pass and what it drives: global and
 * per-tensor gradient norms (against the reference, and bit-identical run
 * after run), clipping by norm (including the boundary max_norm == norm)
 * and by value, and the non-finite policies (skip the update, skip the
 * micro-step, error at the next sync). */
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

/* Norms are fp32 sums of ~1000 squares (two-stage reduction): the worst
 * case relative error of a sum of n positive terms is n*u = 1090 * 2^-24
 * = 6.5e-5, halved by the square root, plus the normalization: 4e-5. */
#define NORM_RTOL 4e-5

static void assert_close(const char *what, double got, double want, double rtol)
{
    if (!(fabs(got - want) <= rtol * fabs(want)))
        fail_msg("%s: got %.9g, want %.9g (rtol %g)", what, got, want, rtol);
}

static void run_cycles(twin *tw, unsigned cycles, unsigned k, uint64_t first_cycle)
{
    float *g = tu_xmalloc(tw->n * sizeof(float));
    for (unsigned c = 0; c < cycles; c++) {
        for (unsigned m = 0; m < k; m++) {
            twin_gradient(tw, first_cycle + c, m, g);
            twin_micro(tw, g, 1.0f + 0.5f * (float)m);
        }
    }
    free(g);
}

/* ---------------------------------------------------- clipping */

/* Three micro-steps a cycle, clipped to max_norm, the per-tensor norms on:
 * every norm of the update is computed. */
static clg_config norms_config(clg_optimizer opt, float max_norm)
{
    clg_config cfg = clg_config_init(opt);
    cfg.accum_steps = 3;
    cfg.clip_norm = max_norm;
    cfg.tensor_norms = 1;
    return cfg;
}

static void test_clip_norm(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        /* ‖ĝ‖ is about 25: coefficient about 0.2 */
        clg_config cfg = norms_config(fuse ? CLG_ADAM : CLG_SGD, 5.0f);
        cfg.lr = fuse ? 1e-2f : 0.1f;
        cfg.momentum = 0.9f;
        cfg.fuse_last_micro_step = fuse;
        twin tw;
        twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 51);
        for (unsigned u = 0; u < 4; u++) {
            run_cycles(&tw, 1, 3, u);
            twin_check(&tw, REF_RTOL, REF_ATOL, fuse ? "clip norm adam" : "clip norm sgd");
            clg_stats s = twin_stats(&tw);
            assert_close("grad_norm", s.grad_norm, tw.ref.grad_norm, NORM_RTOL);
            assert_true(tw.ref.clip_coef < 0.5);
            assert_close("clip_coef", s.clip_coef, tw.ref.clip_coef, NORM_RTOL);
            float norms[6];
            OK(clg_model_tensor_norms(tw.model, norms, clg_model_tensor_count(tw.model)));
            for (int t = 0; t < 6; t++)
                assert_close("tensor norm", norms[t], tw.ref.tensor_norm[t], NORM_RTOL);
        }
        twin_free(&tw);
    }
}

/* clip_coef = min(1, max_norm / (norm + 1e-6)) around max_norm == norm,
 * with the norm taken from the double reference: max_norm slightly below
 * it (clips: the coefficient and the params as the reference's), equal to
 * it rounded to fp32 (1 - 1e-6/norm: visibly below 1 for a norm near 1,
 * 1 within fp32 rounding for a large one), and slightly above it (no
 * clipping: the coefficient exactly 1, the params those of the unclipped
 * reference and bit-identical to an unclipped device run).
 *
 * The gradients have 4 significant bits (multiples of grad_value / 8 up to
 * 15 / 8), so their squares and the sum of 100 of them are exact in fp32 in
 * any order: the device's norm is the reference's within its sqrt (3 ulps
 * by the OpenCL spec, 4 allowed), and its coefficient within 4 ulps of 1
 * (2^-22). SGD with lr 1 and no momentum makes p = p0 - coef * g, exact to
 * 1.5 ulps of max(|p|, |g|) (up to 7.5 here): rtol 3e-7 and atol 4e-7 see a
 * coefficient off by 1e-5 (a change of 1e-5 |g| >= 1.25e-6). */
#define BOUNDARY_COEF_TOL 0x1p-22
#define BOUNDARY_NORM_RTOL 0x1p-21
#define BOUNDARY_RTOL 3e-7
#define BOUNDARY_ATOL 4e-7

static const size_t boundary_counts[] = {100};
static const twin_layout boundary_layout = TWIN_ONE_GROUP(boundary_counts);

/* One update with max_norm; returns the device's clip coefficient after
 * checking it and the params against the reference. */
static float boundary_case(const float *g, float max_norm, const char *what, float **params,
                           double *ref_norm)
{
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.lr = 1.0f;
    cfg.clip_norm = max_norm;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &boundary_layout, 61);
    twin_micro(&tw, g, 1.0f);
    clg_stats s = twin_stats(&tw);
    if (!(fabs(s.grad_norm - tw.ref.grad_norm) <= BOUNDARY_NORM_RTOL * tw.ref.grad_norm))
        fail_msg("%s: grad_norm %.9g, reference %.12g (rtol 2^-21)", what, (double)s.grad_norm,
                 tw.ref.grad_norm);
    if (!(fabs(s.clip_coef - tw.ref.clip_coef) <= BOUNDARY_COEF_TOL) || s.clip_coef > 1.0f)
        fail_msg("%s: max_norm %.9g, norm %.12g: clip_coef %.9g, reference %.12g (tol 2^-22, "
                 "never above 1)",
                 what, (double)max_norm, tw.ref.grad_norm, (double)s.clip_coef,
                 tw.ref.clip_coef);
    twin_check(&tw, BOUNDARY_RTOL, BOUNDARY_ATOL, what);
    *params = tu_xmalloc(tw.n * sizeof(float));
    memcpy(*params, tw.host, tw.n * sizeof(float)); /* twin_check downloaded them */
    if (ref_norm)
        *ref_norm = tw.ref.grad_norm;
    twin_free(&tw);
    return s.clip_coef;
}

static void clip_boundary(float grad_value)
{
    float g[100];
    for (int i = 0; i < 100; i++)
        g[i] = grad_value * (1.0f + (float)(i % 8) / 8.0f) * (i % 3 ? 1.0f : -1.0f);

    /* the norm, from the reference of an unclipped run (statistics on,
     * max_norm never reached) */
    float *unclipped;
    double norm = 0;
    float c = boundary_case(g, 1e30f, "boundary: unclipped", &unclipped, &norm);
    assert_true(c == 1.0f);
    assert_true(isfinite(norm) && norm > 0.5);

    /* slightly below: clips by 1 - 1e-4 */
    float *p;
    c = boundary_case(g, (float)(norm * (1.0 - 1e-4)), "boundary: max_norm below the norm", &p,
                      NULL);
    assert_true(c < 1.0f - 5e-5f);
    free(p);

    /* equal (rounded to fp32): 1 - 1e-6/norm */
    c = boundary_case(g, (float)norm, "boundary: max_norm equal to the norm", &p, NULL);
    if (norm < 4.0)
        assert_true(c < 1.0f); /* visibly 1 - 1e-6/norm */
    else
        assert_true(c >= 1.0f - 0x1p-23f); /* 1 within fp32 rounding */
    free(p);

    /* slightly above: max_norm / (norm + 1e-6) > 1 + 5e-6, no clipping */
    c = boundary_case(g, (float)(norm * (1.0 + 1e-5) + 1e-6), "boundary: max_norm above the norm",
                      &p, NULL);
    if (c != 1.0f)
        fail_msg("boundary: max_norm above the norm %.12g: clip_coef %.9g, want exactly 1",
                 norm, (double)c);
    for (int i = 0; i < 100; i++)
        if (memcmp(&p[i], &unclipped[i], sizeof(float)) != 0)
            fail_msg("boundary: max_norm above the norm: param %d is %.9g, %.9g without "
                     "clipping",
                     i, (double)p[i], (double)unclipped[i]);
    free(p);
    free(unclipped);
    print_message("clip boundary at norm %.9g: below, equal and above checked\n", norm);
}

static void test_clip_boundary(void **state)
{
    (void)state;
    clip_boundary(0.125f); /* norm about 1.7 */
    clip_boundary(4.0f);   /* norm about 55 */
}

static void test_clip_value(void **state)
{
    (void)state;
    clg_config cfg = tu_config(CLG_ADAMW, 1e-2f, 2);
    cfg.clip_value = 0.6f; /* |ĝ| is 0..1.5: clamps roughly half the elements */
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 71);
    for (unsigned u = 0; u < 3; u++) {
        run_cycles(&tw, 1, 2, u);
        twin_check(&tw, REF_RTOL, REF_ATOL, "clip value adamw");
    }
    twin_free(&tw);

    /* both: norm first, then value, with SGD so the clamp shows directly */
    cfg = clg_config_init(CLG_SGD);
    cfg.lr = 0.5f;
    cfg.accum_steps = 2;
    cfg.clip_norm = 20.0f;
    cfg.clip_value = 0.5f;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 72);
    for (unsigned u = 0; u < 3; u++) {
        run_cycles(&tw, 1, 2, u);
        twin_check(&tw, REF_RTOL, REF_ATOL, "clip norm + value sgd");
    }
    twin_free(&tw);
}

/* ---------------------------------------------------- determinism */

static void test_norm_determinism(void **state)
{
    (void)state;
    clg_config cfg = norms_config(CLG_ADAM, 1.0f);
    twin a, b;
    twin_init(&a, tu_ctx, &cfg, &twin_default_layout, 81);
    twin_init(&b, tu_ctx, &cfg, &twin_default_layout, 81);
    float na[6], nb[6], n2[6];
    float *g = tu_xmalloc(a.n * sizeof(float));
    for (unsigned m = 0; m < 3; m++) {
        twin_gradient(&a, 0, m, g);
        twin_micro(&a, g, 1.0f);
        twin_micro(&b, g, 1.0f);
    }
    clg_stats sa = twin_stats(&a), sb = twin_stats(&b);
    assert_memory_equal(&sa.grad_norm, &sb.grad_norm, sizeof(float));
    OK(clg_model_tensor_norms(a.model, na, clg_model_tensor_count(a.model)));
    OK(clg_model_tensor_norms(b.model, nb, clg_model_tensor_count(b.model)));
    assert_memory_equal(na, nb, sizeof na);
    /* the same gradients again in the next cycle of a: same bits */
    for (unsigned m = 0; m < 3; m++) {
        twin_gradient(&a, 0, m, g);
        twin_micro(&a, g, 1.0f);
    }
    clg_stats s2 = twin_stats(&a);
    assert_memory_equal(&s2.grad_norm, &sa.grad_norm, sizeof(float));
    OK(clg_model_tensor_norms(a.model, n2, clg_model_tensor_count(a.model)));
    assert_memory_equal(n2, na, sizeof na);
    free(g);
    twin_free(&a);
    twin_free(&b);
}

/* ---------------------------------------------------- non-finite */

static void poison(float *g, size_t n, float v, size_t at)
{
    assert_true(at < n);
    g[at] = v;
}

static void skip_update_case(int path)
{
    clg_config cfg = tu_config(CLG_ADAM, 1e-2f, 3);
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    cfg.fuse_last_micro_step = path == 2;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 91);
    run_cycles(&tw, 2, 3, 0);
    twin_check(&tw, REF_RTOL, REF_ATOL, "before the bad cycle");
    float *snap = twin_snapshot(&tw);
    clg_stats before = twin_stats(&tw);

    /* cycle with a NaN in micro-step 2 and an inf in the last one */
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned m = 0; m < 3; m++) {
        twin_gradient(&tw, 2, m, g);
        if (m == 1)
            poison(g, tw.n, NAN, 500);
        if (m == 2)
            poison(g, tw.n, -INFINITY, tw.n - 1);
        twin_micro(&tw, g, 1.0f);
    }
    twin_assert_unchanged(&tw, snap, "skipped update");
    clg_stats s = twin_stats(&tw);
    assert_int_equal(s.updates, before.updates);
    assert_int_equal(s.skipped_updates, before.skipped_updates + 1);
    assert_int_equal(s.last_nonfinite, 1);

    /* the next clean cycles proceed normally (bias corrections count
     * applied updates only: the reference checks that) */
    run_cycles(&tw, 2, 3, 3);
    twin_check(&tw, REF_RTOL, REF_ATOL, "after the skipped update");
    s = twin_stats(&tw);
    assert_int_equal(s.updates, before.updates + 2);
    assert_int_equal(s.skipped_updates, 1);
    assert_int_equal(s.last_nonfinite, 0);
    assert_int_equal(clg_model_sync(tw.model), CLG_SUCCESS); /* not the error policy */
    free(g);
    free(snap);
    twin_free(&tw);
}

static void test_skip_update(void **state)
{
    (void)state;
    skip_update_case(1); /* path A */
    skip_update_case(2); /* path C */
}

/* Path B: the caller's backward wrote an inf into the accumulator. */
static void test_skip_update_path_b(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.momentum = 0.9f;
    cfg.accum_steps = 1;
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 92);
    run_cycles(&tw, 1, 1, 0);
    float *snap = twin_snapshot(&tw);
    clg_view v;
    OK(clg_model_acc_view(tw.model, 2, &v));
    float bad[37];
    for (int i = 0; i < 37; i++)
        bad[i] = i == 20 ? INFINITY : 1.0f;
    assert_int_equal(clEnqueueWriteBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE,
                                          v.offset * sizeof(float), sizeof bad, bad, 0, NULL, NULL),
                     CL_SUCCESS);
    int updated = 0;
    OK(clg_step(tw.model, NULL, 1.0f, &updated, NULL));
    assert_int_equal(updated, 1);
    twin_assert_unchanged(&tw, snap, "path B skipped update");
    clg_stats s = twin_stats(&tw);
    assert_int_equal(s.updates, 1);
    assert_int_equal(s.skipped_updates, 1);
    free(snap);
    twin_free(&tw);
}

static void test_skip_micro(void **state)
{
    (void)state;
    clg_config cfg = tu_config(CLG_ADAMW, 1e-2f, 3);
    cfg.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    cfg.fuse_last_micro_step = 0; /* path A only */
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 93);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    /* per cycle, which call is poisoned (-1: none); the cycle needs 3
     * finite micro-steps, so a poisoned one costs one more call */
    static const int bad_at[] = {-1, 1, 0, 2, -1};
    unsigned skipped = 0;
    for (unsigned c = 0; c < 5; c++) {
        unsigned calls = bad_at[c] < 0 ? 3 : 4;
        float *snap = twin_snapshot(&tw);
        for (unsigned m = 0; m < calls; m++) {
            twin_gradient(&tw, c, m, g);
            if ((int)m == bad_at[c]) {
                poison(g, tw.n, m % 2 ? NAN : INFINITY, 7 + m);
                skipped++;
            }
            int updated = twin_micro(&tw, g, 1.0f + (float)m);
            assert_int_equal(updated, m == calls - 1);
            if (m + 1 < calls)
                twin_assert_unchanged(&tw, snap, "skip-micro intermediate step");
        }
        free(snap);
        twin_check(&tw, REF_RTOL, REF_ATOL, "skip micro");
        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.updates, c + 1);
        assert_int_equal(s.skipped_micro_steps, skipped);
        assert_int_equal(s.skipped_updates, 0);
    }
    free(g);
    twin_free(&tw);
}

static void test_error_policy(void **state)
{
    (void)state;
    clg_config cfg = tu_config(CLG_SGD, 0.1f, 2);
    cfg.nonfinite = CLG_NONFINITE_ERROR;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 94);
    run_cycles(&tw, 1, 2, 0);
    assert_int_equal(clg_model_sync(tw.model), CLG_SUCCESS);
    float *snap = twin_snapshot(&tw);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned m = 0; m < 2; m++) {
        twin_gradient(&tw, 1, m, g);
        if (m == 0)
            poison(g, tw.n, INFINITY, 0);
        twin_micro(&tw, g, 1.0f);
    }
    clg_status st = clg_model_sync(tw.model);
    if (st != CLG_ERR_NONFINITE)
        fail_msg("sync after an inf cycle: %s, want CLG_ERR_NONFINITE", clg_status_string(st));
    assert_int_equal(clg_model_sync(tw.model), CLG_SUCCESS); /* reported once */
    twin_assert_unchanged(&tw, snap, "error policy: update not applied");
    assert_int_equal(tw.ref.sticky_nonfinite, 1);

    /* a blocking stats call also reports it, once */
    for (unsigned m = 0; m < 2; m++) {
        twin_gradient(&tw, 2, m, g);
        if (m == 1)
            poison(g, tw.n, NAN, 3);
        twin_micro(&tw, g, 1.0f);
    }
    clg_stats s = clg_stats_init();
    assert_int_equal(clg_model_stats(tw.model, 1, &s), CLG_ERR_NONFINITE);
    assert_int_equal(clg_model_sync(tw.model), CLG_SUCCESS);
    s = twin_stats(&tw);
    assert_int_equal(s.skipped_updates, 2);
    assert_int_equal(s.updates, 1);
    /* and training goes on */
    run_cycles(&tw, 1, 2, 3);
    twin_check(&tw, REF_RTOL, REF_ATOL, "error policy, after");
    free(g);
    free(snap);
    twin_free(&tw);
}

TU_MAIN("numerics", tu_group_setup, tu_group_teardown,
        cmocka_unit_test(test_clip_norm),   cmocka_unit_test(test_clip_boundary),
        cmocka_unit_test(test_clip_value),  cmocka_unit_test(test_norm_determinism),
        cmocka_unit_test(test_skip_update), cmocka_unit_test(test_skip_update_path_b),
        cmocka_unit_test(test_skip_micro),  cmocka_unit_test(test_error_policy))
