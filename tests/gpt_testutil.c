/* gpt_testutil.c - see gpt_testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_testutil.h"
#include "ref_gpt.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

gpt_kernels gk;

enum { GUARD_AFTER = 5 };

static unsigned row_items;

static int gt_setup(void **state)
{
    tu_group_setup(state);
    clg_status st = gpt_kernels_init_rows(tu_ctx, &gk, row_items, 256);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "gpt_kernels_init: %s\n", clg_last_error(tu_ctx));
        return -1;
    }
    return 0;
}

static int gt_teardown(void **state)
{
    gpt_kernels_release(&gk);
    return tu_group_teardown(state);
}

int gt_run_both(const struct CMUnitTest *tests, size_t n)
{
    /* 4: 16 rows per work-group, the last one's rows partly past the end */
    static const unsigned variants[] = {64, 4, 1};
    static const char *const names[] = {"group per row", "4 items per row", "item per row"};
    int failed = 0;
    for (int v = 0; v < 3; v++) {
        row_items = variants[v];
        failed += _cmocka_run_group_tests(names[v], tests, n, gt_setup, gt_teardown);
    }
    return failed;
}

clg_view gt_view(const float *host, size_t n, size_t off)
{
    size_t total = off + n + GUARD_AFTER;
    float *h = tu_xmalloc(total * sizeof *h);
    for (size_t i = 0; i < total; i++)
        h[i] = GT_GUARD;
    for (size_t i = 0; i < n; i++)
        h[off + i] = host ? host[i] : NAN;
    clg_view v = {tu_buffer_from(h, total * sizeof *h), off, n};
    free(h);
    return v;
}

void gt_read(clg_view v, float *host)
{
    size_t total = v.offset + v.count + GUARD_AFTER;
    float *h = tu_xmalloc(total * sizeof *h);
    tu_buffer_read(v.mem, 0, h, total * sizeof *h);
    for (size_t i = 0; i < total; i++)
        if ((i < v.offset || i >= v.offset + v.count) && h[i] != GT_GUARD)
            fail_msg("element %zu outside the view [%zu, %zu) was written: %g", i, v.offset,
                     v.offset + v.count, h[i]);
    for (size_t i = 0; i < v.count; i++)
        host[i] = h[v.offset + i];
    free(h);
}

void gt_free(clg_view v) { clReleaseMemObject(v.mem); }

cl_mem gt_scratch(size_t bytes)
{
    cl_int e;
    cl_mem m = clCreateBuffer(clg_context_cl(tu_ctx), CL_MEM_READ_WRITE, bytes, NULL, &e);
    assert_int_equal(e, CL_SUCCESS);
    return m;
}

gt_tokens gt_make_tokens(unsigned B, unsigned T, uint64_t seed)
{
    return gt_make_tokens_v(B, T, 256, seed);
}

gt_tokens gt_make_tokens_v(unsigned B, unsigned T, unsigned V, uint64_t seed)
{
    enum { OFF = 2, PAD = 3 };
    unsigned n_windows = B + OFF + 1, stride = T + 1 + PAD, tb = gpt_token_bytes(V);
    size_t n = (size_t)n_windows * stride;
    uint8_t *w = tu_xmalloc(n * tb);
    int32_t *idx = tu_xmalloc(n_windows * sizeof *idx);
    tu_rng r = tu_rng_seed(seed);
    /* the bytes' usual few, and for a vocabulary the ends and a spread */
    const unsigned common[] = {' ', 'e', 't', 'a', 'o', '\n', 0, V - 1, V / 2 + 1, V / 3};
    unsigned n_common = V == 256 ? 8 : 10, rare = V < 128 ? V : 64;
    unsigned base = V - rare < 64 ? V - rare : 64; /* the bytes': 64 .. 127 */
    for (size_t i = 0; i < n; i++) {
        uint64_t x = tu_rng_u64(&r);
        unsigned v =
            x % 4 ? common[(x >> 8) % n_common] % V : (unsigned)((x >> 16) % rare + base);
        w[i * tb] = (uint8_t)v;
        if (tb == 2)
            w[i * tb + 1] = (uint8_t)(v >> 8);
    }
    for (unsigned i = 0; i < n_windows; i++)
        idx[i] = (int32_t)i;
    for (unsigned i = n_windows - 1; i > 0; i--) { /* Fisher-Yates */
        unsigned j = (unsigned)(tu_rng_u64(&r) % (i + 1));
        int32_t s = idx[i];
        idx[i] = idx[j];
        idx[j] = s;
    }
    gt_tokens t;
    t.t.windows = tu_buffer_from(w, n * tb);
    t.t.idx = tu_buffer_from(idx, n_windows * sizeof *idx);
    t.t.off = OFF;
    t.t.stride = stride;
    t.tok = tu_xmalloc((size_t)B * T * sizeof *t.tok);
    t.target = tu_xmalloc((size_t)B * T * sizeof *t.target);
    ref_gpt_tokens(w, tb, idx, OFF, stride, B, T, t.tok, t.target);
    free(w);
    free(idx);
    return t;
}

void gt_free_tokens(gt_tokens *t)
{
    clReleaseMemObject(t->t.windows);
    clReleaseMemObject(t->t.idx);
    free(t->tok);
    free(t->target);
}

void gt_check_embed(const gpt_kernels *k, unsigned B, unsigned T, unsigned C, uint64_t seed)
{
    size_t N = (size_t)B * T, VC = (size_t)k->vocab * C;
    gt_tokens tk = gt_make_tokens_v(B, T, k->vocab, seed);
    float *wte = gt_uniform(VC, 1, -1, 1), *wpe = gt_uniform((size_t)T * C, 2, -1, 1);
    float *got = gt_uniform(N * C, 3, 0, 0);
    double *ref = gt_doubles(N * C);
    clg_view vwte = gt_view(wte, VC, 3), vwpe = gt_view(wpe, (size_t)T * C, 1),
             out = gt_view(NULL, N * C, 7);
    assert_int_equal(gpt_embed(k, &tk.t, B, T, C, vwte, vwpe, out), CL_SUCCESS);
    gt_read(out, got);
    ref_gpt_embed(tk.tok, B, T, C, wte, wpe, ref);
    gt_close(got, ref, N * C, 0, 1e-7, "embed");
    gt_free(vwte), gt_free(vwpe), gt_free(out);
    free(wte), free(wpe), free(got), free(ref);
    gt_free_tokens(&tk);
}

float *gt_uniform(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = tu_xmalloc((n ? n : 1) * sizeof *x);
    tu_fill_uniform(x, n, seed, lo, hi);
    return x;
}

double *gt_doubles(size_t n) { return tu_xmalloc((n ? n : 1) * sizeof(double)); }

const float gt_betas[GT_N_BETAS] = {0.0f, 1.0f, 0.5f};

double gt_sum_tol(size_t terms) { return 1e-6 + 2e-7 * (double)terms; }

void gt_close(const float *got, const double *ref, size_t n, double abs_tol, double rel_tol,
              const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= abs_tol + rel_tol * fabs(ref[i])))
            fail_msg("%s[%zu]: got %.9g, reference %.9g (diff %.3g, tolerance %.3g + %.3g rel)",
                     what, i, got[i], ref[i], d, abs_tol, rel_tol);
    }
}

void gt_apply_beta(double *sum, const float *old, size_t n, float beta)
{
    if (beta != 0.0f)
        for (size_t i = 0; i < n; i++)
            sum[i] += (double)beta * old[i];
}
