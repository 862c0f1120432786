/* gpt_token_data.h - the GPT task's data for a token model: the windows of
 * a token corpus (gpt_shards.h: uint16 ids below a vocabulary V of at most
 * GPT_TOKEN_VOCAB_MAX) cut as gpt_windows_make cuts bytes (T + 1 tokens at
 * stride T), each token stored as 2 bytes, low byte first whatever the
 * host's order, so that the windows are a dataset (dataset.h) the core
 * orders, positions, resumes and distributes as the byte windows; the
 * unigram and bigram baselines of the validation targets in nats per token;
 * and the bytes those targets decode to, so that a token model's loss can be
 * reported per byte, comparable with a byte model's (nats per token x
 * targets / bytes). */
#ifndef TRAIN_GPT_TOKEN_DATA_H
#define TRAIN_GPT_TOKEN_DATA_H

#include "dataset.h"
#include "gpt_data.h"
#include "gpt_decode.h"

#include <stddef.h>
#include <stdint.h>

/* The bytes of a window of T + 1 tokens (the dataset's dim). */
#define GPT_TOKEN_WINDOW_BYTES(T) (2 * ((size_t)(T) + 1))

/* Tokens tok[0 .. n) into out, 2 bytes each, low byte first: the windows'
 * bytes are the same on every host (checkpoints, shards and devices). */
void gpt_tokens_put(uint8_t *out, const uint16_t *tok, size_t n);

/* Token t of a window's sample (2 bytes each, low byte first). */
static inline uint16_t gpt_token_at(const uint8_t *sample, size_t t)
{
    return (uint16_t)(sample[2 * t] | sample[2 * t + 1] << 8);
}

/* The windows of tok[0 .. n) into w: as many as gpt_window_count(n, T),
 * window i tokens i T .. i T + T, w->set.dim GPT_TOKEN_WINDOW_BYTES(T),
 * labels zeros. Free with gpt_windows_free. 0, or -1 with a message (no
 * window, or out of memory) naming --data and which split (what:
 * "training", "validation"); w is then empty. */
int gpt_token_windows_make(const uint16_t *tok, size_t n, unsigned T, const char *what,
                           gpt_windows *w, char *err, size_t errlen);

/* Cross-entropy in nats per token of the targets of the first n windows of
 * w (of gpt_token_windows_make; T each: token t + 1 after tokens 0..t)
 * under the token models estimated on train[0 .. n_train) with add-one
 * smoothing over V tokens: unigram p(b) = (c(b) + 1) / (n_train + V),
 * bigram p(b | a) = (c(a b) + 1) / (c(a .) + V), c(a .) the bigrams of
 * train that start with a: gpt_baselines_compute with V in place of 256.
 * Memory O(n_train + V) (never V x V: V may be 50257). Both are NAN when
 * there is no target, when V is 0, when a token (of train or of a target
 * pair) is not below V, or when host memory runs out. */
void gpt_token_baselines(const uint16_t *train, size_t n_train, unsigned V, const dataset *w,
                         size_t n, gpt_baselines *out);

/* The bytes the targets (tokens 1..T) of the first n windows of w decode to
 * through d, each token's length (gpt_decoder_token: 0 for one not below
 * d's vocabulary) summed. */
uint64_t gpt_token_window_target_bytes(const gpt_decoder *d, const dataset *w, size_t n);

#endif /* TRAIN_GPT_TOKEN_DATA_H */
