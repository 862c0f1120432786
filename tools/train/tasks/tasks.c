/* tasks.c - the tasks clgrad-train can run (task.h): one line each. main
 * hands them to the core (train_set_tasks). */
#include "tasks.h"
#include "classify_task.h"
#include "contrastive_run.h"
#include "gpt_run.h"

const train_task *const train_tasks[] = {&classify_task, &contrastive_task, &gpt_task};
const int train_n_tasks = sizeof train_tasks / sizeof *train_tasks;
