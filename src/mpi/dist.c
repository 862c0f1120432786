/* dist.c - clg_dist: data parallelism over MPI on top of the core's
 * deferred end of cycle (clg_step_collect, then clg_finish_cycle, or for
 * ZeRO-1's sharded models clg_shard_sumsq and clg_finish_cycle_sharded).
 *
 * At the end of a cycle, in this order, each step agreed by every rank
 * before the next (clg__dist_agree), so that all ranks take the same path:
 *  1. the last micro-step is collected (accumulated, no update) and the
 *     ranks' cycle weights are summed in rank order;
 *  2. DDP: the accumulators are summed across ranks (reduce.c); ZeRO-1:
 *     reduce-scattered into each rank's shard (zero1.c), and the shards'
 *     sums of squares added in rank order;
 *  3. every rank runs the update (of its shard) with the global weight
 *     sum (and norm);
 *  4. ZeRO-1: the updated params are all-gathered.
 * A failure in 1 or 2 drops the cycle on every rank (clg_reset_cycle:
 * nothing was updated anywhere). A failure in 3 or 4 leaves the ranks out
 * of step: every rank returns the error and refuses further steps (load a
 * checkpoint). */
#include "dist.h"

#include <stdlib.h>
#include <string.h>

/* A message for the agreement: the core's (the model's context) or ours. */
static const char *core_msg(const clg_dist *d)
{
    return clg_last_error(clg_model_context(d->model));
}

static clg_status local_checks(clg_model *m)
{
    const clg_config *c = clg_model_get_config(m);
    clg_view v;
    if (c == NULL || clg_model_acc_view(m, 0, &v) != CLG_SUCCESS)
        return clg__dist_fail(m, CLG_ERR_STATE,
                              "clg_dist_create: the model must be finalized and hold at least "
                              "one tensor");
    if (c->acc_dtype != CLG_FP32)
        return clg__dist_fail(m, CLG_ERR_UNSUPPORTED,
                              "clg_dist_create: the accumulator is %s; only fp32 accumulators "
                              "are summed across ranks",
                              c->acc_dtype == CLG_BF16 ? "bf16" : "not fp32");
    if (c->nonfinite == CLG_NONFINITE_SKIP_MICRO)
        return clg__dist_fail(m, CLG_ERR_UNSUPPORTED,
                              "clg_dist_create: CLG_NONFINITE_SKIP_MICRO has no deferred end of "
                              "cycle (clg_step_collect); use CLG_NONFINITE_SKIP_UPDATE");
    if (clg_micro_step_index(m) != 0)
        return clg__dist_fail(m, CLG_ERR_STATE,
                              "clg_dist_create: the model is in the middle of a cycle (%u "
                              "micro-steps in); start at a cycle boundary",
                              clg_micro_step_index(m));
    return CLG_SUCCESS;
}

static clg_status build_spans(clg_dist *d)
{
    size_t nt = clg_model_tensor_count(d->model);
    d->spans = calloc(nt ? nt : 1, sizeof *d->spans);
    if (d->spans == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_create: no host memory for %zu tensors", nt);
    size_t flat = 0;
    for (size_t t = 0; t < nt; t++) {
        clg_view v;
        if (clg_model_acc_view(d->model, (int)t, &v) != CLG_SUCCESS)
            return clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE,
                                  "clg_dist_create: tensor %zu: %s", t, core_msg(d));
        d->spans[t] = (dist_span){v.mem, v.offset, v.count, flat};
        flat += v.count;
    }
    d->n_spans = nt;
    d->n = flat;
    return CLG_SUCCESS;
}

void clg_dist_destroy(clg_dist *d)
{
    if (d == NULL)
        return;
    clg__dist_slots_free(d);
    clg__dist_zero1_free(d);
    free(d->xcount);
    free(d->spans);
    if (d->comm != MPI_COMM_NULL)
        MPI_Comm_free(&d->comm);
    free(d);
}

clg_status clg_dist_create(clg_model *m, MPI_Comm comm, clg_dist_mode mode, clg_dist **out)
{
    return clg_dist_create_watched(m, comm, mode, NULL, out);
}

clg_status clg_dist_create_watched(clg_model *m, MPI_Comm comm, clg_dist_mode mode,
                                   clg_dist_watch *watch, clg_dist **out)
{
    const char *who = "clg_dist_create";
    if (out == NULL)
        return clg__dist_fail(m, CLG_ERR_INVALID_ARGUMENT, "%s: out is NULL", who);
    *out = NULL;
    if (m == NULL)
        return clg__dist_fail(m, CLG_ERR_INVALID_ARGUMENT, "%s: model is NULL", who);
    if (mode != CLG_DIST_DDP && mode != CLG_DIST_ZERO1)
        return clg__dist_fail(m, CLG_ERR_INVALID_ARGUMENT,
                              "%s: mode %d must be CLG_DIST_DDP or CLG_DIST_ZERO1", who, (int)mode);
    int init = 0;
    MPI_Initialized(&init);
    if (!init || comm == MPI_COMM_NULL)
        return clg__dist_fail(m, CLG_ERR_STATE, "%s: %s", who,
                              init ? "comm is MPI_COMM_NULL" : "MPI is not initialized");
    clg_dist *d = calloc(1, sizeof *d);
    if (d == NULL)
        return clg__dist_fail(m, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", who);
    d->model = m;
    d->mode = mode;
    d->comm = MPI_COMM_NULL;
    d->counters = clg_dist_counters_init();
    d->watch = watch;
    /* our own communicator: MPI errors on it come back as codes instead of
     * aborting every rank (MPI_ERRORS_ARE_FATAL, the default) */
    char e[256];
    MPI_Request req;
    int err = clg__dist_wait(d, MPI_Comm_idup(comm, &d->comm, &req), &req);
    if (err == MPI_SUCCESS)
        err = MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    if (err == MPI_SUCCESS)
        err = MPI_Comm_rank(d->comm, &d->rank);
    if (err == MPI_SUCCESS)
        err = MPI_Comm_size(d->comm, &d->size);
    if (err != MPI_SUCCESS) {
        clg__dist_fail(m, CLG_ERR_IO, "%s: duplicating the communicator failed: %s", who,
                       clg__dist_mpi_string(d, err, e, sizeof e));
        if (err != DIST_TIMED_OUT) /* else the duplicate may still come into d->comm */
            clg_dist_destroy(d);
        return CLG_ERR_IO;
    }
    clg_status st = local_checks(m);
    if (st == CLG_SUCCESS && watch && !clg__watch_fits(watch, d->rank, d->size))
        st = clg__dist_fail(m, CLG_ERR_INVALID_ARGUMENT,
                            "%s: the watch's communicator does not hold comm's ranks (rank %d "
                            "of %d here)",
                            who, d->rank, d->size);
    d->xcount = malloc(4 * (size_t)d->size * sizeof *d->xcount);
    if (st == CLG_SUCCESS && d->xcount == NULL)
        st = clg__dist_fail(m, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %d counts", who,
                            4 * d->size);
    if (st == CLG_SUCCESS && mode == CLG_DIST_ZERO1)
        st = clg__dist_zero1_init(d);
    else if (st == CLG_SUCCESS)
        st = build_spans(d);
    if (st == CLG_SUCCESS && mode == CLG_DIST_DDP)
        st = clg__dist_reduce_init(d);
    st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), 0.0, NULL, false, who);
    if (st == CLG_SUCCESS)
        st = clg__dist_check_layout(d);
    if (st != CLG_SUCCESS) {
        clg_dist_destroy(d);
        return st;
    }
    *out = d;
    return CLG_SUCCESS;
}

/* After an agreed failure at steps 1-2: the cycle is dropped everywhere. */
static clg_status drop_cycle(clg_dist *d, clg_status st)
{
    clg_reset_cycle(d->model);
    d->weight_sum = 0.0f;
    return st;
}

/* The collective end of a cycle; st is this rank's collect outcome. */
static clg_status end_cycle(clg_dist *d, clg_status st, float w_local, int *updated)
{
    const char *who = "clg_dist_step";
    clg_dist_counters *c = &d->counters;
    c->last_bytes_sent = c->last_bytes_received = 0;
    c->last_comm_seconds = 0.0;
    double t0 = MPI_Wtime();
    double w_global = 0.0;
    st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), (double)w_local,
                         &w_global, true, who);
    if (st != CLG_SUCCESS)
        return drop_cycle(d, st);
    st = d->mode == CLG_DIST_ZERO1 ? clg__dist_reduce_scatter(d) : clg__dist_reduce(d);
    st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), 0.0, NULL, true, who);
    if (st != CLG_SUCCESS)
        return drop_cycle(d, st);
    double sumsq = 0.0; /* ZeRO-1: the whole gradient's, from the shards' */
    if (d->mode == CLG_DIST_ZERO1) {
        double part = 0.0;
        st = clg_shard_sumsq(d->model, &part);
        st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), part, &sumsq, true,
                             who);
        if (st != CLG_SUCCESS)
            return drop_cycle(d, st);
    }
    st = d->mode == CLG_DIST_ZERO1
             ? clg_finish_cycle_sharded(d->model, (float)w_global, sumsq, NULL)
             : clg_finish_cycle(d->model, (float)w_global, NULL);
    st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), 0.0, NULL, true, who);
    if (st == CLG_SUCCESS && d->mode == CLG_DIST_ZERO1) {
        st = clg__dist_gather_params(d);
        st = clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), 0.0, NULL, true, who);
    }
    c->updates++;
    c->last_cycle_seconds = MPI_Wtime() - t0;
    c->cycle_seconds += c->last_cycle_seconds;
    c->bytes_sent += c->last_bytes_sent;
    c->bytes_received += c->last_bytes_received;
    c->comm_seconds += c->last_comm_seconds;
    d->weight_sum = 0.0f;
    if (st != CLG_SUCCESS) {
        d->broken = st;
        return st;
    }
    *updated = 1;
    return CLG_SUCCESS;
}

clg_status clg_dist_step(clg_dist *d, const clg_grads *g, float w, int *updated)
{
    int dummy;
    updated = updated ? updated : &dummy;
    *updated = 0;
    if (d == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_INVALID_ARGUMENT,
                              "clg_dist_step: dist is NULL");
    if (d->broken != CLG_SUCCESS)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE,
                              "clg_dist_step: an earlier cycle end failed on some rank after "
                              "others had updated (%s); the ranks are out of step, load a "
                              "checkpoint on every rank and create a new clg_dist",
                              clg_status_string(d->broken));
    unsigned k = clg_cycle_length(d->model);
    /* every rank has the same k and micro-step index, so all agree on
     * which micro-step ends the cycle without talking */
    bool last = k == 0 || clg_micro_step_index(d->model) + 1 >= k;
    float w_local = d->weight_sum + w; /* as the core adds them */
    int ready = 0;
    clg_status st = clg_step_collect(d->model, g, w, &ready, NULL);
    if (!last) {
        if (st == CLG_SUCCESS)
            d->weight_sum = w_local;
        else
            clg__dist_fail(clg__dist_model(d), st, "clg_dist_step: %s", core_msg(d));
        return st;
    }
    return end_cycle(d, st, w_local, updated);
}

clg_status clg_dist_counters_get(const clg_dist *d, clg_dist_counters *out)
{
    if (d == NULL || out == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_INVALID_ARGUMENT,
                              "clg_dist_counters_get: %s is NULL", d == NULL ? "dist" : "counters");
    size_t size = out->struct_size;
    if (size < sizeof(size_t) + sizeof(uint64_t))
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_INVALID_ARGUMENT,
                              "clg_dist_counters_get: struct_size %zu is too small", size);
    /* a newer caller's larger struct: what this library does not know is 0 */
    clg_dist_counters full = d->counters;
    full.struct_size = size;
    full.pinned = clg__dist_pinned(d);
    size_t n = size < sizeof full ? size : sizeof full;
    memcpy(out, &full, n);
    if (size > sizeof full)
        memset((char *)out + sizeof full, 0, size - sizeof full);
    return CLG_SUCCESS;
}

clg_dist_mode clg_dist_get_mode(const clg_dist *d) { return d ? d->mode : CLG_DIST_DDP; }

clg_status clg_dist_checkpoint_save(clg_dist *d, const char *path, const char *const *keys,
                                    const char *const *values, size_t n_meta)
{
    const char *who = "clg_dist_checkpoint_save";
    if (d == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_INVALID_ARGUMENT, "%s: dist is NULL",
                              who);
    if (d->broken != CLG_SUCCESS)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE,
                              "%s: an earlier cycle end failed on some rank after others had "
                              "updated (%s): the ranks hold different states, none is saved",
                              who, clg_status_string(d->broken));
    if (clg__watch_expired(d->watch)) /* no rank to agree with on the outcome */
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO, "%s: none is saved: %s", who,
                              clg__watch_expired(d->watch));
    void **images = NULL;
    size_t ns = 0;
    clg_status st = CLG_SUCCESS;
    if (d->mode == CLG_DIST_ZERO1)
        st = clg__dist_gather_states(d, &images, &ns);
    if (st == CLG_SUCCESS && d->rank == 0) {
        st = d->mode == CLG_DIST_ZERO1
                 ? clg_checkpoint_save_gathered(d->model, path, keys, values, n_meta,
                                                (const void *const *)images, ns)
                 : clg_checkpoint_save(d->model, path, keys, values, n_meta);
        if (st != CLG_SUCCESS)
            clg__dist_fail(clg__dist_model(d), st, "%s", core_msg(d));
    }
    clg__dist_free_images(images, ns);
    return clg__dist_agree(d, d->comm, d->rank, d->size, st, core_msg(d), 0.0, NULL, false, who);
}

int clg_dist_rank(const clg_dist *d) { return d ? d->rank : -1; }
int clg_dist_size(const clg_dist *d) { return d ? d->size : 0; }
