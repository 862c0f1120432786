/* dist_bench.h - clgrad-bench --dist (built with libclgrad-mpi only): the
 * run over MPI_COMM_WORLD (dist_run.c), one measured N and k (dist_measure.c)
 * and the ZeRO-1 rows' table and JSON section (dist_report.c). */
#ifndef BENCH_DIST_BENCH_H
#define BENCH_DIST_BENCH_H

#include "bench_main.h"

#include <clgrad_mpi.h>

/* One ZeRO-1 row, beside the DDP row (bench_dist, report.h) of the same N
 * and k: zero1 = one cycle of k micro-steps of a model sharded as (rank,
 * R) under CLG_DIST_ZERO1; sync = the same sharded model with
 * accum_steps = 1 stepped k times (k reduce-scatters and all-gathers).
 * bench_dist has no fields for the states, and report.h is the report's
 * schema, so these rows live here and go into a section of their own. */
typedef struct bench_dist_zero1 {
    int ranks;
    uint64_t n;
    unsigned k, tensors, reps;
    /* rank 0's shard and the layout space it is cut from (elements,
     * clg_model_shard_range): what the exact byte count needs */
    uint64_t layout_elements, shard_elements;
    /* bytes per update, rank 0's counters (medians; the same every rep) */
    double bytes_sent, bytes_received, sync_bytes_sent, sync_bytes_received;
    double bytes_ratio;    /* sync_bytes_sent / bytes_sent */
    double ddp_bytes_sent; /* the DDP row's, for the table */
    bench_stat comm_ms, sync_comm_ms, staging_ms, sync_staging_ms, update_ms, sync_update_ms;
    bench_stat comm_ratio; /* per repetition sync / zero1 comm ms */
    bench_stat vs_ddp;     /* per repetition zero1 / ddp comm ms */
    /* optimizer-state bytes (clg_model_memory's plan.states): rank 0's, the
     * largest over ranks, and the unsharded DDP model's */
    uint64_t states_rank0, states_max, states_unsharded;
} bench_dist_zero1;

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
