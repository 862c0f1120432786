/* kernels.c - the launchers of accumulate.cl, stats.cl, prologue.cl and
 * update.cl over a model's launch plan (plan.c, where every kernel's
 * variant, NDRange and fixed arguments are decided once: at finalize, or
 * at the first use of a part of the cycle). A launcher sets only the
 * arguments that change from call to call, by index, and enqueues. */
#include "kernels.h"

#include "plan.h"

/* Each kernel's argument list is generated from cl/layout.py
 * (clg_layout.h), in the kernel's order: the indices below are the
 * positions of the call's arguments in those lists. A new argument
 * changes a list's count and stops the build here until plan.c sets it
 * and the indices are checked against cl/layout.py again. */
_Static_assert(CLG_ARGS_ACCUMULATE_COUNT == 9, "accumulate: set the new argument, then count it");
_Static_assert(CLG_ARGS_REDUCE_COUNT == 4, "reduce: set the new argument, then count it");
_Static_assert(CLG_ARGS_TENSOR_SUMSQ_COUNT == 5,
               "tensor_sumsq: set the new argument, then count it");
_Static_assert(CLG_ARGS_FOLD_COUNT == 5, "fold: set the new argument, then count it");
_Static_assert(CLG_ARGS_PROLOGUE_COUNT == 17, "prologue: set the new argument, then count it");
_Static_assert(CLG_ARGS_UPDATE_COUNT == 23 + 0, "update: set the new argument, then count it");
/* clang-format off */
enum {
    ACCUMULATE_G = 1, ACCUMULATE_W = 2, ACCUMULATE_FIRST = 3, ACCUMULATE_SEED = 5,
    ACCUMULATE_PBASE = 8,
    REDUCE_SRC = 0, REDUCE_PBASE = 3,
    FOLD_WEIGHT = 4,
    PROLOGUE_WEIGHT_SUM = 3, PROLOGUE_LR = 4,
    UPDATE_G = 2, UPDATE_W_LAST = 3, UPDATE_ACC_EMPTY = 4, UPDATE_LR_MULT = 10, UPDATE_SEED = 21,
};
/* clang-format on */

/* Sets argument `index` (named `name`) of a planned launch. */
static clg_status set_arg(clg_model *m, const clg_launch *l, cl_uint index, size_t size,
                          const void *value, const char *name)
{
    cl_int err = clSetKernelArg(l->kernel, index, size, value);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__args_failed(m->ctx, err, l->what, name);
}

#define SET(l, index, value)                                                                       \
    do {                                                                                           \
        clg_status st_ = set_arg(m, (l), (index), sizeof(value), &(value), #index);                \
        if (st_ != CLG_SUCCESS)                                                                    \
            return st_;                                                                            \
    } while (0)

/* Enqueues a planned launch and counts it. */
static clg_status run(clg_model *m, const clg_launch *l)
{
    clg_status st = clg__launch(m->ctx, l->kernel, l->global, l->local, l->what);
    if (st == CLG_SUCCESS)
        m->launched++;
    return st;
}

static cl_ulong region_base(const clg_model *m, int region, size_t chunk)
{
    return (cl_ulong)region * m->region_size + m->chunk_pbase[chunk];
}

clg_status clg__launch_accumulate(clg_model *m, const clg_grads *g, float w, bool first, int region)
{
    const clg_launch *l;
    clg_status st = clg__plan_part(m, region >= 0 ? CLG_PLAN_ACCUMULATE_STATS : CLG_PLAN_ACCUMULATE,
                                   g->dtype, &l);
    /* the stochastic-rounding stream changes with every micro-step */
    cl_uint seed = (cl_uint)(m->cfg.seed * 0x9E3779B97F4A7C15ull >> 32) ^
                   (cl_uint)(m->micro_total * 0x85EBCA6Bu);
    cl_uint first_u = first ? 1u : 0u;
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        SET(&l[c], ACCUMULATE_G, g->arena.chunks[c]);
        SET(&l[c], ACCUMULATE_W, w);
        SET(&l[c], ACCUMULATE_FIRST, first_u);
        SET(&l[c], ACCUMULATE_SEED, seed);
        if (region >= 0) {
            cl_ulong pbase = region_base(m, region, c);
            SET(&l[c], ACCUMULATE_PBASE, pbase);
        }
        st = run(m, &l[c]);
    }
    return st;
}

/* A one-launch part (the prologue, a fold) whose one argument of the call
 * is the float at index. */
static clg_status run_single(clg_model *m, clg_plan_part part, cl_uint index, float value,
                             const char *name)
{
    const clg_launch *l;
    clg_status st = clg__plan_part(m, part, CLG_FP32, &l);
    if (st == CLG_SUCCESS)
        st = set_arg(m, l, index, sizeof value, &value, name);
    return st == CLG_SUCCESS ? run(m, l) : st;
}

/* A fold of a partials region into the step block (part: which). */
static clg_status fold(clg_model *m, clg_plan_part part, float weight)
{
    return run_single(m, part, FOLD_WEIGHT, weight, "FOLD_WEIGHT");
}

clg_status clg__launch_check_micro(clg_model *m, const clg_grads *g, float w)
{
    const clg_launch *l;
    clg_status st = clg__plan_part(m, CLG_PLAN_CHECK_FINITE, g->dtype, &l);
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        SET(&l[c], REDUCE_SRC, g->arena.chunks[c]);
        st = run(m, &l[c]);
    }
    return st == CLG_SUCCESS ? fold(m, CLG_PLAN_MICRO_PROLOGUE, w) : st;
}

clg_status clg__launch_fold_small(clg_model *m, float weight)
{
    return fold(m, CLG_PLAN_FOLD_SMALL, weight);
}

/* Every launch of a per-chunk part (chunks without work, e.g. another
 * shard's, have none planned); region >= 0: a norm pass into that partials
 * region, the call's only argument. */
static clg_status run_chunks(clg_model *m, clg_plan_part part, int region)
{
    const clg_launch *l;
    clg_status st = clg__plan_part(m, part, CLG_FP32, &l);
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        if (l[c].kernel == NULL)
            continue;
        if (region >= 0) {
            cl_ulong pbase = region_base(m, region, c);
            SET(&l[c], REDUCE_PBASE, pbase);
        }
        st = run(m, &l[c]);
    }
    return st;
}

clg_status clg__launch_shard_sumsq(clg_model *m)
{
    return run_chunks(m, CLG_PLAN_SHARD_SUMSQ, -1);
}

clg_status clg__launch_acc_sumsq(clg_model *m, int region)
{
    return run_chunks(m, CLG_PLAN_ACC_SUMSQ, region);
}

clg_status clg__launch_tensor_sumsq(clg_model *m)
{
    return run_chunks(m, CLG_PLAN_TENSOR_SUMSQ, -1);
}

clg_status clg__launch_prologue(clg_model *m, float weight_sum)
{
    /* the lr of the update enqueued now (clg_model_set_lr may change it) */
    const clg_launch *l;
    clg_status st = clg__plan_part(m, CLG_PLAN_PROLOGUE, CLG_FP32, &l);
    if (st == CLG_SUCCESS)
        st = set_arg(m, l, PROLOGUE_LR, sizeof m->cfg.lr, &m->cfg.lr, "PROLOGUE_LR");
    return st == CLG_SUCCESS ? run_single(m, CLG_PLAN_PROLOGUE, PROLOGUE_WEIGHT_SUM, weight_sum,
                                          "PROLOGUE_WEIGHT_SUM")
                             : st;
}

/* The stochastic-rounding stream of one chunk's update: new with every
 * cycle (restored by checkpoints), distinct per chunk. */
static cl_uint update_seed(const clg_model *m, size_t chunk)
{
    return (cl_uint)(m->cfg.seed * 0x9E3779B97F4A7C15ull >> 32) ^
           (cl_uint)(m->cycles * 0xC2B2AE35u) ^ (cl_uint)((chunk + 1) * 0x27D4EB2Fu);
}

clg_status clg__launch_update(clg_model *m, const clg_grads *last, float w_last, bool acc_empty)
{
    const clg_launch *l;
    clg_status st = last ? clg__plan_part(m, CLG_PLAN_UPDATE_FUSED, last->dtype, &l)
                         : clg__plan_part(m, CLG_PLAN_UPDATE, CLG_FP32, &l);
    cl_uint empty = acc_empty ? 1u : 0u;
    for (size_t ch = 0; ch < m->n_chunks && st == CLG_SUCCESS; ch++) {
        if (l[ch].kernel == NULL)
            continue; /* another shard's */
        cl_mem g = last ? last->arena.chunks[ch] : NULL;
        cl_uint seed = update_seed(m, ch);
        /* a single-group chunk's lr_mult as it is now (a chunk of several
         * groups reads the table, clg__plan_tables_write) */
        float lr_mult = m->groups[m->segments[m->chunk_first_seg[ch]].group].lr_mult;
        SET(&l[ch], UPDATE_G, g);
        SET(&l[ch], UPDATE_LR_MULT, lr_mult);
        SET(&l[ch], UPDATE_W_LAST, w_last);
        SET(&l[ch], UPDATE_ACC_EMPTY, empty);
        SET(&l[ch], UPDATE_SEED, seed);
        st = run(m, &l[ch]);
    }
    return st;
}
