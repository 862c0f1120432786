/* memory_report.c - the "memory" section: device bytes per parameter of
 * each configuration (path B holds no gradient buffers; paths A and C hold
 * one set) and the largest model whose training state fits the budget,
 * before activations. Numbers come from clg_model_estimate, checked
 * against the bytes model. */
#include "bench_main.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* Tensors start at multiples of 16 elements (CLG_TENSOR_ALIGN): the
 * largest model is rounded down to that. */
#define BENCH_PARAM_ALIGN 16

typedef struct estimate_arg {
    clg_config cfg;
    unsigned grad_bytes; /* 0 on path B */
} estimate_arg;

/* clgrad's total for n parameters with or without one set of gradient
 * buffers (whether the estimate includes them is read from its plan). */
static uint64_t estimate_total(uint64_t n, void *user)
{
    const estimate_arg *a = user;
    clg_model_plan plan = clg_model_plan_init();
    if (clg_model_estimate(&a->cfg, n, &plan) != CLG_SUCCESS)
        return UINT64_MAX;
    uint64_t total = plan.total;
    if (a->grad_bytes && plan.grad_buffers == 0)
        total += n * a->grad_bytes;
    if (!a->grad_bytes && plan.grad_buffers)
        total -= plan.grad_buffers;
    return total;
}

static bm_shape shape_of(const bench_config *bc) { return bench_config_shape(bc); }

int bench_memory_section(bench_report *r, uint64_t budget, unsigned k)
{
    int fallback_noted = 0;
    for (size_t i = 0; i < bench_config_count; i++) {
        const bench_config *bc = &bench_configs[i];
        for (int grads = 0; grads <= 1; grads++) {
            bench_memory *m = bench_report_add_memory(r);
            if (!m)
                return -1;
            snprintf(m->config, sizeof m->config, "%s", bc->name);
            snprintf(m->path, sizeof m->path, "%s", grads ? "A/C" : "B");
            bm_memory bm = bm_memory_per_param(shape_of(bc), 4, 0, grads);
            m->params = bm.params;
            m->accumulators = bm.accumulators;
            m->states = bm.states;
            m->param_copy = bm.param_copy;
            m->grad_buffers = bm.grad_buffers;
            m->budget_bytes = budget;

            estimate_arg a = {bench_clg_config(bc, k, grads), grads ? bench_dtype_bytes(bc->grad_dtype) : 0};
            const uint64_t n1 = 1ull << 20, n2 = 1ull << 21;
            uint64_t t1 = estimate_total(n1, &a), t2 = estimate_total(n2, &a);
            if (t1 != UINT64_MAX && t2 != UINT64_MAX && t2 > t1) {
                m->bytes_per_param = (double)(t2 - t1) / (double)(n2 - n1);
                double fixed = (double)t1 - m->bytes_per_param * (double)n1;
                m->fixed_bytes = fixed > 0 ? (uint64_t)fixed : 0;
                m->max_params_in_budget = bm_max_params(budget, estimate_total, &a,
                                                        BENCH_PARAM_ALIGN);
                /* the estimate also counts the reduction partials, one float
                 * per 2048 float4s in each of 3 regions: 12 B per 8192 */
                if (fabs(m->bytes_per_param - bm.total - 12.0 / 8192) > 1e-6)
                    bench_report_note(r,
                                      "memory %s path %s: clg_model_estimate gives %.3f "
                                      "B/param, the bytes model %.3f",
                                      m->config, m->path, m->bytes_per_param, bm.total);
            } else {
                m->bytes_per_param = bm.total;
                m->fixed_bytes = 0;
                m->max_params_in_budget = bm_max_params_linear(budget, 0, bm.total,
                                                               BENCH_PARAM_ALIGN);
                if (!fallback_noted++)
                    bench_report_note(r, "clg_model_estimate failed; memory section from "
                                         "the bytes model only");
            }
        }
    }
    return 0;
}
