/* task.c - --task and the command line of a run with its task's flags
 * (see task.h). */
#include "task.h"
#include "summary.h"
#include "errmsg.h"
#include "dataset.h"
#include "outpaths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The task the last --task of argv names (the default's when none, or
 * when its value is no task: the parse below says why). */
static int chosen_task(int argc, char **argv)
{
    const flag_def *row = flags_find(&train_flag_table, "--task");
    train_options probe;
    train_options_default(&probe);
    int task = probe.task;
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        if (!strcmp(argv[i], "--task") && i + 1 < argc)
            val = argv[++i];
        else if (!strncmp(argv[i], "--task=", 7))
            val = argv[i] + 7;
        if (val && flags_parse_value(row, val, &probe, NULL, 0) == 0)
            task = probe.task;
    }
    return task;
}

int train_cli_parse(int argc, char **argv, train_options *o, void *const *task_opts, char *err,
                    size_t errlen)
{
    flag_table tables[1 + TRAIN_MAX_TASKS];
    void *opts[1 + TRAIN_MAX_TASKS];
    int seen[1 + TRAIN_MAX_TASKS] = {0}, owner[1 + TRAIN_MAX_TASKS] = {0};
    int n = 1;
    tables[0] = train_flag_table;
    opts[0] = o;
    int chosen = chosen_task(argc, argv);
    if (chosen < train_task_count() && train_task_at(chosen)->core_defaults)
        train_task_at(chosen)->core_defaults(o);
    /* the chosen task's table first: a name it shares with another task is its */
    for (int j = -1; j < train_task_count() && j < TRAIN_MAX_TASKS; j++) {
        int i = j < 0 ? chosen : j;
        if ((j >= 0 && i == chosen) || i >= train_task_count() || !train_task_at(i)->flags)
            continue;
        tables[n] = *train_task_at(i)->flags;
        opts[n] = task_opts[i];
        owner[n++] = i;
    }
    int rc = flags_parse(argc, argv, tables, n, opts, seen, err, errlen);
    if (rc == 0)
        rc = train_options_check(o, err, errlen);
    if (rc == 0)
        rc = train_options_check_limits(&train_flag_table, o, err, errlen);
    for (int k = 1; rc == 0 && k < n; k++) {
        if (seen[k] && owner[k] != o->task) { /* else silently ignored */
            errmsg_set(err, errlen, "%s", train_task_at(owner[k])->wrong_task);
            rc = -1;
        }
    }
    const train_task *t = train_task_at(o->task);
    if (rc == 0 && t->flags) /* the core flags the task cannot take */
        rc = train_options_check_limits(t->flags, o, err, errlen);
    if (rc == 0 && t->check)
        rc = t->check(task_opts[o->task], o, err, errlen);
    return rc;
}

int train_cli_parse_all(int argc, char **argv, train_options *o, void **task_opts, char *err,
                        size_t errlen)
{
    train_options_default(o);
    for (int i = 0; i < TRAIN_MAX_TASKS; i++)
        task_opts[i] = NULL;
    for (int i = 0; i < train_task_count() && i < TRAIN_MAX_TASKS; i++) {
        const train_task *t = train_task_at(i);
        if (t->options_size && !(task_opts[i] = calloc(1, t->options_size)))
            return errmsg_set(err, errlen, "out of host memory");
        if (t->defaults)
            t->defaults(task_opts[i]);
    }
    return train_cli_parse(argc, argv, o, task_opts, err, errlen);
}

void train_cli_free(void **task_opts)
{
    for (int i = 0; i < TRAIN_MAX_TASKS; i++) {
        free(task_opts[i]);
        task_opts[i] = NULL;
    }
}

void train_cli_usage(FILE *f)
{
    static char text[16384];
    fputs(train_usage(), f);
    for (int i = 0; i < train_task_count(); i++)
        if (train_task_at(i)->flags)
            fputs(flags_usage(train_task_at(i)->flags, text, sizeof text), f);
}

int train_check_files(task_data_files_fn data_files, const train_options *o, int with_data,
                      char *err, size_t errlen)
{
    train_forget_written(); /* a run starts */
    path_list data = {0};
    int rc = 0;
    if (with_data && o->data_dir)
        rc = (data_files ? data_files : dataset_files)(o->data_dir, &data, err, errlen);
    if (rc == 0)
        rc = outpaths_check(o, with_data ? &data : NULL, err, errlen);
    path_list_free(&data);
    return rc;
}
