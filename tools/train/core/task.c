/* task.c - --task and the command line of a run with its task's flags
 * (see task.h). */
#include "task.h"
#include "errmsg.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int train_cli_parse(int argc, char **argv, train_options *o, void *const *task_opts, char *err,
                    size_t errlen)
{
    flag_table tables[1 + TRAIN_MAX_TASKS];
    void *opts[1 + TRAIN_MAX_TASKS];
    int seen[1 + TRAIN_MAX_TASKS] = {0}, owner[1 + TRAIN_MAX_TASKS] = {0};
    int n = 1;
    tables[0] = train_flag_table;
    opts[0] = o;
    for (int i = 0; i < train_task_count() && i < TRAIN_MAX_TASKS; i++) {
        if (!train_task_at(i)->flags)
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

void train_cli_usage(FILE *f)
{
    static char text[16384];
    fputs(train_usage(), f);
    for (int i = 0; i < train_task_count(); i++)
        if (train_task_at(i)->flags)
            fputs(flags_usage(train_task_at(i)->flags, text, sizeof text), f);
}
