/* test_qstate_api.c - the contracts of the smaller training state
 * (state_dtype, state_min_size, state_rounding, master_dtype):
 *  - defaults, and a caller built before these fields gets them;
 *  - bad values are CLG_ERR_INVALID_ARGUMENT, the combinations clgrad does
 *    not offer CLG_ERR_UNSUPPORTED naming both settings, and neither
 *    allocates anything or touches *out;
 *  - clg_model_memory is what the context allocated, byte for byte, for
 *    every state dtype, master dtype and optimizer, with small tensors,
 *    two groups, tensor norms and gradient buffers; clg_model_estimate is
 *    too, for one tensor of 2^20 elements;
 *  - the layout: small tensors in a chunk of their own with fp32 states,
 *    quantized tensors on whole blocks; one update launch per chunk;
 *  - clg_model_state_format / clg_model_download_state_raw, and their bad
 *    arguments;
 *  - a skipped update leaves codes, absmax and params bitwise unchanged;
 *  - path A and path B give bitwise the same Q8 states, path B with a bf16
 *    accumulator too. */
#include <stdarg.h>
#include "clgrad_advanced.h"
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "model.h"
#include "qstate.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {70001, 300, 8192, 4095, 1};
static const int groups[] = {0, 1, 1, 0, 1};
enum { N_TENSORS = 5 };

static clg_model *build(const clg_config *cfg)
{
    return tu_grouped_model(cfg, N_TENSORS, counts, groups);
}

static clg_model *finalized(const clg_config *cfg)
{
    clg_model *m = build(cfg);
    OK(clg_model_finalize(m));
    return m;
}

static clg_config qconfig(clg_optimizer opt, clg_dtype state, clg_dtype master)
{
    clg_config c = clg_config_init(opt);
    c.state_dtype = state;
    c.master_dtype = master;
    if (opt == CLG_SGD)
        c.momentum = 0.9f;
    return c;
}

/* ------------------------------------------------------------ config */

static void test_defaults_and_old_callers(void **state)
{
    (void)state;
    clg_config c = clg_config_init(CLG_ADAMW);
    assert_int_equal(c.state_dtype, CLG_FP32);
    assert_int_equal(c.state_min_size, 4096);
    assert_int_equal(c.state_rounding, CLG_ROUND_NEAREST);
    assert_int_equal(c.master_dtype, CLG_FP32);
    /* a caller whose struct ends before the new fields: garbage after its
     * end is not read, the model gets the defaults */
    clg_config old = c;
    old.state_dtype = (clg_dtype)77;
    old.state_min_size = 12345;
    old.master_dtype = (clg_dtype)99;
    old.struct_size = offsetof(clg_config, state_dtype);
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &old, &m));
    const clg_config *got = clg_model_get_config(m);
    assert_int_equal(got->state_dtype, CLG_FP32);
    assert_int_equal(got->state_min_size, 4096);
    assert_int_equal(got->master_dtype, CLG_FP32);
    clg_model_destroy(m);
}

/* A refused config: the status, both names in the message, nothing made. */
static void refused(const clg_config *c, clg_status want, const char *a, const char *b)
{
    uint64_t before = clg_context_device_bytes(tu_ctx);
    clg_model *m = (clg_model *)(uintptr_t)0x1234;
    assert_int_equal(clg_model_create(tu_ctx, c, &m), want);
    assert_ptr_equal(m, (clg_model *)(uintptr_t)0x1234);
    const char *msg = clg_last_error(tu_ctx);
    if (!strstr(msg, a) || (b && !strstr(msg, b)))
        fail_msg("message '%s' should name %s and %s", msg, a, b ? b : "-");
    assert_int_equal(clg_context_device_bytes(tu_ctx), before);
    clg_model_plan plan = clg_model_plan_init();
    assert_int_equal(clg_model_estimate(c, 1000, &plan), want);
}

static void test_bad_values_and_unsupported(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAMW, CLG_FP16, CLG_FP32);
    refused(&c, CLG_ERR_INVALID_ARGUMENT, "state_dtype", NULL);
    c = qconfig(CLG_ADAMW, (clg_dtype)99, CLG_FP32);
    refused(&c, CLG_ERR_INVALID_ARGUMENT, "state_dtype 99", NULL);
    c = qconfig(CLG_ADAMW, CLG_Q8, CLG_Q8);
    refused(&c, CLG_ERR_INVALID_ARGUMENT, "master_dtype", NULL);
    c = qconfig(CLG_ADAMW, CLG_Q8, CLG_FP32);
    c.state_rounding = (clg_rounding)5;
    refused(&c, CLG_ERR_INVALID_ARGUMENT, "state_rounding 5", NULL);

    c = qconfig(CLG_ADAM, CLG_Q4, CLG_FP32);
    c.amsgrad = 1;
    refused(&c, CLG_ERR_UNSUPPORTED, "state_dtype CLG_Q4", "amsgrad");
    c = qconfig(CLG_ADAMW, CLG_FP32, CLG_FP32);
    c.state_rounding = CLG_ROUND_STOCHASTIC;
    refused(&c, CLG_ERR_UNSUPPORTED, "state_rounding CLG_ROUND_STOCHASTIC", "state_dtype CLG_FP32");
    c = qconfig(CLG_ADAMW, CLG_Q8, CLG_BF16);
    c.param_copy_dtype = CLG_BF16;
    refused(&c, CLG_ERR_UNSUPPORTED, "master_dtype CLG_BF16", "param_copy_dtype CLG_BF16");

    /* what is offered: Q8 with AMSGrad, bf16 master with an fp16 copy */
    clg_model *m = NULL;
    c = qconfig(CLG_ADAM, CLG_Q8, CLG_BF16);
    c.amsgrad = 1;
    c.param_copy_dtype = CLG_FP16;
    OK(clg_model_create(tu_ctx, &c, &m));
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ memory */

static void exact_memory(clg_config c, const char *what)
{
    c.tensor_norms = 1;
    uint64_t before = clg_context_device_bytes(tu_ctx);
    clg_model *m = finalized(&c);
    clg_model_plan plan = clg_model_plan_init();
    OK(clg_model_memory(m, &plan));
    uint64_t used = clg_context_device_bytes(tu_ctx) - before;
    if (plan.total != used)
        fail_msg("%s: clg_model_memory says %llu bytes, the context allocated %llu", what,
                 (unsigned long long)plan.total, (unsigned long long)used);
    assert_int_equal(plan.total, plan.params + plan.accumulators + plan.states +
                                     plan.param_copy + plan.grad_buffers + plan.step_block +
                                     plan.state_scales + plan.tables);
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP16, &g));
    OK(clg_model_memory(m, &plan));
    assert_int_equal(plan.total, clg_context_device_bytes(tu_ctx) - before);
    assert_true(plan.grad_buffers > 0);
    /* the scales exist exactly for Q8/Q4 states */
    assert_int_equal(plan.state_scales > 0,
                     clg__dtype_quantized(c.state_dtype) && clg__qstate_count(&c) > 0);
    clg_grads_destroy(g);
    clg_model_destroy(m);
    assert_int_equal(clg_context_device_bytes(tu_ctx), before);

    /* the estimate of one tensor of 2^20 elements is its allocation */
    size_t n = (size_t)1 << 20;
    clg_model_plan est = clg_model_plan_init();
    OK(clg_model_estimate(&c, n, &est));
    OK(clg_model_create(tu_ctx, &c, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", n, 0, &t));
    OK(clg_model_finalize(m));
    used = clg_context_device_bytes(tu_ctx) - before;
    OK(clg_model_memory(m, &plan));
    if (est.total != used || plan.total != used || est.states != plan.states ||
        est.state_scales != plan.state_scales || est.params != plan.params)
        fail_msg("%s: estimate %llu (states %llu, scales %llu), model %llu, allocated %llu", what,
                 (unsigned long long)est.total, (unsigned long long)est.states,
                 (unsigned long long)est.state_scales, (unsigned long long)plan.total,
                 (unsigned long long)used);
    clg_model_destroy(m);
}

static void test_memory_is_what_was_allocated(void **state)
{
    (void)state;
    static const clg_dtype states[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
    static const clg_optimizer opts[] = {CLG_ADAMW, CLG_ADAM, CLG_SGD, CLG_LION};
    for (int s = 0; s < 4; s++)
        for (int master = 0; master < 2; master++)
            for (int o = 0; o < 4; o++) {
                clg_config c = qconfig(opts[o], states[s], master ? CLG_BF16 : CLG_FP32);
                c.amsgrad = opts[o] == CLG_ADAM && states[s] != CLG_Q4;
                char what[64];
                snprintf(what, sizeof what, "state %d, master %d, optimizer %d", (int)states[s],
                         master, (int)opts[o]);
                exact_memory(c, what);
            }
    /* the bytes per parameter of the smallest configuration, from the
     * estimate's slope: bf16 params and accumulator, two Q8 states of 1 B
     * of code + 4 B of absmax per 256, and the partials (3 regions of one
     * float per 8192 elements) */
    clg_config c = qconfig(CLG_ADAMW, CLG_Q8, CLG_BF16);
    c.acc_dtype = CLG_BF16;
    clg_model_plan a = clg_model_plan_init(), b = clg_model_plan_init();
    OK(clg_model_estimate(&c, 1 << 20, &a));
    OK(clg_model_estimate(&c, 2 << 20, &b));
    double per_param = (double)(b.total - a.total) / (double)(1 << 20);
    assert_true(fabs(per_param - (2 + 2 + 2 * (1 + 4.0 / 256) + 12.0 / 8192)) < 1e-6);
}

/* ------------------------------------------------------------ layout */

static void test_layout_and_launches(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAMW, CLG_Q8, CLG_FP32);
    clg_model *m = finalized(&c);
    /* the quantized tensors (70001, 8192) in one chunk, the three below
     * state_min_size in another */
    assert_int_equal(m->n_chunks, 2);
    for (int t = 0; t < N_TENSORS; t++) {
        const clg_tensor_slot *ts = &m->tensors[t];
        int small = counts[t] < 4096;
        assert_int_equal(m->chunk_small[ts->chunk], small);
        if (!small)
            assert_int_equal(ts->offset % CLG_Q8_BLOCK, 0);
        for (int s = 0; s < 2; s++) {
            clg_dtype fmt;
            size_t bytes, scales;
            OK(clg_model_state_format(m, s, t, &fmt, &bytes, &scales));
            assert_int_equal(fmt, small ? CLG_FP32 : CLG_Q8);
            assert_int_equal(bytes, small ? 4 * counts[t] : counts[t]);
            assert_int_equal(scales, small ? 0 : (counts[t] + 255) / 256);
        }
    }
    /* one update launch per chunk, plus the prologue (path B, no stats) */
    tu_upload_uniform_params(m, 3);
    uint64_t before = clg_context_launches(tu_ctx);
    int updated = 0;
    OK(clg_step(m, NULL, 1.0f, &updated, NULL));
    assert_int_equal(updated, 1);
    assert_int_equal(clg_context_launches(tu_ctx) - before, m->n_chunks + 1);
    clg_model_destroy(m);

    /* state_min_size 0: every tensor quantized, one chunk; a Q4 tensor
     * starts on 128 */
    c = qconfig(CLG_ADAMW, CLG_Q4, CLG_FP32);
    c.state_min_size = 0;
    m = finalized(&c);
    assert_int_equal(m->n_chunks, 1);
    for (int t = 0; t < N_TENSORS; t++)
        assert_int_equal(m->tensors[t].offset % CLG_Q4_BLOCK, 0);
    clg_model_destroy(m);

    /* no states to quantize (SGD without momentum): the plain layout */
    c = qconfig(CLG_SGD, CLG_Q8, CLG_FP32);
    c.momentum = 0.0f;
    m = finalized(&c);
    assert_int_equal(m->n_chunks, 1);
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ raw copies */

static void test_state_format_and_raw_download(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAMW, CLG_Q4, CLG_FP32);
    clg_model *m = finalized(&c);
    size_t bytes, scales;
    clg_dtype fmt;
    OK(clg_model_state_format(m, 1, 0, &fmt, &bytes, &scales));
    assert_int_equal(fmt, CLG_Q4);
    assert_int_equal(bytes, (70001 + 31) / 32 * 16);
    assert_int_equal(scales, (70001 + 127) / 128);
    OK(clg_model_state_format(m, 0, 0, NULL, NULL, NULL));
    unsigned char *codes = tu_xmalloc(bytes);
    float *absmax = tu_xmalloc(scales * sizeof *absmax);
    OK(clg_model_download_state_raw(m, 1, 0, codes, bytes, absmax, scales, NULL));
    /* zero states: absmax 0 */
    for (size_t i = 0; i < scales; i++)
        assert_true(absmax[i] == 0.0f);

    assert_int_equal(clg_model_download_state_raw(m, 1, 0, codes, bytes - 1, absmax, scales, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(tu_ctx), "35008"));
    assert_int_equal(clg_model_download_state_raw(m, 1, 0, codes, bytes, absmax, scales + 1, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_model_download_state_raw(m, 1, 0, NULL, bytes, absmax, scales, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_model_download_state_raw(m, 1, 0, codes, bytes, NULL, scales, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_model_download_state_raw(m, 2, 0, codes, bytes, absmax, scales, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(tu_ctx), "no state 2"));
    assert_int_equal(clg_model_download_state_raw(m, 0, CLG_ALL_TENSORS, codes, bytes, absmax,
                                                  scales, NULL),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_model_state_format(m, 0, N_TENSORS, &fmt, &bytes, &scales),
                     CLG_ERR_INVALID_ARGUMENT);
    /* an fp32 tensor: its bytes, no scales */
    OK(clg_model_state_format(m, 0, 4, &fmt, &bytes, &scales));
    assert_int_equal(fmt, CLG_FP32);
    assert_int_equal(scales, 0);
    float one;
    OK(clg_model_download_state_raw(m, 0, 4, &one, sizeof one, NULL, 0, NULL));
    free(codes);
    free(absmax);
    clg_model_destroy(m);

    /* not finalized */
    m = build(&c);
    assert_int_equal(clg_model_state_format(m, 0, 0, &fmt, &bytes, &scales), CLG_ERR_STATE);
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ behaviour */

typedef struct snapshot {
    float *params;
    unsigned char *codes[2];
    float *absmax[2];
    size_t bytes[2], scales[2];
} snapshot;

static snapshot take(clg_model *m, int t)
{
    snapshot s;
    memset(&s, 0, sizeof s);
    s.params = tu_xmalloc(counts[t] * sizeof *s.params);
    OK(clg_model_download_params(m, t, s.params, counts[t], NULL));
    for (int k = 0; k < 2; k++) {
        OK(clg_model_state_format(m, k, t, NULL, &s.bytes[k], &s.scales[k]));
        s.codes[k] = tu_xmalloc(s.bytes[k]);
        s.absmax[k] = tu_xmalloc(s.scales[k] * sizeof(float) + 1);
        OK(clg_model_download_state_raw(m, k, t, s.codes[k], s.bytes[k], s.absmax[k],
                                        s.scales[k], NULL));
    }
    return s;
}

static int same(const snapshot *a, const snapshot *b, int t)
{
    int eq = memcmp(a->params, b->params, counts[t] * sizeof(float)) == 0;
    for (int k = 0; k < 2; k++)
        eq = eq && memcmp(a->codes[k], b->codes[k], a->bytes[k]) == 0 &&
             memcmp(a->absmax[k], b->absmax[k], a->scales[k] * sizeof(float)) == 0;
    return eq;
}

static void drop(snapshot *s)
{
    free(s->params);
    for (int k = 0; k < 2; k++) {
        free(s->codes[k]);
        free(s->absmax[k]);
    }
}

static void test_skipped_update_changes_nothing(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAMW, CLG_Q8, CLG_FP32);
    c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    clg_model *m = finalized(&c);
    tu_upload_uniform_params(m, 5);
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    size_t n = (size_t)clg_model_param_count(m);
    float *host = tu_xmalloc(n * sizeof *host);
    tu_fill_normal(host, n, 6, 1.0f);
    OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
    OK(clg_step(m, g, 1.0f, NULL, NULL)); /* one real update: codes != 0 */
    snapshot before = take(m, 0);
    host[12345] = INFINITY;
    OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
    OK(clg_step(m, g, 1.0f, NULL, NULL));
    clg_stats st = clg_stats_init();
    OK(clg_model_stats(m, 1, &st));
    assert_int_equal(st.skipped_updates, 1);
    snapshot after = take(m, 0);
    if (!same(&before, &after, 0))
        fail_msg("a skipped update changed params, codes or absmax");
    drop(&before);
    drop(&after);
    free(host);
    clg_grads_destroy(g);
    clg_model_destroy(m);
}

/* Models a and b of configs ca and cb, finalized, with the same params
 * from seed; fp32 gradients of a and a host buffer of n floats. */
typedef struct ab_pair {
    clg_model *a, *b;
    clg_grads *g;
    size_t n;
    float *host;
} ab_pair;

static ab_pair ab_open(const clg_config *ca, const clg_config *cb, uint64_t seed)
{
    ab_pair p = {finalized(ca), finalized(cb), NULL, 0, NULL};
    tu_upload_uniform_params(p.a, seed);
    tu_upload_uniform_params(p.b, seed);
    OK(clg_grads_create(p.a, CLG_FP32, &p.g));
    p.n = (size_t)clg_model_param_count(p.a);
    p.host = tu_xmalloc(p.n * sizeof *p.host);
    return p;
}

/* Every tensor of a and b bitwise the same (params, codes, absmax); frees. */
static void ab_close_same(ab_pair *p, const char *what)
{
    for (int t = 0; t < N_TENSORS; t++) {
        snapshot sa = take(p->a, t), sb = take(p->b, t);
        if (!same(&sa, &sb, t))
            fail_msg("tensor %d: %s", t, what);
        drop(&sa);
        drop(&sb);
    }
    free(p->host);
    clg_grads_destroy(p->g);
    clg_model_destroy(p->a);
    clg_model_destroy(p->b);
}

/* Path A (external gradients) and path B (written into the accumulator)
 * hold the same accumulator, so they must update to the same bits. */
static void test_paths_agree_bitwise(void **state)
{
    (void)state;
    clg_config c = qconfig(CLG_ADAMW, CLG_Q8, CLG_FP32);
    c.accum_steps = 1;
    c.fuse_last_micro_step = 0;
    ab_pair p = ab_open(&c, &c, 9);
    for (int u = 0; u < 3; u++) {
        tu_fill_normal(p.host, p.n, 100 + (uint64_t)u, 0.1f);
        OK(clg_grads_upload(p.g, CLG_ALL_TENSORS, p.host, p.n, NULL));
        OK(clg_step(p.a, p.g, 1.0f, NULL, NULL));
        tu_write_acc(p.b, p.host, 4);
        OK(clg_step(p.b, NULL, 1.0f, NULL, NULL));
    }
    ab_close_same(&p, "paths A and B differ");
}

/* Path B with a bf16 accumulator: the caller writes bf16 bits, and the
 * update reads them as the fp32 values they are (the smallest state: no
 * gradient buffer). Against path A with fp32 gradients of those values. */
static void test_path_b_bf16_accumulator(void **state)
{
    (void)state;
    clg_config ca = qconfig(CLG_ADAMW, CLG_Q8, CLG_FP32);
    ca.fuse_last_micro_step = 0;
    clg_config cb = ca;
    cb.acc_dtype = CLG_BF16;
    ab_pair p = ab_open(&ca, &cb, 13);
    uint16_t *bits = tu_xmalloc(p.n * sizeof *bits);
    for (int u = 0; u < 2; u++) {
        tu_fill_normal(p.host, p.n, 200 + (uint64_t)u, 0.1f);
        for (size_t i = 0; i < p.n; i++) {
            uint32_t x;
            memcpy(&x, &p.host[i], 4);
            bits[i] = (uint16_t)(x >> 16); /* truncated: any bf16 will do */
            x = (uint32_t)bits[i] << 16;
            memcpy(&p.host[i], &x, 4);
        }
        OK(clg_grads_upload(p.g, CLG_ALL_TENSORS, p.host, p.n, NULL));
        OK(clg_step(p.a, p.g, 1.0f, NULL, NULL));
        assert_true(clg_accum_beta(p.b) == 0.0f);
        tu_write_acc(p.b, bits, 2);
        int updated = 0;
        OK(clg_step(p.b, NULL, 1.0f, &updated, NULL));
        assert_int_equal(updated, 1);
    }
    free(bits);
    ab_close_same(&p, "path B with a bf16 accumulator differs from path A");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_old_callers),
        cmocka_unit_test(test_bad_values_and_unsupported),
        cmocka_unit_test(test_memory_is_what_was_allocated),
        cmocka_unit_test(test_layout_and_launches),
        cmocka_unit_test(test_state_format_and_raw_download),
        cmocka_unit_test(test_skipped_update_changes_nothing),
        cmocka_unit_test(test_paths_agree_bitwise),
        cmocka_unit_test(test_path_b_bf16_accumulator),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
