/* contrastive.h - the inside of a clg_contrastive (clgrad.h, "contrastive
 * losses"), shared by contrastive.c (configuration, memory, the cache and
 * its fills, compute, gradients), contrastive_bank.c (the FIFO banks and
 * their checkpoint parts) and contrastive_kernels.c (program, kernels and
 * launchers of cl/contrastive.cl). */
#ifndef CLGRAD_CONTRASTIVE_H
#define CLGRAD_CONTRASTIVE_H

#include "ckpt_ext.h"
#include "internal.h"

/* The tile sizes of cl/contrastive.cl, chosen per device at create. */
typedef struct clg_con_tiles {
    size_t wg; /* work-group size */
    size_t tr, tc, dk, dout; /* TR, TC, DK, DO */
    size_t vw, vo;           /* VW, VO: vector widths */
} clg_con_tiles;

/* Indices of the kernels. */
enum { CON_PREP, CON_LSE, CON_GRAD, CON_FINISH, CON_LOSS, CON_FILL, CON_GRAD_OUT, CON_KERNELS };

struct clg_contrastive {
    clg_context *ctx;
    clg_contrastive_config cfg;
    clg_contrastive_plan plan;
    clg_con_tiles tiles;
    cl_kernel kernels[CON_KERNELS];

    /* device buffers, [side] = CLG_SIDE_QUERY / CLG_SIDE_KEY */
    cl_mem reps[2];    /* B x d, cfg.dtype */
    cl_mem grads[2];   /* B x d, fp32 */
    cl_mem bank[2];    /* bank_size x d, cfg.dtype (NULL without banks) */
    cl_mem rn[2];      /* B: inverse norms of the cache rows */
    cl_mem lse[2];     /* B: log-sum-exps of each side's direction */
    cl_mem cp[2];      /* B: 1 - softmax of each row's positive */
    cl_mem rloss[2];   /* B: each row's loss */
    cl_mem bank_rn[2]; /* bank_size: inverse norms of the bank rows */
    cl_mem loss;       /* one float */

    /* host side */
    unsigned char *filled[2]; /* per row: filled in the current batch */
    size_t n_filled[2];
    bool computed;            /* a compute ran on the current batch */
    size_t computed_rows;     /* its rows */
    size_t bank_head, bank_count;

    /* checkpoints (contrastive_bank.c) */
    clg_model *model;
    clg_ckpt_ext parts[3]; /* bank_q, bank_k, bank_state */
};

/* contrastive_batch.c */
/* Rows [0, rows) of both sides hold data of the current batch, else
 * CLG_ERR_STATE naming the first row that does not. */
clg_status clg__con_check_filled(const clg_contrastive *c, size_t rows, const char *who);
/* A call consuming the batch's first rows: rows in 1..batch, filled, and
 * the call's events checked and waited for. */
clg_status clg__con_check_batch(const clg_contrastive *c, size_t rows, const clg_events *events,
                                const char *who);

/* contrastive_kernels.c */
#ifdef CLG_FAULT_INJECTION
/* Test hooks (test build only), so that one device runs the variants
 * other devices get; 0: none. A VW (4 or 8; 1 and 16 also build) for the
 * next creates instead of the device's, and a cap on their work-group
 * size (the tiles shrink with it). */
extern size_t clg__con_test_vw;
extern size_t clg__con_test_max_wg;
#endif
/* Picks tile sizes, builds the program and creates every kernel. */
clg_status clg__con_kernels_create(clg_contrastive *c);
void clg__con_kernels_release(clg_contrastive *c);
/* The launches of one compute over rows [0, n) (prep, log-sum-exps,
 * gradients, normalization backward, loss), in order. */
clg_status clg__con_launch_compute(clg_contrastive *c, size_t n);
clg_status clg__con_launch_fill(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                cl_mem src, size_t src_offset, size_t src_stride,
                                clg_dtype src_dtype);
clg_status clg__con_launch_grad_out(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                    float scale, cl_mem dst, size_t dst_offset,
                                    size_t dst_stride, clg_dtype dst_dtype);

/* contrastive_bank.c */
/* Detaches c from its model, if any. */
void clg__con_detach(clg_contrastive *c);

#endif /* CLGRAD_CONTRASTIVE_H */
