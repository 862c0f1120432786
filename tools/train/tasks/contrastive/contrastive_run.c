/* contrastive_run.c - contrastive_run and contrastive_main (see
 * contrastive_run.h): set up (contrastive_setup.c), resume, optionally
 * evaluate first, train (contrastive_loop.c), checkpoint, evaluate, write
 * --dump-weights, and print the summary and --json. */
#include "contrastive_internal.h"
#include "atomic_file.h"
#include "outpaths.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int dump_weights(con_trainer *t, const train_io *io)
{
    const char *path = t->o->dump_weights;
    if (!path && !(io && io->weights))
        return 0;
    uint64_t n = clg_model_param_count(t->model);
    float *host = malloc(n * sizeof *host);
    if (!host)
        return con_fail(t, "out of host memory");
    clg_status st = clg_model_download_params(t->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    int rc = st == CLG_SUCCESS ? 0 : con_fail_clg(t, "downloading the parameters", st);
    if (rc == 0 && io && io->weights)
        memcpy(io->weights, host, (n < io->weights_cap ? n : io->weights_cap) * sizeof *host);
    if (rc == 0 && path) { /* little-endian fp32 in model order, as the classifier's */
        char why[1024];
        atomic_file f;
        rc = atomic_file_open(&f, path, why, sizeof why);
        for (uint64_t i = 0; rc == 0 && i < n; i++) {
            uint32_t u;
            memcpy(&u, &host[i], 4);
            unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8),
                                  (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
            if (atomic_file_write(&f, b, 4) != 0)
                break;
        }
        if (rc == 0)
            rc = atomic_file_commit(&f, why, sizeof why);
        if (rc != 0)
            con_fail(t, "--dump-weights: %s", why);
    }
    free(host);
    return rc;
}

int contrastive_run(const train_options *o, const con_options *c, const train_io *io,
                    con_result *res, char *err, size_t errlen)
{
    double t0 = progress_now();
    con_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    res->knn_accuracy_init = NAN;
    res->loss = NAN;
    t->o = o;
    t->c = c;
    t->res = res;
    t->err = err;
    t->errlen = errlen;
    progress_init(&t->prog, o->quiet, 1);
    int rc = -1;
    if (outpaths_check(o, !(io && io->train && io->test), err, errlen) != 0)
        goto out;
    if (con_setup(t, io) != 0)
        goto out;
    con_print_plan(t);
    if (!o->quiet) {
        char split[64];
        train_split_text(split, sizeof split, res->update_samples, t->b);
        progress_log(&t->prog, "contrastive %s on %s: updates of %u samples (%s), %" PRIu64
                     " updates, %s lr %g, temperature %g, %s, grad path %c\n",
                     con_method_name(c->method), res->device, res->update_samples, split,
                     t->total_updates, train_optimizer_name(o->optimizer), res->lr,
                     (double)c->temperature, c->one_way ? "queries to keys" : "both ways",
                     "ABC"[o->path]);
    }
    if (o->resume && con_resume(t) != 0)
        goto out;
    if (c->knn_init) {
        double t1 = progress_now();
        if (con_knn_eval(t, &res->knn_accuracy_init) != 0)
            goto out;
        res->eval_seconds += progress_now() - t1;
    }
    if (con_loop(t) != 0)
        goto out;
    if (o->checkpoint && con_save(t) != 0)
        goto out;
    res->peak_device_bytes = clg_context_peak_device_bytes(t->ctx);
    double t2 = progress_now();
    if (con_knn_eval(t, &res->knn_accuracy) != 0)
        goto out;
    res->eval_seconds += progress_now() - t2;
    if (dump_weights(t, io) != 0)
        goto out;
    res->updates = t->updates;
    res->micro_steps = t->micro_steps;
    res->samples = t->samples;
    res->train_seconds = t->train_seconds;
    res->samples_per_s = t->train_seconds > 0
                             ? (double)(t->samples - t->samples_at_start) / t->train_seconds
                             : 0;
    rc = 0;
out:
    con_teardown(t);
    res->total_seconds = progress_now() - t0;
    return rc;
}

static void print_json(const train_options *o, const con_options *c, const con_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", "contrastive");
    cJSON_AddStringToObject(j, "contrastive", con_method_name(c->method));
    cJSON_AddNumberToObject(j, "loss", r->loss);
    cJSON_AddNumberToObject(j, "knn_accuracy", r->knn_accuracy);
    if (!isnan(r->knn_accuracy_init))
        cJSON_AddNumberToObject(j, "knn_accuracy_init", r->knn_accuracy_init);
    cJSON_AddNumberToObject(j, "knn_k", c->knn);
    cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
    cJSON_AddNumberToObject(j, "peak_device_bytes", (double)r->peak_device_bytes);
    cJSON_AddNumberToObject(j, "activation_bytes", (double)r->activation_bytes);
    cJSON_AddNumberToObject(j, "cache_bytes", (double)r->cache_bytes);
    cJSON_AddNumberToObject(j, "model_bytes", (double)r->model_bytes);
    cJSON_AddNumberToObject(j, "data_bytes", (double)r->data_bytes);
    cJSON_AddNumberToObject(j, "eval_bytes", (double)r->eval_bytes);
    cJSON_AddNumberToObject(j, "updates", (double)r->updates);
    cJSON_AddNumberToObject(j, "micro_steps", (double)r->micro_steps);
    cJSON_AddNumberToObject(j, "samples", (double)r->samples);
    cJSON_AddNumberToObject(j, "epochs", r->epochs);
    cJSON_AddNumberToObject(j, "batch", r->batch);
    cJSON_AddNumberToObject(j, "update_samples", r->update_samples);
    cJSON_AddNumberToObject(j, "micro_batch", r->micro_batch);
    cJSON_AddNumberToObject(j, "accum_steps", r->accum_steps);
    cJSON_AddNumberToObject(j, "temperature", c->temperature);
    cJSON_AddNumberToObject(j, "embed_dim", c->embed_dim);
    cJSON_AddNumberToObject(j, "bank_size", (double)(c->method == CON_CONTACCUM ? c->bank_size : 0));
    cJSON_AddStringToObject(j, "optimizer", train_optimizer_name(o->optimizer));
    cJSON_AddNumberToObject(j, "lr", r->lr);
    cJSON_AddStringToObject(j, "grad_path", o->path == GRAD_PATH_A   ? "A"
                                            : o->path == GRAD_PATH_B ? "B"
                                                                     : "C");
    cJSON_AddNumberToObject(j, "params", (double)r->params);
    cJSON_AddNumberToObject(j, "train_seconds", r->train_seconds);
    cJSON_AddNumberToObject(j, "eval_seconds", r->eval_seconds);
    cJSON_AddNumberToObject(j, "total_seconds", r->total_seconds);
    cJSON_AddStringToObject(j, "device", r->device);
    cJSON_AddStringToObject(j, "overridden", r->overridden);
    char *s = cJSON_PrintUnformatted(j);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

int contrastive_main(const train_options *o, const con_options *c)
{
    char err[4096] = "";
    con_result r;
    if (contrastive_run(o, c, NULL, &r, err, sizeof err) != 0) {
        fprintf(stderr, "clgrad-train: %s\n", err);
        return 1;
    }
    char split[64];
    train_split_text(split, sizeof split, r.update_samples, r.micro_batch);
    printf("kNN test accuracy %.4f (k = %u) after %" PRIu64 " updates of %u samples (%s, %s); "
           "InfoNCE %.4f; %.1f s training, %.0f samples/s, peak device bytes %" PRIu64 "\n",
           r.knn_accuracy, c->knn, r.updates, r.update_samples, split, con_method_name(c->method),
           r.loss, r.train_seconds, r.samples_per_s, r.peak_device_bytes);
    if (!isnan(r.knn_accuracy_init))
        printf("kNN test accuracy before training %.4f\n", r.knn_accuracy_init);
    if (r.overridden[0])
        printf("resumed from %s with settings overridden: %s\n", o->resume, r.overridden);
    if (o->json)
        print_json(o, c, &r);
    return fflush(stdout) == 0 ? 0 : 1;
}
