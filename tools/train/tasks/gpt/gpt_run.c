/* gpt_run.c - gpt_run and gpt_main (see gpt_run.h): set up
 * (gpt_setup.c), resume, train (gpt_loop.c, with --checkpoint at its
 * end), evaluate, --dump-weights, --sample, and the summary and --json. */
#include "gpt_run_internal.h"
#include "dist.h"
#include "run_log.h"
#include "summary.h"
#include "task.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The run's line: shape, data, updates. */
static void print_start(gpt_trainer *t)
{
    const train_options *o = t->run.opt;
    const gpt_result *res = t->res;
    if (o->quiet)
        return;
    char split[64];
    train_split_text(split, sizeof split, res->update_samples, t->run.b);
    progress_log(&t->run.prog,
                 "gpt %u layers, %u heads, %u wide, context %u on %s: %zu training and %zu "
                 "validation windows; updates of %u sequences (%s), %" PRIu64 " updates, %s "
                 "lr %g (warmup %" PRIu64 ")\n",
                 t->shape.layers, t->shape.heads, t->shape.width, t->shape.context, res->device,
                 res->train_windows, res->val_windows, res->update_samples, split,
                 t->run.total_updates, clg_optimizer_name(o->optimizer), res->lr,
                 run_warmup(&t->run));
}

int gpt_run(const train_options *o, const gpt_options *g, const train_io *io, gpt_result *res,
            char *err, size_t errlen)
{
    return gpt_run_dist(o, g, io, NULL, res, err, errlen);
}

int gpt_run_dist(const train_options *o, const gpt_options *g, const train_io *io,
                 train_dist_hooks *dist, gpt_result *res, char *err, size_t errlen)
{
    double t0 = progress_now();
    gpt_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    res->val_loss = res->train_loss = NAN;
    t->run.opt = o;
    t->run.task = GPT_TASK_NAME;
    t->run.dist = dist;
    t->g = g;
    t->res = res;
    t->run.err = err;
    t->run.errlen = errlen;
    progress_init(&t->run.prog, o->quiet, 1);
    int rc = -1, pending = dist != NULL; /* failures the next agreement must carry */
    if (train_check_files(gpt_corpus_files, o, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, run_rank0(&t->run)) != 0 ||
        gpt_setup(t, io) != 0 || run_dist_check(&t->run) != 0)
        goto out;
    gpt_print_run_plan(t);
    print_start(t);
    if (o->resume && (task_settings_resume(&t->run, &t->settings, res->overridden,
                                           sizeof res->overridden) != 0 ||
                      model_fp32_widen(&t->run, &t->weights) != 0)) /* the loaded params */
        goto out;
    if (run_metrics_open(&t->run, run_rank0(&t->run)) != 0)
        goto out;
    run_log_info log = {res->device, res->clblast_tuning, &t->settings};
    if (run_log_open(&t->run, &log) != 0)
        goto out;
    if (dist) {
        /* every rank set up, then the collective part, where every rank
         * fails together */
        pending = 0;
        if (run_agree(&t->run, 0, NULL) != 0 ||
            dist->start(dist, t->run.model, err, errlen) != 0 ||
            model_fp32_widen(&t->run, &t->weights) != 0) /* rank 0's params */
            goto out;
    }
    if (gpt_loop(t) != 0)
        goto out;
    pending = dist != NULL; /* rank 0's outputs: agreed at `out' */
    if (run_metrics_close(&t->run) != 0)
        goto out;
    if (run_log_close(&t->run) != 0)
        goto out;
    res->peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    /* the loop evaluated at its end (rank 0), unless it had nothing to do;
     * a --sample of a finished run evaluated nothing (its hook returned) */
    res->eval_seconds = gpt_sampling_only(t) ? 0 : t->run.eval_seconds;
    if (run_rank0(&t->run) && isnan(res->val_loss) && !gpt_sampling_only(t)) {
        double t1 = progress_now();
        if (gpt_evaluate(t) != 0)
            goto out;
        res->eval_seconds += progress_now() - t1;
    }
    if (run_dump_weights(&t->run, io, run_rank0(&t->run)) != 0)
        goto out;
    if (g->sample && run_rank0(&t->run) && gpt_sample(t) != 0)
        goto out;
    res->updates = t->run.updates;
    res->micro_steps = t->run.micro_steps;
    res->samples = t->run.samples;
    res->train_seconds = t->run.train_seconds;
    res->samples_per_s = run_samples_per_s(&t->run);
    rc = 0;
out:
    if (dist) {
        if (pending && run_agree(&t->run, rc, NULL) != 0)
            rc = -1;
        dist->stop(dist); /* collective: every rank gets here, together */
    }
    run_log_release(&t->run);
    gpt_teardown(t);
    res->total_seconds = progress_now() - t0;
    return rc;
}

static void print_json(const train_options *o, const gpt_options *g, const gpt_result *r)
{
    const json_field f[] = {
        JSON_STR("task", GPT_TASK_NAME),
        JSON_NUM("val_loss", r->val_loss),
        JSON_NUM("val_bits_per_byte", gpt_bits(r->val_loss)),
        JSON_NUM("unigram_loss", r->base.unigram),
        JSON_NUM("bigram_loss", r->base.bigram),
        JSON_NUM("train_loss", r->train_loss),
        JSON_NUM("layers", g->layers),
        JSON_NUM("heads", g->heads),
        JSON_NUM("width", g->width),
        JSON_NUM("context", g->context),
        JSON_NUM("params", r->params),
        JSON_NUM("updates", r->updates),
        JSON_RUN_SHAPE(r),
        JSON_NUM("train_windows", r->train_windows),
        JSON_NUM("val_windows", r->val_windows),
        JSON_NUM("tokens_per_s", r->samples_per_s * g->context),
        JSON_NUM("peak_device_bytes", r->peak_device_bytes),
        JSON_NUM("planned_bytes", r->planned_bytes),
        JSON_NUM("activation_bytes", r->activation_bytes),
        JSON_NUM("model_bytes", r->model_bytes),
        JSON_NUM("data_bytes", r->data_bytes),
        JSON_STR("optimizer", clg_optimizer_name(o->optimizer)),
        JSON_NUM("lr", r->lr),
        JSON_STR("state_dtype", clg_dtype_name(o->state_dtype)),
        JSON_NUM("train_seconds", r->train_seconds),
        JSON_NUM("eval_seconds", r->eval_seconds),
        JSON_NUM("total_seconds", r->total_seconds),
        JSON_STR("device", r->device),
        JSON_STR("clblast_tuning", r->clblast_tuning),
        JSON_STR("overridden", r->overridden),
        JSON_NUM_IF(g->profile, "profile_gemm_s", r->prof.gemm),
        JSON_NUM_IF(g->profile, "profile_attention_s", r->prof.attention),
        JSON_NUM_IF(g->profile, "profile_other_s", r->prof.other),
        JSON_NUM_IF(g->profile, "profile_optimizer_s", r->optimizer_seconds),
    };
    json_print(f, sizeof f / sizeof *f);
}

/* --profile's split of the training time; the rest is the host's work
 * and the waits between launches. */
static void print_profile(const gpt_result *r)
{
    const double total = r->train_seconds > 0 ? r->train_seconds : 1.0;
    const double part[] = {r->prof.gemm, r->prof.attention, r->prof.other, r->optimizer_seconds};
    const char *name[] = {"GEMMs (CLBlast)", "attention kernels", "other kernels", "optimizer"};
    double rest = r->train_seconds;
    printf("profile of %.2f s training (each launch waited for):\n", r->train_seconds);
    for (int i = 0; i < 4; i++) {
        printf("  %-18s %8.3f s %5.1f%%\n", name[i], part[i], 100.0 * part[i] / total);
        rest -= part[i];
    }
    printf("  %-18s %8.3f s %5.1f%% (host, waits)\n", "rest", rest, 100.0 * rest / total);
    printf("  clgrad's own kernels (attention + other): %.1f%% of the training time\n",
           100.0 * (part[1] + part[2]) / total);
}

static int print_summary(const train_options *o, const gpt_options *g, const gpt_result *r)
{
    char split[64];
    train_split_text(split, sizeof split, r->update_samples, r->micro_batch);
    if (isnan(r->val_loss))
        printf("not evaluated (a --sample of a finished run; --resume it without --sample to "
               "evaluate)");
    else
        printf("validation loss %.4f nats/byte (%.3f bits; unigram %.3f, bigram %.3f)",
               r->val_loss, gpt_bits(r->val_loss), gpt_bits(r->base.unigram),
               gpt_bits(r->base.bigram));
    printf(" after %" PRIu64 " updates of %u sequences of %u bytes (%s); %.1f s training, %.0f "
           "tokens/s, %.1f s evaluating, peak device bytes %" PRIu64 "\n",
           r->updates, r->update_samples, g->context, split, r->train_seconds,
           r->samples_per_s * g->context, r->eval_seconds, r->peak_device_bytes);
    train_print_resumed(o->resume, r->overridden);
    train_print_written();
    if (g->profile)
        print_profile(r);
    if (o->json)
        print_json(o, g, r);
    return fflush(stdout) == 0 ? 0 : 1;
}

int gpt_main(const train_options *o, const gpt_options *g)
{
    char err[4096] = "";
    if (g->plan) {
        if (gpt_print_plan(o, g, err, sizeof err) == 0)
            return 0;
        train_print_error(err);
        return 1;
    }
    gpt_result r;
    if (gpt_run(o, g, NULL, &r, err, sizeof err) != 0) {
        train_print_error(err);
        return 1;
    }
    return print_summary(o, g, &r);
}

int gpt_dist_main(const train_options *o, const gpt_options *g, train_dist_hooks *d, char *err,
                  size_t errlen)
{
    gpt_result r;
    if (gpt_run_dist(o, g, NULL, d, &r, err, errlen) != 0)
        return -1;
    return d->rank == 0 ? print_summary(o, g, &r) : 0;
}
