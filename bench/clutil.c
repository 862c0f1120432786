/* clutil.c - error messages and work-group sizes for the bench's kernels. */
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
