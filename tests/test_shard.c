/* test_shard.c - sharded optimizer states (ZeRO-1 in the core,
 * clg_model_set_shard) against one whole model, in one process: the ranks'
 * exchanges are done here by hand, so that the core's part is checked on
 * every device (libclgrad-mpi's own tests do it over MPI).
 *
 * Model: 950,035 parameters in 5 tensors and 2 param groups, with
 * CLGRAD_MAX_ALLOC = 2 MiB so that the arenas split into several chunks and
 * shard boundaries fall inside chunks and tensors. AdamW, k = 3, clipping
 * and dynamic loss scaling, 4 updates, one of them with an inf (skipped,
 * the scale backs off), uneven weights.
 *
 *  - R = 2 and 3 shard models from the same params and gradients, the
 *    accumulator outside each shard overwritten with NaN before the end of
 *    the cycle (a shard must read its own part only), the sums of squares
 *    added in shard order, the updated params copied between the shards
 *    after each update: params and states within relative L2 1e-6 and
 *    PyTorch's fp32 tolerances (rtol 1.3e-6, atol 1e-5) of the whole
 *    model's (the norm is added in another order, and clipping carries its
 *    rounding into the update; PoCL gave bitwise equality), the same
 *    updates, skips and loss scales; every shard's params bitwise equal to
 *    the others'. The same at R = 2 for a config whose cycle end needs no
 *    statistics: there clg_shard_sumsq gives 0 without launching a pass,
 *    and params and states are bitwise the whole model's (the update does
 *    not use S, and docs/semantics.md promises bitwise equality for the
 *    same S).
 *  - Memory, through the context's own accounting: each shard's states
 *    are at most 1/R of the whole model's plus one segment per state, and
 *    the device bytes its finalize took are its memory plan's total; and
 *    clg_model_estimate_shard is what finalized one-tensor shards allocate,
 *    field by field.
 *  - Checkpoints: the shards' states gathered and saved load into an
 *    unsharded model (states bitwise the gathered ones); the whole model's
 *    checkpoint loads into a shard (its shard's states bitwise the whole
 *    model's).
 *  - Refusals with a named reason and nothing changed. */
#include <stdarg.h>
#include "clgrad_advanced.h"
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOC "2097152" /* 524,288 floats per buffer */
#define RTOL 1.3e-6
#define ATOL 1e-5

enum { K = 3, UPDATES = 4, N_TENSORS = 5, MAX_R = 3, INF_CYCLE = 2 };
static const size_t counts[N_TENSORS] = {400009, 300007, 17, 250001, 1};
static const int in_group1[N_TENSORS] = {0, 1, 1, 0, 1};

/* shards 0: the whole model. *bytes: the device bytes finalize took. */
static clg_model *build(const clg_config *cfg, unsigned index, unsigned shards, uint64_t *bytes)
{
    clg_model *m = tu_grouped_model(cfg, N_TENSORS, counts, in_group1);
    if (shards)
        OK(clg_model_set_shard(m, index, shards));
    uint64_t before = clg_context_device_bytes(tu_ctx);
    OK(clg_model_finalize(m));
    if (bytes)
        *bytes = clg_context_device_bytes(tu_ctx) - before;
    if (m->n_chunks < 3)
        fail_msg("CLGRAD_MAX_ALLOC=%s: %zu chunk(s), want >= 3", MAX_ALLOC, m->n_chunks);
    tu_upload_uniform_params(m, 42);
    return m;
}

/* The same cycles without clipping, loss scaling or the non-finite check:
 * nothing at the end of the cycle needs the gradient's norm. */
static clg_config config_without_stats(void)
{
    clg_config c = tu_adamw_config(K, 1);
    c.clip_norm = 0.0f;
    c.loss_scale = CLG_LOSS_SCALE_NONE;
    c.nonfinite = CLG_NONFINITE_IGNORE;
    return c;
}

static void gradient(float *g, size_t n, unsigned u, unsigned micro, int with_inf)
{
    tu_fill_uniform(g, n, 1000u * u + micro + 7, -1.0f, 1.0f);
    if (with_inf && u == INF_CYCLE && micro == 1)
        g[n / 2] = INFINITY;
}

/* Calls fn on every piece of layout range [first, first + n): chunk c,
 * elements [off, off + len) of it. */
typedef void (*piece_fn)(clg_model *m, size_t c, size_t off, size_t len, void *user);
static void for_range(clg_model *m, uint64_t first, uint64_t n, piece_fn fn, void *user)
{
    uint64_t base = 0;
    for (size_t c = 0; c < clg_model_chunk_count(m); c++) {
        clg_view v;
        OK(clg_model_chunk_view(m, CLG_PART_ACC, c, &v));
        uint64_t lo = first > base ? first : base;
        uint64_t hi = first + n < base + v.count ? first + n : base + v.count;
        if (lo < hi)
            fn(m, c, (size_t)(lo - base), (size_t)(hi - lo), user);
        base += v.count;
    }
}

static void poison_piece(clg_model *m, size_t c, size_t off, size_t len, void *user)
{
    (void)user;
    clg_view v;
    OK(clg_model_chunk_view(m, CLG_PART_ACC, c, &v));
    float nan = NAN;
    assert_int_equal(clEnqueueFillBuffer(clg_context_queue(tu_ctx), v.mem, &nan, 4, 4 * off,
                                         4 * len, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* The accumulator outside shard s of m (pending) overwritten with NaN. */
static void poison_outside(clg_model *m, unsigned s, unsigned shards)
{
    uint64_t first, n, total;
    OK(clg_model_shard_range(m, s, &first, &n, &total));
    (void)shards;
    for_range(m, 0, first, poison_piece, NULL);
    for_range(m, first + n, total - first - n, poison_piece, NULL);
    OK(clg_model_sync(m));
}

typedef struct copy_to {
    clg_model *dst;
} copy_to;

static void copy_piece(clg_model *m, size_t c, size_t off, size_t len, void *user)
{
    clg_model *dst = ((copy_to *)user)->dst;
    clg_view a, b;
    OK(clg_model_chunk_view(m, CLG_PART_PARAMS, c, &a));
    OK(clg_model_chunk_view(dst, CLG_PART_PARAMS, c, &b));
    assert_int_equal(clEnqueueCopyBuffer(clg_context_queue(tu_ctx), a.mem, b.mem, 4 * off,
                                         4 * off, 4 * len, 0, NULL, NULL),
                     CL_SUCCESS);
}

/* Every shard's updated params into every other shard (the all-gather). */
static void all_gather(clg_model **s, unsigned shards)
{
    for (unsigned r = 0; r < shards; r++) {
        uint64_t first, n;
        OK(clg_model_shard_range(s[r], r, &first, &n, NULL));
        for (unsigned q = 0; q < shards; q++) {
            copy_to to = {s[q]};
            if (q != r)
                for_range(s[r], first, n, copy_piece, &to);
        }
    }
    OK(clg_model_sync(s[0]));
}

/* The shards' state st end to end over the layout space (total floats). */
static float *gather_state(clg_model **s, unsigned shards, int st, uint64_t *total)
{
    OK(clg_model_shard_range(s[0], 0, NULL, NULL, total));
    float *img = tu_xmalloc(*total * sizeof *img);
    for (unsigned r = 0; r < shards; r++) {
        uint64_t first, n;
        OK(clg_model_shard_range(s[r], r, &first, &n, NULL));
        OK(clg_model_download_state_raw(s[r], st, CLG_SHARD_RANGE, img + first, n * sizeof *img,
                                        NULL, 0, NULL));
    }
    return img;
}

/* A layout image in tensor order (padding dropped), as the per-tensor
 * downloads give it. */
static void image_to_tensors(const clg_model *m, const float *img, float *out)
{
    size_t off = 0;
    for (size_t t = 0; t < m->n_tensors; t++) {
        const clg_tensor_slot *ts = &m->tensors[t];
        memcpy(out + off, img + clg__layout_first(m, ts->chunk) + ts->offset,
               ts->count * sizeof *out);
        off += ts->count;
    }
}

/* Bitwise, or elementwise within PyTorch's fp32 tolerances and the
 * relative L2 distance within REL_L2 (what the data-parallel equivalence
 * asks for; the tolerances alone would pass a 1e-4 change of the norm).
 * Returns the relative L2 distance. */
#define REL_L2 1e-6
static double compare(const char *what, const float *want, const float *got, size_t n,
                      int bitwise)
{
    for (size_t e = 0; bitwise && e < n; e++)
        if (memcmp(&want[e], &got[e], sizeof *want) != 0)
            fail_msg("%s[%zu]: whole model %.9g, shards %.9g (want bitwise)", what, e,
                     (double)want[e], (double)got[e]);
    double d2 = 0.0, w2 = 0.0;
    for (size_t e = 0; e < n; e++) {
        double d = (double)want[e] - (double)got[e];
        d2 += d * d;
        w2 += (double)want[e] * (double)want[e];
    }
    double rel = sqrt(d2 / fmax(w2, 1e-300));
    if (!(rel <= REL_L2))
        fail_msg("%s: relative L2 distance %.3g from the whole model (want <= %g)", what, rel,
                 REL_L2);
    for (size_t e = 0; e < n; e++) {
        double d = fabs((double)want[e] - (double)got[e]);
        if (!(d <= ATOL + RTOL * fabs((double)want[e])))
            fail_msg("%s[%zu]: whole model %.9g, shards %.9g (rtol %g, atol %g)", what, e,
                     want[e], got[e], RTOL, ATOL);
    }
    return rel;
}

typedef struct run {
    clg_model *whole, *shard[MAX_R];
    unsigned shards;
    size_t n;
    int with_stats; /* tu_adamw_config(K, 1), an inf cycle; else config_without_stats() */
} run;

static void run_free(run *r)
{
    clg_model_destroy(r->whole);
    for (unsigned s = 0; s < r->shards; s++)
        clg_model_destroy(r->shard[s]);
}

/* UPDATES cycles on the whole model (clg_step) and on the shards. */
static void run_cycles(run *r, unsigned shards, int with_stats)
{
    clg_config c = with_stats ? tu_adamw_config(K, 1) : config_without_stats();
    r->with_stats = with_stats;
    r->shards = shards;
    r->whole = build(&c, 0, 0, NULL);
    for (unsigned s = 0; s < shards; s++)
        r->shard[s] = build(&c, s, shards, NULL);
    r->n = (size_t)clg_model_param_count(r->whole);
    clg_grads *gw, *gs[MAX_R];
    OK(clg_grads_create(r->whole, CLG_FP32, &gw));
    for (unsigned s = 0; s < shards; s++)
        OK(clg_grads_create(r->shard[s], CLG_FP32, &gs[s]));
    float *g = tu_xmalloc(r->n * sizeof *g);
    for (unsigned u = 0; u < UPDATES; u++) {
        float ws = 0.0f;
        for (unsigned k = 0; k < K; k++) {
            gradient(g, r->n, u, k, with_stats);
            float w = 1.0f + 0.5f * (float)k + 0.25f * (float)u;
            ws += w;
            OK(clg_grads_upload(gw, CLG_ALL_TENSORS, g, r->n, NULL));
            OK(clg_step(r->whole, gw, w, NULL, NULL));
            for (unsigned s = 0; s < shards; s++) {
                OK(clg_grads_upload(gs[s], CLG_ALL_TENSORS, g, r->n, NULL));
                int ready = 0;
                OK(clg_step_collect(r->shard[s], gs[s], w, &ready, NULL));
                assert_int_equal(ready, k + 1 == K);
            }
        }
        double total = 0.0;
        for (unsigned s = 0; s < shards; s++) {
            poison_outside(r->shard[s], s, shards);
            double part = -1.0;
            const uint64_t launches = clg_context_launches(tu_ctx);
            OK(clg_shard_sumsq(r->shard[s], &part));
            if (!with_stats) { /* nothing to measure: 0, and no pass */
                assert_true(part == 0.0);
                assert_int_equal(clg_context_launches(tu_ctx), launches);
            }
            if (u != INF_CYCLE || !with_stats)
                assert_true(isfinite(part));
            total += part; /* in shard order, as libclgrad-mpi adds them */
        }
        if (with_stats && u == INF_CYCLE)
            assert_false(isfinite(total));
        for (unsigned s = 0; s < shards; s++)
            OK(clg_finish_cycle_sharded(r->shard[s], ws, total, NULL));
        all_gather(r->shard, shards);
    }
    free(g);
    clg_grads_destroy(gw);
    for (unsigned s = 0; s < shards; s++)
        clg_grads_destroy(gs[s]);
}

static void check_against_whole(run *r)
{
    clg_stats sw = clg_stats_init();
    OK(clg_model_stats(r->whole, 1, &sw));
    assert_int_equal(sw.skipped_updates, r->with_stats ? 1 : 0);
    float *want = tu_xmalloc(r->n * sizeof *want);
    float *got = tu_xmalloc(r->n * sizeof *got);
    float *first = tu_xmalloc(r->n * sizeof *first);
    OK(clg_model_download_params(r->whole, CLG_ALL_TENSORS, want, r->n, NULL));
    double worst = 0.0;
    for (unsigned s = 0; s < r->shards; s++) {
        clg_stats ss = clg_stats_init();
        OK(clg_model_stats(r->shard[s], 1, &ss));
        assert_int_equal(ss.updates, sw.updates);
        assert_int_equal(ss.skipped_updates, sw.skipped_updates);
        assert_int_equal(ss.cycles, sw.cycles);
        assert_true(ss.loss_scale == sw.loss_scale);
        OK(clg_model_download_params(r->shard[s], CLG_ALL_TENSORS, got, r->n, NULL));
        double e = compare("params", want, got, r->n, !r->with_stats);
        worst = e > worst ? e : worst;
        if (s == 0)
            memcpy(first, got, r->n * sizeof *got);
        else if (memcmp(first, got, r->n * sizeof *got) != 0)
            fail_msg("shard %u's params differ from shard 0's (want bitwise)", s);
    }
    for (int st = 0; st < 2; st++) {
        uint64_t total;
        float *img = gather_state(r->shard, r->shards, st, &total);
        image_to_tensors(r->shard[0], img, got);
        OK(clg_model_download_state(r->whole, st, CLG_ALL_TENSORS, want, r->n, NULL));
        double e = compare(st == 0 ? "m" : "v", want, got, r->n, !r->with_stats);
        worst = e > worst ? e : worst;
        free(img);
    }
    print_message("R = %u: largest relative L2 distance from the whole model %.3g\n", r->shards,
                  worst);
    free(want);
    free(got);
    free(first);
}

static void shards_equal_whole_model(unsigned shards, int with_stats)
{
    run r;
    run_cycles(&r, shards, with_stats);
    check_against_whole(&r);
    run_free(&r);
}

static void test_two_shards_equal_whole_model(void **state)
{
    (void)state;
    shards_equal_whole_model(2, 1);
}

static void test_shards_without_statistics(void **state)
{
    (void)state;
    shards_equal_whole_model(2, 0);
}

static void test_three_shards_equal_whole_model(void **state)
{
    (void)state;
    shards_equal_whole_model(3, 1);
}

static void test_state_memory_is_one_shard(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 1);
    uint64_t whole_bytes;
    clg_model *w = build(&c, 0, 0, &whole_bytes);
    clg_model_plan pw = clg_model_plan_init();
    OK(clg_model_memory(w, &pw));
    assert_int_equal(pw.total, whole_bytes);
    for (unsigned shards = 2; shards <= MAX_R; shards++) {
        uint64_t sum = 0;
        for (unsigned s = 0; s < shards; s++) {
            uint64_t bytes;
            clg_model *m = build(&c, s, shards, &bytes);
            clg_model_plan p = clg_model_plan_init();
            OK(clg_model_memory(m, &p));
            assert_int_equal(p.total, bytes); /* the plan is what the context counted */
            uint64_t bound = pw.states / shards + 2 * 4 * CLG_SEGMENT_ALIGN;
            print_message("R = %u, shard %u: states %llu bytes of %llu (bound %llu), "
                          "device total %llu of %llu\n",
                          shards, s, (unsigned long long)p.states,
                          (unsigned long long)pw.states, (unsigned long long)bound,
                          (unsigned long long)p.total, (unsigned long long)pw.total);
            assert_true(p.states <= bound);
            assert_int_equal(p.params, pw.params);
            assert_int_equal(p.accumulators, pw.accumulators);
            sum += p.states;
            clg_model_destroy(m);
        }
        assert_int_equal(sum, pw.states); /* the shards cover the states once */
    }
    clg_model_destroy(w);
}

static void assert_plans_equal(const clg_model_plan *want, const clg_model_plan *got,
                               const char *what)
{
    const uint64_t w[] = {want->params, want->accumulators, want->states, want->state_scales,
                          want->param_copy, want->grad_buffers, want->step_block, want->tables,
                          want->total};
    const uint64_t g[] = {got->params, got->accumulators, got->states, got->state_scales,
                          got->param_copy, got->grad_buffers, got->step_block, got->tables,
                          got->total};
    static const char *const field[] = {"params", "accumulators", "states", "state_scales",
                                        "param_copy", "grad_buffers", "step_block", "tables",
                                        "total"};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        if (w[i] != g[i])
            fail_msg("%s: %s: estimate %llu bytes, the finalized shard %llu", what, field[i],
                     (unsigned long long)w[i], (unsigned long long)g[i]);
}

/* clg_model_estimate_shard against what finalized shards of a one-tensor
 * model allocate, field by field: AdamW with fp32, bf16, Q8 and Q4 states
 * (the shard's codes and absmax values), SGD with momentum, plain SGD (no
 * state); a tensor of whole segments that
 * shards cut unevenly (500 segments in 3), and one of less than a segment,
 * whose one shard with states holds them for the 700 params (the model
 * also for the padding), the others none. */
static void test_estimate_matches_shards(void **state)
{
    (void)state;
    static const size_t sizes[] = {500 * CLG_SEGMENT_ALIGN, 700};
    static const clg_dtype state_dtypes[] = {CLG_FP32, CLG_BF16, CLG_FP32, CLG_FP32, CLG_Q8,
                                             CLG_Q4};
    for (int k = 0; k < 6; k++) {
        clg_config c = clg_config_init(k == 2 || k == 3 ? CLG_SGD : CLG_ADAMW);
        c.state_dtype = state_dtypes[k];
        c.momentum = k == 2 ? 0.9f : 0.0f;
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            for (unsigned shards = 1; shards <= MAX_R; shards++) {
                uint64_t est_sum = 0;
                for (unsigned s = 0; s < shards; s++) {
                    clg_model *m;
                    OK(clg_model_create(tu_ctx, &c, &m));
                    int t;
                    OK(clg_model_add_tensor(m, "w", sizes[z], 0, &t));
                    OK(clg_model_set_shard(m, s, shards));
                    uint64_t before = clg_context_device_bytes(tu_ctx);
                    OK(clg_model_finalize(m));
                    clg_model_plan got = clg_model_plan_init(), est = clg_model_plan_init();
                    OK(clg_model_memory(m, &got));
                    assert_int_equal(got.total, clg_context_device_bytes(tu_ctx) - before);
                    OK(clg_model_estimate_shard(&c, sizes[z], s, shards, &est));
                    char what[96];
                    snprintf(what, sizeof what, "config %d, %zu params, shard %u of %u", k,
                             sizes[z], s, shards);
                    if (sizes[z] % CLG_SEGMENT_ALIGN == 0)
                        assert_plans_equal(&est, &got, what);
                    else if (est.states > got.states) /* the model holds the padding too */
                        fail_msg("%s: estimate %llu state bytes, the shard %llu", what,
                                 (unsigned long long)est.states,
                                 (unsigned long long)got.states);
                    est_sum += est.states;
                    clg_model_destroy(m);
                }
                /* the shards' estimates cover the whole one's states once */
                clg_model_plan whole = clg_model_plan_init();
                OK(clg_model_estimate(&c, sizes[z], &whole));
                assert_int_equal(est_sum, whole.states);
            }
        }
    }
    /* one shard of one is the whole model's estimate */
    clg_config c = tu_adamw_config(K, 1);
    clg_model_plan whole = clg_model_plan_init(), one = clg_model_plan_init();
    OK(clg_model_estimate(&c, 123457, &whole));
    OK(clg_model_estimate_shard(&c, 123457, 0, 1, &one));
    assert_plans_equal(&whole, &one, "shard 0 of 1");
}

static void test_checkpoints_cross_sharding(void **state)
{
    (void)state;
    run r;
    run_cycles(&r, 3, 1);
    char *dir = tu_mkdtemp("test_shard");
    char gathered[512], whole[512];
    snprintf(gathered, sizeof gathered, "%s/gathered.ckpt", dir);
    snprintf(whole, sizeof whole, "%s/whole.ckpt", dir);
    uint64_t total;
    float *img[2];
    for (int st = 0; st < 2; st++)
        img[st] = gather_state(r.shard, 3, st, &total);
    const void *const states[2] = {img[0], img[1]};
    OK(clg_checkpoint_save_gathered(r.shard[1], gathered, NULL, NULL, 0, states, 2));
    OK(clg_checkpoint_save(r.whole, whole, NULL, NULL, 0));

    /* the gathered file into an unsharded model: the shards' states */
    clg_config c = tu_adamw_config(K, 1);
    clg_model *u = build(&c, 0, 0, NULL);
    OK(clg_checkpoint_load(u, gathered, NULL, NULL));
    float *want = tu_xmalloc(r.n * sizeof *want);
    float *got = tu_xmalloc(r.n * sizeof *got);
    for (int st = 0; st < 2; st++) {
        image_to_tensors(u, img[st], want);
        OK(clg_model_download_state(u, st, CLG_ALL_TENSORS, got, r.n, NULL));
        if (memcmp(want, got, r.n * sizeof *got) != 0)
            fail_msg("state %d loaded from the gathered file differs from the shards'", st);
    }
    clg_stats su = clg_stats_init(), ss = clg_stats_init();
    OK(clg_model_stats(u, 1, &su));
    OK(clg_model_stats(r.shard[0], 1, &ss));
    assert_int_equal(su.updates, ss.updates);
    assert_true(su.loss_scale == ss.loss_scale);

    /* the whole model's file into shard 1 of 3: its part of the states */
    clg_model *s1 = build(&c, 1, 3, NULL);
    OK(clg_checkpoint_load(s1, whole, NULL, NULL));
    uint64_t first, n;
    OK(clg_model_shard_range(s1, 1, &first, &n, NULL));
    float *part = tu_xmalloc(n * sizeof *part);
    float *wimg = tu_xmalloc(total * sizeof *wimg);
    for (int st = 0; st < 2; st++) {
        OK(clg_model_download_state(r.whole, st, CLG_ALL_TENSORS, want, r.n, NULL));
        memset(wimg, 0, total * sizeof *wimg); /* the padding's states stay zero */
        size_t off = 0;
        for (size_t t = 0; t < r.whole->n_tensors; t++) {
            const clg_tensor_slot *ts = &r.whole->tensors[t];
            memcpy(wimg + clg__layout_first(r.whole, ts->chunk) + ts->offset, want + off,
                   ts->count * sizeof *want);
            off += ts->count;
        }
        OK(clg_model_download_state_raw(s1, st, CLG_SHARD_RANGE, part, n * sizeof *part, NULL, 0,
                                        NULL));
        if (memcmp(part, wimg + first, n * sizeof *part) != 0)
            fail_msg("state %d of shard 1 loaded from the whole model's file differs", st);
    }
    OK(clg_model_download_params(s1, CLG_ALL_TENSORS, got, r.n, NULL));
    OK(clg_model_download_params(r.whole, CLG_ALL_TENSORS, want, r.n, NULL));
    assert_memory_equal(got, want, r.n * sizeof *got);
    free(part);
    free(wimg);
    free(want);
    free(got);
    free(img[0]);
    free(img[1]);
    clg_model_destroy(u);
    clg_model_destroy(s1);
    run_free(&r);
    tu_rmdir_tree(dir);
    free(dir);
}

static void expect(clg_status got, clg_status want, const char *needle)
{
    assert_int_equal(got, want);
    const char *msg = clg_last_error(tu_ctx);
    if (strstr(msg, needle) == NULL)
        fail_msg("message '%s' does not name '%s'", msg, needle);
}

static void test_refusals(void **state)
{
    (void)state;
    clg_config c = tu_adamw_config(K, 1);
    clg_model *m;
    OK(clg_model_create(tu_ctx, &c, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", 5000, 0, &t));
    expect(clg_model_set_shard(m, 2, 2), CLG_ERR_INVALID_ARGUMENT, "shard 2 of 2");
    expect(clg_model_set_shard(m, 0, 0), CLG_ERR_INVALID_ARGUMENT, "count");
    OK(clg_model_set_shard(m, 1, 2));
    OK(clg_model_finalize(m));
    expect(clg_model_set_shard(m, 0, 2), CLG_ERR_STATE, "before clg_model_finalize");
    expect(clg_model_shard_range(m, 2, NULL, NULL, NULL), CLG_ERR_INVALID_ARGUMENT, "no shard 2");
    clg_view v;
    expect(clg_model_chunk_view(m, CLG_PART_ACC, 99, &v), CLG_ERR_INVALID_ARGUMENT, "no chunk 99");
    expect(clg_model_chunk_view(m, (clg_part)7, 0, &v), CLG_ERR_INVALID_ARGUMENT, "part 7");
    double sq;
    expect(clg_shard_sumsq(m, &sq), CLG_ERR_STATE, "no collected cycle");
    float buf[5000];
    expect(clg_model_download_state(m, 0, 0, buf, 5000, NULL), CLG_ERR_UNSUPPORTED,
           "shard 1 of 2");
    expect(clg_model_download_state_raw(m, 0, CLG_SHARD_RANGE, buf, 4, NULL, 0, NULL),
           CLG_ERR_INVALID_ARGUMENT, "bytes");
    char *dir = tu_mkdtemp("test_shard_refusals");
    char path[512];
    snprintf(path, sizeof path, "%s/x.ckpt", dir);
    expect(clg_checkpoint_save(m, path, NULL, NULL, 0), CLG_ERR_UNSUPPORTED,
           "clg_checkpoint_save_gathered");
    const void *one[1] = {buf};
    expect(clg_checkpoint_save_gathered(m, path, NULL, NULL, 0, one, 1), CLG_ERR_INVALID_ARGUMENT,
           "2 states");
    /* the cycle's last micro-step through clg_step: refused, nothing taken */
    for (unsigned k = 0; k + 1 < K; k++)
        OK(clg_step(m, NULL, 1.0f, NULL, NULL));
    expect(clg_step(m, NULL, 1.0f, NULL, NULL), CLG_ERR_UNSUPPORTED, "clg_finish_cycle_sharded");
    assert_int_equal(clg_micro_step_index(m), K - 1);
    expect(clg_flush(m, NULL), CLG_ERR_UNSUPPORTED, "shard 1 of 2");
    int ready = 0;
    OK(clg_step_collect(m, NULL, 1.0f, &ready, NULL));
    assert_int_equal(ready, 1);
    expect(clg_finish_cycle(m, 3.0f, NULL), CLG_ERR_UNSUPPORTED, "clg_finish_cycle_sharded");
    expect(clg_finish_cycle_sharded(m, 3.0f, -1.0, NULL), CLG_ERR_INVALID_ARGUMENT, "negative");
    OK(clg_shard_sumsq(m, &sq));
    OK(clg_finish_cycle_sharded(m, 3.0f, sq, NULL));
    assert_int_equal(clg_micro_step_index(m), 0);
    clg_model_destroy(m);

    /* what a shard cannot hold yet, named at finalize */
    static const char *const unsupported[] = {"param copy", "per-tensor norms"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        clg_config u = tu_adamw_config(K, 1);
        if (i == 0)
            u.param_copy_dtype = CLG_BF16;
        else
            u.tensor_norms = 1;
        OK(clg_model_create(tu_ctx, &u, &m));
        OK(clg_model_add_tensor(m, "w", 5000, 0, &t));
        OK(clg_model_set_shard(m, 0, 2));
        expect(clg_model_finalize(m), CLG_ERR_UNSUPPORTED, unsupported[i]);
        clg_model_destroy(m);
    }
    tu_rmdir_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_shards_equal_whole_model),
        cmocka_unit_test(test_three_shards_equal_whole_model),
        cmocka_unit_test(test_shards_without_statistics),
        cmocka_unit_test(test_state_memory_is_one_shard),
        cmocka_unit_test(test_estimate_matches_shards),
        cmocka_unit_test(test_checkpoints_cross_sharding),
        cmocka_unit_test(test_refusals),
    };
    return TU_RUN_GROUP_MAX_ALLOC("shard", tests, tu_group_setup, MAX_ALLOC);
}
