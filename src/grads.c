/* grads.c - external gradient buffers (paths A and C): arenas laid out
 * like the accumulator, in fp32, fp16 or bf16. Destroy them before their
 * model. */
#include "arena.h"
#include "config.h"
#include "model.h"

#include <stdlib.h>

clg_status clg_grads_create(clg_model *m, clg_dtype dtype, clg_grads **out)
{
    if (m == NULL || out == NULL)
        return clg__fail(m ? m->ctx : NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_grads_create: NULL argument");
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "clg_grads_create: model not finalized");
    if (dtype != CLG_FP32 && dtype != CLG_FP16 && dtype != CLG_BF16)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_grads_create: dtype %d must be CLG_FP32, CLG_FP16 or CLG_BF16",
                         (int)dtype);
    clg_grads *g = calloc(1, sizeof *g);
    if (g == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_grads_create: out of memory");
    g->model = m;
    g->dtype = dtype;
    clg_status st = clg__arena_alloc(m, &g->arena, dtype, clg__dtype_size(dtype));
    if (st != CLG_SUCCESS) {
        free(g);
        return st;
    }
    m->grads_bytes += clg__arena_bytes(m, g->arena.elem_size);
    *out = g;
    return CLG_SUCCESS;
}

void clg_grads_destroy(clg_grads *g)
{
    if (g == NULL)
        return;
    g->model->grads_bytes -= clg__arena_bytes(g->model, g->arena.elem_size);
    clg__arena_free(g->model, &g->arena);
    free(g);
}

clg_status clg_grads_view(const clg_grads *g, int t, clg_view *view)
{
    if (g == NULL || view == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_grads_view: NULL argument");
    const clg_model *m = g->model;
    if (t < 0 || (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_grads_view: no tensor %d (the model has %zu)", t, m->n_tensors);
    const clg_tensor_slot *ts = &m->tensors[t];
    *view = (clg_view){g->arena.chunks[ts->chunk], ts->offset, ts->count};
    return CLG_SUCCESS;
}

clg_status clg_grads_upload(clg_grads *g, int t, const void *host)
{
    if (g == NULL || host == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_grads_upload: NULL argument");
    clg_model *m = g->model;
    if (t >= 0 && (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_grads_upload: no tensor %d (the model has %zu)", t, m->n_tensors);
    size_t first = t < 0 ? 0 : (size_t)t, last = t < 0 ? m->n_tensors : (size_t)t + 1;
    const char *p = host;
    for (size_t i = first; i < last; i++) {
        const clg_tensor_slot *ts = &m->tensors[i];
        size_t bytes = ts->count * g->arena.elem_size;
        cl_int err = clg__fault_hit(CLG_FAULT_ENQUEUE)
                         ? CL_OUT_OF_RESOURCES
                         : clEnqueueWriteBuffer(m->ctx->queue, g->arena.chunks[ts->chunk],
                                                CL_FALSE, ts->offset * g->arena.elem_size, bytes,
                                                p, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            clFinish(m->ctx->queue);
            return clg__cl_fail(m->ctx, err, "clg_grads_upload", "clEnqueueWriteBuffer");
        }
        p += bytes;
    }
    cl_int err = clFinish(m->ctx->queue);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, "clg_grads_upload", "clFinish");
}
