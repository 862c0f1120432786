/* test_qstate.c - Q8 and Q4 optimizer states against the double reference
 * of blockwise quantization (tests/ref_quant.c), at a real size: 1.38 M
 * parameters in 7 tensors and 2 param groups, CLGRAD_MAX_ALLOC = 4 MiB, so
 * that the quantized tensors fill 2 chunks of several hundred work-groups
 * (one chunk holding both groups) and the three tensors below
 * state_min_size a third chunk of fp32 states.
 *
 *  - The maps: clgrad's tables are bitsandbytes' create_dynamic_map (and
 *    torchao's 4-bit maps) as fp32; each value within 2 fp32 spacings of
 *    the formula evaluated in double (torch builds them in fp32 through
 *    linspace and a mean: measured at most 1.9).
 *  - Exact inputs (the first update from zero states, k = 1, weight 1: the
 *    new states are fp32 values the host computes bit for bit: AdamW's
 *    m = (1 - b1) g and v = ((1 - b2) g) g, Lion's m = (1 - b2) g): every block's absmax equals the reference's
 *    exactly, and every code equals the reference's (nearest map value of
 *    x / absmax in double, ties to the lower code) except within 2 fp32
 *    spacings of a rounding boundary: the device's x * (1 / absmax) has
 *    two roundings (1 spacing), its boundaries are fp32 midpoints (half a
 *    spacing). Such mismatches are counted and bounded (at most a few in a
 *    million).
 *  - Several updates with mixed signs and magnitudes over 7 decades, each
 *    checked from the device's own state before it (downloaded, dequantized,
 *    given to the reference): codes again within a boundary band, now
 *    widened by a bound on the fp32 error of the update itself (4 units of
 *    2^-24 on the magnitudes that went into each state); absmax within
 *    that bound; params and the fp32 states of small tensors and the
 *    AMSGrad max within PyTorch's fp32 tolerances.
 * Run time on 2 CPU cores with PoCL: about 20 s. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qstate.h"
#include "ref_quant.h"
#include "testutil.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 4 MiB: 1,048,576 fp32 elements per buffer at most. */
#define MAX_ALLOC "4194304"
#define U (1.0 / 16777216.0) /* 2^-24, the unit roundoff of fp32 */

static const float lr_mult[] = {1.0f, 0.5f};
static const float wd[] = {-1.0f, 0.0f};
/* 4 quantized tensors (>= 4096), 3 small ones: 4095, 100, 1 */
static const size_t counts[] = {700001, 400000, 262147, 4095, 9999, 100, 1};
static const int groups[] = {0, 1, 0, 1, 1, 0, 1};
static const twin_layout layout = {2, lr_mult, wd, 7, counts, groups};

/* What the near-boundary mismatches came to, over the whole program. */
static size_t total_codes, total_near, total_mismatched;
static double worst_mismatch_ulps;

static int setup(void **state)
{
    setenv("CLGRAD_MAX_ALLOC", MAX_ALLOC, 1);
    return tu_group_setup(state);
}

static int teardown(void **state)
{
    print_message("codes compared: %zu, within the boundary band: %zu, mismatched: %zu "
                  "(%.2g per million; the farthest %.2f fp32 spacings from its boundary)\n",
                  total_codes, total_near, total_mismatched,
                  1e6 * (double)total_mismatched / (double)(total_codes ? total_codes : 1),
                  worst_mismatch_ulps);
    return tu_group_teardown(state);
}

/* ------------------------------------------------------------ helpers */

/* Magnitudes spread over 7 decades (so that every decade of the dynamic
 * map is met), random signs, and a few exact zeros. */
static void spread_gradient(uint64_t seed, size_t n, float *g)
{
    tu_rng r = tu_rng_seed(seed);
    for (size_t i = 0; i < n; i++) {
        double mag = pow(10.0, -7.0 * tu_rng_float(&r));
        uint64_t bits = tu_rng_u64(&r);
        g[i] = (bits & 255) == 0 ? 0.0f : (float)((bits & 256) ? -mag : mag);
    }
}

/* The device's params and (dequantized) states become the reference's. */
static void sync_reference(twin *tw)
{
    OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, tw->host, tw->n, NULL));
    for (size_t i = 0; i < tw->n; i++)
        tw->ref.p[i] = tw->host[i];
    for (size_t s = 0; s < tw->ref.n_states; s++) {
        OK(clg_model_download_state(tw->model, (int)s, CLG_ALL_TENSORS, tw->host, tw->n, NULL));
        for (size_t i = 0; i < tw->n; i++)
            tw->ref.st[s][i] = tw->host[i];
    }
}

static size_t tensor_offset(size_t t)
{
    size_t off = 0;
    for (size_t k = 0; k < t; k++)
        off += counts[k];
    return off;
}

/* Compares state s of every tensor: Q8/Q4 tensors by codes and absmax
 * against the reference's quantization of want (the new state in double;
 * err: bounds on the device's fp32 error, NULL for exact inputs), fp32
 * tensors by value. Returns the number of failures. */
static size_t check_state(twin *tw, size_t s, const double *want, const double *err,
                          double tol_ulps, int exact_absmax, const char *what)
{
    const clg_config *cfg = clg_model_get_config(tw->model);
    size_t fails = 0;
    for (size_t t = 0; t < layout.n_tensors; t++) {
        size_t off = tensor_offset(t), n = counts[t];
        clg_dtype fmt;
        size_t code_bytes, n_scales;
        OK(clg_model_state_format(tw->model, (int)s, (int)t, &fmt, &code_bytes, &n_scales));
        char label[160];
        snprintf(label, sizeof label, "%s: state %zu of tensor %zu (%zu elements)", what, s, t, n);
        int small = n < 4096 || s >= clg__qstate_count(cfg);
        assert_int_equal(fmt, small ? CLG_FP32 : cfg->state_dtype);
        if (fmt == CLG_FP32) {
            OK(clg_model_download_state(tw->model, (int)s, (int)t, tw->host, n, NULL));
            fails += ref_compare(label, tw->host, want + off, n, REF_RTOL, REF_ATOL);
            continue;
        }
        unsigned char *raw = tu_xmalloc(code_bytes);
        float *absmax = tu_xmalloc(n_scales * sizeof *absmax);
        unsigned *codes = tu_xmalloc(n * sizeof *codes);
        OK(clg_model_download_state_raw(tw->model, (int)s, (int)t, raw, code_bytes, absmax,
                                        n_scales, NULL));
        ref_unpack_codes(fmt, raw, n, codes);
        size_t k;
        const float *fmap = clg__qmap_of(tw->model, s, &k);
        ref_qmap map;
        ref_qmap_from_floats(fmap, k, &map);
        size_t block = ref_qblock(fmt);
        ref_qcheck r = ref_qcheck_codes(label, &map, block, want + off, n, codes, tol_ulps,
                                        err ? err + off : NULL);
        total_codes += r.n;
        total_near += r.near;
        total_mismatched += r.mismatched;
        if (r.worst_ulps > worst_mismatch_ulps)
            worst_mismatch_ulps = r.worst_ulps;
        fails += r.bad;
        /* at most a few per thousand codes may sit in the band */
        if (r.near > n / 200 + 8) {
            fprintf(stderr, "%s: %zu of %zu codes within the band: the band is too wide\n",
                    label, r.near, n);
            fails++;
        }
        for (size_t b = 0; b < n_scales; b++) {
            double a = 0, e = 0;
            for (size_t i = b * block; i < n && i < (b + 1) * block; i++) {
                a = fmax(a, fabs(want[off + i]));
                e = err ? fmax(e, err[off + i]) : 0.0;
            }
            int ok = exact_absmax ? (double)absmax[b] == a
                                  : fabs((double)absmax[b] - a) <= e + 2 * U * a;
            if (!ok && fails++ < 1000)
                fprintf(stderr, "%s: absmax of block %zu: device %.9g, reference %.12g\n",
                        label, b, (double)absmax[b], a);
        }
        free(raw);
        free(absmax);
        free(codes);
    }
    return fails;
}

static void check_params(twin *tw, const char *what)
{
    char label[200];
    snprintf(label, sizeof label, "%s: params", what);
    OK(clg_model_download_params(tw->model, CLG_ALL_TENSORS, tw->host, tw->n, NULL));
    if (ref_compare(label, tw->host, tw->ref.p, tw->n, REF_RTOL, REF_ATOL))
        fail_msg("%s differ from the reference", label);
}

static clg_config qconfig(clg_optimizer opt, clg_dtype dtype)
{
    clg_config c = clg_config_init(opt);
    c.state_dtype = dtype;
    c.lr = opt == CLG_LION ? 1e-4f : 1e-3f;
    if (opt == CLG_SGD) {
        c.momentum = 0.9f;
        c.weight_decay = 1e-4f;
    }
    return c;
}

/* ------------------------------------------------------------ the maps */

static void test_maps_are_the_formulas(void **state)
{
    (void)state;
    static const clg_dtype dtypes[] = {CLG_Q8, CLG_Q4};
    for (int d = 0; d < 2; d++) {
        for (int sgn = 0; sgn < 2; sgn++) {
            float lib[256];
            size_t k = clg__qmap_fill(dtypes[d], sgn, lib);
            ref_qmap ref;
            ref_qmap_for(dtypes[d], sgn, &ref);
            assert_int_equal(k, ref.n);
            assert_int_equal(k, dtypes[d] == CLG_Q8 ? 256 : 16);
            for (size_t i = 0; i < k; i++) {
                float f = fabsf(lib[i]);
                double ulp = (double)nextafterf(f, INFINITY) - (double)f;
                if (fabs((double)lib[i] - ref.v[i]) > 2 * ulp)
                    fail_msg("%s %s map[%zu]: clgrad %.9g, formula %.12g", d ? "Q4" : "Q8",
                             sgn ? "signed" : "unsigned", i, (double)lib[i], ref.v[i]);
                if (i > 0)
                    assert_true(lib[i] > lib[i - 1]);
            }
            assert_true(lib[k - 1] == 1.0f);
            /* zero is a value of every map but Q4's v map, which leaves it
             * out on purpose (a v of 0 would blow up m / sqrt(v)) */
            int has_zero = 0;
            for (size_t i = 0; i < k; i++)
                has_zero |= lib[i] == 0.0f;
            assert_int_equal(has_zero, !(dtypes[d] == CLG_Q4 && !sgn));
        }
    }
}

/* ------------------------------------------------------------ exact inputs */

/* The first update from zero states with k = 1 and weight 1 (so that the
 * gradient the kernel sees is g itself): the new states are known in fp32
 * bit for bit. */
static void exact_first_update(clg_optimizer opt, clg_dtype dtype, uint64_t seed)
{
    char what[96];
    snprintf(what, sizeof what, "%s %s, first update", opt == CLG_LION ? "lion" : "adamw",
             dtype == CLG_Q8 ? "Q8" : "Q4");
    clg_config cfg = qconfig(opt, dtype);
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &layout, seed);
    assert_true(tw.model->n_chunks >= 3);
    float *g = tu_xmalloc(tw.n * sizeof *g);
    spread_gradient(seed + 1, tw.n, g);
    assert_int_equal(twin_micro(&tw, g, 1.0f), 1);
    size_t ns = clg__qstate_count(&cfg);
    double *want = tu_xmalloc(tw.n * sizeof *want);
    for (size_t s = 0; s < ns; s++) {
        /* volatile: one fp32 rounding per operation, as the kernel's */
        for (size_t i = 0; i < tw.n; i++) {
            volatile float one_m_b1 = 1.0f - cfg.beta1, one_m_b2 = 1.0f - cfg.beta2;
            float x;
            if (opt == CLG_LION)
                x = one_m_b2 * g[i];
            else if (s == 0)
                x = one_m_b1 * g[i];
            else {
                volatile float t = one_m_b2 * g[i];
                x = t * g[i];
            }
            want[i] = x;
        }
        if (check_state(&tw, s, want, NULL, 2.0, 1, what))
            fail_msg("%s: state %zu differs from the reference", what, s);
    }
    free(want);
    free(g);
    twin_free(&tw);
}

static void test_exact_inputs_q8(void **state)
{
    (void)state;
    exact_first_update(CLG_ADAMW, CLG_Q8, 11);
    exact_first_update(CLG_LION, CLG_Q8, 12);
}

static void test_exact_inputs_q4(void **state)
{
    (void)state;
    exact_first_update(CLG_ADAMW, CLG_Q4, 13);
    exact_first_update(CLG_LION, CLG_Q4, 14);
}

/* ------------------------------------------------------------ updates */

/* A bound on the fp32 error of the new value of state s of element i: 4
 * unit roundoffs on the magnitudes of the terms that went into it (the
 * decayed old value, the gradient term, the result: each of the two or
 * three roundings is relative to one of them), plus what the gradient's
 * own error gerr carries into it. */
static double state_error(const clg_config *c, size_t s, double old, double gr, double gerr,
                          double now)
{
    double b1 = c->beta1, b2 = c->beta2;
    switch (c->optimizer) {
    case CLG_SGD:
        return 4 * U * (c->momentum * fabs(old) + fabs(gr) + fabs(now)) + gerr;
    case CLG_LION:
        return 4 * U * (b2 * fabs(old) + (1 - b2) * fabs(gr) + fabs(now)) + (1 - b2) * gerr;
    default:
        if (s == 1)
            return 4 * U * (b2 * old + (1 - b2) * gr * gr + now) +
                   (1 - b2) * 2 * (fabs(gr) + gerr) * gerr;
        return 4 * U * (fabs(old) + (1 - b1) * (fabs(gr) + fabs(old)) + fabs(now)) +
               (1 - b1) * gerr;
    }
}

/* UPDATES cycles of k micro-steps (k = 1: path C, weight 1; k = 2: path A,
 * weights 1), each checked against the reference stepped from the device's
 * state before it. */
static void run_updates(clg_config cfg, unsigned k, unsigned updates, uint64_t seed,
                        const char *what)
{
    cfg.accum_steps = k;
    cfg.fuse_last_micro_step = k == 1;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &layout, seed);
    size_t ns = tw.ref.n_states, nq = clg__qstate_count(&cfg);
    float *g = tu_xmalloc(k * tw.n * sizeof *g);
    double *old[3] = {NULL, NULL, NULL}, *gr = tu_xmalloc(tw.n * sizeof *gr);
    double *gerr = tu_xmalloc(tw.n * sizeof *gerr), *err = tu_xmalloc(tw.n * sizeof *err);
    for (size_t s = 0; s < ns; s++)
        old[s] = tu_xmalloc(tw.n * sizeof *old[s]);
    for (unsigned u = 0; u < updates; u++) {
        sync_reference(&tw);
        for (size_t s = 0; s < ns; s++)
            memcpy(old[s], tw.ref.st[s], tw.n * sizeof *old[s]);
        /* the gradient each element's update sees, and its fp32 error:
         * the mean of k (one rounding of the sum), plus L2 decay */
        for (unsigned j = 0; j < k; j++)
            spread_gradient(seed * 977 + u * 31 + j, tw.n, g + j * tw.n);
        for (size_t t = 0, i = 0; t < layout.n_tensors; t++) {
            double decay = groups[t] == 0 ? cfg.weight_decay : 0.0;
            int l2 = cfg.optimizer == CLG_SGD || cfg.optimizer == CLG_ADAM;
            for (size_t e = 0; e < counts[t]; e++, i++) {
                double sum = 0, mag = 0;
                for (unsigned j = 0; j < k; j++) {
                    sum += g[j * tw.n + i];
                    mag += fabs(g[j * tw.n + i]);
                }
                gr[i] = sum / k;
                gerr[i] = (k > 1 ? U * mag / k : 0.0);
                if (l2) {
                    gerr[i] += 2 * U * (fabs(gr[i]) + decay * fabs(tw.ref.p[i]));
                    gr[i] += decay * tw.ref.p[i];
                }
            }
        }
        for (unsigned j = 0; j < k; j++)
            assert_int_equal(twin_micro(&tw, g + j * tw.n, 1.0f), j + 1 == k);
        char label[160];
        snprintf(label, sizeof label, "%s, update %u", what, u + 1);
        size_t fails = 0;
        for (size_t s = 0; s < ns; s++) {
            for (size_t i = 0; i < tw.n; i++)
                err[i] = s < nq ? state_error(&cfg, s, old[s][i], gr[i], gerr[i], tw.ref.st[s][i])
                                : 0.0;
            fails += check_state(&tw, s, tw.ref.st[s], err, 2.0, 0, label);
        }
        if (fails)
            fail_msg("%s: %zu failures", label, fails);
        check_params(&tw, label);
    }
    for (size_t s = 0; s < ns; s++)
        free(old[s]);
    free(g);
    free(gr);
    free(gerr);
    free(err);
    twin_free(&tw);
}

static void test_updates_adamw_q8(void **state)
{
    (void)state;
    run_updates(qconfig(CLG_ADAMW, CLG_Q8), 1, 3, 21, "adamw Q8, k = 1");
    run_updates(qconfig(CLG_ADAMW, CLG_Q8), 2, 2, 22, "adamw Q8, k = 2");
}

static void test_updates_adamw_q4(void **state)
{
    (void)state;
    run_updates(qconfig(CLG_ADAMW, CLG_Q4), 1, 3, 23, "adamw Q4, k = 1");
}

static void test_updates_adam_amsgrad_q8(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAM, CLG_Q8);
    c.amsgrad = 1;
    c.weight_decay = 1e-2f;
    run_updates(c, 1, 3, 24, "adam L2 amsgrad Q8");
}

static void test_updates_sgd_and_lion(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_SGD, CLG_Q8);
    c.nesterov = 1;
    run_updates(c, 1, 3, 25, "sgd nesterov Q8");
    run_updates(qconfig(CLG_LION, CLG_Q4), 1, 3, 26, "lion Q4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_are_the_formulas),
        cmocka_unit_test(test_exact_inputs_q8),
        cmocka_unit_test(test_exact_inputs_q4),
        cmocka_unit_test(test_updates_adamw_q8),
        cmocka_unit_test(test_updates_adamw_q4),
        cmocka_unit_test(test_updates_adam_amsgrad_q8),
        cmocka_unit_test(test_updates_sgd_and_lion),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
