/* shard.c - ZeRO-1 in the core: a model that keeps its optimizer states
 * for one shard of the layout space only (clg_model_set_shard).
 *
 * The layout space is the model's chunks end to end. A shard is a
 * contiguous range of it in whole segments (CLG_SEGMENT_ALIGN elements),
 * so that within each chunk the shard's part starts and ends on a
 * work-group boundary of every streaming kernel: the update and the norm
 * pass run unchanged, on sub-buffers of the params and accumulators that
 * start at the shard's first element, with state buffers of the shard's
 * size. The shard's work-groups see the same elements, in the same
 * groups, as the whole model's would, so an update of the shard is
 * bitwise the whole model's update of those elements given the same
 * prologue. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

static unsigned shard_count(const clg_model *m) { return m->shard_count ? m->shard_count : 1; }

static void bounds(const clg_model *m, unsigned index, unsigned count, uint64_t *first,
                   uint64_t *n)
{
    clg__shard_bounds(clg__layout_total(m), index, count, first, n);
}

clg_status clg_model_set_shard(clg_model *m, unsigned index, unsigned count)
{
    const char *who = "clg_model_set_shard";
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "%s: the model is finalized; set its shard before clg_model_finalize",
                         who);
    if (count == 0 || index >= count)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: shard %u of %u: the count must be >= 1 and the index below it",
                         who, index, count);
    m->sharded = true;
    m->shard_index = index;
    m->shard_count = count;
    return CLG_SUCCESS;
}

clg_status clg_model_shard(const clg_model *m, unsigned *index, unsigned *count)
{
    if (m == NULL || index == NULL || count == NULL)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "clg_model_shard: NULL %s",
                         m == NULL ? "model" : index == NULL ? "index" : "count");
    *index = m->shard_index;
    *count = shard_count(m);
    return CLG_SUCCESS;
}

clg_status clg__shard_refuse(const clg_model *m, const char *who)
{
    if (!m->sharded)
        return CLG_SUCCESS;
    return clg__fail(m->ctx, CLG_ERR_UNSUPPORTED,
                     "%s: the model keeps the optimizer states of shard %u of %u only "
                     "(clg_model_set_shard); this needs every shard's (end cycles with "
                     "clg_finish_cycle_sharded, save with clg_checkpoint_save_gathered)",
                     who, m->shard_index, m->shard_count);
}

/* What a shard cannot hold yet: each would need its own split of a
 * per-chunk or per-tensor structure. */
clg_status clg__shard_config_check(clg_context *ctx, const clg_config *c, const char *who)
{
    const char *what = NULL;
    if (c->param_copy_dtype != CLG_DTYPE_NONE)
        what = "a param copy (param_copy_dtype)";
    else if (c->master_dtype != CLG_FP32)
        what = "bf16 params (master_dtype)";
    else if (c->tensor_norms)
        what = "per-tensor norms (tensor_norms)";
    else if (c->nonfinite == CLG_NONFINITE_SKIP_MICRO)
        what = "CLG_NONFINITE_SKIP_MICRO";
    if (what == NULL)
        return CLG_SUCCESS;
    return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                     "%s: a sharded model (clg_model_set_shard) does not support %s", who, what);
}

clg_status clg__shard_layout(clg_model *m)
{
    size_t nc = m->n_chunks;
    m->own_lo = calloc(nc, sizeof *m->own_lo);
    m->own_n = calloc(nc, sizeof *m->own_n);
    m->params_sub = calloc(nc, sizeof *m->params_sub);
    m->acc_sub = calloc(nc, sizeof *m->acc_sub);
    if (!m->own_lo || !m->own_n || !m->params_sub || !m->acc_sub)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    if (!m->sharded) {
        memcpy(m->own_n, m->chunk_elems, nc * sizeof *m->own_n);
        return CLG_SUCCESS;
    }
    clg_status st = clg__shard_config_check(m->ctx, &m->cfg, "clg_model_finalize");
    if (st != CLG_SUCCESS)
        return st;
    uint64_t first, n;
    bounds(m, m->shard_index, m->shard_count, &first, &n);
    uint64_t base = 0;
    for (size_t c = 0; c < nc; c++) {
        uint64_t end = base + m->chunk_elems[c];
        uint64_t lo = first > base ? first : base;
        uint64_t hi = first + n < end ? first + n : end;
        if (lo < hi) {
            m->own_lo[c] = (size_t)(lo - base);
            m->own_n[c] = (size_t)(hi - lo);
        }
        base = end;
    }
    return CLG_SUCCESS;
}

/* A sub-buffer of chunk buffer `parent` over the shard's part. */
static clg_status sub_buffer(clg_model *m, cl_mem parent, size_t elem_size, size_t c,
                             cl_uint align_bytes, cl_mem *out)
{
    cl_buffer_region r = {m->own_lo[c] * elem_size, m->own_n[c] * elem_size};
    if (align_bytes != 0 && r.origin % align_bytes != 0)
        return clg__fail(m->ctx, CLG_ERR_UNSUPPORTED,
                         "clg_model_finalize: shard %u of %u starts at byte %zu of chunk %zu, "
                         "which the device cannot address as a sub-buffer (its base address "
                         "alignment is %u bytes)",
                         m->shard_index, m->shard_count, r.origin, c, align_bytes);
    cl_int err = CL_SUCCESS;
    *out = clg__fault_hit(CLG_FAULT_ALLOC)
               ? NULL
               : clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r,
                                   &err);
    if (*out == NULL)
        return clg__cl_fail(m->ctx, err == CL_SUCCESS ? CL_OUT_OF_RESOURCES : err,
                            "clg_model_finalize: shard sub-buffer", "clCreateSubBuffer");
    return CLG_SUCCESS;
}

clg_status clg__shard_buffers(clg_model *m)
{
    if (!m->sharded)
        return CLG_SUCCESS;
    cl_uint bits = 0;
    clGetDeviceInfo(m->ctx->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    clg_status st = CLG_SUCCESS;
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        if (m->own_n[c] == 0 || m->own_n[c] == m->chunk_elems[c])
            continue; /* none of it, or the whole buffer */
        st = sub_buffer(m, m->params.chunks[c], m->params.elem_size, c, bits / 8,
                        &m->params_sub[c]);
        if (st == CLG_SUCCESS)
            st = sub_buffer(m, m->acc.chunks[c], m->acc.elem_size, c, bits / 8, &m->acc_sub[c]);
    }
    return st;
}

void clg__shard_free(clg_model *m)
{
    for (size_t c = 0; m->params_sub != NULL && c < m->n_chunks; c++) {
        if (m->params_sub[c] != NULL)
            clReleaseMemObject(m->params_sub[c]);
        if (m->acc_sub[c] != NULL)
            clReleaseMemObject(m->acc_sub[c]);
    }
    free(m->params_sub);
    free(m->acc_sub);
    free(m->own_lo);
    free(m->own_n);
    m->params_sub = m->acc_sub = NULL;
    m->own_lo = m->own_n = NULL;
}

cl_mem clg__shard_mem(const clg_model *m, int arena_id, size_t c)
{
    const cl_mem *sub = arena_id == CLG_ARENA_PARAMS ? m->params_sub : m->acc_sub;
    if (sub != NULL && sub[c] != NULL)
        return sub[c];
    return arena_id == CLG_ARENA_PARAMS ? m->params.chunks[c] : m->acc.chunks[c];
}

/* ------------------------------------------------------------ public */

static clg_status check_finalized(const clg_model *m, const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    return CLG_SUCCESS;
}

size_t clg_model_chunk_count(const clg_model *m)
{
    return m != NULL && m->finalized ? m->n_chunks : 0;
}

clg_status clg_model_chunk_view(const clg_model *m, clg_part part, size_t chunk, clg_view *view)
{
    const char *who = "clg_model_chunk_view";
    clg_status st = check_finalized(m, who);
    if (st != CLG_SUCCESS)
        return st;
    if (view == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL view", who);
    if (part != CLG_PART_PARAMS && part != CLG_PART_ACC)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: part %d must be CLG_PART_PARAMS or CLG_PART_ACC", who, (int)part);
    if (chunk >= m->n_chunks)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no chunk %zu (the model has %zu)", who, chunk, m->n_chunks);
    const clg_arena *a = part == CLG_PART_PARAMS ? &m->params : &m->acc;
    *view = (clg_view){a->chunks[chunk], 0, m->chunk_elems[chunk]};
    return CLG_SUCCESS;
}

clg_status clg_model_shard_range(const clg_model *m, unsigned index, uint64_t *first,
                                 uint64_t *count, uint64_t *total)
{
    const char *who = "clg_model_shard_range";
    clg_status st = check_finalized(m, who);
    if (st != CLG_SUCCESS)
        return st;
    if (index >= shard_count(m))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no shard %u (the model is in %u)", who, index, shard_count(m));
    uint64_t f, n;
    bounds(m, index, shard_count(m), &f, &n);
    if (first)
        *first = f;
    if (count)
        *count = n;
    if (total)
        *total = clg__layout_total(m);
    return CLG_SUCCESS;
}

/* ------------------------------------------------ the shard's statistics */

clg_status clg__partials_shard_sum(clg_model *m, double *sumsq, const char *who)
{
    size_t n = m->region_size;
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (p == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    cl_int err = clg__fault_hit(CLG_FAULT_ENQUEUE)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueReadBuffer(m->ctx->queue, m->partials, CL_TRUE,
                                           4 * (size_t)CLG_REGION_MAIN * n, 4 * n, p, 0, NULL,
                                           NULL);
    if (err != CL_SUCCESS) {
        free(p);
        return clg__cl_fail(m->ctx, err, who, "clEnqueueReadBuffer");
    }
    /* in chunk and work-group order, in double: a fixed order, so every
     * run of the same shard gives the same bits */
    double sum = 0.0;
    for (size_t c = 0; c < m->n_chunks; c++) {
        size_t groups = m->own_n[c] ? clg__reduce_groups(m->wg, m->own_n[c] / 4) : 0;
        for (size_t g = 0; g < groups; g++)
            sum += (double)p[m->chunk_pbase[c] + g];
    }
    free(p);
    *sumsq = sum;
    return CLG_SUCCESS;
}

clg_status clg__partials_set_main(clg_model *m, float sumsq, const char *who)
{
    size_t n = m->region_size;
    float *p = calloc(n ? n : 1, sizeof *p);
    if (p == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of memory", who);
    p[0] = sumsq; /* the prologue adds the region up: the rest are zeros */
    cl_int err = clg__fault_hit(CLG_FAULT_ENQUEUE)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueWriteBuffer(m->ctx->queue, m->partials, CL_TRUE,
                                            4 * (size_t)CLG_REGION_MAIN * n, 4 * n, p, 0, NULL,
                                            NULL);
    free(p);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clEnqueueWriteBuffer");
}
