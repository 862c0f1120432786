/* classify_internal.h - the state of one classifier run, shared by the
 * files of the classify task: classify_setup.c (model, gradients, buffers,
 * activations, memory plan, teardown), classify_loop.c (the loop's hooks:
 * micro-batches, sums, evaluation, metrics, checkpoints) and classify_run.c
 * (the run and its outputs). Not part of train_core's interface. */
#ifndef TRAIN_CLASSIFY_INTERNAL_H
#define TRAIN_CLASSIFY_INTERNAL_H

#include "atomic_file.h"
#include "devdata.h"
#include "mlp.h"
#include "model_fp32.h"
#include "run.h"
#include "classify_run.h"

#include <stdio.h>

typedef struct classify_trainer {
    run_state run;             /* what every task's run has (run.h) */
    classify_result *res;

    mlp_shape shape;           /* the MLP's widths */
    mlp *net;
    model_fp32 scratch;        /* fp32 gradients before fp16/bf16 stores */
    model_fp32 weights;        /* bf16 master: the GEMMs' fp32 copy */
    clg_view targets[2 * MLP_MAX_LAYERS];
    clg_view grad_view[2 * MLP_MAX_LAYERS];
    int n_tensors;
    cl_mem sums, eval_sums, one; /* sums: the loss and correct answers of the epoch,
                                    then the loss of the update (mlp_sum) */
    clg_view scale;
} classify_trainer;

/* classify_setup.c */
int classify_build_model(classify_trainer *t);
int classify_setup_gradients(classify_trainer *t);
/* With --master-dtype bf16, the fp32 copy of the weights the MLP reads
 * (model_fp32.h; nothing otherwise). */
int classify_setup_weights(classify_trainer *t);
int classify_setup_buffers(classify_trainer *t);
int classify_fit_activations(classify_trainer *t);
/* The memory plan of the run before anything is loaded or allocated (the
 * shape set, the context open), refused above the device's global memory
 * unless --allow-over-device-memory. */
int classify_check_plan(classify_trainer *t, const train_io *io);
void classify_print_plan(classify_trainer *t);
/* run_end's release: the classifier's state (a classify_trainer), then
 * run_release */
void classify_teardown(void *task);


/* classify_loop.c: --resume's checks and position, then the training
 * (run_train: core/loop.c with the classifier's hooks, plain or --dist)
 * to the end of the run and its --checkpoint */
int classify_resume(classify_trainer *t);
int classify_loop(classify_trainer *t);

#endif /* TRAIN_CLASSIFY_INTERNAL_H */
