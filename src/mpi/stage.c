/* stage.c - the host side of the exchanges: round buffers in pinned host
 * memory, two sets of them, and the copies between device and host.
 *
 * Each set (a slot) is one OpenCL buffer allocated with
 * CL_MEM_ALLOC_HOST_PTR and mapped for the clg_dist's lifetime: the
 * memory a GPU driver can copy to and from by DMA, without a bounce
 * through pageable memory. If the device cannot map one, plain host
 * memory serves (the copies are only slower).
 *
 * Two slots let the rounds overlap: while the host is in MPI with round
 * i's data in one slot, the queue copies round i+1 into the other. The
 * queue is in order, so a copy into a slot enqueued after the previous
 * round's copy out of it cannot overtake it; the host waits for a round's
 * copies in (an event after them) before MPI reads the slot, and for
 * every copy out before the exchange returns. */
#include "dist.h"

#include <stdlib.h>
#include <string.h>

static cl_command_queue queue_of(const clg_dist *d)
{
    return clg_context_queue(clg_model_context(d->model));
}

static void slot_alloc(clg_dist *d, dist_slot *s, size_t floats)
{
    size_t bytes = floats * sizeof(float);
    cl_int err = CL_SUCCESS;
    cl_context cl = clg_context_cl(clg_model_context(d->model));
    s->mem = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    if (s->mem != NULL && err == CL_SUCCESS)
        s->host = clEnqueueMapBuffer(queue_of(d), s->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                     bytes, 0, NULL, NULL, &err);
    if (s->host != NULL && err == CL_SUCCESS) {
        s->pinned = true;
        return;
    }
    if (s->mem != NULL)
        clReleaseMemObject(s->mem);
    s->mem = NULL;
    s->host = malloc(bytes ? bytes : 1);
    s->pinned = false;
}

clg_status clg__dist_slots_init(clg_dist *d, size_t stage, size_t recv, size_t sum)
{
    for (int i = 0; i < 2; i++) {
        dist_slot *s = &d->slot[i];
        slot_alloc(d, s, stage + recv + sum);
        if (s->host == NULL)
            return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                                  "clg_dist_create: no host memory for the %zu-element round "
                                  "buffers",
                                  stage + recv + sum);
        s->stage = s->host;
        s->recv = s->stage + stage;
        s->sum = s->recv + recv;
    }
    return CLG_SUCCESS;
}

void clg__dist_slots_free(clg_dist *d)
{
    for (int i = 0; i < 2; i++) {
        dist_slot *s = &d->slot[i];
        if (s->ready != NULL)
            clReleaseEvent(s->ready);
        if (s->pinned) {
            clEnqueueUnmapMemObject(queue_of(d), s->mem, s->host, 0, NULL, NULL);
            clFinish(queue_of(d));
            clReleaseMemObject(s->mem);
        } else {
            free(s->host);
        }
        memset(s, 0, sizeof *s);
    }
}

bool clg__dist_pinned(const clg_dist *d) { return d->slot[0].pinned && d->slot[1].pinned; }

cl_int clg__dist_copy(const clg_dist *d, const dist_span *spans, uint64_t a, size_t len,
                      float *host, int write)
{
    cl_command_queue q = queue_of(d);
    cl_int err = CL_SUCCESS;
    for (size_t s = 0; s < d->n_spans && err == CL_SUCCESS; s++) {
        const dist_span *sp = &spans[s];
        uint64_t lo = sp->flat > a ? sp->flat : a;
        uint64_t hi = sp->flat + sp->count < a + len ? sp->flat + sp->count : a + len;
        if (lo >= hi)
            continue;
        size_t dev = (sp->offset + (size_t)(lo - sp->flat)) * sizeof(float);
        size_t bytes = (size_t)(hi - lo) * sizeof(float);
        float *h = host + (lo - a);
        err = write ? clEnqueueWriteBuffer(q, sp->mem, CL_FALSE, dev, bytes, h, 0, NULL, NULL)
                    : clEnqueueReadBuffer(q, sp->mem, CL_FALSE, dev, bytes, h, 0, NULL, NULL);
    }
    return err;
}

cl_int clg__dist_mark(const clg_dist *d, dist_slot *s)
{
    if (s->ready != NULL)
        clReleaseEvent(s->ready);
    s->ready = NULL;
    cl_command_queue q = queue_of(d);
    cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &s->ready);
    if (err == CL_SUCCESS)
        err = clFlush(q); /* start the copies now: MPI runs meanwhile */
    return err;
}

cl_int clg__dist_await(dist_slot *s)
{
    if (s->ready == NULL)
        return CL_SUCCESS;
    cl_int err = clWaitForEvents(1, &s->ready);
    cl_int status = CL_COMPLETE;
    if (err == CL_SUCCESS)
        err = clGetEventInfo(s->ready, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                             NULL);
    clReleaseEvent(s->ready);
    s->ready = NULL;
    return err != CL_SUCCESS ? err : status < 0 ? status : CL_SUCCESS;
}

cl_int clg__dist_drain(const clg_dist *d)
{
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2; i++) {
        cl_int e = clg__dist_await((dist_slot *)&d->slot[i]);
        err = err != CL_SUCCESS ? err : e;
    }
    cl_int fin = clFinish(queue_of(d));
    return err != CL_SUCCESS ? err : fin;
}

dist_slot *clg__dist_round_begin(clg_dist *d, size_t i, size_t rounds, dist_read_fn read,
                                 cl_int *cl_err, float *zero, size_t zero_floats)
{
    dist_slot *s = &d->slot[i % 2];
    double t0 = MPI_Wtime();
    if (*cl_err == CL_SUCCESS)
        *cl_err = clg__dist_await(s);
    if (*cl_err == CL_SUCCESS && i + 1 < rounds) /* runs while round i is in MPI */
        *cl_err = read(d, i + 1, &d->slot[(i + 1) % 2]);
    if (*cl_err != CL_SUCCESS) {
        clg__dist_drain(d);
        memset(zero != NULL ? zero : s->stage, 0, zero_floats * sizeof(float));
    }
    d->counters.staging_seconds += MPI_Wtime() - t0;
    return s;
}

cl_int clg__dist_rounds_end(clg_dist *d, cl_int cl_err)
{
    double t0 = MPI_Wtime();
    cl_int e = clg__dist_drain(d);
    d->counters.staging_seconds += MPI_Wtime() - t0;
    return cl_err != CL_SUCCESS ? cl_err : e;
}
