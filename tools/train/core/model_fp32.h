/* model_fp32.h - an fp32 buffer of the task's own laid out like clgrad's
 * model (tensor i right after tensor i - 1, one view each), reserved
 * against the context's budget. Two uses: the fp32 working copy of bf16
 * master weights (--master-dtype bf16: clgrad keeps the parameters as bf16
 * and updates them with stochastic rounding, but CLBlast's GEMMs and the
 * tasks' kernels read fp32), widened exactly from clgrad's parameters
 * after every update and after a resume; and the classifier's fp32
 * gradient scratch in front of fp16/bf16 gradient buffers. */
#ifndef TRAIN_MODEL_FP32_H
#define TRAIN_MODEL_FP32_H

#include "mlp_kernels.h"
#include "run.h"

typedef struct model_fp32 {
    cl_mem buf;       /* NULL: none (e.g. fp32 master weights) */
    uint64_t bytes;   /* reserved */
    int n;            /* tensors */
    clg_view *view;   /* n views of buf, fp32 */
    clg_view *master; /* model_fp32_master: clgrad's bf16 params */
    mlp_kernels k;    /* model_fp32_master: the widening kernel */
} model_fp32;

/* Bytes of the copy of n parameters model_fp32_master reserves under the
 * options: 4 n with --master-dtype bf16, else 0 (the memory plans). */
uint64_t model_fp32_master_bytes(const train_options *o, uint64_t n);

/* The buffer and its views for r's finalized model; what names it in a
 * message. 0, or -1 with the message in r->err. */
int model_fp32_reserve(run_state *r, const char *what, model_fp32 *c);

/* With --master-dtype bf16: the fp32 copy of the parameters, widened from
 * them (call it once the parameters are initialized); otherwise nothing
 * (c->buf stays NULL: the task reads clgrad's fp32 parameters). */
int model_fp32_master(run_state *r, model_fp32 *c);

/* The copy widened again from clgrad's parameters (after an update, a
 * resume or anything else that writes them); nothing without a copy. */
int model_fp32_widen(run_state *r, model_fp32 *c);

void model_fp32_release(run_state *r, model_fp32 *c);

#endif /* TRAIN_MODEL_FP32_H */
