/* loop.h - the training loop every task runs, plain or as one rank of a
 * --dist run: epochs of the data order (one seeded shuffle each, uploaded
 * to the device), cut into effective batches, each one update (under
 * --dist each rank takes its share of it); after each update, when
 * something must be read back (progress, a --save-every checkpoint, or
 * what the task asks for, e.g. a --metrics row), the host waits for the
 * device and counts the training time up to there; at the end of each
 * pass the task's sums, evaluation and summary; at the end of the run
 * --checkpoint. The task brings the work through run_loop_hooks (task.h;
 * task is its own state, passed back). */
#ifndef TRAIN_LOOP_H
#define TRAIN_LOOP_H

#include "run.h"
#include "task.h"

/* Trains from the run's position to its end (run_done) or to the end of
 * --stop-after, then saves --checkpoint. Under --dist collective: every
 * rank returns the same status. Returns 0, or -1 with the message in
 * r->err. */
int run_loop(run_state *r, const run_loop_hooks *h, void *task);

#endif /* TRAIN_LOOP_H */
