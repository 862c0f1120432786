/* report_csv.c - the --csv output: one row per measured case (the same
 * fields as the JSON "cases" list), for spreadsheets. */
#include "report.h"

#include <stdio.h>

int bench_write_csv(const bench_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "clgrad-bench: cannot write %s\n", path);
        return -1;
    }
    fprintf(f, "optimizer,variant,path,feed,clip,n,k,tensors,groups,reps,"
               "micro_ms,micro_ms_min,micro_ms_max,update_ms,update_ms_min,update_ms_max,"
               "cycle_ms,cycle_ms_min,cycle_ms_max,cycle_ms_q1,cycle_ms_q3,"
               "micro_bytes_per_param,update_bytes_per_param,cycle_bytes_per_param,"
               "micro_gbs,update_gbs,gbs,triad_gbs,micro_frac_of_triad,"
               "update_frac_of_triad,frac_of_triad,launches_per_update,"
               "launches_per_cycle,host_syncs_per_update\n");
    for (size_t i = 0; i < r->n_cases; i++) {
        const bench_case *c = &r->cases[i];
        fprintf(f,
                "%s,%s,%c,%c,%d,%llu,%u,%u,%u,%u,"
                "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
                "%.6g,%.6g,%.6g,%.6g,%.6g,"
                "%g,%g,%g,"
                "%.6g,%.6g,%.6g,%.6g,%.6g,"
                "%.6g,%.6g,%g,"
                "%g,%g\n",
                c->optimizer, bench_variant_name(c->variant), c->path, c->feed, c->clip,
                (unsigned long long)c->n, c->k, c->tensors, c->groups, c->reps,
                c->micro_ms.median, c->micro_ms.min, c->micro_ms.max, c->update_ms.median,
                c->update_ms.min, c->update_ms.max, c->cycle_ms.median, c->cycle_ms.min,
                c->cycle_ms.max, c->cycle_ms.q1, c->cycle_ms.q3, c->micro_bytes,
                c->update_bytes, c->cycle_bytes, c->micro_gbs, c->update_gbs, c->gbs,
                c->triad_gbs, c->micro_frac, c->update_frac, c->frac_of_triad,
                c->launches_per_update, c->launches_per_cycle, c->host_syncs_per_update);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "clgrad-bench: cannot write %s\n", path);
        return -1;
    }
    return 0;
}
