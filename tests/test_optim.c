/* test_optim.c - every optimizer and option combination against the double
 * reference: 7 updates of k = 4 weighted micro-steps, two param groups
 * (lr_mult 1 / config wd and lr_mult 0.5 / no wd), with lr schedules.
 * Params and states must agree within PyTorch's fp32 tolerances
 * (rtol 1.3e-6, atol 1e-5) after every update, and intermediate
 * micro-steps must leave params and states bitwise unchanged. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct optim_case {
    const char *name;
    clg_optimizer opt;
    float lr, momentum, dampening, weight_decay;
    int nesterov, amsgrad, maximize;
    clg_schedule_kind sched;
    uint64_t warmup, total;
    int fuse; /* path C (1) or A (0) */
    int sum;  /* CLG_NORM_SUM instead of mean */
} optim_case;

enum { K = 4, UPDATES = 7 };
static const float weights[K] = {1.0f, 2.0f, 0.5f, 1.5f};

static void run_case(const optim_case *oc)
{
    clg_config cfg = clg_config_init(oc->opt);
    cfg.lr = oc->lr;
    cfg.accum_steps = K;
    cfg.momentum = oc->momentum;
    cfg.dampening = oc->dampening;
    cfg.weight_decay = oc->weight_decay;
    cfg.nesterov = oc->nesterov;
    cfg.amsgrad = oc->amsgrad;
    cfg.maximize = oc->maximize;
    cfg.schedule.kind = oc->sched;
    cfg.schedule.warmup = oc->warmup;
    cfg.schedule.total = oc->total;
    cfg.schedule.min_lr = oc->lr * 0.1f;
    cfg.fuse_last_micro_step = oc->fuse;
    cfg.normalize = oc->sum ? CLG_NORM_SUM : CLG_NORM_MEAN;

    twin tw;
    twin_init(&tw, tu_ctx, &cfg, &twin_default_layout, 1234);
    float *g = tu_xmalloc(tw.n * sizeof(float));
    for (unsigned u = 0; u < UPDATES; u++) {
        float *snap = (u == 0 || u == 3) ? twin_snapshot(&tw) : NULL;
        for (unsigned m = 0; m < K; m++) {
            twin_gradient(&tw, u, m, g);
            int updated = twin_micro(&tw, g, weights[m]);
            assert_int_equal(updated, m == K - 1);
            if (snap && m < K - 1) {
                char what[96];
                snprintf(what, sizeof what, "%s: update %u micro %u", oc->name, u, m);
                twin_assert_unchanged(&tw, snap, what);
            }
        }
        free(snap);
        char what[96];
        snprintf(what, sizeof what, "%s: after update %u", oc->name, u + 1);
        /* PyTorch's fp32 tolerances: fp32 accumulation and fp32 update
         * arithmetic against double, 7 updates */
        twin_check(&tw, REF_RTOL, REF_ATOL, what);

        clg_stats s = twin_stats(&tw);
        assert_int_equal(s.updates, u + 1);
        assert_int_equal(s.micro_steps, (u + 1) * K);
        assert_int_equal(s.skipped_updates, 0);
        /* lr is computed in fp32 on the device: a few ulps */
        double want = tw.ref.last_lr;
        if (fabs(s.lr - want) > 4e-7 * want + 1e-12)
            fail_msg("%s: stats.lr %.9g, want %.9g (update %u)", oc->name, (double)s.lr, want,
                     u + 1);
    }
    free(g);
    twin_free(&tw);
}

static void test_case(void **state)
{
    run_case((const optim_case *)*state);
}

static const optim_case cases[] = {
    {"sgd plain", CLG_SGD, 0.05f, 0, 0, 0, 0, 0, 0, CLG_SCHED_CONSTANT, 0, 0, 1, 0},
    {"sgd momentum dampening wd cosine", CLG_SGD, 0.05f, 0.9f, 0.1f, 0.01f, 0, 0, 0,
     CLG_SCHED_COSINE, 2, 6, 1, 0},
    {"sgd nesterov wd maximize linear path A", CLG_SGD, 0.05f, 0.9f, 0, 0.01f, 1, 0, 1,
     CLG_SCHED_LINEAR, 3, 5, 0, 0},
    {"adam default", CLG_ADAM, 1e-2f, 0, 0, 0, 0, 0, 0, CLG_SCHED_CONSTANT, 0, 0, 1, 0},
    {"adam l2 amsgrad cosine", CLG_ADAM, 1e-2f, 0, 0, 0.05f, 0, 1, 0, CLG_SCHED_COSINE, 2, 6, 1, 0},
    {"adam maximize linear path A", CLG_ADAM, 1e-2f, 0, 0, 0.01f, 0, 0, 1, CLG_SCHED_LINEAR, 2, 5,
     0, 0},
    {"adamw default cosine", CLG_ADAMW, 1e-2f, 0, 0, 0.01f, 0, 0, 0, CLG_SCHED_COSINE, 2, 6, 1, 0},
    {"adamw amsgrad maximize path A", CLG_ADAMW, 1e-2f, 0, 0, 0.1f, 0, 1, 1, CLG_SCHED_CONSTANT, 1,
     0, 0, 0},
    {"sgd momentum sum mode", CLG_SGD, 0.01f, 0.5f, 0, 0.01f, 0, 0, 0, CLG_SCHED_CONSTANT, 0, 0, 1,
     1},
    {"adamw sum mode path A", CLG_ADAMW, 1e-2f, 0, 0, 0.01f, 0, 0, 0, CLG_SCHED_COSINE, 1, 6, 0, 1},
    {"lion wd cosine", CLG_LION, 1e-3f, 0, 0, 0.1f, 0, 0, 0, CLG_SCHED_COSINE, 2, 6, 1, 0},
};

int main(void)
{
    struct CMUnitTest tests[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct CMUnitTest t = {cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
        tests[i] = t;
    }
    return _cmocka_run_group_tests("optim", tests, sizeof cases / sizeof cases[0], tu_group_setup,
                                   tu_group_teardown);
}
