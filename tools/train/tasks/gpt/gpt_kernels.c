/* gpt_kernels.c - program loading and launchers for gpt_rows.cl and
 * gpt.cl (program "gpt"; semantics in gpt_kernels.h). Every launcher
 * checks that its views hold the elements the shapes say
 * (CL_INVALID_VALUE otherwise) before it enqueues. */
#include "gpt_kernels.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Work-group of the row kernels and rows per block of the column sums:
 * the program is built with these (-DGPT_WG, -DGPT_RB, -DGPT_ROW_W, the
 * items per row, and the radix sort's -DGPT_SORT_WG and -DGPT_DIGIT_BITS),
 * so both sides agree. GPT_WG is a power of two (the
 * kernels' tree reductions). Elementwise kernels run in work-groups of
 * GPT_ELEM_WG (1D) or GPT_TILE_X x GPT_TILE_Y (2D and 3D, x contiguous). */
enum {
    GPT_WG = 64,
    GPT_RB = 16,
    GPT_ELEM_WG = 256,
    GPT_TILE_X = 32,
    GPT_TILE_Y = 8,
    GPT_SORT_WG = 256,  /* keys per block of the radix sort (one digit an item) */
    GPT_DIGIT_BITS = 8, /* bits of the key per pass */
};

enum {
    K_EMBED,
    K_SORT_COUNT,
    K_SORT_SCAN,
    K_SORT_SCATTER,
    K_SORT_STARTS,
    K_WTE_GRAD,
    K_WPE_GRAD,
    K_LAYERNORM,
    K_LAYERNORM_BACKWARD,
    K_COLSUM_PARTIAL,
    K_COLSUM_FINAL,
    K_BIAS_ADD,
    K_GELU,
    K_GELU_BACKWARD,
    K_RESIDUAL,
    K_XENT,
    K_LOSS_SUM,
    K_RESIDUAL_LAYERNORM,
    K_BIAS_GELU,
    K_GELU_BACKWARD_COLSUM,
    K_COUNT
};

/* Each kernel's name in the program. */
static const char *const kernel_names[K_COUNT] = {
    [K_EMBED] = "gpt_embed",
    [K_SORT_COUNT] = "gpt_sort_count",
    [K_SORT_SCAN] = "gpt_sort_scan",
    [K_SORT_SCATTER] = "gpt_sort_scatter",
    [K_SORT_STARTS] = "gpt_sort_starts",
    [K_WTE_GRAD] = "gpt_wte_grad",
    [K_WPE_GRAD] = "gpt_wpe_grad",
    [K_LAYERNORM] = "gpt_layernorm",
    [K_LAYERNORM_BACKWARD] = "gpt_layernorm_backward",
    [K_COLSUM_PARTIAL] = "gpt_colsum_partial",
    [K_COLSUM_FINAL] = "gpt_colsum_final",
    [K_BIAS_ADD] = "gpt_bias_add",
    [K_GELU] = "gpt_gelu",
    [K_GELU_BACKWARD] = "gpt_gelu_backward",
    [K_RESIDUAL] = "gpt_residual",
    [K_XENT] = "gpt_xent",
    [K_LOSS_SUM] = "gpt_loss_sum",
    [K_RESIDUAL_LAYERNORM] = "gpt_residual_layernorm",
    [K_BIAS_GELU] = "gpt_bias_gelu",
    [K_GELU_BACKWARD_COLSUM] = "gpt_gelu_backward_colsum",
};

_Static_assert(K_COUNT <= sizeof(((gpt_kernels *)0)->k) / sizeof(cl_kernel),
               "gpt_kernels.k holds every kernel");

unsigned gpt_token_bytes(unsigned V) { return V <= 256 ? 1 : 2; }

unsigned gpt_row_items_min(unsigned V)
{
    unsigned w = 1;
    while (w < GPT_WG && 3 * (((uint64_t)V + w - 1) / w) > GPT_ITEM_LOOPS)
        w *= 2;
    return w;
}

clg_status gpt_kernels_init(clg_context *ctx, gpt_kernels *k, unsigned V)
{
    const clg_device_info *dev = clg_context_device_info(ctx);
    return gpt_kernels_init_rows(ctx, k, dev && (dev->type & CL_DEVICE_TYPE_CPU) ? 1 : GPT_WG, V);
}

clg_status gpt_kernels_init_rows(clg_context *ctx, gpt_kernels *k, unsigned row_items,
                                 unsigned V)
{
    memset(k, 0, sizeof *k);
    if (row_items == 0 || row_items > GPT_WG || (row_items & (row_items - 1)) || V == 0 ||
        V > GPT_KERNELS_VOCAB_MAX)
        return CLG_ERR_INVALID_ARGUMENT;
    if (row_items < gpt_row_items_min(V))
        row_items = gpt_row_items_min(V);
    char opts[160];
    snprintf(opts, sizeof opts,
             "-DGPT_WG=%d -DGPT_RB=%d -DGPT_ROW_W=%u -DGPT_TOKEN=%s -DGPT_SORT_WG=%d "
             "-DGPT_DIGIT_BITS=%d",
             GPT_WG, GPT_RB, row_items, gpt_token_bytes(V) == 1 ? "uchar" : "ushort",
             GPT_SORT_WG, GPT_DIGIT_BITS);
    cl_program prog = NULL;
    clg_status st = clg_context_program_source(ctx, "gpt", train_kernel_source("gpt"), opts, &prog,
                                                 NULL);
    if (st != CLG_SUCCESS)
        return st;
    k->launches = calloc(1, sizeof *k->launches);
    if (!k->launches)
        return clg_context_fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                                "gpt kernels: no host memory for the launch counter");
    k->queue = clg_context_queue(ctx);
    k->row_items = row_items;
    k->vocab = V;
    for (int i = 0; i < K_COUNT; i++) {
        cl_int err = CL_SUCCESS;
        k->k[i] = clCreateKernel(prog, kernel_names[i], &err);
        if (err != CL_SUCCESS) {
            gpt_kernels_release(k);
            return (clg_status)err;
        }
    }
    return CLG_SUCCESS;
}

void gpt_kernels_release(gpt_kernels *k)
{
    for (size_t i = 0; i < sizeof k->k / sizeof *k->k; i++)
        if (k->k[i])
            clReleaseKernel(k->k[i]);
    free(k->launches);
    memset(k, 0, sizeof *k);
}

uint64_t gpt_kernels_launches(const gpt_kernels *k) { return k->launches ? *k->launches : 0; }

static size_t row_blocks(unsigned N) { return ((size_t)N + GPT_RB - 1) / GPT_RB; }

/* The column sums' partials: bias gradients of up to 4C columns (the
 * MLP's c_fc) or the LayerNorm's 2C, one row per block of GPT_RB rows. */
size_t gpt_scratch_floats(unsigned N, unsigned C)
{
    size_t n = row_blocks(N) * 5 * (size_t)C;
    return n ? n : 1;
}

/* The radix sort's parts of its scratch, in ints from its start: keys and
 * positions of the first pass, then of the second (the sorted ones: a
 * single pass writes there directly), the counts (a row of blocks per
 * digit), each token's start (V + 1). */
typedef struct sort_layout {
    size_t keys[2], pos[2], count, start, total, blocks;
    unsigned passes;
} sort_layout;

static sort_layout sort_parts(size_t N, unsigned V)
{
    sort_layout z;
    z.blocks = (N + GPT_SORT_WG - 1) / GPT_SORT_WG;
    z.passes = V <= (1u << GPT_DIGIT_BITS) ? 1 : 2;
    z.keys[0] = 0;
    z.pos[0] = N;
    z.keys[1] = 2 * N;
    z.pos[1] = 3 * N;
    z.count = 4 * N;
    z.start = z.count + ((size_t)1 << GPT_DIGIT_BITS) * z.blocks;
    z.total = z.start + V + 1;
    return z;
}

size_t gpt_sort_ints(unsigned N, unsigned V) { return sort_parts(N, V).total; }

/* ------------------------------------------------------------ launching */

/* One kernel argument: its size and where its value is. */
typedef struct karg {
    size_t size;
    const void *value;
} karg;
#define U32(x) ((karg){sizeof(cl_uint), &(cl_uint){(x)}})
#define I32(x) ((karg){sizeof(cl_int), &(cl_int){(x)}})
#define F32(x) ((karg){sizeof(cl_float), &(cl_float){(x)}})
#define U64(x) ((karg){sizeof(cl_ulong), &(cl_ulong){(x)}})
#define MEM(m) ((karg){sizeof(cl_mem), &(cl_mem){(m)}})
/* A view is two arguments: the buffer and the offset in elements. */
#define VIEW(v) MEM((v).mem), U64((v).offset)
/* gpt_tokens is four: windows, idx, off, stride. */
#define TOKENS(t) MEM((t)->windows), MEM((t)->idx), U32((t)->off), U32((t)->stride)

/* Sets the n arguments in order and launches a range of dims dimensions
 * of at least items[d] items, in work-groups of wg[d] (the kernels guard
 * their range). */
static cl_int launch(const gpt_kernels *k, int which, const karg *args, cl_uint n, cl_uint dims,
                     const size_t *items, const size_t *wg)
{
    cl_kernel kern = k->k[which];
    for (cl_uint i = 0; i < n; i++) {
        cl_int e = clSetKernelArg(kern, i, args[i].size, args[i].value);
        if (e != CL_SUCCESS)
            return e;
    }
    size_t global[3];
    for (cl_uint d = 0; d < dims; d++) {
        if (items[d] == 0)
            return CL_SUCCESS;
        global[d] = (items[d] + wg[d] - 1) / wg[d] * wg[d];
    }
    cl_int e = clEnqueueNDRangeKernel(k->queue, kern, dims, NULL, global, wg, 0, NULL, NULL);
    if (e == CL_SUCCESS && k->launches)
        ++*k->launches;
    return e;
}

#define N_ARGS(...) ((cl_uint)(sizeof((const karg[]){__VA_ARGS__}) / sizeof(karg)))
#define ARGS(...) (const karg[]){__VA_ARGS__}, N_ARGS(__VA_ARGS__)
#define SIZES(...) ((const size_t[]){__VA_ARGS__})
/* One item per element of n_items, in work-groups of GPT_ELEM_WG. */
#define LAUNCH_ITEMS(k, which, n_items, ...)                                                      \
    launch(k, which, ARGS(__VA_ARGS__), 1, SIZES(n_items), SIZES(GPT_ELEM_WG))
/* Items (x, y) over x < nx (contiguous), y < ny. */
#define LAUNCH_2D(k, which, nx, ny, ...)                                                          \
    launch(k, which, ARGS(__VA_ARGS__), 2, SIZES(nx, ny), SIZES(GPT_TILE_X, GPT_TILE_Y))
/* n_groups work-groups of wg items. */
#define LAUNCH_GROUPS(k, which, n_groups, wg, ...)                                                \
    launch(k, which, ARGS(__VA_ARGS__), 1, SIZES((size_t)(n_groups) * (wg)), SIZES(wg))
/* The row kernels: rows rows, k->row_items items each, GPT_WG per group. */
#define LAUNCH_ROWS(k, which, rows, ...)                                                          \
    LAUNCH_GROUPS(k, which, ((size_t)(rows) * (k)->row_items + GPT_WG - 1) / GPT_WG, GPT_WG,     \
                  __VA_ARGS__)

/* A view that is missing or holds fewer than n elements. */
static int short_view(clg_view v, size_t n) { return v.mem == NULL || v.count < n; }

/* Whether views x and y (n elements each from their offsets) share an
 * element. */
static int overlaps(clg_view x, size_t nx, clg_view y, size_t ny)
{
    return x.mem == y.mem && x.offset < y.offset + ny && y.offset < x.offset + nx;
}
/* x is y itself or shares nothing with it (the in-place rule of the fused
 * kernels: each item reads its elements before it writes them). */
static int same_or_apart(clg_view x, clg_view y, size_t n)
{
    return (x.mem == y.mem && x.offset == y.offset) || !overlaps(x, n, y, n);
}

/* ------------------------------------------------------------ embeddings */

cl_int gpt_embed(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T, cl_uint C,
                 clg_view wte, clg_view wpe, clg_view out)
{
    size_t N = (size_t)B * T;
    if (short_view(wte, (size_t)k->vocab * C) || short_view(wpe, (size_t)T * C) ||
        short_view(out, N * C))
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_EMBED, C, N, TOKENS(tok), U32(B), U32(T), U32(C), VIEW(wte), VIEW(wpe),
                     VIEW(out));
}

/* Token v's positions into sort (sort_parts): the radix passes, then
 * each token's start. */
static cl_int sort_positions(const gpt_kernels *k, const gpt_tokens *tok, cl_uint T, cl_uint N,
                             cl_mem sort, const sort_layout *z)
{
    cl_int e = CL_SUCCESS;
    size_t nb = z->blocks, digits = (size_t)1 << GPT_DIGIT_BITS;
    for (unsigned p = 0; p < z->passes && e == CL_SUCCESS; p++) {
        /* the last pass writes the sorted keys; the first reads the tokens */
        unsigned out = p + 1 == z->passes ? 1 : 0, in = out ^ 1;
        cl_int from_tokens = p == 0;
        cl_uint shift = p * GPT_DIGIT_BITS;
        e = LAUNCH_GROUPS(k, K_SORT_COUNT, nb, GPT_SORT_WG, TOKENS(tok), U32(T), U32(N),
                          I32(from_tokens), MEM(sort), U64(z->keys[in]), U32(shift), MEM(sort),
                          U64(z->count));
        if (e == CL_SUCCESS)
            e = LAUNCH_GROUPS(k, K_SORT_SCAN, 1, digits, U32((cl_uint)nb), MEM(sort),
                              U64(z->count));
        if (e == CL_SUCCESS)
            e = LAUNCH_GROUPS(k, K_SORT_SCATTER, nb, GPT_SORT_WG, TOKENS(tok), U32(T), U32(N),
                              I32(from_tokens), MEM(sort), U64(z->keys[in]), MEM(sort),
                              U64(z->pos[in]), U32(shift), MEM(sort), U64(z->count), MEM(sort),
                              U64(z->keys[out]), MEM(sort), U64(z->pos[out]));
    }
    if (e == CL_SUCCESS)
        e = LAUNCH_ITEMS(k, K_SORT_STARTS, (size_t)k->vocab + 1, U32(N), U32(k->vocab), MEM(sort),
                         U64(z->keys[1]), MEM(sort), U64(z->start));
    return e;
}

cl_int gpt_embed_backward(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T,
                          cl_uint C, clg_view dout, cl_mem sort, clg_view dwte, float beta_wte,
                          clg_view dwpe, float beta_wpe, cl_mem scratch)
{
    (void)scratch; /* the wpe sum runs over B only: one pass, no partials */
    size_t N = (size_t)B * T;
    sort_layout z = sort_parts(N, k->vocab);
    if (short_view(dout, N * C) || short_view(dwte, (size_t)k->vocab * C) ||
        short_view(dwpe, (size_t)T * C) || sort == NULL || N == 0 || N > UINT32_MAX)
        return CL_INVALID_VALUE;
    cl_int e = sort_positions(k, tok, T, (cl_uint)N, sort, &z);
    if (e == CL_SUCCESS)
        e = LAUNCH_2D(k, K_WTE_GRAD, C, k->vocab, U32(C), U32(k->vocab), MEM(sort), U64(z.start),
                      MEM(sort), U64(z.pos[1]), VIEW(dout), VIEW(dwte), F32(beta_wte));
    if (e == CL_SUCCESS)
        e = LAUNCH_ITEMS(k, K_WPE_GRAD, (size_t)T * C, U32(B), U32(T), U32(C), VIEW(dout),
                         VIEW(dwpe), F32(beta_wpe));
    return e;
}

/* ------------------------------------------------------------ LayerNorm */

cl_int gpt_layernorm(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view inp, clg_view w,
                     clg_view b, clg_view out, clg_view mean, clg_view rstd)
{
    size_t NC = (size_t)N * C;
    if (short_view(inp, NC) || short_view(w, C) || short_view(b, C) || short_view(out, NC) ||
        short_view(mean, N) || short_view(rstd, N))
        return CL_INVALID_VALUE;
    return LAUNCH_ROWS(k, K_LAYERNORM, N, U32(N), U32(C), VIEW(inp), VIEW(w), VIEW(b), VIEW(out),
                       VIEW(mean), VIEW(rstd));
}

/* dst = beta * dst + the sum over nb blocks of scratch[soff + blk * ld ..]
 * for the first split of cols columns, dst2 the same for the rest (one
 * launch for two targets; split = cols and dst2 = dst for one). */
static cl_int colsum_final2(const gpt_kernels *k, cl_mem scratch, size_t soff, size_t ld,
                            size_t nb, cl_uint cols, cl_uint split, clg_view dst, clg_view dst2,
                            float beta)
{
    return LAUNCH_ITEMS(k, K_COLSUM_FINAL, cols, MEM(scratch), U32((cl_uint)soff),
                        U32((cl_uint)ld), U32((cl_uint)nb), U32(cols), U32(split), VIEW(dst),
                        VIEW(dst2), F32(beta));
}
static cl_int colsum_final(const gpt_kernels *k, cl_mem scratch, size_t soff, size_t ld,
                           size_t nb, cl_uint cols, clg_view dst, float beta)
{
    return colsum_final2(k, scratch, soff, ld, nb, cols, cols, dst, dst, beta);
}

cl_int gpt_layernorm_backward(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view dout,
                              clg_view inp, clg_view w, clg_view mean, clg_view rstd,
                              clg_view dinp, clg_view dw, clg_view db, float beta,
                              cl_mem scratch)
{
    size_t NC = (size_t)N * C, nb = row_blocks(N);
    if (short_view(dout, NC) || short_view(inp, NC) || short_view(w, C) ||
        short_view(mean, N) || short_view(rstd, N) || short_view(dinp, NC) ||
        short_view(dw, C) || short_view(db, C) || scratch == NULL ||
        overlaps(dinp, NC, dout, NC) || overlaps(dinp, NC, inp, NC))
        return CL_INVALID_VALUE;
    /* the rows' work-groups, then those of the column partials (items
     * (c, blk)), in one launch */
    size_t row_groups = ((size_t)N * k->row_items + GPT_WG - 1) / GPT_WG;
    size_t col_groups = (C * nb + GPT_WG - 1) / GPT_WG;
    cl_int e = LAUNCH_GROUPS(k, K_LAYERNORM_BACKWARD, row_groups + col_groups, GPT_WG, U32(N),
                             U32(C), U32((cl_uint)row_groups), VIEW(dout), VIEW(inp), VIEW(w),
                             VIEW(mean), VIEW(rstd), VIEW(dinp), MEM(scratch));
    /* dw's columns, then db's: one launch */
    if (e == CL_SUCCESS)
        e = colsum_final2(k, scratch, 0, 2 * (size_t)C, nb, 2 * C, C, dw, db, beta);
    return e;
}

/* ------------------------------------------------------------ bias */

cl_int gpt_bias_add(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view out, clg_view bias)
{
    if (short_view(out, (size_t)N * OC) || short_view(bias, OC))
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_BIAS_ADD, OC, N, U32(N), U32(OC), VIEW(out), VIEW(bias));
}

cl_int gpt_bias_grad_partial(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view dout,
                             cl_mem scratch, cl_uint ld, cl_uint col)
{
    if (short_view(dout, (size_t)N * OC) || scratch == NULL || (size_t)col + OC > ld)
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_COLSUM_PARTIAL, OC, row_blocks(N), U32(N), U32(OC), VIEW(dout),
                     MEM(scratch), U32(ld), U32(col));
}

cl_int gpt_bias_grad_pair(const gpt_kernels *k, cl_uint N, cl_uint ld, cl_uint split,
                          cl_mem scratch, clg_view db1, clg_view db2, float beta)
{
    if (split > ld || short_view(db1, split) || short_view(db2, ld - split) || scratch == NULL)
        return CL_INVALID_VALUE;
    return colsum_final2(k, scratch, 0, ld, row_blocks(N), ld, split, db1, db2, beta);
}

cl_int gpt_bias_grad(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view dout, clg_view db,
                     float beta, cl_mem scratch)
{
    if (short_view(db, OC))
        return CL_INVALID_VALUE;
    cl_int e = gpt_bias_grad_partial(k, N, OC, dout, scratch, OC, 0);
    if (e == CL_SUCCESS)
        e = colsum_final(k, scratch, 0, OC, row_blocks(N), OC, db, beta);
    return e;
}

/* ------------------------------------------------------------ elementwise */

cl_int gpt_gelu(const gpt_kernels *k, cl_uint n, clg_view inp, clg_view out)
{
    if (short_view(inp, n) || short_view(out, n))
        return CL_INVALID_VALUE;
    return LAUNCH_ITEMS(k, K_GELU, n, U32(n), VIEW(inp), VIEW(out));
}

cl_int gpt_gelu_backward(const gpt_kernels *k, cl_uint n, clg_view inp, clg_view dout,
                         clg_view dinp)
{
    if (short_view(inp, n) || short_view(dout, n) || short_view(dinp, n))
        return CL_INVALID_VALUE;
    return LAUNCH_ITEMS(k, K_GELU_BACKWARD, n, U32(n), VIEW(inp), VIEW(dout), VIEW(dinp));
}

cl_int gpt_residual(const gpt_kernels *k, cl_uint n, clg_view a, clg_view b, clg_view out)
{
    if (short_view(a, n) || short_view(b, n) || short_view(out, n))
        return CL_INVALID_VALUE;
    return LAUNCH_ITEMS(k, K_RESIDUAL, n, U32(n), VIEW(a), VIEW(b), VIEW(out));
}

/* ------------------------------------------------------------ fusions */

cl_int gpt_residual_layernorm(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view a,
                              clg_view b, clg_view bias, clg_view res_out, clg_view w,
                              clg_view lnb, clg_view ln_out, clg_view mean, clg_view rstd)
{
    size_t NC = (size_t)N * C;
    if (C == 0 || short_view(a, NC) || short_view(b, NC) || (bias.mem && bias.count < C) ||
        short_view(res_out, NC) || short_view(w, C) || short_view(lnb, C) ||
        short_view(ln_out, NC) || short_view(mean, N) || short_view(rstd, N) ||
        !same_or_apart(res_out, a, NC) || !same_or_apart(res_out, b, NC) ||
        overlaps(ln_out, NC, a, NC) || overlaps(ln_out, NC, b, NC) ||
        overlaps(ln_out, NC, res_out, NC))
        return CL_INVALID_VALUE;
    /* Without a bias the kernel never reads that argument: it gets b,
     * which is valid. */
    clg_view bi = bias.mem ? bias : b;
    return LAUNCH_ROWS(k, K_RESIDUAL_LAYERNORM, N, U32(N), U32(C), VIEW(a), VIEW(b), VIEW(bi),
                       I32(bias.mem != NULL), VIEW(res_out), VIEW(w), VIEW(lnb), VIEW(ln_out),
                       VIEW(mean), VIEW(rstd));
}

cl_int gpt_bias_gelu(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view inout,
                     clg_view bias, clg_view gelu_out)
{
    size_t n = (size_t)N * OC;
    if (short_view(inout, n) || short_view(bias, OC) || short_view(gelu_out, n) ||
        overlaps(gelu_out, n, inout, n))
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_BIAS_GELU, OC, N, U32(N), U32(OC), VIEW(inout), VIEW(bias),
                     VIEW(gelu_out));
}

cl_int gpt_gelu_backward_partial(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view fch,
                                 clg_view dout, clg_view dfch, cl_mem scratch, cl_uint ld,
                                 cl_uint col)
{
    size_t n = (size_t)N * OC;
    if (short_view(fch, n) || short_view(dout, n) || short_view(dfch, n) || scratch == NULL ||
        overlaps(dfch, n, fch, n) || !same_or_apart(dfch, dout, n) || (size_t)col + OC > ld)
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_GELU_BACKWARD_COLSUM, OC, row_blocks(N), U32(N), U32(OC), VIEW(fch),
                     VIEW(dout), VIEW(dfch), MEM(scratch), U32(ld), U32(col));
}

cl_int gpt_gelu_backward_bias_grad(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view fch,
                                   clg_view dout, clg_view dfch, clg_view db, float beta,
                                   cl_mem scratch)
{
    if (short_view(db, OC))
        return CL_INVALID_VALUE;
    cl_int e = gpt_gelu_backward_partial(k, N, OC, fch, dout, dfch, scratch, OC, 0);
    if (e == CL_SUCCESS)
        e = colsum_final(k, scratch, 0, OC, row_blocks(N), OC, db, beta);
    return e;
}


/* ------------------------------------------------------------ loss */

cl_int gpt_xent(const gpt_kernels *k, const gpt_tokens *tok, cl_uint T, cl_uint r0, cl_uint nr,
                cl_uint V, cl_uint ld, clg_view logits, clg_view row_loss, int backward,
                float dscale, clg_view loss_scale, clg_view dlogits)
{
    size_t N = nr;
    /* V below the program's vocabulary: a target could lie outside its row */
    if (V < k->vocab || ld < V || short_view(logits, N * ld) || short_view(row_loss, N) ||
        (backward && short_view(dlogits, N * ld)) || (loss_scale.mem && loss_scale.count < 1))
        return CL_INVALID_VALUE;
    /* Without a loss scale (or a backward) the kernel never reads those
     * arguments: they get the logits' buffer, which is valid. */
    clg_view scale = loss_scale.mem ? loss_scale : logits;
    clg_view d = backward ? dlogits : logits;
    return LAUNCH_ROWS(k, K_XENT, N, TOKENS(tok), U32(T), U32(r0), U32(nr), U32(V), U32(ld),
                       VIEW(logits), VIEW(row_loss), I32(backward != 0), F32(dscale), VIEW(scale),
                       I32(loss_scale.mem != NULL), VIEW(d));
}

cl_int gpt_loss_sum(const gpt_kernels *k, cl_uint N, clg_view row_loss, cl_mem sums,
                    cl_mem scratch)
{
    (void)scratch; /* one work-group: no partials */
    if (short_view(row_loss, N) || sums == NULL)
        return CL_INVALID_VALUE;
    return LAUNCH_GROUPS(k, K_LOSS_SUM, 1, GPT_WG, U32(N), VIEW(row_loss), MEM(sums));
}
