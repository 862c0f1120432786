/* classify_run.c - classify_run (see classify_run.h): sets a run up (classify_setup.c),
 * runs it (run_train: core/loop.c with classify_loop.c's hooks: batches of
 * B samples as k micro-batches of b through CLBlast and nn/mlp.cl, each
 * handed to clg_step; under --dist each rank's share of the batch), and
 * writes the requested outputs. */
#include "classify_internal.h"
#include "dist.h"
#include "loop.h"
#include "errmsg.h"
#include "task.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mlp_shape classify_mlp_shape(const train_options *opt, unsigned inputs)
{
    mlp_shape s = {.n_dims = 0};
    s.dims[s.n_dims++] = inputs;
    for (int i = 0; i < opt->n_hidden; i++)
        s.dims[s.n_dims++] = opt->hidden[i];
    s.dims[s.n_dims++] = DATASET_CLASSES;
    return s;
}

int classify_run(const train_options *opt, const train_io *io, classify_result *res, char *err,
                 size_t errlen)
{
    return classify_run_dist(opt, io, NULL, res, err, errlen);
}

int classify_run_dist(const train_options *opt, const train_io *io, train_dist_hooks *dist,
                      classify_result *res, char *err, size_t errlen)
{
    classify_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    run_start(&t->run, CLASSIFY_TASK_NAME, opt, dist, &res->run, err, errlen);
    t->res = res;
    t->run.master = &t->weights;
    if (dist)
        dist->zero1 = opt->dist == TRAIN_DIST_ZERO1;
    run_set_micro_batch(&t->run, opt->micro_batch); /* train_options_check's default */
    int rc = -1;

    /* Before any work: outputs that cannot be written, or that would
     * destroy an input or each other. */
    if (train_check_files(NULL, opt, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, !dist || dist->rank == 0) != 0)
        goto out;
    /* The memory plan before the data is loaded or anything allocated: a
     * plan the device cannot hold is refused at once. */
    t->shape = classify_mlp_shape(opt, io && io->train ? (unsigned)io->train->dim
                                                       : DATASET_ROWS * DATASET_COLS);
    if (run_open_context(&t->run, io) != 0 ||
        classify_check_plan(t, io) != 0)
        goto out;
    if (run_load_data(&t->run, io) != 0)
        goto out;
    if (t->run.train->dim != t->run.test->dim) {
        task_fail(t, "training images have %zu pixels but test images %zu", t->run.train->dim,
                  t->run.test->dim);
        goto out;
    }
    size_t n_train, n_test;
    run_limits(&t->run, &n_train, &n_test);
    if (run_plan_order(&t->run, n_train) != 0)
        goto out;
    if (mlp_create(t->run.ctx, t->shape.dims, t->shape.n_dims, &t->net, err, errlen) != 0)
        goto out;
    if (classify_build_model(t) != 0 || classify_setup_gradients(t) != 0 ||
        classify_setup_weights(t) != 0 || classify_setup_buffers(t) != 0)
        goto out;
    if (run_upload_data(&t->run, n_train, n_test) != 0)
        goto out;
    if (classify_fit_activations(t) != 0)
        goto out;
    if (run_dist_check(&t->run) != 0)
        goto out;
    run_build_config(&t->run);
    run_result_setup(&t->run);
    classify_print_plan(t);
    unsigned update_samples = res->run.update_samples;
    char split[64];
    train_split_text(split, sizeof split, update_samples, t->run.b);
    if (!opt->quiet)
        progress_log(&t->run.prog,
                     "training %s: updates of %u samples (%s)%s, %" PRIu64
                     " updates, %s lr %g (%s, warmup %" PRIu64 "), grad path %c, grads %s\n",
                     res->run.device, update_samples, split,
                     update_samples < opt->batch ? " (the whole training set)" : "",
                     t->run.total_updates, clg_optimizer_name(opt->optimizer), res->run.lr,
                     train_schedule_name(opt->schedule), run_warmup(&t->run), "ABC"[opt->path],
                     clg_dtype_name(opt->grad_dtype));

    /* the tuning is checked on this run's own GEMM shapes before it is used */
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes = mlp_gemm_shapes(t->shape.dims, t->shape.n_dims, t->run.b, shapes,
                                      MLP_GEMMS_MAX);
    if (run_apply_tuning(&t->run, NULL, shapes, n_shapes, res->run.clblast_tuning,
                         sizeof res->run.clblast_tuning) != 0)
        goto out;

    if (opt->resume && classify_resume(t) != 0)
        goto out;
    if (classify_loop(t) != 0)
        goto out;
    clg_stats stats = clg_stats_init();
    clg_status st = clg_model_stats(t->run.model, 1, &stats);
    if (st != CLG_SUCCESS) {
        task_fail_clg(t, "clg_model_stats", st);
        goto out;
    }
    if (run_dump_weights(&t->run, io, run_rank0(&t->run)) != 0)
        goto out;
    res->skipped_updates = stats.skipped_updates;
    res->run.eval_seconds = t->run.eval_seconds;
    res->run.peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    res->run.activation_bytes = t->net->act_bytes;
    rc = 0;
out:
    return run_end(&t->run, rc, classify_teardown, t);
}
