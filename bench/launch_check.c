/* launch_check.c - the "launches" section: kernel launches of the step
 * that ends a fused cycle, for a model of one tensor and for one of many
 * tensors (one param group), on every path. docs/design.md ("Launches per
 * update"): at most 3 plus one per param group, whatever the tensor count. */
#include "bench_main.h"
#include "clutil.h"

#include <stdio.h>

/* Launches of the final step of the second cycle (the first one builds
 * kernels and may differ); negative on failure. */
static double launches_of(clg_context *ctx, const bench_config *bc, uint64_t n,
                          unsigned tensors, char path, unsigned k)
{
    bench_cycle cy = {0};
    if (bench_fused_create(&cy, ctx, bc, n, tensors, 0, path, k))
        return -1.0;
    double result = -1.0;
    for (unsigned c = 0; c < 2; c++) {
        for (unsigned i = 0; i < k; i++) {
            uint64_t l0 = cy.launches(cy.self);
            if (cy.step(cy.self, i))
                goto done;
            if (c == 1 && i + 1 == k)
                result = (double)(cy.launches(cy.self) - l0);
        }
    }
    if (!bench_cl_ok(clFinish(clg_context_queue(ctx)), "clFinish"))
        result = -1.0;
done:
    bench_cycle_destroy(&cy);
    return result;
}

int bench_launch_section(bench_report *r, clg_context *ctx, const bench_options *o)
{
    static const char paths[] = {'A', 'B', 'C'};
    const uint64_t n = 1ull << 16;
    for (size_t i = 0; i < bench_config_count; i++) {
        const bench_config *bc = &bench_configs[i];
        if (!bench_options_wants(o, bc))
            continue;
        for (size_t p = 0; p < sizeof paths; p++) {
            double one = launches_of(ctx, bc, n, 1, paths[p], o->k);
            double many = launches_of(ctx, bc, n, o->tensors, paths[p], o->k);
            if (one < 0 || many < 0) {
                bench_report_note(r, "launch check %s path %c failed", bc->name, paths[p]);
                continue;
            }
            bench_launch_check *l = bench_report_add_launch_check(r);
            if (!l)
                return -1;
            snprintf(l->optimizer, sizeof l->optimizer, "%s", bc->name);
            l->path = paths[p];
            l->tensors_many = o->tensors;
            l->launches_1 = one;
            l->launches_many = many;
        }
    }
    return 0;
}
