/* arena.h - chunked layout of a model's tensors and arena allocation. */
#ifndef CLGRAD_ARENA_H
#define CLGRAD_ARENA_H

#include "model.h"

/* Places every tensor (padded to CLG_TENSOR_ALIGN, or to the block of
 * Q8/Q4 states; each group's run to CLG_SEGMENT_ALIGN; tensors below
 * state_min_size of Q8/Q4 states in chunks of their own) into chunks no larger
 * than the context's max allocation, grouped by param group, and derives
 * the segments. Fails if one tensor alone exceeds the limit. */
clg_status clg__layout(clg_model *model);
/* Allocates one buffer per chunk (zero-filled); all or nothing. */
clg_status clg__arena_alloc(clg_model *model, clg_arena *arena, clg_dtype dtype,
                            size_t elem_size);
/* The same with bytes[c] bytes in chunk c (0: no buffer there). */
clg_status clg__arena_alloc_sized(clg_model *model, clg_arena *arena, clg_dtype dtype,
                                  size_t elem_size, const uint64_t *bytes);
void clg__arena_free(clg_model *model, clg_arena *arena);
/* The bytes an allocated arena holds. */
uint64_t clg__arena_size(const clg_model *model, const clg_arena *arena);
uint64_t clg__arena_bytes(const clg_model *model, size_t elem_size);

#endif /* CLGRAD_ARENA_H */
