/* gpt_flash.cl - the GPT task's causal self-attention in O(T) memory
 * (program "gpt_flash", launchers in tools/train/tasks/gpt/gpt_flash.c):
 * no [T x T] matrix is ever stored. The forward keeps each row's
 * log-sum-exp; the backward recomputes the probabilities from it, tile by
 * tile.
 *
 * R = B * NH heads of T rows of FLASH_HS floats: row t of head r = b NH + h
 * at element (b T + t) ld + h FLASH_HS of its tensor (gpt_flash.h's
 * layout: ld_qkv for q, k, v and their gradients, ld_y for y and dy; the
 * model's qkv rows [B T x 3C] and y [B T x C], or the split [R x T x HS]
 * with NH 1 and ld FLASH_HS); lse and dsum [R x T]. Row i of head r
 * attends to keys j <= i with p_ij = softmax_j(scale q_i . k_j).
 *
 * Built per head size and per device (-D options, gpt_flash.c picks them):
 *   FLASH_HS    the head size (private arrays of that many floats);
 *   FLASH_ROWS  the rows a work-group owns, one work-item each: query rows
 *               in the forward and gpt_flash_backward_dq, key rows in
 *               gpt_flash_backward_dkdv (its work-group size);
 *   FLASH_TILE  the rows of the other side streamed through local memory
 *               per step: key tiles, or query tiles in dkdv.
 * Every work-item owns its outputs and sums them over the streamed rows in
 * ascending order: no atomics, and a run repeats bit for bit on one build.
 * Items past T take part in the barriers and compute nothing. */

#ifndef FLASH_HS
#error "build with -DFLASH_HS (the head size)"
#endif
#ifndef FLASH_ROWS
#define FLASH_ROWS 16
#endif
#ifndef FLASH_TILE
#define FLASH_TILE 16
#endif

/* The items of a work-group copy count floats of src (n_src of them
 * readable, zeros after: the tile past T is defined, though never used)
 * into dst; the caller puts the barriers around. */
inline void flash_load(local float *dst, global const float *src, size_t n_src, uint count)
{
    for (uint e = get_local_id(0); e < count; e += FLASH_ROWS)
        dst[e] = e < n_src ? src[e] : 0.0f;
}

/* The same for rows rows of FLASH_HS floats at stride ld (n_rows of them
 * readable), packed in dst, each with bias (FLASH_HS floats, or none)
 * added as the GEMM's bias add would have (one float addition). */
inline void flash_load_rows(local float *dst, global const float *src, uint ld, uint n_rows,
                            uint rows, global const float *bias)
{
    for (uint e = get_local_id(0); e < rows * FLASH_HS; e += FLASH_ROWS) {
        uint r = e / FLASH_HS, d = e % FLASH_HS;
        float x = r < n_rows ? src[(size_t)r * ld + d] : 0.0f;
        dst[e] = bias && r < n_rows ? x + bias[d] : x;
    }
}

/* Head r's part of a bias [3 x NH x FLASH_HS] (q's, k's, v's: which 0, 1,
 * 2), or none. */
inline global const float *flash_bias(global const float *bias, ulong off, size_t r, uint NH,
                                      uint which)
{
    return bias ? bias + off + ((size_t)which * NH + r % NH) * FLASH_HS : 0;
}

/* Element 0 of head r's row 0 in a tensor of stride ld. */
inline size_t flash_head(size_t r, uint NH, uint T, uint ld)
{
    return (r / NH) * T * ld + (r % NH) * FLASH_HS;
}

inline float flash_dot(const float *a, local const float *b)
{
    float s = 0.0f;
    for (uint d = 0; d < FLASH_HS; d++)
        s += a[d] * b[d];
    return s;
}

inline float flash_dot_global(const float *a, global const float *b)
{
    float s = 0.0f;
    for (uint d = 0; d < FLASH_HS; d++)
        s += a[d] * b[d];
    return s;
}

/* The HS floats of a row into private memory (zeros for an item past T),
 * with bias added (or none). */
inline void flash_row(float *dst, global const float *src, int valid, global const float *bias)
{
    for (uint d = 0; d < FLASH_HS; d++)
        dst[d] = !valid ? 0.0f : bias ? src[d] + bias[d] : src[d];
}

/* The streamed rows n0 .. n0 + FLASH_TILE of a and b (T rows each, at
 * strides lda and ldb from their heads' row 0, biases ba and bb added)
 * into la and lb, after the previous tile was used. */
inline void flash_load_tiles(local float *la, local float *lb, global const float *a, uint lda,
                             global const float *ba, global const float *b, uint ldb,
                             global const float *bb, uint n0, uint T)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    flash_load_rows(la, a + (size_t)n0 * lda, lda, T - n0, FLASH_TILE, ba);
    flash_load_rows(lb, b + (size_t)n0 * ldb, ldb, T - n0, FLASH_TILE, bb);
}

/* The keys j <= i of the key tile at j0 (0 for an item past T). */
inline uint flash_keys(int valid, uint i, uint j0)
{
    return valid && i >= j0 ? min((uint)FLASH_TILE, i - j0 + 1) : 0;
}

/* Every kernel's first arguments: T, scale, NH (heads per sequence) and
 * the strides ld_qkv, ld_y. */
#define FLASH_SHAPE_ARGS uint T, float scale, uint NH, uint ld_qkv, uint ld_y
/* ... then c_attn's bias [3 x NH x FLASH_HS] (q's, k's and v's parts),
 * added to q, k and v as they are read, or NULL: none. */
#define FLASH_BIAS_ARGS global const float *bias, ulong bias_off
#define FLASH_BIASES(r)                                                                            \
    global const float *bq = flash_bias(bias, bias_off, (r), NH, 0),                               \
                       *bk = flash_bias(bias, bias_off, (r), NH, 1),                               \
                       *bv = flash_bias(bias, bias_off, (r), NH, 2)

/* Work-group (query tile, head): y_i = sum_j p_ij v_j and lse_i =
 * log sum_j exp(scale q_i . k_j) over j <= i, by online softmax: each key
 * tile's scores, then the running max m moved to the tile's if larger and
 * the running sum and y rescaled by exp(m_old - m_new) once per tile. */
__kernel __attribute__((reqd_work_group_size(FLASH_ROWS, 1, 1))) void
gpt_flash_forward(FLASH_SHAPE_ARGS, FLASH_BIAS_ARGS, global const float *q, ulong q_off,
                  global const float *k, ulong k_off, global const float *v, ulong v_off,
                  global float *y, ulong y_off, global float *lse, ulong lse_off)
{
    local float kt[FLASH_TILE * FLASH_HS], vt[FLASH_TILE * FLASH_HS];
    size_t head = get_global_id(1), base = flash_head(head, NH, T, ld_qkv);
    uint i0 = (uint)get_group_id(0) * FLASH_ROWS, i = i0 + (uint)get_local_id(0);
    int valid = i < T;
    float qi[FLASH_HS], acc[FLASH_HS], sc[FLASH_TILE];
    FLASH_BIASES(head);
    flash_row(qi, q + q_off + base + (size_t)i * ld_qkv, valid, bq);
    for (uint d = 0; d < FLASH_HS; d++)
        acc[d] = 0.0f;
    float m = -INFINITY, s = 0.0f;
    uint keys_end = min(T, i0 + FLASH_ROWS); /* the work-group's last row sees these */
    for (uint j0 = 0; j0 < keys_end; j0 += FLASH_TILE) {
        flash_load_tiles(kt, vt, k + k_off + base, ld_qkv, bk, v + v_off + base, ld_qkv, bv, j0,
                         T);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint n = flash_keys(valid, i, j0);
        if (n == 0)
            continue;
        float tile_max = -INFINITY;
        for (uint jj = 0; jj < n; jj++) {
            sc[jj] = scale * flash_dot(qi, kt + jj * FLASH_HS);
            tile_max = fmax(tile_max, sc[jj]);
        }
        float m_new = fmax(m, tile_max), rescale = exp(m - m_new); /* 0 on the first tile */
        s *= rescale;
        for (uint d = 0; d < FLASH_HS; d++)
            acc[d] *= rescale;
        for (uint jj = 0; jj < n; jj++) {
            float p = exp(sc[jj] - m_new);
            s += p;
            for (uint d = 0; d < FLASH_HS; d++)
                acc[d] += p * vt[jj * FLASH_HS + d];
        }
        m = m_new;
    }
    if (!valid)
        return;
    float inv = 1.0f / s;
    global float *yi = y + y_off + flash_head(head, NH, T, ld_y) + (size_t)i * ld_y;
    for (uint d = 0; d < FLASH_HS; d++)
        yi[d] = acc[d] * inv;
    lse[lse_off + head * T + i] = m + log(s);
}

/* Work-group (query tile, head): D_i = dy_i . y_i (into dsum, for
 * gpt_flash_backward_dkdv, which runs after it), then over the key tiles
 * p_ij = exp(scale q_i . k_j - lse_i), ds_ij = p_ij (dy_i . v_j - D_i) and
 * dq_i = scale sum_j ds_ij k_j. */
__kernel __attribute__((reqd_work_group_size(FLASH_ROWS, 1, 1))) void
gpt_flash_backward_dq(FLASH_SHAPE_ARGS, FLASH_BIAS_ARGS, global const float *q, ulong q_off,
                      global const float *k, ulong k_off, global const float *v, ulong v_off,
                      global const float *y, ulong y_off, global const float *lse, ulong lse_off,
                      global const float *dy, ulong dy_off, global float *dsum, ulong dsum_off,
                      global float *dq, ulong dq_off)
{
    local float kt[FLASH_TILE * FLASH_HS], vt[FLASH_TILE * FLASH_HS];
    size_t head = get_global_id(1), base = flash_head(head, NH, T, ld_qkv);
    uint i0 = (uint)get_group_id(0) * FLASH_ROWS, i = i0 + (uint)get_local_id(0);
    int valid = i < T;
    size_t row = base + (size_t)i * ld_qkv;
    size_t row_y = flash_head(head, NH, T, ld_y) + (size_t)i * ld_y;
    float qi[FLASH_HS], dyi[FLASH_HS], acc[FLASH_HS];
    FLASH_BIASES(head);
    flash_row(qi, q + q_off + row, valid, bq);
    flash_row(dyi, dy + dy_off + row_y, valid, 0);
    for (uint d = 0; d < FLASH_HS; d++)
        acc[d] = 0.0f;
    float Di = valid ? flash_dot_global(dyi, y + y_off + row_y) : 0.0f;
    float lse_i = valid ? lse[lse_off + head * T + i] : 0.0f;
    if (valid)
        dsum[dsum_off + head * T + i] = Di;
    uint keys_end = min(T, i0 + FLASH_ROWS);
    for (uint j0 = 0; j0 < keys_end; j0 += FLASH_TILE) {
        flash_load_tiles(kt, vt, k + k_off + base, ld_qkv, bk, v + v_off + base, ld_qkv, bv, j0,
                         T);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint n = flash_keys(valid, i, j0);
        for (uint jj = 0; jj < n; jj++) {
            local const float *kj = kt + jj * FLASH_HS;
            float p = exp(scale * flash_dot(qi, kj) - lse_i);
            float ds = p * (flash_dot(dyi, vt + jj * FLASH_HS) - Di);
            for (uint d = 0; d < FLASH_HS; d++)
                acc[d] += ds * kj[d];
        }
    }
    if (!valid)
        return;
    global float *dqi = dq + dq_off + row;
    for (uint d = 0; d < FLASH_HS; d++)
        dqi[d] = scale * acc[d];
}

/* Work-group (key tile, head): over the query tiles from the group's
 * first key on, for i >= j: p_ij as above, dv_j = sum_i p_ij dy_i and
 * dk_j = scale sum_i p_ij (dy_i . v_j - D_i) q_i. Needs dsum from
 * gpt_flash_backward_dq. */
__kernel __attribute__((reqd_work_group_size(FLASH_ROWS, 1, 1))) void
gpt_flash_backward_dkdv(FLASH_SHAPE_ARGS, FLASH_BIAS_ARGS, global const float *q, ulong q_off,
                        global const float *k, ulong k_off, global const float *v, ulong v_off,
                        global const float *lse, ulong lse_off, global const float *dsum,
                        ulong dsum_off, global const float *dy, ulong dy_off, global float *dk,
                        ulong dk_off, global float *dv, ulong dv_off)
{
    local float qt[FLASH_TILE * FLASH_HS], dyt[FLASH_TILE * FLASH_HS];
    local float lse_t[FLASH_TILE], dsum_t[FLASH_TILE];
    size_t head = get_global_id(1), base = flash_head(head, NH, T, ld_qkv);
    size_t base_y = flash_head(head, NH, T, ld_y);
    uint j0 = (uint)get_group_id(0) * FLASH_ROWS, j = j0 + (uint)get_local_id(0);
    int valid = j < T;
    size_t row = base + (size_t)j * ld_qkv;
    float kj[FLASH_HS], vj[FLASH_HS], dk_acc[FLASH_HS], dv_acc[FLASH_HS];
    FLASH_BIASES(head);
    flash_row(kj, k + k_off + row, valid, bk);
    flash_row(vj, v + v_off + row, valid, bv);
    for (uint d = 0; d < FLASH_HS; d++)
        dk_acc[d] = dv_acc[d] = 0.0f;
    for (uint n0 = j0; n0 < T; n0 += FLASH_TILE) {
        flash_load_tiles(qt, dyt, q + q_off + base, ld_qkv, bq, dy + dy_off + base_y, ld_y, 0, n0,
                         T);
        flash_load(lse_t, lse + lse_off + head * T + n0, T - n0, FLASH_TILE);
        flash_load(dsum_t, dsum + dsum_off + head * T + n0, T - n0, FLASH_TILE);
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the queries i = n0 + ii >= j of this tile, none for an item past T
         * (a test in the loop: a start of max(j - n0, 0) compiles to
         * llvm.usub.sat, which Oclgrind 21.10 cannot run) */
        uint end = valid ? min((uint)FLASH_TILE, T - n0) : 0;
        for (uint ii = 0; ii < end; ii++) {
            if (n0 + ii < j)
                continue;
            local const float *qi = qt + ii * FLASH_HS, *dyi = dyt + ii * FLASH_HS;
            float p = exp(scale * flash_dot(kj, qi) - lse_t[ii]);
            float ds = p * (flash_dot(vj, dyi) - dsum_t[ii]);
            for (uint d = 0; d < FLASH_HS; d++) {
                dv_acc[d] += p * dyi[d];
                dk_acc[d] += ds * qi[d];
            }
        }
    }
    if (!valid)
        return;
    global float *dkj = dk + dk_off + row, *dvj = dv + dv_off + row;
    for (uint d = 0; d < FLASH_HS; d++) {
        dkj[d] = scale * dk_acc[d];
        dvj[d] = dv_acc[d];
    }
}
