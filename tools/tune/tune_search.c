/* tune_search.c - clgrad-tune's procedure (see tune_search.h). */
#include "tune_internal.h"
#include "clgrad_advanced.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --------------------------------------------------------------- main */

static void to_record(tuning_kernel *k, const char *name, const param_set *p)
{
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->precision = 32;
    k->n = p->n;
    for (size_t i = 0; i < p->n; i++) {
        snprintf(k->param[i], sizeof k->param[i], "%s", p->p[i].name);
        k->value[i] = p->p[i].value;
    }
}

static void utc_now(char *out, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What the 5% per-shape limit cost: the faster choice it excluded, and
 * the shapes that made it excluded. */
static void limit_note(search *s, const choice *c, const double *base)
{
    char worst[160] = "";
    double ratio = 0;
    for (size_t k = 0; k < s->req->n_shapes; k++)
        if (c->any_shape_ms[k] / base[k] > ratio) {
            ratio = c->any_shape_ms[k] / base[k];
            const mlp_gemm_shape *g = &s->req->shapes[k];
            snprintf(worst, sizeof worst, "%s %zux%zux%zu", g->role, g->m, g->n, g->k);
        }
    ts_note(s, "not taken: %.2f ms per micro-step (against %.2f ms) with %s %.0f%% slower than "
            "with CLBlast's defaults (CLBlast's one switch-over size sends every shape above it "
            "to the one Xgemm configuration, so shapes cannot pick their kernel alone)",
            c->any_ms, c->ms, worst, 100 * (ratio - 1));
}

/* The fastest time any measured candidate had for shape k, from the
 * baseline's terms into those of base (the defaults as confirmed). */
static void best_seen(const search *s, size_t k, const double *base, tune_shape_result *r)
{
    r->ms_best = INFINITY;
    for (size_t c = 0; c < s->n_cand; c++)
        if (s->cand[c].ok && s->cand[c].ms[k] < r->ms_best) {
            r->ms_best = s->cand[c].ms[k];
            r->direct_best = s->cand[c].direct;
        }
    r->ms_best *= ts_step_ms(s, base) / ts_step_ms(s, s->base);
}

int tune_search(clg_context *ctx, const tune_request *req, tune_outcome *out, char *err,
                size_t errlen)
{
    search *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    memset(out, 0, sizeof *out);
    s->ctx = ctx;
    s->dev = clg_context_device(ctx);
    s->req = req;
    s->out = out;
    s->t0 = ts_now_s();
    s->deadline = s->t0 + req->budget_s;
    /* a build of CLBlast's GEMM program takes 6-12 s on 2 PoCL cores; until
     * one is measured, assume a few seconds rather than none */
    s->build_s = 4.0;
    s->prebuild_jobs = req->build_jobs;
    int rc = -1;
    char why[512];
    const clg_device_info *info = clg_context_device_info(ctx);
    tuning *t = &out->t;

    /* 1. CLBlast's own parameters (before anything overrides them). */
    if (tuning_restore_defaults(ctx, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        goto out;
    }
    if (ts_get_params(s, "XgemmDirect", &s->d0, err, errlen) != 0 ||
        ts_get_params(s, "Xgemm", &s->i0, err, errlen) != 0 ||
        ts_get_params(s, "GemmRoutine", &s->r0, err, errlen) != 0 ||
        ts_get_params(s, ts_aux_kernels[0], &s->aux0[0], err, errlen) != 0 ||
        ts_get_params(s, ts_aux_kernels[1], &s->aux0[1], err, errlen) != 0)
        goto out;
    s->aux[0] = s->aux0[0];
    s->aux[1] = s->aux0[1];
    s->t0_size = 0;
    for (size_t i = 0; i < s->r0.n; i++)
        if (strcmp(s->r0.p[i].name, "XGEMM_MIN_INDIRECT_SIZE") == 0)
            s->t0_size = s->r0.p[i].value;
    if (s->r0.n != 1 || s->t0_size == 0) {
        snprintf(err, errlen, "CLBlast's GemmRoutine parameters are not the one this tool "
                 "knows (XGEMM_MIN_INDIRECT_SIZE)");
        goto out;
    }
    for (size_t k = 0; k < req->n_shapes; k++) {
        const mlp_gemm_shape *g = &req->shapes[k];
        ts_say(s, "%-12s %4zux%4zux%4zu %c%c: CLBlast runs it on %s by default "
            "(m n k %s %zu^3)", g->role, g->m, g->n, g->k, g->ta ? 'T' : 'N', g->tb ? 'T' : 'N',
            mlp_gemm_is_direct(g, s->t0_size) ? "XgemmDirect" : "Xgemm (+ copy/pad/transpose kernels)",
            mlp_gemm_is_direct(g, s->t0_size) ? "<" : ">=", s->t0_size);
    }

    cl_int e = gemm_bufs_create(clg_context_cl(ctx), clg_context_queue(ctx), req->shapes,
                                req->n_shapes, &s->bufs);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "allocating GEMM buffers: OpenCL error %d", (int)e);
        goto out;
    }

    /* 2. Baseline: CLBlast's defaults. It doubles as the measurement of
     * the default kernel of each shape's default path. */
    ts_say(s, "timing the shapes with CLBlast's default parameters (builds CLBlast's GEMM program)");
    double base[MLP_GEMMS_MAX];
    if (ts_measure(s, &s->d0, &s->i0, s->t0_size, base, why, sizeof why) != 0) {
        snprintf(err, errlen, "CLBlast's default GEMMs: %s", why);
        goto out;
    }
    memcpy(s->base, base, sizeof base);
    ts_say(s, "CLBlast's defaults: %.2f ms per micro-step (%.1f GFLOP/s); build estimate %.1f s",
        ts_step_ms(s, base), ts_step_gflop(req) / (ts_step_ms(s, base) * 1e-3), s->build_s);
    {
        candidate *d = &s->cand[CAND_DEFAULT_DIRECT], *i = &s->cand[CAND_DEFAULT_XGEMM];
        s->n_cand = 2;
        memset(d, 0, sizeof *d);
        memset(i, 0, sizeof *i);
        d->direct = 1;
        d->params = s->d0;
        i->params = s->i0;
        snprintf(d->origin, sizeof d->origin, "XgemmDirect default");
        snprintf(i->origin, sizeof i->origin, "Xgemm default");
        d->ok = i->ok = d->run = i->run = 1;
        for (size_t k = 0; k < req->n_shapes; k++) {
            int dir = mlp_gemm_is_direct(&req->shapes[k], s->t0_size);
            d->ms[k] = dir ? base[k] : INFINITY;
            i->ms[k] = dir ? INFINITY : base[k];
        }
    }

    /* 2b. What is known: the previous tuning, the class's seeds. */
    ts_add_known(s);
    ts_say(s, "measuring %zu known configuration(s) first: %s and the seeds of the device's "
        "class (%s)", s->n_cand - 2, req->previous ? "the previous tuning" : "no previous tuning",
        s->out->device_class);
    /* with a previous tuning, what its run measured is in PoCL's cache:
     * a short look (a seed it had no time for would be a build) */
    double known_until = s->t0 + KNOWN_SHARE * req->budget_s;
    if (req->previous && known_until > s->t0 + REFINE_S)
        known_until = s->t0 + REFINE_S;
    ts_run_candidates(s, known_until, 0);

    /* 3. CLBlast's tuners at the shape with the most FLOPs, in the
     * column-major terms mlp_gemm hands CLBlast (m and n swapped). */
    size_t big = 0;
    for (size_t k = 1; k < req->n_shapes; k++)
        if (req->shapes[k].count * mlp_gemm_flops(&req->shapes[k]) >
            req->shapes[big].count * mlp_gemm_flops(&req->shapes[big]))
            big = k;
    const mlp_gemm_shape *g = &req->shapes[big];
    /* Xgemm also at the largest shape of the other kind (the forward GEMMs
     * have the micro-batch as n in CLBlast's terms, the dW ones as k: a
     * tuner run at one favours tiles that waste work on the other) */
    size_t other = big;
    for (size_t k = 0; k < req->n_shapes; k++) {
        const mlp_gemm_shape *h = &req->shapes[k];
        if ((h->ta != g->ta || h->tb != g->tb) &&
            (other == big || h->count * mlp_gemm_flops(h) >
                                 req->shapes[other].count * mlp_gemm_flops(&req->shapes[other])))
            other = k;
    }
    const mlp_gemm_shape *g2 = &req->shapes[other];
    double left = s->deadline - ts_now_s();
    double search_s = 0.55 * left;
    if (req->previous) {
        ts_note(s, "started from the previous tuning: no tuner run (--fresh searches anew)");
    } else if (search_s > 1) {
        unsigned top2 = other != big ? (req->top + 1) / 2 : req->top;
        ts_run_tuner(s, "clblast_tuner_xgemm_direct", 1, g->n, g->m, g->k, 0.3 * search_s,
                  req->top);
        ts_run_tuner(s, "clblast_tuner_xgemm", 0, ts_round_up(g->n, 64), ts_round_up(g->m, 64),
                  ts_round_up(g->k, 32), (other != big ? 0.25 : 0.5) * search_s, top2);
        if (other != big)
            ts_run_tuner(s, "clblast_tuner_xgemm", 0, ts_round_up(g2->n, 64), ts_round_up(g2->m, 64),
                      ts_round_up(g2->k, 32), 0.25 * search_s, req->top - top2 ? req->top - top2 : 1);
        /* Xgemm's helpers, at the operand that moves most: the k x n one */
        for (int a = 0; a < 2; a++)
            ts_run_aux_tuner(s, a, g->k, g->n, (s->deadline - ts_now_s() - 0.45 * left) / (2 - a));
    } else {
        ts_note(s, "no time left for the tuners after the baseline");
    }

    /* 4. The candidates on the real shapes, then the best combination. */
    if (!req->previous)
        ts_run_candidates(s, s->deadline, 2);
    choice c = ts_choose(s, base);
    if (c.i >= 0)
        ts_try_aux(s, &c, base);
    if (c.any_ms < 0.99 * c.ms)
        limit_note(s, &c, base);
    if (c.d >= 0 || c.i >= 0)
        ts_confirm(s, &c, base);

    if (clg_context_device_key(ctx, t->key) != CLG_SUCCESS) {
        snprintf(err, errlen, "%s", clg_last_error(ctx));
        goto out;
    }
    snprintf(t->device, sizeof t->device, "%s", info->name);
    snprintf(t->driver, sizeof t->driver, "%s", info->driver_version);
    snprintf(t->clblast, sizeof t->clblast, "%s", tuning_clblast_version());
    utc_now(t->created, sizeof t->created);
    snprintf(t->model, sizeof t->model, "%s", req->model);
    param_set rt = ts_routine_params(c.threshold);
    to_record(&t->kernel[0], "XgemmDirect", c.d >= 0 ? &s->cand[c.d].params : &s->d0);
    to_record(&t->kernel[1], "Xgemm", c.i >= 0 ? &s->cand[c.i].params : &s->i0);
    to_record(&t->kernel[2], "GemmRoutine", &rt);
    to_record(&t->kernel[3], ts_aux_kernels[0], &s->aux[0]);
    to_record(&t->kernel[4], ts_aux_kernels[1], &s->aux[1]);
    t->n_kernels = 5;
    for (size_t k = 0; k < req->n_shapes && k < TUNING_MAX_GEMMS; k++) {
        const mlp_gemm_shape *sh = &req->shapes[k];
        tuning_gemm *tg = &t->gemm[t->n_gemms++];
        tune_shape_result *r = &out->shape[k];
        r->ms_default = base[k];
        r->ms_tuned = c.shape_ms[k];
        r->direct_default = mlp_gemm_is_direct(sh, s->t0_size);
        r->direct_tuned = mlp_gemm_is_direct(sh, c.threshold);
        r->same_kernel = ts_same_kernel(s, &c, k);
        best_seen(s, k, base, r);
        mlp_gemm_record(sh, s->t0_size, c.threshold, tg);
        tg->gflops_default = mlp_gemm_flops(sh) / (base[k] * 1e6);
        tg->gflops_tuned = mlp_gemm_flops(sh) / (c.shape_ms[k] * 1e6);
    }
    out->step_ms_default = ts_step_ms(s, base);
    out->step_ms_tuned = c.ms;
    if (c.d < 0 && c.i < 0)
        ts_note(s, "no candidate beat CLBlast's defaults: the file keeps them");
    rc = 0;
out:
    out->seconds = ts_now_s() - s->t0;
    t->budget_s = req->budget_s;
    t->seconds = out->seconds;
    /* Leave CLBlast as it was found. */
    tuning_restore_defaults(ctx, NULL, 0);
    if (s->d0.n)
        clblast_params_set(s->dev, "XgemmDirect", 32, s->d0.p, s->d0.n);
    if (s->i0.n)
        clblast_params_set(s->dev, "Xgemm", 32, s->i0.p, s->i0.n);
    if (s->r0.n)
        clblast_params_set(s->dev, "GemmRoutine", 32, s->r0.p, s->r0.n);
    for (int a = 0; a < 2; a++)
        if (s->aux0[a].n)
            clblast_params_set(s->dev, ts_aux_kernels[a], 32, s->aux0[a].p, s->aux0[a].n);
    gemm_bufs_release(&s->bufs);
    free(s);
    return rc;
}

