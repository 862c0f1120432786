/* bench_main.h - clgrad-bench's options and the sections main() runs
 * (memory, launches, timed cases, end to end). */
#ifndef BENCH_MAIN_H
#define BENCH_MAIN_H

#include "configs.h"
#include "cycle.h"
#include "report.h"

#include <stdint.h>

#define BENCH_MAX_SIZES 8

typedef struct bench_options {
    const char *device;   /* selector, NULL: CLGRAD_DEVICE or default */
    uint64_t sizes[BENCH_MAX_SIZES];
    size_t n_sizes;
    unsigned k, tensors;
    uint64_t vram;        /* budget for the memory section and allocations */
    uint64_t stream_n;    /* floats per STREAM array */
    unsigned vw;          /* STREAM vector width */
    size_t wg;            /* work-group size of the bench's own kernels */
    bench_run_opts run;
    const char *configs;  /* comma-separated names, NULL: all */
    int quick, e2e, no_cases, no_gemm;
    const char *tuning;   /* the GEMM section's tuning: NULL/"auto", "off" or a file */
    const char *json_path, *csv_path, *plot_path;
    uint64_t fit, reserve, fit_params; /* --fit (0: a benchmark run), its reserve */
    unsigned fit_shards;               /* --shards: ZeRO-1 over this many cards */
    /* --dist: communication only, under mpirun (dist_run.c); its sizes are
     * `sizes` (default 2^22, 2^24; --quick 2^20) and its k the list below
     * (default 4 and 8; --quick 4; --k K: K alone) */
    int dist;
    unsigned dist_k[BENCH_MAX_SIZES];
    size_t n_dist_k;
} bench_options;

/* Parses argv into o (defaults first, then --quick's, then the flags).
 * Returns 0, 1 for --help (usage printed), -1 on a bad flag (message
 * printed). */
int bench_parse_options(bench_options *o, int argc, char **argv);
/* Whether configuration bc is selected by --configs. */
int bench_options_wants(const bench_options *o, const bench_config *bc);
/* Parses "16777216", "2^24", "8G", "8GiB", "512M"; 0 on error. */
uint64_t bench_parse_size(const char *s);

/* The report's device fields from the context's device (main.c). */
void bench_copy_device(bench_device *d, const clg_device_info *info);

int bench_memory_section(bench_report *r, uint64_t budget, unsigned k);
int bench_launch_section(bench_report *r, clg_context *ctx, const bench_options *o);
/* Runs every case for parameter count n. */
int bench_cases_section(bench_report *r, clg_context *ctx, bench_stream *st,
                        const bench_options *o, uint64_t n, bench_stream_samples *all);
/* The MLP's GEMM shapes, CLBlast's defaults against the device's tuning
 * (only when built with tools/gemm). */
int bench_gemm_section(bench_report *r, clg_context *ctx, const bench_options *o);
/* End to end with clgrad-train's code (only when built with it). */
int bench_e2e_section(bench_report *r, clg_context *ctx, const bench_options *o);
/* --fit: the planner alone (fit.h); returns the exit status. */
int bench_fit_run(clg_context *ctx, const bench_options *o);
/* --dist: initializes MPI, measures, finalizes; returns the exit status
 * (dist_run.c with libclgrad-mpi, else dist_none.c: refused). Nothing
 * else in clgrad-bench calls MPI. */
int bench_dist_main(const bench_options *o);

#endif /* BENCH_MAIN_H */
