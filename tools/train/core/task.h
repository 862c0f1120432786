/* task.h - the interface between clgrad-train's core and its tasks. The
 * core (core/) owns the command line and its flag tables, the run
 * configuration checkpoints store, the context and budget, the data order
 * and the position in it, the training loop with its micro-steps, waits,
 * progress, evaluation points and checkpoints, --json and the atomic
 * outputs, and --dist: the loop (loop.c) is the same for a plain run and a
 * rank of a --dist run, whose agreement points, rank 0's print decision,
 * collective saves, share of every batch and sums over the ranks are the
 * core's (dist.h); MPI itself is behind dist_hooks.h (main.c starts it,
 * train_mpi.c implements it). A task (tasks/<name>/) brings its flags as a
 * table (flags.h; a name the core already has, e.g. --data, is the core's
 * and the task reads it from train_options), its data, model, micro-steps
 * writing gradients into clgrad's accumulator, running sums, evaluation
 * and summary. A task is one train_task in tasks/tasks.c: adding one
 * touches nothing in core/. */
#ifndef TRAIN_TASK_H
#define TRAIN_TASK_H

#include "dist_hooks.h"
#include "flags.h"
#include "mlp_gemms.h"
#include "options.h"
#include "path_list.h"

#include <stddef.h>
#include <stdio.h>

#define TRAIN_MAX_TASKS 8

/* The CLBlast GEMMs of a run (task gemms hook): what clgrad-tune tunes
 * for, and what a tuning is checked on before the run uses it. */
typedef struct task_gemms {
    mlp_gemm_shape shape[MLP_GEMMS_MAX]; /* one micro-step's, with their counts */
    size_t n;
    char model[128];     /* what they are: "mlp 784,512,256,10 micro-batch 32" */
    /* whose tuning file of the device holds their tuning (tuning_path):
     * NULL, the device's default one (the MLP's), or the task's name */
    const char *tuning_task;
    double micro_steps;  /* of the whole run the options describe (0: not known) */
} task_gemms;

/* The files a run reads from --data (data: its path), appended to files
 * with their sizes: what no output may name (train_check_files). A task's
 * NULL: the IDX files of dataset_files. 0, or -1 with a message. */
typedef int (*task_data_files_fn)(const char *data, path_list *files, char *err, size_t errlen);

typedef struct train_task {
    const char *name; /* its --task name */
    /* Its flags (NULL: none). Their rows write into the task's options
     * struct, options_size bytes, which defaults() fills first. A flag of
     * the table given with another --task is refused with wrong_task. */
    const flag_table *flags;
    size_t options_size;
    void (*defaults)(void *task_opts);
    const char *wrong_task;
    /* The core's defaults this task changes (NULL: none), e.g. its own
     * --batch, --lr or --data: applied to the core's options before the
     * command line is parsed when --task names it, so that a flag given
     * always wins and the core's checks see the task's values. */
    void (*core_defaults)(train_options *o);
    /* After parsing, with the core's options checked and the limits of
     * the task's table (flags.h: the core flags it cannot take, or only
     * some values of) passed: the combinations of its own flags it cannot
     * take and the defaults that depend on the core's (e.g. a bank as
     * large as --batch). 0, or -1 with a message naming the flag. May be
     * NULL. */
    int (*check)(void *task_opts, const train_options *o, char *err, size_t errlen);
    /* The command line's run (--dist runs go through dist_run): trains,
     * prints the summary and, with --json, the JSON line. Returns the exit
     * status. */
    int (*main)(const train_options *o, const void *task_opts);
    /* --dist (NULL: the task does not run under MPI): one rank's run, the
     * MPI side's hooks (dist_hooks.h) as its run_state's dist: the core's
     * loop (with the task's micro hook) and dist.h do the collective part;
     * rank 0 prints the summary.
     * Returns 0, 1 when the summary could not be written, or -1 with the
     * run's failure in err (the same on every rank: the run agrees on it). */
    int (*dist_run)(const train_options *o, const void *task_opts, train_dist_hooks *d, char *err,
                    size_t errlen);
    /* The GEMMs of the run o and task_opts describe (NULL: none to tune),
     * from the same model description the run uses; with the options
     * parsed and checked. 0, or -1 with a message. */
    int (*gemms)(const train_options *o, const void *task_opts, task_gemms *g, char *err,
                 size_t errlen);
    task_data_files_fn data_files;
} train_task;

/* The run's files checked before anything runs (outpaths_check): every
 * output writable and none over an input, the inputs --data names
 * (data_files: the task's) among them unless with_data is 0 (the caller
 * gave the data itself). main calls it for the command line, each task's
 * run again. 0, or -1 with a message naming the flags and paths. */
int train_check_files(task_data_files_fn data_files, const train_options *o, int with_data,
                      char *err, size_t errlen);

/* Inside main, a task's run: its state embeds a run_state (run.h) begun
 * with run_start and set up with the core's steps (run_load_data,
 * run_open_context, run_plan_order, run_create_model, run_init_params,
 * run_reserve_buffer), and trains with run_train (loop.h), whose loop
 * calls these hooks with the task's state. The core keeps the rest of
 * the loop: the running sums (r->epoch_sums, r->update_sums: cleared,
 * read back, under --dist summed over the ranks), the --metrics rows and
 * --log lines, the checkpoints (with r->settings), the fp32 copy of bf16
 * master weights (r->master) and the bound on the queue. Under --dist
 * every rank calls them (and must reach the same core calls in the same
 * order); the core evaluates on rank 0 alone. */
#define RUN_LOOP_MAX_SUMS 8
typedef struct run_loop_hooks {
    /* An update's work, in one of two forms. micro (needed for --dist):
     * one micro-batch, rows samples from position off of the epoch's
     * order: its forward and backward writing its gradients into clgrad's
     * accumulator (path B: rows x the mean gradient) or the gradient
     * buffers (A, C: the mean), and its part of the running sums. The core
     * cuts the effective batch (under --dist this rank's share of it) into
     * micro-batches of at most r->b (run_begin_cycle), and hands each to
     * clg_step (under --dist the MPI side's step) with weight rows, so that
     * the batch is one update; it advances the counters. */
    int (*micro)(void *task, size_t off, unsigned rows);
    /* batch (when micro is NULL; plain runs only): the whole effective
     * batch, positions [start, start + len) of the order, as micro-batches
     * the task steps itself (e.g. when the loss needs every micro-batch's
     * forward first); calls run_begin_cycle(r, len) before its first
     * clg_step. Advances r->updates, r->micro_steps, r->samples. */
    int (*batch)(void *task, size_t start, size_t len);
    /* After each update's micro-steps are enqueued (NULL: nothing), before
     * the core widens r->master and bounds the queue, e.g. a --profile
     * wait. */
    int (*updated)(void *task);
    /* The mean loss of sums s (the epoch's, or the update's) gathered over
     * samples samples (NaN: none yet): the progress line's, the --metrics
     * row's and the --log line's. */
    double (*mean_loss)(void *task, const float *s, uint64_t samples);
    /* The test set's evaluation with the params as they are (NULL: none
     * in the loop), after each pass and when a resumed run is already at
     * its end; on rank 0 alone under --dist. */
    int (*evaluate)(void *task);
    /* The pass is over (the queue finished, evaluated): its summary from
     * the epoch's sums s; seconds of training in this pass. */
    int (*epoch_end)(void *task, const float *s, uint64_t epoch_samples, double seconds);
} run_loop_hooks;

/* The tasks: main hands them to the core (registry.h). */
#include "registry.h"

/* Parses the whole command line: --task first (the last one given; its
 * core_defaults applied), then the core's flags (then train_options_check
 * and the core's limits), every task's into task_opts[i] (the i-th task's
 * options, set to its defaults), a task's flag given with another --task
 * refused, then the chosen task's limits and check. A flag name two tasks
 * share (--temperature) is the chosen task's: its table comes right after
 * the core's. Returns 0, 1 for --help, or -1 with a message. */
int train_cli_parse(int argc, char **argv, train_options *o, void *const *task_opts, char *err,
                    size_t errlen);

/* train_cli_parse with every task's options allocated at their defaults
 * into task_opts[0 .. TRAIN_MAX_TASKS) (NULL for a task without flags);
 * train_cli_free releases them, whatever this returned. Returns as
 * train_cli_parse (-1 also when out of host memory). */
int train_cli_parse_all(int argc, char **argv, train_options *o, void **task_opts, char *err,
                        size_t errlen);
void train_cli_free(void **task_opts);

/* --help: the core's flags, then each task's. */
void train_cli_usage(FILE *f);

#endif /* TRAIN_TASK_H */
