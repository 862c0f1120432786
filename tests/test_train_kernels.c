/* test_train_kernels.c - the kernels of tools/train/nn/mlp.cl and the MLP's forward and
 * backward (CLBlast GEMMs + those kernels) against a plain CPU reference in
 * double precision, on the default device (PoCL here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mlp.h"
#include "mlp_kernels.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kstate {
    mlp_kernels k;
    cl_context cl;
    cl_command_queue q;
} kstate;

static kstate S;

/* The shared context and the MLP kernels built on it. */
static int group_setup(void **state)
{
    tu_group_setup(state);
    clg_status st = mlp_kernels_init(tu_ctx, &S.k);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "mlp_kernels_init: %s\n", clg_last_error(tu_ctx));
        return -1;
    }
    S.cl = clg_context_cl(tu_ctx);
    S.q = clg_context_queue(tu_ctx);
    return 0;
}

static int group_teardown(void **state)
{
    mlp_kernels_release(&S.k);
    return tu_group_teardown(state);
}

static cl_mem buf(size_t bytes, const void *host)
{
    cl_int e;
    cl_mem m = clCreateBuffer(S.cl, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)host, &e);
    assert_int_equal(e, CL_SUCCESS);
    return m;
}

static void get(cl_mem m, size_t bytes, void *host)
{
    assert_int_equal(clEnqueueReadBuffer(S.q, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* |a - b| <= abs_tol + rel_tol * |b| for all n. */
static void assert_close(const float *a, const double *b, size_t n, double abs_tol,
                         double rel_tol, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= abs_tol + rel_tol * fabs(b[i])))
            fail_msg("%s[%zu]: got %.9g, reference %.9g (diff %.3g)", what, i, a[i], b[i], d);
    }
}

/* ------------------------------------------------------------ elementwise */

static void test_gather(void **state)
{
    (void)state;
    enum { N = 40, DIM = 13, ROWS = 9, OFF = 5 };
    uint8_t images[N * DIM];
    int32_t idx[N];
    tu_rng r = tu_rng_seed(1);
    for (int i = 0; i < N * DIM; i++)
        images[i] = (uint8_t)tu_rng_u64(&r);
    for (int i = 0; i < N; i++)
        idx[i] = (int32_t)((i * 17 + 3) % N);
    cl_mem mi = buf(sizeof images, images), mx = buf(sizeof idx, idx),
           out = buf(ROWS * DIM * 4, NULL);
    assert_int_equal(mlp_gather(&S.k, mi, mx, OFF, ROWS, DIM, out), CL_SUCCESS);
    float got[ROWS * DIM];
    get(out, sizeof got, got);
    double ref[ROWS * DIM];
    for (int rr = 0; rr < ROWS; rr++)
        for (int c = 0; c < DIM; c++)
            ref[rr * DIM + c] = images[idx[OFF + rr] * DIM + c] / 255.0;
    assert_close(got, ref, ROWS * DIM, 0, 1e-7, "gather");
    clReleaseMemObject(mi);
    clReleaseMemObject(mx);
    clReleaseMemObject(out);
}

static void test_bias_act_and_relu_backward(void **state)
{
    (void)state;
    enum { ROWS = 7, COLS = 11, BOFF = 3 };
    float y[ROWS * COLS], b[BOFF + COLS], dx[ROWS * COLS];
    tu_fill_uniform(y, ROWS * COLS, 2, -1, 1);
    tu_fill_uniform(b, BOFF + COLS, 3, -1, 1);
    tu_fill_uniform(dx, ROWS * COLS, 4, -1, 1);
    for (int relu = 0; relu < 2; relu++) {
        cl_mem my = buf(sizeof y, y), mb = buf(sizeof b, b);
        assert_int_equal(mlp_bias_act(&S.k, my, ROWS, COLS, mb, BOFF, relu), CL_SUCCESS);
        float got[ROWS * COLS];
        get(my, sizeof got, got);
        double ref[ROWS * COLS];
        for (int i = 0; i < ROWS * COLS; i++) {
            double v = (double)y[i] + b[BOFF + i % COLS];
            ref[i] = relu && v < 0 ? 0 : v;
        }
        assert_close(got, ref, ROWS * COLS, 0, 1e-7, relu ? "bias+relu" : "bias");
        if (relu) {
            cl_mem md = buf(sizeof dx, dx);
            assert_int_equal(mlp_relu_backward(&S.k, md, my, ROWS * COLS), CL_SUCCESS);
            float gd[ROWS * COLS];
            get(md, sizeof gd, gd);
            double rd[ROWS * COLS];
            int zeros = 0;
            for (int i = 0; i < ROWS * COLS; i++) {
                rd[i] = ref[i] > 0 ? dx[i] : 0.0;
                zeros += ref[i] <= 0;
            }
            assert_true(zeros > 5 && zeros < ROWS * COLS - 5); /* both branches taken */
            assert_close(gd, rd, ROWS * COLS, 0, 0, "relu backward");
            clReleaseMemObject(md);
        }
        clReleaseMemObject(my);
        clReleaseMemObject(mb);
    }
}

static void test_bias_grad(void **state)
{
    (void)state;
    enum { ROWS = 23, COLS = 70, OFF = 5 };
    float dy[ROWS * COLS], db[OFF + COLS];
    tu_fill_uniform(dy, ROWS * COLS, 5, -1, 1);
    for (int i = 0; i < OFF + COLS; i++)
        db[i] = NAN; /* beta 0 must not read the target */
    cl_mem md = buf(sizeof dy, dy), mb = buf(sizeof db, db);
    assert_int_equal(mlp_bias_grad(&S.k, md, ROWS, COLS, mb, OFF, 0.0f), CL_SUCCESS);
    float got[OFF + COLS];
    get(mb, sizeof got, got);
    double ref[COLS];
    for (int c = 0; c < COLS; c++) {
        ref[c] = 0;
        for (int r = 0; r < ROWS; r++)
            ref[c] += dy[r * COLS + c];
    }
    assert_close(got + OFF, ref, COLS, 1e-6, 1e-6, "bias grad beta 0");
    for (int i = 0; i < OFF; i++)
        assert_true(isnan(got[i])); /* outside the view untouched */
    /* beta 1 accumulates. */
    assert_int_equal(mlp_bias_grad(&S.k, md, ROWS, COLS, mb, OFF, 1.0f), CL_SUCCESS);
    get(mb, sizeof got, got);
    for (int c = 0; c < COLS; c++)
        ref[c] *= 2;
    assert_close(got + OFF, ref, COLS, 2e-6, 2e-6, "bias grad beta 1");
    clReleaseMemObject(md);
    clReleaseMemObject(mb);
}

static void test_softmax_xent(void **state)
{
    (void)state;
    enum { ROWS = 13, CLASSES = 10, N = 20, OFF = 4 };
    float logits[ROWS * CLASSES], scale[5] = {0, 0, 0, 8.0f, 0};
    uint8_t labels[N];
    int32_t idx[N];
    tu_fill_uniform(logits, ROWS * CLASSES, 6, -6, 6);
    logits[2 * CLASSES + 1] = 60.0f; /* large values stay finite (max subtracted) */
    logits[2 * CLASSES + 2] = 60.0f; /* a tie: the first maximum wins */
    for (int i = 0; i < N; i++) {
        labels[i] = (uint8_t)((i * 7) % CLASSES);
        idx[i] = (int32_t)((i * 3 + 1) % N);
    }
    /* Make row 2's label its tied argmax so "correct" is exercised both ways. */
    labels[idx[OFF + 2]] = 1;
    cl_mem ml = buf(sizeof logits, logits), mlab = buf(sizeof labels, labels),
           midx = buf(sizeof idx, idx), ms = buf(sizeof scale, scale),
           loss = buf(ROWS * 4, NULL), corr = buf(ROWS * 4, NULL);
    /* In place (dlogits aliases logits), as the trainer runs it. */
    assert_int_equal(mlp_softmax_xent(&S.k, ml, ROWS, CLASSES, mlab, midx, OFF, ms, 3, 0.5f, ml, loss,
                                      corr, 1),
                     CL_SUCCESS);
    float gl[ROWS], gc[ROWS], gd[ROWS * CLASSES];
    get(loss, sizeof gl, gl);
    get(corr, sizeof gc, gc);
    get(ml, sizeof gd, gd);
    double rl[ROWS], rc[ROWS], rd[ROWS * CLASSES];
    int n_correct = 0;
    for (int r = 0; r < ROWS; r++) {
        const float *l = logits + r * CLASSES;
        int y = labels[idx[OFF + r]], arg = 0;
        double m = l[0], s = 0;
        for (int j = 1; j < CLASSES; j++)
            if (l[j] > m) {
                m = l[j];
                arg = j;
            }
        for (int j = 0; j < CLASSES; j++)
            s += exp((double)l[j] - m);
        rl[r] = log(s) + m - l[y];
        rc[r] = arg == y;
        n_correct += arg == y;
        for (int j = 0; j < CLASSES; j++)
            rd[r * CLASSES + j] = (exp((double)l[j] - m) / s - (j == y)) * 8.0 * 0.5;
    }
    assert_true(n_correct >= 1 && n_correct < ROWS);
    assert_close(gl, rl, ROWS, 1e-5, 1e-5, "row loss");
    assert_close(gc, rc, ROWS, 0, 0, "row correct");
    assert_close(gd, rd, ROWS * CLASSES, 1e-5, 1e-5, "dlogits");

    /* Forward only leaves the logits alone; sum_rows adds up losses. */
    cl_mem ml2 = buf(sizeof logits, logits);
    float zeros[4] = {0, 0, 0, 0};
    cl_mem sums = buf(sizeof zeros, zeros);
    assert_int_equal(mlp_softmax_xent(&S.k, ml2, ROWS, CLASSES, mlab, midx, OFF, ms, 3, 1.0f, ml2, loss,
                                      corr, 0),
                     CL_SUCCESS);
    assert_int_equal(mlp_sum_rows(&S.k, loss, corr, ROWS, sums), CL_SUCCESS);
    assert_int_equal(mlp_sum_rows(&S.k, loss, corr, ROWS, sums), CL_SUCCESS);
    float g2[ROWS * CLASSES], gs[4];
    get(ml2, sizeof g2, g2);
    get(sums, sizeof gs, gs);
    assert_memory_equal(g2, logits, sizeof logits);
    double tot = 0;
    for (int r = 0; r < ROWS; r++)
        tot += rl[r];
    double rs[4] = {2 * tot, 2.0 * n_correct, 2 * tot, 0};
    assert_close(gs, rs, 4, 1e-4, 1e-5, "sums");
    cl_mem all[] = {ml, mlab, midx, ms, loss, corr, ml2, sums};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clReleaseMemObject(all[i]);
}

/* ------------------------------------------------------------ fp16/bf16 */

static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

/* Nearest binary16, ties to even, by search over all finite halves (the
 * infinity counts as 65536 for rounding, which is IEEE's overflow rule). */
static uint16_t ref_half(float f)
{
    if (isnan(f))
        return 0x7e00;
    if (isinf(f))
        return f > 0 ? 0x7c00 : 0xfc00;
    double a = fabs((double)f);
    if (a >= 65520.0) /* halfway between 65504 and 2^16 and beyond: overflow */
        return f > 0 ? 0x7c00 : 0xfc00;
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint32_t h = 0; h <= 0x7c00; h++) {
        double v = h == 0x7c00 ? 65536.0 : half_value((uint16_t)h);
        double d = fabs(v - a);
        if (d < bd || (d == bd && (h & 1) == 0 && (best & 1))) {
            bd = d;
            best = (uint16_t)h;
        }
    }
    return (uint16_t)(best | (signbit(f) ? 0x8000 : 0));
}

/* Nearest bfloat16 (upper half of a float), ties to even, by comparing the
 * two candidates in double. */
static uint16_t ref_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return 0x7fc0 | (uint16_t)((u >> 16) & 0x8000);
    if (isinf(f))
        return (uint16_t)(u >> 16);
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    float flo;
    memcpy(&flo, &lo, 4);
    double vhi;
    if ((hi & 0x7fffffffu) == 0x7f800000u) { /* infinity counts as 2^128 */
        vhi = (u & 0x80000000u) ? -ldexp(1, 128) : ldexp(1, 128);
    } else {
        float fhi;
        memcpy(&fhi, &hi, 4);
        vhi = fhi;
    }
    double dlo = fabs((double)f - flo), dhi = fabs(vhi - f);
    if (dlo < dhi || (dlo == dhi && !((lo >> 16) & 1)))
        return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

static void test_convert(void **state)
{
    (void)state;
    enum { N = 64, SOFF = 3, DOFF = 5 };
    float src[SOFF + N];
    tu_fill_normal(src, SOFF + N, 7, 3.0f);
    float special[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                       1e-8f, 3e-8f, 6.1e-5f, 0.1f, 1.0009765625f + 0.00048828125f,
                       INFINITY, -INFINITY, NAN, 3.4e38f, 3.3961e38f, 1.00390625f, 1.005859375f,
                       -2.5e-41f};
    memcpy(src + SOFF, special, sizeof special);
    cl_mem ms = buf(sizeof src, src), md = buf((DOFF + N) * 2, NULL);
    uint16_t got[DOFF + N];
    for (int which = 0; which < 2; which++) {
        clg_dtype dt = which ? CLG_BF16 : CLG_FP16;
        assert_int_equal(mlp_convert(&S.k, dt, ms, SOFF, md, DOFF, N), CL_SUCCESS);
        get(md, sizeof got, got);
        for (int i = 0; i < N; i++) {
            float f = src[SOFF + i];
            uint16_t want = which ? ref_bf16(f) : ref_half(f);
            uint16_t have = got[DOFF + i];
            int both_nan = which ? ((want & 0x7f80) == 0x7f80 && (want & 0x7f) &&
                                    (have & 0x7f80) == 0x7f80 && (have & 0x7f))
                                 : ((want & 0x7c00) == 0x7c00 && (want & 0x3ff) &&
                                    (have & 0x7c00) == 0x7c00 && (have & 0x3ff));
            if (have != want && !both_nan)
                fail_msg("%s(%.9g): got 0x%04x, reference 0x%04x", which ? "bf16" : "fp16", f,
                         have, want);
        }
    }
    clReleaseMemObject(ms);
    clReleaseMemObject(md);
}

/* bf16 bits widened to fp32 (the GEMMs' copy of bf16 master weights):
 * exact, every pattern of the upper half of a float, at offsets. */
static void test_widen_bf16(void **state)
{
    (void)state;
    enum { N = 65536, SOFF = 3, DOFF = 5 };
    uint16_t *src = tu_xmalloc((SOFF + N) * sizeof *src);
    for (int i = 0; i < N; i++)
        src[SOFF + i] = (uint16_t)i;
    cl_mem ms = buf((SOFF + N) * 2, src), md = buf((DOFF + N) * 4, NULL);
    assert_int_equal(mlp_widen_bf16(&S.k, ms, SOFF, md, DOFF, N), CL_SUCCESS);
    uint32_t *got = tu_xmalloc((DOFF + N) * sizeof *got);
    get(md, (DOFF + N) * 4, got);
    for (int i = 0; i < N; i++)
        if (got[DOFF + i] != (uint32_t)i << 16)
            fail_msg("bf16 0x%04x widened to 0x%08x", i, got[DOFF + i]);
    free(src);
    free(got);
    clReleaseMemObject(ms);
    clReleaseMemObject(md);
}

/* ------------------------------------------------------------ MLP */

/* Double-precision forward and backward of the MLP on the same inputs:
 * gradient of the summed cross-entropy times scale. */
static void ref_mlp_grads(const unsigned *dims, int n_dims, const float *params,
                          const double *x0, const int *labels, int rows, double scale,
                          double *grads, double *loss_out)
{
    int L = n_dims - 1;
    double *act[10], *delta[10];
    const float *w[10], *b[10];
    size_t p = 0;
    for (int l = 0; l < L; l++) {
        w[l] = params + p;
        p += (size_t)dims[l + 1] * dims[l];
        b[l] = params + p;
        p += dims[l + 1];
    }
    act[0] = (double *)x0;
    for (int l = 0; l < L; l++) {
        act[l + 1] = calloc((size_t)rows * dims[l + 1], sizeof(double));
        for (int r = 0; r < rows; r++)
            for (unsigned o = 0; o < dims[l + 1]; o++) {
                double s = b[l][o];
                for (unsigned i = 0; i < dims[l]; i++)
                    s += act[l][r * dims[l] + i] * w[l][o * dims[l] + i];
                act[l + 1][r * dims[l + 1] + o] = (l + 1 < L && s < 0) ? 0 : s;
            }
    }
    unsigned C = dims[L];
    delta[L] = calloc((size_t)rows * C, sizeof(double));
    double loss = 0;
    for (int r = 0; r < rows; r++) {
        double *z = act[L] + r * C, m = z[0], s = 0;
        for (unsigned j = 1; j < C; j++)
            m = fmax(m, z[j]);
        for (unsigned j = 0; j < C; j++)
            s += exp(z[j] - m);
        loss += log(s) + m - z[labels[r]];
        for (unsigned j = 0; j < C; j++)
            delta[L][r * C + j] = (exp(z[j] - m) / s - (j == (unsigned)labels[r])) * scale;
    }
    *loss_out = loss;
    p = 0;
    size_t offs[20];
    for (int l = 0; l < L; l++) {
        offs[2 * l] = p;
        p += (size_t)dims[l + 1] * dims[l];
        offs[2 * l + 1] = p;
        p += dims[l + 1];
    }
    for (int l = L - 1; l >= 0; l--) {
        double *gw = grads + offs[2 * l], *gb = grads + offs[2 * l + 1];
        for (unsigned o = 0; o < dims[l + 1]; o++) {
            gb[o] = 0;
            for (int r = 0; r < rows; r++)
                gb[o] += delta[l + 1][r * dims[l + 1] + o];
            for (unsigned i = 0; i < dims[l]; i++) {
                double s = 0;
                for (int r = 0; r < rows; r++)
                    s += delta[l + 1][r * dims[l + 1] + o] * act[l][r * dims[l] + i];
                gw[o * dims[l] + i] = s;
            }
        }
        if (l == 0)
            break;
        delta[l] = calloc((size_t)rows * dims[l], sizeof(double));
        for (int r = 0; r < rows; r++)
            for (unsigned i = 0; i < dims[l]; i++) {
                double s = 0;
                for (unsigned o = 0; o < dims[l + 1]; o++)
                    s += delta[l + 1][r * dims[l + 1] + o] * w[l][o * dims[l] + i];
                delta[l][r * dims[l] + i] = act[l][r * dims[l] + i] > 0 ? s : 0;
            }
    }
    for (int l = 1; l <= L; l++) {
        free(act[l]);
        free(delta[l]);
    }
}

static void test_mlp_forward_backward(void **state)
{
    (void)state;
    const unsigned dims[] = {12, 9, 7, 10};
    const int n_dims = 4, L = 3, ROWS = 6, N = 10, OFF = 2;
    mlp *m = NULL;
    char err[256];
    assert_int_equal(mlp_create(tu_ctx, dims, n_dims, &m, err, sizeof err), 0);
    uint64_t np = mlp_param_count(dims, n_dims);
    assert_int_equal(np, 12 * 9 + 9 + 9 * 7 + 7 + 7 * 10 + 10);
    float *params = tu_xmalloc(np * 4);
    mlp_init_params(dims, n_dims, 11, params);
    /* Init bounds are +-1/sqrt(fan_in); scale up so ReLUs switch off. */
    for (uint64_t i = 0; i < np; i++)
        params[i] *= 2.0f;
    /* Params at an odd offset in one buffer, like views into an arena. */
    const size_t POFF = 7;
    float *pbuf = tu_xmalloc((np + POFF) * 4);
    memcpy(pbuf + POFF, params, np * 4);
    cl_mem mp = buf((np + POFF) * 4, pbuf);
    clg_view targets[2 * 3];
    size_t p = POFF;
    for (int l = 0; l < L; l++) {
        m->w_view[l] = (clg_view){mp, p, (size_t)dims[l + 1] * dims[l]};
        p += m->w_view[l].count;
        m->b_view[l] = (clg_view){mp, p, dims[l + 1]};
        p += dims[l + 1];
    }
    const size_t GOFF = 3;
    float *gnan = tu_xmalloc((np + GOFF) * 4);
    for (uint64_t i = 0; i < np + GOFF; i++)
        gnan[i] = NAN;
    cl_mem mg = buf((np + GOFF) * 4, gnan);
    p = GOFF;
    for (int t = 0; t < 2 * L; t++) {
        size_t cnt = t % 2 ? dims[t / 2 + 1] : (size_t)dims[t / 2 + 1] * dims[t / 2];
        targets[t] = (clg_view){mg, p, cnt};
        p += cnt;
    }
    assert_int_equal(mlp_alloc_activations(m, 8), CLG_SUCCESS);

    uint8_t images[N * 12], labels[N];
    int32_t idx[N];
    tu_rng r = tu_rng_seed(12);
    for (int i = 0; i < N * 12; i++)
        images[i] = (uint8_t)tu_rng_u64(&r);
    for (int i = 0; i < N; i++) {
        labels[i] = (uint8_t)(tu_rng_u64(&r) % 10);
        idx[i] = N - 1 - i;
    }
    float scale[2] = {0, 4.0f};
    cl_mem mi = buf(sizeof images, images), ml = buf(sizeof labels, labels),
           mx = buf(sizeof idx, idx), ms = buf(sizeof scale, scale);
    mlp_source src = {mi, ml, mx, OFF};
    assert_int_equal(mlp_forward(m, &src, ROWS, ms, 1, 1.0f, 1), CL_SUCCESS);
    assert_int_equal(mlp_backward(m, ROWS, targets, 0.0f), CL_SUCCESS);
    float *got = tu_xmalloc((np + GOFF) * 4);
    get(mg, (np + GOFF) * 4, got);

    double x0[6 * 12];
    int lab[6];
    for (int rr = 0; rr < ROWS; rr++) {
        for (int c = 0; c < 12; c++)
            x0[rr * 12 + c] = images[idx[OFF + rr] * 12 + c] / 255.0;
        lab[rr] = labels[idx[OFF + rr]];
    }
    double *ref = tu_xmalloc(np * sizeof(double)), loss;
    ref_mlp_grads(dims, n_dims, params, x0, lab, ROWS, 4.0, ref, &loss);
    assert_close(got + GOFF, ref, np, 1e-5, 1e-4, "mlp grads (beta 0)");
    for (size_t i = 0; i < GOFF; i++)
        assert_true(isnan(got[i]));

    float row_loss[6];
    get(m->row_loss, sizeof row_loss, row_loss);
    double sum = 0;
    for (int rr = 0; rr < ROWS; rr++)
        sum += row_loss[rr];
    assert_true(fabs(sum - loss) <= 1e-4 * (1 + fabs(loss)));

    /* beta 1 adds a second micro-batch's gradient on top (path B), here
     * the mean (mult = 1/rows, as paths A/C use it): sum x (1 + 1/6). */
    assert_int_equal(mlp_forward(m, &src, ROWS, ms, 1, 1.0f / ROWS, 1), CL_SUCCESS);
    assert_int_equal(mlp_backward(m, ROWS, targets, 1.0f), CL_SUCCESS);
    get(mg, (np + GOFF) * 4, got);
    for (uint64_t i = 0; i < np; i++)
        ref[i] *= 1.0 + 1.0 / ROWS;
    assert_close(got + GOFF, ref, np, 2e-5, 1e-4, "mlp grads (beta 1)");

    cl_mem all[] = {mp, mg, mi, ml, mx, ms};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clReleaseMemObject(all[i]);
    mlp_destroy(m);
    free(params);
    free(pbuf);
    free(gnan);
    free(got);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_bias_act_and_relu_backward),
        cmocka_unit_test(test_bias_grad),
        cmocka_unit_test(test_softmax_xent),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_widen_bf16),
        cmocka_unit_test(test_mlp_forward_backward),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
