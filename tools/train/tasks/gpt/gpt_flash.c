/* gpt_flash.c - the program of gpt_flash.cl for one head size and the
 * device's tiles, and its launchers (semantics in gpt_flash.h). */
#include "gpt_flash.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"

#include <stdio.h>
#include <string.h>

/* Rows per work-group and streamed rows per tile: 64 and 32 on a GPU
 * (not measured here). On a CPU device (PoCL, 2 shared cores, R 4, HS 16,
 * T 256 and 1024) rows 32 with tiles of 32 were among the fastest of rows
 * 4 to 64 and tiles 8 to 32 (at T 1024: 118 ms against 137 for 8 x 16,
 * 150 to 200 for rows 4; noisy figures, medians of 5). Both are then cut
 * to the device's limits (gpt_flash_init). */
enum { ROWS_GPU = 64, ROWS_CPU = 32, TILE_GPU = 32, TILE_CPU = 32 };

/* Local memory of the backward's dkdv kernel, the largest: two tiles of
 * HS floats a row, and lse and dsum of the tile's rows. */
static unsigned long long local_bytes(unsigned hs, unsigned tile)
{
    return 4ull * tile * (2ull * hs + 2);
}

typedef struct device_limits {
    size_t max_wg;
    cl_ulong local_mem;
} device_limits;

static device_limits limits_of(clg_context *ctx)
{
    const clg_device_info *dev = clg_context_device_info(ctx);
    device_limits d = {dev && dev->max_work_group_size ? dev->max_work_group_size : 1, 32768};
    if (dev)
        clGetDeviceInfo(dev->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d.local_mem, &d.local_mem,
                        NULL);
    return d;
}

/* The largest work-group each of f's kernels allows (registers may limit
 * it below the device's); 0 when the driver does not say. */
static size_t kernels_max_wg(clg_context *ctx, const gpt_flash *f)
{
    const clg_device_info *dev = clg_context_device_info(ctx);
    cl_kernel kernels[] = {f->forward, f->backward_dq, f->backward_dkdv};
    size_t min = 0;
    for (size_t i = 0; dev && i < sizeof kernels / sizeof *kernels; i++) {
        size_t n = 0;
        if (clGetKernelWorkGroupInfo(kernels[i], dev->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof n, &n, NULL) == CL_SUCCESS &&
            n > 0 && (min == 0 || n < min))
            min = n;
    }
    return min;
}

/* Kernel name of prog, or NULL with *err set; nothing once *err is set. */
static cl_kernel kernel_of(cl_program prog, const char *name, cl_int *err)
{
    return *err == CL_SUCCESS ? clCreateKernel(prog, name, err) : NULL;
}

static clg_status build(clg_context *ctx, unsigned hs, unsigned rows, unsigned tile,
                        gpt_flash *f)
{
    memset(f, 0, sizeof *f);
    char opts[96];
    snprintf(opts, sizeof opts, "-DFLASH_HS=%u -DFLASH_ROWS=%u -DFLASH_TILE=%u", hs, rows, tile);
    cl_program prog = NULL;
    clg_status st = clg_context_program_source(ctx, "gpt_flash", train_kernel_source("gpt_flash"),
                                               opts, &prog, NULL);
    if (st != CLG_SUCCESS)
        return st;
    f->queue = clg_context_queue(ctx);
    f->hs = hs, f->rows = rows, f->tile = tile;
    cl_int err = CL_SUCCESS;
    f->forward = kernel_of(prog, "gpt_flash_forward", &err);
    f->backward_dq = kernel_of(prog, "gpt_flash_backward_dq", &err);
    f->backward_dkdv = kernel_of(prog, "gpt_flash_backward_dkdv", &err);
    if (err != CL_SUCCESS)
        gpt_flash_release(f);
    return (clg_status)err;
}

clg_status gpt_flash_init_tiles(clg_context *ctx, unsigned hs, unsigned rows, unsigned tile,
                                gpt_flash *f)
{
    memset(f, 0, sizeof *f);
    if (hs == 0 || hs > GPT_FLASH_MAX_HS || rows == 0 || tile == 0)
        return CLG_ERR_INVALID_ARGUMENT;
    device_limits d = limits_of(ctx);
    if (rows > d.max_wg || local_bytes(hs, tile) > d.local_mem)
        return CLG_ERR_UNSUPPORTED;
    clg_status st = build(ctx, hs, rows, tile, f);
    size_t kmax = st == CLG_SUCCESS ? kernels_max_wg(ctx, f) : 0;
    if (kmax && kmax < rows) {
        gpt_flash_release(f);
        return CLG_ERR_UNSUPPORTED;
    }
    return st;
}

clg_status gpt_flash_init(clg_context *ctx, unsigned hs, gpt_flash *f)
{
    memset(f, 0, sizeof *f);
    if (hs == 0 || hs > GPT_FLASH_MAX_HS)
        return CLG_ERR_INVALID_ARGUMENT;
    const clg_device_info *dev = clg_context_device_info(ctx);
    int cpu = dev && (dev->type & CL_DEVICE_TYPE_CPU);
    device_limits d = limits_of(ctx);
    unsigned rows = cpu ? ROWS_CPU : ROWS_GPU, tile = cpu ? TILE_CPU : TILE_GPU;
    while (rows > 1 && rows > d.max_wg)
        rows /= 2;
    /* half the local memory: two work-groups fit beside each other */
    while (tile > 1 && local_bytes(hs, tile) > d.local_mem / 2)
        tile /= 2;
    clg_status st = build(ctx, hs, rows, tile, f);
    /* A kernel may allow fewer items than the device (registers): build
     * again for the smaller work-group. */
    size_t kmax = st == CLG_SUCCESS ? kernels_max_wg(ctx, f) : 0;
    if (kmax && kmax < rows) {
        gpt_flash_release(f);
        while (rows > 1 && rows > kmax)
            rows /= 2;
        st = build(ctx, hs, rows, tile, f);
    }
    return st;
}

void gpt_flash_release(gpt_flash *f)
{
    cl_kernel kernels[] = {f->forward, f->backward_dq, f->backward_dkdv};
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------ launching */

/* Every kernel takes (T, scale, NH, ld_qkv, ld_y), the bias, and then its
 * tensors, each a buffer and an offset in elements (views[0] the bias,
 * whose buffer may be NULL: OpenCL passes a NULL pointer); it runs in
 * work-groups of f->rows items over the T rows it owns (dimension 0) and
 * the R heads (dimension 1). */
static cl_int launch(gpt_flash *f, cl_kernel kern, cl_uint R, cl_uint T, float scale,
                     gpt_flash_layout lay, const clg_view *views, cl_uint n_views)
{
    enum { SHAPE_ARGS = 5 };
    cl_int e = clSetKernelArg(kern, 0, sizeof(cl_uint), &T);
    if (e == CL_SUCCESS)
        e = clSetKernelArg(kern, 1, sizeof(cl_float), &scale);
    const cl_uint ints[] = {lay.heads, lay.ld_qkv, lay.ld_y};
    for (cl_uint i = 0; i < 3 && e == CL_SUCCESS; i++)
        e = clSetKernelArg(kern, 2 + i, sizeof(cl_uint), &ints[i]);
    for (cl_uint i = 0; i < n_views && e == CL_SUCCESS; i++) {
        cl_ulong off = views[i].offset;
        e = clSetKernelArg(kern, SHAPE_ARGS + 2 * i, sizeof(cl_mem), &views[i].mem);
        if (e == CL_SUCCESS)
            e = clSetKernelArg(kern, SHAPE_ARGS + 1 + 2 * i, sizeof off, &off);
    }
    if (e != CL_SUCCESS || R == 0 || T == 0)
        return e;
    size_t global[2] = {((size_t)T + f->rows - 1) / f->rows * f->rows, R};
    size_t local[2] = {f->rows, 1};
    e = clEnqueueNDRangeKernel(f->queue, kern, 2, NULL, global, local, 0, NULL, NULL);
    f->launches += e == CL_SUCCESS;
    return e;
}

/* Elements a view of R heads of T rows at stride ld must hold: up to the
 * last head's last row (0 when R or T is 0). */
static size_t extent(const gpt_flash *f, cl_uint R, cl_uint T, cl_uint heads, cl_uint ld)
{
    if (R == 0 || T == 0)
        return 0;
    size_t seqs = R / heads;
    return (seqs * T - 1) * ld + (size_t)(heads - 1) * f->hs + f->hs;
}

/* Any of the n views missing or holding fewer than its count; the bias
 * (views[0]) may be missing. */
static int short_views(const clg_view *views, const size_t *counts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((views[i].mem == NULL && i > 0) || (views[i].mem && views[i].count < counts[i]))
            return 1;
    return 0;
}

/* A layout that does not fit the heads: a stride below a head's row or
 * below the heads side by side, or R not whole sequences. */
static int bad_layout(const gpt_flash *f, cl_uint R, gpt_flash_layout lay)
{
    size_t row = (size_t)lay.heads * f->hs;
    return lay.heads == 0 || R % lay.heads != 0 || lay.ld_qkv < row || lay.ld_y < row;
}

#define N_OF(a) ((cl_uint)(sizeof(a) / sizeof *(a)))

cl_int gpt_flash_forward(gpt_flash *f, cl_uint R, cl_uint T, float scale, gpt_flash_layout lay,
                         clg_view bias, clg_view q, clg_view k, clg_view v, clg_view y,
                         clg_view lse)
{
    if (bad_layout(f, R, lay))
        return CL_INVALID_VALUE;
    size_t nq = extent(f, R, T, lay.heads, lay.ld_qkv), ny = extent(f, R, T, lay.heads, lay.ld_y);
    const clg_view views[] = {bias, q, k, v, y, lse};
    const size_t counts[] = {3 * (size_t)lay.heads * f->hs, nq, nq, nq, ny, (size_t)R * T};
    if (short_views(views, counts, N_OF(views)))
        return CL_INVALID_VALUE;
    return launch(f, f->forward, R, T, scale, lay, views, N_OF(views));
}

cl_int gpt_flash_backward(gpt_flash *f, cl_uint R, cl_uint T, float scale, gpt_flash_layout lay,
                          clg_view bias, clg_view q, clg_view k, clg_view v, clg_view y,
                          clg_view lse, clg_view dy, clg_view dsum, clg_view dq, clg_view dk,
                          clg_view dv)
{
    if (bad_layout(f, R, lay))
        return CL_INVALID_VALUE;
    size_t nq = extent(f, R, T, lay.heads, lay.ld_qkv), ny = extent(f, R, T, lay.heads, lay.ld_y);
    size_t rows = (size_t)R * T;
    const clg_view all[] = {bias, q, k, v, y, lse, dy, dsum, dq, dk, dv};
    const size_t counts[] = {
        3 * (size_t)lay.heads * f->hs, nq, nq, nq, ny, rows, ny, rows, nq, nq, nq};
    if (short_views(all, counts, N_OF(all)))
        return CL_INVALID_VALUE;
    /* the order of each kernel's arguments in gpt_flash.cl */
    const clg_view dq_args[] = {bias, q, k, v, y, lse, dy, dsum, dq};
    const clg_view dkdv_args[] = {bias, q, k, v, lse, dsum, dy, dk, dv};
    cl_int e = launch(f, f->backward_dq, R, T, scale, lay, dq_args, N_OF(dq_args));
    if (e == CL_SUCCESS) /* after it on the in-order queue: dsum is written */
        e = launch(f, f->backward_dkdv, R, T, scale, lay, dkdv_args, N_OF(dkdv_args));
    return e;
}
