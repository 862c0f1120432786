/* dist_bench.h - clgrad-bench --dist (built with libclgrad-mpi only): the
 * run over MPI_COMM_WORLD (dist_run.c) and one measured row (dist_measure.c). */
#ifndef BENCH_DIST_BENCH_H
#define BENCH_DIST_BENCH_H

#include "bench_main.h"

#include <clgrad_mpi.h>

/* Prints "rank r: what: status: message" and aborts every rank: a rank that
 * returned alone would leave the others waiting in a collective. */
void bench_dist_die(const char *what, clg_status st) __attribute__((noreturn));

/* Collective: measures DDP with k micro-steps per update against syncing
 * every micro-step, for a model of n parameters on every rank of
 * MPI_COMM_WORLD. out (rank 0's figures) is filled on every rank; rank 0
 * keeps it. */
void bench_dist_measure(clg_context *ctx, const bench_options *o, uint64_t n, unsigned k,
                        bench_dist *out);

#endif /* BENCH_DIST_BENCH_H */
