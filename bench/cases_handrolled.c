/* cases_handrolled.c - the cycle a user hand-rolls without clgrad, one
 * launch per tensor and pass: CLBlast saxpy per micro-step (path A; on path
 * B the backward wrote into the accumulator), then scal 1/k (and
 * 1/loss_scale), snrm2 per tensor and one blocking read of the norms to
 * compute the clip coefficient on the host, scal by it, a plain update
 * kernel (bench/cl/handrolled.cl: optim.cl's step, one element per work-item,
 * its scalars from the host) and a zero fill. */
#include "cycle.h"
#include "clgrad_advanced.h"
#include "bench_kernels.h"
#include "clutil.h"

#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct handrolled {
    clg_context *ctx;
    cl_command_queue queue;
    const bench_config *bc;
    clg_config cfg; /* hyperparameters, as clgrad would use them */
    char feed;
    unsigned k, tensors;
    size_t *off, *cnt;
    uint64_t n;
    cl_mem p, acc, s0, s1, g, norms;
    float *norms_host;
    cl_kernel update, zero, axpy_half;
    size_t local;
    uint64_t reserved;
    uint64_t launches;
    uint64_t t;        /* updates applied, for bias corrections */
    float loss_scale;  /* dynamic loss scaling, host side */
} handrolled;

static int blast_ok(CLBlastStatusCode st, const char *what)
{
    if (st == CLBlastSuccess)
        return 1;
    fprintf(stderr, "clgrad-bench: %s: CLBlast status %d\n", what, (int)st);
    return 0;
}

static int launch(handrolled *h, cl_kernel kernel, size_t count, const char *what)
{
    size_t global = bench_round_up(count, h->local);
    cl_int err = clEnqueueNDRangeKernel(h->queue, kernel, 1, NULL, &global, &h->local, 0,
                                        NULL, NULL);
    h->launches++;
    return bench_cl_ok(err, what);
}

/* One micro-step: acc += g per tensor (path A), nothing on path B. */
static int hr_micro(handrolled *h)
{
    if (h->feed != 'A')
        return 0;
    for (unsigned t = 0; t < h->tensors; t++) {
        if (h->bc->grad_dtype == CLG_FP32) {
            CLBlastStatusCode st = CLBlastSaxpy(h->cnt[t], 1.0f, h->g, h->off[t], 1, h->acc,
                                                h->off[t], 1, &h->queue, NULL);
            h->launches += 1; /* Xaxpy is one kernel */
            if (!blast_ok(st, "CLBlastSaxpy"))
                return -1;
        } else {
            cl_ulong off = h->off[t], cnt = h->cnt[t];
            float alpha = 1.0f;
            cl_int err = clSetKernelArg(h->axpy_half, 2, sizeof off, &off);
            err |= clSetKernelArg(h->axpy_half, 3, sizeof cnt, &cnt);
            err |= clSetKernelArg(h->axpy_half, 4, sizeof alpha, &alpha);
            if (!bench_cl_ok(err, "plain_axpy_half args")
                || !launch(h, h->axpy_half, h->cnt[t], "plain_axpy_half"))
                return -1;
        }
    }
    return 0;
}

/* plain_update's arguments (bench/cl/handrolled.cl), in order */
enum {
    UA_P, UA_ACC, UA_S0, UA_S1, UA_OFF, UA_N, UA_SCALE, UA_STEP, UA_LR, UA_WD, UA_DECAY,
    UA_STEP_SIZE, UA_BC2_SQRT, UA_BETA1, UA_BETA2, UA_EPS, UA_MOMENTUM, UA_DAMPENING
};

/* The arguments that stay for the run: buffers and hyperparameters. */
static int set_fixed_update_args(handrolled *h)
{
    const clg_config *c = &h->cfg;
    cl_kernel kr = h->update;
    float scale = 1.0f; /* the scal passes already applied 1/k and the clip */
    float decay = 1.0f - c->lr * c->weight_decay;
    cl_int err = clSetKernelArg(kr, UA_P, sizeof(cl_mem), &h->p);
    err |= clSetKernelArg(kr, UA_ACC, sizeof(cl_mem), &h->acc);
    err |= clSetKernelArg(kr, UA_S0, sizeof(cl_mem), &h->s0);
    err |= clSetKernelArg(kr, UA_S1, sizeof(cl_mem), h->s1 ? &h->s1 : NULL);
    err |= clSetKernelArg(kr, UA_SCALE, sizeof scale, &scale);
    err |= clSetKernelArg(kr, UA_LR, sizeof c->lr, &c->lr);
    err |= clSetKernelArg(kr, UA_WD, sizeof c->weight_decay, &c->weight_decay);
    err |= clSetKernelArg(kr, UA_DECAY, sizeof decay, &decay);
    err |= clSetKernelArg(kr, UA_BETA1, sizeof c->beta1, &c->beta1);
    err |= clSetKernelArg(kr, UA_BETA2, sizeof c->beta2, &c->beta2);
    err |= clSetKernelArg(kr, UA_EPS, sizeof c->eps, &c->eps);
    err |= clSetKernelArg(kr, UA_MOMENTUM, sizeof c->momentum, &c->momentum);
    err |= clSetKernelArg(kr, UA_DAMPENING, sizeof c->dampening, &c->dampening);
    return bench_cl_ok(err, "plain_update args");
}

/* The arguments of update h->t + 1: its count and bias corrections. */
static int set_step_args(handrolled *h)
{
    const clg_config *c = &h->cfg;
    cl_uint step = (cl_uint)(h->t + 1);
    float bc1 = (float)(1.0 - pow(c->beta1, (double)step));
    float step_size = c->lr / bc1;
    float bc2_sqrt = (float)sqrt(1.0 - pow(c->beta2, (double)step));
    cl_int err = clSetKernelArg(h->update, UA_STEP, sizeof step, &step);
    err |= clSetKernelArg(h->update, UA_STEP_SIZE, sizeof step_size, &step_size);
    err |= clSetKernelArg(h->update, UA_BC2_SQRT, sizeof bc2_sqrt, &bc2_sqrt);
    return bench_cl_ok(err, "plain_update step args");
}

/* The arguments of one tensor. */
static int set_tensor_args(handrolled *h, cl_ulong off, cl_ulong cnt)
{
    cl_int err = clSetKernelArg(h->update, UA_OFF, sizeof off, &off);
    err |= clSetKernelArg(h->update, UA_N, sizeof cnt, &cnt);
    return bench_cl_ok(err, "plain_update tensor args");
}

/* The end of the cycle. */
static int hr_update(handrolled *h)
{
    int stats = bench_config_needs_stats(h->bc);
    float inv = 1.0f / (float)h->k;
    if (h->bc->dynamic_loss_scale)
        inv /= h->loss_scale;
    for (unsigned t = 0; t < h->tensors; t++) {
        CLBlastStatusCode st = CLBlastSscal(h->cnt[t], inv, h->acc, h->off[t], 1, &h->queue,
                                            NULL);
        h->launches += 1;
        if (!blast_ok(st, "CLBlastSscal(1/k)"))
            return -1;
        if (stats) {
            st = CLBlastSnrm2(h->cnt[t], h->norms, t, h->acc, h->off[t], 1, &h->queue, NULL);
            h->launches += 2; /* Xnrm2: main + epilogue kernels */
            if (!blast_ok(st, "CLBlastSnrm2"))
                return -1;
        }
    }
    float coef = 1.0f;
    int skip = 0;
    if (stats) {
        /* the host sync a user cannot avoid: the norms decide the clip */
        cl_int err = clEnqueueReadBuffer(h->queue, h->norms, CL_TRUE, 0,
                                         h->tensors * sizeof(float), h->norms_host, 0, NULL,
                                         NULL);
        if (!bench_cl_ok(err, "read norms"))
            return -1;
        double sumsq = 0.0;
        for (unsigned t = 0; t < h->tensors; t++)
            sumsq += (double)h->norms_host[t] * h->norms_host[t];
        double norm = sqrt(sumsq);
        if (!isfinite(norm)) {
            skip = 1; /* GradScaler: skip, back off */
            h->loss_scale *= 0.5f;
        } else if (h->bc->clip) {
            double c = h->cfg.clip_norm / (norm + 1e-6);
            coef = c < 1.0 ? (float)c : 1.0f;
        }
    }
    if (!skip && !set_step_args(h))
        return -1;
    for (unsigned t = 0; t < h->tensors && !skip; t++) {
        if (h->bc->clip) {
            /* always applied, as the baseline does (a coefficient
             * of 1 costs the same pass) */
            CLBlastStatusCode st = CLBlastSscal(h->cnt[t], coef, h->acc, h->off[t], 1,
                                                &h->queue, NULL);
            h->launches += 1;
            if (!blast_ok(st, "CLBlastSscal(clip)"))
                return -1;
        }
        if (!set_tensor_args(h, h->off[t], h->cnt[t])
            || !launch(h, h->update, h->cnt[t], "plain_update"))
            return -1;
    }
    for (unsigned t = 0; t < h->tensors; t++) {
        cl_ulong off = h->off[t], cnt = h->cnt[t];
        cl_int err = clSetKernelArg(h->zero, 1, sizeof off, &off);
        err |= clSetKernelArg(h->zero, 2, sizeof cnt, &cnt);
        if (!bench_cl_ok(err, "plain_zero args") || !launch(h, h->zero, h->cnt[t], "plain_zero"))
            return -1;
    }
    if (!skip)
        h->t++;
    return 0;
}

static int hr_step(void *self, unsigned i)
{
    handrolled *h = self;
    if (hr_micro(h))
        return -1;
    return i + 1 == h->k ? hr_update(h) : 0;
}

static uint64_t hr_launches(void *self)
{
    return ((handrolled *)self)->launches;
}

static void hr_destroy(void *self)
{
    handrolled *h = self;
    if (!h)
        return;
    if (h->queue)
        clFinish(h->queue);
    const cl_mem mems[] = {h->p, h->acc, h->s0, h->s1, h->g, h->norms};
    const cl_kernel kernels[] = {h->update, h->zero, h->axpy_half};
    bench_release_mems(mems, sizeof mems / sizeof mems[0]);
    bench_release_kernels(kernels, sizeof kernels / sizeof kernels[0]);
    if (h->reserved)
        clg_context_unreserve(h->ctx, h->reserved);
    free(h->off);
    free(h->cnt);
    free(h->norms_host);
    free(h);
}

static int make(handrolled *h, cl_mem *out, size_t bytes, const void *pattern,
                size_t pattern_size)
{
    return bench_filled_buffer(h->ctx, bytes, pattern, pattern_size, "hand-rolled", out);
}

int bench_handrolled_create(bench_cycle *out, clg_context *ctx, const bench_config *bc,
                            uint64_t n, unsigned tensors, char feed, unsigned k, size_t wg)
{
    handrolled *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->ctx = ctx;
    h->queue = clg_context_queue(ctx);
    h->bc = bc;
    h->cfg = bench_clg_config(bc, k, 0);
    h->feed = feed;
    h->k = k;
    h->n = n;
    h->tensors = tensors;
    h->loss_scale = bc->dynamic_loss_scale ? h->cfg.loss_scale_init : 1.0f;
    h->off = calloc(tensors, sizeof *h->off);
    h->cnt = calloc(tensors, sizeof *h->cnt);
    h->norms_host = calloc(tensors, sizeof *h->norms_host);
    if (!h->off || !h->cnt || !h->norms_host)
        goto fail;
    size_t at = 0;
    for (unsigned t = 0; t < tensors; t++) {
        h->off[t] = at;
        h->cnt[t] = bench_tensor_size(n, tensors, t);
        at += h->cnt[t];
    }

    unsigned states = bench_state_count(bc->optimizer);
    unsigned gbytes = feed == 'A' ? bench_dtype_bytes(bc->grad_dtype) : 0;
    uint64_t bytes = n * (8 + 4ull * states + gbytes) + tensors * sizeof(float);
    if (!bench_clg_ok(ctx, clg_context_reserve(ctx, bytes), "hand-rolled buffers"))
        goto fail;
    h->reserved = bytes;

    const float zero = 0.0f, small = 1e-3f;
    const cl_ushort small16 = 0x1419;
    size_t fbytes = (size_t)n * sizeof(float);
    if (make(h, &h->p, fbytes, &zero, sizeof zero) || make(h, &h->acc, fbytes, &small, 4)
        || make(h, &h->s0, fbytes, &zero, 4)
        || (states > 1 && make(h, &h->s1, fbytes, &zero, 4))
        || make(h, &h->norms, tensors * sizeof(float), &zero, 4))
        goto fail;
    if (feed == 'A') {
        int rc = bc->grad_dtype == CLG_FP32 ? make(h, &h->g, fbytes, &small, 4)
                                            : make(h, &h->g, (size_t)n * 2, &small16, 2);
        if (rc)
            goto fail;
    }

    /* the update variant: optim.cl's -D options, as the library passes them */
    if (h->cfg.amsgrad || h->cfg.clip_value > 0.0f) {
        fprintf(stderr, "clgrad-bench: %s: the hand-rolled update has no AMSGrad and no "
                        "clipping by value\n", bc->name);
        goto fail;
    }
    char options[96];
    snprintf(options, sizeof options, "-DOPT=%d -DMOMENTUM=%d -DNESTEROV=%d -DMAXIMIZE=%d",
             (int)h->cfg.optimizer, h->cfg.momentum != 0.0f, h->cfg.nesterov != 0,
             h->cfg.maximize != 0);
    cl_program prog;
    if (!bench_clg_ok(ctx,
                      clg_context_program_source(ctx, "handrolled",
                                                 bench_kernel_source("handrolled"), options,
                                                 &prog, NULL),
                      "handrolled program"))
        goto fail;
    cl_int err;
    h->update = clCreateKernel(prog, "plain_update", &err);
    if (!bench_cl_ok(err, "plain_update") || !set_fixed_update_args(h))
        goto fail;
    h->zero = clCreateKernel(prog, "plain_zero", &err);
    if (!bench_cl_ok(err, "plain_zero"))
        goto fail;
    err = clSetKernelArg(h->zero, 0, sizeof(cl_mem), &h->acc);
    if (bc->grad_dtype != CLG_FP32 && feed == 'A') {
        h->axpy_half = clCreateKernel(prog, "plain_axpy_half", &err);
        if (!bench_cl_ok(err, "plain_axpy_half"))
            goto fail;
        err = clSetKernelArg(h->axpy_half, 0, sizeof(cl_mem), &h->acc);
        err |= clSetKernelArg(h->axpy_half, 1, sizeof(cl_mem), &h->g);
    }
    if (!bench_cl_ok(err, "hand-rolled clSetKernelArg"))
        goto fail;
    h->local = bench_local_size(h->update, clg_context_device(ctx), wg ? wg : 256);
    if (!h->local || !bench_cl_ok(clFinish(h->queue), "clFinish"))
        goto fail;

    *out = (bench_cycle){.self = h, .k = k, .step = hr_step, .launches = hr_launches,
                         .destroy = hr_destroy, .groups = tensors,
                         .host_syncs_per_update = bench_config_needs_stats(bc) ? 1.0 : 0.0};
    return 0;
fail:
    hr_destroy(h);
    return -1;
}
