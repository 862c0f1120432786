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

int bench_stream_init(bench_stream *s, clg_context *ctx, uint64_t n, unsigned vw, size_t wg)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->vw = vw ? vw : 4;
    s->n = n / s->vw * s->vw;
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

    char options[64];
    snprintf(options, sizeof options, "-DVW=%u", s->vw);
    cl_program prog;
    if (!bench_clg_ok(ctx, clg_context_program(ctx, "stream", options, &prog, NULL),
                      "STREAM program"))
        goto fail;
    cl_int err;
    s->copy = clCreateKernel(prog, "stream_copy", &err);
    if (!bench_cl_ok(err, "clCreateKernel(stream_copy)"))
        goto fail;
    s->triad = clCreateKernel(prog, "stream_triad", &err);
    if (!bench_cl_ok(err, "clCreateKernel(stream_triad)"))
        goto fail;

    cl_ulong nv = s->n / s->vw;
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
        goto fail;
    s->local = bench_local_size(s->triad, clg_context_device(ctx), wg ? wg : 1024);
    if (!s->local)
        goto fail;
    s->global = bench_round_up((size_t)nv, s->local);

    /* warm-up: first launches pay for code generation and page faults */
    if (bench_stream_copy(s) < 0 || bench_stream_triad(s) < 0)
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

void bench_stream_free(bench_stream *s)
{
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
