/* metrics.h - the --metrics CSV: one row per update, so that curves can be
 * plotted against samples seen whatever the accumulation factor k is. The
 * file is written through atomic_file.h: complete at the end of a run, or
 * the previous file is kept. */
#ifndef TRAIN_METRICS_H
#define TRAIN_METRICS_H

#include "atomic_file.h"

#include <stddef.h>
#include <stdint.h>

typedef struct metrics_row {
    uint64_t update, micro_steps, samples;
    unsigned epoch;
    double loss;            /* mean training loss of the update's samples */
    double lr, grad_norm, loss_scale;
    uint64_t skipped_updates;
    double samples_per_s;
} metrics_row;

/* Starts the file (its temporary) and writes the header. Returns 0, or -1
 * with a message in err. */
int metrics_open(atomic_file *f, const char *path, char *err, size_t errlen);
/* Returns 0, or -1 once a write failed (metrics_close says why). */
int metrics_write(atomic_file *f, const metrics_row *r);
/* Puts the file in place. Returns 0, or -1 with a message in err (the
 * previous file is then intact). */
int metrics_close(atomic_file *f, char *err, size_t errlen);

#endif /* TRAIN_METRICS_H */
