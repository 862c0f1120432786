/* plan.c - the launch plan of a model (see plan.h): the variant options of
 * every kernel (the -D flags of cl/), one kernel object per launch with
 * its fixed arguments set, the NDRanges, and the update's per-work-group
 * group tables. Nothing here enqueues a kernel. */
#include "plan.h"

#include "config.h"
#include "qstate.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ variants */

/* The -D options of each program, exactly as the kernels read them. */
static void accumulate_options(const clg_model *m, clg_dtype g_dtype, bool stats, char *opt,
                               size_t size)
{
    snprintf(opt, size,
             "-DG_DTYPE=%d -DACC_DTYPE=%d -DSTATS=%d -DSKIP_MICRO=%d -DWG=%zu -DITEMS=%d",
             (int)g_dtype, (int)m->acc.dtype, (int)stats,
             m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO, m->wg, CLG_REDUCE_ITEMS);
}

static void check_options(const clg_model *m, clg_dtype g_dtype, char *opt, size_t size)
{
    snprintf(opt, size, "-DG_DTYPE=%d -DACC_DTYPE=%d -DWG=%zu -DITEMS=%d", (int)g_dtype,
             (int)m->acc.dtype, m->wg, CLG_REDUCE_ITEMS);
}

static void stats_options(const clg_model *m, char *opt, size_t size)
{
    snprintf(opt, size, "-DACC_DTYPE=%d -DWG=%zu -DITEMS=%d", (int)m->acc.dtype, m->wg,
             CLG_REDUCE_ITEMS);
}

static void prologue_options(const clg_model *m, char *opt, size_t size)
{
    const clg_config *c = &m->cfg;
    snprintf(opt, size,
             "-DSTATS=%d -DCLIP=%d -DPOLICY=%d -DLOSS_SCALE=%d -DMEAN=%d -DSCHED=%d -DNOISE=%d "
             "-DWG=%zu",
             (int)clg__needs_stats(c), c->clip_norm > 0.0f, (int)c->nonfinite, (int)c->loss_scale,
             c->normalize == CLG_NORM_MEAN, (int)c->schedule.kind, c->noise_scale != 0, m->wg);
}

/* path_c: the update reads the last micro-step's gradients (g_dtype);
 * the state format is the chunk's (fp32 in the chunks of small tensors of
 * a Q8/Q4 model). */
static void update_options(const clg_model *m, size_t ch, bool path_c, clg_dtype g_dtype, char *opt,
                           size_t size)
{
    const clg_config *c = &m->cfg;
    clg_dtype state_dtype = clg__state_format(m, 0, ch);
    snprintf(opt, size,
             "-DOPT=%d -DMOMENTUM=%d -DNESTEROV=%d -DAMSGRAD=%d -DMAXIMIZE=%d -DPATH_C=%d "
             "-DG_DTYPE=%d -DACC_DTYPE=%d -DCOPY_DTYPE=%d -DCLIP_VALUE=%d -DSINGLE_GROUP=%d "
             "-DSTATE_DTYPE=%d -DSTATE_SR=%d -DMASTER_DTYPE=%d -DWG=%zu",
             (int)c->optimizer, c->momentum != 0.0f, c->nesterov != 0, c->amsgrad != 0,
             c->maximize != 0, (int)path_c, (int)g_dtype, (int)m->acc.dtype,
             (int)c->param_copy_dtype, c->clip_value > 0.0f, m->chunk_segs[ch] == 1,
             (int)state_dtype, state_dtype != CLG_FP32 && c->state_rounding == CLG_ROUND_STOCHASTIC,
             (int)c->master_dtype, m->wg);
}

/* A kernel object of its own for one launch of kernel `name` of program
 * `program` built with options, over `groups` work-groups of m->wg. */
static clg_status plan_launch(clg_model *m, const char *program, const char *options,
                              const char *name, size_t groups, clg_launch *l)
{
    cl_program prog;
    clg_status st = clg__program(m->ctx, program, options, &prog, NULL);
    if (st == CLG_SUCCESS)
        st = clg__kernel(m->ctx, prog, name, &l->kernel);
    l->global = groups * m->wg;
    l->local = m->wg;
    l->what = name;
    return st;
}

static clg_launch *launches_alloc(clg_model *m)
{
    return calloc(m->n_chunks ? m->n_chunks : 1, sizeof(clg_launch));
}

static void launches_free(const clg_model *m, clg_launch **l)
{
    for (size_t c = 0; *l != NULL && c < m->n_chunks; c++)
        if ((*l)[c].kernel != NULL)
            clReleaseKernel((*l)[c].kernel);
    free(*l);
    *l = NULL;
}

static clg_status out_of_memory(clg_model *m)
{
    return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "launch plan: out of memory");
}

static size_t region_base(const clg_model *m, int region, size_t chunk)
{
    return (size_t)region * m->region_size + m->chunk_pbase[chunk];
}

/* ------------------------------------------------------------ group tables */

/* Chunk ch's table from the groups' values now, written blocking: on the
 * in-order queue, behind every update enqueued before (which read the
 * table as it was). A shard's table is its rows of the chunk's. */
static clg_status table_write(clg_model *m, size_t ch, const char *who)
{
    size_t groups = clg__stream_groups(m->wg, m->chunk_elems[ch] / 4);
    cl_float2 *rows = calloc(groups, sizeof *rows);
    if (rows == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    size_t per_group = m->wg * 4;
    for (size_t s = m->chunk_first_seg[ch]; s < m->n_segments && m->segments[s].chunk == ch; s++) {
        const clg_segment *seg = &m->segments[s];
        const clg_group_slot *grp = &m->groups[seg->group];
        for (size_t gi = seg->offset / per_group; gi < (seg->offset + seg->count) / per_group; gi++)
            rows[gi] = (cl_float2){{grp->lr_mult, grp->weight_decay}};
    }
    size_t n = clg__update_groups(m, ch), row0 = m->own_lo[ch] / per_group;
    cl_int err = clg__fault_hit(CLG_FAULT_ENQUEUE)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueWriteBuffer(m->ctx->queue, m->group_params[ch], CL_TRUE, 0,
                                            n * sizeof *rows, rows + row0, 0, NULL, NULL);
    free(rows);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clEnqueueWriteBuffer");
}

/* For every chunk with several param groups, (lr_mult, weight decay) per
 * work-group of its update launch: segments are whole work-groups. */
clg_status clg__plan_tables(clg_model *m)
{
    size_t nc = m->n_chunks;
    m->group_params = calloc(nc, sizeof *m->group_params);
    m->chunk_segs = calloc(nc, sizeof *m->chunk_segs);
    m->chunk_first_seg = calloc(nc, sizeof *m->chunk_first_seg);
    if (!m->group_params || !m->chunk_segs || !m->chunk_first_seg)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    for (size_t s = m->n_segments; s-- > 0;) {
        m->chunk_segs[m->segments[s].chunk]++;
        m->chunk_first_seg[m->segments[s].chunk] = s;
    }
    clg_status st = CLG_SUCCESS;
    for (size_t ch = 0; ch < nc && st == CLG_SUCCESS; ch++) {
        if (m->chunk_segs[ch] < 2 || clg__update_groups(m, ch) == 0)
            continue;
        st = clg__buffer_create(m->ctx, clg__update_groups(m, ch) * sizeof(cl_float2),
                                &m->group_params[ch]);
        if (st == CLG_SUCCESS)
            st = table_write(m, ch, "clg_model_finalize");
    }
    return st;
}

clg_status clg__plan_tables_write(clg_model *m, const char *who)
{
    clg_status st = CLG_SUCCESS;
    for (size_t ch = 0; m->group_params != NULL && ch < m->n_chunks && st == CLG_SUCCESS; ch++)
        if (m->group_params[ch] != NULL)
            st = table_write(m, ch, who);
    return st;
}

uint64_t clg__plan_table_bytes(const clg_model *m)
{
    uint64_t bytes = 0;
    for (size_t ch = 0; m->group_params != NULL && ch < m->n_chunks; ch++)
        if (m->group_params[ch] != NULL)
            bytes += clg__update_groups(m, ch) * sizeof(cl_float2);
    return bytes;
}

static void group_tables_free(clg_model *m)
{
    for (size_t ch = 0; m->group_params != NULL && ch < m->n_chunks; ch++)
        if (m->group_params[ch] != NULL)
            clg__buffer_release(m->ctx, m->group_params[ch],
                                clg__update_groups(m, ch) * sizeof(cl_float2));
    free(m->group_params);
    free(m->chunk_segs);
    free(m->chunk_first_seg);
    m->group_params = NULL;
    m->chunk_segs = m->chunk_first_seg = NULL;
}

/* ------------------------------------------------------------ the update */

/* Q8/Q4 chunks run update_q.cl: one work-item per absmax block, in
 * work-groups of QLOCAL on GPUs; on a CPU one work-item each (PoCL runs a
 * work-group's work-items in a loop it cannot vectorize here: measured,
 * larger groups only add overhead). */
static size_t q_local(const clg_model *m)
{
    if (m->ctx->info.type & CL_DEVICE_TYPE_CPU)
        return 1;
    return m->wg < 64 ? m->wg : 64;
}

/* The update of chunk ch over the elements its states cover (the shard's
 * part of the chunk, or all of it), every argument set but those of the
 * cycle (g, w_last, acc_empty, seed) and lr_mult, which the launcher sets
 * again at every update (clg_model_set_group_lr_mult). */
static clg_status plan_update(clg_model *m, size_t ch, bool path_c, clg_dtype g_dtype,
                              clg_launch *l)
{
    if (clg__state_elems(m, ch) == 0)
        return CLG_SUCCESS; /* another shard's */
    char opt[260];
    update_options(m, ch, path_c, g_dtype, opt, sizeof opt);
    clg_dtype fmt = clg__state_format(m, 0, ch);
    size_t elems = clg__state_elems(m, ch);
    bool quantized = clg__dtype_quantized(fmt);
    const char *program = quantized ? "update_q" : "update";
    clg_status st = plan_launch(m, program, opt, program, clg__update_groups(m, ch), l);
    if (st != CLG_SUCCESS)
        return st;
    if (quantized) {
        size_t blocks = elems / clg__qblock(fmt);
        l->local = q_local(m);
        l->global = (blocks + l->local - 1) / l->local * l->local;
    }
    const clg_config *c = &m->cfg;
    bool single = m->chunk_segs[ch] == 1;
    /* a single-group chunk: its group's values as arguments */
    const clg_group_slot *grp = &m->groups[m->segments[m->chunk_first_seg[ch]].group];
    const clg_args_update a = {
        .p = clg__shard_mem(m, CLG_ARENA_PARAMS, ch),
        .acc = clg__shard_mem(m, CLG_ARENA_ACC, ch),
        .g = NULL,
        .w_last = 0.0f,
        .acc_empty = 0u,
        .s0 = m->n_states > 0 ? m->states[0].chunks[ch] : NULL,
        .s1 = m->n_states > 1 ? m->states[1].chunks[ch] : NULL,
        .s2 = m->n_states > 2 ? m->states[2].chunks[ch] : NULL,
        .copy = m->copy.chunks ? m->copy.chunks[ch] : NULL,
        .group_params = single ? NULL : m->group_params[ch],
        .lr_mult = grp->lr_mult,
        .wd = grp->weight_decay,
        .beta1 = c->beta1,
        .beta2 = c->beta2,
        .eps = c->eps,
        .momentum = c->momentum,
        .dampening = c->dampening,
        .clip_value = c->clip_value,
        .sb = m->step_block,
        .s0_scale = m->scales[0].chunks ? m->scales[0].chunks[ch] : NULL,
        .s1_scale = m->scales[1].chunks ? m->scales[1].chunks[ch] : NULL,
        .seed = 0u,
        .n4 = elems / 4,
    };
    CLG_SET_ARGS(m->ctx, update, l->kernel, &a);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ statistics */

/* A reduction pass (argument list "reduce") of chunk ch: over n4 float4s
 * of src into the partials of region (its base set again per call where
 * the region changes). */
static clg_status plan_reduce(clg_model *m, const char *program, const char *opt, const char *name,
                              size_t ch, cl_mem src, size_t n4, int region, clg_launch *l)
{
    clg_status st = plan_launch(m, program, opt, name, clg__reduce_groups(m->wg, n4), l);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_reduce a = {
        .src = src,
        .n4 = n4,
        .partials = m->partials,
        .pbase = region_base(m, region, ch),
    };
    CLG_SET_ARGS(m->ctx, reduce, l->kernel, &a);
    return CLG_SUCCESS;
}

/* A one-group kernel of prologue.cl that folds a partials region into the
 * step block (argument list "fold"; the weight is the call's). */
static clg_status plan_fold(clg_model *m, const char *name, int region, clg_launch *l)
{
    char opt[32];
    snprintf(opt, sizeof opt, "-DWG=%zu", m->wg);
    clg_status st = plan_launch(m, "prologue", opt, name, 1, l);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_fold a = {
        .sb = m->step_block,
        .partials = m->partials,
        .base = region_base(m, region, 0),
        .n = (cl_uint)m->region_size,
        .weight = 0.0f,
    };
    CLG_SET_ARGS(m->ctx, fold, l->kernel, &a);
    return CLG_SUCCESS;
}

static clg_status plan_prologue(clg_model *m, clg_launch *l)
{
    char opt[200];
    prologue_options(m, opt, sizeof opt);
    clg_status st = plan_launch(m, "prologue", opt, "prologue", 1, l);
    if (st != CLG_SUCCESS)
        return st;
    const clg_config *c = &m->cfg;
    /* clang-format off: the config's values, a line per concern */
    const clg_args_prologue a = {
        .sb = m->step_block, .partials = m->partials, .n_main = (cl_uint)m->region_size,
        .weight_sum = 0.0f, /* the call's */
        .lr = c->lr, /* set again at every update (clg_model_set_lr) */
        .warmup = c->schedule.warmup, .total = c->schedule.total,
        .min_lr = c->schedule.min_lr,
        .beta1 = c->beta1, .beta2 = c->beta2, /* bias correction */
        .max_norm = c->clip_norm,
        .growth = c->loss_scale_growth, .backoff = c->loss_scale_backoff,
        .interval = c->loss_scale_interval, .scale_min = c->loss_scale_min,
        .scale_max = c->loss_scale_max,
        .noise_ema = c->noise_scale_ema,
    };
    /* clang-format on */
    CLG_SET_ARGS(m->ctx, prologue, l->kernel, &a);
    return CLG_SUCCESS;
}

static clg_status plan_tensor_sumsq(clg_model *m, const char *opt, size_t ch, clg_launch *l)
{
    if (m->norm_n[ch] == 0)
        return CLG_SUCCESS;
    clg_status st = plan_launch(m, "stats", opt, "tensor_sumsq", m->norm_n[ch], l);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_tensor_sumsq a = {
        .acc = m->acc.chunks[ch],
        .offset4 = m->norm_offsets[ch],
        .count4 = m->norm_counts[ch],
        .out = m->tensor_sumsq,
        .obase = (cl_ulong)m->norm_first[ch],
    };
    CLG_SET_ARGS(m->ctx, tensor_sumsq, l->kernel, &a);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ parts */

static int grads_slot(clg_dtype dtype)
{
    return dtype == CLG_FP32 ? 0 : dtype == CLG_FP16 ? 1 : 2;
}

/* The accumulate launch of chunk ch (argument list "accumulate"): every
 * argument but the call's (g, w, first, seed; pbase with statistics). */
static clg_status plan_accumulate(clg_model *m, clg_dtype g_dtype, bool stats, size_t ch,
                                  clg_launch *l)
{
    char opt[160];
    accumulate_options(m, g_dtype, stats, opt, sizeof opt);
    size_t n4 = m->chunk_elems[ch] / 4;
    clg_status st =
        plan_launch(m, "accumulate", opt, "accumulate",
                    stats ? clg__reduce_groups(m->wg, n4) : clg__stream_groups(m->wg, n4), l);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_accumulate a = {
        .acc = m->acc.chunks[ch],
        .g = NULL,
        .w = 0.0f,
        .first = 0u,
        .n4 = n4,
        .seed = 0u,
        .sb = m->step_block,
        .partials = m->partials,
        .pbase = 0,
    };
    CLG_SET_ARGS(m->ctx, accumulate, l->kernel, &a);
    return CLG_SUCCESS;
}

/* Part `part`'s launch of chunk ch (none where the chunk has no work). */
static clg_status plan_chunk(clg_model *m, clg_plan_part part, clg_dtype g_dtype, size_t ch,
                             clg_launch *l)
{
    char opt[96];
    if (part == CLG_PLAN_CHECK_FINITE)
        check_options(m, g_dtype, opt, sizeof opt);
    else
        stats_options(m, opt, sizeof opt);
    switch (part) {
    case CLG_PLAN_UPDATE: return plan_update(m, ch, false, CLG_FP32, l);
    case CLG_PLAN_UPDATE_FUSED: return plan_update(m, ch, true, g_dtype, l);
    case CLG_PLAN_ACCUMULATE: return plan_accumulate(m, g_dtype, false, ch, l);
    case CLG_PLAN_ACCUMULATE_STATS: return plan_accumulate(m, g_dtype, true, ch, l);
    case CLG_PLAN_CHECK_FINITE:
        return plan_reduce(m, "accumulate", opt, "check_finite", ch, NULL, m->chunk_elems[ch] / 4,
                           CLG_REGION_CHECK, l);
    case CLG_PLAN_ACC_SUMSQ:
        return plan_reduce(m, "stats", opt, "acc_sumsq", ch, m->acc.chunks[ch],
                           m->chunk_elems[ch] / 4, CLG_REGION_MAIN, l);
    case CLG_PLAN_SHARD_SUMSQ:
        /* the shard's part of the chunk (all of it unless sharded), into
         * the main region, as the chunk's first reduce groups */
        if (m->own_n[ch] == 0)
            return CLG_SUCCESS;
        return plan_reduce(m, "stats", opt, "acc_sumsq", ch, clg__shard_mem(m, CLG_ARENA_ACC, ch),
                           m->own_n[ch] / 4, CLG_REGION_MAIN, l);
    case CLG_PLAN_TENSOR_SUMSQ: return plan_tensor_sumsq(m, opt, ch, l);
    default: return CLG_SUCCESS;
    }
}

/* Part `part`: one launch (l[0]) or one per chunk. */
static clg_status plan_part(clg_model *m, clg_plan_part part, clg_dtype g_dtype, clg_launch *l)
{
    switch (part) {
    case CLG_PLAN_PROLOGUE: return plan_prologue(m, l);
    case CLG_PLAN_MICRO_PROLOGUE: return plan_fold(m, "micro_prologue", CLG_REGION_CHECK, l);
    case CLG_PLAN_FOLD_SMALL: return plan_fold(m, "fold_small", CLG_REGION_SMALL, l);
    default: break;
    }
    clg_status st = CLG_SUCCESS;
    for (size_t ch = 0; ch < m->n_chunks && st == CLG_SUCCESS; ch++)
        st = plan_chunk(m, part, g_dtype, ch, &l[ch]);
    return st;
}

clg_status clg__plan_part(clg_model *m, clg_plan_part part, clg_dtype g_dtype,
                          const clg_launch **out)
{
    int slot = part >= CLG_PLAN_ACCUMULATE ? grads_slot(g_dtype) : 0;
    clg_launch **planned = &m->plan->parts[part][slot];
    if (*planned == NULL) {
        clg_launch *l = launches_alloc(m);
        if (l == NULL)
            return out_of_memory(m);
        clg_status st = plan_part(m, part, g_dtype, l);
        if (st != CLG_SUCCESS) {
            launches_free(m, &l);
            return st;
        }
        *planned = l;
    }
    *out = *planned;
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ the plan */

clg_status clg__plan_create(clg_model *m)
{
    m->plan = calloc(1, sizeof *m->plan);
    if (m->plan == NULL)
        return out_of_memory(m);
    const clg_launch *update;
    return clg__plan_part(m, CLG_PLAN_UPDATE, CLG_FP32, &update);
}

void clg__plan_destroy(clg_model *m)
{
    for (int part = 0; m->plan != NULL && part < CLG_PLAN_PARTS; part++)
        for (int slot = 0; slot < CLG_GRAD_DTYPES; slot++)
            launches_free(m, &m->plan->parts[part][slot]);
    free(m->plan);
    m->plan = NULL;
    group_tables_free(m);
}
