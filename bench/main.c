/* main.c - clgrad-bench: measures clgrad's fused accumulation cycle next to
 * the device's STREAM bandwidth and to what users hand-roll, and prints,
 * or writes as JSON, CSV and a plot, the table users pick settings from. */
#include "bench_main.h"
#include "clutil.h"

#include <stdio.h>
#include <string.h>

void bench_copy_device(bench_device *d, const clg_device_info *info)
{
    snprintf(d->name, sizeof d->name, "%s", info->name);
    snprintf(d->vendor, sizeof d->vendor, "%s", info->vendor);
    snprintf(d->driver, sizeof d->driver, "%s", info->driver_version);
    snprintf(d->platform, sizeof d->platform, "%s", info->platform_name);
    snprintf(d->version, sizeof d->version, "%s", info->device_version);
    d->global_mem_bytes = info->global_mem_size;
    d->max_alloc_bytes = info->max_mem_alloc_size;
    d->compute_units = info->compute_units;
}

/* Bytes one case of n parameters can hold at once at most: params,
 * accumulator, two states, fp32 gradients (hand-rolled and clgrad alike),
 * and the three STREAM arrays of n floats measured next to it. */
static uint64_t case_bytes(uint64_t n)
{
    return n * (20 + 12);
}

/* Halves n until a case and its STREAM arrays fit the device and the
 * budget, and every array fits one allocation; says so in the report. */
static uint64_t clamp_size(bench_report *r, uint64_t n, uint64_t limit, uint64_t max_alloc)
{
    uint64_t n0 = n;
    while (n > 1024 && (case_bytes(n) > limit || n * 4 > max_alloc))
        n /= 2;
    if (n != n0)
        bench_report_note(r,
                          "N = %llu clamped to %llu: a case and its STREAM arrays (%.2f GiB) "
                          "must fit %.2f GiB (device memory or --vram) and one array %.2f "
                          "GiB (max alloc)",
                          (unsigned long long)n0, (unsigned long long)n,
                          case_bytes(n0) / 1073741824.0, limit / 1073741824.0,
                          max_alloc / 1073741824.0);
    return n;
}

int main(int argc, char **argv)
{
    bench_options o;
    int rc = bench_parse_options(&o, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (o.dist) /* under mpirun: its own run (dist_run.c); MPI is never touched otherwise */
        return bench_dist_main(&o);

    clg_context *ctx = NULL;
    clg_status st = clg_context_create(&ctx, o.device);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-bench: no device: %s: %s\n", clg_status_string(st),
                clg_last_error(NULL));
        return st == CLG_ERR_NO_DEVICE ? 77 : 1;
    }
    if (o.fit) {
        rc = bench_fit_run(ctx, &o);
        clg_context_destroy(ctx);
        return rc;
    }
    if (!bench_clg_ok(ctx, clg_context_set_budget(ctx, o.vram), "--vram")) {
        clg_context_destroy(ctx);
        return 1;
    }

    bench_report r = {0};
    bench_copy_device(&r.device, clg_context_device_info(ctx));
    r.quick = o.quick;
    r.k = o.k;
    r.tensors = o.tensors;
    r.budget_bytes = o.vram;

    uint64_t limit = r.device.global_mem_bytes < o.vram ? r.device.global_mem_bytes : o.vram;
    uint64_t max_alloc = clg_context_max_alloc(ctx);
    uint64_t stream_n = o.stream_n;
    while (stream_n > 4096 && (3 * stream_n * 4 > limit / 2 || stream_n * 4 > max_alloc))
        stream_n /= 2;
    if (stream_n != o.stream_n)
        bench_report_note(&r, "STREAM arrays clamped from %llu to %llu floats",
                          (unsigned long long)o.stream_n, (unsigned long long)stream_n);

    bench_stream stream;
    bench_stream_samples all = {0};
    rc = 1;
    fprintf(stderr, "clgrad-bench: STREAM sweep (%llu floats per array)\n",
            (unsigned long long)stream_n);
    if (bench_stream_init(&stream, ctx, stream_n, o.vw, o.wg, o.quick ? 3 : 5))
        goto out;
    bench_stream_report(&stream, &r);
    fprintf(stderr, "clgrad-bench: STREAM reference: %s float%u x %zu; copy float%u x %zu; "
            "classic triad float%u x %zu\n",
            r.triad_form, r.stream_vw, r.stream_local, r.copy_vw, r.copy_local, r.classic_vw,
            r.classic_local);

    fprintf(stderr, "clgrad-bench: memory section\n");
    if (bench_memory_section(&r, o.vram, o.k))
        goto out_stream;
    fprintf(stderr, "clgrad-bench: launch counts, 1 vs %u tensors\n", o.tensors);
    if (bench_launch_section(&r, ctx, &o))
        goto out_stream;

    if (!o.no_cases) {
        for (size_t i = 0; i < o.n_sizes; i++) {
            uint64_t n = clamp_size(&r, o.sizes[i], limit, max_alloc);
            fprintf(stderr, "clgrad-bench: cases at N = %llu\n", (unsigned long long)n);
            if (bench_stream_resize(&stream, n))
                goto out_stream;
            if (bench_cases_section(&r, ctx, &stream, &o, n, &all))
                goto out_stream;
        }
    }
    /* at least a few STREAM reps, also when no case ran */
    while (all.triad.n < 3)
        if (bench_stream_rep(&stream, &all, NULL))
            goto out_stream;
    /* diagnostic: the launch shape clgrad's kernels had before commit
     * 04af500 (a grid-stride loop over compute units x 8 groups) */
    {
        unsigned groups = r.device.compute_units * 8;
        groups = groups < 1 ? 1 : groups > 1024 ? 1024 : groups;
        bench_samples gs = {0};
        for (unsigned i = 0; i < (o.quick ? 3u : 5u); i++) {
            double g = bench_stream_triad_gridstride(&stream, groups);
            if (g < 0 || bench_samples_add(&gs, g))
                break;
        }
        r.triad_gridstride_gbs = bench_samples_stat(&gs);
        r.gridstride_groups = groups;
        bench_samples_free(&gs);
    }
    r.copy_gbs = bench_samples_stat(&all.copy);
    r.triad_gbs = bench_samples_stat(&all.triad);
    r.triad_classic_gbs = bench_samples_stat(&all.classic);
    if (bench_report_speedups(&r))
        goto out_stream;
    if (!o.no_gemm) {
        fprintf(stderr, "clgrad-bench: GEMM shapes of clgrad-train, CLBlast's defaults "
                "against the device's tuning\n");
        if (bench_gemm_section(&r, ctx, &o))
            goto out_stream;
    }
    if (o.e2e)
        bench_e2e_section(&r, ctx, &o);

    bench_print_table(&r);
    rc = 0;
    if (o.json_path && bench_write_json(&r, o.json_path))
        rc = 1;
    if (o.csv_path && bench_write_csv(&r, o.csv_path))
        rc = 1;
    if (o.plot_path && bench_write_plot(&r, o.plot_path))
        rc = 1;
out_stream:
    bench_stream_free(&stream);
out:
    bench_stream_samples_free(&all);
    bench_report_free(&r);
    clg_context_destroy(ctx);
    return rc;
}
