/* gpt_backward.c - the GPT model's backward (llm.c's gpt2_backward) on
 * path B: every weight gradient goes straight into clgrad's accumulator
 * views as acc = beta * acc + gradient (see gpt_model.h). The gradients of
 * the activations live in buffers all layers share (gpt_internal.h):
 * GPT_DRES the residual stream's, GPT_DBUF one [N x C] gradient at a time,
 * GPT_WIDE GELU's output again, then dfch, then dqkv, GPT_DSUM the
 * attention's dy . y rows. */
#include "gpt_internal.h"

#include <math.h>

/* Where a linear layer's bias gradient goes: its partial sums into the
 * columns col .. col + OC of scratch rows of ld floats, beside those of
 * the other layer of its pair, which gpt_bias_grad_pair then finishes in
 * one launch (ld 0: none here, the caller sums it). */
typedef struct bias_part {
    cl_uint ld, col;
} bias_part;
static const bias_part no_bias = {0, 0};

/* The backward of out [N x OC] = in [N x IC] W^T + b with dout given:
 * dW = beta dW + dout^T in, din = dout W (din may be in: the queue runs
 * the dW GEMM first), and db's partial sums as bp says. */
static cl_int linear_backward(gpt_model *m, size_t N, size_t IC, size_t OC, clg_view dout,
                              clg_view in, clg_view w, clg_view dw, clg_view din, float beta,
                              bias_part bp)
{
    cl_int err = gpt_gemm(m, 1, 0, OC, IC, N, dout, OC, in, IC, beta, dw, IC);
    if (bp.ld)
        GPT_RUN(m, err, GPT_PROF_OTHER,
                gpt_bias_grad_partial(&m->k, (cl_uint)N, (cl_uint)OC, dout, m->buf[GPT_SCRATCH],
                                      bp.ld, bp.col));
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 0, N, IC, OC, dout, OC, w, IC, 0.0f, din, IC);
    return err;
}

/* Block v's attention backward: datty [N x C] into dqkv [N x 3C] (dq,
 * dk, dv side by side as q, k, v in qkv), the probabilities recomputed
 * from q, k (qkv plus c_attn's bias, as in the forward) and the forward's
 * log-sum-exp (gpt_flash.h). */
static cl_int attention_backward(gpt_model *m, const gpt_block_views *v, unsigned T, clg_view bias,
                                 clg_view datty, clg_view dqkv)
{
    size_t C = m->s.width, n3 = 3 * v->NC;
    gpt_flash_layout lay = gpt_flash_model_layout(v->NH, (cl_uint)C);
    clg_view dq = {dqkv.mem, dqkv.offset, n3}, dk = {dqkv.mem, dqkv.offset + C, n3 - C},
             dv = {dqkv.mem, dqkv.offset + 2 * C, n3 - 2 * C};
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_ATTN,
            gpt_flash_backward(&m->flash, (cl_uint)v->R, T, gpt_attn_scale(v), lay, bias, v->q,
                               v->k, v->v, v->atty, v->lse, datty,
                               gpt_act(m, GPT_DSUM, 0, v->R * T), dq, dk, dv));
    return err;
}

/* Block l with GPT_DRES holding the gradient of its output: the block's
 * weight gradients, and GPT_DRES the gradient of its input in. */
static cl_int block_backward(gpt_model *m, int l, unsigned B, unsigned T, float beta)
{
    const gpt_kernels *k = &m->k;
    const clg_view *p = &m->param[gpt_block_tensor(l, 0)];
    const clg_view *a = &m->acc[gpt_block_tensor(l, 0)];
    gpt_block_views v;
    gpt_block_views_of(m, l, B, T, &v);
    size_t C = m->s.width, N = v.N, NC = v.NC;
    cl_mem scratch = m->buf[GPT_SCRATCH];
    clg_view in = gpt_block_input(m, l, N);
    clg_view dres = gpt_act(m, GPT_DRES, 0, NC), dbuf = gpt_act(m, GPT_DBUF, 0, NC);
    clg_view dwide = gpt_act(m, GPT_WIDE, 0, 4 * NC), dqkv = gpt_act(m, GPT_WIDE, 0, 3 * NC);

    /* the MLP: res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))); GELU's
     * output again (in GPT_WIDE unless kept), for c_proj's dW, before
     * dfch takes GPT_WIDE (the GEMMs run in queue order). The two biases'
     * gradients are finished together: mlp.c_proj's C columns, then
     * c_fc's 4C. */
    cl_uint C1 = (cl_uint)C;
    bias_part mlp_proj = {5 * C1, 0}, mlp_fc = {5 * C1, C1};
    cl_int err = CL_SUCCESS;
    if (v.recomputes)
        GPT_RUN(m, err, GPT_PROF_OTHER, gpt_gelu(k, (cl_uint)(4 * NC), v.fch, v.gelu));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, 4 * C, C, dres, v.gelu, p[GPT_FCPROJ_W], a[GPT_FCPROJ_W], dwide,
                              beta, mlp_proj);
    /* dfch = gelu'(fch) dgelu, with c_fc's bias partials in the same pass */
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_gelu_backward_partial(k, (cl_uint)N, 4 * C1, v.fch, dwide, dwide, scratch,
                                      mlp_fc.ld, mlp_fc.col));
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_bias_grad_pair(k, (cl_uint)N, mlp_fc.ld, C1, scratch, a[GPT_FCPROJ_B], a[GPT_FC_B],
                               beta));
    if (v.recomputes)
        GPT_RUN(m, err, GPT_PROF_OTHER,
                gpt_layernorm(k, (cl_uint)N, C1, v.res2, p[GPT_LN2_W], p[GPT_LN2_B], v.ln2, v.mean2,
                              v.rstd2));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, 4 * C, dwide, v.ln2, p[GPT_FC_W], a[GPT_FC_W], dbuf, beta,
                              no_bias);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, C1, dbuf, v.res2, p[GPT_LN2_W], v.mean2, v.rstd2,
                                   dres, a[GPT_LN2_W], a[GPT_LN2_B], beta, scratch));
    /* attention: res2 = in + c_proj(attn(c_attn(ln_1(in)))); the biases'
     * gradients together again: attn.c_proj's C columns, c_attn's 3C */
    bias_part att_proj = {4 * C1, 0}, att_qkv = {4 * C1, C1};
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, C, dres, v.atty, p[GPT_ATTPROJ_W], a[GPT_ATTPROJ_W], dbuf,
                              beta, att_proj);
    if (err == CL_SUCCESS)
        err = attention_backward(m, &v, T, p[GPT_QKV_B], dbuf, dqkv);
    if (v.recomputes)
        GPT_RUN(m, err, GPT_PROF_OTHER,
                gpt_layernorm(k, (cl_uint)N, C1, in, p[GPT_LN1_W], p[GPT_LN1_B], v.ln1, v.mean1,
                              v.rstd1));
    if (err == CL_SUCCESS)
        err = linear_backward(m, N, C, 3 * C, dqkv, v.ln1, p[GPT_QKV_W], a[GPT_QKV_W], dbuf, beta,
                              att_qkv);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_bias_grad_pair(k, (cl_uint)N, att_qkv.ld, C1, scratch, a[GPT_ATTPROJ_B],
                               a[GPT_QKV_B], beta));
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, C1, dbuf, in, p[GPT_LN1_W], v.mean1, v.rstd1,
                                   dres, a[GPT_LN1_W], a[GPT_LN1_B], beta, scratch));
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
    size_t C = m->s.width, N = (size_t)B * T, NC = N * C;
    cl_mem scratch = m->buf[GPT_SCRATCH];
    clg_view dres = gpt_act(m, GPT_DRES, 0, NC), dbuf = gpt_act(m, GPT_DBUF, 0, NC);
    int L = (int)m->s.layers, lw = gpt_lnf_tensor(&m->s, 0);
    clg_view last = gpt_block_input(m, L, N);
    cl_int err = CL_SUCCESS;
    /* the LayerNorm backwards add into dres */
    float zero = 0.0f;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            clEnqueueFillBuffer(m->queue, dres.mem, &zero, sizeof zero, 0, NC * sizeof zero, 0,
                                NULL, NULL));
    m->fills += err == CL_SUCCESS;
    /* the tied head (gpt_head.c): dlnf into dbuf; wte's gradient starts here */
    if (err == CL_SUCCESS)
        err = gpt_head_backward(m, tok, B, T, dscale, loss_scale, beta);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm_backward(k, (cl_uint)N, (cl_uint)C, dbuf, last, m->param[lw],
                                   gpt_act(m, GPT_LNF_STATS, 0, N), gpt_act(m, GPT_LNF_STATS, N, N),
                                   dres, m->acc[lw], m->acc[lw + 1], beta, scratch));
    /* Under --recompute block the blocks share one set of activations,
     * which holds the last block's after the forward: each other block's
     * forward runs again, on its kept input, before its backward. */
    int again = m->s.recompute == GPT_RECOMPUTE_BLOCK;
    for (int l = L - 1; l >= 0 && err == CL_SUCCESS; l--) {
        if (again && l < L - 1)
            err = gpt_block_forward(m, l, B, T, GPT_BLOCK_AGAIN);
        if (err == CL_SUCCESS)
            err = block_backward(m, l, B, T, beta);
    }
    /* the embeddings: wte adds to the head's part (beta 1) */
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_embed_backward(k, tok, B, T, (cl_uint)C, dres, m->buf[GPT_SORT], m->acc[GPT_WTE],
                               1.0f, m->acc[GPT_WPE], beta, scratch));
    return err;
}
