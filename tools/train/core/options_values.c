/* options_values.c - the core flags whose value is more than a number or
 * a name (--hidden, --vram, --loss-scale, --grad-path, --override), and the
 * stored settings that are more than the field as given (options_table.c
 * names them in its rows). */
#include "options_values.h"
#include "errmsg.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bytes with an optional binary suffix K, M, G, T (optionally followed by
 * "iB" or "B"). */
int opt_parse_bytes(const char *flag, const char *s, void *opts, char *err, size_t errlen)
{
    return opt_parse_byte_count(flag, s, &((train_options *)opts)->vram, err, errlen);
}

int opt_parse_byte_count(const char *flag, const char *s, uint64_t *out, char *err,
                         size_t errlen)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || !isdigit((unsigned char)*s) || strpbrk(s, "xX"))
        goto bad; /* no sign, space, hex or inf/nan */
    double v = strtod(s, &end);
    if (errno || !isfinite(v) || v <= 0)
        goto bad;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default: break;
    }
    if (mult > 1 && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
        end += strlen(end);
    if (mult == 1 && strcasecmp(end, "B") == 0)
        end++;
    if (*end)
        goto bad;
    double bytes = v * mult;
    if (bytes < 1024 * 1024 || bytes > 1.8e19)
        goto bad;
    *out = (uint64_t)bytes;
    return 0;
bad:
    errmsg_set(err, errlen, "%s: expected a byte count of at least 1M, e.g. 512M or 8G, got '%s'",
            flag, s ? s : "");
    return -1;
}

int opt_parse_hidden(const char *flag, const char *s, void *opts, char *err, size_t errlen)
{
    (void)flag;
    train_options *o = opts;
    int n = 0;
    const char *p = s;
    if (!s || !*s)
        goto bad;
    while (*p) {
        if (n == TRAIN_MAX_HIDDEN) {
            errmsg_set(err, errlen, "--hidden: at most %d layers, got '%s'", TRAIN_MAX_HIDDEN, s);
            return -1;
        }
        if (!isdigit((unsigned char)*p))
            goto bad;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || v < 1 || v > TRAIN_MAX_WIDTH || (*end && *end != ','))
            goto bad;
        o->hidden[n++] = (unsigned)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            goto bad;
    }
    o->n_hidden = n;
    return 0;
bad:
    errmsg_set(err, errlen, "--hidden: expected 1 to %d comma-separated widths in [1, %u], got '%s'",
            TRAIN_MAX_HIDDEN, TRAIN_MAX_WIDTH, s ? s : "");
    return -1;
}

int opt_parse_loss_scale(const char *flag, const char *val, void *opts, char *err, size_t errlen)
{
    train_options *o = opts;
    if (!strcasecmp(val, "none")) {
        o->loss_scale = CLG_LOSS_SCALE_NONE;
    } else if (!strcasecmp(val, "dynamic")) {
        o->loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    } else {
        o->loss_scale = CLG_LOSS_SCALE_STATIC;
        if (train_parse_float(flag, val, 1.0f, 16777216.0f, 0, &o->loss_scale_value, err, errlen) !=
            0) {
            errmsg_set(err, errlen,
                    "--loss-scale: expected none, dynamic, or a number in [1, 16777216], "
                    "got '%s'",
                    val);
            return -1;
        }
    }
    return 0;
}

/* Stored values that are not the field as given. */
void opt_store_hidden(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    buf[0] = 0;
    for (int i = 0; i < r->o->n_hidden; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%u", i ? "," : "", r->o->hidden[i]);
    }
}

void opt_store_micro_batch(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    snprintf(buf, len, "%u", r->micro_batch);
}

void opt_store_epochs(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    if (r->o->steps)
        snprintf(buf, len, "unused (--steps)"); /* the run ends after --steps updates */
    else
        flags_store_field(f, r, buf, len);
}

void opt_store_steps(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    if (r->o->steps)
        flags_store_field(f, r, buf, len);
    else
        snprintf(buf, len, "all epochs");
}

void opt_store_lr(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    flags_format_float(buf, len, train_options_lr(r->o)); /* before --lr-scale */
}

void opt_store_base_batch(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    if (r->o->lr_scale != CLG_LR_RULE_NONE)
        flags_store_field(f, r, buf, len);
    else
        snprintf(buf, len, "unused");
}

/* The optimizer's settings the run uses (clg_config), by the row's key. */
void opt_store_config(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    const clg_config *c = r->cfg;
    float x = !strcmp(f->key, "weight-decay") ? c->weight_decay
              : !strcmp(f->key, "beta1")      ? c->beta1
              : !strcmp(f->key, "beta2")      ? c->beta2
              : !strcmp(f->key, "eps")        ? c->eps
                                              : c->momentum;
    flags_format_float(buf, len, x);
}

void opt_store_loss_scale(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    if (r->o->loss_scale == CLG_LOSS_SCALE_STATIC)
        flags_format_float(buf, len, r->o->loss_scale_value);
    else
        snprintf(buf, len, "%s", r->o->loss_scale == CLG_LOSS_SCALE_DYNAMIC ? "dynamic" : "none");
}

void opt_store_nonfinite(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    clg_nonfinite_policy p = r->cfg->nonfinite;
    snprintf(buf, len, "%s",
             p == CLG_NONFINITE_SKIP_UPDATE  ? "skip-update"
             : p == CLG_NONFINITE_SKIP_MICRO ? "skip-micro"
             : p == CLG_NONFINITE_ERROR      ? "error"
                                             : "ignore");
}

void opt_store_train_limit(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    snprintf(buf, len, "%" PRIu64, r->n_train);
}

void opt_store_data(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    snprintf(buf, len, "crc32 %08" PRIx32 " of %" PRIu64 " samples", r->data_crc, r->n_train);
}

int opt_parse_grad_path(const char *flag, const char *val, void *opts, char *err, size_t errlen)
{
    train_options *o = opts;
    static const char names[] = "ABC";
    for (int i = 0; i < 3; i++) {
        if (val[0] && !val[1] && toupper((unsigned char)val[0]) == names[i]) {
            o->path = (grad_path)i;
            o->path_given = 1;
            return 0;
        }
    }
    errmsg_set(err, errlen, "%s: expected one of A|B|C, got '%s'", flag, val);
    return -1;
}
