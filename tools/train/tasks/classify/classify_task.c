/* classify_task.c - the classifier as clgrad-train's default task
 * (task.h): train_run (trainer.h), then the summary line and --json. */
#include "classify_task.h"
#include "summary.h"

#include "errmsg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Fashion-MNIST's training images, for the run's micro-steps */
#define CLASSIFY_TRAIN_SAMPLES 60000

static void print_json(const train_options *o, const train_result *r)
{
    const json_field f[] = {
        JSON_NUM("test_accuracy", r->test_accuracy),
        JSON_NUM("test_loss", r->test_loss),
        JSON_NUM("train_accuracy", r->train_accuracy),
        JSON_NUM("train_loss", r->train_loss),
        JSON_NUM("updates", r->updates),
        JSON_NUM("skipped_updates", r->skipped_updates),
        JSON_RUN_SHAPE(r),
        JSON_NUM("auto_halvings", r->halvings),
        JSON_STR("optimizer", clg_optimizer_name(o->optimizer)),
        JSON_NUM("lr", r->lr),
        JSON_STR("grad_path", train_path_name(o->path)),
        JSON_STR("grad_dtype", clg_dtype_name(o->grad_dtype)),
        JSON_NUM("params", r->params),
        JSON_NUM("samples_per_s", r->samples_per_s),
        JSON_NUM("train_seconds", r->train_seconds),
        JSON_NUM("eval_seconds", r->eval_seconds),
        JSON_NUM("total_seconds", r->total_seconds),
        JSON_NUM("peak_device_bytes", r->peak_device_bytes),
        JSON_NUM("data_bytes", r->data_bytes),
        JSON_NUM("activation_bytes", r->activation_bytes),
        JSON_STR("device", r->device),
        JSON_STR("clblast_tuning", r->clblast_tuning),
        JSON_STR("overridden", r->overridden),
    };
    json_print(f, sizeof f / sizeof *f);
}

int classify_print_summary(const train_options *opt, const train_result *res)
{
    char split[64];
    train_split_text(split, sizeof split, res->update_samples, res->micro_batch);
    printf("test accuracy %.4f (loss %.4f) after %llu updates of %u samples (%s)%s in %u "
           "epoch(s): %.1f s training, %.0f samples/s, peak device bytes %llu\n",
           res->test_accuracy, res->test_loss, (unsigned long long)res->updates,
           res->update_samples, split,
           res->update_samples < res->batch ? ", the whole training set" : "", res->epochs,
           res->train_seconds, res->samples_per_s, (unsigned long long)res->peak_device_bytes);
    train_print_resumed(opt->resume, res->overridden);
    train_print_written();
    if (opt->json)
        print_json(opt, res);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int classify_main(const train_options *o, const void *task_opts)
{
    (void)task_opts;
    char err[4096] = "";
    train_result res;
    if (train_run(o, NULL, &res, err, sizeof err) != 0) {
        train_print_error(err);
        return 1;
    }
    return classify_print_summary(o, &res);
}

static int classify_dist(const train_options *o, const void *task_opts, train_dist_hooks *d,
                         char *err, size_t errlen)
{
    (void)task_opts;
    train_result res;
    if (train_run_dist(o, NULL, d, &res, err, errlen) != 0)
        return -1;
    return d->rank == 0 ? classify_print_summary(o, &res) : 0;
}

/* The MLP's GEMMs at --hidden and --micro-batch, as the run issues them
 * (trainer.c checks a tuning on the same shapes). */
static int classify_gemms(const train_options *o, const void *task_opts, task_gemms *g, char *err,
                          size_t errlen)
{
    (void)task_opts;
    mlp_shape sh = train_mlp_shape(o, DATASET_ROWS * DATASET_COLS);
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
