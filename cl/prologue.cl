/* prologue.cl - one-work-group kernels that reduce the partials of the
 * streaming passes (second stage, fixed order) and turn them into the step
 * block, so that no per-step decision needs the host:
 *   prologue        end of cycle: norm, clip coefficient, skip flag, grad
 *                   scale, lr schedule, bias corrections, loss-scale update,
 *                   noise-scale estimate, counters.
 *   micro_prologue  skip-micro mode: verdict on one micro-step's gradient.
 *   fold_small      noise scale: the first micro-step's statistics.
 * Variants (-D): STATS, CLIP, POLICY (0 ignore, 1 skip update, 2 skip micro,
 * 3 error), LOSS_SCALE (0 none, 1 static, 2 dynamic), MEAN, SCHED (0
 * constant, 1 linear, 2 cosine), NOISE. Parameter lists (PROLOGUE_PARAMS,
 * FOLD_PARAMS): cl/layout.py. */

#ifndef STATS
#define STATS 0
#endif
#ifndef CLIP
#define CLIP 0
#endif
#ifndef POLICY
#define POLICY 0
#endif
#ifndef LOSS_SCALE
#define LOSS_SCALE 0
#endif
#ifndef MEAN
#define MEAN 1
#endif
#ifndef SCHED
#define SCHED 0
#endif
#ifndef NOISE
#define NOISE 0
#endif

#define POLICY_SKIP_MICRO 2
#define POLICY_ERROR 3

inline float scheduled_lr(uint t, float lr, ulong warmup, ulong total, float min_lr)
{
    if ((ulong)t < warmup)
        return lr * (float)(t + 1) / (float)warmup;
#if SCHED == 0
    (void)total;
    (void)min_lr;
    return lr;
#else
    float p = total > warmup ? (float)((ulong)t - warmup) / (float)(total - warmup) : 1.0f;
    p = clamp(p, 0.0f, 1.0f);
#if SCHED == 1
    return min_lr + (lr - min_lr) * (1.0f - p);
#else
    return min_lr + (lr - min_lr) * 0.5f * (1.0f + cospi(p));
#endif
#endif
}

/* 1 - beta^s, accurate also when beta^s is close to 1. */
inline float bias_correction(float beta, uint s)
{
    return beta == 0.0f ? 1.0f : -expm1((float)s * log(beta));
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void prologue(PROLOGUE_PARAMS)
{
    local float scratch[WG];
#if STATS
    float sumsq = sum_partials(partials, 0, n_main, scratch);
#else
    (void)partials;
    (void)n_main;
    (void)scratch;
#endif
    if (get_local_id(0) != 0)
        return;
    uint t = sb[SB_T];
#if LOSS_SCALE
    float ls = sb_float(sb, SB_LOSS_SCALE);
#else
    float ls = 1.0f;
#endif
#if POLICY == POLICY_SKIP_MICRO
    float w = sb_float(sb, SB_WEIGHT_SUM);
#else
    float w = weight_sum;
#endif
#if MEAN
    float inv = 1.0f / (w * ls);
#else
    float inv = 1.0f / ls;
#endif

    uint nonfinite = 0;
    float coef = 1.0f;
#if STATS
    nonfinite = !isfinite(sumsq);
    float norm = sqrt(sumsq) * inv;
    sb[SB_SUMSQ] = as_uint(sumsq);
    sb[SB_GRAD_NORM] = as_uint(norm);
#if CLIP
    coef = fmin(1.0f, max_norm / (norm + 1e-6f));
#endif
#endif
    (void)max_norm;

    uint skip = POLICY != 0 && nonfinite;
    sb[SB_NONFINITE] = nonfinite;
    sb[SB_SKIP] = skip;
    sb[SB_CLIP_COEF] = as_uint(coef);
    sb[SB_GRAD_SCALE] = as_uint(inv * coef);
    if (skip) {
        sb[SB_SKIPPED] += 1u;
#if POLICY == POLICY_ERROR
        sb[SB_STICKY] = 1u;
#endif
    }

    uint s = t + 1u;
    sb[SB_LR] = as_uint(scheduled_lr(t, lr, warmup, total, min_lr));
    sb[SB_BC1] = as_uint(bias_correction(beta1, s));
    sb[SB_BC2_SQRT] = as_uint(sqrt(bias_correction(beta2, s)));
    if (!skip)
        sb[SB_T] = s;

#if LOSS_SCALE == 2
    /* torch.amp GradScaler: back off on inf/NaN, grow after `interval`
     * clean updates in a row. */
    uint tracker = sb[SB_GROWTH];
    if (nonfinite) {
        ls *= backoff;
        tracker = 0u;
    } else if (++tracker == interval) {
        float grown = ls * growth;
        ls = isfinite(grown) ? grown : ls;
        tracker = 0u;
    }
    sb[SB_GROWTH] = tracker;
    sb[SB_LOSS_SCALE] = as_uint(clamp(ls, scale_min, scale_max));
#else
    (void)growth;
    (void)backoff;
    (void)interval;
    (void)scale_min;
    (void)scale_max;
#endif

#if NOISE && STATS
    /* McCandlish et al. 2018, appendix A: two batch sizes, two norms. */
    float b_small = sb_float(sb, SB_SMALL_WEIGHT);
    float b_big = w;
    if (!nonfinite && b_big > b_small && b_small > 0.0f) {
        float small_sumsq = sb_float(sb, SB_SMALL_SUMSQ);
        float ws = b_small * ls;
        float wb = b_big * ls;
        float g_small2 = small_sumsq / (ws * ws);
        float g_big2 = sumsq / (wb * wb);
        float g2 = (b_big * g_big2 - b_small * g_small2) / (b_big - b_small);
        float tr = (g_small2 - g_big2) / (1.0f / b_small - 1.0f / b_big);
        uint count = sb[SB_NOISE_COUNT];
        float e_g2 = count ? noise_ema * sb_float(sb, SB_NOISE_G2) + (1.0f - noise_ema) * g2 : g2;
        float e_tr = count ? noise_ema * sb_float(sb, SB_NOISE_TR) + (1.0f - noise_ema) * tr : tr;
        sb[SB_NOISE_G2] = as_uint(e_g2);
        sb[SB_NOISE_TR] = as_uint(e_tr);
        sb[SB_NOISE_SCALE] = as_uint(e_tr / e_g2);
        sb[SB_NOISE_COUNT] = count + 1u;
    }
#else
    (void)noise_ema;
#endif
    sb[SB_SMALL_WEIGHT] = as_uint(0.0f);
    sb[SB_MICRO_COUNT] = 0u;
    sb[SB_WEIGHT_SUM] = as_uint(0.0f);
}

/* Skip-micro mode: decides whether the micro-step just checked (the sum
 * of squares of its gradient) is added (1), added as the first of its
 * cycle (2) or dropped (0). */
inline void micro_verdict(global uint *sb, float sumsq, float weight)
{
    uint count = sb[SB_MICRO_COUNT];
    if (!isfinite(sumsq)) {
        sb[SB_MICRO_OK] = 0u;
        sb[SB_SKIPPED_MICRO] += 1u;
        return;
    }
    sb[SB_MICRO_OK] = count == 0u ? 2u : 1u;
    sb[SB_MICRO_COUNT] = count + 1u;
    sb[SB_WEIGHT_SUM] = as_uint(sb_float(sb, SB_WEIGHT_SUM) + weight);
}

/* Noise scale: keeps the first micro-step's sum of squares and weight in the
 * step block until the end of the cycle (so a checkpoint taken mid-cycle
 * carries them). */
inline void keep_small(global uint *sb, float sumsq, float weight)
{
    sb[SB_SMALL_SUMSQ] = as_uint(sumsq);
    sb[SB_SMALL_WEIGHT] = as_uint(weight);
}

/* The kernels of FOLD_PARAMS: one work-group sums partials[base .. base +
 * n) (one micro-step's sum of squares) and work-item 0, which holds the
 * sum, folds it into the step block with fold(sb, sumsq, weight). */
#define FOLD_KERNEL(name, fold)                                                                 \
    __attribute__((reqd_work_group_size(WG, 1, 1))) kernel void name(FOLD_PARAMS)               \
    {                                                                                           \
        local float scratch[WG];                                                                \
        const float sumsq = sum_partials(partials, base, n, scratch);                           \
        if (get_local_id(0) == 0)                                                               \
            fold(sb, sumsq, weight);                                                            \
    }
FOLD_KERNEL(micro_prologue, micro_verdict)
FOLD_KERNEL(fold_small, keep_small)
