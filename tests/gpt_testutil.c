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

int gt_setup(void **state)
{
    tu_group_setup(state);
    clg_status st = gpt_kernels_init(tu_ctx, &gk);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "gpt_kernels_init: %s\n", clg_last_error(tu_ctx));
        return -1;
    }
    return 0;
}

int gt_teardown(void **state)
{
    gpt_kernels_release(&gk);
    return tu_group_teardown(state);
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
    enum { OFF = 2, PAD = 3 };
    unsigned n_windows = B + OFF + 1, stride = T + 1 + PAD;
    uint8_t *w = tu_xmalloc((size_t)n_windows * stride);
    int32_t *idx = tu_xmalloc(n_windows * sizeof *idx);
    tu_rng r = tu_rng_seed(seed);
    static const uint8_t common[] = {' ', 'e', 't', 'a', 'o', '\n', 0, 255};
    for (size_t i = 0; i < (size_t)n_windows * stride; i++) {
        uint64_t x = tu_rng_u64(&r);
        w[i] = x % 4 ? common[(x >> 8) % sizeof common] : (uint8_t)(x >> 16) % 64 + 64;
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
    t.t.windows = tu_buffer_from(w, (size_t)n_windows * stride);
    t.t.idx = tu_buffer_from(idx, n_windows * sizeof *idx);
    t.t.off = OFF;
    t.t.stride = stride;
    t.tok = tu_xmalloc((size_t)B * T * sizeof *t.tok);
    t.target = tu_xmalloc((size_t)B * T * sizeof *t.target);
    ref_gpt_tokens(w, idx, OFF, stride, B, T, t.tok, t.target);
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

float *gt_uniform(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = tu_xmalloc((n ? n : 1) * sizeof *x);
    tu_fill_uniform(x, n, seed, lo, hi);
    return x;
}

double *gt_doubles(size_t n) { return tu_xmalloc((n ? n : 1) * sizeof(double)); }

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
