/* tune_search.h - clgrad-tune's procedure: tune CLBlast's GEMM kernels for
 * one device at the GEMM shapes a model runs, within a time budget.
 *
 *  1. Which kernels: CLBlast's Xgemm routine runs a GEMM with XgemmDirect
 *     (one kernel) when m n k < XGEMM_MIN_INDIRECT_SIZE^3 (a GemmRoutine
 *     parameter) and with Xgemm plus copy/pad/transpose kernels otherwise.
 *     The defaults for the device are read from CLBlast and each shape's
 *     kernel is reported.
 *  2. Baseline: the shapes timed with CLBlast's own parameters.
 *  2b. Known configurations, measured first (tune_seeds.h): the device's
 *     previous tuning, if clgrad-tune made one for this device key, then
 *     the starting configurations of the device's class (CPU, NVIDIA,
 *     AMD, Intel GPU). With a previous tuning the tuners are skipped (the
 *     run re-measures it, the seeds and the defaults, and keeps the best:
 *     a second run takes well under a minute once PoCL's cache has the
 *     builds); --fresh ignores the previous tuning.
 *  3. Search (about 55% of what is left): CLBlast's tuners, one run each of
 *     clblast_tuner_xgemm_direct and clblast_tuner_xgemm at the shape with
 *     the most FLOPs (the tuners take one shape; Xgemm's needs m and n in
 *     multiples of 64 and k of 32, so that one is rounded up), then of the
 *     tuners of the two helpers Xgemm runs on these shapes (Padtranspose:
 *     W of every forward GEMM is transposed and padded on each call; Pad:
 *     padded copies of operands and results), each stopped at the end of
 *     its slice (tuners.h).
 *  4. Selection (the rest): the fastest configurations of each tuner, and
 *     CLBlast's defaults, are run on the real shapes through the trainer's
 *     own call (mlp_gemm): every XgemmDirect candidate with all shapes forced
 *     onto XgemmDirect, every Xgemm candidate with all forced onto Xgemm,
 *     each checked against a host product first, and each followed by
 *     CLBlast's defaults again, whose time against the baseline's scales the
 *     candidate's (the load of a shared machine drifts over minutes, and
 *     candidates are compared in the baseline's terms). Why not the tuners' own
 *     figures: they time one kernel variant (XgemmDirectTN, or Xgemm
 *     without its pre/post-processing) at one shape, while the trainer's
 *     shapes use other variants and sizes that are not multiples of the
 *     tiles. Then XGEMM_MIN_INDIRECT_SIZE is chosen among the values that
 *     split the shapes by m n k differently, with the best XgemmDirect
 *     configuration for the shapes below it and the best Xgemm one for
 *     those above: the triple with the least time per micro-step wins
 *     among those that make no shape more than 5% slower than CLBlast's
 *     defaults (tune_pick.h; CLBlast's defaults included, so a tuning is
 *     never slower than them on the measurements it was chosen from; what
 *     the 5% limit cost is noted; another XgemmDirect configuration than
 *     CLBlast's own must gain 10% on the shapes below the switch-over size,
 *     whose timings are noisy). If Xgemm won shapes, the
 *     winner is run again with the helpers' tuned parameters, kept if
 *     faster. The choice is then built as one program, checked, and timed
 *     in rounds alternating with CLBlast's defaults: those are the figures
 *     stored. If the choice is then not faster than the defaults per
 *     micro-step, the defaults are stored instead; a shape more than 5%
 *     slower than its default in those rounds is named in the notes.
 * Each candidate costs one build of CLBlast's GEMM program (several seconds
 * on PoCL; a second one for the strided batched GEMM when the shapes have
 * batched ones); a candidate is skipped when it would end past the budget,
 * so the budget is kept to within about one build. While a candidate
 * builds, other processes build the next ones into the driver's cache
 * (tune_prebuild.h). The shapes are any set with their calls per
 * micro-step: clgrad-tune takes them from the trainer's task (task.h's
 * gemms), the MLP's or the GPT's. */
#ifndef TUNE_TUNE_SEARCH_H
#define TUNE_TUNE_SEARCH_H

#include "clgrad.h"
#include "mlp_gemms.h"
#include "tuning_file.h"

typedef struct tune_request {
    double budget_s;
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes;
    char model[128];       /* what the shapes are, for the file and the log */
    unsigned top;          /* candidates per tuner to run on the shapes */
    const tuning *previous; /* the device's previous tuning (NULL: none); with
                               it the tuners are skipped */
    int quiet;             /* no progress on stderr */
    const char *device;    /* the device as selected (NULL: clgrad's pick), for
                              the processes that build candidates meanwhile */
    unsigned build_jobs;   /* builds at once, this process's included (1: no
                              other processes; tune_prebuild.h) */
} tune_request;

typedef struct tune_shape_result {
    double ms_default, ms_tuned;
    int direct_default, direct_tuned;   /* XgemmDirect (1) or Xgemm (0) */
    int same_kernel;                    /* the tuning runs it as the defaults do:
                                           the same kernel and parameters */
    double ms_best;                     /* the fastest any candidate ran it */
    int direct_best;                    /* and on which kernel */
} tune_shape_result;

typedef struct tune_outcome {
    tuning t;                           /* what to store */
    tune_shape_result shape[MLP_GEMMS_MAX];
    double step_ms_default, step_ms_tuned;
    size_t direct_tried, indirect_tried, candidates_run;
    double seconds;
    size_t seeds_run;                   /* of those, known configurations */
    const char *device_class;           /* tune_device_class_name */
    char notes[2048];                   /* what was skipped and why */
} tune_outcome;

/* Runs the procedure on ctx's device. 0, or -1 with why in err (nothing
 * could be measured). Progress goes to stderr unless req->quiet. */
int tune_search(clg_context *ctx, const tune_request *req, tune_outcome *out, char *err,
                size_t errlen);

#endif /* TUNE_TUNE_SEARCH_H */
