/* classify_task.h - the MLP classifier on Fashion-MNIST as a task of
 * clgrad-train (task.h): it takes the core's flags only. */
#ifndef TRAIN_CLASSIFY_TASK_H
#define TRAIN_CLASSIFY_TASK_H

#include "task.h"
#include "classify_run.h"

extern const train_task classify_task;

/* The summary line (and --json's) of a finished run on stdout. Returns the
 * exit status (1 when stdout cannot be written). */
int classify_print_summary(const train_options *opt, const classify_result *res);

#endif /* TRAIN_CLASSIFY_TASK_H */
