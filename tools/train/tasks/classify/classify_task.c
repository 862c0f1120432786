/* classify_task.c - the classifier as clgrad-train's default task
 * (task.h): train_run (trainer.h), then the summary line and --json. */
#include "classify_task.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

static void print_json(const train_options *o, const train_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "test_accuracy", r->test_accuracy);
    cJSON_AddNumberToObject(j, "test_loss", r->test_loss);
    cJSON_AddNumberToObject(j, "train_accuracy", r->train_accuracy);
    cJSON_AddNumberToObject(j, "train_loss", r->train_loss);
    cJSON_AddNumberToObject(j, "updates", (double)r->updates);
    cJSON_AddNumberToObject(j, "skipped_updates", (double)r->skipped_updates);
    cJSON_AddNumberToObject(j, "micro_steps", (double)r->micro_steps);
    cJSON_AddNumberToObject(j, "samples", (double)r->samples);
    cJSON_AddNumberToObject(j, "epochs", r->epochs);
    cJSON_AddNumberToObject(j, "batch", r->batch);
    cJSON_AddNumberToObject(j, "update_samples", r->update_samples);
    cJSON_AddNumberToObject(j, "micro_batch", r->micro_batch);
    cJSON_AddNumberToObject(j, "accum_steps", r->accum_steps);
    cJSON_AddNumberToObject(j, "auto_halvings", r->halvings);
    cJSON_AddStringToObject(j, "optimizer", train_optimizer_name(o->optimizer));
    cJSON_AddNumberToObject(j, "lr", r->lr);
    cJSON_AddStringToObject(j, "grad_path", o->path == GRAD_PATH_A ? "A"
                                            : o->path == GRAD_PATH_B ? "B" : "C");
    cJSON_AddStringToObject(j, "grad_dtype", clg_dtype_name(o->grad_dtype));
    cJSON_AddNumberToObject(j, "params", (double)r->params);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddNumberToObject(j, "train_seconds", r->train_seconds);
    cJSON_AddNumberToObject(j, "total_seconds", r->total_seconds);
    cJSON_AddNumberToObject(j, "peak_device_bytes", (double)r->peak_device_bytes);
    cJSON_AddNumberToObject(j, "data_bytes", (double)r->data_bytes);
    cJSON_AddNumberToObject(j, "activation_bytes", (double)r->activation_bytes);
    cJSON_AddStringToObject(j, "device", r->device);
    cJSON_AddStringToObject(j, "clblast_tuning", r->clblast_tuning);
    cJSON_AddStringToObject(j, "overridden", r->overridden);
    char *s = cJSON_PrintUnformatted(j);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
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
    if (res->overridden[0])
        printf("resumed from %s with settings overridden: %s\n", opt->resume, res->overridden);
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
        fprintf(stderr, "clgrad-train: %s\n", err);
        return 1;
    }
    return classify_print_summary(o, &res);
}

const train_task classify_task = {
    .name = "classify",
    .main = classify_main,
    .dist = 1,
};
