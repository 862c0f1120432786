/* order.h - data order of clgrad-train: one seeded shuffle per epoch, cut
 * into effective batches of B samples, each cut into micro-batches of b.
 * The samples of each effective batch depend only on (seed, epoch, B),
 * never on b, so any micro-batch size performs the same updates. */
#ifndef TRAIN_ORDER_H
#define TRAIN_ORDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct batch_order {
    uint64_t seed;
    size_t n;        /* samples in the training set */
    size_t batch;    /* effective batch B */
    uint64_t epoch;  /* epoch the permutation belongs to */
    int32_t *perm;   /* n sample indices */
} batch_order;

int order_init(batch_order *o, uint64_t seed, size_t n, size_t batch);
void order_free(batch_order *o);
/* Builds the permutation of epoch (Fisher-Yates on stream (seed, epoch)). */
void order_shuffle(batch_order *o, uint64_t epoch);
/* Effective batches per epoch: ceil(n / B); the last one may be smaller. */
size_t order_batches_per_epoch(const batch_order *o);
/* Batch j of the epoch: perm[*start .. *start + *len). */
void order_batch(const batch_order *o, size_t j, size_t *start, size_t *len);
/* Micro-batches of a batch of len samples with micro-batch b: ceil(len/b);
 * micro-batch i starts at i*b and holds min(b, len - i*b) samples. */
size_t order_micro_count(size_t len, size_t b);
size_t order_micro_len(size_t len, size_t b, size_t i);

#endif /* TRAIN_ORDER_H */
