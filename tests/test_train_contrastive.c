/* test_train_contrastive.c - clgrad-train's contrastive task
 * (tools/train/tasks/contrastive/contrastive_*.c) on a synthetic 10-class set of 28 x 28
 * images (prototype blobs plus noise, 384 training and 120 test samples):
 *   - replay: the views kernel's per-sample seeds are clg_sample_seed's,
 *     bit for bit; the views of a batch do not depend on the micro-batch
 *     size (8 or 64), and a second pass gives the same views and, through
 *     the encoder, the same embeddings (what GradCache's second forward
 *     needs);
 *   - GradCache in the trainer is the big batch: one SGD update of 64 as
 *     4 x 16 equals one of 1 x 64 (naive) within rel L2 1e-5 of the update
 *     on paths A, B and C, and naive 4 x 16 differs;
 *   - every method runs and learns (the loss falls), and its activations
 *     follow the micro-batch, not the batch (GradCache's cache follows the
 *     batch);
 *   - the kNN accuracy before training equals a host reference's (float
 *     forward of the initial weights, cosine similarities of the hidden
 *     layer's features or of the embeddings, the same vote), and a budget
 *     that leaves room for 10 rows of similarities gives the same accuracy;
 *   - checkpoint and resume are bit-exact for GradCache and ContAccum (the
 *     banks come back with the model), a resume with another method is
 *     refused naming the flag, and one of the other task's checkpoint
 *     (either way) naming both tasks;
 *   - the command line: --task contrastive's --json fields, and the flags'
 *     errors. */
#include <setjmp.h>
#include "clgrad_advanced.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "classify_run.h"
#include "contrastive_encoder.h"
#include "contrastive_run.h"
#include "dataset.h"
#include "mlp.h"
#include "tasks.h"
#include "train_kernels.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_TRAIN = 384, N_TEST = 120, PIX = 28 * 28, HID = 32, EMB = 16 };

static uint8_t train_img[N_TRAIN * PIX], train_lab[N_TRAIN];
static uint8_t test_img[N_TEST * PIX], test_lab[N_TEST];
static dataset train_ds, test_ds;
static const unsigned dims[] = {PIX, HID, EMB};
static uint64_t n_params;

/* A bright 8 x 8 blob at a class's place, plus noise. */
static void make_data(uint8_t *img, uint8_t *lab, int n, uint64_t seed)
{
    tu_rng r = tu_rng_seed(seed);
    for (int i = 0; i < n; i++) {
        int c = (int)(tu_rng_u64(&r) % 10);
        lab[i] = (uint8_t)c;
        int y0 = 2 + (c / 5) * 12 + (int)(tu_rng_u64(&r) % 3), x0 = 2 + (c % 5) * 5;
        for (int p = 0; p < PIX; p++) {
            int y = p / 28, x = p % 28;
            int v = (int)(tu_rng_u64(&r) % 60);
            if (y >= y0 && y < y0 + 8 && x >= x0 && x < x0 + 4)
                v += 180;
            img[i * PIX + p] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static int group_setup(void **state)
{
    if (tu_group_setup_tmpdir(state) != 0)
        return -1;
    make_data(train_img, train_lab, N_TRAIN, 1);
    make_data(test_img, test_lab, N_TEST, 2);
    char err[256];
    if (dataset_wrap(train_img, train_lab, N_TRAIN, PIX, &train_ds, err, sizeof err) != 0 ||
        dataset_wrap(test_img, test_lab, N_TEST, PIX, &test_ds, err, sizeof err) != 0)
        return -1;
    n_params = mlp_param_count(dims, 3);
    return 0;
}

static void base(train_options *o, con_options *c, con_method m, unsigned batch, unsigned micro)
{
    train_options_default(o);
    o->hidden[0] = HID;
    o->n_hidden = 1;
    o->batch = batch;
    o->micro_batch = micro;
    o->steps = 6;
    o->warmup = 1;
    o->lr = 3e-3f;
    o->given |= TRAIN_GIVEN_LR | TRAIN_GIVEN_MICRO_BATCH;
    o->quiet = 1;
    con_options_default(c);
    c->method = m;
    c->embed_dim = EMB;
    c->knn = 5;
}

static float *run(train_options *o, con_options *c, con_result *res)
{
    char err[2048] = "";
    assert_int_equal(train_options_check(o, err, sizeof err), 0);
    if (con_options_check(c, o, err, sizeof err) != 0)
        fail_msg("con_options_check: %s", err);
    float *w = tu_xmalloc(n_params * sizeof *w);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    con_result local;
    if (contrastive_run(o, c, &io, res ? res : &local, err, sizeof err) != 0)
        fail_msg("contrastive_run: %s", err);
    return w;
}

static double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}

/* ------------------------------------------------------------ replay */

static cl_mem upload(const void *h, size_t bytes)
{
    cl_int e;
    cl_mem m = clCreateBuffer(clg_context_cl(tu_ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, (void *)h, &e);
    assert_int_equal(e, CL_SUCCESS);
    return m;
}

static void run_kernel(cl_kernel k, size_t global)
{
    assert_int_equal(clEnqueueNDRangeKernel(clg_context_queue(tu_ctx), k, 1, NULL, &global, NULL,
                                            0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clFinish(clg_context_queue(tu_ctx)), CL_SUCCESS);
}

/* Views of batch positions [p0, p0 + rows) of update u into x. */
static void views(cl_kernel k, cl_mem img, cl_mem idx, cl_uint p0, cl_uint rows, cl_ulong u,
                  cl_mem x)
{
    cl_uint off = p0, shift = 2;
    cl_ulong seed = 42;
    cl_float noise = 0.1f;
    clSetKernelArg(k, 0, sizeof img, &img), clSetKernelArg(k, 1, sizeof idx, &idx);
    clSetKernelArg(k, 2, sizeof off, &off), clSetKernelArg(k, 3, sizeof rows, &rows);
    clSetKernelArg(k, 4, sizeof seed, &seed), clSetKernelArg(k, 5, sizeof u, &u);
    clSetKernelArg(k, 6, sizeof p0, &p0), clSetKernelArg(k, 7, sizeof shift, &shift);
    clSetKernelArg(k, 8, sizeof noise, &noise), clSetKernelArg(k, 9, sizeof x, &x);
    run_kernel(k, (size_t)2 * rows * PIX);
}

static void test_replay(void **state)
{
    (void)state;
    cl_program prog;
    OK(clg_context_program_source(tu_ctx, "contrastive_train",
                                  train_kernel_source("contrastive_train"),
                                  "-DIMG_ROWS=28 -DIMG_COLS=28", &prog, NULL));
    cl_int e;
    /* the device's seeds are clg_sample_seed's */
    cl_kernel ks = clCreateKernel(prog, "con_seeds", &e);
    assert_int_equal(e, CL_SUCCESS);
    enum { NS = 300 };
    cl_mem seeds = upload((uint64_t[NS]){0}, NS * 8);
    cl_ulong seed = 0xfedcba9876543210ull, u = 1234567;
    cl_uint p0 = 77, rows = NS;
    clSetKernelArg(ks, 0, sizeof seed, &seed), clSetKernelArg(ks, 1, sizeof u, &u);
    clSetKernelArg(ks, 2, sizeof p0, &p0), clSetKernelArg(ks, 3, sizeof rows, &rows);
    clSetKernelArg(ks, 4, sizeof seeds, &seeds);
    run_kernel(ks, NS);
    uint64_t got[NS];
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), seeds, CL_TRUE, 0, sizeof got,
                                         got, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int i = 0; i < NS; i++)
        assert_true(got[i] == clg_sample_seed(seed, u, 77 + (uint64_t)i));

    /* views by micro-batches of 8 and of 64, and a second pass */
    enum { B = 128 };
    int32_t idx[B];
    for (int i = 0; i < B; i++)
        idx[i] = (i * 37) % N_TRAIN;
    cl_mem img = upload(train_img, sizeof train_img), ix = upload(idx, sizeof idx);
    cl_kernel kv = clCreateKernel(prog, "con_views", &e);
    assert_int_equal(e, CL_SUCCESS);
    float *x = tu_xmalloc(2 * 64 * PIX * 4);
    cl_mem dx = upload(x, 2 * 64 * PIX * 4);
    float *by8 = tu_xmalloc(2 * B * PIX * 4), *by64 = tu_xmalloc(2 * B * PIX * 4);
    for (int pass = 0; pass < 3; pass++) {
        unsigned m = pass == 0 ? 8 : 64;
        float *dst = pass == 0 ? by8 : by64;
        for (unsigned p = 0; p < B; p += m) {
            views(kv, img, ix, p, m, 9, dx);
            assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), dx, CL_TRUE, 0,
                                                 2 * m * PIX * 4, x, 0, NULL, NULL),
                             CL_SUCCESS);
            for (int v = 0; v < 2; v++) /* view v of row r is row v * m + r */
                memcpy(dst + ((size_t)v * B + p) * PIX, x + (size_t)v * m * PIX,
                       (size_t)m * PIX * 4);
        }
        if (pass == 2) /* a second pass: the same views */
            assert_memory_equal(by64, by8, 2 * B * PIX * 4);
    }
    assert_memory_equal(by8, by64, 2 * B * PIX * 4);
    /* the views differ between updates and between the two views */
    views(kv, img, ix, 0, 8, 10, dx);
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), dx, CL_TRUE, 0, 8 * PIX * 4, x,
                                         0, NULL, NULL),
                     CL_SUCCESS);
    assert_true(memcmp(x, by8, 8 * PIX * 4) != 0);
    assert_true(memcmp(by8, by8 + (size_t)B * PIX, 8 * PIX * 4) != 0);

    /* the encoder gives the same embeddings twice */
    char err[256];
    con_encoder *enc;
    assert_int_equal(con_encoder_create(tu_ctx, dims, 3, &enc, err, sizeof err), 0);
    clg_config cfg = clg_config_init(CLG_SGD);
    clg_model *model;
    OK(clg_model_create(tu_ctx, &cfg, &model));
    OK(con_encoder_add_tensors(enc, model, 0));
    OK(clg_model_finalize(model));
    OK(con_encoder_bind(enc, model));
    tu_upload_uniform_params(model, 5);
    OK(con_encoder_alloc(enc, 128));
    float *e1 = tu_xmalloc(128 * EMB * 4), *e2 = tu_xmalloc(128 * EMB * 4);
    for (int pass = 0; pass < 2; pass++) {
        views(kv, img, ix, 0, 64, 9, enc->x);
        assert_int_equal(con_encoder_forward(enc, 128), CL_SUCCESS);
        assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), con_encoder_output(enc),
                                             CL_TRUE, 0, 128 * EMB * 4, pass ? e2 : e1, 0, NULL,
                                             NULL),
                         CL_SUCCESS);
    }
    assert_memory_equal(e1, e2, 128 * EMB * 4);
    free(e1), free(e2), free(x), free(by8), free(by64);
    con_encoder_destroy(enc);
    clg_model_destroy(model);
    clReleaseKernel(ks), clReleaseKernel(kv);
    clReleaseMemObject(seeds), clReleaseMemObject(img), clReleaseMemObject(ix);
    clReleaseMemObject(dx);
}

/* ------------------------------------------------------------ GradCache = big batch */

static void test_gradcache_is_big_batch(void **state)
{
    (void)state;
    float *w0 = tu_xmalloc(n_params * 4);
    mlp_init_params(dims, 3, 42, w0);
    for (int path = GRAD_PATH_A; path <= GRAD_PATH_C; path++) {
        train_options o;
        con_options c;
        float *w[3];
        const con_method how[3] = {CON_NAIVE, CON_GRADCACHE, CON_NAIVE};
        const unsigned micro[3] = {64, 16, 16};
        for (int i = 0; i < 3; i++) {
            base(&o, &c, how[i], 64, micro[i]);
            o.optimizer = CLG_SGD;
            o.lr = 0.5f;
            o.steps = 1;
            o.warmup = 0;
            o.schedule = CLG_SCHED_CONSTANT;
            o.path = (grad_path)path;
            o.path_given = 1;
            w[i] = run(&o, &c, NULL);
            for (uint64_t j = 0; j < n_params; j++)
                w[i][j] -= w0[j]; /* the update */
        }
        double gc = rel_l2(w[1], w[0], n_params), nv = rel_l2(w[2], w[0], n_params);
        print_message("path %c: GradCache 4 x 16 vs 1 x 64: rel L2 %.2e; naive 4 x 16: %.3f\n",
                      "ABC"[path], gc, nv);
        assert_true(gc <= 1e-5);
        assert_true(nv > 1e-2);
        for (int i = 0; i < 3; i++)
            free(w[i]);
    }
    free(w0);
}

/* ------------------------------------------------------------ methods, memory */

/* The blobs made faint: each pixel's noise below 60 (the blob added 180)
 * redrawn below 100, the blob's 180 made 80. The kNN accuracy before
 * training is then about half (measured: 0.517 on the test set of 120) and
 * not 1, so that learning shows in it. */
static uint8_t *faint(const uint8_t *img, size_t n, uint64_t seed)
{
    uint8_t *out = tu_xmalloc(n);
    tu_rng r = tu_rng_seed(seed);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)((img[i] >= 180 ? 80 : 0) + tu_rng_u64(&r) % 100);
    return out;
}

static void test_methods_learn(void **state)
{
    (void)state;
    const con_method ms[3] = {CON_NAIVE, CON_GRADCACHE, CON_CONTACCUM};
    con_result r16[3], r64;
    for (int i = 0; i < 3; i++) {
        train_options o;
        con_options c;
        base(&o, &c, ms[i], 128, 16);
        o.steps = 12;
        c.knn_init = 1;
        free(run(&o, &c, &r16[i]));
        print_message("%-9s 8 x 16: loss %.3f, kNN %.3f (before %.3f), activations %llu, cache "
                      "%llu, peak %llu\n", con_method_name(ms[i]), r16[i].loss,
                      r16[i].knn_accuracy, r16[i].knn_accuracy_init,
                      (unsigned long long)r16[i].run.activation_bytes,
                      (unsigned long long)r16[i].cache_bytes,
                      (unsigned long long)r16[i].run.peak_device_bytes);
        assert_true(isfinite(r16[i].loss));
        assert_int_equal(r16[i].run.updates, 12);
        assert_int_equal(r16[i].run.micro_steps, 12 * 8);
        assert_true(r16[i].knn_accuracy > 0.5); /* the blobs are easy */
        assert_true(r16[i].run.samples_per_s > 0);
    }
    /* the same batch as 2 x 64: activations x 4, GradCache's cache as is */
    train_options o;
    con_options c;
    base(&o, &c, CON_GRADCACHE, 128, 64);
    o.steps = 2;
    free(run(&o, &c, &r64));
    assert_int_equal(r64.run.activation_bytes, 4 * r16[1].run.activation_bytes);
    assert_int_equal(r64.cache_bytes, r16[1].cache_bytes);
    /* ContAccum's banks (the batch's rows per side) come on top of its
     * micro-batch's cache */
    assert_true(r16[2].cache_bytes > r16[0].cache_bytes);

    /* Learning: on the faint blobs, 12 updates raise the kNN accuracy by
     * at least 0.25 (30 of the 120 test samples) above the accuracy before
     * them; measured 0.625 -> 1.000 (naive), 0.992 (GradCache). Updates
     * that do nothing (lr 0) leave it where it was. ContAccum is held to a
     * falling loss only (test_loss_falls): on blobs this faint its loss
     * stayed at ln(144) = 4.97 over 40 updates (measured kNN 0.517 ->
     * 0.458). */
    const dataset easy[2] = {train_ds, test_ds};
    uint8_t *hard_train = faint(train_img, sizeof train_img, 3);
    uint8_t *hard_test = faint(test_img, sizeof test_img, 4);
    char err[256];
    assert_int_equal(dataset_wrap(hard_train, train_lab, N_TRAIN, PIX, &train_ds, err, sizeof err),
                     0);
    assert_int_equal(dataset_wrap(hard_test, test_lab, N_TEST, PIX, &test_ds, err, sizeof err), 0);
    con_result r[2];
    for (int i = 0; i < 2; i++) {
        base(&o, &c, ms[i], 128, 16);
        o.steps = 12;
        c.knn_init = 1;
        free(run(&o, &c, &r[i]));
        print_message("%-9s faint blobs: kNN %.3f, before %.3f\n", con_method_name(ms[i]),
                      r[i].knn_accuracy, r[i].knn_accuracy_init);
    }
    train_ds = easy[0]; /* before anything fails: the other tests' data */
    test_ds = easy[1];
    free(hard_train);
    free(hard_test);
    for (int i = 0; i < 2; i++)
        assert_true(r[i].knn_accuracy >= r[i].knn_accuracy_init + 0.25);
}

/* The loss falls over a longer run of each method. */
static void test_loss_falls(void **state)
{
    (void)state;
    const con_method ms[3] = {CON_NAIVE, CON_GRADCACHE, CON_CONTACCUM};
    for (int i = 0; i < 3; i++) {
        double loss[2];
        for (int j = 0; j < 2; j++) {
            train_options o;
            con_options c;
            base(&o, &c, ms[i], 64, 32);
            o.steps = j == 0 ? 1 : 30;
            o.schedule = CLG_SCHED_CONSTANT;
            con_result r;
            free(run(&o, &c, &r));
            loss[j] = r.loss;
        }
        print_message("%-9s loss: first update %.3f, after 30 updates (their epoch) %.3f\n",
                      con_method_name(ms[i]), loss[0], loss[1]);
        assert_true(loss[1] < loss[0]);
    }
}

/* ------------------------------------------------------------ kNN */

/* The host's view of the evaluation: initial weights, float forward to the
 * hidden layer or the embedding, cosine similarities, the k most similar,
 * majority with ties to the larger summed similarity. */
static double host_knn(unsigned k, int embedding)
{
    const int F = embedding ? EMB : HID; /* the features compared */
    float *w = tu_xmalloc(n_params * 4);
    mlp_init_params(dims, 3, 42, w);
    const float *w1 = w, *b1 = w + HID * PIX, *w2 = b1 + HID, *b2 = w2 + EMB * HID;
    float *etr = tu_xmalloc(N_TRAIN * HID * 4), *ete = tu_xmalloc(N_TEST * HID * 4);
    for (int set = 0; set < 2; set++) {
        const uint8_t *img = set ? test_img : train_img;
        float *e = set ? ete : etr;
        for (int i = 0; i < (set ? N_TEST : N_TRAIN); i++) {
            float h[HID], norm = 0;
            for (int j = 0; j < HID; j++) {
                float s = b1[j];
                for (int p = 0; p < PIX; p++)
                    s += w1[j * PIX + p] * (img[i * PIX + p] / 255.0f);
                h[j] = s > 0 ? s : 0;
            }
            float z[HID];
            for (int o = 0; o < EMB; o++) {
                float s = b2[o];
                for (int j = 0; j < HID; j++)
                    s += w2[o * HID + j] * h[j];
                z[o] = s;
            }
            const float *f = embedding ? z : h;
            for (int o = 0; o < F; o++)
                norm += f[o] * f[o];
            for (int o = 0; o < F; o++)
                e[i * F + o] = norm > 0 ? f[o] / sqrtf(norm) : f[o];
        }
    }
    int correct = 0;
    for (int t = 0; t < N_TEST; t++) {
        float best[32];
        int lab[32], have = 0;
        for (int j = 0; j < N_TRAIN; j++) {
            float s = 0;
            for (int o = 0; o < F; o++)
                s += ete[t * F + o] * etr[j * F + o];
            if (have == (int)k && s <= best[k - 1])
                continue;
            int p = have < (int)k ? have++ : (int)k - 1;
            while (p > 0 && best[p - 1] < s) {
                best[p] = best[p - 1], lab[p] = lab[p - 1];
                p--;
            }
            best[p] = s, lab[p] = train_lab[j];
        }
        int count[10] = {0}, win = 0;
        float weight[10] = {0};
        for (int i = 0; i < have; i++)
            count[lab[i]]++, weight[lab[i]] += best[i];
        for (int c = 1; c < 10; c++)
            if (count[c] > count[win] || (count[c] == count[win] && weight[c] > weight[win]))
                win = c;
        correct += win == test_lab[t];
    }
    free(w), free(etr), free(ete);
    return (double)correct / N_TEST;
}

static void test_knn_against_host(void **state)
{
    (void)state;
    for (int embedding = 0; embedding < 2; embedding++) {
        train_options o;
        con_options c;
        base(&o, &c, CON_NAIVE, 64, 64);
        o.steps = 1;
        c.knn_init = 1;
        c.knn = 7;
        c.knn_embedding = embedding;
        con_result r;
        free(run(&o, &c, &r));
        double host = host_knn(7, embedding);
        print_message("kNN on the %s before training: device %.4f, host %.4f\n",
                      embedding ? "embedding" : "hidden layer", r.knn_accuracy_init, host);
        /* similarities rounded differently may swap a neighbour at a tie */
        assert_true(fabs(r.knn_accuracy_init - host) <= 1.5 / N_TEST);
    }
}

/* Under a budget that leaves room for 10 rows of similarities, the kNN
 * evaluation goes 10 test rows at a time and finds the same accuracy. */
static void test_knn_under_budget(void **state)
{
    (void)state;
    train_options o;
    con_options c;
    con_result r1, r2;
    base(&o, &c, CON_GRADCACHE, 64, 32);
    o.steps = 2;
    free(run(&o, &c, &r1));
    uint64_t features = 4ull * (N_TRAIN + (N_TRAIN + N_TEST) * HID), row = 4ull * N_TRAIN;
    base(&o, &c, CON_GRADCACHE, 64, 32);
    o.steps = 2;
    o.vram = clg_context_device_bytes(tu_ctx) + r1.run.model_bytes + r1.cache_bytes +
             r1.run.activation_bytes + r1.run.data_bytes + features + 10 * row;
    o.given |= TRAIN_GIVEN_VRAM;
    free(run(&o, &c, &r2));
    assert_int_equal(r2.eval_bytes, features + 10 * row);
    assert_true(r2.knn_accuracy == r1.knn_accuracy);
    /* one row less than the features need: refused, saying why */
    base(&o, &c, CON_GRADCACHE, 64, 32);
    o.steps = 1;
    o.vram = clg_context_device_bytes(tu_ctx) + r1.run.model_bytes + r1.cache_bytes +
             r1.run.activation_bytes + r1.run.data_bytes + features;
    o.given |= TRAIN_GIVEN_VRAM;
    char err[2048] = "";
    float *w = tu_xmalloc(n_params * 4);
    train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
    assert_int_equal(train_options_check(&o, err, sizeof err), 0);
    assert_int_equal(con_options_check(&c, &o, err, sizeof err), 0);
    assert_int_equal(contrastive_run(&o, &c, &io, &r2, err, sizeof err), -1);
    assert_non_null(strstr(err, "do not fit the budget"));
    free(w);
}

/* ------------------------------------------------------------ checkpoints */

static void test_resume_bit_exact(void **state)
{
    (void)state;
    const con_method ms[2] = {CON_GRADCACHE, CON_CONTACCUM};
    for (int i = 0; i < 2; i++) {
        train_options o;
        con_options c;
        base(&o, &c, ms[i], 64, 16);
        o.steps = 8;
        float *straight = run(&o, &c, NULL);
        char *ck = tu_tmp_path("con.ckpt");
        base(&o, &c, ms[i], 64, 16);
        o.steps = 8;
        o.stop_after = 3;
        o.checkpoint = ck;
        free(run(&o, &c, NULL));
        base(&o, &c, ms[i], 64, 16);
        o.steps = 8;
        o.resume = ck;
        con_result r;
        float *resumed = run(&o, &c, &r);
        assert_int_equal(r.run.updates, 8);
        assert_memory_equal(straight, resumed, n_params * 4);
        /* another method is refused, naming the flag */
        base(&o, &c, ms[i] == CON_GRADCACHE ? CON_NAIVE : CON_GRADCACHE, 64, 16);
        o.steps = 8;
        o.resume = ck;
        char err[2048] = "";
        assert_int_equal(train_options_check(&o, err, sizeof err), 0);
        assert_int_equal(con_options_check(&c, &o, err, sizeof err), 0);
        float *w = tu_xmalloc(n_params * 4);
        train_io io = {tu_ctx, &train_ds, &test_ds, w, n_params};
        assert_int_equal(contrastive_run(&o, &c, &io, &r, err, sizeof err), -1);
        print_message("%s\n", err);
        assert_non_null(strstr(err, "--contrastive: saved"));
        free(w), free(straight), free(resumed), free(ck);
    }
}

/* Issue 24, 2: a checkpoint resumes only in the task that saved it, refused
 * before anything is loaded, naming both tasks. The contrastive encoder
 * here has the classifier's shapes (an embedding of 10) and the same core
 * settings, so that nothing else would tell the files apart. */
static void test_resume_other_task(void **state)
{
    (void)state;
    train_set_tasks(train_tasks, train_n_tasks); /* the default task, as main has it */
    train_options o;
    con_options c;
    base(&o, &c, CON_GRADCACHE, 64, 16);
    c.embed_dim = 10;
    o.stop_after = 2;
    char *con_ck = tu_tmp_path("task-con.ckpt"), *cls_ck = tu_tmp_path("task-cls.ckpt");
    o.checkpoint = con_ck;
    free(run(&o, &c, NULL));
    /* the classifier resuming it */
    o.checkpoint = NULL;
    o.stop_after = 0;
    o.resume = con_ck;
    char err[2048] = "", want[2048];
    classify_result tr;
    train_io io = {tu_ctx, &train_ds, &test_ds, NULL, 0};
    assert_int_equal(classify_run(&o, &io, &tr, err, sizeof err), -1);
    snprintf(want, sizeof want, "--resume: %s is a checkpoint of --task contrastive, and this run "
             "is --task classify: a checkpoint resumes only in the task that saved it", con_ck);
    assert_string_equal(err, want);
    /* the other way */
    o.resume = NULL;
    o.stop_after = 2;
    o.checkpoint = cls_ck;
    assert_int_equal(classify_run(&o, &io, &tr, err, sizeof err), 0);
    o.checkpoint = NULL;
    o.stop_after = 0;
    o.resume = cls_ck;
    con_result cr;
    assert_int_equal(contrastive_run(&o, &c, &io, &cr, err, sizeof err), -1);
    snprintf(want, sizeof want, "--resume: %s is a checkpoint of --task classify, and this run "
             "is --task contrastive: a checkpoint resumes only in the task that saved it", cls_ck);
    assert_string_equal(err, want);
    /* its own task's file still resumes */
    o.resume = con_ck;
    free(run(&o, &c, &cr));
    assert_int_equal(cr.run.updates, 6);
    remove(con_ck);
    remove(cls_ck);
    free(con_ck);
    free(cls_ck);
}

/* ------------------------------------------------------------ the command line */

static int run_exe(const char *out, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(out, "w", stdout);
        (void)f;
        if (!freopen(out, "a", stderr))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* An IDX file (big-endian header, unsigned bytes), as dataset_load reads. */
static void write_idx(const char *path, const uint32_t *d, int nd, const uint8_t *data,
                      size_t n)
{
    uint8_t *buf = tu_xmalloc(4 + 4 * (size_t)nd + n);
    buf[0] = buf[1] = 0;
    buf[2] = 0x08;
    buf[3] = (uint8_t)nd;
    for (int i = 0; i < nd; i++)
        for (int b = 0; b < 4; b++)
            buf[4 + 4 * i + b] = (uint8_t)(d[i] >> (24 - 8 * b));
    memcpy(buf + 4 + 4 * nd, data, n);
    tu_write_file(path, buf, 4 + 4 * (size_t)nd + n);
    free(buf);
}

static void test_cli(void **state)
{
    (void)state;
    const char *exe = getenv("CLGRAD_TRAIN_EXE") ? getenv("CLGRAD_TRAIN_EXE") : CLGRAD_TRAIN_EXE;
    char *out = tu_tmp_path("cli.out");
    size_t n;
    /* flags that need the task, or that it cannot take */
    char *const bad[][6] = {
        {(char *)exe, "--contrastive", "naive", NULL},
        {(char *)exe, "--task", "contrastive", "--grad-dtype", "fp16", NULL},
        {(char *)exe, "--task", "contrastive", "--bank-size", "64", NULL},
        {(char *)exe, "--task", "cluster", NULL},
        {(char *)exe, "--task", "contrastive", "--temperature", "0", NULL},
    };
    const char *why[] = {"need --task contrastive", "--grad-dtype fp16", "only --contrastive "
                         "contaccum has banks", "--task: expected classify, contrastive or gpt",
                         "--temperature: expected a number in [0.0001, 100]"};
    char *text;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(run_exe(out, bad[i]), 2);
        text = (char *)tu_read_file(out, &n);
        if (!strstr(text, why[i]))
            fail_msg("'%s' not in: %s", why[i], text);
        free(text);
    }
    /* a run on IDX files of the synthetic set: the summary and --json */
    char *dir = tu_tmp_path("data");
    assert_int_equal(mkdir(dir, 0755), 0);
    char path[4096];
    const uint32_t tr[3] = {N_TRAIN, 28, 28}, te[3] = {N_TEST, 28, 28};
    const uint32_t trl[1] = {N_TRAIN}, tel[1] = {N_TEST};
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    write_idx(path, tr, 3, train_img, sizeof train_img);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
    write_idx(path, trl, 1, train_lab, sizeof train_lab);
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", dir);
    write_idx(path, te, 3, test_img, sizeof test_img);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", dir);
    write_idx(path, tel, 1, test_lab, sizeof test_lab);
    char *const good[] = {(char *)exe, "--task", "contrastive", "--contrastive", "contaccum",
                          "--data", dir, "--batch", "64", "--micro-batch", "16", "--steps", "3",
                          "--hidden", "32", "--embed-dim", "16", "--bank-size", "100", "--knn",
                          "5", "--json", "--quiet", NULL};
    assert_int_equal(run_exe(out, good), 0);
    text = (char *)tu_read_file(out, &n);
    const char *fields[] = {"kNN test accuracy", "(4 x 16, contaccum)", "\"task\":\"contrastive\"",
                            "\"contrastive\":\"contaccum\"", "\"loss\":", "\"knn_accuracy\":",
                            "\"samples_per_s\":", "\"peak_device_bytes\":", "\"bank_size\":100",
                            "\"activation_bytes\":", "\"cache_bytes\":", "\"updates\":3"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strstr(text, fields[i]))
            fail_msg("'%s' not in: %s", fields[i], text);
    assert_null(strstr(text, "nan"));
    free(text);
    free(dir);

    /* --help lists the task's flags */
    char *const help[] = {(char *)exe, "--help", NULL};
    assert_int_equal(run_exe(out, help), 0);
    text = (char *)tu_read_file(out, &n);
    assert_non_null(strstr(text, "--contrastive M"));
    free(text);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_gradcache_is_big_batch),
        cmocka_unit_test(test_methods_learn),
        cmocka_unit_test(test_loss_falls),
        cmocka_unit_test(test_knn_against_host),
        cmocka_unit_test(test_knn_under_budget),
        cmocka_unit_test(test_resume_bit_exact),
        cmocka_unit_test(test_resume_other_task),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, group_setup, tu_group_teardown);
}
