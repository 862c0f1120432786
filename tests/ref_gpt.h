/* ref_gpt.h - a plain double-precision reference of tools/train/tasks/gpt/gpt.cl's kernels
 * (the GPT task's forward and backward besides the GEMMs), written from
 * the definitions in tools/train/tasks/gpt/gpt_kernels.h rather than from
 * the kernels: LayerNorm's backward through its Jacobian, GELU's by a
 * central difference, the attention's split and merge by loops over
 * (b, t, h, d). Shapes as there: N = B * T rows, row-major throughout. The
 * gradients are the sums alone: a test applies beta itself. */
#ifndef CLGRAD_REF_GPT_H
#define CLGRAD_REF_GPT_H

#include <stdint.h>

/* tok[b * T + t] = windows[idx[off + b] * stride + t], target the token
 * after it; a token is tb bytes (1, or 2 little-endian). */
void ref_gpt_tokens(const uint8_t *windows, unsigned tb, const int32_t *idx, unsigned off,
                    unsigned stride, unsigned B, unsigned T, int *tok, int *target);

/* out [N x C] = wte[tok] + wpe[t] */
void ref_gpt_embed(const int *tok, unsigned B, unsigned T, unsigned C, const float *wte,
                   const float *wpe, double *out);
/* dwte [V x C], dwpe [T x C]: the sums of dout's rows per token and per
 * position. */
void ref_gpt_embed_backward(const int *tok, unsigned B, unsigned T, unsigned C, unsigned V,
                            const float *dout, double *dwte, double *dwpe);

/* LayerNorm (eps 1e-5, biased variance); mean, rstd [N]. */
void ref_gpt_layernorm(unsigned N, unsigned C, const float *inp, const float *w, const float *b,
                       double *out, double *mean, double *rstd);
/* dinp [N x C]: the gradient through the LayerNorm alone (the kernel adds
 * it); dw, db [C]. */
void ref_gpt_layernorm_backward(unsigned N, unsigned C, const float *dout, const float *inp,
                                const float *w, double *dinp, double *dw, double *db);

/* out [N x OC] + bias; the column sums of src [N x OC]. */
void ref_gpt_bias_add(unsigned N, unsigned OC, const float *out, const float *bias, double *res);
void ref_gpt_colsum(unsigned N, unsigned OC, const float *src, double *sum);

/* res [N x C] = a + b + bias (bias [C] over the rows; NULL: none), the
 * residual stream after a projection and its bias. */
void ref_gpt_residual_bias(unsigned N, unsigned C, const float *a, const float *b,
                           const float *bias, double *res);

/* GELU (tanh approximation) and its derivative. */
double ref_gpt_gelu(double x);
double ref_gpt_gelu_grad(double x);

/* Causal attention of R heads (gpt_flash.h), plainly: for q, k, v
 * [R x T x HS], p_ij = softmax over j <= i of scale q_i . k_j; y = p v
 * [R x T x HS], lse [R x T] the rows' log-sum-exp. The backward from q, k,
 * v and dy alone (p recomputed, D_i = sum_j p_ij dp_ij as the softmax's
 * backward has it): dq, dk, dv [R x T x HS]. */
void ref_gpt_flash_forward(unsigned R, unsigned T, unsigned HS, double scale, const float *q,
                           const float *k, const float *v, double *y, double *lse);
void ref_gpt_flash_backward(unsigned R, unsigned T, unsigned HS, double scale, const float *q,
                            const float *k, const float *v, const float *dy, double *dq,
                            double *dk, double *dv);

/* Cross-entropy of N rows of V logits against target: row_loss [N], and
 * dlogits = (softmax - onehot) * mult when dlogits is not NULL. */
void ref_gpt_xent(unsigned N, unsigned V, const float *logits, const int *target, double mult,
                  double *row_loss, double *dlogits);

#endif /* CLGRAD_REF_GPT_H */
