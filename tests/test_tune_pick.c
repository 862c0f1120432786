/* test_tune_pick.c - clgrad-tune's choice of (XGEMM_MIN_INDIRECT_SIZE,
 * XgemmDirect, Xgemm) from measured times (tools/tune/tune_pick.h), on
 * synthetic timings, without a device:
 *   - against a brute force over every threshold 1..400 and every pair of
 *     candidates (random problems): the same least time per micro-step,
 *     with and without the 5% per-shape limit, and the returned triple's
 *     time recomputed from its threshold and candidates;
 *   - never slower than CLBlast's defaults: when no triple beats them on
 *     the sum, the defaults (threshold unchanged) come back;
 *   - the per-shape limit: a triple 40% faster overall that makes one
 *     shape 10% slower is not chosen, but reported as best_any;
 *   - the threshold: small shapes on XgemmDirect, large ones on Xgemm when
 *     each is faster there;
 *   - the margin another XgemmDirect configuration must gain over
 *     CLBlast's own on the small shapes.
 * And the seed table (tools/tune/tune_seeds.h): every seed names all of
 * its kernel's parameters with values CLBlast's constraints accept
 * (tuning_check_kernel_values), and the device classes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tune_pick.h"
#include "tune_seeds.h"
#include "tuning_constraints.h"
#include "tuning_file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAXC 10

/* the trainer's 8 shapes (784-512-256-10, micro-batch 32): m n k, calls */
static const double mlp_mnk[8] = {32.0 * 512 * 784, 32.0 * 256 * 512, 32.0 * 10 * 256,
                                  10.0 * 256 * 32,  32.0 * 256 * 10,  256.0 * 512 * 32,
                                  32.0 * 512 * 256, 512.0 * 784 * 32};
static const unsigned mlp_count[8] = {1, 1, 1, 1, 1, 1, 1, 1};

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The reference: every integer threshold, every pair, in plain loops. */
static double brute(const pick_problem *p, int limited)
{
    double best = 0;
    for (size_t k = 0; k < p->n_shapes; k++)
        best += p->count[k] * p->base[k];
    for (size_t t = 1; t <= 400; t++)
        for (size_t d = 0; d < p->n_cand; d++)
            for (size_t i = 0; i < p->n_cand; i++) {
                if (!p->direct[d] || p->direct[i])
                    continue;
                double sum = 0;
                int ok = 1;
                for (size_t k = 0; k < p->n_shapes; k++) {
                    double cube = (double)t * t * t;
                    double ms = p->mnk[k] < cube ? p->ms[d * p->n_shapes + k]
                                                 : p->ms[i * p->n_shapes + k];
                    sum += p->count[k] * ms;
                    if (ms > 1.05 * p->base[k])
                        ok = 0;
                }
                if ((ok || !limited) && sum < best)
                    best = sum;
            }
    return best;
}

/* c's time per micro-step from its threshold and candidates alone; also
 * whether it keeps every shape within the limit. */
static double recompute(const pick_problem *p, const pick_choice *c, int *within)
{
    double sum = 0;
    *within = 1;
    for (size_t k = 0; k < p->n_shapes; k++) {
        double ms;
        if (c->d < 0 && c->i < 0)
            ms = p->base[k];
        else {
            int dir = p->mnk[k] < (double)c->threshold * c->threshold * c->threshold;
            ms = p->ms[(size_t)(dir ? c->d : c->i) * p->n_shapes + k];
        }
        sum += p->count[k] * ms;
        if (ms > 1.05 * p->base[k])
            *within = 0;
    }
    return sum;
}

static void test_against_brute_force(void **state)
{
    (void)state;
    double mnk[8], base[8], ms[MAXC * 8];
    unsigned count[8];
    int direct[MAXC];
    size_t chose_tuned = 0;
    for (int trial = 0; trial < 300; trial++) {
        size_t n = 1 + (size_t)(uniform() * 8);
        for (size_t k = 0; k < n; k++) {
            mnk[k] = trial % 2 ? mlp_mnk[k] : floor(1 + uniform() * 2e7);
            count[k] = 1 + (unsigned)(uniform() * 3);
            base[k] = 0.05 + uniform() * 3;
        }
        size_t nc = 2 + (size_t)(uniform() * (MAXC - 1));
        for (size_t c = 0; c < nc; c++) {
            direct[c] = c == 0 ? 1 : c == 1 ? 0 : uniform() < 0.5;
            for (size_t k = 0; k < n; k++)
                ms[c * n + k] = uniform() < 0.1 ? INFINITY : base[k] * (0.3 + 1.0 * uniform());
        }
        size_t def = 1 + (size_t)(uniform() * 300);
        pick_problem p = {n, mnk, count, base, def, 65536, nc, direct, ms, 1.05, -1, 0};
        pick_result r = tune_pick(&p);
        double want = brute(&p, 1), want_any = brute(&p, 0);
        assert_true(fabs(r.best.ms - want) <= 1e-9 * want);
        assert_true(fabs(r.best_any.ms - want_any) <= 1e-9 * want_any);
        int within, within_any;
        assert_true(fabs(recompute(&p, &r.best, &within) - r.best.ms) <= 1e-9 * want);
        assert_true(within);
        assert_true(fabs(recompute(&p, &r.best_any, &within_any) - r.best_any.ms) <=
                    1e-9 * want_any);
        if (r.best.d < 0)
            assert_int_equal(r.best.threshold, def);
        else
            chose_tuned++;
    }
    /* the random problems exercised both outcomes */
    assert_true(chose_tuned > 30 && chose_tuned < 290);
}

static void test_never_slower_than_defaults(void **state)
{
    (void)state;
    double base[8], ms[4 * 8];
    int direct[4] = {1, 0, 1, 0};
    for (size_t k = 0; k < 8; k++) {
        base[k] = 1.0;
        /* each candidate faster on some shapes, slower on the sum */
        for (size_t c = 0; c < 4; c++)
            ms[c * 8 + k] = (k + c) % 2 ? 0.99 : 1.2;
    }
    pick_problem p = {8, mlp_mnk, mlp_count, base, 896, 65536, 4, direct, ms, 1.05, -1, 0};
    pick_result r = tune_pick(&p);
    assert_int_equal(r.best.d, -1);
    assert_int_equal(r.best.i, -1);
    assert_int_equal(r.best.threshold, 896);
    assert_true(fabs(r.best.ms - 8.0) < 1e-12);
}

static void test_shape_limit(void **state)
{
    (void)state;
    double base[8] = {8, 4, 0.2, 0.2, 0.2, 4, 4, 8};
    double ms[3 * 8];
    int direct[3] = {1, 0, 0};
    for (size_t k = 0; k < 8; k++) {
        ms[0 * 8 + k] = base[k];                       /* CLBlast's XgemmDirect */
        /* fast, but fc1 forward (the largest m n k: on Xgemm whenever
         * anything is) 10% slower */
        ms[1 * 8 + k] = base[k] * (k == 0 ? 1.10 : 0.4);
        ms[2 * 8 + k] = base[k] * 0.8;                 /* 20% faster everywhere */
    }
    pick_problem p = {8, mlp_mnk, mlp_count, base, 896, 65536, 3, direct, ms, 1.05, -1, 0};
    pick_result r = tune_pick(&p);
    assert_int_equal(r.best_any.i, 1);
    assert_int_equal(r.best.i, 2);
    assert_true(fabs(r.best_any.ms - (0.4 * (28.6 - 8) + 8.8)) < 1e-9);
    /* with the limit: candidate 2 on every shape */
    assert_true(fabs(r.best.ms - 0.8 * 28.6) < 1e-9);
    for (size_t k = 0; k < 8; k++)
        assert_true(r.best.shape_ms[k] <= 1.05 * base[k]);
    /* the same limit at 1.15 allows it */
    p.max_ratio = 1.15;
    r = tune_pick(&p);
    assert_int_equal(r.best.i, 1);
}

static void test_threshold_split(void **state)
{
    (void)state;
    double base[8], ms[2 * 8];
    int direct[2] = {1, 0};
    for (size_t k = 0; k < 8; k++) {
        int small = mlp_mnk[k] < 1e6;
        base[k] = small ? 0.02 : 1.0;
        ms[0 * 8 + k] = small ? 0.015 : 1.0;  /* XgemmDirect: better on small */
        ms[1 * 8 + k] = small ? 0.05 : 0.4;   /* Xgemm: better on large */
    }
    pick_problem p = {8, mlp_mnk, mlp_count, base, 896, 65536, 2, direct, ms, 1.05, -1, 0};
    pick_result r = tune_pick(&p);
    assert_int_equal(r.best.d, 0);
    assert_int_equal(r.best.i, 1);
    for (size_t k = 0; k < 8; k++)
        assert_int_equal(pick_is_direct(mlp_mnk[k], r.best.threshold), mlp_mnk[k] < 1e6);
    /* 3 small shapes at 0.015, 5 large at 0.4 */
    assert_true(fabs(r.best.ms - (3 * 0.015 + 5 * 0.4)) < 1e-12);
}

static void to_kernel(const tune_seed *s, tuning_kernel *k)
{
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", s->kernel);
    k->precision = 32;
    const char *c = s->params;
    int used;
    unsigned long v;
    while (k->n < TUNING_MAX_PARAMS &&
           sscanf(c, " %31[A-Z_]=%lu%n", k->param[k->n], &v, &used) == 2) {
        k->value[k->n++] = v;
        c += used;
    }
    assert_string_equal(c, ""); /* all of it parsed */
}

/* The margin: another XgemmDirect configuration 5% faster than CLBlast's
 * own on the small shapes gives way to CLBlast's own under a 10% margin
 * (the choice's time is CLBlast's own figures there), one 20% faster is
 * kept, and with no margin the 5% one is chosen; a margin that takes the
 * whole gain leaves the defaults. */
static void test_direct_margin(void **state)
{
    (void)state;
    double base[8], ms[3 * 8];
    int direct[3] = {1, 1, 0};
    for (size_t k = 0; k < 8; k++) {
        base[k] = 1.0 + (double)k;
        ms[0 * 8 + k] = base[k];                              /* CLBlast's own XgemmDirect */
        ms[2 * 8 + k] = mlp_mnk[k] > 1e6 ? base[k] / 3 : 2 * base[k]; /* Xgemm: the large ones */
    }
    for (int pass = 0; pass < 3; pass++) {
        double gain = pass == 1 ? 0.20 : 0.05, margin = pass == 2 ? 0 : 0.10;
        for (size_t k = 0; k < 8; k++)
            ms[1 * 8 + k] = (1 - gain) * base[k];
        pick_problem p = {8, mlp_mnk, mlp_count, base, 896, 65536, 3, direct, ms, 1.05, 0, margin};
        pick_result r = tune_pick(&p);
        assert_int_equal(r.best.i, 2);
        assert_int_equal(r.best.d, pass == 0 ? 0 : 1);
        int within;
        double want = recompute(&p, &r.best, &within);
        assert_true(within);
        assert_true(fabs(r.best.ms - want) <= 1e-12 * want);
    }
    /* Xgemm no faster: only the 5% of the other XgemmDirect was gained,
     * and the margin gives it back */
    for (size_t k = 0; k < 8; k++) {
        ms[1 * 8 + k] = 0.95 * base[k];
        ms[2 * 8 + k] = 1.5 * base[k];
    }
    pick_problem p = {8, mlp_mnk, mlp_count, base, 896, 65536, 3, direct, ms, 1.05, 0, 0.10};
    pick_result r = tune_pick(&p);
    assert_int_equal(r.best.d, -1);
    assert_int_equal(r.best.i, -1);
    assert_int_equal(r.best.threshold, 896);
}

static void test_seeds_are_valid(void **state)
{
    (void)state;
    size_t total = 0;
    for (int c = TUNE_CLASS_CPU; c <= TUNE_CLASS_OTHER; c++) {
        const tune_seed *seeds;
        size_t n = tune_seeds((tune_device_class)c, &seeds);
        if (c == TUNE_CLASS_OTHER)
            assert_int_equal(n, 0);
        else
            assert_true(n >= 3);
        for (size_t i = 0; i < n; i++) {
            tuning_kernel k;
            char err[256] = "";
            to_kernel(&seeds[i], &k);
            assert_int_equal(k.n, strcmp(k.name, "Xgemm") == 0         ? 16
                                  : strcmp(k.name, "XgemmDirect") == 0 ? 10
                                  : strcmp(k.name, "Pad") == 0         ? 4
                                                                       : 3);
            if (tuning_check_kernel_values(&k, err, sizeof err) != 0)
                fail_msg("seed %s (%s): %s", seeds[i].origin, seeds[i].kernel, err);
            total++;
        }
    }
    assert_true(total >= 12);
    assert_int_equal(tune_device_class_of(1, 0, "GenuineIntel"), TUNE_CLASS_CPU);
    assert_int_equal(tune_device_class_of(0, 1, "NVIDIA Corporation"), TUNE_CLASS_NVIDIA_GPU);
    assert_int_equal(tune_device_class_of(0, 1, "Advanced Micro Devices, Inc."),
                     TUNE_CLASS_AMD_GPU);
    assert_int_equal(tune_device_class_of(0, 1, "Intel(R) Corporation"), TUNE_CLASS_INTEL_GPU);
    assert_int_equal(tune_device_class_of(0, 0, "Xilinx"), TUNE_CLASS_OTHER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_never_slower_than_defaults),
        cmocka_unit_test(test_shape_limit),
        cmocka_unit_test(test_threshold_split),
        cmocka_unit_test(test_direct_margin),
        cmocka_unit_test(test_seeds_are_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
