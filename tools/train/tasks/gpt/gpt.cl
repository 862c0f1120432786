/* gpt.cl - kernels of clgrad-train's GPT task besides the GEMMs (CLBlast
 * does those) and the row kernels (gpt_rows.cl, which the build puts
 * in front of this file, with what both share): embeddings, column sums,
 * bias, GELU, residual, the attention's head split and merge. Launchers
 * and exact semantics: tools/train/tasks/gpt/gpt_kernels.{h,c}.
 *
 * Buffers come with element offsets (clgrad views: a kernel may read the
 * parameter arena and write the accumulator directly), never sub-buffers.
 * Layout of the work:
 *  - elementwise kernels: one item per element, in 2D or 3D ranges whose
 *    first dimension is the contiguous one (no division per element);
 *  - column reductions (bias, LayerNorm weight and position gradients):
 *    blocks of GPT_RB rows into partial sums in scratch, then one pass that
 *    sums the blocks in order and applies beta;
 *  - the token embedding's gradient: a stable counting sort of the tokens,
 *    then each (byte, channel) sums its positions in order.
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

/* Tokens base .. base + 256 (those below N) into tok, by the 256 items of
 * gpt_sort_tokens; the number loaded. */
inline uint gpt_token_chunk(GPT_TOKENS, uint T, uint N, uint base, local uchar *tok)
{
    uint v = get_local_id(0), n = base + v;
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous chunk is read */
    if (n < N) {
        uint t, b = (uint)gpt_divmod(n, T, &t);
        tok[v] = (uchar)gpt_token(windows, idx, tok_off, stride, b, t);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return min(256u, N - base);
}

/* A stable counting sort of the N = B * T tokens by byte, by one
 * work-group of 256 items (item v counts byte v): sort[v] .. sort[v + 1]
 * is where byte v's positions lie in sort[257 ..], in increasing order.
 * Tokens go through local memory 256 at a time, twice: to count, then to
 * place. */
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void
gpt_sort_tokens(GPT_TOKENS, uint B, uint T, global int *sort)
{
    local uchar tok[256];
    local int start[257];
    uint v = get_local_id(0), N = B * T;
    int count = 0;
    for (uint base = 0; base < N; base += 256) {
        uint m = gpt_token_chunk(windows, idx, tok_off, stride, T, N, base, tok);
        for (uint j = 0; j < m; j++)
            count += tok[j] == v;
    }
    start[v] = count;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (v == 0) { /* exclusive prefix sum, 256 adds */
        int s = 0;
        for (uint u = 0; u < 256; u++) {
            int c = start[u];
            start[u] = s;
            s += c;
        }
        start[256] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int pos = start[v];
    sort[v] = pos;
    if (v == 0)
        sort[256] = start[256];
    for (uint base = 0; base < N; base += 256) {
        uint m = gpt_token_chunk(windows, idx, tok_off, stride, T, N, base, tok);
        for (uint j = 0; j < m; j++)
            if (tok[j] == v)
                sort[257 + pos++] = (int)(base + j);
    }
}

/* dwte[v, c] = beta * dwte[v, c] + sum over byte v's positions p (in
 * increasing order) of dout[p, c]. Item (c, v). */
__kernel void gpt_wte_grad(global const int *sort, uint C, global const float *dout,
                           ulong dout_off, global float *dwte, ulong dwte_off, float beta)
{
    uint c = get_global_id(0), v = get_global_id(1);
    if (c >= C || v >= 256)
        return;
    float s = 0.0f;
    for (int k = sort[v], end = sort[v + 1]; k < end; k++)
        s += dout[dout_off + (size_t)sort[257 + k] * C + c];
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

/* scratch[blk * OC + c] = sum over the rows of block blk (GPT_RB rows, in
 * order) of src[n, c]. Item (c, blk). */
__kernel void gpt_colsum_partial(uint N, uint OC, global const float *src, ulong src_off,
                                 global float *scratch)
{
    uint c = get_global_id(0), blk = get_global_id(1);
    if (c >= OC || blk >= (N + GPT_RB - 1) / GPT_RB)
        return;
    uint end = min(N, (blk + 1) * GPT_RB);
    float s = 0.0f;
    for (uint n = blk * GPT_RB; n < end; n++)
        s += src[src_off + (size_t)n * OC + c];
    scratch[(size_t)blk * OC + c] = s;
}

/* LayerNorm's weight and bias gradients, per block of GPT_RB rows:
 * scratch[blk * 2C + c] = sum of dout * xhat, scratch[blk * 2C + C + c] =
 * sum of dout, xhat = (inp - mean) rstd. Item (c, blk). */
__kernel void gpt_layernorm_dwdb(uint N, uint C, global const float *dout, ulong dout_off,
                                 global const float *inp, ulong inp_off, global const float *mean,
                                 ulong mean_off, global const float *rstd, ulong rstd_off,
                                 global float *scratch)
{
    uint c = get_global_id(0), blk = get_global_id(1);
    if (c >= C || blk >= (N + GPT_RB - 1) / GPT_RB)
        return;
    uint end = min(N, (blk + 1) * GPT_RB);
    float sw = 0.0f, sb = 0.0f;
    for (uint n = blk * GPT_RB; n < end; n++) {
        size_t i = (size_t)n * C + c;
        float d = dout[dout_off + i];
        sw += d * ((inp[inp_off + i] - mean[mean_off + n]) * rstd[rstd_off + n]);
        sb += d;
    }
    scratch[(size_t)blk * 2 * C + c] = sw;
    scratch[(size_t)blk * 2 * C + C + c] = sb;
}

/* dst[c] = beta * dst[c] + sum over blk < nb (in order) of
 * scratch[soff + blk * ld + c], c < cols. */
__kernel void gpt_colsum_final(global const float *scratch, uint soff, uint ld, uint nb,
                               uint cols, global float *dst, ulong dst_off, float beta)
{
    size_t c = get_global_id(0);
    if (c >= cols)
        return;
    float s = 0.0f;
    for (uint blk = 0; blk < nb; blk++)
        s += scratch[soff + (size_t)blk * ld + c];
    dst[dst_off + c] = beta == 0.0f ? s : beta * dst[dst_off + c] + s;
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

__kernel void gpt_gelu(uint n, global const float *inp, ulong inp_off, global float *out,
                       ulong out_off)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    float x = inp[inp_off + i], slope;
    out[out_off + i] = x * gpt_gelu_sigmoid(x, &slope);
}

/* dinp = gelu'(x) dout = (sigmoid + x slope) dout. dinp may be dout: each
 * item reads its element before writing it. */
__kernel void gpt_gelu_backward(uint n, global const float *inp, ulong inp_off,
                                global const float *dout, ulong dout_off, global float *dinp,
                                ulong dinp_off)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    float x = inp[inp_off + i], slope;
    float s = gpt_gelu_sigmoid(x, &slope);
    dinp[dinp_off + i] = (s + x * slope) * dout[dout_off + i];
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

/* ------------------------------------------------------------ attention */

/* Item (d, t, bh) of a [B x NH x T x HS] tensor, bh = b * NH + h: its
 * index there (*i) and in a row-major [B * T x W] matrix whose rows hold
 * the heads side by side (W = C for y, 3C for qkv; + C for k, + 2C for v).
 * 0 for an item outside the tensor. */
inline int gpt_head_item(uint T, uint NH, uint HS, uint BNH, uint W, size_t *i, size_t *m)
{
    uint d = get_global_id(0), t = get_global_id(1), bh = get_global_id(2);
    if (d >= HS || t >= T || bh >= BNH)
        return 0;
    uint h, b = (uint)gpt_divmod(bh, NH, &h);
    *i = ((size_t)bh * T + t) * HS + d;
    *m = ((size_t)b * T + t) * W + (size_t)h * HS + d;
    return 1;
}

__kernel void gpt_attn_split(uint B, uint T, uint NH, uint HS, global const float *qkv,
                             ulong qkv_off, global float *q, ulong q_off, global float *k,
                             ulong k_off, global float *v, ulong v_off)
{
    size_t i, s;
    uint C = NH * HS;
    if (!gpt_head_item(T, NH, HS, B * NH, 3 * C, &i, &s))
        return;
    s += qkv_off;
    q[q_off + i] = qkv[s];
    k[k_off + i] = qkv[s + C];
    v[v_off + i] = qkv[s + 2 * C];
}

__kernel void gpt_attn_split_backward(uint B, uint T, uint NH, uint HS, global const float *dq,
                                      ulong dq_off, global const float *dk, ulong dk_off,
                                      global const float *dv, ulong dv_off, global float *dqkv,
                                      ulong dqkv_off)
{
    size_t i, s;
    uint C = NH * HS;
    if (!gpt_head_item(T, NH, HS, B * NH, 3 * C, &i, &s))
        return;
    s += dqkv_off;
    dqkv[s] = dq[dq_off + i];
    dqkv[s + C] = dk[dk_off + i];
    dqkv[s + 2 * C] = dv[dv_off + i];
}

__kernel void gpt_attn_merge(uint B, uint T, uint NH, uint HS, global const float *y,
                             ulong y_off, global float *out, ulong out_off)
{
    size_t i, m;
    if (gpt_head_item(T, NH, HS, B * NH, NH * HS, &i, &m))
        out[out_off + m] = y[y_off + i];
}

__kernel void gpt_attn_merge_backward(uint B, uint T, uint NH, uint HS, global const float *dout,
                                      ulong dout_off, global float *dy, ulong dy_off)
{
    size_t i, m;
    if (gpt_head_item(T, NH, HS, B * NH, NH * HS, &i, &m))
        dy[dy_off + i] = dout[dout_off + m];
}
