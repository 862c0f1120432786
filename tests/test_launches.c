/* test_launches.c - kernel launches per micro-step and per update are
 * exactly what docs/design.md ("Launches per update") says for C arena
 * chunks, per path and configuration, whatever the number of tensors (1
 * per group or 300) and of param groups (1, 2, 4, 7):
 *
 *   micro-steps 1..k-1: C accumulate launches (paths A, C), none (path B);
 *   the update: C + 1 (path C or B, no statistics), 2C + 1 (path A, or
 *   statistics), + C with tensor norms; skip-micro: 2C + 1 per micro-step
 *   and C + 1 + C more at the end; the noise scale's first micro-step:
 *   + 1 (fold), + C on path B (its own sum of squares).
 *
 * Each count is checked on a one-chunk context (C = 1) and on a context
 * whose CLGRAD_MAX_ALLOC splits the model into 3 or more chunks. The
 * parameters are compared with the double reference too (tests/reference.c,
 * PyTorch's fp32 tolerances). */
#include <stdarg.h>
#include "clgrad_advanced.h"
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MANY = 300, K = 3, MAX_GROUPS = 7 };

/* 8 KiB buffers: 2048 floats per chunk, the 300 tensors (4800 padded
 * elements) need 3 chunks or more. */
#define SMALL_CHUNKS "8192"

static clg_context *chunked_ctx;

static int setup(void **state)
{
    int rc = tu_group_setup(state);
    if (rc)
        return rc;
    chunked_ctx = tu_context_with_max_alloc(SMALL_CHUNKS);
    return 0;
}

static int teardown(void **state)
{
    clg_context_destroy(chunked_ctx);
    return tu_group_teardown(state);
}

/* What a configuration launches, as a function of the chunk count. */
typedef enum shape {
    SHAPE_C,          /* path C, no statistics */
    SHAPE_A,          /* path A, or path C with statistics */
    SHAPE_B,          /* path B, no statistics */
    SHAPE_B_STATS,    /* path B with statistics */
    SHAPE_A_NORMS,    /* path A with tensor norms */
    SHAPE_SKIP_MICRO, /* path A, CLG_NONFINITE_SKIP_MICRO */
    SHAPE_A_NOISE,    /* path A with the noise scale */
    SHAPE_B_NOISE     /* path B with the noise scale */
} shape;

/* Expected launches of micro-step m (0-based) of a k = 3 cycle. */
static uint64_t expected(shape s, uint64_t C, unsigned m)
{
    int last = m == K - 1, first = m == 0;
    switch (s) {
    case SHAPE_C:
        return last ? C + 1 : C;
    case SHAPE_A:
        return last ? 2 * C + 1 : C;
    case SHAPE_B:
        return last ? C + 1 : 0;
    case SHAPE_B_STATS:
        return last ? 2 * C + 1 : 0;
    case SHAPE_A_NORMS:
        return last ? 3 * C + 1 : C;
    case SHAPE_SKIP_MICRO:
        return last ? (2 * C + 1) + (C + 1 + C) : 2 * C + 1;
    case SHAPE_A_NOISE:
        return last ? 2 * C + 1 : first ? C + 1 : C;
    case SHAPE_B_NOISE:
        return last ? 2 * C + 1 : first ? C + 1 : 0;
    }
    return UINT64_MAX;
}

typedef struct counted {
    uint64_t micro[K]; /* launches of micro-steps 1..K of the 2nd cycle */
    size_t chunks;
} counted;

/* Two k = 3 cycles on a model of `many` ? 300 tensors : one tensor per
 * group, in n_groups groups; returns the launches of each micro-step of
 * the 2nd cycle (the first one may build kernels lazily) and checks the
 * params against the reference after each cycle. */
static counted count_launches(clg_context *ctx, const clg_config *cfg, size_t n_groups,
                              int many, int path_b)
{
    assert_true(n_groups >= 1 && n_groups <= MAX_GROUPS);
    size_t counts[MANY];
    int groups[MANY];
    size_t nt = many ? MANY : n_groups;
    memset(counts, 0, sizeof counts);
    for (size_t t = 0; t < MANY; t++) {
        size_t c = 1 + t % 13;
        if (many) {
            counts[t] = c;
            groups[t] = (int)(t % n_groups);
        } else {
            /* the same number of elements per group in one tensor each */
            counts[t % n_groups] += c;
            groups[t % n_groups] = (int)(t % n_groups);
        }
    }
    static const float lr_mult[MAX_GROUPS] = {1.0f, 0.5f, 2.0f, 0.25f, 1.5f, 0.75f, 3.0f};
    static const float wd[MAX_GROUPS] = {-1.0f, 0.0f, 0.1f, -1.0f, 0.0f, 0.2f, 0.05f};
    const twin_layout lay = {n_groups, lr_mult, wd, nt, counts, groups};
    twin tw;
    twin_init(&tw, ctx, cfg, &lay, 4);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    counted lc;
    memset(&lc, 0, sizeof lc);
    lc.chunks = tw.model->n_chunks;
    for (unsigned c = 0; c < 2; c++) {
        for (unsigned m = 0; m < K; m++) {
            twin_gradient(&tw, c, m, g);
            /* twin_micro_b writes the accumulator with blocking copies:
             * no kernel launch of its own */
            uint64_t before = clg_context_launches(ctx);
            int updated = path_b ? twin_micro_b(&tw, g, 1.0f) : twin_micro(&tw, g, 1.0f);
            lc.micro[m] = clg_context_launches(ctx) - before;
            assert_int_equal(updated, m == K - 1);
        }
        twin_check(&tw, REF_RTOL, REF_ATOL, "launch count model");
    }
    free(g);
    twin_free(&tw);
    return lc;
}

static const size_t group_counts[] = {1, 2, 4, 7};
enum { N_GROUP_COUNTS = sizeof group_counts / sizeof group_counts[0] };

/* Every layout (one tensor per group, 300 tensors) and group count, on
 * the one-chunk and the chunked context: the counts are exactly the
 * formula's, and on one chunk the same for every group count. */
static void check(const char *what, const clg_config *cfg, shape s, int path_b)
{
    clg_context *ctxs[2] = {tu_ctx, chunked_ctx};
    for (int ci = 0; ci < 2; ci++) {
        uint64_t first_update = 0;
        size_t max_chunks = 0;
        for (size_t gi = 0; gi < N_GROUP_COUNTS; gi++) {
            for (int many = 0; many <= 1; many++) {
                /* one tensor per group does not fit 2048-float chunks */
                if (ci == 1 && !many)
                    continue;
                size_t ng = group_counts[gi];
                counted lc = count_launches(ctxs[ci], cfg, ng, many, path_b);
                if (ci == 0)
                    assert_int_equal(lc.chunks, 1);
                if (lc.chunks > max_chunks)
                    max_chunks = lc.chunks;
                for (unsigned m = 0; m < K; m++) {
                    uint64_t want = expected(s, lc.chunks, m);
                    if (lc.micro[m] != want)
                        fail_msg("%s: %zu group(s), %s, %zu chunk(s): micro-step %u of %d "
                                 "launched %llu kernels, want %llu",
                                 what, ng, many ? "300 tensors" : "1 tensor per group",
                                 lc.chunks, m + 1, K, (unsigned long long)lc.micro[m],
                                 (unsigned long long)want);
                }
                if (ci == 0) {
                    if (gi == 0 && !many)
                        first_update = lc.micro[K - 1];
                    else if (lc.micro[K - 1] != first_update)
                        fail_msg("%s: the update launched %llu kernels with %zu groups, %llu "
                                 "with 1",
                                 what, (unsigned long long)lc.micro[K - 1], ng,
                                 (unsigned long long)first_update);
                }
            }
        }
        if (ci == 1 && max_chunks < 3)
            fail_msg("%s: CLGRAD_MAX_ALLOC=%s gave %zu chunks, want >= 3", what, SMALL_CHUNKS,
                     max_chunks);
        if (ci == 0)
            print_message("%s: %llu launches per update with 1 chunk, for 1 to 7 groups\n", what,
                          (unsigned long long)first_update);
    }
}

static void test_launches_plain(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.accum_steps = K;
    check("adamw path C", &cfg, SHAPE_C, 0);
    cfg.fuse_last_micro_step = 0;
    check("adamw path A", &cfg, SHAPE_A, 0);
}

static void test_launches_with_statistics(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAM);
    cfg.accum_steps = K;
    cfg.clip_norm = 1.0f;
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    check("adam clip + skip, path C", &cfg, SHAPE_A, 0);
    cfg.fuse_last_micro_step = 0;
    check("adam clip + skip, path A", &cfg, SHAPE_A, 0);
    cfg.tensor_norms = 1;
    check("adam clip + tensor norms, path A", &cfg, SHAPE_A_NORMS, 0);
}

static void test_launches_path_b(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.momentum = 0.9f;
    cfg.accum_steps = K;
    check("sgd path B", &cfg, SHAPE_B, 1);
    cfg.clip_norm = 1.0f;
    check("sgd clip path B", &cfg, SHAPE_B_STATS, 1);
}

static void test_launches_skip_micro_and_noise(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.accum_steps = K;
    cfg.fuse_last_micro_step = 0;
    cfg.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    check("adamw skip-micro, path A", &cfg, SHAPE_SKIP_MICRO, 0);
    cfg = clg_config_init(CLG_SGD);
    cfg.momentum = 0.9f;
    cfg.accum_steps = K;
    cfg.noise_scale = 1;
    check("sgd noise scale, path C", &cfg, SHAPE_A_NOISE, 0);
    check("sgd noise scale, path B", &cfg, SHAPE_B_NOISE, 1);
}

TU_MAIN("launches", setup, teardown,
        cmocka_unit_test(test_launches_plain),
        cmocka_unit_test(test_launches_with_statistics),
        cmocka_unit_test(test_launches_path_b),
        cmocka_unit_test(test_launches_skip_micro_and_noise))
