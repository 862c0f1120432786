/* test_gradcache.c - GradCache through clgrad: an effective batch of B
 * pairs split into k micro-batches gives the parameter gradient of one
 * batch of B, on the normal accumulation paths, and plain accumulation
 * does not.
 *
 * The encoder is a small two-layer network written here in plain OpenCL
 * (rep = W2 relu(W1 x + b1), shared by both views, SimCLR style), its
 * parameters a clgrad model. Each sample's two views are its input plus
 * noise seeded by clg_sample_seed(seed, update, position), so that the
 * second forward of GradCache rebuilds exactly the first one's views.
 *
 * For each (B, k), k = B included, and uneven splits:
 *   - big batch: one micro-batch of B rows, weight B;
 *   - GradCache: forward all k micro-batches into the cache, one compute,
 *     then per micro-batch the forward again (its representations checked
 *     bit for bit against the cache: the replay) and the backward with
 *     the micro-batch's slice of the gradient, weight m_j;
 *   - naive: per micro-batch its own loss over its own rows.
 * The accumulated gradient (clg_model_download_acc / the sum of weights,
 * a cycle one step longer than k so that no update runs) of GradCache
 * matches the big batch's within rel L2 1e-5 on paths A and B; on path C
 * the parameters after the update match within 1e-5 of the update's size.
 * Naive accumulation's difference is printed and must exceed 1e-2. */
#include "contrastive.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { DIN = 12, DH = 16, DOUT = 8, NSAMPLES = 256 };
static const uint64_t SEED = 99;

static const char *const enc_source =
    "kernel void enc_hidden(global const float *x, uint rows, global const float *w1, ulong w1o,\n"
    "                       global const float *b1, ulong b1o, global float *h)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= (size_t)rows * DH) return;\n"
    "    size_t r = i / DH, j = i % DH;\n"
    "    float s = b1[b1o + j];\n"
    "    for (uint c = 0; c < DIN; c++) s += w1[w1o + j * DIN + c] * x[r * DIN + c];\n"
    "    h[i] = fmax(s, 0.0f);\n"
    "}\n"
    "kernel void enc_out(global const float *h, uint rows, global const float *w2, ulong w2o,\n"
    "                    global float *y)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= (size_t)rows * DOUT) return;\n"
    "    size_t r = i / DOUT, o = i % DOUT;\n"
    "    float s = 0.0f;\n"
    "    for (uint j = 0; j < DH; j++) s += w2[w2o + o * DH + j] * h[r * DH + j];\n"
    "    y[i] = s;\n"
    "}\n"
    /* dW2 = beta dW2 + g^T h; dh = (g W2) * [h > 0]; dW1 = beta dW1 + dh^T x;
     * db1 = beta db1 + sum dh (beta 0 never reads the target) */
    "kernel void enc_back2(global const float *g, global const float *h, uint rows,\n"
    "                      global float *dw2, ulong off, float beta)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= DOUT * DH) return;\n"
    "    size_t o = i / DH, j = i % DH;\n"
    "    float s = 0.0f;\n"
    "    for (uint r = 0; r < rows; r++) s += g[r * DOUT + o] * h[r * DH + j];\n"
    "    dw2[off + i] = beta == 0.0f ? s : beta * dw2[off + i] + s;\n"
    "}\n"
    "kernel void enc_dh(global const float *g, global const float *h, uint rows,\n"
    "                   global const float *w2, ulong w2o, global float *dh)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= (size_t)rows * DH) return;\n"
    "    size_t r = i / DH, j = i % DH;\n"
    "    float s = 0.0f;\n"
    "    for (uint o = 0; o < DOUT; o++) s += g[r * DOUT + o] * w2[w2o + o * DH + j];\n"
    "    dh[i] = h[i] > 0.0f ? s : 0.0f;\n"
    "}\n"
    "kernel void enc_back1(global const float *dh, global const float *x, uint rows,\n"
    "                      global float *dw1, ulong woff, global float *db1, ulong boff,\n"
    "                      float beta)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i >= DH * DIN + DH) return;\n"
    "    float s = 0.0f;\n"
    "    if (i < DH * DIN) {\n"
    "        size_t j = i / DIN, c = i % DIN;\n"
    "        for (uint r = 0; r < rows; r++) s += dh[r * DH + j] * x[r * DIN + c];\n"
    "        dw1[woff + i] = beta == 0.0f ? s : beta * dw1[woff + i] + s;\n"
    "    } else {\n"
    "        size_t j = i - DH * DIN;\n"
    "        for (uint r = 0; r < rows; r++) s += dh[r * DH + j];\n"
    "        db1[boff + j] = beta == 0.0f ? s : beta * db1[boff + j] + s;\n"
    "    }\n"
    "}\n";

typedef struct enc {
    cl_program prog;
    cl_kernel hidden, out, back2, dh, back1;
    size_t cap;                     /* rows of the buffers */
    cl_mem x[2], h[2], y[2], g, dhb; /* per view: input, hidden, output */
} enc;

static enc E;
static float *base; /* NSAMPLES x DIN inputs */

static cl_mem buffer(size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(tu_ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

static int setup(void **state)
{
    int rc = tu_group_setup(state);
    if (rc != 0)
        return rc;
    cl_int err;
    E.prog = clCreateProgramWithSource(clg_context_cl(tu_ctx), 1, (const char **)&enc_source,
                                       NULL, &err);
    cl_device_id dev = clg_context_device(tu_ctx);
    char opt[64];
    snprintf(opt, sizeof opt, "-DDIN=%d -DDH=%d -DDOUT=%d", DIN, DH, DOUT);
    if (err == CL_SUCCESS)
        err = clBuildProgram(E.prog, 1, &dev, opt, NULL, NULL);
    if (err != CL_SUCCESS)
        return -1;
    E.hidden = clCreateKernel(E.prog, "enc_hidden", &err);
    E.out = clCreateKernel(E.prog, "enc_out", &err);
    E.back2 = clCreateKernel(E.prog, "enc_back2", &err);
    E.dh = clCreateKernel(E.prog, "enc_dh", &err);
    E.back1 = clCreateKernel(E.prog, "enc_back1", &err);
    E.cap = NSAMPLES;
    for (int v = 0; v < 2; v++) {
        E.x[v] = buffer(E.cap * DIN * 4);
        E.h[v] = buffer(E.cap * DH * 4);
        E.y[v] = buffer(E.cap * DOUT * 4);
    }
    E.g = buffer(E.cap * DOUT * 4);
    E.dhb = buffer(E.cap * DH * 4);
    base = tu_xmalloc(NSAMPLES * DIN * 4);
    tu_fill_normal(base, NSAMPLES * DIN, 4242, 1.0f);
    return 0;
}

static int teardown(void **state)
{
    cl_kernel ks[] = {E.hidden, E.out, E.back2, E.dh, E.back1};
    for (size_t i = 0; i < 5; i++)
        clReleaseKernel(ks[i]);
    for (int v = 0; v < 2; v++)
        clReleaseMemObject(E.x[v]), clReleaseMemObject(E.h[v]), clReleaseMemObject(E.y[v]);
    clReleaseMemObject(E.g), clReleaseMemObject(E.dhb);
    clReleaseProgram(E.prog);
    free(base);
    return tu_group_teardown(state);
}

/* ------------------------------------------------------------ views (replay) */

/* The two views of the samples at positions [p0, p0 + m) of update u's
 * effective batch: the sample's input plus noise drawn from its own seed
 * only. Nothing here knows about micro-batches. */
static void make_views(uint64_t u, size_t p0, size_t m, float *vq, float *vk)
{
    for (size_t r = 0; r < m; r++) {
        size_t p = p0 + r, sample = (p * 37 + u * 11) % NSAMPLES;
        tu_rng rng = tu_rng_seed(clg_sample_seed(SEED, u, p));
        for (int c = 0; c < DIN; c++) {
            vq[r * DIN + c] = base[sample * DIN + c] + 0.3f * (float)tu_rng_normal(&rng);
            vk[r * DIN + c] = base[sample * DIN + c] + 0.3f * (float)tu_rng_normal(&rng);
        }
    }
}

static void views_do_not_depend_on_split(void)
{
    const size_t B = 128;
    float *a = tu_xmalloc(B * DIN * 4 * 2), *b = tu_xmalloc(B * DIN * 4 * 2);
    for (size_t p = 0; p < B; p += 8)
        make_views(3, p, 8, a + p * DIN, a + (B + p) * DIN);
    for (size_t p = 0; p < B; p += 64)
        make_views(3, p, 64, b + p * DIN, b + (B + p) * DIN);
    assert_memory_equal(a, b, B * DIN * 4 * 2);
    free(a), free(b);
}

/* ------------------------------------------------------------ the encoder */

#define ARG(k, i, v) assert_int_equal(clSetKernelArg((k), (i), sizeof(v), &(v)), CL_SUCCESS)

static void run(cl_kernel k, size_t n)
{
    assert_int_equal(clEnqueueNDRangeKernel(clg_context_queue(tu_ctx), k, 1, NULL, &n, NULL, 0,
                                            NULL, NULL),
                     CL_SUCCESS);
}

typedef struct params {
    clg_view w1, b1, w2;
} params;

/* Uploads update u's views of positions [p0, p0 + m) and runs both
 * forwards into E.y[0] (queries) and E.y[1] (keys). */
static void forward(const params *p, uint64_t u, size_t p0, size_t m)
{
    float *vq = tu_xmalloc(m * DIN * 4), *vk = tu_xmalloc(m * DIN * 4);
    make_views(u, p0, m, vq, vk);
    cl_command_queue q = clg_context_queue(tu_ctx);
    assert_int_equal(clEnqueueWriteBuffer(q, E.x[0], CL_TRUE, 0, m * DIN * 4, vq, 0, NULL, NULL),
                     CL_SUCCESS);
    assert_int_equal(clEnqueueWriteBuffer(q, E.x[1], CL_TRUE, 0, m * DIN * 4, vk, 0, NULL, NULL),
                     CL_SUCCESS);
    free(vq), free(vk);
    cl_uint rows = (cl_uint)m;
    cl_ulong w1o = p->w1.offset, b1o = p->b1.offset, w2o = p->w2.offset;
    for (int v = 0; v < 2; v++) {
        ARG(E.hidden, 0, E.x[v]), ARG(E.hidden, 1, rows), ARG(E.hidden, 2, p->w1.mem);
        ARG(E.hidden, 3, w1o), ARG(E.hidden, 4, p->b1.mem), ARG(E.hidden, 5, b1o);
        ARG(E.hidden, 6, E.h[v]);
        run(E.hidden, m * DH);
        ARG(E.out, 0, E.h[v]), ARG(E.out, 1, rows), ARG(E.out, 2, p->w2.mem), ARG(E.out, 3, w2o);
        ARG(E.out, 4, E.y[v]);
        run(E.out, m * DOUT);
    }
}

/* Backward of view v with its representation gradient in E.g into
 * targets t (views of w1, b1, w2), dW = beta dW + this view's. */
static void backward(const params *p, const params *t, int v, size_t m, float beta)
{
    cl_uint rows = (cl_uint)m;
    cl_ulong w2o = p->w2.offset, tw1 = t->w1.offset, tb1 = t->b1.offset, tw2 = t->w2.offset;
    ARG(E.back2, 0, E.g), ARG(E.back2, 1, E.h[v]), ARG(E.back2, 2, rows);
    ARG(E.back2, 3, t->w2.mem), ARG(E.back2, 4, tw2), ARG(E.back2, 5, beta);
    run(E.back2, DOUT * DH);
    ARG(E.dh, 0, E.g), ARG(E.dh, 1, E.h[v]), ARG(E.dh, 2, rows), ARG(E.dh, 3, p->w2.mem);
    ARG(E.dh, 4, w2o), ARG(E.dh, 5, E.dhb);
    run(E.dh, m * DH);
    ARG(E.back1, 0, E.dhb), ARG(E.back1, 1, E.x[v]), ARG(E.back1, 2, rows);
    ARG(E.back1, 3, t->w1.mem), ARG(E.back1, 4, tw1), ARG(E.back1, 5, t->b1.mem);
    ARG(E.back1, 6, tb1), ARG(E.back1, 7, beta);
    run(E.back1, DH * DIN + DH);
}

/* ------------------------------------------------------------ one run */

typedef enum method { BIG, GRADCACHE, NAIVE } method;
typedef enum path { PATH_A, PATH_B, PATH_C } path;

typedef struct run_result {
    float *grad;   /* accumulated gradient / sum of weights (paths A, B) */
    float *params; /* after the update (path C) */
    size_t n;
} run_result;

static run_result run_method(size_t B, size_t k, method how, path via)
{
    size_t m = (B + k - 1) / k, n_micro = (B + m - 1) / m; /* uneven: the last is shorter */
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.lr = 0.1f;
    cfg.fuse_last_micro_step = via == PATH_C;
    /* A/B: one step more than we take, so the accumulator is all there is */
    cfg.accum_steps = (unsigned)(via == PATH_C ? n_micro : n_micro + 1);
    clg_model *model;
    OK(clg_model_create(tu_ctx, &cfg, &model));
    int tw1, tb1, tw2;
    OK(clg_model_add_tensor(model, "w1", DH * DIN, 0, &tw1));
    OK(clg_model_add_tensor(model, "b1", DH, 0, &tb1));
    OK(clg_model_add_tensor(model, "w2", DOUT * DH, 0, &tw2));
    OK(clg_model_finalize(model));
    size_t np = (size_t)clg_model_param_count(model);
    float *init = tu_xmalloc(np * 4);
    tu_fill_uniform(init, np, 7, -0.4f, 0.4f);
    OK(clg_model_upload_params(model, CLG_ALL_TENSORS, init, np, NULL));
    free(init);
    params p, acc, gr;
    OK(clg_model_param_view(model, tw1, &p.w1));
    OK(clg_model_param_view(model, tb1, &p.b1));
    OK(clg_model_param_view(model, tw2, &p.w2));
    OK(clg_model_acc_view(model, tw1, &acc.w1));
    OK(clg_model_acc_view(model, tb1, &acc.b1));
    OK(clg_model_acc_view(model, tw2, &acc.w2));
    clg_grads *grads = NULL;
    if (via != PATH_B) {
        OK(clg_grads_create(model, CLG_FP32, &grads));
        OK(clg_grads_view(grads, tw1, &gr.w1));
        OK(clg_grads_view(grads, tb1, &gr.b1));
        OK(clg_grads_view(grads, tw2, &gr.w2));
    }

    clg_contrastive_config cc = clg_contrastive_config_init();
    cc.batch = B;
    cc.dim = DOUT;
    cc.temperature = 0.2f;
    clg_contrastive *c;
    OK(clg_contrastive_create(tu_ctx, &cc, &c));
    const uint64_t u = 5;
    size_t chunk = how == BIG ? B : m;
    size_t steps = how == BIG ? 1 : n_micro;

    if (how != NAIVE) { /* the cache of the whole batch */
        for (size_t j = 0; j < steps; j++) {
            size_t p0 = j * chunk, rows = B - p0 < chunk ? B - p0 : chunk;
            forward(&p, u, p0, rows);
            OK(clg_contrastive_fill(c, CLG_SIDE_QUERY, p0, rows, E.y[0], 0, DOUT, CLG_FP32, NULL));
            OK(clg_contrastive_fill(c, CLG_SIDE_KEY, p0, rows, E.y[1], 0, DOUT, CLG_FP32, NULL));
        }
        OK(clg_contrastive_compute(c, B, NULL));
    }
    for (size_t j = 0; j < steps; j++) {
        size_t p0 = j * chunk, rows = B - p0 < chunk ? B - p0 : chunk;
        forward(&p, u, p0, rows);
        size_t row = p0, n_loss = B;
        if (how == NAIVE) { /* its own loss over its own rows */
            OK(clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, rows, E.y[0], 0, DOUT, CLG_FP32, NULL));
            OK(clg_contrastive_fill(c, CLG_SIDE_KEY, 0, rows, E.y[1], 0, DOUT, CLG_FP32, NULL));
            OK(clg_contrastive_compute(c, rows, NULL));
            row = 0;
            n_loss = rows;
        } else if (how == GRADCACHE) { /* the replay rebuilt the cached rows */
            float *cached = tu_xmalloc(rows * DOUT * 4), *again = tu_xmalloc(rows * DOUT * 4);
            for (int v = 0; v < 2; v++) {
                assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), c->reps[v],
                                                     CL_TRUE, p0 * DOUT * 4, rows * DOUT * 4,
                                                     cached, 0, NULL, NULL),
                                 CL_SUCCESS);
                assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), E.y[v], CL_TRUE,
                                                     0, rows * DOUT * 4, again, 0, NULL, NULL),
                                 CL_SUCCESS);
                assert_memory_equal(cached, again, rows * DOUT * 4);
            }
            free(cached), free(again);
        }
        /* weight = the micro-batch's rows; paths A/C carry the micro-batch's
         * gradient (scale n / rows), path B writes weight x that (scale n) */
        float w = (float)rows;
        float scale = via == PATH_B ? (float)n_loss : (float)n_loss / w;
        const params *t = via == PATH_B ? &acc : &gr;
        float beta0 = via == PATH_B ? clg_accum_beta(model) : 0.0f;
        for (int v = 0; v < 2; v++) {
            OK(clg_contrastive_grad(c, (clg_side)v, row, rows, scale, E.g, 0, DOUT, CLG_FP32,
                                    NULL));
            backward(&p, t, v, rows, v == 0 ? beta0 : 1.0f);
        }
        int updated;
        OK(clg_step(model, grads, w, &updated, NULL));
        assert_int_equal(updated, via == PATH_C && j + 1 == steps);
    }

    run_result r = {NULL, NULL, np};
    if (via == PATH_C) {
        r.params = tu_xmalloc(np * 4);
        OK(clg_model_download_params(model, CLG_ALL_TENSORS, r.params, np, NULL));
    } else {
        r.grad = tu_xmalloc(np * 4);
        OK(clg_model_download_acc(model, CLG_ALL_TENSORS, r.grad, np, NULL));
        for (size_t i = 0; i < np; i++)
            r.grad[i] /= (float)B; /* the sum of weights */
    }
    clg_contrastive_destroy(c);
    clg_grads_destroy(grads);
    clg_model_destroy(model);
    return r;
}

static double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        num += e * e;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}

static void test_gradcache_is_the_big_batch(void **state)
{
    (void)state;
    views_do_not_depend_on_split();
    const size_t cases[][2] = {{8, 2}, {8, 8}, {48, 3}, {64, 16}, {64, 64}, {100, 7}, {256, 256}};
    float *p0 = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t B = cases[i][0], k = cases[i][1];
        for (int via = PATH_A; via <= PATH_C; via++) {
            run_result big = run_method(B, 1, BIG, (path)via);
            run_result gc = run_method(B, k, GRADCACHE, (path)via);
            run_result nv = run_method(B, k, NAIVE, (path)via);
            double e_gc, e_nv;
            if (via == PATH_C) { /* the update's size: params minus the initial ones */
                if (p0 == NULL) {
                    p0 = tu_xmalloc(big.n * 4);
                    tu_fill_uniform(p0, big.n, 7, -0.4f, 0.4f);
                }
                for (size_t j = 0; j < big.n; j++) {
                    big.params[j] -= p0[j];
                    gc.params[j] -= p0[j];
                    nv.params[j] -= p0[j];
                }
                e_gc = rel_l2(gc.params, big.params, big.n);
                e_nv = rel_l2(nv.params, big.params, big.n);
            } else {
                e_gc = rel_l2(gc.grad, big.grad, big.n);
                e_nv = rel_l2(nv.grad, big.grad, big.n);
            }
            print_message("B %3zu k %3zu path %c: GradCache rel L2 %.2e, naive %.3f\n", B, k,
                          "ABC"[via], e_gc, e_nv);
            assert_true(e_gc <= 1e-5);
            assert_true(e_nv > 1e-2);
            free(big.grad), free(big.params), free(gc.grad), free(gc.params);
            free(nv.grad), free(nv.params);
        }
    }
    free(p0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradcache_is_the_big_batch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
