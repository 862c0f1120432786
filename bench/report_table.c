/* report_table.c - the readable table clgrad-bench prints on stdout. */
#include "report.h"

#include <stdio.h>

static void print_gemm(const bench_report *r)
{
    if (!r->n_gemm)
        return;
    printf("\nGEMMs of clgrad-train (micro-batch %u; median [min-max] of %u alternating rounds; "
           "tuned: %s)\n", r->gemm_micro_batch, r->gemm_rounds,
           r->gemm_tuned ? r->gemm_tuning : "none, CLBlast's defaults on both sides");
    printf("%-12s %-14s %-12s %-26s %-12s %-26s %8s %12s\n", "GEMM", "m x n x k", "default",
           "GFLOP/s", "tuned", "GFLOP/s", "speed-up", "triad-bound");
    for (size_t i = 0; i < r->n_gemm; i++) {
        const bench_gemm *g = &r->gemm[i];
        char shape[32], d[40], t[40];
        double flops = 2.0 * g->m * g->n * g->k / 1e6;
        snprintf(shape, sizeof shape, "%ux%ux%u %c%c", g->m, g->n, g->k, g->transa, g->transb);
        snprintf(d, sizeof d, "%6.2f [%.2f-%.2f]", g->gflops_default, flops / g->ms_default.max,
                 flops / g->ms_default.min);
        snprintf(t, sizeof t, "%6.2f [%.2f-%.2f]", g->gflops_tuned, flops / g->ms_tuned.max,
                 flops / g->ms_tuned.min);
        printf("%-12s %-14s %-12s %-26s %-12s %-26s %7.2fx %12.1f\n", g->role, shape,
               g->kernel_default, d, g->kernel_tuned, t, g->speedup, g->gflops_triad_bound);
    }
    printf("one micro-step's GEMMs: %.3f ms default, %.3f ms tuned (%.2fx); the reference "
           "triad ran at %.2f GB/s (triad-bound: GFLOP/s if each GEMM moved its operands once "
           "at that rate)\n", r->gemm_step_ms_default, r->gemm_step_ms_tuned,
           r->gemm_step_ms_tuned > 0 ? r->gemm_step_ms_default / r->gemm_step_ms_tuned : 0.0,
           r->triad_gbs.median);
}

static void print_cases(const bench_report *r)
{
    printf("\nCases (times: median [min-max] over reps; GB/s from the bytes model; "
           "%%triad against the triad reps interleaved with the case)\n");
    printf("%-6s %-17s %-10s %-4s %-4s %-9s %-21s %-21s %-23s %8s %7s %6s %6s %7s\n",
           "N", "optimizer", "variant", "path", "clip", "micro_ms", "micro [min-max]",
           "update_ms [min-max]", "cycle_ms [min-max]", "GB/s", "%triad", "upd%tr",
           "mic%tr", "launch");
    for (size_t i = 0; i < r->n_cases; i++) {
        const bench_case *c = &r->cases[i];
        char nb[32], path[4], micro[48], upd[64], cyc[64];
        snprintf(path, sizeof path, "%c%s", c->path == '-' ? c->feed : c->path,
                 c->path == '-' ? "*" : "");
        snprintf(micro, sizeof micro, "[%.3g-%.3g]", c->micro_ms.min, c->micro_ms.max);
        printf("%-6s %-17s %-10s %-4s %-4s %-9.4g %-21s %-21s %-23s %8.2f %6.1f%% %5.0f%% "
               "%5.0f%% %7.0f\n",
               bench_size_text(c->n, nb, sizeof nb), c->optimizer, bench_variant_name(c->variant),
               path, c->clip ? "yes" : "no", c->micro_ms.median, micro,
               bench_stat_text(c->update_ms, upd, sizeof upd),
               bench_stat_text(c->cycle_ms, cyc, sizeof cyc), c->gbs,
               100.0 * c->frac_of_triad, 100.0 * c->update_frac, 100.0 * c->micro_frac,
               c->launches_per_update);
    }
    printf("  (path X* = hand-rolled or per-tensor variant fed like path X; launch = "
           "kernel launches of the step that ends the cycle)\n");
}

static void print_speedups(const bench_report *r)
{
    if (!r->n_speedups)
        return;
    printf("\nSpeed-up of the fused cycle (k micro-steps + update, cycle medians)\n");
    printf("%-6s %-17s %-4s %-4s %11s %14s\n", "N", "optimizer", "path", "clip",
           "vs_unfused", "vs_per_tensor");
    for (size_t i = 0; i < r->n_speedups; i++) {
        const bench_speedup *s = &r->speedups[i];
        char nb[32], un[32], pt[32];
        /* 0: that baseline was not run (the state-dtype configs have no
         * hand-rolled one) */
        snprintf(un, sizeof un, s->vs_unfused > 0.0 ? "%.2fx" : "-", s->vs_unfused);
        snprintf(pt, sizeof pt, s->vs_per_tensor > 0.0 ? "%.2fx" : "-", s->vs_per_tensor);
        printf("%-6s %-17s %-4c %-4s %11s %14s\n", bench_size_text(s->n, nb, sizeof nb),
               s->optimizer, s->path, s->clip ? "yes" : "no", un, pt);
    }
}

static void print_memory(const bench_report *r)
{
    if (!r->n_memory)
        return;
    printf("\nMemory (bytes per parameter, before activations; largest model in a "
           "%.3g GiB budget)\n",
           r->budget_bytes / 1073741824.0);
    printf("%-17s %-4s %6s %6s %4s %6s %5s %5s %16s\n", "config", "path", "B/par",
           "params", "acc", "states", "copy", "grads", "max_params");
    for (size_t i = 0; i < r->n_memory; i++) {
        const bench_memory *m = &r->memory[i];
        printf("%-17s %-4s %6.2f %6.0f %4.0f %6.0f %5.0f %5.0f %16llu (%.2f G)\n", m->config,
               m->path, m->bytes_per_param, m->params, m->accumulators, m->states,
               m->param_copy, m->grad_buffers, (unsigned long long)m->max_params_in_budget,
               m->max_params_in_budget / 1e9);
    }
}

static void print_launches(const bench_report *r)
{
    if (!r->n_launch_checks)
        return;
    printf("\nLaunches per update of the fused cycle, 1 tensor vs many\n");
    printf("%-17s %-4s %9s %12s\n", "optimizer", "path", "1 tensor", "many");
    for (size_t i = 0; i < r->n_launch_checks; i++) {
        const bench_launch_check *l = &r->launch_checks[i];
        char many[32];
        snprintf(many, sizeof many, "%.0f (%u)", l->launches_many, l->tensors_many);
        printf("%-17s %-4c %9.0f %12s\n", l->optimizer, l->path, l->launches_1, many);
    }
}

static void print_dist(const bench_report *r)
{
    if (!r->n_dist)
        return;
    printf("\nData parallel over MPI (%s, %d ranks): communication per update, rank 0's "
           "clg_dist_counters;\n  ddp = one cycle of k micro-steps, one reduction at its end; "
           "sync = every micro-step\n  reduced (k cycles of one micro-step: k reductions); "
           "ms: median [min-max] of reps, interleaved\n",
           r->dist[0].mode, r->dist[0].ranks);
    printf("%-6s %3s %4s %9s %12s %12s %7s %-24s %-24s %-22s %-20s %-20s\n", "N", "k",
           "reps", "doc MB", "ddp MB/upd", "sync MB/upd", "bytes x", "ddp comm ms", "sync comm ms",
           "comm x (paired)", "ddp staging ms", "sync staging ms");
    for (size_t i = 0; i < r->n_dist; i++) {
        const bench_dist *d = &r->dist[i];
        char nb[32], a[64], b[64], c[64], e[64], f[64];
        printf("%-6s %3u %4u %9.3f %12.3f %12.3f %6.2fx %-24s %-24s %-22s %-20s %-20s\n",
               bench_size_text(d->n, nb, sizeof nb), d->k, d->reps, d->model_bytes / 1e6,
               d->ddp.bytes_sent / 1e6, d->ddp.sync_bytes_sent / 1e6, d->ddp.bytes_ratio,
               bench_stat_text(d->ddp.comm_ms, a, sizeof a),
               bench_stat_text(d->ddp.sync_comm_ms, b, sizeof b),
               bench_stat_text(d->ddp.comm_ratio, c, sizeof c),
               bench_stat_text(d->ddp.staging_ms, e, sizeof e),
               bench_stat_text(d->ddp.sync_staging_ms, f, sizeof f));
    }
    printf("  (MB sent per update, as many received, agreement messages included; doc = the "
           "library's 2 (R-1)/R x 4 bytes x N each way)\n");
}

void bench_print_table(const bench_report *r)
{
    const bench_device *d = &r->device;
    printf("clgrad-bench%s%s on %s (%s, %s; %s)\n", r->dist_run ? " --dist" : "",
           r->quick ? " --quick" : "", d->name, d->vendor, d->platform, d->driver);
    printf("  global memory %.2f GiB, max alloc %.2f GiB, %u compute units\n",
           d->global_mem_bytes / 1073741824.0, d->max_alloc_bytes / 1073741824.0,
           d->compute_units);
    if (r->dist_run) { /* communication only: no STREAM, no cases */
        print_dist(r);
        for (size_t i = 0; i < r->n_notes; i++)
            printf("note: %s\n", r->notes[i]);
        return;
    }
    printf("STREAM (%llu floats per array, %zu reps interleaved with the cases; "
           "median [min-max]):\n",
           (unsigned long long)r->stream_n, r->triad_gbs.count);
    printf("  triad (reference) %.2f GB/s [%.2f-%.2f]: %s, float%u, %zu work-items per "
           "group\n",
           r->triad_gbs.median, r->triad_gbs.min, r->triad_gbs.max, r->triad_form,
           r->stream_vw, r->stream_local);
    printf("  classic triad a = b + s*c %.2f GB/s [%.2f-%.2f]: float%u x %zu; copy %.2f GB/s "
           "[%.2f-%.2f]: float%u x %zu\n",
           r->triad_classic_gbs.median, r->triad_classic_gbs.min, r->triad_classic_gbs.max,
           r->classic_vw, r->classic_local, r->copy_gbs.median, r->copy_gbs.min,
           r->copy_gbs.max, r->copy_vw, r->copy_local);
    if (r->n_sweep) {
        printf("  sweep (GB/s, median of the setup rounds):");
        for (size_t i = 0; i < r->n_sweep; i++)
            printf("%s %s/%u/%zu %.1f", i % 6 ? "," : "\n   ", r->sweep[i].form,
                   r->sweep[i].vw, r->sweep[i].wg, r->sweep[i].gbs);
        printf("\n");
    }
    if (r->triad_gridstride_gbs.count)
        printf("  diagnostic: the classic triad (float4) as a grid-stride loop over %u "
               "groups of 256: %.2f GB/s [%.2f-%.2f]\n",
               r->gridstride_groups, r->triad_gridstride_gbs.median,
               r->triad_gridstride_gbs.min, r->triad_gridstride_gbs.max);
    print_cases(r);
    print_speedups(r);
    print_memory(r);
    print_launches(r);
    print_gemm(r);
    if (r->n_e2e) {
        printf("\nEnd to end (fixed effective batch)\n%4s %12s %12s %16s\n", "k",
               "micro_batch", "samples/s", "peak_dev_bytes");
        for (size_t i = 0; i < r->n_e2e; i++)
            printf("%4u %12u %12.1f %16llu\n", r->e2e[i].k, r->e2e[i].micro_batch,
                   r->e2e[i].samples_per_s, (unsigned long long)r->e2e[i].peak_device_bytes);
    }
    for (size_t i = 0; i < r->n_notes; i++)
        printf("note: %s\n", r->notes[i]);
}
