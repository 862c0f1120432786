/* test_qstate_sr.c - the rounding of low-precision training state:
 *  - Q8/Q4 decoding on the device is the host's table bit for bit (an SGD
 *    probe whose params receive the decoded momentum buffer exactly:
 *    momentum 1, dampening 1, lr 1, params reset to 0), and every map
 *    value encodes to its own code;
 *  - bf16 states: round to nearest even bit for bit on exact inputs, and
 *    within half a bf16 spacing of the reference over updates;
 *  - stochastic rounding of bf16 and Q8/Q4 states and of bf16 master
 *    weights: always one of the two neighbours, rounding up with the
 *    probability of the dropped fraction (the double reference's), by
 *    fraction bins and over all elements within binomial bounds, the same
 *    bits for the same seed and different bits for another;
 *  - bf16 master weights: uploaded with round to nearest even, and updates
 *    smaller than a bf16 spacing still move the params on average (what
 *    nearest rounding would lose). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qstate.h"
#include "ref_quant.h"
#include "reference.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1 << 16 };

static clg_model *one_tensor(const clg_config *c, size_t n)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, c, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", n, 0, &t));
    OK(clg_model_finalize(m));
    return m;
}

/* one_tensor with its fp32 gradients in *gr. */
static clg_model *one_tensor_grads(const clg_config *c, size_t n, clg_grads **gr)
{
    clg_model *m = one_tensor(c, n);
    OK(clg_grads_create(m, CLG_FP32, gr));
    return m;
}

/* One micro-step of fp32 gradients g on path C. */
static void step(clg_model *m, clg_grads *gr, const float *g, size_t n)
{
    OK(clg_grads_upload(gr, CLG_ALL_TENSORS, g, n, NULL));
    int updated = 0;
    OK(clg_step(m, gr, 1.0f, &updated, NULL));
    assert_int_equal(updated, 1);
}

static void raw_state(clg_model *m, int s, void *codes, float *absmax)
{
    size_t bytes, scales;
    OK(clg_model_state_format(m, s, 0, NULL, &bytes, &scales));
    OK(clg_model_download_state_raw(m, s, 0, codes, bytes, absmax, scales, NULL));
}

static float bf16_value(uint16_t h) { return ref_bf16_to_f32(h); }

/* ------------------------------------------------------------ decoding */

static void decode_probe(clg_dtype dtype)
{
    clg_config c = clg_config_init(CLG_SGD);
    c.state_dtype = dtype;
    c.state_min_size = 0;
    c.lr = 1.0f;
    c.momentum = 1.0f;
    c.dampening = 1.0f;
    clg_grads *gr = NULL;
    clg_model *m = one_tensor_grads(&c, N, &gr);
    float map[256];
    size_t k = clg__qmap_fill(dtype, true, map);
    size_t block = clg__qblock(dtype);
    /* every block: +1 (so absmax is 1) and then every code's value */
    float *g = tu_xmalloc(N * sizeof *g), *p = tu_xmalloc(N * sizeof *p);
    unsigned *want = tu_xmalloc(N * sizeof *want);
    for (size_t i = 0; i < N; i++) {
        want[i] = i % block == 0 ? (unsigned)(k - 1) : (unsigned)((i * 7 + i / block) % k);
        g[i] = map[want[i]];
    }
    step(m, gr, g, N);
    unsigned char *raw = tu_xmalloc(N);
    float *absmax = tu_xmalloc(N / block * sizeof *absmax);
    raw_state(m, 0, raw, absmax);
    unsigned *codes = tu_xmalloc(N * sizeof *codes);
    ref_unpack_codes(dtype, raw, N, codes);
    for (size_t i = 0; i < N; i++)
        if (codes[i] != want[i])
            fail_msg("map value %zu (%.9g) encoded to code %u", (size_t)want[i],
                     (double)g[i], codes[i]);
    for (size_t b = 0; b < N / block; b++)
        assert_true(absmax[b] == 1.0f);
    /* the host's dequantization of every code, against the device's:
     * p = 0 - 1 * (1 * buffer + 0 * g) is minus the decoded buffer */
    float *host = tu_xmalloc(N * sizeof *host);
    OK(clg_model_download_state(m, 0, 0, host, N, NULL));
    memset(p, 0, N * sizeof *p);
    OK(clg_model_upload_params(m, 0, p, N, NULL));
    step(m, gr, g, N);
    OK(clg_model_download_params(m, 0, p, N, NULL));
    for (size_t i = 0; i < N; i++) /* bit for bit, but 0 - 0 has no sign to tell */
        if (host[i] != 0.0f ? memcmp(&(float){-p[i]}, &host[i], 4) != 0 : p[i] != 0.0f)
            fail_msg("code %u: the device decodes %.9g, the host %.9g", codes[i], (double)-p[i],
                     (double)host[i]);
    free(g);
    free(p);
    free(want);
    free(raw);
    free(absmax);
    free(codes);
    free(host);
    clg_grads_destroy(gr);
    clg_model_destroy(m);
}

static void test_device_decodes_the_host_table(void **state)
{
    (void)state;
    decode_probe(CLG_Q8);
    decode_probe(CLG_Q4);
}

/* ------------------------------------------------------------ bf16 states */

static void test_bf16_states_nearest(void **state)
{
    (void)state;
    clg_config c = clg_config_init(CLG_ADAMW);
    c.state_dtype = CLG_BF16;
    clg_grads *gr = NULL;
    clg_model *m = one_tensor_grads(&c, N, &gr);
    float *g = tu_xmalloc(N * sizeof *g);
    tu_fill_normal(g, N, 41, 1.0f);
    step(m, gr, g, N);
    uint16_t *h = tu_xmalloc(N * 2);
    volatile float b1 = 1.0f - c.beta1, b2 = 1.0f - c.beta2;
    raw_state(m, 0, h, NULL);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(h[i], ref_f32_to_bf16(b1 * g[i]));
    raw_state(m, 1, h, NULL);
    for (size_t i = 0; i < N; i++) {
        volatile float t = b2 * g[i];
        assert_int_equal(h[i], ref_f32_to_bf16(t * g[i]));
    }
    /* the dequantized download is the widened bits */
    float *f = tu_xmalloc(N * sizeof *f);
    OK(clg_model_download_state(m, 1, 0, f, N, NULL));
    for (size_t i = 0; i < N; i++)
        assert_true(f[i] == bf16_value(h[i]));
    free(f);
    free(h);
    free(g);
    clg_grads_destroy(gr);
    clg_model_destroy(m);
}

/* Stochastic rounding rounds up with the probability f of the dropped
 * fraction, f = (x - lo) / (hi - lo) in double between the neighbours lo and
 * hi. The elements are binned by f; in each bin, and over all elements, the
 * count of round-ups is a sum of independent Bernoulli(f_i) draws, so it
 * must be within 5 of its standard deviations sqrt(sum f_i (1 - f_i)) of
 * sum f_i, plus 1 for the device's own f (bf16: exactly the 16 dropped bits
 * against 16 random bits; Q8/Q4: fp32 arithmetic against 24 random bits,
 * off by about 1e-7 an element). A mean error of 0 alone would pass a fair
 * coin that ignores f: with 2^16 / 8 elements a bin, the coin is off by
 * hundreds of deviations in the lowest and the highest bin. */
enum { SR_BINS = 8 };
typedef struct sr_tally {
    double n[SR_BINS + 1], ups[SR_BINS + 1], sum_f[SR_BINS + 1], var[SR_BINS + 1];
} sr_tally; /* [SR_BINS]: all elements */

static void sr_add(sr_tally *t, double f, int up)
{
    size_t bin = (size_t)(f * SR_BINS);
    bin = bin < SR_BINS ? bin : SR_BINS - 1;
    const size_t rows[2] = {bin, SR_BINS};
    for (size_t r = 0; r < 2; r++) {
        t->n[rows[r]] += 1;
        t->ups[rows[r]] += up;
        t->sum_f[rows[r]] += f;
        t->var[rows[r]] += f * (1 - f);
    }
}

static void sr_check(const sr_tally *t, const char *what)
{
    for (size_t b = 0; b <= SR_BINS; b++) {
        if (t->n[b] == 0)
            continue;
        double off = t->ups[b] - t->sum_f[b], bound = 5 * sqrt(t->var[b]) + 1;
        char bin[32] = "all";
        if (b < SR_BINS)
            snprintf(bin, sizeof bin, "[%g, %g)", (double)b / SR_BINS, (double)(b + 1) / SR_BINS);
        if (!(fabs(off) <= bound))
            fail_msg("%s stochastic rounding, fractions %s: %.0f of %.0f rounded up, expected "
                     "%.1f +- %.1f",
                     what, bin, t->ups[b], t->n[b], t->sum_f[b], bound);
    }
}

/* Two models of seed s1 and s2 after one update of g: the state bits. */
static void sr_states(clg_config c, uint64_t seed, const float *g, void *out0, float *absmax)
{
    c.seed = seed;
    clg_grads *gr = NULL;
    clg_model *m = one_tensor_grads(&c, N, &gr);
    step(m, gr, g, N);
    raw_state(m, 0, out0, absmax);
    clg_grads_destroy(gr);
    clg_model_destroy(m);
}

static void test_bf16_states_stochastic(void **state)
{
    (void)state;
    clg_config c = clg_config_init(CLG_SGD);
    c.momentum = 0.9f;
    c.state_dtype = CLG_BF16;
    c.state_rounding = CLG_ROUND_STOCHASTIC;
    float *g = tu_xmalloc(N * sizeof *g);
    tu_fill_normal(g, N, 43, 1.0f);
    uint16_t *a = tu_xmalloc(N * 2), *b = tu_xmalloc(N * 2), *o = tu_xmalloc(N * 2);
    sr_states(c, 1, g, a, NULL);
    sr_states(c, 1, g, b, NULL);
    sr_states(c, 2, g, o, NULL);
    assert_memory_equal(a, b, N * 2);
    assert_memory_not_equal(a, o, N * 2);
    /* the buffer is g itself: each bf16 is g truncated or one up (in
     * magnitude), up with the probability of the truncated fraction */
    sr_tally t = {0};
    for (size_t i = 0; i < N; i++) {
        uint32_t u;
        memcpy(&u, &g[i], 4);
        uint16_t down = (uint16_t)(u >> 16);
        assert_true(a[i] == down || a[i] == (uint16_t)(down + 1));
        double lo = fabs((double)bf16_value(down));
        double spacing = fabs((double)bf16_value((uint16_t)(down + 1))) - lo;
        sr_add(&t, (fabs((double)g[i]) - lo) / spacing, a[i] != down);
    }
    sr_check(&t, "bf16");
    free(g);
    free(a);
    free(b);
    free(o);
}

/* ------------------------------------------------------------ Q8/Q4 SR */

static void q_stochastic(clg_dtype dtype)
{
    clg_config c = clg_config_init(CLG_SGD);
    c.momentum = 0.9f;
    c.state_dtype = dtype;
    c.state_min_size = 0;
    c.state_rounding = CLG_ROUND_STOCHASTIC;
    size_t block = clg__qblock(dtype);
    float *g = tu_xmalloc(N * sizeof *g);
    tu_fill_normal(g, N, 47, 1.0f);
    for (size_t i = 0; i < N; i++)
        g[i] = i % block == 0 ? 4.0f : fminf(fmaxf(g[i], -3.9f), 3.9f); /* absmax 4: exact x */
    unsigned char *a = tu_xmalloc(N), *b = tu_xmalloc(N), *o = tu_xmalloc(N);
    float *am = tu_xmalloc(N / block * sizeof *am);
    sr_states(c, 5, g, a, am);
    sr_states(c, 5, g, b, am);
    sr_states(c, 6, g, o, am);
    size_t bytes = dtype == CLG_Q8 ? N : N / 2;
    assert_memory_equal(a, b, bytes);
    assert_memory_not_equal(a, o, bytes);
    float fmap[256];
    size_t k = clg__qmap_fill(dtype, true, fmap);
    ref_qmap map;
    ref_qmap_from_floats(fmap, k, &map);
    unsigned *codes = tu_xmalloc(N * sizeof *codes);
    ref_unpack_codes(dtype, a, N, codes);
    sr_tally t = {0};
    for (size_t i = 0; i < N; i++) {
        assert_true(am[i / block] == 4.0f);
        double x = g[i] / 4.0;
        unsigned lo, hi;
        ref_qneighbours(&map, x, &lo, &hi);
        if (codes[i] != lo && codes[i] != hi)
            fail_msg("element %zu: x %.9g between codes %u and %u, stochastic code %u", i, x, lo,
                     hi, codes[i]);
        if (lo != hi)
            sr_add(&t, (x - map.v[lo]) / (map.v[hi] - map.v[lo]), codes[i] == hi);
    }
    sr_check(&t, dtype == CLG_Q8 ? "Q8" : "Q4");
    free(g);
    free(a);
    free(b);
    free(o);
    free(am);
    free(codes);
}

static void test_q_states_stochastic(void **state)
{
    (void)state;
    q_stochastic(CLG_Q8);
    q_stochastic(CLG_Q4);
}

/* ------------------------------------------------------------ bf16 master */

static void test_bf16_master(void **state)
{
    (void)state;
    clg_config c = clg_config_init(CLG_SGD);
    c.master_dtype = CLG_BF16;
    c.seed = 9;
    clg_model *m = one_tensor(&c, N);
    float *p = tu_xmalloc(N * sizeof *p), *back = tu_xmalloc(N * sizeof *back);
    tu_fill_uniform(p, N, 51, -2.0f, 2.0f);
    OK(clg_model_upload_params(m, 0, p, N, NULL));
    OK(clg_model_download_params(m, 0, back, N, NULL));
    for (size_t i = 0; i < N; i++)
        assert_true(back[i] == bf16_value(ref_f32_to_bf16(p[i])));
    clg_view v;
    OK(clg_model_param_view(m, 0, &v));
    uint16_t first;
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE, v.offset * 2,
                                         2, &first, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(first, ref_f32_to_bf16(p[0]));
    clg_model_destroy(m);

    /* params at 1, an update of 0.3 of a spacing (2^-7 at 1, 2^-8 below):
     * nearest rounding would keep every param at 1; stochastic moves about
     * 30% of them down one spacing */
    c.lr = 0.3f * 0x1p-8f;
    clg_grads *gr = NULL;
    float *g = tu_xmalloc(N * sizeof *g);
    size_t moved[2] = {0, 0};
    uint16_t *bits[2];
    for (int run = 0; run < 2; run++) {
        m = one_tensor_grads(&c, N, &gr);
        for (size_t i = 0; i < N; i++) {
            p[i] = 1.0f;
            g[i] = 1.0f;
        }
        OK(clg_model_upload_params(m, 0, p, N, NULL));
        step(m, gr, g, N);
        OK(clg_model_download_params(m, 0, back, N, NULL));
        bits[run] = tu_xmalloc(N * 2);
        for (size_t i = 0; i < N; i++) {
            assert_true(back[i] == 1.0f || back[i] == 1.0f - 0x1p-8f);
            moved[run] += back[i] != 1.0f;
            bits[run][i] = ref_f32_to_bf16(back[i]);
        }
        clg_grads_destroy(gr);
        clg_model_destroy(m);
    }
    assert_memory_equal(bits[0], bits[1], N * 2); /* same seed, same bits */
    double frac = (double)moved[0] / N, sigma = sqrt(0.3 * 0.7 / N);
    if (fabs(frac - 0.3) > 5 * sigma)
        fail_msg("bf16 master: %.4f of the params moved, expected 0.3", frac);
    free(bits[0]);
    free(bits[1]);
    free(g);
    free(p);
    free(back);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_decodes_the_host_table),
        cmocka_unit_test(test_bf16_states_nearest),
        cmocka_unit_test(test_bf16_states_stochastic),
        cmocka_unit_test(test_q_states_stochastic),
        cmocka_unit_test(test_bf16_master),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
