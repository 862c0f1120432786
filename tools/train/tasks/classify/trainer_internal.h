/* trainer_internal.h - the state of one clgrad-train run, shared by the
 * files of the trainer: trainer_setup.c (model, gradients, buffers,
 * activations, memory plan, teardown), trainer_loop.c (the loop's hooks:
 * micro-batches, sums, evaluation, metrics, checkpoints) and trainer.c
 * (the run and its outputs). Not part of train_core's interface. */
#ifndef TRAIN_TRAINER_INTERNAL_H
#define TRAIN_TRAINER_INTERNAL_H

#include "atomic_file.h"
#include "devdata.h"
#include "mlp.h"
#include "model_fp32.h"
#include "run.h"
#include "trainer.h"

#include <stdio.h>

typedef struct trainer {
    run_state run;             /* what every task's run has (run.h) */
    train_result *res;

    mlp_shape shape;           /* the MLP's widths */
    mlp *net;
    model_fp32 scratch;        /* fp32 gradients before fp16/bf16 stores */
    model_fp32 weights;        /* bf16 master: the GEMMs' fp32 copy */
    clg_view targets[2 * MLP_MAX_LAYERS];
    clg_view grad_view[2 * MLP_MAX_LAYERS];
    int n_tensors;
    cl_mem sums, eval_sums, one;
    clg_view scale;

    int dist_pending;          /* --dist (run.dist): in a phase whose failures the next
                                  agreement (at the latest train_run's end) must still carry */
} trainer;

/* Message into t->run.err; return -1 (run.h). */
#define trainer_fail(t, ...) run_fail(&(t)->run, __VA_ARGS__)
#define trainer_fail_clg(t, what, st) run_fail_clg(&(t)->run, what, st)
#define trainer_fail_cl(t, what, e) run_fail_cl(&(t)->run, what, e)

/* trainer_setup.c */
int trainer_build_model(trainer *t);
int trainer_setup_gradients(trainer *t);
/* With --master-dtype bf16, the fp32 copy of the weights the MLP reads
 * (model_fp32.h; nothing otherwise). */
int trainer_setup_weights(trainer *t);
int trainer_setup_buffers(trainer *t);
int trainer_fit_activations(trainer *t);
/* The memory plan of the run before anything is loaded or allocated (the
 * shape set, the context open), refused above the device's global memory
 * unless --allow-over-device-memory. */
int trainer_check_plan(trainer *t, const train_io *io);
void trainer_print_plan(trainer *t);
void trainer_teardown(trainer *t);


/* trainer_loop.c: --resume's checks and position, then the loop
 * (core/loop.c with the classifier's hooks, plain or --dist) to the end
 * of the run and its --checkpoint */
int trainer_resume(trainer *t);
int trainer_loop(trainer *t);

#endif /* TRAIN_TRAINER_INTERNAL_H */
