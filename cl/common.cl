/* common.cl - compiled in front of every clgrad program: dtype conversions
 * and rounding, the gradient/accumulator loads selected by G_DTYPE /
 * ACC_DTYPE, and the deterministic work-group reduction of (sum of squares,
 * non-finite flag). The step block's word indices (SB_*) and the kernels'
 * parameter lists (<NAME>_PARAMS) come before it, from clg_layout.cl, which
 * the build generates from cl/layout.py, and so do the dtype codes DT_* and
 * the optimizer codes OPT_*, from clgrad.h's enums clg_dtype and
 * clg_optimizer. */

inline float sb_float(global const uint *sb, int word) { return as_float(sb[word]); }

/* bf16 <-> fp32 and the hash of stochastic rounding, one element (no
 * suffix, N empty) or a vector of N at a time (suffix xN), from one
 * definition. Every lane runs the same whole-vector operations, with no
 * branch: with a branch or a scalar call per lane PoCL runs the lanes one by
 * one (measured: bf16 states made the update 1.9x slower than fp32 states).
 *  - bf16_to_float: exact.
 *  - float_to_bf16_rne: round to nearest even; NaN stays a (quiet) NaN.
 *  - float_to_bf16_sr: stochastic rounding: adding 16 random low bits
 *    before truncation rounds up with probability equal to the dropped
 *    fraction, so E[round(x)] = x. Inf and NaN round to nearest; a finite
 *    value never rounds up to inf.
 *  - hash_u32: a counter-based hash (lowbias32): the random bits depend
 *    only on (seed, element, micro-step), never on scheduling. */
#ifdef __clang__
#define CLG_INLINE inline __attribute__((always_inline))
#else
#define CLG_INLINE inline
#endif
#define CLG_BF16_FUNCS(SUF, N)                                                                  \
    CLG_INLINE float##N bf16##SUF##_to_float(ushort##N h)                                      \
    {                                                                                           \
        return as_float##N(convert_uint##N(h) << 16);                                           \
    }                                                                                           \
    CLG_INLINE ushort##N float_to_bf16##SUF##_rne(float##N f)                                  \
    {                                                                                           \
        uint##N u = as_uint##N(f);                                                              \
        uint##N nan = (u >> 16) | 0x0040u;                                                      \
        uint##N r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                                     \
        return convert_ushort##N(select(r, nan, (u & 0x7fffffffu) > 0x7f800000u));              \
    }                                                                                           \
    CLG_INLINE ushort##N float_to_bf16##SUF##_sr(float##N f, uint##N random)                    \
    {                                                                                           \
        uint##N u = as_uint##N(f);                                                              \
        uint##N r = u + (random & 0xffffu);                                                     \
        uint##N t = select(r, u, (r & 0x7f800000u) == 0x7f800000u) >> 16;                       \
        return select(convert_ushort##N(t), float_to_bf16##SUF##_rne(f),                        \
                      convert_short##N((u & 0x7f800000u) == 0x7f800000u));                      \
    }                                                                                           \
    CLG_INLINE uint##N hash_u32##SUF(uint##N x)                                                 \
    {                                                                                           \
        x ^= x >> 16;                                                                           \
        x *= 0x7feb352du;                                                                       \
        x ^= x >> 15;                                                                           \
        x *= 0x846ca68bu;                                                                       \
        x ^= x >> 16;                                                                           \
        return x;                                                                               \
    }
CLG_BF16_FUNCS(, )
CLG_BF16_FUNCS(x4, 4)

/* ---- variant-selected loads and stores (defaults: fp32) ---- */

#ifndef G_DTYPE
#define G_DTYPE DT_FP32
#endif
#ifndef ACC_DTYPE
#define ACC_DTYPE DT_FP32
#endif
#ifndef WG
#define WG 256
#endif

/* load_gradN, load_accN: N elements (N = 4 here, 16 in update_q.cl) of
 * the gradient (G_DTYPE) or the accumulator (ACC_DTYPE) as fp32, from
 * element N i on. */
#define CLG_LOAD_FUNCS(N)                                                                       \
    CLG_INLINE float##N load_grad##N(global const void *g, ulong i)                             \
    {                                                                                           \
        if (G_DTYPE == DT_FP16)                                                                 \
            return vload_half##N(i, (global const half *)g);                                    \
        if (G_DTYPE == DT_BF16)                                                                 \
            return bf16x##N##_to_float(vload##N(i, (global const ushort *)g));                  \
        return vload##N(i, (global const float *)g);                                            \
    }                                                                                           \
    CLG_INLINE float##N load_acc##N(global const void *acc, ulong i)                            \
    {                                                                                           \
        if (ACC_DTYPE == DT_BF16)                                                               \
            return bf16x##N##_to_float(vload##N(i, (global const ushort *)acc));                \
        return vload##N(i, (global const float *)acc);                                          \
    }
CLG_LOAD_FUNCS(4)

/* Stores v and returns what was stored (the rounded value for bf16). */
inline float4 store_acc4(global void *acc, ulong i, float4 v, uint seed)
{
#if ACC_DTYPE == DT_BF16
    uint base = hash_u32(seed ^ (uint)(i * 4u));
    ushort4 h = float_to_bf16x4_sr(v, hash_u32x4((uint4)(base) + (uint4)(1u, 2u, 3u, 4u)));
    vstore4(h, i, (global ushort *)acc);
    return bf16x4_to_float(h);
#else
    (void)seed;
    vstore4(v, i, (global float *)acc);
    return v;
#endif
}

/* Reduction passes give every work-item ITEMS float4s (a fixed, unrolled
 * count: no loop for the compiler to keep), so the tree below is paid once
 * per WG * ITEMS float4s. */
#ifndef ITEMS
#define ITEMS 8
#endif

/* Work-group sum in a fixed order, so that the result is bitwise
 * reproducible; the result is valid in work-item 0 only, and a kernel calls
 * it once. One barrier and a sequential sum by work-item 0: measured on
 * PoCL, a log-depth tree with a barrier per level cost more than the whole
 * streaming part of the norm pass. Sums of squares carry the non-finite
 * check for free: an inf or NaN element (or a square that overflows fp32)
 * makes the sum inf/NaN, which is the total-norm check of PyTorch's
 * clip_grad_norm_. */
inline float group_sum(float v, local float *scratch)
{
    uint lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    float r = 0.0f;
    if (lid == 0)
        for (uint i = 0; i < WG; i++)
            r += scratch[i];
    return r;
}

/* Sum of the four lanes. (As dot() rather than lane by lane: Oclgrind
 * 21.10's --uninitialized check crashes on the lane extracts.) */
inline float sum4(float4 v) { return dot(v, (float4)(1.0f)); }

/* Writes the group's sum to partials[base + group]. */
inline void write_partial(float v, local float *scratch, global float *partials, ulong base)
{
    float r = group_sum(v, scratch);
    if (get_local_id(0) == 0)
        partials[base + get_group_id(0)] = r;
}

/* Second stage, by one work-group: partials[base .. base + n) summed with a
 * fixed assignment of partials to work-items, then group_sum (valid in
 * work-item 0). */
inline float sum_partials(global const float *partials, ulong base, uint n, local float *scratch)
{
    float acc = 0.0f;
    for (uint i = get_local_id(0); i < n; i += WG)
        acc += partials[base + i];
    return group_sum(acc, scratch);
}

/* The float4 a work-item handles in round r of a reduction pass. */
inline ulong reduce_index(uint r)
{
    return get_group_id(0) * (ulong)(WG * ITEMS) + (ulong)r * WG + get_local_id(0);
}

/* The sum of squares of the float4s a work-item takes in a reduction pass
 * over src[0 .. n4), read as the gradient (grad: G_DTYPE) or as the
 * accumulator (ACC_DTYPE): the pass of check_finite and acc_sumsq. */
CLG_INLINE float4 sumsq_pass(global const void *src, ulong n4, int grad)
{
    float4 ss = (float4)(0.0f);
#pragma unroll
    for (uint r = 0; r < ITEMS; r++) {
        ulong i = reduce_index(r);
        if (i < n4) {
            float4 v = grad ? load_grad4(src, i) : load_acc4(src, i);
            ss += v * v;
        }
    }
    return ss;
}
