/* test_abi.c - the structs that grow (clg_config, clg_stats,
 * clg_model_plan, clg_device_info) against consumers built with another
 * layout, the runtime version, and the names of the dtypes and optimizers.
 *
 * Each caller's struct is placed so that it ends exactly at a page that is
 * mapped PROT_NONE: a library that read or wrote one byte past the caller's
 * struct_size would crash the test, not pass it. An older consumer is
 * modelled by a struct with the fields of the first sized layout only
 * (clg_stats without the fields added in 0.2); a newer one by a struct with
 * bytes the library does not know. */
#include "clg_layout.h"
#include "clgrad.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------ guard pages */

typedef struct guarded {
    unsigned char *map;
    size_t map_size;
    void *obj; /* size bytes, ending where the guard page starts */
} guarded;

static guarded guarded_alloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t span = (size + page - 1) / page * page;
    guarded g;
    g.map_size = span + page;
    g.map = mmap(NULL, g.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g.map != MAP_FAILED);
    assert_int_equal(mprotect(g.map + span, page, PROT_NONE), 0);
    g.obj = g.map + span - size;
    /* a pattern, so that bytes the library must not write can be checked */
    memset(g.map, 0xA5, span);
    return g;
}

static void guarded_free(guarded *g)
{
    munmap(g->map, g->map_size);
}

/* The fields of clg_stats' first sized layout, as a consumer built against
 * it declares them. */
typedef struct stats_v1 {
    size_t struct_size;
    uint64_t updates, micro_steps, skipped_updates, skipped_micro_steps;
    float lr, grad_norm, clip_coef, loss_scale, weight_sum;
    int last_nonfinite;
    float noise_scale, noise_g2, noise_trace;
} stats_v1;

_Static_assert(offsetof(stats_v1, noise_trace) == offsetof(clg_stats, noise_trace),
               "stats_v1 must be a prefix of clg_stats");
_Static_assert(offsetof(stats_v1, last_nonfinite) == offsetof(clg_stats, last_nonfinite),
               "stats_v1 must be a prefix of clg_stats");
_Static_assert(sizeof(stats_v1) <= offsetof(clg_stats, cycles),
               "stats_v1 ends before the fields added later");

/* A small finalized model with two applied updates on path B. */
static clg_model *small_model(const clg_config *cfg)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, cfg, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", 3000, 0, &t));
    OK(clg_model_finalize(m));
    tu_upload_uniform_params(m, 7);
    return m;
}

static void run_updates(clg_model *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        OK(clg_step(m, NULL, 1.0f, NULL, NULL));
}

/* ------------------------------------------------------------ version */

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(clg_version(), CLGRAD_VERSION_STRING);
    assert_int_equal(clg_version_number(), CLGRAD_VERSION_NUMBER);
    assert_int_equal(clg_version_number(), CLGRAD_VERSION_MAJOR * 10000 +
                                               CLGRAD_VERSION_MINOR * 100 + CLGRAD_VERSION_PATCH);
    assert_int_equal(clg_abi_version(), CLGRAD_ABI_VERSION);
    assert_true(CLGRAD_ABI_VERSION >= 1);
}

/* The names that flags, checkpoints and tables print, one per dtype; an
 * out-of-range value is "none", never NULL. */
static void test_dtype_names(void **state)
{
    (void)state;
    static const struct {
        clg_dtype dtype;
        const char *name;
    } names[] = {{CLG_FP32, "fp32"}, {CLG_FP16, "fp16"}, {CLG_BF16, "bf16"},
                 {CLG_DTYPE_NONE, "none"}, {CLG_Q8, "q8"}, {CLG_Q4, "q4"},
                 {(clg_dtype)99, "none"}, {(clg_dtype)-1, "none"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_string_equal(clg_dtype_name(names[i].dtype), names[i].name);
}

/* The same for the optimizers; "unknown" for anything else. */
static void test_optimizer_names(void **state)
{
    (void)state;
    static const struct {
        clg_optimizer optimizer;
        const char *name;
    } names[] = {{CLG_SGD, "sgd"}, {CLG_ADAM, "adam"}, {CLG_ADAMW, "adamw"}, {CLG_LION, "lion"},
                 {(clg_optimizer)99, "unknown"}, {(clg_optimizer)-1, "unknown"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_string_equal(clg_optimizer_name(names[i].optimizer), names[i].name);
}

/* Every member of clg_optimizer and of clg_dtype, as clgrad.h lists them
 * (clg_layout.h's lists, generated from the header, which also give
 * src/status.c the names), has a name of its own: none is the fallback and
 * no two are equal (CLG_FOO and CLG_DTYPE_FOO would both be "foo"). The
 * tables above are the independent record of the names already spelled in
 * flags and checkpoints. */
static void test_every_member_named(void **state)
{
    (void)state;
#define OPTIMIZER(c_name, cl_name, name) clg_optimizer_name(c_name),
#define DTYPE(c_name, cl_name, name) clg_dtype_name(c_name),
    const char *const optimizers[] = {CLG_LAYOUT_OPTIMIZERS(OPTIMIZER)};
    const char *const dtypes[] = {CLG_LAYOUT_DTYPES(DTYPE)};
#undef OPTIMIZER
#undef DTYPE
    const size_t n_opt = sizeof optimizers / sizeof optimizers[0];
    const size_t n_dt = sizeof dtypes / sizeof dtypes[0];
    int nones = 0;
    for (size_t i = 0; i < n_opt; i++) {
        assert_string_not_equal(optimizers[i], "unknown");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(optimizers[i], optimizers[j]);
    }
    /* numbered 0..n-1, so that a client may walk them until "unknown"
     * (clgrad-bench's test does) */
#define VALUE(c_name, cl_name, name) (int)(c_name),
    const int values[] = {CLG_LAYOUT_OPTIMIZERS(VALUE)};
#undef VALUE
    for (size_t i = 0; i < n_opt; i++)
        assert_true(values[i] >= 0 && (size_t)values[i] < n_opt);
    assert_string_equal(clg_optimizer_name((clg_optimizer)n_opt), "unknown");
    for (size_t i = 0; i < n_dt; i++) {
        nones += !strcmp(dtypes[i], "none"); /* CLG_DTYPE_NONE's own name */
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(dtypes[i], dtypes[j]);
    }
    assert_int_equal(nones, 1);
}

/* ------------------------------------------------------------ clg_config */

static void test_config_exact_size_at_page_end(void **state)
{
    (void)state;
    guarded g = guarded_alloc(sizeof(clg_config));
    clg_config *c = g.obj;
    OK(clg_config_init_sized(c, sizeof *c, CLG_ADAMW));
    assert_int_equal(c->struct_size, sizeof(clg_config));
    assert_float_equal(c->lr, 1e-3f, 0.0f);
    assert_float_equal(c->weight_decay, 1e-2f, 0.0f);
    clg_model *m = small_model(c); /* reads it: crashes if past the end */
    assert_int_equal(clg_model_get_config(m)->struct_size, sizeof(clg_config));
    clg_model_plan *plan_at_end;
    guarded gp = guarded_alloc(sizeof(clg_model_plan));
    plan_at_end = gp.obj;
    *plan_at_end = clg_model_plan_init();
    OK(clg_model_estimate(c, 1000, plan_at_end));
    assert_true(plan_at_end->params == 4000);
    OK(clg_model_memory(m, plan_at_end));
    assert_true(plan_at_end->total > 0);
    clg_model_destroy(m);
    guarded_free(&gp);
    guarded_free(&g);
}

static void test_config_defaults_match_header(void **state)
{
    (void)state;
    /* the values the header documents, optimizer by optimizer */
    const struct {
        clg_optimizer opt;
        float lr, beta2, wd;
    } want[] = {
        {CLG_SGD, 1e-2f, 0.999f, 0.0f},
        {CLG_ADAM, 1e-3f, 0.999f, 0.0f},
        {CLG_ADAMW, 1e-3f, 0.999f, 1e-2f},
        {CLG_LION, 1e-4f, 0.99f, 0.0f},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        clg_config c = clg_config_init(want[i].opt);
        assert_int_equal(c.struct_size, sizeof c);
        assert_float_equal(c.lr, want[i].lr, 0.0f);
        assert_float_equal(c.beta1, 0.9f, 0.0f);
        assert_float_equal(c.beta2, want[i].beta2, 0.0f);
        assert_float_equal(c.eps, 1e-8f, 0.0f);
        assert_float_equal(c.weight_decay, want[i].wd, 0.0f);
        assert_int_equal(c.accum_steps, 1);
        assert_float_equal(c.loss_scale_init, 65536.0f, 0.0f);
        assert_float_equal(c.loss_scale_max, 16777216.0f, 0.0f);
        assert_int_equal(c.loss_scale_interval, 2000);
        assert_float_equal(c.noise_scale_ema, 0.9f, 0.0f);
    }
    /* an unknown optimizer: no config (struct_size 0), refused by create */
    clg_config bad = clg_config_init((clg_optimizer)9);
    assert_int_equal(bad.struct_size, 0);
    clg_model *m = NULL;
    assert_int_equal(clg_model_create(tu_ctx, &bad, &m), CLG_ERR_INVALID_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(clg_last_error(tu_ctx), "struct_size"));
}

static void test_config_too_small_is_refused(void **state)
{
    (void)state;
    clg_config c = clg_config_init(CLG_SGD);
    c.struct_size = offsetof(clg_config, seed); /* cuts its last field */
    clg_model *m = NULL;
    assert_int_equal(clg_model_create(tu_ctx, &c, &m), CLG_ERR_INVALID_ARGUMENT);
    assert_null(m);
    assert_non_null(strstr(clg_last_error(tu_ctx), "clg_model_create"));
    assert_non_null(strstr(clg_last_error(tu_ctx), "struct_size"));
    clg_model_plan plan = clg_model_plan_init();
    assert_int_equal(clg_model_estimate(&c, 10, &plan), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_config_init_sized(&c, 8, CLG_SGD), CLG_ERR_INVALID_ARGUMENT);
}

/* A consumer built against a newer header: its struct is longer. */
static void test_config_from_newer_consumer(void **state)
{
    (void)state;
    const size_t extra = 24;
    size_t size = sizeof(clg_config) + extra;
    guarded g = guarded_alloc(size);
    clg_config *c = g.obj;
    OK(clg_config_init_sized(c, size, CLG_ADAM));
    assert_int_equal(c->struct_size, size);
    const unsigned char *tail = (const unsigned char *)c + sizeof(clg_config);
    for (size_t i = 0; i < extra; i++)
        assert_int_equal(tail[i], 0); /* fields it does not know: zeroed */
    clg_model *m = small_model(c);    /* zero tail: accepted */
    clg_model_destroy(m);

    ((unsigned char *)c)[sizeof(clg_config) + 5] = 1; /* a field set it does not know */
    m = NULL;
    assert_int_equal(clg_model_create(tu_ctx, c, &m), CLG_ERR_UNSUPPORTED);
    assert_null(m);
    char want[64];
    snprintf(want, sizeof want, "byte %zu", sizeof(clg_config) + 5);
    assert_non_null(strstr(clg_last_error(tu_ctx), want));
    guarded_free(&g);
}

/* ------------------------------------------------------------ clg_stats */

static void test_stats_older_consumer(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.accum_steps = 2;
    cfg.clip_norm = 1.0f;
    clg_model *m = small_model(&cfg);
    run_updates(m, 6); /* 3 updates */

    guarded g = guarded_alloc(sizeof(stats_v1));
    stats_v1 *old = g.obj;
    old->struct_size = sizeof *old;
    OK(clg_model_stats(m, 1, (clg_stats *)old)); /* writes past it: crash */
    clg_stats full = clg_stats_init();
    OK(clg_model_stats(m, 1, &full));
    assert_int_equal(old->struct_size, sizeof *old); /* kept as the caller set it */
    assert_true(old->updates == 3 && full.updates == 3);
    assert_true(old->micro_steps == full.micro_steps);
    assert_memory_equal(&old->grad_norm, &full.grad_norm, sizeof(float));
    assert_memory_equal(&old->lr, &full.lr, sizeof(float));
    assert_true(full.cycles == 3 && full.cycles_behind == 0);

    /* too small to hold the first layout: refused, nothing written */
    unsigned char before[sizeof(stats_v1)];
    old->struct_size = offsetof(stats_v1, noise_trace);
    memcpy(before, old, sizeof before);
    assert_int_equal(clg_model_stats(m, 1, (clg_stats *)old), CLG_ERR_INVALID_ARGUMENT);
    assert_memory_equal(before, old, sizeof before);
    assert_non_null(strstr(clg_last_error(tu_ctx), "clg_model_stats"));
    guarded_free(&g);

    /* a newer consumer's longer struct: the tail it has and we lack is zeroed */
    size_t size = sizeof(clg_stats) + 16;
    guarded g2 = guarded_alloc(size);
    clg_stats *newer = g2.obj;
    newer->struct_size = size;
    OK(clg_model_stats(m, 1, newer));
    assert_int_equal(newer->struct_size, size);
    for (size_t i = sizeof(clg_stats); i < size; i++)
        assert_int_equal(((unsigned char *)newer)[i], 0);
    assert_true(newer->updates == 3);
    guarded_free(&g2);
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ clg_model_plan */

static void test_memory_plan_sizes(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    size_t size = sizeof(clg_model_plan) + 8;
    guarded g = guarded_alloc(size);
    clg_model_plan *p = g.obj;
    p->struct_size = size;
    OK(clg_model_estimate(&cfg, 100, p));
    assert_int_equal(p->struct_size, size);
    assert_true(p->params == 400);
    for (size_t i = sizeof(clg_model_plan); i < size; i++)
        assert_int_equal(((unsigned char *)p)[i], 0);

    clg_model_plan small = clg_model_plan_init();
    small.struct_size = offsetof(clg_model_plan, total);
    assert_int_equal(clg_model_estimate(&cfg, 100, &small), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(NULL), "clg_model_plan.struct_size"));
    guarded_free(&g);
}

/* ------------------------------------------------------------ clg_device_info */

static void test_device_list_stride(void **state)
{
    (void)state;
    clg_device_info *own = NULL;
    size_t n_own = 0;
    OK(clg_devices_list(&own, &n_own));
    assert_true(n_own >= 1);
    assert_int_equal(own[0].struct_size, sizeof(clg_device_info));

    /* a newer consumer: elements 40 bytes longer, laid out at its stride */
    const size_t stride = sizeof(clg_device_info) + 40;
    clg_device_info *wide = NULL;
    size_t n = 0;
    OK(clg_devices_list_sized(stride, &wide, &n));
    assert_int_equal(n, n_own);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *e = (const unsigned char *)wide + i * stride;
        const clg_device_info *d = (const clg_device_info *)e;
        assert_int_equal(d->struct_size, stride);
        assert_string_equal(d->name, own[i].name);
        assert_int_equal(d->platform_index, own[i].platform_index);
        for (size_t b = sizeof(clg_device_info); b < stride; b++)
            assert_int_equal(e[b], 0);
    }
    /* select reads the stride from the elements */
    size_t chosen = 99;
    OK(clg_device_select(wide, n, "0", &chosen));
    assert_int_equal(chosen, 0);
    char sel[32];
    snprintf(sel, sizeof sel, "%zu", n - 1);
    OK(clg_device_select(wide, n, sel, &chosen));
    assert_int_equal(chosen, n - 1);
    const unsigned char *last = (const unsigned char *)wide + (n - 1) * stride;
    OK(clg_device_select(wide, n, ((const clg_device_info *)last)->name, &chosen));
    /* the first device of that name */
    size_t first = 0;
    while (strcmp(own[first].name, ((const clg_device_info *)last)->name) != 0)
        first++;
    assert_int_equal(chosen, first);
    clg_devices_free(wide);

    assert_int_equal(clg_devices_list_sized(16, &wide, &n), CLG_ERR_INVALID_ARGUMENT);
    assert_null(wide);
    assert_non_null(strstr(clg_last_error(NULL), "clg_device_info.struct_size"));
    clg_devices_free(own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_optimizer_names),
        cmocka_unit_test(test_every_member_named),
        cmocka_unit_test(test_config_exact_size_at_page_end),
        cmocka_unit_test(test_config_defaults_match_header),
        cmocka_unit_test(test_config_too_small_is_refused),
        cmocka_unit_test(test_config_from_newer_consumer),
        cmocka_unit_test(test_stats_older_consumer),
        cmocka_unit_test(test_memory_plan_sizes),
        cmocka_unit_test(test_device_list_stride),
    };
    return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
