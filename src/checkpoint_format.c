/* checkpoint_format.c - what the checkpoint writer and reader agree on
 * (checkpoint_format.h): the names of dtypes and optimizers, the
 * configuration values a checkpoint records and how a load compares them,
 * the header length's framing and the header CRC, and the UTF-8 rule for
 * keys. Host-only: fuzz/ links it with the parser. */
#include "checkpoint_format.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ names and sizes */

const char *clg__ckpt_dtype_name(clg_ckpt_dtype dtype)
{
    switch (dtype) {
    case CLG_CKPT_F32: return "F32";
    case CLG_CKPT_F16: return "F16";
    case CLG_CKPT_BF16: return "BF16";
    case CLG_CKPT_I32: return "I32";
    case CLG_CKPT_U8: return "U8";
    }
    return "?";
}

size_t clg__ckpt_dtype_size(clg_ckpt_dtype dtype)
{
    return dtype == CLG_CKPT_U8 ? 1 : (dtype == CLG_CKPT_F16 || dtype == CLG_CKPT_BF16) ? 2 : 4;
}

/* ------------------------------------------------------------ configuration */

/* The configuration a checkpoint records, in the order a load compares it:
 * the settings that change what the saved state means, so that loading it
 * under other values would silently train differently from the saved run.
 *   amsgrad           (Adam, AdamW) whether state2 is the running max
 *   acc_dtype         the accumulator's dtype (fp32, or bf16 with
 *                     stochastic rounding)
 *   param_copy_dtype  the low-precision parameter copy
 *   normalize         mean or sum: what the accumulated sum is divided by
 *   nonfinite         the policy; a load compares only whether it is
 *                     skip_micro, the one mode whose step block holds the
 *                     cycle's micro-step count and weights (switching
 *                     between the others is the caller's choice)
 *   loss_scale        none, static or dynamic (the scale itself is state,
 *                     in the step block)
 *   loss_scale_init   static only: the scale, which the step block holds
 *   loss_scale_growth, _backoff, _interval, _min, _max   dynamic only
 *   state_dtype       how the optimizer states are stored (fp32, bf16, q8,
 *                     q4); a file saved before it was recorded is fp32
 *   state_min_size    q8/q4 only: which tensors keep fp32 states
 *   master_dtype      the parameters' dtype (fp32, bf16); absent: fp32
 * state_rounding is not: it changes only how later updates round.
 * Hyperparameters (lr, betas, eps, weight decay, momentum, schedule,
 * clipping, k) are the caller's business, as is the seed: a run may change
 * them between resumes on purpose. */
const char *const clg__ckpt_config_fields[] = {
    "amsgrad",
    "acc_dtype",
    "param_copy_dtype",
    "normalize",
    "nonfinite",
    "loss_scale",
    "loss_scale_init",
    "loss_scale_growth",
    "loss_scale_backoff",
    "loss_scale_interval",
    "loss_scale_min",
    "loss_scale_max",
    "state_dtype",
    "state_min_size",
    "master_dtype",
};
const size_t clg__ckpt_n_config_fields =
    sizeof clg__ckpt_config_fields / sizeof clg__ckpt_config_fields[0];
_Static_assert(sizeof clg__ckpt_config_fields / sizeof clg__ckpt_config_fields[0] <=
                   CLG_CKPT_MAX_CONFIG,
               "a layout holds at most CLG_CKPT_MAX_CONFIG settings");

/* Fields a file may lack (saved before they were recorded), and the value
 * such a file has. */
const char *clg__ckpt_config_before(const char *field)
{
    return strcmp(field, "state_dtype") == 0 || strcmp(field, "master_dtype") == 0 ? "fp32" : NULL;
}

static const char *nonfinite_text(clg_nonfinite_policy p)
{
    switch (p) {
    case CLG_NONFINITE_IGNORE: return "ignore";
    case CLG_NONFINITE_SKIP_UPDATE: return "skip_update";
    case CLG_NONFINITE_SKIP_MICRO: return "skip_micro";
    case CLG_NONFINITE_ERROR: return "error";
    }
    return "unknown";
}

static bool known_policy(const char *name)
{
    for (int p = CLG_NONFINITE_IGNORE; p <= CLG_NONFINITE_ERROR; p++)
        if (strcmp(name, nonfinite_text((clg_nonfinite_policy)p)) == 0)
            return true;
    return false;
}

static void setting(clg_ckpt_layout *layout, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void setting(clg_ckpt_layout *layout, const char *field, const char *fmt, ...)
{
    if (layout->n_config >= CLG_CKPT_MAX_CONFIG)
        return; /* cannot happen: clg__ckpt_config_fields has fewer */
    clg_ckpt_setting *s = &layout->config[layout->n_config++];
    s->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->value, sizeof s->value, fmt, ap);
    va_end(ap);
}

void clg__ckpt_layout_config(clg_ckpt_layout *layout, const clg_config *cfg)
{
    snprintf(layout->optimizer, sizeof layout->optimizer, "%s",
             clg_optimizer_name(cfg->optimizer));
    layout->n_config = 0;
    layout->loss_scale = (clg_ckpt_loss_scale){cfg->loss_scale, cfg->loss_scale_init,
                                               cfg->loss_scale_min, cfg->loss_scale_max,
                                               cfg->loss_scale_interval};
    /* %.9g prints every float so that it reads back exactly: equal text,
     * equal value. */
    if (cfg->optimizer == CLG_ADAM || cfg->optimizer == CLG_ADAMW)
        setting(layout, "amsgrad", "%d", cfg->amsgrad ? 1 : 0);
    setting(layout, "acc_dtype", "%s", clg_dtype_name(cfg->acc_dtype));
    setting(layout, "param_copy_dtype", "%s", clg_dtype_name(cfg->param_copy_dtype));
    setting(layout, "normalize", "%s", cfg->normalize == CLG_NORM_SUM ? "sum" : "mean");
    setting(layout, "nonfinite", "%s", nonfinite_text(cfg->nonfinite));
    switch (cfg->loss_scale) {
    case CLG_LOSS_SCALE_NONE: setting(layout, "loss_scale", "none"); break;
    case CLG_LOSS_SCALE_STATIC:
        setting(layout, "loss_scale", "static");
        setting(layout, "loss_scale_init", "%.9g", (double)cfg->loss_scale_init);
        break;
    case CLG_LOSS_SCALE_DYNAMIC:
        setting(layout, "loss_scale", "dynamic");
        setting(layout, "loss_scale_growth", "%.9g", (double)cfg->loss_scale_growth);
        setting(layout, "loss_scale_backoff", "%.9g", (double)cfg->loss_scale_backoff);
        setting(layout, "loss_scale_interval", "%u", cfg->loss_scale_interval);
        setting(layout, "loss_scale_min", "%.9g", (double)cfg->loss_scale_min);
        setting(layout, "loss_scale_max", "%.9g", (double)cfg->loss_scale_max);
        break;
    }
    setting(layout, "state_dtype", "%s", clg_dtype_name(cfg->state_dtype));
    if (cfg->state_dtype == CLG_Q8 || cfg->state_dtype == CLG_Q4)
        setting(layout, "state_min_size", "%llu", (unsigned long long)cfg->state_min_size);
    setting(layout, "master_dtype", "%s", clg_dtype_name(cfg->master_dtype));
}

const char *clg__ckpt_layout_setting(const clg_ckpt_layout *layout, const char *field)
{
    for (size_t i = 0; i < layout->n_config; i++)
        if (strcmp(layout->config[i].field, field) == 0)
            return layout->config[i].value;
    return NULL;
}

bool clg__ckpt_config_same(const char *field, const char *saved, const char *live)
{
    /* nonfinite: only whether it is skip_micro, the one mode whose step
     * block holds the cycle's micro-step count and weights */
    if (strcmp(field, "nonfinite") == 0)
        return known_policy(saved) &&
               (strcmp(saved, "skip_micro") == 0) == (strcmp(live, "skip_micro") == 0);
    return strcmp(saved, live) == 0;
}

/* ------------------------------------------------------------ framing and header CRC */

void clg__ckpt_put_le64(uint8_t out[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

uint64_t clg__ckpt_get_le64(const uint8_t in[8])
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | in[i];
    return v;
}

uint32_t clg__ckpt_header_crc(const uint8_t len_bytes[8], const uint8_t *header, size_t hlen)
{
    static const char zeros[8] = "00000000";
    const size_t p = CLG_CKPT_HEADER_PREFIX_LEN;
    uint32_t crc = clg__crc32(0, len_bytes, 8);
    crc = clg__crc32(crc, header, p);
    crc = clg__crc32(crc, zeros, 8);
    return clg__crc32(crc, header + p + 8, hlen - p - 8);
}

bool clg__ckpt_has_crc_field(const uint8_t *header, uint64_t hlen)
{
    const size_t p = CLG_CKPT_HEADER_PREFIX_LEN;
    return hlen >= p + 9 && memcmp(header, CLG_CKPT_HEADER_PREFIX, p) == 0 && header[p + 8] == '"';
}

static void put_hex32(uint8_t *dst, uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 7; i >= 0; i--, v >>= 4)
        dst[i] = (uint8_t)digits[v & 15];
}

void clg__ckpt_header_sign(const uint8_t len_bytes[8], uint8_t *header, size_t hlen)
{
    put_hex32(header + CLG_CKPT_HEADER_PREFIX_LEN, clg__ckpt_header_crc(len_bytes, header, hlen));
}

bool clg__ckpt_header_seal(uint8_t *file, size_t size)
{
    if (size < 8)
        return false;
    uint64_t hlen = clg__ckpt_get_le64(file);
    if (hlen > size - 8 || !clg__ckpt_has_crc_field(file + 8, hlen))
        return false;
    clg__ckpt_header_sign(file, file + 8, (size_t)hlen);
    return true;
}

/* ------------------------------------------------------------ UTF-8 */

/* No overlongs, no surrogates. */
bool clg__ckpt_utf8_valid_n(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, c &= 0x07;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            c = (c << 6) | (s[i + k] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

bool clg__ckpt_utf8_valid(const char *s)
{
    return clg__ckpt_utf8_valid_n((const uint8_t *)s, strlen(s));
}
