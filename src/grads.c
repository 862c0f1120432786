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
                         "clg_grads_create: NULL %s", m == NULL ? "model" : "out");
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
    if (g == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_grads_view: NULL grads");
    const clg_model *m = g->model;
    if (view == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "clg_grads_view: NULL view");
    if (t < 0 || (size_t)t >= m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_grads_view: no tensor %d (the model has %zu)", t, m->n_tensors);
    const clg_tensor_slot *ts = &m->tensors[t];
    *view = (clg_view){g->arena.chunks[ts->chunk], ts->offset, ts->count};
    return CLG_SUCCESS;
}

static clg_status check_upload(const clg_grads *g, int t, const void *host, size_t count,
                               const clg_events *ev, const char *who)
{
    clg_model *m = g->model;
    if (host == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL host", who);
    bool all = t == CLG_ALL_TENSORS;
    if (!all && (t < 0 || (size_t)t >= m->n_tensors))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no tensor %d (the model has %zu; CLG_ALL_TENSORS is -1)", who, t,
                         m->n_tensors);
    clg_status st = clg__host_count_check(m, t, count, who);
    if (st != CLG_SUCCESS)
        return st;
    return clg__events_check(m->ctx, ev, who);
}

static clg_status upload(clg_grads *g, int t, const void *host, const char *who)
{
    clg_model *m = g->model;
    bool all = t == CLG_ALL_TENSORS;
    size_t first = all ? 0 : (size_t)t, last = all ? m->n_tensors : (size_t)t + 1;
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
            return clg__cl_fail(m->ctx, err, who, "clEnqueueWriteBuffer");
        }
        p += bytes;
    }
    cl_int err = clFinish(m->ctx->queue);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clFinish");
}

clg_status clg_grads_upload(clg_grads *g, int t, const void *host, size_t count,
                            const clg_events *ev)
{
    clg__events_clear(ev);
    const char *who = "clg_grads_upload";
    if (g == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL grads", who);
    clg_status st = check_upload(g, t, host, count, ev, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(g->model->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = upload(g, t, host, who);
    return clg__events_finish(g->model->ctx, ev, st, who);
}
