/* test_gpt_loss.c - the GPT task's loss kernels (gpt.cl through
 * gpt_kernels.h: the fused cross-entropy and the loss sum) against the
 * double reference (ref_gpt.c), on the default device; and a determinism
 * check of every kernel that reduces (two runs, bit-identical outputs).
 * Shapes: a tiny one and two real ones (T 131 and 37, N in the thousands
 * for the rows). Every test runs three times: with the row kernels'
 * work-group per row (GPU), 4 items per row and item per row (CPU). The
 * attention's kernels are test_gpt_flash.c's.
 *
 * Tolerances: a loss within abs 1e-5 / rel 1e-5 (log of a sum of 256
 * terms); the loss sum within rel 1e-5 of N terms. */
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
    unsigned B, T, NH, HS;
} shape;
static const shape SHAPES[] = {{2, 5, 2, 4}, {6, 131, 4, 24}, {40, 37, 3, 64}};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0], V = 256 };

/* Logits in [-5, 5], one row with large values (100: exp overflows
 * without the max subtracted). */
static float *xent_logits(size_t N, uint64_t seed)
{
    float *l = gt_uniform(N * V, seed, -5, 5);
    for (unsigned j = 0; j < V; j += 3)
        l[(N / 2) * V + j] = 100.0f + (float)j / V;
    return l;
}

static void test_xent_and_loss_sum(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned B = SHAPES[s].B * (s ? 4 : 1), T = SHAPES[s].T; /* N = 3144 and 5920 */
        size_t N = (size_t)B * T;
        gt_tokens tk = gt_make_tokens(B, T, 100 + s);
        float *logits = xent_logits(N, 101 + s), *got = gt_uniform(N * V, 0, 0, 0);
        double *rl = gt_doubles(N), *rd = gt_doubles(N * V);
        float scale_host[3] = {0.0f, 0.0f, 8.0f};
        clg_view loss_scale = gt_view(scale_host, 3, 1);
        loss_scale.offset += 2, loss_scale.count = 1; /* the 8 */
        clg_view vl = gt_view(logits, N * V, 3), loss = gt_view(NULL, N, 2);
        /* forward only: the logits stay, no loss scale */
        assert_int_equal(gpt_xent(&gk, &tk.t, T, 0, B * T, V, V, vl, loss, 0, 1.0f,
                                  (clg_view){NULL, 0, 0}, (clg_view){NULL, 0, 0}),
                         CL_SUCCESS);
        ref_gpt_xent((unsigned)N, V, logits, tk.target, 1.0, rl, NULL);
        float *gl = gt_uniform(N, 0, 0, 0);
        gt_read(loss, gl);
        gt_close(gl, rl, N, 1e-5, 1e-5, "row loss");
        gt_read(vl, got);
        assert_memory_equal(got, logits, N * V * sizeof *got);
        /* backward into a separate buffer without a loss scale, then in
         * place with dscale 0.25 and the device's scale 8 */
        clg_view d = gt_view(NULL, N * V, 4);
        assert_int_equal(gpt_xent(&gk, &tk.t, T, 0, B * T, V, V, vl, loss, 1, 0.5f,
                                  (clg_view){NULL, 0, 0}, d),
                         CL_SUCCESS);
        ref_gpt_xent((unsigned)N, V, logits, tk.target, 0.5, rl, rd);
        gt_read(d, got);
        gt_close(got, rd, N * V, 1e-7, 1e-5, "dlogits");
        assert_int_equal(
            gpt_xent(&gk, &tk.t, T, 0, B * T, V, V, vl, loss, 1, 0.25f, loss_scale, vl),
            CL_SUCCESS);
        ref_gpt_xent((unsigned)N, V, logits, tk.target, 0.25 * 8.0, rl, rd);
        gt_read(vl, got);
        gt_close(got, rd, N * V, 1e-6, 1e-5, "dlogits in place, scaled");
        gt_read(loss, gl);
        gt_close(gl, rl, N, 1e-5, 1e-5, "row loss (backward)");

        /* the loss sum, twice, on top of what sums held */
        float sums_host[2] = {1.5f, 2.0f};
        cl_mem sums = tu_buffer_from(sums_host, sizeof sums_host);
        cl_mem scratch = gt_scratch(gpt_scratch_floats((unsigned)N, 8) * sizeof(float));
        for (int r = 0; r < 2; r++)
            assert_int_equal(gpt_loss_sum(&gk, (cl_uint)N, loss, sums, scratch), CL_SUCCESS);
        tu_buffer_read(sums, 0, sums_host, sizeof sums_host);
        double total = 0;
        for (size_t i = 0; i < N; i++)
            total += gl[i];
        double rs[2] = {1.5 + 2 * total, 2.0 + 2.0 * (double)N};
        gt_close(sums_host, rs, 2, 0, 1e-5, "loss sums");
        assert_true(sums_host[1] == (float)rs[1]);
        clReleaseMemObject(sums), clReleaseMemObject(scratch);
        gt_free(loss_scale), gt_free(vl), gt_free(loss), gt_free(d);
        free(logits), free(got), free(rl), free(rd), free(gl);
        gt_free_tokens(&tk);
    }
}

/* Runs of the reducing kernels on the same inputs give the same bits. */
typedef struct det_run {
    float *out[7];
    size_t n[7];
} det_run;

static void run_reductions(det_run *r)
{
    const unsigned B = 24, T = 131, C = 96, N = B * T;
    const size_t NC = (size_t)N * C;
    gt_tokens tk = gt_make_tokens(B, T, 200);
    float *x = gt_uniform(NC, 201, -1, 1), *w = gt_uniform(C, 202, 0.5f, 1.5f),
          *logits = xent_logits(N, 204);
    clg_view vx = gt_view(x, NC, 1), vw = gt_view(w, C, 2), out = gt_view(NULL, NC, 3),
             mean = gt_view(NULL, N, 4), rstd = gt_view(NULL, N, 5), dinp = gt_view(x, NC, 6),
             dw = gt_view(NULL, C, 7), db = gt_view(NULL, C, 8), te = gt_view(NULL, 256 * C, 1),
             pe = gt_view(NULL, T * C, 2), vl = gt_view(logits, (size_t)N * V, 5),
             loss = gt_view(NULL, N, 6);
    cl_mem scratch = gt_scratch(gpt_scratch_floats(N, C) * sizeof(float));
    cl_mem sort = gt_scratch(gpt_sort_ints(N, V) * sizeof(int));
    float zero[2] = {0, 0};
    cl_mem sums = tu_buffer_from(zero, sizeof zero);
    assert_int_equal(gpt_layernorm(&gk, N, C, vx, vw, vw, out, mean, rstd), CL_SUCCESS);
    assert_int_equal(
        gpt_layernorm_backward(&gk, N, C, vx, vx, vw, mean, rstd, dinp, dw, db, 0.0f, scratch),
        CL_SUCCESS);
    assert_int_equal(gpt_embed_backward(&gk, &tk.t, B, T, C, vx, sort, te, 0.0f, pe, 0.0f, scratch),
                     CL_SUCCESS);
    assert_int_equal(
        gpt_xent(&gk, &tk.t, T, 0, B * T, V, V, vl, loss, 1, 1.0f, (clg_view){NULL, 0, 0}, vl),
        CL_SUCCESS);
    assert_int_equal(gpt_loss_sum(&gk, N, loss, sums, scratch), CL_SUCCESS);
    clg_view keep[] = {out, dinp, dw, db, te, pe, vl};
    for (int i = 0; i < 7; i++) {
        r->n[i] = keep[i].count;
        r->out[i] = gt_uniform(keep[i].count, 0, 0, 0);
        gt_read(keep[i], r->out[i]);
    }
    float s[2];
    tu_buffer_read(sums, 0, s, sizeof s);
    memcpy(r->out[0], s, sizeof s); /* the sums ride on the first output */
    clg_view all[] = {vx, vw, out, mean, rstd, dinp, dw, db, te, pe, vl, loss};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
    clReleaseMemObject(scratch), clReleaseMemObject(sort), clReleaseMemObject(sums);
    free(x), free(w), free(logits);
    gt_free_tokens(&tk);
}

static void test_determinism(void **state)
{
    (void)state;
    det_run a, b;
    run_reductions(&a);
    run_reductions(&b);
    for (int i = 0; i < 7; i++) {
        assert_memory_equal(a.out[i], b.out[i], a.n[i] * sizeof(float));
        free(a.out[i]), free(b.out[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xent_and_loss_sum),
        cmocka_unit_test(test_determinism),
    };
    return gt_run_both(tests, sizeof tests / sizeof *tests);
}
