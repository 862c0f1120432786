/* gpt_grads.c - the GPT task's model (tools/train/tasks/gpt) on the device
 * for tests/gpt/torch_gpt.py, which runs this program and checks what it
 * writes against the same model in PyTorch (float64): a tiny GPT
 * (L = 2, NH = 4, C = 80, T = 13, B = 3) from gpt_init_params plus noise,
 * one forward and backward on path B (beta 0, dscale 1) of random byte
 * windows, and the mean loss, the tokens, every parameter and every
 * accumulator tensor written to the file named by argv[1].
 * Checked here, against the model itself: the activation buffers are what
 * gpt_activation_bytes plans (and a budget one byte short refuses them);
 * a second forward + backward gives bit-identical gradients, and so does
 * each --recompute mode (none, block) against the default (norm); beta 1 with
 * dscale 0.5 and a loss scale of 2 adds exactly the same gradient again;
 * the logits of shorter forwards (sampling) equal the full forward's
 * where causality says they must; the init has GPT-2's spread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clgrad_advanced.h"
#include "gpt_internal.h"
#include "gpt_model_testutil.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C above the kernels' work-group of 64 and HS = 20: rows take several
 * passes, nothing is a power of two */
enum { L = 2, NH = 4, C = 80, T = 13, B = 3, STRIDE = T + 3, WINDOWS = 5 };

static const char *out_path;

typedef struct fixture {
    gpt_shape s;
    clg_model *model;
    gpt_model *gm;
    gpt_tokens tok;
    cl_mem sums, scale;
    int n_tensors;
    size_t n_params;
    float *params;
    uint8_t windows[WINDOWS * STRIDE];
    int32_t idx[B + 1];
} fixture;

static fixture F;

/* Standard deviation of n values. */
static double spread(const float *x, size_t n)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    return sqrt(s2 / n - (s / n) * (s / n));
}

static void check_init(const gpt_shape *s, const float *p)
{
    for (int i = 0; i < gpt_tensor_count(s); i++) {
        gpt_tensor_info t;
        gpt_tensor(s, i, &t);
        size_t n = gpt_tensor_size(&t);
        if (t.ndim == 2) {
            double want = strstr(t.name, "c_proj") ? 0.02 / sqrt(2.0 * s->layers) : 0.02;
            double got = spread(p, n);
            if (fabs(got / want - 1) > 0.15)
                fail_msg("init %s: std %.4g, expected %.4g", t.name, got, want);
        } else {
            float want = strstr(t.name, "ln_") && strstr(t.name, "weight") ? 1.0f : 0.0f;
            for (size_t e = 0; e < n; e++)
                assert_true(p[e] == want);
        }
        p += n;
    }
}

static int setup(void **state)
{
    tu_group_setup(state);
    F.s = (gpt_shape){.layers = L,
                      .heads = NH,
                      .width = C,
                      .context = T,
                      .recompute = GPT_RECOMPUTE_NORM,
                      .vocab = GPT_BYTE_VOCAB};
    char err[256];
    assert_int_equal(gpt_shape_check(&F.s, err, sizeof err), 0);
    F.model = gmt_model(&F.s);
    F.n_tensors = gpt_tensor_count(&F.s);
    F.n_params = (size_t)gpt_param_count(&F.s);
    assert_int_equal(clg_model_param_count(F.model), F.n_params);

    /* the init, then noise so that no bias or LayerNorm gain is trivial */
    F.params = tu_xmalloc(F.n_params * sizeof *F.params);
    gpt_init_params(&F.s, 7, F.params);
    check_init(&F.s, F.params);
    tu_rng r = tu_rng_seed(11);
    for (size_t i = 0; i < F.n_params; i++)
        F.params[i] += tu_rng_uniform(&r, -0.1f, 0.1f);
    OK(clg_model_upload_params(F.model, CLG_ALL_TENSORS, F.params, F.n_params, NULL));

    /* B windows picked out of WINDOWS through idx from offset 1 */
    for (size_t i = 0; i < sizeof F.windows; i++)
        F.windows[i] = (uint8_t)tu_rng_u64(&r);
    int32_t idx[B + 1] = {1, 3, 0, 4};
    memcpy(F.idx, idx, sizeof idx);
    F.tok.windows = tu_buffer_from(F.windows, sizeof F.windows);
    F.tok.idx = tu_buffer_from(F.idx, sizeof F.idx);
    F.tok.off = 1;
    F.tok.stride = STRIDE;
    float sums[2] = {0, 0}, two = 2.0f;
    F.sums = tu_buffer_from(sums, sizeof sums);
    F.scale = tu_buffer_from(&two, sizeof two);
    return 0;
}

static int teardown(void **state)
{
    gpt_destroy(F.gm);
    clg_model_destroy(F.model);
    clReleaseMemObject(F.tok.windows);
    clReleaseMemObject(F.tok.idx);
    clReleaseMemObject(F.sums);
    clReleaseMemObject(F.scale);
    free(F.params);
    return tu_group_teardown(state);
}

/* The plan's formula (written out again here, as the report states it),
 * in floats per sequence: each block keeps 10 T C + 4 T + NH T (qkv 3 T C,
 * the attention's output, res2 and res3 T C each, fch 4 T C, two
 * LayerNorms' mean and rstd, each attention row's log-sum-exp); --recompute
 * none 6 T C more (ln_1's, ln_2's and GELU's outputs); block keeps res3
 * alone past block 0 (T C). The whole model adds 7 T C + 8 T + NH T +
 * 5 C ceil(T / 16) (the embeddings, GELU's output, the residual's
 * gradient, the other gradient; ln_f's stats, the losses; the attention
 * backward's dy . y; the kernels' scratch: 5C per 16 positions; the radix
 * sort's 5 T), and V + 257 once (the sort's counts past one block and each
 * token's start). The head's logits apart: T ld a sequence (rows of V
 * padded to ld, a multiple of 64) up to a chunk of 2^26 / ld rows. At the
 * test's shape, GPT-2 124M's at T = 1024 with the bytes and with GPT-2's
 * 50257 tokens, and a single position. */
static uint64_t plan_fixed(const gpt_shape *s)
{
    return 4 * ((uint64_t)s->vocab + 257);
}
static uint64_t plan_ld(const gpt_shape *s)
{
    return (s->vocab + 63) / 64 * 64;
}

static uint64_t plan_formula(const gpt_shape *s)
{
    uint64_t nh = s->heads, c = s->width, t = s->context, total = 0;
    uint64_t block = 10 * t * c + 4 * t + nh * t;
    for (unsigned l = 0; l < s->layers; l++) {
        if (s->recompute == GPT_RECOMPUTE_NONE)
            total += block + 6 * t * c;
        else if (s->recompute == GPT_RECOMPUTE_BLOCK && l > 0)
            total += t * c;
        else
            total += block;
    }
    return 4 * (total + 7 * t * c + 8 * t + nh * t + 5 * c * ((t + 15) / 16));
}

static void test_plan_formula(void **state)
{
    (void)state;
#define SHAPE(l, nh, c, t, v)                                                                      \
    {                                                                                              \
        .layers = l, .heads = nh, .width = c, .context = t, .vocab = v                             \
    }
    const gpt_shape shapes[] = {SHAPE(L, NH, C, T, 256), SHAPE(12, 12, 768, 1024, 256),
                                SHAPE(12, 12, 768, 1024, 50257), SHAPE(3, 5, 40, 1, 300)};
#undef SHAPE
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int r = 0; r < GPT_RECOMPUTE_MODES; r++) {
            gpt_shape sh = shapes[i];
            sh.recompute = (gpt_recompute)r;
            gpt_act_bytes ab = gpt_activation_bytes(&sh);
            assert_int_equal(ab.fixed, plan_fixed(&sh));
            assert_int_equal(ab.per_seq, plan_formula(&sh));
            uint64_t ld = plan_ld(&sh);
            assert_int_equal(ab.logits_per_seq, 4 * sh.context * ld);
            assert_int_equal(ab.logits_cap, 4 * ld * (((uint64_t)1 << 26) / ld));
        }
}

/* A budget one byte short is refused; then the activation buffers are
 * exactly the plan, and exactly what the budget was charged. */
static void test_plan(void **state)
{
    (void)state;
    char err[256];
    gpt_act_bytes ab = gpt_activation_bytes(&F.s);
    uint64_t need = gpt_act_total(&ab, B), before = clg_context_device_bytes(tu_ctx);
    OK(clg_context_set_budget(tu_ctx, before + need - 1));
    assert_int_equal(gpt_create(tu_ctx, &F.s, B, &F.gm, err, sizeof err), -1);
    assert_null(F.gm);
    assert_non_null(strstr(err, "activations"));
    assert_int_equal(clg_context_device_bytes(tu_ctx), before);
    OK(clg_context_set_budget(tu_ctx, before + need));
    if (gpt_create(tu_ctx, &F.s, B, &F.gm, err, sizeof err) != 0)
        fail_msg("gpt_create: %s", err);
    OK(clg_context_set_budget(tu_ctx, 0));
    assert_int_equal(clg_context_device_bytes(tu_ctx) - before, need);
    uint64_t held = 0;
    for (int i = 0; i < F.gm->n_bufs; i++) {
        size_t bytes;
        if (!F.gm->buf[i]) /* a kind the mode does not keep */
            continue;
        assert_int_equal(clGetMemObjectInfo(F.gm->buf[i], CL_MEM_SIZE, sizeof bytes, &bytes, NULL),
                         CL_SUCCESS);
        held += bytes;
    }
    assert_int_equal(F.gm->n_bufs, gpt_buf_count(&F.s));
    assert_int_equal(held, need);
    OK(gpt_bind(F.gm, F.model));
}

/* forward + backward with beta, dscale and loss scale; the accumulator
 * into acc, the logits of the forward into logits (if not NULL) */
static void step(float beta, float dscale, int scaled, float *acc, float *logits)
{
    clg_view ls = {scaled ? F.scale : NULL, 0, scaled ? 1 : 0};
    assert_int_equal(gpt_forward(F.gm, &F.tok, B, F.sums), CL_SUCCESS);
    for (int b = 0; logits && b < B; b++)
        for (int t = 0; t < T; t++)
            assert_int_equal(gpt_read_logits(F.gm, b, t, T, logits + (b * T + t) * GPT_BYTE_VOCAB),
                             CL_SUCCESS);
    assert_int_equal(gpt_backward(F.gm, &F.tok, B, dscale, ls, beta), CL_SUCCESS);
    assert_int_equal(gpt_backward(F.gm, &F.tok, B, dscale, ls, beta), CL_INVALID_VALUE);
    OK(clg_model_download_acc(F.model, CLG_ALL_TENSORS, acc, F.n_params, NULL));
}

static void write_result(double loss, const float *acc)
{
    FILE *f = fopen(out_path, "wb");
    if (!f)
        fail_msg("cannot create %s", out_path);
    uint32_t head[6] = {L, NH, C, T, B, (uint32_t)F.n_tensors};
    fwrite("GPTGRAD1", 1, 8, f);
    fwrite(head, sizeof head, 1, f);
    fwrite(&loss, sizeof loss, 1, f);
    for (int b = 0; b < B; b++) /* each sequence's T + 1 bytes, targets included */
        fwrite(F.windows + (size_t)F.idx[1 + b] * STRIDE, 1, T + 1, f);
    size_t off = 0;
    for (int i = 0; i < F.n_tensors; i++) {
        gpt_tensor_info t;
        gpt_tensor(&F.s, i, &t);
        size_t n = gpt_tensor_size(&t);
        uint32_t len = (uint32_t)strlen(t.name),
                 dims[3] = {(uint32_t)t.ndim, (uint32_t)t.dims[0], (uint32_t)t.dims[1]};
        fwrite(&len, sizeof len, 1, f);
        fwrite(t.name, 1, len, f);
        fwrite(dims, sizeof dims, 1, f);
        fwrite(F.params + off, sizeof(float), n, f);
        fwrite(acc + off, sizeof(float), n, f);
        off += n;
    }
    assert_int_equal(ferror(f), 0);
    assert_int_equal(fclose(f), 0);
}

static void test_grads(void **state)
{
    (void)state;
    size_t n = F.n_params, nl = (size_t)B * T * GPT_BYTE_VOCAB;
    float *g1 = tu_xmalloc(n * 4), *g2 = tu_xmalloc(n * 4), *logits = tu_xmalloc(nl * 4);
    step(0.0f, 1.0f, 0, g1, logits);
    float sums[2];
    tu_buffer_read(F.sums, 0, sums, sizeof sums);
    assert_true(sums[1] == (float)(B * T));
    write_result((double)sums[0] / sums[1], g1);

    /* the same again, bit for bit, with profiling on (each launch waited
     * for and timed) */
    gpt_profile(F.gm, 1);
    step(0.0f, 1.0f, 0, g2, NULL);
    gpt_profile(F.gm, 0);
    gpt_profile_times pt = gpt_profile_read(F.gm);
    assert_true(pt.gemm > 0 && pt.attention > 0 && pt.other > 0);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&g1[i], &g2[i], 4) != 0)
            fail_msg("second run differs at %zu: %.9g vs %.9g", i, g1[i], g2[i]);
    /* beta 1 adds; dscale 0.5 times a loss scale of 2 is the same
     * gradient (powers of two: exact), so the sum is exactly twice it,
     * except in wte (tensor 0), whose two parts (head, embedding) round
     * in another order */
    step(1.0f, 0.5f, 1, g2, NULL);
    size_t n_wte = (size_t)GPT_BYTE_VOCAB * C;
    float wte_max = 0;
    for (size_t i = 0; i < n_wte; i++)
        wte_max = fmaxf(wte_max, fabsf(g1[i]));
    for (size_t i = 0; i < n; i++)
        if (i < n_wte ? fabsf(g2[i] - 2.0f * g1[i]) > 1e-6f * wte_max : g2[i] != 2.0f * g1[i])
            fail_msg("beta 1 at %zu: %.9g, expected 2 x %.9g", i, g2[i], g1[i]);

    /* sampling: a forward of the first 1 or 7 positions (of all B
     * sequences, or of fewer than the activations hold) gives the full
     * forward's logits there (causal attention) */
    const int shorter[] = {1, 7}, seqs[] = {B, B - 1};
    float row[GPT_BYTE_VOCAB];
    for (int i = 0; i < 2; i++) {
        int TS = shorter[i];
        assert_int_equal(gpt_forward_logits(F.gm, &F.tok, seqs[i], TS), CL_SUCCESS);
        for (int b = 0; b < seqs[i]; b++)
            for (int t = 0; t < TS; t++) {
                assert_int_equal(gpt_read_logits(F.gm, b, t, TS, row), CL_SUCCESS);
                const float *full = logits + (b * T + t) * GPT_BYTE_VOCAB;
                for (int v = 0; v < GPT_BYTE_VOCAB; v++)
                    if (fabsf(row[v] - full[v]) > 1e-5f * (1 + fabsf(full[v])))
                        fail_msg("logits of (%d, %d)[%d]: %.9g after %d positions, %.9g after %d",
                                 b, t, v, row[v], TS, full[v], T);
            }
    }
    assert_int_equal(gpt_backward(F.gm, &F.tok, B, 1.0f, (clg_view){0}, 0.0f), CL_INVALID_VALUE);
    free(g1);
    free(g2);
    free(logits);
}

static void clear_sums(void)
{
    const float zero[2] = {0, 0};
    assert_int_equal(clEnqueueWriteBuffer(clg_context_queue(tu_ctx), F.sums, CL_TRUE, 0,
                                          sizeof zero, zero, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* --recompute none and block: the same loss and gradients as norm (the
 * fixture's model), bit for bit, from their own activations. */
static void test_recompute_modes(void **state)
{
    (void)state;
    size_t n = F.n_params;
    float *want = tu_xmalloc(n * 4), *got = tu_xmalloc(n * 4), sums[2], want_sums[2];
    gpt_model *norm = F.gm;
    clear_sums();
    step(0.0f, 1.0f, 0, want, NULL);
    tu_buffer_read(F.sums, 0, want_sums, sizeof want_sums);
    const gpt_recompute modes[] = {GPT_RECOMPUTE_NONE, GPT_RECOMPUTE_BLOCK};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        gpt_shape s = F.s;
        s.recompute = modes[i];
        char err[256];
        if (gpt_create(tu_ctx, &s, B, &F.gm, err, sizeof err) != 0)
            fail_msg("gpt_create (--recompute %s): %s", gpt_recompute_name(modes[i]), err);
        OK(gpt_bind(F.gm, F.model));
        clear_sums();
        step(0.0f, 1.0f, 0, got, NULL);
        tu_buffer_read(F.sums, 0, sums, sizeof sums);
        gpt_destroy(F.gm);
        F.gm = norm;
        assert_memory_equal(sums, want_sums, sizeof sums);
        for (size_t e = 0; e < n; e++)
            if (memcmp(&got[e], &want[e], 4) != 0)
                fail_msg("--recompute %s: gradient %zu is %.9g, norm's %.9g",
                         gpt_recompute_name(modes[i]), e, got[e], want[e]);
    }
    free(want);
    free(got);
}

/* The head in chunks (gpt_head.c) against the whole: head_rows 5 splits
 * the B T = 39 rows into 7 chunks of 5 and one of 4. The losses are the
 * same bits (each row's is its own); the gradients within 2e-6 of each
 * tensor's largest (dlnf's rows come from GEMMs of 5 rows instead of 39,
 * wte's gradient adds up chunk by chunk); the logits gpt_read_logits
 * computes a row at a time equal the whole forward's within 1e-5; and a
 * chunked model's buffers are its plan. */
static void test_head_chunks(void **state)
{
    (void)state;
    size_t n = F.n_params, V = GPT_BYTE_VOCAB;
    float *want = tu_xmalloc(n * 4), *got = tu_xmalloc(n * 4), sums[2], want_sums[2];
    float *want_logits = tu_xmalloc((size_t)B * T * V * 4), row[GPT_BYTE_VOCAB];
    gpt_model *whole = F.gm;
    clear_sums();
    step(0.0f, 1.0f, 0, want, want_logits);
    tu_buffer_read(F.sums, 0, want_sums, sizeof want_sums);
    gpt_shape s = F.s;
    s.head_rows = 5;
    char err[256];
    if (gpt_create(tu_ctx, &s, B, &F.gm, err, sizeof err) != 0)
        fail_msg("gpt_create (head_rows 5): %s", err);
    gpt_act_bytes ab = gpt_activation_bytes(&s);
    assert_int_equal(ab.logits_cap, 4 * 5 * V);
    assert_int_equal(gpt_head_rows(&s, B), 5);
    OK(gpt_bind(F.gm, F.model));
    clear_sums();
    step(0.0f, 1.0f, 0, got, NULL);
    tu_buffer_read(F.sums, 0, sums, sizeof sums);
    assert_memory_equal(sums, want_sums, sizeof sums);
    size_t off = 0;
    for (int i = 0; i < F.n_tensors; i++) {
        gpt_tensor_info t;
        gpt_tensor(&F.s, i, &t);
        size_t len = gpt_tensor_size(&t);
        float top = 0;
        for (size_t e = 0; e < len; e++)
            top = fmaxf(top, fabsf(want[off + e]));
        for (size_t e = 0; e < len; e++)
            if (fabsf(got[off + e] - want[off + e]) > 2e-6f * top)
                fail_msg("head in chunks: %s[%zu] is %.9g, whole %.9g (largest %.3g)", t.name, e,
                         got[off + e], want[off + e], top);
        off += len;
    }
    assert_int_equal(gpt_forward_logits(F.gm, &F.tok, B, T), CL_SUCCESS);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t += 6) {
            assert_int_equal(gpt_read_logits(F.gm, b, t, T, row), CL_SUCCESS);
            const float *w = want_logits + (b * T + t) * V;
            for (size_t v = 0; v < V; v++)
                if (fabsf(row[v] - w[v]) > 1e-5f * (1 + fabsf(w[v])))
                    fail_msg("chunked logits of (%d, %d)[%zu]: %.9g, whole %.9g", b, t, v, row[v],
                             w[v]);
        }
    gpt_destroy(F.gm);
    F.gm = whole;
    free(want), free(got), free(want_logits);
}

/* Launches of one micro-step (forward and backward, gpt_launches) per
 * block and for the rest, written out from gpt_forward.c and
 * gpt_backward.c (each CLBlast GEMM call counted once; a column sum is its
 * partials and their last pass), so that a pass that grows shows:
 *   forward per block   LAUNCHES_FWD_BLOCK: 4 GEMMs, the attention, the
 *                       residual + next LayerNorm twice, bias + GELU
 *   backward per block  LAUNCHES_BWD_BLOCK (--recompute norm): 10 GEMMs,
 *                       3 bias partials (one fused with GELU's backward)
 *                       and 2 pairs' last passes, 2 LayerNorm backwards of
 *                       2, the attention's 2, GELU and 2 LayerNorms again;
 *                       none runs those 3 fewer; block also
 *                       LAUNCHES_AGAIN_BLOCK for each block but the last
 *                       (the forward up to fch, ln_1 first)
 * measured as the difference of models of 2 and 1 blocks. Before the
 * attention in O(T) memory and the fusions it was 18 + 33 (test_launches
 * prints today's). */
enum { LAUNCHES_FWD_BLOCK = 8, LAUNCHES_BWD_BLOCK = 23, LAUNCHES_AGAIN_BLOCK = 7 };

static uint64_t micro_step_launches(unsigned layers, gpt_recompute r)
{
    gpt_shape s = {.layers = layers,
                   .heads = NH,
                   .width = C,
                   .context = T,
                   .recompute = r,
                   .vocab = GPT_BYTE_VOCAB};
    clg_model *model = gmt_model(&s);
    gpt_model *gm = NULL;
    char err[256];
    if (gpt_create(tu_ctx, &s, B, &gm, err, sizeof err) != 0)
        fail_msg("gpt_create: %s", err);
    OK(gpt_bind(gm, model));
    uint64_t l0 = gpt_launches(gm);
    assert_int_equal(gpt_forward(gm, &F.tok, B, NULL), CL_SUCCESS);
    assert_int_equal(gpt_backward(gm, &F.tok, B, 1.0f, (clg_view){0}, 0.0f), CL_SUCCESS);
    uint64_t n = gpt_launches(gm) - l0;
    assert_int_equal(clFinish(clg_context_queue(tu_ctx)), CL_SUCCESS);
    gpt_destroy(gm);
    clg_model_destroy(model);
    return n;
}

static void test_launches(void **state)
{
    (void)state;
    const int fwd = LAUNCHES_FWD_BLOCK, bwd = LAUNCHES_BWD_BLOCK;
    const int per_block[] = {[GPT_RECOMPUTE_NORM] = fwd + bwd,
                             [GPT_RECOMPUTE_NONE] = fwd + bwd - 3,
                             [GPT_RECOMPUTE_BLOCK] = fwd + bwd + LAUNCHES_AGAIN_BLOCK};
    for (int r = 0; r < GPT_RECOMPUTE_MODES; r++) {
        uint64_t one = micro_step_launches(1, (gpt_recompute)r),
                 two = micro_step_launches(2, (gpt_recompute)r);
        print_message("--recompute %s: %llu launches a micro-step of 1 block, %llu of 2\n",
                      gpt_recompute_name((gpt_recompute)r), (unsigned long long)one,
                      (unsigned long long)two);
        assert_int_equal(two - one, per_block[r]);
    }
}

/* gpt_gemm_shapes: the FLOPs of a micro-step's GEMMs, 3 x 2 N (12 C^2 L +
 * V C) for N positions (forward, dW, dX of each linear layer: 3C^2 + C^2 +
 * 4C^2 + 4C^2 per block; the head V C; the attention runs none), and every
 * call counted. */
static void test_gemm_shapes(void **state)
{
    (void)state;
    mlp_gemm_shape sh[MLP_GEMMS_MAX];
    size_t n = gpt_gemm_shapes(&F.s, B, sh, MLP_GEMMS_MAX);
    assert_true(n <= MLP_GEMMS_MAX);
    double flops = 0, N = (double)B * T;
    unsigned calls = 0;
    for (size_t i = 0; i < n; i++) {
        flops += sh[i].count * mlp_gemm_flops(&sh[i]);
        calls += sh[i].count;
    }
    assert_true(flops == 3 * 2 * N * (12.0 * C * C * L + (double)GPT_BYTE_VOCAB * C));
    assert_int_equal(calls, 3 * (4 * L + 1));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT (tests/gpt/torch_gpt.py runs it)\n", argv[0]);
        return 2;
    }
    out_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_formula), cmocka_unit_test(test_plan),
        cmocka_unit_test(test_grads),        cmocka_unit_test(test_recompute_modes),
        cmocka_unit_test(test_head_chunks),  cmocka_unit_test(test_launches),
        cmocka_unit_test(test_gemm_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
