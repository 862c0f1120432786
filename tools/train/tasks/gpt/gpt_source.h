/* gpt_source.h - --data as a GPT run takes it: text (gpt_data.h, read as
 * bytes) or token shards (gpt_shards.h, with --val-data), listed before
 * anything is read (the plan: windows and bytes from the files' sizes)
 * and then read into the training and validation windows with the
 * baselines of the validation targets. --plan and the run list through
 * here, so that both plan the same windows. */
#ifndef TRAIN_GPT_SOURCE_H
#define TRAIN_GPT_SOURCE_H

#include "gpt_data.h"
#include "gpt_shards.h"
#include "path_list.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_source {
    const char *data;     /* --data (the caller's string) */
    int tokens;           /* 1: token shards (gpt_options.tokens) */
    unsigned T, vocab;    /* the context, the vocabulary */
    path_list files;      /* text: the corpus's files */
    gpt_shard_set shards; /* tokens: the shards, training and validation */
    size_t windows[2];    /* training, validation, by the listed sizes */
    size_t dim;           /* bytes of a window (T + 1 tokens) */
    uint64_t bytes;       /* of the files (shards: headers included) */
    uint64_t host_bytes;  /* host memory the read data will hold */
} gpt_source;

/* The bytes of a window of T + 1 tokens of a vocabulary of V
 * (gpt_token_bytes each): what the listing plans and the model reads. */
size_t gpt_window_bytes(unsigned T, unsigned V);

/* Lists data (and val_data, NULL: none; token shards only) for windows of
 * T + 1 tokens of a vocabulary of vocab (GPT_BYTE_VOCAB for text), and
 * checks that both splits get a window. Nothing is read. 0, or -1 with a
 * message naming the flag. Free with gpt_source_free. */
int gpt_source_list(const char *data, const char *val_data, int tokens, unsigned T, unsigned vocab,
                    gpt_source *s, char *err, size_t errlen);
void gpt_source_free(gpt_source *s);

/* What a run read: the corpus (text: bytes; tokens: uint16 ids) and the
 * windows of each split. */
typedef struct gpt_source_data {
    int tokens;
    unsigned vocab;
    gpt_corpus text;
    gpt_token_corpus tok;
    gpt_windows train, val;
} gpt_source_data;

/* Reads the listed data into d (every check of gpt_corpus_read and
 * gpt_token_corpus_read: files that changed since the listing, damaged
 * shards, tokens out of range) and cuts its windows. 0, or -1 with a
 * message; d then holds nothing. Free with gpt_source_data_free. */
int gpt_source_read(const gpt_source *s, gpt_source_data *d, char *err, size_t errlen);
void gpt_source_data_free(gpt_source_data *d);

/* The unigram and bigram baselines (nats per token) of the targets of the
 * first n windows of val, estimated on d's training split. */
void gpt_source_baselines(const gpt_source_data *d, const dataset *val, size_t n,
                          gpt_baselines *out);

/* The task's data_files (task.h): the files of --data, text or shards,
 * that no output may name. */
int gpt_data_files(const char *data, path_list *files, char *err, size_t errlen);

#endif /* TRAIN_GPT_SOURCE_H */
