/* test_errors.c - every public function of clgrad.h that returns a
 * clg_status, walked through its failure paths: NULL arguments, bad
 * indices (-2, CLG_ALL_TENSORS where only one tensor is allowed, one past
 * the end), host counts one short and one long for every host copy (one
 * tensor and CLG_ALL_TENSORS), bad struct_size, malformed clg_events
 * (num_wait 1 with a NULL wait list, a wait list with num_wait 0, a NULL
 * entry), and calls in the wrong state (before finalize, after it, an
 * empty cycle, no update yet, a collected cycle pending or none). For each case (one line of the table
 * below):
 *  - the status is the expected one;
 *  - clg_last_error of the call's context (the model's or the grads'; NULL
 *    only for calls without one) names the function ("clg_grads_upload:")
 *    and the values at fault (for a count: both the caller's and the
 *    tensor's);
 *  - no state changed: params, accumulator, both Adam states and the
 *    gradient buffer bitwise, the micro-step index and every host counter
 *    of a model in the middle of a cycle, the context's device bytes,
 *    budget and launch count, the groups, tensors and shapes of a model
 *    being built, and the caller's out-arguments (a call's event is NULL,
 *    a failed clg_step's *updated is 0).
 * And two threads failing different calls on one shared context, each
 * seeing its own message in clg_last_error(ctx) (clgrad.h: errno-like). */
#include <stdarg.h>
#include "clgrad_advanced.h"
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "twin.h"
#include "model.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ fixtures */

static const float lr_mult[] = {1.0f, 0.5f};
static const float wd[] = {-1.0f, 0.0f};
static const size_t counts[] = {1009, 37, 24};
static const int groups[] = {0, 1, 0};
static const twin_layout layout = {2, lr_mult, wd, 3, counts, groups};
enum { N = 1009 + 37 + 24, N0 = 1009, K = 3 };

static const size_t small_counts[] = {5};
static const twin_layout small_layout = TWIN_ONE_GROUP(small_counts);

typedef struct fixture {
    twin tw;           /* AdamW, k = 3, 3 tensors in 2 groups, one micro-step in */
    twin other;        /* another model: 1 tensor of 5, no micro-step */
    clg_model *unfin;  /* being built: group "g1", tensor "u0" of 8 as [2, 4] */
    clg_model *empty;  /* no tensors */
    clg_model *norms;  /* tensor_norms on, no update yet */
    clg_model *skipm;  /* CLG_NONFINITE_SKIP_MICRO (no path B) */
    clg_model *pend;   /* k = 1, its cycle collected (clg_step_collect): pending */
    clg_device_info *devices;
    size_t n_devices;
    char *tmp;         /* scratch directory */
    char *other_ckpt;  /* a checkpoint of `other` (another layout) */
    float host[N + 16];
    uint16_t half[N + 16];
} fixture;

static fixture F;

/* Out-arguments the cases write through, reset before each case. */
#define SENTINEL_EVENT ((cl_event)(uintptr_t)0x5)
static cl_event ev_out;
static int updated_out;
static int int_out;
static size_t size_out;
static float float_out;
static double double_out;
static uint64_t u64_out;
static unsigned uint_out;
static clg_view view_out;
static clg_model *model_out;
static clg_grads *grads_out;
static clg_context *ctx_out;
static cl_program program_out;
/* a caller's source for clg_context_program_source (never built here) */
static const char *const source_in[] = {"__kernel void mine(__global float *a) { a[0] = 0; }\n",
                                        NULL};
static char cache_dir_out[4096], device_key_out[65];
static clg_stats stats_out;
static clg_model_plan plan_out;
static clg_config config_out;
static size_t ndim_out, dims_out[CLG_MAX_DIMS];
static clg_device_info *devs_out;
static float norms_out[8];

/* Events: well-formed with an event out, and the three malformed ones. */
static cl_event a_user_event;
static const cl_event null_entry[1] = {NULL};
static clg_events EV = {0, NULL, &ev_out};
static clg_events EV_NUM1_NULL;  /* num_wait 1, wait_list NULL */
static clg_events EV_LIST_NUM0;  /* wait_list given, num_wait 0 */
static clg_events EV_NULL_ENTRY; /* num_wait 1, wait_list[0] NULL */

/* A config with a given struct_size (and, past the library's own size, a
 * non-zero byte the library does not know). */
typedef struct bigger_config {
    clg_config c;
    uint64_t unknown;
} bigger_config;
static clg_config cfg_size0, cfg_bad_opt, cfg_lr, cfg_nesterov, cfg_sched, cfg_noise_skip;
static clg_config cfg_adamw, cfg_norms; /* valid: AdamW, and with per-tensor norms */
static bigger_config cfg_newer;
static clg_stats stats_size0, stats_small;
static clg_model_plan plan_size0, plan_small;
static clg_device_info *devices_small; /* struct_size 4 */

static clg_config adamw_config(void)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.accum_steps = K;
    c.fuse_last_micro_step = 0;
    return c;
}

static clg_model *build(clg_config cfg, int finalize)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    int t;
    OK(clg_model_add_tensor(m, "x", 64, 0, &t));
    if (finalize)
        OK(clg_model_finalize(m));
    return m;
}

static int setup(void **state)
{
    int rc = tu_group_setup(state);
    if (rc)
        return rc;
    memset(&F, 0, sizeof F);
    clg_config cfg = adamw_config();
    twin_init(&F.tw, tu_ctx, &cfg, &layout, 1);
    float *g = tu_xmalloc(N * sizeof(float));
    twin_gradient(&F.tw, 0, 0, g);
    twin_micro(&F.tw, g, 1.5f); /* mid-cycle: micro-step index 1 */
    free(g);
    twin_init(&F.other, tu_ctx, &cfg, &small_layout, 2);

    OK(clg_model_create(tu_ctx, &cfg, &F.unfin));
    int id;
    OK(clg_model_add_group(F.unfin, "g1", 1.0f, 0.0f, &id));
    OK(clg_model_add_tensor(F.unfin, "u0", 8, 0, &id));
    const size_t dims[] = {2, 4};
    OK(clg_model_set_tensor_shape(F.unfin, 0, 2, dims));
    OK(clg_model_create(tu_ctx, &cfg, &F.empty));
    clg_config c = cfg;
    c.tensor_norms = 1;
    F.norms = build(c, 1);
    c = cfg;
    c.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    F.skipm = build(c, 1);
    c = cfg;
    c.accum_steps = 1;
    F.pend = build(c, 1);
    int ready = 0;
    OK(clg_step_collect(F.pend, NULL, 1.0f, &ready, NULL));
    assert_int_equal(ready, 1);

    OK(clg_devices_list(&F.devices, &F.n_devices));
    devices_small = malloc(F.n_devices * sizeof *devices_small);
    memcpy(devices_small, F.devices, F.n_devices * sizeof *devices_small);
    devices_small[0].struct_size = 4;

    F.tmp = tu_mkdtemp("test_errors");
    size_t len = strlen(F.tmp) + 32;
    F.other_ckpt = malloc(len);
    snprintf(F.other_ckpt, len, "%s/other.ckpt", F.tmp);
    OK(clg_checkpoint_save(F.other.model, F.other_ckpt, NULL, NULL, 0));

    cl_int err;
    a_user_event = clCreateUserEvent(clg_context_cl(tu_ctx), &err);
    assert_int_equal(err, CL_SUCCESS);
    EV_NUM1_NULL = (clg_events){1, NULL, &ev_out};
    EV_LIST_NUM0 = (clg_events){0, &a_user_event, &ev_out};
    EV_NULL_ENTRY = (clg_events){1, null_entry, &ev_out};

    cfg_size0 = clg_config_init(CLG_SGD);
    cfg_size0.struct_size = 0;
    cfg_bad_opt = clg_config_init(CLG_SGD);
    cfg_bad_opt.optimizer = (clg_optimizer)7;
    cfg_lr = clg_config_init(CLG_SGD);
    cfg_lr.lr = -0.125f;
    cfg_nesterov = clg_config_init(CLG_SGD);
    cfg_nesterov.nesterov = 1;
    cfg_sched = clg_config_init(CLG_ADAM);
    cfg_sched.schedule = (clg_schedule){CLG_SCHED_COSINE, 500, 400, 0.0f};
    cfg_adamw = clg_config_init(CLG_ADAMW);
    cfg_norms = clg_config_init(CLG_ADAMW);
    cfg_norms.tensor_norms = 1;
    cfg_noise_skip = clg_config_init(CLG_ADAM);
    cfg_noise_skip.noise_scale = 1;
    cfg_noise_skip.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    memset(&cfg_newer, 0, sizeof cfg_newer);
    cfg_newer.c = clg_config_init(CLG_SGD);
    cfg_newer.c.struct_size = sizeof cfg_newer;
    cfg_newer.unknown = 1;
    stats_size0 = clg_stats_init();
    stats_size0.struct_size = 0;
    stats_small = clg_stats_init();
    stats_small.struct_size = offsetof(clg_stats, cycles) - 1;
    plan_size0 = clg_model_plan_init();
    plan_size0.struct_size = 0;
    plan_small = clg_model_plan_init();
    plan_small.struct_size = 3;
    return 0;
}

static int teardown(void **state)
{
    clReleaseEvent(a_user_event);
    unlink(F.other_ckpt);
    free(F.other_ckpt);
    tu_rmdir_tree(F.tmp);
    free(F.tmp);
    free(devices_small);
    clg_devices_free(F.devices);
    clg_model_destroy(F.pend);
    clg_model_destroy(F.skipm);
    clg_model_destroy(F.norms);
    clg_model_destroy(F.empty);
    clg_model_destroy(F.unfin);
    twin_free(&F.other);
    twin_free(&F.tw);
    return tu_group_teardown(state);
}

/* ------------------------------------------------------------ helpers the
 * table calls for the cases that need more than one expression */

static clg_status finalize_over_budget(void)
{
    uint64_t in_use = clg_context_device_bytes(tu_ctx);
    OK(clg_context_set_budget(tu_ctx, in_use + 1));
    clg_status st = clg_model_finalize(F.unfin);
    OK(clg_context_set_budget(tu_ctx, 0));
    return st;
}

static clg_status create_with_max_alloc(const char *value, int wrap)
{
    const char *old = getenv("CLGRAD_MAX_ALLOC");
    char *saved = old ? strdup(old) : NULL;
    setenv("CLGRAD_MAX_ALLOC", value, 1);
    ctx_out = (clg_context *)(uintptr_t)0x9;
    clg_status st = wrap ? clg_context_wrap(&ctx_out, clg_context_cl(tu_ctx),
                                            clg_context_device(tu_ctx), clg_context_queue(tu_ctx))
                         : clg_context_create(&ctx_out, NULL);
    if (saved) {
        setenv("CLGRAD_MAX_ALLOC", saved, 1);
        free(saved);
    } else {
        unsetenv("CLGRAD_MAX_ALLOC");
    }
    if (st == CLG_SUCCESS)
        clg_context_destroy(ctx_out);
    return st;
}

/* A queue of another cl_context on the same device. */
static clg_status wrap_foreign_queue(void)
{
    cl_int err;
    cl_device_id dev = clg_context_device(tu_ctx);
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(other, dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    clg_status st = clg_context_wrap(&ctx_out, clg_context_cl(tu_ctx), dev, q);
    clReleaseCommandQueue(q);
    clReleaseContext(other);
    return st;
}

static const char *const clgrad_key[] = {"clgrad.step"};
static const char *const a_value[] = {"1"};

/* Rotating buffers for needles computed at run time. */
static const char *num(long long v)
{
    static char bufs[8][32];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, sizeof bufs[0], "%lld", v);
    return b;
}
#define U64(v) num((long long)(v))

static const char *missing_path(void)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/no-such-dir/x.ckpt", F.tmp);
    return p;
}

/* State images for clg_checkpoint_save_gathered: two, and one then NULL. */
static const void *const two_images[2] = {F.host, F.host};
static const void *const one_image[2] = {F.host, NULL};

/* ------------------------------------------------------------ the table
 *
 * X(id, function, status, context, needle1, needle2, call)
 *  context: CTX (the call's context is tu_ctx) or NOCTX (none: the
 *  thread's context-less message). needle1/2: what else the message must
 *  name (a number as a whole token, or text), NULL for nothing. */
#define INV CLG_ERR_INVALID_ARGUMENT
#define STATE CLG_ERR_STATE
#define CTX 1
#define NOCTX 0
#define M F.tw.model
#define G F.tw.grads
#define H F.host
#define N1 (size_t)N0
#define NA (size_t)N
#define S(s) s

#define CASES(X)                                                                                   \
    /* devices */                                                                                  \
    X(devlist_out, "clg_devices_list", INV, NOCTX, "out", NULL,                                    \
      clg_devices_list_sized(sizeof(clg_device_info), NULL, &size_out))                            \
    X(devlist_count, "clg_devices_list", INV, NOCTX, "count", NULL,                                \
      clg_devices_list_sized(sizeof(clg_device_info), &devs_out, NULL))                            \
    X(devlist_size, "clg_devices_list", INV, NOCTX, "4", NULL,                                     \
      clg_devices_list_sized(4, &devs_out, &size_out))                                             \
    X(select_chosen, "clg_device_select", INV, NOCTX, "chosen", NULL,                              \
      clg_device_select(F.devices, F.n_devices, NULL, NULL))                                       \
    X(select_list, "clg_device_select", CLG_ERR_NO_DEVICE, NOCTX, NULL, NULL,                      \
      clg_device_select(NULL, 1, NULL, &size_out))                                                 \
    X(select_count0, "clg_device_select", CLG_ERR_NO_DEVICE, NOCTX, NULL, NULL,                    \
      clg_device_select(F.devices, 0, NULL, &size_out))                                            \
    X(select_size, "clg_device_select", INV, NOCTX, "4", NULL,                                     \
      clg_device_select(devices_small, F.n_devices, NULL, &size_out))                              \
    X(select_range, "clg_device_select", CLG_ERR_NO_DEVICE, NOCTX, "99", NULL,                     \
      clg_device_select(F.devices, F.n_devices, "99", &size_out))                                  \
    X(select_index, "clg_device_select", INV, NOCTX, "1:2:3", NULL,                                \
      clg_device_select(F.devices, F.n_devices, "1:2:3", &size_out))                               \
    X(select_blank, "clg_device_select", INV, NOCTX, "blank", NULL,                                \
      clg_device_select(F.devices, F.n_devices, "   ", &size_out))                                 \
    X(select_name, "clg_device_select", CLG_ERR_NO_DEVICE, NOCTX, "no-such-device-xyz", NULL,      \
      clg_device_select(F.devices, F.n_devices, "no-such-device-xyz", &size_out))                  \
    /* contexts */                                                                                 \
    X(create_out, "clg_context_create", INV, NOCTX, NULL, NULL, clg_context_create(NULL, NULL))    \
    X(create_selector, "clg_context_create", CLG_ERR_NO_DEVICE, NOCTX, "no-such-device-xyz", NULL, \
      clg_context_create(&ctx_out, "no-such-device-xyz"))                                          \
    X(create_max_alloc, "clg_context_create", INV, NOCTX, "12abc", NULL,                           \
      create_with_max_alloc("12abc", 0))                                                           \
    X(create_max_alloc0, "clg_context_create", INV, NOCTX, "CLGRAD_MAX_ALLOC", NULL,               \
      create_with_max_alloc("0", 0))                                                               \
    X(wrap_out, "clg_context_wrap", INV, NOCTX, NULL, NULL,                                        \
      clg_context_wrap(NULL, clg_context_cl(tu_ctx), clg_context_device(tu_ctx),                   \
                       clg_context_queue(tu_ctx)))                                                 \
    X(wrap_context, "clg_context_wrap", INV, NOCTX, "context", NULL,                               \
      clg_context_wrap(&ctx_out, NULL, clg_context_device(tu_ctx), clg_context_queue(tu_ctx)))     \
    X(wrap_device, "clg_context_wrap", INV, NOCTX, "device", NULL,                                 \
      clg_context_wrap(&ctx_out, clg_context_cl(tu_ctx), NULL, clg_context_queue(tu_ctx)))         \
    X(wrap_queue, "clg_context_wrap", INV, NOCTX, "queue", NULL,                                   \
      clg_context_wrap(&ctx_out, clg_context_cl(tu_ctx), clg_context_device(tu_ctx), NULL))        \
    X(wrap_foreign, "clg_context_wrap", INV, NOCTX, "another cl_context", NULL,                    \
      wrap_foreign_queue())                                                                        \
    X(wrap_max_alloc, "clg_context_wrap", INV, NOCTX, "12abc", NULL,                               \
      create_with_max_alloc("12abc", 1))                                                           \
    X(budget_null, "clg_context_set_budget", INV, NOCTX, NULL, NULL,                               \
      clg_context_set_budget(NULL, 0))                                                             \
    X(budget_below, "clg_context_set_budget", CLG_ERR_OVER_BUDGET, CTX, "1",                       \
      U64(clg_context_device_bytes(tu_ctx)), clg_context_set_budget(tu_ctx, 1))                    \
    X(reserve_null, "clg_context_reserve", INV, NOCTX, NULL, NULL, clg_context_reserve(NULL, 1))   \
    X(reserve_overflow, "clg_context_reserve", CLG_ERR_OVER_BUDGET, CTX, "18446744073709551615",   \
      NULL, clg_context_reserve(tu_ctx, UINT64_MAX))                                               \
    X(program_ctx, "clg_context_program", INV, NOCTX, "ctx", NULL,                                 \
      clg_context_program(NULL, "update", "", &program_out, NULL))                                 \
    X(program_name, "clg_context_program", INV, CTX, "name", NULL,                                 \
      clg_context_program(tu_ctx, NULL, "", &program_out, NULL))                                   \
    X(program_out_null, "clg_context_program", INV, CTX, "program", NULL,                          \
      clg_context_program(tu_ctx, "update", "", NULL, NULL))                                       \
    X(program_option, "clg_context_program", INV, CTX, "-cl-fast-relaxed-math", NULL,              \
      clg_context_program(tu_ctx, "update", "-cl-fast-relaxed-math", &program_out, NULL))          \
    X(source_ctx, "clg_context_program_source", INV, NOCTX, "ctx", NULL,                           \
      clg_context_program_source(NULL, "mine", source_in, "", &program_out, NULL))                 \
    X(source_name, "clg_context_program_source", INV, CTX, "name", NULL,                           \
      clg_context_program_source(tu_ctx, NULL, source_in, "", &program_out, NULL))                 \
    X(source_empty_name, "clg_context_program_source", INV, CTX, "name is empty", NULL,            \
      clg_context_program_source(tu_ctx, "", source_in, "", &program_out, NULL))                   \
    X(source_chunks, "clg_context_program_source", INV, CTX, "chunks", NULL,                       \
      clg_context_program_source(tu_ctx, "mine", NULL, "", &program_out, NULL))                    \
    X(source_out_null, "clg_context_program_source", INV, CTX, "program", NULL,                    \
      clg_context_program_source(tu_ctx, "mine", source_in, "", NULL, NULL))                       \
    X(source_option, "clg_context_program_source", INV, CTX, "-cl-finite-math-only", NULL,         \
      clg_context_program_source(tu_ctx, "mine", source_in, "-cl-finite-math-only",                \
                                 &program_out, NULL))                                              \
    X(cache_dir_buf, "clg_cache_dir", INV, NOCTX, "buf", NULL, clg_cache_dir(NULL, 64))            \
    X(cache_dir_size, "clg_cache_dir", INV, NOCTX, "needs", "size is 1",                           \
      clg_cache_dir(cache_dir_out, 1))                                                             \
    X(device_key_ctx, "clg_context_device_key", INV, NOCTX, "ctx", NULL,                           \
      clg_context_device_key(NULL, device_key_out))                                                \
    X(device_key_out, "clg_context_device_key", INV, CTX, "key", NULL,                             \
      clg_context_device_key(tu_ctx, NULL))                                                        \
    X(context_fail, "clg_context_fail", INV, CTX, "a layer's message", NULL,                       \
      clg_context_fail(tu_ctx, INV, "clg_context_fail: a layer's message"))                        \
    X(sformat_model, "clg_model_state_format", INV, NOCTX, NULL, NULL,                             \
      clg_model_state_format(NULL, 0, 0, NULL, NULL, NULL))                                        \
    X(sformat_state, "clg_model_state_format", INV, CTX, "no state 7", NULL,                       \
      clg_model_state_format(M, 7, 0, NULL, NULL, NULL))                                           \
    /* configs and rules */                                                                        \
    X(config_null, "clg_config_init_sized", INV, NOCTX, NULL, NULL,                                \
      clg_config_init_sized(NULL, sizeof(clg_config), CLG_SGD))                                    \
    X(config_size, "clg_config_init_sized", INV, NOCTX, "8", NULL,                                 \
      clg_config_init_sized(&config_out, 8, CLG_SGD))                                              \
    X(config_opt, "clg_config_init_sized", INV, NOCTX, "9", NULL,                                  \
      clg_config_init_sized(&config_out, sizeof(clg_config), (clg_optimizer)9))                    \
    X(lr_scale_out, "clg_lr_scale", INV, NOCTX, NULL, NULL,                                        \
      clg_lr_scale(CLG_LR_RULE_LINEAR, 0.1f, 32, 64, NULL))                                        \
    X(lr_scale_lr, "clg_lr_scale", INV, NOCTX, "-1", NULL,                                         \
      clg_lr_scale(CLG_LR_RULE_LINEAR, -1.0f, 32, 64, &float_out))                                 \
    X(lr_scale_batch, "clg_lr_scale", INV, NOCTX, "0", "64",                                       \
      clg_lr_scale(CLG_LR_RULE_LINEAR, 0.1f, 0, 64, &float_out))                                   \
    X(lr_scale_rule, "clg_lr_scale", INV, NOCTX, "7", NULL,                                        \
      clg_lr_scale((clg_lr_rule)7, 0.1f, 32, 64, &float_out))                                      \
    X(estimate_config, "clg_model_estimate", INV, NOCTX, "config", NULL,                           \
      clg_model_estimate(NULL, 10, &plan_out))                                                     \
    X(estimate_plan, "clg_model_estimate", INV, NOCTX, "plan", NULL,                               \
      clg_model_estimate(&cfg_lr, 10, NULL))                                                       \
    X(estimate_plan_size, "clg_model_estimate", INV, NOCTX, "3", NULL,                             \
      clg_model_estimate(&cfg_lr, 10, &plan_small))                                                \
    X(estimate_config_size, "clg_model_estimate", INV, NOCTX, "0", NULL,                           \
      clg_model_estimate(&cfg_size0, 10, &plan_out))                                               \
    X(eshard_config, "clg_model_estimate_shard", INV, NOCTX, "config", NULL,                       \
      clg_model_estimate_shard(NULL, 10, 0, 2, &plan_out))                                         \
    X(eshard_plan, "clg_model_estimate_shard", INV, NOCTX, "plan", NULL,                           \
      clg_model_estimate_shard(&cfg_adamw, 10, 0, 2, NULL))                                        \
    X(eshard_config_size, "clg_model_estimate_shard", INV, NOCTX, "0", NULL,                       \
      clg_model_estimate_shard(&cfg_size0, 10, 0, 2, &plan_out))                                   \
    X(eshard_count, "clg_model_estimate_shard", INV, NOCTX, "count", NULL,                         \
      clg_model_estimate_shard(&cfg_adamw, 10, 0, 0, &plan_out))                                   \
    X(eshard_index, "clg_model_estimate_shard", INV, NOCTX, "3", "2",                              \
      clg_model_estimate_shard(&cfg_adamw, 10, 3, 2, &plan_out))                                   \
    X(eshard_norms, "clg_model_estimate_shard", CLG_ERR_UNSUPPORTED, NOCTX, "per-tensor norms",    \
      NULL, clg_model_estimate_shard(&cfg_norms, 5000, 0, 2, &plan_out))                           \
    /* building a model */                                                                         \
    X(mcreate_ctx, "clg_model_create", INV, NOCTX, NULL, NULL,                                     \
      clg_model_create(NULL, &cfg_lr, &model_out))                                                 \
    X(mcreate_config, "clg_model_create", INV, CTX, NULL, NULL,                                    \
      clg_model_create(tu_ctx, NULL, &model_out))                                                  \
    X(mcreate_out, "clg_model_create", INV, CTX, NULL, NULL,                                       \
      clg_model_create(tu_ctx, &cfg_lr, NULL))                                                     \
    X(mcreate_size, "clg_model_create", INV, CTX, "struct_size", "0",                              \
      clg_model_create(tu_ctx, &cfg_size0, &model_out))                                            \
    X(mcreate_newer, "clg_model_create", CLG_ERR_UNSUPPORTED, CTX, U64(sizeof(clg_config)), NULL,  \
      clg_model_create(tu_ctx, &cfg_newer.c, &model_out))                                          \
    X(mcreate_opt, "clg_model_create", INV, CTX, "7", NULL,                                        \
      clg_model_create(tu_ctx, &cfg_bad_opt, &model_out))                                          \
    X(mcreate_lr, "clg_model_create", INV, CTX, "-0.125", NULL,                                    \
      clg_model_create(tu_ctx, &cfg_lr, &model_out))                                               \
    X(mcreate_nesterov, "clg_model_create", INV, CTX, "nesterov", NULL,                            \
      clg_model_create(tu_ctx, &cfg_nesterov, &model_out))                                         \
    X(mcreate_sched, "clg_model_create", INV, CTX, "400", "500",                                   \
      clg_model_create(tu_ctx, &cfg_sched, &model_out))                                            \
    X(mcreate_noise_skip, "clg_model_create", CLG_ERR_UNSUPPORTED, CTX, "noise", NULL,             \
      clg_model_create(tu_ctx, &cfg_noise_skip, &model_out))                                       \
    X(group_model, "clg_model_add_group", INV, NOCTX, NULL, NULL,                                  \
      clg_model_add_group(NULL, "g", 1.0f, 0.0f, &int_out))                                        \
    X(group_name, "clg_model_add_group", INV, CTX, NULL, NULL,                                     \
      clg_model_add_group(F.unfin, NULL, 1.0f, 0.0f, &int_out))                                    \
    X(group_out, "clg_model_add_group", INV, CTX, NULL, NULL,                                      \
      clg_model_add_group(F.unfin, "g", 1.0f, 0.0f, NULL))                                         \
    X(group_lr_mult, "clg_model_add_group", INV, CTX, "-2.5", NULL,                                \
      clg_model_add_group(F.unfin, "g", -2.5f, 0.0f, &int_out))                                    \
    X(group_wd, "clg_model_add_group", INV, CTX, "nan", NULL,                                      \
      clg_model_add_group(F.unfin, "g", 1.0f, NAN, &int_out))                                      \
    X(group_finalized, "clg_model_add_group", STATE, CTX, NULL, NULL,                              \
      clg_model_add_group(M, "g", 1.0f, 0.0f, &int_out))                                           \
    X(set_lr_model, "clg_model_set_lr", INV, NOCTX, NULL, NULL, clg_model_set_lr(NULL, 1e-3f))     \
    X(set_lr_value, "clg_model_set_lr", INV, CTX, "-0.125", NULL, clg_model_set_lr(M, -0.125f))    \
    X(set_mult_model, "clg_model_set_group_lr_mult", INV, NOCTX, NULL, NULL,                       \
      clg_model_set_group_lr_mult(NULL, 0, 1.0f))                                                  \
    X(set_mult_group, "clg_model_set_group_lr_mult", INV, CTX, "no group 7", NULL,                 \
      clg_model_set_group_lr_mult(M, 7, 1.0f))                                                     \
    X(set_mult_value, "clg_model_set_group_lr_mult", INV, CTX, "-2.5", NULL,                       \
      clg_model_set_group_lr_mult(M, 0, -2.5f))                                                    \
    X(tensor_model, "clg_model_add_tensor", INV, NOCTX, NULL, NULL,                                \
      clg_model_add_tensor(NULL, "t", 4, 0, &int_out))                                             \
    X(tensor_name, "clg_model_add_tensor", INV, CTX, NULL, NULL,                                   \
      clg_model_add_tensor(F.unfin, NULL, 4, 0, &int_out))                                         \
    X(tensor_out, "clg_model_add_tensor", INV, CTX, NULL, NULL,                                    \
      clg_model_add_tensor(F.unfin, "t", 4, 0, NULL))                                              \
    X(tensor_empty_name, "clg_model_add_tensor", INV, CTX, "255", NULL,                            \
      clg_model_add_tensor(F.unfin, "", 4, 0, &int_out))                                           \
    X(tensor_count0, "clg_model_add_tensor", INV, CTX, "'t'", "0",                                 \
      clg_model_add_tensor(F.unfin, "t", 0, 0, &int_out))                                          \
    X(tensor_group, "clg_model_add_tensor", INV, CTX, "7", "2",                                    \
      clg_model_add_tensor(F.unfin, "t", 4, 7, &int_out))                                          \
    X(tensor_group_m2, "clg_model_add_tensor", INV, CTX, "-2", "2",                                \
      clg_model_add_tensor(F.unfin, "t", 4, -2, &int_out))                                         \
    X(tensor_group_all, "clg_model_add_tensor", INV, CTX, "-1", "2",                               \
      clg_model_add_tensor(F.unfin, "t", 4, CLG_ALL_TENSORS, &int_out))                            \
    X(tensor_duplicate, "clg_model_add_tensor", INV, CTX, "'u0'", NULL,                            \
      clg_model_add_tensor(F.unfin, "u0", 4, 0, &int_out))                                         \
    X(tensor_finalized, "clg_model_add_tensor", STATE, CTX, NULL, NULL,                            \
      clg_model_add_tensor(M, "t", 4, 0, &int_out))                                                \
    X(shape_model, "clg_model_set_tensor_shape", INV, NOCTX, NULL, NULL,                           \
      clg_model_set_tensor_shape(NULL, 0, 1, dims_out))                                            \
    X(shape_finalized, "clg_model_set_tensor_shape", STATE, CTX, NULL, NULL,                       \
      clg_model_set_tensor_shape(M, 0, 1, dims_out))                                               \
    X(shape_tensor, "clg_model_set_tensor_shape", INV, CTX, "5", "1",                              \
      clg_model_set_tensor_shape(F.unfin, 5, 1, dims_out))                                         \
    X(shape_tensor_m2, "clg_model_set_tensor_shape", INV, CTX, "-2", "1",                          \
      clg_model_set_tensor_shape(F.unfin, -2, 1, dims_out))                                        \
    X(shape_tensor_all, "clg_model_set_tensor_shape", INV, CTX, "-1", "1",                         \
      clg_model_set_tensor_shape(F.unfin, CLG_ALL_TENSORS, 1, dims_out))                           \
    X(shape_ndim0, "clg_model_set_tensor_shape", INV, CTX, "0", NULL,                              \
      clg_model_set_tensor_shape(F.unfin, 0, 0, dims_out))                                         \
    X(shape_ndim9, "clg_model_set_tensor_shape", INV, CTX, "9", NULL,                              \
      clg_model_set_tensor_shape(F.unfin, 0, 9, dims_out))                                         \
    X(shape_dims_null, "clg_model_set_tensor_shape", INV, CTX, "dims", NULL,                       \
      clg_model_set_tensor_shape(F.unfin, 0, 2, NULL))                                             \
    X(shape_dim0, "clg_model_set_tensor_shape", INV, CTX, "dim 1", "0",                            \
      clg_model_set_tensor_shape(F.unfin, 0, 2, (const size_t[]){8, 0}))                           \
    X(shape_product, "clg_model_set_tensor_shape", INV, CTX, "6", "8",                             \
      clg_model_set_tensor_shape(F.unfin, 0, 2, (const size_t[]){2, 3}))                           \
    X(getshape_model, "clg_model_tensor_shape", INV, NOCTX, NULL, NULL,                            \
      clg_model_tensor_shape(NULL, 0, &ndim_out, dims_out))                                        \
    X(getshape_tensor, "clg_model_tensor_shape", INV, CTX, "3", NULL,                              \
      clg_model_tensor_shape(M, 3, &ndim_out, dims_out))                                           \
    X(getshape_m2, "clg_model_tensor_shape", INV, CTX, "-2", "3",                                  \
      clg_model_tensor_shape(M, -2, &ndim_out, dims_out))                                          \
    X(getshape_all, "clg_model_tensor_shape", INV, CTX, "-1", "3",                                 \
      clg_model_tensor_shape(M, CLG_ALL_TENSORS, &ndim_out, dims_out))                             \
    X(getshape_ndim, "clg_model_tensor_shape", INV, CTX, "ndim", NULL,                             \
      clg_model_tensor_shape(M, 0, NULL, dims_out))                                                \
    X(getshape_dims, "clg_model_tensor_shape", INV, CTX, "dims", NULL,                             \
      clg_model_tensor_shape(M, 0, &ndim_out, NULL))                                               \
    X(finalize_model, "clg_model_finalize", INV, NOCTX, NULL, NULL, clg_model_finalize(NULL))      \
    X(finalize_twice, "clg_model_finalize", STATE, CTX, NULL, NULL, clg_model_finalize(M))         \
    X(finalize_empty, "clg_model_finalize", INV, CTX, "no tensors", NULL,                          \
      clg_model_finalize(F.empty))                                                                 \
    X(finalize_budget, "clg_model_finalize", CLG_ERR_OVER_BUDGET, CTX, "budget", NULL,             \
      finalize_over_budget())                                                                      \
    X(find_model, "clg_model_find_tensor", INV, NOCTX, NULL, NULL,                                 \
      clg_model_find_tensor(NULL, "t0", &int_out))                                                 \
    X(find_name, "clg_model_find_tensor", INV, CTX, NULL, NULL,                                    \
      clg_model_find_tensor(M, NULL, &int_out))                                                    \
    X(find_out, "clg_model_find_tensor", INV, CTX, NULL, NULL,                                     \
      clg_model_find_tensor(M, "t0", NULL))                                                        \
    X(find_unknown, "clg_model_find_tensor", INV, CTX, "'nope'", NULL,                             \
      clg_model_find_tensor(M, "nope", &int_out))                                                  \
    X(memory_model, "clg_model_memory", INV, NOCTX, "model", NULL,                                 \
      clg_model_memory(NULL, &plan_out))                                                           \
    X(memory_plan, "clg_model_memory", INV, CTX, "plan", NULL, clg_model_memory(M, NULL))          \
    X(memory_size0, "clg_model_memory", INV, CTX, "0", NULL, clg_model_memory(M, &plan_size0))     \
    X(memory_unfin, "clg_model_memory", STATE, CTX, NULL, NULL,                                    \
      clg_model_memory(F.unfin, &plan_out))                                                        \
    /* views */                                                                                    \
    X(pview_model, "clg_model_param_view", INV, NOCTX, NULL, NULL,                                 \
      clg_model_param_view(NULL, 0, &view_out))                                                    \
    X(pview_unfin, "clg_model_param_view", STATE, CTX, NULL, NULL,                                 \
      clg_model_param_view(F.unfin, 0, &view_out))                                                 \
    X(pview_tensor, "clg_model_param_view", INV, CTX, "3", NULL,                                   \
      clg_model_param_view(M, 3, &view_out))                                                       \
    X(pview_m2, "clg_model_param_view", INV, CTX, "-2", "3",                                       \
      clg_model_param_view(M, -2, &view_out))                                                      \
    X(pview_all, "clg_model_param_view", INV, CTX, "-1", "3",                                      \
      clg_model_param_view(M, CLG_ALL_TENSORS, &view_out))                                         \
    X(pview_view, "clg_model_param_view", INV, CTX, "view", NULL,                                  \
      clg_model_param_view(M, 0, NULL))                                                            \
    X(aview_tensor, "clg_model_acc_view", INV, CTX, "3", NULL,                                     \
      clg_model_acc_view(M, 3, &view_out))                                                         \
    X(aview_m2, "clg_model_acc_view", INV, CTX, "-2", NULL, clg_model_acc_view(M, -2, &view_out))  \
    X(aview_all, "clg_model_acc_view", INV, CTX, "-1", NULL,                                       \
      clg_model_acc_view(M, CLG_ALL_TENSORS, &view_out))                                           \
    X(aview_unfin, "clg_model_acc_view", STATE, CTX, NULL, NULL,                                   \
      clg_model_acc_view(F.unfin, 0, &view_out))                                                   \
    X(cview_none, "clg_model_param_copy_view", STATE, CTX, NULL, NULL,                             \
      clg_model_param_copy_view(M, 0, &view_out))                                                  \
    X(cview_m2, "clg_model_param_copy_view", INV, CTX, "-2", NULL,                                 \
      clg_model_param_copy_view(M, -2, &view_out))                                                 \
    X(cview_model, "clg_model_param_copy_view", INV, NOCTX, NULL, NULL,                            \
      clg_model_param_copy_view(NULL, 0, &view_out))                                               \
    X(lsview_model, "clg_model_loss_scale_view", INV, NOCTX, NULL, NULL,                           \
      clg_model_loss_scale_view(NULL, &view_out))                                                  \
    X(lsview_view, "clg_model_loss_scale_view", INV, CTX, NULL, NULL,                              \
      clg_model_loss_scale_view(M, NULL))                                                          \
    X(lsview_unfin, "clg_model_loss_scale_view", STATE, CTX, NULL, NULL,                           \
      clg_model_loss_scale_view(F.unfin, &view_out))                                               \
    X(gview_grads, "clg_grads_view", INV, NOCTX, NULL, NULL, clg_grads_view(NULL, 0, &view_out))   \
    X(gview_view, "clg_grads_view", INV, CTX, "view", NULL, clg_grads_view(G, 0, NULL))            \
    X(gview_tensor, "clg_grads_view", INV, CTX, "3", NULL, clg_grads_view(G, 3, &view_out))        \
    X(gview_m2, "clg_grads_view", INV, CTX, "-2", "3", clg_grads_view(G, -2, &view_out))           \
    X(gview_all, "clg_grads_view", INV, CTX, "-1", "3",                                            \
      clg_grads_view(G, CLG_ALL_TENSORS, &view_out))                                               \
    /* host copies: every failure path of each */                                                  \
    HOST_COPY(X, up, "clg_model_upload_params", clg_model_upload_params, M)                        \
    HOST_COPY(X, down, "clg_model_download_params", clg_model_download_params, M)                  \
    HOST_COPY(X, acc, "clg_model_download_acc", clg_model_download_acc, M)                         \
    HOST_COPY(X, st0, "clg_model_download_state", STATE0, M)                                       \
    HOST_COPY(X, st1, "clg_model_download_state", STATE1, M)                                       \
    X(st_state_m1, "clg_model_download_state", INV, CTX, "-1", "2",                                \
      clg_model_download_state(M, -1, 0, H, N1, &EV))                                              \
    X(st_state2, "clg_model_download_state", INV, CTX, "2", NULL,                                  \
      clg_model_download_state(M, 2, 0, H, N1, &EV))                                               \
    X(st_unfin, "clg_model_download_state", STATE, CTX, NULL, NULL,                                \
      clg_model_download_state(F.unfin, 0, 0, H, 8, &EV))                                          \
    X(up_unfin, "clg_model_upload_params", STATE, CTX, NULL, NULL,                                 \
      clg_model_upload_params(F.unfin, 0, H, 8, &EV))                                              \
    X(down_unfin, "clg_model_download_params", STATE, CTX, NULL, NULL,                             \
      clg_model_download_params(F.unfin, CLG_ALL_TENSORS, H, 8, &EV))                              \
    X(acc_unfin, "clg_model_download_acc", STATE, CTX, NULL, NULL,                                 \
      clg_model_download_acc(F.unfin, 0, H, 8, &EV))                                               \
    HOST_COPY(X, gup, "clg_grads_upload", GRADS_UPLOAD, G)                                         \
    /* gradient buffers */                                                                         \
    X(gcreate_model, "clg_grads_create", INV, NOCTX, "model", NULL,                                \
      clg_grads_create(NULL, CLG_FP32, &grads_out))                                                \
    X(gcreate_out, "clg_grads_create", INV, CTX, "out", NULL, clg_grads_create(M, CLG_FP32, NULL)) \
    X(gcreate_unfin, "clg_grads_create", STATE, CTX, NULL, NULL,                                   \
      clg_grads_create(F.unfin, CLG_FP32, &grads_out))                                             \
    X(gcreate_dtype, "clg_grads_create", INV, CTX, "3", NULL,                                      \
      clg_grads_create(M, CLG_DTYPE_NONE, &grads_out))                                             \
    X(gcreate_dtype_m1, "clg_grads_create", INV, CTX, "-1", NULL,                                  \
      clg_grads_create(M, (clg_dtype)-1, &grads_out))                                              \
    /* the cycle */                                                                                \
    X(step_model, "clg_step", INV, NOCTX, NULL, NULL, clg_step(NULL, G, 1.0f, &updated_out, &EV))  \
    X(step_unfin, "clg_step", STATE, CTX, NULL, NULL,                                              \
      clg_step(F.unfin, NULL, 1.0f, &updated_out, &EV))                                            \
    X(step_w0, "clg_step", INV, CTX, "weight 0", NULL, clg_step(M, G, 0.0f, &updated_out, &EV))    \
    X(step_wneg, "clg_step", INV, CTX, "-1.5", NULL, clg_step(M, G, -1.5f, &updated_out, &EV))     \
    X(step_wnan, "clg_step", INV, CTX, "nan", NULL, clg_step(M, G, NAN, &updated_out, &EV))        \
    X(step_winf, "clg_step", INV, CTX, "inf", NULL, clg_step(M, G, INFINITY, &updated_out, &EV))   \
    X(step_other_grads, "clg_step", INV, CTX, "another model", NULL,                               \
      clg_step(M, F.other.grads, 1.0f, &updated_out, &EV))                                         \
    X(step_b_skip_micro, "clg_step", CLG_ERR_UNSUPPORTED, CTX, "path B", NULL,                     \
      clg_step(F.skipm, NULL, 1.0f, &updated_out, &EV))                                            \
    X(step_ev_num1, "clg_step", INV, CTX, "num_wait is 1", "NULL",                                 \
      clg_step(M, G, 1.0f, &updated_out, &EV_NUM1_NULL))                                           \
    X(step_ev_num0, "clg_step", INV, CTX, "num_wait is 0", NULL,                                   \
      clg_step(M, G, 1.0f, &updated_out, &EV_LIST_NUM0))                                           \
    X(step_ev_entry, "clg_step", INV, CTX, "wait_list[0]", NULL,                                   \
      clg_step(M, G, 1.0f, &updated_out, &EV_NULL_ENTRY))                                          \
    X(flush_model, "clg_flush", INV, NOCTX, NULL, NULL, clg_flush(NULL, &EV))                      \
    X(flush_unfin, "clg_flush", STATE, CTX, NULL, NULL, clg_flush(F.unfin, &EV))                   \
    X(flush_empty, "clg_flush", STATE, CTX, "no gradients", NULL, clg_flush(F.other.model, &EV))   \
    X(flush_ev_num1, "clg_flush", INV, CTX, "num_wait is 1", NULL, clg_flush(M, &EV_NUM1_NULL))    \
    X(flush_ev_num0, "clg_flush", INV, CTX, "num_wait is 0", NULL, clg_flush(M, &EV_LIST_NUM0))    \
    X(flush_ev_entry, "clg_flush", INV, CTX, "wait_list[0]", NULL, clg_flush(M, &EV_NULL_ENTRY))   \
    X(reset_model, "clg_reset_cycle", INV, NOCTX, NULL, NULL, clg_reset_cycle(NULL))               \
    X(step_pending, "clg_step", STATE, CTX, "pending", NULL,                                       \
      clg_step(F.pend, NULL, 1.0f, &updated_out, &EV))                                             \
    X(flush_pending, "clg_flush", STATE, CTX, "pending", NULL, clg_flush(F.pend, &EV))             \
    /* the deferred end of cycle */                                                                \
    X(collect_model, "clg_step_collect", INV, NOCTX, NULL, NULL,                                   \
      clg_step_collect(NULL, G, 1.0f, &updated_out, &EV))                                          \
    X(collect_unfin, "clg_step_collect", STATE, CTX, NULL, NULL,                                   \
      clg_step_collect(F.unfin, NULL, 1.0f, &updated_out, &EV))                                    \
    X(collect_w0, "clg_step_collect", INV, CTX, "weight 0", NULL,                                  \
      clg_step_collect(M, G, 0.0f, &updated_out, &EV))                                             \
    X(collect_wnan, "clg_step_collect", INV, CTX, "nan", NULL,                                     \
      clg_step_collect(M, G, NAN, &updated_out, &EV))                                              \
    X(collect_other_grads, "clg_step_collect", INV, CTX, "another model", NULL,                    \
      clg_step_collect(M, F.other.grads, 1.0f, &updated_out, &EV))                                 \
    X(collect_skip_micro, "clg_step_collect", CLG_ERR_UNSUPPORTED, CTX, "SKIP_MICRO", NULL,        \
      clg_step_collect(F.skipm, NULL, 1.0f, &updated_out, &EV))                                    \
    X(collect_pending, "clg_step_collect", STATE, CTX, "pending", "clg_finish_cycle",              \
      clg_step_collect(F.pend, NULL, 1.0f, &updated_out, &EV))                                     \
    X(collect_ev_num1, "clg_step_collect", INV, CTX, "num_wait is 1", NULL,                        \
      clg_step_collect(M, G, 1.0f, &updated_out, &EV_NUM1_NULL))                                   \
    X(collect_ev_entry, "clg_step_collect", INV, CTX, "wait_list[0]", NULL,                        \
      clg_step_collect(M, G, 1.0f, &updated_out, &EV_NULL_ENTRY))                                  \
    X(finish_model, "clg_finish_cycle", INV, NOCTX, NULL, NULL, clg_finish_cycle(NULL, 1.0f, &EV)) \
    X(finish_unfin, "clg_finish_cycle", STATE, CTX, NULL, NULL,                                    \
      clg_finish_cycle(F.unfin, 1.0f, &EV))                                                        \
    X(finish_not_pending, "clg_finish_cycle", STATE, CTX, "no collected cycle", NULL,              \
      clg_finish_cycle(M, 1.0f, &EV))                                                              \
    X(finish_w0, "clg_finish_cycle", INV, CTX, "weight_sum 0", NULL,                               \
      clg_finish_cycle(F.pend, 0.0f, &EV))                                                         \
    X(finish_wneg, "clg_finish_cycle", INV, CTX, "-2", NULL, clg_finish_cycle(F.pend, -2.0f, &EV)) \
    X(finish_winf, "clg_finish_cycle", INV, CTX, "inf", NULL,                                      \
      clg_finish_cycle(F.pend, INFINITY, &EV))                                                     \
    X(finish_ev_num1, "clg_finish_cycle", INV, CTX, "num_wait is 1", NULL,                         \
      clg_finish_cycle(F.pend, 1.0f, &EV_NUM1_NULL))                                               \
    X(finish_ev_num0, "clg_finish_cycle", INV, CTX, "num_wait is 0", NULL,                         \
      clg_finish_cycle(F.pend, 1.0f, &EV_LIST_NUM0))                                               \
    /* statistics */                                                                               \
    X(stats_model, "clg_model_stats", INV, NOCTX, NULL, NULL,                                      \
      clg_model_stats(NULL, 1, &stats_out))                                                        \
    X(stats_unfin, "clg_model_stats", STATE, CTX, NULL, NULL,                                      \
      clg_model_stats(F.unfin, 1, &stats_out))                                                     \
    X(stats_out_null, "clg_model_stats", INV, CTX, NULL, NULL, clg_model_stats(M, 1, NULL))        \
    X(stats_size0, "clg_model_stats", INV, CTX, "0", NULL, clg_model_stats(M, 1, &stats_size0))    \
    X(stats_small, "clg_model_stats", INV, CTX, U64(offsetof(clg_stats, cycles) - 1), NULL,        \
      clg_model_stats(M, 0, &stats_small))                                                         \
    X(lscale_model, "clg_model_loss_scale", INV, NOCTX, NULL, NULL,                                \
      clg_model_loss_scale(NULL, 1, &float_out))                                                   \
    X(lscale_unfin, "clg_model_loss_scale", STATE, CTX, NULL, NULL,                                \
      clg_model_loss_scale(F.unfin, 0, &float_out))                                                \
    X(lscale_out, "clg_model_loss_scale", INV, CTX, NULL, NULL, clg_model_loss_scale(M, 1, NULL))  \
    X(norms_model, "clg_model_tensor_norms", INV, NOCTX, NULL, NULL,                               \
      clg_model_tensor_norms(NULL, norms_out, 3))                                                  \
    X(norms_unfin, "clg_model_tensor_norms", STATE, CTX, NULL, NULL,                               \
      clg_model_tensor_norms(F.unfin, norms_out, 1))                                               \
    X(norms_null, "clg_model_tensor_norms", INV, CTX, NULL, NULL,                                  \
      clg_model_tensor_norms(M, NULL, 3))                                                          \
    X(norms_short, "clg_model_tensor_norms", INV, CTX, "2", "3",                                   \
      clg_model_tensor_norms(M, norms_out, 2))                                                     \
    X(norms_long, "clg_model_tensor_norms", INV, CTX, "4", "3",                                    \
      clg_model_tensor_norms(M, norms_out, 4))                                                     \
    X(norms_off, "clg_model_tensor_norms", STATE, CTX, "tensor_norms", NULL,                       \
      clg_model_tensor_norms(M, norms_out, 3))                                                     \
    X(norms_no_update, "clg_model_tensor_norms", STATE, CTX, "no update", NULL,                    \
      clg_model_tensor_norms(F.norms, norms_out, 1))                                               \
    X(sync_model, "clg_model_sync", INV, NOCTX, NULL, NULL, clg_model_sync(NULL))                  \
    X(sync_unfin, "clg_model_sync", STATE, CTX, NULL, NULL, clg_model_sync(F.unfin))               \
    /* sharded states (ZeRO-1) */                                                                  \
    X(shard_model, "clg_model_set_shard", INV, NOCTX, NULL, NULL, clg_model_set_shard(NULL, 0, 2)) \
    X(shard_finalized, "clg_model_set_shard", STATE, CTX, "before clg_model_finalize", NULL,       \
      clg_model_set_shard(M, 0, 2))                                                                \
    X(shard_index, "clg_model_set_shard", INV, CTX, "shard 2 of 2", NULL,                          \
      clg_model_set_shard(F.unfin, 2, 2))                                                          \
    X(shard_count0, "clg_model_set_shard", INV, CTX, "of 0", NULL,                                 \
      clg_model_set_shard(F.unfin, 0, 0))                                                          \
    X(shardof_model, "clg_model_shard", INV, NOCTX, "model", NULL,                                 \
      clg_model_shard(NULL, &uint_out, &uint_out))                                                 \
    X(shardof_index, "clg_model_shard", INV, CTX, "index", NULL,                                   \
      clg_model_shard(M, NULL, &uint_out))                                                         \
    X(range_model, "clg_model_shard_range", INV, NOCTX, NULL, NULL,                                \
      clg_model_shard_range(NULL, 0, &u64_out, NULL, NULL))                                        \
    X(range_unfin, "clg_model_shard_range", STATE, CTX, NULL, NULL,                                \
      clg_model_shard_range(F.unfin, 0, &u64_out, NULL, NULL))                                     \
    X(range_index, "clg_model_shard_range", INV, CTX, "no shard 1", NULL,                          \
      clg_model_shard_range(M, 1, &u64_out, NULL, NULL))                                           \
    X(extent_model, "clg_model_state_extent", INV, NOCTX, NULL, NULL,                              \
      clg_model_state_extent(NULL, 0, 0, 1024, &u64_out, NULL, NULL, NULL))                        \
    X(extent_unfin, "clg_model_state_extent", STATE, CTX, NULL, NULL,                              \
      clg_model_state_extent(F.unfin, 0, 0, 1024, &u64_out, NULL, NULL, NULL))                     \
    X(extent_state, "clg_model_state_extent", INV, CTX, "no state 2", NULL,                        \
      clg_model_state_extent(M, 2, 0, 1024, &u64_out, NULL, NULL, NULL))                           \
    X(extent_align, "clg_model_state_extent", INV, CTX, "[1000, +1024)", "segments",               \
      clg_model_state_extent(M, 0, 1000, 1024, &u64_out, NULL, NULL, NULL))                        \
    X(extent_past, "clg_model_state_extent", INV, CTX, "[0, +1048576)", NULL,                      \
      clg_model_state_extent(M, 0, 0, 1048576, &u64_out, NULL, NULL, NULL))                        \
    X(chunk_model, "clg_model_chunk_view", INV, NOCTX, NULL, NULL,                                 \
      clg_model_chunk_view(NULL, CLG_PART_ACC, 0, &view_out))                                      \
    X(chunk_unfin, "clg_model_chunk_view", STATE, CTX, NULL, NULL,                                 \
      clg_model_chunk_view(F.unfin, CLG_PART_ACC, 0, &view_out))                                   \
    X(chunk_index, "clg_model_chunk_view", INV, CTX, "no chunk 99", NULL,                          \
      clg_model_chunk_view(M, CLG_PART_PARAMS, 99, &view_out))                                     \
    X(chunk_part, "clg_model_chunk_view", INV, CTX, "part 5", NULL,                                \
      clg_model_chunk_view(M, (clg_part)5, 0, &view_out))                                          \
    X(chunk_view_null, "clg_model_chunk_view", INV, CTX, "view", NULL,                             \
      clg_model_chunk_view(M, CLG_PART_ACC, 0, NULL))                                              \
    X(sumsq_model, "clg_shard_sumsq", INV, NOCTX, NULL, NULL, clg_shard_sumsq(NULL, &double_out))  \
    X(sumsq_unfin, "clg_shard_sumsq", STATE, CTX, NULL, NULL,                                      \
      clg_shard_sumsq(F.unfin, &double_out))                                                       \
    X(sumsq_not_pending, "clg_shard_sumsq", STATE, CTX, "no collected cycle", NULL,                \
      clg_shard_sumsq(M, &double_out))                                                             \
    X(sumsq_null, "clg_shard_sumsq", INV, CTX, "sumsq", NULL, clg_shard_sumsq(F.pend, NULL))       \
    X(fshard_model, "clg_finish_cycle_sharded", INV, NOCTX, NULL, NULL,                            \
      clg_finish_cycle_sharded(NULL, 1.0f, 1.0, &EV))                                              \
    X(fshard_unfin, "clg_finish_cycle_sharded", STATE, CTX, NULL, NULL,                            \
      clg_finish_cycle_sharded(F.unfin, 1.0f, 1.0, &EV))                                           \
    X(fshard_not_pending, "clg_finish_cycle_sharded", STATE, CTX, "no collected cycle", NULL,      \
      clg_finish_cycle_sharded(M, 1.0f, 1.0, &EV))                                                 \
    X(fshard_w0, "clg_finish_cycle_sharded", INV, CTX, "weight_sum 0", NULL,                       \
      clg_finish_cycle_sharded(F.pend, 0.0f, 1.0, &EV))                                            \
    X(fshard_sumsq, "clg_finish_cycle_sharded", INV, CTX, "-3", "negative",                        \
      clg_finish_cycle_sharded(F.pend, 1.0f, -3.0, &EV))                                           \
    X(fshard_ev_num1, "clg_finish_cycle_sharded", INV, CTX, "num_wait is 1", NULL,                 \
      clg_finish_cycle_sharded(F.pend, 1.0f, 1.0, &EV_NUM1_NULL))                                  \
    X(sstate_model, "clg_model_download_state_raw", INV, NOCTX, NULL, NULL,                        \
      clg_model_download_state_raw(NULL, 0, CLG_SHARD_RANGE, H, 4, NULL, 0, NULL))                 \
    X(sstate_unfin, "clg_model_download_state_raw", STATE, CTX, NULL, NULL,                        \
      clg_model_download_state_raw(F.unfin, 0, CLG_SHARD_RANGE, H, 4, NULL, 0, NULL))              \
    X(sstate_index, "clg_model_download_state_raw", INV, CTX, "no state 2", NULL,                  \
      clg_model_download_state_raw(M, 2, CLG_SHARD_RANGE, H, 4, NULL, 0, NULL))                    \
    X(sstate_bytes, "clg_model_download_state_raw", INV, CTX, "4 bytes", NULL,                     \
      clg_model_download_state_raw(M, 0, CLG_SHARD_RANGE, H, 4, NULL, 0, NULL))                    \
    X(sstate_scales, "clg_model_download_state_raw", INV, CTX, "0 absmax values", "3 values",      \
      clg_model_download_state_raw(M, 0, CLG_SHARD_RANGE, H, 4, &float_out, 3, NULL))             \
    X(gsave_model, "clg_checkpoint_save_gathered", INV, NOCTX, NULL, NULL,                         \
      clg_checkpoint_save_gathered(NULL, missing_path(), NULL, NULL, 0, two_images, 2))            \
    X(gsave_count, "clg_checkpoint_save_gathered", INV, CTX, "1 state images", "2 states",         \
      clg_checkpoint_save_gathered(M, missing_path(), NULL, NULL, 0, two_images, 1))               \
    X(gsave_null, "clg_checkpoint_save_gathered", INV, CTX, "image 1 is NULL", NULL,               \
      clg_checkpoint_save_gathered(M, missing_path(), NULL, NULL, 0, one_image, 2))                \
    X(gsave_path, "clg_checkpoint_save_gathered", INV, CTX, "path", NULL,                          \
      clg_checkpoint_save_gathered(M, NULL, NULL, NULL, 0, two_images, 2))                         \
    X(gsave_pending, "clg_checkpoint_save_gathered", STATE, CTX, "pending", NULL,                  \
      clg_checkpoint_save_gathered(F.pend, missing_path(), NULL, NULL, 0, two_images, 2))          \
    /* checkpoints */                                                                              \
    X(save_model, "clg_checkpoint_save", INV, NOCTX, NULL, NULL,                                   \
      clg_checkpoint_save(NULL, missing_path(), NULL, NULL, 0))                                    \
    X(save_path, "clg_checkpoint_save", INV, CTX, "path", NULL,                                    \
      clg_checkpoint_save(M, NULL, NULL, NULL, 0))                                                 \
    X(save_unfin, "clg_checkpoint_save", STATE, CTX, NULL, NULL,                                   \
      clg_checkpoint_save(F.unfin, missing_path(), NULL, NULL, 0))                                 \
    X(save_pending, "clg_checkpoint_save", STATE, CTX, "pending", NULL,                            \
      clg_checkpoint_save(F.pend, missing_path(), NULL, NULL, 0))                                  \
    X(save_dir, "clg_checkpoint_save", CLG_ERR_IO, CTX, "no-such-dir", NULL,                       \
      clg_checkpoint_save(M, missing_path(), NULL, NULL, 0))                                       \
    X(save_meta_key, "clg_checkpoint_save", INV, CTX, "clgrad.step", NULL,                         \
      clg_checkpoint_save(M, missing_path(), clgrad_key, a_value, 1))                              \
    X(save_meta_null, "clg_checkpoint_save", INV, CTX, NULL, NULL,                                 \
      clg_checkpoint_save(M, missing_path(), NULL, a_value, 1))                                    \
    X(load_model, "clg_checkpoint_load", INV, NOCTX, NULL, NULL,                                   \
      clg_checkpoint_load(NULL, F.other_ckpt, NULL, NULL))                                         \
    X(load_path, "clg_checkpoint_load", INV, CTX, "path", NULL,                                    \
      clg_checkpoint_load(M, NULL, NULL, NULL))                                                    \
    X(load_unfin, "clg_checkpoint_load", STATE, CTX, NULL, NULL,                                   \
      clg_checkpoint_load(F.unfin, F.other_ckpt, NULL, NULL))                                      \
    X(load_missing, "clg_checkpoint_load", CLG_ERR_IO, CTX, "no-such-dir", NULL,                   \
      clg_checkpoint_load(M, missing_path(), NULL, NULL))                                          \
    X(load_other_layout, "clg_checkpoint_load", CLG_ERR_MISMATCH, CTX, NULL, NULL,                 \
      clg_checkpoint_load(M, F.other_ckpt, NULL, NULL))                                            \
    X(meta_path, "clg_checkpoint_read_meta", INV, NOCTX, "path", NULL,                             \
      clg_checkpoint_read_meta(NULL, NULL, NULL))                                                  \
    X(meta_missing, "clg_checkpoint_read_meta", CLG_ERR_IO, NOCTX, "no-such-dir", NULL,            \
      clg_checkpoint_read_meta(missing_path(), NULL, NULL))

/* Every failure path of one host copy fn(obj, tensor, host, count, events)
 * of the 3-tensor model: tensor past the end, -2, NULL host, counts one
 * short and one long for tensor 0 and for CLG_ALL_TENSORS, the three
 * malformed events, and a NULL model or grads. */
#define HOST_COPY(X, p, name, fn, obj)                                                             \
    X(p##_null, name, INV, NOCTX, NULL, NULL, fn(NULL, 0, H, N1, &EV))                             \
    X(p##_tensor3, name, INV, CTX, "3", NULL, fn(obj, 3, H, 24, &EV))                              \
    X(p##_tensor_m2, name, INV, CTX, "-2", "3", fn(obj, -2, H, N1, &EV))                           \
    X(p##_host, name, INV, CTX, "host", NULL, fn(obj, 0, NULL, N1, &EV))                           \
    X(p##_short, name, INV, CTX, U64(N1 - 1), U64(N1), fn(obj, 0, H, N1 - 1, &EV))                 \
    X(p##_long, name, INV, CTX, U64(N1 + 1), U64(N1), fn(obj, 0, H, N1 + 1, &EV))                  \
    X(p##_short1, name, INV, CTX, "36", "37", fn(obj, 1, H, 36, &EV))                              \
    X(p##_long1, name, INV, CTX, "38", "37", fn(obj, 1, H, 38, &EV))                               \
    X(p##_all_short, name, INV, CTX, U64(NA - 1), U64(NA), fn(obj, CLG_ALL_TENSORS, H, NA - 1, &EV)) \
    X(p##_all_long, name, INV, CTX, U64(NA + 1), U64(NA), fn(obj, CLG_ALL_TENSORS, H, NA + 1, &EV)) \
    X(p##_all_zero, name, INV, CTX, "0", U64(NA), fn(obj, CLG_ALL_TENSORS, H, 0, &EV))             \
    X(p##_ev_num1, name, INV, CTX, "num_wait is 1", "NULL", fn(obj, 0, H, N1, &EV_NUM1_NULL))      \
    X(p##_ev_num0, name, INV, CTX, "num_wait is 0", NULL, fn(obj, 0, H, N1, &EV_LIST_NUM0))        \
    X(p##_ev_entry, name, INV, CTX, "wait_list[0]", NULL, fn(obj, CLG_ALL_TENSORS, H, NA, &EV_NULL_ENTRY))

/* The host copies that are not (model, tensor, host, count, events). */
#define STATE0(m, t, h, n, e) clg_model_download_state((m), 0, (t), (h), (n), (e))
#define STATE1(m, t, h, n, e) clg_model_download_state((m), 1, (t), (h), (n), (e))
#define GRADS_UPLOAD(g, t, h, n, e) clg_grads_upload((g), (t), (h), (n), (e))

typedef clg_status (*case_fn)(const char **n1, const char **n2);

#define DEFINE_CASE(id, fn, want, ctxk, needle1, needle2, call)                                    \
    static clg_status case_##id(const char **n1, const char **n2)                                  \
    {                                                                                              \
        *n1 = needle1;                                                                             \
        *n2 = needle2;                                                                             \
        return call;                                                                               \
    }
CASES(DEFINE_CASE)

typedef struct error_case {
    const char *id;
    const char *fn;
    clg_status want;
    int has_ctx;
    case_fn run;
} error_case;

#define ROW(id, fn, want, ctxk, needle1, needle2, call) {#id, fn, want, ctxk, case_##id},
static const error_case cases[] = {CASES(ROW)};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The public functions returning a clg_status (clgrad.h); each must have
 * at least one case above. */
static const char *const walked[] = {
    "clg_devices_list",
    "clg_device_select",
    "clg_context_create",
    "clg_context_wrap",
    "clg_context_set_budget",
    "clg_context_reserve",
    "clg_context_program",
    "clg_context_program_source",
    "clg_config_init_sized",
    "clg_lr_scale",
    "clg_model_create",
    "clg_model_add_group",
    "clg_model_set_lr",
    "clg_model_set_group_lr_mult",
    "clg_model_add_tensor",
    "clg_model_set_tensor_shape",
    "clg_model_tensor_shape",
    "clg_model_finalize",
    "clg_model_find_tensor",
    "clg_model_memory",
    "clg_model_estimate",
    "clg_model_param_view",
    "clg_model_acc_view",
    "clg_model_param_copy_view",
    "clg_model_upload_params",
    "clg_model_download_params",
    "clg_model_download_acc",
    "clg_model_download_state",
    "clg_grads_create",
    "clg_grads_view",
    "clg_grads_upload",
    "clg_step",
    "clg_flush",
    "clg_reset_cycle",
    "clg_model_stats",
    "clg_model_loss_scale",
    "clg_model_loss_scale_view",
    "clg_model_tensor_norms",
    "clg_model_sync",
    "clg_checkpoint_save",
    "clg_checkpoint_load",
    "clg_checkpoint_read_meta",
    "clg_step_collect",
    "clg_finish_cycle",
    "clg_model_set_shard",
    "clg_model_shard_range",
    "clg_model_state_extent",
    "clg_model_chunk_view",
    "clg_shard_sumsq",
    "clg_model_shard",
    "clg_finish_cycle_sharded",
    "clg_model_download_state_raw",
    "clg_checkpoint_save_gathered",
    "clg_model_estimate_shard",
    "clg_cache_dir",
    "clg_context_device_key",
    "clg_context_fail",
    "clg_model_state_format",
};

/* The functions that take a clg_events: on failure *event is NULL. */
static int takes_events(const char *fn)
{
    static const char *const with[] = {
        "clg_model_upload_params", "clg_model_download_params", "clg_model_download_acc",
        "clg_model_download_state", "clg_grads_upload", "clg_step", "clg_flush",
        "clg_step_collect", "clg_finish_cycle", "clg_finish_cycle_sharded"};
    for (size_t i = 0; i < sizeof with / sizeof with[0]; i++)
        if (strcmp(fn, with[i]) == 0)
            return 1;
    return 0;
}

/* needle in msg; a needle that is a number must stand alone (no digit or
 * '.' next to it), so that "100" does not match "1009". */
static int mentions(const char *msg, const char *needle)
{
    size_t n = strlen(needle);
    int numeric = n > 0 && strspn(needle + (needle[0] == '-'), "0123456789") == n - (needle[0] == '-');
    for (const char *p = strstr(msg, needle); p; p = strstr(p + 1, needle)) {
        if (!numeric)
            return 1;
        char before = p > msg ? p[-1] : ' ';
        char after = p[n];
        if ((before < '0' || before > '9') && before != '.' && (after < '0' || after > '9') &&
            !(after == '.' && p[n + 1] >= '0' && p[n + 1] <= '9'))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the state */

typedef struct walk_state {
    float *arenas;       /* params, accumulator, 2 states of F.tw.model */
    uint16_t *grads_raw; /* F.tw.grads, as bytes */
    unsigned micro, other_micro;
    clg_stats stats;
    uint64_t device_bytes, budget, launches;
    size_t unfin_tensors, unfin_groups, empty_tensors;
    bool unfin_finalized, empty_finalized;
    size_t unfin_ndim, unfin_dims[CLG_MAX_DIMS];
    uint64_t grads_bytes;
} walk_state;

static void read_grads(uint8_t *out)
{
    cl_command_queue q = clg_context_queue(tu_ctx);
    size_t off = 0;
    for (int t = 0; t < 3; t++) {
        clg_view v;
        OK(clg_grads_view(F.tw.grads, t, &v));
        assert_int_equal(clEnqueueReadBuffer(q, v.mem, CL_TRUE, v.offset * 4, v.count * 4,
                                             out + off, 0, NULL, NULL),
                         CL_SUCCESS);
        off += v.count * 4;
    }
}

static void take(walk_state *s)
{
    memset(s, 0, sizeof *s);
    s->arenas = twin_snapshot(&F.tw);
    s->grads_raw = tu_xmalloc(N * 4);
    read_grads((uint8_t *)s->grads_raw);
    s->micro = clg_micro_step_index(F.tw.model);
    s->other_micro = clg_micro_step_index(F.other.model);
    s->stats = twin_stats(&F.tw);
    s->device_bytes = clg_context_device_bytes(tu_ctx);
    s->budget = clg_context_budget(tu_ctx);
    s->launches = clg_context_launches(tu_ctx);
    s->unfin_tensors = clg_model_tensor_count(F.unfin);
    s->unfin_groups = F.unfin->n_groups;
    s->unfin_finalized = F.unfin->finalized;
    s->empty_tensors = clg_model_tensor_count(F.empty);
    s->empty_finalized = F.empty->finalized;
    OK(clg_model_tensor_shape(F.unfin, 0, &s->unfin_ndim, s->unfin_dims));
    s->grads_bytes = F.tw.model->grads_bytes;
}

static void release(walk_state *s)
{
    free(s->arenas);
    free(s->grads_raw);
}

/* Returns what differs, or NULL. */
static const char *differs(const walk_state *a, const walk_state *b)
{
    if (memcmp(a->arenas, b->arenas, (1 + F.tw.ref.n_states) * N * sizeof(float)) != 0)
        return "params, accumulator or optimizer states";
    if (memcmp(a->grads_raw, b->grads_raw, N * 4) != 0)
        return "the gradient buffer";
    if (a->micro != b->micro || a->other_micro != b->other_micro)
        return "the micro-step index";
    if (a->stats.micro_steps != b->stats.micro_steps || a->stats.updates != b->stats.updates ||
        a->stats.cycles != b->stats.cycles ||
        memcmp(&a->stats.weight_sum, &b->stats.weight_sum, sizeof(float)) != 0 ||
        a->stats.skipped_updates != b->stats.skipped_updates)
        return "the model's counters (clg_model_stats)";
    if (a->device_bytes != b->device_bytes || a->grads_bytes != b->grads_bytes)
        return "the device bytes";
    if (a->budget != b->budget)
        return "the budget";
    if (a->launches != b->launches)
        return "the launch count (a kernel ran)";
    if (a->unfin_tensors != b->unfin_tensors || a->unfin_groups != b->unfin_groups ||
        a->unfin_finalized != b->unfin_finalized || a->empty_tensors != b->empty_tensors ||
        a->empty_finalized != b->empty_finalized)
        return "the groups, tensors or phase of a model being built";
    if (a->unfin_ndim != b->unfin_ndim ||
        memcmp(a->unfin_dims, b->unfin_dims, a->unfin_ndim * sizeof(size_t)) != 0)
        return "a tensor's shape";
    return NULL;
}

/* Out-arguments: reset before a case, checked after. */
static void reset_outs(void)
{
    ev_out = SENTINEL_EVENT;
    updated_out = 7;
    int_out = -77;
    size_out = 777;
    float_out = 7.5f;
    double_out = 7.5;
    u64_out = 77;
    uint_out = 77;
    memset(&view_out, 0x5a, sizeof view_out);
    model_out = NULL;
    grads_out = NULL;
    ctx_out = NULL;
    program_out = NULL;
    memset(&stats_out, 0x5a, sizeof stats_out);
    stats_out.struct_size = sizeof stats_out;
    memset(&plan_out, 0x5a, sizeof plan_out);
    plan_out.struct_size = sizeof plan_out;
    memset(&config_out, 0x5a, sizeof config_out);
    ndim_out = 77;
    devs_out = NULL;
    memset(dims_out, 0x5a, sizeof dims_out);
    memset(norms_out, 0x5a, sizeof norms_out);
}

static void check_outs(const error_case *c)
{
    if (takes_events(c->fn) && ev_out != NULL)
        fail_msg("%s: %s failed, but its event is %p, not NULL", c->id, c->fn, (void *)ev_out);
    if (!takes_events(c->fn) && ev_out != SENTINEL_EVENT)
        fail_msg("%s: the event was written by a call that takes none", c->id);
    int steps = strcmp(c->fn, "clg_step") == 0 || strcmp(c->fn, "clg_step_collect") == 0;
    if (steps ? updated_out != 0 : updated_out != 7)
        fail_msg("%s: *updated is %d after a failed call", c->id, updated_out);
    assert_int_equal(int_out, -77);
    float f = 7.5f;
    assert_memory_equal(&float_out, &f, sizeof f);
    assert_true(double_out == 7.5);
    assert_int_equal(u64_out, 77);
    assert_int_equal(uint_out, 77);
    clg_view v;
    memset(&v, 0x5a, sizeof v);
    assert_memory_equal(&view_out, &v, sizeof v);
    assert_null(model_out);
    assert_null(grads_out);
    if (ctx_out != NULL && ctx_out != (clg_context *)(uintptr_t)0x9)
        fail_msg("%s: a failed call returned a context", c->id);
    if (strcmp(c->fn, "clg_context_create") == 0 || strcmp(c->fn, "clg_context_wrap") == 0)
        assert_null(ctx_out); /* *out is NULL on failure */
    assert_null(program_out);
    clg_stats s;
    memset(&s, 0x5a, sizeof s);
    s.struct_size = sizeof s;
    assert_memory_equal(&stats_out, &s, sizeof s);
    clg_config cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    assert_memory_equal(&config_out, &cfg, sizeof cfg);
    assert_int_equal(ndim_out, 77);
    assert_null(devs_out);
    if (strcmp(c->fn, "clg_device_select") == 0)
        assert_int_equal(size_out, 777); /* *chosen untouched */
    clg_model_plan plan;
    memset(&plan, 0x5a, sizeof plan);
    plan.struct_size = sizeof plan;
    assert_memory_equal(&plan_out, &plan, sizeof plan);
    float norms[8];
    memset(norms, 0x5a, sizeof norms);
    assert_memory_equal(norms_out, norms, sizeof norms);
}

static void test_every_function_is_walked(void **state)
{
    (void)state;
    for (size_t f = 0; f < sizeof walked / sizeof walked[0]; f++) {
        int found = 0;
        for (size_t i = 0; i < N_CASES; i++)
            found += strcmp(cases[i].fn, walked[f]) == 0;
        if (!found)
            fail_msg("%s has no failure case", walked[f]);
    }
    for (size_t i = 0; i < N_CASES; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(cases[i].id, cases[j].id) == 0)
                fail_msg("case %s twice", cases[i].id);
    print_message("%d failure cases over %zu functions\n", N_CASES,
                  sizeof walked / sizeof walked[0]);
}

/* Every function of clgrad.h and clgrad_advanced.h that returns a
 * clg_status is in walked[], read from the headers themselves so that a new
 * function cannot be forgotten. The clg_contrastive_ functions are walked by
 * test_contrastive_errors.c; clg_devices_list_sized is walked as its inline
 * wrapper clg_devices_list. */
static void test_walked_covers_the_headers(void **state)
{
    (void)state;
    static const char *const headers[] = {CLG_SOURCE_ROOT "/include/clgrad.h",
                                          CLG_SOURCE_ROOT "/include/clgrad_advanced.h"};
    static const char decl[] = "CLG_API clg_status ";
    size_t seen = 0;
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        size_t bytes = 0;
        char *text = (char *)tu_read_file(headers[h], &bytes);
        assert_non_null(text);
        for (const char *p = strstr(text, decl); p; p = strstr(p + 1, decl)) {
            char name[96];
            const char *n = p + sizeof decl - 1;
            size_t len = strcspn(n, "(");
            assert_true(len < sizeof name);
            snprintf(name, sizeof name, "%.*s", (int)len, n);
            seen++;
            if (strncmp(name, "clg_contrastive_", 16) == 0)
                continue;
            if (strcmp(name, "clg_devices_list_sized") == 0)
                snprintf(name, sizeof name, "clg_devices_list");
            int walked_it = 0;
            for (size_t f = 0; f < sizeof walked / sizeof walked[0]; f++)
                walked_it |= strcmp(walked[f], name) == 0;
            if (!walked_it)
                fail_msg("%s (%s) is not in walked[]", name, headers[h]);
        }
        free(text);
    }
    assert_true(seen > 60); /* the headers were read, not empty */
}

static void test_error_walk(void **state)
{
    (void)state;
    unsigned failures = 0;
    for (size_t i = 0; i < N_CASES; i++) {
        const error_case *c = &cases[i];
        walk_state before, after;
        take(&before);
        reset_outs();
        /* a stale message of the same function must not pass for this one */
        const clg_context *mctx = c->has_ctx ? tu_ctx : NULL;
        const char *n1 = NULL, *n2 = NULL;
        clg_status st = c->run(&n1, &n2);
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", clg_last_error(mctx));
        char fname[96];
        snprintf(fname, sizeof fname, "%s:", c->fn);
        const char *problem = NULL;
        char why[256] = "";
        if (st != c->want) {
            snprintf(why, sizeof why, "status %s, want %s", clg_status_string(st),
                     clg_status_string(c->want));
            problem = why;
        } else if (!strstr(msg, fname)) {
            snprintf(why, sizeof why, "the message does not name %s", fname);
            problem = why;
        } else if (n1 && !mentions(msg, n1)) {
            snprintf(why, sizeof why, "the message does not name '%s'", n1);
            problem = why;
        } else if (n2 && !mentions(msg, n2)) {
            snprintf(why, sizeof why, "the message does not name '%s'", n2);
            problem = why;
        }
        if (problem) {
            fprintf(stderr, "FAIL %s (%s): %s; clg_last_error(%s): '%s'\n", c->id, c->fn,
                    problem, c->has_ctx ? "ctx" : "NULL", msg);
            failures++;
        }
        check_outs(c);
        take(&after);
        const char *d = differs(&before, &after);
        if (d) {
            fprintf(stderr, "FAIL %s (%s): changed %s\n", c->id, c->fn, d);
            failures++;
        }
        release(&before);
        release(&after);
    }
    if (failures)
        fail_msg("%u of %d failure cases went wrong (above)", failures, N_CASES);
    /* and the model still works: the cycle goes on as the reference's */
    float *g = tu_xmalloc(N * sizeof(float));
    for (unsigned m = 1; m < K; m++) {
        twin_gradient(&F.tw, 0, m, g);
        twin_micro(&F.tw, g, 1.0f);
    }
    twin_check(&F.tw, REF_RTOL, REF_ATOL, "after the error walk");
    free(g);
}

/* ------------------------------------------------------------ threads */

enum { ROUNDS = 1000 };

typedef struct thread_arg {
    int which;
    atomic_int *go;
    unsigned wrong; /* rounds whose message was not this thread's own */
    char first_wrong[512];
} thread_arg;

static int fail_in_a_loop(void *p)
{
    thread_arg *a = p;
    while (!atomic_load(a->go))
        thrd_yield();
    for (unsigned r = 0; r < ROUNDS; r++) {
        clg_status st;
        char want1[64], want2[64];
        if (a->which == 0) {
            /* one count too many, different every round */
            size_t count = (size_t)N0 + 1 + r;
            st = clg_model_upload_params(F.tw.model, 0, F.host, count, NULL);
            snprintf(want1, sizeof want1, "clg_model_upload_params:");
            snprintf(want2, sizeof want2, "holds %zu elements", count);
        } else {
            int t = 100 + (int)r;
            st = clg_grads_upload(F.other.grads, t, F.host, 5, NULL);
            snprintf(want1, sizeof want1, "clg_grads_upload:");
            snprintf(want2, sizeof want2, "no tensor %d ", t);
        }
        /* let the other thread fail on the shared context in between
         * (sleeping hands it the core even when the two share one) */
        nanosleep(&(struct timespec){0, 20000}, NULL);
        const char *msg = clg_last_error(tu_ctx);
        if (st != CLG_ERR_INVALID_ARGUMENT || !strstr(msg, want1) || !strstr(msg, want2)) {
            if (!a->wrong++)
                snprintf(a->first_wrong, sizeof a->first_wrong, "round %u: %s: '%s'", r,
                         clg_status_string(st), msg);
        }
    }
    return 0;
}

static void test_threads_see_their_own_message(void **state)
{
    (void)state;
    atomic_int go = 0;
    thread_arg args[2] = {{0, &go, 0, ""}, {1, &go, 0, ""}};
    thrd_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(thrd_create(&t[i], fail_in_a_loop, &args[i]), thrd_success);
    atomic_store(&go, 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(thrd_join(t[i], NULL), thrd_success);
    for (int i = 0; i < 2; i++)
        if (args[i].wrong)
            fail_msg("thread %d: %u of %d rounds saw another message, first %s", i,
                     args[i].wrong, ROUNDS, args[i].first_wrong);
    print_message("2 threads x %d failing calls on one context: each saw its own message\n",
                  ROUNDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_function_is_walked),
        cmocka_unit_test(test_walked_covers_the_headers),
        cmocka_unit_test(test_error_walk),
        cmocka_unit_test(test_threads_see_their_own_message),
    };
    return cmocka_run_group_tests_name("errors", tests, setup, teardown);
}
