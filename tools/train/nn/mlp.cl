/* mlp.cl - kernels of clgrad-train's MLP besides the GEMMs (CLBlast does
 * those): gathering a micro-batch from the data set on the device, bias and
 * ReLU, their gradients, softmax cross-entropy with its gradient scaled by
 * clgrad's device-side loss scale, and fp32 -> fp16/bf16 gradient stores.
 * Buffers come with element offsets (clgrad views), never sub-buffers,
 * because sub-buffer origins must be aligned. Every reduction runs in a
 * fixed order so that runs are reproducible. */

/* x[r, c] = images[idx[off + r], c] / 255 for r < rows, c < dim. */
__kernel void mlp_gather(__global const uchar *images, __global const int *idx, uint off,
                         uint rows, uint dim, __global float *x)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * dim)
        return;
    size_t r = i / dim, c = i % dim;
    x[i] = (float)images[(size_t)idx[off + r] * dim + c] * (1.0f / 255.0f);
}

/* y[r, c] += b[boff + c], then ReLU when relu != 0 (in place). */
__kernel void mlp_bias_act(__global float *y, uint rows, uint cols, __global const float *b,
                           ulong boff, int relu)
{
    size_t i = get_global_id(0);
    if (i >= (size_t)rows * cols)
        return;
    float v = y[i] + b[boff + i % cols];
    y[i] = relu ? fmax(v, 0.0f) : v;
}

/* dx[i] = 0 where the ReLU output act[i] was not positive. */
__kernel void mlp_relu_backward(__global float *dx, __global const float *act, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    if (!(act[i] > 0.0f))
        dx[i] = 0.0f;
}

/* db[c] = beta * db[c] + sum over rows of dy[r, c]. beta == 0 never reads
 * db, which may hold anything (the accumulator's previous cycle). */
__kernel void mlp_bias_grad(__global const float *dy, uint rows, uint cols, __global float *db,
                            ulong dboff, float beta)
{
    size_t c = get_global_id(0);
    if (c >= cols)
        return;
    float s = 0.0f;
    for (uint r = 0; r < rows; r++)
        s += dy[(size_t)r * cols + c];
    db[dboff + c] = beta == 0.0f ? s : beta * db[dboff + c] + s;
}

/* Softmax cross-entropy of one row per work-item. The label of row r is
 * labels[idx[off + r]]. Writes the row's loss and whether its argmax (first
 * maximum) is the label; with backward != 0 also
 *   dlogits[r, j] = (softmax_j - [j == label]) * scale[scale_off] * mult
 * i.e. the gradient of the summed loss (mult = 1: clgrad's path B, where
 * the caller writes weight x mean gradient) or of the mean loss
 * (mult = 1/rows: paths A/C, where clgrad multiplies by the weight), times
 * the device-side loss scale. dlogits may alias logits. */
__kernel void mlp_softmax_xent(__global const float *logits, uint rows, uint classes,
                               __global const uchar *labels, __global const int *idx, uint off,
                               __global const float *scale, ulong scale_off, float mult,
                               __global float *dlogits, __global float *row_loss,
                               __global float *row_correct, int backward)
{
    size_t r = get_global_id(0);
    if (r >= rows)
        return;
    __global const float *l = logits + r * classes;
    uint y = labels[idx[off + r]];
    float m = l[0];
    uint arg = 0;
    for (uint j = 1; j < classes; j++) {
        if (l[j] > m) {
            m = l[j];
            arg = j;
        }
    }
    float s = 0.0f;
    for (uint j = 0; j < classes; j++)
        s += exp(l[j] - m);
    float ly = l[y];
    row_loss[r] = log(s) + m - ly;
    row_correct[r] = arg == y ? 1.0f : 0.0f;
    if (!backward)
        return;
    float k = scale[scale_off] * mult;
    __global float *d = dlogits + r * classes;
    for (uint j = 0; j < classes; j++) {
        float p = exp(l[j] - m) / s;
        d[j] = (p - (j == y ? 1.0f : 0.0f)) * k;
    }
}

/* One work-item: sums[0] += sum of row_loss, sums[1] += sum of row_correct,
 * sums[2] += sum of row_loss (sums[0..1] per epoch, sums[2] per update). */
__kernel void mlp_sum_rows(__global const float *row_loss, __global const float *row_correct,
                           uint rows, __global float *sums)
{
    if (get_global_id(0) != 0)
        return;
    float l = 0.0f, c = 0.0f;
    for (uint r = 0; r < rows; r++) {
        l += row_loss[r];
        c += row_correct[r];
    }
    sums[0] += l;
    sums[1] += c;
    sums[2] += l;
}

/* dst[doff + i] = fp16(src[soff + i]), round to nearest even. */
__kernel void mlp_to_fp16(__global const float *src, ulong soff, __global half *dst, ulong doff,
                          uint n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    vstore_half_rte(src[soff + i], doff + i, dst);
}

/* dst[doff + i] = bf16(src[soff + i]): the upper 16 bits, round to nearest
 * even; NaN stays a (quiet) NaN. */
__kernel void mlp_to_bf16(__global const float *src, ulong soff, __global ushort *dst,
                          ulong doff, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint u = as_uint(src[soff + i]);
    ushort h;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        h = (ushort)((u >> 16) | 0x0040u);
    else
        h = (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    dst[doff + i] = h;
}

/* dst[doff + i] = the fp32 value of bf16 src[soff + i] (exact): the GEMMs'
 * copy of bf16 master weights. */
__kernel void mlp_from_bf16(__global const ushort *src, ulong soff, __global float *dst,
                            ulong doff, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    dst[doff + i] = as_float((uint)src[soff + i] << 16);
}
