/* test_bench.c - clgrad-bench's own logic: the bytes model (docs/design.md, 2),
 * budget arithmetic, sample summaries, size parsing, the report's derived
 * numbers and its JSON schema. With "--smoke BENCH" it instead runs
 * "BENCH --quick" and checks that every field of the JSON exists and every
 * number is finite, the CSV has a row per case and the PNG was drawn, and
 * that the GEMM section measured clgrad-train's 8 GEMM shapes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "bytes_model.h"
#include "bench_main.h"
#include "fit.h"
#include "configs.h"
#include "report.h"
#include "timing.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const bm_shape adamw = {2, 4, 0, 0, 0.0, 0};
static const bm_shape adamw_clip = {2, 4, 1, 1, 0.0, 0};
static const bm_shape adamw_fp16 = {2, 2, 0, 0, 0.0, 0};
static const bm_shape sgd = {1, 4, 0, 0, 0.0, 0};

static bm_cycle cycle_of(bm_shape s, bench_variant v, char path, unsigned k)
{
    bm_cycle c;
    assert_int_equal(bm_cycle_bytes(s, v, path, k, &c), 0);
    return c;
}

/* docs/design.md's bytes model (section 2), row by row. */
static void test_bytes_design_table(void **state)
{
    (void)state;
    bm_cycle a = cycle_of(adamw, BENCH_FUSED, 'A', 4);
    assert_float_equal(a.first_micro, 8.0, 0.0);  /* r g, w acc */
    assert_float_equal(a.later_micro, 12.0, 0.0); /* r g, r+w acc */
    assert_float_equal(bm_update_inplace(adamw), 28.0, 0.0);
    assert_float_equal(a.final_step, 12.0 + 28.0, 0.0);
    bm_cycle c = cycle_of(adamw, BENCH_FUSED, 'C', 4);
    assert_float_equal(c.final_step, 32.0, 0.0); /* g, acc, p, m, v | p, m, v */
    bm_cycle b = cycle_of(adamw, BENCH_FUSED, 'B', 4);
    assert_float_equal(b.later_micro, 0.0, 0.0);
    assert_float_equal(b.cycle, 28.0, 0.0);
    /* hand-rolled: 12 per micro-step + 52 at update (with clipping) */
    bm_cycle u = cycle_of(adamw_clip, BENCH_UNFUSED, 'A', 4);
    assert_float_equal(u.later_micro, 12.0, 0.0);
    assert_float_equal(bm_handrolled_update(adamw_clip), 52.0, 0.0);
    assert_float_equal(u.cycle, 4 * 12.0 + 52.0, 0.0);
    /* without clipping: scal 1/k, update, zero fill */
    assert_float_equal(bm_handrolled_update(adamw), 8.0 + 28.0 + 4.0, 0.0);
    /* SGD with momentum and Lion keep one state: 4 + 8 + 8 */
    assert_float_equal(bm_update_inplace(sgd), 20.0, 0.0);
}

/* The ratios issue 6 quotes as bounds of the speed-up targets. */
static void test_bytes_target_bounds(void **state)
{
    (void)state;
    double fa = cycle_of(adamw_clip, BENCH_FUSED, 'A', 4).cycle;
    double ua = cycle_of(adamw_clip, BENCH_UNFUSED, 'A', 4).cycle;
    assert_float_equal(fa, 72.0, 0.0); /* norm fused into the last accumulate */
    assert_float_equal(ua, 100.0, 0.0);
    double fb = cycle_of(adamw_clip, BENCH_FUSED, 'B', 4).cycle;
    double ub = cycle_of(adamw_clip, BENCH_UNFUSED, 'B', 4).cycle;
    assert_float_equal(fb, 32.0, 0.0); /* norm pass 4 + update 28 */
    assert_float_equal(ub, 52.0, 0.0);
    /* path C with a norm runs as path A (src/cycle.c takes path C only
     * without statistics): the last accumulate (12) + the update in place
     * (28); with fp16 gradients 10 + 28; for k = 1, 8 + 28 */
    bm_cycle cc = cycle_of(adamw_clip, BENCH_FUSED, 'C', 4);
    bm_cycle ca = cycle_of(adamw_clip, BENCH_FUSED, 'A', 4);
    assert_float_equal(cc.final_step, 40.0, 0.0);
    assert_float_equal(cc.final_step, ca.final_step, 0.0);
    const bm_shape fp16_clip = {2, 2, 1, 1, 0.0, 0};
    assert_float_equal(cycle_of(fp16_clip, BENCH_FUSED, 'C', 4).final_step, 38.0, 0.0);
    assert_float_equal(cycle_of(adamw_clip, BENCH_FUSED, 'C', 1).cycle, 36.0, 0.0);
    /* the per_tensor variant moves what fused moves */
    assert_float_equal(cycle_of(adamw_clip, BENCH_PER_TENSOR, 'A', 4).cycle, fa, 0.0);
}

static void test_bytes_dtypes_and_k(void **state)
{
    (void)state;
    bm_cycle h = cycle_of(adamw_fp16, BENCH_FUSED, 'A', 4);
    assert_float_equal(h.first_micro, 6.0, 0.0);
    assert_float_equal(h.later_micro, 10.0, 0.0);
    assert_float_equal(cycle_of(adamw_fp16, BENCH_UNFUSED, 'A', 4).later_micro, 10.0, 0.0);
    assert_float_equal(cycle_of(adamw_fp16, BENCH_FUSED, 'C', 4).final_step, 30.0, 0.0);
    /* k = 1: the only micro-step is a first one */
    assert_float_equal(cycle_of(adamw, BENCH_FUSED, 'A', 1).cycle, 8.0 + 28.0, 0.0);
    assert_float_equal(cycle_of(adamw, BENCH_FUSED, 'C', 1).cycle, 4.0 + 24.0, 0.0);
    /* k = 2: first + final */
    assert_float_equal(cycle_of(adamw, BENCH_FUSED, 'A', 2).cycle, 8.0 + 40.0, 0.0);
    /* k = 8 on path A: 8 + 6 * 12 + 40 */
    assert_float_equal(cycle_of(adamw, BENCH_FUSED, 'A', 8).cycle, 120.0, 0.0);
    bm_cycle c;
    assert_int_equal(bm_cycle_bytes(adamw, BENCH_FUSED, 'A', 0, &c), -1);
    assert_int_equal(bm_cycle_bytes(adamw, BENCH_UNFUSED, 'C', 4, &c), -1);
    assert_int_equal(bm_cycle_bytes(adamw, BENCH_FUSED, 'X', 4, &c), -1);
}

static void test_memory_per_param(void **state)
{
    (void)state;
    bm_memory m = bm_memory_per_param(adamw, 4, 0, 0);
    assert_float_equal(m.total, 16.0, 0.0); /* docs/design.md: p, acc, m, v */
    assert_float_equal(bm_memory_per_param(adamw, 4, 0, 1).total, 20.0, 0.0);
    assert_float_equal(bm_memory_per_param(adamw_fp16, 4, 0, 1).total, 18.0, 0.0);
    assert_float_equal(bm_memory_per_param(sgd, 4, 0, 0).total, 12.0, 0.0);
    assert_float_equal(bm_memory_per_param(adamw, 2, 2, 0).total, 16.0, 0.0);
    /* the table of configs agrees with the shapes above */
    const bench_config *bc = bench_config_find("adamw_fp16_grads");
    assert_non_null(bc);
    assert_int_equal(bench_dtype_bytes(bc->grad_dtype), 2);
    assert_int_equal(bench_state_count(CLG_LION), 1);
    assert_true(bench_config_needs_stats(bench_config_find("adamw_clip_dls")));
    assert_false(bench_config_needs_stats(bench_config_find("adamw")));
    assert_null(bench_config_find("nope"));
}

/* The configurations follow clgrad.h's optimizers: each one's name starts
 * with its optimizer's name as the library spells it, and every optimizer
 * (numbered from 0, test_abi checks) has one, so that a new optimizer is
 * measured or this test fails. */
static void test_configs_cover_optimizers(void **state)
{
    (void)state;
    for (size_t i = 0; i < bench_config_count; i++) {
        const char *opt = clg_optimizer_name(bench_configs[i].optimizer);
        if (strncmp(bench_configs[i].name, opt, strlen(opt)) != 0)
            fail_msg("config %s measures %s", bench_configs[i].name, opt);
    }
    int n = 0;
    for (; strcmp(clg_optimizer_name((clg_optimizer)n), "unknown") != 0; n++) {
        int found = 0;
        for (size_t i = 0; i < bench_config_count; i++)
            found |= (int)bench_configs[i].optimizer == n;
        if (!found)
            fail_msg("no configuration measures %s", clg_optimizer_name((clg_optimizer)n));
        assert_true(bench_state_count((clg_optimizer)n) >= 1);
    }
    assert_true(n >= 4);
}

typedef struct step_model {
    uint64_t fixed;
    uint64_t per_param;
    uint64_t pad; /* tensors padded to this many elements */
} step_model;

static uint64_t step_total(uint64_t n, void *user)
{
    const step_model *s = user;
    uint64_t padded = (n + s->pad - 1) / s->pad * s->pad;
    return s->fixed + padded * s->per_param;
}

static void test_budget_arithmetic(void **state)
{
    (void)state;
    const uint64_t gib8 = 8ull << 30;
    /* 8 GiB / 16 B = 2^29 parameters exactly */
    assert_true(bm_max_params_linear(gib8, 0, 16.0, 16) == (1ull << 29));
    /* 8 GiB / 20 B = 429496729.6: floor, then a multiple of 16 */
    assert_true(bm_max_params_linear(gib8, 0, 20.0, 16) == 429496720ull);
    /* fixed overhead comes off the top */
    assert_true(bm_max_params_linear(gib8, 4096, 16.0, 16) == (1ull << 29) - 256);
    /* 18 B/param (fp16 grads) */
    assert_true(bm_max_params_linear(gib8, 0, 18.0, 16) == 477218576ull);
    assert_true(bm_max_params_linear(100, 200, 16.0, 16) == 0);

    /* the search agrees with the division on a linear model and is tight */
    step_model lin = {4096, 20, 1};
    uint64_t n = bm_max_params(gib8, step_total, &lin, 16);
    assert_true(n == bm_max_params_linear(gib8, 4096, 20.0, 16));
    assert_true(step_total(n, &lin) <= gib8);
    assert_true(step_total(n + 16, &lin) > gib8);
    /* padding makes the total a step function: still the largest fit */
    step_model padded = {1000, 16, 64};
    uint64_t budget = 1000 + 16 * 64 * 10 + 5;
    n = bm_max_params(budget, step_total, &padded, 16);
    assert_true(n == 640);
    assert_true(step_total(n, &padded) <= budget);
    assert_true(step_total(n + 16, &padded) > budget);
    /* nothing fits */
    assert_true(bm_max_params(500, step_total, &padded, 16) == 0);
}

static void test_summaries(void **state)
{
    (void)state;
    double odd[] = {5, 1, 3, 2, 4};
    bench_stat s = bench_summarize(odd, 5);
    assert_float_equal(s.median, 3.0, 0.0);
    assert_float_equal(s.q1, 2.0, 0.0);
    assert_float_equal(s.q3, 4.0, 0.0);
    assert_float_equal(s.min, 1.0, 0.0);
    assert_float_equal(s.max, 5.0, 0.0);
    double even[] = {4, 1, 3, 2};
    s = bench_summarize(even, 4);
    assert_float_equal(s.median, 2.5, 1e-12);
    assert_float_equal(s.q1, 1.75, 1e-12);
    assert_int_equal(bench_summarize(even, 0).count, 0);
    assert_int_equal(bench_calibrate_reps(1000, 100, 3, 50), 10);
    assert_int_equal(bench_calibrate_reps(1000, 900, 3, 50), 3);
    assert_int_equal(bench_calibrate_reps(1000, 1, 3, 50), 50);
    assert_int_equal(bench_calibrate_reps(1000, 0, 3, 50), 3);
}

static void test_parse_size(void **state)
{
    (void)state;
    assert_true(bench_parse_size("2^24") == (1ull << 24));
    assert_true(bench_parse_size("8G") == (8ull << 30));
    assert_true(bench_parse_size("8GiB") == (8ull << 30));
    assert_true(bench_parse_size("512M") == (512ull << 20));
    assert_true(bench_parse_size("12345") == 12345);
    assert_true(bench_parse_size("3^4") == 0);
    assert_true(bench_parse_size("2^x") == 0);
    assert_true(bench_parse_size("8Q") == 0);
    assert_true(bench_parse_size("") == 0);
    assert_true(bench_parse_size("-1") == 0);
    assert_true(bench_parse_size(" 5") == 0);
}

static bench_case *add(bench_report *r, bench_variant v, char path, char feed, double cycle_ms)
{
    bench_case *c = bench_report_add_case(r);
    assert_non_null(c);
    snprintf(c->optimizer, sizeof c->optimizer, "adamw_clip_dls");
    c->variant = v;
    c->path = path;
    c->feed = feed;
    c->clip = 1;
    c->n = 1000000;
    c->k = 4;
    c->tensors = 256;
    c->reps = 5;
    c->cycle_ms = (bench_stat){cycle_ms, cycle_ms, cycle_ms, cycle_ms, cycle_ms, 5};
    c->update_ms = c->cycle_ms;
    c->micro_ms = c->cycle_ms;
    c->cycle_bytes = 72.0;
    c->update_bytes = 40.0;
    c->micro_bytes = 12.0;
    c->triad_gbs = 20.0;
    bench_case_derive(c);
    return c;
}

/* Per-repetition fractions: each repetition against its own triad, so a
 * jump of the machine's bandwidth between repetitions cancels where the
 * ratio of medians does not. */
static void test_paired_fracs(void **state)
{
    (void)state;
    bench_case c = {0};
    c.n = 1000000;
    c.micro_bytes = 12.0;
    c.update_bytes = 24.0;
    c.cycle_bytes = 48.0;
    /* two states: triad 50 GB/s with 12 B in 0.4 ms (30 GB/s = 0.6), triad
     * 100 GB/s with 12 B in 0.2 ms (60 GB/s = 0.6); 3 slow reps, 2 fast */
    const double triad[] = {50, 100, 50, 100, 50};
    const double micro[] = {0.4, 0.2, 0.4, 0.2, 0.4};
    const double update[] = {0.8, 0.4, 0.8, 0.4, 0.8};
    const double cycle[] = {1.6, 0.8, 1.6, 0.8, 1.6};
    assert_int_equal(bench_case_paired_fracs(&c, micro, update, cycle, triad, 5), 0);
    assert_float_equal(c.micro_frac, 0.6, 1e-12);
    assert_float_equal(c.update_frac, 0.6, 1e-12);
    assert_float_equal(c.frac_of_triad, 0.6, 1e-12);
    assert_float_equal(c.frac_reps.min, 0.6, 1e-12);
    assert_float_equal(c.frac_reps.max, 0.6, 1e-12);
    assert_int_equal(c.frac_reps.count, 5);
    /* fast cycles in the majority but slow triads in the majority: the
     * ratio of medians is 60 GB/s / 50 GB/s = 1.2 (over 100%), the paired
     * median stays 0.6 */
    const double triad2[] = {50, 50, 50, 100, 100};
    const double micro2[] = {0.4, 0.2, 0.2, 0.2, 0.2};
    const double cycle2[] = {1.6, 0.8, 0.8, 0.8, 0.8};
    assert_int_equal(bench_case_paired_fracs(&c, micro2, update, cycle2, triad2, 5), 0);
    /* reps 1, 2 pair a fast cycle with a slow triad (1.2); the median of
     * {0.6, 1.2, 1.2, 0.6, 0.6} is 0.6 */
    assert_float_equal(c.micro_frac, 0.6, 1e-12);
    assert_float_equal(c.micro_frac_reps.max, 1.2, 1e-12);
}

/* A tiny report whose derived numbers are known. */
static void fill_report(bench_report *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->device.name, sizeof r->device.name, "test device");
    r->device.global_mem_bytes = 4ull << 30;
    r->device.max_alloc_bytes = 1ull << 31;
    r->k = 4;
    r->tensors = 256;
    r->budget_bytes = 8ull << 30;
    r->stream_n = 1 << 20;
    r->copy_gbs = (bench_stat){18, 17, 19, 16, 20, 3};
    r->triad_gbs = (bench_stat){20, 19, 21, 18, 22, 3};
    r->triad_classic_gbs = (bench_stat){15, 14, 16, 13, 17, 3};
    snprintf(r->triad_form, sizeof r->triad_form, "triad_inplace");
    r->stream_vw = 4;
    r->stream_local = 256;
    r->sweep = calloc(2, sizeof *r->sweep);
    assert_non_null(r->sweep);
    r->n_sweep = 2;
    r->sweep[0] = (bench_stream_trial){"triad", 4, 256, 15.0};
    r->sweep[1] = (bench_stream_trial){"triad_inplace", 4, 256, 20.0};
    bench_case *f = add(r, BENCH_FUSED, 'A', 'A', 7.2);
    /* 72 B * 1e6 / 7.2 ms = 10 GB/s = half of the triad */
    assert_float_equal(f->gbs, 10.0, 1e-9);
    assert_float_equal(f->frac_of_triad, 0.5, 1e-12);
    add(r, BENCH_UNFUSED, '-', 'A', 14.4);
    add(r, BENCH_PER_TENSOR, '-', 'A', 9.0);
    add(r, BENCH_FUSED, 'B', 'B', 4.0); /* no partners: no speed-up row */
    assert_int_equal(bench_report_speedups(r), 0);
    bench_memory *m = bench_report_add_memory(r);
    snprintf(m->config, sizeof m->config, "adamw");
    snprintf(m->path, sizeof m->path, "B");
    m->bytes_per_param = 16;
    m->max_params_in_budget = 1ull << 29;
    bench_launch_check *l = bench_report_add_launch_check(r);
    snprintf(l->optimizer, sizeof l->optimizer, "adamw");
    l->path = 'A';
    l->launches_1 = l->launches_many = 3;
    l->tensors_many = 256;
    bench_report_note(r, "a note %d", 1);
    bench_gemm *g = bench_report_add_gemm(r);
    *g = (bench_gemm){"fc1 forward", 32, 512, 784, 'N', 'T', 1, "XgemmDirect", "Xgemm",
                      {1.7, 1.6, 1.8, 1.5, 1.9, 3}, {0.85, 0.8, 0.9, 0.7, 1.0, 3}, 15.1, 30.2,
                      2.0, 700.0};
    r->gemm_micro_batch = 32;
    r->gemm_rounds = 3;
    r->gemm_step_ms_default = 1.7;
    r->gemm_step_ms_tuned = 0.85;
}

static const char *const case_keys[] = {
    "optimizer", "variant", "path", "clip", "n", "k", "micro_ms", "update_ms", "cycle_ms",
    "gbs", "frac_of_triad", "launches_per_update", "cycle_ms_min", "cycle_ms_max",
    "micro_ms_min", "update_ms_max", "triad_gbs", "feed", "tensors", "reps",
    "frac_of_triad_q1", "micro_frac_of_triad_max", "update_frac_of_triad_min", NULL};
static const char *const speedup_keys[] = {"optimizer", "path", "clip", "vs_unfused",
                                           "vs_per_tensor", NULL};
static const char *const memory_keys[] = {"config", "bytes_per_param", "max_params_in_budget",
                                          "path", NULL};
static const char *const device_keys[] = {"name", "vendor", "driver", "global_mem_bytes",
                                          "max_alloc_bytes", NULL};
static const char *const stream_keys[] = {
    "copy_gbs", "triad_gbs", "copy_gbs_min", "triad_gbs_max", "triad_form", "vector_width",
    "work_group_size", "triad_classic_gbs", "triad_classic_gbs_q1", "classic_vector_width",
    "copy_vector_width", "sweep", NULL};
static const char *const sweep_keys[] = {"form", "vector_width", "work_group_size", "gbs",
                                         NULL};
static const char *const gemm_keys[] = {
    "role", "m", "n", "k", "transa", "transb", "count", "kernel_default", "kernel_tuned",
    "ms_default", "ms_tuned", "ms_tuned_min", "gflops_default", "gflops_tuned", "speedup",
    "gflops_triad_bound", NULL};
static const char *const gemm_tuning_keys[] = {"tuned", "file", "micro_batch", "rounds",
                                               "step_ms_default", "step_ms_tuned", "speedup",
                                               NULL};

static void require_keys(const cJSON *o, const char *const *keys, const char *where)
{
    for (const char *const *k = keys; *k; k++) {
        if (!cJSON_HasObjectItem(o, *k))
            fail_msg("%s: missing field \"%s\"", where, *k);
    }
}

/* Every number finite, no null anywhere (cJSON writes NaN as null). */
static void require_finite(const cJSON *item, const char *where)
{
    if (cJSON_IsNull(item))
        fail_msg("%s: null value (a NaN or infinity was written)", where);
    if (cJSON_IsNumber(item) && !isfinite(item->valuedouble))
        fail_msg("%s: non-finite number", where);
    for (const cJSON *c = item->child; c; c = c->next)
        require_finite(c, c->string ? c->string : where);
}

static cJSON *load_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    text[len] = '\0';
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        fail_msg("%s is not valid JSON", path);
    return root;
}

static int is_triad_form(const char *form)
{
    return strcmp(form, "triad") == 0 || strcmp(form, "triad_nt") == 0
           || strcmp(form, "triad_inplace") == 0;
}

/* The STREAM sweep: every entry complete, and the reference triad is the
 * shape of the highest median among the triad forms (the choice rule). */
static void check_sweep(const cJSON *stream)
{
    const cJSON *sweep = cJSON_GetObjectItem(stream, "sweep");
    assert_true(cJSON_IsArray(sweep));
    assert_true(cJSON_GetArraySize(sweep) >= 2);
    const char *form = cJSON_GetObjectItem(stream, "triad_form")->valuestring;
    assert_non_null(form);
    assert_true(is_triad_form(form));
    double vw = cJSON_GetObjectItem(stream, "vector_width")->valuedouble;
    double wg = cJSON_GetObjectItem(stream, "work_group_size")->valuedouble;
    double best = -1.0, chosen = -1.0;
    const cJSON *t;
    cJSON_ArrayForEach(t, sweep)
    {
        require_keys(t, sweep_keys, "stream.sweep");
        const char *f = cJSON_GetObjectItem(t, "form")->valuestring;
        double g = cJSON_GetObjectItem(t, "gbs")->valuedouble;
        assert_true(g > 0.0);
        if (!is_triad_form(f))
            continue;
        if (g > best)
            best = g;
        if (strcmp(f, form) == 0 && cJSON_GetObjectItem(t, "vector_width")->valuedouble == vw
            && cJSON_GetObjectItem(t, "work_group_size")->valuedouble == wg)
            chosen = g;
    }
    assert_true(chosen > 0.0);
    assert_float_equal(chosen, best, 0.0);
}

/* Checks the schema of issue 6 and returns the number of cases. */
static int check_schema(const cJSON *root)
{
    require_finite(root, "root");
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(root, "stream");
    assert_true(cJSON_IsObject(device));
    assert_true(cJSON_IsObject(stream));
    require_keys(device, device_keys, "device");
    require_keys(stream, stream_keys, "stream");
    assert_true(cJSON_GetObjectItem(stream, "triad_gbs")->valuedouble > 0.0);
    check_sweep(stream);
    const char *lists[] = {"cases", "speedup", "memory", "launches", "notes", "gemm"};
    for (size_t i = 0; i < 6; i++)
        assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, lists[i])));
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "gemm"))
    {
        require_keys(it, gemm_keys, "gemm");
        assert_true(cJSON_GetObjectItem(it, "gflops_default")->valuedouble > 0.0);
        assert_true(cJSON_GetObjectItem(it, "gflops_tuned")->valuedouble > 0.0);
        const char *ta = cJSON_GetObjectItem(it, "transa")->valuestring;
        assert_true(strcmp(ta, "N") == 0 || strcmp(ta, "T") == 0);
    }
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(root, "gemm_tuning");
    assert_true(cJSON_IsObject(gt));
    require_keys(gt, gemm_tuning_keys, "gemm_tuning");
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(gt, "tuned")));
    int n_cases = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "cases"))
    {
        require_keys(it, case_keys, "case");
        const char *v = cJSON_GetObjectItem(it, "variant")->valuestring;
        const char *p = cJSON_GetObjectItem(it, "path")->valuestring;
        assert_true(strcmp(v, "fused") == 0 || strcmp(v, "unfused") == 0
                    || strcmp(v, "per_tensor") == 0);
        if (strcmp(v, "fused") == 0)
            assert_true(strcmp(p, "A") == 0 || strcmp(p, "B") == 0 || strcmp(p, "C") == 0);
        else
            assert_string_equal(p, "-");
        assert_true(cJSON_IsBool(cJSON_GetObjectItem(it, "clip")));
        assert_true(cJSON_GetObjectItem(it, "cycle_ms")->valuedouble > 0.0);
        n_cases++;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "speedup"))
        require_keys(it, speedup_keys, "speedup");
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "memory"))
        require_keys(it, memory_keys, "memory");
    return n_cases;
}

static char tmpdir[256];

static void make_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_bench_XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
}

/* The bench's three outputs, named in a fresh tmpdir. */
typedef struct bench_outputs {
    char json[600], csv[600], png[600];
} bench_outputs;

/* make_tmpdir(), and <tmpdir>/<stem>.json, .csv and .png. */
static bench_outputs fresh_outputs(const char *stem)
{
    make_tmpdir();
    bench_outputs o;
    snprintf(o.json, sizeof o.json, "%s/%s.json", tmpdir, stem);
    snprintf(o.csv, sizeof o.csv, "%s/%s.csv", tmpdir, stem);
    snprintf(o.png, sizeof o.png, "%s/%s.png", tmpdir, stem);
    return o;
}

/* The number of lines (newlines) of the file at path. */
static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    return lines;
}

static void test_json_schema(void **state)
{
    (void)state;
    bench_report r;
    fill_report(&r);
    bench_outputs out = fresh_outputs("out");
    assert_int_equal(bench_write_json(&r, out.json), 0);
    cJSON *root = load_json(out.json);
    assert_int_equal(check_schema(root), 4);
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "gemm"), 0);
    assert_int_equal(cJSON_GetObjectItem(g0, "k")->valueint, 784);
    assert_float_equal(cJSON_GetObjectItem(g0, "gflops_tuned")->valuedouble, 30.2, 1e-12);
    const cJSON *sp = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "speedup"), 0);
    assert_non_null(sp);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "speedup")), 1);
    assert_float_equal(cJSON_GetObjectItem(sp, "vs_unfused")->valuedouble, 2.0, 1e-12);
    assert_float_equal(cJSON_GetObjectItem(sp, "vs_per_tensor")->valuedouble, 1.25, 1e-12);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    assert_float_equal(cJSON_GetObjectItem(c0, "gbs")->valuedouble, 10.0, 1e-9);
    const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "memory"), 0);
    assert_true(cJSON_GetObjectItem(m0, "max_params_in_budget")->valuedouble
                == (double)(1ull << 29));
    cJSON_Delete(root);

    /* a NaN must be caught by the finiteness check (the check can fail) */
    r.cases[0].gbs = NAN;
    assert_int_equal(bench_write_json(&r, out.json), 0);
    root = load_json(out.json);
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"),
                                                            0),
                                         "gbs");
    assert_true(cJSON_IsNull(g) || !isfinite(g->valuedouble));
    cJSON_Delete(root);

    assert_int_equal(bench_write_csv(&r, out.csv), 0);
    assert_int_equal(count_lines(out.csv), 1 + 4);
    remove(out.csv);
    remove(out.json);
    rmdir(tmpdir);
    bench_report_free(&r);
}

/* Output paths are checked when the options are parsed, before minutes of
 * measurements: a missing directory, a directory, two outputs in one file
 * (issue 14). */
static int parse_bench(const char *a, const char *b, const char *c, const char *d)
{
    char *argv[6] = {"clgrad-bench", (char *)a, (char *)b, (char *)c, (char *)d, NULL};
    int argc = 1;
    while (argc < 5 && argv[argc])
        argc++;
    bench_options o;
    return bench_parse_options(&o, argc, argv);
}

static void test_output_paths(void **state)
{
    (void)state;
    bench_outputs out = fresh_outputs("b");
    char alias[700];
    assert_int_equal(parse_bench("--json", out.json, "--csv", out.csv), 0);
    assert_int_equal(parse_bench("--json", "/nonexistent-clgrad/b.json", NULL, NULL), -1);
    assert_int_equal(parse_bench("--csv", "/nonexistent-clgrad/b.csv", NULL, NULL), -1);
    assert_int_equal(parse_bench("--plot", "/nonexistent-clgrad/b.png", NULL, NULL), -1);
    assert_int_equal(parse_bench("--json", tmpdir, NULL, NULL), -1);
    assert_int_equal(parse_bench("--json", out.json, "--csv", out.json), -1);
    snprintf(alias, sizeof alias, "%s/../%s/b.json", tmpdir, strrchr(tmpdir, '/') + 1);
    assert_int_equal(parse_bench("--json", out.json, "--plot", alias), -1);
    rmdir(tmpdir);
}

/* --dist: its own sizes and k (2^22, 2^24 x 4, 8; --quick 2^20 x 4; --k K
 * alone), and refused with what it does not write (--csv, --plot) or run. */
static void test_dist_options(void **state)
{
    (void)state;
    bench_options o;
    char *full[] = {"clgrad-bench", "--dist", NULL};
    assert_int_equal(bench_parse_options(&o, 2, full), 0);
    assert_true(o.dist);
    assert_int_equal(o.n_sizes, 2);
    assert_true(o.sizes[0] == 1ull << 22 && o.sizes[1] == 1ull << 24);
    assert_int_equal(o.n_dist_k, 2);
    assert_true(o.dist_k[0] == 4 && o.dist_k[1] == 8);
    char *quick[] = {"clgrad-bench", "--quick", "--dist", NULL};
    assert_int_equal(bench_parse_options(&o, 3, quick), 0);
    assert_true(o.n_sizes == 1 && o.sizes[0] == 1ull << 20 && o.n_dist_k == 1
                && o.dist_k[0] == 4);
    char *one[] = {"clgrad-bench", "--dist", "--k", "6", "--sizes", "2^21", NULL};
    assert_int_equal(bench_parse_options(&o, 6, one), 0);
    assert_true(o.n_sizes == 1 && o.sizes[0] == 1ull << 21 && o.n_dist_k == 1
                && o.dist_k[0] == 6);
    char *plain[] = {"clgrad-bench", NULL};
    assert_int_equal(bench_parse_options(&o, 1, plain), 0);
    assert_false(o.dist);
    assert_int_equal(parse_bench("--dist", "--csv", "x.csv", NULL), -1);
    assert_int_equal(parse_bench("--dist", "--plot", "x.png", NULL), -1);
    assert_int_equal(parse_bench("--dist", "--e2e", NULL, NULL), -1);
}

/* A --plot that cannot be written is said so, not blamed on gnuplot, and
 * leaves no temporary files behind (issue 14). */
/* The bytes model of the smaller states (docs/design.md, section 2): the
 * Q8 AdamW update reads acc 4, p 4, m 1, v 1 and both absmax (4 / 256 each)
 * and writes p, m, v and the absmax: 16.0625 bytes per parameter. */
static void test_bytes_state_dtypes(void **state)
{
    (void)state;
    bm_shape q8 = {2, 4, 0, 0, bm_state_bytes(CLG_Q8), 4};
    bm_shape q4 = {2, 4, 0, 0, bm_state_bytes(CLG_Q4), 4};
    bm_shape bf = {2, 4, 0, 0, bm_state_bytes(CLG_BF16), 4};
    assert_float_equal(bm_update_inplace(q8), 4 + 8 + 2 * 2 * (1 + 4.0 / 256), 1e-12);
    assert_float_equal(bm_update_inplace(q8), 16.0625, 1e-12);
    assert_float_equal(bm_update_inplace(q4), 4 + 8 + 2 * 2 * (0.5 + 4.0 / 128), 1e-12);
    assert_float_equal(bm_update_inplace(bf), 20.0, 1e-12);
    assert_float_equal(bm_update_inplace(adamw), 28.0, 1e-12);
    assert_float_equal(bm_memory_per_param(q8, 2, 0, 0).total, 4 + 2 + 2 * (1 + 4.0 / 256), 1e-12);
    /* each configuration's shape follows its state dtype */
    const bench_config *c = bench_config_find("adamw_q8");
    assert_non_null(c);
    assert_float_equal(bench_config_shape(c).state_bytes, 1 + 4.0 / 256, 1e-12);
    assert_false(bench_config_has_handrolled(c));
    assert_true(bench_config_has_handrolled(bench_config_find("adamw")));
}

/* The planner: 64 configurations, most bytes first; the Q8 + bf16
 * accumulator + fp32 master weights row (path B: no gradient buffer) is
 * 8.03 bytes per parameter, over a billion parameters in 8 GiB; every
 * largest model fits and 1024 more would not; the JSON has its list. */
static void test_fit(void **state)
{
    (void)state;
    bench_fit *f = calloc(1, sizeof *f);
    assert_non_null(f);
    uint64_t gib = 1ull << 30;
    assert_int_equal(bench_fit_compute(f, 8 * gib, 8 * gib, 4 * gib, 1), -1);
    assert_int_equal(bench_fit_compute(f, 8 * gib, 0, 4 * gib, 1), 0);
    assert_int_equal(f->n, 64);
    const bench_fit_row *q8 = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const bench_fit_row *r = &f->rows[i];
        if (i)
            assert_true(r->bytes_per_param <= f->rows[i - 1].bytes_per_param);
        if (!strcmp(r->config, "q8 states, bf16 acc, fp32 master, path B"))
            q8 = r;
        double used = r->bytes_per_param * (double)r->max_params + (double)r->fixed_bytes;
        double more = r->bytes_per_param * (double)(r->max_params + 1024) + (double)r->fixed_bytes;
        assert_true(used <= (double)(8 * gib) + 1.0);
        assert_true(more > (double)(8 * gib) - 4096.0 * r->bytes_per_param);
    }
    assert_non_null(q8);
    assert_float_equal(q8->bytes_per_param, 4 + 2 + 2 * (1 + 4.0 / 256) + 12.0 / 8192, 1e-9);
    assert_true(q8->max_params >= 1000000000ull);
    assert_int_equal(q8->max_params, bench_fit_max_params(q8, 8 * gib, 4 * gib));
    /* the largest row: fp32 states with a gradient buffer and a copy */
    assert_float_equal(f->rows[0].bytes_per_param, 22.0 + 12.0 / 8192, 1e-9);
    /* the choice rounds least, not the most bytes: 0.5 B fits all-fp32 on
     * path B (16 B/param); 1 B needs bf16 somewhere and keeps fp32 master
     * weights (Q8 states + bf16 acc, path B); 1.3 B only bf16 master */
    const bench_fit_row *c = bench_fit_choose(f, 500000000ull);
    assert_non_null(c);
    assert_string_equal(c->config, "fp32 states, fp32 acc, fp32 master, path B");
    c = bench_fit_choose(f, 1000000000ull);
    assert_non_null(c);
    assert_string_equal(c->config, "q8 states, bf16 acc, fp32 master, path B");
    c = bench_fit_choose(f, 1300000000ull);
    assert_non_null(c);
    assert_int_equal(c->master_dtype, CLG_BF16);
    assert_null(bench_fit_choose(f, 2000000000ull));

    /* ZeRO-1 over 4 cards: per card, each holding a quarter of the states
     * (clg_model_estimate_shard); what ZeRO-1 does not hold yet left out */
    bench_fit *z = calloc(1, sizeof *z);
    assert_non_null(z);
    assert_int_equal(bench_fit_compute(z, 8 * gib, 0, 4 * gib, 0), -1);
    assert_int_equal(bench_fit_compute(z, 8 * gib, 0, 4 * gib, 4), 0);
    assert_int_equal(z->n, 8); /* fp32, bf16, Q8 and Q4 states, paths B and A/C */
    const bench_fit_row *zb = NULL, *zq = NULL;
    for (size_t i = 0; i < z->n; i++) {
        const bench_fit_row *r = &z->rows[i];
        assert_int_equal(r->shards, 4);
        assert_int_equal(r->acc_dtype, CLG_FP32);
        assert_int_equal(r->master_dtype, CLG_FP32);
        assert_int_equal(r->copy_dtype, CLG_DTYPE_NONE);
        if (!strcmp(r->config, "fp32 states, fp32 acc, fp32 master, path B"))
            zb = r;
        if (!strcmp(r->config, "q8 states, fp32 acc, fp32 master, path B"))
            zq = r;
    }
    assert_non_null(zb);
    assert_non_null(zq);
    /* params 4 + acc 4 + (m, v) a Q8 code and 4/256 of an absmax each / 4
     * cards, and the partials */
    assert_float_equal(zq->bytes_per_param, 8.0 + 2.0 * (1.0 + 4.0 / 256) / 4 + 12.0 / 8192,
                       1e-9);
    /* params 4 + acc 4 + (m, v) 8 / 4 cards, and the partials */
    assert_float_equal(zb->bytes_per_param, 10.0 + 12.0 / 8192, 1e-9);
    assert_true(zb->max_params > 800000000ull); /* against 0.54 B on one card */
    free(z);

    make_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/fit.json", tmpdir);
    assert_int_equal(bench_fit_write_json(f, path), 0);
    cJSON *root = load_json(path);
    cJSON *list = cJSON_GetObjectItem(root, "fit");
    assert_true(cJSON_IsArray(list));
    assert_int_equal(cJSON_GetArraySize(list), 64);
    static const char *const fields[] = {"config", "state_dtype", "acc_dtype", "master_dtype",
                                         "bytes_per_param", "max_params", "path"};
    cJSON *row = cJSON_GetArrayItem(list, 0);
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
        assert_non_null(cJSON_GetObjectItem(row, fields[k]));
    assert_string_equal(cJSON_GetObjectItem(row, "state_dtype")->valuestring, "fp32");
    cJSON_Delete(root);
    remove(path);
    assert_int_equal(rmdir(tmpdir), 0);
    free(f);
}

static void test_plot_bad_path(void **state)
{
    (void)state;
    bench_report r;
    fill_report(&r);
    make_tmpdir();
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", tmpdir, 1);
    assert_int_equal(bench_write_plot(&r, "/nonexistent-clgrad/plot.png"), -1);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    /* tmpdir is empty: rmdir succeeds only then */
    assert_int_equal(rmdir(tmpdir), 0);
    bench_report_free(&r);
}

/* ------------------------------------------------------- --quick smoke run */

static const char *bench_exe;

static int run_bench(const char *json, const char *csv, const char *png)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(bench_exe, bench_exe, "--quick", "--json", json, "--csv", csv, "--plot", png,
              (char *)NULL);
        _exit(127);
    }
    int status;
    assert_true(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* clgrad's kernels launched per tensor: every per_tensor case launches
 * exactly `tensors` times what the fused case of the same config fed the
 * same way launches (one model per tensor, each with the fused launches). */
static void check_per_tensor_launches(const cJSON *root)
{
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    const cJSON *pt, *f;
    int checked = 0;
    cJSON_ArrayForEach(pt, cases)
    {
        if (strcmp(cJSON_GetObjectItem(pt, "variant")->valuestring, "per_tensor") != 0)
            continue;
        const char *opt = cJSON_GetObjectItem(pt, "optimizer")->valuestring;
        const char *feed = cJSON_GetObjectItem(pt, "feed")->valuestring;
        double tensors = cJSON_GetObjectItem(pt, "tensors")->valuedouble;
        assert_true(tensors > 1.0);
        cJSON_ArrayForEach(f, cases)
        {
            if (strcmp(cJSON_GetObjectItem(f, "variant")->valuestring, "fused") != 0
                || strcmp(cJSON_GetObjectItem(f, "optimizer")->valuestring, opt) != 0
                || strcmp(cJSON_GetObjectItem(f, "path")->valuestring, feed) != 0)
                continue;
            double one = cJSON_GetObjectItem(f, "launches_per_update")->valuedouble;
            double many = cJSON_GetObjectItem(pt, "launches_per_update")->valuedouble;
            assert_true(one >= 1.0);
            if (many != tensors * one)
                fail_msg("%s per_tensor feed %s: %.0f launches per update, expected %.0f x %.0f",
                         opt, feed, many, tensors, one);
            checked++;
        }
    }
    /* per config and feed, less fp16 gradients on path B */
    assert_int_equal(checked, 9 * 2 - 1);
}

static void test_quick_run(void **state)
{
    (void)state;
    bench_outputs out = fresh_outputs("quick");
    int rc = run_bench(out.json, out.csv, out.png);
    if (rc == 77) {
        fprintf(stderr, "test_bench: NO OPENCL PLATFORM: smoke run skipped\n");
        exit(77);
    }
    assert_int_equal(rc, 0);

    cJSON *root = load_json(out.json);
    int n_cases = check_schema(root);
    /* 6 fp32-state configs x 7 runs, less path B of fp16 gradients (3
     * runs), and 3 smaller-state configs x 5 runs (no hand-rolled baseline:
     * bench_config_has_handrolled) */
    assert_int_equal(n_cases, 6 * 7 - 3 + 3 * 5);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(root, "quick")));
    /* without --dist nothing of MPI runs: the dist list is there, empty */
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(root, "dist");
    assert_true(cJSON_IsArray(dist));
    assert_int_equal(cJSON_GetArraySize(dist), 0);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(root, "speedup")) >= 12);
    /* 9 configs x 2 (their own path and path B) */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "memory")), 9 * 2);
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "memory"))
        assert_true(cJSON_GetObjectItem(it, "max_params_in_budget")->valuedouble > 0.0);
    /* launches of the fused cycle do not grow with the tensor count */
    int n_launch = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "launches"))
    {
        double one = cJSON_GetObjectItem(it, "launches_1_tensor")->valuedouble;
        double many = cJSON_GetObjectItem(it, "launches_many_tensors")->valuedouble;
        assert_true(one >= 1.0);
        assert_float_equal(one, many, 0.0);
        n_launch++;
    }
    assert_int_equal(n_launch, 9 * 3);
    check_per_tensor_launches(root);
    /* clgrad-train's 8 GEMM shapes, also in --quick mode */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "gemm")), 8);
    cJSON_Delete(root);

    assert_int_equal(count_lines(out.csv), 1 + n_cases);

    FILE *f = fopen(out.png, "rb");
    assert_non_null(f);
    unsigned char magic[8] = {0};
    assert_int_equal(fread(magic, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(magic, "\x89PNG\r\n\x1a\n", 8);
    remove(out.json);
    remove(out.csv);
    remove(out.png);
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--smoke") == 0) {
        bench_exe = argv[2];
        const struct CMUnitTest smoke[] = {cmocka_unit_test(test_quick_run)};
        return cmocka_run_group_tests(smoke, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_design_table), cmocka_unit_test(test_bytes_target_bounds),
        cmocka_unit_test(test_bytes_dtypes_and_k), cmocka_unit_test(test_memory_per_param),
        cmocka_unit_test(test_configs_cover_optimizers),
        cmocka_unit_test(test_budget_arithmetic),  cmocka_unit_test(test_summaries),
        cmocka_unit_test(test_parse_size),         cmocka_unit_test(test_json_schema),
        cmocka_unit_test(test_paired_fracs),
        cmocka_unit_test(test_output_paths),       cmocka_unit_test(test_plot_bad_path),
        cmocka_unit_test(test_dist_options),
        cmocka_unit_test(test_bytes_state_dtypes),  cmocka_unit_test(test_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
