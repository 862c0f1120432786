/* gpt_rows.cl - the GPT task's row kernels (LayerNorm, residual add +
 * LayerNorm, causal softmax, cross-entropy, their backwards, the loss
 * sum) and what every kernel of the task shares; the build puts it in
 * front of gpt.cl (program "gpt", launchers in
 * tools/train/tasks/gpt/gpt_kernels.c).
 *
 * A row is reduced by GPT_ROW_W items of a work-group of GPT_WG (item
 * lane takes columns lane, lane + GPT_ROW_W, ...; then a local-memory tree
 * in a fixed order), GPT_WG / GPT_ROW_W rows per work-group. The launcher
 * picks GPT_ROW_W when it builds the program: GPT_WG (one work-group per
 * row: coalesced, for GPUs) or 1 (one item per row, no barriers: on a CPU
 * device, where PoCL paid more for a work-group's barriers than for its
 * row). A run repeats bit for bit on one build; no atomics anywhere. */

#ifndef GPT_WG
#define GPT_WG 64 /* work-group of the row kernels (a power of two) */
#endif
#ifndef GPT_ROW_W
#define GPT_ROW_W GPT_WG /* items per row (a power of two, <= GPT_WG) */
#endif
#define GPT_ROWS (GPT_WG / GPT_ROW_W) /* rows per work-group */
#ifndef GPT_RB
#define GPT_RB 16 /* rows per block of the column reductions (gpt.cl) */
#endif
#define GPT_LN_EPS 1e-5f

/* The token source of gpt_tokens: sequence b, position t is
 * windows[idx[tok_off + b] * stride + t], a GPT_TOKEN: uchar for the bytes,
 * ushort for a vocabulary of more than 256 tokens (the launcher builds the
 * program with -DGPT_TOKEN=ushort then). */
#ifndef GPT_TOKEN
#define GPT_TOKEN uchar
#endif
#define GPT_TOKENS global const GPT_TOKEN *windows, global const int *idx, uint tok_off, uint stride
inline uint gpt_token(global const GPT_TOKEN *windows, global const int *idx, uint tok_off,
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

/* gpt_row_sum, gpt_row_sum2, gpt_row_max: the sum (max) of v over the
 * GPT_ROW_W lanes of this item's row, in a fixed tree order, returned to
 * every lane; s holds GPT_WG elements and is free again on return. Every
 * item of the work-group calls it (barriers). */
#if GPT_ROW_W == 1
#define GPT_ROW_REDUCE(NAME, TYPE, COMBINE)                                                       \
    inline TYPE NAME(TYPE v, local TYPE *s) { return v; }
#else
#define GPT_ROW_REDUCE(NAME, TYPE, COMBINE)                                                       \
    inline TYPE NAME(TYPE v, local TYPE *s)                                                     \
    {                                                                                           \
        uint l = get_local_id(0), lane = l % GPT_ROW_W;                                         \
        s[l] = v;                                                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
        for (uint w = GPT_ROW_W / 2; w > 0; w >>= 1) {                                          \
            if (lane < w)                                                                       \
                s[l] = COMBINE(s[l], s[l + w]);                                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
        }                                                                                       \
        TYPE r = s[l - lane];                                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
        return r;                                                                               \
    }
#endif
#define GPT_ADD(a, b) ((a) + (b))
GPT_ROW_REDUCE(gpt_row_sum, float, GPT_ADD)
GPT_ROW_REDUCE(gpt_row_sum2, float2, GPT_ADD)
GPT_ROW_REDUCE(gpt_row_max, float, fmax)

/* This item's lane and row of the rows of the launch (the last work-group
 * may have items past them: valid 0, they take part in the barriers with
 * empty loops and store nothing). */
#define GPT_ROW_ITEM(rows)                                                                        \
    uint l = get_local_id(0), lane = l % GPT_ROW_W;                                             \
    size_t row = (size_t)get_group_id(0) * GPT_ROWS + l / GPT_ROW_W;                            \
    int valid = row < (rows);                                                                   \
    if (!valid)                                                                                 \
        row = 0

/* ------------------------------------------------------------ LayerNorm */

/* The rest of a LayerNorm row once each lane has s, the sum of x[c] - x0
 * over its columns (x0 = x[0]): m = x0 + sum / C, the biased variance
 * around m (a second pass over x), rstd = 1 / sqrt(var + eps),
 * out = (x - m) rstd w + b, mean and rstd stored by lane 0. Shared by
 * gpt_layernorm and gpt_residual_layernorm, so that both round alike: the
 * backward recomputes the fused kernel's output with gpt_layernorm and must
 * get its bits. */
inline void gpt_layernorm_finish(uint C, uint len, uint lane, int valid, size_t row,
                                 global const float *x, float x0, float s, global const float *w,
                                 global const float *b, global float *o, global float *mean,
                                 global float *rstd, local float *red)
{
    float m = x0 + gpt_row_sum(s, red) / C;
    float v = 0.0f;
    for (uint c = lane; c < len; c += GPT_ROW_W) {
        float d = x[c] - m;
        v += d * d;
    }
    float rs = rsqrt(gpt_row_sum(v, red) / C + GPT_LN_EPS);
    for (uint c = lane; c < len; c += GPT_ROW_W)
        o[c] = (x[c] - m) * rs * w[c] + b[c];
    if (valid && lane == 0) {
        mean[row] = m;
        rstd[row] = rs;
    }
}

/* mean, then the biased variance around it (two passes, as PyTorch),
 * rstd = 1 / sqrt(var + eps), out = (x - mean) rstd w + b. The mean is
 * summed as x[0] + mean(x - x[0]): a row far from 0 (the residual stream
 * drifts) keeps its digits, whatever the summation order. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_layernorm(uint N, uint C, global const float *inp, ulong inp_off, global const float *w,
              ulong w_off, global const float *b, ulong b_off, global float *out, ulong out_off,
              global float *mean, ulong mean_off, global float *rstd, ulong rstd_off)
{
    local float red[GPT_WG];
    GPT_ROW_ITEM(N);
    uint len = valid ? C : 0;
    global const float *x = inp + inp_off + row * C;
    float x0 = x[0], s = 0.0f;
    for (uint c = lane; c < len; c += GPT_ROW_W)
        s += x[c] - x0;
    gpt_layernorm_finish(C, len, lane, valid, row, x, x0, s, w + w_off, b + b_off,
                         out + out_off + row * C, mean + mean_off, rstd + rstd_off, red);
}

/* res = a + (b + bias) (bias: has_bias, else res = a + b), the rounding of
 * gpt_bias_add on b followed by gpt_residual, written to res as the lane
 * sums it; then gpt_layernorm of res, read back (each lane reads only the
 * columns it wrote). res may be a: every lane takes x0 = res[0] from
 * a[0], b[0] and bias[0] before any lane writes (the barrier: lane 0
 * writes res[0]). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_residual_layernorm(uint N, uint C, global const float *a, ulong a_off,
                       global const float *b, ulong b_off, global const float *bias,
                       ulong bias_off, int has_bias, global float *res, ulong res_off,
                       global const float *w, ulong w_off, global const float *lnb,
                       ulong lnb_off, global float *out, ulong out_off, global float *mean,
                       ulong mean_off, global float *rstd, ulong rstd_off)
{
    local float red[GPT_WG];
    GPT_ROW_ITEM(N);
    uint len = valid ? C : 0;
    global const float *ar = a + a_off + row * C, *br = b + b_off + row * C;
    global const float *bi = bias + bias_off;
    global float *x = res + res_off + row * C;
    /* an item past the rows reads nothing: its row 0 may be another
     * work-group's, written meanwhile when res is a */
    float x0 = valid ? ar[0] + (has_bias ? br[0] + bi[0] : br[0]) : 0.0f, s = 0.0f;
#if GPT_ROW_W > 1
    barrier(CLK_GLOBAL_MEM_FENCE);
#endif
    for (uint c = lane; c < len; c += GPT_ROW_W) {
        float r = ar[c] + (has_bias ? br[c] + bi[c] : br[c]);
        x[c] = r;
        s += r - x0;
    }
    gpt_layernorm_finish(C, len, lane, valid, row, x, x0, s, w + w_off, lnb + lnb_off,
                         out + out_off + row * C, mean + mean_off, rstd + rstd_off, red);
}

/* LayerNorm's weight and bias gradients, per block of GPT_RB rows:
 * scratch[blk * 2C + c] = sum of dout * xhat, scratch[blk * 2C + C + c] =
 * sum of dout over the block's rows in order, xhat = (inp - mean) rstd;
 * one item per (c, blk), nothing past the last block. */
inline void gpt_layernorm_dwdb(uint N, uint C, uint c, size_t blk, global const float *dout,
                               global const float *inp, global const float *mean,
                               global const float *rstd, global float *scratch)
{
    if (blk >= (N + GPT_RB - 1) / GPT_RB)
        return;
    uint end = min((size_t)N, (blk + 1) * GPT_RB);
    float sw = 0.0f, sb = 0.0f;
    for (uint n = blk * GPT_RB; n < end; n++) {
        size_t i = (size_t)n * C + c;
        float d = dout[i];
        sw += d * ((inp[i] - mean[n]) * rstd[n]);
        sb += d;
    }
    scratch[blk * 2 * C + c] = sw;
    scratch[blk * 2 * C + C + c] = sb;
}

/* Two jobs in one launch, by work-group: groups below row_groups take
 * rows, dinp += rstd (dn - mean(dn) - xhat mean(dn xhat)), dn = w dout;
 * the groups after them take the items (c, blk) of gpt_layernorm_dwdb,
 * c fastest. Neither reads what the other writes (dinp shares nothing
 * with dout or inp), so no order between them is needed; the branch is
 * the same for a whole work-group (the rows' barriers). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_layernorm_backward(uint N, uint C, uint row_groups, global const float *dout,
                       ulong dout_off, global const float *inp, ulong inp_off,
                       global const float *w, ulong w_off, global const float *mean,
                       ulong mean_off, global const float *rstd, ulong rstd_off,
                       global float *dinp, ulong dinp_off, global float *scratch)
{
    local float2 red[GPT_WG];
    if (get_group_id(0) >= row_groups) {
        uint c;
        size_t blk =
            gpt_divmod((get_group_id(0) - row_groups) * GPT_WG + get_local_id(0), C, &c);
        gpt_layernorm_dwdb(N, C, c, blk, dout + dout_off, inp + inp_off, mean + mean_off,
                           rstd + rstd_off, scratch);
        return;
    }
    GPT_ROW_ITEM(N);
    uint len = valid ? C : 0;
    global const float *x = inp + inp_off + row * C;
    global const float *d = dout + dout_off + row * C;
    float m = valid ? mean[mean_off + row] : 0.0f, rs = valid ? rstd[rstd_off + row] : 0.0f;
    float2 part = (float2)(0.0f);
    for (uint c = lane; c < len; c += GPT_ROW_W) {
        float dn = w[w_off + c] * d[c];
        part += (float2)(dn, dn * ((x[c] - m) * rs));
    }
    float2 tot = gpt_row_sum2(part, red) / (float)C;
    global float *di = dinp + dinp_off + row * C;
    for (uint c = lane; c < len; c += GPT_ROW_W) {
        float xhat = (x[c] - m) * rs;
        di[c] += (w[w_off + c] * d[c] - tot.x - xhat * tot.y) * rs;
    }
}

/* ------------------------------------------------------------ loss */

/* Rows r0 .. r0 + nr of the positions n = b * T + t (the head's chunk),
 * row i of V logits at i * ld (ld >= V: the rows padded, columns V .. ld
 * never read or written), its loss at row_loss[i]; the target of position
 * n is the token at t + 1.
 * row_loss[n] = logsumexp - logits[target]; with backward, dlogits =
 * (softmax - onehot) dscale S (S = scale[scale_off] when has_scale), the
 * exponentials stored there as they are summed, then scaled. dlogits may
 * be logits: every element is read and written by one item, in that
 * order, the target's logit passed on through local memory (a local
 * barrier does not order global memory between items). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_xent(GPT_TOKENS, uint T, uint r0, uint nr, uint V, uint ld, global const float *logits,
         ulong logits_off,
         global float *row_loss, ulong loss_off, int backward, float dscale,
         global const float *scale, ulong scale_off, int has_scale, global float *dlogits,
         ulong dlogits_off)
{
    local float red[GPT_WG], target_logit[GPT_ROWS];
    GPT_ROW_ITEM(nr);
    uint len = valid ? V : 0, t, b = (uint)gpt_divmod(r0 + row, T, &t);
    uint y = valid ? gpt_token(windows, idx, tok_off, stride, b, t + 1) : 0;
    global const float *x = logits + logits_off + row * ld;
    if (valid && lane == y % GPT_ROW_W)
        target_logit[l / GPT_ROW_W] = x[y];
    float m = -INFINITY;
    for (uint j = lane; j < len; j += GPT_ROW_W)
        m = fmax(m, x[j]);
    m = gpt_row_max(m, red);
    global float *d = dlogits + dlogits_off + row * ld;
    float s = 0.0f;
    for (uint j = lane; j < len; j += GPT_ROW_W) {
        float e = exp(x[j] - m);
        if (backward)
            d[j] = e;
        s += e;
    }
    s = gpt_row_sum(s, red);
    if (valid && lane == 0)
        row_loss[loss_off + row] = log(s) + m - target_logit[l / GPT_ROW_W];
    if (!backward)
        return;
    float k = dscale * (has_scale ? scale[scale_off] : 1.0f), inv = 1.0f / s;
    for (uint j = lane; j < len; j += GPT_ROW_W)
        d[j] = (d[j] * inv - (j == y ? 1.0f : 0.0f)) * k;
}

/* One work-group of GPT_WG: sums[0] += sum of row_loss[0 .. N) (item l
 * takes l, l + GPT_WG, ...; then a tree), sums[1] += N. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_loss_sum(uint N, global const float *row_loss, ulong loss_off, global float *sums)
{
    local float red[GPT_WG];
    uint l = get_local_id(0);
    float s = 0.0f;
    for (uint n = l; n < N; n += GPT_WG)
        s += row_loss[loss_off + n];
    red[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint w = GPT_WG / 2; w > 0; w >>= 1) {
        if (l < w)
            red[l] += red[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        sums[0] += red[0];
        sums[1] += (float)N;
    }
}
