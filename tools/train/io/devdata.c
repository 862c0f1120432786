/* devdata.c - data sets on the device (see devdata.h). */
#include "devdata.h"
#include "clgrad_advanced.h"

#include <stdlib.h>
#include <string.h>

uint64_t devdata_bytes(size_t n, size_t dim)
{
    return (uint64_t)n * dim + n + 4ull * n;
}

clg_status devdata_upload(clg_context *ctx, const dataset *d, size_t n, devdata *out)
{
    memset(out, 0, sizeof *out);
    if (n > d->count)
        n = d->count;
    uint64_t bytes = devdata_bytes(n, d->dim);
    clg_status st = clg_context_reserve(ctx, bytes);
    if (st != CLG_SUCCESS)
        return st;
    out->ctx = ctx;
    out->bytes = bytes;
    out->n = n;
    cl_context cl = clg_context_cl(ctx);
    int32_t *ident = malloc(n * sizeof *ident);
    if (!ident) {
        devdata_release(out);
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    for (size_t i = 0; i < n; i++)
        ident[i] = (int32_t)i;
    cl_int e1 = CL_SUCCESS, e2 = CL_SUCCESS, e3 = CL_SUCCESS;
    cl_mem_flags f = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    out->images = clCreateBuffer(cl, f, n * d->dim, (void *)d->images, &e1);
    out->labels = clCreateBuffer(cl, f, n, (void *)d->labels, &e2);
    out->idx = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, ident, &e3);
    free(ident);
    cl_int e = e1 != CL_SUCCESS ? e1 : e2 != CL_SUCCESS ? e2 : e3;
    if (e != CL_SUCCESS) {
        devdata_release(out);
        if (e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
            e == CL_INVALID_BUFFER_SIZE)
            return CLG_ERR_OUT_OF_DEVICE_MEMORY;
        return (clg_status)e;
    }
    return CLG_SUCCESS;
}

cl_int devdata_set_order(devdata *dd, const int32_t *idx)
{
    return clEnqueueWriteBuffer(clg_context_queue(dd->ctx), dd->idx, CL_TRUE, 0, dd->n * 4, idx,
                                0, NULL, NULL);
}

void devdata_release(devdata *dd)
{
    cl_mem all[] = {dd->images, dd->labels, dd->idx};
    for (int i = 0; i < 3; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
    if (dd->bytes && dd->ctx)
        clg_context_unreserve(dd->ctx, dd->bytes);
    memset(dd, 0, sizeof *dd);
}
