/* checkpoint_values.c - the values a checkpoint holds, against what
 * clgrad's updates can produce (docs/design.md, section 8). A CRC protects
 * against damage, not against a file that was edited and re-summed, so the
 * parser (checkpoint_parse.c) runs these checks last, on the staged bytes,
 * before anything reaches the device:
 *   - Q8/Q4 absmax: finite and >= 0, under every policy (the largest
 *     magnitude in a block; a block whose absmax is not finite decodes to
 *     no finite value at all);
 *   - fp32/bf16 optimizer states: finite when the file's non-finite policy
 *     skips every update whose gradient is not finite (all but "ignore");
 *   - the step block's loss scale: 1 without loss scaling, loss_scale_init
 *     when static, and when dynamic finite, > 0 and within [loss_scale_min,
 *     loss_scale_max] (or still loss_scale_init, before the first update
 *     clamps it); its growth tracker below loss_scale_interval and no more
 *     than the updates applied.
 * Every Q8/Q4 code is a valid index (Q8 maps have 256 values, Q4 maps 16),
 * so the codes need no check. Host-only: fuzz/ links it with the parser. */
#include "checkpoint.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static clg_status refuse(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static clg_status refuse(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return CLG_ERR_CORRUPT_FILE;
}

static float f32_at(const uint8_t *p)
{
    float f;
    memcpy(&f, p, 4); /* little-endian host: checkpoint_parse.c */
    return f;
}

static float bf16_at(const uint8_t *p)
{
    uint32_t u = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Elements per branch-free scan: a constant, so that GCC's -O2 (whose
 * vectorizer takes only loops without a remainder) vectorizes the scans. */
#define SCAN_BLOCK 4096

/* The exponent fields of n (SCAN_BLOCK: a whole block) fp32 or bf16
 * values, each plus one, OR-ed: the sign bit of the result is set exactly
 * when some field is all ones (inf or NaN). */
static inline uint32_t exponent_carries_f32(const uint8_t *p, size_t n)
{
    uint32_t carry = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * j, 4);
        carry |= (u & 0x7f800000u) + 0x00800000u;
    }
    return carry & 0x80000000u;
}

static inline uint32_t exponent_carries_bf16(const uint8_t *p, size_t n)
{
    uint16_t carry = 0;
    for (size_t j = 0; j < n; j++) {
        uint16_t u;
        memcpy(&u, p + 2 * j, 2);
        carry |= (uint16_t)((u & 0x7f80u) + 0x0080u);
    }
    return carry & 0x8000u;
}

static uint32_t exponent_carries(const uint8_t *p, size_t n, size_t elem)
{
    if (n == SCAN_BLOCK) /* the common case, vectorized */
        return elem == 4 ? exponent_carries_f32(p, SCAN_BLOCK)
                         : exponent_carries_bf16(p, SCAN_BLOCK);
    return elem == 4 ? exponent_carries_f32(p, n) : exponent_carries_bf16(p, n);
}

/* Index of the first of n elements of size elem (4: fp32, 2: bf16) that is
 * inf or NaN, or n. Each block is scanned branch-free first, so that the
 * common case (all finite) costs one vectorized pass. */
static uint64_t first_nonfinite(const uint8_t *p, uint64_t n, size_t elem)
{
    for (uint64_t i = 0; i < n; i += SCAN_BLOCK) {
        size_t m = (size_t)(n - i < SCAN_BLOCK ? n - i : SCAN_BLOCK);
        const uint8_t *b = p + elem * i;
        if (!exponent_carries(b, m, elem))
            continue;
        for (size_t j = 0; j < m; j++) {
            float v = elem == 4 ? f32_at(b + 4 * j) : bf16_at(b + 2 * j);
            if (!(v >= -FLT_MAX && v <= FLT_MAX))
                return i + j;
        }
    }
    return n;
}

/* One entry's values: Q8/Q4 absmax always, fp32/bf16 states when the
 * policy keeps them finite. */
static clg_status check_entry(const clg_ckpt_entry *e, const uint8_t *bytes, const char *policy,
                              bool states_finite, char *err, size_t errlen)
{
    if (e->source <= CLG_CKPT_SRC_SCALE0) {
        for (uint64_t i = 0; i < e->count; i++) {
            float a = f32_at(bytes + 4 * i);
            if (!(a >= 0.0f && a <= FLT_MAX))
                return refuse(err, errlen,
                              "tensor '%s': absmax[%llu] is %.9g, but an absmax (the largest "
                              "magnitude in a block of states) is finite and >= 0",
                              e->key, (unsigned long long)i, (double)a);
        }
        return CLG_SUCCESS;
    }
    bool state = e->source >= CLG_ARENA_STATE0;
    size_t elem = e->dtype == CLG_CKPT_F32 ? 4 : e->dtype == CLG_CKPT_BF16 ? 2 : 0;
    if (!state || !states_finite || elem == 0)
        return CLG_SUCCESS;
    uint64_t i = first_nonfinite(bytes, e->count, elem);
    if (i == e->count)
        return CLG_SUCCESS;
    float v = elem == 4 ? f32_at(bytes + 4 * i) : bf16_at(bytes + 2 * i);
    return refuse(err, errlen,
                  "tensor '%s': element %llu is %.9g, but under the non-finite policy '%s' an "
                  "update whose gradient is not finite is skipped, so the optimizer states stay "
                  "finite",
                  e->key, (unsigned long long)i, (double)v, policy);
}

/* The loss scale and its growth tracker in the step block. */
static clg_status check_loss_scale(const clg_ckpt_loss_scale *ls, const uint32_t *sb, char *err,
                                   size_t errlen)
{
    float scale;
    memcpy(&scale, &sb[CLG_SB_LOSS_SCALE], 4);
    uint32_t growth = sb[CLG_SB_GROWTH];
    if (!(scale > 0.0f && scale <= FLT_MAX))
        return refuse(err, errlen,
                      "the step block's LOSS_SCALE is %.9g, but a loss scale is finite and > 0",
                      (double)scale);
    switch (ls->mode) {
    case CLG_LOSS_SCALE_NONE:
        if (scale != 1.0f)
            return refuse(err, errlen,
                          "the step block's LOSS_SCALE is %.9g, but without loss scaling it "
                          "stays 1",
                          (double)scale);
        break;
    case CLG_LOSS_SCALE_STATIC:
        if (scale != ls->init)
            return refuse(err, errlen,
                          "the step block's LOSS_SCALE is %.9g, but a static loss scale stays "
                          "loss_scale_init %.9g",
                          (double)scale, (double)ls->init);
        break;
    case CLG_LOSS_SCALE_DYNAMIC:
        if (scale != ls->init && !(scale >= ls->min && scale <= ls->max))
            return refuse(err, errlen,
                          "the step block's LOSS_SCALE is %.9g, outside the dynamic loss "
                          "scale's range [%.9g, %.9g] (loss_scale_min, loss_scale_max)",
                          (double)scale, (double)ls->min, (double)ls->max);
        if (growth >= ls->interval)
            return refuse(err, errlen,
                          "the step block's GROWTH (clean updates since the loss scale last "
                          "changed) is %u, but the scale changes after loss_scale_interval %u "
                          "of them",
                          (unsigned)growth, ls->interval);
        if (growth > sb[CLG_SB_T])
            return refuse(err, errlen,
                          "the step block's GROWTH (clean updates since the loss scale last "
                          "changed) is %u, more than T (updates applied) %u",
                          (unsigned)growth, (unsigned)sb[CLG_SB_T]);
        return CLG_SUCCESS;
    }
    if (growth != 0)
        return refuse(err, errlen,
                      "the step block's GROWTH is %u, but only a dynamic loss scale counts "
                      "clean updates (it stays 0)",
                      (unsigned)growth);
    return CLG_SUCCESS;
}

clg_status clg__ckpt_check_values(const clg_ckpt_layout *layout, const uint8_t *data,
                                  const uint32_t *step_block, const char *policy, char *err,
                                  size_t errlen)
{
    clg_status st = step_block ? check_loss_scale(&layout->loss_scale, step_block, err, errlen)
                               : CLG_SUCCESS;
    /* a dynamic loss scale runs "ignore" as skip_update (semantics.md) */
    bool dynamic = layout->loss_scale.mode == CLG_LOSS_SCALE_DYNAMIC;
    bool states_finite = strcmp(policy, "ignore") != 0 || dynamic;
    const char *as_run = strcmp(policy, "ignore") == 0 && dynamic
                             ? "ignore' with a dynamic loss scale (skip_update)"
                             : policy;
    for (size_t i = 0; i < layout->n && st == CLG_SUCCESS; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        st = check_entry(e, data + e->file_begin, as_run, states_finite, err, errlen);
    }
    return st;
}
