/* config.c - optimizer configuration: PyTorch defaults, validation that
 * names the bad value, and the LR-scaling rules (the bytes-per-parameter
 * model of a configuration is estimate.c). */
#include "config.h"
#include "qstate.h"
#include "sized.h"

#include <math.h>
#include <string.h>

/* Every default, for the library's own (full-size) struct; fields not
 * named are zero. */
static clg_config defaults(clg_optimizer optimizer)
{
    return (clg_config){
        .struct_size = sizeof(clg_config),
        .optimizer = optimizer,
        .lr = optimizer == CLG_LION ? 1e-4f : optimizer == CLG_SGD ? 1e-2f : 1e-3f,
        .beta1 = 0.9f,
        .beta2 = optimizer == CLG_LION ? 0.99f : 0.999f,
        .eps = 1e-8f,
        .weight_decay = optimizer == CLG_ADAMW ? 1e-2f : 0.0f,
        .schedule = {.kind = CLG_SCHED_CONSTANT},
        .accum_steps = 1,
        .normalize = CLG_NORM_MEAN,
        .fuse_last_micro_step = 1,
        .acc_dtype = CLG_FP32,
        .param_copy_dtype = CLG_DTYPE_NONE,
        .nonfinite = CLG_NONFINITE_IGNORE,
        .loss_scale = CLG_LOSS_SCALE_NONE,
        .loss_scale_init = 65536.0f,
        .loss_scale_growth = 2.0f,
        .loss_scale_backoff = 0.5f,
        .loss_scale_interval = 2000,
        .loss_scale_min = 1.0f,
        .loss_scale_max = 16777216.0f,
        .noise_scale_ema = 0.9f,
        .state_dtype = CLG_FP32,
        .state_min_size = 4096,
        .state_rounding = CLG_ROUND_NEAREST,
        .master_dtype = CLG_FP32,
    };
}

/* Whether o is a member of clg_optimizer: the one list of them that has
 * names (clg_optimizer_name, whose switch -Wswitch keeps complete), so that
 * a new optimizer needs no range check edited here. */
static bool known_optimizer(clg_optimizer o)
{
    return strcmp(clg_optimizer_name(o), "unknown") != 0;
}

clg_status clg_config_init_sized(clg_config *config, size_t struct_size, clg_optimizer optimizer)
{
    if (config == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_config_init_sized: NULL config");
    clg_status st = clg__sized_check(NULL, struct_size, CLG__CONFIG_SIZE_MIN, "clg_config",
                                     "clg_config_init_sized");
    if (st != CLG_SUCCESS)
        return st;
    if (!known_optimizer(optimizer))
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_config_init_sized: unknown optimizer %d", (int)optimizer);
    clg_config full = defaults(optimizer);
    clg__sized_export(config, struct_size, &full, sizeof full);
    return CLG_SUCCESS;
}

clg_status clg__config_import(clg_context *ctx, const clg_config *user, clg_config *full,
                              const char *who)
{
    clg_status st = clg__sized_check(ctx, user->struct_size, CLG__CONFIG_SIZE_MIN, "clg_config",
                                     who);
    if (st != CLG_SUCCESS)
        return st;
    if (!known_optimizer(user->optimizer))
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: unknown optimizer %d", who,
                         (int)user->optimizer);
    *full = defaults(user->optimizer);
    return clg__sized_import(ctx, full, sizeof *full, user, user->struct_size,
                             CLG__CONFIG_SIZE_MIN, "clg_config", who);
}

static bool finite_nonneg(float x) { return isfinite(x) && x >= 0.0f; }
static bool unit_interval(float x) { return isfinite(x) && x >= 0.0f && x < 1.0f; }

clg_status clg__config_check(clg_context *ctx, const clg_config *c, const char *who)
{
#define BAD(...) clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, __VA_ARGS__)
    if (!known_optimizer(c->optimizer))
        return BAD("%s: unknown optimizer %d", who, (int)c->optimizer);
    if (!finite_nonneg(c->lr))
        return BAD("%s: lr %g must be finite and >= 0", who, (double)c->lr);
    if (!unit_interval(c->beta1))
        return BAD("%s: beta1 %g must be in [0, 1)", who, (double)c->beta1);
    if (!unit_interval(c->beta2))
        return BAD("%s: beta2 %g must be in [0, 1)", who, (double)c->beta2);
    if ((c->optimizer == CLG_ADAM || c->optimizer == CLG_ADAMW) &&
        !(isfinite(c->eps) && c->eps > 0.0f))
        return BAD("%s: eps %g must be finite and > 0", who, (double)c->eps);
    if (!finite_nonneg(c->weight_decay))
        return BAD("%s: weight_decay %g must be finite and >= 0", who, (double)c->weight_decay);
    if (!finite_nonneg(c->momentum))
        return BAD("%s: momentum %g must be finite and >= 0", who, (double)c->momentum);
    if (!(isfinite(c->dampening) && c->dampening >= 0.0f && c->dampening <= 1.0f))
        return BAD("%s: dampening %g must be in [0, 1]", who, (double)c->dampening);
    if (c->nesterov && (c->momentum <= 0.0f || c->dampening != 0.0f))
        return BAD("%s: nesterov needs momentum > 0 and dampening 0 (momentum %g, dampening %g)",
                   who, (double)c->momentum, (double)c->dampening);
    if (c->amsgrad && c->optimizer != CLG_ADAM && c->optimizer != CLG_ADAMW)
        return BAD("%s: amsgrad applies to Adam and AdamW only", who);
    if ((unsigned)c->schedule.kind > CLG_SCHED_COSINE)
        return BAD("%s: unknown schedule kind %d", who, (int)c->schedule.kind);
    if (!finite_nonneg(c->schedule.min_lr) || c->schedule.min_lr > c->lr)
        return BAD("%s: schedule min_lr %g must be in [0, lr = %g]", who,
                   (double)c->schedule.min_lr, (double)c->lr);
    if (c->schedule.kind != CLG_SCHED_CONSTANT && c->schedule.total <= c->schedule.warmup)
        return BAD("%s: schedule total %llu must exceed warmup %llu for a decaying schedule",
                   who, (unsigned long long)c->schedule.total,
                   (unsigned long long)c->schedule.warmup);
    if (c->schedule.warmup > UINT32_MAX || c->schedule.total > UINT32_MAX)
        return BAD("%s: schedule lengths must fit in 32 bits", who);
    if (c->k_schedule == NULL && c->accum_steps < 1)
        return BAD("%s: accum_steps (k) %u must be >= 1", who, c->accum_steps);
    if ((unsigned)c->normalize > CLG_NORM_SUM)
        return BAD("%s: unknown normalize mode %d", who, (int)c->normalize);
    if (c->acc_dtype != CLG_FP32 && c->acc_dtype != CLG_BF16)
        return BAD("%s: acc_dtype must be CLG_FP32 or CLG_BF16", who);
    if (c->param_copy_dtype != CLG_DTYPE_NONE && c->param_copy_dtype != CLG_FP16 &&
        c->param_copy_dtype != CLG_BF16)
        return BAD("%s: param_copy_dtype must be none, fp16 or bf16", who);
    if (!finite_nonneg(c->clip_norm))
        return BAD("%s: clip_norm %g must be finite and >= 0 (0 = off)", who,
                   (double)c->clip_norm);
    if (!finite_nonneg(c->clip_value))
        return BAD("%s: clip_value %g must be finite and >= 0 (0 = off)", who,
                   (double)c->clip_value);
    if ((unsigned)c->nonfinite > CLG_NONFINITE_ERROR)
        return BAD("%s: unknown non-finite policy %d", who, (int)c->nonfinite);
    if ((unsigned)c->loss_scale > CLG_LOSS_SCALE_DYNAMIC)
        return BAD("%s: unknown loss scale mode %d", who, (int)c->loss_scale);
    if (c->loss_scale != CLG_LOSS_SCALE_NONE) {
        if (!(isfinite(c->loss_scale_init) && c->loss_scale_init > 0.0f))
            return BAD("%s: loss_scale_init %g must be finite and > 0", who,
                       (double)c->loss_scale_init);
        if (!(isfinite(c->loss_scale_min) && c->loss_scale_min > 0.0f &&
              isfinite(c->loss_scale_max) && c->loss_scale_max >= c->loss_scale_min))
            return BAD("%s: loss scale bounds [%g, %g] must be finite, > 0 and ordered", who,
                       (double)c->loss_scale_min, (double)c->loss_scale_max);
    }
    if (c->loss_scale == CLG_LOSS_SCALE_DYNAMIC) {
        if (!(isfinite(c->loss_scale_growth) && c->loss_scale_growth >= 1.0f))
            return BAD("%s: loss_scale_growth %g must be >= 1", who,
                       (double)c->loss_scale_growth);
        if (!(isfinite(c->loss_scale_backoff) && c->loss_scale_backoff > 0.0f &&
              c->loss_scale_backoff < 1.0f))
            return BAD("%s: loss_scale_backoff %g must be in (0, 1)", who,
                       (double)c->loss_scale_backoff);
        if (c->loss_scale_interval < 1)
            return BAD("%s: loss_scale_interval must be >= 1", who);
    }
    if (c->noise_scale && !unit_interval(c->noise_scale_ema))
        return BAD("%s: noise_scale_ema %g must be in [0, 1)", who,
                   (double)c->noise_scale_ema);
    if (c->noise_scale && c->nonfinite == CLG_NONFINITE_SKIP_MICRO)
        return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                         "%s: the noise-scale estimate is not available with the skip-micro-step "
                         "policy (the first micro-step of a cycle is only known on the device)",
                         who);
    return clg__qstate_config_check(ctx, c, who);
#undef BAD
}

size_t clg__state_count(const clg_config *c)
{
    switch (c->optimizer) {
    case CLG_SGD:
        return c->momentum != 0.0f ? 1 : 0;
    case CLG_ADAM:
    case CLG_ADAMW:
        return c->amsgrad ? 3 : 2;
    case CLG_LION:
        return 1;
    }
    return 0;
}

size_t clg__dtype_size(clg_dtype dtype)
{
    switch (dtype) {
    case CLG_FP32:
        return 4;
    case CLG_FP16:
    case CLG_BF16:
        return 2;
    default:
        return 0;
    }
}

clg_status clg_lr_scale(clg_lr_rule rule, float lr, uint64_t base_batch, uint64_t new_batch,
                        float *scaled_lr)
{
    if (scaled_lr == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_lr_scale: NULL scaled_lr");
    if (!finite_nonneg(lr))
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_lr_scale: lr %g", (double)lr);
    if (base_batch == 0 || new_batch == 0)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_lr_scale: batch sizes must be >= 1 (base %llu, new %llu)",
                         (unsigned long long)base_batch, (unsigned long long)new_batch);
    double ratio = (double)new_batch / (double)base_batch;
    switch (rule) {
    case CLG_LR_RULE_NONE:
        *scaled_lr = lr;
        return CLG_SUCCESS;
    case CLG_LR_RULE_LINEAR:
        *scaled_lr = (float)(lr * ratio);
        return CLG_SUCCESS;
    case CLG_LR_RULE_SQRT:
        *scaled_lr = (float)(lr * sqrt(ratio));
        return CLG_SUCCESS;
    }
    return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_lr_scale: unknown rule %d", (int)rule);
}
