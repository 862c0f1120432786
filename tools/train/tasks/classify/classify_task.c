/* classify_task.c - the classifier as clgrad-train's default task
 * (task.h): classify_run (classify_run.h), then the summary line and --json. */
#include "classify_task.h"
#include "summary.h"

#include "errmsg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Fashion-MNIST's training images, for the run's micro-steps */
#define CLASSIFY_TRAIN_SAMPLES 60000

static int print_json(const train_options *o, const classify_result *r)
{
    const json_field f[] = {
        JSON_NUM("test_accuracy", r->test_accuracy),
        JSON_NUM("test_loss", r->test_loss),
        JSON_NUM("train_accuracy", r->train_accuracy),
        JSON_NUM("train_loss", r->train_loss),
        JSON_NUM("updates", r->run.updates),
        JSON_NUM("skipped_updates", r->skipped_updates),
        JSON_RUN_SHAPE(&r->run),
        JSON_NUM("auto_halvings", r->halvings),
        JSON_RUN_OPTIMIZER(o, &r->run),
        JSON_STR("grad_path", train_path_name(o->path)),
        JSON_STR("grad_dtype", clg_dtype_name(o->grad_dtype)),
        JSON_NUM("params", r->run.params),
        JSON_NUM("samples_per_s", r->run.samples_per_s),
        JSON_RUN_SECONDS(&r->run),
        JSON_NUM("peak_device_bytes", r->run.peak_device_bytes),
        JSON_NUM("data_bytes", r->run.data_bytes),
        JSON_NUM("activation_bytes", r->run.activation_bytes),
        JSON_RUN_DEVICE(&r->run, 1),
    };
    return train_print_json(o->json, f, sizeof f / sizeof *f);
}

int classify_print_summary(const train_options *opt, const classify_result *res)
{
    const run_result *r = &res->run;
    char split[64];
    train_split_text(split, sizeof split, r->update_samples, r->micro_batch);
    printf("test accuracy %.4f (loss %.4f) after %llu updates of %u samples (%s)%s in %u "
           "epoch(s): %.1f s training, %.0f samples/s, peak device bytes %llu\n",
           res->test_accuracy, res->test_loss, (unsigned long long)r->updates, r->update_samples,
           split, r->update_samples < r->batch ? ", the whole training set" : "", r->epochs,
           r->train_seconds, r->samples_per_s, (unsigned long long)r->peak_device_bytes);
    train_print_outputs(opt->resume, r);
    return print_json(opt, res);
}

static int classify_main(const train_options *o, const void *task_opts)
{
    (void)task_opts;
    char err[4096] = "";
    classify_result res;
    if (classify_run(o, NULL, &res, err, sizeof err) != 0) {
        train_print_error(err);
        return 1;
    }
    return classify_print_summary(o, &res);
}

static int classify_dist(const train_options *o, const void *task_opts, train_dist_hooks *d,
                         char *err, size_t errlen)
{
    (void)task_opts;
    classify_result res;
    if (classify_run_dist(o, NULL, d, &res, err, errlen) != 0)
        return -1;
    return d->rank == 0 ? classify_print_summary(o, &res) : 0;
}

/* The MLP's GEMMs at --hidden and --micro-batch, as the run issues them
 * (classify_run.c checks a tuning on the same shapes). */
static int classify_gemms(const train_options *o, const void *task_opts, task_gemms *g, char *err,
                          size_t errlen)
{
    (void)task_opts;
    mlp_shape sh = classify_mlp_shape(o, DATASET_ROWS * DATASET_COLS);
    g->n = mlp_gemm_shapes(sh.dims, sh.n_dims, o->micro_batch, g->shape, MLP_GEMMS_MAX);
    if (g->n > MLP_GEMMS_MAX)
        return errmsg_set(err, errlen, "--hidden: %zu GEMM shapes, more than the %d a tuning holds",
                          g->n, MLP_GEMMS_MAX);
    size_t used = (size_t)snprintf(g->model, sizeof g->model, "mlp %u", sh.dims[0]);
    for (int i = 1; i < sh.n_dims && used < sizeof g->model; i++)
        used += (size_t)snprintf(g->model + used, sizeof g->model - used, ",%u", sh.dims[i]);
    if (used < sizeof g->model)
        snprintf(g->model + used, sizeof g->model - used, " micro-batch %u", o->micro_batch);
    g->tuning_task = NULL; /* the device's default tuning file */
    /* every epoch's updates, each of ceil(B / b) micro-steps */
    double updates = o->steps ? (double)o->steps
                              : o->epochs * ceil((double)CLASSIFY_TRAIN_SAMPLES / o->batch);
    g->micro_steps = updates * ceil((double)o->batch / o->micro_batch);
    return 0;
}

const train_task classify_task = {
    .name = CLASSIFY_TASK_NAME,
    .main = classify_main,
    .dist_run = classify_dist,
    .gemms = classify_gemms,
};
