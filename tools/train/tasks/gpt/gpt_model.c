/* gpt_model.c - the GPT model's life: its activations (allocated from
 * gpt_layout.c's table, reserved against the budget), its binding to
 * clgrad's model, the GEMM calls, logits for sampling and profiling (see
 * gpt_model.h). The passes are gpt_forward.c and gpt_backward.c. */
#include "gpt_internal.h"
#include "clbuf.h"
#include "clgrad_advanced.h"
#include "errmsg.h"
#include "progress.h"

#include <clblast_c.h>
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
        size_t bytes = (size_t)(4 * (m->rows * e.per_seq + e.fixed));
        m->buf[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err != CL_SUCCESS) {
            m->buf[i] = NULL;
            break;
        }
        m->n_bufs = i + 1;
        float zero = 0.0f;
        err = clEnqueueFillBuffer(m->queue, m->buf[i], &zero, sizeof zero, 0, bytes, 0, NULL,
                                  NULL);
    }
    return err == CL_SUCCESS ? clFinish(m->queue) : err;
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
    if (N > UINT32_MAX / GPT_VOCAB)
        return errmsg_set(err, errlen, "gpt: %u sequences of %u positions: too many", rows,
                          s->context);
    if (gpt_scratch_floats((unsigned)N, s->width) > rows * gpt_scratch_floats(s->context, s->width) ||
        gpt_sort_ints((unsigned)N) > rows * gpt_sort_ints(s->context))
        return errmsg_set(err, errlen, "gpt: the kernels' scratch grows faster than the positions");
    gpt_model *m = calloc(1, sizeof *m);
    if (!m)
        return errmsg_set(err, errlen, "gpt: out of host memory");
    m->ctx = ctx;
    m->queue = clg_context_queue(ctx);
    m->s = *s;
    m->rows = rows;
    if (gpt_kernels_init(ctx, &m->k) != CLG_SUCCESS) {
        errmsg_set(err, errlen, "building cl/gpt.cl: %s", clg_last_error(ctx));
        free(m);
        return -1;
    }
    gpt_act_bytes ab = gpt_activation_bytes(s);
    uint64_t bytes = rows * ab.per_seq + ab.fixed;
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
        errmsg_set(err, errlen, "gpt: allocating activations of %llu B for %u sequences: "
                   "OpenCL error %d", (unsigned long long)bytes, rows, cerr);
        gpt_destroy(m);
        return -1;
    }
    *out = m;
    return 0;
}

clg_status gpt_bind(gpt_model *m, const clg_model *model)
{
    const clg_config *cfg = clg_model_get_config(model);
    /* the GEMMs and kernels read and write fp32 */
    if (cfg->acc_dtype != CLG_FP32 || cfg->master_dtype != CLG_FP32)
        return CLG_ERR_UNSUPPORTED;
    int n = gpt_tensor_count(&m->s);
    if ((int)clg_model_tensor_count(model) != n)
        return CLG_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < n; i++) {
        gpt_tensor_info t;
        gpt_tensor(&m->s, i, &t);
        size_t count = t.ndim == 2 ? t.dims[0] * t.dims[1] : t.dims[0];
        const char *name = clg_model_tensor_name(model, i);
        if (!name || strcmp(name, t.name) != 0 || clg_model_tensor_size(model, i) != count)
            return CLG_ERR_INVALID_ARGUMENT;
        clg_status st = clg_model_param_view(model, i, &m->param[i]);
        if (st == CLG_SUCCESS)
            st = clg_model_acc_view(model, i, &m->acc[i]);
        if (st != CLG_SUCCESS)
            return st;
    }
    m->bound = 1;
    return CLG_SUCCESS;
}

int gpt_check_batch(const gpt_model *m, unsigned B, unsigned T)
{
    return m->bound && B >= 1 && B <= m->rows && T >= 1 && T <= m->s.context ? 0 : -1;
}

cl_int gpt_gemm(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a,
                size_t lda, clg_view b, size_t ldb, float beta, clg_view c, size_t ldc)
{
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_GEMM,
            mlp_gemm(m->queue, &m->gemm_scratch, ta, tb, M, N, K, 1.0f, a.mem, a.offset, lda,
                     b.mem, b.offset, ldb, beta, c.mem, c.offset, ldc, NULL));
    return err;
}

cl_int gpt_gemm_batched(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a,
                        size_t lda, size_t sa, clg_view b, size_t ldb, size_t sb, clg_view c,
                        size_t ldc, size_t sc, size_t batch)
{
    /* mlp_gemm's form: row-major C = op(A) op(B) as column-major
     * C^T = op(B)^T op(A)^T, B's memory first, M and N swapped */
    CLBlastTranspose t1 = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastTranspose t2 = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_GEMM,
            (cl_int)CLBlastSgemmStridedBatched(CLBlastLayoutColMajor, t1, t2, N, M, K, 1.0f, b.mem,
                                               b.offset, ldb, sb, a.mem, a.offset, lda, sa, 0.0f,
                                               c.mem, c.offset, ldc, sc, batch, &m->queue, NULL));
    return err;
}

cl_int gpt_forward_logits(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T)
{
    if (gpt_check_batch(m, B, T) != 0)
        return CL_INVALID_VALUE;
    m->fwd_B = 0; /* no loss: nothing for a backward */
    return gpt_forward_body(m, tok, B, T);
}

cl_int gpt_read_logits(gpt_model *m, unsigned b, unsigned t, unsigned T, float *host)
{
    if (T < 1 || T > m->s.context || t >= T || b >= m->rows)
        return CL_INVALID_VALUE;
    size_t off = ((size_t)b * T + t) * GPT_VOCAB * sizeof(float);
    return clEnqueueReadBuffer(m->queue, m->buf[GPT_LOGITS], CL_TRUE, off,
                               GPT_VOCAB * sizeof(float), host, 0, NULL, NULL);
}

void gpt_profile(gpt_model *m, int on)
{
    if (on && !m->profiling)
        memset(&m->times, 0, sizeof m->times);
    m->profiling = on;
}

gpt_profile_times gpt_profile_read(const gpt_model *m) { return m->times; }

double gpt_prof_begin(gpt_model *m)
{
    if (!m->profiling)
        return 0.0;
    clFinish(m->queue); /* what others enqueued is not this launch's time */
    return progress_now();
}

cl_int gpt_prof_end(gpt_model *m, int kind, double t0, cl_int err)
{
    if (!m->profiling || err != CL_SUCCESS)
        return err;
    err = clFinish(m->queue);
    double dt = progress_now() - t0;
    if (kind == GPT_PROF_GEMM)
        m->times.gemm += dt;
    else if (kind == GPT_PROF_ATTN)
        m->times.attention += dt;
    else
        m->times.other += dt;
    return err;
}
