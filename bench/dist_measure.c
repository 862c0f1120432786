/* dist_measure.c - one N and k of clgrad-bench --dist: the communication
 * of one update under DDP and under ZeRO-1 (each one cycle of k
 * micro-steps through clg_dist_step, one exchange at its end), and for
 * each the baseline that exchanges every micro-step's gradient (a model
 * with accum_steps = 1 stepped k times: k cycle ends, k exchanges), all
 * four measured by libclgrad-mpi's own counters.
 *
 * AdamW on every side: ZeRO-1 is about the optimizer states, so the model
 * must have some, and DDP runs the same update so that the two modes
 * differ only in how they share it (the bytes depend on the layout alone;
 * the update runs outside DDP's exchange and between ZeRO-1's two). Path
 * A, gradients uploaded once and reused (their values do not change what
 * is sent). Before every micro-step that ends a cycle, each rank drains
 * its queue and all ranks meet at a barrier (outside the counters), so
 * that the communication time is the exchange's, not one rank waiting for
 * another's kernels. */
#include "dist_bench.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct side {
    clg_context *ctx;
    clg_model *model;
    clg_grads *grads;
    clg_dist *dist;
    int every; /* the baseline: accum_steps = 1, a cycle end every micro-step */
} side;

/* The four sides of one N and k, in the order a repetition starts from. */
enum { S_DDP, S_DDP_SYNC, S_ZERO1, S_ZERO1_SYNC, N_SIDES };

/* What one update cost rank 0 (counter deltas, wall clock). */
typedef struct sample {
    double sent, received, comm_ms, staging_ms, wall_ms;
} sample;

static void ok(clg_status st, const char *what)
{
    if (st != CLG_SUCCESS)
        bench_dist_die(what, st);
}

static void side_make(side *s, clg_context *ctx, unsigned k, int every, clg_dist_mode mode,
                      uint64_t n, unsigned tensors, const float *host)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.lr = 1e-3f;
    c.accum_steps = every ? 1 : k;
    s->ctx = ctx;
    s->every = every;
    ok(clg_model_create(ctx, &c, &s->model), "clg_model_create");
    uint64_t per = n / tensors;
    for (unsigned t = 0; t < tensors; t++) {
        char name[32];
        int id;
        snprintf(name, sizeof name, "t%u", t);
        uint64_t count = t + 1 < tensors ? per : n - per * (tensors - 1);
        ok(clg_model_add_tensor(s->model, name, (size_t)count, 0, &id), "clg_model_add_tensor");
    }
    if (mode == CLG_DIST_ZERO1) { /* ZeRO-1 needs the shard of this rank of R */
        int rank, size;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        ok(clg_model_set_shard(s->model, (unsigned)rank, (unsigned)size), "clg_model_set_shard");
    }
    ok(clg_model_finalize(s->model), "clg_model_finalize");
    ok(clg_model_upload_params(s->model, CLG_ALL_TENSORS, host, (size_t)n, NULL),
       "clg_model_upload_params");
    ok(clg_grads_create(s->model, CLG_FP32, &s->grads), "clg_grads_create");
    ok(clg_grads_upload(s->grads, CLG_ALL_TENSORS, host, (size_t)n, NULL), "clg_grads_upload");
    ok(clg_dist_create(s->model, MPI_COMM_WORLD, mode, &s->dist), "clg_dist_create");
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

/* k micro-steps of s: one cycle, or k cycles of one for the baseline. */
static sample one_update(const side *s, unsigned k)
{
    clg_dist_counters a = clg_dist_counters_init(), b = clg_dist_counters_init();
    ok(clg_dist_counters_get(s->dist, &a), "clg_dist_counters_get");
    double t0 = MPI_Wtime();
    for (unsigned j = 0; j < k; j++) {
        int ends = s->every || j + 1 == k, updated = 0;
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

/* The median over repetitions of num / den comm ms of the same one. */
static bench_stat paired(const sample *num, const sample *den, size_t n, double *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = den[i].comm_ms > 0 ? num[i].comm_ms / den[i].comm_ms : 0.0;
    return bench_summarize(tmp, n);
}

/* Optimizer-state bytes: rank 0's shard, the largest over ranks (every
 * rank's must fit its device), and the unsharded DDP model's. */
static void state_bytes(const side *zero1, const side *ddp, bench_dist_zero1 *z)
{
    clg_model_plan mine = clg_model_plan_init(), whole = clg_model_plan_init();
    ok(clg_model_memory(zero1->model, &mine), "clg_model_memory");
    ok(clg_model_memory(ddp->model, &whole), "clg_model_memory");
    uint64_t states = mine.states, largest = 0;
    MPI_Allreduce(&states, &largest, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    z->states_rank0 = states; /* rank 0 keeps its own */
    z->states_max = largest;
    z->states_unsharded = whole.states;
    ok(clg_model_shard_range(zero1->model, 0, NULL, &z->shard_elements, &z->layout_elements),
       "clg_model_shard_range");
}

/* A mode's update (x) against its baseline's (sync), over reps. */
static bench_dist_cost cost_of(const sample *x, const sample *sync, unsigned reps, double *tmp)
{
    bench_dist_cost c;
    c.bytes_sent = stat_of(x, reps, F_SENT, tmp).median;
    c.bytes_received = stat_of(x, reps, F_RECEIVED, tmp).median;
    c.sync_bytes_sent = stat_of(sync, reps, F_SENT, tmp).median;
    c.sync_bytes_received = stat_of(sync, reps, F_RECEIVED, tmp).median;
    c.bytes_ratio = c.bytes_sent > 0 ? c.sync_bytes_sent / c.bytes_sent : 0;
    c.comm_ms = stat_of(x, reps, F_COMM, tmp);
    c.sync_comm_ms = stat_of(sync, reps, F_COMM, tmp);
    c.staging_ms = stat_of(x, reps, F_STAGING, tmp);
    c.sync_staging_ms = stat_of(sync, reps, F_STAGING, tmp);
    c.update_ms = stat_of(x, reps, F_WALL, tmp);
    c.sync_update_ms = stat_of(sync, reps, F_WALL, tmp);
    c.comm_ratio = paired(sync, x, reps, tmp);
    return c;
}

void bench_dist_measure(clg_context *ctx, const bench_options *o, uint64_t n, unsigned k,
                        bench_dist *ddp, bench_dist_zero1 *zero1)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned tensors = n / o->tensors ? o->tensors : 1;
    float *host = malloc((size_t)n * sizeof *host);
    if (!host)
        bench_dist_die("host buffer", CLG_ERR_OUT_OF_HOST_MEMORY);
    for (uint64_t i = 0; i < n; i++) /* the same on every rank: params must agree */
        host[i] = 0.01f * (float)((int)(i % 97) - 48);
    side s[N_SIDES] = {0};
    side_make(&s[S_DDP], ctx, k, 0, CLG_DIST_DDP, n, tensors, host);
    side_make(&s[S_DDP_SYNC], ctx, k, 1, CLG_DIST_DDP, n, tensors, host);
    side_make(&s[S_ZERO1], ctx, k, 0, CLG_DIST_ZERO1, n, tensors, host);
    side_make(&s[S_ZERO1_SYNC], ctx, k, 1, CLG_DIST_ZERO1, n, tensors, host);
    free(host);
    *zero1 = (bench_dist_zero1){.ranks = size, .n = n, .k = k, .tensors = tensors};
    state_bytes(&s[S_ZERO1], &s[S_DDP], zero1); /* collective */

    double one_ms = 0.0;
    for (unsigned w = 0; w < o->run.warmup; w++) {
        one_ms = 0.0;
        for (int i = 0; i < N_SIDES; i++)
            one_ms += one_update(&s[i], k).wall_ms;
    }
    /* rank 0 decides, every rank runs as many */
    unsigned reps = bench_calibrate_reps(o->run.target_ms, one_ms, o->run.min_reps,
                                         o->run.max_reps);
    MPI_Bcast(&reps, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
    sample *x[N_SIDES];
    double *tmp = calloc(reps, sizeof *tmp);
    int short_of_memory = !tmp;
    for (int i = 0; i < N_SIDES; i++) {
        x[i] = calloc(reps, sizeof *x[i]);
        short_of_memory |= !x[i];
    }
    if (short_of_memory)
        bench_dist_die("samples", CLG_ERR_OUT_OF_HOST_MEMORY);
    /* interleaved against the machine's drift: repetition r starts at side
     * r mod 4, so each side runs in each place as often */
    for (unsigned r = 0; r < reps; r++)
        for (int j = 0; j < N_SIDES; j++) {
            int i = (int)((r + (unsigned)j) % N_SIDES);
            x[i][r] = one_update(&s[i], k);
        }
    for (int i = 0; i < N_SIDES; i++)
        side_free(&s[i]);

    *ddp = (bench_dist){.mode = "ddp", .ranks = size, .n = n, .k = k, .tensors = tensors,
                        .reps = reps};
    ddp->model_bytes = 2.0 * (size - 1) / size * 4.0 * (double)n;
    ddp->ddp = cost_of(x[S_DDP], x[S_DDP_SYNC], reps, tmp);
    zero1->reps = reps;
    zero1->zero1 = cost_of(x[S_ZERO1], x[S_ZERO1_SYNC], reps, tmp);
    zero1->vs_ddp = paired(x[S_ZERO1], x[S_DDP], reps, tmp);
    zero1->ddp_bytes_sent = ddp->ddp.bytes_sent;
    for (int i = 0; i < N_SIDES; i++)
        free(x[i]);
    free(tmp);
}
