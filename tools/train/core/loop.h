/* loop.h - the training loop every task runs: epochs of the data order
 * (one seeded shuffle each, uploaded to the device), cut into effective
 * batches; after each update, when something must be read back (progress,
 * a --save-every checkpoint, or what the task asks for, e.g. a --metrics
 * row), the host waits for the device and counts the training time up to
 * there; at the end of each pass the task evaluates. The task brings the
 * work through these hooks (task is its own state, passed back). */
#ifndef TRAIN_LOOP_H
#define TRAIN_LOOP_H

#include "run.h"

typedef struct run_loop_hooks {
    /* An epoch's pass starts (its order is on the device): clear the
     * epoch's running sums. */
    int (*epoch_start)(void *task);
    /* One effective batch: positions [start, start + len) of the order, as
     * micro-batches of at most r->b accumulated into one update. Advances
     * r->updates, r->micro_steps and r->samples. */
    int (*batch)(void *task, size_t start, size_t len);
    /* Whether the queue must be finished after every update (NULL: no),
     * and what to do then with the update of len samples (NULL: nothing). */
    int (*sync_every_update)(void *task);
    int (*after_update)(void *task, size_t len);
    /* The epoch's mean loss so far for the progress line (NaN: none yet),
     * epoch_samples samples into the pass. */
    int (*running_loss)(void *task, uint64_t epoch_samples, double *loss);
    /* --checkpoint now (--save-every). */
    int (*save)(void *task);
    /* The pass is over (the queue finished): its summary and evaluation;
     * seconds of training in this pass. */
    int (*epoch_end)(void *task, uint64_t epoch_samples, double seconds);
} run_loop_hooks;

/* Trains from the run's position to its end (run_done) or to the end of
 * --stop-after. Returns 0, or -1 with the message in r->err. */
int run_loop(run_state *r, const run_loop_hooks *h, void *task);

#endif /* TRAIN_LOOP_H */
