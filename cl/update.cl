/* update.cl - the fused optimizer update of a chunk whose states are fp32
 * or bf16, one launch per chunk covering every param group in it. Reads
 * the step block written by the prologue, the accumulator (path C: plus
 * the last micro-step's gradients) and the params and states once; writes
 * params, states and the optional low-precision param copy once. The step
 * itself, its variants (-D) and their defaults are optim.cl's, embedded in
 * front of this file; here: how the params (fp32, or bf16 master weights
 * with llm.c's stochastic rounding) and the states (STATE_DTYPE DT_FP32 or
 * DT_BF16, STATE_SR: stochastic rounding) are stored. Q8/Q4 chunks are
 * update_q.cl's. The parameter list (UPDATE_PARAMS) comes from
 * cl/layout.py. Semantics: docs/semantics.md. */

CLG_OPTIM_FUNCS(4) /* optim.cl, with this file's (default) contraction */

/* ---- params: fp32, or bf16 master weights (llm.c's stochastic rounding) */

#if MASTER_DTYPE == DT_BF16
typedef ushort4 praw4;
inline praw4 load_p_raw(global void *p, ulong i) { return vload4(i, (global ushort *)p); }
inline float4 p_decode(praw4 r) { return bf16x4_to_float(r); }
inline void store_p_raw(global void *p, ulong i, praw4 r) { vstore4(r, i, (global ushort *)p); }
#else
typedef float4 praw4;
inline praw4 load_p_raw(global void *p, ulong i) { return vload4(i, (global float *)p); }
inline float4 p_decode(praw4 r) { return r; }
inline void store_p_raw(global void *p, ulong i, praw4 r) { vstore4(r, i, (global float *)p); }
#endif

/* Four independent random words per element quad and stream: the bits
 * depend only on (seed, element), never on scheduling. */
inline uint4 random4(uint seed, uint stream, ulong i)
{
    uint base = hash_u32(seed ^ stream ^ (uint)(i * 4u));
    return hash_u32x4((uint4)(base) + (uint4)(1u, 2u, 3u, 4u));
}

/* ---- fp32 and bf16 states */

#if STATE_DTYPE == DT_BF16
typedef ushort4 sraw4;
inline sraw4 load_s_raw(global void *s, ulong i) { return vload4(i, (global ushort *)s); }
inline float4 s_decode(sraw4 r) { return bf16x4_to_float(r); }
inline sraw4 s_encode(float4 v, uint4 r)
{
#if STATE_SR
    return float_to_bf16x4_sr(v, r);
#else
    (void)r;
    return float_to_bf16x4_rne(v);
#endif
}
inline void store_s_raw(global void *s, ulong i, sraw4 r) { vstore4(r, i, (global ushort *)s); }
#else
typedef float4 sraw4;
inline sraw4 load_s_raw(global void *s, ulong i) { return vload4(i, (global float *)s); }
inline float4 s_decode(sraw4 r) { return r; }
inline sraw4 s_encode(float4 v, uint4 r)
{
    (void)r;
    return v;
}
inline void store_s_raw(global void *s, ulong i, sraw4 r) { vstore4(r, i, (global float *)s); }
#endif

/* One float4 per work-item; the launch covers the whole chunk, whose param
 * groups occupy whole work-groups (CLG_SEGMENT_ALIGN), so the global index
 * is the float4 index and there is no bounds check. A chunk of one group
 * takes lr_mult and weight decay as arguments (SINGLE_GROUP); otherwise
 * each work-group reads its group's pair from group_params. No early
 * return and restrict pointers: together they let PoCL vectorize across
 * work-items (measured: 27% faster at N = 2^24). A skipped update stores
 * the old values back, bitwise unchanged. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void update(UPDATE_PARAMS)
{
    const ulong i = get_global_id(0);
    const optim_hyper h = optim_hyper4(sb, group_params, get_group_id(0), lr_mult, wd, beta1,
                                       beta2, eps, momentum, dampening, clip_value);
    const float4 gr = optim_grad4(acc, g, i, w_last, acc_empty, &h);
    const praw4 p_raw = load_p_raw(p, i);

    /* the states before this update, in fp32 */
    float4 st0 = 0.0f, st1 = 0.0f;
#if OPT_STATES >= 1
    const sraw4 s0_raw = load_s_raw(s0, i);
    st0 = s_decode(s0_raw);
#endif
#if OPT_STATES == 2
    const sraw4 s1_raw = load_s_raw(s1, i);
    st1 = s_decode(s1_raw);
#endif
    const float4 pv = optim_step4(gr, p_decode(p_raw), &st0, &st1, s2, i, &h);

#if MASTER_DTYPE == DT_BF16
    const praw4 p_new = float_to_bf16x4_sr(pv, random4(seed, 0x2c1b3c6du, i));
#else
    const praw4 p_new = pv;
#endif
    store_p_raw(p, i, h.skip ? p_raw : p_new);
#if COPY_DTYPE == DT_FP16
    vstore_half4_rte(pv, i, (global half *)copy);
#elif COPY_DTYPE == DT_BF16
    vstore4(float_to_bf16x4_rne(pv), i, (global ushort *)copy);
#endif

    /* the new states, stored once (a skipped update stores the old bits) */
#if OPT_STATES >= 1
    store_s_raw(s0, i, h.skip ? s0_raw : s_encode(st0, random4(seed, 0x68e31da4u, i)));
#endif
#if OPT_STATES == 2
    store_s_raw(s1, i, h.skip ? s1_raw : s_encode(st1, random4(seed, 0xb5297a4du, i)));
#endif
    (void)s0;
    (void)s1;
    (void)s0_scale;
    (void)s1_scale;
    (void)seed;
    (void)n4;
    (void)copy;
}
