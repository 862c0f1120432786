/* ckpt_testutil.h - what the checkpoint tests (test_checkpoint*.c) and the
 * checkpoint fuzz harness (fuzz/fuzz_checkpoint.c) share: the device-free
 * fixture's configuration, and file images assembled or with their header
 * rewritten. Header-only, so that each test and the harness (which link
 * different sources) take it without a build change. Allocation failures
 * abort: these are tests. */
#ifndef CLGRAD_CKPT_TESTUTIL_H
#define CLGRAD_CKPT_TESTUTIL_H

#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* The configuration of the device-free fixtures (test_checkpoint_format,
 * and the fuzz seeds fuzz/make_seeds.py writes): AdamW, bf16 accumulator,
 * dynamic loss scaling with non-default parameters (every field is
 * recorded). */
static inline clg_config ckpt_fixture_config(void)
{
    /* grouped by what the fields control */
    // clang-format off
    return (clg_config){
        .optimizer = CLG_ADAMW, .acc_dtype = CLG_BF16, .param_copy_dtype = CLG_DTYPE_NONE,
        .normalize = CLG_NORM_MEAN, .nonfinite = CLG_NONFINITE_SKIP_UPDATE,
        .loss_scale = CLG_LOSS_SCALE_DYNAMIC, .loss_scale_init = 1024.0f,
        .loss_scale_growth = 2.0f, .loss_scale_backoff = 0.5f, .loss_scale_interval = 100,
        .loss_scale_min = 1.0f, .loss_scale_max = 16777216.0f};
    // clang-format on
}

static inline void *ckpt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* A file image: the 8 length bytes of hlen, the header, the data. */
static inline uint8_t *ckpt_assemble(const char *header, size_t hlen, const uint8_t *data,
                                     size_t dsize, size_t *size)
{
    uint8_t *f = ckpt_xmalloc(8 + hlen + dsize + 1);
    clg__ckpt_put_le64(f, hlen);
    memcpy(f + 8, header, hlen);
    if (dsize)
        memcpy(f + 8 + hlen, data, dsize);
    *size = 8 + hlen + dsize;
    return f;
}

/* file (a whole image) with its header parsed, edited by fn, printed again
 * and padded with spaces to a multiple of 8; the same data. Its CRC is
 * not sealed: each caller seals it its own way. NULL when the header is
 * not JSON. */
static inline uint8_t *ckpt_rewrite_header(const uint8_t *file, size_t size,
                                           void (*fn)(cJSON *root), size_t *out_size)
{
    *out_size = 0;
    uint64_t hlen = clg__ckpt_get_le64(file);
    char *text = ckpt_xmalloc(hlen + 1);
    memcpy(text, file + 8, hlen);
    text[hlen] = '\0';
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return NULL;
    fn(root);
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!js)
        abort();
    size_t len = strlen(js), padded = (len + 7) / 8 * 8;
    char *header = ckpt_xmalloc(padded);
    memcpy(header, js, len);
    memset(header + len, ' ', padded - len);
    free(js);
    uint8_t *out = ckpt_assemble(header, padded, file + 8 + hlen, size - 8 - hlen, out_size);
    free(header);
    return out;
}

#endif /* CLGRAD_CKPT_TESTUTIL_H */
