/* flag_limits.c - the combinations of flags a table refuses before the
 * run (flag_limit, see flags.h). */
#include "flags.h"
#include "errmsg.h"

#include <stdio.h>
#include <string.h>

/* Whether the field of row f in opts differs from the one in dflt: the
 * flag was given a value other than its default. */
static int given_other(const flag_def *f, const void *opts, const void *dflt)
{
    return f->size &&
           memcmp((const char *)opts + f->offset, (const char *)dflt + f->offset, f->size) != 0;
}

/* Whether name is one of "a|b|c". */
static int in_list(const char *name, const char *list)
{
    char item[64];
    for (int i = 0; flags_choice_at(list, i, item, sizeof item) == 0; i++)
        if (!strcmp(item, name))
            return 1;
    return 0;
}

/* The name of the value in a choice row's field (flags_choice_name), or a
 * text row's text. */
static const char *value_name(const flag_def *f, const void *opts, char *buf, size_t len)
{
    if (f->kind == FLAG_TEXT) {
        const char *text;
        memcpy(&text, (const char *)opts + f->offset, sizeof text);
        snprintf(buf, len, "%s", text ? text : "");
        return buf;
    }
    int v;
    memcpy(&v, (const char *)opts + f->offset, sizeof v);
    return flags_choice_name(f, v, buf, len);
}

void flags_limit_condition(const flag_table *t, const flag_limit *l, char *cond, size_t len)
{
    if (!l->when) {
        snprintf(cond, len, "%s", t->scope ? t->scope : "?");
        return;
    }
    size_t n = strcspn(l->when, "=");
    snprintf(cond, len, "%.*s%s%s", (int)n, l->when, l->when[n] ? " " : "",
             l->when[n] ? l->when + n + 1 : "");
}

/* Whether the condition of limit l holds for opts. */
static int condition_holds(const flag_limit *l, const flag_table *core, const void *opts,
                           const void *dflt)
{
    if (!l->when)
        return 1;
    size_t n = strcspn(l->when, "=");
    char name[64], value[64];
    snprintf(name, sizeof name, "%.*s", (int)n, l->when);
    const flag_def *f = flags_find(core, name);
    if (!f)
        return 0;
    return l->when[n] ? in_list(value_name(f, opts, value, sizeof value), l->when + n + 1)
                      : given_other(f, opts, dflt);
}

int flags_check_limits(const flag_table *t, const flag_table *core, const void *o,
                       const void *dflt, char *err, size_t errlen)
{
    for (int i = 0; i < t->n_limits; i++) {
        const flag_limit *l = &t->limits[i];
        char cond[128], value[64];
        const flag_def *f = flags_find(core, l->flag);
        if (!f || !condition_holds(l, core, o, dflt))
            continue;
        flags_limit_condition(t, l, cond, sizeof cond);
        if (!l->takes && given_other(f, o, dflt))
            return errmsg_set(err, errlen, "%s: not with %s (%s)", l->flag, cond, l->why);
        /* a text row left at its default is not a choice the user made */
        if (l->takes && (f->kind != FLAG_TEXT || given_other(f, o, dflt)) &&
            !in_list(value_name(f, o, value, sizeof value), l->takes))
            return errmsg_set(err, errlen, "%s %s: not with %s (%s)", l->flag, value, cond,
                              l->why);
    }
    return 0;
}
