/* checkpoint_parse.c - the strict checkpoint parser: validates a whole
 * file image in memory against an expected layout (header length, header
 * CRC, JSON, metadata, configuration, entries, offsets, CRCs, the counters
 * stored twice). Nothing here touches a device, so fuzz/ can drive it
 * alone, with checkpoint_format.c and checkpoint_layout.c. */
#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints store tensors in host order, which must be little-endian (safetensors)"
#endif

/* ------------------------------------------------------------ parser */

#define FAIL(status, ...)                                                                       \
    do {                                                                                        \
        snprintf(err, errlen, __VA_ARGS__);                                                     \
        st = (status);                                                                          \
        goto done;                                                                              \
    } while (0)

/* Strict unsigned decimal: 1 to 20 digits, no sign, no space, no overflow. */
static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Exactly n lowercase or uppercase hex digits after an optional prefix. */
static bool parse_hex32(const char *s, const char *prefix, uint32_t *out)
{
    size_t pl = strlen(prefix);
    if (strncmp(s, prefix, pl) != 0)
        return false;
    s += pl;
    uint32_t v = 0;
    int n = 0;
    for (; *s; s++, n++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (*s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            return false;
        if (n >= 8)
            return false;
        v = (v << 4) | d;
    }
    if (n != 8)
        return false;
    *out = v;
    return true;
}

/* A JSON number that is an exact non-negative integer up to 2^53. */
static bool json_u64(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d <= 9007199254740992.0) || d != floor(d))
        return false;
    *out = (uint64_t)d;
    return true;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct span {
    uint64_t begin, end;
    size_t index;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* "[512, 784]"; at most CLG_MAX_DIMS dims are known, more print as "...". */
static void shape_text(char *out, size_t len, const uint64_t *dims, size_t rank)
{
    snprintf(out, len, "[");
    for (size_t i = 0; i < rank && i < CLG_MAX_DIMS; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    }
    size_t l = strlen(out);
    snprintf(out + l, len - l, "%s]", rank > CLG_MAX_DIMS ? ", ..." : "");
}

/* Validates one tensor entry {"dtype", "shape", "data_offsets"}. */
static clg_status parse_entry(clg_ckpt_entry *e, const cJSON *item, char *err, size_t errlen)
{
    clg_status st = CLG_SUCCESS;
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    if (!cJSON_IsObject(item))
        FAIL(CLG_ERR_CORRUPT_FILE, "entry '%s' is not a JSON object", e->key);
    for (const cJSON *f = item->child; f; f = f->next) {
        const cJSON **slot = NULL;
        if (strcmp(f->string, "dtype") == 0)
            slot = &dtype;
        else if (strcmp(f->string, "shape") == 0)
            slot = &shape;
        else if (strcmp(f->string, "data_offsets") == 0)
            slot = &offsets;
        else
            FAIL(CLG_ERR_CORRUPT_FILE, "entry '%s' has an unknown field '%s'", e->key, f->string);
        if (*slot)
            FAIL(CLG_ERR_CORRUPT_FILE, "entry '%s' has field '%s' twice", e->key, f->string);
        *slot = f;
    }
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets))
        FAIL(CLG_ERR_CORRUPT_FILE,
             "entry '%s' lacks a string \"dtype\", an array \"shape\" or an array "
             "\"data_offsets\"",
             e->key);

    /* Shape: well-formed first (else the file is damaged), then equal. */
    uint64_t dims[CLG_MAX_DIMS];
    size_t rank = 0;
    for (const cJSON *d = shape->child; d; d = d->next) {
        uint64_t v;
        if (!json_u64(d, &v))
            FAIL(CLG_ERR_CORRUPT_FILE, "entry '%s': shape holds something other than a size",
                 e->key);
        if (rank < CLG_MAX_DIMS)
            dims[rank] = v;
        rank++;
    }
    int n_off = 0;
    uint64_t off[2] = {0, 0};
    for (const cJSON *d = offsets->child; d; d = d->next) {
        uint64_t v;
        if (n_off >= 2 || !json_u64(d, &v))
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "entry '%s': data_offsets is not a pair of byte offsets", e->key);
        off[n_off++] = v;
    }
    if (n_off != 2 || off[1] < off[0])
        FAIL(CLG_ERR_CORRUPT_FILE, "entry '%s': data_offsets is not a pair [begin, end] with "
             "begin <= end", e->key);

    const char *want = clg__ckpt_dtype_name(e->dtype);
    if (strcmp(dtype->valuestring, want) != 0)
        FAIL(CLG_ERR_MISMATCH, "tensor '%s' is %.16s in the file but %s in the model", e->key,
             dtype->valuestring, want);
    uint64_t bytes = e->count * clg__ckpt_dtype_size(e->dtype);
    bool same = rank == e->ndim;
    for (size_t i = 0; same && i < rank; i++)
        same = dims[i] == e->dims[i];
    if (!same) {
        char got[128], want_shape[128];
        shape_text(got, sizeof got, dims, rank);
        shape_text(want_shape, sizeof want_shape, e->dims, e->ndim);
        FAIL(CLG_ERR_MISMATCH, "tensor '%s' has shape %s in the file but %s in the model",
             e->key, got, want_shape);
    }
    if (off[1] - off[0] != bytes)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "tensor '%s': data_offsets [%llu, %llu) span %llu bytes but %s[%llu] needs %llu",
             e->key, (unsigned long long)off[0], (unsigned long long)off[1],
             (unsigned long long)(off[1] - off[0]), want, (unsigned long long)e->count,
             (unsigned long long)bytes);
    e->file_begin = off[0];
    e->file_end = off[1];
    e->seen = 1;
done:
    return st;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

clg_status clg__ckpt_parse(const uint8_t *file, size_t size, clg_ckpt_layout *layout,
                           clg_ckpt_parsed *out, char *err, size_t errlen)
{
    clg_status st = CLG_SUCCESS;
    char *text = NULL;
    cJSON *root = NULL;
    const char **meta_sorted = NULL;
    span *order = NULL;
    uint8_t *crc_seen = NULL;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < layout->n; i++) {
        layout->entries[i].seen = 0;
        layout->entries[i].file_begin = layout->entries[i].file_end = 0;
    }

    /* 1. The 8-byte header length and the header itself. */
    if (size < 8)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "truncated: %zu bytes, less than the 8-byte header length", size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | file[i];
    if (hlen > CLG_CKPT_HEADER_MAX)
        FAIL(CLG_ERR_CORRUPT_FILE, "header length %llu exceeds the limit of %llu bytes",
             (unsigned long long)hlen, (unsigned long long)CLG_CKPT_HEADER_MAX);
    if (hlen > size - 8)
        FAIL(CLG_ERR_CORRUPT_FILE, "truncated: header length %llu but only %zu bytes follow",
             (unsigned long long)hlen, size - 8);
    const uint8_t *header = file + 8;

    /* 2. The header CRC, on the raw bytes, before anything reads the JSON
     * (checkpoint.h): a damaged header, or one whose caller metadata was
     * changed, is refused here whatever else it says. */
    if (!clg__ckpt_has_crc_field(header, hlen)) {
        static const char v1[] = "{\"__metadata__\":{\"clgrad.format\":\"clgrad-checkpoint\","
                                 "\"clgrad.version\":\"1\"";
        if (hlen >= sizeof v1 - 1 && memcmp(header, v1, sizeof v1 - 1) == 0)
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "checkpoint format version 1 is not supported (this clgrad reads version %d): "
                 "version 1 headers carry no CRC, so they cannot be verified; load it with the "
                 "clgrad that wrote it, or start the run anew",
                 CLG_CKPT_VERSION);
        if (hlen < CLG_CKPT_HEADER_PREFIX_LEN + 9)
            FAIL(CLG_ERR_CORRUPT_FILE, "header length %llu is too short for a clgrad header",
                 (unsigned long long)hlen);
        FAIL(CLG_ERR_CORRUPT_FILE,
             "not a clgrad checkpoint: the header does not begin with its CRC field "
             "(%s<8 hex digits>\")", CLG_CKPT_HEADER_PREFIX);
    }
    uint32_t header_crc;
    char crc_text[9];
    memcpy(crc_text, header + CLG_CKPT_HEADER_PREFIX_LEN, 8);
    crc_text[8] = '\0';
    /* lowercase only, as written: 'A' is 'a' with bit 5 flipped, and would
     * read as the same digit (the CRC then cannot see the flip) */
    bool upper = false;
    for (const char *c = crc_text; *c; c++)
        upper = upper || (*c >= 'A' && *c <= 'F');
    if (upper || !parse_hex32(crc_text, "", &header_crc))
        FAIL(CLG_ERR_CORRUPT_FILE,
             "the header's CRC field is not 8 lowercase hex digits: damaged header");
    uint32_t header_actual = clg__ckpt_header_crc(file, header, (size_t)hlen);
    if (header_crc != header_actual)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "header CRC-32 mismatch: the header says %08x, its %llu bytes give %08x (the "
             "header, its metadata or its length is damaged)",
             (unsigned)header_crc, (unsigned long long)hlen, (unsigned)header_actual);

    /* 3. The JSON. */
    if (memchr(header, 0, hlen))
        FAIL(CLG_ERR_CORRUPT_FILE, "header contains a NUL byte");
    if (!clg__ckpt_utf8_valid_n(header, hlen))
        FAIL(CLG_ERR_CORRUPT_FILE, "header is not valid UTF-8");
    text = malloc(hlen + 1);
    if (!text)
        FAIL(CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory for a %llu-byte header",
             (unsigned long long)hlen);
    memcpy(text, header, hlen);
    text[hlen] = '\0';
    const char *parse_end = NULL;
    root = cJSON_ParseWithOpts(text, &parse_end, 1);
    if (!root)
        FAIL(CLG_ERR_CORRUPT_FILE, "header is not valid JSON (error at byte %lld of %llu)",
             parse_end ? (long long)(parse_end - text) : -1LL, (unsigned long long)hlen);
    if (!cJSON_IsObject(root))
        FAIL(CLG_ERR_CORRUPT_FILE, "header is not a JSON object");
    const uint64_t data_size = size - 8 - hlen;

    /* 4. __metadata__: exactly one, a map of strings, with our format. */
    const cJSON *meta = NULL;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") != 0)
            continue;
        if (meta)
            FAIL(CLG_ERR_CORRUPT_FILE, "header has __metadata__ twice");
        meta = c;
    }
    if (!meta)
        FAIL(CLG_ERR_CORRUPT_FILE, "not a clgrad checkpoint: the header has no __metadata__");
    if (!cJSON_IsObject(meta))
        FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ is not a JSON object");
    size_t n_meta = 0, n_user = 0;
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (!cJSON_IsString(m))
            FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ value of '%.200s' is not a string",
                 m->string);
        n_meta++;
    }
    meta_sorted = malloc((n_meta ? n_meta : 1) * sizeof *meta_sorted);
    if (!meta_sorted)
        FAIL(CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    n_meta = 0;
    for (const cJSON *m = meta->child; m; m = m->next)
        meta_sorted[n_meta++] = m->string;
    qsort(meta_sorted, n_meta, sizeof *meta_sorted, cmp_str_ptr);
    for (size_t i = 1; i < n_meta; i++)
        if (strcmp(meta_sorted[i - 1], meta_sorted[i]) == 0)
            FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ has key '%.200s' twice", meta_sorted[i]);

    const char *format = NULL, *version = NULL, *optimizer = NULL, *micro = NULL,
               *weight_sum = NULL, *cycles = NULL, *micro_total = NULL, *updates = NULL,
               *skipped = NULL, *skipped_micro = NULL;
    const char *saved_config[CLG_CKPT_MAX_CONFIG] = {NULL};
    struct {
        const char *key;
        const char **value;
    } known[] = {
        {"clgrad.format", &format},           {"clgrad.version", &version},
        {"clgrad.optimizer", &optimizer},     {"clgrad.micro", &micro},
        {"clgrad.weight_sum", &weight_sum},   {"clgrad.cycles", &cycles},
        {"clgrad.micro_total", &micro_total}, {"clgrad.updates", &updates},
        {"clgrad.skipped_updates", &skipped}, {"clgrad.skipped_micro_steps", &skipped_micro},
        {"clgrad.header_crc32", NULL}, /* checked first, on the raw bytes */
    };
    const size_t n_known = sizeof known / sizeof known[0];
    const size_t prefix_len = strlen(CLG_CKPT_META_PREFIX);
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (strncmp(m->string, CLG_CKPT_META_PREFIX, prefix_len) != 0) {
            n_user++;
            continue;
        }
        if (strncmp(m->string, "clgrad.crc32.", 13) == 0)
            continue; /* checked after the entries */
        size_t k = 0;
        while (k < n_known && strcmp(m->string, known[k].key) != 0)
            k++;
        if (k < n_known) {
            if (known[k].value)
                *known[k].value = m->valuestring;
            continue;
        }
        size_t c = 0;
        while (c < clg__ckpt_n_config_fields && strcmp(m->string + prefix_len, clg__ckpt_config_fields[c]) != 0)
            c++;
        if (c == clg__ckpt_n_config_fields)
            FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ has an unknown clgrad key '%.200s'",
                 m->string);
        saved_config[c] = m->valuestring;
    }
    if (!format || strcmp(format, CLG_CKPT_FORMAT) != 0)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "not a clgrad checkpoint: __metadata__ clgrad.format is %s%.64s%s, not '"
             CLG_CKPT_FORMAT "'",
             format ? "'" : "", format ? format : "missing", format ? "'" : "");
    uint64_t ver;
    if (!version || !parse_u64(version, &ver))
        FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ clgrad.version is missing or not a number");
    if (ver != CLG_CKPT_VERSION)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "checkpoint format version %llu is not supported (this clgrad reads version %d)",
             (unsigned long long)ver, CLG_CKPT_VERSION);
    uint64_t v_micro, v_cycles, v_total, v_updates, v_skipped, v_skipped_micro;
    uint32_t v_wsum;
    if (!optimizer || !micro || !weight_sum || !cycles || !micro_total || !updates ||
        !skipped || !skipped_micro)
        FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ lacks one of clgrad.optimizer, clgrad.micro, "
             "clgrad.weight_sum, clgrad.cycles, clgrad.micro_total, clgrad.updates, "
             "clgrad.skipped_updates, clgrad.skipped_micro_steps");
    if (!parse_u64(micro, &v_micro) || v_micro > UINT32_MAX)
        FAIL(CLG_ERR_CORRUPT_FILE, "clgrad.micro '%.32s' is not a micro-step count", micro);
    if (!parse_u64(cycles, &v_cycles) || !parse_u64(micro_total, &v_total))
        FAIL(CLG_ERR_CORRUPT_FILE, "clgrad.cycles or clgrad.micro_total is not a count");
    if (!parse_u64(updates, &v_updates) || v_updates > UINT32_MAX ||
        !parse_u64(skipped, &v_skipped) || v_skipped > UINT32_MAX ||
        !parse_u64(skipped_micro, &v_skipped_micro) || v_skipped_micro > UINT32_MAX)
        FAIL(CLG_ERR_CORRUPT_FILE, "clgrad.updates, clgrad.skipped_updates or "
             "clgrad.skipped_micro_steps is not a 32-bit count (the step block's width)");
    if (!parse_hex32(weight_sum, "0x", &v_wsum))
        FAIL(CLG_ERR_CORRUPT_FILE, "clgrad.weight_sum '%.32s' is not 0x + 8 hex digits",
             weight_sum);
    if (strcmp(optimizer, layout->optimizer) != 0)
        FAIL(CLG_ERR_MISMATCH, "checkpoint is for optimizer '%.32s', the model uses '%s'",
             optimizer, layout->optimizer);
    /* The configuration the saved state depends on, field by field, in
     * config_fields' order (the loss-scale mode before its parameters). */
    for (size_t c = 0; c < clg__ckpt_n_config_fields; c++) {
        const char *saved = saved_config[c], *live = clg__ckpt_layout_setting(layout, clg__ckpt_config_fields[c]);
        if (!saved)
            saved = clg__ckpt_config_before(clg__ckpt_config_fields[c]);
        if (!saved && !live)
            continue;
        bool same = saved && live && clg__ckpt_config_same(clg__ckpt_config_fields[c], saved, live);
        if (!same)
            FAIL(CLG_ERR_MISMATCH,
                 "configuration mismatch: %s was %s%.32s%s when the checkpoint was saved, the "
                 "model has %s%s%s",
                 clg__ckpt_config_fields[c], saved ? "'" : "", saved ? saved : "not set", saved ? "'" : "",
                 live ? "'" : "", live ? live : "none (not used)", live ? "'" : "");
    }

    /* 5. Tensor entries: all known to the model, well-formed, matching. */
    for (const cJSON *c = root->child; c; c = c->next) {
        if (c == meta)
            continue;
        long idx = clg__ckpt_layout_find(layout, c->string);
        if (idx < 0)
            FAIL(CLG_ERR_MISMATCH, "the file has tensor '%.200s', which the model lacks",
                 c->string);
        clg_ckpt_entry *e = &layout->entries[idx];
        if (e->seen)
            FAIL(CLG_ERR_CORRUPT_FILE, "the header has tensor '%.200s' twice", c->string);
        st = parse_entry(e, c, err, errlen);
        if (st != CLG_SUCCESS)
            goto done;
    }
    for (size_t i = 0; i < layout->n; i++)
        if (!layout->entries[i].seen)
            FAIL(CLG_ERR_MISMATCH, "model tensor '%s' is not in the file",
                 layout->entries[i].key);

    /* 6. Offsets: inside the data, contiguous from 0 to its end. */
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        if (e->file_end > data_size)
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "tensor '%s' at data_offsets [%llu, %llu) lies beyond the end of the data "
                 "(%llu bytes): truncated file",
                 e->key, (unsigned long long)e->file_begin, (unsigned long long)e->file_end,
                 (unsigned long long)data_size);
    }
    order = malloc((layout->n ? layout->n : 1) * sizeof *order);
    if (!order)
        FAIL(CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (size_t i = 0; i < layout->n; i++)
        order[i] = (span){layout->entries[i].file_begin, layout->entries[i].file_end, i};
    qsort(order, layout->n, sizeof *order, span_cmp);
    uint64_t pos = 0;
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[order[i].index];
        if (e->file_begin < pos)
            FAIL(CLG_ERR_CORRUPT_FILE, "tensor '%s' at [%llu, %llu) overlaps the one before it",
                 e->key, (unsigned long long)e->file_begin, (unsigned long long)e->file_end);
        if (e->file_begin > pos)
            FAIL(CLG_ERR_CORRUPT_FILE, "hole in the data: bytes [%llu, %llu) before tensor '%s' "
                 "belong to no tensor",
                 (unsigned long long)pos, (unsigned long long)e->file_begin, e->key);
        pos = e->file_end;
    }
    if (pos != data_size)
        FAIL(CLG_ERR_CORRUPT_FILE, "%llu trailing bytes after the last tensor",
             (unsigned long long)(data_size - pos));
    const uint8_t *data = header + hlen;

    /* 7. A CRC-32 for every tensor, and only for those; then verify. */
    crc_seen = calloc(layout->n ? layout->n : 1, 1);
    if (!crc_seen)
        FAIL(CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (strncmp(m->string, "clgrad.crc32.", 13) != 0)
            continue;
        long idx = clg__ckpt_layout_find(layout, m->string + 13);
        if (idx < 0)
            FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ has a CRC for '%.200s', a tensor not in "
                 "the file", m->string + 13);
        uint32_t crc;
        if (!parse_hex32(m->valuestring, "", &crc))
            FAIL(CLG_ERR_CORRUPT_FILE, "%.200s '%.32s' is not 8 hex digits", m->string,
                 m->valuestring);
        layout->entries[idx].crc = crc;
        crc_seen[idx] = 1;
    }
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        if (!crc_seen[i])
            FAIL(CLG_ERR_CORRUPT_FILE, "__metadata__ has no clgrad.crc32.%s", e->key);
        uint32_t crc = clg__crc32(0, data + e->file_begin, (size_t)(e->file_end - e->file_begin));
        if (crc != e->crc)
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "CRC-32 mismatch in tensor '%s': the header says %08x, the data gives %08x",
                 e->key, (unsigned)e->crc, (unsigned)crc);
    }

    /* 8. The counters stored twice agree. Each CRC above holds for its own
     * bytes; these catch a writer or an editor that changed one copy and
     * not the other (and make a forged file harder to get right). */
    uint32_t words[CLG_SB_WORDS] = {0};
    long sb = clg__ckpt_layout_find(layout, CLG_CKPT_STEP_BLOCK_KEY);
    bool have_sb = sb >= 0 && layout->entries[sb].count == CLG_SB_WORDS &&
                   layout->entries[sb].dtype == CLG_CKPT_I32;
    if (have_sb)
        for (int w = 0; w < CLG_SB_WORDS; w++)
            words[w] = le32(data + layout->entries[sb].file_begin + 4 * w);
    if (have_sb) {
        const struct {
            const char *key;
            uint64_t meta;
            uint32_t block;
            const char *word;
        } twice[] = {
            {"clgrad.updates", v_updates, words[CLG_SB_T], "T (updates applied)"},
            {"clgrad.skipped_updates", v_skipped, words[CLG_SB_SKIPPED], "SKIPPED"},
            {"clgrad.skipped_micro_steps", v_skipped_micro, words[CLG_SB_SKIPPED_MICRO],
             "SKIPPED_MICRO"},
        };
        for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++)
            if (twice[i].meta != twice[i].block)
                FAIL(CLG_ERR_CORRUPT_FILE,
                     "counters disagree: %s is %llu in the metadata but the step block's %s "
                     "is %u",
                     twice[i].key, (unsigned long long)twice[i].meta, twice[i].word,
                     (unsigned)twice[i].block);
        /* Every completed cycle either applied or skipped its update; the
         * step block counts both in 32 bits. */
        if ((uint32_t)v_cycles != (uint32_t)(v_updates + v_skipped))
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "counters disagree: clgrad.cycles is %llu but clgrad.updates %llu + "
                 "clgrad.skipped_updates %llu is %llu",
                 (unsigned long long)v_cycles, (unsigned long long)v_updates,
                 (unsigned long long)v_skipped, (unsigned long long)(v_updates + v_skipped));
        /* Skip-micro mode counts the cycle's finite micro-steps on the
         * device: never more than the host's count of the cycle. */
        if (words[CLG_SB_MICRO_COUNT] > v_micro)
            FAIL(CLG_ERR_CORRUPT_FILE,
                 "counters disagree: the step block counts %u finite micro-steps in the "
                 "current cycle but clgrad.micro is %llu",
                 (unsigned)words[CLG_SB_MICRO_COUNT], (unsigned long long)v_micro);
    }
    /* Every cycle took at least one micro-step, and so did every skipped
     * micro-step and every one of the current cycle. */
    if (v_cycles > v_total || v_micro > v_total - v_cycles || v_skipped_micro > v_total)
        FAIL(CLG_ERR_CORRUPT_FILE,
             "counters disagree: clgrad.micro_total is %llu, less than clgrad.cycles %llu + "
             "clgrad.micro %llu, or than clgrad.skipped_micro_steps %llu",
             (unsigned long long)v_total, (unsigned long long)v_cycles,
             (unsigned long long)v_micro, (unsigned long long)v_skipped_micro);

    /* 9. Everything checked out: fill the result. */
    out->state.micro = (unsigned)v_micro;
    memcpy(&out->state.weight_sum, &v_wsum, sizeof v_wsum);
    out->state.cycles = v_cycles;
    out->state.micro_total = v_total;
    memcpy(out->state.step_block, words, sizeof words);
    out->data = data;
    out->meta_keys = malloc((n_user ? n_user : 1) * sizeof *out->meta_keys);
    out->meta_values = malloc((n_user ? n_user : 1) * sizeof *out->meta_values);
    if (!out->meta_keys || !out->meta_values)
        FAIL(CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (strncmp(m->string, CLG_CKPT_META_PREFIX, strlen(CLG_CKPT_META_PREFIX)) == 0)
            continue;
        out->meta_keys[out->n_meta] = m->string;
        out->meta_values[out->n_meta] = m->valuestring;
        out->n_meta++;
    }
    out->json = root;
    root = NULL;

done:
    free(text);
    free(meta_sorted);
    free(order);
    free(crc_seen);
    cJSON_Delete(root);
    if (st != CLG_SUCCESS) {
        free(out->meta_keys);
        free(out->meta_values);
        memset(out, 0, sizeof *out);
    }
    return st;
}

void clg__ckpt_parsed_free(clg_ckpt_parsed *parsed)
{
    if (!parsed)
        return;
    free(parsed->meta_keys);
    free(parsed->meta_values);
    cJSON_Delete(parsed->json);
    memset(parsed, 0, sizeof *parsed);
}

#undef FAIL