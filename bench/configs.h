/* configs.h - the optimizer configurations clgrad-bench measures (SGD with
 * momentum, Adam, AdamW, AdamW + clipping + dynamic loss scaling, AdamW
 * with fp16 gradients, Lion) and how each becomes a clg_config. */
#ifndef BENCH_CONFIGS_H
#define BENCH_CONFIGS_H

#include "bytes_model.h"
#include "clgrad.h"

typedef struct bench_config {
    const char *name;    /* short, stable: used in JSON, CSV and plots */
    clg_optimizer optimizer;
    clg_dtype grad_dtype; /* of the external gradient buffers (paths A, C) */
    int clip;             /* clip by global norm 1.0 */
    int dynamic_loss_scale;
    clg_dtype state_dtype; /* of the optimizer states (CLG_FP32 = 0: fp32) */
} bench_config;

/* The measured configurations, in report order. */
extern const bench_config bench_configs[];
extern const size_t bench_config_count;

/* Finds a configuration by name; NULL if none. */
const bench_config *bench_config_find(const char *name);

/* clgrad's configuration for bc with k micro-steps; fuse_last selects path
 * C (1) or A (0); it does not matter on path B. */
clg_config bench_clg_config(const bench_config *bc, unsigned k, int fuse_last);

/* Optimizer state arrays per parameter (SGD momentum 1, Adam(W) 2, Lion 1). */
unsigned bench_state_count(clg_optimizer optimizer);
/* Bytes of one element of dtype (fp32 4, fp16/bf16 2, none 0). */
unsigned bench_dtype_bytes(clg_dtype dtype);
/* Whether the update needs a pass over the whole gradient before it
 * (global norm for clipping, inf/NaN check for loss scaling). */
int bench_config_needs_stats(const bench_config *bc);
/* What the bytes model needs to know of bc. */
bm_shape bench_config_shape(const bench_config *bc);
/* Whether a hand-rolled (CLBlast) cycle of bc exists: not for bf16 or
 * quantized states, which only clgrad keeps. */
int bench_config_has_handrolled(const bench_config *bc);

#endif /* BENCH_CONFIGS_H */
