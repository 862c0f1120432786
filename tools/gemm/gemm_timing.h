/* gemm_timing.h - runs, checks and times the MLP's GEMM shapes
 * (mlp_gemms.h) through mlp_gemm, with whatever parameters CLBlast holds
 * for the device at the time: shared by clgrad-tune (candidates) and
 * clgrad-bench (CLBlast's defaults against the tuning). */
#ifndef TUNE_GEMM_TIMING_H
#define TUNE_GEMM_TIMING_H

#include "mlp_gemms.h"

typedef struct gemm_bufs {
    cl_context context;
    cl_command_queue queue;
    cl_mem a, b, c;
    size_t a_floats, b_floats, c_floats;
    mlp_gemm_scratch scratch; /* CLBlast's temporary buffer, as the trainer's */
} gemm_bufs;

/* Buffers large enough for every shape (dense operands), filled with a
 * small constant. 0 or an OpenCL error. */
cl_int gemm_bufs_create(cl_context context, cl_command_queue queue, const mlp_gemm_shape *s,
                        size_t n, gemm_bufs *out);
void gemm_bufs_release(gemm_bufs *g);

/* One call of shape s, waited for. The first call with new parameters makes
 * CLBlast build its GEMM program (seconds on PoCL). */
cl_int gemm_run_once(gemm_bufs *g, const mlp_gemm_shape *s);

/* Checks shape s against a double-precision product on the host, with
 * seeded values in [-1, 1] and beta = 0.5 (the trainer accumulates with
 * beta = 1): 0 when every element is within 1e-4 of the reference, relative
 * to the sum of |terms|; otherwise -1 with *worst set to the largest
 * relative error (an OpenCL error is returned as such, < 0 too, with
 * *worst = -1). */
int gemm_check(gemm_bufs *g, const mlp_gemm_shape *s, double *worst);

/* Calls of shape s that take about target_ms back to back (at least 1),
 * from one timed call. */
unsigned gemm_calibrate(gemm_bufs *g, const mlp_gemm_shape *s, double target_ms);

/* reps calls of shape s enqueued back to back, then waited for: the time
 * per call in ms into *ms (as in training, the host does not wait between
 * calls). 0 or an OpenCL/CLBlast error. */
cl_int gemm_time(gemm_bufs *g, const mlp_gemm_shape *s, unsigned reps, double *ms);

/* Median of n values (sorted in place). */
double gemm_median(double *v, size_t n);

#endif /* TUNE_GEMM_TIMING_H */
