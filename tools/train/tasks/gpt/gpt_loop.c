/* gpt_loop.c - the GPT's part of a run's loop (core/loop.c): a
 * micro-batch of windows through the model into clgrad's accumulator
 * (path B) or gradient buffers (A/C), the loss sums, the evaluation on the validation windows, the
 * per-epoch line, and checkpoints. */
#include "gpt_run_internal.h"
#include "loop.h"
#include "run_log.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Sums i (GPT_TRAIN_SUMS, GPT_EVAL_SUMS) cleared. */
static int zero_sums(gpt_trainer *t, int i)
{
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(t->run.ctx), t->sums[i], &z, sizeof z, 0,
                                   2 * sizeof z, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : gpt_fail_cl(t, "clearing sums", e);
}

static int read_sums_of(gpt_trainer *t, int i, float *s)
{
    cl_int e = clEnqueueReadBuffer(clg_context_queue(t->run.ctx), t->sums[i], CL_TRUE, 0,
                                   2 * sizeof(float), s, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : gpt_fail_cl(t, "reading sums", e);
}

int gpt_evaluate(gpt_trainer *t)
{
    if (zero_sums(t, GPT_EVAL_SUMS) != 0)
        return -1;
    cl_int e = CL_SUCCESS;
    const devdata *v = &t->run.dtest;
    for (size_t off = 0; e == CL_SUCCESS && off < v->n; off += t->run.b) {
        unsigned rows = (unsigned)(v->n - off < t->run.b ? v->n - off : t->run.b);
        gpt_tokens tok = {v->images, v->idx, (cl_uint)off, t->shape.context + 1};
        e = gpt_forward(t->m, &tok, rows, t->sums[GPT_EVAL_SUMS]);
    }
    if (e != CL_SUCCESS)
        return gpt_fail_cl(t, "evaluation", e);
    float s[2];
    if (read_sums_of(t, GPT_EVAL_SUMS, s) != 0)
        return -1;
    t->res->val_loss = s[1] > 0 ? s[0] / (double)s[1] : NAN;
    return 0;
}

static int epoch_start(void *task)
{
    gpt_trainer *t = task;
    t->res->epochs = (unsigned)t->run.epoch + 1;
    return zero_sums(t, GPT_TRAIN_SUMS) != 0 ? -1 : zero_sums(t, GPT_UPDATE_SUMS);
}

/* rows windows from position off of the epoch's order: forward (their
 * loss into the sums) and backward. Path B: the gradients, each
 * sequence's mean over its positions summed over the rows, go into
 * clgrad's accumulator; paths A/C (a bf16 accumulator): the micro-batch's
 * mean into clgrad's gradient buffers, which clgrad multiplies by the
 * weight. Either way the core's clg_step weighs the micro-step by its
 * rows, so that clgrad's mean is the batch's. */
static int micro(void *task, size_t off, unsigned rows)
{
    gpt_trainer *t = task;
    const devdata *d = &t->run.dtrain;
    gpt_tokens tok = {d->images, d->idx, (cl_uint)off, t->shape.context + 1};
    cl_int e = gpt_forward(t->m, &tok, rows, t->sums[GPT_TRAIN_SUMS]);
    if (e == CL_SUCCESS && run_logs_every_update(&t->run))
        e = gpt_add_loss(t->m, rows, t->sums[GPT_UPDATE_SUMS]);
    int path_b = t->run.opt->path == GRAD_PATH_B;
    float dscale = path_b ? 1.0f : 1.0f / (float)rows;
    float beta = path_b ? clg_accum_beta(t->run.model) : 0.0f;
    if (e == CL_SUCCESS)
        e = gpt_backward(t->m, &tok, rows, dscale, t->scale, beta);
    if (e == CL_SUCCESS && t->g->profile) {
        e = clFinish(clg_context_queue(t->run.ctx));
        t->micro_done = progress_now(); /* the core's clg_step comes next */
    }
    return e == CL_SUCCESS ? 0 : gpt_fail_cl(t, "micro-step", e);
}

/* After the update was enqueued: with --profile, waited for, its time
 * since the last micro-step's work ended is the optimizer's. */
static int updated(void *task)
{
    gpt_trainer *t = task;
    if (t->g->profile) {
        cl_int e = clFinish(clg_context_queue(t->run.ctx));
        if (e != CL_SUCCESS)
            return gpt_fail_cl(t, "the update", e);
        t->res->optimizer_seconds += progress_now() - t->micro_done;
    }
    if (model_fp32_widen(&t->run, &t->weights) != 0) /* bf16 master: the next forward's copy */
        return -1;
    return run_bound_queue(&t->run);
}

/* --profile: the model's times so far into the result, its profiling
 * off (gpt_profile clears the times when it is turned on again). */
static void profile_collect(gpt_trainer *t)
{
    if (!t->g->profile)
        return;
    gpt_profile_times p = gpt_profile_read(t->m);
    t->res->prof.gemm += p.gemm;
    t->res->prof.attention += p.attention;
    t->res->prof.other += p.other;
    gpt_profile(t->m, 0);
}

/* --metrics: every rank reads its sums after every update (the flag is the
 * same on every rank), the core adds them up over the ranks, and rank 0,
 * which alone has the file, writes the update's mean loss over its
 * positions. The update's loss is summed apart from the epoch's, so that
 * it does not lose precision as the epoch's sums grow. */
static int has_metrics(void *task)
{
    return run_logs_every_update(&((gpt_trainer *)task)->run);
}

static int metrics_row(void *task, size_t len, const float *s)
{
    (void)len;
    gpt_trainer *t = task;
    if (zero_sums(t, GPT_UPDATE_SUMS) != 0)
        return -1;
    double loss = s[3] > 0 ? s[2] / (double)s[3] : NAN;
    return run_watch_update(&t->run, loss);
}

/* the epoch's loss and positions, then the update's (zeros without
 * --metrics or --log) */
static int read_sums(void *task, float *s)
{
    gpt_trainer *t = task;
    if (read_sums_of(t, GPT_TRAIN_SUMS, s) != 0)
        return -1;
    s[2] = s[3] = 0.0f;
    return run_logs_every_update(&t->run) ? read_sums_of(t, GPT_UPDATE_SUMS, s + 2) : 0;
}

static double running_loss(void *task, const float *s, uint64_t epoch_samples)
{
    (void)task;
    return epoch_samples && s[1] > 0 ? s[0] / (double)s[1] : NAN;
}

static int save(void *task)
{
    gpt_trainer *t = task;
    return task_settings_save(&t->run, &t->settings);
}

int gpt_sampling_only(const gpt_trainer *t)
{
    return t->g->sample && t->run.updates_at_start >= t->run.total_updates;
}

/* The evaluation's forwards are no training time: not profiled. */
static int evaluate(void *task)
{
    gpt_trainer *t = task;
    if (gpt_sampling_only(t))
        return 0;
    profile_collect(t);
    int rc = gpt_evaluate(t);
    if (rc == 0)
        rc = run_log_eval(&t->run, "validation", t->res->val_loss, NULL);
    gpt_profile(t->m, t->g->profile);
    return rc;
}

static int epoch_end(void *task, const float *s, uint64_t epoch_samples, double secs)
{
    gpt_trainer *t = task;
    gpt_result *r = t->res;
    r->train_loss = s[1] > 0 ? s[0] / (double)s[1] : NAN;
    progress_log(&t->run.prog,
                 "epoch %" PRIu64 "/%" PRIu64 ": train loss %.4f  validation %.4f nats/byte "
                 "(%.3f bits; unigram %.3f, bigram %.3f)  %.1f s  %.0f tokens/s\n",
                 t->run.epoch + 1, run_epochs(&t->run), r->train_loss, r->val_loss,
                 gpt_bits(r->val_loss), gpt_bits(r->base.unigram), gpt_bits(r->base.bigram), secs,
                 secs > 0 ? (double)epoch_samples * t->shape.context / secs : 0.0);
    return 0;
}

int gpt_loop(gpt_trainer *t)
{
    static const run_loop_hooks hooks = {
        .epoch_start = epoch_start,
        .micro = micro,
        .updated = updated,
        .n_sums = 4,
        .read_sums = read_sums,
        .sync_every_update = has_metrics,
        .after_update = metrics_row,
        .running_loss = running_loss,
        .save = save,
        .evaluate = evaluate,
        .epoch_end = epoch_end,
    };
    gpt_profile(t->m, t->g->profile);
    int rc = run_loop(&t->run, &hooks, t);
    profile_collect(t);
    return rc;
}
