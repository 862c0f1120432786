/* gpt_backward.c - the GPT model's backward (llm.c's gpt2_backward) on
 * path B: every weight gradient goes straight into clgrad's accumulator
 * views as acc = beta * acc + gradient (see gpt_model.h). The gradients of
 * the activations live in buffers all layers share (gpt_internal.h):
 * GPT_DRES the residual stream's, GPT_DBUF one [N x C] gradient at a time,
 * GPT_WIDE GELU's output again, then dfch, then dqkv, GPT_HEADS dy then
 * dq, dk, dv, GPT_PREATT datt. */
#include "gpt_internal.h"

#include <math.h>

/* The backward of out [N x OC] = in [N x IC] W^T + b with dout given:
 * dW = beta dW + dout^T in, db = beta db + sum_n dout, din = dout W
 * (din may be in: the queue runs the dW GEMM first). */
static cl_int linear_backward(gpt_model *m, size_t N, size_t IC, size_t OC, clg_view dout,
                              clg_view in, clg_view w, clg_view dw, clg_view db, clg_view din,
                              float beta)
{
    cl_int err = gpt_gemm(m, 1, 0, OC, IC, N, dout, OC, in, IC, beta, dw, IC);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_bias_grad(&m->k, (cl_uint)N, (cl_uint)OC, dout, db, beta, m->buf[GPT_SCRATCH]));
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 0, N, IC, OC, dout, OC, w, IC, 0.0f, din, IC);
    return err;
}

/* Block v's attention backward: datty [N x C] into dqkv [N x 3C]. With
 * S = the softmax's scale: datt = dy v^T, dv = att^T dy, dpreatt = the
 * softmax's backward (S folded in), dq = dpreatt k, dk = dpreatt^T q. */
static cl_int attention_backward(gpt_model *m, const gpt_block_views *v, unsigned B, unsigned T,
                                 clg_view datty, clg_view dqkv)
{
    const gpt_kernels *k = &m->k;
    cl_uint NH = v->NH, HS = v->HS;
    size_t NC = v->NC, R = v->R, THS = v->THS, TT = v->TT;
    clg_view datt = gpt_act(m, GPT_PREATT, 0, R * TT);
    /* dq takes dy's place once dv is done with dy */
    clg_view dy = gpt_act(m, GPT_HEADS, 0, NC), dq = dy;
    clg_view dk = gpt_act(m, GPT_HEADS, NC, NC), dv = gpt_act(m, GPT_HEADS, 2 * NC, NC);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_ATTN, gpt_attn_merge_backward(k, B, T, NH, HS, datty, dy));
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 0, 1, T, T, HS, dy, HS, THS, v->v, HS, THS, datt, T, TT, R);
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 1, 0, T, HS, T, v->att, T, TT, dy, HS, THS, dv, HS, THS, R);
    GPT_RUN(
        m, err, GPT_PROF_ATTN,
        gpt_softmax_causal_backward(k, (cl_uint)R, T, 1.0f / sqrtf((float)HS), v->att, datt, datt));
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 0, 0, T, HS, T, datt, T, TT, v->k, HS, THS, dq, HS, THS, R);
    if (err == CL_SUCCESS)
        err = gpt_gemm_batched(m, 1, 0, T, HS, T, datt, T, TT, v->q, HS, THS, dk, HS, THS, R);
    GPT_RUN(m, err, GPT_PROF_ATTN, gpt_attn_split_backward(k, B, T, NH, HS, dq, dk, dv, dqkv));
    return err;
}

/* Block l with GPT_DRES holding the gradient of its output: the block's
 * weight gradients, and GPT_DRES the gradient of its input in. */
static cl_int block_backward(gpt_model *m, int l, unsigned B, unsigned T, clg_view in, float beta)
{
    const gpt_kernels *k = &m->k;
    const clg_view *p = &m->param[gpt_block_tensor(l, 0)];
    const clg_view *a = &m->acc[gpt_block_tensor(l, 0)];
    gpt_block_views v;
    gpt_block_views_of(m, l, B, T, &v);
    size_t C = m->s.width, N = v.N, NC = v.NC;
    cl_mem scratch = m->buf[GPT_SCRATCH];
    clg_view dres = gpt_act(m, GPT_DRES, 0, NC), dbuf = gpt_act(m, GPT_DBUF, 0, NC);
    clg_view dwide = gpt_act(m, GPT_WIDE, 0, 4 * NC), dqkv = gpt_act(m, GPT_WIDE, 0, 3 * NC);
    clg_view ln = gpt_act(m, GPT_HEADS, 0, NC); /* ln_2's, then ln_1's output again */

    /* the MLP: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))); GELU's
     * output again (in dwide), for c_proj's dW, before dfch takes its
     * place (the GEMMs run in queue order) */
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_gelu(k, (cl_uint)(4 * NC), v.fch, dwide));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, 4 * C, C, dres, dwide, p[GPT_FCPROJ_W], a[GPT_FCPROJ_W],
                              a[GPT_FCPROJ_B], dwide, beta);
    GPT_RUN(m, err, GPT_PROF_OTHER, gpt_gelu_backward(k, (cl_uint)(4 * NC), v.fch, dwide, dwide));
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, v.res2, p[GPT_LN2_W], p[GPT_LN2_B], ln,
                          v.mean2, v.rstd2));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, 4 * C, dwide, ln, p[GPT_FC_W], a[GPT_FC_W], a[GPT_FC_B],
                              dbuf, beta);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, (cl_uint)C, dbuf, v.res2, p[GPT_LN2_W], v.mean2,
                                   v.rstd2, dres, a[GPT_LN2_W], a[GPT_LN2_B], beta, scratch));
    /* attention: res2 = in + c_proj(attn(c_attn(ln_1(in)))) */
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, C, dres, v.atty, p[GPT_ATTPROJ_W], a[GPT_ATTPROJ_W],
                              a[GPT_ATTPROJ_B], dbuf, beta);
    if (err == CL_SUCCESS)
        err = attention_backward(m, &v, B, T, dbuf, dqkv);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, in, p[GPT_LN1_W], p[GPT_LN1_B], ln, v.mean1,
                          v.rstd1));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, 3 * C, dqkv, ln, p[GPT_QKV_W], a[GPT_QKV_W], a[GPT_QKV_B],
                              dbuf, beta);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, (cl_uint)C, dbuf, in, p[GPT_LN1_W], v.mean1,
                                   v.rstd1, dres, a[GPT_LN1_W], a[GPT_LN1_B], beta, scratch));
    return err;
}

cl_int gpt_backward(gpt_model *m, const gpt_tokens *tok, unsigned B, float dscale,
                    clg_view loss_scale, float beta)
{
    unsigned T = m->s.context;
    if (gpt_check_batch(m, B, T) != 0 || B != m->fwd_B)
        return CL_INVALID_VALUE;
    m->fwd_B = 0; /* the logits become dlogits: one backward per forward */
    const gpt_kernels *k = &m->k;
    size_t C = m->s.width, N = (size_t)B * T, NC = N * C, V = GPT_VOCAB;
    cl_mem scratch = m->buf[GPT_SCRATCH];
    clg_view dlogits = gpt_act(m, GPT_LOGITS, 0, N * V);
    clg_view dres = gpt_act(m, GPT_DRES, 0, NC), dbuf = gpt_act(m, GPT_DBUF, 0, NC);
    clg_view lnf = gpt_act(m, GPT_LNF, 0, NC);
    int L = (int)m->s.layers, lw = gpt_lnf_tensor(&m->s, 0);
    clg_view last = gpt_act(m, gpt_layer_buf(L - 1, GPT_RES3), 0, NC);
    cl_int err = CL_SUCCESS;
    /* each sequence's mean over its T positions: 1 / T per position */
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_xent(k, tok, B, T, GPT_VOCAB, dlogits, gpt_act(m, GPT_ROW_LOSS, 0, N), 1,
                     dscale / (float)T, loss_scale, dlogits));
    /* the LayerNorm backwards add into dres */
    float zero = 0.0f;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            clEnqueueFillBuffer(m->queue, dres.mem, &zero, sizeof zero, 0, NC * sizeof zero, 0,
                                NULL, NULL));
    /* the tied head: dlnf = dlogits wte; wte's gradient starts here */
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 0, N, C, V, dlogits, V, m->param[GPT_WTE], C, 0.0f, dbuf, C);
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 1, 0, V, C, N, dlogits, V, lnf, C, beta, m->acc[GPT_WTE], C);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, (cl_uint)C, dbuf, last, m->param[lw],
                                   gpt_act(m, GPT_LNF_STATS, 0, N), gpt_act(m, GPT_LNF_STATS, N, N),
                                   dres, m->acc[lw], m->acc[lw + 1], beta, scratch));
    for (int l = L - 1; l >= 0 && err == CL_SUCCESS; l--) {
        clg_view in = l > 0 ? gpt_act(m, gpt_layer_buf(l - 1, GPT_RES3), 0, NC)
                            : gpt_act(m, GPT_ENCODED, 0, NC);
        err = block_backward(m, l, B, T, in, beta);
    }
    /* the embeddings: wte adds to the head's part (beta 1) */
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_embed_backward(k, tok, B, T, (cl_uint)C, dres, m->buf[GPT_SORT], m->acc[GPT_WTE],
                               1.0f, m->acc[GPT_WPE], beta, scratch));
    return err;
}
