/* dist_hooks.h - what a --dist run of clgrad-train needs from MPI, behind
 * function pointers: train_core (and every program that links it: the
 * tests, the benchmark) never links MPI; clgrad-train fills these in
 * (train_mpi.c) only when it is built with libclgrad-mpi. A run without
 * hooks is a plain process that calls no MPI at all. */
#ifndef TRAIN_DIST_HOOKS_H
#define TRAIN_DIST_HOOKS_H

#include "clgrad.h"

#include <stddef.h>

typedef struct train_dist_hooks train_dist_hooks;
struct train_dist_hooks {
    int rank, size;
    void *state; /* the MPI side's own */
    /* --dist-timeout: how long any collective of the run (the trainer's
     * and libclgrad-mpi's) waits for the other ranks before this rank ends
     * the job, naming the silent ones (0: for ever). The core sets it at
     * each agreement point (dist.c), which the run reaches before any
     * other collective: the hooks are opened before the options exist. */
    double timeout_s;
    /* Collective: every rank passes its status (0 or not). Returns 0 when
     * every rank passed 0; otherwise -1 on every rank, with the message of
     * the lowest failed rank ("rank N: ...", its err) in err. *flags (may be
     * NULL on every rank) becomes rank 0's on every rank: decisions that
     * only rank 0 may take (when to print) stay the same everywhere. */
    int (*agree)(train_dist_hooks *d, int status, unsigned *flags, char *err, size_t errlen);
    /* Collective, as agree, and s[0..n) becomes the sum over the ranks, in
     * rank order 0..R-1 (deterministic, the same on every rank). */
    int (*sum)(train_dist_hooks *d, int status, float *s, int n, char *err, size_t errlen);
    /* ZeRO-1 (set before the model is built): the model keeps the
     * optimizer states of shard `rank` of `size` (clg_model_set_shard). */
    int zero1;
    /* clg_dist_create / clg_dist_step / clg_dist_destroy (clgrad_mpi.h). */
    int (*start)(train_dist_hooks *d, clg_model *model, char *err, size_t errlen);
    int (*step)(train_dist_hooks *d, const clg_grads *grads, float weight, int *updated,
                char *err, size_t errlen);
    void (*stop)(train_dist_hooks *d);
    /* Collective, after start: clg_dist_checkpoint_save (rank 0 writes the
     * whole state; the status is agreed, with clg_last_error's message
     * in err). */
    clg_status (*save)(train_dist_hooks *d, const char *path, const char *const *keys,
                       const char *const *values, size_t n, char *err, size_t errlen);
};

#endif /* TRAIN_DIST_HOOKS_H */
