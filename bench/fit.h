/* fit.h - the planner of clgrad-bench --fit: for every way of holding the
 * training state (state dtype, accumulator dtype, master weights, gradient
 * path, param copy), the bytes per parameter and the largest parameter
 * count whose whole training state fits a memory size after an activation
 * reserve, from clg_model_estimate (the library's own numbers), within the
 * device's max allocation. With shards R > 1 (ZeRO-1 over R cards), the
 * memory of one card, from clg_model_estimate_shard: its largest shard. */
#ifndef BENCH_FIT_H
#define BENCH_FIT_H

#include "clgrad.h"

#include <stdint.h>
#include <stdio.h>

typedef struct bench_fit_row {
    char config[64]; /* e.g. "q8 states, bf16 acc, fp32 master, path B" */
    clg_dtype state_dtype, acc_dtype, master_dtype, copy_dtype;
    char path[4];          /* "B" (no gradient buffer) or "A/C" (one, acc's dtype) */
    unsigned shards;       /* 1, or ZeRO-1 over this many cards (per card) */
    double bytes_per_param; /* slope of the estimate, gradient buffer included */
    uint64_t fixed_bytes;   /* what does not grow with the model */
    uint64_t max_params;    /* the largest that fits, a multiple of 1024 */
} bench_fit_row;

#define BENCH_FIT_MAX_ROWS 64

typedef struct bench_fit {
    uint64_t memory, reserve, max_alloc;
    unsigned shards;
    bench_fit_row rows[BENCH_FIT_MAX_ROWS];
    size_t n;
} bench_fit;

/* Every configuration, most bytes per parameter first. max_alloc: the
 * device's (models are cut into buffers of at most that). shards > 1: per
 * card of ZeRO-1 over that many, without the configurations a sharded
 * model refuses. Returns 0, or -1 (message printed) if the estimate fails
 * or reserve >= memory. */
int bench_fit_compute(bench_fit *f, uint64_t memory, uint64_t reserve, uint64_t max_alloc,
                      unsigned shards);
/* The largest n whose state fits memory - reserve under row's config
 * (exposed for the tests). */
uint64_t bench_fit_max_params(const bench_fit_row *row, uint64_t budget, uint64_t max_alloc);
/* Of the rows that fit params, the one that rounds least: fp32 master
 * weights before bf16, then the accumulator, then the states (fp32, bf16,
 * Q8, Q4); of equals, the fewest bytes per parameter. NULL if none fits. */
const bench_fit_row *bench_fit_choose(const bench_fit *f, uint64_t params);
/* The table, and for want (0: 0.5, 1, 2 and 4 billion) parameters the
 * configuration bench_fit_choose picks. */
void bench_fit_print(const bench_fit *f, FILE *out, uint64_t want);
/* {"memory", "reserve", "max_alloc", "shards", "fit": [{"config", "state_dtype",
 * "acc_dtype", "master_dtype", "copy_dtype", "path", "bytes_per_param",
 * "fixed_bytes", "max_params"}]}. */
int bench_fit_write_json(const bench_fit *f, const char *path);
/* Parameters that fit per configuration, as a PNG (gnuplot). */
int bench_fit_write_plot(const bench_fit *f, const char *png);

#endif /* BENCH_FIT_H */
