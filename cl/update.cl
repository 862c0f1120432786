/* update.cl - the fused optimizer update, one launch per chunk covering
 * every param group in it (through a table of segments). Reads the step block written
 * by the prologue (grad scale, skip flag, lr, bias corrections, step count);
 * reads the accumulator (path C: plus the last micro-step's gradients) and
 * the params and states once, writes params, states and the optional
 * low-precision param copy once. Semantics: docs/semantics.md.
 * Variants (-D): OPT (0 SGD, 1 Adam, 2 AdamW, 3 Lion), MOMENTUM, NESTEROV,
 * AMSGRAD, MAXIMIZE, PATH_C, G_DTYPE, ACC_DTYPE, COPY_DTYPE (3 none),
 * CLIP_VALUE. */

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

/* One segment per row: x = first float4, y = float4 count, z = first
 * work-group of the segment, w = lr_mult bits | weight decay bits << 32.
 * A work-group finds its segment by binary search (uniform per group), so
 * all groups of a chunk share one launch; each work-item updates one float4. */
inline ulong4 find_segment(global const ulong4 *segs, uint n_segs, ulong group)
{
    uint lo = 0, hi = n_segs - 1;
    while (lo < hi) {
        uint mid = (lo + hi + 1) / 2;
        if (segs[mid].z <= group)
            lo = mid;
        else
            hi = mid - 1;
    }
    return segs[lo];
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void update(global float *p, global const void *acc, global const void *g,
                   float w_last, uint acc_empty, global float *s0, global float *s1,
                   global float *s2, global void *copy, global const ulong4 *segs,
                   uint n_segs, float beta1, float beta2, float eps, float momentum,
                   float dampening, float clip_value, global const uint *sb)
{
    if (sb[SB_SKIP])
        return;
    const ulong4 seg = find_segment(segs, n_segs, get_group_id(0));
    const ulong off4 = seg.x;
    const ulong n4 = seg.y;
    const ulong j = (get_group_id(0) - seg.z) * get_local_size(0) + get_local_id(0);
    if (j >= n4)
        return;
    const float lr_mult = as_float((uint)seg.w);
    const float wd = as_float((uint)(seg.w >> 32));
    const float scale = sb_float(sb, SB_GRAD_SCALE);
    const float lr = sb_float(sb, SB_LR) * lr_mult;
    const uint step = sb[SB_T];
    /* per-update scalars (bias corrections come from the prologue) */
    const float step_size = lr / sb_float(sb, SB_BC1);
    const float bc2_sqrt = sb_float(sb, SB_BC2_SQRT);
    const float decay = 1.0f - lr * wd;

    const ulong i = off4 + j;
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
    float4 pv = vload4(i, p);

#if OPT == OPT_SGD
    if (wd != 0.0f)
        gr += wd * pv;
#if MOMENTUM
    float4 buf = step == 1u ? gr : momentum * vload4(i, s0) + (1.0f - dampening) * gr;
    vstore4(buf, i, s0);
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
    float4 m = vload4(i, s0);
    float4 v = vload4(i, s1);
    m += (1.0f - beta1) * (gr - m); /* torch: exp_avg.lerp_(grad, 1 - beta1) */
    v = beta2 * v + (1.0f - beta2) * gr * gr;
    vstore4(m, i, s0);
    vstore4(v, i, s1);
#if AMSGRAD
    v = fmax(vload4(i, s2), v);
    vstore4(v, i, s2);
#endif
    pv -= step_size * (m / (sqrt(v) / bc2_sqrt + eps));

#elif OPT == OPT_LION
    pv *= decay;
    float4 m = vload4(i, s0);
    pv -= lr * sign(beta1 * m + (1.0f - beta1) * gr);
    vstore4(beta2 * m + (1.0f - beta2) * gr, i, s0);
#endif
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
