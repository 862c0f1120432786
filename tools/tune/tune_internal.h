/* tune_internal.h - the state of clgrad-tune's procedure (tune_search.h),
 * shared by its files: tune_measure.c (building, checking and timing a
 * parameter set, progress lines), tune_candidates.c (CLBlast's tuners and
 * their configurations on the real shapes), tune_choose.c (the best
 * combination, the helpers' trial, the confirmation) and tune_search.c (the
 * procedure and the file's records). Not part of gemm_runtime (tools/gemm/). */
#ifndef TUNE_TUNE_INTERNAL_H
#define TUNE_TUNE_INTERNAL_H

#include "clblast_params.h"
#include "gemm_timing.h"
#include "tune_search.h"

#include <stddef.h>
#include <sys/types.h>

#define MAX_CANDIDATES 24
/* The first two candidates: CLBlast's own XgemmDirect and Xgemm
 * configurations, with the baseline's figures on their default paths */
#define CAND_DEFAULT_DIRECT 0
#define CAND_DEFAULT_XGEMM 1
/* What another XgemmDirect configuration must gain over CLBlast's own on
 * the shapes below the switch-over size to be chosen (tune_pick.h) */
#define DIRECT_MARGIN 0.10
#define MAX_PREBUILD 8
/* XGEMM_MIN_INDIRECT_SIZE that sends every shape to XgemmDirect (m n k is
 * compared with its cube) or to Xgemm. */
#define ALL_DIRECT 65536
#define ALL_INDIRECT 1
/* Timing: rounds over all shapes, each call repeated for about this long. */
#define ROUNDS 3
/* The confirmation's rounds, each a measurement of the choice and of the
 * defaults (alternating), medians of these stored: its figures are the
 * ones reported */
#define CONFIRM_ROUNDS 5
#define TARGET_MS 15.0

typedef struct param_set {
    size_t n;
    clblast_param p[TUNING_MAX_PARAMS];
} param_set;

typedef struct candidate {
    int direct;            /* an XgemmDirect (1) or an Xgemm (0) configuration */
    param_set params;
    char origin[48];
    double tuner_gflops;
    int run, ok;
    int seed;              /* a known configuration (previous tuning, tune_seeds.h) */
    int prebuilt;          /* built by another process (tune_prebuild.h) */
    double ms[MLP_GEMMS_MAX]; /* per shape on its path; INFINITY when not run */
} candidate;

/* The kernels Xgemm needs around it (tune_measure.c), with the tuner of each. */
extern const char *const ts_aux_kernels[2];
extern const char *const ts_aux_tuners[2];

typedef struct search {
    clg_context *ctx;
    cl_device_id dev;
    const tune_request *req;
    tune_outcome *out;
    double t0, deadline, build_s;
    param_set d0, i0, r0;   /* CLBlast's own XgemmDirect, Xgemm, GemmRoutine */
    size_t t0_size;         /* its XGEMM_MIN_INDIRECT_SIZE */
    /* Xgemm's helpers (ts_aux_kernels): CLBlast's own parameters, the best
     * configuration their tuners found (n = 0: none), and the ones every
     * measurement uses now */
    param_set aux0[2], aux_found[2], aux[2];
    gemm_bufs bufs;
    double base[MLP_GEMMS_MAX]; /* CLBlast's defaults, per shape, at the start */
    candidate cand[MAX_CANDIDATES];
    size_t n_cand;
    char phase[96];
    /* builds in other processes (tune_prebuild.h): how many processes may
     * build at once, this one included (0 or 1: none), those running */
    unsigned prebuild_jobs;
    pid_t prebuild[MAX_PREBUILD];
    size_t n_prebuild;
    double last_build_s; /* the last ts_measure's builds */
} search;

typedef struct choice {
    size_t threshold;
    int d, i;            /* candidate index, -1: CLBlast's default */
    double ms;
    double shape_ms[MLP_GEMMS_MAX];
    double any_ms;       /* the best without the per-shape limit */
    double any_shape_ms[MLP_GEMMS_MAX];
} choice;

/* The per-shape limit of the choice against CLBlast's defaults. */
#define MAX_SHAPE_RATIO 1.05

double ts_now_s(void);
void ts_say(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_note(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double ts_mnk(const mlp_gemm_shape *g);
int ts_get_params(search *s, const char *kernel, param_set *ps, char *err, size_t errlen);
int ts_set_params(search *s, const char *kernel, const param_set *ps, char *err, size_t errlen);
param_set ts_routine_params(size_t min_indirect);
/* ts_build, then ts_time: 0, or -1 with why. */
int ts_measure(search *s, const param_set *d, const param_set *i, size_t threshold, double *ms,
               char *why, size_t whylen);
/* Makes CLBlast use (d, i, threshold) and the helpers' s->aux, and runs
 * every shape once: what that needs is built (s->last_build_s seconds). 0,
 * or -1 with why (a refused parameter set, a failed build or launch). */
int ts_build(search *s, const param_set *d, const param_set *i, size_t threshold, char *why,
             size_t whylen);
/* Checks every shape against the host with what ts_build set, then times
 * them all: ms[] per shape. 0, or -1 with why (a wrong result). */
int ts_time(search *s, double *ms, char *why, size_t whylen);
/* ms[] (just measured) in the terms of the baseline s->base. */
void ts_in_baseline_terms(search *s, double *ms);
double ts_step_ms(const search *s, const double *ms);
double ts_step_gflop(const tune_request *q);

size_t ts_round_up(size_t x, size_t m);
void ts_run_tuner(search *s, const char *program, int direct, size_t m, size_t n, size_t k,
                  double seconds, unsigned top);
void ts_run_aux_tuner(search *s, int a, size_t m, size_t n, double seconds);
/* a and b name the same parameters, in the same order, with the same values */
int ts_same_params(const param_set *a, const param_set *b);
/* c in ref's names and order; -1 if c lacks one of them. */
int ts_complete(const param_set *ref, param_set *c);
/* Adds a configuration of XgemmDirect (direct) or Xgemm as a candidate,
 * in CLBlast's order of names; NULL if it is not one of CLBlast's, is
 * there already, or there is no room. */
candidate *ts_add_candidate(search *s, int direct, const param_set *p, const char *origin);
/* The device's previous tuning and its class's seeds, as candidates. */
void ts_add_known(search *s);
/* Runs the candidates not run yet, each only if it and reserve_builds more
 * builds fit before `until` (a time of ts_now_s). */
void ts_run_candidates(search *s, double until, int reserve_builds);
/* The share of the budget the known configurations may take before the
 * tuners start (the tuners and the final builds need the rest). */
#define KNOWN_SHARE 0.6
/* With a previous tuning: seconds for the known configurations, so that
 * the run, with the confirmation, stays under a minute. */
#define REFINE_S 35.0

choice ts_choose(search *s, const double *baseline);
/* Whether shape k runs the same kernel with the same parameters under c
 * as with CLBlast's defaults (then a difference in time is noise). */
int ts_same_kernel(const search *s, const choice *c, size_t k);
void ts_try_aux(search *s, choice *c, const double *base);
void ts_confirm(search *s, choice *c, double *base);

#endif /* TUNE_TUNE_INTERNAL_H */
