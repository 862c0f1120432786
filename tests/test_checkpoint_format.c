/* test_checkpoint_format.c - the checkpoint header writer and the strict
 * parser, on bytes in memory (no device): a round trip, and for every kind
 * of damage or mismatch the specific error the loader must report: the
 * header CRC (checked before any JSON), the configuration values, the
 * shapes, and the counters stored twice. Tests that edit a header on
 * purpose re-seal its CRC (clg__ckpt_header_seal) so that the edit reaches
 * the check it is meant for. */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "checkpoint.h"
#include "ckpt_testutil.h"
#include "testutil.h" /* TU_MAIN only: these tests link no testutil.c */

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ fixture */

typedef struct fixture {
    clg_ckpt_layout layout;
    uint8_t *data;
    clg_cycle_state state;
    char *header;
    size_t header_len;
    uint8_t *file;
    size_t size;
} fixture;

static const char *const user_keys[] = {"loader.epoch", "rng", "note"};
static const char *const user_values[] = {"3", "0123456789abcdef", "caf\xc3\xa9 \"quoted\"\n"};

static void build_layout_with(clg_ckpt_layout *l, const clg_config *cfg)
{
    char err[256];
    memset(l, 0, sizeof *l);
    clg__ckpt_layout_config(l, cfg);
    const uint64_t m_shape[2] = {2, 3};
    assert_int_equal(clg__ckpt_layout_add(l, CLG_CKPT_STEP_BLOCK_KEY, CLG_CKPT_I32, 32,
                                          CLG_CKPT_SRC_STEP_BLOCK, -1), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "w", CLG_CKPT_F32, 5, CLG_ARENA_PARAMS, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "b", CLG_CKPT_F32, 3, CLG_ARENA_PARAMS, 1), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "empty", CLG_CKPT_F32, 0, CLG_ARENA_PARAMS, 2), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "w.state0", CLG_CKPT_F32, 5, CLG_ARENA_STATE0, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "w.acc", CLG_CKPT_BF16, 5, CLG_ARENA_ACC, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "b.acc", CLG_CKPT_BF16, 3, CLG_ARENA_ACC, 1), 0);
    /* a 2-D tensor, last so that the offsets of the others stay put */
    assert_int_equal(clg__ckpt_layout_add(l, "m", CLG_CKPT_F32, 6, CLG_ARENA_PARAMS, 3), 0);
    assert_int_equal(clg__ckpt_layout_shape(l, 2, m_shape), 0);
    assert_int_equal(clg__ckpt_layout_finish(l, err, sizeof err), 0);
}

static void build_layout(clg_ckpt_layout *l)
{
    clg_config c = ckpt_fixture_config();
    build_layout_with(l, &c);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    build_layout(&f->layout);
    f->data = malloc(f->layout.data_size);
    for (uint64_t i = 0; i < f->layout.data_size; i++)
        f->data[i] = (uint8_t)(i * 37 + 11);
    f->state.micro = 2;
    f->state.weight_sum = 0.1f + 0.2f; /* a value decimal printing could round */
    f->state.cycles = 12345678901ull;
    f->state.micro_total = 37037036705ull;
    /* collect would put the step block words in the data; do the same. The
     * counters agree with the host's: cycles = T + SKIPPED in 32 bits, one
     * finite micro-step of the two taken in this cycle. */
    const clg_ckpt_entry *sb = &f->layout.entries[0];
    for (int w = 0; w < 32; w++)
        f->state.step_block[w] = 0x01020304u * (uint32_t)w + 0xdeadbeefu;
    f->state.step_block[CLG_SB_SKIPPED] = 3;
    f->state.step_block[CLG_SB_T] = (uint32_t)f->state.cycles - 3u;
    f->state.step_block[CLG_SB_SKIPPED_MICRO] = 4;
    f->state.step_block[CLG_SB_MICRO_COUNT] = 1;
    /* the dynamic loss scale within [1, 2^24], its growth tracker below
     * the interval (checkpoint_values.c) */
    const float scale = 4096.0f;
    memcpy(&f->state.step_block[CLG_SB_LOSS_SCALE], &scale, 4);
    f->state.step_block[CLG_SB_GROWTH] = 7;
    for (int w = 0; w < 32; w++)
        for (int b = 0; b < 4; b++)
            f->data[sb->begin + 4 * w + b] = (uint8_t)(f->state.step_block[w] >> (8 * b));
    char err[256];
    assert_int_equal(clg__ckpt_header(&f->layout, f->data, &f->state, user_keys, user_values, 3,
                                      &f->header, &f->header_len, err, sizeof err),
                     0);
    f->file = ckpt_assemble(f->header, f->header_len, f->data, f->layout.data_size, &f->size);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    clg__ckpt_layout_free(&f->layout);
    free(f->data);
    free(f->header);
    free(f->file);
    free(f);
    return 0;
}

/* Parses file and expects status with msg in the error text. */
static void expect_error(fixture *f, const uint8_t *file, size_t size, clg_status status,
                         const char *msg)
{
    char err[512] = "";
    clg_ckpt_parsed p;
    clg_status st = clg__ckpt_parse(file, size, &f->layout, &p, err, sizeof err);
    if (st != status || !strstr(err, msg))
        fail_msg("expected %s with '%s', got %s: '%s'", clg_status_string(status), msg,
                 clg_status_string(st), err);
    assert_null(p.json);
    assert_int_equal(p.n_meta, 0);
}

/* Re-serializes the fixture's header after fn edited it, same data, and
 * re-seals its CRC. */
static uint8_t *mutated(fixture *f, void (*fn)(cJSON *root), size_t *size)
{
    uint8_t *file = ckpt_rewrite_header(f->file, f->size, fn, size);
    assert_non_null(file);
    /* re-sealed, unless the edit moved the CRC field from the front */
    clg__ckpt_header_seal(file, *size);
    return file;
}

/* A copy of the fixture's file with one byte changed, CRC re-sealed when
 * seal != 0. */
static uint8_t *edited(fixture *f, size_t at, uint8_t value, int seal)
{
    uint8_t *file = malloc(f->size);
    assert_non_null(file);
    memcpy(file, f->file, f->size);
    file[at] = value;
    if (seal)
        assert_true(clg__ckpt_header_seal(file, f->size));
    return file;
}

static void expect_mutation(fixture *f, void (*fn)(cJSON *root), clg_status status,
                            const char *msg)
{
    size_t size;
    uint8_t *file = mutated(f, fn, &size);
    expect_error(f, file, size, status, msg);
    free(file);
}

static cJSON *meta_of(cJSON *root)
{
    return cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
}

static void set_meta(cJSON *root, const char *key, const char *value)
{
    cJSON *m = meta_of(root);
    cJSON_DeleteItemFromObjectCaseSensitive(m, key);
    if (value)
        cJSON_AddStringToObject(m, key, value);
}

static void set_offsets(cJSON *root, const char *key, double b, double e)
{
    cJSON *entry = cJSON_GetObjectItemCaseSensitive(root, key);
    cJSON_DeleteItemFromObjectCaseSensitive(entry, "data_offsets");
    double v[2] = {b, e};
    cJSON_AddItemToObject(entry, "data_offsets", cJSON_CreateDoubleArray(v, 2));
}

/* ------------------------------------------------------------ round trip */

static void test_round_trip(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->header_len % 8, 0);
    assert_int_equal(f->size, 8 + f->header_len + f->layout.data_size);
    char err[512] = "";
    clg_ckpt_parsed p;
    clg_status st = clg__ckpt_parse(f->file, f->size, &f->layout, &p, err, sizeof err);
    if (st != 0)
        fail_msg("parse failed: %s", err);
    assert_int_equal(p.state.micro, 2);
    assert_memory_equal(&p.state.weight_sum, &f->state.weight_sum, sizeof(float));
    assert_true(p.state.cycles == f->state.cycles);
    assert_true(p.state.micro_total == f->state.micro_total);
    assert_memory_equal(p.state.step_block, f->state.step_block, sizeof f->state.step_block);
    for (size_t i = 0; i < f->layout.n; i++) {
        const clg_ckpt_entry *e = &f->layout.entries[i];
        assert_true(e->file_end - e->file_begin == e->end - e->begin);
        if (e->end > e->begin)
            assert_memory_equal(p.data + e->file_begin, f->data + e->begin, e->end - e->begin);
    }
    assert_int_equal(p.n_meta, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(p.meta_keys[i], user_keys[i]);
        assert_string_equal(p.meta_values[i], user_values[i]);
    }
    clg__ckpt_parsed_free(&p);

    /* The header is what safetensors expects: F32 entry with shape and
     * offsets as plain integers, 8-byte padding with spaces. */
    assert_non_null(strstr(f->header, "\"w\":{\"dtype\":\"F32\",\"shape\":[5],"
                                      "\"data_offsets\":[128,148]}"));
    assert_non_null(strstr(f->header, "\"clgrad.weight_sum\":\"0x3e99999a\""));
    /* a 2-D tensor keeps its shape; the step block is I32 (torch 1.13 has
     * no uint32) */
    assert_non_null(strstr(f->header, "\"m\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                                      "\"data_offsets\":[196,220]}"));
    assert_non_null(strstr(f->header, "\"clgrad.step_block\":{\"dtype\":\"I32\",\"shape\":[32],"));
    /* the header begins with its CRC field, which is right */
    assert_memory_equal(f->header, CLG_CKPT_HEADER_PREFIX, CLG_CKPT_HEADER_PREFIX_LEN);
    uint8_t *copy = malloc(f->size);
    memcpy(copy, f->file, f->size);
    memset(copy + 8 + CLG_CKPT_HEADER_PREFIX_LEN, 'x', 8);
    assert_true(clg__ckpt_header_seal(copy, f->size));
    assert_memory_equal(copy, f->file, f->size);
    free(copy);
    /* the configuration and the counters stored twice, readable */
    assert_non_null(strstr(f->header, "\"clgrad.version\":\"2\""));
    assert_non_null(strstr(f->header, "\"clgrad.loss_scale\":\"dynamic\""));
    assert_non_null(strstr(f->header, "\"clgrad.loss_scale_max\":\"16777216\""));
    assert_non_null(strstr(f->header, "\"clgrad.loss_scale_interval\":\"100\""));
    assert_non_null(strstr(f->header, "\"clgrad.acc_dtype\":\"bf16\""));
    assert_non_null(strstr(f->header, "\"clgrad.amsgrad\":\"0\""));
    assert_non_null(strstr(f->header, "\"clgrad.updates\":\"3755744306\""));
    assert_non_null(strstr(f->header, "\"clgrad.skipped_updates\":\"3\""));
    assert_null(strstr(f->header, "loss_scale_init")); /* dynamic: the scale is state */
}

/* Entries in another order (as another safetensors writer may produce,
 * e.g. sorted by key) are fine as long as the data stays contiguous. */
static void swap_w_b(cJSON *root)
{
    /* w is [128,148), b is [148,160): put b first */
    set_offsets(root, "b", 128, 140);
    set_offsets(root, "w", 140, 160);
}

static void test_other_order(void **state)
{
    fixture *f = *state;
    size_t size;
    uint8_t *file = mutated(f, swap_w_b, &size);
    /* move the bytes to match */
    const clg_ckpt_entry *w = &f->layout.entries[clg__ckpt_layout_find(&f->layout, "w")];
    const clg_ckpt_entry *b = &f->layout.entries[clg__ckpt_layout_find(&f->layout, "b")];
    size_t hlen = size - 8 - f->layout.data_size;
    uint8_t *d = file + 8 + hlen;
    memcpy(d + 128, f->data + b->begin, 12);
    memcpy(d + 140, f->data + w->begin, 20);
    char err[512] = "";
    clg_ckpt_parsed p;
    clg_status st = clg__ckpt_parse(file, size, &f->layout, &p, err, sizeof err);
    if (st != 0)
        fail_msg("parse failed: %s", err);
    assert_memory_equal(p.data + w->file_begin, f->data + w->begin, 20);
    assert_int_equal(w->file_begin, 140);
    clg__ckpt_parsed_free(&p);
    free(file);
}

/* ------------------------------------------------------------ damage */

static void test_truncated(void **state)
{
    fixture *f = *state;
    for (size_t n = 0; n < 8; n++)
        expect_error(f, f->file, n, CLG_ERR_CORRUPT_FILE, "truncated");
    expect_error(f, f->file, 8 + f->header_len / 2, CLG_ERR_CORRUPT_FILE, "truncated");
    /* cuts in the header's last 8 bytes: its length counts from after the
     * 8 length bytes, not from the file's start */
    for (size_t k = 1; k <= 8; k++)
        expect_error(f, f->file, 8 + f->header_len - k, CLG_ERR_CORRUPT_FILE, "but only");
    /* every cut inside the data */
    for (size_t n = 8 + f->header_len; n < f->size; n++)
        expect_error(f, f->file, n, CLG_ERR_CORRUPT_FILE, "truncated");
}

static void test_header_length(void **state)
{
    fixture *f = *state;
    uint8_t *file = malloc(f->size);
    memcpy(file, f->file, f->size);
    uint64_t lens[] = {CLG_CKPT_HEADER_MAX + 1, UINT64_MAX, (uint64_t)1 << 63};
    for (int i = 0; i < 3; i++) {
        for (int b = 0; b < 8; b++)
            file[b] = (uint8_t)(lens[i] >> (8 * b));
        expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "exceeds the limit");
    }
    for (int b = 0; b < 8; b++)
        file[b] = 0;
    file[0] = 1;
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "too short");
    /* a header length that ends inside the JSON: the CRC covers the length
     * bytes, and once re-sealed the JSON parser sees the cut */
    for (int b = 0; b < 8; b++)
        file[b] = (uint8_t)((f->header_len - 16) >> (8 * b));
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch");
    assert_true(clg__ckpt_header_seal(file, f->size));
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "not valid JSON");
    free(file);
}

static void test_bad_json(void **state)
{
    fixture *f = *state;
    /* damage after the CRC field, re-sealed: the JSON checks see it */
    const size_t after = 8 + CLG_CKPT_HEADER_PREFIX_LEN + 9; /* the ',' after the field */
    uint8_t *file = edited(f, after, 'x', 1);
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "not valid JSON");
    free(file);
    file = edited(f, after + 20, '\0', 1);
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "NUL");
    free(file);
    file = edited(f, 8 + f->header_len - 1, 0xff, 1);
    expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, "UTF-8");
    free(file);

    /* JSON that does not begin with the CRC field is not a checkpoint */
    const char *arr = "[1, 2, 3]                                                       ";
    size_t size;
    file = ckpt_assemble(arr, strlen(arr), f->data, f->layout.data_size, &size);
    expect_error(f, file, size, CLG_ERR_CORRUPT_FILE, "does not begin with its CRC field");
    free(file);
    /* nesting deeper than cJSON's limit, behind a valid CRC field */
    char *deeper = malloc(8 * 1024 + 1);
    memset(deeper, '[', 8192);
    memcpy(deeper, CLG_CKPT_HEADER_PREFIX "00000000\",\"x\":", CLG_CKPT_HEADER_PREFIX_LEN + 14);
    deeper[8192] = '\0';
    file = ckpt_assemble(deeper, 8192, f->data, f->layout.data_size, &size);
    expect_error(f, file, size, CLG_ERR_CORRUPT_FILE, "header CRC-32 mismatch");
    assert_true(clg__ckpt_header_seal(file, size));
    expect_error(f, file, size, CLG_ERR_CORRUPT_FILE, "not valid JSON");
    free(file);
    free(deeper);
}

/* The header is protected like the data: one flipped bit anywhere in it
 * (the caller's metadata, clgrad's counters, a shape, the padding, the CRC
 * field itself) or in its length is refused before the JSON is read. */
static void test_header_crc(void **state)
{
    fixture *f = *state;
    uint8_t *file = malloc(f->size);
    for (size_t i = 0; i < 8 + f->header_len; i++) {
        memcpy(file, f->file, f->size);
        file[i] ^= (uint8_t)(1u << (i % 8));
        char err[512] = "";
        clg_ckpt_parsed p;
        clg_status st = clg__ckpt_parse(file, f->size, &f->layout, &p, err, sizeof err);
        if (st != CLG_ERR_CORRUPT_FILE)
            fail_msg("bit %zu of byte %zu flipped: %s (%s)", i % 8, i, clg_status_string(st),
                     err);
        /* past the length bytes and the field, it is the CRC that says so */
        if (i >= 8 + CLG_CKPT_HEADER_PREFIX_LEN + 9 && !strstr(err, "header CRC-32 mismatch"))
            fail_msg("byte %zu flipped: '%s'", i, err);
    }
    free(file);

    /* the case: the caller's "train.updates" 10 read back as 18 */
    clg_ckpt_layout l;
    build_layout(&l);
    const char *keys[] = {"train.updates"}, *values[] = {"10"};
    char *header = NULL, err[512];
    size_t hlen = 0, size = 0;
    assert_int_equal(clg__ckpt_header(&l, f->data, &f->state, keys, values, 1, &header, &hlen,
                                      err, sizeof err),
                     0);
    file = ckpt_assemble(header, hlen, f->data, l.data_size, &size);
    char *at = strstr((char *)file + 8, "\"train.updates\":\"10\"");
    assert_non_null(at);
    at[strlen("\"train.updates\":\"1")] ^= 0x08; /* '0' -> '8' */
    assert_non_null(strstr((char *)file + 8, "\"train.updates\":\"18\""));
    clg_ckpt_parsed p;
    assert_int_equal(clg__ckpt_parse(file, size, &l, &p, err, sizeof err), CLG_ERR_CORRUPT_FILE);
    assert_non_null(strstr(err, "header CRC-32 mismatch"));
    free(file);
    free(header);
    clg__ckpt_layout_free(&l);
}

/* clg_checkpoint_read_meta: the caller's pairs of a file's header, read
 * without a model; nothing of a header that does not verify. */
typedef struct pairs {
    int n;
    char text[512];
} pairs;

static void collect(const char *key, const char *value, void *user)
{
    pairs *p = user;
    size_t used = strlen(p->text);
    snprintf(p->text + used, sizeof p->text - used, "%s=%s;", key, value);
    p->n++;
}

static void write_bytes(const char *path, const uint8_t *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static void expect_read_meta(const char *path, clg_status want, const char *msg)
{
    pairs p = {0, ""};
    clg_status st = clg_checkpoint_read_meta(path, collect, &p);
    if (st != want || !strstr(clg_last_error(NULL), msg))
        fail_msg("expected %s with '%s', got %s: '%s'", clg_status_string(want), msg,
                 clg_status_string(st), clg_last_error(NULL));
    assert_int_equal(p.n, 0);
}

static void test_read_meta(void **state)
{
    fixture *f = *state;
    char path[] = "/tmp/clgrad-read-meta-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    /* the whole file, then its header alone: the same pairs, in order */
    for (int header_only = 0; header_only < 2; header_only++) {
        write_bytes(path, f->file, header_only ? 8 + f->header_len : f->size);
        pairs p = {0, ""};
        assert_int_equal(clg_checkpoint_read_meta(path, collect, &p), CLG_SUCCESS);
        assert_string_equal(p.text, "loader.epoch=3;rng=0123456789abcdef;note=caf\xc3\xa9 "
                                    "\"quoted\"\n;");
    }
    /* a flipped bit in the caller's metadata: the CRC, before anything */
    uint8_t *file = malloc(f->size);
    assert_non_null(file);
    memcpy(file, f->file, f->size);
    uint8_t *at = memmem(file, f->size, "0123456789abcdef", 16);
    assert_non_null(at);
    at[0] ^= 1;
    write_bytes(path, file, f->size);
    char want[512];
    snprintf(want, sizeof want, "clg_checkpoint_read_meta: '%s': header CRC-32 mismatch", path);
    expect_read_meta(path, CLG_ERR_CORRUPT_FILE, want);
    /* cut inside the header; no file */
    write_bytes(path, f->file, 8 + f->header_len / 2);
    expect_read_meta(path, CLG_ERR_CORRUPT_FILE, "truncated: header length");
    remove(path);
    expect_read_meta(path, CLG_ERR_IO, "cannot open");
    free(file);
}

/* Version 1 (no header CRC) is refused with a message that says why. */
static void test_version1(void **state)
{
    fixture *f = *state;
    const char *v1 = "{\"__metadata__\":{\"clgrad.format\":\"clgrad-checkpoint\","
                     "\"clgrad.version\":\"1\",\"clgrad.optimizer\":\"adamw\"}}   ";
    size_t size;
    uint8_t *file = ckpt_assemble(v1, strlen(v1), f->data, f->layout.data_size, &size);
    expect_error(f, file, size, CLG_ERR_CORRUPT_FILE, "format version 1 is not supported");
    free(file);
}

static void drop_meta(cJSON *root) { cJSON_DeleteItemFromObjectCaseSensitive(root, "__metadata__"); }
static void meta_not_object(cJSON *root)
{
    cJSON_ReplaceItemInObjectCaseSensitive(root, "__metadata__", cJSON_CreateString("x"));
}
static void meta_number(cJSON *root) { cJSON_AddNumberToObject(meta_of(root), "epoch", 3); }
static void wrong_format(cJSON *root) { set_meta(root, "clgrad.format", "pt"); }
static void no_format(cJSON *root) { set_meta(root, "clgrad.format", NULL); }
static void wrong_version(cJSON *root) { set_meta(root, "clgrad.version", "3"); }
static void bad_version(cJSON *root) { set_meta(root, "clgrad.version", "1.0"); }
static void unknown_clgrad_key(cJSON *root) { set_meta(root, "clgrad.future", "1"); }
static void bad_wsum(cJSON *root) { set_meta(root, "clgrad.weight_sum", "0.3"); }
static void no_wsum(cJSON *root) { set_meta(root, "clgrad.weight_sum", NULL); }
/* the pre-release draft kept the noise scale's first weight on the host */
static void old_small_weight(cJSON *root) { set_meta(root, "clgrad.small_weight", "0x3f800000"); }
static void bad_micro(cJSON *root) { set_meta(root, "clgrad.micro", "-1"); }
static void huge_cycles(cJSON *root) { set_meta(root, "clgrad.cycles", "18446744073709551616"); }
static void no_counters(cJSON *root) { set_meta(root, "clgrad.micro_total", NULL); }
static void no_updates(cJSON *root) { set_meta(root, "clgrad.updates", NULL); }
static void wide_updates(cJSON *root) { set_meta(root, "clgrad.updates", "4294967296"); }
static void no_crc(cJSON *root) { set_meta(root, "clgrad.crc32.w.acc", NULL); }
static void bad_crc(cJSON *root) { set_meta(root, "clgrad.crc32.b", "12345"); }
static void stray_crc(cJSON *root) { set_meta(root, "clgrad.crc32.nope", "00000000"); }
static void dup_meta(cJSON *root)
{
    cJSON_AddItemToObject(meta_of(root), "rng", cJSON_CreateString("again"));
}
static void dup_metadata_object(cJSON *root)
{
    cJSON_AddItemToObject(root, "__metadata__", cJSON_CreateObject());
}


static void other_optimizer(cJSON *root) { set_meta(root, "clgrad.optimizer", "sgd"); }
static void extra_tensor(cJSON *root)
{
    cJSON *e = cJSON_AddObjectToObject(root, "extra");
    cJSON_AddStringToObject(e, "dtype", "F32");
}
static void missing_tensor(cJSON *root) { cJSON_DeleteItemFromObjectCaseSensitive(root, "b.acc"); }
static void other_dtype(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "w.acc");
    cJSON_ReplaceItemInObjectCaseSensitive(e, "dtype", cJSON_CreateString("F16"));
}
static void other_shape(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "w");
    int dims[2] = {1, 5};
    cJSON_ReplaceItemInObjectCaseSensitive(e, "shape", cJSON_CreateIntArray(dims, 2));
}
static void other_count(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "b");
    int dims[1] = {4};
    cJSON_ReplaceItemInObjectCaseSensitive(e, "shape", cJSON_CreateIntArray(dims, 1));
}

static void m_flat(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "m");
    int dims[1] = {6};
    cJSON_ReplaceItemInObjectCaseSensitive(e, "shape", cJSON_CreateIntArray(dims, 1));
}
static void m_transposed(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "m");
    int dims[2] = {3, 2};
    cJSON_ReplaceItemInObjectCaseSensitive(e, "shape", cJSON_CreateIntArray(dims, 2));
}

static void no_growth(cJSON *root) { set_meta(root, "clgrad.loss_scale_growth", NULL); }
static void odd_policy(cJSON *root) { set_meta(root, "clgrad.nonfinite", "sometimes"); }
static void set_updates(cJSON *root) { set_meta(root, "clgrad.updates", "3755744307"); }
static void set_skipped(cJSON *root) { set_meta(root, "clgrad.skipped_updates", "2"); }
static void set_skipped_micro(cJSON *root) { set_meta(root, "clgrad.skipped_micro_steps", "5"); }
static void set_cycles(cJSON *root) { set_meta(root, "clgrad.cycles", "12345678902"); }
static void small_total(cJSON *root) { set_meta(root, "clgrad.micro_total", "12345678902"); }
static void no_micro(cJSON *root) { set_meta(root, "clgrad.micro", "0"); }

/* Headers edited through cJSON (same data, CRC re-sealed) and what the
 * parser must say: the metadata, a valid file of another model, a
 * configuration value missing, and the counters' metadata copies changed. */
typedef struct header_mutation {
    void (*edit)(cJSON *root);
    clg_status status;
    const char *msg;
} header_mutation;

static const header_mutation header_mutations[] = {
    /* without __metadata__ first, the header cannot begin with its CRC */
    {drop_meta, CLG_ERR_CORRUPT_FILE, "does not begin with its CRC field"},
    {meta_not_object, CLG_ERR_CORRUPT_FILE, "does not begin with its CRC"},
    {meta_number, CLG_ERR_CORRUPT_FILE, "not a string"},
    {wrong_format, CLG_ERR_CORRUPT_FILE, "not a clgrad checkpoint"},
    {no_format, CLG_ERR_CORRUPT_FILE, "not a clgrad checkpoint"},
    {wrong_version, CLG_ERR_CORRUPT_FILE, "version 3 is not supported"},
    {bad_version, CLG_ERR_CORRUPT_FILE, "clgrad.version"},
    {unknown_clgrad_key, CLG_ERR_CORRUPT_FILE, "unknown clgrad key"},
    {bad_wsum, CLG_ERR_CORRUPT_FILE, "weight_sum"},
    {no_wsum, CLG_ERR_CORRUPT_FILE, "clgrad.weight_sum"},
    {old_small_weight, CLG_ERR_CORRUPT_FILE, "unknown clgrad key 'clgrad.small_weight'"},
    {bad_micro, CLG_ERR_CORRUPT_FILE, "clgrad.micro"},
    {huge_cycles, CLG_ERR_CORRUPT_FILE, "clgrad.cycles"},
    {no_counters, CLG_ERR_CORRUPT_FILE, "lacks"},
    {no_updates, CLG_ERR_CORRUPT_FILE, "lacks"},
    {wide_updates, CLG_ERR_CORRUPT_FILE, "not a 32-bit count"},
    {no_crc, CLG_ERR_CORRUPT_FILE, "no clgrad.crc32.w.acc"},
    {bad_crc, CLG_ERR_CORRUPT_FILE, "not 8 hex digits"},
    {stray_crc, CLG_ERR_CORRUPT_FILE, "CRC for 'nope'"},
    {dup_meta, CLG_ERR_CORRUPT_FILE, "twice"},
    {dup_metadata_object, CLG_ERR_CORRUPT_FILE, "__metadata__ twice"},
    /* another model's file */
    {other_optimizer, CLG_ERR_MISMATCH, "optimizer 'sgd'"},
    {extra_tensor, CLG_ERR_MISMATCH, "'extra', which the model lacks"},
    {missing_tensor, CLG_ERR_MISMATCH, "'b.acc' is not in the file"},
    {other_dtype, CLG_ERR_MISMATCH, "F16 in the file but BF16"},
    {other_shape, CLG_ERR_MISMATCH, "shape [1, 5] in the file but [5]"},
    {other_count, CLG_ERR_MISMATCH, "shape [4] in the file but [3]"},
    {m_flat, CLG_ERR_MISMATCH, "'m' has shape [6] in the file but [2, 3]"},
    {m_transposed, CLG_ERR_MISMATCH, "shape [3, 2] in the file but [2, 3]"},
    /* a configuration value missing */
    {no_growth, CLG_ERR_MISMATCH,
     "loss_scale_growth was not set when the checkpoint was saved, the model has '2'"},
    /* an unknown policy name is neither skip_micro nor the others' */
    {odd_policy, CLG_ERR_MISMATCH, "nonfinite was 'sometimes'"},
    /* the counters' metadata copies (test_counters changes the step block's) */
    {set_updates, CLG_ERR_CORRUPT_FILE,
     "counters disagree: clgrad.updates is 3755744307 in the metadata but the step block's T "
     "(updates applied) is 3755744306"},
    {set_skipped, CLG_ERR_CORRUPT_FILE,
     "clgrad.skipped_updates is 2 in the metadata but the step block's SKIPPED is 3"},
    {set_skipped_micro, CLG_ERR_CORRUPT_FILE,
     "clgrad.skipped_micro_steps is 5 in the metadata but the step block's SKIPPED_MICRO is 4"},
    {set_cycles, CLG_ERR_CORRUPT_FILE,
     "clgrad.cycles is 12345678902 but clgrad.updates 3755744306 + clgrad.skipped_updates 3 is "
     "3755744309"},
    {small_total, CLG_ERR_CORRUPT_FILE, "clgrad.micro_total is 12345678902"},
    {no_micro, CLG_ERR_CORRUPT_FILE,
     "the step block counts 1 finite micro-steps in the current cycle but clgrad.micro is 0"},
};

static void test_header_mutations(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < sizeof header_mutations / sizeof header_mutations[0]; i++)
        expect_mutation(f, header_mutations[i].edit, header_mutations[i].status,
                        header_mutations[i].msg);
}

/* ------------------------------------------------------------ configuration */

/* Parses the fixture's file against a layout of config cfg. */
static void expect_config(fixture *f, const clg_config *cfg, clg_status status, const char *msg)
{
    clg_ckpt_layout live;
    build_layout_with(&live, cfg);
    char err[512] = "";
    clg_ckpt_parsed p;
    clg_status st = clg__ckpt_parse(f->file, f->size, &live, &p, err, sizeof err);
    if (st != status || (msg && !strstr(err, msg)))
        fail_msg("expected %s with '%s', got %s: '%s'", clg_status_string(status),
                 msg ? msg : "", clg_status_string(st), err);
    if (st == CLG_SUCCESS)
        clg__ckpt_parsed_free(&p);
    clg__ckpt_layout_free(&live);
}

static void test_config_mismatch(void **state)
{
    fixture *f = *state;
    const clg_config base = ckpt_fixture_config();
    clg_config c = base;
    expect_config(f, &c, CLG_SUCCESS, NULL);
    c.loss_scale = CLG_LOSS_SCALE_STATIC;
    expect_config(f, &c, CLG_ERR_MISMATCH,
                  "loss_scale was 'dynamic' when the checkpoint was saved, the model has "
                  "'static'");
    c.loss_scale = CLG_LOSS_SCALE_NONE;
    expect_config(f, &c, CLG_ERR_MISMATCH, "loss_scale was 'dynamic'");
/* base with one field changed must parse with status and msg */
#define EXPECT_FIELD(field, value, status, msg)                                                    \
    do {                                                                                           \
        clg_config changed = base;                                                                 \
        changed.field = value;                                                                     \
        expect_config(f, &changed, status, msg);                                                   \
    } while (0)
    EXPECT_FIELD(loss_scale_growth, 4.0f, CLG_ERR_MISMATCH,
                 "loss_scale_growth was '2' when the checkpoint was saved, the model has '4'");
    EXPECT_FIELD(loss_scale_backoff, 0.25f, CLG_ERR_MISMATCH, "loss_scale_backoff was '0.5'");
    EXPECT_FIELD(loss_scale_interval, 2000, CLG_ERR_MISMATCH, "loss_scale_interval was '100'");
    EXPECT_FIELD(loss_scale_min, 0.5f, CLG_ERR_MISMATCH, "loss_scale_min was '1'");
    EXPECT_FIELD(loss_scale_max, 65536.0f, CLG_ERR_MISMATCH,
                 "loss_scale_max was '16777216' when");
    /* dynamic: the current scale is state, init is not used */
    EXPECT_FIELD(loss_scale_init, 2.0f, CLG_SUCCESS, NULL);
    /* named as a field, before the tensors' dtypes */
    EXPECT_FIELD(acc_dtype, CLG_FP32, CLG_ERR_MISMATCH,
                 "acc_dtype was 'bf16' when the checkpoint was saved, the model has 'fp32'");
    EXPECT_FIELD(param_copy_dtype, CLG_FP16, CLG_ERR_MISMATCH, "param_copy_dtype was 'none'");
    EXPECT_FIELD(amsgrad, 1, CLG_ERR_MISMATCH, "amsgrad was '0'");
    EXPECT_FIELD(normalize, CLG_NORM_SUM, CLG_ERR_MISMATCH, "normalize was 'mean'");
#undef EXPECT_FIELD
    /* the non-finite policy: only skip-micro mode changes the saved state */
    c = base;
    c.nonfinite = CLG_NONFINITE_ERROR;
    expect_config(f, &c, CLG_SUCCESS, NULL);
    c.nonfinite = CLG_NONFINITE_SKIP_MICRO;
    expect_config(f, &c, CLG_ERR_MISMATCH, "nonfinite was 'skip_update' when the checkpoint "
                                           "was saved, the model has 'skip_micro'");
    /* hyperparameters are the caller's business */
    c = base;
    c.lr = 0.5f;
    c.beta1 = 0.8f;
    c.weight_decay = 0.1f;
    c.clip_norm = 1.0f;
    c.seed = 99;
    expect_config(f, &c, CLG_SUCCESS, NULL);
    c.optimizer = CLG_SGD;
    expect_config(f, &c, CLG_ERR_MISMATCH, "optimizer 'adamw', the model uses 'sgd'");
}

/* A static loss scale lives in the step block, so the scale is compared. */
static void test_config_static_scale(void **state)
{
    fixture *f = *state;
    clg_config c = ckpt_fixture_config();
    c.loss_scale = CLG_LOSS_SCALE_STATIC;
    c.loss_scale_init = 128.0f;
    clg_ckpt_layout l;
    build_layout_with(&l, &c);
    /* the step block a static scale has: the scale, no growth tracker */
    uint8_t *data = malloc(l.data_size);
    memcpy(data, f->data, l.data_size);
    const uint32_t words[2][2] = {{CLG_SB_LOSS_SCALE, 0x43000000u /* 128 */}, {CLG_SB_GROWTH, 0}};
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 4; b++)
            data[l.entries[0].begin + 4 * words[i][0] + b] = (uint8_t)(words[i][1] >> (8 * b));
    char *header = NULL, err[512];
    size_t hlen = 0, size = 0;
    assert_int_equal(clg__ckpt_header(&l, data, &f->state, NULL, NULL, 0, &header, &hlen, err,
                                      sizeof err),
                     0);
    assert_non_null(strstr(header, "\"clgrad.loss_scale_init\":\"128\""));
    assert_null(strstr(header, "loss_scale_growth"));
    uint8_t *file = ckpt_assemble(header, hlen, data, l.data_size, &size);
    free(data);
    clg_ckpt_parsed p;
    assert_int_equal(clg__ckpt_parse(file, size, &l, &p, err, sizeof err), 0);
    clg__ckpt_parsed_free(&p);
    clg__ckpt_layout_free(&l);
    c.loss_scale_init = 256.0f;
    build_layout_with(&l, &c);
    assert_int_equal(clg__ckpt_parse(file, size, &l, &p, err, sizeof err), CLG_ERR_MISMATCH);
    assert_non_null(strstr(err, "loss_scale_init was '128' when the checkpoint was saved, the "
                                "model has '256'"));
    clg__ckpt_layout_free(&l);
    free(file);
    free(header);
}

/* ------------------------------------------------------------ counters */

/* The fixture's file with step block word w set to v (its CRC fixed). */
static uint8_t *with_word(fixture *f, int w, uint32_t v, size_t *size)
{
    uint8_t *data = malloc(f->layout.data_size);
    memcpy(data, f->data, f->layout.data_size);
    const clg_ckpt_entry *sb = &f->layout.entries[0];
    for (int b = 0; b < 4; b++)
        data[sb->begin + 4 * w + b] = (uint8_t)(v >> (8 * b));
    clg_cycle_state st = f->state;
    st.step_block[w] = v;
    char *header = NULL, err[512];
    size_t hlen;
    /* the writer's header of that data, then the metadata's copy of the
     * counter put back as it was: only the step block changed */
    assert_int_equal(clg__ckpt_header(&f->layout, data, &st, user_keys, user_values, 3, &header,
                                      &hlen, err, sizeof err),
                     0);
    uint8_t *file = ckpt_assemble(header, hlen, data, f->layout.data_size, size);
    free(header);
    free(data);
    return file;
}

static void old_updates(cJSON *root) { set_meta(root, "clgrad.updates", "3755744306"); }

/* file (a whole image) with its header edited by fn, same data, re-sealed */
static uint8_t *rewrite_header(const uint8_t *file, size_t size, void (*fn)(cJSON *),
                               size_t *out_size)
{
    uint8_t *out = ckpt_rewrite_header(file, size, fn, out_size);
    assert_non_null(out);
    assert_true(clg__ckpt_header_seal(out, *out_size));
    return out;
}
/* cycles + 2^32: the same in the step block's 32 bits, and fine */
static void wrapped_cycles(cJSON *root) { set_meta(root, "clgrad.cycles", "16640646197"); }

static void test_counters(void **state)
{
    fixture *f = *state;
    /* the metadata's copy changed, CRC re-sealed: header_mutations */
    size_t size;
    uint8_t *file = mutated(f, wrapped_cycles, &size);
    char err[512] = "";
    clg_ckpt_parsed p;
    if (clg__ckpt_parse(file, size, &f->layout, &p, err, sizeof err) != 0)
        fail_msg("cycles past 2^32: %s", err);
    clg__ckpt_parsed_free(&p);
    free(file);

    /* the step block's copy changed, every CRC right: the writer's file of
     * that block, with the metadata's copy put back as it was */
    uint8_t *block = with_word(f, CLG_SB_T, 7, &size);
    file = rewrite_header(block, size, old_updates, &size);
    free(block);
    expect_error(f, file, size, CLG_ERR_CORRUPT_FILE,
                 "clgrad.updates is 3755744306 in the metadata but the step block's T (updates "
                 "applied) is 7");
    free(file);
}

static void oob(cJSON *root) { set_offsets(root, "b.acc", 236, 242); }
static void overlap(cJSON *root)
{
    set_offsets(root, "w", 128, 148);
    set_offsets(root, "b", 144, 156);
}
static void hole(cJSON *root) { set_offsets(root, "b", 152, 164); }
static void reversed(cJSON *root) { set_offsets(root, "b", 160, 148); }
static void fractional(cJSON *root) { set_offsets(root, "b", 148.5, 160.5); }
static void negative(cJSON *root) { set_offsets(root, "b", -12, 0); }
static void wrong_span(cJSON *root) { set_offsets(root, "b", 148, 164); }
static void three_offsets(cJSON *root)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "b");
    int v[3] = {148, 160, 160};
    cJSON_ReplaceItemInObjectCaseSensitive(e, "data_offsets", cJSON_CreateIntArray(v, 3));
}
static void extra_field(cJSON *root)
{
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(root, "b"), "quant", "none");
}
static void dup_tensor(cJSON *root)
{
    cJSON *copy = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(root, "b"), 1);
    cJSON_AddItemToObject(root, "b", copy);
}
static void entry_not_object(cJSON *root)
{
    cJSON_ReplaceItemInObjectCaseSensitive(root, "b", cJSON_CreateNumber(1));
}

static void test_offsets(void **state)
{
    fixture *f = *state;
    /* the data: sb [0,128) w [128,148) b [148,160) empty [160,160)
     * w.state0 [160,180) w.acc [180,190) b.acc [190,196) m [196,220) */
    assert_int_equal(f->layout.data_size, 220);
    expect_mutation(f, oob, CLG_ERR_CORRUPT_FILE, "beyond the end of the data");
    expect_mutation(f, overlap, CLG_ERR_CORRUPT_FILE, "overlaps");
    expect_mutation(f, hole, CLG_ERR_CORRUPT_FILE, "hole");
    expect_mutation(f, reversed, CLG_ERR_CORRUPT_FILE, "begin <= end");
    expect_mutation(f, fractional, CLG_ERR_CORRUPT_FILE, "pair of byte offsets");
    expect_mutation(f, negative, CLG_ERR_CORRUPT_FILE, "pair of byte offsets");
    expect_mutation(f, wrong_span, CLG_ERR_CORRUPT_FILE, "span 16 bytes");
    expect_mutation(f, three_offsets, CLG_ERR_CORRUPT_FILE, "pair of byte offsets");
    expect_mutation(f, extra_field, CLG_ERR_CORRUPT_FILE, "unknown field 'quant'");
    expect_mutation(f, dup_tensor, CLG_ERR_CORRUPT_FILE, "tensor 'b' twice");
    expect_mutation(f, entry_not_object, CLG_ERR_CORRUPT_FILE, "not a JSON object");

    /* trailing bytes after the last tensor */
    uint8_t *file = malloc(f->size + 4);
    memcpy(file, f->file, f->size);
    memset(file + f->size, 0, 4);
    expect_error(f, file, f->size + 4, CLG_ERR_CORRUPT_FILE, "4 trailing bytes");
    free(file);
}

static void test_crc(void **state)
{
    fixture *f = *state;
    uint8_t *file = malloc(f->size);
    /* one flipped bit in any tensor's bytes is caught */
    for (size_t i = 0; i < f->layout.n; i++) {
        const clg_ckpt_entry *e = &f->layout.entries[i];
        if (e->end == e->begin)
            continue;
        memcpy(file, f->file, f->size);
        file[8 + f->header_len + e->begin + (e->end - e->begin) / 2] ^= 0x10;
        char msg[128];
        snprintf(msg, sizeof msg, "CRC-32 mismatch in tensor '%s'", e->key);
        expect_error(f, file, f->size, CLG_ERR_CORRUPT_FILE, msg);
    }
    free(file);
}

/* ------------------------------------------------------------ writer */

static void test_writer_rejects(void **state)
{
    fixture *f = *state;
    char err[512], *header = NULL;
    size_t len;
    const char *k1[] = {"clgrad.mine"}, *v1[] = {"x"};
    assert_int_equal(clg__ckpt_header(&f->layout, f->data, &f->state, k1, v1, 1, &header, &len,
                                      err, sizeof err),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "reserved"));
    const char *k2[] = {"a", "a"}, *v2[] = {"1", "2"};
    assert_int_equal(clg__ckpt_header(&f->layout, f->data, &f->state, k2, v2, 2, &header, &len,
                                      err, sizeof err),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "twice"));
    const char *k3[] = {"a"}, *v3[] = {"\xff"};
    assert_int_equal(clg__ckpt_header(&f->layout, f->data, &f->state, k3, v3, 1, &header, &len,
                                      err, sizeof err),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "UTF-8"));
    const char *v4[] = {NULL};
    assert_int_equal(clg__ckpt_header(&f->layout, f->data, &f->state, k3, v4, 1, &header, &len,
                                      err, sizeof err),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_null(header);

    /* tensor names that collide with clgrad's suffixes cannot be stored */
    clg_ckpt_layout l;
    memset(&l, 0, sizeof l);
    assert_int_equal(clg__ckpt_layout_add(&l, "x.acc", CLG_CKPT_F32, 2, CLG_ARENA_PARAMS, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(&l, "x.acc", CLG_CKPT_F32, 2, CLG_ARENA_ACC, 1), 0);
    assert_int_equal(clg__ckpt_layout_finish(&l, err, sizeof err), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err, "occurs twice"));
    clg__ckpt_layout_free(&l);
    assert_int_equal(clg__ckpt_layout_add(&l, "__metadata__", CLG_CKPT_F32, 2, 0, 0), 0);
    assert_int_equal(clg__ckpt_layout_finish(&l, err, sizeof err), CLG_ERR_INVALID_ARGUMENT);
    clg__ckpt_layout_free(&l);
}

/* The pre-release draft stored the noise scale's reduction partials as a
 * tensor whose length depended on the device; they now live in the step
 * block, and a file that still has them is for another layout. */
static void old_noise_partials(cJSON *root)
{
    cJSON *e = cJSON_AddObjectToObject(root, "clgrad.noise_partials");
    cJSON_AddStringToObject(e, "dtype", "F32");
    int shape[1] = {2};
    cJSON_AddItemToObject(e, "shape", cJSON_CreateIntArray(shape, 1));
    int off[2] = {196, 204};
    cJSON_AddItemToObject(e, "data_offsets", cJSON_CreateIntArray(off, 2));
}

static void test_no_noise_partials(void **state)
{
    fixture *f = *state;
    expect_mutation(f, old_noise_partials, CLG_ERR_MISMATCH,
                    "'clgrad.noise_partials', which the model lacks");
    /* and the writer's header has no such entry nor the old weight key */
    assert_null(strstr(f->header, "noise_partials"));
    assert_null(strstr(f->header, "small_weight"));
}

/* A case on a fixture of its own: setup before it, teardown after. */
#define FRESH(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

TU_MAIN("checkpoint_format", NULL, NULL, FRESH(test_round_trip), FRESH(test_other_order),
        FRESH(test_truncated), FRESH(test_header_length), FRESH(test_bad_json),
        FRESH(test_header_crc), FRESH(test_read_meta), FRESH(test_version1),
        FRESH(test_header_mutations), FRESH(test_config_mismatch), FRESH(test_config_static_scale),
        FRESH(test_counters), FRESH(test_offsets), FRESH(test_crc), FRESH(test_writer_rejects),
        FRESH(test_no_noise_partials))
