/* gpt_decode.h - the decode table of a token model, in llm.c's tokenizer
 * format (scripts/prepare-tokens.py writes it as tokenizer.bin): a header
 * of 256 little-endian uint32 (magic GPT_DECODE_MAGIC, version, vocabulary
 * size, and from version 2 the end-of-text id), then for each token in id
 * order a uint8 length and that many bytes. The trainer prints samples of
 * a token model through it. Version 1 (llm.c's older files, no end-of-text
 * field) is accepted, with eot GPT_DECODE_NO_EOT. */
#ifndef TRAIN_GPT_DECODE_H
#define TRAIN_GPT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define GPT_DECODE_MAGIC        20240328
#define GPT_DECODE_VERSION      2
#define GPT_DECODE_HEADER_BYTES (256 * 4)
#define GPT_DECODE_NO_EOT       UINT32_MAX

typedef struct gpt_decoder {
    uint32_t vocab;   /* tokens, 1 .. GPT_TOKEN_VOCAB_MAX (gpt_shards.h) */
    uint32_t eot;     /* the end-of-text id (< vocab), or GPT_DECODE_NO_EOT */
    uint32_t version; /* of the file: 1 or 2 */
    uint8_t *bytes;   /* every token's bytes, in id order */
    size_t *offset;   /* vocab + 1: token i is bytes[offset[i] .. offset[i + 1]) */
} gpt_decoder;

/* Loads the table at path into d (its own copies; free with
 * gpt_decoder_free). The file is opened once and read to the size it has
 * when opened (a FIFO or a device is refused, not read) and checked whole:
 * a header shorter than 1024 bytes, a wrong magic, a version other than 1
 * or 2, a vocabulary of 0 or more than GPT_TOKEN_VOCAB_MAX, an end-of-text
 * id not below the vocabulary, a token whose length or bytes the file ends
 * inside, bytes past the last token. 0, or -1 with a message naming flag
 * (e.g. "--tokenizer"), the path and the offset of what was wrong; d is
 * then untouched and nothing is held. */
int gpt_decoder_load(const char *flag, const char *path, gpt_decoder *d, char *err, size_t errlen);
void gpt_decoder_free(gpt_decoder *d);

/* Token id's bytes (*len of them; not terminated), or NULL (*len 0) for an
 * id not below the vocabulary. */
const uint8_t *gpt_decoder_token(const gpt_decoder *d, uint32_t id, size_t *len);

/* The bytes of ids[0 .. n) one after another into out (at most cap bytes:
 * writing stops before the first token that does not fit whole). Returns the bytes the
 * whole decoding has, written or not (as snprintf does): call with cap 0
 * for the size. An id not below the vocabulary decodes to nothing. */
size_t gpt_decoder_decode(const gpt_decoder *d, const uint16_t *ids, size_t n, uint8_t *out,
                          size_t cap);

#endif /* TRAIN_GPT_DECODE_H */
