/* test_gpt_flash.c - the attention in O(T) memory (gpt_flash.cl through
 * gpt_flash.h) on the default device: against the double reference
 * (ref_gpt_flash_forward/backward), against today's path (q k^T and att v
 * through CLBlast's batched GEMM as gpt_forward.c and gpt_backward.c run
 * them, gpt_softmax_causal and its backward), two runs bit for bit, and
 * the launchers' refusals. The group runs three times, today's softmax
 * built for each of its row widths (gt_run_both).
 *
 * Shapes: T 1, 7, 37 and 130, HS 8, 16, 48, 64 and 128, one with scores
 * near +-100 (exp overflows unless the max is subtracted); each with the
 * device's tiles and two given ones (8 rows, key tiles of 4: several
 * work-groups and up to 33 key tiles a row; 3 rows, tiles of 5: sizes no
 * power of two, tiles that straddle the work-groups' rows).
 *
 * Tolerances against the double reference (eps = 2^-24). A float dot
 * product of HS terms is off by at most about HS eps sum_d |a_d b_d|
 * (Higham's gamma_HS), so every score by HS eps S, where S = scale HS
 * max|q| max|k| bounds sum_d |scale q_d k_d|. A probability exp(s - lse)
 * carries that twice (the score and the log-sum-exp), a running sum of up
 * to T terms T eps, exp and log a few ulp (16 eps), and ds's difference
 * dy . v - D the HS eps of its two dot products, relative to their size:
 *   E = eps (2 HS S + 2 HS + T + 16).
 * Every output is a sum of such terms, off by E times a bound of its size:
 *   y_i   max|v|                        (a convex combination of the v_j)
 *   lse_i E absolute, plus eps |lse_i|  (its own rounding)
 *   dv_j  (T - j) max|dy|               (the p_ij dy_i of i >= j)
 *   dq_i  2 scale HS max|dy| max|v| max|k|  (|ds_ij| <= 2 p_ij HS
 *                                            max|dy| max|v|, sum_j p_ij = 1)
 *   dk_j  2 scale HS max|dy| max|v| max|q| (T - j).
 * The test prints the largest error found as a fraction of its bound.
 *
 * Against today's path: for every head's [T x HS] matrix of y, dq, dk and
 * dv, the largest difference within 1e-5 of the matrix's largest
 * magnitude (the 1e-5 relative). Not row by row nor element by
 * element: sum_j ds_ij = 0, so a row of dq cancels, to 1e-7 of its head's
 * size where the scores reach +-100 and one key takes the whole row,
 * and both paths then hold rounding noise there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_flash.h"
#include "gpt_testutil.h"
#include "mlp_gemms.h"
#include "ref_gpt.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    unsigned R, T, HS;
    float qk; /* q and k uniform in [-qk, qk] */
} shape;
static const shape SHAPES[] = {
    {3, 1, 8, 2.0f},   {2, 7, 16, 2.0f},  {4, 37, 48, 2.0f},
    {2, 130, 64, 2.0f}, {2, 37, 128, 2.0f}, {3, 130, 16, 8.0f},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

/* rows 0: the device's tiles (gpt_flash_init) */
typedef struct tiles {
    unsigned rows, tile;
} tiles;
static const tiles TILES[] = {{0, 0}, {8, 4}, {3, 5}};
enum { N_TILES = sizeof TILES / sizeof TILES[0] };

static const double EPS = 0x1p-24;

/* ------------------------------------------------------------ inputs and runs */

typedef struct inputs {
    float *q, *k, *v, *dy;
    size_t n, rows; /* R T HS, R T */
    float scale;
} inputs;

static inputs make_inputs(const shape *s, uint64_t seed)
{
    inputs in;
    in.rows = (size_t)s->R * s->T;
    in.n = in.rows * s->HS;
    in.q = gt_uniform(in.n, seed, -s->qk, s->qk);
    in.k = gt_uniform(in.n, seed + 1, -s->qk, s->qk);
    in.v = gt_uniform(in.n, seed + 2, -1, 1);
    in.dy = gt_uniform(in.n, seed + 3, -1, 1);
    in.scale = 1.0f / sqrtf((float)s->HS); /* as gpt_forward.c */
    return in;
}

static void free_inputs(inputs *in) { free(in->q), free(in->k), free(in->v), free(in->dy); }

/* What a run gives back (lse only from the flash kernels). */
typedef struct outputs {
    float *y, *lse, *dq, *dk, *dv;
} outputs;

static outputs alloc_outputs(const inputs *in)
{
    outputs o = {gt_uniform(in->n, 0, 0, 0), gt_uniform(in->rows, 0, 0, 0),
                 gt_uniform(in->n, 0, 0, 0), gt_uniform(in->n, 0, 0, 0),
                 gt_uniform(in->n, 0, 0, 0)};
    return o;
}

static void free_outputs(outputs *o) { free(o->y), free(o->lse), free(o->dq), free(o->dk), free(o->dv); }

/* The flash forward and backward; outputs start NaN in guarded views
 * (gt_view), so an element never written or one written outside shows. */
static void run_flash(const gpt_flash *f, const shape *s, const inputs *in, outputs *o)
{
    size_t n = in->n, rows = in->rows;
    clg_view q = gt_view(in->q, n, 1), k = gt_view(in->k, n, 2), v = gt_view(in->v, n, 3),
             dy = gt_view(in->dy, n, 4), y = gt_view(NULL, n, 5), lse = gt_view(NULL, rows, 6),
             dsum = gt_view(NULL, rows, 7), dq = gt_view(NULL, n, 8), dk = gt_view(NULL, n, 9),
             dv = gt_view(NULL, n, 1);
    assert_int_equal(gpt_flash_forward(f, s->R, s->T, in->scale, q, k, v, y, lse), CL_SUCCESS);
    assert_int_equal(gpt_flash_backward(f, s->R, s->T, in->scale, q, k, v, y, lse, dy, dsum, dq,
                                        dk, dv),
                     CL_SUCCESS);
    gt_read(y, o->y), gt_read(lse, o->lse), gt_read(dq, o->dq), gt_read(dk, o->dk);
    gt_read(dv, o->dv);
    clg_view all[] = {q, k, v, dy, y, lse, dsum, dq, dk, dv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
}

/* C_r = op(A_r) op(B_r) for the R heads (mlp_gemm_batched's form). */
static void batched(int ta, int tb, size_t M, size_t N, size_t K, clg_view a, size_t lda,
                    size_t sa, clg_view b, size_t ldb, size_t sb, clg_view c, size_t ldc,
                    size_t sc, size_t R)
{
    assert_int_equal(mlp_gemm_batched(gk.queue, ta, tb, M, N, K, 1.0f, a.mem, a.offset, lda, sa,
                                      b.mem, b.offset, ldb, sb, 0.0f, c.mem, c.offset, ldc, sc,
                                      R, NULL),
                     CL_SUCCESS);
}

/* Today's path on the split layout, in gpt_forward.c's and
 * gpt_backward.c's order: preatt = q k^T, att = the causal softmax,
 * y = att v; datt = dy v^T, dv = att^T dy, dpreatt = the softmax's
 * backward (scale folded in, in place), dq = dpreatt k, dk = dpreatt^T q. */
static void run_today(const shape *s, const inputs *in, outputs *o)
{
    size_t n = in->n, T = s->T, HS = s->HS, R = s->R, THS = T * HS, TT = T * T;
    clg_view q = gt_view(in->q, n, 1), k = gt_view(in->k, n, 2), v = gt_view(in->v, n, 3),
             dy = gt_view(in->dy, n, 4), y = gt_view(NULL, n, 5), preatt = gt_view(NULL, R * TT, 6),
             att = gt_view(NULL, R * TT, 7), datt = gt_view(NULL, R * TT, 8),
             dq = gt_view(NULL, n, 9), dk = gt_view(NULL, n, 1), dv = gt_view(NULL, n, 2);
    batched(0, 1, T, T, HS, q, HS, THS, k, HS, THS, preatt, T, TT, R);
    assert_int_equal(gpt_softmax_causal(&gk, s->R, s->T, in->scale, preatt, att), CL_SUCCESS);
    batched(0, 0, T, HS, T, att, T, TT, v, HS, THS, y, HS, THS, R);
    batched(0, 1, T, T, HS, dy, HS, THS, v, HS, THS, datt, T, TT, R);
    batched(1, 0, T, HS, T, att, T, TT, dy, HS, THS, dv, HS, THS, R);
    assert_int_equal(gpt_softmax_causal_backward(&gk, s->R, s->T, in->scale, att, datt, datt),
                     CL_SUCCESS);
    batched(0, 0, T, HS, T, datt, T, TT, k, HS, THS, dq, HS, THS, R);
    batched(1, 0, T, HS, T, datt, T, TT, q, HS, THS, dk, HS, THS, R);
    gt_read(y, o->y), gt_read(dq, o->dq), gt_read(dk, o->dk), gt_read(dv, o->dv);
    clg_view all[] = {q, k, v, dy, y, preatt, att, datt, dq, dk, dv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
}

static void flash_init(const tiles *t, unsigned hs, gpt_flash *f)
{
    clg_status st = t->rows ? gpt_flash_init_tiles(tu_ctx, hs, t->rows, t->tile, f)
                            : gpt_flash_init(tu_ctx, hs, f);
    if (st != CLG_SUCCESS)
        fail_msg("gpt_flash_init (HS %u, rows %u, tile %u): %d %s", hs, t->rows, t->tile, (int)st,
                 clg_last_error(tu_ctx));
}

/* ------------------------------------------------------------ comparisons */

static float max_abs(const float *x, size_t n)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* Rows (r, t) of width elements: |got - ref| <= tol (T - t when
 * per_key, else 1) + rel |ref|; returns the largest error as a fraction
 * of its tolerance. */
static double check_rows(const char *what, const shape *s, const float *got, const double *ref,
                         size_t width, double tol, int per_key, double rel)
{
    double worst = 0;
    for (size_t row = 0; row < (size_t)s->R * s->T; row++) {
        unsigned t = (unsigned)(row % s->T);
        double row_tol = tol * (per_key ? s->T - t : 1);
        for (size_t d = 0; d < width; d++) {
            size_t i = row * width + d;
            double diff = fabs((double)got[i] - ref[i]), bound = row_tol + rel * fabs(ref[i]);
            if (!(diff <= bound))
                fail_msg("%s: head %zu, row %u, [%zu]: got %.9g, reference %.9g (diff %.3g, "
                         "tolerance %.3g)",
                         what, row / s->T, t, d, got[i], ref[i], diff, bound);
            worst = fmax(worst, diff / bound);
        }
    }
    return worst;
}

static double check_reference(const shape *s, const inputs *in, const outputs *o)
{
    unsigned HS = s->HS;
    double *y = gt_doubles(in->n), *lse = gt_doubles(in->rows), *dq = gt_doubles(in->n),
           *dk = gt_doubles(in->n), *dv = gt_doubles(in->n);
    ref_gpt_flash_forward(s->R, s->T, HS, in->scale, in->q, in->k, in->v, y, lse);
    ref_gpt_flash_backward(s->R, s->T, HS, in->scale, in->q, in->k, in->v, in->dy, dq, dk, dv);
    double mq = max_abs(in->q, in->n), mk = max_abs(in->k, in->n), mv = max_abs(in->v, in->n),
           mdy = max_abs(in->dy, in->n);
    double S = in->scale * HS * mq * mk, E = EPS * (2.0 * HS * S + 2.0 * HS + s->T + 16);
    double ds = 2.0 * in->scale * HS * mdy * mv, worst = 0;
    worst = fmax(worst, check_rows("y", s, o->y, y, HS, E * mv, 0, 0));
    worst = fmax(worst, check_rows("lse", s, o->lse, lse, 1, E, 0, EPS));
    worst = fmax(worst, check_rows("dv", s, o->dv, dv, HS, E * mdy, 1, 0));
    worst = fmax(worst, check_rows("dq", s, o->dq, dq, HS, E * ds * mk, 0, 0));
    worst = fmax(worst, check_rows("dk", s, o->dk, dk, HS, E * ds * mq, 1, 0));
    free(y), free(lse), free(dq), free(dk), free(dv);
    return worst;
}

/* Head by head: max |got - today| <= 1e-5 max |today| over the head's
 * [T x HS] matrix; returns the largest ratio of the two maxima. */
static double check_today_heads(const char *what, const shape *s, const float *got,
                                const float *today)
{
    double worst = 0;
    size_t per_head = (size_t)s->T * s->HS;
    for (size_t r = 0; r < s->R; r++) {
        const float *g = got + r * per_head, *t = today + r * per_head;
        double diff = 0, size = 0;
        for (size_t i = 0; i < per_head; i++) {
            diff = fmax(diff, fabs((double)g[i] - t[i]));
            size = fmax(size, fabs((double)t[i]));
        }
        if (!(diff <= 1e-5 * size))
            fail_msg("%s: head %zu: flash and today's path differ by %.3g, the head's size %.3g "
                     "(relative %.3g > 1e-5)",
                     what, r, diff, size, diff / size);
        worst = fmax(worst, size > 0 ? diff / size : 0);
    }
    return worst;
}

/* ------------------------------------------------------------ tests */

/* check(shape, inputs, outputs) on every shape with every tiling, after
 * the flash run; prints the largest value it returned through report. */
typedef double (*flash_check)(const shape *s, const inputs *in, const outputs *flash);

static void over_cases(uint64_t seed, flash_check check, const char *report)
{
    double worst = 0;
    for (int t = 0; t < N_TILES; t++)
        for (int i = 0; i < N_SHAPES; i++) {
            const shape *s = &SHAPES[i];
            gpt_flash f;
            flash_init(&TILES[t], s->HS, &f);
            inputs in = make_inputs(s, seed + 4 * (uint64_t)i);
            outputs o = alloc_outputs(&in);
            run_flash(&f, s, &in, &o);
            worst = fmax(worst, check(s, &in, &o));
            free_outputs(&o), free_inputs(&in);
            gpt_flash_release(&f);
        }
    print_message(report, worst);
}

static void test_against_reference(void **state)
{
    (void)state;
    over_cases(10, check_reference, "against the double reference: largest error %.3g of its "
                                    "bound\n");
}

static double check_today(const shape *s, const inputs *in, const outputs *flash)
{
    outputs today = alloc_outputs(in);
    run_today(s, in, &today);
    double worst = check_today_heads("y", s, flash->y, today.y);
    worst = fmax(worst, check_today_heads("dq", s, flash->dq, today.dq));
    worst = fmax(worst, check_today_heads("dk", s, flash->dk, today.dk));
    worst = fmax(worst, check_today_heads("dv", s, flash->dv, today.dv));
    free_outputs(&today);
    return worst;
}

static void test_against_today(void **state)
{
    (void)state;
    over_cases(40, check_today, "against today's path: largest relative difference %.3g "
                                "(limit 1e-5)\n");
}

/* Two runs of the same build on the same inputs give the same bytes. */
static void test_repeatable(void **state)
{
    (void)state;
    for (int t = 0; t < N_TILES; t++) {
        const shape *s = &SHAPES[3]; /* T 130, HS 64 */
        gpt_flash f;
        flash_init(&TILES[t], s->HS, &f);
        inputs in = make_inputs(s, 70);
        outputs a = alloc_outputs(&in), b = alloc_outputs(&in);
        run_flash(&f, s, &in, &a);
        run_flash(&f, s, &in, &b);
        size_t bytes = in.n * sizeof(float);
        assert_memory_equal(a.y, b.y, bytes);
        assert_memory_equal(a.lse, b.lse, in.rows * sizeof(float));
        assert_memory_equal(a.dq, b.dq, bytes);
        assert_memory_equal(a.dk, b.dk, bytes);
        assert_memory_equal(a.dv, b.dv, bytes);
        free_outputs(&a), free_outputs(&b), free_inputs(&in);
        gpt_flash_release(&f);
    }
}

/* Views that hold fewer elements than the shapes say, and tiles or head
 * sizes the program cannot take. */
static void test_refusals(void **state)
{
    (void)state;
    gpt_flash f;
    assert_int_equal(gpt_flash_init(tu_ctx, 0, &f), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_flash_init(tu_ctx, GPT_FLASH_MAX_HS + 1, &f), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_flash_init_tiles(tu_ctx, 8, 0, 4, &f), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_flash_init_tiles(tu_ctx, 8, 4, 0, &f), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(gpt_flash_init_tiles(tu_ctx, 8, 1u << 30, 4, &f), CLG_ERR_UNSUPPORTED);
    assert_int_equal(gpt_flash_init_tiles(tu_ctx, 8, 4, 1u << 26, &f), CLG_ERR_UNSUPPORTED);
    flash_init(&TILES[1], 8, &f);
    const unsigned R = 2, T = 5;
    size_t n = (size_t)R * T * 8;
    clg_view x = gt_view(NULL, n, 0), small = gt_view(NULL, n - 1, 0),
             rows = gt_view(NULL, R * T, 0), few = gt_view(NULL, R * T - 1, 0);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, x, x, small, x, rows), CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, x, x, x, x, few), CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_backward(&f, R, T, 0.5f, x, x, x, x, rows, x, few, x, x, x),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_backward(&f, R, T, 0.5f, x, x, x, x, rows, x, rows, x, x, small),
                     CL_INVALID_VALUE);
    gt_free(x), gt_free(small), gt_free(rows), gt_free(few);
    gpt_flash_release(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_against_reference), cmocka_unit_test(test_against_today),
    cmocka_unit_test(test_repeatable), cmocka_unit_test(test_refusals)};

/* Three times, with today's softmax built for each of its row widths. */
int main(void) { return gt_run_both(tests, sizeof tests / sizeof *tests); }
