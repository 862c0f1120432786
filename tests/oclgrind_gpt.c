/* oclgrind_gpt.c - the GPT task's kernels (tools/train/tasks/gpt/gpt.cl and
 * gpt_flash.cl) for tests/oclgrind_kernels.c: every launcher of
 * gpt_kernels.h once at tiny sizes (B 2, T 5, C 8, 2 heads), with the
 * in-place variants, beta 0 and 1, the fusions (gpt_residual_layernorm in
 * place and without its bias), and the cross-entropy with and without a
 * loss scale; for both builds of the row kernels (a work-group of 64 per
 * row, and 16 rows of 4 items: rows that end inside a work-group), the
 * first with the bytes (V 256: uchar tokens, one radix pass), the second
 * with a vocabulary of 300 (ushort tokens, two passes, logit rows padded
 * to 320).
 * The attention of gpt_flash.h at the same sizes (HS 4) for two tilings
 * (4 rows and key tiles of 2: work-groups and tiles that end past T; 2
 * rows and tiles of 4). Checks no numbers (test_gpt_kernels.c,
 * test_gpt_attention.c and test_gpt_flash.c do); fails on a kernel of
 * either program that no launch here covers.
 *
 * Every buffer is created from host memory (Oclgrind 21.10 keeps memory
 * that clEnqueueFillBuffer wrote "uninitialized", see oclgrind_kernels.c). */
#include "oclgrind_gpt.h"
#include "clgrad_advanced.h"
#include "gpt_flash.h"
#include "gpt_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static clg_context *ctx;

/* The kernels the launches below run; a kernel of tools/train/tasks/gpt/gpt.cl missing here
 * is a failure. */
static const char *const covered[] = {
    "gpt_embed",          "gpt_sort_count",     "gpt_sort_scan",
    "gpt_sort_scatter",   "gpt_sort_starts",    "gpt_wte_grad",
    "gpt_wpe_grad",       "gpt_layernorm",      "gpt_layernorm_backward",
    "gpt_colsum_partial", "gpt_colsum_final",   "gpt_bias_add",
    "gpt_gelu",           "gpt_gelu_backward",  "gpt_residual",
    "gpt_xent",           "gpt_loss_sum",
    "gpt_residual_layernorm", "gpt_bias_gelu",  "gpt_gelu_backward_colsum",
};
/* and those of tools/train/tasks/gpt/gpt_flash.cl */
static const char *const covered_flash[] = {
    "gpt_flash_forward", "gpt_flash_backward_dq", "gpt_flash_backward_dkdv",
};

static void check(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) {
        fprintf(stderr, "FAILED: gpt: %s: OpenCL error %d\n", what, (int)err);
        failures++;
    }
}

/* A buffer of n floats in [-1, 1) (a fixed pattern) from host memory. */
static cl_mem floats(size_t n)
{
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((i * 37 + 11) % 64) / 32.0f - 1.0f;
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * sizeof *h, h, &err);
    free(h);
    check(err, "clCreateBuffer");
    return m;
}

static cl_mem host_bytes(const void *h, size_t bytes)
{
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, (void *)h, &err);
    check(err, "clCreateBuffer");
    return m;
}

/* Every kernel of the program of kernel (n names in list) is in the list;
 * file names the program's source. */
static void check_coverage(cl_kernel kernel, const char *const *list, size_t n, const char *file)
{
    cl_program prog;
    check(clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof prog, &prog, NULL),
          "CL_KERNEL_PROGRAM");
    char names[4096] = "";
    check(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL),
          "CL_PROGRAM_KERNEL_NAMES");
    for (char *save = NULL, *name = strtok_r(names, ";", &save); name;
         name = strtok_r(NULL, ";", &save)) {
        size_t i = 0;
        while (i < n && strcmp(list[i], name))
            i++;
        if (i == n) {
            fprintf(stderr, "UNKNOWN KERNEL: %s in %s: add it to oclgrind_gpt.c\n", name, file);
            failures++;
        }
    }
}

static void run(unsigned row_items, unsigned V)
{
    fprintf(stderr, "program: gpt (%u items per row, vocabulary %u)\n", row_items, V);
    gpt_kernels k;
    if (gpt_kernels_init_rows(ctx, &k, row_items, V) != CLG_SUCCESS) {
        fprintf(stderr, "FAILED: gpt: gpt_kernels_init: %s\n", clg_last_error(ctx));
        failures++;
        return;
    }
    check_coverage(k.k[0], covered, sizeof covered / sizeof *covered, "gpt.cl");
    enum { B = 2, T = 5, C = 8, N = B * T };
    unsigned tb = gpt_token_bytes(V), ld = (V + 63) / 64 * 64;
    uint8_t windows[2 * 4 * 8];
    for (int i = 0; i < 4 * 8; i++) { /* a few repeated tokens, up to V - 6 */
        unsigned v = (unsigned)(i * 97 % 7) * ((V - 1) / 6);
        windows[i * tb] = (uint8_t)v;
        if (tb == 2)
            windows[i * tb + 1] = (uint8_t)(v >> 8);
    }
    int32_t idx[4] = {3, 0, 2, 1};
    gpt_tokens tok = {host_bytes(windows, 4 * 8 * tb), host_bytes(idx, sizeof idx), 1, 8};
    size_t sort_bytes = gpt_sort_ints(N, V) * sizeof(int32_t);
    int32_t *sort_init = calloc(1, sort_bytes);
    cl_mem sort = host_bytes(sort_init, sort_bytes);
    free(sort_init);
    cl_mem scratch = floats(gpt_scratch_floats(N, C)), sums = floats(2);
    /* one buffer per tensor, each view at offset 1 */
#define T_(name, n) clg_view name = {floats((n) + 1), 1, (n)}
    T_(wte, V * C);
    T_(wpe, T * C);
    T_(x, N * C);
    T_(y, N * C);
    T_(w, 4 * C);
    T_(b, 4 * C);
    T_(mean, N);
    T_(rstd, N);
    T_(h, N * 4 * C);
    T_(h2, N * 4 * C);
    T_(q, N * C);
    T_(v, N * C);
    T_(logits, N * ld);
    T_(loss, N);
    T_(scale, 1);
#undef T_
    check(gpt_embed(&k, &tok, B, T, C, wte, wpe, x), "gpt_embed");
    check(gpt_embed_backward(&k, &tok, B, T, C, x, sort, wte, 0.0f, wpe, 1.0f, scratch),
          "gpt_embed_backward");
    check(gpt_layernorm(&k, N, C, x, w, b, y, mean, rstd), "gpt_layernorm");
    check(gpt_layernorm_backward(&k, N, C, y, x, w, mean, rstd, q, w, b, 1.0f, scratch),
          "gpt_layernorm_backward");
    check(gpt_bias_add(&k, N, 4 * C, h, b), "gpt_bias_add");
    check(gpt_bias_grad(&k, N, 4 * C, h, b, 0.0f, scratch), "gpt_bias_grad");
    check(gpt_gelu(&k, N * 4 * C, h, h), "gpt_gelu");
    check(gpt_gelu_backward(&k, N * C, x, y, y), "gpt_gelu_backward");
    check(gpt_residual(&k, N * C, x, y, x), "gpt_residual");
    /* the fusions: res = a (the read of a[0] before lane 0 writes it), and
     * without the bias; in place GELU backward */
    check(gpt_residual_layernorm(&k, N, C, x, v, b, x, w, b, y, mean, rstd),
          "gpt_residual_layernorm (res = a)");
    check(gpt_residual_layernorm(&k, N, C, x, v, (clg_view){NULL, 0, 0}, q, w, b, y, mean, rstd),
          "gpt_residual_layernorm (no bias)");
    check(gpt_bias_gelu(&k, N, 4 * C, h, b, h2), "gpt_bias_gelu");
    check(gpt_gelu_backward_bias_grad(&k, N, 4 * C, h, h2, h2, b, 1.0f, scratch),
          "gpt_gelu_backward_bias_grad");
    /* a pair of bias gradients (C columns, then 4C) finished in one launch */
    check(gpt_bias_grad_partial(&k, N, C, x, scratch, 5 * C, 0), "gpt_bias_grad_partial");
    check(gpt_gelu_backward_partial(&k, N, 4 * C, h, h2, h2, scratch, 5 * C, C),
          "gpt_gelu_backward_partial");
    check(gpt_bias_grad_pair(&k, N, 5 * C, C, scratch, w, b, 0.5f), "gpt_bias_grad_pair");
    check(gpt_xent(&k, &tok, T, 0, N, V, ld, logits, loss, 0, 1.0f, (clg_view){NULL, 0, 0},
                   (clg_view){NULL, 0, 0}),
          "gpt_xent forward");
    check(gpt_xent(&k, &tok, T, 0, N, V, ld, logits, loss, 1, 0.5f, scale, logits),
          "gpt_xent backward");
    check(gpt_loss_sum(&k, N, loss, sums, scratch), "gpt_loss_sum");
    check(clFinish(k.queue), "clFinish");
    clg_view all[] = {wte, wpe, x, y, w, b, mean, rstd, h, h2, q, v, logits, loss, scale};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clReleaseMemObject(all[i].mem);
    cl_mem bufs[] = {tok.windows, tok.idx, sort, scratch, sums};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        clReleaseMemObject(bufs[i]);
    gpt_kernels_release(&k);
}

/* The attention of gpt_flash.h, forward and backward, in the model's
 * layout (gpt_flash_model_layout) with c_attn's bias: 2 sequences of 2
 * heads (R 4) of T 5. */
static void run_flash(unsigned rows, unsigned tile)
{
    fprintf(stderr, "program: gpt_flash (%u rows, key tiles of %u)\n", rows, tile);
    enum { R = 4, NH = 2, T = 5, HS = 4, C = NH * HS, N = R / NH * T, N3 = 3 * N * C, N1 = N * C };
    gpt_flash f;
    clg_status st = gpt_flash_init_tiles(ctx, HS, rows, tile, &f);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "FAILED: gpt_flash: gpt_flash_init_tiles: status %d (%s)\n", (int)st,
                clg_last_error(ctx));
        failures++;
        return;
    }
    check_coverage(f.forward, covered_flash, sizeof covered_flash / sizeof *covered_flash,
                   "gpt_flash.cl");
    /* qkv, dqkv, y, dy, lse, dsum; each at offset 1 */
    const size_t n[6] = {N3, N3, N1, N1, R * T, R * T};
    clg_view t[6];
    for (int i = 0; i < 6; i++)
        t[i] = (clg_view){floats(n[i] + 1), 1, n[i]};
    clg_view q = t[0], k = {q.mem, 1 + C, N3 - C}, v = {q.mem, 1 + 2 * C, N3 - 2 * C};
    clg_view dq = t[1], dk = {dq.mem, 1 + C, N3 - C}, dv = {dq.mem, 1 + 2 * C, N3 - 2 * C};
    gpt_flash_layout lay = gpt_flash_model_layout(NH, C);
    clg_view bias = {floats(3 * C + 1), 1, 3 * C};
    check(gpt_flash_forward(&f, R, T, 0.5f, lay, bias, q, k, v, t[2], t[4]), "gpt_flash_forward");
    check(gpt_flash_backward(&f, R, T, 0.5f, lay, bias, q, k, v, t[2], t[4], t[3], t[5], dq, dk,
                             dv),
          "gpt_flash_backward");
    check(clFinish(f.queue), "clFinish");
    clReleaseMemObject(bias.mem);
    for (int i = 0; i < 6; i++)
        clReleaseMemObject(t[i].mem);
    gpt_flash_release(&f);
}

int oclgrind_gpt(clg_context *context)
{
    ctx = context;
    failures = 0;
    run(64, 256);
    run(4, 300);
    run_flash(4, 2);
    run_flash(2, 4);
    return failures;
}
