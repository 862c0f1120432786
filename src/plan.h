/* plan.h - a model's launch plan: for each launch of the cycle, its kernel
 * (a kernel object of its own, built from the variant the config selects),
 * its NDRange and its fixed arguments, decided and set once. The launchers (kernels.c) then set only what changes from one
 * call to the next (the gradients, a weight, a seed, a partials region)
 * and enqueue. The update is planned at finalize, every other part at its
 * first use (the launches over gradients once per gradient dtype, known
 * only then). docs/design.md, "The launch plan". */
#ifndef CLGRAD_PLAN_H
#define CLGRAD_PLAN_H

#include "model.h"

/* One launch: a kernel object with its fixed arguments set, its global and
 * local size, and its name for errors. kernel NULL: not in this plan. */
typedef struct clg_launch {
    cl_kernel kernel;
    size_t global, local;
    const char *what;
} clg_launch;

/* The parts of the plan, each a launch or a launch per chunk (kernel NULL
 * where a chunk has no work: another shard's, no tensor to norm). */
typedef enum clg_plan_part {
    CLG_PLAN_UPDATE,         /* per chunk: the update of paths A and B */
    CLG_PLAN_PROLOGUE,       /* the step block for the update */
    CLG_PLAN_MICRO_PROLOGUE, /* skip-micro: the micro-step's verdict */
    CLG_PLAN_FOLD_SMALL,     /* noise scale: the first micro-step's norm */
    CLG_PLAN_ACC_SUMSQ,      /* per chunk: the norm pass over the accumulator */
    CLG_PLAN_SHARD_SUMSQ,    /* per chunk: the same over the shard's part */
    CLG_PLAN_TENSOR_SUMSQ,   /* per chunk: per-tensor norms */
    /* over gradients of one dtype, per chunk */
    CLG_PLAN_ACCUMULATE,       /* acc (+)= w*g */
    CLG_PLAN_ACCUMULATE_STATS, /* the same, with the norm's partials */
    CLG_PLAN_CHECK_FINITE,     /* skip-micro: finiteness of g */
    CLG_PLAN_UPDATE_FUSED,     /* path C: the update reads g itself */
    CLG_PLAN_PARTS
} clg_plan_part;

/* Gradient dtypes: CLG_FP32, CLG_FP16, CLG_BF16. */
enum { CLG_GRAD_DTYPES = 3 };

/* Each part's launches once planned (NULL before); the parts over
 * gradients per dtype, the others in slot 0. */
struct clg_plan {
    clg_launch *parts[CLG_PLAN_PARTS][CLG_GRAD_DTYPES];
};

/* Does the end of a cycle need the norm / non-finite statistics? */
static inline bool clg__needs_stats(const clg_config *c)
{
    return c->clip_norm > 0.0f || c->nonfinite != CLG_NONFINITE_IGNORE ||
           c->loss_scale == CLG_LOSS_SCALE_DYNAMIC || c->noise_scale || c->grad_norm;
}

/* At finalize, after the layout and the arenas: the update's group tables,
 * (lr_mult, weight decay) per work-group of chunks with several param
 * groups. Then, once every buffer exists, the plan with its update of
 * paths A and B (the programs finalize built before the plan, so that
 * their build failure shows there). */
clg_status clg__plan_tables(clg_model *model);
/* Writes every group table again from the groups' values now (a changed
 * lr_mult, clg_model_set_group_lr_mult), blocking; who names the call. */
clg_status clg__plan_tables_write(clg_model *model, const char *who);
clg_status clg__plan_create(clg_model *model);
/* The launches of part (over gradients of g_dtype for the parts over
 * gradients), planned at their first use: a model compiles what it runs
 * and no more, as it did before the plan. */
clg_status clg__plan_part(clg_model *model, clg_plan_part part, clg_dtype g_dtype,
                          const clg_launch **out);
/* Releases the plan and the group tables; safe on a half-built model. */
void clg__plan_destroy(clg_model *model);
/* Device bytes of the group tables. */
uint64_t clg__plan_table_bytes(const clg_model *model);

#endif /* CLGRAD_PLAN_H */
