/* test_handrolled.c - the hand-rolled baseline of clgrad-bench (CLBlast
 * saxpy / scal / nrm2 and bench/cl/handrolled.cl, one launch per tensor and pass)
 * computes the update it is timed as, so that every speed-up the bench
 * claims over it compares like with like. Every variant the bench runs
 * (bench/cases.c: each configuration of bench/configs.c, fed like path A
 * and, but for fp16 gradients, like path B) runs through the bench's own
 * code (bench_handrolled_create and its step function, included below so
 * that its buffers can be filled and read) on the bench's --quick size,
 * 2^21 + 37 parameters in 256 tensors, k = 4, for 3 updates, and its
 * params and optimizer states are compared with the double reference
 * (tests/reference.c) fed the same gradients (as the device reads them:
 * fp16-rounded for the fp16 configuration, multiplied by the loss scale
 * for the dynamic-loss-scaling one).
 *
 * Tolerances: PyTorch's fp32 ones (rtol 1.3e-6, atol 1e-5), as for clgrad
 * itself: the baseline does the same fp32 arithmetic in other passes (scal
 * 1/k then the update; the clip coefficient from CLBlast's per-tensor
 * nrm2, summed in double on the host).
 *
 * The gradients keep one sign per element over the run, with magnitudes
 * in [0.25, 1): Lion's sign(beta1 * m + (1 - beta1) * g) then never comes
 * near 0, where fp32 and double could disagree on a sign and move a
 * parameter by 2 lr. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* The bench's own launch code, with its private struct. */
#include "../bench/cases_handrolled.c"

#include "reference.h"
#include "testutil.h"

#include <string.h>

enum { TENSORS = 256, K = 4, UPDATES = 3 };
#define N_PARAMS (((uint64_t)1 << 21) + 37)

static void write_buf(cl_command_queue q, cl_mem m, const void *src, size_t bytes)
{
    assert_int_equal(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, bytes, src, 0, NULL, NULL),
                     CL_SUCCESS);
}

static void read_buf(cl_command_queue q, cl_mem m, void *dst, size_t bytes)
{
    assert_int_equal(clEnqueueReadBuffer(q, m, CL_TRUE, 0, bytes, dst, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* Gradient of micro-step `micro` of update `u`: a fixed sign per element
 * and a magnitude in [0.25, 1), times scale. */
static void gradient(float *g, size_t n, uint64_t seed, unsigned u, unsigned micro, float scale)
{
    tu_rng sign = tu_rng_seed(seed * 7919u + 11);
    tu_rng mag = tu_rng_seed(seed * 104729u + u * 1000003u + micro * 7u + 3);
    for (size_t i = 0; i < n; i++) {
        float v = tu_rng_uniform(&mag, 0.25f, 1.0f);
        g[i] = (tu_rng_u64(&sign) & 1 ? v : -v) * scale;
    }
}

static void run_variant(const bench_config *bc, char feed, uint64_t seed)
{
    clg_context *ctx = tu_ctx;
    cl_command_queue q = clg_context_queue(ctx);
    const uint64_t n64 = N_PARAMS;
    const size_t n = (size_t)n64;
    char what[96];
    snprintf(what, sizeof what, "hand-rolled %s, feed %c", bc->name, feed);

    bench_cycle cy = {0};
    if (bench_handrolled_create(&cy, ctx, bc, n64, TENSORS, feed, K, 0) != 0)
        fail_msg("%s: bench_handrolled_create failed", what);
    handrolled *h = cy.self;
    assert_int_equal(h->tensors, TENSORS);
    assert_true(h->n == n64);

    /* the reference: the bench's clgrad configuration, one group, the
     * bench's split into tensors */
    size_t counts[TENSORS];
    int groups[TENSORS];
    size_t total = 0;
    for (unsigned t = 0; t < TENSORS; t++) {
        counts[t] = h->cnt[t];
        groups[t] = 0;
        assert_true(h->off[t] == total);
        total += counts[t];
    }
    assert_true(total == n);
    float *host = tu_xmalloc(n * sizeof(float));
    float *g = tu_xmalloc(n * sizeof(float));
    float *acc = tu_xmalloc(n * sizeof(float));
    uint16_t *half = tu_xmalloc(n * sizeof(uint16_t));
    tu_fill_uniform(host, n, seed, -1.0f, 1.0f);
    const double lr_mult[] = {1.0};
    const double wd[] = {-1.0};
    ref_model ref;
    assert_int_equal(ref_model_init(&ref, &h->cfg, 1, lr_mult, wd, TENSORS, counts, groups, host),
                     0);
    assert_int_equal(ref.n_states, bench_state_count(bc->optimizer));

    /* the bench starts from constant fills (params 0, accumulator and
     * gradients 1e-3): replace them with the run's own start, the
     * accumulator empty as before a first cycle */
    write_buf(q, h->p, host, n * sizeof(float));
    memset(acc, 0, n * sizeof(float));
    write_buf(q, h->acc, acc, n * sizeof(float));
    float *zero = acc;
    write_buf(q, h->s0, zero, n * sizeof(float));
    if (h->s1)
        write_buf(q, h->s1, zero, n * sizeof(float));

    /* dynamic loss scaling: the caller multiplied its loss by the scale */
    float scale = bc->dynamic_loss_scale ? h->cfg.loss_scale_init : 1.0f;
    for (unsigned u = 0; u < UPDATES; u++) {
        if (feed == 'B')
            memset(acc, 0, n * sizeof(float)); /* the baseline zeroed it after the update */
        for (unsigned m = 0; m < K; m++) {
            gradient(g, n, seed, u, m, scale);
            if (bc->grad_dtype == CLG_FP16) {
                for (size_t i = 0; i < n; i++) {
                    half[i] = ref_f32_to_f16(g[i]);
                    g[i] = ref_f16_to_f32(half[i]); /* what the device reads */
                }
            }
            if (feed == 'A') {
                if (bc->grad_dtype == CLG_FP16)
                    write_buf(q, h->g, half, n * sizeof(uint16_t));
                else
                    write_buf(q, h->g, g, n * sizeof(float));
            } else {
                /* the backward writes its gradient into the accumulator
                 * (beta 0 on the first micro-step, 1 after) */
                for (size_t i = 0; i < n; i++)
                    acc[i] = (m == 0 ? 0.0f : acc[i]) + g[i];
                write_buf(q, h->acc, acc, n * sizeof(float));
            }
            if (cy.step(cy.self, m) != 0)
                fail_msg("%s: step %u of update %u failed", what, m, u);
            assert_int_equal(ref_micro_f(&ref, g, 1.0), m == K - 1);
        }
        assert_int_equal(clFinish(q), CL_SUCCESS);
        assert_true(h->t == u + 1); /* no update skipped */

        char label[160];
        size_t bad = 0;
        read_buf(q, h->p, host, n * sizeof(float));
        snprintf(label, sizeof label, "%s, update %u: params", what, u + 1);
        bad += ref_compare(label, host, ref.p, n, REF_RTOL, REF_ATOL);
        cl_mem states[2] = {h->s0, h->s1};
        for (size_t s = 0; s < ref.n_states; s++) {
            read_buf(q, states[s], host, n * sizeof(float));
            snprintf(label, sizeof label, "%s, update %u: state %zu", what, u + 1, s);
            bad += ref_compare(label, host, ref.st[s], n, REF_RTOL, REF_ATOL);
        }
        if (bad)
            fail_msg("%s, update %u: %zu elements differ from the reference", what, u + 1, bad);
        if (bench_config_needs_stats(bc)) {
            /* clipping really happened: the reference's coefficient */
            assert_true(ref.clip_coef < 0.01);
        }
    }
    print_message("%s: %llu params, %u tensors, %d updates of k = %d match the reference\n",
                  what, (unsigned long long)n64, TENSORS, UPDATES, K);
    ref_model_free(&ref);
    free(half);
    free(acc);
    free(g);
    free(host);
    cy.destroy(cy.self);
}

static void test_handrolled_variants(void **state)
{
    (void)state;
    unsigned runs = 0;
    for (size_t i = 0; i < bench_config_count; i++) {
        const bench_config *bc = &bench_configs[i];
        static const char feeds[] = {'A', 'B'};
        for (size_t f = 0; f < 2; f++) {
            /* as bench/cases.c: fp16 gradients only as external buffers */
            if (bc->grad_dtype != CLG_FP32 && feeds[f] == 'B')
                continue;
            run_variant(bc, feeds[f], 300 + 2 * i + f);
            runs++;
        }
    }
    assert_int_equal(runs, 2 * bench_config_count - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handrolled_variants),
    };
    return cmocka_run_group_tests_name("handrolled", tests, tu_group_setup, tu_group_teardown);
}
