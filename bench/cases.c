/* cases.c - the timed section for one parameter count: for every selected
 * configuration, clgrad fused on paths A, B, C, hand-rolled fed like A and
 * B, and clgrad's kernels per tensor (one model per tensor) fed like A and
 * B. */
#include "bench_main.h"

#include <stdio.h>

typedef struct variant_run {
    bench_variant variant;
    char path; /* clgrad's path, or '-' */
    char feed; /* how gradients arrive */
} variant_run;

static const variant_run runs[] = {
    {BENCH_FUSED, 'A', 'A'},      {BENCH_FUSED, 'B', 'B'},   {BENCH_FUSED, 'C', 'A'},
    {BENCH_UNFUSED, '-', 'A'},    {BENCH_UNFUSED, '-', 'B'}, {BENCH_PER_TENSOR, '-', 'A'},
    {BENCH_PER_TENSOR, '-', 'B'},
};

static bm_shape shape_of(const bench_config *bc) { return bench_config_shape(bc); }

/* Fills the bytes-model fields of c. micro_bytes matches the micro-step
 * run_case.c reports (the second, or the first when k == 2). */
static int set_bytes(bench_case *c, const bench_config *bc)
{
    bm_cycle b;
    char path = c->path == '-' ? c->feed : c->path;
    if (bm_cycle_bytes(shape_of(bc), c->variant, path, c->k, &b))
        return -1;
    c->micro_bytes = c->k >= 3 ? b.later_micro : c->k == 2 ? b.first_micro : 0.0;
    c->update_bytes = b.final_step;
    c->cycle_bytes = b.cycle;
    return 0;
}

int bench_cases_section(bench_report *r, clg_context *ctx, bench_stream *st,
                        const bench_options *o, uint64_t n, bench_stream_samples *all)
{
    for (size_t i = 0; i < bench_config_count; i++) {
        const bench_config *bc = &bench_configs[i];
        if (!bench_options_wants(o, bc))
            continue;
        for (size_t v = 0; v < sizeof runs / sizeof runs[0]; v++) {
            const variant_run *vr = &runs[v];
            /* fp16 gradients exist only as external buffers: on path B the
             * backward writes the fp32 accumulator, which is plain adamw */
            if (bc->grad_dtype != CLG_FP32 && vr->feed == 'B')
                continue;
            /* bf16 and quantized states exist only in clgrad */
            if (vr->variant == BENCH_UNFUSED && !bench_config_has_handrolled(bc))
                continue;
            fprintf(stderr, "  n=%llu %-17s %-10s path %c feed %c ...\n",
                    (unsigned long long)n, bc->name, bench_variant_name(vr->variant),
                    vr->path, vr->feed);
            bench_cycle cy = {0};
            int rc = vr->variant == BENCH_UNFUSED
                         ? bench_handrolled_create(&cy, ctx, bc, n, o->tensors, vr->feed, o->k,
                                                   o->wg)
                         : bench_fused_create(&cy, ctx, bc, n, o->tensors,
                                              vr->variant == BENCH_PER_TENSOR,
                                              vr->path == '-' ? vr->feed : vr->path, o->k);
            if (rc) {
                bench_report_note(r, "n=%llu %s %s path %c: setup failed, case skipped",
                                  (unsigned long long)n, bc->name,
                                  bench_variant_name(vr->variant), vr->feed);
                continue;
            }
            bench_case c = {0};
            snprintf(c.optimizer, sizeof c.optimizer, "%s", bc->name);
            c.variant = vr->variant;
            c.path = vr->path;
            c.feed = vr->feed;
            c.clip = bc->clip;
            c.n = n;
            c.k = o->k;
            c.tensors = o->tensors;
            if (set_bytes(&c, bc) == 0
                && bench_run_case(&cy, st, ctx, &o->run, all, &c) == 0) {
                bench_case *slot = bench_report_add_case(r);
                if (!slot) {
                    bench_cycle_destroy(&cy);
                    return -1;
                }
                *slot = c;
            } else {
                bench_report_note(r, "n=%llu %s %s path %c: run failed, case skipped",
                                  (unsigned long long)n, bc->name,
                                  bench_variant_name(vr->variant), vr->feed);
            }
            bench_cycle_destroy(&cy);
        }
    }
    return 0;
}
