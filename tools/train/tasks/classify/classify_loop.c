/* classify_loop.c - the classifier's part of a clgrad-train run's loop
 * (core/loop.c, plain or --dist): a micro-batch through the MLP into
 * clgrad's accumulator, the loss and accuracy sums, the evaluation, the
 * per-epoch line, and --resume's checks of the run's position
 * (position.h). */
#include "classify_internal.h"
#include "loop.h"
#include "position.h"
#include "run_log.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------ checkpoints */

int classify_resume(classify_trainer *t)
{
    train_position p;
    if (run_resume_load(&t->run, NULL, t->res->run.overridden,
                        sizeof t->res->run.overridden, &p) != 0)
        return -1;
    if (p.seed != t->run.opt->seed || p.batch != t->run.opt->batch || p.n_train != t->run.order.n)
        return task_fail(
            t,
            "--resume: %s was saved with --seed %" PRIu64 " --batch %" PRIu64 " and %" PRIu64
            " training samples; resume with the same values (now %" PRIu64 ", %u, %zu)",
            t->run.opt->resume, p.seed, p.batch, p.n_train, t->run.opt->seed, t->run.opt->batch,
            t->run.order.n);
    /* The run's counters are stored twice: in the trainer's metadata and in
     * the library's own state. A file whose two copies disagree was edited
     * or damaged; trusting either would train a different run. */
    clg_stats ls = clg_stats_init();
    clg_status lst = clg_model_stats(t->run.model, 1, &ls);
    if (lst != CLG_SUCCESS)
        return task_fail_clg(t, "--resume: reading the loaded counters", lst);
    if (ls.cycles != p.updates || ls.micro_steps != p.micro_steps)
        return task_fail(t,
                         "--resume: %s is inconsistent: its metadata says %" PRIu64
                         " updates and %" PRIu64 " micro-steps, the training state %" PRIu64
                         " and %" PRIu64,
                         t->run.opt->resume, p.updates, p.micro_steps, ls.cycles, ls.micro_steps);
    if (p.next_batch > t->run.batches_per_epoch)
        return task_fail(t, "--resume: %s: batch position %" PRIu64 " beyond the epoch's %" PRIu64,
                         t->run.opt->resume, p.next_batch, t->run.batches_per_epoch);
    run_set_position(&t->run, &p);
    return model_fp32_widen(&t->run, &t->weights); /* bf16 master: the loaded params */
}

/* ------------------------------------------------------------ training */

static int classify_evaluate(classify_trainer *t, double *loss, double *acc)
{
    const run_sums eval = {t->eval_sums, 0, 4};
    if (run_clear_sums(&t->run, &eval) != 0)
        return -1;
    unsigned cap = t->net->cap;
    for (size_t off = 0; off < t->run.dtest.n; off += cap) {
        cl_uint rows = (cl_uint)(t->run.dtest.n - off < cap ? t->run.dtest.n - off : cap);
        mlp_source src = {t->run.dtest.images, t->run.dtest.labels, t->run.dtest.idx, (cl_uint)off};
        cl_int e = mlp_forward(t->net, &src, rows, t->one, 0, 1.0f, 0);
        if (e == CL_SUCCESS)
            e = mlp_sum(t->net, rows, t->eval_sums);
        if (e != CL_SUCCESS)
            return task_fail_cl(t, "evaluation", e);
    }
    float s[4];
    if (run_read_sums(&t->run, &eval, s) != 0)
        return -1;
    *loss = s[0] / (double)t->run.dtest.n;
    *acc = s[1] / (double)t->run.dtest.n;
    return 0;
}

/* The loop's hooks (task.h) for the classifier. */

/* One micro-batch: rows samples from position off of the epoch's order
 * through the MLP, its loss and accuracy into the sums, its gradients
 * into clgrad's accumulator (path B) or the gradient buffers (A, C). */
static int micro(void *task, size_t off, unsigned rows)
{
    classify_trainer *t = task;
    const train_options *o = t->run.opt;
    mlp_source src = {t->run.dtrain.images, t->run.dtrain.labels, t->run.dtrain.idx, (cl_uint)off};
    /* Path B: the backward writes rows x mean gradient (the sum) into
     * the accumulator itself. Paths A/C: clgrad multiplies the
     * gradients by the weight, so they carry the mean. Either way the
     * library divides by the sum of weights: the exact mean over B. */
    float mult = o->path == GRAD_PATH_B ? 1.0f : 1.0f / (float)rows;
    cl_int e = mlp_forward(t->net, &src, rows, t->scale.mem, t->scale.offset, mult, 1);
    if (e == CL_SUCCESS)
        e = mlp_sum(t->net, rows, t->sums);
    float beta = o->path == GRAD_PATH_B ? clg_accum_beta(t->run.model) : 0.0f;
    if (e == CL_SUCCESS)
        e = mlp_backward(t->net, rows, t->targets, beta);
    for (int j = 0; j < t->n_tensors && e == CL_SUCCESS && t->scratch.buf; j++)
        e = mlp_convert(&t->net->k, o->grad_dtype, t->scratch.buf, t->scratch.view[j].offset,
                        t->grad_view[j].mem, t->grad_view[j].offset,
                        (cl_uint)t->scratch.view[j].count);
    if (e != CL_SUCCESS)
        return task_fail_cl(t, "micro-step", e);
    return 0;
}

/* s[0]: the loss of the samples (the epoch's sums, or the update's) */
static double mean_loss(void *task, const float *s, uint64_t samples)
{
    (void)task;
    return samples ? s[0] / (double)samples : NAN;
}

static int evaluate(void *task)
{
    classify_trainer *t = task;
    if (classify_evaluate(t, &t->res->test_loss, &t->res->test_accuracy) != 0)
        return -1;
    return run_log_eval(&t->run, "test", t->res->test_loss, &t->res->test_accuracy);
}

static int epoch_end(void *task, const float *s, uint64_t epoch_samples, double secs)
{
    classify_trainer *t = task;
    const train_options *o = t->run.opt;
    t->res->train_loss = epoch_samples ? s[0] / (double)epoch_samples : 0;
    t->res->train_accuracy = epoch_samples ? s[1] / (double)epoch_samples : 0;
    char ranks[32] = "", extra[128] = "";
    if (t->run.dist)
        snprintf(ranks, sizeof ranks, " (%d ranks)", t->run.dist->size);
    if (o->loss_scale != CLG_LOSS_SCALE_NONE) {
        clg_stats st = clg_stats_init();
        if (clg_model_stats(t->run.model, 1, &st) == CLG_SUCCESS)
            snprintf(extra, sizeof extra, "  loss scale %g  skipped %" PRIu64, st.loss_scale,
                     st.skipped_updates);
    }
    progress_log(&t->run.prog,
                 "epoch %" PRIu64 "/%" PRIu64 ": loss %.4f  train acc %.4f  test acc %.4f  "
                 "test loss %.4f  %.1f s  %.0f samples/s%s%s\n",
                 t->run.epoch + 1, run_epochs(&t->run), t->res->train_loss,
                 t->res->train_accuracy, t->res->test_accuracy, t->res->test_loss, secs,
                 secs > 0 ? epoch_samples / secs : 0.0, ranks, extra);
    return 0;
}

int classify_loop(classify_trainer *t)
{
    static const run_loop_hooks hooks = {
        .micro = micro,
        .mean_loss = mean_loss,
        .evaluate = evaluate,
        .epoch_end = epoch_end,
    };
    /* the epoch's loss and correct answers, the update's loss (sums[2]) */
    t->run.epoch_sums = (run_sums){t->sums, 0, 2};
    t->run.update_sums = (run_sums){t->sums, 2, 1};
    return run_train(&t->run, &hooks, t);
}
