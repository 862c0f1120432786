/* gpt_head.c - the GPT model's tied head and its loss, whole or in chunks
 * of rows (gpt_head_rows; see GPT_HEAD_CHUNK_FLOATS in gpt_model.h):
 * logits = lnf wte^T over V of each row's ld floats, the fused
 * cross-entropy (gpt_xent), and the backward's dlnf = dlogits wte and
 * wte's gradient dlogits^T lnf. A micro-batch within one chunk keeps its
 * logits from the forward, which the backward turns into dlogits (the
 * model's path before chunks, bit for bit); a larger one computes each
 * chunk's logits in the forward for the losses and again in the backward,
 * where the chunks' wte gradients add up in chunk order. */
#include "gpt_internal.h"

static const clg_view no_view = {NULL, 0, 0};

/* logits of rows r0 .. r0 + nr into the logits buffer's first nr rows. */
static cl_int head_logits(gpt_model *m, size_t r0, size_t nr)
{
    size_t C = m->s.width, V = m->s.vocab, ld = gpt_logits_ld(&m->s);
    clg_view lnf = gpt_lnf_out(m, r0 + nr);
    lnf.offset += r0 * C;
    lnf.count = nr * C;
    return gpt_gemm(m, 0, 1, nr, V, C, lnf, C, m->param[GPT_WTE], C, 0.0f,
                    gpt_act(m, GPT_LOGITS, 0, nr * ld), ld);
}

/* The loss (and with backward, dlogits in place) of the chunk's nr rows
 * from r0. */
static cl_int head_xent(gpt_model *m, const gpt_tokens *tok, unsigned T, size_t r0, size_t nr,
                        int backward, float dscale, clg_view loss_scale)
{
    size_t ld = gpt_logits_ld(&m->s);
    clg_view logits = gpt_act(m, GPT_LOGITS, 0, nr * ld);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_xent(&m->k, tok, T, (cl_uint)r0, (cl_uint)nr, m->s.vocab, (cl_uint)ld, logits,
                     gpt_act(m, GPT_ROW_LOSS, r0, nr), backward, dscale,
                     backward ? loss_scale : no_view, backward ? logits : no_view));
    return err;
}

cl_int gpt_head_forward(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T, int loss)
{
    size_t N = (size_t)B * T, R = gpt_head_rows(&m->s, m->rows);
    m->head_kept = N <= R;
    if (!m->head_kept && !loss)
        return CL_SUCCESS; /* gpt_read_logits computes the rows it reads */
    cl_int err = CL_SUCCESS;
    for (size_t r0 = 0; r0 < N && err == CL_SUCCESS; r0 += R) {
        size_t nr = N - r0 < R ? N - r0 : R;
        err = head_logits(m, r0, nr);
        if (err == CL_SUCCESS && loss)
            err = head_xent(m, tok, T, r0, nr, 0, 1.0f, no_view);
    }
    return err;
}

cl_int gpt_head_backward(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T, float dscale,
                         clg_view loss_scale, float beta)
{
    size_t C = m->s.width, V = m->s.vocab, ld = gpt_logits_ld(&m->s);
    size_t N = (size_t)B * T, R = m->head_kept ? N : gpt_head_rows(&m->s, m->rows);
    clg_view dbuf = gpt_act(m, GPT_DBUF, 0, N * C), lnf = gpt_lnf_out(m, N);
    cl_int err = CL_SUCCESS;
    for (size_t r0 = 0; r0 < N && err == CL_SUCCESS; r0 += R) {
        size_t nr = N - r0 < R ? N - r0 : R;
        clg_view dlogits = gpt_act(m, GPT_LOGITS, 0, nr * ld);
        clg_view drows = {dbuf.mem, dbuf.offset + r0 * C, nr * C};
        clg_view xrows = {lnf.mem, lnf.offset + r0 * C, nr * C};
        if (!m->head_kept)
            err = head_logits(m, r0, nr);
        /* each sequence's mean over its T positions: 1 / T per position */
        if (err == CL_SUCCESS)
            err = head_xent(m, tok, T, r0, nr, 1, dscale / (float)T, loss_scale);
        /* dlnf = dlogits wte; wte's gradient starts at the first chunk */
        if (err == CL_SUCCESS)
            err = gpt_gemm(m, 0, 0, nr, C, V, dlogits, ld, m->param[GPT_WTE], C, 0.0f, drows, C);
        if (err == CL_SUCCESS)
            err = gpt_gemm(m, 1, 0, V, C, nr, dlogits, ld, xrows, C, r0 ? 1.0f : beta,
                           m->acc[GPT_WTE], C);
    }
    m->head_kept = 0; /* dlogits now, or another chunk's logits */
    return err;
}

cl_int gpt_read_logits(gpt_model *m, unsigned b, unsigned t, unsigned T, float *host)
{
    if (T < 1 || T > m->s.context || t >= T || b >= m->rows)
        return CL_INVALID_VALUE;
    size_t row = (size_t)b * T + t, ld = gpt_logits_ld(&m->s);
    cl_int err = CL_SUCCESS;
    if (!m->head_kept) { /* a chunked forward kept no logits: this row's alone */
        err = head_logits(m, row, 1);
        row = 0;
    }
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(m->queue, m->buf[GPT_LOGITS], CL_TRUE, row * ld * sizeof(float),
                                  m->s.vocab * sizeof(float), host, 0, NULL, NULL);
    return err;
}
