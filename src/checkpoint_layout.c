/* checkpoint_layout.c - the checkpoint layout of a model
 * (checkpoint_format.h): which entries a checkpoint holds, with which keys,
 * dtypes, shapes and canonical offsets, found by key. The writer fills the
 * entries' bytes in this order; the parser checks a file against it.
 * Host-only: fuzz/ links it with the parser. */
#include "checkpoint_format.h"
#include "qstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ entries */

clg_status clg__ckpt_layout_add(clg_ckpt_layout *layout, const char *key, clg_ckpt_dtype dtype,
                                uint64_t count, int source, int tensor)
{
    if (layout->n % 16 == 0) {
        clg_ckpt_entry *grown = realloc(layout->entries, (layout->n + 16) * sizeof *grown);
        if (!grown)
            return CLG_ERR_OUT_OF_HOST_MEMORY;
        layout->entries = grown;
    }
    char *copy = strdup(key);
    if (!copy)
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    clg_ckpt_entry *e = &layout->entries[layout->n++];
    memset(e, 0, sizeof *e);
    e->key = copy;
    e->dtype = dtype;
    e->count = count;
    e->ndim = 1;
    e->dims[0] = count;
    e->source = source;
    e->tensor = tensor;
    return CLG_SUCCESS;
}

clg_status clg__ckpt_layout_shape(clg_ckpt_layout *layout, size_t ndim, const uint64_t *dims)
{
    if (layout->n == 0 || ndim < 1 || ndim > CLG_MAX_DIMS)
        return CLG_ERR_INVALID_ARGUMENT;
    clg_ckpt_entry *e = &layout->entries[layout->n - 1];
    uint64_t product = 1;
    for (size_t d = 0; d < ndim; d++) {
        if (dims[d] != 0 && product > UINT64_MAX / dims[d])
            return CLG_ERR_INVALID_ARGUMENT;
        product *= dims[d];
    }
    if (product != e->count)
        return CLG_ERR_INVALID_ARGUMENT;
    e->ndim = ndim;
    memcpy(e->dims, dims, ndim * sizeof *dims);
    return CLG_SUCCESS;
}

/* qsort has no context argument: sort (key, index) pairs instead of indices,
 * so that concurrent loads of different models stay independent. */
typedef struct key_index {
    const char *key;
    size_t index;
} key_index;

static int key_index_cmp(const void *a, const void *b)
{
    return strcmp(((const key_index *)a)->key, ((const key_index *)b)->key);
}

clg_status clg__ckpt_layout_finish(clg_ckpt_layout *layout, char *err, size_t errlen)
{
    free(layout->by_key);
    layout->by_key = malloc((layout->n ? layout->n : 1) * sizeof *layout->by_key);
    if (!layout->by_key) {
        snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < layout->n; i++) {
        clg_ckpt_entry *e = &layout->entries[i];
        if (!clg__ckpt_utf8_valid(e->key) || strcmp(e->key, "__metadata__") == 0 ||
            e->key[0] == '\0') {
            snprintf(err, errlen, "tensor key '%s' cannot be stored (empty, reserved or not UTF-8)",
                     e->key);
            return CLG_ERR_INVALID_ARGUMENT;
        }
        uint64_t bytes = e->count * clg__ckpt_dtype_size(e->dtype);
        if (e->count > UINT64_MAX / 8 || offset > UINT64_MAX - bytes) {
            snprintf(err, errlen, "tensor '%s' is too large", e->key);
            return CLG_ERR_INVALID_ARGUMENT;
        }
        e->begin = offset;
        e->end = offset + bytes;
        offset = e->end;
        layout->by_key[i] = i;
    }
    layout->data_size = offset;
    key_index *pairs = malloc((layout->n ? layout->n : 1) * sizeof *pairs);
    if (!pairs) {
        snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    for (size_t i = 0; i < layout->n; i++)
        pairs[i] = (key_index){layout->entries[i].key, i};
    qsort(pairs, layout->n, sizeof *pairs, key_index_cmp);
    for (size_t i = 0; i < layout->n; i++)
        layout->by_key[i] = pairs[i].index;
    free(pairs);
    for (size_t i = 1; i < layout->n; i++) {
        const char *a = layout->entries[layout->by_key[i - 1]].key;
        if (strcmp(a, layout->entries[layout->by_key[i]].key) == 0) {
            snprintf(err, errlen,
                     "tensor key '%s' occurs twice (a tensor name collides with another "
                     "tensor's suffix such as .acc or .state0)",
                     a);
            return CLG_ERR_INVALID_ARGUMENT;
        }
    }
    return CLG_SUCCESS;
}

long clg__ckpt_layout_find(const clg_ckpt_layout *layout, const char *key)
{
    size_t lo = 0, hi = layout->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        size_t idx = layout->by_key[mid];
        int c = strcmp(key, layout->entries[idx].key);
        if (c == 0)
            return (long)idx;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

void clg__ckpt_layout_free(clg_ckpt_layout *layout)
{
    if (!layout)
        return;
    for (size_t i = 0; i < layout->n; i++)
        free(layout->entries[i].key);
    free(layout->entries);
    free(layout->by_key);
    memset(layout, 0, sizeof *layout);
}

/* ------------------------------------------------------------ a model's layout */

static bool dtype_of_arena(clg_dtype dtype, clg_ckpt_dtype *out)
{
    switch (dtype) {
    case CLG_FP32: *out = CLG_CKPT_F32; return true;
    case CLG_FP16: *out = CLG_CKPT_F16; return true;
    case CLG_BF16: *out = CLG_CKPT_BF16; return true;
    default: return false;
    }
}

/* Adds "<tensor name><suffix>" for every tensor of one arena. */
static clg_status layout_add_arena(clg_model *model, clg_ckpt_layout *layout,
                                   const clg_arena *arena, const char *suffix, int source,
                                   char *err, size_t errlen)
{
    clg_ckpt_dtype dtype;
    if (!dtype_of_arena(arena->dtype, &dtype)) {
        snprintf(err, errlen, "arena%s has dtype %d, which checkpoints cannot store", suffix,
                 (int)arena->dtype);
        return CLG_ERR_UNSUPPORTED;
    }
    for (size_t t = 0; t < model->n_tensors; t++) {
        const char *name = model->tensors[t].name;
        size_t len = strlen(name) + strlen(suffix) + 1;
        char *key = malloc(len);
        if (!key) {
            snprintf(err, errlen, "out of host memory");
            return CLG_ERR_OUT_OF_HOST_MEMORY;
        }
        snprintf(key, len, "%s%s", name, suffix);
        const clg_tensor_slot *ts = &model->tensors[t];
        clg_status st = clg__ckpt_layout_add(layout, key, dtype, ts->count, source, (int)t);
        free(key);
        if (st != CLG_SUCCESS) {
            snprintf(err, errlen, "out of host memory");
            return st;
        }
        uint64_t dims[CLG_MAX_DIMS];
        for (size_t d = 0; d < ts->ndim && d < CLG_MAX_DIMS; d++)
            dims[d] = ts->dims[d];
        if (clg__ckpt_layout_shape(layout, ts->ndim, dims) != CLG_SUCCESS) {
            snprintf(err, errlen,
                     "tensor '%s' has a shape of %zu dims that is not its %zu "
                     "elements",
                     ts->name, ts->ndim, ts->count);
            return CLG_ERR_INVALID_ARGUMENT;
        }
    }
    return CLG_SUCCESS;
}

/* Adds one entry "<tensor t's name><suffix>" of dtype, count elements and
 * the tensor's shape (or [count] when shaped is false). */
static clg_status add_tensor_entry(clg_model *model, clg_ckpt_layout *layout, size_t t,
                                   const char *suffix, clg_ckpt_dtype dtype, uint64_t count,
                                   bool shaped, int source, char *err, size_t errlen)
{
    const clg_tensor_slot *ts = &model->tensors[t];
    char key[320];
    snprintf(key, sizeof key, "%s%s", ts->name, suffix);
    clg_status st = clg__ckpt_layout_add(layout, key, dtype, count, source, (int)t);
    if (st == CLG_SUCCESS && shaped) {
        uint64_t dims[CLG_MAX_DIMS];
        for (size_t d = 0; d < ts->ndim && d < CLG_MAX_DIMS; d++)
            dims[d] = ts->dims[d];
        st = clg__ckpt_layout_shape(layout, ts->ndim, dims);
    }
    if (st != CLG_SUCCESS)
        snprintf(err, errlen, "%s",
                 st == CLG_ERR_OUT_OF_HOST_MEMORY ? "out of host memory"
                                                  : "a shape is not its count");
    return st;
}

/* The optimizer states as stored (src/qstate.h), the entries whose
 * elements have elem bytes: fp32 states and Q8/Q4 absmax (4), bf16 states
 * (2), Q8/Q4 codes (1). */
static clg_status layout_add_states(clg_model *model, clg_ckpt_layout *layout, size_t elem,
                                    char *err, size_t errlen)
{
    clg_status st = CLG_SUCCESS;
    for (size_t s = 0; st == CLG_SUCCESS && s < model->n_states; s++) {
        for (size_t t = 0; st == CLG_SUCCESS && t < model->n_tensors; t++) {
            const clg_tensor_slot *ts = &model->tensors[t];
            clg_dtype fmt = clg__state_format(model, s, ts->chunk);
            char suffix[48];
            snprintf(suffix, sizeof suffix, ".state%zu", s);
            if (fmt == CLG_FP32 && elem == 4)
                st = add_tensor_entry(model, layout, t, suffix, CLG_CKPT_F32, ts->count, true,
                                      CLG_ARENA_STATE0 + (int)s, err, errlen);
            else if (fmt == CLG_BF16 && elem == 2)
                st = add_tensor_entry(model, layout, t, suffix, CLG_CKPT_BF16, ts->count, true,
                                      CLG_ARENA_STATE0 + (int)s, err, errlen);
            else if (clg__dtype_quantized(fmt) && elem == 1)
                /* Q4's packed bytes have no element shape */
                st = add_tensor_entry(model, layout, t, suffix, CLG_CKPT_U8,
                                      clg__format_bytes(fmt, ts->count), fmt == CLG_Q8,
                                      CLG_ARENA_STATE0 + (int)s, err, errlen);
            else if (clg__dtype_quantized(fmt) && elem == 4) {
                snprintf(suffix, sizeof suffix, ".state%zu.absmax", s);
                st = add_tensor_entry(model, layout, t, suffix, CLG_CKPT_F32,
                                      clg__format_scales(fmt, ts->count), false,
                                      CLG_CKPT_SRC_SCALE0 - (int)s, err, errlen);
            }
        }
    }
    return st;
}

/* Adds the parts attached to the model (ckpt_ext.h) whose elements have
 * elem bytes, from the list's fields alone. */
static clg_status layout_add_ext(clg_model *model, clg_ckpt_layout *layout, size_t elem, char *err,
                                 size_t errlen)
{
    int index = 0;
    for (const clg_ckpt_ext *x = model->ckpt_ext; x; x = x->next, index++) {
        if (clg__ckpt_dtype_size((clg_ckpt_dtype)x->dtype) != elem)
            continue;
        clg_status st = clg__ckpt_layout_add(layout, x->key, (clg_ckpt_dtype)x->dtype, x->count,
                                             CLG_CKPT_SRC_EXT, index);
        if (st == CLG_SUCCESS)
            st = clg__ckpt_layout_shape(layout, x->ndim, x->dims);
        if (st != CLG_SUCCESS) {
            snprintf(err, errlen, "attached tensor '%s': %s", x->key,
                     st == CLG_ERR_OUT_OF_HOST_MEMORY ? "out of host memory"
                                                      : "shape is not its element count");
            return st;
        }
    }
    return CLG_SUCCESS;
}

clg_status clg__ckpt_layout_model(clg_model *model, clg_ckpt_layout *layout, char *err,
                                  size_t errlen)
{
    memset(layout, 0, sizeof *layout);
    clg__ckpt_layout_config(layout, &model->cfg);
    /* 4-byte entries first, 2-byte ones (copy, bf16 acc) last, so that every
     * F32/I32 entry starts at a multiple of 4 in the file. */
    clg_status st = clg__ckpt_layout_add(layout, CLG_CKPT_STEP_BLOCK_KEY, CLG_CKPT_I32,
                                         CLG_SB_WORDS, CLG_CKPT_SRC_STEP_BLOCK, -1);
    if (st != CLG_SUCCESS) {
        snprintf(err, errlen, "out of host memory");
        goto fail;
    }
    bool bf16_params = model->params.dtype == CLG_BF16;
    if (!bf16_params)
        st = layout_add_arena(model, layout, &model->params, "", CLG_ARENA_PARAMS, err, errlen);
    if (st == CLG_SUCCESS)
        st = layout_add_states(model, layout, 4, err, errlen);
    if (st == CLG_SUCCESS)
        st = layout_add_ext(model, layout, 4, err, errlen);
    if (st == CLG_SUCCESS && bf16_params)
        st = layout_add_arena(model, layout, &model->params, "", CLG_ARENA_PARAMS, err, errlen);
    if (st == CLG_SUCCESS)
        st = layout_add_states(model, layout, 2, err, errlen);
    if (st == CLG_SUCCESS && model->copy.chunks)
        st = layout_add_arena(model, layout, &model->copy, ".copy", CLG_CKPT_SRC_COPY, err, errlen);
    if (st == CLG_SUCCESS && model->acc.chunks)
        st = layout_add_arena(model, layout, &model->acc, ".acc", CLG_ARENA_ACC, err, errlen);
    if (st == CLG_SUCCESS)
        st = layout_add_ext(model, layout, 2, err, errlen);
    /* the Q8/Q4 codes last: one byte each */
    if (st == CLG_SUCCESS)
        st = layout_add_states(model, layout, 1, err, errlen);
    if (st == CLG_SUCCESS)
        st = clg__ckpt_layout_finish(layout, err, errlen);
    if (st == CLG_SUCCESS)
        return CLG_SUCCESS;
fail:
    clg__ckpt_layout_free(layout);
    return st;
}
