/* agree.c - failures recorded on the model's context, and the agreement of all ranks on the
 * outcome of a collective step: one MPI_Allgather of a small record per
 * rank (its status, its message, a value), from which every rank derives
 * the same verdict and the same rank-ordered sum of the values. */
#include "dist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clg_status clg__dist_fail(const clg_model *m, clg_status st, const char *fmt, ...)
{
    /* fmt may print the context's last message itself: format aside */
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return clg_context_fail(m ? clg_model_context(m) : NULL, st, buf);
}

const char *clg__dist_mpi_string(int err, char *buf, size_t size)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", err);
    snprintf(buf, size, "%s", s);
    return buf;
}

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
    agree_record *all = calloc((size_t)size, sizeof *all);
    if (all == NULL) /* 256 bytes a rank: a host this short cannot go on anyway */
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "%s: no host memory to agree", who);
    double t0 = MPI_Wtime();
    int err = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                            comm);
    if (count && d != NULL) {
        double dt = MPI_Wtime() - t0;
        d->counters.last_comm_seconds += dt;
        d->counters.last_bytes_sent += (uint64_t)(size - 1) * sizeof mine;
        d->counters.last_bytes_received += (uint64_t)(size - 1) * sizeof mine;
    }
    if (err != MPI_SUCCESS) {
        free(all);
        char e[256];
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                              "%s: MPI_Allgather (agreement) failed on rank %d: %s", who, rank,
                              clg__dist_mpi_string(err, e, sizeof e));
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
