/* gpt_launch.c - what the GPT model's passes share: the views of a
 * block's activations, the GEMMs (mlp_gemm and mlp_gemm_batched) and the
 * profiling of each launch (see gpt_internal.h). */
#include "gpt_internal.h"
#include "progress.h"


void gpt_block_views_of(const gpt_model *m, int l, unsigned B, unsigned T, gpt_block_views *v)
{
    v->NH = m->s.heads;
    v->HS = m->s.width / v->NH;
    v->N = (size_t)B * T;
    v->NC = v->N * m->s.width;
    v->R = (size_t)B * v->NH;
    size_t N = v->N, NC = v->NC, C = m->s.width;
    v->mean1 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN1_STATS), 0, N);
    v->rstd1 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN1_STATS), N, N);
    int qkv = gpt_layer_buf(&m->s, l, GPT_QKV);
    v->q = gpt_act(m, qkv, 0, 3 * NC);
    v->k = gpt_act(m, qkv, C, 3 * NC - C);
    v->v = gpt_act(m, qkv, 2 * C, 3 * NC - 2 * C);
    v->lse = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LSE), 0, v->R * T);
    v->atty = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_ATTY), 0, NC);
    v->res2 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_RES2), 0, NC);
    v->mean2 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN2_STATS), 0, N);
    v->rstd2 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN2_STATS), N, N);
    v->fch = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_FCH), 0, 4 * NC);
    v->res3 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_RES3), 0, NC);
    v->recomputes = m->s.recompute != GPT_RECOMPUTE_NONE;
    if (v->recomputes) {
        v->ln1 = v->ln2 = gpt_act(m, GPT_DBUF, 0, NC);
        v->gelu = gpt_act(m, GPT_WIDE, 0, 4 * NC);
    } else {
        v->ln1 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN1_OUT), 0, NC);
        v->ln2 = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_LN2_OUT), 0, NC);
        v->gelu = gpt_act(m, gpt_layer_buf(&m->s, l, GPT_GELU_OUT), 0, 4 * NC);
    }
}

clg_view gpt_block_input(const gpt_model *m, int l, size_t N)
{
    size_t NC = N * m->s.width;
    return l > 0 ? gpt_act(m, gpt_layer_buf(&m->s, l - 1, GPT_RES3), 0, NC)
                 : gpt_act(m, GPT_ENCODED, 0, NC);
}

int gpt_check_batch(const gpt_model *m, unsigned B, unsigned T)
{
    return m->params_bound && m->grads_bound && B >= 1 && B <= m->rows && T >= 1 &&
                   T <= m->s.context
               ? 0
               : -1;
}

cl_int gpt_gemm(gpt_model *m, int ta, int tb, size_t M, size_t N, size_t K, clg_view a, size_t lda,
                clg_view b, size_t ldb, float beta, clg_view c, size_t ldc)
{
    cl_int err = CL_SUCCESS;
    GPT_RUN(m, err, GPT_PROF_GEMM,
            mlp_gemm(m->queue, &m->gemm_scratch, ta, tb, M, N, K, 1.0f, a.mem, a.offset, lda, b.mem,
                     b.offset, ldb, beta, c.mem, c.offset, ldc, NULL));
    m->gemm_calls += err == CL_SUCCESS;
    return err;
}

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

uint64_t gpt_launches(const gpt_model *m)
{
    return gpt_kernels_launches(&m->k) + m->flash.launches + m->gemm_calls + m->fills;
}
