/* handrolled.cl - the plain kernels a user writes next to CLBlast when
 * hand-rolling gradient accumulation and the optimizer step without
 * clgrad: one element per work-item, one launch per tensor (off, n select
 * the tensor in a flat buffer), hyperparameters, bias corrections and the
 * gradient scale computed on the host. clgrad-bench's "unfused" baseline.
 * The update is optim.cl's step, the library's own formulas (the build
 * puts optim.cl in front of this file, as in front of update.cl), for one
 * element per work-item, its variant chosen by optim.cl's -D options
 * (OPT, MOMENTUM, NESTEROV, MAXIMIZE); its scalars come from kernel
 * arguments rather than from a step block. */

/* OpenCL C has no float1, vload1 or vstore1: for N = 1 the names that
 * common.cl's and optim.cl's macros paste are the scalar ones. */
#define float1 float
#define vload1(i, p) ((p)[i])
#define vstore1(v, i, p) ((p)[i] = (v))
#define vload_half1 vload_half
#define bf16x1_to_float bf16_to_float
CLG_LOAD_FUNCS(1)
CLG_OPTIM_FUNCS(1)

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

/* One optimizer step of the tensor [off, off + n) of the flat buffers:
 * the gradient is acc times scale, s0 and s1 the states (optim.cl's:
 * SGD's momentum buffer or Lion's m; Adam's m and v), read and written
 * only where the optimizer has them. The scalars are optim_hyper's, from
 * the host: step counts the updates, this one included (SGD's momentum
 * buffer starts as the gradient at step 1), decay = 1 - lr wd, step_size
 * = lr / (1 - beta1^step), bc2_sqrt = sqrt(1 - beta2^step). */
__kernel void plain_update(__global float *p, __global const float *acc, __global float *s0,
                           __global float *s1, ulong off, ulong n, float scale, uint step,
                           float lr, float wd, float decay, float step_size, float bc2_sqrt,
                           float beta1, float beta2, float eps, float momentum, float dampening)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    i += off;
    const optim_hyper h = {.skip = 0u, .step = step, .scale = scale, .lr = lr, .wd = wd,
                           .decay = decay, .step_size = step_size, .bc2_sqrt = bc2_sqrt,
                           .beta1 = beta1, .beta2 = beta2, .eps = eps, .momentum = momentum,
                           .dampening = dampening, .clip_value = 0.0f};
    float st0 = OPT_STATES > 0 ? s0[i] : 0.0f;
    float st1 = OPT_STATES > 1 ? s1[i] : 0.0f;
    const float gr = optim_grad1(acc, 0, i, 0.0f, 0u, &h);
    p[i] = optim_step1(gr, p[i], &st0, &st1, 0, i, &h);
    if (OPT_STATES > 0)
        s0[i] = st0;
    if (OPT_STATES > 1)
        s1[i] = st1;
}
