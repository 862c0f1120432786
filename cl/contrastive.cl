/* contrastive.cl - InfoNCE over a cached batch (src/contrastive.c): per-row
 * inverse norms, the tiled log-sum-exp of every row (pass 1),
 * the tiled gradient with respect to every cached row (pass 2), the
 * normalization's backward, the loss, and the copies in and out of the
 * cache. docs/design.md, section 7, has the equations.
 *
 * Notation: side A's rows a (the rows a work-group owns), side B's rows b
 * (the columns), l_ab = x_a.y_b * r_a * r_b / tau, r the inverse norms (1
 * without normalization). A bank is a second list of columns, after B's.
 *
 * Tiling: a work-group owns TR rows of A and walks the columns in tiles of
 * TC; a tile's dot products are summed over d in chunks of DK staged in
 * local memory, so no kernel holds more than one TR x TC tile of the
 * similarity matrix. Every sum runs in a fixed order (over k, then over
 * the columns of a tile, then tile after tile, B before the bank), and
 * each row's log-sum-exp is one work-item's sequential online reduction:
 * the results depend on the device and the tile sizes, never on the
 * scheduling or on how the cache was filled. */

#ifndef TR
#define TR 32 /* rows of A per work-group */
#endif
#ifndef TC
#define TC 32 /* columns per tile */
#endif
#ifndef DK
#define DK 16 /* d chunk staged in local memory */
#endif
#ifndef DO
#define DO 128 /* d slice of the gradient one work-group writes */
#endif
#ifndef REP_DTYPE
#define REP_DTYPE DT_FP32 /* or DT_BF16: the cache and the banks */
#endif
#ifndef VW
#define VW 4 /* vector width of the dot products: DK / VW vectors per chunk */
#endif
#ifndef VO
#define VO 1 /* vector width of the gradient's accumulation along d */
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
typedef float vec_w;
#define VLOAD_W(p) (*(p))
#else
typedef CAT(float, VW) vec_w;
#define VLOAD_W(p) CAT(vload, VW)(0, p)
#define VSTORE_W(v, p) CAT(vstore, VW)(v, 0, p)
#endif
#if VO == 1
typedef float vec_o;
#define VLOAD_O(p) (*(p))
#define VSTORE_O(v, p) (*(p) = (v))
#else
typedef CAT(float, VO) vec_o;
#define VLOAD_O(p) CAT(vload, VO)(0, p)
#define VSTORE_O(v, p) CAT(vstore, VO)(v, 0, p)
#endif

/* Entries of a TR x TC tile, and vectors of VO of a TR x DO output block,
 * per work-item (the host picks WG, TR, TC, DO and VO so that both divide). */
#define EPW (TR * TC / WG)
#define NOV (TR * DO / WG / VO)
/* Local row pitch of the coefficient tile (+1: no bank conflicts on the
 * row-wise reads of the log-sum-exp). */
#define TCP (TC + 1)
/* F.normalize's eps: a row of norm <= NORM_EPS is divided by NORM_EPS. */
#define NORM_EPS 1e-12f

inline float rep_load(global const void *p, ulong i)
{
#if REP_DTYPE == DT_BF16
    return bf16_to_float(((global const ushort *)p)[i]);
#else
    return ((global const float *)p)[i];
#endif
}

inline void rep_store(global void *p, ulong i, float v)
{
#if REP_DTYPE == DT_BF16
    ((global ushort *)p)[i] = float_to_bf16_rne(v);
#else
    ((global float *)p)[i] = v;
#endif
}

/* Index splits by a divisor that may not be a power of two (d, DO) are
 * written as i - (i / d) * d, not i % d: with both / and %, LLVM inserts a
 * `freeze`, which Oclgrind 21.10's
 * uninitialized-value check cannot interpret (it stops the kernel, and
 * every kernel after it then reads "uninitialized" data). */

/* Any clgrad dtype (fp32, fp16, bf16) at element i. */
inline float load_any(global const void *p, ulong i, uint dtype)
{
    if (dtype == DT_FP16)
        return vload_half(i, (global const half *)p);
    if (dtype == DT_BF16)
        return bf16_to_float(((global const ushort *)p)[i]);
    return ((global const float *)p)[i];
}

/* The lanes of v summed pairwise, in a fixed order (through private
 * memory: Oclgrind 21.10 cannot check lane extracts, see common.cl). */
inline float lane_sum(vec_w v)
{
#if VW == 1
    return v;
#else
    float t[VW];
    VSTORE_W(v, t);
    for (int w = VW / 2; w > 0; w /= 2)
        for (int i = 0; i < w; i++)
            t[i] += t[i + w];
    return t[0];
#endif
}

/* Dot products of this work-item's EPW entries of the tile (rows row0.. of
 * a, na rows; columns col0.. of b, nb rows): entry t is e = lid + t * WG,
 * row e / TC, column e % TC. Past the ends of a or b the rows read as
 * zeros. Each chunk of DK of d is staged row-major in local memory and
 * multiplied VW lanes at a time into one accumulator per entry: lane j
 * sums the products of k = j mod VW, in order of k, and the lanes are
 * summed at the end (lane_sum). The host picks VW (4 or 8); on PoCL, 2
 * cores, explicit vectors ran 5x the scalar loop's speed. */
inline void tile_dots(global const void *a, uint na, uint row0, global const void *b, uint nb,
                      uint col0, uint dim, local float *at, local float *bt, float *acc)
{
    uint lid = get_local_id(0);
    vec_w v[EPW];
    for (int t = 0; t < EPW; t++)
        v[t] = (vec_w)(0.0f);
    for (uint k0 = 0; k0 < dim; k0 += DK) {
        for (uint e = lid; e < TR * DK; e += WG) {
            uint r = e / DK, kk = e % DK, row = row0 + r, k = k0 + kk;
            at[e] = row < na && k < dim ? rep_load(a, (ulong)row * dim + k) : 0.0f;
        }
        for (uint e = lid; e < TC * DK; e += WG) {
            uint c = e / DK, kk = e % DK, col = col0 + c, k = k0 + kk;
            bt[e] = col < nb && k < dim ? rep_load(b, (ulong)col * dim + k) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int t = 0; t < EPW; t++) {
            uint e = lid + (uint)t * WG, r = e / TC, c = e % TC;
            vec_w s = v[t];
            for (uint q = 0; q < DK; q += VW)
                s = fma(VLOAD_W(at + r * DK + q), VLOAD_W(bt + c * DK + q), s);
            v[t] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = 0; t < EPW; t++)
        acc[t] = lane_sum(v[t]);
}

/* One work-item per row i < n: inverse norms of q_i and k_i (1 without
 * normalization). */
kernel void con_prep(CON_PREP_PARAMS)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    float sq = 0.0f, sk = 0.0f;
    for (uint c = 0; c < dim; c++) {
        float x = rep_load(q, i * dim + c), y = rep_load(k, i * dim + c);
        sq += x * x;
        sk += y * y;
    }
    rq[i] = unit_rows ? 1.0f / fmax(sqrt(sq), NORM_EPS) : 1.0f;
    rk[i] = unit_rows ? 1.0f / fmax(sqrt(sk), NORM_EPS) : 1.0f;
}

/* Pass 1, for the TR rows of this work-group: the log-sum-exp of each
 * row's negatives (every column but the row's own positive, b's nb rows
 * then the bank's nbank), by a sequential online reduction whose running
 * maximum keeps every exp() <= 1 whatever the logits' range. From it and
 * the positive's logit p (x = neg - p):
 *   lse[a]   = p + softplus(x)    the row's log-sum-exp, positive included
 *   cp[a]    = sigmoid(x)         1 - softmax(positive)
 *   rloss[a] = softplus(x)        the row's loss, -log softmax(positive)
 * all three without cancellation: a near-converged row (loss 1e-6) keeps
 * its loss and gradient to fp32 precision, where lse - p and p - 1 would
 * keep only their absolute error. No negatives: x = -inf, cp = loss = 0. */
inline float softplus(float x) { return fmax(x, 0.0f) + log1p(exp(-fabs(x))); }

/* The columns of the loss, source src: 0 b's nb rows (the positives among
 * them), 1 the bank's nbank; rows and their inverse norms r. */
typedef struct con_cols {
    global const void *rows;
    global const float *r;
    uint n;
} con_cols;

inline con_cols con_source(uint src, global const void *b, global const float *rb, uint nb,
                           global const void *bank, global const float *rbank, uint nbank)
{
    con_cols k = {src == 0 ? b : bank, src == 0 ? rb : rbank, src == 0 ? nb : nbank};
    return k;
}

/* The logits l = a.c ra rc / tau of the tile of rows row0.. of a (na rows)
 * and columns col0.. of k, 0 past the ends: this work-item's EPW entries
 * (see tile_dots) written to l[r * TCP + c] (local memory; the work-item
 * reads back only its own entries). */
inline void tile_logits(global const void *a, global const float *ra, uint na, uint row0,
                        con_cols k, uint col0, uint dim, float inv_tau, local float *at,
                        local float *bt, local float *l)
{
    float acc[EPW];
    tile_dots(a, na, row0, k.rows, k.n, col0, dim, at, bt, acc);
    for (int t = 0; t < EPW; t++) {
        uint e = get_local_id(0) + (uint)t * WG, r = e / TC, c = e % TC;
        uint row = row0 + r, col = col0 + c;
        l[r * TCP + c] = row < na && col < k.n ? acc[t] * ra[row] * k.r[col] * inv_tau : 0.0f;
    }
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void con_lse(CON_LSE_PARAMS)
{
    local float at[DK * TR], bt[DK * TC], s[TR * TCP];
    uint lid = get_local_id(0), row0 = get_group_id(0) * TR;
    float m = -INFINITY, sum = 0.0f, pos = 0.0f;
    for (uint src = 0; src < 2; src++) {
        const con_cols cs = con_source(src, b, rb, nb, bank, rbank, nbank);
        for (uint col0 = 0; col0 < cs.n; col0 += TC) {
            tile_logits(a, ra, na, row0, cs, col0, dim, inv_tau, at, bt, s);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < TR) {
                uint valid = min((uint)TC, cs.n - col0);
                for (uint c = 0; c < valid; c++) {
                    float v = s[lid * TCP + c];
                    if (src == 0 && col0 + c == row0 + lid) {
                        pos = v;
                    } else if (v > m) {
                        sum = sum * exp(m - v) + 1.0f;
                        m = v;
                    } else {
                        sum += exp(v - m);
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    uint row = row0 + lid;
    if (lid < TR && row < na) {
        float x = (sum > 0.0f ? m + log(sum) : -INFINITY) - pos;
        float sp = softplus(x);
        lse[row] = pos + sp;
        cp[row] = x > 0.0f ? 1.0f / (1.0f + exp(-x)) : exp(x) / (1.0f + exp(x));
        rloss[row] = sp;
    }
}

/* Pass 2: out[a][k] for the TR rows of this work-group and the DO-wide
 * slice of d it owns (work-group = row tile * slices + slice):
 *   out_a = sum_b G_ab * r_b / tau * y_b  (+ the bank's columns),
 *   G_ab  = ca * exp(l_ab - lse_a[a]) + cb * exp(l_ab - lse_b[b])  (b != a),
 *   G_aa  = -ca * cp_a[a] - cb * cp_b[a]                           (the positive),
 * and for bank columns only the first term: the gradient
 * of the loss with respect to the normalized row of a (times nothing yet:
 * con_finish applies the normalization's backward). A coefficient of 0
 * never reads its lse (which may hold anything). */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void con_grad(CON_GRAD_PARAMS)
{
    local float at[DK * TR], bt[DK * TC], g[TR * TCP], bs[TC * DO];
    uint lid = get_local_id(0);
    uint slices = (dim + DO - 1) / DO, tile = get_group_id(0) / slices;
    uint row0 = tile * TR, k0 = (get_group_id(0) - tile * slices) * DO;
    vec_o out_acc[NOV];
    for (int t = 0; t < NOV; t++)
        out_acc[t] = (vec_o)(0.0f);
    for (uint src = 0; src < 2; src++) {
        const con_cols cs = con_source(src, b, rb, nb, bank, rbank, nbank);
        for (uint col0 = 0; col0 < cs.n; col0 += TC) {
            tile_logits(a, ra, na, row0, cs, col0, dim, inv_tau, at, bt, g);
            /* each logit l becomes its entry of G (times r_b / tau) */
            for (int t = 0; t < EPW; t++) {
                uint e = lid + (uint)t * WG, r = e / TC, c = e % TC;
                uint row = row0 + r, col = col0 + c;
                float v = 0.0f;
                if (row < na && col < cs.n) {
                    float l = g[r * TCP + c];
                    if (src == 0 && row == col) {
                        /* the positive: p - 1 = -cp, exactly (con_lse) */
                        if (ca != 0.0f)
                            v = -ca * cp_a[row];
                        if (cb != 0.0f)
                            v -= cb * cp_b[col];
                    } else {
                        if (ca != 0.0f)
                            v = ca * exp(l - lse_a[row]);
                        if (src == 0 && cb != 0.0f)
                            v += cb * exp(l - lse_b[col]);
                    }
                    v *= cs.r[col] * inv_tau;
                }
                g[r * TCP + c] = v;
            }
            for (uint e = lid; e < TC * DO; e += WG) {
                uint c = e / DO, kk = e - c * DO, col = col0 + c, k = k0 + kk;
                bs[e] = col < cs.n && k < dim ? rep_load(cs.rows, (ulong)col * dim + k) : 0.0f;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            /* VO consecutive elements of one row per vector, in the order
             * of the columns */
            for (int t = 0; t < NOV; t++) {
                uint e = lid + (uint)t * WG, r = e / (DO / VO), kk = (e - r * (DO / VO)) * VO;
                vec_o s = out_acc[t];
                for (uint c = 0; c < TC; c++)
                    s = fma((vec_o)(g[r * TCP + c]), VLOAD_O(bs + c * DO + kk), s);
                out_acc[t] = s;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (int t = 0; t < NOV; t++) {
        uint e = lid + (uint)t * WG, r = e / (DO / VO), kk = (e - r * (DO / VO)) * VO;
        uint row = row0 + r;
        float lane[VO];
        VSTORE_O(out_acc[t], lane);
        for (uint j = 0; j < VO; j++)
            if (row < na && k0 + kk + j < dim)
                out[(ulong)row * dim + k0 + kk + j] = lane[j];
    }
}

/* One work-item per row i < n, in place on g: the backward of u = x / max(|x|, eps):
 * g = (g - (g.u) u) / |x| for |x| > eps, g / eps otherwise; g stays as it
 * is without normalization. */
kernel void con_finish(CON_FINISH_PARAMS)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    if (!unit_rows)
        return;
    float sq = 0.0f, gu = 0.0f, r = rx[i];
    for (uint c = 0; c < dim; c++) {
        float v = rep_load(x, i * dim + c);
        sq += v * v;
        gu += g[i * dim + c] * (v * r);
    }
    bool project = sqrt(sq) > NORM_EPS;
    for (uint c = 0; c < dim; c++) {
        float u = rep_load(x, i * dim + c) * r;
        float v = g[i * dim + c];
        g[i * dim + c] = project ? (v - gu * u) * r : v * r;
    }
}

/* One work-group: loss[0] = sum over i < n of cq * rloss_q[i] + ck *
 * rloss_k[i], in a fixed order (common.cl's group_sum). */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void con_loss(CON_LOSS_PARAMS)
{
    local float scratch[WG];
    float acc = 0.0f;
    for (uint i = get_local_id(0); i < n; i += WG) {
        float t = cq * rloss_q[i];
        if (ck != 0.0f)
            t += ck * rloss_k[i];
        acc += t;
    }
    float r = group_sum(acc, scratch);
    if (get_local_id(0) == 0)
        loss[0] = r;
}

/* Cache rows row0 .. row0 + rows of dst from the caller's rows: element
 * (r, c) at src_offset + r * src_stride + c, in src_dtype (fp32, fp16,
 * bf16); stored as REP_DTYPE (bf16: round to nearest even). */
kernel void con_fill(CON_FILL_PARAMS)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * dim)
        return;
    size_t r = i / dim, c = i - r * dim; /* not i % dim: see above */
    float v = load_any(src, src_offset + r * src_stride + c, src_dtype);
    rep_store(dst, (row0 + r) * dim + c, v);
}

/* The caller's copy of gradient rows row0 .. row0 + rows: scale * src at
 * dst_offset + r * dst_stride + c, in dst_dtype (fp16 and bf16: round to
 * nearest even). */
kernel void con_grad_out(CON_GRAD_OUT_PARAMS)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * dim)
        return;
    size_t r = i / dim, c = i - r * dim;
    float v = src[(row0 + r) * dim + c] * scale;
    ulong o = dst_offset + r * dst_stride + c;
    if (dst_dtype == DT_FP16)
        vstore_half_rte(v, o, (global half *)dst);
    else if (dst_dtype == DT_BF16)
        ((global ushort *)dst)[o] = float_to_bf16_rne(v);
    else
        ((global float *)dst)[o] = v;
}
