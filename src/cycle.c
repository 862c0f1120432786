/* cycle.c - the accumulation cycle: micro-steps on paths A, B and C, the
 * end-of-cycle sequence (statistics, prologue, update) and partial
 * windows.
 *
 * Failure model: host counters change only once every launch of a call was
 * enqueued. If a launch fails after earlier launches of the same call were
 * enqueued, the device already holds part of the step (an accumulated
 * gradient, an advanced step block) that the host counters don't reflect:
 * the model then refuses every further step until a checkpoint is loaded,
 * rather than silently computing a wrong update. Parameters are never half
 * updated within a chunk: the update of a chunk is one launch.
 *
 * Deferred end of cycle (clg_step_collect, clg_finish_cycle): the last
 * micro-step only accumulates and leaves the model pending, so that the
 * caller can combine the accumulators (data-parallel ranks summing theirs)
 * before the statistics, prologue and update run on the combined sum. */
#include "kernels.h"
#include "model.h"
#include "plan.h"

#include <math.h>

static clg_status cycle_length(clg_model *m, unsigned *k)
{
    if (m->cfg.k_schedule == NULL) {
        *k = m->cfg.accum_steps;
        return CLG_SUCCESS;
    }
    *k = m->cfg.k_schedule(m->cycles, m->cfg.k_schedule_user);
    if (*k < 1)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_step: the k schedule returned %u for update %llu; it must be >= 1",
                         *k, (unsigned long long)m->cycles);
    return CLG_SUCCESS;
}

unsigned clg_cycle_length(const clg_model *m)
{
    unsigned k = 0;
    if (m != NULL && cycle_length((clg_model *)m, &k) != CLG_SUCCESS)
        return 0;
    return k;
}

unsigned clg_micro_step_index(const clg_model *m) { return m ? m->micro : 0; }

float clg_accum_beta(const clg_model *m) { return m != NULL && m->micro > 0 ? 1.0f : 0.0f; }

/* Statistics, prologue and update of a cycle whose gradients are all in the
 * accumulator (path C: but for `last`; the accumulator holds nothing when
 * `last` is the cycle's only micro-step). */
static clg_status end_cycle(clg_model *m, const clg_grads *last, float w_last, float weight_sum,
                            bool stats_done)
{
    bool stats = clg__needs_stats(&m->cfg);
    clg_status st = CLG_SUCCESS;
    if (stats && !stats_done)
        st = clg__launch_acc_sumsq(m, CLG_REGION_MAIN);
    if (st == CLG_SUCCESS && m->cfg.tensor_norms)
        st = clg__launch_tensor_sumsq(m);
    if (st == CLG_SUCCESS)
        st = clg__launch_prologue(m, weight_sum);
    if (st == CLG_SUCCESS)
        st = clg__launch_update(m, last, w_last, last != NULL && m->micro == 0);
    return st;
}

static void cycle_done(clg_model *m)
{
    m->micro = 0;
    m->weight_sum = 0.0f;
    m->cycles++;
}

static clg_status check_usable(clg_model *m, const char *who)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: NULL model", who);
    if (!m->finalized)
        return clg__fail(m->ctx, CLG_ERR_STATE, "%s: model not finalized", who);
    if (m->failed != CLG_SUCCESS)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "%s: an earlier step failed half-way (%s); the device state no longer "
                         "matches the cycle, load a checkpoint to continue",
                         who, clg_status_string(m->failed));
    return CLG_SUCCESS;
}

/* The micro-steps and clg_flush, which must not start a new cycle (or end
 * one) over a collected cycle still waiting for clg_finish_cycle. */
static clg_status check_not_pending(clg_model *m, const char *who)
{
    if (m->pending)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "%s: the cycle's last micro-step was collected (clg_step_collect) and is "
                         "pending; call clg_finish_cycle (or clg_reset_cycle to drop it) first",
                         who);
    return CLG_SUCCESS;
}

/* Marks the model unusable when a failed call had already enqueued work. */
static clg_status settle(clg_model *m, clg_status st, uint64_t launched_before)
{
    if (st != CLG_SUCCESS && m->launched != launched_before)
        m->failed = st;
    return st;
}

static clg_status check_step(clg_model *m, const clg_grads *g, float w, bool collect,
                             const char *who)
{
    clg_status st = check_usable(m, who);
    if (st == CLG_SUCCESS)
        st = check_not_pending(m, who);
    if (st != CLG_SUCCESS)
        return st;
    if (!(isfinite(w) && w > 0.0f))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: weight %g must be finite and > 0", who, (double)w);
    if (g != NULL && g->model != m)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: the gradient buffers belong to another model", who);
    /* Skip-micro decides on the device which micro-steps count; a deferred
     * end would have to carry that count (and its weights) out to the
     * caller and back, which it does not. */
    if (collect && m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO)
        return clg__fail(m->ctx, CLG_ERR_UNSUPPORTED,
                         "%s: CLG_NONFINITE_SKIP_MICRO is not supported with a deferred end "
                         "of cycle; use CLG_NONFINITE_SKIP_UPDATE",
                         who);
    if (g == NULL && m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO)
        return clg__fail(m->ctx, CLG_ERR_UNSUPPORTED,
                         "%s: skipping single micro-steps needs external gradients (path "
                         "A); on path B the backward has already added them",
                         who);
    return CLG_SUCCESS;
}

static clg_status read_finite_count(clg_model *m, cl_uint *count, const char *who)
{
    if (clg__fault_hit(CLG_FAULT_ENQUEUE))
        return clg__cl_fail(m->ctx, CL_OUT_OF_RESOURCES, who, "clEnqueueReadBuffer");
    cl_int err = clEnqueueReadBuffer(m->ctx->queue, m->step_block, CL_TRUE,
                                     4 * CLG_SB_MICRO_COUNT, 4, count, 0, NULL, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS : clg__cl_fail(m->ctx, err, who, "clEnqueueReadBuffer");
}

/* Skip-micro mode: every micro-step is checked on the device first; the
 * host learns how many were finite with one 4-byte read per cycle. */
static clg_status step_skip_micro(clg_model *m, const clg_grads *g, float w, unsigned k,
                                  int *updated)
{
    clg_status st = clg__launch_check_micro(m, g, w);
    if (st == CLG_SUCCESS)
        st = clg__launch_accumulate(m, g, w, false, -1);
    if (st != CLG_SUCCESS)
        return st;
    /* counters change only once the whole call was enqueued */
    if (m->micro + 1 < k) {
        m->micro_total++;
        m->micro++;
        m->weight_sum += w;
        return CLG_SUCCESS;
    }
    cl_uint finite = 0;
    st = read_finite_count(m, &finite, "clg_step");
    if (st == CLG_SUCCESS && finite >= k)
        st = end_cycle(m, NULL, 0.0f, 0.0f /* the prologue reads the device sum */, false);
    if (st != CLG_SUCCESS)
        return st;
    m->micro_total++;
    if (finite < k) {
        m->micro = finite;
        m->weight_sum += w;
        return CLG_SUCCESS;
    }
    cycle_done(m);
    *updated = 1;
    return CLG_SUCCESS;
}

/* One micro-step on path A, B or C. collect: the last one only
 * accumulates (no path C, no statistics) and leaves the model pending. */
static clg_status step_plain(clg_model *m, const clg_grads *g, float w, unsigned k, bool collect,
                             int *updated)
{
    const clg_config *c = &m->cfg;
    bool first = m->micro == 0;
    bool last = m->micro + 1 >= k;
    bool end = last && !collect; /* the end of the cycle runs in this call */
    bool stats = clg__needs_stats(c);
    /* the noise scale needs the first micro-step's norm on its own */
    bool small = c->noise_scale && first && !last;
    float weight_sum = m->weight_sum + w;
    clg_status st = CLG_SUCCESS;

    if (g != NULL) {
        bool path_c = end && c->fuse_last_micro_step && !stats && !c->tensor_norms;
        if (path_c) {
            st = end_cycle(m, g, w, weight_sum, true);
        } else {
            int region = end && stats ? CLG_REGION_MAIN : small ? CLG_REGION_SMALL : -1;
            st = clg__launch_accumulate(m, g, w, first, region);
        }
        if (st == CLG_SUCCESS && end && !path_c)
            st = end_cycle(m, NULL, 0.0f, weight_sum, stats);
    } else {
        /* path B: the gradients are in the accumulator already */
        if (small)
            st = clg__launch_acc_sumsq(m, CLG_REGION_SMALL);
        if (st == CLG_SUCCESS && end)
            st = end_cycle(m, NULL, 0.0f, weight_sum, false);
    }
    if (st == CLG_SUCCESS && small)
        st = clg__launch_fold_small(m, w);
    if (st != CLG_SUCCESS)
        return st;

    m->micro_total++;
    if (end) {
        cycle_done(m);
        *updated = 1;
    } else if (last) {
        m->micro = k;
        m->weight_sum = weight_sum;
        m->pending = true;
        *updated = 1; /* *cycle_ready */
    } else {
        m->micro++;
        m->weight_sum = weight_sum;
    }
    return CLG_SUCCESS;
}

static clg_status step(clg_model *m, const clg_grads *g, float w, int *updated,
                       const clg_events *ev, bool collect, const char *who)
{
    clg__events_clear(ev);
    int dummy;
    updated = updated ? updated : &dummy;
    *updated = 0;
    clg_status st = check_step(m, g, w, collect, who);
    if (st == CLG_SUCCESS)
        st = clg__events_check(m->ctx, ev, who);
    unsigned k = 0;
    if (st == CLG_SUCCESS)
        st = cycle_length(m, &k);
    /* a shard's norm is not the gradient's: only the caller can end it */
    if (st == CLG_SUCCESS && !collect && m->micro + 1 >= k)
        st = clg__shard_refuse(m, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(m->ctx, ev, who);
    if (st != CLG_SUCCESS)
        return st;
    uint64_t before = m->launched;
    st = m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO ? step_skip_micro(m, g, w, k, updated)
                                                      : step_plain(m, g, w, k, collect, updated);
    return clg__events_finish(m->ctx, ev, settle(m, st, before), who);
}

clg_status clg_step(clg_model *m, const clg_grads *g, float w, int *updated,
                    const clg_events *ev)
{
    return step(m, g, w, updated, ev, false, "clg_step");
}

clg_status clg_step_collect(clg_model *m, const clg_grads *g, float w, int *cycle_ready,
                            const clg_events *ev)
{
    return step(m, g, w, cycle_ready, ev, true, "clg_step_collect");
}

/* The checks of clg_finish_cycle and clg_finish_cycle_sharded. */
static clg_status check_pending(clg_model *m, const char *who)
{
    clg_status st = check_usable(m, who);
    if (st == CLG_SUCCESS && !m->pending)
        st = clg__fail(m->ctx, CLG_ERR_STATE,
                       "%s: no collected cycle is pending (clg_step_collect has not reported "
                       "*cycle_ready = 1 since the last update)",
                       who);
    return st;
}

/* sumsq NULL: the statistics pass reads the accumulator as it is now, as
 * clg_flush's does; else the caller's sum over every shard stands in for
 * it, as the main region's one partial. */
static clg_status finish(clg_model *m, float weight_sum, const double *sumsq,
                         const clg_events *ev, const char *who)
{
    clg__events_clear(ev);
    clg_status st = check_pending(m, who);
    if (st != CLG_SUCCESS)
        return st;
    if (!(isfinite(weight_sum) && weight_sum > 0.0f))
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: weight_sum %g must be finite and > 0", who, (double)weight_sum);
    if (sumsq != NULL && *sumsq < 0.0)
        return clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: sumsq %g is negative; it is a sum of squares", who, *sumsq);
    st = clg__events_check(m->ctx, ev, who);
    if (st == CLG_SUCCESS)
        st = clg__events_wait(m->ctx, ev, who);
    if (st == CLG_SUCCESS && sumsq != NULL && clg__needs_stats(&m->cfg))
        st = clg__partials_set_main(m, (float)*sumsq, who);
    if (st != CLG_SUCCESS)
        return clg__events_finish(m->ctx, ev, st, who);
    uint64_t before = m->launched;
    st = settle(m, end_cycle(m, NULL, 0.0f, weight_sum, sumsq != NULL), before);
    if (st == CLG_SUCCESS) {
        m->pending = false;
        cycle_done(m);
    }
    return clg__events_finish(m->ctx, ev, st, who);
}

clg_status clg_finish_cycle(clg_model *m, float weight_sum, const clg_events *ev)
{
    const char *who = "clg_finish_cycle";
    clg_status st = m != NULL ? clg__shard_refuse(m, who) : CLG_SUCCESS;
    if (st != CLG_SUCCESS) {
        clg__events_clear(ev);
        return st;
    }
    return finish(m, weight_sum, NULL, ev, who);
}

clg_status clg_shard_sumsq(clg_model *m, double *sumsq)
{
    const char *who = "clg_shard_sumsq";
    clg_status st = check_pending(m, who);
    if (st == CLG_SUCCESS && sumsq == NULL)
        st = clg__fail(m->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: sumsq is NULL", who);
    if (st != CLG_SUCCESS)
        return st;
    if (!clg__needs_stats(&m->cfg)) {
        /* the cycle's end reads no norm: no pass, no read back */
        *sumsq = 0.0;
        return CLG_SUCCESS;
    }
    /* only the partials change: a failure leaves the cycle as it was */
    st = clg__launch_shard_sumsq(m);
    return st == CLG_SUCCESS ? clg__partials_shard_sum(m, sumsq, who) : st;
}

clg_status clg_finish_cycle_sharded(clg_model *m, float weight_sum, double sumsq,
                                    const clg_events *ev)
{
    return finish(m, weight_sum, &sumsq, ev, "clg_finish_cycle_sharded");
}

/* The update of a partial window, once clg_flush has checked it. */
static clg_status flush(clg_model *m)
{
    clg_status st = clg__shard_refuse(m, "clg_flush");
    if (st != CLG_SUCCESS)
        return st;
    if (m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO) {
        cl_uint finite = 0;
        st = read_finite_count(m, &finite, "clg_flush");
        if (st != CLG_SUCCESS)
            return st;
        if (finite == 0)
            return clg__fail(m->ctx, CLG_ERR_STATE,
                             "clg_flush: every micro-step of the current cycle was skipped");
    }
    /* A one-micro-step window has a single batch size, and the prologue
     * then leaves the noise-scale estimate alone. */
    uint64_t before = m->launched;
    st = settle(m, end_cycle(m, NULL, 0.0f, m->weight_sum, false), before);
    if (st != CLG_SUCCESS)
        return st;
    cycle_done(m);
    return CLG_SUCCESS;
}

clg_status clg_flush(clg_model *m, const clg_events *ev)
{
    clg__events_clear(ev);
    clg_status st = check_usable(m, "clg_flush");
    if (st == CLG_SUCCESS)
        st = check_not_pending(m, "clg_flush");
    if (st == CLG_SUCCESS)
        st = clg__events_check(m->ctx, ev, "clg_flush");
    if (st != CLG_SUCCESS)
        return st;
    if (m->micro == 0)
        return clg__fail(m->ctx, CLG_ERR_STATE,
                         "clg_flush: the current cycle holds no gradients");
    st = clg__events_wait(m->ctx, ev, "clg_flush");
    if (st == CLG_SUCCESS)
        st = flush(m);
    return clg__events_finish(m->ctx, ev, st, "clg_flush");
}

clg_status clg_reset_cycle(clg_model *m)
{
    if (m == NULL)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_reset_cycle: NULL model");
    if (m->finalized && m->cfg.nonfinite == CLG_NONFINITE_SKIP_MICRO) {
        /* the device counts this mode's micro-steps and weights itself */
        static const cl_uint zero[2] = {0, 0};
        cl_int err = clEnqueueWriteBuffer(m->ctx->queue, m->step_block, CL_TRUE,
                                          4 * CLG_SB_MICRO_COUNT, sizeof zero, zero, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return clg__cl_fail(m->ctx, err, "clg_reset_cycle", "clEnqueueWriteBuffer");
    }
    m->micro = 0;
    m->weight_sum = 0.0f;
    m->pending = false;
    return CLG_SUCCESS;
}
