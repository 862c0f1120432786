/* step_block.h - word indices of the device "step block": the small buffer
 * the prologue kernel writes once per update and every other kernel reads
 * (grad scale, skip flag, lr, bias corrections, loss scale, counters).
 * cl/common.cl defines the same indices; keep the two in step. */
#ifndef CLGRAD_STEP_BLOCK_H
#define CLGRAD_STEP_BLOCK_H

enum {
    CLG_SB_GRAD_SCALE = 0,   /* f: 1/sum(w) * 1/loss_scale * clip_coef     */
    CLG_SB_SKIP = 1,         /* u: 1 = this update is skipped              */
    CLG_SB_LR = 2,           /* f: scheduled lr of this update             */
    CLG_SB_BC1 = 3,          /* f: 1 - beta1^t                              */
    CLG_SB_BC2_SQRT = 4,     /* f: sqrt(1 - beta2^t)                        */
    CLG_SB_T = 5,            /* u: updates applied so far                   */
    CLG_SB_LOSS_SCALE = 6,   /* f: current loss scale                       */
    CLG_SB_GROWTH = 7,       /* u: clean updates since last scale change    */
    CLG_SB_SKIPPED = 8,      /* u: skipped updates                          */
    CLG_SB_SKIPPED_MICRO = 9,/* u: skipped micro-steps                      */
    CLG_SB_SUMSQ = 10,       /* f: sum of squares of the raw accumulator    */
    CLG_SB_GRAD_NORM = 11,   /* f: norm of the normalized, unscaled grad    */
    CLG_SB_CLIP_COEF = 12,   /* f: clipping coefficient                     */
    CLG_SB_NONFINITE = 13,   /* u: last update saw inf/NaN                  */
    CLG_SB_STICKY = 14,      /* u: inf/NaN seen since the last host sync    */
    CLG_SB_MICRO_OK = 15,    /* u: current micro-step is finite             */
    CLG_SB_MICRO_COUNT = 16, /* u: finite micro-steps in the cycle          */
    CLG_SB_WEIGHT_SUM = 17,  /* f: their weights                            */
    CLG_SB_SMALL_SUMSQ = 18, /* f: sum of squares of the first micro-step   */
    CLG_SB_SMALL_WEIGHT = 19,/* f: its weight                               */
    CLG_SB_NOISE_G2 = 20,    /* f: EMA of the |G|^2 estimate                */
    CLG_SB_NOISE_TR = 21,    /* f: EMA of the tr(Sigma) estimate            */
    CLG_SB_NOISE_SCALE = 22, /* f: B_simple = NOISE_TR / NOISE_G2           */
    CLG_SB_NOISE_COUNT = 23, /* u: estimates folded into the EMA            */
    CLG_SB_WORDS = 32
};

#endif /* CLGRAD_STEP_BLOCK_H */
