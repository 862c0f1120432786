/* trainer.h - clgrad-train's training run as a library call, so that the
 * command line, the tests and the benchmark share one implementation. */
#ifndef TRAIN_TRAINER_H
#define TRAIN_TRAINER_H

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

typedef struct train_result {
    double test_accuracy, test_loss;
    double train_accuracy, train_loss; /* running values of the last epoch */
    uint64_t updates;                  /* updates taken (incl. skipped) */
    uint64_t skipped_updates;
    uint64_t micro_steps, samples;
    unsigned epochs;                   /* epochs started */
    unsigned micro_batch, accum_steps; /* final b and k (after auto halving) */
    unsigned batch;                    /* --batch */
    unsigned update_samples;           /* samples of a full update: --batch, or the
                                          training set when it holds fewer */
    unsigned halvings;                 /* --auto-micro-batch halvings */
    uint64_t params;
    float lr;                          /* base lr after --lr-scale */
    double train_seconds, eval_seconds, total_seconds, samples_per_s;
    uint64_t peak_device_bytes;        /* clgrad's peak incl. reservations */
    uint64_t data_bytes;               /* of which the data set on the device */
    uint64_t activation_bytes;         /* of which activations (final b) */
    char device[128];
    char clblast_tuning[1024];         /* the tuning file CLBlast's GEMMs ran with, "" for
                                          CLBlast's defaults (--tuning) */
    char overridden[512];              /* settings --override changed on resume, "" if none */
} train_result;

/* Runs the whole job described by opt. Its files are checked first
 * (outpaths.h). Returns 0 on success, otherwise a non-zero value with a
 * message in err; a failed run leaves --metrics and --dump-weights as they
 * were (a --checkpoint saved by --save-every stays). */
int train_run(const train_options *opt, const train_io *io, train_result *res, char *err,
              size_t errlen);
/* train_run as one rank of a --dist run (dist: the MPI side, train_mpi.h;
 * NULL: train_run). Collective: every rank returns the same status, with
 * the failed rank's message. */
int train_run_dist(const train_options *opt, const train_io *io, train_dist_hooks *dist,
                   train_result *res, char *err, size_t errlen);

/* The MLP opt describes on inputs features: inputs, --hidden's widths,
 * then the classes. */
mlp_shape train_mlp_shape(const train_options *opt, unsigned inputs);

#endif /* TRAIN_TRAINER_H */
