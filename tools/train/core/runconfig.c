/* runconfig.c - a run's training settings in its checkpoints, compared on
 * resume (see runconfig.h). */
#include "runconfig.h"
#include "errbuf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct setting {
    const char *name;
    const char *label;  /* how a message names it */
    const char *locked; /* why it cannot be overridden, or NULL */
    const char *before; /* the value of a checkpoint saved before the setting
                           was recorded (NULL: none, a difference) */
} setting;

static const setting settings[] = {
    {"hidden", "--hidden", NULL, NULL},
    {"batch", "--batch", "the position in the data order counts batches of this size", NULL},
    {"micro-batch", "--micro-batch (as trained, after --auto-micro-batch)", NULL, NULL},
    {"epochs", "--epochs", NULL, NULL},
    {"steps", "--steps", NULL, NULL},
    {"optimizer", "--optimizer", "the checkpoint holds this optimizer's state", NULL},
    {"lr", "--lr", NULL, NULL},
    {"lr-scale", "--lr-scale", NULL, NULL},
    {"base-batch", "--base-batch", NULL, NULL},
    {"weight-decay", "--weight-decay", NULL, NULL},
    {"beta1", "beta1 (the optimizer's)", NULL, NULL},
    {"beta2", "beta2 (the optimizer's)", NULL, NULL},
    {"eps", "eps (the optimizer's)", NULL, NULL},
    {"momentum", "momentum (the optimizer's)", NULL, NULL},
    {"warmup", "--warmup", NULL, NULL},
    {"schedule", "--schedule", NULL, NULL},
    {"clip", "--clip", NULL, NULL},
    {"grad-dtype", "--grad-dtype", NULL, NULL},
    {"grad-path", "--grad-path", NULL, NULL},
    {"state-dtype", "--state-dtype", "the checkpoint holds the optimizer states in this format",
     "fp32"},
    {"state-rounding", "--state-rounding", NULL, "nearest"},
    {"state-min-size", "--state-min-size",
     "the checkpoint holds fp32 states for the tensors below it", "4096"},
    {"master-dtype", "--master-dtype", "the checkpoint holds the parameters in this format",
     "fp32"},
    {"loss-scale", "--loss-scale", NULL, NULL},
    {"nonfinite", "nonfinite (skip inf/NaN updates: on with --loss-scale or --metrics)", NULL, NULL},
    {"seed", "--seed", "the data order depends on it", NULL},
    {"train-limit", "--train-limit (training samples used)",
     "the position in the data order depends on the number of samples", NULL},
    {"data", "data (CRC-32 of the training samples, --data)", NULL, NULL},
};
enum { N_SETTINGS = sizeof settings / sizeof *settings };

static const setting *find_setting(const char *name)
{
    for (int i = 0; i < N_SETTINGS; i++)
        if (!strcmp(settings[i].name, name))
            return &settings[i];
    return NULL;
}

int runconfig_overridable(const char *name, const char **why)
{
    const setting *s = find_setting(name);
    *why = s ? s->locked : NULL;
    return s && !s->locked;
}

const char *runconfig_names(void)
{
    static char list[512];
    if (!list[0]) {
        for (int i = 0; i < N_SETTINGS; i++) {
            if (settings[i].locked)
                continue;
            if (list[0])
                strncat(list, ",", sizeof list - strlen(list) - 1);
            strncat(list, settings[i].name, sizeof list - strlen(list) - 1);
        }
    }
    return list;
}

void runconfig_format_float(char *buf, size_t len, float x)
{
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, len, "%.*g", p, (double)x);
        if (strtof(buf, NULL) == x)
            return;
    }
    snprintf(buf, len, "%.9g", (double)x);
}

uint32_t runconfig_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uLong c = crc;
    while (n > 0) {
        uInt take = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, take);
        p += take;
        n -= take;
    }
    return (uint32_t)c;
}

static void add(run_config *c, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(run_config *c, const char *name, const char *fmt, ...)
{
    if (c->n >= RUNCONFIG_MAX)
        return;
    runconfig_item *it = &c->items[c->n++];
    snprintf(it->name, sizeof it->name, "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->value, sizeof it->value, fmt, ap);
    va_end(ap);
}

static void add_float(run_config *c, const char *name, float x)
{
    char b[32];
    runconfig_format_float(b, sizeof b, x);
    add(c, name, "%s", b);
}

static const char *rule_name(clg_lr_rule r)
{
    return r == CLG_LR_RULE_LINEAR ? "linear" : r == CLG_LR_RULE_SQRT ? "sqrt" : "none";
}

void runconfig_build(run_config *c, const train_options *o, const clg_config *cfg,
                     unsigned micro_batch, uint64_t n_train, uint32_t data_crc)
{
    memset(c, 0, sizeof *c);
    char hidden[RUNCONFIG_VALUE_MAX] = "";
    for (int i = 0; i < o->n_hidden; i++) {
        char w[16];
        snprintf(w, sizeof w, "%s%u", i ? "," : "", o->hidden[i]);
        strncat(hidden, w, sizeof hidden - strlen(hidden) - 1);
    }
    add(c, "hidden", "%s", hidden);
    add(c, "batch", "%u", o->batch);
    add(c, "micro-batch", "%u", micro_batch);
    if (o->steps)
        add(c, "epochs", "unused (--steps)"); /* the run ends after --steps updates */
    else
        add(c, "epochs", "%u", o->epochs);
    if (o->steps)
        add(c, "steps", "%" PRIu64, o->steps);
    else
        add(c, "steps", "all epochs");
    add(c, "optimizer", "%s", train_optimizer_name(o->optimizer));
    add_float(c, "lr", train_options_lr(o));
    add(c, "lr-scale", "%s", rule_name(o->lr_scale));
    if (o->lr_scale != CLG_LR_RULE_NONE)
        add(c, "base-batch", "%" PRIu64, o->base_batch);
    else
        add(c, "base-batch", "unused");
    add_float(c, "weight-decay", cfg->weight_decay);
    add_float(c, "beta1", cfg->beta1);
    add_float(c, "beta2", cfg->beta2);
    add_float(c, "eps", cfg->eps);
    add_float(c, "momentum", cfg->momentum);
    add(c, "warmup", "%" PRIu64, o->warmup);
    add(c, "schedule", "%s", train_schedule_name(o->schedule));
    add_float(c, "clip", o->clip);
    add(c, "grad-dtype", "%s", clg_dtype_name(o->grad_dtype));
    add(c, "grad-path", "%c", "ABC"[o->path]);
    add(c, "state-dtype", "%s", clg_dtype_name(o->state_dtype));
    add(c, "state-rounding", "%s",
        o->state_rounding == CLG_ROUND_STOCHASTIC ? "stochastic" : "nearest");
    add(c, "state-min-size", "%" PRIu64, o->state_min_size);
    add(c, "master-dtype", "%s", clg_dtype_name(o->master_dtype));
    if (o->loss_scale == CLG_LOSS_SCALE_STATIC)
        add_float(c, "loss-scale", o->loss_scale_value);
    else
        add(c, "loss-scale", "%s", o->loss_scale == CLG_LOSS_SCALE_DYNAMIC ? "dynamic" : "none");
    add(c, "nonfinite", "%s",
        cfg->nonfinite == CLG_NONFINITE_SKIP_UPDATE   ? "skip-update"
        : cfg->nonfinite == CLG_NONFINITE_SKIP_MICRO  ? "skip-micro"
        : cfg->nonfinite == CLG_NONFINITE_ERROR       ? "error"
                                                      : "ignore");
    add(c, "seed", "%" PRIu64, o->seed);
    add(c, "train-limit", "%" PRIu64, n_train);
    add(c, "data", "crc32 %08" PRIx32 " of %" PRIu64 " samples", data_crc, n_train);
}

void runconfig_meta(run_config *c)
{
    for (int i = 0; i < c->n; i++) {
        snprintf(c->keys[i], sizeof c->keys[i], RUNCONFIG_PREFIX "%s", c->items[i].name);
        c->key_ptr[i] = c->keys[i];
        c->value_ptr[i] = c->items[i].value;
    }
}

void runconfig_add_saved(run_config *c, const char *key, const char *value)
{
    size_t pl = strlen(RUNCONFIG_PREFIX);
    if (strncmp(key, RUNCONFIG_PREFIX, pl) != 0 || !find_setting(key + pl))
        return;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->items[i].name, key + pl))
            return; /* first one wins (the library refuses duplicate keys) */
    add(c, key + pl, "%s", value);
}

int runconfig_read_file(const char *path, run_config *saved, char *err, size_t errlen)
{
    memset(saved, 0, sizeof *saved);
    FILE *f = fopen(path, "rb");
    if (!f) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char len8[8];
    char *text = NULL;
    int rc = -1;
    if (fread(len8, 1, 8, f) != 8) {
        set_err(err, errlen, "%s: shorter than a checkpoint header", path);
        goto out;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | len8[i];
    if (hlen < 2 || hlen > (64u << 20)) {
        set_err(err, errlen, "%s: implausible header length %" PRIu64, path, hlen);
        goto out;
    }
    text = malloc((size_t)hlen + 1);
    if (!text) {
        set_err(err, errlen, "%s: out of host memory", path);
        goto out;
    }
    if (fread(text, 1, (size_t)hlen, f) != hlen) {
        set_err(err, errlen, "%s: truncated header", path);
        goto out;
    }
    text[hlen] = 0;
    cJSON *root = cJSON_Parse(text);
    const cJSON *meta = root ? cJSON_GetObjectItemCaseSensitive(root, "__metadata__") : NULL;
    if (!cJSON_IsObject(meta)) {
        set_err(err, errlen, "%s: the header has no metadata", path);
        cJSON_Delete(root);
        goto out;
    }
    for (const cJSON *it = meta->child; it; it = it->next)
        if (it->string && cJSON_IsString(it))
            runconfig_add_saved(saved, it->string, it->valuestring);
    cJSON_Delete(root);
    rc = 0;
out:
    free(text);
    fclose(f);
    return rc;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

int runconfig_compare(const run_config *saved, const run_config *now, const char *overrides,
                      const char *path, char *overridden, size_t olen, char *err, size_t errlen)
{
    char bad[2048] = "", names[512] = "", locked_text[512] = "";
    int n_bad = 0, n_locked = 0;
    if (overridden && olen)
        overridden[0] = 0;
    for (int i = 0; i < now->n; i++) {
        const runconfig_item *cur = &now->items[i];
        const char *was = NULL;
        for (int j = 0; j < saved->n && !was; j++)
            if (!strcmp(saved->items[j].name, cur->name))
                was = saved->items[j].value;
        const setting *s = find_setting(cur->name);
        if (!was && s && s->before)
            was = s->before; /* saved before it was recorded */
        if (was && !strcmp(was, cur->value))
            continue;
        const char *label = s ? s->label : cur->name;
        int locked = s && s->locked;
        if (!locked && in_list(overrides, cur->name)) {
            if (overridden)
                append(overridden, olen, "%s%s: %s -> %s", overridden[0] ? "; " : "", label,
                       was ? was : "(not recorded)", cur->value);
            continue;
        }
        append(bad, sizeof bad, "%s%s: saved %s, now %s", n_bad ? "; " : "", label,
               was ? was : "(not recorded)", cur->value);
        if (locked) {
            append(locked_text, sizeof locked_text, "%s%s cannot change: %s",
                   n_locked ? "; " : "", label, s->locked);
            n_locked++;
        } else
            append(names, sizeof names, "%s%s", names[0] ? "," : "", cur->name);
        n_bad++;
    }
    if (!n_bad)
        return 0;
    if (n_locked == n_bad)
        set_err(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values (%s)", path, bad, locked_text);
    else if (n_locked)
        set_err(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values (%s; the others can be accepted with --override %s)", path, bad,
                locked_text, names);
    else
        set_err(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values, or accept the new ones with --override %s", path, bad, names);
    return -1;
}
