/* accumulate.cl - the micro-step: acc = w*g on the first micro-step of a
 * cycle (acc is not read), acc += w*g after. Variants (-D):
 *   G_DTYPE    0 fp32, 1 fp16, 2 bf16 gradients
 *   ACC_DTYPE  0 fp32, 2 bf16 (stochastic rounding) accumulator
 *   STATS      1: also write the sum of squares of the new accumulator per
 *              work-group (fused statistics: no extra read)
 *   SKIP_MICRO 1: read the micro-step verdict from the step block
 *              (0 drop, 1 add, 2 first write) instead of the `first` argument
 *   WG, ITEMS  work-group size (power of two); float4s per work-item of a
 *              reduction pass
 * Elements are processed as float4: chunks are padded to whole work-groups.
 * The dtype helpers and the reduction live in common.cl; the parameter
 * lists (ACCUMULATE_PARAMS, REDUCE_PARAMS) come from cl/layout.py. */

inline float4 accumulate4(global void *acc, global const void *g, float w, uint first,
                          ulong i, uint seed)
{
    float4 v = w * load_grad4(g, i);
    if (!first)
        v += load_acc4(acc, i);
    return store_acc4(acc, i, v, seed);
}

#if STATS
/* With statistics: each work-item takes ITEMS float4s (see common.cl) and
 * the group writes the sum of squares of the new accumulator values. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void accumulate(ACCUMULATE_PARAMS)
{
    (void)sb;
    float4 ss = (float4)(0.0f);
#pragma unroll
    for (uint r = 0; r < ITEMS; r++) {
        ulong i = reduce_index(r);
        if (i < n4) {
            float4 v = accumulate4(acc, g, w, first, i, seed);
            ss += v * v;
        }
    }
    local float scratch[WG];
    write_partial(sum4(ss), scratch, partials, pbase);
}
#else
/* One float4 per work-item: no loop, so the compiler may vectorize across
 * work-items (PoCL) and every access is coalesced (GPUs). */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void accumulate(ACCUMULATE_PARAMS)
{
#if SKIP_MICRO
    uint verdict = sb[SB_MICRO_OK];
    if (verdict == 0u)
        return;
    first = verdict == 2u;
#else
    (void)sb;
#endif
    (void)partials;
    (void)pbase;
    ulong i = get_global_id(0);
    if (i < n4)
        accumulate4(acc, g, w, first, i, seed);
}
#endif

/* SKIP_MICRO: the sum of squares of one micro-step's gradient, whose
 * finiteness decides whether the micro-step is added. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void check_finite(REDUCE_PARAMS)
{
    local float scratch[WG];
    write_partial(sum4(sumsq_pass(src, n4, 1)), scratch, partials, pbase);
}
