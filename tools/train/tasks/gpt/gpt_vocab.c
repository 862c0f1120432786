/* gpt_vocab.c - the program of gpt_vocab.cl and its launchers (semantics
 * in gpt_vocab.h). Every launcher checks its shapes and views before it
 * enqueues anything. */
#include "gpt_vocab.h"
#include "clgrad_advanced.h"
#include "train_kernels.h"

#include <stdio.h>
#include <string.h>

/* The classifier's build on a GPU: a work-group of 256 per row, float4
 * loads, the exponentials computed again in the last pass (fewer bytes);
 * none of it measured here. On a CPU device, measured on PoCL (AVX2, 2
 * cores shared with other jobs, load 2 to 3.5; V 50257, N 1024 rows,
 * forward + backward, medians of 7, test_gpt_vocab with GPT_VOCAB_TIME=1):
 * one item per row of float8 loads keeping the exponentials, 33.3 ms
 * (forward only 28); computing them again 52 to 95 ms; float16 56 ms,
 * float4 89, plain floats 235 (PoCL makes no SIMD of a row's loop without
 * vectors); 4 and 16 items per row of float8 51 to 116 ms (noisy); the
 * GPU's build 106 to 302 ms. Rows narrower than MIN_WG items share a
 * work-group of MIN_WG. */
enum { ROW_GPU = 256, ROW_CPU = 1, VEC_GPU = 4, VEC_CPU = 8 };
enum { MIN_WG = 64, ELEM_X = 32, ELEM_Y = 8, RUN_WG = 256 };
enum { SORT_DIGITS = 256 }; /* 8 bits of the key per pass (VOCAB_DIGITS) */

/* Kernel name of prog, or NULL with *err set; nothing once *err is set. */
static cl_kernel kernel_of(cl_program prog, const char *name, cl_int *err)
{
    return *err == CL_SUCCESS ? clCreateKernel(prog, name, err) : NULL;
}

/* The largest work-group kernel allows on the device (registers may hold
 * it below the device's own); 0 when the driver does not say. */
static size_t kernel_max_wg(const clg_device_info *dev, cl_kernel kernel)
{
    size_t n = 0;
    if (!dev || clGetKernelWorkGroupInfo(kernel, dev->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof n,
                                         &n, NULL) != CL_SUCCESS)
        return 0;
    return n;
}

static unsigned row_wg(unsigned row_items)
{
    return row_items > MIN_WG ? row_items : MIN_WG;
}

clg_status gpt_vocab_init_with(clg_context *ctx, gpt_vocab_build b, gpt_vocab *g)
{
    memset(g, 0, sizeof *g);
    unsigned row_items = b.row_items, vec = b.vec;
    if (row_items == 0 || row_items > ROW_GPU || (row_items & (row_items - 1)) ||
        (vec != 1 && vec != 4 && vec != 8 && vec != 16) || (b.keep_exp != 0 && b.keep_exp != 1))
        return CLG_ERR_INVALID_ARGUMENT;
    const clg_device_info *dev = clg_context_device_info(ctx);
    size_t dev_max = dev && dev->max_work_group_size ? dev->max_work_group_size : 1;
    unsigned wg = row_wg(row_items);
    if (wg > dev_max || GPT_VOCAB_SORT_WG > dev_max)
        return clg_context_fail(ctx, CLG_ERR_UNSUPPORTED,
                                "gpt_vocab: the device's work-groups are too small for the "
                                "classifier or the sort");
    char opts[160];
    snprintf(opts, sizeof opts,
             "-DVOCAB_WG=%u -DVOCAB_ROW_W=%u -DVOCAB_VEC=%u -DVOCAB_KEEP_EXP=%d -DVOCAB_SORT_WG=%d",
             wg, row_items, vec, b.keep_exp, GPT_VOCAB_SORT_WG);
    cl_program prog = NULL;
    clg_status st = clg_context_program_source(ctx, "gpt_vocab", train_kernel_source("gpt_vocab"),
                                               opts, &prog, NULL);
    if (st != CLG_SUCCESS)
        return st;
    g->queue = clg_context_queue(ctx);
    g->build = b;
    cl_int err = CL_SUCCESS;
    g->embed = kernel_of(prog, "gpt_vocab_embed", &err);
    g->xent = kernel_of(prog, "gpt_vocab_xent", &err);
    g->sort_count = kernel_of(prog, "gpt_vocab_sort_count", &err);
    g->sort_scan = kernel_of(prog, "gpt_vocab_sort_scan", &err);
    g->sort_scatter = kernel_of(prog, "gpt_vocab_sort_scatter", &err);
    g->run_starts = kernel_of(prog, "gpt_vocab_run_starts", &err);
    g->wte_grad = kernel_of(prog, "gpt_vocab_wte_grad", &err);
    if (err != CL_SUCCESS) {
        gpt_vocab_release(g);
        return (clg_status)err;
    }
    /* the kernels with a required work-group: the driver must allow it */
    const struct {
        cl_kernel k;
        size_t wg;
    } fixed[] = {{g->xent, wg},
                 {g->sort_count, GPT_VOCAB_SORT_WG},
                 {g->sort_scan, GPT_VOCAB_SORT_WG},
                 {g->sort_scatter, GPT_VOCAB_SORT_WG}};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        size_t kmax = kernel_max_wg(dev, fixed[i].k);
        if (kmax && kmax < fixed[i].wg) {
            gpt_vocab_release(g);
            return clg_context_fail(ctx, CLG_ERR_UNSUPPORTED,
                                    "gpt_vocab: a kernel allows fewer work-items than its "
                                    "work-group on this device");
        }
    }
    return CLG_SUCCESS;
}

clg_status gpt_vocab_init(clg_context *ctx, gpt_vocab *g)
{
    const clg_device_info *dev = clg_context_device_info(ctx);
    int cpu = dev && (dev->type & CL_DEVICE_TYPE_CPU);
    size_t dev_max = dev && dev->max_work_group_size ? dev->max_work_group_size : 1;
    gpt_vocab_build b = {cpu ? ROW_CPU : ROW_GPU, cpu ? VEC_CPU : VEC_GPU, cpu};
    while (b.row_items > 1 && row_wg(b.row_items) > dev_max)
        b.row_items /= 2;
    return gpt_vocab_init_with(ctx, b, g);
}

void gpt_vocab_release(gpt_vocab *g)
{
    cl_kernel kernels[] = {g->embed,        g->xent,       g->sort_count, g->sort_scan,
                           g->sort_scatter, g->run_starts, g->wte_grad};
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    memset(g, 0, sizeof *g);
}

static size_t sort_blocks(size_t N)
{
    return (N + GPT_VOCAB_SORT_WG - 1) / GPT_VOCAB_SORT_WG;
}

/* Where the parts of gpt_vocab_wte_grad's scratch lie, in ints from the
 * view's start: keys and positions of the two sides of the sort's
 * ping-pong, the counts, the starts. */
typedef struct sort_parts {
    size_t keys[2], pos[2], count, start, total;
} sort_parts;

static sort_parts sort_parts_of(size_t N, size_t V)
{
    sort_parts p;
    p.keys[0] = 0, p.pos[0] = N, p.keys[1] = 2 * N, p.pos[1] = 3 * N;
    p.count = 4 * N;
    p.start = p.count + (size_t)SORT_DIGITS * sort_blocks(N);
    p.total = p.start + V + 1;
    return p;
}

size_t gpt_vocab_sort_ints(unsigned N, unsigned V)
{
    return sort_parts_of(N, V).total;
}

/* ------------------------------------------------------------ arguments */

/* A kernel's arguments, set in order; the first failure sticks. */
typedef struct kargs {
    cl_kernel kernel;
    cl_uint next;
    cl_int err;
} kargs;

static void arg(kargs *a, size_t size, const void *value)
{
    if (a->err == CL_SUCCESS)
        a->err = clSetKernelArg(a->kernel, a->next++, size, value);
}
static void arg_u32(kargs *a, size_t x)
{
    cl_uint v = (cl_uint)x;
    arg(a, sizeof v, &v);
}
static void arg_i32(kargs *a, int x)
{
    cl_int v = x;
    arg(a, sizeof v, &v);
}
static void arg_f32(kargs *a, float x)
{
    cl_float v = x;
    arg(a, sizeof v, &v);
}
/* A buffer and an element offset into it (a view's two arguments). */
static void arg_at(kargs *a, cl_mem mem, size_t offset)
{
    cl_ulong off = offset;
    arg(a, sizeof mem, &mem);
    arg(a, sizeof off, &off);
}
static void arg_view(kargs *a, clg_view v)
{
    arg_at(a, v.mem, v.offset);
}
static void arg_tokens(kargs *a, const gpt_vocab_tokens *t)
{
    arg(a, sizeof t->windows, &t->windows);
    arg(a, sizeof t->idx, &t->idx);
    arg_u32(a, t->off);
    arg_u32(a, t->stride);
}

/* Enqueues a's kernel over at least items[d] items in work-groups of
 * wg[d] (the kernels guard their ranges); nothing for an empty range. */
static cl_int enqueue(const gpt_vocab *g, const kargs *a, cl_uint dims, const size_t *items,
                      const size_t *wg)
{
    if (a->err != CL_SUCCESS)
        return a->err;
    size_t global[2];
    for (cl_uint d = 0; d < dims; d++) {
        if (items[d] == 0)
            return CL_SUCCESS;
        global[d] = (items[d] + wg[d] - 1) / wg[d] * wg[d];
    }
    return clEnqueueNDRangeKernel(g->queue, a->kernel, dims, NULL, global, wg, 0, NULL, NULL);
}

/* Items (x, y), x contiguous. */
static cl_int enqueue_2d(const gpt_vocab *g, const kargs *a, size_t nx, size_t ny)
{
    return enqueue(g, a, 2, (const size_t[]){nx, ny}, (const size_t[]){ELEM_X, ELEM_Y});
}
/* n_groups work-groups of wg items. */
static cl_int enqueue_groups(const gpt_vocab *g, const kargs *a, size_t n_groups, size_t wg)
{
    return enqueue(g, a, 1, (const size_t[]){n_groups * wg}, (const size_t[]){wg});
}

/* A view that is missing or holds fewer than n elements. */
static int short_view(clg_view v, size_t n)
{
    return v.mem == NULL || v.count < n;
}

static int bad_vocab(cl_uint V)
{
    return V == 0 || V > GPT_VOCAB_MAX;
}

/* ------------------------------------------------------------ launchers */

cl_int gpt_vocab_embed(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                       cl_uint C, cl_uint V, clg_view wte, clg_view wpe, clg_view out)
{
    size_t N = (size_t)B * T;
    if (bad_vocab(V) || !tok || short_view(wte, (size_t)V * C) || short_view(wpe, (size_t)T * C) ||
        short_view(out, N * C))
        return CL_INVALID_VALUE;
    kargs a = {g->embed, 0, CL_SUCCESS};
    arg_tokens(&a, tok);
    arg_u32(&a, B), arg_u32(&a, T), arg_u32(&a, C), arg_u32(&a, V);
    arg_view(&a, wte), arg_view(&a, wpe), arg_view(&a, out);
    return enqueue_2d(g, &a, C, N);
}

cl_int gpt_vocab_classifier(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                            cl_uint V, cl_uint r0, cl_uint nr, clg_view logits, clg_view row_loss,
                            int backward, float dscale, clg_view loss_scale)
{
    size_t N = (size_t)B * T, Vp = gpt_vocab_padded(V);
    if (bad_vocab(V) || !tok || (size_t)r0 + nr > N || short_view(logits, (size_t)nr * Vp) ||
        short_view(row_loss, (size_t)r0 + nr) || (loss_scale.mem && loss_scale.count < 1))
        return CL_INVALID_VALUE;
    /* Without a loss scale the kernel never reads that argument: it gets
     * the logits' buffer, which is valid. */
    clg_view scale = loss_scale.mem ? loss_scale : logits;
    kargs a = {g->xent, 0, CL_SUCCESS};
    arg_tokens(&a, tok);
    arg_u32(&a, T), arg_u32(&a, V), arg_u32(&a, Vp), arg_u32(&a, r0), arg_u32(&a, nr);
    arg_view(&a, logits), arg_view(&a, row_loss);
    arg_i32(&a, backward != 0), arg_f32(&a, dscale);
    arg_view(&a, scale), arg_i32(&a, loss_scale.mem != NULL);
    size_t wg = row_wg(g->build.row_items), rows_per_group = wg / g->build.row_items;
    return enqueue_groups(g, &a, ((size_t)nr + rows_per_group - 1) / rows_per_group, wg);
}

/* One pass of the radix sort over the digit at shift: keys and positions
 * from side `from` of the ping-pong (from < 0: the tokens themselves and
 * their positions) to side `to`. */
static cl_int sort_pass(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint T, size_t N,
                        clg_view sort, const sort_parts *p, int from, int to, cl_uint shift)
{
    size_t nb = sort_blocks(N), src = from < 0 ? 0 : (size_t)from;
    cl_mem m = sort.mem;
    size_t o = sort.offset;
    kargs c = {g->sort_count, 0, CL_SUCCESS};
    arg_tokens(&c, tok);
    arg_u32(&c, T), arg_u32(&c, N), arg_i32(&c, from < 0);
    arg_at(&c, m, o + p->keys[src]), arg_u32(&c, shift), arg_at(&c, m, o + p->count);
    cl_int e = enqueue_groups(g, &c, nb, GPT_VOCAB_SORT_WG);
    kargs s = {g->sort_scan, 0, CL_SUCCESS};
    arg_u32(&s, nb), arg_at(&s, m, o + p->count);
    if (e == CL_SUCCESS)
        e = enqueue_groups(g, &s, 1, GPT_VOCAB_SORT_WG);
    kargs x = {g->sort_scatter, 0, CL_SUCCESS};
    arg_tokens(&x, tok);
    arg_u32(&x, T), arg_u32(&x, N), arg_i32(&x, from < 0);
    arg_at(&x, m, o + p->keys[src]), arg_at(&x, m, o + p->pos[src]), arg_u32(&x, shift);
    arg_at(&x, m, o + p->count), arg_at(&x, m, o + p->keys[to]), arg_at(&x, m, o + p->pos[to]);
    if (e == CL_SUCCESS)
        e = enqueue_groups(g, &x, nb, GPT_VOCAB_SORT_WG);
    return e;
}

cl_int gpt_vocab_wte_grad(const gpt_vocab *g, const gpt_vocab_tokens *tok, cl_uint B, cl_uint T,
                          cl_uint C, cl_uint V, clg_view dout, clg_view sort, clg_view dwte,
                          float beta)
{
    size_t N = (size_t)B * T;
    sort_parts p = sort_parts_of(N, V);
    if (bad_vocab(V) || !tok || N > 0x7fffffff || short_view(dout, N * C) ||
        short_view(sort, p.total) || short_view(dwte, (size_t)V * C))
        return CL_INVALID_VALUE;
    cl_int e = CL_SUCCESS;
    if (N > 0) { /* low byte from the tokens into side 1, high byte back into side 0 */
        e = sort_pass(g, tok, T, N, sort, &p, -1, 1, 0);
        if (e == CL_SUCCESS)
            e = sort_pass(g, tok, T, N, sort, &p, 1, 0, 8);
    }
    kargs r = {g->run_starts, 0, CL_SUCCESS};
    arg_u32(&r, N), arg_u32(&r, V);
    arg_at(&r, sort.mem, sort.offset + p.keys[0]), arg_at(&r, sort.mem, sort.offset + p.start);
    if (e == CL_SUCCESS)
        e = enqueue(g, &r, 1, (const size_t[]){(size_t)V + 1}, (const size_t[]){RUN_WG});
    kargs w = {g->wte_grad, 0, CL_SUCCESS};
    arg_u32(&w, C), arg_u32(&w, V);
    arg_at(&w, sort.mem, sort.offset + p.start), arg_at(&w, sort.mem, sort.offset + p.pos[0]);
    arg_view(&w, dout), arg_view(&w, dwte), arg_f32(&w, beta);
    if (e == CL_SUCCESS)
        e = enqueue_2d(g, &w, C, V);
    return e;
}
