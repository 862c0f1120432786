/* clutil.h - clgrad-bench's own OpenCL and clgrad calls: error reporting
 * (the bench is a program: it prints and gives up on a case), work-group
 * sizes, and its buffers and kernels made and released. */
#ifndef BENCH_CLUTIL_H
#define BENCH_CLUTIL_H

#include "clgrad.h"

/* 1 if err is CL_SUCCESS; otherwise prints "what: CL_XXX" and returns 0. */
int bench_cl_ok(cl_int err, const char *what);
/* 1 if st is CLG_SUCCESS; otherwise prints what and clg_last_error(ctx). */
int bench_clg_ok(const clg_context *ctx, clg_status st, const char *what);

/* A work-group size for a streaming kernel: want, rounded down to the
 * kernel's preferred multiple, clamped to the kernel's and device's maxima;
 * 0 if the query fails. */
size_t bench_local_size(cl_kernel kernel, cl_device_id device, size_t want);
/* global rounded up to a multiple of local. */
size_t bench_round_up(size_t global, size_t local);

/* A read-write buffer of bytes on ctx's device filled with a repeated
 * pattern of pattern_size bytes, so that every page is touched before
 * anything is timed. Returns 0, or -1 after printing "who clCreateBuffer"
 * or "who clEnqueueFillBuffer" and the error (*out is then NULL or for
 * the caller to release). */
int bench_filled_buffer(clg_context *ctx, size_t bytes, const void *pattern,
                        size_t pattern_size, const char *who, cl_mem *out);

/* Release what is there of n buffers or kernels (NULL ones are skipped). */
void bench_release_mems(const cl_mem *mems, size_t n);
void bench_release_kernels(const cl_kernel *kernels, size_t n);

#endif /* BENCH_CLUTIL_H */
