/* gpt_kernels.h - launchers of the kernels in gpt.cl: everything of the
 * GPT task's forward and backward except the GEMMs (CLBlast, through
 * mlp_gemm). Each launcher enqueues on k->queue and returns an OpenCL
 * status. Tensors are clg_views (buffer, offset and count in elements), so
 * that a launcher reads params from clgrad's parameter arena and writes
 * gradients into its accumulator views directly (path B) as easily as into
 * the task's own activation buffer. Every reduction has a fixed order (no
 * atomics): runs repeat bit for bit.
 *
 * Shapes: B sequences of T positions, width C, NH heads of HS = C / NH,
 * vocabulary V (256 bytes, or up to GPT_KERNELS_VOCAB_MAX tokens). N = B * T
 * rows. Row-major throughout:
 * activations [N x C], attention [B x NH x T x T], q/k/v [B x NH x T x HS]. */
#ifndef TRAIN_GPT_KERNELS_H
#define TRAIN_GPT_KERNELS_H

#include "clgrad.h"

/* The tokens of B sequences: sequence b, position t is
 * windows[idx[off + b] * stride + t] (gpt_token_bytes(V) bytes each: uchar
 * for V <= 256, little-endian ushort above); its target, the next token,
 * is at t + 1 (stride >= T + 1). Training windows come through the data
 * order (idx = the order on the device); evaluation and sampling use an
 * identity idx. */
typedef struct gpt_tokens {
    cl_mem windows; /* uchar or ushort (gpt_token_bytes) */
    cl_mem idx;     /* int */
    cl_uint off, stride;
} gpt_tokens;

typedef struct gpt_kernels {
    cl_command_queue queue;
    cl_kernel k[20]; /* the program's kernels (gpt_kernels.c names them) */
    unsigned row_items; /* items per row of the row kernels (gpt_rows.cl) */
    unsigned vocab;     /* V: the tokens index wte's V rows */
    uint64_t *launches; /* kernels enqueued so far (gpt_kernels_launches) */
} gpt_kernels;

/* The largest vocabulary: a token is at most a ushort, 65535 ids (llm.c's
 * shards' uint16 tokens). */
#define GPT_KERNELS_VOCAB_MAX 65535
/* Bytes of one token of a vocabulary of V: 1 for V <= 256, else 2. */
unsigned gpt_token_bytes(unsigned V);
/* The fewest items per row of the row kernels for a vocabulary of V, so
 * that no work-item of the loss loops more than GPT_ITEM_LOOPS times (3
 * passes over its share of a row): Mesa's llvmpipe ends a work-item's
 * loops after 65535 iterations in all, and rusticl's loss at V 50257 with
 * one item per row came out 1.2 nats low (the sum's pass cut short). 1 up
 * to V 10922; 8 for GPT-2's 50257. */
#define GPT_ITEM_LOOPS 32768
unsigned gpt_row_items_min(unsigned V);

/* Builds program "gpt" (gpt_rows.cl + gpt.cl, embedded, kernel
 * cache) for a vocabulary of V (1 .. GPT_KERNELS_VOCAB_MAX; its token
 * type) and creates its kernels. On failure the message is in
 * clg_last_error(ctx). The row kernels reduce a row with a work-group of
 * 64 items on a GPU, with one item on a CPU device (PoCL: measured faster);
 * gpt_kernels_init_rows sets that number (a power of two <= 64; the tests
 * run both), raised to gpt_row_items_min(V) (k->row_items says which). */
clg_status gpt_kernels_init(clg_context *ctx, gpt_kernels *k, unsigned V);
clg_status gpt_kernels_init_rows(clg_context *ctx, gpt_kernels *k, unsigned row_items,
                                 unsigned V);
void gpt_kernels_release(gpt_kernels *k);
/* The kernels the launchers below enqueued on k since gpt_kernels_init
 * (clg_context_launches does not see them: they bypass clgrad's own
 * launch path). */
uint64_t gpt_kernels_launches(const gpt_kernels *k);

/* Scratch (floats) the reductions below need for N rows of C columns: one
 * buffer of this size serves every call of a micro-step (up to 5C
 * columns of partials side by side: gpt_bias_grad_pair's widest pair). */
size_t gpt_scratch_floats(unsigned N, unsigned C);
/* Scratch (ints) of gpt_embed_backward for N tokens of a vocabulary of V:
 * the radix sort's keys and positions twice, its counts, each token's
 * start. At most 5 N + V + 257. */
size_t gpt_sort_ints(unsigned N, unsigned V);

/* out[b,t,:] = wte[token(b,t),:] + wpe[t,:] (wte: k->vocab rows) */
cl_int gpt_embed(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T, cl_uint C,
                 clg_view wte, clg_view wpe, clg_view out);
/* dwte = beta_wte * dwte + sum over the positions holding each token of
 * dout's rows; dwpe = beta_wpe * dwpe + sum over b of dout[b,t,:]. The
 * per-token sums run over the positions in order (a stable radix sort of
 * the positions by token into sort, gpt_sort_ints(N, k->vocab) ints),
 * never atomics; beta_wte 1 leaves the rows of absent tokens untouched.
 * 3 launches a radix pass (1 pass for V <= 256, 2 above), then 3. */
cl_int gpt_embed_backward(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T,
                          cl_uint C, clg_view dout, cl_mem sort, clg_view dwte, float beta_wte,
                          clg_view dwpe, float beta_wpe, cl_mem scratch);

/* LayerNorm of N rows (eps 1e-5, biased variance, as PyTorch):
 * out = (inp - mean) * rstd * w + b; mean and rstd [N] kept for the
 * backward. */
cl_int gpt_layernorm(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view inp, clg_view w,
                     clg_view b, clg_view out, clg_view mean, clg_view rstd);
/* dinp += the gradient through the LayerNorm (added: the residual stream's
 * gradient is already there); dw = beta * dw + sum_n dout * xhat,
 * db = beta * db + sum_n dout. Two launches: dinp and the partials of dw
 * and db side by side, then their last pass (both in one). dinp shares no
 * element with dout or inp. */
cl_int gpt_layernorm_backward(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view dout,
                              clg_view inp, clg_view w, clg_view mean, clg_view rstd,
                              clg_view dinp, clg_view dw, clg_view db, float beta,
                              cl_mem scratch);

/* out[n,:] += bias (after a GEMM that wrote out without it). */
cl_int gpt_bias_add(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view out, clg_view bias);
/* db = beta * db + sum_n dout[n,:]: two launches (partial sums per block
 * of rows, then the sum of the blocks in order). */
cl_int gpt_bias_grad(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view dout, clg_view db,
                     float beta, cl_mem scratch);

/* GELU, tanh approximation (GPT-2's): out = gelu(inp), n elements. */
cl_int gpt_gelu(const gpt_kernels *k, cl_uint n, clg_view inp, clg_view out);
/* dinp = gelu'(inp) * dout (dinp may be dout). */
cl_int gpt_gelu_backward(const gpt_kernels *k, cl_uint n, clg_view inp, clg_view dout,
                         clg_view dinp);
/* out = a + b, n elements (out may be a or b). */
cl_int gpt_residual(const gpt_kernels *k, cl_uint n, clg_view a, clg_view b, clg_view out);

/* Fusions of the launchers above, one pass over the data where they make
 * several, with the same bits:
 *
 * gpt_residual_layernorm, one launch: res_out = a + (b + bias) per row
 * (bias [C] over the rows; bias.mem NULL: res_out = a + b), then ln_out,
 * mean, rstd = gpt_layernorm(res_out, w, lnb). res_out is bitwise
 * gpt_bias_add(b, bias) then gpt_residual(a, b) (b keeps its own values
 * here); ln_out, mean and rstd are bitwise gpt_layernorm of res_out (the
 * same reduction order), so that a backward recomputing the LayerNorm with
 * gpt_layernorm gets the forward's bits. Replaces gpt_bias_add after a
 * c_proj GEMM, gpt_residual and the next LayerNorm (3 launches, 1 without
 * the bias add). res_out may be a or b; ln_out shares no element with
 * them. C >= 1. */
cl_int gpt_residual_layernorm(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view a,
                              clg_view b, clg_view bias, clg_view res_out, clg_view w,
                              clg_view lnb, clg_view ln_out, clg_view mean, clg_view rstd);
/* gpt_bias_gelu, one launch: inout[n,:] += bias (kept: GELU's input, for
 * the backward), gelu_out = gelu(inout); inout bitwise gpt_bias_add's,
 * gelu_out bitwise gpt_gelu's of it (2 launches). gelu_out shares no
 * element with inout. */
cl_int gpt_bias_gelu(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view inout,
                     clg_view bias, clg_view gelu_out);
/* gpt_gelu_backward_bias_grad, two launches: dfch = gelu'(fch) * dout
 * (dfch may be dout, not fch) and db = beta * db + sum_n dfch[n,:]; dfch
 * bitwise gpt_gelu_backward's, db bitwise gpt_bias_grad's of it (3
 * launches): the first writes dfch and the column sums' partials
 * together, the second is gpt_bias_grad's last pass. scratch as there. */
cl_int gpt_gelu_backward_bias_grad(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view fch,
                                   clg_view dout, clg_view dfch, clg_view db, float beta,
                                   cl_mem scratch);

/* Two bias gradients finished in one launch, for the backward's pairs:
 * the partial sums of each into its own columns of scratch rows of ld
 * floats, dout's OC columns from column col (gpt_bias_grad_partial, or
 * gpt_gelu_backward_partial: gpt_gelu_backward_bias_grad's first pass the
 * same way; CL_INVALID_VALUE when col + OC > ld), then gpt_bias_grad_pair:
 * db1 = beta * db1 + the sums of columns 0 .. split, db2 the same of
 * split .. ld, each bitwise gpt_bias_grad's (the same partials summed in
 * the same order). The partials must be of the same N rows, and scratch
 * must not be used by another reduction in between. One launch each. */
cl_int gpt_bias_grad_partial(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view dout,
                             cl_mem scratch, cl_uint ld, cl_uint col);
cl_int gpt_gelu_backward_partial(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view fch,
                                 clg_view dout, clg_view dfch, cl_mem scratch, cl_uint ld,
                                 cl_uint col);
cl_int gpt_bias_grad_pair(const gpt_kernels *k, cl_uint N, cl_uint ld, cl_uint split,
                          cl_mem scratch, clg_view db1, clg_view db2, float beta);

/* Fused softmax + cross-entropy over V classes of the nr rows r0 .. r0 +
 * nr of the positions of sequences of T (the head's chunk: row i is
 * position r0 + i), each of ld >= V floats (columns V .. ld, the padding,
 * never read or written), the target of position b * T + t being the
 * token at t + 1 of sequence b: row_loss[i] = logsumexp(logits[i,:]) -
 * logits[i,target]. With backward,
 * dlogits = (softmax(logits) - onehot(target)) * dscale * S, where S is
 * loss_scale's float (clgrad's dynamic loss scale) or 1 when loss_scale.mem
 * is NULL; dlogits may be logits. */
cl_int gpt_xent(const gpt_kernels *k, const gpt_tokens *tok, cl_uint T, cl_uint r0, cl_uint nr,
                cl_uint V, cl_uint ld, clg_view logits, clg_view row_loss, int backward,
                float dscale, clg_view loss_scale, clg_view dlogits);
/* sums[0] += sum of row_loss[0 .. N) (in a fixed order), sums[1] += N. */
cl_int gpt_loss_sum(const gpt_kernels *k, cl_uint N, clg_view row_loss, cl_mem sums,
                    cl_mem scratch);

#endif /* TRAIN_GPT_KERNELS_H */
