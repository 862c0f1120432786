/* qformat.h - the formats of low-precision optimizer states
 * (clg_config.state_dtype), pure arithmetic: which states follow
 * state_dtype, the format of each in each chunk, their bytes and absmax
 * values, and where a Q4 code sits. Inline, with no .c: the checkpoint
 * layout (checkpoint_parse.c, which the fuzz harness links alone) uses it,
 * and so do arena.c and sizing.c, which qstate.c sits on. */
#ifndef CLGRAD_QFORMAT_H
#define CLGRAD_QFORMAT_H

#include "model.h"

/* Elements per absmax block. A block never spans two tensors (quantized
 * tensors start on a block), two work-groups or two chunks (segments are
 * CLG_SEGMENT_ALIGN = 1024 elements, a multiple of both). */
#define CLG_Q8_BLOCK 256
#define CLG_Q4_BLOCK 128

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

/* Q4 codes are two per byte, planar within each 32 elements: byte 16g + j
 * holds element 32g + j in its low nibble and 32g + 16 + j in its high one
 * (update_q.cl says why). The code of element i: */
static inline unsigned clg__q4_code(const uint8_t *codes, size_t i)
{
    uint8_t b = codes[i / 32 * 16 + i % 16];
    return i % 32 < 16 ? b & 0xfu : b >> 4;
}

#endif /* CLGRAD_QFORMAT_H */
