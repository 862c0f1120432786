/* mlp.h - the multilayer perceptron of clgrad-train on a clgrad model:
 * layout of its tensors, seeded init, activation buffers for a micro-batch,
 * and forward/backward passes with CLBlast GEMMs and tools/train/nn/mlp.cl kernels.
 *
 * Layout (model order, also the --dump-weights order): for each linear
 * layer l = 1..L, "fc<l>.weight" [out x in] row-major, then "fc<l>.bias"
 * [out]. Activations are row-major [rows x width]. Weights go in group 0
 * (with weight decay), biases in a group without weight decay. */
#ifndef TRAIN_MLP_H
#define TRAIN_MLP_H

#include "clgrad.h"
#include "mlp_gemms.h"
#include "mlp_kernels.h"

#include <stdint.h>

#define MLP_MAX_LAYERS 9

/* A micro-batch source on the device: sample r of the micro-batch is
 * images[idx[off + r]] with label labels[idx[off + r]]. */
/* The widths of an MLP: dims[0] inputs, then each layer's outputs. */
typedef struct mlp_shape {
    unsigned dims[MLP_MAX_LAYERS + 1];
    int n_dims;
} mlp_shape;

typedef struct mlp_source {
    cl_mem images, labels, idx;
    cl_uint off;
} mlp_source;

typedef struct mlp {
    clg_context *ctx;
    cl_context cl;
    cl_command_queue queue;
    mlp_kernels k;
    int n_layers;                     /* linear layers L */
    unsigned dims[MLP_MAX_LAYERS + 1];/* dims[0] input .. dims[L] classes */
    int w_tensor[MLP_MAX_LAYERS], b_tensor[MLP_MAX_LAYERS];
    clg_view w_view[MLP_MAX_LAYERS], b_view[MLP_MAX_LAYERS];

    /* Activations for micro-batches of up to cap rows. */
    unsigned cap;
    uint64_t act_bytes;               /* reserved against the budget */
    cl_mem x;                         /* [cap x dims[0]] */
    cl_mem act[MLP_MAX_LAYERS];       /* output of layer l (last: logits/dlogits) */
    cl_mem delta[2];                  /* [cap x max hidden] backward ping-pong */
    cl_mem row_loss, row_correct;     /* [cap] */
    mlp_gemm_scratch gemm_scratch;    /* CLBlast's temporary buffer (mlp_gemms.h) */
} mlp;

/* dims: n_dims = L + 1 widths, input first, classes last. Builds the
 * kernels. On failure returns non-zero with a message in err. */
/* n_dims widths are 2..MLP_MAX_LAYERS + 1 (the message names who). */
int mlp_check_widths(const char *who, int n_dims, char *err, size_t errlen);
/* tools/train/nn/mlp.cl's kernels (mlp_kernels_init) with a message on failure. */
int mlp_kernels_build(clg_context *ctx, mlp_kernels *k, char *err, size_t errlen);

int mlp_create(clg_context *ctx, const unsigned *dims, int n_dims, mlp **out, char *err,
               size_t errlen);
void mlp_destroy(mlp *m);

/* Adds the tensors to a model being built; biases go into no_decay_group. */
/* The layers' tensors "fc<l>.weight" [out x in] and "fc<l>.bias" (biases
 * into no_decay_group) added to a model being built, and their views once
 * it is finalized: the MLP's, and any network with the same layers (the
 * contrastive encoder). */
clg_status mlp_tensors_add(clg_model *model, const unsigned *dims, int n_layers,
                           int no_decay_group, int *w_tensor, int *b_tensor);
clg_status mlp_tensors_bind(const clg_model *model, int n_layers, const int *w_tensor,
                            const int *b_tensor, clg_view *w, clg_view *b);
/* Releases bufs[0..n) and act[0..MLP_MAX_LAYERS), and unreserves
 * *act_bytes. */
void mlp_buffers_release(clg_context *ctx, cl_mem *const *bufs, size_t n, cl_mem *act,
                         uint64_t *act_bytes);

clg_status mlp_add_tensors(mlp *m, clg_model *model, int no_decay_group);
/* After clg_model_finalize: caches the parameter views. */
clg_status mlp_bind(mlp *m, const clg_model *model);
/* Parameter count of the layout. */
uint64_t mlp_param_count(const unsigned *dims, int n_dims);
/* Seeded init in model order (PyTorch's nn.Linear default: weights and
 * biases uniform in +-1/sqrt(fan_in)). host holds mlp_param_count floats. */
void mlp_init_params(const unsigned *dims, int n_dims, uint64_t seed, float *host);
/* mlp_init_params of a const mlp_shape * (run_init_params' callback). */
void mlp_init_shape(const void *shape, uint64_t seed, float *host);

/* Device bytes of the activations for micro-batch b. */
uint64_t mlp_activation_bytes(const unsigned *dims, int n_dims, unsigned b);
/* (Re)allocates activations for micro-batches of up to cap rows, charging
 * them to the context's budget first, and touches every buffer so that a
 * lazily allocating driver fails here. Returns CLG_ERR_OVER_BUDGET or
 * CLG_ERR_OUT_OF_DEVICE_MEMORY when they do not fit (nothing held then). */
clg_status mlp_alloc_activations(mlp *m, unsigned cap);
void mlp_free_activations(mlp *m);

/* Forward pass of rows (<= cap) samples from src, then softmax
 * cross-entropy: row losses and correct flags; with backward != 0 also the
 * gradient of (the summed loss times mult) times scale[scale_off] (the
 * device-side loss scale) in place of the logits. */
cl_int mlp_forward(mlp *m, const mlp_source *src, cl_uint rows, cl_mem scale, size_t scale_off,
                   float mult, int backward);
/* Backward pass after mlp_forward(..., backward = 1): writes
 *   target = beta * target + mult * sum over rows of per-sample gradients
 * for every tensor (targets[t] in model order: w1, b1, w2, b2, ...). */
cl_int mlp_backward(mlp *m, cl_uint rows, const clg_view *targets, float beta);
/* Adds this micro-batch's loss sum and correct count into sums (see
 * mlp_sum_rows in tools/train/nn/mlp.cl). */
cl_int mlp_sum(mlp *m, cl_uint rows, cl_mem sums);

#endif /* TRAIN_MLP_H */
