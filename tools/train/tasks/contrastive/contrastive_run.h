/* contrastive_run.h - clgrad-train's contrastive task as a library call
 * (the command line, the tests and the measurements share it): an MLP
 * encoder trained by InfoNCE on two augmented views of each image, with
 * naive accumulation, GradCache or ContAccum (clgrad.h, "contrastive
 * losses"), evaluated by kNN test accuracy on its embeddings. */
#ifndef TRAIN_CONTRASTIVE_RUN_H
#define TRAIN_CONTRASTIVE_RUN_H

#include "contrastive_options.h"
#include "run.h"

/* The task's --task name (contrastive_task.c), which its checkpoints record
 * (contrastive_options.c's row "task") and its --resume files must have. */
#define CONTRASTIVE_TASK_NAME "contrastive"

typedef struct con_result {
    run_result run;           /* what every task reports (summary.h); its
                                 peak_device_bytes: the context's high-water
                                 mark during training (before the final
                                 evaluation's buffers), its activation_bytes the
                                 encoder's, for 2 x micro-batch rows */
    double loss;              /* mean InfoNCE of the last epoch's updates (naive and
                                 contaccum: their micro-batches' losses) */
    double knn_accuracy;      /* on the test embeddings after training */
    double knn_accuracy_init; /* before the first update (--knn-init), else NaN */
    uint64_t cache_bytes;     /* the clg_contrastive (clg_contrastive_memory) */
    uint64_t eval_bytes;      /* the kNN evaluation's buffers (freed after) */
} con_result;

/* Runs the task. io may give the context, data sets and a buffer for the
 * final parameters (run.h). Returns 0, or -1 with a message in err. */
int contrastive_run(const train_options *o, const con_options *c, const train_io *io,
                    con_result *res, char *err, size_t errlen);

/* The task as clgrad-train runs it (task.h; contrastive_task.c). */
extern const struct train_task contrastive_task;

#endif /* TRAIN_CONTRASTIVE_RUN_H */
