/* cycle.h - one way of running an accumulation cycle (clgrad fused,
 * clgrad per tensor, hand-rolled), behind the interface the case runner
 * times, and the runner itself. */
#ifndef BENCH_CYCLE_H
#define BENCH_CYCLE_H

#include "configs.h"
#include "report.h"
#include "stream.h"

typedef struct bench_cycle {
    void *self;
    unsigned k;
    /* Enqueues micro-step i (0-based) of the cycle; i == k - 1 also runs the
     * update. Host syncs a real user would need happen inside; the runner
     * adds a clFinish after. Returns 0, or -1 after printing why. */
    int (*step)(void *self, unsigned i);
    uint64_t (*launches)(void *self); /* kernels enqueued so far */
    void (*destroy)(void *self);
    unsigned groups;              /* clgrad param groups in all, or tensors */
    double host_syncs_per_update; /* blocking reads per cycle */
} bench_cycle;

/* Size of tensor i when n parameters are split into `tensors` near-equal
 * tensors (the first n % tensors get one more). */
size_t bench_tensor_size(uint64_t n, unsigned tensors, unsigned i);

/* clgrad: one model of `tensors` tensors in one param group (per_tensor =
 * 0), or one model per tensor, every model stepped in turn each micro-step
 * (per_tensor = 1: clgrad's kernels launched per tensor); path 'A', 'B' or
 * 'C'. Gradient buffers and the accumulator hold
 * small finite values. Returns 0 or -1 (and prints why). */
int bench_fused_create(bench_cycle *out, clg_context *ctx, const bench_config *bc,
                       uint64_t n, unsigned tensors, int per_tensor, char path, unsigned k);

/* Hand-rolled with CLBlast and bench/cl/handrolled.cl, one launch per tensor and
 * pass; feed 'A' (saxpy of separate gradient buffers every micro-step) or
 * 'B' (the backward wrote into the accumulator). Buffers are charged to the
 * context's budget. */
int bench_handrolled_create(bench_cycle *out, clg_context *ctx, const bench_config *bc,
                            uint64_t n, unsigned tensors, char feed, unsigned k, size_t wg);

void bench_cycle_destroy(bench_cycle *cy);

typedef struct bench_run_opts {
    unsigned warmup;   /* untimed cycles first */
    unsigned min_reps, max_reps;
    double target_ms;  /* calibrate reps to about this much cycle time */
} bench_run_opts;

/* Warms up, calibrates, then runs reps of (STREAM copy and triads, one
 * timed cycle) and fills c's times, reps, triad_gbs (the reference
 * triad's median), launch counts and derived fields (bytes must be set by
 * the caller before). all collects every STREAM repetition of the run.
 * Returns 0 or -1. */
int bench_run_case(bench_cycle *cy, bench_stream *st, clg_context *ctx,
                   const bench_run_opts *o, bench_stream_samples *all, bench_case *c);

#endif /* BENCH_CYCLE_H */
