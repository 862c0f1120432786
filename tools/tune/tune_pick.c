/* tune_pick.c - the choice of (switch-over size, XgemmDirect, Xgemm)
 * configurations from measured times (tune_pick.h). */
#include "tune_pick.h"

#include <math.h>
#include <string.h>

int pick_is_direct(double mnk, size_t t)
{
    return mnk < (double)t * (double)t * (double)t;
}

/* The smallest T with T^3 > x. */
static size_t cube_above(double x)
{
    size_t t = (size_t)cbrt(x);
    while ((double)t * t * t <= x)
        t++;
    while (t > 1 && (double)(t - 1) * (t - 1) * (t - 1) > x)
        t--;
    return t;
}

/* The thresholds worth trying: one per way of splitting the distinct m n k
 * values into a lower part (XgemmDirect) and an upper part (Xgemm). Where
 * the default already makes a split, it is the one used for it. */
static size_t thresholds(const pick_problem *p, size_t *out)
{
    double v[PICK_MAX_SHAPES];
    size_t u = 0;
    for (size_t k = 0; k < p->n_shapes; k++) {
        size_t j = 0;
        while (j < u && v[j] != p->mnk[k])
            j++;
        if (j == u)
            v[u++] = p->mnk[k];
    }
    for (size_t a = 0; a < u; a++)
        for (size_t b = a + 1; b < u; b++)
            if (v[b] < v[a]) {
                double x = v[a];
                v[a] = v[b];
                v[b] = x;
            }
    size_t n = 0;
    for (size_t j = 0; j <= u; j++) {
        /* the j smallest sizes go to XgemmDirect: T^3 in (v[j-1], v[j]] */
        size_t lo = j == 0 ? 1 : cube_above(v[j - 1]);
        size_t t;
        if (p->default_threshold >= lo && (j == u || !pick_is_direct(v[j], p->default_threshold)))
            t = p->default_threshold;          /* the default splits here already */
        else if (j == u)
            t = lo;
        else {
            /* between the two sizes, near their geometric middle */
            double mid = cbrt(sqrt((j ? v[j - 1] : 1.0) * v[j]));
            t = (size_t)mid > lo ? (size_t)mid : lo;
        }
        if (t > p->max_threshold)
            t = p->max_threshold;
        if (t < 1)
            t = 1;
        if (j > 0 && !pick_is_direct(v[j - 1], t))
            continue; /* no value this tuning may hold splits here */
        if (j < u && pick_is_direct(v[j], t))
            continue; /* no integer between the two sizes */
        out[n++] = t;
    }
    return n;
}

static pick_choice defaults(const pick_problem *p)
{
    pick_choice c = {p->default_threshold, -1, -1, 0, {0}};
    for (size_t k = 0; k < p->n_shapes; k++) {
        c.shape_ms[k] = p->base[k];
        c.ms += p->count[k] * p->base[k];
    }
    return c;
}

/* The margin rule (tune_pick.h) on c. */
static void keep_default_direct(const pick_problem *p, pick_choice *c)
{
    int def = p->default_direct;
    if (c->d < 0 || def < 0 || c->d == def)
        return;
    double mine = 0, theirs = 0;
    for (size_t k = 0; k < p->n_shapes; k++)
        if (pick_is_direct(p->mnk[k], c->threshold)) {
            mine += p->count[k] * c->shape_ms[k];
            theirs += p->count[k] * p->ms[(size_t)def * p->n_shapes + k];
        }
    if (!isfinite(theirs) || mine < (1 - p->direct_margin) * theirs)
        return;
    c->d = def;
    c->ms += theirs - mine;
    for (size_t k = 0; k < p->n_shapes; k++)
        if (pick_is_direct(p->mnk[k], c->threshold))
            c->shape_ms[k] = p->ms[(size_t)def * p->n_shapes + k];
}

pick_result tune_pick(const pick_problem *p)
{
    pick_result r;
    r.best = defaults(p);
    r.best_any = r.best;
    size_t t[PICK_MAX_SHAPES + 1];
    size_t n_t = thresholds(p, t);
    for (size_t a = 0; a < n_t; a++)
        for (size_t d = 0; d < p->n_cand; d++) {
            if (!p->direct[d])
                continue;
            for (size_t i = 0; i < p->n_cand; i++) {
                if (p->direct[i])
                    continue;
                pick_choice c = {t[a], (int)d, (int)i, 0, {0}};
                int within = 1;
                for (size_t k = 0; k < p->n_shapes; k++) {
                    size_t from = pick_is_direct(p->mnk[k], t[a]) ? d : i;
                    double ms = p->ms[from * p->n_shapes + k];
                    c.shape_ms[k] = ms;
                    c.ms += p->count[k] * ms;
                    if (!(ms <= p->max_ratio * p->base[k]))
                        within = 0;
                }
                if (c.ms < r.best_any.ms)
                    r.best_any = c;
                if (within && c.ms < r.best.ms)
                    r.best = c;
            }
        }
    keep_default_direct(p, &r.best);
    if (!(r.best.ms < defaults(p).ms))
        r.best = defaults(p); /* what the margin gave up was all the gain */
    return r;
}
