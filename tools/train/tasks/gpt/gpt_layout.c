/* gpt_layout.c - the GPT model's shape, tensors, initialization, the one
 * table of its activation buffers (which gpt_create allocates and
 * gpt_activation_bytes plans) and its GEMM shapes (see gpt_model.h). */
#include "gpt_internal.h"
#include "errmsg.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Limits that keep every size well inside 64 bits; the width also keeps
 * the LayerNorm backward's 2C floats of local memory within the 32 KiB
 * every OpenCL device has (GPT-2 XL is 1600 wide). */
#define GPT_MAX_WIDTH   16384u
#define GPT_MAX_CONTEXT 16384u

int gpt_shape_check(const gpt_shape *s, char *err, size_t errlen)
{
    if (s->layers < 1 || s->layers > GPT_MAX_LAYERS)
        return errmsg_set(err, errlen, "--layers %u: expected 1..%d", s->layers, GPT_MAX_LAYERS);
    if (s->width < 1 || s->width > GPT_MAX_WIDTH)
        return errmsg_set(err, errlen, "--width %u: expected 1..%u", s->width, GPT_MAX_WIDTH);
    if (s->heads < 1 || s->heads > s->width)
        return errmsg_set(err, errlen, "--heads %u: expected 1..--width (%u)", s->heads, s->width);
    if (s->width % s->heads != 0)
        return errmsg_set(err, errlen, "--heads %u does not divide --width %u", s->heads, s->width);
    if (s->width / s->heads > GPT_FLASH_MAX_HS)
        return errmsg_set(err, errlen,
                          "--heads %u: a head of %u (--width / --heads) is above the attention's "
                          "%d",
                          s->heads, s->width / s->heads, GPT_FLASH_MAX_HS);
    if (s->context < 1 || s->context > GPT_MAX_CONTEXT)
        return errmsg_set(err, errlen, "--context %u: expected 1..%u", s->context, GPT_MAX_CONTEXT);
    if (s->vocab < 1 || s->vocab > GPT_KERNELS_VOCAB_MAX)
        return errmsg_set(err, errlen, "--vocab %u: expected 1..%d", s->vocab,
                          GPT_KERNELS_VOCAB_MAX);
    return 0;
}

unsigned gpt_logits_ld(const gpt_shape *s)
{
    return (s->vocab + GPT_LOGITS_ALIGN - 1) / GPT_LOGITS_ALIGN * GPT_LOGITS_ALIGN;
}

unsigned gpt_head_chunk_rows(const gpt_shape *s)
{
    uint64_t cap = s->head_rows ? s->head_rows : GPT_HEAD_CHUNK_FLOATS / gpt_logits_ld(s);
    return cap ? (unsigned)cap : 1;
}

unsigned gpt_head_rows(const gpt_shape *s, unsigned rows)
{
    uint64_t n = (uint64_t)rows * s->context, cap = gpt_head_chunk_rows(s);
    return (unsigned)(n < cap ? n : cap);
}

uint64_t gpt_buf_total(const gpt_buf_size *e, unsigned rows)
{
    uint64_t n = rows * e->per_seq + e->fixed;
    return e->cap && n > e->cap ? e->cap : n;
}

static const char *const recompute_names[GPT_RECOMPUTE_MODES] = {
    [GPT_RECOMPUTE_NORM] = "norm", [GPT_RECOMPUTE_NONE] = "none", [GPT_RECOMPUTE_BLOCK] = "block"};

const char *gpt_recompute_name(gpt_recompute r)
{
    return (unsigned)r < GPT_RECOMPUTE_MODES ? recompute_names[r] : "?";
}

int gpt_recompute_parse(const char *name)
{
    for (int i = 0; i < GPT_RECOMPUTE_MODES; i++)
        if (strcmp(name, recompute_names[i]) == 0)
            return i;
    return -1;
}

int gpt_tensor_count(const gpt_shape *s)
{
    return 4 + GPT_BLOCK_PARAMS * (int)s->layers;
}

/* A block's tensors in order: name, dims as multiples of C (rows x cols;
 * cols 0 for a vector), whether weight decay applies. */
static const struct {
    const char *name;
    unsigned rows, cols;
    int decay;
} block_params[GPT_BLOCK_PARAMS] = {
    {"ln_1.weight", 1, 0, 0},      {"ln_1.bias", 1, 0, 0},          {"attn.c_attn.weight", 3, 1, 1},
    {"attn.c_attn.bias", 3, 0, 0}, {"attn.c_proj.weight", 1, 1, 1}, {"attn.c_proj.bias", 1, 0, 0},
    {"ln_2.weight", 1, 0, 0},      {"ln_2.bias", 1, 0, 0},          {"mlp.c_fc.weight", 4, 1, 1},
    {"mlp.c_fc.bias", 4, 0, 0},    {"mlp.c_proj.weight", 1, 4, 1},  {"mlp.c_proj.bias", 1, 0, 0},
};

void gpt_tensor(const gpt_shape *s, int i, gpt_tensor_info *out)
{
    size_t C = s->width;
    memset(out, 0, sizeof *out);
    int last = gpt_lnf_tensor(s, 0);
    if (i == GPT_WTE || i == GPT_WPE) {
        snprintf(out->name, sizeof out->name, "%s", i == GPT_WTE ? "wte" : "wpe");
        out->dims[0] = i == GPT_WTE ? s->vocab : s->context;
        out->dims[1] = C;
        out->ndim = 2;
        out->decay = 1;
    } else if (i >= last) {
        snprintf(out->name, sizeof out->name, "ln_f.%s", i == last ? "weight" : "bias");
        out->dims[0] = C;
        out->ndim = 1;
    } else {
        int l = (i - 2) / GPT_BLOCK_PARAMS, j = (i - 2) % GPT_BLOCK_PARAMS;
        snprintf(out->name, sizeof out->name, "h.%d.%s", l, block_params[j].name);
        out->dims[0] = block_params[j].rows * C;
        out->dims[1] = block_params[j].cols * C;
        out->ndim = block_params[j].cols ? 2 : 1;
        out->decay = block_params[j].decay;
    }
}

uint64_t gpt_param_count(const gpt_shape *s)
{
    uint64_t n = 0;
    for (int i = 0; i < gpt_tensor_count(s); i++) {
        gpt_tensor_info t;
        gpt_tensor(s, i, &t);
        n += gpt_tensor_size(&t);
    }
    return n;
}

void gpt_init_params(const void *shape, uint64_t seed, float *host)
{
    const gpt_shape *s = shape;
    train_rng r = train_rng_seed(seed, 0);
    /* GPT-2: the projections into the residual stream scaled down by the
     * number of residual additions, 2 per block */
    double proj_std = 0.02 / sqrt(2.0 * s->layers);
    for (int i = 0; i < gpt_tensor_count(s); i++) {
        gpt_tensor_info t;
        gpt_tensor(s, i, &t);
        uint64_t n = gpt_tensor_size(&t);
        int j = (i - 2) % GPT_BLOCK_PARAMS;
        int is_block = i >= 2 && i < gpt_lnf_tensor(s, 0);
        if (t.ndim == 2) {
            double std = is_block && (j == GPT_ATTPROJ_W || j == GPT_FCPROJ_W) ? proj_std : 0.02;
            for (uint64_t e = 0; e < n; e++)
                host[e] = (float)(std * train_rng_normal(&r));
        } else {
            /* LayerNorm weights 1; its biases and the linear biases 0 */
            int ln_weight =
                i == gpt_lnf_tensor(s, 0) || (is_block && (j == GPT_LN1_W || j == GPT_LN2_W));
            for (uint64_t e = 0; e < n; e++)
                host[e] = ln_weight ? 1.0f : 0.0f;
        }
        host += n;
    }
}

int gpt_buf_count(const gpt_shape *s)
{
    return GPT_GLOBAL + (int)s->layers * GPT_PER_LAYER;
}

/* Elements per sequence of layer buffer kind in a mode (none: 0, not
 * allocated). */
static uint64_t layer_elems(const gpt_shape *s, int l, int kind)
{
    uint64_t T = s->context, TC = T * s->width;
    int keeps_outputs = s->recompute == GPT_RECOMPUTE_NONE;
    if (s->recompute == GPT_RECOMPUTE_BLOCK && kind != GPT_RES3 && l > 0)
        return 0; /* layer 0's serve every block */
    switch (kind) {
    case GPT_LN1_STATS:
    case GPT_LN2_STATS: return 2 * T;
    case GPT_QKV: return 3 * TC;
    case GPT_LSE: return (uint64_t)s->heads * T;
    case GPT_FCH: return 4 * TC;
    case GPT_LN1_OUT:
    case GPT_LN2_OUT: return keeps_outputs ? TC : 0;
    case GPT_GELU_OUT: return keeps_outputs ? 4 * TC : 0;
    default: return TC; /* ATTY, RES2, RES3 */
    }
}

gpt_buf_size gpt_buf_elems(const gpt_shape *s, int buf)
{
    uint64_t T = s->context, TC = T * s->width;
    gpt_buf_size z = {0, 0, 0};
    if (buf >= GPT_GLOBAL) {
        int i = buf - GPT_GLOBAL;
        z.per_seq = layer_elems(s, i / GPT_PER_LAYER, i % GPT_PER_LAYER);
        return z;
    }
    switch (buf) {
    case GPT_LNF_STATS: z.per_seq = 2 * T; break;
    case GPT_LOGITS: /* a chunk of the head's rows at most */
        z.per_seq = T * gpt_logits_ld(s);
        z.cap = (uint64_t)gpt_head_chunk_rows(s) * gpt_logits_ld(s);
        break;
    case GPT_ROW_LOSS: z.per_seq = T; break;
    case GPT_WIDE: z.per_seq = 4 * TC; break;
    case GPT_DSUM: z.per_seq = (uint64_t)s->heads * T; break;
    /* The kernels' scratch as a function of the positions: per sequence
     * what T positions need (gpt_create checks that rows * that covers
     * rows * T positions). */
    case GPT_SCRATCH: z.per_seq = gpt_scratch_floats(s->context, s->width); break;
    case GPT_SORT: /* gpt_sort_ints: at most 5 N + V + 257 */
        z.per_seq = 5 * T;
        z.fixed = (uint64_t)s->vocab + 257;
        break;
    default: z.per_seq = TC; break; /* ENCODED, DRES, DBUF */
    }
    return z;
}

gpt_act_bytes gpt_activation_bytes(const gpt_shape *s)
{
    gpt_act_bytes b = {0, 0, 0, 0};
    for (int i = 0; i < gpt_buf_count(s); i++) {
        gpt_buf_size e = gpt_buf_elems(s, i);
        if (e.cap) { /* the logits: no fixed part */
            b.logits_per_seq += 4 * e.per_seq;
            b.logits_cap += 4 * e.cap;
            continue;
        }
        b.per_seq += 4 * e.per_seq; /* floats and ints alike */
        b.fixed += 4 * e.fixed;
    }
    return b;
}

uint64_t gpt_act_total(const gpt_act_bytes *a, unsigned rows)
{
    uint64_t logits = rows * a->logits_per_seq;
    return rows * a->per_seq + a->fixed + (logits < a->logits_cap ? logits : a->logits_cap);
}

size_t gpt_gemm_shapes(const gpt_shape *s, unsigned B, mlp_gemm_shape *out, size_t cap)
{
    size_t N = (size_t)B * s->context, C = s->width, V = s->vocab;
    unsigned L = s->layers;
    /* per block: c_attn C -> 3C, attn.c_proj C -> C, c_fc C -> 4C,
     * mlp.c_proj 4C -> C; the head C -> V once */
    static const struct {
        const char *fwd, *dw, *dx;
        unsigned in, out;
    } lin[] = {{"c_attn forward", "c_attn dW", "c_attn dX", 1, 3},
               {"attn.c_proj forward", "attn.c_proj dW", "attn.c_proj dX", 1, 1},
               {"c_fc forward", "c_fc dW", "c_fc dX", 1, 4},
               {"mlp.c_proj forward", "mlp.c_proj dW", "mlp.c_proj dX", 4, 1}};
    size_t n = 0;
    for (size_t i = 0; i < sizeof lin / sizeof *lin; i++) {
        size_t in = lin[i].in * C, o = lin[i].out * C;
        n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){N, o, in, 0, 1, L, lin[i].fwd, 1});
        n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){o, in, N, 1, 0, L, lin[i].dw, 1});
        n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){N, in, o, 0, 0, L, lin[i].dx, 1});
    }
    n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){N, V, C, 0, 1, 1, "head forward", 1});
    n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){V, C, N, 1, 0, 1, "head dW (wte)", 1});
    n = mlp_gemm_shape_add(out, n, cap, (mlp_gemm_shape){N, C, V, 0, 0, 1, "head dX", 1});
    return n;
}
