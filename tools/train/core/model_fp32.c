/* model_fp32.c - the task's fp32 buffers laid out like the model (see
 * model_fp32.h). */
#include "model_fp32.h"

#include <stdlib.h>
#include <string.h>

uint64_t model_fp32_master_bytes(const train_options *o, uint64_t n)
{
    return o->master_dtype == CLG_BF16 ? 4 * n : 0;
}

int model_fp32_reserve(run_state *r, const char *what, model_fp32 *c)
{
    memset(c, 0, sizeof *c);
    c->n = (int)clg_model_tensor_count(r->model);
    c->view = calloc((size_t)c->n, sizeof *c->view);
    if (!c->view)
        return run_fail(r, "%s: out of host memory", what);
    if (run_reserve_buffer(r, 4 * clg_model_param_count(r->model), what, &c->buf, &c->bytes) != 0)
        return -1;
    size_t off = 0;
    for (int i = 0; i < c->n; i++) {
        size_t cnt = clg_model_tensor_size(r->model, i);
        c->view[i] = (clg_view){c->buf, off, cnt};
        off += cnt;
    }
    return 0;
}

int model_fp32_master(run_state *r, model_fp32 *c)
{
    if (r->opt->master_dtype != CLG_BF16) {
        memset(c, 0, sizeof *c);
        return 0;
    }
    if (model_fp32_reserve(r, "fp32 copy of the bf16 weights", c) != 0)
        return -1;
    if (!(c->master = calloc((size_t)c->n, sizeof *c->master)))
        return run_fail(r, "fp32 copy of the bf16 weights: out of host memory");
    clg_status st = mlp_kernels_init(r->ctx, &c->k);
    if (st != CLG_SUCCESS)
        return run_fail_clg(r, "the kernel widening the bf16 weights", st);
    for (int i = 0; i < c->n; i++) {
        st = clg_model_param_view(r->model, i, &c->master[i]);
        if (st != CLG_SUCCESS)
            return run_fail_clg(r, "parameter view", st);
    }
    return model_fp32_widen(r, c);
}

int model_fp32_widen(run_state *r, model_fp32 *c)
{
    for (int i = 0; c->master && i < c->n; i++) {
        const clg_view *src = &c->master[i], *dst = &c->view[i];
        cl_int e = mlp_widen_bf16(&c->k, src->mem, src->offset, dst->mem, dst->offset,
                                  (cl_uint)src->count);
        if (e != CL_SUCCESS)
            return run_fail_cl(r, "widening the bf16 weights", e);
    }
    return 0;
}

void model_fp32_release(run_state *r, model_fp32 *c)
{
    run_release_buffer(r, &c->buf, &c->bytes);
    if (c->master)
        mlp_kernels_release(&c->k);
    free(c->view);
    free(c->master);
    memset(c, 0, sizeof *c);
}
