/* contrastive_run.c - contrastive_run (see contrastive_run.h): set up
 * (contrastive_setup.c), resume, optionally evaluate first, train
 * (contrastive_loop.c), checkpoint, evaluate, and write --dump-weights. */
#include "contrastive_internal.h"
#include "loop.h"
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
    con_trainer tr = {0}, *t = &tr;
    memset(res, 0, sizeof *res);
    res->knn_accuracy_init = NAN;
    res->loss = NAN;
    run_start(&t->run, CONTRASTIVE_TASK_NAME, o, NULL, &res->run, err, errlen);
    t->c = c;
    t->res = res;
    int rc = -1;
    if (train_check_files(NULL, o, !(io && io->train && io->test), err, errlen) != 0 ||
        run_lock_files(&t->run, 1) != 0)
        goto out;
    if (con_setup(t, io) != 0)
        goto out;
    con_print_plan(t);
    if (!o->quiet) {
        char split[64];
        train_split_text(split, sizeof split, res->run.update_samples, t->run.b);
        progress_log(&t->run.prog, "contrastive %s on %s: updates of %u samples (%s), %" PRIu64
                     " updates, %s lr %g, temperature %g, %s, grad path %c\n",
                     con_method_name(c->method), res->run.device, res->run.update_samples, split,
                     t->run.total_updates, clg_optimizer_name(o->optimizer), res->run.lr,
                     (double)c->temperature, c->one_way ? "queries to keys" : "both ways",
                     "ABC"[o->path]);
    }
    if (o->resume && con_resume(t) != 0)
        goto out;
    if (c->knn_init) {
        double t1 = progress_now();
        if (con_knn_eval(t, &res->knn_accuracy_init) != 0)
            goto out;
        res->run.eval_seconds += progress_now() - t1;
    }
    if (con_loop(t) != 0) /* with --checkpoint at its end */
        goto out;
    res->run.peak_device_bytes = clg_context_peak_device_bytes(t->run.ctx);
    double t2 = progress_now();
    if (con_knn_eval(t, &res->knn_accuracy) != 0)
        goto out;
    res->run.eval_seconds += progress_now() - t2;
    if (run_dump_weights(&t->run, io, 1) != 0)
        goto out;
    rc = 0;
out:
    return run_end(&t->run, rc, con_teardown, t);
}
