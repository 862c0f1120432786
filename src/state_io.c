/* state_io.c - host copies of optimizer states in any format: fp32 (as
 * stored), bf16 (widened), Q8/Q4 (dequantized, or raw: codes and absmax as
 * stored), and the format of each tensor's state. */
#include "model.h"
#include "qstate.h"

#include <stdlib.h>
#include <string.h>

static clg_status check_state(const clg_model *m, int s, int t, bool allow_all, const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    if (!(t == CLG_ALL_TENSORS && allow_all) && (t < 0 || (size_t)t >= m->n_tensors))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no tensor %d (the model has %zu%s)", who, t, m->n_tensors,
                         allow_all ? "; CLG_ALL_TENSORS is -1" : "");
    if (s < 0 || (size_t)s >= m->n_states)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no state %d (the optimizer has %zu)", who, s, m->n_states);
    return CLG_SUCCESS;
}

/* A download's first checks: its event cleared, the state and tensor, and
 * a whole model's states (a shard has only its part). */
static clg_status check_download(const clg_model *m, int s, int t, bool allow_all,
                                 const clg_events *ev, const char *who)
{
    clg__events_clear(ev);
    clg_status st = check_state(m, s, t, allow_all, who);
    return st == CLG_SUCCESS ? clg__shard_refuse(m, who) : st;
}

/* Where tensor t's state s lives: its format, its code bytes and absmax
 * values, and their byte offsets in the chunk's buffers. */
typedef struct state_region {
    clg_dtype fmt;
    cl_mem codes, scales;
    uint64_t code_offset, code_bytes, scale_offset, n_scales;
} state_region;

static state_region region_of(const clg_model *m, size_t s, size_t t)
{
    const clg_tensor_slot *ts = &m->tensors[t];
    state_region r = {.fmt = clg__state_format(m, s, ts->chunk)};
    r.codes = m->states[s].chunks[ts->chunk];
    r.code_offset = clg__format_bytes(r.fmt, ts->offset); /* blocks start even */
    r.code_bytes = clg__format_bytes(r.fmt, ts->count);
    r.n_scales = clg__format_scales(r.fmt, ts->count);
    if (r.n_scales) {
        r.scales = m->scales[s].chunks[ts->chunk];
        r.scale_offset = 4 * clg__format_scales(r.fmt, ts->offset);
    }
    return r;
}

/* A blocking copy of bytes at offset of mem: to the device when
 * to_device, else to the host. */
static clg_status copy(clg_model *m, cl_mem mem, uint64_t offset, uint64_t bytes, void *host,
                       int to_device, const char *who)
{
    if (bytes == 0)
        return CLG_SUCCESS;
    const char *call = to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, call);
    cl_int err = to_device ? clEnqueueWriteBuffer(m->ctx->queue, mem, CL_TRUE, offset, bytes,
                                                  host, 0, NULL, NULL)
                           : clEnqueueReadBuffer(m->ctx->queue, mem, CL_TRUE, offset, bytes,
                                                 host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, call);
}

static clg_status read(clg_model *m, cl_mem mem, uint64_t offset, uint64_t bytes, void *host,
                       const char *who)
{
    return copy(m, mem, offset, bytes, host, 0, who);
}

clg_status clg__state_codes_io(clg_model *m, size_t s, size_t t, void *host, int to_device)
{
    if (m->sharded && to_device)
        return clg__shard_state_write(m, s, t, host);
    if (m->sharded) /* the callers refuse first: this is a clgrad bug */
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "internal error: a per-tensor read of a sharded model's state");
    state_region r = region_of(m, s, t);
    const char *who = "checkpoint: optimizer state";
    return copy(m, r.codes, r.code_offset, r.code_bytes, host, to_device, who);
}

clg_status clg__state_scales_io(clg_model *m, size_t s, size_t t, void *host, int to_device)
{
    if (m->sharded && to_device)
        return clg__shard_scales_write(m, s, t, host);
    if (m->sharded)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "internal error: a per-tensor read of a sharded model's absmax");
    state_region r = region_of(m, s, t);
    const char *who = "checkpoint: optimizer state absmax";
    return copy(m, r.scales, r.scale_offset, 4 * r.n_scales, host, to_device, who);
}

static clg_status read_raw(clg_model *m, const state_region *r, void *codes, float *scales,
                           const char *who)
{
    clg_status st = read(m, r->codes, r->code_offset, r->code_bytes, codes, who);
    if (st == CLG_SUCCESS && r->n_scales)
        st = read(m, r->scales, r->scale_offset, 4 * r->n_scales, scales, who);
    return st;
}

/* One tensor's state into count fp32 values. */
static clg_status read_fp32(clg_model *m, size_t s, size_t t, float *out, const char *who)
{
    state_region r = region_of(m, s, t);
    size_t n = m->tensors[t].count;
    if (r.fmt == CLG_FP32)
        return read_raw(m, &r, out, NULL, who);
    void *codes = malloc(r.code_bytes ? r.code_bytes : 1);
    float *scales = malloc((r.n_scales ? r.n_scales : 1) * sizeof *scales);
    clg_status st = codes && scales ? read_raw(m, &r, codes, scales, who)
                                    : clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                                                "%s: out of memory", who);
    if (st == CLG_SUCCESS && r.fmt == CLG_BF16) {
        const uint16_t *h = codes;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)h[i] << 16;
            memcpy(&out[i], &u, 4);
        }
    } else if (st == CLG_SUCCESS) {
        size_t k;
        clg__dequantize(r.fmt, clg__qmap_of(m, s, &k), codes, scales, n, out);
    }
    free(codes);
    free(scales);
    return st;
}

clg_status clg_model_download_state(clg_model *m, int s, int t, float *host, size_t count,
                                    const clg_events *ev)
{
    const char *who = "clg_model_download_state";
    clg_status st = check_download(m, s, t, true, ev, who);
    if (st == CLG_SUCCESS && host == NULL)
        st = clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL host", who);
    if (st == CLG_SUCCESS)
        st = clg__host_count_check(m, t, count, who);
    if (st == CLG_SUCCESS)
        st = clg__events_check(m->ctx, ev, who);
    if (st != CLG_SUCCESS)
        return st;
    st = clg__events_wait(m->ctx, ev, who);
    size_t first = t == CLG_ALL_TENSORS ? 0 : (size_t)t;
    size_t last = t == CLG_ALL_TENSORS ? m->n_tensors : (size_t)t + 1;
    for (size_t i = first; i < last && st == CLG_SUCCESS; i++) {
        st = read_fp32(m, (size_t)s, i, host, who);
        host += m->tensors[i].count;
    }
    return clg__events_finish(m->ctx, ev, st, who);
}

clg_status clg_model_state_format(const clg_model *m, int s, int t, clg_dtype *dtype,
                                  size_t *code_bytes, size_t *n_scales)
{
    clg_status st = check_state(m, s, t, false, "clg_model_state_format");
    if (st != CLG_SUCCESS)
        return st;
    state_region r = region_of(m, (size_t)s, (size_t)t);
    if (dtype)
        *dtype = r.fmt;
    if (code_bytes)
        *code_bytes = (size_t)r.code_bytes;
    if (n_scales)
        *n_scales = (size_t)r.n_scales;
    return CLG_SUCCESS;
}

/* The shard's states: codes and, for Q8/Q4, absmax values. */
static clg_status download_shard_range(clg_model *m, int s, void *codes, size_t code_bytes,
                                       float *scales, size_t n_scales, const clg_events *ev,
                                       const char *who)
{
    clg_status st = m ? clg__events_check(m->ctx, ev, who) : CLG_SUCCESS;
    if (st == CLG_SUCCESS && m)
        st = clg__events_wait(m->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = clg__shard_download_state(m, s, codes, code_bytes, scales, n_scales, who);
    return m ? clg__events_finish(m->ctx, ev, st, who) : st;
}

clg_status clg_model_download_state_raw(clg_model *m, int s, int t, void *codes,
                                        size_t code_bytes, float *scales, size_t n_scales,
                                        const clg_events *ev)
{
    const char *who = "clg_model_download_state_raw";
    if (t == CLG_SHARD_RANGE) {
        clg__events_clear(ev);
        return download_shard_range(m, s, codes, code_bytes, scales, n_scales, ev, who);
    }
    clg_status st = check_download(m, s, t, false, ev, who);
    if (st != CLG_SUCCESS)
        return st;
    state_region r = region_of(m, (size_t)s, (size_t)t);
    if (code_bytes != r.code_bytes || n_scales != r.n_scales)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: tensor %d ('%s') holds state %d as %llu code bytes and %llu absmax "
                         "values, the host buffers %zu and %zu",
                         who, t, m->tensors[t].name, s, (unsigned long long)r.code_bytes,
                         (unsigned long long)r.n_scales, code_bytes, n_scales);
    if (codes == NULL || (n_scales && scales == NULL))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL %s", who,
                         codes == NULL ? "codes" : "scales");
    st = clg__events_check(m->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(m->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = read_raw(m, &r, codes, scales, who);
    return clg__events_finish(m->ctx, ev, st, who);
}
