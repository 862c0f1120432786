/* test_launches.c - kernel launches per update do not depend on the number
 * of tensors: 300 tensors vs 1 tensor of the same total size give the same
 * launch count per micro-step and per update, at most 3 plus one per param
 * group (docs/design.md, "Launches per update"), and path B's intermediate
 * micro-steps launch nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MANY = 300 };

typedef struct launch_counts {
    uint64_t micro[3]; /* launches of micro-steps 1..3 (3 = the update) */
} launch_counts;

/* k = 3 cycles; returns the launches of each micro-step of the 2nd cycle
 * (the first one may build kernels lazily) and checks the reference. */
static launch_counts count_launches(const clg_config *cfg, size_t n_groups, int many, int path_b)
{
    size_t counts[MANY];
    int groups[MANY];
    size_t nt = many ? MANY : n_groups;
    size_t total = 0;
    for (size_t t = 0; t < MANY; t++)
        total += 1 + t % 13;
    for (size_t t = 0; t < nt; t++) {
        counts[t] = many ? 1 + t % 13 : 0;
        groups[t] = (int)(t % n_groups);
    }
    if (!many) {
        /* the same number of elements per group in one tensor each */
        for (size_t t = 0; t < MANY; t++)
            counts[t % n_groups] += 1 + t % 13;
    }
    static const float lr_mult[] = {1.0f, 0.5f};
    static const float wd[] = {-1.0f, 0.0f};
    const twin_layout lay = {n_groups, lr_mult, wd, nt, counts, groups};
    twin tw;
    twin_init(&tw, tu_ctx, cfg, &lay, 4);
    assert_int_equal(tw.n, total);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    launch_counts lc;
    memset(&lc, 0, sizeof lc);
    for (unsigned c = 0; c < 2; c++) {
        for (unsigned m = 0; m < 3; m++) {
            twin_gradient(&tw, c, m, g);
            uint64_t before = clg_context_launches(tu_ctx);
            if (path_b) {
                /* path B: the accumulator content is the caller's business;
                 * launches are all that is counted here */
                int updated = -1;
                assert_int_equal(clg_step(tw.model, NULL, 1.0f, &updated, NULL), CLG_SUCCESS);
                assert_int_equal(updated, m == 2);
            } else {
                twin_micro(&tw, g, 1.0f);
            }
            lc.micro[m] = clg_context_launches(tu_ctx) - before;
        }
        if (!path_b)
            twin_check(&tw, REF_RTOL, REF_ATOL, "launch count model");
    }
    free(g);
    twin_free(&tw);
    return lc;
}

static void compare(const char *what, const clg_config *cfg, size_t n_groups, int path_b)
{
    launch_counts one = count_launches(cfg, n_groups, 0, path_b);
    launch_counts many = count_launches(cfg, n_groups, 1, path_b);
    for (int m = 0; m < 3; m++) {
        if (one.micro[m] != many.micro[m])
            fail_msg("%s: micro-step %d: %llu launches with %zu tensors, %llu with %d", what, m + 1,
                     (unsigned long long)one.micro[m], n_groups, (unsigned long long)many.micro[m],
                     MANY);
    }
    if (many.micro[2] > 3 + n_groups || many.micro[2] == 0)
        fail_msg("%s: %llu launches for the update, want 1..%zu (3 + groups)", what,
                 (unsigned long long)many.micro[2], 3 + n_groups);
    if (path_b)
        for (int m = 0; m < 2; m++)
            if (many.micro[m] != 0)
                fail_msg("%s: path B micro-step %d launched %llu kernels, want 0", what, m + 1,
                         (unsigned long long)many.micro[m]);
    fprintf(stderr, "%s: launches per micro-step %llu %llu, update %llu\n", what,
            (unsigned long long)many.micro[0], (unsigned long long)many.micro[1],
            (unsigned long long)many.micro[2]);
}

static void test_launches_plain(void **state)
{
    (void)state;
    clg_config cfg = clg_config_default(CLG_ADAMW);
    cfg.accum_steps = 3;
    compare("adamw path C, 1 group", &cfg, 1, 0);
    compare("adamw path C, 2 groups", &cfg, 2, 0);
    cfg.fuse_last_micro_step = 0;
    compare("adamw path A, 2 groups", &cfg, 2, 0);
}

static void test_launches_with_statistics(void **state)
{
    (void)state;
    clg_config cfg = clg_config_default(CLG_ADAM);
    cfg.accum_steps = 3;
    cfg.clip_norm = 1.0f;
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    cfg.loss_scale = CLG_LOSS_SCALE_NONE;
    compare("adam clip + skip, path C, 2 groups", &cfg, 2, 0);
    cfg.fuse_last_micro_step = 0;
    compare("adam clip + skip, path A, 2 groups", &cfg, 2, 0);
}

static void test_launches_path_b(void **state)
{
    (void)state;
    clg_config cfg = clg_config_default(CLG_SGD);
    cfg.momentum = 0.9f;
    cfg.accum_steps = 3;
    compare("sgd path B, 2 groups", &cfg, 2, 1);
    cfg.clip_norm = 1.0f;
    compare("sgd clip path B, 2 groups", &cfg, 2, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launches_plain),
        cmocka_unit_test(test_launches_with_statistics),
        cmocka_unit_test(test_launches_path_b),
    };
    return cmocka_run_group_tests_name("launches", tests, tu_group_setup, tu_group_teardown);
}
