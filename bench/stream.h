/* stream.h - STREAM copy and triad on the bench's device, one repetition
 * per call so the bench can interleave them with the cases it measures. */
#ifndef BENCH_STREAM_H
#define BENCH_STREAM_H

#include "clgrad.h"

#include <stdint.h>

typedef struct bench_stream {
    clg_context *ctx;
    cl_mem a, b, c;
    uint64_t n;        /* floats per array (a multiple of vw) */
    unsigned vw;       /* floats per work-item */
    size_t local, global;
    cl_kernel copy, triad, triad_gs;
    uint64_t reserved; /* bytes charged to the context's budget */
} bench_stream;

/* Allocates three arrays of n floats (rounded down to a multiple of 16),
 * charged to the context's budget, builds the kernels (vector width vw,
 * work-group size wg, 0: 1024) and runs each kernel once. vw == 0 picks
 * the width (4, 8 or 16) with the best median triad.
 * Returns 0, or -1 after printing why. */
int bench_stream_init(bench_stream *s, clg_context *ctx, uint64_t n, unsigned vw, size_t wg);
/* One repetition, blocking; GB/s (copy: 8 bytes per element, triad: 12),
 * or a negative value on failure. */
double bench_stream_copy(bench_stream *s);
double bench_stream_triad(bench_stream *s);
/* Diagnostic: the triad (float4) as a grid-stride loop over `groups`
 * work-groups of 256, the launch shape of clgrad's streaming kernels. */
double bench_stream_triad_gridstride(bench_stream *s, unsigned groups);
void bench_stream_free(bench_stream *s);

#endif /* BENCH_STREAM_H */
