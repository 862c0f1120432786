/* estimate.c - the bytes-per-parameter model of a configuration: what a
 * model of n parameters in one tensor would allocate, whole
 * (clg_model_estimate) or as one ZeRO-1 shard (clg_model_estimate_shard),
 * without a device. tests/test_qstate_api.c and tests/test_shard.c hold
 * both to what finalized models allocate. */
#include "config.h"
#include "model.h"
#include "qstate.h"
#include "sized.h"

/* n parameters, the optimizer states over own of them (own == n unless
 * sharded), into plan. config has been imported and checked. */
static void estimate(const clg_config *config, uint64_t n, uint64_t own, clg_model_plan *plan)
{
    /* one tensor: Q8/Q4 states unless it is below state_min_size */
    uint64_t n_q = clg__qstate_count(config), n_s = clg__state_count(config);
    clg_dtype fmt = n_q && n >= config->state_min_size ? config->state_dtype
                    : config->state_dtype == CLG_BF16  ? CLG_BF16
                                                       : CLG_FP32;
    plan->params = clg__format_bytes(config->master_dtype, n);
    plan->accumulators = clg__dtype_size(config->acc_dtype) * n;
    plan->states = n_q * clg__format_bytes(fmt, own) + (n_s - n_q) * 4 * own;
    plan->state_scales = n_q * 4 * clg__format_scales(fmt, own);
    plan->param_copy = clg__dtype_size(config->param_copy_dtype) * n;
    /* the partials of a 256-wide work-group, one region per CLG_REGIONS */
    uint64_t groups = clg__reduce_groups(256, (size_t)(n / 4));
    plan->step_block = 4 * CLG_SB_WORDS + 4 * CLG_REGIONS * groups;
    /* per-tensor norms: one float, one offset and one count for the tensor */
    plan->tables = config->tensor_norms ? 4 + 8 + 8 : 0;
    plan->total = plan->params + plan->accumulators + plan->states + plan->param_copy +
                  plan->grad_buffers + plan->step_block + plan->state_scales + plan->tables;
}

/* The checks both calls share; *config the imported copy. */
static clg_status import(const clg_config *user_config, const clg_model_plan *user_plan,
                         clg_config *config, const char *who)
{
    if (user_config == NULL || user_plan == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL %s", who,
                         user_config == NULL ? "config" : "plan");
    clg_status st =
        clg__sized_check(NULL, user_plan->struct_size, CLG__PLAN_SIZE_MIN, "clg_model_plan", who);
    if (st == CLG_SUCCESS)
        st = clg__config_import(NULL, user_config, config, who);
    /* refuse what clg_model_create refuses, with its status and message:
     * a plan of a config no model can have is no answer */
    if (st == CLG_SUCCESS)
        st = clg__config_check(NULL, config, who);
    return st;
}

clg_status clg_model_estimate(const clg_config *user_config, uint64_t n, clg_model_plan *user_plan)
{
    clg_config config;
    clg_status st = import(user_config, user_plan, &config, "clg_model_estimate");
    if (st != CLG_SUCCESS)
        return st;
    clg_model_plan plan = {.struct_size = sizeof plan};
    estimate(&config, n, n, &plan);
    clg__sized_export(user_plan, user_plan->struct_size, &plan, sizeof plan);
    return CLG_SUCCESS;
}

clg_status clg_model_estimate_shard(const clg_config *user_config, uint64_t n, unsigned index,
                                    unsigned count, clg_model_plan *user_plan)
{
    const char *who = "clg_model_estimate_shard";
    clg_config config;
    clg_status st = import(user_config, user_plan, &config, who);
    if (st == CLG_SUCCESS && (count == 0 || index >= count))
        st = clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                       "%s: shard %u of %u: the count must be >= 1 and the index below it", who,
                       index, count);
    /* as clg_model_finalize refuses it */
    if (st == CLG_SUCCESS)
        st = clg__shard_config_check(NULL, &config, who);
    if (st != CLG_SUCCESS)
        return st;
    /* the shard's part of the tensor's whole segments, the padding after
     * the last parameter left out (as clg_model_estimate leaves it out) */
    uint64_t padded = (n + CLG_SEGMENT_ALIGN - 1) / CLG_SEGMENT_ALIGN * CLG_SEGMENT_ALIGN;
    uint64_t first, own;
    clg__shard_bounds(padded, index, count, &first, &own);
    own = first >= n ? 0 : first + own > n ? n - first : own;
    clg_model_plan plan = {.struct_size = sizeof plan};
    estimate(&config, n, own, &plan);
    clg__sized_export(user_plan, user_plan->struct_size, &plan, sizeof plan);
    return CLG_SUCCESS;
}
