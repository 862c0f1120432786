/* clutil.c - error messages, work-group sizes, buffers and kernels of the
 * bench's own OpenCL calls (see clutil.h). */
#include "clutil.h"

#include <stdio.h>

int bench_cl_ok(cl_int err, const char *what)
{
    if (err == CL_SUCCESS)
        return 1;
    fprintf(stderr, "clgrad-bench: %s: %s (%d)\n", what,
            clg_status_string((clg_status)err), (int)err);
    return 0;
}

int bench_clg_ok(const clg_context *ctx, clg_status st, const char *what)
{
    if (st == CLG_SUCCESS)
        return 1;
    fprintf(stderr, "clgrad-bench: %s: %s: %s\n", what, clg_status_string(st),
            clg_last_error(ctx));
    return 0;
}

size_t bench_local_size(cl_kernel kernel, cl_device_id device, size_t want)
{
    size_t kmax = 0, mult = 1, dmax = 0;
    if (clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                 &kmax, NULL) != CL_SUCCESS)
        return 0;
    if (clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                 sizeof mult, &mult, NULL) != CL_SUCCESS || mult == 0)
        mult = 1;
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dmax, &dmax, NULL)
        != CL_SUCCESS)
        return 0;
    size_t local = want;
    if (local > kmax)
        local = kmax;
    if (local > dmax)
        local = dmax;
    if (local >= mult)
        local -= local % mult;
    return local ? local : 1;
}

size_t bench_round_up(size_t global, size_t local)
{
    return (global + local - 1) / local * local;
}

int bench_filled_buffer(clg_context *ctx, size_t bytes, const void *pattern,
                        size_t pattern_size, const char *who, cl_mem *out)
{
    char what[64];
    cl_int err;
    *out = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    snprintf(what, sizeof what, "%s clCreateBuffer", who);
    if (!bench_cl_ok(err, what))
        return -1;
    err = clEnqueueFillBuffer(clg_context_queue(ctx), *out, pattern, pattern_size, 0, bytes, 0,
                              NULL, NULL);
    snprintf(what, sizeof what, "%s clEnqueueFillBuffer", who);
    return bench_cl_ok(err, what) ? 0 : -1;
}

void bench_release_mems(const cl_mem *mems, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
}

void bench_release_kernels(const cl_kernel *kernels, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
}
