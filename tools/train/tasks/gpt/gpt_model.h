/* gpt_model.h - the GPT task's model: a GPT-2-style decoder (as llm.c's
 * train_gpt2.c) over a vocabulary of V tokens (the 256 bytes by default).
 * Token and position embeddings, L pre-LayerNorm blocks (causal multi-head
 * self-attention, then a GELU
 * (tanh) MLP of 4C, each with a residual), a final LayerNorm and the LM
 * head tied to the token embedding. Its parameters live in clgrad's model
 * (one tensor each, in the order of gpt_tensor); forward and backward are
 * gpt.cl's kernels (gpt_kernels.h) and CLBlast GEMMs (mlp_gemm), the
 * backward writing every weight gradient straight into clgrad's
 * accumulator with beta = clg_accum_beta (path B), or into other fp32
 * targets with beta 0 (paths A/C: gpt_bind_grads). */
#ifndef TRAIN_GPT_MODEL_H
#define TRAIN_GPT_MODEL_H

#include "clgrad.h"
#include "gpt_kernels.h"
#include "mlp_gemms.h"

#include <stddef.h>
#include <stdint.h>

/* The vocabulary of a byte model (text read as bytes): the default. */
#define GPT_BYTE_VOCAB 256
/* Logit rows are padded to a multiple of this many floats (llm.c pads
 * 50257 to 50304): the padding is never written, read or sampled. */
#define GPT_LOGITS_ALIGN 64
#define GPT_MAX_LAYERS 48
/* wte, wpe, 12 per block, lnf.weight, lnf.bias */
#define GPT_MAX_TENSORS (4 + 12 * GPT_MAX_LAYERS)

/* What the forward keeps for the backward (--recompute). The function,
 * the loss and every gradient are the same bit for bit in each mode (the
 * backward recomputes with the forward's kernels on the same inputs);
 * only the activations' bytes and the time differ. */
typedef enum gpt_recompute {
    GPT_RECOMPUTE_NORM = 0, /* all but the LayerNorms' and GELU's outputs,
                               which the backward computes again (llm.c's) */
    GPT_RECOMPUTE_NONE,     /* those too */
    GPT_RECOMPUTE_BLOCK,    /* each block's input alone: the backward runs the
                               block's forward again before its backward */
    GPT_RECOMPUTE_MODES
} gpt_recompute;
/* "norm", "none", "block"; and back (-1 for another name). */
const char *gpt_recompute_name(gpt_recompute r);
int gpt_recompute_parse(const char *name);

typedef struct gpt_shape {
    unsigned layers, heads, width, context; /* L, NH, C (a multiple of NH), T */
    gpt_recompute recompute;                /* how the activations are kept */
    unsigned vocab;                         /* V: 1 .. GPT_KERNELS_VOCAB_MAX */
    unsigned head_rows;                     /* the head's chunk: rows of logits at once
                                               (0: GPT_HEAD_CHUNK_FLOATS' worth) */
} gpt_shape;

/* The head's logits take at most this many floats at once (256 MiB): a
 * micro-batch of more rows goes through the head in chunks of rows (each:
 * the logits' GEMM, the loss and dlogits in place, the two GEMMs of the
 * backward), so that a large vocabulary's logits do not decide the
 * micro-batch (GPT-2's 50304 floats a row would be 206 MB a sequence at
 * T 1024). The forward keeps no logits then, and the backward computes
 * each chunk's again; a micro-batch within one chunk keeps its logits
 * from the forward, as a model without chunks. */
#define GPT_HEAD_CHUNK_FLOATS ((uint64_t)1 << 26)
/* The most rows of the head's chunk: head_rows, or GPT_HEAD_CHUNK_FLOATS /
 * ld (at least 1); and those of micro-batches of up to rows sequences:
 * rows * T at most that. */
unsigned gpt_head_chunk_rows(const gpt_shape *s);
unsigned gpt_head_rows(const gpt_shape *s, unsigned rows);

/* 0, or -1 with a message naming the flag (--layers, --heads, --width,
 * --context, --vocab) that is out of range or does not divide. */
int gpt_shape_check(const gpt_shape *s, char *err, size_t errlen);

/* The floats of one row of logits: V rounded up to GPT_LOGITS_ALIGN. */
unsigned gpt_logits_ld(const gpt_shape *s);

/* Parameter tensor i (0 .. gpt_tensor_count - 1) in model order:
 * "wte" [V x C], "wpe" [T x C], then per block l "h.<l>.ln_1.weight" [C],
 * "h.<l>.ln_1.bias", "h.<l>.attn.c_attn.weight" [3C x C],
 * "h.<l>.attn.c_attn.bias" [3C], "h.<l>.attn.c_proj.weight" [C x C],
 * "h.<l>.attn.c_proj.bias", "h.<l>.ln_2.weight", "h.<l>.ln_2.bias",
 * "h.<l>.mlp.c_fc.weight" [4C x C], "h.<l>.mlp.c_fc.bias" [4C],
 * "h.<l>.mlp.c_proj.weight" [C x 4C], "h.<l>.mlp.c_proj.bias" [C], then
 * "ln_f.weight", "ln_f.bias". Linear weights are [out x in] (PyTorch's
 * nn.Linear). decay: 1 for the matrices (weight decay applies), 0 for
 * biases and LayerNorm params. */
typedef struct gpt_tensor_info {
    char name[48];
    size_t dims[2];
    int ndim;
    int decay;
} gpt_tensor_info;
int gpt_tensor_count(const gpt_shape *s);
void gpt_tensor(const gpt_shape *s, int i, gpt_tensor_info *out);
uint64_t gpt_param_count(const gpt_shape *s);

/* GPT-2's initialization (run_param_init's form; arg is a gpt_shape): the
 * matrices and embeddings N(0, 0.02), the residual projections (c_proj)
 * N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm weights 1 and biases 0, from
 * the trainer's seeded generator. host holds gpt_param_count floats. */
void gpt_init_params(const void *shape, uint64_t seed, float *host);

/* Device bytes of the activations, gradients of activations and scratch
 * that gpt_create allocates for micro-batches of up to rows sequences:
 * exactly what it reserves against the context's budget (the memory plan
 * is this function). Per-sequence part and fixed part separately, and the
 * head's logits, which grow per sequence up to their chunk, so that a plan
 * can find the largest micro-batch that fits: bytes(rows) = rows * per_seq
 * + fixed + min(rows * logits_per_seq, logits_cap) (gpt_act_total). */
typedef struct gpt_act_bytes {
    uint64_t per_seq, fixed;
    uint64_t logits_per_seq, logits_cap;
} gpt_act_bytes;
gpt_act_bytes gpt_activation_bytes(const gpt_shape *s);
uint64_t gpt_act_total(const gpt_act_bytes *a, unsigned rows);

typedef struct gpt_model gpt_model;

/* Kernels (gpt_kernels_init) and activations for up to rows sequences,
 * reserved against ctx's budget. 0, or -1 with a message. */
int gpt_create(clg_context *ctx, const gpt_shape *s, unsigned rows, gpt_model **out, char *err,
               size_t errlen);
void gpt_destroy(gpt_model *m);

/* The parameter and accumulator views of clgrad's model (built with the
 * tensors of gpt_tensor, in order, and finalized). CLG_ERR_INVALID_ARGUMENT
 * when its tensors are not gpt_tensor's (names, sizes, count). The passes
 * read and write fp32: bf16 master weights (master_dtype CLG_BF16) leave
 * the parameters unbound until gpt_bind_params gives fp32 ones, a bf16
 * accumulator the gradient targets until gpt_bind_grads; the passes
 * refuse to run before both are bound. */
clg_status gpt_bind(gpt_model *m, const clg_model *model);
/* Other fp32 views, gpt_tensor_count of them in model order, for the
 * parameters (e.g. model_fp32.h's copy of bf16 master weights) or for the
 * gradient targets (e.g. clgrad's fp32 gradient buffers of paths A/C),
 * in place of clgrad's. */
void gpt_bind_params(gpt_model *m, const clg_view *params);
void gpt_bind_grads(gpt_model *m, const clg_view *grads);

/* Forward of B <= rows sequences of tok (T = the shape's context): the
 * logits and the per-position losses; sums (NULL: none) gets the loss sum
 * and the position count added (gpt_loss_sum). */
cl_int gpt_forward(gpt_model *m, const gpt_tokens *tok, unsigned B, cl_mem sums);

/* The last forward's per-position losses summed into sums as gpt_forward
 * does (e.g. a second sum over another span, --metrics' per update). */
cl_int gpt_add_loss(gpt_model *m, unsigned B, cl_mem sums);

/* Backward of the last forward: every weight gradient of the mean loss
 * over each sequence's T positions, times dscale, times loss_scale's float
 * (clg_model_loss_scale_view; mem NULL: 1), into the gradient targets
 * (clgrad's accumulator, or gpt_bind_grads') as
 * acc = beta * acc + gradient. For path B with micro-batch weight rows the
 * caller passes dscale 1 (sum over the rows of each sequence's mean) and
 * beta = clg_accum_beta; for paths A/C (clgrad multiplies the gradients
 * by the weight rows) dscale 1 / B (the micro-batch's mean) and beta 0. */
cl_int gpt_backward(gpt_model *m, const gpt_tokens *tok, unsigned B, float dscale,
                    clg_view loss_scale, float beta);

/* Forward of B sequences of T' <= T positions (sampling: T' the prompt's
 * length so far) without the loss; then the logits of position t of
 * sequence b read back (blocking) into host (V floats). */
cl_int gpt_forward_logits(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T);
cl_int gpt_read_logits(gpt_model *m, unsigned b, unsigned t, unsigned T, float *host);

/* Seconds of the forwards and backwards since gpt_profile turned
 * profiling on (each launch then waits for the queue, so only the
 * benchmark turns it on): every CLBlast GEMM, the attention's kernels
 * (gpt_flash.cl) and every other kernel of gpt.cl. */
typedef struct gpt_profile_times {
    double gemm, attention, other;
} gpt_profile_times;
void gpt_profile(gpt_model *m, int on);
gpt_profile_times gpt_profile_read(const gpt_model *m);

/* Kernels the passes enqueued since gpt_create: gpt.cl's, gpt_flash.cl's,
 * one per CLBlast GEMM call (CLBlast may run more than one kernel for a
 * call, its padding or transposes) and one per buffer fill. */
uint64_t gpt_launches(const gpt_model *m);

/* The distinct GEMM shapes of one micro-step (forward and backward) of B
 * sequences, each with its count per micro-step, in mlp_gemm_shapes' form
 * (for clgrad-tune and the tuning check): the four linear layers of each
 * block and the tied head (the attention runs no GEMM: gpt_flash.h).
 * Returns how many (at most cap written). */
size_t gpt_gemm_shapes(const gpt_shape *s, unsigned B, mlp_gemm_shape *out, size_t cap);

#endif /* TRAIN_GPT_MODEL_H */
