/* ref_gpt.c - the double-precision reference of tools/train/tasks/gpt/gpt.cl (ref_gpt.h). */
#include "ref_gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Token t of window w of tb bytes a token (little-endian). */
static int token_at(const uint8_t *w, unsigned tb, unsigned t)
{
    return tb == 1 ? w[t] : w[2 * t] | w[2 * t + 1] << 8;
}

void ref_gpt_tokens(const uint8_t *windows, unsigned tb, const int32_t *idx, unsigned off,
                    unsigned stride, unsigned B, unsigned T, int *tok, int *target)
{
    for (unsigned b = 0; b < B; b++) {
        const uint8_t *w = windows + (size_t)idx[off + b] * stride * tb;
        for (unsigned t = 0; t < T; t++) {
            tok[b * T + t] = token_at(w, tb, t);
            target[b * T + t] = token_at(w, tb, t + 1);
        }
    }
}

void ref_gpt_embed(const int *tok, unsigned B, unsigned T, unsigned C, const float *wte,
                   const float *wpe, double *out)
{
    for (unsigned b = 0; b < B; b++)
        for (unsigned t = 0; t < T; t++)
            for (unsigned c = 0; c < C; c++) {
                size_t n = (size_t)b * T + t;
                out[n * C + c] = (double)wte[(size_t)tok[n] * C + c] + wpe[(size_t)t * C + c];
            }
}

void ref_gpt_embed_backward(const int *tok, unsigned B, unsigned T, unsigned C, unsigned V,
                            const float *dout, double *dwte, double *dwpe)
{
    memset(dwte, 0, V * (size_t)C * sizeof *dwte);
    memset(dwpe, 0, (size_t)T * C * sizeof *dwpe);
    for (unsigned b = 0; b < B; b++)
        for (unsigned t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            for (unsigned c = 0; c < C; c++) {
                dwte[(size_t)tok[n] * C + c] += dout[n * C + c];
                dwpe[(size_t)t * C + c] += dout[n * C + c];
            }
        }
}

/* Mean and 1 / sqrt(biased variance + 1e-5) of one row. */
static void row_stats(const float *x, unsigned C, double *mean, double *rstd)
{
    double m = 0, v = 0;
    for (unsigned c = 0; c < C; c++)
        m += x[c];
    m /= C;
    for (unsigned c = 0; c < C; c++)
        v += (x[c] - m) * (x[c] - m);
    *mean = m;
    *rstd = 1.0 / sqrt(v / C + 1e-5);
}

void ref_gpt_layernorm(unsigned N, unsigned C, const float *inp, const float *w, const float *b,
                       double *out, double *mean, double *rstd)
{
    for (unsigned n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        row_stats(x, C, &mean[n], &rstd[n]);
        for (unsigned c = 0; c < C; c++)
            out[(size_t)n * C + c] = (x[c] - mean[n]) * rstd[n] * w[c] + b[c];
    }
}

/* Through the Jacobian of xhat = (x - mean) rstd:
 * d xhat_j / d x_i = rstd (delta_ij - 1/C - xhat_i xhat_j / C). */
void ref_gpt_layernorm_backward(unsigned N, unsigned C, const float *dout, const float *inp,
                                const float *w, double *dinp, double *dw, double *db)
{
    double *xhat = malloc(C * sizeof *xhat);
    memset(dw, 0, C * sizeof *dw);
    memset(db, 0, C * sizeof *db);
    for (unsigned n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        double m, rs;
        row_stats(x, C, &m, &rs);
        for (unsigned c = 0; c < C; c++)
            xhat[c] = (x[c] - m) * rs;
        for (unsigned i = 0; i < C; i++) {
            double s = 0;
            for (unsigned j = 0; j < C; j++)
                s += (double)d[j] * w[j] * rs *
                     ((i == j ? 1.0 : 0.0) - 1.0 / C - xhat[i] * xhat[j] / C);
            dinp[(size_t)n * C + i] = s;
            dw[i] += d[i] * xhat[i];
            db[i] += d[i];
        }
    }
    free(xhat);
}

void ref_gpt_bias_add(unsigned N, unsigned OC, const float *out, const float *bias, double *res)
{
    for (size_t i = 0; i < (size_t)N * OC; i++)
        res[i] = (double)out[i] + bias[i % OC];
}

void ref_gpt_colsum(unsigned N, unsigned OC, const float *src, double *sum)
{
    for (unsigned c = 0; c < OC; c++) {
        sum[c] = 0;
        for (unsigned n = 0; n < N; n++)
            sum[c] += src[(size_t)n * OC + c];
    }
}

void ref_gpt_residual_bias(unsigned N, unsigned C, const float *a, const float *b,
                           const float *bias, double *res)
{
    for (size_t i = 0; i < (size_t)N * C; i++)
        res[i] = (double)a[i] + b[i] + (bias ? bias[i % C] : 0.0);
}

double ref_gpt_gelu(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* A central difference: error about 1e-10, independent of the kernel's
 * closed form. */
double ref_gpt_gelu_grad(double x)
{
    const double h = 1e-5;
    return (ref_gpt_gelu(x + h) - ref_gpt_gelu(x - h)) / (2 * h);
}

void ref_gpt_xent(unsigned N, unsigned V, const float *logits, const int *target, double mult,
                  double *row_loss, double *dlogits)
{
    for (unsigned n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        double m = l[0], s = 0;
        for (unsigned j = 1; j < V; j++)
            m = fmax(m, l[j]);
        for (unsigned j = 0; j < V; j++)
            s += exp(l[j] - m);
        row_loss[n] = log(s) + m - l[target[n]];
        if (dlogits)
            for (unsigned j = 0; j < V; j++)
                dlogits[(size_t)n * V + j] =
                    (exp(l[j] - m) / s - (j == (unsigned)target[n] ? 1.0 : 0.0)) * mult;
    }
}

/* p[j] = softmax over j <= i of scale q_i . k_j of head r (p has i + 1
 * elements); returns the log-sum-exp. */
static double flash_row_probs(unsigned T, unsigned HS, double scale, const float *q,
                              const float *k, size_t r, unsigned i, double *p)
{
    const float *qi = q + ((size_t)r * T + i) * HS;
    double m = -INFINITY, s = 0;
    for (unsigned j = 0; j <= i; j++) {
        const float *kj = k + ((size_t)r * T + j) * HS;
        double dot = 0;
        for (unsigned d = 0; d < HS; d++)
            dot += (double)qi[d] * kj[d];
        p[j] = scale * dot;
        m = fmax(m, p[j]);
    }
    for (unsigned j = 0; j <= i; j++)
        s += exp(p[j] - m);
    for (unsigned j = 0; j <= i; j++)
        p[j] = exp(p[j] - m) / s;
    return m + log(s);
}

void ref_gpt_flash_forward(unsigned R, unsigned T, unsigned HS, double scale, const float *q,
                           const float *k, const float *v, double *y, double *lse)
{
    double *p = malloc((T ? T : 1) * sizeof *p);
    for (size_t r = 0; r < R; r++)
        for (unsigned i = 0; i < T; i++) {
            lse[r * T + i] = flash_row_probs(T, HS, scale, q, k, r, i, p);
            double *yi = y + (r * T + i) * HS;
            for (unsigned d = 0; d < HS; d++) {
                yi[d] = 0;
                for (unsigned j = 0; j <= i; j++)
                    yi[d] += p[j] * v[(r * T + j) * HS + d];
            }
        }
    free(p);
}

void ref_gpt_flash_backward(unsigned R, unsigned T, unsigned HS, double scale, const float *q,
                            const float *k, const float *v, const float *dy, double *dq,
                            double *dk, double *dv)
{
    size_t n = (size_t)R * T * HS;
    memset(dk, 0, n * sizeof *dk);
    memset(dv, 0, n * sizeof *dv);
    double *p = malloc((T ? T : 1) * sizeof *p), *dp = malloc((T ? T : 1) * sizeof *dp);
    for (size_t r = 0; r < R; r++)
        for (unsigned i = 0; i < T; i++) {
            flash_row_probs(T, HS, scale, q, k, r, i, p);
            size_t row_i = (r * T + i) * HS;
            double D = 0;
            for (unsigned j = 0; j <= i; j++) {
                dp[j] = 0;
                for (unsigned d = 0; d < HS; d++)
                    dp[j] += (double)dy[row_i + d] * v[(r * T + j) * HS + d];
                D += p[j] * dp[j];
            }
            for (unsigned d = 0; d < HS; d++)
                dq[row_i + d] = 0;
            for (unsigned j = 0; j <= i; j++) {
                size_t row_j = (r * T + j) * HS;
                double ds = p[j] * (dp[j] - D);
                for (unsigned d = 0; d < HS; d++) {
                    dq[row_i + d] += scale * ds * k[row_j + d];
                    dk[row_j + d] += scale * ds * q[row_i + d];
                    dv[row_j + d] += p[j] * dy[row_i + d];
                }
            }
        }
    free(p);
    free(dp);
}
