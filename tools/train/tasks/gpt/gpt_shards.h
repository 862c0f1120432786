/* gpt_shards.h - the GPT task's tokenized data: llm.c's token shards (a
 * header of 256 little-endian int32: magic GPT_SHARD_MAGIC, version
 * GPT_SHARD_VERSION, token count; then count little-endian uint16 tokens),
 * as scripts/prepare-tokens.py writes them. --data names one shard, a
 * directory of them or a glob(3) pattern; the shards whose name holds "val"
 * validate (llm.c's NAME_val_000000.bin), unless --val-data names the
 * validation shards itself; with no validation shard the last 10% of the
 * tokens validate (gpt_split), as the bytes of a text corpus do. Listing
 * (gpt_shards_list) reads nothing, so that a run plans from the sizes
 * before it reads (gpt_token_corpus_read). */
#ifndef TRAIN_GPT_SHARDS_H
#define TRAIN_GPT_SHARDS_H

#include "gpt_data.h"
#include "path_list.h"

#include <stddef.h>
#include <stdint.h>

#define GPT_SHARD_MAGIC        20240520
#define GPT_SHARD_VERSION      1
#define GPT_SHARD_HEADER_INTS  256
#define GPT_SHARD_HEADER_BYTES (GPT_SHARD_HEADER_INTS * 4)
/* The largest vocabulary a shard's uint16 tokens may index (ids 0..65534;
 * scripts/prepare-tokens.py refuses more too). */
#define GPT_TOKEN_VOCAB_MAX 65535
/* The most bytes the shards of a run may have, training and validation
 * together (held in host memory whole, as a text corpus is). */
#define GPT_SHARDS_MAX_BYTES GPT_CORPUS_MAX_BYTES

/* The little-endian 32-bit word at p, whatever the host's order (the
 * shards' and the decode table's headers). */
static inline uint32_t gpt_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the file at path begins with the shard magic: 1, else 0 (text,
 * fewer than 4 bytes, not a regular file, unreadable: its reader then says
 * why). Opens without blocking (input_open): a FIFO is not waited on. */
int gpt_shard_file_is(const char *path);

/* Whether --data's path names token shards rather than text: a file that
 * is a shard (gpt_shard_file_is), a directory of which any file
 * gpt_corpus_files lists is one, or a glob pattern (a path holding '*', '?' or
 * '[' with nothing at it: text is never read through a pattern). 1 or 0;
 * a path that cannot be listed gives 0, and the text reader says why. */
int gpt_data_is_shards(const char *path);

typedef struct gpt_shard_set {
    path_list train, val; /* each in strcmp order, with the sizes listed */
    int val_data;         /* 1: val came from --val-data (messages name it) */
} gpt_shard_set;

/* The shards of data (a file; a directory's files named *.bin among those
 * gpt_corpus_files lists, tokenizer.bin aside, so that prepare-tokens.py's
 * output directory is --data as it is; or a glob pattern's matches, each a
 * regular file, links followed) into s, split by name: a file of a directory or pattern whose name
 * holds "val" validates, the others train; a single file trains. val_data
 * (NULL: none) names the validation shards instead (a file, directory or
 * pattern, every file of it validating); the "val" files of data are then
 * left out, neither trained on nor validated twice. No validation shard
 * leaves s->val empty: the last 10% of the tokens validate. Nothing is
 * read. 0, or -1 with a message naming the flag and the path (no match,
 * no training shard, more than GPT_SHARDS_MAX_BYTES in all), s left
 * empty. Free with gpt_shard_set_free. */
int gpt_shards_list(const char *data, const char *val_data, gpt_shard_set *s, char *err,
                    size_t errlen);
void gpt_shard_set_free(gpt_shard_set *s);

/* The tokens the shards of l hold by their listed sizes ((bytes - header)
 * / 2 each, 0 for a file shorter than a header): what a run plans from
 * before it reads; gpt_token_corpus_read checks each header against its size. */
uint64_t gpt_shard_list_tokens(const path_list *l);

typedef struct gpt_token_corpus {
    uint16_t *tokens; /* n, the training shards' then the validation shards' */
    size_t n;         /* all tokens */
    size_t n_train;   /* the first n_train train, the rest validate */
    unsigned shards;  /* files read */
} gpt_token_corpus;

/* Reads the shards of s (of gpt_shards_list) into t, each file opened once
 * and read to the size it has when opened (a FIFO, a device or a file that
 * grows or shrinks is refused, not read), and checks each: its header
 * whole, the magic, the version, a count that the file's size agrees with,
 * every token below vocab (1 .. GPT_TOKEN_VOCAB_MAX). With s->val empty the
 * last 10% validate (gpt_split). Each split needs at least 2 tokens. 0, or
 * -1 with a message naming the flag, the shard and, for a bad field or
 * token, its byte offset in the shard; t is then untouched and nothing is
 * held. Free with gpt_token_corpus_free. */
int gpt_token_corpus_read(const gpt_shard_set *s, unsigned vocab, gpt_token_corpus *t, char *err,
                          size_t errlen);
void gpt_token_corpus_free(gpt_token_corpus *t);

#endif /* TRAIN_GPT_SHARDS_H */
