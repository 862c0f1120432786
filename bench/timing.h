/* timing.h - wall-clock time and robust summaries of repeated measurements
 * (median, quartiles, min, max) for clgrad-bench. */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stddef.h>

/* Monotonic time in milliseconds. */
double bench_now_ms(void);

/* Summary of repeated samples; every field is 0 for an empty set. */
typedef struct bench_stat {
    double median, q1, q3, min, max;
    size_t count;
} bench_stat;

/* Summarizes x[0..n) (x is sorted in place). Quartiles interpolate
 * linearly between order statistics (type 7, as numpy's default). */
bench_stat bench_summarize(double *x, size_t n);

/* A growable list of samples. */
typedef struct bench_samples {
    double *x;
    size_t n, cap;
} bench_samples;
/* Returns 0 on success, -1 if out of memory. */
int bench_samples_add(bench_samples *s, double v);
/* Summary of the samples (works on a copy; the list keeps its order). */
bench_stat bench_samples_stat(const bench_samples *s);
void bench_samples_clear(bench_samples *s);
void bench_samples_free(bench_samples *s);

/* Repetitions for a target time given the time of one repetition:
 * ceil(target / one), clamped to [min_reps, max_reps]. */
unsigned bench_calibrate_reps(double target_ms, double one_ms, unsigned min_reps,
                              unsigned max_reps);

#endif /* BENCH_TIMING_H */
