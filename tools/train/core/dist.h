/* dist.h - the core's side of --dist: the agreement points of a run and
 * the share of every batch each rank takes. Under --dist (r->dist set:
 * the MPI side, dist_hooks.h) an agreement point is a collective that
 * every rank reaches with its status since the last one; in a plain run
 * it is that status itself, so that the loop (loop.c) and the task's
 * set-up read the same either way. */
#ifndef TRAIN_DIST_H
#define TRAIN_DIST_H

#include "run.h"

/* Whether this process writes the run's files and evaluates: a plain
 * run, or rank 0 of a --dist run (every rank holds the same params). */
int run_rank0(const run_state *r);

/* An agreement point: rc is this rank's status (0 or not). Returns 0 when
 * every rank passed 0; otherwise -1 on every rank, with the lowest failed
 * rank's message ("rank N: ...") in r->err. *flags (NULL on every rank, or
 * on none) becomes rank 0's on every rank: decisions only rank 0 may take
 * (when to print) stay the same everywhere. A plain run: -1 when rc is
 * not 0 (its message is in r->err already), *flags unchanged. */
int run_agree(run_state *r, int rc, unsigned *flags);

/* As run_agree, and s[0..n) becomes the sum over the ranks, in rank order
 * (bitwise the same on every rank). A plain run's s stays its own. */
int run_sum(run_state *r, int rc, float *s, int n);

/* --dist: each rank takes an equal share of every batch, in whole
 * micro-batches: --batch a multiple of ranks x --micro-batch, and the
 * last batch of an epoch a multiple of the ranks; refused with the
 * numbers. 0 in a plain run. */
int run_dist_check(run_state *r);

#endif /* TRAIN_DIST_H */
