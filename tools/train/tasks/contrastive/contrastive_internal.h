/* contrastive_internal.h - the state of one contrastive run, shared by
 * contrastive_setup.c (data, model, encoder, cache, kernels, memory plan,
 * teardown), contrastive_loop.c (updates of each method, epochs,
 * progress), contrastive_ckpt.c (checkpoints and resume) and
 * contrastive_knn.c (the evaluation). Not part of train_core's interface. */
#ifndef TRAIN_CONTRASTIVE_INTERNAL_H
#define TRAIN_CONTRASTIVE_INTERNAL_H

#include "contrastive_encoder.h"
#include "contrastive_run.h"
#include "devdata.h"
#include "order.h"
#include "progress.h"
#include "runconfig.h"

#define CON_SETTINGS 8

typedef struct con_trainer {
    const train_options *o;
    const con_options *c;
    con_result *res;
    char *err;
    size_t errlen;

    clg_context *ctx;
    int own_ctx;
    uint64_t old_budget;
    dataset train_ds, test_ds;
    const dataset *train, *test;
    devdata dtrain, dtest;

    unsigned dims[MLP_MAX_LAYERS + 1];
    int n_dims;
    con_encoder *enc;
    clg_config cfg;
    clg_model *model;
    clg_grads *grads;
    clg_view targets[2 * MLP_MAX_LAYERS]; /* the backward's: accumulator or grads */
    clg_contrastive *cache;

    cl_program program;                   /* cl/contrastive_train.cl (the context owns it) */
    cl_kernel k_views, k_l2norm, k_add_loss;
    cl_mem sums;                          /* loss sum and weight of the epoch */

    batch_order order;
    unsigned b, k, cycle_k;
    uint64_t total_updates, batches_per_epoch;
    uint64_t updates, micro_steps, samples, epoch, next_batch;
    uint64_t samples_at_start, updates_at_start;
    double train_seconds;

    run_config config;                    /* train.config.*: the common settings */
    char set_keys[CON_SETTINGS][48];      /* train.contrastive.*: this task's */
    char set_values[CON_SETTINGS][48];
    int n_set;
    progress prog;
} con_trainer;

int con_fail(con_trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int con_fail_clg(con_trainer *t, const char *what, clg_status st);
int con_fail_cl(con_trainer *t, const char *what, cl_int e);

/* contrastive_setup.c */
int con_setup(con_trainer *t, const train_io *io);
void con_print_plan(con_trainer *t);
void con_teardown(con_trainer *t);

/* contrastive_loop.c */
int con_loop(con_trainer *t);
/* The two views of positions [pos0, pos0 + rows) of the effective batch
 * starting at order position start, update `update`, into the encoder's
 * input (2 rows rows). */
cl_int con_views(con_trainer *t, size_t start, size_t pos0, cl_uint rows, uint64_t update);

/* contrastive_ckpt.c */
void con_build_settings(con_trainer *t);
int con_save(con_trainer *t);
int con_resume(con_trainer *t);

/* contrastive_knn.c */
int con_knn_eval(con_trainer *t, double *accuracy);

#endif /* TRAIN_CONTRASTIVE_INTERNAL_H */
