/* tasks.h - the tasks clgrad-train can run (tasks.c), in --task order;
 * train_tasks[0] is the default. Only main (and the tests) name them. */
#ifndef CLGRAD_TRAIN_TASKS_H
#define CLGRAD_TRAIN_TASKS_H

#include "task.h"

extern const train_task *const train_tasks[];
extern const int train_n_tasks;

#endif /* CLGRAD_TRAIN_TASKS_H */
