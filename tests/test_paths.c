/* test_paths.c - the three gradient paths give the same update, and
 * accumulation over micro-batches is the same as one big batch:
 *  - path A (external grads, fuse_last_micro_step = 0), path B (the caller
 *    writes w*g into the accumulator views honoring clg_accum_beta) and
 *    path C (fused last micro-step) against each other and the reference;
 *  - linear least squares: k micro-batches of b rows vs one batch of k*b
 *    rows, accumulated gradient and parameters. */
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

enum { K = 4, UPDATES = 7 };
static const float weights[K] = {1.0f, 0.25f, 3.0f, 1.5f};

static void run_paths(clg_optimizer opt, float lr, int tight)
{
    clg_config cfg = tu_config(opt, lr, K);
    twin tw[3]; /* A, B, C */
    const char *names[3] = {"path A", "path B", "path C"};
    for (int p = 0; p < 3; p++) {
        cfg.fuse_last_micro_step = p == 2;
        twin_init(&tw[p], tu_ctx, &cfg, &twin_default_layout, 42);
    }
    size_t n = tw[0].n;
    float *g = tu_xmalloc(n * sizeof(float));
    float *got[3];
    for (int p = 0; p < 3; p++)
        got[p] = tu_xmalloc(n * sizeof(float));
    double *bound = calloc(n, sizeof(double));
    double *abs_sum = calloc(n, sizeof(double));
    const double u = ldexp(1.0, -24);

    for (unsigned up = 0; up < UPDATES; up++) {
        memset(abs_sum, 0, n * sizeof(double));
        for (unsigned m = 0; m < K; m++) {
            twin_gradient(&tw[0], up, m, g);
            for (size_t i = 0; i < n; i++)
                abs_sum[i] += fabs((double)weights[m] * g[i]);
            assert_int_equal(twin_micro(&tw[0], g, weights[m]), m == K - 1);
            assert_int_equal(twin_micro_b(&tw[1], g, weights[m]), m == K - 1);
            assert_int_equal(twin_micro(&tw[2], g, weights[m]), m == K - 1);
        }
        for (int p = 0; p < 3; p++) {
            char what[64];
            snprintf(what, sizeof what, "%s update %u", names[p], up + 1);
            twin_check(&tw[p], REF_RTOL, REF_ATOL, what);
            OK(clg_model_download_params(tw[p].model, CLG_ALL_TENSORS, got[p], (size_t)clg_model_param_count(tw[p].model), NULL));
        }
        if (!tight)
            continue;
        /* Plain SGD: the paths differ only in the rounding of the sum
         * Σ w_i g_i (order, fma or not) and of the final p - lr*ĝ. Each
         * of two sums is within (K+1)·u·Σ|w g| of the exact one, so the
         * normalized gradients differ by at most 2(K+1)·u·Σ|w g|/W; p's
         * rounding adds one ulp (2u|p|). The bound accumulates over
         * updates. */
        double W = 0;
        for (unsigned m = 0; m < K; m++)
            W += weights[m];
        for (size_t i = 0; i < n; i++)
            bound[i] +=
                lr * 2.0 * (K + 1) * u * abs_sum[i] / W + 2.0 * u * fabs(tw[0].ref.p[i]) * 2.0;
        for (int a = 0; a < 3; a++) {
            for (int b = a + 1; b < 3; b++) {
                for (size_t i = 0; i < n; i++) {
                    double d = fabs((double)got[a][i] - got[b][i]);
                    if (d > bound[i])
                        fail_msg("%s vs %s, update %u, param %zu: %.9g vs %.9g, "
                                 "|diff| %.3g > bound %.3g",
                                 names[a], names[b], up + 1, i, (double)got[a][i],
                                 (double)got[b][i], d, bound[i]);
                }
            }
        }
    }
    for (int p = 0; p < 3; p++) {
        free(got[p]);
        twin_free(&tw[p]);
    }
    free(bound);
    free(abs_sum);
    free(g);
}

static void test_paths_sgd(void **state)
{
    (void)state;
    run_paths(CLG_SGD, 0.5f, 1);
}

static void test_paths_adamw(void **state)
{
    (void)state;
    /* AdamW divides by sqrt(v): the paths' rounding differences are
     * checked through the reference at PyTorch's fp32 tolerances */
    run_paths(CLG_ADAMW, 1e-2f, 0);
}

/* ---------------------------------------------------- least squares */

enum { D = 17, B_ROWS = 8 };

typedef struct lsq {
    double x[K * B_ROWS][D];
    double y[K * B_ROWS];
} lsq;

static void lsq_make(lsq *ls)
{
    tu_rng r = tu_rng_seed(99);
    for (int i = 0; i < K * B_ROWS; i++) {
        for (int j = 0; j < D; j++)
            ls->x[i][j] = tu_rng_uniform(&r, -1, 1) * (1.0 + j % 3);
        ls->y[i] = tu_rng_uniform(&r, -3, 3);
    }
}

/* Gradient of the mean over rows [r0, r1) of ½(x·θ + b - y)², params
 * theta[D] then b, written into g[D + 1]. */
static void lsq_grad(const lsq *ls, const float *params, int r0, int r1, double *g)
{
    memset(g, 0, (D + 1) * sizeof(double));
    for (int i = r0; i < r1; i++) {
        double res = params[D] - ls->y[i];
        for (int j = 0; j < D; j++)
            res += ls->x[i][j] * params[j];
        for (int j = 0; j < D; j++)
            g[j] += ls->x[i][j] * res;
        g[D] += res;
    }
    for (int j = 0; j <= D; j++)
        g[j] /= (r1 - r0);
}

static double rel_l2(const float *got, const double *want, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return sqrt(num / den);
}

static void test_least_squares(void **state)
{
    (void)state;
    static lsq ls;
    lsq_make(&ls);
    static const size_t counts[] = {D, 1};
    const twin_layout lay = TWIN_ONE_GROUP(counts);

    clg_config cfg = clg_config_init(CLG_ADAM);
    cfg.lr = 0.05f;
    cfg.fuse_last_micro_step = 0; /* path A: the accumulator keeps the sum */
    twin many, one;
    cfg.accum_steps = K;
    twin_init(&many, tu_ctx, &cfg, &lay, 3);
    cfg.accum_steps = 1;
    twin_init(&one, tu_ctx, &cfg, &lay, 3);

    float pm[D + 1], po[D + 1], gf[D + 1], acc[D + 1], norm_acc[D + 1];
    double g[D + 1], full[D + 1];
    for (int up = 0; up < 3; up++) {
        OK(clg_model_download_params(many.model, CLG_ALL_TENSORS, pm, (size_t)clg_model_param_count(many.model), NULL));
        OK(clg_model_download_params(one.model, CLG_ALL_TENSORS, po, (size_t)clg_model_param_count(one.model), NULL));
        /* k micro-batches of b rows, each its mean gradient with weight b */
        for (int m = 0; m < K; m++) {
            lsq_grad(&ls, pm, m * B_ROWS, (m + 1) * B_ROWS, g);
            for (int j = 0; j <= D; j++)
                gf[j] = (float)g[j];
            twin_micro(&many, gf, (float)B_ROWS);
        }
        /* one batch of k*b rows with weight k*b */
        lsq_grad(&ls, po, 0, K * B_ROWS, g);
        for (int j = 0; j <= D; j++)
            gf[j] = (float)g[j];
        assert_int_equal(twin_micro(&one, gf, (float)(K * B_ROWS)), 1);

        /* accumulated gradient / Σw vs the full-batch gradient at the
         * same params, in double: fp32 inputs and 4 fp32 additions give a
         * few 1e-7 relative error; the bound is 1e-6 */
        lsq_grad(&ls, pm, 0, K * B_ROWS, full);
        OK(clg_model_download_acc(many.model, CLG_ALL_TENSORS, acc, (size_t)clg_model_param_count(many.model), NULL));
        for (int j = 0; j <= D; j++)
            norm_acc[j] = acc[j] / (float)(K * B_ROWS);
        double e = rel_l2(norm_acc, full, D + 1);
        if (!(e <= 1e-6))
            fail_msg("update %d: k micro-batches: relative L2 error %.3g > 1e-6", up + 1, e);
        lsq_grad(&ls, po, 0, K * B_ROWS, full);
        OK(clg_model_download_acc(one.model, CLG_ALL_TENSORS, acc, (size_t)clg_model_param_count(one.model), NULL));
        for (int j = 0; j <= D; j++)
            norm_acc[j] = acc[j] / (float)(K * B_ROWS);
        e = rel_l2(norm_acc, full, D + 1);
        if (!(e <= 1e-6))
            fail_msg("update %d: one batch: relative L2 error %.3g > 1e-6", up + 1, e);

        /* same params after the update (PyTorch fp32 tolerances) */
        twin_check(&many, REF_RTOL, REF_ATOL, "k micro-batches vs reference");
        twin_check(&one, REF_RTOL, REF_ATOL, "one batch vs reference");
        OK(clg_model_download_params(many.model, CLG_ALL_TENSORS, pm, (size_t)clg_model_param_count(many.model), NULL));
        OK(clg_model_download_params(one.model, CLG_ALL_TENSORS, po, (size_t)clg_model_param_count(one.model), NULL));
        double pod[D + 1];
        for (int j = 0; j <= D; j++)
            pod[j] = po[j];
        assert_int_equal(
            ref_compare("k micro-batches vs one batch", pm, pod, D + 1, REF_RTOL, REF_ATOL), 0);
    }
    twin_free(&many);
    twin_free(&one);
}

TU_MAIN("paths", tu_group_setup, tu_group_teardown, cmocka_unit_test(test_paths_sgd),
        cmocka_unit_test(test_paths_adamw), cmocka_unit_test(test_least_squares))
