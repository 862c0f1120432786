/* stats.cl - accumulator statistics when they cannot ride along with an
 * accumulate pass (path B, skip-micro mode, per-tensor norms): one read of
 * the accumulator. Same deterministic reduction as the fused pass.
 * Parameter lists (REDUCE_PARAMS, TENSOR_SUMSQ_PARAMS): cl/layout.py. */

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void acc_sumsq(REDUCE_PARAMS)
{
    local float scratch[WG];
    write_partial(sum4(sumsq_pass(src, n4, 0)), scratch, partials, pbase);
}

/* One work-group per tensor of the chunk: sum of squares of its elements
 * (offsets and counts in float4 units). Only for per-tensor norms on
 * request; the loop makes it slower per byte than the streaming kernels. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void tensor_sumsq(TENSOR_SUMSQ_PARAMS)
{
    ulong t = get_group_id(0);
    ulong base = offset4[t];
    float ss = 0.0f;
    for (ulong i = get_local_id(0); i < count4[t]; i += WG) {
        float4 v = load_acc4(acc, base + i);
        ss += dot(v, v);
    }
    local float scratch[WG];
    write_partial(ss, scratch, out, obase);
}
