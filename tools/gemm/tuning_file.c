/* tuning_file.c - format and strict parser of clgrad-tune's files (see
 * tuning_file.h). */
#include "tuning_file.h"
#include "errmsg.h"
#include "tuning_constraints.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* CLBlast parameter names: upper-case letters, digits and '_'. */
static int valid_param_name(const char *s)
{
    if (!*s || strlen(s) >= TUNING_NAME)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static int valid_gemm_kernel(const char *s)
{
    return strcmp(s, "XgemmDirect") == 0 || strcmp(s, "Xgemm") == 0;
}

int tuning_check(const tuning *t, char *err, size_t errlen)
{
    if (strlen(t->key) != 64 || strspn(t->key, "0123456789abcdef") != 64)
        return errmsg_set(err, errlen, "the device key is not 64 lower-case hex digits");
    if (t->n_kernels == 0 || t->n_kernels > TUNING_MAX_KERNELS)
        return errmsg_set(err, errlen, "%zu kernel records (expected 1..%d)", t->n_kernels,
                          TUNING_MAX_KERNELS);
    if (t->n_gemms > TUNING_MAX_GEMMS)
        return errmsg_set(err, errlen, "%zu gemm records (at most %d)", t->n_gemms,
                          TUNING_MAX_GEMMS);
    for (size_t i = 0; i < t->n_kernels; i++) {
        const tuning_kernel *k = &t->kernel[i];
        if (!tuning_known_kernel(k->name))
            return errmsg_set(err, errlen, "kernel '%.31s' is not one of CLBlast's GEMM kernels",
                              k->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->kernel[j].name, k->name) == 0)
                return errmsg_set(err, errlen, "kernel %s appears twice", k->name);
        if (k->precision != 32)
            return errmsg_set(err, errlen, "kernel %s: precision %u (expected 32)", k->name,
                              k->precision);
        if (k->n == 0 || k->n > TUNING_MAX_PARAMS)
            return errmsg_set(err, errlen, "kernel %s: %zu parameters (expected 1..%d)", k->name,
                              k->n, TUNING_MAX_PARAMS);
        for (size_t p = 0; p < k->n; p++) {
            if (!valid_param_name(k->param[p]))
                return errmsg_set(err, errlen, "kernel %s: '%.31s' is not a parameter name",
                                  k->name, k->param[p]);
            if (k->value[p] > TUNING_MAX_VALUE)
                return errmsg_set(err, errlen, "kernel %s: %s=%zu is out of range (0..%d)", k->name,
                                  k->param[p], k->value[p], TUNING_MAX_VALUE);
            for (size_t q = 0; q < p; q++)
                if (strcmp(k->param[q], k->param[p]) == 0)
                    return errmsg_set(err, errlen, "kernel %s: %s appears twice", k->name,
                                      k->param[p]);
        }
        if (tuning_check_kernel_values(k, err, errlen) != 0)
            return -1;
    }
    for (size_t i = 0; i < t->n_gemms; i++) {
        const tuning_gemm *g = &t->gemm[i];
        if (g->m == 0 || g->n == 0 || g->k == 0 || (g->ta != 'N' && g->ta != 'T') ||
            (g->tb != 'N' && g->tb != 'T') || !valid_gemm_kernel(g->kernel_default) ||
            !valid_gemm_kernel(g->kernel_tuned) || !(g->gflops_default >= 0) ||
            !(g->gflops_tuned >= 0) || g->gflops_default > 1e9 || g->gflops_tuned > 1e9 ||
            g->batch > TUNING_MAX_BATCH)
            return errmsg_set(err, errlen, "gemm record %zu is malformed", i + 1);
    }
    if (!(t->budget_s >= 0 && t->budget_s < 1e9 && t->seconds >= 0 && t->seconds < 1e9))
        return errmsg_set(err, errlen, "budget out of range");
    return 0;
}

/* ------------------------------------------------------------ format */

typedef struct outbuf {
    char *p;
    size_t len, cap;
    int bad;
} outbuf;

static void out_printf(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(outbuf *o, const char *fmt, ...)
{
    if (o->bad)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->bad = 1;
            return;
        }
        if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (size_t)n;
        char *q = realloc(o->p, cap);
        if (!q) {
            o->bad = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
}

/* An informational string on one line: control characters become '?'. */
static void out_text(outbuf *o, const char *keyword, const char *s)
{
    char clean[256];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof clean; i++)
        clean[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    clean[i] = '\0';
    out_printf(o, "%s %s\n", keyword, clean);
}

char *tuning_format(const tuning *t, size_t *len)
{
    if (tuning_check(t, NULL, 0) != 0)
        return NULL;
    outbuf o = {malloc(4096), 0, 4096, 0};
    if (!o.p)
        return NULL;
    out_printf(&o, "%s %d\n", TUNING_MAGIC, TUNING_FORMAT);
    out_printf(&o, "key %s\n", t->key);
    out_text(&o, "device", t->device);
    out_text(&o, "driver", t->driver);
    out_text(&o, "clblast", t->clblast);
    out_text(&o, "created", t->created);
    out_printf(&o, "budget %.1f %.1f\n", t->budget_s, t->seconds);
    out_text(&o, "model", t->model);
    for (size_t i = 0; i < t->n_kernels; i++) {
        const tuning_kernel *k = &t->kernel[i];
        out_printf(&o, "kernel %s %u", k->name, k->precision);
        for (size_t p = 0; p < k->n; p++)
            out_printf(&o, " %s=%zu", k->param[p], k->value[p]);
        out_printf(&o, "\n");
    }
    for (size_t i = 0; i < t->n_gemms; i++) {
        const tuning_gemm *g = &t->gemm[i];
        char calls[32];
        if (g->batch > 1)
            snprintf(calls, sizeof calls, "%ux%u", g->count, g->batch);
        else
            snprintf(calls, sizeof calls, "%u", g->count);
        out_printf(&o, "gemm %u %u %u %c%c %s %s %.2f %s %.2f\n", g->m, g->n, g->k, g->ta, g->tb,
                   calls, g->kernel_default, g->gflops_default, g->kernel_tuned,
                   g->gflops_tuned);
    }
    uLong crc = crc32(0L, (const Bytef *)o.p, (uInt)o.len);
    out_printf(&o, "crc32 %08lx\n", (unsigned long)crc);
    if (o.bad || o.len > TUNING_MAX_BYTES) {
        free(o.p);
        return NULL;
    }
    *len = o.len;
    return o.p;
}

/* ------------------------------------------------------------- parse */

/* Splits s (modified) at single spaces into at most max fields. */
static size_t split(char *s, char **field, size_t max)
{
    size_t n = 0;
    while (*s && n < max) {
        field[n++] = s;
        char *sp = strchr(s, ' ');
        if (!sp)
            break;
        *sp = '\0';
        s = sp + 1;
    }
    return n;
}

static int parse_u(const char *s, unsigned long max, unsigned long *v)
{
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1]))
        return -1;
    errno = 0;
    char *end;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || x > max)
        return -1;
    *v = x;
    return 0;
}

static int parse_d(const char *s, double *v)
{
    if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    errno = 0;
    char *end;
    double x = strtod(s, &end);
    if (errno || *end || !(x == x))
        return -1;
    *v = x;
    return 0;
}

static int copy_text(char *dst, size_t size, const char *s)
{
    if (strlen(s) >= size)
        return -1;
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int parse_kernel(char *rest, tuning_kernel *k, char *err, size_t errlen, int line)
{
    char *f[2 + TUNING_MAX_PARAMS + 1];
    size_t n = split(rest, f, sizeof f / sizeof *f);
    unsigned long prec;
    if (n < 3 || n > 2 + TUNING_MAX_PARAMS)
        return errmsg_set(err, errlen, "line %d: a kernel record has a name, a precision and 1..%d "
                          "NAME=value fields", line, TUNING_MAX_PARAMS);
    if (copy_text(k->name, sizeof k->name, f[0]) != 0 || parse_u(f[1], 1u << 16, &prec) != 0)
        return errmsg_set(err, errlen, "line %d: bad kernel name or precision", line);
    k->precision = (unsigned)prec;
    k->n = n - 2;
    for (size_t i = 0; i < k->n; i++) {
        char *eq = strchr(f[2 + i], '=');
        unsigned long v;
        if (!eq)
            return errmsg_set(err, errlen, "line %d: '%.40s' is not NAME=value", line, f[2 + i]);
        *eq = '\0';
        if (copy_text(k->param[i], sizeof k->param[i], f[2 + i]) != 0 ||
            parse_u(eq + 1, TUNING_MAX_VALUE, &v) != 0)
            return errmsg_set(err, errlen, "line %d: bad parameter %.40s=%.20s", line, f[2 + i],
                              eq + 1);
        k->value[i] = v;
    }
    return 0;
}

static int parse_gemm(char *rest, tuning_gemm *g, char *err, size_t errlen, int line)
{
    char *f[10];
    unsigned long m, n, k, count, batch = 1;
    size_t fields = split(rest, f, 10);
    char *x = fields == 9 ? strchr(f[4], 'x') : NULL;
    if (x) {
        *x = '\0'; /* count x batch */
        if (parse_u(x + 1, TUNING_MAX_BATCH, &batch) != 0 || batch < 2)
            return errmsg_set(err, errlen, "line %d: malformed gemm record", line);
    }
    if (fields != 9 || parse_u(f[0], 1ul << 30, &m) != 0 ||
        parse_u(f[1], 1ul << 30, &n) != 0 || parse_u(f[2], 1ul << 30, &k) != 0 ||
        strlen(f[3]) != 2 || parse_u(f[4], 1ul << 20, &count) != 0 ||
        copy_text(g->kernel_default, sizeof g->kernel_default, f[5]) != 0 ||
        parse_d(f[6], &g->gflops_default) != 0 ||
        copy_text(g->kernel_tuned, sizeof g->kernel_tuned, f[7]) != 0 ||
        parse_d(f[8], &g->gflops_tuned) != 0)
        return errmsg_set(err, errlen, "line %d: malformed gemm record", line);
    g->m = (unsigned)m;
    g->n = (unsigned)n;
    g->k = (unsigned)k;
    g->ta = f[3][0];
    g->tb = f[3][1];
    g->count = (unsigned)count;
    g->batch = (unsigned)batch;
    return 0;
}

/* A kernel or gemm record (there may be several) appended to t. */
static int add_kernel(char *rest, tuning *t, char *err, size_t errlen, int line)
{
    if (t->n_kernels == TUNING_MAX_KERNELS)
        return errmsg_set(err, errlen, "line %d: more than %d kernel records", line,
                          TUNING_MAX_KERNELS);
    return parse_kernel(rest, &t->kernel[t->n_kernels++], err, errlen, line);
}

static int add_gemm(char *rest, tuning *t, char *err, size_t errlen, int line)
{
    if (t->n_gemms == TUNING_MAX_GEMMS)
        return errmsg_set(err, errlen, "line %d: more than %d gemm records", line,
                          TUNING_MAX_GEMMS);
    return parse_gemm(rest, &t->gemm[t->n_gemms++], err, errlen, line);
}

/* The records every file has once, in the order a missing one is named;
 * all but budget are text copied into their field. */
typedef struct once_record {
    const char *name;
    size_t offset, size; /* of the field in tuning; size 0: budget */
} once_record;
#define TEXT_RECORD(field) {#field, offsetof(tuning, field), sizeof(((tuning *)0)->field)}
static const once_record once_records[] = {
    TEXT_RECORD(key),     TEXT_RECORD(device),  TEXT_RECORD(driver), TEXT_RECORD(clblast),
    TEXT_RECORD(created), {"budget", 0, 0},     TEXT_RECORD(model),
};
#define N_ONCE (sizeof once_records / sizeof once_records[0])

/* The value of a once-record into t; 0, or nonzero when it is malformed. */
static int parse_once(const once_record *r, char *rest, tuning *t)
{
    if (r->size)
        return copy_text((char *)t + r->offset, r->size, rest);
    char *f[3];
    return split(rest, f, 3) != 2 || parse_d(f[0], &t->budget_s) != 0 ||
           parse_d(f[1], &t->seconds) != 0;
}

int tuning_parse(const char *buf, size_t len, tuning *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (len == 0)
        return errmsg_set(err, errlen, "the file is empty");
    if (len > TUNING_MAX_BYTES)
        return errmsg_set(err, errlen, "%zu bytes (a tuning file has at most %d)", len,
                          TUNING_MAX_BYTES);
    if (memchr(buf, '\0', len))
        return errmsg_set(err, errlen, "the file contains a NUL byte");
    if (buf[len - 1] != '\n')
        return errmsg_set(err, errlen, "the file does not end with a newline (truncated?)");
    /* The CRC line is the last one. */
    size_t last = len - 1;
    while (last > 0 && buf[last - 1] != '\n')
        last--;
    unsigned long want;
    char crcline[32];
    size_t cl = len - 1 - last;
    if (cl >= sizeof crcline)
        return errmsg_set(err, errlen, "the last line is not the crc32 record (truncated?)");
    memcpy(crcline, buf + last, cl);
    crcline[cl] = '\0';
    char *end;
    if (strncmp(crcline, "crc32 ", 6) != 0 || strlen(crcline + 6) != 8 ||
        strspn(crcline + 6, "0123456789abcdef") != 8)
        return errmsg_set(err, errlen, "the last line is not the crc32 record (truncated?)");
    want = strtoul(crcline + 6, &end, 16);
    uLong got = crc32(0L, (const Bytef *)buf, (uInt)last);
    if (got != want)
        return errmsg_set(err, errlen,
                          "CRC-32 mismatch (file says %08lx, content is %08lx): the file "
                          "is damaged",
                          want, (unsigned long)got);

    char *text = malloc(last + 1);
    if (!text)
        return errmsg_set(err, errlen, "out of host memory");
    memcpy(text, buf, last);
    text[last] = '\0';
    unsigned seen = 0;
    int rc = -1, line = 0;
    for (char *s = text, *next; *s; s = next) {
        char *nl = strchr(s, '\n'); /* every line before the CRC line ends with one */
        *nl = '\0';
        next = nl + 1;
        line++;
        if (!*s) {
            errmsg_set(err, errlen, "line %d is empty", line);
            goto out;
        }
        if (line == 1) {
            char want_magic[64];
            snprintf(want_magic, sizeof want_magic, "%s %d", TUNING_MAGIC, TUNING_FORMAT);
            if (strncmp(s, TUNING_MAGIC " ", strlen(TUNING_MAGIC) + 1) != 0) {
                errmsg_set(err, errlen, "not a clgrad tuning file (first line '%.40s')", s);
                goto out;
            }
            if (strcmp(s, want_magic) != 0) {
                errmsg_set(err, errlen, "tuning format '%.20s', this program reads %d",
                           s + strlen(TUNING_MAGIC) + 1, TUNING_FORMAT);
                goto out;
            }
            continue;
        }
        char *sp = strchr(s, ' ');
        if (!sp) {
            errmsg_set(err, errlen, "line %d: '%.40s' has no value", line, s);
            goto out;
        }
        *sp = '\0';
        char *rest = sp + 1;
        size_t r = 0;
        while (r < N_ONCE && strcmp(s, once_records[r].name) != 0)
            r++;
        unsigned flag = 1u << r;
        int bad = 0;
        if (r < N_ONCE) {
            bad = parse_once(&once_records[r], rest, t);
        } else if (strcmp(s, "kernel") == 0) {
            if (add_kernel(rest, t, err, errlen, line) != 0)
                goto out;
            continue;
        } else if (strcmp(s, "gemm") == 0) {
            if (add_gemm(rest, t, err, errlen, line) != 0)
                goto out;
            continue;
        } else {
            errmsg_set(err, errlen, "line %d: unknown record '%.40s'", line, s);
            goto out;
        }
        if (seen & flag) {
            errmsg_set(err, errlen, "line %d: a second '%s' record", line, s);
            goto out;
        }
        if (bad) {
            errmsg_set(err, errlen, "line %d: bad '%s' record", line, s);
            goto out;
        }
        seen |= flag;
    }
    if (line == 0) {
        errmsg_set(err, errlen, "not a clgrad tuning file (no header)");
        goto out;
    }
    for (size_t i = 0; i < N_ONCE; i++)
        if (!(seen & (1u << i))) {
            errmsg_set(err, errlen, "no '%s' record", once_records[i].name);
            goto out;
        }
    rc = tuning_check(t, err, errlen);
out:
    free(text);
    return rc;
}

const tuning_kernel *tuning_find_kernel(const tuning *t, const char *name)
{
    for (size_t i = 0; i < t->n_kernels; i++)
        if (strcmp(t->kernel[i].name, name) == 0)
            return &t->kernel[i];
    return NULL;
}

void tuning_kernel_text(const tuning_kernel *k, char *out, size_t size)
{
    size_t used = (size_t)snprintf(out, size, "%s", k->name);
    for (size_t p = 0; p < k->n && used < size; p++)
        used += (size_t)snprintf(out + used, size - used, " %s=%zu", k->param[p], k->value[p]);
}
