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
    d->stage = malloc((round ? round : 1) * sizeof(float));
    d->recv = malloc(slice * (size_t)d->size * sizeof(float));
    d->sum = malloc(slice * sizeof(float));
    if (!d->stage || !d->recv || !d->sum) {
        clg__dist_reduce_free(d);
        return clg__dist_fail(CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_create: no host memory for the %zu-element round "
                              "buffers",
                              round);
    }
    return CLG_SUCCESS;
}

void clg__dist_reduce_free(clg_dist *d)
{
    free(d->stage);
    free(d->recv);
    free(d->sum);
    d->stage = d->recv = d->sum = NULL;
}

/* Enqueues the copies of flat elements [a, a + len) between the
 * accumulator and host, then waits for them. */
static cl_int stage(clg_dist *d, size_t a, size_t len, float *host, int write)
{
    cl_command_queue q = clg_context_queue(clg_model_context(d->model));
    cl_int err = CL_SUCCESS;
    for (size_t s = 0; s < d->n_spans && err == CL_SUCCESS; s++) {
        const dist_span *sp = &d->spans[s];
        size_t lo = sp->flat > a ? sp->flat : a;
        size_t hi = sp->flat + sp->count < a + len ? sp->flat + sp->count : a + len;
        if (lo >= hi)
            continue;
        size_t dev = (sp->offset + (lo - sp->flat)) * sizeof(float);
        size_t bytes = (hi - lo) * sizeof(float);
        float *h = host + (lo - a);
        err = write ? clEnqueueWriteBuffer(q, sp->mem, CL_FALSE, dev, bytes, h, 0, NULL, NULL)
                    : clEnqueueReadBuffer(q, sp->mem, CL_FALSE, dev, bytes, h, 0, NULL, NULL);
    }
    cl_int fin = clFinish(q);
    return err != CL_SUCCESS ? err : fin;
}

clg_status clg__dist_reduce(clg_dist *d)
{
    const int R = d->size, me = d->rank;
    int *cnt = malloc(4 * (size_t)R * sizeof(int));
    if (cnt == NULL)
        return clg__dist_fail(CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_step: no host memory for %d counts", 4 * R);
    int *displ = cnt + R, *rcnt = cnt + 2 * R, *rdispl = cnt + 3 * R;
    clg_status st = CLG_SUCCESS;
    cl_int cl_err = CL_SUCCESS; /* the first local OpenCL failure */
    clg_dist_counters *c = &d->counters;
    for (size_t a = 0; a < d->n; a += ROUND) {
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
        double t0 = MPI_Wtime();
        if (cl_err == CL_SUCCESS)
            cl_err = stage(d, a, len, d->stage, 0);
        else /* stay in the exchange so that no rank waits on this one */
            memset(d->stage, 0, len * sizeof(float));
        double t1 = MPI_Wtime();
        int err = MPI_Alltoallv(d->stage, cnt, displ, MPI_FLOAT, d->recv, rcnt, rdispl,
                                MPI_FLOAT, d->comm);
        double t2 = MPI_Wtime();
        for (int i = 0; err == MPI_SUCCESS && i < mine; i++) {
            float s = d->recv[i];
            for (int r = 1; r < R; r++)
                s += d->recv[(size_t)r * (size_t)mine + (size_t)i];
            d->sum[i] = s;
        }
        double t3 = MPI_Wtime();
        if (err == MPI_SUCCESS)
            err = MPI_Allgatherv(d->sum, mine, MPI_FLOAT, d->stage, cnt, displ, MPI_FLOAT,
                                 d->comm);
        double t4 = MPI_Wtime();
        if (err != MPI_SUCCESS) {
            char e[256];
            st = clg__dist_fail(CLG_ERR_IO,
                                "clg_dist_step: the exchange of the accumulator failed on rank "
                                "%d (elements %zu..%zu): %s",
                                me, a, a + len, clg__dist_mpi_string(err, e, sizeof e));
            break;
        }
        if (cl_err == CL_SUCCESS)
            cl_err = stage(d, a, len, d->stage, 1);
        double t5 = MPI_Wtime();
        uint64_t others = (uint64_t)(len - (size_t)mine) * sizeof(float);
        uint64_t own = (uint64_t)mine * (uint64_t)(R - 1) * sizeof(float);
        c->last_bytes_sent += others + own;
        c->last_bytes_received += own + others;
        c->last_comm_seconds += (t2 - t1) + (t4 - t3);
        c->staging_seconds += (t1 - t0) + (t5 - t4);
    }
    free(cnt);
    if (st == CLG_SUCCESS && cl_err != CL_SUCCESS)
        st = clg__dist_fail((clg_status)cl_err,
                            "clg_dist_step: staging the accumulator through the host failed on "
                            "rank %d: %s",
                            me, clg_status_string((clg_status)cl_err));
    return st;
}
