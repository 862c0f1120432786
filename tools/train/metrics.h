/* metrics.h - the --metrics CSV: one row per update, so that curves can be
 * plotted against samples seen whatever the accumulation factor k is. */
#ifndef TRAIN_METRICS_H
#define TRAIN_METRICS_H

#include <stdint.h>
#include <stdio.h>

typedef struct metrics_row {
    uint64_t update, micro_steps, samples;
    unsigned epoch;
    double loss;            /* mean training loss of the update's samples */
    double lr, grad_norm, loss_scale;
    uint64_t skipped_updates;
    double samples_per_s;
} metrics_row;

/* Opens path for writing and writes the header; NULL on failure (errno). */
FILE *metrics_open(const char *path);
int metrics_write(FILE *f, const metrics_row *r);
/* Returns 0 when every row reached the file. */
int metrics_close(FILE *f);

#endif /* TRAIN_METRICS_H */
