/* idx.c - IDX parser and gzip loader (see idx.h). */
#include "idx.h"
#include "input_file.h"
#include "errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int idx_parse(const uint8_t *data, size_t n, idx_file *out, char *err, size_t errlen)
{
    if (!out) {
        errmsg_set(err, errlen, "no output");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (!data && n > 0) {
        errmsg_set(err, errlen, "no data");
        return -1;
    }
    if (n < 4) {
        errmsg_set(err, errlen, "truncated: %zu bytes, an IDX header needs at least 4", n);
        return -1;
    }
    if (data[0] != 0 || data[1] != 0) {
        errmsg_set(err, errlen, "wrong magic 0x%02x%02x%02x%02x: not an IDX file", data[0], data[1],
                data[2], data[3]);
        return -1;
    }
    if (data[2] != 0x08) {
        errmsg_set(err, errlen, "unsupported element type 0x%02x (only unsigned bytes, 0x08)", data[2]);
        return -1;
    }
    int ndims = data[3];
    if (ndims < 1 || ndims > IDX_MAX_DIMS) {
        errmsg_set(err, errlen, "wrong magic: %d dimensions (expected 1..%d)", ndims, IDX_MAX_DIMS);
        return -1;
    }
    size_t header = 4 + 4 * (size_t)ndims;
    if (n < header) {
        errmsg_set(err, errlen, "truncated header: %zu bytes, %d dimensions need %zu", n, ndims, header);
        return -1;
    }
    idx_file f = {0};
    f.ndims = ndims;
    size_t item = 1;
    for (int d = 0; d < ndims; d++) {
        f.dims[d] = be32(data + 4 + 4 * d);
        if (d > 0) {
            if (f.dims[d] == 0) {
                errmsg_set(err, errlen, "dimension %d is 0", d);
                return -1;
            }
            if (item > IDX_MAX_BYTES / f.dims[d]) {
                errmsg_set(err, errlen, "item size overflows (dimension %d = %u)", d, f.dims[d]);
                return -1;
            }
            item *= f.dims[d];
        }
    }
    f.count = f.dims[0];
    f.item_size = item;
    if (f.count > IDX_MAX_BYTES / item) {
        errmsg_set(err, errlen, "wrong count: %zu items of %zu bytes exceed the %zu-byte limit", f.count,
                item, (size_t)IDX_MAX_BYTES);
        return -1;
    }
    size_t payload = f.count * item;
    size_t have = n - header;
    if (have < payload) {
        errmsg_set(err, errlen,
                "truncated: header says %zu items of %zu bytes (%zu bytes), file holds %zu "
                "(%zu whole items)",
                f.count, item, payload, have, have / item);
        return -1;
    }
    if (have > payload) {
        errmsg_set(err, errlen,
                "wrong count: header says %zu items (%zu bytes) but %zu bytes follow (%zu trailing)",
                f.count, payload, have, have - payload);
        return -1;
    }
    f.data = data + header;
    *out = f;
    return 0;
}

int idx_load(const char *path, idx_file *out, char *err, size_t errlen)
{
    if (!out) {
        errmsg_set(err, errlen, "%s: no output", path ? path : "(null)");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (!path) {
        errmsg_set(err, errlen, "no path");
        return -1;
    }
    /* The descriptor that was checked is the one read (gzdopen): a FIFO or
     * a device is refused before it can block or stream forever. */
    char why[256];
    size_t size;
    int fd = input_open(path, UINT64_MAX, &size, why, sizeof why); /* zlib output is bounded below */
    if (fd < 0) {
        errmsg_set(err, errlen, "%s: %s", path, why);
        return -1;
    }
    errno = 0;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        int e = errno;
        close(fd);
        errmsg_set(err, errlen, "%s: cannot open%s%s", path, e ? ": " : "", e ? strerror(e) : "");
        return -1;
    }
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        gzclose(gz);
        errmsg_set(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= IDX_MAX_BYTES) {
                free(buf);
                gzclose(gz);
                errmsg_set(err, errlen, "%s: larger than %zu bytes uncompressed", path,
                        (size_t)IDX_MAX_BYTES);
                return -1;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                gzclose(gz);
                errmsg_set(err, errlen, "%s: out of host memory", path);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - len;
        if (want > (1u << 30))
            want = 1u << 30;
        int got = gzread(gz, buf + len, (unsigned)want);
        if (got < 0) {
            int zerr = 0;
            const char *msg = gzerror(gz, &zerr);
            errmsg_set(err, errlen, "%s: corrupt gzip data: %s", path,
                    zerr == Z_ERRNO ? strerror(errno) : msg);
            free(buf);
            gzclose(gz);
            return -1;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    /* zlib reports a stream cut short only through gzerror/gzclose. */
    int zerr = 0;
    const char *msg = gzerror(gz, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END) {
        errmsg_set(err, errlen, "%s: corrupt or truncated gzip data: %s", path, msg);
        free(buf);
        gzclose(gz);
        return -1;
    }
    int rc = gzclose(gz);
    if (rc != Z_OK) {
        errmsg_set(err, errlen, "%s: corrupt or truncated gzip data (zlib error %d)", path, rc);
        free(buf);
        return -1;
    }
    if (idx_parse(buf, len, out, why, sizeof why) != 0) {
        errmsg_set(err, errlen, "%s: %s", path, why);
        free(buf);
        return -1;
    }
    out->buffer = buf;
    return 0;
}

void idx_free(idx_file *f)
{
    if (!f)
        return;
    free(f->buffer);
    memset(f, 0, sizeof *f);
}
