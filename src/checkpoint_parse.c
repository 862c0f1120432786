/* checkpoint_parse.c - the strict checkpoint parser: validates a whole
 * file image in memory against an expected layout (header length, header
 * CRC, JSON, metadata, configuration, entries, offsets, CRCs, the counters
 * stored twice, and last the values, checkpoint_values.c). Nothing here
 * touches a device, so fuzz/ can drive it alone, with checkpoint_format.c,
 * checkpoint_layout.c and checkpoint_values.c. */
#include "checkpoint.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints store tensors in host order, which must be little-endian (safetensors)"
#endif

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

/* ------------------------------------------------------------ the parse's state */

/* What the checks have found so far, handed from one to the next. */
typedef struct parse_state {
    const uint8_t *file;
    size_t size;
    clg_ckpt_layout *layout;
    clg_ckpt_parsed *out;
    char *err;
    size_t errlen;
    uint64_t hlen; /* check_header_length */
    const uint8_t *header;
    char *text;  /* check_header_json: the header, NUL-terminated, owned */
    cJSON *root; /* owned until the result takes it */
    uint64_t data_size;
    const cJSON *meta; /* check_metadata_map */
    size_t n_user;     /* check_clgrad_keys_known: the caller's entries */
    /* clgrad's values as the file gives them (pointing into root) */
    const char *format, *version, *optimizer, *micro, *weight_sum, *cycles, *micro_total, *updates,
        *skipped, *skipped_micro;
    const char *saved_config[CLG_CKPT_MAX_CONFIG];
    /* check_counters_readable */
    uint64_t v_micro, v_cycles, v_total, v_updates, v_skipped, v_skipped_micro;
    uint32_t v_wsum;
    const uint8_t *data;          /* check_offsets_contiguous */
    uint32_t words[CLG_SB_WORDS]; /* check_counters_agree: the step block */
} parse_state;

static clg_status fail(parse_state *p, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the message and returns status: each check ends in `return fail(...)`. */
static clg_status fail(parse_state *p, clg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return status;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ------------------------------------------------------------ the raw header */

/* 1. The 8-byte header length, and the header within the file. */
static clg_status check_header_length(parse_state *p)
{
    if (p->size < 8)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "truncated: %zu bytes, less than the 8-byte header length", p->size);
    p->hlen = clg__ckpt_get_le64(p->file);
    if (p->hlen > CLG_CKPT_HEADER_MAX)
        return fail(p, CLG_ERR_CORRUPT_FILE, "header length %llu exceeds the limit of %llu bytes",
                    (unsigned long long)p->hlen, (unsigned long long)CLG_CKPT_HEADER_MAX);
    if (p->hlen > p->size - 8)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "truncated: header length %llu but only %zu bytes follow",
                    (unsigned long long)p->hlen, p->size - 8);
    p->header = p->file + 8;
    return CLG_SUCCESS;
}

/* Why a header without the CRC field is refused: a version 1 file, a
 * header too short for the field, or not a clgrad header. */
static clg_status refuse_header_without_crc(parse_state *p)
{
    static const char v1[] = "{\"__metadata__\":{\"clgrad.format\":\"clgrad-checkpoint\","
                             "\"clgrad.version\":\"1\"";
    if (p->hlen >= sizeof v1 - 1 && memcmp(p->header, v1, sizeof v1 - 1) == 0)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "checkpoint format version 1 is not supported (this clgrad reads version "
                    "%d): version 1 headers carry no CRC, so they cannot be verified; load it "
                    "with the clgrad that wrote it, or start the run anew",
                    CLG_CKPT_VERSION);
    if (p->hlen < CLG_CKPT_HEADER_PREFIX_LEN + 9)
        return fail(p, CLG_ERR_CORRUPT_FILE, "header length %llu is too short for a clgrad header",
                    (unsigned long long)p->hlen);
    return fail(p, CLG_ERR_CORRUPT_FILE,
                "not a clgrad checkpoint: the header does not begin with its CRC field "
                "(%s<8 hex digits>\")",
                CLG_CKPT_HEADER_PREFIX);
}

/* 2. The header CRC, on the raw bytes, before anything reads the JSON
 * (checkpoint_format.h): a damaged header, or one whose caller metadata was
 * changed, is refused here whatever else it says. */
static clg_status check_header_crc(parse_state *p)
{
    if (!clg__ckpt_has_crc_field(p->header, p->hlen))
        return refuse_header_without_crc(p);
    uint32_t header_crc;
    char crc_text[9];
    memcpy(crc_text, p->header + CLG_CKPT_HEADER_PREFIX_LEN, 8);
    crc_text[8] = '\0';
    /* lowercase only, as written: 'A' is 'a' with bit 5 flipped, and would
     * read as the same digit (the CRC then cannot see the flip) */
    bool upper = false;
    for (const char *c = crc_text; *c; c++)
        upper = upper || (*c >= 'A' && *c <= 'F');
    if (upper || !parse_hex32(crc_text, "", &header_crc))
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "the header's CRC field is not 8 lowercase hex digits: damaged header");
    uint32_t header_actual = clg__ckpt_header_crc(p->file, p->header, (size_t)p->hlen);
    if (header_crc != header_actual)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "header CRC-32 mismatch: the header says %08x, its %llu bytes give %08x "
                    "(the header, its metadata or its length is damaged)",
                    (unsigned)header_crc, (unsigned long long)p->hlen, (unsigned)header_actual);
    return CLG_SUCCESS;
}

/* 3. The JSON: UTF-8 text without NUL, one object. */
static clg_status check_header_json(parse_state *p)
{
    if (memchr(p->header, 0, p->hlen))
        return fail(p, CLG_ERR_CORRUPT_FILE, "header contains a NUL byte");
    if (!clg__ckpt_utf8_valid_n(p->header, p->hlen))
        return fail(p, CLG_ERR_CORRUPT_FILE, "header is not valid UTF-8");
    p->text = malloc(p->hlen + 1);
    if (!p->text)
        return fail(p, CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory for a %llu-byte header",
                    (unsigned long long)p->hlen);
    memcpy(p->text, p->header, p->hlen);
    p->text[p->hlen] = '\0';
    const char *parse_end = NULL;
    p->root = cJSON_ParseWithOpts(p->text, &parse_end, 1);
    if (!p->root)
        return fail(
            p, CLG_ERR_CORRUPT_FILE, "header is not valid JSON (error at byte %lld of %llu)",
            parse_end ? (long long)(parse_end - p->text) : -1LL, (unsigned long long)p->hlen);
    if (!cJSON_IsObject(p->root))
        return fail(p, CLG_ERR_CORRUPT_FILE, "header is not a JSON object");
    p->data_size = p->size - 8 - p->hlen;
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ metadata */

/* 4. __metadata__: exactly one, a map of strings. */
static clg_status check_metadata_map(parse_state *p)
{
    for (const cJSON *c = p->root->child; c; c = c->next) {
        if (strcmp(c->string, "__metadata__") != 0)
            continue;
        if (p->meta)
            return fail(p, CLG_ERR_CORRUPT_FILE, "header has __metadata__ twice");
        p->meta = c;
    }
    if (!p->meta)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "not a clgrad checkpoint: the header has no __metadata__");
    if (!cJSON_IsObject(p->meta))
        return fail(p, CLG_ERR_CORRUPT_FILE, "__metadata__ is not a JSON object");
    for (const cJSON *m = p->meta->child; m; m = m->next)
        if (!cJSON_IsString(m))
            return fail(p, CLG_ERR_CORRUPT_FILE, "__metadata__ value of '%.200s' is not a string",
                        m->string);
    return CLG_SUCCESS;
}

/* 5. No metadata key twice. */
static clg_status check_metadata_keys_unique(parse_state *p)
{
    size_t n_meta = 0;
    for (const cJSON *m = p->meta->child; m; m = m->next)
        n_meta++;
    const char **sorted = malloc((n_meta ? n_meta : 1) * sizeof *sorted);
    if (!sorted)
        return fail(p, CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    n_meta = 0;
    for (const cJSON *m = p->meta->child; m; m = m->next)
        sorted[n_meta++] = m->string;
    qsort(sorted, n_meta, sizeof *sorted, cmp_str_ptr);
    clg_status st = CLG_SUCCESS;
    for (size_t i = 1; i < n_meta && st == CLG_SUCCESS; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            st = fail(p, CLG_ERR_CORRUPT_FILE, "__metadata__ has key '%.200s' twice", sorted[i]);
    free(sorted);
    return st;
}

/* 6. Every "clgrad." key is one clgrad writes; their values are kept for
 * the checks below, the others are the caller's. */
static clg_status check_clgrad_keys_known(parse_state *p)
{
    const struct {
        const char *key;
        const char **value;
    } known[] = {
        {CLG_CKPT_KEY_FORMAT, &p->format},
        {CLG_CKPT_KEY_VERSION, &p->version},
        {CLG_CKPT_KEY_OPTIMIZER, &p->optimizer},
        {CLG_CKPT_KEY_MICRO, &p->micro},
        {CLG_CKPT_KEY_WEIGHT_SUM, &p->weight_sum},
        {CLG_CKPT_KEY_CYCLES, &p->cycles},
        {CLG_CKPT_KEY_MICRO_TOTAL, &p->micro_total},
        {CLG_CKPT_KEY_UPDATES, &p->updates},
        {CLG_CKPT_KEY_SKIPPED, &p->skipped},
        {CLG_CKPT_KEY_SKIPPED_MICRO, &p->skipped_micro},
        {CLG_CKPT_KEY_HEADER_CRC, NULL}, /* checked first, on the raw bytes */
    };
    const size_t n_known = sizeof known / sizeof known[0];
    const size_t prefix_len = strlen(CLG_CKPT_META_PREFIX);
    for (const cJSON *m = p->meta->child; m; m = m->next) {
        if (strncmp(m->string, CLG_CKPT_META_PREFIX, prefix_len) != 0) {
            p->n_user++;
            continue;
        }
        if (strncmp(m->string, CLG_CKPT_CRC_PREFIX, CLG_CKPT_CRC_PREFIX_LEN) == 0)
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
        while (c < clg__ckpt_n_config_fields &&
               strcmp(m->string + prefix_len, clg__ckpt_config_fields[c]) != 0)
            c++;
        if (c == clg__ckpt_n_config_fields)
            return fail(p, CLG_ERR_CORRUPT_FILE, "__metadata__ has an unknown clgrad key '%.200s'",
                        m->string);
        p->saved_config[c] = m->valuestring;
    }
    return CLG_SUCCESS;
}

/* 7. Our format, in the version this clgrad reads. */
static clg_status check_format_version(parse_state *p)
{
    const char *format = p->format;
    if (!format || strcmp(format, CLG_CKPT_FORMAT) != 0)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "not a clgrad checkpoint: __metadata__ clgrad.format is %s%.64s%s, not "
                    "'" CLG_CKPT_FORMAT "'",
                    format ? "'" : "", format ? format : "missing", format ? "'" : "");
    uint64_t ver;
    if (!p->version || !parse_u64(p->version, &ver))
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "__metadata__ clgrad.version is missing or not a number");
    if (ver != CLG_CKPT_VERSION)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "checkpoint format version %llu is not supported (this clgrad reads version "
                    "%d)",
                    (unsigned long long)ver, CLG_CKPT_VERSION);
    return CLG_SUCCESS;
}

/* 8. The host counters and the step block's, each present and a number of
 * its width; the weight sum as exact float bits. */
static clg_status check_counters_readable(parse_state *p)
{
    if (!p->optimizer || !p->micro || !p->weight_sum || !p->cycles || !p->micro_total ||
        !p->updates || !p->skipped || !p->skipped_micro)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "__metadata__ lacks one of clgrad.optimizer, clgrad.micro, "
                    "clgrad.weight_sum, clgrad.cycles, clgrad.micro_total, clgrad.updates, "
                    "clgrad.skipped_updates, clgrad.skipped_micro_steps");
    if (!parse_u64(p->micro, &p->v_micro) || p->v_micro > UINT32_MAX)
        return fail(p, CLG_ERR_CORRUPT_FILE, "clgrad.micro '%.32s' is not a micro-step count",
                    p->micro);
    if (!parse_u64(p->cycles, &p->v_cycles) || !parse_u64(p->micro_total, &p->v_total))
        return fail(p, CLG_ERR_CORRUPT_FILE, "clgrad.cycles or clgrad.micro_total is not a count");
    if (!parse_u64(p->updates, &p->v_updates) || p->v_updates > UINT32_MAX ||
        !parse_u64(p->skipped, &p->v_skipped) || p->v_skipped > UINT32_MAX ||
        !parse_u64(p->skipped_micro, &p->v_skipped_micro) || p->v_skipped_micro > UINT32_MAX)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "clgrad.updates, clgrad.skipped_updates or clgrad.skipped_micro_steps is "
                    "not a 32-bit count (the step block's width)");
    if (!parse_hex32(p->weight_sum, "0x", &p->v_wsum))
        return fail(p, CLG_ERR_CORRUPT_FILE, "clgrad.weight_sum '%.32s' is not 0x + 8 hex digits",
                    p->weight_sum);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ against the model */

/* 9. The model's optimizer. */
static clg_status check_optimizer(parse_state *p)
{
    if (strcmp(p->optimizer, p->layout->optimizer) != 0)
        return fail(p, CLG_ERR_MISMATCH, "checkpoint is for optimizer '%.32s', the model uses '%s'",
                    p->optimizer, p->layout->optimizer);
    return CLG_SUCCESS;
}

/* 10. The configuration the saved state depends on, field by field, in
 * clg__ckpt_config_fields' order (the loss-scale mode before its
 * parameters). */
static clg_status check_configuration(parse_state *p)
{
    for (size_t c = 0; c < clg__ckpt_n_config_fields; c++) {
        const char *field = clg__ckpt_config_fields[c];
        const char *saved = p->saved_config[c];
        const char *live = clg__ckpt_layout_setting(p->layout, field);
        if (!saved)
            saved = clg__ckpt_config_before(field);
        if (!saved && !live)
            continue;
        if (!saved || !live || !clg__ckpt_config_same(field, saved, live))
            return fail(p, CLG_ERR_MISMATCH,
                        "configuration mismatch: %s was %s%.32s%s when the checkpoint was saved, "
                        "the model has %s%s%s",
                        field, saved ? "'" : "", saved ? saved : "not set", saved ? "'" : "",
                        live ? "'" : "", live ? live : "none (not used)", live ? "'" : "");
    }
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ entries */

/* An entry's three fields, each once and nothing else; dtype a string,
 * shape and data_offsets arrays. */
static clg_status entry_fields(parse_state *p, const clg_ckpt_entry *e, const cJSON *item,
                               const cJSON **dtype, const cJSON **shape, const cJSON **offsets)
{
    if (!cJSON_IsObject(item))
        return fail(p, CLG_ERR_CORRUPT_FILE, "entry '%s' is not a JSON object", e->key);
    for (const cJSON *f = item->child; f; f = f->next) {
        const cJSON **slot = NULL;
        if (strcmp(f->string, "dtype") == 0)
            slot = dtype;
        else if (strcmp(f->string, "shape") == 0)
            slot = shape;
        else if (strcmp(f->string, "data_offsets") == 0)
            slot = offsets;
        else
            return fail(p, CLG_ERR_CORRUPT_FILE, "entry '%s' has an unknown field '%s'", e->key,
                        f->string);
        if (*slot)
            return fail(p, CLG_ERR_CORRUPT_FILE, "entry '%s' has field '%s' twice", e->key,
                        f->string);
        *slot = f;
    }
    if (!cJSON_IsString(*dtype) || !cJSON_IsArray(*shape) || !cJSON_IsArray(*offsets))
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "entry '%s' lacks a string \"dtype\", an array \"shape\" or an array "
                    "\"data_offsets\"",
                    e->key);
    return CLG_SUCCESS;
}

/* The shape as sizes (the first CLG_MAX_DIMS kept), its rank in *rank. */
static clg_status entry_shape(parse_state *p, const clg_ckpt_entry *e, const cJSON *shape,
                              uint64_t dims[CLG_MAX_DIMS], size_t *rank)
{
    *rank = 0;
    for (const cJSON *d = shape->child; d; d = d->next) {
        uint64_t v;
        if (!json_u64(d, &v))
            return fail(p, CLG_ERR_CORRUPT_FILE,
                        "entry '%s': shape holds something other than a size", e->key);
        if (*rank < CLG_MAX_DIMS)
            dims[*rank] = v;
        (*rank)++;
    }
    return CLG_SUCCESS;
}

/* data_offsets as a pair [begin, end] with begin <= end. */
static clg_status entry_offsets(parse_state *p, const clg_ckpt_entry *e, const cJSON *offsets,
                                uint64_t off[2])
{
    int n_off = 0;
    for (const cJSON *d = offsets->child; d; d = d->next) {
        uint64_t v;
        if (n_off >= 2 || !json_u64(d, &v))
            return fail(p, CLG_ERR_CORRUPT_FILE,
                        "entry '%s': data_offsets is not a pair of byte offsets", e->key);
        off[n_off++] = v;
    }
    if (n_off != 2 || off[1] < off[0])
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "entry '%s': data_offsets is not a pair [begin, end] with begin <= end",
                    e->key);
    return CLG_SUCCESS;
}

/* One tensor entry {"dtype", "shape", "data_offsets"}: well-formed first
 * (else the file is damaged), then the model's dtype and shape, and the
 * bytes they need. */
static clg_status check_entry(parse_state *p, clg_ckpt_entry *e, const cJSON *item)
{
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    uint64_t dims[CLG_MAX_DIMS], off[2] = {0, 0};
    size_t rank;
    clg_status st = entry_fields(p, e, item, &dtype, &shape, &offsets);
    if (st == CLG_SUCCESS)
        st = entry_shape(p, e, shape, dims, &rank);
    if (st == CLG_SUCCESS)
        st = entry_offsets(p, e, offsets, off);
    if (st != CLG_SUCCESS)
        return st;
    const char *want = clg__ckpt_dtype_name(e->dtype);
    if (strcmp(dtype->valuestring, want) != 0)
        return fail(p, CLG_ERR_MISMATCH, "tensor '%s' is %.16s in the file but %s in the model",
                    e->key, dtype->valuestring, want);
    uint64_t bytes = e->count * clg__ckpt_dtype_size(e->dtype);
    bool same = rank == e->ndim;
    for (size_t i = 0; same && i < rank; i++)
        same = dims[i] == e->dims[i];
    if (!same) {
        char got[128], want_shape[128];
        shape_text(got, sizeof got, dims, rank);
        shape_text(want_shape, sizeof want_shape, e->dims, e->ndim);
        return fail(p, CLG_ERR_MISMATCH, "tensor '%s' has shape %s in the file but %s in the model",
                    e->key, got, want_shape);
    }
    if (off[1] - off[0] != bytes)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "tensor '%s': data_offsets [%llu, %llu) span %llu bytes but %s[%llu] needs "
                    "%llu",
                    e->key, (unsigned long long)off[0], (unsigned long long)off[1],
                    (unsigned long long)(off[1] - off[0]), want, (unsigned long long)e->count,
                    (unsigned long long)bytes);
    e->file_begin = off[0];
    e->file_end = off[1];
    e->seen = 1;
    return CLG_SUCCESS;
}

/* 11. Tensor entries: each one the model has, once, well-formed and
 * matching; and every model tensor in the file. */
static clg_status check_entries(parse_state *p)
{
    clg_ckpt_layout *layout = p->layout;
    for (const cJSON *c = p->root->child; c; c = c->next) {
        if (c == p->meta)
            continue;
        long idx = clg__ckpt_layout_find(layout, c->string);
        if (idx < 0)
            return fail(p, CLG_ERR_MISMATCH, "the file has tensor '%.200s', which the model lacks",
                        c->string);
        clg_ckpt_entry *e = &layout->entries[idx];
        if (e->seen)
            return fail(p, CLG_ERR_CORRUPT_FILE, "the header has tensor '%.200s' twice", c->string);
        clg_status st = check_entry(p, e, c);
        if (st != CLG_SUCCESS)
            return st;
    }
    for (size_t i = 0; i < layout->n; i++)
        if (!layout->entries[i].seen)
            return fail(p, CLG_ERR_MISMATCH, "model tensor '%s' is not in the file",
                        layout->entries[i].key);
    return CLG_SUCCESS;
}

/* 12. Offsets: inside the data, contiguous from 0 to its end. */
static clg_status check_offsets_contiguous(parse_state *p)
{
    const clg_ckpt_layout *layout = p->layout;
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        if (e->file_end > p->data_size)
            return fail(p, CLG_ERR_CORRUPT_FILE,
                        "tensor '%s' at data_offsets [%llu, %llu) lies beyond the end of the data "
                        "(%llu bytes): truncated file",
                        e->key, (unsigned long long)e->file_begin, (unsigned long long)e->file_end,
                        (unsigned long long)p->data_size);
    }
    span *order = malloc((layout->n ? layout->n : 1) * sizeof *order);
    if (!order)
        return fail(p, CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (size_t i = 0; i < layout->n; i++)
        order[i] = (span){layout->entries[i].file_begin, layout->entries[i].file_end, i};
    qsort(order, layout->n, sizeof *order, span_cmp);
    clg_status st = CLG_SUCCESS;
    uint64_t pos = 0;
    for (size_t i = 0; i < layout->n && st == CLG_SUCCESS; i++) {
        const clg_ckpt_entry *e = &layout->entries[order[i].index];
        if (e->file_begin < pos)
            st = fail(p, CLG_ERR_CORRUPT_FILE,
                      "tensor '%s' at [%llu, %llu) overlaps the one before it", e->key,
                      (unsigned long long)e->file_begin, (unsigned long long)e->file_end);
        else if (e->file_begin > pos)
            st = fail(p, CLG_ERR_CORRUPT_FILE,
                      "hole in the data: bytes [%llu, %llu) before tensor '%s' belong to no "
                      "tensor",
                      (unsigned long long)pos, (unsigned long long)e->file_begin, e->key);
        pos = e->file_end;
    }
    free(order);
    if (st == CLG_SUCCESS && pos != p->data_size)
        st = fail(p, CLG_ERR_CORRUPT_FILE, "%llu trailing bytes after the last tensor",
                  (unsigned long long)(p->data_size - pos));
    p->data = p->header + p->hlen;
    return st;
}

/* 13. A CRC-32 for every tensor, and only for those; then verify. */
static clg_status check_tensor_crcs(parse_state *p)
{
    clg_ckpt_layout *layout = p->layout;
    uint8_t *crc_seen = calloc(layout->n ? layout->n : 1, 1);
    if (!crc_seen)
        return fail(p, CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    clg_status st = CLG_SUCCESS;
    for (const cJSON *m = p->meta->child; m && st == CLG_SUCCESS; m = m->next) {
        if (strncmp(m->string, CLG_CKPT_CRC_PREFIX, CLG_CKPT_CRC_PREFIX_LEN) != 0)
            continue;
        const char *key = m->string + CLG_CKPT_CRC_PREFIX_LEN;
        long idx = clg__ckpt_layout_find(layout, key);
        uint32_t crc;
        if (idx < 0)
            st = fail(p, CLG_ERR_CORRUPT_FILE,
                      "__metadata__ has a CRC for '%.200s', a tensor not in the file", key);
        else if (!parse_hex32(m->valuestring, "", &crc))
            st = fail(p, CLG_ERR_CORRUPT_FILE, "%.200s '%.32s' is not 8 hex digits", m->string,
                      m->valuestring);
        else {
            layout->entries[idx].crc = crc;
            crc_seen[idx] = 1;
        }
    }
    for (size_t i = 0; i < layout->n && st == CLG_SUCCESS; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        if (!crc_seen[i]) {
            st = fail(p, CLG_ERR_CORRUPT_FILE, "__metadata__ has no " CLG_CKPT_CRC_PREFIX "%s",
                      e->key);
            continue;
        }
        uint32_t crc =
            clg__crc32(0, p->data + e->file_begin, (size_t)(e->file_end - e->file_begin));
        if (crc != e->crc)
            st = fail(p, CLG_ERR_CORRUPT_FILE,
                      "CRC-32 mismatch in tensor '%s': the header says %08x, the data gives %08x",
                      e->key, (unsigned)e->crc, (unsigned)crc);
    }
    free(crc_seen);
    return st;
}

/* ------------------------------------------------------------ counters */

/* The step block's counters against the metadata's copies and each other. */
static clg_status check_step_block_counters(parse_state *p)
{
    const struct {
        const char *key;
        uint64_t meta;
        uint32_t block;
        const char *word;
    } twice[] = {
        {CLG_CKPT_KEY_UPDATES, p->v_updates, p->words[CLG_SB_T], "T (updates applied)"},
        {CLG_CKPT_KEY_SKIPPED, p->v_skipped, p->words[CLG_SB_SKIPPED], "SKIPPED"},
        {CLG_CKPT_KEY_SKIPPED_MICRO, p->v_skipped_micro, p->words[CLG_SB_SKIPPED_MICRO],
         "SKIPPED_MICRO"},
    };
    for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++)
        if (twice[i].meta != twice[i].block)
            return fail(p, CLG_ERR_CORRUPT_FILE,
                        "counters disagree: %s is %llu in the metadata but the step block's %s "
                        "is %u",
                        twice[i].key, (unsigned long long)twice[i].meta, twice[i].word,
                        (unsigned)twice[i].block);
    /* Every completed cycle either applied or skipped its update; the
     * step block counts both in 32 bits. */
    if ((uint32_t)p->v_cycles != (uint32_t)(p->v_updates + p->v_skipped))
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "counters disagree: clgrad.cycles is %llu but clgrad.updates %llu + "
                    "clgrad.skipped_updates %llu is %llu",
                    (unsigned long long)p->v_cycles, (unsigned long long)p->v_updates,
                    (unsigned long long)p->v_skipped,
                    (unsigned long long)(p->v_updates + p->v_skipped));
    /* Skip-micro mode counts the cycle's finite micro-steps on the
     * device: never more than the host's count of the cycle. */
    if (p->words[CLG_SB_MICRO_COUNT] > p->v_micro)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "counters disagree: the step block counts %u finite micro-steps in the "
                    "current cycle but clgrad.micro is %llu",
                    (unsigned)p->words[CLG_SB_MICRO_COUNT], (unsigned long long)p->v_micro);
    return CLG_SUCCESS;
}

/* 14. The counters stored twice agree. Each CRC above holds for its own
 * bytes; these catch a writer or an editor that changed one copy and
 * not the other (and make a forged file harder to get right). */
static clg_status check_counters_agree(parse_state *p)
{
    long sb = clg__ckpt_layout_find(p->layout, CLG_CKPT_STEP_BLOCK_KEY);
    if (sb >= 0 && p->layout->entries[sb].count == CLG_SB_WORDS &&
        p->layout->entries[sb].dtype == CLG_CKPT_I32) {
        for (int w = 0; w < CLG_SB_WORDS; w++)
            p->words[w] = le32(p->data + p->layout->entries[sb].file_begin + 4 * w);
        clg_status st = check_step_block_counters(p);
        if (st != CLG_SUCCESS)
            return st;
    }
    /* Every cycle took at least one micro-step, and so did every skipped
     * micro-step and every one of the current cycle. */
    if (p->v_cycles > p->v_total || p->v_micro > p->v_total - p->v_cycles ||
        p->v_skipped_micro > p->v_total)
        return fail(p, CLG_ERR_CORRUPT_FILE,
                    "counters disagree: clgrad.micro_total is %llu, less than clgrad.cycles %llu "
                    "+ clgrad.micro %llu, or than clgrad.skipped_micro_steps %llu",
                    (unsigned long long)p->v_total, (unsigned long long)p->v_cycles,
                    (unsigned long long)p->v_micro, (unsigned long long)p->v_skipped_micro);
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ values */

/* 15. Values no update could have produced (checkpoint_values.c), last:
 * the file is well-formed and for this model, its CRCs hold, so what is
 * left is a file edited on purpose and re-summed. Under the file's own
 * non-finite policy, which produced its states. */
static clg_status check_values(parse_state *p)
{
    const char *policy = NULL;
    for (size_t c = 0; c < clg__ckpt_n_config_fields; c++)
        if (strcmp(clg__ckpt_config_fields[c], "nonfinite") == 0)
            policy = p->saved_config[c];
    long sb = clg__ckpt_layout_find(p->layout, CLG_CKPT_STEP_BLOCK_KEY);
    /* check_configuration found the policy recorded and known */
    return clg__ckpt_check_values(p->layout, p->data, sb >= 0 ? p->words : NULL,
                                  policy ? policy : "ignore", p->err, p->errlen);
}

/* ------------------------------------------------------------ the result */

/* 16. Everything checked out: the cycle state, the data and the caller's
 * metadata (in file order) go to the result, which takes the JSON. */
static clg_status fill_result(parse_state *p)
{
    clg_ckpt_parsed *out = p->out;
    out->state.micro = (unsigned)p->v_micro;
    memcpy(&out->state.weight_sum, &p->v_wsum, sizeof p->v_wsum);
    out->state.cycles = p->v_cycles;
    out->state.micro_total = p->v_total;
    memcpy(out->state.step_block, p->words, sizeof p->words);
    out->data = p->data;
    out->meta_keys = malloc((p->n_user ? p->n_user : 1) * sizeof *out->meta_keys);
    out->meta_values = malloc((p->n_user ? p->n_user : 1) * sizeof *out->meta_values);
    if (!out->meta_keys || !out->meta_values)
        return fail(p, CLG_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (const cJSON *m = p->meta->child; m; m = m->next) {
        if (strncmp(m->string, CLG_CKPT_META_PREFIX, strlen(CLG_CKPT_META_PREFIX)) == 0)
            continue;
        out->meta_keys[out->n_meta] = m->string;
        out->meta_values[out->n_meta] = m->valuestring;
        out->n_meta++;
    }
    out->json = p->root;
    p->root = NULL;
    return CLG_SUCCESS;
}

/* ------------------------------------------------------------ the parser */

/* The checks in the order they run: each may rely on what the ones before
 * it found, and the first that fails gives the message. */
static clg_status (*const parse_steps[])(parse_state *) = {
    check_header_length,
    check_header_crc,
    check_header_json,
    check_metadata_map,
    check_metadata_keys_unique,
    check_clgrad_keys_known,
    check_format_version, /* the last a header alone can pass (clg__ckpt_parse_header) */
    check_counters_readable,
    check_optimizer,
    check_configuration,
    check_entries,
    check_offsets_contiguous,
    check_tensor_crcs,
    check_counters_agree,
    check_values,
    fill_result,
};

clg_status clg__ckpt_parse(const uint8_t *file, size_t size, clg_ckpt_layout *layout,
                           clg_ckpt_parsed *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < layout->n; i++) {
        layout->entries[i].seen = 0;
        layout->entries[i].file_begin = layout->entries[i].file_end = 0;
    }
    parse_state p = {
        .file = file, .size = size, .layout = layout, .out = out, .err = err, .errlen = errlen};
    clg_status st = CLG_SUCCESS;
    for (size_t i = 0; i < sizeof parse_steps / sizeof parse_steps[0] && st == CLG_SUCCESS; i++)
        st = parse_steps[i](&p);
    free(p.text);
    cJSON_Delete(p.root);
    if (st != CLG_SUCCESS)
        clg__ckpt_parsed_free(out);
    return st;
}

clg_status clg__ckpt_parse_header(const uint8_t *file, size_t size, clg_meta_fn meta, void *user,
                                  char *err, size_t errlen)
{
    parse_state p = {.file = file, .size = size, .err = err, .errlen = errlen};
    clg_status st = CLG_SUCCESS;
    /* the checks up to the format's version: what a header alone can show */
    for (size_t i = 0; st == CLG_SUCCESS; i++) {
        st = parse_steps[i](&p);
        if (parse_steps[i] == check_format_version)
            break;
    }
    if (st == CLG_SUCCESS && meta)
        for (const cJSON *m = p.meta->child; m; m = m->next)
            if (strncmp(m->string, CLG_CKPT_META_PREFIX, strlen(CLG_CKPT_META_PREFIX)) != 0)
                meta(m->string, m->valuestring, user);
    free(p.text);
    cJSON_Delete(p.root);
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
