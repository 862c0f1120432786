/* gpt.cl - kernels of clgrad-train's GPT task besides the GEMMs (CLBlast
 * does those) and the row kernels (gpt_rows.cl, which the build puts
 * in front of this file, with what both share): embeddings, column sums,
 * bias, GELU, residual, bias + GELU and GELU's backward + the bias
 * gradient's partials fused, the attention's head split and merge. Launchers
 * and exact semantics: tools/train/tasks/gpt/gpt_kernels.{h,c}.
 *
 * Buffers come with element offsets (clgrad views: a kernel may read the
 * parameter arena and write the accumulator directly), never sub-buffers.
 * Layout of the work:
 *  - elementwise kernels: one item per element, in 2D or 3D ranges whose
 *    first dimension is the contiguous one (no division per element);
 *  - column reductions (bias, LayerNorm weight and position gradients):
 *    blocks of GPT_RB rows into partial sums in scratch (LayerNorm's in
 *    gpt_rows.cl, in the launch of its backward), then one pass that sums
 *    the blocks in order and applies beta;
 *  - the token embedding's gradient: a stable radix sort of the positions
 *    by token, then each (token, channel) sums its positions in order.
 * beta == 0 never reads the target (clgrad's accumulator may hold anything
 * at a cycle's start). */

#define GPT_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */

/* ------------------------------------------------------------ embeddings */

/* out[n, c] = wte[token(n), c] + wpe[t, c], n = b * T + t; item (c, n). */
__kernel void gpt_embed(GPT_TOKENS, uint B, uint T, uint C, global const float *wte,
                        ulong wte_off, global const float *wpe, ulong wpe_off,
                        global float *out, ulong out_off)
{
    uint c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= B * T)
        return;
    uint t, b = (uint)gpt_divmod(n, T, &t);
    uint tok = gpt_token(windows, idx, tok_off, stride, b, t);
    out[out_off + (size_t)n * C + c] =
        wte[wte_off + (size_t)tok * C + c] + wpe[wpe_off + (size_t)t * C + c];
}

/* The token embedding's gradient needs each token's positions, in
 * increasing order (a fixed order of the sum, no atomics): the N positions
 * sorted by token, stably, by a least-significant-digit radix sort of
 * GPT_DIGIT_BITS bits a pass (one pass for the bytes, two for up to 65536
 * tokens). A pass over keys `in` (the tokens themselves in the first pass,
 * read through GPT_TOKENS when from_tokens) and positions `vin` (n itself
 * in the first pass) is three launches, one block of GPT_SORT_WG keys per
 * work-group:
 *   1. gpt_sort_count: count[d nblocks + blk] = the keys of block blk
 *      whose digit is d (item d counts them);
 *   2. gpt_sort_scan: the exclusive prefix sum of count in that order
 *      (digit-major), so count[d nblocks + blk] becomes where block blk's
 *      first key of digit d goes;
 *   3. gpt_sort_scatter: each key to its block's start for its digit plus
 *      its rank among the block's earlier keys of that digit (stable).
 * Then gpt_sort_starts finds each token's first position, and
 * gpt_wte_grad sums them. */
#ifndef GPT_SORT_WG /* the launcher builds with its own (gpt_kernels.c) */
#define GPT_SORT_WG 256
#endif
#ifndef GPT_DIGIT_BITS
#define GPT_DIGIT_BITS 8
#endif
#define GPT_DIGITS (1 << GPT_DIGIT_BITS)
#if GPT_SORT_WG != GPT_DIGITS
#error "gpt_sort_count and gpt_sort_scan give each item one digit"
#endif

/* Key n of a pass's input. */
inline uint gpt_sort_key(GPT_TOKENS, uint T, int from_tokens, global const int *in, uint n)
{
    if (!from_tokens)
        return (uint)in[n];
    uint t, b = (uint)gpt_divmod(n, T, &t);
    return gpt_token(windows, idx, tok_off, stride, b, t);
}

/* Loads block blk's digits into dig (GPT_DIGITS for an item past N, a
 * digit no key has) and returns this item's key (0 past N). */
inline uint gpt_sort_load(GPT_TOKENS, uint T, uint N, int from_tokens, global const int *in,
                          uint shift, local ushort *dig)
{
    uint l = get_local_id(0), n = get_group_id(0) * GPT_SORT_WG + l;
    uint key = n < N ? gpt_sort_key(windows, idx, tok_off, stride, T, from_tokens, in, n) : 0;
    dig[l] = n < N ? (key >> shift) & (GPT_DIGITS - 1) : GPT_DIGITS;
    barrier(CLK_LOCAL_MEM_FENCE);
    return key;
}

__kernel __attribute__((reqd_work_group_size(GPT_SORT_WG, 1, 1))) void
gpt_sort_count(GPT_TOKENS, uint T, uint N, int from_tokens, global const int *in, ulong in_off,
               uint shift, global int *count, ulong count_off)
{
    local ushort dig[GPT_SORT_WG];
    gpt_sort_load(windows, idx, tok_off, stride, T, N, from_tokens, in + in_off, shift, dig);
    uint d = get_local_id(0), blk = get_group_id(0), nblocks = get_num_groups(0);
    int c = 0;
    for (uint j = 0; j < GPT_SORT_WG; j++)
        c += dig[j] == d;
    count[count_off + (size_t)d * nblocks + blk] = c;
}

/* One work-group, item d for digit d: its row of nblocks counts becomes
 * its exclusive prefix; item 0 adds up the digits' totals in order; every
 * row gets its base. */
__kernel __attribute__((reqd_work_group_size(GPT_SORT_WG, 1, 1))) void
gpt_sort_scan(uint nblocks, global int *count, ulong count_off)
{
    local int base[GPT_DIGITS];
    global int *row = count + count_off + (size_t)get_local_id(0) * nblocks;
    int s = 0;
    for (uint blk = 0; blk < nblocks; blk++) {
        int c = row[blk];
        row[blk] = s;
        s += c;
    }
    base[get_local_id(0)] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        int t = 0;
        for (uint d = 0; d < GPT_DIGITS; d++) {
            int c = base[d];
            base[d] = t;
            t += c;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint blk = 0; blk < nblocks; blk++)
        row[blk] += base[get_local_id(0)];
}

/* out[dst] = key, vout[dst] = its position (vin's, or n when from_tokens). */
__kernel __attribute__((reqd_work_group_size(GPT_SORT_WG, 1, 1))) void
gpt_sort_scatter(GPT_TOKENS, uint T, uint N, int from_tokens, global const int *in, ulong in_off,
                 global const int *vin, ulong vin_off, uint shift, global const int *count,
                 ulong count_off, global int *out, ulong out_off, global int *vout,
                 ulong vout_off)
{
    local ushort dig[GPT_SORT_WG];
    uint key =
        gpt_sort_load(windows, idx, tok_off, stride, T, N, from_tokens, in + in_off, shift, dig);
    uint l = get_local_id(0), n = get_group_id(0) * GPT_SORT_WG + l;
    if (n >= N)
        return;
    uint d = dig[l];
    int rank = 0;
    for (uint j = 0; j < l; j++)
        rank += dig[j] == d;
    size_t dst = (size_t)count[count_off + (size_t)d * get_num_groups(0) + get_group_id(0)] + rank;
    out[out_off + dst] = (int)key;
    vout[vout_off + dst] = from_tokens ? (int)n : vin[vin_off + n];
}

/* start[v] for v <= V: the number of sorted keys below v (a binary search
 * of the N sorted keys), so token v's positions are pos[start[v] ..
 * start[v + 1]). */
__kernel void gpt_sort_starts(uint N, uint V, global const int *keys, ulong keys_off,
                              global int *start, ulong start_off)
{
    uint v = get_global_id(0);
    if (v > V)
        return;
    global const int *k = keys + keys_off;
    uint lo = 0, hi = N;
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2;
        if ((uint)k[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    start[start_off + v] = (int)lo;
}

/* dwte[v, c] = beta * dwte[v, c] + the sum of dout[p, c] over token v's
 * positions p in increasing order (beta 0: the sum alone, dwte not read);
 * beta 1 leaves the row of a token absent from the micro-batch untouched
 * (most of a large vocabulary's). Item (c, v). */
__kernel void gpt_wte_grad(uint C, uint V, global const int *start, ulong start_off,
                           global const int *pos, ulong pos_off, global const float *dout,
                           ulong dout_off, global float *dwte, ulong dwte_off, float beta)
{
    uint c = get_global_id(0), v = get_global_id(1);
    if (c >= C || v >= V)
        return;
    int begin = start[start_off + v], end = start[start_off + v + 1];
    if (begin == end && beta == 1.0f)
        return;
    float s = 0.0f;
    for (int k = begin; k < end; k++)
        s += dout[dout_off + (size_t)pos[pos_off + k] * C + c];
    size_t i = dwte_off + (size_t)v * C + c;
    dwte[i] = beta == 0.0f ? s : beta * dwte[i] + s;
}

/* dwpe[t, c] = beta * dwpe[t, c] + sum over b (in order) of dout[b, t, c]:
 * B is small, so one pass, one item per (t, c). */
__kernel void gpt_wpe_grad(uint B, uint T, uint C, global const float *dout, ulong dout_off,
                           global float *dwpe, ulong dwpe_off, float beta)
{
    size_t i = get_global_id(0), TC = (size_t)T * C;
    if (i >= TC)
        return;
    float s = 0.0f;
    for (uint b = 0; b < B; b++)
        s += dout[dout_off + b * TC + i];
    dwpe[dwpe_off + i] = beta == 0.0f ? s : beta * dwpe[dwpe_off + i] + s;
}

/* ------------------------------------------------------------ column sums */

/* Item (c, blk) of a column sum's partials over N rows of OC columns:
 * its column, block and the block's rows [*first, *end); 0 for an item
 * outside them. */
inline int gpt_col_block(uint N, uint OC, uint *c, uint *blk, uint *first, uint *end)
{
    *c = get_global_id(0);
    *blk = get_global_id(1);
    if (*c >= OC || *blk >= (N + GPT_RB - 1) / GPT_RB)
        return 0;
    *first = *blk * GPT_RB;
    *end = min(N, *first + GPT_RB);
    return 1;
}

/* scratch[blk * ld + col + c] = sum over the rows of block blk (GPT_RB
 * rows, in order) of src[n, c] (ld OC and col 0 for one sum; two side by
 * side for gpt_colsum_final to finish in one launch). Item (c, blk). */
__kernel void gpt_colsum_partial(uint N, uint OC, global const float *src, ulong src_off,
                                 global float *scratch, uint ld, uint col)
{
    uint c, blk, first, end;
    if (!gpt_col_block(N, OC, &c, &blk, &first, &end))
        return;
    float s = 0.0f;
    for (uint n = first; n < end; n++)
        s += src[src_off + (size_t)n * OC + c];
    scratch[(size_t)blk * ld + col + c] = s;
}

/* The column sums' last pass: column c < cols of the partials,
 * sum over blk < nb (in order) of scratch[soff + blk * ld + c], goes to
 * dst[c] = beta * dst[c] + sum for c < split and to dst2[c - split] the
 * same way above (LayerNorm's dw and db in one launch; a single target
 * has split = cols). */
__kernel void gpt_colsum_final(global const float *scratch, uint soff, uint ld, uint nb,
                               uint cols, uint split, global float *dst, ulong dst_off,
                               global float *dst2, ulong dst2_off, float beta)
{
    size_t c = get_global_id(0);
    if (c >= cols)
        return;
    float s = 0.0f;
    for (uint blk = 0; blk < nb; blk++)
        s += scratch[soff + (size_t)blk * ld + c];
    global float *d = c < split ? dst + dst_off + c : dst2 + dst2_off + (c - split);
    *d = beta == 0.0f ? s : beta * *d + s;
}

/* ------------------------------------------------------------ elementwise */

/* out[n, c] += bias[c]; item (c, n). */
__kernel void gpt_bias_add(uint N, uint OC, global float *out, ulong out_off,
                           global const float *bias, ulong bias_off)
{
    uint c = get_global_id(0), n = get_global_id(1);
    if (c >= OC || n >= N)
        return;
    out[out_off + (size_t)n * OC + c] += bias[bias_off + c];
}

/* GELU, tanh approximation: 0.5 x (1 + tanh(a)), a = k (x + 0.044715 x^3),
 * written as x * sigmoid(2a) with e = exp(-2|a|), so that neither tail
 * cancels: sigmoid(2a) = 1 / (1 + e) for a >= 0, e / (1 + e) below, and
 * its derivative 2 sigmoid (1 - sigmoid) a' = 2 e / (1 + e)^2 a'. */
inline float gpt_gelu_sigmoid(float x, float *slope)
{
    float a = GPT_GELU_K * (x + 0.044715f * x * x * x);
    float e = exp(-2.0f * fabs(a)), r = 1.0f / (1.0f + e);
    *slope = 2.0f * e * r * r * GPT_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
    return a >= 0.0f ? r : e * r;
}

/* gelu(x), and gelu'(x) d = (sigmoid + x slope) d: the fused kernels
 * below use these, so that they round as gpt_gelu and gpt_gelu_backward. */
inline float gpt_gelu_of(float x)
{
    float slope;
    return x * gpt_gelu_sigmoid(x, &slope);
}
inline float gpt_gelu_backward_of(float x, float d)
{
    float slope;
    float s = gpt_gelu_sigmoid(x, &slope);
    return (s + x * slope) * d;
}

__kernel void gpt_gelu(uint n, global const float *inp, ulong inp_off, global float *out,
                       ulong out_off)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    out[out_off + i] = gpt_gelu_of(inp[inp_off + i]);
}

/* dinp = gelu'(x) dout. dinp may be dout: each item reads its element
 * before writing it. */
__kernel void gpt_gelu_backward(uint n, global const float *inp, ulong inp_off,
                                global const float *dout, ulong dout_off, global float *dinp,
                                ulong dinp_off)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    dinp[dinp_off + i] = gpt_gelu_backward_of(inp[inp_off + i], dout[dout_off + i]);
}

/* c_fc's bias and GELU in one pass: x = inout[n, c] + bias[c] is stored
 * back (GELU's input, kept for the backward) and out[n, c] = gelu(x);
 * the roundings of gpt_bias_add, then gpt_gelu. Item (c, n). */
__kernel void gpt_bias_gelu(uint N, uint OC, global float *inout, ulong inout_off,
                            global const float *bias, ulong bias_off, global float *out,
                            ulong out_off)
{
    uint c = get_global_id(0), n = get_global_id(1);
    if (c >= OC || n >= N)
        return;
    size_t i = (size_t)n * OC + c;
    float x = inout[inout_off + i] + bias[bias_off + c];
    inout[inout_off + i] = x;
    out[out_off + i] = gpt_gelu_of(x);
}

/* GELU's backward and the partials of c_fc's bias gradient in one pass:
 * dinp[n, c] = gelu'(inp[n, c]) dout[n, c], and scratch[blk * ld + col + c]
 * the sum of those over the rows of block blk in order, as
 * gpt_colsum_partial would sum them (gpt_colsum_final finishes).
 * dinp may be dout (an item reads each element before writing it).
 * Item (c, blk). */
__kernel void gpt_gelu_backward_colsum(uint N, uint OC, global const float *inp, ulong inp_off,
                                       global const float *dout, ulong dout_off,
                                       global float *dinp, ulong dinp_off,
                                       global float *scratch, uint ld, uint col)
{
    uint c, blk, first, end;
    if (!gpt_col_block(N, OC, &c, &blk, &first, &end))
        return;
    /* a fixed trip count, unrolled: PoCL then vectorizes across the items
     * (with `n < end` as the loop's bound it did not, and the kernel ran 1.8
     * times slower than gpt_gelu_backward + gpt_bias_grad; unrolled, 0.8
     * times their time) */
    float s = 0.0f;
#pragma unroll
    for (uint j = 0; j < GPT_RB; j++) {
        uint n = first + j;
        if (n < end) {
            size_t i = (size_t)n * OC + c;
            float d = gpt_gelu_backward_of(inp[inp_off + i], dout[dout_off + i]);
            dinp[dinp_off + i] = d;
            s += d;
        }
    }
    scratch[(size_t)blk * ld + col + c] = s;
}

/* out = a + b (out may be a or b). */
__kernel void gpt_residual(uint n, global const float *a, ulong a_off, global const float *b,
                           ulong b_off, global float *out, ulong out_off)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    out[out_off + i] = a[a_off + i] + b[b_off + i];
}
