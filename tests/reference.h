/* reference.h - an independent double-precision model of one clgrad update
 * cycle, written from docs/semantics.md and PyTorch's documented algorithms
 * (torch.optim.SGD/Adam/AdamW, clip_grad_norm_, amp.GradScaler), not from
 * clgrad's kernels. Tests feed it the same gradients (as the device sees
 * them) and compare the device's params, states and statistics against it.
 * Also: fp16/bf16 conversions with round-to-nearest-even. */
#ifndef CLGRAD_TEST_REFERENCE_H
#define CLGRAD_TEST_REFERENCE_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

/* PyTorch's fp32 comparison tolerances (torch.testing.assert_close). */
#define REF_RTOL 1.3e-6
#define REF_ATOL 1e-5

typedef struct ref_model {
    clg_config cfg;
    size_t n; /* elements, tensors concatenated without padding */
    size_t n_groups;
    double *lr_mult; /* per group */
    double *wd;      /* per group, resolved (< 0 in the API means cfg's) */
    size_t n_tensors;
    size_t *offset, *count; /* per tensor */
    int *group;             /* per tensor */

    double *p, *acc, *acc1; /* params, accumulator, first micro-step's w*g */
    double *st[3];          /* optimizer states (NULL where absent) */
    size_t n_states;

    /* the cycle */
    unsigned micro; /* finite micro-steps taken in the current cycle */
    unsigned k;     /* length of the current cycle */
    double weight_sum;
    double w1;       /* weight of the first micro-step */
    uint64_t t;      /* applied updates */
    uint64_t cycles; /* completed cycles, applied or skipped */
    uint64_t skipped_updates, skipped_micro, micro_total;
    int sticky_nonfinite; /* error policy: unreported inf/NaN */

    /* loss scaling */
    double loss_scale;
    unsigned growth_tracker;

    /* statistics of the last update */
    double last_lr;   /* schedule(t) of the last applied update (no lr_mult) */
    double grad_norm; /* NaN when no statistics ran */
    double clip_coef;
    int last_nonfinite;
    double *tensor_norm; /* per tensor, of the normalized gradient */

    /* noise scale EMA */
    double noise_g2, noise_tr, noise_scale;
    uint64_t noise_count;
} ref_model;

/* Builds the reference. Groups: lr_mult[i], weight_decay[i] (< 0: cfg's);
 * group 0 is normally (1, -1) like clgrad's implicit group. Tensors:
 * counts[i] elements in group groups[i]. p0: the initial params (all
 * tensors in order), as the fp32 values uploaded to the device. Returns 0
 * on success. */
int ref_model_init(ref_model *r, const clg_config *cfg, size_t n_groups, const double *lr_mult,
                   const double *weight_decay, size_t n_tensors, const size_t *counts,
                   const int *groups, const float *p0);
void ref_model_free(ref_model *r);

/* Number of optimizer states the config keeps (clgrad's numbering). */
size_t ref_state_count(const clg_config *cfg);

/* One micro-step: adds w*g (g: n values as the device reads them, already
 * multiplied by the loss scale if the caller scales its loss). Returns 1 if
 * the cycle completed (an update was applied or skipped), else 0. */
int ref_micro(ref_model *r, const double *g, double w);
/* The same with fp32 gradients. */
int ref_micro_f(ref_model *r, const float *g, double w);
/* Ends the cycle now with what it holds (clg_flush). Returns 0, or -1 if
 * the cycle is empty. */
int ref_flush(ref_model *r);

/* Drops the current cycle (clg_reset_cycle). */
void ref_reset_cycle(ref_model *r);

/* lr of update t (before the group's lr_mult). */
double ref_schedule_lr(const clg_config *cfg, uint64_t t);
/* The length of the cycle after `cycle` completed ones, skipped updates
 * included (k_schedule or accum_steps), as clgrad.h defines the index. */
unsigned ref_cycle_length(const clg_config *cfg, uint64_t cycle);
/* GradScaler's update of (scale, tracker) after one cycle, with clgrad's
 * min/max clamp. */
void ref_loss_scale_update(const clg_config *cfg, double *scale, unsigned *tracker, int found_inf);

/* ---------------------------------------------------- low precision */

/* IEEE binary16 <-> fp32, round to nearest even; NaN stays NaN (quiet). */
uint16_t ref_f32_to_f16(float x);
float ref_f16_to_f32(uint16_t h);
/* bfloat16 (upper 16 bits of fp32) <-> fp32, round to nearest even. */
uint16_t ref_f32_to_bf16(float x);
float ref_bf16_to_f32(uint16_t h);

/* ---------------------------------------------------- comparisons */

/* Checks |got - want| <= atol + rtol*|want| element-wise (NaN must match
 * NaN, inf must match exactly). Prints the first and the worst offender to
 * stderr with what. Returns the number of failing elements. */
size_t ref_compare(const char *what, const float *got, const double *want, size_t n, double rtol,
                   double atol);

#endif /* CLGRAD_TEST_REFERENCE_H */
