/* test_checkpoint.c - checkpoints on the device:
 *  - round trip mid-cycle (params, bf16 accumulator, every optimizer state,
 *    fp16 param copy, counters, step block, the caller's metadata), and the
 *    loaded model then trains exactly like the original;
 *  - strict loading: each kind of damage or mismatch fails with its own
 *    error and leaves the live model byte for byte as it was: a flipped
 *    bit in the header (the caller's metadata too) fails its CRC, counters
 *    stored twice must agree, and the configuration the state depends on
 *    (loss scaling, dtypes, shapes, ...) must match;
 *  - the file is safetensors with real shapes and only dtypes that torch
 *    1.13 loads (scripts/check-torch-interop.sh loads one in Python);
 *  - a save removes the temporary files that killed saves to the same path
 *    left behind, and only those;
 *  - a crash during a save (a child killed at its n-th write, for every n
 *    until a save completes) leaves the old or the new file, never another;
 *  - the noise-scale estimate of a cycle saved after its first micro-step
 *    (that step's statistics and weight live in the step block) continues
 *    in a fresh model exactly as without the interruption;
 *  - resume is bit-exact: 20 updates in one process vs. 10 updates and one
 *    micro-step, a save, and the rest in a NEW process (llm.c's test).
 * The test binary re-executes itself (/proc/self/exe) with --save-child or
 * --resume-child for the parts that need a separate process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "checkpoint.h"
#include "ckpt_testutil.h"
#include "fault.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ models */

enum { K = 3 };

/* Everything a checkpoint must carry is switched on: AdamW with AMSGrad
 * (three states), a warmup + cosine schedule, a bf16 accumulator with
 * stochastic rounding, an fp16 param copy, clipping, dynamic loss scaling
 * with skipped updates, and the noise-scale EMA. */
static clg_config rich_config(void)
{
    clg_config c = clg_config_init(CLG_ADAMW);
    c.lr = 1e-2f;
    c.amsgrad = 1;
    c.accum_steps = K;
    c.schedule.kind = CLG_SCHED_COSINE;
    c.schedule.warmup = 3;
    c.schedule.total = 20;
    c.schedule.min_lr = 1e-3f;
    c.acc_dtype = CLG_BF16;
    c.param_copy_dtype = CLG_FP16;
    c.clip_norm = 0.5f;
    c.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    c.loss_scale = CLG_LOSS_SCALE_DYNAMIC;
    c.loss_scale_init = 1024.0f;
    c.loss_scale_interval = 2;
    c.noise_scale = 1;
    c.noise_scale_ema = 0.9f;
    c.seed = 1234;
    return c;
}

/* Variations of the tensor list, for the mismatch tests. */
typedef struct variant {
    const char *head_name; /* default "head.w" */
    size_t bias_count;     /* default 7 */
    int extra_tensor;      /* adds "extra" */
    int drop_head;         /* no "head.w" */
    int head_transposed;   /* head.w is [11, 3] instead of [3, 11] */
} variant;

static clg_model *build_model(const clg_config *cfg, const variant *v, uint64_t seed)
{
    variant dflt = {0};
    if (!v)
        v = &dflt;
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, cfg, &m));
    int nodecay = -1, t;
    OK(clg_model_add_group(m, "no_decay", 1.0f, 0.0f, &nodecay));
    OK(clg_model_add_tensor(m, "enc.w", 50, 0, &t));
    OK(clg_model_add_tensor(m, "enc.b", v->bias_count ? v->bias_count : 7, nodecay, &t));
    if (!v->drop_head) {
        OK(clg_model_add_tensor(m, v->head_name ? v->head_name : "head.w", 33, 0, &t));
        const size_t shape[2] = {v->head_transposed ? 11 : 3, v->head_transposed ? 3 : 11};
        OK(clg_model_set_tensor_shape(m, t, 2, shape));
    }
    if (v->extra_tensor)
        OK(clg_model_add_tensor(m, "extra", 4, nodecay, &t));
    OK(clg_model_finalize(m));
    tu_upload_uniform_params(m, seed);
    return m;
}

/* The gradient of micro-step (u, mi): deterministic, with an inf at two
 * points so that updates get skipped and the loss scale backs off. */
static void make_grad(unsigned u, unsigned mi, float *g, size_t n)
{
    tu_fill_normal(g, n, 1000u * u + mi + 1, 0.5f);
    if ((u == 4 && mi == 1) || (u == 14 && mi == 0))
        g[3] = INFINITY;
}

static float weight_of(unsigned u, unsigned mi) { return 1.0f + 0.25f * (float)((u + mi) % 3); }

/* Micro-step mi of update u; returns clg_step's status. */
static clg_status micro_step(clg_model *m, clg_grads *g, unsigned u, unsigned mi)
{
    size_t n = clg_model_param_count(m);
    float *buf = tu_xmalloc(n * sizeof *buf);
    make_grad(u, mi, buf, n);
    clg_status st = clg_grads_upload(g, CLG_ALL_TENSORS, buf, n, NULL);
    free(buf);
    if (st == CLG_SUCCESS)
        st = clg_step(m, g, weight_of(u, mi), NULL, NULL);
    return st;
}

/* Runs micro-steps from (u0, mi0) up to, not including, (u1, 0). */
static clg_status train(clg_model *m, unsigned u0, unsigned mi0, unsigned u1)
{
    clg_grads *g = NULL;
    clg_status st = clg_grads_create(m, CLG_FP32, &g);
    for (unsigned u = u0; st == CLG_SUCCESS && u < u1; u++)
        for (unsigned mi = u == u0 ? mi0 : 0; st == CLG_SUCCESS && mi < K; mi++)
            st = micro_step(m, g, u, mi);
    clg_grads_destroy(g);
    return st;
}

/* A file's first 8 bytes: the header length, little-endian (read here on
 * its own, not through the library's reader). */
static uint64_t header_length(const uint8_t *f)
{
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f[i];
    return hlen;
}

/* A model of cfg (seed 1) after `updates` updates, saved at path with
 * the given metadata. */
static clg_model *saved_model(const clg_config *cfg, const char *path, unsigned updates,
                              const char *const *keys, const char *const *values, size_t n_meta)
{
    clg_model *a = build_model(cfg, NULL, 1);
    OK(train(a, 0, 0, updates));
    OK(clg_checkpoint_save(a, path, keys, values, n_meta));
    return a;
}

/* ------------------------------------------------------------ snapshots */

/* Everything observable of a model: the raw bytes of every checkpointed
 * arena and the cycle state (through the checkpoint's own reader), plus
 * the public views (params, accumulator as float, states, stats). */
typedef struct snap {
    uint8_t *raw;
    size_t raw_n;
    clg_cycle_state cs;
    float *params, *acc, *states[3];
    size_t n, n_states;
    clg_stats stats;
    unsigned micro;
} snap;

static void take_snap(clg_model *m, snap *s)
{
    memset(s, 0, sizeof *s);
    char err[256];
    clg_ckpt_layout layout;
    OK(clg__ckpt_layout_model(m, &layout, err, sizeof err));
    OK(clg__ckpt_collect(m, &layout, NULL, &s->raw, &s->cs));
    s->raw_n = (size_t)layout.data_size;
    clg__ckpt_layout_free(&layout);
    s->n = clg_model_param_count(m);
    s->params = tu_xmalloc(s->n * sizeof(float));
    s->acc = tu_xmalloc(s->n * sizeof(float));
    OK(clg_model_download_params(m, CLG_ALL_TENSORS, s->params, (size_t)clg_model_param_count(m), NULL));
    OK(clg_model_download_acc(m, CLG_ALL_TENSORS, s->acc, (size_t)clg_model_param_count(m), NULL));
    s->n_states = clg_model_state_count(m);
    for (size_t i = 0; i < s->n_states; i++) {
        s->states[i] = tu_xmalloc(s->n * sizeof(float));
        OK(clg_model_download_state(m, (int)i, CLG_ALL_TENSORS, s->states[i], (size_t)clg_model_param_count(m), NULL));
    }
    s->stats = clg_stats_init();
    OK(clg_model_stats(m, 1, &s->stats));
    s->micro = clg_micro_step_index(m);
}

static void free_snap(snap *s)
{
    free(s->raw);
    free(s->params);
    free(s->acc);
    for (size_t i = 0; i < 3; i++)
        free(s->states[i]);
    memset(s, 0, sizeof *s);
}

static void assert_same_snap(const snap *a, const snap *b, const char *what)
{
    if (a->raw_n != b->raw_n)
        fail_msg("%s: raw arena sizes differ", what);
    for (size_t i = 0; i < a->raw_n; i++)
        if (a->raw[i] != b->raw[i])
            fail_msg("%s: raw arena bytes differ, first at byte %zu of %zu", what, i, a->raw_n);
    if (a->cs.micro != b->cs.micro || a->cs.cycles != b->cs.cycles ||
        a->cs.micro_total != b->cs.micro_total ||
        memcmp(&a->cs.weight_sum, &b->cs.weight_sum, sizeof(float)) != 0 ||
        memcmp(a->cs.step_block, b->cs.step_block, sizeof a->cs.step_block) != 0)
        fail_msg("%s: cycle state differs", what);
    if (a->n != b->n || memcmp(a->params, b->params, a->n * sizeof(float)) != 0)
        fail_msg("%s: parameters differ", what);
    if (memcmp(a->acc, b->acc, a->n * sizeof(float)) != 0)
        fail_msg("%s: accumulators differ", what);
    assert_int_equal(a->n_states, b->n_states);
    for (size_t i = 0; i < a->n_states; i++)
        if (memcmp(a->states[i], b->states[i], a->n * sizeof(float)) != 0)
            fail_msg("%s: state %zu differs", what, i);
    assert_int_equal(a->micro, b->micro);
    assert_true(a->stats.updates == b->stats.updates);
    assert_true(a->stats.micro_steps == b->stats.micro_steps);
    assert_true(a->stats.skipped_updates == b->stats.skipped_updates);
    assert_memory_equal(&a->stats.loss_scale, &b->stats.loss_scale, sizeof(float));
}

/* ------------------------------------------------------------ files */

/* Number of directory entries whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix, int remove)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            n++;
            if (remove) {
                size_t len = strlen(dir) + strlen(e->d_name) + 2;
                char *p = tu_xmalloc(len);
                snprintf(p, len, "%s/%s", dir, e->d_name);
                unlink(p);
                free(p);
            }
        }
    }
    closedir(d);
    return n;
}

/* Runs this test binary again with args; returns its wait status. */
static int run_self(char *const args[])
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execv("/proc/self/exe", args);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* ------------------------------------------------------------ round trip */

typedef struct meta_seen {
    int n;
    char keys[8][64], values[8][64];
} meta_seen;

static void collect_meta(const char *key, const char *value, void *user)
{
    meta_seen *s = user;
    if (s->n < 8) {
        snprintf(s->keys[s->n], 64, "%s", key);
        snprintf(s->values[s->n], 64, "%s", value);
    }
    s->n++;
}

static void round_trip(const clg_config *cfg, const char *file)
{
    char *path = tu_tmp_path(file);
    clg_model *a = build_model(cfg, NULL, 1);
    clg_model *b = build_model(cfg, NULL, 2);
    /* 5 updates and one micro-step into the 6th: mid-cycle */
    OK(train(a, 0, 0, 5));
    clg_grads *g = NULL;
    OK(clg_grads_create(a, CLG_FP32, &g));
    /* (skip-micro mode: a dropped micro-step shifts the cycle boundary) */
    unsigned taken = 0;
    do
        OK(micro_step(a, g, 5, taken++));
    while (clg_micro_step_index(a) == 0 && taken < K);
    clg_grads_destroy(g);
    assert_true(clg_micro_step_index(a) > 0); /* mid-cycle */

    const char *keys[] = {"loader.position", "rng.state", "empty"};
    const char *values[] = {"12345", "0x9e3779b97f4a7c15", ""};
    OK(clg_checkpoint_save(a, path, keys, values, 3));
    snap sa, sb;
    take_snap(a, &sa);
    meta_seen seen = {0};
    OK(clg_checkpoint_load(b, path, collect_meta, &seen));
    take_snap(b, &sb);
    assert_same_snap(&sa, &sb, "after load");
    assert_true(sb.micro > 0);
    assert_int_equal(seen.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(seen.keys[i], keys[i]);
        assert_string_equal(seen.values[i], values[i]);
    }
    /* Both finish the cycle and run three more updates identically. */
    OK(train(a, 5, taken, 9));
    OK(train(b, 5, taken, 9));
    free_snap(&sa);
    free_snap(&sb);
    take_snap(a, &sa);
    take_snap(b, &sb);
    assert_same_snap(&sa, &sb, "after training on");
    /* Saving the loaded state again gives the same file, byte for byte. */
    char *again = tu_tmp_path("again.ckpt");
    OK(clg_checkpoint_save(a, path, keys, values, 3));
    OK(clg_checkpoint_save(b, again, keys, values, 3));
    size_t n1, n2;
    uint8_t *f1 = tu_read_file(path, &n1), *f2 = tu_read_file(again, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(f1, f2, n1);
    free(f1);
    free(f2);
    free_snap(&sa);
    free_snap(&sb);
    clg_model_destroy(a);
    clg_model_destroy(b);
    unlink(path);
    unlink(again);
    free(path);
    free(again);
}

static void test_round_trip_rich(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    round_trip(&cfg, "rich.ckpt");
}

static void test_round_trip_sgd(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_SGD);
    cfg.lr = 0.05f;
    cfg.momentum = 0.9f;
    cfg.nesterov = 1;
    cfg.accum_steps = K;
    cfg.fuse_last_micro_step = 0; /* path A */
    cfg.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    round_trip(&cfg, "sgd.ckpt");
}

static void test_round_trip_lion(void **state)
{
    (void)state;
    clg_config cfg = clg_config_init(CLG_LION);
    cfg.accum_steps = K;
    cfg.param_copy_dtype = CLG_BF16;
    cfg.nonfinite = CLG_NONFINITE_SKIP_UPDATE;
    round_trip(&cfg, "lion.ckpt");
}

/* ------------------------------------------------------------ noise scale */

static void assert_same_noise(const clg_stats *a, const clg_stats *b, const char *what)
{
    if (memcmp(&a->noise_scale, &b->noise_scale, sizeof(float)) != 0 ||
        memcmp(&a->noise_g2, &b->noise_g2, sizeof(float)) != 0 ||
        memcmp(&a->noise_trace, &b->noise_trace, sizeof(float)) != 0)
        fail_msg("%s: noise scale %.9g |G|^2 %.9g tr %.9g, uninterrupted %.9g %.9g %.9g", what,
                 (double)b->noise_scale, (double)b->noise_g2, (double)b->noise_trace,
                 (double)a->noise_scale, (double)a->noise_g2, (double)a->noise_trace);
}

/* Noise scale on, k = 3: the first micro-step of cycle NOISE_SAVE_AT is
 * taken, the model saved and loaded into a fresh one (other initial
 * parameters), which finishes the run. Everything, the noise-scale EMA
 * included, must equal an uninterrupted run bit for bit. A control that
 * drops the first micro-step's weight after the load shows that the
 * comparison sees the pending estimate. */
enum { NOISE_SAVE_AT = 2, NOISE_TOTAL = 4 }; /* before make_grad's first inf */

static void noise_mid_cycle(int fuse)
{
    clg_config cfg = clg_config_init(CLG_ADAMW);
    cfg.lr = 1e-2f;
    cfg.accum_steps = K;
    cfg.noise_scale = 1;
    cfg.noise_scale_ema = 0.9f;
    cfg.fuse_last_micro_step = fuse;
    char *path = tu_tmp_path("noise.ckpt");

    clg_model *ref = build_model(&cfg, NULL, 1);
    OK(train(ref, 0, 0, NOISE_TOTAL));
    snap want;
    take_snap(ref, &want);
    assert_true(isfinite(want.stats.noise_scale) && want.stats.noise_g2 != 0.0f);

    clg_model *a = build_model(&cfg, NULL, 1);
    OK(train(a, 0, 0, NOISE_SAVE_AT));
    clg_stats at_save = clg_stats_init();
    OK(clg_model_stats(a, 1, &at_save));
    clg_grads *g = NULL;
    OK(clg_grads_create(a, CLG_FP32, &g));
    OK(micro_step(a, g, NOISE_SAVE_AT, 0));
    clg_grads_destroy(g);
    /* the pending estimate is in the step block: the first weight and a
     * nonzero sum of squares */
    clg_cycle_state cs;
    OK(clg__cycle_state_get(a, &cs));
    float w0 = weight_of(NOISE_SAVE_AT, 0), small_w, small_ss;
    memcpy(&small_w, &cs.step_block[CLG_SB_SMALL_WEIGHT], 4);
    memcpy(&small_ss, &cs.step_block[CLG_SB_SMALL_SUMSQ], 4);
    assert_memory_equal(&small_w, &w0, sizeof(float));
    assert_true(small_ss > 0.0f && isfinite(small_ss));
    OK(clg_checkpoint_save(a, path, NULL, NULL, 0));
    clg_model_destroy(a);

    clg_model *b = build_model(&cfg, NULL, 77);
    OK(clg_checkpoint_load(b, path, NULL, NULL));
    assert_int_equal(clg_micro_step_index(b), 1);
    OK(train(b, NOISE_SAVE_AT, 1, NOISE_TOTAL));
    snap got;
    take_snap(b, &got);
    assert_same_snap(&want, &got, "noise scale, resumed after the first micro-step");
    assert_same_noise(&want.stats, &got.stats, "noise scale, resumed");
    /* the resumed cycles did move the estimate */
    assert_true(memcmp(&at_save.noise_g2, &want.stats.noise_g2, sizeof(float)) != 0);

    /* control: the same resume without the first micro-step's weight skips
     * that cycle's estimate, and the comparison catches it */
    clg_model *c = build_model(&cfg, NULL, 77);
    OK(clg_checkpoint_load(c, path, NULL, NULL));
    OK(clg__cycle_state_get(c, &cs));
    cs.step_block[CLG_SB_SMALL_WEIGHT] = 0u;
    OK(clg__cycle_state_set(c, &cs));
    OK(train(c, NOISE_SAVE_AT, 1, NOISE_TOTAL));
    clg_stats lost = clg_stats_init();
    OK(clg_model_stats(c, 1, &lost));
    assert_true(memcmp(&lost.noise_g2, &want.stats.noise_g2, sizeof(float)) != 0);

    free_snap(&want);
    free_snap(&got);
    clg_model_destroy(ref);
    clg_model_destroy(b);
    clg_model_destroy(c);
    unlink(path);
    free(path);
}

static void test_noise_mid_cycle_path_a(void **state)
{
    (void)state;
    noise_mid_cycle(0);
}

static void test_noise_mid_cycle_path_c(void **state)
{
    (void)state;
    noise_mid_cycle(1);
}

/* The file opens as plain safetensors (scripts/check-torch-interop.sh opens
 * one with Python's safetensors and torch); here, the layout it relies on. */
static void test_safetensors_layout(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *path = tu_tmp_path("layout.ckpt");
    clg_model *a = saved_model(&cfg, path, 0, NULL, NULL, 0);
    size_t n;
    uint8_t *f = tu_read_file(path, &n);
    uint64_t hlen = header_length(f);
    assert_true(hlen % 8 == 0 && 8 + hlen <= n);
    char *text = tu_xmalloc(hlen + 1);
    memcpy(text, f + 8, hlen);
    text[hlen] = '\0';
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    float *p = tu_xmalloc(clg_model_param_count(a) * sizeof(float));
    OK(clg_model_download_params(a, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(a), NULL));
    /* params of head.w are F32 [3, 11] (its shape) at the place the header
     * says */
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "head.w");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring, "F32");
    char *shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "shape"));
    assert_string_equal(shape, "[3,11]");
    free(shape);
    /* so are its states, accumulator and copy; 1-D tensors stay [count] */
    const char *shaped[] = {"head.w.state0", "head.w.state1", "head.w.state2", "head.w.acc",
                            "head.w.copy"};
    for (size_t i = 0; i < sizeof shaped / sizeof shaped[0]; i++) {
        shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(root, shaped[i]), "shape"));
        if (!shape || strcmp(shape, "[3,11]") != 0)
            fail_msg("%s has shape %s, not [3,11]", shaped[i], shape ? shape : "(none)");
        free(shape);
    }
    shape = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "enc.w"), "shape"));
    assert_string_equal(shape, "[50]");
    free(shape);
    /* only dtypes torch 1.13's safetensors loads: no U32/U16/U64; the step
     * block's uint32 words are stored as I32 */
    for (cJSON *c = root->child; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") == 0)
            continue;
        const char *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype")->valuestring;
        if (strcmp(dt, "F32") && strcmp(dt, "F16") && strcmp(dt, "BF16") && strcmp(dt, "I32"))
            fail_msg("tensor '%s' has dtype %s, which torch 1.13 cannot load", c->string, dt);
    }
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(root, "clgrad.step_block"), "dtype")
                            ->valuestring,
                        "I32");
    cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    size_t b = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    assert_int_equal((size_t)cJSON_GetArrayItem(off, 1)->valuedouble - b, 33 * 4);
    assert_memory_equal(f + 8 + hlen + b, p + 57, 33 * 4);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "enc.w.acc"),
                                         "dtype")->valuestring,
        "BF16");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "enc.w.copy"),
                                         "dtype")->valuestring,
        "F16");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(root, "enc.b.state2")); /* AMSGrad max */
    cJSON_Delete(root);
    free(text);
    free(p);
    free(f);
    clg_model_destroy(a);
    unlink(path);
    free(path);
}

/* ------------------------------------------------------------ strictness */

/* Replaces the first occurrence of from by to (same length) in the header. */
static void patch(uint8_t *f, size_t n, const char *from, const char *to)
{
    size_t fl = strlen(from);
    assert_int_equal(fl, strlen(to));
    for (size_t i = 8; i + fl <= n; i++) {
        if (memcmp(f + i, from, fl) == 0) {
            memcpy(f + i, to, fl);
            return;
        }
    }
    fail_msg("'%s' not found in the file", from);
}

/* Writes the header CRC into f as checkpoint_format.h defines it, computed here on
 * its own: the header begins with the field below; the CRC-32 of the 8
 * length bytes and the header, with the field's 8 digits taken as '0'. */
static void seal(uint8_t *f, size_t n)
{
    static const char prefix[] = "{\"__metadata__\":{\"clgrad.header_crc32\":\"0x";
    const size_t p = sizeof prefix - 1;
    uint64_t hlen = n < 8 ? 0 : header_length(f);
    if (n < 8 || hlen > n - 8 || hlen < p + 9 || memcmp(f + 8, prefix, p) != 0 ||
        f[8 + p + 8] != '"')
        fail_msg("the header does not begin with its CRC field");
    memset(f + 8 + p, '0', 8);
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", (unsigned)clg__crc32(0, f, 8 + (size_t)hlen));
    memcpy(f + 8 + p, hex, 8);
}

/* Rewrites the header with fn (same data), returning a new file with its
 * header CRC sealed. */
static uint8_t *rewrite(const uint8_t *f, size_t n, void (*fn)(cJSON *), size_t *out_n)
{
    uint8_t *out = ckpt_rewrite_header(f, n, fn, out_n);
    assert_non_null(out);
    seal(out, *out_n);
    return out;
}

static void shift_head_offsets(cJSON *root)
{
    cJSON *off = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "head.w"),
                                                  "data_offsets");
    double b = cJSON_GetArrayItem(off, 0)->valuedouble;
    double e = cJSON_GetArrayItem(off, 1)->valuedouble;
    cJSON_ReplaceItemInArray(off, 0, cJSON_CreateNumber(b - 8));
    cJSON_ReplaceItemInArray(off, 1, cJSON_CreateNumber(e - 8));
}

static void far_head_offsets(cJSON *root)
{
    cJSON *off = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "head.w"),
                                                  "data_offsets");
    cJSON_ReplaceItemInArray(off, 0, cJSON_CreateNumber(1e9));
    cJSON_ReplaceItemInArray(off, 1, cJSON_CreateNumber(1e9 + 132));
}

/* Loads bytes (written to a file) into m; expects status and msg, and the
 * model unchanged. */
static void expect_rejected(clg_model *m, const snap *before, const uint8_t *f, size_t n,
                            clg_status status, const char *msg, const char *what)
{
    char *path = tu_tmp_path("bad.ckpt");
    tu_write_file(path, f, n);
    meta_seen seen = {0};
    clg_status st = clg_checkpoint_load(m, path, collect_meta, &seen);
    if (st != status || !strstr(clg_last_error(tu_ctx), msg))
        fail_msg("%s: expected %s with '%s', got %s: %s", what, clg_status_string(status), msg,
                 clg_status_string(st), clg_last_error(tu_ctx));
    assert_int_equal(seen.n, 0);
    snap after;
    take_snap(m, &after);
    assert_same_snap(before, &after, what);
    free_snap(&after);
    unlink(path);
    free(path);
}

static void test_strict_damage(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *path = tu_tmp_path("good.ckpt");
    clg_model *a = saved_model(&cfg, path, 2, NULL, NULL, 0);
    size_t n;
    uint8_t *good = tu_read_file(path, &n);
    uint64_t hlen = header_length(good);

    /* the live model, mid-cycle, with its own distinct state */
    clg_model *m = build_model(&cfg, NULL, 7);
    OK(train(m, 0, 0, 1));
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    OK(micro_step(m, g, 1, 0));
    clg_grads_destroy(g);
    snap before;
    take_snap(m, &before);

    uint8_t *f = tu_xmalloc(n);
    size_t cuts[] = {0, 5, 8, 8 + (size_t)hlen / 2, 8 + (size_t)hlen, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        expect_rejected(m, &before, good, cuts[i], CLG_ERR_CORRUPT_FILE, "truncated",
                        "truncated file");

    memcpy(f, good, n);
    memset(f, 0xff, 8);
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "exceeds the limit",
                    "bad header length");
    memcpy(f, good, n);
    uint64_t big = CLG_CKPT_HEADER_MAX + 8;
    for (int i = 0; i < 8; i++)
        f[i] = (uint8_t)(big >> (8 * i));
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "exceeds the limit",
                    "header too large");
    memcpy(f, good, n);
    f[8] = '[';
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "does not begin with its CRC field",
                    "no CRC field");
    memcpy(f, good, n);
    patch(f, n, "\"clgrad.format\":\"", "\"clgrad.format\"[\"");
    seal(f, n);
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "not valid JSON", "bad JSON");
    memcpy(f, good, n);
    patch(f, n, "\"clgrad-checkpoint\"", "\"clgrad-checkpoinX\"");
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch",
                    "wrong format, CRC not updated");
    seal(f, n);
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "not a clgrad checkpoint",
                    "wrong format");
    memcpy(f, good, n);
    patch(f, n, "\"clgrad.version\":\"2\"", "\"clgrad.version\":\"7\"");
    seal(f, n);
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "version 7 is not supported",
                    "wrong version");
    memcpy(f, good, n);
    f[n - 1] ^= 0x01;
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "CRC-32 mismatch", "CRC (last byte)");
    memcpy(f, good, n);
    f[8 + hlen + 200] ^= 0x80;
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "CRC-32 mismatch",
                    "CRC (param byte)");

    size_t rn;
    uint8_t *r = rewrite(good, n, shift_head_offsets, &rn);
    expect_rejected(m, &before, r, rn, CLG_ERR_CORRUPT_FILE, "overlaps", "overlapping offsets");
    free(r);
    r = rewrite(good, n, far_head_offsets, &rn);
    expect_rejected(m, &before, r, rn, CLG_ERR_CORRUPT_FILE, "beyond the end of the data",
                    "offsets out of bounds");
    free(r);

    /* not a file at all */
    char *missing = tu_tmp_path("missing.ckpt");
    assert_int_equal(clg_checkpoint_load(m, missing, NULL, NULL), CLG_ERR_IO);
    assert_non_null(strstr(clg_last_error(tu_ctx), "cannot open"));
    /* a directory: the message says so, without a stale errno appended */
    errno = EEXIST;
    assert_int_equal(clg_checkpoint_load(m, tu_tmpdir, NULL, NULL), CLG_ERR_IO);
    assert_non_null(strstr(clg_last_error(tu_ctx), "is not a regular file"));
    assert_null(strstr(clg_last_error(tu_ctx), strerror(EEXIST)));
    snap after;
    take_snap(m, &after);
    assert_same_snap(&before, &after, "IO errors");
    free_snap(&after);

    free(missing);
    free(f);
    free(good);
    free_snap(&before);
    clg_model_destroy(a);
    clg_model_destroy(m);
    unlink(path);
    free(path);
}

/* Issue 14, point 3: one flipped bit in the JSON header turned the caller's
 * train.updates from 10 into 18, and the load succeeded. The header CRC
 * refuses it (and any other flip of the header); the counters stored twice
 * must agree even where the CRC was recomputed. */
static void set_cycles_meta(cJSON *root)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    cJSON_ReplaceItemInObjectCaseSensitive(m, "clgrad.cycles", cJSON_CreateString("5"));
}

static void set_updates_meta(cJSON *root)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    cJSON_ReplaceItemInObjectCaseSensitive(m, "clgrad.updates", cJSON_CreateString("1"));
}

static void test_header_protected(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *path = tu_tmp_path("header.ckpt");
    const char *keys[] = {"train.updates"}, *values[] = {"10"};
    clg_model *a = saved_model(&cfg, path, 3, keys, values, 1);
    size_t n;
    uint8_t *good = tu_read_file(path, &n);

    clg_model *m = build_model(&cfg, NULL, 7);
    OK(train(m, 0, 0, 1));
    snap before;
    take_snap(m, &before);

    uint8_t *f = tu_xmalloc(n);
    memcpy(f, good, n);
    patch(f, n, "\"train.updates\":\"10\"", "\"train.updates\":\"18\""); /* 0x30 ^ 0x08 */
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch",
                    "train.updates 10 -> 18");
    /* clgrad's own counters and a shape, likewise */
    memcpy(f, good, n);
    patch(f, n, "\"clgrad.micro_total\":\"9\"", "\"clgrad.micro_total\":\"8\"");
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch",
                    "micro_total");
    memcpy(f, good, n);
    patch(f, n, "[3,11]", "[3,13]");
    expect_rejected(m, &before, f, n, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch", "shape");

    /* counters that disagree, header CRC recomputed */
    size_t rn;
    uint8_t *r = rewrite(good, n, set_cycles_meta, &rn);
    expect_rejected(m, &before, r, rn, CLG_ERR_CORRUPT_FILE,
                    "counters disagree: clgrad.cycles is 5 but clgrad.updates 3 + "
                    "clgrad.skipped_updates 0 is 3",
                    "cycles");
    free(r);
    r = rewrite(good, n, set_updates_meta, &rn);
    expect_rejected(m, &before, r, rn, CLG_ERR_CORRUPT_FILE,
                    "counters disagree: clgrad.updates is 1 in the metadata but the step "
                    "block's T (updates applied) is 3",
                    "updates");
    free(r);

    free(f);
    free(good);
    free_snap(&before);
    clg_model_destroy(a);
    clg_model_destroy(m);
    unlink(path);
    free(path);
}

/* A valid checkpoint of another model: each difference is a mismatch. */
static void expect_mismatch(const char *path, const clg_config *cfg, const variant *v,
                            const char *msg)
{
    clg_model *m = build_model(cfg, v, 9);
    OK(train(m, 0, 0, 1));
    snap before, after;
    take_snap(m, &before);
    clg_status st = clg_checkpoint_load(m, path, NULL, NULL);
    if (st != CLG_ERR_MISMATCH || !strstr(clg_last_error(tu_ctx), msg))
        fail_msg("expected CLG_ERR_MISMATCH with '%s', got %s: %s", msg, clg_status_string(st),
                 clg_last_error(tu_ctx));
    take_snap(m, &after);
    assert_same_snap(&before, &after, msg);
    free_snap(&before);
    free_snap(&after);
    clg_model_destroy(m);
}

static void test_strict_mismatch(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *path = tu_tmp_path("model.ckpt");
    clg_model *a = saved_model(&cfg, path, 1, NULL, NULL, 0);
    clg_model_destroy(a);

/* cfg with one field changed must be refused with msg */
#define EXPECT_FIELD_MISMATCH(field, value, msg)                                                   \
    do {                                                                                           \
        clg_config changed = cfg;                                                                  \
        changed.field = value;                                                                     \
        expect_mismatch(path, &changed, NULL, msg);                                                \
    } while (0)
    EXPECT_FIELD_MISMATCH(acc_dtype, CLG_FP32,
                          "acc_dtype was 'bf16' when the checkpoint was saved, the model has "
                          "'fp32'");
    EXPECT_FIELD_MISMATCH(param_copy_dtype, CLG_BF16,
                          "param_copy_dtype was 'fp16' when the checkpoint was saved, the model "
                          "has 'bf16'");
    EXPECT_FIELD_MISMATCH(param_copy_dtype, CLG_DTYPE_NONE, "param_copy_dtype was 'fp16'");
    /* the loss-scale settings (issue 14, point 4) */
    EXPECT_FIELD_MISMATCH(loss_scale, CLG_LOSS_SCALE_NONE,
                          "loss_scale was 'dynamic' when the checkpoint was saved, the model has "
                          "'none'");
    EXPECT_FIELD_MISMATCH(loss_scale, CLG_LOSS_SCALE_STATIC,
                          "loss_scale was 'dynamic' when the checkpoint was saved, the model has "
                          "'static'");
    EXPECT_FIELD_MISMATCH(loss_scale_growth, 4.0f,
                          "loss_scale_growth was '2' when the checkpoint was saved, the model "
                          "has '4'");
    EXPECT_FIELD_MISMATCH(loss_scale_backoff, 0.25f,
                          "loss_scale_backoff was '0.5' when the checkpoint was saved, the model "
                          "has '0.25'");
    EXPECT_FIELD_MISMATCH(loss_scale_interval, 3,
                          "loss_scale_interval was '2' when the checkpoint was saved, the model "
                          "has '3'");
    EXPECT_FIELD_MISMATCH(loss_scale_min, 2.0f,
                          "loss_scale_min was '1' when the checkpoint was saved, the model has "
                          "'2'");
    EXPECT_FIELD_MISMATCH(loss_scale_max, 65536.0f,
                          "loss_scale_max was '16777216' when the checkpoint was saved, the "
                          "model has '65536'");
    EXPECT_FIELD_MISMATCH(normalize, CLG_NORM_SUM,
                          "normalize was 'mean' when the checkpoint was saved, the model has "
                          "'sum'");
    clg_config c = cfg;
    c.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    c.noise_scale = 0; /* not available in skip-micro mode */
    expect_mismatch(path, &c, NULL, "nonfinite was 'skip_update' when the checkpoint was "
                                    "saved, the model has 'skip_micro'");
    variant transposed = {.head_transposed = 1};
    expect_mismatch(path, &cfg, &transposed,
                    "tensor 'head.w' has shape [3, 11] in the file but [11, 3] in the model");
    variant resized = {.bias_count = 8};
    expect_mismatch(path, &cfg, &resized, "shape [7] in the file but [8]");
    variant renamed = {.head_name = "head.weight"};
    expect_mismatch(path, &cfg, &renamed, "which the model lacks");
    variant extra = {.extra_tensor = 1};
    expect_mismatch(path, &cfg, &extra, "model tensor 'extra' is not in the file");
    variant dropped = {.drop_head = 1};
    expect_mismatch(path, &cfg, &dropped, "'head.w', which the model lacks");
    EXPECT_FIELD_MISMATCH(optimizer, CLG_ADAM, "optimizer 'adamw', the model uses 'adam'");
    EXPECT_FIELD_MISMATCH(amsgrad, 0,
                          "amsgrad was '1' when the checkpoint was saved, the model has '0'");
#undef EXPECT_FIELD_MISMATCH
    unlink(path);

    /* mid-cycle (2 of 3 micro-steps taken) into a model whose cycle is 2 */
    a = build_model(&cfg, NULL, 1);
    OK(train(a, 0, 0, 1));
    clg_grads *g = NULL;
    OK(clg_grads_create(a, CLG_FP32, &g));
    OK(micro_step(a, g, 1, 0));
    OK(micro_step(a, g, 1, 1));
    clg_grads_destroy(g);
    assert_int_equal(clg_micro_step_index(a), 2);
    OK(clg_checkpoint_save(a, path, NULL, NULL, 0));
    clg_model_destroy(a);
    clg_config short_cycle = cfg;
    short_cycle.accum_steps = 2;
    expect_mismatch(path, &short_cycle, NULL, "2 micro-steps into a cycle");
    unlink(path);
    free(path);
}

static void test_save_rejects(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *path = tu_tmp_path("reject.ckpt");
    clg_model *a = build_model(&cfg, NULL, 1);
    const char *keys[] = {"clgrad.step"}, *values[] = {"1"};
    assert_int_equal(clg_checkpoint_save(a, path, keys, values, 1), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(tu_ctx), "reserved"));
    assert_int_equal(clg_checkpoint_save(a, path, NULL, values, 1), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_checkpoint_save(a, NULL, NULL, NULL, 0), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(clg_checkpoint_save(NULL, path, NULL, NULL, 0), CLG_ERR_INVALID_ARGUMENT);
    assert_int_equal(access(path, F_OK), -1);
    char *nodir = tu_tmp_path("no/such/dir.ckpt");
    assert_int_equal(clg_checkpoint_save(a, nodir, NULL, NULL, 0), CLG_ERR_IO);
    free(nodir);
    clg_model *unfinished = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &unfinished));
    assert_int_equal(clg_checkpoint_save(unfinished, path, NULL, NULL, 0), CLG_ERR_STATE);
    assert_int_equal(clg_checkpoint_load(unfinished, path, NULL, NULL), CLG_ERR_STATE);
    clg_model_destroy(unfinished);
    clg_model_destroy(a);
    free(path);
}

/* ------------------------------------------------------------ stale temps */

/* Issue 14, point 5: temporary files of killed saves pile up. A save
 * removes those of its own target whose process is gone, and nothing else:
 * not a live process's, not another target's, not a name that only looks
 * like one. */
static void make_file(const char *dir, const char *name)
{
    char *p = tu_xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    tu_write_file(p, (const uint8_t *)"stale", 5);
    free(p);
}

static int file_exists(const char *dir, const char *name)
{
    char *p = tu_xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    int ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

static void test_stale_temps(void **state)
{
    (void)state;
    /* a pid that no longer exists: a child that has exited and been reaped */
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    assert_true(kill(dead, 0) == -1 && errno == ESRCH);
    long live = (long)getpid();

    char stale[64], stale2[64], mine[64], other_target[64], odd1[64], odd2[64], odd3[64];
    snprintf(stale, sizeof stale, "temps.ckpt.tmp.%ld.0", (long)dead);
    snprintf(stale2, sizeof stale2, "temps.ckpt.tmp.%ld.41", (long)dead);
    snprintf(mine, sizeof mine, "temps.ckpt.tmp.%ld.7", live);
    snprintf(other_target, sizeof other_target, "other.ckpt.tmp.%ld.0", (long)dead);
    snprintf(odd1, sizeof odd1, "temps.ckpt.tmp.%ld.0.bak", (long)dead);
    snprintf(odd2, sizeof odd2, "temps.ckpt.tmp.%ld", (long)dead);
    snprintf(odd3, sizeof odd3, "xtemps.ckpt.tmp.%ld.0", (long)dead);
    const char *kept[] = {mine, other_target, odd1, odd2, odd3};
    make_file(tu_tmpdir, stale);
    make_file(tu_tmpdir, stale2);
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        make_file(tu_tmpdir, kept[i]);

    clg_config cfg = rich_config();
    clg_model *a = build_model(&cfg, NULL, 1);
    char *path = tu_tmp_path("temps.ckpt");
    OK(clg_checkpoint_save(a, path, NULL, NULL, 0));
    if (file_exists(tu_tmpdir, stale) || file_exists(tu_tmpdir, stale2))
        fail_msg("the temporary file of dead process %ld is still there", (long)dead);
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (!file_exists(tu_tmpdir, kept[i]))
            fail_msg("'%s' was removed, but it is not a dead save's temporary file of this "
                     "target", kept[i]);
    /* the save itself left no temporary file, and loads */
    assert_int_equal(count_prefixed(tu_tmpdir, "temps.ckpt.tmp.", 0), 3); /* mine, odd1, odd2 */
    OK(clg_checkpoint_load(a, path, NULL, NULL));

    count_prefixed(tu_tmpdir, "temps.ckpt.tmp.", 1);
    count_prefixed(tu_tmpdir, "other.ckpt.tmp.", 1);
    count_prefixed(tu_tmpdir, "xtemps.ckpt.tmp.", 1);
    clg_model_destroy(a);
    unlink(path);
    free(path);
}

/* ------------------------------------------------------------ crash */

/* Child: loads src into a fresh model, then saves it over dst, dying by
 * SIGKILL at the n-th write. Exit 0: the save completed. */
static int save_child(const char *src, const char *dst, const char *n_str)
{
    tu_ctx = tu_context_or_skip();
    clg_config cfg = rich_config();
    clg_model *m = build_model(&cfg, NULL, 99);
    clg_status st = clg_checkpoint_load(m, src, NULL, NULL);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "save child: load: %s\n", clg_last_error(tu_ctx));
        return 2;
    }
    const char *keys[] = {"version"}, *values[] = {"new"};
    clg__fault_arm_kill(CLG_FAULT_WRITE, strtoull(n_str, NULL, 10));
    st = clg_checkpoint_save(m, dst, keys, values, 1);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "save child: save: %s\n", clg_last_error(tu_ctx));
        return 3;
    }
    clg_model_destroy(m);
    clg_context_destroy(tu_ctx);
    return 0;
}

static void test_crash_during_save(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    char *target = tu_tmp_path("crash.ckpt");
    char *newsrc = tu_tmp_path("crash-new-source.ckpt");
    const char *keys[] = {"version"}, *old_v[] = {"old"}, *new_v[] = {"new"};
    clg_model *a = saved_model(&cfg, target, 2, keys, old_v, 1);
    OK(train(a, 2, 0, 4));
    OK(clg_checkpoint_save(a, newsrc, keys, new_v, 1));
    size_t old_n, new_n;
    uint8_t *old_bytes = tu_read_file(target, &old_n);
    uint8_t *new_bytes = tu_read_file(newsrc, &new_n);
    assert_true(old_n != new_n || memcmp(old_bytes, new_bytes, old_n) != 0);

    clg_model *b = build_model(&cfg, NULL, 5);
    unsigned kills = 0, saw_new_after_kill = 0;
    for (unsigned k = 1; k < 1000; k++) {
        char nbuf[16];
        snprintf(nbuf, sizeof nbuf, "%u", k);
        char *args[] = {"test_checkpoint", "--save-child", newsrc, target, nbuf, NULL};
        int status = run_self(args);
        size_t got_n;
        uint8_t *got = tu_read_file(target, &got_n);
        int is_old = got_n == old_n && memcmp(got, old_bytes, old_n) == 0;
        int is_new = got_n == new_n && memcmp(got, new_bytes, new_n) == 0;
        free(got);
        meta_seen seen = {0};
        clg_status st = clg_checkpoint_load(b, target, collect_meta, &seen);
        if (st != CLG_SUCCESS)
            fail_msg("kill point %u: load failed: %s", k, clg_last_error(tu_ctx));
        assert_int_equal(seen.n, 1);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
            kills++;
            if (!is_old && !is_new)
                fail_msg("kill point %u: the file is neither the old nor the new checkpoint", k);
            assert_string_equal(seen.values[0], is_old ? "old" : "new");
            saw_new_after_kill += is_new;
            /* leftover temporary files of the killed save: expected */
            count_prefixed(tu_tmpdir, "crash.ckpt.tmp.", 1);
            /* restore the old file for the next kill point */
            tu_write_file(target, old_bytes, old_n);
            continue;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("kill point %u: child ended with status 0x%x", k, status);
        /* the save completed without reaching write k: all points tried */
        assert_true(is_new);
        assert_string_equal(seen.values[0], "new");
        assert_int_equal(count_prefixed(tu_tmpdir, "crash.ckpt.tmp.", 0), 0);
        break;
    }
    /* header, every tensor, fsync, rename, directory fsync */
    assert_true(kills >= 8);
    /* killed after the rename but before the directory fsync: new file */
    assert_true(saw_new_after_kill >= 1);
    print_message("crash during save: %u kill points tried, each left a complete old or new "
                  "checkpoint (%u of them the new one)\n",
                  kills, saw_new_after_kill);
    free(old_bytes);
    free(new_bytes);
    clg_model_destroy(a);
    clg_model_destroy(b);
    unlink(target);
    unlink(newsrc);
    free(target);
    free(newsrc);
}

/* ------------------------------------------------------------ resume */

enum { RESUME_SAVE_AT = 10, RESUME_TOTAL = 20 };

typedef struct position {
    unsigned update, micro;
    int found;
} position;

static void read_position(const char *key, const char *value, void *user)
{
    position *p = user;
    if (strcmp(key, "train.update") == 0)
        p->update = (unsigned)strtoul(value, NULL, 10), p->found |= 1;
    if (strcmp(key, "train.micro") == 0)
        p->micro = (unsigned)strtoul(value, NULL, 10), p->found |= 2;
}

/* Child: a fresh process loads the checkpoint into a model initialized
 * differently, trains to RESUME_TOTAL from the position stored in the
 * caller's metadata and writes the raw parameter bytes to out. */
static int resume_child(const char *ckpt, const char *out)
{
    tu_ctx = tu_context_or_skip();
    clg_config cfg = rich_config();
    clg_model *m = build_model(&cfg, NULL, 31337);
    position pos = {0};
    clg_status st = clg_checkpoint_load(m, ckpt, read_position, &pos);
    if (st == CLG_SUCCESS && pos.found != 3)
        st = CLG_ERR_CORRUPT_FILE;
    if (st == CLG_SUCCESS && clg_micro_step_index(m) != pos.micro) {
        fprintf(stderr, "resume child: micro-step %u after load, metadata says %u\n",
                clg_micro_step_index(m), pos.micro);
        return 4;
    }
    if (st == CLG_SUCCESS)
        st = train(m, pos.update, pos.micro, RESUME_TOTAL);
    size_t n = clg_model_param_count(m);
    float *p = tu_xmalloc(n * sizeof *p);
    if (st == CLG_SUCCESS)
        st = clg_model_download_params(m, CLG_ALL_TENSORS, p, (size_t)clg_model_param_count(m), NULL);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "resume child: %s: %s\n", clg_status_string(st), clg_last_error(tu_ctx));
        return 2;
    }
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(p, sizeof *p, n, f) != n || fclose(f) != 0)
        return 3;
    free(p);
    clg_model_destroy(m);
    clg_context_destroy(tu_ctx);
    return 0;
}

static void test_resume_bit_exact(void **state)
{
    (void)state;
    clg_config cfg = rich_config();
    /* uninterrupted */
    clg_model *ref = build_model(&cfg, NULL, 1);
    OK(train(ref, 0, 0, RESUME_TOTAL));
    size_t n = clg_model_param_count(ref);
    float *want = tu_xmalloc(n * sizeof *want);
    OK(clg_model_download_params(ref, CLG_ALL_TENSORS, want, (size_t)clg_model_param_count(ref), NULL));
    clg_stats ref_stats = clg_stats_init();
    OK(clg_model_stats(ref, 1, &ref_stats));
    assert_true(ref_stats.skipped_updates == 2); /* the two infs */

    /* interrupted at update 10 with one micro-step of the cycle taken */
    clg_model *m = build_model(&cfg, NULL, 1);
    OK(train(m, 0, 0, RESUME_SAVE_AT));
    clg_grads *g = NULL;
    OK(clg_grads_create(m, CLG_FP32, &g));
    OK(micro_step(m, g, RESUME_SAVE_AT, 0));
    clg_grads_destroy(g);
    char *ckpt = tu_tmp_path("resume.ckpt");
    char *out = tu_tmp_path("resume.params");
    const char *keys[] = {"train.update", "train.micro"};
    const char *values[] = {"10", "1"};
    OK(clg_checkpoint_save(m, ckpt, keys, values, 2));
    clg_model_destroy(m);

    char *args[] = {"test_checkpoint", "--resume-child", ckpt, out, NULL};
    int status = run_self(args);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("resume child failed (status 0x%x)", status);
    size_t got_n;
    uint8_t *got = tu_read_file(out, &got_n);
    assert_int_equal(got_n, n * sizeof(float));
    size_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff += memcmp(got + i * sizeof(float), &want[i], sizeof(float)) != 0;
    if (diff)
        fail_msg("resumed run differs from the uninterrupted one in %zu of %zu parameters", diff,
                 n);
    /* and training did move the parameters (the test can fail) */
    float *init = tu_xmalloc(n * sizeof *init);
    tu_fill_uniform(init, n, 1, -1.0f, 1.0f);
    assert_true(memcmp(init, want, n * sizeof(float)) != 0);
    free(init);
    free(got);
    free(want);
    clg_model_destroy(ref);
    unlink(ckpt);
    unlink(out);
    free(ckpt);
    free(out);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--save-child") == 0)
        return save_child(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "--resume-child") == 0)
        return resume_child(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_rich),
        cmocka_unit_test(test_round_trip_sgd),
        cmocka_unit_test(test_round_trip_lion),
        cmocka_unit_test(test_noise_mid_cycle_path_a),
        cmocka_unit_test(test_noise_mid_cycle_path_c),
        cmocka_unit_test(test_safetensors_layout),
        cmocka_unit_test(test_strict_damage),
        cmocka_unit_test(test_header_protected),
        cmocka_unit_test(test_strict_mismatch),
        cmocka_unit_test(test_save_rejects),
        cmocka_unit_test(test_stale_temps),
        cmocka_unit_test(test_crash_during_save),
        cmocka_unit_test(test_resume_bit_exact),
    };
    return cmocka_run_group_tests(tests, tu_group_setup_tmpdir, tu_group_teardown);
}
