/* contrastive.c - the representation cache of clgrad.h's contrastive
 * losses: configuration and its checks, the memory plan, creation (every
 * buffer budgeted), fills with the host's record of which rows hold data,
 * compute, the loss and the gradient slices handed to the caller, and the
 * replay seed. The banks are in contrastive_bank.c, the kernels and their
 * launchers in contrastive_kernels.c. */
#include "contrastive.h"
#include "config.h"
#include "sized.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS ((size_t)1 << 24)
#define MAX_DIM ((size_t)65536)
#define MIN_TEMPERATURE 1e-4f

/* ------------------------------------------------------------ configuration */

static const char *dtype_name(clg_dtype d)
{
    switch (d) {
    case CLG_FP32: return "CLG_FP32";
    case CLG_FP16: return "CLG_FP16";
    case CLG_BF16: return "CLG_BF16";
    default: return "not a row dtype";
    }
}

/* The caller's config (of its own struct_size) over the defaults, then
 * every field checked; messages name the field and its value. */
static clg_status import_config(clg_context *ctx, const clg_contrastive_config *user,
                                clg_contrastive_config *cfg, const char *who)
{
    if (user == NULL)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: config is NULL", who);
    *cfg = clg_contrastive_config_init();
    clg_status st = clg__sized_import(ctx, cfg, sizeof *cfg, user, user->struct_size,
                                      sizeof *cfg, "clg_contrastive_config", who);
    if (st != CLG_SUCCESS)
        return st;
    if (cfg->batch < 1 || cfg->batch > MAX_ROWS)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: batch %zu is outside 1..%zu", who,
                         cfg->batch, MAX_ROWS);
    if (cfg->dim < 1 || cfg->dim > MAX_DIM)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: dim %zu is outside 1..%zu", who,
                         cfg->dim, MAX_DIM);
    if (cfg->dtype != CLG_FP32 && cfg->dtype != CLG_BF16)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: dtype %d is not CLG_FP32 or CLG_BF16", who, (int)cfg->dtype);
    if (!(isfinite(cfg->temperature) && cfg->temperature >= MIN_TEMPERATURE))
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: temperature %g must be finite and >= %g", who,
                         (double)cfg->temperature, (double)MIN_TEMPERATURE);
    if (cfg->symmetric != 0 && cfg->symmetric != 1)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: symmetric %d is not 0 or 1", who,
                         cfg->symmetric);
    if (cfg->normalize != 0 && cfg->normalize != 1)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: normalize %d is not 0 or 1", who,
                         cfg->normalize);
    if (cfg->bank_size > MAX_ROWS)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: bank_size %zu is outside 0..%zu",
                         who, cfg->bank_size, MAX_ROWS);
    return CLG_SUCCESS;
}

static clg_contrastive_plan plan_of(const clg_contrastive_config *cfg)
{
    clg_contrastive_plan p = clg_contrastive_plan_init();
    uint64_t B = cfg->batch, d = cfg->dim, M = cfg->bank_size;
    uint64_t elem = clg__dtype_size(cfg->dtype);
    p.cache = 2 * B * d * elem;
    p.grads = 2 * B * d * 4;
    p.banks = 2 * M * d * elem;
    p.rows = 4 * (8 * B + 2 * M) + 4;
    p.total = p.cache + p.grads + p.banks + p.rows;
    return p;
}

/* The plan into the caller's struct, of its own struct_size. */
static clg_status export_plan(clg_context *ctx, const clg_contrastive_plan *full,
                              clg_contrastive_plan *user, const char *who)
{
    if (user == NULL)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: plan is NULL", who);
    clg_status st = clg__sized_check(ctx, user->struct_size, sizeof *user,
                                     "clg_contrastive_plan", who);
    if (st == CLG_SUCCESS)
        clg__sized_export(user, user->struct_size, full, sizeof *full);
    return st;
}

clg_status clg_contrastive_estimate(const clg_contrastive_config *config,
                                    clg_contrastive_plan *plan)
{
    const char *who = "clg_contrastive_estimate";
    clg_contrastive_config cfg;
    clg_status st = plan ? import_config(NULL, config, &cfg, who)
                         : clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: plan is NULL", who);
    if (st != CLG_SUCCESS)
        return st;
    clg_contrastive_plan full = plan_of(&cfg);
    return export_plan(NULL, &full, plan, who);
}

clg_status clg_contrastive_memory(const clg_contrastive *c, clg_contrastive_plan *plan)
{
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_contrastive_memory: c is NULL");
    return export_plan(c->ctx, &c->plan, plan, "clg_contrastive_memory");
}

const clg_contrastive_config *clg_contrastive_get_config(const clg_contrastive *c)
{
    return c ? &c->cfg : NULL;
}

/* ------------------------------------------------------------ create, destroy */

/* The device buffers, in one table for creation and release. */
typedef struct buf_slot {
    cl_mem *mem;
    uint64_t bytes;
    const char *what;
} buf_slot;

static size_t buffers_of(clg_contrastive *c, buf_slot *out)
{
    uint64_t B = c->cfg.batch, d = c->cfg.dim, M = c->cfg.bank_size;
    uint64_t elem = clg__dtype_size(c->cfg.dtype);
    size_t n = 0;
    for (int s = 0; s < 2; s++) {
        out[n++] = (buf_slot){&c->reps[s], B * d * elem, "the cache of one side"};
        out[n++] = (buf_slot){&c->grads[s], B * d * 4, "the gradients of one side"};
        out[n++] = (buf_slot){&c->rn[s], B * 4, "inverse norms"};
        out[n++] = (buf_slot){&c->lse[s], B * 4, "log-sum-exps"};
        out[n++] = (buf_slot){&c->cp[s], B * 4, "softmax complements"};
        out[n++] = (buf_slot){&c->rloss[s], B * 4, "row losses"};
        if (M > 0) {
            out[n++] = (buf_slot){&c->bank[s], M * d * elem, "one bank"};
            out[n++] = (buf_slot){&c->bank_rn[s], M * 4, "the bank's inverse norms"};
        }
    }
    out[n++] = (buf_slot){&c->loss, 4, "the loss"};
    return n;
}

enum { MAX_BUFS = 20 };

static void release_buffers(clg_contrastive *c)
{
    buf_slot slots[MAX_BUFS];
    size_t n = buffers_of(c, slots);
    for (size_t i = 0; i < n; i++) {
        clg__buffer_release(c->ctx, *slots[i].mem, slots[i].bytes);
        *slots[i].mem = NULL;
    }
}

void clg_contrastive_destroy(clg_contrastive *c)
{
    if (c == NULL)
        return;
    clg__con_detach(c);
    clg__con_kernels_release(c);
    release_buffers(c);
    free(c->filled[0]);
    free(c->filled[1]);
    free(c);
}

/* Before any allocation: every buffer within the largest allocation, and
 * the whole plan within the budget, with messages that say which. */
static clg_status check_fits(clg_contrastive *c, const char *who)
{
    clg_context *ctx = c->ctx;
    buf_slot slots[MAX_BUFS];
    size_t n = buffers_of(c, slots);
    for (size_t i = 0; i < n; i++)
        if (slots[i].bytes > ctx->max_alloc)
            return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                             "%s: %s would be one buffer of %llu bytes (batch %zu, dim %zu, "
                             "bank_size %zu), above the device's largest allocation of %llu",
                             who, slots[i].what, (unsigned long long)slots[i].bytes,
                             c->cfg.batch, c->cfg.dim, c->cfg.bank_size,
                             (unsigned long long)ctx->max_alloc);
    mtx_lock(&ctx->lock);
    uint64_t budget = ctx->budget, in_use = ctx->in_use;
    mtx_unlock(&ctx->lock);
    if (budget && (c->plan.total > budget || in_use > budget - c->plan.total))
        return clg__fail(ctx, CLG_ERR_OVER_BUDGET,
                         "%s: the cache needs %llu bytes (cache %llu, gradients %llu, banks "
                         "%llu, rows %llu), %llu are in use, budget %llu",
                         who, (unsigned long long)c->plan.total, (unsigned long long)c->plan.cache,
                         (unsigned long long)c->plan.grads, (unsigned long long)c->plan.banks,
                         (unsigned long long)c->plan.rows, (unsigned long long)in_use,
                         (unsigned long long)budget);
    return CLG_SUCCESS;
}

clg_status clg_contrastive_create(clg_context *ctx, const clg_contrastive_config *config,
                                  clg_contrastive **out)
{
    const char *who = "clg_contrastive_create";
    if (ctx == NULL || out == NULL)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         ctx == NULL ? "ctx" : "out");
    *out = NULL;
    clg_contrastive_config cfg;
    clg_status st = import_config(ctx, config, &cfg, who);
    if (st != CLG_SUCCESS)
        return st;
    clg_contrastive *c = calloc(1, sizeof *c);
    if (c == NULL)
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    c->ctx = ctx;
    c->cfg = cfg;
    c->plan = plan_of(&cfg);
    c->filled[0] = calloc(cfg.batch, 1);
    c->filled[1] = calloc(cfg.batch, 1);
    if (c->filled[0] == NULL || c->filled[1] == NULL) {
        st = clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
        goto fail;
    }
    st = check_fits(c, who);
    buf_slot slots[MAX_BUFS];
    size_t n = buffers_of(c, slots);
    for (size_t i = 0; i < n && st == CLG_SUCCESS; i++)
        st = clg__buffer_create(ctx, slots[i].bytes, slots[i].mem);
    if (st == CLG_SUCCESS)
        st = clg__con_kernels_create(c);
    if (st == CLG_SUCCESS) {
        *out = c;
        return CLG_SUCCESS;
    }
fail:
    clg_contrastive_destroy(c);
    return st;
}

/* ------------------------------------------------------------ argument checks */

static clg_status check_side(const clg_contrastive *c, clg_side side, const char *who)
{
    if (side != CLG_SIDE_QUERY && side != CLG_SIDE_KEY)
        return clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: side %d is not CLG_SIDE_QUERY (0) or CLG_SIDE_KEY (1)", who,
                         (int)side);
    return CLG_SUCCESS;
}

static clg_status check_rows(const clg_contrastive *c, size_t row, size_t rows, size_t limit,
                             const char *limit_what, const char *who)
{
    if (rows == 0 || row > limit || rows > limit - row)
        return clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: rows [%zu, %zu + %zu) are not a non-empty range within the %zu "
                         "rows of %s",
                         who, row, row, rows, limit, limit_what);
    return CLG_SUCCESS;
}

/* The caller's buffer holds rows x d elements of dtype at offset, stride
 * apart: the device must never touch past its end. */
static clg_status check_user_buffer(const clg_contrastive *c, cl_mem mem, size_t offset,
                                    size_t stride, size_t rows, clg_dtype dtype,
                                    const char *name, const char *who)
{
    clg_context *ctx = c->ctx;
    size_t d = c->cfg.dim;
    if (mem == NULL)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, name);
    if (dtype != CLG_FP32 && dtype != CLG_FP16 && dtype != CLG_BF16)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %s's dtype %d is not CLG_FP32, CLG_FP16 or CLG_BF16", who, name,
                         (int)dtype);
    if (stride < d)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %s's row stride %zu is below the row length dim %zu", who, name,
                         stride, d);
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(ctx, err, who, "clGetMemObjectInfo(CL_MEM_SIZE)");
    /* elements past the end, then bytes: cap is far above any buffer, and
     * with each term below it the sum cannot wrap */
    const uint64_t cap = UINT64_MAX / 8;
    bool huge = offset > cap || stride > cap / rows;
    uint64_t last = huge ? cap : (uint64_t)offset + (uint64_t)(rows - 1) * stride + d;
    uint64_t need = last * clg__dtype_size(dtype);
    if (huge)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %zu rows at offset %zu, stride %zu, reach past any buffer (%s)",
                         who, rows, offset, stride, name);
    if (need > size)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %zu rows of %zu %s values at offset %zu, stride %zu, need %llu "
                         "bytes of %s, which has %zu",
                         who, rows, d, dtype_name(dtype), offset, stride,
                         (unsigned long long)need, name, size);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ fill, compute */

/* The call's wait list: checked, then waited for. */
static clg_status check_events(const clg_contrastive *c, const clg_events *events,
                               const char *who)
{
    clg_status st = clg__events_check(c->ctx, events, who);
    return st == CLG_SUCCESS ? clg__events_wait(c->ctx, events, who) : st;
}

/* The first checks of a call on one side's rows (fill, grad): its event
 * cleared, then the handle and the side. A NULL c fails here, and every
 * later check and the call's end pass the failure through. */
static clg_status check_side_call(const clg_contrastive *c, clg_side side,
                                  const clg_events *events, const char *who)
{
    clg__events_clear(events);
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: c is NULL", who);
    return check_side(c, side, who);
}

clg_status clg_contrastive_fill(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                cl_mem src, size_t src_offset, size_t src_stride,
                                clg_dtype src_dtype, const clg_events *events)
{
    const char *who = "clg_contrastive_fill";
    clg_status st = check_side_call(c, side, events, who);
    if (st == CLG_SUCCESS)
        st = check_rows(c, row, rows, c->cfg.batch, "the cache", who);
    if (st == CLG_SUCCESS)
        st = check_user_buffer(c, src, src_offset, src_stride, rows, src_dtype, "src", who);
    if (st == CLG_SUCCESS)
        st = check_events(c, events, who);
    if (st == CLG_SUCCESS)
        st = clg__con_launch_fill(c, side, row, rows, src, src_offset, src_stride, src_dtype);
    if (st == CLG_SUCCESS) {
        if (c->computed) { /* the first fill of a new batch */
            for (int s = 0; s < 2; s++) {
                memset(c->filled[s], 0, c->cfg.batch);
                c->n_filled[s] = 0;
            }
            c->computed = false;
        }
        for (size_t r = row; r < row + rows; r++) {
            c->n_filled[side] += !c->filled[side][r];
            c->filled[side][r] = 1;
        }
    }
    return clg__events_finish(c ? c->ctx : NULL, events, st, who);
}

clg_status clg_contrastive_compute(clg_contrastive *c, size_t rows, const clg_events *events)
{
    const char *who = "clg_contrastive_compute";
    clg__events_clear(events);
    if (c == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: c is NULL", who);
    clg_status st = clg__con_check_batch(c, rows, events, who);
    if (st == CLG_SUCCESS) {
        st = clg__con_launch_compute(c, rows);
        /* a compute that failed half-way leaves gradients of no batch */
        c->computed = st == CLG_SUCCESS;
        c->computed_rows = st == CLG_SUCCESS ? rows : 0;
    }
    return clg__events_finish(c->ctx, events, st, who);
}

/* ------------------------------------------------------------ results */

static clg_status check_computed(const clg_contrastive *c, const char *who)
{
    if (!c->computed)
        return clg__fail(c->ctx, CLG_ERR_STATE,
                         "%s: no loss of the current batch: call clg_contrastive_compute first",
                         who);
    return CLG_SUCCESS;
}

clg_status clg_contrastive_loss(clg_contrastive *c, float *loss)
{
    const char *who = "clg_contrastive_loss";
    if (c == NULL || loss == NULL)
        return clg__fail(c ? c->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         c == NULL ? "c" : "loss");
    clg_status st = check_computed(c, who);
    if (st != CLG_SUCCESS)
        return st;
    float v;
    cl_int err = clEnqueueReadBuffer(c->ctx->queue, c->loss, CL_TRUE, 0, sizeof v, &v, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(c->ctx, err, who, "clEnqueueReadBuffer");
    *loss = v;
    return CLG_SUCCESS;
}

clg_status clg_contrastive_loss_view(const clg_contrastive *c, clg_view *view)
{
    const char *who = "clg_contrastive_loss_view";
    if (c == NULL || view == NULL)
        return clg__fail(c ? c->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         c == NULL ? "c" : "view");
    *view = (clg_view){c->loss, 0, 1};
    return CLG_SUCCESS;
}

clg_status clg_contrastive_grad(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                float scale, cl_mem dst, size_t dst_offset, size_t dst_stride,
                                clg_dtype dst_dtype, const clg_events *events)
{
    const char *who = "clg_contrastive_grad";
    clg_status st = check_side_call(c, side, events, who);
    if (st == CLG_SUCCESS)
        st = check_computed(c, who);
    if (st == CLG_SUCCESS)
        st = check_rows(c, row, rows, c->computed_rows, "the last compute", who);
    if (st == CLG_SUCCESS && !isfinite(scale))
        st = clg__fail(c->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: scale %g is not finite", who,
                       (double)scale);
    if (st == CLG_SUCCESS)
        st = check_user_buffer(c, dst, dst_offset, dst_stride, rows, dst_dtype, "dst", who);
    if (st == CLG_SUCCESS)
        st = check_events(c, events, who);
    if (st == CLG_SUCCESS)
        st = clg__con_launch_grad_out(c, side, row, rows, scale, dst, dst_offset, dst_stride,
                                      dst_dtype);
    return clg__events_finish(c ? c->ctx : NULL, events, st, who);
}

clg_status clg_contrastive_grad_view(const clg_contrastive *c, clg_side side, clg_view *view)
{
    const char *who = "clg_contrastive_grad_view";
    if (c == NULL || view == NULL)
        return clg__fail(c ? c->ctx : NULL, CLG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who,
                         c == NULL ? "c" : "view");
    clg_status st = check_side(c, side, who);
    if (st == CLG_SUCCESS)
        *view = (clg_view){c->grads[side], 0, c->cfg.batch * c->cfg.dim};
    return st;
}

/* ------------------------------------------------------------ replay */

static uint64_t mix(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t clg_sample_seed(uint64_t seed, uint64_t update, uint64_t position)
{
    /* Three chained rounds rather than one hash of a sum: (seed, update,
     * position) and (seed, update + 1, position - 1) must not collide. */
    uint64_t h = mix(seed ^ 0x636c677261645f73ull); /* "clgrad_s" */
    h = mix(h ^ update);
    return mix(h ^ position);
}
