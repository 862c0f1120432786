/* train_mpi.c - the MPI side of clgrad-train --dist (dist_hooks.h, built
 * only with libclgrad-mpi): agreement on every rank's status, the
 * deterministic sum of the trainer's small counters, and libclgrad-mpi's
 * data-parallel model (DDP or ZeRO-1) and its collective checkpoint. The trainer talks on its own duplicate of
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN, so that an MPI failure is a
 * message and an exit code, not an abort without one. */
#include "train_mpi.h"

#include "clgrad_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_LEN 1024

typedef struct mpi_state {
    MPI_Comm comm;
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

/* statuses[r] of every rank: 0 if all are 0, else -1 with the lowest
 * failed rank's message (broadcast from it) in err on every rank. */
static int settle(mpi_state *m, const int *statuses, int size, char *err, size_t errlen)
{
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
    int e = MPI_Bcast(msg, MSG_LEN, MPI_CHAR, failed, m->comm);
    if (e != MPI_SUCCESS)
        return mpi_fail(e, "agreeing on a failure", err, errlen);
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
    int e = MPI_Allgather(mine, 2, MPI_UNSIGNED, all, 2, MPI_UNSIGNED, m->comm);
    int rc;
    if (e != MPI_SUCCESS) {
        rc = mpi_fail(e, "agreeing on the ranks' status", err, errlen);
    } else {
        for (int r = 0; r < d->size; r++)
            st[r] = (int)all[2 * r];
        if (flags)
            *flags = all[1];
        rc = settle(m, st, d->size, err, errlen);
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
    int e = MPI_Allgather(mine, (int)w, MPI_FLOAT, all, (int)w, MPI_FLOAT, m->comm);
    if (e != MPI_SUCCESS) {
        rc = mpi_fail(e, "summing the loss across ranks", err, errlen);
        goto out;
    }
    for (int r = 0; r < d->size; r++)
        st[r] = all[w * (size_t)r] != 0.0f;
    rc = settle(m, st, d->size, err, errlen);
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
    clg_status st =
        clg_dist_create(model, m->comm, d->zero1 ? CLG_DIST_ZERO1 : CLG_DIST_DDP, &m->dist);
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
    MPI_Comm_free(&m->comm);
    free(m);
    d->state = NULL;
}
