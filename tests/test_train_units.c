/* test_train_units.c - clgrad-train's host-side parts: the IDX parser and
 * gzip loader (good files, truncated, wrong magic, wrong count, bad labels,
 * missing files, a shape other than the model's), command-line validation
 * (numbers that must survive the conversion to float, flags given or not),
 * the data order (the samples of each effective batch do not depend on the
 * micro-batch), k and each cycle's length (run_cycle.c), the checks of
 * output paths, the checkpoint writer's lock, all-or-nothing output files,
 * and the run settings compared on resume. No device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "atomic_file.h"
#include "dataset.h"
#include "errmsg.h"
#include "idx.h"
#include "input_file.h"
#include "memplan.h"
#include "metrics.h"
#include "options.h"
#include "order.h"
#include "file_id.h"
#include "outpaths.h"
#include "progress.h"
#include "run.h"
#include "runconfig.h"
#include "testutil.h"
#include "writer_lock.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* The IDX image of 5 items of 3 x 4 bytes (make_idx). */
static uint8_t *five_items(size_t *len)
{
    static const uint32_t dims[3] = {5, 3, 4};
    return make_idx(dims, 3, len);
}

/* idx_parse of len bytes of b, which must fail and leave its output
 * zeroed (idx.h); its message, in a buffer that the next call overwrites. */
static const char *parse_error(const uint8_t *b, size_t len)
{
    static char err[256];
    err[0] = 0;
    idx_file f;
    assert_int_equal(idx_parse(b, len, &f, err, sizeof err), -1);
    assert_null(f.data);
    return err;
}

static void test_parse_good(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = five_items(&len);
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
    size_t len;
    uint8_t *b = five_items(&len);
    /* Every proper prefix is rejected, with the reason for its length. */
    for (size_t n = 0; n < len; n++)
        assert_contains(parse_error(b, n), "truncated");
    free(b);
}

static void test_parse_wrong_magic(void **state)
{
    (void)state;
    uint32_t dims[1] = {4};
    size_t len;
    uint8_t *b = make_idx(dims, 1, &len);
    b[0] = 0x1f; /* e.g. a gzip file read raw */
    assert_contains(parse_error(b, len), "wrong magic");
    b[0] = 0;
    b[3] = 0; /* zero dimensions */
    assert_contains(parse_error(b, len), "dimensions");
    b[3] = 9;
    parse_error(b, len);
    b[3] = 1;
    b[2] = 0x0d; /* float elements */
    assert_contains(parse_error(b, len), "unsupported element type");
    free(b);
}

static void test_parse_wrong_count(void **state)
{
    (void)state;
    uint32_t dims[2] = {6, 2};
    size_t len;
    uint8_t *b = make_idx(dims, 2, &len);
    b[7] = 5; /* header says 5 items, 6 follow */
    assert_contains(parse_error(b, len), "wrong count");
    b[7] = 7; /* header says 7, only 6 follow */
    assert_contains(parse_error(b, len), "truncated");
    /* Huge dimensions must not overflow into a small size. */
    b[4] = b[5] = b[6] = b[7] = 0xff;
    b[8] = b[9] = b[10] = b[11] = 0xff;
    parse_error(b, len);
    b[8] = b[9] = b[10] = b[11] = 0; /* zero-sized items */
    parse_error(b, len);
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

/* dataset_load_shape of "train" in dir for a 4 x 3 input, which must fail;
 * its message, in a buffer that the next call overwrites. */
static const char *train_load_error(const char *dir)
{
    static char err[1024];
    err[0] = 0;
    dataset d;
    assert_int_equal(dataset_load_shape(dir, "train", 4, 3, &d, err, sizeof err), -1);
    return err;
}

static void test_load_good(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 20, 1);
    write_pair(s->dir, "t10k", 7, 0); /* plain files are read too */
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load_shape(s->dir, "train", 4, 3, &d, err, sizeof err), 0);
    assert_int_equal(d.count, 20);
    assert_int_equal(d.dim, 12);
    assert_int_equal(d.labels[13], 3);
    assert_int_equal(d.images[12 * 2 + 1], (uint8_t)(25 * 7 + 3));
    dataset_free(&d);
    assert_int_equal(dataset_load_shape(s->dir, "t10k", 4, 3, &d, err, sizeof err), 0);
    assert_int_equal(d.count, 7);
    dataset_free(&d);
    /* the counts a memory plan takes before loading, from the labels */
    size_t count = 0;
    assert_int_equal(dataset_count(s->dir, "train", &count, err, sizeof err), 0);
    assert_int_equal(count, 20);
    assert_int_equal(dataset_count(s->dir, "t10k", &count, err, sizeof err), 0);
    assert_int_equal(count, 7);
    assert_int_equal(dataset_count(s->dir, "none", &count, err, sizeof err), -1);
    assert_contains(err, "none-labels-idx1-ubyte");
}

static void test_load_missing(void **state)
{
    files_state *s = *state;
    const char *err = train_load_error(s->dir);
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
        assert_contains(train_load_error(s->dir), path);
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
    const char *err = train_load_error(s->dir);
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
    err = train_load_error(s->dir);
    assert_contains(err, "label 10 of item 17");
    assert_contains(err, "train-labels-idx1-ubyte.gz");

    /* Images where labels belong: a 3-d file as labels. */
    snprintf(from, sizeof from, "%s/train-images-idx3-ubyte.gz", s->dir);
    size_t ilen;
    uint8_t *img = tu_read_file(from, &ilen);
    tu_write_file(to, img, ilen);
    free(img);
    assert_contains(train_load_error(s->dir), "expected labels");
}

static void test_load_wrong_magic_file(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 10, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", s->dir);
    const char text[] = "this is not an IDX file at all\n";
    write_gz(path, (const uint8_t *)text, sizeof text - 1);
    const char *err = train_load_error(s->dir);
    assert_contains(err, path);
    assert_contains(err, "wrong magic");
}

/* An IDX header of 14 x 56 images holds as many pixels as 28 x 28: it is
 * still not the model's input. */
static void test_load_wrong_shape(void **state)
{
    files_state *s = *state;
    uint32_t idims[3] = {6, 14, 56}, ldims[1] = {6};
    size_t ilen, llen;
    uint8_t *img = make_idx(idims, 3, &ilen);
    uint8_t *lab = make_idx(ldims, 1, &llen);
    for (int i = 0; i < 6; i++)
        lab[8 + i] = (uint8_t)i;
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", s->dir);
    tu_write_file(path, img, ilen);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", s->dir);
    tu_write_file(path, lab, llen);
    dataset d;
    char err[1024] = "";
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "train-images-idx3-ubyte");
    assert_contains(err, "28 x 28");
    assert_contains(err, "14 x 56");
    /* The right shape loads. */
    idims[1] = 28;
    idims[2] = 28;
    free(img);
    img = make_idx(idims, 3, &ilen);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", s->dir);
    tu_write_file(path, img, ilen);
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), 0);
    assert_int_equal(d.dim, 784);
    dataset_free(&d);
    /* Images as a 2-d file (count x 784) are refused too. */
    uint32_t flat[2] = {6, 784};
    free(img);
    img = make_idx(flat, 2, &ilen);
    tu_write_file(path, img, ilen);
    assert_int_equal(dataset_load(s->dir, "train", &d, err, sizeof err), -1);
    assert_contains(err, "3 dimensions");
    free(img);
    free(lab);
}

/* A directory where an IDX file belongs: said so, without an errno that
 * no failing call set. */
static void test_load_not_regular(void **state)
{
    files_state *s = *state;
    write_pair(s->dir, "train", 10, 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", s->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    errno = EEXIST; /* a stale errno must not show */
    const char *err = train_load_error(s->dir);
    const char *at = strstr(err, path);
    assert_non_null(at);
    if (strcmp(at + strlen(path), ": is a directory, not a regular file") != 0)
        fail_msg("expected '%s: is a directory, not a regular file' alone, got '%s'", path, err);
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
    expect_bad("--state-dtype", "fp16", "fp32|bf16|q8|q4");
    expect_bad("--master-dtype", "q8", "fp32|bf16");
    expect_bad("--state-rounding", "up", "nearest|stochastic");
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
    assert_int_equal(parse(&o, err, sizeof err, "--grad-path", "B", "--accum-dtype", "bf16", NULL),
                     -1);
    assert_contains(err, "--accum-dtype bf16 needs A or C");
    assert_int_equal(parse(&o, err, sizeof err, "--accum-dtype", "bf16", NULL), 0);
    assert_int_equal(o.acc_dtype, CLG_BF16);
    assert_int_equal(o.path, GRAD_PATH_C);
    assert_int_equal(parse(&o, err, sizeof err, "--bogus", NULL), -1);
    assert_contains(err, "--bogus");
    assert_int_equal(parse(&o, err, sizeof err, "--batch", NULL), -1);
    assert_contains(err, "missing value");
    assert_int_equal(parse(&o, err, sizeof err, "--json=1", NULL), -1);
    assert_contains(err, "--json");
    assert_int_equal(parse(&o, err, sizeof err, "--save-every", "5", NULL), -1);
    assert_contains(err, "--checkpoint");
    assert_int_equal(parse(&o, err, sizeof err, "--state-rounding", "stochastic", NULL), -1);
    assert_contains(err, "--state-dtype");
    /* the new flags reach clgrad's configuration */
    assert_int_equal(parse(&o, err, sizeof err, "--state-dtype", "q4", "--master-dtype", "bf16",
                           "--state-rounding", "stochastic", NULL), 0);
    clg_config cfg;
    assert_int_equal(train_options_clg_config(&o, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.state_dtype, CLG_Q4);
    assert_int_equal(cfg.master_dtype, CLG_BF16);
    assert_int_equal(cfg.state_rounding, CLG_ROUND_STOCHASTIC);
}

/* Values that do not survive the conversion to float, garbage, empty
 * values: refused for every numeric flag, never turned into a default. */
static void test_options_numbers(void **state)
{
    (void)state;
    /* 1e-46 is in (0, 10] as a double but 0 as a float (and 0 was "the
     * default"); 1e-40 is a float subnormal. */
    expect_bad("--lr", "1e-46", "underflows");
    expect_bad("--lr", "1e-40", "underflows");
    expect_bad("--lr", "1e-400", NULL);
    expect_bad("--weight-decay", "1e-46", "underflows");
    expect_bad("--clip", "1e-50", "underflows");
    expect_bad("--lr", "", NULL);
    expect_bad("--lr", " 0.1", NULL);
    expect_bad("--lr", "0.1 ", "trailing");
    expect_bad("--lr", "0.1x", "trailing");
    expect_bad("--lr", "1e", NULL);
    expect_bad("--lr", "-nan", NULL);
    expect_bad("--clip", "1e39", NULL); /* overflows a float */
    expect_bad("--clip", "", NULL);
    expect_bad("--weight-decay", "", NULL);
    expect_bad("--loss-scale", "2x", NULL);
    expect_bad("--loss-scale", "", NULL);
    expect_bad("--warmup", "", NULL);
    expect_bad("--warmup", "5 ", NULL);
    expect_bad("--warmup", "-1", NULL);
    expect_bad("--seed", "18446744073709551616", NULL);
    expect_bad("--seed", "-1", NULL);
    expect_bad("--seed", "", NULL);
    expect_bad("--steps", "1e3", NULL);
    expect_bad("--epochs", "", NULL);
    expect_bad("--micro-batch", "", NULL);
    expect_bad("--base-batch", "1.5", NULL);
    expect_bad("--save-every", " 2", NULL);
    expect_bad("--stop-after", "", NULL);
    expect_bad("--train-limit", "0x10", NULL);
    expect_bad("--test-limit", "", NULL);
    expect_bad("--vram", "", NULL);
    expect_bad("--vram", "1e400M", NULL);
    expect_bad("--vram", "0x400M", NULL);
    expect_bad("--vram", "512M ", NULL);
    expect_bad("--hidden", "", NULL);
    /* The smallest normal float is fine, and so is a hex float. */
    train_options o;
    char err[512];
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "1.5e-38", "--clip", "0x1p-3", NULL), 0);
    assert_true(o.lr == 1.5e-38f);
    assert_true(o.clip == 0.125f);
    float f;
    assert_int_equal(train_parse_float("--x", "3e-3", 0.0f, 1.0f, 1, &f, err, sizeof err), 0);
    assert_true(f == 3e-3f);
    assert_int_equal(train_parse_float("--x", "-0", 0.0f, 1.0f, 0, &f, err, sizeof err), 0);
    assert_false(signbit(f));
}

/* Whether a flag was given is tracked, not read from its value. */
static void test_options_given(void **state)
{
    (void)state;
    train_options o;
    char err[512];
    assert_int_equal(parse(&o, err, sizeof err, NULL), 0);
    assert_false(o.given & TRAIN_GIVEN_LR);
    assert_true(train_options_lr(&o) == 1e-3f);                 /* adamw */
    assert_true(train_options_weight_decay(&o) == 1e-2f);       /* adamw */
    assert_int_equal(parse(&o, err, sizeof err, "--optimizer", "sgd", NULL), 0);
    assert_true(train_options_lr(&o) == 0.05f);
    assert_true(train_options_weight_decay(&o) == 0.0f);
    /* 0 is a weight decay, not "the default" (AdamW's 1e-2). */
    assert_int_equal(parse(&o, err, sizeof err, "--weight-decay", "0", NULL), 0);
    assert_true(o.given & TRAIN_GIVEN_WEIGHT_DECAY);
    assert_true(train_options_weight_decay(&o) == 0.0f);
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.002", NULL), 0);
    assert_true(train_options_lr(&o) == 0.002f);
    /* A program that sets lr without saying so is refused, not ignored. */
    train_options_default(&o);
    o.lr = 0.5f;
    assert_int_equal(train_options_check(&o, err, sizeof err), -1);
    assert_contains(err, "TRAIN_GIVEN_LR");
    o.given |= TRAIN_GIVEN_LR;
    assert_int_equal(train_options_check(&o, err, sizeof err), 0);
    o.lr = 0.0f;
    assert_int_equal(train_options_check(&o, err, sizeof err), -1);
    /* --override: known names only, some locked, and only with --resume. */
    assert_int_equal(parse(&o, err, sizeof err, "--override", "lr", NULL), -1);
    assert_contains(err, "--resume");
    assert_int_equal(parse(&o, err, sizeof err, "--resume", "x", "--override", "lr,--warmup",
                           "--override", "micro-batch", NULL), 0);
    assert_string_equal(o.overrides, "lr,warmup,micro-batch");
    assert_int_equal(parse(&o, err, sizeof err, "--resume", "x", "--override", "frob", NULL), -1);
    assert_contains(err, "unknown setting 'frob'");
    assert_int_equal(parse(&o, err, sizeof err, "--resume", "x", "--override", "seed", NULL), -1);
    assert_contains(err, "cannot be overridden");
    assert_int_equal(parse(&o, err, sizeof err, "--resume", "x", "--override", "lr,", NULL), -1);
}

/* How a batch splits into micro-batches, said truthfully. */
static void test_split_text(void **state)
{
    (void)state;
    char b[64];
    train_split_text(b, sizeof b, 128, 32);
    assert_string_equal(b, "4 x 32");
    train_split_text(b, sizeof b, 64, 48);
    assert_string_equal(b, "48 + 16");
    train_split_text(b, sizeof b, 50, 16);
    assert_string_equal(b, "3 x 16 + 2");
    train_split_text(b, sizeof b, 64, 64);
    assert_string_equal(b, "1 x 64");
    train_split_text(b, sizeof b, 20, 32);
    assert_string_equal(b, "1 x 20");
}

/* ------------------------------------------------------------ output paths */

static void write_text(const char *path, const char *text)
{
    tu_write_file(path, text, strlen(text));
}

/* writer_lock.h: one holder at a time (two in one process too: flock's
 * lock belongs to the open file), the holder's pid in the file and in the
 * message, a reader refused while it is held, and a stale file (a dead
 * holder's, or garbage) in nobody's way; released, the file is gone. */
static void test_writer_lock(void **state)
{
    files_state *s = *state;
    char ck[1024], lock[1100], want[4096], err[4096];
    snprintf(ck, sizeof ck, "%s/w.st", s->dir);
    snprintf(lock, sizeof lock, "%s.lock", ck);
    assert_int_equal(writer_lock_check_free("--resume", ck, err, sizeof err), 0);
    writer_lock a = {0}, b = {0};
    writer_lock_release(&a); /* a zeroed lock (fd 0) is not held */
    assert_int_equal(writer_lock_take(&a, "--checkpoint", ck, err, sizeof err), 0);
    size_t n;
    char *text = (char *)tu_read_file(lock, &n);
    char pid[32];
    snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    assert_string_equal(text, pid);
    free(text);
    assert_int_equal(writer_lock_take(&b, "--checkpoint", ck, err, sizeof err), -1);
    snprintf(want, sizeof want, "--checkpoint: %s is being written by another clgrad-train run "
             "(pid %ld; lock file %s); wait until it has ended, or write another path", ck,
             (long)getpid(), lock);
    assert_string_equal(err, want);
    assert_int_equal(writer_lock_check_free("--resume", ck, err, sizeof err), -1);
    snprintf(want, sizeof want, "--resume: %s is being written by another clgrad-train run "
             "(pid %ld; lock file %s); resume it once that run has ended", ck, (long)getpid(),
             lock);
    assert_string_equal(err, want);
    writer_lock_release(&a);
    assert_int_equal(access(lock, F_OK), -1);
    /* a file nobody holds, with garbage in it: taken, and its pid written */
    write_text(lock, "not a pid, and longer than one\n");
    assert_int_equal(writer_lock_check_free("--resume", ck, err, sizeof err), 0);
    assert_int_equal(writer_lock_take(&b, "--checkpoint", ck, err, sizeof err), 0);
    text = (char *)tu_read_file(lock, &n);
    assert_string_equal(text, pid);
    free(text);
    writer_lock_release(&b);
    writer_lock_release(&b); /* twice: nothing */
    assert_int_equal(access(lock, F_OK), -1);
    /* no directory to create it in */
    snprintf(ck, sizeof ck, "%s/none/w.st", s->dir);
    assert_int_equal(writer_lock_take(&a, "--checkpoint", ck, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create the lock file"));
}

static void test_outpaths(void **state)
{
    files_state *s = *state;
    char a[1024], b[1024], sub[1024], alias[1024], hard[1024];
    snprintf(a, sizeof a, "%s/a.st", s->dir);
    snprintf(b, sizeof b, "%s/b.st", s->dir);
    snprintf(sub, sizeof sub, "%s/sub", s->dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(alias, sizeof alias, "%s/sub/../a.st", s->dir);
    char err[1024];
    /* Not yet existing: compared by resolved directory and name. */
    assert_int_equal(file_same(a, alias), 1);
    assert_int_equal(file_same(a, b), 0);
    write_text(a, "A");
    assert_int_equal(file_same(a, alias), 1);
    /* Existing: by device and inode (a hard link is the same file). */
    snprintf(hard, sizeof hard, "%s/hard.st", s->dir);
    assert_int_equal(link(a, hard), 0);
    assert_int_equal(file_same(a, hard), 1);

    train_options o;
    train_options_default(&o);
    o.resume = hard;
    o.metrics = a;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "--metrics");
    assert_contains(err, "--resume");
    assert_contains(err, a);
    o.metrics = NULL;
    o.dump_weights = alias;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "--dump-weights");
    /* Two outputs, neither existing. */
    train_options_default(&o);
    o.checkpoint = b;
    snprintf(alias, sizeof alias, "%s/sub/../b.st", s->dir);
    o.dump_weights = alias;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "--checkpoint");
    assert_contains(err, "--dump-weights");
    /* --checkpoint may continue the --resume file. */
    train_options_default(&o);
    o.checkpoint = a;
    o.resume = hard;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), 0);
    /* An output over a data file. */
    write_pair(s->dir, "train", 10, 0);
    write_pair(s->dir, "t10k", 10, 0);
    train_options_default(&o);
    o.data_dir = s->dir;
    char lab[1024];
    snprintf(lab, sizeof lab, "%s/t10k-labels-idx1-ubyte", s->dir);
    o.metrics = lab;
    path_list data = {0};
    assert_int_equal(dataset_files(s->dir, &data, err, sizeof err), 0);
    assert_int_equal(outpaths_check(&o, &data, err, sizeof err), -1);
    path_list_free(&data);
    assert_contains(err, "--data");
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), 0); /* data given by the caller */
    /* Directories: missing, a file, the output itself. */
    train_options_default(&o);
    o.checkpoint = "/nonexistent-clgrad-dir/ck.st";
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "--checkpoint");
    assert_contains(err, "/nonexistent-clgrad-dir");
    assert_contains(err, "does not exist");
    train_options_default(&o);
    snprintf(b, sizeof b, "%s/a.st/w.bin", s->dir);
    o.dump_weights = b;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "not a directory");
    o.dump_weights = sub;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "is a directory");
    o.dump_weights = NULL;
    o.metrics = "/dev/null";
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "not a regular file");
    /* --resume: must be a regular file, said without a stale errno. */
    train_options_default(&o);
    o.resume = sub;
    errno = EEXIST;
    assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
    assert_contains(err, "is a directory, not a regular file");
    assert_null(strstr(err, "File exists"));
    /* A directory without write permission (meaningless for root). */
    if (geteuid() != 0) {
        assert_int_equal(chmod(sub, 0555), 0);
        snprintf(b, sizeof b, "%s/sub/m.csv", s->dir);
        train_options_default(&o);
        o.metrics = b;
        assert_int_equal(outpaths_check(&o, NULL, err, sizeof err), -1);
        assert_contains(err, "Permission denied");
        chmod(sub, 0755);
    }
}

/* ------------------------------------------------------------ atomic files */

static int count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* Writes 100 kB through atomic_file in a child whose file size limit is
 * limit bytes (0: none); returns the child's exit status, its message in
 * msg. */
static int write_limited(const char *path, rlim_t limit, char *msg, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN); /* write returns EFBIG instead */
        if (limit) {
            struct rlimit rl = {limit, limit};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(3);
        }
        static atomic_file f;
        char err[1024] = "";
        int rc = atomic_file_open(&f, path, err, sizeof err);
        for (int i = 0; rc == 0 && i < 10000; i++)
            atomic_file_printf(&f, "line %05d\n", i); /* 11 bytes */
        if (rc == 0)
            rc = atomic_file_commit(&f, err, sizeof err);
        if (write(fds[1], err, strlen(err)) < 0)
            _exit(4);
        _exit(rc == 0 ? 0 : 1);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(fds[0], msg + got, len - 1 - got)) > 0)
        got += (size_t)r;
    msg[got] = 0;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_atomic_file(void **state)
{
    files_state *s = *state;
    char path[1024], msg[1024];
    snprintf(path, sizeof path, "%s/out.csv", s->dir);
    write_text(path, "OLD\n");
    /* A full disk (a file size limit, unprivileged): the message says why,
     * the old file is intact and no temporary file is left. */
    assert_int_equal(write_limited(path, 4096, msg, sizeof msg), 1);
    assert_contains(msg, path);
    assert_contains(msg, strerror(EFBIG));
    size_t n;
    char *text = (char *)tu_read_file(path, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(text, "OLD\n", 4);
    free(text);
    assert_int_equal(count_entries(s->dir, "out.csv"), 1);
    /* Without a limit: the new file in full. */
    assert_int_equal(write_limited(path, 0, msg, sizeof msg), 0);
    text = (char *)tu_read_file(path, &n);
    assert_int_equal(n, 110000);
    assert_memory_equal(text + 109989, "line 09999\n", 11);
    free(text);
    assert_int_equal(count_entries(s->dir, "out.csv"), 1);
    /* An abort leaves the target alone. */
    static atomic_file f;
    char err[256];
    assert_int_equal(atomic_file_open(&f, path, err, sizeof err), 0);
    atomic_file_printf(&f, "partial");
    atomic_file_abort(&f);
    text = (char *)tu_read_file(path, &n);
    assert_int_equal(n, 110000);
    free(text);
    assert_int_equal(count_entries(s->dir, "out.csv"), 1);
}

/* The --metrics CSV on a full disk: a child writes 2000 rows through the
 * trainer's metrics code under a file size limit. */
static void test_metrics_full_disk(void **state)
{
    files_state *s = *state;
    char path[1024];
    snprintf(path, sizeof path, "%s/m.csv", s->dir);
    write_text(path, "OLD\n");
    for (int limited = 1; limited >= 0; limited--) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {8192, 8192};
            if (limited && setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(3);
            static atomic_file f;
            char err[1024] = "";
            int rc = metrics_open(&f, path, err, sizeof err);
            for (uint64_t i = 1; rc == 0 && i <= 2000; i++) {
                metrics_row r = {i, 4 * i, 128 * i, 1, 2.3, 1e-3, 0.5, 1.0, 0, 1000.0};
                if (metrics_write(&f, &r) != 0)
                    break;
            }
            if (rc == 0)
                rc = metrics_close(&f, err, sizeof err);
            if (write(fds[1], err, strlen(err)) < 0)
                _exit(4);
            _exit(rc == 0 ? 0 : 1);
        }
        close(fds[1]);
        char msg[1024];
        ssize_t got = read(fds[0], msg, sizeof msg - 1);
        msg[got > 0 ? got : 0] = 0;
        close(fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        size_t n;
        char *text = (char *)tu_read_file(path, &n);
        if (limited) {
            assert_int_equal(WEXITSTATUS(status), 1);
            assert_contains(msg, strerror(EFBIG));
            assert_int_equal(n, 4);
            assert_memory_equal(text, "OLD\n", 4);
        } else {
            assert_int_equal(WEXITSTATUS(status), 0);
            assert_true(n > 8192);
            assert_memory_equal(text, "update,", 7);
        }
        free(text);
        assert_int_equal(count_entries(s->dir, "m.csv"), 1);
    }
}

/* ------------------------------------------------------------ run settings */

static void build_config(run_config *c, const train_options *o)
{
    clg_config cfg;
    char err[256];
    assert_int_equal(train_options_clg_config(o, &cfg, err, sizeof err), 0);
    runconfig_build(c, o, &cfg, o->micro_batch, 300, 0x1234abcdu);
}

static void test_runconfig(void **state)
{
    (void)state;
    char b[32];
    flags_format_float(b, sizeof b, 3e-3f);
    assert_string_equal(b, "0.003");
    flags_format_float(b, sizeof b, 0.1f + 0.2f);
    assert_true(strtof(b, NULL) == 0.1f + 0.2f);
    flags_format_float(b, sizeof b, 1.17549435e-38f);
    assert_true(strtof(b, NULL) == 1.17549435e-38f);

    train_options o;
    char err[2048], over[512];
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2", NULL), 0);
    static run_config saved, now;
    build_config(&saved, &o);
    /* Every key is the caller's own, outside clgrad's namespace. */
    runconfig_meta(&saved);
    for (int i = 0; i < saved.n; i++) {
        assert_true(strncmp(saved.key_ptr[i], "train.config.", 13) == 0);
        assert_true(strncmp(saved.key_ptr[i], "clgrad.", 7) != 0);
    }
    /* Same settings: no difference. */
    build_config(&now, &o);
    assert_int_equal(runconfig_compare(&saved, &now, "", "ck", over, sizeof over, err,
                                       sizeof err), 0);
    assert_string_equal(over, "");
    /* Another lr and warmup: one error naming both, saved and new values. */
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.001", "--warmup", "5", NULL), 0);
    build_config(&now, &o);
    assert_int_equal(runconfig_compare(&saved, &now, "", "ck", over, sizeof over, err,
                                       sizeof err), -1);
    assert_contains(err, "--lr: saved 0.003, now 0.001");
    assert_contains(err, "--warmup: saved 2, now 5");
    assert_contains(err, "--override lr,warmup");
    /* Overridden by name: accepted, and said. */
    assert_int_equal(runconfig_compare(&saved, &now, "warmup,lr", "ck", over, sizeof over, err,
                                       sizeof err), 0);
    assert_contains(over, "--lr: 0.003 -> 0.001");
    assert_contains(over, "--warmup: 2 -> 5");
    assert_int_equal(runconfig_compare(&saved, &now, "lr", "ck", over, sizeof over, err,
                                       sizeof err), -1);
    assert_contains(err, "--warmup");
    /* Each setting that changes training is compared. */
    static const char *const changes[][2] = {
        {"--hidden", "64"},        {"--micro-batch", "16"}, {"--epochs", "4"},
        {"--steps", "9"},          {"--optimizer", "sgd"},  {"--lr-scale", "sqrt"},
        {"--weight-decay", "0.5"}, {"--schedule", "linear"}, {"--clip", "1"},
        {"--grad-dtype", "bf16"},  {"--grad-path", "A"},    {"--loss-scale", "dynamic"},
        {"--seed", "7"},           {"--loss-scale", "1024"}, /* nonfinite policy */
        {"--batch", "100"},        {"--state-dtype", "q8"}, {"--master-dtype", "bf16"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
        assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2",
                               changes[i][0], changes[i][1], NULL), 0);
        build_config(&now, &o);
        if (runconfig_compare(&saved, &now, "", "ck", over, sizeof over, err, sizeof err) != -1)
            fail_msg("%s %s was not told apart", changes[i][0], changes[i][1]);
        assert_contains(err, changes[i][0]);
    }
    /* Settings that do not change the training are not. */
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2", "--test-limit",
                           "5", "--quiet", "--json", "--device", "1", "--vram", "64M",
                           "--checkpoint", "x", "--save-every", "3", "--stop-after", "2",
                           "--dump-weights", "w", "--metrics", "m.csv", NULL), 0);
    build_config(&now, &o);
    assert_int_equal(runconfig_compare(&saved, &now, "", "ck", over, sizeof over, err,
                                       sizeof err), 0);
    /* A seed cannot be overridden (the data order depends on it). */
    assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2", "--seed", "9",
                           NULL), 0);
    build_config(&now, &o);
    assert_int_equal(runconfig_compare(&saved, &now, "seed", "ck", over, sizeof over, err,
                                       sizeof err), -1);
    assert_contains(err, "cannot change");
    /* Nor the states' or the params' format (the checkpoint holds them so). */
    for (int w = 0; w < 2; w++) {
        assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2",
                               w ? "--master-dtype" : "--state-dtype", w ? "bf16" : "q4", NULL),
                         0);
        build_config(&now, &o);
        assert_int_equal(runconfig_compare(&saved, &now, w ? "master-dtype" : "state-dtype", "ck",
                                           over, sizeof over, err, sizeof err),
                         -1);
        assert_contains(err, "cannot change");
    }
    /* A checkpoint saved before the states' settings were recorded holds
     * fp32 states and params, rounded to nearest. */
    {
        static run_config older;
        memset(&older, 0, sizeof older);
        assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2", NULL), 0);
        build_config(&now, &o);
        runconfig_meta(&saved);
        for (int i = 0; i < saved.n; i++)
            if (!strstr(saved.key_ptr[i], ".state-") && !strstr(saved.key_ptr[i], ".master-"))
                runconfig_add_saved(&older, saved.key_ptr[i], saved.value_ptr[i]);
        assert_int_equal(runconfig_compare(&older, &now, "", "ck", over, sizeof over, err,
                                           sizeof err), 0);
        assert_int_equal(parse(&o, err, sizeof err, "--lr", "0.003", "--warmup", "2",
                               "--state-dtype", "q8", NULL), 0);
        build_config(&now, &o);
        assert_int_equal(runconfig_compare(&older, &now, "", "ck", over, sizeof over, err,
                                           sizeof err), -1);
        assert_contains(err, "--state-dtype: saved fp32, now q8");
    }
    /* A checkpoint without settings (an older trainer): every one differs. */
    static run_config empty;
    memset(&empty, 0, sizeof empty);
    assert_int_equal(runconfig_compare(&empty, &now, "", "ck", over, sizeof over, err,
                                       sizeof err), -1);
    assert_contains(err, "not recorded");
    /* Saved values come back through runconfig_add_saved; others are ignored. */
    memset(&empty, 0, sizeof empty);
    runconfig_meta(&saved);
    for (int i = 0; i < saved.n; i++)
        runconfig_add_saved(&empty, saved.key_ptr[i], saved.value_ptr[i]);
    runconfig_add_saved(&empty, "train.seed", "1");
    runconfig_add_saved(&empty, "train.config.unknown", "1");
    assert_int_equal(empty.n, saved.n);
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

/* The micro-steps of len samples in micro-batches of at most b, counted
 * by taking them off one micro-batch at a time: the reference for k. */
static unsigned micro_steps_by_count(size_t len, unsigned b)
{
    unsigned n = 0;
    for (size_t left = len; left > 0; left -= left < b ? left : b)
        n++;
    return n;
}

/* Issue 34: b, k and each cycle's length have one owner (run_cycle.c).
 * run_set_micro_batch gives k = ceil(--batch / b); run_begin_cycle gives
 * a cycle of share samples its micro-steps and clgrad's k schedule
 * (run_k_of_cycle) the same, whatever the update index; before any
 * cycle the schedule says 1 (a trainer's checkpoint is at a cycle end). */
static void test_run_cycle_lengths(void **state)
{
    (void)state;
    train_options o;
    train_options_default(&o);
    for (unsigned batch = 1; batch <= 70; batch++) {
        o.batch = batch;
        for (unsigned b = 1; b <= batch; b++) {
            run_state r = {.opt = &o};
            run_set_micro_batch(&r, b);
            assert_int_equal(r.b, b);
            assert_int_equal(r.k, micro_steps_by_count(batch, b));
            assert_int_equal(run_k_of_cycle(0, &r), 1);
            for (size_t share = 1; share <= batch; share++) {
                unsigned want = micro_steps_by_count(share, b);
                assert_int_equal(run_begin_cycle(&r, share), want);
                assert_int_equal(run_k_of_cycle(share * 7, &r), want);
            }
        }
    }
}

/* Issue 24, 8: what the trainer prints of a path (or any message) is one
 * line of valid UTF-8: control characters and bytes outside a valid UTF-8
 * sequence as escapes, the rest (valid multi-byte characters, a
 * backslash) as it is. */
static void test_errmsg_escape(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"plain/path.st", "plain/path.st"},
        {"a\nb", "a\\nb"},
        {"tab\there\r", "tab\\there\\r"},
        {"bell\a del\x7f esc\x1b", "bell\\x07 del\\x7f esc\\x1b"},
        {"x\xffy", "x\\xffy"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"over\xc0\xaflong", "over\\xc0\\xaflong"},
        {"sur\xed\xa0\x80", "sur\\xed\\xa0\\x80"},
        {"big\xf4\x90\x80\x80", "big\\xf4\\x90\\x80\\x80"},
        {"cut\xe2\x82", "cut\\xe2\\x82"},
        {"lone\x80 cont", "lone\\x80 cont"},
        {"back\\slash", "back\\slash"},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        errmsg_escape(cases[i][0], buf, sizeof buf);
        if (strcmp(buf, cases[i][1]) != 0)
            fail_msg("case %zu: got '%s', expected '%s'", i, buf, cases[i][1]);
    }
    /* a short buffer ends before an escape that does not fit, terminated */
    assert_string_equal(errmsg_escape("\n\n", buf, 4), "\\n");
    assert_string_equal(errmsg_escape("ab\xff", buf, 5), "ab");
    assert_string_equal(errmsg_escape("abc", buf, 1), "");
    /* the size that holds any input whole */
    char big[ERRMSG_ESCAPED_SIZE(3)];
    assert_string_equal(errmsg_escape("\x01\x02\x03", big, sizeof big), "\\x01\\x02\\x03");
}

/* Issue 24, 7: a plan above the device's global memory is refused with
 * both sizes and the flag that goes ahead; at or below it, or with the
 * flag, it is not. */
static void test_memplan_refuse(void **state)
{
    (void)state;
    memplan p = {0};
    p.total = 6657199308ull; /* 6.2 GiB */
    char err[512] = "";
    const memplan_limit device = {5368709120ull, NULL}, memory = {5368709120ull, "--memory"};
    const char *shrink = "--hidden or --micro-batch";
    assert_int_equal(memplan_refuse(&p, device, shrink, 0, err, sizeof err), -1);
    assert_string_equal(err, "memory plan: 6657199308 B (6.2 GiB) in all, more than the "
                             "device's 5368709120 B (5.0 GiB) of global memory; make --hidden "
                             "or --micro-batch smaller, or give --allow-over-device-memory for "
                             "a device that pages");
    /* issue 37: a limit a flag gave is named by the flag, the hint is the task's */
    assert_int_equal(memplan_refuse(&p, memory, "--width", 0, err, sizeof err), -1);
    assert_string_equal(err, "memory plan: 6657199308 B (6.2 GiB) in all, more than the "
                             "--memory of 5368709120 B (5.0 GiB); make --width smaller, or give "
                             "--allow-over-device-memory for a device that pages");
    err[0] = 0;
    assert_int_equal(memplan_refuse(&p, device, shrink, 1, err, sizeof err), 0);
    assert_int_equal(memplan_refuse(&p, (memplan_limit){p.total, NULL}, shrink, 0, err,
                                    sizeof err), 0);
    assert_string_equal(err, "");
}

/* Issue 36: a file that grows between its open and its read is refused,
 * not read on; one that shrinks too. */
static void test_input_read_size_changes(void **state)
{
    (void)state;
    char path[] = "/tmp/clgrad-input-XXXXXX";
    int w = mkstemp(path);
    assert_true(w >= 0);
    assert_int_equal(write(w, "0123456789", 10), 10);
    char why[256], buf[16];
    size_t size = 0;
    int fd = input_open(path, UINT64_MAX, &size, why, sizeof why);
    assert_true(fd >= 0);
    assert_int_equal(size, 10);
    assert_int_equal(write(w, "more", 4), 4); /* a writer appends meanwhile */
    assert_int_equal(input_read(fd, buf, size, why, sizeof why), -1);
    assert_string_equal(why, "grew while it was read (past its 10 bytes)");
    close(fd);
    fd = input_open(path, UINT64_MAX, &size, why, sizeof why);
    assert_true(fd >= 0);
    assert_int_equal(size, 14);
    assert_int_equal(ftruncate(w, 6), 0);
    assert_int_equal(input_read(fd, buf, size, why, sizeof why), -1);
    assert_string_equal(why, "shrank while it was read (6 of 14 bytes)");
    close(fd);
    close(w);
    unlink(path);
}

/* What progress_update prints on stderr (not a terminal), made due. */
static void progress_line(progress *p, uint64_t updates, uint64_t samples, double secs,
                          char *out, size_t len)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *f = tmpfile();
    assert_non_null(f);
    dup2(fileno(f), 2);
    p->tty = 0;
    p->last_print = -1e9; /* due */
    progress_update(p, updates, samples, secs, 1, 2.5);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = 0;
    fclose(f);
}

/* Issue 35, 4: the progress's rate is in the summary's unit (tokens for
 * the GPT) and its ETA leaves out the first update, which builds the
 * kernels: 10 s for it, then 1 s an update, 7 to go: 0:07 (not the 0:28
 * that 12 s over 3 updates said). */
static void test_progress_eta(void **state)
{
    (void)state;
    progress p = {0};
    char line[256];
    progress_init(&p, 0, 10);
    progress_unit(&p, "tokens", 24);
    progress_line(&p, 1, 8, 10.0, line, sizeof line);
    assert_string_equal(line, "update 1/10 (10%)  epoch 1  loss 2.5000  19 tokens/s  ETA warming up\n");
    progress_line(&p, 3, 24, 12.0, line, sizeof line);
    assert_string_equal(line, "update 3/10 (30%)  epoch 1  loss 2.5000  48 tokens/s  ETA 0:07\n");
    progress_line(&p, 10, 80, 19.0, line, sizeof line);
    assert_string_equal(line, "update 10/10 (100%)  epoch 1  loss 2.5000  101 tokens/s  ETA 0:00\n");
    progress_init(&p, 0, 4); /* a new run: the unit stays, the first update is its own */
    progress_line(&p, 2, 8, 3.0, line, sizeof line);
    assert_string_equal(line, "update 2/4 (50%)  epoch 1  loss 2.5000  64 tokens/s  ETA warming up\n");
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
        cmocka_unit_test_setup_teardown(test_load_wrong_shape, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_load_not_regular, files_setup, files_teardown),
        cmocka_unit_test(test_options_defaults),
        cmocka_unit_test(test_options_bad),
        cmocka_unit_test(test_options_numbers),
        cmocka_unit_test(test_options_given),
        cmocka_unit_test(test_split_text),
        cmocka_unit_test_setup_teardown(test_outpaths, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_writer_lock, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_atomic_file, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_full_disk, files_setup, files_teardown),
        cmocka_unit_test(test_runconfig),
        cmocka_unit_test(test_order_permutation),
        cmocka_unit_test(test_order_batches),
        cmocka_unit_test(test_run_cycle_lengths),
        cmocka_unit_test(test_errmsg_escape),
        cmocka_unit_test(test_memplan_refuse),
        cmocka_unit_test(test_progress_eta),
        cmocka_unit_test(test_input_read_size_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
