/* tune_search.c - clgrad-tune's procedure (see tune_search.h). */
#include "tune_search.h"
#include "clblast_params.h"
#include "gemm_timing.h"
#include "tuners.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CANDIDATES 16
/* XGEMM_MIN_INDIRECT_SIZE that sends every shape to XgemmDirect (m n k is
 * compared with its cube) or to Xgemm. */
#define ALL_DIRECT 65536
#define ALL_INDIRECT 1
/* Timing: rounds over all shapes, each call repeated for about this long. */
#define ROUNDS 3
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
    double ms[MLP_GEMMS_MAX]; /* per shape on its path; INFINITY when not run */
} candidate;

/* The kernels Xgemm needs around it when operands are not in its layout or
 * sizes not multiples of its tiles (measured on the MLP's shapes: a padded
 * transpose of W for every forward GEMM, padded copies of the others), with
 * the tuner that tunes each. */
static const char *const aux_kernels[2] = {"Padtranspose", "Pad"};
static const char *const aux_tuners[2] = {"clblast_tuner_transpose_pad", "clblast_tuner_copy_pad"};

typedef struct search {
    clg_context *ctx;
    cl_device_id dev;
    const tune_request *req;
    tune_outcome *out;
    double t0, deadline, build_s;
    param_set d0, i0, r0;   /* CLBlast's own XgemmDirect, Xgemm, GemmRoutine */
    size_t t0_size;         /* its XGEMM_MIN_INDIRECT_SIZE */
    /* Xgemm's helpers (aux_kernels): CLBlast's own parameters, the best
     * configuration their tuners found (n = 0: none), and the ones every
     * measurement uses now */
    param_set aux0[2], aux_found[2], aux[2];
    gemm_bufs bufs;
    double base[MLP_GEMMS_MAX]; /* CLBlast's defaults, per shape, at the start */
    candidate cand[MAX_CANDIDATES];
    size_t n_cand;
    char phase[96];
} search;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void say(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(search *s, const char *fmt, ...)
{
    if (s->req->quiet)
        return;
    fprintf(stderr, "[%4.0f s / %.0f s] ", now_s() - s->t0, s->req->budget_s);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void note(search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(search *s, const char *fmt, ...)
{
    size_t used = strlen(s->out->notes);
    if (used + 3 >= sizeof s->out->notes)
        return;
    if (used)
        used += (size_t)snprintf(s->out->notes + used, sizeof s->out->notes - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->out->notes + used, sizeof s->out->notes - used, fmt, ap);
    va_end(ap);
}

static double mnk(const mlp_gemm_shape *g)
{
    return (double)g->m * (double)g->n * (double)g->k;
}

static int is_direct(const mlp_gemm_shape *g, size_t min_indirect)
{
    double t = (double)min_indirect;
    return mnk(g) < t * t * t;
}

static int get_params(search *s, const char *kernel, param_set *ps, char *err, size_t errlen)
{
    int st = clblast_params_get(s->dev, kernel, 32, ps->p, TUNING_MAX_PARAMS, &ps->n);
    if (st != 0 || ps->n == 0 || ps->n > TUNING_MAX_PARAMS) {
        snprintf(err, errlen, "CLBlast has no parameters for %s on this device (status %d)",
                 kernel, st);
        return -1;
    }
    return 0;
}

static int set_params(search *s, const char *kernel, const param_set *ps, char *err,
                      size_t errlen)
{
    int st = clblast_params_set(s->dev, kernel, 32, ps->p, ps->n);
    if (st != 0) {
        snprintf(err, errlen, "CLBlast refused parameters for %s (status %d)", kernel, st);
        return -1;
    }
    return 0;
}

static param_set routine_params(size_t min_indirect)
{
    param_set r = {1, {{"XGEMM_MIN_INDIRECT_SIZE", min_indirect}}};
    return r;
}

/* Builds CLBlast's GEMM program with (d, i, threshold), checks every shape
 * against the host and times them all: ms[] per shape. 0, or -1 with why
 * (a refused parameter set, a failed build or launch, a wrong result). */
static int measure(search *s, const param_set *d, const param_set *i, size_t threshold,
                   double *ms, char *why, size_t whylen)
{
    const tune_request *q = s->req;
    param_set r = routine_params(threshold);
    if (set_params(s, "XgemmDirect", d, why, whylen) != 0 ||
        set_params(s, "Xgemm", i, why, whylen) != 0 ||
        set_params(s, "GemmRoutine", &r, why, whylen) != 0 ||
        set_params(s, aux_kernels[0], &s->aux[0], why, whylen) != 0 ||
        set_params(s, aux_kernels[1], &s->aux[1], why, whylen) != 0)
        return -1;
    double t = now_s();
    for (size_t k = 0; k < q->n_shapes; k++) {
        cl_int e = gemm_run_once(&s->bufs, &q->shapes[k]);
        if (e != CL_SUCCESS) {
            snprintf(why, whylen, "CLBlast failed on %zux%zux%zu (status %d)", q->shapes[k].m,
                     q->shapes[k].n, q->shapes[k].k, (int)e);
            return -1;
        }
        /* the slowest build seen: the baseline's may have come from the
         * driver's own cache */
        if (k == 0 && now_s() - t > s->build_s)
            s->build_s = now_s() - t;
    }
    for (size_t k = 0; k < q->n_shapes; k++) {
        double worst;
        int rc = gemm_check(&s->bufs, &q->shapes[k], &worst);
        if (rc != 0) {
            snprintf(why, whylen, "%zux%zux%zu: %s (relative error %.2g)", q->shapes[k].m,
                     q->shapes[k].n, q->shapes[k].k,
                     worst < 0 ? "the check could not run" : "wrong result", worst);
            return -1;
        }
    }
    unsigned reps[MLP_GEMMS_MAX];
    double v[MLP_GEMMS_MAX][ROUNDS];
    for (size_t k = 0; k < q->n_shapes; k++)
        reps[k] = gemm_calibrate(&s->bufs, &q->shapes[k], TARGET_MS);
    /* Rounds over all shapes, so that a change of machine load hits every
     * shape alike. */
    for (int round = 0; round < ROUNDS; round++)
        for (size_t k = 0; k < q->n_shapes; k++)
            if (gemm_time(&s->bufs, &q->shapes[k], reps[k], &v[k][round]) != CL_SUCCESS) {
                snprintf(why, whylen, "a timed GEMM failed");
                return -1;
            }
    for (size_t k = 0; k < q->n_shapes; k++)
        ms[k] = gemm_median(v[k], ROUNDS);
    return 0;
}

static double step_ms(const search *s, const double *ms)
{
    double t = 0;
    for (size_t k = 0; k < s->req->n_shapes; k++)
        t += s->req->shapes[k].count * ms[k];
    return t;
}

static double step_gflop(const tune_request *q)
{
    double f = 0;
    for (size_t k = 0; k < q->n_shapes; k++)
        f += q->shapes[k].count * mlp_gemm_flops(&q->shapes[k]);
    return f * 1e-9;
}

/* ------------------------------------------------------------ tuners */

typedef struct progress_ctx {
    search *s;
    const char *what;
    double last;
} progress_ctx;

static void tuner_progress(void *user, const tuner_run *r)
{
    progress_ctx *p = user;
    double t = now_s();
    if (t - p->last < 5.0 && r->elapsed == 0)
        return;
    p->last = t;
    double best = 0;
    for (size_t i = 0; i < r->n_configs; i++)
        best = r->configs[i].gflops > best ? r->configs[i].gflops : best;
    say(p->s, "%s %zux%zux%zu: search %d, %zu tried (of %zu), %zu verified, best %.1f GFLOP/s",
        p->what, r->m, r->n, r->k, r->variation, r->rows, r->total, r->n_configs, best);
}

static size_t round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* Runs one tuner and adds its fastest `top` configurations as candidates. */
static void run_tuner(search *s, const char *program, int direct, size_t m, size_t n, size_t k,
                      double seconds, unsigned top)
{
    const clg_device_info *info = clg_context_device_info(s->ctx);
    tuner_run r = {0};
    r.program = program;
    r.platform = info->platform_index;
    r.device = info->device_index;
    r.m = m;
    r.n = n;
    r.k = k;
    /* One configuration in two, CLBlast's fixed shuffle: a run cut short
     * samples the whole first search rather than its first rows. */
    r.fraction = 2.0;
    r.seconds = seconds;
    const char *what = direct ? "XgemmDirect tuner" : "Xgemm tuner";
    progress_ctx pc = {s, what, 0};
    say(s, "%s (%s -m %zu -n %zu -k %zu) for %.0f s", what, program, m, n, k, seconds);
    if (tuner_run_program(&r, tuner_progress, &pc) != 0) {
        note(s, "%s", r.error);
        say(s, "%s", r.error);
        tuner_run_free(&r);
        return;
    }
    if (direct)
        s->out->direct_tried += r.rows;
    else
        s->out->indirect_tried += r.rows;
    tuner_sort(r.configs, r.n_configs);
    unsigned taken = 0;
    for (size_t c = 0; c < r.n_configs && taken < top && s->n_cand < MAX_CANDIDATES; c++) {
        const tuner_config *tc = &r.configs[c];
        candidate *cd = &s->cand[s->n_cand];
        memset(cd, 0, sizeof *cd);
        cd->direct = direct;
        /* The tuner prints the kernel's parameters; CLBlast's database
         * names them all, in its own order (checked when applied). */
        for (size_t p = 0; p < tc->n && p < TUNING_MAX_PARAMS; p++) {
            snprintf(cd->params.p[p].name, sizeof cd->params.p[p].name, "%s", tc->name[p]);
            cd->params.p[p].value = tc->value[p];
        }
        cd->params.n = tc->n;
        cd->tuner_gflops = tc->gflops;
        snprintf(cd->origin, sizeof cd->origin, "%s %zux%zux%zu #%zu",
                 direct ? "XgemmDirect" : "Xgemm", m, n, k, c + 1);
        /* the same configuration from another tuner run: once is enough */
        int seen = 0;
        for (size_t o = 0; o < s->n_cand && !seen; o++)
            seen = s->cand[o].direct == direct && s->cand[o].params.n == cd->params.n &&
                   memcmp(s->cand[o].params.p, cd->params.p,
                          cd->params.n * sizeof *cd->params.p) == 0;
        if (seen)
            continue;
        s->n_cand++;
        taken++;
    }
    if (r.n_configs == 0)
        note(s, "%s verified no configuration in %.0f s", what, r.elapsed);
    tuner_run_free(&r);
}

/* Runs the tuner of Xgemm's helper a at an m x n matrix; its fastest
 * verified configuration goes to s->aux_found[a]. */
static void run_aux_tuner(search *s, int a, size_t m, size_t n, double seconds)
{
    const clg_device_info *info = clg_context_device_info(s->ctx);
    tuner_run r = {0};
    r.program = aux_tuners[a];
    r.platform = info->platform_index;
    r.device = info->device_index;
    r.m = m;
    r.n = n;
    r.k = 1;
    r.fraction = 1.5;
    r.seconds = seconds;
    progress_ctx pc = {s, aux_kernels[a], 0};
    say(s, "%s tuner (%s -m %zu -n %zu) for %.0f s", aux_kernels[a], r.program, m, n, seconds);
    s->aux_found[a].n = 0;
    if (tuner_run_program(&r, tuner_progress, &pc) != 0) {
        note(s, "%s", r.error);
        tuner_run_free(&r);
        return;
    }
    tuner_sort(r.configs, r.n_configs);
    if (r.n_configs) {
        param_set p = {r.configs[0].n, {{"", 0}}};
        for (size_t i = 0; i < p.n && i < TUNING_MAX_PARAMS; i++) {
            snprintf(p.p[i].name, sizeof p.p[i].name, "%s", r.configs[0].name[i]);
            p.p[i].value = r.configs[0].value[i];
        }
        s->aux_found[a] = p;
    }
    tuner_run_free(&r);
}

/* ---------------------------------------------------------- selection */

/* Puts candidates in a sorted parameter order of CLBlast's names, with the
 * same names as CLBlast's own set (a tuner prints every parameter of its
 * kernel; anything else is not a configuration CLBlast can take). */
static int complete(const param_set *ref, param_set *c)
{
    param_set out = {ref->n, {{"", 0}}};
    for (size_t i = 0; i < ref->n; i++) {
        size_t j = 0;
        while (j < c->n && strcmp(c->p[j].name, ref->p[i].name) != 0)
            j++;
        if (j == c->n)
            return -1;
        out.p[i] = c->p[j];
    }
    *c = out;
    return 0;
}

/* The machine's load drifts between candidates (other processes on the
 * same cores): CLBlast's defaults timed right after a candidate (built
 * already, so switching costs nothing) turn its times into the baseline's
 * terms, so that candidates measured minutes apart compare fairly. */
static void in_baseline_terms(search *s, double *ms)
{
    double now[MLP_GEMMS_MAX];
    char why[256];
    param_set keep[2] = {s->aux[0], s->aux[1]};
    s->aux[0] = s->aux0[0];
    s->aux[1] = s->aux0[1];
    int rc = measure(s, &s->d0, &s->i0, s->t0_size, now, why, sizeof why);
    s->aux[0] = keep[0];
    s->aux[1] = keep[1];
    if (rc != 0)
        return;
    double f = step_ms(s, s->base) / step_ms(s, now);
    for (size_t k = 0; k < s->req->n_shapes; k++)
        ms[k] *= f;
}

static void run_candidates(search *s)
{
    /* Alternate the kernels, best first, so that a short budget gets the
     * best of each. */
    size_t order[MAX_CANDIDATES], n = 0;
    for (unsigned rank = 0; n < s->n_cand; rank++) {
        for (int direct = 0; direct <= 1; direct++) {
            unsigned seen = 0;
            for (size_t c = 0; c < s->n_cand; c++)
                if (s->cand[c].direct == direct && seen++ == rank)
                    order[n++] = c;
        }
        if (rank > MAX_CANDIDATES)
            break;
    }
    for (size_t o = 0; o < n; o++) {
        candidate *c = &s->cand[order[o]];
        if (c->run) /* CLBlast's defaults: measured by the baseline */
            continue;
        /* this candidate's build and timing, and then still the helpers'
         * trial and the final confirmation (a build each) */
        double est = 3 * (s->build_s + 2.0);
        if (now_s() + est > s->deadline) {
            note(s, "%s not run: about %.0f s left, a build takes %.0f s", c->origin,
                 s->deadline - now_s(), s->build_s);
            continue;
        }
        if (complete(c->direct ? &s->d0 : &s->i0, &c->params) != 0) {
            note(s, "%s: its parameters are not CLBlast's", c->origin);
            continue;
        }
        char why[256];
        c->run = 1;
        say(s, "running %s (tuner %.1f GFLOP/s) on every shape, all on %s", c->origin,
            c->tuner_gflops, c->direct ? "XgemmDirect" : "Xgemm");
        int rc = c->direct ? measure(s, &c->params, &s->i0, ALL_DIRECT, c->ms, why, sizeof why)
                           : measure(s, &s->d0, &c->params, ALL_INDIRECT, c->ms, why, sizeof why);
        s->out->candidates_run++;
        if (rc != 0) {
            note(s, "%s rejected: %s", c->origin, why);
            say(s, "%s rejected: %s", c->origin, why);
            continue;
        }
        c->ok = 1;
        in_baseline_terms(s, c->ms);
        say(s, "%s: %.2f ms per micro-step (%.1f GFLOP/s) in the baseline's terms", c->origin,
            step_ms(s, c->ms), step_gflop(s->req) / (step_ms(s, c->ms) * 1e-3));
    }
}

/* The smallest T with T^3 > x. */
static size_t cube_above(double x)
{
    size_t t = (size_t)cbrt(x);
    while ((double)t * t * t <= x)
        t++;
    while (t > 1 && (double)(t - 1) * (t - 1) * (t - 1) > x)
        t--;
    return t;
}

typedef struct choice {
    size_t threshold;
    int d, i;            /* candidate index, -1: CLBlast's default */
    double ms;
    double shape_ms[MLP_GEMMS_MAX];
} choice;

static double path_cost(const search *s, const candidate *c, size_t threshold, int direct,
                        double *shape_ms)
{
    const tune_request *q = s->req;
    double t = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        if (is_direct(&q->shapes[k], threshold) != direct)
            continue;
        double ms = c->ok ? c->ms[k] : INFINITY;
        t += q->shapes[k].count * ms;
        if (shape_ms)
            shape_ms[k] = ms;
    }
    return t;
}

/* The best (threshold, XgemmDirect, Xgemm) over the measured candidates. */
static choice choose(search *s, const double *baseline)
{
    const tune_request *q = s->req;
    choice best = {s->t0_size, -1, -1, step_ms(s, baseline), {0}};
    memcpy(best.shape_ms, baseline, q->n_shapes * sizeof *baseline);
    double v[MLP_GEMMS_MAX];
    size_t u = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        size_t j = 0;
        while (j < u && v[j] != mnk(&q->shapes[k]))
            j++;
        if (j == u)
            v[u++] = mnk(&q->shapes[k]);
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
            size_t cap = cube_above(v[0]) - 1;
            th = s->t0_size <= cap ? s->t0_size : cap > 0 ? cap : 1;
        } else if (j == u) {
            th = cube_above(v[u - 1]);
            th = th > s->t0_size ? th : s->t0_size;
        } else {
            /* between the two sizes, geometric middle */
            size_t lo = cube_above(v[j - 1]);
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
                double t = path_cost(s, &s->cand[di], th, 1, shape_ms) +
                           path_cost(s, &s->cand[ii], th, 0, shape_ms);
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
static void try_aux(search *s, choice *c, const double *base)
{
    candidate *x = &s->cand[c->i];
    param_set want[2];
    int any = 0;
    for (int a = 0; a < 2; a++) {
        want[a] = s->aux_found[a];
        if (want[a].n == 0 || complete(&s->aux0[a], &want[a]) != 0)
            want[a] = s->aux0[a];
        else
            any = 1;
    }
    if (!any)
        return;
    if (now_s() + 2 * (s->build_s + 2.0) > s->deadline) {
        note(s, "no time to try the tuned %s/%s with %s", aux_kernels[0], aux_kernels[1],
             x->origin);
        return;
    }
    say(s, "running %s again with the tuned %s and %s", x->origin, aux_kernels[0],
        aux_kernels[1]);
    double ms[MLP_GEMMS_MAX];
    char why[256];
    s->aux[0] = want[0];
    s->aux[1] = want[1];
    int rc = measure(s, &s->d0, &x->params, ALL_INDIRECT, ms, why, sizeof why);
    if (rc == 0)
        in_baseline_terms(s, ms);
    double before = path_cost(s, x, c->threshold, 0, NULL);
    candidate trial = *x;
    memcpy(trial.ms, ms, sizeof ms);
    double after = rc == 0 ? path_cost(s, &trial, c->threshold, 0, NULL) : INFINITY;
    if (!(after < before)) {
        note(s, "the tuned %s/%s did not help (%s)", aux_kernels[0], aux_kernels[1],
             rc == 0 ? "slower" : why);
        s->aux[0] = s->aux0[0];
        s->aux[1] = s->aux0[1];
        return;
    }
    say(s, "the shapes on Xgemm: %.2f ms -> %.2f ms per micro-step with them", before, after);
    memcpy(x->ms, ms, sizeof ms);
    *c = choose(s, base);
}

/* The chosen parameters as one program (a build of its own: the threshold
 * is part of CLBlast's program), checked on every shape, then timed in
 * rounds that alternate with CLBlast's defaults, so that both sides see the
 * same machine load; the figures reported and stored are these. Without
 * the time for it, the candidates' own figures stand (noted). */
static void confirm(search *s, choice *c, double *base)
{
    const tune_request *q = s->req;
    const param_set *d = c->d >= 0 ? &s->cand[c->d].params : &s->d0;
    const param_set *i = c->i >= 0 ? &s->cand[c->i].params : &s->i0;
    if (now_s() + s->build_s + 2.0 > s->deadline) {
        note(s, "no time to confirm the choice on its own build: the figures are the "
             "candidates'");
        return;
    }
    say(s, "confirming the choice (XGEMM_MIN_INDIRECT_SIZE %zu) against CLBlast's defaults",
        c->threshold);
    double tuned[MLP_GEMMS_MAX][ROUNDS], def[MLP_GEMMS_MAX][ROUNDS], ms[MLP_GEMMS_MAX];
    char why[256];
    for (int round = 0; round < ROUNDS; round++) {
        int rc = measure(s, d, i, c->threshold, ms, why, sizeof why);
        if (rc != 0) {
            /* a combination that fails where its parts passed: keep the
             * defaults rather than store it */
            note(s, "the chosen combination failed (%s): CLBlast's defaults kept", why);
            c->d = c->i = -1;
            c->threshold = s->t0_size;
            c->ms = step_ms(s, base);
            memcpy(c->shape_ms, base, q->n_shapes * sizeof *base);
            return;
        }
        for (size_t k = 0; k < q->n_shapes; k++)
            tuned[k][round] = ms[k];
        param_set keep[2] = {s->aux[0], s->aux[1]};
        s->aux[0] = s->aux0[0];
        s->aux[1] = s->aux0[1];
        rc = measure(s, &s->d0, &s->i0, s->t0_size, ms, why, sizeof why);
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
    c->ms = step_ms(s, c->shape_ms);
    say(s, "confirmed: %.2f ms per micro-step against %.2f ms with CLBlast's defaults",
        c->ms, step_ms(s, base));
}

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
    s->t0 = now_s();
    s->deadline = s->t0 + req->budget_s;
    /* a build of CLBlast's GEMM program takes 6-12 s on 2 PoCL cores; until
     * one is measured, assume a few seconds rather than none */
    s->build_s = 4.0;
    int rc = -1;
    char why[512];
    tuning *t = &out->t;

    /* 1. CLBlast's own parameters (before anything overrides them). */
    if (tuning_restore_defaults(ctx, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        goto out;
    }
    if (get_params(s, "XgemmDirect", &s->d0, err, errlen) != 0 ||
        get_params(s, "Xgemm", &s->i0, err, errlen) != 0 ||
        get_params(s, "GemmRoutine", &s->r0, err, errlen) != 0 ||
        get_params(s, aux_kernels[0], &s->aux0[0], err, errlen) != 0 ||
        get_params(s, aux_kernels[1], &s->aux0[1], err, errlen) != 0)
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
        say(s, "%-12s %4zux%4zux%4zu %c%c: CLBlast runs it on %s by default "
            "(m n k %s %zu^3)", g->role, g->m, g->n, g->k, g->ta ? 'T' : 'N', g->tb ? 'T' : 'N',
            is_direct(g, s->t0_size) ? "XgemmDirect" : "Xgemm (+ copy/pad/transpose kernels)",
            is_direct(g, s->t0_size) ? "<" : ">=", s->t0_size);
    }

    cl_int e = gemm_bufs_create(clg_context_cl(ctx), clg_context_queue(ctx), req->shapes,
                                req->n_shapes, &s->bufs);
    if (e != CL_SUCCESS) {
        snprintf(err, errlen, "allocating GEMM buffers: OpenCL error %d", (int)e);
        goto out;
    }

    /* 2. Baseline: CLBlast's defaults. It doubles as the measurement of
     * the default kernel of each shape's default path. */
    say(s, "timing the shapes with CLBlast's default parameters (builds CLBlast's GEMM program)");
    double base[MLP_GEMMS_MAX];
    if (measure(s, &s->d0, &s->i0, s->t0_size, base, why, sizeof why) != 0) {
        snprintf(err, errlen, "CLBlast's default GEMMs: %s", why);
        goto out;
    }
    memcpy(s->base, base, sizeof base);
    say(s, "CLBlast's defaults: %.2f ms per micro-step (%.1f GFLOP/s); build estimate %.1f s",
        step_ms(s, base), step_gflop(req) / (step_ms(s, base) * 1e-3), s->build_s);
    {
        candidate *d = &s->cand[s->n_cand++], *i = &s->cand[s->n_cand++];
        memset(d, 0, 2 * sizeof *d);
        d->direct = 1;
        d->params = s->d0;
        i->params = s->i0;
        snprintf(d->origin, sizeof d->origin, "XgemmDirect default");
        snprintf(i->origin, sizeof i->origin, "Xgemm default");
        d->ok = i->ok = d->run = i->run = 1;
        for (size_t k = 0; k < req->n_shapes; k++) {
            int dir = is_direct(&req->shapes[k], s->t0_size);
            d->ms[k] = dir ? base[k] : INFINITY;
            i->ms[k] = dir ? INFINITY : base[k];
        }
    }

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
    double left = s->deadline - now_s();
    double search_s = 0.55 * left;
    if (search_s > 1) {
        unsigned top2 = other != big ? (req->top + 1) / 2 : req->top;
        run_tuner(s, "clblast_tuner_xgemm_direct", 1, g->n, g->m, g->k, 0.3 * search_s,
                  req->top);
        run_tuner(s, "clblast_tuner_xgemm", 0, round_up(g->n, 64), round_up(g->m, 64),
                  round_up(g->k, 32), (other != big ? 0.25 : 0.5) * search_s, top2);
        if (other != big)
            run_tuner(s, "clblast_tuner_xgemm", 0, round_up(g2->n, 64), round_up(g2->m, 64),
                      round_up(g2->k, 32), 0.25 * search_s, req->top - top2 ? req->top - top2 : 1);
        /* Xgemm's helpers, at the operand that moves most: the k x n one */
        for (int a = 0; a < 2; a++)
            run_aux_tuner(s, a, g->k, g->n, (s->deadline - now_s() - 0.45 * left) / (2 - a));
    } else {
        note(s, "no time left for the tuners after the baseline");
    }

    /* 4. The candidates on the real shapes, then the best combination. */
    run_candidates(s);
    choice c = choose(s, base);
    if (c.i >= 0)
        try_aux(s, &c, base);
    if (c.d >= 0 || c.i >= 0)
        confirm(s, &c, base);

    const clg_device_info *info = clg_context_device_info(ctx);
    if (clg_context_device_key(ctx, t->key) != CLG_SUCCESS) {
        snprintf(err, errlen, "%s", clg_last_error(ctx));
        goto out;
    }
    snprintf(t->device, sizeof t->device, "%s", info->name);
    snprintf(t->driver, sizeof t->driver, "%s", info->driver_version);
    snprintf(t->clblast, sizeof t->clblast, "%s", tuning_clblast_version());
    utc_now(t->created, sizeof t->created);
    snprintf(t->model, sizeof t->model, "%s", req->model);
    param_set rt = routine_params(c.threshold);
    to_record(&t->kernel[0], "XgemmDirect", c.d >= 0 ? &s->cand[c.d].params : &s->d0);
    to_record(&t->kernel[1], "Xgemm", c.i >= 0 ? &s->cand[c.i].params : &s->i0);
    to_record(&t->kernel[2], "GemmRoutine", &rt);
    to_record(&t->kernel[3], aux_kernels[0], &s->aux[0]);
    to_record(&t->kernel[4], aux_kernels[1], &s->aux[1]);
    t->n_kernels = 5;
    for (size_t k = 0; k < req->n_shapes && k < TUNING_MAX_GEMMS; k++) {
        const mlp_gemm_shape *sh = &req->shapes[k];
        tuning_gemm *tg = &t->gemm[t->n_gemms++];
        tune_shape_result *r = &out->shape[k];
        r->ms_default = base[k];
        r->ms_tuned = c.shape_ms[k];
        r->direct_default = is_direct(sh, s->t0_size);
        r->direct_tuned = is_direct(sh, c.threshold);
        tg->m = (unsigned)sh->m;
        tg->n = (unsigned)sh->n;
        tg->k = (unsigned)sh->k;
        tg->ta = sh->ta ? 'T' : 'N';
        tg->tb = sh->tb ? 'T' : 'N';
        tg->count = sh->count;
        snprintf(tg->kernel_default, sizeof tg->kernel_default, "%s",
                 r->direct_default ? "XgemmDirect" : "Xgemm");
        snprintf(tg->kernel_tuned, sizeof tg->kernel_tuned, "%s",
                 r->direct_tuned ? "XgemmDirect" : "Xgemm");
        tg->gflops_default = mlp_gemm_flops(sh) / (base[k] * 1e6);
        tg->gflops_tuned = mlp_gemm_flops(sh) / (c.shape_ms[k] * 1e6);
    }
    out->step_ms_default = step_ms(s, base);
    out->step_ms_tuned = c.ms;
    if (c.d < 0 && c.i < 0)
        note(s, "no candidate beat CLBlast's defaults: the file keeps them");
    rc = 0;
out:
    out->seconds = now_s() - s->t0;
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
            clblast_params_set(s->dev, aux_kernels[a], 32, s->aux0[a].p, s->aux0[a].n);
    gemm_bufs_release(&s->bufs);
    free(s);
    return rc;
}
