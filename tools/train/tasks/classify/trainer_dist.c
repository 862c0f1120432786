/* trainer_dist.c - clgrad-train --dist ddp: the training loop of one rank
 * of a replicated data-parallel run, over the hooks of dist_hooks.h (so
 * that this file needs no MPI).
 *
 * The effective batch (--batch) is the same as a plain run's, from the
 * same per-epoch order (every rank shuffles with the same seed): rank r
 * takes the r-th contiguous 1/R of it and cuts that into micro-batches of
 * b. The ranks together take the samples a plain run takes for that
 * update, and the weights (samples per micro-batch) are summed across
 * ranks, so the update is the plain run's mean up to rounding.
 *
 * Failures: a rank that fails must not leave the others waiting in a
 * collective. Between two collectives a rank only records a failure (rc)
 * and skips the work; every collective carries rc (agree, sum; the cycle
 * end of clg_dist_step agrees on its own), so a failure anywhere becomes
 * the same failure, with the failed rank's message, on every rank at the
 * next collective. Every rank reaches the same collectives in the same
 * order: what decides them (save and print points) is either the same on
 * every rank or rank 0's, broadcast (the print point is time-based). */
#include "trainer_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int trainer_dist_check(trainer *t)
{
    unsigned R = (unsigned)t->dist->size;
    uint64_t rb = (uint64_t)R * t->run.b;
    size_t n = t->run.order.n;
    size_t tail = n % t->run.opt->batch ? n % t->run.opt->batch : 0;
    if (n >= t->run.opt->batch && t->run.opt->batch % rb != 0)
        return trainer_fail(t,
                            "--dist: --batch %u is not a multiple of %u ranks x --micro-batch %u "
                            "= %" PRIu64 " (each rank takes an equal share of every batch)",
                            t->run.opt->batch, R, t->run.b, rb);
    /* The last batch of an epoch (or the whole set when it is smaller than
     * --batch) is split too: it must split evenly across the ranks. */
    size_t last = n < t->run.opt->batch ? n : tail;
    if (last && last % R != 0)
        return trainer_fail(t,
                            "--dist: the last batch of an epoch has %zu samples (%zu training "
                            "samples, --batch %u), which %u ranks cannot share equally; pick "
                            "--train-limit or --batch so that it is a multiple of %u",
                            last, n, t->run.opt->batch, R, R);
    return 0;
}

int trainer_dist_agree(trainer *t, int rc)
{
    return t->dist->agree(t->dist, rc, NULL, t->run.err, t->run.errlen);
}

int trainer_dist_save(trainer *t, int rc)
{
    /* Every rank's update went through (else there is nothing to save),
     * then the collective save: rank 0 writes the one file, with the
     * states of every shard under ZeRO-1 (libclgrad-mpi gathers them),
     * durably (temp file, fsync, rename): the file on disk is the old one
     * or the new one whatever happens to any rank. */
    if (trainer_dist_agree(t, rc) != 0)
        return -1;
    return trainer_dist_agree(t, trainer_save(t));
}

/* One effective batch perm[start .. start + len): this rank's share of it
 * as micro-batches of b through clg_dist_step. rc_in: a failure still to
 * be agreed on. Returns 0 when the update went through on every rank,
 * else -1 on every rank. *flags: rank 0's print decision. */
static int dist_batch(trainer *t, size_t start, size_t len, int rc_in, unsigned *flags)
{
    train_dist_hooks *d = t->dist;
    const train_options *o = t->run.opt;
    size_t share = len / (size_t)d->size;
    size_t mine = start + (size_t)d->rank * share;
    size_t km = order_micro_count(share, t->run.b);
    t->run.cycle_k = (unsigned)km;
    int rc = rc_in, updated = 0;
    for (size_t i = 0; i < km; i++) {
        cl_uint rows = (cl_uint)order_micro_len(share, t->run.b, i);
        if (rc == 0)
            rc = trainer_micro_compute(t, mine + i * t->run.b, rows);
        if (i + 1 == km) {
            /* Before the cycle end, where every rank waits for every
             * other: a rank that failed says so here instead. */
            unsigned f = d->rank == 0 && progress_due(&t->run.prog, t->run.updates + 1);
            if (d->agree(d, rc, &f, t->run.err, t->run.errlen) != 0)
                return -1;
            *flags = f;
        } else if (rc != 0) {
            continue; /* skip to the agreement */
        }
        /* Weight = samples in the micro-batch; the cycle end divides by
         * the sum over every rank's micro-batches. */
        if (d->step(d, o->path == GRAD_PATH_B ? NULL : t->run.grads, (float)rows, &updated,
                    t->run.err, t->run.errlen) != 0) {
            if (i + 1 == km)
                return -1; /* the cycle end agreed: the same failure on every rank */
            rc = -1;
            continue;
        }
        t->run.micro_steps++; /* this rank's: the library's own count, as a checkpoint holds it */
    }
    if (!updated)
        return trainer_fail(t, "--dist: the cycle did not end after %zu micro-steps", km);
    t->run.samples += len; /* every rank's: the run's position does not depend on R */
    t->run.updates++;
    return 0;
}

/* The loss and accuracy sums, summed over the ranks. */
static int global_sums(trainer *t, int rc, float s[4])
{
    if (rc == 0)
        rc = trainer_read_sums(t, t->sums, s);
    return t->dist->sum(t->dist, rc, s, 4, t->run.err, t->run.errlen);
}

int trainer_dist_loop(trainer *t)
{
    const train_options *o = t->run.opt;
    train_dist_hooks *d = t->dist;
    cl_command_queue q = clg_context_queue(t->run.ctx);
    uint64_t epochs_total = run_epochs(&t->run);
    uint64_t start_samples = t->run.samples_at_start = t->run.samples;
    t->run.updates_at_start = t->run.updates;
    int done = t->run.updates >= t->run.total_updates;
    int rc = 0; /* this rank's failure since the last collective */
    cl_int e;
    /* The evaluation runs on rank 0 alone (every rank holds the same
     * params, bitwise): the others go on to the next collective. */
    if (done && d->rank == 0)
        rc = trainer_evaluate(t, &t->res->test_loss, &t->res->test_accuracy);
    while (!done) {
        order_shuffle(&t->run.order, t->run.epoch);
        if (rc == 0 && (e = devdata_set_order(&t->run.dtrain, t->run.order.perm)) != CL_SUCCESS)
            rc = trainer_fail_cl(t, "uploading the data order", e);
        if (rc == 0)
            rc = trainer_zero_sums(t, t->sums);
        double epoch_t0 = t->run.train_seconds;
        uint64_t epoch_samples = 0;
        t->res->epochs = (unsigned)t->run.epoch + 1;
        double mark = progress_now();
        float s[4];
        while (t->run.next_batch < t->run.batches_per_epoch) {
            size_t start, len;
            unsigned flags = 0;
            order_batch(&t->run.order, t->run.next_batch, &start, &len);
            if (dist_batch(t, start, len, rc, &flags) != 0)
                return -1;
            rc = trainer_widen_weights(t); /* bf16 master: the next forward's copy */
            if (rc == 0)
                rc = trainer_bound_queue(t);
            t->run.next_batch++;
            epoch_samples += len;
            int save_due = o->save_every && t->run.updates % o->save_every == 0;
            int print_due = flags != 0;
            if (rc == 0 && (o->metrics || print_due || save_due)) {
                if ((e = clFinish(q)) != CL_SUCCESS)
                    rc = trainer_fail_cl(t, "training", e);
                double now = progress_now();
                t->run.train_seconds += now - mark;
                mark = now;
            }
            /* --metrics: rank 0 writes, but every rank reads (the
             * option is the same on every rank; only rank 0 has the file). */
            if (o->metrics || print_due) {
                if (global_sums(t, rc, s) != 0)
                    return -1;
                rc = 0;
                if (o->metrics) {
                    rc = trainer_clear_update_loss(t);
                    if (rc == 0 && t->metrics)
                        rc = trainer_metrics_row(t, s[2] / (double)len);
                }
                if (print_due)
                    progress_update(&t->run.prog, t->run.updates, t->run.samples - start_samples,
                                    t->run.train_seconds, (unsigned)t->run.epoch + 1,
                                    epoch_samples ? s[0] / (double)epoch_samples : NAN);
            }
            if (save_due) {
                if (trainer_dist_save(t, rc) != 0)
                    return -1;
                rc = 0;
            }
            if (run_done(&t->run)) {
                done = 1;
                break;
            }
        }
        if (rc == 0 && (e = clFinish(q)) != CL_SUCCESS)
            rc = trainer_fail_cl(t, "training", e);
        t->run.train_seconds += progress_now() - mark;
        if (global_sums(t, rc, s) != 0)
            return -1;
        rc = 0;
        double test_loss = 0, test_acc = 0;
        if (d->rank == 0)
            rc = trainer_evaluate(t, &test_loss, &test_acc);
        double secs = t->run.train_seconds - epoch_t0;
        t->res->train_loss = epoch_samples ? s[0] / (double)epoch_samples : 0;
        t->res->train_accuracy = epoch_samples ? s[1] / (double)epoch_samples : 0;
        t->res->test_loss = test_loss;
        t->res->test_accuracy = test_acc;
        if (rc == 0) {
            char extra[128] = "";
            if (o->loss_scale != CLG_LOSS_SCALE_NONE) {
                clg_stats st = clg_stats_init();
                if (clg_model_stats(t->run.model, 1, &st) == CLG_SUCCESS)
                    snprintf(extra, sizeof extra, "  loss scale %g  skipped %" PRIu64,
                             st.loss_scale, st.skipped_updates);
            }
            progress_log(&t->run.prog,
                         "epoch %" PRIu64 "/%" PRIu64 ": loss %.4f  train acc %.4f  test acc "
                         "%.4f  test loss %.4f  %.1f s  %.0f samples/s (%d ranks)%s\n",
                         t->run.epoch + 1, epochs_total, t->res->train_loss,
                         t->res->train_accuracy, test_acc, test_loss, secs,
                         secs > 0 ? epoch_samples / secs : 0.0, d->size, extra);
        }
        run_next_epoch(&t->run);
    }
    return trainer_dist_agree(t, rc); /* rank 0's last evaluation */
}
