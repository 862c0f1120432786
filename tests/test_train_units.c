/* test_train_units.c - clgrad-train's host-side parts: the IDX parser and
 * gzip loader (good files, truncated, wrong magic, wrong count, bad labels,
 * missing files), command-line validation, and the data order (the samples
 * of each effective batch do not depend on the micro-batch). No device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dataset.h"
#include "idx.h"
#include "options.h"
#include "order.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ------------------------------------------------------------ helpers */

/* An IDX image: header for dims, then payload bytes i*7+3. */
static uint8_t *make_idx(const uint32_t *dims, int ndims, size_t *len)
{
    size_t payload = 1;
    for (int d = 0; d < ndims; d++)
        payload *= dims[d];
    *len = 4 + 4 * (size_t)ndims + payload;
    uint8_t *b = tu_xmalloc(*len);
    b[0] = 0;
    b[1] = 0;
    b[2] = 8;
    b[3] = (uint8_t)ndims;
    for (int d = 0; d < ndims; d++) {
        b[4 + 4 * d] = (uint8_t)(dims[d] >> 24);
        b[5 + 4 * d] = (uint8_t)(dims[d] >> 16);
        b[6 + 4 * d] = (uint8_t)(dims[d] >> 8);
        b[7 + 4 * d] = (uint8_t)dims[d];
    }
    for (size_t i = 0; i < payload; i++)
        b[4 + 4 * ndims + i] = (uint8_t)(i * 7 + 3);
    return b;
}

static void write_gz(const char *path, const uint8_t *data, size_t len)
{
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, data, (unsigned)len), (int)len);
    assert_int_equal(gzclose(gz), Z_OK);
}

static void assert_contains(const char *s, const char *needle)
{
    if (!strstr(s, needle))
        fail_msg("message '%s' does not contain '%s'", s, needle);
}

/* ------------------------------------------------------------ idx_parse */

static void test_parse_good(void **state)
{
    (void)state;
    uint32_t dims[3] = {5, 3, 4};
    size_t len;
    uint8_t *b = make_idx(dims, 3, &len);
    idx_file f;
    char err[256] = "";
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(f.ndims, 3);
    assert_int_equal(f.count, 5);
    assert_int_equal(f.item_size, 12);
    assert_ptr_equal(f.data, b + 16);
    assert_int_equal(f.data[59], (uint8_t)(59 * 7 + 3));
    free(b);
}

static void test_parse_truncated(void **state)
{
    (void)state;
    uint32_t dims[3] = {5, 3, 4};
    size_t len;
    uint8_t *b = make_idx(dims, 3, &len);
    idx_file f;
    char err[256];
    /* Every proper prefix is rejected, with the reason for its length. */
    for (size_t n = 0; n < len; n++) {
        err[0] = 0;
        assert_int_equal(idx_parse(b, n, &f, err, sizeof err), -1);
        assert_contains(err, "truncated");
        assert_null(f.data);
    }
    free(b);
}

static void test_parse_wrong_magic(void **state)
{
    (void)state;
    uint32_t dims[1] = {4};
    size_t len;
    uint8_t *b = make_idx(dims, 1, &len);
    idx_file f;
    char err[256];
    b[0] = 0x1f; /* e.g. a gzip file read raw */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_contains(err, "wrong magic");
    b[0] = 0;
    b[3] = 0; /* zero dimensions */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_contains(err, "dimensions");
    b[3] = 9;
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    b[3] = 1;
    b[2] = 0x0d; /* float elements */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_contains(err, "unsupported element type");
    free(b);
}

static void test_parse_wrong_count(void **state)
{
    (void)state;
    uint32_t dims[2] = {6, 2};
    size_t len;
    uint8_t *b = make_idx(dims, 2, &len);
    idx_file f;
    char err[256];
    b[7] = 5; /* header says 5 items, 6 follow */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_contains(err, "wrong count");
    b[7] = 7; /* header says 7, only 6 follow */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_contains(err, "truncated");
    /* Huge dimensions must not overflow into a small size. */
    b[4] = b[5] = b[6] = b[7] = 0xff;
    b[8] = b[9] = b[10] = b[11] = 0xff;
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    b[8] = b[9] = b[10] = b[11] = 0; /* zero-sized items */
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    free(b);
}

/* ------------------------------------------------------------ files */

typedef struct files_state {
    char *dir;
} files_state;

static int files_setup(void **state)
{
    files_state *s = tu_xmalloc(sizeof *s);
    s->dir = tu_mkdtemp("clgrad-train-idx");
    *state = s;
    return 0;
}

static int files_teardown(void **state)
{
    files_state *s = *state;
    tu_rmdir_tree(s->dir);
    free(s->dir);
    free(s);
    return 0;
}

/* Writes a consistent train pair of n samples of 4x3 pixels, labels i % 10. */
static void write_pair(const char *dir, const char *prefix, uint32_t n, int gz)
{
    char path[1024];
    uint32_t idims[3] = {n, 4, 3}, ldims[1] = {n};
    size_t ilen, llen;
    uint8_t *img = make_idx(idims, 3, &ilen);
    uint8_t *lab = make_idx(ldims, 1, &llen);
    for (uint32_t i = 0; i < n; i++)
        lab[8 + i] = (uint8_t)(i % 10);
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, prefix, gz ? ".gz" : "");
    gz ? write_gz(path, img, ilen) : tu_write_file(path, img, ilen);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, prefix, gz ? ".gz" : "");
    gz ? write_gz(path, lab, llen) : tu_write_file(path, lab, llen);
    free(img);
    free(lab);
}

static void test_load_good(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 20, 1);
    write_pair(s->dir, "t10k", 7, 0); /* plain files are read too */
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), 0);
    assert_int_equal(d.count, 20);
    assert_int_equal(d.dim, 12);
    assert_int_equal(d.labels[13], 3);
    assert_int_equal(d.images[12 * 2 + 1], (uint8_t)(25 * 7 + 3));
    dataset_free(&d);
    assert_int_equal(dataset_load(s->dir, "t10k", &d, err, sizeof err), 0);
    assert_int_equal(d.count, 7);
    dataset_free(&d);
}

static void test_load_missing(void **state)
{
    files_state *s = *state;
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "train-images-idx3-ubyte");
    assert_contains(err, "No such file");
}

static void test_load_truncated_gz(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 50, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", s->dir);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    /* Cut the compressed stream at several points: always a clear error
     * naming the file, never a crash. */
    size_t cuts[] = {0, 1, 5, 12, len / 2, len - 9, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        tu_write_file(path, b, cuts[i]);
        dataset d;
        char err[1024] = "";
        assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
        assert_contains(err, path);
    }
    free(b);
}

static void test_load_mismatch_and_labels(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 30, 1);
    write_pair(s->dir, "other", 29, 1);
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/other-labels-idx1-ubyte.gz", s->dir);
    snprintf(to, sizeof to, "%s/train-labels-idx1-ubyte.gz", s->dir);
    assert_int_equal(rename(from, to), 0);
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "label/image count mismatch");
    assert_contains(err, "30 images");
    assert_contains(err, "29 labels");

    /* A label above 9. */
    uint32_t ldims[1] = {30};
    size_t llen;
    uint8_t *lab = make_idx(ldims, 1, &llen);
    for (int i = 0; i < 30; i++)
        lab[8 + i] = (uint8_t)(i % 10);
    lab[8 + 17] = 10;
    write_gz(to, lab, llen);
    free(lab);
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "label 10 of item 17");
    assert_contains(err, "train-labels-idx1-ubyte.gz");

    /* Images where labels belong: a 3-d file as labels. */
    snprintf(from, sizeof from, "%s/train-images-idx3-ubyte.gz", s->dir);
    size_t ilen;
    uint8_t *img = tu_read_file(from, &ilen);
    tu_write_file(to, img, ilen);
    free(img);
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "expected labels");
}

static void test_load_wrong_magic_file(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 10, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", s->dir);
    const char text[] = "this is not an IDX file at all\n";
    write_gz(path, (const uint8_t *)text, sizeof text - 1);
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, path);
    assert_contains(err, "wrong magic");
}

/* ------------------------------------------------------------ options */

static int parse(train_options *o, char *err, size_t errlen, ...)
{
    char *argv[32] = {"clgrad-train"};
    int argc = 1;
    va_list ap;
    va_start(ap, errlen);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL)
        argv[argc++] = (char *)a;
    va_end(ap);
    train_options_default(o);
    err[0] = 0;
    return train_options_parse(argc, argv, o, err, errlen);
}

static void expect_bad(const char *flag, const char *value, const char *range)
{
    train_options o;
    char err[512];
    if (parse(&o, err, sizeof err, flag, value, NULL) != -1)
        fail_msg("%s %s was accepted", flag, value);
    assert_contains(err, flag);
    if (range)
        assert_contains(err, range);
}

static void test_options_defaults(void **state)
{
    (void)state;
    train_options o;
    char err[512];
    assert_int_equal(parse(&o, err, sizeof err, NULL), 0);
    assert_int_equal(o.batch, 128);
    assert_int_equal(o.micro_batch, 32);
    assert_int_equal(o.n_hidden, 2);
    assert_int_equal(o.hidden[0], 512);
    assert_int_equal(o.hidden[1], 256);
    assert_int_equal(o.path, GRAD_PATH_B);
    assert_int_equal(parse(&o, err, sizeof err, "--batch", "20", NULL), 0);
    assert_int_equal(o.micro_batch, 20); /* default micro-batch capped at B */
    assert_int_equal(parse(&o, err, sizeof err, "--hidden=64,32,16", "--batch=100",
                           "--micro-batch", "33", "--grad-dtype", "bf16", "--loss-scale", "1024",
                           "--vram", "512M", "--optimizer", "SGD", "--json", NULL),
                     0);
    assert_int_equal(o.n_hidden, 3);
    assert_int_equal(o.hidden[2], 16);
    assert_int_equal(o.micro_batch, 33);
    assert_int_equal(o.grad_dtype, CLG_BF16);
    assert_int_equal(o.path, GRAD_PATH_C); /* bf16 cannot go in place */
    assert_int_equal(o.loss_scale, CLG_LOSS_SCALE_STATIC);
    assert_float_equal(o.loss_scale_value, 1024.0f, 0.0f);
    assert_true(o.vram == 512ull << 20);
    assert_int_equal(o.optimizer, CLG_SGD);
    assert_true(o.json);
    assert_int_equal(parse(&o, err, sizeof err, "--help", NULL), 1);
}

static void test_options_bad(void **state)
{
    (void)state;
    expect_bad("--batch", "0", "[1, 1048576]");
    expect_bad("--batch", "-5", "[1, 1048576]");
    expect_bad("--batch", "12x", "[1, 1048576]");
    expect_bad("--batch", "99999999999999999999", NULL);
    expect_bad("--micro-batch", "0", NULL);
    expect_bad("--epochs", "0", "[1, 1000]");
    expect_bad("--steps", "0", NULL);
    expect_bad("--lr", "0", "(0, 10]");
    expect_bad("--lr", "nan", NULL);
    expect_bad("--lr", "inf", NULL);
    expect_bad("--lr", "-1e-3", NULL);
    expect_bad("--weight-decay", "2", "[0, 1]");
    expect_bad("--clip", "-1", NULL);
    expect_bad("--optimizer", "adagrad", "adamw|adam|sgd|lion");
    expect_bad("--schedule", "step", "constant|linear|cosine");
    expect_bad("--grad-dtype", "fp8", "fp32|fp16|bf16");
    expect_bad("--grad-path", "D", "A|B|C");
    expect_bad("--loss-scale", "0.5", "dynamic");
    expect_bad("--loss-scale", "static", NULL);
    expect_bad("--lr-scale", "cubic", "none|linear|sqrt");
    expect_bad("--base-batch", "0", NULL);
    expect_bad("--hidden", "512,,256", "--hidden");
    expect_bad("--hidden", "0", NULL);
    expect_bad("--hidden", "512,", NULL);
    expect_bad("--hidden", "1,2,3,4,5,6,7,8,9", "at most");
    expect_bad("--vram", "12Q", "byte count");
    expect_bad("--vram", "1000", "at least 1M");
    expect_bad("--save-every", "0", NULL);
    expect_bad("--metrics", "", NULL);

    train_options o;
    char err[512];
    assert_int_equal(parse(&o, err, sizeof err, "--batch", "16", "--micro-batch", "32", NULL), -1);
    assert_contains(err, "--micro-batch");
    assert_contains(err, "[1, 16]");
    assert_int_equal(parse(&o, err, sizeof err, "--grad-path", "B", "--grad-dtype", "fp16", NULL),
                     -1);
    assert_contains(err, "--grad-path");
    assert_int_equal(parse(&o, err, sizeof err, "--bogus", NULL), -1);
    assert_contains(err, "--bogus");
    assert_int_equal(parse(&o, err, sizeof err, "--batch", NULL), -1);
    assert_contains(err, "missing value");
    assert_int_equal(parse(&o, err, sizeof err, "--json=1", NULL), -1);
    assert_contains(err, "--json");
    assert_int_equal(parse(&o, err, sizeof err, "--save-every", "5", NULL), -1);
    assert_contains(err, "--checkpoint");
}

/* ------------------------------------------------------------ order */

static void test_order_permutation(void **state)
{
    (void)state;
    batch_order o, o2;
    assert_int_equal(order_init(&o, 7, 1000, 64), 0);
    assert_int_equal(order_init(&o2, 7, 1000, 64), 0);
    char *seen = calloc(1000, 1);
    for (uint64_t epoch = 0; epoch < 3; epoch++) {
        order_shuffle(&o, epoch);
        order_shuffle(&o2, epoch);
        memset(seen, 0, 1000);
        for (size_t i = 0; i < 1000; i++) {
            assert_true(o.perm[i] >= 0 && o.perm[i] < 1000);
            assert_false(seen[o.perm[i]]);
            seen[o.perm[i]] = 1;
        }
        assert_memory_equal(o.perm, o2.perm, 1000 * sizeof *o.perm); /* deterministic */
    }
    /* Epochs and seeds give different orders. */
    order_shuffle(&o, 0);
    order_shuffle(&o2, 1);
    assert_true(memcmp(o.perm, o2.perm, 1000 * sizeof *o.perm) != 0);
    batch_order o3;
    assert_int_equal(order_init(&o3, 8, 1000, 64), 0);
    assert_true(memcmp(o.perm, o3.perm, 1000 * sizeof *o.perm) != 0);
    free(seen);
    order_free(&o);
    order_free(&o2);
    order_free(&o3);
}

static void test_order_batches(void **state)
{
    (void)state;
    batch_order o;
    assert_int_equal(order_init(&o, 1, 1000, 64), 0);
    assert_int_equal(order_batches_per_epoch(&o), 16); /* 15 x 64 + 40 */
    size_t start, len, total = 0;
    for (size_t j = 0; j < 16; j++) {
        order_batch(&o, j, &start, &len);
        assert_int_equal(start, j * 64);
        assert_int_equal(len, j < 15 ? 64 : 40);
        total += len;
    }
    assert_int_equal(total, 1000);
    /* Micro-batches of any b cover the batch exactly, in order, so the
     * samples of a batch are the same whatever b is. */
    for (size_t b = 1; b <= 64; b++) {
        size_t km = order_micro_count(64, b), covered = 0;
        assert_int_equal(km, (64 + b - 1) / b);
        for (size_t i = 0; i < km; i++) {
            size_t l = order_micro_len(64, b, i);
            assert_true(l >= 1 && l <= b);
            assert_true(i + 1 == km || l == b);
            covered += l;
        }
        assert_int_equal(covered, 64);
    }
    assert_int_equal(order_micro_count(50, 16), 4);
    assert_int_equal(order_micro_len(50, 16, 3), 2);
    order_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_truncated),
        cmocka_unit_test(test_parse_wrong_magic),
        cmocka_unit_test(test_parse_wrong_count),
        cmocka_unit_test_setup_teardown(test_load_good, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_load_missing, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_load_truncated_gz, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_load_mismatch_and_labels, files_setup,
                                        files_teardown),
        cmocka_unit_test_setup_teardown(test_load_wrong_magic_file, files_setup, files_teardown),
        cmocka_unit_test(test_options_defaults),
        cmocka_unit_test(test_options_bad),
        cmocka_unit_test(test_order_permutation),
        cmocka_unit_test(test_order_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
