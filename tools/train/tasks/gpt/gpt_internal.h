/* gpt_internal.h - what the GPT model's files share (gpt_layout.c: the
 * tensors and the activation layout; gpt_model.c: create, bind, the
 * profiling switch; gpt_launch.c: block views, GEMMs, timed launches;
 * gpt_forward.c, gpt_backward.c: the passes). */
#ifndef TRAIN_GPT_INTERNAL_H
#define TRAIN_GPT_INTERNAL_H

#include "gpt_model.h"

/* Elements of a tensor of gpt_tensor. */
static inline size_t gpt_tensor_size(const gpt_tensor_info *t)
{
    return t->ndim == 2 ? t->dims[0] * t->dims[1] : t->dims[0];
}

/* The activation buffers (one cl_mem each, 4-byte elements), as llm.c's
 * ActivationTensors keep them: per layer only what the backward reads;
 * what one layer uses and the next overwrites is shared by all layers.
 * As llm.c's recompute, the outputs of ln_1, ln_2 and GELU are not kept:
 * the backward computes them again from the block's input, res2 and fch
 * (the LayerNorms with the same kernel on the same input, so bit for
 * bit), 6C floats a position per layer fewer.
 * Per layer l, buffer GPT_GLOBAL + l * GPT_PER_LAYER + kind: */
enum gpt_layer_buf {
    GPT_LN1_STATS, /* [2 x N] ln_1's mean, then its rstd */
    GPT_QKV_HEADS, /* [3 x B x NH x T x HS] q, k, v split into heads */
    GPT_ATT,       /* [B x NH x T x T] the causal softmax */
    GPT_ATTY,      /* [N x C] the heads merged (attn.c_proj's input) */
    GPT_RES2,      /* [N x C] residual after attention (ln_2's input) */
    GPT_LN2_STATS, /* [2 x N] */
    GPT_FCH,       /* [N x 4C] c_fc's output (GELU's input) */
    GPT_RES3,      /* [N x C] residual after the MLP (the block's output) */
    GPT_PER_LAYER
};
/* ... and the buffers of the whole model, first: */
enum gpt_global_buf {
    GPT_ENCODED,   /* [N x C] embeddings (block 0's input) */
    GPT_LNF,       /* [N x C] ln_f's output (the head's input) */
    GPT_LNF_STATS, /* [2 x N] */
    GPT_LOGITS,    /* [N x V] logits, then dlogits in place */
    GPT_ROW_LOSS,  /* [N] */
    GPT_PREATT,    /* [B x NH x T x T] q k^T of the current layer; datt and
                      dpreatt in the backward */
    GPT_WIDE,      /* [N x 4C] qkv [N x 3C], then GELU's output
                      (forward); GELU's output again, then dfch, then
                      dqkv (backward) */
    GPT_HEADS,     /* [3 x N x C] ln_1's output, y in heads, ln_2's output
                      (forward); ln_2's output again, dy, then dq, dk,
                      dv, then ln_1's output again (backward) */
    GPT_DRES,      /* [N x C] the residual stream's gradient */
    GPT_DBUF,      /* [N x C] dlnf, dln2, datty, dln1 in turn */
    GPT_SCRATCH,   /* gpt_scratch_floats: the kernels' reductions */
    GPT_SORT,      /* gpt_sort_ints: gpt_embed_backward's counting sort */
    GPT_GLOBAL
};
#define GPT_MAX_BUFS (GPT_GLOBAL + GPT_MAX_LAYERS * GPT_PER_LAYER)

/* Buffer i's elements for micro-batches of up to rows sequences:
 * rows * per_seq + fixed. */
typedef struct gpt_buf_size {
    uint64_t per_seq, fixed;
} gpt_buf_size;
int gpt_buf_count(const gpt_shape *s);
gpt_buf_size gpt_buf_elems(const gpt_shape *s, int buf);
/* The layer-l buffer of a kind. */
static inline int gpt_layer_buf(int l, int kind)
{
    return GPT_GLOBAL + l * GPT_PER_LAYER + kind;
}

/* Tensor index of a block's parameter j (gpt_tensor's order within a
 * block: ln_1.weight = 0 .. mlp.c_proj.bias = 11), and of ln_f's. */
enum { GPT_WTE, GPT_WPE };
enum gpt_block_param {
    GPT_LN1_W,
    GPT_LN1_B,
    GPT_QKV_W,
    GPT_QKV_B,
    GPT_ATTPROJ_W,
    GPT_ATTPROJ_B,
    GPT_LN2_W,
    GPT_LN2_B,
    GPT_FC_W,
    GPT_FC_B,
    GPT_FCPROJ_W,
    GPT_FCPROJ_B,
    GPT_BLOCK_PARAMS
};
static inline int gpt_block_tensor(int l, int j)
{
    return 2 + GPT_BLOCK_PARAMS * l + j;
}
static inline int gpt_lnf_tensor(const gpt_shape *s, int bias)
{
    return 2 + GPT_BLOCK_PARAMS * (int)s->layers + bias;
}

enum gpt_prof_kind { GPT_PROF_GEMM, GPT_PROF_ATTN, GPT_PROF_OTHER };

struct gpt_model {
    clg_context *ctx;
    cl_command_queue queue;
    gpt_kernels k;
    mlp_gemm_scratch gemm_scratch; /* CLBlast's temporary buffer (mlp_gemms.h) */
    gpt_shape s;
    unsigned rows;     /* sequences the activations hold */
    uint64_t reserved; /* bytes reserved against the budget */
    int n_bufs;
    cl_mem buf[GPT_MAX_BUFS];
    int params_bound, grads_bound; /* fp32 views in param and acc */
    /* the parameters and the gradient targets (accumulator or buffers) */
    clg_view param[GPT_MAX_TENSORS], acc[GPT_MAX_TENSORS];
    unsigned fwd_B, fwd_T; /* the last forward's (gpt_backward checks) */
    int profiling;
    gpt_profile_times times;
};

/* A view of n elements at element off of buffer b. */
static inline clg_view gpt_act(const gpt_model *m, int b, size_t off, size_t n)
{
    clg_view v = {m->buf[b], off, n};
    return v;
}

/* Block l's stored activations for B sequences of T positions, and the
 * attention's dimensions: R = B NH (sequence, head) pairs of [T x HS]. */
typedef struct gpt_block_views {
    cl_uint NH, HS;
    size_t N, NC, R, THS, TT;
    clg_view mean1, rstd1, q, k, v, att, atty, res2, mean2, rstd2, fch, res3;
} gpt_block_views;
void gpt_block_views_of(const gpt_model *m, int l, unsigned B, unsigned T, gpt_block_views *v);

/* Profiling (gpt_profile): a launch between gpt_prof_begin and
 * gpt_prof_end is waited for and its seconds added to kind. */
double gpt_prof_begin(gpt_model *m);
cl_int gpt_prof_end(gpt_model *m, int kind, double t0, cl_int err);
/* Runs call (an expression giving a cl_int) unless err already holds a
 * failure, timed as kind when profiling. */
#define GPT_RUN(m, err, kind, call)                                                                \
    do {                                                                                           \
        if ((err) == CL_SUCCESS) {                                                                 \
            double t0_ = gpt_prof_begin(m);                                                        \
            (err) = (call);                                                                        \
            (err) = gpt_prof_end((m), (kind), t0_, (err));                                         \
        }                                                                                          \
    } while (0)

/* Row-major C = op(A) op(B) + beta C through mlp_gemm (alpha 1), with
 * dense leading dimensions given; and the same for batch products at
 * element strides sa, sb, sc (CLBlast's strided batched GEMM, in the
 * column-major form mlp_gemm uses). */
cl_int gpt_gemm(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a, size_t lda,
                clg_view b, size_t ldb, float beta, clg_view c, size_t ldc);
cl_int gpt_gemm_batched(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a,
                        size_t lda, size_t sa, clg_view b, size_t ldb, size_t sb, clg_view c,
                        size_t ldc, size_t sc, size_t batch);

/* 0 when B and T fit the activations and the model is bound. */
int gpt_check_batch(const gpt_model *m, unsigned B, unsigned T);

#endif /* TRAIN_GPT_INTERNAL_H */
