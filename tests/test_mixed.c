/* test_mixed.c - mixed precision: fp16 gradients (vload_half) and bf16
 * gradients against the reference fed the same rounded values, fp16
 * overflow caught by the non-finite flag, the fp16/bf16 copy of the params
 * (round to nearest even, bit-exact against reference.c's conversions,
 * including ties, subnormals, inf and NaN), and the bf16 accumulator with
 * stochastic rounding (unbiased on average; never up to inf at FLT_MAX). */
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

static uint16_t to_half(clg_dtype dt, float x)
{
    return dt == CLG_FP16 ? ref_f32_to_f16(x) : ref_f32_to_bf16(x);
}

static float from_half(clg_dtype dt, uint16_t h)
{
    return dt == CLG_FP16 ? ref_f16_to_f32(h) : ref_bf16_to_f32(h);
}

/* One micro-step with low-precision grads: the device gets the 16-bit
 * values, the reference their exact fp32 values. */
static int half_micro(twin *tw, clg_grads *hg, clg_dtype dt, const float *g, float w)
{
    uint16_t *h = tu_xmalloc(tw->n * sizeof(uint16_t));
    float *back = tu_xmalloc(tw->n * sizeof(float));
    for (size_t i = 0; i < tw->n; i++) {
        h[i] = to_half(dt, g[i]);
        back[i] = from_half(dt, h[i]);
    }
    int updated = -1;
    OK(clg_grads_upload(hg, CLG_ALL_TENSORS, h, tw->n, NULL));
    OK(clg_step(tw->model, hg, w, &updated, NULL));
    int ref_updated = ref_micro_f(&tw->ref, back, w);
    assert_int_equal(updated, ref_updated);
    free(back);
    free(h);
    return updated;
}

/* A twin of cfg on the default layout from seed, and gradients of dtype dt
 * for its model. */
static clg_grads *half_twin(twin *tw, const clg_config *cfg, uint64_t seed, clg_dtype dt)
{
    twin_init(tw, tu_ctx, cfg, &twin_default_layout, seed);
    clg_grads *hg = NULL;
    OK(clg_grads_create(tw->model, dt, &hg));
    return hg;
}

static void half_grads_case(clg_dtype dt, int fuse)
{
    clg_config cfg = tu_config(CLG_ADAMW, 1e-2f, 3);
    cfg.fuse_last_micro_step = fuse;
    twin tw;
    clg_grads *hg = half_twin(&tw, &cfg, 111, dt);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned c = 0; c < 3; c++) {
        for (unsigned m = 0; m < 3; m++) {
            twin_gradient(&tw, c, m, g);
            assert_int_equal(half_micro(&tw, hg, dt, g, 1.0f + (float)m), m == 2);
        }
        /* the reference used the same rounded gradients: fp32 tolerances */
        twin_check(&tw, REF_RTOL, REF_ATOL, dt == CLG_FP16 ? "fp16 grads" : "bf16 grads");
    }
    free(g);
    clg_grads_destroy(hg);
    twin_free(&tw);
}

static void test_fp16_grads(void **state)
{
    (void)state;
    half_grads_case(CLG_FP16, 0);
    half_grads_case(CLG_FP16, 1);
}

static void test_bf16_grads(void **state)
{
    (void)state;
    half_grads_case(CLG_BF16, 0);
    half_grads_case(CLG_BF16, 1);
}

/* 65504 * 2 does not fit in fp16: the caller's conversion writes inf bits
 * (0x7c00), and the statistics pass flags it. */
static void test_fp16_overflow(void **state)
{
    (void)state;
    for (int fuse = 0; fuse <= 1; fuse++) {
        clg_config cfg = tu_config(CLG_SGD, 0.1f, 2);
        cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
        cfg.fuse_last_micro_step = fuse;
        twin tw;
        clg_grads *hg = half_twin(&tw, &cfg, 112, CLG_FP16);
        float *g = tu_xmalloc(tw.n * sizeof(float));
        float *snap = twin_snapshot(&tw);
        for (unsigned m = 0; m < 2; m++) {
            twin_gradient(&tw, 0, m, g);
            if ((int)m == fuse) /* the last micro-step on path C, the first on A */
                g[123] = 65504.0f * 2.0f;
            assert_int_equal(ref_f32_to_f16(65504.0f * 2.0f), 0x7c00);
            half_micro(&tw, hg, CLG_FP16, g, 1.0f);
        }
        twin_assert_unchanged(&tw, snap, "fp16 overflow");
        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.skipped_updates, 1);
        assert_int_equal(s.updates, 0);
        assert_int_equal(s.last_nonfinite, 1);
        free(snap);
        free(g);
        clg_grads_destroy(hg);
        twin_free(&tw);
    }
}

/* ---------------------------------------------------- param copy */

static void read_copy(twin *tw, size_t counts_total, uint16_t *out)
{
    size_t off = 0;
    for (size_t t = 0; t < clg_model_tensor_count(tw->model); t++) {
        clg_view v;
        OK(clg_model_param_copy_view(tw->model, (int)t, &v));
        assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE,
                                             v.offset * sizeof(uint16_t),
                                             v.count * sizeof(uint16_t), out + off, 0, NULL, NULL),
                         CL_SUCCESS);
        off += v.count;
    }
    assert_int_equal(off, counts_total);
}

static void assert_copy_matches(twin *tw, clg_dtype dt, const char *what)
{
    uint16_t *copy = tu_xmalloc(tw->n * sizeof(uint16_t));
    read_copy(tw, tw->n, copy);
    OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, tw->host, (size_t)clg_model_param_count(tw->model), NULL));
    for (size_t i = 0; i < tw->n; i++) {
        uint16_t want = to_half(dt, tw->host[i]);
        int ok = isnan(tw->host[i]) ? isnan(from_half(dt, copy[i])) : copy[i] == want;
        if (!ok)
            fail_msg("%s: copy[%zu] = 0x%04x, want 0x%04x (RNE of %a)", what, i, copy[i], want,
                     (double)tw->host[i]);
    }
    free(copy);
}

static void param_copy_case(clg_dtype dt)
{
    const char *name = dt == CLG_FP16 ? "fp16 copy" : "bf16 copy";
    clg_config cfg = tu_config(CLG_ADAM, 1e-2f, 2);
    cfg.param_copy_dtype = dt;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 113);
    for (unsigned c = 0; c < 2; c++) {
        twin_cycle(&tw, c, 2, 0.0f);
        twin_check(&tw, REF_RTOL, REF_ATOL, name);
        assert_copy_matches(&tw, dt, name);
    }
    twin_free(&tw);

    /* special values through an update that leaves p unchanged (plain SGD,
     * zero gradients): ties, subnormals, overflow, inf, NaN, signed zero */
    static const float specials[] = {
        1.0f + 0x1p-11f,
        1.0f + 3 * 0x1p-11f, /* fp16 ties: down / up to even */
        1.0f + 0x1p-8f,
        1.0f + 3 * 0x1p-8f, /* bf16 ties */
        -(1.0f + 0x1p-11f),
        65504.0f,
        65519.0f,
        65520.0f,
        1e6f,
        -1e6f,
        0x1p-24f,
        0x1p-25f,
        3 * 0x1p-25f, /* fp16 subnormal ties */
        0x1.ff8p-15f,
        0x1.ffcp-15f,
        0x1p-14f,
        1e-10f,
        3e38f,
        0x1.fffffep127f,
        0x1.fffp-127f, /* fp32 subnormals */
        0x1p-149f,
        -0x1p-140f,
        0x1.8p-128f,
        INFINITY,
        -INFINITY,
        NAN,
        -0.0f,
        0.0f,
        0.1f,
        -2.71828f,
        1.0f + 0x1p-23f,
    };
    enum { NS = sizeof specials / sizeof specials[0] };
    static const size_t counts[] = {NS, 5};
    const twin_layout lay = TWIN_ONE_GROUP(counts);
    cfg = clg_config_init(CLG_SGD);
    cfg.lr = 1e-3f;
    cfg.param_copy_dtype = dt;
    twin_init(&tw, tu_ctx, &cfg, &lay, 114);
    float p0[NS + 5];
    memcpy(p0, specials, sizeof specials);
    for (int i = 0; i < 5; i++)
        p0[NS + i] = (float)i - 2.0f;
    OK(clg_model_upload_params(tw.model, CLG_ALL_TENSORS, p0, (size_t)clg_model_param_count(tw.model), NULL));
    /* the reference starts from the same params */
    for (int i = 0; i < NS + 5; i++)
        tw.ref.p[i] = (double)p0[i];
    float zero[NS + 5] = {0};
    assert_int_equal(twin_micro(&tw, zero, 1.0f), 1);
    OK(clg_model_download_params(tw.model, CLG_ALL_TENSORS, tw.host, (size_t)clg_model_param_count(tw.model), NULL));
    for (int i = 0; i < NS + 5; i++) {
        /* p - lr*0 == p in IEEE arithmetic, subnormals included (neither
         * docs/semantics.md nor the reference flushes them): bit for bit
         * the reference's value, NaN for NaN */
        float want = (float)tw.ref.p[i];
        int same = isnan(want) ? isnan(tw.host[i]) : !memcmp(&want, &tw.host[i], 4);
        if (!same)
            fail_msg("%s: param %d (%a before) is %a after an update with zero gradient, %a in "
                     "the reference%s",
                     name, i, (double)p0[i], (double)tw.host[i], (double)want,
                     fpclassify(p0[i]) == FP_SUBNORMAL ? " (subnormal flushed to zero?)" : "");
    }
    /* the reference kept every special value, subnormals too */
    for (int i = 0; i < NS + 5; i++)
        assert_true(isnan(p0[i]) ? isnan(tw.ref.p[i]) : tw.ref.p[i] == (double)p0[i]);
    assert_copy_matches(&tw, dt, name);
    twin_free(&tw);
}

static void test_param_copy_fp16(void **state)
{
    (void)state;
    param_copy_case(CLG_FP16);
}

static void test_param_copy_bf16(void **state)
{
    (void)state;
    param_copy_case(CLG_BF16);
}

/* ---------------------------------------------------- bf16 accumulator */

/* acc = 1 + 63 * 0.001 over 64 micro-steps. bf16 spacing at 1 is 2^-7 =
 * 0.0078, so round-to-nearest would stay at 1.0 (bias -0.063); stochastic
 * rounding keeps the expectation. Each rounding adds variance <= ulp^2/4,
 * so an element's std is <= sqrt(63) * 2^-8 = 0.031 and the mean of 4096
 * independent elements has std <= 4.8e-4: 5 sigma = 2.4e-3. Read through
 * SGD lr 1 from p = 0: p = -acc/64 (path A: acc is bf16 when read). */
static void bf16_sr_case(int fuse)
{
    enum { N = 4096, K = 64 };
    clg_config cfg = tu_config(CLG_SGD, 1.0f, K);
    cfg.acc_dtype = CLG_BF16;
    cfg.fuse_last_micro_step = fuse;
    cfg.seed = 12345;
    static const size_t counts[] = {N - 5, 5};
    const twin_layout lay = TWIN_ONE_GROUP(counts);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &lay, 115);
    float *p = tu_xmalloc(N * sizeof(float));
    memset(p, 0, N * sizeof(float));
    OK(clg_model_upload_params(tw.model, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(tw.model), NULL));
    float *g = tu_xmalloc(N * sizeof(float));
    const float small = 0.001f;
    for (unsigned m = 0; m < K; m++) {
        for (size_t i = 0; i < N; i++)
            g[i] = m == 0 ? 1.0f : small;
        int updated = -1;
        OK(clg_grads_upload(tw.grads, CLG_ALL_TENSORS, g, N, NULL));
        OK(clg_step(tw.model, tw.grads, 1.0f, &updated, NULL));
        assert_int_equal(updated, m == K - 1);
    }
    OK(clg_model_download_params(tw.model, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(tw.model), NULL));
    double want = 1.0 + (K - 1) * (double)small, mean = 0;
    size_t off_lattice = 0;
    for (size_t i = 0; i < N; i++) {
        double acc = -(double)p[i] * K; /* exact: K is a power of two */
        mean += acc;
        /* path A: the accumulator really is bf16, acc is on its lattice
         * (path C adds the last micro-step in fp32 inside the update) */
        if (!fuse && (float)acc != ref_bf16_to_f32(ref_f32_to_bf16((float)acc)))
            off_lattice++;
    }
    mean /= N;
    fprintf(stderr, "bf16 stochastic rounding (fuse %d): mean %.6f, exact %.6f, RNE would give 1\n",
            fuse, mean, want);
    if (off_lattice)
        fail_msg("%zu of %d accumulators are not bf16 values", off_lattice, N);
    if (!(fabs(mean - want) <= 2.4e-3))
        fail_msg("bf16 stochastic rounding biased: mean %.6f, want %.6f +- 2.4e-3", mean, want);
    free(g);
    free(p);
    twin_free(&tw);
}

static void test_bf16_stochastic_rounding(void **state)
{
    (void)state;
    bf16_sr_case(0);
    bf16_sr_case(1);
}

/* The edges of stochastic rounding, lane by lane (the kernels convert four
 * lanes at once): a finite value next to FLT_MAX never rounds up to inf,
 * whatever its random bits; one 2^16 below may round either way; inf stays
 * inf and a NaN a quiet NaN. Read straight from the bf16 accumulator after
 * one micro-step of two (path A, nothing updated yet). */
static void test_bf16_sr_edges(void **state)
{
    (void)state;
    enum { N = 4096 };
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.accum_steps = 2;
    cfg.acc_dtype = CLG_BF16;
    cfg.fuse_last_micro_step = 0;
    cfg.seed = 777;
    static const size_t counts[] = {N};
    const twin_layout lay = TWIN_ONE_GROUP(counts);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &lay, 116);
    float *g = tu_xmalloc(N * sizeof(float));
    for (size_t i = 0; i < N; i++) {
        const uint32_t low = (uint32_t)(i * 40503u) & 0xffffu; /* spread over the dropped bits */
        const uint32_t sign = (uint32_t)(i & 1) << 31;
        uint32_t u;
        switch (i % 8) {
        case 0: case 1: u = 0x7f7f0000u | low | 1u; break;  /* max exponent, top bf16 */
        case 2: case 3: u = 0x7f7e0000u | low | 1u; break;  /* one bf16 below */
        case 4: u = 0x7f800000u; break;                    /* inf */
        case 5: u = 0x7fc00001u | (low << 6); break;       /* NaN, payload in the low half */
        default: u = 0x3f800000u | low; break;             /* ordinary */
        }
        u |= sign;
        memcpy(&g[i], &u, sizeof u);
    }
    int updated = -1;
    OK(clg_grads_upload(tw.grads, CLG_ALL_TENSORS, g, N, NULL));
    OK(clg_step(tw.model, tw.grads, 1.0f, &updated, NULL));
    assert_int_equal(updated, 0);
    clg_view v;
    OK(clg_model_acc_view(tw.model, 0, &v));
    uint16_t *acc = tu_xmalloc(N * sizeof(uint16_t));
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE,
                                         v.offset * sizeof(uint16_t), N * sizeof(uint16_t), acc,
                                         0, NULL, NULL),
                     CL_SUCCESS);
    size_t bad = 0, up = 0, down = 0;
    for (size_t i = 0; i < N; i++) {
        uint32_t u;
        memcpy(&u, &g[i], sizeof u);
        const uint16_t h = acc[i], trunc = (uint16_t)(u >> 16), sign = (uint16_t)(u >> 16 & 0x8000u);
        int ok;
        switch (i % 8) {
        case 0: case 1: ok = h == trunc; break;
        case 2: case 3: case 6: case 7:
            ok = h == trunc || h == (uint16_t)(trunc + 1);
            up += h != trunc;
            down += h == trunc;
            break;
        case 4: ok = h == (uint16_t)(sign | 0x7f80u); break;
        default: ok = (h & 0x7fc0u) == 0x7fc0u && (h & 0x8000u) == sign; break;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "element %zu: fp32 0x%08x stored as bf16 0x%04x\n", i, u, h);
    }
    if (bad)
        fail_msg("%zu of %d bf16 roundings wrong at the edges", bad, N);
    /* both directions happen (2048 lanes with random dropped bits) */
    assert_true(up > 100 && down > 100);
    free(acc);
    free(g);
    twin_free(&tw);
}

TU_MAIN("mixed", tu_group_setup, tu_group_teardown,
        cmocka_unit_test(test_fp16_grads),      cmocka_unit_test(test_bf16_grads),
        cmocka_unit_test(test_fp16_overflow),   cmocka_unit_test(test_param_copy_fp16),
        cmocka_unit_test(test_param_copy_bf16), cmocka_unit_test(test_bf16_stochastic_rounding),
        cmocka_unit_test(test_bf16_sr_edges))
