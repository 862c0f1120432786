/* arena.c - the flat, chunked layout of a model: where each tensor lives,
 * the per-group runs the update launches over, and allocation of arenas
 * that share that layout. */
#include "arena.h"
#include "qformat.h"

#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

static bool tensor_small(const clg_model *m, size_t t)
{
    return clg__qstate_small(&m->cfg, m->tensors[t].count);
}

/* Stable order: by group, then by the order tensors were added, so that
 * every group is one contiguous run per chunk. With Q8/Q4 states the
 * tensors below state_min_size come after all others, in chunks of their
 * own, so that every update launch handles one state format. */
static size_t *group_order(const clg_model *m)
{
    size_t *order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *order);
    if (order == NULL)
        return NULL;
    size_t k = 0;
    for (int small = 0; small < 2; small++)
        for (size_t g = 0; g < m->n_groups; g++)
            for (size_t t = 0; t < m->n_tensors; t++)
                if ((size_t)m->tensors[t].group == g && tensor_small(m, t) == (small != 0))
                    order[k++] = t;
    return order;
}

clg_status clg__layout(clg_model *m)
{
    clg_context *ctx = m->ctx;
    uint64_t max_elems = clg_context_max_alloc(ctx) / 4 / CLG_SEGMENT_ALIGN * CLG_SEGMENT_ALIGN;
    for (size_t t = 0; t < m->n_tensors; t++) {
        size_t padded = round_up(m->tensors[t].count, CLG_SEGMENT_ALIGN);
        if (padded > max_elems)
            return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                             "clg_model_finalize: tensor '%s' has %zu elements (%llu bytes as "
                             "fp32), more than one buffer may hold on this device (max "
                             "allocation %llu bytes); split it into smaller tensors",
                             m->tensors[t].name, m->tensors[t].count,
                             (unsigned long long)padded * 4,
                             (unsigned long long)clg_context_max_alloc(ctx));
    }
    size_t *order = group_order(m);
    /* at most one chunk and one segment per tensor */
    size_t *chunk_elems = calloc(m->n_tensors, sizeof *chunk_elems);
    bool *chunk_small = calloc(m->n_tensors, sizeof *chunk_small);
    clg_segment *segs = calloc(m->n_tensors, sizeof *segs);
    if (order == NULL || chunk_elems == NULL || chunk_small == NULL || segs == NULL) {
        free(order);
        free(chunk_elems);
        free(chunk_small);
        free(segs);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    }
    /* quantized tensors start on a block, so that a block holds one
     * tensor and its blocks start at its first element, as bitsandbytes'
     * do; the padding reads as zeros and quantizes to zero */
    size_t qalign = clg__qstate_split(&m->cfg) ? clg__qblock(m->cfg.state_dtype) : 0;
    size_t n_chunks = 0, n_segs = 0;
    for (size_t k = 0; k < m->n_tensors; k++) {
        clg_tensor_slot *ts = &m->tensors[order[k]];
        bool small = tensor_small(m, order[k]);
        size_t padded = round_up(ts->count, qalign && !small ? qalign : CLG_TENSOR_ALIGN);
        clg_segment *last = n_segs ? &segs[n_segs - 1] : NULL;
        bool same_segment = last != NULL && last->chunk == n_chunks - 1 &&
                            last->group == ts->group && chunk_small[n_chunks - 1] == small &&
                            last->offset + round_up(last->count + padded, CLG_SEGMENT_ALIGN) <=
                                max_elems;
        if (!same_segment) {
            /* a new segment starts on a whole work-group, in this chunk if
             * the tensor fits there and has its state format, else in a
             * new chunk */
            size_t start = n_chunks ? round_up(chunk_elems[n_chunks - 1], CLG_SEGMENT_ALIGN) : 0;
            if (n_chunks == 0 || chunk_small[n_chunks - 1] != small ||
                start + round_up(padded, CLG_SEGMENT_ALIGN) > max_elems) {
                chunk_small[n_chunks] = small;
                chunk_elems[n_chunks++] = 0;
                start = 0;
            }
            segs[n_segs++] = (clg_segment){ts->group, n_chunks - 1, start, 0};
            last = &segs[n_segs - 1];
        }
        ts->chunk = last->chunk;
        ts->offset = last->offset + last->count;
        last->count += padded;
        chunk_elems[last->chunk] = last->offset + round_up(last->count, CLG_SEGMENT_ALIGN);
    }
    /* segments end on a whole work-group too (the padding reads as zeros) */
    for (size_t s = 0; s < n_segs; s++)
        segs[s].count = round_up(segs[s].count, CLG_SEGMENT_ALIGN);
    free(order);
    m->chunk_elems = chunk_elems;
    m->chunk_small = chunk_small;
    m->n_chunks = n_chunks;
    m->segments = segs;
    m->n_segments = n_segs;
    return CLG_SUCCESS;
}

clg_status clg__arena_alloc_sized(clg_model *m, clg_arena *a, clg_dtype dtype, size_t elem_size,
                                  const uint64_t *bytes)
{
    a->dtype = dtype;
    a->elem_size = elem_size;
    a->chunks = calloc(m->n_chunks ? m->n_chunks : 1, sizeof *a->chunks);
    a->bytes = calloc(m->n_chunks ? m->n_chunks : 1, sizeof *a->bytes);
    if (a->chunks == NULL || a->bytes == NULL) {
        clg__arena_free(m, a);
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    }
    for (size_t c = 0; c < m->n_chunks; c++) {
        uint64_t size = bytes ? bytes[c] : (uint64_t)m->chunk_elems[c] * elem_size;
        if (size == 0)
            continue; /* a scale arena has no buffer in fp32-state chunks */
        clg_status st = clg__buffer_create(m->ctx, size, &a->chunks[c]);
        if (st != CLG_SUCCESS) {
            clg__arena_free(m, a);
            return st;
        }
        a->bytes[c] = size;
    }
    return CLG_SUCCESS;
}

clg_status clg__arena_alloc(clg_model *m, clg_arena *a, clg_dtype dtype, size_t elem_size)
{
    return clg__arena_alloc_sized(m, a, dtype, elem_size, NULL);
}

void clg__arena_free(clg_model *m, clg_arena *a)
{
    for (size_t c = 0; a->chunks != NULL && c < m->n_chunks; c++)
        if (a->chunks[c] != NULL)
            clg__buffer_release(m->ctx, a->chunks[c], a->bytes[c]);
    free(a->chunks);
    free(a->bytes);
    a->chunks = NULL;
    a->bytes = NULL;
}

uint64_t clg__arena_size(const clg_model *m, const clg_arena *a)
{
    uint64_t total = 0;
    for (size_t c = 0; a->chunks != NULL && c < m->n_chunks; c++)
        total += a->bytes[c];
    return total;
}

uint64_t clg__arena_bytes(const clg_model *m, size_t elem_size)
{
    uint64_t total = 0;
    for (size_t c = 0; c < m->n_chunks; c++)
        total += (uint64_t)m->chunk_elems[c] * elem_size;
    return total;
}
