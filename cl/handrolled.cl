/* handrolled.cl - the plain kernels a user writes next to CLBlast when
 * hand-rolling gradient accumulation and the optimizer step without
 * clgrad: one element per work-item, one launch per tensor (off, n select
 * the tensor in a flat buffer), hyperparameters, bias corrections and the
 * gradient scale computed on the host. clgrad-bench's "unfused" baseline.
 * Formulas follow PyTorch's single-tensor optimizers. */

/* acc += alpha * g for fp16 gradients (CLBlast's Haxpy would need
 * cl_khr_fp16; vload_half does not). */
__kernel void plain_axpy_half(__global float *acc, __global const half *g, ulong off,
                              ulong n, float alpha)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    i += off;
    acc[i] += alpha * vload_half(i, g);
}

/* acc = 0, ready for the next cycle's axpys. */
__kernel void plain_zero(__global float *acc, ulong off, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    acc[off + i] = 0.0f;
}

/* SGD with momentum, dampening and L2 weight decay. */
__kernel void plain_sgd(__global float *p, __global const float *g, __global float *buf,
                        ulong off, ulong n, float scale, float lr, float momentum,
                        float dampening, float wd)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    i += off;
    float pi = p[i];
    float gi = g[i] * scale + wd * pi;
    float b = momentum * buf[i] + (1.0f - dampening) * gi;
    buf[i] = b;
    p[i] = pi - lr * b;
}

/* Adam (L2 weight decay added to the gradient) when decoupled == 0, AdamW
 * (decoupled weight decay) when decoupled == 1. bc1 = 1 - beta1^t,
 * bc2_sqrt = sqrt(1 - beta2^t). */
__kernel void plain_adam(__global float *p, __global const float *g, __global float *m,
                         __global float *v, ulong off, ulong n, float scale, float lr,
                         float beta1, float beta2, float eps, float wd, float bc1,
                         float bc2_sqrt, int decoupled)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    i += off;
    float pi = p[i];
    float gi = g[i] * scale;
    if (decoupled)
        pi *= 1.0f - lr * wd;
    else
        gi += wd * pi;
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - lr * (mi / bc1) / (sqrt(vi) / bc2_sqrt + eps);
}

/* Lion: sign of an interpolated momentum, decoupled weight decay. */
__kernel void plain_lion(__global float *p, __global const float *g, __global float *m,
                         ulong off, ulong n, float scale, float lr, float beta1,
                         float beta2, float wd)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    i += off;
    float gi = g[i] * scale;
    float mi = m[i];
    float c = beta1 * mi + (1.0f - beta1) * gi;
    p[i] = p[i] * (1.0f - lr * wd) - lr * sign(c);
    m[i] = beta2 * mi + (1.0f - beta2) * gi;
}
