/* stream.c - STREAM copy and triad (cl/stream.cl) on clgrad's context. */
#include "stream.h"

#include "clutil.h"
#include "timing.h"

#include <stdio.h>
#include <string.h>

static int make_buffer(bench_stream *s, cl_mem *out, float value)
{
    cl_int err;
    size_t bytes = (size_t)s->n * sizeof(float);
    *out = clCreateBuffer(clg_context_cl(s->ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!bench_cl_ok(err, "STREAM clCreateBuffer"))
        return -1;
    /* touch every page now, so that first-use costs stay out of the reps */
    err = clEnqueueFillBuffer(clg_context_queue(s->ctx), *out, &value, sizeof value, 0, bytes,
                              0, NULL, NULL);
    return bench_cl_ok(err, "STREAM clEnqueueFillBuffer") ? 0 : -1;
}

/* Builds copy and triad for vector width vw and sets their arguments. */
static int build_kernels(bench_stream *s, unsigned vw, size_t wg)
{
    if (s->copy)
        clReleaseKernel(s->copy);
    if (s->triad)
        clReleaseKernel(s->triad);
    s->copy = s->triad = NULL;
    s->vw = vw;
    char options[64];
    snprintf(options, sizeof options, "-DVW=%u", vw);
    cl_program prog;
    if (!bench_clg_ok(s->ctx, clg_context_program(s->ctx, "stream", options, &prog, NULL),
                      "STREAM program"))
        return -1;
    cl_int err;
    s->copy = clCreateKernel(prog, "stream_copy", &err);
    if (!bench_cl_ok(err, "clCreateKernel(stream_copy)"))
        return -1;
    s->triad = clCreateKernel(prog, "stream_triad", &err);
    if (!bench_cl_ok(err, "clCreateKernel(stream_triad)"))
        return -1;

    cl_ulong nv = s->n / vw;
    float scalar = 3.0f;
    err = clSetKernelArg(s->copy, 0, sizeof(cl_mem), &s->a);
    err |= clSetKernelArg(s->copy, 1, sizeof(cl_mem), &s->c);
    err |= clSetKernelArg(s->copy, 2, sizeof nv, &nv);
    err |= clSetKernelArg(s->triad, 0, sizeof(cl_mem), &s->a);
    err |= clSetKernelArg(s->triad, 1, sizeof(cl_mem), &s->b);
    err |= clSetKernelArg(s->triad, 2, sizeof(cl_mem), &s->c);
    err |= clSetKernelArg(s->triad, 3, sizeof scalar, &scalar);
    err |= clSetKernelArg(s->triad, 4, sizeof nv, &nv);
    if (!bench_cl_ok(err, "STREAM clSetKernelArg"))
        return -1;
    s->local = bench_local_size(s->triad, clg_context_device(s->ctx), wg);
    if (!s->local)
        return -1;
    s->global = bench_round_up((size_t)nv, s->local);
    /* warm-up: first launches pay for code generation and page faults */
    if (bench_stream_copy(s) < 0 || bench_stream_triad(s) < 0)
        return -1;
    return 0;
}

/* Median triad GB/s over a few repetitions (for picking a vector width). */
static double triad_median(bench_stream *s, unsigned reps)
{
    double x[16];
    if (reps > 16)
        reps = 16;
    for (unsigned r = 0; r < reps; r++)
        if ((x[r] = bench_stream_triad(s)) < 0)
            return -1.0;
    return bench_summarize(x, reps).median;
}

int bench_stream_init(bench_stream *s, clg_context *ctx, uint64_t n, unsigned vw, size_t wg)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->n = n / 16 * 16;
    if (s->n == 0) {
        fprintf(stderr, "clgrad-bench: STREAM: %llu elements is too few\n",
                (unsigned long long)n);
        return -1;
    }
    uint64_t bytes = 3 * s->n * sizeof(float);
    if (!bench_clg_ok(ctx, clg_context_reserve(ctx, bytes), "STREAM arrays"))
        return -1;
    s->reserved = bytes;

    if (make_buffer(s, &s->a, 1.0f) || make_buffer(s, &s->b, 2.0f)
        || make_buffer(s, &s->c, 0.5f))
        goto fail;
    if (!wg)
        wg = 1024;
    if (vw) {
        if (build_kernels(s, vw, wg))
            goto fail;
        return 0;
    }
    /* clpeak's way: the device's ceiling is the best vector width */
    static const unsigned widths[] = {4, 8, 16};
    unsigned best_vw = 4;
    double best = -1.0;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        if (build_kernels(s, widths[i], wg))
            goto fail;
        double gbs = triad_median(s, 5);
        if (gbs > best) {
            best = gbs;
            best_vw = widths[i];
        }
    }
    if (build_kernels(s, best_vw, wg))
        goto fail;
    return 0;
fail:
    bench_stream_free(s);
    return -1;
}

/* Runs kernel once and returns bytes / time in GB/s. */
static double run_once(bench_stream *s, cl_kernel kernel, double bytes, const char *what)
{
    cl_command_queue q = clg_context_queue(s->ctx);
    if (!bench_cl_ok(clFinish(q), what))
        return -1.0;
    double t0 = bench_now_ms();
    cl_int err = clEnqueueNDRangeKernel(q, kernel, 1, NULL, &s->global, &s->local, 0, NULL,
                                        NULL);
    if (!bench_cl_ok(err, what) || !bench_cl_ok(clFinish(q), what))
        return -1.0;
    double ms = bench_now_ms() - t0;
    return bytes / (ms * 1e6);
}

double bench_stream_copy(bench_stream *s)
{
    return run_once(s, s->copy, 8.0 * (double)s->n, "STREAM copy");
}

double bench_stream_triad(bench_stream *s)
{
    return run_once(s, s->triad, 12.0 * (double)s->n, "STREAM triad");
}

double bench_stream_triad_gridstride(bench_stream *s, unsigned groups)
{
    cl_int err = CL_SUCCESS;
    if (!s->triad_gs) {
        cl_program prog;
        if (!bench_clg_ok(s->ctx, clg_context_program(s->ctx, "stream", "-DVW=4", &prog, NULL),
                          "STREAM program"))
            return -1.0;
        s->triad_gs = clCreateKernel(prog, "stream_triad_gridstride", &err);
        if (!bench_cl_ok(err, "clCreateKernel(stream_triad_gridstride)"))
            return -1.0;
        cl_ulong nv = s->n / 4;
        float scalar = 3.0f;
        err = clSetKernelArg(s->triad_gs, 0, sizeof(cl_mem), &s->a);
        err |= clSetKernelArg(s->triad_gs, 1, sizeof(cl_mem), &s->b);
        err |= clSetKernelArg(s->triad_gs, 2, sizeof(cl_mem), &s->c);
        err |= clSetKernelArg(s->triad_gs, 3, sizeof scalar, &scalar);
        err |= clSetKernelArg(s->triad_gs, 4, sizeof nv, &nv);
        if (!bench_cl_ok(err, "STREAM clSetKernelArg"))
            return -1.0;
    }
    size_t local = bench_local_size(s->triad_gs, clg_context_device(s->ctx), 256);
    size_t global = local * groups;
    cl_command_queue q = clg_context_queue(s->ctx);
    if (!local || !bench_cl_ok(clFinish(q), "clFinish"))
        return -1.0;
    double t0 = bench_now_ms();
    err = clEnqueueNDRangeKernel(q, s->triad_gs, 1, NULL, &global, &local, 0, NULL, NULL);
    if (!bench_cl_ok(err, "STREAM triad (grid-stride)") || !bench_cl_ok(clFinish(q), "clFinish"))
        return -1.0;
    return 12.0 * (double)s->n / ((bench_now_ms() - t0) * 1e6);
}

void bench_stream_free(bench_stream *s)
{
    if (s->triad_gs)
        clReleaseKernel(s->triad_gs);
    if (s->copy)
        clReleaseKernel(s->copy);
    if (s->triad)
        clReleaseKernel(s->triad);
    if (s->a)
        clReleaseMemObject(s->a);
    if (s->b)
        clReleaseMemObject(s->b);
    if (s->c)
        clReleaseMemObject(s->c);
    if (s->reserved)
        clg_context_unreserve(s->ctx, s->reserved);
    memset(s, 0, sizeof *s);
}
