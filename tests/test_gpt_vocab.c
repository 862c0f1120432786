/* test_gpt_vocab.c - the kernels of a real vocabulary (gpt_vocab.cl
 * through gpt_vocab.h) on the default device, against the double
 * reference (ref_gpt_vocab.c): the embedding of uint16 tokens, the fused
 * classifier at V 50257 (Vp 50304), 300 and 64 with odd T, forward only
 * and in place with dscale and the device's loss scale, chunks of rows
 * bitwise equal to one launch, padding columns that hold huge values and
 * change nothing, targets >= V; the token embedding's gradient with
 * repeated tokens, tokens 0 and V - 1, V 65536 (keys of 16 bits), beta 0
 * (over NaN), 1 (absent rows untouched, bit for bit) and 0.5, and the
 * per-token order of its sums (bitwise the float sum in ascending
 * positions); two runs bit for bit, the second of the other keep_exp;
 * every launcher's refusals. The group
 * runs for four builds of the classifier (gpt_vocab_build: the device's,
 * a GPU's, and two more for the other code paths; GPT_VOCAB_BUILDS=
 * "rows:vec:keep_exp,..." gives others). GPT_VOCAB_TIME=1 also times the
 * classifier at V 50257, N 1024 rows.
 *
 * Tolerances (eps = 2^-24). A row's sum s of exp(x_j - m) over V columns
 * is summed by W lanes of vec columns a load: a lane's components each sum
 * ceil(nv / W) vectors (nv = V / vec whole ones), are combined in log2 vec
 * levels, the tail's ceil((V - nv vec) / W) columns are added after, then
 * a tree of log2 W levels. With positive terms its relative error is
 * within D eps, D that longest chain of additions, plus each term's own:
 * exp's 3 ulp (OpenCL's bound) and the rounding of x_j - m, |x_j - m| eps,
 * at most R eps with R the row's largest |x_j - m|:  E_s = (D + 3 + R) eps.
 * The loss log(s) + m - x_y is within E_s + 8 eps (|loss| + max |x|)
 * (log's ulps and two roundings); dlogits within |k| ((E_s + (8 + |x_j -
 * m|) eps) p_j + 2 eps |p_j - onehot_j|) (1 / s, the product, the
 * difference, the scale). The embedding is one rounding: rel 1e-7. The
 * gradient's sums of n terms: 1e-6 + 2e-7 n abs, 1e-6 rel. The test
 * prints the largest error as a fraction of its bound. */
#define _POSIX_C_SOURCE 200809L /* strtok_r, clock_gettime */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_testutil.h"
#include "gpt_vocab.h"
#include "ref_gpt_vocab.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static gpt_vocab gv;
static const double EPS = 0x1p-24;
static const clg_view NO_VIEW = {NULL, 0, 0};

/* ------------------------------------------------------------ tokens */

/* uint16 token windows: B sequences through a shuffled idx at an offset,
 * tokens skewed (a few frequent ones, 0 and V - 1 among them, the rest
 * uniform below V); tok and target the reference's view. */
typedef struct vtokens {
    gpt_vocab_tokens t;
    uint16_t *w;
    int32_t *idx;
    size_t n_windows;
    int *tok, *target;
    unsigned B, T;
} vtokens;

enum { TOK_OFF = 2, TOK_PAD = 3 };

static vtokens make_tokens(unsigned B, unsigned T, unsigned V, uint64_t seed)
{
    vtokens k;
    k.B = B, k.T = T;
    k.n_windows = B + TOK_OFF + 1;
    k.t.stride = T + 1 + TOK_PAD;
    k.t.off = TOK_OFF;
    k.w = tu_xmalloc(k.n_windows * k.t.stride * sizeof *k.w);
    k.idx = tu_xmalloc(k.n_windows * sizeof *k.idx);
    tu_rng r = tu_rng_seed(seed);
    const unsigned common[] = {0, V - 1, 1 % V, V / 2, 13 % V, (V / 3) | 1};
    for (size_t i = 0; i < k.n_windows * k.t.stride; i++) {
        uint64_t x = tu_rng_u64(&r);
        k.w[i] = (uint16_t)(x % 4 ? common[(x >> 8) % 6] : (x >> 16) % V);
    }
    for (size_t i = 0; i < k.n_windows; i++)
        k.idx[i] = (int32_t)i;
    for (size_t i = k.n_windows - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = tu_rng_u64(&r) % (i + 1);
        int32_t s = k.idx[i];
        k.idx[i] = k.idx[j], k.idx[j] = s;
    }
    k.t.windows = k.t.idx = NULL;
    k.tok = tu_xmalloc((size_t)B * T * sizeof *k.tok);
    k.target = tu_xmalloc((size_t)B * T * sizeof *k.target);
    return k;
}

/* Token t of sequence b in the host windows (to plant one). */
static uint16_t *token_at(vtokens *k, unsigned b, unsigned t)
{
    return &k->w[(size_t)k->idx[TOK_OFF + b] * k->t.stride + t];
}

/* Uploads the windows (after any change) and fills tok and target. */
static void upload_tokens(vtokens *k)
{
    if (k->t.windows)
        clReleaseMemObject(k->t.windows), clReleaseMemObject(k->t.idx);
    k->t.windows = tu_buffer_from(k->w, k->n_windows * k->t.stride * sizeof *k->w);
    k->t.idx = tu_buffer_from(k->idx, k->n_windows * sizeof *k->idx);
    ref_vocab_tokens(k->w, k->idx, TOK_OFF, k->t.stride, k->B, k->T, k->tok, k->target);
}

static vtokens tokens(unsigned B, unsigned T, unsigned V, uint64_t seed)
{
    vtokens k = make_tokens(B, T, V, seed);
    upload_tokens(&k);
    return k;
}

static void free_tokens(vtokens *k)
{
    clReleaseMemObject(k->t.windows), clReleaseMemObject(k->t.idx);
    free(k->w), free(k->idx), free(k->tok), free(k->target);
}

/* ------------------------------------------------------------ classifier */

typedef struct xshape {
    unsigned B, T, V;
} xshape;
static const xshape XSHAPES[] = {{2, 37, 50257}, {5, 33, 300}, {3, 51, 64}};
enum { N_XSHAPES = sizeof XSHAPES / sizeof XSHAPES[0] };

/* N rows of Vp logits in [-5, 5], one row with large values (100: exp
 * overflows without the max subtracted), the padding columns `pad`. */
static float *make_logits(size_t N, unsigned V, uint64_t seed, float pad)
{
    size_t Vp = gpt_vocab_padded(V);
    float *l = gt_uniform(N * Vp, seed, -5, 5);
    for (unsigned j = 0; j < V; j += 3)
        l[(N / 2) * Vp + j] = 100.0f + (float)j / V;
    for (size_t n = 0; n < N; n++)
        for (size_t j = V; j < Vp; j++)
            l[n * Vp + j] = pad;
    return l;
}

static unsigned log2u(unsigned w)
{
    unsigned k = 0;
    while ((1u << k) < w)
        k++;
    return k;
}

/* The row's bound E_s (the header) and its largest |x| and max. */
typedef struct row_bound {
    double Es, maxabs, m;
} row_bound;

static row_bound bound_of(const float *row, unsigned V)
{
    row_bound b = {0, 0, row[0]};
    for (unsigned j = 0; j < V; j++)
        b.m = fmax(b.m, row[j]), b.maxabs = fmax(b.maxabs, fabs(row[j]));
    double R = 0;
    for (unsigned j = 0; j < V; j++)
        R = fmax(R, b.m - row[j]);
    unsigned W = gv.build.row_items, nv = V / gv.build.vec;
    unsigned D =
        (nv + W - 1) / W + log2u(gv.build.vec) + (V - nv * gv.build.vec + W - 1) / W + log2u(W);
    b.Es = (D + 3 + R) * EPS;
    return b;
}

/* The loss (and, when dlogits, the gradient times mult) against the
 * reference; the largest error as a fraction of its bound. */
static double check_xent(const xshape *s, const float *logits, const int *target, const float *loss,
                         const float *dlogits, double mult)
{
    size_t N = (size_t)s->B * s->T, Vp = gpt_vocab_padded(s->V);
    double *rl = gt_doubles(N), *rd = dlogits ? gt_doubles(N * Vp) : NULL, worst = 0;
    ref_vocab_xent((unsigned)N, s->V, (unsigned)Vp, logits, target, mult, rl, rd);
    for (size_t n = 0; n < N; n++) {
        const float *row = logits + n * Vp;
        row_bound b = bound_of(row, s->V);
        double tol = b.Es + 8 * EPS * (fabs(rl[n]) + b.maxabs), err = fabs(loss[n] - rl[n]);
        if (!(err <= tol))
            fail_msg("V %u: row %zu's loss %.9g, reference %.9g (diff %.3g > %.3g)", s->V, n,
                     loss[n], rl[n], err, tol);
        worst = fmax(worst, err / tol);
        for (size_t j = 0; rd && j < Vp; j++) {
            double ref = rd[n * Vp + j], got = dlogits[n * Vp + j];
            if (j >= s->V) {
                if (got != 0.0f)
                    fail_msg("V %u: row %zu, padding column %zu is %g, not 0", s->V, n, j, got);
                continue;
            }
            double hot = j == (size_t)target[n], p = ref / mult + hot;
            double rel = b.Es + (8 + (b.m - row[j])) * EPS;
            double t = fabs(mult) * (rel * p + 2 * EPS * fabs(p - hot)) + 1e-38;
            double e = fabs(got - ref);
            if (!(e <= t))
                fail_msg("V %u: dlogits[%zu, %zu] = %.9g, reference %.9g (diff %.3g > %.3g)", s->V,
                         n, j, got, ref, e, t);
            worst = fmax(worst, e / t);
        }
    }
    free(rl), free(rd);
    return worst;
}

/* Forward only, then backward in place twice (no loss scale and dscale
 * 0.5; dscale 0.25 and the device's scale 8), every row in one launch. */
static void test_classifier_reference(void **state)
{
    (void)state;
    double worst = 0;
    for (int si = 0; si < N_XSHAPES; si++) {
        const xshape *s = &XSHAPES[si];
        size_t N = (size_t)s->B * s->T, n = N * gpt_vocab_padded(s->V);
        vtokens tk = tokens(s->B, s->T, s->V, 10 + si);
        float *logits = make_logits(N, s->V, 11 + si, 0.0f), *got = gt_uniform(n, 0, 0, 0);
        float *loss = gt_uniform(N, 0, 0, 0), scale_host[3] = {0.0f, 0.0f, 8.0f};
        clg_view vl = gt_view(logits, n, 3), vloss = gt_view(NULL, N, 2);
        clg_view ls = gt_view(scale_host, 3, 1);
        ls.offset += 2, ls.count = 1; /* the 8 */
        assert_int_equal(gpt_vocab_classifier(&gv, &tk.t, s->B, s->T, s->V, 0, (cl_uint)N, vl,
                                              vloss, 0, 1.0f, NO_VIEW),
                         CL_SUCCESS);
        gt_read(vloss, loss), gt_read(vl, got);
        assert_memory_equal(got, logits, n * sizeof *got); /* forward only: untouched */
        worst = fmax(worst, check_xent(s, logits, tk.target, loss, NULL, 1));
        assert_int_equal(gpt_vocab_classifier(&gv, &tk.t, s->B, s->T, s->V, 0, (cl_uint)N, vl,
                                              vloss, 1, 0.5f, NO_VIEW),
                         CL_SUCCESS);
        gt_read(vloss, loss), gt_read(vl, got);
        worst = fmax(worst, check_xent(s, logits, tk.target, loss, got, 0.5));
        gt_free(vl);
        vl = gt_view(logits, n, 1);
        assert_int_equal(gpt_vocab_classifier(&gv, &tk.t, s->B, s->T, s->V, 0, (cl_uint)N, vl,
                                              vloss, 1, 0.25f, ls),
                         CL_SUCCESS);
        gt_read(vloss, loss), gt_read(vl, got);
        worst = fmax(worst, check_xent(s, logits, tk.target, loss, got, 0.25 * 8));
        gt_free(vl), gt_free(vloss), gt_free(ls);
        free(logits), free(got), free(loss);
        free_tokens(&tk);
    }
    print_message(
        "classifier (%u items per row, vectors of %u, keep_exp %d) against the double reference: "
        "largest error %.3g of its bound\n",
        gv.build.row_items, gv.build.vec, gv.build.keep_exp, worst);
}

/* The classifier over rows [r0, r0 + nr) of logits (all N rows, host),
 * the chunk alone in a guarded view; its rows of dlogits (backward) put
 * back into out, the losses into the shared vloss. */
static void run_chunk(const xshape *s, const vtokens *tk, const float *logits, size_t r0, size_t nr,
                      int backward, clg_view vloss, float *out)
{
    size_t Vp = gpt_vocab_padded(s->V);
    clg_view vl = gt_view(nr ? logits + r0 * Vp : NULL, nr * Vp, 1 + r0 % 7);
    assert_int_equal(gpt_vocab_classifier(&gv, &tk->t, s->B, s->T, s->V, (cl_uint)r0, (cl_uint)nr,
                                          vl, vloss, backward, 0.5f, NO_VIEW),
                     CL_SUCCESS);
    if (nr)
        gt_read(vl, out + r0 * Vp);
    gt_free(vl);
}

/* Chunks of 13, 24, 0 and the rest: the loss and dlogits bitwise those of
 * one launch over every row. */
static void test_classifier_chunks(void **state)
{
    (void)state;
    for (int si = 0; si < N_XSHAPES; si++) {
        const xshape *s = &XSHAPES[si];
        size_t N = (size_t)s->B * s->T, n = N * gpt_vocab_padded(s->V);
        vtokens tk = tokens(s->B, s->T, s->V, 20 + si);
        float *logits = make_logits(N, s->V, 21 + si, 0.0f);
        float *whole = gt_uniform(n, 0, 0, 0), *chunked = gt_uniform(n, 0, 0, 0);
        float *loss_whole = gt_uniform(N, 0, 0, 0), *loss_chunked = gt_uniform(N, 0, 0, 0);
        for (int backward = 0; backward < 2; backward++) {
            clg_view vloss = gt_view(NULL, N, 4);
            run_chunk(s, &tk, logits, 0, N, backward, vloss, whole);
            gt_read(vloss, loss_whole);
            gt_free(vloss);
            vloss = gt_view(NULL, N, 5);
            const size_t cuts[] = {0, 13, 37, 37, N};
            for (int c = 0; c < 4; c++)
                run_chunk(s, &tk, logits, cuts[c], cuts[c + 1] - cuts[c], backward, vloss, chunked);
            gt_read(vloss, loss_chunked);
            gt_free(vloss);
            assert_memory_equal(loss_whole, loss_chunked, N * sizeof(float));
            assert_memory_equal(whole, chunked, n * sizeof(float));
        }
        free(logits), free(whole), free(chunked), free(loss_whole), free(loss_chunked);
        free_tokens(&tk);
    }
}

/* Padding columns of 0 and of huge values (3e38, -3e38): the same loss
 * and dlogits bit for bit, and the padding comes back 0. */
static void test_classifier_padding(void **state)
{
    (void)state;
    const float pads[] = {0.0f, 3e38f, -3e38f};
    for (int si = 0; si < N_XSHAPES; si++) {
        const xshape *s = &XSHAPES[si];
        if (gpt_vocab_padded(s->V) == s->V)
            continue; /* V 64 has no padding */
        size_t N = (size_t)s->B * s->T, n = N * gpt_vocab_padded(s->V);
        vtokens tk = tokens(s->B, s->T, s->V, 30 + si);
        float *first = gt_uniform(n, 0, 0, 0), *got = gt_uniform(n, 0, 0, 0);
        float *loss0 = gt_uniform(N, 0, 0, 0), *loss = gt_uniform(N, 0, 0, 0);
        for (int p = 0; p < 3; p++) {
            float *logits = make_logits(N, s->V, 31 + si, pads[p]);
            clg_view vl = gt_view(logits, n, 2), vloss = gt_view(NULL, N, 3);
            assert_int_equal(gpt_vocab_classifier(&gv, &tk.t, s->B, s->T, s->V, 0, (cl_uint)N, vl,
                                                  vloss, 1, 1.0f, NO_VIEW),
                             CL_SUCCESS);
            gt_read(vloss, p ? loss : loss0), gt_read(vl, p ? got : first);
            if (p) {
                assert_memory_equal(loss, loss0, N * sizeof(float));
                assert_memory_equal(got, first, n * sizeof(float));
            }
            gt_free(vl), gt_free(vloss);
            free(logits);
        }
        for (size_t r = 0; r < N; r++)
            for (size_t j = s->V; j < gpt_vocab_padded(s->V); j++)
                assert_true(first[r * gpt_vocab_padded(s->V) + j] == 0.0f);
        free(first), free(got), free(loss0), free(loss);
        free_tokens(&tk);
    }
}

/* Targets >= V (V itself and 65535) in two rows: their loss NaN and
 * dlogits 0, every other row as the reference; nothing outside the
 * views (guards). */
static void test_classifier_bad_target(void **state)
{
    (void)state;
    const xshape s = {3, 21, 300};
    size_t N = (size_t)s.B * s.T, Vp = gpt_vocab_padded(s.V), n = N * Vp;
    vtokens tk = make_tokens(s.B, s.T, s.V, 40);
    *token_at(&tk, 1, 6) = (uint16_t)s.V; /* row 1 T + 5's target */
    *token_at(&tk, 2, 21) = 65535;        /* the last row's target */
    upload_tokens(&tk);
    float *logits = make_logits(N, s.V, 41, 0.0f), *got = gt_uniform(n, 0, 0, 0);
    float *loss = gt_uniform(N, 0, 0, 0);
    clg_view vl = gt_view(logits, n, 3), vloss = gt_view(NULL, N, 1);
    assert_int_equal(
        gpt_vocab_classifier(&gv, &tk.t, s.B, s.T, s.V, 0, (cl_uint)N, vl, vloss, 1, 1.0f, NO_VIEW),
        CL_SUCCESS);
    gt_read(vloss, loss), gt_read(vl, got);
    const size_t bad[] = {s.T + 5, N - 1};
    for (int i = 0; i < 2; i++) {
        assert_true(isnan(loss[bad[i]]));
        for (size_t j = 0; j < Vp; j++)
            assert_true(got[bad[i] * Vp + j] == 0.0f);
        loss[bad[i]] = 0; /* the reference's NaN compared apart */
    }
    double *rl = gt_doubles(N), *rd = gt_doubles(n);
    ref_vocab_xent((unsigned)N, s.V, (unsigned)Vp, logits, tk.target, 1.0, rl, rd);
    for (int i = 0; i < 2; i++) {
        assert_true(isnan(rl[bad[i]]));
        rl[bad[i]] = 0;
    }
    gt_close(loss, rl, N, 2e-5, 1e-5, "row loss");
    gt_close(got, rd, n, 1e-7, 1e-5, "dlogits");
    gt_free(vl), gt_free(vloss);
    free(logits), free(got), free(loss), free(rl), free(rd);
    free_tokens(&tk);
}

/* ------------------------------------------------------------ embedding and its gradient */

typedef struct eshape {
    unsigned B, T, C, V;
} eshape;
/* N 74, 264 (2 sort blocks), 1200 (5), 2048 (8), and V 65536 */
static const eshape ESHAPES[] = {{2, 37, 40, 50257},
                                 {8, 33, 64, 300},
                                 {24, 50, 24, 64},
                                 {16, 128, 24, 50257},
                                 {4, 77, 8, 65536}};
enum { N_ESHAPES = sizeof ESHAPES / sizeof ESHAPES[0] };

static void test_embed(void **state)
{
    (void)state;
    for (int si = 0; si < N_ESHAPES; si++) {
        const eshape *s = &ESHAPES[si];
        size_t N = (size_t)s->B * s->T, VC = (size_t)s->V * s->C;
        vtokens tk = make_tokens(s->B, s->T, s->V, 50 + si);
        if (s->V < GPT_VOCAB_MAX)
            *token_at(&tk, 1, 2) = (uint16_t)s->V; /* row T + 2: no read past wte, NaN */
        upload_tokens(&tk);
        float *wte = gt_uniform(VC, 51, -1, 1), *wpe = gt_uniform((size_t)s->T * s->C, 52, -1, 1);
        float *got = gt_uniform(N * s->C, 0, 0, 0);
        double *ref = gt_doubles(N * s->C);
        clg_view vte = gt_view(wte, VC, 3), vpe = gt_view(wpe, (size_t)s->T * s->C, 1),
                 out = gt_view(NULL, N * s->C, 7);
        assert_int_equal(gpt_vocab_embed(&gv, &tk.t, s->B, s->T, s->C, s->V, vte, vpe, out),
                         CL_SUCCESS);
        gt_read(out, got);
        ref_vocab_embed(tk.tok, s->B, s->T, s->C, s->V, wte, wpe, ref);
        for (size_t i = 0; i < N * s->C; i++)
            if (isnan(ref[i])) {
                assert_true(isnan(got[i]));
                got[i] = 0, ref[i] = 0;
            }
        gt_close(got, ref, N * s->C, 0, 1e-7, "embed");
        gt_free(vte), gt_free(vpe), gt_free(out);
        free(wte), free(wpe), free(got), free(ref);
        free_tokens(&tk);
    }
}

static clg_view sort_scratch(size_t N, unsigned V)
{
    size_t ints = gpt_vocab_sort_ints((unsigned)N, V) + 3;
    clg_view v = {gt_scratch(ints * sizeof(int)), 3, ints - 3};
    return v;
}

/* The gradient on shape s with tokens tk (planted tokens >= V dropped)
 * at beta 0 over NaN, 1 and 0.5 against the double reference; at beta 0
 * bitwise the ordered float sums, at beta 1 the rows of absent tokens
 * bitwise the old ones. */
static void check_wte_grad(const eshape *s, const vtokens *tk, uint64_t seed)
{
    size_t N = (size_t)s->B * s->T, VC = (size_t)s->V * s->C;
    float *dout = gt_uniform(N * s->C, seed, -1, 1), *old = gt_uniform(VC, seed + 1, -1, 1);
    float *got = gt_uniform(VC, 0, 0, 0), *ordered = gt_uniform(VC, 0, 0, 0);
    double *ref = gt_doubles(VC);
    unsigned *count = tu_xmalloc(s->V * sizeof *count);
    clg_view vd = gt_view(dout, N * s->C, 5), sort = sort_scratch(N, s->V);
    ref_vocab_wte_grad_ordered(tk->tok, (unsigned)N, s->C, s->V, dout, ordered);
    ref_vocab_wte_grad(tk->tok, (unsigned)N, s->C, s->V, dout, ref, count);
    /* -0 in the rows of absent tokens: 1 * -0 + 0 is +0, so a write of
     * old + 0 at beta 1 shows too */
    for (size_t v = 0; v < s->V; v++)
        if (count[v] == 0)
            old[v * s->C] = -0.0f;
    const float betas[] = {0.0f, 1.0f, 0.5f};
    for (int bi = 0; bi < 3; bi++) {
        float beta = betas[bi];
        clg_view te = gt_view(beta != 0.0f ? old : NULL, VC, 2);
        assert_int_equal(
            gpt_vocab_wte_grad(&gv, &tk->t, s->B, s->T, s->C, s->V, vd, sort, te, beta),
            CL_SUCCESS);
        gt_read(te, got);
        gt_free(te);
        ref_vocab_wte_grad(tk->tok, (unsigned)N, s->C, s->V, dout, ref, NULL);
        if (beta == 0.0f)
            assert_memory_equal(got, ordered, VC * sizeof *got);
        for (size_t v = 0; beta == 1.0f && v < s->V; v++)
            if (count[v] == 0 && memcmp(got + v * s->C, old + v * s->C, s->C * sizeof *got))
                fail_msg("V %u: token %zu is absent, yet its row changed at beta 1", s->V, v);
        gt_apply_beta(ref, old, VC, beta);
        for (size_t v = 0; v < s->V; v++) {
            char what[64];
            snprintf(what, sizeof what, "dwte (V %u, beta %g, token %zu)", s->V, beta, v);
            gt_close(got + v * s->C, ref + v * s->C, s->C, 1e-6 + 2e-7 * count[v], 1e-6, what);
        }
    }
    gt_free(vd), gt_free(sort);
    free(dout), free(old), free(got), free(ordered), free(ref), free(count);
}

static void test_wte_grad(void **state)
{
    (void)state;
    for (int si = 0; si < N_ESHAPES; si++) {
        const eshape *s = &ESHAPES[si];
        vtokens tk = make_tokens(s->B, s->T, s->V, 60 + si);
        if (s->V < GPT_VOCAB_MAX) /* dropped positions */
            *token_at(&tk, 0, 3) = (uint16_t)s->V, *token_at(&tk, 1, 0) = 65535;
        else /* the largest keys */
            *token_at(&tk, 0, 3) = 65535, *token_at(&tk, 1, 0) = 65280;
        upload_tokens(&tk);
        check_wte_grad(s, &tk, 61 + si);
        free_tokens(&tk);
    }
}

/* ------------------------------------------------------------ repeatability, refusals */

/* The classifier's backward (V 50257) and the gradient (N 2048), twice,
 * the second time with the other keep_exp (a second build): the same
 * bytes. */
static void test_repeatable(void **state)
{
    (void)state;
    const xshape xs = XSHAPES[0];
    const eshape es = ESHAPES[3];
    size_t N = (size_t)xs.B * xs.T, n = N * gpt_vocab_padded(xs.V);
    size_t NE = (size_t)es.B * es.T, VC = (size_t)es.V * es.C;
    vtokens tx = tokens(xs.B, xs.T, xs.V, 70), te = tokens(es.B, es.T, es.V, 71);
    float *logits = make_logits(N, xs.V, 72, 0.0f), *dout = gt_uniform(NE * es.C, 73, -1, 1);
    gpt_vocab other;
    gpt_vocab_build flipped = gv.build;
    flipped.keep_exp = !flipped.keep_exp;
    OK(gpt_vocab_init_with(tu_ctx, flipped, &other));
    float *out[2][3];
    for (int run = 0; run < 2; run++) {
        const gpt_vocab *g = run ? &other : &gv;
        clg_view vl = gt_view(logits, n, 1), vloss = gt_view(NULL, N, 2),
                 vd = gt_view(dout, NE * es.C, 3), sort = sort_scratch(NE, es.V),
                 dwte = gt_view(NULL, VC, 4);
        assert_int_equal(gpt_vocab_classifier(g, &tx.t, xs.B, xs.T, xs.V, 0, (cl_uint)N, vl, vloss,
                                              1, 1.0f, NO_VIEW),
                         CL_SUCCESS);
        assert_int_equal(gpt_vocab_wte_grad(g, &te.t, es.B, es.T, es.C, es.V, vd, sort, dwte, 0.0f),
                         CL_SUCCESS);
        out[run][0] = gt_uniform(n, 0, 0, 0), out[run][1] = gt_uniform(N, 0, 0, 0);
        out[run][2] = gt_uniform(VC, 0, 0, 0);
        gt_read(vl, out[run][0]), gt_read(vloss, out[run][1]), gt_read(dwte, out[run][2]);
        gt_free(vl), gt_free(vloss), gt_free(vd), gt_free(sort), gt_free(dwte);
    }
    gpt_vocab_release(&other);
    assert_memory_equal(out[0][0], out[1][0], n * sizeof(float));
    assert_memory_equal(out[0][1], out[1][1], N * sizeof(float));
    assert_memory_equal(out[0][2], out[1][2], VC * sizeof(float));
    for (int run = 0; run < 2; run++)
        free(out[run][0]), free(out[run][1]), free(out[run][2]);
    free(logits), free(dout);
    free_tokens(&tx), free_tokens(&te);
}

/* A view one element short of v. */
static clg_view short_of(clg_view v)
{
    v.count--;
    return v;
}

/* Every refusal: CL_INVALID_VALUE and nothing written (the outputs come
 * back as they were: NaN, which gt_view put there). */
static void test_refusals(void **state)
{
    (void)state;
    const unsigned B = 2, T = 5, C = 4, V = 300, N = B * T, Vp = gpt_vocab_padded(V);
    vtokens tk = tokens(B, T, V, 80);
    float *host = gt_uniform((size_t)N * Vp, 81, -1, 1),
          *back = gt_uniform((size_t)N * Vp, 0, 0, 0);
    clg_view logits = gt_view(host, (size_t)N * Vp, 1), loss = gt_view(NULL, N, 1),
             wte = gt_view(host, (size_t)V * C, 1), wpe = gt_view(host, T * C, 1),
             out = gt_view(NULL, N * C, 1), dout = gt_view(host, N * C, 1),
             sort = sort_scratch(N, V), dwte = gt_view(NULL, (size_t)V * C, 1);
    clg_view zero_scale = {logits.mem, 0, 0};
#define REFUSED(call) assert_int_equal((call), CL_INVALID_VALUE)
    /* the classifier */
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 0, N, short_of(logits), loss, 1, 1, NO_VIEW));
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 0, N, logits, short_of(loss), 1, 1, NO_VIEW));
    /* rows past N, though the views would hold them (the loss view reaches
     * into the guards: nothing may be written there) */
    clg_view loss_long = {loss.mem, loss.offset, N + 4};
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 3, N - 2, logits, loss_long, 1, 1, NO_VIEW));
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 0, N, logits, loss, 1, 1, zero_scale));
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, 0, 0, N, logits, loss, 1, 1, NO_VIEW));
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, GPT_VOCAB_MAX + 1, 0, 1, logits, loss, 1, 1,
                                 NO_VIEW));
    REFUSED(gpt_vocab_classifier(&gv, NULL, B, T, V, 0, N, logits, loss, 1, 1, NO_VIEW));
    /* a chunk's rows of the loss: r0 + nr of them */
    clg_view loss_chunk = {loss.mem, loss.offset, 7};
    REFUSED(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 5, 3, logits, loss_chunk, 1, 1, NO_VIEW));
    /* the embedding */
    REFUSED(gpt_vocab_embed(&gv, &tk.t, B, T, C, V, short_of(wte), wpe, out));
    REFUSED(gpt_vocab_embed(&gv, &tk.t, B, T, C, V, wte, short_of(wpe), out));
    REFUSED(gpt_vocab_embed(&gv, &tk.t, B, T, C, V, wte, wpe, short_of(out)));
    REFUSED(gpt_vocab_embed(&gv, &tk.t, B, T, C, 0, wte, wpe, out));
    /* the gradient */
    REFUSED(gpt_vocab_wte_grad(&gv, &tk.t, B, T, C, V, short_of(dout), sort, dwte, 0));
    REFUSED(gpt_vocab_wte_grad(&gv, &tk.t, B, T, C, V, dout, short_of(sort), dwte, 0));
    REFUSED(gpt_vocab_wte_grad(&gv, &tk.t, B, T, C, V, dout, sort, short_of(dwte), 0));
    REFUSED(gpt_vocab_wte_grad(&gv, &tk.t, B, T, C, GPT_VOCAB_MAX + 1, dout, sort, dwte, 0));
    REFUSED(gpt_vocab_wte_grad(&gv, &tk.t, B, T, C, V, (clg_view){NULL, 0, N * C}, sort, dwte, 0));
#undef REFUSED
    /* nothing was written */
    float *nan_n = gt_uniform((size_t)V * C, 0, 0, 0);
    gt_read(logits, back);
    assert_memory_equal(back, host, (size_t)N * Vp * sizeof *back);
    clg_view outs[] = {loss, out, dwte};
    for (int i = 0; i < 3; i++) {
        gt_read(outs[i], nan_n);
        for (size_t j = 0; j < outs[i].count; j++)
            assert_true(isnan(nan_n[j]));
    }
    /* bad init arguments */
    gpt_vocab bad;
    const gpt_vocab_build bad_builds[] = {{3, 1, 0}, {512, 1, 0}, {0, 1, 0}, {4, 2, 0}, {4, 4, 2}};
    for (size_t i = 0; i < sizeof bad_builds / sizeof *bad_builds; i++)
        assert_int_equal(gpt_vocab_init_with(tu_ctx, bad_builds[i], &bad),
                         CLG_ERR_INVALID_ARGUMENT);
    /* sizes the memory plan counts */
    assert_int_equal(gpt_vocab_sort_ints(1000, 300), 4 * 1000 + 256 * 4 + 301);
    assert_int_equal(gpt_vocab_padded(50257), 50304);
    assert_int_equal(gpt_vocab_padded(64), 64);
    clg_view all[] = {logits, loss, wte, wpe, out, dout, sort, dwte};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
    free(host), free(back), free(nan_n);
    free_tokens(&tk);
}

/* ------------------------------------------------------------ timing */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GPT_VOCAB_TIME=1: the classifier at V 50257 on N 1024 rows (B 4, T
 * 256), forward only and with the backward; median of 7 calls after one
 * warm-up, GB/s against the logits' bytes (N Vp floats). */
static void test_classifier_time(void **state)
{
    (void)state;
    const char *env = getenv("GPT_VOCAB_TIME");
    if (!env || strcmp(env, "1"))
        skip();
    const unsigned B = 4, T = 256, V = 50257, N = B * T;
    size_t n = (size_t)N * gpt_vocab_padded(V);
    vtokens tk = tokens(B, T, V, 90);
    float *logits = make_logits(N, V, 91, 0.0f);
    cl_mem vmem = tu_buffer_from(logits, n * sizeof *logits);
    clg_view vl = {vmem, 0, n}, vloss = gt_view(NULL, N, 0);
    for (int backward = 0; backward < 2; backward++) {
        enum { RUNS = 7 };
        double t[RUNS + 1];
        for (int r = 0; r <= RUNS; r++) {
            double t0 = now_s();
            assert_int_equal(gpt_vocab_classifier(&gv, &tk.t, B, T, V, 0, N, vl, vloss, backward,
                                                  1.0f / N, NO_VIEW),
                             CL_SUCCESS);
            assert_int_equal(clFinish(gv.queue), CL_SUCCESS);
            t[r] = now_s() - t0;
        }
        qsort(t + 1, RUNS, sizeof *t, cmp_double); /* t[0]: the warm-up */
        double med = t[1 + RUNS / 2];
        print_message("classifier V %u, N %u, build %u:%u:%d, %s: %.1f ms a "
                      "call (%.1f to %.1f), %.2f GB/s of logits\n",
                      V, N, gv.build.row_items, gv.build.vec, gv.build.keep_exp,
                      backward ? "forward + backward" : "forward only", med * 1e3, t[1] * 1e3,
                      t[RUNS] * 1e3, n * 4.0 / med / 1e9);
    }
    clReleaseMemObject(vmem), gt_free(vloss);
    free(logits);
    free_tokens(&tk);
}

/* ------------------------------------------------------------ main */

static gpt_vocab_build build; /* row_items 0: gpt_vocab_init's choice */

static int setup(void **state)
{
    tu_group_setup(state);
    clg_status st =
        build.row_items ? gpt_vocab_init_with(tu_ctx, build, &gv) : gpt_vocab_init(tu_ctx, &gv);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "gpt_vocab_init (%u items per row, vectors of %u, keep_exp %d): %s\n",
                build.row_items, build.vec, build.keep_exp, clg_last_error(tu_ctx));
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    gpt_vocab_release(&gv);
    return tu_group_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classifier_reference),
        cmocka_unit_test(test_classifier_chunks),
        cmocka_unit_test(test_classifier_padding),
        cmocka_unit_test(test_classifier_bad_target),
        cmocka_unit_test(test_embed),
        cmocka_unit_test(test_wte_grad),
        cmocka_unit_test(test_repeatable),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_classifier_time),
    };
    /* the device's build, a GPU's, one item a row of plain floats keeping
     * the exponentials, 4 items of float16 */
    gpt_vocab_build variants[16] = {{0, 0, 0}, {256, 4, 0}, {1, 1, 1}, {4, 16, 0}};
    size_t n_variants = 4;
    const char *list = getenv("GPT_VOCAB_BUILDS"); /* "rows:vec:keep,..." */
    if (list && *list) {
        char copy[256], *save = NULL;
        snprintf(copy, sizeof copy, "%s", list);
        n_variants = 0;
        for (char *w = strtok_r(copy, ",", &save); w && n_variants < 16;
             w = strtok_r(NULL, ",", &save)) {
            gpt_vocab_build *b = &variants[n_variants++];
            if (sscanf(w, "%u:%u:%d", &b->row_items, &b->vec, &b->keep_exp) != 3) {
                fprintf(stderr, "GPT_VOCAB_BUILDS: \"%s\" is not rows:vec:keep_exp\n", w);
                return 1;
            }
        }
    }
    int failed = 0;
    for (size_t v = 0; v < n_variants; v++) {
        char name[96];
        build = variants[v];
        snprintf(name, sizeof name, "gpt_vocab (build %u:%u:%d; 0: the device's)", build.row_items,
                 build.vec, build.keep_exp);
        failed +=
            _cmocka_run_group_tests(name, tests, sizeof tests / sizeof *tests, setup, teardown);
    }
    return failed;
}
