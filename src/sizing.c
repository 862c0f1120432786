/* sizing.c - the core's shared geometry (see sizing.h). */
#include "model.h"
#include "qformat.h"

size_t clg__work_group_size(const clg_context *ctx)
{
    size_t max = ctx->info.max_work_group_size ? ctx->info.max_work_group_size : 1;
    size_t wg = 1;
    while (wg * 2 <= max && wg * 2 <= 256)
        wg *= 2;
    return wg;
}

size_t clg__stream_groups(size_t wg, size_t n4)
{
    size_t g = (n4 + wg - 1) / wg;
    return g < 1 ? 1 : g;
}

size_t clg__reduce_groups(size_t wg, size_t n4)
{
    return clg__stream_groups(wg * CLG_REDUCE_ITEMS, n4);
}

bool clg__qstate_split(const clg_config *c)
{
    return clg__dtype_quantized(c->state_dtype) && clg__qstate_count(c) > 0;
}

bool clg__qstate_small(const clg_config *c, size_t count)
{
    return clg__qstate_split(c) && count < c->state_min_size;
}

void clg__shard_bounds(uint64_t total, unsigned index, unsigned count, uint64_t *first, uint64_t *n)
{
    uint64_t units = total / CLG_SEGMENT_ALIGN;
    uint64_t lo = units * index / count, hi = units * (index + 1) / count;
    *first = lo * CLG_SEGMENT_ALIGN;
    *n = (hi - lo) * CLG_SEGMENT_ALIGN;
}

uint64_t clg__layout_first(const clg_model *m, size_t chunk)
{
    uint64_t first = 0;
    for (size_t c = 0; c < chunk; c++)
        first += m->chunk_elems[c];
    return first;
}

uint64_t clg__layout_total(const clg_model *m)
{
    return clg__layout_first(m, m->n_chunks);
}

size_t clg__state_elems(const clg_model *m, size_t c)
{
    return m->own_n != NULL ? m->own_n[c] : m->chunk_elems[c];
}

size_t clg__update_groups(const clg_model *m, size_t c)
{
    size_t elems = clg__state_elems(m, c);
    return elems ? clg__stream_groups(m->wg, elems / 4) : 0;
}

clg_status clg__host_count_check(const clg_model *m, int t, size_t count, const char *who)
{
    size_t need = 0;
    for (size_t i = t == CLG_ALL_TENSORS ? 0 : (size_t)t;
         i < (t == CLG_ALL_TENSORS ? m->n_tensors : (size_t)t + 1); i++)
        need += m->tensors[i].count;
    if (count == need)
        return CLG_SUCCESS;
    if (t == CLG_ALL_TENSORS)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: the host buffer holds %zu elements, the model (all %zu tensors) "
                         "has %zu",
                         who, count, m->n_tensors, need);
    return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                     "%s: the host buffer holds %zu elements, tensor %d ('%s') has %zu", who, count,
                     t, m->tensors[t].name, need);
}
