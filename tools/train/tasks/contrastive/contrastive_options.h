/* contrastive_options.h - the flags of clgrad-train's contrastive task
 * (--task contrastive), taken out of the command line before the common
 * flags are parsed (options.h), their defaults, and the checks of the
 * combination with the common ones. */
#ifndef TRAIN_CONTRASTIVE_OPTIONS_H
#define TRAIN_CONTRASTIVE_OPTIONS_H

#include "options.h"

#include <stddef.h>
#include <stdint.h>

typedef enum con_method {
    CON_NAIVE = 0,     /* each micro-batch its own InfoNCE over its own rows */
    CON_GRADCACHE = 1, /* one InfoNCE over the whole batch, second forward */
    CON_CONTACCUM = 2  /* each micro-batch's InfoNCE with FIFO banks of past rows */
} con_method;

typedef struct con_options {
    con_method method;  /* --contrastive naive|gradcache|contaccum (gradcache) */
    float temperature;  /* --temperature (0.1) */
    unsigned embed_dim; /* --embed-dim: width of the encoder's output (128) */
    uint64_t bank_size; /* --bank-size: rows per bank (contaccum; 0: the batch) */
    int one_way;        /* --one-way: queries against keys only (default: symmetric) */
    unsigned knn;       /* --knn: neighbours of the kNN evaluation (20) */
    int knn_init;       /* --knn-init: also evaluate before training */
    int knn_embedding;  /* --knn-on embedding: evaluate the loss's embedding
                           (default hidden: the last hidden layer's output) */
    unsigned shift;     /* --aug-shift: largest shift of a view in pixels (2) */
    float noise;        /* --aug-noise: std of a view's pixel noise (0.1) */
} con_options;

void con_options_default(con_options *c);

/* The task's flags (flags.h): parsed, listed in --help and stored in
 * checkpoints ("train.contrastive.<key>") from this table. */
extern const flag_table con_flag_table;

/* The combinations of its own flags a contrastive run cannot take (the core
 * flags it cannot take are con_flag_table's limits), and the bank's default.
 * Returns 0 or -1 with a message. */
int con_options_check(con_options *c, const train_options *o, char *err, size_t errlen);

const char *con_method_name(con_method m);

#endif /* TRAIN_CONTRASTIVE_OPTIONS_H */
