/* fit_run.c - clgrad-bench --fit: the planner on the selected device (its
 * max allocation), printed, and written as JSON and a PNG when asked. */
#include "bench_main.h"
#include "fit.h"

#include <stdio.h>
#include <stdlib.h>

int bench_fit_run(clg_context *ctx, const bench_options *o)
{
    bench_fit *f = calloc(1, sizeof *f);
    if (!f)
        return 1;
    int rc = bench_fit_compute(f, o->fit, o->reserve, clg_context_max_alloc(ctx),
                               o->fit_shards ? o->fit_shards : 1)
                 ? 1
                 : 0;
    if (!rc) {
        printf("device: %s\n", clg_context_device_info(ctx)->name);
        bench_fit_print(f, stdout, o->fit_params);
        if (o->json_path && bench_fit_write_json(f, o->json_path))
            rc = 1;
        if (o->plot_path && bench_fit_write_plot(f, o->plot_path))
            rc = 1;
    }
    free(f);
    return rc;
}
