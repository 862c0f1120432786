/* stream.h - STREAM copy and triad on the bench's device: a clpeak-style
 * sweep picks the fastest kernel shape at setup, then one repetition per
 * call so the bench can interleave them with the cases it measures. */
#ifndef BENCH_STREAM_H
#define BENCH_STREAM_H

#include "clgrad.h"
#include "report.h"

#include "timing.h"

#include <stdint.h>

/* One STREAM kernel at one launch shape. */
typedef struct bench_stream_kernel {
    cl_kernel kernel;
    char form[16];     /* "copy", "triad", "triad_nt", "triad_inplace" */
    unsigned vw;       /* floats per work-item (one vector, no loop) */
    size_t local, global;
    double bytes;      /* bytes STREAM counts per launch */
} bench_stream_kernel;

typedef struct bench_stream {
    clg_context *ctx;
    cl_mem a, b, c;
    uint64_t n;                     /* floats per array (a multiple of 16) */
    bench_stream_kernel copy;       /* fastest copy */
    bench_stream_kernel triad;      /* fastest triad of any form: the reference */
    bench_stream_kernel classic;    /* fastest a = b + s*c */
    cl_kernel triad_gs;
    bench_stream_trial *sweep;      /* every shape tried, with its median */
    size_t n_sweep;
    uint64_t reserved;              /* bytes charged to the context's budget */
} bench_stream;

/* Allocates three arrays of n floats (rounded down to a multiple of 16),
 * charged to the context's budget, then sweeps: vector widths 1, 2, 4, 8,
 * 16 (only vw if non-zero) x work-group sizes 64, 256, 1024 (only wg if
 * non-zero) x forms (copy; triad, triad with non-temporal stores where the
 * compiler has them, triad in place), every shape launched once to warm up,
 * then `rounds` rounds of one launch of each (interleaved, so drift hits
 * all alike); keeps the fastest median of each kind.
 * Returns 0, or -1 after printing why. */
int bench_stream_init(bench_stream *s, clg_context *ctx, uint64_t n, unsigned vw, size_t wg,
                      unsigned rounds);
/* Replaces the arrays with three of n floats (rounded down to a multiple
 * of 16), keeping the chosen shapes, and runs each kernel once: the cases
 * of n parameters are measured next to STREAM arrays of their own size, so
 * that both see the same share of the last-level cache. Returns 0, or -1
 * after printing why (s is then freed). */
int bench_stream_resize(bench_stream *s, uint64_t n);
/* One repetition, blocking; GB/s (copy: 8 bytes per element, triads: 12),
 * or a negative value on failure. bench_stream_triad is the reference. */
double bench_stream_copy(bench_stream *s);
double bench_stream_triad(bench_stream *s);
double bench_stream_triad_classic(bench_stream *s);
/* Diagnostic: the classic triad (float4) as a grid-stride loop over
 * `groups` work-groups of 256. */
double bench_stream_triad_gridstride(bench_stream *s, unsigned groups);
/* Moves the sweep's list to the report (s keeps none). */
void bench_stream_report(bench_stream *s, bench_report *r);
void bench_stream_free(bench_stream *s);

/* Every interleaved STREAM repetition of a run. */
typedef struct bench_stream_samples {
    bench_samples copy, triad, classic;
} bench_stream_samples;
/* One interleaved repetition: copy, classic triad, reference triad, each
 * added to all (when not NULL); the reference triad's GB/s is returned
 * through triad_gbs. Returns 0, or -1 on failure. */
int bench_stream_rep(bench_stream *s, bench_stream_samples *all, double *triad_gbs);
void bench_stream_samples_free(bench_stream_samples *all);

#endif /* BENCH_STREAM_H */
