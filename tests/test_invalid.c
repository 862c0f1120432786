/* test_invalid.c - invalid input: each bad value returns an error whose
 * message names the value, and changes no state (no model created, cycle
 * counters, params and statistics untouched). */
#define _GNU_SOURCE /* strcasestr */
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

/* status must be want, and the message (of c, or of the thread when c is
 * NULL) must contain needle. */
static void expect(clg_status got, clg_status want, const clg_context *c, const char *needle,
                   const char *what)
{
    const char *msg = clg_last_error(c);
    if (got != want)
        fail_msg("%s: status %s, want %s (message: '%s')", what, clg_status_string(got),
                 clg_status_string(want), msg);
    if (needle && !strcasestr(msg, needle))
        fail_msg("%s: message '%s' does not name '%s'", what, msg, needle);
}

/* ---------------------------------------------------- configuration */

static void bad_config(clg_config cfg, const char *needle, const char *what)
{
    clg_model *m = NULL;
    clg_status st = clg_model_create(tu_ctx, &cfg, &m);
    expect(st, CLG_ERR_INVALID_ARGUMENT, tu_ctx, needle, what);
    assert_null(m);
}

static void test_bad_config(void **state)
{
    (void)state;
    clg_config base = clg_config_init(CLG_ADAM);
    clg_config c;

    c = base;
    c.accum_steps = 0;
    bad_config(c, "0", "accum_steps 0");
    /* a float field out of range: the config's default but that field */
    static const struct bad_float {
        clg_optimizer opt;
        size_t field; /* offsetof a float of clg_config */
        float value;
        const char *needle, *what;
    } bad[] = {
        {CLG_ADAM, offsetof(clg_config, lr), -0.125f, "-0.125", "lr -0.125"},
        {CLG_ADAM, offsetof(clg_config, lr), NAN, "nan", "lr NaN"},
        {CLG_ADAM, offsetof(clg_config, lr), INFINITY, "inf", "lr inf"},
        {CLG_ADAM, offsetof(clg_config, beta1), 1.0f, "1", "beta1 1"},
        {CLG_ADAM, offsetof(clg_config, beta1), -0.25f, "-0.25", "beta1 -0.25"},
        {CLG_ADAM, offsetof(clg_config, beta2), 1.5f, "1.5", "beta2 1.5"},
        {CLG_ADAM, offsetof(clg_config, beta2), NAN, "nan", "beta2 NaN"},
        {CLG_ADAM, offsetof(clg_config, eps), 0.0f, "0", "eps 0"},
        {CLG_ADAM, offsetof(clg_config, eps), -0.75f, "-0.75", "eps -0.75"},
        {CLG_LION, offsetof(clg_config, beta2), 1.0f, "1", "lion beta2 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        c = clg_config_init(bad[i].opt);
        memcpy((char *)&c + bad[i].field, &bad[i].value, sizeof(float));
        bad_config(c, bad[i].needle, bad[i].what);
    }

    /* a valid config still works (the failures left nothing behind) */
    clg_model *m = NULL;
    assert_int_equal(clg_model_create(tu_ctx, &base, &m), CLG_SUCCESS);
    assert_non_null(m);
    clg_model_destroy(m);
}

static void test_null_handles(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    clg_model *m = NULL;
    expect(clg_model_create(NULL, &cfg, &m), CLG_ERR_INVALID_ARGUMENT, NULL, NULL,
           "create NULL ctx");
    assert_null(m);
    expect(clg_model_create(tu_ctx, NULL, &m), CLG_ERR_INVALID_ARGUMENT, tu_ctx, NULL,
           "create NULL config");
    assert_null(m);
    expect(clg_model_create(tu_ctx, &cfg, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, NULL,
           "create NULL out");
    int updated;
    expect(clg_step(NULL, NULL, 1.0f, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, NULL, NULL,
           "step NULL model");
    expect(clg_flush(NULL, NULL), CLG_ERR_INVALID_ARGUMENT, NULL, NULL, "flush NULL");
    clg_stats s = clg_stats_init();
    expect(clg_model_stats(NULL, 1, &s), CLG_ERR_INVALID_ARGUMENT, NULL, NULL, "stats NULL");
    int id;
    expect(clg_model_add_tensor(NULL, "x", 4, 0, &id), CLG_ERR_INVALID_ARGUMENT, NULL, NULL,
           "add_tensor NULL model");
    clg_grads *g = NULL;
    expect(clg_grads_create(NULL, CLG_FP32, &g), CLG_ERR_INVALID_ARGUMENT, NULL, NULL,
           "grads_create NULL");
    assert_null(g);
    expect(clg_model_sync(NULL), CLG_ERR_INVALID_ARGUMENT, NULL, NULL, "sync NULL");
    float scale;
    expect(clg_model_loss_scale(NULL, 1, &scale), CLG_ERR_INVALID_ARGUMENT, NULL, NULL,
           "loss_scale NULL");
    /* destroy functions accept NULL */
    clg_model_destroy(NULL);
    clg_grads_destroy(NULL);
}

/* ---------------------------------------------------- building a model */

static void test_build_phase(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    clg_model *m = NULL;
    assert_int_equal(clg_model_create(tu_ctx, &cfg, &m), CLG_SUCCESS);
    int id = -1, gid = -1;
    float host[8] = {0};
    int updated;

    /* nothing runs before finalize */
    expect(clg_step(m, NULL, 1.0f, &updated, NULL), CLG_ERR_STATE, tu_ctx, NULL, "step before finalize");
    expect(clg_model_upload_params(m, CLG_ALL_TENSORS, host, (size_t)clg_model_param_count(m), NULL), CLG_ERR_STATE, tu_ctx, NULL,
           "upload before finalize");

    expect(clg_model_add_tensor(m, "w", 8, 7, &id), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "7",
           "unknown group 7");
    expect(clg_model_add_tensor(m, NULL, 8, 0, &id), CLG_ERR_INVALID_ARGUMENT, tu_ctx, NULL,
           "NULL tensor name");
    expect(clg_model_add_group(m, "g", -2.5f, 0.0f, &gid), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "-2.5",
           "lr_mult -2.5");
    expect(clg_model_add_group(m, "g", NAN, 0.0f, &gid), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "nan",
           "lr_mult NaN");
    assert_int_equal(clg_model_tensor_count(m), 0);

    assert_int_equal(clg_model_add_tensor(m, "w", 8, 0, &id), CLG_SUCCESS);
    assert_int_equal(id, 0);
    expect(clg_model_add_tensor(m, "w", 4, 0, &id), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "w",
           "duplicate name");
    assert_int_equal(clg_model_tensor_count(m), 1);
    assert_int_equal(clg_model_finalize(m), CLG_SUCCESS);

    /* nothing is added after finalize */
    expect(clg_model_add_tensor(m, "late", 4, 0, &id), CLG_ERR_STATE, tu_ctx, NULL,
           "add_tensor after finalize");
    expect(clg_model_add_group(m, "late", 1.0f, 0.0f, &gid), CLG_ERR_STATE, tu_ctx, NULL,
           "add_group after finalize");
    expect(clg_model_finalize(m), CLG_ERR_STATE, tu_ctx, NULL, "finalize twice");
    assert_int_equal(clg_model_tensor_count(m), 1);
    assert_int_equal(clg_model_param_count(m), 8);
    clg_model_destroy(m);
}

/* ---------------------------------------------------- a live model */

static void test_bad_indices_and_steps(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAM);
    cfg.accum_steps = 3;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 8);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    twin_gradient(&tw, 0, 0, g);
    twin_micro(&tw, g, 1.0f); /* mid-cycle: micro index 1 */
    float *snap = twin_snapshot(&tw);
    clg_stats before = twin_stats(&tw);
    clg_view v;
    int id;

    expect(clg_model_param_view(tw.model, 99, &v), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "99",
           "param_view 99");
    expect(clg_model_acc_view(tw.model, -3, &v), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "-3",
           "acc_view -3");
    expect(clg_grads_view(tw.grads, 6, &v), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "6", "grads_view 6");
    expect(clg_model_upload_params(tw.model, 6, g, clg_model_tensor_size(tw.model, 6), NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "6",
           "upload tensor 6");
    expect(clg_model_download_params(tw.model, 123, g, clg_model_tensor_size(tw.model, 123), NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "123",
           "download tensor 123");
    expect(clg_model_download_state(tw.model, 2, 0, g, clg_model_tensor_size(tw.model, 0), NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "2",
           "state 2 without amsgrad");
    expect(clg_model_download_state(tw.model, 0, 77, g, clg_model_tensor_size(tw.model, 77), NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "77",
           "state of tensor 77");
    expect(clg_model_find_tensor(tw.model, "no_such_tensor", &id), CLG_ERR_INVALID_ARGUMENT, tu_ctx,
           "no_such_tensor", "find unknown name");
    expect(clg_model_upload_params(tw.model, 0, NULL, clg_model_tensor_size(tw.model, 0), NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, NULL,
           "upload NULL host");
    assert_int_not_equal(clg_model_param_copy_view(tw.model, 0, &v), CLG_SUCCESS);

    /* bad weights */
    int updated = 5;
    expect(clg_step(tw.model, tw.grads, 0.0f, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "0",
           "weight 0");
    expect(clg_step(tw.model, tw.grads, -2.5f, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "-2.5",
           "weight -2.5");
    expect(clg_step(tw.model, tw.grads, NAN, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "nan",
           "weight NaN");
    expect(clg_step(tw.model, tw.grads, INFINITY, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx,
           "inf", "weight inf");

    /* grads of another model (different layout): size mismatch */
    static const size_t counts[] = {5};
    const twin_layout other_lay = TWIN_ONE_GROUP(counts);
    twin other;
    twin_init(&other, tu_ctx, &cfg, &other_lay, 9);
    expect(clg_step(tw.model, other.grads, 1.0f, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, NULL,
           "grads of another model");
    twin_free(&other);

    /* no state changed: micro index, params, states, counters */
    assert_int_equal(clg_micro_step_index(tw.model), 1);
    twin_assert_unchanged(&tw, snap, "after invalid calls");
    clg_stats after = twin_stats(&tw);
    assert_int_equal(after.micro_steps, before.micro_steps);
    assert_int_equal(after.updates, before.updates);
    assert_true(after.weight_sum == before.weight_sum);

    /* and the cycle continues normally */
    for (unsigned m = 1; m < 3; m++) {
        twin_gradient(&tw, 0, m, g);
        twin_micro(&tw, g, 1.0f);
    }
    twin_check(&tw, REF_RTOL, REF_ATOL, "after invalid calls");
    free(snap);
    free(g);
    twin_free(&tw);
}

static unsigned k_zero_later(uint64_t t, void *user)
{
    (void)user;
    return t == 0 ? 2 : 0;
}

/* A k schedule that returns 0 is an error at the step that asks for it,
 * naming the value, and the step changes nothing. */
static void test_k_schedule_zero(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.k_schedule = k_zero_later;
    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 10);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned m = 0; m < 2; m++) {
        twin_gradient(&tw, 0, m, g);
        assert_int_equal(twin_micro(&tw, g, 1.0f), m == 1);
    }
    float *snap = twin_snapshot(&tw);
    clg_stats before = twin_stats(&tw);
    int updated = 3;
    expect(clg_step(tw.model, tw.grads, 1.0f, &updated, NULL), CLG_ERR_INVALID_ARGUMENT, tu_ctx, "0",
           "k schedule returned 0");
    assert_int_equal(clg_micro_step_index(tw.model), 0);
    twin_assert_unchanged(&tw, snap, "k schedule 0");
    clg_stats after = twin_stats(&tw);
    assert_int_equal(after.micro_steps, before.micro_steps);
    assert_int_equal(after.updates, 1);
    free(snap);
    free(g);
    twin_free(&tw);
}

static void test_lr_scale(void **state)
{
    (void)state;
    float lr = 0;
    assert_int_equal(clg_lr_scale(CLG_LR_RULE_LINEAR, 0.1f, 32, 128, &lr), CLG_SUCCESS);
    assert_true(fabsf(lr - 0.4f) <= 1e-7f);
    assert_int_equal(clg_lr_scale(CLG_LR_RULE_SQRT, 1e-3f, 32, 128, &lr), CLG_SUCCESS);
    assert_true(fabsf(lr - 2e-3f) <= 1e-9f);
    assert_int_equal(clg_lr_scale(CLG_LR_RULE_NONE, 1e-3f, 32, 128, &lr), CLG_SUCCESS);
    assert_true(lr == 1e-3f);
    lr = 7;
    expect(clg_lr_scale(CLG_LR_RULE_LINEAR, 0.1f, 0, 128, &lr), CLG_ERR_INVALID_ARGUMENT, NULL, "0",
           "base batch 0");
    expect(clg_lr_scale(CLG_LR_RULE_LINEAR, -1.0f, 32, 128, &lr), CLG_ERR_INVALID_ARGUMENT, NULL,
           "-1", "lr -1");
    assert_true(lr == 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),      cmocka_unit_test(test_null_handles),
        cmocka_unit_test(test_build_phase),     cmocka_unit_test(test_bad_indices_and_steps),
        cmocka_unit_test(test_k_schedule_zero), cmocka_unit_test(test_lr_scale),
    };
    return cmocka_run_group_tests_name("invalid", tests, tu_group_setup, tu_group_teardown);
}
