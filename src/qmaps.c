/* qmaps.c - the quantization maps of Q8 and Q4 optimizer states, sorted
 * ascending: a state element is stored as the index of the map value
 * nearest to element / absmax of its block. docs/design.md says why these.
 *   Q8: bitsandbytes' create_dynamic_map(signed=True) for m and momentum,
 *       create_dynamic_map(signed=False) for v (256 values each, 8-bit
 *       Adam's qmap1 and qmap2): 0, 1, and for decade d = 0..6 the n
 *       midpoints of linspace(0.1, 1, n + 1) times 10^(d-6), n = 2^d
 *       (signed, and mirrored) or 2^(d+1) (unsigned). clgrad evaluates
 *       them in fp32 as 10^(d-6) * (0.1 + (2k + 1) * (0.45 / n)), the
 *       expression update_q.cl computes them with (it has no table): each
 *       value within 2 fp32 spacings of torch's (tests/test_qstate_bnb.c).
 *   Q4: create_dynamic_map(signed=True, max_exponent_bits=3, total_bits=4)
 *       without its padding zeros for m (16 values), and linspace(0, 1, 17)
 *       without 0 for v: the maps of torchao's 4-bit AdamW (Li et al. 2023,
 *       "Memory efficient optimizers with 4-bit states"), whose v map has no
 *       zero, so that a small v never becomes 0 under m / sqrt(v). The
 *       values are torch's, bit for bit (the same constants are in
 *       update_q.cl). */
#include "qstate.h"

#include <math.h>

static const float q4_signed[16] = {
    -0x1.c66666p-1f, -0x1.533334p-1f, -0x1.cp-2f,    -0x1.b33332p-3f,
    -0x1.3d70a4p-4f, -0x1.0a3d72p-5f, -0x1.6872bp-8f, 0.0f,
    0x1.6872bp-8f,   0x1.0a3d72p-5f,  0x1.3d70a4p-4f, 0x1.b33332p-3f,
    0x1.cp-2f,       0x1.533334p-1f,  0x1.c66666p-1f, 0x1p+0f,
};

/* 10^(d-6) in fp32, as update_q.cl's constants */
static const float pow10_of[7] = {
    0x1.0c6f7ap-20f, 0x1.4f8b58p-17f, 0x1.a36e2ep-14f, 0x1.0624dep-10f,
    0x1.47ae14p-7f,  0x1.99999ap-4f,  1.0f,
};

/* The Q8 value of magnitude index j (signed: j = |code - 127|, 0 zero and
 * 128 one; unsigned: j = code + 1, 1 zero and 256 one). volatile: one fp32
 * rounding per operation and no contraction into fma, as the kernel's
 * (FP_CONTRACT OFF). */
static float q8_mag(int j, bool uns)
{
    if (j == (uns ? 1 : 0))
        return 0.0f;
    if (j >= (uns ? 256 : 128))
        return 1.0f;
    int level = 0;
    while ((2 << level) <= j)
        level++;
    int n = 1 << level;
    volatile float h = 0x1.ccccccp-2f * ldexpf(1.0f, -level); /* 0.45f / n, exact */
    volatile float t = (float)(2 * (j - n) + 1) * h;
    volatile float u = 0x1.99999ap-4f + t; /* 0.1f + t */
    return pow10_of[uns ? level - 1 : level] * u;
}

size_t clg__qmap_fill(clg_dtype dtype, bool is_signed, float *out)
{
    if (dtype == CLG_Q4) {
        for (int c = 0; c < 16; c++)
            out[c] = is_signed ? q4_signed[c] : (float)(c + 1) * 0.0625f;
        return 16;
    }
    for (int c = 0; c < 256; c++)
        out[c] = is_signed ? (c < 127 ? -q8_mag(127 - c, false) : q8_mag(c - 127, false))
                           : q8_mag(c + 1, true);
    return 256;
}
