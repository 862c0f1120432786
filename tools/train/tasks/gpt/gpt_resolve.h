/* gpt_resolve.h - what a GPT run's options come to from its files, before
 * any work: --init-from's config (gpt_hf.h), and the vocabulary. Text is
 * read as bytes (a vocabulary of 256); token shards (gpt_shards.h) take
 * theirs from --vocab, the decode table (--tokenizer, or tokenizer.bin
 * beside the shards) or --init-from's vocab_size, which must agree where
 * more than one is given. --plan, clgrad-tune's GEMMs and the run resolve
 * the same way. */
#ifndef TRAIN_GPT_RESOLVE_H
#define TRAIN_GPT_RESOLVE_H

#include "gpt_options.h"
#include "options.h"

#include <stddef.h>
#include <stdint.h>

/* g's shape from --init-from, g->vocab, g->tokens and g->tokenizer_path
 * from --data and the flags; a token model's prompt checked (each id below
 * the vocabulary; --prompt's text refused: the trainer has no encoder).
 * 0, or -1 with a message naming the flags and files that disagree. */
int gpt_options_resolve(gpt_options *g, const train_options *o, char *err, size_t errlen);

/* How a message names g's decode table: "--tokenizer", or the default
 * beside the shards (the user gave no flag to name). */
const char *gpt_tokenizer_flag(const gpt_options *g);

/* The ids of a comma-separated list (--prompt-tokens) into a new array
 * (*ids, *n of them; free it), each below V. 0, or -1 with a message
 * naming the flag and the entry; *ids NULL then. */
int gpt_prompt_tokens_parse(const char *list, unsigned V, uint16_t **ids, size_t *n, char *err,
                            size_t errlen);

#endif /* TRAIN_GPT_RESOLVE_H */
