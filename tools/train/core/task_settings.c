/* task_settings.c - a task's stored settings and its resume (see
 * task_settings.h). */
#include "task_settings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const flag_def *setting(const task_settings *s, int i)
{
    return flags_stored_at(s->table, i + 1);
}

void task_settings_build(task_settings *s, const flag_table *t, const char *task, const flag_run *r)
{
    s->table = t;
    s->task = task;
    s->n = 0;
    for (const flag_def *f; s->n < TASK_SETTINGS_MAX && (f = setting(s, s->n)) != NULL; s->n++) {
        snprintf(s->keys[s->n], sizeof s->keys[s->n], "train.%s.%s", task, f->key);
        (f->store ? f->store : flags_store_field)(f, r, s->values[s->n], sizeof s->values[s->n]);
    }
}

int task_settings_save(run_state *r, const task_settings *s)
{
    const char *keys[TASK_SETTINGS_MAX], *values[TASK_SETTINGS_MAX];
    if (!s)
        return run_save(r, NULL, NULL, 0);
    for (int i = 0; i < s->n; i++) {
        keys[i] = s->keys[i];
        values[i] = s->values[i];
    }
    return run_save(r, keys, values, (size_t)s->n);
}

/* What a file says of the task's settings (run_resume_task's user). */
typedef struct saved_settings {
    run_state *r;
    const task_settings *s;
    char values[TASK_SETTINGS_MAX][64];
    int have[TASK_SETTINGS_MAX];
} saved_settings;

static void on_meta(const char *key, const char *value, void *user)
{
    saved_settings *v = user;
    for (int i = 0; i < v->s->n; i++) {
        if (!strcmp(key, v->s->keys[i]) && !v->have[i]) {
            snprintf(v->values[i], sizeof v->values[i], "%s", value);
            v->have[i] = 1;
        }
    }
}

static void reset(void *user)
{
    saved_settings *v = user;
    memset(v->values, 0, sizeof v->values);
    memset(v->have, 0, sizeof v->have);
}

static int compare(void *user)
{
    saved_settings *v = user;
    char bad[1024] = "";
    for (int i = 0; i < v->s->n; i++) {
        if (v->have[i] && !strcmp(v->values[i], v->s->values[i]))
            continue;
        const flag_def *f = setting(v->s, i);
        size_t used = strlen(bad);
        snprintf(bad + used, sizeof bad - used, "%s%s: saved %s, now %s", used ? "; " : "",
                 f->label ? f->label : f->name, v->have[i] ? v->values[i] : "(not recorded)",
                 v->s->values[i]);
    }
    if (!bad[0])
        return 0;
    return run_fail(v->r,
                    "--resume: %s was saved with other %s settings: %s; resume with the "
                    "saved values (they cannot be overridden)",
                    v->r->opt->resume, v->s->task, bad);
}

int task_settings_resume(run_state *r, const task_settings *s, char *overridden, size_t olen)
{
    const char *path = r->opt->resume;
    saved_settings *v = calloc(1, sizeof *v);
    if (!v)
        return run_fail(r, "out of host memory");
    v->r = r;
    v->s = s;
    const run_resume_task task = {on_meta, reset, compare, v};
    train_position p;
    int rc = run_resume_load(r, &task, overridden, olen, &p);
    free(v);
    if (rc != 0)
        return -1;
    if (p.seed != r->opt->seed || p.batch != r->opt->batch || p.n_train != r->order.n)
        return run_fail(r,
                        "--resume: %s was saved with --seed %" PRIu64 " --batch %" PRIu64
                        " and %" PRIu64 " training samples; resume with the same values",
                        path, p.seed, p.batch, p.n_train);
    clg_stats ls = clg_stats_init();
    clg_status st = clg_model_stats(r->model, 1, &ls);
    if (st != CLG_SUCCESS)
        return run_fail_clg(r, "--resume: reading the loaded counters", st);
    if (ls.cycles != p.updates || ls.micro_steps != p.micro_steps ||
        p.next_batch > r->batches_per_epoch)
        return run_fail(r,
                        "--resume: %s is inconsistent: its metadata says %" PRIu64
                        " updates, %" PRIu64 " micro-steps and batch %" PRIu64
                        ", the training state %" PRIu64 " and %" PRIu64,
                        path, p.updates, p.micro_steps, p.next_batch, ls.cycles, ls.micro_steps);
    run_set_position(r, &p);
    return 0;
}
