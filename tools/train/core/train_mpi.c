/* train_mpi.c - the MPI side of clgrad-train --dist (dist_hooks.h, built
 * only with libclgrad-mpi): agreement on every rank's status, the
 * deterministic sum of the trainer's small counters, and libclgrad-mpi's
 * data-parallel model (DDP or ZeRO-1) and its collective checkpoint. The
 * trainer talks on its own duplicate of MPI_COMM_WORLD with
 * MPI_ERRORS_RETURN, so that an MPI failure is a message and an exit code,
 * not an abort without one.
 *
 * --dist-timeout: every collective here is started non-blocking and
 * completed under one libclgrad-mpi watch (clgrad_mpi.h), which the
 * library's own waits share, so that a rank waiting anywhere answers the
 * roll call of another whose wait expired. A wait that gives up cannot be
 * undone (its request stays pending, the others are stuck too): the rank
 * prints the watch's message, naming the ranks that did not answer, and
 * ends the whole job with MPI_Abort. A rank gives up inside a wait only,
 * so rank 0 never cuts its own save short; another rank's abort may end
 * it mid-write, which leaves the last whole checkpoint (the writer renames
 * a complete temporary file over it) and a temporary file that the next
 * save to the path removes. Not covered: MPI_Init and the duplicate of
 * MPI_COMM_WORLD (before the options reach this side), and MPI_Finalize
 * after the last barrier (train_mpi_close). */
#include "train_mpi.h"

#include "clgrad_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_LEN 1024

typedef struct mpi_state {
    MPI_Comm comm;
    clg_dist_watch *watch; /* on comm: every wait of the run */
    clg_dist *dist;
    clg_context *ctx; /* the model's: libclgrad-mpi records failures there */
} mpi_state;

static int mpi_fail(int e, const char *what, char *err, size_t errlen)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(e, s, &n) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", e);
    snprintf(err, errlen, "%s: %s", what, s);
    return -1;
}

/* The watch with the run's --dist-timeout (set at each agreement point). */
static clg_dist_watch *watch(train_dist_hooks *d)
{
    mpi_state *m = d->state;
    clg_dist_watch_set_timeout(m->watch, d->timeout_s); /* in the flag's range */
    return m->watch;
}

/* After a wait that gave up: the one message, and the end of every rank. */
static void abort_if_expired(const mpi_state *m)
{
    const char *why = clg_dist_watch_expired(m->watch);
    if (!why)
        return;
    fprintf(stderr, "clgrad-train: --dist-timeout: %s; aborting the job\n", why);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Completes the collective that `started` (its MPI code) began on the
 * trainer's communicator: 0, or -1 with what failed in err. */
static int finish(train_dist_hooks *d, int started, MPI_Request *req, const char *what,
                  char *err, size_t errlen)
{
    if (started != MPI_SUCCESS)
        return mpi_fail(started, what, err, errlen);
    clg_status st = clg_dist_watch_wait(watch(d), req);
    abort_if_expired(d->state);
    if (st != CLG_SUCCESS) {
        snprintf(err, errlen, "%s: %s", what, clg_last_error(NULL));
        return -1;
    }
    return 0;
}

/* statuses[r] of every rank: 0 if all are 0, else -1 with the lowest
 * failed rank's message (broadcast from it) in err on every rank. */
static int settle(train_dist_hooks *d, const int *statuses, int size, char *err, size_t errlen)
{
    mpi_state *m = d->state;
    int failed = -1;
    for (int r = 0; r < size && failed < 0; r++)
        if (statuses[r])
            failed = r;
    if (failed < 0)
        return 0;
    char msg[MSG_LEN] = "";
    int me;
    MPI_Comm_rank(m->comm, &me);
    if (me == failed)
        snprintf(msg, sizeof msg, "%s", err && err[0] ? err : "failed");
    MPI_Request req;
    if (finish(d, MPI_Ibcast(msg, MSG_LEN, MPI_CHAR, failed, m->comm, &req), &req,
               "agreeing on a failure", err, errlen) != 0)
        return -1;
    msg[MSG_LEN - 1] = 0;
    snprintf(err, errlen, "rank %d: %s", failed, msg);
    return -1;
}

static int agree(train_dist_hooks *d, int status, unsigned *flags, char *err, size_t errlen)
{
    mpi_state *m = d->state;
    unsigned mine[2] = {status != 0, flags ? *flags : 0};
    unsigned *all = malloc(2 * (size_t)d->size * sizeof *all);
    int *st = malloc((size_t)d->size * sizeof *st);
    if (!all || !st) {
        free(all);
        free(st);
        snprintf(err, errlen, "out of host memory");
        return -1; /* cannot take part: the other ranks wait; mpirun ends them when this exits */
    }
    MPI_Request req;
    int rc = finish(d, MPI_Iallgather(mine, 2, MPI_UNSIGNED, all, 2, MPI_UNSIGNED, m->comm, &req),
                    &req, "agreeing on the ranks' status", err, errlen);
    if (rc == 0) {
        for (int r = 0; r < d->size; r++)
            st[r] = (int)all[2 * r];
        if (flags)
            *flags = all[1];
        rc = settle(d, st, d->size, err, errlen);
    }
    free(all);
    free(st);
    return rc;
}

static int sum(train_dist_hooks *d, int status, float *s, int n, char *err, size_t errlen)
{
    mpi_state *m = d->state;
    size_t w = (size_t)n + 1; /* the status, then the values */
    float *mine = malloc(w * sizeof *mine);
    float *all = malloc(w * (size_t)d->size * sizeof *all);
    int *st = malloc((size_t)d->size * sizeof *st);
    int rc = -1;
    if (!mine || !all || !st) {
        snprintf(err, errlen, "out of host memory");
        goto out;
    }
    mine[0] = status != 0 ? 1.0f : 0.0f;
    for (int i = 0; i < n; i++)
        mine[1 + i] = status ? 0.0f : s[i];
    MPI_Request req;
    if (finish(d, MPI_Iallgather(mine, (int)w, MPI_FLOAT, all, (int)w, MPI_FLOAT, m->comm, &req),
               &req, "summing the loss across ranks", err, errlen) != 0)
        goto out;
    for (int r = 0; r < d->size; r++)
        st[r] = all[w * (size_t)r] != 0.0f;
    rc = settle(d, st, d->size, err, errlen);
    if (rc == 0)
        for (int i = 0; i < n; i++) {
            double acc = 0; /* rank order: bitwise the same on every rank */
            for (int r = 0; r < d->size; r++)
                acc += all[w * (size_t)r + 1 + (size_t)i];
            s[i] = (float)acc;
        }
out:
    free(mine);
    free(all);
    free(st);
    return rc;
}

static int start(train_dist_hooks *d, clg_model *model, char *err, size_t errlen)
{
    mpi_state *m = d->state;
    m->ctx = clg_model_context(model);
    clg_status st = clg_dist_create_watched(model, m->comm,
                                            d->zero1 ? CLG_DIST_ZERO1 : CLG_DIST_DDP, watch(d),
                                            &m->dist);
    abort_if_expired(m);
    if (st != CLG_SUCCESS) {
        snprintf(err, errlen, "clg_dist_create: %s (%s)", clg_last_error(m->ctx),
                 clg_status_string(st));
        m->dist = NULL;
        return -1;
    }
    return 0;
}

static int step(train_dist_hooks *d, const clg_grads *grads, float weight, int *updated,
                char *err, size_t errlen)
{
    mpi_state *m = d->state;
    clg_status st = clg_dist_step(m->dist, grads, weight, updated);
    abort_if_expired(m);
    if (st != CLG_SUCCESS) {
        snprintf(err, errlen, "clg_dist_step: %s (%s)", clg_last_error(m->ctx),
                 clg_status_string(st));
        return -1;
    }
    return 0;
}

static clg_status save(train_dist_hooks *d, const char *path, const char *const *keys,
                       const char *const *values, size_t n, char *err, size_t errlen)
{
    mpi_state *m = d->state;
    clg_status st = clg_dist_checkpoint_save(m->dist, path, keys, values, n);
    abort_if_expired(m);
    if (st != CLG_SUCCESS)
        snprintf(err, errlen, "%s", clg_last_error(m->ctx));
    return st;
}

static void stop(train_dist_hooks *d)
{
    mpi_state *m = d->state;
    if (m->dist)
        clg_dist_destroy(m->dist);
    m->dist = NULL;
}

int train_mpi_open(train_dist_hooks *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    mpi_state *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int e = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    if (e != MPI_SUCCESS) {
        free(m);
        return mpi_fail(e, "MPI_Comm_dup", err, errlen);
    }
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    if (clg_dist_watch_create(m->comm, &m->watch) != CLG_SUCCESS) {
        snprintf(err, errlen, "%s", clg_last_error(NULL));
        MPI_Comm_free(&m->comm);
        free(m);
        return -1;
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(m->comm, &rank);
    MPI_Comm_size(m->comm, &size);
    *d = (train_dist_hooks){.rank = rank, .size = size, .state = m, .agree = agree, .sum = sum,
                            .start = start, .step = step, .stop = stop, .save = save};
    return 0;
}

void train_mpi_close(train_dist_hooks *d)
{
    mpi_state *m = d->state;
    if (!m)
        return;
    stop(d);
    /* every rank here before any enters MPI_Finalize, which waits for all
     * without a deadline (a failure here changes nothing: the run is over) */
    char err[256];
    MPI_Request req;
    finish(d, MPI_Ibarrier(m->comm, &req), &req, "the last barrier", err, sizeof err);
    clg_dist_watch_destroy(m->watch);
    MPI_Comm_free(&m->comm);
    free(m);
    d->state = NULL;
}
