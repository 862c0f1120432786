/* gpt_resolve.c - a GPT run's vocabulary and --init-from's shape from its
 * files (see gpt_resolve.h). */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "gpt_resolve.h"
#include "errmsg.h"
#include "gpt_decode.h"
#include "gpt_hf.h"
#include "gpt_shards.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The decode table beside the shards of data: data/tokenizer.bin for a
 * directory, else tokenizer.bin in the directory of the file or pattern
 * (as scripts/prepare-tokens.py writes them side by side). "" when there
 * is no such regular file. */
static void default_tokenizer(const char *data, char *out, size_t len)
{
    struct stat sb;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", data);
    const char *dir = stat(data, &sb) == 0 && S_ISDIR(sb.st_mode) ? copy : dirname(copy);
    int n = snprintf(out, len, "%s/%s", dir, "tokenizer.bin");
    if (n < 0 || (size_t)n >= len || stat(out, &sb) != 0 || !S_ISREG(sb.st_mode))
        out[0] = 0;
}

/* Text: the bytes. Every flag of token shards is refused with why. */
static int resolve_bytes(gpt_options *g, const train_options *o, unsigned hf_vocab, char *err,
                         size_t errlen)
{
    if (hf_vocab && hf_vocab != GPT_BYTE_VOCAB)
        return errmsg_set(err, errlen,
                          "--init-from %s: vocab_size %u needs token shards as --data "
                          "(scripts/prepare-tokens.py); %s is text, read as bytes (a vocabulary "
                          "of %d)",
                          g->init_from, hf_vocab, o->data_dir, GPT_BYTE_VOCAB);
    if (g->shape_flags.vocab && g->shape_flags.vocab != GPT_BYTE_VOCAB)
        return errmsg_set(err, errlen,
                          "--vocab %u: --data %s is text, read as bytes (a vocabulary of %d); "
                          "token shards take another",
                          g->shape_flags.vocab, o->data_dir, GPT_BYTE_VOCAB);
    static const char shards_only[] = "%s: goes with token shards; --data %s is text";
    if (g->tokenizer)
        return errmsg_set(err, errlen, shards_only, "--tokenizer", o->data_dir);
    if (g->val_data)
        return errmsg_set(err, errlen, shards_only, "--val-data", o->data_dir);
    if (g->prompt_tokens)
        return errmsg_set(err, errlen, shards_only, "--prompt-tokens", o->data_dir);
    g->vocab = GPT_BYTE_VOCAB;
    return 0;
}

/* The vocabulary of token shards: the decode table's, --vocab's and
 * --init-from's agree where given; at least one is. */
static int shard_vocab(gpt_options *g, const train_options *o, unsigned hf_vocab,
                       unsigned table_vocab, char *err, size_t errlen)
{
    unsigned flag = g->shape_flags.vocab;
    if (flag && table_vocab && flag != table_vocab)
        return errmsg_set(err, errlen, "--vocab %u, but the tokenizer %s has %u tokens", flag,
                          g->tokenizer_path, table_vocab);
    if (hf_vocab && table_vocab && hf_vocab != table_vocab)
        return errmsg_set(err, errlen,
                          "--init-from %s has vocab_size %u, but the tokenizer %s has %u tokens",
                          g->init_from, hf_vocab, g->tokenizer_path, table_vocab);
    /* gpt_hf_apply_options refused a --vocab that disagrees with its config */
    unsigned v = flag ? flag : hf_vocab ? hf_vocab : table_vocab;
    if (!v)
        return errmsg_set(err, errlen,
                          "--data %s holds token shards: their vocabulary is needed (--vocab V, "
                          "or the decode table: --tokenizer FILE, or tokenizer.bin beside the "
                          "shards)",
                          o->data_dir);
    if (v <= GPT_BYTE_VOCAB)
        return errmsg_set(err, errlen,
                          "a vocabulary of %u: token shards take more than %d tokens (a model of "
                          "%d or fewer reads text, as bytes)",
                          v, GPT_BYTE_VOCAB, GPT_BYTE_VOCAB);
    g->vocab = v;
    return 0;
}

/* A token model's prompt: ids, or the decode table's end-of-text token. */
static int check_prompt(const gpt_options *g, uint32_t eot, char *err, size_t errlen)
{
    gpt_options dflt;
    gpt_options_default(&dflt);
    if (strcmp(g->prompt, dflt.prompt) != 0)
        return errmsg_set(err, errlen,
                          "--prompt: a token model's prompt is token ids (--prompt-tokens; "
                          "scripts/prepare-tokens.py --tokenizer FILE --encode-prompt TEXT "
                          "prints them)");
    if (g->prompt_tokens) {
        uint16_t *ids = NULL;
        size_t n = 0;
        int rc = gpt_prompt_tokens_parse(g->prompt_tokens, g->vocab, &ids, &n, err, errlen);
        free(ids);
        return rc;
    }
    if (g->sample && eot == GPT_DECODE_NO_EOT)
        return errmsg_set(err, errlen,
                          "--sample: a token model starts from --prompt-tokens IDS (no decode "
                          "table with an end-of-text token to start from)");
    return 0;
}

static int resolve_tokens(gpt_options *g, const train_options *o, unsigned hf_vocab, char *err,
                          size_t errlen)
{
    if (g->tokenizer)
        snprintf(g->tokenizer_path, sizeof g->tokenizer_path, "%s", g->tokenizer);
    else
        default_tokenizer(o->data_dir, g->tokenizer_path, sizeof g->tokenizer_path);
    gpt_decoder d = {0};
    d.eot = GPT_DECODE_NO_EOT;
    if (g->tokenizer_path[0] &&
        gpt_decoder_load(gpt_tokenizer_flag(g), g->tokenizer_path, &d, err, errlen) != 0)
        return -1;
    int rc = shard_vocab(g, o, hf_vocab, d.vocab, err, errlen);
    if (rc == 0)
        rc = check_prompt(g, d.eot, err, errlen);
    gpt_decoder_free(&d);
    return rc;
}

const char *gpt_tokenizer_flag(const gpt_options *g)
{
    return g->tokenizer ? "--tokenizer" : "the decode table beside --data's shards";
}

int gpt_options_resolve(gpt_options *g, const train_options *o, char *err, size_t errlen)
{
    g->vocab = g->shape_flags.vocab; /* --vocab as given; the files decide the rest */
    g->tokenizer_path[0] = 0;
    if (gpt_hf_apply_options(g, err, errlen) != 0)
        return -1;
    unsigned hf_vocab = g->init_from ? g->vocab : 0;
    g->tokens = gpt_data_is_shards(o->data_dir);
    return g->tokens ? resolve_tokens(g, o, hf_vocab, err, errlen)
                     : resolve_bytes(g, o, hf_vocab, err, errlen);
}

int gpt_prompt_tokens_parse(const char *list, unsigned V, uint16_t **ids, size_t *n, char *err,
                            size_t errlen)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    uint16_t *out = malloc(cap * sizeof *out);
    if (!out)
        return errmsg_set(err, errlen, "--prompt-tokens: out of host memory");
    const char *p = list;
    for (size_t i = 0; i < cap; i++) {
        char *end;
        errno = 0;
        unsigned long v = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : (end = (char *)p, 0);
        if (end == p || (*end && *end != ',') || errno || v >= V) {
            free(out);
            return errmsg_set(err, errlen,
                              "--prompt-tokens %s: entry %zu is not a token id below the "
                              "vocabulary's %u",
                              list, i + 1, V);
        }
        out[i] = (uint16_t)v;
        p = *end ? end + 1 : end;
    }
    *ids = out;
    *n = cap;
    return 0;
}
