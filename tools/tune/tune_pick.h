/* tune_pick.h - clgrad-tune's choice among measured configurations, apart
 * from any device so that it can be tested on synthetic timings.
 *
 * CLBlast's GEMM takes one switch-over size, XGEMM_MIN_INDIRECT_SIZE = T:
 * a shape with m n k < T^3 runs XgemmDirect, any other Xgemm. So a tuning
 * is a triple (T, XgemmDirect configuration, Xgemm configuration), and a
 * shape cannot pick its path alone: the shapes below T all take the one
 * XgemmDirect configuration, those above the one Xgemm configuration.
 *
 * tune_pick returns the triple with the least GEMM time per micro-step
 * (the sum over the shapes of calls x time), among those that make no
 * shape slower than max_ratio x its time with CLBlast's defaults, and
 * CLBlast's defaults themselves when no triple beats them on that sum: a
 * tuning is never slower than the defaults on the figures it was chosen
 * from. It also returns the best triple without the per-shape limit, so
 * that the caller can say what the limit cost.
 *
 * The small shapes' timings move by 10-20% from one measurement to the
 * next (calls of 20-50 us on PoCL), and a choice made on that noise came
 * out slower than the defaults on them when confirmed: so the best
 * triple's XgemmDirect configuration, if not CLBlast's own, gives way to
 * CLBlast's own unless it runs the shapes below the switch-over size at
 * least direct_margin faster in all (where CLBlast's own ran them all). */
#ifndef TUNE_TUNE_PICK_H
#define TUNE_TUNE_PICK_H

#include <stddef.h>

#define PICK_MAX_SHAPES 32

typedef struct pick_problem {
    size_t n_shapes;               /* <= PICK_MAX_SHAPES */
    const double *mnk;             /* m n k of each shape */
    const unsigned *count;         /* calls of each shape per micro-step */
    const double *base;            /* ms of each shape with CLBlast's defaults */
    size_t default_threshold;      /* CLBlast's XGEMM_MIN_INDIRECT_SIZE */
    size_t max_threshold;          /* the largest value a tuning may hold */
    size_t n_cand;
    const int *direct;             /* per candidate: XgemmDirect (1) or Xgemm (0) */
    const double *ms;              /* n_cand x n_shapes: candidate c's time for shape k
                                      on its own path; INFINITY where not measured */
    double max_ratio;              /* per-shape limit against base, e.g. 1.05 */
    /* CLBlast's own XgemmDirect configuration among the candidates (-1:
     * not there), and what another must gain over it in all on the shapes
     * below the switch-over size to be chosen for them, e.g. 0.10 */
    int default_direct;
    double direct_margin;
} pick_problem;

typedef struct pick_choice {
    size_t threshold;
    int d, i;                      /* candidate indices; -1 both: CLBlast's defaults */
    double ms;                     /* per micro-step */
    double shape_ms[PICK_MAX_SHAPES];
} pick_choice;

typedef struct pick_result {
    pick_choice best;              /* within max_ratio on every shape */
    pick_choice best_any;          /* without that limit */
} pick_result;

pick_result tune_pick(const pick_problem *p);

/* Whether a shape of m n k = mnk runs XgemmDirect under threshold t. */
int pick_is_direct(double mnk, size_t t);

#endif /* TUNE_TUNE_PICK_H */
