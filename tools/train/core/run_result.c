/* run_result.c - the result every task shares (summary.h's run_result) as
 * the core fills it while a run is set up, and the one-line memory plan
 * it gives (see run.h). */
#include "run.h"
#include "memplan.h"

#include <inttypes.h>

void run_start(run_state *r, const char *task, const train_options *o, train_dist_hooks *dist,
               run_result *res, char *err, size_t errlen)
{
    r->started = progress_now();
    r->opt = o;
    r->task = task;
    r->dist = dist;
    r->dist_pending = dist != NULL; /* the set-up's failures reach the others at run_end */
    r->result = res;
    r->err = err;
    r->errlen = errlen;
    progress_init(&r->prog, o->quiet, 1);
}

void run_result_setup(run_state *r)
{
    run_result *res = r->result;
    const train_options *o = r->opt;
    res->micro_batch = r->b;
    res->accum_steps = r->k;
    res->batch = o->batch;
    res->update_samples = r->order.n < o->batch ? (unsigned)r->order.n : o->batch;
    res->data_bytes = r->dtrain.bytes + r->dtest.bytes;
    clg_model_plan mp = clg_model_plan_init();
    if (clg_model_memory(r->model, &mp) == CLG_SUCCESS)
        res->model_bytes = mp.total;
}

void run_print_plan_line(run_state *r, const char *model_extra, const char *rows,
                         uint64_t total)
{
    if (r->opt->quiet)
        return;
    const run_result *res = r->result;
    uint64_t cap = clg_context_budget(r->ctx);
    char m[32], a[32], d[32], t[32], of[32];
    memplan_bytes(m, sizeof m, res->model_bytes);
    memplan_bytes(a, sizeof a, res->activation_bytes);
    memplan_bytes(d, sizeof d, res->data_bytes);
    memplan_bytes(t, sizeof t, total);
    memplan_bytes(of, sizeof of, cap ? cap : clg_context_device_info(r->ctx)->global_mem_size);
    progress_clear(&r->prog);
    progress_log(&r->prog,
                 "memory plan on %s: model %s (%" PRIu64 " parameters)%s, activations %s (%s), "
                 "data %s; total %s of %s%s\n",
                 res->device, m, res->params, model_extra, a, rows, d, t, of,
                 cap ? " (--vram)" : "");
}
