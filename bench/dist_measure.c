/* dist_measure.c - one row of clgrad-bench --dist: the communication of one
 * update for DDP (one cycle of k micro-steps through clg_dist_step, one
 * reduction at its end) and for the baseline that reduces every
 * micro-step's gradient (a model with accum_steps = 1 stepped k times: k
 * cycle ends, k reductions), both measured by libclgrad-mpi's own counters.
 *
 * Plain SGD (no state): the bytes and the time of the exchange depend on
 * the parameter count only, and a stateless update keeps the compute
 * between exchanges short on a small machine. Path A, gradients uploaded
 * once and reused (their values do not change what is sent). Before every
 * micro-step that ends a cycle, each rank drains its queue and all ranks
 * meet at a barrier (outside the counters), so that the communication time
 * is the exchange's, not one rank waiting for another's kernels. */
#include "dist_bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct side {
    clg_context *ctx;
    clg_model *model;
    clg_grads *grads;
    clg_dist *dist;
} side;

/* What one update cost rank 0 (counter deltas, wall clock). */
typedef struct sample {
    double sent, received, comm_ms, staging_ms, wall_ms;
} sample;

static void ok(clg_status st, const char *what)
{
    if (st != CLG_SUCCESS)
        bench_dist_die(what, st);
}

static void side_make(side *s, clg_context *ctx, unsigned k, uint64_t n, unsigned tensors,
                      const float *host)
{
    clg_config c = clg_config_default(CLG_SGD);
    c.lr = 1e-3f;
    c.accum_steps = k;
    s->ctx = ctx;
    ok(clg_model_create(ctx, &c, &s->model), "clg_model_create");
    uint64_t per = n / tensors;
    for (unsigned t = 0; t < tensors; t++) {
        char name[32];
        int id;
        snprintf(name, sizeof name, "t%u", t);
        uint64_t count = t + 1 < tensors ? per : n - per * (tensors - 1);
        ok(clg_model_add_tensor(s->model, name, (size_t)count, 0, &id), "clg_model_add_tensor");
    }
    ok(clg_model_finalize(s->model), "clg_model_finalize");
    ok(clg_model_upload_params(s->model, CLG_ALL_TENSORS, host, (size_t)n, NULL),
       "clg_model_upload_params");
    ok(clg_grads_create(s->model, CLG_FP32, &s->grads), "clg_grads_create");
    ok(clg_grads_upload(s->grads, CLG_ALL_TENSORS, host, (size_t)n, NULL), "clg_grads_upload");
    ok(clg_dist_create(s->model, MPI_COMM_WORLD, &s->dist), "clg_dist_create");
}

static void side_free(side *s)
{
    clg_dist_destroy(s->dist); /* collective */
    clg_grads_destroy(s->grads);
    clg_model_destroy(s->model);
}

/* Every rank's kernels done, every rank here: the exchange starts level. */
static void settle(const side *s)
{
    cl_int err = clFinish(clg_context_queue(s->ctx));
    if (err != CL_SUCCESS)
        bench_dist_die("clFinish", (clg_status)err);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* k micro-steps of s: one cycle when every is 0, k cycles of one when 1. */
static sample one_update(const side *s, unsigned k, int every)
{
    clg_dist_counters a = clg_dist_counters_init(), b = clg_dist_counters_init();
    ok(clg_dist_counters_get(s->dist, &a), "clg_dist_counters_get");
    double t0 = MPI_Wtime();
    for (unsigned j = 0; j < k; j++) {
        int ends = every || j + 1 == k, updated = 0;
        if (ends)
            settle(s);
        ok(clg_dist_step(s->dist, s->grads, 1.0f, &updated), "clg_dist_step");
        if (updated != ends)
            bench_dist_die(updated ? "an update before the cycle's end"
                                   : "no update at the cycle's end",
                           CLG_ERR_STATE);
    }
    if (clFinish(clg_context_queue(s->ctx)) != CL_SUCCESS)
        bench_dist_die("clFinish", CLG_ERR_STATE);
    double t1 = MPI_Wtime();
    ok(clg_dist_counters_get(s->dist, &b), "clg_dist_counters_get");
    return (sample){(double)(b.bytes_sent - a.bytes_sent),
                    (double)(b.bytes_received - a.bytes_received),
                    1e3 * (b.comm_seconds - a.comm_seconds),
                    1e3 * (b.staging_seconds - a.staging_seconds), 1e3 * (t1 - t0)};
}

enum { F_SENT, F_RECEIVED, F_COMM, F_STAGING, F_WALL };

static double field(const sample *s, int f)
{
    switch (f) {
    case F_SENT: return s->sent;
    case F_RECEIVED: return s->received;
    case F_COMM: return s->comm_ms;
    case F_STAGING: return s->staging_ms;
    default: return s->wall_ms;
    }
}

/* The summary of one field over the repetitions (tmp: reps doubles). */
static bench_stat stat_of(const sample *x, size_t n, int f, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = field(&x[i], f);
    return bench_summarize(tmp, n);
}

void bench_dist_measure(clg_context *ctx, const bench_options *o, uint64_t n, unsigned k,
                        bench_dist *out)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned tensors = n / o->tensors ? o->tensors : 1;
    float *host = malloc((size_t)n * sizeof *host);
    if (!host)
        bench_dist_die("host buffer", CLG_ERR_OUT_OF_HOST_MEMORY);
    for (uint64_t i = 0; i < n; i++) /* the same on every rank: params must agree */
        host[i] = 0.01f * (float)((int)(i % 97) - 48);
    side ddp = {0}, sync = {0};
    side_make(&ddp, ctx, k, n, tensors, host);
    side_make(&sync, ctx, 1, n, tensors, host);
    free(host);

    double one_ms = 0.0;
    for (unsigned w = 0; w < o->run.warmup; w++) {
        sample a = one_update(&ddp, k, 0), b = one_update(&sync, k, 1);
        one_ms = a.wall_ms + b.wall_ms;
    }
    /* rank 0 decides, every rank runs as many */
    unsigned reps = bench_calibrate_reps(o->run.target_ms, one_ms, o->run.min_reps,
                                         o->run.max_reps);
    MPI_Bcast(&reps, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
    sample *xd = calloc(reps, sizeof *xd), *xs = calloc(reps, sizeof *xs);
    double *tmp = calloc(reps, sizeof *tmp);
    if (!xd || !xs || !tmp)
        bench_dist_die("samples", CLG_ERR_OUT_OF_HOST_MEMORY);
    for (unsigned r = 0; r < reps; r++) { /* interleaved: who goes first alternates */
        if (r % 2 == 0) {
            xd[r] = one_update(&ddp, k, 0);
            xs[r] = one_update(&sync, k, 1);
        } else {
            xs[r] = one_update(&sync, k, 1);
            xd[r] = one_update(&ddp, k, 0);
        }
    }
    side_free(&ddp);
    side_free(&sync);

    *out = (bench_dist){.mode = "ddp", .ranks = size, .n = n, .k = k, .tensors = tensors,
                        .reps = reps};
    out->model_bytes = 2.0 * (size - 1) / size * 4.0 * (double)n;
    out->ddp_bytes_sent = stat_of(xd, reps, F_SENT, tmp).median;
    out->ddp_bytes_received = stat_of(xd, reps, F_RECEIVED, tmp).median;
    out->sync_bytes_sent = stat_of(xs, reps, F_SENT, tmp).median;
    out->sync_bytes_received = stat_of(xs, reps, F_RECEIVED, tmp).median;
    out->bytes_ratio = out->ddp_bytes_sent > 0 ? out->sync_bytes_sent / out->ddp_bytes_sent : 0;
    out->ddp_comm_ms = stat_of(xd, reps, F_COMM, tmp);
    out->sync_comm_ms = stat_of(xs, reps, F_COMM, tmp);
    out->ddp_staging_ms = stat_of(xd, reps, F_STAGING, tmp);
    out->sync_staging_ms = stat_of(xs, reps, F_STAGING, tmp);
    out->ddp_update_ms = stat_of(xd, reps, F_WALL, tmp);
    out->sync_update_ms = stat_of(xs, reps, F_WALL, tmp);
    for (unsigned r = 0; r < reps; r++)
        tmp[r] = xd[r].comm_ms > 0 ? xs[r].comm_ms / xd[r].comm_ms : 0.0;
    out->comm_ratio = bench_summarize(tmp, reps);
    free(xd);
    free(xs);
    free(tmp);
}
