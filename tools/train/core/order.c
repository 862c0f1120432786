/* order.c - per-epoch shuffles and batch/micro-batch cuts (see order.h). */
#include "order.h"
#include "rng.h"

#include <stdlib.h>
#include <string.h>

/* Stream ids of rng.h used by the trainer; the init uses stream 0. */
#define ORDER_STREAM_BASE 0x100000000ull

int order_init(batch_order *o, uint64_t seed, size_t n, size_t batch)
{
    memset(o, 0, sizeof *o);
    if (n == 0 || batch == 0 || n > INT32_MAX)
        return -1;
    o->perm = malloc(n * sizeof *o->perm);
    if (!o->perm)
        return -1;
    o->seed = seed;
    o->n = n;
    o->batch = batch;
    order_shuffle(o, 0);
    return 0;
}

void order_free(batch_order *o)
{
    free(o->perm);
    memset(o, 0, sizeof *o);
}

void order_shuffle(batch_order *o, uint64_t epoch)
{
    train_rng r = train_rng_seed(o->seed, ORDER_STREAM_BASE + epoch);
    for (size_t i = 0; i < o->n; i++)
        o->perm[i] = (int32_t)i;
    for (size_t i = o->n - 1; i > 0; i--) {
        size_t j = (size_t)train_rng_below(&r, (uint64_t)i + 1);
        int32_t t = o->perm[i];
        o->perm[i] = o->perm[j];
        o->perm[j] = t;
    }
    o->epoch = epoch;
}

size_t order_batches_per_epoch(const batch_order *o)
{
    return (o->n + o->batch - 1) / o->batch;
}

void order_batch(const batch_order *o, size_t j, size_t *start, size_t *len)
{
    size_t s = j * o->batch;
    *start = s < o->n ? s : o->n;
    *len = s < o->n ? (o->n - s < o->batch ? o->n - s : o->batch) : 0;
}

size_t order_micro_count(size_t len, size_t b)
{
    return (len + b - 1) / b;
}

size_t order_micro_len(size_t len, size_t b, size_t i)
{
    size_t s = i * b;
    if (s >= len)
        return 0;
    return len - s < b ? len - s : b;
}
