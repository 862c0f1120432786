/* classify_setup.c - building a clgrad-train run: data, model on clgrad,
 * gradient targets per path, small buffers, activations that fit (with
 * --auto-micro-batch halving), the memory plan, and the teardown. */
#include "classify_internal.h"
#include "clbuf.h"
#include "memplan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ setup */

int classify_build_model(classify_trainer *t)
{
    clg_status st;
    if (run_create_model(&t->run, &st) != 0)
        return -1;
    if (st == CLG_SUCCESS)
        st = mlp_add_tensors(t->net, t->run.model, t->run.no_decay);
    /* --dist zero1: this rank keeps the optimizer states of its shard */
    if (st == CLG_SUCCESS && t->run.dist && t->run.dist->zero1)
        st = clg_model_set_shard(t->run.model, (unsigned)t->run.dist->rank,
                                 (unsigned)t->run.dist->size);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "defining the model", st);
    st = clg_model_finalize(t->run.model);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "allocating the model", st);
    st = mlp_bind(t->net, t->run.model);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "binding the model", st);
    t->n_tensors = 2 * t->net->n_layers;

    return run_init_params(&t->run, mlp_init_shape, &t->shape);
}

/* Gradient targets of the backward: the accumulator (path B), clgrad's
 * gradient buffers (A/C, fp32), or a fp32 scratch converted into them. */
int classify_setup_gradients(classify_trainer *t)
{
    const train_options *o = t->run.opt;
    clg_status st;
    for (int i = 0; i < t->n_tensors; i++) {
        st = clg_model_acc_view(t->run.model, i, &t->targets[i]);
        if (st != CLG_SUCCESS)
            return task_fail_clg(t, "accumulator view", st);
    }
    if (o->path == GRAD_PATH_B)
        return 0;
    st = clg_grads_create(t->run.model, o->grad_dtype, &t->run.grads);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "creating the gradient buffers", st);
    for (int i = 0; i < t->n_tensors; i++) {
        st = clg_grads_view(t->run.grads, i, &t->grad_view[i]);
        if (st != CLG_SUCCESS)
            return task_fail_clg(t, "gradient buffer view", st);
        t->targets[i] = t->grad_view[i];
    }
    if (o->grad_dtype == CLG_FP32)
        return 0;
    if (model_fp32_reserve(&t->run, "fp32 gradient scratch", &t->scratch) != 0)
        return -1;
    for (int i = 0; i < t->n_tensors; i++)
        t->targets[i] = t->scratch.view[i];
    return 0;
}

int classify_setup_weights(classify_trainer *t)
{
    if (model_fp32_master(&t->run, &t->weights) != 0)
        return -1;
    /* tensor 2l is layer l's weight, 2l + 1 its bias (mlp_add_tensors) */
    for (int i = 0; t->weights.buf && i < t->n_tensors; i++)
        *(i % 2 ? &t->net->b_view[i / 2] : &t->net->w_view[i / 2]) = t->weights.view[i];
    return 0;
}

int classify_setup_buffers(classify_trainer *t)
{
    cl_context cl = clg_context_cl(t->run.ctx);
    cl_int e1, e2, e3;
    float zeros[4] = {0}, one = 1.0f;
    t->sums = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &e1);
    t->eval_sums =
        clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &e2);
    t->one = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof one, &one, &e3);
    if (e1 != CL_SUCCESS || e2 != CL_SUCCESS || e3 != CL_SUCCESS)
        return task_fail_cl(t, "small buffers", e1 != CL_SUCCESS ? e1 : e2 != CL_SUCCESS ? e2 : e3);
    /* The loss-gradient kernel multiplies by clgrad's current loss scale,
     * read on the device; without scaling a constant 1 does. */
    if (t->run.opt->loss_scale == CLG_LOSS_SCALE_NONE ||
        clg_model_loss_scale_view(t->run.model, &t->scale) != CLG_SUCCESS) {
        if (t->run.opt->loss_scale != CLG_LOSS_SCALE_NONE)
            return task_fail_clg(t, "loss scale view", CLG_ERR_UNSUPPORTED);
        t->scale = (clg_view){t->one, 0, 1};
    }
    return 0;
}

static uint64_t available_bytes(classify_trainer *t)
{
    uint64_t used = clg_context_device_bytes(t->run.ctx);
    uint64_t cap = clg_context_budget(t->run.ctx);
    if (!cap)
        cap = clg_context_device_info(t->run.ctx)->global_mem_size;
    return cap > used ? cap - used : 0;
}

/* Activations for micro-batch b; with --auto-micro-batch, halves b (and
 * doubles k) until they fit, dropping whatever the current cycle holds so
 * that the same effective batch restarts from its first sample. */
int classify_fit_activations(classify_trainer *t)
{
    for (;;) {
        uint64_t need = mlp_activation_bytes(t->shape.dims, t->shape.n_dims, t->run.b);
        uint64_t avail = available_bytes(t);
        clg_status st = mlp_alloc_activations(t->net, t->run.b);
        if (st == CLG_SUCCESS)
            return 0;
        if (st != CLG_ERR_OVER_BUDGET && st != CLG_ERR_OUT_OF_DEVICE_MEMORY)
            return task_fail_clg(t, "allocating activations", st);
        char nb[32], ab[32];
        memplan_bytes(nb, sizeof nb, need);
        memplan_bytes(ab, sizeof ab, avail);
        if (!t->run.opt->auto_micro_batch || t->run.b == 1)
            return task_fail(t,
                             "activations for micro-batch %u need %" PRIu64 " B (%s) but %" PRIu64
                             " B (%s) are available (%s%s); use a smaller --micro-batch%s",
                             t->run.b, need, nb, avail, ab,
                             st == CLG_ERR_OVER_BUDGET ? "over the memory budget"
                                                       : "device out of memory",
                             t->run.opt->vram ? " set by --vram" : "",
                             t->run.opt->auto_micro_batch ? "" : " or --auto-micro-batch");
        unsigned b = t->run.b;
        run_set_micro_batch(&t->run, (b + 1) / 2);
        progress_log(&t->run.prog,
                     "auto micro-batch: activations for micro-batch %u need %s, %s available "
                     "(%s); retrying with micro-batch %u, k = %u (effective batch %u unchanged)\n",
                     b, nb, ab, st == CLG_ERR_OVER_BUDGET ? "over budget" : "out of memory",
                     t->run.b, t->run.k, t->run.opt->batch);
        t->res->halvings++;
        if (t->run.model)
            clg_reset_cycle(t->run.model);
    }
}

int classify_check_plan(classify_trainer *t, const train_io *io)
{
    const train_options *o = t->run.opt;
    memplan p = {0};
    uint64_t n = mlp_param_count(t->shape.dims, t->shape.n_dims);
    int zero1 = t->run.dist && t->run.dist->zero1;
    if (run_estimate_model(&t->run, n, zero1 ? (unsigned)t->run.dist->rank : 0,
                           zero1 ? (unsigned)t->run.dist->size : 1, &p.model) != 0)
        return -1;
    /* as classify_setup_gradients and classify_setup_weights allocate them */
    if (o->path != GRAD_PATH_B && o->grad_dtype != CLG_FP32)
        p.grad_scratch = 4 * n;
    p.weights = model_fp32_master_bytes(o, n);
    /* --auto-micro-batch halves down to 1 before it gives up */
    p.activations = mlp_activation_bytes(t->shape.dims, t->shape.n_dims,
                                         o->auto_micro_batch ? 1 : t->run.b);
    size_t n_train, n_test;
    run_count_samples(&t->run, io, &n_train, &n_test);
    p.data = devdata_bytes(n_train, t->shape.dims[0]) + devdata_bytes(n_test, t->shape.dims[0]);
    memplan_total(&p);
    memplan_limit device = {clg_context_device_info(t->run.ctx)->global_mem_size, NULL};
    return memplan_refuse(&p, device, "--hidden or --micro-batch", o->allow_over_memory,
                          t->run.err, t->run.errlen);
}

void classify_print_plan(classify_trainer *t)
{
    if (t->run.opt->quiet)
        return;
    memplan p = {0};
    p.model = clg_model_plan_init();
    clg_model_memory(t->run.model, &p.model); /* includes the gradient buffers of paths A/C */
    p.activations = mlp_activation_bytes(t->shape.dims, t->shape.n_dims, t->run.b);
    p.micro_batch = t->run.b;
    p.grad_scratch = t->scratch.bytes;
    p.weights = t->weights.bytes;
    p.state_dtype = t->run.opt->state_dtype;
    p.master_dtype = t->run.opt->master_dtype;
    clg_model_shard(t->run.model, &p.shard, &p.shards);
    p.data = t->run.dtrain.bytes + t->run.dtest.bytes;
    memplan_total(&p);
    p.is_budget = clg_context_budget(t->run.ctx) != 0;
    p.available = p.is_budget ? clg_context_budget(t->run.ctx)
                              : clg_context_device_info(t->run.ctx)->global_mem_size;
    progress_clear(&t->run.prog);
    memplan_print(stderr, &p, clg_context_device_info(t->run.ctx)->name, t->res->run.params);
}

void classify_teardown(void *task)
{
    classify_trainer *t = task;
    if (t->net)
        mlp_free_activations(t->net);
    model_fp32_release(&t->run, &t->scratch);
    model_fp32_release(&t->run, &t->weights);
    cl_mem *small[] = {&t->sums, &t->eval_sums, &t->one};
    clbuf_release_mems(small, 3);
    mlp_destroy(t->net);
    run_release(&t->run);
}
