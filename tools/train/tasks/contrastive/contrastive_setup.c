/* contrastive_setup.c - building a contrastive run: data, context and
 * budget, data order, the encoder's model with its gradient targets, the
 * representation cache (the whole batch for GradCache, one micro-batch for
 * the others, with banks for ContAccum, attached to the model's
 * checkpoints), activations for the two views of a micro-batch, the task's
 * kernels, the memory plan, and the teardown. */
#include "contrastive_internal.h"
#include "memplan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int con_fail(con_trainer *t, const char *fmt, ...)
{
    if (t->err && t->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->err, t->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int con_fail_clg(con_trainer *t, const char *what, clg_status st)
{
    return con_fail(t, "%s: %s (%s)", what, clg_last_error(t->ctx), clg_status_string(st));
}

int con_fail_cl(con_trainer *t, const char *what, cl_int e)
{
    return con_fail(t, "%s: %s (%d)", what, clg_status_string((clg_status)e), (int)e);
}

/* The cycle of each effective batch is its micro-batch count (a partial
 * last batch has fewer), as in the classifier. */
static unsigned k_of_cycle(uint64_t update_index, void *user)
{
    (void)update_index;
    const con_trainer *t = user;
    return t->cycle_k ? t->cycle_k : 1;
}

static int load_data(con_trainer *t, const train_io *io)
{
    if (io && io->train) {
        t->train = io->train;
    } else {
        if (dataset_load(t->o->data_dir, "train", &t->train_ds, t->err, t->errlen) != 0)
            return -1;
        t->train = &t->train_ds;
    }
    if (io && io->test) {
        t->test = io->test;
    } else {
        if (dataset_load(t->o->data_dir, "t10k", &t->test_ds, t->err, t->errlen) != 0)
            return -1;
        t->test = &t->test_ds;
    }
    if (t->train->dim != DATASET_ROWS * DATASET_COLS || t->test->dim != t->train->dim)
        return con_fail(t, "the contrastive task's views need %dx%d images; the data has %zu "
                        "and %zu pixels", DATASET_ROWS, DATASET_COLS, t->train->dim,
                        t->test->dim);
    return 0;
}

static int open_context(con_trainer *t, const train_io *io)
{
    if (io && io->ctx) {
        t->ctx = io->ctx;
        t->old_budget = clg_context_budget(t->ctx);
    } else {
        clg_status st = clg_context_create(&t->ctx, t->o->device);
        if (st != CLG_SUCCESS)
            return con_fail(t, "--device %s: %s", t->o->device ? t->o->device : "(default)",
                            clg_last_error(NULL));
        t->own_ctx = 1;
    }
    snprintf(t->res->device, sizeof t->res->device, "%s", clg_context_device_info(t->ctx)->name);
    if (t->o->vram) {
        clg_status st = clg_context_set_budget(t->ctx, t->o->vram);
        if (st != CLG_SUCCESS)
            return con_fail(t, "--vram: %s", clg_last_error(t->ctx));
    }
    return 0;
}

static uint64_t warmup_of(const con_trainer *t)
{
    uint64_t cap = t->o->schedule == CLG_SCHED_CONSTANT ? t->total_updates : t->total_updates - 1;
    return t->o->warmup < cap ? t->o->warmup : cap;
}

static int build_model(con_trainer *t)
{
    const train_options *o = t->o;
    clg_config cfg;
    if (train_options_clg_config(o, &cfg, t->err, t->errlen) != 0)
        return -1;
    t->res->lr = cfg.lr;
    cfg.schedule.total = t->total_updates;
    cfg.schedule.warmup = warmup_of(t);
    cfg.accum_steps = t->k;
    cfg.k_schedule = k_of_cycle;
    cfg.k_schedule_user = t;
    cfg.fuse_last_micro_step = o->path == GRAD_PATH_C;
    t->cfg = cfg;
    clg_status st = clg_model_create(t->ctx, &cfg, &t->model);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "creating the model", st);
    int no_decay = 0;
    st = clg_model_add_group(t->model, "no_decay", 1.0f, 0.0f, &no_decay);
    if (st == CLG_SUCCESS)
        st = con_encoder_add_tensors(t->enc, t->model, no_decay);
    if (st == CLG_SUCCESS)
        st = clg_model_finalize(t->model);
    if (st == CLG_SUCCESS)
        st = con_encoder_bind(t->enc, t->model);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "building the model", st);
    uint64_t n = clg_model_param_count(t->model);
    t->res->params = n;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return con_fail(t, "out of host memory (%" PRIu64 " parameters)", n);
    mlp_init_params(t->dims, t->n_dims, o->seed, host);
    st = clg_model_upload_params(t->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    free(host);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "uploading the initial parameters", st);

    /* the backward's targets: the accumulator in place (path B) or clgrad's
     * fp32 gradient buffers (A, C) */
    int nt = 2 * t->enc->n_layers;
    if (o->path != GRAD_PATH_B && (st = clg_grads_create(t->model, CLG_FP32, &t->grads)) != CLG_SUCCESS)
        return con_fail_clg(t, "creating the gradient buffers", st);
    for (int i = 0; i < nt; i++) {
        st = t->grads ? clg_grads_view(t->grads, i, &t->targets[i])
                      : clg_model_acc_view(t->model, i, &t->targets[i]);
        if (st != CLG_SUCCESS)
            return con_fail_clg(t, "gradient views", st);
    }
    return 0;
}

/* GradCache holds the whole batch; naive and ContAccum a micro-batch, the
 * latter with banks that the model's checkpoints carry. */
static int build_cache(con_trainer *t, size_t n_train)
{
    const con_options *c = t->c;
    clg_contrastive_config cc = clg_contrastive_config_init();
    size_t batch = t->o->batch < n_train ? t->o->batch : n_train;
    cc.batch = c->method == CON_GRADCACHE ? batch : t->b;
    cc.dim = c->embed_dim;
    cc.temperature = c->temperature;
    cc.symmetric = !c->one_way;
    cc.bank_size = c->method == CON_CONTACCUM ? c->bank_size : 0;
    clg_status st = clg_contrastive_create(t->ctx, &cc, &t->cache);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "creating the representation cache", st);
    if (cc.bank_size && (st = clg_contrastive_attach(t->cache, t->model, "contrastive")) !=
                            CLG_SUCCESS)
        return con_fail_clg(t, "attaching the banks to the checkpoints", st);
    clg_contrastive_plan p = clg_contrastive_plan_init();
    if ((st = clg_contrastive_memory(t->cache, &p)) != CLG_SUCCESS)
        return con_fail_clg(t, "clg_contrastive_memory", st);
    t->res->cache_bytes = p.total;
    return 0;
}

static int build_kernels(con_trainer *t)
{
    char opt[64];
    snprintf(opt, sizeof opt, "-DIMG_ROWS=%d -DIMG_COLS=%d", DATASET_ROWS, DATASET_COLS);
    clg_status st = clg_context_program(t->ctx, "contrastive_train", opt, &t->program, NULL);
    if (st != CLG_SUCCESS)
        return con_fail_clg(t, "building cl/contrastive_train.cl", st);
    cl_int e1, e2, e3, e4;
    t->k_views = clCreateKernel(t->program, "con_views", &e1);
    t->k_l2norm = clCreateKernel(t->program, "con_l2norm", &e2);
    t->k_add_loss = clCreateKernel(t->program, "con_add_loss", &e3);
    float zeros[4] = {0};
    t->sums = clCreateBuffer(clg_context_cl(t->ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             sizeof zeros, zeros, &e4);
    cl_int e = e1 != CL_SUCCESS ? e1 : e2 != CL_SUCCESS ? e2 : e3 != CL_SUCCESS ? e3 : e4;
    return e == CL_SUCCESS ? 0 : con_fail_cl(t, "the contrastive task's kernels", e);
}

int con_setup(con_trainer *t, const train_io *io)
{
    const train_options *o = t->o;
    if (load_data(t, io) != 0 || open_context(t, io) != 0)
        return -1;
    size_t n_train = t->train->count, n_test = t->test->count;
    if (o->limit_train && o->limit_train < n_train)
        n_train = (size_t)o->limit_train;
    if (o->limit_test && o->limit_test < n_test)
        n_test = (size_t)o->limit_test;
    t->b = o->micro_batch ? o->micro_batch : (o->batch < 32 ? o->batch : 32);
    if (t->b > n_train)
        t->b = (unsigned)n_train;
    t->k = (unsigned)((o->batch + t->b - 1) / t->b);
    if (order_init(&t->order, o->seed, n_train, o->batch) != 0)
        return con_fail(t, "out of host memory for the data order");
    t->batches_per_epoch = order_batches_per_epoch(&t->order);
    t->total_updates = o->steps ? o->steps : (uint64_t)o->epochs * t->batches_per_epoch;
    progress_init(&t->prog, o->quiet, t->total_updates);

    t->n_dims = 0;
    t->dims[t->n_dims++] = (unsigned)t->train->dim;
    for (int i = 0; i < o->n_hidden; i++)
        t->dims[t->n_dims++] = o->hidden[i];
    t->dims[t->n_dims++] = t->c->embed_dim;
    if (con_encoder_create(t->ctx, t->dims, t->n_dims, &t->enc, t->err, t->errlen) != 0)
        return -1;
    if (build_model(t) != 0 || build_cache(t, n_train) != 0)
        return -1;
    clg_status st = devdata_upload(t->ctx, t->train, n_train, &t->dtrain);
    if (st == CLG_SUCCESS)
        st = devdata_upload(t->ctx, t->test, n_test, &t->dtest);
    if (st != CLG_SUCCESS)
        return con_fail(t, "uploading the data set (%" PRIu64 " B): %s%s",
                        devdata_bytes(n_train, t->train->dim) + devdata_bytes(n_test, t->test->dim),
                        clg_status_string(st), st == CLG_ERR_OVER_BUDGET ? "; raise --vram" : "");
    /* the two views of a micro-batch, stacked */
    st = con_encoder_alloc(t->enc, 2 * t->b);
    if (st != CLG_SUCCESS)
        return con_fail(t, "activations for 2 x %u rows need %" PRIu64 " B: %s%s", t->b,
                        con_encoder_activation_bytes(t->dims, t->n_dims, 2 * t->b),
                        clg_status_string(st),
                        st == CLG_ERR_OVER_BUDGET ? "; use a smaller --micro-batch" : "");
    if (build_kernels(t) != 0)
        return -1;
    con_result *r = t->res;
    r->micro_batch = t->b;
    r->accum_steps = t->k;
    r->batch = o->batch;
    r->update_samples = n_train < o->batch ? (unsigned)n_train : o->batch;
    r->activation_bytes = t->enc->act_bytes;
    r->data_bytes = t->dtrain.bytes + t->dtest.bytes;
    clg_memory_plan mp = clg_memory_plan_init();
    if (clg_model_memory(t->model, &mp) == CLG_SUCCESS)
        r->model_bytes = mp.total;
    con_build_settings(t);
    return 0;
}

void con_print_plan(con_trainer *t)
{
    if (t->o->quiet)
        return;
    const con_result *r = t->res;
    uint64_t total = r->model_bytes + r->cache_bytes + r->activation_bytes + r->data_bytes;
    uint64_t cap = clg_context_budget(t->ctx);
    char a[32], b[32], c[32], d[32], e[32], f[32];
    memplan_bytes(a, sizeof a, r->model_bytes);
    memplan_bytes(b, sizeof b, r->cache_bytes);
    memplan_bytes(c, sizeof c, r->activation_bytes);
    memplan_bytes(d, sizeof d, r->data_bytes);
    memplan_bytes(e, sizeof e, total);
    memplan_bytes(f, sizeof f, cap ? cap : clg_context_device_info(t->ctx)->global_mem_size);
    progress_clear(&t->prog);
    progress_log(&t->prog,
                 "memory plan on %s: model %s (%" PRIu64 " parameters), representation cache "
                 "%s (%s rows of %u), activations %s (2 x %u rows), data %s; total %s of %s%s\n",
                 r->device, a, r->params, b,
                 t->c->method == CON_GRADCACHE ? "batch" : "micro-batch", t->c->embed_dim, c,
                 t->b, d, e, f, cap ? " (--vram)" : "");
}

void con_teardown(con_trainer *t)
{
    if (t->k_views)
        clReleaseKernel(t->k_views);
    if (t->k_l2norm)
        clReleaseKernel(t->k_l2norm);
    if (t->k_add_loss)
        clReleaseKernel(t->k_add_loss);
    if (t->sums)
        clReleaseMemObject(t->sums);
    clg_contrastive_destroy(t->cache);
    clg_grads_destroy(t->grads);
    clg_model_destroy(t->model);
    con_encoder_destroy(t->enc);
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
