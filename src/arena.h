/* arena.h - chunked layout of a model's tensors and arena allocation. */
#ifndef CLGRAD_ARENA_H
#define CLGRAD_ARENA_H

#include "model.h"

/* Places every tensor (padded to CLG_TENSOR_ALIGN, each group's run to
 * CLG_SEGMENT_ALIGN) into chunks no larger
 * than the context's max allocation, grouped by param group, and derives
 * the segments. Fails if one tensor alone exceeds the limit. */
clg_status clg__layout(clg_model *model);
/* Allocates one buffer per chunk (zero-filled); all or nothing. */
clg_status clg__arena_alloc(clg_model *model, clg_arena *arena, clg_dtype dtype,
                            size_t elem_size);
void clg__arena_free(clg_model *model, clg_arena *arena);
uint64_t clg__arena_bytes(const clg_model *model, size_t elem_size);

#endif /* CLGRAD_ARENA_H */
