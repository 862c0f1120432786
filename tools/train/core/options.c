/* options.c - command-line parsing and validation (see options.h). */
#include "options.h"
#include "errbuf.h"
#include "dataset.h"
#include "runconfig.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BATCH 1048576u
#define MAX_WIDTH 65536u

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
    o->lr = NAN;           /* not given: the optimizer's default */
    o->weight_decay = NAN; /* not given: the optimizer's default */
    o->warmup = 50;
    o->schedule = CLG_SCHED_COSINE;
    o->grad_dtype = CLG_FP32;
    o->state_dtype = CLG_FP32;
    o->master_dtype = CLG_FP32;
    o->state_rounding = CLG_ROUND_NEAREST;
    o->state_min_size = 4096;
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
           "  --state-dtype T        optimizer states: fp32 (default), bf16, q8 (blockwise 8-bit,\n"
           "                         bitsandbytes' maps), q4 (blockwise 4-bit); tensors below\n"
           "                         4096 elements keep fp32 states\n"
           "  --state-rounding R     rounding to bf16/q8/q4 states: nearest (default),\n"
           "                         stochastic\n"
           "  --state-min-size N     q8/q4: tensors of fewer elements keep fp32 states,\n"
           "                         0..1e12 (default 4096)\n"
           "  --master-dtype T       parameters: fp32 (default), bf16 (updated with stochastic\n"
           "                         rounding; the GEMMs read an fp32 copy made after each\n"
           "                         update)\n"
           "  --loss-scale S         none (default), dynamic, or a static scale in [1, 16777216]\n"
           "  --seed S               seed of init and data order, 0..2^64-1 (default 42)\n"
           "  --lr-scale RULE        none (default), linear, sqrt; with --base-batch N\n"
           "  --base-batch N         batch the lr was tuned for, 1..1048576 (default 128)\n"
           "  --device SEL           device index, P:D, or name substring (CLGRAD_DEVICE)\n"
           "  --tuning T             CLBlast GEMM parameters: auto (default: the device's file\n"
           "                         from clgrad-tune, if any), off (CLBlast's defaults), or a\n"
           "                         tuning file\n"
           "  --vram BYTES           memory budget, e.g. 512M, 8G (suffixes K, M, G, T: 1024^n)\n"
           "  --auto-micro-batch     halve the micro-batch while activations do not fit\n"
           "  --metrics FILE.csv     one row per update (written to FILE.tmp.* and renamed at\n"
           "                         the end: the file is complete or the old one is kept)\n"
           "  --dump-weights FILE    all parameters at the end, little-endian fp32, in model\n"
           "                         order: fc1.weight [h1 x 784], fc1.bias [h1], fc2.weight,\n"
           "                         fc2.bias, ..., weights row-major [out x in]\n"
           "                         (written and renamed as --metrics)\n"
           "  --checkpoint PATH      save the training state to PATH (with --save-every N,\n"
           "                         every N updates; always at the end)\n"
           "  --save-every N         1..1e9 updates\n"
           "  --resume PATH          continue from a checkpoint; every setting that changes the\n"
           "                         training must be the saved run's (the checkpoint stores\n"
           "                         them; a difference is an error naming it)\n"
           "  --override LIST        with --resume: accept these settings' new values, e.g.\n"
           "                         lr,warmup (names as the error gives them)\n"
           "  --stop-after N         stop after N updates of this run without changing the\n"
           "                         schedule (split a run across --checkpoint/--resume)\n"
           "  --train-limit N        use only the first N training samples\n"
           "  --test-limit N         use only the first N test samples\n"
           "  --dist ddp|zero1       data-parallel over MPI, under mpirun -np R (needs a build\n"
           "                         with libclgrad-mpi): every rank holds the params (ddp:\n"
           "                         and all optimizer states; zero1: 1/R of them), --batch\n"
           "                         stays the effective batch, rank r takes the r-th\n"
           "                         contiguous 1/R of each batch (R x micro-batch must divide\n"
           "                         it); rank 0 alone prints, writes --metrics,\n"
           "                         --dump-weights and the one --checkpoint file (the whole\n"
           "                         state, gathered under zero1), which resumes in either\n"
           "                         mode on any R or on a plain process\n"
           "  --json                 print a JSON summary as the last line of stdout\n"
           "  --quiet                no progress on stderr\n"
           "  --help                 this text\n"
           "A number is the whole argument, in range, and one a float holds (--lr 1e-46 is\n"
           "refused: as a float it is 0). Output paths are checked before the run: their\n"
           "directories must exist and be writable, and no output may name another output\n"
           "or an input (--checkpoint may name the --resume file).\n";
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
int train_parse_float(const char *flag, const char *s, float lo, float hi, int open_lo,
                      float *out, char *err, size_t errlen)
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
    set_err(err, errlen, "%s: expected a number in %s%g, %g], got '%s'%s%s", flag,
            open_lo ? "(" : "[", lo, hi, s ? s : "", why ? ": " : "", why ? why : "");
    return -1;
}

static int parse_float(const char *flag, const char *s, float lo, float hi, int open_lo,
                       float *out, char *err, size_t errlen)
{
    return train_parse_float(flag, s, lo, hi, open_lo, out, err, errlen);
}

float train_options_lr(const train_options *o)
{
    if (o->given & TRAIN_GIVEN_LR)
        return o->lr;
    switch (o->optimizer) {
    case CLG_SGD: return 0.05f;
    case CLG_LION: return 1e-4f;
    default: return 1e-3f;
    }
}

float train_options_weight_decay(const train_options *o)
{
    if (o->given & TRAIN_GIVEN_WEIGHT_DECAY)
        return o->weight_decay;
    return clg_config_default(o->optimizer).weight_decay;
}

int train_options_clg_config(const train_options *o, clg_config *cfg, char *err,
                             size_t errlen)
{
    *cfg = clg_config_default(o->optimizer);
    float lr = train_options_lr(o);
    if (o->lr_scale != CLG_LR_RULE_NONE) {
        float scaled;
        clg_status st = clg_lr_scale(o->lr_scale, lr, o->base_batch, o->batch, &scaled);
        if (st != CLG_SUCCESS) {
            set_err(err, errlen, "--lr-scale: %s", clg_last_error(NULL));
            return -1;
        }
        lr = scaled;
    }
    cfg->lr = lr;
    cfg->weight_decay = train_options_weight_decay(o);
    if (o->optimizer == CLG_SGD)
        cfg->momentum = 0.9f;
    cfg->schedule.kind = o->schedule;
    cfg->schedule.min_lr = 0.0f;
    cfg->clip_norm = o->clip;
    cfg->loss_scale = o->loss_scale;
    if (o->loss_scale == CLG_LOSS_SCALE_STATIC)
        cfg->loss_scale_init = o->loss_scale_value;
    /* Loss scaling skips overflowing updates (GradScaler); --metrics wants
     * the gradient norm, which the skip check computes on the way. */
    if (o->loss_scale != CLG_LOSS_SCALE_NONE || o->metrics)
        cfg->nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    cfg->seed = o->seed;
    cfg->state_dtype = o->state_dtype;
    cfg->state_rounding = o->state_rounding;
    cfg->state_min_size = o->state_min_size;
    cfg->master_dtype = o->master_dtype;
    return 0;
}

void train_split_text(char *buf, size_t len, uint64_t n, unsigned b)
{
    if (b == 0 || n == 0) {
        snprintf(buf, len, "%" PRIu64, n);
        return;
    }
    uint64_t q = n / b, r = n % b;
    if (r == 0)
        snprintf(buf, len, "%" PRIu64 " x %u", q, b);
    else if (q == 0)
        snprintf(buf, len, "1 x %" PRIu64, r);
    else if (q == 1)
        snprintf(buf, len, "%u + %" PRIu64, b, r);
    else
        snprintf(buf, len, "%" PRIu64 " x %u + %" PRIu64, q, b, r);
}

/* Bytes with an optional binary suffix K, M, G, T (optionally followed by
 * "iB" or "B"). */
static int parse_bytes(const char *flag, const char *s, uint64_t *out, char *err, size_t errlen)
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
    /* A program that sets lr or weight_decay without its bit would get the
     * default silently; refuse that (and a bit without a usable value). */
    if (!(o->given & TRAIN_GIVEN_LR) != !!isnan(o->lr) ||
        ((o->given & TRAIN_GIVEN_LR) && !(o->lr > 0.0f && o->lr <= 10.0f))) {
        set_err(err, errlen, "--lr: %g %s TRAIN_GIVEN_LR", o->lr,
                (o->given & TRAIN_GIVEN_LR) ? "is not in (0, 10] but marked" : "set without");
        return -1;
    }
    if (!(o->given & TRAIN_GIVEN_WEIGHT_DECAY) != !!isnan(o->weight_decay) ||
        ((o->given & TRAIN_GIVEN_WEIGHT_DECAY) &&
         !(o->weight_decay >= 0.0f && o->weight_decay <= 1.0f))) {
        set_err(err, errlen, "--weight-decay: %g %s TRAIN_GIVEN_WEIGHT_DECAY", o->weight_decay,
                (o->given & TRAIN_GIVEN_WEIGHT_DECAY) ? "is not in [0, 1] but marked"
                                                      : "set without");
        return -1;
    }
    if (o->micro_batch == 0 && !(o->given & TRAIN_GIVEN_MICRO_BATCH))
        o->micro_batch = o->batch < 32 ? o->batch : 32;
    if (o->micro_batch == 0) {
        set_err(err, errlen, "--micro-batch: expected an integer in [1, %u], got 0", o->batch);
        return -1;
    }
    if (o->micro_batch > o->batch) {
        set_err(err, errlen, "--micro-batch: expected an integer in [1, %u] (the --batch), got %u",
                o->batch, o->micro_batch);
        return -1;
    }
    if (o->grad_dtype != CLG_FP32 && o->path == GRAD_PATH_B) {
        if (o->path_given) {
            set_err(err, errlen,
                    "--grad-path: B writes gradients in place into the fp32 accumulator; "
                    "--grad-dtype %s needs A or C", clg_dtype_name(o->grad_dtype));
            return -1;
        }
        o->path = GRAD_PATH_C;
    }
    if (o->state_rounding == CLG_ROUND_STOCHASTIC && o->state_dtype == CLG_FP32) {
        set_err(err, errlen, "--state-rounding stochastic: needs --state-dtype bf16, q8 or q4 "
                "(fp32 states are not rounded)");
        return -1;
    }
    if (o->save_every && !o->checkpoint) {
        set_err(err, errlen, "--save-every: needs --checkpoint PATH");
        return -1;
    }
    if (o->overrides[0] && !o->resume) {
        set_err(err, errlen, "--override: needs --resume PATH (it accepts settings that differ "
                "from the checkpoint's)");
        return -1;
    }
    /* Each rank would halve on its own memory: ranks could end up with
     * different micro-batches, and so different shares of a batch. */
    if (o->dist && o->auto_micro_batch) {
        set_err(err, errlen, "--auto-micro-batch: not with --dist (every rank must use the same "
                "--micro-batch; give one that fits)");
        return -1;
    }
    return 0;
}

/* Appends the names of list to o->overrides after checking each. */
static int parse_overrides(const char *list, train_options *o, char *err, size_t errlen)
{
    const char *p = list;
    if (!*p) {
        set_err(err, errlen, "--override: expected NAME[,NAME...], got ''");
        return -1;
    }
    while (*p) {
        size_t n = strcspn(p, ",");
        char name[64];
        if (n == 0 || n >= sizeof name) {
            set_err(err, errlen, "--override: expected NAME[,NAME...], got '%s'", list);
            return -1;
        }
        memcpy(name, p, n);
        name[n] = 0;
        if (name[0] == '-' && name[1] == '-')
            memmove(name, name + 2, n - 1); /* --lr is lr */
        const char *why = NULL;
        if (!runconfig_overridable(name, &why)) {
            if (why)
                set_err(err, errlen, "--override: %s cannot be overridden: %s", name, why);
            else
                set_err(err, errlen, "--override: unknown setting '%s' (one of: %s)", name,
                        runconfig_names());
            return -1;
        }
        size_t used = strlen(o->overrides);
        if (used + strlen(name) + 2 > sizeof o->overrides) {
            set_err(err, errlen, "--override: list too long");
            return -1;
        }
        if (used)
            strcat(o->overrides, ",");
        strcat(o->overrides, name);
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) {
                set_err(err, errlen, "--override: expected NAME[,NAME...], got '%s'", list);
                return -1;
            }
        }
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
            "--state-dtype", "--state-rounding", "--state-min-size", "--master-dtype",
            "--base-batch", "--device", "--tuning", "--vram", "--metrics", "--dump-weights",
            "--checkpoint", "--save-every", "--resume", "--stop-after", "--train-limit",
            "--test-limit", "--override", "--dist"};
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
            o->given |= TRAIN_GIVEN_MICRO_BATCH;
        } else if (!strcmp(flag, "--epochs")) {
            rc = parse_unsigned(flag, val, 1, 1000, &o->epochs, err, errlen);
        } else if (!strcmp(flag, "--steps")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->steps, err, errlen);
            o->given |= TRAIN_GIVEN_STEPS;
        } else if (!strcmp(flag, "--optimizer")) {
            static const char *const n[] = {"adamw", "adam", "sgd", "lion"};
            static const int v[] = {CLG_ADAMW, CLG_ADAM, CLG_SGD, CLG_LION};
            rc = parse_choice(flag, val, n, v, 4, &choice, err, errlen);
            o->optimizer = (clg_optimizer)choice;
        } else if (!strcmp(flag, "--lr")) {
            rc = parse_float(flag, val, 0.0f, 10.0f, 1, &o->lr, err, errlen);
            o->given |= TRAIN_GIVEN_LR;
        } else if (!strcmp(flag, "--weight-decay")) {
            rc = parse_float(flag, val, 0.0f, 1.0f, 0, &o->weight_decay, err, errlen);
            o->given |= TRAIN_GIVEN_WEIGHT_DECAY;
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
        } else if (!strcmp(flag, "--state-dtype")) {
            static const char *const n[] = {"fp32", "bf16", "q8", "q4"};
            static const int v[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
            rc = parse_choice(flag, val, n, v, 4, &choice, err, errlen);
            o->state_dtype = (clg_dtype)choice;
        } else if (!strcmp(flag, "--state-rounding")) {
            static const char *const n[] = {"nearest", "stochastic"};
            static const int v[] = {CLG_ROUND_NEAREST, CLG_ROUND_STOCHASTIC};
            rc = parse_choice(flag, val, n, v, 2, &choice, err, errlen);
            o->state_rounding = (clg_rounding)choice;
        } else if (!strcmp(flag, "--state-min-size")) {
            rc = parse_u64(flag, val, 0, 1000000000000ull, &o->state_min_size, err, errlen);
        } else if (!strcmp(flag, "--master-dtype")) {
            static const char *const n[] = {"fp32", "bf16"};
            static const int v[] = {CLG_FP32, CLG_BF16};
            rc = parse_choice(flag, val, n, v, 2, &choice, err, errlen);
            o->master_dtype = (clg_dtype)choice;
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
        } else if (!strcmp(flag, "--tuning")) {
            if (!*val) {
                set_err(err, errlen, "--tuning: expected auto, off or a file, got ''");
                return -1;
            }
            o->tuning = val;
        } else if (!strcmp(flag, "--vram")) {
            rc = parse_bytes(flag, val, &o->vram, err, errlen);
            o->given |= TRAIN_GIVEN_VRAM;
        } else if (!strcmp(flag, "--metrics")) {
            o->metrics = val;
        } else if (!strcmp(flag, "--dump-weights")) {
            o->dump_weights = val;
        } else if (!strcmp(flag, "--checkpoint")) {
            o->checkpoint = val;
        } else if (!strcmp(flag, "--save-every")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->save_every, err, errlen);
            o->given |= TRAIN_GIVEN_SAVE_EVERY;
        } else if (!strcmp(flag, "--resume")) {
            o->resume = val;
        } else if (!strcmp(flag, "--stop-after")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &o->stop_after, err, errlen);
            o->given |= TRAIN_GIVEN_STOP_AFTER;
        } else if (!strcmp(flag, "--train-limit")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &u64, err, errlen);
            o->limit_train = u64;
            o->given |= TRAIN_GIVEN_TRAIN_LIMIT;
        } else if (!strcmp(flag, "--test-limit")) {
            rc = parse_u64(flag, val, 1, 1000000000ull, &u64, err, errlen);
            o->limit_test = u64;
            o->given |= TRAIN_GIVEN_TEST_LIMIT;
        } else if (!strcmp(flag, "--override")) {
            rc = parse_overrides(val, o, err, errlen);
        } else if (!strcmp(flag, "--dist")) {
            if (!strcmp(val, "ddp")) {
                o->dist = TRAIN_DIST_DDP;
            } else if (!strcmp(val, "zero1")) {
                o->dist = TRAIN_DIST_ZERO1;
            } else {
                set_err(err, errlen, "--dist: expected ddp or zero1, got '%s'", val);
                return -1;
            }
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
