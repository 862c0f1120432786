/* gpt_token_data.c - the GPT task's token windows, baselines and target
 * bytes (see gpt_token_data.h). */
#include "gpt_token_data.h"
#include "errmsg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gpt_tokens_put(uint8_t *out, const uint16_t *tok, size_t n)
{
    for (size_t t = 0; t < n; t++) {
        out[2 * t] = (uint8_t)(tok[t] & 0xff);
        out[2 * t + 1] = (uint8_t)(tok[t] >> 8);
    }
}

int gpt_token_windows_make(const uint16_t *tok, size_t n, unsigned T, const char *what,
                           gpt_windows *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    size_t count = gpt_window_count(n, T), dim = GPT_TOKEN_WINDOW_BYTES(T);
    if (count == 0)
        return gpt_windows_none("--data", what, n, "tokens", T, err, errlen);
    if (gpt_windows_alloc(count, dim, what, w, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < count; i++)
        gpt_tokens_put(w->images + i * dim, tok + i * T, (size_t)T + 1);
    return 0;
}

/* The windows of w whose targets count (the first n) and their targets
 * each (*T; 0 for a dim too small to hold two tokens). */
static size_t target_windows(const dataset *w, size_t n, size_t *T)
{
    *T = w->dim >= 4 ? w->dim / 2 - 1 : 0;
    return n < w->count ? n : w->count;
}

/* The bigrams of train grouped by their first token, each group's second
 * tokens ascending: group a is next[start[a] .. start[a + 1]), so c(a .)
 * is its size and c(a b) two binary searches in it. The sorted keys
 * a << 16 | b, with the high half kept as the group: 2 bytes a bigram and
 * V + 1 offsets, where a V x V table would be 20 GB at V = 50257. */
typedef struct bigram_table {
    size_t *start;  /* V + 1 */
    uint16_t *next; /* n_train - 1 */
} bigram_table;

/* Counts train's tokens into uni (V, zeroed): -1 at a token not below V,
 * which would index past the tables. */
static int count_unigrams(const uint16_t *train, size_t n_train, unsigned V, size_t *uni)
{
    for (size_t i = 0; i < n_train; i++) {
        if (train[i] >= V)
            return -1;
        uni[train[i]]++;
    }
    return 0;
}

/* The offsets of a counting sort into groups 0 .. V - 1, group x of
 * uni[x] - (x == skip) members (the token that starts no bigram, or ends
 * none), shifted by one: off[x + 1] is where group x begins, so that
 * filling it at off[x + 1]++ leaves off[x] .. off[x + 1] its range. */
static void group_offsets(const size_t *uni, unsigned V, uint16_t skip, size_t *off)
{
    off[0] = off[1] = 0;
    for (unsigned x = 0; x + 1 < V; x++)
        off[x + 2] = off[x + 1] + uni[x] - (x == skip);
}

/* Two stable counting sorts of the bigrams (a radix sort, linear in
 * n_train where qsort of a billion keys takes minutes): by second token,
 * then, the groups of the first walked in order, by first token, which
 * leaves each first token's second tokens ascending. */
static void sort_bigrams(const uint16_t *train, size_t m, unsigned V, size_t *by_second,
                         uint16_t *first, bigram_table *t)
{
    for (size_t i = 0; i < m; i++)
        first[by_second[train[i + 1] + 1]++] = train[i];
    for (unsigned b = 0; b < V; b++)
        for (size_t j = by_second[b]; j < by_second[b + 1]; j++)
            t->next[t->start[first[j] + 1]++] = (uint16_t)b;
}

static void bigrams_free(bigram_table *t)
{
    free(t->start);
    free(t->next);
    memset(t, 0, sizeof *t);
}

/* The bigram table of train (its counts uni, tokens all below V) into t:
 * 0, or -1 out of memory with t empty. */
static int bigrams_build(const uint16_t *train, size_t n_train, unsigned V, const size_t *uni,
                         bigram_table *t)
{
    size_t m = n_train > 1 ? n_train - 1 : 0;
    t->start = calloc((size_t)V + 1, sizeof *t->start);
    t->next = malloc((m ? m : 1) * sizeof *t->next);
    size_t *by_second = calloc((size_t)V + 1, sizeof *by_second);
    uint16_t *first = malloc((m ? m : 1) * sizeof *first);
    int rc = t->start && t->next && by_second && first ? 0 : -1;
    if (rc == 0 && m > 0) {
        group_offsets(uni, V, train[0], by_second);
        group_offsets(uni, V, train[n_train - 1], t->start);
        sort_bigrams(train, m, V, by_second, first, t);
    }
    free(by_second);
    free(first);
    if (rc != 0)
        bigrams_free(t);
    return rc;
}

/* The first index of s[0 .. n) (ascending) whose token is not below b. */
static size_t lower_bound(const uint16_t *s, size_t n, uint32_t b)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* c(a b) */
static size_t pair_count(const bigram_table *t, uint16_t a, uint16_t b)
{
    const uint16_t *s = t->next + t->start[a];
    size_t n = t->start[a + 1] - t->start[a];
    return lower_bound(s, n, (uint32_t)b + 1) - lower_bound(s, n, b);
}

/* The baselines of the targets of w's first windows windows of T targets
 * each, summed in double; out left NAN at a token not below V. */
static void score(const size_t *uni, size_t n_train, unsigned V, const bigram_table *t,
                  const dataset *w, size_t windows, size_t T, gpt_baselines *out)
{
    double su = 0, sb = 0;
    for (size_t i = 0; i < windows; i++) {
        const uint8_t *x = w->images + i * w->dim;
        for (size_t k = 0; k < T; k++) {
            uint16_t a = gpt_token_at(x, k), b = gpt_token_at(x, k + 1);
            if (a >= V || b >= V)
                return;
            double after = (double)(t->start[a + 1] - t->start[a]); /* c(a .) */
            su -= log(((double)uni[b] + 1) / ((double)n_train + V));
            sb -= log(((double)pair_count(t, a, b) + 1) / (after + V));
        }
    }
    double m = (double)windows * (double)T;
    out->unigram = su / m;
    out->bigram = sb / m;
}

void gpt_token_baselines(const uint16_t *train, size_t n_train, unsigned V, const dataset *w,
                         size_t n, gpt_baselines *out)
{
    out->unigram = out->bigram = NAN;
    size_t T, windows = target_windows(w, n, &T);
    if (V == 0 || windows == 0 || T == 0)
        return;
    size_t *uni = calloc(V, sizeof *uni);
    bigram_table t = {0};
    if (uni && count_unigrams(train, n_train, V, uni) == 0 &&
        bigrams_build(train, n_train, V, uni, &t) == 0)
        score(uni, n_train, V, &t, w, windows, T, out);
    bigrams_free(&t);
    free(uni);
}

uint64_t gpt_token_window_target_bytes(const gpt_decoder *d, const dataset *w, size_t n)
{
    size_t T, windows = target_windows(w, n, &T);
    uint64_t bytes = 0;
    for (size_t i = 0; i < windows; i++) {
        const uint8_t *x = w->images + i * w->dim;
        for (size_t k = 1; k <= T; k++) {
            size_t len;
            gpt_decoder_token(d, gpt_token_at(x, k), &len);
            bytes += len;
        }
    }
    return bytes;
}
