/* run_metrics.c - a run's --metrics file (see run.h): opened on the rank
 * that writes it, one row per update with clgrad's own statistics, put in
 * place at the end (run_release drops it, the previous file kept, when the
 * run fails). */
#include "run.h"
#include "summary.h"
#include "metrics.h"

#include <stdlib.h>

int run_metrics_open(run_state *r, int writes)
{
    if (!r->opt->metrics || !writes)
        return 0;
    char why[1024];
    r->metrics = malloc(sizeof *r->metrics);
    if (!r->metrics)
        return run_fail(r, "--metrics: out of host memory");
    if (metrics_open(r->metrics, r->opt->metrics, why, sizeof why) != 0) {
        free(r->metrics);
        r->metrics = NULL;
        return run_fail(r, "--metrics: %s", why);
    }
    return 0;
}

int run_metrics_row(run_state *r, double loss, const clg_stats *stats)
{
    if (!r->metrics)
        return 0;
    const clg_stats st = *stats;
    metrics_row row = {
        .update = r->updates,
        .micro_steps = r->micro_steps,
        .samples = r->samples,
        .epoch = (unsigned)r->epoch + 1,
        .loss = loss,
        .lr = st.lr,
        .grad_norm = st.grad_norm,
        .loss_scale = st.loss_scale,
        .skipped_updates = st.skipped_updates,
        .samples_per_s = run_samples_per_s(r),
    };
    if (metrics_write(r->metrics, &row) != 0) {
        char why[1024];
        metrics_close(r->metrics, why, sizeof why); /* fails: says why, drops the temporary */
        free(r->metrics);
        r->metrics = NULL;
        return run_fail(r, "--metrics: %s", why);
    }
    return 0;
}

int run_metrics_close(run_state *r)
{
    if (!r->metrics)
        return 0;
    char why[1024];
    int bad = metrics_close(r->metrics, why, sizeof why);
    free(r->metrics);
    r->metrics = NULL;
    if (bad)
        return run_fail(r, "--metrics: %s", why);
    train_note_written("--metrics", r->opt->metrics);
    return 0;
}
