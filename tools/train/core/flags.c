/* flags.c - parsing and stored values generated from flag tables (see
 * flags.h; the limits: flag_limits.c, --help: flags_usage.c). */
#include "flags.h"
#include "errmsg.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void *field(const flag_def *f, void *opts)
{
    return (char *)opts + f->offset;
}

uint64_t flags_get_u64(const flag_def *f, const void *opts)
{
    const char *p = (const char *)opts + f->offset;
    if (f->size == sizeof(uint64_t)) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    unsigned v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void set_u64(const flag_def *f, void *opts, uint64_t v)
{
    if (f->size == sizeof(uint64_t)) {
        memcpy(field(f, opts), &v, sizeof v);
    } else {
        unsigned u = (unsigned)v;
        memcpy(field(f, opts), &u, sizeof u);
    }
}

int flags_parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                    char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
        goto bad;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        goto bad;
    *out = v;
    return 0;
bad:
    errmsg_set(err, errlen, "%s: expected an integer in [%llu, %llu], got '%s'", flag,
            (unsigned long long)lo, (unsigned long long)hi, s ? s : "");
    return -1;
}

int train_parse_float(const char *flag, const char *s, float lo, float hi, int open_lo, float *out,
                      char *err, size_t errlen)
{
    char *end = NULL;
    const char *why = NULL;
    if (!s || !*s || isspace((unsigned char)*s)) {
        why = "empty or starts with a space";
        goto bad;
    }
    errno = 0;
    double v = strtod(s, &end);
    int e = errno;
    if (end == s || *end) {
        why = end == s ? "not a number" : "trailing characters";
        goto bad;
    }
    if (!isfinite(v) || (e == ERANGE && fabs(v) > 1.0)) {
        why = "not finite";
        goto bad;
    }
    float f = (float)v;
    if (!isfinite(f)) {
        why = "overflows a float";
        goto bad;
    }
    if ((e == ERANGE && fabs(v) < 1.0) || (v != 0.0 && fabsf(f) < FLT_MIN)) {
        why = "underflows a float (it would be 0 or lose its precision)";
        goto bad;
    }
    if (f == 0.0f)
        f = 0.0f; /* -0 */
    if (f > hi || f < lo || (open_lo && f == lo)) {
        why = NULL;
        goto bad;
    }
    *out = f;
    return 0;
bad:
    errmsg_set(err, errlen, "%s: expected a number in %s%g, %g], got '%s'%s%s", flag,
            open_lo ? "(" : "[", lo, hi, s ? s : "", why ? ": " : "", why ? why : "");
    return -1;
}

/* The contrastive flags' numbers: "expected an integer in [1, 4096]". */
static int parse_num(const char *flag, const char *s, double lo, double hi, int integer,
                     double *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s && !isspace((unsigned char)*s) ? strtod(s, &end) : 0;
    if (!s || !*s || isspace((unsigned char)*s) || errno || *end || !(v >= lo && v <= hi) ||
        (integer && (v != (double)(uint64_t)v || strpbrk(s, ".eExX"))) || *s == '-' || *s == '+') {
        errmsg_set(err, errlen, "%s: expected %s in [%g, %g], got '%s'", flag,
                integer ? "an integer" : "a number", lo, hi, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

int flags_choice_at(const char *choices, int i, char *buf, size_t len)
{
    const char *p = choices;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return -1;
    size_t n = strcspn(p, "|");
    snprintf(buf, len, "%.*s", (int)n, p);
    return 0;
}

static int parse_choice(const flag_def *f, const char *val, void *opts, char *err, size_t errlen)
{
    char name[64];
    for (int i = 0; flags_choice_at(f->choices, i, name, sizeof name) == 0; i++) {
        if (f->exact_case ? !strcmp(val, name) : !strcasecmp(val, name)) {
            memcpy(field(f, opts), &f->values[i], sizeof(int));
            return 0;
        }
    }
    if (f->expect)
        errmsg_set(err, errlen, "%s: expected %s, got '%s'", f->name, f->expect, val);
    else
        errmsg_set(err, errlen, "%s: expected one of %s, got '%s'", f->name, f->choices, val);
    return -1;
}

const char *flags_choice_name(const flag_def *f, int value, char *buf, size_t len)
{
    for (int i = 0; flags_choice_at(f->choices, i, buf, len) == 0; i++)
        if (f->values[i] == value)
            return buf;
    snprintf(buf, len, "?");
    return buf;
}

int flags_parse_value(const flag_def *f, const char *val, void *opts, char *err, size_t errlen)
{
    uint64_t u = 0;
    double d = 0;
    switch (f->kind) {
    case FLAG_TEXT:
        if (!*val && f->expect) {
            errmsg_set(err, errlen, "%s: expected %s, got ''", f->name, f->expect);
            return -1;
        }
        memcpy(field(f, opts), &val, sizeof val);
        return 0;
    case FLAG_UINT:
        /* 2^64 - 1 is no double: a range up to it is written as UINT64_MAX */
        if (flags_parse_u64(f->name, val, (uint64_t)f->lo,
                            f->hi >= 0x1p64 ? UINT64_MAX : (uint64_t)f->hi, &u, err, errlen))
            return -1;
        set_u64(f, opts, u);
        return 0;
    case FLAG_FLOAT:
        return train_parse_float(f->name, val, (float)f->lo, (float)f->hi, f->open_lo,
                                 (float *)field(f, opts), err, errlen);
    case FLAG_NUMBER:
    case FLAG_INTEGER:
        if (parse_num(f->name, val, f->lo, f->hi, f->kind == FLAG_INTEGER, &d, err, errlen))
            return -1;
        if (f->kind == FLAG_INTEGER)
            set_u64(f, opts, (uint64_t)d);
        else
            *(float *)field(f, opts) = (float)d;
        return 0;
    case FLAG_CHOICE: return parse_choice(f, val, opts, err, errlen);
    case FLAG_CUSTOM: return f->parse(f->name, val, opts, err, errlen);
    default: return -1;
    }
}

const flag_def *flags_find(const flag_table *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].name && !strcmp(t->rows[i].name, name))
            return &t->rows[i];
    return NULL;
}

const flag_def *flags_find_key(const flag_table *t, const char *key)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].stored && !strcmp(t->rows[i].key, key))
            return &t->rows[i];
    return NULL;
}

const flag_def *flags_stored_at(const flag_table *t, int k)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].stored == k)
            return &t->rows[i];
    return NULL;
}

/* The output rows given so far, with their values: a second one is
 * refused (output_again), naming both. */
enum { MAX_OUTPUTS = 16 };
typedef struct given_outputs {
    const flag_def *row[MAX_OUTPUTS];
    const char *value[MAX_OUTPUTS];
    int n;
} given_outputs;

static int output_again(given_outputs *g, const flag_def *f, const char *val, char *err,
                        size_t errlen)
{
    if (!f->output)
        return 0;
    for (int i = 0; i < g->n; i++) {
        if (g->row[i] == f) {
            errmsg_set(err, errlen, "%s: given twice ('%s', then '%s'); a run writes one file "
                       "per output flag: give it once", f->name, g->value[i], val);
            return -1;
        }
    }
    if (g->n < MAX_OUTPUTS) {
        g->row[g->n] = f;
        g->value[g->n++] = val;
    }
    return 0;
}

int flags_parse(int argc, char **argv, const flag_table *tables, int n_tables, void *const *opts,
                int *seen, char *err, size_t errlen)
{
    given_outputs outputs = {.n = 0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char flag[64];
        const char *val = NULL;
        if (strncmp(arg, "--", 2) != 0) {
            errmsg_set(err, errlen, "unexpected argument '%s' (flags start with --; see --help)", arg);
            return -1;
        }
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        snprintf(flag, sizeof flag, "%.*s", (int)(len < sizeof flag ? len : sizeof flag - 1), arg);
        if (eq)
            val = eq + 1;
        const flag_def *f = NULL;
        int t = 0;
        for (; t < n_tables && !f; t++)
            f = flags_find(&tables[t], flag);
        if (!f) {
            errmsg_set(err, errlen, "unknown flag '%s' (see --help)", flag);
            return -1;
        }
        t--;
        if (f->kind == FLAG_HELP)
            return 1;
        if (f->kind == FLAG_SWITCH) {
            if (val) {
                errmsg_set(err, errlen, "%s: takes no value, got '%s'", flag, val);
                return -1;
            }
            *(int *)field(f, opts[t]) = 1;
        } else {
            if (!val) {
                if (i + 1 >= argc) {
                    errmsg_set(err, errlen, "%s: missing value", flag);
                    return -1;
                }
                val = argv[++i];
            }
            if (output_again(&outputs, f, val, err, errlen) != 0 ||
                flags_parse_value(f, val, opts[t], err, errlen) != 0)
                return -1;
        }
        if (f->given)
            *(unsigned *)((char *)opts[t] + tables[t].given_offset) |= f->given;
        if (seen)
            seen[t] = 1;
    }
    return 0;
}

void flags_format_float(char *buf, size_t len, float x)
{
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, len, "%.*g", p, (double)x);
        if (strtof(buf, NULL) == x)
            return;
    }
    snprintf(buf, len, "%.9g", (double)x);
}

void flags_store_field(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    const void *opts = r->opts;
    int v;
    if (f->choices) {
        memcpy(&v, (const char *)opts + f->offset, sizeof v);
        flags_choice_name(f, v, buf, len);
        return;
    }
    switch (f->kind) {
    case FLAG_UINT:
    case FLAG_INTEGER: snprintf(buf, len, "%" PRIu64, flags_get_u64(f, opts)); return;
    case FLAG_FLOAT:
    case FLAG_NUMBER:
        flags_format_float(buf, len, *(const float *)((const char *)opts + f->offset));
        return;
    case FLAG_SWITCH:
        memcpy(&v, (const char *)opts + f->offset, sizeof v);
        snprintf(buf, len, "%s", v ? "yes" : "no");
        return;
    default: snprintf(buf, len, "?"); return;
    }
}
