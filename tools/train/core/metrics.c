/* metrics.c - CSV rows of per-update metrics (see metrics.h). */
#include "metrics.h"

int metrics_open(atomic_file *f, const char *path, char *err, size_t errlen)
{
    if (atomic_file_open(f, path, err, errlen) != 0)
        return -1;
    atomic_file_printf(f, "update,micro_steps,samples_seen,epoch,loss,lr,grad_norm,loss_scale,"
                          "skipped_updates,samples_per_s\n");
    return 0;
}

int metrics_write(atomic_file *f, const metrics_row *r)
{
    return atomic_file_printf(f, "%llu,%llu,%llu,%u,%.6g,%.6g,%.6g,%.6g,%llu,%.1f\n",
                              (unsigned long long)r->update, (unsigned long long)r->micro_steps,
                              (unsigned long long)r->samples, r->epoch, r->loss, r->lr,
                              r->grad_norm, r->loss_scale, (unsigned long long)r->skipped_updates,
                              r->samples_per_s);
}

int metrics_close(atomic_file *f, char *err, size_t errlen)
{
    return atomic_file_commit(f, err, errlen);
}
