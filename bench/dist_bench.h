/* dist_bench.h - clgrad-bench --dist (built with libclgrad-mpi only): the
 * run over MPI_COMM_WORLD (dist_run.c), one measured N and k (dist_measure.c)
 * and the ZeRO-1 rows' table and JSON section (dist_report.c; the rows,
 * bench_dist_zero1, are in report.h). */
#ifndef BENCH_DIST_BENCH_H
#define BENCH_DIST_BENCH_H

#include "bench_main.h"

#include <clgrad_mpi.h>

/* Prints "rank r: what: status: message" and aborts every rank: a rank that
 * returned alone would leave the others waiting in a collective. */
void bench_dist_die(const char *what, clg_status st) __attribute__((noreturn));

/* Collective: measures DDP and ZeRO-1 with k micro-steps per update, each
 * against syncing every micro-step, for a model of n parameters on every
 * rank of MPI_COMM_WORLD, the four interleaved. ddp and zero1 (rank 0's
 * figures) are filled on every rank; rank 0 keeps them. */
void bench_dist_measure(clg_context *ctx, const bench_options *o, uint64_t n, unsigned k,
                        bench_dist *ddp, bench_dist_zero1 *zero1);

/* The ZeRO-1 table (after report_table.c's DDP table). */
void bench_dist_print_zero1(const bench_dist_zero1 *rows, size_t n);
/* Adds the rows as "dist_zero1" to the JSON bench_write_json wrote at
 * path; 0 or -1 (said on stderr). */
int bench_dist_json_add_zero1(const char *path, const bench_dist_zero1 *rows, size_t n);

#endif /* BENCH_DIST_BENCH_H */
