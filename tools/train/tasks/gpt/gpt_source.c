/* gpt_source.c - --data as text or token shards, listed and read (see
 * gpt_source.h). */
#include "gpt_source.h"
#include "errmsg.h"
#include "gpt_kernels.h"
#include "gpt_token_data.h"

#include <stdio.h>
#include <string.h>

/* The training and validation tokens of the listed shards: the "val"
 * shards' (or --val-data's), else the last 10% (gpt_split). */
static void shard_split(const gpt_shard_set *s, uint64_t n[2])
{
    uint64_t train = gpt_shard_list_tokens(&s->train), val = gpt_shard_list_tokens(&s->val);
    if (s->val.n) {
        n[0] = train;
        n[1] = val;
    } else {
        n[0] = gpt_split((size_t)train);
        n[1] = train - n[0];
    }
}

size_t gpt_window_bytes(unsigned T, unsigned V)
{
    return ((size_t)T + 1) * gpt_token_bytes(V);
}

static int list_shards(const char *data, const char *val_data, gpt_source *s, char *err,
                       size_t errlen)
{
    if (gpt_shards_list(data, val_data, &s->shards, err, errlen) != 0)
        return -1;
    uint64_t n[2];
    shard_split(&s->shards, n);
    static const char *const split[2] = {"training", "validation"};
    for (int i = 0; i < 2; i++) {
        s->windows[i] = gpt_window_count((size_t)n[i], s->T);
        int named = i == 1 && s->shards.val_data; /* the split --val-data gave */
        char where[4200];
        snprintf(where, sizeof where, "%s %s", named ? "--val-data" : "--data",
                 named ? val_data : data);
        if (!s->windows[i])
            return gpt_windows_none(where, split[i], n[i], "tokens (by the listed sizes)", s->T,
                                    err, errlen);
    }
    s->bytes = path_list_bytes(&s->shards.train) + path_list_bytes(&s->shards.val);
    s->dim = gpt_window_bytes(s->T, s->vocab);
    /* the tokens, then the windows with their one-byte labels */
    s->host_bytes = 2 * (n[0] + n[1]) + ((uint64_t)s->windows[0] + s->windows[1]) * (s->dim + 1);
    return 0;
}

static int list_text(const char *data, gpt_source *s, char *err, size_t errlen)
{
    if (gpt_corpus_files(data, &s->files, err, errlen) != 0)
        return -1;
    s->bytes = path_list_bytes(&s->files);
    if (gpt_corpus_fits(data, s->bytes, s->T, err, errlen) != 0)
        return -1;
    gpt_corpus_windows(s->bytes, s->T, s->windows);
    s->dim = gpt_window_bytes(s->T, s->vocab);
    s->host_bytes = gpt_corpus_host_bytes(s->bytes, s->T);
    return 0;
}

int gpt_source_list(const char *data, const char *val_data, int tokens, unsigned T, unsigned vocab,
                    gpt_source *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->data = data;
    s->tokens = tokens;
    s->T = T;
    s->vocab = vocab;
    int rc = tokens ? list_shards(data, val_data, s, err, errlen) : list_text(data, s, err, errlen);
    if (rc != 0)
        gpt_source_free(s);
    return rc;
}

void gpt_source_free(gpt_source *s)
{
    path_list_free(&s->files);
    gpt_shard_set_free(&s->shards);
    memset(s, 0, sizeof *s);
}

static int read_text(const gpt_source *s, gpt_source_data *d, char *err, size_t errlen)
{
    if (gpt_corpus_read(&s->files, s->data, &d->text, err, errlen) != 0)
        return -1;
    const gpt_corpus *c = &d->text;
    if (gpt_windows_make(c->bytes, c->n_train, s->T, "training", &d->train, err, errlen) != 0 ||
        gpt_windows_make(c->bytes + c->n_train, c->n - c->n_train, s->T, "validation", &d->val, err,
                         errlen) != 0)
        return -1;
    return 0;
}

static int read_tokens(const gpt_source *s, gpt_source_data *d, char *err, size_t errlen)
{
    if (gpt_token_corpus_read(&s->shards, s->vocab, &d->tok, err, errlen) != 0)
        return -1;
    const gpt_token_corpus *t = &d->tok;
    if (gpt_token_windows_make(t->tokens, t->n_train, s->T, "training", &d->train, err, errlen) !=
            0 ||
        gpt_token_windows_make(t->tokens + t->n_train, t->n - t->n_train, s->T, "validation",
                               &d->val, err, errlen) != 0)
        return -1;
    return 0;
}

int gpt_source_read(const gpt_source *s, gpt_source_data *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->tokens = s->tokens;
    d->vocab = s->vocab;
    int rc = s->tokens ? read_tokens(s, d, err, errlen) : read_text(s, d, err, errlen);
    if (rc != 0)
        gpt_source_data_free(d);
    return rc;
}

void gpt_source_data_free(gpt_source_data *d)
{
    gpt_corpus_free(&d->text);
    gpt_token_corpus_free(&d->tok);
    gpt_windows_free(&d->train);
    gpt_windows_free(&d->val);
    memset(d, 0, sizeof *d);
}

void gpt_source_baselines(const gpt_source_data *d, const dataset *val, size_t n,
                          gpt_baselines *out)
{
    if (d->tokens)
        gpt_token_baselines(d->tok.tokens, d->tok.n_train, d->vocab, val, n, out);
    else
        gpt_baselines_compute(d->text.bytes, d->text.n_train, val, n, out);
}

int gpt_data_files(const char *data, path_list *files, char *err, size_t errlen)
{
    if (!gpt_data_is_shards(data))
        return gpt_corpus_files(data, files, err, errlen);
    gpt_shard_set s;
    if (gpt_shards_list(data, NULL, &s, err, errlen) != 0)
        return -1;
    int rc = 0;
    const path_list *part[2] = {&s.train, &s.val};
    for (int i = 0; i < 2 && rc == 0; i++)
        for (size_t j = 0; j < part[i]->n && rc == 0; j++)
            if (path_list_add(files, part[i]->path[j], part[i]->bytes[j]) != 0)
                rc = errmsg_set(err, errlen, "--data: out of host memory");
    gpt_shard_set_free(&s);
    return rc;
}
