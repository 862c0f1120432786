/* clgrad_mpi.h - data-parallel training over MPI (libclgrad-mpi, optional;
 * the core library never depends on MPI).
 *
 * Replicated mode (DDP): every rank holds the whole model and runs its own
 * micro-steps on its own samples; ranks talk only at the end of a cycle
 * (the accumulation boundary, as DDP's no_sync or DeepSpeed): the
 * accumulators are summed across ranks, the micro-step weights too (so
 * that mean mode divides by the global sum of weights), and every rank
 * runs the same update on the same sum. Intermediate micro-steps
 * communicate nothing.
 *
 * The sum is deterministic and bitwise the same on every rank, whatever
 * the MPI library's own reduction order: each rank owns a shard of the
 * accumulator, receives the R contributions to it (MPI_Alltoallv), adds
 * them in rank order 0..R-1, and the summed shards are all-gathered
 * (MPI_Allgatherv). Host-staged, in rounds of a few MiB of the
 * accumulator (device -> host, exchange, host -> device), so that host
 * memory stays bounded; fp32 accumulators only. The global norm, the
 * non-finite decision and the dynamic loss scale are computed by each
 * rank's clg_finish_cycle from that same sum: every rank clips, skips and
 * scales identically. The gradient noise-scale estimate (config
 * noise_scale) takes each rank's own first micro-step as its small batch,
 * so it may differ by rank; it never touches the params.
 *
 * Errors: every call that communicates (clg_dist_create, and clg_dist_step
 * at the end of a cycle) agrees on the outcome before it commits
 * anything, so that a failure on any rank (an OpenCL error, an MPI error,
 * bad input) returns the same status on every rank, with a message naming
 * the rank that failed and why. The message is clgrad's own, on the
 * model's context: clg_last_error(clg_model_context(model)), or
 * clg_last_error(NULL) when there was no model. A failed cycle end
 * drops the cycle on every rank (params, states and counters unchanged).
 * MPI errors come back as CLG_ERR_IO: the library works on its own
 * duplicate of the communicator with MPI_ERRORS_RETURN, and never prints
 * or exits. A failure of an intermediate micro-step is that rank's alone
 * (nothing is communicated there): retry it, or stop every rank. */
#ifndef CLGRAD_MPI_H
#define CLGRAD_MPI_H

#include <clgrad.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CLGRAD_MPI_BUILDING) && defined(__GNUC__)
#define CLG_MPI_API __attribute__((visibility("default")))
#else
#define CLG_MPI_API
#endif

typedef struct clg_dist clg_dist;

/* How the ranks share the work of the update.
 *  CLG_DIST_DDP: replicated, as above.
 *  CLG_DIST_ZERO1: ZeRO stage 1. Each rank's model keeps the optimizer
 *  states of its own shard only (clg_model_set_shard(model, rank, R)
 *  before clg_model_finalize: 1/R of the states, in whole 1024-element
 *  segments of the layout space, so within one segment of 1/R); params and
 *  accumulators stay whole on every rank. At the end of a cycle the
 *  accumulators are reduce-scattered (each rank receives the R
 *  contributions to its shard and adds them in rank order), the shards'
 *  sums of squares are added in rank order into the global norm that
 *  every rank clips with and tests for inf/NaN, each rank updates its
 *  shard's params, and the updated params are all-gathered: bitwise the
 *  same params on every rank. The bytes moved per update are DDP's (one
 *  reduce-scatter and one all-gather of the layout space); the states are
 *  1/R. */
typedef enum clg_dist_mode { CLG_DIST_DDP = 0, CLG_DIST_ZERO1 = 1 } clg_dist_mode;

/* A data-parallel clg_dist over comm in the given mode (collective: every
 * rank of comm calls it). The model must be finalized, at the start of a
 * cycle, with an fp32 accumulator and not under CLG_NONFINITE_SKIP_MICRO;
 * every rank must hold the same layout (parameter and tensor counts, tensor
 * names and sizes) and the config fields that shape the update (optimizer,
 * k, mean or sum, clipping, non-finite policy, loss scaling, lr and
 * schedule, betas, eps, weight decay): checked collectively, and a
 * difference fails on every rank with CLG_ERR_MISMATCH naming the field and
 * the ranks. CLG_DIST_ZERO1 also needs a model sharded as (rank, size) of
 * comm, and the layout space the same on every rank (the same
 * CLGRAD_MAX_ALLOC), checked the same way. The model is borrowed: it must
 * outlive the clg_dist. Params are not broadcast: upload the same initial
 * params on every rank. */
CLG_MPI_API clg_status clg_dist_create(clg_model *model, MPI_Comm comm, clg_dist_mode mode,
                                       clg_dist **out);
CLG_MPI_API clg_dist_mode clg_dist_get_mode(const clg_dist *dist);
/* Collective too (it frees the duplicate communicator), before
 * MPI_Finalize; the model stays. */
CLG_MPI_API void clg_dist_destroy(clg_dist *dist);

/* One micro-step of this rank (clg_step_collect: grads != NULL is path A,
 * NULL path B, weight w). On the cycle's last micro-step (collective) it
 * sums the accumulators and the weights across ranks and runs the update
 * (clg_finish_cycle with the global weight sum); *updated (may be NULL) is
 * then 1. Blocking at the end of a cycle (it waits for the queue to stage
 * the accumulator), non-blocking before. */
CLG_MPI_API clg_status clg_dist_step(clg_dist *dist, const clg_grads *grads, float weight,
                                     int *updated);

/* Collective: one checkpoint of the whole training state, written by rank
 * 0 with clg_checkpoint_save's durable writer (meta as there). Under
 * ZeRO-1 the shards' states are first gathered on rank 0's host (the
 * states of the whole model in host memory there, for the save only). The
 * file is an ordinary clgrad checkpoint: every rank loads it with
 * clg_checkpoint_load (a sharded model keeps its shard), with any R, in
 * either mode or in a single process. The status is agreed: every rank
 * returns rank 0's failure too. */
CLG_MPI_API clg_status clg_dist_checkpoint_save(clg_dist *dist, const char *path,
                                                const char *const *meta_keys,
                                                const char *const *meta_values, size_t n_meta);

/* What the cycle ends cost this rank. Bytes count what this rank's MPI
 * calls sent to and received from other ranks (its own shard excluded),
 * the accumulator (and under ZeRO-1 the params' all-gather) and the small
 * agreement messages; about 2 (R-1)/R * 4 * params each way per update. */
typedef struct clg_dist_counters {
    size_t struct_size;           /* set by clg_dist_counters_init */
    uint64_t updates;             /* cycle ends (applied or skipped updates) */
    uint64_t bytes_sent;          /* all cycle ends */
    uint64_t bytes_received;
    uint64_t last_bytes_sent;     /* the last cycle end */
    uint64_t last_bytes_received;
    double comm_seconds;          /* in MPI calls, all cycle ends */
    double staging_seconds;       /* accumulator device <-> host copies */
    double last_comm_seconds;     /* the last cycle end */
    /* Added with ZeRO-1 (not written for a struct_size that ends before):
     * the wall time of the cycle-end clg_dist_step on this rank, all of it
     * (agreements, copies, MPI, the update's enqueue, ZeRO-1's gather);
     * MPI and the copies overlap, so it is less than their sum. */
    double cycle_seconds;         /* all cycle ends */
    double last_cycle_seconds;    /* the last cycle end */
    int pinned;                   /* 1: the round buffers are pinned (mapped
                                     CL_MEM_ALLOC_HOST_PTR) memory */
} clg_dist_counters;
static inline clg_dist_counters clg_dist_counters_init(void)
{
    clg_dist_counters c = {0};
    c.struct_size = sizeof c;
    return c;
}
/* Writes the first struct_size bytes (structs that grow, as clgrad.h's). */
CLG_MPI_API clg_status clg_dist_counters_get(const clg_dist *dist, clg_dist_counters *counters);

/* The rank and size of the clg_dist's communicator. */
CLG_MPI_API int clg_dist_rank(const clg_dist *dist);
CLG_MPI_API int clg_dist_size(const clg_dist *dist);

/* The watchdog: a deadline on every wait for other ranks.
 *
 * Without one a rank waits in a collective for as long as the others take:
 * one rank stopped (SIGSTOP) or hung leaves every other blocked for ever
 * (a rank that dies is MPI's to notice). Under a watch every wait of the
 * library (each collective is started non-blocking and completed by
 * MPI_Test against the deadline), and every clg_dist_watch_wait of the
 * caller, gives up once it has waited timeout_s seconds.
 *
 * Who is missing: a collective that does not complete does not say which
 * rank it lacks, so the rank whose deadline passed calls the roll: a small
 * message to every other rank on the watch's communicator, which a rank
 * answers from inside any of its waits (every rank's waits poll for it). A
 * rank that does not answer within a grace (a quarter of the timeout,
 * within 0.25..5 s) is named: it is stopped, hung, or busy outside any
 * wait (so the timeout must exceed the longest stretch a rank works while
 * the others wait for it, such as rank 0 alone writing a checkpoint). Of
 * the ranks whose deadlines pass together, only the lowest one that
 * answers gives up (the others wait once more, for the time it takes to
 * give up), so that one rank reports it; and a wait every rank answers to
 * that still does not complete gives up at its second deadline (the
 * ranks are out of step). No message is sent before a deadline passes:
 * the counters are the same with a watch or without.
 *
 * A wait that gave up returns CLG_ERR_IO, and clg_dist_watch_expired then
 * returns what happened, e.g. "rank 0 waited 300.8 s for rank 1, which
 * does not answer (stopped or hung?)". The request waited for stays
 * pending (the caller's to wait for again, should the rank come back), a
 * clg_dist's stay pending for good, with the buffers they use: the job
 * cannot go on, and the caller ends it (MPI_Abort). Every later wait of
 * the watch fails at once without communicating, and so does every cycle
 * end and checkpoint of a clg_dist under it. The library never prints or
 * exits.
 *
 * Each rank creates its own watch (a local call: nothing is exchanged) on
 * a communicator of the same ranks as the clg_dist's, which it borrows and
 * on which it uses the tags CLG_DIST_WATCH_TAG and CLG_DIST_WATCH_TAG + 1:
 * the caller's own point-to-point messages there must use other tags (and
 * not receive MPI_ANY_TAG). timeout_s: 0 (the default) waits for ever,
 * still answering the roll calls of other ranks. */
#define CLG_DIST_WATCH_TAG 32766 /* and 32767: MPI_TAG_UB is at least 32767 */
typedef struct clg_dist_watch clg_dist_watch;
CLG_MPI_API clg_status clg_dist_watch_create(MPI_Comm comm, clg_dist_watch **out);
CLG_MPI_API void clg_dist_watch_destroy(clg_dist_watch *watch);
/* 0 (none) or a finite number of seconds up to 1e9; used by the waits
 * that start after it. */
CLG_MPI_API clg_status clg_dist_watch_set_timeout(clg_dist_watch *watch, double timeout_s);
/* MPI_Wait(request) under the watch: CLG_SUCCESS; CLG_ERR_IO for an MPI
 * error (clg_last_error(NULL) says which) or a deadline that passed. */
CLG_MPI_API clg_status clg_dist_watch_wait(clg_dist_watch *watch, MPI_Request *request);
/* NULL until a wait of the watch gave up; then what happened. */
CLG_MPI_API const char *clg_dist_watch_expired(const clg_dist_watch *watch);
/* clg_dist_create, with its own waits and every later one of the clg_dist
 * under watch (borrowed: it must outlive the clg_dist). */
CLG_MPI_API clg_status clg_dist_create_watched(clg_model *model, MPI_Comm comm,
                                               clg_dist_mode mode, clg_dist_watch *watch,
                                               clg_dist **out);

#ifdef __cplusplus
}
#endif

#endif /* CLGRAD_MPI_H */
