/* task.h - what a training task plugs into clgrad-train with. The core
 * (core/) owns the command line, the run configuration checkpoints store,
 * the data order, progress, metrics, checkpoint positions and --dist; a
 * task (tasks/<name>/) brings its data, model, forward and backward into
 * clgrad's accumulator, evaluation and summary, and its own flags as a
 * table (flags.h) whose rows the core parses and lists in --help with its
 * own. A task is one train_task in the list of tasks/tasks.c: adding one
 * touches nothing in core/. */
#ifndef TRAIN_TASK_H
#define TRAIN_TASK_H

#include "flags.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>

#define TRAIN_MAX_TASKS 8

typedef struct train_task {
    const char *name;         /* its --task name */
    /* Its flags (NULL: none). Their rows write into the task's options
     * struct, options_size bytes, which defaults() fills first. A flag of
     * the table given with another --task is refused with wrong_task. */
    const flag_table *flags;
    size_t options_size;
    void (*defaults)(void *task_opts);
    const char *wrong_task;
    /* After parsing, with the core's options checked: the combinations of
     * core flags the task cannot take and the defaults that depend on them
     * (e.g. a bank as large as --batch). 0, or -1 with a message naming the
     * flag. May be NULL. */
    int (*check)(void *task_opts, const train_options *o, char *err, size_t errlen);
    /* The command line's run (--dist runs go through main.c): trains,
     * prints the summary and, with --json, the JSON line. Returns the exit
     * status. */
    int (*main)(const train_options *o, const void *task_opts);
    /* Whether --dist can run it (main.c's MPI path). */
    int dist;
} train_task;

/* The tasks (tasks/tasks.c); train_tasks[0] is the default. */
extern const train_task *const train_tasks[];
extern const int train_n_tasks;
/* --task's help, naming the tasks. */
extern const char train_tasks_help[];

/* Parses the whole command line: the core's flags (then
 * train_options_check), every task's into task_opts[i] (the i-th task's
 * options, set to its defaults), a task's flag given with another --task
 * refused, then the chosen task's check. Returns 0, 1 for --help, or -1
 * with a message. */
int train_cli_parse(int argc, char **argv, train_options *o, void *const *task_opts, char *err,
                    size_t errlen);

/* --help: the core's flags, then each task's. */
void train_cli_usage(FILE *f);

#endif /* TRAIN_TASK_H */
