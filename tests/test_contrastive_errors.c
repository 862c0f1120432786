/* test_contrastive_errors.c - every clg_status function of clgrad.h's
 * contrastive section through its failure paths, one table row per case:
 * NULL arguments, values out of range (each config field, sides, row
 * ranges, strides, dtypes, buffers too small, scales), a bad struct_size,
 * malformed clg_events, the budget and the largest allocation, and calls in
 * the wrong state (compute before the rows are filled, results before a
 * compute, banks on a cache without any). For each case:
 *  - the status is the expected one;
 *  - the message is on the right context (the clg_contrastive's, or the
 *    thread's context-less slot for calls without one), names the
 *    function and the values at fault, and another context's last error
 *    is untouched;
 *  - nothing changed: the host record of filled rows, the computed batch
 *    and the bank counters, the cache, gradients, banks and loss on the
 *    device bit for bit, the context's device bytes and launch count, and
 *    the caller's out-arguments (NULL object, NULL event). */
#include "contrastive.h"
#include "clgrad_advanced.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { B = 16, D = 6, M = 8, COMPUTED = 12 };

static clg_context *other;   /* a second context, with a failure of its own */
static clg_contrastive *c;   /* mid-use: filled, pushed, computed on 12 rows */
static clg_contrastive *nob; /* no banks, nothing filled */
static clg_contrastive *part; /* banks; queries filled, keys only 0..7 */
static cl_mem src, small;    /* B x D floats; 10 floats */
static char other_msg[512];

static cl_mem buffer(size_t bytes, uint64_t seed)
{
    float *h = tu_xmalloc(bytes);
    tu_fill_normal(h, bytes / 4, seed, 1.0f);
    cl_mem m = tu_buffer_from(h, bytes);
    free(h);
    return m;
}

static clg_contrastive *make(size_t bank)
{
    clg_contrastive_config cfg = tu_contrastive_config(B, D, bank, CLG_FP32);
    return tu_contrastive_create(&cfg);
}

static int setup(void **state)
{
    int rc = tu_group_setup(state);
    if (rc != 0)
        return rc;
    if (clg_context_create(&other, NULL) != CLG_SUCCESS)
        return -1;
    /* other's own failure, which no case below may replace */
    clg_context_set_budget(other, 1);
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = 4;
    cfg.dim = 4;
    clg_contrastive *x = NULL;
    if (clg_contrastive_create(other, &cfg, &x) != CLG_ERR_OVER_BUDGET)
        return -1;
    snprintf(other_msg, sizeof other_msg, "%s", clg_last_error(other));

    src = buffer(B * D * 4, 1);
    small = buffer(10 * 4, 2);
    c = make(M);
    for (int s = 0; s < 2; s++)
        OK(clg_contrastive_fill(c, (clg_side)s, 0, B, src, 0, D, CLG_FP32, NULL));
    OK(clg_contrastive_bank_push(c, B, NULL));
    OK(clg_contrastive_compute(c, COMPUTED, NULL));
    nob = make(0);
    part = make(M);
    OK(clg_contrastive_fill(part, CLG_SIDE_QUERY, 0, B, src, 0, D, CLG_FP32, NULL));
    OK(clg_contrastive_fill(part, CLG_SIDE_KEY, 0, 8, src, 0, D, CLG_FP32, NULL));
    assert_int_equal(clFinish(clg_context_queue(tu_ctx)), CL_SUCCESS);
    return 0;
}

static int teardown(void **state)
{
    clg_contrastive_destroy(c);
    clg_contrastive_destroy(nob);
    clg_contrastive_destroy(part);
    clReleaseMemObject(src);
    clReleaseMemObject(small);
    clg_context_destroy(other);
    return tu_group_teardown(state);
}

/* ------------------------------------------------------------ state */

typedef struct snap {
    size_t n_filled[2], computed_rows, head, count;
    bool computed;
    unsigned char filled[2][B];
    float dev[8][B * D];
} snap;

static void read_dev(cl_mem m, size_t bytes, float *out)
{
    memset(out, 0, B * D * 4);
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), m, CL_TRUE, 0, bytes, out, 0,
                                         NULL, NULL),
                     CL_SUCCESS);
}

static void take(const clg_contrastive *x, snap *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 2; i++) {
        s->n_filled[i] = x->n_filled[i];
        memcpy(s->filled[i], x->filled[i], B);
        read_dev(x->reps[i], B * D * 4, s->dev[i]);
        read_dev(x->grads[i], B * D * 4, s->dev[2 + i]);
        if (x->bank[i])
            read_dev(x->bank[i], M * D * 4, s->dev[4 + i]);
    }
    read_dev(x->loss, 4, s->dev[6]);
    s->computed = x->computed;
    s->computed_rows = x->computed_rows;
    s->head = x->bank_head;
    s->count = x->bank_count;
}

/* ------------------------------------------------------------ the cases */

static clg_contrastive *created; /* out-argument of the create cases */
static cl_event ev;              /* out event of the cases with events */

static clg_status create_with(size_t batch, size_t dim, int dtype, float tau, int sym, int norm,
                              size_t bank, size_t struct_size)
{
    clg_contrastive_config cfg = clg_contrastive_config_init();
    cfg.batch = batch;
    cfg.dim = dim;
    cfg.dtype = (clg_dtype)dtype;
    cfg.temperature = tau;
    cfg.symmetric = sym;
    cfg.normalize = norm;
    cfg.bank_size = bank;
    cfg.struct_size = struct_size;
    created = (clg_contrastive *)&created; /* must come back NULL */
    return clg_contrastive_create(tu_ctx, &cfg, &created);
}

#define GOOD B, D, CLG_FP32, 0.05f, 1, 1, M, sizeof(clg_contrastive_config)
static clg_status c_null_config(void) { return clg_contrastive_create(tu_ctx, NULL, &created); }
static clg_status c_batch0(void) { return create_with(0, D, CLG_FP32, 0.05f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_batch_big(void) { return create_with((1u << 24) + 1, D, CLG_FP32, 0.05f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_dim0(void) { return create_with(B, 0, CLG_FP32, 0.05f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_dim_big(void) { return create_with(B, 65537, CLG_FP32, 0.05f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_fp16(void) { return create_with(B, D, CLG_FP16, 0.05f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_tau0(void) { return create_with(B, D, CLG_FP32, 0.0f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_tau_nan(void) { return create_with(B, D, CLG_FP32, NAN, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_tau_tiny(void) { return create_with(B, D, CLG_FP32, 1e-5f, 1, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_sym2(void) { return create_with(B, D, CLG_FP32, 0.05f, 2, 1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_norm_neg(void) { return create_with(B, D, CLG_FP32, 0.05f, 1, -1, 0, sizeof(clg_contrastive_config)); }
static clg_status c_bank_big(void) { return create_with(B, D, CLG_FP32, 0.05f, 1, 1, (1u << 24) + 1, sizeof(clg_contrastive_config)); }
static clg_status c_size0(void) { return create_with(B, D, CLG_FP32, 0.05f, 1, 1, 0, 0); }
static clg_status c_null_out(void) { clg_contrastive_config cfg = clg_contrastive_config_init(); cfg.batch = B; cfg.dim = D; return clg_contrastive_create(tu_ctx, &cfg, NULL); }
static clg_status c_budget(void)
{
    uint64_t used = clg_context_device_bytes(tu_ctx);
    OK(clg_context_set_budget(tu_ctx, used + 1000));
    clg_status st = create_with(GOOD);
    OK(clg_context_set_budget(tu_ctx, 0));
    return st;
}
static clg_status c_max_alloc(void)
{
    uint64_t saved = tu_ctx->max_alloc;
    tu_ctx->max_alloc = B * D * 4 - 1; /* one side's gradients no longer fit */
    clg_status st = create_with(GOOD);
    tu_ctx->max_alloc = saved;
    return st;
}
static clg_status e_null_plan(void) { clg_contrastive_config cfg = clg_contrastive_config_init(); cfg.batch = B; cfg.dim = D; return clg_contrastive_estimate(&cfg, NULL); }
static clg_status e_plan_size(void) { clg_contrastive_config cfg = clg_contrastive_config_init(); cfg.batch = B; cfg.dim = D; clg_contrastive_plan p = {0}; return clg_contrastive_estimate(&cfg, &p); }
static clg_status e_dim0(void) { clg_contrastive_config cfg = clg_contrastive_config_init(); cfg.batch = B; clg_contrastive_plan p = clg_contrastive_plan_init(); return clg_contrastive_estimate(&cfg, &p); }
static clg_status m_null(void) { clg_contrastive_plan p = clg_contrastive_plan_init(); return clg_contrastive_memory(NULL, &p); }
static clg_status m_plan_size(void) { clg_contrastive_plan p = {.struct_size = 8}; return clg_contrastive_memory(c, &p); }

static const clg_events bad_events = {1, NULL, &ev};
static clg_status f_null(void) { return clg_contrastive_fill(NULL, CLG_SIDE_QUERY, 0, 1, src, 0, D, CLG_FP32, NULL); }
static clg_status f_side(void) { return clg_contrastive_fill(c, (clg_side)2, 0, 1, src, 0, D, CLG_FP32, NULL); }
static clg_status f_rows0(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 3, 0, src, 0, D, CLG_FP32, NULL); }
static clg_status f_past(void) { return clg_contrastive_fill(c, CLG_SIDE_KEY, 10, 7, src, 0, D, CLG_FP32, NULL); }
static clg_status f_src_null(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 1, NULL, 0, D, CLG_FP32, NULL); }
static clg_status f_dtype(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 1, src, 0, D, (clg_dtype)7, NULL); }
static clg_status f_stride(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 2, src, 0, D - 1, CLG_FP32, NULL); }
static clg_status f_small(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 2, small, 0, D, CLG_FP32, NULL); }
static clg_status f_offset(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, B, src, 1, D, CLG_FP32, NULL); }
static clg_status f_huge_stride(void) { return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 2, src, 0, SIZE_MAX / 2, CLG_FP32, NULL); }
static clg_status f_events(void) { ev = (cl_event)&ev; return clg_contrastive_fill(c, CLG_SIDE_QUERY, 0, 1, src, 0, D, CLG_FP32, &bad_events); }

static clg_status k_null(void) { return clg_contrastive_compute(NULL, 1, NULL); }
static clg_status k_rows0(void) { return clg_contrastive_compute(c, 0, NULL); }
static clg_status k_rows_big(void) { return clg_contrastive_compute(c, B + 1, NULL); }
static clg_status k_unfilled(void) { return clg_contrastive_compute(nob, 1, NULL); }
static clg_status k_part(void) { return clg_contrastive_compute(part, B, NULL); }
static clg_status k_events(void) { ev = (cl_event)&ev; return clg_contrastive_compute(c, 4, &bad_events); }

static float loss_out;
static clg_status l_null(void) { return clg_contrastive_loss(c, NULL); }
static clg_status l_early(void) { loss_out = 7.0f; return clg_contrastive_loss(part, &loss_out); }
static clg_status lv_null(void) { return clg_contrastive_loss_view(c, NULL); }

static clg_status g_side(void) { return clg_contrastive_grad(c, (clg_side)-1, 0, 1, 1.0f, src, 0, D, CLG_FP32, NULL); }
static clg_status g_early(void) { return clg_contrastive_grad(part, CLG_SIDE_QUERY, 0, 1, 1.0f, src, 0, D, CLG_FP32, NULL); }
static clg_status g_past(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 10, 4, 1.0f, src, 0, D, CLG_FP32, NULL); }
static clg_status g_nan(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 1, NAN, src, 0, D, CLG_FP32, NULL); }
static clg_status g_inf(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 1, INFINITY, src, 0, D, CLG_FP32, NULL); }
static clg_status g_dst_null(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 1, 1.0f, NULL, 0, D, CLG_FP32, NULL); }
static clg_status g_small(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 3, 1.0f, small, 0, D, CLG_FP32, NULL); }
static clg_status g_dtype(void) { return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 1, 1.0f, src, 0, D, CLG_DTYPE_NONE, NULL); }
static clg_status g_events(void) { ev = (cl_event)&ev; return clg_contrastive_grad(c, CLG_SIDE_KEY, 0, 1, 1.0f, src, 0, D, CLG_FP32, &bad_events); }
static clg_status gv_side(void) { clg_view v; return clg_contrastive_grad_view(c, (clg_side)3, &v); }
static clg_status gv_null(void) { return clg_contrastive_grad_view(c, CLG_SIDE_QUERY, NULL); }

static float host[M * D];
static clg_status b_null(void) { return clg_contrastive_bank_push(NULL, 1, NULL); }
static clg_status b_nobank(void) { return clg_contrastive_bank_push(nob, 1, NULL); }
static clg_status b_rows0(void) { return clg_contrastive_bank_push(c, 0, NULL); }
static clg_status b_rows_big(void) { return clg_contrastive_bank_push(c, B + 1, NULL); }
static clg_status b_unfilled(void) { return clg_contrastive_bank_push(part, B, NULL); }
static clg_status b_events(void) { ev = (cl_event)&ev; return clg_contrastive_bank_push(c, 1, &bad_events); }
static clg_status bi_null(void) { return clg_contrastive_bank_info(NULL, NULL, NULL); }
static clg_status br_nobank(void) { return clg_contrastive_bank_reset(nob); }
static clg_status bd_count(void) { return clg_contrastive_bank_download(c, CLG_SIDE_KEY, host, M * D - 1, NULL); }
static clg_status bd_null(void) { return clg_contrastive_bank_download(c, CLG_SIDE_KEY, NULL, M * D, NULL); }
static clg_status bd_side(void) { return clg_contrastive_bank_download(c, (clg_side)2, host, M * D, NULL); }
static clg_status bd_nobank(void) { return clg_contrastive_bank_download(nob, CLG_SIDE_KEY, host, 0, NULL); }
static clg_status a_null(void) { return clg_contrastive_attach(NULL, NULL, NULL); }
static clg_status a_other_ctx(void)
{
    clg_config cfg = clg_config_init(CLG_SGD);
    clg_model *mo;
    OK(clg_model_create(other, &cfg, &mo));
    int t;
    OK(clg_model_add_tensor(mo, "w", 4, 0, &t));
    clg_context_set_budget(other, 0);
    OK(clg_model_finalize(mo));
    clg_status st = clg_contrastive_attach(c, mo, "b");
    clg_model_destroy(mo);
    return st;
}

typedef struct error_case {
    const char *name;
    clg_status (*call)(void);
    clg_status expect;
    int contextless;            /* the message is in clg_last_error(NULL) */
    const char *has[3];         /* substrings of the message */
} error_case;

#define INV CLG_ERR_INVALID_ARGUMENT
static const error_case cases[] = {
    {"create: NULL config", c_null_config, INV, 0, {"clg_contrastive_create", "config is NULL"}},
    {"create: batch 0", c_batch0, INV, 0, {"clg_contrastive_create", "batch 0 ", "1..16777216"}},
    {"create: batch 2^24+1", c_batch_big, INV, 0, {"batch 16777217"}},
    {"create: dim 0", c_dim0, INV, 0, {"dim 0 ", "1..65536"}},
    {"create: dim 65537", c_dim_big, INV, 0, {"dim 65537"}},
    {"create: fp16 cache", c_fp16, INV, 0, {"dtype 1 ", "CLG_BF16"}},
    {"create: temperature 0", c_tau0, INV, 0, {"temperature 0 "}},
    {"create: temperature NaN", c_tau_nan, INV, 0, {"temperature nan"}},
    {"create: temperature 1e-5", c_tau_tiny, INV, 0, {"temperature 1e-05", ">= 0.0001"}},
    {"create: symmetric 2", c_sym2, INV, 0, {"symmetric 2"}},
    {"create: normalize -1", c_norm_neg, INV, 0, {"normalize -1"}},
    {"create: bank_size 2^24+1", c_bank_big, INV, 0, {"bank_size 16777217"}},
    {"create: struct_size 0", c_size0, INV, 0, {"clg_contrastive_config.struct_size is 0"}},
    {"create: NULL out", c_null_out, INV, 0, {"clg_contrastive_create", "out is NULL"}},
    {"create: over budget", c_budget, CLG_ERR_OVER_BUDGET, 0,
     {"clg_contrastive_create", "the cache needs ", "budget"}},
    {"create: above the largest allocation", c_max_alloc, INV, 0,
     {"the cache of one side", "384 bytes", "largest allocation of 383"}},
    {"estimate: NULL plan", e_null_plan, INV, 1, {"clg_contrastive_estimate", "plan is NULL"}},
    {"estimate: plan struct_size 0", e_plan_size, INV, 1, {"clg_contrastive_plan.struct_size is 0"}},
    {"estimate: dim 0", e_dim0, INV, 1, {"clg_contrastive_estimate", "dim 0 "}},
    {"memory: NULL c", m_null, INV, 1, {"clg_contrastive_memory", "c is NULL"}},
    {"memory: plan struct_size 8", m_plan_size, INV, 0, {"clg_contrastive_plan.struct_size is 8"}},
    {"fill: NULL c", f_null, INV, 1, {"clg_contrastive_fill", "c is NULL"}},
    {"fill: side 2", f_side, INV, 0, {"clg_contrastive_fill", "side 2 "}},
    {"fill: no rows", f_rows0, INV, 0, {"rows [3, 3 + 0)", "16 rows of the cache"}},
    {"fill: past the cache", f_past, INV, 0, {"rows [10, 10 + 7)"}},
    {"fill: NULL src", f_src_null, INV, 0, {"src is NULL"}},
    {"fill: src dtype 7", f_dtype, INV, 0, {"src's dtype 7"}},
    {"fill: stride below d", f_stride, INV, 0, {"row stride 5 is below the row length dim 6"}},
    {"fill: src too small", f_small, INV, 0, {"2 rows of 6 CLG_FP32", "need 48 bytes of src", "has 40"}},
    {"fill: offset past the end", f_offset, INV, 0, {"offset 1", "need 388 bytes", "has 384"}},
    {"fill: stride that would wrap", f_huge_stride, INV, 0, {"stride 9223372036854775807"}},
    {"fill: bad events", f_events, INV, 0, {"clg_contrastive_fill: events: num_wait is 1"}},
    {"compute: NULL c", k_null, INV, 1, {"clg_contrastive_compute", "c is NULL"}},
    {"compute: 0 rows", k_rows0, INV, 0, {"rows 0 is outside 1..16"}},
    {"compute: 17 rows", k_rows_big, INV, 0, {"rows 17 is outside 1..16"}},
    {"compute: nothing filled", k_unfilled, CLG_ERR_STATE, 0, {"row 0 of the query side is not filled"}},
    {"compute: keys half filled", k_part, CLG_ERR_STATE, 0, {"row 8 of the key side is not filled"}},
    {"compute: bad events", k_events, INV, 0, {"clg_contrastive_compute: events"}},
    {"loss: NULL out", l_null, INV, 0, {"clg_contrastive_loss", "loss is NULL"}},
    {"loss: before a compute", l_early, CLG_ERR_STATE, 0, {"clg_contrastive_loss", "compute first"}},
    {"loss view: NULL view", lv_null, INV, 0, {"clg_contrastive_loss_view", "view is NULL"}},
    {"grad: side -1", g_side, INV, 0, {"clg_contrastive_grad", "side -1 "}},
    {"grad: before a compute", g_early, CLG_ERR_STATE, 0, {"clg_contrastive_grad", "compute first"}},
    {"grad: past the computed rows", g_past, INV, 0, {"rows [10, 10 + 4)", "12 rows of the last compute"}},
    {"grad: NaN scale", g_nan, INV, 0, {"scale nan is not finite"}},
    {"grad: inf scale", g_inf, INV, 0, {"scale inf is not finite"}},
    {"grad: NULL dst", g_dst_null, INV, 0, {"dst is NULL"}},
    {"grad: dst too small", g_small, INV, 0, {"3 rows of 6", "need 72 bytes of dst", "has 40"}},
    {"grad: dst dtype none", g_dtype, INV, 0, {"dst's dtype 3"}},
    {"grad: bad events", g_events, INV, 0, {"clg_contrastive_grad: events"}},
    {"grad view: side 3", gv_side, INV, 0, {"clg_contrastive_grad_view", "side 3 "}},
    {"grad view: NULL view", gv_null, INV, 0, {"clg_contrastive_grad_view", "view is NULL"}},
    {"push: NULL c", b_null, INV, 1, {"clg_contrastive_bank_push", "c is NULL"}},
    {"push: no banks", b_nobank, CLG_ERR_STATE, 0, {"clg_contrastive_bank_push", "bank_size is 0"}},
    {"push: 0 rows", b_rows0, INV, 0, {"rows 0 is outside 1..16"}},
    {"push: 17 rows", b_rows_big, INV, 0, {"rows 17 is outside 1..16"}},
    {"push: keys half filled", b_unfilled, CLG_ERR_STATE, 0,
     {"clg_contrastive_bank_push", "row 8 of the key side"}},
    {"push: bad events", b_events, INV, 0, {"clg_contrastive_bank_push: events"}},
    {"info: NULL c", bi_null, INV, 1, {"clg_contrastive_bank_info", "c is NULL"}},
    {"reset: no banks", br_nobank, CLG_ERR_STATE, 0, {"clg_contrastive_bank_reset", "bank_size is 0"}},
    {"download: count", bd_count, INV, 0, {"count 47 is not the bank's 48 values"}},
    {"download: NULL host", bd_null, INV, 0, {"clg_contrastive_bank_download", "host is NULL"}},
    {"download: side 2", bd_side, INV, 0, {"clg_contrastive_bank_download", "side 2 "}},
    {"download: no banks", bd_nobank, CLG_ERR_STATE, 0, {"bank_size is 0"}},
    {"attach: NULL c", a_null, INV, 1, {"clg_contrastive_attach", "c is NULL"}},
    {"attach: model on another context", a_other_ctx, INV, 0, {"clg_contrastive_attach", "another context"}},
};

static void check_unchanged(const snap *a, const snap *b)
{
    assert_memory_equal(a, b, sizeof *a);
}

static void test_error_walk(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const error_case *e = &cases[i];
        snap before[3], after[3];
        take(c, &before[0]), take(nob, &before[1]), take(part, &before[2]);
        uint64_t bytes = clg_context_device_bytes(tu_ctx);
        uint64_t launches = clg_context_launches(tu_ctx);
        created = NULL;
        clg_status st = e->call();
        const char *msg = clg_last_error(e->contextless ? NULL : tu_ctx);
        print_message("%-40s %s: %s\n", e->name, clg_status_string(st), msg);
        assert_int_equal(st, e->expect);
        for (int h = 0; h < 3 && e->has[h]; h++)
            if (!strstr(msg, e->has[h])) {
                print_error("'%s' is not in the message of case '%s'\n", e->has[h], e->name);
                fail();
            }
        assert_string_equal(clg_last_error(other), other_msg);
        take(c, &after[0]), take(nob, &after[1]), take(part, &after[2]);
        for (int k = 0; k < 3; k++)
            check_unchanged(&before[k], &after[k]);
        assert_int_equal(clg_context_device_bytes(tu_ctx), bytes);
        assert_int_equal(clg_context_launches(tu_ctx), launches);
        assert_true(created == NULL);
        if (e->call == f_events || e->call == k_events || e->call == g_events ||
            e->call == b_events)
            assert_null(ev);
        if (e->call == l_early)
            assert_true(loss_out == 7.0f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_walk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
