/* trainer.c - the training run of clgrad-train (see trainer.h): builds the
 * model on clgrad, uploads the data set, runs effective batches of B
 * samples as k micro-batches of b through CLBlast and cl/mlp.cl, hands
 * each micro-step to clg_step, evaluates per epoch, and writes the
 * requested outputs. */
#include "trainer.h"
#include "devdata.h"
#include "memplan.h"
#include "metrics.h"
#include "mlp.h"
#include "order.h"
#include "position.h"
#include "progress.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trainer {
    const train_options *opt;
    train_result *res;
    char *err;
    size_t errlen;

    clg_context *ctx;
    int own_ctx;
    uint64_t old_budget;
    dataset train_ds, test_ds; /* loaded here (else the caller's) */
    const dataset *train, *test;
    devdata dtrain, dtest;

    unsigned dims[MLP_MAX_LAYERS + 1];
    int n_dims;
    mlp *net;
    clg_model *model;
    clg_grads *grads;
    cl_mem scratch;            /* fp32 gradients before fp16/bf16 stores */
    uint64_t scratch_bytes;    /* reserved */
    clg_view scratch_view[2 * MLP_MAX_LAYERS];
    clg_view targets[2 * MLP_MAX_LAYERS];
    clg_view grad_view[2 * MLP_MAX_LAYERS];
    int n_tensors;
    cl_mem sums, eval_sums, one;
    clg_view scale;

    batch_order order;
    unsigned b, k;
    unsigned cycle_k;          /* micro-steps of the current cycle (k_schedule) */
    uint64_t total_updates, batches_per_epoch;

    uint64_t updates, micro_steps, samples;
    uint64_t epoch, next_batch; /* position of the next batch */
    uint64_t samples_at_start; /* samples of a resumed run before it */
    uint64_t updates_at_start;
    double train_seconds;
    FILE *metrics;
    progress prog;
} trainer;

static int fail(trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(trainer *t, const char *fmt, ...)
{
    if (t->err && t->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->err, t->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int fail_clg(trainer *t, const char *what, clg_status st)
{
    return fail(t, "%s: %s (%s)", what, clg_last_error(t->ctx), clg_status_string(st));
}

static int fail_cl(trainer *t, const char *what, cl_int e)
{
    return fail(t, "%s: %s (%d)", what, clg_status_string((clg_status)e), (int)e);
}

static unsigned k_of_cycle(uint64_t update_index, void *user)
{
    (void)update_index;
    const trainer *t = user;
    return t->cycle_k ? t->cycle_k : 1;
}

/* ------------------------------------------------------------ setup */

static float default_lr(clg_optimizer o)
{
    switch (o) {
    case CLG_SGD: return 0.05f;
    case CLG_LION: return 1e-4f;
    default: return 1e-3f;
    }
}

static int load_data(trainer *t, const train_io *io)
{
    if (io && io->train) {
        t->train = io->train;
    } else {
        if (dataset_load(t->opt->data_dir, "train", &t->train_ds, t->err, t->errlen) != 0)
            return -1;
        t->train = &t->train_ds;
    }
    if (io && io->test) {
        t->test = io->test;
    } else {
        if (dataset_load(t->opt->data_dir, "t10k", &t->test_ds, t->err, t->errlen) != 0)
            return -1;
        t->test = &t->test_ds;
    }
    if (t->train->dim != t->test->dim)
        return fail(t, "training images have %zu pixels but test images %zu", t->train->dim,
                    t->test->dim);
    return 0;
}

/* A decaying schedule needs at least one update after the warmup. */
static uint64_t effective_warmup(const trainer *t)
{
    uint64_t cap = t->opt->schedule == CLG_SCHED_CONSTANT ? t->total_updates
                                                          : t->total_updates - 1;
    return t->opt->warmup < cap ? t->opt->warmup : cap;
}

static int build_model(trainer *t)
{
    const train_options *o = t->opt;
    clg_config cfg = clg_config_default(o->optimizer);
    float lr = o->lr > 0 ? o->lr : default_lr(o->optimizer);
    if (o->lr_scale != CLG_LR_RULE_NONE) {
        float scaled;
        clg_status st = clg_lr_scale(o->lr_scale, lr, o->base_batch, o->batch, &scaled);
        if (st != CLG_SUCCESS)
            return fail(t, "--lr-scale: %s", clg_last_error(NULL));
        lr = scaled;
    }
    t->res->lr = lr;
    cfg.lr = lr;
    if (o->weight_decay >= 0)
        cfg.weight_decay = o->weight_decay;
    if (o->optimizer == CLG_SGD)
        cfg.momentum = 0.9f;
    cfg.schedule.kind = o->schedule;
    cfg.schedule.total = t->total_updates;
    cfg.schedule.warmup = effective_warmup(t);
    cfg.schedule.min_lr = 0.0f;
    cfg.accum_steps = t->k;
    cfg.k_schedule = k_of_cycle;
    cfg.k_schedule_user = t;
    cfg.fuse_last_micro_step = o->path == GRAD_PATH_C;
    cfg.clip_norm = o->clip;
    cfg.loss_scale = o->loss_scale;
    if (o->loss_scale == CLG_LOSS_SCALE_STATIC)
        cfg.loss_scale_init = o->loss_scale_value;
    /* Loss scaling skips overflowing updates (GradScaler); --metrics wants
     * the gradient norm, which the skip check computes on the way. */
    if (o->loss_scale != CLG_LOSS_SCALE_NONE || o->metrics)
        cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    cfg.seed = o->seed;

    clg_status st = clg_model_create(t->ctx, &cfg, &t->model);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "creating the model", st);
    int no_decay = 0;
    st = clg_model_add_group(t->model, "no_decay", 1.0f, 0.0f, &no_decay);
    if (st == CLG_SUCCESS)
        st = mlp_add_tensors(t->net, t->model, no_decay);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "defining the model", st);
    st = clg_model_finalize(t->model);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "allocating the model", st);
    st = mlp_bind(t->net, t->model);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "binding the model", st);
    t->n_tensors = 2 * t->net->n_layers;

    uint64_t n = clg_model_param_count(t->model);
    t->res->params = n;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return fail(t, "out of host memory (%" PRIu64 " parameters)", n);
    mlp_init_params(t->dims, t->n_dims, o->seed, host);
    st = clg_model_upload_params(t->model, -1, host);
    free(host);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "uploading the initial parameters", st);
    return 0;
}

/* Gradient targets of the backward: the accumulator (path B), clgrad's
 * gradient buffers (A/C, fp32), or a fp32 scratch converted into them. */
static int setup_gradients(trainer *t)
{
    const train_options *o = t->opt;
    clg_status st;
    for (int i = 0; i < t->n_tensors; i++) {
        st = clg_model_acc_view(t->model, i, &t->targets[i]);
        if (st != CLG_SUCCESS)
            return fail_clg(t, "accumulator view", st);
    }
    if (o->path == GRAD_PATH_B)
        return 0;
    st = clg_grads_create(t->model, o->grad_dtype, &t->grads);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "creating the gradient buffers", st);
    for (int i = 0; i < t->n_tensors; i++) {
        st = clg_grads_view(t->grads, i, &t->grad_view[i]);
        if (st != CLG_SUCCESS)
            return fail_clg(t, "gradient buffer view", st);
        t->targets[i] = t->grad_view[i];
    }
    if (o->grad_dtype == CLG_FP32)
        return 0;
    uint64_t n = clg_model_param_count(t->model);
    t->scratch_bytes = 4 * n;
    st = clg_context_reserve(t->ctx, t->scratch_bytes);
    if (st != CLG_SUCCESS) {
        t->scratch_bytes = 0;
        return fail_clg(t, "fp32 gradient scratch", st);
    }
    cl_int e;
    t->scratch = clCreateBuffer(clg_context_cl(t->ctx), CL_MEM_READ_WRITE, 4 * n, NULL, &e);
    if (e != CL_SUCCESS)
        return fail_cl(t, "fp32 gradient scratch", e);
    size_t off = 0;
    for (int i = 0; i < t->n_tensors; i++) {
        size_t cnt = clg_model_tensor_size(t->model, i);
        t->scratch_view[i] = (clg_view){t->scratch, off, cnt};
        t->targets[i] = t->scratch_view[i];
        off += cnt;
    }
    return 0;
}

static int setup_buffers(trainer *t)
{
    cl_context cl = clg_context_cl(t->ctx);
    cl_int e1, e2, e3;
    float zeros[4] = {0}, one = 1.0f;
    t->sums = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &e1);
    t->eval_sums =
        clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &e2);
    t->one = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof one, &one, &e3);
    if (e1 != CL_SUCCESS || e2 != CL_SUCCESS || e3 != CL_SUCCESS)
        return fail_cl(t, "small buffers", e1 != CL_SUCCESS ? e1 : e2 != CL_SUCCESS ? e2 : e3);
    /* The loss-gradient kernel multiplies by clgrad's current loss scale,
     * read on the device; without scaling a constant 1 does. */
    if (t->opt->loss_scale == CLG_LOSS_SCALE_NONE ||
        clg_model_loss_scale_view(t->model, &t->scale) != CLG_SUCCESS) {
        if (t->opt->loss_scale != CLG_LOSS_SCALE_NONE)
            return fail_clg(t, "loss scale view", CLG_ERR_UNSUPPORTED);
        t->scale = (clg_view){t->one, 0, 1};
    }
    return 0;
}

static uint64_t available_bytes(trainer *t)
{
    uint64_t used = clg_context_device_bytes(t->ctx);
    uint64_t cap = clg_context_budget(t->ctx);
    if (!cap)
        cap = clg_context_device_info(t->ctx)->global_mem_size;
    return cap > used ? cap - used : 0;
}

/* Activations for micro-batch b; with --auto-micro-batch, halves b (and
 * doubles k) until they fit, dropping whatever the current cycle holds so
 * that the same effective batch restarts from its first sample. */
static int fit_activations(trainer *t)
{
    for (;;) {
        uint64_t need = mlp_activation_bytes(t->dims, t->n_dims, t->b);
        uint64_t avail = available_bytes(t);
        clg_status st = mlp_alloc_activations(t->net, t->b);
        if (st == CLG_SUCCESS)
            return 0;
        if (st != CLG_ERR_OVER_BUDGET && st != CLG_ERR_OUT_OF_DEVICE_MEMORY)
            return fail_clg(t, "allocating activations", st);
        char nb[32], ab[32];
        memplan_bytes(nb, sizeof nb, need);
        memplan_bytes(ab, sizeof ab, avail);
        if (!t->opt->auto_micro_batch || t->b == 1)
            return fail(t,
                        "activations for micro-batch %u need %" PRIu64 " B (%s) but %" PRIu64
                        " B (%s) are available (%s%s); use a smaller --micro-batch%s",
                        t->b, need, nb, avail, ab,
                        st == CLG_ERR_OVER_BUDGET ? "over the memory budget" : "device out of memory",
                        t->opt->vram ? " set by --vram" : "",
                        t->opt->auto_micro_batch ? "" : " or --auto-micro-batch");
        unsigned nb2 = (t->b + 1) / 2;
        unsigned k2 = (unsigned)((t->opt->batch + nb2 - 1) / nb2);
        progress_log(&t->prog,
                     "auto micro-batch: activations for micro-batch %u need %s, %s available "
                     "(%s); retrying with micro-batch %u, k = %u (effective batch %u unchanged)\n",
                     t->b, nb, ab, st == CLG_ERR_OVER_BUDGET ? "over budget" : "out of memory",
                     nb2, k2, t->opt->batch);
        t->b = nb2;
        t->k = k2;
        t->res->halvings++;
        if (t->model)
            clg_reset_cycle(t->model);
    }
}

static void print_plan(trainer *t)
{
    if (t->opt->quiet)
        return;
    memplan p = {0};
    clg_model_memory(t->model, &p.model);
    if (t->grads && p.model.grad_buffers == 0) {
        /* clgrad's plan leaves the gradient buffers out; count them here. */
        p.model.grad_buffers =
            t->res->params * (t->opt->grad_dtype == CLG_FP32 ? 4u : 2u);
        p.model.total += p.model.grad_buffers;
    }
    p.activations = mlp_activation_bytes(t->dims, t->n_dims, t->b);
    p.micro_batch = t->b;
    p.grad_scratch = t->scratch_bytes;
    p.data = t->dtrain.bytes + t->dtest.bytes;
    memplan_total(&p);
    p.is_budget = clg_context_budget(t->ctx) != 0;
    p.available = p.is_budget ? clg_context_budget(t->ctx)
                              : clg_context_device_info(t->ctx)->global_mem_size;
    progress_clear(&t->prog);
    memplan_print(stderr, &p, clg_context_device_info(t->ctx)->name, t->res->params);
}

/* ------------------------------------------------------------ checkpoints */

static train_position current_position(const trainer *t)
{
    train_position p = {t->opt->seed, t->opt->batch, t->order.n, t->epoch, t->next_batch,
                        t->updates, t->micro_steps, t->samples};
    return p;
}

static int save_checkpoint(trainer *t)
{
    train_position p = current_position(t);
    clg_status st = position_save(t->model, t->opt->checkpoint, &p);
    if (st != CLG_SUCCESS)
        return fail_clg(t, "--checkpoint", st);
    return 0;
}

static int resume_from(trainer *t)
{
    train_position p;
    char why[512];
    if (position_load(t->model, t->opt->resume, &p, why, sizeof why) != 0)
        return fail(t, "--resume: %s", why);
    if (p.seed != t->opt->seed || p.batch != t->opt->batch || p.n_train != t->order.n)
        return fail(t,
                    "--resume: %s was saved with --seed %" PRIu64 " --batch %" PRIu64
                    " and %" PRIu64 " training samples; resume with the same values (now %" PRIu64
                    ", %u, %zu)",
                    t->opt->resume, p.seed, p.batch, p.n_train, t->opt->seed, t->opt->batch,
                    t->order.n);
    if (p.next_batch > t->batches_per_epoch)
        return fail(t, "--resume: %s: batch position %" PRIu64 " beyond the epoch's %" PRIu64,
                    t->opt->resume, p.next_batch, t->batches_per_epoch);
    t->epoch = p.epoch;
    t->next_batch = p.next_batch;
    t->updates = p.updates;
    t->micro_steps = p.micro_steps;
    t->samples = p.samples;
    return 0;
}

/* ------------------------------------------------------------ training */

static int zero_sums(trainer *t, cl_mem sums)
{
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(t->ctx), sums, &z, sizeof z, 0, 4 * sizeof z,
                                   0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : fail_cl(t, "clearing sums", e);
}

static int read_sums(trainer *t, cl_mem sums, float out[4])
{
    cl_int e = clEnqueueReadBuffer(clg_context_queue(t->ctx), sums, CL_TRUE, 0, 4 * sizeof(float),
                                   out, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : fail_cl(t, "reading sums", e);
}

static int evaluate(trainer *t, double *loss, double *acc)
{
    if (zero_sums(t, t->eval_sums) != 0)
        return -1;
    unsigned cap = t->net->cap;
    for (size_t off = 0; off < t->dtest.n; off += cap) {
        cl_uint rows = (cl_uint)(t->dtest.n - off < cap ? t->dtest.n - off : cap);
        mlp_source src = {t->dtest.images, t->dtest.labels, t->dtest.idx, (cl_uint)off};
        cl_int e = mlp_forward(t->net, &src, rows, t->one, 0, 1.0f, 0);
        if (e == CL_SUCCESS)
            e = mlp_sum(t->net, rows, t->eval_sums);
        if (e != CL_SUCCESS)
            return fail_cl(t, "evaluation", e);
    }
    float s[4];
    if (read_sums(t, t->eval_sums, s) != 0)
        return -1;
    *loss = s[0] / (double)t->dtest.n;
    *acc = s[1] / (double)t->dtest.n;
    return 0;
}

/* One effective batch perm[start .. start + len) as micro-batches of b. */
static int run_batch(trainer *t, size_t start, size_t len)
{
    const train_options *o = t->opt;
    size_t km = order_micro_count(len, t->b);
    t->cycle_k = (unsigned)km;
    int updated = 0;
    for (size_t i = 0; i < km; i++) {
        cl_uint rows = (cl_uint)order_micro_len(len, t->b, i);
        mlp_source src = {t->dtrain.images, t->dtrain.labels, t->dtrain.idx,
                          (cl_uint)(start + i * t->b)};
        /* Path B: the backward writes rows x mean gradient (the sum) into
         * the accumulator itself. Paths A/C: clgrad multiplies the
         * gradients by the weight, so they carry the mean. Either way the
         * library divides by the sum of weights: the exact mean over B. */
        float mult = o->path == GRAD_PATH_B ? 1.0f : 1.0f / (float)rows;
        cl_int e = mlp_forward(t->net, &src, rows, t->scale.mem, t->scale.offset, mult, 1);
        if (e == CL_SUCCESS)
            e = mlp_sum(t->net, rows, t->sums);
        float beta = o->path == GRAD_PATH_B ? clg_accum_beta(t->model) : 0.0f;
        if (e == CL_SUCCESS)
            e = mlp_backward(t->net, rows, t->targets, beta);
        for (int j = 0; j < t->n_tensors && e == CL_SUCCESS && t->scratch; j++)
            e = mlp_convert(&t->net->k, o->grad_dtype, t->scratch, t->scratch_view[j].offset,
                            t->grad_view[j].mem, t->grad_view[j].offset,
                            (cl_uint)t->scratch_view[j].count);
        if (e != CL_SUCCESS)
            return fail_cl(t, "micro-step", e);
        /* Weight = samples in the micro-batch. */
        clg_status st = clg_step(t->model, o->path == GRAD_PATH_B ? NULL : t->grads, (float)rows,
                                 &updated);
        if (st != CLG_SUCCESS)
            return fail_clg(t, "clg_step", st);
        t->micro_steps++;
        t->samples += rows;
    }
    if (!updated) {
        clg_status st = clg_flush(t->model);
        if (st != CLG_SUCCESS)
            return fail_clg(t, "clg_flush", st);
    }
    t->updates++;
    return 0;
}

static int write_metrics_row(trainer *t, size_t len)
{
    float s[4];
    if (read_sums(t, t->sums, s) != 0)
        return -1;
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(t->ctx), t->sums, &z, sizeof z,
                                   2 * sizeof z, sizeof z, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return fail_cl(t, "clearing sums", e);
    clg_stats st;
    clg_status cs = clg_model_stats(t->model, 1, &st);
    if (cs != CLG_SUCCESS)
        return fail_clg(t, "clg_model_stats", cs);
    metrics_row r = {
        .update = t->updates,
        .micro_steps = t->micro_steps,
        .samples = t->samples,
        .epoch = (unsigned)t->epoch + 1,
        .loss = s[2] / (double)len,
        .lr = st.lr,
        .grad_norm = st.grad_norm,
        .loss_scale = st.loss_scale,
        .skipped_updates = st.skipped_updates,
        .samples_per_s = t->train_seconds > 0
                             ? (double)(t->samples - t->samples_at_start) / t->train_seconds
                             : 0,
    };
    if (metrics_write(t->metrics, &r) != 0)
        return fail(t, "--metrics: %s: %s", t->opt->metrics, strerror(errno));
    return 0;
}

static int train_loop(trainer *t)
{
    const train_options *o = t->opt;
    cl_command_queue q = clg_context_queue(t->ctx);
    uint64_t epochs_total = (t->total_updates + t->batches_per_epoch - 1) / t->batches_per_epoch;
    uint64_t start_samples = t->samples_at_start = t->samples;
    t->updates_at_start = t->updates;
    int done = t->updates >= t->total_updates;
    if (done) { /* resumed at the end: nothing left but the evaluation */
        double loss, acc;
        if (evaluate(t, &loss, &acc) != 0)
            return -1;
        t->res->test_loss = loss;
        t->res->test_accuracy = acc;
    }
    while (!done) {
        order_shuffle(&t->order, t->epoch);
        cl_int e = devdata_set_order(&t->dtrain, t->order.perm);
        if (e != CL_SUCCESS)
            return fail_cl(t, "uploading the data order", e);
        if (zero_sums(t, t->sums) != 0)
            return -1;
        double epoch_t0 = t->train_seconds;
        uint64_t epoch_samples = 0;
        t->res->epochs = (unsigned)t->epoch + 1;
        while (t->next_batch < t->batches_per_epoch) {
            size_t start, len;
            order_batch(&t->order, t->next_batch, &start, &len);
            double t0 = progress_now();
            if (run_batch(t, start, len) != 0)
                return -1;
            t->next_batch++;
            epoch_samples += len;
            /* One sync per update keeps the host from running ahead of the
             * device, so rates and the bar are true. */
            if ((e = clFinish(q)) != CL_SUCCESS)
                return fail_cl(t, "training", e);
            t->train_seconds += progress_now() - t0;
            if (t->metrics && write_metrics_row(t, len) != 0)
                return -1;
            if (progress_due(&t->prog, t->updates)) {
                float s[4];
                if (read_sums(t, t->sums, s) != 0)
                    return -1;
                progress_update(&t->prog, t->updates, t->samples - start_samples,
                                t->train_seconds, (unsigned)t->epoch + 1,
                                epoch_samples ? s[0] / (double)epoch_samples : NAN);
            }
            if (o->save_every && t->updates % o->save_every == 0 && save_checkpoint(t) != 0)
                return -1;
            if (t->updates >= t->total_updates ||
                (o->stop_after && t->updates - t->updates_at_start >= o->stop_after)) {
                done = 1;
                break;
            }
        }
        float s[4];
        if (read_sums(t, t->sums, s) != 0)
            return -1;
        double test_loss = 0, test_acc = 0;
        if (evaluate(t, &test_loss, &test_acc) != 0)
            return -1;
        double secs = t->train_seconds - epoch_t0;
        t->res->train_loss = epoch_samples ? s[0] / (double)epoch_samples : 0;
        t->res->train_accuracy = epoch_samples ? s[1] / (double)epoch_samples : 0;
        t->res->test_loss = test_loss;
        t->res->test_accuracy = test_acc;
        char extra[128] = "";
        if (o->loss_scale != CLG_LOSS_SCALE_NONE) {
            clg_stats st;
            if (clg_model_stats(t->model, 1, &st) == CLG_SUCCESS)
                snprintf(extra, sizeof extra, "  loss scale %g  skipped %" PRIu64, st.loss_scale,
                         st.skipped_updates);
        }
        progress_log(&t->prog,
                     "epoch %" PRIu64 "/%" PRIu64 ": loss %.4f  train acc %.4f  test acc %.4f  "
                     "test loss %.4f  %.1f s  %.0f samples/s%s\n",
                     t->epoch + 1, epochs_total, t->res->train_loss, t->res->train_accuracy,
                     test_acc, test_loss, secs, secs > 0 ? epoch_samples / secs : 0.0, extra);
        if (t->next_batch >= t->batches_per_epoch) {
            t->epoch++;
            t->next_batch = 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ outputs */

static int dump_weights(trainer *t, const float *host, uint64_t n)
{
    const char *path = t->opt->dump_weights;
    FILE *f = fopen(path, "wb");
    if (!f)
        return fail(t, "--dump-weights: %s: %s", path, strerror(errno));
    int bad = 0;
    for (uint64_t i = 0; i < n && !bad; i++) {
        uint32_t u;
        memcpy(&u, &host[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8),
                              (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
        bad = fwrite(b, 1, 4, f) != 4;
    }
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        return fail(t, "--dump-weights: %s: write failed: %s", path, strerror(errno));
    return 0;
}

static int finish_outputs(trainer *t, const train_io *io)
{
    uint64_t n = clg_model_param_count(t->model);
    if (!t->opt->dump_weights && !(io && io->weights))
        return 0;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return fail(t, "out of host memory");
    clg_status st = clg_model_download_params(t->model, -1, host);
    if (st != CLG_SUCCESS) {
        free(host);
        return fail_clg(t, "downloading the parameters", st);
    }
    int rc = 0;
    if (io && io->weights)
        memcpy(io->weights, host, (n < io->weights_cap ? n : io->weights_cap) * sizeof *host);
    if (t->opt->dump_weights)
        rc = dump_weights(t, host, n);
    free(host);
    return rc;
}

static void teardown(trainer *t)
{
    if (t->metrics)
        metrics_close(t->metrics);
    if (t->net)
        mlp_free_activations(t->net);
    if (t->scratch)
        clReleaseMemObject(t->scratch);
    if (t->scratch_bytes)
        clg_context_unreserve(t->ctx, t->scratch_bytes);
    if (t->sums)
        clReleaseMemObject(t->sums);
    if (t->eval_sums)
        clReleaseMemObject(t->eval_sums);
    if (t->one)
        clReleaseMemObject(t->one);
    clg_grads_destroy(t->grads);
    clg_model_destroy(t->model);
    mlp_destroy(t->net);
    devdata_release(&t->dtrain);
    devdata_release(&t->dtest);
    order_free(&t->order);
    dataset_free(&t->train_ds);
    dataset_free(&t->test_ds);
    if (t->ctx && !t->own_ctx)
        clg_context_set_budget(t->ctx, t->old_budget);
    if (t->own_ctx)
        clg_context_destroy(t->ctx);
}

int train_run(const train_options *opt, const train_io *io, train_result *res, char *err,
              size_t errlen)
{
    double t_start = progress_now();
    trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    t->opt = opt;
    t->res = res;
    t->err = err;
    t->errlen = errlen;
    t->b = opt->micro_batch ? opt->micro_batch : (opt->batch < 32 ? opt->batch : 32);
    t->k = (opt->batch + t->b - 1) / t->b;
    progress_init(&t->prog, opt->quiet, 1);
    int rc = -1;

    if (load_data(t, io) != 0)
        goto out;
    size_t n_train = t->train->count, n_test = t->test->count;
    if (opt->limit_train && opt->limit_train < n_train)
        n_train = (size_t)opt->limit_train;
    if (opt->limit_test && opt->limit_test < n_test)
        n_test = (size_t)opt->limit_test;

    if (io && io->ctx) {
        t->ctx = io->ctx;
        t->old_budget = clg_context_budget(t->ctx);
    } else {
        clg_status st = clg_context_create(&t->ctx, opt->device);
        if (st != CLG_SUCCESS) {
            fail(t, "--device %s: %s", opt->device ? opt->device : "(default)",
                 clg_last_error(NULL));
            goto out;
        }
        t->own_ctx = 1;
    }
    snprintf(res->device, sizeof res->device, "%s", clg_context_device_info(t->ctx)->name);
    if (opt->vram) {
        clg_status st = clg_context_set_budget(t->ctx, opt->vram);
        if (st != CLG_SUCCESS) {
            fail(t, "--vram: %s", clg_last_error(t->ctx));
            goto out;
        }
    }

    if (order_init(&t->order, opt->seed, n_train, opt->batch) != 0) {
        fail(t, "out of host memory for the data order");
        goto out;
    }
    t->batches_per_epoch = order_batches_per_epoch(&t->order);
    t->total_updates = opt->steps ? opt->steps : (uint64_t)opt->epochs * t->batches_per_epoch;
    progress_init(&t->prog, opt->quiet, t->total_updates);

    t->n_dims = 0;
    t->dims[t->n_dims++] = (unsigned)t->train->dim;
    for (int i = 0; i < opt->n_hidden; i++)
        t->dims[t->n_dims++] = opt->hidden[i];
    t->dims[t->n_dims++] = DATASET_CLASSES;
    if (mlp_create(t->ctx, t->dims, t->n_dims, &t->net, err, errlen) != 0)
        goto out;
    if (build_model(t) != 0 || setup_gradients(t) != 0 || setup_buffers(t) != 0)
        goto out;
    clg_status st = devdata_upload(t->ctx, t->train, n_train, &t->dtrain);
    if (st == CLG_SUCCESS)
        st = devdata_upload(t->ctx, t->test, n_test, &t->dtest);
    if (st != CLG_SUCCESS) {
        fail(t, "uploading the data set (%" PRIu64 " B): %s%s",
             devdata_bytes(n_train, t->train->dim) + devdata_bytes(n_test, t->test->dim),
             clg_status_string(st),
             st == CLG_ERR_OVER_BUDGET ? "; raise --vram" : "");
        goto out;
    }
    if (fit_activations(t) != 0)
        goto out;
    res->micro_batch = t->b;
    res->accum_steps = t->k;
    res->batch = opt->batch;
    print_plan(t);
    if (!opt->quiet)
        progress_log(&t->prog,
                     "training %s: batch %u = %u micro-batch(es) of %u, %" PRIu64
                     " updates, %s lr %g (%s, warmup %" PRIu64 "), grad path %c, grads %s\n",
                     res->device, opt->batch, t->k, t->b, t->total_updates,
                     train_optimizer_name(opt->optimizer), res->lr,
                     train_schedule_name(opt->schedule),
                     effective_warmup(t),
                     "ABC"[opt->path], train_dtype_name(opt->grad_dtype));

    if (opt->resume && resume_from(t) != 0)
        goto out;
    if (opt->metrics) {
        t->metrics = metrics_open(opt->metrics);
        if (!t->metrics) {
            fail(t, "--metrics: %s: %s", opt->metrics, strerror(errno));
            goto out;
        }
    }
    if (train_loop(t) != 0)
        goto out;
    if (opt->checkpoint && save_checkpoint(t) != 0)
        goto out;
    if (t->metrics) {
        int bad = metrics_close(t->metrics);
        t->metrics = NULL;
        if (bad) {
            fail(t, "--metrics: %s: write failed", opt->metrics);
            goto out;
        }
    }
    clg_stats stats;
    if ((st = clg_model_stats(t->model, 1, &stats)) != CLG_SUCCESS) {
        fail_clg(t, "clg_model_stats", st);
        goto out;
    }
    if (finish_outputs(t, io) != 0)
        goto out;
    res->updates = t->updates;
    res->skipped_updates = stats.skipped_updates;
    res->micro_steps = t->micro_steps;
    res->samples = t->samples;
    res->train_seconds = t->train_seconds;
    res->samples_per_s =
        t->train_seconds > 0 ? (double)(t->samples - t->samples_at_start) / t->train_seconds : 0;
    res->peak_device_bytes = clg_context_peak_device_bytes(t->ctx);
    res->data_bytes = t->dtrain.bytes + t->dtest.bytes;
    res->activation_bytes = t->net->act_bytes;
    rc = 0;
out:
    teardown(t);
    res->total_seconds = progress_now() - t_start;
    return rc;
}
