/* cases_fused.c - clgrad's own cycle: clg_step k times on a model of many
 * tensors, in one param group ("fused") or one group per tensor
 * ("per_tensor", since clgrad launches its update once per group). */
#include "cycle.h"
#include "clutil.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct fused {
    clg_context *ctx;
    clg_model *model;
    clg_grads *grads; /* NULL on path B */
    unsigned k;
} fused;

static int fused_step(void *self, unsigned i)
{
    fused *f = self;
    int updated = 0;
    clg_status st = clg_step(f->model, f->grads, 1.0f, &updated);
    if (!bench_clg_ok(f->ctx, st, "clg_step"))
        return -1;
    if (updated != (i + 1 == f->k)) {
        fprintf(stderr, "clgrad-bench: clg_step %u of %u: updated = %d, cycle misaligned\n",
                i + 1, f->k, updated);
        return -1;
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
    clg_grads_destroy(f->grads);
    clg_model_destroy(f->model);
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

int bench_fused_create(bench_cycle *out, clg_context *ctx, const bench_config *bc,
                       uint64_t n, unsigned tensors, int per_tensor, char path, unsigned k)
{
    fused *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->ctx = ctx;
    f->k = k;
    clg_config cfg = bench_clg_config(bc, k, path == 'C');
    if (!bench_clg_ok(ctx, clg_model_create(ctx, &cfg, &f->model), "clg_model_create"))
        goto fail;
    for (unsigned t = 0; t < tensors; t++) {
        char name[32];
        int group = 0, id;
        if (per_tensor) {
            snprintf(name, sizeof name, "g%u", t);
            if (!bench_clg_ok(ctx, clg_model_add_group(f->model, name, 1.0f, -1.0f, &group),
                              "clg_model_add_group"))
                goto fail;
        }
        snprintf(name, sizeof name, "t%u", t);
        if (!bench_clg_ok(ctx,
                          clg_model_add_tensor(f->model, name, bench_tensor_size(n, tensors, t),
                                               group, &id),
                          "clg_model_add_tensor"))
            goto fail;
    }
    if (!bench_clg_ok(ctx, clg_model_finalize(f->model), "clg_model_finalize"))
        goto fail;

    /* finite, small values: a NaN would make the loss-scaled config skip */
    const float g32 = 1e-3f;
    const cl_ushort g16 = 0x1419; /* about 1e-3 in binary16 */
    for (unsigned t = 0; t < tensors; t++) {
        clg_view v;
        if (!bench_clg_ok(ctx, clg_model_acc_view(f->model, (int)t, &v), "clg_model_acc_view")
            || fill_view(ctx, &v, &g32, sizeof g32))
            goto fail;
    }
    if (path != 'B') {
        if (!bench_clg_ok(ctx, clg_grads_create(f->model, bc->grad_dtype, &f->grads),
                          "clg_grads_create"))
            goto fail;
        for (unsigned t = 0; t < tensors; t++) {
            clg_view v;
            if (!bench_clg_ok(ctx, clg_grads_view(f->grads, (int)t, &v), "clg_grads_view"))
                goto fail;
            int rc = bc->grad_dtype == CLG_FP32 ? fill_view(ctx, &v, &g32, sizeof g32)
                                                : fill_view(ctx, &v, &g16, sizeof g16);
            if (rc)
                goto fail;
        }
    }
    if (!bench_cl_ok(clFinish(clg_context_queue(ctx)), "clFinish"))
        goto fail;

    out->self = f;
    out->k = k;
    out->step = fused_step;
    out->launches = fused_launches;
    out->destroy = fused_destroy;
    out->groups = per_tensor ? tensors : 1;
    out->host_syncs_per_update = 0.0;
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
