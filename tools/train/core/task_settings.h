/* task_settings.h - a task's own stored settings in checkpoints
 * ("train.<task>.<key>"): the stored rows of its flag table (flags.h), in
 * their order, saved beside the core's (runconfig.h) and compared on
 * --resume, where none can be overridden (each changes what the saved
 * state means); and the checks of a resumed position every task makes. */
#ifndef TRAIN_TASK_SETTINGS_H
#define TRAIN_TASK_SETTINGS_H

#include "position.h"
#include "run.h"

#define TASK_SETTINGS_MAX 16

typedef struct task_settings {
    const flag_table *table;
    const char *task; /* its --task name: the keys' prefix and the messages' */
    char keys[TASK_SETTINGS_MAX][48];
    char values[TASK_SETTINGS_MAX][64];
    int n;
} task_settings;

/* The values of the table's stored rows for the run r (its opts: the
 * task's options). */
void task_settings_build(task_settings *s, const flag_table *t, const char *task,
                         const flag_run *r);

/* --checkpoint with the task's settings (run_save; s NULL: a task
 * without any). */
int task_settings_save(run_state *r, const task_settings *s);

/* --resume: run_resume_load with the task's settings compared (a
 * difference refused, naming each), then the position checked against the
 * run (--seed, --batch, the training samples, the counters the model
 * holds, the batch within the epoch) and set. overridden: what --override
 * accepted. 0, or -1 with a message in r->err. */
int task_settings_resume(run_state *r, const task_settings *s, char *overridden, size_t olen);

#endif /* TRAIN_TASK_SETTINGS_H */
