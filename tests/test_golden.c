/* test_golden.c - clgrad against golden fixtures from independent
 * implementations (PyTorch's optimizers, clip_grad_norm_ and GradScaler rule;
 * optax's MultiSteps around adamw), written by tests/golden/gen_fixtures.py.
 * Each fixture is replayed micro-step by micro-step through external fp32
 * gradients (clg_grads_upload + clg_step), on path A (fuse_last_micro_step 0)
 * and, where the fixture allows it, path C (fused last micro-step); params,
 * optimizer states, counters, gradient norm and loss scale are compared after
 * every update. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgrad.h"
#include "testutil.h"

#ifndef CLG_SOURCE_ROOT
#define CLG_SOURCE_ROOT "."
#endif

/* PyTorch's default tolerances for fp32 (torch.testing.assert_close):
 * |got - expected| <= ATOL + RTOL * |expected|. The fixtures' own float64
 * replay of docs/semantics.md lands within 3e-7 of them (gen_fixtures.py),
 * so these leave room only for clgrad's fp32 rounding. */
#define RTOL 1.3e-6
#define ATOL 1e-5
/* The global norm is a reduction over 40 squares in a different order than
 * torch's (per-tensor norms, then the norm of the norms): a few ulps apart. */
#define NORM_RTOL 1e-5

#define PATH_A 1u
#define PATH_C 2u
#define MAX_STATES 3
#define MAX_GROUPS 4
#define MAX_TENSORS 4

/* ------------------------------------------------------------- the fixture */

enum {
    H_VERSION, H_OPTIMIZER, H_N_TENSORS, H_N_GROUPS, H_N_UPDATES, H_N_STATES,
    H_ACCUM_STEPS, H_PATHS, H_NESTEROV, H_AMSGRAD, H_NONFINITE, H_LOSS_SCALE_MODE,
    H_LOSS_SCALE_INTERVAL,
    H_LR, H_BETA1, H_BETA2, H_EPS, H_WEIGHT_DECAY, H_MOMENTUM, H_DAMPENING,
    H_CLIP_NORM, H_LOSS_SCALE_INIT, H_LOSS_SCALE_GROWTH, H_LOSS_SCALE_BACKOFF,
    H_COUNT
};

typedef struct micro {
    uint32_t finite;
    float weight;
    const float *grad; /* n floats, points into the fixture's arrays */
} micro;

typedef struct update {
    uint32_t n_micro, applied, skipped, skipped_micro;
    float scale_in, scale_after, grad_norm;
    micro *micro;
    float *params;
    float *states[MAX_STATES];
} update;

typedef struct fixture {
    const char *name;
    uint32_t h[H_COUNT]; /* raw words; f32 fields through hf() */
    float group_lr_mult[MAX_GROUPS], group_wd[MAX_GROUPS];
    uint32_t tensor_count[MAX_TENSORS], tensor_group[MAX_TENSORS];
    size_t n;
    float *params0;
    update *updates;
    unsigned char *data; /* the file; all arrays above are decoded copies */
} fixture;

static float hf(const fixture *f, int field)
{
    float x;
    memcpy(&x, &f->h[field], 4);
    return x;
}

typedef struct reader {
    const unsigned char *p;
    size_t left;
    int bad;
} reader;

static uint32_t rd_u32(reader *r)
{
    if (r->left < 4) {
        r->bad = 1;
        return 0;
    }
    /* Little-endian on any host. */
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    r->left -= 4;
    return v;
}

static float rd_f32(reader *r)
{
    uint32_t u = rd_u32(r);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static float *rd_array(reader *r, size_t n)
{
    float *a = tu_xmalloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = rd_f32(r);
    return a;
}

/* Loads tests/golden/<name>.bin; any malformation fails the test. */
static fixture *fixture_load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s.bin", CLG_SOURCE_ROOT, name);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open fixture %s", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    assert_true(size > 12);
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->name = name;
    f->data = tu_xmalloc((size_t)size);
    assert_int_equal(fread(f->data, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    if (memcmp(f->data, "CLGGOLD1", 8) != 0 || memcmp(f->data + size - 4, "END!", 4) != 0)
        fail_msg("%s: bad magic or trailer", path);

    reader r = {f->data + 8, (size_t)size - 12, 0};
    for (int i = 0; i < H_COUNT; i++)
        f->h[i] = rd_u32(&r);
    assert_int_equal(f->h[H_VERSION], 1);
    assert_true(f->h[H_N_GROUPS] >= 1 && f->h[H_N_GROUPS] <= MAX_GROUPS);
    assert_true(f->h[H_N_TENSORS] >= 1 && f->h[H_N_TENSORS] <= MAX_TENSORS);
    assert_true(f->h[H_N_STATES] <= MAX_STATES);
    for (uint32_t g = 0; g < f->h[H_N_GROUPS]; g++) {
        f->group_lr_mult[g] = rd_f32(&r);
        f->group_wd[g] = rd_f32(&r);
    }
    for (uint32_t t = 0; t < f->h[H_N_TENSORS]; t++) {
        f->tensor_count[t] = rd_u32(&r);
        f->tensor_group[t] = rd_u32(&r);
        assert_true(f->tensor_group[t] < f->h[H_N_GROUPS]);
        f->n += f->tensor_count[t];
    }
    f->params0 = rd_array(&r, f->n);
    f->updates = calloc(f->h[H_N_UPDATES], sizeof *f->updates);
    assert_non_null(f->updates);
    for (uint32_t u = 0; u < f->h[H_N_UPDATES] && !r.bad; u++) {
        update *up = &f->updates[u];
        up->n_micro = rd_u32(&r);
        up->applied = rd_u32(&r);
        up->skipped = rd_u32(&r);
        up->skipped_micro = rd_u32(&r);
        up->scale_in = rd_f32(&r);
        up->scale_after = rd_f32(&r);
        up->grad_norm = rd_f32(&r);
        assert_true(up->n_micro >= 1 && up->n_micro < 64);
        up->micro = calloc(up->n_micro, sizeof *up->micro);
        assert_non_null(up->micro);
        for (uint32_t j = 0; j < up->n_micro; j++) {
            up->micro[j].finite = rd_u32(&r);
            up->micro[j].weight = rd_f32(&r);
            up->micro[j].grad = rd_array(&r, f->n);
        }
        up->params = rd_array(&r, f->n);
        for (uint32_t s = 0; s < f->h[H_N_STATES]; s++)
            up->states[s] = rd_array(&r, f->n);
    }
    if (r.bad || r.left != 0)
        fail_msg("%s: truncated or has %zu extra bytes", path, r.left);
    return f;
}

static void fixture_free(fixture *f)
{
    for (uint32_t u = 0; u < f->h[H_N_UPDATES]; u++) {
        update *up = &f->updates[u];
        for (uint32_t j = 0; j < up->n_micro; j++)
            free((void *)up->micro[j].grad);
        free(up->micro);
        free(up->params);
        for (uint32_t s = 0; s < f->h[H_N_STATES]; s++)
            free(up->states[s]);
    }
    free(f->updates);
    free(f->params0);
    free(f->data);
    free(f);
}

/* ------------------------------------------------------------- comparing */

/* Largest |got - expected| / (ATOL + RTOL |expected|) of the current case:
 * printed at the end, it shows how much margin the tolerances leave. */
static double g_worst;

/* Compares got with expected under the tolerances; prints every mismatch
 * (at most 8) with fixture, update, tensor and element, then fails. */
static void check_close(const fixture *f, const char *path_name, unsigned u, const char *what,
                        int tensor, const float *got, const float *exp, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double e = exp[i], g = got[i];
        double ratio = fabs(g - e) / (ATOL + RTOL * fabs(e));
        if (ratio > g_worst)
            g_worst = ratio;
        if (!(fabs(g - e) <= ATOL + RTOL * fabs(e))) {
            if (bad < 8)
                print_error("%s [path %s] update %u: %s tensor %d element %zu: "
                            "expected %.9g got %.9g (diff %.3g)\n",
                            f->name, path_name, u + 1, what, tensor, i, e, g, fabs(g - e));
            bad++;
        }
    }
    if (bad)
        fail_msg("%s [path %s] update %u: %zu of %zu %s elements of tensor %d out of "
                 "tolerance (rtol %g, atol %g)",
                 f->name, path_name, u + 1, bad, n, what, tensor, RTOL, ATOL);
}

/* ------------------------------------------------------------- the replay */

static void replay(const fixture *f, unsigned path)
{
    const char *path_name = path == PATH_A ? "A" : "C";
    g_worst = 0.0;
    clg_config cfg = clg_config_init((clg_optimizer)f->h[H_OPTIMIZER]);
    cfg.lr = hf(f, H_LR);
    cfg.beta1 = hf(f, H_BETA1);
    cfg.beta2 = hf(f, H_BETA2);
    cfg.eps = hf(f, H_EPS);
    cfg.weight_decay = hf(f, H_WEIGHT_DECAY);
    cfg.momentum = hf(f, H_MOMENTUM);
    cfg.dampening = hf(f, H_DAMPENING);
    cfg.nesterov = (int)f->h[H_NESTEROV];
    cfg.amsgrad = (int)f->h[H_AMSGRAD];
    cfg.accum_steps = f->h[H_ACCUM_STEPS];
    cfg.normalize = CLG_NORM_MEAN;
    cfg.fuse_last_micro_step = path == PATH_C;
    cfg.clip_norm = hf(f, H_CLIP_NORM);
    cfg.nonfinite = (clg_nonfinite_policy)f->h[H_NONFINITE];
    cfg.loss_scale = (clg_loss_scale_mode)f->h[H_LOSS_SCALE_MODE];
    cfg.loss_scale_init = hf(f, H_LOSS_SCALE_INIT);
    cfg.loss_scale_growth = hf(f, H_LOSS_SCALE_GROWTH);
    cfg.loss_scale_backoff = hf(f, H_LOSS_SCALE_BACKOFF);
    if (f->h[H_LOSS_SCALE_INTERVAL])
        cfg.loss_scale_interval = f->h[H_LOSS_SCALE_INTERVAL];

    clg_model *model = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &model));
    /* Group 0 is the config's (lr_mult 1, config weight decay). */
    assert_true(f->group_lr_mult[0] == 1.0f && f->group_wd[0] == cfg.weight_decay);
    for (uint32_t g = 1; g < f->h[H_N_GROUPS]; g++) {
        int gi = -1;
        OK(clg_model_add_group(model, g == 1 ? "g1" : "g2", f->group_lr_mult[g], f->group_wd[g],
                               &gi));
        assert_int_equal(gi, (int)g);
    }
    size_t offset[MAX_TENSORS];
    for (uint32_t t = 0, o = 0; t < f->h[H_N_TENSORS]; t++) {
        char name[16];
        int ti = -1;
        snprintf(name, sizeof name, "t%u", t);
        OK(clg_model_add_tensor(model, name, f->tensor_count[t], (int)f->tensor_group[t], &ti));
        assert_int_equal(ti, (int)t);
        offset[t] = o;
        o += f->tensor_count[t];
    }
    OK(clg_model_finalize(model));
    assert_int_equal(clg_model_param_count(model), f->n);
    assert_true(clg_model_state_count(model) >= f->h[H_N_STATES]);
    OK(clg_model_upload_params(model, CLG_ALL_TENSORS, f->params0, (size_t)clg_model_param_count(model), NULL));

    clg_grads *grads = NULL;
    OK(clg_grads_create(model, CLG_FP32, &grads));

    float *got = tu_xmalloc(f->n * sizeof *got);
    float *prev = tu_xmalloc(f->n * sizeof *prev);
    memcpy(prev, f->params0, f->n * sizeof *prev);

    for (unsigned u = 0; u < f->h[H_N_UPDATES]; u++) {
        const update *up = &f->updates[u];
        int dynamic = cfg.loss_scale == CLG_LOSS_SCALE_DYNAMIC;
        float scale = 0.0f;
        OK(clg_model_loss_scale(model, 1, &scale));
        /* The fixture's gradients were scaled with this: it must match exactly. */
        if (scale != (dynamic ? up->scale_in : 1.0f))
            fail_msg("%s [path %s] update %u: loss scale in force %g, expected %g", f->name,
                     path_name, u + 1, (double)scale, (double)up->scale_in);

        for (uint32_t j = 0; j < up->n_micro; j++) {
            int updated = -1;
            OK(clg_grads_upload(grads, CLG_ALL_TENSORS, up->micro[j].grad, (size_t)clg_model_param_count(model), NULL));
            OK(clg_step(model, grads, up->micro[j].weight, &updated, NULL));
            int last = j + 1 == up->n_micro;
            /* Under SKIP_UPDATE the host cannot know the update will be
             * skipped (the device decides), so an expected skip may report
             * either; everywhere else the cycle ends exactly where the
             * reference's did. */
            int expect_skip = up->skipped > (u ? f->updates[u - 1].skipped : 0);
            if (!(last && expect_skip) && updated != last)
                fail_msg("%s [path %s] update %u micro-step %u: updated = %d, expected %d",
                         f->name, path_name, u + 1, j + 1, updated, last);
        }

        clg_stats stats = clg_stats_init();
        OK(clg_model_stats(model, 1, &stats));
        if (stats.updates != up->applied || stats.skipped_updates != up->skipped ||
            stats.skipped_micro_steps != up->skipped_micro)
            fail_msg("%s [path %s] update %u: stats updates/skipped/skipped_micro = "
                     "%llu/%llu/%llu, expected %u/%u/%u",
                     f->name, path_name, u + 1, (unsigned long long)stats.updates,
                     (unsigned long long)stats.skipped_updates,
                     (unsigned long long)stats.skipped_micro_steps, up->applied, up->skipped,
                     up->skipped_micro);
        if (!isnan(up->grad_norm) &&
            !(fabs(stats.grad_norm - up->grad_norm) <= NORM_RTOL * up->grad_norm))
            fail_msg("%s [path %s] update %u: grad_norm %.9g, clip_grad_norm_ gave %.9g",
                     f->name, path_name, u + 1, (double)stats.grad_norm,
                     (double)up->grad_norm);
        /* The scale sequence is exact: powers of two times 2 or 0.5. */
        OK(clg_model_loss_scale(model, 1, &scale));
        if (scale != (dynamic ? up->scale_after : 1.0f) ||
            stats.loss_scale != (dynamic ? up->scale_after : 1.0f))
            fail_msg("%s [path %s] update %u: loss scale after %g (stats %g), expected %g",
                     f->name, path_name, u + 1, (double)scale, (double)stats.loss_scale,
                     (double)up->scale_after);

        for (uint32_t t = 0; t < f->h[H_N_TENSORS]; t++) {
            size_t o = offset[t], c = f->tensor_count[t];
            OK(clg_model_download_params(model, (int)t, got + o, clg_model_tensor_size(model, (int)t), NULL));
            check_close(f, path_name, u, "param", (int)t, got + o, up->params + o, c);
        }
        int skipped_now = up->skipped > (u ? f->updates[u - 1].skipped : 0);
        if (skipped_now) {
            /* A skipped update leaves the params bitwise unchanged. */
            if (memcmp(got, prev, f->n * sizeof *got) != 0)
                fail_msg("%s [path %s] update %u: skipped update changed the params",
                         f->name, path_name, u + 1);
        } else {
            /* The fixture is not trivial: the update moved some param by far
             * more than the tolerance, so a missing update cannot pass. */
            float moved = 0.0f;
            for (size_t i = 0; i < f->n; i++)
                moved = fmaxf(moved, fabsf(up->params[i] - prev[i]));
            assert_true(moved > 100.0f * (float)ATOL);
        }
        memcpy(prev, got, f->n * sizeof *got);

        for (uint32_t s = 0; s < f->h[H_N_STATES]; s++) {
            char what[16];
            snprintf(what, sizeof what, "state%u", s);
            for (uint32_t t = 0; t < f->h[H_N_TENSORS]; t++) {
                size_t o = offset[t], c = f->tensor_count[t];
                OK(clg_model_download_state(model, (int)s, (int)t, got + o, clg_model_tensor_size(model, (int)t), NULL));
                check_close(f, path_name, u, what, (int)t, got + o, up->states[s] + o, c);
            }
        }
    }
    print_message("%s [path %s]: %u updates match; worst error %.3f of the tolerance\n",
                  f->name, path_name, f->h[H_N_UPDATES], g_worst);
    free(got);
    free(prev);
    clg_grads_destroy(grads);
    clg_model_destroy(model);
}

typedef struct golden_case {
    const char *fixture;
    unsigned path;
} golden_case;

static void test_golden(void **state)
{
    const golden_case *gc = *state;
    fixture *f = fixture_load(gc->fixture);
    assert_true(f->h[H_PATHS] & gc->path);
    replay(f, gc->path);
    fixture_free(f);
}

#define CASE(name, fixture, path)                                                       \
    { name, test_golden, NULL, NULL, &(golden_case){fixture, path} }

int main(void)
{
    /* optax_multisteps is path A only: SKIP_MICRO drops a micro-step's
     * gradients before they reach the accumulator. */
    const struct CMUnitTest tests[] = {
        CASE("adamw_clip_pathA", "adamw_clip", PATH_A),
        CASE("adamw_clip_pathC", "adamw_clip", PATH_C),
        CASE("adam_amsgrad_pathA", "adam_amsgrad", PATH_A),
        CASE("adam_amsgrad_pathC", "adam_amsgrad", PATH_C),
        CASE("sgd_nesterov_pathA", "sgd_nesterov", PATH_A),
        CASE("sgd_nesterov_pathC", "sgd_nesterov", PATH_C),
        CASE("gradscaler_adamw_pathA", "gradscaler_adamw", PATH_A),
        CASE("gradscaler_adamw_pathC", "gradscaler_adamw", PATH_C),
        CASE("optax_multisteps_pathA", "optax_multisteps", PATH_A),
    };
    return cmocka_run_group_tests_name("golden", tests, tu_group_setup, tu_group_teardown);
}
