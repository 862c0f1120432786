/* test_gpt_resolve.c - a GPT run's vocabulary from its files
 * (tools/train/tasks/gpt/gpt_resolve.c), on the host alone: token shards
 * (tests/data/tokens/, a directory, one shard, a glob pattern) take the
 * decode table's 320 tokens from tokenizer.bin beside them or --tokenizer,
 * and --vocab must agree with it; shards without a table need --vocab,
 * above 256; a damaged table is refused naming --tokenizer and its path.
 * Text is read as bytes (256) and refuses every flag of token shards. A
 * token model's prompt: --prompt's text refused, --sample without prompt
 * ids needs the table's end-of-text token, each id below the vocabulary;
 * and gpt_prompt_tokens_parse's list, every malformed entry refused with
 * nothing returned. (--init-from: tests/test_gpt_hf.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_options.h"
#include "gpt_resolve.h"
#include "options.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURE CLG_SOURCE_ROOT "/tests/data/tokens"

static char *root; /* the test's scratch directory */
static char err[2048];
static char shards[1024];  /* root/shards: the fixture's two shards, no tokenizer.bin */
static char copy[1024];    /* root/copy: the shards and tokenizer.bin */
static char text[1024];    /* root/text.txt */
static char damaged[1024]; /* root/damaged.bin: 10 bytes */

static void assert_has(const char *needle)
{
    if (!strstr(err, needle))
        fail_msg("\"%s\" not in the message \"%s\"", needle, err);
}

static void assert_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k || strcmp(s + n - k, suffix) != 0)
        fail_msg("\"%s\" does not end in \"%s\"", s, suffix);
}

/* g as the program has it before resolving: the defaults, --vocab as
 * given (0: not), nothing resolved. */
static void options(gpt_options *g, unsigned vocab_flag)
{
    gpt_options_default(g);
    g->shape_flags.vocab = vocab_flag;
}

/* gpt_options_resolve on --data data: its return; err cleared first. */
static int resolve(gpt_options *g, const char *data)
{
    train_options o;
    train_options_default(&o);
    o.data_dir = data;
    err[0] = 0;
    return gpt_options_resolve(g, &o, err, sizeof err);
}

/* Resolves, failing the test with the message unless it returns 0. */
static void resolve_ok(gpt_options *g, const char *data)
{
    if (resolve(g, data) != 0)
        fail_msg("gpt_options_resolve(--data %s): %s", data, err);
}

static void copy_file(const char *from, const char *to_dir, const char *name)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s", from, name);
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    size_t n;
    uint8_t *b = tu_read_file(src, &n);
    tu_write_file(dst, b, n);
    free(b);
}

static int setup(void **state)
{
    (void)state;
    root = tu_mkdtemp("test_gpt_resolve");
    snprintf(shards, sizeof shards, "%s/shards", root);
    snprintf(copy, sizeof copy, "%s/copy", root);
    snprintf(text, sizeof text, "%s/text.txt", root);
    snprintf(damaged, sizeof damaged, "%s/damaged.bin", root);
    if (mkdir(shards, 0777) != 0 || mkdir(copy, 0777) != 0)
        return -1;
    const char *names[] = {"fortunes_train_000000.bin", "fortunes_val_000000.bin"};
    for (size_t i = 0; i < 2; i++) {
        copy_file(FIXTURE, shards, names[i]);
        copy_file(FIXTURE, copy, names[i]);
    }
    copy_file(FIXTURE, copy, "tokenizer.bin");
    static const char words[] = "Some text, read as bytes.\nAnother line of it.\n";
    tu_write_file(text, words, sizeof words - 1);
    tu_write_file(damaged, "0123456789", 10);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir_tree(root);
    free(root);
    return 0;
}

/* 1. The fixture directory and a copy of it: tokenizer.bin beside the
 * shards gives the vocabulary, no flag needed. */
static void test_shards_dir(void **state)
{
    (void)state;
    const char *dirs[] = {FIXTURE, copy};
    for (size_t i = 0; i < 2; i++) {
        gpt_options g;
        options(&g, 0);
        resolve_ok(&g, dirs[i]);
        assert_int_equal(g.vocab, 320);
        assert_int_equal(g.tokens, 1);
        assert_ends_with(g.tokenizer_path, "/tokenizer.bin");
        char want[4096];
        snprintf(want, sizeof want, "%s/tokenizer.bin", dirs[i]);
        assert_string_equal(g.tokenizer_path, want);
    }
    /* one shard as --data: tokenizer.bin in its directory */
    gpt_options g;
    options(&g, 0);
    char one[4096];
    snprintf(one, sizeof one, "%s/fortunes_train_000000.bin", copy);
    resolve_ok(&g, one);
    assert_int_equal(g.vocab, 320);
    assert_int_equal(g.tokens, 1);
    char want[4096];
    snprintf(want, sizeof want, "%s/tokenizer.bin", copy);
    assert_string_equal(g.tokenizer_path, want);
}

/* 2. --vocab agrees with the decode table, or is refused naming both. */
static void test_vocab_flag(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 320);
    resolve_ok(&g, FIXTURE);
    assert_int_equal(g.vocab, 320);
    assert_int_equal(g.tokens, 1);

    options(&g, 321);
    assert_int_equal(resolve(&g, FIXTURE), -1);
    assert_has("--vocab 321, but the tokenizer");
    assert_has("320 tokens");
    assert_has(FIXTURE "/tokenizer.bin");
}

/* 3. Shards without a decode table: --vocab is needed, and then enough;
 * --tokenizer FILE names a table elsewhere. */
static void test_no_tokenizer(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    assert_int_equal(resolve(&g, shards), -1);
    assert_has("--vocab V");
    assert_has("tokenizer");
    assert_has(shards);
    assert_int_equal(g.tokens, 1);

    options(&g, 320);
    resolve_ok(&g, shards);
    assert_int_equal(g.vocab, 320);
    assert_int_equal(g.tokens, 1);
    assert_string_equal(g.tokenizer_path, "");

    options(&g, 0);
    g.tokenizer = FIXTURE "/tokenizer.bin";
    resolve_ok(&g, shards);
    assert_int_equal(g.vocab, 320);
    assert_string_equal(g.tokenizer_path, FIXTURE "/tokenizer.bin");
}

/* 4. A damaged decode table: refused naming --tokenizer and the file. */
static void test_damaged_tokenizer(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    g.tokenizer = damaged;
    assert_int_equal(resolve(&g, shards), -1);
    assert_has("--tokenizer");
    assert_has(damaged);
    /* also with --vocab given, and beside the table of the fixture */
    options(&g, 320);
    g.tokenizer = damaged;
    assert_int_equal(resolve(&g, FIXTURE), -1);
    assert_has("--tokenizer");
    assert_has(damaged);
    /* a file that is not there */
    char missing[2048];
    snprintf(missing, sizeof missing, "%s/missing.bin", root);
    options(&g, 320);
    g.tokenizer = missing;
    assert_int_equal(resolve(&g, shards), -1);
    assert_has("--tokenizer");
    assert_has(missing);
    /* a damaged tokenizer.bin beside the shards is refused, not passed over */
    char dir[2048], table[4096];
    snprintf(dir, sizeof dir, "%s/bad_table", root);
    assert_int_equal(mkdir(dir, 0777), 0);
    copy_file(FIXTURE, dir, "fortunes_train_000000.bin");
    snprintf(table, sizeof table, "%s/tokenizer.bin", dir);
    tu_write_file(table, "0123456789", 10);
    options(&g, 320);
    assert_int_equal(resolve(&g, dir), -1);
    assert_has(table);
    assert_has("the decode table beside --data's shards");
}

/* 5. Token shards take more than 256 tokens. */
static void test_small_vocab(void **state)
{
    (void)state;
    const unsigned v[] = {200, 256};
    for (size_t i = 0; i < 2; i++) {
        gpt_options g;
        options(&g, v[i]);
        assert_int_equal(resolve(&g, shards), -1);
        assert_has("take more than 256");
        char want[64];
        snprintf(want, sizeof want, "a vocabulary of %u", v[i]);
        assert_has(want);
    }
    gpt_options g;
    options(&g, 257);
    resolve_ok(&g, shards);
    assert_int_equal(g.vocab, 257);
}

/* 6. Text: the bytes; every flag of token shards refused with why. */
static void test_text(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    g.vocab = 999; /* whatever it held: the files decide */
    resolve_ok(&g, text);
    assert_int_equal(g.vocab, 256);
    assert_int_equal(g.tokens, 0);
    assert_string_equal(g.tokenizer_path, "");

    options(&g, 300);
    assert_int_equal(resolve(&g, text), -1);
    assert_has("--vocab 300");
    assert_has("is text, read as bytes");
    assert_has(text);

    options(&g, 256);
    resolve_ok(&g, text);
    assert_int_equal(g.vocab, 256);
    assert_int_equal(g.tokens, 0);

    /* each flag of token shards, named */
    static const char *const flags[] = {"--tokenizer", "--val-data", "--prompt-tokens"};
    for (int i = 0; i < 3; i++) {
        options(&g, 0);
        const char **field[] = {&g.tokenizer, &g.val_data, &g.prompt_tokens};
        *field[i] = i == 0   ? FIXTURE "/tokenizer.bin"
                    : i == 1 ? FIXTURE "/fortunes_val_000000.bin"
                             : "1,2";
        assert_int_equal(resolve(&g, text), -1);
        assert_has(flags[i]);
        assert_has("is text");
    }

    /* a byte model's --prompt is its text */
    options(&g, 0);
    g.prompt = "Hello";
    g.sample = 10;
    resolve_ok(&g, text);
    assert_int_equal(g.vocab, 256);
}

/* 7. A token model's prompt: ids, or the table's end-of-text token. */
static void test_prompt(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    g.prompt = "Hello";
    g.sample = 10;
    assert_int_equal(resolve(&g, FIXTURE), -1);
    assert_has("--prompt:");
    assert_has("--prompt-tokens");

    options(&g, 0);
    g.sample = 10;
    resolve_ok(&g, FIXTURE); /* the fixture's table has end-of-text id 0 */
    assert_int_equal(g.vocab, 320);

    options(&g, 320);
    g.sample = 10;
    assert_int_equal(resolve(&g, shards), -1);
    assert_has("--sample");
    assert_has("--prompt-tokens");

    /* with ids, no table needed */
    options(&g, 320);
    g.sample = 10;
    g.prompt_tokens = "1,2";
    resolve_ok(&g, shards);
}

/* 8. --prompt-tokens: each id below the vocabulary. */
static void test_prompt_tokens(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    g.sample = 10;
    g.prompt_tokens = "5,0,319";
    resolve_ok(&g, FIXTURE);
    assert_int_equal(g.vocab, 320);

    options(&g, 0);
    g.sample = 10;
    g.prompt_tokens = "5,320";
    assert_int_equal(resolve(&g, FIXTURE), -1);
    assert_has("--prompt-tokens 5,320");
    assert_has("entry 2");
    assert_has("320");

    /* below --vocab's, without a table */
    options(&g, 400);
    g.sample = 10;
    g.prompt_tokens = "399";
    resolve_ok(&g, shards);
    options(&g, 400);
    g.sample = 10;
    g.prompt_tokens = "399,400";
    assert_int_equal(resolve(&g, shards), -1);
    assert_has("entry 2");
}

static void test_parse(void **state)
{
    (void)state;
    uint16_t *ids = (uint16_t *)(uintptr_t)1;
    size_t n = 99;
    err[0] = 0;
    assert_int_equal(gpt_prompt_tokens_parse("1,2,3", 320, &ids, &n, err, sizeof err), 0);
    assert_non_null(ids);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 3);
    free(ids);

    assert_int_equal(gpt_prompt_tokens_parse("0", 1, &ids, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 0);
    free(ids);

    assert_int_equal(gpt_prompt_tokens_parse("65534,7", 65535, &ids, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 65534);
    assert_int_equal(ids[1], 7);
    free(ids);

    static const struct {
        const char *list;
        const char *entry;
    } bad[] = {
        {"", "entry 1"},
        {"1,", "entry 2"},
        {",1", "entry 1"},
        {"1,,2", "entry 2"},
        {"x", "entry 1"},
        {"-1", "entry 1"},
        {"+1", "entry 1"},
        {" 1", "entry 1"},
        {"1 ,2", "entry 1"},
        {"1x", "entry 1"},
        {"99999999999", "entry 1"},
        {"1,99999999999999999999999", "entry 2"},
        {"1,2,320", "entry 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ids = (uint16_t *)(uintptr_t)1;
        n = 99;
        err[0] = 0;
        if (gpt_prompt_tokens_parse(bad[i].list, 320, &ids, &n, err, sizeof err) != -1)
            fail_msg("\"%s\" accepted", bad[i].list);
        assert_null(ids);
        assert_int_equal(n, 0);
        assert_has("--prompt-tokens");
        assert_has(bad[i].entry);
    }
}

/* 9. A glob pattern as --data: tokenizer.bin in the pattern's directory. */
static void test_glob(void **state)
{
    (void)state;
    gpt_options g;
    options(&g, 0);
    resolve_ok(&g, FIXTURE "/fortunes_*.bin");
    assert_int_equal(g.tokens, 1);
    assert_int_equal(g.vocab, 320);
    assert_string_equal(g.tokenizer_path, FIXTURE "/tokenizer.bin");

    /* no table beside the pattern's shards */
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/fortunes_*.bin", shards);
    options(&g, 0);
    assert_int_equal(resolve(&g, pattern), -1);
    assert_has("--vocab V");
    assert_int_equal(g.tokens, 1);
}

TU_MAIN("gpt_resolve", setup, teardown, cmocka_unit_test(test_shards_dir),
        cmocka_unit_test(test_vocab_flag), cmocka_unit_test(test_no_tokenizer),
        cmocka_unit_test(test_damaged_tokenizer), cmocka_unit_test(test_small_vocab),
        cmocka_unit_test(test_text), cmocka_unit_test(test_prompt),
        cmocka_unit_test(test_prompt_tokens), cmocka_unit_test(test_parse),
        cmocka_unit_test(test_glob))
