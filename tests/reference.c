/* reference.c - the double-precision reference of one clgrad update cycle
 * (see reference.h). Every formula follows docs/semantics.md; the optimizer
 * steps follow the algorithm boxes of torch.optim's documentation. */
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ setup */

size_t ref_state_count(const clg_config *cfg)
{
    switch (cfg->optimizer) {
    case CLG_SGD: return cfg->momentum != 0.0f ? 1 : 0;
    case CLG_ADAM:
    case CLG_ADAMW: return cfg->amsgrad ? 3 : 2;
    case CLG_LION: return 1;
    }
    return 0;
}

int ref_model_init(ref_model *r, const clg_config *cfg, size_t n_groups, const double *lr_mult,
                   const double *weight_decay, size_t n_tensors, const size_t *counts,
                   const int *groups, const float *p0)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    r->n_groups = n_groups;
    r->n_tensors = n_tensors;
    r->lr_mult = calloc(n_groups, sizeof(double));
    r->wd = calloc(n_groups, sizeof(double));
    r->offset = calloc(n_tensors, sizeof(size_t));
    r->count = calloc(n_tensors, sizeof(size_t));
    r->group = calloc(n_tensors, sizeof(int));
    r->tensor_norm = calloc(n_tensors, sizeof(double));
    if (!r->lr_mult || !r->wd || !r->offset || !r->count || !r->group || !r->tensor_norm)
        return -1;
    for (size_t g = 0; g < n_groups; g++) {
        r->lr_mult[g] = lr_mult[g];
        r->wd[g] = weight_decay[g] < 0 ? (double)cfg->weight_decay : weight_decay[g];
    }
    size_t n = 0;
    for (size_t i = 0; i < n_tensors; i++) {
        if (groups[i] < 0 || (size_t)groups[i] >= n_groups)
            return -1;
        r->offset[i] = n;
        r->count[i] = counts[i];
        r->group[i] = groups[i];
        n += counts[i];
    }
    r->n = n;
    r->p = calloc(n ? n : 1, sizeof(double));
    r->acc = calloc(n ? n : 1, sizeof(double));
    r->acc1 = calloc(n ? n : 1, sizeof(double));
    if (!r->p || !r->acc || !r->acc1)
        return -1;
    r->n_states = ref_state_count(cfg);
    for (size_t s = 0; s < r->n_states; s++) {
        r->st[s] = calloc(n ? n : 1, sizeof(double));
        if (!r->st[s])
            return -1;
    }
    for (size_t i = 0; i < n; i++)
        r->p[i] = p0 ? (double)p0[i] : 0.0;
    r->loss_scale = cfg->loss_scale == CLG_LOSS_SCALE_NONE ? 1.0 : (double)cfg->loss_scale_init;
    r->grad_norm = NAN;
    r->clip_coef = 1.0;
    r->noise_g2 = r->noise_tr = r->noise_scale = NAN;
    return 0;
}

void ref_model_free(ref_model *r)
{
    free(r->lr_mult);
    free(r->wd);
    free(r->offset);
    free(r->count);
    free(r->group);
    free(r->tensor_norm);
    free(r->p);
    free(r->acc);
    free(r->acc1);
    for (size_t s = 0; s < 3; s++)
        free(r->st[s]);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ schedules */

double ref_schedule_lr(const clg_config *cfg, uint64_t t)
{
    const clg_schedule *s = &cfg->schedule;
    double lr = cfg->lr, min_lr = s->min_lr;
    if (t < s->warmup)
        return lr * (double)(t + 1) / (double)s->warmup;
    if (s->kind == CLG_SCHED_CONSTANT)
        return lr;
    double p = 1.0;
    if (s->total > s->warmup)
        p = (double)(t - s->warmup) / (double)(s->total - s->warmup);
    p = p < 0 ? 0 : p > 1 ? 1 : p;
    if (s->kind == CLG_SCHED_LINEAR)
        return min_lr + (lr - min_lr) * (1.0 - p);
    return min_lr + (lr - min_lr) * 0.5 * (1.0 + cos(M_PI * p));
}

unsigned ref_cycle_length(const clg_config *cfg, uint64_t cycle)
{
    return cfg->k_schedule ? cfg->k_schedule(cycle, cfg->k_schedule_user) : cfg->accum_steps;
}

void ref_loss_scale_update(const clg_config *cfg, double *scale, unsigned *tracker, int found_inf)
{
    /* torch._amp_update_scale_: backoff on inf, else grow after `interval`
     * consecutive clean steps; clgrad clamps to [min, max] afterwards. */
    if (found_inf) {
        *scale *= cfg->loss_scale_backoff;
        *tracker = 0;
    } else {
        unsigned successful = *tracker + 1;
        if (successful >= cfg->loss_scale_interval) {
            *scale *= cfg->loss_scale_growth;
            *tracker = 0;
        } else {
            *tracker = successful;
        }
    }
    if (*scale < cfg->loss_scale_min)
        *scale = cfg->loss_scale_min;
    if (*scale > cfg->loss_scale_max)
        *scale = cfg->loss_scale_max;
}

/* ------------------------------------------------------------ optimizers */

static double sign(double x)
{
    return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}

/* One element of one optimizer step; g is the clipped, normalized gradient. */
static void ref_step_element(ref_model *r, size_t i, double g, double lr, double wd, double s)
{
    const clg_config *c = &r->cfg;
    double *p = &r->p[i];
    if (c->maximize && c->optimizer != CLG_LION)
        g = -g;
    switch (c->optimizer) {
    case CLG_SGD: {
        if (wd != 0)
            g += wd * *p;
        if (c->momentum != 0.0f) {
            double mom = c->momentum, *b = &r->st[0][i];
            *b = s == 1 ? g : mom * *b + (1.0 - (double)c->dampening) * g;
            g = c->nesterov ? g + mom * *b : *b;
        }
        *p -= lr * g;
        break;
    }
    case CLG_ADAM:
    case CLG_ADAMW: {
        double b1 = c->beta1, b2 = c->beta2, eps = c->eps;
        if (c->optimizer == CLG_ADAMW)
            *p *= 1.0 - lr * wd;
        else if (wd != 0)
            g += wd * *p;
        double *m = &r->st[0][i], *v = &r->st[1][i];
        *m = b1 * *m + (1.0 - b1) * g;
        *v = b2 * *v + (1.0 - b2) * g * g;
        double vv = *v;
        if (c->amsgrad) {
            double *vmax = &r->st[2][i];
            if (*v > *vmax)
                *vmax = *v;
            vv = *vmax;
        }
        double bc1 = 1.0 - pow(b1, s), bc2 = 1.0 - pow(b2, s);
        *p -= (lr / bc1) * *m / (sqrt(vv) / sqrt(bc2) + eps);
        break;
    }
    case CLG_LION: {
        double b1 = c->beta1, b2 = c->beta2, *m = &r->st[0][i];
        *p *= 1.0 - lr * wd;
        double u = b1 * *m + (1.0 - b1) * g;
        *p -= lr * sign(u);
        *m = b2 * *m + (1.0 - b2) * g;
        break;
    }
    }
}

/* ------------------------------------------------------------ the cycle */

static clg_nonfinite_policy effective_policy(const clg_config *c)
{
    if (c->loss_scale == CLG_LOSS_SCALE_DYNAMIC && c->nonfinite == CLG_NONFINITE_IGNORE)
        return CLG_NONFINITE_SKIP_UPDATE;
    return c->nonfinite;
}

static int needs_stats(const clg_config *c)
{
    return c->clip_norm > 0 || effective_policy(c) != CLG_NONFINITE_IGNORE ||
           c->loss_scale == CLG_LOSS_SCALE_DYNAMIC || c->noise_scale || c->tensor_norms ||
           c->grad_norm;
}

static double sumsq(const double *x, size_t n, double scale)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (x[i] * scale) * (x[i] * scale);
    return s;
}

static void ref_noise(ref_model *r, double L)
{
    double bs = r->w1, bb = r->weight_sum;
    if (!(bb > bs))
        return;
    double gs2 = sumsq(r->acc1, r->n, 1.0 / (bs * L));
    double gb2 = sumsq(r->acc, r->n, 1.0 / (bb * L));
    double g2 = (bb * gb2 - bs * gs2) / (bb - bs);
    double tr = (gs2 - gb2) / (1.0 / bs - 1.0 / bb);
    double a = r->cfg.noise_scale_ema;
    if (r->noise_count == 0) {
        r->noise_g2 = g2;
        r->noise_tr = tr;
    } else {
        r->noise_g2 = a * r->noise_g2 + (1.0 - a) * g2;
        r->noise_tr = a * r->noise_tr + (1.0 - a) * tr;
    }
    r->noise_count++;
    r->noise_scale = r->noise_tr / r->noise_g2;
}

static void ref_end_cycle(ref_model *r)
{
    const clg_config *c = &r->cfg;
    clg_nonfinite_policy policy = effective_policy(c);
    double L = r->loss_scale;
    double denom = (c->normalize == CLG_NORM_MEAN ? r->weight_sum : 1.0) * L;

    int nonfinite = 0;
    for (size_t i = 0; i < r->n; i++)
        if (!isfinite(r->acc[i]))
            nonfinite = 1;

    double total = 0;
    for (size_t t = 0; t < r->n_tensors; t++) {
        double s = sumsq(r->acc + r->offset[t], r->count[t], 1.0 / denom);
        r->tensor_norm[t] = sqrt(s);
        total += s;
    }
    double norm = sqrt(total);
    r->grad_norm = needs_stats(c) ? norm : NAN;
    double coef = 1.0;
    if (c->clip_norm > 0) {
        coef = c->clip_norm / (norm + 1e-6);
        if (coef > 1.0)
            coef = 1.0;
    }
    r->clip_coef = coef;
    r->last_nonfinite = nonfinite;

    if (c->noise_scale && !nonfinite)
        ref_noise(r, L);

    int skip = nonfinite && (policy == CLG_NONFINITE_SKIP_UPDATE || policy == CLG_NONFINITE_ERROR);
    if (skip) {
        r->skipped_updates++;
        if (policy == CLG_NONFINITE_ERROR)
            r->sticky_nonfinite = 1;
    } else {
        double s = (double)(r->t + 1);
        double lr0 = ref_schedule_lr(c, r->t);
        for (size_t t = 0; t < r->n_tensors; t++) {
            double lr = lr0 * r->lr_mult[r->group[t]], wd = r->wd[r->group[t]];
            for (size_t i = r->offset[t]; i < r->offset[t] + r->count[t]; i++) {
                double g = r->acc[i] / denom * coef;
                if (c->clip_value > 0) {
                    double cv = c->clip_value;
                    g = g > cv ? cv : g < -cv ? -cv : g;
                }
                ref_step_element(r, i, g, lr, wd, s);
            }
        }
        r->last_lr = lr0;
        r->t++;
    }
    if (c->loss_scale == CLG_LOSS_SCALE_DYNAMIC)
        ref_loss_scale_update(c, &r->loss_scale, &r->growth_tracker, nonfinite);
    r->cycles++;
    r->micro = 0;
    r->weight_sum = 0;
}

int ref_micro(ref_model *r, const double *g, double w)
{
    const clg_config *c = &r->cfg;
    r->micro_total++;
    if (c->nonfinite == CLG_NONFINITE_SKIP_MICRO) {
        for (size_t i = 0; i < r->n; i++) {
            if (!isfinite(w * g[i])) {
                r->skipped_micro++;
                return 0;
            }
        }
    }
    if (r->micro == 0) {
        r->k = ref_cycle_length(c, r->cycles);
        r->w1 = w;
        for (size_t i = 0; i < r->n; i++)
            r->acc[i] = r->acc1[i] = w * g[i];
    } else {
        for (size_t i = 0; i < r->n; i++)
            r->acc[i] += w * g[i];
    }
    r->micro++;
    r->weight_sum += w;
    if (r->micro >= r->k) {
        ref_end_cycle(r);
        return 1;
    }
    return 0;
}

int ref_micro_f(ref_model *r, const float *g, double w)
{
    double *d = malloc((r->n ? r->n : 1) * sizeof(double));
    if (!d)
        abort();
    for (size_t i = 0; i < r->n; i++)
        d[i] = g[i];
    int done = ref_micro(r, d, w);
    free(d);
    return done;
}

int ref_flush(ref_model *r)
{
    if (r->micro == 0)
        return -1;
    ref_end_cycle(r);
    return 0;
}

void ref_reset_cycle(ref_model *r)
{
    r->micro = 0;
    r->weight_sum = 0;
}

/* ------------------------------------------------------------ fp16 / bf16 */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t ref_f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sgn = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: keep it NaN, quiet */
        return (uint16_t)(sgn | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (uint16_t)(sgn | 0x7c00u);
    if (a >= 0x38800000u) { /* normal half (>= 2^-14) */
        /* rebias the exponent (127 -> 15) and round the 13 dropped bits to
         * nearest even; a carry into the exponent is the right result */
        uint32_t rounded = a + 0x0fffu + ((a >> 13) & 1u);
        return (uint16_t)(sgn | ((rounded - 0x38000000u) >> 13));
    }
    /* subnormal half: units of 2^-24; x * 2^24 is exact in double and
     * rint rounds half to even in the default rounding mode */
    double units = rint(fabs((double)x) * 16777216.0);
    return (uint16_t)(sgn | (uint16_t)units);
}

float ref_f16_to_f32(uint16_t h)
{
    int sgn = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp((double)(m | 0x400), e - 25);
    return (float)(sgn ? -v : v);
}

uint16_t ref_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ref_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

/* ------------------------------------------------------------ comparisons */

size_t ref_compare(const char *what, const float *got, const double *want, size_t n, double rtol,
                   double atol)
{
    size_t bad = 0, first = (size_t)-1, worst = 0;
    double worst_ratio = -1;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double ratio;
        if (isnan(w) || isnan(g))
            ratio = (isnan(w) && isnan(g)) ? 0 : INFINITY;
        else if (isinf(w) || isinf(g))
            ratio = g == w ? 0 : INFINITY;
        else
            ratio = fabs(g - w) / (atol + rtol * fabs(w));
        if (ratio > 1.0) {
            if (!bad)
                first = i;
            bad++;
        }
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu elements outside atol %g + rtol %g\n", what, bad, n, atol,
                rtol);
        fprintf(stderr, "  first [%zu]: got %.9g want %.12g\n", first, (double)got[first],
                want[first]);
        fprintf(stderr, "  worst [%zu]: got %.9g want %.12g (%.3g x tolerance)\n", worst,
                (double)got[worst], want[worst], worst_ratio);
    }
    return bad;
}
