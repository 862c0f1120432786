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

#include <cjson/cJSON.h>
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
    run_config common;
    char values[CON_SETTINGS][48];
    int have[CON_SETTINGS];
} saved_settings;

static void on_meta(const char *key, const char *value, void *user)
{
    saved_settings *s = user;
    runconfig_add_saved(&s->common, key, value);
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

/* The file's header without loading it (its train.contrastive.* keys). */
static int read_header(const char *path, saved_settings *s)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char len8[8];
    uint64_t hlen = 0;
    int rc = -1;
    char *text = NULL;
    if (fread(len8, 1, 8, f) == 8) {
        for (int i = 7; i >= 0; i--)
            hlen = hlen << 8 | len8[i];
        if (hlen >= 2 && hlen <= (64u << 20) && (text = malloc((size_t)hlen + 1)) != NULL &&
            fread(text, 1, (size_t)hlen, f) == hlen) {
            text[hlen] = 0;
            cJSON *root = cJSON_Parse(text);
            const cJSON *meta = root ? cJSON_GetObjectItemCaseSensitive(root, "__metadata__") : NULL;
            for (const cJSON *it = cJSON_IsObject(meta) ? meta->child : NULL; it; it = it->next)
                if (it->string && cJSON_IsString(it))
                    on_meta(it->string, it->valuestring, s);
            rc = cJSON_IsObject(meta) ? 0 : -1;
            cJSON_Delete(root);
        }
    }
    free(text);
    fclose(f);
    return rc;
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

int con_resume(con_trainer *t)
{
    const char *path = t->run.opt->resume;
    saved_settings *s = calloc(1, sizeof *s);
    if (!s)
        return con_fail(t, "out of host memory");
    int rc = -1;
    /* the header first: a run with other settings is refused before the
     * load, which would otherwise fail on, e.g., another bank size */
    if (read_header(path, s) == 0 &&
        (compare_settings(t, s) != 0 ||
         runconfig_compare(&s->common, &t->run.config, t->run.opt->overrides, path,
                           t->res->overridden, sizeof t->res->overridden, t->run.err,
                           t->run.errlen) != 0))
        goto out;
    memset(s, 0, sizeof *s);
    train_position p;
    char why[1024];
    if (position_load(t->run.model, path, &p, on_meta, s, why, sizeof why) != 0) {
        con_fail(t, "--resume: %s", why);
        goto out;
    }
    /* what the library read is what counts */
    if (compare_settings(t, s) != 0 ||
        runconfig_compare(&s->common, &t->run.config, t->run.opt->overrides, path,
                          t->res->overridden, sizeof t->res->overridden, t->run.err,
                          t->run.errlen) != 0)
        goto out;
    if (p.seed != t->run.opt->seed || p.batch != t->run.opt->batch || p.n_train != t->run.order.n) {
        con_fail(t, "--resume: %s was saved with --seed %" PRIu64 " --batch %" PRIu64
                 " and %" PRIu64 " training samples; resume with the same values", path, p.seed,
                 p.batch, p.n_train);
        goto out;
    }
    clg_stats ls = clg_stats_init();
    clg_status st = clg_model_stats(t->run.model, 1, &ls);
    if (st != CLG_SUCCESS) {
        con_fail_clg(t, "--resume: reading the loaded counters", st);
        goto out;
    }
    if (ls.cycles != p.updates || ls.micro_steps != p.micro_steps ||
        p.next_batch > t->run.batches_per_epoch) {
        con_fail(t, "--resume: %s is inconsistent: its metadata says %" PRIu64 " updates, %" PRIu64
                 " micro-steps and batch %" PRIu64 ", the training state %" PRIu64 " and %" PRIu64,
                 path, p.updates, p.micro_steps, p.next_batch, ls.cycles, ls.micro_steps);
        goto out;
    }
    t->run.epoch = p.epoch;
    t->run.next_batch = p.next_batch;
    t->run.updates = p.updates;
    t->run.micro_steps = p.micro_steps;
    t->run.samples = p.samples;
    rc = 0;
out:
    free(s);
    return rc;
}
