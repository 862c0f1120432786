/* runconfig.h - the settings of a clgrad-train run that change its
 * training, stored in its checkpoints (caller metadata
 * "train.config.<name>") and compared on --resume, so that a resumed run
 * trains as the saved one did unless the user accepts a change by name
 * (--override NAME,...).
 *
 * Compared: hidden, batch, micro-batch (the one trained with, after
 * --auto-micro-batch; k follows from it and batch), epochs (without
 * --steps), steps,
 * optimizer, lr (before --lr-scale), lr-scale, base-batch (with a
 * --lr-scale), weight-decay, beta1, beta2, eps, momentum (the optimizer's
 * settings the trainer uses), warmup, schedule, clip, grad-dtype,
 * grad-path, state-dtype, state-rounding, state-min-size, master-dtype (a
 * checkpoint saved before they were recorded counts as fp32, nearest, 4096,
 * fp32), loss-scale, nonfinite (skip updates with inf/NaN gradients:
 * on with --loss-scale), seed, train-limit (training samples
 * used) and data (a CRC-32 of those samples and their labels).
 * Not compared (they do not change the training): --data's path (its
 * content is), --test-limit (evaluation only), --device, --vram (except
 * through the micro-batch it leaves), --auto-micro-batch itself, --metrics,
 * --dump-weights, --checkpoint, --save-every, --stop-after, --resume,
 * --json, --quiet.
 * batch, seed, train-limit, optimizer, state-dtype, state-min-size and
 * master-dtype cannot be overridden: the position in the data order, or the optimizer state and
 * parameters in the checkpoint, depend on them. */
#ifndef TRAIN_RUNCONFIG_H
#define TRAIN_RUNCONFIG_H

#include "clgrad.h"
#include "options.h"

#include <stddef.h>
#include <stdint.h>

#define RUNCONFIG_PREFIX "train.config."
#define RUNCONFIG_MAX 48
#define RUNCONFIG_VALUE_MAX 96

typedef struct runconfig_item {
    char name[32];
    char value[RUNCONFIG_VALUE_MAX];
} runconfig_item;

typedef struct run_config {
    int n;
    runconfig_item items[RUNCONFIG_MAX];
    /* for clg_checkpoint_save: "train.config.<name>" and the values */
    char keys[RUNCONFIG_MAX][48];
    const char *key_ptr[RUNCONFIG_MAX];
    const char *value_ptr[RUNCONFIG_MAX];
} run_config;

/* The settings of a run: o, the clgrad config it trains with (cfg), the
 * micro-batch it trains with, and the training samples it uses (count and
 * CRC-32 of images and labels). */
void runconfig_build(run_config *c, const train_options *o, const clg_config *cfg,
                     unsigned micro_batch, uint64_t n_train, uint32_t data_crc);

/* Fills c->key_ptr/value_ptr for clg_checkpoint_save (c->n pairs). */
void runconfig_meta(run_config *c);

/* Adds a saved "train.config.<name>" = value (other keys are ignored). */
void runconfig_add_saved(run_config *c, const char *key, const char *value);

/* Hands every pair of a checkpoint file's caller metadata to fn without
 * loading it: its header alone, verified by clgrad
 * (clg_checkpoint_read_meta: length, CRC before anything is read, JSON,
 * format), so that nothing of a damaged header is read. Returns 0, or -1
 * with clgrad's reason in err (fn has then seen nothing). */
int runconfig_read_meta(const char *path, clg_meta_fn fn, void *user, char *err, size_t errlen);

/* Compares the saved settings with the run's (now). Each difference is an
 * error unless its name is in overrides (comma-separated); the error names
 * every difference with the flag, the saved and the given value. The
 * differences accepted are described in overridden ("" when none).
 * Returns 0 or -1. */
int runconfig_compare(const run_config *saved, const run_config *now, const char *overrides,
                      const char *path, char *overridden, size_t olen, char *err,
                      size_t errlen);

/* CRC-32 (zlib's) of n bytes. */
uint32_t runconfig_crc32(uint32_t crc, const void *data, size_t n);

#endif /* TRAIN_RUNCONFIG_H */
