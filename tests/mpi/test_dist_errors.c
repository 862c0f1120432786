/* test_dist_errors.c - failures of clg_dist that every rank must see the
 * same: a model that differs on one rank (one tensor's size; the
 * clip_norm of its config; a bf16 accumulator on the last rank only) makes
 * clg_dist_create fail on every rank with one status and a message naming
 * the difference and the rank; a bad weight on the last micro-step of one
 * rank makes clg_dist_step fail on every rank, dropping the cycle
 * everywhere (params unchanged), after which the next cycle updates on
 * every rank; the counters refuse a struct_size too small. ZeRO-1: a model
 * without shards, a wrong shard on one rank, and DDP on one rank while the
 * others run ZeRO-1 fail clg_dist_create everywhere; a bad weight drops
 * the cycle on every rank as under DDP; a checkpoint rank 0 cannot write
 * fails clg_dist_checkpoint_save on every rank, in both modes. */
#include "dist_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, R;
/* The context of every model here: libclgrad-mpi's failures are recorded on
 * it, as clgrad's own are. */
static clg_context *ctx_of_models;

/* Every rank got want, and the message names each needle. */
static void expect_everywhere(clg_status st, clg_status want, const char *what,
                              const char *n1, const char *n2)
{
    const char *msg = clg_last_error(ctx_of_models);
    int ok = st == want && (!n1 || strstr(msg, n1)) && (!n2 || strstr(msg, n2));
    if (!ok)
        fprintf(stderr, "rank %d: %s: %s (want %s), '%s' (want '%s', '%s')\n", rank, what,
                clg_status_string(st), clg_status_string(want), msg, n1 ? n1 : "",
                n2 ? n2 : "");
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all)
        du_fail("%s: not the same failure on every rank (above)", what);
    if (rank == 0)
        printf("%s: every rank %s: %s\n", what, clg_status_string(st), msg);
}

static clg_config base(void)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.accum_steps = 1;
    return c;
}

static void create_fails_mode(clg_context *ctx, const clg_config *c, const size_t *counts,
                              clg_dist_mode mode, unsigned shard, unsigned shards,
                              clg_status want, const char *what, const char *n1, const char *n2)
{
    clg_model *m = du_model_sharded(ctx, c, counts, 3, shard, shards);
    clg_dist *d = (clg_dist *)(uintptr_t)1;
    clg_status st = clg_dist_create(m, MPI_COMM_WORLD, mode, &d);
    if (d != NULL)
        du_fail("%s: *out not NULL after a failure", what);
    expect_everywhere(st, want, what, n1, n2);
    clg_model_destroy(m);
}

static void create_fails(clg_context *ctx, const clg_config *c, const size_t *counts,
                         clg_status want, const char *what, const char *n1, const char *n2)
{
    create_fails_mode(ctx, c, counts, CLG_DIST_DDP, 0, 0, want, what, n1, n2);
}

/* A bad weight at the cycle's end on the last rank only: every rank fails,
 * the cycle is dropped everywhere, and the next one updates. Then a
 * checkpoint into a directory that does not exist. */
static void bad_weight_and_save(clg_context *ctx, clg_dist_mode mode, const size_t *counts)
{
    int last = rank == R - 1;
    char rank_s[32];
    snprintf(rank_s, sizeof rank_s, "rank %d", R - 1);
    clg_config c = base();
    c.clip_norm = 1.0f; /* ZeRO-1 then agrees on the norm too */
    clg_model *m = du_model_sharded(ctx, &c, counts, 3, (unsigned)rank,
                                    mode == CLG_DIST_ZERO1 ? (unsigned)R : 0);
    clg_grads *g;
    DU_OK(clg_grads_create(m, CLG_FP32, &g));
    size_t n = (size_t)clg_model_param_count(m);
    float *host = malloc(n * sizeof *host), *before = malloc(n * sizeof *before),
          *after = malloc(n * sizeof *after);
    if (!host || !before || !after)
        du_fail("out of memory");
    clg_dist *d;
    DU_OK(clg_dist_create(m, MPI_COMM_WORLD, mode, &d));
    du_gradient(host, n, 0, (unsigned)rank);
    DU_OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
    DU_OK(clg_model_download_params(m, CLG_ALL_TENSORS, before, n, NULL));
    int upd = 7;
    clg_status st = clg_dist_step(d, g, last ? 0.0f : 1.0f, &upd);
    char what[96];
    snprintf(what, sizeof what, "%s: weight 0 on one rank",
             mode == CLG_DIST_ZERO1 ? "ZeRO-1" : "DDP");
    expect_everywhere(st, CLG_ERR_INVALID_ARGUMENT, what, rank_s, "weight 0");
    if (upd != 0)
        du_fail("*updated %d after a failed cycle end", upd);
    DU_OK(clg_model_download_params(m, CLG_ALL_TENSORS, after, n, NULL));
    if (memcmp(before, after, n * sizeof *after) != 0 || clg_micro_step_index(m) != 0)
        du_fail("the failed cycle changed the params or was not dropped");
    DU_OK(clg_dist_step(d, g, 1.0f, &upd));
    if (upd != 1)
        du_fail("the cycle after the failure did not update");
    snprintf(what, sizeof what, "%s: a checkpoint rank 0 cannot write",
             mode == CLG_DIST_ZERO1 ? "ZeRO-1" : "DDP");
    expect_everywhere(clg_dist_checkpoint_save(d, "/nonexistent-clgrad-dir/x.ckpt", NULL, NULL, 0),
                      CLG_ERR_IO, what, "rank 0", "nonexistent-clgrad-dir");
    clg_dist_destroy(d);
    clg_grads_destroy(g);
    clg_model_destroy(m);
    free(host);
    free(before);
    free(after);
}

int main(int argc, char **argv)
{
    clg_context *ctx = du_init(&argc, &argv, &rank, &R);
    ctx_of_models = ctx;
    const size_t same[3] = {1000, 37, 24};
    const size_t other[3] = {1000, 38, 24};
    int last = rank == R - 1;
    char rank_s[32];
    snprintf(rank_s, sizeof rank_s, "rank %d", R - 1);

    clg_config c = base();
    create_fails(ctx, &c, last ? other : same, CLG_ERR_MISMATCH, "one tensor's size",
                 "parameter count", rank_s);
    c = base();
    if (last)
        c.clip_norm = 1.0f;
    create_fails(ctx, &c, same, CLG_ERR_MISMATCH, "clip_norm on one rank", "clip_norm", rank_s);
    c = base();
    if (last)
        c.acc_dtype = CLG_BF16;
    create_fails(ctx, &c, same, CLG_ERR_UNSUPPORTED, "a bf16 accumulator on one rank", "bf16",
                 rank_s);

    bad_weight_and_save(ctx, CLG_DIST_DDP, same);
    bad_weight_and_save(ctx, CLG_DIST_ZERO1, same);

    /* ZeRO-1 needs the shard of its rank, the same mode everywhere */
    c = base();
    create_fails_mode(ctx, &c, same, CLG_DIST_ZERO1, 0, 0, CLG_ERR_MISMATCH,
                      "ZeRO-1 without shards", "clg_model_set_shard", "rank 0");
    create_fails_mode(ctx, &c, same, CLG_DIST_ZERO1, last ? 0 : (unsigned)rank, (unsigned)R,
                      CLG_ERR_MISMATCH, "ZeRO-1 with rank 0's shard on the last rank", rank_s,
                      "shard 0 of");
    create_fails_mode(ctx, &c, same, last ? CLG_DIST_DDP : CLG_DIST_ZERO1, (unsigned)rank,
                      last ? 0 : (unsigned)R, CLG_ERR_MISMATCH, "DDP on the last rank only",
                      "mode", rank_s);
    clg_dist *bad = (clg_dist *)(uintptr_t)1;
    clg_model *m = du_model(ctx, &c, same, 3);
    expect_everywhere(clg_dist_create(m, MPI_COMM_WORLD, (clg_dist_mode)9, &bad),
                      CLG_ERR_INVALID_ARGUMENT, "mode 9", "mode 9", NULL);
    if (bad != NULL)
        du_fail("*out not NULL after a bad mode");
    clg_dist *d;
    DU_OK(clg_dist_create(m, MPI_COMM_WORLD, CLG_DIST_DDP, &d));
    clg_dist_counters k = clg_dist_counters_init();
    k.struct_size = 4;
    expect_everywhere(clg_dist_counters_get(d, &k), CLG_ERR_INVALID_ARGUMENT,
                      "counters with struct_size 4", "struct_size 4", NULL);
    clg_dist_destroy(d);
    clg_model_destroy(m);
    du_finish(ctx);
    return 0;
}
