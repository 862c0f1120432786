/* test_gpt_data.c - the GPT task's data (tools/train/tasks/gpt/gpt_data.c):
 * a directory joined in name order without links and strfile indexes, the
 * 90/10 split, the windows, and the unigram and bigram baselines against a
 * case derived by hand and against a direct computation over the
 * validation bytes (not the windows) on a larger corpus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "gpt_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* "b" and "a" joined as a then b; "a.dat" (an index) and "c" (a link to
 * "a", as fortunes' .u8 names) left out; 20 bytes: 18 train, 2 validate. */
static void test_directory(void **state)
{
    (void)state;
    char dir[] = "/tmp/gpt_data_XXXXXX", path[256], target[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/b", dir);
    write_file(path, "0123456789");
    snprintf(path, sizeof path, "%s/a", dir);
    write_file(path, "abcdefghij");
    snprintf(path, sizeof path, "%s/a.dat", dir);
    write_file(path, "XXXX");
    snprintf(path, sizeof path, "%s/c", dir);
    snprintf(target, sizeof target, "%s/a", dir);
    assert_int_equal(symlink(target, path), 0);

    gpt_corpus c;
    char err[512];
    assert_int_equal(gpt_corpus_load(dir, &c, err, sizeof err), 0);
    assert_int_equal(c.n, 20);
    assert_int_equal(c.files, 2);
    assert_memory_equal(c.bytes, "abcdefghij0123456789", 20);
    assert_int_equal(c.n_train, 18);

    /* windows of 4 + 1 at stride 4 over the 18 training bytes: (18 - 1) / 4
     * = 4, the last bytes 12..16 */
    gpt_windows w;
    assert_int_equal(gpt_windows_make(c.bytes, c.n_train, 4, "training", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, 4);
    assert_int_equal(w.set.dim, 5);
    assert_memory_equal(w.set.images, "abcde", 5);
    assert_memory_equal(w.set.images + 5, "efghi", 5);
    assert_memory_equal(w.set.images + 15, "23456", 5);
    gpt_windows_free(&w);
    /* the 2 validation bytes hold no window of 4 + 1 */
    assert_int_equal(gpt_windows_make(c.bytes + c.n_train, c.n - c.n_train, 4, "validation", &w,
                                      err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "validation"));
    gpt_corpus_free(&c);

    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(gpt_corpus_load(path, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "--data"));
    const char *names[] = {"a", "b", "a.dat", "c"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* train "aab": c(a) = 2, c(b) = 1; bigrams aa, ab: c(a .) = 2, c(b .) = 0.
 * One validation window "aba" (T = 2): targets b after a, a after b.
 * unigram: p(b) = 2/259, p(a) = 3/259;
 * bigram:  p(b|a) = (1 + 1)/(2 + 256) = 2/258, p(a|b) = 1/256. */
static void test_baselines_by_hand(void **state)
{
    (void)state;
    const uint8_t train[] = "aab", win[] = "aba", zero[1] = {0};
    dataset w;
    assert_int_equal(dataset_wrap(win, zero, 1, 3, &w, NULL, 0), 0);
    gpt_baselines b;
    gpt_baselines_compute(train, 3, &w, 1, &b);
    double uni = -(log(2.0 / 259) + log(3.0 / 259)) / 2;
    double bi = -(log(2.0 / 258) + log(1.0 / 256)) / 2;
    assert_true(fabs(b.unigram - uni) <= 1e-12 * uni);
    assert_true(fabs(b.bigram - bi) <= 1e-12 * bi);
    assert_true(fabs(gpt_bits(log(8.0)) - 3.0) < 1e-12);
}

/* How often byte b follows byte a in s[0 .. n) (a < 0: how often b occurs),
 * by a scan per question. */
static double count(const uint8_t *s, size_t n, int a, int b)
{
    double c = 0;
    for (size_t i = 0; i < n; i++)
        if (a < 0 ? s[i] == b : i + 1 < n && s[i] == a && (b < 0 || s[i + 1] == b))
            c++;
    return c;
}

/* A 3001-byte corpus of a skewed alphabet with structure (an 'e' mostly
 * after 't'), T = 7, the first 30 of its validation windows: the baselines
 * against the same sums over the validation bytes 1 .. 30 T, each
 * probability from its own counting scan. */
static void test_baselines_direct(void **state)
{
    (void)state;
    size_t n = 3001;
    uint8_t *s = malloc(n);
    assert_non_null(s);
    uint64_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33) % 100;
        s[i] = i && s[i - 1] == 't' && r < 70 ? 'e'
               : r < 40                       ? 't'
               : r < 70                       ? 'a'
               : r < 99                       ? ' '
                                              : 200;
    }
    size_t split = gpt_split(n), T = 7, used = 30;
    assert_int_equal(split, 2701);
    gpt_windows w;
    char err[256];
    assert_int_equal(
        gpt_windows_make(s + split, n - split, (unsigned)T, "validation", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, (n - split - 1) / T);
    gpt_baselines b;
    gpt_baselines_compute(s, split, &w.set, used, &b);
    const uint8_t *v = s + split;
    double su = 0, sb = 0;
    for (size_t j = 1; j <= used * T; j++) {
        su += -log((count(s, split, -1, v[j]) + 1) / (split + 256.0));
        sb += -log((count(s, split, v[j - 1], v[j]) + 1) / (count(s, split, v[j - 1], -1) + 256.0));
    }
    su /= (double)(used * T);
    sb /= (double)(used * T);
    assert_true(fabs(b.unigram - su) <= 1e-12 * su);
    assert_true(fabs(b.bigram - sb) <= 1e-12 * sb);
    assert_true(b.bigram < b.unigram); /* the structure is there to find */
    gpt_windows_free(&w);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_baselines_by_hand),
        cmocka_unit_test(test_baselines_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
