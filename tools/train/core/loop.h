/* loop.h - the training loop every task runs, plain or as one rank of a
 * --dist run: epochs of the data order (one seeded shuffle each, uploaded
 * to the device), cut into effective batches, each one update (under
 * --dist each rank takes its share of it); after each update, when
 * something must be read back (progress, a --save-every checkpoint, a
 * --metrics row or --log line), the host waits for the device and counts
 * the training time up to there; at the end of each pass the task's sums,
 * evaluation and summary; at the end of the run --checkpoint. The task
 * brings the work through run_loop_hooks (task.h; task is its own state,
 * passed back). And the frame of every task's run around it: run_train,
 * run_end (run_train.c). */
#ifndef TRAIN_LOOP_H
#define TRAIN_LOOP_H

#include "run.h"
#include "task.h"

/* Trains from the run's position to its end (run_done) or to the end of
 * --stop-after, then saves --checkpoint. Under --dist collective: every
 * rank returns the same status. Returns 0, or -1 with the message in
 * r->err. */
int run_loop(run_state *r, const run_loop_hooks *h, void *task);

/* The training of a set-up (and resumed) run: --metrics and --log opened
 * (the log's header with the result's device and tuning and r->settings),
 * under --dist every rank's set-up agreed on and the MPI side started
 * (then r->master widened from rank 0's params), run_loop, then --metrics
 * and --log closed. From the agreement to the end of the loop every rank
 * fails together; rank 0's outputs are agreed on at run_end. 0, or -1
 * with the message in r->err. */
int run_train(run_state *r, const run_loop_hooks *h, void *task);

/* The end of a task's run, whatever happened (rc: its status so far):
 * when it went through, the counters and training time into the result;
 * under --dist the failures still pending agreed on and the MPI side
 * stopped (collective: every rank gets here); a --log still open closed
 * with the failure; then release(task), the task's state released
 * (ending with run_release: the total time). Returns the run's status
 * (the same on every rank). */
int run_end(run_state *r, int rc, void (*release)(void *task), void *task);

/* The task's sums s on the device cleared, or read back into out (s->n
 * floats; blocking). 0, or -1 with a message. */
int run_clear_sums(run_state *r, const run_sums *s);
int run_read_sums(run_state *r, const run_sums *s, float *out);

#endif /* TRAIN_LOOP_H */
