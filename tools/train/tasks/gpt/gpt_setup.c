/* gpt_setup.c - building a GPT run: the corpus and its windows (unless the
 * caller gave window sets), the context, the micro-batch (--auto-micro-
 * batch: the largest the memory plan fits), the memory plan refused above
 * the device's memory, the data order, clgrad's model with the GPT's
 * tensors, the model's activations, the data on the device, the sums, the
 * baselines, and the teardown. */
#include "gpt_run_internal.h"
#include "gpt_hf.h"
#include "gpt_resolve.h"
#include "gpt_token_data.h"
#include "memplan.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The training bytes of a caller's windows (window i is bytes i T ..
 * i T + T), for the baselines: as if the corpus held just them. */
static int rebuild_train_bytes(gpt_trainer *t, const dataset *w)
{
    size_t T = w->dim - 1;
    gpt_corpus *c = &t->data.text;
    c->n = c->n_train = w->count * T + 1;
    if (!(c->bytes = malloc(c->n)))
        return task_fail(t, "out of host memory");
    for (size_t i = 0; i < w->count; i++)
        memcpy(c->bytes + i * T, w->images + i * w->dim, w->dim);
    return 0;
}

/* The windows the run will train and validate on (--train-limit and
 * --test-limit applied), before anything is read: the caller's sets', or
 * those of --data's files as listed (text or shards: gpt_source.h), whose
 * data and windows must fit in the host's memory. */
static int count_windows(gpt_trainer *t, const train_io *io, size_t *n_train, size_t *n_test)
{
    const train_options *o = t->run.opt;
    size_t w[2];
    if (io && io->train && io->test) {
        w[0] = io->train->count;
        w[1] = io->test->count;
    } else {
        gpt_source *s = &t->src;
        if (gpt_source_list(o->data_dir, t->g->val_data, t->g->tokens, t->shape.context,
                            t->shape.vocab, s, t->run.err, t->run.errlen) != 0)
            return -1;
        uint64_t host = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
        if (s->host_bytes > host)
            return task_fail(t,
                             "--data %s: its %" PRIu64 " bytes need %" PRIu64 " B of host "
                             "memory as windows of --context %u, more than the host's %" PRIu64
                             " B",
                             o->data_dir, s->bytes, s->host_bytes, t->shape.context, host);
        w[0] = s->windows[0];
        w[1] = s->windows[1];
    }
    *n_train = run_limited(w[0], o->limit_train);
    *n_test = run_limited(w[1], o->limit_test);
    return 0;
}

/* The windows of --data, training and validation, as the io the core's
 * run_load_data takes. */
static int load_data(gpt_trainer *t, const train_io *io, train_io *own)
{
    *own = io ? *io : (train_io){0};
    if (!own->train || !own->test) {
        if (gpt_source_read(&t->src, &t->data, t->run.err, t->run.errlen) != 0)
            return -1;
        own->train = &t->data.train.set;
        own->test = &t->data.val.set;
        t->res->corpus_bytes = t->src.bytes;
    }
    size_t dim = gpt_window_bytes(t->shape.context, t->shape.vocab);
    if (own->train->dim != dim || own->test->dim != dim)
        return task_fail(t,
                         "the GPT's samples are windows of --context %u + 1 tokens (%zu bytes); "
                         "the data has %zu and %zu",
                         t->shape.context, dim, own->train->dim, own->test->dim);
    if (!t->data.text.bytes && !t->data.tok.tokens && rebuild_train_bytes(t, own->train) != 0)
        return -1;
    return run_load_data(&t->run, own);
}

/* The validation targets' bytes per token: a token model's through its
 * decode table (read here, and kept for --sample), NAN without one. */
static int target_bytes(gpt_trainer *t, size_t n_test)
{
    t->res->bytes_per_token = 1.0;
    t->res->vocab = t->shape.vocab;
    t->res->tokens = t->g->tokens;
    if (!t->g->tokens)
        return 0;
    t->res->bytes_per_token = NAN;
    if (!t->g->tokenizer_path[0])
        return 0;
    if (gpt_decoder_load(gpt_tokenizer_flag(t->g), t->g->tokenizer_path, &t->decoder,
                         t->run.err, t->run.errlen) != 0)
        return -1;
    uint64_t bytes = gpt_token_window_target_bytes(&t->decoder, t->run.test, n_test);
    double targets = (double)n_test * t->shape.context;
    t->res->bytes_per_token = targets > 0 && bytes ? (double)bytes / targets : NAN;
    return 0;
}

/* The plan's parts other than the activations' per-sequence bytes. */
static int plan_fixed(gpt_trainer *t, size_t n_train, size_t n_test, memplan *p)
{
    memset(p, 0, sizeof *p);
    if (run_estimate_model(&t->run, gpt_param_count(&t->shape), 0, 1, &p->model) != 0)
        return -1;
    size_t dim = gpt_window_bytes(t->shape.context, t->shape.vocab);
    p->data = devdata_bytes(n_train, dim) + devdata_bytes(n_test, dim) + GPT_SUMS_BYTES;
    p->weights = model_fp32_master_bytes(t->run.opt, gpt_param_count(&t->shape));
    p->state_dtype = t->run.opt->state_dtype;
    p->master_dtype = t->run.opt->master_dtype;
    return 0;
}

/* The micro-batch (--micro-batch, or with --auto-micro-batch the largest
 * the plan fits in --memory, --vram or the device's memory) and the
 * plan with it, refused above the device's memory. */
static int choose_micro_batch(gpt_trainer *t, size_t n_train, size_t n_test)
{
    const train_options *o = t->run.opt;
    memplan p;
    if (plan_fixed(t, n_train, n_test, &p) != 0)
        return -1;
    gpt_act_bytes a = gpt_activation_bytes(&t->shape);
    unsigned cap = o->batch < n_train ? o->batch : (unsigned)n_train;
    if (cap == 0) /* a caller's empty set (the corpus's are checked when listed) */
        return task_fail(t, "--data: no training window to plan a micro-batch for");
    uint64_t device = clg_context_device_info(t->run.ctx)->global_mem_size;
    uint64_t avail = t->g->memory ? t->g->memory : o->vram ? o->vram : device;
    unsigned b = o->micro_batch < cap ? o->micro_batch : cap;
    if (o->auto_micro_batch) {
        b = gpt_fit_micro_batch(&a, avail, p.model.total + p.weights + p.data, cap);
        if (!b)
            return task_fail(t,
                             "--auto-micro-batch: not one sequence fits in %" PRIu64 " B "
                             "(model %" PRIu64 " B, data %" PRIu64 " B, activations %" PRIu64
                             " B per sequence + %" PRIu64 " B)",
                             avail, p.model.total + p.weights, p.data,
                             a.per_seq + a.logits_per_seq, a.fixed);
    }
    run_set_micro_batch(&t->run, b);
    p.micro_batch = t->run.b;
    p.activations = gpt_act_total(&a, t->run.b);
    memplan_total(&p);
    t->res->planned_bytes = p.total;
    /* the device's memory, and the smaller one a flag gave (the plan says
     * "does not fit" in it: so does the run) */
    static const char shrink[] = "--preset, --layers, --width, --context or --micro-batch";
    memplan_limit limits[2] = {{device, NULL},
                               {avail, t->g->memory ? "--memory" : "--vram"}};
    for (int i = 0; i < (avail < device ? 2 : 1); i++)
        if (memplan_refuse(&p, limits[i], shrink, o->allow_over_memory, t->run.err,
                           t->run.errlen) != 0)
            return -1;
    return 0;
}

static int build_model(gpt_trainer *t)
{
    clg_status st;
    if (run_create_model(&t->run, &st) != 0)
        return -1;
    for (int i = 0; st == CLG_SUCCESS && i < gpt_tensor_count(&t->shape); i++) {
        gpt_tensor_info ti;
        gpt_tensor(&t->shape, i, &ti);
        size_t count = ti.ndim == 2 ? ti.dims[0] * ti.dims[1] : ti.dims[0];
        int idx = -1;
        st = clg_model_add_tensor(t->run.model, ti.name, count, ti.decay ? 0 : t->run.no_decay,
                                  &idx);
        if (st == CLG_SUCCESS)
            st = clg_model_set_tensor_shape(t->run.model, idx, (size_t)ti.ndim, ti.dims);
    }
    if (st == CLG_SUCCESS)
        st = clg_model_finalize(t->run.model);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "building the model", st);
    /* --init-from: a Hugging Face GPT-2's weights (gpt_hf.h) */
    const char *hf = t->g->init_from;
    if ((hf ? gpt_hf_init_params(&t->run, hf, &t->shape)
            : run_init_params(&t->run, gpt_init_params, &t->shape)) != 0)
        return -1;
    if (t->run.opt->loss_scale != CLG_LOSS_SCALE_NONE &&
        (st = clg_model_loss_scale_view(t->run.model, &t->scale)) != CLG_SUCCESS)
        return task_fail_clg(t, "the loss scale's view", st);
    return 0;
}

/* The model's views: clgrad's parameters, or with bf16 master weights
 * their fp32 copy (model_fp32.h); clgrad's accumulator (path B), or its
 * fp32 gradient buffers (paths A/C: a bf16 accumulator). */
static int bind_model(gpt_trainer *t)
{
    clg_status st = gpt_bind(t->m, t->run.model);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "binding the model's views", st);
    if (model_fp32_master(&t->run, &t->weights) != 0)
        return -1;
    if (t->weights.buf)
        gpt_bind_params(t->m, t->weights.view);
    if (t->run.opt->path == GRAD_PATH_B)
        return 0;
    st = clg_grads_create(t->run.model, CLG_FP32, &t->run.grads);
    if (st != CLG_SUCCESS)
        return task_fail_clg(t, "creating the gradient buffers", st);
    clg_view grads[GPT_MAX_TENSORS];
    for (int i = 0; i < gpt_tensor_count(&t->shape); i++)
        if ((st = clg_grads_view(t->run.grads, i, &grads[i])) != CLG_SUCCESS)
            return task_fail_clg(t, "gradient buffer view", st);
    gpt_bind_grads(t->m, grads);
    return 0;
}

int gpt_setup(gpt_trainer *t, const train_io *io)
{
    const train_options *o = t->run.opt;
    t->shape = gpt_options_shape(t->g);
    /* the plan from the corpus's size, refused before it is read */
    size_t n_train = 0, n_test = 0, got_train, got_test;
    if (count_windows(t, io, &n_train, &n_test) != 0 ||
        run_open_context(&t->run, io) != 0 ||
        choose_micro_batch(t, n_train, n_test) != 0)
        return -1;
    train_io own;
    if (load_data(t, io, &own) != 0)
        return -1;
    run_limits(&t->run, &got_train, &got_test);
    if (got_train != n_train || got_test != n_test)
        return task_fail(t, "--data %s: its files changed between their listing and their reading",
                         o->data_dir);
    if (run_plan_order(&t->run, n_train) != 0 || build_model(t) != 0)
        return -1;
    progress_unit(&t->run.prog, "tokens", t->shape.context); /* as the summary counts */
    /* the tuning is checked on this run's own GEMM shapes before it is used */
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes = gpt_gemm_shapes(&t->shape, t->run.b, shapes, MLP_GEMMS_MAX);
    if (run_apply_tuning(&t->run, GPT_TASK_NAME, shapes, n_shapes, t->res->run.clblast_tuning,
                         sizeof t->res->run.clblast_tuning) != 0)
        return -1;
    if (gpt_create(t->run.ctx, &t->shape, t->run.b, &t->m, t->run.err, t->run.errlen) != 0)
        return -1;
    if (bind_model(t) != 0)
        return -1;
    if (run_upload_data(&t->run, n_train, n_test) != 0)
        return -1;
    for (int i = 0; i < GPT_N_SUMS; i++)
        if (run_reserve_buffer(&t->run, GPT_SUMS_BYTES / GPT_N_SUMS, "the loss sums", &t->sums[i],
                               &t->sums_bytes[i]) != 0)
            return -1;
    gpt_result *r = t->res;
    const dataset *val = t->run.test;
    gpt_source_baselines(&t->data, val, n_test, &r->base);
    if (target_bytes(t, n_test) != 0)
        return -1;
    r->train_windows = n_train;
    r->val_windows = n_test;
    run_result_setup(&t->run);
    gpt_act_bytes a = gpt_activation_bytes(&t->shape);
    r->run.activation_bytes = gpt_act_total(&a, t->run.b);
    const flag_run fr = {.o = o, .cfg = &t->run.cfg, .opts = t->g};
    task_settings_build(&t->settings, &gpt_flag_table, GPT_TASK_NAME, &fr);
    t->run.settings = &t->settings; /* its checkpoints' and --log's */
    run_build_config(&t->run);
    return 0;
}

void gpt_print_run_plan(gpt_trainer *t)
{
    const run_result *r = &t->res->run;
    uint64_t copy = t->weights.bytes;
    char w[64] = "", rows[48];
    if (copy) {
        char cb[32];
        memplan_bytes(cb, sizeof cb, copy);
        snprintf(w, sizeof w, ", fp32 copy of the bf16 weights %s", cb);
    }
    snprintf(rows, sizeof rows, "%u sequences of %u", t->run.b, t->shape.context);
    run_print_plan_line(&t->run, w, rows,
                        r->model_bytes + copy + r->activation_bytes + r->data_bytes +
                            GPT_SUMS_BYTES);
}

void gpt_teardown(void *task)
{
    gpt_trainer *t = task;
    gpt_destroy(t->m);
    t->m = NULL;
    model_fp32_release(&t->run, &t->weights);
    for (int i = 0; i < GPT_N_SUMS; i++)
        run_release_buffer(&t->run, &t->sums[i], &t->sums_bytes[i]);
    run_release(&t->run);
    gpt_source_data_free(&t->data);
    gpt_source_free(&t->src);
    gpt_decoder_free(&t->decoder);
}
