/* tune_choose.c - clgrad-tune: the best combination of the measured
 * configurations and switch-over size, the helpers' trial, and the
 * confirmation against CLBlast's defaults (tune_internal.h). */
#include "tune_internal.h"
#include "tuners.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The smallest T with T^3 > x. */
size_t ts_cube_above(double x)
{
    size_t t = (size_t)cbrt(x);
    while ((double)t * t * t <= x)
        t++;
    while (t > 1 && (double)(t - 1) * (t - 1) * (t - 1) > x)
        t--;
    return t;
}


double ts_path_cost(const search *s, const candidate *c, size_t threshold, int direct,
                        double *shape_ms)
{
    const tune_request *q = s->req;
    double t = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        if (mlp_gemm_is_direct(&q->shapes[k], threshold) != direct)
            continue;
        double ms = c->ok ? c->ms[k] : INFINITY;
        t += q->shapes[k].count * ms;
        if (shape_ms)
            shape_ms[k] = ms;
    }
    return t;
}

/* The best (threshold, XgemmDirect, Xgemm) over the measured candidates. */
choice ts_choose(search *s, const double *baseline)
{
    const tune_request *q = s->req;
    choice best = {s->t0_size, -1, -1, ts_step_ms(s, baseline), {0}};
    memcpy(best.shape_ms, baseline, q->n_shapes * sizeof *baseline);
    double v[MLP_GEMMS_MAX];
    size_t u = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        size_t j = 0;
        while (j < u && v[j] != ts_mnk(&q->shapes[k]))
            j++;
        if (j == u)
            v[u++] = ts_mnk(&q->shapes[k]);
    }
    for (size_t a = 0; a < u; a++)
        for (size_t b = a + 1; b < u; b++)
            if (v[b] < v[a]) {
                double x = v[a];
                v[a] = v[b];
                v[b] = x;
            }
    for (size_t j = 0; j <= u; j++) {
        /* the first j sizes go to XgemmDirect */
        size_t th;
        if (j == 0) {
            /* CLBlast's own value if it already sends every shape to Xgemm,
             * else the largest that does */
            size_t cap = ts_cube_above(v[0]) - 1;
            th = s->t0_size <= cap ? s->t0_size : cap > 0 ? cap : 1;
        } else if (j == u) {
            th = ts_cube_above(v[u - 1]);
            th = th > s->t0_size ? th : s->t0_size;
        } else {
            /* between the two sizes, geometric middle */
            size_t lo = ts_cube_above(v[j - 1]);
            double mid = cbrt(sqrt(v[j - 1] * v[j]));
            th = (size_t)mid > lo ? (size_t)mid : lo;
            if ((double)th * th * th > v[j])
                continue; /* no integer threshold between them */
        }
        if (th > TUNING_MAX_VALUE)
            th = TUNING_MAX_VALUE;
        for (size_t di = 0; di < s->n_cand; di++) {
            if (!s->cand[di].direct)
                continue;
            for (size_t ii = 0; ii < s->n_cand; ii++) {
                if (s->cand[ii].direct)
                    continue;
                double shape_ms[MLP_GEMMS_MAX];
                double t = ts_path_cost(s, &s->cand[di], th, 1, shape_ms) +
                           ts_path_cost(s, &s->cand[ii], th, 0, shape_ms);
                if (t < best.ms) {
                    best.ms = t;
                    best.threshold = th;
                    best.d = (int)di;
                    best.i = (int)ii;
                    memcpy(best.shape_ms, shape_ms, q->n_shapes * sizeof *shape_ms);
                }
            }
        }
    }
    return best;
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
    double before = ts_path_cost(s, x, c->threshold, 0, NULL);
    candidate trial = *x;
    memcpy(trial.ms, ms, sizeof ms);
    double after = rc == 0 ? ts_path_cost(s, &trial, c->threshold, 0, NULL) : INFINITY;
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
    double tuned[MLP_GEMMS_MAX][ROUNDS], def[MLP_GEMMS_MAX][ROUNDS], ms[MLP_GEMMS_MAX];
    char why[256];
    for (int round = 0; round < ROUNDS; round++) {
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
        c->shape_ms[k] = gemm_median(tuned[k], ROUNDS);
        base[k] = gemm_median(def[k], ROUNDS);
    }
    c->ms = ts_step_ms(s, c->shape_ms);
    ts_say(s, "confirmed: %.2f ms per micro-step against %.2f ms with CLBlast's defaults",
        c->ms, ts_step_ms(s, base));
}

