/* contrastive_encoder.c - the contrastive task's MLP encoder (see
 * contrastive_encoder.h). */
#include "contrastive_encoder.h"
#include "clgrad_advanced.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int con_encoder_create(clg_context *ctx, const unsigned *dims, int n_dims, con_encoder **out,
                       char *err, size_t errlen)
{
    *out = NULL;
    if (mlp_check_widths("encoder", n_dims, err, errlen) != 0)
        return -1;
    con_encoder *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "encoder: out of host memory");
        return -1;
    }
    e->ctx = ctx;
    e->queue = clg_context_queue(ctx);
    e->n_layers = n_dims - 1;
    memcpy(e->dims, dims, (size_t)n_dims * sizeof *dims);
    if (mlp_kernels_build(ctx, &e->k, err, errlen) != 0) {
        free(e);
        return -1;
    }
    *out = e;
    return 0;
}

static void free_activations(con_encoder *e)
{
    cl_mem *all[] = {&e->x, &e->delta[0], &e->delta[1]};
    mlp_buffers_release(e->ctx, all, 3, e->act, &e->act_bytes);
    e->cap = 0;
}

void con_encoder_destroy(con_encoder *e)
{
    if (!e)
        return;
    free_activations(e);
    mlp_gemm_scratch_release(&e->scratch);
    mlp_kernels_release(&e->k);
    free(e);
}

clg_status con_encoder_add_tensors(con_encoder *e, clg_model *model, int no_decay_group)
{
    return mlp_tensors_add(model, e->dims, e->n_layers, no_decay_group, e->w_tensor,
                           e->b_tensor);
}

clg_status con_encoder_bind(con_encoder *e, const clg_model *model)
{
    return mlp_tensors_bind(model, e->n_layers, e->w_tensor, e->b_tensor, e->w, e->b);
}

static unsigned widest_hidden(const unsigned *dims, int n_dims)
{
    unsigned w = 1;
    for (int l = 1; l < n_dims; l++) /* the embedding's gradient too */
        w = dims[l] > w ? dims[l] : w;
    return w;
}

uint64_t con_encoder_activation_bytes(const unsigned *dims, int n_dims, unsigned rows)
{
    uint64_t floats = dims[0] + 2ull * widest_hidden(dims, n_dims);
    for (int l = 1; l < n_dims; l++)
        floats += dims[l];
    return floats * 4ull * rows;
}

static cl_int alloc_zeroed(con_encoder *e, size_t bytes, cl_mem *out)
{
    cl_int err;
    *out = clCreateBuffer(clg_context_cl(e->ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return err;
    float zero = 0.0f;
    return clEnqueueFillBuffer(e->queue, *out, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
}

clg_status con_encoder_alloc(con_encoder *e, unsigned cap)
{
    free_activations(e);
    int n_dims = e->n_layers + 1;
    uint64_t bytes = con_encoder_activation_bytes(e->dims, n_dims, cap);
    clg_status st = clg_context_reserve(e->ctx, bytes);
    if (st != CLG_SUCCESS)
        return st;
    e->act_bytes = bytes;
    size_t c = cap, wide = widest_hidden(e->dims, n_dims);
    cl_int err = alloc_zeroed(e, c * e->dims[0] * 4, &e->x);
    for (int l = 0; l < e->n_layers && err == CL_SUCCESS; l++)
        err = alloc_zeroed(e, c * e->dims[l + 1] * 4, &e->act[l]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = alloc_zeroed(e, c * wide * 4, &e->delta[i]);
    if (err == CL_SUCCESS)
        err = clFinish(e->queue);
    if (err != CL_SUCCESS) {
        free_activations(e);
        return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                       err == CL_INVALID_BUFFER_SIZE
                   ? CLG_ERR_OUT_OF_DEVICE_MEMORY
                   : (clg_status)err;
    }
    e->cap = cap;
    return CLG_SUCCESS;
}

cl_mem con_encoder_output(const con_encoder *e) { return e->act[e->n_layers - 1]; }

cl_int con_encoder_forward(con_encoder *e, cl_uint rows)
{
    if (rows == 0 || rows > e->cap)
        return CL_INVALID_VALUE;
    cl_mem in = e->x;
    cl_int err = CL_SUCCESS;
    for (int l = 0; l < e->n_layers && err == CL_SUCCESS; l++) {
        unsigned nin = e->dims[l], nout = e->dims[l + 1];
        /* Y[rows x out] = X[rows x in] W^T */
        err = mlp_gemm(e->queue, &e->scratch, 0, 1, rows, nout, nin, 1.0f, in, 0, nin, e->w[l].mem,
                       e->w[l].offset, nin, 0.0f, e->act[l], 0, nout, NULL);
        if (err == CL_SUCCESS)
            err = mlp_bias_act(&e->k, e->act[l], rows, nout, e->b[l].mem, e->b[l].offset,
                               l + 1 < e->n_layers);
        in = e->act[l];
    }
    return err;
}

cl_int con_encoder_backward(con_encoder *e, cl_uint rows, const clg_view *targets, float beta)
{
    if (rows == 0 || rows > e->cap)
        return CL_INVALID_VALUE;
    cl_mem dy = e->act[e->n_layers - 1];
    int ping = 0;
    cl_int err = CL_SUCCESS;
    for (int l = e->n_layers - 1; l >= 0 && err == CL_SUCCESS; l--) {
        unsigned nin = e->dims[l], nout = e->dims[l + 1];
        cl_mem in = l == 0 ? e->x : e->act[l - 1];
        const clg_view *tw = &targets[2 * l], *tb = &targets[2 * l + 1];
        /* dW[out x in] = beta dW + dY^T X */
        err = mlp_gemm(e->queue, &e->scratch, 1, 0, nout, nin, rows, 1.0f, dy, 0, nout, in, 0, nin,
                       beta, tw->mem, tw->offset, nin, NULL);
        if (err == CL_SUCCESS)
            err = mlp_bias_grad(&e->k, dy, rows, nout, tb->mem, tb->offset, beta);
        if (l == 0 || err != CL_SUCCESS)
            break;
        /* dX[rows x in] = dY W, through the ReLU of layer l's input */
        cl_mem dx = e->delta[ping];
        err = mlp_gemm(e->queue, &e->scratch, 0, 0, rows, nin, nout, 1.0f, dy, 0, nout, e->w[l].mem,
                       e->w[l].offset, nin, 0.0f, dx, 0, nin, NULL);
        if (err == CL_SUCCESS)
            err = mlp_relu_backward(&e->k, dx, e->act[l - 1], rows * nin);
        dy = dx;
        ping ^= 1;
    }
    return err;
}
