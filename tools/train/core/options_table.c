/* options_table.c - the core's flag table: every flag every task takes,
 * its help, its range, where it goes in train_options and how the stored
 * run configuration records it (flags.h). The order of the rows is the
 * order of --help; `stored` orders the settings in checkpoints. */
#include "options.h"
#include "options_values.h"
#include "dataset.h"
#include "errmsg.h"
#include "task.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BATCH 1048576u
#define AT(f) offsetof(train_options, f), sizeof(((train_options *)0)->f)

/* --task: the task's index among the registered ones (registry.h). */
static int parse_task(const char *flag, const char *val, void *opts, char *err, size_t errlen)
{
    for (int i = 0; i < train_task_count(); i++) {
        if (!strcasecmp(val, train_task_at(i)->name)) {
            ((train_options *)opts)->task = i;
            return 0;
        }
    }
    char names[256] = "";
    for (int i = 0; i < train_task_count(); i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s",
                 i == 0 ? "" : i + 1 < train_task_count() ? ", " : " or ", train_task_at(i)->name);
    }
    errmsg_set(err, errlen, "%s: expected %s, got '%s'", flag, names, val);
    return -1;
}


static int parse_overrides(const char *flag, const char *list, void *opts, char *err,
                           size_t errlen);

static const int optimizers[] = {CLG_ADAMW, CLG_ADAM, CLG_SGD, CLG_LION};
static const int schedules[] = {CLG_SCHED_CONSTANT, CLG_SCHED_LINEAR, CLG_SCHED_COSINE};
static const int grad_dtypes[] = {CLG_FP32, CLG_FP16, CLG_BF16};
static const int state_dtypes[] = {CLG_FP32, CLG_BF16, CLG_Q8, CLG_Q4};
static const int roundings[] = {CLG_ROUND_NEAREST, CLG_ROUND_STOCHASTIC};
static const int master_dtypes[] = {CLG_FP32, CLG_BF16};
static const int paths[] = {GRAD_PATH_A, GRAD_PATH_B, GRAD_PATH_C};
static const int lr_rules[] = {CLG_LR_RULE_NONE, CLG_LR_RULE_LINEAR, CLG_LR_RULE_SQRT};
static const int dist_modes[] = {TRAIN_DIST_DDP, TRAIN_DIST_ZERO1};

static const flag_def rows[] = {
    {.name = "--task", .metavar = "T", .help = train_tasks_help, .kind = FLAG_CUSTOM,
     .parse = parse_task, .example = "contrastive"},
    {.name = "--data", .metavar = "DIR",
     .help = "IDX files (default " DATASET_DEFAULT_DIR ");\n--task gpt: a text file or a "
             "directory of them, or token shards",
     .kind = FLAG_TEXT, AT(data_dir), .expect = "a directory", .example = "elsewhere"},
    {.name = "--hidden", .metavar = "LIST",
     .help = "hidden widths, e.g. 512,256 (default), each 1..65536", .kind = FLAG_CUSTOM,
     /* the field, so that a task's limit sees it given (the widths differ) */
     AT(hidden), .parse = opt_parse_hidden, .example = "64,32",
     .stored = 1, .key = "hidden", .store = opt_store_hidden},
    {.name = "--batch", .metavar = "B", .help = "effective batch, 1..1048576 (default 128)",
     .kind = FLAG_UINT, AT(batch), .lo = 1, .hi = MAX_BATCH, .example = "256",
     .stored = 2, .key = "batch",
     .locked = "the position in the data order counts batches of this size"},
    {.name = "--micro-batch", .metavar = "b",
     .help = "micro-batch, 1..B (default min(32, B)); k = ceil(B/b)", .kind = FLAG_UINT,
     AT(micro_batch), .lo = 1, .hi = MAX_BATCH, .given = TRAIN_GIVEN_MICRO_BATCH,
     .example = "16", .stored = 3, .key = "micro-batch",
     .label = "--micro-batch (as trained, after --auto-micro-batch)",
     .store = opt_store_micro_batch},
    {.name = "--epochs", .metavar = "E", .help = "1..1000 (default 3)", .kind = FLAG_UINT,
     AT(epochs), .lo = 1, .hi = 1000, .given = TRAIN_GIVEN_EPOCHS, .example = "5", .stored = 4,
     .key = "epochs", .store = opt_store_epochs},
    {.name = "--steps", .metavar = "N", .help = "stop after N updates, 1..1e9",
     .kind = FLAG_UINT, AT(steps), .lo = 1, .hi = 1e9, .given = TRAIN_GIVEN_STEPS,
     .example = "7", .stored = 5, .key = "steps", .store = opt_store_steps},
    {.name = "--optimizer", .metavar = "NAME", .help = "adamw (default), adam, sgd, lion",
     .kind = FLAG_CHOICE, AT(optimizer), .choices = "adamw|adam|sgd|lion",
     .values = optimizers, .example = "sgd", .stored = 6, .key = "optimizer",
     .locked = "the checkpoint holds this optimizer's state"},
    {.name = "--lr", .metavar = "X",
     .help = "learning rate in (0, 10] (default: adamw/adam 1e-3, sgd 0.05,\nlion 1e-4)",
     .kind = FLAG_FLOAT, AT(lr), .lo = 0, .hi = 10, .open_lo = 1, .given = TRAIN_GIVEN_LR,
     .example = "0.003", .stored = 7, .key = "lr", .store = opt_store_lr},
    {.name = "--weight-decay", .metavar = "X",
     .help = "in [0, 1] (default: adamw 1e-2, lion 1e-2, others 0);\nbiases never decay",
     .kind = FLAG_FLOAT, AT(weight_decay), .lo = 0, .hi = 1,
     .given = TRAIN_GIVEN_WEIGHT_DECAY, .example = "0.5", .stored = 10,
     .key = "weight-decay", .store = opt_store_config},
    {.name = "--warmup", .metavar = "N", .help = "warmup updates, 0..1e9 (default 50)",
     .kind = FLAG_UINT, AT(warmup), .lo = 0, .hi = 1e9, .example = "9", .stored = 15,
     .key = "warmup"},
    {.name = "--schedule", .metavar = "NAME", .help = "constant, linear, cosine (default)",
     .kind = FLAG_CHOICE, AT(schedule), .choices = "constant|linear|cosine",
     .values = schedules, .example = "linear", .stored = 16, .key = "schedule"},
    {.name = "--clip", .metavar = "X", .help = "clip by global norm, 0 (off, default) .. 1e6",
     .kind = FLAG_FLOAT, AT(clip), .lo = 0, .hi = 1e6, .example = "2.5", .stored = 17,
     .key = "clip"},
    {.name = "--grad-dtype", .metavar = "T",
     .help = "fp32 (default), fp16, bf16 (fp16/bf16 use grad path C)", .kind = FLAG_CHOICE,
     AT(grad_dtype), .choices = "fp32|fp16|bf16", .values = grad_dtypes, .example = "bf16",
     .stored = 18, .key = "grad-dtype"},
    {.name = "--grad-path", .metavar = "P", .help = "A, B (default, in place), C",
     .kind = FLAG_CUSTOM, AT(path), .choices = "A|B|C", .values = paths,
     .parse = opt_parse_grad_path, .example = "A", .stored = 19, .key = "grad-path",},
    {.name = "--state-dtype", .metavar = "T",
     .help = "optimizer states: fp32 (default), bf16, q8 (blockwise 8-bit,\nbitsandbytes' "
             "maps), q4 (blockwise 4-bit); tensors below\n4096 elements keep fp32 states",
     .kind = FLAG_CHOICE, AT(state_dtype), .choices = "fp32|bf16|q8|q4", .values = state_dtypes,
     .example = "q8", .stored = 20, .key = "state-dtype",
     .locked = "the checkpoint holds the optimizer states in this format", .before = "fp32"},
    {.name = "--state-rounding", .metavar = "R",
     .help = "rounding to bf16/q8/q4 states: nearest (default),\nstochastic",
     .kind = FLAG_CHOICE, AT(state_rounding), .choices = "nearest|stochastic",
     .values = roundings, .example = "stochastic", .needs = "--state-dtype=q8",
     .stored = 21, .key = "state-rounding",
     .before = "nearest"},
    {.name = "--state-min-size", .metavar = "N",
     .help = "q8/q4: tensors of fewer elements keep fp32 states,\n0..1e12 (default 4096)",
     .kind = FLAG_UINT, AT(state_min_size), .lo = 0, .hi = 1e12, .example = "100",
     .needs = "--state-dtype=q8",
     .stored = 22, .key = "state-min-size",
     .locked = "the checkpoint holds fp32 states for the tensors below it", .before = "4096"},
    {.name = "--master-dtype", .metavar = "T",
     .help = "parameters: fp32 (default), bf16 (updated with stochastic\nrounding; the GEMMs "
             "read an fp32 copy made after each\nupdate)",
     .kind = FLAG_CHOICE, AT(master_dtype), .choices = "fp32|bf16", .values = master_dtypes,
     .example = "bf16", .stored = 23, .key = "master-dtype",
     .locked = "the checkpoint holds the parameters in this format", .before = "fp32"},
    {.name = "--accum-dtype", .metavar = "T",
     .help = "the accumulator: fp32 (default), bf16 (stochastic rounding;\nneeds grad path A or "
             "C, which it picks: B's GEMMs write fp32)",
     .kind = FLAG_CHOICE, AT(acc_dtype), .choices = "fp32|bf16", .values = master_dtypes,
     .example = "bf16", .stored = 29, .key = "accum-dtype",
     .locked = "a checkpoint taken mid-accumulation holds the accumulator in this format",
     .before = "fp32"},
    {.name = "--loss-scale", .metavar = "S",
     .help = "none (default), dynamic, or a static scale in [1, 16777216]",
     .kind = FLAG_CUSTOM, AT(loss_scale), .parse = opt_parse_loss_scale, .example = "1024",
     .stored = 24,
     .key = "loss-scale", .store = opt_store_loss_scale},
    {.name = "--seed", .metavar = "S",
     .help = "seed of init and data order, 0..2^64-1 (default 42)", .kind = FLAG_UINT,
     AT(seed), .lo = 0, .hi = (double)UINT64_MAX, .example = "7", .stored = 26, .key = "seed",
     .locked = "the data order depends on it"},
    {.name = "--lr-scale", .metavar = "RULE",
     .help = "none (default), linear, sqrt; with --base-batch N", .kind = FLAG_CHOICE,
     AT(lr_scale), .choices = "none|linear|sqrt", .values = lr_rules, .example = "sqrt",
     .stored = 8, .key = "lr-scale"},
    {.name = "--base-batch", .metavar = "N",
     .help = "batch the lr was tuned for, 1..1048576 (default 128)", .kind = FLAG_UINT,
     AT(base_batch), .lo = 1, .hi = MAX_BATCH, .example = "64", .needs = "--lr-scale=sqrt",
     .stored = 9,
     .key = "base-batch", .store = opt_store_base_batch},
    {.name = "--device", .metavar = "SEL",
     .help = "device index, P:D, or name substring (CLGRAD_DEVICE)", .kind = FLAG_TEXT,
     AT(device), .example = "0"},
    {.name = "--tuning", .metavar = "T",
     .help = "CLBlast GEMM parameters: auto (default: the device's file\nfrom clgrad-tune, if "
             "any), off (CLBlast's defaults), or a\ntuning file",
     .kind = FLAG_TEXT, AT(tuning), .expect = "auto, off or a file", .example = "off"},
    {.name = "--vram", .metavar = "BYTES",
     .help = "memory budget, e.g. 512M, 8G (suffixes K, M, G, T: 1024^n)", .kind = FLAG_CUSTOM,
     .parse = opt_parse_bytes, .given = TRAIN_GIVEN_VRAM, .example = "512M"},
    {.name = "--auto-micro-batch", .help = "halve the micro-batch while activations do not fit",
     .kind = FLAG_SWITCH, AT(auto_micro_batch), .example = ""},
    {.name = "--allow-over-device-memory",
     .help = "run a memory plan above the device's global memory (for\na device that pages; "
             "refused by default before anything\nis allocated)",
     .kind = FLAG_SWITCH, AT(allow_over_memory), .example = ""},
    {.name = "--metrics", .metavar = "FILE.csv",
     .help = "one row per update (written to FILE.tmp.* and renamed at\nthe end: the file is "
             "complete or the old one is kept)",
     .kind = FLAG_TEXT, AT(metrics), .output = 1, .expect = "a file name", .example = "m.csv"},
    {.name = "--log", .metavar = "FILE.jsonl",
     .help = "JSON Lines: the run's settings, then a line per update and\nper evaluation, "
             "each written as it happens (tail -f,\nclgrad-plot; appended to on --resume)",
     .kind = FLAG_TEXT, AT(log), .output = 1, .expect = "a file name", .example = "run.jsonl"},
    {.name = "--dump-weights", .metavar = "FILE",
     .help = "all parameters at the end, little-endian fp32, in model\norder: fc1.weight [h1 x "
             "784], fc1.bias [h1], fc2.weight,\nfc2.bias, ..., weights row-major [out x in]\n"
             "(written and renamed as --metrics)",
     .kind = FLAG_TEXT, AT(dump_weights), .output = 1, .expect = "a file name", .example = "w.bin"},
    {.name = "--checkpoint", .metavar = "PATH",
     .help = "save the training state to PATH (with --save-every N,\nevery N updates; always "
             "at the end)",
     .kind = FLAG_TEXT, AT(checkpoint), .output = 1, .expect = "a file name", .example = "c.st"},
    {.name = "--save-initial", .metavar = "PATH",
     .help = "also save the model before its first update to PATH (a\ncheckpoint that "
             "resumes at update 0: a run's starting point\nfor another framework)",
     .kind = FLAG_TEXT, AT(save_initial), .output = 1, .expect = "a file name",
     .example = "init.st"},
    {.name = "--save-every", .metavar = "N", .help = "1..1e9 updates", .kind = FLAG_UINT,
     AT(save_every), .lo = 1, .hi = 1e9, .given = TRAIN_GIVEN_SAVE_EVERY, .example = "10",
     .needs = "--checkpoint=c.st"},
    {.name = "--resume", .metavar = "PATH",
     .help = "continue from a checkpoint; every setting that changes the\ntraining must be the "
             "saved run's (the checkpoint stores\nthem; a difference is an error naming it)",
     .kind = FLAG_TEXT, AT(resume), .expect = "a file name", .example = "r.st"},
    {.name = "--override", .metavar = "LIST",
     .help = "with --resume: accept these settings' new values, e.g.\nlr,warmup (names as the "
             "error gives them)",
     .kind = FLAG_CUSTOM, .parse = parse_overrides, .example = "lr",
     .needs = "--resume=r.st"},
    {.name = "--stop-after", .metavar = "N",
     .help = "stop after N updates of this run without changing the\nschedule (split a run "
             "across --checkpoint/--resume)",
     .kind = FLAG_UINT, AT(stop_after), .lo = 1, .hi = 1e9, .given = TRAIN_GIVEN_STOP_AFTER,
     .example = "3"},
    {.name = "--train-limit", .metavar = "N", .help = "use only the first N training samples",
     .kind = FLAG_UINT, AT(limit_train), .lo = 1, .hi = 1e9, .given = TRAIN_GIVEN_TRAIN_LIMIT,
     .example = "100", .stored = 27, .key = "train-limit",
     .label = "--train-limit (training samples used)",
     .locked = "the position in the data order depends on the number of samples",
     .store = opt_store_train_limit},
    {.name = "--test-limit", .metavar = "N", .help = "use only the first N test samples",
     .kind = FLAG_UINT, AT(limit_test), .lo = 1, .hi = 1e9, .given = TRAIN_GIVEN_TEST_LIMIT,
     .example = "100"},
    {.name = "--dist", .metavar = "ddp|zero1",
     .help = "data-parallel over MPI, under mpirun -np R (needs a build\nwith libclgrad-mpi): "
             "every rank holds the params (ddp:\nand all optimizer states; zero1: 1/R of them), "
             "--batch\nstays the effective batch, rank r takes the r-th\ncontiguous 1/R of each "
             "batch (R x micro-batch must divide\nit); rank 0 alone prints, writes --metrics,\n"
             "--dump-weights and the one --checkpoint file (the whole\nstate, gathered under "
             "zero1), which resumes in either\nmode on any R or on a plain process",
     .kind = FLAG_CHOICE, AT(dist), .choices = "ddp|zero1", .values = dist_modes,
     .exact_case = 1, .expect = "ddp or zero1", .example = "ddp"},
    {.name = "--dist-timeout", .metavar = "SECONDS",
     .help = "under --dist, a rank that waits this long for another\nends the job "
             "(MPI_Abort) naming the silent ranks; 0 (for\never) .. 86400 (default 300), more "
             "than the longest\nstretch one rank works alone (rank 0's evaluation, a save)",
     .kind = FLAG_UINT, AT(dist_timeout), .lo = 0, .hi = 86400,
     .given = TRAIN_GIVEN_DIST_TIMEOUT, .example = "60", .needs = "--dist=ddp"},
    {.name = "--json", .help = "print a JSON summary as the last line of stdout",
     .kind = FLAG_SWITCH, AT(json), .example = ""},
    {.name = "--quiet", .help = "no progress on stderr", .kind = FLAG_SWITCH, AT(quiet),
     .example = ""},
    {.name = "--help", .help = "this text", .kind = FLAG_HELP},
    /* Stored settings that are no flag: the optimizer's (clg_config), the
     * inf/NaN policy (on with --loss-scale) and the data. */
    {.stored = 11, .key = "beta1", .label = "beta1 (the optimizer's)", .store = opt_store_config},
    {.stored = 12, .key = "beta2", .label = "beta2 (the optimizer's)", .store = opt_store_config},
    {.stored = 13, .key = "eps", .label = "eps (the optimizer's)", .store = opt_store_config},
    {.stored = 14, .key = "momentum", .label = "momentum (the optimizer's)",
     .store = opt_store_config},
    {.stored = 25, .key = "nonfinite",
     .label = "nonfinite (skip inf/NaN updates: on with --loss-scale)",
     .store = opt_store_nonfinite},
    {.stored = 28, .key = "data", .label = "data (CRC-32 of the training samples, --data)",
     .store = opt_store_data},
};

/* Combinations of core flags refused before the run (flags.h): what a
 * data-parallel run, or a ZeRO-1 shard (clg_model_set_shard), cannot do.
 * With --auto-micro-batch each rank would halve on its own memory: ranks
 * could end up with different micro-batches, and so different shares of
 * a batch. */
static const flag_limit limits[] = {
    {.when = "--dist", .flag = "--auto-micro-batch",
     .why = "every rank must use the same --micro-batch; give one that fits"},
    {.when = "--dist=zero1", .flag = "--master-dtype", .takes = "fp32",
     .why = "a sharded model does not support bf16 params"},
    {.when = "--dist", .flag = "--accum-dtype", .takes = "fp32",
     .why = "clgrad sums only fp32 accumulators across ranks"},
    /* flags that would change nothing (issue 37) */
    {.when = "--lr-scale=none", .flag = "--base-batch",
     .why = "it is the batch --lr-scale linear or sqrt scales the lr from"},
    {.when = "--state-dtype=fp32", .flag = "--state-min-size",
     .why = "only q8 and q4 states keep small tensors in fp32"},
    {.when = "--state-dtype=bf16", .flag = "--state-min-size",
     .why = "only q8 and q4 states keep small tensors in fp32"},
};

const flag_table train_flag_table = {
    .rows = rows,
    .n = sizeof rows / sizeof *rows,
    .preface = "usage: clgrad-train [options]\n"
               "Trains with CLBlast and clgrad's gradient accumulation: an MLP classifier on\n"
               "Fashion-MNIST (the default), a contrastive encoder or a GPT (--task).\n",
    .footer = "A number is the whole argument, in range, and one a float holds (--lr 1e-46 is\n"
              "refused: as a float it is 0). Output paths are checked before the run: their\n"
              "directories must exist and be writable, and no output may name another output\n"
              "or an input (--checkpoint may name the --resume file).\n",
    .given_offset = offsetof(train_options, given),
    .limits = limits,
    .n_limits = sizeof limits / sizeof *limits,
};

/* Appends the names of list to o->overrides after checking each. */
static int parse_overrides(const char *flag, const char *list, void *opts, char *err,
                           size_t errlen)
{
    (void)flag;
    train_options *o = opts;
    const char *p = list;
    if (!*p) {
        errmsg_set(err, errlen, "--override: expected NAME[,NAME...], got ''");
        return -1;
    }
    while (*p) {
        size_t n = strcspn(p, ",");
        char name[64];
        if (n == 0 || n >= sizeof name) {
            errmsg_set(err, errlen, "--override: expected NAME[,NAME...], got '%s'", list);
            return -1;
        }
        memcpy(name, p, n);
        name[n] = 0;
        if (name[0] == '-' && name[1] == '-')
            memmove(name, name + 2, n - 1); /* --lr is lr */
        const char *why = NULL;
        if (!train_setting_overridable(name, &why)) {
            if (why)
                errmsg_set(err, errlen, "--override: %s cannot be overridden: %s", name, why);
            else
                errmsg_set(err, errlen, "--override: unknown setting '%s' (one of: %s)", name,
                        train_setting_names());
            return -1;
        }
        size_t used = strlen(o->overrides);
        if (used + strlen(name) + 2 > sizeof o->overrides) {
            errmsg_set(err, errlen, "--override: list too long");
            return -1;
        }
        if (used)
            strcat(o->overrides, ",");
        strcat(o->overrides, name);
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) {
                errmsg_set(err, errlen, "--override: expected NAME[,NAME...], got '%s'", list);
                return -1;
            }
        }
    }
    return 0;
}



int train_setting_overridable(const char *name, const char **why)
{
    const flag_def *s = flags_find_key(&train_flag_table, name);
    *why = s ? s->locked : NULL;
    return s && !s->locked;
}

const char *train_setting_names(void)
{
    static char list[512];
    if (!list[0]) {
        const flag_def *s;
        for (int k = 1; (s = flags_stored_at(&train_flag_table, k)) != NULL; k++) {
            if (s->locked)
                continue;
            if (list[0])
                strncat(list, ",", sizeof list - strlen(list) - 1);
            strncat(list, s->key, sizeof list - strlen(list) - 1);
        }
    }
    return list;
}

int train_options_check_limits(const flag_table *t, const train_options *o, char *err,
                               size_t errlen)
{
    train_options dflt; /* what a flag not given holds */
    train_options_default(&dflt);
    return flags_check_limits(t, &train_flag_table, o, &dflt, err, errlen);
}

int train_options_parse(int argc, char **argv, train_options *o, char *err, size_t errlen)
{
    void *opts[1] = {o};
    int rc = flags_parse(argc, argv, &train_flag_table, 1, opts, NULL, err, errlen);
    if (rc == 0)
        rc = train_options_check(o, err, errlen);
    return rc != 0 ? rc : train_options_check_limits(&train_flag_table, o, err, errlen);
}

const char *train_usage(void)
{
    static char text[8192];
    if (!text[0])
        flags_usage(&train_flag_table, text, sizeof text);
    return text;
}
