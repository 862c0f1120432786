/* test_gpt_token_data.c - the GPT task's token windows, baselines and
 * target bytes (tools/train/tasks/gpt/gpt_token_data.c) against a naive
 * reference written here: windows byte by byte from the token array (low
 * byte first), the baselines by direct counting loops over the training
 * tokens for each target of the token array itself (not of the windows),
 * in double, to 1e-12 relative; a case derived by hand; and the target
 * bytes through a decode table built here, with empty tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "gpt_token_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-12

static void assert_close(double got, double want)
{
    if (!(fabs(got - want) <= REL_TOL * fabs(want)))
        fail_msg("got %.17g, want %.17g", got, want);
}

/* Windows of tok[0 .. n) at context T, checked byte by byte. */
static void check_windows(const uint16_t *tok, size_t n, unsigned T)
{
    size_t count = (n - 1) / T; /* n >= 2 here */
    gpt_windows w;
    char err[256];
    assert_int_equal(gpt_token_windows_make(tok, n, T, "training", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, count);
    assert_int_equal(w.set.dim, 2 * (T + 1));
    assert_ptr_equal(w.set.images, w.images);
    for (size_t i = 0; i < count; i++) {
        assert_int_equal(w.labels[i], 0);
        for (size_t t = 0; t <= T; t++) {
            uint16_t v = tok[i * T + t];
            assert_int_equal(w.images[i * 2 * (T + 1) + 2 * t], v & 0xff);
            assert_int_equal(w.images[i * 2 * (T + 1) + 2 * t + 1], v >> 8);
        }
    }
    gpt_windows_free(&w);
    assert_null(w.images);
}

/* (n - 1) % T zero and not, T = 1, and 0xABCD stored CD AB. */
static void test_windows(void **state)
{
    (void)state;
    uint16_t tok[40];
    for (unsigned i = 0; i < 40; i++)
        tok[i] = (uint16_t)(i * 0x0101 + 7);
    tok[0] = 0xABCD;
    tok[5] = 0xFFFE;
    const size_t ns[] = {2, 5, 9, 10, 11, 13, 40};
    const unsigned Ts[] = {1, 2, 3, 4, 12};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof Ts / sizeof *Ts; b++)
            if (ns[a] > Ts[b])
                check_windows(tok, ns[a], Ts[b]);

    gpt_windows w;
    char err[256];
    assert_int_equal(gpt_token_windows_make(tok, 9, 4, "training", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, 2); /* (9 - 1) % 4 == 0: the last token ends window 1 */
    const uint8_t first[4] = {0xCD, 0xAB, 0x08, 0x01};
    assert_memory_equal(w.images, first, 4);
    assert_int_equal(gpt_token_at(w.images, 0), 0xABCD);
    gpt_windows_free(&w);
}

static void test_no_window(void **state)
{
    (void)state;
    uint16_t tok[5] = {1, 2, 3, 4, 5};
    gpt_windows w;
    char err[256] = "";
    assert_int_equal(gpt_token_windows_make(tok, 4, 4, "validation", &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "--data"));
    assert_non_null(strstr(err, "validation"));
    assert_non_null(strstr(err, "4 tokens"));
    assert_null(w.images);
    assert_null(w.labels);
    assert_int_equal(gpt_token_windows_make(tok, 1, 1, "training", &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "training"));
    assert_int_equal(gpt_token_windows_make(tok, 5, 0, "training", &w, err, sizeof err), -1);
    assert_int_equal(gpt_token_windows_make(tok, 5, 4, "training", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, 1);
    gpt_windows_free(&w);
}

/* The naive baselines: for each target val[i T + t + 1] after val[i T + t]
 * of the first windows windows, its counts by loops over train. */
static void ref_baselines(const uint16_t *train, size_t n_train, unsigned V, const uint16_t *val,
                          size_t windows, unsigned T, double *uni, double *bi)
{
    double su = 0, sb = 0;
    for (size_t i = 0; i < windows; i++)
        for (size_t t = 0; t < T; t++) {
            uint16_t a = val[i * T + t], b = val[i * T + t + 1];
            double cb = 0, cab = 0, ca = 0;
            for (size_t j = 0; j < n_train; j++)
                cb += train[j] == b;
            for (size_t j = 0; j + 1 < n_train; j++) {
                ca += train[j] == a;
                cab += train[j] == a && train[j + 1] == b;
            }
            su -= log((cb + 1) / ((double)n_train + V));
            sb -= log((cab + 1) / (ca + V));
        }
    *uni = su / (double)(windows * T);
    *bi = sb / (double)(windows * T);
}

static uint32_t lcg_state;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state >> 8;
}

/* Tokens below V, half of them from a pool of 5 (0 and V - 1 among them)
 * so that pairs repeat; 0 and V - 1 at the start whatever the draw. */
static void draw(uint16_t *t, size_t n, unsigned V)
{
    const unsigned pool[5] = {0, V - 1, 1 % V, (V / 2) % V, 3 % V};
    for (size_t i = 0; i < n; i++)
        t[i] = (uint16_t)(lcg() % 2 ? pool[lcg() % 5] : lcg() % V);
    t[0] = 0;
    t[1] = (uint16_t)(V - 1);
}

/* The most any pair of targets occurs in train (a case whose bigram counts
 * are all 0 or 1 would not test the counting). */
static double max_target_pair(const uint16_t *train, size_t n_train, const uint16_t *val, size_t m)
{
    double most = 0;
    for (size_t k = 0; k + 1 < m; k++) {
        double c = 0;
        for (size_t j = 0; j + 1 < n_train; j++)
            c += train[j] == val[k] && train[j + 1] == val[k + 1];
        most = c > most ? c : most;
    }
    return most;
}

static void check_baselines(unsigned V, size_t n_train, size_t n_val, unsigned T, size_t n)
{
    uint16_t *train = malloc(n_train * sizeof *train), *val = malloc(n_val * sizeof *val);
    assert_non_null(train);
    assert_non_null(val);
    draw(train, n_train, V);
    draw(val, n_val, V);
    int big = n_train >= 50; /* enough tokens for repeated pairs */
    assert_true(!big || max_target_pair(train, n_train, val, n_val) >= 2);
    gpt_windows w;
    char err[256];
    assert_int_equal(gpt_token_windows_make(val, n_val, T, "validation", &w, err, sizeof err), 0);
    size_t windows = n < w.set.count ? n : w.set.count;
    double uni, bi;
    ref_baselines(train, n_train, V, val, windows, T, &uni, &bi);
    gpt_baselines b;
    gpt_token_baselines(train, n_train, V, &w.set, n, &b);
    assert_close(b.unigram, uni);
    assert_close(b.bigram, bi);
    gpt_windows_free(&w);
    free(train);
    free(val);
}

static void test_baselines_gpt2_vocab(void **state)
{
    (void)state;
    lcg_state = 12345;
    check_baselines(50257, 4000, 600, 16, SIZE_MAX);
    check_baselines(50257, 3001, 333, 7, 20); /* the first 20 windows of 47 */
}

static void test_baselines_small_vocab(void **state)
{
    (void)state;
    lcg_state = 777;
    check_baselines(7, 60, 25, 4, SIZE_MAX);
    check_baselines(7, 2, 9, 1, SIZE_MAX);
    check_baselines(7, 500, 101, 5, 3);
}

/* train 0 1 0 1 2, V = 3; windows of T = 1 over 0 1 2: targets 1 after 0,
 * 2 after 1. c(1) = 2, c(2) = 1 of 5: p = 3/8, 2/8. c(0 1) = 2 of c(0 .)
 * = 2: 3/5; c(1 2) = 1 of c(1 .) = 2: 2/5. */
static void test_baselines_by_hand(void **state)
{
    (void)state;
    const uint16_t train[5] = {0, 1, 0, 1, 2}, val[3] = {0, 1, 2};
    gpt_windows w;
    char err[256];
    assert_int_equal(gpt_token_windows_make(val, 3, 1, "validation", &w, err, sizeof err), 0);
    gpt_baselines b;
    gpt_token_baselines(train, 5, 3, &w.set, 2, &b);
    assert_close(b.unigram, -(log(3.0 / 8) + log(2.0 / 8)) / 2);
    assert_close(b.bigram, -(log(3.0 / 5) + log(2.0 / 5)) / 2);
    /* one training token: no bigram, both uniform */
    gpt_token_baselines(train, 1, 3, &w.set, 2, &b);
    assert_close(b.unigram, log(4.0));
    assert_close(b.bigram, log(3.0));
    /* no target, V 0, a token not below V: NAN */
    gpt_token_baselines(train, 5, 3, &w.set, 0, &b);
    assert_true(isnan(b.unigram) && isnan(b.bigram));
    gpt_token_baselines(train, 5, 0, &w.set, 2, &b);
    assert_true(isnan(b.unigram) && isnan(b.bigram));
    gpt_token_baselines(train, 5, 2, &w.set, 2, &b);
    assert_true(isnan(b.unigram) && isnan(b.bigram));
    gpt_windows_free(&w);
}

/* A table of 6 tokens, 1 and 3 empty; token 7 (not below 6) decodes to
 * nothing. */
static void test_target_bytes(void **state)
{
    (void)state;
    uint8_t bytes[] = "axyzhelloQ";
    size_t offset[7] = {0, 1, 1, 4, 4, 9, 10};
    const size_t len[8] = {1, 0, 3, 0, 5, 1, 0, 0};
    gpt_decoder d = {.vocab = 6, .eot = 5, .version = 2, .bytes = bytes, .offset = offset};
    uint16_t tok[23];
    for (size_t i = 0; i < 23; i++)
        tok[i] = (uint16_t)((i * 5 + i / 3) % 8);
    gpt_windows w;
    char err[256];
    assert_int_equal(gpt_token_windows_make(tok, 23, 5, "validation", &w, err, sizeof err), 0);
    assert_int_equal(w.set.count, 4);
    for (size_t n = 0; n <= 5; n++) {
        uint64_t want = 0;
        for (size_t i = 0; i < n && i < 4; i++)
            for (size_t t = 1; t <= 5; t++)
                want += len[tok[i * 5 + t]];
        assert_int_equal(gpt_token_window_target_bytes(&d, &w.set, n), want);
    }
    assert_int_not_equal(gpt_token_window_target_bytes(&d, &w.set, 4), 0);
    gpt_windows_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_no_window),
        cmocka_unit_test(test_baselines_gpt2_vocab),
        cmocka_unit_test(test_baselines_small_vocab),
        cmocka_unit_test(test_baselines_by_hand),
        cmocka_unit_test(test_target_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
