/* run_case.c - times one cycle implementation: warm-up, calibration to a
 * target time, then repetitions of (STREAM copy and triads, one cycle)
 * so that drift and other load on the machine hit the case and its
 * reference alike. Every micro-step is followed by clFinish, so each has
 * its own time; the cycle time is their sum. */
#include "cycle.h"
#include "clutil.h"

#include <stdio.h>

typedef struct cycle_times {
    double micro, update, cycle;
    uint64_t launches_update, launches_cycle;
} cycle_times;

/* One whole cycle, timed step by step. The micro-step reported is the
 * second (steady state: reads and writes the accumulator), or the first
 * when k == 2. */
static int timed_cycle(bench_cycle *cy, cl_command_queue q, cycle_times *out)
{
    out->micro = out->update = out->cycle = 0.0;
    if (!bench_cl_ok(clFinish(q), "clFinish"))
        return -1;
    uint64_t l0 = cy->launches(cy->self);
    unsigned want_micro = cy->k >= 3 ? 1 : 0;
    for (unsigned i = 0; i < cy->k; i++) {
        uint64_t li = cy->launches(cy->self);
        double t0 = bench_now_ms();
        if (cy->step(cy->self, i) || !bench_cl_ok(clFinish(q), "clFinish"))
            return -1;
        double ms = bench_now_ms() - t0;
        out->cycle += ms;
        if (i + 1 == cy->k) {
            out->update = ms;
            out->launches_update = cy->launches(cy->self) - li;
        } else if (i == want_micro) {
            out->micro = ms;
        }
    }
    out->launches_cycle = cy->launches(cy->self) - l0;
    return 0;
}

int bench_run_case(bench_cycle *cy, bench_stream *st, clg_context *ctx,
                   const bench_run_opts *o, bench_stream_samples *all, bench_case *c)
{
    cl_command_queue q = clg_context_queue(ctx);
    cycle_times t;
    double warm_ms = 0.0;
    unsigned warmup = o->warmup ? o->warmup : 1;
    for (unsigned w = 0; w < warmup; w++) {
        if (timed_cycle(cy, q, &t))
            return -1;
        warm_ms = t.cycle;
    }
    unsigned reps = bench_calibrate_reps(o->target_ms, warm_ms, o->min_reps, o->max_reps);

    bench_samples micro = {0}, update = {0}, cycle = {0}, triad = {0};
    int rc = -1;
    for (unsigned r = 0; r < reps; r++) {
        double triad_gbs;
        if (bench_stream_rep(st, all, &triad_gbs) || timed_cycle(cy, q, &t))
            goto done;
        if (bench_samples_add(&triad, triad_gbs) || bench_samples_add(&micro, t.micro)
            || bench_samples_add(&update, t.update) || bench_samples_add(&cycle, t.cycle))
            goto done;
    }
    c->reps = reps;
    c->micro_ms = bench_samples_stat(&micro);
    c->update_ms = bench_samples_stat(&update);
    c->cycle_ms = bench_samples_stat(&cycle);
    c->triad_gbs = bench_samples_stat(&triad).median;
    c->launches_per_update = (double)t.launches_update;
    c->launches_per_cycle = (double)t.launches_cycle;
    c->host_syncs_per_update = cy->host_syncs_per_update;
    c->groups = cy->groups;
    bench_case_derive(c);
    if (bench_case_paired_fracs(c, micro.x, update.x, cycle.x, triad.x, reps))
        goto done;
    rc = 0;
done:
    bench_samples_free(&micro);
    bench_samples_free(&update);
    bench_samples_free(&cycle);
    bench_samples_free(&triad);
    return rc;
}
