/* qstate.c - formats and sizes of low-precision optimizer states, the map
 * each state uses, host dequantization, and the checks of the state fields
 * of a config (see qstate.h). */
#include "qstate.h"

#include "arena.h"

#include <math.h>
#include <stdlib.h>

bool clg__qstate_signed(const clg_config *c, size_t s)
{
    /* v (Adam's state 1) is a mean of squares: never negative */
    return !((c->optimizer == CLG_ADAM || c->optimizer == CLG_ADAMW) && s == 1);
}

const float *clg__qmap_of(const clg_model *m, size_t s, size_t *n)
{
    *n = m->cfg.state_dtype == CLG_Q4 ? 16 : 256;
    return m->qmap[clg__qstate_signed(&m->cfg, s) ? 0 : 1];
}

void clg__dequantize(clg_dtype fmt, const float *map, const uint8_t *codes, const float *absmax,
                     size_t n, float *out)
{
    size_t block = clg__qblock(fmt);
    for (size_t i = 0; i < n; i++) {
        unsigned c = fmt == CLG_Q4 ? clg__q4_code(codes, i) : codes[i];
        out[i] = map[c] * absmax[i / block];
    }
}

clg_status clg__qstate_config_check(clg_context *ctx, const clg_config *c, const char *who)
{
    clg_dtype s = c->state_dtype;
    if (s != CLG_FP32 && s != CLG_BF16 && s != CLG_Q8 && s != CLG_Q4)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: state_dtype %d must be CLG_FP32, CLG_BF16, CLG_Q8 or CLG_Q4", who,
                         (int)s);
    if (c->master_dtype != CLG_FP32 && c->master_dtype != CLG_BF16)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: master_dtype %d must be CLG_FP32 or CLG_BF16", who,
                         (int)c->master_dtype);
    if ((unsigned)c->state_rounding > CLG_ROUND_STOCHASTIC)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: state_rounding %d must be CLG_ROUND_NEAREST or CLG_ROUND_STOCHASTIC",
                         who, (int)c->state_rounding);
    if (s == CLG_Q4 && c->amsgrad)
        return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                         "%s: state_dtype CLG_Q4 with amsgrad is not supported: the fp32 running "
                         "max of v would keep every upward 4-bit rounding error of v for good "
                         "(use CLG_Q8 or CLG_BF16 states with AMSGrad)",
                         who);
    if (s == CLG_FP32 && c->state_rounding == CLG_ROUND_STOCHASTIC)
        return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                         "%s: state_rounding CLG_ROUND_STOCHASTIC with state_dtype CLG_FP32: fp32 "
                         "states are not rounded (choose CLG_BF16, CLG_Q8 or CLG_Q4 states)",
                         who);
    if (c->master_dtype == CLG_BF16 && c->param_copy_dtype == CLG_BF16)
        return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                         "%s: master_dtype CLG_BF16 with param_copy_dtype CLG_BF16: the params "
                         "are bf16 already, so the copy would hold them twice (use the param "
                         "view, or an fp16 copy)",
                         who);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ arenas */

uint64_t clg__qstate_state_bytes(const clg_model *m, size_t s, size_t c)
{
    return clg__format_bytes(clg__state_format(m, s, c), clg__state_elems(m, c));
}

uint64_t clg__qstate_scale_bytes(const clg_model *m, size_t s, size_t c)
{
    return 4 * clg__format_scales(clg__state_format(m, s, c), clg__state_elems(m, c));
}

clg_status clg__qstate_alloc(clg_model *m)
{
    size_t nc = m->n_chunks ? m->n_chunks : 1;
    uint64_t *bytes = calloc(nc, sizeof *bytes);
    if (bytes == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_finalize: out of memory");
    clg_status st = CLG_SUCCESS;
    for (size_t s = 0; s < m->n_states && st == CLG_SUCCESS; s++) {
        clg_dtype fmt = clg__state_format(m, s, 0);
        bool uniform = true;
        for (size_t c = 0; c < m->n_chunks; c++) {
            bytes[c] = clg__qstate_state_bytes(m, s, c);
            uniform = uniform && clg__state_format(m, s, c) == fmt;
        }
        /* a Q8/Q4 arena is tagged with its dtype even where small chunks
         * keep fp32, so that a raw copy can never take it for fp32 */
        clg_dtype tag = s < m->n_qstates && m->qstates ? m->cfg.state_dtype : fmt;
        st = clg__arena_alloc_sized(m, &m->states[s], tag,
                                    uniform && !clg__dtype_quantized(tag) ? clg__format_bytes(fmt, 1)
                                                                          : 0,
                                    bytes);
    }
    for (size_t s = 0; s < m->n_qstates && m->qstates && st == CLG_SUCCESS; s++) {
        for (size_t c = 0; c < m->n_chunks; c++)
            bytes[c] = clg__qstate_scale_bytes(m, s, c);
        st = clg__arena_alloc_sized(m, &m->scales[s], CLG_FP32, 4, bytes);
    }
    free(bytes);
    return st;
}

void clg__qstate_free(clg_model *m)
{
    for (size_t s = 0; s < CLG_MAX_STATES; s++)
        clg__arena_free(m, &m->states[s]);
    for (size_t s = 0; s < 2; s++)
        clg__arena_free(m, &m->scales[s]);
}

void clg__qstate_bytes(const clg_model *m, uint64_t *states, uint64_t *scales)
{
    *states = *scales = 0;
    for (size_t s = 0; s < m->n_states; s++)
        for (size_t c = 0; c < m->n_chunks; c++) {
            *states += clg__qstate_state_bytes(m, s, c);
            if (s < m->n_qstates && m->qstates)
                *scales += clg__qstate_scale_bytes(m, s, c);
        }
}
