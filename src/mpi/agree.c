/* agree.c - the agreement of all ranks on the outcome of a collective
 * step: one MPI_Allgather of a small record per rank (its status, its
 * message, a value), from which every rank derives the same verdict and
 * the same rank-ordered sum of the values. */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each rank contributes: fixed size, so one MPI_Allgather. */
typedef struct agree_record {
    int32_t status;
    int32_t pad;
    double value;
    char msg[240];
} agree_record;

clg_status clg__dist_agree(clg_dist *d, MPI_Comm comm, int rank, int size, clg_status st,
                           const char *msg, double value, double *sum, bool count,
                           const char *who)
{
    agree_record mine;
    memset(&mine, 0, sizeof mine);
    mine.status = (int32_t)st;
    mine.value = value;
    if (st != CLG_SUCCESS)
        snprintf(mine.msg, sizeof mine.msg, "%s", msg ? msg : clg_status_string(st));
    char e[256];
    if (clg__watch_expired(d->watch)) /* nobody to agree with any more */
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO, "%s: not agreed: %s", who,
                              clg__dist_mpi_string(d, DIST_TIMED_OUT, e, sizeof e));
    agree_record *all = calloc((size_t)size, sizeof *all);
    if (all == NULL) /* 256 bytes a rank: a host this short cannot go on anyway */
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "%s: no host memory to agree", who);
    double t0 = MPI_Wtime();
    MPI_Request req;
    int err = clg__dist_wait(d, MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all,
                                               (int)sizeof mine, MPI_BYTE, comm, &req),
                             &req);
    if (count && d != NULL) {
        double dt = MPI_Wtime() - t0;
        d->counters.last_comm_seconds += dt;
        d->counters.last_bytes_sent += (uint64_t)(size - 1) * sizeof mine;
        d->counters.last_bytes_received += (uint64_t)(size - 1) * sizeof mine;
    }
    if (err != MPI_SUCCESS) {
        if (err != DIST_TIMED_OUT) /* else the request may still write into it */
            free(all);
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                              "%s: MPI_Iallgather (agreement) failed on rank %d: %s", who, rank,
                              clg__dist_mpi_string(d, err, e, sizeof e));
    }
    clg_status verdict = CLG_SUCCESS;
    double s = 0.0;
    for (int r = 0; r < size; r++) {
        s += all[r].value; /* rank order: the same bits on every rank */
        if (verdict == CLG_SUCCESS && all[r].status != CLG_SUCCESS) {
            verdict = (clg_status)all[r].status;
            all[r].msg[sizeof all[r].msg - 1] = '\0';
            clg__dist_fail(clg__dist_model(d), verdict, "%s: rank %d of %d failed: %s", who, r,
                           size, all[r].msg);
        }
    }
    free(all);
    if (sum != NULL)
        *sum = s;
    return verdict;
}
