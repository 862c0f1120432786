/* gpt_kernels_bench.c - clgrad-gpt-bench: every kernel of the GPT task
 * (tools/train/tasks/gpt/gpt.cl, tools/train/tasks/gpt/gpt_kernels.h) at one model size,
 * each against the device's STREAM triad on its own bytes, interleaved.
 *
 *     clgrad-gpt-bench [--rows B] [--context T] [--width C] [--heads NH]
 *                      [--reps N] [--device SEL]
 *
 * Every repetition is one reference triad (bench/stream.c: the fastest
 * form and shape of the device) followed by one launch of every kernel,
 * each finished on its own, so drift hits all alike. A kernel's bytes are
 * the ones it must move (gpt_kernel_bytes: each input read once, each
 * output written once), so its GB/s over the triad's is the fraction of
 * the device's bandwidth it reaches; at small sizes the launch's own cost
 * is part of it, as it is in training. */
#include "clutil.h"
#include "gpt_flash.h"
#include "gpt_kernels.h"
#include "stream.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpt_bench_dims {
    unsigned B, T, C, NH, V;
} gpt_bench_dims;

/* The buffers every launch reads or writes, large enough for all. */
typedef struct gpt_bench_bufs {
    cl_mem act[6];    /* [N x 4C] floats each */
    gpt_flash *flash; /* the attention's program for the head size */
    cl_mem par[4];    /* [max(V, T, 4) x 4C]: weights, biases, their gradients */
    cl_mem rows[3];   /* [N]: mean, rstd, row losses */
    cl_mem windows, idx, scratch, sort, sums;
} gpt_bench_bufs;

static clg_view view(cl_mem m, size_t count)
{
    return (clg_view){m, 0, count};
}

typedef struct gpt_bench_kernel {
    const char *name;
    double bytes;
    cl_int (*launch)(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                     const gpt_tokens *tok);
} gpt_bench_kernel;

#define N_ROWS(d) ((size_t)(d)->B * (d)->T)
#define F4 4.0 /* bytes per float */

static cl_int l_embed(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                      const gpt_tokens *tok)
{
    size_t nc = N_ROWS(d) * d->C;
    return gpt_embed(k, tok, d->B, d->T, d->C, view(b->par[0], (size_t)d->V * d->C),
                     view(b->par[1], (size_t)d->T * d->C), view(b->act[0], nc));
}

static cl_int l_embed_bw(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                         const gpt_tokens *tok)
{
    size_t nc = N_ROWS(d) * d->C;
    return gpt_embed_backward(k, tok, d->B, d->T, d->C, view(b->act[0], nc), b->sort,
                              view(b->par[2], (size_t)d->V * d->C), 1.0f,
                              view(b->par[3], (size_t)d->T * d->C), 1.0f, b->scratch);
}

static cl_int l_ln(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                   const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d), nc = n * d->C;
    return gpt_layernorm(k, (cl_uint)n, d->C, view(b->act[0], nc), view(b->par[0], d->C),
                         view(b->par[1], d->C), view(b->act[1], nc), view(b->rows[0], n),
                         view(b->rows[1], n));
}

static cl_int l_ln_bw(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                      const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d), nc = n * d->C;
    return gpt_layernorm_backward(k, (cl_uint)n, d->C, view(b->act[1], nc), view(b->act[0], nc),
                                  view(b->par[0], d->C), view(b->rows[0], n),
                                  view(b->rows[1], n), view(b->act[2], nc),
                                  view(b->par[2], d->C), view(b->par[3], d->C), 1.0f,
                                  b->scratch);
}

static cl_int l_bias_add(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                         const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d), oc = 4 * (size_t)d->C;
    return gpt_bias_add(k, (cl_uint)n, (cl_uint)oc, view(b->act[3], n * oc),
                        view(b->par[1], oc));
}

static cl_int l_bias_grad(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                          const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d), oc = 4 * (size_t)d->C;
    return gpt_bias_grad(k, (cl_uint)n, (cl_uint)oc, view(b->act[3], n * oc),
                         view(b->par[3], oc), 1.0f, b->scratch);
}

static cl_int l_gelu(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                     const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d) * 4 * d->C;
    return gpt_gelu(k, (cl_uint)n, view(b->act[3], n), view(b->act[4], n));
}

static cl_int l_gelu_bw(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                        const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d) * 4 * d->C;
    return gpt_gelu_backward(k, (cl_uint)n, view(b->act[3], n), view(b->act[4], n),
                             view(b->act[5], n));
}

static cl_int l_residual(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                         const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d) * d->C;
    return gpt_residual(k, (cl_uint)n, view(b->act[0], n), view(b->act[1], n),
                        view(b->act[2], n));
}

/* The attention (gpt_flash.h) in the model's layout: qkv [N x 3C] in
 * act[3] (3C of its 4C columns used as rows of 3C), y [N x C] in act[1],
 * dy in act[2], dqkv in act[0], each row's log-sum-exp in act[4] and the
 * backward's dsum in act[5] (B NH T floats each, within N x 4C). */
static cl_int l_flash(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                      const gpt_tokens *tok)
{
    (void)k, (void)tok;
    size_t nc = N_ROWS(d) * d->C, r = (size_t)d->B * d->NH;
    clg_view qkv = view(b->act[3], 3 * nc);
    clg_view kv = {qkv.mem, d->C, 3 * nc - d->C}, vv = {qkv.mem, 2 * d->C, 3 * nc - 2 * d->C};
    return gpt_flash_forward(b->flash, (cl_uint)r, d->T, 0.125f,
                             gpt_flash_model_layout(d->NH, d->C), view(b->par[1], 3 * d->C), qkv,
                             kv, vv, view(b->act[1], nc), view(b->act[4], r * d->T));
}

static cl_int l_flash_bw(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                         const gpt_tokens *tok)
{
    (void)k, (void)tok;
    size_t nc = N_ROWS(d) * d->C, r = (size_t)d->B * d->NH, C = d->C;
    clg_view qkv = view(b->act[3], 3 * nc), dqkv = view(b->act[0], 3 * nc);
    clg_view kv = {qkv.mem, C, 3 * nc - C}, vv = {qkv.mem, 2 * C, 3 * nc - 2 * C};
    clg_view dk = {dqkv.mem, C, 3 * nc - C}, dv = {dqkv.mem, 2 * C, 3 * nc - 2 * C};
    return gpt_flash_backward(b->flash, (cl_uint)r, d->T, 0.125f,
                              gpt_flash_model_layout(d->NH, d->C), view(b->par[1], 3 * C), qkv, kv,
                              vv, view(b->act[1], nc), view(b->act[4], r * d->T),
                              view(b->act[2], nc), view(b->act[5], r * d->T), dqkv, dk, dv);
}

static cl_int l_xent(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                     const gpt_tokens *tok)
{
    size_t n = N_ROWS(d), nv = n * d->V;
    clg_view none = {NULL, 0, 0};
    /* the logits in act[5] (V <= 4C), dlogits written in place as in the model */
    return gpt_xent(k, tok, d->T, 0, d->B * d->T, d->V, d->V, view(b->act[5], nv),
                    view(b->rows[2], n), 1, 1.0f / (float)d->T, none, view(b->act[5], nv));
}

static cl_int l_loss_sum(const gpt_kernels *k, const gpt_bench_bufs *b, const gpt_bench_dims *d,
                         const gpt_tokens *tok)
{
    (void)tok;
    size_t n = N_ROWS(d);
    return gpt_loss_sum(k, (cl_uint)n, view(b->rows[2], n), b->sums, b->scratch);
}

/* The kernels and the bytes each must move at d. */
static size_t gpt_bench_kernels(const gpt_bench_dims *d, gpt_bench_kernel *out)
{
    double n = (double)N_ROWS(d), c = d->C, v = d->V, t = d->T;
    double nc = n * c * F4, h = 4 * nc, lse = n * d->NH * F4;
    size_t i = 0;
    out[i++] = (gpt_bench_kernel){"embed", n + v * c * F4 + t * c * F4 + nc, l_embed};
    out[i++] = (gpt_bench_kernel){"embed_backward", n + nc + 2 * (v + t) * c * F4, l_embed_bw};
    out[i++] = (gpt_bench_kernel){"layernorm", 2 * nc + 2 * c * F4 + 2 * n * F4, l_ln};
    /* dout, inp, dinp read and dinp written, mean and rstd, w, dw and db */
    out[i++] = (gpt_bench_kernel){"layernorm_backward", 4 * nc + 2 * n * F4 + 5 * c * F4,
                                  l_ln_bw};
    out[i++] = (gpt_bench_kernel){"bias_add (4C)", 2 * h + 4 * c * F4, l_bias_add};
    out[i++] = (gpt_bench_kernel){"bias_grad (4C)", h + 2 * 4 * c * F4, l_bias_grad};
    out[i++] = (gpt_bench_kernel){"gelu (4C)", 2 * h, l_gelu};
    out[i++] = (gpt_bench_kernel){"gelu_backward (4C)", 3 * h, l_gelu_bw};
    out[i++] = (gpt_bench_kernel){"residual", 3 * nc, l_residual};
    /* q, k, v read, y and the log-sum-exps written; and q, k, v, y, dy and
     * the log-sum-exps read, dq, dk, dv written, dsum written and read */
    out[i++] = (gpt_bench_kernel){"attention (flash)", 4 * nc + lse, l_flash};
    out[i++] = (gpt_bench_kernel){"attention backward (flash)", 8 * nc + 3 * lse, l_flash_bw};
    out[i++] = (gpt_bench_kernel){"xent (with backward)", n + 2 * n * v * F4 + n * F4, l_xent};
    out[i++] = (gpt_bench_kernel){"loss_sum", n * F4, l_loss_sum};
    return i;
}

#define MAX_KERNELS 24

static int parse_uint(const char *flag, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) {
        fprintf(stderr, "clgrad-gpt-bench: %s: expected %u..%u, got '%s'\n", flag, lo, hi, s);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

typedef struct gpt_bench_opts {
    gpt_bench_dims d;
    unsigned reps;
    const char *device;
} gpt_bench_opts;

static int parse(int argc, char **argv, gpt_bench_opts *o)
{
    /* the GPT task's default micro-step (--preset small, --micro-batch 4):
     * 4 sequences of 64 bytes, 64 wide, 4 heads of 16 */
    *o = (gpt_bench_opts){{4, 64, 64, 4, 256}, 20, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help")) {
            printf("usage: clgrad-gpt-bench [--rows B] [--context T] [--width C] [--heads NH] "
                   "[--reps N] [--device SEL]\n");
            return 1;
        } else if (!v) {
            fprintf(stderr, "clgrad-gpt-bench: %s: unknown flag or missing value\n", a);
            return -1;
        } else if (!strcmp(a, "--rows"))
            rc = parse_uint(a, v, 1, 4096, &o->d.B);
        else if (!strcmp(a, "--context"))
            rc = parse_uint(a, v, 2, 4096, &o->d.T);
        else if (!strcmp(a, "--width"))
            rc = parse_uint(a, v, 1, 8192, &o->d.C);
        else if (!strcmp(a, "--heads"))
            rc = parse_uint(a, v, 1, 256, &o->d.NH);
        else if (!strcmp(a, "--reps"))
            rc = parse_uint(a, v, 3, 10000, &o->reps);
        else if (!strcmp(a, "--device"))
            o->device = v;
        else {
            fprintf(stderr, "clgrad-gpt-bench: %s: unknown flag\n", a);
            return -1;
        }
        if (rc != 0)
            return -1;
        i++;
    }
    if (o->d.C % o->d.NH != 0) {
        fprintf(stderr, "clgrad-gpt-bench: --width %u is not a multiple of --heads %u\n",
                o->d.C, o->d.NH);
        return -1;
    }
    return 0;
}

static int alloc_bufs(clg_context *ctx, const gpt_bench_dims *d, gpt_bench_bufs *b)
{
    size_t n = N_ROWS(d), h = n * 4 * d->C, rows_p = d->V > d->T ? d->V : d->T;
    float one = 1.0f;
    int rc = 0;
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 6 && rc == 0; i++)
        rc = bench_filled_buffer(ctx, h * sizeof(float), &one, sizeof one, "activations",
                                 &b->act[i]);
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = bench_filled_buffer(ctx, rows_p * 4 * d->C * sizeof(float), &one, sizeof one,
                                 "params", &b->par[i]);
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = bench_filled_buffer(ctx, n * sizeof(float), &one, sizeof one, "rows", &b->rows[i]);
    size_t scratch = gpt_scratch_floats((unsigned)n, 4 * d->C);
    int zero = 0;
    if (rc == 0)
        rc = bench_filled_buffer(ctx, (scratch ? scratch : 1) * sizeof(float), &one, sizeof one,
                                 "scratch", &b->scratch);
    if (rc == 0)
        rc = bench_filled_buffer(ctx, gpt_sort_ints((unsigned)n, d->V) * sizeof(int), &zero,
                                 sizeof zero, "sort", &b->sort);
    if (rc == 0)
        rc = bench_filled_buffer(ctx, 2 * sizeof(float), &zero, sizeof zero, "sums", &b->sums);
    /* windows of bytes 0, 1, ..., 255, 0, ...; an identity order */
    cl_int e = CL_SUCCESS;
    if (rc == 0) {
        size_t wn = (size_t)d->B * (d->T + 1);
        unsigned char *w = malloc(wn);
        int *idx = malloc(d->B * sizeof *idx);
        if (!w || !idx)
            rc = -1;
        for (size_t i = 0; rc == 0 && i < wn; i++)
            w[i] = (unsigned char)(i * 7);
        for (unsigned i = 0; rc == 0 && i < d->B; i++)
            idx[i] = (int)i;
        cl_context cl = clg_context_cl(ctx);
        if (rc == 0)
            b->windows = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, wn, w, &e);
        if (rc == 0 && e == CL_SUCCESS)
            b->idx = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                    d->B * sizeof *idx, idx, &e);
        free(w);
        free(idx);
        if (rc == 0 && !bench_cl_ok(e, "token buffers"))
            rc = -1;
    }
    return rc;
}

static void free_bufs(gpt_bench_bufs *b)
{
    bench_release_mems(b->act, 6);
    if (b->flash)
        gpt_flash_release(b->flash);
    bench_release_mems(b->par, 4);
    bench_release_mems(b->rows, 3);
    cl_mem rest[] = {b->windows, b->idx, b->scratch, b->sort, b->sums};
    bench_release_mems(rest, sizeof rest / sizeof *rest);
}

static int measure(clg_context *ctx, const gpt_bench_opts *o)
{
    const gpt_bench_dims *d = &o->d;
    gpt_kernels k;
    memset(&k, 0, sizeof k);
    if (!bench_clg_ok(ctx, gpt_kernels_init(ctx, &k, d->V),
                      "building tools/train/tasks/gpt/gpt.cl"))
        return -1;
    gpt_bench_bufs b;
    bench_stream s;
    int rc = alloc_bufs(ctx, d, &b);
    gpt_flash flash;
    if (rc == 0 && !bench_clg_ok(ctx, gpt_flash_init(ctx, d->C / d->NH, &flash),
                                 "building tools/train/tasks/gpt/gpt_flash.cl"))
        rc = -1;
    else if (rc == 0)
        b.flash = &flash;
    int have_stream = 0;
    if (rc == 0)
        rc = bench_stream_init(&s, ctx, (uint64_t)1 << 24, 0, 0, 3);
    have_stream = rc == 0;
    gpt_bench_kernel ks[MAX_KERNELS];
    size_t nk = gpt_bench_kernels(d, ks);
    bench_samples ms[MAX_KERNELS], triad = {0};
    memset(ms, 0, sizeof ms);
    gpt_tokens tok = {b.windows, b.idx, 0, d->T + 1};
    cl_command_queue q = clg_context_queue(ctx);
    /* repetition 0 warms up (first launches, page faults) and is not kept */
    for (unsigned r = 0; rc == 0 && r <= o->reps; r++) {
        double gbs;
        if (bench_stream_rep(&s, NULL, &gbs) != 0)
            rc = -1;
        else if (r > 0)
            bench_samples_add(&triad, gbs);
        for (size_t i = 0; rc == 0 && i < nk; i++) {
            double t0 = bench_now_ms();
            cl_int e = ks[i].launch(&k, &b, d, &tok);
            if (e == CL_SUCCESS)
                e = clFinish(q);
            if (!bench_cl_ok(e, ks[i].name))
                rc = -1;
            else if (r > 0)
                bench_samples_add(&ms[i], bench_now_ms() - t0);
        }
    }
    if (rc == 0) {
        bench_stat ts = bench_samples_stat(&triad);
        printf("device: %s\n", clg_context_device_info(ctx)->name);
        printf("size: %u sequences x %u positions, width %u, %u heads, vocabulary %u; "
               "%u repetitions, interleaved\n", d->B, d->T, d->C, d->NH, d->V, o->reps);
        printf("reference triad (16 Mi floats per array): median %.1f GB/s (%.1f .. %.1f)\n",
               ts.median, ts.min, ts.max);
        printf("%-26s %10s %10s %9s %9s %8s\n", "kernel", "median us", "range us", "KiB",
               "GB/s", "/triad");
        for (size_t i = 0; i < nk; i++) {
            bench_stat st = bench_samples_stat(&ms[i]);
            double gbs = ks[i].bytes / (st.median * 1e6);
            printf("%-26s %10.1f %4.0f-%-5.0f %9.1f %9.2f %7.0f%%\n", ks[i].name,
                   st.median * 1e3, st.min * 1e3, st.max * 1e3, ks[i].bytes / 1024, gbs,
                   100 * gbs / ts.median);
        }
    }
    for (size_t i = 0; i < nk; i++)
        bench_samples_free(&ms[i]);
    bench_samples_free(&triad);
    if (have_stream)
        bench_stream_free(&s);
    free_bufs(&b);
    gpt_kernels_release(&k);
    return rc;
}

int main(int argc, char **argv)
{
    gpt_bench_opts o;
    int p = parse(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    clg_context *ctx = NULL;
    clg_status st = clg_context_create(&ctx, o.device);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-gpt-bench: no device: %s: %s\n", clg_status_string(st),
                clg_last_error(NULL));
        return 1;
    }
    int rc = measure(ctx, &o);
    clg_context_destroy(ctx);
    return rc == 0 ? 0 : 1;
}
