/* trainer_loop.c - running a clgrad-train run: effective batches as
 * micro-batches through the MLP and clg_step, syncs only to read back, per-epoch
 * evaluation and log lines, --metrics rows, and checkpoints with the run's
 * position (position.h). */
#include "trainer_internal.h"
#include "loop.h"
#include "metrics.h"
#include "position.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ checkpoints */

/* A --dist run's save: collective (every rank calls it; rank 0 writes). */
typedef struct dist_save {
    trainer *t;
    char msg[1024];
} dist_save;

static clg_status save_dist(void *user, clg_model *model, const char *path,
                            const char *const *keys, const char *const *values, size_t n)
{
    (void)model;
    dist_save *s = user;
    return s->t->dist->save(s->t->dist, path, keys, values, n, s->msg, sizeof s->msg);
}

int trainer_save(trainer *t)
{
    train_position p = run_position(&t->run);
    if (t->dist) {
        dist_save s = {t, ""};
        clg_status st =
            position_save_with(t->run.model, t->run.opt->checkpoint, &p, t->run.config.key_ptr,
                               t->run.config.value_ptr, (size_t)t->run.config.n, save_dist, &s);
        if (st != CLG_SUCCESS)
            return trainer_fail(t, "--checkpoint: %s (%s)", s.msg[0] ? s.msg : "out of memory",
                                clg_status_string(st));
        return 0;
    }
    return run_save(&t->run, NULL, NULL, 0);
}

int trainer_resume(trainer *t)
{
    train_position p;
    if (run_resume_load(&t->run, NULL, t->res->overridden, sizeof t->res->overridden, &p) != 0)
        return -1;
    if (p.seed != t->run.opt->seed || p.batch != t->run.opt->batch || p.n_train != t->run.order.n)
        return trainer_fail(
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
        return trainer_fail_clg(t, "--resume: reading the loaded counters", lst);
    if (ls.cycles != p.updates || ls.micro_steps != p.micro_steps)
        return trainer_fail(t,
                    "--resume: %s is inconsistent: its metadata says %" PRIu64 " updates and %" PRIu64
                    " micro-steps, the training state %" PRIu64 " and %" PRIu64,
                    t->run.opt->resume, p.updates, p.micro_steps, ls.cycles, ls.micro_steps);
    if (p.next_batch > t->run.batches_per_epoch)
        return trainer_fail(t, "--resume: %s: batch position %" PRIu64 " beyond the epoch's %" PRIu64,
                    t->run.opt->resume, p.next_batch, t->run.batches_per_epoch);
    run_set_position(&t->run, &p);
    return trainer_widen_weights(t); /* bf16 master: the loaded params */
}

/* ------------------------------------------------------------ training */

int trainer_zero_sums(trainer *t, cl_mem sums)
{
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(t->run.ctx), sums, &z, sizeof z, 0,
                                   4 * sizeof z, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : trainer_fail_cl(t, "clearing sums", e);
}

int trainer_read_sums(trainer *t, cl_mem sums, float out[4])
{
    cl_int e = clEnqueueReadBuffer(clg_context_queue(t->run.ctx), sums, CL_TRUE, 0,
                                   4 * sizeof(float), out, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : trainer_fail_cl(t, "reading sums", e);
}

int trainer_evaluate(trainer *t, double *loss, double *acc)
{
    if (trainer_zero_sums(t, t->eval_sums) != 0)
        return -1;
    unsigned cap = t->net->cap;
    for (size_t off = 0; off < t->run.dtest.n; off += cap) {
        cl_uint rows = (cl_uint)(t->run.dtest.n - off < cap ? t->run.dtest.n - off : cap);
        mlp_source src = {t->run.dtest.images, t->run.dtest.labels, t->run.dtest.idx, (cl_uint)off};
        cl_int e = mlp_forward(t->net, &src, rows, t->one, 0, 1.0f, 0);
        if (e == CL_SUCCESS)
            e = mlp_sum(t->net, rows, t->eval_sums);
        if (e != CL_SUCCESS)
            return trainer_fail_cl(t, "evaluation", e);
    }
    float s[4];
    if (trainer_read_sums(t, t->eval_sums, s) != 0)
        return -1;
    *loss = s[0] / (double)t->run.dtest.n;
    *acc = s[1] / (double)t->run.dtest.n;
    return 0;
}

/* The host stays at most two updates ahead of the device: it waits for the
 * end of the update before last. Without a bound it enqueued whole epochs
 * ahead (it waits only to read something back), and PoCL's queue does work
 * linear in the commands pending for every command it completes: a
 * profile of a 1-epoch run had 78% of the time in that list walk, and the
 * throughput fell with the run's length. Two updates keep the device fed. */
int trainer_bound_queue(trainer *t)
{
    const size_t n = sizeof t->ahead / sizeof *t->ahead;
    cl_event *slot = &t->ahead[t->run.updates % n];
    cl_int e = CL_SUCCESS;
    if (*slot) {
        e = clWaitForEvents(1, slot);
        clReleaseEvent(*slot);
        *slot = NULL;
    }
    if (e == CL_SUCCESS)
        e = clEnqueueMarkerWithWaitList(clg_context_queue(t->run.ctx), 0, NULL, slot);
    if (e == CL_SUCCESS)
        e = clFlush(clg_context_queue(t->run.ctx));
    return e == CL_SUCCESS ? 0 : trainer_fail_cl(t, "bounding the queue", e);
}

int trainer_micro_compute(trainer *t, size_t off, cl_uint rows)
{
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
    for (int j = 0; j < t->n_tensors && e == CL_SUCCESS && t->scratch; j++)
        e = mlp_convert(&t->net->k, o->grad_dtype, t->scratch, t->scratch_view[j].offset,
                        t->grad_view[j].mem, t->grad_view[j].offset,
                        (cl_uint)t->scratch_view[j].count);
    if (e != CL_SUCCESS)
        return trainer_fail_cl(t, "micro-step", e);
    return 0;
}

/* One effective batch perm[start .. start + len) as micro-batches of b. */
static int run_batch(trainer *t, size_t start, size_t len)
{
    const train_options *o = t->run.opt;
    size_t km = order_micro_count(len, t->run.b);
    t->run.cycle_k = (unsigned)km;
    int updated = 0;
    for (size_t i = 0; i < km; i++) {
        cl_uint rows = (cl_uint)order_micro_len(len, t->run.b, i);
        if (trainer_micro_compute(t, start + i * t->run.b, rows) != 0)
            return -1;
        /* Weight = samples in the micro-batch. */
        clg_status st = clg_step(t->run.model, o->path == GRAD_PATH_B ? NULL : t->run.grads,
                                 (float)rows, &updated, NULL);
        if (st != CLG_SUCCESS)
            return trainer_fail_clg(t, "clg_step", st);
        t->run.micro_steps++;
        t->run.samples += rows;
    }
    if (!updated) {
        clg_status st = clg_flush(t->run.model, NULL);
        if (st != CLG_SUCCESS)
            return trainer_fail_clg(t, "clg_flush", st);
    }
    t->run.updates++;
    if (trainer_widen_weights(t) != 0) /* bf16 master: the next forward's fp32 copy */
        return -1;
    return trainer_bound_queue(t);
}

/* sums[2] holds the loss of the update since the last row. */
int trainer_clear_update_loss(trainer *t)
{
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(t->run.ctx), t->sums, &z, sizeof z,
                                   2 * sizeof z, sizeof z, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : trainer_fail_cl(t, "clearing sums", e);
}

static int write_metrics_row(trainer *t, size_t len)
{
    float s[4];
    if (trainer_read_sums(t, t->sums, s) != 0)
        return -1;
    if (trainer_clear_update_loss(t) != 0)
        return -1;
    return trainer_metrics_row(t, s[2] / (double)len);
}

int trainer_metrics_row(trainer *t, double loss)
{
    clg_stats st = clg_stats_init();
    clg_status cs = clg_model_stats(t->run.model, 1, &st);
    if (cs != CLG_SUCCESS)
        return trainer_fail_clg(t, "clg_model_stats", cs);
    metrics_row r = {
        .update = t->run.updates,
        .micro_steps = t->run.micro_steps,
        .samples = t->run.samples,
        .epoch = (unsigned)t->run.epoch + 1,
        .loss = loss,
        .lr = st.lr,
        .grad_norm = st.grad_norm,
        .loss_scale = st.loss_scale,
        .skipped_updates = st.skipped_updates,
        .samples_per_s = run_samples_per_s(&t->run),
    };
    if (metrics_write(t->metrics, &r) != 0) {
        char why[1024];
        metrics_close(t->metrics, why, sizeof why); /* fails: says why, drops the temporary */
        free(t->metrics);
        t->metrics = NULL;
        return trainer_fail(t, "--metrics: %s", why);
    }
    return 0;
}

/* The loop's hooks (loop.h) for the classifier. */
static int epoch_start(void *task)
{
    trainer *t = task;
    t->res->epochs = (unsigned)t->run.epoch + 1;
    return trainer_zero_sums(t, t->sums);
}

static int batch(void *task, size_t start, size_t len)
{
    return run_batch(task, start, len);
}

static int has_metrics(void *task)
{
    return ((trainer *)task)->metrics != NULL;
}

static int metrics_line(void *task, size_t len)
{
    return write_metrics_row(task, len);
}

static int running_loss(void *task, uint64_t epoch_samples, double *loss)
{
    float s[4];
    if (trainer_read_sums(task, ((trainer *)task)->sums, s) != 0)
        return -1;
    *loss = epoch_samples ? s[0] / (double)epoch_samples : NAN;
    return 0;
}

static int save(void *task)
{
    return trainer_save(task);
}

static int epoch_end(void *task, uint64_t epoch_samples, double secs)
{
    trainer *t = task;
    const train_options *o = t->run.opt;
    float s[4];
    if (trainer_read_sums(t, t->sums, s) != 0)
        return -1;
    double test_loss = 0, test_acc = 0;
    if (trainer_evaluate(t, &test_loss, &test_acc) != 0)
        return -1;
    t->res->train_loss = epoch_samples ? s[0] / (double)epoch_samples : 0;
    t->res->train_accuracy = epoch_samples ? s[1] / (double)epoch_samples : 0;
    t->res->test_loss = test_loss;
    t->res->test_accuracy = test_acc;
    char extra[128] = "";
    if (o->loss_scale != CLG_LOSS_SCALE_NONE) {
        clg_stats st = clg_stats_init();
        if (clg_model_stats(t->run.model, 1, &st) == CLG_SUCCESS)
            snprintf(extra, sizeof extra, "  loss scale %g  skipped %" PRIu64, st.loss_scale,
                     st.skipped_updates);
    }
    progress_log(&t->run.prog,
                 "epoch %" PRIu64 "/%" PRIu64 ": loss %.4f  train acc %.4f  test acc %.4f  "
                 "test loss %.4f  %.1f s  %.0f samples/s%s\n",
                 t->run.epoch + 1, run_epochs(&t->run), t->res->train_loss,
                 t->res->train_accuracy, test_acc, test_loss, secs,
                 secs > 0 ? epoch_samples / secs : 0.0, extra);
    return 0;
}

int trainer_loop(trainer *t)
{
    static const run_loop_hooks hooks = {
        .epoch_start = epoch_start,
        .batch = batch,
        .sync_every_update = has_metrics,
        .after_update = metrics_line,
        .running_loss = running_loss,
        .save = save,
        .epoch_end = epoch_end,
    };
    if (t->run.updates >= t->run.total_updates) { /* resumed at the end: the evaluation */
        double loss, acc;
        if (trainer_evaluate(t, &loss, &acc) != 0)
            return -1;
        t->res->test_loss = loss;
        t->res->test_accuracy = acc;
    }
    return run_loop(&t->run, &hooks, t);
}
