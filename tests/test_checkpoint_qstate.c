/* test_checkpoint_qstate.c - checkpoints of the smaller training state:
 *  - Q8/Q4 states are saved as they are (U8 codes "<name>.state<i>" and F32
 *    absmax "<name>.state<i>.absmax"), bf16 states and bf16 master weights
 *    as BF16, the fp32 states of small tensors as F32;
 *  - a run saved in the middle of a cycle and loaded into a fresh model
 *    continues bit for bit as the run that never stopped (params, codes,
 *    absmax, stochastic rounding included);
 *  - a checkpoint loaded into a model with another state dtype, another
 *    state_min_size or another master dtype is refused with
 *    CLG_ERR_MISMATCH naming the setting, and changes nothing;
 *  - a checkpoint of an fp32 model saved before clgrad recorded
 *    state_dtype and master_dtype still loads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "checkpoint.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t counts[] = {9000, 300, 20000, 17};
static const int groups[] = {0, 1, 0, 1};
enum { N_TENSORS = 4 };

static clg_model *build(const clg_config *c)
{
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, c, &m));
    int g1, t;
    OK(clg_model_add_group(m, "no_decay", 0.5f, 0.0f, &g1));
    for (int i = 0; i < N_TENSORS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        OK(clg_model_add_tensor(m, name, counts[i], groups[i], &t));
    }
    const size_t dims[2] = {90, 100};
    OK(clg_model_set_tensor_shape(m, 0, 2, dims));
    OK(clg_model_finalize(m));
    return m;
}

/* Everything the run holds: params and every state as stored. */
typedef struct snapshot {
    unsigned char *bytes;
    size_t n;
} snapshot;

static void put(snapshot *s, const void *p, size_t n)
{
    s->bytes = realloc(s->bytes, s->n + n);
    assert_non_null(s->bytes);
    memcpy(s->bytes + s->n, p, n);
    s->n += n;
}

static snapshot take(clg_model *m)
{
    snapshot s = {NULL, 0};
    for (int t = 0; t < N_TENSORS; t++) {
        float *p = tu_xmalloc(counts[t] * sizeof *p);
        OK(clg_model_download_params(m, t, p, counts[t], NULL));
        put(&s, p, counts[t] * sizeof *p);
        free(p);
        for (size_t k = 0; k < clg_model_state_count(m); k++) {
            size_t bytes, scales;
            OK(clg_model_state_format(m, (int)k, t, NULL, &bytes, &scales));
            unsigned char *codes = tu_xmalloc(bytes + 1);
            float *absmax = tu_xmalloc(scales * sizeof *absmax + 1);
            OK(clg_model_download_state_raw(m, (int)k, t, codes, bytes, absmax, scales, NULL));
            put(&s, codes, bytes);
            put(&s, absmax, scales * sizeof *absmax);
            free(codes);
            free(absmax);
        }
    }
    clg_stats st = clg_stats_init();
    OK(clg_model_stats(m, 1, &st));
    put(&s, &st.updates, sizeof st.updates);
    put(&s, &st.micro_steps, sizeof st.micro_steps);
    return s;
}

/* Micro-steps first..last-1 of a fixed gradient stream, path A. */
static void steps(clg_model *m, clg_grads *g, unsigned first, unsigned last)
{
    size_t n = (size_t)clg_model_param_count(m);
    float *host = tu_xmalloc(n * sizeof *host);
    for (unsigned i = first; i < last; i++) {
        tu_fill_normal(host, n, 1000 + i, 0.01f);
        OK(clg_grads_upload(g, CLG_ALL_TENSORS, host, n, NULL));
        OK(clg_step(m, g, 1.0f + 0.5f * (float)(i % 2), NULL, NULL));
    }
    free(host);
}

static clg_config config_of(clg_optimizer opt, clg_dtype state, clg_dtype master,
                            clg_rounding rounding)
{
    clg_config c = clg_config_init(opt);
    c.state_dtype = state;
    c.master_dtype = master;
    c.state_rounding = rounding;
    c.accum_steps = 2;
    c.fuse_last_micro_step = 0;
    c.seed = 77;
    if (opt == CLG_SGD)
        c.momentum = 0.9f;
    return c;
}

/* The dtype string of key in a saved file's header. */
static void expect_entry(const char *path, const char *key, const char *dtype)
{
    size_t size;
    uint8_t *file = tu_read_file(path, &size);
    uint64_t hlen = 0;
    memcpy(&hlen, file, 8);
    cJSON *root = cJSON_ParseWithLength((const char *)file + 8, (size_t)hlen);
    assert_non_null(root);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!e)
        fail_msg("%s: no entry %s", path, key);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    if (!d || strcmp(d->valuestring, dtype) != 0)
        fail_msg("%s: %s is %s, not %s", path, key, d ? d->valuestring : "?", dtype);
    cJSON_Delete(root);
    free(file);
}

static void resume_run(clg_config c, const char *what, const char *const *entries)
{
    char *path = tu_tmp_path("q.ckpt");
    clg_model *a = build(&c);
    tu_upload_uniform_params(a, 5);
    clg_grads *ga = NULL;
    OK(clg_grads_create(a, CLG_FP32, &ga));
    steps(a, ga, 0, 7); /* three updates and a half */
    OK(clg_checkpoint_save(a, path, NULL, NULL, 0));
    for (const char *const *e = entries; *e; e += 2)
        expect_entry(path, e[0], e[1]);
    steps(a, ga, 7, 12);
    snapshot want = take(a);

    clg_model *b = build(&c);
    clg_grads *gb = NULL;
    OK(clg_grads_create(b, CLG_FP32, &gb));
    OK(clg_checkpoint_load(b, path, NULL, NULL));
    steps(b, gb, 7, 12);
    snapshot got = take(b);
    assert_int_equal(got.n, want.n);
    if (memcmp(got.bytes, want.bytes, want.n) != 0)
        fail_msg("%s: the resumed run differs from the one that never stopped", what);
    free(want.bytes);
    free(got.bytes);
    clg_grads_destroy(ga);
    clg_grads_destroy(gb);
    clg_model_destroy(a);
    clg_model_destroy(b);
    remove(path);
    free(path);
}

static void test_resume_is_bit_exact(void **state)
{
    (void)state;
    static const char *const q8[] = {"t0.state0", "U8", "t0.state0.absmax", "F32",
                                     "t1.state1", "F32", "t2.state1", "U8", "t0", "F32", NULL};
    resume_run(config_of(CLG_ADAMW, CLG_Q8, CLG_FP32, CLG_ROUND_NEAREST), "adamw q8", q8);
    static const char *const q4[] = {"t2.state0", "U8", "t2.state0.absmax", "F32",
                                     "t3.state0", "F32", NULL};
    resume_run(config_of(CLG_SGD, CLG_Q4, CLG_FP32, CLG_ROUND_STOCHASTIC), "sgd q4 stochastic",
               q4);
    static const char *const bf[] = {"t0", "BF16", "t0.state0", "BF16", "t3.state1", "BF16",
                                     NULL};
    resume_run(config_of(CLG_ADAMW, CLG_BF16, CLG_BF16, CLG_ROUND_STOCHASTIC),
               "adamw bf16 states, bf16 master", bf);
    static const char *const lion[] = {"t0", "BF16", "t0.state0", "U8", NULL};
    resume_run(config_of(CLG_LION, CLG_Q8, CLG_BF16, CLG_ROUND_NEAREST), "lion q8, bf16 master",
               lion);
}

static void expect_refused(const char *path, const clg_config *c, const char *needle)
{
    clg_model *m = build(c);
    tu_upload_uniform_params(m, 9);
    snapshot before = take(m);
    clg_status st = clg_checkpoint_load(m, path, NULL, NULL);
    if (st != CLG_ERR_MISMATCH || !strstr(clg_last_error(tu_ctx), needle))
        fail_msg("load: %s (%s), expected CLG_ERR_MISMATCH naming %s", clg_status_string(st),
                 clg_last_error(tu_ctx), needle);
    snapshot after = take(m);
    assert_int_equal(before.n, after.n);
    assert_memory_equal(before.bytes, after.bytes, before.n);
    free(before.bytes);
    free(after.bytes);
    clg_model_destroy(m);
}

/* A model of c with uniform parameters and no update, saved at path. */
static clg_model *saved_untrained(const clg_config *c, const char *path)
{
    clg_model *m = build(c);
    tu_upload_uniform_params(m, 5);
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    return m;
}

static void test_other_formats_are_refused(void **state)
{
    (void)state;
    char *path = tu_tmp_path("q8.ckpt");
    clg_config c = config_of(CLG_ADAMW, CLG_Q8, CLG_FP32, CLG_ROUND_NEAREST);
    clg_model_destroy(saved_untrained(&c, path));
    clg_config other = c;
    other.state_dtype = CLG_FP32;
    expect_refused(path, &other, "state_dtype was 'q8' when the checkpoint was saved, the model "
                                 "has 'fp32'");
    other.state_dtype = CLG_Q4;
    expect_refused(path, &other, "state_dtype was 'q8'");
    other = c;
    other.state_min_size = 100;
    expect_refused(path, &other, "state_min_size was '4096'");
    other = c;
    other.master_dtype = CLG_BF16;
    expect_refused(path, &other, "master_dtype was 'fp32'");
    /* the rounding is not part of the state */
    other = c;
    other.state_rounding = CLG_ROUND_STOCHASTIC;
    clg_model *m = build(&other);
    OK(clg_checkpoint_load(m, path, NULL, NULL));
    clg_model_destroy(m);
    remove(path);
    free(path);
}

/* Blanks one "key":"value", pair of the header (the JSON stays valid) and
 * seals the header CRC again: a file from before the key existed. */
static void blank_pair(uint8_t *file, size_t size, const char *pair)
{
    uint64_t hlen;
    memcpy(&hlen, file, 8);
    char *header = (char *)file + 8;
    char *at = NULL;
    for (size_t i = 0; i + strlen(pair) <= hlen && !at; i++)
        if (memcmp(header + i, pair, strlen(pair)) == 0)
            at = header + i;
    if (!at)
        fail_msg("the header has no %s", pair);
    memset(at, ' ', strlen(pair));
    assert_true(clg__ckpt_header_seal(file, size));
}

static void test_older_fp32_files_load(void **state)
{
    (void)state;
    char *path = tu_tmp_path("old.ckpt");
    clg_config c = config_of(CLG_ADAMW, CLG_FP32, CLG_FP32, CLG_ROUND_NEAREST);
    clg_model *m = saved_untrained(&c, path);
    snapshot want = take(m);
    clg_model_destroy(m);
    size_t size;
    uint8_t *file = tu_read_file(path, &size);
    blank_pair(file, size, "\"clgrad.state_dtype\":\"fp32\",");
    blank_pair(file, size, "\"clgrad.master_dtype\":\"fp32\",");
    tu_write_file(path, file, size);
    free(file);
    m = build(&c);
    OK(clg_checkpoint_load(m, path, NULL, NULL));
    snapshot got = take(m);
    assert_memory_equal(got.bytes, want.bytes, want.n);
    free(got.bytes);
    free(want.bytes);
    clg_model_destroy(m);
    /* and such a file is an fp32 one: a Q8 model refuses it */
    c.state_dtype = CLG_Q8;
    expect_refused(path, &c, "state_dtype was 'fp32'");
    remove(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_is_bit_exact),
        cmocka_unit_test(test_other_formats_are_refused),
        cmocka_unit_test(test_older_fp32_files_load),
    };
    return cmocka_run_group_tests(tests, tu_group_setup_tmpdir, tu_group_teardown);
}
