/* gpt_vocab.cl - the GPT task's kernels for a vocabulary of up to 65536
 * tokens (uint16 windows; program "gpt_vocab", launchers and exact
 * semantics in tools/train/tasks/gpt/gpt_vocab.{h,c}): the token
 * embedding, the fused classifier (loss and, in place, dlogits over
 * logits padded to Vp columns) and the token embedding's gradient through
 * a stable radix sort of the positions by token.
 *
 * Buffers come with element offsets (clgrad views), as in gpt.cl. No
 * atomics: every output has one owner, every sum a fixed order, so a run
 * repeats bit for bit on one build. A token >= V never indexes a row of V:
 * the embedding writes NaN for it, the classifier a NaN loss and zero
 * dlogits for a target >= V, and the gradient drops its positions. */

#ifndef VOCAB_WG
#define VOCAB_WG 256 /* work-group of the classifier (a power of two) */
#endif
#ifndef VOCAB_ROW_W
#define VOCAB_ROW_W VOCAB_WG /* items per row of the classifier (a power of two <= VOCAB_WG) */
#endif
#define VOCAB_ROWS (VOCAB_WG / VOCAB_ROW_W) /* rows per work-group */
#ifndef VOCAB_SORT_WG
#define VOCAB_SORT_WG 256 /* keys per block of the radix sort: one per item */
#endif
#define VOCAB_DIGITS 256 /* 8 bits of the key per pass */

/* The token source: sequence b, position t is windows[idx[tok_off + b] *
 * stride + t] (ushort). */
#define VOCAB_TOKENS global const ushort *windows, global const int *idx, uint tok_off, uint stride
inline uint vocab_token(global const ushort *windows, global const int *idx, uint tok_off,
                        uint stride, uint b, uint t)
{
    return windows[(ulong)idx[tok_off + b] * stride + t];
}

/* q = a / d, *r = a - q d (gpt_rows.cl's gpt_divmod: a / and a % side by
 * side make a `freeze` that Oclgrind cannot run). */
inline uint vocab_divmod(uint a, uint d, uint *r)
{
    uint q = a / d;
    *r = a - q * d;
    return q;
}

/* ------------------------------------------------------------ embedding */

/* out[n, c] = wte[tok, c] + wpe[t, c], n = b T + t; NaN for a token >= V
 * (no read past wte). Item (c, n). */
__kernel void gpt_vocab_embed(VOCAB_TOKENS, uint B, uint T, uint C, uint V,
                              global const float *wte, ulong wte_off, global const float *wpe,
                              ulong wpe_off, global float *out, ulong out_off)
{
    uint c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= B * T)
        return;
    uint t, b = vocab_divmod(n, T, &t);
    uint tok = vocab_token(windows, idx, tok_off, stride, b, t);
    out[out_off + (size_t)n * C + c] =
        tok < V ? wte[wte_off + (size_t)tok * C + c] + wpe[wpe_off + (size_t)t * C + c] : NAN;
}

/* ------------------------------------------------------------ classifier */

/* The classifier reads a row VOCAB_VEC columns at a time (1, 4, 8 or 16:
 * vectors, for a CPU device's SIMD units): vfloat, its load and store at
 * vector index q, and its components combined in a fixed order (halves
 * first, recursively). */
#ifndef VOCAB_VEC
#define VOCAB_VEC 1
#endif
#define VOCAB_ADD(a, b) ((a) + (b))
/* VOCAB_KEEP_EXP 1: with backward, the sum's pass stores each exp(x - max)
 * in place and the last pass reads it back (a CPU device, where exp costs
 * more than the write); 0: the last pass computes it again from x (a GPU,
 * where the bytes cost more). The same bits either way. */
#ifndef VOCAB_KEEP_EXP
#define VOCAB_KEEP_EXP 0
#endif
#if VOCAB_KEEP_EXP
#define VOCAB_EXP_AGAIN(x) (x)
#else
#define VOCAB_EXP_AGAIN(x) exp((x) - m)
#endif
#if VOCAB_VEC == 1
typedef float vfloat;
typedef uint vuint;
#define VLOAD(q, p) ((p)[q])
#define VSTORE(v, q, p) ((p)[q] = (v))
#define VIOTA ((vuint)0)
inline float vocab_hsum(vfloat v) { return v; }
inline float vocab_hmax(vfloat v) { return v; }
#else
#define VOCAB_CAT(a, b) a##b
#define VOCAB_XCAT(a, b) VOCAB_CAT(a, b)
typedef VOCAB_XCAT(float, VOCAB_VEC) vfloat;
typedef VOCAB_XCAT(uint, VOCAB_VEC) vuint;
#define VLOAD(q, p) VOCAB_XCAT(vload, VOCAB_VEC)(q, p)
#define VSTORE(v, q, p) VOCAB_XCAT(vstore, VOCAB_VEC)(v, q, p)
#if VOCAB_VEC == 4
#define VIOTA ((vuint)(0, 1, 2, 3))
#elif VOCAB_VEC == 8
#define VIOTA ((vuint)(0, 1, 2, 3, 4, 5, 6, 7))
#elif VOCAB_VEC == 16
#define VIOTA ((vuint)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#else
#error "VOCAB_VEC is 1, 4, 8 or 16"
#endif
/* The components through private memory, then OP(lower half, upper
 * half) down to one (swizzles of .lo and .hi crashed Oclgrind 21.10's
 * uninitialized-value check). */
#define VOCAB_HORIZONTAL(NAME, COMBINE)                                                           \
    inline float NAME(vfloat v)                                                                 \
    {                                                                                           \
        float a[VOCAB_VEC];                                                                     \
        VSTORE(v, 0, a);                                                                        \
        for (uint w = VOCAB_VEC / 2; w > 0; w >>= 1)                                            \
            for (uint c = 0; c < w; c++)                                                        \
                a[c] = COMBINE(a[c], a[c + w]);                                                 \
        return a[0];                                                                            \
    }
VOCAB_HORIZONTAL(vocab_hsum, VOCAB_ADD)
VOCAB_HORIZONTAL(vocab_hmax, fmax)
#endif

/* The max (sum) of v over the VOCAB_ROW_W lanes of this item's row, in a
 * fixed tree order, returned to every lane; s holds VOCAB_WG floats and is
 * free again on return. Every item of the work-group calls it. */
#if VOCAB_ROW_W == 1
inline float vocab_row_max(float v, local float *s) { return v; }
inline float vocab_row_sum(float v, local float *s) { return v; }
#else
#define VOCAB_ROW_REDUCE(NAME, COMBINE)                                                           \
    inline float NAME(float v, local float *s)                                                  \
    {                                                                                           \
        uint l = get_local_id(0), lane = l % VOCAB_ROW_W;                                       \
        s[l] = v;                                                                               \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
        for (uint w = VOCAB_ROW_W / 2; w > 0; w >>= 1) {                                        \
            if (lane < w)                                                                       \
                s[l] = COMBINE(s[l], s[l + w]);                                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                       \
        }                                                                                       \
        float r = s[l - lane];                                                                  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                           \
        return r;                                                                               \
    }
VOCAB_ROW_REDUCE(vocab_row_max, fmax)
VOCAB_ROW_REDUCE(vocab_row_sum, VOCAB_ADD)
#endif

/* Rows r0 .. r0 + nr of the N = B T rows of the micro-batch; row n = b T
 * + t, its target the token at t + 1 of sequence b. logits holds the
 * chunk: row n at (n - r0) Vp, Vp (a multiple of 64) >= V columns of which
 * V..Vp-1 are padding (never read). The row's first nv = V / VOCAB_VEC
 * whole vectors go to the lanes in turn (lane takes vectors lane, lane +
 * ROW_W, ...), the tail of V past them column by column likewise: max,
 * then the sum of exp(x - max), each lane's components combined in a fixed
 * order, then a tree over the lanes. row_loss[n] = log(sum) + max -
 * x[target], by the lane that reads x[target] first (the tail's or the
 * vector's owner: it is the one that later overwrites it, so no other
 * item's global write needs ordering). With backward, every column j < V
 * becomes (exp(x_j - max) / sum - (j == target)) dscale S (S =
 * scale[scale_off] when has_scale, else 1) (the exponential kept or
 * computed again: VOCAB_KEEP_EXP), and the padding 0. A target >= V:
 * row_loss NaN, dlogits 0 over the whole row. */
__kernel __attribute__((reqd_work_group_size(VOCAB_WG, 1, 1))) void
gpt_vocab_xent(VOCAB_TOKENS, uint T, uint V, uint Vp, uint r0, uint nr,
               global float *logits, ulong logits_off, global float *row_loss, ulong loss_off,
               int backward, float dscale, global const float *scale, ulong scale_off,
               int has_scale)
{
    local float red[VOCAB_WG];
    uint l = get_local_id(0), lane = l % VOCAB_ROW_W;
    uint i = get_group_id(0) * VOCAB_ROWS + l / VOCAB_ROW_W; /* row of the chunk */
    int valid = i < nr;
    uint n = r0 + (valid ? i : 0), t, b = vocab_divmod(n, T, &t);
    uint y = valid ? vocab_token(windows, idx, tok_off, stride, b, t + 1) : 0;
    int known = y < V;
    /* items past the rows take part in the barriers only */
    uint nv = valid ? V / VOCAB_VEC : 0, tail = nv * VOCAB_VEC, len = valid ? V : 0;
    uint owner = y < tail ? y / VOCAB_VEC % VOCAB_ROW_W : (y - tail) % VOCAB_ROW_W;
    global float *x = logits + logits_off + (size_t)(valid ? i : 0) * Vp;
    float target = valid && known && lane == owner ? x[y] : 0.0f;
    vfloat mv = -INFINITY;
    for (uint q = lane; q < nv; q += VOCAB_ROW_W)
        mv = fmax(mv, VLOAD(q, x));
    float m = vocab_hmax(mv);
    for (uint j = tail + lane; j < len; j += VOCAB_ROW_W)
        m = fmax(m, x[j]);
    m = vocab_row_max(m, red);
    vfloat sv = 0.0f;
    float s = 0.0f;
    if (VOCAB_KEEP_EXP && backward) { /* the loops twice: no test inside them */
        for (uint q = lane; q < nv; q += VOCAB_ROW_W) {
            vfloat e = exp(VLOAD(q, x) - m);
            VSTORE(e, q, x);
            sv += e;
        }
        s = vocab_hsum(sv);
        for (uint j = tail + lane; j < len; j += VOCAB_ROW_W) {
            float e = exp(x[j] - m);
            x[j] = e;
            s += e;
        }
    } else {
        for (uint q = lane; q < nv; q += VOCAB_ROW_W)
            sv += exp(VLOAD(q, x) - m);
        s = vocab_hsum(sv);
        for (uint j = tail + lane; j < len; j += VOCAB_ROW_W)
            s += exp(x[j] - m);
    }
    s = vocab_row_sum(s, red);
    if (valid && !known && lane == 0)
        row_loss[loss_off + n] = NAN;
    if (valid && known && lane == owner)
        row_loss[loss_off + n] = log(s) + m - target;
    if (!backward || !valid)
        return;
    float k = dscale * (has_scale ? scale[scale_off] : 1.0f), inv = 1.0f / s;
    /* each column written by the item that read it (pass 1): no other
     * item's access to order, the unknown target's zeros too */
    for (uint q = lane; q < nv; q += VOCAB_ROW_W) {
        vfloat d = 0.0f;
        if (known) {
            vuint col = q * VOCAB_VEC + VIOTA;
            vfloat hot = select((vfloat)0.0f, (vfloat)1.0f, col == (vuint)y);
            d = (VOCAB_EXP_AGAIN(VLOAD(q, x)) * inv - hot) * k;
        }
        VSTORE(d, q, x);
    }
    for (uint j = tail + lane; j < Vp; j += VOCAB_ROW_W)
        x[j] = j < V && known ? (VOCAB_EXP_AGAIN(x[j]) * inv - (j == y ? 1.0f : 0.0f)) * k : 0.0f;
}

/* ------------------------------------------------------------ radix sort */

/* The N positions sorted by token, stably (ascending positions within a
 * token), by a least-significant-digit radix sort of two passes of 8 bits.
 * A pass over keys `in` (ints; the tokens themselves in the first pass,
 * read through VOCAB_TOKENS when from_tokens) and positions `vin`
 * (identity in the first pass) is three launches, one block of
 * VOCAB_SORT_WG keys per work-group:
 *   1. gpt_vocab_sort_count: count[d nblocks + blk] = the keys of block
 *      blk whose digit is d (item d counts them: no atomics);
 *   2. gpt_vocab_sort_scan: the exclusive prefix sum of count in that
 *      order (digit-major), so count[d nblocks + blk] becomes where block
 *      blk's first key of digit d goes;
 *   3. gpt_vocab_sort_scatter: each key to its block's start for its digit
 *      plus its rank among the block's earlier keys of that digit.
 * Scratch comes as one int buffer with element offsets. */

/* Key n of a pass's input, and its digit. */
inline uint vocab_sort_key(VOCAB_TOKENS, uint T, int from_tokens, global const int *in, uint n)
{
    if (!from_tokens)
        return (uint)in[n];
    uint t, b = vocab_divmod(n, T, &t);
    return vocab_token(windows, idx, tok_off, stride, b, t);
}

/* Loads block blk's digits into dig (VOCAB_SORT_WG of them, 256 = none
 * past N) and returns this item's key (0 past N). */
inline uint vocab_sort_load(VOCAB_TOKENS, uint T, uint N, int from_tokens, global const int *in,
                            uint shift, local ushort *dig)
{
    uint l = get_local_id(0), n = get_group_id(0) * VOCAB_SORT_WG + l;
    uint key = n < N ? vocab_sort_key(windows, idx, tok_off, stride, T, from_tokens, in, n) : 0;
    dig[l] = n < N ? (key >> shift) & (VOCAB_DIGITS - 1) : VOCAB_DIGITS;
    barrier(CLK_LOCAL_MEM_FENCE);
    return key;
}

__kernel __attribute__((reqd_work_group_size(VOCAB_SORT_WG, 1, 1))) void
gpt_vocab_sort_count(VOCAB_TOKENS, uint T, uint N, int from_tokens, global const int *in,
                     ulong in_off, uint shift, global int *count, ulong count_off)
{
    local ushort dig[VOCAB_SORT_WG];
    vocab_sort_load(windows, idx, tok_off, stride, T, N, from_tokens, in + in_off, shift, dig);
    uint blk = get_group_id(0), nblocks = get_num_groups(0);
    for (uint d = get_local_id(0); d < VOCAB_DIGITS; d += VOCAB_SORT_WG) {
        int c = 0;
        for (uint j = 0; j < VOCAB_SORT_WG; j++)
            c += dig[j] == d;
        count[count_off + (size_t)d * nblocks + blk] = c;
    }
}

/* One work-group: item l takes digits l, l + VOCAB_SORT_WG, ...; each
 * digit's row of nblocks counts becomes its exclusive prefix, then item 0
 * adds up the digits' totals in order, and every row gets its base. */
__kernel __attribute__((reqd_work_group_size(VOCAB_SORT_WG, 1, 1))) void
gpt_vocab_sort_scan(uint nblocks, global int *count, ulong count_off)
{
    local int base[VOCAB_DIGITS];
    global int *cnt = count + count_off;
    for (uint d = get_local_id(0); d < VOCAB_DIGITS; d += VOCAB_SORT_WG) {
        int s = 0;
        for (uint blk = 0; blk < nblocks; blk++) {
            int c = cnt[(size_t)d * nblocks + blk];
            cnt[(size_t)d * nblocks + blk] = s;
            s += c;
        }
        base[d] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        int s = 0;
        for (uint d = 0; d < VOCAB_DIGITS; d++) {
            int c = base[d];
            base[d] = s;
            s += c;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = get_local_id(0); d < VOCAB_DIGITS; d += VOCAB_SORT_WG)
        for (uint blk = 0; blk < nblocks; blk++)
            cnt[(size_t)d * nblocks + blk] += base[d];
}

/* out[dst] = key, vout[dst] = its position (vin's, or n itself when
 * from_tokens), dst = count[digit nblocks + blk] + the number of the
 * block's earlier keys with the same digit: stable. */
__kernel __attribute__((reqd_work_group_size(VOCAB_SORT_WG, 1, 1))) void
gpt_vocab_sort_scatter(VOCAB_TOKENS, uint T, uint N, int from_tokens, global const int *in,
                       ulong in_off, global const int *vin, ulong vin_off, uint shift,
                       global const int *count, ulong count_off, global int *out, ulong out_off,
                       global int *vout, ulong vout_off)
{
    local ushort dig[VOCAB_SORT_WG];
    uint key =
        vocab_sort_load(windows, idx, tok_off, stride, T, N, from_tokens, in + in_off, shift, dig);
    uint l = get_local_id(0), n = get_group_id(0) * VOCAB_SORT_WG + l;
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
 * of the N sorted keys), so token v's positions are sorted[start[v] ..
 * start[v + 1]) and tokens >= V lie past start[V]. */
__kernel void gpt_vocab_run_starts(uint N, uint V, global const int *keys, ulong keys_off,
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

/* dwte[v, c] = beta dwte[v, c] + the sum of dout[p, c] over token v's
 * positions p in ascending order (beta 0: the sum alone, dwte not read);
 * beta 1 leaves the row of a token absent from the positions untouched
 * (not read, not written). Item (c, v). */
__kernel void gpt_vocab_wte_grad(uint C, uint V, global const int *start, ulong start_off,
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
