/* shard_state.c - a ZeRO-1 shard's optimizer states on the host: where a
 * range of the layout space lies in a gathered state image, the shard's
 * own part downloaded (codes and absmax), a checkpoint's tensor written
 * into the shard's part, tensors read out of a gathered image, and the
 * images a checkpoint load keeps as its backup.
 *
 * The gathered image of state s is the layout space's state as stored,
 * chunk after chunk: every chunk's codes (fp32, bf16, Q8 or Q4 bytes, in
 * the chunk's format), then, for Q8/Q4 states, every chunk's absmax
 * values. A shard covers whole segments (1024 elements: whole Q8/Q4
 * blocks and whole 32-element Q4 byte groups), so its codes and its absmax
 * values are each one contiguous run of the image, and no block is split
 * between two shards. */
#include "model.h"
#include "qstate.h"

#include <stdlib.h>
#include <string.h>

/* Where element x of the layout space (a segment boundary, or the first
 * element of a tensor) falls in state s's image: its byte among the codes
 * and its index among the absmax values. x = the space's total gives the
 * image's sizes. */
static void image_at(const clg_model *m, size_t s, uint64_t x, uint64_t *code, uint64_t *scale)
{
    uint64_t c_off = 0, s_off = 0, base = 0;
    for (size_t c = 0; c < m->n_chunks; c++) {
        clg_dtype fmt = clg__state_format(m, s, c);
        uint64_t n = x - base < m->chunk_elems[c] ? x - base : m->chunk_elems[c];
        c_off += clg__format_bytes(fmt, n);
        s_off += clg__format_scales(fmt, n);
        base += n;
        if (base == x)
            break;
    }
    *code = c_off;
    *scale = s_off;
}

/* Image bytes of state s: codes, then 4 bytes per absmax value. */
static uint64_t image_bytes(const clg_model *m, size_t s, uint64_t *codes)
{
    uint64_t scales;
    image_at(m, s, clg__layout_total(m), codes, &scales);
    return *codes + 4 * scales;
}

/* A finalized model and one of its states. */
static clg_status check_state(const clg_model *m, int s, const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    if (s < 0 || (size_t)s >= m->n_states)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: no state %d (the optimizer has %zu)", who, s, m->n_states);
    return CLG_SUCCESS;
}

clg_status clg_model_state_extent(const clg_model *m, int s, uint64_t first, uint64_t count,
                                  uint64_t *code_offset, uint64_t *code_bytes,
                                  uint64_t *scale_offset, uint64_t *n_scales)
{
    const char *who = "clg_model_state_extent";
    clg_status st = check_state(m, s, who);
    if (st != CLG_SUCCESS)
        return st;
    uint64_t total = clg__layout_total(m);
    if (first % CLG_SEGMENT_ALIGN || count % CLG_SEGMENT_ALIGN || first > total ||
        count > total - first)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: elements [%llu, +%llu) are not whole %d-element segments of the "
                         "layout space (%llu elements)",
                         who, (unsigned long long)first, (unsigned long long)count,
                         CLG_SEGMENT_ALIGN, (unsigned long long)total);
    uint64_t c0, s0, c1, s1;
    image_at(m, (size_t)s, first, &c0, &s0);
    image_at(m, (size_t)s, first + count, &c1, &s1);
    if (code_offset)
        *code_offset = c0;
    if (code_bytes)
        *code_bytes = c1 - c0;
    if (scale_offset)
        *scale_offset = s0;
    if (n_scales)
        *n_scales = s1 - s0;
    return CLG_SUCCESS;
}

/* The shard's extent of state s: its code bytes and absmax count. */
static void own_extent(const clg_model *m, size_t s, uint64_t *code_bytes, uint64_t *n_scales)
{
    uint64_t first, n, c0, s0, c1, s1;
    clg__shard_bounds(clg__layout_total(m), m->shard_index, m->shard_count ? m->shard_count : 1,
                      &first, &n);
    image_at(m, s, first, &c0, &s0);
    image_at(m, s, first + n, &c1, &s1);
    *code_bytes = c1 - c0;
    *n_scales = s1 - s0;
}

static clg_status read_buffer(clg_model *m, cl_mem mem, size_t bytes, void *dst, const char *who)
{
    if (bytes == 0)
        return CLG_SUCCESS;
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, "clEnqueueReadBuffer");
    cl_int err = clEnqueueReadBuffer(m->ctx->queue, mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clEnqueueReadBuffer");
}

clg_status clg__shard_download_state(clg_model *m, int s, void *codes, size_t code_bytes,
                                     float *scales, size_t n_scales, const char *who)
{
    clg_status st = check_state(m, s, who);
    if (st != CLG_SUCCESS)
        return st;
    uint64_t want_codes, want_scales;
    own_extent(m, (size_t)s, &want_codes, &want_scales);
    if (code_bytes != want_codes || n_scales != want_scales)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: state %d of shard %u holds %llu code bytes and %llu absmax values "
                         "(clg_model_state_extent), the host buffers %zu bytes and %zu values",
                         who, s, m->shard_index, (unsigned long long)want_codes,
                         (unsigned long long)want_scales, code_bytes, n_scales);
    if ((codes == NULL && code_bytes != 0) || (scales == NULL && n_scales != 0))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL %s", who,
                         codes == NULL && code_bytes ? "codes" : "scales");
    char *dst = codes;
    float *sdst = scales;
    for (size_t c = 0; c < m->n_chunks && st == CLG_SUCCESS; c++) {
        size_t len = (size_t)clg__qstate_state_bytes(m, (size_t)s, c);
        size_t slen = (size_t)clg__qstate_scale_bytes(m, (size_t)s, c);
        st = read_buffer(m, len ? m->states[s].chunks[c] : NULL, len, dst, who);
        if (st == CLG_SUCCESS)
            st = read_buffer(m, slen ? m->scales[s].chunks[c] : NULL, slen, sdst, who);
        if (len) /* no arithmetic on a NULL buffer of 0 bytes */
            dst += len;
        if (slen)
            sdst += slen / 4;
    }
    return st;
}

/* The part [*a, *b) of tensor t that lies in the shard, in the elements
 * of its chunk, and *lo, where the shard's part of the chunk starts; false
 * when none of it does. */
static bool own_part(const clg_model *m, size_t t, size_t *a, size_t *b, size_t *lo)
{
    const clg_tensor_slot *ts = &m->tensors[t];
    size_t c = ts->chunk, hi = m->own_lo[c] + m->own_n[c];
    *lo = m->own_lo[c];
    *a = ts->offset > *lo ? ts->offset : *lo;
    *b = ts->offset + ts->count < hi ? ts->offset + ts->count : hi;
    return *a < *b;
}

static clg_status write_at(clg_model *m, cl_mem mem, uint64_t offset, uint64_t bytes,
                           const void *host, const char *who)
{
    if (bytes == 0)
        return CLG_SUCCESS;
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, "clEnqueueWriteBuffer");
    cl_int err = clEnqueueWriteBuffer(m->ctx->queue, mem, CL_TRUE, (size_t)offset, (size_t)bytes,
                                      host, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clEnqueueWriteBuffer");
}

/* A quantized tensor starts on a block and the shard's part of a chunk on
 * a segment, so a - lo and a - offset are whole blocks (and Q4 groups):
 * the byte and absmax offsets below are exact. */
clg_status clg__shard_state_write(clg_model *m, size_t s, size_t t, const void *host)
{
    size_t a, b, lo;
    if (!own_part(m, t, &a, &b, &lo))
        return CLG_SUCCESS; /* none of the tensor is in this shard */
    const clg_tensor_slot *ts = &m->tensors[t];
    clg_dtype fmt = clg__state_format(m, s, ts->chunk);
    return write_at(m, m->states[s].chunks[ts->chunk], clg__format_bytes(fmt, a - lo),
                    clg__format_bytes(fmt, b - a),
                    (const char *)host + clg__format_bytes(fmt, a - ts->offset),
                    "checkpoint: optimizer state of the shard");
}

clg_status clg__shard_scales_write(clg_model *m, size_t s, size_t t, const void *host)
{
    size_t a, b, lo;
    if (!own_part(m, t, &a, &b, &lo))
        return CLG_SUCCESS;
    const clg_tensor_slot *ts = &m->tensors[t];
    clg_dtype fmt = clg__state_format(m, s, ts->chunk);
    return write_at(m, m->scales[s].chunks[ts->chunk], 4 * clg__format_scales(fmt, a - lo),
                    4 * clg__format_scales(fmt, b - a),
                    (const float *)host + clg__format_scales(fmt, a - ts->offset),
                    "checkpoint: optimizer state absmax of the shard");
}

void clg__shard_image_read(const clg_model *m, const void *image, size_t s, size_t t, bool scales,
                           uint8_t *dst)
{
    const clg_tensor_slot *ts = &m->tensors[t];
    clg_dtype fmt = clg__state_format(m, s, ts->chunk);
    uint64_t code, scale, codes_total;
    image_at(m, s, clg__layout_first(m, ts->chunk) + ts->offset, &code, &scale);
    const uint8_t *src = image;
    if (scales) {
        image_bytes(m, s, &codes_total);
        memcpy(dst, src + codes_total + 4 * scale, 4 * clg__format_scales(fmt, ts->count));
    } else
        memcpy(dst, src + code, clg__format_bytes(fmt, ts->count));
}

/* ------------------------------------------------ a checkpoint's backup */

void clg__shard_images_free(const clg_model *m, void **images)
{
    for (size_t s = 0; images != NULL && s < m->n_states; s++)
        free(images[s]);
    free(images);
}

clg_status clg__shard_images(clg_model *m, void ***out)
{
    const char *who = "clg_checkpoint_load: the shard's states";
    *out = NULL;
    uint64_t first, n;
    clg__shard_bounds(clg__layout_total(m), m->shard_index, m->shard_count, &first, &n);
    void **images = calloc(m->n_states ? m->n_states : 1, sizeof *images);
    if (images == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    clg_status st = CLG_SUCCESS;
    for (size_t s = 0; s < m->n_states && st == CLG_SUCCESS; s++) {
        uint64_t codes_total, code, scale, code_bytes, n_scales;
        uint64_t bytes = image_bytes(m, s, &codes_total);
        image_at(m, s, first, &code, &scale);
        own_extent(m, s, &code_bytes, &n_scales);
        uint8_t *img = calloc(bytes ? (size_t)bytes : 1, 1);
        images[s] = img;
        st = img != NULL ? clg__shard_download_state(m, (int)s, img + code, (size_t)code_bytes,
                                                     (float *)(img + codes_total) + scale,
                                                     (size_t)n_scales, who)
                         : clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                                     "%s: out of host memory", who);
    }
    if (st != CLG_SUCCESS) {
        clg__shard_images_free(m, images);
        return st;
    }
    *out = images;
    return CLG_SUCCESS;
}
