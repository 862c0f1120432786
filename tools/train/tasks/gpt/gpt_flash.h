/* gpt_flash.h - the GPT task's causal self-attention in O(T) memory
 * (gpt_flash.cl, program "gpt_flash"): the same function as today's
 * path (the head split, q k^T, gpt_softmax_causal, att v; gpt_kernels.h)
 * without its [B x NH x T x T] buffers. The forward keeps each row's
 * log-sum-exp alone; the backward recomputes the probabilities from it.
 *
 * Shapes: R = B * NH heads of T positions, head size HS (fixed when the
 * program is built). q, k, v, y and the gradients are [R x T x HS] (the
 * split's layout, gpt_attn_split), lse and dsum [R x T]. Row i of head r
 * attends to the keys j <= i: p_ij = exp(scale q_i . k_j - lse_i).
 *
 * Tiles: a work-group owns `rows` rows (one work-item each, its
 * work-group size) and streams the other side through local memory
 * `tile` rows at a time (2 * tile * HS floats, and 2 * tile more in the
 * backward). Both are chosen per device (gpt_flash_init) or given
 * (gpt_flash_init_tiles, for the tests).
 *
 * Determinism: every output element has one owner, which sums its terms
 * in ascending order of the streamed rows: no atomics, and a run repeats
 * bit for bit for the same tiles. Other tiles round differently (the
 * forward's rescaling follows the key tiles). Each launcher enqueues on
 * f->queue and returns an OpenCL status; CL_INVALID_VALUE when a view
 * holds fewer elements than the shapes say. */
#ifndef TRAIN_GPT_FLASH_H
#define TRAIN_GPT_FLASH_H

#include "clgrad.h"

enum { GPT_FLASH_MAX_HS = 256 }; /* private arrays of 4 * HS floats per work-item */

typedef struct gpt_flash {
    cl_command_queue queue;
    cl_kernel forward, backward_dq, backward_dkdv;
    unsigned hs, rows, tile;
} gpt_flash;

/* Builds program "gpt_flash" for head size hs (1 .. GPT_FLASH_MAX_HS)
 * with the device's tiles: rows 64 on a GPU and 32 on a CPU device (PoCL:
 * measured, see gpt_flash.c), at most the device's work-group limit and
 * the kernels' own; tile up to 32, within half the device's local memory.
 * On failure of the build the message is in clg_last_error(ctx). */
clg_status gpt_flash_init(clg_context *ctx, unsigned hs, gpt_flash *f);
/* The same with the tiles given: CLG_ERR_INVALID_ARGUMENT for hs, rows or
 * tile 0 or hs above GPT_FLASH_MAX_HS, CLG_ERR_UNSUPPORTED when the device
 * cannot run them (work-group or local memory). */
clg_status gpt_flash_init_tiles(clg_context *ctx, unsigned hs, unsigned rows, unsigned tile,
                                gpt_flash *f);
void gpt_flash_release(gpt_flash *f);

/* y = softmax(scale q k^T, causal) v, and lse [R x T], each row's
 * log-sum-exp of scale q_i . k_j over j <= i. */
cl_int gpt_flash_forward(const gpt_flash *f, cl_uint R, cl_uint T, float scale, clg_view q,
                         clg_view k, clg_view v, clg_view y, clg_view lse);
/* dq, dk, dv from the forward's y and lse and from dy, written (not
 * added). dsum [R x T] is scratch: D_i = dy_i . y_i, written by the first
 * kernel, read by the second. */
cl_int gpt_flash_backward(const gpt_flash *f, cl_uint R, cl_uint T, float scale, clg_view q,
                          clg_view k, clg_view v, clg_view y, clg_view lse, clg_view dy,
                          clg_view dsum, clg_view dq, clg_view dk, clg_view dv);

#endif /* TRAIN_GPT_FLASH_H */
