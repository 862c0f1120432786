/* ref_contrastive.c - see ref_contrastive.h. */
#include "ref_contrastive.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NORM_EPS 1e-12

/* Rows of x as unit vectors (or as they are), and 1/max(|x|, eps). */
static double *unit_rows(const float *x, size_t rows, size_t d, int normalize, double *inv)
{
    double *u = malloc((rows ? rows : 1) * d * sizeof *u);
    for (size_t i = 0; i < rows; i++) {
        double s = 0;
        for (size_t c = 0; c < d; c++)
            s += (double)x[i * d + c] * x[i * d + c];
        double r = normalize ? 1.0 / fmax(sqrt(s), NORM_EPS) : 1.0;
        inv[i] = r;
        for (size_t c = 0; c < d; c++)
            u[i * d + c] = x[i * d + c] * r;
    }
    return u;
}

static double dot(const double *a, const double *b, size_t d)
{
    double s = 0;
    for (size_t c = 0; c < d; c++)
        s += a[c] * b[c];
    return s;
}

/* log sum_j exp(l_j) of the logits of row a against cols (n rows) and
 * bank (m rows); l holds n + m doubles of scratch. */
static double lse_row(const double *a, const double *cols, size_t n, const double *bank, size_t m,
                      size_t d, double tau, double *l)
{
    double mx = -INFINITY;
    for (size_t j = 0; j < n + m; j++) {
        l[j] = dot(a, j < n ? cols + j * d : bank + (j - n) * d, d) / tau;
        mx = l[j] > mx ? l[j] : mx;
    }
    double s = 0;
    for (size_t j = 0; j < n + m; j++)
        s += exp(l[j] - mx);
    return mx + log(s);
}

/* The backward of u = x / max(|x|, eps) for one row: g = dL/du in, dL/dx out. */
static void norm_backward(const float *x, const double *u, double inv, size_t d, int normalize,
                          double *g)
{
    if (!normalize)
        return;
    double s = 0;
    for (size_t c = 0; c < d; c++)
        s += (double)x[c] * x[c];
    double gu = dot(g, u, d);
    for (size_t c = 0; c < d; c++)
        g[c] = sqrt(s) > NORM_EPS ? (g[c] - gu * u[c]) * inv : g[c] * inv;
}

double ref_contrastive(const ref_con_setup *s, const float *q, const float *k, const float *bq,
                       const float *bk, double *gq, double *gk)
{
    size_t n = s->n, d = s->d, m = s->m;
    double tau = s->temperature;
    double *rq = malloc(n * sizeof *rq), *rk = malloc(n * sizeof *rk);
    double *rbq = malloc((m ? m : 1) * sizeof *rbq), *rbk = malloc((m ? m : 1) * sizeof *rbk);
    double *uq = unit_rows(q, n, d, s->normalize, rq), *uk = unit_rows(k, n, d, s->normalize, rk);
    double *ubq = unit_rows(bq, m, d, s->normalize, rbq);
    double *ubk = unit_rows(bk, m, d, s->normalize, rbk);
    double cq = s->symmetric ? 0.5 / n : 1.0 / n, ck = s->symmetric ? 0.5 / n : 0.0;

    double *lq = malloc(n * sizeof *lq), *lk = malloc(n * sizeof *lk);
    double *scratch = malloc((n + m) * sizeof *scratch);
    double loss = 0;
    for (size_t i = 0; i < n; i++) {
        double pos = dot(uq + i * d, uk + i * d, d) / tau;
        lq[i] = lse_row(uq + i * d, uk, n, ubk, m, d, tau, scratch);
        lk[i] = ck != 0 ? lse_row(uk + i * d, uq, n, ubq, m, d, tau, scratch) : 0;
        loss += cq * (lq[i] - pos) + ck * (lk[i] - pos);
    }

    /* dL/du for every row: in-batch pairs feed both sides, bank columns
     * only the row's side */
    memset(gq, 0, n * d * sizeof *gq);
    memset(gk, 0, n * d * sizeof *gk);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            double l = dot(uq + i * d, uk + j * d, d) / tau;
            double g = cq * (exp(l - lq[i]) - (i == j)) +
                       (ck != 0 ? ck * (exp(l - lk[j]) - (i == j)) : 0);
            for (size_t c = 0; c < d; c++) {
                gq[i * d + c] += g * uk[j * d + c] / tau;
                gk[j * d + c] += g * uq[i * d + c] / tau;
            }
        }
        for (size_t b = 0; b < m; b++) {
            double gb = cq * exp(dot(uq + i * d, ubk + b * d, d) / tau - lq[i]);
            for (size_t c = 0; c < d; c++)
                gq[i * d + c] += gb * ubk[b * d + c] / tau;
            if (ck != 0) {
                double gc = ck * exp(dot(uk + i * d, ubq + b * d, d) / tau - lk[i]);
                for (size_t c = 0; c < d; c++)
                    gk[i * d + c] += gc * ubq[b * d + c] / tau;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        norm_backward(q + i * d, uq + i * d, rq[i], d, s->normalize, gq + i * d);
        norm_backward(k + i * d, uk + i * d, rk[i], d, s->normalize, gk + i * d);
    }
    free(rq), free(rk), free(rbq), free(rbk);
    free(uq), free(uk), free(ubq), free(ubk);
    free(lq), free(lk), free(scratch);
    return loss;
}

double ref_rel_l2(const float *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        num += e * e;
        den += b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
