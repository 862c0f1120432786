/* tune_choose.c - clgrad-tune: the best combination of the measured
 * configurations and switch-over size, the helpers' trial, and the
 * confirmation against CLBlast's defaults (tune_internal.h). */
#include "tune_internal.h"
#include "tune_pick.h"
#include "tuners.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the choice copies tune_pick's per-shape figures into the search's arrays */
_Static_assert(MLP_GEMMS_MAX <= PICK_MAX_SHAPES, "tune_pick must hold every GEMM shape");

/* The best (threshold, XgemmDirect, Xgemm) over the measured candidates
 * (tune_pick.h), in the baseline's terms. */
choice ts_choose(search *s, const double *baseline)
{
    const tune_request *q = s->req;
    static double ms[MAX_CANDIDATES * MLP_GEMMS_MAX];
    double mnk[MLP_GEMMS_MAX];
    unsigned count[MLP_GEMMS_MAX];
    int direct[MAX_CANDIDATES];
    for (size_t k = 0; k < q->n_shapes; k++) {
        mnk[k] = ts_mnk(&q->shapes[k]);
        count[k] = q->shapes[k].count;
    }
    for (size_t c = 0; c < s->n_cand; c++) {
        direct[c] = s->cand[c].direct;
        for (size_t k = 0; k < q->n_shapes; k++)
            ms[c * q->n_shapes + k] = s->cand[c].ok ? s->cand[c].ms[k] : INFINITY;
    }
    pick_problem p = {q->n_shapes, mnk, count, baseline, s->t0_size, TUNING_MAX_VALUE,
                      s->n_cand, direct, ms, MAX_SHAPE_RATIO, CAND_DEFAULT_DIRECT,
                      DIRECT_MARGIN};
    pick_result r = tune_pick(&p);
    choice c = {r.best.threshold, r.best.d, r.best.i, r.best.ms, {0}, r.best_any.ms, {0}};
    memcpy(c.shape_ms, r.best.shape_ms, q->n_shapes * sizeof *c.shape_ms);
    memcpy(c.any_shape_ms, r.best_any.shape_ms, q->n_shapes * sizeof *c.any_shape_ms);
    return c;
}

int ts_same_kernel(const search *s, const choice *c, size_t k)
{
    const mlp_gemm_shape *g = &s->req->shapes[k];
    int direct = mlp_gemm_is_direct(g, c->threshold);
    if (direct != mlp_gemm_is_direct(g, s->t0_size))
        return 0;
    if (direct)
        return c->d < 0 || ts_same_params(&s->cand[c->d].params, &s->d0);
    return (c->i < 0 || ts_same_params(&s->cand[c->i].params, &s->i0)) &&
           ts_same_params(&s->aux[0], &s->aux0[0]) && ts_same_params(&s->aux[1], &s->aux0[1]);
}

/* The time per micro-step of the shapes candidate c runs under threshold
 * (on XgemmDirect if direct, else on Xgemm). */
static double path_cost(const search *s, const candidate *c, size_t threshold, int direct)
{
    const tune_request *q = s->req;
    double t = 0;
    for (size_t k = 0; k < q->n_shapes; k++)
        if (mlp_gemm_is_direct(&q->shapes[k], threshold) == direct)
            t += q->shapes[k].count * (c->ok ? c->ms[k] : INFINITY);
    return t;
}

/* The chosen Xgemm configuration again, with the helpers' tuned
 * configurations: kept when the shapes on Xgemm get faster. */
void ts_try_aux(search *s, choice *c, const double *base)
{
    candidate *x = &s->cand[c->i];
    param_set want[2];
    int any = 0;
    for (int a = 0; a < 2; a++) {
        want[a] = s->aux_found[a];
        if (want[a].n == 0 || ts_complete(&s->aux0[a], &want[a]) != 0)
            want[a] = s->aux0[a];
        else
            any = 1;
    }
    if (!any)
        return;
    if (ts_now_s() + 2 * (s->build_s + 2.0) > s->deadline) {
        ts_note(s, "no time to try the tuned %s/%s with %s", ts_aux_kernels[0], ts_aux_kernels[1],
             x->origin);
        return;
    }
    ts_say(s, "running %s again with the tuned %s and %s", x->origin, ts_aux_kernels[0],
        ts_aux_kernels[1]);
    double ms[MLP_GEMMS_MAX];
    char why[256];
    s->aux[0] = want[0];
    s->aux[1] = want[1];
    int rc = ts_measure(s, &s->d0, &x->params, ALL_INDIRECT, ms, why, sizeof why);
    if (rc == 0)
        ts_in_baseline_terms(s, ms);
    double before = path_cost(s, x, c->threshold, 0);
    candidate trial = *x;
    memcpy(trial.ms, ms, sizeof ms);
    double after = rc == 0 ? path_cost(s, &trial, c->threshold, 0) : INFINITY;
    if (!(after < before)) {
        ts_note(s, "the tuned %s/%s did not help (%s)", ts_aux_kernels[0], ts_aux_kernels[1],
             rc == 0 ? "slower" : why);
        s->aux[0] = s->aux0[0];
        s->aux[1] = s->aux0[1];
        return;
    }
    ts_say(s, "the shapes on Xgemm: %.2f ms -> %.2f ms per micro-step with them", before, after);
    memcpy(x->ms, ms, sizeof ms);
    *c = ts_choose(s, base);
}

/* The chosen parameters as one program (a build of its own: the threshold
 * is part of CLBlast's program), checked on every shape, then timed in
 * rounds that alternate with CLBlast's defaults, so that both sides see the
 * same machine load; the figures reported and stored are these. Without
 * the time for it, the candidates' own figures stand (noted). */
void ts_confirm(search *s, choice *c, double *base)
{
    const tune_request *q = s->req;
    const param_set *d = c->d >= 0 ? &s->cand[c->d].params : &s->d0;
    const param_set *i = c->i >= 0 ? &s->cand[c->i].params : &s->i0;
    if (ts_now_s() + s->build_s + 2.0 > s->deadline) {
        ts_note(s, "no time to confirm the choice on its own build: the figures are the "
             "candidates'");
        return;
    }
    ts_say(s, "confirming the choice (XGEMM_MIN_INDIRECT_SIZE %zu) against CLBlast's defaults",
        c->threshold);
    double tuned[MLP_GEMMS_MAX][CONFIRM_ROUNDS], def[MLP_GEMMS_MAX][CONFIRM_ROUNDS];
    double ms[MLP_GEMMS_MAX];
    char why[256];
    for (int round = 0; round < CONFIRM_ROUNDS; round++) {
        int rc = ts_measure(s, d, i, c->threshold, ms, why, sizeof why);
        if (rc != 0) {
            /* a combination that fails where its parts passed: keep the
             * defaults rather than store it */
            ts_note(s, "the chosen combination failed (%s): CLBlast's defaults kept", why);
            c->d = c->i = -1;
            c->threshold = s->t0_size;
            c->ms = ts_step_ms(s, base);
            memcpy(c->shape_ms, base, q->n_shapes * sizeof *base);
            return;
        }
        for (size_t k = 0; k < q->n_shapes; k++)
            tuned[k][round] = ms[k];
        param_set keep[2] = {s->aux[0], s->aux[1]};
        s->aux[0] = s->aux0[0];
        s->aux[1] = s->aux0[1];
        rc = ts_measure(s, &s->d0, &s->i0, s->t0_size, ms, why, sizeof why);
        s->aux[0] = keep[0];
        s->aux[1] = keep[1];
        if (rc != 0)
            return;
        for (size_t k = 0; k < q->n_shapes; k++)
            def[k][round] = ms[k];
    }
    for (size_t k = 0; k < q->n_shapes; k++) {
        c->shape_ms[k] = gemm_median(tuned[k], CONFIRM_ROUNDS);
        base[k] = gemm_median(def[k], CONFIRM_ROUNDS);
    }
    c->ms = ts_step_ms(s, c->shape_ms);
    ts_say(s, "confirmed: %.2f ms per micro-step against %.2f ms with CLBlast's defaults",
        c->ms, ts_step_ms(s, base));
    if (!(c->ms < ts_step_ms(s, base))) {
        ts_note(s, "the choice (%.2f ms per micro-step) was not faster than CLBlast's defaults "
                "(%.2f ms) when confirmed: the defaults are stored", c->ms, ts_step_ms(s, base));
        c->d = c->i = -1;
        c->threshold = s->t0_size;
        memcpy(c->shape_ms, base, q->n_shapes * sizeof *base);
        c->ms = ts_step_ms(s, base);
        return;
    }
    for (size_t k = 0; k < q->n_shapes; k++)
        if (c->shape_ms[k] > MAX_SHAPE_RATIO * base[k] && !ts_same_kernel(s, c, k))
            ts_note(s, "%s %zux%zux%zu ran %.0f%% slower than with CLBlast's defaults when "
                    "confirmed (within %.0f%% on the figures it was chosen from)",
                    q->shapes[k].role, q->shapes[k].m, q->shapes[k].n, q->shapes[k].k,
                    100 * (c->shape_ms[k] / base[k] - 1), 100 * (MAX_SHAPE_RATIO - 1));
}

