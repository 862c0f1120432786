/* gpt_run.h - clgrad-train's GPT task as a library call (the command line
 * and the tests share it): a GPT-2-style decoder (gpt_model.h) trained on
 * a text corpus read as bytes or on token shards (gpt_source.h) with
 * clgrad's accumulation (path B), evaluated on the validation split beside
 * the unigram and bigram baselines, and optionally sampled. */
#ifndef TRAIN_GPT_RUN_H
#define TRAIN_GPT_RUN_H

#include "gpt_data.h"
#include "gpt_options.h"
#include "run.h"

#define GPT_TASK_NAME "gpt"

typedef struct gpt_result {
    run_result run;         /* what every task reports (summary.h): its samples
                               are sequences */
    double val_loss;        /* nats per token (a byte of text) on the validation targets
                               evaluated */
    double bytes_per_token; /* of those targets: 1 for text; a token model's through its
                               decode table (NAN without one), for the loss per byte */
    unsigned vocab;         /* the model's (gpt_options_resolve's) */
    int tokens;             /* 1: trained on token shards */
    double train_loss;      /* mean of the last epoch's training positions */
    gpt_baselines base;     /* of the same validation targets */
    size_t corpus_bytes, train_windows, val_windows;
    uint64_t planned_bytes; /* the memory plan's total before anything was allocated */
    /* --profile: seconds of the training's forwards and backwards by kind
     * (gpt_profile_read, the evaluation's left out) and of the optimizer's
     * updates (clFinish before and after the cycle-ending clg_step) */
    gpt_profile_times prof;
    double optimizer_seconds;
} gpt_result;

/* Runs the task (io: as classify_run.h's; its train and test, when given, are
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

/* The task as clgrad-train runs it (task.h; gpt_task.c). */
extern const struct train_task gpt_task;

#endif /* TRAIN_GPT_RUN_H */
