/* run.c - the shared part of a run's setup, position and teardown (see
 * run.h). */
#include "run.h"
#include "summary.h"
#include "clgrad_advanced.h"
#include "atomic_file.h"
#include "clblast_status.h"
#include "memplan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int run_fail(run_state *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int run_fail_clg(run_state *r, const char *what, clg_status st)
{
    return run_fail(r, "%s: %s (%s)", what, clg_last_error(r->ctx), clg_status_string(st));
}

int run_fail_cl(run_state *r, const char *what, cl_int e)
{
    /* e may come from CLBlast (the GEMMs): its own codes under its names,
     * not under the OpenCL extensions' that share their numbers */
    const char *name = clblast_status_own(e) ? clblast_status_name(e)
                                             : clg_status_string((clg_status)e);
    return run_fail(r, "%s: %s (%d)", what, name, (int)e);
}

static int load_set(run_state *r, const dataset *given, const char *name, dataset *own,
                    const dataset **out)
{
    if (given) {
        *out = given;
        return 0;
    }
    char why[1024];
    if (dataset_load(r->opt->data_dir, name, own, why, sizeof why) != 0)
        return run_fail(r, "--data: %s", why);
    *out = own;
    return 0;
}

int run_load_data(run_state *r, const train_io *io)
{
    if (load_set(r, io ? io->train : NULL, "train", &r->train_ds, &r->train) != 0)
        return -1;
    return load_set(r, io ? io->test : NULL, "t10k", &r->test_ds, &r->test);
}

/* n samples, or the first limit of them (--train-limit, --test-limit; 0: all). */
size_t run_limited(size_t n, uint64_t limit)
{
    return limit && limit < n ? (size_t)limit : n;
}

void run_limits(const run_state *r, size_t *n_train, size_t *n_test)
{
    *n_train = run_limited(r->train->count, r->opt->limit_train);
    *n_test = run_limited(r->test->count, r->opt->limit_test);
}

void run_count_samples(const run_state *r, const train_io *io, size_t *n_train, size_t *n_test)
{
    const dataset *given[2] = {io ? io->train : NULL, io ? io->test : NULL};
    static const char *const prefix[2] = {"train", "t10k"};
    size_t n[2];
    for (int i = 0; i < 2; i++)
        if (given[i])
            n[i] = given[i]->count;
        else if (dataset_count(r->opt->data_dir, prefix[i], &n[i], NULL, 0) != 0)
            n[i] = 0; /* run_load_data will say why */
    *n_train = run_limited(n[0], r->opt->limit_train);
    *n_test = run_limited(n[1], r->opt->limit_test);
}

int run_upload_data(run_state *r, size_t n_train, size_t n_test)
{
    uint64_t need = devdata_bytes(n_train, r->train->dim) + devdata_bytes(n_test, r->test->dim);
    uint64_t used = clg_context_device_bytes(r->ctx), cap = clg_context_budget(r->ctx);
    clg_status st = devdata_upload(r->ctx, r->train, n_train, &r->dtrain);
    if (st == CLG_SUCCESS)
        st = devdata_upload(r->ctx, r->test, n_test, &r->dtest);
    if (st == CLG_ERR_OVER_BUDGET && cap) {
        uint64_t left = cap > used ? cap - used : 0;
        char a[32], b[32], c[32];
        memplan_bytes(a, sizeof a, need);
        memplan_bytes(b, sizeof b, cap);
        memplan_bytes(c, sizeof c, left);
        return run_fail(r,
                        "uploading the data set: it needs %" PRIu64 " B (%s) but the --vram "
                        "budget of %" PRIu64 " B (%s) has %" PRIu64 " B (%s) left; raise --vram",
                        need, a, cap, b, left, c);
    }
    if (st != CLG_SUCCESS)
        return run_fail(r, "uploading the data set (%" PRIu64 " B): %s", need,
                        clg_status_string(st));
    return 0;
}

int run_estimate_model(run_state *r, uint64_t n, unsigned shard, unsigned shards,
                       clg_model_plan *p)
{
    clg_config cfg;
    if (train_options_clg_config(r->opt, &cfg, r->err, r->errlen) != 0)
        return -1;
    cfg.schedule.kind = CLG_SCHED_CONSTANT; /* its length is not known yet; it takes no bytes */
    *p = clg_model_plan_init();
    clg_status st = shards > 1 ? clg_model_estimate_shard(&cfg, n, shard, shards, p)
                               : clg_model_estimate(&cfg, n, p);
    if (st != CLG_SUCCESS)
        return run_fail_clg(r, "the model's memory plan", st);
    p->grad_buffers = run_grad_buffer_bytes(r->opt, n);
    p->total += p->grad_buffers;
    return 0;
}

uint64_t run_grad_buffer_bytes(const train_options *o, uint64_t n)
{
    if (o->path == GRAD_PATH_B)
        return 0;
    return n * (o->grad_dtype == CLG_FP32 ? 4 : 2);
}

int run_open_context(run_state *r, const train_io *io)
{
    const train_options *o = r->opt;
    if (io && io->ctx) {
        r->ctx = io->ctx;
        r->old_budget = clg_context_budget(r->ctx);
    } else {
        clg_status st = clg_context_create(&r->ctx, o->device);
        if (st != CLG_SUCCESS)
            return run_fail(r, "--device %s: %s", o->device ? o->device : "(default)",
                            clg_last_error(NULL));
        r->own_ctx = 1;
    }
    snprintf(r->result->device, sizeof r->result->device, "%s",
             clg_context_device_info(r->ctx)->name);
    if (o->vram && clg_context_set_budget(r->ctx, o->vram) != CLG_SUCCESS)
        return run_fail(r, "--vram: %s", clg_last_error(r->ctx));
    return 0;
}

int run_plan_order(run_state *r, size_t n_train)
{
    const train_options *o = r->opt;
    if (order_init(&r->order, o->seed, n_train, o->batch) != 0)
        return run_fail(r, "out of host memory for the data order");
    r->batches_per_epoch = order_batches_per_epoch(&r->order);
    r->total_updates = o->steps ? o->steps : (uint64_t)o->epochs * r->batches_per_epoch;
    progress_init(&r->prog, o->quiet, r->total_updates);
    return 0;
}

uint64_t run_warmup(const run_state *r)
{
    uint64_t cap = r->opt->schedule == CLG_SCHED_CONSTANT ? r->total_updates : r->total_updates - 1;
    return r->opt->warmup < cap ? r->opt->warmup : cap;
}

int run_done(const run_state *r)
{
    const train_options *o = r->opt;
    return r->updates >= r->total_updates ||
           (o->stop_after && r->updates - r->updates_at_start >= o->stop_after);
}

int run_create_model(run_state *r, clg_status *st)
{
    const train_options *o = r->opt;
    clg_config cfg;
    if (train_options_clg_config(o, &cfg, r->err, r->errlen) != 0)
        return -1;
    r->result->lr = cfg.lr;
    cfg.schedule.total = r->total_updates;
    cfg.schedule.warmup = run_warmup(r);
    /* A cycle's length varies (an epoch's partial last batch, a --dist
     * rank's share): the schedule gives each one, so accum_steps, which
     * clgrad reads only without a schedule, keeps clg_config_init's. */
    cfg.k_schedule = run_k_of_cycle;
    cfg.k_schedule_user = r;
    cfg.fuse_last_micro_step = o->path == GRAD_PATH_C;
    r->cfg = cfg;
    *st = clg_model_create(r->ctx, &cfg, &r->model);
    if (*st != CLG_SUCCESS)
        return run_fail_clg(r, "creating the model", *st);
    *st = clg_model_add_group(r->model, "no_decay", 1.0f, 0.0f, &r->no_decay);
    return 0;
}

int run_init_params(run_state *r, run_param_init init, const void *arg)
{
    uint64_t n = clg_model_param_count(r->model);
    r->result->params = n;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return run_fail(r, "out of host memory (%" PRIu64 " parameters)", n);
    init(arg, r->opt->seed, host);
    clg_status st = clg_model_upload_params(r->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    free(host);
    if (st != CLG_SUCCESS)
        return run_fail_clg(r, "uploading the initial parameters", st);
    return 0;
}

double run_samples_per_s(const run_state *r)
{
    return r->train_seconds > 0 ? (double)(r->samples - r->samples_at_start) / r->train_seconds : 0;
}

uint64_t run_epochs(const run_state *r)
{
    return (r->total_updates + r->batches_per_epoch - 1) / r->batches_per_epoch;
}

void run_next_epoch(run_state *r)
{
    if (r->next_batch >= r->batches_per_epoch) {
        r->epoch++;
        r->next_batch = 0;
    }
}

train_position run_position(const run_state *r)
{
    train_position p = {r->opt->seed,  r->opt->batch, r->order.n,     r->epoch,
                        r->next_batch, r->updates,    r->micro_steps, r->samples};
    return p;
}

void run_build_config(run_state *r)
{
    size_t n = r->order.n;
    uint32_t crc = runconfig_crc32(0, r->train->images, n * r->train->dim);
    crc = runconfig_crc32(crc, r->train->labels, n);
    runconfig_build(&r->config, r->opt, &r->cfg, r->b, n, crc);
    runconfig_meta(&r->config);
}

void run_set_position(run_state *r, const train_position *p)
{
    r->epoch = p->epoch;
    r->next_batch = p->next_batch;
    r->updates = p->updates;
    r->micro_steps = p->micro_steps;
    r->samples = p->samples;
}

static int write_weights(run_state *r, const float *host, uint64_t n)
{
    const char *path = r->opt->dump_weights;
    char why[1024];
    atomic_file *f = malloc(sizeof *f);
    if (!f)
        return run_fail(r, "--dump-weights: %s: out of host memory", path);
    if (atomic_file_open(f, path, why, sizeof why) != 0) {
        free(f);
        return run_fail(r, "--dump-weights: %s", why);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &host[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        if (atomic_file_write(f, b, 4) != 0)
            break; /* the commit says why */
    }
    int rc = atomic_file_commit(f, why, sizeof why);
    free(f);
    if (rc != 0)
        return run_fail(r, "--dump-weights: %s", why);
    train_note_written("--dump-weights", path);
    return 0;
}

int run_dump_weights(run_state *r, const train_io *io, int write_file)
{
    uint64_t n = clg_model_param_count(r->model);
    if (!r->opt->dump_weights && !(io && io->weights))
        return 0;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return run_fail(r, "out of host memory");
    clg_status st = clg_model_download_params(r->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    if (st != CLG_SUCCESS) {
        free(host);
        return run_fail_clg(r, "downloading the parameters", st);
    }
    int rc = 0;
    if (io && io->weights)
        memcpy(io->weights, host, (n < io->weights_cap ? n : io->weights_cap) * sizeof *host);
    if (r->opt->dump_weights && write_file)
        rc = write_weights(r, host, n);
    free(host);
    return rc;
}

int run_reserve_buffer(run_state *r, uint64_t bytes, const char *what, cl_mem *buf,
                       uint64_t *reserved)
{
    clg_status st = clg_context_reserve(r->ctx, bytes);
    if (st != CLG_SUCCESS)
        return run_fail_clg(r, what, st);
    *reserved = bytes;
    cl_int e;
    *buf = clCreateBuffer(clg_context_cl(r->ctx), CL_MEM_READ_WRITE, (size_t)bytes, NULL, &e);
    if (e != CL_SUCCESS)
        return run_fail_cl(r, what, e);
    return 0;
}

void run_release_buffer(run_state *r, cl_mem *buf, uint64_t *reserved)
{
    if (*buf)
        clReleaseMemObject(*buf);
    if (*reserved)
        clg_context_unreserve(r->ctx, *reserved);
    *buf = NULL;
    *reserved = 0;
}

/* The library rebuilt kernel cache entries it could not use (damaged, or
 * another program's binary) and rewrote them; it prints nothing, so the
 * run says so, once, at its end. */
static void warn_cache_repairs(run_state *r)
{
    char note[512];
    uint64_t n = clg_context_cache_repairs(r->ctx, note, sizeof note);
    if (n == 0 || (r->dist && r->dist->rank != 0)) /* rank 0 alone prints */
        return;
    if (n == 1)
        progress_warn(&r->prog, "warning: %s\n", note);
    else
        progress_warn(&r->prog, "warning: %" PRIu64 " kernel cache entries rebuilt; the last: %s\n",
                      n, note);
}

int run_bound_queue(run_state *r)
{
    const size_t n = sizeof r->ahead / sizeof *r->ahead;
    cl_event *slot = &r->ahead[r->updates % n];
    cl_int e = CL_SUCCESS;
    if (*slot) {
        e = clWaitForEvents(1, slot);
        clReleaseEvent(*slot);
        *slot = NULL;
    }
    if (e == CL_SUCCESS)
        e = clEnqueueMarkerWithWaitList(clg_context_queue(r->ctx), 0, NULL, slot);
    if (e == CL_SUCCESS)
        e = clFlush(clg_context_queue(r->ctx));
    return e == CL_SUCCESS ? 0 : run_fail_cl(r, "bounding the queue", e);
}

void run_release(run_state *r)
{
    warn_cache_repairs(r);
    if (r->metrics) { /* a run that failed: the previous file stays */
        atomic_file_abort(r->metrics);
        free(r->metrics);
        r->metrics = NULL;
    }
    for (size_t i = 0; i < sizeof r->ahead / sizeof *r->ahead; i++)
        if (r->ahead[i])
            clReleaseEvent(r->ahead[i]);
    writer_lock_release(&r->lock);
    clg_grads_destroy(r->grads);
    clg_model_destroy(r->model);
    devdata_release(&r->dtrain);
    devdata_release(&r->dtest);
    order_free(&r->order);
    dataset_free(&r->train_ds);
    dataset_free(&r->test_ds);
    if (r->ctx && !r->own_ctx)
        clg_context_set_budget(r->ctx, r->old_budget);
    if (r->own_ctx)
        clg_context_destroy(r->ctx);
    if (r->result) /* the run's wall time, set-up and release included */
        r->result->total_seconds = progress_now() - r->started;
}
