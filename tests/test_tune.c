/* test_tune.c - CLBlast tuning on the device (tools/tune/): the device key
 * and cache directory clgrad exports for it, a tuning file saved and loaded
 * back for this device, corrupt, truncated and foreign files refused with
 * a message, CLBlastOverrideParameters' effect read back from CLBlast and
 * undone, the trainer's GEMM call right on every MLP shape on both of
 * CLBlast's kernels, the trainer applying a tuning (and still running, on
 * CLBlast's defaults, with a warning, when the file is bad), runs with a
 * tuning deterministic, CRC-valid forgeries of issue 24 (values that
 * crashed, hung or trained wrong) refused by the trainer and by
 * clgrad-tune --show with the parameter named, a tuning's GEMMs checked on
 * the device before use, and the clgrad-tune program itself with a small
 * budget on a small shape (CLGRAD_TUNE_EXE). */
#define _GNU_SOURCE
#include <setjmp.h>
#include "clgrad_advanced.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clblast_params.h"
#include "dataset.h"
#include "gemm_timing.h"
#include "gpt_model.h"
#include "gpt_run.h"
#include "mlp.h"
#include "options.h"
#include "task.h"
#include "tasks.h"
#include "classify_run.h"
#include "tune_save.h"
#include "tuning_apply.h"
#include "tuning_verify.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#ifndef CLGRAD_TUNE_EXE
#define CLGRAD_TUNE_EXE "clgrad-tune"
#endif

static char cache_dir[1024];

/* Every test sees CLGRAD_CACHE_DIR = <scratch>/cache, so that the tuning
 * files it writes are the ones the trainer looks for. */
static int setup(void **state)
{
    if (tu_group_setup_tmpdir(state) != 0)
        return -1;
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", tu_tmpdir);
    setenv("CLGRAD_CACHE_DIR", cache_dir, 1);
    return 0;
}

static int teardown(void **state)
{
    char err[256];
    tuning_restore_defaults(tu_ctx, err, sizeof err);
    return tu_group_teardown(state);
}

static void get(const char *kernel, clblast_param *p, size_t *n)
{
    int st = clblast_params_get(clg_context_device(tu_ctx), kernel, 32, p, TUNING_MAX_PARAMS, n);
    if (st != 0 || *n == 0)
        fail_msg("clblast_params_get(%s): status %d, %zu parameters", kernel, st, *n);
}

static void record(tuning_kernel *k, const char *name, const clblast_param *p, size_t n)
{
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->precision = 32;
    k->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(k->param[i], sizeof k->param[i], "%s", p[i].name);
        k->value[i] = p[i].value;
    }
}

static size_t value_of(const tuning_kernel *k, const char *name)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->param[i], name) == 0)
            return k->value[i];
    fail_msg("%s has no %s", k->name, name);
    return 0;
}

static void set_value(tuning_kernel *k, const char *name, size_t v)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->param[i], name) == 0) {
            k->value[i] = v;
            return;
        }
    fail_msg("%s has no %s", k->name, name);
}

/* A tuning for this device: CLBlast's defaults with XgemmDirect's set to a
 * configuration its tuner verifies on PoCL (WGD 32, 16 x 8 threads, vector
 * width 2), so that applying it changes something. */
static tuning device_tuning(void)
{
    tuning t;
    memset(&t, 0, sizeof t);
    OK(clg_context_device_key(tu_ctx, t.key));
    snprintf(t.device, sizeof t.device, "%s", clg_context_device_info(tu_ctx)->name);
    snprintf(t.driver, sizeof t.driver, "%s", clg_context_device_info(tu_ctx)->driver_version);
    snprintf(t.clblast, sizeof t.clblast, "%s", tuning_clblast_version());
    snprintf(t.created, sizeof t.created, "2024-12-01T09:00:00Z");
    snprintf(t.model, sizeof t.model, "test_tune");
    clblast_param p[TUNING_MAX_PARAMS];
    size_t n;
    get("XgemmDirect", p, &n);
    record(&t.kernel[t.n_kernels++], "XgemmDirect", p, n);
    get("GemmRoutine", p, &n);
    record(&t.kernel[t.n_kernels++], "GemmRoutine", p, n);
    get("Xgemm", p, &n); /* CLBlast's own: the forgeries change them */
    record(&t.kernel[t.n_kernels++], "Xgemm", p, n);
    tuning_kernel *d = &t.kernel[0];
    set_value(d, "WGD", 32);
    set_value(d, "MDIMCD", 16);
    set_value(d, "MDIMAD", 16);
    set_value(d, "NDIMCD", 8);
    set_value(d, "NDIMBD", 8);
    set_value(d, "VWMD", 2);
    set_value(d, "VWND", 2);
    return t;
}

static void save(const char *path, const tuning *t)
{
    char err[1024];
    if (tune_save(path, t, err, sizeof err) != 0)
        fail_msg("tune_save: %s", err);
}

static void device_path(char *path, size_t size)
{
    char err[512];
    if (tuning_path(tu_ctx, NULL, path, size, err, sizeof err) != 0)
        fail_msg("tuning_path: %s", err);
}

/* ------------------------------------------------------- forgeries */

typedef struct edit {
    const char *kernel, *name;
    size_t value;
} edit;

/* t as clgrad-tune writes it, then with each edit's kernel record holding
 * name=value and the CRC line recomputed (`crc32 %08x` of the bytes before
 * it): what a user who edits a file and re-sums it, or a hostile one,
 * hands the trainer. tuning_format itself would refuse these values. */
static void forge(const char *path, const tuning *t, const edit *e, size_t n_edits)
{
    size_t len;
    char *text = tuning_format(t, &len);
    assert_non_null(text);
    for (size_t i = 0; i < n_edits; i++) {
        char line[64], key[64];
        snprintf(line, sizeof line, "\nkernel %s 32 ", e[i].kernel);
        snprintf(key, sizeof key, " %s=", e[i].name);
        char *rec = strstr(text, line);
        assert_non_null(rec);
        char *at = strstr(rec + 1, key), *eol = strchr(rec + 1, '\n');
        assert_true(at && at < eol);
        at += strlen(key);
        size_t digits = strspn(at, "0123456789");
        char *out = tu_xmalloc(len + 32);
        int head = (int)(at - text);
        len = (size_t)sprintf(out, "%.*s%zu%s", head, text, e[i].value, at + digits);
        free(text);
        text = out;
    }
    size_t body = len - strlen("crc32 00000000\n");
    sprintf(text + body, "crc32 %08lx\n", crc32(0L, (const Bytef *)text, (uInt)body));
    tu_write_file(path, text, len);
    free(text);
}

/* The cases, each with the message that refuses it. */
static const struct forgery {
    const char *what;
    edit e[3];
    size_t n;
    const char *why;
} forgeries[] = {
    {"WGD=0 (crashed in clblast::CeilDiv)", {{"XgemmDirect", "WGD", 0}}, 1,
     "kernel XgemmDirect: WGD=0 is outside the values its tuner can produce (8, 16, 32, 64)"},
    {"WGD=65536 (hung)", {{"XgemmDirect", "WGD", 65536}}, 1,
     "kernel XgemmDirect: WGD=65536 is outside the values its tuner can produce "
     "(8, 16, 32, 64)"},
    {"WGD=3 (trained wrong)", {{"XgemmDirect", "WGD", 3}}, 1,
     "kernel XgemmDirect: WGD=3 is outside the values its tuner can produce (8, 16, 32, 64)"},
    {"MDIMCD=NDIMCD=32 (trained wrong)",
     {{"XgemmDirect", "MDIMCD", 32}, {"XgemmDirect", "NDIMCD", 32}}, 2,
     "kernel XgemmDirect: WGD=32 is not a multiple of MDIMCD*VWMD = 64"},
    /* the file's first broken record is named: GemmRoutine precedes Xgemm */
    {"XGEMM_MIN_INDIRECT_SIZE=0 MWG=48 VWM=8 (trained wrong)",
     {{"GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE", 0}, {"Xgemm", "MWG", 48}, {"Xgemm", "VWM", 8}},
     3, "kernel GemmRoutine: XGEMM_MIN_INDIRECT_SIZE=0 is outside the values its tuner can "
        "produce (1..65536)"},
    {"MWG=48 VWM=8", {{"Xgemm", "MWG", 48}, {"Xgemm", "VWM", 8}}, 2,
     "kernel Xgemm: MWG=48 is outside the values its tuner can produce (8, 16, 32, 64, 128)"},
};
#define N_FORGERIES (sizeof forgeries / sizeof *forgeries)

/* ------------------------------------------------- key and directory */

static void test_key_and_dir(void **state)
{
    (void)state;
    char key[65], again[65], dir[1024], path[1024];
    OK(clg_context_device_key(tu_ctx, key));
    assert_int_equal(strlen(key), 64);
    assert_int_equal(strspn(key, "0123456789abcdef"), 64);
    OK(clg_context_device_key(tu_ctx, again));
    assert_string_equal(key, again);
    OK(clg_cache_dir(dir, sizeof dir));
    assert_string_equal(dir, cache_dir);
    device_path(path, sizeof path);
    char want[1200];
    snprintf(want, sizeof want, "%s/clblast-%s.tune", cache_dir, key);
    assert_string_equal(path, want);

    /* the failures name what is wrong */
    assert_int_equal(clg_context_device_key(NULL, key), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(NULL), "clg_context_device_key"));
    assert_int_equal(clg_cache_dir(dir, 4), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(NULL), "size is 4"));
    setenv("CLGRAD_CACHE_DIR", "off", 1);
    assert_int_equal(clg_cache_dir(dir, sizeof dir), CLG_ERR_UNSUPPORTED);
    assert_non_null(strstr(clg_last_error(NULL), "CLGRAD_CACHE_DIR"));
    char err[512];
    assert_int_equal(tuning_path(tu_ctx, NULL, path, sizeof path, err, sizeof err), -1);
    setenv("CLGRAD_CACHE_DIR", cache_dir, 1);
}

/* ------------------------------------------------------ load checks */

static void expect_refused(const char *path, const char *needle)
{
    tuning t;
    char err[1024] = "";
    int rc = tuning_load(tu_ctx, path, &t, err, sizeof err);
    if (rc != -1)
        fail_msg("%s: tuning_load returned %d, expected a refusal", path, rc);
    if (!strstr(err, needle))
        fail_msg("%s: message '%s' does not say '%s'", path, err, needle);
}

static void test_save_load_and_refusals(void **state)
{
    (void)state;
    char path[1024];
    device_path(path, sizeof path);
    unlink(path);
    tuning t = device_tuning(), back;
    char err[1024];
    assert_int_equal(tuning_load(tu_ctx, path, &back, err, sizeof err), 1); /* none yet */
    save(path, &t);
    if (tuning_load(tu_ctx, path, &back, err, sizeof err) != 0)
        fail_msg("loading what was saved: %s", err);
    assert_string_equal(back.key, t.key);
    assert_int_equal(value_of(&back.kernel[0], "WGD"), 32);
    /* no temporary file left next to it */
    char *dir = tu_tmp_path("cache");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", dir);
    assert_int_not_equal(system(cmd), 0);
    free(dir);

    size_t n;
    uint8_t *good = tu_read_file(path, &n);
    char *bad = tu_tmp_path("bad.tune");
    /* a flipped byte in the middle of the parameters */
    uint8_t *copy = tu_xmalloc(n);
    memcpy(copy, good, n);
    copy[n / 2] ^= 0x04;
    tu_write_file(bad, copy, n);
    expect_refused(bad, "CRC-32 mismatch");
    /* truncated */
    tu_write_file(bad, good, n - 20);
    expect_refused(bad, "truncated");
    tu_write_file(bad, good, 0);
    expect_refused(bad, "empty");
    /* not a tuning at all */
    tu_write_file(bad, "hello\n", 6);
    expect_refused(bad, "crc32");
    /* foreign: another device's key, and another CLBlast */
    tuning f = t;
    f.key[0] = f.key[0] == 'a' ? 'b' : 'a';
    snprintf(f.device, sizeof f.device, "Some Other GPU");
    save(bad, &f);
    expect_refused(bad, "another device or driver ('Some Other GPU'");
    f = t;
    snprintf(f.clblast, sizeof f.clblast, "0.9.0");
    save(bad, &f);
    expect_refused(bad, "made with CLBlast 0.9.0");
    /* a directory is not a file */
    expect_refused(tu_tmpdir, "not a regular file");
    free(copy);
    free(good);
    free(bad);
}

/* ----------------------------------------------------- apply, restore */

static void test_apply_and_restore(void **state)
{
    (void)state;
    cl_device_id dev = clg_context_device(tu_ctx);
    clblast_param def[TUNING_MAX_PARAMS], now[TUNING_MAX_PARAMS];
    size_t nd, nn;
    char err[1024];
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
    get("XgemmDirect", def, &nd);

    tuning t = device_tuning();
    size_t differ = 0; /* else applying it and doing nothing look the same */
    for (size_t i = 0; i < nd; i++)
        differ += value_of(&t.kernel[0], def[i].name) != def[i].value;
    if (differ == 0)
        fail_msg("the test's XgemmDirect tuning is this device's default");
    assert_int_equal(tuning_apply(tu_ctx, &t, err, sizeof err), 0);
    get("XgemmDirect", now, &nn);
    assert_int_equal(nn, nd);
    size_t changed = 0;
    for (size_t i = 0; i < nn; i++) { /* CLBlast now reports the tuning's values */
        assert_string_equal(now[i].name, def[i].name);
        assert_int_equal(now[i].value, value_of(&t.kernel[0], now[i].name));
        changed += now[i].value != def[i].value;
    }
    assert_int_equal(changed, differ);

    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
    get("XgemmDirect", now, &nn);
    for (size_t i = 0; i < nn; i++)
        assert_int_equal(now[i].value, def[i].value);

    /* a record with a parameter CLBlast does not have, or without one it
     * has: refused before anything changes */
    tuning bad = device_tuning();
    snprintf(bad.kernel[0].param[0], TUNING_NAME, "NOSUCH");
    assert_int_equal(tuning_apply(tu_ctx, &bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "XgemmDirect"));
    bad = device_tuning();
    bad.kernel[0].n--;
    assert_int_equal(tuning_apply(tu_ctx, &bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "no value for CLBlast's parameter"));
    get("XgemmDirect", now, &nn);
    for (size_t i = 0; i < nn; i++)
        assert_int_equal(now[i].value, def[i].value);
    (void)dev;
}

/* -------------------------------------------- the trainer's GEMM call */

/* The MLP's shapes and, with gpt, a small GPT's (its linear layers and
 * head: the attention runs no GEMM, gpt_flash.cl), every one against the
 * host. */
static void check_shapes(const char *what, int gpt)
{
    const unsigned dims[] = {784, 512, 256, 10};
    mlp_gemm_shape s[2 * MLP_GEMMS_MAX];
    size_t n = mlp_gemm_shapes(dims, 4, 32, s, MLP_GEMMS_MAX);
    if (gpt) {
        const gpt_shape gs = {.layers = 1, .heads = 3, .width = 48, .context = 20,
                              .vocab = GPT_BYTE_VOCAB};
        size_t n_gpt = gpt_gemm_shapes(&gs, 2, s + n, MLP_GEMMS_MAX), batched = 0;
        assert_true(n_gpt <= MLP_GEMMS_MAX);
        for (size_t i = n; i < n + n_gpt; i++)
            batched += mlp_gemm_batch(&s[i]) != 1;
        assert_int_equal(batched, 0);
        n += n_gpt;
    }
    gemm_bufs g;
    assert_int_equal(gemm_bufs_create(clg_context_cl(tu_ctx), clg_context_queue(tu_ctx), s, n, &g),
                     CL_SUCCESS);
    for (size_t i = 0; i < n; i++) {
        double worst;
        int rc = gemm_check(&g, &s[i], &worst);
        if (rc != 0)
            fail_msg("%s: %s %zux%zux%zu: status %d, relative error %.3g", what, s[i].role, s[i].m,
                     s[i].n, s[i].k, rc, worst);
    }
    gemm_bufs_release(&g);
}

static void test_mlp_gemms_right(void **state)
{
    (void)state;
    char err[1024];
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
    check_shapes("CLBlast's defaults", 1);
    /* the tuning above, then every shape on Xgemm (the indirect kernel) */
    tuning t = device_tuning();
    assert_int_equal(tuning_apply(tu_ctx, &t, err, sizeof err), 0);
    check_shapes("XgemmDirect tuned", 0);
    set_value(&t.kernel[1], "XGEMM_MIN_INDIRECT_SIZE", 1);
    assert_int_equal(tuning_apply(tu_ctx, &t, err, sizeof err), 0);
    check_shapes("every shape on Xgemm", 1);
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
}

/* ----------------------------------------------------- the trainer */

enum { N_TRAIN = 200, N_TEST = 50, DIM = 16 };
static uint8_t train_img[N_TRAIN * DIM], train_lab[N_TRAIN];
static uint8_t test_img[N_TEST * DIM], test_lab[N_TEST];

/* Runs a tiny training; returns its weights (malloc'ed) and what the run
 * wrote to stderr (malloc'ed, in *log). */
static float *train(const char *tuning_spec, classify_result *res, char **log)
{
    static int data_made;
    if (!data_made) {
        tu_rng r = tu_rng_seed(5);
        for (size_t i = 0; i < sizeof train_img; i++)
            train_img[i] = (uint8_t)tu_rng_u64(&r);
        for (size_t i = 0; i < N_TRAIN; i++)
            train_lab[i] = (uint8_t)(tu_rng_u64(&r) % 10);
        for (size_t i = 0; i < sizeof test_img; i++)
            test_img[i] = (uint8_t)tu_rng_u64(&r);
        for (size_t i = 0; i < N_TEST; i++)
            test_lab[i] = (uint8_t)(tu_rng_u64(&r) % 10);
        data_made = 1;
    }
    dataset tr, te;
    char err[1024] = "";
    assert_int_equal(dataset_wrap(train_img, train_lab, N_TRAIN, DIM, &tr, err, sizeof err), 0);
    assert_int_equal(dataset_wrap(test_img, test_lab, N_TEST, DIM, &te, err, sizeof err), 0);
    train_options o;
    train_options_default(&o);
    o.hidden[0] = 32;
    o.hidden[1] = 16;
    o.batch = 64;
    o.micro_batch = 32;
    o.steps = 4;
    o.warmup = 1;
    o.tuning = tuning_spec;
    assert_int_equal(train_options_check(&o, err, sizeof err), 0);
    const unsigned dims[] = {DIM, 32, 16, 10};
    uint64_t np = mlp_param_count(dims, 4);
    float *w = tu_xmalloc(np * sizeof *w);
    train_io io = {tu_ctx, &tr, &te, w, np};

    /* the start-up lines go to stderr: capture them */
    char *logpath = tu_tmp_path("train.log");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = classify_run(&o, &io, res, err, sizeof err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t n;
    *log = (char *)tu_read_file(logpath, &n);
    free(logpath);
    if (rc != 0)
        fail_msg("classify_run (--tuning %s): %s", tuning_spec ? tuning_spec : "auto", err);
    return w;
}

static void test_trainer_applies_tuning(void **state)
{
    (void)state;
    char path[1024];
    device_path(path, sizeof path);
    unlink(path);
    classify_result res;
    char *log;
    const unsigned dims[] = {DIM, 32, 16, 10};
    uint64_t np = mlp_param_count(dims, 4);

    /* no file: CLBlast's defaults, and the command that would tune */
    float *w0 = train(NULL, &res, &log);
    assert_string_equal(res.run.clblast_tuning, "");
    if (!strstr(log, "CLBlast's default parameters") || !strstr(log, "clgrad-tune --device"))
        fail_msg("start-up lines without a tuning:\n%s", log);
    free(log);

    /* a valid file: applied and named, and two runs give the same weights */
    tuning t = device_tuning();
    save(path, &t);
    float *w1 = train(NULL, &res, &log);
    assert_string_equal(res.run.clblast_tuning, path);
    if (!strstr(log, "tuned for this device by clgrad-tune") || !strstr(log, path))
        fail_msg("start-up lines with a tuning:\n%s", log);
    free(log);
    float *w2 = train("auto", &res, &log);
    free(log);
    assert_memory_equal(w1, w2, np * sizeof *w1);

    /* --tuning off: CLBlast's defaults again, the same weights as before */
    float *w3 = train("off", &res, &log);
    assert_string_equal(res.run.clblast_tuning, "");
    assert_non_null(strstr(log, "tuning off"));
    free(log);
    assert_memory_equal(w0, w3, np * sizeof *w0);

    /* corrupt, truncated, foreign: the run goes on, on CLBlast's defaults,
     * with a warning that names the file and the reason */
    size_t n;
    uint8_t *good = tu_read_file(path, &n);
    struct {
        const char *what, *needle;
    } cases[] = {{"corrupt", "CRC-32 mismatch"}, {"truncated", "truncated"},
                 {"foreign", "another device"}};
    for (int c = 0; c < 3; c++) {
        if (c == 0) {
            uint8_t *copy = tu_xmalloc(n);
            memcpy(copy, good, n);
            copy[n / 3] ^= 0x10;
            tu_write_file(path, copy, n);
            free(copy);
        } else if (c == 1) {
            tu_write_file(path, good, n / 2);
        } else {
            tuning f = t;
            f.key[5] = f.key[5] == '0' ? '1' : '0';
            save(path, &f);
        }
        float *w = train(NULL, &res, &log);
        assert_string_equal(res.run.clblast_tuning, "");
        if (!strstr(log, "warning: CLBlast tuning") || !strstr(log, cases[c].needle) ||
            !strstr(log, "default parameters"))
            fail_msg("%s file: start-up lines:\n%s", cases[c].what, log);
        assert_memory_equal(w, w0, np * sizeof *w);
        free(log);
        free(w);
    }
    /* the forgeries of issue 24: refused before any GEMM, the parameter
     * named, the run on CLBlast's defaults (the same weights as w0) */
    const clg_device_info *info = clg_context_device_info(tu_ctx);
    for (size_t c = 0; c < N_FORGERIES; c++) {
        forge(path, &t, forgeries[c].e, forgeries[c].n);
        float *w = train(NULL, &res, &log);
        char want[2048];
        snprintf(want, sizeof want,
                 "warning: CLBlast tuning %s ignored: %s; running on CLBlast's default "
                 "parameters (`clgrad-tune --device %u:%u` makes a new one)\n",
                 path, forgeries[c].why, info->platform_index, info->device_index);
        if (!strstr(log, want))
            fail_msg("%s: start-up lines:\n%s\nexpected:\n%s", forgeries[c].what, log, want);
        assert_string_equal(res.run.clblast_tuning, "");
        assert_memory_equal(w, w0, np * sizeof *w);
        free(log);
        free(w);
    }
    /* an explicit file that is missing: a warning too */
    float *w4 = train("/nonexistent/x.tune", &res, &log);
    assert_non_null(strstr(log, "no such file"));
    free(log);
    free(w4);
    unlink(path);
    free(good);
    free(w0);
    free(w1);
    free(w2);
    free(w3);
}

/* ------------------------------------------- the GEMMs on the device */

/* A tuning whose values pass the file's checks is still run once on the
 * caller's shapes against the host before it is used. The wrong case here
 * is applied past those checks (clblast_params_set, as a CLBlast bug or a
 * driver's would act): 32 x 32 threads on a 32-wide tile, which issue 24
 * found training silently wrong. */
static void test_verify_on_device(void **state)
{
    (void)state;
    const unsigned dims[] = {DIM, 32, 16, 10};
    mlp_gemm_shape s[MLP_GEMMS_MAX];
    size_t n = mlp_gemm_shapes(dims, 4, 32, s, MLP_GEMMS_MAX);
    char err[2048];
    tuning t = device_tuning();
    assert_int_equal(tuning_apply(tu_ctx, &t, err, sizeof err), 0);
    if (tuning_verify(tu_ctx, &t, s, n, err, sizeof err) != 0)
        fail_msg("a valid tuning: %s", err);

    tuning_kernel *d = &t.kernel[0];
    set_value(d, "MDIMCD", 32);
    set_value(d, "NDIMCD", 32);
    set_value(&t.kernel[1], "XGEMM_MIN_INDIRECT_SIZE", 65536); /* every shape direct */
    for (size_t i = 0; i < 2; i++) {
        clblast_param p[TUNING_MAX_PARAMS];
        for (size_t j = 0; j < t.kernel[i].n; j++) {
            snprintf(p[j].name, sizeof p[j].name, "%s", t.kernel[i].param[j]);
            p[j].value = t.kernel[i].value[j];
        }
        assert_int_equal(clblast_params_set(clg_context_device(tu_ctx), t.kernel[i].name, 32, p,
                                            t.kernel[i].n), 0);
    }
    assert_int_equal(tuning_verify(tu_ctx, &t, s, n, err, sizeof err), -1);
    char line[512], want[1024];
    tuning_kernel_text(d, line, sizeof line);
    snprintf(want, sizeof want, "on this device its XgemmDirect (%s): ",
             line + strlen("XgemmDirect "));
    if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, " is wrong (relative error ") ||
        !strstr(err, ", tolerance 1e-4)"))
        fail_msg("message '%s', expected '%s<shape> is wrong (relative error ...)'", err, want);
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
}

/* --------------------------------------------------- clgrad-tune itself */

static int run_cmd(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The program: $CLGRAD_TUNE_EXE, else the path Meson compiled in. */
static const char *tune_exe(void)
{
    const char *exe = getenv("CLGRAD_TUNE_EXE");
    return exe && *exe ? exe : CLGRAD_TUNE_EXE;
}

static void test_clgrad_tune_small(void **state)
{
    (void)state;
    const char *exe = tune_exe();
    char *out = tu_tmp_path("small.tune"), *log = tu_tmp_path("tune.log");
    char *driver_cache = tu_mkdtemp("clgrad-tune-driver-cache");
    char cmd[4096];
    /* a small budget on a small shape: the baseline, a few seconds of each
     * tuner, and what fits of the candidates. The drivers' own caches start
     * empty, so that the baseline's build is a real one and the run's
     * estimate of a build with it: after a cached baseline the estimate
     * stays at its 4 s floor, the first candidates are real builds, and on a
     * loaded machine they alone went past the budget, leaving the tuners no
     * time (make asan in CI, after make test had cached the baseline but
     * none of the seeds it had no time for). */
    snprintf(cmd, sizeof cmd, "POCL_CACHE_DIR='%s' MESA_SHADER_CACHE_DIR='%s' '%s' --budget 30 "
             "--shape 48x64x40:NT --shape 64x40x48:TN --top 1 --output '%s' > '%s' 2>&1",
             driver_cache, driver_cache, exe, out, log);
    int rc = run_cmd(cmd);
    size_t n;
    char *text = (char *)tu_read_file(log, &n);
    if (rc != 0 || !strstr(text, "XgemmDirect tuner") || !strstr(text, "Xgemm tuner") ||
        !strstr(text, "one micro-step's GEMMs") || !strstr(text, "wrote")) {
        /* in full: CMocka cuts long messages */
        fprintf(stderr, "clgrad-tune's output:\n%s\n", text);
        fail_msg("%s: exit %d, or a tuner or the summary missing from its output", cmd, rc);
    }
    free(text);
    tu_rmdir_tree(driver_cache);
    free(driver_cache);
    tuning t;
    char err[1024];
    if (tuning_load(tu_ctx, out, &t, err, sizeof err) != 0)
        fail_msg("the file clgrad-tune wrote: %s", err);
    assert_int_equal(t.n_gemms, 2);
    assert_non_null(tuning_find_kernel(&t, "XgemmDirect"));
    assert_non_null(tuning_find_kernel(&t, "Xgemm"));
    assert_non_null(tuning_find_kernel(&t, "GemmRoutine"));
    assert_true(t.budget_s == 30);
    assert_int_equal(tuning_apply(tu_ctx, &t, err, sizeof err), 0);
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);

    /* --show says whether a file can be used */
    snprintf(cmd, sizeof cmd, "'%s' --show --output '%s' > '%s' 2>&1", exe, out, log);
    assert_int_equal(run_cmd(cmd), 0);
    text = (char *)tu_read_file(log, &n);
    assert_non_null(strstr(text, "status  valid"));
    free(text);
    tu_write_file(out, "clgrad-clblast-tuning 1\n", 24);
    assert_int_equal(run_cmd(cmd), 1);
    text = (char *)tu_read_file(log, &n);
    assert_non_null(strstr(text, "unusable"));
    free(text);
    /* bad arguments name themselves */
    snprintf(cmd, sizeof cmd, "'%s' --budget 2 > '%s' 2>&1", exe, log);
    assert_int_equal(run_cmd(cmd), 2);
    text = (char *)tu_read_file(log, &n);
    assert_non_null(strstr(text, "--budget 2"));
    free(text);
    /* the run's description is checked as clgrad-train checks it */
    snprintf(cmd, sizeof cmd, "'%s' --task gpt --width 30 --heads 4 > '%s' 2>&1", exe, log);
    assert_int_equal(run_cmd(cmd), 2);
    text = (char *)tu_read_file(log, &n);
    assert_non_null(strstr(text, "--heads 4 does not divide --width 30"));
    free(text);

    /* the builds in other processes (--prebuild, as clgrad-tune starts
     * them): CLBlast's parameters of the device, a plain and a batched
     * shape run; a parameter set CLBlast refuses, or a bad shape, fails */
    clblast_param p[TUNING_MAX_PARAMS];
    size_t np;
    get("Xgemm", p, &np);
    char params[1024] = "";
    for (size_t i = 0; i < np; i++)
        snprintf(params + strlen(params), sizeof params - strlen(params), "%s%s=%zu",
                 i ? " " : "", p[i].name, p[i].value);
    snprintf(cmd, sizeof cmd, "'%s' --prebuild --params Xgemm '%s' --params GemmRoutine "
             "XGEMM_MIN_INDIRECT_SIZE=1 --shape 40x48x64:NT --shape 24x24x8:NT@6", exe, params);
    assert_int_equal(run_cmd(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' --prebuild --params Xgemm MWG=64 --shape 40x48x64:NT "
             "2>/dev/null", exe);
    assert_int_equal(run_cmd(cmd), 1);
    snprintf(cmd, sizeof cmd, "'%s' --prebuild --shape 40x48 2>/dev/null", exe);
    assert_int_equal(run_cmd(cmd), 2);
    free(out);
    free(log);
}

/* clgrad-tune --task gpt: the shapes of the GPT the trainer's flags
 * describe (its four linear layers and the head), stored in the
 * device's file for the task, which the GPT run takes and the MLP's does
 * not. */
static void test_clgrad_tune_gpt(void **state)
{
    (void)state;
    const char *exe = tune_exe();
    char *log = tu_tmp_path("tune-gpt.log");
    char path[1024], mlp_path[1024], err[1024], cmd[4096];
    assert_int_equal(tuning_path(tu_ctx, "gpt", path, sizeof path, err, sizeof err), 0);
    device_path(mlp_path, sizeof mlp_path);
    unlink(path);
    unlink(mlp_path);
    snprintf(cmd, sizeof cmd, "'%s' --task gpt --preset tiny --batch 4 --micro-batch 2 "
             "--budget 10 --top 1 > '%s' 2>&1", exe, log);
    int rc = run_cmd(cmd);
    size_t n;
    char *text = (char *)tu_read_file(log, &n);
    if (rc != 0 || !strstr(text, "c_attn forward") || !strstr(text, "head dW (wte)") ||
        !strstr(text, "gpt layers 2 heads 2 width 32 context 24 micro-batch 2") ||
        !strstr(text, path)) {
        fprintf(stderr, "clgrad-tune's output:\n%s\n", text);
        fail_msg("%s: exit %d", cmd, rc);
    }
    free(text);
    tuning t;
    if (tuning_load(tu_ctx, path, &t, err, sizeof err) != 0)
        fail_msg("the file clgrad-tune wrote: %s", err);
    const gpt_shape tiny = {.layers = 2, .heads = 2, .width = 32, .context = 24,
                            .vocab = GPT_BYTE_VOCAB};
    mlp_gemm_shape s[MLP_GEMMS_MAX];
    size_t ns = gpt_gemm_shapes(&tiny, 2, s, MLP_GEMMS_MAX);
    assert_int_equal(t.n_gemms, ns);
    for (size_t i = 0; i < t.n_gemms; i++)
        assert_true(t.gemm[i].batch <= 1); /* no strided batched GEMM */

    /* the GPT run takes it (auto: the device's file for --task gpt) */
    train_set_tasks(train_tasks, train_n_tasks);
    char *argv[] = {"clgrad-train", "--task", "gpt", "--preset", "tiny", "--batch", "4",
                    "--micro-batch", "2", "--steps", "2", "--train-limit", "100",
                    "--test-limit", "20", "--quiet", NULL};
    train_options o;
    void *opts[TRAIN_MAX_TASKS];
    if (train_cli_parse_all(16, argv, &o, opts, err, sizeof err) != 0)
        fail_msg("%s", err);
    gpt_result *res = tu_xmalloc(sizeof *res);
    train_io io = {.ctx = tu_ctx};
    if (gpt_run(&o, opts[o.task], &io, res, err, sizeof err) != 0)
        fail_msg("gpt_run: %s", err);
    assert_string_equal(res->run.clblast_tuning, path);
    train_cli_free(opts);
    free(res);
    /* the MLP's file is another: none for this device */
    tuning_status *st = tu_xmalloc(sizeof *st);
    tuning_setup(tu_ctx, NULL, NULL, s, ns, st);
    assert_int_equal(st->applied, 0);
    assert_non_null(strstr(st->message, "no tuning for this device yet"));
    tuning_setup(tu_ctx, NULL, "gpt", s, ns, st);
    assert_int_equal(st->applied, 1);
    free(st);
    assert_int_equal(tuning_restore_defaults(tu_ctx, err, sizeof err), 0);
    unlink(path);
    free(log);
}

/* clgrad-tune --show gives the trainer's verdict: the forgeries unusable
 * with the same reason, a valid file checked on the device. */
static void test_show_verdict(void **state)
{
    (void)state;
    const char *exe = tune_exe();
    char *file = tu_tmp_path("show.tune"), *log = tu_tmp_path("show.log");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' --show --output '%s' > '%s' 2>&1", exe, file, log);
    tuning t = device_tuning();
    size_t n;
    for (size_t c = 0; c < N_FORGERIES; c++) {
        forge(file, &t, forgeries[c].e, forgeries[c].n);
        int rc = run_cmd(cmd);
        char *text = (char *)tu_read_file(log, &n);
        char want[1024];
        snprintf(want, sizeof want, "status  unusable, clgrad-train ignores it: %s\n",
                 forgeries[c].why);
        if (rc != 1 || !strstr(text, want))
            fail_msg("%s: --show exit %d:\n%s\nexpected:\n%s", forgeries[c].what, rc, text, want);
        free(text);
    }
    save(file, &t);
    int rc = run_cmd(cmd);
    char *text = (char *)tu_read_file(log, &n);
    if (rc != 0 || !strstr(text, "status  valid") ||
        !strstr(text, "checked 8 GEMM shape(s) of mlp 784,512,256,10 micro-batch 32 on this "
                      "device: right\n"))
        fail_msg("--show of a valid file: exit %d:\n%s", rc, text);
    free(text);
    free(file);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_and_dir),
        cmocka_unit_test(test_save_load_and_refusals),
        cmocka_unit_test(test_apply_and_restore),
        cmocka_unit_test(test_mlp_gemms_right),
        cmocka_unit_test(test_verify_on_device),
        cmocka_unit_test(test_trainer_applies_tuning),
        cmocka_unit_test(test_show_verdict),
        cmocka_unit_test(test_clgrad_tune_small),
        cmocka_unit_test(test_clgrad_tune_gpt),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
