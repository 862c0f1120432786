/* gpt_loop.c - the GPT's part of a run's loop (core/loop.c): a
 * micro-batch of windows through the model into clgrad's accumulator
 * (path B) or gradient buffers (A/C), the loss sums, the evaluation on the
 * validation windows, the per-epoch line, and --profile's split. */
#include "gpt_run_internal.h"
#include "loop.h"
#include "run_log.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Sums i (GPT_TRAIN_SUMS, ...): the loss sum and the positions. */
static run_sums sums_of(const gpt_trainer *t, int i)
{
    return (run_sums){t->sums[i], 0, 2};
}

int gpt_evaluate(gpt_trainer *t)
{
    const run_sums eval = sums_of(t, GPT_EVAL_SUMS);
    if (run_clear_sums(&t->run, &eval) != 0)
        return -1;
    cl_int e = CL_SUCCESS;
    const devdata *v = &t->run.dtest;
    for (size_t off = 0; e == CL_SUCCESS && off < v->n; off += t->run.b) {
        unsigned rows = (unsigned)(v->n - off < t->run.b ? v->n - off : t->run.b);
        gpt_tokens tok = {v->images, v->idx, (cl_uint)off, t->shape.context + 1};
        e = gpt_forward(t->m, &tok, rows, t->sums[GPT_EVAL_SUMS]);
    }
    if (e != CL_SUCCESS)
        return task_fail_cl(t, "evaluation", e);
    float s[2];
    if (run_read_sums(&t->run, &eval, s) != 0)
        return -1;
    t->res->val_loss = s[1] > 0 ? s[0] / (double)s[1] : NAN;
    return 0;
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
    return e == CL_SUCCESS ? 0 : task_fail_cl(t, "micro-step", e);
}

/* After the update was enqueued: with --profile, waited for, its time
 * since the last micro-step's work ended is the optimizer's. */
static int updated(void *task)
{
    gpt_trainer *t = task;
    if (!t->g->profile)
        return 0;
    cl_int e = clFinish(clg_context_queue(t->run.ctx));
    if (e != CL_SUCCESS)
        return task_fail_cl(t, "the update", e);
    t->res->optimizer_seconds += progress_now() - t->micro_done;
    return 0;
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

/* the loss sum and its positions (the epoch's, or the update's: with
 * --metrics or --log the update's loss is summed apart from the epoch's,
 * so that it does not lose precision as the epoch's sums grow) */
static double mean_loss(void *task, const float *s, uint64_t samples)
{
    (void)task;
    return samples && s[1] > 0 ? s[0] / (double)s[1] : NAN;
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
                 "epoch %" PRIu64 "/%" PRIu64 ": train loss %.4f  validation %.4f nats/%s "
                 "(%.3f bits; unigram %.3f, bigram %.3f)  %.1f s  %.0f tokens/s\n",
                 t->run.epoch + 1, run_epochs(&t->run), r->train_loss, r->val_loss,
                 t->g->tokens ? "token" : "byte", gpt_bits(r->val_loss), gpt_bits(r->base.unigram),
                 gpt_bits(r->base.bigram), secs,
                 secs > 0 ? (double)epoch_samples * t->shape.context / secs : 0.0);
    return 0;
}

int gpt_loop(gpt_trainer *t)
{
    static const run_loop_hooks hooks = {
        .micro = micro,
        .updated = updated,
        .mean_loss = mean_loss,
        .evaluate = evaluate,
        .epoch_end = epoch_end,
    };
    t->run.epoch_sums = sums_of(t, GPT_TRAIN_SUMS);
    t->run.update_sums = sums_of(t, GPT_UPDATE_SUMS);
    gpt_profile(t->m, t->g->profile);
    int rc = run_train(&t->run, &hooks, t);
    profile_collect(t);
    return rc;
}
