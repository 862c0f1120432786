/* test_estimate_validation.c - clg_model_estimate and
 * clg_model_estimate_shard refuse exactly the configurations
 * clg_model_create refuses: one table of bad configs, one per check of the
 * config (config.c, qstate.c), fed to all three, each refusal with the
 * table's status and message after the caller's own name, and the plan
 * left as it was. A plan of a config no model can have would be an answer
 * to nothing (issue 37: SGD with momentum -1 used to get one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define INV CLG_ERR_INVALID_ARGUMENT
#define UNS CLG_ERR_UNSUPPORTED
#define Q4_AMSGRAD                                                                                 \
    "state_dtype CLG_Q4 with amsgrad is not supported: the fp32 running max of v would keep "      \
    "every upward 4-bit rounding error of v for good (use CLG_Q8 or CLG_BF16 states with "         \
    "AMSGrad)"

/* the checks of dynamic loss scaling's settings: only in that mode */
#define DYNAMIC(field, value) (c->loss_scale = CLG_LOSS_SCALE_DYNAMIC, c->field = value)

/* X(id, optimizer, edit of the config c, status, message after "who: ") */
#define BAD_CONFIGS(X)                                                                             \
    X(optimizer, CLG_SGD, c->optimizer = (clg_optimizer)9, INV, "unknown optimizer 9")             \
    X(lr, CLG_SGD, c->lr = -0.125f, INV, "lr -0.125 must be finite and >= 0")                      \
    X(lr_nan, CLG_ADAMW, c->lr = NAN, INV, "lr nan must be finite and >= 0")                       \
    X(beta1, CLG_ADAMW, c->beta1 = 1.0f, INV, "beta1 1 must be in [0, 1)")                         \
    X(beta2, CLG_LION, c->beta2 = -0.5f, INV, "beta2 -0.5 must be in [0, 1)")                      \
    X(eps, CLG_ADAM, c->eps = 0.0f, INV, "eps 0 must be finite and > 0")                           \
    X(weight_decay, CLG_ADAMW, c->weight_decay = INFINITY, INV,                                    \
      "weight_decay inf must be finite and >= 0")                                                  \
    X(momentum, CLG_SGD, c->momentum = -1.0f, INV, "momentum -1 must be finite and >= 0")          \
    X(momentum_nan, CLG_SGD, c->momentum = NAN, INV, "momentum nan must be finite and >= 0")       \
    X(momentum_inf, CLG_SGD, c->momentum = INFINITY, INV, "momentum inf must be finite and >= 0")  \
    X(dampening, CLG_SGD, (c->momentum = 0.9f, c->dampening = 1.5f), INV,                          \
      "dampening 1.5 must be in [0, 1]")                                                           \
    X(nesterov, CLG_SGD, c->nesterov = 1, INV,                                                     \
      "nesterov needs momentum > 0 and dampening 0 (momentum 0, dampening 0)")                     \
    X(amsgrad, CLG_LION, c->amsgrad = 1, INV, "amsgrad applies to Adam and AdamW only")            \
    X(schedule_kind, CLG_ADAMW, c->schedule.kind = (clg_schedule_kind)7, INV,                      \
      "unknown schedule kind 7")                                                                   \
    X(min_lr, CLG_ADAMW, c->schedule.min_lr = 0.5f, INV,                                           \
      "schedule min_lr 0.5 must be in [0, lr = 0.001]")                                            \
    X(schedule_total, CLG_ADAMW, c->schedule.kind = CLG_SCHED_COSINE, INV,                         \
      "schedule total 0 must exceed warmup 0 for a decaying schedule")                             \
    X(schedule_32bit, CLG_ADAMW, c->schedule.warmup = 1ull << 32, INV,                             \
      "schedule lengths must fit in 32 bits")                                                      \
    X(accum_steps, CLG_ADAMW, c->accum_steps = 0, INV, "accum_steps (k) 0 must be >= 1")           \
    X(normalize, CLG_ADAMW, c->normalize = (clg_normalize)5, INV, "unknown normalize mode 5")      \
    X(acc_none, CLG_ADAMW, c->acc_dtype = CLG_DTYPE_NONE, INV,                                     \
      "acc_dtype must be CLG_FP32 or CLG_BF16")                                                    \
    X(acc_q4, CLG_SGD, c->acc_dtype = CLG_Q4, INV, "acc_dtype must be CLG_FP32 or CLG_BF16")       \
    X(param_copy, CLG_ADAMW, c->param_copy_dtype = CLG_Q8, INV,                                    \
      "param_copy_dtype must be none, fp16 or bf16")                                               \
    X(clip_norm, CLG_ADAMW, c->clip_norm = -1.0f, INV,                                             \
      "clip_norm -1 must be finite and >= 0 (0 = off)")                                            \
    X(clip_value, CLG_ADAMW, c->clip_value = NAN, INV,                                             \
      "clip_value nan must be finite and >= 0 (0 = off)")                                          \
    X(nonfinite, CLG_ADAMW, c->nonfinite = (clg_nonfinite_policy)9, INV,                           \
      "unknown non-finite policy 9")                                                               \
    X(loss_scale, CLG_ADAMW, c->loss_scale = (clg_loss_scale_mode)6, INV,                          \
      "unknown loss scale mode 6")                                                                 \
    X(loss_scale_init, CLG_ADAMW,                                                                  \
      (c->loss_scale = CLG_LOSS_SCALE_STATIC, c->loss_scale_init = -2.0f), INV,                    \
      "loss_scale_init -2 must be finite and > 0")                                                 \
    X(loss_scale_bounds, CLG_ADAMW, DYNAMIC(loss_scale_max, 0.5f), INV,                            \
      "loss scale bounds [1, 0.5] must be finite, > 0 and ordered")                                \
    X(loss_scale_growth, CLG_ADAMW, DYNAMIC(loss_scale_growth, 0.5f), INV,                         \
      "loss_scale_growth 0.5 must be >= 1")                                                        \
    X(loss_scale_backoff, CLG_ADAMW, DYNAMIC(loss_scale_backoff, 1.0f), INV,                       \
      "loss_scale_backoff 1 must be in (0, 1)")                                                    \
    X(loss_scale_interval, CLG_ADAMW, DYNAMIC(loss_scale_interval, 0), INV,                        \
      "loss_scale_interval must be >= 1")                                                          \
    X(noise_ema, CLG_ADAMW, (c->noise_scale = 1, c->noise_scale_ema = 1.0f), INV,                  \
      "noise_scale_ema 1 must be in [0, 1)")                                                       \
    X(noise_skip_micro, CLG_ADAM, (c->noise_scale = 1, c->nonfinite = CLG_NONFINITE_SKIP_MICRO),   \
      UNS,                                                                                         \
      "the noise-scale estimate is not available with the skip-micro-step policy (the first "      \
      "micro-step of a cycle is only known on the device)")                                        \
    X(state_dtype, CLG_ADAMW, c->state_dtype = CLG_FP16, INV,                                      \
      "state_dtype 1 must be CLG_FP32, CLG_BF16, CLG_Q8 or CLG_Q4")                                \
    X(master_dtype, CLG_ADAMW, c->master_dtype = CLG_Q8, INV,                                      \
      "master_dtype 4 must be CLG_FP32 or CLG_BF16")                                               \
    X(state_rounding, CLG_ADAMW, c->state_rounding = (clg_rounding)3, INV,                         \
      "state_rounding 3 must be CLG_ROUND_NEAREST or CLG_ROUND_STOCHASTIC")                        \
    X(q4_amsgrad, CLG_ADAM, (c->state_dtype = CLG_Q4, c->amsgrad = 1), UNS, Q4_AMSGRAD)

typedef struct bad_config {
    const char *id;
    clg_optimizer optimizer;
    void (*edit)(clg_config *c);
    clg_status status;
    const char *message;
} bad_config;

#define EDIT(id, opt, edit, st, msg)                                                               \
    static void edit_##id(clg_config *c)                                                           \
    {                                                                                              \
        edit;                                                                                      \
    }
BAD_CONFIGS(EDIT)
#undef EDIT

#define ROW(id, opt, edit, st, msg) {#id, opt, edit_##id, st, msg},
static const bad_config bad_configs[] = {BAD_CONFIGS(ROW)};
#undef ROW

/* Each mismatch printed, counted in *wrong: one run names them all. */
static void expect_refused(const bad_config *b, const char *who, clg_status st, const char *message,
                           int *wrong)
{
    char want[512];
    snprintf(want, sizeof want, "%s: %s", who, b->message);
    if (st != b->status || strcmp(message, want) != 0) {
        print_error("%s: %s gave %s \"%s\", expected %s \"%s\"\n", b->id, who,
                    clg_status_string(st), st == CLG_SUCCESS ? "" : message,
                    clg_status_string(b->status), want);
        (*wrong)++;
    }
}

/* A plan whose every field a refused estimate must leave as it is. */
static clg_model_plan sentinel_plan(void)
{
    clg_model_plan p = clg_model_plan_init();
    memset((char *)&p + sizeof p.struct_size, 0xA5, sizeof p - sizeof p.struct_size);
    return p;
}

static void expect_plan_untouched(const bad_config *b, const clg_model_plan *plan, int *wrong)
{
    clg_model_plan sentinel = sentinel_plan();
    if (memcmp(plan, &sentinel, sizeof sentinel) != 0) {
        print_error("%s: the estimate wrote into the plan\n", b->id);
        (*wrong)++;
    }
}

static void test_estimate_refuses_what_create_refuses(void **state)
{
    (void)state;
    int wrong = 0;
    for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0]; i++) {
        const bad_config *b = &bad_configs[i];
        clg_config c = clg_config_init(b->optimizer);
        b->edit(&c);

        clg_model *m = (clg_model *)&c; /* must stay untouched */
        clg_status st = clg_model_create(tu_ctx, &c, &m);
        expect_refused(b, "clg_model_create", st, clg_last_error(tu_ctx), &wrong);
        assert_ptr_equal(m, (clg_model *)&c);

        clg_model_plan plan = sentinel_plan();
        st = clg_model_estimate(&c, 1 << 20, &plan);
        expect_refused(b, "clg_model_estimate", st, clg_last_error(NULL), &wrong);
        expect_plan_untouched(b, &plan, &wrong);
        st = clg_model_estimate_shard(&c, 1 << 20, 1, 2, &plan);
        expect_refused(b, "clg_model_estimate_shard", st, clg_last_error(NULL), &wrong);
        expect_plan_untouched(b, &plan, &wrong);
    }
    assert_int_equal(wrong, 0);
}

/* The other side: what create takes, estimate takes (the defaults of every
 * optimizer, and values at the edges of what the checks allow). */
static void test_estimate_takes_what_create_takes(void **state)
{
    (void)state;
    for (int o = CLG_SGD; o <= CLG_LION; o++) {
        clg_config c = clg_config_init((clg_optimizer)o);
        if (o == CLG_SGD)
            c.momentum = 2.0f; /* torch.optim.SGD takes any momentum >= 0 */
        c.acc_dtype = CLG_BF16;
        clg_model *m = NULL;
        OK(clg_model_create(tu_ctx, &c, &m));
        clg_model_destroy(m);
        clg_model_plan plan = clg_model_plan_init();
        OK(clg_model_estimate(&c, 1 << 20, &plan));
        assert_true(plan.accumulators == 2u << 20);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_refuses_what_create_refuses),
        cmocka_unit_test(test_estimate_takes_what_create_takes),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
