/* test_gpt_kernels.c - the GPT task's embedding, LayerNorm, bias, GELU and
 * residual kernels (tools/train/tasks/gpt/gpt.cl through gpt_kernels.h) against the double
 * reference (ref_gpt.c), on the default device (PoCL here): a tiny shape
 * and three real ones (several work-groups, T 131, 37 and 256, C 96, 192
 * and 384, N = B * T in the thousands), views at odd offsets with guards around
 * them, beta 0 (over NaN), 1 and 0.5 for the accumulating launchers.
 * The fusions (gpt_residual_layernorm, gpt_bias_gelu,
 * gpt_gelu_backward_bias_grad) also at C 768 (OC 3072) with an odd N of
 * 393, against the reference and bitwise against the launches they
 * replace, with their launch counts (gpt_kernels_launches) fixed.
 * The attention and loss kernels: test_gpt_attention.c.
 *
 * Tolerances: a float sum of n terms of size ~1 against the exact one is
 * within 1e-6 + 2e-7 n (abs, n the terms per output) + 1e-5 (rel); a
 * single rounding (embedding, bias add, residual) within rel 1e-7;
 * LayerNorm and GELU within abs 1e-5 / rel 1e-5 (a few float ops per
 * element on values of size ~1), LayerNorm's dinp within abs 1e-5 + 1e-6
 * rstd. Every test runs three times: with the row kernels' work-group
 * per row (GPU), 4 items per row and item per row (CPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_testutil.h"
#include "ref_gpt.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    unsigned B, T, C, NH;
} shape;
static const shape SHAPES[] = {
    {2, 5, 8, 2}, {24, 131, 96, 4}, {40, 37, 192, 3}, {8, 256, 384, 6}};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

/* got and want hold the same bits (a fused kernel against the launches it
 * replaces, on the same build). */
static void same_bits(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got))
            fail_msg("%s[%zu]: got %.9g, want %.9g: not the same bits", what, i, got[i],
                     want[i]);
}

/* Runs call and checks that it succeeded with exactly `launches` kernels. */
#define LAUNCHES(launches, call)                                                                  \
    do {                                                                                          \
        uint64_t before_ = gpt_kernels_launches(&gk);                                             \
        assert_int_equal((call), CL_SUCCESS);                                                     \
        assert_int_equal(gpt_kernels_launches(&gk) - before_, (launches));                        \
    } while (0)

static void test_embed(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++)
        gt_check_embed(&gk, SHAPES[s].B, SHAPES[s].T, SHAPES[s].C, 10 + s);
}

static void test_embed_backward(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned B = SHAPES[s].B, T = SHAPES[s].T, C = SHAPES[s].C;
        size_t N = (size_t)B * T;
        gt_tokens tk = gt_make_tokens(B, T, 20 + s);
        float *dout = gt_uniform(N * C, 4, -1, 1);
        float *old_te = gt_uniform(256 * C, 5, -1, 1), *old_pe = gt_uniform(T * C, 6, -1, 1);
        float *got_te = gt_uniform(256 * C, 0, 0, 0), *got_pe = gt_uniform(T * C, 0, 0, 0);
        double *ref_te = gt_doubles(256 * C), *ref_pe = gt_doubles(T * C);
        clg_view vd = gt_view(dout, N * C, 5);
        cl_mem sort = gt_scratch(gpt_sort_ints((unsigned)N, 256) * sizeof(int));
        cl_mem scratch = gt_scratch(gpt_scratch_floats((unsigned)N, C) * sizeof(float));
        for (int bi = 0; bi < GT_N_BETAS; bi++) {
            float beta = gt_betas[bi];
            /* beta 0 over NaN: the old value must not be read */
            /* beta 0 over NaN: the old value must not be read; wpe takes the
             * next beta, so that each applies its own */
            float beta_pe = gt_betas[(bi + 1) % GT_N_BETAS];
            clg_view te = gt_view(beta != 0.0f ? old_te : NULL, 256 * C, 2),
                     pe = gt_view(beta_pe != 0.0f ? old_pe : NULL, T * C, 9);
            assert_int_equal(gpt_embed_backward(&gk, &tk.t, B, T, C, vd, sort, te, beta, pe,
                                                beta_pe, scratch),
                             CL_SUCCESS);
            gt_read(te, got_te);
            gt_read(pe, got_pe);
            ref_gpt_embed_backward(tk.tok, B, T, C, 256, dout, ref_te, ref_pe);
            gt_apply_beta(ref_te, old_te, 256 * C, beta);
            gt_apply_beta(ref_pe, old_pe, T * C, beta_pe);
            gt_close(got_te, ref_te, 256 * C, gt_sum_tol(N), 1e-5, "dwte");
            gt_close(got_pe, ref_pe, T * C, gt_sum_tol(B), 1e-5, "dwpe");
            gt_free(te), gt_free(pe);
        }
        gt_free(vd);
        clReleaseMemObject(sort), clReleaseMemObject(scratch);
        free(dout), free(old_te), free(old_pe), free(got_te), free(got_pe);
        free(ref_te), free(ref_pe);
        gt_free_tokens(&tk);
    }
}

/* Rows of varied statistics: plain, offset by 10 (a one-pass variance,
 * E[x^2] - mean^2, loses digits there), and scaled by 1e-3 (variance
 * 3e-7, where eps dominates rstd). */
static float *ln_input(size_t N, unsigned C, uint64_t seed)
{
    float *x = gt_uniform(N * C, seed, -1, 1);
    for (size_t n = 0; n < N; n++)
        for (unsigned c = 0; c < C; c++) {
            float *v = &x[n * C + c];
            *v = n % 3 == 1 ? *v + 10.0f : n % 3 == 2 ? *v * 1e-3f : *v;
        }
    return x;
}

static void test_layernorm(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned N = SHAPES[s].B * SHAPES[s].T, C = SHAPES[s].C;
        float *x = ln_input(N, C, 30 + s), *w = gt_uniform(C, 31, 0.5f, 1.5f),
              *b = gt_uniform(C, 32, -1, 1);
        float *got = gt_uniform((size_t)N * C, 0, 0, 0), *gm = gt_uniform(N, 0, 0, 0),
              *gr = gt_uniform(N, 0, 0, 0);
        double *ref = gt_doubles((size_t)N * C), *rm = gt_doubles(N), *rr = gt_doubles(N);
        clg_view vx = gt_view(x, (size_t)N * C, 1), vw = gt_view(w, C, 2), vb = gt_view(b, C, 3),
                 out = gt_view(NULL, (size_t)N * C, 4), mean = gt_view(NULL, N, 5),
                 rstd = gt_view(NULL, N, 6);
        assert_int_equal(gpt_layernorm(&gk, N, C, vx, vw, vb, out, mean, rstd), CL_SUCCESS);
        gt_read(out, got), gt_read(mean, gm), gt_read(rstd, gr);
        ref_gpt_layernorm(N, C, x, w, b, ref, rm, rr);
        gt_close(got, ref, (size_t)N * C, 1e-5, 1e-5, "layernorm out");
        gt_close(gm, rm, N, 1e-6, 1e-6, "layernorm mean");
        gt_close(gr, rr, N, 0, 1e-5, "layernorm rstd");
        gt_free(vx), gt_free(vw), gt_free(vb), gt_free(out), gt_free(mean), gt_free(rstd);
        free(x), free(w), free(b), free(got), free(gm), free(gr), free(ref), free(rm), free(rr);
    }
}

static void test_layernorm_backward(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned N = SHAPES[s].B * SHAPES[s].T, C = SHAPES[s].C;
        size_t NC = (size_t)N * C;
        float *x = ln_input(N, C, 40 + s), *w = gt_uniform(C, 41, 0.5f, 1.5f),
              *dout = gt_uniform(NC, 42, -1, 1), *dinp0 = gt_uniform(NC, 43, -1, 1),
              *dw0 = gt_uniform(C, 44, -1, 1), *db0 = gt_uniform(C, 45, -1, 1);
        float *got = gt_uniform(NC, 0, 0, 0), *gw = gt_uniform(C, 0, 0, 0),
              *gb = gt_uniform(C, 0, 0, 0);
        double *rd = gt_doubles(NC), *rw = gt_doubles(C), *rb = gt_doubles(C);
        double *ro = gt_doubles(NC), *rm = gt_doubles(N), *rr = gt_doubles(N);
        /* mean and rstd as the forward kernel leaves them */
        ref_gpt_layernorm(N, C, x, w, w, ro, rm, rr);
        float *fm = gt_uniform(N, 0, 0, 0), *fr = gt_uniform(N, 0, 0, 0);
        for (unsigned n = 0; n < N; n++)
            fm[n] = (float)rm[n], fr[n] = (float)rr[n];
        ref_gpt_layernorm_backward(N, C, dout, x, w, rd, rw, rb);
        for (size_t i = 0; i < NC; i++)
            rd[i] += dinp0[i]; /* dinp accumulates */
        clg_view vx = gt_view(x, NC, 1), vw = gt_view(w, C, 2), vd = gt_view(dout, NC, 3),
                 vm = gt_view(fm, N, 4), vr = gt_view(fr, N, 5);
        cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
        for (int bi = 0; bi < GT_N_BETAS; bi++) {
            float beta = gt_betas[bi];
            clg_view di = gt_view(dinp0, NC, 6), dw = gt_view(beta != 0.0f ? dw0 : NULL, C, 7),
                     db = gt_view(beta != 0.0f ? db0 : NULL, C, 8);
            assert_int_equal(
                gpt_layernorm_backward(&gk, N, C, vd, vx, vw, vm, vr, di, dw, db, beta, scratch),
                CL_SUCCESS);
            gt_read(di, got), gt_read(dw, gw), gt_read(db, gb);
            double *ew = gt_doubles(C), *eb = gt_doubles(C);
            memcpy(ew, rw, C * sizeof *ew), memcpy(eb, rb, C * sizeof *eb);
            gt_apply_beta(ew, dw0, C, beta), gt_apply_beta(eb, db0, C, beta);
            /* dinp = rstd (a difference of terms of size ~1): its error
             * scales with rstd (311 in the rows of variance 3e-7) */
            for (size_t i = 0; i < NC; i++)
                gt_close(&got[i], &rd[i], 1, 1e-5 + 1e-6 * rr[i / C], 1e-5, "layernorm dinp");
            gt_close(gw, ew, C, gt_sum_tol(N), 1e-5, "layernorm dw");
            gt_close(gb, eb, C, gt_sum_tol(N), 1e-5, "layernorm db");
            /* db sums dout as gpt_bias_grad does (blocks of rows, then the
             * blocks, in order): the same bits */
            clg_view db2 = gt_view(beta != 0.0f ? db0 : NULL, C, 9);
            float *gb2 = gt_uniform(C, 0, 0, 0);
            assert_int_equal(gpt_bias_grad(&gk, N, C, vd, db2, beta, scratch), CL_SUCCESS);
            gt_read(db2, gb2);
            same_bits(gb, gb2, C, "layernorm db against gpt_bias_grad");
            gt_free(db2);
            free(gb2);
            free(ew), free(eb);
            gt_free(di), gt_free(dw), gt_free(db);
        }
        gt_free(vx), gt_free(vw), gt_free(vd), gt_free(vm), gt_free(vr);
        clReleaseMemObject(scratch);
        free(x), free(w), free(dout), free(dinp0), free(dw0), free(db0), free(got), free(gw);
        free(gb), free(rd), free(rw), free(rb), free(ro), free(rm), free(rr), free(fm), free(fr);
    }
}

/* Bias add and bias gradient over OC = C (c_proj), 3C (c_attn) and 4C
 * (c_fc, the widest that gpt_scratch_floats covers). */
static void test_bias(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned N = SHAPES[s].B * SHAPES[s].T, C = SHAPES[s].C;
        cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
        for (unsigned mult = 1; mult <= 4; mult += mult == 1 ? 2 : 1) {
            unsigned OC = mult * C;
            size_t n = (size_t)N * OC;
            float *y = gt_uniform(n, 50 + mult, -1, 1), *bias = gt_uniform(OC, 51, -1, 1),
                  *db0 = gt_uniform(OC, 52, -1, 1), *yb = gt_uniform(n, 0, 0, 0),
                  *got = gt_uniform(OC, 0, 0, 0);
            double *ref = gt_doubles(n), *rs = gt_doubles(OC);
            clg_view vy = gt_view(y, n, 3), vb = gt_view(bias, OC, 1);
            assert_int_equal(gpt_bias_add(&gk, N, OC, vy, vb), CL_SUCCESS);
            gt_read(vy, yb);
            ref_gpt_bias_add(N, OC, y, bias, ref);
            gt_close(yb, ref, n, 0, 1e-7, "bias add");
            /* the gradient of what vy holds now */
            for (int bi = 0; bi < GT_N_BETAS; bi++) {
                clg_view db = gt_view(gt_betas[bi] != 0.0f ? db0 : NULL, OC, 5);
                assert_int_equal(gpt_bias_grad(&gk, N, OC, vy, db, gt_betas[bi], scratch),
                                 CL_SUCCESS);
                gt_read(db, got);
                ref_gpt_colsum(N, OC, yb, rs);
                gt_apply_beta(rs, db0, OC, gt_betas[bi]);
                gt_close(got, rs, OC, gt_sum_tol(N), 1e-5, "bias grad");
                gt_free(db);
            }
            gt_free(vy), gt_free(vb);
            free(y), free(bias), free(db0), free(yb), free(got), free(ref), free(rs);
        }
        clReleaseMemObject(scratch);
    }
}

static void test_gelu_and_residual(void **state)
{
    (void)state;
    const size_t n = 24 * 131 * 4 * 96 + 3; /* c_fc's output of the first real shape, + 3 */
    float *x = gt_uniform(n, 60, -6, 6), *d = gt_uniform(n, 61, -1, 1);
    float *got = gt_uniform(n, 0, 0, 0);
    double *ref = gt_doubles(n);
    clg_view vx = gt_view(x, n, 1), out = gt_view(NULL, n, 2);
    assert_int_equal(gpt_gelu(&gk, (cl_uint)n, vx, out), CL_SUCCESS);
    gt_read(out, got);
    for (size_t i = 0; i < n; i++)
        ref[i] = ref_gpt_gelu(x[i]);
    gt_close(got, ref, n, 1e-6, 1e-5, "gelu");
    for (size_t i = 0; i < n; i++)
        ref[i] = ref_gpt_gelu_grad(x[i]) * d[i];
    /* separate, then in place (dinp is dout) */
    clg_view vd = gt_view(d, n, 3), di = gt_view(NULL, n, 4);
    assert_int_equal(gpt_gelu_backward(&gk, (cl_uint)n, vx, vd, di), CL_SUCCESS);
    gt_read(di, got);
    gt_close(got, ref, n, 1e-6, 1e-5, "gelu backward");
    assert_int_equal(gpt_gelu_backward(&gk, (cl_uint)n, vx, vd, vd), CL_SUCCESS);
    gt_read(vd, got);
    gt_close(got, ref, n, 1e-6, 1e-5, "gelu backward in place");
    gt_free(vd), gt_free(di), gt_free(out);

    /* residual: separate, out = a, out = b */
    for (size_t i = 0; i < n; i++)
        ref[i] = (double)x[i] + d[i];
    for (int mode = 0; mode < 3; mode++) {
        clg_view a = gt_view(x, n, 5), b = gt_view(d, n, 6), o = gt_view(NULL, n, 7);
        clg_view dst = mode == 0 ? o : mode == 1 ? a : b;
        assert_int_equal(gpt_residual(&gk, (cl_uint)n, a, b, dst), CL_SUCCESS);
        gt_read(dst, got);
        gt_close(got, ref, n, 0, 1e-7, mode == 0 ? "residual" : "residual in place");
        gt_free(a), gt_free(b), gt_free(o);
    }
    gt_free(vx);
    free(x), free(d), free(got), free(ref);
}

/* ------------------------------------------------------------ fusions */

/* The fusions' shapes: N rows of C (OC = 4C for the MLP's): tiny, odd N at
 * GPT-2-small's width, and two of the shapes above. */
typedef struct fshape {
    unsigned N, C;
} fshape;
static const fshape FSHAPES[] = {{10, 8}, {3 * 131, 768}, {24 * 131, 96}, {40 * 37, 192}};
enum { N_FSHAPES = sizeof FSHAPES / sizeof FSHAPES[0] };

/* res = a + (b + bias) and its LayerNorm in one launch, with and without
 * the bias, res apart from a and res = a: against the double reference
 * (res: two roundings of values below 12, abs 1e-6 + rel 1e-7; the
 * LayerNorm of the float res as test_layernorm, the mean within
 * 6 gt_sum_tol(C) / C more: C up to 768 here), and bitwise against
 * gpt_bias_add, gpt_residual and gpt_layernorm (3 launches). */
static void test_residual_layernorm(void **state)
{
    (void)state;
    for (int s = 0; s < N_FSHAPES; s++) {
        unsigned N = FSHAPES[s].N, C = FSHAPES[s].C;
        size_t NC = (size_t)N * C;
        float *a = ln_input(N, C, 70 + s), *b = gt_uniform(NC, 71, -1, 1),
              *bias = gt_uniform(C, 72, -1, 1), *w = gt_uniform(C, 73, 0.5f, 1.5f),
              *lnb = gt_uniform(C, 74, -1, 1);
        float *res = gt_uniform(NC, 0, 0, 0), *ln = gt_uniform(NC, 0, 0, 0),
              *gm = gt_uniform(N, 0, 0, 0), *gr = gt_uniform(N, 0, 0, 0);
        float *res2 = gt_uniform(NC, 0, 0, 0), *ln2 = gt_uniform(NC, 0, 0, 0),
              *gm2 = gt_uniform(N, 0, 0, 0), *gr2 = gt_uniform(N, 0, 0, 0);
        double *rres = gt_doubles(NC), *rln = gt_doubles(NC), *rm = gt_doubles(N),
               *rr = gt_doubles(N);
        clg_view vw = gt_view(w, C, 2), vlnb = gt_view(lnb, C, 3);
        for (int mode = 0; mode < 4; mode++) {
            int with_bias = mode < 2, in_place = mode % 2;
            clg_view va = gt_view(a, NC, 1), vb = gt_view(b, NC, 5),
                     vbias = with_bias ? gt_view(bias, C, 7) : (clg_view){NULL, 0, 0},
                     vres = in_place ? va : gt_view(NULL, NC, 4), out = gt_view(NULL, NC, 6),
                     mean = gt_view(NULL, N, 8), rstd = gt_view(NULL, N, 9);
            LAUNCHES(1, gpt_residual_layernorm(&gk, N, C, va, vb, vbias, vres, vw, vlnb, out,
                                               mean, rstd));
            gt_read(vres, res), gt_read(out, ln), gt_read(mean, gm), gt_read(rstd, gr);
            ref_gpt_residual_bias(N, C, a, b, with_bias ? bias : NULL, rres);
            gt_close(res, rres, NC, 1e-6, 1e-7, "residual_layernorm res");
            ref_gpt_layernorm(N, C, res, w, lnb, rln, rm, rr);
            gt_close(ln, rln, NC, 1e-5, 1e-5, "residual_layernorm out");
            /* the mean: x0 + a float sum of C terms below 6 in size, / C */
            gt_close(gm, rm, N, 1e-6 + 6.0 * gt_sum_tol(C) / C, 1e-6, "residual_layernorm mean");
            gt_close(gr, rr, N, 0, 1e-5, "residual_layernorm rstd");

            /* the launches it replaces, on fresh copies of the inputs */
            clg_view ua = gt_view(a, NC, 1), ub = gt_view(b, NC, 2), ures = gt_view(NULL, NC, 3),
                     uout = gt_view(NULL, NC, 4), umean = gt_view(NULL, N, 5),
                     urstd = gt_view(NULL, N, 6);
            if (with_bias)
                LAUNCHES(1, gpt_bias_add(&gk, N, C, ub, vbias));
            LAUNCHES(1, gpt_residual(&gk, (cl_uint)NC, ua, ub, ures));
            LAUNCHES(1, gpt_layernorm(&gk, N, C, ures, vw, vlnb, uout, umean, urstd));
            gt_read(ures, res2), gt_read(uout, ln2), gt_read(umean, gm2), gt_read(urstd, gr2);
            same_bits(res, res2, NC, "residual_layernorm res");
            same_bits(ln, ln2, NC, "residual_layernorm out");
            same_bits(gm, gm2, N, "residual_layernorm mean");
            same_bits(gr, gr2, N, "residual_layernorm rstd");
            /* b is read, never written */
            gt_read(vb, res2);
            same_bits(res2, b, NC, "residual_layernorm b");
            gt_free(va), gt_free(vb), gt_free(out), gt_free(mean), gt_free(rstd);
            if (with_bias)
                gt_free(vbias);
            if (!in_place)
                gt_free(vres);
            gt_free(ua), gt_free(ub), gt_free(ures), gt_free(uout), gt_free(umean);
            gt_free(urstd);
        }
        gt_free(vw), gt_free(vlnb);
        free(a), free(b), free(bias), free(w), free(lnb), free(res), free(ln), free(gm);
        free(gr), free(res2), free(ln2), free(gm2), free(gr2), free(rres), free(rln), free(rm);
        free(rr);
    }
}

/* c_fc's bias and GELU over OC = 4C in one launch: against the double
 * reference (the bias add: one rounding, rel 1e-7; GELU of the float sum
 * as test_gelu_and_residual) and bitwise against gpt_bias_add, gpt_gelu
 * (2 launches). */
static void test_bias_gelu(void **state)
{
    (void)state;
    for (int s = 0; s < N_FSHAPES; s++) {
        unsigned N = FSHAPES[s].N, OC = 4 * FSHAPES[s].C;
        size_t n = (size_t)N * OC;
        float *x = gt_uniform(n, 80 + s, -5, 5), *bias = gt_uniform(OC, 81, -1, 1);
        float *pre = gt_uniform(n, 0, 0, 0), *act = gt_uniform(n, 0, 0, 0),
              *pre2 = gt_uniform(n, 0, 0, 0), *act2 = gt_uniform(n, 0, 0, 0);
        double *ref = gt_doubles(n);
        clg_view vx = gt_view(x, n, 3), vbias = gt_view(bias, OC, 1), out = gt_view(NULL, n, 2);
        LAUNCHES(1, gpt_bias_gelu(&gk, N, OC, vx, vbias, out));
        gt_read(vx, pre), gt_read(out, act);
        ref_gpt_bias_add(N, OC, x, bias, ref);
        gt_close(pre, ref, n, 0, 1e-7, "bias_gelu inout");
        for (size_t i = 0; i < n; i++)
            ref[i] = ref_gpt_gelu(pre[i]);
        gt_close(act, ref, n, 1e-6, 1e-5, "bias_gelu out");

        clg_view ux = gt_view(x, n, 4), uout = gt_view(NULL, n, 5);
        LAUNCHES(1, gpt_bias_add(&gk, N, OC, ux, vbias));
        LAUNCHES(1, gpt_gelu(&gk, (cl_uint)n, ux, uout));
        gt_read(ux, pre2), gt_read(uout, act2);
        same_bits(pre, pre2, n, "bias_gelu inout");
        same_bits(act, act2, n, "bias_gelu out");
        gt_free(vx), gt_free(vbias), gt_free(out), gt_free(ux), gt_free(uout);
        free(x), free(bias), free(pre), free(act), free(pre2), free(act2), free(ref);
    }
}

/* GELU's backward and c_fc's bias gradient over OC = 4C in two launches,
 * dfch apart from dout and in place, beta 0 (over NaN), 1 and 0.5: against
 * the double reference (dfch as test_gelu_and_residual; db: the sum of the
 * float dfch, as test_bias) and bitwise against gpt_gelu_backward,
 * gpt_bias_grad (3 launches). */
static void test_gelu_backward_bias_grad(void **state)
{
    (void)state;
    for (int s = 0; s < N_FSHAPES; s++) {
        unsigned N = FSHAPES[s].N, OC = 4 * FSHAPES[s].C;
        size_t n = (size_t)N * OC;
        float *x = gt_uniform(n, 90 + s, -6, 6), *d = gt_uniform(n, 91, -1, 1),
              *db0 = gt_uniform(OC, 92, -1, 1);
        float *dx = gt_uniform(n, 0, 0, 0), *gdb = gt_uniform(OC, 0, 0, 0),
              *dx2 = gt_uniform(n, 0, 0, 0), *gdb2 = gt_uniform(OC, 0, 0, 0);
        double *ref = gt_doubles(n), *rdb = gt_doubles(OC);
        for (size_t i = 0; i < n; i++)
            ref[i] = ref_gpt_gelu_grad(x[i]) * d[i];
        cl_mem scratch = gt_scratch(gpt_scratch_floats(N, FSHAPES[s].C) * sizeof(float));
        clg_view vx = gt_view(x, n, 1);
        for (int mode = 0; mode < 6; mode++) {
            float beta = gt_betas[mode % 3];
            int in_place = mode >= 3;
            clg_view vd = gt_view(d, n, 2), vdx = in_place ? vd : gt_view(NULL, n, 3),
                     db = gt_view(beta != 0.0f ? db0 : NULL, OC, 4);
            LAUNCHES(2, gpt_gelu_backward_bias_grad(&gk, N, OC, vx, vd, vdx, db, beta, scratch));
            gt_read(vdx, dx), gt_read(db, gdb);
            gt_close(dx, ref, n, 1e-6, 1e-5, "gelu_backward_bias_grad dfch");
            ref_gpt_colsum(N, OC, dx, rdb);
            gt_apply_beta(rdb, db0, OC, beta);
            gt_close(gdb, rdb, OC, gt_sum_tol(N), 1e-5, "gelu_backward_bias_grad db");

            clg_view ud = gt_view(d, n, 5), udx = gt_view(NULL, n, 6),
                     udb = gt_view(beta != 0.0f ? db0 : NULL, OC, 7);
            LAUNCHES(1, gpt_gelu_backward(&gk, (cl_uint)n, vx, ud, udx));
            LAUNCHES(2, gpt_bias_grad(&gk, N, OC, udx, udb, beta, scratch));
            gt_read(udx, dx2), gt_read(udb, gdb2);
            same_bits(dx, dx2, n, "gelu_backward_bias_grad dfch");
            same_bits(gdb, gdb2, OC, "gelu_backward_bias_grad db");
            gt_free(vd), gt_free(db), gt_free(ud), gt_free(udx), gt_free(udb);
            if (!in_place)
                gt_free(vdx);
        }
        gt_free(vx);
        clReleaseMemObject(scratch);
        free(x), free(d), free(db0), free(dx), free(gdb), free(dx2), free(gdb2), free(ref);
        free(rdb);
    }
}

/* gpt_bias_grad_pair: the backward's pairs (mlp.c_proj's C columns with
 * c_fc's 4C, through gpt_gelu_backward_partial; attn.c_proj's C with
 * c_attn's 3C) give gpt_bias_grad's bits for each, in 1 launch for the
 * partials of each and 1 for both last passes; a pair that does not fit
 * its rows, or a split past them, is refused launching nothing. */
static void test_bias_grad_pair(void **state)
{
    (void)state;
    for (int s = 0; s < N_FSHAPES; s++) {
        unsigned N = FSHAPES[s].N, C = FSHAPES[s].C;
        const unsigned wide[2] = {4 * C, 3 * C}; /* the pair's second: c_fc, c_attn */
        cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
        for (int pair = 0; pair < 2; pair++)
            for (int b = 0; b < 3; b++) {
                unsigned OC2 = wide[pair], ld = C + OC2;
                float beta = gt_betas[b];
                float *d1 = gt_uniform((size_t)N * C, 200 + s, -1, 1),
                      *d2 = gt_uniform((size_t)N * OC2, 201 + s, -3, 3),
                      *x = gt_uniform((size_t)N * OC2, 202 + s, -6, 6),
                      *db0 = gt_uniform(ld, 203, -1, 1);
                float *got = gt_uniform(ld, 0, 0, 0), *want = gt_uniform(ld, 0, 0, 0),
                      *dx = gt_uniform((size_t)N * OC2, 0, 0, 0),
                      *dx2 = gt_uniform((size_t)N * OC2, 0, 0, 0);
                clg_view v1 = gt_view(d1, (size_t)N * C, 1), v2 = gt_view(d2, (size_t)N * OC2, 2),
                         vx = gt_view(x, (size_t)N * OC2, 3),
                         vdx = gt_view(NULL, (size_t)N * OC2, 4),
                         db1 = gt_view(beta != 0.0f ? db0 : NULL, C, 5),
                         db2 = gt_view(beta != 0.0f ? db0 + C : NULL, OC2, 6);
                LAUNCHES(1, gpt_bias_grad_partial(&gk, N, C, v1, scratch, ld, 0));
                if (pair == 0)
                    LAUNCHES(1, gpt_gelu_backward_partial(&gk, N, OC2, vx, v2, vdx, scratch, ld,
                                                          C));
                else
                    LAUNCHES(1, gpt_bias_grad_partial(&gk, N, OC2, v2, scratch, ld, C));
                LAUNCHES(1, gpt_bias_grad_pair(&gk, N, ld, C, scratch, db1, db2, beta));
                gt_read(db1, got), gt_read(db2, got + C);
                if (pair == 0)
                    gt_read(vdx, dx);
                /* each alone, as before the pairs */
                clg_view u1 = gt_view(beta != 0.0f ? db0 : NULL, C, 7),
                         u2 = gt_view(beta != 0.0f ? db0 + C : NULL, OC2, 8),
                         udx = gt_view(NULL, (size_t)N * OC2, 9);
                assert_int_equal(gpt_bias_grad(&gk, N, C, v1, u1, beta, scratch), CL_SUCCESS);
                if (pair == 0)
                    assert_int_equal(gpt_gelu_backward_bias_grad(&gk, N, OC2, vx, v2, udx, u2,
                                                                 beta, scratch),
                                     CL_SUCCESS);
                else
                    assert_int_equal(gpt_bias_grad(&gk, N, OC2, v2, u2, beta, scratch),
                                     CL_SUCCESS);
                gt_read(u1, want), gt_read(u2, want + C);
                same_bits(got, want, ld, pair == 0 ? "mlp pair db" : "attention pair db");
                if (pair == 0) {
                    gt_read(udx, dx2);
                    same_bits(dx, dx2, (size_t)N * OC2, "mlp pair dfch");
                }
                clg_view all[] = {v1, v2, vx, vdx, db1, db2, u1, u2, udx};
                for (size_t i = 0; i < sizeof all / sizeof *all; i++)
                    gt_free(all[i]);
                free(d1), free(d2), free(x), free(db0), free(got), free(want), free(dx);
                free(dx2);
            }
        /* refusals: columns past the rows, a split past them */
        clg_view d = gt_view(NULL, (size_t)N * C, 0), db = gt_view(NULL, 2 * C, 0);
        uint64_t before = gpt_kernels_launches(&gk);
        assert_int_equal(gpt_bias_grad_partial(&gk, N, C, d, scratch, 2 * C, C + 1),
                         CL_INVALID_VALUE);
        assert_int_equal(gpt_gelu_backward_partial(&gk, N, C, d, d, db, scratch, C, 1),
                         CL_INVALID_VALUE);
        assert_int_equal(gpt_bias_grad_pair(&gk, N, 2 * C, 2 * C + 1, scratch, db, db, 0.0f),
                         CL_INVALID_VALUE);
        assert_int_equal(gpt_kernels_launches(&gk), before);
        gt_free(d), gt_free(db);
        clReleaseMemObject(scratch);
    }
}

/* The column sums' launches: gpt_bias_grad 2, gpt_layernorm_backward 2
 * (dinp and the partials of dw and db in one launch, dw's and db's last
 * pass in one: the same sums in the same order as its 4 launches before,
 * checked against the reference in test_layernorm_backward). */
static void test_launch_counts(void **state)
{
    (void)state;
    unsigned N = 37, C = 24;
    size_t NC = (size_t)N * C;
    float *x = gt_uniform(NC, 100, -1, 1);
    clg_view vx = gt_view(x, NC, 1), vd = gt_view(x, NC, 2), di = gt_view(x, NC, 3),
             w = gt_view(x, C, 4), dw = gt_view(NULL, C, 5), db = gt_view(NULL, C, 6),
             mean = gt_view(x, N, 7), rstd = gt_view(x, N, 8);
    cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
    LAUNCHES(2, gpt_bias_grad(&gk, N, C, vd, db, 0.0f, scratch));
    LAUNCHES(2, gpt_layernorm_backward(&gk, N, C, vd, vx, w, mean, rstd, di, dw, db, 0.0f,
                                       scratch));
    /* dinp over dout or inp is refused, launching nothing */
    uint64_t before = gpt_kernels_launches(&gk);
    assert_int_equal(gpt_layernorm_backward(&gk, N, C, vd, vx, w, mean, rstd, vd, dw, db, 0.0f,
                                            scratch),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_layernorm_backward(&gk, N, C, vd, vx, w, mean, rstd, vx, dw, db, 0.0f,
                                            scratch),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_kernels_launches(&gk), before);
    clg_view all[] = {vx, vd, di, w, dw, db, mean, rstd};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
    clReleaseMemObject(scratch);
    free(x);
}

/* Views shorter than the shapes need are refused before any launch. */
static void test_short_views(void **state)
{
    (void)state;
    clg_view a = gt_view(NULL, 10, 0), b = gt_view(NULL, 9, 0);
    assert_int_equal(gpt_residual(&gk, 10, a, b, a), CL_INVALID_VALUE);
    assert_int_equal(gpt_gelu(&gk, 10, a, b), CL_INVALID_VALUE);
    assert_int_equal(gpt_bias_add(&gk, 2, 5, a, (clg_view){a.mem, 0, 4}), CL_INVALID_VALUE);
    assert_int_equal(gpt_layernorm(&gk, 2, 5, a, a, a, a, a, (clg_view){NULL, 0, 2}),
                     CL_INVALID_VALUE);
    gt_free(a), gt_free(b);
}

/* The fused launchers refuse short views and the overlaps their in-place
 * rules exclude, launching nothing. */
static void test_fusion_refusals(void **state)
{
    (void)state;
    enum { N = 3, C = 4, NC = N * C };
    clg_view big = gt_view(NULL, 8 * NC, 0), none = {NULL, 0, 0};
    cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
    /* views of big: [0, NC), [NC, 2 NC), ...; `shifted` overlaps the first two */
    clg_view v[8];
    for (int i = 0; i < 8; i++)
        v[i] = (clg_view){big.mem, (size_t)i * NC, NC};
    clg_view shifted = {big.mem, 1, NC}, w = {big.mem, 6 * NC, C}, lnb = {big.mem, 6 * NC + C, C},
             stats = {big.mem, 7 * NC, N}, stats2 = {big.mem, 7 * NC + N, N};
    uint64_t before = gpt_kernels_launches(&gk);
    /* short: b, the bias, mean */
    assert_int_equal(gpt_residual_layernorm(&gk, N, C, v[0], (clg_view){big.mem, NC, NC - 1},
                                            none, v[2], w, lnb, v[3], stats, stats2),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_residual_layernorm(&gk, N, C, v[0], v[1], (clg_view){big.mem, 0, C - 1},
                                            v[2], w, lnb, v[3], stats, stats2),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_residual_layernorm(&gk, N, C, v[0], v[1], none, v[2], w, lnb, v[3],
                                            (clg_view){big.mem, 7 * NC, N - 1}, stats2),
                     CL_INVALID_VALUE);
    /* C 0; res partly over a; ln_out over res */
    assert_int_equal(gpt_residual_layernorm(&gk, N, 0, v[0], v[1], none, v[2], w, lnb, v[3],
                                            stats, stats2),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_residual_layernorm(&gk, N, C, v[0], v[1], none, shifted, w, lnb, v[3],
                                            stats, stats2),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_residual_layernorm(&gk, N, C, v[0], v[1], none, v[2], w, lnb, v[2],
                                            stats, stats2),
                     CL_INVALID_VALUE);
    /* gelu_out over inout; a short bias */
    assert_int_equal(gpt_bias_gelu(&gk, N, C, v[0], w, shifted), CL_INVALID_VALUE);
    assert_int_equal(gpt_bias_gelu(&gk, N, C, v[0], (clg_view){big.mem, 6 * NC, C - 1}, v[1]),
                     CL_INVALID_VALUE);
    /* dfch over fch, partly over dout; no scratch; a short db */
    assert_int_equal(gpt_gelu_backward_bias_grad(&gk, N, C, v[0], v[1], v[0], w, 0.0f, scratch),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_gelu_backward_bias_grad(&gk, N, C, v[2], v[0], shifted, w, 0.0f,
                                                 scratch),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_gelu_backward_bias_grad(&gk, N, C, v[0], v[1], v[2], w, 0.0f, NULL),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_gelu_backward_bias_grad(&gk, N, C, v[0], v[1], v[2],
                                                 (clg_view){big.mem, 6 * NC, C - 1}, 0.0f,
                                                 scratch),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_kernels_launches(&gk), before);
    /* the in-place forms the headers allow are taken */
    LAUNCHES(1, gpt_residual_layernorm(&gk, N, C, v[0], v[1], w, v[0], w, lnb, v[3], stats,
                                       stats2));
    LAUNCHES(1, gpt_residual_layernorm(&gk, N, C, v[0], v[1], none, v[1], w, lnb, v[3], stats,
                                       stats2));
    LAUNCHES(2, gpt_gelu_backward_bias_grad(&gk, N, C, v[0], v[1], v[1], w, 0.0f, scratch));
    gt_free(big);
    clReleaseMemObject(scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed),
        cmocka_unit_test(test_embed_backward),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_layernorm_backward),
        cmocka_unit_test(test_bias),
        cmocka_unit_test(test_gelu_and_residual),
        cmocka_unit_test(test_short_views),
        cmocka_unit_test(test_residual_layernorm),
        cmocka_unit_test(test_bias_gelu),
        cmocka_unit_test(test_gelu_backward_bias_grad),
        cmocka_unit_test(test_bias_grad_pair),
        cmocka_unit_test(test_launch_counts),
        cmocka_unit_test(test_fusion_refusals),
    };
    return gt_run_both(tests, sizeof tests / sizeof *tests);
}
