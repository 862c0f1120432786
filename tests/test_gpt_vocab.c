/* test_gpt_vocab.c - the GPT kernels over a vocabulary of tokens
 * (tools/train/tasks/gpt/gpt.cl through gpt_kernels.h, program built for
 * ushort tokens) against the double reference (ref_gpt.c): the embedding,
 * its backward (the radix sort: two passes of 8 bits, many blocks of 256
 * positions) and the fused cross-entropy over logit rows padded to a
 * multiple of 64, at GPT-2's V = 50257 (rows of 50304, ids up to 0xc450)
 * with odd T, and at V = 300 (one item per row, rows of 320).
 * The padding holds NaN and must stay as it was (never read, never
 * written); a launch's kernel count is fixed; two runs give the same bits.
 *
 * Tolerances as test_gpt_kernels.c's and test_gpt_loss.c's: a float sum of
 * n terms within 1e-6 + 2e-7 n (abs) + 1e-5 (rel); the embedding one
 * rounding (rel 1e-7); a row's loss within abs 1e-5 / rel 1e-5 (the log of
 * a sum of V terms); dlogits within abs 1e-7 / rel 1e-5. */
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

typedef struct vshape {
    unsigned B, T, C, V;
} vshape;
/* N = 111 (one block of the sort), 5240 (21 blocks), 777 with one item
 * per row (V 300) */
static const vshape SHAPES[] = {{3, 37, 48, 50257}, {40, 131, 16, 50257}, {7, 111, 8, 300}};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

static gpt_kernels kv; /* built for the shape's V */

/* row_items 0: the device's default (gpt_kernels_init) */
static void build_rows(unsigned V, unsigned row_items)
{
    gpt_kernels_release(&kv);
    clg_status st = row_items ? gpt_kernels_init_rows(tu_ctx, &kv, row_items, V)
                              : gpt_kernels_init(tu_ctx, &kv, V);
    if (st != CLG_SUCCESS)
        fail_msg("gpt_kernels_init (V %u): %s", V, clg_last_error(tu_ctx));
    assert_int_equal(kv.vocab, V);
}

static void build(unsigned V)
{
    build_rows(V, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    gpt_kernels k;
    assert_int_equal(gpt_kernels_init(tu_ctx, &k, 0), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_kernels_init(tu_ctx, &k, GPT_KERNELS_VOCAB_MAX + 1),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_token_bytes(256), 1);
    assert_int_equal(gpt_token_bytes(257), 2);
    /* no item loops more than GPT_ITEM_LOOPS times over its share of a row */
    assert_int_equal(gpt_row_items_min(256), 1);
    assert_int_equal(gpt_row_items_min(10922), 1);
    assert_int_equal(gpt_row_items_min(10923), 2);
    assert_int_equal(gpt_row_items_min(50257), 8);
    assert_int_equal(gpt_row_items_min(65535), 8);
    build_rows(50257, 1);
    assert_int_equal(kv.row_items, 8);
    /* the sort's scratch: 5 N + V + 257 at most, as the plan reserves */
    for (unsigned N = 1; N < 3000; N += 97)
        assert_true(gpt_sort_ints(N, 50257) <= 5 * (size_t)N + 50257 + 257);
    build(300);
    gt_tokens tk = gt_make_tokens_v(2, 5, 300, 1);
    clg_view wte = gt_view(NULL, 299 * 4, 0), wpe = gt_view(NULL, 5 * 4, 0),
             out = gt_view(NULL, 10 * 4, 0), logits = gt_view(NULL, 10 * 320, 0),
             loss = gt_view(NULL, 10, 0), none = {NULL, 0, 0};
    /* wte one row short; V below the program's; ld below V; logits short */
    assert_int_equal(gpt_embed(&kv, &tk.t, 2, 5, 4, wte, wpe, out), CL_INVALID_VALUE);
    assert_int_equal(gpt_xent(&kv, &tk.t, 5, 0, 10, 299, 320, logits, loss, 0, 1, none, none),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_xent(&kv, &tk.t, 5, 0, 10, 300, 299, logits, loss, 0, 1, none, none),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_xent(&kv, &tk.t, 6, 0, 12, 300, 320, logits, loss, 0, 1, none, none),
                     CL_INVALID_VALUE);
    gt_free(wte), gt_free(wpe), gt_free(out), gt_free(logits), gt_free(loss);
    gt_free_tokens(&tk);
}

static void test_embed(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        build(SHAPES[s].V);
        gt_check_embed(&kv, SHAPES[s].B, SHAPES[s].T, SHAPES[s].C, 10 + s);
    }
}

/* One embedding backward into fresh views of old_te / old_pe (beta 0:
 * NaN there); the gradients into got_te / got_pe. */
static void embed_backward(const gt_tokens *tk, unsigned B, unsigned T, unsigned C, unsigned V,
                           clg_view dout, cl_mem sort, const float *old_te, const float *old_pe,
                           float beta, float *got_te, float *got_pe)
{
    size_t VC = (size_t)V * C;
    clg_view te = gt_view(beta != 0.0f ? old_te : NULL, VC, 2),
             pe = gt_view(old_pe, (size_t)T * C, 9);
    uint64_t before = gpt_kernels_launches(&kv);
    assert_int_equal(gpt_embed_backward(&kv, &tk->t, B, T, C, dout, sort, te, beta, pe, 1.0f, NULL),
                     CL_SUCCESS);
    /* two radix passes of three launches, the starts, wte's and wpe's sums */
    assert_int_equal(gpt_kernels_launches(&kv) - before, 3 * (V > 256 ? 2 : 1) + 3);
    gt_read(te, got_te);
    gt_read(pe, got_pe);
    gt_free(te), gt_free(pe);
}

static void test_embed_backward(void **state)
{
    (void)state;
    for (int s = 0; s < N_SHAPES; s++) {
        unsigned B = SHAPES[s].B, T = SHAPES[s].T, C = SHAPES[s].C, V = SHAPES[s].V;
        size_t N = (size_t)B * T, VC = (size_t)V * C;
        build(V);
        gt_tokens tk = gt_make_tokens_v(B, T, V, 20 + s);
        float *dout = gt_uniform(N * C, 4, -1, 1);
        float *old_te = gt_uniform(VC, 5, -1, 1), *old_pe = gt_uniform(T * C, 6, -1, 1);
        float *got_te = gt_uniform(VC, 0, 0, 0), *got_pe = gt_uniform(T * C, 0, 0, 0);
        float *again = gt_uniform(VC, 0, 0, 0);
        double *ref_te = gt_doubles(VC), *ref_pe = gt_doubles(T * C);
        clg_view vd = gt_view(dout, N * C, 5);
        cl_mem sort = gt_scratch(gpt_sort_ints((unsigned)N, V) * sizeof(int));
        ref_gpt_embed_backward(tk.tok, B, T, C, V, dout, ref_te, ref_pe);
        gt_apply_beta(ref_pe, old_pe, T * C, 1.0f);
        for (int bi = 0; bi < GT_N_BETAS; bi++) {
            float beta = gt_betas[bi];
            embed_backward(&tk, B, T, C, V, vd, sort, old_te, old_pe, beta, got_te, got_pe);
            double *want = gt_doubles(VC);
            memcpy(want, ref_te, VC * sizeof *want);
            gt_apply_beta(want, old_te, VC, beta);
            gt_close(got_te, want, VC, gt_sum_tol(N), 1e-5, "dwte");
            gt_close(got_pe, ref_pe, T * C, gt_sum_tol(B), 1e-5, "dwpe");
            free(want);
            /* beta 1: a row no position holds is left as it was, bit for bit */
            for (size_t i = 0; beta == 1.0f && i < VC; i++)
                if (ref_te[i] == 0.0 && memcmp(&got_te[i], &old_te[i], sizeof *got_te))
                    fail_msg("dwte[%zu] of an absent token changed: %.9g, was %.9g", i, got_te[i],
                             old_te[i]);
        }
        /* the same bits again (the order of each token's sum is fixed) */
        embed_backward(&tk, B, T, C, V, vd, sort, old_te, old_pe, 0.5f, again, got_pe);
        assert_memory_equal(again, got_te, VC * sizeof *again);
        gt_free(vd);
        clReleaseMemObject(sort);
        free(dout), free(old_te), free(old_pe), free(got_te), free(got_pe), free(again);
        free(ref_te), free(ref_pe);
        gt_free_tokens(&tk);
    }
}

/* Logits of N rows of ld floats: [-5, 5] in the V columns (one row with
 * large values, 100: exp overflows without the max subtracted), NaN in
 * the padding; and the V columns packed (the reference's). */
static float *padded_logits(size_t N, unsigned V, unsigned ld, uint64_t seed, float **packed)
{
    float *p = gt_uniform(N * V, seed, -5, 5);
    for (unsigned j = 0; j < V; j += 3)
        p[(N / 2) * V + j] = 100.0f + (float)j / V;
    float *l = gt_uniform(N * ld, 0, 0, 0);
    for (size_t n = 0; n < N; n++)
        for (unsigned j = 0; j < ld; j++)
            l[n * ld + j] = j < V ? p[n * V + j] : NAN;
    *packed = p;
    return l;
}

/* The padding of got (N rows of ld) is NaN still: never written. */
static void padding_untouched(const float *got, size_t N, unsigned V, unsigned ld)
{
    for (size_t n = 0; n < N; n++)
        for (unsigned j = V; j < ld; j++)
            if (!isnan(got[n * ld + j]))
                fail_msg("padding [%zu, %u] written: %.9g", n, j, got[n * ld + j]);
}

/* Each shape with the device's row kernels, the first also with a
 * work-group per row (a GPU's). */
static void test_xent_padded(void **state)
{
    (void)state;
    for (int run = 0; run <= N_SHAPES; run++) {
        int s = run == N_SHAPES ? 0 : run;
        unsigned B = SHAPES[s].B, T = SHAPES[s].T, V = SHAPES[s].V;
        unsigned ld = (V + 63) / 64 * 64;
        if (s == 1)
            B = 4; /* N = 524: the logits of 40 x 131 rows would be 1 GB */
        size_t N = (size_t)B * T;
        build_rows(V, run == N_SHAPES ? 64 : 0);
        gt_tokens tk = gt_make_tokens_v(B, T, V, 100 + s);
        float *packed, *logits = padded_logits(N, V, ld, 101 + s, &packed);
        float *got = gt_uniform(N * ld, 0, 0, 0), *gl = gt_uniform(N, 0, 0, 0);
        double *rl = gt_doubles(N), *rd = gt_doubles(N * V);
        clg_view vl = gt_view(logits, N * ld, 3), loss = gt_view(NULL, N, 2), none = {NULL, 0, 0};
        /* forward: the losses, the logits left as they were */
        assert_int_equal(
            gpt_xent(&kv, &tk.t, T, 0, (cl_uint)N, V, ld, vl, loss, 0, 1.0f, none, none),
            CL_SUCCESS);
        ref_gpt_xent((unsigned)N, V, packed, tk.target, 1.0, rl, NULL);
        gt_read(loss, gl);
        gt_close(gl, rl, N, 1e-5, 1e-5, "row loss");
        gt_read(vl, got);
        assert_memory_equal(got, logits, N * ld * sizeof *got);
        /* backward in place, dscale 0.25 */
        assert_int_equal(
            gpt_xent(&kv, &tk.t, T, 0, (cl_uint)N, V, ld, vl, loss, 1, 0.25f, none, vl),
            CL_SUCCESS);
        ref_gpt_xent((unsigned)N, V, packed, tk.target, 0.25, rl, rd);
        gt_read(vl, got);
        padding_untouched(got, N, V, ld);
        for (size_t n = 0; n < N; n++)
            gt_close(got + n * ld, rd + n * V, V, 1e-7, 1e-5, "dlogits");
        gt_read(loss, gl);
        gt_close(gl, rl, N, 1e-5, 1e-5, "row loss (backward)");
        gt_free(vl), gt_free(loss);
        free(logits), free(packed), free(got), free(gl), free(rl), free(rd);
        gt_free_tokens(&tk);
    }
}

static int teardown(void **state)
{
    gpt_kernels_release(&kv);
    return tu_group_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_embed),
        cmocka_unit_test(test_embed_backward),
        cmocka_unit_test(test_xent_padded),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, teardown);
}
