/* gpt_hf.c - Hugging Face GPT-2 directories in and out (see gpt_hf.h):
 * the tensors' names on both sides, config.json read and written, the
 * weights mapped from model.safetensors (gpt_safetensors.c) and back. */
#define _POSIX_C_SOURCE 200809L
#include "gpt_hf.h"
#include "dirpath.h"
#include "errmsg.h"
#include "gpt_safetensors.h"
#include "input_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HF_PREFIX     "transformer."
#define HF_CONFIG     "config.json"
#define HF_WEIGHTS    "model.safetensors"
#define HF_CONFIG_MAX (1u << 20) /* bytes; GPT-2's is under 1 KiB */
/* the kernels' LayerNorm epsilon (gpt.cl) */
#define HF_LN_EPS 1e-5

/* ------------------------------------------------------------ names */

void gpt_hf_tensor(const gpt_hf_config *c, int i, gpt_tensor_info *out)
{
    gpt_tensor(&c->shape, i, out);
    /* wte's rows are the directory's (the trainer's model has as many:
     * gpt_options_resolve) */
    if (!strcmp(out->name, "wte"))
        out->dims[0] = c->vocab;
}

static uint64_t tensor_numel(const gpt_tensor_info *t)
{
    return t->ndim == 2 ? (uint64_t)t->dims[0] * t->dims[1] : t->dims[0];
}

uint64_t gpt_hf_param_count(const gpt_hf_config *c)
{
    uint64_t n = 0;
    for (int i = 0; i < gpt_tensor_count(&c->shape); i++) {
        gpt_tensor_info t;
        gpt_hf_tensor(c, i, &t);
        n += tensor_numel(&t);
    }
    return n;
}

/* The block's linear weights, which transformers keeps as Conv1D [in, out]
 * and clgrad as nn.Linear [out x in]. */
static int is_conv1d(const gpt_tensor_info *t)
{
    return t->ndim == 2 && !strncmp(t->name, "h.", 2);
}

/* transformers' name of clgrad's tensor, without the prefix: the
 * embeddings are modules ("wte.weight"), the rest is named alike. */
static void hf_name(const gpt_tensor_info *t, char *buf, size_t len)
{
    int emb = !strcmp(t->name, "wte") || !strcmp(t->name, "wpe");
    snprintf(buf, len, "%s%s", t->name, emb ? ".weight" : "");
}

/* The file's shape of t: Conv1D weights transposed. */
static void hf_shape(const gpt_tensor_info *t, unsigned *ndim, uint64_t shape[2])
{
    *ndim = (unsigned)t->ndim;
    shape[0] = is_conv1d(t) ? t->dims[1] : t->dims[0];
    shape[1] = is_conv1d(t) ? t->dims[0] : t->dims[1];
}

static void path_join(char *buf, size_t len, const char *dir, const char *file)
{
    size_t n = strlen(dir);
    snprintf(buf, len, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", file);
}

/* ------------------------------------------------------------ config.json */

/* A positive integer key of cfg (at most max). */
static int config_uint(const cJSON *cfg, const char *path, const char *key, unsigned max,
                       unsigned *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v)
        return errmsg_set(err, errlen, "%s: no %s", path, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 1 && d <= max) || d != floor(d))
        return errmsg_set(err, errlen, "%s: %s is not an integer in 1..%u", path, key, max);
    *out = (unsigned)d;
    return 0;
}

/* A boolean key that must be absent or want. */
static int config_bool(const cJSON *cfg, const char *path, const char *key, int want,
                       const char *why, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v))
        return errmsg_set(err, errlen, "%s: %s is not true or false", path, key);
    if (cJSON_IsTrue(v) != want)
        return errmsg_set(err, errlen, "%s: %s is %s: another architecture (%s)", path, key,
                          want ? "false" : "true", why);
    return 0;
}

/* The keys that would make another model than clgrad's. */
static int config_architecture(const cJSON *cfg, const char *path, unsigned width, char *err,
                               size_t errlen)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, "gpt2") != 0)
        return errmsg_set(err, errlen, "%s: model_type is %s, not \"gpt2\": only GPT-2 loads", path,
                          cJSON_IsString(mt) ? mt->valuestring : "missing");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "activation_function");
    /* gelu_pytorch_tanh is the same function as gelu_new */
    if (act && !(cJSON_IsString(act) && (!strcmp(act->valuestring, "gelu_new") ||
                                         !strcmp(act->valuestring, "gelu_pytorch_tanh"))))
        return errmsg_set(err, errlen,
                          "%s: activation_function is %s: clgrad's MLP computes GELU with the "
                          "tanh approximation (gelu_new) only",
                          path, cJSON_IsString(act) ? act->valuestring : "not a string");
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(cfg, "n_inner");
    if (inner && !cJSON_IsNull(inner) &&
        !(cJSON_IsNumber(inner) && inner->valuedouble == 4.0 * width))
        return errmsg_set(err, errlen,
                          "%s: n_inner is set (not null, nor 4 n_embd = %u): clgrad's MLP is "
                          "4 n_embd wide",
                          path, 4 * width);
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(cfg, "layer_norm_epsilon");
    if (eps && !(cJSON_IsNumber(eps) && fabs(eps->valuedouble - HF_LN_EPS) <= 1e-12))
        return errmsg_set(err, errlen,
                          "%s: layer_norm_epsilon is %s%g: clgrad's LayerNorm kernels use 1e-05",
                          path, cJSON_IsNumber(eps) ? "" : "not a number: ",
                          cJSON_IsNumber(eps) ? eps->valuedouble : 0.0);
    static const struct {
        const char *key;
        int want;
        const char *why;
    } flags[] = {
        {"scale_attn_by_inverse_layer_idx", 0, "attention scaled by 1 / layer index"},
        {"reorder_and_upcast_attn", 0, "the attention reordered and upcast"},
        {"add_cross_attention", 0, "cross-attention blocks"},
        {"scale_attn_weights", 1, "attention without the 1 / sqrt(head size) scale"},
        {"tie_word_embeddings", 1, "an lm_head of its own, not tied to wte"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
        if (config_bool(cfg, path, flags[i].key, flags[i].want, flags[i].why, err, errlen) != 0)
            return -1;
    return 0;
}

int gpt_hf_read_config(const char *dir, gpt_hf_config *out, char *err, size_t errlen)
{
    char path[PATH_MAX], why[256];
    path_join(path, sizeof path, dir, HF_CONFIG);
    size_t size = 0;
    int fd = input_open(path, HF_CONFIG_MAX, &size, why, sizeof why);
    if (fd < 0)
        return errmsg_set(err, errlen, "%s: %s", path, why);
    char *text = malloc(size + 1);
    int rc = text ? input_read(fd, text, size, why, sizeof why) : -1;
    close(fd);
    if (rc != 0) {
        free(text);
        return errmsg_set(err, errlen, "%s: %s", path, text ? why : "out of host memory");
    }
    cJSON *cfg = cJSON_ParseWithLength(text, size);
    free(text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return errmsg_set(err, errlen, "%s: not a JSON object", path);
    }
    gpt_hf_config c;
    memset(&c, 0, sizeof c); /* the shape's other fields: their defaults */
    rc = config_uint(cfg, path, "n_layer", GPT_MAX_LAYERS, &c.shape.layers, err, errlen);
    if (rc == 0)
        rc = config_uint(cfg, path, "n_head", 1u << 16, &c.shape.heads, err, errlen);
    if (rc == 0)
        rc = config_uint(cfg, path, "n_embd", 1u << 16, &c.shape.width, err, errlen);
    if (rc == 0)
        rc = config_uint(cfg, path, "n_positions", 1u << 16, &c.shape.context, err, errlen);
    if (rc == 0)
        rc = config_uint(cfg, path, "vocab_size", 1u << 24, &c.vocab, err, errlen);
    if (rc == 0 && c.shape.width % c.shape.heads != 0)
        rc = errmsg_set(err, errlen, "%s: n_head %u does not divide n_embd %u", path, c.shape.heads,
                        c.shape.width);
    if (rc == 0)
        rc = config_architecture(cfg, path, c.shape.width, err, errlen);
    cJSON_Delete(cfg);
    c.shape.vocab = c.vocab;
    if (rc == 0 && gpt_shape_check(&c.shape, why, sizeof why) != 0)
        rc = errmsg_set(err, errlen, "%s: a shape the model does not take (%s)", path, why);
    if (rc == 0)
        *out = c;
    return rc;
}

/* ------------------------------------------------------------ weights in */

/* What each entry of the file is to the model. */
enum { ENTRY_EXTRA = -1, ENTRY_BUFFER = -2, ENTRY_HEAD = -3 };

/* The tensor index of the entry named name, or one of the ENTRY_ kinds:
 * the transformer's tensors with or without "transformer." (GPT2LMHeadModel
 * and GPT2Model save them so), the head only without it. */
static int entry_role(const gpt_hf_config *c, const char *name)
{
    int prefixed = !strncmp(name, HF_PREFIX, strlen(HF_PREFIX));
    const char *bare = prefixed ? name + strlen(HF_PREFIX) : name;
    if (!prefixed && !strcmp(bare, "lm_head.weight"))
        return ENTRY_HEAD;
    for (int i = 0; i < gpt_tensor_count(&c->shape); i++) {
        gpt_tensor_info t;
        char hn[64];
        gpt_hf_tensor(c, i, &t);
        hf_name(&t, hn, sizeof hn);
        if (!strcmp(bare, hn))
            return i;
    }
    /* the attention's causal mask buffers of the model's own blocks */
    for (unsigned l = 0; l < c->shape.layers; l++) {
        char b[48], m[48];
        snprintf(b, sizeof b, "h.%u.attn.bias", l);
        snprintf(m, sizeof m, "h.%u.attn.masked_bias", l);
        if (!strcmp(bare, b) || !strcmp(bare, m))
            return ENTRY_BUFFER;
    }
    return ENTRY_EXTRA;
}

/* Each tensor of the model found once, in its shape; every other entry a
 * buffer or the tied head. found[i]: the entry of tensor i. */
static int map_entries(const st_file *f, const gpt_hf_config *c, int *found, const st_entry **head,
                       char *err, size_t errlen)
{
    int n = gpt_tensor_count(&c->shape);
    for (int i = 0; i < n; i++)
        found[i] = -1;
    *head = NULL;
    char name[ERRMSG_ESCAPED_SIZE(64)];
    for (size_t k = 0; k < f->n; k++) {
        const st_entry *e = &f->e[k];
        int i = entry_role(c, e->name);
        if (i == ENTRY_EXTRA)
            return errmsg_set(err, errlen,
                              "%s: tensor '%s' is not one of GPT-2's (n_layer %u): an extra "
                              "tensor, another architecture or a damaged file",
                              f->path, errmsg_escape(e->name, name, sizeof name), c->shape.layers);
        if (i == ENTRY_BUFFER)
            continue;
        gpt_tensor_info t;
        unsigned nd = 2;
        uint64_t want[2] = {c->vocab, c->shape.width};
        if (i == ENTRY_HEAD) {
            *head = e;
            snprintf(t.name, sizeof t.name, "lm_head");
        } else {
            gpt_hf_tensor(c, i, &t);
            if (found[i] >= 0)
                return errmsg_set(err, errlen, "%s: tensor '%s' is there twice, as '%s' and '%s'",
                                  f->path, t.name, f->e[found[i]].name, e->name);
            found[i] = (int)k;
            hf_shape(&t, &nd, want);
        }
        int same = e->ndim == nd && e->shape[0] == want[0] && (nd == 1 || e->shape[1] == want[1]);
        if (!same) {
            char got[96] = "", w[48];
            for (unsigned d = 0; d < e->ndim; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", d ? ", " : "",
                         (unsigned long long)e->shape[d]);
            if (nd == 1)
                snprintf(w, sizeof w, "[%llu]", (unsigned long long)want[0]);
            else
                snprintf(w, sizeof w, "[%llu, %llu]", (unsigned long long)want[0],
                         (unsigned long long)want[1]);
            return errmsg_set(err, errlen, "%s: tensor '%s' has shape [%s], expected %s%s", f->path,
                              e->name, got, w,
                              i >= 0 && is_conv1d(&t) ? " (Conv1D: [in, out])" : "");
        }
    }
    for (int i = 0; i < n; i++)
        if (found[i] < 0) {
            gpt_tensor_info t;
            char hn[64];
            gpt_hf_tensor(c, i, &t);
            hf_name(&t, hn, sizeof hn);
            return errmsg_set(err, errlen, "%s: tensor '" HF_PREFIX "%s' is missing", f->path, hn);
        }
    return 0;
}

/* Tensor t's entry e into dst (t's floats in clgrad's layout), a row of
 * the file at a time through row (the file's row: cols floats). */
static int read_tensor(const st_file *f, const st_entry *e, const gpt_tensor_info *t, float *dst,
                       float *row, char *err, size_t errlen)
{
    uint64_t rows = e->ndim == 2 ? e->shape[0] : 1, cols = st_numel(e) / (rows ? rows : 1);
    for (uint64_t r = 0; r < rows; r++) {
        float *to = is_conv1d(t) ? row : dst + r * cols;
        if (st_read_floats(f, e, r * cols, cols, to, err, errlen) != 0)
            return -1;
        /* Conv1D row r (input r) is column r of [out x in] */
        for (uint64_t k = 0; is_conv1d(t) && k < cols; k++)
            dst[k * rows + r] = row[k];
    }
    return 0;
}

/* lm_head.weight equal to the loaded wte, bit for bit. */
static int check_tied(const st_file *f, const st_entry *head, const float *wte, uint64_t n,
                      float *row, uint64_t cols, char *err, size_t errlen)
{
    for (uint64_t at = 0; at < n; at += cols) {
        if (st_read_floats(f, head, at, cols, row, err, errlen) != 0)
            return -1;
        if (memcmp(row, wte + at, cols * sizeof *row) != 0)
            return errmsg_set(err, errlen,
                              "%s: tensor 'lm_head.weight' differs from wte (row %llu): clgrad "
                              "ties the head to wte, and this model's is its own",
                              f->path, (unsigned long long)(at / cols));
    }
    return 0;
}

static int load_weights(const st_file *f, const gpt_hf_config *c, const int *found,
                        const st_entry *head, float *out, char *err, size_t errlen)
{
    size_t width = c->shape.width;
    float *row = malloc(4 * width * sizeof *row); /* a Conv1D row: at most 4C */
    if (!row)
        return errmsg_set(err, errlen, "%s: out of host memory", f->path);
    int rc = 0;
    float *dst = out;
    for (int i = 0; rc == 0 && i < gpt_tensor_count(&c->shape); i++) {
        gpt_tensor_info t;
        gpt_hf_tensor(c, i, &t);
        rc = read_tensor(f, &f->e[found[i]], &t, dst, row, err, errlen);
        dst += tensor_numel(&t);
    }
    /* wte is the first tensor */
    if (rc == 0 && head)
        rc = check_tied(f, head, out, (uint64_t)c->vocab * width, row, width, err, errlen);
    free(row);
    return rc;
}

int gpt_hf_load(const char *dir, gpt_hf_config *cfg, float **params, char *err, size_t errlen)
{
    if (params)
        *params = NULL;
    gpt_hf_config c;
    if (gpt_hf_read_config(dir, &c, err, errlen) != 0)
        return -1;
    char path[PATH_MAX];
    path_join(path, sizeof path, dir, HF_WEIGHTS);
    st_file f;
    if (st_open(&f, path, err, errlen) != 0)
        return -1;
    int found[GPT_MAX_TENSORS];
    const st_entry *head = NULL;
    int rc = map_entries(&f, &c, found, &head, err, errlen);
    float *out = NULL;
    if (rc == 0 && params) {
        uint64_t n = gpt_hf_param_count(&c);
        if (!(out = malloc(n * sizeof *out)))
            rc = errmsg_set(err, errlen, "%s: out of host memory for %llu parameters", path,
                            (unsigned long long)n);
        else
            rc = load_weights(&f, &c, found, head, out, err, errlen);
    }
    st_close(&f);
    if (rc != 0) {
        free(out);
        return -1;
    }
    *cfg = c;
    if (params)
        *params = out;
    return 0;
}

/* ------------------------------------------------------------ out */

static int write_config(const char *dir, const gpt_hf_config *c, char *err, size_t errlen)
{
    char path[PATH_MAX];
    path_join(path, sizeof path, dir, HF_CONFIG);
    atomic_file a;
    if (atomic_file_open(&a, path, err, errlen) != 0)
        return -1;
    /* GPT-2's end-of-text token only where its vocabulary is GPT-2's */
    char eot[16] = "null";
    if (c->vocab == 50257)
        snprintf(eot, sizeof eot, "50256");
    const gpt_shape *s = &c->shape;
    atomic_file_printf(
        &a,
        "{\n  \"activation_function\": \"gelu_new\",\n"
        "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
        "  \"attn_pdrop\": 0.0,\n  \"bos_token_id\": %s,\n  \"embd_pdrop\": 0.0,\n"
        "  \"eos_token_id\": %s,\n  \"initializer_range\": 0.02,\n"
        "  \"layer_norm_epsilon\": 1e-05,\n  \"model_type\": \"gpt2\",\n"
        "  \"n_embd\": %u,\n  \"n_head\": %u,\n  \"n_inner\": null,\n  \"n_layer\": %u,\n"
        "  \"n_positions\": %u,\n  \"reorder_and_upcast_attn\": false,\n"
        "  \"resid_pdrop\": 0.0,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
        "  \"scale_attn_weights\": true,\n  \"tie_word_embeddings\": true,\n"
        "  \"torch_dtype\": \"float32\",\n  \"use_cache\": true,\n  \"vocab_size\": %u\n}\n",
        eot, eot, s->width, s->heads, s->layers, s->context, c->vocab);
    return atomic_file_commit(&a, err, errlen);
}

static int write_weights(const char *dir, const gpt_hf_config *c, const float *params, char *err,
                         size_t errlen)
{
    char path[PATH_MAX];
    path_join(path, sizeof path, dir, HF_WEIGHTS);
    int n = gpt_tensor_count(&c->shape);
    st_desc desc[GPT_MAX_TENSORS];
    char names[GPT_MAX_TENSORS][80];
    for (int i = 0; i < n; i++) {
        gpt_tensor_info t;
        gpt_hf_tensor(c, i, &t);
        char hn[64];
        hf_name(&t, hn, sizeof hn);
        snprintf(names[i], sizeof names[i], HF_PREFIX "%s", hn);
        desc[i].name = names[i];
        hf_shape(&t, &desc[i].ndim, desc[i].shape);
    }
    float *row = malloc(4 * (size_t)c->shape.width * sizeof *row);
    atomic_file a;
    if (!row)
        return errmsg_set(err, errlen, "%s: out of host memory", path);
    if (atomic_file_open(&a, path, err, errlen) != 0 ||
        st_write_header(&a, desc, (size_t)n, err, errlen) != 0) {
        atomic_file_abort(&a);
        free(row);
        return -1;
    }
    const float *src = params;
    for (int i = 0; i < n; i++) {
        gpt_tensor_info t;
        gpt_hf_tensor(c, i, &t);
        uint64_t count = tensor_numel(&t);
        if (!is_conv1d(&t))
            atomic_file_write(&a, src, count * sizeof *src);
        /* [out x in] to Conv1D's [in, out]: column r becomes row r */
        for (size_t r = 0; is_conv1d(&t) && r < t.dims[1]; r++) {
            for (size_t k = 0; k < t.dims[0]; k++)
                row[k] = src[k * t.dims[1] + r];
            atomic_file_write(&a, row, t.dims[0] * sizeof *row);
        }
        src += count;
    }
    free(row);
    return atomic_file_commit(&a, err, errlen);
}

int gpt_hf_export(const char *dir, const gpt_hf_config *c, const float *params, char *err,
                  size_t errlen)
{
    char failed[PATH_MAX];
    if (dirpath_make(dir, failed, sizeof failed) != 0)
        return errmsg_set(err, errlen, "%s: cannot create the directory %s: %s", dir, failed,
                          strerror(errno));
    /* the weights first: a config beside old weights would describe them wrongly */
    if (write_weights(dir, c, params, err, errlen) != 0)
        return -1;
    return write_config(dir, c, err, errlen);
}
