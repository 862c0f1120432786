/* qstate.h - low-precision optimizer states (clg_config.state_dtype): the
 * quantization maps and the tables the update kernel reads, the state
 * arenas, and the host side of dequantization (downloads). The format each
 * state has in each chunk and the sizes that follow are qformat.h; the
 * layout of small tensors is in arena.c; the kernel is update.cl. */
#ifndef CLGRAD_QSTATE_H
#define CLGRAD_QSTATE_H

#include "model.h"
#include "qformat.h"

/* The map of CLG_Q8 / CLG_Q4 states, signed (m, momentum) or not (v), as
 * the update kernel computes it (qmaps.c): into out (room for 256), its
 * length returned (256 or 16). */
size_t clg__qmap_fill(clg_dtype dtype, bool is_signed, float *out);

/* State s uses the signed map (m, momentum) or the unsigned one (v). */
bool clg__qstate_signed(const clg_config *config, size_t s);
/* Which tensors keep fp32 states (clg__qstate_split, clg__qstate_small)
 * is in sizing.h. */

/* The map state s of a Q8/Q4 model uses (n: its length). */
const float *clg__qmap_of(const clg_model *m, size_t s, size_t *n);

/* Host dequantization of n elements, map[code] * absmax of each block, the
 * kernel's own fp32 product. codes as stored; blocks start at element 0. */
void clg__dequantize(clg_dtype fmt, const float *map, const uint8_t *codes,
                     const float *absmax, size_t n, float *out);

/* Checkpoints (state_io.c): tensor t's state s as stored, blocking: its
 * clg__format_bytes (codes, or fp32/bf16 elements), or its absmax values.
 * write != 0: host to device. */
clg_status clg__state_codes_io(clg_model *m, size_t s, size_t t, void *host, int write);
clg_status clg__state_scales_io(clg_model *m, size_t s, size_t t, void *host, int write);

/* Checks of the state fields of a config: unknown values are
 * CLG_ERR_INVALID_ARGUMENT, combinations clgrad does not offer
 * CLG_ERR_UNSUPPORTED naming both settings. */
clg_status clg__qstate_config_check(clg_context *ctx, const clg_config *config, const char *who);



/* At finalize, after the layout: state and scale bytes per chunk. */
uint64_t clg__qstate_state_bytes(const clg_model *m, size_t s, size_t chunk);
uint64_t clg__qstate_scale_bytes(const clg_model *m, size_t s, size_t chunk);
/* Every state arena and the scales; all or nothing (the caller's release
 * frees what was made). */
clg_status clg__qstate_alloc(clg_model *m);
void clg__qstate_free(clg_model *m);
/* What those hold: states (every state array) and scales. */
void clg__qstate_bytes(const clg_model *m, uint64_t *states, uint64_t *scales);
#endif /* CLGRAD_QSTATE_H */
