/* gpt.cl - kernels of clgrad-train's GPT task besides the GEMMs (CLBlast
 * does those): embeddings, LayerNorm, bias, GELU, residual, the attention's
 * head split/merge and causal softmax, the fused softmax cross-entropy,
 * and their backwards. Launchers and exact semantics:
 * tools/train/tasks/gpt/gpt_kernels.{h,c}.
 *
 * Buffers come with element offsets (clgrad views: a kernel may read the
 * parameter arena and write the accumulator directly), never sub-buffers.
 * Layout of the work:
 *  - elementwise kernels: one work-item per element, consecutive items on
 *    consecutive addresses;
 *  - row reductions (LayerNorm, softmax rows, cross-entropy rows): one
 *    work-group of GPT_WG items per row, item l taking columns l, l + GPT_WG,
 *    ... and a local-memory tree in a fixed order;
 *  - column reductions (bias and LayerNorm weight gradients): blocks of
 *    GPT_RB rows into partial sums in scratch, then one pass that sums the
 *    blocks in order and applies beta;
 *  - the token embedding's gradient: a stable counting sort of the tokens,
 *    then each (byte, channel) sums its positions in order.
 * No atomics anywhere: every run repeats bit for bit. beta == 0 never reads
 * the target (clgrad's accumulator may hold anything at a cycle's start). */

#ifndef GPT_WG
#define GPT_WG 64 /* work-group of the row kernels (a power of two) */
#endif
#ifndef GPT_RB
#define GPT_RB 16 /* rows per block of the column reductions */
#endif
#define GPT_LN_EPS 1e-5f
#define GPT_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */

/* The token source of gpt_tokens: sequence b, position t is
 * windows[idx[tok_off + b] * stride + t]. */
#define GPT_TOKENS global const uchar *windows, global const int *idx, uint tok_off, uint stride
inline uint gpt_token(global const uchar *windows, global const int *idx, uint tok_off,
                      uint stride, uint b, uint t)
{
    return windows[(ulong)idx[tok_off + b] * stride + t];
}

/* q = a / d and *r = a % d, the remainder as a - q d: with both a / and a %
 * LLVM emits a `freeze` that Oclgrind's uninitialized-value check cannot
 * run (tests/oclgrind_filter.py). */
inline size_t gpt_divmod(size_t a, size_t d, uint *r)
{
    size_t q = a / d;
    *r = (uint)(a - q * d);
    return q;
}

/* Sum (max) over the work-group of v, in a fixed tree order; every item
 * gets the result. s holds GPT_WG elements and is free again on return. */
inline float gpt_wg_sum(float v, local float *s)
{
    uint l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = GPT_WG / 2; w > 0; w >>= 1) {
        if (l < w)
            s[l] += s[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

inline float2 gpt_wg_sum2(float2 v, local float2 *s)
{
    uint l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = GPT_WG / 2; w > 0; w >>= 1) {
        if (l < w)
            s[l] += s[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float2 r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

inline float gpt_wg_max(float v, local float *s)
{
    uint l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = GPT_WG / 2; w > 0; w >>= 1) {
        if (l < w)
            s[l] = fmax(s[l], s[l + w]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* ------------------------------------------------------------ embeddings */

/* out[n, c] = wte[token(n), c] + wpe[t, c], n = b * T + t. */
__kernel void gpt_embed(GPT_TOKENS, uint B, uint T, uint C, global const float *wte,
                        ulong wte_off, global const float *wpe, ulong wpe_off,
                        global float *out, ulong out_off)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)B * T * C)
        return;
    uint c, t;
    uint n = (uint)gpt_divmod(i, C, &c), b = (uint)gpt_divmod(n, T, &t);
    uint tok = gpt_token(windows, idx, tok_off, stride, b, t);
    out[out_off + i] = wte[wte_off + (size_t)tok * C + c] + wpe[wpe_off + (size_t)t * C + c];
}

/* A stable counting sort of the N = B * T tokens by byte, by one
 * work-group of 256 items (item v counts byte v): sort[v] .. sort[v + 1]
 * is where byte v's positions lie in sort[257 ..], in increasing order.
 * Tokens go through local memory 256 at a time. */
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void
gpt_sort_tokens(GPT_TOKENS, uint B, uint T, global int *sort)
{
    local uchar tok[256];
    local int start[257];
    uint v = get_local_id(0), N = B * T;
    int count = 0;
    for (uint base = 0; base < N; base += 256) {
        uint n = base + v;
        if (n < N) {
            uint t, b = (uint)gpt_divmod(n, T, &t);
            tok[v] = (uchar)gpt_token(windows, idx, tok_off, stride, b, t);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint m = min(256u, N - base);
        for (uint j = 0; j < m; j++)
            count += tok[j] == v;
        barrier(CLK_LOCAL_MEM_FENCE);
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
        uint n = base + v;
        if (n < N) {
            uint t, b = (uint)gpt_divmod(n, T, &t);
            tok[v] = (uchar)gpt_token(windows, idx, tok_off, stride, b, t);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint m = min(256u, N - base);
        for (uint j = 0; j < m; j++)
            if (tok[j] == v)
                sort[257 + pos++] = (int)(base + j);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* dwte[v, c] = beta * dwte[v, c] + sum over byte v's positions p (in
 * increasing order) of dout[p, c]. One item per (v, c). */
__kernel void gpt_wte_grad(global const int *sort, uint C, global const float *dout,
                           ulong dout_off, global float *dwte, ulong dwte_off, float beta)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)256 * C)
        return;
    uint c, v = (uint)gpt_divmod(i, C, &c);
    float s = 0.0f;
    for (int k = sort[v], end = sort[v + 1]; k < end; k++)
        s += dout[dout_off + (size_t)sort[257 + k] * C + c];
    dwte[dwte_off + i] = beta == 0.0f ? s : beta * dwte[dwte_off + i] + s;
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

/* ------------------------------------------------------------ LayerNorm */

/* One work-group per row: mean, then the biased variance around it (two
 * passes, as PyTorch), rstd = 1 / sqrt(var + eps). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_layernorm(uint N, uint C, global const float *inp, ulong inp_off, global const float *w,
              ulong w_off, global const float *b, ulong b_off, global float *out, ulong out_off,
              global float *mean, ulong mean_off, global float *rstd, ulong rstd_off)
{
    local float red[GPT_WG];
    uint row = get_group_id(0), l = get_local_id(0);
    if (row >= N)
        return;
    global const float *x = inp + inp_off + (size_t)row * C;
    float s = 0.0f;
    for (uint c = l; c < C; c += GPT_WG)
        s += x[c];
    float m = gpt_wg_sum(s, red) / C;
    float v = 0.0f;
    for (uint c = l; c < C; c += GPT_WG) {
        float d = x[c] - m;
        v += d * d;
    }
    float rs = rsqrt(gpt_wg_sum(v, red) / C + GPT_LN_EPS);
    global float *o = out + out_off + (size_t)row * C;
    for (uint c = l; c < C; c += GPT_WG)
        o[c] = (x[c] - m) * rs * w[w_off + c] + b[b_off + c];
    if (l == 0) {
        mean[mean_off + row] = m;
        rstd[rstd_off + row] = rs;
    }
}

/* One work-group per block of GPT_RB rows. Per row: dinp += rstd * (dn -
 * mean(dn) - xhat * mean(dn * xhat)), dn = w * dout. The block's sums of
 * dout * xhat (dw) and dout (db) per column go to scratch[blk * 2C + c]
 * and scratch[blk * 2C + C + c] (gpt_colsum_final finishes them); acc (2C
 * floats of local memory) holds them meanwhile, each column owned by the
 * item that reads it. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_layernorm_backward(uint N, uint C, global const float *dout, ulong dout_off,
                       global const float *inp, ulong inp_off, global const float *w, ulong w_off,
                       global const float *mean, ulong mean_off, global const float *rstd,
                       ulong rstd_off, global float *dinp, ulong dinp_off, global float *scratch,
                       local float *acc)
{
    local float2 red[GPT_WG];
    uint blk = get_group_id(0), l = get_local_id(0);
    for (uint c = l; c < C; c += GPT_WG)
        acc[c] = acc[C + c] = 0.0f;
    uint end = min(N, (blk + 1) * GPT_RB);
    for (uint row = blk * GPT_RB; row < end; row++) {
        global const float *x = inp + inp_off + (size_t)row * C;
        global const float *d = dout + dout_off + (size_t)row * C;
        float m = mean[mean_off + row], rs = rstd[rstd_off + row];
        float2 part = (float2)(0.0f);
        for (uint c = l; c < C; c += GPT_WG) {
            float dn = w[w_off + c] * d[c];
            part += (float2)(dn, dn * ((x[c] - m) * rs));
        }
        float2 tot = gpt_wg_sum2(part, red) / (float)C;
        global float *di = dinp + dinp_off + (size_t)row * C;
        for (uint c = l; c < C; c += GPT_WG) {
            float xhat = (x[c] - m) * rs, dc = d[c];
            float dn = w[w_off + c] * dc;
            di[c] += (dn - tot.x - xhat * tot.y) * rs;
            acc[c] += dc * xhat;
            acc[C + c] += dc;
        }
    }
    global float *p = scratch + (size_t)blk * 2 * C;
    for (uint c = l; c < C; c += GPT_WG) {
        p[c] = acc[c];
        p[C + c] = acc[C + c];
    }
}

/* ------------------------------------------------------------ column sums */

/* scratch[blk * OC + c] = sum over the rows of block blk (GPT_RB rows, in
 * order) of src[n, c]. One item per (blk, c). */
__kernel void gpt_colsum_partial(uint N, uint OC, global const float *src, ulong src_off,
                                 global float *scratch)
{
    size_t i = get_global_id(0);
    uint nb = (N + GPT_RB - 1) / GPT_RB;
    if (i >= (size_t)nb * OC)
        return;
    uint c, blk = (uint)gpt_divmod(i, OC, &c);
    uint end = min(N, (blk + 1) * GPT_RB);
    float s = 0.0f;
    for (uint n = blk * GPT_RB; n < end; n++)
        s += src[src_off + (size_t)n * OC + c];
    scratch[i] = s;
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

/* out[n, c] += bias[c] */
__kernel void gpt_bias_add(uint N, uint OC, global float *out, ulong out_off,
                           global const float *bias, ulong bias_off)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)N * OC)
        return;
    out[out_off + i] += bias[bias_off + i % OC];
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

/* Element i of a [B x NH x T x HS] tensor is (b, h, t, d); its place in a
 * row-major [B * T x W] matrix whose row holds the heads side by side
 * (W = C for y, 3C for qkv, then + C for k, + 2C for v). */
inline size_t gpt_head_index(size_t i, uint T, uint NH, uint HS, uint W)
{
    uint d = (uint)(i % HS);
    size_t r = i / HS;
    uint t = (uint)(r % T);
    r /= T;
    uint h = (uint)(r % NH);
    size_t b = r / NH;
    return (b * T + t) * W + (size_t)h * HS + d;
}

__kernel void gpt_attn_split(uint B, uint T, uint NH, uint HS, global const float *qkv,
                             ulong qkv_off, global float *q, ulong q_off, global float *k,
                             ulong k_off, global float *v, ulong v_off)
{
    size_t i = get_global_id(0);
    uint C = NH * HS;
    if (i >= (size_t)B * T * C)
        return;
    size_t s = qkv_off + gpt_head_index(i, T, NH, HS, 3 * C);
    q[q_off + i] = qkv[s];
    k[k_off + i] = qkv[s + C];
    v[v_off + i] = qkv[s + 2 * C];
}

__kernel void gpt_attn_split_backward(uint B, uint T, uint NH, uint HS, global const float *dq,
                                      ulong dq_off, global const float *dk, ulong dk_off,
                                      global const float *dv, ulong dv_off, global float *dqkv,
                                      ulong dqkv_off)
{
    size_t i = get_global_id(0);
    uint C = NH * HS;
    if (i >= (size_t)B * T * C)
        return;
    size_t s = dqkv_off + gpt_head_index(i, T, NH, HS, 3 * C);
    dqkv[s] = dq[dq_off + i];
    dqkv[s + C] = dk[dk_off + i];
    dqkv[s + 2 * C] = dv[dv_off + i];
}

__kernel void gpt_attn_merge(uint B, uint T, uint NH, uint HS, global const float *y,
                             ulong y_off, global float *out, ulong out_off)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)B * T * NH * HS)
        return;
    out[out_off + gpt_head_index(i, T, NH, HS, NH * HS)] = y[y_off + i];
}

__kernel void gpt_attn_merge_backward(uint B, uint T, uint NH, uint HS, global const float *dout,
                                      ulong dout_off, global float *dy, ulong dy_off)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)B * T * NH * HS)
        return;
    dy[dy_off + i] = dout[dout_off + gpt_head_index(i, T, NH, HS, NH * HS)];
}

/* One work-group per row (r, i) of the R * T rows: softmax of scale *
 * preatt over j <= i, zeros for j > i (never read there). att may be
 * preatt: every element is read and written by the same item, all reads
 * of the row before its writes. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_softmax_causal(uint R, uint T, float scale, global const float *preatt, ulong preatt_off,
                   global float *att, ulong att_off)
{
    local float red[GPT_WG];
    size_t row = get_group_id(0);
    uint l = get_local_id(0), i = (uint)(row % T);
    if (row >= (size_t)R * T)
        return;
    global const float *p = preatt + preatt_off + row * T;
    global float *a = att + att_off + row * T;
    float m = -INFINITY;
    for (uint j = l; j <= i; j += GPT_WG)
        m = fmax(m, scale * p[j]);
    m = gpt_wg_max(m, red);
    float s = 0.0f;
    for (uint j = l; j <= i; j += GPT_WG)
        s += exp(scale * p[j] - m);
    float inv = 1.0f / gpt_wg_sum(s, red);
    for (uint j = l; j < T; j += GPT_WG)
        a[j] = j <= i ? exp(scale * p[j] - m) * inv : 0.0f;
}

/* dpreatt[r, i, j] = scale * att * (datt - sum_j' att datt) for j <= i,
 * 0 above. dpreatt may be datt (same item reads, then writes). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_softmax_causal_backward(uint R, uint T, float scale, global const float *att, ulong att_off,
                            global const float *datt, ulong datt_off, global float *dpreatt,
                            ulong dpreatt_off)
{
    local float red[GPT_WG];
    size_t row = get_group_id(0);
    uint l = get_local_id(0), i = (uint)(row % T);
    if (row >= (size_t)R * T)
        return;
    global const float *a = att + att_off + row * T;
    global const float *da = datt + datt_off + row * T;
    global float *dp = dpreatt + dpreatt_off + row * T;
    float s = 0.0f;
    for (uint j = l; j <= i; j += GPT_WG)
        s += a[j] * da[j];
    s = gpt_wg_sum(s, red);
    for (uint j = l; j < T; j += GPT_WG)
        dp[j] = j <= i ? scale * a[j] * (da[j] - s) : 0.0f;
}

/* ------------------------------------------------------------ loss */

/* One work-group per row n = b * T + t of V logits; the target is the
 * token at t + 1. row_loss[n] = logsumexp - logits[target]; with backward,
 * dlogits = (softmax - onehot) * dscale * S (S = scale[scale_off] when
 * has_scale). dlogits may be logits: every element is read and written by
 * its own item, the target's logit passed on through local memory (a
 * local barrier does not order global memory between items). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_xent(GPT_TOKENS, uint B, uint T, uint V, global const float *logits, ulong logits_off,
         global float *row_loss, ulong loss_off, int backward, float dscale,
         global const float *scale, ulong scale_off, int has_scale, global float *dlogits,
         ulong dlogits_off)
{
    local float red[GPT_WG], ly;
    uint n = get_group_id(0), l = get_local_id(0);
    if (n >= B * T)
        return;
    uint t, b = (uint)gpt_divmod(n, T, &t);
    uint y = gpt_token(windows, idx, tok_off, stride, b, t + 1);
    global const float *x = logits + logits_off + (size_t)n * V;
    if (l == y % GPT_WG)
        ly = x[y];
    float m = -INFINITY;
    for (uint j = l; j < V; j += GPT_WG)
        m = fmax(m, x[j]);
    m = gpt_wg_max(m, red);
    float s = 0.0f;
    for (uint j = l; j < V; j += GPT_WG)
        s += exp(x[j] - m);
    s = gpt_wg_sum(s, red);
    if (l == 0)
        row_loss[loss_off + n] = log(s) + m - ly;
    if (!backward)
        return;
    float k = dscale * (has_scale ? scale[scale_off] : 1.0f), inv = 1.0f / s;
    global float *d = dlogits + dlogits_off + (size_t)n * V;
    for (uint j = l; j < V; j += GPT_WG)
        d[j] = (exp(x[j] - m) * inv - (j == y ? 1.0f : 0.0f)) * k;
}

/* One work-group: sums[0] += sum of row_loss[0 .. N) (item l takes l, l +
 * GPT_WG, ...; then the tree), sums[1] += N. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_loss_sum(uint N, global const float *row_loss, ulong loss_off, global float *sums)
{
    local float red[GPT_WG];
    uint l = get_local_id(0);
    float s = 0.0f;
    for (uint n = l; n < N; n += GPT_WG)
        s += row_loss[loss_off + n];
    s = gpt_wg_sum(s, red);
    if (l == 0) {
        sums[0] += s;
        sums[1] += (float)N;
    }
}
