/* task.h - the interface between clgrad-train's core and its tasks. The
 * core (core/) owns the command line and its flag tables, the run
 * configuration checkpoints store, the context and budget, the data order
 * and the position in it, the training loop with its waits, progress and
 * --save-every checkpoints, --json and the atomic outputs; --dist's MPI
 * side is main.c's and train_mpi.c's. A task (tasks/<name>/) brings its
 * flags as a table (flags.h; a name the core already has, e.g. --data, is
 * the core's and the task reads it from train_options), its data, model,
 * micro-steps writing gradients into clgrad's accumulator, evaluation and
 * summary. A task is one train_task in tasks/tasks.c: adding one touches
 * nothing in core/. */
#ifndef TRAIN_TASK_H
#define TRAIN_TASK_H

#include "dist_hooks.h"
#include "flags.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>

#define TRAIN_MAX_TASKS 8

typedef struct train_task {
    const char *name; /* its --task name */
    /* Its flags (NULL: none). Their rows write into the task's options
     * struct, options_size bytes, which defaults() fills first. A flag of
     * the table given with another --task is refused with wrong_task. */
    const flag_table *flags;
    size_t options_size;
    void (*defaults)(void *task_opts);
    const char *wrong_task;
    /* After parsing, with the core's options checked and the limits of
     * the task's table (flags.h: the core flags it cannot take, or only
     * some values of) passed: the combinations of its own flags it cannot
     * take and the defaults that depend on the core's (e.g. a bank as
     * large as --batch). 0, or -1 with a message naming the flag. May be
     * NULL. */
    int (*check)(void *task_opts, const train_options *o, char *err, size_t errlen);
    /* The command line's run (--dist runs go through main.c): trains,
     * prints the summary and, with --json, the JSON line. Returns the exit
     * status. */
    int (*main)(const train_options *o, const void *task_opts);
    /* --dist (NULL: the task does not run under MPI): one rank's run with
     * the MPI side's hooks (dist_hooks.h), rank 0 printing the summary.
     * Returns 0, 1 when the summary could not be written, or -1 with the
     * run's failure in err (the same on every rank: the run agrees on it). */
    int (*dist_run)(const train_options *o, const void *task_opts, train_dist_hooks *d, char *err,
                    size_t errlen);
} train_task;

/* Inside main, a task's run: its state embeds a run_state (run.h) set up
 * with the core's steps (run_load_data, run_open_context, run_plan_order,
 * run_create_model, run_init_params, run_reserve_buffer), and trains with
 * run_loop (loop.h), which calls these hooks with the task's state. */
typedef struct run_loop_hooks {
    /* An epoch's pass starts (its order is on the device): clear the
     * epoch's running sums. */
    int (*epoch_start)(void *task);
    /* One effective batch: positions [start, start + len) of the order, as
     * micro-batches of at most r->b, each one's forward and backward
     * writing its gradients into clgrad's accumulator (path B) or gradient
     * buffers (A, C) and handed to clg_step with its weight, so that the
     * batch is one update; sets r->cycle_k to its micro-batch count first
     * (run_k_of_cycle). Advances r->updates, r->micro_steps, r->samples. */
    int (*batch)(void *task, size_t start, size_t len);
    /* Whether the queue must be finished after every update (NULL: no),
     * and what to do then with the update of len samples (NULL: nothing). */
    int (*sync_every_update)(void *task);
    int (*after_update)(void *task, size_t len);
    /* The epoch's mean loss so far for the progress line (NaN: none yet),
     * epoch_samples samples into the pass. */
    int (*running_loss)(void *task, uint64_t epoch_samples, double *loss);
    /* --checkpoint now (--save-every). */
    int (*save)(void *task);
    /* The pass is over (the queue finished): its summary and evaluation;
     * seconds of training in this pass. */
    int (*epoch_end)(void *task, uint64_t epoch_samples, double seconds);
} run_loop_hooks;

/* The tasks: main hands them to the core (registry.h). */
#include "registry.h"

/* Parses the whole command line: the core's flags (then
 * train_options_check and the core's limits), every task's into
 * task_opts[i] (the i-th task's options, set to its defaults), a task's
 * flag given with another --task refused, then the chosen task's limits
 * and check. Returns 0, 1 for --help, or -1 with a message. */
int train_cli_parse(int argc, char **argv, train_options *o, void *const *task_opts, char *err,
                    size_t errlen);

/* --help: the core's flags, then each task's. */
void train_cli_usage(FILE *f);

#endif /* TRAIN_TASK_H */
