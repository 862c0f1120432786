/* test_set_lr.c - clg_model_set_lr and clg_model_set_group_lr_mult: the
 * update after the change is, bitwise, that of a model created with the
 * new values from the same state (a checkpoint of the changed model, loaded
 * into the one created so). AdamW, k = 2, a linear schedule with warmup
 * (the lr set is the one it warms up to and decays from), 1,200,037
 * parameters in 6 tensors and 3 param groups, with CLGRAD_MAX_ALLOC = 2 MiB:
 * chunk 0 holds group 0 alone (its lr_mult an argument of the update),
 * chunks 1 and 2 two groups each (lr_mult from their group tables).
 *
 *  - paths A, B and C: a change right after an update was enqueued (no
 *    sync) leaves that update as it was; a second one in the middle of the
 *    next cycle counts from that cycle's update, and for the ones after;
 *  - a collected cycle (clg_step_collect) pending for clg_finish_cycle:
 *    the finish uses the values set in between;
 *  - set before finalize: the model of those values;
 *  - refused values (create's checks, exact messages) change nothing: the
 *    next update is that of an untouched twin, bitwise;
 *  - a table write that fails (the first, or the second after the first
 *    was written) changes nothing either: not the tables, not the group's
 *    lr_mult that the next table write reads; and the model goes on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2 MiB: 524,288 floats per buffer at most. */
#define MAX_ALLOC "2097152"

enum { K = 2, N_TENSORS = 6, N_GROUPS = 3 };
static const size_t counts[N_TENSORS] = {400009, 300007, 100003, 17, 300001, 100000};
static const int group_of[N_TENSORS] = {0, 0, 1, 1, 1, 2};
static const float lr_old = 1e-2f, lr_new = 3e-3f, lr_unused = 7e-3f;
static const float mults_old[N_GROUPS] = {1.0f, 0.5f, 2.0f};
static const float mults_new[N_GROUPS] = {0.25f, 1.5f, 0.75f};

typedef enum path { PATH_A, PATH_B, PATH_C } path;

static size_t n_params(void)
{
    size_t n = 0;
    for (size_t t = 0; t < N_TENSORS; t++)
        n += counts[t];
    return n;
}

static clg_config config(float lr, path p)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.lr = lr;
    c.weight_decay = 0.01f;
    c.accum_steps = K;
    c.fuse_last_micro_step = p == PATH_C;
    c.schedule = (clg_schedule){CLG_SCHED_LINEAR, 2, 8, 1e-4f};
    return c;
}

/* Groups g0, g1 (weight decay 0), g2 with the given lr_mults; group 0
 * (clg_model_create's) holds no tensor, so that every group's lr_mult is
 * one of clg_model_add_group's. Not finalized. */
static clg_model *unfinalized(float lr, const float *mults, path p)
{
    clg_config c = config(lr, p);
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &c, &m));
    int g[N_GROUPS], t;
    OK(clg_model_add_group(m, "g0", mults[0], -1.0f, &g[0]));
    OK(clg_model_add_group(m, "g1", mults[1], 0.0f, &g[1]));
    OK(clg_model_add_group(m, "g2", mults[2], -1.0f, &g[2]));
    for (size_t i = 0; i < N_TENSORS; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        OK(clg_model_add_tensor(m, name, counts[i], g[group_of[i]], &t));
    }
    return m;
}

/* The layout the header comment describes, so that both ways a chunk
 * reads its lr_mult are exercised. */
static void finalize(clg_model *m)
{
    OK(clg_model_finalize(m));
    static const size_t segs[] = {1, 2, 2};
    if (m->n_chunks != 3)
        fail_msg("CLGRAD_MAX_ALLOC=%s: %zu chunk(s), want 3", MAX_ALLOC, m->n_chunks);
    for (size_t ch = 0; ch < 3; ch++)
        if (m->chunk_segs[ch] != segs[ch])
            fail_msg("chunk %zu has %zu group(s), want %zu", ch, m->chunk_segs[ch], segs[ch]);
    tu_upload_uniform_params(m, 42);
}

static clg_model *build(float lr, const float *mults, path p)
{
    clg_model *m = unfinalized(lr, mults, p);
    finalize(m);
    return m;
}

/* The groups clg_model_add_group numbered g0..g2 (group 0 is the
 * default). */
static void set_all(clg_model *m, float lr, const float *mults)
{
    OK(clg_model_set_lr(m, lr));
    for (int g = 0; g < N_GROUPS; g++)
        OK(clg_model_set_group_lr_mult(m, g + 1, mults[g]));
}

/* Micro-step j of cycle `cycle`: gradient from a seed of both, weight
 * 1 + j. Path B writes the cycle's weighted sum so far into the
 * accumulator, as a backward with beta clg_accum_beta would. */
static int micro(clg_model *m, clg_grads *g, path p, unsigned cycle, unsigned j, bool collect)
{
    size_t n = n_params();
    float *host = tu_xmalloc(n * sizeof *host);
    float w = 1.0f + (float)j;
    int done = 0;
    if (p == PATH_B) {
        float *sum = tu_xmalloc(n * sizeof *sum);
        for (unsigned i = 0; i <= j; i++) {
            tu_fill_normal(host, n, 1000u * cycle + i, 1.0f);
            float wi = 1.0f + (float)i;
            for (size_t e = 0; e < n; e++)
                sum[e] = i == 0 ? wi * host[e] : sum[e] + wi * host[e];
        }
        tu_write_acc(m, sum, 4);
        free(sum);
        g = NULL;
    } else {
        tu_fill_normal(host, n, 1000u * cycle + j, 1.0f);
        OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
    }
    if (collect)
        OK(clg_step_collect(m, g, w, &done, NULL));
    else
        OK(clg_step(m, g, w, &done, NULL));
    free(host);
    return done;
}

static void cycle(clg_model *m, clg_grads *g, path p, unsigned c)
{
    for (unsigned j = 0; j < K; j++)
        assert_int_equal(micro(m, g, p, c, j, false), j == K - 1);
}

static clg_grads *grads_of(clg_model *m)
{
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    return g;
}

/* Params, both Adam states and the lr of the last update: bitwise. */
static void assert_same(clg_model *a, clg_model *b, const char *what)
{
    static const char *const part_names[] = {"params", "state m", "state v"};
    size_t n = n_params();
    float *x = tu_xmalloc(n * sizeof *x), *y = tu_xmalloc(n * sizeof *y);
    for (int part = -1; part < 2; part++) {
        if (part < 0) {
            OK(clg_model_download_params(a, CLG_ALL_TENSORS, x, n, NULL));
            OK(clg_model_download_params(b, CLG_ALL_TENSORS, y, n, NULL));
        } else {
            OK(clg_model_download_state(a, part, CLG_ALL_TENSORS, x, n, NULL));
            OK(clg_model_download_state(b, part, CLG_ALL_TENSORS, y, n, NULL));
        }
        for (size_t e = 0; e < n; e++)
            if (memcmp(&x[e], &y[e], sizeof *x) != 0)
                fail_msg("%s: %s element %zu: %.9g vs %.9g", what, part_names[part + 1], e,
                         (double)x[e], (double)y[e]);
    }
    clg_stats sa = clg_stats_init(), sb = clg_stats_init();
    OK(clg_model_stats(a, 1, &sa));
    OK(clg_model_stats(b, 1, &sb));
    assert_int_equal(sa.updates, sb.updates);
    assert_memory_equal(&sa.lr, &sb.lr, sizeof sa.lr);
    free(x);
    free(y);
}

static char *checkpoint_of(clg_model *m)
{
    char *path = tu_tmp_path("set_lr.ckpt");
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    return path;
}

/* A changed at the points the header names; R created with the new values
 * from A's checkpoint after the first update; T never changed. */
static void run_path(path p, const char *what)
{
    clg_model *a = build(lr_old, mults_old, p), *t = build(lr_old, mults_old, p);
    clg_grads *ga = grads_of(a), *gt = grads_of(t);
    cycle(a, ga, p, 0);
    cycle(t, gt, p, 0);
    /* the update of cycle 0 is enqueued, maybe not run: it keeps lr_old */
    OK(clg_model_set_lr(a, lr_unused));
    OK(clg_model_set_group_lr_mult(a, 2, 4.0f));
    assert_same(a, t, "the update enqueued before the change");
    char *ckpt = checkpoint_of(a);
    clg_model *r = build(lr_new, mults_new, p);
    OK(clg_checkpoint_load(r, ckpt, NULL, NULL));
    clg_grads *gr = grads_of(r);
    assert_int_equal(micro(a, ga, p, 1, 0, false), 0);
    set_all(a, lr_new, mults_new); /* mid-cycle */
    assert_true(clg_model_get_config(a)->lr == lr_new);
    assert_int_equal(micro(a, ga, p, 1, 1, false), 1);
    cycle(r, gr, p, 1);
    assert_same(a, r, what);
    cycle(a, ga, p, 2);
    cycle(r, gr, p, 2);
    assert_same(a, r, what);
    free(ckpt);
    clg_grads_destroy(ga);
    clg_grads_destroy(gt);
    clg_grads_destroy(gr);
    clg_model_destroy(a);
    clg_model_destroy(t);
    clg_model_destroy(r);
}

static void test_path_a(void **state)
{
    (void)state;
    run_path(PATH_A, "path A");
}

static void test_path_b(void **state)
{
    (void)state;
    run_path(PATH_B, "path B");
}

static void test_path_c(void **state)
{
    (void)state;
    run_path(PATH_C, "path C");
}

static void test_pending_cycle(void **state)
{
    (void)state;
    clg_model *a = build(lr_old, mults_old, PATH_A);
    clg_grads *ga = grads_of(a);
    cycle(a, ga, PATH_A, 0);
    char *ckpt = checkpoint_of(a);
    clg_model *r = build(lr_new, mults_new, PATH_A);
    OK(clg_checkpoint_load(r, ckpt, NULL, NULL));
    clg_grads *gr = grads_of(r);
    clg_model *both[2] = {a, r};
    clg_grads *grads[2] = {ga, gr};
    for (int i = 0; i < 2; i++) {
        for (unsigned j = 0; j < K; j++)
            assert_int_equal(micro(both[i], grads[i], PATH_A, 1, j, true), j == K - 1);
        if (i == 0) /* pending */
            set_all(a, lr_new, mults_new);
        OK(clg_finish_cycle(both[i], 3.0f, NULL)); /* weights 1 + 2 */
    }
    assert_same(a, r, "a pending collected cycle");
    free(ckpt);
    clg_grads_destroy(ga);
    clg_grads_destroy(gr);
    clg_model_destroy(a);
    clg_model_destroy(r);
}

static void test_before_finalize(void **state)
{
    (void)state;
    clg_model *a = unfinalized(lr_old, mults_old, PATH_C);
    set_all(a, lr_new, mults_new);
    finalize(a);
    clg_model *r = build(lr_new, mults_new, PATH_C);
    clg_grads *ga = grads_of(a), *gr = grads_of(r);
    for (unsigned c = 0; c < 2; c++) {
        cycle(a, ga, PATH_C, c);
        cycle(r, gr, PATH_C, c);
    }
    assert_same(a, r, "set before finalize");
    clg_grads_destroy(ga);
    clg_grads_destroy(gr);
    clg_model_destroy(a);
    clg_model_destroy(r);
}

static void expect_refusal(clg_status st, clg_status want, const clg_context *ctx,
                           const char *message)
{
    assert_int_equal(st, want);
    assert_string_equal(clg_last_error(ctx), message);
}

static void test_refused(void **state)
{
    (void)state;
    clg_model *m = build(lr_old, mults_old, PATH_C), *t = build(lr_old, mults_old, PATH_C);
    clg_grads *gm = grads_of(m), *gt = grads_of(t);
    assert_int_equal(micro(m, gm, PATH_C, 0, 0, false), 0); /* mid-cycle */
    assert_int_equal(micro(t, gt, PATH_C, 0, 0, false), 0);
    const clg_status INV = CLG_ERR_INVALID_ARGUMENT;
    expect_refusal(clg_model_set_lr(NULL, 1e-3f), INV, NULL, "clg_model_set_lr: NULL model");
    expect_refusal(clg_model_set_lr(m, -1.0f), INV, tu_ctx,
                   "clg_model_set_lr: lr -1 must be finite and >= 0");
    expect_refusal(clg_model_set_lr(m, NAN), INV, tu_ctx,
                   "clg_model_set_lr: lr nan must be finite and >= 0");
    expect_refusal(clg_model_set_lr(m, INFINITY), INV, tu_ctx,
                   "clg_model_set_lr: lr inf must be finite and >= 0");
    /* the schedule decays to min_lr 1e-4: an lr below it is create's refusal */
    expect_refusal(clg_model_set_lr(m, 5e-5f), INV, tu_ctx,
                   "clg_model_set_lr: schedule min_lr 0.0001 must be in [0, lr = 5e-05]");
    expect_refusal(clg_model_set_group_lr_mult(NULL, 0, 1.0f), INV, NULL,
                   "clg_model_set_group_lr_mult: NULL model");
    expect_refusal(clg_model_set_group_lr_mult(m, -1, 1.0f), INV, tu_ctx,
                   "clg_model_set_group_lr_mult: no group -1 (the model has 4)");
    expect_refusal(clg_model_set_group_lr_mult(m, 4, 1.0f), INV, tu_ctx,
                   "clg_model_set_group_lr_mult: no group 4 (the model has 4)");
    expect_refusal(clg_model_set_group_lr_mult(m, 2, -0.5f), INV, tu_ctx,
                   "clg_model_set_group_lr_mult: lr_mult -0.5 of group 'g1' must be finite "
                   "and >= 0");
    expect_refusal(clg_model_set_group_lr_mult(m, 3, NAN), INV, tu_ctx,
                   "clg_model_set_group_lr_mult: lr_mult nan of group 'g2' must be finite "
                   "and >= 0");
    assert_true(clg_model_get_config(m)->lr == lr_old);
    assert_int_equal(micro(m, gm, PATH_C, 0, 1, false), 1);
    assert_int_equal(micro(t, gt, PATH_C, 0, 1, false), 1);
    assert_same(m, t, "after refused values");
    clg_grads_destroy(gm);
    clg_grads_destroy(gt);
    clg_model_destroy(m);
    clg_model_destroy(t);
}

static void test_failed_table_write(void **state)
{
    (void)state;
    clg_model *m = build(lr_old, mults_old, PATH_A), *t = build(lr_old, mults_old, PATH_A);
    clg_grads *gm = grads_of(m), *gt = grads_of(t);
    /* g1 lives in chunks 1 and 2: two table writes; fail each in turn */
    for (uint64_t n = 1; n <= 2; n++) {
        clg__fault_arm(CLG_FAULT_ENQUEUE, n);
        clg_status st = clg_model_set_group_lr_mult(m, 2, 4.0f);
        clg__fault_arm(CLG_FAULT_ENQUEUE, 0);
        expect_refusal(st, CL_OUT_OF_RESOURCES, tu_ctx,
                       "clg_model_set_group_lr_mult: clEnqueueWriteBuffer failed: "
                       "CL_OUT_OF_RESOURCES (-5)");
    }
    cycle(m, gm, PATH_A, 0);
    cycle(t, gt, PATH_A, 0);
    assert_same(m, t, "after failed table writes");
    /* and the model goes on: a change that succeeds counts, and writes the
     * tables from g1's lr_mult as it was */
    OK(clg_model_set_group_lr_mult(m, 3, 1.25f));
    OK(clg_model_set_group_lr_mult(t, 3, 1.25f));
    cycle(m, gm, PATH_A, 1);
    cycle(t, gt, PATH_A, 1);
    assert_same(m, t, "after a change following failed ones");
    clg_grads_destroy(gm);
    clg_grads_destroy(gt);
    clg_model_destroy(m);
    clg_model_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_a),
        cmocka_unit_test(test_path_b),
        cmocka_unit_test(test_path_c),
        cmocka_unit_test(test_pending_cycle),
        cmocka_unit_test(test_before_finalize),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_failed_table_write),
    };
    return TU_RUN_GROUP_MAX_ALLOC("set_lr", tests, tu_group_setup_tmpdir, MAX_ALLOC);
}
