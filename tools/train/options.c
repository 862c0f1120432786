/* options.c - command-line parsing and validation (see options.h). */
#include "options.h"
#include "dataset.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BATCH 1048576u
#define MAX_WIDTH 65536u

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void train_options_default(train_options *o)
{
    memset(o, 0, sizeof *o);
    o->data_dir = DATASET_DEFAULT_DIR;
    o->hidden[0] = 512;
    o->hidden[1] = 256;
    o->n_hidden = 2;
    o->batch = 128;
    o->micro_batch = 0;
    o->epochs = 3;
    o->optimizer = CLG_ADAMW;
    o->lr = -1.0f;
    o->weight_decay = -1.0f;
    o->warmup = 50;
    o->schedule = CLG_SCHED_COSINE;
    o->grad_dtype = CLG_FP32;
    o->loss_scale = CLG_LOSS_SCALE_NONE;
    o->seed = 42;
    o->lr_scale = CLG_LR_RULE_NONE;
    o->base_batch = 128;
    o->path = GRAD_PATH_B;
}

const char *train_usage(void)
{
    return "usage: clgrad-train [options]\n"
           "Trains an MLP on Fashion-MNIST with CLBlast and clgrad's gradient accumulation.\n"
           "  --data DIR             IDX files (default " DATASET_DEFAULT_DIR ")\n"
           "  --hidden LIST          hidden widths, e.g. 512,256 (default), each 1..65536\n"
           "  --batch B              effective batch, 1..1048576 (default 128)\n"
           "  --micro-batch b        micro-batch, 1..B (default min(32, B)); k = ceil(B/b)\n"
           "  --epochs E             1..1000 (default 3)\n"
           "  --steps N              stop after N updates, 1..1e9\n"
           "  --optimizer NAME       adamw (default), adam, sgd, lion\n"
           "  --lr X                 learning rate in (0, 10] (default: adamw/adam 1e-3, sgd 0.05,\n"
           "                         lion 1e-4)\n"
           "  --weight-decay X       in [0, 1] (default: adamw 1e-2, lion 1e-2, others 0);\n"
           "                         biases never decay\n"
           "  --warmup N             warmup updates, 0..1e9 (default 50)\n"
           "  --schedule NAME        constant, linear, cosine (default)\n"
           "  --clip X               clip by global norm, 0 (off, default) .. 1e6\n"
           "  --grad-dtype T         fp32 (default), fp16, bf16 (fp16/bf16 use grad path C)\n"
           "  --grad-path P          A, B (default, in place), C\n"
           "  --loss-scale S         none (default), dynamic, or a static scale in [1, 16777216]\n"
           "  --seed S               seed of init and data order, 0..2^64-1 (default 42)\n"
           "  --lr-scale RULE        none (default), linear, sqrt; with --base-batch N\n"
           "  --base-batch N         batch the lr was tuned for, 1..1048576 (default 128)\n"
           "  --device SEL           device index, P:D, or name substring (CLGRAD_DEVICE)\n"
           "  --vram BYTES           memory budget, e.g. 512M, 8G (suffixes K, M, G, T: 1024^n)\n"
           "  --auto-micro-batch     halve the micro-batch while activations do not fit\n"
           "  --metrics FILE.csv     one row per update\n"
           "  --dump-weights FILE    all parameters at the end, little-endian fp32, in model\n"
           "                         order: fc1.weight [h1 x 784], fc1.bias [h1], fc2.weight,\n"
           "                         fc2.bias, ..., weights row-major [out x in]\n"
           "  --checkpoint PATH      save the training state to PATH (with --save-every N,\n"
           "                         every N updates; always at the end)\n"
           "  --save-every N         1..1e9 updates\n"
           "  --resume PATH          continue from a checkpoint (same flags as the saved run)\n"
           "  --stop-after N         stop after N updates of this run without changing the\n"
           "                         schedule (split a run across --checkpoint/--resume)\n"
           "  --train-limit N        use only the first N training samples\n"
           "  --test-limit N         use only the first N test samples\n"
           "  --json                 print a JSON summary as the last line of stdout\n"
           "  --quiet                no progress on stderr\n"
           "  --help                 this text\n";
}

const char *train_optimizer_name(clg_optimizer o)
{
    switch (o) {
    case CLG_SGD: return "sgd";
    case CLG_ADAM: return "adam";
    case CLG_ADAMW: return "adamw";
    case CLG_LION: return "lion";
    }
    return "?";
}

const char *train_schedule_name(clg_schedule_kind s)
{
    switch (s) {
    case CLG_SCHED_CONSTANT: return "constant";
    case CLG_SCHED_LINEAR: return "linear";
    case CLG_SCHED_COSINE: return "cosine";
    }
    return "?";
}

const char *train_dtype_name(clg_dtype d)
{
    switch (d) {
    case CLG_FP32: return "fp32";
    case CLG_FP16: return "fp16";
    case CLG_BF16: return "bf16";
    default: return "none";
    }
}

static int parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
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
    set_err(err, errlen, "%s: expected an integer in [%llu, %llu], got '%s'", flag,
            (unsigned long long)lo, (unsigned long long)hi, s ? s : "");
    return -1;
}

static int parse_unsigned(const char *flag, const char *s, unsigned lo, unsigned hi,
                          unsigned *out, char *err, size_t errlen)
{
    uint64_t v;
    if (parse_u64(flag, s, lo, hi, &v, err, errlen) != 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

/* A finite float in [lo, hi] (lo excluded when open_lo). */
static int parse_float(const char *flag, const char *s, float lo, float hi, int open_lo,
                       float *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || isspace((unsigned char)*s))
        goto bad;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v > hi || v < lo || (open_lo && v == lo))
        goto bad;
    *out = (float)v;
    return 0;
bad:
    set_err(err, errlen, "%s: expected a number in %s%g, %g], got '%s'", flag, open_lo ? "(" : "[",
            lo, hi, s ? s : "");
    return -1;
}

/* Bytes with an optional binary suffix K, M, G, T (optionally followed by
 * "iB" or "B"). */
static int parse_bytes(const char *flag, const char *s, uint64_t *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || !isdigit((unsigned char)*s))
        goto bad;
    double v = strtod(s, &end);
    if (errno || v <= 0)
        goto bad;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1024.0; end++; break;
    case 'M': mult = 1024.0 * 1024; end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
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
    set_err(err, errlen, "%s: expected a byte count of at least 1M, e.g. 512M or 8G, got '%s'", flag,
            s ? s : "");
    return -1;
}

static int parse_hidden(const char *s, train_options *o, char *err, size_t errlen)
{
    int n = 0;
    const char *p = s;
    if (!s || !*s)
        goto bad;
    while (*p) {
        if (n == TRAIN_MAX_HIDDEN) {
            set_err(err, errlen, "--hidden: at most %d layers, got '%s'", TRAIN_MAX_HIDDEN, s);
            return -1;
        }
        if (!isdigit((unsigned char)*p))
            goto bad;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || v < 1 || v > MAX_WIDTH || (*end && *end != ','))
            goto bad;
        o->hidden[n++] = (unsigned)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            goto bad;
    }
    o->n_hidden = n;
    return 0;
bad:
    set_err(err, errlen, "--hidden: expected 1 to %d comma-separated widths in [1, %u], got '%s'",
            TRAIN_MAX_HIDDEN, MAX_WIDTH, s ? s : "");
    return -1;
}

static int parse_choice(const char *flag, const char *s, const char *const *names,
                        const int *values, int n, int *out, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (s && strcasecmp(s, names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n)
            strncat(list, "|", sizeof list - strlen(list) - 1);
    }
    set_err(err, errlen, "%s: expected one of %s, got '%s'", flag, list, s ? s : "");
    return -1;
}

int train_options_check(train_options *o, char *err, size_t errlen)
{
    if (o->micro_batch == 0)
        o->micro_batch = o->batch < 32 ? o->batch : 32;
    if (o->micro_batch > o->batch) {
        set_err(err, errlen, "--micro-batch: expected an integer in [1, %u] (the --batch), got %u",
                o->batch, o->micro_batch);
        return -1;
    }
    if (o->grad_dtype != CLG_FP32 && o->path == GRAD_PATH_B) {
        if (o->path_given) {
            set_err(err, errlen,
                    "--grad-path: B writes gradients in place into the fp32 accumulator; "
                    "--grad-dtype %s needs A or C", train_dtype_name(o->grad_dtype));
            return -1;
        }
        o->path = GRAD_PATH_C;
    }
    if (o->save_every && !o->checkpoint) {
        set_err(err, errlen, "--save-every: needs --checkpoint PATH");
        return -1;
    }
    return 0;
}

int train_options_parse(int argc, char **argv, train_options *o, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char flag[64];
        const char *val = NULL;
        if (strncmp(arg, "--", 2) != 0) {
            set_err(err, errlen, "unexpected argument '%s' (flags start with --; see --help)", arg);
            return -1;
        }
        const char *eq = strchr(arg, '=');
        if (eq) {
            size_t len = (size_t)(eq - arg);
            if (len >= sizeof flag)
                len = sizeof flag - 1;
            memcpy(flag, arg, len);
            flag[len] = 0;
            val = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", arg);
        }

        /* Flags without a value. */
        int *boolean = NULL;
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h"))
            return 1;
        if (!strcmp(flag, "--auto-micro-batch"))
            boolean = &o->auto_micro_batch;
        else if (!strcmp(flag, "--json"))
            boolean = &o->json;
        else if (!strcmp(flag, "--quiet"))
            boolean = &o->quiet;
        if (boolean) {
            if (val) {
                set_err(err, errlen, "%s: takes no value, got '%s'", flag, val);
                return -1;
            }
            *boolean = 1;
            continue;
        }

        static const char *const valued[] = {
            "--data", "--hidden", "--batch", "--micro-batch", "--epochs", "--steps",
            "--optimizer", "--lr", "--weight-decay", "--warmup", "--schedule", "--clip",
            "--grad-dtype", "--grad-path", "--loss-scale", "--seed", "--lr-scale",
            "--base-batch", "--device", "--vram", "--metrics", "--dump-weights",
            "--checkpoint", "--save-every", "--resume", "--stop-after", "--train-limit",
            "--test-limit"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof *valued; k++)
            known |= !strcmp(flag, valued[k]);
        if (!known) {
            set_err(err, errlen, "unknown flag '%s' (see --help)", flag);
            return -1;
        }
        if (!val) {
            if (i + 1 >= argc) {
                set_err(err, errlen, "%s: missing value", flag);
                return -1;
            }
            val = argv[++i];
        }

        int rc = 0, choice = 0;
        uint64_t u64 = 0;
        if (!strcmp(flag, "--data")) {
            if (!*val) {
                set_err(err, errlen, "--data: expected a directory, got ''");
                return -1;
            }
            o->data_dir = val;
        } else if (!strcmp(flag, "--hidden")) {
            rc = parse_hidden(val, o, err, errlen);
        } else if (!strcmp(flag, "--batch")) {
            rc = parse_unsigned(flag, val, 1, MAX_BATCH, &o->batch, err, errlen);
        } else if (!strcmp(flag, "--micro-batch")) {
            rc = parse_unsigned(flag, val, 1, MAX_BATCH, &o->micro_batch, err, errlen);
        } else if (!strcmp(flag, "--epochs")) {
            rc = parse_unsigned(flag, val, 1, 1000, &o->epochs, err, errlen);
        } else if (!strcmp(flag, "--steps")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->steps, err, errlen);
        } else if (!strcmp(flag, "--optimizer")) {
            static const char *const n[] = {"adamw", "adam", "sgd", "lion"};
            static const int v[] = {CLG_ADAMW, CLG_ADAM, CLG_SGD, CLG_LION};
            rc = parse_choice(flag, val, n, v, 4, &choice, err, errlen);
            o->optimizer = (clg_optimizer)choice;
        } else if (!strcmp(flag, "--lr")) {
            rc = parse_float(flag, val, 0.0f, 10.0f, 1, &o->lr, err, errlen);
        } else if (!strcmp(flag, "--weight-decay")) {
            rc = parse_float(flag, val, 0.0f, 1.0f, 0, &o->weight_decay, err, errlen);
        } else if (!strcmp(flag, "--warmup")) {
            rc = parse_u64(flag, val, 0, 1000000000ull, &o->warmup, err, errlen);
        } else if (!strcmp(flag, "--schedule")) {
            static const char *const n[] = {"constant", "linear", "cosine"};
            static const int v[] = {CLG_SCHED_CONSTANT, CLG_SCHED_LINEAR, CLG_SCHED_COSINE};
            rc = parse_choice(flag, val, n, v, 3, &choice, err, errlen);
            o->schedule = (clg_schedule_kind)choice;
        } else if (!strcmp(flag, "--clip")) {
            rc = parse_float(flag, val, 0.0f, 1e6f, 0, &o->clip, err, errlen);
        } else if (!strcmp(flag, "--grad-dtype")) {
            static const char *const n[] = {"fp32", "fp16", "bf16"};
            static const int v[] = {CLG_FP32, CLG_FP16, CLG_BF16};
            rc = parse_choice(flag, val, n, v, 3, &choice, err, errlen);
            o->grad_dtype = (clg_dtype)choice;
        } else if (!strcmp(flag, "--grad-path")) {
            static const char *const n[] = {"A", "B", "C"};
            static const int v[] = {GRAD_PATH_A, GRAD_PATH_B, GRAD_PATH_C};
            rc = parse_choice(flag, val, n, v, 3, &choice, err, errlen);
            o->path = (grad_path)choice;
            o->path_given = 1;
        } else if (!strcmp(flag, "--loss-scale")) {
            if (!strcasecmp(val, "none")) {
                o->loss_scale = CLG_LOSS_SCALE_NONE;
            } else if (!strcasecmp(val, "dynamic")) {
                o->loss_scale = CLG_LOSS_SCALE_DYNAMIC;
            } else {
                o->loss_scale = CLG_LOSS_SCALE_STATIC;
                if (parse_float(flag, val, 1.0f, 16777216.0f, 0, &o->loss_scale_value, err,
                                errlen) != 0) {
                    set_err(err, errlen,
                            "--loss-scale: expected none, dynamic, or a number in [1, 16777216], "
                            "got '%s'", val);
                    rc = -1;
                }
            }
        } else if (!strcmp(flag, "--seed")) {
            rc = parse_u64(flag, val, 0, UINT64_MAX, &o->seed, err, errlen);
        } else if (!strcmp(flag, "--lr-scale")) {
            static const char *const n[] = {"none", "linear", "sqrt"};
            static const int v[] = {CLG_LR_RULE_NONE, CLG_LR_RULE_LINEAR, CLG_LR_RULE_SQRT};
            rc = parse_choice(flag, val, n, v, 3, &choice, err, errlen);
            o->lr_scale = (clg_lr_rule)choice;
        } else if (!strcmp(flag, "--base-batch")) {
            rc = parse_u64(flag, val, 1, MAX_BATCH, &o->base_batch, err, errlen);
        } else if (!strcmp(flag, "--device")) {
            o->device = val;
        } else if (!strcmp(flag, "--vram")) {
            rc = parse_bytes(flag, val, &o->vram, err, errlen);
        } else if (!strcmp(flag, "--metrics")) {
            o->metrics = val;
        } else if (!strcmp(flag, "--dump-weights")) {
            o->dump_weights = val;
        } else if (!strcmp(flag, "--checkpoint")) {
            o->checkpoint = val;
        } else if (!strcmp(flag, "--save-every")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->save_every, err, errlen);
        } else if (!strcmp(flag, "--resume")) {
            o->resume = val;
        } else if (!strcmp(flag, "--stop-after")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->stop_after, err, errlen);
        } else if (!strcmp(flag, "--train-limit")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &u64, err, errlen);
            o->limit_train = u64;
        } else if (!strcmp(flag, "--test-limit")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &u64, err, errlen);
            o->limit_test = u64;
        }
        if (rc != 0)
            return -1;
        if ((!strcmp(flag, "--metrics") || !strcmp(flag, "--dump-weights") ||
             !strcmp(flag, "--checkpoint") || !strcmp(flag, "--resume")) && !*val) {
            set_err(err, errlen, "%s: expected a file name, got ''", flag);
            return -1;
        }
    }
    return train_options_check(o, err, errlen);
}
