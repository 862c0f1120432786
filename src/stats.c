/* stats.c - reading the step block back for the host: counters, norm, lr,
 * loss scale, noise scale; blocking, or non-blocking and one update stale;
 * per-tensor norms; the sync point of the error policy. */
#include "model.h"
#include "sized.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A finalized model, and the call's output `out_name` (NULL: none) given. */
static clg_status check_model(clg_model *m, const void *out, const char *out_name,
                              const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    if (out_name != NULL && out == NULL)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: NULL %s", who, out_name);
    return CLG_SUCCESS;
}

static clg_sb_moment now(const clg_model *m)
{
    return (clg_sb_moment){m->cycles, m->micro_total, m->weight_sum};
}

/* Takes the read in flight into sb_host, waiting for it or only if it is
 * complete already. */
static void harvest(clg_model *m, bool wait)
{
    if (m->sb_event == NULL)
        return;
    cl_int status = CL_QUEUED;
    if (wait)
        clWaitForEvents(1, &m->sb_event);
    clGetEventInfo(m->sb_event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (status == CL_COMPLETE) {
        memcpy(m->sb_host, m->sb_pending, sizeof m->sb_host);
        m->sb_host_at = m->sb_pending_at;
    }
    if (status == CL_COMPLETE || status < 0) {
        clReleaseEvent(m->sb_event);
        m->sb_event = NULL;
    }
}

static clg_status read_now(clg_model *m, const char *who)
{
    harvest(m, true);
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, "clEnqueueReadBuffer");
    cl_int err = clEnqueueReadBuffer(m->ctx->queue, m->step_block, CL_TRUE, 0,
                                     sizeof m->sb_host, m->sb_host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(m->ctx, err, who, "clEnqueueReadBuffer");
    m->sb_host_at = now(m);
    return CLG_SUCCESS;
}

/* Brings sb_host up to date: blocking (the values of now), or to a
 * snapshot at most one cycle behind the host, starting a read in the
 * background that a later call takes. */
static clg_status refresh(clg_model *m, int blocking, const char *who)
{
    if (blocking)
        return read_now(m, who);
    harvest(m, false);
    if (m->sb_host_at.cycles + 1 < m->cycles) {
        /* Too old. The read in flight, if it is recent enough, finishes
         * behind at most the last update; else read what the queue holds. */
        if (m->sb_event != NULL && m->sb_pending_at.cycles + 1 >= m->cycles)
            harvest(m, true);
        else {
            clg_status st = read_now(m, who);
            if (st != CLG_SUCCESS)
                return st;
        }
    }
    bool current = m->sb_host_at.cycles == m->cycles && m->sb_host_at.micro_total == m->micro_total;
    if (m->sb_event == NULL && !current) {
        m->sb_pending_at = now(m);
        cl_int err = clEnqueueReadBuffer(m->ctx->queue, m->step_block, CL_FALSE, 0,
                                         sizeof m->sb_pending, m->sb_pending, 0, NULL,
                                         &m->sb_event);
        if (err != CL_SUCCESS)
            return clg__cl_fail(m->ctx, err, who, "clEnqueueReadBuffer");
        clFlush(m->ctx->queue);
    }
    return CLG_SUCCESS;
}

/* Error policy: report a non-finite update once, then clear the flag. */
static clg_status take_sticky(clg_model *m, const char *who)
{
    if (!m->sb_host[CLG_SB_STICKY])
        return CLG_SUCCESS;
    static const cl_uint zero = 0;
    cl_int err = clEnqueueWriteBuffer(m->ctx->queue, m->step_block, CL_TRUE, 4 * CLG_SB_STICKY,
                                      4, &zero, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return clg__cl_fail(m->ctx, err, who, "clEnqueueWriteBuffer");
    m->sb_host[CLG_SB_STICKY] = 0;
    return clg__fail(m->ctx, CLG_ERR_NONFINITE,
                     "%s: an update saw inf/NaN gradients and was skipped (norm %g)", who,
                     (double)u2f(m->sb_host[CLG_SB_GRAD_NORM]));
}

clg_status clg_model_stats(clg_model *m, int blocking, clg_stats *out)
{
    clg_status st = check_model(m, out, "stats", "clg_model_stats");
    if (st != CLG_SUCCESS)
        return st;
    st = clg__sized_check(m->ctx, out->struct_size, CLG__STATS_SIZE_MIN, "clg_stats",
                          "clg_model_stats");
    if (st == CLG_SUCCESS)
        st = refresh(m, blocking, "clg_model_stats");
    if (st != CLG_SUCCESS)
        return st;
    const uint32_t *sb = m->sb_host;
    const clg_sb_moment *at = &m->sb_host_at;
    clg_stats s = {.struct_size = sizeof s};
    s.updates = sb[CLG_SB_T];
    s.micro_steps = at->micro_total;
    s.skipped_updates = sb[CLG_SB_SKIPPED];
    s.skipped_micro_steps = sb[CLG_SB_SKIPPED_MICRO];
    s.lr = u2f(sb[CLG_SB_LR]);
    s.grad_norm = u2f(sb[CLG_SB_GRAD_NORM]);
    s.clip_coef = u2f(sb[CLG_SB_CLIP_COEF]);
    s.loss_scale = u2f(sb[CLG_SB_LOSS_SCALE]);
    s.weight_sum = at->weight_sum;
    s.last_nonfinite = (int)sb[CLG_SB_NONFINITE];
    s.noise_scale = u2f(sb[CLG_SB_NOISE_SCALE]);
    s.noise_g2 = u2f(sb[CLG_SB_NOISE_G2]);
    s.noise_trace = u2f(sb[CLG_SB_NOISE_TR]);
    s.cycles = at->cycles;
    s.cycles_behind = (unsigned)(m->cycles - at->cycles);
    clg__sized_export(out, out->struct_size, &s, sizeof s);
    return blocking ? take_sticky(m, "clg_model_stats") : CLG_SUCCESS;
}

clg_status clg_model_loss_scale(clg_model *m, int blocking, float *scale)
{
    clg_status st = check_model(m, scale, "scale", "clg_model_loss_scale");
    if (st != CLG_SUCCESS)
        return st;
    st = refresh(m, blocking, "clg_model_loss_scale");
    if (st == CLG_SUCCESS)
        *scale = u2f(m->sb_host[CLG_SB_LOSS_SCALE]);
    return st;
}

clg_status clg_model_tensor_norms(clg_model *m, float *norms, size_t count)
{
    clg_status st = check_model(m, norms, "norms", "clg_model_tensor_norms");
    if (st != CLG_SUCCESS)
        return st;
    if (count != m->n_tensors)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_model_tensor_norms: the host buffer holds %zu floats, the model "
                         "has %zu tensors",
                         count, m->n_tensors);
    if (!m->cfg.tensor_norms)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "clg_model_tensor_norms: the model was created without tensor_norms");
    if (m->cycles == 0)
        return clg__fail(m->ctx, CLG_ERR_STATE, "clg_model_tensor_norms: no update yet");
    st = refresh(m, 1, "clg_model_tensor_norms");
    if (st != CLG_SUCCESS)
        return st;
    size_t n = m->n_tensors;
    cl_float *sums = malloc(n * sizeof *sums);
    if (sums == NULL)
        return clg__fail(m->ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_model_tensor_norms: out of memory");
    cl_int err = clEnqueueReadBuffer(m->ctx->queue, m->tensor_sumsq, CL_TRUE, 0, n * sizeof *sums,
                                     sums, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        free(sums);
        return clg__cl_fail(m->ctx, err, "clg_model_tensor_norms", "clEnqueueReadBuffer");
    }
    /* the normalization of the last update, without its clipping */
    float scale = u2f(m->sb_host[CLG_SB_GRAD_SCALE]) / u2f(m->sb_host[CLG_SB_CLIP_COEF]);
    for (size_t t = 0; t < n; t++)
        norms[t] = sqrtf(sums[m->norm_index[t]]) * fabsf(scale);
    free(sums);
    return CLG_SUCCESS;
}

clg_status clg_model_sync(clg_model *m)
{
    clg_status st = check_model(m, NULL, NULL, "clg_model_sync");
    if (st != CLG_SUCCESS)
        return st;
    st = refresh(m, 1, "clg_model_sync");
    return st == CLG_SUCCESS ? take_sticky(m, "clg_model_sync") : st;
}
