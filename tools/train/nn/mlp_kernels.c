/* mlp_kernels.c - program loading and launchers for nn/mlp.cl. */
#include "mlp_kernels.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"

#include <string.h>

clg_status mlp_kernels_init(clg_context *ctx, mlp_kernels *k)
{
    memset(k, 0, sizeof *k);
    cl_program prog = NULL;
    clg_status st = clg_context_program_source(ctx, "mlp", train_kernel_source("mlp"), "", &prog,
                                                 NULL);
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

/* One kernel argument: its size and where its value is. */
typedef struct karg {
    size_t size;
    const void *value;
} karg;
#define KARG(v) ((karg){sizeof(v), &(v)})

/* Sets the n arguments in order, then launches over n_items work-items,
 * the global size padded to a multiple of 64 (the kernels guard their
 * range). */
static cl_int launch(const mlp_kernels *k, cl_kernel kern, const karg *args, cl_uint n,
                     size_t n_items)
{
    for (cl_uint i = 0; i < n; i++) {
        cl_int e = clSetKernelArg(kern, i, args[i].size, args[i].value);
        if (e != CL_SUCCESS)
            return e;
    }
    size_t global = (n_items + 63) / 64 * 64;
    if (global == 0)
        return CL_SUCCESS;
    return clEnqueueNDRangeKernel(k->queue, kern, 1, NULL, &global, NULL, 0, NULL, NULL);
}

#define LAUNCH(k, kern, n_items, ...)                                                             \
    launch(k, kern, (const karg[]){__VA_ARGS__},                                                   \
           (cl_uint)(sizeof((const karg[]){__VA_ARGS__}) / sizeof(karg)), n_items)

cl_int mlp_gather(const mlp_kernels *k, cl_mem images, cl_mem idx, cl_uint off, cl_uint rows,
                  cl_uint dim, cl_mem x)
{
    return LAUNCH(k, k->gather, (size_t)rows * dim, KARG(images), KARG(idx), KARG(off), KARG(rows),
                  KARG(dim), KARG(x));
}

cl_int mlp_bias_act(const mlp_kernels *k, cl_mem y, cl_uint rows, cl_uint cols, cl_mem b,
                    size_t boff, int relu)
{
    cl_ulong off = boff;
    cl_int r = relu;
    return LAUNCH(k, k->bias_act, (size_t)rows * cols, KARG(y), KARG(rows), KARG(cols), KARG(b),
                  KARG(off), KARG(r));
}

cl_int mlp_relu_backward(const mlp_kernels *k, cl_mem dx, cl_mem act, cl_uint n)
{
    return LAUNCH(k, k->relu_backward, n, KARG(dx), KARG(act), KARG(n));
}

cl_int mlp_bias_grad(const mlp_kernels *k, cl_mem dy, cl_uint rows, cl_uint cols, cl_mem db,
                     size_t dboff, float beta)
{
    cl_ulong off = dboff;
    return LAUNCH(k, k->bias_grad, cols, KARG(dy), KARG(rows), KARG(cols), KARG(db), KARG(off),
                  KARG(beta));
}

cl_int mlp_softmax_xent(const mlp_kernels *k, cl_mem logits, cl_uint rows, cl_uint classes,
                        cl_mem labels, cl_mem idx, cl_uint off, cl_mem scale, size_t scale_off,
                        float mult, cl_mem dlogits, cl_mem row_loss, cl_mem row_correct, int backward)
{
    cl_ulong soff = scale_off;
    cl_int bw = backward;
    cl_kernel kk = k->softmax_xent;
    return LAUNCH(k, kk, rows, KARG(logits), KARG(rows), KARG(classes), KARG(labels), KARG(idx),
                  KARG(off), KARG(scale), KARG(soff), KARG(mult), KARG(dlogits), KARG(row_loss),
                  KARG(row_correct), KARG(bw));
}

cl_int mlp_sum_rows(const mlp_kernels *k, cl_mem row_loss, cl_mem row_correct, cl_uint rows,
                    cl_mem sums)
{
    return LAUNCH(k, k->sum_rows, 1, KARG(row_loss), KARG(row_correct), KARG(rows), KARG(sums));
}

cl_int mlp_widen_bf16(const mlp_kernels *k, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                      cl_uint n)
{
    cl_ulong so = soff, dof = doff;
    return LAUNCH(k, k->from_bf16, n, KARG(src), KARG(so), KARG(dst), KARG(dof), KARG(n));
}

cl_int mlp_convert(const mlp_kernels *k, clg_dtype dtype, cl_mem src, size_t soff, cl_mem dst,
                   size_t doff, cl_uint n)
{
    cl_kernel kk = dtype == CLG_FP16 ? k->to_fp16 : k->to_bf16;
    if (dtype != CLG_FP16 && dtype != CLG_BF16)
        return CL_INVALID_VALUE;
    cl_ulong so = soff, dof = doff;
    return LAUNCH(k, kk, n, KARG(src), KARG(so), KARG(dst), KARG(dof), KARG(n));
}
