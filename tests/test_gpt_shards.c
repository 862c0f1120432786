/* test_gpt_shards.c - the GPT task's token shards and decode table
 * (tools/train/tasks/gpt/gpt_shards.c, gpt_decode.c) on files this test
 * writes byte by byte from the format (little-endian fields, whatever the
 * host): tokens read back exactly, the split of a directory and of a glob by
 * "val" in the name, --val-data, the 90/10 rule, every refusal naming the
 * shard and the offset with the outputs untouched, the decode table and its
 * refusals; and tests/data/tokens/ (made by scripts/prepare-tokens.py, its
 * README says how) read and decoded back to the fixture's exact text. */
#define _XOPEN_SOURCE   700 /* nftw */
#define _DEFAULT_SOURCE     /* mkdtemp, symlink */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "gpt_decode.h"
#include "gpt_shards.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/test_gpt_shards_XXXXXX";
static char err[1024];

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A shard whose header says magic, version and count, holding the n
 * tokens of tok (n may disagree with count), little-endian. */
static void write_shard_as(const char *path, uint32_t magic, uint32_t version, uint32_t count,
                           const uint16_t *tok, size_t n)
{
    size_t size = GPT_SHARD_HEADER_BYTES + 2 * n;
    uint8_t *b = calloc(1, size);
    assert_non_null(b);
    put32(b, magic);
    put32(b + 4, version);
    put32(b + 8, count);
    for (size_t i = 0; i < n; i++) {
        b[GPT_SHARD_HEADER_BYTES + 2 * i] = (uint8_t)(tok[i] & 0xff);
        b[GPT_SHARD_HEADER_BYTES + 2 * i + 1] = (uint8_t)(tok[i] >> 8);
    }
    write_bytes(path, b, size);
    free(b);
}

static void write_shard(const char *path, const uint16_t *tok, size_t n)
{
    write_shard_as(path, GPT_SHARD_MAGIC, GPT_SHARD_VERSION, (uint32_t)n, tok, n);
}

/* Tokens base, base + 1, ... (mod 65535): a high and a low byte that
 * differ, so a byte swap cannot read back the same. */
static uint16_t *ramp(size_t n, unsigned base)
{
    uint16_t *t = malloc(n * sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++)
        t[i] = (uint16_t)((base + i) % GPT_TOKEN_VOCAB_MAX);
    return t;
}

static const char *at(const char *name)
{
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    return p;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reads data (and val_data) with vocabulary vocab into t: 0 or -1. */
static int load(const char *data, const char *val_data, unsigned vocab, gpt_token_corpus *t)
{
    gpt_shard_set s;
    if (gpt_shards_list(data, val_data, &s, err, sizeof err) != 0)
        return -1;
    int rc = gpt_token_corpus_read(&s, vocab, t, err, sizeof err);
    gpt_shard_set_free(&s);
    return rc;
}

static void assert_has(const char *needle)
{
    if (!strstr(err, needle))
        fail_msg("\"%s\" not in the message \"%s\"", needle, err);
}

/* One file of 5000 tokens across the whole uint16 range: read back
 * exactly, all of it training by its name, the last 10% validating. */
static void test_one_shard(void **state)
{
    (void)state;
    size_t n = 5000;
    uint16_t *tok = ramp(n, 0);
    for (size_t i = 0; i < n; i++)
        tok[i] = (uint16_t)((i * 7919u) % GPT_TOKEN_VOCAB_MAX);
    write_shard(at("one_val.bin"), tok, n); /* a single file trains, whatever its name */
    write_bytes(at("text.txt"), "hello\n", 6);
    assert_int_equal(gpt_shard_file_is(at("one_val.bin")), 1);
    assert_int_equal(gpt_shard_file_is(at("text.txt")), 0);
    assert_int_equal(gpt_shard_file_is(at("missing")), 0);
    assert_int_equal(gpt_data_is_shards(at("one_val.bin")), 1);
    assert_int_equal(gpt_data_is_shards(at("text.txt")), 0);
    assert_int_equal(gpt_data_is_shards(at("*.bin")), 1);

    gpt_token_corpus t;
    assert_int_equal(load(at("one_val.bin"), NULL, GPT_TOKEN_VOCAB_MAX, &t), 0);
    assert_int_equal(t.n, n);
    assert_int_equal(t.n_train, n - n / 10);
    assert_int_equal(t.shards, 1);
    assert_memory_equal(t.tokens, tok, n * sizeof *tok);
    gpt_token_corpus_free(&t);
    unlink(at("one_val.bin"));
    unlink(at("text.txt"));
    free(tok);
}

/* A directory of two training shards and a validation shard, beside a
 * link, a strfile index and a hidden file (left out, as --data's text
 * files are), tokenizer.bin and a README (no shards by name); a glob of
 * it; --val-data. */
static void test_directory_glob_val_data(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("d"), 0755), 0);
    uint16_t *a = ramp(100, 1000), *b = ramp(50, 2000), *v = ramp(30, 3000), *w = ramp(40, 4000);
    write_shard(at("d/x_train_000001.bin"), b, 50);
    write_shard(at("d/x_train_000000.bin"), a, 100);
    write_shard(at("d/x_val_000000.bin"), v, 30);
    write_shard(at("d/.hidden.bin"), w, 40);
    write_shard(at("d/x.dat"), w, 40);
    write_shard(at("d/tokenizer.bin"), w, 40); /* a decode table's name */
    write_bytes(at("d/README"), "text\n", 5);
    assert_int_equal(symlink(at("d/x_val_000000.bin"), at("d/y_train_link.bin")), 0);
    write_shard(at("other.bin"), w, 40);
    assert_int_equal(gpt_data_is_shards(at("d")), 1);

    gpt_shard_set s;
    assert_int_equal(gpt_shards_list(at("d"), NULL, &s, err, sizeof err), 0);
    assert_int_equal(s.train.n, 2);
    assert_int_equal(s.val.n, 1);
    assert_string_equal(s.train.path[0], at("d/x_train_000000.bin"));
    assert_int_equal(gpt_shard_list_tokens(&s.train), 150);
    assert_int_equal(gpt_shard_list_tokens(&s.val), 30);
    gpt_shard_set_free(&s);

    gpt_token_corpus t;
    assert_int_equal(load(at("d"), NULL, 5000, &t), 0);
    assert_int_equal(t.n, 180);
    assert_int_equal(t.n_train, 150);
    assert_int_equal(t.shards, 3);
    assert_memory_equal(t.tokens, a, 100 * 2);
    assert_memory_equal(t.tokens + 100, b, 50 * 2);
    assert_memory_equal(t.tokens + 150, v, 30 * 2);
    gpt_token_corpus_free(&t);

    /* the training shards alone by a pattern: no validation shard, so the
     * last 10% of their 150 tokens validate */
    assert_int_equal(load(at("d/x_train_*.bin"), NULL, 5000, &t), 0);
    assert_int_equal(t.n, 150);
    assert_int_equal(t.n_train, 135);
    assert_int_equal(t.shards, 2);
    assert_memory_equal(t.tokens + 100, b, 50 * 2);
    gpt_token_corpus_free(&t);
    /* a pattern names its matches as files: a link is followed (the link
     * holds the val shard's tokens, trained on here by its name) */
    assert_int_equal(load(at("d/*_train_*.bin"), NULL, 5000, &t), 0);
    assert_int_equal(t.n, 180);
    assert_int_equal(t.shards, 3);
    assert_memory_equal(t.tokens + 150, v, 30 * 2);
    gpt_token_corpus_free(&t);
    /* every .bin by a pattern: split by name again */
    assert_int_equal(load(at("d/x_*.bin"), NULL, 5000, &t), 0);
    assert_int_equal(t.n_train, 150);
    assert_int_equal(t.n, 180);
    gpt_token_corpus_free(&t);
    assert_int_equal(load(at("d/none_*.bin"), NULL, 5000, &t), -1);
    assert_has("matches no file");

    /* --val-data: the directory's val shard is left out, other.bin validates */
    assert_int_equal(load(at("d"), at("other.bin"), 5000, &t), 0);
    assert_int_equal(t.n, 190);
    assert_int_equal(t.n_train, 150);
    assert_memory_equal(t.tokens + 150, w, 40 * 2);
    gpt_token_corpus_free(&t);
    assert_int_equal(load(at("d"), at("missing"), 5000, &t), -1);
    assert_true(strncmp(err, "--val-data: ", 12) == 0);
    assert_has("missing");

    /* only validation shards: nothing trains */
    assert_int_equal(load(at("d/*_val_*.bin"), NULL, 5000, &t), -1);
    assert_has("no training shard");
    free(a), free(b), free(v), free(w);
}

/* Each damaged shard, second of two so that the first is read before it:
 * refused with path and offset named, t untouched. */
static void refused(const char *damaged, unsigned vocab, const char *const *needles)
{
    gpt_token_corpus t, before;
    memset(&t, 0xab, sizeof t);
    before = t;
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/r/*", dir);
    assert_int_equal(load(pattern, NULL, vocab, &t), -1);
    assert_memory_equal(&t, &before, sizeof t);
    assert_has(damaged);
    for (; *needles; needles++)
        assert_has(*needles);
}

static void test_shard_refusals(void **state)
{
    (void)state;
    assert_int_equal(mkdir(at("r"), 0755), 0);
    uint16_t *tok = ramp(100, 0);
    write_shard(at("r/a.bin"), tok, 100);

    /* text: the magic is wrong */
    char text[2000];
    memset(text, 'x', sizeof text);
    write_bytes(at("r/b.bin"), text, sizeof text);
    refused(at("r/b.bin"), 300, (const char *[]){"offset 0", "20240520", "not a token shard", 0});
    /* a header cut short, and a file shorter than the magic */
    write_shard(at("r/b.bin"), tok, 0);
    assert_int_equal(truncate(at("r/b.bin"), 500), 0);
    refused(at("r/b.bin"), 300, (const char *[]){"truncated header", "500 bytes", "1024", 0});
    assert_int_equal(truncate(at("r/b.bin"), 2), 0);
    refused(at("r/b.bin"), 300, (const char *[]){"truncated header", "2 bytes", 0});
    write_shard_as(at("r/b.bin"), GPT_SHARD_MAGIC, 2, 10, tok, 10);
    refused(at("r/b.bin"), 300, (const char *[]){"version 2", "offset 4", 0});
    /* a count the size disagrees with, by one token either way, and a negative one */
    write_shard_as(at("r/b.bin"), GPT_SHARD_MAGIC, 1, 100, tok, 99);
    refused(at("r/b.bin"), 300,
            (const char *[]){"offset 8", "is 100", "needs 1224 bytes", "has 1222", 0});
    write_shard_as(at("r/b.bin"), GPT_SHARD_MAGIC, 1, 99, tok, 100);
    refused(at("r/b.bin"), 300, (const char *[]){"is 99", "needs 1222 bytes", "has 1224", 0});
    write_shard_as(at("r/b.bin"), GPT_SHARD_MAGIC, 1, 0xffffffffu, tok, 0);
    refused(at("r/b.bin"), 300, (const char *[]){"is -1", "negative", "offset 8", 0});
    /* a token at the vocabulary size: index 77, byte offset 1024 + 154 */
    tok[77] = 300;
    write_shard(at("r/b.bin"), tok, 100);
    refused(at("r/b.bin"), 300,
            (const char *[]){"token 77 (offset 1178) is 300", "vocabulary size 300", 0});
    /* one below it is a token */
    gpt_token_corpus t;
    tok[77] = 299;
    write_shard(at("r/b.bin"), tok, 100);
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/r/*", dir);
    assert_int_equal(load(pattern, NULL, 300, &t), 0);
    assert_int_equal(t.tokens[100 + 77], 299);
    gpt_token_corpus_free(&t);
    /* a bad vocabulary size */
    assert_int_equal(load(pattern, NULL, 0, &t), -1);
    assert_has("vocabulary size 0");
    assert_int_equal(load(pattern, NULL, GPT_TOKEN_VOCAB_MAX + 1, &t), -1);
    assert_has("65536");

    /* a FIFO or a device listed, then read: refused at once, not waited on */
    unlink(at("r/b.bin"));
    assert_int_equal(mkfifo(at("r/b.bin"), 0600), 0);
    assert_int_equal(load(pattern, NULL, 300, &t), -1);
    assert_has("FIFO");
    gpt_shard_set s = {0};
    assert_int_equal(path_list_add(&s.train, at("r/b.bin"), 0), 0);
    assert_int_equal(gpt_token_corpus_read(&s, 300, &t, err, sizeof err), -1);
    assert_has("FIFO");
    assert_has(at("r/b.bin"));
    gpt_shard_set_free(&s);
    assert_int_equal(path_list_add(&s.train, "/dev/zero", 0), 0);
    assert_int_equal(gpt_token_corpus_read(&s, 300, &t, err, sizeof err), -1);
    assert_has("/dev/zero: is a character device");
    gpt_shard_set_free(&s);
    unlink(at("r/b.bin"));

    /* a validation shard of 1 token is no split */
    write_shard(at("r/b_val.bin"), tok, 1);
    assert_int_equal(load(pattern, NULL, 300, &t), -1);
    assert_has("validation shards hold 1 token");
    unlink(at("r/b_val.bin"));
    unlink(at("r/a.bin"));
    free(tok);
}

/* A decode table: version, vocabulary, eot, then per token its length
 * and bytes, from lens and a byte per token, plus extra trailing bytes. */
static size_t table(uint8_t *b, uint32_t magic, uint32_t version, uint32_t vocab, uint32_t eot,
                    const uint8_t *lens, size_t n)
{
    memset(b, 0, GPT_DECODE_HEADER_BYTES);
    put32(b, magic);
    put32(b + 4, version);
    put32(b + 8, vocab);
    put32(b + 12, eot);
    size_t at = GPT_DECODE_HEADER_BYTES;
    for (size_t i = 0; i < n; i++) {
        b[at++] = lens[i];
        for (size_t k = 0; k < lens[i]; k++)
            b[at++] = (uint8_t)(i * 31 + k);
    }
    return at;
}

static void decoder_refused(const uint8_t *b, size_t size, const char *const *needles)
{
    write_bytes(at("tok.bin"), b, size);
    gpt_decoder d, before;
    memset(&d, 0xab, sizeof d);
    before = d;
    assert_int_equal(gpt_decoder_load("--tokenizer", at("tok.bin"), &d, err, sizeof err), -1);
    assert_memory_equal(&d, &before, sizeof d);
    assert_has("--tokenizer: ");
    assert_has(at("tok.bin"));
    for (; *needles; needles++)
        assert_has(*needles);
}

/* 300 tokens of 0 .. 255 bytes (every byte value among them): each
 * token's bytes, a decoding, a decoding cut short; version 1; each
 * refusal. */
static void test_decode_table(void **state)
{
    (void)state;
    enum { V = 300 };
    uint8_t lens[V];
    for (int i = 0; i < V; i++)
        lens[i] = (uint8_t)(i == 5 ? 255 : i == 6 ? 0 : i % 7 + 1);
    uint8_t *b = malloc(GPT_DECODE_HEADER_BYTES + V * 256 + 16);
    assert_non_null(b);
    size_t size = table(b, GPT_DECODE_MAGIC, 2, V, V - 1, lens, V);
    write_bytes(at("tok.bin"), b, size);
    gpt_decoder d;
    assert_int_equal(gpt_decoder_load("--tokenizer", at("tok.bin"), &d, err, sizeof err), 0);
    assert_int_equal(d.vocab, V);
    assert_int_equal(d.eot, V - 1);
    assert_int_equal(d.version, 2);
    for (uint32_t i = 0; i < V; i++) {
        size_t len;
        const uint8_t *p = gpt_decoder_token(&d, i, &len);
        assert_int_equal(len, lens[i]);
        for (size_t k = 0; k < len; k++)
            assert_int_equal(p[k], (uint8_t)(i * 31 + k));
    }
    size_t len;
    assert_null(gpt_decoder_token(&d, V, &len));
    assert_int_equal(len, 0);
    /* tokens of 1, 255, 0 and 7 bytes, and one past the vocabulary */
    const uint16_t ids[] = {7, 5, 6, 13, V};
    uint8_t out[300], want[300];
    size_t w = 0;
    for (int i = 0; i < 4; i++)
        for (size_t k = 0; k < lens[ids[i]]; k++)
            want[w++] = (uint8_t)(ids[i] * 31 + k);
    assert_int_equal(gpt_decoder_decode(&d, ids, 5, NULL, 0), w);
    assert_int_equal(gpt_decoder_decode(&d, ids, 5, out, sizeof out), w);
    assert_memory_equal(out, want, w);
    /* room for the first token and part of the second: the second not begun */
    memset(out, 0xee, sizeof out);
    assert_int_equal(gpt_decoder_decode(&d, ids, 5, out, 100), w);
    assert_memory_equal(out, want, lens[7]);
    assert_int_equal(out[lens[7]], 0xee);
    gpt_decoder_free(&d);

    /* version 1: no eot field (what is at offset 12 is not read) */
    size = table(b, GPT_DECODE_MAGIC, 1, V, 123456, lens, V);
    write_bytes(at("tok.bin"), b, size);
    assert_int_equal(gpt_decoder_load("--tokenizer", at("tok.bin"), &d, err, sizeof err), 0);
    assert_int_equal(d.eot, GPT_DECODE_NO_EOT);
    assert_int_equal(d.version, 1);
    gpt_decoder_free(&d);

    size = table(b, GPT_DECODE_MAGIC, 2, V, V - 1, lens, V);
    decoder_refused(b, 1000, (const char *[]){"truncated header", "1000 bytes", 0});
    table(b, 20240520, 2, V, V - 1, lens, V);
    decoder_refused(b, size, (const char *[]){"offset 0", "20240328", 0});
    table(b, GPT_DECODE_MAGIC, 3, V, V - 1, lens, V);
    decoder_refused(b, size, (const char *[]){"version 3", "offset 4", 0});
    table(b, GPT_DECODE_MAGIC, 2, 0, 0, lens, 0);
    decoder_refused(b, GPT_DECODE_HEADER_BYTES,
                    (const char *[]){"vocabulary size 0", "offset 8", 0});
    table(b, GPT_DECODE_MAGIC, 2, 70000, 0, lens, 0);
    decoder_refused(b, GPT_DECODE_HEADER_BYTES, (const char *[]){"70000", 0});
    table(b, GPT_DECODE_MAGIC, 2, V, V, lens, V);
    decoder_refused(b, size, (const char *[]){"end-of-text id 300", "offset 12", 0});
    size = table(b, GPT_DECODE_MAGIC, 2, V, V - 1, lens, V);
    /* cut before the length of the last token, then inside its bytes */
    size_t last = size - 1 - lens[V - 1];
    char where[64];
    snprintf(where, sizeof where, "ends at offset %zu", last);
    decoder_refused(b, last, (const char *[]){"truncated", where, "token 299 of 300", 0});
    snprintf(where, sizeof where, "length at offset %zu", last);
    decoder_refused(b, size - 1, (const char *[]){"token 299", where, 0});
    b[size] = 'x';
    snprintf(where, sizeof where, "1 trailing bytes at offset %zu", size);
    decoder_refused(b, size + 1, (const char *[]){where, 0});
    unlink(at("tok.bin"));
    free(b);
}

/* The file at path, whole, terminated; its size in *n. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size >= 0);
    rewind(f);
    char *s = malloc((size_t)size + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    s[size] = 0;
    *n = (size_t)size;
    return s;
}

/* tests/data/tokens/: prepare-tokens.py's shards of fortunes.txt (entries
 * separated by "%" lines) and its tokenizer.bin. The stream is eot, entry,
 * eot, entry, ...: decoded with each eot dropped and the "%\n" that ended
 * each entry put back, it is the text file exactly. */
static void test_fixture(void **state)
{
    (void)state;
    const char *fixture = CLG_SOURCE_ROOT "/tests/data/tokens";
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer.bin", fixture);
    gpt_decoder d;
    assert_int_equal(gpt_decoder_load("--tokenizer", path, &d, err, sizeof err), 0);
    assert_int_equal(d.version, 2);
    assert_true(d.eot < d.vocab);
    assert_int_equal(gpt_data_is_shards(fixture), 1);
    gpt_token_corpus t;
    if (load(fixture, NULL, d.vocab, &t) != 0)
        fail_msg("%s", err);
    assert_int_equal(t.shards, 2);
    assert_true(t.n_train < t.n);
    /* prepare-tokens.py's split: the last floor(n / 10) tokens validate */
    assert_int_equal(t.n - t.n_train, t.n / 10);
    assert_int_equal(t.tokens[0], d.eot);

    size_t n_text;
    char *text = slurp(CLG_SOURCE_ROOT "/tests/data/tokens/fortunes.txt", &n_text);
    uint8_t *got = malloc(n_text + 1024);
    assert_non_null(got);
    size_t g = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (t.tokens[i] == d.eot) {
            if (i > 0) {
                assert_true(g + 2 <= n_text);
                memcpy(got + g, "%\n", 2);
                g += 2;
            }
            continue;
        }
        size_t len;
        const uint8_t *p = gpt_decoder_token(&d, t.tokens[i], &len);
        assert_non_null(p);
        assert_true(g + len <= n_text);
        memcpy(got + g, p, len);
        g += len;
    }
    memcpy(got + g, "%\n", 2);
    g += 2;
    assert_int_equal(g, n_text);
    assert_memory_equal(got, text, n_text);
    /* the byte-level BPE did merge: fewer tokens than bytes */
    assert_true(t.n < n_text);
    free(got);
    free(text);
    gpt_token_corpus_free(&t);
    gpt_decoder_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_shard),      cmocka_unit_test(test_directory_glob_val_data),
        cmocka_unit_test(test_shard_refusals), cmocka_unit_test(test_decode_table),
        cmocka_unit_test(test_fixture),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
