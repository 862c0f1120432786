/* gpt_forward.c - the GPT model's forward (llm.c's gpt2_forward): the
 * embeddings, L pre-LayerNorm blocks, ln_f, the tied head and the loss
 * (see gpt_model.h). Each block keeps in its own buffers what the backward
 * reads (gpt_internal.h); q k^T and qkv go to buffers every layer shares. */
#include "gpt_internal.h"

#include <math.h>

static const clg_view no_view = {NULL, 0, 0};

/* out [N x OC] = in [N x IC] W^T + b, W [OC x IC] (nn.Linear). */
static cl_int linear_forward(gpt_model *m, size_t N, size_t IC, size_t OC, clg_view in, clg_view w,
                             clg_view b, clg_view out)
{
    cl_int err = gpt_gemm(m, 0, 1, N, OC, IC, in, IC, w, IC, 0.0f, out, OC);
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_bias_add(&m->k, (cl_uint)N, (cl_uint)OC, out, b));
    return err;
}

/* Causal self-attention of block v: qkv [N x 3C] into v->atty. Per
 * (sequence, head) r: preatt[r] = q[r] k[r]^T, att[r] = the causal
 * softmax of preatt[r] / sqrt(HS) (kept for the backward), y[r] =
 * att[r] v[r]; every r at once through strided batched GEMMs. */
static cl_int attention_forward(gpt_model *m, const gpt_block_views *v, unsigned B, unsigned T,
                                clg_view qkv)
{
    const gpt_kernels *k = &m->k;
    cl_uint NH = v->NH, HS = v->HS;
    size_t R = v->R, THS = v->THS, TT = v->TT;
    clg_view preatt = gpt_act(m, GPT_PREATT, 0, R * TT), y = gpt_act(m, GPT_HEADS, 0, v->NC);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_ATTN, gpt_attn_split(k, B, T, NH, HS, qkv, v->q, v->k, v->v));
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 0, 1, T, T, HS, v->q, HS, THS, v->k, HS, THS, preatt, T, TT, R);
    GPT_RUN(m, err, GPT_PROF_ATTN,
            gpt_softmax_causal(k, (cl_uint)R, T, 1.0f / sqrtf((float)HS), preatt, v->att));
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 0, 0, T, HS, T, v->att, T, TT, v->v, HS, THS, y, HS, THS, R);
    GPT_RUN(m, err, GPT_PROF_ATTN, gpt_attn_merge(k, B, T, NH, HS, y, v->atty));
    return err;
}

/* Block l: in [N x C] (the residual stream) into its GPT_RES3. */
static cl_int block_forward(gpt_model *m, int l, unsigned B, unsigned T, clg_view in)
{
    const gpt_kernels *k = &m->k;
    const clg_view *p = &m->param[gpt_block_tensor(l, 0)];
    gpt_block_views v;
    gpt_block_views_of(m, l, B, T, &v);
    size_t C = m->s.width, N = v.N, NC = v.NC;
    /* LayerNorm and GELU outputs in shared buffers: the backward computes
     * them again (gpt_internal.h) */
    clg_view ln = gpt_act(m, GPT_HEADS, 0, NC);
    clg_view qkv = gpt_act(m, GPT_WIDE, 0, 3 * NC), gelu = gpt_act(m, GPT_WIDE, 0, 4 * NC);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, in, p[GPT_LN1_W], p[GPT_LN1_B], ln, v.mean1,
                          v.rstd1));
    if (err == CL_SUCCESS)
        err = linear_forward(m, N, C, 3 * C, ln, p[GPT_QKV_W], p[GPT_QKV_B], qkv);
    if (err == CL_SUCCESS)
        err = attention_forward(m, &v, B, T, qkv);
    if (err == CL_SUCCESS)
        err = linear_forward(m, N, C, C, v.atty, p[GPT_ATTPROJ_W], p[GPT_ATTPROJ_B], v.res2);
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_residual(k, (cl_uint)NC, v.res2, in, v.res2));
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, v.res2, p[GPT_LN2_W], p[GPT_LN2_B], ln,
                          v.mean2, v.rstd2));
    if (err == CL_SUCCESS)
        err = linear_forward(m, N, C, 4 * C, ln, p[GPT_FC_W], p[GPT_FC_B], v.fch);
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_gelu(k, (cl_uint)(4 * NC), v.fch, gelu));
    if (err == CL_SUCCESS)
        err = linear_forward(m, N, 4 * C, C, gelu, p[GPT_FCPROJ_W], p[GPT_FCPROJ_B], v.res3);
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_residual(k, (cl_uint)NC, v.res3, v.res2, v.res3));
    return err;
}

static cl_int forward_body(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T)
{
    const gpt_kernels *k = &m->k;
    size_t C = m->s.width, N = (size_t)B * T, NC = N * C;
    clg_view res = gpt_act(m, GPT_ENCODED, 0, NC);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_embed(k, tok, B, T, (cl_uint)C, m->param[GPT_WTE], m->param[GPT_WPE], res));
    for (unsigned l = 0; l < m->s.layers && err == CL_SUCCESS; l++) {
        err = block_forward(m, (int)l, B, T, res);
        res = gpt_act(m, gpt_layer_buf((int)l, GPT_RES3), 0, NC);
    }
    clg_view lnf = gpt_act(m, GPT_LNF, 0, NC);
    int lw = gpt_lnf_tensor(&m->s, 0);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, res, m->param[lw], m->param[lw + 1], lnf,
                          gpt_act(m, GPT_LNF_STATS, 0, N), gpt_act(m, GPT_LNF_STATS, N, N)));
    /* the head, tied to the token embedding: logits = lnf wte^T */
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 1, N, GPT_VOCAB, C, lnf, C, m->param[GPT_WTE], C, 0.0f,
                       gpt_act(m, GPT_LOGITS, 0, N * GPT_VOCAB), GPT_VOCAB);
    return err;
}

cl_int gpt_forward(gpt_model *m, const gpt_tokens *tok, unsigned B, cl_mem sums)
{
    unsigned T = m->s.context;
    if (gpt_check_batch(m, B, T) != 0)
        return CL_INVALID_VALUE;
    m->fwd_B = 0;
    size_t N = (size_t)B * T;
    clg_view logits = gpt_act(m, GPT_LOGITS, 0, N * GPT_VOCAB);
    clg_view row_loss = gpt_act(m, GPT_ROW_LOSS, 0, N);
    cl_int err = forward_body(m, tok, B, T);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_xent(&m->k, tok, B, T, GPT_VOCAB, logits, row_loss, 0, 1.0f, no_view, logits));
    if (sums)
        GPT_RUN(m, err, GPT_PROF_OTHER,
                gpt_loss_sum(&m->k, (cl_uint)N, row_loss, sums, m->buf[GPT_SCRATCH]));
    if (err == CL_SUCCESS)
        m->fwd_B = B;
    return err;
}

cl_int gpt_add_loss(gpt_model *m, unsigned B, cl_mem sums)
{
    if (B == 0 || B != m->fwd_B)
        return CL_INVALID_VALUE; /* not the last forward's */
    size_t N = (size_t)B * m->s.context;
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_loss_sum(&m->k, (cl_uint)N, gpt_act(m, GPT_ROW_LOSS, 0, N), sums,
                         m->buf[GPT_SCRATCH]));
    return err;
}

cl_int gpt_forward_logits(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T)
{
    if (gpt_check_batch(m, B, T) != 0)
        return CL_INVALID_VALUE;
    m->fwd_B = 0; /* no loss: nothing for a backward */
    return forward_body(m, tok, B, T);
}

cl_int gpt_read_logits(gpt_model *m, unsigned b, unsigned t, unsigned T, float *host)
{
    if (T < 1 || T > m->s.context || t >= T || b >= m->rows)
        return CL_INVALID_VALUE;
    size_t off = ((size_t)b * T + t) * GPT_VOCAB * sizeof(float);
    return clEnqueueReadBuffer(m->queue, m->buf[GPT_LOGITS], CL_TRUE, off,
                               GPT_VOCAB * sizeof(float), host, 0, NULL, NULL);
}
