/* registry.h - the tasks clgrad-train knows, handed to the core by main
 * (train_set_tasks) so that the core never names a task: the tasks build
 * on the core, and only main and tasks/tasks.c sit above both. */
#ifndef CLGRAD_TRAIN_REGISTRY_H
#define CLGRAD_TRAIN_REGISTRY_H

struct train_task;

/* Before any other call of the core: tasks[0 .. n) (tasks[0] is the
 * default); also fills train_tasks_help from their names. */
void train_set_tasks(const struct train_task *const *tasks, int n);
int train_task_count(void);
const struct train_task *train_task_at(int i);
/* --task's help, naming the tasks: "classify (default), contrastive or gpt". */
extern char train_tasks_help[128];

#endif /* CLGRAD_TRAIN_REGISTRY_H */
