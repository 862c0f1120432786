/* contrastive_task.c - the contrastive task as clgrad-train runs it
 * (task.h): its flags (contrastive_options.c) and their checks, and the
 * command line's run (contrastive_run.c) with its summary and --json. */
#include "contrastive_options.h"
#include "contrastive_run.h"
#include "summary.h"
#include "task.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static void defaults(void *c)
{
    con_options_default(c);
}

static int check(void *c, const train_options *o, char *err, size_t errlen)
{
    return con_options_check(c, o, err, errlen);
}

static int print_json(const train_options *o, const con_options *c, const con_result *r)
{
    const json_field f[] = {
        JSON_STR("task", "contrastive"),
        JSON_STR("contrastive", con_method_name(c->method)),
        JSON_NUM("loss", r->loss),
        JSON_NUM("knn_accuracy", r->knn_accuracy),
        JSON_NUM_IF(!isnan(r->knn_accuracy_init), "knn_accuracy_init", r->knn_accuracy_init),
        JSON_NUM("knn_k", c->knn),
        JSON_NUM("samples_per_s", r->run.samples_per_s),
        JSON_NUM("peak_device_bytes", r->run.peak_device_bytes),
        JSON_NUM("activation_bytes", r->run.activation_bytes),
        JSON_NUM("cache_bytes", r->cache_bytes),
        JSON_NUM("model_bytes", r->run.model_bytes),
        JSON_NUM("data_bytes", r->run.data_bytes),
        JSON_NUM("eval_bytes", r->eval_bytes),
        JSON_NUM("updates", r->run.updates),
        JSON_RUN_SHAPE(&r->run),
        JSON_NUM("temperature", c->temperature),
        JSON_NUM("embed_dim", c->embed_dim),
        JSON_NUM("bank_size", c->method == CON_CONTACCUM ? c->bank_size : 0),
        JSON_RUN_OPTIMIZER(o, &r->run),
        JSON_STR("grad_path", train_path_name(o->path)),
        JSON_NUM("params", r->run.params),
        JSON_RUN_SECONDS(&r->run),
        JSON_RUN_DEVICE(&r->run, 0), /* its GEMMs take no tuning */
    };
    return train_print_json(o->json, f, sizeof f / sizeof *f);
}

/* The command line's run: the summary on stdout, --json as its last line;
 * the exit status. */
static int run_main(const train_options *o, const void *opts)
{
    const con_options *c = opts;
    char err[4096] = "";
    con_result res;
    if (contrastive_run(o, c, NULL, &res, err, sizeof err) != 0) {
        train_print_error(err);
        return 1;
    }
    const run_result *r = &res.run;
    char split[64];
    train_split_text(split, sizeof split, r->update_samples, r->micro_batch);
    printf("kNN test accuracy %.4f (k = %u) after %" PRIu64 " updates of %u samples (%s, %s); "
           "InfoNCE %.4f; %.1f s training, %.0f samples/s, peak device bytes %" PRIu64 "\n",
           res.knn_accuracy, c->knn, r->updates, r->update_samples, split,
           con_method_name(c->method), res.loss, r->train_seconds, r->samples_per_s,
           r->peak_device_bytes);
    if (!isnan(res.knn_accuracy_init))
        printf("kNN test accuracy before training %.4f\n", res.knn_accuracy_init);
    train_print_outputs(o->resume, r);
    return print_json(o, c, &res);
}

const train_task contrastive_task = {
    .name = CONTRASTIVE_TASK_NAME,
    .flags = &con_flag_table,
    .options_size = sizeof(con_options),
    .defaults = defaults,
    .wrong_task = "the contrastive flags (--contrastive, --temperature, ...) need --task "
                  "contrastive",
    .check = check,
    .main = run_main,
};
