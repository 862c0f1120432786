/* contrastive-bench.c - clgrad-contrastive-bench: the contrastive loss at
 * batch sizes beyond the test suite's (B up to 4096 there): memory plan,
 * time per compute (median of --reps, after one warm-up) and its rate in
 * GFLOP/s (counting 2 x 6 B (B + M) d flops of a symmetric compute, 2 x 5
 * one-directional), and with --check the loss and the query rows' gradient
 * of --sample rows against a double-precision computation on the host
 * (the loss from every row's log-sum-exp, O(B^2 d) on one core; the
 * gradient check is for one-directional runs, whose query gradients need
 * only their own row's softmax). Random unit-ish rows, positives
 * correlated with their queries.
 *   usage: clgrad-contrastive-bench [--batch B] [--dim D] [--bank M]
 *          [--one-way] [--bf16] [--reps N] [--check] [--sample S] [--device SEL]
 * Prints one line per quantity and exits 0, or 1 with a message (2 for a
 * bad flag; 3 when --check finds a difference above 1e-4). */
#include "clgrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double gauss(void)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        u[i] = ((double)(rng >> 11) + 1.0) / 9007199254740993.0;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double dotd(const double *a, const double *b, size_t d)
{
    double s = 0;
    for (size_t c = 0; c < d; c++)
        s += a[c] * b[c];
    return s;
}

/* x / max(|x|, 1e-12) in double, as the device normalizes a row. */
static void unit(const float *x, size_t d, double *u)
{
    for (size_t c = 0; c < d; c++)
        u[c] = x[c];
    double r = 1.0 / fmax(sqrt(dotd(u, u, d)), 1e-12);
    for (size_t c = 0; c < d; c++)
        u[c] *= r;
}

/* l[j] = <a, column j> / tau over the n rows of cols, then the m of bank. */
static void logits(const double *a, const double *cols, size_t n, const double *bank, size_t m,
                   size_t d, double tau, double *l)
{
    for (size_t j = 0; j < n + m; j++)
        l[j] = dotd(a, j < n ? cols + j * d : bank + (j - n) * d, d) / tau;
}

/* log sum exp of l[0..count), the maximum taken out first. */
static double log_sum_exp(const double *l, size_t count)
{
    double mx = -INFINITY, s = 0;
    for (size_t j = 0; j < count; j++)
        mx = fmax(mx, l[j]);
    for (size_t j = 0; j < count; j++)
        s += exp(l[j] - mx);
    return mx + log(s);
}

/* Row a's log sum exp against n + m columns; l keeps its logits. */
static double lse(const double *a, const double *cols, size_t n, const double *bank, size_t m,
                  size_t d, double tau, double *l)
{
    logits(a, cols, n, bank, m, d, tau, l);
    return log_sum_exp(l, n + m);
}

int main(int argc, char **argv)
{
    size_t B = 16384, d = 128, M = 0, sample = 64;
    int reps = 3, check = 0, one_way = 0, bf16 = 0;
    const char *device = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--batch") && v)
            B = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--dim") && v)
            d = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--bank") && v)
            M = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--reps") && v)
            reps = atoi(v), i++;
        else if (!strcmp(a, "--sample") && v)
            sample = strtoul(v, NULL, 10), i++;
        else if (!strcmp(a, "--device") && v)
            device = v, i++;
        else if (!strcmp(a, "--check"))
            check = 1;
        else if (!strcmp(a, "--one-way"))
            one_way = 1;
        else if (!strcmp(a, "--bf16"))
            bf16 = 1;
        else {
            fprintf(stderr, "clgrad-contrastive-bench: unknown or incomplete flag '%s'\n", a);
            return 2;
        }
    }
    if (reps < 1 || B < 1 || d < 1 || (M && M > B) || sample > B) {
        fprintf(stderr, "clgrad-contrastive-bench: need B, d, reps >= 1, bank <= B, sample <= B\n");
        return 2;
    }
    clg_context *ctx;
    if (clg_context_create(&ctx, device) != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-contrastive-bench: %s\n", clg_last_error(NULL));
        return 1;
    }
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = B, cfg.dim = d, cfg.bank_size = M, cfg.symmetric = !one_way;
    cfg.dtype = bf16 ? CLG_BF16 : CLG_FP32;
    clg_contrastive_plan p = clg_contrastive_plan_init();
    clg_contrastive *c = NULL;
    if (clg_contrastive_estimate(&cfg, &p) != CLG_SUCCESS ||
        clg_contrastive_create(ctx, &cfg, &c) != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-contrastive-bench: %s\n", clg_last_error(ctx));
        return 1;
    }
    printf("device %s\nB %zu, d %zu, bank %zu, %s, %s: cache %llu, gradients %llu, banks %llu, "
           "rows %llu, total %llu bytes\n",
           clg_context_device_info(ctx)->name, B, d, M, one_way ? "one way" : "symmetric",
           bf16 ? "bf16" : "fp32", (unsigned long long)p.cache, (unsigned long long)p.grads,
           (unsigned long long)p.banks, (unsigned long long)p.rows,
           (unsigned long long)p.total);

    /* rows: queries random, keys 0.8 q + 0.6 noise; the bank from a first fill */
    float *q = malloc(B * d * 4), *k = malloc(B * d * 4);
    cl_int e;
    cl_mem mq = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE, B * d * 4, NULL, &e);
    cl_mem mk = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE, B * d * 4, NULL, &e);
    float *bq = M ? malloc(M * d * 4) : NULL, *bk = M ? malloc(M * d * 4) : NULL;
    for (int round = M ? 0 : 1; round < 2; round++) {
        for (size_t i = 0; i < B * d; i++) {
            q[i] = (float)gauss();
            k[i] = 0.8f * q[i] + 0.6f * (float)gauss();
        }
        clEnqueueWriteBuffer(clg_context_queue(ctx), mq, CL_TRUE, 0, B * d * 4, q, 0, NULL, NULL);
        clEnqueueWriteBuffer(clg_context_queue(ctx), mk, CL_TRUE, 0, B * d * 4, k, 0, NULL, NULL);
        clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, B, mq, 0, d, CLG_FP32, NULL);
        clg_contrastive_fill(c, CLG_SIDE_KEY, 0, B, mk, 0, d, CLG_FP32, NULL);
        if (round == 0) {
            clg_contrastive_bank_push(c, M, NULL);
            clg_contrastive_bank_download(c, CLG_SIDE_QUERY, bq, M * d, NULL);
            clg_contrastive_bank_download(c, CLG_SIDE_KEY, bk, M * d, NULL);
        }
    }
    double *times = malloc((size_t)reps * sizeof *times);
    clg_status st = clg_contrastive_compute(c, B, NULL); /* warm-up: kernel builds */
    clFinish(clg_context_queue(ctx));
    for (int r = 0; r < reps && st == CLG_SUCCESS; r++) {
        double t0 = now();
        st = clg_contrastive_compute(c, B, NULL);
        clFinish(clg_context_queue(ctx));
        times[r] = now() - t0;
    }
    float loss = NAN;
    if (st == CLG_SUCCESS)
        st = clg_contrastive_loss(c, &loss);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-contrastive-bench: %s\n", clg_last_error(ctx));
        return 1;
    }
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    double med = times[reps / 2], flops = 2.0 * (one_way ? 5 : 6) * (double)B * (B + M) * d;
    printf("compute: median %.4f s of %d (min %.4f), %.2f GFLOP/s; loss %.7g\n", med, reps,
           times[0], flops / med / 1e9, (double)loss);

    int rc = 0;
    if (check) {
        /* the host sees what the device holds: bf16 rounding of the rows */
        if (bf16)
            for (size_t i = 0; i < B * d; i++) {
                uint32_t u[2];
                memcpy(&u[0], &q[i], 4), memcpy(&u[1], &k[i], 4);
                for (int s = 0; s < 2; s++)
                    u[s] = (u[s] + 0x7fffu + ((u[s] >> 16) & 1u)) & 0xffff0000u;
                memcpy(&q[i], &u[0], 4), memcpy(&k[i], &u[1], 4);
            }
        double *uq = malloc(B * d * 8), *uk = malloc(B * d * 8);
        double *ubq = malloc((M ? M : 1) * d * 8), *ubk = malloc((M ? M : 1) * d * 8);
        double *l = malloc((B + M) * 8), tau = cfg.temperature;
        for (size_t i = 0; i < B; i++)
            unit(q + i * d, d, uq + i * d), unit(k + i * d, d, uk + i * d);
        for (size_t i = 0; i < M; i++)
            unit(bq + i * d, d, ubq + i * d), unit(bk + i * d, d, ubk + i * d);
        double t0 = now(), ref = 0, cq = one_way ? 1.0 / B : 0.5 / B, ck = one_way ? 0 : 0.5 / B;
        for (size_t i = 0; i < B; i++) {
            double pos = dotd(uq + i * d, uk + i * d, d) / tau;
            ref += cq * (lse(uq + i * d, uk, B, ubk, M, d, tau, l) - pos);
            if (ck != 0)
                ref += ck * (lse(uk + i * d, uq, B, ubq, M, d, tau, l) - pos);
        }
        double dl = fabs(loss - ref) / fabs(ref);
        printf("check: loss %.10g on the host (%.1f s), relative difference %.2e\n", ref,
               now() - t0, dl);
        rc = dl > 1e-4 ? 3 : 0;
        if (one_way && sample) { /* dL/dq_i of sampled rows: only row i's softmax */
            clg_view gv;
            clg_contrastive_grad_view(c, CLG_SIDE_QUERY, &gv);
            float *g = malloc(B * d * 4);
            clEnqueueReadBuffer(clg_context_queue(ctx), gv.mem, CL_TRUE, 0, B * d * 4, g, 0,
                                NULL, NULL);
            double num = 0, den = 0, *gu = malloc(d * 8);
            for (size_t s = 0; s < sample; s++) {
                size_t i = (s * 2654435761u) % B;
                double li = lse(uq + i * d, uk, B, ubk, M, d, tau, l);
                memset(gu, 0, d * 8);
                for (size_t j = 0; j < B + M; j++) { /* l[] holds row i's logits */
                    double pj = exp(l[j] - li) - (j == i);
                    const double *v = j < B ? uk + j * d : ubk + (j - B) * d;
                    for (size_t c2 = 0; c2 < d; c2++)
                        gu[c2] += cq * pj * v[c2] / tau;
                }
                double sq = 0, gdu = dotd(gu, uq + i * d, d);
                for (size_t c2 = 0; c2 < d; c2++)
                    sq += (double)q[i * d + c2] * q[i * d + c2];
                for (size_t c2 = 0; c2 < d; c2++) {
                    double ref_g = (gu[c2] - gdu * uq[i * d + c2]) / sqrt(sq);
                    num += (g[i * d + c2] - ref_g) * (g[i * d + c2] - ref_g);
                    den += ref_g * ref_g;
                }
            }
            double eg = sqrt(num / den);
            printf("check: query gradients of %zu sampled rows, rel L2 %.2e\n", sample, eg);
            if (eg > 1e-4)
                rc = 3;
            free(g), free(gu);
        }
        free(uq), free(uk), free(ubq), free(ubk), free(l);
    }
    clReleaseMemObject(mq), clReleaseMemObject(mk);
    free(q), free(k), free(bq), free(bk), free(times);
    clg_contrastive_destroy(c);
    clg_context_destroy(ctx);
    return rc;
}
