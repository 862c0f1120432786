/* idx.h - reader of IDX files (the MNIST / Fashion-MNIST container): a
 * parser of an in-memory image that never trusts its input, and a loader of
 * gzip-compressed (or plain) files built on it. */
#ifndef TRAIN_IDX_H
#define TRAIN_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IDX_MAX_DIMS 4
/* Largest payload the loader accepts (a guard against decompression bombs). */
#define IDX_MAX_BYTES ((size_t)1 << 31)

typedef struct idx_file {
    int ndims;                   /* 1..IDX_MAX_DIMS */
    uint32_t dims[IDX_MAX_DIMS]; /* dims[0] is the item count */
    size_t count;                /* dims[0] */
    size_t item_size;            /* product of dims[1..], 1 for labels */
    const uint8_t *data;         /* count * item_size unsigned bytes */
    uint8_t *buffer;             /* owned storage (loader only), or NULL */
} idx_file;

/* Parses data[0..n) as an IDX file of unsigned bytes (type 0x08). On
 * success returns 0 and out->data points into data (no copy, out->buffer is
 * NULL). On failure returns -1, writes a one-line reason into err (which may
 * be NULL) and leaves out zeroed. The payload must fill the rest of the input
 * exactly: a short one is reported as truncated, a longer one as trailing
 * bytes. */
int idx_parse(const uint8_t *data, size_t n, idx_file *out, char *err, size_t errlen);

/* Reads path (gzip-compressed or plain, through zlib) and parses it. Errors
 * name the file: missing, unreadable, corrupt gzip stream, or what
 * idx_parse reports. Free with idx_free. */
int idx_load(const char *path, idx_file *out, char *err, size_t errlen);

void idx_free(idx_file *f);

#endif /* TRAIN_IDX_H */
