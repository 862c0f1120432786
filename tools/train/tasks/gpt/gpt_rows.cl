/* gpt_rows.cl - the GPT task's row kernels (LayerNorm, causal softmax,
 * cross-entropy, their backwards, the loss sum) and what every kernel of
 * the task shares; the build puts it in front of gpt.cl (program
 * "gpt", launchers in tools/train/tasks/gpt/gpt_kernels.c).
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
    float m = x0 + gpt_row_sum(s, red) / C;
    float v = 0.0f;
    for (uint c = lane; c < len; c += GPT_ROW_W) {
        float d = x[c] - m;
        v += d * d;
    }
    float rs = rsqrt(gpt_row_sum(v, red) / C + GPT_LN_EPS);
    global float *o = out + out_off + row * C;
    for (uint c = lane; c < len; c += GPT_ROW_W)
        o[c] = (x[c] - m) * rs * w[w_off + c] + b[b_off + c];
    if (valid && lane == 0) {
        mean[mean_off + row] = m;
        rstd[rstd_off + row] = rs;
    }
}

/* dinp += rstd (dn - mean(dn) - xhat mean(dn xhat)), dn = w dout, per row.
 * (dw and db: gpt_layernorm_dwdb in gpt.cl.) */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_layernorm_backward(uint N, uint C, global const float *dout, ulong dout_off,
                       global const float *inp, ulong inp_off, global const float *w, ulong w_off,
                       global const float *mean, ulong mean_off, global const float *rstd,
                       ulong rstd_off, global float *dinp, ulong dinp_off)
{
    local float2 red[GPT_WG];
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

/* ------------------------------------------------------------ causal softmax */

/* Row (r, i) of the R * T rows: softmax of scale * preatt over j <= i,
 * zeros for j > i (never read there). The exponentials go to att as they
 * are summed (one exp per element), then are scaled. att may be preatt:
 * every element is read and written by one item, in that order. */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_softmax_causal(uint R, uint T, float scale, global const float *preatt, ulong preatt_off,
                   global float *att, ulong att_off)
{
    local float red[GPT_WG];
    GPT_ROW_ITEM((size_t)R * T);
    uint i = (uint)(row % T), len = valid ? i + 1 : 0, all = valid ? T : 0;
    global const float *p = preatt + preatt_off + row * T;
    global float *a = att + att_off + row * T;
    float m = -INFINITY;
    for (uint j = lane; j < len; j += GPT_ROW_W)
        m = fmax(m, scale * p[j]);
    m = gpt_row_max(m, red);
    float s = 0.0f;
    for (uint j = lane; j < len; j += GPT_ROW_W) {
        float e = exp(scale * p[j] - m);
        a[j] = e;
        s += e;
    }
    float inv = 1.0f / gpt_row_sum(s, red);
    for (uint j = lane; j < all; j += GPT_ROW_W)
        a[j] = j < len ? a[j] * inv : 0.0f;
}

/* dpreatt[r, i, j] = scale att (datt - sum_j' att datt) for j <= i, 0
 * above. dpreatt may be datt (one item reads, then writes). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_softmax_causal_backward(uint R, uint T, float scale, global const float *att, ulong att_off,
                            global const float *datt, ulong datt_off, global float *dpreatt,
                            ulong dpreatt_off)
{
    local float red[GPT_WG];
    GPT_ROW_ITEM((size_t)R * T);
    uint i = (uint)(row % T), len = valid ? i + 1 : 0, all = valid ? T : 0;
    global const float *a = att + att_off + row * T;
    global const float *da = datt + datt_off + row * T;
    global float *dp = dpreatt + dpreatt_off + row * T;
    float s = 0.0f;
    for (uint j = lane; j < len; j += GPT_ROW_W)
        s += a[j] * da[j];
    s = gpt_row_sum(s, red);
    for (uint j = lane; j < all; j += GPT_ROW_W)
        dp[j] = j < len ? scale * a[j] * (da[j] - s) : 0.0f;
}

/* ------------------------------------------------------------ loss */

/* Row n = b * T + t of V logits; the target is the token at t + 1.
 * row_loss[n] = logsumexp - logits[target]; with backward, dlogits =
 * (softmax - onehot) dscale S (S = scale[scale_off] when has_scale), the
 * exponentials stored there as they are summed, then scaled. dlogits may
 * be logits: every element is read and written by one item, in that
 * order, the target's logit passed on through local memory (a local
 * barrier does not order global memory between items). */
__kernel __attribute__((reqd_work_group_size(GPT_WG, 1, 1))) void
gpt_xent(GPT_TOKENS, uint B, uint T, uint V, global const float *logits, ulong logits_off,
         global float *row_loss, ulong loss_off, int backward, float dscale,
         global const float *scale, ulong scale_off, int has_scale, global float *dlogits,
         ulong dlogits_off)
{
    local float red[GPT_WG], target_logit[GPT_ROWS];
    GPT_ROW_ITEM((size_t)B * T);
    uint len = valid ? V : 0, t, b = (uint)gpt_divmod(row, T, &t);
    uint y = valid ? gpt_token(windows, idx, tok_off, stride, b, t + 1) : 0;
    global const float *x = logits + logits_off + row * V;
    if (valid && lane == y % GPT_ROW_W)
        target_logit[l / GPT_ROW_W] = x[y];
    float m = -INFINITY;
    for (uint j = lane; j < len; j += GPT_ROW_W)
        m = fmax(m, x[j]);
    m = gpt_row_max(m, red);
    global float *d = dlogits + dlogits_off + row * V;
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
