/* options.c - command-line parsing and validation (see options.h). */
#include "options.h"
#include "errmsg.h"
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
    o->acc_dtype = CLG_FP32;
    o->state_rounding = CLG_ROUND_NEAREST;
    o->state_min_size = 4096;
    o->loss_scale = CLG_LOSS_SCALE_NONE;
    o->seed = 42;
    o->lr_scale = CLG_LR_RULE_NONE;
    o->base_batch = 128;
    o->path = GRAD_PATH_B;
}

const char *train_path_name(grad_path p)
{
    return p == GRAD_PATH_A ? "A" : p == GRAD_PATH_B ? "B" : "C";
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
    return clg_config_init(o->optimizer).weight_decay;
}

int train_options_clg_config(const train_options *o, clg_config *cfg, char *err,
                             size_t errlen)
{
    *cfg = clg_config_init(o->optimizer);
    float lr = train_options_lr(o);
    if (o->lr_scale != CLG_LR_RULE_NONE) {
        float scaled;
        clg_status st = clg_lr_scale(o->lr_scale, lr, o->base_batch, o->batch, &scaled);
        if (st != CLG_SUCCESS) {
            errmsg_set(err, errlen, "--lr-scale: %s", clg_last_error(NULL));
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
    /* Loss scaling skips overflowing updates (GradScaler). --metrics wants
     * the gradient norm and nothing else: it changes no training setting. */
    if (o->loss_scale != CLG_LOSS_SCALE_NONE)
        cfg->nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    cfg->grad_norm = train_options_watch_updates(o);
    cfg->seed = o->seed;
    cfg->state_dtype = o->state_dtype;
    cfg->state_rounding = o->state_rounding;
    cfg->state_min_size = o->state_min_size;
    cfg->master_dtype = o->master_dtype;
    cfg->acc_dtype = o->acc_dtype;
    cfg->allow_over_device_memory = o->allow_over_memory; /* the library checks it too */
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

int train_options_watch_updates(const train_options *o)
{
    return o->metrics != NULL || o->log != NULL;
}

int train_options_check(train_options *o, char *err, size_t errlen)
{
    /* A program that sets lr or weight_decay without its bit would get the
     * default silently; refuse that (and a bit without a usable value). */
    if (!(o->given & TRAIN_GIVEN_LR) != !!isnan(o->lr) ||
        ((o->given & TRAIN_GIVEN_LR) && !(o->lr > 0.0f && o->lr <= 10.0f))) {
        errmsg_set(err, errlen, "--lr: %g %s TRAIN_GIVEN_LR", o->lr,
                (o->given & TRAIN_GIVEN_LR) ? "is not in (0, 10] but marked" : "set without");
        return -1;
    }
    if (!(o->given & TRAIN_GIVEN_WEIGHT_DECAY) != !!isnan(o->weight_decay) ||
        ((o->given & TRAIN_GIVEN_WEIGHT_DECAY) &&
         !(o->weight_decay >= 0.0f && o->weight_decay <= 1.0f))) {
        errmsg_set(err, errlen, "--weight-decay: %g %s TRAIN_GIVEN_WEIGHT_DECAY", o->weight_decay,
                (o->given & TRAIN_GIVEN_WEIGHT_DECAY) ? "is not in [0, 1] but marked"
                                                      : "set without");
        return -1;
    }
    if (o->micro_batch == 0 && !(o->given & TRAIN_GIVEN_MICRO_BATCH))
        o->micro_batch = o->batch < 32 ? o->batch : 32;
    /* a task's default micro-batch (task.h, core_defaults) never exceeds a
     * smaller --batch */
    if (!(o->given & TRAIN_GIVEN_MICRO_BATCH) && o->micro_batch > o->batch)
        o->micro_batch = o->batch;
    if (o->micro_batch == 0) {
        errmsg_set(err, errlen, "--micro-batch: expected an integer in [1, %u], got 0", o->batch);
        return -1;
    }
    if (o->micro_batch > o->batch) {
        errmsg_set(err, errlen, "--micro-batch: expected an integer in [1, %u] (the --batch), got %u",
                o->batch, o->micro_batch);
        return -1;
    }
    if (o->grad_dtype != CLG_FP32 && o->path == GRAD_PATH_B) {
        if (o->path_given) {
            errmsg_set(err, errlen,
                    "--grad-path: B writes gradients in place into the fp32 accumulator; "
                    "--grad-dtype %s needs A or C", clg_dtype_name(o->grad_dtype));
            return -1;
        }
        o->path = GRAD_PATH_C;
    }
    if (o->acc_dtype != CLG_FP32 && o->path == GRAD_PATH_B) {
        if (o->path_given) {
            errmsg_set(err, errlen,
                    "--grad-path: B's GEMMs write fp32 gradients in place; --accum-dtype %s "
                    "needs A or C", clg_dtype_name(o->acc_dtype));
            return -1;
        }
        o->path = GRAD_PATH_C;
    }
    if (o->state_rounding == CLG_ROUND_STOCHASTIC && o->state_dtype == CLG_FP32) {
        errmsg_set(err, errlen, "--state-rounding stochastic: needs --state-dtype bf16, q8 or q4 "
                "(fp32 states are not rounded)");
        return -1;
    }
    /* --steps ends the run whatever the epochs: both given, one is ignored;
     * --epochs alone over a task's own --steps default (the GPT's) rules */
    if (o->given & TRAIN_GIVEN_EPOCHS) {
        if (o->given & TRAIN_GIVEN_STEPS) {
            errmsg_set(err, errlen, "--epochs: not with --steps (the run ends after --steps "
                    "updates, whatever the epochs); give one");
            return -1;
        }
        o->steps = 0;
    }
    if ((o->given & TRAIN_GIVEN_DIST_TIMEOUT) && o->dist == TRAIN_DIST_NONE) {
        errmsg_set(err, errlen, "--dist-timeout: needs --dist ddp or zero1 (it bounds the waits "
                "of its ranks)");
        return -1;
    }
    if (o->save_every && !o->checkpoint) {
        errmsg_set(err, errlen, "--save-every: needs --checkpoint PATH");
        return -1;
    }
    if (o->overrides[0] && !o->resume) {
        errmsg_set(err, errlen, "--override: needs --resume PATH (it accepts settings that differ "
                "from the checkpoint's)");
        return -1;
    }
    /* the combinations of the flag table's limits: train_options_check_limits */
    return 0;
}
