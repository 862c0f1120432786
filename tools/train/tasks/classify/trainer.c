/* trainer.c - train_run (see trainer.h): sets a run up (trainer_setup.c),
 * runs it (core/loop.c with trainer_loop.c's hooks: effective batches of
 * B samples as k micro-batches of b through CLBlast and nn/mlp.cl, each
 * handed to clg_step; under --dist each rank's share of the batch), and
 * writes the requested outputs. */
#include "trainer_internal.h"
#include "dist.h"
#include "errmsg.h"
#include "run_log.h"
#include "task.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


mlp_shape train_mlp_shape(const train_options *opt, unsigned inputs)
{
    mlp_shape s = {.n_dims = 0};
    s.dims[s.n_dims++] = inputs;
    for (int i = 0; i < opt->n_hidden; i++)
        s.dims[s.n_dims++] = opt->hidden[i];
    s.dims[s.n_dims++] = DATASET_CLASSES;
    return s;
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
    t->run.opt = opt;
    t->run.task = CLASSIFY_TASK_NAME;
    t->res = res;
    t->run.err = err;
    t->run.errlen = errlen;
    t->run.dist = dist;
    if (dist)
        dist->zero1 = opt->dist == TRAIN_DIST_ZERO1;
    t->dist_pending = dist != NULL; /* train_run's failures reach the others at `out' */
    unsigned b = opt->micro_batch ? opt->micro_batch : (opt->batch < 32 ? opt->batch : 32);
    run_set_micro_batch(&t->run, b);
    progress_init(&t->run.prog, opt->quiet, 1);
    int rc = -1;

    /* Before any work: outputs that cannot be written, or that would
     * destroy an input or each other. */
    if (train_check_files(NULL, opt, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, !dist || dist->rank == 0) != 0)
        goto out;
    /* The memory plan before the data is loaded or anything allocated: a
     * plan the device cannot hold is refused at once. */
    t->shape = train_mlp_shape(opt, io && io->train ? (unsigned)io->train->dim
                                                    : DATASET_ROWS * DATASET_COLS);
    if (run_open_context(&t->run, io, res->device, sizeof res->device) != 0 ||
        trainer_check_plan(t, io) != 0)
        goto out;
    if (run_load_data(&t->run, io) != 0)
        goto out;
    if (t->run.train->dim != t->run.test->dim) {
        trainer_fail(t, "training images have %zu pixels but test images %zu",
                     t->run.train->dim, t->run.test->dim);
        goto out;
    }
    size_t n_train, n_test;
    run_limits(&t->run, &n_train, &n_test);
    if (run_plan_order(&t->run, n_train) != 0)
        goto out;
    if (mlp_create(t->run.ctx, t->shape.dims, t->shape.n_dims, &t->net, err, errlen) != 0)
        goto out;
    if (trainer_build_model(t) != 0 || trainer_setup_gradients(t) != 0 ||
        trainer_setup_weights(t) != 0 || trainer_setup_buffers(t) != 0)
        goto out;
    if (run_upload_data(&t->run, n_train, n_test) != 0)
        goto out;
    if (trainer_fit_activations(t) != 0)
        goto out;
    if (run_dist_check(&t->run) != 0)
        goto out;
    run_build_config(&t->run);
    res->micro_batch = t->run.b;
    res->accum_steps = t->run.k;
    res->batch = opt->batch;
    res->update_samples = n_train < opt->batch ? (unsigned)n_train : opt->batch;
    trainer_print_plan(t);
    char split[64];
    train_split_text(split, sizeof split, res->update_samples, t->run.b);
    if (!opt->quiet)
        progress_log(&t->run.prog,
                     "training %s: updates of %u samples (%s)%s, %" PRIu64
                     " updates, %s lr %g (%s, warmup %" PRIu64 "), grad path %c, grads %s\n",
                     res->device, res->update_samples, split,
                     res->update_samples < opt->batch ? " (the whole training set)" : "",
                     t->run.total_updates,
                     clg_optimizer_name(opt->optimizer), res->lr,
                     train_schedule_name(opt->schedule),
                     run_warmup(&t->run),
                     "ABC"[opt->path], clg_dtype_name(opt->grad_dtype));

    /* the tuning is checked on this run's own GEMM shapes before it is used */
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes = mlp_gemm_shapes(t->shape.dims, t->shape.n_dims, t->run.b, shapes,
                                      MLP_GEMMS_MAX);
    if (run_apply_tuning(&t->run, NULL, shapes, n_shapes, res->clblast_tuning,
                         sizeof res->clblast_tuning) != 0)
        goto out;

    if (opt->resume && trainer_resume(t) != 0)
        goto out;
    if (run_metrics_open(&t->run, run_rank0(&t->run)) != 0)
        goto out;
    if (run_log_open(&t->run, &(run_log_info){res->device, res->clblast_tuning, NULL}) != 0)
        goto out;
    if (dist) {
        /* Every rank set up (or the failed one's message on every rank),
         * then the collective part: from here to the end of the loop
         * every rank fails together. */
        t->dist_pending = 0;
        if (run_agree(&t->run, 0, NULL) != 0 || dist->start(dist, t->run.model, err, errlen) != 0)
            goto out;
    }
    if (trainer_loop(t) != 0)
        goto out;
    t->dist_pending = dist != NULL; /* rank 0's outputs: agreed at `out' */
    if (run_metrics_close(&t->run) != 0)
        goto out;
    if (run_log_close(&t->run) != 0)
        goto out;
    clg_stats stats = clg_stats_init();
    clg_status st = clg_model_stats(t->run.model, 1, &stats);
    if (st != CLG_SUCCESS) {
        trainer_fail_clg(t, "clg_model_stats", st);
        goto out;
    }
    if (run_dump_weights(&t->run, io, run_rank0(&t->run)) != 0)
        goto out;
    res->updates = t->run.updates;
    res->skipped_updates = stats.skipped_updates;
    res->micro_steps = t->run.micro_steps;
    res->samples = t->run.samples;
    res->train_seconds = t->run.train_seconds;
    res->eval_seconds = t->run.eval_seconds;
    res->samples_per_s = run_samples_per_s(&t->run);
    res->peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    res->data_bytes = t->run.dtrain.bytes + t->run.dtest.bytes;
    res->activation_bytes = t->net->act_bytes;
    rc = 0;
out:
    if (dist) {
        if (t->dist_pending && run_agree(&t->run, rc, NULL) != 0)
            rc = -1;
        dist->stop(dist); /* collective: every rank gets here, together */
    }
    run_log_release(&t->run);
    trainer_teardown(t);
    res->total_seconds = progress_now() - t_start;
    return rc;
}
