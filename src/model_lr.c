/* model_lr.c - a model's learning rates after creation: the config's lr
 * (clg_model_set_lr) and a group's lr_mult (clg_model_set_group_lr_mult).
 * The launchers read both at every update (kernels.c: the prologue's lr,
 * a single-group chunk's lr_mult), so that a change counts from the next
 * update enqueued, whatever the cycle holds; a chunk of several groups
 * reads its lr_mult from its group table, written again here. */
#include "config.h"
#include "model.h"
#include "plan.h"

clg_status clg_model_set_lr(clg_model *m, float lr)
{
    const char *who = "clg_model_set_lr";
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    /* create's whole check, so that what depends on the lr (min_lr <= lr)
     * is refused alike */
    clg_config c = m->cfg;
    c.lr = lr;
    clg_status st = clg__config_check(m->ctx, &c, who);
    if (st == CLG_SUCCESS)
        m->cfg.lr = lr;
    return st;
}

clg_status clg_model_set_group_lr_mult(clg_model *m, int group, float lr_mult)
{
    const char *who = "clg_model_set_group_lr_mult";
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (group < 0 || (size_t)group >= m->n_groups)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: no group %d (the model has %zu)",
                         who, group, m->n_groups);
    clg_group_slot *g = &m->groups[group];
    clg_status st = clg__lr_mult_check(m->ctx, lr_mult, g->name, who);
    if (st != CLG_SUCCESS)
        return st;
    float before = g->lr_mult;
    g->lr_mult = lr_mult;
    if (!m->finalized) /* finalize writes the tables */
        return CLG_SUCCESS;
    st = clg__plan_tables_write(m, who);
    if (st != CLG_SUCCESS) {
        /* the tables as they were, so that the failed call changed nothing;
         * if even that fails, the tables no longer match the groups */
        g->lr_mult = before;
        if (clg__plan_tables_write(m, who) != CLG_SUCCESS)
            m->failed = st;
    }
    return st;
}
