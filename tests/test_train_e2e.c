/* test_train_e2e.c - tiny end-to-end runs of clgrad-train's trainer on a
 * synthetic 10-class data set (300 training samples of 16 pixels): the same
 * effective batch through different micro-batches, a B that b does not
 * divide, gradient paths A/B/C (and fp16/bf16 gradients), loss scaling,
 * auto micro-batching under a memory budget, the metrics/dump outputs, and
 * checkpoint resume. All runs share one context (one kernel build). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataset.h"
#include "mlp.h"
#include "options.h"
#include "trainer.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { N_TRAIN = 300, N_TEST = 100, DIM = 16 };

static uint8_t train_img[N_TRAIN * DIM], train_lab[N_TRAIN];
static uint8_t test_img[N_TEST * DIM], test_lab[N_TEST];
static dataset train_ds, test_ds;
static const unsigned dims[] = {DIM, 24, 12, 10};
static uint64_t n_params;

/* Class prototypes plus noise: learnable, but not in one step. */
static void make_data(uint8_t *img, uint8_t *lab, int n, uint64_t seed)
{
    tu_rng proto = tu_rng_seed(99), r = tu_rng_seed(seed);
    uint8_t p[10][DIM];
    for (int c = 0; c < 10; c++)
        for (int j = 0; j < DIM; j++)
            p[c][j] = (uint8_t)(tu_rng_u64(&proto) % 256);
    for (int i = 0; i < n; i++) {
        int c = (int)(tu_rng_u64(&r) % 10);
        lab[i] = (uint8_t)c;
        for (int j = 0; j < DIM; j++) {
            int v = p[c][j] + (int)(tu_rng_u64(&r) % 121) - 60;
            img[i * DIM + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

/* The shared context, and the data sets every test trains on. */
static int group_setup(void **state)
{
    tu_group_setup(state);
    make_data(train_img, train_lab, N_TRAIN, 1);
    make_data(test_img, test_lab, N_TEST, 2);
    char err[256];
    if (dataset_wrap(train_img, train_lab, N_TRAIN, DIM, &train_ds, err, sizeof err) != 0 ||
        dataset_wrap(test_img, test_lab, N_TEST, DIM, &test_ds, err, sizeof err) != 0)
        return -1;
    n_params = mlp_param_count(dims, 4);
    return 0;
}

static void base_options(train_options *o)
{
    train_options_default(o);
    o->hidden[0] = dims[1];
    o->hidden[1] = dims[2];
    o->n_hidden = 2;
    o->batch = 64;
    o->micro_batch = 64;
    o->steps = 7; /* 300 = 4 x 64 + 44: crosses an epoch end and a short batch */
    o->warmup = 2;
    o->lr = 3e-3f;
    o->quiet = 1;
}

/* Runs o (after its cross-flag check) and returns malloc'ed weights. */
static float *run(train_options *o, train_result *res)
{
    char err[1024] = "";
    assert_int_equal(train_options_check(o, err, sizeof err), 0);
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    train_result local;
    if (!res)
        res = &local;
    if (train_run(o, &io, res, err, sizeof err) != 0)
        fail_msg("train_run: %s", err);
    return w;
}

/* max |a - b| / (1 + |b|) */
static double max_rel_diff(const float *a, const float *b, uint64_t n)
{
    double m = 0;
    for (uint64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (!(d <= m))
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

static void assert_weights_close(const float *a, const float *b, double tol, const char *what)
{
    double d = max_rel_diff(a, b, n_params);
    if (getenv("TRAIN_VERBOSE"))
        fprintf(stderr, "%s: max relative difference %.3g (tolerance %.3g)\n", what, d, tol);
    if (!(d <= tol))
        fail_msg("%s: weights differ by %.3g (tolerance %.3g)", what, d, tol);
}

/* The initial weights, to show that a run did move them. */
static float *initial_weights(uint64_t seed)
{
    float *w = tu_xmalloc(n_params * sizeof *w);
    mlp_init_params(dims, 4, seed, w);
    return w;
}

/* Tolerances, as max |a - b| / (1 + |b|) over all weights after 7
 * updates. The runs compared differ only in fp32 summation order (GEMM
 * K-splits over micro-batches, accumulation order); measured here (PoCL)
 * about 1e-8 for both optimizers. SGD's update is linear in the gradient:
 * 1e-6. Adam divides by sqrt(v) + eps, which can amplify the relative
 * error of tiny gradient elements: 1e-5. Real bugs are far above: a wrong
 * weight on one short micro-batch of 2 samples gives 4e-4 with SGD; a
 * dropped micro-batch or stale accumulator moves weights by ~lr = 3e-3. */
#define TOL_SGD 1e-6
#define TOL_ADAM 1e-5

static void test_micro_batch_equivalence(void **state)
{
    (void)state;
    for (int opt = 0; opt < 2; opt++) {
        train_options o;
        base_options(&o);
        if (opt) {
            o.optimizer = CLG_SGD;
            o.lr = 0.05f;
        }
        train_result r1, r4;
        float *w1 = run(&o, &r1);
        o.micro_batch = 16;
        float *w4 = run(&o, &r4);
        assert_int_equal(r1.accum_steps, 1);
        assert_int_equal(r4.accum_steps, 4);
        assert_int_equal(r1.updates, 7);
        assert_int_equal(r4.updates, 7);
        /* 7 updates: 4 x 64, 44, 2 x 64 -> micro-steps 7 vs 4*4 + 3 + 2*4. */
        assert_int_equal(r1.micro_steps, 7);
        assert_int_equal(r4.micro_steps, 27);
        assert_int_equal(r4.samples, 4 * 64 + 44 + 2 * 64);
        float *w0 = initial_weights(o.seed);
        assert_true(max_rel_diff(w1, w0, n_params) > 1e-3); /* training moved them */
        assert_weights_close(w4, w1, opt ? TOL_SGD : TOL_ADAM, opt ? "sgd 16x4 vs 64" :
                                                                     "adamw 16x4 vs 64");
        free(w0);
        free(w1);
        free(w4);
    }
}

static void test_non_divisible_batch(void **state)
{
    (void)state;
    /* SGD, because Adam is nearly invariant to a constant gradient scale
     * and would hide a wrong divisor (e.g. 51 instead of 50); paths B (the
     * backward writes sums, clgrad divides by the weights) and C (clgrad
     * weights the micro-batch means) both. */
    train_options o;
    base_options(&o);
    o.optimizer = CLG_SGD;
    o.lr = 0.05f;
    o.batch = 50;
    o.micro_batch = 50;
    train_result ra, rb, rc;
    float *wa = run(&o, &ra);
    for (int p = GRAD_PATH_B; p <= GRAD_PATH_C; p++) {
        o.path = (grad_path)p;
        o.path_given = 1;
        o.micro_batch = 16; /* 16 + 16 + 16 + 2, the last weighted by 2 */
        float *wb = run(&o, &rb);
        o.micro_batch = 7; /* 7 x 7 + 1 */
        float *wc = run(&o, &rc);
        assert_int_equal(rb.accum_steps, 4);
        assert_int_equal(rc.accum_steps, 8);
        assert_int_equal(rb.micro_steps, 7 * 4);
        assert_weights_close(wb, wa, TOL_SGD, "B=50 as 16,16,16,2 vs 50");
        assert_weights_close(wc, wa, TOL_SGD, "B=50 as 7x7+1 vs 50");
        free(wb);
        free(wc);
    }
    /* The tolerance does tell batches apart: 48 instead of 50 samples per
     * update gives clearly different weights. */
    o.batch = 48;
    o.micro_batch = 16;
    float *wd = run(&o, NULL);
    assert_true(max_rel_diff(wd, wa, n_params) > 10 * TOL_SGD);
    free(wa);
    free(wd);
}

static void test_grad_paths(void **state)
{
    (void)state;
    train_options o;
    base_options(&o);
    o.micro_batch = 16;
    /* SGD first: its update is linear in the gradient, so a gradient
     * scaled wrongly on one path (Adam would hide it) shows at once. */
    o.optimizer = CLG_SGD;
    o.lr = 0.05f;
    float *s[3];
    for (int p = 0; p < 3; p++) {
        o.path = (grad_path)p;
        o.path_given = 1;
        s[p] = run(&o, NULL);
    }
    assert_weights_close(s[GRAD_PATH_A], s[GRAD_PATH_B], TOL_SGD, "sgd path A vs B");
    assert_weights_close(s[GRAD_PATH_C], s[GRAD_PATH_B], TOL_SGD, "sgd path C vs B");
    for (int p = 0; p < 3; p++)
        free(s[p]);
    base_options(&o);
    o.micro_batch = 16;
    float *w[3];
    for (int p = 0; p < 3; p++) {
        o.path = (grad_path)p;
        o.path_given = 1;
        w[p] = run(&o, NULL);
    }
    assert_weights_close(w[GRAD_PATH_A], w[GRAD_PATH_B], TOL_ADAM, "path A vs B");
    assert_weights_close(w[GRAD_PATH_C], w[GRAD_PATH_B], TOL_ADAM, "path C vs B");
    /* Low-precision gradients (paths A and C): close to fp32, not equal. */
    for (int dt = 1; dt <= 2; dt++) {
        for (int p = 0; p < 3; p += 2) {
            o.grad_dtype = (clg_dtype)dt;
            o.path = (grad_path)p;
            float *wl = run(&o, NULL);
            double d = max_rel_diff(wl, w[GRAD_PATH_B], n_params);
            /* bf16 keeps 8 mantissa bits: relative gradient error 2^-9,
             * Adam's normalisation keeps it at that order per update. */
            double tol = dt == CLG_BF16 ? 3e-3 : 1e-3;
            if (!(d <= tol))
                fail_msg("%s path %c: weights differ from fp32 by %.3g (tolerance %.3g)",
                         dt == CLG_FP16 ? "fp16" : "bf16", "ABC"[p], d, tol);
            free(wl);
        }
    }
    for (int p = 0; p < 3; p++)
        free(w[p]);
}

static void test_loss_scaling(void **state)
{
    (void)state;
    train_options o;
    base_options(&o);
    o.micro_batch = 16;
    float *w = run(&o, NULL);
    /* fp32 gradients never overflow at 2^16: scaling by a power of two and
     * unscaling must give the unscaled run's weights. */
    o.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    train_result rd;
    float *wd = run(&o, &rd);
    assert_int_equal(rd.skipped_updates, 0);
    assert_weights_close(wd, w, TOL_ADAM, "dynamic loss scale, fp32");
    o.loss_scale = CLG_LOSS_SCALE_STATIC;
    o.loss_scale_value = 1024.0f;
    float *ws = run(&o, NULL);
    assert_weights_close(ws, w, TOL_ADAM, "static loss scale 1024, fp32");
    /* fp16 gradients under dynamic scaling: close to fp32. */
    o.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    o.grad_dtype = CLG_FP16;
    o.path = GRAD_PATH_C;
    float *wh = run(&o, NULL);
    assert_weights_close(wh, w, 1e-3, "dynamic loss scale, fp16 gradients");
    /* A static scale of 2^24 overflows fp16 gradients (max 65504): those
     * updates are skipped, counted, and the weights stay finite. */
    o.loss_scale = CLG_LOSS_SCALE_STATIC;
    o.loss_scale_value = 16777216.0f;
    train_result rh;
    float *wo = run(&o, &rh);
    assert_true(rh.skipped_updates >= 1);
    for (uint64_t i = 0; i < n_params; i++)
        assert_true(isfinite(wo[i]));
    free(wo);
    free(w);
    free(wd);
    free(ws);
    free(wh);
}

static void test_auto_micro_batch(void **state)
{
    (void)state;
    /* A fresh context, so that its peak is this run's alone. */
    clg_context *shared = tu_ctx;
    tu_ctx = tu_context_or_skip();
    train_options o;
    base_options(&o);
    o.micro_batch = 16;
    train_result r16;
    float *w16 = run(&o, &r16);
    /* A budget that holds everything of the b = 16 run plus a little, but
     * not the activations of b = 32 or 64. */
    uint64_t a16 = mlp_activation_bytes(dims, 4, 16);
    uint64_t budget = r16.peak_device_bytes + a16 / 2;
    assert_true(budget < r16.peak_device_bytes - a16 + mlp_activation_bytes(dims, 4, 32));

    o.micro_batch = 64;
    o.vram = budget;
    char err[1024] = "";
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    train_result r;
    /* Without the flag: a clear error naming the bytes. */
    assert_int_not_equal(train_run(&o, &io, &r, err, sizeof err), 0);
    if (!strstr(err, "micro-batch 64") || !strstr(err, "need") || !strstr(err, "available"))
        fail_msg("unexpected message: %s", err);
    /* With it: 64 -> 32 -> 16, k 1 -> 4, same effective batch and weights
     * as running at 16 directly. */
    o.auto_micro_batch = 1;
    if (train_run(&o, &io, &r, err, sizeof err) != 0)
        fail_msg("auto micro-batch run: %s", err);
    assert_int_equal(r.micro_batch, 16);
    assert_int_equal(r.accum_steps, 4);
    assert_int_equal(r.halvings, 2);
    assert_int_equal(r.micro_steps, r16.micro_steps);
    assert_true(r.peak_device_bytes <= budget);
    assert_weights_close(w, w16, 0.0, "auto micro-batch vs micro-batch 16");
    /* The context's budget is restored for the next user. */
    assert_true(clg_context_budget(tu_ctx) == 0);
    clg_context_destroy(tu_ctx);
    tu_ctx = shared;
    free(w);
    free(w16);
}

static void test_outputs(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("clgrad-train-e2e");
    char metrics[1024], dump[1024];
    snprintf(metrics, sizeof metrics, "%s/m.csv", dir);
    snprintf(dump, sizeof dump, "%s/w.bin", dir);
    train_options o;
    base_options(&o);
    o.micro_batch = 32;
    o.metrics = metrics;
    o.dump_weights = dump;
    train_result r;
    float *w = run(&o, &r);
    /* Dump: every parameter, little-endian fp32, model order. */
    FILE *f = fopen(dump, "rb");
    assert_non_null(f);
    uint8_t *b = tu_xmalloc(n_params * 4 + 1);
    assert_int_equal(fread(b, 1, n_params * 4 + 1, f), n_params * 4);
    fclose(f);
    for (uint64_t i = 0; i < n_params; i++) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, 4);
        assert_memory_equal(&x, &w[i], 4);
    }
    /* Metrics: a header and one row per update, samples counting up. */
    f = fopen(metrics, "r");
    assert_non_null(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "update,micro_steps,samples_seen,epoch,loss,lr,grad_norm"));
    unsigned long long upd, micro, samples, prev = 0;
    unsigned epoch;
    double loss, lr, gn;
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        assert_int_equal(sscanf(line, "%llu,%llu,%llu,%u,%lf,%lf,%lf", &upd, &micro, &samples,
                                &epoch, &loss, &lr, &gn),
                         7);
        rows++;
        assert_int_equal(upd, rows);
        assert_true(samples > prev);
        prev = samples;
        assert_true(loss > 0 && loss < 10);
        assert_true(lr > 0 && lr <= 3e-3 + 1e-9);
        assert_true(gn > 0 && isfinite(gn));
    }
    fclose(f);
    assert_int_equal(rows, 7);
    assert_int_equal(prev, r.samples);
    assert_true(r.test_accuracy > 0.0 && r.test_accuracy <= 1.0);
    free(b);
    free(w);
    tu_rmdir_tree(dir);
    free(dir);
}

static void test_learns(void **state)
{
    (void)state;
    train_options o;
    base_options(&o);
    o.steps = 0;
    o.epochs = 8;
    o.batch = 32;
    o.micro_batch = 8;
    o.lr = 1e-2f;
    o.quiet = getenv("TRAIN_VERBOSE") == NULL;
    train_result r;
    float *w = run(&o, &r);
    /* Chance is 0.1; the prototypes are easy to separate. */
    if (!(r.test_accuracy >= 0.8))
        fail_msg("test accuracy %.3f after 8 epochs", r.test_accuracy);
    free(w);
}

static void test_resume(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("clgrad-train-resume");
    char ck[1024];
    snprintf(ck, sizeof ck, "%s/run.ckpt", dir);
    train_options o;
    base_options(&o);
    o.micro_batch = 16;
    o.steps = 9;
    float *full = run(&o, NULL);
    /* The same run cut after 3 updates (mid-epoch), then resumed, with a
     * different micro-batch in the second half: the data order continues
     * and the weights match the uninterrupted run. */
    o.checkpoint = ck;
    o.stop_after = 3;
    float *half = run(&o, NULL);
    free(half);
    o.stop_after = 0;
    o.resume = ck;
    train_result r;
    float *resumed = run(&o, &r);
    assert_int_equal(r.updates, 9);
    /* Same micro-batch all along: bit for bit. */
    assert_memory_equal(resumed, full, n_params * sizeof *full);
    free(resumed);
    o.resume = NULL;
    o.stop_after = 4;
    float *a = run(&o, NULL);
    free(a);
    o.stop_after = 0;
    o.resume = ck;
    o.micro_batch = 32;
    float *b = run(&o, NULL);
    assert_weights_close(b, full, TOL_ADAM, "resume with another micro-batch");
    free(b);
    /* A checkpoint of another seed is refused. */
    o.seed = 43;
    char err[1024] = "";
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    assert_int_not_equal(train_run(&o, &io, &r, err, sizeof err), 0);
    assert_non_null(strstr(err, "--seed"));
    free(w);
    free(full);
    tu_rmdir_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_micro_batch_equivalence),
        cmocka_unit_test(test_non_divisible_batch),
        cmocka_unit_test(test_grad_paths),
        cmocka_unit_test(test_loss_scaling),
        cmocka_unit_test(test_auto_micro_batch),
        cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_learns),
        cmocka_unit_test(test_resume),
    };
    return cmocka_run_group_tests(tests, group_setup, tu_group_teardown);
}
