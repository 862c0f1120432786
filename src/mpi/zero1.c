/* zero1.c - the exchanges of ZeRO-1, host-staged, in the layout space
 * (the model's chunks end to end, clg_model_chunk_view) where the core
 * cuts its shards (clg_model_shard_range): rank r owns
 * [first[r], first[r] + count[r]).
 *
 * Both exchanges go in rounds: in round o every rank handles elements
 * [o, o + PIECE) of every shard, so host memory stays a few MiB whatever
 * the model.
 *  - Reduce-scatter: each rank stages its accumulator's part of every
 *    shard, MPI_Alltoallv brings each owner the R contributions to its
 *    own, the owner adds them in rank order 0..R-1 (fixed, as reduce.c's
 *    sum) and writes the sum into its accumulator's shard: bitwise what
 *    DDP's sum holds there.
 *  - All-gather: each rank stages its shard's updated params,
 *    MPI_Allgatherv gives every rank every shard, and each writes the
 *    others' into its params.
 * In both, round o+1's copies from the device run while round o is in MPI
 * (stage.c's two slots of pinned memory). */
#include "dist.h"

#include <stdlib.h>
#include <string.h>

/* Elements per shard per round: 1 Mi elements across all shards, as
 * reduce.c's rounds. */
#define ROUND ((size_t)1 << 20)

static size_t piece_of(const clg_dist *d)
{
    size_t p = ROUND / (size_t)d->size;
    return p ? p : 1;
}

static clg_status chunk_spans(clg_dist *d, clg_part part, dist_span **out)
{
    size_t nc = clg_model_chunk_count(d->model);
    dist_span *s = calloc(nc ? nc : 1, sizeof *s);
    if (s == NULL)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_create: no host memory for %zu chunks", nc);
    size_t flat = 0;
    for (size_t c = 0; c < nc; c++) {
        clg_view v;
        if (clg_model_chunk_view(d->model, part, c, &v) != CLG_SUCCESS) {
            free(s);
            return clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE,
                                  "clg_dist_create: chunk %zu: %s", c,
                                  clg_last_error(clg_model_context(d->model)));
        }
        s[c] = (dist_span){v.mem, v.offset, v.count, flat};
        flat += v.count;
    }
    *out = s;
    d->n_spans = nc;
    d->n = flat;
    return CLG_SUCCESS;
}

clg_status clg__dist_zero1_init(clg_dist *d)
{
    unsigned index = 0, shards = 0;
    clg_model_shard(d->model, &index, &shards);
    if (shards != (unsigned)d->size || index != (unsigned)d->rank)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_MISMATCH,
                              "clg_dist_create: ZeRO-1 on rank %d of %d needs the model's shard "
                              "%d of %d (clg_model_set_shard before clg_model_finalize); it has "
                              "shard %u of %u",
                              d->rank, d->size, d->rank, d->size, index, shards);
    clg_status st = chunk_spans(d, CLG_PART_ACC, &d->spans);
    if (st == CLG_SUCCESS)
        st = chunk_spans(d, CLG_PART_PARAMS, &d->pspans);
    if (st != CLG_SUCCESS)
        return st;
    d->first = calloc((size_t)d->size, sizeof *d->first);
    d->count = calloc((size_t)d->size, sizeof *d->count);
    if (!d->first || !d->count)
        return clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                              "clg_dist_create: no host memory for %d shard ranges", d->size);
    size_t piece = piece_of(d);
    st = clg__dist_slots_init(d, piece * (size_t)d->size, piece * (size_t)d->size, piece);
    for (int r = 0; r < d->size && st == CLG_SUCCESS; r++)
        if (clg_model_shard_range(d->model, (unsigned)r, &d->first[r], &d->count[r], NULL) !=
            CLG_SUCCESS)
            st = clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE, "clg_dist_create: shard %d: %s",
                                r, clg_last_error(clg_model_context(d->model)));
    return st;
}

void clg__dist_zero1_free(clg_dist *d)
{
    free(d->pspans);
    free(d->first);
    free(d->count);
    d->pspans = NULL;
    d->first = d->count = NULL;
}

/* Round o's part of shard r. */
static size_t part(const clg_dist *d, int r, uint64_t o)
{
    size_t piece = piece_of(d);
    if (d->count[r] <= o)
        return 0;
    uint64_t left = d->count[r] - o;
    return left < piece ? (size_t)left : piece;
}

static uint64_t largest_shard(const clg_dist *d)
{
    uint64_t m = 0;
    for (int r = 0; r < d->size; r++)
        m = d->count[r] > m ? d->count[r] : m;
    return m;
}

static clg_status exchange_failed(const clg_dist *d, const char *what, uint64_t o, int err)
{
    char e[256];
    return clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                          "clg_dist_step: the %s failed on rank %d (round at shard element "
                          "%llu): %s",
                          what, d->rank, (unsigned long long)o,
                          clg__dist_mpi_string(d, err, e, sizeof e));
}

static clg_status staging_failed(const clg_dist *d, const char *what, cl_int err)
{
    return clg__dist_fail(clg__dist_model(d), (clg_status)err,
                          "clg_dist_step: staging the %s through the host failed on rank %d: %s",
                          what, d->rank, clg_status_string((clg_status)err));
}

static size_t rounds_of(const clg_dist *d)
{
    return (size_t)((largest_shard(d) + piece_of(d) - 1) / piece_of(d));
}

/* Round i's accumulator, every shard's part, into slot s (reduce-scatter). */
static cl_int read_parts(const clg_dist *d, size_t i, dist_slot *s)
{
    size_t piece = piece_of(d);
    uint64_t o = (uint64_t)i * piece;
    cl_int err = CL_SUCCESS;
    for (int r = 0; r < d->size && err == CL_SUCCESS; r++)
        err = clg__dist_copy(d, d->spans, d->first[r] + o, part(d, r, o),
                             s->stage + (size_t)r * piece, 0);
    return err == CL_SUCCESS ? clg__dist_mark(d, s) : err;
}

/* Round i's params of this rank's shard into slot s (all-gather). */
static cl_int read_own(const clg_dist *d, size_t i, dist_slot *s)
{
    uint64_t o = (uint64_t)i * piece_of(d);
    cl_int err = clg__dist_copy(d, d->pspans, d->first[d->rank] + o, part(d, d->rank, o), s->sum,
                                0);
    return err == CL_SUCCESS ? clg__dist_mark(d, s) : err;
}

/* Round o's element count of every shard and where each goes in a
 * round's buffer (one piece per rank). */
static void round_counts(const clg_dist *d, uint64_t o, int *cnt, int *displ)
{
    for (int r = 0; r < d->size; r++) {
        cnt[r] = (int)part(d, r, o);
        displ[r] = r * (int)piece_of(d);
    }
}

/* The elements of the other ranks' shards in a round's counts. */
static uint64_t others(const clg_dist *d, const int *cnt)
{
    uint64_t n = 0;
    for (int r = 0; r < d->size; r++)
        n += r == d->rank ? 0 : (uint64_t)cnt[r];
    return n;
}

/* Round 0's copies into slot 0, started before the first round begins. */
static cl_int first_round(clg_dist *d, dist_read_fn read)
{
    return rounds_of(d) > 0 ? read(d, 0, &d->slot[0]) : CL_SUCCESS;
}

/* After the rounds: the staging's failure (of `what`) unless the
 * exchange failed first. */
static clg_status rounds_end(clg_dist *d, clg_status st, cl_int cl_err, const char *what)
{
    cl_err = clg__dist_rounds_end(d, cl_err);
    return st == CLG_SUCCESS && cl_err != CL_SUCCESS ? staging_failed(d, what, cl_err) : st;
}

clg_status clg__dist_reduce_scatter(clg_dist *d)
{
    const int R = d->size, me = d->rank;
    const size_t piece = piece_of(d), rounds = rounds_of(d);
    int *cnt = d->xcount, *displ = cnt + R, *rcnt = cnt + 2 * R, *rdispl = cnt + 3 * R;
    cl_int cl_err = first_round(d, read_parts);
    clg_dist_counters *c = &d->counters;
    clg_status st = CLG_SUCCESS;
    size_t i = 0;
    for (uint64_t o = 0; o < largest_shard(d); o += piece, i++) {
        const int mine = (int)part(d, me, o);
        round_counts(d, o, cnt, displ);
        for (int r = 0; r < R; r++) {
            rcnt[r] = mine;
            rdispl[r] = r * (int)piece;
        }
        dist_slot *s =
            clg__dist_round_begin(d, i, rounds, read_parts, &cl_err, NULL, piece * (size_t)R);
        double t1 = MPI_Wtime();
        MPI_Request req;
        int err = clg__dist_wait(d, MPI_Ialltoallv(s->stage, cnt, displ, MPI_FLOAT, s->recv,
                                                   rcnt, rdispl, MPI_FLOAT, d->comm, &req),
                                 &req);
        c->last_comm_seconds += MPI_Wtime() - t1;
        if (err != MPI_SUCCESS) {
            st = exchange_failed(d, "reduce-scatter of the accumulator", o, err);
            break;
        }
        clg__dist_sum_ranks(s->recv, piece, mine, R, s->sum);
        if (cl_err == CL_SUCCESS) /* waited for two rounds on, or at the end */
            cl_err = clg__dist_copy(d, d->spans, d->first[me] + o, (size_t)mine, s->sum, 1);
        c->last_bytes_sent += others(d, cnt) * sizeof(float);
        c->last_bytes_received += (uint64_t)mine * (uint64_t)(R - 1) * sizeof(float);
    }
    return rounds_end(d, st, cl_err, "accumulator");
}

clg_status clg__dist_gather_params(clg_dist *d)
{
    const int R = d->size, me = d->rank;
    const size_t piece = piece_of(d), rounds = rounds_of(d);
    int *cnt = d->xcount, *displ = cnt + R;
    cl_int cl_err = first_round(d, read_own);
    clg_dist_counters *c = &d->counters;
    clg_status st = CLG_SUCCESS;
    size_t i = 0;
    for (uint64_t o = 0; o < largest_shard(d); o += piece, i++) {
        round_counts(d, o, cnt, displ);
        const int mine = cnt[me];
        dist_slot *s =
            clg__dist_round_begin(d, i, rounds, read_own, &cl_err, d->slot[i % 2].sum, piece);
        double t1 = MPI_Wtime();
        MPI_Request req;
        int err = clg__dist_wait(d, MPI_Iallgatherv(s->sum, mine, MPI_FLOAT, s->recv, cnt,
                                                    displ, MPI_FLOAT, d->comm, &req),
                                 &req);
        c->last_comm_seconds += MPI_Wtime() - t1;
        if (err != MPI_SUCCESS) {
            st = exchange_failed(d, "all-gather of the params", o, err);
            break;
        }
        for (int r = 0; r < R && cl_err == CL_SUCCESS; r++)
            if (r != me)
                cl_err = clg__dist_copy(d, d->pspans, d->first[r] + o, (size_t)cnt[r],
                                        s->recv + displ[r], 1);
        c->last_bytes_sent += (uint64_t)mine * (uint64_t)(R - 1) * sizeof(float);
        c->last_bytes_received += others(d, cnt) * sizeof(float);
    }
    return rounds_end(d, st, cl_err, "params");
}
