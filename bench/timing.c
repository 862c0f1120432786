/* timing.c - monotonic clock, sample summaries and repetition calibration. */
#define _POSIX_C_SOURCE 200809L
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics at fraction q of sorted x. */
static double quantile_sorted(const double *x, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return x[lo] + (x[hi] - x[lo]) * frac;
}

bench_stat bench_summarize(double *x, size_t n)
{
    bench_stat s = {0};
    if (n == 0)
        return s;
    qsort(x, n, sizeof *x, cmp_double);
    s.count = n;
    s.min = x[0];
    s.max = x[n - 1];
    s.median = quantile_sorted(x, n, 0.5);
    s.q1 = quantile_sorted(x, n, 0.25);
    s.q3 = quantile_sorted(x, n, 0.75);
    return s;
}

int bench_samples_add(bench_samples *s, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        double *x = realloc(s->x, cap * sizeof *x);
        if (!x)
            return -1;
        s->x = x;
        s->cap = cap;
    }
    s->x[s->n++] = v;
    return 0;
}

bench_stat bench_samples_stat(const bench_samples *s)
{
    bench_stat st = {0};
    if (s->n == 0)
        return st;
    double *copy = malloc(s->n * sizeof *copy);
    if (!copy)
        return st;
    memcpy(copy, s->x, s->n * sizeof *copy);
    st = bench_summarize(copy, s->n);
    free(copy);
    return st;
}

void bench_samples_clear(bench_samples *s)
{
    s->n = 0;
}

void bench_samples_free(bench_samples *s)
{
    free(s->x);
    s->x = NULL;
    s->n = s->cap = 0;
}

unsigned bench_calibrate_reps(double target_ms, double one_ms, unsigned min_reps,
                              unsigned max_reps)
{
    if (max_reps < min_reps)
        max_reps = min_reps;
    if (!(one_ms > 0.0) || !(target_ms > 0.0))
        return min_reps;
    double want = ceil(target_ms / one_ms);
    if (want < (double)min_reps)
        return min_reps;
    if (want > (double)max_reps)
        return max_reps;
    return (unsigned)want;
}
