/* contrastive_options.c - the contrastive task's flags (see
 * contrastive_options.h). */
#include "contrastive_options.h"
#include "errbuf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void con_options_default(con_options *c)
{
    memset(c, 0, sizeof *c);
    c->method = CON_GRADCACHE;
    c->temperature = 0.1f;
    c->embed_dim = 128;
    c->knn = 20;
    c->shift = 2;
    c->noise = 0.1f;
}

const char *con_method_name(con_method m)
{
    return m == CON_NAIVE ? "naive" : m == CON_CONTACCUM ? "contaccum" : "gradcache";
}

const char *con_usage(void)
{
    return "Contrastive task (--task contrastive): an MLP encoder (--hidden, then --embed-dim)\n"
           "trained with InfoNCE on two augmented views of each image, evaluated by kNN test\n"
           "accuracy on its embeddings:\n"
           "  --task T               classify (default) or contrastive\n"
           "  --contrastive M        gradcache (default: the loss of the whole batch, exactly),\n"
           "                         naive (each micro-batch its own loss), contaccum (each\n"
           "                         micro-batch's loss with FIFO banks of past rows)\n"
           "  --temperature X        in [1e-4, 100] (default 0.1)\n"
           "  --embed-dim N          encoder output width, 1..4096 (default 128)\n"
           "  --bank-size N          contaccum: rows per bank, 1..1048576 (default the batch)\n"
           "  --one-way              queries against keys only (default: both ways)\n"
           "  --aug-shift N          views shift by up to N pixels each way, 0..8 (default 2)\n"
           "  --aug-noise X          pixel noise std in [0, 1] (default 0.1)\n"
           "  --knn K                neighbours of the kNN evaluation, 1..1000 (default 20)\n"
           "  --knn-on L             features it compares: hidden (default: the last hidden\n"
           "                         layer's, as SimCLR evaluates) or embedding (the loss's)\n"
           "  --knn-init             also evaluate before the first update\n"
           "It takes --grad-path A/B/C with fp32 gradients, no --loss-scale, --metrics or\n"
           "--auto-micro-batch. --json adds loss, knn_accuracy and the cache's bytes.\n";
}

static int parse_num(const char *flag, const char *s, double lo, double hi, int integer,
                     double *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s && !isspace((unsigned char)*s) ? strtod(s, &end) : 0;
    if (!s || !*s || isspace((unsigned char)*s) || errno || *end || !(v >= lo && v <= hi) ||
        (integer && (v != (double)(uint64_t)v || strpbrk(s, ".eExX"))) || *s == '-' ||
        *s == '+') {
        set_err(err, errlen, "%s: expected %s in [%g, %g], got '%s'", flag,
                integer ? "an integer" : "a number", lo, hi, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

int con_options_extract(int *argc, char **argv, con_options *c, char *err, size_t errlen)
{
    con_options_default(c);
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *arg = argv[i];
        char flag[32];
        const char *val = NULL;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        snprintf(flag, sizeof flag, "%.*s", (int)(len < sizeof flag ? len : sizeof flag - 1),
                 arg);
        static const char *const valued[] = {"--task", "--contrastive", "--temperature",
                                             "--embed-dim", "--bank-size", "--knn",
                                             "--aug-shift", "--aug-noise", "--knn-on"};
        static const char *const booleans[] = {"--one-way", "--knn-init"};
        int is_valued = 0, is_bool = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            is_valued |= !strcmp(flag, valued[k]);
        for (size_t k = 0; k < sizeof booleans / sizeof *booleans; k++)
            is_bool |= !strcmp(flag, booleans[k]);
        if (!is_valued && !is_bool) {
            argv[out++] = argv[i];
            /* a common flag's value is no flag of ours: keep it with it */
            if (!eq && i + 1 < *argc && strncmp(argv[i + 1], "--", 2) != 0)
                argv[out++] = argv[++i];
            continue;
        }
        if (is_bool) {
            if (eq) {
                set_err(err, errlen, "%s: takes no value, got '%s'", flag, eq + 1);
                return -1;
            }
            if (!strcmp(flag, "--one-way"))
                c->one_way = 1;
            else
                c->knn_init = 1;
            continue;
        }
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < *argc) {
            val = argv[++i];
        } else {
            set_err(err, errlen, "%s: missing value", flag);
            return -1;
        }
        double v;
        if (!strcmp(flag, "--task")) {
            if (!strcasecmp(val, "contrastive")) {
                c->enabled = 1;
            } else if (!strcasecmp(val, "classify")) {
                c->enabled = 0;
            } else {
                set_err(err, errlen, "--task: expected classify or contrastive, got '%s'", val);
                return -1;
            }
        } else if (!strcmp(flag, "--contrastive")) {
            if (!strcasecmp(val, "naive")) {
                c->method = CON_NAIVE;
            } else if (!strcasecmp(val, "gradcache")) {
                c->method = CON_GRADCACHE;
            } else if (!strcasecmp(val, "contaccum")) {
                c->method = CON_CONTACCUM;
            } else {
                set_err(err, errlen,
                        "--contrastive: expected naive, gradcache or contaccum, got '%s'", val);
                return -1;
            }
        } else if (!strcmp(flag, "--temperature")) {
            if (parse_num(flag, val, 1e-4, 100, 0, &v, err, errlen) != 0)
                return -1;
            c->temperature = (float)v;
        } else if (!strcmp(flag, "--embed-dim")) {
            if (parse_num(flag, val, 1, 4096, 1, &v, err, errlen) != 0)
                return -1;
            c->embed_dim = (unsigned)v;
        } else if (!strcmp(flag, "--bank-size")) {
            if (parse_num(flag, val, 1, 1048576, 1, &v, err, errlen) != 0)
                return -1;
            c->bank_size = (uint64_t)v;
        } else if (!strcmp(flag, "--knn")) {
            if (parse_num(flag, val, 1, 1000, 1, &v, err, errlen) != 0)
                return -1;
            c->knn = (unsigned)v;
        } else if (!strcmp(flag, "--aug-shift")) {
            if (parse_num(flag, val, 0, 8, 1, &v, err, errlen) != 0)
                return -1;
            c->shift = (unsigned)v;
        } else if (!strcmp(flag, "--knn-on")) {
            if (!strcasecmp(val, "hidden")) {
                c->knn_embedding = 0;
            } else if (!strcasecmp(val, "embedding")) {
                c->knn_embedding = 1;
            } else {
                set_err(err, errlen, "--knn-on: expected hidden or embedding, got '%s'", val);
                return -1;
            }
        } else if (!strcmp(flag, "--aug-noise")) {
            if (parse_num(flag, val, 0, 1, 0, &v, err, errlen) != 0)
                return -1;
            c->noise = (float)v;
        }
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int con_options_check(con_options *c, const train_options *o, char *err, size_t errlen)
{
    if (!c->enabled) {
        /* contrastive flags without the task would be silently ignored */
        con_options d;
        con_options_default(&d);
        d.enabled = c->enabled;
        if (memcmp(&d, c, sizeof d) != 0) {
            set_err(err, errlen, "the contrastive flags (--contrastive, --temperature, ...) need "
                    "--task contrastive");
            return -1;
        }
        return 0;
    }
    if (o->grad_dtype != CLG_FP32) {
        set_err(err, errlen, "--grad-dtype %s: the contrastive task writes fp32 gradients",
                clg_dtype_name(o->grad_dtype));
        return -1;
    }
    if (o->loss_scale != CLG_LOSS_SCALE_NONE || o->metrics || o->auto_micro_batch) {
        set_err(err, errlen, "%s: not available with --task contrastive",
                o->loss_scale != CLG_LOSS_SCALE_NONE ? "--loss-scale"
                : o->metrics                         ? "--metrics"
                                                     : "--auto-micro-batch");
        return -1;
    }
    if (c->method != CON_CONTACCUM && c->bank_size) {
        set_err(err, errlen, "--bank-size: only --contrastive contaccum has banks");
        return -1;
    }
    if (c->method == CON_CONTACCUM && !c->bank_size)
        c->bank_size = o->batch;
    return 0;
}
