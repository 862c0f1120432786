/* gpt_run.h - clgrad-train's GPT task as a library call (the command line
 * and the tests share it): a byte-level GPT-2-style decoder (gpt_model.h)
 * trained on a text corpus (gpt_data.h) with clgrad's accumulation (path
 * B), evaluated on the validation split beside the unigram and bigram
 * baselines, and optionally sampled. */
#ifndef TRAIN_GPT_RUN_H
#define TRAIN_GPT_RUN_H

#include "gpt_data.h"
#include "gpt_options.h"
#include "run.h"

#define GPT_TASK_NAME "gpt"

typedef struct gpt_result {
    double val_loss;    /* nats per byte on the validation targets evaluated */
    double train_loss;  /* mean of the last epoch's training positions */
    gpt_baselines base; /* of the same validation targets */
    uint64_t updates, micro_steps, samples;
    unsigned epochs, batch, micro_batch, accum_steps, update_samples;
    uint64_t params;
    float lr;
    size_t corpus_bytes, train_windows, val_windows;
    double train_seconds, eval_seconds, total_seconds, samples_per_s;
    uint64_t peak_device_bytes; /* the context's high-water mark */
    uint64_t planned_bytes;     /* the memory plan's total before anything was allocated */
    uint64_t activation_bytes, model_bytes, data_bytes;
    /* --profile: seconds of the training's forwards and backwards by kind
     * (gpt_profile_read, the evaluation's left out) and of the optimizer's
     * updates (clFinish before and after the cycle-ending clg_step) */
    gpt_profile_times prof;
    double optimizer_seconds;
    char device[128];
    char clblast_tuning[1024];  /* the tuning file applied, "" if none */
    char overridden[512];
} gpt_result;

/* Runs the task (io: as trainer.h's; its train and test, when given, are
 * window sets of T + 1 bytes). Returns 0, or -1 with a message in err. */
int gpt_run(const train_options *o, const gpt_options *g, const train_io *io, gpt_result *res,
            char *err, size_t errlen);

/* The same as one rank of a --dist run (dist: its MPI side, dist_hooks.h;
 * NULL: a plain run): the core's loop takes this rank's share of every
 * batch; rank 0 evaluates, writes the outputs and samples. */
int gpt_run_dist(const train_options *o, const gpt_options *g, const train_io *io,
                 train_dist_hooks *dist, gpt_result *res, char *err, size_t errlen);

/* --plan: the memory plan without a device, printed to stdout. 0, or -1
 * with a message. */
int gpt_print_plan(const train_options *o, const gpt_options *g, char *err, size_t errlen);

/* The command line's run: summary on stdout, --json as its last line.
 * Returns the exit status. */
int gpt_main(const train_options *o, const gpt_options *g);

/* A rank's run under --dist (task.h's dist_run): rank 0 prints the
 * summary. 0, 1 when it could not be written, -1 with the failure in err. */
int gpt_dist_main(const train_options *o, const gpt_options *g, train_dist_hooks *d, char *err,
                  size_t errlen);

/* The task as clgrad-train runs it (task.h; gpt_task.c). */
extern const struct train_task gpt_task;

#endif /* TRAIN_GPT_RUN_H */
