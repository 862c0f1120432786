/* gpt_kernels.c - program loading and launchers for gpt_rows.cl and
 * gpt.cl (program "gpt"; semantics in gpt_kernels.h). Every launcher
 * checks that its views hold the elements the shapes say
 * (CL_INVALID_VALUE otherwise) before it enqueues. */
#include "gpt_kernels.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"

#include <stdio.h>
#include <string.h>

/* Work-group of the row kernels and rows per block of the column sums:
 * the program is built with these (-DGPT_WG, -DGPT_RB, and -DGPT_ROW_W,
 * the items per row), so both sides agree. GPT_WG is a power of two (the
 * kernels' tree reductions). Elementwise kernels run in work-groups of
 * GPT_ELEM_WG (1D) or GPT_TILE_X x GPT_TILE_Y (2D and 3D, x contiguous). */
enum {
    GPT_WG = 64,
    GPT_RB = 16,
    GPT_ELEM_WG = 256,
    GPT_TILE_X = 32,
    GPT_TILE_Y = 8,
    GPT_SORT_WG = 256
};

enum {
    K_EMBED,
    K_SORT_TOKENS,
    K_WTE_GRAD,
    K_WPE_GRAD,
    K_LAYERNORM,
    K_LAYERNORM_BACKWARD,
    K_LAYERNORM_DWDB,
    K_COLSUM_PARTIAL,
    K_COLSUM_FINAL,
    K_BIAS_ADD,
    K_GELU,
    K_GELU_BACKWARD,
    K_RESIDUAL,
    K_ATTN_SPLIT,
    K_ATTN_SPLIT_BACKWARD,
    K_ATTN_MERGE,
    K_ATTN_MERGE_BACKWARD,
    K_SOFTMAX_CAUSAL,
    K_SOFTMAX_CAUSAL_BACKWARD,
    K_XENT,
    K_LOSS_SUM,
    K_COUNT
};

/* Names in the order above. */
static const char *const kernel_names[K_COUNT] = {
    "gpt_embed",          "gpt_sort_tokens",         "gpt_wte_grad",
    "gpt_wpe_grad",       "gpt_layernorm",           "gpt_layernorm_backward",
    "gpt_layernorm_dwdb", "gpt_colsum_partial",      "gpt_colsum_final",
    "gpt_bias_add",       "gpt_gelu",                "gpt_gelu_backward",
    "gpt_residual",       "gpt_attn_split",          "gpt_attn_split_backward",
    "gpt_attn_merge",     "gpt_attn_merge_backward", "gpt_softmax_causal",
    "gpt_softmax_causal_backward", "gpt_xent",       "gpt_loss_sum",
};

_Static_assert(K_COUNT <= sizeof(((gpt_kernels *)0)->k) / sizeof(cl_kernel),
               "gpt_kernels.k holds every kernel");

clg_status gpt_kernels_init(clg_context *ctx, gpt_kernels *k)
{
    const clg_device_info *dev = clg_context_device_info(ctx);
    return gpt_kernels_init_rows(ctx, k, dev && (dev->type & CL_DEVICE_TYPE_CPU) ? 1 : GPT_WG);
}

clg_status gpt_kernels_init_rows(clg_context *ctx, gpt_kernels *k, unsigned row_items)
{
    memset(k, 0, sizeof *k);
    if (row_items == 0 || row_items > GPT_WG || (row_items & (row_items - 1)))
        return CLG_ERR_INVALID_ARGUMENT;
    char opts[96];
    snprintf(opts, sizeof opts, "-DGPT_WG=%d -DGPT_RB=%d -DGPT_ROW_W=%u", GPT_WG, GPT_RB,
             row_items);
    cl_program prog = NULL;
    clg_status st = clg_context_program_source(ctx, "gpt", train_kernel_source("gpt"), opts, &prog,
                                                 NULL);
    if (st != CLG_SUCCESS)
        return st;
    k->queue = clg_context_queue(ctx);
    k->row_items = row_items;
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
    memset(k, 0, sizeof *k);
}

static size_t row_blocks(unsigned N) { return ((size_t)N + GPT_RB - 1) / GPT_RB; }

/* The column sums' partials: bias gradients of up to 4C columns (the
 * MLP's c_fc) or the LayerNorm's 2C, one row per block of GPT_RB rows. */
size_t gpt_scratch_floats(unsigned N, unsigned C)
{
    size_t n = row_blocks(N) * 4 * (size_t)C;
    return n ? n : 1;
}

/* Byte v's positions lie in sort[257 + sort[v] .. 257 + sort[v + 1]). */
size_t gpt_sort_ints(unsigned N) { return 257 + (size_t)N; }

/* ------------------------------------------------------------ launching */

/* One kernel argument: its size and where its value is. */
typedef struct karg {
    size_t size;
    const void *value;
} karg;
#define U32(x) ((karg){sizeof(cl_uint), &(cl_uint){(x)}})
#define I32(x) ((karg){sizeof(cl_int), &(cl_int){(x)}})
#define F32(x) ((karg){sizeof(cl_float), &(cl_float){(x)}})
#define MEM(m) ((karg){sizeof(cl_mem), &(cl_mem){(m)}})
/* A view is two arguments: the buffer and the offset in elements. */
#define VIEW(v) MEM((v).mem), ((karg){sizeof(cl_ulong), &(cl_ulong){(v).offset}})
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
    return clEnqueueNDRangeKernel(k->queue, kern, dims, NULL, global, wg, 0, NULL, NULL);
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

/* ------------------------------------------------------------ embeddings */

cl_int gpt_embed(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T, cl_uint C,
                 clg_view wte, clg_view wpe, clg_view out)
{
    size_t N = (size_t)B * T;
    if (short_view(wte, 256 * (size_t)C) || short_view(wpe, (size_t)T * C) ||
        short_view(out, N * C))
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_EMBED, C, N, TOKENS(tok), U32(B), U32(T), U32(C), VIEW(wte), VIEW(wpe),
                     VIEW(out));
}

cl_int gpt_embed_backward(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T,
                          cl_uint C, clg_view dout, cl_mem sort, clg_view dwte, float beta_wte,
                          clg_view dwpe, float beta_wpe, cl_mem scratch)
{
    (void)scratch; /* the wpe sum runs over B only: one pass, no partials */
    size_t N = (size_t)B * T;
    if (short_view(dout, N * C) || short_view(dwte, 256 * (size_t)C) ||
        short_view(dwpe, (size_t)T * C) || sort == NULL)
        return CL_INVALID_VALUE;
    cl_int e = LAUNCH_GROUPS(k, K_SORT_TOKENS, 1, GPT_SORT_WG, TOKENS(tok), U32(B), U32(T),
                             MEM(sort));
    if (e == CL_SUCCESS)
        e = LAUNCH_2D(k, K_WTE_GRAD, C, 256, MEM(sort), U32(C), VIEW(dout), VIEW(dwte),
                      F32(beta_wte));
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

/* dst = beta * dst + the sum over nb blocks of scratch[soff + blk * ld ..]. */
static cl_int colsum_final(const gpt_kernels *k, cl_mem scratch, size_t soff, size_t ld,
                           size_t nb, cl_uint cols, clg_view dst, float beta)
{
    return LAUNCH_ITEMS(k, K_COLSUM_FINAL, cols, MEM(scratch), U32((cl_uint)soff),
                        U32((cl_uint)ld), U32((cl_uint)nb), U32(cols), VIEW(dst), F32(beta));
}

cl_int gpt_layernorm_backward(const gpt_kernels *k, cl_uint N, cl_uint C, clg_view dout,
                              clg_view inp, clg_view w, clg_view mean, clg_view rstd,
                              clg_view dinp, clg_view dw, clg_view db, float beta,
                              cl_mem scratch)
{
    size_t NC = (size_t)N * C, nb = row_blocks(N);
    if (short_view(dout, NC) || short_view(inp, NC) || short_view(w, C) ||
        short_view(mean, N) || short_view(rstd, N) || short_view(dinp, NC) ||
        short_view(dw, C) || short_view(db, C) || scratch == NULL)
        return CL_INVALID_VALUE;
    cl_int e = LAUNCH_ROWS(k, K_LAYERNORM_BACKWARD, N, U32(N), U32(C), VIEW(dout), VIEW(inp),
                           VIEW(w), VIEW(mean), VIEW(rstd), VIEW(dinp));
    if (e == CL_SUCCESS)
        e = LAUNCH_2D(k, K_LAYERNORM_DWDB, C, nb, U32(N), U32(C), VIEW(dout), VIEW(inp),
                      VIEW(mean), VIEW(rstd), MEM(scratch));
    if (e == CL_SUCCESS)
        e = colsum_final(k, scratch, 0, 2 * (size_t)C, nb, C, dw, beta);
    if (e == CL_SUCCESS)
        e = colsum_final(k, scratch, C, 2 * (size_t)C, nb, C, db, beta);
    return e;
}

/* ------------------------------------------------------------ bias */

cl_int gpt_bias_add(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view out, clg_view bias)
{
    if (short_view(out, (size_t)N * OC) || short_view(bias, OC))
        return CL_INVALID_VALUE;
    return LAUNCH_2D(k, K_BIAS_ADD, OC, N, U32(N), U32(OC), VIEW(out), VIEW(bias));
}

cl_int gpt_bias_grad(const gpt_kernels *k, cl_uint N, cl_uint OC, clg_view dout, clg_view db,
                     float beta, cl_mem scratch)
{
    size_t nb = row_blocks(N);
    if (short_view(dout, (size_t)N * OC) || short_view(db, OC) || scratch == NULL)
        return CL_INVALID_VALUE;
    cl_int e = LAUNCH_2D(k, K_COLSUM_PARTIAL, OC, nb, U32(N), U32(OC), VIEW(dout), MEM(scratch));
    if (e == CL_SUCCESS)
        e = colsum_final(k, scratch, 0, OC, nb, OC, db, beta);
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

/* ------------------------------------------------------------ attention */

/* Items (d, t, b * NH + h) of a [B x NH x T x HS] tensor. */
#define LAUNCH_HEADS(k, which, B, T, NH, HS, ...)                                                 \
    launch(k, which, ARGS(U32(B), U32(T), U32(NH), U32(HS), __VA_ARGS__), 3,                     \
           SIZES(HS, T, (size_t)(B) * (NH)), SIZES(GPT_TILE_X, GPT_TILE_Y, 1))

cl_int gpt_attn_split(const gpt_kernels *k, cl_uint B, cl_uint T, cl_uint NH, cl_uint HS,
                      clg_view qkv, clg_view q, clg_view kk, clg_view v)
{
    size_t n = (size_t)B * T * NH * HS;
    if (short_view(qkv, 3 * n) || short_view(q, n) || short_view(kk, n) || short_view(v, n))
        return CL_INVALID_VALUE;
    return LAUNCH_HEADS(k, K_ATTN_SPLIT, B, T, NH, HS, VIEW(qkv), VIEW(q), VIEW(kk), VIEW(v));
}

cl_int gpt_attn_split_backward(const gpt_kernels *k, cl_uint B, cl_uint T, cl_uint NH,
                               cl_uint HS, clg_view dq, clg_view dk, clg_view dv,
                               clg_view dqkv)
{
    size_t n = (size_t)B * T * NH * HS;
    if (short_view(dq, n) || short_view(dk, n) || short_view(dv, n) || short_view(dqkv, 3 * n))
        return CL_INVALID_VALUE;
    return LAUNCH_HEADS(k, K_ATTN_SPLIT_BACKWARD, B, T, NH, HS, VIEW(dq), VIEW(dk), VIEW(dv),
                        VIEW(dqkv));
}

cl_int gpt_attn_merge(const gpt_kernels *k, cl_uint B, cl_uint T, cl_uint NH, cl_uint HS,
                      clg_view y, clg_view out)
{
    size_t n = (size_t)B * T * NH * HS;
    if (short_view(y, n) || short_view(out, n))
        return CL_INVALID_VALUE;
    return LAUNCH_HEADS(k, K_ATTN_MERGE, B, T, NH, HS, VIEW(y), VIEW(out));
}

cl_int gpt_attn_merge_backward(const gpt_kernels *k, cl_uint B, cl_uint T, cl_uint NH,
                               cl_uint HS, clg_view dout, clg_view dy)
{
    size_t n = (size_t)B * T * NH * HS;
    if (short_view(dout, n) || short_view(dy, n))
        return CL_INVALID_VALUE;
    return LAUNCH_HEADS(k, K_ATTN_MERGE_BACKWARD, B, T, NH, HS, VIEW(dout), VIEW(dy));
}

cl_int gpt_softmax_causal(const gpt_kernels *k, cl_uint R, cl_uint T, float scale,
                          clg_view preatt, clg_view att)
{
    size_t n = (size_t)R * T * T;
    if (short_view(preatt, n) || short_view(att, n))
        return CL_INVALID_VALUE;
    return LAUNCH_ROWS(k, K_SOFTMAX_CAUSAL, (size_t)R * T, U32(R), U32(T), F32(scale),
                       VIEW(preatt), VIEW(att));
}

cl_int gpt_softmax_causal_backward(const gpt_kernels *k, cl_uint R, cl_uint T, float scale,
                                   clg_view att, clg_view datt, clg_view dpreatt)
{
    size_t n = (size_t)R * T * T;
    if (short_view(att, n) || short_view(datt, n) || short_view(dpreatt, n))
        return CL_INVALID_VALUE;
    return LAUNCH_ROWS(k, K_SOFTMAX_CAUSAL_BACKWARD, (size_t)R * T, U32(R), U32(T), F32(scale),
                       VIEW(att), VIEW(datt), VIEW(dpreatt));
}

/* ------------------------------------------------------------ loss */

cl_int gpt_xent(const gpt_kernels *k, const gpt_tokens *tok, cl_uint B, cl_uint T, cl_uint V,
                clg_view logits, clg_view row_loss, int backward, float dscale,
                clg_view loss_scale, clg_view dlogits)
{
    size_t N = (size_t)B * T;
    /* V < 256: a byte target could lie outside its row */
    if (V < 256 || short_view(logits, N * V) || short_view(row_loss, N) ||
        (backward && short_view(dlogits, N * V)) || (loss_scale.mem && loss_scale.count < 1))
        return CL_INVALID_VALUE;
    /* Without a loss scale (or a backward) the kernel never reads those
     * arguments: they get the logits' buffer, which is valid. */
    clg_view scale = loss_scale.mem ? loss_scale : logits;
    clg_view d = backward ? dlogits : logits;
    return LAUNCH_ROWS(k, K_XENT, N, TOKENS(tok), U32(B), U32(T), U32(V), VIEW(logits),
                       VIEW(row_loss), I32(backward != 0), F32(dscale), VIEW(scale),
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
