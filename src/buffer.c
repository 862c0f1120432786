/* buffer.c - device buffers charged to the context's budget, and kernel
 * launches counted per context. */
#include "internal.h"

#include <stdio.h>

/* Charges bytes to the budget, or fails naming the numbers. */
static clg_status charge(clg_context *ctx, uint64_t bytes)
{
    clg_status st = CLG_SUCCESS;
    mtx_lock(&ctx->lock);
    if (bytes > UINT64_MAX - ctx->in_use || (ctx->budget && ctx->in_use + bytes > ctx->budget))
        st = clg__fail(ctx, CLG_ERR_OVER_BUDGET,
                       "clg__buffer_create: %llu bytes requested, %llu in use, budget %llu",
                       (unsigned long long)bytes, (unsigned long long)ctx->in_use,
                       (unsigned long long)ctx->budget);
    else
        ctx->in_use += bytes;
    mtx_unlock(&ctx->lock);
    return st;
}

static void refund(clg_context *ctx, uint64_t bytes)
{
    mtx_lock(&ctx->lock);
    ctx->in_use -= bytes < ctx->in_use ? bytes : ctx->in_use;
    mtx_unlock(&ctx->lock);
}

clg_status clg__buffer_create(clg_context *ctx, uint64_t bytes, cl_mem *out)
{
    if (!ctx || !out)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "clg__buffer_create: %s is NULL",
                         !ctx ? "ctx" : "out");
    *out = NULL;
    if (bytes == 0 || bytes > ctx->max_alloc || bytes > SIZE_MAX)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg__buffer_create: %llu bytes is outside 1..%llu (max allocation)",
                         (unsigned long long)bytes, (unsigned long long)ctx->max_alloc);
    clg_status st = charge(ctx, bytes);
    if (st != CLG_SUCCESS)
        return st;

    if (clg__fault_hit(CLG_FAULT_ALLOC)) {
        refund(ctx, bytes);
        return clg__fail(ctx, CLG_ERR_OUT_OF_DEVICE_MEMORY,
                         "clg__buffer_create: clCreateBuffer(%llu bytes) failed: injected fault",
                         (unsigned long long)bytes);
    }
    cl_int err;
    cl_mem mem = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        refund(ctx, bytes);
        return clg__cl_alloc_fail(ctx, err, "clg__buffer_create", "clCreateBuffer");
    }

    /* Zero the whole buffer now and wait: drivers that allocate lazily fail
     * here rather than in the middle of a training step, and the core relies
     * on a new buffer reading as zeros. The pattern must divide the size. */
    static const cl_uint zero = 0;
    size_t pattern = bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
    const char *call = "clEnqueueFillBuffer";
    if (clg__fault_hit(CLG_FAULT_ENQUEUE)) {
        err = CL_OUT_OF_RESOURCES;
        call = "clEnqueueFillBuffer (injected fault)";
    } else {
        err = clEnqueueFillBuffer(ctx->queue, mem, &zero, pattern, 0, (size_t)bytes, 0, NULL, NULL);
    }
    if (err == CL_SUCCESS) {
        call = "clFinish";
        err = clFinish(ctx->queue);
    }
    if (err != CL_SUCCESS) {
        clReleaseMemObject(mem);
        refund(ctx, bytes);
        return clg__cl_alloc_fail(ctx, err, "clg__buffer_create", call);
    }

    mtx_lock(&ctx->lock);
    if (ctx->in_use > ctx->peak)
        ctx->peak = ctx->in_use;
    mtx_unlock(&ctx->lock);
    *out = mem;
    return CLG_SUCCESS;
}

void clg__buffer_release(clg_context *ctx, cl_mem mem, uint64_t bytes)
{
    if (!mem)
        return;
    clReleaseMemObject(mem);
    if (ctx)
        refund(ctx, bytes);
}

clg_status clg__args_failed(clg_context *ctx, cl_int err, const char *list, const char *arg)
{
    char what[96];
    snprintf(what, sizeof what, "%s: setting kernel argument %s", list, arg ? arg : "?");
    return clg__cl_fail(ctx, err, what, "clSetKernelArg");
}

clg_status clg__launch(clg_context *ctx, cl_kernel kernel, size_t global, size_t local,
                       const char *what)
{
    if (!ctx || !kernel)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: clg__launch: %s is NULL",
                         what ? what : "launch", !ctx ? "ctx" : "kernel");
    if (global == 0)
        return CLG_SUCCESS; /* nothing to do; an empty NDRange is an error in OpenCL 1.x */
    /* Pad to whole work-groups; every kernel guards with if (i >= n) return. */
    if (local > 0 && global % local != 0) {
        if (global > SIZE_MAX - local)
            return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: global size %zu too large",
                             what ? what : "launch", global);
        global += local - global % local;
    }
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(ctx, CL_OUT_OF_RESOURCES, what,
                            "clEnqueueNDRangeKernel (injected fault)");
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kernel, 1, NULL, &global,
                                        local > 0 ? &local : NULL, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(ctx, err, what, "clEnqueueNDRangeKernel");
    mtx_lock(&ctx->lock);
    ctx->launches++;
    mtx_unlock(&ctx->lock);
    return CLG_SUCCESS;
}

size_t clg__stream_local_size(clg_context *ctx, cl_kernel kernel)
{
    /* About 256 work-items: large enough to hide latency on GPUs, a
     * multiple of the SIMD width (PoCL's CPU device vectorizes across
     * work-items), small enough for every device we know. */
    const size_t target = 256;
    size_t multiple = ctx->info.preferred_work_group_multiple;
    if (multiple == 0)
        multiple = 1;
    size_t local = multiple >= target ? multiple : multiple * (target / multiple);
    size_t max = ctx->info.max_work_group_size;
    size_t kmax = 0;
    if (kernel &&
        clGetKernelWorkGroupInfo(kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                 NULL) == CL_SUCCESS &&
        kmax > 0 && (max == 0 || kmax < max))
        max = kmax;
    if (max > 0 && local > max) {
        /* the largest multiple of the preferred size that fits, else max */
        local = max >= multiple ? max - max % multiple : max;
    }
    return local > 0 ? local : 1;
}
