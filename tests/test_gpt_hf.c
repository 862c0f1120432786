/* test_gpt_hf.c - Hugging Face GPT-2 directories in and out
 * (tools/train/tasks/gpt/gpt_hf.h), on the host alone: directories this
 * test writes itself (its own safetensors writer, GPT-2's names and
 * Conv1D shapes written out here, tensors stored in the file in reverse
 * order) are read into clgrad's layout and checked element by element
 * against the values the test put in them: linear weights transposed,
 * keys with and without "transformer.", the attention's buffers skipped,
 * a tied lm_head accepted, F16 and BF16 widened exactly. Export then
 * import gives the same floats bit for bit, at vocabularies 256 and 300.
 * Every refusal (a missing, extra, duplicated or misshapen tensor, an
 * untied head, a damaged header, a truncated file, a bad config, another
 * architecture) fails with a message naming the file and the tensor or
 * key, and returns nothing. The trainer's checks of --init-from's shape
 * against the flags and of --export-hf's directory too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_hf.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Not a power of two anywhere; 3 layers so that a block index past one
 * digit's first is exercised by name matching (h.1 against h.10 is not) */
enum { L = 3, NH = 4, C = 48, T = 40, V = 256 };

static char *root; /* the test's scratch directory */

/* ------------------------------------------------------------ GPT-2's tensors, as the test knows
 * them */

typedef struct hf_tensor {
    char name[64]; /* without "transformer." */
    unsigned ndim;
    uint64_t shape[2]; /* the file's: Conv1D [in, out] */
    int conv1d;        /* stored [in, out]; clgrad's [out x in] */
} hf_tensor;

/* GPT2LMHeadModel's transformer tensors in clgrad's order; returns how many. */
static int gpt2_tensors(unsigned layers, unsigned width, unsigned ctx, unsigned vocab,
                        hf_tensor *out)
{
    int n = 0;
    out[n++] = (hf_tensor){"wte.weight", 2, {vocab, width}, 0};
    out[n++] = (hf_tensor){"wpe.weight", 2, {ctx, width}, 0};
    static const struct {
        const char *name;
        unsigned in, out; /* multiples of C; out 0: a vector of in */
    } block[] = {
        {"ln_1.weight", 1, 0},      {"ln_1.bias", 1, 0},          {"attn.c_attn.weight", 1, 3},
        {"attn.c_attn.bias", 3, 0}, {"attn.c_proj.weight", 1, 1}, {"attn.c_proj.bias", 1, 0},
        {"ln_2.weight", 1, 0},      {"ln_2.bias", 1, 0},          {"mlp.c_fc.weight", 1, 4},
        {"mlp.c_fc.bias", 4, 0},    {"mlp.c_proj.weight", 4, 1},  {"mlp.c_proj.bias", 1, 0}};
    for (unsigned l = 0; l < layers; l++)
        for (size_t j = 0; j < sizeof block / sizeof *block; j++) {
            hf_tensor *t = &out[n++];
            snprintf(t->name, sizeof t->name, "h.%u.%s", l, block[j].name);
            t->conv1d = block[j].out != 0;
            t->ndim = t->conv1d ? 2 : 1;
            t->shape[0] = block[j].in * width;
            t->shape[1] = block[j].out * width;
        }
    out[n++] = (hf_tensor){"ln_f.weight", 1, {width, 0}, 0};
    out[n++] = (hf_tensor){"ln_f.bias", 1, {width, 0}, 0};
    return n;
}

static uint64_t numel(const hf_tensor *t)
{
    return t->ndim == 2 ? t->shape[0] * t->shape[1] : t->shape[0];
}

/* The value the test stores at element e of tensor i: k / 1024 for an
 * integer |k| <= 1000, exact in F32 and F16, different from tensor to
 * tensor and from element to element. */
static int value_k(int i, uint64_t e)
{
    return (int)((i * 7919 + e * 31 + e / 7) % 2001) - 1000;
}

static float value(int i, uint64_t e)
{
    return (float)value_k(i, e) / 1024.0f;
}

/* The same rounded toward zero to BF16's 8 significant bits, by integer
 * arithmetic (an independent statement of what the file's upper halves
 * hold). */
static float value_bf16(int i, uint64_t e)
{
    int k = value_k(i, e), m = k < 0 ? -k : k, shift = 0;
    while (m >> shift >= 256)
        shift++;
    m = (m >> shift) << shift;
    return (float)(k < 0 ? -m : m) / 1024.0f;
}

/* ------------------------------------------------------------ the test's safetensors writer */

typedef struct spec {
    char name[96];
    char dtype[8];
    unsigned ndim;
    uint64_t shape[4];
    uint8_t *data; /* malloc'ed */
    size_t bytes;
} spec;

typedef struct dirspec {
    unsigned layers, heads, width, ctx, vocab;
    int bare;          /* names without "transformer." */
    int buffers;       /* attn.bias and attn.masked_bias per block */
    int head;          /* 0: no lm_head.weight; 1: equal to wte; 2: one value off */
    const char *dtype; /* every tensor's: "F32" (default), "BF16" */
} dirspec;

static dirspec default_dir(void)
{
    return (dirspec){L, NH, C, T, V, 0, 1, 0, "F32"};
}

/* Tensor i's values in dtype into s (BF16: the float's upper half). */
static void fill(spec *s, int i, uint64_t n, const char *dtype)
{
    int half = strcmp(dtype, "F32") != 0;
    snprintf(s->dtype, sizeof s->dtype, "%s", dtype);
    s->bytes = n * (half ? 2 : 4);
    s->data = tu_xmalloc(s->bytes ? s->bytes : 1);
    for (uint64_t e = 0; e < n; e++) {
        float x = value(i, e);
        uint32_t bits;
        memcpy(&bits, &x, 4);
        if (half) {
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy(s->data + 2 * e, &h, 2);
        } else
            memcpy(s->data + 4 * e, &x, 4);
    }
}

/* GPT-2's tensors of d (plus its buffers and head) into out; returns how many. */
static size_t make_specs(const dirspec *d, spec *out)
{
    hf_tensor t[4 + 12 * 8];
    int n = gpt2_tensors(d->layers, d->width, d->ctx, d->vocab, t);
    size_t k = 0;
    for (int i = 0; i < n; i++, k++) {
        spec *s = &out[k];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s%.63s", d->bare ? "" : "transformer.", t[i].name);
        s->ndim = t[i].ndim;
        s->shape[0] = t[i].shape[0];
        s->shape[1] = t[i].shape[1];
        fill(s, i, numel(&t[i]), d->dtype);
    }
    for (unsigned l = 0; d->buffers && l < d->layers; l++)
        for (int m = 0; m < 2; m++, k++) {
            spec *s = &out[k];
            memset(s, 0, sizeof *s);
            snprintf(s->name, sizeof s->name, "%sh.%u.attn.%s", d->bare ? "" : "transformer.", l,
                     m ? "masked_bias" : "bias");
            s->ndim = m ? 0 : 4;
            uint64_t sh[4] = {1, 1, d->ctx, d->ctx};
            memcpy(s->shape, sh, sizeof sh);
            fill(s, 1000 + m, m ? 1 : (uint64_t)d->ctx * d->ctx, "F32");
        }
    if (d->head) {
        spec *s = &out[k++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "lm_head.weight");
        s->ndim = 2;
        s->shape[0] = d->vocab;
        s->shape[1] = d->width;
        fill(s, 0, (uint64_t)d->vocab * d->width, d->dtype);
        if (d->head == 2) /* one element of one row changed */
            s->data[s->bytes / 2] ^= 0x40;
    }
    return k;
}

static void free_specs(spec *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i].data);
}

/* A safetensors file of the n tensors, their data in reverse order (the
 * offsets, not the listing, place them); cut bytes left off its end. */
static void write_safetensors(const char *path, const spec *s, size_t n, size_t cut)
{
    size_t cap = 256 + n * 200, len = 0, data = 0;
    char *json = tu_xmalloc(cap);
    len += (size_t)snprintf(json, cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t *off = tu_xmalloc((n + 1) * sizeof *off);
    for (size_t i = n; i-- > 0;) {
        off[i] = data;
        data += s[i].bytes;
    }
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(json + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                s[i].name, s[i].dtype);
        for (unsigned d = 0; d < s[i].ndim; d++)
            len += (size_t)snprintf(json + len, cap - len, "%s%llu", d ? "," : "",
                                    (unsigned long long)s[i].shape[d]);
        len +=
            (size_t)snprintf(json + len, cap - len, "],\"data_offsets\":[%llu,%llu]}",
                             (unsigned long long)off[i], (unsigned long long)(off[i] + s[i].bytes));
    }
    len += (size_t)snprintf(json + len, cap - len, "}");
    assert_true(len < cap);
    size_t total = 8 + len + data;
    uint8_t *file = tu_xmalloc(total);
    for (int b = 0; b < 8; b++)
        file[b] = (uint8_t)((uint64_t)len >> (8 * b));
    memcpy(file + 8, json, len);
    for (size_t i = 0; i < n; i++)
        memcpy(file + 8 + len + off[i], s[i].data, s[i].bytes);
    assert_true(cut <= total);
    tu_write_file(path, file, total - cut);
    free(file);
    free(json);
    free(off);
}

/* config.json of d, with extra (",\"key\": value" pairs, or "") added. */
static void write_config(const char *dir, const dirspec *d, const char *extra)
{
    char path[512], text[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    int n = snprintf(text, sizeof text,
                     "{\"model_type\": \"gpt2\", \"architectures\": [\"GPT2LMHeadModel\"], "
                     "\"n_layer\": %u, \"n_head\": %u, \"n_embd\": %u, \"n_positions\": %u, "
                     "\"vocab_size\": %u, \"activation_function\": \"gelu_new\", "
                     "\"layer_norm_epsilon\": 1e-05, \"n_inner\": null%s}",
                     d->layers, d->heads, d->width, d->ctx, d->vocab, extra);
    tu_write_file(path, text, (size_t)n);
}

/* A fresh directory under root named name holding d's config and weights. */
static char *make_dir(const char *name, const dirspec *d)
{
    char *dir = tu_xmalloc(strlen(root) + strlen(name) + 2);
    sprintf(dir, "%s/%s", root, name);
    assert_int_equal(mkdir(dir, 0777), 0);
    write_config(dir, d, "");
    spec s[4 + 14 * 8 + 1];
    size_t n = make_specs(d, s);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_safetensors(path, s, n, 0);
    free_specs(s, n);
    return dir;
}

static char *weights_path(const char *dir)
{
    char *p = tu_xmalloc(strlen(dir) + 32);
    sprintf(p, "%s/model.safetensors", dir);
    return p;
}

/* ------------------------------------------------------------ loading */

/* The floats the test stored, in clgrad's layout: GPT-2's order, Conv1D
 * weights transposed to [out x in]; dtype as the file's. */
static float *expected(const dirspec *d, size_t *count)
{
    hf_tensor t[4 + 12 * 8];
    int n = gpt2_tensors(d->layers, d->width, d->ctx, d->vocab, t);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += numel(&t[i]);
    float *out = tu_xmalloc(total * sizeof *out), *p = out;
    for (int i = 0; i < n; i++) {
        uint64_t in = t[i].shape[0], o = t[i].shape[1];
        for (uint64_t e = 0; e < numel(&t[i]); e++) {
            /* clgrad's element e: row e / in, column e % in of [o x in] */
            uint64_t src = t[i].conv1d ? (e % in) * o + e / in : e;
            p[e] = !strcmp(d->dtype, "BF16") ? value_bf16(i, src) : value(i, src);
        }
        p += numel(&t[i]);
    }
    *count = total;
    return out;
}

static void check_load(const char *dir, const dirspec *d)
{
    gpt_hf_config c;
    float *params = NULL;
    char err[1024] = "";
    if (gpt_hf_load(dir, &c, &params, err, sizeof err) != 0)
        fail_msg("gpt_hf_load %s: %s", dir, err);
    assert_int_equal(c.shape.layers, d->layers);
    assert_int_equal(c.shape.heads, d->heads);
    assert_int_equal(c.shape.width, d->width);
    assert_int_equal(c.shape.context, d->ctx);
    assert_int_equal(c.vocab, d->vocab);
    size_t n;
    float *want = expected(d, &n);
    assert_int_equal(gpt_hf_param_count(&c), n);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&params[i], &want[i], 4) != 0)
            fail_msg("%s: element %zu is %.9g, expected %.9g", dir, i, params[i], want[i]);
    free(want);
    free(params);
}

/* As save_pretrained writes it: "transformer.", the buffers, no head. */
static void test_load(void **state)
{
    (void)state;
    dirspec d = default_dir();
    char *dir = make_dir("plain", &d);
    check_load(dir, &d);
    /* the header alone */
    gpt_hf_config c;
    char err[512];
    assert_int_equal(gpt_hf_load(dir, &c, NULL, err, sizeof err), 0);
    assert_int_equal(c.shape.layers, L);
    free(dir);
}

/* Bare names (GPT2Model's), no buffers, a tied head, BF16, vocab 300. */
static void test_load_variants(void **state)
{
    (void)state;
    dirspec d = default_dir();
    d.bare = 1;
    d.buffers = 0;
    d.head = 1;
    char *dir = make_dir("bare", &d);
    check_load(dir, &d);
    free(dir);
    d = default_dir();
    d.dtype = "BF16";
    d.head = 1;
    d.vocab = 300;
    dir = make_dir("bf16", &d);
    check_load(dir, &d);
    free(dir);
}

/* F16 widened exactly: ln_f.weight (F16) holds these halves, the rest F32. */
static void test_load_f16(void **state)
{
    (void)state;
    static const struct {
        uint16_t h;
        float f;
    } halves[] = {
        {0x3c00, 1.0f},     {0xc000, -2.0f},     {0x0001, 0x1p-24f},  {0x03ff, 1023 * 0x1p-24f},
        {0x0400, 0x1p-14f}, {0x7bff, 65504.0f},  {0x8000, -0.0f},     {0x3555, 0x1.554p-2f},
        {0x7c00, INFINITY}, {0xfc00, -INFINITY}, {0x8001, -0x1p-24f}, {0x2e66, 0x1.998p-4f}};
    enum { NV = sizeof halves / sizeof *halves };
    dirspec d = default_dir();
    char *dir = make_dir("f16", &d);
    spec s[4 + 14 * 8 + 1];
    size_t n = make_specs(&d, s);
    size_t k = 0;
    while (k < n && strcmp(s[k].name, "transformer.ln_f.weight") != 0)
        k++;
    assert_true(k < n);
    spec *lnf = &s[k];
    snprintf(lnf->dtype, sizeof lnf->dtype, "F16");
    lnf->bytes = 2 * C;
    for (int e = 0; e < C; e++)
        memcpy(lnf->data + 2 * e, &halves[e % NV].h, 2);
    char *path = weights_path(dir);
    write_safetensors(path, s, n, 0);
    free_specs(s, n);
    gpt_hf_config c;
    float *p = NULL;
    char err[512];
    if (gpt_hf_load(dir, &c, &p, err, sizeof err) != 0)
        fail_msg("%s", err);
    const float *got = p + gpt_hf_param_count(&c) - 2 * C;
    for (int e = 0; e < C; e++)
        if (memcmp(&got[e], &halves[e % NV].f, 4) != 0)
            fail_msg("half 0x%04x: %a, expected %a", halves[e % NV].h, got[e], halves[e % NV].f);
    free(p);
    free(path);
    free(dir);
}

/* ------------------------------------------------------------ export */

/* Export then import: the same floats, bit for bit; the file as
 * GPT2LMHeadModel writes it (prefixed keys, no lm_head, format pt). */
static void round_trip(unsigned vocab)
{
    gpt_hf_config c = {.shape = {.layers = L, .heads = NH, .width = C, .context = T},
                       .vocab = vocab};
    uint64_t n = gpt_hf_param_count(&c);
    float *p = tu_xmalloc(n * sizeof *p);
    tu_fill_normal(p, n, 7 + vocab, 0.5f);
    char dir[512], err[1024] = "";
    snprintf(dir, sizeof dir, "%s/export-%u/sub", root, vocab); /* made, with its parent */
    if (gpt_hf_export(dir, &c, p, err, sizeof err) != 0)
        fail_msg("gpt_hf_export: %s", err);
    gpt_hf_config back;
    float *q = NULL;
    if (gpt_hf_load(dir, &back, &q, err, sizeof err) != 0)
        fail_msg("gpt_hf_load of the export: %s", err);
    assert_true(back.shape.layers == L && back.shape.heads == NH && back.shape.width == C &&
                back.shape.context == T && back.vocab == vocab);
    assert_memory_equal(q, p, n * sizeof *p);
    /* again over the first: replaced in place */
    p[n - 1] = 3.0f;
    if (gpt_hf_export(dir, &c, p, err, sizeof err) != 0)
        fail_msg("gpt_hf_export again: %s", err);
    free(q);
    assert_int_equal(gpt_hf_load(dir, &back, &q, err, sizeof err), 0);
    assert_memory_equal(q, p, n * sizeof *p);
    char *path = weights_path(dir);
    size_t len;
    uint8_t *file = tu_read_file(path, &len);
    uint64_t hl = 0;
    for (int b = 7; b >= 0; b--)
        hl = hl << 8 | file[b];
    assert_int_equal(hl % 8, 0);
    assert_int_equal(len, 8 + hl + 4 * n);
    char *header = strndup((const char *)file + 8, (size_t)hl);
    assert_non_null(strstr(header, "\"__metadata__\":{\"format\":\"pt\"}"));
    assert_non_null(strstr(header, "\"transformer.wte.weight\""));
    assert_non_null(strstr(header, "\"transformer.h.2.mlp.c_fc.weight\":{\"shape\":[48,192]"));
    assert_null(strstr(header, "lm_head"));
    assert_null(strstr(header, "\"wte\""));
    free(header);
    free(file);
    free(path);
    free(p);
    free(q);
}

static void test_round_trip(void **state)
{
    (void)state;
    round_trip(V);
    round_trip(300);
}

/* ------------------------------------------------------------ refusals */

/* gpt_hf_load of dir fails, returns no array, and says each of the
 * NULL-terminated parts. */
static void refused(const char *dir, ...)
{
    gpt_hf_config c;
    float *p = (float *)&c;
    char err[1024] = "";
    assert_int_equal(gpt_hf_load(dir, &c, &p, err, sizeof err), -1);
    assert_null(p);
    va_list ap;
    va_start(ap, dir);
    for (const char *want; (want = va_arg(ap, const char *));)
        if (!strstr(err, want))
            fail_msg("refusal of %s: \"%s\" does not say \"%s\"", dir, err, want);
    va_end(ap);
}

/* d's tensors with spec k changed by how, written over dir's weights. */
enum change { DROP, RENAME, RESHAPE, RETYPE, OFFSET_LEN };
static void rewrite(const char *dir, const dirspec *d, const char *name, enum change how,
                    const char *arg)
{
    spec s[4 + 14 * 8 + 2];
    size_t n = make_specs(d, s), k = n;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s[i].name, name))
            k = i;
    assert_true(k < n);
    switch (how) {
    case DROP:
        free(s[k].data);
        s[k] = s[--n];
        break;
    case RENAME: snprintf(s[k].name, sizeof s[k].name, "%s", arg); break;
    case RESHAPE: /* a matrix transposed (clgrad's layout); a vector one longer */
        if (s[k].ndim == 2) {
            uint64_t t = s[k].shape[0];
            s[k].shape[0] = s[k].shape[1];
            s[k].shape[1] = t;
        } else {
            s[k].shape[0]++;
            s[k].bytes += 4;
            s[k].data = realloc(s[k].data, s[k].bytes);
            assert_non_null(s[k].data);
            memset(s[k].data + s[k].bytes - 4, 0, 4);
        }
        break;
    case RETYPE: snprintf(s[k].dtype, sizeof s[k].dtype, "%s", arg); break;
    case OFFSET_LEN: s[k].bytes -= 4; break;
    }
    char *path = weights_path(dir);
    write_safetensors(path, s, n, 0);
    free(path);
    free_specs(s, n);
}

static void test_refuse_tensors(void **state)
{
    (void)state;
    dirspec d = default_dir();
    char *dir = make_dir("refuse", &d);
    rewrite(dir, &d, "transformer.h.1.mlp.c_fc.weight", DROP, NULL);
    refused(dir, "model.safetensors", "'transformer.h.1.mlp.c_fc.weight' is missing", NULL);
    rewrite(dir, &d, "transformer.ln_f.bias", DROP, NULL);
    refused(dir, "'transformer.ln_f.bias' is missing", NULL);
    /* a fourth block, and another model's head */
    rewrite(dir, &d, "transformer.h.0.attn.bias", RENAME, "transformer.h.3.attn.bias");
    refused(dir, "'transformer.h.3.attn.bias'", "not one of GPT-2's", NULL);
    rewrite(dir, &d, "transformer.h.0.attn.masked_bias", RENAME, "score.weight");
    refused(dir, "'score.weight'", "not one of GPT-2's", NULL);
    /* one tensor under both names */
    rewrite(dir, &d, "transformer.h.0.attn.masked_bias", RENAME, "wpe.weight");
    refused(dir, "'wpe' is there twice", "transformer.wpe.weight", NULL);
    /* shapes: a Conv1D weight in nn.Linear's layout, a bias one too long */
    rewrite(dir, &d, "transformer.h.2.attn.c_attn.weight", RESHAPE, NULL);
    refused(dir, "'transformer.h.2.attn.c_attn.weight' has shape [144, 48], expected [48, 144]",
            "Conv1D", NULL);
    rewrite(dir, &d, "transformer.h.0.mlp.c_fc.bias", RESHAPE, NULL);
    refused(dir, "'transformer.h.0.mlp.c_fc.bias' has shape [193], expected [192]", NULL);
    /* dtypes: unknown, and known but not a float */
    rewrite(dir, &d, "transformer.wpe.weight", RETYPE, "F99");
    refused(dir, "'transformer.wpe.weight' has the unknown dtype 'F99'", NULL);
    rewrite(dir, &d, "transformer.h.1.ln_2.bias", RETYPE, "I32");
    refused(dir, "'transformer.h.1.ln_2.bias' is I32", NULL);
    /* data_offsets that disagree with the shape */
    rewrite(dir, &d, "transformer.h.1.ln_1.weight", OFFSET_LEN, NULL);
    refused(dir, "'transformer.h.1.ln_1.weight' has data_offsets", NULL);
    free(dir);

    /* an lm_head of its own: one element differs, or another shape */
    d.head = 2;
    dir = make_dir("untied", &d);
    refused(dir, "'lm_head.weight' differs from wte", NULL);
    rewrite(dir, &d, "lm_head.weight", RESHAPE, NULL);
    refused(dir, "'lm_head.weight' has shape [48, 256], expected [256, 48]", NULL);
    /* the tied head, equal and in its shape, but under the transformer's
     * prefix, where GPT2LMHeadModel has none */
    d.head = 1;
    rewrite(dir, &d, "lm_head.weight", RENAME, "transformer.lm_head.weight");
    refused(dir, "'transformer.lm_head.weight' is not one of GPT-2's", NULL);
    free(dir);
}

static void test_refuse_file(void **state)
{
    (void)state;
    dirspec d = default_dir();
    d.buffers = 0; /* ln_f.bias, the last tensor, is stored first */
    char *dir = make_dir("damaged", &d), *path = weights_path(dir);
    spec s[4 + 14 * 8 + 1];
    size_t n = make_specs(&d, s);
    /* truncated: the data, then into the header, then the length itself */
    write_safetensors(path, s, n, 100);
    refused(dir, "model.safetensors", "truncated", NULL);
    size_t len;
    uint8_t *whole = tu_read_file(path, &len);
    tu_write_file(path, whole, 200);
    refused(dir, "header length", "past the end of the file", NULL);
    tu_write_file(path, whole, 5);
    refused(dir, "5 bytes, too short", NULL);
    /* a header that is no JSON object */
    memcpy(whole + 8, "{not json", 9);
    tu_write_file(path, whole, len);
    refused(dir, "model.safetensors: its header is not a JSON object", NULL);
    tu_write_file(path, "\5\0\0\0\0\0\0\0[1,2]", 13);
    refused(dir, "its header is not a JSON object", NULL);
    /* a gap: the data one float longer than the offsets */
    write_safetensors(path, s, n, 0);
    free(whole);
    whole = tu_read_file(path, &len);
    uint8_t *longer = tu_xmalloc(len + 4);
    memcpy(longer, whole, len);
    memset(longer + len, 0, 4);
    tu_write_file(path, longer, len + 4);
    refused(dir, "the file has", "after its header", NULL);
    free(longer);
    /* overlapping tensors: ln_f.bias is stored first (reverse order) at
     * [0, 192], ln_f.weight after it at [192, 384], moved to [188, 380] */
    char *hdr = (char *)whole + 8, *at = strstr(hdr, "\"transformer.ln_f.weight\"");
    assert_non_null(at);
    char *offs = strstr(at, "\"data_offsets\":[");
    assert_non_null(offs);
    offs += strlen("\"data_offsets\":[");
    assert_int_equal(strncmp(offs, "192,384]", 8), 0);
    memcpy(offs, "188,380]", 8);
    tu_write_file(path, whole, len);
    refused(dir, "'transformer.ln_f.weight' starts at data byte 188, inside the tensor before it",
            NULL);
    free(whole);
    /* no weights at all */
    remove(path);
    refused(dir, "model.safetensors", "No such file", NULL);
    free_specs(s, n);
    free(path);
    free(dir);
}

static void test_refuse_config(void **state)
{
    (void)state;
    dirspec d = default_dir();
    char *dir = make_dir("config", &d);
    static const struct {
        const char *extra, *want;
    } cases[] = {
        {", \"model_type\": \"gpt_neo\"", "model_type is gpt_neo, not \"gpt2\""},
        {", \"activation_function\": \"relu\"", "activation_function is relu"},
        {", \"n_inner\": 100", "n_inner is set"},
        {", \"layer_norm_epsilon\": 1e-06", "layer_norm_epsilon is 1e-06"},
        {", \"scale_attn_by_inverse_layer_idx\": true", "scale_attn_by_inverse_layer_idx is true"},
        {", \"reorder_and_upcast_attn\": true", "reorder_and_upcast_attn is true"},
        {", \"add_cross_attention\": true", "add_cross_attention is true"},
        {", \"scale_attn_weights\": false", "scale_attn_weights is false"},
        {", \"tie_word_embeddings\": false", "tie_word_embeddings is false"},
        {", \"n_head\": 5", "n_head 5 does not divide n_embd 48"},
        {", \"n_layer\": 0", "n_layer is not an integer"},
        {", \"vocab_size\": 2.5", "vocab_size is not an integer"},
    };
    /* cJSON takes the first of two equal keys: put the case's first */
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[2048];
        int n = snprintf(text, sizeof text,
                         "{\"x\": 0%s, \"model_type\": \"gpt2\", \"n_layer\": %u, \"n_head\": "
                         "%u, \"n_embd\": %u, \"n_positions\": %u, \"vocab_size\": %u}",
                         cases[i].extra, L, NH, C, T, V);
        tu_write_file(path, text, (size_t)n);
        refused(dir, "config.json", cases[i].want, NULL);
    }
    /* the same architecture said explicitly loads: n_inner 4 C, the
     * other name of the tanh GELU */
    write_config(dir, &d, ", \"n_inner\": 192, \"activation_function\": \"gelu_pytorch_tanh\"");
    gpt_hf_config c;
    char err[512];
    if (gpt_hf_load(dir, &c, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    tu_write_file(path, "{\"n_layer\": 3", 13);
    refused(dir, "config.json: not a JSON object", NULL);
    tu_write_file(path, "{\"model_type\": \"gpt2\"}", 22);
    refused(dir, "config.json: no n_layer", NULL);
    remove(path);
    refused(dir, "config.json", "No such file", NULL);
    free(dir);
}

/* ------------------------------------------------------------ the trainer's checks */

static void test_trainer_options(void **state)
{
    (void)state;
    dirspec d = default_dir();
    char *dir = make_dir("trainer", &d);
    gpt_options g;
    gpt_options_default(&g);
    g.init_from = dir;
    char err[1024];
    /* the shape from the config, flags that agree kept */
    g.shape_flags = (gpt_shape){.heads = NH};
    g.layers = 9; /* a preset's, replaced */
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), 0);
    assert_int_equal(g.layers, L);
    assert_int_equal(g.heads, NH);
    assert_int_equal(g.width, C);
    assert_int_equal(g.context, T);
    /* a flag that disagrees, named with the config's value */
    g.shape_flags = (gpt_shape){.context = 64};
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), -1);
    char want[1024];
    snprintf(want, sizeof want, "--context 64, but --init-from %s has n_positions 40", dir);
    assert_string_equal(err, want);
    g.shape_flags = (gpt_shape){.layers = 2};
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), -1);
    assert_non_null(strstr(err, "--layers 2, but --init-from"));
    assert_non_null(strstr(err, "has n_layer 3"));
    /* the vocabulary from the config; a --vocab that disagrees; one the
     * model does not take; a damaged directory */
    free(dir);
    d.vocab = 300;
    dir = make_dir("trainer-300", &d);
    g.init_from = dir;
    g.shape_flags = (gpt_shape){.layers = 0};
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), 0);
    assert_int_equal(g.vocab, 300);
    g.shape_flags = (gpt_shape){.vocab = 301};
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), -1);
    assert_non_null(strstr(err, "--vocab 301, but --init-from"));
    assert_non_null(strstr(err, "has vocab_size 300"));
    g.shape_flags = (gpt_shape){.vocab = 0};
    d.vocab = 65536;
    char *big = make_dir("trainer-65536", &d);
    g.init_from = big;
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), -1);
    assert_non_null(strstr(err, "a shape the model does not take (--vocab 65536: expected"));
    free(big);
    g.init_from = dir;
    char *path = weights_path(dir);
    tu_write_file(path, "x", 1);
    assert_int_equal(gpt_hf_apply_options(&g, err, sizeof err), -1);
    assert_non_null(strstr(err, "--init-from: "));
    assert_non_null(strstr(err, "too short"));
    free(path);

    /* --export-hf: an existing directory, a new one in an existing parent;
     * refused: a missing parent, a file, a directory in the file's place */
    assert_int_equal(gpt_hf_check_export(dir, NULL, err, sizeof err), 0);
    char other[512];
    snprintf(other, sizeof other, "%s/new/", root);
    assert_int_equal(gpt_hf_check_export(other, NULL, err, sizeof err), 0);
    snprintf(other, sizeof other, "%s/no/such", root);
    assert_int_equal(gpt_hf_check_export(other, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "--export-hf"));
    assert_non_null(strstr(err, "does not exist"));
    snprintf(other, sizeof other, "%s/config.json", dir);
    assert_int_equal(gpt_hf_check_export(other, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a directory"));
    /* the directory of --data; a file of --data in the way; a link to nothing */
    assert_int_equal(gpt_hf_check_export(dir, dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "is the directory of --data"));
    assert_int_equal(gpt_hf_check_export(dir, other, err, sizeof err), -1);
    assert_non_null(strstr(err, "would replace"));
    assert_non_null(strstr(err, "a file of --data"));
    snprintf(other, sizeof other, "%s/dangling", root);
    assert_int_equal(symlink("nowhere", other), 0);
    assert_int_equal(gpt_hf_check_export(other, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    snprintf(other, sizeof other, "%s/config.json", dir);
    remove(other);
    assert_int_equal(mkdir(other, 0777), 0);
    assert_int_equal(gpt_hf_check_export(dir, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "config.json is a directory"));
    free(dir);
}

static int setup(void **state)
{
    (void)state;
    root = tu_mkdtemp("test_gpt_hf");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir_tree(root);
    free(root);
    return 0;
}

TU_MAIN("gpt_hf", setup, teardown, cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_variants), cmocka_unit_test(test_load_f16),
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_refuse_tensors),
        cmocka_unit_test(test_refuse_file), cmocka_unit_test(test_refuse_config),
        cmocka_unit_test(test_trainer_options))
