/* gpt_decode.c - llm.c's tokenizer file, loaded and checked, and token ids
 * decoded to bytes (see gpt_decode.h). */
#include "gpt_decode.h"
#include "errmsg.h"
#include "gpt_shards.h"
#include "input_file.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The largest table: the header and GPT_TOKEN_VOCAB_MAX tokens of 255
 * bytes; more is refused before it is read. */
#define DECODE_MAX_BYTES ((uint64_t)GPT_DECODE_HEADER_BYTES + (uint64_t)GPT_TOKEN_VOCAB_MAX * 256)

static int check_header(const char *flag, const char *path, const uint8_t *f, size_t size,
                        char *err, size_t errlen)
{
    if (size < GPT_DECODE_HEADER_BYTES)
        return errmsg_set(err, errlen,
                          "%s: %s: truncated header: %zu bytes, fewer than a tokenizer "
                          "header of %d",
                          flag, path, size, GPT_DECODE_HEADER_BYTES);
    uint32_t magic = gpt_le32(f), version = gpt_le32(f + 4), vocab = gpt_le32(f + 8),
             eot = gpt_le32(f + 12);
    if (magic != GPT_DECODE_MAGIC)
        return errmsg_set(err, errlen,
                          "%s: %s: not a tokenizer file: the uint32 at offset 0 is %" PRIu32
                          ", not the magic %d",
                          flag, path, magic, GPT_DECODE_MAGIC);
    if (version != 1 && version != 2)
        return errmsg_set(err, errlen,
                          "%s: %s: version %" PRIu32 " (the uint32 at offset 4), not 1 or 2", flag,
                          path, version);
    if (vocab == 0 || vocab > GPT_TOKEN_VOCAB_MAX)
        return errmsg_set(err, errlen,
                          "%s: %s: the vocabulary size %" PRIu32
                          " (the uint32 at offset 8) is not in 1 .. %d",
                          flag, path, vocab, GPT_TOKEN_VOCAB_MAX);
    if (version == 2 && eot >= vocab)
        return errmsg_set(err, errlen,
                          "%s: %s: the end-of-text id %" PRIu32
                          " (the uint32 at offset 12) is not below the vocabulary size %" PRIu32,
                          flag, path, eot, vocab);
    return 0;
}

/* Walks the tokens of the file f of size bytes, checking that each length
 * and its bytes are inside it and that nothing follows the last; with
 * offset not NULL, records where each token's bytes begin (in the token
 * bytes alone, lengths left out). */
static int walk_tokens(const char *flag, const char *path, const uint8_t *f, size_t size,
                       uint32_t vocab, size_t *offset, char *err, size_t errlen)
{
    size_t at = GPT_DECODE_HEADER_BYTES, bytes = 0;
    for (uint32_t i = 0; i < vocab; i++) {
        if (at >= size)
            return errmsg_set(err, errlen,
                              "%s: %s: truncated: the file ends at offset %zu, before the "
                              "length of token %" PRIu32 " of %" PRIu32,
                              flag, path, size, i, vocab);
        size_t len = f[at];
        if (size - at - 1 < len)
            return errmsg_set(err, errlen,
                              "%s: %s: truncated: token %" PRIu32 " (its length at offset %zu) "
                              "has %zu bytes, but the file ends %zu bytes after it",
                              flag, path, i, at, len, size - at - 1);
        if (offset)
            offset[i] = bytes;
        bytes += len;
        at += 1 + len;
    }
    if (offset)
        offset[vocab] = bytes;
    if (at != size)
        return errmsg_set(err, errlen,
                          "%s: %s: %zu trailing bytes at offset %zu, past the last of the %" PRIu32
                          " tokens",
                          flag, path, size - at, at, vocab);
    return 0;
}

/* The file at path, read whole (its size in *size). NULL with a message. */
static uint8_t *read_whole(const char *flag, const char *path, size_t *size, char *err,
                           size_t errlen)
{
    char why[256];
    int fd = input_open(path, DECODE_MAX_BYTES, size, why, sizeof why);
    if (fd < 0) {
        errmsg_set(err, errlen, "%s: %s: %s", flag, path, why);
        return NULL;
    }
    uint8_t *f = malloc(*size ? *size : 1);
    if (!f)
        errmsg_set(err, errlen, "%s: %s: out of host memory", flag, path);
    else if (input_read(fd, f, *size, why, sizeof why) != 0) {
        errmsg_set(err, errlen, "%s: %s: %s", flag, path, why);
        free(f);
        f = NULL;
    }
    close(fd);
    return f;
}

int gpt_decoder_load(const char *flag, const char *path, gpt_decoder *d, char *err, size_t errlen)
{
    size_t size;
    uint8_t *f = read_whole(flag, path, &size, err, errlen);
    if (!f)
        return -1;
    gpt_decoder n = {0};
    int rc = check_header(flag, path, f, size, err, errlen);
    if (rc == 0) {
        n.vocab = gpt_le32(f + 8);
        n.version = gpt_le32(f + 4);
        n.eot = n.version == 2 ? gpt_le32(f + 12) : GPT_DECODE_NO_EOT;
        n.offset = malloc(((size_t)n.vocab + 1) * sizeof *n.offset);
        if (!n.offset)
            rc = errmsg_set(err, errlen, "%s: %s: out of host memory", flag, path);
    }
    if (rc == 0)
        rc = walk_tokens(flag, path, f, size, n.vocab, n.offset, err, errlen);
    if (rc == 0) {
        n.bytes = malloc(n.offset[n.vocab] ? n.offset[n.vocab] : 1);
        if (!n.bytes)
            rc = errmsg_set(err, errlen, "%s: %s: out of host memory", flag, path);
    }
    if (rc == 0) {
        const uint8_t *p = f + GPT_DECODE_HEADER_BYTES;
        for (uint32_t i = 0; i < n.vocab; i++) {
            size_t len = *p++;
            memcpy(n.bytes + n.offset[i], p, len);
            p += len;
        }
        *d = n;
    } else {
        gpt_decoder_free(&n);
    }
    free(f);
    return rc;
}

void gpt_decoder_free(gpt_decoder *d)
{
    free(d->bytes);
    free(d->offset);
    memset(d, 0, sizeof *d);
}

const uint8_t *gpt_decoder_token(const gpt_decoder *d, uint32_t id, size_t *len)
{
    if (id >= d->vocab) {
        *len = 0;
        return NULL;
    }
    *len = d->offset[id + 1] - d->offset[id];
    return d->bytes + d->offset[id];
}

size_t gpt_decoder_decode(const gpt_decoder *d, const uint16_t *ids, size_t n, uint8_t *out,
                          size_t cap)
{
    size_t total = 0;
    int full = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *b = gpt_decoder_token(d, ids[i], &len);
        if (!full && total + len <= cap) {
            if (len)
                memcpy(out + total, b, len);
        } else
            full = 1;
        total += len;
    }
    return total;
}
