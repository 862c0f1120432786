/* mlp_kernels.c - program loading and launchers for cl/mlp.cl. */
#include "mlp_kernels.h"

#include <string.h>

clg_status mlp_kernels_init(clg_context *ctx, mlp_kernels *k)
{
    memset(k, 0, sizeof *k);
    cl_program prog = NULL;
    clg_status st = clg_context_program(ctx, "mlp", "", &prog, NULL);
    if (st != CLG_SUCCESS)
        return st;
    k->queue = clg_context_queue(ctx);
    struct {
        cl_kernel *dst;
        const char *name;
    } list[] = {
        {&k->gather, "mlp_gather"},
        {&k->bias_act, "mlp_bias_act"},
        {&k->relu_backward, "mlp_relu_backward"},
        {&k->bias_grad, "mlp_bias_grad"},
        {&k->softmax_xent, "mlp_softmax_xent"},
        {&k->sum_rows, "mlp_sum_rows"},
        {&k->to_fp16, "mlp_to_fp16"},
        {&k->to_bf16, "mlp_to_bf16"},
        {&k->from_bf16, "mlp_from_bf16"},
    };
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) {
        cl_int err = CL_SUCCESS;
        *list[i].dst = clCreateKernel(prog, list[i].name, &err);
        if (err != CL_SUCCESS) {
            mlp_kernels_release(k);
            return (clg_status)err;
        }
    }
    return CLG_SUCCESS;
}

void mlp_kernels_release(mlp_kernels *k)
{
    cl_kernel all[] = {k->gather, k->bias_act, k->relu_backward, k->bias_grad,
                       k->softmax_xent, k->sum_rows, k->to_fp16, k->to_bf16, k->from_bf16};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i])
            clReleaseKernel(all[i]);
    memset(k, 0, sizeof *k);
}

/* Global size padded to a multiple of 64; the kernels guard their range. */
static cl_int launch(const mlp_kernels *k, cl_kernel kern, size_t n)
{
    size_t global = (n + 63) / 64 * 64;
    if (global == 0)
        return CL_SUCCESS;
    return clEnqueueNDRangeKernel(k->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
}

#define ARG(kern, i, v)                                                \
    do {                                                               \
        cl_int e_ = clSetKernelArg(kern, i, sizeof(v), &(v));          \
        if (e_ != CL_SUCCESS)                                          \
            return e_;                                                 \
    } while (0)

cl_int mlp_gather(const mlp_kernels *k, cl_mem images, cl_mem idx, cl_uint off, cl_uint rows,
                  cl_uint dim, cl_mem x)
{
    ARG(k->gather, 0, images);
    ARG(k->gather, 1, idx);
    ARG(k->gather, 2, off);
    ARG(k->gather, 3, rows);
    ARG(k->gather, 4, dim);
    ARG(k->gather, 5, x);
    return launch(k, k->gather, (size_t)rows * dim);
}

cl_int mlp_bias_act(const mlp_kernels *k, cl_mem y, cl_uint rows, cl_uint cols, cl_mem b,
                    size_t boff, int relu)
{
    cl_ulong off = boff;
    cl_int r = relu;
    ARG(k->bias_act, 0, y);
    ARG(k->bias_act, 1, rows);
    ARG(k->bias_act, 2, cols);
    ARG(k->bias_act, 3, b);
    ARG(k->bias_act, 4, off);
    ARG(k->bias_act, 5, r);
    return launch(k, k->bias_act, (size_t)rows * cols);
}

cl_int mlp_relu_backward(const mlp_kernels *k, cl_mem dx, cl_mem act, cl_uint n)
{
    ARG(k->relu_backward, 0, dx);
    ARG(k->relu_backward, 1, act);
    ARG(k->relu_backward, 2, n);
    return launch(k, k->relu_backward, n);
}

cl_int mlp_bias_grad(const mlp_kernels *k, cl_mem dy, cl_uint rows, cl_uint cols, cl_mem db,
                     size_t dboff, float beta)
{
    cl_ulong off = dboff;
    ARG(k->bias_grad, 0, dy);
    ARG(k->bias_grad, 1, rows);
    ARG(k->bias_grad, 2, cols);
    ARG(k->bias_grad, 3, db);
    ARG(k->bias_grad, 4, off);
    ARG(k->bias_grad, 5, beta);
    return launch(k, k->bias_grad, cols);
}

cl_int mlp_softmax_xent(const mlp_kernels *k, cl_mem logits, cl_uint rows, cl_uint classes,
                        cl_mem labels, cl_mem idx, cl_uint off, cl_mem scale, size_t scale_off,
                        float mult, cl_mem dlogits, cl_mem row_loss, cl_mem row_correct, int backward)
{
    cl_ulong soff = scale_off;
    cl_int bw = backward;
    cl_kernel kk = k->softmax_xent;
    ARG(kk, 0, logits);
    ARG(kk, 1, rows);
    ARG(kk, 2, classes);
    ARG(kk, 3, labels);
    ARG(kk, 4, idx);
    ARG(kk, 5, off);
    ARG(kk, 6, scale);
    ARG(kk, 7, soff);
    ARG(kk, 8, mult);
    ARG(kk, 9, dlogits);
    ARG(kk, 10, row_loss);
    ARG(kk, 11, row_correct);
    ARG(kk, 12, bw);
    return launch(k, kk, rows);
}

cl_int mlp_sum_rows(const mlp_kernels *k, cl_mem row_loss, cl_mem row_correct, cl_uint rows,
                    cl_mem sums)
{
    ARG(k->sum_rows, 0, row_loss);
    ARG(k->sum_rows, 1, row_correct);
    ARG(k->sum_rows, 2, rows);
    ARG(k->sum_rows, 3, sums);
    return launch(k, k->sum_rows, 1);
}

cl_int mlp_widen_bf16(const mlp_kernels *k, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                      cl_uint n)
{
    cl_ulong so = soff, dof = doff;
    ARG(k->from_bf16, 0, src);
    ARG(k->from_bf16, 1, so);
    ARG(k->from_bf16, 2, dst);
    ARG(k->from_bf16, 3, dof);
    ARG(k->from_bf16, 4, n);
    return launch(k, k->from_bf16, n);
}

cl_int mlp_convert(const mlp_kernels *k, clg_dtype dtype, cl_mem src, size_t soff, cl_mem dst,
                   size_t doff, cl_uint n)
{
    cl_kernel kk = dtype == CLG_FP16 ? k->to_fp16 : k->to_bf16;
    if (dtype != CLG_FP16 && dtype != CLG_BF16)
        return CL_INVALID_VALUE;
    cl_ulong so = soff, dof = doff;
    ARG(kk, 0, src);
    ARG(kk, 1, so);
    ARG(kk, 2, dst);
    ARG(kk, 3, dof);
    ARG(kk, 4, n);
    return launch(k, kk, n);
}
