/* test_contrastive.c - clgrad's contrastive loss (clgrad.h, "contrastive
 * losses") against the double-precision reference (ref_contrastive.c):
 *   - loss and gradients of both sides, one-directional and symmetric,
 *     cosine and dot products, fp32 and bf16 caches, with and without
 *     banks, at sizes of 1 to 128 row tiles and 1 to 3 d slices (B up to
 *     4096): the loss within 2e-5 relative, each side's gradient within
 *     rel L2 5e-5 (fp32 accumulation over up to 4608 columns), with the
 *     device's vector width and with the others (4, 1);
 *   - the split does not matter: the same rows filled in one call, in
 *     micro-batches of 7, or backwards from fp16 and strided buffers, give
 *     bit-identical losses and gradients;
 *   - the gradient slices handed out (clg_contrastive_grad): scale, offset,
 *     stride, fp32/fp16/bf16 rounding;
 *   - the memory plan equals what creation allocates, B = 65536 at d = 128
 *     included, and the budget is enforced before anything is allocated;
 *   - clg_sample_seed is the documented formula (values computed by an
 *     independent Python implementation of clgrad.h's text). */
#include "contrastive.h"
#include "ref_contrastive.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ------------------------------------------------------------ helpers */

static float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

static clg_contrastive *make(size_t batch, size_t dim, clg_dtype dtype, float tau, int symmetric,
                             int normalize, size_t bank)
{
    clg_contrastive_config cfg = tu_contrastive_config(batch, dim, bank, dtype);
    cfg.temperature = tau;
    cfg.symmetric = symmetric;
    cfg.normalize = normalize;
    return tu_contrastive_create(&cfg);
}

/* Fills rows [0, rows) of one side from host fp32 values. */
static void fill_host(clg_contrastive *c, clg_side side, const float *x, size_t rows, size_t d)
{
    cl_mem m = tu_buffer_from(x, rows * d * sizeof *x);
    OK(clg_contrastive_fill(c, side, 0, rows, m, 0, d, CLG_FP32, NULL));
    clReleaseMemObject(m);
}

static void read_grad(clg_contrastive *c, clg_side side, float *out, size_t n)
{
    clg_view v;
    OK(clg_contrastive_grad_view(c, side, &v));
    tu_buffer_read(v.mem, v.offset * 4, out, n * sizeof *out);
}

/* ------------------------------------------------------------ against the reference */

typedef struct ref_case {
    size_t n, d, bank, bank_fill; /* cache rows, row length, bank rows, rows pushed */
    int symmetric, normalize;
    clg_dtype dtype;
    float tau;
} ref_case;

static void run_case(const ref_case *rc, uint64_t seed)
{
    size_t n = rc->n, d = rc->d, M = rc->bank;
    clg_contrastive *c = make(n, d, rc->dtype, rc->tau, rc->symmetric, rc->normalize, M);
    float *q = tu_xmalloc(n * d * 4), *k = tu_xmalloc(n * d * 4);
    /* positives correlated with their queries, as after some training:
     * the softmax is neither flat nor one-hot */
    float scale = rc->normalize ? 1.0f : 0.3f;
    tu_fill_normal(q, n * d, seed, scale);
    tu_fill_normal(k, n * d, seed + 1, scale);
    for (size_t i = 0; i < n * d; i++)
        k[i] = 0.8f * q[i] + 0.6f * k[i];

    /* the bank: pushes of the cache's rows, as ContAccum makes them */
    size_t pushed = 0;
    while (pushed < rc->bank_fill) {
        size_t r = rc->bank_fill - pushed < n ? rc->bank_fill - pushed : n;
        float *bq = tu_xmalloc(r * d * 4), *bk = tu_xmalloc(r * d * 4);
        tu_fill_normal(bq, r * d, seed + 100 + pushed, scale);
        tu_fill_normal(bk, r * d, seed + 200 + pushed, scale);
        fill_host(c, CLG_SIDE_QUERY, bq, r, d);
        fill_host(c, CLG_SIDE_KEY, bk, r, d);
        OK(clg_contrastive_bank_push(c, r, NULL));
        pushed += r;
        free(bq), free(bk);
    }
    size_t m = 0;
    OK(clg_contrastive_bank_info(c, &m, NULL));
    assert_int_equal(m, rc->bank_fill < M ? rc->bank_fill : M);
    float *bq = tu_xmalloc((M ? M : 1) * d * 4), *bk = tu_xmalloc((M ? M : 1) * d * 4);
    if (M) {
        OK(clg_contrastive_bank_download(c, CLG_SIDE_QUERY, bq, M * d, NULL));
        OK(clg_contrastive_bank_download(c, CLG_SIDE_KEY, bk, M * d, NULL));
    }
    fill_host(c, CLG_SIDE_QUERY, q, n, d);
    fill_host(c, CLG_SIDE_KEY, k, n, d);
    OK(clg_contrastive_compute(c, n, NULL));
    float loss;
    OK(clg_contrastive_loss(c, &loss));
    float *gq = tu_xmalloc(n * d * 4), *gk = tu_xmalloc(n * d * 4);
    read_grad(c, CLG_SIDE_QUERY, gq, n * d);
    read_grad(c, CLG_SIDE_KEY, gk, n * d);

    /* the reference sees exactly the rows the device holds */
    if (rc->dtype == CLG_BF16)
        for (size_t i = 0; i < n * d; i++)
            q[i] = bf16_round(q[i]), k[i] = bf16_round(k[i]);
    ref_con_setup s = {n, d, m, rc->tau, rc->symmetric, rc->normalize};
    double *rq = tu_xmalloc(n * d * 8), *rk = tu_xmalloc(n * d * 8);
    double ref = ref_contrastive(&s, q, k, bq, bk, rq, rk);
    double dl = ref != 0 ? fabs(loss - ref) / fabs(ref) : fabs(loss);
    double eq = ref_rel_l2(gq, rq, n * d), ek = ref_rel_l2(gk, rk, n * d);
    print_message("n %zu d %zu bank %zu/%zu %s %s %s tau %g: loss %.7g (ref %.7g, rel %.2e), "
                  "grad rel L2 q %.2e k %.2e\n",
                  n, d, m, M, rc->symmetric ? "symmetric" : "q->k",
                  rc->normalize ? "cosine" : "dot", rc->dtype == CLG_BF16 ? "bf16" : "fp32",
                  (double)rc->tau, (double)loss, ref, dl, eq, ek);
    assert_true(dl <= 2e-5);
    assert_true(eq <= 5e-5);
    assert_true(ek <= 5e-5);
    if (!rc->symmetric && n > 1) {
        /* the keys still get the q->k direction's gradient: the reference's
         * is not zero, so that ek above did not compare 0 with 0 (the
         * device's and the reference's key gradients both dropped) */
        double k2 = 0;
        for (size_t i = 0; i < n * d; i++)
            k2 += rk[i] * rk[i];
        assert_true(k2 > 0);
    }

    free(q), free(k), free(bq), free(bk), free(gq), free(gk), free(rq), free(rk);
    clg_contrastive_destroy(c);
}

/* The cases, by what they exercise. */
static const ref_case
    /* one row: only the positive, loss 0 */
    ONE_ROW = {1, 3, 0, 0, 1, 1, CLG_FP32, 0.05f},
    /* partial tiles, d below one chunk, one direction */
    PARTIAL_TILES = {37, 5, 0, 0, 0, 1, CLG_FP32, 0.1f},
    /* one d slice of 128, a partly filled bank */
    ONE_SLICE = {100, 128, 250, 170, 1, 1, CLG_FP32, 0.05f},
    /* two slices (128 + 2) and chunks past d, a bank that wrapped */
    TWO_SLICES = {257, 130, 96, 300, 1, 1, CLG_FP32, 0.07f},
    /* dot products, one direction, bank */
    DOT_BANK = {300, 24, 64, 64, 0, 0, CLG_FP32, 1.0f},
    /* bf16 cache and bank */
    BF16_BANK = {300, 48, 128, 200, 1, 1, CLG_BF16, 0.05f},
    /* 32 row tiles x 32 column tiles */
    TILES_32 = {1024, 64, 0, 0, 1, 1, CLG_FP32, 0.05f},
    /* the same with dot products, one direction and a bank */
    TILES_32_DOT = {1024, 64, 64, 64, 0, 0, CLG_FP32, 1.0f},
    /* B = 4096: 128 x 128 tiles, plus 512 bank columns */
    B_4096 = {4096, 16, 512, 512, 1, 1, CLG_FP32, 0.05f};

/* Case i of n with seed seed0 + step * i. */
static void run_cases(const ref_case *const *cases, size_t n, uint64_t seed0, uint64_t step)
{
    for (size_t i = 0; i < n; i++)
        run_case(cases[i], seed0 + step * i);
}
#define RUN_CASES(list, seed0, step) run_cases(list, sizeof list / sizeof *list, seed0, step)

static void test_against_reference(void **state)
{
    (void)state;
    const ref_case *const cases[] = {&ONE_ROW,  &PARTIAL_TILES, &ONE_SLICE, &TWO_SLICES,
                                     &DOT_BANK, &BF16_BANK,     &TILES_32,  &B_4096};
    RUN_CASES(cases, 1000, 17);
}

/* The vector widths the library picks (4, or 8 where the device reports
 * a native float width of 8 or more), both on every device through the
 * test build's hook: the same tolerances, at sizes that give every
 * gradient vector width (VO 8/4, 2 and 1 at d 130, 48 and 5). */
static void test_other_vector_widths(void **state)
{
    (void)state;
    const ref_case *const cases[] = {&TWO_SLICES, &BF16_BANK, &PARTIAL_TILES, &TILES_32_DOT};
    const size_t widths[] = {4, 8};
    for (size_t w = 0; w < 2; w++) {
        clg__con_test_vw = widths[w];
        print_message("VW %zu:\n", widths[w]);
        RUN_CASES(cases, 2000, 31);
    }
    clg__con_test_vw = 0;
}

/* The smaller tiles of devices (or kernels) that allow fewer work-items
 * per group: 16 x 16 tiles at 32 work-items (rusticl on llvmpipe allows
 * no more), 4 x 4 at 4, through the test build's hook. rusticl 22.3 got
 * wrong results at 32 work-items from about 4096 columns on with the
 * widths the library no longer picks (VW 16, VO 1), hence the n 4096
 * case. */
static void test_small_work_groups(void **state)
{
    (void)state;
    const ref_case *const at32[] = {&B_4096, &TWO_SLICES, &TILES_32_DOT};
    const ref_case *const at4[] = {&PARTIAL_TILES, &BF16_BANK};
    clg__con_test_max_wg = 32;
    print_message("at most 32 work-items:\n");
    RUN_CASES(at32, 4000, 13);
    clg__con_test_max_wg = 4;
    print_message("at most 4 work-items:\n");
    RUN_CASES(at4, 5000, 13);
    clg__con_test_max_wg = 0;
}

/* ------------------------------------------------------------ the split does not matter */

static void test_split_invariance(void **state)
{
    (void)state;
    const size_t n = 150, d = 40;
    float *q = tu_xmalloc(n * d * 4), *k = tu_xmalloc(n * d * 4);
    tu_fill_normal(q, n * d, 5, 1.0f);
    tu_fill_normal(k, n * d, 6, 1.0f);
    float loss[3], *g[3][2];
    for (int way = 0; way < 3; way++) {
        clg_contrastive *c = make(n, d, CLG_FP32, 0.05f, 1, 1, 0);
        if (way == 0) {
            fill_host(c, CLG_SIDE_QUERY, q, n, d);
            fill_host(c, CLG_SIDE_KEY, k, n, d);
        } else if (way == 1) { /* micro-batches of 7, keys before queries */
            cl_mem mq = tu_buffer_from(q, n * d * 4), mk = tu_buffer_from(k, n * d * 4);
            for (size_t r = 0; r < n; r += 7) {
                size_t rows = n - r < 7 ? n - r : 7;
                OK(clg_contrastive_fill(c, CLG_SIDE_KEY, r, rows, mk, r * d, d, CLG_FP32, NULL));
            }
            for (size_t r = 0; r < n; r += 7) {
                size_t rows = n - r < 7 ? n - r : 7;
                OK(clg_contrastive_fill(c, CLG_SIDE_QUERY, r, rows, mq, r * d, d, CLG_FP32, NULL));
            }
            clReleaseMemObject(mq), clReleaseMemObject(mk);
        } else { /* backwards, one row at a time, from a strided buffer */
            size_t stride = d + 3;
            float *wide = tu_xmalloc(2 * n * stride * 4);
            for (size_t r = 0; r < n; r++)
                for (size_t j = 0; j < d; j++) {
                    wide[r * stride + j] = q[r * d + j];
                    wide[(n + r) * stride + j] = k[r * d + j];
                }
            cl_mem m = tu_buffer_from(wide, 2 * n * stride * 4);
            for (size_t r = n; r-- > 0;) {
                OK(clg_contrastive_fill(c, CLG_SIDE_QUERY, r, 1, m, r * stride, stride, CLG_FP32,
                                        NULL));
                OK(clg_contrastive_fill(c, CLG_SIDE_KEY, r, 1, m, (n + r) * stride, stride,
                                        CLG_FP32, NULL));
            }
            clReleaseMemObject(m);
            free(wide);
        }
        OK(clg_contrastive_compute(c, n, NULL));
        OK(clg_contrastive_loss(c, &loss[way]));
        for (int s = 0; s < 2; s++) {
            g[way][s] = tu_xmalloc(n * d * 4);
            read_grad(c, (clg_side)s, g[way][s], n * d);
        }
        clg_contrastive_destroy(c);
    }
    for (int way = 1; way < 3; way++) {
        assert_memory_equal(&loss[way], &loss[0], sizeof loss[0]);
        for (int s = 0; s < 2; s++)
            assert_memory_equal(g[way][s], g[0][s], n * d * 4);
    }
    for (int way = 0; way < 3; way++)
        free(g[way][0]), free(g[way][1]);
    free(q), free(k);
}

/* Fills from fp16 and bf16 sources: the cache holds what the source held. */
static void test_fill_dtypes(void **state)
{
    (void)state;
    const size_t n = 33, d = 9;
    clg_contrastive *c = make(n, d, CLG_FP32, 0.1f, 1, 1, 0);
    uint16_t *h = tu_xmalloc(n * d * 2), *b = tu_xmalloc(n * d * 2);
    float *want_q = tu_xmalloc(n * d * 4), *want_k = tu_xmalloc(n * d * 4);
    for (size_t i = 0; i < n * d; i++) {
        /* halves with small exact values: sign, exponent 13..16, mantissa */
        int e = 13 + (int)(i % 4), mant = (int)(i * 37 % 1024), sign = (int)(i % 3 == 0);
        h[i] = (uint16_t)(sign << 15 | e << 10 | mant);
        want_q[i] = (sign ? -1.0f : 1.0f) * ldexpf(1.0f + mant / 1024.0f, e - 15);
        float f = (float)(i % 17) - 8.25f;
        uint32_t u;
        memcpy(&u, &f, 4);
        b[i] = (uint16_t)(u >> 16);
        want_k[i] = f; /* exact in bf16 */
    }
    cl_mem mh = tu_buffer_from(h, n * d * 2), mb = tu_buffer_from(b, n * d * 2);
    OK(clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, n, mh, 0, d, CLG_FP16, NULL));
    OK(clg_contrastive_fill(c, CLG_SIDE_KEY, 0, n, mb, 0, d, CLG_BF16, NULL));
    float *got = tu_xmalloc(n * d * 4);
    tu_buffer_read(c->reps[CLG_SIDE_QUERY], 0, got, n * d * 4);
    assert_memory_equal(got, want_q, n * d * 4);
    tu_buffer_read(c->reps[CLG_SIDE_KEY], 0, got, n * d * 4);
    assert_memory_equal(got, want_k, n * d * 4);
    clReleaseMemObject(mh), clReleaseMemObject(mb);
    free(h), free(b), free(want_q), free(want_k), free(got);
    clg_contrastive_destroy(c);
}

/* ------------------------------------------------------------ gradient slices */

static void test_grad_slices(void **state)
{
    (void)state;
    const size_t n = 64, d = 20;
    clg_contrastive *c = make(n, d, CLG_FP32, 0.05f, 1, 1, 0);
    float *q = tu_xmalloc(n * d * 4), *k = tu_xmalloc(n * d * 4);
    tu_fill_normal(q, n * d, 11, 1.0f);
    tu_fill_normal(k, n * d, 12, 1.0f);
    fill_host(c, CLG_SIDE_QUERY, q, n, d);
    fill_host(c, CLG_SIDE_KEY, k, n, d);
    OK(clg_contrastive_compute(c, n, NULL));
    float *g = tu_xmalloc(n * d * 4);
    read_grad(c, CLG_SIDE_KEY, g, n * d);

    /* rows [10, 26) scaled by 4 (n / 16: the weight rule of clgrad.h)
     * into a buffer at offset 5 with stride d + 2, each dtype */
    const size_t row = 10, rows = 16, off = 5, stride = d + 2, total = off + rows * stride;
    const float scale = 4.0f;
    for (int dt = 0; dt < 3; dt++) {
        clg_dtype dtype = dt == 0 ? CLG_FP32 : dt == 1 ? CLG_FP16 : CLG_BF16;
        size_t es = dt == 0 ? 4 : 2;
        unsigned char *zero = calloc(total, es);
        cl_mem m = tu_buffer_from(zero, total * es);
        OK(clg_contrastive_grad(c, CLG_SIDE_KEY, row, rows, scale, m, off, stride, dtype, NULL));
        unsigned char *got = tu_xmalloc(total * es);
        tu_buffer_read(m, 0, got, total * es);
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < stride; j++) {
                size_t i = off + r * stride + j;
                float want = j < d ? g[(row + r) * d + j] * scale : 0.0f, v;
                if (dtype == CLG_FP32) {
                    memcpy(&v, got + 4 * i, 4);
                    assert_memory_equal(&v, &want, 4);
                } else if (dtype == CLG_BF16) {
                    uint16_t b;
                    memcpy(&b, got + 2 * i, 2);
                    uint32_t u = (uint32_t)b << 16;
                    memcpy(&v, &u, 4);
                    float w = bf16_round(want);
                    assert_memory_equal(&v, &w, 4);
                } else {
                    uint16_t hb;
                    memcpy(&hb, got + 2 * i, 2);
                    /* widen the half and compare with the nearest: within half an ulp */
                    int e = (hb >> 10) & 31, mant = hb & 1023;
                    v = (hb >> 15 ? -1.0f : 1.0f) *
                        (e ? ldexpf(1.0f + mant / 1024.0f, e - 15) : ldexpf(mant / 1024.0f, -14));
                    float ulp = e ? ldexpf(1.0f, e - 25) : ldexpf(1.0f, -24);
                    assert_true(fabsf(v - want) <= ulp * 1.0001f);
                }
            }
        for (size_t i = 0; i < off; i++) /* nothing before the first row */
            for (size_t b = 0; b < es; b++)
                assert_int_equal(got[i * es + b], 0);
        free(zero), free(got);
        clReleaseMemObject(m);
    }
    free(q), free(k), free(g);
    clg_contrastive_destroy(c);
}

/* ------------------------------------------------------------ memory */

static void check_plan_allocates(const clg_contrastive_config *cfg)
{
    clg_contrastive_plan est = clg_contrastive_plan_init(), mem = clg_contrastive_plan_init();
    OK(clg_contrastive_estimate(cfg, &est));
    uint64_t before = clg_context_device_bytes(tu_ctx);
    clg_contrastive *c = NULL;
    OK(clg_contrastive_create(tu_ctx, cfg, &c));
    uint64_t after = clg_context_device_bytes(tu_ctx);
    OK(clg_contrastive_memory(c, &mem));
    assert_memory_equal(&est, &mem, sizeof est);
    assert_int_equal(after - before, est.total);
    assert_int_equal(est.total, est.cache + est.grads + est.banks + est.rows);
    clg_contrastive_destroy(c);
    assert_int_equal(clg_context_device_bytes(tu_ctx), before);
}

static void test_memory_plan(void **state)
{
    (void)state;
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = 1000;
    cfg.dim = 33;
    cfg.dtype = CLG_BF16;
    cfg.bank_size = 777;
    check_plan_allocates(&cfg);
    clg_contrastive_plan p = clg_contrastive_plan_init();
    OK(clg_contrastive_estimate(&cfg, &p));
    assert_int_equal(p.cache, 2ull * 1000 * 33 * 2);
    assert_int_equal(p.grads, 2ull * 1000 * 33 * 4);
    assert_int_equal(p.banks, 2ull * 777 * 33 * 2);
    assert_int_equal(p.rows, 4ull * (8 * 1000 + 2 * 777) + 4);

    /* B = 65536 at d = 128, fp32, no bank: 128 MiB of cache and gradients,
     * O(B d), allocated for real within a budget of exactly that much */
    cfg = clg_contrastive_config_init();
    cfg.batch = 65536;
    cfg.dim = 128;
    OK(clg_contrastive_estimate(&cfg, &p));
    print_message("B 65536, d 128: cache %llu, grads %llu, rows %llu, total %llu bytes\n",
                  (unsigned long long)p.cache, (unsigned long long)p.grads,
                  (unsigned long long)p.rows, (unsigned long long)p.total);
    assert_int_equal(p.total, 2ull * 65536 * 128 * 4 * 2 + 4ull * 8 * 65536 + 4);
    uint64_t in_use = clg_context_device_bytes(tu_ctx);
    OK(clg_context_set_budget(tu_ctx, in_use + p.total - 1));
    clg_contrastive *c = NULL;
    assert_int_equal(clg_contrastive_create(tu_ctx, &cfg, &c), CLG_ERR_OVER_BUDGET);
    assert_null(c);
    assert_non_null(strstr(clg_last_error(tu_ctx), "clg_contrastive_create"));
    assert_int_equal(clg_context_device_bytes(tu_ctx), in_use); /* nothing allocated */
    OK(clg_context_set_budget(tu_ctx, in_use + p.total));
    check_plan_allocates(&cfg);
    OK(clg_context_set_budget(tu_ctx, 0));
}

/* ------------------------------------------------------------ replay seeds */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_sample_seed(void **state)
{
    (void)state;
    /* from a Python implementation of the formula in clgrad.h */
    assert_true(clg_sample_seed(0, 0, 0) == 0x2dc6a26ce0511e15ull);
    assert_true(clg_sample_seed(42, 0, 0) == 0x592d9c726ba49a21ull);
    assert_true(clg_sample_seed(42, 1, 0) == 0x12c5b9a00b7b39b5ull);
    assert_true(clg_sample_seed(42, 0, 1) == 0x1c3cf7ed0d8f6839ull);
    assert_true(clg_sample_seed(UINT64_MAX, 123456789, 1023) == 0x6e1b6ab058927afcull);
    /* distinct over a grid of updates and positions (no (u, p) / (u+1,
     * p-1) collisions) */
    enum { U = 64, P = 256 };
    uint64_t *all = tu_xmalloc(U * P * sizeof *all);
    for (uint64_t u = 0; u < U; u++)
        for (uint64_t p = 0; p < P; p++)
            all[u * P + p] = clg_sample_seed(7, u, p);
    qsort(all, U * P, sizeof *all, cmp_u64);
    for (size_t i = 1; i < U * P; i++)
        assert_true(all[i - 1] != all[i]);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_other_vector_widths),
        cmocka_unit_test(test_small_work_groups),
        cmocka_unit_test(test_split_invariance),
        cmocka_unit_test(test_fill_dtypes),
        cmocka_unit_test(test_grad_slices),
        cmocka_unit_test(test_memory_plan),
        cmocka_unit_test(test_sample_seed),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
