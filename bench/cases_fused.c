/* cases_fused.c - clgrad's own cycle: clg_step k times on one model of
 * many tensors ("fused": one param group, so each pass is one launch
 * whatever the tensor count), or clgrad's kernels launched per tensor
 * ("per_tensor": one model per tensor, each driven through its own clg_step
 * every micro-step, so every accumulate, prologue and update launch is
 * repeated per tensor). */
#include "cycle.h"
#include "clgrad_advanced.h"
#include "clutil.h"

#include <stdio.h>
#include <stdlib.h>

/* One clgrad model and, on paths A and C, its gradient buffers. */
typedef struct unit {
    clg_model *model;
    clg_grads *grads; /* NULL on path B */
} unit;

typedef struct fused {
    clg_context *ctx;
    unit *units;      /* 1 (fused) or one per tensor (per_tensor) */
    unsigned n_units;
    unsigned k;
} fused;

static int fused_step(void *self, unsigned i)
{
    fused *f = self;
    for (unsigned u = 0; u < f->n_units; u++) {
        int updated = 0;
        clg_status st = clg_step(f->units[u].model, f->units[u].grads, 1.0f, &updated, NULL);
        if (!bench_clg_ok(f->ctx, st, "clg_step"))
            return -1;
        if (updated != (i + 1 == f->k)) {
            fprintf(stderr,
                    "clgrad-bench: clg_step %u of %u (model %u): updated = %d, cycle "
                    "misaligned\n",
                    i + 1, f->k, u, updated);
            return -1;
        }
    }
    return 0;
}

static uint64_t fused_launches(void *self)
{
    return clg_context_launches(((fused *)self)->ctx);
}

static void fused_destroy(void *self)
{
    fused *f = self;
    if (!f)
        return;
    for (unsigned u = 0; f->units && u < f->n_units; u++) {
        clg_grads_destroy(f->units[u].grads);
        clg_model_destroy(f->units[u].model);
    }
    free(f->units);
    free(f);
}

/* Fills a view with one repeated value of pattern_size bytes. */
static int fill_view(clg_context *ctx, const clg_view *v, const void *pattern,
                     size_t pattern_size)
{
    cl_int err = clEnqueueFillBuffer(clg_context_queue(ctx), v->mem, pattern, pattern_size,
                                     v->offset * pattern_size, v->count * pattern_size, 0,
                                     NULL, NULL);
    return bench_cl_ok(err, "clEnqueueFillBuffer(view)") ? 0 : -1;
}

size_t bench_tensor_size(uint64_t n, unsigned tensors, unsigned i)
{
    uint64_t base = n / tensors, extra = n % tensors;
    return (size_t)(base + (i < extra ? 1 : 0));
}

/* Creates one model holding tensors [first, first + count) of the split of
 * n into `tensors`, in one param group, with small finite values in the
 * accumulator and (paths A, C) the gradient buffers. */
static int unit_create(unit *u, clg_context *ctx, const bench_config *bc, uint64_t n,
                       unsigned tensors, unsigned first, unsigned count, char path, unsigned k)
{
    clg_config cfg = bench_clg_config(bc, k, path == 'C');
    if (!bench_clg_ok(ctx, clg_model_create(ctx, &cfg, &u->model), "clg_model_create"))
        return -1;
    for (unsigned t = 0; t < count; t++) {
        char name[32];
        int id;
        snprintf(name, sizeof name, "t%u", first + t);
        if (!bench_clg_ok(ctx,
                          clg_model_add_tensor(u->model, name,
                                               bench_tensor_size(n, tensors, first + t), 0,
                                               &id),
                          "clg_model_add_tensor"))
            return -1;
    }
    if (!bench_clg_ok(ctx, clg_model_finalize(u->model), "clg_model_finalize"))
        return -1;

    /* finite, small values: a NaN would make the loss-scaled config skip */
    const float g32 = 1e-3f;
    const cl_ushort g16 = 0x1419; /* about 1e-3 in binary16 */
    for (unsigned t = 0; t < count; t++) {
        clg_view v;
        if (!bench_clg_ok(ctx, clg_model_acc_view(u->model, (int)t, &v), "clg_model_acc_view")
            || fill_view(ctx, &v, &g32, sizeof g32))
            return -1;
    }
    if (path == 'B')
        return 0;
    if (!bench_clg_ok(ctx, clg_grads_create(u->model, bc->grad_dtype, &u->grads),
                      "clg_grads_create"))
        return -1;
    for (unsigned t = 0; t < count; t++) {
        clg_view v;
        if (!bench_clg_ok(ctx, clg_grads_view(u->grads, (int)t, &v), "clg_grads_view"))
            return -1;
        int rc = bc->grad_dtype == CLG_FP32 ? fill_view(ctx, &v, &g32, sizeof g32)
                                            : fill_view(ctx, &v, &g16, sizeof g16);
        if (rc)
            return -1;
    }
    return 0;
}

int bench_fused_create(bench_cycle *out, clg_context *ctx, const bench_config *bc,
                       uint64_t n, unsigned tensors, int per_tensor, char path, unsigned k)
{
    unsigned n_units = per_tensor ? tensors : 1;
    fused *f = calloc(1, sizeof *f);
    unit *units = calloc(n_units, sizeof *units);
    if (!f || !units) {
        free(f);
        free(units);
        return -1;
    }
    *f = (fused){.ctx = ctx, .units = units, .n_units = n_units, .k = k};
    for (unsigned u = 0; u < n_units; u++) {
        unsigned first = per_tensor ? u : 0, count = per_tensor ? 1 : tensors;
        if (unit_create(&f->units[u], ctx, bc, n, tensors, first, count, path, k))
            goto fail;
    }
    if (!bench_cl_ok(clFinish(clg_context_queue(ctx)), "clFinish"))
        goto fail;

    *out = (bench_cycle){.self = f, .k = k, .step = fused_step, .launches = fused_launches,
                         .destroy = fused_destroy, .groups = n_units};
    return 0;
fail:
    fused_destroy(f);
    return -1;
}

void bench_cycle_destroy(bench_cycle *cy)
{
    if (cy->destroy && cy->self)
        cy->destroy(cy->self);
    cy->self = NULL;
}
