/* flags_usage.c - --help from flag tables: each row's head and help, then
 * the combinations the table refuses (see flags.h). */
#include "flags.h"

#include <stdio.h>
#include <string.h>

#define USAGE_COLUMN 25 /* where the help of a flag starts */

static void append(char *buf, size_t len, const char *text)
{
    size_t used = strlen(buf);
    if (used + 1 < len)
        snprintf(buf + used, len - used, "%s", text);
}

char *flags_usage(const flag_table *t, char *buf, size_t len)
{
    buf[0] = 0;
    append(buf, len, t->preface ? t->preface : "");
    for (int i = 0; i < t->n; i++) {
        const flag_def *f = &t->rows[i];
        if (!f->name)
            continue;
        char head[64];
        snprintf(head, sizeof head, "  %s%s%s", f->name, f->metavar ? " " : "",
                 f->metavar ? f->metavar : "");
        char line[128];
        /* a head that reaches the column: the help starts on the next line */
        if (strlen(head) >= USAGE_COLUMN)
            snprintf(line, sizeof line, "%s\n%*s", head, USAGE_COLUMN, "");
        else
            snprintf(line, sizeof line, "%-*s", USAGE_COLUMN, head);
        append(buf, len, line);
        /* the help, its continuation lines indented to the column */
        for (const char *p = f->help; *p;) {
            size_t n = strcspn(p, "\n");
            snprintf(line, sizeof line, "%.*s\n", (int)n, p);
            append(buf, len, line);
            p += n;
            if (*p == '\n') {
                p++;
                snprintf(line, sizeof line, "%*s", USAGE_COLUMN, "");
                append(buf, len, line);
            }
        }
    }
    /* the combinations refused, from the limits */
    if (t->n_limits)
        append(buf, len, "Refused before the run:\n");
    for (int i = 0; i < t->n_limits; i++) {
        const flag_limit *l = &t->limits[i];
        char cond[128], line[512];
        flags_limit_condition(t, l, cond, sizeof cond);
        if (l->takes)
            snprintf(line, sizeof line, "  with %s: %s other than %s\n      (%s)\n", cond,
                     l->flag, l->takes, l->why);
        else
            snprintf(line, sizeof line, "  with %s: %s\n      (%s)\n", cond, l->flag, l->why);
        append(buf, len, line);
    }
    append(buf, len, t->footer ? t->footer : "");
    return buf;
}
