/* mlp_kernels.h - launchers of the kernels in nn/mlp.cl (everything of the
 * MLP except the GEMMs). Each launcher enqueues on the context's queue and
 * returns an OpenCL status; offsets are in elements. */
#ifndef TRAIN_MLP_KERNELS_H
#define TRAIN_MLP_KERNELS_H

#include "clgrad.h"

typedef struct mlp_kernels {
    cl_command_queue queue;
    cl_kernel gather, bias_act, relu_backward, bias_grad, softmax_xent, sum_rows, to_fp16,
        to_bf16, from_bf16;
} mlp_kernels;

/* Builds program "mlp" through clgrad (embedded source, disk cache) and
 * creates the kernels. On failure the message is in clg_last_error(ctx). */
clg_status mlp_kernels_init(clg_context *ctx, mlp_kernels *k);
void mlp_kernels_release(mlp_kernels *k);

cl_int mlp_gather(const mlp_kernels *k, cl_mem images, cl_mem idx, cl_uint off, cl_uint rows,
                  cl_uint dim, cl_mem x);
cl_int mlp_bias_act(const mlp_kernels *k, cl_mem y, cl_uint rows, cl_uint cols, cl_mem b,
                    size_t boff, int relu);
cl_int mlp_relu_backward(const mlp_kernels *k, cl_mem dx, cl_mem act, cl_uint n);
cl_int mlp_bias_grad(const mlp_kernels *k, cl_mem dy, cl_uint rows, cl_uint cols, cl_mem db,
                     size_t dboff, float beta);
cl_int mlp_softmax_xent(const mlp_kernels *k, cl_mem logits, cl_uint rows, cl_uint classes,
                        cl_mem labels, cl_mem idx, cl_uint off, cl_mem scale, size_t scale_off,
                        float mult, cl_mem dlogits, cl_mem row_loss, cl_mem row_correct, int backward);
cl_int mlp_sum_rows(const mlp_kernels *k, cl_mem row_loss, cl_mem row_correct, cl_uint rows,
                    cl_mem sums);
/* dtype CLG_FP16 or CLG_BF16. */
cl_int mlp_convert(const mlp_kernels *k, clg_dtype dtype, cl_mem src, size_t soff, cl_mem dst,
                   size_t doff, cl_uint n);
/* bf16 src (ushort bits) widened into fp32 dst, exactly. */
cl_int mlp_widen_bf16(const mlp_kernels *k, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                      cl_uint n);

#endif /* TRAIN_MLP_KERNELS_H */
