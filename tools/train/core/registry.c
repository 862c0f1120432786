/* registry.c - see registry.h. */
#include "registry.h"
#include "task.h"

#include <stdio.h>
#include <string.h>

static const train_task *const *registered;
static int n_registered;
char train_tasks_help[128];

void train_set_tasks(const train_task *const *tasks, int n)
{
    registered = tasks;
    n_registered = n;
    train_tasks_help[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t used = strlen(train_tasks_help);
        snprintf(train_tasks_help + used, sizeof train_tasks_help - used, "%s%s%s",
                 i == 0 ? "" : i + 1 < n ? ", " : " or ", tasks[i]->name,
                 i == 0 ? " (default)" : "");
    }
}

int train_task_count(void) { return n_registered; }

const train_task *train_task_at(int i) { return registered[i]; }
