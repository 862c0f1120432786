/* gpt_run.c - gpt_run (see gpt_run.h): set up (gpt_setup.c), resume,
 * train (gpt_loop.c, with --checkpoint at its end), evaluate,
 * --dump-weights and --sample. */
#include "gpt_run_internal.h"
#include "gpt_hf.h"
#include "gpt_resolve.h"
#include "dist.h"
#include "loop.h"
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
    train_split_text(split, sizeof split, res->run.update_samples, t->run.b);
    progress_log(&t->run.prog,
                 "gpt %u layers, %u heads, %u wide, context %u, vocabulary %u%s on %s: %zu "
                 "training and %zu validation windows; updates of %u sequences (%s), %" PRIu64
                 " updates, %s lr %g (warmup %" PRIu64 ")\n",
                 t->shape.layers, t->shape.heads, t->shape.width, t->shape.context,
                 t->shape.vocab, t->g->tokens ? " tokens" : " bytes", res->run.device,
                 res->train_windows, res->val_windows, res->run.update_samples, split, t->run.total_updates, clg_optimizer_name(o->optimizer), res->run.lr,
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
    gpt_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    res->val_loss = res->train_loss = NAN;
    run_start(&t->run, GPT_TASK_NAME, o, dist, &res->run, err, errlen);
    t->run.master = &t->weights;
    /* --init-from: the shape its config gives (gpt_hf.h) */
    gpt_options hf = *g;
    t->g = &hf;
    t->res = res;
    int rc = -1;
    const char *corpus = io && io->train && io->test ? NULL : o->data_dir; /* --export-hf's check */
    if (gpt_options_resolve(&hf, o, err, errlen) != 0 ||
        (g->export_hf && gpt_hf_check_export(g->export_hf, corpus, err, errlen) != 0) ||
        train_check_files(gpt_data_files, o, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, run_rank0(&t->run)) != 0 ||
        gpt_setup(t, io) != 0 || run_dist_check(&t->run) != 0)
        goto out;
    gpt_print_run_plan(t);
    print_start(t);
    if (o->resume && (task_settings_resume(&t->run, &t->settings, res->run.overridden,
                                           sizeof res->run.overridden) != 0 ||
                      model_fp32_widen(&t->run, &t->weights) != 0)) /* the loaded params */
        goto out;
    if (gpt_loop(t) != 0)
        goto out;
    res->run.peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    /* the loop evaluated at its end (rank 0), unless it had nothing to do;
     * a --sample of a finished run evaluated nothing (its hook returned) */
    res->run.eval_seconds = gpt_sampling_only(t) ? 0 : t->run.eval_seconds;
    if (run_rank0(&t->run) && isnan(res->val_loss) && !gpt_sampling_only(t)) {
        double t1 = progress_now();
        if (gpt_evaluate(t) != 0)
            goto out;
        res->run.eval_seconds += progress_now() - t1;
    }
    if (run_dump_weights(&t->run, io, run_rank0(&t->run)) != 0)
        goto out;
    if (g->export_hf && run_rank0(&t->run) &&
        gpt_hf_export_run(&t->run, g->export_hf, &t->shape) != 0) /* gpt_hf.h */
        goto out;
    if (g->sample && run_rank0(&t->run) && gpt_sample(t) != 0)
        goto out;
    rc = 0;
out:
    return run_end(&t->run, rc, gpt_teardown, t);
}
