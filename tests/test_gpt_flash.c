/* test_gpt_flash.c - the attention in O(T) memory (gpt_flash.cl through
 * gpt_flash.h) on the default device: against the double reference
 * (ref_gpt_flash_forward/backward), two runs bit for bit, the model's
 * layout (qkv and y in the GEMMs' rows, c_attn's bias added as q, k and v
 * are read) against the split layout bit for bit, and the launchers'
 * refusals, once (not for each of gpt.cl's row widths). (Against the attention it replaced, q k^T
 * and att v through CLBlast's batched GEMMs around a causal softmax kernel, it agreed within 2.7e-6
 * of each head's largest magnitude, before that path was removed.)
 *
 * Shapes: T 1, 7, 37 and 130, HS 8, 16, 48, 64 and 128, one with scores
 * near +-100 (exp overflows unless the max is subtracted); each with the
 * device's tiles, and those of HS 16 and 64 with two given ones (8 rows,
 * key tiles of 4: several work-groups and up to 33 key tiles a row; 3
 * rows, tiles of 5: sizes no power of two, tiles that straddle the
 * work-groups' rows).
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
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_flash.h"
#include "gpt_testutil.h"
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
    {3, 1, 8, 2.0f},    {2, 7, 16, 2.0f},   {4, 37, 48, 2.0f},
    {2, 130, 64, 2.0f}, {2, 37, 128, 2.0f}, {3, 130, 16, 8.0f},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

/* rows 0: the device's tiles (gpt_flash_init) */
typedef struct tiles {
    unsigned rows, tile;
} tiles;
static const tiles TILES[] = {{0, 0}, {8, 4}, {3, 5}};
enum { N_TILES = sizeof TILES / sizeof TILES[0] };

/* The cases run: every shape with the device's tiles, the given tilings
 * with head sizes 16 and 64 alone (each pair is a program build, seconds
 * on PoCL; the tilings' edges do not depend on the head size, whose own
 * cases the device's tiles cover). */
static int case_runs(int t, const shape *s)
{
    return t == 0 || s->HS == 16 || s->HS == 64;
}

static const double EPS = 0x1p-24;
static const clg_view NO_BIAS = {NULL, 0, 0};

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

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->dy);
}

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

static void free_outputs(outputs *o)
{
    free(o->y), free(o->lse), free(o->dq), free(o->dk), free(o->dv);
}

/* The flash forward and backward; outputs start NaN in guarded views
 * (gt_view), so an element never written or one written outside shows. */
static void run_flash(gpt_flash *f, const shape *s, const inputs *in, outputs *o)
{
    size_t n = in->n, rows = in->rows;
    clg_view q = gt_view(in->q, n, 1), k = gt_view(in->k, n, 2), v = gt_view(in->v, n, 3),
             dy = gt_view(in->dy, n, 4), y = gt_view(NULL, n, 5), lse = gt_view(NULL, rows, 6),
             dsum = gt_view(NULL, rows, 7), dq = gt_view(NULL, n, 8), dk = gt_view(NULL, n, 9),
             dv = gt_view(NULL, n, 1);
    gpt_flash_layout lay = gpt_flash_split_layout(s->HS);
    assert_int_equal(gpt_flash_forward(f, s->R, s->T, in->scale, lay, NO_BIAS, q, k, v, y, lse),
                     CL_SUCCESS);
    assert_int_equal(gpt_flash_backward(f, s->R, s->T, in->scale, lay, NO_BIAS, q, k, v, y, lse, dy,
                                        dsum, dq, dk, dv),
                     CL_SUCCESS);
    gt_read(y, o->y), gt_read(lse, o->lse), gt_read(dq, o->dq), gt_read(dk, o->dk);
    gt_read(dv, o->dv);
    clg_view all[] = {q, k, v, dy, y, lse, dsum, dq, dk, dv};
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

static double check_reference(gpt_flash *f, const shape *s, const inputs *in, const outputs *o)
{
    (void)f;
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

/* ------------------------------------------------------------ tests */

/* check(shape, inputs, outputs) on every case, after the flash run;
 * prints the largest value it returned through report (NULL: nothing). */
typedef double (*flash_check)(gpt_flash *f, const shape *s, const inputs *in, const outputs *flash);

static void over_cases(uint64_t seed, flash_check check, const char *report)
{
    double worst = 0;
    for (int t = 0; t < N_TILES; t++)
        for (int i = 0; i < N_SHAPES; i++) {
            const shape *s = &SHAPES[i];
            if (!case_runs(t, s))
                continue;
            gpt_flash f;
            flash_init(&TILES[t], s->HS, &f);
            inputs in = make_inputs(s, seed + 4 * (uint64_t)i);
            outputs o = alloc_outputs(&in);
            run_flash(&f, s, &in, &o);
            worst = fmax(worst, check(&f, s, &in, &o));
            free_outputs(&o), free_inputs(&in);
            gpt_flash_release(&f);
        }
    if (report)
        print_message(report, worst);
}

static void test_against_reference(void **state)
{
    (void)state;
    over_cases(10, check_reference,
               "against the double reference: largest error %.3g of its "
               "bound\n");
}

/* a and b (runs on the inputs in) hold the same bytes. */
static void same_outputs(const inputs *in, const outputs *a, const outputs *b)
{
    size_t bytes = in->n * sizeof(float);
    assert_memory_equal(a->y, b->y, bytes);
    assert_memory_equal(a->lse, b->lse, in->rows * sizeof(float));
    assert_memory_equal(a->dq, b->dq, bytes);
    assert_memory_equal(a->dk, b->dk, bytes);
    assert_memory_equal(a->dv, b->dv, bytes);
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
        same_outputs(&in, &a, &b);
        free_outputs(&a), free_outputs(&b), free_inputs(&in);
        gpt_flash_release(&f);
    }
}

/* ------------------------------------------------------------ the model's layout */

/* The heads of shape s as the model holds them: B = R / NH sequences, q,
 * k and v side by side in rows of 3C (C = NH HS), y and dy in rows of C. */
typedef struct model_shape {
    size_t NH, B, C, N; /* N = B T rows */
} model_shape;

static model_shape model_shape_of(const shape *s)
{
    model_shape m;
    m.NH = s->R % 2 == 0 ? 2 : s->R; /* R 4: two sequences of two heads */
    m.B = s->R / m.NH;
    m.C = m.NH * s->HS;
    m.N = m.B * s->T;
    return m;
}

/* Element (head r, row t, d) of the split layout in a model tensor of
 * row stride ld whose heads start at col. */
static size_t model_index(const shape *s, const model_shape *m, size_t ld, size_t col, size_t i)
{
    size_t d = i % s->HS, t = i / s->HS % s->T, r = i / ((size_t)s->HS * s->T);
    return (r / m->NH * s->T + t) * ld + col + r % m->NH * s->HS + d;
}

/* split into model (to_model) or back, for the n = R T HS elements. */
static void relayout(const shape *s, const model_shape *m, size_t ld, size_t col, float *split,
                     float *model, int to_model)
{
    for (size_t i = 0; i < (size_t)s->R * s->T * s->HS; i++) {
        size_t j = model_index(s, m, ld, col, i);
        if (to_model)
            model[j] = split[i];
        else
            split[i] = model[j];
    }
}

/* The flash kernels on the model's layout (gpt_flash_model_layout): qkv
 * and dqkv [N x 3C], y and dy [N x C]; the outputs put back in the split
 * layout into o. bias: c_attn's [3C] for the kernels to add, or NULL. */
static void run_flash_model(gpt_flash *f, const shape *s, const inputs *in, const float *bias,
                            outputs *o)
{
    model_shape m = model_shape_of(s);
    size_t C = m.C, n3 = m.N * 3 * C, n1 = m.N * C;
    float *qkv = gt_uniform(n3, 0, 0, 0), *dy_m = gt_uniform(n1, 0, 0, 0);
    float *split[] = {in->q, in->k, in->v};
    for (size_t w = 0; w < 3; w++)
        relayout(s, &m, 3 * C, w * C, split[w], qkv, 1);
    relayout(s, &m, C, 0, in->dy, dy_m, 1);
    clg_view qkv_v = gt_view(qkv, n3, 3), dy = gt_view(dy_m, n1, 4), y = gt_view(NULL, n1, 5),
             lse = gt_view(NULL, in->rows, 6), dsum = gt_view(NULL, in->rows, 7),
             dqkv = gt_view(NULL, n3, 8);
    clg_view q = {qkv_v.mem, qkv_v.offset, n3}, k = {qkv_v.mem, qkv_v.offset + C, n3 - C},
             v = {qkv_v.mem, qkv_v.offset + 2 * C, n3 - 2 * C};
    clg_view dq = {dqkv.mem, dqkv.offset, n3}, dk = {dqkv.mem, dqkv.offset + C, n3 - C},
             dv = {dqkv.mem, dqkv.offset + 2 * C, n3 - 2 * C};
    gpt_flash_layout lay = gpt_flash_model_layout((cl_uint)m.NH, (cl_uint)C);
    clg_view b = bias ? gt_view(bias, 3 * C, 2) : NO_BIAS;
    assert_int_equal(gpt_flash_forward(f, s->R, s->T, in->scale, lay, b, q, k, v, y, lse),
                     CL_SUCCESS);
    assert_int_equal(
        gpt_flash_backward(f, s->R, s->T, in->scale, lay, b, q, k, v, y, lse, dy, dsum, dq, dk, dv),
        CL_SUCCESS);
    if (bias)
        gt_free(b);
    float *y_m = gt_uniform(n1, 0, 0, 0), *dqkv_m = gt_uniform(n3, 0, 0, 0);
    gt_read(y, y_m), gt_read(lse, o->lse), gt_read(dqkv, dqkv_m);
    relayout(s, &m, C, 0, o->y, y_m, 0);
    float *grads[] = {o->dq, o->dk, o->dv};
    for (size_t w = 0; w < 3; w++)
        relayout(s, &m, 3 * C, w * C, grads[w], dqkv_m, 0);
    clg_view all[] = {qkv_v, dy, y, lse, dsum, dqkv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        gt_free(all[i]);
    free(qkv), free(dy_m), free(y_m), free(dqkv_m);
}

/* in with c_attn's bias added on the host as a bias add would (float),
 * each head's part to its rows, in the split layout. */
static inputs biased_inputs(const shape *s, const inputs *in, const float *bias)
{
    model_shape m = model_shape_of(s);
    inputs b = *in;
    const float *src[] = {in->q, in->k, in->v};
    float **dst[] = {&b.q, &b.k, &b.v};
    for (size_t w = 0; w < 3; w++) {
        *dst[w] = gt_uniform(in->n, 0, 0, 0);
        for (size_t i = 0; i < in->n; i++)
            (*dst[w])[i] = src[w][i] + bias[model_index(s, &m, 3 * m.C, w * m.C, i) % (3 * m.C)];
    }
    b.dy = gt_uniform(in->n, 0, 0, 0);
    memcpy(b.dy, in->dy, in->n * sizeof *b.dy);
    return b;
}

/* The model's layout gives the split layout's bytes (the same arithmetic
 * in the same order; only the addresses differ), with and without c_attn's
 * bias added by the kernels, every element written (the outputs start
 * NaN) and nothing outside the views (gt_read's guards). */
static double check_model_layout(gpt_flash *f, const shape *s, const inputs *in,
                                 const outputs *flash)
{
    outputs b = alloc_outputs(in);
    run_flash_model(f, s, in, NULL, &b);
    same_outputs(in, flash, &b);
    /* with the bias: the split layout on the inputs with it added */
    float *bias = gt_uniform(3 * model_shape_of(s).C, 95 + s->T, -1, 1);
    inputs want = biased_inputs(s, in, bias);
    outputs a = alloc_outputs(in);
    run_flash(f, s, &want, &a);
    run_flash_model(f, s, in, bias, &b);
    same_outputs(in, &a, &b);
    free_outputs(&a), free_outputs(&b), free_inputs(&want), free(bias);
    return 0;
}

static void test_model_layout(void **state)
{
    (void)state;
    over_cases(90, check_model_layout, NULL);
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
    gpt_flash_layout split = gpt_flash_split_layout(8);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, split, NO_BIAS, x, x, small, x, rows),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, split, NO_BIAS, x, x, x, x, few),
                     CL_INVALID_VALUE);
    assert_int_equal(
        gpt_flash_backward(&f, R, T, 0.5f, split, NO_BIAS, x, x, x, x, rows, x, few, x, x, x),
        CL_INVALID_VALUE);
    assert_int_equal(
        gpt_flash_backward(&f, R, T, 0.5f, split, NO_BIAS, x, x, x, x, rows, x, rows, x, x, small),
        CL_INVALID_VALUE);
    /* layouts: heads that do not divide R, strides below the heads' row */
    gpt_flash_layout three = {3, 24, 24}, narrow = {2, 15, 16}, narrow_y = {2, 48, 15};
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, three, NO_BIAS, x, x, x, x, rows),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, narrow, NO_BIAS, x, x, x, x, rows),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, narrow_y, NO_BIAS, x, x, x, x, rows),
                     CL_INVALID_VALUE);
    /* the model's layout (one sequence of two heads: rows of 48 and 16):
     * v at element 16 of qkv reaches its last row's element 47, y its 79; heads of 8 */
    gpt_flash_layout model = gpt_flash_model_layout(2, 16);
    clg_view qkv = gt_view(NULL, 3 * T * 16, 0), y = gt_view(NULL, T * 16, 0);
    clg_view q = {qkv.mem, 0, 3 * T * 16}, v = {qkv.mem, 32, 3 * T * 16 - 32};
    clg_view v_short = {qkv.mem, 32, 3 * T * 16 - 33}, y_short = {y.mem, 0, T * 16 - 1};
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, model, NO_BIAS, q, q, v_short, y, rows),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, model, NO_BIAS, q, q, v, y_short, rows),
                     CL_INVALID_VALUE);
    /* a bias shorter than 3 x 2 heads x 8 */
    clg_view bias = gt_view(NULL, 48, 0), bias_short = {bias.mem, 0, 47};
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, model, bias_short, q, q, v, y, rows),
                     CL_INVALID_VALUE);
    assert_int_equal(gpt_flash_forward(&f, R, T, 0.5f, model, bias, q, q, v, y, rows), CL_SUCCESS);
    gt_free(bias);
    assert_int_equal(clFinish(clg_context_queue(tu_ctx)), CL_SUCCESS);
    gt_free(qkv), gt_free(y);
    gt_free(x), gt_free(small), gt_free(rows), gt_free(few);
    gpt_flash_release(&f);
}

/* Once: the attention's program has no row width of gpt.cl's (gt_run_both
 * would run the same cases three times). */
TU_MAIN("gpt_flash", tu_group_setup, tu_group_teardown, cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_repeatable), cmocka_unit_test(test_model_layout),
        cmocka_unit_test(test_refusals))
