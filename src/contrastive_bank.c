/* contrastive_bank.c - ContAccum's FIFO memory banks of a clg_contrastive:
 * pushes (device copies into the slots after the last one written), the
 * host counters, downloads, and the banks' parts of a model's checkpoints
 * (clg_contrastive_attach, ckpt_ext.h).
 *
 * Layout: bank s is bank_size rows of d values (the cache's dtype and row
 * layout), and row j of all pushes since the last reset lives in slot
 * j mod bank_size; head is the slot the next row goes to, count the slots
 * in use (bank_size once it wrapped). The kernels read slots [0, count) in
 * slot order as extra columns: that order is fixed by the pushes alone. */
#include "checkpoint.h"
#include "config.h"
#include "contrastive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clg_status check_banks(const clg_contrastive *c, const char *who)
{
    if (c->cfg.bank_size == 0)
        return clg__fail(c->ctx, CLG_ERR_STATE,
                         "%s: this clg_contrastive has no banks (its bank_size is 0)", who);
    return CLG_SUCCESS;
}

static clg_status copy_rows(clg_contrastive *c, int side, size_t from_row, size_t to_slot,
                            size_t rows, const char *who)
{
    size_t row_bytes = c->cfg.dim * clg__dtype_size(c->cfg.dtype);
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(c->ctx, CL_OUT_OF_RESOURCES, who,
                            "clEnqueueCopyBuffer (injected fault)");
    cl_int err = clEnqueueCopyBuffer(c->ctx->queue, c->reps[side], c->bank[side],
                                     from_row * row_bytes, to_slot * row_bytes, rows * row_bytes,
                                     0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(c->ctx, err, who, "clEnqueueCopyBuffer");
}

clg_status clg_contrastive_bank_push(clg_contrastive *c, size_t rows, const clg_events *events)
{
    const char *who = "clg_contrastive_bank_push";
    clg__events_clear(events);
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: c is NULL", who);
    clg_status st = check_banks(c, who);
    if (st == CLG_SUCCESS)
        st = clg__con_check_batch(c, rows, events, who);
    if (st != CLG_SUCCESS)
        return clg__events_finish(c->ctx, events, st, who);
    /* Rows a longer push would overwrite itself are never copied: row r
     * goes to slot (head + r) mod M, for the last min(rows, M) rows. */
    size_t M = c->cfg.bank_size;
    size_t first = rows > M ? rows - M : 0, n = rows - first;
    size_t slot = (c->bank_head + first) % M;
    size_t run1 = n < M - slot ? n : M - slot;
    for (int s = 0; s < 2 && st == CLG_SUCCESS; s++) {
        st = copy_rows(c, s, first, slot, run1, who);
        if (st == CLG_SUCCESS && n > run1)
            st = copy_rows(c, s, first + run1, 0, n - run1, who);
    }
    if (st == CLG_SUCCESS) {
        c->bank_head = (c->bank_head + rows) % M;
        c->bank_count = c->bank_count + rows < M ? c->bank_count + rows : M;
    }
    return clg__events_finish(c->ctx, events, st, who);
}

clg_status clg_contrastive_bank_info(const clg_contrastive *c, size_t *count, size_t *head)
{
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_contrastive_bank_info: c is NULL");
    if (count)
        *count = c->bank_count;
    if (head)
        *head = c->bank_head;
    return CLG_SUCCESS;
}

clg_status clg_contrastive_bank_reset(clg_contrastive *c)
{
    const char *who = "clg_contrastive_bank_reset";
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: c is NULL", who);
    clg_status st = check_banks(c, who);
    if (st == CLG_SUCCESS)
        c->bank_head = c->bank_count = 0;
    return st;
}

/* Blocking copy of a whole bank in its own dtype. */
static clg_status bank_io(clg_contrastive *c, int side, void *host, bool write, const char *who)
{
    size_t bytes = c->cfg.bank_size * c->cfg.dim * clg__dtype_size(c->cfg.dtype);
    const char *call = write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(c->ctx, CL_OUT_OF_RESOURCES, who, write ? "clEnqueueWriteBuffer "
                            "(injected fault)" : "clEnqueueReadBuffer (injected fault)");
    cl_int err = write ? clEnqueueWriteBuffer(c->ctx->queue, c->bank[side], CL_TRUE, 0, bytes,
                                              host, 0, NULL, NULL)
                       : clEnqueueReadBuffer(c->ctx->queue, c->bank[side], CL_TRUE, 0, bytes,
                                             host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(c->ctx, err, who, call);
}

clg_status clg_contrastive_bank_download(clg_contrastive *c, clg_side side, float *host,
                                         size_t count, const clg_events *events)
{
    const char *who = "clg_contrastive_bank_download";
    clg__events_clear(events);
    if (c == NULL || host == NULL)
        return clg__fail(c ? c->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         c == NULL ? "c" : "host");
    clg_status st = check_banks(c, who);
    if (st == CLG_SUCCESS && side != CLG_SIDE_QUERY && side != CLG_SIDE_KEY)
        st = clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT,
                       "%s: side %d is not CLG_SIDE_QUERY (0) or CLG_SIDE_KEY (1)", who, (int)side);
    size_t n = c->cfg.bank_size * c->cfg.dim;
    if (st == CLG_SUCCESS && count != n)
        st = clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT,
                       "%s: count %zu is not the bank's %zu values (bank_size %zu x dim %zu)", who,
                       count, n, c->cfg.bank_size, c->cfg.dim);
    if (st == CLG_SUCCESS)
        st = clg__events_check(c->ctx, events, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(c->ctx, events, who);
    if (st == CLG_SUCCESS && c->cfg.dtype == CLG_FP32) {
        st = bank_io(c, side, host, false, who);
    } else if (st == CLG_SUCCESS) {
        uint16_t *h = malloc(n * sizeof *h);
        st = h ? bank_io(c, side, h, false, who)
               : clg__fail(c->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
        for (size_t i = 0; st == CLG_SUCCESS && i < n; i++) { /* bf16: widened exactly */
            uint32_t u = (uint32_t)h[i] << 16;
            memcpy(&host[i], &u, sizeof u);
        }
        free(h);
    }
    return clg__events_finish(c->ctx, events, st, who);
}

/* ------------------------------------------------------------ checkpoint parts */

enum { PART_BANK_Q = 0, PART_BANK_K = 1, PART_STATE = 2, N_PARTS = 3 };

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int b = 0; b < 4; b++)
        p[b] = (uint8_t)(v >> (8 * b));
}

static clg_status part_read(void *owner, int part, void *host)
{
    clg_contrastive *c = owner;
    if (part != PART_STATE)
        return bank_io(c, part, host, false, "clg_checkpoint_save: contrastive bank");
    put_le32(host, (uint32_t)c->bank_head);
    put_le32((uint8_t *)host + 4, (uint32_t)c->bank_count);
    return CLG_SUCCESS;
}

static clg_status part_write(void *owner, int part, const void *host)
{
    clg_contrastive *c = owner;
    if (part != PART_STATE)
        return bank_io(c, part, (void *)host, true, "clg_checkpoint_load: contrastive bank");
    c->bank_head = le32(host);
    c->bank_count = le32((const uint8_t *)host + 4);
    return CLG_SUCCESS;
}

/* The counters a sequence of pushes can leave: head < M, count <= M, and
 * head == count until the bank wraps. */
static bool part_check(const void *owner, int part, const void *host, char *why, size_t len)
{
    const clg_contrastive *c = owner;
    if (part != PART_STATE)
        return true;
    uint32_t head = le32(host), count = le32((const uint8_t *)host + 4);
    size_t M = c->cfg.bank_size;
    if (head < M && count <= M && (count == M || head == count))
        return true;
    snprintf(why, len, "bank counters (next slot %u, rows in use %u) are not a state of a "
             "%zu-row FIFO", (unsigned)head, (unsigned)count, M);
    return false;
}

static void part_detached(void *owner)
{
    clg_contrastive *c = owner;
    c->model = NULL;
}

void clg__con_detach(clg_contrastive *c)
{
    if (c->model == NULL)
        return;
    for (int p = 0; p < N_PARTS; p++)
        clg__ckpt_ext_remove(c->model, &c->parts[p]);
    c->model = NULL;
}

/* The parts for name, unlinked. */
static void make_parts(const clg_contrastive *c, const char *name, clg_ckpt_ext *parts)
{
    static const char *const suffix[N_PARTS] = {".bank_q", ".bank_k", ".bank_state"};
    for (int p = 0; p < N_PARTS; p++) {
        clg_ckpt_ext *x = &parts[p];
        memset(x, 0, sizeof *x);
        snprintf(x->key, sizeof x->key, "%s%s", name, suffix[p]);
        if (p == PART_STATE) {
            x->dtype = CLG_CKPT_I32;
            x->count = 2;
            x->ndim = 1;
            x->dims[0] = 2;
        } else {
            x->dtype = c->cfg.dtype == CLG_BF16 ? CLG_CKPT_BF16 : CLG_CKPT_F32;
            x->count = (uint64_t)c->cfg.bank_size * c->cfg.dim;
            x->ndim = 2;
            x->dims[0] = c->cfg.bank_size;
            x->dims[1] = c->cfg.dim;
        }
        x->owner = (void *)c;
        x->part = p;
        x->read = part_read;
        x->write = part_write;
        x->check = part_check;
        x->detached = part_detached;
    }
}

clg_status clg_contrastive_attach(clg_contrastive *c, clg_model *model, const char *name)
{
    const char *who = "clg_contrastive_attach";
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: c is NULL", who);
    if (model == NULL) {
        clg__con_detach(c);
        return CLG_SUCCESS;
    }
    clg_context *ctx = c->ctx;
    clg_status st = check_banks(c, who);
    if (st != CLG_SUCCESS)
        return st;
    if (model->ctx != ctx)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: the model is on another context than the clg_contrastive", who);
    if (!model->finalized)
        return clg__fail(ctx, CLG_ERR_STATE, "%s: the model is not finalized", who);
    const size_t prefix = strlen(CLG_CKPT_META_PREFIX);
    if (name == NULL || !name[0] || strlen(name) > CLG_CKPT_EXT_KEY_MAX - 16 ||
        strncmp(name, CLG_CKPT_META_PREFIX, prefix) == 0 || !clg__ckpt_utf8_valid(name))
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: name %s%.64s%s must be 1..%d bytes of UTF-8 not starting with "
                         "\"" CLG_CKPT_META_PREFIX "\"",
                         who, name ? "'" : "", name ? name : "NULL", name ? "'" : "",
                         CLG_CKPT_EXT_KEY_MAX - 16);

    /* The keys must not be the model's or another attached part's: try
     * the model's checkpoint layout with the new parts in place of c's
     * old ones, and put the old ones back if it fails. */
    clg_ckpt_ext fresh[N_PARTS];
    make_parts(c, name, fresh);
    clg_model *old = c->model;
    if (old == model)
        for (int p = 0; p < N_PARTS; p++)
            clg__ckpt_ext_remove(model, &c->parts[p]);
    for (int p = 0; p < N_PARTS; p++)
        clg__ckpt_ext_add(model, &fresh[p]);
    char err[512];
    clg_ckpt_layout layout;
    st = clg__ckpt_layout_model(model, &layout, err, sizeof err);
    if (st == CLG_SUCCESS)
        clg__ckpt_layout_free(&layout);
    for (int p = 0; p < N_PARTS; p++)
        clg__ckpt_ext_remove(model, &fresh[p]);
    if (st != CLG_SUCCESS) {
        if (old == model)
            for (int p = 0; p < N_PARTS; p++)
                clg__ckpt_ext_add(model, &c->parts[p]);
        return clg__fail(ctx, st == CLG_ERR_OUT_OF_HOST_MEMORY ? st : CLG_ERR_INVALID_ARGUMENT,
                         "%s: name '%s': %s", who, name, err);
    }
    if (old != model)
        clg__con_detach(c);
    memcpy(c->parts, fresh, sizeof fresh);
    for (int p = 0; p < N_PARTS; p++)
        clg__ckpt_ext_add(model, &c->parts[p]);
    c->model = model;
    return CLG_SUCCESS;
}
