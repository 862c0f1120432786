/* tune_candidates.c - clgrad-tune: CLBlast's tuners, and their fastest
 * configurations run on the real shapes (tune_internal.h). */
#include "tune_internal.h"
#include "tune_prebuild.h"
#include "tune_seeds.h"
#include "tuners.h"
#include "tuning_apply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ tuners */

typedef struct progress_ctx {
    search *s;
    const char *what;
    double last;
} progress_ctx;

static void tuner_progress(void *user, const tuner_run *r)
{
    progress_ctx *p = user;
    double t = ts_now_s();
    if (t - p->last < 5.0 && r->elapsed == 0)
        return;
    p->last = t;
    double best = 0;
    for (size_t i = 0; i < r->n_configs; i++)
        best = r->configs[i].gflops > best ? r->configs[i].gflops : best;
    ts_say(p->s, "%s %zux%zux%zu: search %d, %zu tried (of %zu), %zu verified, best %.1f GFLOP/s",
        p->what, r->m, r->n, r->k, r->variation, r->rows, r->total, r->n_configs, best);
}

size_t ts_round_up(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

/* Runs one tuner and adds its fastest `top` configurations as candidates. */
void ts_run_tuner(search *s, const char *program, int direct, size_t m, size_t n, size_t k,
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
    ts_say(s, "%s (%s -m %zu -n %zu -k %zu) for %.0f s", what, program, m, n, k, seconds);
    if (tuner_run_program(&r, tuner_progress, &pc) != 0) {
        ts_note(s, "%s", r.error);
        ts_say(s, "%s", r.error);
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
        /* The tuner prints the kernel's parameters; CLBlast's database
         * names them all, in its own order (checked when applied). */
        param_set ps = {0, {{"", 0}}};
        for (size_t p = 0; p < tc->n && p < TUNING_MAX_PARAMS; p++) {
            snprintf(ps.p[p].name, sizeof ps.p[p].name, "%s", tc->name[p]);
            ps.p[p].value = tc->value[p];
        }
        ps.n = tc->n;
        char origin[48];
        snprintf(origin, sizeof origin, "%s %zux%zux%zu #%zu", direct ? "XgemmDirect" : "Xgemm",
                 m, n, k, c + 1);
        candidate *cd = ts_add_candidate(s, direct, &ps, origin);
        if (!cd)
            continue;
        cd->tuner_gflops = tc->gflops;
        taken++;
    }
    if (r.n_configs == 0)
        ts_note(s, "%s verified no configuration in %.0f s", what, r.elapsed);
    tuner_run_free(&r);
}

/* Runs the tuner of Xgemm's helper a at an m x n matrix; its fastest
 * verified configuration goes to s->aux_found[a]. */
void ts_run_aux_tuner(search *s, int a, size_t m, size_t n, double seconds)
{
    const clg_device_info *info = clg_context_device_info(s->ctx);
    tuner_run r = {0};
    r.program = ts_aux_tuners[a];
    r.platform = info->platform_index;
    r.device = info->device_index;
    r.m = m;
    r.n = n;
    r.k = 1;
    r.fraction = 1.5;
    r.seconds = seconds;
    progress_ctx pc = {s, ts_aux_kernels[a], 0};
    ts_say(s, "%s tuner (%s -m %zu -n %zu) for %.0f s", ts_aux_kernels[a], r.program, m, n, seconds);
    /* what it finds replaces a seed's (ts_add_known) */
    if (tuner_run_program(&r, tuner_progress, &pc) != 0) {
        ts_note(s, "%s", r.error);
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
int ts_complete(const param_set *ref, param_set *c)
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

int ts_same_params(const param_set *a, const param_set *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->p[i].name, b->p[i].name) != 0 || a->p[i].value != b->p[i].value)
            return 0;
    return 1;
}

candidate *ts_add_candidate(search *s, int direct, const param_set *p, const char *origin)
{
    param_set ps = *p;
    if (s->n_cand == MAX_CANDIDATES || ts_complete(direct ? &s->d0 : &s->i0, &ps) != 0)
        return NULL;
    /* the same configuration from elsewhere (another tuner run, a seed,
     * CLBlast's defaults): once is enough */
    for (size_t o = 0; o < s->n_cand; o++)
        if (s->cand[o].direct == direct && ts_same_params(&s->cand[o].params, &ps))
            return NULL;
    candidate *cd = &s->cand[s->n_cand++];
    memset(cd, 0, sizeof *cd);
    cd->direct = direct;
    cd->params = ps;
    snprintf(cd->origin, sizeof cd->origin, "%s", origin);
    return cd;
}

static void from_record(const tuning_kernel *k, param_set *ps)
{
    ps->n = k->n < TUNING_MAX_PARAMS ? k->n : TUNING_MAX_PARAMS;
    for (size_t i = 0; i < ps->n; i++) {
        snprintf(ps->p[i].name, sizeof ps->p[i].name, "%s", k->param[i]);
        ps->p[i].value = k->value[i];
    }
}

void ts_add_known(search *s)
{
    const tuning *prev = s->req->previous;
    if (prev) {
        static const char *const kernels[2] = {"Xgemm", "XgemmDirect"}; /* by direct */
        for (int direct = 0; direct <= 1; direct++) {
            const tuning_kernel *k = tuning_find_kernel(prev, kernels[direct]);
            param_set ps;
            candidate *cd;
            if (k && (from_record(k, &ps), cd = ts_add_candidate(s, direct, &ps,
                                                                  "the previous tuning")))
                cd->seed = 1;
        }
        /* Xgemm's helpers as they were tuned: tried with the chosen Xgemm */
        for (int a = 0; a < 2; a++) {
            const tuning_kernel *k = tuning_find_kernel(prev, ts_aux_kernels[a]);
            param_set ps;
            if (k && (from_record(k, &ps), ts_complete(&s->aux0[a], &ps) == 0) &&
                !ts_same_params(&ps, &s->aux0[a]))
                s->aux_found[a] = ps;
        }
    }
    const clg_device_info *info = clg_context_device_info(s->ctx);
    tune_device_class cls = tune_device_class_of((info->type & CL_DEVICE_TYPE_CPU) != 0,
                                                 (info->type & CL_DEVICE_TYPE_GPU) != 0,
                                                 info->vendor);
    s->out->device_class = tune_device_class_name(cls);
    const tune_seed *seeds;
    size_t n = tune_seeds(cls, &seeds);
    for (size_t i = 0; i < n; i++) {
        param_set ps;
        if (ts_parse_params(seeds[i].params, &ps) != 0)
            continue;
        int aux = -1;
        for (int a = 0; a < 2; a++)
            if (strcmp(seeds[i].kernel, ts_aux_kernels[a]) == 0)
                aux = a;
        if (aux >= 0) {
            /* the previous tuning's helpers come first */
            if (s->aux_found[aux].n == 0 && ts_complete(&s->aux0[aux], &ps) == 0 &&
                !ts_same_params(&ps, &s->aux0[aux]))
                s->aux_found[aux] = ps;
            continue;
        }
        candidate *cd = ts_add_candidate(s, strcmp(seeds[i].kernel, "XgemmDirect") == 0, &ps,
                                         seeds[i].origin);
        if (cd)
            cd->seed = 1;
    }
}

/* What candidate c runs as: its own configuration with CLBlast's other
 * kernel's, every shape sent to its kernel. */
static void candidate_sets(const search *s, const candidate *c, const param_set **d,
                           const param_set **i, size_t *threshold)
{
    *d = c->direct ? &c->params : &s->d0;
    *i = c->direct ? &s->i0 : &c->params;
    *threshold = c->direct ? ALL_DIRECT : ALL_INDIRECT;
}

/* Starts builds of the candidates that come next (order[0 .. n)) in other
 * processes, as many as may build at once and as would still be run
 * before `until` if this one's build is the last slow one. */
static void prebuild_next(search *s, const size_t *order, size_t n, double until,
                          int reserve_builds)
{
    double at = ts_now_s() + s->build_s + 2.0 + reserve_builds * (s->build_s + 2.0);
    for (size_t o = 0; o < n; o++) {
        candidate *c = &s->cand[order[o]];
        at += 4.0; /* a cache hit and the timing */
        if (at > until || ts_complete(c->direct ? &s->d0 : &s->i0, &c->params) != 0)
            break;
        const param_set *d, *i;
        size_t threshold;
        candidate_sets(s, c, &d, &i, &threshold);
        if (ts_prebuild_start(s, d, i, threshold) != 0)
            break;
        c->prebuilt = 1;
    }
}

void ts_run_candidates(search *s, double until, int reserve_builds)
{
    /* Alternate the kernels among the candidates not run yet (the known
     * ones ran first), Xgemm first (it runs the large shapes), each
     * tuner's best first, so that a short budget gets the best of each. */
    size_t order[MAX_CANDIDATES], n = 0, todo = 0;
    for (size_t c = 0; c < s->n_cand; c++)
        todo += !s->cand[c].run;
    for (unsigned rank = 0; n < todo && rank <= MAX_CANDIDATES; rank++)
        for (int direct = 0; direct <= 1; direct++) {
            unsigned seen = 0;
            for (size_t c = 0; c < s->n_cand; c++)
                if (!s->cand[c].run && s->cand[c].direct == direct && seen++ == rank)
                    order[n++] = c;
        }
    for (size_t o = 0; o < n; o++) {
        candidate *c = &s->cand[order[o]]; /* not run yet: order holds no other */
        /* this candidate's build (a cache hit if prebuilt) and timing, and
         * then still what must follow before `until` (the helpers' trial
         * and the final confirmation: a build each) */
        double est = (c->prebuilt ? 4.0 : s->build_s + 2.0) + reserve_builds * (s->build_s + 2.0);
        if (ts_now_s() + est > until) {
            ts_note(s, "%s not run: about %.0f s left, a build takes %.0f s", c->origin,
                 until - ts_now_s(), s->build_s);
            continue;
        }
        if (ts_complete(c->direct ? &s->d0 : &s->i0, &c->params) != 0) {
            ts_note(s, "%s: its parameters are not CLBlast's", c->origin);
            continue;
        }
        char why[256];
        c->run = 1;
        const char *prebuilt = c->prebuilt ? " (built by another process meanwhile)" : "";
        if (c->seed)
            ts_say(s, "running %s on every shape, all on %s%s", c->origin,
                   c->direct ? "XgemmDirect" : "Xgemm", prebuilt);
        else
            ts_say(s, "running %s (tuner %.1f GFLOP/s) on every shape, all on %s%s", c->origin,
                   c->tuner_gflops, c->direct ? "XgemmDirect" : "Xgemm", prebuilt);
        /* the next candidates' builds in other processes meanwhile */
        if (!c->prebuilt)
            prebuild_next(s, order + o + 1, n - o - 1, until, reserve_builds);
        const param_set *d, *i;
        size_t threshold;
        candidate_sets(s, c, &d, &i, &threshold);
        int rc = ts_build(s, d, i, threshold, why, sizeof why);
        ts_prebuild_wait(s); /* nothing is timed while they build */
        if (rc == 0 && c->prebuilt)
            ts_prebuild_check(s, s->last_build_s);
        if (rc == 0)
            rc = ts_time(s, c->ms, why, sizeof why);
        s->out->candidates_run++;
        s->out->seeds_run += (size_t)c->seed;
        if (rc != 0) {
            ts_note(s, "%s rejected: %s", c->origin, why);
            ts_say(s, "%s rejected: %s", c->origin, why);
            continue;
        }
        c->ok = 1;
        ts_in_baseline_terms(s, c->ms);
        ts_say(s, "%s: %.2f ms per micro-step (%.1f GFLOP/s) in the baseline's terms", c->origin,
            ts_step_ms(s, c->ms), ts_step_gflop(s->req) / (ts_step_ms(s, c->ms) * 1e-3));
    }
}

