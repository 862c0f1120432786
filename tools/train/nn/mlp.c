/* mlp.c - MLP layout, init, activations, forward and backward (see mlp.h). */
#include "mlp.h"
#include "clgrad_advanced.h"
#include "clbuf.h"
#include "errmsg.h"
#include "mlp_gemms.h"
#include "rng.h"

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mlp_check_widths(const char *who, int n_dims, char *err, size_t errlen)
{
    if (n_dims >= 2 && n_dims <= MLP_MAX_LAYERS + 1)
        return 0;
    errmsg_set(err, errlen, "%s: %d widths (expected 2..%d)", who, n_dims, MLP_MAX_LAYERS + 1);
    return -1;
}

int mlp_kernels_build(clg_context *ctx, mlp_kernels *k, char *err, size_t errlen)
{
    if (mlp_kernels_init(ctx, k) == CLG_SUCCESS)
        return 0;
    errmsg_set(err, errlen, "building nn/mlp.cl: %s", clg_last_error(ctx));
    return -1;
}

int mlp_create(clg_context *ctx, const unsigned *dims, int n_dims, mlp **out, char *err,
               size_t errlen)
{
    *out = NULL;
    if (mlp_check_widths("mlp", n_dims, err, errlen) != 0)
        return -1;
    mlp *m = calloc(1, sizeof *m);
    if (!m) {
        errmsg_set(err, errlen, "mlp: out of host memory");
        return -1;
    }
    m->ctx = ctx;
    m->cl = clg_context_cl(ctx);
    m->queue = clg_context_queue(ctx);
    m->n_layers = n_dims - 1;
    for (int i = 0; i < n_dims; i++)
        m->dims[i] = dims[i];
    if (mlp_kernels_build(ctx, &m->k, err, errlen) != 0) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void mlp_destroy(mlp *m)
{
    if (!m)
        return;
    mlp_free_activations(m);
    mlp_gemm_scratch_release(&m->gemm_scratch);
    mlp_kernels_release(&m->k);
    free(m);
}

clg_status mlp_tensors_add(clg_model *model, const unsigned *dims, int n_layers,
                           int no_decay_group, int *w_tensor, int *b_tensor)
{
    for (int l = 0; l < n_layers; l++) {
        char name[32];
        snprintf(name, sizeof name, "fc%d.weight", l + 1);
        clg_status st = clg_model_add_tensor(model, name, (size_t)dims[l + 1] * dims[l], 0,
                                             &w_tensor[l]);
        /* [out, in], as torch.nn.Linear stores its weight */
        const size_t shape[2] = {(size_t)dims[l + 1], (size_t)dims[l]};
        if (st == CLG_SUCCESS)
            st = clg_model_set_tensor_shape(model, w_tensor[l], 2, shape);
        if (st != CLG_SUCCESS)
            return st;
        snprintf(name, sizeof name, "fc%d.bias", l + 1);
        st = clg_model_add_tensor(model, name, dims[l + 1], no_decay_group, &b_tensor[l]);
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

clg_status mlp_tensors_bind(const clg_model *model, int n_layers, const int *w_tensor,
                            const int *b_tensor, clg_view *w, clg_view *b)
{
    for (int l = 0; l < n_layers; l++) {
        clg_status st = clg_model_param_view(model, w_tensor[l], &w[l]);
        if (st == CLG_SUCCESS)
            st = clg_model_param_view(model, b_tensor[l], &b[l]);
        if (st != CLG_SUCCESS)
            return st;
    }
    return CLG_SUCCESS;
}

void mlp_buffers_release(clg_context *ctx, cl_mem *const *bufs, size_t n, cl_mem *act,
                         uint64_t *act_bytes)
{
    cl_mem *acts[MLP_MAX_LAYERS];
    for (int l = 0; l < MLP_MAX_LAYERS; l++)
        acts[l] = &act[l];
    clbuf_release_mems(bufs, n);
    clbuf_release_mems(acts, MLP_MAX_LAYERS);
    if (*act_bytes)
        clg_context_unreserve(ctx, *act_bytes);
    *act_bytes = 0;
}

clg_status mlp_add_tensors(mlp *m, clg_model *model, int no_decay_group)
{
    return mlp_tensors_add(model, m->dims, m->n_layers, no_decay_group, m->w_tensor,
                           m->b_tensor);
}

clg_status mlp_bind(mlp *m, const clg_model *model)
{
    return mlp_tensors_bind(model, m->n_layers, m->w_tensor, m->b_tensor, m->w_view, m->b_view);
}

uint64_t mlp_param_count(const unsigned *dims, int n_dims)
{
    uint64_t n = 0;
    for (int l = 0; l + 1 < n_dims; l++)
        n += (uint64_t)dims[l + 1] * dims[l] + dims[l + 1];
    return n;
}

void mlp_init_params(const unsigned *dims, int n_dims, uint64_t seed, float *host)
{
    train_rng r = train_rng_seed(seed, 0);
    size_t p = 0;
    for (int l = 0; l + 1 < n_dims; l++) {
        float bound = 1.0f / sqrtf((float)dims[l]);
        size_t nw = (size_t)dims[l + 1] * dims[l];
        for (size_t i = 0; i < nw; i++)
            host[p++] = train_rng_uniform(&r, -bound, bound);
        for (size_t i = 0; i < dims[l + 1]; i++)
            host[p++] = train_rng_uniform(&r, -bound, bound);
    }
}

static unsigned max_hidden(const unsigned *dims, int n_dims)
{
    unsigned w = 1;
    for (int l = 1; l + 1 < n_dims; l++)
        if (dims[l] > w)
            w = dims[l];
    return w;
}

uint64_t mlp_activation_bytes(const unsigned *dims, int n_dims, unsigned b)
{
    uint64_t floats = dims[0];
    for (int l = 1; l < n_dims; l++)
        floats += dims[l];
    floats += 2ull * max_hidden(dims, n_dims) + 2; /* delta ping-pong, row loss/correct */
    return floats * 4ull * b;
}

void mlp_free_activations(mlp *m)
{
    cl_mem *all[] = {&m->x, &m->delta[0], &m->delta[1], &m->row_loss, &m->row_correct};
    mlp_buffers_release(m->ctx, all, sizeof all / sizeof *all, m->act, &m->act_bytes);
    m->cap = 0;
}

static cl_int alloc_touched(mlp *m, size_t bytes, cl_mem *out)
{
    cl_int err = CL_SUCCESS;
    *out = clCreateBuffer(m->cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return err;
    float zero = 0.0f;
    err = clEnqueueFillBuffer(m->queue, *out, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    return err;
}

clg_status mlp_alloc_activations(mlp *m, unsigned cap)
{
    mlp_free_activations(m);
    int n_dims = m->n_layers + 1;
    uint64_t bytes = mlp_activation_bytes(m->dims, n_dims, cap);
    clg_status st = clg_context_reserve(m->ctx, bytes);
    if (st != CLG_SUCCESS)
        return st;
    m->act_bytes = bytes;
    size_t c = cap;
    cl_int err = alloc_touched(m, c * m->dims[0] * 4, &m->x);
    for (int l = 0; l < m->n_layers && err == CL_SUCCESS; l++)
        err = alloc_touched(m, c * m->dims[l + 1] * 4, &m->act[l]);
    size_t hid = max_hidden(m->dims, n_dims);
    if (err == CL_SUCCESS)
        err = alloc_touched(m, c * hid * 4, &m->delta[0]);
    if (err == CL_SUCCESS)
        err = alloc_touched(m, c * hid * 4, &m->delta[1]);
    if (err == CL_SUCCESS)
        err = alloc_touched(m, c * 4, &m->row_loss);
    if (err == CL_SUCCESS)
        err = alloc_touched(m, c * 4, &m->row_correct);
    if (err == CL_SUCCESS)
        err = clFinish(m->queue);
    if (err != CL_SUCCESS) {
        mlp_free_activations(m);
        if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
            err == CL_INVALID_BUFFER_SIZE || err == CL_OUT_OF_HOST_MEMORY)
            return CLG_ERR_OUT_OF_DEVICE_MEMORY;
        return (clg_status)err;
    }
    m->cap = cap;
    return CLG_SUCCESS;
}

/* Through mlp_gemm (tools/gemm/mlp_gemms.h), the call clgrad-tune tunes
 * and clgrad-bench measures. CLBlast statuses share OpenCL's codes; its own
 * (-1024..-2048) pass through as is. */
static cl_int gemm(mlp *m, CLBlastTranspose ta, CLBlastTranspose tb, size_t M, size_t N, size_t K,
                   cl_mem a, size_t aoff, size_t lda, cl_mem b, size_t boff, size_t ldb, float beta,
                   cl_mem c, size_t coff, size_t ldc)
{
    return mlp_gemm(m->queue, &m->gemm_scratch, ta == CLBlastTransposeYes,
                    tb == CLBlastTransposeYes, M, N, K, 1.0f, a, aoff, lda, b, boff, ldb, beta, c,
                    coff, ldc, NULL);
}

cl_int mlp_forward(mlp *m, const mlp_source *src, cl_uint rows, cl_mem scale, size_t scale_off,
                   float mult, int backward)
{
    if (rows == 0 || rows > m->cap)
        return CL_INVALID_VALUE;
    cl_int err = mlp_gather(&m->k, src->images, src->idx, src->off, rows, m->dims[0], m->x);
    cl_mem in = m->x;
    for (int l = 0; l < m->n_layers && err == CL_SUCCESS; l++) {
        unsigned nin = m->dims[l], nout = m->dims[l + 1];
        /* Y[rows x out] = X[rows x in] * W^T, W [out x in] */
        err = gemm(m, CLBlastTransposeNo, CLBlastTransposeYes, rows, nout, nin, in, 0, nin,
                   m->w_view[l].mem, m->w_view[l].offset, nin, 0.0f, m->act[l], 0, nout);
        if (err == CL_SUCCESS)
            err = mlp_bias_act(&m->k, m->act[l], rows, nout, m->b_view[l].mem, m->b_view[l].offset,
                               l + 1 < m->n_layers);
        in = m->act[l];
    }
    if (err != CL_SUCCESS)
        return err;
    int L = m->n_layers;
    return mlp_softmax_xent(&m->k, m->act[L - 1], rows, m->dims[L], src->labels, src->idx,
                            src->off, scale, scale_off, mult, m->act[L - 1], m->row_loss,
                            m->row_correct, backward);
}

cl_int mlp_backward(mlp *m, cl_uint rows, const clg_view *targets, float beta)
{
    if (rows == 0 || rows > m->cap)
        return CL_INVALID_VALUE;
    cl_int err = CL_SUCCESS;
    cl_mem dy = m->act[m->n_layers - 1]; /* dlogits */
    int ping = 0;
    for (int l = m->n_layers - 1; l >= 0 && err == CL_SUCCESS; l--) {
        unsigned nin = m->dims[l], nout = m->dims[l + 1];
        cl_mem in = l == 0 ? m->x : m->act[l - 1];
        const clg_view *tw = &targets[2 * l], *tb = &targets[2 * l + 1];
        /* dW[out x in] = beta * dW + dY^T[out x rows] * X[rows x in] */
        err = gemm(m, CLBlastTransposeYes, CLBlastTransposeNo, nout, nin, rows, dy, 0, nout, in, 0,
                   nin, beta, tw->mem, tw->offset, nin);
        if (err == CL_SUCCESS)
            err = mlp_bias_grad(&m->k, dy, rows, nout, tb->mem, tb->offset, beta);
        if (l == 0 || err != CL_SUCCESS)
            break;
        /* dX[rows x in] = dY[rows x out] * W[out x in], masked by the ReLU */
        cl_mem dx = m->delta[ping];
        err = gemm(m, CLBlastTransposeNo, CLBlastTransposeNo, rows, nin, nout, dy, 0, nout,
                   m->w_view[l].mem, m->w_view[l].offset, nin, 0.0f, dx, 0, nin);
        if (err == CL_SUCCESS)
            err = mlp_relu_backward(&m->k, dx, m->act[l - 1], rows * nin);
        dy = dx;
        ping ^= 1;
    }
    return err;
}

cl_int mlp_sum(mlp *m, cl_uint rows, cl_mem sums)
{
    return mlp_sum_rows(&m->k, m->row_loss, m->row_correct, rows, sums);
}

void mlp_init_shape(const void *shape, uint64_t seed, float *host)
{
    const mlp_shape *s = shape;
    mlp_init_params(s->dims, s->n_dims, seed, host);
}
