/* bytes_model.h - the bytes-per-parameter model (docs/design.md, 2): how many
 * bytes each pass of an accumulation cycle must move (clgrad's fused cycle
 * and the hand-rolled CLBlast cycle), how many bytes of device memory a
 * configuration holds per parameter, and the largest model that fits a
 * memory budget. Pure arithmetic: no OpenCL calls. */
#ifndef BENCH_BYTES_MODEL_H
#define BENCH_BYTES_MODEL_H

#include <stdint.h>

typedef enum bench_variant {
    BENCH_FUSED = 0,      /* clgrad, one param group */
    BENCH_UNFUSED = 1,    /* hand-rolled: CLBlast + plain kernels, per tensor */
    BENCH_PER_TENSOR = 2  /* clgrad's kernels per tensor: one model per tensor */
} bench_variant;

/* "fused", "unfused", "per_tensor". */
const char *bench_variant_name(bench_variant variant);

/* What the traffic of a configuration depends on. */
typedef struct bm_shape {
    unsigned states;     /* optimizer state arrays */
    unsigned grad_bytes; /* bytes per element of the external gradients */
    int stats;           /* a pass over the whole gradient precedes the update
                            (global norm, inf/NaN check) */
    int clip;            /* gradients are scaled by a clip coefficient */
    /* 0 in both: fp32 (4). state_bytes: one state array's bytes per
     * element as stored, its absmax included (bm_state_bytes) */
    double state_bytes;
    unsigned param_bytes;
} bm_shape;

/* Bytes per element of one state array of state_dtype (clg_dtype value):
 * fp32 4, bf16 2, Q8 1 + 4/256, Q4 1/2 + 4/128 (codes and fp32 absmax). */
double bm_state_bytes(int state_dtype);

/* Bytes per parameter of one accumulation cycle of k micro-steps.
 * first_micro: micro-step 1 when it does not end the cycle; later_micro:
 * micro-steps 2..k-1; final_step: the micro-step that ends the cycle,
 * together with everything the update does; cycle: the whole cycle. */
typedef struct bm_cycle {
    double first_micro, later_micro, final_step, cycle;
} bm_cycle;

/* path is 'A', 'B' or 'C' (C only for clgrad's variants: the last
 * micro-step's gradients are read by the update kernel). For the unfused
 * variant path says how gradients arrive (A: separate buffers, B: written
 * into the accumulator by the backward). Returns 0, or -1 for an invalid
 * combination (k == 0, unknown path, C unfused). */
int bm_cycle_bytes(bm_shape shape, bench_variant variant, char path, unsigned k,
                   bm_cycle *out);

/* The in-place update: reads acc, params, states; writes params, states. */
double bm_update_inplace(bm_shape shape);
/* The hand-rolled end of cycle: scal 1/k (r+w), [nrm2 (r)], [scal clip
 * (r+w)], plain update, zero fill (w). */
double bm_handrolled_update(bm_shape shape);

/* Device memory per parameter (bytes). */
typedef struct bm_memory {
    double params, accumulators, states, param_copy, grad_buffers, total;
} bm_memory;
/* acc_bytes: 4 (fp32) or 2 (bf16); copy_bytes: 0, 2; grads: external
 * gradient buffers exist (paths A and C) with shape.grad_bytes per element. */
bm_memory bm_memory_per_param(bm_shape shape, unsigned acc_bytes, unsigned copy_bytes,
                              int grads);

/* Largest n, a multiple of align (>= 1), with total(n) <= budget, for a
 * non-decreasing total; 0 if not even align parameters fit. */
typedef uint64_t (*bm_total_fn)(uint64_t n, void *user);
uint64_t bm_max_params(uint64_t budget, bm_total_fn total, void *user, uint64_t align);

/* The same for the linear model fixed + n * bytes_per_param (rounded up to
 * whole bytes), by direct division. */
uint64_t bm_max_params_linear(uint64_t budget, uint64_t fixed, double bytes_per_param,
                              uint64_t align);

#endif /* BENCH_BYTES_MODEL_H */
