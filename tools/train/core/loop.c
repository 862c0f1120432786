/* loop.c - the training loop (see loop.h). */
#include "loop.h"

#include <math.h>

/* Waits for the device; the wall time since *mark is training time. */
static int sync_time(run_state *r, double *mark)
{
    cl_int e = clFinish(clg_context_queue(r->ctx));
    if (e != CL_SUCCESS)
        return run_fail_cl(r, "training", e);
    double now = progress_now();
    r->train_seconds += now - *mark;
    *mark = now;
    return 0;
}

/* After an update: what must be read back, then whether the run is over. */
static int after_update(run_state *r, const run_loop_hooks *h, void *task, size_t len,
                        uint64_t epoch_samples, double *mark, int *done)
{
    const train_options *o = r->opt;
    int every = h->sync_every_update && h->sync_every_update(task);
    int save_due = o->save_every && r->updates % o->save_every == 0;
    int print_due = progress_due(&r->prog, r->updates);
    if ((every || print_due || save_due) && sync_time(r, mark) != 0)
        return -1;
    if (every && h->after_update && h->after_update(task, len) != 0)
        return -1;
    if (print_due) {
        double loss = NAN;
        if (h->running_loss(task, epoch_samples, &loss) != 0)
            return -1;
        progress_update(&r->prog, r->updates, r->samples - r->samples_at_start, r->train_seconds,
                        (unsigned)r->epoch + 1, loss);
    }
    if (save_due && h->save(task) != 0)
        return -1;
    *done = run_done(r);
    return 0;
}

int run_loop(run_state *r, const run_loop_hooks *h, void *task)
{
    r->samples_at_start = r->samples;
    r->updates_at_start = r->updates;
    int done = r->updates >= r->total_updates;
    while (!done) {
        order_shuffle(&r->order, r->epoch);
        cl_int e = devdata_set_order(&r->dtrain, r->order.perm);
        if (e != CL_SUCCESS)
            return run_fail_cl(r, "uploading the data order", e);
        if (h->epoch_start(task) != 0)
            return -1;
        double epoch_t0 = r->train_seconds;
        uint64_t epoch_samples = 0;
        /* The host waits for the device only when it reads something back;
         * training time is the wall time between those waits. */
        double mark = progress_now();
        while (r->next_batch < r->batches_per_epoch && !done) {
            size_t start, len;
            order_batch(&r->order, r->next_batch, &start, &len);
            if (h->batch(task, start, len) != 0)
                return -1;
            r->next_batch++;
            epoch_samples += len;
            if (after_update(r, h, task, len, epoch_samples, &mark, &done) != 0)
                return -1;
        }
        if (sync_time(r, &mark) != 0)
            return -1;
        if (h->epoch_end(task, epoch_samples, r->train_seconds - epoch_t0) != 0)
            return -1;
        run_next_epoch(r);
    }
    return 0;
}
