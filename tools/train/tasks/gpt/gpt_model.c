/* gpt_model.c - the GPT model's life: its activations (allocated from
 * gpt_layout.c's table, reserved against the budget), its binding to
 * clgrad's model, and the profiling switch (see gpt_model.h). The passes
 * are gpt_forward.c and gpt_backward.c, on gpt_launch.c's calls. */
#include "gpt_internal.h"
#include "clbuf.h"
#include "clgrad_advanced.h"
#include "errmsg.h"

#include <stdlib.h>
#include <string.h>

static void release_bufs(gpt_model *m)
{
    for (int i = 0; i < m->n_bufs; i++) {
        cl_mem *b = &m->buf[i];
        clbuf_release_mems(&b, 1);
    }
    m->n_bufs = 0;
    if (m->reserved)
        clg_context_unreserve(m->ctx, m->reserved);
    m->reserved = 0;
}

void gpt_destroy(gpt_model *m)
{
    if (!m)
        return;
    release_bufs(m);
    mlp_gemm_scratch_release(&m->gemm_scratch);
    gpt_flash_release(&m->flash);
    gpt_kernels_release(&m->k);
    free(m);
}

/* Every buffer of the table at its size for rows sequences, zeroed (so
 * that a lazily allocating driver fails here rather than mid-run). */
static cl_int alloc_bufs(gpt_model *m)
{
    cl_context cl = clg_context_cl(m->ctx);
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < gpt_buf_count(&m->s) && err == CL_SUCCESS; i++) {
        gpt_buf_size e = gpt_buf_elems(&m->s, i);
        size_t bytes = (size_t)(4 * gpt_buf_total(&e, m->rows));
        m->n_bufs = i + 1;
        if (bytes == 0)
            continue; /* a kind this --recompute mode does not keep */
        m->buf[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS) {
            m->buf[i] = NULL;
            break;
        }
        float zero = 0.0f;
        err = clEnqueueFillBuffer(m->queue, m->buf[i], &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
    }
    return err == CL_SUCCESS ? clFinish(m->queue) : err;
}

/* Bytes of the largest activation buffer for rows sequences. */
static uint64_t largest_buf(const gpt_shape *s, unsigned rows)
{
    uint64_t largest = 0;
    for (int i = 0; i < gpt_buf_count(s); i++) {
        gpt_buf_size e = gpt_buf_elems(s, i);
        uint64_t bytes = 4 * gpt_buf_total(&e, rows);
        largest = bytes > largest ? bytes : largest;
    }
    return largest;
}

int gpt_create(clg_context *ctx, const gpt_shape *s, unsigned rows, gpt_model **out, char *err,
               size_t errlen)
{
    *out = NULL;
    if (gpt_shape_check(s, err, errlen) != 0)
        return -1;
    if (rows == 0)
        return errmsg_set(err, errlen, "gpt: a micro-batch of 0 sequences");
    /* The table gives the kernels' scratch per sequence: it must cover
     * rows sequences at once. */
    size_t N = (size_t)rows * s->context;
    if (N > UINT32_MAX / (4 * (uint64_t)s->width) ||
        (uint64_t)gpt_head_rows(s, rows) * gpt_logits_ld(s) > UINT32_MAX)
        return errmsg_set(err, errlen, "gpt: %u sequences of %u positions: too many", rows,
                          s->context);
    gpt_buf_size sort = gpt_buf_elems(s, GPT_SORT);
    if (gpt_scratch_floats((unsigned)N, s->width) >
            rows * gpt_scratch_floats(s->context, s->width) ||
        gpt_sort_ints((unsigned)N, s->vocab) > rows * sort.per_seq + sort.fixed)
        return errmsg_set(err, errlen, "gpt: the kernels' scratch grows faster than the positions");
    if (largest_buf(s, rows) > clg_context_max_alloc(ctx))
        return errmsg_set(err, errlen,
                          "gpt: an activation buffer for %u sequences needs %llu B, more than "
                          "the device's largest allocation (%llu B)",
                          rows, (unsigned long long)largest_buf(s, rows),
                          (unsigned long long)clg_context_max_alloc(ctx));
    gpt_model *m = calloc(1, sizeof *m);
    if (!m)
        return errmsg_set(err, errlen, "gpt: out of host memory");
    m->ctx = ctx;
    m->queue = clg_context_queue(ctx);
    m->s = *s;
    m->rows = rows;
    if (gpt_kernels_init(ctx, &m->k, s->vocab) != CLG_SUCCESS) {
        errmsg_set(err, errlen, "building gpt.cl: %s", clg_last_error(ctx));
        free(m);
        return -1;
    }
    clg_status fst = gpt_flash_init(ctx, s->width / s->heads, &m->flash);
    if (fst != CLG_SUCCESS) {
        errmsg_set(err, errlen, "building gpt_flash.cl (head size %u): %s: %s", s->width / s->heads,
                   clg_status_string(fst), clg_last_error(ctx));
        gpt_destroy(m);
        return -1;
    }
    gpt_act_bytes ab = gpt_activation_bytes(s);
    uint64_t bytes = gpt_act_total(&ab, rows);
    clg_status st = clg_context_reserve(ctx, bytes);
    if (st != CLG_SUCCESS) {
        errmsg_set(err, errlen, "gpt: activations for %u sequences need %llu B: %s", rows,
                   (unsigned long long)bytes, clg_status_string(st));
        gpt_destroy(m);
        return -1;
    }
    m->reserved = bytes;
    cl_int cerr = alloc_bufs(m);
    if (cerr != CL_SUCCESS) {
        errmsg_set(err, errlen,
                   "gpt: allocating activations of %llu B for %u sequences: "
                   "OpenCL error %d",
                   (unsigned long long)bytes, rows, cerr);
        gpt_destroy(m);
        return -1;
    }
    *out = m;
    return 0;
}

clg_status gpt_bind(gpt_model *m, const clg_model *model)
{
    const clg_config *cfg = clg_model_get_config(model);
    int n = gpt_tensor_count(&m->s);
    m->params_bound = m->grads_bound = 0;
    if ((int)clg_model_tensor_count(model) != n)
        return CLG_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        gpt_tensor_info t;
        gpt_tensor(&m->s, i, &t);
        const char *name = clg_model_tensor_name(model, i);
        if (!name || strcmp(name, t.name) != 0 ||
            clg_model_tensor_size(model, i) != gpt_tensor_size(&t))
            return CLG_ERR_INVALID_ARGUMENT;
        clg_status st = clg_model_param_view(model, i, &m->param[i]);
        if (st == CLG_SUCCESS)
            st = clg_model_acc_view(model, i, &m->acc[i]);
        if (st != CLG_SUCCESS)
            return st;
    }
    /* the GEMMs and kernels read and write fp32: bf16 ones wait for
     * gpt_bind_params and gpt_bind_grads */
    m->params_bound = cfg->master_dtype == CLG_FP32;
    m->grads_bound = cfg->acc_dtype == CLG_FP32;
    return CLG_SUCCESS;
}

void gpt_bind_params(gpt_model *m, const clg_view *params)
{
    memcpy(m->param, params, (size_t)gpt_tensor_count(&m->s) * sizeof *params);
    m->params_bound = 1;
}

void gpt_bind_grads(gpt_model *m, const clg_view *grads)
{
    memcpy(m->acc, grads, (size_t)gpt_tensor_count(&m->s) * sizeof *grads);
    m->grads_bound = 1;
}

void gpt_profile(gpt_model *m, int on)
{
    if (on && !m->profiling)
        memset(&m->times, 0, sizeof m->times);
    m->profiling = on;
}

gpt_profile_times gpt_profile_read(const gpt_model *m)
{
    return m->times;
}
