/* gpt_vocab.h - the GPT task's kernels for a real vocabulary (up to 65536
 * tokens, uint16 windows; gpt_vocab.cl, program "gpt_vocab"): the token
 * embedding, the fused classifier over logits padded to a multiple of 64
 * columns, and the token embedding's gradient, deterministic for any V.
 * Not yet used by the model (gpt_kernels.h serves the 256-byte one).
 *
 * Shapes: B sequences of T positions, width C, vocabulary V (1 ..
 * GPT_VOCAB_MAX), N = B T rows, logits rows of Vp = gpt_vocab_padded(V)
 * columns. Tensors are clg_views (buffer, offset and count in elements);
 * each launcher enqueues on g->queue and returns an OpenCL status,
 * CL_INVALID_VALUE (nothing enqueued) when a view is missing or holds
 * fewer elements than the shapes say, or a shape is out of range. No
 * atomics, fixed summation orders: a run repeats bit for bit on one build.
 *
 * Tokens >= V: checking them is the reader's job (gpt_shards.c); the
 * kernels only never read or write outside their views for one. The
 * embedding writes NaN in its row, the classifier a NaN loss and dlogits
 * 0 for a target >= V (the loss sum shows NaN, the row adds no gradient),
 * and the embedding's gradient drops its positions. */
#ifndef TRAIN_GPT_VOCAB_H
#define TRAIN_GPT_VOCAB_H

#include "clgrad.h"

enum { GPT_VOCAB_MAX = 65536, GPT_VOCAB_PAD = 64 };

/* The logits' row length for V tokens: V rounded up to a multiple of 64
 * (llm.c pads 50257 to 50304). */
static inline cl_uint gpt_vocab_padded(cl_uint V)
{
    return (V + GPT_VOCAB_PAD - 1) / GPT_VOCAB_PAD * GPT_VOCAB_PAD;
}

/* The tokens of B sequences: sequence b, position t is
 * windows[idx[off + b] * stride + t] (ushort); its target is at t + 1
 * (stride >= T + 1). gpt_tokens with 16-bit tokens. */
typedef struct gpt_vocab_tokens {
    cl_mem windows; /* ushort */
    cl_mem idx;     /* int */
    cl_uint off, stride;
} gpt_vocab_tokens;

enum { GPT_VOCAB_SORT_WG = 256 }; /* keys per block of the sort (a work-group) */

/* How the classifier is built: items per row (a power of two, 1 .. 256),
 * columns per load (vec: 1, 4, 8 or 16) and, with backward, whether the
 * exponentials are stored in place by the sum's pass and read back
 * (keep_exp 1) or computed again (0). Every build gives the right result;
 * one build's bits repeat, another's may differ in rounding (its sums are
 * grouped otherwise; keep_exp alone changes no bit). */
typedef struct gpt_vocab_build {
    unsigned row_items, vec;
    int keep_exp;
} gpt_vocab_build;

typedef struct gpt_vocab {
    cl_command_queue queue;
    cl_kernel embed, xent, sort_count, sort_scan, sort_scatter, run_starts, wte_grad;
    gpt_vocab_build build;
} gpt_vocab;

/* Builds program "gpt_vocab" (embedded, kernel cache) and creates its
 * kernels. The classifier's build: {256, 4, 0} on a GPU, {1, 8, 1} on a
 * CPU device (PoCL: measured, gpt_vocab.c), the items cut to the device's
 * work-group limit. The sort runs in work-groups of
 * GPT_VOCAB_SORT_WG: a device whose limit is below that is
 * CLG_ERR_UNSUPPORTED. On failure the message is in clg_last_error(ctx). */
clg_status gpt_vocab_init(clg_context *ctx, gpt_vocab *g);
/* The same with the classifier's build given, for the tests and
 * measurements: CLG_ERR_INVALID_ARGUMENT for a build outside the ranges
 * above, CLG_ERR_UNSUPPORTED above the device's work-group limit. */
clg_status gpt_vocab_init_with(clg_context *ctx, gpt_vocab_build build, gpt_vocab *g);
void gpt_vocab_release(gpt_vocab *g);

/* Ints of the scratch of gpt_vocab_wte_grad for N positions and V tokens:
 * the sort's keys and positions, twice (ping-pong: 4 N), its counts (256
 * per block of 256 keys), and the tokens' starts (V + 1). */
size_t gpt_vocab_sort_ints(unsigned N, unsigned V);

/* out[b,t,:] = wte[token(b,t),:] + wpe[t,:]; wte [V x C], wpe [T x C],
 * out [N x C]. */
cl_int gpt_vocab_embed(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                       cl_uint C, cl_uint V, clg_view wte, clg_view wpe, clg_view out);

/* The fused classifier (llm.c's fused_classifier) over rows r0 .. r0 + nr
 * of the micro-batch's N = B T rows (one launch; a caller short of memory
 * runs the head in chunks of rows). logits holds that chunk alone: row n
 * at element (n - r0) Vp of the view, nr Vp elements. Row n = b T + t has
 * the target y = the token at t + 1 of sequence b:
 *   row_loss[n] = logsumexp(logits[n, :V]) - logits[n, y]
 * (row_loss is indexed by n: its view holds r0 + nr elements at least, so
 * that the chunks fill one buffer of N). With backward, in place:
 *   logits[n, :V] = (softmax(logits[n, :V]) - onehot(y)) dscale S,
 *   logits[n, V:Vp] = 0,
 * S = loss_scale's float (clgrad's dynamic loss scale) or 1 when
 * loss_scale.mem is NULL. The padding columns are never read: they are in
 * neither the max, the sum nor the loss. Without backward the logits stay
 * as they are. A row is bitwise the same whatever chunk holds it. */
cl_int gpt_vocab_classifier(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                            cl_uint V, cl_uint r0, cl_uint nr, clg_view logits, clg_view row_loss,
                            int backward, float dscale, clg_view loss_scale);

/* The token embedding's gradient: dwte [V x C],
 *   dwte[v,:] = beta dwte[v,:] + sum over the positions p holding token v,
 *               in ascending order, of dout[p,:]  (dout [N x C]).
 * beta 0: every row is written (0 for a token absent from the positions)
 * and dwte is never read (it may hold anything); beta 1: the rows of
 * absent tokens are neither read nor written (the model calls it after
 * the head's GEMM wrote wte's gradient), the others get old + sum; any
 * other beta: every row is beta old + sum (beta old when absent).
 * Eight launches: a stable radix sort of the positions by token (two
 * passes of 8 bits, each a count, a scan and a scatter: gpt_vocab.cl),
 * the tokens' starts in the sorted order, then the sums (an item per
 * (v, c)). sort: gpt_vocab_sort_ints(N, V) ints of scratch (a view of an
 * int buffer, in elements). */
cl_int gpt_vocab_wte_grad(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                          cl_uint C, cl_uint V, clg_view dout, clg_view sort, clg_view dwte,
                          float beta);

#endif /* TRAIN_GPT_VOCAB_H */
