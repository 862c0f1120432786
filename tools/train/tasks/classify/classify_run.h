/* classify_run.h - the classify task's training run as a library call, so
 * that the command line, the tests and the benchmark share one implementation. */
#ifndef TRAIN_CLASSIFY_RUN_H
#define TRAIN_CLASSIFY_RUN_H

#include "clgrad.h"
#include "dataset.h"
#include "dist_hooks.h"
#include "mlp.h"
#include "options.h"
#include "run.h"

#include <stddef.h>
#include <stdint.h>

/* The task's --task name (classify_task.c), which its --resume files must
 * have been saved under (run.h). */
#define CLASSIFY_TASK_NAME "classify"

typedef struct classify_result {
    run_result run;                    /* what every task reports (summary.h) */
    double test_accuracy, test_loss;
    double train_accuracy, train_loss; /* running values of the last epoch */
    uint64_t skipped_updates;
    unsigned halvings;                 /* --auto-micro-batch halvings */
} classify_result;

/* Runs the whole job described by opt. Its files are checked first
 * (outpaths.h). Returns 0 on success, otherwise a non-zero value with a
 * message in err; a failed run leaves --metrics and --dump-weights as they
 * were (a --checkpoint saved by --save-every stays). */
int classify_run(const train_options *opt, const train_io *io, classify_result *res, char *err,
              size_t errlen);
/* classify_run as one rank of a --dist run (dist: the MPI side, train_mpi.h;
 * NULL: classify_run). Collective: every rank returns the same status, with
 * the failed rank's message. */
int classify_run_dist(const train_options *opt, const train_io *io, train_dist_hooks *dist,
                   classify_result *res, char *err, size_t errlen);

/* The MLP opt describes on inputs features: inputs, --hidden's widths,
 * then the classes. */
mlp_shape classify_mlp_shape(const train_options *opt, unsigned inputs);

#endif /* TRAIN_CLASSIFY_RUN_H */
