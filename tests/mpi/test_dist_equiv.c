/* test_dist_equiv.c - data parallelism (clg_dist, DDP, or ZeRO-1 when
 * run with the argument "zero1") against one process: R ranks x K micro-steps per cycle give the params of a
 * single model (on rank 0, beside its distributed one) taking the same
 * R*K micro-steps per cycle with clg_step, for 20 updates of AdamW with
 * clipping (engaged: clip_norm below the gradients' norm) and dynamic loss
 * scaling (growth every 5 cycles; one cycle holds an inf, which every rank
 * and the single model skip, backing the scale off), uneven weights per
 * micro-step (mean mode divides by the global sum of weights), 1,150,041
 * parameters in several chunks (CLGRAD_MAX_ALLOC = 4 MiB) and two rounds
 * of the exchange (1 Mi elements each).
 *
 * Checked:
 *  - params and both Adam states of rank 0's distributed model against the
 *    single model: relative L2 <= 1e-6 (the sum over ranks adds the same
 *    terms in another order than one accumulator does: fp32 rounding,
 *    about 1e-7 relative on the gradient, carried through 20 updates);
 *  - the same applied and skipped updates and the same loss scale;
 *  - every rank's params and states bitwise equal to rank 0's;
 *  - bytes per update: what the ordered reduce-scatter + allgather must
 *    move, 2 (R-1)/R * 4 bytes per element each way, plus R-1 agreement
 *    records of 256 bytes per agreement (3 per update; ZeRO-1: 5);
 *  - ZeRO-1: the states are taken from a checkpoint that clg_dist gathered
 *    (clg_dist_checkpoint_save) and rank 0 loaded into an unsharded model,
 *    and each rank's state memory, through the context's accounting, is at
 *    most 1/R of the whole model's plus one 1024-element segment per
 *    state, the shards' together exactly the whole's. */
#include "dist_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K = 3, UPDATES = 20, INF_UPDATE = 7, N_TENSORS = 5, AGREE_RECORD = 256, SEGMENT = 1024 };
static const size_t counts[N_TENSORS] = {600011, 400009, 17, 150003, 1};
#define REL_L2_MAX 1e-6

static clg_config config(unsigned k)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.lr = 1e-2f;
    c.weight_decay = 0.01f;
    c.accum_steps = k;
    c.clip_norm = 0.05f;
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    c.loss_scale_init = 1024.0f;
    c.loss_scale_interval = 5;
    return c;
}

/* Uneven weights: a function of (update, global micro-step). */
static float weight(unsigned u, unsigned j) { return 1.0f + 0.25f * (float)((7 * j + u) % 5); }

static void gradient(float *g, size_t n, unsigned u, unsigned j, unsigned last_j)
{
    du_gradient(g, n, u, j);
    if (u == INF_UPDATE && j == last_j)
        g[n / 3] = INFINITY;
}

static void download_all(clg_model *m, float *out, size_t n)
{
    DU_OK(clg_model_download_params(m, CLG_ALL_TENSORS, out, n, NULL));
    DU_OK(clg_model_download_state(m, 0, CLG_ALL_TENSORS, out + n, n, NULL));
    DU_OK(clg_model_download_state(m, 1, CLG_ALL_TENSORS, out + 2 * n, n, NULL));
}

/* The exact bytes each way per update, agreements included. DDP: per round
 * of len flat elements, (len - mine) + mine * (R-1). ZeRO-1: the
 * reduce-scatter and the all-gather of the layout space: (total - shard)
 * + shard * (R-1), with two more agreements (the norm, the gather). */
static uint64_t expected_bytes(clg_dist *d, clg_model *m, size_t n, int rank, int R)
{
    uint64_t bytes = 0;
    if (clg_dist_get_mode(d) == CLG_DIST_ZERO1) {
        uint64_t shard, total;
        DU_OK(clg_model_shard_range(m, (unsigned)rank, NULL, &shard, &total));
        return ((total - shard) + shard * (uint64_t)(R - 1)) * 4 +
               5ull * (uint64_t)(R - 1) * AGREE_RECORD;
    }
    for (size_t a = 0; a < n; a += (size_t)1 << 20) {
        size_t len = n - a < ((size_t)1 << 20) ? n - a : (size_t)1 << 20;
        size_t b0 = (size_t)((unsigned long long)len * (unsigned)rank / (unsigned)R);
        size_t b1 = (size_t)((unsigned long long)len * (unsigned)(rank + 1) / (unsigned)R);
        bytes += ((len - (b1 - b0)) + (b1 - b0) * (size_t)(R - 1)) * 4;
    }
    return bytes + 3ull * (uint64_t)(R - 1) * AGREE_RECORD;
}

/* ZeRO-1: params from m, states from a gathered checkpoint loaded into an
 * unsharded model (rank 0; the others get params only). */
static void download_zero1(clg_dist *d, clg_model *m, clg_context *ctx, float *out, size_t n,
                           int rank)
{
    DU_OK(clg_model_download_params(m, CLG_ALL_TENSORS, out, n, NULL));
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/clgrad-dist-equiv-%d.ckpt", dir ? dir : "/tmp",
             (int)getpid()); /* rank 0 alone writes and reads it */
    DU_OK(clg_dist_checkpoint_save(d, path, NULL, NULL, 0));
    memset(out + n, 0, 2 * n * sizeof *out);
    if (rank == 0) {
        clg_config c = config(K);
        clg_model *u = du_model(ctx, &c, counts, N_TENSORS);
        DU_OK(clg_checkpoint_load(u, path, NULL, NULL));
        float *p = malloc(n * sizeof *p);
        if (!p)
            du_fail("out of memory");
        DU_OK(clg_model_download_params(u, CLG_ALL_TENSORS, p, n, NULL));
        if (memcmp(p, out, n * sizeof *p) != 0)
            du_fail("the gathered checkpoint's params differ from the model's");
        free(p);
        DU_OK(clg_model_download_state(u, 0, CLG_ALL_TENSORS, out + n, n, NULL));
        DU_OK(clg_model_download_state(u, 1, CLG_ALL_TENSORS, out + 2 * n, n, NULL));
        clg_model_destroy(u);
        remove(path);
    }
}

/* Each rank's states bytes against the whole model's (ZeRO-1). */
static void check_state_memory(clg_model *m, int rank, int R)
{
    clg_model_plan p = clg_model_plan_init(), whole = clg_model_plan_init();
    DU_OK(clg_model_memory(m, &p));
    clg_config c = config(K);
    DU_OK(clg_model_estimate(&c, clg_model_param_count(m), &whole));
    unsigned long long mine = p.states, sum = 0, most = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    /* the whole model's states as laid out (padding included): the sum */
    unsigned long long bound = sum / (unsigned)R + 2ull * 4 * SEGMENT;
    if (rank == 0)
        printf("ZeRO-1 states per rank: largest %llu bytes of %llu (1/R + one segment per "
               "state: %llu); unsharded estimate %llu; device bytes of rank 0's model %llu\n",
               most, sum, bound, (unsigned long long)whole.states,
               (unsigned long long)p.total);
    if (most > bound || sum < whole.states)
        du_fail("ZeRO-1 states: largest %llu, sum %llu, bound %llu, whole %llu", most, sum,
                bound, (unsigned long long)whole.states);
}

int main(int argc, char **argv)
{
    int rank, R;
    clg_context *ctx = du_init(&argc, &argv, &rank, &R);
    clg_config c = config(K);
    int zero1 = argc > 1 && strcmp(argv[1], "zero1") == 0;
    clg_model *m = du_model_sharded(ctx, &c, counts, N_TENSORS, (unsigned)rank,
                                    zero1 ? (unsigned)R : 0);
    clg_grads *g;
    DU_OK(clg_grads_create(m, CLG_FP32, &g));
    clg_dist *d;
    DU_OK(clg_dist_create(m, MPI_COMM_WORLD, zero1 ? CLG_DIST_ZERO1 : CLG_DIST_DDP, &d));
    if (clg_dist_rank(d) != rank || clg_dist_size(d) != R)
        du_fail("clg_dist_rank/size %d/%d, want %d/%d", clg_dist_rank(d), clg_dist_size(d), rank,
                R);
    /* rank 0's single-process model: R*K micro-steps per cycle */
    clg_model *single = NULL;
    clg_grads *sg = NULL;
    if (rank == 0) {
        clg_config cs = config((unsigned)R * K);
        single = du_model(ctx, &cs, counts, N_TENSORS);
        DU_OK(clg_grads_create(single, CLG_FP32, &sg));
    }
    size_t n = (size_t)clg_model_param_count(m);
    float *host = malloc(n * sizeof *host);
    if (!host)
        du_fail("out of memory");
    unsigned last_j = (unsigned)R * K - 1;
    int updates = 0;
    for (unsigned u = 0; u < UPDATES; u++) {
        for (unsigned i = 0; i < K; i++) {
            unsigned j = (unsigned)rank * K + i; /* this rank's share */
            gradient(host, n, u, j, last_j);
            DU_OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
            int upd = 0;
            DU_OK(clg_dist_step(d, g, weight(u, j), &upd));
            if (upd != (i == K - 1))
                du_fail("update %u micro-step %u: updated %d", u, i, upd);
            updates += upd;
        }
        for (unsigned j = 0; rank == 0 && j < (unsigned)R * K; j++) {
            gradient(host, n, u, j, last_j);
            DU_OK(clg_grads_upload(sg, CLG_ALL_TENSORS, host, n, NULL));
            DU_OK(clg_step(single, sg, weight(u, j), NULL, NULL));
        }
    }
    if (updates != UPDATES)
        du_fail("%d cycle ends, want %d", updates, UPDATES);

    float *all = malloc(3 * n * sizeof *all), *root = malloc(3 * n * sizeof *root);
    if (!all || !root)
        du_fail("out of memory");
    if (zero1)
        download_zero1(d, m, ctx, all, n, rank);
    else
        download_all(m, all, n);
    memcpy(root, all, 3 * n * sizeof *all);
    /* every rank bitwise equal to rank 0 (in pieces: counts are ints); the
     * params only under ZeRO-1, where each rank holds its own states */
    size_t compared = zero1 ? n : 3 * n;
    for (size_t off = 0; off < compared; off += (size_t)1 << 24) {
        size_t len = compared - off < ((size_t)1 << 24) ? compared - off : (size_t)1 << 24;
        MPI_Bcast(root + off, (int)len, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    int differ = memcmp(all, root, compared * sizeof *all) != 0, any = 0;
    MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any)
        du_fail("ranks' params or states are not bitwise equal (this rank: %s)",
                differ ? "differs from rank 0" : "equal to rank 0");

    clg_dist_counters k = clg_dist_counters_init();
    DU_OK(clg_dist_counters_get(d, &k));
    uint64_t mine = expected_bytes(d, m, n, rank, R);
    if (zero1)
        check_state_memory(m, rank, R);
    if (k.updates != UPDATES || k.last_bytes_sent != mine || k.last_bytes_received != mine ||
        k.bytes_sent != mine * UPDATES)
        du_fail("counters: updates %llu, last sent %llu received %llu, total %llu; want %d, "
                "%llu",
                (unsigned long long)k.updates, (unsigned long long)k.last_bytes_sent,
                (unsigned long long)k.last_bytes_received, (unsigned long long)k.bytes_sent,
                UPDATES, (unsigned long long)mine);

    int bad = 0;
    if (rank == 0) {
        clg_stats sd = clg_stats_init(), ss = clg_stats_init();
        DU_OK(clg_model_stats(m, 1, &sd));
        DU_OK(clg_model_stats(single, 1, &ss));
        float *ref = malloc(3 * n * sizeof *ref);
        if (!ref)
            du_fail("out of memory");
        download_all(single, ref, n);
        double ep = du_rel_l2(all, ref, n), em = du_rel_l2(all + n, ref + n, n),
               ev = du_rel_l2(all + 2 * n, ref + 2 * n, n);
        printf("%s: R = %d, %zu params, %d updates (%llu applied, %llu skipped), loss scale %g, "
               "last clip coef %.4g (norm %.4g)\n",
               zero1 ? "ZeRO-1" : "DDP", R, n, UPDATES, (unsigned long long)sd.updates,
               (unsigned long long)sd.skipped_updates, (double)sd.loss_scale,
               (double)sd.clip_coef, (double)sd.grad_norm);
        printf("rel L2 vs one process with %d micro-steps: params %.3g, m %.3g, v %.3g (max %g)\n",
               R * K, ep, em, ev, REL_L2_MAX);
        printf("rank 0 per update: %llu bytes sent, %llu received (%.3f x 4 bytes/param), "
               "%.4f s in MPI, %.4f s waiting for copies, %.4f s the whole cycle end "
               "(round buffers %s)\n",
               (unsigned long long)k.last_bytes_sent, (unsigned long long)k.last_bytes_received,
               (double)k.last_bytes_sent / (4.0 * (double)n), k.comm_seconds / UPDATES,
               k.staging_seconds / UPDATES, k.cycle_seconds / UPDATES,
               k.pinned ? "pinned" : "pageable");
        if (!(k.cycle_seconds > 0.0 && k.last_cycle_seconds > 0.0)) {
            fprintf(stderr, "FAIL: cycle seconds %g, last %g\n", k.cycle_seconds,
                    k.last_cycle_seconds);
            bad = 1;
        }
        if (!(ep <= REL_L2_MAX && em <= REL_L2_MAX && ev <= REL_L2_MAX)) {
            fprintf(stderr, "FAIL: relative L2 above %g\n", REL_L2_MAX);
            bad = 1;
        }
        if (sd.updates != ss.updates || sd.skipped_updates != ss.skipped_updates ||
            sd.skipped_updates != 1 || sd.loss_scale != ss.loss_scale || sd.clip_coef >= 1.0f) {
            fprintf(stderr,
                    "FAIL: dist %llu/%llu updates/skipped scale %g coef %g; single %llu/%llu "
                    "scale %g (want 1 skip, clipping engaged)\n",
                    (unsigned long long)sd.updates, (unsigned long long)sd.skipped_updates,
                    (double)sd.loss_scale, (double)sd.clip_coef, (unsigned long long)ss.updates,
                    (unsigned long long)ss.skipped_updates, (double)ss.loss_scale);
            bad = 1;
        }
        free(ref);
        clg_grads_destroy(sg);
        clg_model_destroy(single);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    free(root);
    free(host);
    clg_dist_destroy(d);
    clg_grads_destroy(g);
    clg_model_destroy(m);
    du_finish(ctx);
    return bad;
}
