/* kernels.c - variant options, the per-model kernel cache and the
 * launchers of accumulate.cl, stats.cl, prologue.cl and update.cl. The
 * launchers fill each kernel's argument struct by field name; the struct,
 * its setter and the kernel's parameter list are all generated from
 * cl/layout.py (clg_layout.h), so the two sides cannot disagree on order or
 * types. */
#include "kernels.h"

#include "clg_layout.h"

#include "config.h"
#include "qstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kernel_entry {
    char key[320];
    cl_kernel kernel;
    struct kernel_entry *next;
} kernel_entry;

struct clg_kernel_set {
    kernel_entry *entries;
};

size_t clg__kernels_wg(clg_context *ctx)
{
    size_t max = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1;
    size_t wg = 1;
    while (wg * 2 <= max && wg * 2 <= 256)
        wg *= 2;
    return wg;
}

void clg__kernels_destroy(clg_model *m)
{
    if (m->kernels == NULL)
        return;
    kernel_entry *e = m->kernels->entries;
    while (e != NULL) {
        kernel_entry *next = e->next;
        clReleaseKernel(e->kernel);
        free(e);
        e = next;
    }
    free(m->kernels);
    m->kernels = NULL;
}

static clg_status get_kernel(clg_model *m, const char *program, const char *options,
                             const char *name, cl_kernel *out)
{
    char key[320];
    snprintf(key, sizeof key, "%s|%s|%s", program, name, options);
    if (m->kernels == NULL) {
        m->kernels = calloc(1, sizeof *m->kernels);
        if (m->kernels == NULL)
            return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "kernel cache: out of memory");
    }
    for (kernel_entry *e = m->kernels->entries; e != NULL; e = e->next) {
        if (strcmp(e->key, key) == 0) {
            *out = e->kernel;
            return CLG_SUCCESS;
        }
    }
    cl_program prog;
    clg_status st = clg__program(m->ctx, program, options, &prog, NULL);
    if (st != CLG_SUCCESS)
        return st;
    kernel_entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "kernel cache: out of memory");
    st = clg__kernel(m->ctx, prog, name, &e->kernel);
    if (st != CLG_SUCCESS) {
        free(e);
        return st;
    }
    memcpy(e->key, key, sizeof key);
    e->next = m->kernels->entries;
    m->kernels->entries = e;
    *out = e->kernel;
    return CLG_SUCCESS;
}

/* A failed clSetKernelArg is a clgrad bug or a lost device, reported with
 * the argument's index and name. */
static clg_status args_failed(clg_model *m, cl_int err, const char *list, const char *arg)
{
    char what[96];
    snprintf(what, sizeof what, "%s: setting kernel argument %s", list, arg ? arg : "?");
    return clg__cl_fail(m->ctx, err, what, "clSetKernelArg");
}

/* Sets every argument of k from *args with the setter of argument list
 * `list` (clg__set_args_<list>), returning from the launcher on failure. */
#define SET_ARGS(list, k, args)                                                \
    do {                                                                       \
        const char *bad_ = NULL;                                               \
        cl_int e_ = clg__set_args_##list((k), (args), &bad_);                  \
        if (e_ != CL_SUCCESS)                                                  \
            return args_failed(m, e_, #list, bad_);                            \
    } while (0)

/* Each launcher below names every field of its struct. A new argument in
 * cl/layout.py changes its count and stops the build here until the
 * launcher sets it: a field left out would silently be zero. */
_Static_assert(CLG_ARGS_ACCUMULATE_COUNT == 9, "accumulate: set the new argument, then count it");
_Static_assert(CLG_ARGS_REDUCE_COUNT == 4, "reduce: set the new argument, then count it");
_Static_assert(CLG_ARGS_TENSOR_SUMSQ_COUNT == 5, "tensor_sumsq: set the new argument, then count it");
_Static_assert(CLG_ARGS_FOLD_COUNT == 5, "fold: set the new argument, then count it");
_Static_assert(CLG_ARGS_PROLOGUE_COUNT == 17, "prologue: set the new argument, then count it");
_Static_assert(CLG_ARGS_UPDATE_COUNT == 23 + 0, "update: set the new argument, then count it");

static size_t n4_of(size_t elems) { return elems / 4; }

/* Enqueues `groups` work-groups of m->wg work-items and counts the launch. */
static clg_status launch(clg_model *m, cl_kernel k, size_t groups, const char *what)
{
    clg_status st = clg__launch(m->ctx, k, groups * m->wg, m->wg, what);
    if (st == CLG_SUCCESS)
        m->launched++;
    return st;
}

/* Work-groups for n4 float4s, one float4 per work-item. Streaming kernels
 * have no loop: a grid-stride loop keeps PoCL from vectorizing across
 * work-items (measured: 14x slower updates at N = 2^24). The partition of a
 * chunk into groups, hence every partial of a reduction and the rounding of
 * the norm, depends only on the layout and the work-group size: bitwise
 * reproducible. */
static size_t groups_for(const clg_model *m, size_t n4)
{
    size_t g = (n4 + m->wg - 1) / m->wg;
    return g < 1 ? 1 : g;
}

/* Reduction passes give each work-item REDUCE_ITEMS float4s (ITEMS in
 * common.cl), so that the work-group tree is amortized: measured on PoCL,
 * the norm pass at N = 2^24 went from 11 ms to 4.7 ms. */
#define REDUCE_ITEMS 8

size_t clg__kernels_reduce_groups(const clg_model *m, size_t n4)
{
    size_t per_group = m->wg * REDUCE_ITEMS;
    size_t g = (n4 + per_group - 1) / per_group;
    return g < 1 ? 1 : g;
}

static size_t region_base(const clg_model *m, int region, size_t chunk)
{
    return (size_t)region * m->region_size + m->chunk_pbase[chunk];
}

clg_status clg__launch_accumulate(clg_model *m, const clg_grads *g, float w, bool first,
                                  int region, bool skip_micro)
{
    char opt[160];
    snprintf(opt, sizeof opt,
             "-DG_DTYPE=%d -DACC_DTYPE=%d -DSTATS=%d -DSKIP_MICRO=%d -DWG=%zu -DITEMS=%d",
             (int)g->dtype, (int)m->acc.dtype, region >= 0, (int)skip_micro, m->wg, REDUCE_ITEMS);
    cl_kernel k;
    clg_status st = get_kernel(m, "accumulate", opt, "accumulate", &k);
    if (st != CLG_SUCCESS)
        return st;
    /* the stochastic-rounding stream changes with every micro-step */
    cl_uint seed = (cl_uint)(m->cfg.seed * 0x9E3779B97F4A7C15ull >> 32) ^
                   (cl_uint)(m->micro_total * 0x85EBCA6Bu);
    for (size_t c = 0; c < m->n_chunks; c++) {
        size_t n4 = n4_of(m->chunk_elems[c]);
        const clg_args_accumulate a = {
            .acc = m->acc.chunks[c],
            .g = g->arena.chunks[c],
            .w = w,
            .first = first ? 1u : 0u,
            .n4 = n4,
            .seed = seed,
            .sb = m->step_block,
            .partials = m->partials,
            .pbase = region >= 0 ? region_base(m, region, c) : 0,
        };
        SET_ARGS(accumulate, k, &a);
        st = launch(m, k, region >= 0 ? clg__kernels_reduce_groups(m, n4) : groups_for(m, n4),
                    "accumulate");
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

/* A reduction pass (a kernel with argument list "reduce") over every
 * chunk of arena `arena`, into partials region `region`. */
static clg_status reduce_arena(clg_model *m, cl_kernel k, const clg_arena *arena, int region,
                               const char *what)
{
    for (size_t c = 0; c < m->n_chunks; c++) {
        size_t n4 = n4_of(m->chunk_elems[c]);
        const clg_args_reduce a = {
            .src = arena->chunks[c],
            .n4 = n4,
            .partials = m->partials,
            .pbase = region_base(m, region, c),
        };
        SET_ARGS(reduce, k, &a);
        clg_status st = launch(m, k, clg__kernels_reduce_groups(m, n4), what);
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

/* A one-group kernel of prologue.cl that folds a partials region into the
 * step block (argument list "fold"). */
static clg_status fold_region(clg_model *m, const char *name, int region, float weight)
{
    char opt[32];
    snprintf(opt, sizeof opt, "-DWG=%zu", m->wg);
    cl_kernel k;
    clg_status st = get_kernel(m, "prologue", opt, name, &k);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_fold a = {
        .sb = m->step_block,
        .partials = m->partials,
        .base = region_base(m, region, 0),
        .n = (cl_uint)m->region_size,
        .weight = weight,
    };
    SET_ARGS(fold, k, &a);
    return launch(m, k, 1, name);
}

clg_status clg__launch_check_micro(clg_model *m, const clg_grads *g, float w)
{
    char opt[96];
    snprintf(opt, sizeof opt, "-DG_DTYPE=%d -DACC_DTYPE=%d -DWG=%zu -DITEMS=%d", (int)g->dtype,
             (int)m->acc.dtype, m->wg, REDUCE_ITEMS);
    cl_kernel k;
    clg_status st = get_kernel(m, "accumulate", opt, "check_finite", &k);
    if (st == CLG_SUCCESS)
        st = reduce_arena(m, k, &g->arena, CLG_REGION_CHECK, "check_finite");
    return st == CLG_SUCCESS ? fold_region(m, "micro_prologue", CLG_REGION_CHECK, w) : st;
}

clg_status clg__launch_fold_small(clg_model *m, float weight)
{
    return fold_region(m, "fold_small", CLG_REGION_SMALL, weight);
}

/* A kernel of stats.cl, built for the model's accumulator. */
static clg_status stats_kernel(clg_model *m, const char *name, cl_kernel *k)
{
    char opt[64];
    snprintf(opt, sizeof opt, "-DACC_DTYPE=%d -DWG=%zu -DITEMS=%d", (int)m->acc.dtype, m->wg,
             REDUCE_ITEMS);
    return get_kernel(m, "stats", opt, name, k);
}

/* The norm pass over the shard's part of every chunk only (sharded
 * models: clg_shard_sumsq), into the main region; the partials of a chunk
 * are its first reduce groups of the shard's count. */
clg_status clg__launch_shard_sumsq(clg_model *m)
{
    cl_kernel k;
    clg_status st = stats_kernel(m, "acc_sumsq", &k);
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        if (m->own_n[c] == 0)
            continue;
        size_t n4 = n4_of(m->own_n[c]);
        const clg_args_reduce a = {
            .src = clg__shard_mem(m, CLG_ARENA_ACC, c),
            .n4 = n4,
            .partials = m->partials,
            .pbase = region_base(m, CLG_REGION_MAIN, c),
        };
        SET_ARGS(reduce, k, &a);
        st = launch(m, k, clg__kernels_reduce_groups(m, n4), "acc_sumsq");
    }
    return st;
}

clg_status clg__launch_acc_sumsq(clg_model *m, int region)
{
    cl_kernel k;
    clg_status st = stats_kernel(m, "acc_sumsq", &k);
    return st == CLG_SUCCESS ? reduce_arena(m, k, &m->acc, region, "acc_sumsq") : st;
}

clg_status clg__launch_tensor_sumsq(clg_model *m)
{
    cl_kernel k;
    clg_status st = stats_kernel(m, "tensor_sumsq", &k);
    if (st != CLG_SUCCESS)
        return st;
    for (size_t c = 0; c < m->n_chunks; c++) {
        if (m->norm_n[c] == 0)
            continue;
        const clg_args_tensor_sumsq a = {
            .acc = m->acc.chunks[c],
            .offset4 = m->norm_offsets[c],
            .count4 = m->norm_counts[c],
            .out = m->tensor_sumsq,
            .obase = (cl_ulong)m->norm_first[c],
        };
        SET_ARGS(tensor_sumsq, k, &a);
        st = launch(m, k, m->norm_n[c], "tensor_sumsq");
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

static int policy_of(const clg_config *c) { return (int)c->nonfinite; }

clg_status clg__launch_prologue(clg_model *m, bool stats, float weight_sum)
{
    const clg_config *c = &m->cfg;
    char opt[200];
    snprintf(opt, sizeof opt,
             "-DSTATS=%d -DCLIP=%d -DPOLICY=%d -DLOSS_SCALE=%d -DMEAN=%d -DSCHED=%d -DNOISE=%d "
             "-DWG=%zu",
             (int)stats, c->clip_norm > 0.0f, policy_of(c), (int)c->loss_scale,
             c->normalize == CLG_NORM_MEAN, (int)c->schedule.kind, c->noise_scale != 0, m->wg);
    cl_kernel k;
    clg_status st = get_kernel(m, "prologue", opt, "prologue", &k);
    if (st != CLG_SUCCESS)
        return st;
    const clg_args_prologue a = {
        .sb = m->step_block,
        .partials = m->partials,
        .n_main = (cl_uint)m->region_size,
        .weight_sum = weight_sum,
        .lr = c->lr,
        .warmup = c->schedule.warmup,
        .total = c->schedule.total,
        .min_lr = c->schedule.min_lr,
        .beta1 = c->beta1,
        .beta2 = c->beta2,
        .max_norm = c->clip_norm,
        .growth = c->loss_scale_growth,
        .backoff = c->loss_scale_backoff,
        .interval = c->loss_scale_interval,
        .scale_min = c->loss_scale_min,
        .scale_max = c->loss_scale_max,
        .noise_ema = c->noise_scale_ema,
    };
    SET_ARGS(prologue, k, &a);
    return launch(m, k, 1, "prologue");
}

/* state_dtype: the format of the chunk's states (fp32 in the chunks of
 * small tensors of a Q8/Q4 model). */
static void update_options(const clg_model *m, bool path_c, clg_dtype g_dtype,
                           bool single_group, clg_dtype state_dtype, char *opt, size_t size)
{
    const clg_config *c = &m->cfg;
    snprintf(opt, size,
             "-DOPT=%d -DMOMENTUM=%d -DNESTEROV=%d -DAMSGRAD=%d -DMAXIMIZE=%d -DPATH_C=%d "
             "-DG_DTYPE=%d -DACC_DTYPE=%d -DCOPY_DTYPE=%d -DCLIP_VALUE=%d -DSINGLE_GROUP=%d "
             "-DSTATE_DTYPE=%d -DSTATE_SR=%d -DMASTER_DTYPE=%d -DWG=%zu",
             (int)c->optimizer, c->momentum != 0.0f, c->nesterov != 0, c->amsgrad != 0,
             c->maximize != 0, (int)path_c, (int)g_dtype, (int)m->acc.dtype,
             (int)c->param_copy_dtype, c->clip_value > 0.0f, (int)single_group, (int)state_dtype,
             state_dtype != CLG_FP32 && c->state_rounding == CLG_ROUND_STOCHASTIC,
             (int)c->master_dtype, m->wg);
}

/* The stochastic-rounding stream of one chunk's update: new with every
 * cycle (restored by checkpoints), distinct per chunk. */
static cl_uint update_seed(const clg_model *m, size_t chunk)
{
    return (cl_uint)(m->cfg.seed * 0x9E3779B97F4A7C15ull >> 32) ^
           (cl_uint)(m->cycles * 0xC2B2AE35u) ^ (cl_uint)((chunk + 1) * 0x27D4EB2Fu);
}

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

/* The program and global size of chunk ch's update (over the elements
 * the states cover: the shard's part of the chunk, or all of it). */
static const char *update_program(const clg_model *m, size_t ch, size_t *global, size_t *local)
{
    clg_dtype fmt = clg__state_format(m, 0, ch);
    size_t elems = clg__state_elems(m, ch);
    if (clg__dtype_quantized(fmt)) {
        size_t blocks = elems / clg__qblock(fmt);
        *local = q_local(m);
        *global = (blocks + *local - 1) / *local * *local;
        return "update_q";
    }
    *local = m->wg;
    *global = groups_for(m, n4_of(elems)) * m->wg;
    return "update";
}

clg_status clg__launch_update(clg_model *m, const clg_grads *last, float w_last,
                              bool acc_empty)
{
    const clg_config *c = &m->cfg;
    for (size_t ch = 0; ch < m->n_chunks; ch++) {
        if (clg__state_elems(m, ch) == 0)
            continue; /* another shard's */
        bool single = m->chunk_segs[ch] == 1;
        char opt[260];
        update_options(m, last != NULL, last ? last->dtype : CLG_FP32, single,
                       clg__state_format(m, 0, ch), opt, sizeof opt);
        size_t global, local;
        const char *program = update_program(m, ch, &global, &local);
        cl_kernel k;
        clg_status st = get_kernel(m, program, opt, program, &k);
        if (st != CLG_SUCCESS)
            return st;
        /* a single-group chunk: its group's values as arguments */
        const clg_group_slot *grp = &m->groups[m->segments[m->chunk_first_seg[ch]].group];
        const clg_args_update a = {
            .p = clg__shard_mem(m, CLG_ARENA_PARAMS, ch),
            .acc = clg__shard_mem(m, CLG_ARENA_ACC, ch),
            .g = last ? last->arena.chunks[ch] : NULL,
            .w_last = w_last,
            .acc_empty = acc_empty ? 1u : 0u,
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
            .seed = update_seed(m, ch),
            .n4 = n4_of(clg__state_elems(m, ch)),
        };
        SET_ARGS(update, k, &a);
        st = clg__launch(m->ctx, k, global, local, program);
        if (st == CLG_SUCCESS)
            m->launched++;
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

/* Rows of chunk ch's group table: one per work-group of its update launch
 * (over the shard's part of the chunk; 0 when it has none). */
static size_t group_rows(const clg_model *m, size_t ch)
{
    size_t elems = clg__state_elems(m, ch);
    return elems ? groups_for(m, n4_of(elems)) : 0;
}

/* For every chunk with several param groups, (lr_mult, weight decay) per
 * work-group of its update launch: segments are whole work-groups. A
 * shard's table is its rows of the chunk's. */
clg_status clg__kernels_group_params(clg_model *m)
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
        if (m->chunk_segs[ch] < 2 || group_rows(m, ch) == 0)
            continue;
        size_t groups = groups_for(m, n4_of(m->chunk_elems[ch]));
        cl_float2 *rows = calloc(groups, sizeof *rows);
        if (rows == NULL)
            return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                             "clg_model_finalize: out of memory");
        size_t per_group = m->wg * 4;
        for (size_t s = m->chunk_first_seg[ch]; s < m->n_segments && m->segments[s].chunk == ch;
             s++) {
            const clg_segment *seg = &m->segments[s];
            const clg_group_slot *grp = &m->groups[seg->group];
            for (size_t gi = seg->offset / per_group; gi < (seg->offset + seg->count) / per_group;
                 gi++)
                rows[gi] = (cl_float2){{grp->lr_mult, grp->weight_decay}};
        }
        size_t n = group_rows(m, ch), row0 = m->own_lo[ch] / per_group;
        st = clg__buffer_create(m->ctx, n * sizeof *rows, &m->group_params[ch]);
        if (st == CLG_SUCCESS) {
            cl_int err = clEnqueueWriteBuffer(m->ctx->queue, m->group_params[ch], CL_TRUE, 0,
                                              n * sizeof *rows, rows + row0, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                st = clg__cl_fail(m->ctx, err, "clg_model_finalize", "clEnqueueWriteBuffer");
        }
        free(rows);
    }
    return st;
}

uint64_t clg__kernels_group_params_bytes(const clg_model *m)
{
    uint64_t bytes = 0;
    for (size_t ch = 0; m->group_params != NULL && ch < m->n_chunks; ch++)
        if (m->group_params[ch] != NULL)
            bytes += group_rows(m, ch) * sizeof(cl_float2);
    return bytes;
}

void clg__kernels_free_group_params(clg_model *m)
{
    for (size_t ch = 0; m->group_params != NULL && ch < m->n_chunks; ch++)
        if (m->group_params[ch] != NULL)
            clg__buffer_release(m->ctx, m->group_params[ch], group_rows(m, ch) * sizeof(cl_float2));
    free(m->group_params);
    free(m->chunk_segs);
    free(m->chunk_first_seg);
    m->group_params = NULL;
    m->chunk_segs = NULL;
    m->chunk_first_seg = NULL;
}

clg_status clg__kernels_create(clg_model *m)
{
    /* Build the update variants now: the most complex program, and the one
     * every update needs, so a build failure shows at finalize. A model of
     * Q8/Q4 states has two: its quantized chunks and its small tensors'. */
    clg_status st = CLG_SUCCESS;
    for (size_t ch = 0; ch < m->n_chunks && st == CLG_SUCCESS; ch++) {
        if (ch > 0 && clg__state_format(m, 0, ch) == clg__state_format(m, 0, ch - 1))
            continue;
        char opt[260];
        update_options(m, false, CLG_FP32, m->chunk_segs[ch] == 1, clg__state_format(m, 0, ch),
                       opt, sizeof opt);
        size_t global, local;
        const char *program = update_program(m, ch, &global, &local);
        cl_kernel k;
        st = get_kernel(m, program, opt, program, &k);
    }
    return st;
}
