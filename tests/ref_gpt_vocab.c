/* ref_gpt_vocab.c - see ref_gpt_vocab.h. */
#include "ref_gpt_vocab.h"

#include <math.h>
#include <string.h>

void ref_vocab_tokens(const uint16_t *windows, const int32_t *idx, unsigned off, unsigned stride,
                      unsigned B, unsigned T, int *tok, int *target)
{
    for (unsigned b = 0; b < B; b++) {
        const uint16_t *w = windows + (size_t)idx[off + b] * stride;
        for (unsigned t = 0; t < T; t++) {
            tok[(size_t)b * T + t] = w[t];
            target[(size_t)b * T + t] = w[t + 1];
        }
    }
}

void ref_vocab_embed(const int *tok, unsigned B, unsigned T, unsigned C, unsigned V,
                     const float *wte, const float *wpe, double *out)
{
    for (size_t n = 0; n < (size_t)B * T; n++) {
        size_t t = n % T;
        for (unsigned c = 0; c < C; c++)
            out[n * C + c] =
                (unsigned)tok[n] < V ? (double)wte[(size_t)tok[n] * C + c] + wpe[t * C + c] : NAN;
    }
}

void ref_vocab_xent(unsigned N, unsigned V, unsigned Vp, const float *logits, const int *target,
                    double mult, double *row_loss, double *dlogits)
{
    for (unsigned n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * Vp;
        double *d = dlogits ? dlogits + (size_t)n * Vp : NULL;
        unsigned y = (unsigned)target[n];
        if (y >= V) {
            row_loss[n] = NAN;
            for (unsigned j = 0; d && j < Vp; j++)
                d[j] = 0.0;
            continue;
        }
        double m = l[0], s = 0;
        for (unsigned j = 1; j < V; j++)
            m = fmax(m, l[j]);
        for (unsigned j = 0; j < V; j++)
            s += exp(l[j] - m);
        row_loss[n] = log(s) + m - l[y];
        for (unsigned j = 0; d && j < Vp; j++)
            d[j] = j < V ? (exp(l[j] - m) / s - (j == y ? 1.0 : 0.0)) * mult : 0.0;
    }
}

void ref_vocab_wte_grad(const int *tok, unsigned N, unsigned C, unsigned V, const float *dout,
                        double *dwte, unsigned *count)
{
    memset(dwte, 0, (size_t)V * C * sizeof *dwte);
    if (count)
        memset(count, 0, V * sizeof *count);
    for (unsigned n = 0; n < N; n++) {
        unsigned v = (unsigned)tok[n];
        if (v >= V)
            continue;
        if (count)
            count[v]++;
        for (unsigned c = 0; c < C; c++)
            dwte[(size_t)v * C + c] += dout[(size_t)n * C + c];
    }
}

void ref_vocab_wte_grad_ordered(const int *tok, unsigned N, unsigned C, unsigned V,
                                const float *dout, float *dwte)
{
    memset(dwte, 0, (size_t)V * C * sizeof *dwte);
    for (unsigned n = 0; n < N; n++) /* ascending positions: each token's own order */
        if ((unsigned)tok[n] < V)
            for (unsigned c = 0; c < C; c++)
                dwte[(size_t)tok[n] * C + c] += dout[(size_t)n * C + c];
}
