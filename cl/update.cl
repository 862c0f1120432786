/* update.cl - the fused optimizer update, one launch per chunk covering
 * every param group in it. Reads the step block written
 * by the prologue (grad scale, skip flag, lr, bias corrections, step count);
 * reads the accumulator (path C: plus the last micro-step's gradients) and
 * the params and states once, writes params, states and the optional
 * low-precision param copy once. Semantics: docs/semantics.md.
 * Variants (-D): OPT (0 SGD, 1 Adam, 2 AdamW, 3 Lion), MOMENTUM, NESTEROV,
 * AMSGRAD, MAXIMIZE, PATH_C, G_DTYPE, ACC_DTYPE, COPY_DTYPE (3 none),
 * CLIP_VALUE, SINGLE_GROUP. The parameter list (UPDATE_PARAMS) comes from
 * cl/layout.py. */

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
    const float4 p_old = vload4(i, p);
    float4 pv = p_old;

#if OPT == OPT_SGD
    if (wd != 0.0f)
        gr += wd * pv;
#if MOMENTUM
    const float4 buf_old = vload4(i, s0);
    float4 buf = step == 1u ? gr : momentum * buf_old + (1.0f - dampening) * gr;
    vstore4(skip ? buf_old : buf, i, s0);
#if NESTEROV
    gr += momentum * buf;
#else
    gr = buf;
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
    const float4 m_old = vload4(i, s0);
    const float4 v_old = vload4(i, s1);
    float4 m = m_old + (1.0f - beta1) * (gr - m_old); /* torch: exp_avg.lerp_(grad, 1 - beta1) */
    float4 v = beta2 * v_old + (1.0f - beta2) * gr * gr;
    vstore4(skip ? m_old : m, i, s0);
    vstore4(skip ? v_old : v, i, s1);
#if AMSGRAD
    const float4 vmax_old = vload4(i, s2);
    v = fmax(vmax_old, v);
    vstore4(skip ? vmax_old : v, i, s2);
#endif
    pv -= step_size * (m / (sqrt(v) / bc2_sqrt + eps));

#elif OPT == OPT_LION
    pv *= decay;
    const float4 m_old = vload4(i, s0);
    pv -= lr * sign(beta1 * m_old + (1.0f - beta1) * gr);
    vstore4(skip ? m_old : beta2 * m_old + (1.0f - beta2) * gr, i, s0);
#endif
    pv = skip ? p_old : pv;
    vstore4(pv, i, p);

#if COPY_DTYPE == DT_FP16
    vstore_half4_rte(pv, i, (global half *)copy);
#elif COPY_DTYPE == DT_BF16
    vstore4(float4_to_bf16x4_rne(pv), i, (global ushort *)copy);
#endif
    (void)g;
    (void)w_last;
    (void)acc_empty;
    (void)s1;
    (void)s2;
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
}
