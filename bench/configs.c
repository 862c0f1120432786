/* configs.c - the measured optimizer configurations. */
#include "configs.h"

#include <string.h>

const bench_config bench_configs[] = {
    {"sgd_momentum", CLG_SGD, CLG_FP32, 0, 0, CLG_FP32},
    {"adam", CLG_ADAM, CLG_FP32, 0, 0, CLG_FP32},
    {"adamw", CLG_ADAMW, CLG_FP32, 0, 0, CLG_FP32},
    {"adamw_clip_dls", CLG_ADAMW, CLG_FP32, 1, 1, CLG_FP32},
    {"adamw_fp16_grads", CLG_ADAMW, CLG_FP16, 0, 0, CLG_FP32},
    {"lion", CLG_LION, CLG_FP32, 0, 0, CLG_FP32},
    /* smaller states (docs/design.md, section 2: their bytes model) */
    {"adamw_bf16_states", CLG_ADAMW, CLG_FP32, 0, 0, CLG_BF16},
    {"adamw_q8", CLG_ADAMW, CLG_FP32, 0, 0, CLG_Q8},
    {"adamw_q4", CLG_ADAMW, CLG_FP32, 0, 0, CLG_Q4},
};
const size_t bench_config_count = sizeof bench_configs / sizeof bench_configs[0];

const bench_config *bench_config_find(const char *name)
{
    for (size_t i = 0; i < bench_config_count; i++)
        if (strcmp(bench_configs[i].name, name) == 0)
            return &bench_configs[i];
    return NULL;
}

clg_config bench_clg_config(const bench_config *bc, unsigned k, int fuse_last)
{
    clg_config cfg = clg_config_init(bc->optimizer);
    cfg.accum_steps = k;
    cfg.fuse_last_micro_step = fuse_last;
    if (bc->optimizer == CLG_SGD)
        cfg.momentum = 0.9f; /* PyTorch's default is 0: no state to measure */
    if (bc->clip)
        cfg.clip_norm = 1.0f;
    if (bc->dynamic_loss_scale)
        cfg.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    cfg.state_dtype = bc->state_dtype;
    return cfg;
}

unsigned bench_state_count(clg_optimizer optimizer)
{
    switch (optimizer) {
    case CLG_SGD:
    case CLG_LION:
        return 1;
    case CLG_ADAM:
    case CLG_ADAMW:
        return 2;
    }
    return 0;
}

unsigned bench_dtype_bytes(clg_dtype dtype)
{
    /* Q8 and Q4 are optimizer states only, never gradients: 0, as for none */
    return dtype == CLG_FP32 ? 4 : dtype == CLG_FP16 || dtype == CLG_BF16 ? 2 : 0;
}

int bench_config_needs_stats(const bench_config *bc)
{
    return bc->clip || bc->dynamic_loss_scale;
}

bm_shape bench_config_shape(const bench_config *bc)
{
    bm_shape s = {bench_state_count(bc->optimizer), bench_dtype_bytes(bc->grad_dtype),
                  bench_config_needs_stats(bc), bc->clip, bm_state_bytes((int)bc->state_dtype),
                  4};
    return s;
}

int bench_config_has_handrolled(const bench_config *bc)
{
    return bc->state_dtype == CLG_FP32;
}
