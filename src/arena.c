/* arena.c - the flat, chunked layout of a model: where each tensor lives,
 * the per-group runs the update launches over, and allocation of arenas
 * that share that layout. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* Stable order: by group, then by the order tensors were added, so that
 * every group is one contiguous run per chunk. */
static size_t *group_order(const clg_model *m)
{
    size_t *order = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *order);
    if (order == NULL)
        return NULL;
    size_t k = 0;
    for (size_t g = 0; g < m->n_groups; g++)
        for (size_t t = 0; t < m->n_tensors; t++)
            if ((size_t)m->tensors[t].group == g)
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
    clg_segment *segs = calloc(m->n_tensors, sizeof *segs);
    if (order == NULL || chunk_elems == NULL || segs == NULL) {
        free(order);
        free(chunk_elems);
        free(segs);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    }
    size_t n_chunks = 0, n_segs = 0;
    for (size_t k = 0; k < m->n_tensors; k++) {
        clg_tensor_slot *ts = &m->tensors[order[k]];
        size_t padded = round_up(ts->count, CLG_TENSOR_ALIGN);
        clg_segment *last = n_segs ? &segs[n_segs - 1] : NULL;
        bool same_segment = last != NULL && last->chunk == n_chunks - 1 &&
                            last->group == ts->group &&
                            last->offset + round_up(last->count + padded, CLG_SEGMENT_ALIGN) <=
                                max_elems;
        if (!same_segment) {
            /* a new segment starts on a whole work-group, in this chunk if
             * the tensor fits there, else in a new chunk */
            size_t start = n_chunks ? round_up(chunk_elems[n_chunks - 1], CLG_SEGMENT_ALIGN) : 0;
            if (n_chunks == 0 || start + round_up(padded, CLG_SEGMENT_ALIGN) > max_elems) {
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
    m->n_chunks = n_chunks;
    m->segments = segs;
    m->n_segments = n_segs;
    return CLG_SUCCESS;
}

clg_status clg__arena_alloc(clg_model *m, clg_arena *a, clg_dtype dtype, size_t elem_size)
{
    a->dtype = dtype;
    a->elem_size = elem_size;
    a->chunks = calloc(m->n_chunks ? m->n_chunks : 1, sizeof *a->chunks);
    if (a->chunks == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    for (size_t c = 0; c < m->n_chunks; c++) {
        clg_status st = clg__buffer_create(m->ctx, (uint64_t)m->chunk_elems[c] * elem_size,
                                           &a->chunks[c]);
        if (st != CLG_SUCCESS) {
            clg__arena_free(m, a);
            return st;
        }
    }
    return CLG_SUCCESS;
}

void clg__arena_free(clg_model *m, clg_arena *a)
{
    if (a->chunks == NULL)
        return;
    for (size_t c = 0; c < m->n_chunks; c++)
        if (a->chunks[c] != NULL)
            clg__buffer_release(m->ctx, a->chunks[c], (uint64_t)m->chunk_elems[c] * a->elem_size);
    free(a->chunks);
    a->chunks = NULL;
}

uint64_t clg__arena_bytes(const clg_model *m, size_t elem_size)
{
    uint64_t total = 0;
    for (size_t c = 0; c < m->n_chunks; c++)
        total += (uint64_t)m->chunk_elems[c] * elem_size;
    return total;
}
