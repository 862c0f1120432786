/* checkpoint_transfer.c - the device side of checkpoints, shared by the
 * save (checkpoint.c) and the load (checkpoint_load.c): every entry of a
 * layout read from the device into one host buffer (clg__ckpt_collect), or
 * written back from one (clg__ckpt_apply), and the cycle state with them.
 * The load also collects, to keep a backup of the live state. */
#include "checkpoint.h"
#include "qstate.h"

#include <stdlib.h>
#include <string.h>

/* Blocking transfer of one tensor of the low-precision parameter copy
 * (write != 0: host to device). The copy has no arena id in model.h, so
 * its per-tensor transfer is done here, like clg__arena_read/write. */
static clg_status copy_io(clg_model *model, int tensor, void *host, int write)
{
    clg_context *ctx = model->ctx;
    const clg_tensor_slot *t = &model->tensors[tensor];
    const clg_arena *a = &model->copy;
    const char *call = write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    if (t->count == 0)
        return CLG_SUCCESS;
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(ctx, CL_OUT_OF_RESOURCES, "checkpoint: parameter copy (injected fault)",
                            call);
    cl_int err;
    if (write)
        err =
            clEnqueueWriteBuffer(ctx->queue, a->chunks[t->chunk], CL_TRUE, t->offset * a->elem_size,
                                 t->count * a->elem_size, host, 0, NULL, NULL);
    else
        err =
            clEnqueueReadBuffer(ctx->queue, a->chunks[t->chunk], CL_TRUE, t->offset * a->elem_size,
                                t->count * a->elem_size, host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(ctx, err, "checkpoint: parameter copy", call);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ collect */

clg_status clg__ckpt_collect(clg_model *model, const clg_ckpt_layout *layout,
                             const void *const *images, uint8_t **data, clg_cycle_state *state)
{
    *data = NULL;
    if (layout->data_size > SIZE_MAX)
        return clg__fail(model->ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                         "checkpoint: %llu bytes do not fit in host memory",
                         (unsigned long long)layout->data_size);
    uint8_t *buf = malloc(layout->data_size ? (size_t)layout->data_size : 1);
    if (!buf)
        return clg__fail(model->ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                         "checkpoint: no host memory to stage %llu bytes",
                         (unsigned long long)layout->data_size);
    clg_status st = clg__cycle_state_get(model, state);
    for (size_t i = 0; st == CLG_SUCCESS && i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        uint8_t *dst = buf + e->begin;
        if (e->source == CLG_CKPT_SRC_STEP_BLOCK) {
            for (int w = 0; w < CLG_SB_WORDS; w++)
                for (int b = 0; b < 4; b++)
                    dst[4 * w + b] = (uint8_t)(state->step_block[w] >> (8 * b));
        } else if (e->count == 0) {
            continue;
        } else if (e->source == CLG_CKPT_SRC_COPY) {
            st = copy_io(model, e->tensor, dst, 0);
        } else if (e->source == CLG_CKPT_SRC_EXT) {
            clg_ckpt_ext *x = clg__ckpt_ext_at(model, e->tensor);
            st = x->read(x->owner, x->part, dst);
        } else if (images != NULL && e->source <= CLG_CKPT_SRC_SCALE0) {
            size_t s = (size_t)(CLG_CKPT_SRC_SCALE0 - e->source);
            clg__shard_image_read(model, images[s], s, (size_t)e->tensor, true, dst);
        } else if (e->source <= CLG_CKPT_SRC_SCALE0) {
            st = clg__state_scales_io(model, (size_t)(CLG_CKPT_SRC_SCALE0 - e->source),
                                      (size_t)e->tensor, dst, 0);
        } else if (images != NULL && e->source >= CLG_ARENA_STATE0) {
            size_t s = (size_t)(e->source - CLG_ARENA_STATE0);
            clg__shard_image_read(model, images[s], s, (size_t)e->tensor, false, dst);
        } else {
            st = clg__arena_read(model, e->source, e->tensor, dst);
        }
    }
    if (st != CLG_SUCCESS) {
        free(buf);
        return st;
    }
    *data = buf;
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ apply */

clg_status clg__ckpt_apply(clg_model *model, const clg_ckpt_layout *layout, const uint8_t *data,
                           int file_offsets, const clg_cycle_state *state)
{
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        if (e->source == CLG_CKPT_SRC_STEP_BLOCK || e->count == 0)
            continue;
        const uint8_t *src = data + (file_offsets ? e->file_begin : e->begin);
        clg_status st;
        if (e->source == CLG_CKPT_SRC_COPY) {
            st = copy_io(model, e->tensor, (void *)src, 1);
        } else if (e->source == CLG_CKPT_SRC_EXT) {
            clg_ckpt_ext *x = clg__ckpt_ext_at(model, e->tensor);
            st = x->write(x->owner, x->part, src);
        } else if (e->source <= CLG_CKPT_SRC_SCALE0) {
            st = clg__state_scales_io(model, (size_t)(CLG_CKPT_SRC_SCALE0 - e->source),
                                      (size_t)e->tensor, (void *)src, 1);
        } else
            st = clg__arena_write(model, e->source, e->tensor, src);
        if (st != CLG_SUCCESS)
            return st;
    }
    return clg__cycle_state_set(model, state);
}
