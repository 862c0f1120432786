/* gemm_section.c - clgrad-train's GEMM shapes (784-512-256-10 at its
 * default micro-batch of 32) through the trainer's own call, mlp_gemm, with
 * CLBlast's default parameters and with the device's tuning: each shape
 * built and checked against a host product on both, then timed in rounds
 * that alternate the two parameter sets, so that a change in the machine's
 * load hits both alike (CLBlast keeps both programs built; switching costs
 * nothing after the first call). */
#include "bench_main.h"

#include "clblast_params.h"
#include "gemm_timing.h"
#include "mlp_gemms.h"
#include "tuning_apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_MICRO_BATCH 32

static int check_all(bench_report *r, gemm_bufs *g, const mlp_gemm_shape *s, size_t n,
                     const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double worst;
        if (gemm_run_once(g, &s[i]) != CL_SUCCESS || gemm_check(g, &s[i], &worst) != 0) {
            bench_report_note(r, "GEMM %s %zux%zux%zu with %s: wrong or failed (relative error "
                              "%.3g)", s[i].role, s[i].m, s[i].n, s[i].k, what, worst);
            return -1;
        }
    }
    return 0;
}

static int use(bench_report *r, clg_context *ctx, const tuning *t)
{
    char err[1024];
    int rc = t ? tuning_apply(ctx, t, err, sizeof err) : tuning_restore_defaults(ctx, err,
                                                                                  sizeof err);
    if (rc != 0)
        bench_report_note(r, "GEMM section: %s", err);
    return rc;
}

int bench_gemm_section(bench_report *r, clg_context *ctx, const bench_options *o)
{
    static const unsigned dims[] = {784, 512, 256, 10};
    mlp_gemm_shape s[MLP_GEMMS_MAX];
    size_t n = mlp_gemm_shapes(dims, 4, GEMM_MICRO_BATCH, s, MLP_GEMMS_MAX);
    const unsigned rounds = o->quick ? 3 : 7;
    const double target_ms = o->quick ? 10.0 : 40.0;
    r->gemm_micro_batch = GEMM_MICRO_BATCH;
    r->gemm_rounds = rounds;

    /* the tuning, as clgrad-train finds it; CLBlast's defaults first */
    tuning_status *ts = malloc(sizeof *ts);
    if (!ts)
        return -1;
    tuning_setup(ctx, o->tuning, NULL, s, n, ts);
    r->gemm_tuned = ts->applied;
    if (ts->applied)
        snprintf(r->gemm_tuning, sizeof r->gemm_tuning, "%s", ts->path);
    else
        bench_report_note(r, "GEMM section: no tuning used, the tuned figures are CLBlast's "
                          "defaults again (%s)", ts->message);
    const tuning *tuned = ts->applied ? &ts->t : NULL;
    size_t min_indirect_default = 0, min_indirect_tuned = 0;

    gemm_bufs g;
    int rc = -1;
    if (gemm_bufs_create(clg_context_cl(ctx), clg_context_queue(ctx), s, n, &g) != CL_SUCCESS) {
        bench_report_note(r, "GEMM section: cannot allocate its buffers");
        free(ts);
        return -1;
    }
    /* builds and checks; the routine's switch-over size of each side */
    if (use(r, ctx, NULL) != 0 || check_all(r, &g, s, n, "CLBlast's defaults") != 0)
        goto out;
    if (tuned) {
        const tuning_kernel *k = tuning_find_kernel(tuned, "GemmRoutine");
        for (size_t i = 0; k && i < k->n; i++)
            if (strcmp(k->param[i], "XGEMM_MIN_INDIRECT_SIZE") == 0)
                min_indirect_tuned = k->value[i];
        if (use(r, ctx, tuned) != 0 || check_all(r, &g, s, n, "the tuning") != 0)
            goto out;
    }
    {
        clblast_param p[4];
        size_t np = 0;
        use(r, ctx, NULL);
        if (clblast_params_get(clg_context_device(ctx), "GemmRoutine", 32, p, 4, &np) == 0 &&
            np == 1)
            min_indirect_default = p[0].value;
        if (!tuned)
            min_indirect_tuned = min_indirect_default;
    }

    unsigned reps[MLP_GEMMS_MAX];
    for (size_t i = 0; i < n; i++)
        reps[i] = gemm_calibrate(&g, &s[i], target_ms);
    double *ms = calloc(2 * n * rounds, sizeof *ms); /* [side][shape][round] */
    if (!ms)
        goto out;
    for (unsigned round = 0; round < rounds; round++)
        for (int side = 0; side < 2; side++) {
            if (use(r, ctx, side ? tuned : NULL) != 0) {
                free(ms);
                goto out;
            }
            for (size_t i = 0; i < n; i++)
                if (gemm_time(&g, &s[i], reps[i], &ms[(side * n + i) * rounds + round]) !=
                    CL_SUCCESS) {
                    bench_report_note(r, "GEMM section: a timed GEMM failed");
                    free(ms);
                    goto out;
                }
        }
    r->gemm_step_ms_default = r->gemm_step_ms_tuned = 0;
    for (size_t i = 0; i < n; i++) {
        bench_gemm *e = bench_report_add_gemm(r);
        if (!e)
            break;
        const mlp_gemm_shape *sh = &s[i];
        tuning_gemm rec; /* the shape as clgrad-tune records it */
        mlp_gemm_record(sh, min_indirect_default, min_indirect_tuned, &rec);
        *e = (bench_gemm){.m = rec.m, .n = rec.n, .k = rec.k, .transa = rec.ta,
                          .transb = rec.tb, .count = rec.count};
        snprintf(e->role, sizeof e->role, "%s", sh->role);
        snprintf(e->kernel_default, sizeof e->kernel_default, "%s",
                 mlp_gemm_kernel(sh, min_indirect_default));
        snprintf(e->kernel_tuned, sizeof e->kernel_tuned, "%s",
                 mlp_gemm_kernel(sh, min_indirect_tuned));
        e->ms_default = bench_summarize(&ms[i * rounds], rounds);
        e->ms_tuned = bench_summarize(&ms[(n + i) * rounds], rounds);
        double flops = mlp_gemm_flops(sh);
        e->gflops_default = flops / (e->ms_default.median * 1e6);
        e->gflops_tuned = flops / (e->ms_tuned.median * 1e6);
        e->speedup = e->ms_default.median / e->ms_tuned.median;
        double bytes = 4.0 * ((double)sh->m * sh->k + (double)sh->k * sh->n +
                              (double)sh->m * sh->n);
        e->gflops_triad_bound = r->triad_gbs.median * flops / bytes;
        r->gemm_step_ms_default += sh->count * e->ms_default.median;
        r->gemm_step_ms_tuned += sh->count * e->ms_tuned.median;
    }
    free(ms);
    rc = 0;
out:
    use(r, ctx, NULL); /* the rest of the bench on CLBlast's defaults */
    gemm_bufs_release(&g);
    free(ts);
    return rc;
}
