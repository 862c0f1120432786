/* update.cl - the fused optimizer update, one launch per chunk covering
 * every param group in it. Reads the step block written
 * by the prologue (grad scale, skip flag, lr, bias corrections, step count);
 * reads the accumulator (path C: plus the last micro-step's gradients) and
 * the params and states once, writes params, states and the optional
 * low-precision param copy once. Semantics: docs/semantics.md.
 * Variants (-D): OPT (0 SGD, 1 Adam, 2 AdamW, 3 Lion), MOMENTUM, NESTEROV,
 * AMSGRAD, MAXIMIZE, PATH_C, G_DTYPE, ACC_DTYPE, COPY_DTYPE (3 none),
 * CLIP_VALUE, SINGLE_GROUP, STATE_DTYPE (0 fp32, 2 bf16: the format of the
 * states of this chunk; Q8/Q4 chunks are update_q.cl's), STATE_SR
 * (stochastic rounding of bf16 states), MASTER_DTYPE (0 fp32, 2 bf16
 * params, stochastic rounding as llm.c's). The parameter list
 * (UPDATE_PARAMS) comes from cl/layout.py. */

#define OPT_SGD 0
#define OPT_ADAM 1
#define OPT_ADAMW 2
#define OPT_LION 3

#ifndef OPT
#define OPT OPT_ADAMW
#endif
#ifndef MOMENTUM
#define MOMENTUM 0
#endif
#ifndef NESTEROV
#define NESTEROV 0
#endif
#ifndef AMSGRAD
#define AMSGRAD 0
#endif
#ifndef MAXIMIZE
#define MAXIMIZE 0
#endif
#ifndef PATH_C
#define PATH_C 0
#endif
#ifndef COPY_DTYPE
#define COPY_DTYPE 3
#endif
#ifndef CLIP_VALUE
#define CLIP_VALUE 0
#endif

#ifndef SINGLE_GROUP
#define SINGLE_GROUP 1
#endif
#ifndef STATE_DTYPE
#define STATE_DTYPE 0
#endif
#ifndef STATE_SR
#define STATE_SR 0
#endif
#ifndef MASTER_DTYPE
#define MASTER_DTYPE 0
#endif

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
#if !SINGLE_GROUP
    const float2 gp = group_params[get_group_id(0)];
    lr_mult = gp.x;
    wd = gp.y;
#else
    (void)group_params;
#endif
    const uint skip = sb[SB_SKIP];
    const float scale = sb_float(sb, SB_GRAD_SCALE);
    const float lr = sb_float(sb, SB_LR) * lr_mult;
    const uint step = sb[SB_T];
    /* per-update scalars (bias corrections come from the prologue) */
    const float step_size = lr / sb_float(sb, SB_BC1);
    const float bc2_sqrt = sb_float(sb, SB_BC2_SQRT);
    const float decay = 1.0f - lr * wd;

#if PATH_C
    /* acc_empty: a one-micro-step cycle, the accumulator holds nothing */
    float4 a = w_last * load_grad4(g, i);
    if (!acc_empty)
        a += load_acc4(acc, i);
#else
    float4 a = load_acc4(acc, i);
#endif
    float4 gr = a * scale;
#if CLIP_VALUE
    gr = clamp(gr, -clip_value, clip_value);
#endif
#if MAXIMIZE
    gr = -gr;
#endif
    const praw4 p_raw = load_p_raw(p, i);
    const float4 p_old = p_decode(p_raw);
    float4 pv = p_old;

    /* the states before this update, in fp32 */
#if OPT != OPT_SGD || MOMENTUM
    const sraw4 s0_raw = load_s_raw(s0, i);
    const float4 s0_old = s_decode(s0_raw);
#if OPT == OPT_ADAM || OPT == OPT_ADAMW
    const sraw4 s1_raw = load_s_raw(s1, i);
    const float4 s1_old = s_decode(s1_raw);
#endif
#endif
    float4 s0_new = 0.0f, s1_new = 0.0f;

#if OPT == OPT_SGD
    if (wd != 0.0f)
        gr += wd * pv;
#if MOMENTUM
    s0_new = step == 1u ? gr : momentum * s0_old + (1.0f - dampening) * gr;
#if NESTEROV
    gr += momentum * s0_new;
#else
    gr = s0_new;
#endif
#endif
    pv -= lr * gr;

#elif OPT == OPT_ADAM || OPT == OPT_ADAMW
#if OPT == OPT_ADAM
    if (wd != 0.0f)
        gr += wd * pv;
#else
    pv *= decay;
#endif
    s0_new = s0_old + (1.0f - beta1) * (gr - s0_old); /* torch: exp_avg.lerp_(grad, 1 - beta1) */
    s1_new = beta2 * s1_old + (1.0f - beta2) * gr * gr;
    float4 v = s1_new;
#if AMSGRAD
    const float4 vmax_old = vload4(i, s2);
    v = fmax(vmax_old, v);
    vstore4(skip ? vmax_old : v, i, s2);
#endif
    pv -= step_size * (s0_new / (sqrt(v) / bc2_sqrt + eps));

#elif OPT == OPT_LION
    pv *= decay;
    pv -= lr * sign(beta1 * s0_old + (1.0f - beta1) * gr);
    s0_new = beta2 * s0_old + (1.0f - beta2) * gr;
#endif

#if MASTER_DTYPE == DT_BF16
    const praw4 p_new = float_to_bf16x4_sr(pv, random4(seed, 0x2c1b3c6du, i));
#else
    const praw4 p_new = pv;
#endif
    store_p_raw(p, i, skip ? p_raw : p_new);
#if COPY_DTYPE == DT_FP16
    vstore_half4_rte(pv, i, (global half *)copy);
#elif COPY_DTYPE == DT_BF16
    vstore4(float_to_bf16x4_rne(pv), i, (global ushort *)copy);
#endif

    /* the new states, stored once (a skipped update stores the old bits) */
#if OPT != OPT_SGD || MOMENTUM
    store_s_raw(s0, i, skip ? s0_raw : s_encode(s0_new, random4(seed, 0x68e31da4u, i)));
#if OPT == OPT_ADAM || OPT == OPT_ADAMW
    store_s_raw(s1, i, skip ? s1_raw : s_encode(s1_new, random4(seed, 0xb5297a4du, i)));
#endif
#endif
    (void)g;
    (void)w_last;
    (void)acc_empty;
    (void)s0;
    (void)s1;
    (void)s2;
    (void)s0_scale;
    (void)s1_scale;
    (void)seed;
    (void)n4;
    (void)copy;
    (void)momentum;
    (void)dampening;
    (void)clip_value;
    (void)beta1;
    (void)beta2;
    (void)eps;
    (void)step;
    (void)step_size;
    (void)bc2_sqrt;
    (void)decay;
    (void)s0_new;
    (void)s1_new;
}
