/* gpt_shards.c - llm.c's token shards: listing, reading, checking (see
 * gpt_shards.h). */
#define _DEFAULT_SOURCE /* pread */
#include "gpt_shards.h"
#include "errmsg.h"
#include "input_file.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads up to len bytes at offset 0 of fd (short only at the end of the
 * file): the header, checked before the body is read. */
static ssize_t read_head(int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int gpt_shard_file_is(const char *path)
{
    char why[256];
    size_t size;
    int fd = input_open(path, UINT64_MAX, &size, why, sizeof why);
    if (fd < 0)
        return 0;
    uint8_t head[4];
    int is = size >= 4 && read_head(fd, head, 4) == 4 && gpt_le32(head) == GPT_SHARD_MAGIC;
    close(fd);
    return is;
}

/* A path that glob(3) expands: a pattern character, and nothing at the
 * literal path (a file named "a[1]" is that file). */
static int is_pattern(const char *path)
{
    struct stat sb;
    return strpbrk(path, "*?[") != NULL && lstat(path, &sb) != 0;
}

int gpt_data_is_shards(const char *path)
{
    if (is_pattern(path))
        return 1;
    path_list files = {0};
    int is = 0;
    if (gpt_corpus_files(path, &files, NULL, 0) == 0)
        for (size_t i = 0; !is && i < files.n; i++)
            is = gpt_shard_file_is(files.path[i]);
    path_list_free(&files);
    return is;
}

/* gpt_corpus_files names --data in its messages: for another flag's path
 * (--val-data) the prefix is replaced, so that the message names the flag
 * the user gave. */
static int reflag(const char *flag, char *err, size_t errlen)
{
    static const char data[] = "--data:";
    size_t n = strlen(data), f = strlen(flag);
    if (!err || strcmp(flag, "--data") == 0 || strncmp(err, data, n) != 0)
        return -1;
    size_t len = strlen(err);
    if (len + f + 1 - (n - 1) >= errlen) /* no room: the message stays as it is */
        return -1;
    memmove(err + f, err + n - 1, len - (n - 1) + 1);
    memcpy(err, flag, f);
    return -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A pattern's matches, each a regular file, in strcmp order (glob's own
 * order follows the locale's collation). */
static int list_pattern(const char *flag, const char *pattern, path_list *out, char *err,
                        size_t errlen)
{
    glob_t g;
    int r = glob(pattern, GLOB_ERR, NULL, &g);
    if (r == GLOB_NOMATCH)
        return errmsg_set(err, errlen, "%s: %s matches no file", flag, pattern);
    if (r != 0) {
        errmsg_set(err, errlen, "%s: %s: %s", flag, pattern,
                   r == GLOB_NOSPACE ? "out of host memory" : "a directory cannot be read");
        if (r != GLOB_NOSPACE)
            globfree(&g);
        return -1;
    }
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, by_name);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        struct stat sb;
        rc = input_check(flag, g.gl_pathv[i], err, errlen);
        if (rc == 0 && stat(g.gl_pathv[i], &sb) != 0)
            rc = errmsg_set(err, errlen, "%s: %s: %s", flag, g.gl_pathv[i], strerror(errno));
        if (rc == 0 && path_list_add(out, g.gl_pathv[i], (uint64_t)sb.st_size) != 0)
            rc = errmsg_set(err, errlen, "%s: %s: out of host memory", flag, pattern);
    }
    globfree(&g);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether a file of a directory is a shard by its name: llm.c's shards end
 * in ".bin", and tokenizer.bin, the decode table that prepare-tokens.py
 * writes beside them, is none (nor its tokenizer.json, a README, ...). */
static int is_shard_name(const char *path)
{
    const char *name = base_name(path);
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".bin") == 0 && strcmp(name, "tokenizer.bin") != 0;
}

/* The shards of a directory: the files gpt_corpus_files lists (links,
 * hidden files and strfile indexes left out) that is_shard_name takes. */
static int list_dir(const char *flag, const char *path, path_list *out, char *err, size_t errlen)
{
    path_list all = {0};
    int rc = gpt_corpus_files(path, &all, err, errlen) != 0 ? reflag(flag, err, errlen) : 0;
    size_t before = out->n;
    for (size_t i = 0; rc == 0 && i < all.n; i++)
        if (is_shard_name(all.path[i]) && path_list_add(out, all.path[i], all.bytes[i]) != 0)
            rc = errmsg_set(err, errlen, "%s: %s: out of host memory", flag, path);
    if (rc == 0 && out->n == before)
        rc = errmsg_set(err, errlen,
                        "%s: %s holds no token shard (a file named *.bin, tokenizer.bin aside)",
                        flag, path);
    path_list_free(&all);
    return rc;
}

/* The files of one flag's path into out; *single: path was one file. */
static int list_path(const char *flag, const char *path, path_list *out, int *single, char *err,
                     size_t errlen)
{
    struct stat sb;
    *single = 0;
    if (is_pattern(path))
        return list_pattern(flag, path, out, err, errlen);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return list_dir(flag, path, out, err, errlen);
    *single = 1;
    if (gpt_corpus_files(path, out, err, errlen) != 0)
        return reflag(flag, err, errlen);
    return 0;
}

/* Whether a shard's name (its last component) marks it as validation. */
static int is_val_name(const char *path)
{
    return strstr(base_name(path), "val") != NULL;
}

static int split_by_name(const path_list *all, int single, int val_given, gpt_shard_set *s)
{
    for (size_t i = 0; i < all->n; i++) {
        int val = !single && is_val_name(all->path[i]);
        if (val && val_given)
            continue; /* --val-data validates instead */
        if (path_list_add(val ? &s->val : &s->train, all->path[i], all->bytes[i]) != 0)
            return -1;
    }
    return 0;
}

int gpt_shards_list(const char *data, const char *val_data, gpt_shard_set *s, char *err,
                    size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->val_data = val_data != NULL;
    path_list all = {0};
    int single, rc = list_path("--data", data, &all, &single, err, errlen);
    if (rc == 0 && split_by_name(&all, single, val_data != NULL, s) != 0)
        rc = errmsg_set(err, errlen, "--data: %s: out of host memory", data);
    path_list_free(&all);
    int val_single;
    if (rc == 0 && val_data)
        rc = list_path("--val-data", val_data, &s->val, &val_single, err, errlen);
    if (rc == 0 && s->train.n == 0)
        rc = errmsg_set(err, errlen,
                        "--data: %s: no training shard (every name of it holds \"val\", which "
                        "marks a validation shard)",
                        data);
    uint64_t total = path_list_bytes(&s->train) + path_list_bytes(&s->val);
    if (rc == 0 && total > GPT_SHARDS_MAX_BYTES)
        rc = errmsg_set(err, errlen,
                        "--data: %s: %" PRIu64 " bytes in %zu shard(s), more than the %" PRIu64
                        " the shards of a run may have (they are held in host memory whole)",
                        data, total, s->train.n + s->val.n, (uint64_t)GPT_SHARDS_MAX_BYTES);
    if (rc != 0)
        gpt_shard_set_free(s);
    return rc;
}

void gpt_shard_set_free(gpt_shard_set *s)
{
    path_list_free(&s->train);
    path_list_free(&s->val);
    memset(s, 0, sizeof *s);
}

uint64_t gpt_shard_list_tokens(const path_list *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->bytes[i] >= GPT_SHARD_HEADER_BYTES)
            n += (l->bytes[i] - GPT_SHARD_HEADER_BYTES) / 2;
    return n;
}

/* The tokens being read: every shard's, appended in order. */
typedef struct token_buf {
    uint16_t *tokens;
    size_t n;
    uint64_t file_bytes; /* of the shards read so far, against GPT_SHARDS_MAX_BYTES */
} token_buf;

/* Checks a shard's header (head: the first min(size, header) bytes of the
 * file of size bytes) against the file's size; the token count in *count. */
static int check_header(const char *flag, const char *path, const uint8_t *head, size_t size,
                        size_t *count, char *err, size_t errlen)
{
    if (size >= 4 && gpt_le32(head) != GPT_SHARD_MAGIC)
        return errmsg_set(err, errlen,
                          "%s: %s: not a token shard: the int32 at offset 0 is %" PRId32
                          ", not the magic %d",
                          flag, path, (int32_t)gpt_le32(head), GPT_SHARD_MAGIC);
    if (size < GPT_SHARD_HEADER_BYTES)
        return errmsg_set(err, errlen,
                          "%s: %s: truncated header: %zu bytes, fewer than a token shard's "
                          "header of %d",
                          flag, path, size, GPT_SHARD_HEADER_BYTES);
    int32_t version = (int32_t)gpt_le32(head + 4), n = (int32_t)gpt_le32(head + 8);
    if (version != GPT_SHARD_VERSION)
        return errmsg_set(err, errlen,
                          "%s: %s: version %" PRId32 " (the int32 at offset 4), not %d", flag, path,
                          version, GPT_SHARD_VERSION);
    if (n < 0)
        return errmsg_set(err, errlen,
                          "%s: %s: the header's token count (the int32 at offset 8) is %" PRId32
                          ", negative",
                          flag, path, n);
    uint64_t need = GPT_SHARD_HEADER_BYTES + 2 * (uint64_t)n;
    if (need != size)
        return errmsg_set(err, errlen,
                          "%s: %s: the header's token count (the int32 at offset 8) is %" PRId32
                          ", which needs %" PRIu64 " bytes (%d + 2 x count), but the file has "
                          "%zu",
                          flag, path, n, need, GPT_SHARD_HEADER_BYTES, size);
    *count = (size_t)n;
    return 0;
}

/* Appends the tokens of the shard at path to b, each below vocab. The
 * file is read whole into the room past b's tokens, header included, and
 * its tokens are then moved down over the header, decoded as
 * little-endian. */
static int append_shard(const char *flag, const char *path, unsigned vocab, token_buf *b, char *err,
                        size_t errlen)
{
    char why[256];
    size_t size;
    int fd = input_open(path, GPT_SHARDS_MAX_BYTES - b->file_bytes, &size, why, sizeof why);
    if (fd < 0)
        return errmsg_set(err, errlen, "%s: %s: %s", flag, path, why);
    uint8_t head[GPT_SHARD_HEADER_BYTES];
    size_t count = 0;
    size_t want = size < sizeof head ? size : sizeof head;
    ssize_t got = read_head(fd, head, want);
    int rc = 0;
    if (got < 0)
        rc = errmsg_set(err, errlen, "%s: %s: cannot read it: %s", flag, path, strerror(errno));
    else if ((size_t)got != want)
        rc = errmsg_set(err, errlen, "%s: %s: shrank while it was read", flag, path);
    else
        rc = check_header(flag, path, head, size, &count, err, errlen);
    uint16_t *p = NULL;
    if (rc == 0) {
        p = realloc(b->tokens, (b->n + size / 2) * sizeof *p);
        if (!p)
            rc = errmsg_set(err, errlen, "%s: %s: out of host memory", flag, path);
        else
            b->tokens = p;
    }
    uint8_t *raw = p ? (uint8_t *)(p + b->n) : NULL;
    if (rc == 0 && input_read(fd, raw, size, why, sizeof why) != 0)
        rc = errmsg_set(err, errlen, "%s: %s: %s", flag, path, why);
    if (rc == 0 && memcmp(raw, head, sizeof head) != 0)
        rc = errmsg_set(err, errlen, "%s: %s: its header changed while it was read", flag, path);
    close(fd);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        const uint8_t *q = raw + GPT_SHARD_HEADER_BYTES + 2 * i;
        uint16_t tok = (uint16_t)(q[0] | q[1] << 8);
        if (tok >= vocab)
            rc = errmsg_set(err, errlen,
                            "%s: %s: token %zu (offset %zu) is %u, not below the vocabulary "
                            "size %u",
                            flag, path, i, GPT_SHARD_HEADER_BYTES + 2 * i, tok, vocab);
        else
            memcpy(raw + 2 * i, &tok, sizeof tok); /* below q: not yet read */
    }
    if (rc == 0) {
        b->n += count;
        b->file_bytes += size;
    }
    return rc;
}

static int too_few(const char *what, size_t n, char *err, size_t errlen)
{
    return errmsg_set(err, errlen, "%s hold %zu token(s); a split needs at least 2", what, n);
}

int gpt_token_corpus_read(const gpt_shard_set *s, unsigned vocab, gpt_token_corpus *t, char *err,
                          size_t errlen)
{
    if (vocab == 0 || vocab > GPT_TOKEN_VOCAB_MAX)
        return errmsg_set(err, errlen, "the vocabulary size %u is not in 1 .. %d", vocab,
                          GPT_TOKEN_VOCAB_MAX);
    token_buf b = {0};
    const char *val_flag = s->val_data ? "--val-data" : "--data";
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < s->train.n; i++)
        rc = append_shard("--data", s->train.path[i], vocab, &b, err, errlen);
    size_t n_train = b.n;
    for (size_t i = 0; rc == 0 && i < s->val.n; i++)
        rc = append_shard(val_flag, s->val.path[i], vocab, &b, err, errlen);
    if (rc == 0 && s->val.n && n_train < 2)
        rc = too_few("--data: the training shards", n_train, err, errlen);
    else if (rc == 0 && s->val.n && b.n - n_train < 2)
        rc = too_few(s->val_data ? "--val-data: the validation shards"
                                 : "--data: the validation shards",
                     b.n - n_train, err, errlen);
    else if (rc == 0 && b.n < 2)
        rc = too_few("--data: the shards", b.n, err, errlen);
    if (rc != 0) {
        free(b.tokens);
        return -1;
    }
    t->tokens = b.tokens;
    t->n = b.n;
    t->n_train = s->val.n ? n_train : gpt_split(b.n);
    t->shards = (unsigned)(s->train.n + s->val.n);
    return 0;
}

void gpt_token_corpus_free(gpt_token_corpus *t)
{
    free(t->tokens);
    memset(t, 0, sizeof *t);
}
