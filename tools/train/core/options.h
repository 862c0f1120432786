/* options.h - clgrad-train's command line: defaults, parsing, and
 * validation that names the flag and its accepted range. */
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include "clgrad.h"
#include "flags.h"

#include <stddef.h>
#include <stdint.h>

#define TRAIN_MAX_HIDDEN 8
#define TRAIN_OVERRIDES_MAX 512

/* --dist: none (a plain process, no MPI at all) or replicated (DDP). */
typedef enum train_dist_mode {
    TRAIN_DIST_NONE = 0,
    TRAIN_DIST_DDP = 1,
    TRAIN_DIST_ZERO1 = 2,
} train_dist_mode;

typedef enum grad_path { GRAD_PATH_A = 0, GRAD_PATH_B = 1, GRAD_PATH_C = 2 } grad_path;

/* Which flags were on the command line (train_options.given): a value is
 * never taken for "not given" (0 or any other), so that a given value that
 * is legal cannot turn into a default. */
enum {
    TRAIN_GIVEN_LR = 1u << 0,
    TRAIN_GIVEN_WEIGHT_DECAY = 1u << 1,
    TRAIN_GIVEN_MICRO_BATCH = 1u << 2,
    TRAIN_GIVEN_STEPS = 1u << 3,
    TRAIN_GIVEN_VRAM = 1u << 4,
    TRAIN_GIVEN_SAVE_EVERY = 1u << 5,
    TRAIN_GIVEN_STOP_AFTER = 1u << 6,
    TRAIN_GIVEN_TRAIN_LIMIT = 1u << 7,
    TRAIN_GIVEN_TEST_LIMIT = 1u << 8,
    TRAIN_GIVEN_DIST_TIMEOUT = 1u << 9,
    TRAIN_GIVEN_EPOCHS = 1u << 10,
};

/* --dist-timeout when not given: seconds a rank waits for another. */
#define TRAIN_DIST_TIMEOUT_DEFAULT 300

typedef struct train_options {
    int task;             /* --task: the index of the task (registry.h) */
    const char *data_dir;
    unsigned hidden[TRAIN_MAX_HIDDEN];
    int n_hidden;
    unsigned given;       /* TRAIN_GIVEN_* of the flags parsed (programs that fill
                             the struct themselves set the bits of lr and
                             weight_decay, which train_options_check enforces) */
    unsigned batch;       /* effective batch B */
    unsigned micro_batch; /* b; a program may leave it 0 for min(32, B), which
                             train_options_check fills in (the flag cannot be 0) */
    unsigned epochs;
    uint64_t steps;       /* updates; 0 (the flag cannot be 0): run all epochs */
    clg_optimizer optimizer;
    float lr;             /* with TRAIN_GIVEN_LR, else NaN: the optimizer's default */
    float weight_decay;   /* with TRAIN_GIVEN_WEIGHT_DECAY, else NaN: the default */
    uint64_t warmup;
    clg_schedule_kind schedule;
    float clip;           /* 0: off */
    clg_dtype grad_dtype;
    clg_dtype state_dtype;       /* --state-dtype: optimizer states */
    clg_dtype master_dtype;      /* --master-dtype: params (bf16: stochastic rounding) */
    clg_rounding state_rounding; /* --state-rounding */
    uint64_t state_min_size;     /* --state-min-size: smaller tensors keep fp32 states */
    clg_loss_scale_mode loss_scale;
    float loss_scale_value; /* static scale */
    uint64_t seed;
    clg_lr_rule lr_scale;
    uint64_t base_batch;
    const char *device;
    const char *tuning;   /* --tuning: NULL/"auto", "off" or a file (tools/gemm/tuning_apply.h) */
    uint64_t vram;        /* 0: no budget */
    int auto_micro_batch;
    int allow_over_memory; /* --allow-over-device-memory: run a plan above the
                              device's global memory (a device that pages) */
    const char *metrics;
    const char *log; /* --log: JSON Lines, a line per update as it happens (run_log.h) */
    const char *dump_weights;
    int json;
    int quiet;
    train_dist_mode dist; /* --dist: data-parallel under mpirun (needs MPI) */
    uint64_t dist_timeout; /* --dist-timeout, with TRAIN_GIVEN_DIST_TIMEOUT (0: for ever) */
    grad_path path;
    int path_given;       /* --grad-path was on the command line */
    const char *checkpoint;
    uint64_t save_every;
    const char *save_initial;
    clg_dtype acc_dtype;  /* --accum-dtype: the accumulator's, fp32 or bf16 */ /* a checkpoint of the model before its first update */
    const char *resume;
    uint64_t stop_after;  /* stop after N updates of this run, schedule unchanged */
    uint64_t limit_train; /* use only the first N training samples (0: all) */
    uint64_t limit_test;
    /* --override NAME[,NAME...]: settings of the run (runconfig.h) a resume
     * may change, as a comma-separated list of names. */
    char overrides[TRAIN_OVERRIDES_MAX];
} train_options;

/* Defaults of a bare run. */
void train_options_default(train_options *o);

/* Parses argv into *o (after train_options_default). Returns 0 on success,
 * 1 when --help was asked (usage in err is not set; print train_usage),
 * -1 on a bad flag or value with a message in err. */
int train_options_parse(int argc, char **argv, train_options *o, char *err, size_t errlen);

/* Checks cross-flag constraints (micro-batch <= batch, path B needs fp32
 * gradients, ...); parse calls it. */
int train_options_check(train_options *o, char *err, size_t errlen);

/* Whether the run watches every update (--metrics or --log): it then asks
 * clgrad for the gradient norm, and reads its statistics after each one. */
int train_options_watch_updates(const train_options *o);

/* The combinations the limits of table t (the core's, or a task's: the
 * core flags it cannot take) refuse for o (flags.h); parse checks the
 * core's. 0, or -1 with the message. */
int train_options_check_limits(const flag_table *t, const train_options *o, char *err,
                               size_t errlen);

/* The learning rate and weight decay the run uses: the given value, else
 * the optimizer's default (lr: adamw/adam 1e-3, sgd 0.05, lion 1e-4; weight
 * decay: clgrad's default for the optimizer). */
float train_options_lr(const train_options *o);
float train_options_weight_decay(const train_options *o);

/* The clgrad configuration o asks for, except what depends on the run
 * (schedule length and warmup, k): optimizer, lr (after --lr-scale), weight
 * decay, SGD momentum 0.9, clipping, loss scaling, the inf/NaN policy (skip
 * the update with loss scaling or --metrics, which reads the gradient norm
 * that check computes) and the seed. Returns 0, or -1 with a message. */
int train_options_clg_config(const train_options *o, clg_config *cfg, char *err,
                             size_t errlen);

/* "4 x 32", "48 + 16", "3 x 16 + 2": how a batch of n samples splits into
 * micro-batches of b. */
void train_split_text(char *buf, size_t len, uint64_t n, unsigned b);

/* The core's flags (options_table.c). */
extern const flag_table train_flag_table;

/* --help's text of the core's flags. */
const char *train_usage(void);

/* Whether name is a stored setting --override accepts; when it is one that
 * cannot be overridden, *why says why (else NULL: unknown name). */
int train_setting_overridable(const char *name, const char **why);

/* The names --override accepts, comma-separated. */
const char *train_setting_names(void);

const char *train_schedule_name(clg_schedule_kind s);
const char *train_path_name(grad_path p); /* "A", "B", "C" */

#endif /* TRAIN_OPTIONS_H */
