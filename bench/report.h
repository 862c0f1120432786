/* report.h - everything clgrad-bench measured, in one structure that the
 * table, JSON, CSV and plot writers read. */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include "bytes_model.h"
#include "timing.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bench_device {
    char name[128], vendor[128], driver[128], platform[128], version[128];
    uint64_t global_mem_bytes, max_alloc_bytes;
    unsigned compute_units;
} bench_device;

/* One measured cycle configuration. Times are per repetition, summarized
 * over repetitions; bytes are per parameter from bytes_model.h. */
typedef struct bench_case {
    char optimizer[32]; /* configuration name (configs.c) */
    bench_variant variant;
    char path;          /* 'A', 'B', 'C' for fused; '-' otherwise */
    char feed;          /* how gradients arrive: 'A' buffers, 'B' in place */
    int clip;
    uint64_t n;
    unsigned k, tensors, groups; /* groups: clgrad param groups in all (per_tensor: one
                                    model of one group per tensor), or tensors */
    unsigned reps;
    /* micro_ms: one micro-step that neither starts nor ends the cycle (the
     * first one when k == 2); update_ms: the micro-step that ends the cycle
     * together with the update; cycle_ms: all k micro-steps. */
    bench_stat micro_ms, update_ms, cycle_ms;
    double micro_bytes, update_bytes, cycle_bytes; /* per parameter */
    double micro_gbs, update_gbs, gbs;             /* from the medians */
    double triad_gbs;                              /* interleaved triad median */
    /* fractions of the triad: medians over repetitions of (GB/s of the
     * repetition / reference triad of the same repetition), so that drift
     * in the machine's bandwidth between repetitions cancels; their
     * spreads below (without per-repetition data: GB/s / triad_gbs) */
    double micro_frac, update_frac, frac_of_triad;
    bench_stat micro_frac_reps, update_frac_reps, frac_reps;
    double launches_per_update; /* the step that ends the cycle */
    double launches_per_cycle;
    double host_syncs_per_update; /* blocking reads the cycle needs */
} bench_case;

/* Fused cycle against the other two variants fed the same way (cycle
 * medians; > 1 means fused is faster). 0 when a partner is missing. */
typedef struct bench_speedup {
    char optimizer[32];
    char path; /* fused path: A and C are fed like unfused A, B like B */
    int clip;
    uint64_t n;
    unsigned k;
    double vs_unfused, vs_per_tensor;
} bench_speedup;

typedef struct bench_memory {
    char config[32];
    char path[4]; /* "B" (no gradient buffers) or "A/C" */
    double bytes_per_param;
    /* per-parameter parts */
    double params, accumulators, states, param_copy, grad_buffers;
    uint64_t fixed_bytes;         /* independent of n (step block, ...) */
    uint64_t max_params_in_budget;
    uint64_t budget_bytes;
} bench_memory;

/* Launches per update of the fused cycle for 1 tensor and for many. */
typedef struct bench_launch_check {
    char optimizer[32];
    char path;
    unsigned tensors_many;
    double launches_1, launches_many;
} bench_launch_check;

typedef struct bench_e2e {
    unsigned k, micro_batch;
    double samples_per_s;
    uint64_t peak_device_bytes;
} bench_e2e;

/* One GEMM shape of clgrad-train's MLP (tools/gemm/mlp_gemms.h, row-major
 * view) through the trainer's own call, with CLBlast's default parameters
 * and with the device's tuning (clgrad-tune), timed in alternating rounds.
 * GFLOP/s from 2 m n k / median time; gflops_triad_bound is what the GEMM
 * would reach if it moved only its operands once (4 (mk + kn + mn) bytes)
 * at the median reference triad: far above the measured rate means the
 * kernel is bound by arithmetic or launches, not by memory. */
typedef struct bench_gemm {
    char role[32];                 /* "fc1 forward", ... */
    unsigned m, n, k;
    char transa, transb;           /* 'N' or 'T' */
    unsigned count;                /* calls per micro-step */
    char kernel_default[16], kernel_tuned[16]; /* "XgemmDirect" or "Xgemm" */
    bench_stat ms_default, ms_tuned;
    double gflops_default, gflops_tuned, speedup;
    double gflops_triad_bound;
} bench_gemm;

/* --dist (mpirun -np R clgrad-bench --dist): what one update of a mode
 * costs in communication beside a baseline that exchanges every
 * micro-step's gradient. The mode: one cycle of k micro-steps, one
 * exchange at its end. Baseline ("sync every micro-step", as DDP without
 * no_sync): a model with accum_steps = 1 stepped k times through
 * clg_dist_step, i.e. k cycle ends and k exchanges per k micro-steps (it
 * also runs k optimizer updates, which DDP without no_sync would not; only
 * its communication is compared). Everything from rank 0's
 * clg_dist_counters (deltas per update), medians over repetitions that
 * alternate which of the two runs first. */
typedef struct bench_dist_cost {
    /* bytes per update (medians; the same every repetition) */
    double bytes_sent, bytes_received, sync_bytes_sent, sync_bytes_received;
    double bytes_ratio; /* sync_bytes_sent / bytes_sent */
    /* ms per update in MPI calls (counters' comm_seconds), in staging
     * copies (staging_seconds), and wall clock of the k micro-steps */
    bench_stat comm_ms, sync_comm_ms, staging_ms, sync_staging_ms, update_ms, sync_update_ms;
    /* per repetition sync_comm / comm, paired like frac_of_triad */
    bench_stat comm_ratio;
} bench_dist_cost;

/* The replicated mode (DDP): one reduction per cycle. */
typedef struct bench_dist {
    char mode[8];      /* "ddp" */
    int ranks;
    uint64_t n;
    unsigned k, tensors, reps;
    double model_bytes; /* the documented 2 (R-1)/R * 4 * n, each way */
    bench_dist_cost ddp;
} bench_dist;

/* One ZeRO-1 row, beside the DDP row (bench_dist, above) of the same N
 * and k: a model sharded as (rank, R) under CLG_DIST_ZERO1, one
 * reduce-scatter and one all-gather per cycle; its baseline, the same
 * sharded model with accum_steps = 1 stepped k times. bench_dist has no
 * fields for the states, so these rows are not in the report: --dist
 * prints them after its table and adds them to the JSON file as a section
 * of their own, "dist_zero1" (dist_report.c). */
typedef struct bench_dist_zero1 {
    int ranks;
    uint64_t n;
    unsigned k, tensors, reps;
    /* rank 0's shard and the layout space it is cut from (elements,
     * clg_model_shard_range): what the exact byte count needs */
    uint64_t layout_elements, shard_elements;
    bench_dist_cost zero1;
    double ddp_bytes_sent; /* the DDP row's, for the table */
    bench_stat vs_ddp;     /* per repetition zero1 / ddp comm ms */
    /* optimizer-state bytes (clg_model_memory's plan.states): rank 0's, the
     * largest over ranks, and the unsharded DDP model's */
    uint64_t states_rank0, states_max, states_unsharded;
} bench_dist_zero1;

/* One STREAM kernel configuration tried at setup (median GB/s over the
 * sweep's rounds). form: "copy", "triad", "triad_nt", "triad_inplace". */
typedef struct bench_stream_trial {
    char form[16];
    unsigned vw;
    size_t wg;
    double gbs;
} bench_stream_trial;

typedef struct bench_report {
    bench_device device;
    int quick;
    unsigned k, tensors;
    uint64_t budget_bytes;
    uint64_t stream_n; /* elements per STREAM array */
    /* the reference triad: the fastest form, vector width and work-group
     * size of the sweep; every frac_of_triad divides by it */
    char triad_form[16];
    unsigned stream_vw;
    size_t stream_local;
    unsigned copy_vw, classic_vw;
    size_t copy_local, classic_local;
    bench_stat copy_gbs, triad_gbs;
    /* the classic a = b + s*c at its own best shape, interleaved alike */
    bench_stat triad_classic_gbs;
    bench_stream_trial *sweep; /* every configuration tried at setup */
    size_t n_sweep;
    /* diagnostic: the triad as a grid-stride loop over `gridstride_groups`
     * work-groups (clgrad's launch shape before commit 04af500) */
    bench_stat triad_gridstride_gbs;
    unsigned gridstride_groups;

    bench_case *cases;
    size_t n_cases, cap_cases;
    bench_speedup *speedups;
    size_t n_speedups, cap_speedups;
    bench_memory *memory;
    size_t n_memory, cap_memory;
    bench_launch_check *launch_checks;
    size_t n_launch_checks, cap_launch_checks;
    bench_e2e *e2e;
    size_t n_e2e, cap_e2e;
    bench_gemm *gemm;
    size_t n_gemm, cap_gemm;
    bench_dist *dist;  /* --dist only */
    size_t n_dist, cap_dist;
    int dist_run;      /* a --dist run: the table has no STREAM or cases */
    /* the tuning the "tuned" GEMM figures ran with: its file, or "" when
     * there was none (then tuned = CLBlast's defaults, said in the notes) */
    char gemm_tuning[1024];
    int gemm_tuned;
    unsigned gemm_micro_batch, gemm_rounds;
    double gemm_step_ms_default, gemm_step_ms_tuned; /* one micro-step's GEMMs */
    char **notes; /* clamps, skipped cases: said, not hidden */
    size_t n_notes, cap_notes;
} bench_report;

/* Appenders return a pointer to the new zeroed element, NULL if out of
 * memory. */
bench_case *bench_report_add_case(bench_report *r);
bench_speedup *bench_report_add_speedup(bench_report *r);
bench_memory *bench_report_add_memory(bench_report *r);
bench_launch_check *bench_report_add_launch_check(bench_report *r);
bench_e2e *bench_report_add_e2e(bench_report *r);
bench_gemm *bench_report_add_gemm(bench_report *r);
bench_dist *bench_report_add_dist(bench_report *r);
/* Adds a printf-formatted note; returns 0 or -1. */
int bench_report_note(bench_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_report_free(bench_report *r);

/* Fills the derived fields of c (bandwidths, fractions) from its times,
 * bytes and triad_gbs. */
void bench_case_derive(bench_case *c);
/* Replaces c's fractions by the medians (and spreads) of per-repetition
 * fractions: repetition r ran the reference triad at triad[r] GB/s next to
 * a cycle of micro[r], update[r] and cycle[r] ms. Bytes and n must be set.
 * Returns 0, or -1 if out of memory. */
int bench_case_paired_fracs(bench_case *c, const double *micro, const double *update,
                            const double *cycle, const double *triad, size_t reps);
/* Computes the speed-up list from the cases (replacing any there). */
int bench_report_speedups(bench_report *r);

/* Finds the case of (optimizer, variant, path, feed, n); NULL if absent. */
const bench_case *bench_report_find(const bench_report *r, const char *optimizer,
                                    bench_variant variant, char path, char feed,
                                    uint64_t n);

/* Writers; each returns 0 or -1 (with a message on stderr). */
int bench_write_json(const bench_report *r, const char *path);
int bench_write_csv(const bench_report *r, const char *path);
int bench_write_plot(const bench_report *r, const char *png_path);
void bench_print_table(const bench_report *r);

/* Texts for the table and the plot, in buf (returned): "2^24" for a power
 * of two, else the number; "median [min-max]" of a summary, %.4g each. */
const char *bench_size_text(uint64_t n, char *buf, size_t len);
const char *bench_stat_text(bench_stat s, char *buf, size_t len);

#endif /* BENCH_REPORT_H */
