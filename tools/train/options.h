/* options.h - clgrad-train's command line: defaults, parsing, and
 * validation that names the flag and its accepted range. */
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

#define TRAIN_MAX_HIDDEN 8

typedef enum grad_path { GRAD_PATH_A = 0, GRAD_PATH_B = 1, GRAD_PATH_C = 2 } grad_path;

typedef struct train_options {
    const char *data_dir;
    unsigned hidden[TRAIN_MAX_HIDDEN];
    int n_hidden;
    unsigned batch;       /* effective batch B */
    unsigned micro_batch; /* b (0: min(default, B)) */
    unsigned epochs;
    uint64_t steps;       /* 0: run all epochs */
    clg_optimizer optimizer;
    float lr;             /* < 0: the optimizer's default */
    float weight_decay;   /* < 0: the optimizer's default */
    uint64_t warmup;
    clg_schedule_kind schedule;
    float clip;           /* 0: off */
    clg_dtype grad_dtype;
    clg_loss_scale_mode loss_scale;
    float loss_scale_value; /* static scale */
    uint64_t seed;
    clg_lr_rule lr_scale;
    uint64_t base_batch;
    const char *device;
    uint64_t vram;        /* 0: no budget */
    int auto_micro_batch;
    const char *metrics;
    const char *dump_weights;
    int json;
    int quiet;
    grad_path path;
    int path_given;       /* --grad-path was on the command line */
    const char *checkpoint;
    uint64_t save_every;
    const char *resume;
    uint64_t stop_after;  /* stop after N updates of this run, schedule unchanged */
    uint64_t limit_train; /* use only the first N training samples (0: all) */
    uint64_t limit_test;
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

const char *train_usage(void);
const char *train_optimizer_name(clg_optimizer o);
const char *train_schedule_name(clg_schedule_kind s);
const char *train_dtype_name(clg_dtype d);

#endif /* TRAIN_OPTIONS_H */
