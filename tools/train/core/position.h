/* position.h - where a clgrad-train run stands (data order and counters),
 * stored as the caller's metadata of clgrad checkpoints so that --resume
 * continues the same data order: the order of an epoch is a function of
 * (seed, epoch) alone (order.h), so the seed, the epoch and the next batch
 * are the data loader's whole state. */
#ifndef TRAIN_POSITION_H
#define TRAIN_POSITION_H

#include "clgrad.h"

#include <stddef.h>
#include <stdint.h>

typedef struct train_position {
    uint64_t seed, batch, n_train; /* must match on resume */
    uint64_t epoch, next_batch;    /* next effective batch to run */
    uint64_t updates, micro_steps, samples;
} train_position;

/* clg_checkpoint_save with the position as metadata, and n_extra more
 * key/value pairs (the run's settings, runconfig.h). */
clg_status position_save(clg_model *model, const char *path, const train_position *p,
                         const char *const *extra_keys, const char *const *extra_values,
                         size_t n_extra);
/* The same through save instead of clg_checkpoint_save (a collective save
 * of every rank of a --dist run: libclgrad-mpi's). */
typedef clg_status (*position_saver)(void *user, clg_model *model, const char *path,
                                     const char *const *keys, const char *const *values,
                                     size_t n);
clg_status position_save_with(clg_model *model, const char *path, const train_position *p,
                              const char *const *extra_keys, const char *const *extra_values,
                              size_t n_extra, position_saver save, void *user);
/* clg_checkpoint_load, then reads the position back; every other key/value
 * pair of the metadata goes to other (may be NULL). Returns 0, or -1 with
 * a message naming path in err (the model is unchanged when the load
 * itself fails). */
int position_load(clg_model *model, const char *path, train_position *p, clg_meta_fn other,
                  void *other_user, char *err, size_t errlen);

#endif /* TRAIN_POSITION_H */
