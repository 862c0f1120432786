/* qstate.h - low-precision optimizer states (clg_config.state_dtype): the
 * format each state has in each chunk, the sizes that follow, the
 * quantization maps and the tables the update kernel reads, and the host
 * side of dequantization (downloads). The layout of small tensors is in
 * arena.c; the kernel is update.cl. */
#ifndef CLGRAD_QSTATE_H
#define CLGRAD_QSTATE_H

#include "model.h"

/* Elements per absmax block. A block never spans two tensors (quantized
 * tensors start on a block), two work-groups or two chunks (segments are
 * CLG_SEGMENT_ALIGN = 1024 elements, a multiple of both). */
#define CLG_Q8_BLOCK 256
#define CLG_Q4_BLOCK 128

/* The map of CLG_Q8 / CLG_Q4 states, signed (m, momentum) or not (v), as
 * the update kernel computes it (qmaps.c): into out (room for 256), its
 * length returned (256 or 16). */
size_t clg__qmap_fill(clg_dtype dtype, bool is_signed, float *out);

/* The format arithmetic below is inline: the checkpoint layout
 * (checkpoint_parse.c, which the fuzz harness links alone) uses it. */
static inline bool clg__dtype_quantized(clg_dtype d) { return d == CLG_Q8 || d == CLG_Q4; }

/* Elements per block of CLG_Q8 / CLG_Q4 (0 for any other dtype). */
static inline size_t clg__qblock(clg_dtype d)
{
    return d == CLG_Q8 ? CLG_Q8_BLOCK : d == CLG_Q4 ? CLG_Q4_BLOCK : 0;
}

/* States that follow state_dtype: the optimizer's states but the AMSGrad
 * max, which stays fp32. */
static inline size_t clg__qstate_count(const clg_config *c)
{
    switch (c->optimizer) {
    case CLG_SGD:
        return c->momentum != 0.0f ? 1 : 0;
    case CLG_ADAM:
    case CLG_ADAMW:
        return 2;
    case CLG_LION:
        return 1;
    }
    return 0;
}
/* State s uses the signed map (m, momentum) or the unsigned one (v). */
bool clg__qstate_signed(const clg_config *config, size_t s);
/* Which tensors keep fp32 states (clg__qstate_split, clg__qstate_small)
 * is in sizing.h. */

/* The format of state s in chunk c: CLG_FP32, CLG_BF16, CLG_Q8 or CLG_Q4. */
static inline clg_dtype clg__state_format(const clg_model *m, size_t s, size_t chunk)
{
    if (s >= clg__qstate_count(&m->cfg) || m->cfg.state_dtype == CLG_FP32)
        return CLG_FP32;
    if (m->cfg.state_dtype == CLG_BF16)
        return CLG_BF16;
    return m->chunk_small != NULL && m->chunk_small[chunk] ? CLG_FP32 : m->cfg.state_dtype;
}

/* Bytes of elems elements stored as fmt (Q4: whole 16-byte groups of 32). */
static inline uint64_t clg__format_bytes(clg_dtype fmt, uint64_t elems)
{
    switch (fmt) {
    case CLG_FP32: return 4 * elems;
    case CLG_FP16:
    case CLG_BF16: return 2 * elems;
    case CLG_Q8: return elems;
    case CLG_Q4: return (elems + 31) / 32 * 16;
    default: return 0;
    }
}

/* Absmax values of elems elements stored as fmt (0 unless Q8/Q4). */
static inline uint64_t clg__format_scales(clg_dtype fmt, uint64_t elems)
{
    size_t block = clg__qblock(fmt);
    return block ? (elems + block - 1) / block : 0;
}

/* The map state s of a Q8/Q4 model uses (n: its length). */
const float *clg__qmap_of(const clg_model *m, size_t s, size_t *n);

/* Q4 codes are two per byte, planar within each 32 elements: byte 16g + j
 * holds element 32g + j in its low nibble and 32g + 16 + j in its high one
 * (update_q.cl says why). The code of element i: */
static inline unsigned clg__q4_code(const uint8_t *codes, size_t i)
{
    uint8_t b = codes[i / 32 * 16 + i % 16];
    return i % 32 < 16 ? b & 0xfu : b >> 4;
}
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
