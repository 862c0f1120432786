/* update_q.cl - the fused optimizer update of a chunk whose states are Q8
 * or Q4 (docs/design.md, "Quantized states"). One work-item per absmax
 * block, 16 elements at a time: it reads each state code, the block's
 * absmax, the accumulator and the params once; updates in fp32 (optim.cl's
 * step, as update.cl); writes the params and keeps the block's new
 * states in private memory while it reduces their absmax, then writes each
 * state as the code of the nearest map value of state / absmax (ties to the
 * smaller magnitude), or stochastically one of its two neighbours, and the
 * new absmax. No barrier and no table lookup: on CPUs (PoCL) a work-group
 * barrier and a gather from a table each cost more than the whole fp32
 * update (measured), so the maps are evaluated arithmetically.
 *
 * Variants (-D): optim.cl's, STATE_DTYPE DT_Q8 (and the default) or DT_Q4.
 * The maps:
 *   Q8: bitsandbytes' create_dynamic_map, evaluated in fp32 as
 *       10^(d-6) * (0.1 + (2k + 1) * 0.45 / n) for the k-th of the n codes
 *       of decade d (signed: n = 2^d; unsigned: n = 2^(d+1)), plus 0 and 1;
 *       src/qmaps.c computes the same values for the host;
 *   Q4: the 16 values of src/qmaps.c as constants.
 * Contraction into fma is off, so that the host's values are the kernel's
 * bit for bit. The parameter list (UPDATE_PARAMS) comes from cl/layout.py;
 * n4 bounds the launch, which is rounded up to whole work-groups. */
#pragma OPENCL FP_CONTRACT OFF

#define QBLOCK (STATE_DTYPE == DT_Q4 ? 128 : 256) /* elements per absmax */
#define QSTEPS (QBLOCK / 16)
/* states that are quantized: m and v of Adam, else the one state (SGD
 * without momentum has none, so never a Q8/Q4 chunk) */
#define QSTATES (OPT_STATES == 2 ? 2 : 1)

typedef float16 vf;
typedef int16 vi;
typedef uint16 vu;

/* The maps' functions must fold into the loops (their `uns` argument is a
 * constant at every call): PoCL's inliner leaves the largest as calls. */
#define QFN CLG_INLINE /* common.cl */

/* ---- 16-wide loads and stores of the other arrays */

CLG_BF16_FUNCS(x16, 16) /* common.cl */

CLG_LOAD_FUNCS(16) /* common.cl: load_grad16, load_acc16 */
CLG_OPTIM_FUNCS(16) /* optim.cl, with contraction off as above */

/* 16 random words for the elements of one step, per stream */
QFN vu random16(uint seed, uint stream, ulong e)
{
    uint base = hash_u32(seed ^ stream ^ (uint)(e * 16u));
    return hash_u32x16((vu)(base) +
                       (vu)(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 16u));
}

/* ---- Q8: the dynamic maps, evaluated */

#if STATE_DTYPE != DT_Q4
#define Q_01 0x1.99999ap-4f  /* 0.1f */
#define Q_045 0x1.ccccccp-2f /* 0.45f */
#define Q_109 0x1.1c71c8p+0f /* 1 / 0.9 (the estimate only) */

/* 10^(d-6) for decade d in 0..6 (a chain of selects: a gather from a
 * table, or a shuffle with a mask from the data, measured slower) */
QFN vf pow10_of(vi d)
{
    vf s = (vf)(0x1.0c6f7ap-20f);
    s = select(s, (vf)(0x1.4f8b58p-17f), d >= 1);
    s = select(s, (vf)(0x1.a36e2ep-14f), d >= 2);
    s = select(s, (vf)(0x1.0624dep-10f), d >= 3);
    s = select(s, (vf)(0x1.47ae14p-7f), d >= 4);
    s = select(s, (vf)(0x1.99999ap-4f), d >= 5);
    return select(s, (vf)(1.0f), d >= 6);
}

QFN float pow10_of1(int d)
{
    return d <= 0 ? 0x1.0c6f7ap-20f : d == 1 ? 0x1.4f8b58p-17f : d == 2 ? 0x1.a36e2ep-14f
           : d == 3 ? 0x1.0624dep-10f : d == 4 ? 0x1.47ae14p-7f : d == 5 ? 0x1.99999ap-4f : 1.0f;
}

/* Magnitude index j of a map: signed j = |code - 127| (0: zero, 128: one),
 * unsigned j = code + 1 (1: zero, 256: one); in between, level
 * L = floor(log2 j) holds n = 2^L codes of decade L (signed) or L - 1. */
#define JZERO(uns) ((uns) ? 1 : 0)
#define JONE(uns) ((uns) ? 256 : 128)

QFN vf q8_mag(vi j, int uns)
{
    vi jj = max(j, (vi)(1));
    vi level = (as_int16(convert_float16(jj)) >> 23) - 127;
    vi n = (vi)(1) << level;
    vf h = Q_045 * as_float16((127 - level) << 23);
    vf v = pow10_of(uns ? level - 1 : level) * (Q_01 + convert_float16(2 * (jj - n) + 1) * h);
    v = select(v, (vf)(0.0f), j == JZERO(uns));
    return select(v, (vf)(1.0f), j >= JONE(uns));
}

/* the same for one index (the thresholds below) */
QFN float q8_mag1(int j, int uns)
{
    if (j == JZERO(uns))
        return 0.0f;
    if (j >= JONE(uns))
        return 1.0f;
    int level = 31 - (int)clz((uint)j);
    int n = 1 << level;
    float h = Q_045 * as_float((uint)(127 - level) << 23);
    return pow10_of1(uns ? level - 1 : level) * (Q_01 + (float)(2 * (j - n) + 1) * h);
}

QFN vf q_decode(vi c, int uns)
{
    if (uns)
        return q8_mag(c + 1, 1);
    vf v = q8_mag(select(c - 127, 127 - c, c < 127), 0);
    return select(v, -v, c < 127);
}

/* The boundaries between decades, and those next to 0 and 1: t[0] =
 * (0 + first) / 2, t[d] between decade d-1 and d, t[7] = (last + 1) / 2,
 * each as (map[c] + map[c + 1]) * 0.5f of the host's table. */
typedef struct q8_bounds {
    float t[8];
} q8_bounds;

QFN q8_bounds q8_thresholds(int uns)
{
    q8_bounds b;
    b.t[0] = (0.0f + q8_mag1(JZERO(uns) + 1, uns)) * 0.5f;
    for (int d = 1; d < 7; d++) {
        int first = 1 << (uns ? d + 1 : d); /* j of the first code of decade d */
        b.t[d] = (q8_mag1(first - 1, uns) + q8_mag1(first, uns)) * 0.5f;
    }
    b.t[7] = (q8_mag1(JONE(uns) - 1, uns) + 1.0f) * 0.5f;
    return b;
}

/* The nearest code of x in [-1, 1], ties to the smaller magnitude. Decade
 * by exact comparisons with the thresholds; within it, the code from the
 * linear position of x (the boundaries of a decade's codes are its
 * linspace points), corrected against the exact fp32 boundaries only where
 * the position lies within 2^-12 of an integer (its error is below 1e-4):
 * rare, so a branch. */
QFN vi q_encode(vf x, int uns, const q8_bounds *b)
{
    vf a = fabs(x);
    vi m1 = a > b->t[1], m2 = a > b->t[2], m3 = a > b->t[3];
    vi m4 = a > b->t[4], m5 = a > b->t[5], m6 = a > b->t[6];
    vi d = -(m1 + m2 + m3 + m4 + m5 + m6);
    vf inv = (vf)(1e6f); /* 10^(6-d), from the decade's own comparisons */
    inv = select(inv, (vf)(1e5f), m1);
    inv = select(inv, (vf)(1e4f), m2);
    inv = select(inv, (vf)(1e3f), m3);
    inv = select(inv, (vf)(1e2f), m4);
    inv = select(inv, (vf)(1e1f), m5);
    inv = select(inv, (vf)(1.0f), m6);
    vi level = uns ? d + 1 : d;
    vi n = (vi)(1) << level;
    vf nf = as_float16((level + 127) << 23);
    vf pos = (a * inv - Q_01) * (nf * Q_109);
    vi k = clamp(convert_int16(pos), (vi)(0), n - 1);
    vf frac = pos - convert_float16(convert_int16(pos));
    if (any(fabs(frac - 0.5f) > 0.5f - 0x1p-12f)) {
        vf s = pow10_of(d), h = Q_045 * as_float16((127 - level) << 23);
        vf kf = convert_float16(k);
        vf v0 = s * (Q_01 + (2.0f * kf + 1.0f) * h);
        vf vm = s * (Q_01 + (2.0f * kf - 1.0f) * h);
        vf vp = s * (Q_01 + (2.0f * kf + 3.0f) * h);
        k = k + ((k > 0) & (a <= (vm + v0) * 0.5f)) - ((k < n - 1) & (a > (v0 + vp) * 0.5f));
    }
    vi j = n + k;
    j = select(j, (vi)(JZERO(uns)), a <= b->t[0]);
    if (uns)
        return select(j, (vi)(JONE(uns)), a > b->t[7]) - 1;
    vi neg = x < 0.0f;
    j = select(j, (vi)(JONE(uns)), (a > b->t[7]) & ~neg);
    return select(127 + j, 127 - j, neg);
}

#define QK 256

/* ---- Q4: 16 values as constants */
#else
#define QK 16
typedef struct q8_bounds {
    float t[16]; /* the boundaries of the map in use */
} q8_bounds;

/* signed (m): create_dynamic_map(True, 3, 4) without its padding */
#define Q4S0 -0x1.c66666p-1f
#define Q4S1 -0x1.533334p-1f
#define Q4S2 -0x1.cp-2f
#define Q4S3 -0x1.b33332p-3f
#define Q4S4 -0x1.3d70a4p-4f
#define Q4S5 -0x1.0a3d72p-5f
#define Q4S6 -0x1.6872bp-8f
#define Q4S7 0.0f
#define Q4S8 0x1.6872bp-8f
#define Q4S9 0x1.0a3d72p-5f
#define Q4S10 0x1.3d70a4p-4f
#define Q4S11 0x1.b33332p-3f
#define Q4S12 0x1.cp-2f
#define Q4S13 0x1.533334p-1f
#define Q4S14 0x1.c66666p-1f
#define Q4S15 0x1p+0f

/* (a chain rather than an array: Oclgrind cannot run the copy of a
 * private array's initializer that LLVM makes of one) */
QFN float q4_value1(int c, int uns)
{
    if (uns)
        return (float)(c + 1) * 0.0625f;
    return c <= 0 ? Q4S0 : c == 1 ? Q4S1 : c == 2 ? Q4S2 : c == 3 ? Q4S3 : c == 4 ? Q4S4
         : c == 5 ? Q4S5 : c == 6 ? Q4S6 : c == 7 ? Q4S7 : c == 8 ? Q4S8 : c == 9 ? Q4S9
         : c == 10 ? Q4S10 : c == 11 ? Q4S11 : c == 12 ? Q4S12 : c == 13 ? Q4S13
         : c == 14 ? Q4S14 : Q4S15;
}

/* The signed map is symmetric but for its 1 (code 15): by magnitude, code
 * 7 + j holds Q4S(7 + j) and code 7 - j its negative. */
QFN vf q_decode(vi c, int uns)
{
    if (uns)
        return (convert_float16(c) + 1.0f) * 0.0625f; /* (c + 1) / 16 */
    vi neg = c < 7;
    vi j = select(c - 7, 7 - c, neg);
    vf v = (vf)(Q4S7);
    v = select(v, (vf)(Q4S8), j >= 1);
    v = select(v, (vf)(Q4S9), j >= 2);
    v = select(v, (vf)(Q4S10), j >= 3);
    v = select(v, (vf)(Q4S11), j >= 4);
    v = select(v, (vf)(Q4S12), j >= 5);
    v = select(v, (vf)(Q4S13), j >= 6);
    v = select(v, (vf)(Q4S14), j >= 7);
    v = select(v, (vf)(Q4S15), j >= 8);
    return select(v, -v, neg);
}

/* t[c]: the boundary between codes c and c + 1, as the host's table has
 * it ((map[c] + map[c + 1]) * 0.5f) */
QFN q8_bounds q8_thresholds(int uns)
{
    q8_bounds b;
    for (int c = 0; c < 15; c++)
        b.t[c] = (q4_value1(c, uns) + q4_value1(c + 1, uns)) * 0.5f;
    b.t[15] = INFINITY;
    return b;
}

/* The nearest code, ties to the smaller magnitude. Unsigned: the
 * boundaries are (2c + 3) / 32, so the code is the number of integers
 * below 16 x - 1.5 (exact in fp32 wherever it matters, 16 x >= 1.5).
 * Signed: by magnitude against the boundaries of the positive half (those
 * of the negative half are their negatives, exactly). */
QFN vi q_encode(vf x, int uns, const q8_bounds *b)
{
    if (uns) {
        vf t = x * 16.0f - 1.5f;
        vi k = convert_int16(t);
        return clamp(k - (t > convert_float16(k)), (vi)(0), (vi)(15));
    }
    vf a = fabs(x);
    vi j = -((a > b->t[7]) + (a > b->t[8]) + (a > b->t[9]) + (a > b->t[10]) + (a > b->t[11]) +
             (a > b->t[12]) + (a > b->t[13]));
    vi neg = x < 0.0f;
    return select(7 + j - ((a > b->t[14]) & ~neg), 7 - j, neg);
}

#endif

/* Codes in memory, 16 bytes at a time. Q8: one per byte, one step of 16
 * elements. Q4: two per byte, planar within each 32 elements (byte j of a
 * 16-byte group holds element j in its low nibble and element 16 + j in its
 * high one), so that a step's codes are a mask or a shift of the group's
 * bytes and no lane is moved (Oclgrind's --uninitialized check cannot run
 * lane shuffles either). QRAWS: 16-byte groups per block. */
#if STATE_DTYPE != DT_Q4
#define QRAWS QSTEPS
#define QRAW_OF(j) (j)
QFN vi q_codes(uchar16 r, int j)
{
    (void)j;
    return convert_int16(r);
}
#else
#define QRAWS (QSTEPS / 2)
#define QRAW_OF(j) ((j) / 2)
QFN vi q_codes(uchar16 r, int j) { return convert_int16(j & 1 ? r >> (uchar)4 : r & (uchar)15); }
#endif

/* Stochastic rounding: the neighbour below or above x, with the probability
 * that makes the expected value x (beyond either end of the map: the end). */
QFN vi q_round_sr(vf x, vi c, int uns, vu random)
{
    vf vc = q_decode(c, uns);
    vi lo = select(c, c - 1, (vc > x) & (c > 0));
    vi hi = min(lo + 1, (vi)(QK - 1));
    vf a = q_decode(lo, uns), b = q_decode(hi, uns);
    vf u = convert_float16(random >> 8) * 0x1p-24f;
    return select(lo, hi, (hi != lo) & (u * (b - a) < x - a));
}

QFN vi q_quantize(vf v, float absmax, int uns, const q8_bounds *b, vu random)
{
    /* an all-zero block: the code of zero with absmax 0 */
    float recip = absmax > 0.0f ? 1.0f / absmax : 0.0f;
    vf x = clamp(v * recip, -1.0f, 1.0f);
    vi c = q_encode(x, uns, b);
#if STATE_SR
    c = q_round_sr(x, c, uns, random);
#else
    (void)random;
#endif
    return c;
}

/* the largest |v| of a block, a NaN winning (so that it survives) */
typedef struct qmax_acc {
    vf max;
    vi nan;
} qmax_acc;

QFN void qmax_add(qmax_acc *m, vf v)
{
    m->max = fmax(m->max, fabs(v));
    m->nan |= isnan(v);
}

/* Through private memory rather than .lo/.hi: Oclgrind 21.10's
 * --uninitialized check takes the halves of a vector for uninitialized. */
QFN float qmax_result(const qmax_acc *m)
{
    float lanes[16];
    vstore16(m->max, 0, lanes);
    float r = lanes[0];
    for (int k = 1; k < 16; k++)
        r = fmax(r, lanes[k]);
    return any(m->nan) ? NAN : r;
}

/* The 16 bytes of codes of group r of a block's new states `news` (one
 * step of 16 elements; Q4: two, in the low and high nibbles), with the
 * random words of stream `stream` from element 16 e on. */
QFN uchar16 q_group(const vf *news, int r, float absmax, int uns, const q8_bounds *b, uint seed,
                    uint stream, ulong e)
{
    vi c = q_quantize(news[r * (QSTEPS / QRAWS)], absmax, uns, b, random16(seed, stream, e));
#if STATE_DTYPE == DT_Q4
    c |= q_quantize(news[2 * r + 1], absmax, uns, b, random16(seed, stream, e + 1)) << 4;
#endif
    return convert_uchar16(c);
}

kernel void update_q(UPDATE_PARAMS)
{
    const ulong blk = get_global_id(0); /* the absmax block of this work-item */
    if (blk >= n4 * 4 / QBLOCK)
        return;
    /* group_params has a row per 4 * WG elements (update.cl's work-groups) */
    const optim_hyper h = optim_hyper16(sb, group_params, blk * QBLOCK / (4 * WG), lr_mult, wd,
                                        beta1, beta2, eps, momentum, dampening, clip_value);

    const q8_bounds bounds0 = q8_thresholds(0);
    const float am0_old = s0_scale[blk];
    qmax_acc max0 = {(vf)(0.0f), (vi)(0)};
    vf new0[QSTEPS];
#if QSTATES == 2
    const q8_bounds bounds1 = q8_thresholds(1);
    const float am1_old = s1_scale[blk];
    qmax_acc max1 = {(vf)(0.0f), (vi)(0)};
    vf new1[QSTEPS];
#endif
    uchar16 old0[QRAWS];
#if QSTATES == 2
    uchar16 old1[QRAWS];
#endif

    /* pass 1: the update, the params written, the new states kept */
    for (int j = 0; j < QSTEPS; j++) {
        const ulong e = blk * QSTEPS + (ulong)j; /* in units of 16 elements */
        const vf gr = optim_grad16(acc, g, e, w_last, acc_empty, &h);
#if MASTER_DTYPE == DT_BF16
        const ushort16 p_raw = vload16(e, (global ushort *)p);
        const vf p_old = bf16x16_to_float(p_raw);
#else
        const vf p_old = vload16(e, (global float *)p);
#endif
        const ulong r = blk * QRAWS + (ulong)QRAW_OF(j); /* its 16 bytes of codes */
        if (QRAW_OF(j) * (QSTEPS / QRAWS) == j) {
            old0[QRAW_OF(j)] = vload16(r, (global const uchar *)s0);
#if QSTATES == 2
            old1[QRAW_OF(j)] = vload16(r, (global const uchar *)s1);
#endif
        }
        /* the states before this update, then after it */
        vf st0 = q_decode(q_codes(old0[QRAW_OF(j)], j), 0) * am0_old, st1 = 0.0f;
#if QSTATES == 2
        st1 = q_decode(q_codes(old1[QRAW_OF(j)], j), 1) * am1_old;
#endif
        const vf pv = optim_step16(gr, p_old, &st0, &st1, s2, e, &h);

#if MASTER_DTYPE == DT_BF16
        vstore16(h.skip ? p_raw : float_to_bf16x16_sr(pv, random16(seed, 0x2c1b3c6du, e)), e,
                 (global ushort *)p);
#else
        vstore16(h.skip ? p_old : pv, e, (global float *)p);
#endif
#if COPY_DTYPE == DT_FP16
        vstore_half16_rte(pv, e, (global half *)copy);
#elif COPY_DTYPE == DT_BF16
        vstore16(float_to_bf16x16_rne(pv), e, (global ushort *)copy);
#endif
        new0[j] = st0;
        qmax_add(&max0, st0);
#if QSTATES == 2
        new1[j] = st1;
        qmax_add(&max1, st1);
#endif
    }

    /* pass 2: the block's absmax, then every code (a skipped update
     * stores the old bits) */
    const float am0 = qmax_result(&max0);
#if QSTATES == 2
    const float am1 = qmax_result(&max1);
#endif
    for (int r = 0; r < QRAWS; r++) {
        const ulong e = blk * QSTEPS + (ulong)(r * (QSTEPS / QRAWS));
        const ulong at = blk * QRAWS + (ulong)r;
        const uchar16 c0 = q_group(new0, r, am0, 0, &bounds0, seed, 0x68e31da4u, e);
        vstore16(h.skip ? old0[r] : c0, at, (global uchar *)s0);
#if QSTATES == 2
        const uchar16 c1 = q_group(new1, r, am1, 1, &bounds1, seed, 0xb5297a4du, e);
        vstore16(h.skip ? old1[r] : c1, at, (global uchar *)s1);
#endif
    }
    s0_scale[blk] = h.skip ? am0_old : am0;
#if QSTATES == 2
    s1_scale[blk] = h.skip ? am1_old : am1;
#endif
    (void)s1;
    (void)s1_scale;
    (void)seed;
    (void)copy;
}
