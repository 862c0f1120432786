/* contrastive_kernels.c - the program of cl/contrastive.cl for one
 * clg_contrastive (tile sizes chosen for the device), its kernels, and the
 * launchers. Argument structs and setters come from cl/layout.py
 * (clg_layout.h), so the two sides cannot disagree. */
#include "contrastive.h"
#include "clg_layout.h"

#include <stdio.h>

#ifdef CLG_FAULT_INJECTION
size_t clg__con_test_vw;
size_t clg__con_test_max_wg;
#endif

static const char *const kernel_names[CON_KERNELS] = {
    "con_prep", "con_lse", "con_grad", "con_finish", "con_loss", "con_fill", "con_grad_out",
};

/* Each launcher names every field of its struct: a new argument in
 * cl/layout.py changes its count and stops the build here. */
_Static_assert(CLG_ARGS_CON_PREP_COUNT == 7, "con_prep: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_LSE_COUNT == 14, "con_lse: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_GRAD_COUNT == 18, "con_grad: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_FINISH_COUNT == 6, "con_finish: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_LOSS_COUNT == 6, "con_loss: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_FILL_COUNT == 8, "con_fill: set the new argument, then count it");
_Static_assert(CLG_ARGS_CON_GRAD_OUT_COUNT == 9, "con_grad_out: set the new argument, then count it");

/* ------------------------------------------------------------ tiles and program */

/* Local memory of the largest kernel (con_grad): the two d chunks, the
 * coefficient tile and the DO-wide slice of the column rows. */
static uint64_t local_bytes(const clg_con_tiles *t)
{
    return 4 * (t->dk * t->tr + t->dk * t->tc + t->tr * (t->tc + 1) + t->tc * t->dout);
}

/* Up to 32 x 32 tiles, d in chunks of 16, and a gradient slice of up to
 * 128 (all of d = 128 at once: its logits are computed once per tile).
 * The work-group is the largest power of two <= min(256, max_wg); tiles
 * shrink with it so that each work-item keeps at most 8 of a tile's
 * entries, and TR <= WG (con_lse folds each row in one work-item). DO is
 * a multiple of 8, so WG divides TR * TC and TR * DO. */
static void pick_tiles(const clg_contrastive *c, size_t max_wg, uint64_t local_mem,
                       cl_uint native_float_width, clg_con_tiles *t)
{
#ifdef CLG_FAULT_INJECTION
    if (clg__con_test_max_wg && clg__con_test_max_wg < max_wg)
        max_wg = clg__con_test_max_wg;
#endif
    t->wg = 1;
    while (t->wg * 2 <= max_wg && t->wg * 2 <= 256)
        t->wg *= 2;
    t->tr = t->tc = t->wg >= 128 ? 32 : t->wg >= 32 ? 16 : t->wg >= 8 ? 8 : t->wg;
    t->dk = 16;
    size_t d8 = (c->cfg.dim + 7) / 8 * 8;
    t->dout = d8 < 128 ? d8 : 128;
    while (t->dout > 8 && local_bytes(t) > local_mem)
        t->dout = (t->dout / 2 + 7) / 8 * 8;
    /* Explicit vectors where the compiler vectorizes within a work-item
     * (PoCL reports its SIMD width, 16 floats with AVX-512), float4 loads
     * elsewhere (GPUs; llvmpipe, which vectorizes across work-items and
     * reports 1). On PoCL (2 cores, B 4096, d 128) VW 4, 8 and 16 ran
     * within 10% of each other, 5x the scalar loop; 8 is the cap because
     * rusticl 22.3 on llvmpipe, at the 32 work-items it allows, computes
     * wrong log-sum-exps with VW 16 and wrong gradients with VO 1
     * (deterministically, from about 4096 columns on), where VW 2 to 8
     * and every width at 64 or more work-items are right. */
    t->vw = native_float_width >= 8 ? 8 : 4;
#ifdef CLG_FAULT_INJECTION
    if (clg__con_test_vw)
        t->vw = clg__con_test_vw;
#endif
    size_t per_item = t->tr * t->dout / t->wg;
    t->vo = t->vw;
    while (t->vo > 1 && (per_item % t->vo || t->dout % t->vo))
        t->vo /= 2;
}

static clg_status build(clg_contrastive *c)
{
    char opt[192];
    const clg_con_tiles *t = &c->tiles;
    snprintf(opt, sizeof opt,
             "-DWG=%zu -DTR=%zu -DTC=%zu -DDK=%zu -DDO=%zu -DVW=%zu -DVO=%zu -DREP_DTYPE=%d",
             t->wg, t->tr, t->tc, t->dk, t->dout, t->vw, t->vo, (int)c->cfg.dtype);
    cl_program prog;
    clg_status st = clg__program(c->ctx, "contrastive", opt, &prog, NULL);
    for (int i = 0; i < CON_KERNELS && st == CLG_SUCCESS; i++)
        st = clg__kernel(c->ctx, prog, kernel_names[i], &c->kernels[i]);
    return st;
}

void clg__con_kernels_release(clg_contrastive *c)
{
    for (int i = 0; i < CON_KERNELS; i++) {
        if (c->kernels[i])
            clReleaseKernel(c->kernels[i]);
        c->kernels[i] = NULL;
    }
}

/* The smallest work-group size the tiled kernels (launched in work-groups
 * of WG, reqd_work_group_size) allow on the device; the others run in
 * whatever local size the driver reports for each. */
static size_t kernels_max_wg(const clg_contrastive *c)
{
    static const int tiled[] = {CON_LSE, CON_GRAD, CON_LOSS};
    size_t min = SIZE_MAX;
    for (size_t j = 0; j < sizeof tiled / sizeof tiled[0]; j++) {
        int i = tiled[j];
        size_t k = 0;
        if (clGetKernelWorkGroupInfo(c->kernels[i], c->ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof k, &k, NULL) == CL_SUCCESS &&
            k > 0 && k < min)
            min = k;
    }
    return min;
}

clg_status clg__con_kernels_create(clg_contrastive *c)
{
    cl_ulong local_mem = 32768;
    clGetDeviceInfo(c->ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem,
                    NULL);
    cl_uint native_width = 1;
    clGetDeviceInfo(c->ctx->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof native_width,
                    &native_width, NULL);
    size_t max_wg = c->ctx->info.max_work_group_size ? c->ctx->info.max_work_group_size : 1;
    pick_tiles(c, max_wg, local_mem, native_width, &c->tiles);
    if (local_bytes(&c->tiles) > local_mem)
        return clg__fail(c->ctx, CLG_ERR_UNSUPPORTED,
                         "clg_contrastive_create: the tiles need %llu bytes of local memory, "
                         "the device has %llu",
                         (unsigned long long)local_bytes(&c->tiles),
                         (unsigned long long)local_mem);
    clg_status st = build(c);
    /* A kernel may allow less than the device does (registers): build
     * again for the smaller work-group. */
    size_t kmax = st == CLG_SUCCESS ? kernels_max_wg(c) : SIZE_MAX;
    if (st == CLG_SUCCESS && kmax < c->tiles.wg) {
        clg__con_kernels_release(c);
        pick_tiles(c, kmax, local_mem, native_width, &c->tiles);
        st = build(c);
    }
    if (st != CLG_SUCCESS)
        clg__con_kernels_release(c);
    return st;
}

/* ------------------------------------------------------------ launchers */

#define SET_ARGS(list, k, args) CLG_SET_ARGS(c->ctx, list, k, args)

/* work-groups of the tiled kernels */
static clg_status launch_groups(clg_contrastive *c, int kernel, size_t groups)
{
    return clg__launch(c->ctx, c->kernels[kernel], groups * c->tiles.wg, c->tiles.wg,
                       kernel_names[kernel]);
}

/* one work-item per item, in groups the driver handles well */
static clg_status launch_items(clg_contrastive *c, int kernel, size_t items)
{
    cl_kernel k = c->kernels[kernel];
    return clg__launch(c->ctx, k, items, clg__stream_local_size(c->ctx, k), kernel_names[kernel]);
}

static clg_status prep(clg_contrastive *c, cl_mem q, cl_mem k, size_t n, cl_mem rq, cl_mem rk)
{
    const clg_args_con_prep a = {
        .q = q,
        .k = k,
        .n = (cl_uint)n,
        .dim = (cl_uint)c->cfg.dim,
        .unit_rows = (cl_uint)c->cfg.normalize,
        .rq = rq,
        .rk = rk,
    };
    SET_ARGS(con_prep, c->kernels[CON_PREP], &a);
    return launch_items(c, CON_PREP, n);
}

/* Side s's rows against the other side's n rows and the other side's
 * bank (the first nbank rows). */
static clg_status lse(clg_contrastive *c, int s, size_t n, size_t nbank)
{
    int o = 1 - s;
    const clg_args_con_lse a = {
        .a = c->reps[s],
        .ra = c->rn[s],
        .na = (cl_uint)n,
        .b = c->reps[o],
        .rb = c->rn[o],
        .nb = (cl_uint)n,
        .bank = c->bank[o],
        .rbank = c->bank_rn[o],
        .nbank = (cl_uint)nbank,
        .dim = (cl_uint)c->cfg.dim,
        .inv_tau = 1.0f / c->cfg.temperature,
        .lse = c->lse[s],
        .cp = c->cp[s],
        .rloss = c->rloss[s],
    };
    SET_ARGS(con_lse, c->kernels[CON_LSE], &a);
    return launch_groups(c, CON_LSE, (n + c->tiles.tr - 1) / c->tiles.tr);
}

/* The gradient of side s's rows; cs weighs s's own direction, co the
 * other side's. */
static clg_status grad(clg_contrastive *c, int s, size_t n, size_t nbank, float cs, float co)
{
    int o = 1 - s;
    const clg_args_con_grad a = {
        .a = c->reps[s],
        .ra = c->rn[s],
        .na = (cl_uint)n,
        .lse_a = c->lse[s],
        .cp_a = c->cp[s],
        .ca = cs,
        .b = c->reps[o],
        .rb = c->rn[o],
        .nb = (cl_uint)n,
        .lse_b = c->lse[o],
        .cp_b = c->cp[o],
        .cb = co,
        .bank = c->bank[o],
        .rbank = c->bank_rn[o],
        .nbank = cs != 0.0f ? (cl_uint)nbank : 0u, /* bank terms carry cs */
        .dim = (cl_uint)c->cfg.dim,
        .inv_tau = 1.0f / c->cfg.temperature,
        .out = c->grads[s],
    };
    SET_ARGS(con_grad, c->kernels[CON_GRAD], &a);
    size_t slices = (c->cfg.dim + c->tiles.dout - 1) / c->tiles.dout;
    return launch_groups(c, CON_GRAD, (n + c->tiles.tr - 1) / c->tiles.tr * slices);
}

static clg_status finish(clg_contrastive *c, int s, size_t n)
{
    const clg_args_con_finish a = {
        .x = c->reps[s],
        .rx = c->rn[s],
        .n = (cl_uint)n,
        .dim = (cl_uint)c->cfg.dim,
        .unit_rows = (cl_uint)c->cfg.normalize,
        .g = c->grads[s],
    };
    SET_ARGS(con_finish, c->kernels[CON_FINISH], &a);
    return launch_items(c, CON_FINISH, n);
}

static clg_status loss(clg_contrastive *c, size_t n, float cq, float ck)
{
    const clg_args_con_loss a = {
        .rloss_q = c->rloss[CLG_SIDE_QUERY],
        .rloss_k = c->rloss[CLG_SIDE_KEY],
        .n = (cl_uint)n,
        .cq = cq,
        .ck = ck,
        .loss = c->loss,
    };
    SET_ARGS(con_loss, c->kernels[CON_LOSS], &a);
    return launch_groups(c, CON_LOSS, 1);
}

clg_status clg__con_launch_compute(clg_contrastive *c, size_t n)
{
    const int Q = CLG_SIDE_QUERY, K = CLG_SIDE_KEY;
    size_t m = c->bank_count;
    float cq = c->cfg.symmetric ? 0.5f / (float)n : 1.0f / (float)n;
    float ck = c->cfg.symmetric ? 0.5f / (float)n : 0.0f;
    clg_status st = prep(c, c->reps[Q], c->reps[K], n, c->rn[Q], c->rn[K]);
    if (st == CLG_SUCCESS && m > 0)
        st = prep(c, c->bank[Q], c->bank[K], m, c->bank_rn[Q], c->bank_rn[K]);
    /* pass 1: each direction's log-sum-exps, then pass 2 reads both */
    if (st == CLG_SUCCESS)
        st = lse(c, Q, n, m);
    if (st == CLG_SUCCESS && ck != 0.0f)
        st = lse(c, K, n, m);
    if (st == CLG_SUCCESS)
        st = grad(c, Q, n, m, cq, ck);
    if (st == CLG_SUCCESS)
        st = grad(c, K, n, m, ck, cq);
    if (st == CLG_SUCCESS && c->cfg.normalize)
        st = finish(c, Q, n);
    if (st == CLG_SUCCESS && c->cfg.normalize)
        st = finish(c, K, n);
    if (st == CLG_SUCCESS)
        st = loss(c, n, cq, ck);
    return st;
}

clg_status clg__con_launch_fill(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                cl_mem src, size_t src_offset, size_t src_stride,
                                clg_dtype src_dtype)
{
    const clg_args_con_fill a = {
        .dst = c->reps[side],
        .row0 = row,
        .rows = (cl_uint)rows,
        .dim = (cl_uint)c->cfg.dim,
        .src = src,
        .src_offset = src_offset,
        .src_stride = src_stride,
        .src_dtype = (cl_uint)src_dtype,
    };
    SET_ARGS(con_fill, c->kernels[CON_FILL], &a);
    return launch_items(c, CON_FILL, rows * c->cfg.dim);
}

clg_status clg__con_launch_grad_out(clg_contrastive *c, clg_side side, size_t row, size_t rows,
                                    float scale, cl_mem dst, size_t dst_offset,
                                    size_t dst_stride, clg_dtype dst_dtype)
{
    const clg_args_con_grad_out a = {
        .src = c->grads[side],
        .row0 = row,
        .rows = (cl_uint)rows,
        .dim = (cl_uint)c->cfg.dim,
        .scale = scale,
        .dst = dst,
        .dst_offset = dst_offset,
        .dst_stride = dst_stride,
        .dst_dtype = (cl_uint)dst_dtype,
    };
    SET_ARGS(con_grad_out, c->kernels[CON_GRAD_OUT], &a);
    return launch_items(c, CON_GRAD_OUT, rows * c->cfg.dim);
}
