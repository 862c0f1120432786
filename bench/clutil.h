/* clutil.h - error reporting for clgrad-bench's own OpenCL and clgrad
 * calls (the bench is a program: it prints and gives up on a case). */
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

#endif /* BENCH_CLUTIL_H */
