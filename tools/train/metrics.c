/* metrics.c - CSV rows of per-update metrics (see metrics.h). */
#include "metrics.h"

FILE *metrics_open(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fprintf(f, "update,micro_steps,samples_seen,epoch,loss,lr,grad_norm,loss_scale,"
               "skipped_updates,samples_per_s\n");
    return f;
}

int metrics_write(FILE *f, const metrics_row *r)
{
    int n = fprintf(f, "%llu,%llu,%llu,%u,%.6g,%.6g,%.6g,%.6g,%llu,%.1f\n",
                    (unsigned long long)r->update, (unsigned long long)r->micro_steps,
                    (unsigned long long)r->samples, r->epoch, r->loss, r->lr, r->grad_norm,
                    r->loss_scale, (unsigned long long)r->skipped_updates, r->samples_per_s);
    return n < 0 ? -1 : 0;
}

int metrics_close(FILE *f)
{
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    return bad ? -1 : 0;
}
