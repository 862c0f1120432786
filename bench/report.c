/* report.c - the report structure: growable lists, derived bandwidths and
 * the speed-up table. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows *items (of elem bytes) by one zeroed element. */
static void *grow(void **items, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        void *p = realloc(*items, ncap * elem);
        if (!p)
            return NULL;
        *items = p;
        *cap = ncap;
    }
    char *slot = (char *)*items + *n * elem;
    memset(slot, 0, elem);
    (*n)++;
    return slot;
}

bench_case *bench_report_add_case(bench_report *r)
{
    return grow((void **)&r->cases, &r->n_cases, &r->cap_cases, sizeof *r->cases);
}

bench_speedup *bench_report_add_speedup(bench_report *r)
{
    return grow((void **)&r->speedups, &r->n_speedups, &r->cap_speedups,
                sizeof *r->speedups);
}

bench_memory *bench_report_add_memory(bench_report *r)
{
    return grow((void **)&r->memory, &r->n_memory, &r->cap_memory, sizeof *r->memory);
}

bench_launch_check *bench_report_add_launch_check(bench_report *r)
{
    return grow((void **)&r->launch_checks, &r->n_launch_checks, &r->cap_launch_checks,
                sizeof *r->launch_checks);
}

bench_e2e *bench_report_add_e2e(bench_report *r)
{
    return grow((void **)&r->e2e, &r->n_e2e, &r->cap_e2e, sizeof *r->e2e);
}

bench_gemm *bench_report_add_gemm(bench_report *r)
{
    return grow((void **)&r->gemm, &r->n_gemm, &r->cap_gemm, sizeof *r->gemm);
}

bench_dist *bench_report_add_dist(bench_report *r)
{
    return grow((void **)&r->dist, &r->n_dist, &r->cap_dist, sizeof *r->dist);
}

int bench_report_note(bench_report *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *copy = strdup(buf);
    if (!copy)
        return -1;
    char **slot = grow((void **)&r->notes, &r->n_notes, &r->cap_notes, sizeof *r->notes);
    if (!slot) {
        free(copy);
        return -1;
    }
    *slot = copy;
    return 0;
}

void bench_report_free(bench_report *r)
{
    for (size_t i = 0; i < r->n_notes; i++)
        free(r->notes[i]);
    void *lists[] = {r->notes, r->cases, r->speedups, r->memory, r->launch_checks,
                     r->e2e, r->gemm, r->dist, r->sweep};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        free(lists[i]);
    memset(r, 0, sizeof *r);
}

/* GB/s for bytes_per_param * n bytes in ms milliseconds; 0 when either is 0. */
static double gbs_of(double bytes_per_param, uint64_t n, double ms)
{
    if (!(ms > 0.0) || !(bytes_per_param > 0.0))
        return 0.0;
    return bytes_per_param * (double)n / (ms * 1e6);
}

static double frac_of(double gbs, double triad)
{
    return triad > 0.0 ? gbs / triad : 0.0;
}

void bench_case_derive(bench_case *c)
{
    c->micro_gbs = gbs_of(c->micro_bytes, c->n, c->micro_ms.median);
    c->update_gbs = gbs_of(c->update_bytes, c->n, c->update_ms.median);
    c->gbs = gbs_of(c->cycle_bytes, c->n, c->cycle_ms.median);
    c->micro_frac = frac_of(c->micro_gbs, c->triad_gbs);
    c->update_frac = frac_of(c->update_gbs, c->triad_gbs);
    c->frac_of_triad = frac_of(c->gbs, c->triad_gbs);
    c->micro_frac_reps = (bench_stat){c->micro_frac, c->micro_frac, c->micro_frac,
                                      c->micro_frac, c->micro_frac, 1};
    c->update_frac_reps = (bench_stat){c->update_frac, c->update_frac, c->update_frac,
                                       c->update_frac, c->update_frac, 1};
    c->frac_reps = (bench_stat){c->frac_of_triad, c->frac_of_triad, c->frac_of_triad,
                                c->frac_of_triad, c->frac_of_triad, 1};
}

int bench_case_paired_fracs(bench_case *c, const double *micro, const double *update,
                            const double *cycle, const double *triad, size_t reps)
{
    if (reps == 0)
        return 0;
    double *x = malloc(3 * reps * sizeof *x);
    if (!x)
        return -1;
    double *xm = x, *xu = x + reps, *xc = x + 2 * reps;
    for (size_t r = 0; r < reps; r++) {
        xm[r] = frac_of(gbs_of(c->micro_bytes, c->n, micro[r]), triad[r]);
        xu[r] = frac_of(gbs_of(c->update_bytes, c->n, update[r]), triad[r]);
        xc[r] = frac_of(gbs_of(c->cycle_bytes, c->n, cycle[r]), triad[r]);
    }
    c->micro_frac_reps = bench_summarize(xm, reps);
    c->update_frac_reps = bench_summarize(xu, reps);
    c->frac_reps = bench_summarize(xc, reps);
    c->micro_frac = c->micro_frac_reps.median;
    c->update_frac = c->update_frac_reps.median;
    c->frac_of_triad = c->frac_reps.median;
    free(x);
    return 0;
}

const bench_case *bench_report_find(const bench_report *r, const char *optimizer,
                                    bench_variant variant, char path, char feed,
                                    uint64_t n)
{
    for (size_t i = 0; i < r->n_cases; i++) {
        const bench_case *c = &r->cases[i];
        if (c->variant == variant && c->path == path && c->feed == feed && c->n == n
            && strcmp(c->optimizer, optimizer) == 0)
            return c;
    }
    return NULL;
}

static double ratio(const bench_case *slow, const bench_case *fast)
{
    if (!slow || !fast || !(fast->cycle_ms.median > 0.0))
        return 0.0;
    return slow->cycle_ms.median / fast->cycle_ms.median;
}

int bench_report_speedups(bench_report *r)
{
    r->n_speedups = 0;
    for (size_t i = 0; i < r->n_cases; i++) {
        const bench_case *f = &r->cases[i];
        if (f->variant != BENCH_FUSED)
            continue;
        const bench_case *u = bench_report_find(r, f->optimizer, BENCH_UNFUSED, '-',
                                                f->feed, f->n);
        const bench_case *p = bench_report_find(r, f->optimizer, BENCH_PER_TENSOR, '-',
                                                f->feed, f->n);
        if (!u && !p)
            continue;
        bench_speedup *s = bench_report_add_speedup(r);
        if (!s)
            return -1;
        f = &r->cases[i]; /* (cases did not move: only speedups grew) */
        snprintf(s->optimizer, sizeof s->optimizer, "%s", f->optimizer);
        s->path = f->path;
        s->clip = f->clip;
        s->n = f->n;
        s->k = f->k;
        s->vs_unfused = ratio(u, f);
        s->vs_per_tensor = ratio(p, f);
    }
    return 0;
}
