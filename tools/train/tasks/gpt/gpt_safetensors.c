/* gpt_safetensors.c - the safetensors reader and writer (see
 * gpt_safetensors.h). */
#define _POSIX_C_SOURCE 200809L
#include "gpt_safetensors.h"
#include "errmsg.h"
#include "input_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors stores little-endian values; this reader copies them as the host's"
#endif

/* The format's dtypes and their sizes (the reader must know every one to
 * check the offsets of tensors it will skip, e.g. a BOOL attn.bias). */
static const struct {
    const char *name;
    unsigned size;
} dtypes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
              {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
              {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};

static unsigned dtype_size(const char *name)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (!strcmp(dtypes[i].name, name))
            return dtypes[i].size;
    return 0;
}

/* A JSON number that is an exact non-negative integer up to 2^53. */
static int json_u64(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item))
        return 0;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d <= 9007199254740992.0) || d != floor(d))
        return 0;
    *out = (uint64_t)d;
    return 1;
}

/* Reads exactly n bytes at off; 0, or -1 with errno (0: the file ended). */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

void st_close(st_file *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->e[i].name);
    free(f->e);
    free(f->path);
    if (f->fd >= 0)
        close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

uint64_t st_numel(const st_entry *e)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < e->ndim; d++)
        n *= e->shape[d];
    return n;
}

/* One header entry into e; 0, or -1 with the reason in why. */
static int parse_entry(const cJSON *item, st_entry *e, char *why, size_t wlen)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsObject(item) || !cJSON_IsString(dt) || !cJSON_IsArray(shape) ||
        !cJSON_IsArray(offs))
        return errmsg_set(why, wlen, "is not an object with dtype, shape and data_offsets");
    if (strlen(dt->valuestring) >= sizeof e->dtype || !(e->esize = dtype_size(dt->valuestring)))
        return errmsg_set(why, wlen, "has the unknown dtype '%.16s'", dt->valuestring);
    strcpy(e->dtype, dt->valuestring);
    int nd = cJSON_GetArraySize(shape);
    if (nd > ST_MAX_DIMS)
        return errmsg_set(why, wlen, "has %d dimensions, more than %d", nd, ST_MAX_DIMS);
    e->ndim = (unsigned)nd;
    /* the product bounded by 2^53 on the way, so that it cannot wrap */
    uint64_t numel = 1;
    for (int d = 0; d < nd; d++) {
        if (!json_u64(cJSON_GetArrayItem(shape, d), &e->shape[d]))
            return errmsg_set(why, wlen, "has a shape that is not a list of sizes");
        if (e->shape[d] && numel > (UINT64_C(1) << 53) / e->shape[d])
            return errmsg_set(why, wlen, "has a shape too large");
        numel *= e->shape[d];
    }
    if (cJSON_GetArraySize(offs) != 2 || !json_u64(cJSON_GetArrayItem(offs, 0), &e->begin) ||
        !json_u64(cJSON_GetArrayItem(offs, 1), &e->end) || e->end < e->begin)
        return errmsg_set(why, wlen, "has data_offsets that are not [begin, end]");
    if (e->end - e->begin != numel * e->esize)
        return errmsg_set(
            why, wlen, "has data_offsets [%llu, %llu] (%llu bytes) for %llu elements of %s",
            (unsigned long long)e->begin, (unsigned long long)e->end,
            (unsigned long long)(e->end - e->begin), (unsigned long long)numel, e->dtype);
    return 0;
}

static int by_begin(const void *a, const void *b)
{
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The data's byte ranges cover [0, data_len) exactly, without a gap or an
 * overlap (zero-sized tensors aside). */
static int check_cover(st_file *f, char *err, size_t errlen)
{
    st_entry **order = malloc((f->n ? f->n : 1) * sizeof *order);
    if (!order)
        return errmsg_set(err, errlen, "%s: out of host memory", f->path);
    for (size_t i = 0; i < f->n; i++)
        order[i] = &f->e[i];
    qsort(order, f->n, sizeof *order, by_begin);
    uint64_t at = 0;
    int rc = 0;
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        const st_entry *e = order[i];
        if (e->begin == e->end)
            continue;
        if (e->begin != at)
            rc = errmsg_set(err, errlen, "%s: tensor '%s' starts at data byte %llu, %s", f->path,
                            e->name, (unsigned long long)e->begin,
                            e->begin < at ? "inside the tensor before it"
                                          : "leaving a gap after the tensor before it");
        at = e->end;
    }
    free(order);
    if (rc == 0 && at != f->data_len)
        rc = errmsg_set(err, errlen,
                        "%s: the header's tensors take %llu bytes of data, the file has %llu "
                        "after its header%s",
                        f->path, (unsigned long long)at, (unsigned long long)f->data_len,
                        at > f->data_len ? " (truncated)" : "");
    return rc;
}

static int parse_header(st_file *f, const char *json, size_t len, char *err, size_t errlen)
{
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return errmsg_set(err, errlen, "%s: its header is not a JSON object", f->path);
    }
    int n = cJSON_GetArraySize(root), rc = 0;
    f->e = calloc(n ? (size_t)n : 1, sizeof *f->e);
    if (!f->e)
        rc = errmsg_set(err, errlen, "%s: out of host memory", f->path);
    for (const cJSON *it = root->child; it && rc == 0; it = it->next) {
        char why[160], name[ERRMSG_ESCAPED_SIZE(64)];
        if (!strcmp(it->string, "__metadata__")) {
            if (!cJSON_IsObject(it))
                rc = errmsg_set(err, errlen, "%s: its __metadata__ is not an object", f->path);
            continue;
        }
        for (size_t j = 0; j < f->n && rc == 0; j++)
            if (!strcmp(f->e[j].name, it->string))
                rc = errmsg_set(err, errlen, "%s: tensor '%s' is in the header twice", f->path,
                                errmsg_escape(it->string, name, sizeof name));
        if (rc == 0 && parse_entry(it, &f->e[f->n], why, sizeof why) != 0)
            rc = errmsg_set(err, errlen, "%s: tensor '%s' %s", f->path,
                            errmsg_escape(it->string, name, sizeof name), why);
        if (rc == 0 && !(f->e[f->n++].name = strdup(it->string)))
            rc = errmsg_set(err, errlen, "%s: out of host memory", f->path);
    }
    cJSON_Delete(root);
    return rc == 0 ? check_cover(f, err, errlen) : rc;
}

int st_open(st_file *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    char why[256];
    size_t size = 0;
    f->fd = input_open(path, UINT64_MAX, &size, why, sizeof why);
    if (f->fd < 0)
        return errmsg_set(err, errlen, "%s: %s", path, why);
    if (!(f->path = strdup(path))) {
        st_close(f);
        return errmsg_set(err, errlen, "%s: out of host memory", path);
    }
    uint8_t b[8];
    if (size < 8 || read_at(f->fd, b, 8, 0) != 0) {
        st_close(f);
        return errmsg_set(err, errlen, "%s: %zu bytes, too short for a safetensors file", path,
                          size);
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | b[i];
    if (n < 2 || n > ST_MAX_HEADER || n > size - 8) {
        st_close(f);
        return errmsg_set(err, errlen, "%s: its header length %llu is %s (the file has %zu bytes)",
                          path, (unsigned long long)n,
                          n > size - 8 ? "past the end of the file (truncated?)" : "out of range",
                          size);
    }
    char *json = malloc((size_t)n);
    int rc = -1;
    if (!json)
        errmsg_set(err, errlen, "%s: out of host memory for its %llu-byte header", path,
                   (unsigned long long)n);
    else if (read_at(f->fd, json, (size_t)n, 8) != 0)
        errmsg_set(err, errlen, "%s: reading its header: %s", path,
                   errno ? strerror(errno) : "the file ended");
    else {
        f->data_start = 8 + n;
        f->data_len = size - f->data_start;
        rc = parse_header(f, json, (size_t)n, err, errlen);
    }
    free(json);
    if (rc != 0)
        st_close(f);
    return rc;
}

/* IEEE half to float, exactly (every half is a float). */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, bits;
    if (exp == 31)
        bits = sign | 0x7f800000u | man << 13; /* inf, NaN */
    else if (exp)
        bits = sign | (exp + 112) << 23 | man << 13;
    else if (!man)
        bits = sign; /* zero */
    else {           /* subnormal: normalize */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 1024));
        bits = sign | (uint32_t)(112 - e) << 23 | (man & 1023) << 13;
    }
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

int st_read_floats(const st_file *f, const st_entry *e, uint64_t first, uint64_t count, float *out,
                   char *err, size_t errlen)
{
    int f32 = !strcmp(e->dtype, "F32"), f16 = !strcmp(e->dtype, "F16"),
        bf16 = !strcmp(e->dtype, "BF16");
    if (!f32 && !f16 && !bf16)
        return errmsg_set(err, errlen, "%s: tensor '%s' is %s; expected F32, F16 or BF16", f->path,
                          e->name, e->dtype);
    if (first + count > st_numel(e))
        return errmsg_set(err, errlen, "%s: tensor '%s': elements past its end", f->path, e->name);
    uint64_t off = f->data_start + e->begin + first * e->esize;
    /* 16-bit values are read into the back half of out, then widened
     * from the front, so that no element is overwritten before it is read */
    void *raw = f32 ? (void *)out : (void *)(out + count / 2);
    if (read_at(f->fd, raw, (size_t)(count * e->esize), off) != 0)
        return errmsg_set(err, errlen, "%s: reading tensor '%s': %s", f->path, e->name,
                          errno ? strerror(errno) : "the file ended (it shrank?)");
    const uint16_t *h = raw;
    for (uint64_t i = 0; !f32 && i < count; i++) {
        uint16_t v = h[i];
        if (bf16) {
            uint32_t bits = (uint32_t)v << 16;
            memcpy(&out[i], &bits, 4);
        } else
            out[i] = half_to_float(v);
    }
    return 0;
}

int st_write_header(atomic_file *a, const st_desc *t, size_t n, char *err, size_t errlen)
{
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
    int ok = root && meta && cJSON_AddStringToObject(meta, "format", "pt");
    uint64_t at = 0;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
        cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
        cJSON *offs = e ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        ok = e && shape && offs && cJSON_AddStringToObject(e, "dtype", "F32");
        uint64_t numel = 1;
        for (unsigned d = 0; ok && d < t[i].ndim; d++) {
            numel *= t[i].shape[d];
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        }
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)at)) &&
             cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(at + 4 * numel)));
        at += 4 * numel;
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json)
        return errmsg_set(err, errlen, "%s: out of host memory for its header", a->path);
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = "        ";
    atomic_file_write(a, b, 8);
    atomic_file_write(a, json, len);
    atomic_file_write(a, spaces, padded - len);
    free(json);
    return 0; /* a failed write is reported by atomic_file_commit */
}
