/* loop.c - the training loop (see loop.h): one body for plain runs and
 * the ranks of a --dist run.
 *
 * --dist: the effective batch (--batch) is the same as a plain run's, from
 * the same per-epoch order (every rank shuffles with the same seed): rank r
 * takes the r-th contiguous 1/R of it and cuts that into micro-batches of
 * b, stepped through the MPI side. The ranks together take the samples a
 * plain run takes for that update, and the weights (samples per
 * micro-batch) are summed across ranks, so the update is the plain run's
 * mean up to rounding.
 *
 * Failures: a rank that fails must not leave the others waiting in a
 * collective. Between two agreement points (run_agree, run_sum: dist.h) a
 * failure is only recorded (rc) and the work up to the next one skipped;
 * every agreement carries rc (the cycle end of the MPI side's step agrees
 * on its own), so a failure anywhere becomes the same failure, with the
 * failed rank's message, on every rank at the next one. Every rank reaches
 * the same agreements in the same order: what decides them (save and
 * print points) is either the same on every rank or rank 0's, broadcast
 * (the print point is time-based). A plain run's agreement is its own
 * status: it stops at the first agreement point after a failure. */
#include "loop.h"
#include "dist.h"
#include "model_fp32.h"
#include "run_log.h"
#include "task_settings.h"

typedef struct loop {
    run_state *r;
    const run_loop_hooks *h;
    void *task;
    double mark;            /* the training time is counted up to here */
    uint64_t epoch_samples; /* samples of the pass so far */
} loop;

/* Waits for the device; the wall time since the mark is training time. */
static int sync_time(loop *L)
{
    cl_int e = clFinish(clg_context_queue(L->r->ctx));
    if (e != CL_SUCCESS)
        return run_fail_cl(L->r, "training", e);
    double now = progress_now();
    L->r->train_seconds += now - L->mark;
    L->mark = now;
    return 0;
}

/* A micro-step of weight rows (the samples in the micro-batch): the cycle
 * end divides by the sum of the weights (under --dist over every rank's
 * micro-batches), so that the update is the mean over the batch. */
static int step(run_state *r, unsigned rows, int *updated)
{
    const clg_grads *g = r->opt->path == GRAD_PATH_B ? NULL : r->grads;
    if (r->dist)
        return r->dist->step(r->dist, g, (float)rows, updated, r->err, r->errlen);
    clg_status st = clg_step(r->model, g, (float)rows, updated, NULL);
    return st == CLG_SUCCESS ? 0 : run_fail_clg(r, "clg_step", st);
}

/* The cycle did not end on the batch's last micro-step. */
static int end_cycle(run_state *r, size_t km)
{
    if (r->dist)
        return run_fail(r, "--dist: the cycle did not end after %zu micro-steps", km);
    clg_status st = clg_flush(r->model, NULL);
    return st == CLG_SUCCESS ? 0 : run_fail_clg(r, "clg_flush", st);
}

/* Effective batch perm[start .. start + len) as one update, through the
 * task's micro hook: this rank's share of it (a plain run's: all of it) as
 * micro-batches of b. rc: a failure still to be agreed on. Returns 0 when
 * the update went through (on every rank), else -1 (on every rank).
 * *print: whether to print progress after it, rank 0's decision. */
static int micro_batches(loop *L, size_t start, size_t len, int rc, unsigned *print)
{
    run_state *r = L->r;
    train_dist_hooks *d = r->dist;
    size_t share = d ? len / (size_t)d->size : len;
    size_t first = start + (d ? (size_t)d->rank * share : 0);
    size_t km = run_begin_cycle(r, share);
    int updated = 0;
    for (size_t i = 0; i < km; i++) {
        unsigned rows = (unsigned)order_micro_len(share, r->b, i);
        int last = i + 1 == km;
        if (rc == 0)
            rc = L->h->micro(L->task, first + i * r->b, rows);
        if (last) {
            /* Before the cycle end, where every rank waits for every
             * other: a rank that failed says so here instead. */
            *print = run_rank0(r) && progress_due(&r->prog, r->updates + 1);
            if (run_agree(r, rc, print) != 0)
                return -1;
        } else if (rc != 0) {
            continue; /* skip to the agreement */
        }
        if (step(r, rows, &updated) != 0) {
            if (last)
                return -1; /* the cycle end agreed: the same failure on every rank */
            rc = -1;
            continue;
        }
        r->micro_steps++; /* this rank's: the library's own count, as a checkpoint holds it */
    }
    if (!updated && end_cycle(r, km) != 0)
        return -1;
    r->samples += len; /* every rank's: the run's position does not depend on R */
    r->updates++;
    return 0;
}

/* One update: micro-batches, or the task's whole batch (plain runs). */
static int update(loop *L, size_t start, size_t len, int rc, unsigned *print)
{
    if (L->h->micro)
        return micro_batches(L, start, len, rc, print);
    if (rc == 0)
        rc = L->h->batch(L->task, start, len);
    *print = progress_due(&L->r->prog, L->r->updates);
    return run_agree(L->r, rc, NULL);
}

int run_clear_sums(run_state *r, const run_sums *s)
{
    float z = 0.0f;
    cl_int e = clEnqueueFillBuffer(clg_context_queue(r->ctx), s->buf, &z, sizeof z,
                                   s->first * sizeof z, s->n * sizeof z, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : run_fail_cl(r, "clearing sums", e);
}

int run_read_sums(run_state *r, const run_sums *s, float *out)
{
    cl_int e = clEnqueueReadBuffer(clg_context_queue(r->ctx), s->buf, CL_TRUE,
                                   s->first * sizeof(float), s->n * sizeof(float), out, 0, NULL,
                                   NULL);
    return e == CL_SUCCESS ? 0 : run_fail_cl(r, "reading sums", e);
}

/* The epoch's sums into s, and with update (--metrics, --log) the
 * update's after them, over every rank: an agreement point. */
static int read_sums(loop *L, int rc, int update, float *s)
{
    run_state *r = L->r;
    unsigned n = r->epoch_sums.n, nu = update && r->update_sums.buf ? r->update_sums.n : 0;
    if (rc == 0)
        rc = run_read_sums(r, &r->epoch_sums, s);
    if (rc == 0 && nu)
        rc = run_read_sums(r, &r->update_sums, s + n);
    return run_sum(r, rc, s, (int)(n + nu));
}

/* A pass starts: the epoch's sums (and the update's) from zero. */
static int clear_epoch_sums(run_state *r)
{
    if (r->result)
        r->result->epochs = (unsigned)r->epoch + 1;
    if (run_clear_sums(r, &r->epoch_sums) != 0)
        return -1;
    return r->update_sums.buf ? run_clear_sums(r, &r->update_sums) : 0;
}

/* --metrics and --log after an update of len samples from the update's
 * sums u (every rank reads them; rank 0 writes), which start again. */
static int watch_update(loop *L, size_t len, const float *u)
{
    run_state *r = L->r;
    if (r->update_sums.buf && run_clear_sums(r, &r->update_sums) != 0)
        return -1;
    return run_watch_update(r, L->h->mean_loss(L->task, u, len));
}

/* After the task's own: the fp32 copy of bf16 master weights the next
 * forward reads, then the bound on the queue. */
static int updated(loop *L)
{
    int rc = L->h->updated ? L->h->updated(L->task) : 0;
    if (rc == 0 && L->r->master)
        rc = model_fp32_widen(L->r, L->r->master);
    return rc == 0 ? run_bound_queue(L->r) : rc;
}

/* --checkpoint: every rank's work went through (else there is nothing to
 * save), then run_save with the task's settings (r->settings); under
 * --dist rank 0 writes the one file, durably (temp file, fsync, rename):
 * the file on disk is the old one or the new one whatever happens to any
 * rank. Every rank learns whether the write succeeded. */
static int save(loop *L, int rc)
{
    if (run_agree(L->r, rc, NULL) != 0)
        return -1;
    return run_agree(L->r, task_settings_save(L->r, L->r->settings), NULL);
}

/* After an update: what must be read back, then a --save-every
 * checkpoint. *rc: a failure still to be agreed on, in and out. Returns
 * -1 when the run failed (on every rank). */
static int after_update(loop *L, size_t len, unsigned print, int *rc)
{
    run_state *r = L->r;
    const run_loop_hooks *h = L->h;
    int every = run_logs_every_update(r);
    int save_due = r->opt->save_every && r->updates % r->opt->save_every == 0;
    if (*rc == 0 && (every || print || save_due))
        *rc = sync_time(L);
    if (every || print) {
        float s[RUN_LOOP_MAX_SUMS] = {0};
        if (read_sums(L, *rc, every, s) != 0)
            return -1;
        *rc = every ? watch_update(L, len, s + r->epoch_sums.n) : 0;
        if (print && *rc == 0)
            progress_update(&r->prog, r->updates, r->samples - r->samples_at_start,
                            r->train_seconds, (unsigned)r->epoch + 1,
                            h->mean_loss(L->task, s, L->epoch_samples));
    }
    if (save_due) {
        if (save(L, *rc) != 0)
            return -1;
        *rc = 0;
    }
    return 0;
}

/* The task's evaluation: rank 0's alone (every rank holds the same
 * params, bitwise); the others go on to the next agreement. */
static int evaluate(loop *L)
{
    if (!L->h->evaluate || !run_rank0(L->r))
        return 0;
    double t0 = progress_now();
    int rc = L->h->evaluate(L->task);
    L->r->eval_seconds += progress_now() - t0; /* never training time */
    return rc;
}

/* The end of a pass that started epoch_t0 seconds into the training:
 * the queue finished, the sums, the evaluation, the task's summary. *rc
 * as in after_update. */
static int end_pass(loop *L, double epoch_t0, int *rc)
{
    if (*rc == 0)
        *rc = sync_time(L);
    float s[RUN_LOOP_MAX_SUMS] = {0};
    if (read_sums(L, *rc, 0, s) != 0)
        return -1;
    *rc = evaluate(L);
    if (*rc == 0)
        *rc = L->h->epoch_end(L->task, s, L->epoch_samples, L->r->train_seconds - epoch_t0);
    return 0;
}

int run_loop(run_state *r, const run_loop_hooks *h, void *task)
{
    /* the sums live in fixed arrays on the stack (RUN_LOOP_MAX_SUMS) */
    if (!r->epoch_sums.buf || r->epoch_sums.n + r->update_sums.n > RUN_LOOP_MAX_SUMS)
        return run_fail(r, "internal: a task's loop needs epoch sums and at most %d sums",
                        RUN_LOOP_MAX_SUMS);
    if (r->dist && !h->micro)
        return run_fail(r, "--dist: this task steps whole batches (it has no micro hook)");
    loop L = {r, h, task, 0, 0};
    r->samples_at_start = r->samples;
    r->updates_at_start = r->updates;
    int done = r->updates >= r->total_updates;
    int rc = done ? evaluate(&L) : 0; /* resumed at the end: the evaluation */
    if (r->opt->save_initial && r->updates == 0) { /* not when resuming past it */
        r->save_path = r->opt->save_initial;
        int failed = save(&L, rc) != 0;
        r->save_path = NULL;
        if (failed)
            return -1;
    }
    while (!done) {
        order_shuffle(&r->order, r->epoch);
        cl_int e;
        if (rc == 0 && (e = devdata_set_order(&r->dtrain, r->order.perm)) != CL_SUCCESS)
            rc = run_fail_cl(r, "uploading the data order", e);
        if (rc == 0)
            rc = clear_epoch_sums(r);
        double epoch_t0 = r->train_seconds;
        L.epoch_samples = 0;
        /* The host waits for the device only when it reads something back;
         * training time is the wall time between those waits. */
        L.mark = progress_now();
        while (r->next_batch < r->batches_per_epoch && !done) {
            size_t start, len;
            unsigned print = 0;
            order_batch(&r->order, r->next_batch, &start, &len);
            if (update(&L, start, len, rc, &print) != 0)
                return -1;
            rc = updated(&L);
            r->next_batch++;
            L.epoch_samples += len;
            if (after_update(&L, len, print, &rc) != 0)
                return -1;
            done = run_done(r);
        }
        if (end_pass(&L, epoch_t0, &rc) != 0)
            return -1;
        run_next_epoch(r);
    }
    return r->opt->checkpoint ? save(&L, rc) : run_agree(r, rc, NULL);
}
