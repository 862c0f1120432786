/* test_train_e2e.c - tiny end-to-end runs of clgrad-train's trainer on a
 * synthetic 10-class data set (300 training samples of 16 pixels): the same
 * effective batch through different micro-batches, a B that b does not
 * divide, gradient paths A/B/C (and fp16/bf16 gradients), loss scaling,
 * auto micro-batching under a memory budget, the metrics/dump outputs, and
 * checkpoint resume. All runs share one context (one kernel build).
 * The test_cli_* tests run the clgrad-train program itself (CLGRAD_TRAIN_EXE,
 * overridable by the environment variable of that name) on IDX files of
 * 96 + 32 images of 28 x 28: outputs that would destroy a file, output
 * paths checked before the run, settings compared on resume, a full disk
 * (a file size limit on the child), and what the summary says; a damaged
 * header reported as damage, an output flag given twice, and (in process)
 * one writer per checkpoint path. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataset.h"
#include "mlp.h"
#include "options.h"
#include "classify_run.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

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
    o->given |= TRAIN_GIVEN_LR;
    o->quiet = 1;
}

/* Runs o (after its cross-flag check) and returns malloc'ed weights. */
static float *run(train_options *o, classify_result *res)
{
    char err[1024] = "";
    assert_int_equal(train_options_check(o, err, sizeof err), 0);
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    classify_result local;
    if (!res)
        res = &local;
    if (classify_run(o, &io, res, err, sizeof err) != 0)
        fail_msg("classify_run: %s", err);
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
        classify_result r1, r4;
        float *w1 = run(&o, &r1);
        o.micro_batch = 16;
        float *w4 = run(&o, &r4);
        assert_int_equal(r1.run.accum_steps, 1);
        assert_int_equal(r4.run.accum_steps, 4);
        assert_int_equal(r1.run.updates, 7);
        assert_int_equal(r4.run.updates, 7);
        /* 7 updates: 4 x 64, 44, 2 x 64 -> micro-steps 7 vs 4*4 + 3 + 2*4. */
        assert_int_equal(r1.run.micro_steps, 7);
        assert_int_equal(r4.run.micro_steps, 27);
        assert_int_equal(r4.run.samples, 4 * 64 + 44 + 2 * 64);
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
    classify_result ra, rb, rc;
    float *wa = run(&o, &ra);
    for (int p = GRAD_PATH_B; p <= GRAD_PATH_C; p++) {
        o.path = (grad_path)p;
        o.path_given = 1;
        o.micro_batch = 16; /* 16 + 16 + 16 + 2, the last weighted by 2 */
        float *wb = run(&o, &rb);
        o.micro_batch = 7; /* 7 x 7 + 1 */
        float *wc = run(&o, &rc);
        assert_int_equal(rb.run.accum_steps, 4);
        assert_int_equal(rc.run.accum_steps, 8);
        assert_int_equal(rb.run.micro_steps, 7 * 4);
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
    classify_result rd;
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
    classify_result rh;
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
    classify_result r16;
    float *w16 = run(&o, &r16);
    /* A budget that holds everything of the b = 16 run plus a little, but
     * not the activations of b = 32 or 64. */
    uint64_t a16 = mlp_activation_bytes(dims, 4, 16);
    uint64_t budget = r16.run.peak_device_bytes + a16 / 2;
    assert_true(budget < r16.run.peak_device_bytes - a16 + mlp_activation_bytes(dims, 4, 32));

    o.micro_batch = 64;
    o.vram = budget;
    char err[1024] = "";
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    classify_result r;
    /* Without the flag: a clear error naming the bytes. */
    assert_int_not_equal(classify_run(&o, &io, &r, err, sizeof err), 0);
    if (!strstr(err, "micro-batch 64") || !strstr(err, "need") || !strstr(err, "available"))
        fail_msg("unexpected message: %s", err);
    /* With it: 64 -> 32 -> 16, k 1 -> 4, same effective batch and weights
     * as running at 16 directly. */
    o.auto_micro_batch = 1;
    if (classify_run(&o, &io, &r, err, sizeof err) != 0)
        fail_msg("auto micro-batch run: %s", err);
    assert_int_equal(r.run.micro_batch, 16);
    assert_int_equal(r.run.accum_steps, 4);
    assert_int_equal(r.halvings, 2);
    assert_int_equal(r.run.micro_steps, r16.run.micro_steps);
    assert_true(r.run.peak_device_bytes <= budget);
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
    classify_result r;
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
    assert_int_equal(prev, r.run.samples);
    assert_true(r.test_accuracy > 0.0 && r.test_accuracy <= 1.0);
    /* Written through temporary files, none of which is left. */
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)))
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 2);
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
    classify_result r;
    float *w = run(&o, &r);
    /* Chance is 0.1; the prototypes are easy to separate. */
    if (!(r.test_accuracy >= 0.8))
        fail_msg("test accuracy %.3f after 8 epochs", r.test_accuracy);
    free(w);
}

/* The smaller training states learn as well: Q8 and Q4 states (with
 * --state-min-size 250 the 24 x 16 and 12 x 24 weights are quantized, the
 * rest keeps fp32 states), bf16 states, bf16 master weights (the GEMMs
 * read their fp32 copy), a bf16 accumulator (--accum-dtype, path C). */
static void test_learns_with_small_states(void **state)
{
    (void)state;
    static const clg_dtype states[] = {CLG_Q8, CLG_Q4, CLG_BF16, CLG_FP32, CLG_FP32};
    static const clg_dtype masters[] = {CLG_FP32, CLG_FP32, CLG_BF16, CLG_BF16, CLG_FP32};
    static const clg_dtype accs[] = {CLG_FP32, CLG_FP32, CLG_FP32, CLG_FP32, CLG_BF16};
    for (int i = 0; i < 5; i++) {
        train_options o;
        base_options(&o);
        o.steps = 0;
        o.epochs = 8;
        o.batch = 32;
        o.micro_batch = 8;
        o.lr = 1e-2f;
        o.state_dtype = states[i];
        o.state_min_size = 250;
        o.master_dtype = masters[i];
        o.acc_dtype = accs[i];
        if (accs[i] != CLG_FP32)
            o.path = GRAD_PATH_C; /* as train_options_check picks */
        o.quiet = getenv("TRAIN_VERBOSE") == NULL;
        classify_result r;
        float *w = run(&o, &r);
        if (!(r.test_accuracy >= 0.8))
            fail_msg("states %s, master %s: test accuracy %.3f after 8 epochs",
                     clg_dtype_name(states[i]), clg_dtype_name(masters[i]), r.test_accuracy);
        free(w);
    }
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
    classify_result r;
    float *resumed = run(&o, &r);
    assert_int_equal(r.run.updates, 9);
    /* Same micro-batch all along: bit for bit. */
    assert_memory_equal(resumed, full, n_params * sizeof *full);
    free(resumed);
    /* --save-initial: the model before the first update, from which the
     * whole run repeats. */
    char init[1024];
    snprintf(init, sizeof init, "%s/init.ckpt", dir);
    o.resume = NULL;
    o.checkpoint = NULL;
    o.save_initial = init;
    free(run(&o, NULL));
    o.save_initial = NULL;
    o.resume = init;
    resumed = run(&o, &r);
    assert_int_equal(r.run.updates, 9);
    assert_memory_equal(resumed, full, n_params * sizeof *full);
    free(resumed);
    o.checkpoint = ck;
    o.resume = NULL;
    o.stop_after = 4;
    float *a = run(&o, NULL);
    free(a);
    o.stop_after = 0;
    o.resume = ck;
    o.micro_batch = 32;
    /* Another micro-batch is another setting: refused unless overridden. */
    char err[1024] = "";
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    assert_int_not_equal(classify_run(&o, &io, &r, err, sizeof err), 0);
    if (!strstr(err, "--micro-batch") || !strstr(err, "saved 16, now 32") ||
        !strstr(err, "--override micro-batch"))
        fail_msg("unexpected message: %s", err);
    snprintf(o.overrides, sizeof o.overrides, "micro-batch");
    float *b = run(&o, &r);
    assert_non_null(strstr(r.run.overridden, "--micro-batch"));
    assert_weights_close(b, full, TOL_ADAM, "resume with another micro-batch");
    free(b);
    o.overrides[0] = 0;
    o.micro_batch = 16;
    /* A checkpoint of another seed is refused. */
    o.seed = 43;
    assert_int_not_equal(classify_run(&o, &io, &r, err, sizeof err), 0);
    assert_non_null(strstr(err, "--seed"));
    free(w);
    free(full);
    tu_rmdir_tree(dir);
    free(dir);
}


/* ------------------------------------------------------------ the program */

enum { CLI_TRAIN = 96, CLI_TEST = 32 };
static char *cli_dir;       /* scratch: data/ and the outputs */
static char cli_data[1024]; /* IDX files of 28 x 28 images */

/* The program: $CLGRAD_TRAIN_EXE, else the path Meson compiled in, else
 * tools/train/clgrad-train next to this test's directory in the build. */
static const char *train_exe(void)
{
    const char *e = getenv("CLGRAD_TRAIN_EXE");
    if (e && *e)
        return e;
#ifdef CLGRAD_TRAIN_EXE
    return CLGRAD_TRAIN_EXE;
#else
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
    if (n <= 0)
        return "clgrad-train";
    path[n] = 0;
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash : path, 64, "/../tools/train/clgrad-train");
    return path;
#endif
}

static void write_idx(const char *path, const uint32_t *dims, int ndims, const uint8_t *data,
                      size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t h[4] = {0, 0, 8, (uint8_t)ndims};
    assert_int_equal(fwrite(h, 1, 4, f), 4);
    for (int d = 0; d < ndims; d++) {
        uint8_t b[4] = {(uint8_t)(dims[d] >> 24), (uint8_t)(dims[d] >> 16),
                        (uint8_t)(dims[d] >> 8), (uint8_t)dims[d]};
        assert_int_equal(fwrite(b, 1, 4, f), 4);
    }
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void write_cli_set(const char *prefix, uint32_t n, uint64_t seed)
{
    uint8_t *img = tu_xmalloc((size_t)n * 784), *lab = tu_xmalloc(n);
    tu_rng r = tu_rng_seed(seed);
    for (uint32_t i = 0; i < n; i++) {
        lab[i] = (uint8_t)(tu_rng_u64(&r) % 10);
        for (int j = 0; j < 784; j++)
            img[(size_t)i * 784 + j] = (uint8_t)(lab[i] * 25 + tu_rng_u64(&r) % 40);
    }
    char path[1200];
    uint32_t idims[3] = {n, 28, 28}, ldims[1] = {n};
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", cli_data, prefix);
    write_idx(path, idims, 3, img, (size_t)n * 784);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", cli_data, prefix);
    write_idx(path, ldims, 1, lab, n);
    free(img);
    free(lab);
}

static int cli_setup(void **state)
{
    (void)state;
    cli_dir = tu_mkdtemp("clgrad-train-cli");
    snprintf(cli_data, sizeof cli_data, "%s/data", cli_dir);
    assert_int_equal(mkdir(cli_data, 0755), 0);
    write_cli_set("train", CLI_TRAIN, 5);
    write_cli_set("t10k", CLI_TEST, 6);
    return 0;
}

/* A process a test started (a lock holder, a run) that must not outlive
 * it, whether or not the test failed: killed at its teardown. */
static pid_t test_child;

static int kill_test_child(void **state)
{
    (void)state;
    if (test_child > 0) {
        kill(test_child, SIGKILL);
        waitpid(test_child, NULL, 0);
    }
    test_child = 0;
    return 0;
}

static int cli_teardown(void **state)
{
    kill_test_child(state);
    tu_rmdir_tree(cli_dir);
    free(cli_dir);
    cli_dir = NULL;
    return 0;
}

/* A path in the scratch directory (static storage, 4 slots). */
static const char *scratch(const char *name)
{
    static char slot[4][1200];
    static int next;
    char *p = slot[next++ % 4];
    snprintf(p, sizeof slot[0], "%s/%s", cli_dir, name);
    return p;
}

static char cli_out[32768]; /* stdout and stderr of the last run */

/* Runs clgrad-train with tiny defaults (--data, --hidden 8, --batch 32,
 * --epochs 1 unless args give --steps, --quiet; later flags win) and then
 * args (NULL-terminated),
 * with a file size limit of fsize bytes when non-zero (SIGXFSZ ignored,
 * so that writes fail with EFBIG). Returns the exit status, -1 if killed;
 * the output is in cli_out. */
static int run_cli_limited(rlim_t fsize, int quiet, ...)
{
    const char *argv[64] = {train_exe(), "--data", cli_data, "--hidden", "8", "--batch", "32",
                            "--epochs", "1"};
    int argc = 9, first = argc;
    if (quiet)
        argv[argc++] = "--quiet";
    va_list ap;
    va_start(ap, quiet);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 63)
        argv[argc++] = a;
    va_end(ap);
    for (int i = first; i < argc; i++)
        if (!strcmp(argv[i], "--steps")) { /* not with --epochs: drop argv[7..8] */
            memmove(argv + 7, argv + 9, (size_t)(argc - 9) * sizeof *argv);
            argc -= 2;
            break;
        }
    argv[argc] = NULL;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[1]);
        if (fsize) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {fsize, fsize};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(125);
        }
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(126);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], cli_out + got, sizeof cli_out - 1 - got)) > 0)
        got += (size_t)r;
    cli_out[got] = 0;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (getenv("TRAIN_VERBOSE"))
        fprintf(stderr, "[%s ... %s] -> %d\n%s", argv[0], argc > 10 ? argv[10] : "",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1, cli_out);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
        fail_msg("%s", cli_out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#define run_cli(...) run_cli_limited(0, 1, __VA_ARGS__, (const char *)NULL)

static void expect_output(const char *needle)
{
    if (!strstr(cli_out, needle))
        fail_msg("output does not contain '%s':\n%s", needle, cli_out);
}

static void expect_fails(int status, const char *a, const char *b, const char *c)
{
    if (status == 0)
        fail_msg("the run succeeded:\n%s", cli_out);
    if (a)
        expect_output(a);
    if (b)
        expect_output(b);
    if (c)
        expect_output(c);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    return tu_read_file(path, n);
}

static void assert_unchanged(const char *path, const uint8_t *old, size_t n_old)
{
    size_t n;
    uint8_t *now = slurp(path, &n);
    if (n != n_old || memcmp(now, old, n) != 0)
        fail_msg("%s was changed (%zu bytes, was %zu)", path, n, n_old);
    free(now);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* No "*.tmp.*" file is left in the scratch directory. */
static void assert_no_temporaries(void)
{
    DIR *d = opendir(cli_dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp"))
            fail_msg("temporary file left: %s", e->d_name);
    closedir(d);
}

/* Issue 14, 1: an output that names an input or another output is refused
 * before anything is written, naming both flags and the path. */
static void test_cli_same_file(void **state)
{
    (void)state;
    const char *ck = scratch("c.st");
    assert_int_equal(run_cli("--steps", "2", "--checkpoint", ck), 0);
    size_t n_ck;
    uint8_t *orig = slurp(ck, &n_ck);

    expect_fails(run_cli("--resume", ck, "--metrics", ck), "--metrics", "--resume", ck);
    expect_output("same file");
    assert_unchanged(ck, orig, n_ck);
    /* The same file under another name: by inode. */
    char alias[1200];
    snprintf(alias, sizeof alias, "%s/data/../c.st", cli_dir);
    expect_fails(run_cli("--resume", ck, "--dump-weights", alias), "--dump-weights", "--resume",
                 alias);
    assert_unchanged(ck, orig, n_ck);
    const char *hard = scratch("hard.st");
    assert_int_equal(link(ck, hard), 0);
    expect_fails(run_cli("--resume", hard, "--dump-weights", ck), "--dump-weights", "--resume",
                 NULL);
    assert_unchanged(ck, orig, n_ck);
    expect_fails(run_cli("--checkpoint", ck, "--dump-weights", ck), "--checkpoint",
                 "--dump-weights", ck);
    assert_unchanged(ck, orig, n_ck);
    /* Files that do not exist yet: by resolved directory and name. */
    const char *fresh = scratch("fresh.st");
    snprintf(alias, sizeof alias, "%s/data/../fresh.st", cli_dir);
    expect_fails(run_cli("--checkpoint", fresh, "--metrics", alias), "--checkpoint", "--metrics",
                 NULL);
    assert_false(exists(fresh));
    /* An output over a data file. */
    char lab[1200];
    snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte", cli_data);
    size_t n_lab;
    uint8_t *lab_orig = slurp(lab, &n_lab);
    expect_fails(run_cli("--metrics", lab), "--metrics", "--data", lab);
    assert_unchanged(lab, lab_orig, n_lab);
    /* A run may continue its own checkpoint. */
    assert_int_equal(run_cli("--steps", "2", "--resume", ck, "--checkpoint", ck), 0);
    expect_output("after 2 updates");
    free(orig);
    free(lab_orig);
    remove(hard);
    remove(ck);
}

/* Issue 14, 2: output paths that cannot be written fail at once, not after
 * the whole run; so does a directory where a file belongs. */
static void test_cli_output_dirs(void **state)
{
    (void)state;
    const char *m = scratch("m.csv");
    static const char *const outputs[] = {"--checkpoint", "--dump-weights", "--metrics"};
    for (int i = 0; i < 3; i++) {
        char bad[256];
        snprintf(bad, sizeof bad, "/nonexistent-clgrad/%s.out", outputs[i] + 2);
        int st = run_cli_limited(0, 0, outputs[i], bad, i == 2 ? "--dump-weights" : "--metrics",
                                 m, (const char *)NULL);
        expect_fails(st, outputs[i], "/nonexistent-clgrad", "does not exist");
        if (strstr(cli_out, "epoch 1/"))
            fail_msg("%s %s: refused only after training:\n%s", outputs[i], bad, cli_out);
        assert_false(exists(m));
    }
    expect_fails(run_cli("--dump-weights", cli_dir), "--dump-weights", "is a directory", NULL);
    char under_file[1200];
    snprintf(under_file, sizeof under_file, "%s/train-labels-idx1-ubyte/ck.st", cli_data);
    expect_fails(run_cli("--checkpoint", under_file), "--checkpoint", "not a directory", NULL);
    /* --resume of a directory: said plainly, with no stale errno after it. */
    expect_fails(run_cli("--resume", cli_data), "--resume", "is a directory, not a regular file", NULL);
    if (strstr(cli_out, "File exists") || strstr(cli_out, "regular file:"))
        fail_msg("stale errno in:\n%s", cli_out);
}

/* Issue 14, 4: a resume trains as the saved run did, or names what
 * differs; --override accepts a change and the summary says so. */
static void test_cli_resume_settings(void **state)
{
    (void)state;
    const char *ck = scratch("r.st");
    assert_int_equal(run_cli("--steps", "5", "--stop-after", "2", "--lr", "0.003", "--warmup",
                             "1", "--micro-batch", "16", "--checkpoint", ck),
                     0);
    static const char *const changes[][3] = {
        {"--lr", "0.002", "saved 0.003, now 0.002"},
        {"--warmup", "2", "saved 1, now 2"},
        {"--schedule", "linear", "saved cosine, now linear"},
        {"--weight-decay", "0.05", "saved 0.01, now 0.05"},
        {"--clip", "1", "saved 0, now 1"},
        {"--steps", "6", "saved 5, now 6"},
        {"--micro-batch", "8", "saved 16, now 8"},
        {"--loss-scale", "dynamic", "saved none, now dynamic"},
        {"--grad-path", "A", "saved B, now A"},
        {"--grad-dtype", "bf16", "saved fp32, now bf16"},
        {"--lr-scale", "sqrt", "saved none, now sqrt"},
        {"--optimizer", "lion", "saved adamw, now lion"},
        {"--hidden", "9", "saved 8, now 9"},
        {"--seed", "7", "saved 42, now 7"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
        int st = run_cli("--steps", "5", "--lr", "0.003", "--warmup", "1", "--micro-batch", "16",
                         "--resume", ck, changes[i][0], changes[i][1]);
        expect_fails(st, changes[i][0], changes[i][2], NULL);
    }
    /* Accepted by name, and said in the summary. */
    assert_int_equal(run_cli("--steps", "5", "--lr", "0.002", "--warmup", "1", "--micro-batch",
                             "16", "--resume", ck, "--override", "lr"),
                     0);
    expect_output("after 5 updates");
    expect_output("overridden: --lr: 0.003 -> 0.002");
    /* The same settings resume without a word. */
    assert_int_equal(run_cli("--steps", "5", "--lr", "0.003", "--warmup", "1", "--micro-batch",
                             "16", "--resume", ck, "--json"),
                     0);
    expect_output("\"overridden\":\"\"");
    /* Settings the position depends on cannot be overridden. */
    expect_fails(run_cli("--resume", ck, "--override", "seed"), "--override",
                 "cannot be overridden", NULL);
    remove(ck);
}

/* Re-seals a checkpoint's header CRC after an edit (the library's scheme:
 * CRC-32 of the 8 length bytes and the header, its 8 digits taken as '0'),
 * so that only the trainer's own cross-check can catch the edit. */
static void reseal_header(uint8_t *f, size_t n)
{
    static const char prefix[] = "{\"__metadata__\":{\"clgrad.header_crc32\":\"0x";
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--)
        len = len << 8 | f[i];
    assert_true(len + 8 <= n);
    assert_memory_equal(f + 8, prefix, sizeof prefix - 1);
    char *digits = (char *)f + 8 + sizeof prefix - 1;
    memset(digits, '0', 8);
    uLong crc = crc32(0L, f, (uInt)(8 + len));
    char hex[9];
    snprintf(hex, sizeof hex, "%08lx", (unsigned long)crc);
    memcpy(digits, hex, 8);
}

/* The checkpoint file ck (its size in *n) with the value of its metadata
 * entry `entry` ("\"key\":\"value\"") replaced by value, as long as the
 * old one; the header CRC is left as it was. */
static uint8_t *edit_meta(const char *ck, const char *entry, const char *value, size_t *n)
{
    uint8_t *f = slurp(ck, n);
    char *at = memmem(f, *n, entry, strlen(entry));
    assert_non_null(at);
    size_t len = strlen(value);
    memcpy(at + strlen(entry) - 1 - len, value, len);
    return f;
}

/* Issue 14, 3: the update count is stored twice (the trainer's metadata and
 * the library's state); a checkpoint whose copies disagree is refused, even
 * with a valid header CRC. */
static void test_cli_counters_twice(void **state)
{
    (void)state;
    const char *ck = scratch("twice.st");
    assert_int_equal(run_cli("--steps", "5", "--stop-after", "2", "--checkpoint", ck), 0);
    size_t n;
    uint8_t *f = edit_meta(ck, "\"train.updates\":\"2\"", "4", &n);
    reseal_header(f, n);
    tu_write_file(ck, f, n);
    free(f);
    expect_fails(run_cli("--steps", "5", "--resume", ck), "inconsistent", "4 updates", NULL);
    remove(ck);
}

/* Issue 24, 8: the header CRC is checked before any stored setting is read.
 * A checkpoint whose stored --state-dtype was changed without its CRC is
 * reported as damaged (the library's message), not as saved with other
 * settings; the same edit with the CRC recomputed is a valid file whose
 * setting differs, and is reported so. */
static void test_cli_damaged_header(void **state)
{
    (void)state;
    const char *ck = scratch("damaged.st");
    assert_int_equal(run_cli("--steps", "4", "--stop-after", "2", "--checkpoint", ck), 0);
    size_t n;
    uint8_t *f = edit_meta(ck, "\"train.config.state-dtype\":\"fp32\"", "bf16", &n);
    /* the CRC the header keeps, and the one its edited bytes give */
    static const char prefix[] = "{\"__metadata__\":{\"clgrad.header_crc32\":\"0x";
    char kept[9];
    memcpy(kept, f + 8 + sizeof prefix - 1, 8);
    kept[8] = 0;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f[i];
    uint8_t *copy = tu_xmalloc(n);
    memcpy(copy, f, n);
    reseal_header(copy, n);
    char actual[9];
    memcpy(actual, copy + 8 + sizeof prefix - 1, 8);
    actual[8] = 0;
    tu_write_file(ck, f, n);
    char want[4096];
    snprintf(want, sizeof want,
             "clgrad-train: --resume: clg_checkpoint_load: '%s': header CRC-32 mismatch: the "
             "header says %s, its %llu bytes give %s (the header, its metadata or its length is "
             "damaged) (CLG_ERR_CORRUPT_FILE)\n",
             ck, kept, (unsigned long long)hlen, actual);
    expect_fails(run_cli("--steps", "4", "--resume", ck), want, NULL, NULL);
    if (strstr(cli_out, "other settings"))
        fail_msg("a damaged header read as settings:\n%s", cli_out);
    /* resealed: a forgery the CRC cannot tell, caught by the comparison */
    tu_write_file(ck, copy, n);
    expect_fails(run_cli("--steps", "4", "--resume", ck),
                 "saved with other settings: --state-dtype: saved bf16, now fp32", NULL, NULL);
    free(copy);
    free(f);
    remove(ck);
}

/* Issue 24, 8: an output flag given twice is refused at the command line
 * (the last one would silently win), before anything is written. */
static void test_cli_output_twice(void **state)
{
    (void)state;
    static const char *const outputs[] = {"--checkpoint", "--metrics", "--dump-weights"};
    for (int i = 0; i < 3; i++) {
        const char *a = scratch("a.out"), *b = scratch("b.out");
        char want[2048];
        snprintf(want, sizeof want,
                 "clgrad-train: %s: given twice ('%s', then '%s'); a run writes one file per "
                 "output flag: give it once\n", outputs[i], a, b);
        int st = run_cli("--steps", "1", outputs[i], a, outputs[i], b);
        assert_int_equal(st, 2);
        if (strcmp(cli_out, want) != 0)
            fail_msg("output\n%s\nexpected\n%s", cli_out, want);
        assert_false(exists(a));
        assert_false(exists(b));
    }
}

/* Issue 24, 4: two clgrad-train runs on one --checkpoint path. The second
 * stops at start-up naming the first (its pid) and writes nothing; after
 * the first is killed with SIGKILL, its lock file (left behind) blocks
 * nothing, and the next run removes it at its end. */
static void test_cli_two_writers(void **state)
{
    (void)state;
    const char *ck = scratch("two.st");
    char lock[1300];
    snprintf(lock, sizeof lock, "%s.lock", ck);
    fflush(NULL);
    pid_t first = test_child = fork();
    assert_true(first >= 0);
    if (first == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(train_exe(), train_exe(), "--data", cli_data, "--hidden", "8", "--batch", "32",
              "--steps", "100000000", "--quiet", "--checkpoint", ck, (char *)NULL);
        _exit(126);
    }
    /* the first run holds the lock from its start-up on: wait for its pid */
    char want_pid[32];
    snprintf(want_pid, sizeof want_pid, "%ld\n", (long)first);
    int ready = 0;
    for (int i = 0; i < 3000 && !ready && waitpid(first, NULL, WNOHANG) == 0; i++) {
        size_t n = 0;
        uint8_t *text = exists(lock) ? slurp(lock, &n) : NULL;
        ready = text && n == strlen(want_pid) && !memcmp(text, want_pid, n);
        free(text);
        if (!ready)
            usleep(10000);
    }
    const char *m = scratch("two.csv");
    char want[4096];
    snprintf(want, sizeof want,
             "clgrad-train: --checkpoint: %s is being written by another clgrad-train run (pid "
             "%ld; lock file %s); wait until it has ended, or write another path\n",
             ck, (long)first, lock);
    int st = ready ? run_cli("--steps", "1", "--checkpoint", ck, "--metrics", m) : -2;
    kill_test_child(NULL);
    if (!ready)
        fail_msg("the first run did not write its pid into %s", lock);
    assert_int_equal(st, 1);
    if (strcmp(cli_out, want) != 0)
        fail_msg("output\n%s\nexpected\n%s", cli_out, want);
    assert_false(exists(ck));
    assert_false(exists(m));
    assert_true(exists(lock)); /* the killed run's, left behind */
    assert_int_equal(run_cli("--steps", "1", "--checkpoint", ck), 0);
    assert_true(exists(ck));
    assert_false(exists(lock));
    remove(ck);
}

/* Issue 14, 6: a full disk (a file size limit on the run) fails the write
 * with its reason and leaves the previous file intact, no temporary. PoCL
 * writes about 1 MB of preprocessed CLBlast source on every run, so the
 * limit is 4 MiB and the weights are 6.5 MB (--hidden 2048). The --metrics
 * CSV of a tiny run cannot outgrow PoCL's files: test_train_units writes it
 * through the same code under a limit (test_metrics_full_disk). */
static void test_cli_full_disk(void **state)
{
    (void)state;
    const char *w = scratch("w.bin");
    static const char old_w[] = "OLD WEIGHTS\n";
    tu_write_file(w, old_w, sizeof old_w - 1);
    /* Warm the kernel caches first, so that the limited run compiles
     * nothing. */
    assert_int_equal(run_cli("--hidden", "2048", "--steps", "1"), 0);
    int st = run_cli_limited(4u << 20, 1, "--hidden", "2048", "--steps", "1", "--dump-weights", w,
                             (const char *)NULL);
    expect_fails(st, "--dump-weights", w, strerror(EFBIG));
    assert_unchanged(w, (const uint8_t *)old_w, sizeof old_w - 1);
    assert_no_temporaries();
    /* Without the limit it is replaced whole. */
    const char *m = scratch("m.csv");
    assert_int_equal(run_cli("--steps", "6", "--metrics", m, "--dump-weights", w), 0);
    size_t n;
    free(slurp(w, &n));
    assert_int_equal(n, 6370 * 4);
    uint8_t *csv = slurp(m, &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += csv[i] == '\n';
    assert_int_equal(lines, 7);
    free(csv);
    assert_no_temporaries();
    remove(w);
    remove(m);
}

/* Issue 14, 7: a number that would become a default is refused. */
static void test_cli_numbers(void **state)
{
    (void)state;
    expect_fails(run_cli("--lr", "1e-46"), "--lr", "1e-46", "underflows");
    expect_fails(run_cli("--weight-decay", "1e-46"), "--weight-decay", NULL, NULL);
    expect_fails(run_cli("--clip", "1e-46"), "--clip", NULL, NULL);
}

/* Issue 14, 9: the summary says how a batch really splits, and how many
 * samples an update has when the data set holds fewer than --batch. */
static void test_cli_summary(void **state)
{
    (void)state;
    assert_int_equal(run_cli("--batch", "64", "--micro-batch", "48", "--steps", "1"), 0);
    expect_output("updates of 64 samples (48 + 16)");
    assert_int_equal(run_cli("--batch", "128", "--steps", "1"), 0);
    expect_output("updates of 96 samples (3 x 32), the whole training set");
    if (strstr(cli_out, "128 samples"))
        fail_msg("summary claims 128 samples:\n%s", cli_out);
}
/* classify_run of o, expected to fail with exactly the message want. */
static void expect_refused(const train_options *o, const char *want)
{
    char err[1024] = "";
    train_io io = {tu_ctx, &train_ds, &test_ds, NULL, 0};
    classify_result r;
    if (classify_run(o, &io, &r, err, sizeof err) == 0)
        fail_msg("the run succeeded; expected: %s", want);
    if (strcmp(err, want) != 0)
        fail_msg("message\n  %s\nexpected\n  %s", err, want);
}

/* Issue 24, 4: one writer per checkpoint path. Another process (a child
 * here) holding the path's lock, as a run does, stops a run that would
 * write the path, or resume it, before it writes anything, naming that
 * process; once it is gone (kill -9: its lock file stays, with its pid)
 * nothing is in the way, and a run removes the lock file at its end. */
static void test_checkpoint_lock(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp("clgrad-train-lock");
    char ck[1024], lock[1100], other[1024], metrics[1024];
    snprintf(ck, sizeof ck, "%s/run.ckpt", dir);
    snprintf(lock, sizeof lock, "%s.lock", ck);
    snprintf(other, sizeof other, "%s/other.ckpt", dir);
    snprintf(metrics, sizeof metrics, "%s/m.csv", dir);
    train_options o;
    base_options(&o);
    o.steps = 3;
    o.stop_after = 1;
    o.checkpoint = ck;
    free(run(&o, NULL));
    assert_false(exists(lock)); /* removed at the end of the run */

    int ready[2];
    assert_int_equal(pipe(ready), 0);
    fflush(NULL);
    pid_t child = test_child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* holds the lock as a run does, until killed */
        int fd = open(lock, O_RDWR | O_CREAT, 0666);
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(fd, pid, (size_t)n) != n)
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char byte;
    assert_int_equal(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    size_t n_ck;
    uint8_t *saved = tu_read_file(ck, &n_ck);

    char want[4096];
    base_options(&o);
    o.checkpoint = ck;
    o.metrics = metrics;
    snprintf(want, sizeof want,
             "--checkpoint: %s is being written by another clgrad-train run (pid %ld; lock file "
             "%s); wait until it has ended, or write another path", ck, (long)child, lock);
    expect_refused(&o, want);
    o.resume = ck; /* continuing the file the other run writes */
    expect_refused(&o, want);
    o.checkpoint = other;
    snprintf(want, sizeof want,
             "--resume: %s is being written by another clgrad-train run (pid %ld; lock file %s); "
             "resume it once that run has ended", ck, (long)child, lock);
    expect_refused(&o, want);
    /* nothing written */
    assert_unchanged(ck, saved, n_ck);
    assert_false(exists(other));
    assert_false(exists(metrics));

    kill_test_child(NULL);
    assert_true(exists(lock)); /* left behind, the dead run's pid in it */
    o.checkpoint = ck;
    o.metrics = NULL;
    o.steps = 3;
    classify_result r;
    free(run(&o, &r));
    assert_int_equal(r.run.updates, 3);
    assert_false(exists(lock));
    free(saved);
    tu_rmdir_tree(dir);
    free(dir);
}

/* "1.5 MiB": a size as the trainer's messages write it (one decimal of the
 * largest binary unit it reaches, bytes below 1 KiB). */
static void human_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    for (; v >= 1024 && u < 4; u++)
        v /= 1024;
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}

/* Issue 24, 5: a combination the task cannot take stops the program at
 * its command line (exit 2), with the reason, before any device work; it
 * used to die at the first GEMM (CL_INVALID_DX9_MEDIA_SURFACE_KHR). */
static void test_cli_combination(void **state)
{
    (void)state;
    assert_int_equal(run_cli("--task", "contrastive", "--master-dtype", "bf16", "--steps", "1"),
                     2);
    assert_string_equal(cli_out, "clgrad-train: --master-dtype bf16: not with --task contrastive "
                                 "(its GEMMs read fp32 parameters; it keeps no fp32 copy of bf16 "
                                 "ones)\n");
}

/* Issue 24, 7: a plan above the device's global memory is refused before
 * anything is allocated (8 x 65536 wide layers: about 3e10 parameters,
 * 16 B each under fp32 AdamW on path B, far beyond any device), naming the
 * total and the device's size; the total is at least those 16 B per
 * parameter, and at most 1% more (step block, activations, data). */
static void test_cli_plan_over_device(void **state)
{
    (void)state;
    static const char wide[] = "65536,65536,65536,65536,65536,65536,65536,65536";
    uint64_t n = 0, prev = 784;
    for (int l = 0; l < 9; l++) {
        uint64_t out = l < 8 ? 65536 : 10;
        n += prev * out + out;
        prev = out;
    }
    uint64_t device = clg_context_device_info(tu_ctx)->global_mem_size;
    assert_true(16 * n > device);
    for (int model = 0; model < 2; model++) {
        int st = model == 0 ? run_cli("--hidden", wide, "--steps", "1")
                            : run_cli("--task", "contrastive", "--hidden", wide, "--steps", "1");
        assert_int_equal(st, 1);
        unsigned long long total = 0, dev = 0;
        const char *at = strstr(cli_out, "the device's ");
        if (sscanf(cli_out, "clgrad-train: memory plan: %llu B", &total) != 1 || !at ||
            sscanf(at, "the device's %llu B", &dev) != 1)
            fail_msg("not the plan's refusal:\n%s", cli_out);
        if (!(total >= 16 * n && total <= 16 * n + 16 * n / 100))
            fail_msg("plan total %llu B for %llu parameters", total, (unsigned long long)n);
        /* PoCL's figure follows the machine's free memory: the program's
         * context and this one's may differ a little */
        if (!(dev > device / 2 && dev < 2 * device))
            fail_msg("device memory %llu B, this context's %llu B", dev,
                     (unsigned long long)device);
        char want[1024], a[32], b[32];
        human_bytes(a, sizeof a, total);
        human_bytes(b, sizeof b, dev);
        /* the hint names the task's own size flags */
        snprintf(want, sizeof want,
                 "clgrad-train: memory plan: %llu B (%s) in all, more than the device's %llu B "
                 "(%s) of global memory; make %s smaller, or give "
                 "--allow-over-device-memory for a device that pages\n",
                 total, a, dev, b,
                 model == 0 ? "--hidden or --micro-batch"
                            : "--hidden, --embed-dim, --bank-size or --micro-batch");
        assert_string_equal(cli_out, want);
    }
}

/* Issue 24, 8: under --quiet a --tuning file that cannot be used is still
 * reported; a path in a message is one line of valid UTF-8, escaped. */
static void test_cli_reports(void **state)
{
    (void)state;
    const char *missing = scratch("no-such.tune");
    assert_int_equal(run_cli("--tuning", missing, "--steps", "1"), 0);
    const clg_device_info *d = clg_context_device_info(tu_ctx);
    char want[2048];
    snprintf(want, sizeof want,
             "warning: CLBlast tuning %s ignored: no such file; running on CLBlast's default "
             "parameters (`clgrad-tune --device %u:%u` makes a new one)\n",
             missing, d->platform_index, d->device_index);
    expect_output(want);

    const char *odd = scratch("no\nsuch\xff.st");
    assert_int_equal(run_cli("--resume", odd), 2);
    snprintf(want, sizeof want,
             "clgrad-train: --resume: %s/no\\nsuch\\xff.st: No such file or directory\n",
             cli_dir);
    assert_string_equal(cli_out, want);
}

/* Issue 24, 6: a damaged kernel cache entry is rebuilt and rewritten, and
 * the run says so once at its end; the next run finds the entry good. The
 * cache is the test's own: a run fills it, then every entry's last byte
 * (inside its binary, covered by the entry's digest) is flipped. */
static void test_cli_cache_repair(void **state)
{
    (void)state;
    const char *cache = scratch("kernel-cache");
    char *saved = getenv("CLGRAD_CACHE_DIR") ? strdup(getenv("CLGRAD_CACHE_DIR")) : NULL;
    setenv("CLGRAD_CACHE_DIR", cache, 1);
    assert_int_equal(run_cli("--steps", "1", "--tuning", "off"), 0);
    assert_null(strstr(cli_out, "kernel cache"));
    DIR *dir = opendir(cache);
    assert_non_null(dir);
    int damaged = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", cache, e->d_name);
        FILE *f = strstr(e->d_name, ".bin") ? fopen(path, "r+b") : NULL;
        if (!f)
            continue;
        assert_int_equal(fseek(f, -1, SEEK_END), 0);
        int c = fgetc(f);
        assert_int_equal(fseek(f, -1, SEEK_END), 0);
        fputc(c ^ 0x5a, f);
        assert_int_equal(fclose(f), 0);
        damaged++;
    }
    closedir(dir);
    assert_true(damaged >= 2); /* the MLP's kernels and the optimizer's at least */
    assert_int_equal(run_cli("--steps", "1", "--tuning", "off"), 0);
    char want[256];
    /* the last is clgrad's (cl/<name>.cl) or the trainer's (program "mlp") */
    snprintf(want, sizeof want, "warning: %d kernel cache entries rebuilt; the last: kernel cache: "
             "the entry of ", damaged);
    expect_output(want);
    expect_output("is damaged, truncated or not written for this program; rebuilt from source and "
                  "the entry rewritten\n");
    assert_int_equal(run_cli("--steps", "1", "--tuning", "off"), 0);
    assert_null(strstr(cli_out, "kernel cache"));
    if (saved)
        setenv("CLGRAD_CACHE_DIR", saved, 1);
    else
        unsetenv("CLGRAD_CACHE_DIR");
    free(saved);
}

/* Issue 24, 8: --vram too small for the data set says what it needs and
 * what the budget has left (a budget that holds the model, half of the
 * training set's bytes more). */
static void test_vram_data(void **state)
{
    (void)state;
    train_options o;
    base_options(&o);
    classify_result r;
    float *w = run(&o, &r);
    free(w);
    uint64_t data = (uint64_t)N_TRAIN * (DIM + 1 + 4) + (uint64_t)N_TEST * (DIM + 1 + 4);
    assert_int_equal(r.run.data_bytes, data);
    uint64_t model = r.run.peak_device_bytes - r.run.data_bytes - r.run.activation_bytes;
    o.vram = model + (uint64_t)N_TRAIN * (DIM + 5) / 2;
    char err[1024] = "";
    w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    assert_int_not_equal(classify_run(&o, &io, &r, err, sizeof err), 0);
    free(w);
    unsigned long long left = 0;
    const char *at = strstr(err, " has ");
    if (!at || sscanf(at, " has %llu B", &left) != 1)
        fail_msg("unexpected message: %s", err);
    assert_true(left < (uint64_t)N_TRAIN * (DIM + 5));
    char want[1024], a[32], b[32], c[32];
    human_bytes(a, sizeof a, data);
    human_bytes(b, sizeof b, o.vram);
    human_bytes(c, sizeof c, left);
    snprintf(want, sizeof want,
             "uploading the data set: it needs %llu B (%s) but the --vram budget of %llu B (%s) "
             "has %llu B (%s) left; raise --vram",
             (unsigned long long)data, a, (unsigned long long)o.vram, b, left, c);
    assert_string_equal(err, want);
    assert_true(clg_context_budget(tu_ctx) == 0);
}

TU_MAIN("train_e2e", group_setup, tu_group_teardown,
        cmocka_unit_test(test_micro_batch_equivalence),
        cmocka_unit_test(test_non_divisible_batch),
        cmocka_unit_test(test_grad_paths),
        cmocka_unit_test(test_loss_scaling),
        cmocka_unit_test(test_auto_micro_batch),
        cmocka_unit_test(test_outputs),
        cmocka_unit_test(test_learns),
        cmocka_unit_test(test_learns_with_small_states),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_vram_data),
        cmocka_unit_test_teardown(test_checkpoint_lock, kill_test_child),
        cmocka_unit_test_setup_teardown(test_cli_same_file, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_output_dirs, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_resume_settings, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_counters_twice, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_damaged_header, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_output_twice, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_two_writers, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_full_disk, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_numbers, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_summary, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_combination, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_plan_over_device, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_reports, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_cli_cache_repair, cli_setup, cli_teardown))
