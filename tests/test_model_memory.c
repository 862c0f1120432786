/* test_model_memory.c - clg_model_finalize refuses a model above the
 * device's global memory (issue 37): CLG_ERR_OUT_OF_DEVICE_MEMORY with a
 * message naming the bytes the model needs, those clgrad holds already and
 * the device's, and nothing allocated (the context's device bytes and
 * their peak as they were). Where device memory is host memory (PoCL),
 * allocating such a model got the process killed by the kernel instead.
 *
 * The bytes a model needs come from clg_model_estimate (the public
 * figure, for n a multiple of 1024 in one buffer): its params,
 * accumulators, states and step block. The limit is the context's own
 * CL_DEVICE_GLOBAL_MEM_SIZE (PoCL's follows the machine's free memory, so
 * every test reads it from tu_ctx). No test allocates such a model: the
 * override clg_config.allow_over_device_memory is shown to pass this
 * check by the budget check behind it refusing instead, and the boundary
 * (exactly the device's memory is allowed, one byte more is not) with a
 * small model and clg_context_reserve standing for what is in use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clgrad_advanced.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* AdamW with AMSGrad: three fp32 states, 20 bytes a parameter. */
static clg_config amsgrad_config(void)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.amsgrad = 1;
    return c;
}

/* What finalize needs on the device for n parameters under cfg. */
static uint64_t model_bytes(const clg_config *cfg, uint64_t n)
{
    clg_model_plan p = clg_model_plan_init();
    OK(clg_model_estimate(cfg, n, &p));
    return p.params + p.accumulators + p.states + p.state_scales + p.param_copy + p.step_block;
}

static uint64_t device_memory(void)
{
    uint64_t device = clg_context_device_info(tu_ctx)->global_mem_size;
    assert_true(device > 0);
    return device;
}

/* The smallest multiple of 1024 parameters whose model exceeds the device,
 * in one buffer per arena (as the estimate counts it): the OpenCL spec's
 * max allocation is at least a quarter of the global memory, and an arena
 * of it is a fifth. */
static uint64_t over_device_params(const clg_config *cfg)
{
    uint64_t n = (device_memory() / 20 + 1024) / 1024 * 1024;
    assert_true(model_bytes(cfg, n) > device_memory());
    if (4 * n > clg_context_max_alloc(tu_ctx))
        fail_msg("an arena of %llu parameters is above the max allocation %llu",
                 (unsigned long long)n, (unsigned long long)clg_context_max_alloc(tu_ctx));
    if (clg_context_device_info(tu_ctx)->max_work_group_size < 256)
        fail_msg("the estimate's partials are a 256-wide work-group's");
    return n;
}

static clg_model *unfinalized(const clg_config *cfg, uint64_t n)
{
    clg_model *m = NULL;
    int t;
    OK(clg_model_create(tu_ctx, cfg, &m));
    OK(clg_model_add_tensor(m, "w", (size_t)n, 0, &t));
    return m;
}

/* The messages of the two refusals, for n parameters under cfg. */
static void over_device_message(char *want, size_t len, const clg_config *cfg, uint64_t n,
                                uint64_t in_use)
{
    snprintf(want, len,
             "clg_model_finalize: the model needs %llu bytes on the device (%llu parameters: "
             "params, accumulators, 3 optimizer states), %llu are in use, more than the "
             "device's %llu bytes of global memory; make the model smaller, or set "
             "clg_config.allow_over_device_memory for a device that pages",
             (unsigned long long)model_bytes(cfg, n), (unsigned long long)n,
             (unsigned long long)in_use, (unsigned long long)device_memory());
}

static void over_budget_message(char *want, size_t len, const clg_config *cfg, uint64_t n,
                                uint64_t in_use)
{
    snprintf(want, len,
             "clg_model_finalize: the model needs %llu bytes on the device (%llu parameters: "
             "params, accumulators, 3 optimizer states), %llu are in use and the budget is %llu",
             (unsigned long long)model_bytes(cfg, n), (unsigned long long)n,
             (unsigned long long)in_use, (unsigned long long)clg_context_budget(tu_ctx));
}

/* finalize refuses with status and the message want; nothing is
 * allocated, the model stays unfinalized. */
static void finalize_refused(clg_model *m, clg_status status, const char *want)
{
    uint64_t bytes = clg_context_device_bytes(tu_ctx);
    uint64_t peak = clg_context_peak_device_bytes(tu_ctx);
    assert_int_equal(clg_model_finalize(m), status);
    assert_string_equal(clg_last_error(tu_ctx), want);
    assert_true(clg_context_device_bytes(tu_ctx) == bytes);
    assert_true(clg_context_peak_device_bytes(tu_ctx) == peak);
    clg_model_plan plan = clg_model_plan_init();
    assert_int_equal(clg_model_memory(m, &plan), CLG_ERR_STATE);
}

/* Each test leaves the context without a budget, passed or not. */
static int no_budget(void **state)
{
    (void)state;
    return clg_context_set_budget(tu_ctx, 0) == CLG_SUCCESS ? 0 : -1;
}

static void test_refuses_a_model_above_device_memory(void **state)
{
    (void)state;
    clg_config cfg = amsgrad_config();
    uint64_t n = over_device_params(&cfg);
    char want[1024];
    over_device_message(want, sizeof want, &cfg, n, clg_context_device_bytes(tu_ctx));
    clg_model *m = unfinalized(&cfg, n);
    finalize_refused(m, CLG_ERR_OUT_OF_DEVICE_MEMORY, want);
    clg_model_destroy(m);

    /* a caller compiled before the field (its struct_size ends before it)
     * gets the default, the check, whatever lies past its struct */
    cfg.allow_over_device_memory = 1;
    cfg.struct_size = offsetof(clg_config, allow_over_device_memory);
    m = unfinalized(&cfg, n);
    finalize_refused(m, CLG_ERR_OUT_OF_DEVICE_MEMORY, want);
    clg_model_destroy(m);
}

/* With the override the same model gets past this check: the budget check
 * after it refuses instead (a budget keeps it from being allocated). */
static void test_override_passes_the_check(void **state)
{
    (void)state;
    clg_config cfg = amsgrad_config();
    uint64_t n = over_device_params(&cfg);
    cfg.allow_over_device_memory = 1;
    clg_model *m = unfinalized(&cfg, n);
    uint64_t in_use = clg_context_device_bytes(tu_ctx);
    OK(clg_context_set_budget(tu_ctx, in_use + 1));
    char want[1024];
    over_budget_message(want, sizeof want, &cfg, n, in_use);
    finalize_refused(m, CLG_ERR_OVER_BUDGET, want);
    clg_model_destroy(m);
}

/* What clgrad holds already counts: a small model that fills the device
 * exactly with it passes (the budget refuses it instead), one byte more of
 * it and the device refuses. */
static void test_counts_what_is_in_use(void **state)
{
    (void)state;
    clg_config cfg = amsgrad_config();
    uint64_t n = 1024, need = model_bytes(&cfg, n);
    uint64_t reserved = device_memory() - clg_context_device_bytes(tu_ctx) - need;
    OK(clg_context_reserve(tu_ctx, reserved));
    clg_model *m = unfinalized(&cfg, n);
    uint64_t in_use = clg_context_device_bytes(tu_ctx);
    assert_true(in_use + need == device_memory());
    OK(clg_context_set_budget(tu_ctx, in_use + 1));
    char want[1024];
    over_budget_message(want, sizeof want, &cfg, n, in_use);
    finalize_refused(m, CLG_ERR_OVER_BUDGET, want);
    OK(clg_context_set_budget(tu_ctx, 0));

    OK(clg_context_reserve(tu_ctx, 1));
    over_device_message(want, sizeof want, &cfg, n, in_use + 1);
    finalize_refused(m, CLG_ERR_OUT_OF_DEVICE_MEMORY, want);
    clg_context_unreserve(tu_ctx, reserved + 1);

    /* nothing in the way: it finalizes */
    OK(clg_model_finalize(m));
    clg_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_refuses_a_model_above_device_memory, no_budget),
        cmocka_unit_test_teardown(test_override_passes_the_check, no_budget),
        cmocka_unit_test_teardown(test_counts_what_is_in_use, no_budget),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
