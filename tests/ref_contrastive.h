/* ref_contrastive.h - a double-precision host reference of clgrad's
 * contrastive loss (clgrad.h, "contrastive losses"; docs/design.md,
 * section 7): InfoNCE over n query and key rows with m rows of each bank
 * as extra negatives, its loss, and its gradient with respect to every
 * query and key row (none flows into the banks). Written from the
 * equations, not from the kernels: plain loops, the full softmax of each
 * row and column with its maximum subtracted. */
#ifndef CLGRAD_REF_CONTRASTIVE_H
#define CLGRAD_REF_CONTRASTIVE_H

#include <stddef.h>

typedef struct ref_con_setup {
    size_t n, d, m;     /* rows per side, row length, bank rows in use */
    double temperature;
    int symmetric;      /* 1: (q->k + k->q) / 2; 0: q->k */
    int normalize;      /* 1: cosine (F.normalize, eps 1e-12); 0: dot */
} ref_con_setup;

/* q, k: n x d; bq, bk: m x d (may be NULL when m = 0). gq, gk: n x d
 * outputs. Returns the loss. */
double ref_contrastive(const ref_con_setup *s, const float *q, const float *k, const float *bq,
                       const float *bk, double *gq, double *gk);

/* Relative L2 distance |a - b| / |b| of n values (|a - b| when |b| is 0). */
double ref_rel_l2(const float *a, const double *b, size_t n);

#endif /* CLGRAD_REF_CONTRASTIVE_H */
