/* contrastive_run.c - contrastive_run and contrastive_main (see
 * contrastive_run.h): set up (contrastive_setup.c), resume, optionally
 * evaluate first, train (contrastive_loop.c), checkpoint, evaluate, write
 * --dump-weights, and print the summary and --json. */
#include "contrastive_internal.h"
#include "summary.h"
#include "task.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int contrastive_run(const train_options *o, const con_options *c, const train_io *io,
                    con_result *res, char *err, size_t errlen)
{
    double t0 = progress_now();
    con_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    res->knn_accuracy_init = NAN;
    res->loss = NAN;
    t->run.opt = o;
    t->run.task = CONTRASTIVE_TASK_NAME;
    t->c = c;
    t->res = res;
    t->run.err = err;
    t->run.errlen = errlen;
    progress_init(&t->run.prog, o->quiet, 1);
    int rc = -1;
    if (train_check_files(NULL, o, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, 1) != 0)
        goto out;
    if (con_setup(t, io) != 0)
        goto out;
    con_print_plan(t);
    if (!o->quiet) {
        char split[64];
        train_split_text(split, sizeof split, res->update_samples, t->run.b);
        progress_log(&t->run.prog, "contrastive %s on %s: updates of %u samples (%s), %" PRIu64
                     " updates, %s lr %g, temperature %g, %s, grad path %c\n",
                     con_method_name(c->method), res->device, res->update_samples, split,
                     t->run.total_updates, clg_optimizer_name(o->optimizer), res->lr,
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
    if (con_loop(t) != 0) /* with --checkpoint at its end */
        goto out;
    res->peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    double t2 = progress_now();
    if (con_knn_eval(t, &res->knn_accuracy) != 0)
        goto out;
    res->eval_seconds += progress_now() - t2;
    if (run_dump_weights(&t->run, io, 1) != 0)
        goto out;
    res->updates = t->run.updates;
    res->micro_steps = t->run.micro_steps;
    res->samples = t->run.samples;
    res->train_seconds = t->run.train_seconds;
    res->samples_per_s = run_samples_per_s(&t->run);
    rc = 0;
out:
    con_teardown(t);
    res->total_seconds = progress_now() - t0;
    return rc;
}

static void print_json(const train_options *o, const con_options *c, const con_result *r)
{
    const json_field f[] = {
        JSON_STR("task", "contrastive"),
        JSON_STR("contrastive", con_method_name(c->method)),
        JSON_NUM("loss", r->loss),
        JSON_NUM("knn_accuracy", r->knn_accuracy),
        JSON_NUM_IF(!isnan(r->knn_accuracy_init), "knn_accuracy_init", r->knn_accuracy_init),
        JSON_NUM("knn_k", c->knn),
        JSON_NUM("samples_per_s", r->samples_per_s),
        JSON_NUM("peak_device_bytes", r->peak_device_bytes),
        JSON_NUM("activation_bytes", r->activation_bytes),
        JSON_NUM("cache_bytes", r->cache_bytes),
        JSON_NUM("model_bytes", r->model_bytes),
        JSON_NUM("data_bytes", r->data_bytes),
        JSON_NUM("eval_bytes", r->eval_bytes),
        JSON_NUM("updates", r->updates),
        JSON_RUN_SHAPE(r),
        JSON_NUM("temperature", c->temperature),
        JSON_NUM("embed_dim", c->embed_dim),
        JSON_NUM("bank_size", c->method == CON_CONTACCUM ? c->bank_size : 0),
        JSON_STR("optimizer", clg_optimizer_name(o->optimizer)),
        JSON_NUM("lr", r->lr),
        JSON_STR("grad_path", train_path_name(o->path)),
        JSON_NUM("params", r->params),
        JSON_NUM("train_seconds", r->train_seconds),
        JSON_NUM("eval_seconds", r->eval_seconds),
        JSON_NUM("total_seconds", r->total_seconds),
        JSON_STR("device", r->device),
        JSON_STR("overridden", r->overridden),
    };
    json_print(f, sizeof f / sizeof *f);
}

int contrastive_main(const train_options *o, const con_options *c)
{
    char err[4096] = "";
    con_result r;
    if (contrastive_run(o, c, NULL, &r, err, sizeof err) != 0) {
        train_print_error(err);
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
    train_print_resumed(o->resume, r.overridden);
    train_print_written();
    if (o->json)
        print_json(o, c, &r);
    return fflush(stdout) == 0 ? 0 : 1;
}
