/* test_gpt_kernels.c - the GPT task's embedding, LayerNorm, bias, GELU and
 * residual kernels (tools/train/tasks/gpt/gpt.cl through gpt_kernels.h) against the double
 * reference (ref_gpt.c), on the default device (PoCL here): a tiny shape
 * and three real ones (several work-groups, T 131, 37 and 256, C 96, 192
 * and 384, N = B * T in the thousands), views at odd offsets with guards around
 * them, beta 0 (over NaN), 1 and 0.5 for the accumulating launchers.
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
static const float BETAS[] = {0.0f, 1.0f, 0.5f};

static double sum_tol(size_t terms) { return 1e-6 + 2e-7 * (double)terms; }

static void test_embed(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned B = SHAPES[s].B, T = SHAPES[s].T, C = SHAPES[s].C;
        size_t N = (size_t)B * T;
        gt_tokens tk = gt_make_tokens(B, T, 10 + s);
        float *wte = gt_uniform(256 * C, 1, -1, 1), *wpe = gt_uniform(T * C, 2, -1, 1);
        float *got = gt_uniform(N * C, 3, 0, 0);
        double *ref = gt_doubles(N * C);
        clg_view vwte = gt_view(wte, 256 * C, 3), vwpe = gt_view(wpe, T * C, 1),
                 out = gt_view(NULL, N * C, 7);
        assert_int_equal(gpt_embed(&gk, &tk.t, B, T, C, vwte, vwpe, out), CL_SUCCESS);
        gt_read(out, got);
        ref_gpt_embed(tk.tok, B, T, C, wte, wpe, ref);
        gt_close(got, ref, N * C, 0, 1e-7, "embed");
        gt_free(vwte), gt_free(vwpe), gt_free(out);
        free(wte), free(wpe), free(got), free(ref);
        gt_free_tokens(&tk);
    }
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
        cl_mem sort = gt_scratch(gpt_sort_ints((unsigned)N) * sizeof(int));
        cl_mem scratch = gt_scratch(gpt_scratch_floats((unsigned)N, C) * sizeof(float));
        for (int bi = 0; bi < 3; bi++) {
            float beta = BETAS[bi];
            /* beta 0 over NaN: the old value must not be read */
            /* beta 0 over NaN: the old value must not be read; wpe takes the
             * next beta, so that each applies its own */
            float beta_pe = BETAS[(bi + 1) % 3];
            clg_view te = gt_view(beta != 0.0f ? old_te : NULL, 256 * C, 2),
                     pe = gt_view(beta_pe != 0.0f ? old_pe : NULL, T * C, 9);
            assert_int_equal(gpt_embed_backward(&gk, &tk.t, B, T, C, vd, sort, te, beta, pe,
                                                beta_pe, scratch),
                             CL_SUCCESS);
            gt_read(te, got_te);
            gt_read(pe, got_pe);
            ref_gpt_embed_backward(tk.tok, B, T, C, dout, ref_te, ref_pe);
            gt_apply_beta(ref_te, old_te, 256 * C, beta);
            gt_apply_beta(ref_pe, old_pe, T * C, beta_pe);
            gt_close(got_te, ref_te, 256 * C, sum_tol(N), 1e-5, "dwte");
            gt_close(got_pe, ref_pe, T * C, sum_tol(B), 1e-5, "dwpe");
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
        for (int bi = 0; bi < 3; bi++) {
            float beta = BETAS[bi];
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
            gt_close(gw, ew, C, sum_tol(N), 1e-5, "layernorm dw");
            gt_close(gb, eb, C, sum_tol(N), 1e-5, "layernorm db");
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
            for (int bi = 0; bi < 3; bi++) {
                clg_view db = gt_view(BETAS[bi] != 0.0f ? db0 : NULL, OC, 5);
                assert_int_equal(gpt_bias_grad(&gk, N, OC, vy, db, BETAS[bi], scratch),
                                 CL_SUCCESS);
                gt_read(db, got);
                ref_gpt_colsum(N, OC, yb, rs);
                gt_apply_beta(rs, db0, OC, BETAS[bi]);
                gt_close(got, rs, OC, sum_tol(N), 1e-5, "bias grad");
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
    };
    return gt_run_both(tests, sizeof tests / sizeof *tests);
}
