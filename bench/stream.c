/* stream.c - STREAM copy and triad (bench/cl/stream.cl) on clgrad's context: a
 * sweep over forms, vector widths and work-group sizes (clpeak's way: the
 * device's ceiling is the best shape), then single timed repetitions. */
#include "stream.h"
#include "clgrad_advanced.h"
#include "bench_kernels.h"

#include "clutil.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FORM_COPY, FORM_TRIAD, FORM_TRIAD_NT, FORM_TRIAD_INPLACE, N_FORMS };
static const char *const form_names[N_FORMS] = {"copy", "triad", "triad_nt", "triad_inplace"};
static const char *const kernel_names[N_FORMS] = {"stream_copy", "stream_triad",
                                                  "stream_triad_nt", "stream_triad_inplace"};

/* One STREAM array of value (every page touched now, so that first-use
 * costs stay out of the reps). */
/* Program "stream" (bench/cl/stream.cl) with options, through clgrad's
 * kernel cache; 0 when built, -1 with the message printed. */
static int stream_program(bench_stream *s, const char *options, cl_program *prog)
{
    clg_status st = clg_context_program_source(s->ctx, "stream", bench_kernel_source("stream"),
                                               options, prog, NULL);
    return bench_clg_ok(s->ctx, st, "STREAM program") ? 0 : -1;
}

static int make_buffer(bench_stream *s, cl_mem *out, float value)
{
    return bench_filled_buffer(s->ctx, (size_t)s->n * sizeof(float), &value, sizeof value,
                               "STREAM", out);
}

/* Copy: (a, c, n); triads: (a, b, c, s, n), n in vectors. */
static int set_args(bench_stream *s, cl_kernel k, int form, unsigned vw)
{
    cl_ulong nv = s->n / vw;
    float scalar = 3.0f;
    cl_int err;
    if (form == FORM_COPY) {
        err = clSetKernelArg(k, 0, sizeof(cl_mem), &s->a);
        err |= clSetKernelArg(k, 1, sizeof(cl_mem), &s->c);
        err |= clSetKernelArg(k, 2, sizeof nv, &nv);
    } else {
        err = clSetKernelArg(k, 0, sizeof(cl_mem), &s->a);
        err |= clSetKernelArg(k, 1, sizeof(cl_mem), &s->b);
        err |= clSetKernelArg(k, 2, sizeof(cl_mem), &s->c);
        err |= clSetKernelArg(k, 3, sizeof scalar, &scalar);
        err |= clSetKernelArg(k, 4, sizeof nv, &nv);
    }
    return bench_cl_ok(err, "STREAM clSetKernelArg") ? 0 : -1;
}

/* Runs k once and returns bytes / time in GB/s. */
static double run_once(bench_stream *s, const bench_stream_kernel *k)
{
    cl_command_queue q = clg_context_queue(s->ctx);
    if (!bench_cl_ok(clFinish(q), k->form))
        return -1.0;
    double t0 = bench_now_ms();
    cl_int err = clEnqueueNDRangeKernel(q, k->kernel, 1, NULL, &k->global, &k->local, 0, NULL,
                                        NULL);
    if (!bench_cl_ok(err, k->form) || !bench_cl_ok(clFinish(q), k->form))
        return -1.0;
    double ms = bench_now_ms() - t0;
    return k->bytes / (ms * 1e6);
}

typedef struct candidate {
    bench_stream_kernel k;
    int form;
    bench_samples x;
} candidate;

typedef struct sweep {
    cl_kernel kernels[N_FORMS * 5]; /* owned: one per (form, width) */
    size_t n_kernels;
    candidate cand[N_FORMS * 5 * 3];
    size_t n_cand;
} sweep;

static void sweep_free(sweep *w)
{
    for (size_t i = 0; i < w->n_kernels; i++)
        clReleaseKernel(w->kernels[i]);
    for (size_t i = 0; i < w->n_cand; i++)
        bench_samples_free(&w->cand[i].x);
    memset(w, 0, sizeof *w);
}

/* Adds the candidates of one (form, width) kernel at each work-group size;
 * sizes the kernel cannot take are clamped, duplicates dropped. */
static int add_candidates(bench_stream *s, sweep *w, cl_kernel kernel, int form, unsigned vw,
                          const size_t *wgs, size_t n_wgs)
{
    size_t first = w->n_cand;
    for (size_t i = 0; i < n_wgs; i++) {
        size_t local = bench_local_size(kernel, clg_context_device(s->ctx), wgs[i]);
        if (!local)
            return -1;
        int dup = 0;
        for (size_t j = first; j < w->n_cand; j++)
            dup |= w->cand[j].k.local == local;
        if (dup)
            continue;
        candidate *c = &w->cand[w->n_cand++];
        memset(c, 0, sizeof *c);
        c->form = form;
        c->k.kernel = kernel;
        snprintf(c->k.form, sizeof c->k.form, "%s", form_names[form]);
        c->k.vw = vw;
        c->k.local = local;
        c->k.global = bench_round_up((size_t)(s->n / vw), local);
        c->k.bytes = (form == FORM_COPY ? 8.0 : 12.0) * (double)s->n;
    }
    return 0;
}

/* Builds every (form, width) kernel and its candidates. */
static int build_sweep(bench_stream *s, sweep *w, unsigned vw, size_t wg)
{
    static const unsigned all_widths[] = {1, 2, 4, 8, 16};
    static const size_t all_wgs[] = {64, 256, 1024};
    const unsigned *widths = vw ? &vw : all_widths;
    size_t n_widths = vw ? 1 : sizeof all_widths / sizeof all_widths[0];
    const size_t *wgs = wg ? &wg : all_wgs;
    size_t n_wgs = wg ? 1 : sizeof all_wgs / sizeof all_wgs[0];
    int nt_missing = 0;
    for (size_t i = 0; i < n_widths; i++) {
        char options[64];
        snprintf(options, sizeof options, "-DVW=%u", widths[i]);
        cl_program prog;
        if (stream_program(s, options, &prog) != 0)
            return -1;
        for (int f = 0; f < N_FORMS; f++) {
            cl_int err;
            cl_kernel k = clCreateKernel(prog, kernel_names[f], &err);
            if (f == FORM_TRIAD_NT && err == CL_INVALID_KERNEL_NAME) {
                nt_missing = 1; /* no non-temporal stores on this compiler */
                continue;
            }
            if (!bench_cl_ok(err, kernel_names[f]))
                return -1;
            w->kernels[w->n_kernels++] = k;
            if (set_args(s, k, f, widths[i])
                || add_candidates(s, w, k, f, widths[i], wgs, n_wgs))
                return -1;
        }
    }
    if (nt_missing)
        fprintf(stderr, "clgrad-bench: STREAM: no non-temporal stores here, triad_nt skipped\n");
    return 0;
}

/* The candidate of the highest median among forms [lo, hi]. */
static const candidate *best_of(const sweep *w, int lo, int hi)
{
    const candidate *best = NULL;
    double best_gbs = -1.0;
    for (size_t i = 0; i < w->n_cand; i++) {
        const candidate *c = &w->cand[i];
        double gbs = bench_samples_stat(&c->x).median;
        if (c->form >= lo && c->form <= hi && gbs > best_gbs) {
            best_gbs = gbs;
            best = c;
        }
    }
    return best;
}

static void keep(bench_stream_kernel *dst, const candidate *c)
{
    *dst = c->k;
    clRetainKernel(dst->kernel);
}

int bench_stream_init(bench_stream *s, clg_context *ctx, uint64_t n, unsigned vw, size_t wg,
                      unsigned rounds)
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

    sweep *w = calloc(1, sizeof *w);
    if (!w)
        goto fail;
    if (build_sweep(s, w, vw, wg))
        goto fail_sweep;
    /* warm-up: the first launch of a shape pays for code generation */
    for (size_t i = 0; i < w->n_cand; i++)
        if (run_once(s, &w->cand[i].k) < 0)
            goto fail_sweep;
    /* rounds of one launch of every shape: drift hits every shape alike */
    for (unsigned r = 0; r < (rounds ? rounds : 1); r++)
        for (size_t i = 0; i < w->n_cand; i++) {
            double gbs = run_once(s, &w->cand[i].k);
            if (gbs < 0 || bench_samples_add(&w->cand[i].x, gbs))
                goto fail_sweep;
        }
    s->sweep = calloc(w->n_cand, sizeof *s->sweep);
    if (!s->sweep)
        goto fail_sweep;
    for (size_t i = 0; i < w->n_cand; i++) {
        bench_stream_trial *t = &s->sweep[s->n_sweep++];
        snprintf(t->form, sizeof t->form, "%s", w->cand[i].k.form);
        t->vw = w->cand[i].k.vw;
        t->wg = w->cand[i].k.local;
        t->gbs = bench_samples_stat(&w->cand[i].x).median;
    }
    keep(&s->copy, best_of(w, FORM_COPY, FORM_COPY));
    keep(&s->triad, best_of(w, FORM_TRIAD, FORM_TRIAD_INPLACE));
    keep(&s->classic, best_of(w, FORM_TRIAD, FORM_TRIAD));
    sweep_free(w);
    free(w);
    return 0;
fail_sweep:
    sweep_free(w);
    free(w);
fail:
    bench_stream_free(s);
    return -1;
}

static int reshape(bench_stream *s, bench_stream_kernel *k)
{
    int form = strcmp(k->form, "copy") == 0 ? FORM_COPY : FORM_TRIAD;
    if (set_args(s, k->kernel, form, k->vw))
        return -1;
    k->global = bench_round_up((size_t)(s->n / k->vw), k->local);
    k->bytes = (form == FORM_COPY ? 8.0 : 12.0) * (double)s->n;
    return run_once(s, k) < 0 ? -1 : 0;
}

int bench_stream_resize(bench_stream *s, uint64_t n)
{
    n = n / 16 * 16;
    if (n == 0) {
        fprintf(stderr, "clgrad-bench: STREAM: too few elements\n");
        goto fail;
    }
    if (n == s->n)
        return 0;
    const cl_mem arrays[] = {s->a, s->b, s->c};
    bench_release_mems(arrays, sizeof arrays / sizeof arrays[0]);
    s->a = s->b = s->c = NULL;
    clg_context_unreserve(s->ctx, s->reserved);
    s->reserved = 0;
    if (s->triad_gs) /* its arguments name the old arrays */
        clReleaseKernel(s->triad_gs);
    s->triad_gs = NULL;
    s->n = n;
    uint64_t bytes = 3 * n * sizeof(float);
    if (!bench_clg_ok(s->ctx, clg_context_reserve(s->ctx, bytes), "STREAM arrays"))
        goto fail;
    s->reserved = bytes;
    if (make_buffer(s, &s->a, 1.0f) || make_buffer(s, &s->b, 2.0f)
        || make_buffer(s, &s->c, 0.5f))
        goto fail;
    if (reshape(s, &s->copy) || reshape(s, &s->triad) || reshape(s, &s->classic))
        goto fail;
    return 0;
fail:
    bench_stream_free(s);
    return -1;
}

double bench_stream_copy(bench_stream *s)
{
    return run_once(s, &s->copy);
}

double bench_stream_triad(bench_stream *s)
{
    return run_once(s, &s->triad);
}

double bench_stream_triad_classic(bench_stream *s)
{
    return run_once(s, &s->classic);
}

double bench_stream_triad_gridstride(bench_stream *s, unsigned groups)
{
    cl_int err = CL_SUCCESS;
    if (!s->triad_gs) {
        cl_program prog;
        if (stream_program(s, "-DVW=4", &prog) != 0)
            return -1.0;
        s->triad_gs = clCreateKernel(prog, "stream_triad_gridstride", &err);
        if (!bench_cl_ok(err, "clCreateKernel(stream_triad_gridstride)"))
            return -1.0;
        if (set_args(s, s->triad_gs, FORM_TRIAD, 4))
            return -1.0;
    }
    bench_stream_kernel k = {.kernel = s->triad_gs, .form = "gridstride", .vw = 4};
    k.local = bench_local_size(s->triad_gs, clg_context_device(s->ctx), 256);
    if (!k.local)
        return -1.0;
    k.global = k.local * groups;
    k.bytes = 12.0 * (double)s->n;
    return run_once(s, &k);
}

int bench_stream_rep(bench_stream *s, bench_stream_samples *all, double *triad_gbs)
{
    /* the reference last: next to the cycle that follows */
    double copy = bench_stream_copy(s);
    double classic = bench_stream_triad_classic(s);
    double triad = bench_stream_triad(s);
    if (copy < 0 || triad < 0 || classic < 0)
        return -1;
    if (all && (bench_samples_add(&all->copy, copy) || bench_samples_add(&all->triad, triad)
                || bench_samples_add(&all->classic, classic)))
        return -1;
    if (triad_gbs)
        *triad_gbs = triad;
    return 0;
}

void bench_stream_samples_free(bench_stream_samples *all)
{
    bench_samples_free(&all->copy);
    bench_samples_free(&all->triad);
    bench_samples_free(&all->classic);
}

void bench_stream_report(bench_stream *s, bench_report *r)
{
    r->stream_n = s->n;
    snprintf(r->triad_form, sizeof r->triad_form, "%s", s->triad.form);
    r->stream_vw = s->triad.vw;
    r->stream_local = s->triad.local;
    r->copy_vw = s->copy.vw;
    r->copy_local = s->copy.local;
    r->classic_vw = s->classic.vw;
    r->classic_local = s->classic.local;
    free(r->sweep);
    r->sweep = s->sweep;
    r->n_sweep = s->n_sweep;
    s->sweep = NULL;
    s->n_sweep = 0;
}

void bench_stream_free(bench_stream *s)
{
    const cl_kernel kernels[] = {s->triad_gs, s->copy.kernel, s->triad.kernel,
                                 s->classic.kernel};
    const cl_mem arrays[] = {s->a, s->b, s->c};
    bench_release_kernels(kernels, sizeof kernels / sizeof kernels[0]);
    bench_release_mems(arrays, sizeof arrays / sizeof arrays[0]);
    free(s->sweep);
    if (s->reserved)
        clg_context_unreserve(s->ctx, s->reserved);
    memset(s, 0, sizeof *s);
}
