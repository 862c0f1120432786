/* trainer.c - train_run (see trainer.h): sets a run up (trainer_setup.c),
 * runs it (trainer_loop.c: effective batches of B samples as k
 * micro-batches of b through CLBlast and cl/mlp.cl, each handed to
 * clg_step), and writes the requested outputs. */
#include "trainer_internal.h"
#include "atomic_file.h"
#include "metrics.h"
#include "outpaths.h"
#include "tuning_apply.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int trainer_fail(trainer *t, const char *fmt, ...)
{
    if (t->err && t->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->err, t->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int trainer_fail_clg(trainer *t, const char *what, clg_status st)
{
    return trainer_fail(t, "%s: %s (%s)", what, clg_last_error(t->ctx), clg_status_string(st));
}

int trainer_fail_cl(trainer *t, const char *what, cl_int e)
{
    return trainer_fail(t, "%s: %s (%d)", what, clg_status_string((clg_status)e), (int)e);
}


/* ------------------------------------------------------------ outputs */

static int dump_weights(trainer *t, const float *host, uint64_t n)
{
    const char *path = t->opt->dump_weights;
    char why[1024];
    atomic_file *f = malloc(sizeof *f);
    if (!f)
        return trainer_fail(t, "--dump-weights: %s: out of host memory", path);
    if (atomic_file_open(f, path, why, sizeof why) != 0) {
        free(f);
        return trainer_fail(t, "--dump-weights: %s", why);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &host[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8),
                              (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
        if (atomic_file_write(f, b, 4) != 0)
            break; /* the commit says why */
    }
    int rc = atomic_file_commit(f, why, sizeof why);
    free(f);
    if (rc != 0)
        return trainer_fail(t, "--dump-weights: %s", why);
    return 0;
}

static int finish_outputs(trainer *t, const train_io *io)
{
    uint64_t n = clg_model_param_count(t->model);
    if (!t->opt->dump_weights && !(io && io->weights))
        return 0;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return trainer_fail(t, "out of host memory");
    clg_status st = clg_model_download_params(t->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    if (st != CLG_SUCCESS) {
        free(host);
        return trainer_fail_clg(t, "downloading the parameters", st);
    }
    int rc = 0;
    if (io && io->weights)
        memcpy(io->weights, host, (n < io->weights_cap ? n : io->weights_cap) * sizeof *host);
    if (t->opt->dump_weights && (!t->dist || t->dist->rank == 0))
        rc = dump_weights(t, host, n);
    free(host);
    return rc;
}


int train_run(const train_options *opt, const train_io *io, train_result *res, char *err,
              size_t errlen)
{
    return train_run_dist(opt, io, NULL, res, err, errlen);
}

int train_run_dist(const train_options *opt, const train_io *io, train_dist_hooks *dist,
                   train_result *res, char *err, size_t errlen)
{
    double t_start = progress_now();
    trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    t->opt = opt;
    t->res = res;
    t->err = err;
    t->errlen = errlen;
    t->dist = dist;
    if (dist)
        dist->zero1 = opt->dist == TRAIN_DIST_ZERO1;
    t->dist_pending = t->dist != NULL; /* train_run's failures reach the others at `out' */
    t->b = opt->micro_batch ? opt->micro_batch : (opt->batch < 32 ? opt->batch : 32);
    t->k = (opt->batch + t->b - 1) / t->b;
    progress_init(&t->prog, opt->quiet, 1);
    int rc = -1;

    /* Before any work: outputs that cannot be written, or that would
     * destroy an input or each other. */
    if (outpaths_check(opt, !(io && io->train && io->test), err, errlen) != 0)
        goto out;
    if (trainer_load_data(t, io) != 0)
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
            trainer_fail(t, "--device %s: %s", opt->device ? opt->device : "(default)",
                 clg_last_error(NULL));
            goto out;
        }
        t->own_ctx = 1;
    }
    snprintf(res->device, sizeof res->device, "%s", clg_context_device_info(t->ctx)->name);
    if (opt->vram) {
        clg_status st = clg_context_set_budget(t->ctx, opt->vram);
        if (st != CLG_SUCCESS) {
            trainer_fail(t, "--vram: %s", clg_last_error(t->ctx));
            goto out;
        }
    }

    if (order_init(&t->order, opt->seed, n_train, opt->batch) != 0) {
        trainer_fail(t, "out of host memory for the data order");
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
    if (trainer_build_model(t) != 0 || trainer_setup_gradients(t) != 0 ||
        trainer_setup_weights(t) != 0 || trainer_setup_buffers(t) != 0)
        goto out;
    clg_status st = devdata_upload(t->ctx, t->train, n_train, &t->dtrain);
    if (st == CLG_SUCCESS)
        st = devdata_upload(t->ctx, t->test, n_test, &t->dtest);
    if (st != CLG_SUCCESS) {
        trainer_fail(t, "uploading the data set (%" PRIu64 " B): %s%s",
             devdata_bytes(n_train, t->train->dim) + devdata_bytes(n_test, t->test->dim),
             clg_status_string(st),
             st == CLG_ERR_OVER_BUDGET ? "; raise --vram" : "");
        goto out;
    }
    if (trainer_fit_activations(t) != 0)
        goto out;
    if (t->dist && trainer_dist_check(t) != 0)
        goto out;
    trainer_build_config(t);
    res->micro_batch = t->b;
    res->accum_steps = t->k;
    res->batch = opt->batch;
    res->update_samples = n_train < opt->batch ? (unsigned)n_train : opt->batch;
    trainer_print_plan(t);
    char split[64];
    train_split_text(split, sizeof split, res->update_samples, t->b);
    if (!opt->quiet)
        progress_log(&t->prog,
                     "training %s: updates of %u samples (%s)%s, %" PRIu64
                     " updates, %s lr %g (%s, warmup %" PRIu64 "), grad path %c, grads %s\n",
                     res->device, res->update_samples, split,
                     res->update_samples < opt->batch ? " (the whole training set)" : "",
                     t->total_updates,
                     train_optimizer_name(opt->optimizer), res->lr,
                     train_schedule_name(opt->schedule),
                     trainer_warmup(t),
                     "ABC"[opt->path], clg_dtype_name(opt->grad_dtype));

    /* Before the first GEMM: CLBlast builds its GEMM program with the
     * parameters it holds at its first call. */
    tuning_status *ts = malloc(sizeof *ts);
    if (!ts) {
        trainer_fail(t, "out of host memory");
        goto out;
    }
    tuning_setup(t->ctx, opt->tuning, ts);
    if (ts->applied)
        snprintf(res->clblast_tuning, sizeof res->clblast_tuning, "%s", ts->path);
    if (ts->warning || !opt->quiet) /* a file that cannot be used is worth a line even then */
        progress_log(&t->prog, "%s\n", ts->message);
    free(ts);

    if (opt->resume && trainer_resume(t) != 0)
        goto out;
    if (opt->metrics && (!t->dist || t->dist->rank == 0)) {
        char why[1024];
        t->metrics = malloc(sizeof *t->metrics);
        if (!t->metrics || metrics_open(t->metrics, opt->metrics, why, sizeof why) != 0) {
            if (t->metrics)
                trainer_fail(t, "--metrics: %s", why);
            else
                trainer_fail(t, "--metrics: out of host memory");
            free(t->metrics);
            t->metrics = NULL;
            goto out;
        }
    }
    if (t->dist) {
        /* Every rank set up (or the failed one's message on every rank),
         * then the collective part: from here to the end every rank
         * fails together. */
        t->dist_pending = 0;
        if (trainer_dist_agree(t, 0) != 0 ||
            t->dist->start(t->dist, t->model, err, errlen) != 0 || trainer_dist_loop(t) != 0 ||
            (opt->checkpoint && trainer_dist_save(t, 0) != 0))
            goto out;
        t->dist_pending = 1; /* rank 0's outputs: agreed at `out' */
    } else {
        if (trainer_loop(t) != 0)
            goto out;
        if (opt->checkpoint && trainer_save(t) != 0)
            goto out;
    }
    if (t->metrics) {
        char why[1024];
        int bad = metrics_close(t->metrics, why, sizeof why);
        free(t->metrics);
        t->metrics = NULL;
        if (bad) {
            trainer_fail(t, "--metrics: %s", why);
            goto out;
        }
    }
    clg_stats stats = clg_stats_init();
    if ((st = clg_model_stats(t->model, 1, &stats)) != CLG_SUCCESS) {
        trainer_fail_clg(t, "clg_model_stats", st);
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
    if (t->dist) {
        if (t->dist_pending && trainer_dist_agree(t, rc) != 0)
            rc = -1;
        t->dist->stop(t->dist); /* collective: every rank gets here, together */
    }
    trainer_teardown(t);
    res->total_seconds = progress_now() - t_start;
    return rc;
}
