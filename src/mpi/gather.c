/* gather.c - ZeRO-1 checkpoints: every shard's optimizer states gathered
 * on rank 0 into the images clg_checkpoint_save_gathered takes.
 *
 * The image of state s is its codes over the whole layout space, then
 * (Q8/Q4 states) its absmax values; clg_model_state_extent says where each
 * shard's part of both lies. Shards are whole 1024-element segments, so a
 * shard's codes and absmax values are each one run of the image and no
 * absmax block is split between ranks: each rank downloads its shard's
 * codes and absmax values (clg_model_download_state_raw, CLG_SHARD_RANGE)
 * and two MPI_Gatherv lay them end to end on rank 0. */
#include "dist.h"

#include <limits.h>
#include <stdlib.h>

/* The unit the codes travel in: the bytes of one segment of Q4 codes, the
 * least a segment holds in any format, so that every shard's codes and
 * their offsets are whole units (and the counts stay ints for any layout
 * space below INT_MAX elements). */
#define CODE_UNIT 512

/* State s's part of shard r, and of the whole space (total). */
typedef struct extent {
    uint64_t code_offset, code_bytes, scale_offset, n_scales;
} extent;

static clg_status extent_of(clg_dist *d, int s, uint64_t first, uint64_t count, extent *e,
                            const char *who)
{
    if (clg_model_state_extent(d->model, s, first, count, &e->code_offset, &e->code_bytes,
                               &e->scale_offset, &e->n_scales) == CLG_SUCCESS)
        return CLG_SUCCESS;
    return clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE, "%s: rank %d: %s", who, d->rank,
                          clg_last_error(clg_model_context(d->model)));
}

static void free_images(void **images, size_t n)
{
    for (size_t s = 0; images != NULL && s < n; s++)
        free(images[s]);
    free(images);
}

void clg__dist_free_images(void **images, size_t n) { free_images(images, n); }

/* Every buffer the gathers need, agreed on by every rank: the gathers
 * below then cannot fail half-way for want of memory on one rank while
 * the others wait in them. *part: room for this rank's largest state
 * (codes, then absmax values). */
static clg_status allocate(clg_dist *d, size_t ns, void **images, void **part, const char *who)
{
    const int me = d->rank;
    clg_status st = CLG_SUCCESS;
    if (d->n > INT_MAX)
        st = clg__dist_fail(clg__dist_model(d), CLG_ERR_UNSUPPORTED,
                            "%s: the layout space's %llu elements exceed one MPI count (%d)", who,
                            (unsigned long long)d->n, INT_MAX);
    uint64_t most = 4;
    for (size_t s = 0; s < ns && st == CLG_SUCCESS; s++) {
        extent own, whole;
        st = extent_of(d, (int)s, d->first[me], d->count[me], &own, who);
        if (st == CLG_SUCCESS)
            st = extent_of(d, (int)s, 0, d->n, &whole, who);
        uint64_t bytes = own.code_bytes + 4 * own.n_scales;
        most = st == CLG_SUCCESS && bytes > most ? bytes : most;
        if (st == CLG_SUCCESS && me == 0 &&
            (images[s] = calloc((size_t)(whole.code_bytes + 4 * whole.n_scales) + 1, 1)) == NULL)
            st = clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                                "%s: no host memory on rank 0 for state %zu of the whole model "
                                "(%llu elements)",
                                who, s, (unsigned long long)d->n);
    }
    if (st == CLG_SUCCESS && (*part = malloc((size_t)most)) == NULL)
        st = clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                            "%s: out of host memory", who);
    return clg__dist_agree(d, d->comm, me, d->size, st,
                           clg_last_error(clg_model_context(d->model)), 0.0, NULL, false, who);
}

/* The counts and displacements of state s's codes (in CODE_UNITs) and
 * absmax values across the ranks; extents were checked in allocate. */
static void layout(clg_dist *d, int s, int *cnt, int *displ, int *scnt, int *sdispl)
{
    for (int r = 0; r < d->size; r++) {
        extent e;
        clg_model_state_extent(d->model, s, d->first[r], d->count[r], &e.code_offset,
                               &e.code_bytes, &e.scale_offset, &e.n_scales);
        cnt[r] = (int)(e.code_bytes / CODE_UNIT);
        displ[r] = (int)(e.code_offset / CODE_UNIT);
        scnt[r] = (int)e.n_scales;
        sdispl[r] = (int)e.scale_offset;
    }
}

/* State s's two gathers; every rank takes part in both, whatever failed
 * before (st), so that none waits forever. */
static clg_status gather_state(clg_dist *d, int s, void *image, unsigned char *part,
                               clg_status st, const char *who)
{
    const int R = d->size, me = d->rank;
    int *cnt = d->xcount, *displ = cnt + R, *scnt = cnt + 2 * R, *sdispl = cnt + 3 * R;
    layout(d, s, cnt, displ, scnt, sdispl);
    size_t codes = (size_t)cnt[me] * CODE_UNIT;
    extent whole = {0};
    clg_model_state_extent(d->model, s, 0, d->n, NULL, &whole.code_bytes, NULL, NULL);
    if (st == CLG_SUCCESS &&
        clg_model_download_state_raw(d->model, s, CLG_SHARD_RANGE, part, codes,
                                     (float *)(part + codes), (size_t)scnt[me],
                                     NULL) != CLG_SUCCESS)
        st = clg__dist_fail(clg__dist_model(d), CLG_ERR_STATE, "%s: rank %d: %s", who, me,
                            clg_last_error(clg_model_context(d->model)));
    MPI_Datatype unit;
    MPI_Request req;
    int err = MPI_Type_contiguous(CODE_UNIT, MPI_BYTE, &unit);
    if (err == MPI_SUCCESS)
        err = MPI_Type_commit(&unit);
    if (err == MPI_SUCCESS) {
        err = clg__dist_wait(d, MPI_Igatherv(part, cnt[me], unit, image, cnt, displ, unit, 0,
                                             d->comm, &req),
                             &req);
        MPI_Type_free(&unit);
    }
    unsigned char *scales = me == 0 ? (unsigned char *)image + whole.code_bytes : NULL;
    int err2 = err == DIST_TIMED_OUT /* no one to gather with */
                   ? err
                   : clg__dist_wait(d, MPI_Igatherv(part + codes, scnt[me], MPI_FLOAT, scales,
                                                    scnt, sdispl, MPI_FLOAT, 0, d->comm, &req),
                                    &req);
    err = err != MPI_SUCCESS ? err : err2;
    if (err != MPI_SUCCESS && st == CLG_SUCCESS) {
        char e[256];
        st = clg__dist_fail(clg__dist_model(d), CLG_ERR_IO,
                            "%s: gathering state %d failed on rank %d: %s", who, s, me,
                            clg__dist_mpi_string(d, err, e, sizeof e));
    }
    return st;
}

clg_status clg__dist_gather_states(clg_dist *d, void ***out, size_t *n_out)
{
    const char *who = "clg_dist_checkpoint_save";
    *out = NULL;
    size_t ns = clg_model_state_count(d->model);
    *n_out = ns;
    void **images = calloc(ns ? ns : 1, sizeof *images);
    void *part = NULL;
    clg_status st = images != NULL ? CLG_SUCCESS
                                   : clg__dist_fail(clg__dist_model(d), CLG_ERR_OUT_OF_HOST_MEMORY,
                                                    "%s: out of host memory", who);
    if (st == CLG_SUCCESS)
        st = allocate(d, ns, images, &part, who);
    else /* still in the agreement, which every rank reaches */
        st = clg__dist_agree(d, d->comm, d->rank, d->size, st,
                             clg_last_error(clg_model_context(d->model)), 0.0, NULL, false, who);
    /* agreed: every rank runs every state's gathers, a local failure or not */
    bool agreed = st == CLG_SUCCESS;
    for (size_t s = 0; agreed && s < ns; s++)
        st = gather_state(d, (int)s, d->rank == 0 ? images[s] : NULL, part, st, who);
    if (clg__watch_expired(d->watch)) /* a gather may still be in flight from or into them */
        return st;
    free(part);
    if (st != CLG_SUCCESS) {
        free_images(images, ns);
        return st;
    }
    *out = images;
    return CLG_SUCCESS;
}
