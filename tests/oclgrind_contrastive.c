/* oclgrind_contrastive.c - the contrastive kernels (cl/contrastive.cl) for
 * tests/oclgrind_kernels.c, through the public API at tiny sizes: fills
 * from fp32, fp16 and bf16 buffers, bank pushes that wrap, computes with
 * and without banks (symmetric and one-directional, cosine and dot
 * products, fp32 and bf16 caches, d of one chunk and of two gradient
 * slices), gradient slices in every dtype, the loss and the banks read
 * back; and the trainer's contrastive kernels (tools/train/tasks/contrastive/contrastive_train.cl),
 * one launch each. Checks no numbers: test_contrastive.c and
 * test_train_contrastive.c do.
 *
 * Oclgrind 21.10 keeps memory that clEnqueueFillBuffer wrote (clgrad
 * zero-fills every buffer it creates) "uninitialized" even after a kernel
 * stores to it (a 20-line reproducer: fill a buffer, store into it from a
 * kernel, read it in the next). So, as oclgrind_kernels.c does for the
 * model's arenas, every buffer of the clg_contrastive is read back and
 * written again from offset 0 right after creation (contrastive.h's
 * internals); the host buffers are created from host memory. Likewise a
 * clEnqueueCopyBuffer into part of a buffer marks the rest of it
 * "uninitialized" (reproduced: two 32-byte copies into the halves of a
 * 64-byte buffer created from host memory, then a kernel reading it all
 * is told the first half is uninitialized), so the banks, which pushes
 * fill by such copies, are rewritten after each push. What Oclgrind
 * reports then is about the kernels. */
#include "oclgrind_contrastive.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"
#include "contrastive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static clg_context *ctx;

static int check(clg_status st, const char *what)
{
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "FAILED: contrastive: %s: %s: %s\n", what, clg_status_string(st),
                clg_last_error(ctx));
        failures++;
    }
    return st == CLG_SUCCESS;
}

static cl_mem host_buffer(size_t bytes, unsigned seed)
{
    unsigned char *h = malloc(bytes);
    if (!h)
        return NULL;
    /* small values in every dtype: bytes of a pattern that reads as
     * finite floats, halves and bfloat16s (exponent bits never all set) */
    for (size_t i = 0; i < bytes; i++)
        h[i] = (unsigned char)(i % 2 ? 0x3c ^ ((i * 7 + seed) & 0x03) : (i * 37 + seed) & 0xff);
    cl_int err;
    cl_mem m = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, h, &err);
    free(h);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "FAILED: contrastive: clCreateBuffer: %d\n", (int)err);
        failures++;
        return NULL;
    }
    return m;
}

static void rewrite(cl_mem mem)
{
    size_t bytes = 0;
    if (!mem || clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return;
    void *host = malloc(bytes);
    cl_command_queue q = clg_context_queue(ctx);
    if (host == NULL ||
        clEnqueueReadBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL) != CL_SUCCESS ||
        clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL) != CL_SUCCESS) {
        fprintf(stderr, "FAILED: contrastive: rewriting a buffer\n");
        failures++;
    }
    free(host);
}

static void mark_initialized(const clg_contrastive *c)
{
    for (int s = 0; s < 2; s++) {
        const cl_mem per_side[] = {c->reps[s], c->grads[s], c->bank[s], c->rn[s],
                                   c->lse[s], c->cp[s],    c->rloss[s], c->bank_rn[s]};
        for (size_t i = 0; i < sizeof per_side / sizeof per_side[0]; i++)
            rewrite(per_side[i]);
    }
    rewrite(c->loss);
}

typedef struct con_scenario {
    const char *name;
    size_t batch, dim, bank, rows;
    clg_dtype dtype;
    int symmetric, normalize;
} con_scenario;

static void run(const con_scenario *s)
{
    fprintf(stderr, "contrastive scenario: %s\n", s->name);
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = s->batch;
    cfg.dim = s->dim;
    cfg.dtype = s->dtype;
    cfg.symmetric = s->symmetric;
    cfg.normalize = s->normalize;
    cfg.bank_size = s->bank;
    cfg.temperature = s->normalize ? 0.1f : 4.0f;
    clg_contrastive *c = NULL;
    if (!check(clg_contrastive_create(ctx, &cfg, &c), "create"))
        return;
    mark_initialized(c);
    size_t n = s->batch * s->dim;
    cl_mem f32 = host_buffer(n * 4, 1), f16 = host_buffer(n * 2, 2), b16 = host_buffer(n * 2, 3);
    cl_mem out = host_buffer(n * 4, 4);
    const clg_dtype src_dtype[3] = {CLG_FP32, CLG_FP16, CLG_BF16};
    const cl_mem src[3] = {f32, f16, b16};
    if (f32 && f16 && b16 && out) {
        for (int round = 0; round < (s->bank ? 2 : 1); round++) {
            /* queries from one dtype, keys from the next, in two fills */
            for (int side = 0; side < 2; side++) {
                int t = (round + side) % 3;
                size_t half = s->batch / 2;
                check(clg_contrastive_fill(c, (clg_side)side, 0, half, src[t], 0, s->dim,
                                           src_dtype[t], NULL), "fill");
                check(clg_contrastive_fill(c, (clg_side)side, half, s->batch - half, src[t],
                                           half * s->dim, s->dim, src_dtype[t], NULL), "fill");
            }
            if (s->bank && round == 0) { /* more rows than the bank: it wraps */
                check(clg_contrastive_bank_push(c, s->batch, NULL), "bank push");
                rewrite(c->bank[0]);
                rewrite(c->bank[1]);
            }
        }
        check(clg_contrastive_compute(c, s->rows, NULL), "compute");
        for (int side = 0; side < 2; side++)
            for (int t = 0; t < 3; t++)
                check(clg_contrastive_grad(c, (clg_side)side, 1, s->rows - 1, 0.5f, out, 3,
                                           s->dim, src_dtype[t], NULL), "grad");
        float loss;
        check(clg_contrastive_loss(c, &loss), "loss");
        if (s->bank) {
            float *h = malloc(s->bank * s->dim * sizeof *h);
            if (h)
                check(clg_contrastive_bank_download(c, CLG_SIDE_KEY, h, s->bank * s->dim, NULL),
                      "bank download");
            free(h);
        }
    }
    cl_mem all[] = {f32, f16, b16, out};
    for (size_t i = 0; i < 4; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
    clg_contrastive_destroy(c);
}

/* The trainer's kernels of contrastive_train.cl, one launch each on a
 * "data set" of 5 images of 28 x 28. */
static void run_train_kernels(void)
{
    fprintf(stderr, "program: contrastive_train\n");
    cl_program prog;
    if (!check(clg_context_program_source(ctx, "contrastive_train",
                                          train_kernel_source("contrastive_train"),
                                          "-DIMG_ROWS=28 -DIMG_COLS=28", &prog, NULL),
               "contrastive_train"))
        return;
    enum { ROWS = 3, PIX = 28 * 28 };
    int idx[5] = {4, 2, 0, 3, 1};
    cl_int err;
    cl_mem images = host_buffer(5 * PIX, 5);
    cl_mem index = clCreateBuffer(clg_context_cl(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  sizeof idx, idx, &err);
    cl_mem x = host_buffer(2 * ROWS * PIX * 4, 6), sums = host_buffer(16, 7);
    cl_mem seeds = host_buffer(8 * ROWS, 8), loss = host_buffer(4, 9);
    const char *names[] = {"con_views", "con_l2norm", "con_add_loss", "con_seeds"};
    for (int i = 0; i < 4 && images && index && x && sums && seeds && loss; i++) {
        cl_kernel k = clCreateKernel(prog, names[i], &err);
        if (err != CL_SUCCESS) {
            fprintf(stderr, "FAILED: contrastive: clCreateKernel(%s): %d\n", names[i], (int)err);
            failures++;
            continue;
        }
        cl_uint off = 1, rows = ROWS, pos0 = 5, shift = 2, dim = 16;
        cl_ulong seed = 42, update = 7;
        cl_float noise = 0.1f, w = 0.5f;
        size_t global = 1;
        if (i == 0) {
            clSetKernelArg(k, 0, sizeof images, &images), clSetKernelArg(k, 1, sizeof index, &index);
            clSetKernelArg(k, 2, sizeof off, &off), clSetKernelArg(k, 3, sizeof rows, &rows);
            clSetKernelArg(k, 4, sizeof seed, &seed), clSetKernelArg(k, 5, sizeof update, &update);
            clSetKernelArg(k, 6, sizeof pos0, &pos0), clSetKernelArg(k, 7, sizeof shift, &shift);
            clSetKernelArg(k, 8, sizeof noise, &noise), clSetKernelArg(k, 9, sizeof x, &x);
            global = 2 * ROWS * PIX;
        } else if (i == 1) { /* x as 2 * ROWS * PIX / 16 rows of 16 */
            cl_uint n = 2 * ROWS * PIX / 16;
            clSetKernelArg(k, 0, sizeof x, &x), clSetKernelArg(k, 1, sizeof n, &n);
            clSetKernelArg(k, 2, sizeof dim, &dim);
            global = n;
        } else if (i == 2) {
            clSetKernelArg(k, 0, sizeof sums, &sums), clSetKernelArg(k, 1, sizeof loss, &loss);
            clSetKernelArg(k, 2, sizeof w, &w);
        } else {
            clSetKernelArg(k, 0, sizeof seed, &seed), clSetKernelArg(k, 1, sizeof update, &update);
            clSetKernelArg(k, 2, sizeof pos0, &pos0), clSetKernelArg(k, 3, sizeof rows, &rows);
            clSetKernelArg(k, 4, sizeof seeds, &seeds);
            global = ROWS;
        }
        fprintf(stderr, "  kernel %s (%zu work-items)\n", names[i], global);
        err = clEnqueueNDRangeKernel(clg_context_queue(ctx), k, 1, NULL, &global, NULL, 0, NULL,
                                     NULL);
        if (err == CL_SUCCESS)
            err = clFinish(clg_context_queue(ctx));
        if (err != CL_SUCCESS) {
            fprintf(stderr, "FAILED: contrastive: %s: %d\n", names[i], (int)err);
            failures++;
        }
        clReleaseKernel(k);
    }
    cl_mem all[] = {images, index, x, sums, seeds, loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
}

int oclgrind_contrastive(clg_context *context)
{
    ctx = context;
    failures = 0;
    const con_scenario scenarios[] = {
        {"fp32, symmetric, cosine, bank 16", 40, 20, 16, 40, CLG_FP32, 1, 1},
        {"bf16, one direction, bank 24, part of the batch", 40, 12, 24, 33, CLG_BF16, 0, 1},
        {"fp32, dot products, d 130 (two slices)", 35, 130, 0, 35, CLG_FP32, 1, 0},
    };
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        run(&scenarios[i]);
    run_train_kernels();
    return failures;
}
