/* gpt_internal.h - what the GPT model's files share (gpt_layout.c: the
 * tensors and the activation layout; gpt_model.c: create, bind, the
 * profiling switch; gpt_launch.c: block views, GEMMs, timed launches;
 * gpt_forward.c, gpt_backward.c: the passes). */
#ifndef TRAIN_GPT_INTERNAL_H
#define TRAIN_GPT_INTERNAL_H

#include "gpt_flash.h"
#include "gpt_model.h"

#include <math.h>

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
 * bit), 6C floats a position per layer fewer. The attention (gpt_flash.h)
 * keeps no [T x T] matrix: its backward recomputes the probabilities from
 * q, k and each row's log-sum-exp, and it reads and writes the heads in
 * the GEMMs' rows (no split or merge).
 * --recompute none keeps the LayerNorms' and GELU's outputs too (per
 * layer); block keeps only each block's output (GPT_RES3; block 0's input
 * is GPT_ENCODED) and gives the other kinds one set, layer 0's, which the
 * backward fills again block by block (gpt_layer_buf). A buffer of 0
 * elements in a mode is not allocated.
 * Per layer l, buffer GPT_GLOBAL + l * GPT_PER_LAYER + kind: */
enum gpt_layer_buf {
    GPT_LN1_STATS, /* [2 x N] ln_1's mean, then its rstd */
    GPT_QKV,       /* [N x 3C] c_attn's output: q, k, v side by side */
    GPT_LSE,       /* [B x NH x T] each attention row's log-sum-exp */
    GPT_ATTY,      /* [N x C] the attention's output (attn.c_proj's input) */
    GPT_RES2,      /* [N x C] residual after attention (ln_2's input) */
    GPT_LN2_STATS, /* [2 x N] */
    GPT_FCH,       /* [N x 4C] c_fc's output (GELU's input) */
    GPT_RES3,      /* [N x C] residual after the MLP (the block's output) */
    GPT_LN1_OUT,   /* [N x C] ln_1's output (none; else in GPT_DBUF) */
    GPT_LN2_OUT,   /* [N x C] ln_2's output (none; else in GPT_DBUF) */
    GPT_GELU_OUT,  /* [N x 4C] GELU's output (none; else in GPT_WIDE) */
    GPT_PER_LAYER
};
/* ... and the buffers of the whole model, first: */
enum gpt_global_buf {
    GPT_ENCODED,   /* [N x C] embeddings (block 0's input) */
    GPT_LNF_STATS, /* [2 x N] */
    GPT_LOGITS,    /* [R x ld] the head's rows (R = gpt_head_rows: all N, or a
                      chunk of them), logits, then dlogits in place */
    GPT_ROW_LOSS,  /* [N] */
    GPT_WIDE,      /* [N x 4C] GELU's output, then ln_f's (the head's
                      input) in the first N x C (forward); ln_f's output
                      for wte's gradient, then per block GELU's output
                      again, dfch, dqkv (backward) */
    GPT_DRES,      /* [N x C] the residual stream's gradient */
    GPT_DBUF,      /* [N x C] ln_1's or ln_2's output in both passes (not
                      with --recompute none); in the backward also dlnf,
                      dln2, datty, dln1 in turn, each GEMM that writes
                      one having read the LayerNorm output it replaces */
    GPT_DSUM,      /* [B x NH x T] the attention backward's dy . y rows */
    GPT_SCRATCH,   /* gpt_scratch_floats: the kernels' reductions */
    GPT_SORT,      /* gpt_sort_ints: gpt_embed_backward's counting sort */
    GPT_GLOBAL
};
#define GPT_MAX_BUFS (GPT_GLOBAL + GPT_MAX_LAYERS * GPT_PER_LAYER)

/* Buffer i's elements for micro-batches of up to rows sequences:
 * rows * per_seq + fixed, at most cap (0: no cap; the head's chunk). */
typedef struct gpt_buf_size {
    uint64_t per_seq, fixed, cap;
} gpt_buf_size;
uint64_t gpt_buf_total(const gpt_buf_size *e, unsigned rows);
int gpt_buf_count(const gpt_shape *s);
gpt_buf_size gpt_buf_elems(const gpt_shape *s, int buf);
/* The layer-l buffer of a kind: under --recompute block, layer 0's for
 * every kind but GPT_RES3. */
static inline int gpt_layer_buf(const gpt_shape *s, int l, int kind)
{
    if (s->recompute == GPT_RECOMPUTE_BLOCK && kind != GPT_RES3)
        l = 0;
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
    gpt_flash flash;               /* the attention, built for the head size */
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
    int head_kept;         /* the logits of the last forward's rows are all there */
    int profiling;
    gpt_profile_times times;
    uint64_t gemm_calls, fills; /* for gpt_launches */
};

/* A view of n elements at element off of buffer b. */
static inline clg_view gpt_act(const gpt_model *m, int b, size_t off, size_t n)
{
    clg_view v = {m->buf[b], off, n};
    return v;
}

/* Block l's stored activations for B sequences of T positions, and the
 * attention's dimensions: R = B NH (sequence, head) pairs; q, k, v views
 * of the layer's qkv buffer at columns 0, C and 2C (gpt_flash_model_layout;
 * q's view is the whole buffer, c_attn's output). */
typedef struct gpt_block_views {
    cl_uint NH, HS;
    size_t N, NC, R;
    clg_view mean1, rstd1, q, k, v, lse, atty, res2, mean2, rstd2, fch, res3;
    /* the LayerNorms' and GELU's outputs: kept (--recompute none), or in
     * the shared GPT_DBUF and GPT_WIDE, which the backward fills again */
    clg_view ln1, ln2, gelu;
    int recomputes; /* the backward computes ln1, ln2 and gelu again */
} gpt_block_views;
void gpt_block_views_of(const gpt_model *m, int l, unsigned B, unsigned T, gpt_block_views *v);
/* The attention's softmax scale, 1 / sqrt(HS), in both passes. */
static inline float gpt_attn_scale(const gpt_block_views *v)
{
    return 1.0f / sqrtf((float)v->HS);
}

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
 * dense leading dimensions given. */
cl_int gpt_gemm(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a, size_t lda,
                clg_view b, size_t ldb, float beta, clg_view c, size_t ldc);

/* ln_f's output for N positions (in GPT_WIDE, which no block uses
 * between the head's forward and its backward). */
static inline clg_view gpt_lnf_out(const gpt_model *m, size_t N)
{
    clg_view v = {m->buf[GPT_WIDE], 0, N * m->s.width};
    return v;
}

/* Block l's input for B T = N positions: block l - 1's output, or the
 * embeddings. */
clg_view gpt_block_input(const gpt_model *m, int l, size_t N);
/* Block l's forward on its input into its activations (gpt_forward.c):
 * in the forward (its ln_1 computed by the block before, the next
 * LayerNorm by it), or again in the backward under --recompute block
 * (its ln_1 first, and no further than what its backward reads). */
typedef enum gpt_block_pass { GPT_BLOCK_FORWARD, GPT_BLOCK_AGAIN } gpt_block_pass;
cl_int gpt_block_forward(gpt_model *m, int l, unsigned B, unsigned T, gpt_block_pass pass);

/* gpt_head.c: the tied head after ln_f. The forward's logits (of every
 * row when they fit one chunk: head_kept) and with loss each row's loss;
 * the backward's dlnf into GPT_DBUF and wte's gradient into its target
 * (beta), each chunk's logits computed again when they were not kept. */
cl_int gpt_head_forward(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T, int loss);
cl_int gpt_head_backward(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T, float dscale,
                         clg_view loss_scale, float beta);

/* 0 when B and T fit the activations and the model is bound. */
int gpt_check_batch(const gpt_model *m, unsigned B, unsigned T);

#endif /* TRAIN_GPT_INTERNAL_H */
