/* memplan.h - the memory plan clgrad-train prints at start: clgrad's
 * arenas, the trainer's activations per micro-batch, its gradient scratch
 * and the data set on the device, against device memory or the budget. */
#ifndef TRAIN_MEMPLAN_H
#define TRAIN_MEMPLAN_H

#include "clgrad.h"

#include <stdint.h>
#include <stdio.h>

typedef struct memplan {
    clg_model_plan model;   /* clgrad's arenas (+ grad buffers) */
    uint64_t activations;   /* for one micro-batch */
    unsigned micro_batch;
    uint64_t grad_scratch;  /* fp32 scratch for fp16/bf16 gradients */
    uint64_t weights;       /* fp32 copy of bf16 master weights for the GEMMs */
    clg_dtype state_dtype, master_dtype; /* for the rows' labels */
    unsigned shard, shards; /* ZeRO-1: the states are shard `shard` of `shards` */
    uint64_t data;          /* data set and index buffers */
    uint64_t total;
    uint64_t available;     /* budget, or device global memory */
    int is_budget;
} memplan;

void memplan_total(memplan *p);
void memplan_print(FILE *f, const memplan *p, const char *device_name, uint64_t params);
/* A limit a plan must fit in: bytes, and what sets it (NULL: the device's
 * global memory; else the flag that gave it, e.g. "--memory"). */
typedef struct memplan_limit {
    uint64_t bytes;
    const char *flag;
} memplan_limit;

/* Refuses a plan above the limit (before anything is allocated: a GPU
 * would fail at some later allocation, and a CPU device would swap or be
 * killed), naming both sizes and shrink, the task's flags that make the
 * plan smaller ("--hidden or --micro-batch"); allow
 * (--allow-over-device-memory) lets it go ahead. 0, or -1 with the
 * message. */
int memplan_refuse(const memplan *p, memplan_limit limit, const char *shrink, int allow, char *err,
                   size_t errlen);
/* "1.5 MiB" style. */
void memplan_bytes(char *buf, size_t len, uint64_t bytes);

#endif /* TRAIN_MEMPLAN_H */
