/* gpt_flash.h - the GPT task's causal self-attention in O(T) memory
 * (gpt_flash.cl, program "gpt_flash"): the same function as today's
 * path (the head split, q k^T, gpt_softmax_causal, att v; gpt_kernels.h)
 * without its [B x NH x T x T] buffers. The forward keeps each row's
 * log-sum-exp alone; the backward recomputes the probabilities from it.
 *
 * Shapes: R = B * NH heads of T positions, head size HS (fixed when the
 * program is built), in a gpt_flash_layout: q, k, v and their gradients
 * at one row stride, y and dy at another, lse and dsum [R x T]. Row i of
 * head r attends to the keys j <= i: p_ij = exp(scale q_i . k_j - lse_i).
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

#include <stdint.h>

enum { GPT_FLASH_MAX_HS = 256 }; /* private arrays of 4 * HS floats per work-item */

/* Where the heads' rows are: row t of head r = b * heads + h (sequence
 * b, head h) at element (b T + t) ld + h HS of its tensor's view, ld being
 * ld_qkv for q, k, v, dq, dk, dv and ld_y for y and dy. The model's
 * (gpt_flash_model_layout): q, k and v side by side in the rows of qkv
 * [B T x 3C] (views at elements 0, C, 2C; ld_qkv 3C), y and dy [B T x C]
 * (ld_y C), as the GEMMs before and after write and read them, so no head
 * split or merge runs. The split layout [R x T x HS] (gpt_flash_split_layout):
 * heads 1, both strides HS. */
typedef struct gpt_flash_layout {
    cl_uint heads, ld_qkv, ld_y;
} gpt_flash_layout;
static inline gpt_flash_layout gpt_flash_model_layout(cl_uint heads, cl_uint width)
{
    gpt_flash_layout l = {heads, 3 * width, width};
    return l;
}
static inline gpt_flash_layout gpt_flash_split_layout(cl_uint hs)
{
    gpt_flash_layout l = {1, hs, hs};
    return l;
}

typedef struct gpt_flash {
    cl_command_queue queue;
    cl_kernel forward, backward_dq, backward_dkdv;
    unsigned hs, rows, tile;
    uint64_t launches; /* kernels enqueued so far (the launch counts) */
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
 * log-sum-exp of scale q_i . k_j over j <= i. bias: NULL (mem), or
 * [3 x heads x HS], q's, k's and v's parts (c_attn's bias, which the GEMM
 * before left out), added to q, k and v as they are read, each element
 * by one float addition as a bias add over them would (so the result is
 * that of q + bq, k + bk, v + bv bit for bit). CL_INVALID_VALUE also when
 * R is not a multiple of lay.heads or a stride is below HS. */
cl_int gpt_flash_forward(gpt_flash *f, cl_uint R, cl_uint T, float scale, gpt_flash_layout lay,
                         clg_view bias, clg_view q, clg_view k, clg_view v, clg_view y,
                         clg_view lse);
/* dq, dk, dv from the forward's y and lse and from dy (the same bias),
 * written (not added). dsum [R x T] is scratch: D_i = dy_i . y_i, written
 * by the first kernel, read by the second. dq, dk, dv must not overlap q,
 * k, v (the second kernel reads q, k and v after the first wrote dq). */
cl_int gpt_flash_backward(gpt_flash *f, cl_uint R, cl_uint T, float scale, gpt_flash_layout lay,
                          clg_view bias, clg_view q, clg_view k, clg_view v, clg_view y,
                          clg_view lse, clg_view dy, clg_view dsum, clg_view dq, clg_view dk,
                          clg_view dv);

#endif /* TRAIN_GPT_FLASH_H */
