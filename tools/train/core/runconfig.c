/* runconfig.c - a run's training settings in its checkpoints, compared on
 * resume (see runconfig.h). */
#include "runconfig.h"
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The settings are the rows of the core's flag table with a `stored`
 * position (options_table.c): their label, lock and value before they were
 * recorded come from there. */
static const flag_def *find_setting(const char *name)
{
    return flags_find_key(&train_flag_table, name);
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

void runconfig_build(run_config *c, const train_options *o, const clg_config *cfg,
                     unsigned micro_batch, uint64_t n_train, uint32_t data_crc)
{
    memset(c, 0, sizeof *c);
    const flag_run r = {o, cfg, micro_batch, n_train, data_crc, o};
    const flag_table *t = &train_flag_table;
    const flag_def *f;
    for (int k = 1; (f = flags_stored_at(t, k)) != NULL; k++) {
        char v[RUNCONFIG_VALUE_MAX];
        (f->store ? f->store : flags_store_field)(f, &r, v, sizeof v);
        add(c, f->key, "%s", v);
    }
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

int runconfig_read_meta(const char *path, clg_meta_fn fn, void *user, char *err, size_t errlen)
{
    /* the library's own checks of the header, its CRC first: a damaged
     * header is reported as damage, never as settings that differ */
    if (clg_checkpoint_read_meta(path, fn, user) != CLG_SUCCESS) {
        errmsg_set(err, errlen, "%s", clg_last_error(NULL));
        return -1;
    }
    return 0;
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
        const flag_def *s = find_setting(cur->name);
        if (!was && s && s->before)
            was = s->before; /* saved before it was recorded */
        if (was && !strcmp(was, cur->value))
            continue;
        const char *label = s ? (s->label ? s->label : s->name) : cur->name;
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
        errmsg_set(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values (%s)", path, bad, locked_text);
    else if (n_locked)
        errmsg_set(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values (%s; the others can be accepted with --override %s)", path, bad,
                locked_text, names);
    else
        errmsg_set(err, errlen, "--resume: %s was saved with other settings: %s; resume with the "
                "saved values, or accept the new ones with --override %s", path, bad, names);
    return -1;
}
