/* contrastive_loop.c - the updates of a contrastive run. An effective
 * batch is perm[start .. start + len) of the epoch's order, as micro-batches
 * of b; the sample at position p of update u gets its two views from
 * clg_sample_seed(seed, u, p), whatever micro-batch holds it. Per method:
 *   naive      micro-batch j: views, forward, its own InfoNCE over its m_j
 *              rows, backward with that gradient, clg_step(weight m_j);
 *   contaccum  the same with the banks' rows as extra negatives, and the
 *              micro-batch's rows pushed into the banks after its loss;
 *   gradcache  every micro-batch's views and forward into the cache (no
 *              backward), one InfoNCE over the whole batch, then per
 *              micro-batch the same views again, forward, and backward with
 *              its rows' slice of the batch's gradient, clg_step(m_j).
 * The scale handed to clg_contrastive_grad makes the update that of the
 * method's loss: n/m_j on paths A/C (clgrad multiplies by m_j), n on path
 * B (the backward writes m_j x the micro-batch's gradient itself), n the
 * rows of the loss (the batch for GradCache, m_j otherwise). */
#include "contrastive_internal.h"
#include "loop.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

cl_int con_views(con_trainer *t, size_t start, size_t pos0, cl_uint rows, uint64_t update)
{
    cl_kernel k = t->k_views;
    cl_uint off = (cl_uint)(start + pos0), p0 = (cl_uint)pos0, shift = t->c->shift;
    cl_ulong seed = t->run.opt->seed, u = update;
    cl_float noise = t->c->noise;
    cl_int e = clSetKernelArg(k, 0, sizeof(cl_mem), &t->run.dtrain.images);
    e |= clSetKernelArg(k, 1, sizeof(cl_mem), &t->run.dtrain.idx);
    e |= clSetKernelArg(k, 2, sizeof off, &off);
    e |= clSetKernelArg(k, 3, sizeof rows, &rows);
    e |= clSetKernelArg(k, 4, sizeof seed, &seed);
    e |= clSetKernelArg(k, 5, sizeof u, &u);
    e |= clSetKernelArg(k, 6, sizeof p0, &p0);
    e |= clSetKernelArg(k, 7, sizeof shift, &shift);
    e |= clSetKernelArg(k, 8, sizeof noise, &noise);
    e |= clSetKernelArg(k, 9, sizeof(cl_mem), &t->enc->x);
    if (e != CL_SUCCESS)
        return CL_INVALID_KERNEL_ARGS;
    size_t global = (size_t)2 * rows * t->run.train->dim;
    return clEnqueueNDRangeKernel(clg_context_queue(t->run.ctx), k, 1, NULL, &global, NULL, 0, NULL,
                                  NULL);
}

static cl_int add_loss(con_trainer *t, float w)
{
    clg_view lv;
    clg_contrastive_loss_view(t->cache, &lv);
    cl_kernel k = t->k_add_loss;
    cl_int e = clSetKernelArg(k, 0, sizeof(cl_mem), &t->sums);
    e |= clSetKernelArg(k, 1, sizeof(cl_mem), &lv.mem);
    e |= clSetKernelArg(k, 2, sizeof w, &w);
    size_t one = 1;
    return e != CL_SUCCESS ? CL_INVALID_KERNEL_ARGS
                           : clEnqueueNDRangeKernel(clg_context_queue(t->run.ctx), k, 1, NULL, &one,
                                                    NULL, 0, NULL, NULL);
}

/* The views of positions [p0, p0 + rows) through the encoder. */
static int forward(con_trainer *t, size_t start, size_t p0, cl_uint rows)
{
    cl_int e = con_views(t, start, p0, rows, t->run.updates);
    if (e == CL_SUCCESS)
        e = con_encoder_forward(t->enc, 2 * rows);
    return e == CL_SUCCESS ? 0 : task_fail_cl(t, "encoder forward", e);
}

/* The embeddings of the last forward into cache rows [row, row + rows). */
static int fill(con_trainer *t, size_t row, cl_uint rows)
{
    cl_mem out = con_encoder_output(t->enc);
    size_t d = t->c->embed_dim;
    clg_status st = clg_contrastive_fill(t->cache, CLG_SIDE_QUERY, row, rows, out, 0, d, CLG_FP32,
                                         NULL);
    if (st == CLG_SUCCESS)
        st = clg_contrastive_fill(t->cache, CLG_SIDE_KEY, row, rows, out, rows * d, d, CLG_FP32,
                                  NULL);
    return st == CLG_SUCCESS ? 0 : task_fail_clg(t, "filling the cache", st);
}

/* Backward of the last forward with cache rows [row, row + rows)'s
 * gradient (of a loss over n rows), then the micro-step of weight rows. */
static int backward_step(con_trainer *t, size_t row, cl_uint rows, size_t n, int *updated)
{
    const int path_b = t->run.opt->path == GRAD_PATH_B;
    float scale = path_b ? (float)n : (float)n / (float)rows;
    cl_mem out = con_encoder_output(t->enc);
    size_t d = t->c->embed_dim;
    clg_status st = clg_contrastive_grad(t->cache, CLG_SIDE_QUERY, row, rows, scale, out, 0, d,
                                         CLG_FP32, NULL);
    if (st == CLG_SUCCESS)
        st = clg_contrastive_grad(t->cache, CLG_SIDE_KEY, row, rows, scale, out, rows * d, d,
                                  CLG_FP32, NULL);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "the cache's gradient", st);
    float beta = path_b ? clg_accum_beta(t->run.model) : 0.0f;
    cl_int e = con_encoder_backward(t->enc, 2 * rows, t->targets, beta);
    if (e != CL_SUCCESS)
        return task_fail_cl(t, "encoder backward", e);
    st = clg_step(t->run.model, path_b ? NULL : t->run.grads, (float)rows, updated, NULL);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "clg_step", st);
    t->run.micro_steps++;
    t->run.samples += rows;
    return 0;
}

static int run_batch(con_trainer *t, size_t start, size_t len)
{
    size_t km = run_begin_cycle(&t->run, len);
    int updated = 0;
    clg_status st;
    if (t->c->method == CON_GRADCACHE) {
        for (size_t i = 0; i < km; i++) {
            cl_uint rows = (cl_uint)order_micro_len(len, t->run.b, i);
            if (forward(t, start, i * t->run.b, rows) != 0 || fill(t, i * t->run.b, rows) != 0)
                return -1;
        }
        if ((st = clg_contrastive_compute(t->cache, len, NULL)) != CLG_SUCCESS)
            return task_fail_clg(t, "clg_contrastive_compute", st);
        if (add_loss(t, 1.0f) != CL_SUCCESS)
            return task_fail(t, "summing the loss");
        for (size_t i = 0; i < km; i++) { /* the same views again: the replay */
            cl_uint rows = (cl_uint)order_micro_len(len, t->run.b, i);
            if (forward(t, start, i * t->run.b, rows) != 0 ||
                backward_step(t, i * t->run.b, rows, len, &updated) != 0)
                return -1;
        }
    } else {
        for (size_t i = 0; i < km; i++) {
            cl_uint rows = (cl_uint)order_micro_len(len, t->run.b, i);
            if (forward(t, start, i * t->run.b, rows) != 0 || fill(t, 0, rows) != 0)
                return -1;
            if ((st = clg_contrastive_compute(t->cache, rows, NULL)) != CLG_SUCCESS)
                return task_fail_clg(t, "clg_contrastive_compute", st);
            if (add_loss(t, (float)rows / (float)len) != CL_SUCCESS)
                return task_fail(t, "summing the loss");
            if (t->c->method == CON_CONTACCUM &&
                (st = clg_contrastive_bank_push(t->cache, rows, NULL)) != CLG_SUCCESS)
                return task_fail_clg(t, "clg_contrastive_bank_push", st);
            if (backward_step(t, 0, rows, rows, &updated) != 0)
                return -1;
        }
    }
    if (!updated && (st = clg_flush(t->run.model, NULL)) != CLG_SUCCESS)
        return task_fail_clg(t, "clg_flush", st);
    t->run.updates++;
    return 0;
}

/* The loop's hooks (task.h) for the contrastive task. */
static int batch(void *task, size_t start, size_t len)
{
    return run_batch(task, start, len);
}

/* the weighted InfoNCE and its weight (they carry the samples) */
static double mean_loss(void *task, const float *s, uint64_t samples)
{
    (void)task;
    (void)samples;
    return s[1] > 0 ? s[0] / s[1] : NAN;
}

static int epoch_end(void *task, const float *s, uint64_t epoch_samples, double secs)
{
    (void)secs;
    con_trainer *t = task;
    t->res->loss = mean_loss(t, s, epoch_samples);
    progress_log(&t->run.prog,
                 "epoch %" PRIu64 ": InfoNCE %.4f (%s), %" PRIu64 " updates, %.1f s\n",
                 t->run.epoch + 1, t->res->loss, con_method_name(t->c->method), t->run.updates,
                 t->run.train_seconds);
    return 0;
}

int con_loop(con_trainer *t)
{
    static const run_loop_hooks hooks = {
        .batch = batch,
        .mean_loss = mean_loss,
        .epoch_end = epoch_end,
    };
    t->run.epoch_sums = (run_sums){t->sums, 0, 2};
    return run_train(&t->run, &hooks, t);
}
