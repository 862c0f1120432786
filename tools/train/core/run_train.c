/* run_train.c - the frame of every task's run around the loop: its
 * training with the outputs that follow the updates, and its end (see
 * loop.h). */
#include "loop.h"
#include "dist.h"
#include "model_fp32.h"
#include "run_log.h"

int run_train(run_state *r, const run_loop_hooks *h, void *task)
{
    if (run_metrics_open(r, run_rank0(r)) != 0)
        return -1;
    run_log_info log = {r->result->device, r->result->clblast_tuning, r->settings};
    if (run_log_open(r, &log) != 0)
        return -1;
    if (r->dist) {
        /* every rank set up (or the failed one's message on every rank),
         * then the collective part, where every rank fails together */
        r->dist_pending = 0;
        if (run_agree(r, 0, NULL) != 0 ||
            r->dist->start(r->dist, r->model, r->err, r->errlen) != 0 ||
            (r->master && model_fp32_widen(r, r->master) != 0)) /* rank 0's params */
            return -1;
    }
    if (run_loop(r, h, task) != 0)
        return -1;
    r->dist_pending = r->dist != NULL; /* rank 0's outputs: agreed at run_end */
    if (run_metrics_close(r) != 0)
        return -1;
    return run_log_close(r);
}

int run_end(run_state *r, int rc, void (*release)(void *task), void *task)
{
    run_result *res = r->result;
    if (rc == 0) {
        res->updates = r->updates;
        res->micro_steps = r->micro_steps;
        res->samples = r->samples;
        res->train_seconds = r->train_seconds;
        res->samples_per_s = run_samples_per_s(r);
    }
    if (r->dist) {
        if (r->dist_pending && run_agree(r, rc, NULL) != 0)
            rc = -1;
        r->dist->stop(r->dist); /* collective: every rank gets here, together */
    }
    run_log_release(r);
    release(task);
    return rc;
}
