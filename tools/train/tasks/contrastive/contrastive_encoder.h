/* contrastive_encoder.h - the encoder of clgrad-train's contrastive task:
 * an MLP dims[0] -> ... -> dims[L] (ReLU between layers, none after the
 * last) on a clgrad model, run on the two views of a micro-batch stacked as
 * one matrix of 2m rows (queries, then keys), so that every GEMM is one
 * CLBlast call. Its tensors are named and laid out as the classifier's
 * (mlp.h: "fc<l>.weight" [out x in], "fc<l>.bias"), so --dump-weights and
 * docs/pytorch.md read it the same way; its GEMMs go through mlp_gemm and
 * its other kernels are nn/mlp.cl's. */
#ifndef TRAIN_CONTRASTIVE_ENCODER_H
#define TRAIN_CONTRASTIVE_ENCODER_H

#include "clgrad.h"
#include "mlp.h"
#include "mlp_gemms.h"
#include "mlp_kernels.h"

typedef struct con_encoder {
    clg_context *ctx;
    cl_command_queue queue;
    mlp_kernels k;
    mlp_gemm_scratch scratch;
    int n_layers;
    unsigned dims[MLP_MAX_LAYERS + 1];
    int w_tensor[MLP_MAX_LAYERS], b_tensor[MLP_MAX_LAYERS];
    clg_view w[MLP_MAX_LAYERS], b[MLP_MAX_LAYERS];

    /* activations for up to cap rows, reserved against the budget */
    unsigned cap;
    uint64_t act_bytes;
    cl_mem x;                   /* [cap x dims[0]]: the views */
    cl_mem act[MLP_MAX_LAYERS]; /* layer l's output; the last: embeddings, then their gradient */
    cl_mem delta[2];            /* backward ping-pong, [cap x widest hidden] */
} con_encoder;

/* Builds the kernels; returns 0, or -1 with a message in err. */
int con_encoder_create(clg_context *ctx, const unsigned *dims, int n_dims, con_encoder **out,
                       char *err, size_t errlen);
void con_encoder_destroy(con_encoder *e);
/* Tensors into a model being built (biases into no_decay_group), and their
 * views once it is finalized. */
clg_status con_encoder_add_tensors(con_encoder *e, clg_model *model, int no_decay_group);
clg_status con_encoder_bind(con_encoder *e, const clg_model *model);
/* Device bytes of the activations for rows rows. */
uint64_t con_encoder_activation_bytes(const unsigned *dims, int n_dims, unsigned rows);
/* Activations for up to cap rows (charged to the budget first). */
clg_status con_encoder_alloc(con_encoder *e, unsigned cap);
/* act[L-1] = encoder(x) for rows rows of x. */
cl_int con_encoder_forward(con_encoder *e, cl_uint rows);
/* After a forward of the same rows, with dL/d(embedding) in act[L-1]:
 * targets[2l], targets[2l+1] (fc<l+1>.weight, .bias views) =
 *   beta * targets + sum over rows of the parameter gradients. */
cl_int con_encoder_backward(con_encoder *e, cl_uint rows, const clg_view *targets, float beta);
/* The embeddings' buffer (act[L-1], rows x dims[L]). */
cl_mem con_encoder_output(const con_encoder *e);

#endif /* TRAIN_CONTRASTIVE_ENCODER_H */
