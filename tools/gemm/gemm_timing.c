/* gemm_timing.c - running, checking and timing GEMM shapes (see
 * gemm_timing.h). */
#include "gemm_timing.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Floats of each operand: a batched shape's matrices one after another. */
static void sizes(const mlp_gemm_shape *s, size_t *na, size_t *nb, size_t *nc)
{
    size_t batch = mlp_gemm_batch(s);
    *na = s->m * s->k * batch;
    *nb = s->k * s->n * batch;
    *nc = s->m * s->n * batch;
}

cl_int gemm_bufs_create(cl_context context, cl_command_queue queue, const mlp_gemm_shape *s,
                        size_t n, gemm_bufs *out)
{
    memset(out, 0, sizeof *out);
    out->context = context;
    out->queue = queue;
    for (size_t i = 0; i < n; i++) {
        size_t na, nb, nc;
        sizes(&s[i], &na, &nb, &nc);
        out->a_floats = na > out->a_floats ? na : out->a_floats;
        out->b_floats = nb > out->b_floats ? nb : out->b_floats;
        out->c_floats = nc > out->c_floats ? nc : out->c_floats;
    }
    cl_int err = CL_SUCCESS;
    cl_mem *m[3] = {&out->a, &out->b, &out->c};
    size_t f[3] = {out->a_floats, out->b_floats, out->c_floats};
    float v = 0.01f;
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        *m[i] = clCreateBuffer(context, CL_MEM_READ_WRITE, (f[i] ? f[i] : 1) * sizeof(float), NULL,
                               &err);
        if (err == CL_SUCCESS)
            err = clEnqueueFillBuffer(queue, *m[i], &v, sizeof v, 0, (f[i] ? f[i] : 1) * sizeof v,
                                      0, NULL, NULL);
    }
    if (err == CL_SUCCESS)
        err = clFinish(queue);
    if (err != CL_SUCCESS)
        gemm_bufs_release(out);
    return err;
}

void gemm_bufs_release(gemm_bufs *g)
{
    cl_mem *m[3] = {&g->a, &g->b, &g->c};
    for (int i = 0; i < 3; i++) {
        if (*m[i])
            clReleaseMemObject(*m[i]);
        *m[i] = NULL;
    }
    mlp_gemm_scratch_release(&g->scratch);
}

static cl_int call(gemm_bufs *g, const mlp_gemm_shape *s, float beta)
{
    size_t lda, ldb, ldc;
    mlp_gemm_dense_ld(s, &lda, &ldb, &ldc);
    if (mlp_gemm_batch(s) > 1)
        return mlp_gemm_batched(g->queue, s->ta, s->tb, s->m, s->n, s->k, 1.0f, g->a, 0, lda,
                                s->m * s->k, g->b, 0, ldb, s->k * s->n, beta, g->c, 0, ldc,
                                s->m * s->n, s->batch, NULL);
    return mlp_gemm(g->queue, &g->scratch, s->ta, s->tb, s->m, s->n, s->k, 1.0f, g->a, 0, lda,
                    g->b, 0, ldb, beta, g->c, 0, ldc, NULL);
}

cl_int gemm_run_once(gemm_bufs *g, const mlp_gemm_shape *s)
{
    cl_int err = call(g, s, 0.0f);
    return err == CL_SUCCESS ? clFinish(g->queue) : err;
}

static float seeded(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

int gemm_check(gemm_bufs *g, const mlp_gemm_shape *s, double *worst)
{
    size_t na, nb, nc, lda, ldb, ldc;
    sizes(s, &na, &nb, &nc);
    mlp_gemm_dense_ld(s, &lda, &ldb, &ldc);
    *worst = -1;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
    float *got = malloc(nc * sizeof *got);
    cl_int err = CL_OUT_OF_HOST_MEMORY;
    if (!a || !b || !c || !got)
        goto out;
    uint64_t x = 12345;
    for (size_t i = 0; i < na; i++)
        a[i] = seeded(&x);
    for (size_t i = 0; i < nb; i++)
        b[i] = seeded(&x);
    for (size_t i = 0; i < nc; i++)
        c[i] = seeded(&x);
    err = clEnqueueWriteBuffer(g->queue, g->a, CL_FALSE, 0, na * 4, a, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(g->queue, g->b, CL_FALSE, 0, nb * 4, b, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(g->queue, g->c, CL_FALSE, 0, nc * 4, c, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = call(g, s, 0.5f);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(g->queue, g->c, CL_TRUE, 0, nc * 4, got, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        goto out;
    double w = 0;
    for (size_t r = 0; r < mlp_gemm_batch(s); r++) {
        const float *ar = a + r * s->m * s->k, *br = b + r * s->k * s->n;
        const float *cr = c + r * s->m * s->n, *gr = got + r * s->m * s->n;
        for (size_t i = 0; i < s->m; i++)
            for (size_t j = 0; j < s->n; j++) {
                double sum = 0.5 * cr[i * ldc + j], mag = fabs(sum);
                for (size_t p = 0; p < s->k; p++) {
                    double av = s->ta ? ar[p * lda + i] : ar[i * lda + p];
                    double bv = s->tb ? br[j * ldb + p] : br[p * ldb + j];
                    sum += av * bv;
                    mag += fabs(av * bv);
                }
                double e = fabs((double)gr[i * ldc + j] - sum) / (mag > 0 ? mag : 1);
                if (!(e <= w)) /* NaN counts as the worst */
                    w = isnan(e) ? INFINITY : e;
            }
    }
    *worst = w;
    err = w <= 1e-4 ? 0 : -1;
out:
    free(a);
    free(b);
    free(c);
    free(got);
    return err;
}

cl_int gemm_time(gemm_bufs *g, const mlp_gemm_shape *s, unsigned reps, double *ms)
{
    cl_int err = clFinish(g->queue);
    double t0 = now_ms();
    for (unsigned r = 0; r < reps && err == CL_SUCCESS; r++)
        err = call(g, s, 0.0f);
    if (err == CL_SUCCESS)
        err = clFinish(g->queue);
    *ms = (now_ms() - t0) / (reps ? reps : 1);
    return err;
}

unsigned gemm_calibrate(gemm_bufs *g, const mlp_gemm_shape *s, double target_ms)
{
    double ms;
    if (gemm_time(g, s, 1, &ms) != CL_SUCCESS || !(ms > 0))
        return 1;
    double r = target_ms / ms;
    return r < 1 ? 1 : r > 10000 ? 10000 : (unsigned)r;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double gemm_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
