/* contrastive_internal.h - the state of one contrastive run, shared by
 * contrastive_setup.c (data, model, encoder, cache, kernels, memory plan,
 * teardown), contrastive_loop.c (updates of each method, epochs,
 * progress), contrastive_ckpt.c (checkpoints and resume) and
 * contrastive_knn.c (the evaluation). Not part of train_core's interface. */
#ifndef TRAIN_CONTRASTIVE_INTERNAL_H
#define TRAIN_CONTRASTIVE_INTERNAL_H

#include "contrastive_encoder.h"
#include "contrastive_run.h"
#include "run.h"
#include "task_settings.h"

typedef struct con_trainer {
    run_state run;                        /* what every task's run has (run.h) */
    const con_options *c;
    con_result *res;

    mlp_shape shape;           /* the MLP's widths */
    con_encoder *enc;
    clg_view targets[2 * MLP_MAX_LAYERS]; /* the backward's: accumulator or grads */
    clg_contrastive *cache;

    cl_program program;                   /* contrastive_train.cl (the context owns it) */
    cl_kernel k_views, k_l2norm, k_add_loss;
    cl_mem sums;                          /* loss sum and weight of the epoch */

    task_settings settings;               /* train.contrastive.*: this task's */
} con_trainer;

/* contrastive_setup.c */
int con_setup(con_trainer *t, const train_io *io);
void con_print_plan(con_trainer *t);
/* run_end's release: the run's state (a con_trainer), then run_release */
void con_teardown(void *task);

/* contrastive_loop.c */
int con_loop(con_trainer *t);
/* The two views of positions [pos0, pos0 + rows) of the effective batch
 * starting at order position start, update `update`, into the encoder's
 * input (2 rows rows). */
cl_int con_views(con_trainer *t, size_t start, size_t pos0, cl_uint rows, uint64_t update);

/* contrastive_ckpt.c */
void con_build_settings(con_trainer *t);
int con_resume(con_trainer *t);

/* contrastive_knn.c */
int con_knn_eval(con_trainer *t, double *accuracy);

#endif /* TRAIN_CONTRASTIVE_INTERNAL_H */
