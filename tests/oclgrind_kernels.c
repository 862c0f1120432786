/* oclgrind_kernels.c - runs every kernel clgrad has, at tiny sizes, through
 * the public API, so that scripts/oclgrind-check.sh can run it under
 * Oclgrind (--data-races --uninitialized --check-api) and fail on any
 * report. Covered: every optimizer and its variants, paths A/B/C, fp32,
 * fp16 and bf16 gradients, bf16 accumulators, param copies, clipping by
 * norm and value, static and dynamic loss scaling, every non-finite policy,
 * tensor norms, the noise scale, partial windows, checkpoints, bf16, Q8
 * and Q4 optimizer states (nearest and stochastic rounding, quantized and
 * fp32-state chunks side by side), bf16 master weights, and the
 * auxiliary programs (stream, handrolled, mlp) launched kernel by kernel,
 * the contrastive kernels (oclgrind_contrastive.c) and the GPT task's
 * (oclgrind_gpt.c, through its launchers).
 * Exits 0 when every call succeeded (it checks no numbers: the other tests
 * do), 1 otherwise (also when a kernel exists that it does not know how
 * to run: add a launcher for it here).
 * Also runs on a normal device, as a quick smoke test.
 *
 * Oclgrind 21.10's --uninitialized has two false positives that clgrad
 * meets everywhere: memory written by clEnqueueFillBuffer stays
 * "uninitialized" (clgrad zero-fills every buffer it creates), and a
 * clEnqueueWriteBuffer at a non-zero offset marks the rest of the buffer
 * uninitialized (clgrad uploads tensor by tensor). Both reproduced with
 * 20-line programs outside clgrad. So after every host write (model built,
 * gradients or params uploaded, checkpoint loaded), every device buffer of
 * the model is read back and written again unchanged from offset 0
 * (mark_initialized, through model.h's internals). What Oclgrind reports
 * then is about the kernels themselves. */
#include "model.h"
#include "clgrad_advanced.h"
#include "bench_kernels.h"
#include "train_kernels.h"
#include "oclgrind_contrastive.h"
#include "oclgrind_gpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static clg_context *ctx;
static int failures;

static int check(clg_status st, const char *what)
{
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "FAILED: %s: %s: %s\n", what, clg_status_string(st), clg_last_error(ctx));
        failures++;
    }
    return st == CLG_SUCCESS;
}

static int check_cl(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) {
        fprintf(stderr, "FAILED: %s: OpenCL error %d\n", what, (int)err);
        failures++;
    }
    return err == CL_SUCCESS;
}

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static float frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)(rng_state >> 40) / 16777216.0f * 2.0f - 1.0f;
}

static uint16_t to_half(float f)
{
    /* round toward zero is fine here: any finite half will do */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int e = (int)((u >> 23) & 0xff) - 127 + 15;
    uint32_t m = (u >> 13) & 0x3ffu;
    if (e <= 0)
        return (uint16_t)sign;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (uint32_t)e << 10 | m);
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* Host gradients in dtype for every tensor (n elements), optionally with
 * one inf at element 3. */
static void *make_grads(clg_dtype dtype, size_t n, int with_inf)
{
    size_t es = dtype == CLG_FP32 ? 4 : 2;
    uint8_t *buf = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        float v = (with_inf && i == 3) ? INFINITY : 0.5f * frand();
        if (dtype == CLG_FP32)
            memcpy(buf + 4 * i, &v, 4);
        else {
            uint16_t h = dtype == CLG_FP16 ? to_half(v) : to_bf16(v);
            memcpy(buf + 2 * i, &h, 2);
        }
    }
    return buf;
}

/* ------------------------------------------------------------ the model */

typedef struct scenario {
    const char *name;
    clg_config cfg;
    clg_dtype grad_dtype; /* CLG_DTYPE_NONE: path B */
    unsigned updates;
    int inf_at;          /* micro-step (1-based, overall) that gets an inf; 0: none */
    clg_status expect_sync; /* what clg_model_sync returns at the end */
    int flush;           /* end with a partial window and clg_flush */
    int checkpoint;      /* save and load a checkpoint in the middle */
} scenario;

static void path_b_write(clg_model *m, size_t n_tensors, float w)
{
    cl_command_queue q = clg_context_queue(ctx);
    float beta = clg_accum_beta(m);
    for (size_t t = 0; t < n_tensors; t++) {
        clg_view v;
        if (!check(clg_model_acc_view(m, (int)t, &v), "clg_model_acc_view"))
            return;
        float *buf = malloc(v.count * sizeof(float));
        if (beta != 0.0f)
            check_cl(clEnqueueReadBuffer(q, v.mem, CL_TRUE, v.offset * 4, v.count * 4, buf, 0,
                                         NULL, NULL),
                     "read acc");
        for (size_t i = 0; i < v.count; i++)
            buf[i] = (beta != 0.0f ? buf[i] : 0.0f) + w * 0.5f * frand();
        check_cl(clEnqueueWriteBuffer(q, v.mem, CL_TRUE, v.offset * 4, v.count * 4, buf, 0, NULL,
                                      NULL),
                 "write acc");
        free(buf);
    }
}

/* Reads a buffer back and writes the same bytes again (see the top). */
static void rewrite_buffer(cl_mem mem)
{
    if (!mem)
        return;
    size_t bytes = 0;
    if (!check_cl(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL), "mem size"))
        return;
    void *host = malloc(bytes);
    cl_command_queue q = clg_context_queue(ctx);
    check_cl(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL), "read back");
    check_cl(clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL), "write back");
    free(host);
}

static void rewrite_arena(const clg_model *m, const clg_arena *a)
{
    for (size_t c = 0; a->chunks && c < m->n_chunks; c++)
        rewrite_buffer(a->chunks[c]);
}

static void mark_initialized(const clg_model *m, const clg_grads *g)
{
    rewrite_arena(m, &m->params);
    rewrite_arena(m, &m->acc);
    rewrite_arena(m, &m->copy);
    for (size_t s = 0; s < m->n_states; s++)
        rewrite_arena(m, &m->states[s]);
    for (size_t s = 0; s < 2; s++)
        rewrite_arena(m, &m->scales[s]);
    rewrite_buffer(m->step_block);
    rewrite_buffer(m->partials);
    rewrite_buffer(m->tensor_sumsq);
    for (size_t c = 0; c < m->n_chunks; c++) {
        if (m->norm_offsets)
            rewrite_buffer(m->norm_offsets[c]);
        if (m->norm_counts)
            rewrite_buffer(m->norm_counts[c]);
    }
    if (g)
        rewrite_arena(m, &g->arena);
}

static void run_scenario(const scenario *s)
{
    fprintf(stderr, "scenario: %s\n", s->name);
    clg_model *m = NULL;
    if (!check(clg_model_create(ctx, &s->cfg, &m), s->name))
        return;
    int g1 = -1, t;
    check(clg_model_add_group(m, "bias", 0.5f, 0.0f, &g1), "add_group");
    check(clg_model_add_tensor(m, "w1", 37, 0, &t), "add_tensor");
    check(clg_model_add_tensor(m, "b1", 5, g1, &t), "add_tensor");
    check(clg_model_add_tensor(m, "w2", 20, 0, &t), "add_tensor");
    if (!check(clg_model_finalize(m), "clg_model_finalize")) {
        clg_model_destroy(m);
        return;
    }
    size_t n = clg_model_param_count(m), nt = clg_model_tensor_count(m);
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    check(clg_model_upload_params(m, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL), "upload_params");
    clg_grads *g = NULL;
    if (s->grad_dtype != CLG_DTYPE_NONE)
        check(clg_grads_create(m, s->grad_dtype, &g), "clg_grads_create");
    mark_initialized(m, g);

    unsigned k = s->cfg.accum_steps ? s->cfg.accum_steps : 1;
    unsigned total = s->updates * k + (s->flush ? 1 : 0), micro = 0;
    char *ckpt = NULL;
    for (unsigned i = 0; i < total; i++) {
        float w = 1.0f + 0.25f * (float)(i % 3);
        micro++;
        if (g) {
            void *host = make_grads(s->grad_dtype, n, (int)micro == s->inf_at);
            check(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL), "clg_grads_upload");
            free(host);
        } else {
            path_b_write(m, nt, w);
        }
        mark_initialized(m, g);
        check(clg_step(m, g, w, NULL, NULL), "clg_step");
        clg_stats st = clg_stats_init();
        check(clg_model_stats(m, 0, &st), "clg_model_stats (non-blocking)");
        if (s->checkpoint && i == k) {
            char tmpl[] = "/tmp/clgrad-oclgrind-XXXXXX";
            int fd = mkstemp(tmpl);
            if (fd >= 0)
                close(fd);
            ckpt = strdup(tmpl);
            const char *keys[] = {"scenario"}, *values[] = {s->name};
            check(clg_checkpoint_save(m, ckpt, keys, values, 1), "clg_checkpoint_save");
            check(clg_checkpoint_load(m, ckpt, NULL, NULL), "clg_checkpoint_load");
            mark_initialized(m, g);
        }
    }
    if (s->flush)
        check(clg_flush(m, NULL), "clg_flush");
    clg_status sync = clg_model_sync(m);
    if (sync != s->expect_sync) {
        fprintf(stderr, "FAILED: %s: clg_model_sync returned %s, expected %s\n", s->name,
                clg_status_string(sync), clg_status_string(s->expect_sync));
        failures++;
    }
    clg_stats st = clg_stats_init();
    check(clg_model_stats(m, 1, &st), "clg_model_stats (blocking)");
    float scale;
    check(clg_model_loss_scale(m, 1, &scale), "clg_model_loss_scale");
    check(clg_model_download_params(m, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL), "download_params");
    check(clg_model_download_acc(m, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL), "download_acc");
    for (size_t i = 0; i < clg_model_state_count(m); i++)
        check(clg_model_download_state(m, (int)i, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL), "download_state");
    if (s->cfg.tensor_norms) {
        float norms[3];
        check(clg_model_tensor_norms(m, norms, clg_model_tensor_count(m)), "clg_model_tensor_norms");
    }
    if (s->cfg.param_copy_dtype != CLG_DTYPE_NONE) {
        clg_view v;
        uint16_t h[37];
        if (check(clg_model_param_copy_view(m, 0, &v), "param_copy_view"))
            check_cl(clEnqueueReadBuffer(clg_context_queue(ctx), v.mem, CL_TRUE, v.offset * 2,
                                         v.count * 2, h, 0, NULL, NULL),
                     "read param copy");
    }
    clg_reset_cycle(m);
    if (ckpt) {
        unlink(ckpt);
        free(ckpt);
    }
    free(p);
    clg_grads_destroy(g);
    clg_model_destroy(m);
}

static clg_config base(clg_optimizer opt, unsigned k)
{
    clg_config c = clg_config_init(opt);
    c.accum_steps = k;
    return c;
}

static void run_model_scenarios(const char *only)
{
    scenario list[32];
    size_t n = 0;
#define ADD(...) list[n++] = (scenario){__VA_ARGS__}
    clg_config c;

    /* every optimizer, path C (default), fp32 grads */
    c = base(CLG_SGD, 2);
    ADD("sgd plain, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 2);
    c.momentum = 0.9f, c.nesterov = 1, c.weight_decay = 0.01f;
    c.maximize = 1;
    ADD("sgd nesterov maximize, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAM, 2);
    c.amsgrad = 1, c.weight_decay = 0.01f;
    c.schedule = (clg_schedule){CLG_SCHED_COSINE, 1, 4, 1e-4f};
    ADD("adam amsgrad cosine, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.schedule = (clg_schedule){CLG_SCHED_LINEAR, 1, 4, 0.0f};
    ADD("adamw linear, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_LION, 2);
    ADD("lion, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);

    /* paths A and B, gradient and accumulator dtypes, param copies */
    c = base(CLG_ADAMW, 2);
    c.fuse_last_micro_step = 0;
    c.param_copy_dtype = CLG_FP16;
    ADD("adamw path A, fp16 grads, fp16 copy", c, CLG_FP16, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.param_copy_dtype = CLG_BF16;
    ADD("adamw path C, bf16 grads, bf16 copy", c, CLG_BF16, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 3);
    c.momentum = 0.9f;
    ADD("sgd path B", c, CLG_DTYPE_NONE, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 2);
    c.momentum = 0.9f, c.dampening = 0.1f;
    ADD("sgd dampening, path A", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.acc_dtype = CLG_BF16, c.seed = 7;
    ADD("adamw bf16 accumulator, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.acc_dtype = CLG_BF16, c.fuse_last_micro_step = 0;
    ADD("adamw bf16 accumulator, path A, fp16 grads", c, CLG_FP16, 2, 0, CLG_SUCCESS, 0, 0);

    /* statistics: clipping, loss scaling, policies, norms, noise scale */
    c = base(CLG_ADAMW, 2);
    c.clip_norm = 0.1f, c.clip_value = 0.05f, c.normalize = CLG_NORM_SUM;
    ADD("adamw clip norm + value, sum", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC, c.loss_scale_interval = 1;
    c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    ADD("adamw dynamic loss scale, skip update", c, CLG_FP16, 3, 2, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 2);
    c.loss_scale = CLG_LOSS_SCALE_STATIC, c.loss_scale_init = 128.0f;
    c.nonfinite = CLG_NONFINITE_IGNORE;
    ADD("sgd static loss scale", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAM, 3);
    c.nonfinite = CLG_NONFINITE_SKIP_MICRO, c.fuse_last_micro_step = 0;
    ADD("adam skip micro-step, path A", c, CLG_FP32, 2, 2, CLG_SUCCESS, 0, 0);
    c = base(CLG_LION, 2);
    c.nonfinite = CLG_NONFINITE_ERROR;
    ADD("lion error policy", c, CLG_FP32, 2, 3, CLG_ERR_NONFINITE, 0, 0);
    c = base(CLG_ADAMW, 3);
    c.tensor_norms = 1, c.noise_scale = 1, c.noise_scale_ema = 0.5f;
    ADD("adamw tensor norms + noise scale", c, CLG_FP32, 3, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 3);
    c.momentum = 0.5f, c.clip_norm = 1.0f;
    ADD("sgd partial window (flush)", c, CLG_FP32, 1, 0, CLG_SUCCESS, 1, 0);
    c = base(CLG_ADAMW, 2);
    c.amsgrad = 1, c.acc_dtype = CLG_BF16, c.param_copy_dtype = CLG_FP16, c.noise_scale = 1;
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC, c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    ADD("adamw checkpoint mid-run", c, CLG_FP32, 3, 0, CLG_SUCCESS, 0, 1);

    /* low-precision training state (update_q.cl for Q8/Q4 chunks): the
     * tiny tensors are quantized with state_min_size 0; with 30, w1 is and
     * b1, w2 keep fp32 states in a chunk of their own */
    c = base(CLG_ADAMW, 2);
    c.state_dtype = CLG_Q8, c.state_min_size = 0;
    ADD("adamw Q8 states, path C", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAM, 2);
    c.state_dtype = CLG_Q8, c.state_min_size = 30, c.amsgrad = 1, c.weight_decay = 0.01f;
    c.fuse_last_micro_step = 0, c.clip_value = 0.05f, c.maximize = 1;
    ADD("adam amsgrad Q8 + fp32 small-state chunk, path A", c, CLG_FP16, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 2);
    c.momentum = 0.9f, c.nesterov = 1, c.state_dtype = CLG_Q4, c.state_min_size = 0;
    ADD("sgd nesterov Q4 states, path B", c, CLG_DTYPE_NONE, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_LION, 2);
    c.state_dtype = CLG_Q4, c.state_min_size = 0, c.state_rounding = CLG_ROUND_STOCHASTIC;
    ADD("lion Q4 stochastic, bf16 grads", c, CLG_BF16, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.state_dtype = CLG_Q8, c.state_min_size = 0, c.state_rounding = CLG_ROUND_STOCHASTIC;
    c.master_dtype = CLG_BF16, c.param_copy_dtype = CLG_FP16, c.acc_dtype = CLG_BF16;
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC, c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    ADD("adamw Q8 stochastic, bf16 master + acc, fp16 copy, skip", c, CLG_FP16, 3, 2,
        CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.state_dtype = CLG_BF16, c.state_rounding = CLG_ROUND_STOCHASTIC, c.master_dtype = CLG_BF16;
    ADD("adamw bf16 states stochastic, bf16 master", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_SGD, 2);
    c.momentum = 0.9f, c.state_dtype = CLG_BF16, c.param_copy_dtype = CLG_BF16;
    ADD("sgd bf16 states, bf16 copy", c, CLG_FP32, 2, 0, CLG_SUCCESS, 0, 0);
    c = base(CLG_ADAMW, 2);
    c.state_dtype = CLG_Q4, c.state_min_size = 30, c.master_dtype = CLG_BF16;
    ADD("adamw Q4 + fp32 small-state chunk, bf16 master, checkpoint mid-run", c, CLG_FP32, 3, 0,
        CLG_SUCCESS, 0, 1);
#undef ADD
    /* argv[1] (optional): run only scenarios whose name contains it */
    for (size_t i = 0; i < n; i++)
        if (!only || strstr(list[i].name, only))
            run_scenario(&list[i]);
}

/* ------------------------------------------------------------ aux programs */

typedef struct buffers {
    cl_mem f[6];  /* float buffers of FN elements */
    cl_mem u8, idx, half;
} buffers;

enum { FN = 64 };

static cl_mem make_buffer(size_t bytes, const void *init)
{
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!check_cl(err, "clCreateBuffer"))
        return NULL;
    check_cl(clEnqueueWriteBuffer(clg_context_queue(ctx), m, CL_TRUE, 0, bytes, init, 0, NULL,
                                  NULL),
             "clEnqueueWriteBuffer");
    return m;
}

static void arg(cl_kernel k, cl_uint i, size_t size, const void *value, const char *name)
{
    check_cl(clSetKernelArg(k, i, size, value), name);
}
#define ARG(i, type, v) arg(k, (i), sizeof(type), &(type){v}, name)

/* Sets the arguments of a known auxiliary kernel; returns the global size,
 * or 0 for an unknown kernel. */
static size_t set_args(cl_kernel k, const char *name, const buffers *b)
{
    const cl_mem *f = b->f;
    if (!strcmp(name, "stream_copy")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_mem, f[1]), ARG(2, cl_ulong, FN / 4);
        return FN / 4;
    }
    /* the triads share one signature (a, b, c, s, n) */
    if (!strcmp(name, "stream_triad") || !strcmp(name, "stream_triad_inplace") ||
        !strcmp(name, "stream_triad_nt") || !strcmp(name, "stream_triad_gridstride")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_mem, f[1]), ARG(2, cl_mem, f[2]);
        ARG(3, cl_float, 3.0f), ARG(4, cl_ulong, FN / 4);
        return strcmp(name, "stream_triad_gridstride") ? FN / 4 : 4;
    }
    if (!strcmp(name, "plain_axpy_half")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_mem, b->half), ARG(2, cl_ulong, 8);
        ARG(3, cl_ulong, FN - 8), ARG(4, cl_float, 0.5f);
        return FN - 8;
    }
    if (!strcmp(name, "plain_zero")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_ulong, 4), ARG(2, cl_ulong, FN - 4);
        return FN - 4;
    }
    if (!strcmp(name, "plain_update")) {
        /* p, acc, s0, s1, off, n, scale, step, lr, wd, decay, step_size,
         * bc2_sqrt, beta1, beta2, eps, momentum, dampening */
        ARG(0, cl_mem, f[0]), ARG(1, cl_mem, f[1]), ARG(2, cl_mem, f[2]), ARG(3, cl_mem, f[3]);
        ARG(4, cl_ulong, 2), ARG(5, cl_ulong, FN - 2), ARG(6, cl_float, 0.5f);
        ARG(7, cl_uint, 2), ARG(8, cl_float, 1e-3f), ARG(9, cl_float, 0.01f);
        ARG(10, cl_float, 1.0f - 1e-5f), ARG(11, cl_float, 1e-3f / 0.19f);
        ARG(12, cl_float, 0.0447f), ARG(13, cl_float, 0.9f), ARG(14, cl_float, 0.999f);
        ARG(15, cl_float, 1e-8f), ARG(16, cl_float, 0.9f), ARG(17, cl_float, 0.1f);
        return FN - 2;
    }
    /* mlp: 4 rows of 8 inputs from a "data set" of 6 images, 4 classes */
    if (!strcmp(name, "mlp_gather")) {
        ARG(0, cl_mem, b->u8), ARG(1, cl_mem, b->idx), ARG(2, cl_uint, 1);
        ARG(3, cl_uint, 4), ARG(4, cl_uint, 8), ARG(5, cl_mem, f[0]);
        return 32;
    }
    if (!strcmp(name, "mlp_bias_act")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_uint, 4), ARG(2, cl_uint, 8), ARG(3, cl_mem, f[1]);
        ARG(4, cl_ulong, 3), ARG(5, cl_int, 1);
        return 32;
    }
    if (!strcmp(name, "mlp_relu_backward")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_mem, f[1]), ARG(2, cl_uint, FN);
        return FN;
    }
    if (!strcmp(name, "mlp_bias_grad")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_uint, 4), ARG(2, cl_uint, 8), ARG(3, cl_mem, f[1]);
        ARG(4, cl_ulong, 2), ARG(5, cl_float, 1.0f);
        return 8;
    }
    if (!strcmp(name, "mlp_softmax_xent")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_uint, 4), ARG(2, cl_uint, 4), ARG(3, cl_mem, b->u8);
        ARG(4, cl_mem, b->idx), ARG(5, cl_uint, 1), ARG(6, cl_mem, f[1]), ARG(7, cl_ulong, 0);
        ARG(8, cl_float, 0.25f), ARG(9, cl_mem, f[2]), ARG(10, cl_mem, f[3]);
        ARG(11, cl_mem, f[4]), ARG(12, cl_int, 1);
        return 4;
    }
    if (!strcmp(name, "mlp_sum_rows")) {
        ARG(0, cl_mem, f[3]), ARG(1, cl_mem, f[4]), ARG(2, cl_uint, 4), ARG(3, cl_mem, f[5]);
        return 1;
    }
    if (!strcmp(name, "mlp_to_fp16")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_ulong, 2), ARG(2, cl_mem, b->half);
        ARG(3, cl_ulong, 1), ARG(4, cl_uint, FN - 2);
        return FN - 2;
    }
    if (!strcmp(name, "mlp_to_bf16")) {
        ARG(0, cl_mem, f[0]), ARG(1, cl_ulong, 2), ARG(2, cl_mem, b->half);
        ARG(3, cl_ulong, 1), ARG(4, cl_uint, FN - 2);
        return FN - 2;
    }
    if (!strcmp(name, "mlp_from_bf16")) {
        ARG(0, cl_mem, b->half), ARG(1, cl_ulong, 1), ARG(2, cl_mem, f[0]);
        ARG(3, cl_ulong, 2), ARG(4, cl_uint, FN - 2);
        return FN - 2;
    }
    return 0;
}

/* A client's program (the bench's or the trainer's, built as they build
 * it), every kernel of it launched once. */
static void run_aux_program(const char *program_name, const char *options)
{
    fprintf(stderr, "program: %s%s%s\n", program_name, *options ? " " : "", options);
    const char *const *source = bench_kernel_source(program_name);
    if (!source)
        source = train_kernel_source(program_name);
    cl_program prog;
    if (!check(clg_context_program_source(ctx, program_name, source, options, &prog, NULL),
               program_name))
        return;
    cl_uint nk = 0;
    if (!check_cl(clCreateKernelsInProgram(prog, 0, NULL, &nk), "clCreateKernelsInProgram"))
        return;
    cl_kernel *ks = calloc(nk ? nk : 1, sizeof *ks);
    check_cl(clCreateKernelsInProgram(prog, nk, ks, NULL), "clCreateKernelsInProgram");

    float host[FN];
    for (int i = 0; i < FN; i++)
        host[i] = frand();
    buffers b;
    for (int i = 0; i < 6; i++)
        b.f[i] = make_buffer(sizeof host, host);
    uint8_t u8[6 * 8];
    for (int i = 0; i < 6 * 8; i++)
        u8[i] = (uint8_t)(i * 37 % 4); /* pixels, and labels 0..3 */
    b.u8 = make_buffer(sizeof u8, u8);
    int idx[6] = {5, 0, 3, 2, 1, 4};
    b.idx = make_buffer(sizeof idx, idx);
    uint16_t half[FN];
    for (int i = 0; i < FN; i++)
        half[i] = to_half(host[i]);
    b.half = make_buffer(sizeof half, half);

    for (cl_uint i = 0; i < nk; i++) {
        char name[128] = "";
        check_cl(clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL),
                 "clGetKernelInfo");
        size_t global = set_args(ks[i], name, &b);
        if (global == 0) {
            fprintf(stderr, "UNKNOWN KERNEL: %s in %s.cl: add it to oclgrind_kernels.c\n", name,
                    program_name);
            failures++;
            continue;
        }
        fprintf(stderr, "  kernel %s (%zu work-items)\n", name, global);
        check_cl(clEnqueueNDRangeKernel(clg_context_queue(ctx), ks[i], 1, NULL, &global, NULL, 0,
                                        NULL, NULL),
                 name);
        check_cl(clFinish(clg_context_queue(ctx)), name);
    }
    for (cl_uint i = 0; i < nk; i++)
        clReleaseKernel(ks[i]);
    free(ks);
    for (int i = 0; i < 6; i++)
        clReleaseMemObject(b.f[i]);
    clReleaseMemObject(b.u8);
    clReleaseMemObject(b.idx);
    clReleaseMemObject(b.half);
}

int main(int argc, char **argv)
{
    clg_status st = clg_context_create(&ctx, NULL);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "no OpenCL device: %s: %s\n", clg_status_string(st),
                clg_last_error(NULL));
        return st == CLG_ERR_NO_DEVICE ? 77 : 1;
    }
    fprintf(stderr, "device: %s\n", clg_context_device_info(ctx)->name);
    const char *only = argc > 1 ? argv[1] : NULL;
    run_model_scenarios(only);
    if (!only) {
        run_aux_program("stream", "");
        /* plain_update is optim.cl's step: each optimizer, as the bench builds it */
        run_aux_program("handrolled", "");
        run_aux_program("handrolled", "-DOPT=0 -DMOMENTUM=1 -DNESTEROV=1");
        run_aux_program("handrolled", "-DOPT=1 -DMAXIMIZE=1");
        run_aux_program("handrolled", "-DOPT=3");
        run_aux_program("mlp", "");
    }
    if (!only || !strcmp(only, "contrastive"))
        failures += oclgrind_contrastive(ctx);
    if (!only || !strcmp(only, "gpt"))
        failures += oclgrind_gpt(ctx);
    clg_context_destroy(ctx);
    fprintf(stderr, "%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
