/* reduce.c - the ordered sum of the accumulators over ranks, host-staged.
 *
 * The flat accumulator (tensor order, padding excluded) is processed in
 * rounds of ROUND elements, so that host memory stays a few MiB whatever
 * the model. In each round every rank owns a slice (rank r: elements
 * [len*r/R, len*(r+1)/R) of the round); MPI_Alltoallv brings the owner the
 * R contributions to its slice, the owner adds them in rank order
 * 0..R-1 (fixed, unlike MPI_Allreduce's, which the standard leaves to the
 * implementation and which may differ by rank count, message size or
 * algorithm), and MPI_Allgatherv gives every rank the summed slices of
 * all: bitwise the same accumulator on every rank. */
#include "dist.h"

#include <stdlib.h>
#include <string.h>

/* 1 Mi elements: 4 MiB a round per buffer. */
#define ROUND ((size_t)1 << 20)

static size_t slice_begin(size_t len, int r, int size)
{
    return (size_t)((unsigned long long)len * (unsigned)r / (unsigned)size);
}

clg_status clg__dist_reduce_init(clg_dist *d)
{
    size_t round = d->n < ROUND ? d->n : ROUND;
    size_t slice = round / (size_t)d->size + 1;
    return clg__dist_slots_init(d, round ? round : 1, slice * (size_t)d->size, slice);
}

/* Enqueues the copy of round i's accumulator into slot s, then its event. */
static cl_int read_round(const clg_dist *d, size_t i, dist_slot *s)
{
    size_t a = i * ROUND;
    size_t len = d->n - a < ROUND ? d->n - a : ROUND;
    cl_int err = clg__dist_copy(d, d->spans, a, len, s->stage, 0);
    return err == CL_SUCCESS ? clg__dist_mark(d, s) : err;
}

void clg__dist_sum_ranks(const float *recv, size_t stride, int n, int R, float *sum)
{
    for (int k = 0; k < n; k++) {
        float s = recv[k];
        for (int r = 1; r < R; r++)
            s += recv[(size_t)r * stride + (size_t)k];
        sum[k] = s;
    }
}

clg_status clg__dist_reduce(clg_dist *d)
{
    const int R = d->size, me = d->rank;
    int *cnt = d->xcount;
    int *displ = cnt + R, *rcnt = cnt + 2 * R, *rdispl = cnt + 3 * R;
    clg_status st = CLG_SUCCESS;
    cl_int cl_err = CL_SUCCESS; /* the first local OpenCL failure */
    clg_dist_counters *c = &d->counters;
    const size_t rounds = (d->n + ROUND - 1) / ROUND;
    if (rounds > 0)
        cl_err = read_round(d, 0, &d->slot[0]);
    for (size_t a = 0, i = 0; a < d->n; a += ROUND, i++) {
        size_t len = d->n - a < ROUND ? d->n - a : ROUND;
        for (int r = 0; r < R; r++) {
            displ[r] = (int)slice_begin(len, r, R);
            cnt[r] = (int)(slice_begin(len, r + 1, R) - (size_t)displ[r]);
        }
        const int mine = cnt[me];
        for (int r = 0; r < R; r++) {
            rcnt[r] = mine;
            rdispl[r] = r * mine;
        }
        dist_slot *s = clg__dist_round_begin(d, i, rounds, read_round, &cl_err, NULL, len);
        double t1 = MPI_Wtime();
        MPI_Request req;
        int err = clg__dist_wait(d, MPI_Ialltoallv(s->stage, cnt, displ, MPI_FLOAT, s->recv,
                                                   rcnt, rdispl, MPI_FLOAT, d->comm, &req),
                                 &req);
        double t2 = MPI_Wtime();
        if (err == MPI_SUCCESS)
            clg__dist_sum_ranks(s->recv, (size_t)mine, mine, R, s->sum);
        double t3 = MPI_Wtime();
        if (err == MPI_SUCCESS)
            err = clg__dist_wait(d, MPI_Iallgatherv(s->sum, mine, MPI_FLOAT, s->stage, cnt,
                                                    displ, MPI_FLOAT, d->comm, &req),
                                 &req);
        double t4 = MPI_Wtime();
        if (err != MPI_SUCCESS) {
            char e[256];
            st = clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                                "clg_dist_step: the exchange of the accumulator failed on rank "
                                "%d (elements %zu..%zu): %s",
                                me, a, a + len, clg__dist_mpi_string(d, err, e, sizeof e));
            break;
        }
        if (cl_err == CL_SUCCESS) /* waited for at the next round's await, or below */
            cl_err = clg__dist_copy(d, d->spans, a, len, s->stage, 1);
        uint64_t others = (uint64_t)(len - (size_t)mine) * sizeof(float);
        uint64_t own = (uint64_t)mine * (uint64_t)(R - 1) * sizeof(float);
        c->last_bytes_sent += others + own;
        c->last_bytes_received += own + others;
        c->last_comm_seconds += (t2 - t1) + (t4 - t3);
    }
    cl_err = clg__dist_rounds_end(d, cl_err);
    if (st == CLG_SUCCESS && cl_err != CL_SUCCESS)
        st = clg__dist_fail(clg__dist_model(d), (clg_status)cl_err,
                            "clg_dist_step: staging the accumulator through the host failed on "
                            "rank %d: %s",
                            me, clg_status_string((clg_status)cl_err));
    return st;
}
