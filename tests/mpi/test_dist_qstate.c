/* test_dist_qstate.c - ZeRO-1 with Q8 or Q4 optimizer states (argument
 * "q8" or "q4"): R ranks, each keeping the codes and absmax values of its
 * shard only, against one process with the same states, and checkpoints
 * across R.
 *
 * AdamW, 6 micro-steps per update over all ranks, uneven weights, 6
 * updates; 21,120 parameters in four tensors (one below state_min_size,
 * whose states stay fp32 in a chunk of their own), so that every shard
 * holds several absmax blocks and, at R = 2 and 3, a shard boundary falls
 * inside a quantized tensor (both asserted).
 *
 * The tolerance, params rel L2 <= 1e-6, holds with room: it is in fact 0.
 * The gradients are multiples of 2^-10 in [-1, 1) and the weights of 2^-2,
 * so every sum of weighted gradients is exact in fp32 in any order: the
 * ranks' ordered sum equals one accumulator's bit for bit. Without clipping,
 * loss scaling or a non-finite check no sum of squares enters the update,
 * and a shard's update runs the same kernel over the same absmax blocks
 * (shards are whole 1024-element segments) as the whole model's. So the
 * params, codes and absmax values must be equal bit for bit; the test
 * requires that of the states, and rel L2 <= 1e-6 of the params.
 *
 * Runs compared with one uninterrupted process (its final checkpoint):
 *  - R ranks for 6 updates (gathered checkpoints after 3 and 6);
 *  - one process from R's checkpoint after 3 (R -> 1);
 *  - R ranks from one process's checkpoint after 3 (1 -> R);
 *  - at R = 3, also ranks 0-1 as R' = 2 from the 3-rank checkpoint
 *    (3 -> 2), and 3 ranks from a checkpoint ranks 0-1 wrote (2 -> 3).
 * Each final state is read from a checkpoint the run gathered, loaded into
 * an unsharded model: the gathered save, the sharded load and the gather of
 * codes and absmax are all on the path. Each rank's absmax memory is at
 * most 1/R of the whole's plus one segment's blocks per state. */
#include "dist_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { T = 6, UPDATES = 6, HALF = 3, N_TENSORS = 4, SEGMENT = 1024, PATHS = 9 };
static const size_t counts[N_TENSORS] = {9000, 17, 6003, 6100};
#define REL_L2_MAX 1e-6

static clg_dtype state_dtype;
static char paths[PATHS][512];
enum { REF, REF_HALF, DIST, DIST_HALF, R_TO_1, ONE_TO_R, THREE_TO_2, TWO, TWO_TO_3 };

static clg_config config(unsigned k)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.lr = 1e-2f;
    c.weight_decay = 0.01f;
    c.accum_steps = k;
    c.state_dtype = state_dtype;
    return c;
}

static float weight(unsigned u, unsigned j) { return 1.0f + 0.25f * (float)((7 * j + u) % 5); }

/* du_gradient on a grid of 2^-10: exact sums in any order (see above). */
static void gradient(float *g, size_t n, unsigned u, unsigned j)
{
    du_gradient(g, n, u, j);
    for (size_t i = 0; i < n; i++)
        g[i] = rintf(g[i] * 1024.0f) / 1024.0f;
}

/* Updates [u0, u1) on the ranks of comm, ZeRO-1 (comm MPI_COMM_NULL: one
 * process with clg_step), from checkpoint `load` if given, saving a
 * checkpoint `half` after update HALF if given and `final` at the end. */
static void run(clg_context *ctx, MPI_Comm comm, unsigned u0, unsigned u1, const char *load,
                const char *half, const char *final)
{
    int r = 0, R = 1;
    if (comm != MPI_COMM_NULL) {
        MPI_Comm_rank(comm, &r);
        MPI_Comm_size(comm, &R);
    }
    unsigned k = T / (unsigned)R;
    clg_config c = config(k);
    clg_model *m = du_model_sharded(ctx, &c, counts, N_TENSORS, (unsigned)r,
                                    comm != MPI_COMM_NULL ? (unsigned)R : 0);
    if (load)
        DU_OK(clg_checkpoint_load(m, load, NULL, NULL));
    clg_grads *g;
    DU_OK(clg_grads_create(m, CLG_FP32, &g));
    clg_dist *d = NULL;
    if (comm != MPI_COMM_NULL)
        DU_OK(clg_dist_create(m, comm, CLG_DIST_ZERO1, &d));
    size_t n = (size_t)clg_model_param_count(m);
    float *host = malloc(n * sizeof *host);
    if (!host)
        du_fail("out of memory");
    for (unsigned u = u0; u < u1; u++) {
        for (unsigned i = 0; i < k; i++) {
            unsigned j = (unsigned)r * k + i; /* this rank's share of the T */
            gradient(host, n, u, j);
            DU_OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
            if (d)
                DU_OK(clg_dist_step(d, g, weight(u, j), NULL));
            else
                DU_OK(clg_step(m, g, weight(u, j), NULL, NULL));
        }
        for (int i = 0; i < 2; i++) {
            const char *path = i == 0 ? (u + 1 == HALF ? half : NULL) : u + 1 == u1 ? final : NULL;
            if (path && d)
                DU_OK(clg_dist_checkpoint_save(d, path, NULL, NULL, 0));
            else if (path)
                DU_OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
        }
    }
    free(host);
    clg_dist_destroy(d);
    clg_grads_destroy(g);
    clg_model_destroy(m);
}

/* The layout-space position of tensor t's first element. */
static uint64_t tensor_position(clg_model *m, int t)
{
    clg_view v, cv;
    DU_OK(clg_model_param_view(m, t, &v));
    uint64_t pos = 0;
    for (size_t c = 0; c < clg_model_chunk_count(m); c++) {
        DU_OK(clg_model_chunk_view(m, CLG_PART_PARAMS, c, &cv));
        if (cv.mem == v.mem)
            return pos + v.offset;
        pos += cv.count;
    }
    du_fail("tensor %d is in no chunk", t);
}

/* The geometry the test claims: a shard boundary inside a quantized tensor
 * and several absmax blocks in every shard; and each rank's absmax bytes
 * at most 1/R of the whole's plus one segment's blocks per state. */
static void check_geometry(clg_context *ctx, int R)
{
    clg_config c = config(T / (unsigned)R);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    clg_model *m = du_model_sharded(ctx, &c, counts, N_TENSORS, (unsigned)rank, (unsigned)R);
    uint64_t block = state_dtype == CLG_Q8 ? 256 : 128, inside = 0;
    for (int s = 1; s < R; s++) {
        uint64_t first;
        DU_OK(clg_model_shard_range(m, (unsigned)s, &first, NULL, NULL));
        for (int t = 0; t < N_TENSORS; t++) {
            uint64_t p = tensor_position(m, t);
            inside += counts[t] >= c.state_min_size && p < first && first < p + counts[t];
        }
    }
    for (int s = 0; s < R; s++) {
        uint64_t first, count, scales;
        DU_OK(clg_model_shard_range(m, (unsigned)s, &first, &count, NULL));
        DU_OK(clg_model_state_extent(m, 0, first, count, NULL, NULL, NULL, &scales));
        if (scales < 2)
            du_fail("shard %d of %d holds %llu absmax blocks of state 0, want several", s, R,
                    (unsigned long long)scales);
    }
    if (inside != (uint64_t)(R - 1))
        du_fail("%llu of the %d shard boundaries fall inside a quantized tensor, want all",
                (unsigned long long)inside, R - 1);
    clg_model_plan p = clg_model_plan_init(), whole = clg_model_plan_init();
    DU_OK(clg_model_memory(m, &p));
    clg_config cw = config(T);
    clg_model *w = du_model(ctx, &cw, counts, N_TENSORS);
    DU_OK(clg_model_memory(w, &whole));
    unsigned long long mine = p.state_scales, sum = 0, most = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    unsigned long long bound = whole.state_scales / (unsigned)R + 2 * 4 * SEGMENT / block;
    if (rank == 0)
        printf("R = %d: shard boundaries inside a tensor: %llu; absmax bytes per rank: largest "
               "%llu, all ranks %llu, one process %llu (bound %llu)\n",
               R, (unsigned long long)inside, most, sum,
               (unsigned long long)whole.state_scales, bound);
    if (sum != whole.state_scales || most > bound)
        du_fail("absmax bytes: largest %llu, sum %llu, whole %llu, bound %llu", most, sum,
                (unsigned long long)whole.state_scales, bound);
    clg_model_destroy(w);
    clg_model_destroy(m);
}

/* A checkpoint's params and every tensor's raw states (codes, then absmax),
 * loaded into an unsharded model. */
typedef struct snapshot {
    float *params;
    size_t n;
    unsigned char *states;
    size_t bytes;
} snapshot;

static snapshot take(clg_context *ctx, const char *path)
{
    clg_config c = config(T);
    clg_model *m = du_model(ctx, &c, counts, N_TENSORS);
    DU_OK(clg_checkpoint_load(m, path, NULL, NULL));
    snapshot s = {.n = (size_t)clg_model_param_count(m)};
    s.params = malloc(s.n * sizeof *s.params);
    s.states = malloc(8 * s.n + 4096);
    if (!s.params || !s.states)
        du_fail("out of memory");
    DU_OK(clg_model_download_params(m, CLG_ALL_TENSORS, s.params, s.n, NULL));
    for (int st = 0; st < (int)clg_model_state_count(m); st++)
        for (int t = 0; t < N_TENSORS; t++) {
            clg_dtype dt;
            size_t code_bytes, n_scales;
            DU_OK(clg_model_state_format(m, st, t, &dt, &code_bytes, &n_scales));
            if (dt != (counts[t] < c.state_min_size ? CLG_FP32 : state_dtype))
                du_fail("state %d of tensor %d is dtype %d", st, t, (int)dt);
            unsigned char *at = s.states + s.bytes;
            DU_OK(clg_model_download_state_raw(m, st, t, at, code_bytes,
                                               (float *)(at + code_bytes), n_scales, NULL));
            s.bytes += code_bytes + 4 * n_scales;
        }
    clg_model_destroy(m);
    return s;
}

/* A run's final checkpoint against the uninterrupted process's; 1 if bad. */
static int compare(clg_context *ctx, const snapshot *ref, const char *what, const char *path)
{
    snapshot s = take(ctx, path);
    double e = du_rel_l2(s.params, ref->params, s.n);
    int same = s.bytes == ref->bytes && memcmp(s.states, ref->states, s.bytes) == 0;
    printf("%-34s params rel L2 %.3g (max %g), codes and absmax %s\n", what, e, REL_L2_MAX,
           same ? "bitwise equal" : "DIFFER");
    free(s.params);
    free(s.states);
    remove(path);
    return !(e <= REL_L2_MAX) || !same;
}

int main(int argc, char **argv)
{
    int rank, R;
    clg_context *ctx = du_init(&argc, &argv, &rank, &R);
    if (argc < 2 || (strcmp(argv[1], "q8") != 0 && strcmp(argv[1], "q4") != 0))
        du_fail("usage: test_dist_qstate q8|q4");
    state_dtype = strcmp(argv[1], "q8") == 0 ? CLG_Q8 : CLG_Q4;
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD); /* one set of names on every rank */
    const char *dir = getenv("TMPDIR");
    for (int i = 0; i < PATHS; i++)
        snprintf(paths[i], sizeof paths[i], "%s/clgrad-dist-qstate-%d-%d.ckpt",
                 dir ? dir : "/tmp", id, i);
    check_geometry(ctx, R);

    if (rank == 0) /* the uninterrupted process */
        run(ctx, MPI_COMM_NULL, 0, UPDATES, NULL, paths[REF_HALF], paths[REF]);
    MPI_Barrier(MPI_COMM_WORLD);
    run(ctx, MPI_COMM_WORLD, 0, UPDATES, NULL, paths[DIST_HALF], paths[DIST]);
    if (rank == 0) /* R -> 1 */
        run(ctx, MPI_COMM_NULL, HALF, UPDATES, paths[DIST_HALF], NULL, paths[R_TO_1]);
    run(ctx, MPI_COMM_WORLD, HALF, UPDATES, paths[REF_HALF], NULL, paths[ONE_TO_R]); /* 1 -> R */
    if (R == 3) {
        MPI_Comm two;
        MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &two);
        if (rank < 2) {
            run(ctx, two, HALF, UPDATES, paths[DIST_HALF], NULL, paths[THREE_TO_2]);
            run(ctx, two, 0, HALF, NULL, NULL, paths[TWO]);
            MPI_Comm_free(&two);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        run(ctx, MPI_COMM_WORLD, HALF, UPDATES, paths[TWO], NULL, paths[TWO_TO_3]); /* 2 -> 3 */
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int bad = 0;
    if (rank == 0) {
        snapshot ref = take(ctx, paths[REF]);
        char what[64];
        printf("ZeRO-1 with %s states, R = %d, %zu params, %d updates of %d micro-steps, "
               "against one process:\n",
               argv[1], R, ref.n, UPDATES, T);
        snprintf(what, sizeof what, "R = %d:", R);
        bad |= compare(ctx, &ref, what, paths[DIST]);
        snprintf(what, sizeof what, "R = %d checkpoint -> 1 process:", R);
        bad |= compare(ctx, &ref, what, paths[R_TO_1]);
        snprintf(what, sizeof what, "1 process checkpoint -> R = %d:", R);
        bad |= compare(ctx, &ref, what, paths[ONE_TO_R]);
        if (R == 3) {
            bad |= compare(ctx, &ref, "R = 3 checkpoint -> R = 2:", paths[THREE_TO_2]);
            bad |= compare(ctx, &ref, "R = 2 checkpoint -> R = 3:", paths[TWO_TO_3]);
            remove(paths[TWO]);
        }
        remove(paths[DIST_HALF]);
        remove(paths[REF_HALF]);
        free(ref.params);
        free(ref.states);
        remove(paths[REF]);
        if (bad)
            fprintf(stderr, "FAIL: a run differs from the uninterrupted process\n");
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    du_finish(ctx);
    return bad;
}
