/* contrastive_train.cl - kernels of clgrad-train's contrastive task
 * (tools/train/contrastive_*.c) besides the GEMMs (CLBlast) and the MLP's
 * own (nn/mlp.cl): the two augmented views of each sample, seeded by
 * clg_sample_seed's formula so that they are a function of (seed, update,
 * position in the effective batch) alone; row normalization for the kNN
 * evaluation; and the running loss sums. IMG_ROWS x IMG_COLS is the image
 * shape (-D options of the host). */

#ifndef IMG_ROWS
#define IMG_ROWS 28
#endif
#ifndef IMG_COLS
#define IMG_COLS 28
#endif
#define IMG_PIXELS (IMG_ROWS * IMG_COLS)

/* clgrad.h's clg_sample_seed, word for word (test_train_contrastive.c
 * compares the two). */
inline ulong mix64(ulong x)
{
    ulong z = x + 0x9e3779b97f4a7c15UL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    return z ^ (z >> 31);
}

inline ulong sample_seed(ulong seed, ulong update, ulong position)
{
    ulong h = mix64(seed ^ 0x636c677261645f73UL);
    h = mix64(h ^ update);
    return mix64(h ^ position);
}

/* seeds[r] = sample_seed(seed, update, pos0 + r): for the test only. */
kernel void con_seeds(ulong seed, ulong update, uint pos0, uint rows, global ulong *seeds)
{
    size_t r = get_global_id(0);
    if (r < rows)
        seeds[r] = sample_seed(seed, update, pos0 + r);
}

/* The two views of the samples at positions pos0 .. pos0 + rows of update
 * `update`'s effective batch, whose images are images[idx[off + r]]: view v
 * of row r is x row v * rows + r (queries, then keys). A view is the image
 * shifted by (dx, dy), each uniform in [-shift, shift], zeros shifted in,
 * plus Gaussian noise of std `noise` per pixel, clamped to [0, 1]. The
 * shift comes from the view's stream mix64(s ^ (v + 1)), s the sample's
 * seed, and a pixel's noise from mix64(stream ^ (pixel + 1) << 32). Index
 * splits are written without %: see contrastive.cl. */
kernel void con_views(global const uchar *images, global const int *idx, uint off, uint rows,
                      ulong seed, ulong update, uint pos0, uint shift, float noise,
                      global float *x)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)2 * rows * IMG_PIXELS)
        return;
    uint rv = (uint)(i / IMG_PIXELS), pix = (uint)(i - (size_t)rv * IMG_PIXELS);
    uint v = rv / rows, r = rv - v * rows;
    ulong stream = mix64(sample_seed(seed, update, pos0 + r) ^ (ulong)(v + 1));
    uint range = 2 * shift + 1;
    int dx = (int)((uint)(stream & 0xffffu) % range) - (int)shift;
    int dy = (int)((uint)((stream >> 16) & 0xffffu) % range) - (int)shift;
    int y = (int)(pix / IMG_COLS), c = (int)pix - y * IMG_COLS;
    int sy = y - dy, sx = c - dx;
    float val = 0.0f;
    if (sy >= 0 && sy < IMG_ROWS && sx >= 0 && sx < IMG_COLS)
        val = (float)images[(size_t)idx[off + r] * IMG_PIXELS + (size_t)(sy * IMG_COLS + sx)] *
              (1.0f / 255.0f);
    if (noise > 0.0f) {
        ulong h = mix64(stream ^ ((ulong)(pix + 1) << 32));
        float u1 = ((float)(h >> 40) + 1.0f) * (1.0f / 16777216.0f); /* (0, 1] */
        float u2 = (float)((h >> 16) & 0xffffffUL) * (1.0f / 16777216.0f);
        val += noise * sqrt(-2.0f * log(u1)) * cos(6.28318530718f * u2);
    }
    x[i] = clamp(val, 0.0f, 1.0f);
}

/* Rows of x (rows x dim) divided by their norms (left as they are when 0),
 * for cosine similarities by a GEMM. One work-item per row. */
kernel void con_l2norm(global float *x, uint rows, uint dim)
{
    size_t r = get_global_id(0);
    if (r >= rows)
        return;
    float s = 0.0f;
    for (uint c = 0; c < dim; c++)
        s += x[r * dim + c] * x[r * dim + c];
    float inv = s > 0.0f ? 1.0f / sqrt(s) : 1.0f;
    for (uint c = 0; c < dim; c++)
        x[r * dim + c] *= inv;
}

/* sums[0] += w * loss[0], sums[1] += w (one work-item): the update's loss,
 * read back only when progress or the end wants it. */
kernel void con_add_loss(global float *sums, global const float *loss, float w)
{
    if (get_global_id(0) != 0)
        return;
    sums[0] += w * loss[0];
    sums[1] += w;
}
