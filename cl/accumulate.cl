/* accumulate.cl - the micro-step: acc = w*g on the first micro-step of a
 * cycle (acc is not read), acc += w*g after. Variants (-D):
 *   G_DTYPE    0 fp32, 1 fp16, 2 bf16 gradients
 *   ACC_DTYPE  0 fp32, 2 bf16 (stochastic rounding) accumulator
 *   STATS      1: also write sum of squares and a non-finite flag of the new
 *              accumulator per work-group (fused statistics: no extra read)
 *   SKIP_MICRO 1: read the micro-step verdict from the step block
 *              (0 drop, 1 add, 2 first write) instead of the `first` argument
 *   WG         work-group size (power of two) for the STATS reduction
 * Elements are processed as float4: chunks are padded to 16 elements.
 * The dtype helpers and the reduction live in common.cl. */

#if STATS
__attribute__((reqd_work_group_size(WG, 1, 1)))
#endif
kernel void accumulate(global void *acc, global const void *g, float w, uint first,
                       ulong n4, uint seed, global const uint *sb,
                       global float2 *partials, ulong pbase)
{
#if SKIP_MICRO
    uint verdict = sb[SB_MICRO_OK];
    first = verdict == 2u;
#else
    uint verdict = 1u;
    (void)sb;
#endif
    float ss = 0.0f;
    float nf = 0.0f;
    if (verdict != 0u) {
        for (ulong i = get_global_id(0); i < n4; i += get_global_size(0)) {
            float4 v = w * load_grad4(g, i);
            if (!first)
                v += load_acc4(acc, i);
            v = store_acc4(acc, i, v, seed);
#if STATS
            ss += dot(v, v);
            nf = all_finite4(v) ? nf : 1.0f;
#endif
        }
    }
#if STATS
    local float2 scratch[WG];
    reduce_partial(ss, nf, scratch, partials, pbase);
#else
    (void)partials;
    (void)pbase;
    (void)ss;
    (void)nf;
#endif
}

/* SKIP_MICRO: is this micro-step's gradient finite? One flag per group. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void check_finite(global const void *g, ulong n4, global float2 *partials,
                         ulong pbase)
{
    float nf = 0.0f;
    for (ulong i = get_global_id(0); i < n4; i += get_global_size(0))
        nf = all_finite4(load_grad4(g, i)) ? nf : 1.0f;
    local float2 scratch[WG];
    reduce_partial(0.0f, nf, scratch, partials, pbase);
}
