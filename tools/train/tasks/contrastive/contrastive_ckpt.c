/* contrastive_ckpt.c - checkpoints of a contrastive run, as the
 * classifier's (trainer_loop.c): the model (with ContAccum's banks, which
 * clg_contrastive_attach put into it), the run's position (position.h), the
 * common settings (runconfig.h, "train.config.*", compared on --resume with
 * --override as usual) and this task's own ("train.contrastive.*": method,
 * temperature, embedding width, bank size, direction, augmentation), which
 * a resume must match: each of them changes what the saved state means.
 * The representation cache holds nothing between updates, so a checkpoint
 * taken after an update is the whole state. */
#include "contrastive_internal.h"
#include "position.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETTINGS_PREFIX "train.contrastive."

/* The task's stored settings are its flag table's stored rows
 * (contrastive_options.c), in their order. */
static const flag_def *setting(int i)
{
    return flags_stored_at(&con_flag_table, i + 1);
}

void con_build_settings(con_trainer *t)
{
    const flag_run r = {.o = t->run.opt, .cfg = &t->run.cfg, .opts = t->c};
    t->n_set = 0;
    for (const flag_def *f; t->n_set < CON_SETTINGS && (f = setting(t->n_set)) != NULL;
         t->n_set++) {
        snprintf(t->set_keys[t->n_set], sizeof t->set_keys[t->n_set], SETTINGS_PREFIX "%s",
                 f->key);
        (f->store ? f->store : flags_store_field)(f, &r, t->set_values[t->n_set],
                                                   sizeof t->set_values[t->n_set]);
    }
    run_build_config(&t->run);
}

int con_save(con_trainer *t)
{
    const char *keys[CON_SETTINGS], *values[CON_SETTINGS];
    for (int i = 0; i < t->n_set; i++) {
        keys[i] = t->set_keys[i];
        values[i] = t->set_values[i];
    }
    return run_save(&t->run, keys, values, (size_t)t->n_set);
}

/* What a file says of this task's settings. */
typedef struct saved_settings {
    char values[CON_SETTINGS][48];
    int have[CON_SETTINGS];
} saved_settings;

static void on_meta(const char *key, const char *value, void *user)
{
    saved_settings *s = user;
    size_t pl = strlen(SETTINGS_PREFIX);
    if (strncmp(key, SETTINGS_PREFIX, pl) != 0)
        return;
    for (int i = 0; i < CON_SETTINGS && setting(i); i++) {
        if (!strcmp(key + pl, setting(i)->key) && !s->have[i]) {
            snprintf(s->values[i], sizeof s->values[i], "%s", value);
            s->have[i] = 1;
        }
    }
}

/* This task's settings must be the saved ones (none can be overridden: each
 * changes what the state means, or which rows the banks hold). */
static int compare_settings(con_trainer *t, const saved_settings *s)
{
    char bad[1024] = "";
    for (int i = 0; i < t->n_set; i++) {
        if (s->have[i] && !strcmp(s->values[i], t->set_values[i]))
            continue;
        const flag_def *f = setting(i);
        size_t used = strlen(bad);
        snprintf(bad + used, sizeof bad - used, "%s%s: saved %s, now %s", used ? "; " : "",
                 f->label ? f->label : f->name, s->have[i] ? s->values[i] : "(not recorded)", t->set_values[i]);
    }
    if (!bad[0])
        return 0;
    return con_fail(t, "--resume: %s was saved with other contrastive settings: %s; resume with "
                    "the saved values (they cannot be overridden)", t->run.opt->resume, bad);
}

/* run_resume_task's side of this task. */
typedef struct resume_ctx {
    con_trainer *t;
    saved_settings s;
} resume_ctx;

static void reset_settings(void *user)
{
    resume_ctx *c = user;
    memset(&c->s, 0, sizeof c->s);
}

static void on_resume_meta(const char *key, const char *value, void *user)
{
    on_meta(key, value, &((resume_ctx *)user)->s);
}

static int compare_resume(void *user)
{
    resume_ctx *c = user;
    return compare_settings(c->t, &c->s);
}

int con_resume(con_trainer *t)
{
    const char *path = t->run.opt->resume;
    resume_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return con_fail(t, "out of host memory");
    c->t = t;
    const run_resume_task task = {on_resume_meta, reset_settings, compare_resume, c};
    train_position p;
    int rc = run_resume_load(&t->run, &task, t->res->overridden, sizeof t->res->overridden, &p);
    free(c);
    if (rc != 0)
        return -1;
    if (p.seed != t->run.opt->seed || p.batch != t->run.opt->batch || p.n_train != t->run.order.n) {
        return con_fail(t, "--resume: %s was saved with --seed %" PRIu64 " --batch %" PRIu64
                        " and %" PRIu64 " training samples; resume with the same values", path,
                        p.seed, p.batch, p.n_train);
    }
    clg_stats ls = clg_stats_init();
    clg_status st = clg_model_stats(t->run.model, 1, &ls);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "--resume: reading the loaded counters", st);
    if (ls.cycles != p.updates || ls.micro_steps != p.micro_steps ||
        p.next_batch > t->run.batches_per_epoch) {
        return con_fail(t, "--resume: %s is inconsistent: its metadata says %" PRIu64
                        " updates, %" PRIu64 " micro-steps and batch %" PRIu64
                        ", the training state %" PRIu64 " and %" PRIu64,
                        path, p.updates, p.micro_steps, p.next_batch, ls.cycles, ls.micro_steps);
    }
    run_set_position(&t->run, &p);
    return 0;
}
