/* gpt_forward.c - the GPT model's forward (llm.c's gpt2_forward): the
 * embeddings, L pre-LayerNorm blocks, ln_f, the tied head and the loss
 * (see gpt_model.h). Each block keeps in its own buffers what the backward
 * reads (gpt_internal.h); q k^T and qkv go to buffers every layer shares. */
#include "gpt_internal.h"

#include <math.h>

/* Causal self-attention of block v: its qkv [N x 3C] (c_attn's output
 * without its bias, which the attention adds as it reads) into v->atty,
 * each row's log-sum-exp into v->lse for the backward (gpt_flash.h). */
static cl_int attention_forward(gpt_model *m, const gpt_block_views *v, unsigned T, clg_view bias)
{
    gpt_flash_layout lay = gpt_flash_model_layout(v->NH, m->s.width);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_ATTN,
            gpt_flash_forward(&m->flash, (cl_uint)v->R, T, gpt_attn_scale(v), lay, bias, v->q, v->k,
                              v->v, v->atty, v->lse));
    return err;
}

/* What follows block l: the LayerNorm its output feeds (the next block's
 * ln_1, or ln_f after the last block), whose output and statistics the
 * block's last kernel writes. */
typedef struct next_norm {
    clg_view w, b, out, mean, rstd;
} next_norm;

static next_norm next_norm_of(gpt_model *m, int l, unsigned B, unsigned T)
{
    size_t N = (size_t)B * T;
    next_norm n;
    if (l + 1 < (int)m->s.layers) {
        gpt_block_views v;
        gpt_block_views_of(m, l + 1, B, T, &v);
        const clg_view *p = &m->param[gpt_block_tensor(l + 1, 0)];
        n = (next_norm){p[GPT_LN1_W], p[GPT_LN1_B], v.ln1, v.mean1, v.rstd1};
    } else {
        int lw = gpt_lnf_tensor(&m->s, 0);
        n = (next_norm){m->param[lw], m->param[lw + 1], gpt_lnf_out(m, N),
                        gpt_act(m, GPT_LNF_STATS, 0, N), gpt_act(m, GPT_LNF_STATS, N, N)};
    }
    return n;
}

/* Block l on its input [N x C] (the residual stream), ln_1's output and
 * statistics already computed (GPT_BLOCK_FORWARD: by the block before)
 * or computed first (GPT_BLOCK_AGAIN). The biases of c_attn, attn.c_proj,
 * c_fc and mlp.c_proj are added by the kernels after their GEMMs: the
 * attention, the residual fused with ln_2, GELU, the residual fused with
 * the next LayerNorm. GPT_BLOCK_AGAIN (--recompute block's backward)
 * stops once fch is there: the rest (mlp.c_proj, the block's output) the
 * backward does not read, and the output is kept. */
cl_int gpt_block_forward(gpt_model *m, int l, unsigned B, unsigned T, gpt_block_pass pass)
{
    const gpt_kernels *k = &m->k;
    const clg_view *p = &m->param[gpt_block_tensor(l, 0)];
    gpt_block_views v;
    gpt_block_views_of(m, l, B, T, &v);
    size_t C = m->s.width, N = v.N;
    clg_view in = gpt_block_input(m, l, N);
    cl_int err = CL_SUCCESS;
    if (pass == GPT_BLOCK_AGAIN)
        GPT_RUN(m, err, GPT_PROF_OTHER,
                gpt_layernorm(k, (cl_uint)N, (cl_uint)C, in, p[GPT_LN1_W], p[GPT_LN1_B], v.ln1,
                              v.mean1, v.rstd1));
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 1, N, 3 * C, C, v.ln1, C, p[GPT_QKV_W], C, 0.0f, v.q, 3 * C);
    if (err == CL_SUCCESS)
        err = attention_forward(m, &v, T, p[GPT_QKV_B]);
    /* res2 = in + (atty W^T + b), then ln_2 of it */
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 1, N, C, C, v.atty, C, p[GPT_ATTPROJ_W], C, 0.0f, v.res2, C);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_residual_layernorm(k, (cl_uint)N, (cl_uint)C, in, v.res2, p[GPT_ATTPROJ_B], v.res2,
                                   p[GPT_LN2_W], p[GPT_LN2_B], v.ln2, v.mean2, v.rstd2));
    if (err == CL_SUCCESS)
        err = gpt_gemm(m, 0, 1, N, 4 * C, C, v.ln2, C, p[GPT_FC_W], C, 0.0f, v.fch, 4 * C);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_bias_gelu(k, (cl_uint)N, (cl_uint)(4 * C), v.fch, p[GPT_FC_B], v.gelu));
    if (pass == GPT_BLOCK_AGAIN)
        return err;
    /* res3 = res2 + (gelu W^T + b), then the next LayerNorm of it */
    next_norm nx = next_norm_of(m, l, B, T);
    if (err == CL_SUCCESS)
        err =
            gpt_gemm(m, 0, 1, N, C, 4 * C, v.gelu, 4 * C, p[GPT_FCPROJ_W], 4 * C, 0.0f, v.res3, C);
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_residual_layernorm(k, (cl_uint)N, (cl_uint)C, v.res2, v.res3, p[GPT_FCPROJ_B],
                                   v.res3, nx.w, nx.b, nx.out, nx.mean, nx.rstd));
    return err;
}

/* The embeddings, block 0's ln_1 and the blocks (each ending in the next
 * LayerNorm: ln_f after the last); the head is gpt_head.c's. */
static cl_int forward_body(gpt_model *m, const gpt_tokens *tok, unsigned B, unsigned T)
{
    const gpt_kernels *k = &m->k;
    size_t C = m->s.width, N = (size_t)B * T, NC = N * C;
    clg_view res = gpt_act(m, GPT_ENCODED, 0, NC);
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_embed(k, tok, B, T, (cl_uint)C, m->param[GPT_WTE], m->param[GPT_WPE], res));
    gpt_block_views v0;
    gpt_block_views_of(m, 0, B, T, &v0);
    const clg_view *p0 = &m->param[gpt_block_tensor(0, 0)];
    GPT_RUN(m, err, GPT_PROF_OTHER,
            gpt_layernorm(k, (cl_uint)N, (cl_uint)C, res, p0[GPT_LN1_W], p0[GPT_LN1_B], v0.ln1,
                          v0.mean1, v0.rstd1));
    for (unsigned l = 0; l < m->s.layers && err == CL_SUCCESS; l++)
        err = gpt_block_forward(m, (int)l, B, T, GPT_BLOCK_FORWARD);
    return err;
}

cl_int gpt_forward(gpt_model *m, const gpt_tokens *tok, unsigned B, cl_mem sums)
{
    unsigned T = m->s.context;
    if (gpt_check_batch(m, B, T) != 0)
        return CL_INVALID_VALUE;
    m->fwd_B = 0;
    size_t N = (size_t)B * T;
    clg_view row_loss = gpt_act(m, GPT_ROW_LOSS, 0, N);
    cl_int err = forward_body(m, tok, B, T);
    if (err == CL_SUCCESS)
        err = gpt_head_forward(m, tok, B, T, 1);
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
    cl_int err = forward_body(m, tok, B, T);
    return err == CL_SUCCESS ? gpt_head_forward(m, tok, B, T, 0) : err;
}
