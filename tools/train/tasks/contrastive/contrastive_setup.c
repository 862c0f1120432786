/* contrastive_setup.c - building a contrastive run: data, context and
 * budget, data order, the encoder's model with its gradient targets, the
 * representation cache (the whole batch for GradCache, one micro-batch for
 * the others, with banks for ContAccum, attached to the model's
 * checkpoints), activations for the two views of a micro-batch, the task's
 * kernels, the memory plan, and the teardown. */
#include "contrastive_internal.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"
#include "clbuf.h"
#include "memplan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load_data(con_trainer *t, const train_io *io)
{
    if (run_load_data(&t->run, io) != 0)
        return -1;
    if (t->run.train->dim != DATASET_ROWS * DATASET_COLS || t->run.test->dim != t->run.train->dim)
        return task_fail(t,
                         "the contrastive task's views need %dx%d images; the data has %zu "
                         "and %zu pixels",
                         DATASET_ROWS, DATASET_COLS, t->run.train->dim, t->run.test->dim);
    return 0;
}

static int build_model(con_trainer *t)
{
    const train_options *o = t->run.opt;
    clg_status st;
    if (run_create_model(&t->run, &st) != 0)
        return -1;
    if (st == CLG_SUCCESS)
        st = con_encoder_add_tensors(t->enc, t->run.model, t->run.no_decay);
    if (st == CLG_SUCCESS)
        st = clg_model_finalize(t->run.model);
    if (st == CLG_SUCCESS)
        st = con_encoder_bind(t->enc, t->run.model);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "building the model", st);
    if (run_init_params(&t->run, mlp_init_shape, &t->shape) != 0)
        return -1;

    /* the backward's targets: the accumulator in place (path B) or clgrad's
     * fp32 gradient buffers (A, C) */
    int nt = 2 * t->enc->n_layers;
    if (o->path != GRAD_PATH_B &&
        (st = clg_grads_create(t->run.model, CLG_FP32, &t->run.grads)) != CLG_SUCCESS)
        return task_fail_clg(t, "creating the gradient buffers", st);
    for (int i = 0; i < nt; i++) {
        st = t->run.grads ? clg_grads_view(t->run.grads, i, &t->targets[i])
                      : clg_model_acc_view(t->run.model, i, &t->targets[i]);
        if (st != CLG_SUCCESS)
            return task_fail_clg(t, "gradient views", st);
    }
    return 0;
}

/* GradCache holds the whole batch; naive and ContAccum a micro-batch, the
 * latter with banks that the model's checkpoints carry. */
static clg_contrastive_config cache_config(const con_trainer *t, size_t n_train)
{
    const con_options *c = t->c;
    clg_contrastive_config cc = clg_contrastive_config_init();
    size_t batch = t->run.opt->batch < n_train ? t->run.opt->batch : n_train;
    cc.batch = c->method == CON_GRADCACHE ? batch : t->run.b;
    cc.dim = c->embed_dim;
    cc.temperature = c->temperature;
    cc.symmetric = !c->one_way;
    cc.bank_size = c->method == CON_CONTACCUM ? c->bank_size : 0;
    return cc;
}

static int build_cache(con_trainer *t, size_t n_train)
{
    clg_contrastive_config cc = cache_config(t, n_train);
    clg_status st = clg_contrastive_create(t->run.ctx, &cc, &t->cache);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "creating the representation cache", st);
    if (cc.bank_size && (st = clg_contrastive_attach(t->cache, t->run.model, "contrastive")) !=
                            CLG_SUCCESS)
        return task_fail_clg(t, "attaching the banks to the checkpoints", st);
    clg_contrastive_plan p = clg_contrastive_plan_init();
    if ((st = clg_contrastive_memory(t->cache, &p)) != CLG_SUCCESS)
        return task_fail_clg(t, "clg_contrastive_memory", st);
    t->res->cache_bytes = p.total;
    return 0;
}

static int build_kernels(con_trainer *t)
{
    char opt[64];
    snprintf(opt, sizeof opt, "-DIMG_ROWS=%d -DIMG_COLS=%d", DATASET_ROWS, DATASET_COLS);
    clg_status st = clg_context_program_source(t->run.ctx, "contrastive_train",
                                               train_kernel_source("contrastive_train"), opt,
                                               &t->program, NULL);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "building contrastive_train.cl", st);
    cl_int e1, e2, e3, e4;
    t->k_views = clCreateKernel(t->program, "con_views", &e1);
    t->k_l2norm = clCreateKernel(t->program, "con_l2norm", &e2);
    t->k_add_loss = clCreateKernel(t->program, "con_add_loss", &e3);
    float zeros[4] = {0};
    t->sums = clCreateBuffer(clg_context_cl(t->run.ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             sizeof zeros, zeros, &e4);
    cl_int e = e1 != CL_SUCCESS ? e1 : e2 != CL_SUCCESS ? e2 : e3 != CL_SUCCESS ? e3 : e4;
    return e == CL_SUCCESS ? 0 : task_fail_cl(t, "the contrastive task's kernels", e);
}

/* The micro-batch of a run on n_train samples (at most all of them) and
 * the micro-steps of a full batch. */
static void set_micro_batch(con_trainer *t, size_t n_train)
{
    unsigned b = t->run.opt->micro_batch; /* train_options_check's default */
    run_set_micro_batch(&t->run, n_train && b > n_train ? (unsigned)n_train : b);
}

/* The memory plan before the data is loaded or anything allocated (as
 * con_print_plan adds it up after), refused above the device's global
 * memory unless --allow-over-device-memory. */
static int check_plan(con_trainer *t, const train_io *io)
{
    size_t n_train, n_test;
    run_count_samples(&t->run, io, &n_train, &n_test);
    set_micro_batch(t, n_train);
    memplan p = {0};
    uint64_t n = mlp_param_count(t->shape.dims, t->shape.n_dims);
    if (run_estimate_model(&t->run, n, 0, 1, &p.model) != 0)
        return -1;
    clg_contrastive_config cc = cache_config(t, n_train);
    clg_contrastive_plan cp = clg_contrastive_plan_init();
    clg_status st = clg_contrastive_estimate(&cc, &cp);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "the representation cache's memory plan", st);
    p.model.total += cp.total; /* the representation cache with the model */
    p.activations = con_encoder_activation_bytes(t->shape.dims, t->shape.n_dims, 2 * t->run.b);
    p.data = devdata_bytes(n_train, t->shape.dims[0]) + devdata_bytes(n_test, t->shape.dims[0]);
    memplan_total(&p);
    memplan_limit device = {clg_context_device_info(t->run.ctx)->global_mem_size, NULL};
    return memplan_refuse(&p, device, "--hidden, --embed-dim, --bank-size or --micro-batch",
                          t->run.opt->allow_over_memory, t->run.err, t->run.errlen);
}

int con_setup(con_trainer *t, const train_io *io)
{
    const train_options *o = t->run.opt;
    t->shape.n_dims = 0;
    t->shape.dims[t->shape.n_dims++] =
        io && io->train ? (unsigned)io->train->dim : DATASET_ROWS * DATASET_COLS;
    for (int i = 0; i < o->n_hidden; i++)
        t->shape.dims[t->shape.n_dims++] = o->hidden[i];
    t->shape.dims[t->shape.n_dims++] = t->c->embed_dim;
    if (run_open_context(&t->run, io) != 0 ||
        check_plan(t, io) != 0 || load_data(t, io) != 0)
        return -1;
    size_t n_train, n_test;
    run_limits(&t->run, &n_train, &n_test);
    set_micro_batch(t, n_train);
    if (run_plan_order(&t->run, n_train) != 0)
        return -1;

    if (con_encoder_create(t->run.ctx, t->shape.dims, t->shape.n_dims, &t->enc, t->run.err, t->run.errlen) != 0)
        return -1;
    if (build_model(t) != 0 || build_cache(t, n_train) != 0)
        return -1;
    if (run_upload_data(&t->run, n_train, n_test) != 0)
        return -1;
    /* the two views of a micro-batch, stacked */
    clg_status st = con_encoder_alloc(t->enc, 2 * t->run.b);
    if (st != CLG_SUCCESS)
        return task_fail(t, "activations for 2 x %u rows need %" PRIu64 " B: %s%s", t->run.b,
                         con_encoder_activation_bytes(t->shape.dims, t->shape.n_dims, 2 * t->run.b),
                         clg_status_string(st),
                         st == CLG_ERR_OVER_BUDGET ? "; use a smaller --micro-batch" : "");
    if (build_kernels(t) != 0)
        return -1;
    run_result_setup(&t->run);
    t->res->run.activation_bytes = t->enc->act_bytes;
    con_build_settings(t);
    return 0;
}

void con_print_plan(con_trainer *t)
{
    const con_result *r = t->res;
    char cache[32], extra[96], rows[32];
    memplan_bytes(cache, sizeof cache, r->cache_bytes);
    snprintf(extra, sizeof extra, ", representation cache %s (%s rows of %u)", cache,
             t->c->method == CON_GRADCACHE ? "batch" : "micro-batch", t->c->embed_dim);
    snprintf(rows, sizeof rows, "2 x %u rows", t->run.b);
    run_print_plan_line(&t->run, extra, rows,
                        r->run.model_bytes + r->cache_bytes + r->run.activation_bytes +
                            r->run.data_bytes);
}

void con_teardown(void *task)
{
    con_trainer *t = task;
    cl_kernel *kernels[] = {&t->k_views, &t->k_l2norm, &t->k_add_loss};
    cl_mem *sums[] = {&t->sums};
    clbuf_release_kernels(kernels, 3);
    clbuf_release_mems(sums, 1);
    clg_contrastive_destroy(t->cache);
    con_encoder_destroy(t->enc);
    run_release(&t->run);
}
