/* dist.h - libclgrad-mpi's internals: the clg_dist object, the agreement
 * of all ranks on one outcome, the layout check and the ordered sum. */
#ifndef CLGRAD_MPI_DIST_H
#define CLGRAD_MPI_DIST_H

#include "clgrad_advanced.h"
#include "clgrad_mpi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One tensor's accumulator: where it lives and where it starts in the
 * flat order (tensor order, padding excluded) the ranks sum in. */
typedef struct dist_span {
    cl_mem mem;
    size_t offset; /* elements, in mem */
    size_t count;
    size_t flat;   /* first element in the flat order */
} dist_span;

/* One set of round buffers (stage.c): pinned host memory when the device
 * maps it, and the event after the copies into it still in flight. */
typedef struct dist_slot {
    cl_mem mem;   /* the CL_MEM_ALLOC_HOST_PTR buffer mapped at host, or NULL */
    float *host;  /* stage, recv and sum end to end */
    bool pinned;
    float *stage, *recv, *sum;
    cl_event ready;
} dist_slot;

struct clg_dist {
    clg_model *model;
    clg_dist_mode mode;
    MPI_Comm comm; /* our duplicate, MPI_ERRORS_RETURN */
    int rank, size;
    dist_span *spans;
    size_t n_spans;
    size_t n;          /* accumulator elements (the model's params) */
    float weight_sum;  /* this rank's weights in the current cycle */
    clg_status broken; /* a cycle end failed after some rank updated */
    dist_slot slot[2]; /* round buffers, used in turn (stage.c) */
    /* ZeRO-1 (zero1.c): spans hold the accumulator's chunks and pspans the
     * params', both in the layout space (n its elements); rank r's shard
     * is [first[r], first[r] + count[r]). */
    dist_span *pspans;
    uint64_t *first, *count;
    /* the counts and displacements of one exchange (4 x size ints: send
     * counts and displacements, then receive), allocated at creation so
     * that no exchange can fail for want of them half-way */
    int *xcount;
    clg_dist_counters counters;
    clg_dist_watch *watch; /* the deadline of every wait (borrowed), or NULL */
};

/* The model a failure on d is recorded for (NULL when d is): watch.c,
 * with clg__dist_fail, below every file that fails. */
clg_model *clg__dist_model(const clg_dist *d);
/* Records the message on m's context, where clg_last_error finds it (m NULL:
 * this thread's context-less failure), and returns st. */
clg_status clg__dist_fail(const clg_model *m, clg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* What clg__dist_wait returns when the watch's deadline passed (MPI's
 * error codes are never negative). */
#define DIST_TIMED_OUT (-1)
/* The message of an MPI error code, or of the watch's expiry for
 * DIST_TIMED_OUT (d may then not be NULL). */
const char *clg__dist_mpi_string(const clg_dist *d, int err, char *buf, size_t size);

/* Completes the request of a collective that `started` (its MPI code) began
 * on d->comm: MPI_Wait, or under d's watch clg__watch_wait. The error of
 * the start, the wait's, or DIST_TIMED_OUT. */
int clg__dist_wait(const clg_dist *d, int started, MPI_Request *req);
/* watch.c: the wait against the deadline, answering other ranks' roll
 * calls meanwhile (MPI_SUCCESS, an MPI error code, or DIST_TIMED_OUT), and
 * its message after it gave up (NULL before). */
int clg__watch_wait(clg_dist_watch *w, MPI_Request *req);
const char *clg__watch_expired(const clg_dist_watch *w);
/* Whether w's communicator has this rank and size. */
bool clg__watch_fits(const clg_dist_watch *w, int rank, int size);

/* Every rank brings its status (and message, when it failed) and a value;
 * every rank returns the status of the lowest rank that failed, with the
 * message "who: rank r: its message" (CLG_SUCCESS if none did), and, when
 * sum is not NULL, the values added in rank order (the same bits
 * everywhere). Counts its bytes and seconds into the last-cycle counters
 * when count is set. */
clg_status clg__dist_agree(clg_dist *d, MPI_Comm comm, int rank, int size, clg_status st,
                           const char *msg, double value, double *sum, bool count,
                           const char *who);

/* Collective: the same model layout and update config on every rank
 * (CLG_ERR_MISMATCH naming the first difference otherwise). */
clg_status clg__dist_check_layout(clg_dist *d);

/* Two slots of stage + recv + sum floats each; their release. */
clg_status clg__dist_slots_init(clg_dist *d, size_t stage, size_t recv, size_t sum);
void clg__dist_slots_free(clg_dist *d);
bool clg__dist_pinned(const clg_dist *d);
/* Enqueues the copies of elements [a, a + len) of spans (flat order)
 * between the device and host (write: host to device); no wait. */
cl_int clg__dist_copy(const clg_dist *d, const dist_span *spans, uint64_t a, size_t len,
                      float *host, int write);
/* An event after everything enqueued so far, kept in the slot (and the
 * queue flushed); waiting for it, and for both slots and the queue. */
cl_int clg__dist_mark(const clg_dist *d, dist_slot *s);
cl_int clg__dist_await(dist_slot *s);
cl_int clg__dist_drain(const clg_dist *d);
/* The rounds of an exchange: read(d, i, slot) enqueues round i's copies
 * from the device into the slot and marks it. The caller enqueues round 0
 * (slot 0) before the first clg__dist_round_begin(i), which returns round
 * i's slot with its copies done and round i+1's started in the other slot
 * (after a local failure *cl_err is set and `zero_floats` of `zero`, or of
 * the slot's stage, are zeroed, so that the rank stays in the exchange).
 * clg__dist_rounds_end waits for every copy still in flight. */
typedef cl_int (*dist_read_fn)(const clg_dist *d, size_t round, dist_slot *s);
dist_slot *clg__dist_round_begin(clg_dist *d, size_t i, size_t rounds, dist_read_fn read,
                                 cl_int *cl_err, float *zero, size_t zero_floats);
cl_int clg__dist_rounds_end(clg_dist *d, cl_int cl_err);

/* Round buffers for the ordered sum, and the sum itself: the accumulator
 * of every rank replaced by the sum over ranks in rank order. A local
 * OpenCL failure keeps this rank in the exchange (with what it has) so
 * that no other rank waits forever; the status says so. */
clg_status clg__dist_reduce_init(clg_dist *d);
clg_status clg__dist_reduce(clg_dist *d);
/* sum[k] = recv[k] + recv[stride + k] + ... over the R ranks' parts, in
 * rank order (the same bits on every rank and in every mode). */
void clg__dist_sum_ranks(const float *recv, size_t stride, int n, int R, float *sum);

/* ZeRO-1: the spans and shards of the layout space and the round buffers;
 * the reduce-scatter of the accumulators into each rank's shard; the
 * all-gather of the updated params; the gather of the states on rank 0
 * for a checkpoint (images[s] on rank 0: the layout space's state s). The
 * exchanges keep a rank with a local OpenCL failure in step, as
 * clg__dist_reduce does. */
clg_status clg__dist_zero1_init(clg_dist *d);
void clg__dist_zero1_free(clg_dist *d);
clg_status clg__dist_reduce_scatter(clg_dist *d);
clg_status clg__dist_gather_params(clg_dist *d);
clg_status clg__dist_gather_states(clg_dist *d, void ***images, size_t *n_states);
void clg__dist_free_images(void **images, size_t n_states);

#endif /* CLGRAD_MPI_DIST_H */
