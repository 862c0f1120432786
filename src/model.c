/* model.c - building a model (groups, tensors, finalize), its views, and
 * host <-> device copies of its arenas. */
#include "arena.h"
#include "ckpt_ext.h"
#include "config.h"
#include "plan.h"
#include "model.h"
#include "qstate.h"
#include "sized.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

clg_status clg_model_create(clg_context *ctx, const clg_config *config, clg_model **out)
{
    if (ctx == NULL || config == NULL || out == NULL)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "clg_model_create: NULL argument");
    clg_config full;
    clg_status st = clg__config_import(ctx, config, &full, "clg_model_create");
    if (st == CLG_SUCCESS)
        st = clg__config_check(ctx, &full, "clg_model_create");
    if (st != CLG_SUCCESS)
        return st;
    clg_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_create: out of memory");
    m->ctx = ctx;
    m->cfg = full;
    /* GradScaler always skips an update whose gradients overflowed. */
    if (m->cfg.loss_scale == CLG_LOSS_SCALE_DYNAMIC && m->cfg.nonfinite == CLG_NONFINITE_IGNORE)
        m->cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    m->n_states = clg__state_count(&m->cfg);
    m->qstates = clg__qstate_split(&m->cfg);
    m->n_qstates = clg__qstate_count(&m->cfg);
    if (clg__dtype_quantized(m->cfg.state_dtype)) {
        clg__qmap_fill(m->cfg.state_dtype, true, m->qmap[0]);
        clg__qmap_fill(m->cfg.state_dtype, false, m->qmap[1]);
    }
    int group;
    st = clg_model_add_group(m, "default", 1.0f, -1.0f, &group);
    if (st != CLG_SUCCESS) {
        free(m);
        return st;
    }
    *out = m;
    return CLG_SUCCESS;
}

static void free_norm_tables(clg_model *m)
{
    for (size_t c = 0; c < m->n_chunks; c++) {
        if (m->norm_offsets != NULL && m->norm_offsets[c] != NULL)
            clg__buffer_release(m->ctx, m->norm_offsets[c], 8 * m->norm_n[c]);
        if (m->norm_counts != NULL && m->norm_counts[c] != NULL)
            clg__buffer_release(m->ctx, m->norm_counts[c], 8 * m->norm_n[c]);
    }
    free(m->norm_offsets);
    free(m->norm_counts);
    free(m->norm_first);
    free(m->norm_n);
    free(m->norm_index);
    m->norm_offsets = m->norm_counts = NULL;
    m->norm_first = m->norm_n = m->norm_index = NULL;
    if (m->tensor_sumsq != NULL)
        clg__buffer_release(m->ctx, m->tensor_sumsq, 4 * (uint64_t)m->n_tensors);
    m->tensor_sumsq = NULL;
}

/* Everything finalize allocates; safe on a half-built model. */
static void release_device(clg_model *m)
{
    if (m->sb_event != NULL) {
        clWaitForEvents(1, &m->sb_event);
        clReleaseEvent(m->sb_event);
        m->sb_event = NULL;
    }
    clg__plan_destroy(m);
    clg__shard_free(m);
    free_norm_tables(m);
    clg__arena_free(m, &m->params);
    clg__arena_free(m, &m->acc);
    clg__arena_free(m, &m->copy);
    clg__qstate_free(m);
    if (m->step_block != NULL)
        clg__buffer_release(m->ctx, m->step_block, 4 * CLG_SB_WORDS);
    if (m->partials != NULL)
        clg__buffer_release(m->ctx, m->partials, 4 * (uint64_t)m->n_partials);
    m->step_block = m->partials = NULL;
    free(m->chunk_elems);
    free(m->chunk_small);
    free(m->segments);
    free(m->chunk_pbase);
    m->chunk_pbase = m->chunk_elems = NULL;
    m->chunk_small = NULL;
    m->segments = NULL;
    m->n_chunks = m->n_segments = 0;
}

void clg_model_destroy(clg_model *m)
{
    if (m == NULL)
        return;
    clg__ckpt_ext_detach_all(m); /* attached banks forget the model */
    release_device(m);
    for (size_t g = 0; g < m->n_groups; g++)
        free(m->groups[g].name);
    for (size_t t = 0; t < m->n_tensors; t++)
        free(m->tensors[t].name);
    free(m->groups);
    free(m->tensors);
    free(m);
}

/* The first checks of clg_model_add_group and clg_model_add_tensor: no
 * NULL argument (args_ok), and a model still being built. */
static clg_status check_adding(const clg_model *m, bool args_ok, const char *who,
                               const char *what)
{
    if (m == NULL || !args_ok)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL argument", who);
    if (m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model is finalized; add %s before", who,
                         what);
    return CLG_SUCCESS;
}

clg_status clg__lr_mult_check(clg_context *ctx, float lr_mult, const char *group, const char *who)
{
    if (!(isfinite(lr_mult) && lr_mult >= 0.0f))
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: lr_mult %g of group '%s' must be finite and >= 0", who,
                         (double)lr_mult, group);
    return CLG_SUCCESS;
}

clg_status clg_model_add_group(clg_model *m, const char *name, float lr_mult, float weight_decay,
                               int *group)
{
    clg_status st = check_adding(m, name != NULL && group != NULL, "clg_model_add_group", "groups");
    if (st == CLG_SUCCESS)
        st = clg__lr_mult_check(m->ctx, lr_mult, name, "clg_model_add_group");
    if (st != CLG_SUCCESS)
        return st;
    if (!isfinite(weight_decay))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_add_group: weight_decay %g of group '%s' must be finite",
                         (double)weight_decay, name);
    clg_group_slot *g = realloc(m->groups, (m->n_groups + 1) * sizeof *g);
    m->groups = g != NULL ? g : m->groups;
    char *copy = g != NULL ? dup_str(name) : NULL;
    if (copy == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_add_group: out of memory");
    g[m->n_groups] = (clg_group_slot){copy, lr_mult,
                                      weight_decay < 0.0f ? m->cfg.weight_decay : weight_decay};
    *group = (int)m->n_groups++;
    return CLG_SUCCESS;
}

clg_status clg_model_add_tensor(clg_model *m, const char *name, size_t count, int group,
                                int *tensor)
{
    clg_status st =
        check_adding(m, name != NULL && tensor != NULL, "clg_model_add_tensor", "tensors");
    if (st != CLG_SUCCESS)
        return st;
    if (name[0] == '\0' || strlen(name) > 255)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_add_tensor: tensor name must have 1 to 255 characters");
    if (count == 0)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_add_tensor: tensor '%s' has 0 elements", name);
    if (group < 0 || (size_t)group >= m->n_groups)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_add_tensor: tensor '%s': no group %d (the model has %zu)",
                         name, group, m->n_groups);
    for (size_t t = 0; t < m->n_tensors; t++)
        if (strcmp(m->tensors[t].name, name) == 0)
            return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                             "clg_model_add_tensor: a tensor named '%s' exists already", name);
    clg_tensor_slot *ts = realloc(m->tensors, (m->n_tensors + 1) * sizeof *ts);
    m->tensors = ts != NULL ? ts : m->tensors;
    char *copy = ts != NULL ? dup_str(name) : NULL;
    if (copy == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_add_tensor: out of memory");
    ts[m->n_tensors] = (clg_tensor_slot){.name = copy, .count = count, .ndim = 1,
                                         .dims = {count}, .group = group};
    *tensor = (int)m->n_tensors++;
    return CLG_SUCCESS;
}

clg_status clg_model_set_tensor_shape(clg_model *m, int t, size_t ndim, const size_t *dims)
{
    const char *who = "clg_model_set_tensor_shape";
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model is finalized; set shapes before", who);
    if (t < 0 || (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: no tensor %d (the model has %zu)",
                         who, t, m->n_tensors);
    clg_tensor_slot *ts = &m->tensors[t];
    if (ndim < 1 || ndim > CLG_MAX_DIMS || dims == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: tensor '%s': %s (ndim %zu, must be 1..%d)", who, ts->name,
                         dims == NULL ? "NULL dims" : "bad ndim", ndim, CLG_MAX_DIMS);
    size_t product = 1;
    for (size_t d = 0; d < ndim; d++) {
        if (dims[d] == 0 || product > SIZE_MAX / dims[d])
            return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                             "%s: tensor '%s': dim %zu is %zu%s", who, ts->name, d, dims[d],
                             dims[d] == 0 ? " (must be >= 1)" : " (the product overflows)");
        product *= dims[d];
    }
    if (product != ts->count)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: tensor '%s': the shape holds %zu elements, the tensor %zu", who,
                         ts->name, product, ts->count);
    ts->ndim = ndim;
    memcpy(ts->dims, dims, ndim * sizeof *dims);
    return CLG_SUCCESS;
}

clg_status clg_model_tensor_shape(const clg_model *m, int t, size_t *ndim, size_t *dims)
{
    const char *who = "clg_model_tensor_shape";
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (t < 0 || (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: no tensor %d (the model has %zu)",
                         who, t, m->n_tensors);
    if (ndim == NULL || dims == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL %s", who,
                         ndim == NULL ? "ndim" : "dims");
    const clg_tensor_slot *ts = &m->tensors[t];
    *ndim = ts->ndim;
    memcpy(dims, ts->dims, ts->ndim * sizeof *dims);
    return CLG_SUCCESS;
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void initial_step_block(const clg_model *m, uint32_t *sb)
{
    memset(sb, 0, 4 * CLG_SB_WORDS);
    sb[CLG_SB_GRAD_SCALE] = f2u(1.0f);
    sb[CLG_SB_LR] = f2u(m->cfg.lr);
    sb[CLG_SB_BC1] = f2u(1.0f);
    sb[CLG_SB_BC2_SQRT] = f2u(1.0f);
    sb[CLG_SB_LOSS_SCALE] =
        f2u(m->cfg.loss_scale != CLG_LOSS_SCALE_NONE ? m->cfg.loss_scale_init : 1.0f);
    sb[CLG_SB_GRAD_NORM] = f2u(NAN);
    sb[CLG_SB_CLIP_COEF] = f2u(1.0f);
    sb[CLG_SB_NOISE_G2] = f2u(NAN);
    sb[CLG_SB_NOISE_TR] = f2u(NAN);
    sb[CLG_SB_NOISE_SCALE] = f2u(NAN);
}

static clg_status write_blocking(clg_model *m, cl_mem mem, size_t offset, size_t bytes,
                                 const void *host, const char *what)
{
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, what, "clEnqueueWriteBuffer");
    cl_int err = clEnqueueWriteBuffer(m->ctx->queue, mem, CL_TRUE, offset, bytes, host, 0, NULL,
                                      NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, what, "clEnqueueWriteBuffer");
}

static clg_status read_blocking(clg_model *m, cl_mem mem, size_t offset, size_t bytes, void *host,
                                const char *what)
{
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, what, "clEnqueueReadBuffer");
    cl_int err = clEnqueueReadBuffer(m->ctx->queue, mem, CL_TRUE, offset, bytes, host, 0, NULL,
                                     NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, what, "clEnqueueReadBuffer");
}

/* Tables for the per-tensor norm kernel: per chunk, its tensors' offsets
 * and counts in float4 units. */
static clg_status build_norm_tables(clg_model *m)
{
    size_t nc = m->n_chunks;
    m->norm_offsets = calloc(nc, sizeof(cl_mem));
    m->norm_counts = calloc(nc, sizeof(cl_mem));
    m->norm_first = calloc(nc, sizeof(size_t));
    m->norm_n = calloc(nc, sizeof(size_t));
    m->norm_index = calloc(m->n_tensors, sizeof(size_t));
    cl_ulong *off = calloc(m->n_tensors, sizeof(cl_ulong));
    cl_ulong *cnt = calloc(m->n_tensors, sizeof(cl_ulong));
    clg_status st = CLG_SUCCESS;
    if (!m->norm_offsets || !m->norm_counts || !m->norm_first || !m->norm_n || !m->norm_index ||
        !off || !cnt) {
        st = clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
        goto done;
    }
    st = clg__buffer_create(m->ctx, 4 * (uint64_t)m->n_tensors, &m->tensor_sumsq);
    size_t k = 0;
    for (size_t c = 0; c < nc && st == CLG_SUCCESS; c++) {
        m->norm_first[c] = k;
        for (size_t t = 0; t < m->n_tensors; t++) {
            if (m->tensors[t].chunk != c)
                continue;
            m->norm_index[t] = k;
            off[k] = m->tensors[t].offset / 4;
            cnt[k] = (m->tensors[t].count + CLG_TENSOR_ALIGN - 1) / CLG_TENSOR_ALIGN *
                     CLG_TENSOR_ALIGN / 4;
            k++;
        }
        m->norm_n[c] = k - m->norm_first[c];
        size_t bytes = 8 * m->norm_n[c];
        st = clg__buffer_create(m->ctx, bytes, &m->norm_offsets[c]);
        if (st == CLG_SUCCESS)
            st = clg__buffer_create(m->ctx, bytes, &m->norm_counts[c]);
        if (st == CLG_SUCCESS)
            st = write_blocking(m, m->norm_offsets[c], 0, bytes, off + m->norm_first[c],
                                "clg_model_finalize");
        if (st == CLG_SUCCESS)
            st = write_blocking(m, m->norm_counts[c], 0, bytes, cnt + m->norm_first[c],
                                "clg_model_finalize");
    }
done:
    free(off);
    free(cnt);
    return st;
}

/* Refuses a model of need device bytes (n parameters) that does not fit
 * beside what clgrad holds already: above the device's global memory,
 * unless the config allows it (a device that pages), or above the budget.
 * Checked before the first allocation, so that a refusal names the whole
 * model and leaves nothing allocated: where device memory is host memory
 * (PoCL), allocating past it gets the process killed by the kernel's OOM
 * killer, with no error to return. */
static clg_status check_room(clg_model *m, uint64_t need, uint64_t n)
{
    uint64_t in_use = clg_context_device_bytes(m->ctx);
    char what[256];
    snprintf(what, sizeof what,
             "clg_model_finalize: the model needs %llu bytes on the device (%llu parameters: "
             "params, accumulators, %zu optimizer states), %llu are in use",
             (unsigned long long)need, (unsigned long long)n, m->n_states,
             (unsigned long long)in_use);
    uint64_t device = m->ctx->info.global_mem_size; /* 0: not reported */
    bool over = need > device || in_use > device - need;
    if (device != 0 && over && !m->cfg.allow_over_device_memory)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_DEVICE_MEMORY,
                         "%s, more than the device's %llu bytes of global memory; make the model "
                         "smaller, or set clg_config.allow_over_device_memory for a device that "
                         "pages",
                         what, (unsigned long long)device);
    uint64_t budget = clg_context_budget(m->ctx);
    if (budget != 0 && in_use + need > budget)
        return clg__fail(m->ctx, CLG_ERR_OVER_BUDGET, "%s and the budget is %llu", what,
                         (unsigned long long)budget);
    return CLG_SUCCESS;
}

clg_status clg_model_finalize(clg_model *m)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_model_finalize: NULL model");
    if (m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "clg_model_finalize: already finalized");
    if (m->n_tensors == 0)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "clg_model_finalize: no tensors");

    /* Check the room for the whole model first (check_room), so that a
     * model too big fails with its full size rather than at some arena. */
    clg_status st = clg__layout(m);
    if (st == CLG_SUCCESS)
        st = clg__shard_layout(m); /* the states' size depends on it */
    if (st != CLG_SUCCESS)
        goto fail;
    m->wg = clg__work_group_size(m->ctx);
    m->chunk_pbase = calloc(m->n_chunks, sizeof *m->chunk_pbase);
    if (m->chunk_pbase == NULL) {
        st = clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
        goto fail;
    }
    m->region_size = 0;
    for (size_t c = 0; c < m->n_chunks; c++) {
        m->chunk_pbase[c] = m->region_size;
        m->region_size += clg__reduce_groups(m->wg, m->chunk_elems[c] / 4);
    }
    m->n_partials = CLG_REGIONS * m->region_size;
    uint64_t n = clg__arena_bytes(m, 1), states, scales;
    clg__qstate_bytes(m, &states, &scales);
    uint64_t need = n * (clg__dtype_size(m->cfg.master_dtype) + clg__dtype_size(m->cfg.acc_dtype) +
                         clg__dtype_size(m->cfg.param_copy_dtype)) +
                    states + scales + 4 * CLG_SB_WORDS + 4 * (uint64_t)m->n_partials;
    st = check_room(m, need, n);
    if (st != CLG_SUCCESS)
        goto fail;
    st = clg__arena_alloc(m, &m->params, m->cfg.master_dtype,
                          clg__dtype_size(m->cfg.master_dtype));
    if (st == CLG_SUCCESS)
        st = clg__arena_alloc(m, &m->acc, m->cfg.acc_dtype, clg__dtype_size(m->cfg.acc_dtype));
    if (st == CLG_SUCCESS)
        st = clg__qstate_alloc(m);
    if (st == CLG_SUCCESS && m->cfg.param_copy_dtype != CLG_DTYPE_NONE)
        st = clg__arena_alloc(m, &m->copy, m->cfg.param_copy_dtype,
                              clg__dtype_size(m->cfg.param_copy_dtype));
    if (st == CLG_SUCCESS)
        st = clg__shard_buffers(m);
    if (st == CLG_SUCCESS)
        st = clg__buffer_create(m->ctx, 4 * CLG_SB_WORDS, &m->step_block);
    if (st == CLG_SUCCESS)
        st = clg__buffer_create(m->ctx, 4 * (uint64_t)m->n_partials, &m->partials);
    if (st == CLG_SUCCESS)
        st = clg__plan_tables(m);
    if (st == CLG_SUCCESS && m->cfg.tensor_norms)
        st = build_norm_tables(m);
    if (st == CLG_SUCCESS) {
        uint32_t sb[CLG_SB_WORDS];
        initial_step_block(m, sb);
        st = write_blocking(m, m->step_block, 0, sizeof sb, sb, "clg_model_finalize");
        memcpy(m->sb_host, sb, sizeof sb);
    }
    if (st == CLG_SUCCESS)
        st = clg__plan_create(m);
    if (st != CLG_SUCCESS)
        goto fail;
    m->finalized = true;
    return CLG_SUCCESS;
fail:
    release_device(m);
    return st;
}

/* ------------------------------------------------------------ accessors */

size_t clg_model_tensor_count(const clg_model *m) { return m ? m->n_tensors : 0; }

uint64_t clg_model_param_count(const clg_model *m)
{
    uint64_t n = 0;
    for (size_t t = 0; m != NULL && t < m->n_tensors; t++)
        n += m->tensors[t].count;
    return n;
}

clg_status clg_model_find_tensor(const clg_model *m, const char *name, int *tensor)
{
    if (m == NULL || name == NULL || tensor == NULL)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_find_tensor: NULL argument");
    for (size_t t = 0; t < m->n_tensors; t++) {
        if (strcmp(m->tensors[t].name, name) == 0) {
            *tensor = (int)t;
            return CLG_SUCCESS;
        }
    }
    return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "clg_model_find_tensor: no tensor '%s'",
                     name);
}

const char *clg_model_tensor_name(const clg_model *m, int t)
{
    return m != NULL && t >= 0 && (size_t)t < m->n_tensors ? m->tensors[t].name : NULL;
}

size_t clg_model_tensor_size(const clg_model *m, int t)
{
    return m != NULL && t >= 0 && (size_t)t < m->n_tensors ? m->tensors[t].count : 0;
}

clg_context *clg_model_context(const clg_model *m) { return m ? m->ctx : NULL; }
const clg_config *clg_model_get_config(const clg_model *m)
{
    return m ? &m->cfg : NULL;
}
size_t clg_model_state_count(const clg_model *m) { return m ? m->n_states : 0; }

/* The per-tensor norm buffers of build_norm_tables. */
static uint64_t norm_table_bytes(const clg_model *m)
{
    if (m->tensor_sumsq == NULL)
        return 0;
    uint64_t bytes = 4 * (uint64_t)m->n_tensors;
    for (size_t c = 0; c < m->n_chunks; c++)
        bytes += 2 * 8 * (uint64_t)m->norm_n[c];
    return bytes;
}

clg_status clg_model_memory(const clg_model *m, clg_model_plan *user_plan)
{
    if (m == NULL || user_plan == NULL)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_memory: NULL %s", m == NULL ? "model" : "plan");
    clg_status st = clg__sized_check(m->ctx, user_plan->struct_size, CLG__PLAN_SIZE_MIN,
                                     "clg_model_plan", "clg_model_memory");
    if (st != CLG_SUCCESS)
        return st;
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "clg_model_memory: model not finalized");
    clg_model_plan plan = {.struct_size = sizeof plan};
    plan.params = clg__arena_size(m, &m->params);
    plan.accumulators = clg__arena_size(m, &m->acc);
    clg__qstate_bytes(m, &plan.states, &plan.state_scales);
    plan.tables = clg__plan_table_bytes(m) + norm_table_bytes(m);
    plan.param_copy = clg__arena_size(m, &m->copy);
    plan.grad_buffers = m->grads_bytes;
    plan.step_block = 4 * CLG_SB_WORDS + 4 * (uint64_t)m->n_partials;
    plan.total = plan.params + plan.accumulators + plan.states + plan.param_copy +
                 plan.grad_buffers + plan.step_block + plan.state_scales + plan.tables;
    clg__sized_export(user_plan, user_plan->struct_size, &plan, sizeof plan);
    return CLG_SUCCESS;
}

/* Common checks of the per-tensor calls: finalized, tensor in range. */
static clg_status check_tensor(const clg_model *m, int t, bool allow_all, const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    if (t == CLG_ALL_TENSORS && allow_all)
        return CLG_SUCCESS;
    if (t < 0 || (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no tensor %d (the model has %zu%s)", who, t, m->n_tensors,
                         allow_all ? "; CLG_ALL_TENSORS is -1" : "");
    return CLG_SUCCESS;
}

static clg_status view_of(const clg_model *m, const clg_arena *a, int t, clg_view *view,
                          const char *who)
{
    clg_status st = check_tensor(m, t, false, who);
    if (st != CLG_SUCCESS)
        return st;
    if (view == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL view", who);
    if (a->chunks == NULL)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: the model has no such arena", who);
    const clg_tensor_slot *ts = &m->tensors[t];
    *view = (clg_view){a->chunks[ts->chunk], ts->offset, ts->count};
    return CLG_SUCCESS;
}

clg_status clg_model_param_view(const clg_model *m, int t, clg_view *view)
{
    return view_of(m, m ? &m->params : NULL, t, view, "clg_model_param_view");
}

clg_status clg_model_acc_view(const clg_model *m, int t, clg_view *view)
{
    return view_of(m, m ? &m->acc : NULL, t, view, "clg_model_acc_view");
}

clg_status clg_model_param_copy_view(const clg_model *m, int t, clg_view *view)
{
    return view_of(m, m ? &m->copy : NULL, t, view, "clg_model_param_copy_view");
}

clg_status clg_model_loss_scale_view(const clg_model *m, clg_view *view)
{
    if (m == NULL || view == NULL)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_loss_scale_view: NULL argument");
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "clg_model_loss_scale_view: model not finalized");
    *view = (clg_view){m->step_block, CLG_SB_LOSS_SCALE, 1};
    return CLG_SUCCESS;
}

/* ----------------------------------------------------- host <-> device */

clg_arena *clg__model_arena(clg_model *m, int id)
{
    if (id == CLG_ARENA_PARAMS)
        return &m->params;
    if (id == CLG_ARENA_ACC)
        return &m->acc;
    if (id >= CLG_ARENA_STATE0 && (size_t)(id - CLG_ARENA_STATE0) < m->n_states)
        return &m->states[id - CLG_ARENA_STATE0];
    return NULL;
}

/* Copies tensor t (or all, CLG_ALL_TENSORS, concatenated in tensor order) between
 * the host and arena a; writes are enqueued without blocking and waited
 * for once at the end. */
static clg_status transfer(clg_model *m, clg_arena *a, int t, void *host, bool to_device,
                           const char *who)
{
    bool all = t == CLG_ALL_TENSORS;
    size_t first = all ? 0 : (size_t)t, last = all ? m->n_tensors : (size_t)t + 1;
    char *p = host;
    if (a->elem_size == 0) /* Q8/Q4 states: see state_io.c */
        return clg__fail(m->ctx, CLG_ERR_UNSUPPORTED,
                         "%s: the arena holds quantized states, which have no plain element copy",
                         who);
    for (size_t i = first; i < last; i++) {
        const clg_tensor_slot *ts = &m->tensors[i];
        size_t bytes = ts->count * a->elem_size;
        if (clg__fault_hit(CLG_FAULT_ENQUEUE)) {
            clFinish(m->ctx->queue);
            return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, "clEnqueueWriteBuffer");
        }
        cl_int err = to_device
                         ? clEnqueueWriteBuffer(m->ctx->queue, a->chunks[ts->chunk], CL_FALSE,
                                                ts->offset * a->elem_size, bytes, p, 0, NULL, NULL)
                         : clEnqueueReadBuffer(m->ctx->queue, a->chunks[ts->chunk], CL_FALSE,
                                               ts->offset * a->elem_size, bytes, p, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clFinish(m->ctx->queue);
            return clg__cl_fail(m->ctx, err, who,
                                to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
        }
        p += bytes;
    }
    cl_int err = clFinish(m->ctx->queue);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clFinish");
}

static size_t host_elems(const clg_model *m, int t)
{
    return t == CLG_ALL_TENSORS ? (size_t)clg_model_param_count(m) : m->tensors[t].count;
}

/* Round to nearest even, the conversions the update kernel uses too. */
static uint16_t to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static uint16_t to_fp16(float f)
{
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* subnormal or zero in fp16 */
        float mag;
        memcpy(&mag, &a, 4);
        /* scale so that the fp16 subnormal step 2^-24 becomes 1, round RNE */
        return (uint16_t)(sign | (uint32_t)nearbyintf(mag * 16777216.0f));
    }
    uint32_t mant = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return (uint16_t)(sign | (mant >> 13));
}

static clg_status write_param_copy(clg_model *m, int t, const float *host)
{
    if (m->copy.chunks == NULL)
        return CLG_SUCCESS;
    size_t n = host_elems(m, t);
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    if (h == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_upload_params: out of memory");
    for (size_t i = 0; i < n; i++)
        h[i] = m->cfg.param_copy_dtype == CLG_FP16 ? to_fp16(host[i]) : to_bf16(host[i]);
    clg_status st = transfer(m, &m->copy, t, h, true, "clg_model_upload_params");
    free(h);
    return st;
}

/* The checks every host copy makes before it touches anything. */
static clg_status check_copy(clg_model *m, int t, const void *host, size_t count,
                             const clg_events *ev, const char *who)
{
    clg_status st = check_tensor(m, t, true, who);
    if (st != CLG_SUCCESS)
        return st;
    if (host == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL host", who);
    st = clg__host_count_check(m, t, count, who);
    return st == CLG_SUCCESS ? clg__events_check(m->ctx, ev, who) : st;
}

typedef clg_status (*host_copy_fn)(clg_model *m, int t, void *host, const char *who);

/* A public host copy: its checks, then the copy between the caller's wait
 * list and its event. */
static clg_status host_copy(clg_model *m, int t, void *host, size_t count, const clg_events *ev,
                            host_copy_fn copy, const char *who)
{
    clg__events_clear(ev);
    clg_status st = check_copy(m, t, host, count, ev, who);
    if (st != CLG_SUCCESS)
        return st;
    st = clg__events_wait(m->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = copy(m, t, host, who);
    return clg__events_finish(m->ctx, ev, st, who);
}

/* bf16 master weights: rounded to nearest even on the host. */
static clg_status upload_bf16(clg_model *m, int t, const float *host, const char *who)
{
    size_t n = host_elems(m, t);
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    if (h == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    for (size_t i = 0; i < n; i++)
        h[i] = to_bf16(host[i]);
    clg_status st = transfer(m, &m->params, t, h, true, who);
    free(h);
    return st;
}

static clg_status upload_params(clg_model *m, int t, void *host, const char *who)
{
    clg_status st = m->params.dtype == CLG_BF16 ? upload_bf16(m, t, host, who)
                                                : transfer(m, &m->params, t, host, true, who);
    return st == CLG_SUCCESS ? write_param_copy(m, t, host) : st;
}

/* An fp32 or bf16 arena into fp32 host values (bf16 widened exactly). */
static clg_status download_widened(clg_model *m, clg_arena *a, int t, float *host,
                                   const char *who)
{
    if (a->dtype == CLG_FP32)
        return transfer(m, a, t, host, false, who);
    size_t n = host_elems(m, t);
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    if (h == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    clg_status st = transfer(m, a, t, h, false, who);
    for (size_t i = 0; st == CLG_SUCCESS && i < n; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        memcpy(&host[i], &u, 4);
    }
    free(h);
    return st;
}

static clg_status download_params(clg_model *m, int t, void *host, const char *who)
{
    return download_widened(m, &m->params, t, host, who);
}

static clg_status download_acc(clg_model *m, int t, void *out, const char *who)
{
    return download_widened(m, &m->acc, t, out, who);
}

clg_status clg_model_upload_params(clg_model *m, int t, const float *host, size_t count,
                                   const clg_events *ev)
{
    return host_copy(m, t, (void *)host, count, ev, upload_params, "clg_model_upload_params");
}

clg_status clg_model_download_params(clg_model *m, int t, float *host, size_t count,
                                     const clg_events *ev)
{
    return host_copy(m, t, host, count, ev, download_params, "clg_model_download_params");
}

clg_status clg_model_download_acc(clg_model *m, int t, float *host, size_t count,
                                  const clg_events *ev)
{
    return host_copy(m, t, host, count, ev, download_acc, "clg_model_download_acc");
}

clg_status clg__arena_read(clg_model *m, int id, int t, void *host)
{
    clg_arena *a = clg__model_arena(m, id);
    if (a == NULL || a->chunks == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "arena read: no arena %d", id);
    clg_status st = check_tensor(m, t, false, "arena read");
    if (st == CLG_SUCCESS && id >= CLG_ARENA_STATE0) /* stored as the chunk's format */
        return clg__state_codes_io(m, (size_t)(id - CLG_ARENA_STATE0), (size_t)t, host, 0);
    return st == CLG_SUCCESS ? transfer(m, a, t, host, false, "arena read") : st;
}

clg_status clg__arena_write(clg_model *m, int id, int t, const void *host)
{
    clg_arena *a = clg__model_arena(m, id);
    if (a == NULL || a->chunks == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "arena write: no arena %d", id);
    clg_status st = check_tensor(m, t, false, "arena write");
    if (st == CLG_SUCCESS && id >= CLG_ARENA_STATE0)
        return clg__state_codes_io(m, (size_t)(id - CLG_ARENA_STATE0), (size_t)t, (void *)host,
                                   1);
    if (st == CLG_SUCCESS)
        st = transfer(m, a, t, (void *)host, true, "arena write");
    /* the copy follows fp32 params here; with bf16 params a checkpoint
     * holds it as an entry of its own */
    if (st == CLG_SUCCESS && id == CLG_ARENA_PARAMS && a->dtype == CLG_FP32)
        st = write_param_copy(m, t, host);
    return st;
}

clg_status clg__cycle_state_get(clg_model *m, clg_cycle_state *s)
{
    clg_status st = check_tensor(m, 0, false, "cycle state");
    if (st != CLG_SUCCESS)
        return st;
    st = read_blocking(m, m->step_block, 0, 4 * CLG_SB_WORDS, s->step_block, "cycle state");
    if (st != CLG_SUCCESS)
        return st;
    s->micro = m->micro;
    s->weight_sum = m->weight_sum;
    s->cycles = m->cycles;
    s->micro_total = m->micro_total;
    return CLG_SUCCESS;
}

clg_status clg__cycle_state_set(clg_model *m, const clg_cycle_state *s)
{
    clg_status st = check_tensor(m, 0, false, "cycle state");
    if (st != CLG_SUCCESS)
        return st;
    if (m->sb_event != NULL) {
        clWaitForEvents(1, &m->sb_event);
        clReleaseEvent(m->sb_event);
        m->sb_event = NULL;
    }
    st = write_blocking(m, m->step_block, 0, 4 * CLG_SB_WORDS, s->step_block, "cycle state");
    if (st != CLG_SUCCESS)
        return st;
    memcpy(m->sb_host, s->step_block, sizeof m->sb_host);
    m->sb_host_at = (clg_sb_moment){s->cycles, s->micro_total, s->weight_sum};
    m->micro = s->micro;
    m->weight_sum = s->weight_sum;
    m->cycles = s->cycles;
    m->micro_total = s->micro_total;
    m->pending = false;      /* a checkpoint holds no collected cycle */
    m->failed = CLG_SUCCESS; /* the whole state was just written */
    return CLG_SUCCESS;
}
