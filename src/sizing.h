/* sizing.h - the geometry the core's layers share: work-group size and
 * counts, shard bounds, the elements each chunk's states cover, which
 * tensors keep fp32 states, and host counts against tensor sizes. Pure
 * arithmetic over the config and the layout (no device work): arena.c,
 * qstate.c, shard.c, the launch plan and the launchers all stand on it, and
 * it stands on none of them. */
#ifndef CLGRAD_SIZING_H
#define CLGRAD_SIZING_H

#include "internal.h"

/* Float4s per work-item of a reduction pass (ITEMS in common.cl), so that
 * the work-group tree is amortized: measured on PoCL, the norm pass at
 * N = 2^24 went from 11 ms to 4.7 ms. */
#define CLG_REDUCE_ITEMS 8

/* The work-group size of every kernel of a model on this device: the
 * largest power of two up to 256 the device allows. */
size_t clg__work_group_size(const clg_context *ctx);
/* Work-groups of wg work-items for n4 float4s, one float4 per work-item
 * (at least 1). Streaming kernels have no loop: a grid-stride loop keeps
 * PoCL from vectorizing across work-items (measured: 14x slower updates at
 * N = 2^24). The partition of a chunk into groups, hence every partial of
 * a reduction and the rounding of the norm, depends only on the layout
 * and the work-group size: bitwise reproducible. */
size_t clg__stream_groups(size_t wg, size_t n4);
/* Work-groups of a reduction pass over n4 float4s, CLG_REDUCE_ITEMS per
 * work-item (one partial each; at least 1). */
size_t clg__reduce_groups(size_t wg, size_t n4);

/* Does the layout keep tensors below state_min_size apart (Q8/Q4 states,
 * and an optimizer that has states)? */
bool clg__qstate_split(const clg_config *config);
/* A tensor of count elements keeps fp32 states under such a layout. */
bool clg__qstate_small(const clg_config *config, size_t count);

/* Shard index of count over a layout space of total elements: whole
 * segments, the remainder spread one each over the shards, so that sizes
 * differ by at most one segment. */
void clg__shard_bounds(uint64_t total, unsigned index, unsigned count, uint64_t *first,
                       uint64_t *n);
/* The layout space: the chunks end to end, and where chunk c starts. */
uint64_t clg__layout_total(const clg_model *model);
uint64_t clg__layout_first(const clg_model *model, size_t chunk);
/* The elements of chunk c that the states cover: all of them, or the
 * chunk's part of the shard. */
size_t clg__state_elems(const clg_model *model, size_t chunk);
/* Work-groups of chunk c's update launch over those elements (0 when the
 * shard has none of it): the rows of its group table. */
size_t clg__update_groups(const clg_model *model, size_t chunk);

/* A host copy's count must equal the elements of tensor t (a valid index or
 * CLG_ALL_TENSORS: the whole model); the message names both numbers. */
clg_status clg__host_count_check(const clg_model *model, int t, size_t count, const char *who);

#endif /* CLGRAD_SIZING_H */
