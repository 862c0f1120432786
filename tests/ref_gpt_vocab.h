/* ref_gpt_vocab.h - double-precision reference of the kernels of a real
 * vocabulary (tools/train/tasks/gpt/gpt_vocab.h): uint16 tokens, the
 * classifier over logits padded to Vp columns, the token embedding and
 * its gradient. Written from the definitions, sharing nothing with the
 * kernels. */
#ifndef CLGRAD_REF_GPT_VOCAB_H
#define CLGRAD_REF_GPT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

/* tok[b T + t] = windows[idx[off + b] stride + t], target = the same at
 * t + 1. */
void ref_vocab_tokens(const uint16_t *windows, const int32_t *idx, unsigned off, unsigned stride,
                      unsigned B, unsigned T, int *tok, int *target);

/* out [N x C] = wte[tok] + wpe[t]; NaN where tok >= V. */
void ref_vocab_embed(const int *tok, unsigned B, unsigned T, unsigned C, unsigned V,
                     const float *wte, const float *wpe, double *out);

/* N rows of Vp columns, the first V of them classes: row_loss[n] =
 * logsumexp(row[:V]) - row[target]; dlogits (NULL: not wanted) [N x Vp] =
 * (softmax - onehot) mult over the first V columns, 0 over the padding.
 * A target >= V: row_loss NaN, the row's dlogits 0. */
void ref_vocab_xent(unsigned N, unsigned V, unsigned Vp, const float *logits, const int *target,
                    double mult, double *row_loss, double *dlogits);

/* dwte [V x C] = the sums of dout's rows [N x C] per token (0 for a
 * token absent, tokens >= V dropped); count [V] (NULL: not wanted) the
 * positions of each token. */
void ref_vocab_wte_grad(const int *tok, unsigned N, unsigned C, unsigned V, const float *dout,
                        double *dwte, unsigned *count);
/* The same sums in float, each over its token's positions in ascending
 * order: bitwise what an ordered device sum gives. */
void ref_vocab_wte_grad_ordered(const int *tok, unsigned N, unsigned C, unsigned V,
                                const float *dout, float *dwte);

#endif /* CLGRAD_REF_GPT_VOCAB_H */
