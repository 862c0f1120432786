/* test_qstate_bnb.c - Q8/Q4 states against bitsandbytes, from the fixtures
 * of tests/golden/gen_quant_fixtures.py (bnb_*.bin; tests/golden/README.md):
 *  - the maps: Q4's are bitsandbytes'/torchao's bit for bit; clgrad
 *    evaluates the Q8 maps in fp32 (src/qmaps.c), within 2 fp32 spacings of
 *    torch's (2 measured; most are equal);
 *  - quantize_blockwise: the device's absmax equal, its codes equal to
 *    bitsandbytes' nearest-value codes but where x / absmax lies within 4
 *    fp32 spacings of a boundary (the two maps' boundaries differ by up to
 *    2, the device's division rounds twice); the dequantization of
 *    bitsandbytes' codes within 2 spacings (equal for Q4); bitsandbytes'
 *    CPU-native codes are never nearer than clgrad's;
 *  - four AdamW8bit steps on a tensor of 4396 elements (Q8) and one of 100
 *    (fp32 states): params within PyTorch's fp32 tolerances, codes equal
 *    but near boundaries, absmax within 1e-6 (v: 2e-5, see below), the
 *    small tensor's states within fp32 tolerances. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qstate.h"
#include "ref_quant.h"
#include "reference.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CLG_SOURCE_ROOT
#define CLG_SOURCE_ROOT "."
#endif

/* ------------------------------------------------------------ fixtures */

typedef struct entry {
    char name[64];
    uint32_t kind; /* 0 f32, 1 u8 */
    uint32_t count;
    const uint8_t *data;
} entry;

typedef struct fixture {
    uint8_t *bytes;
    entry entries[256];
    size_t n;
} fixture;

static void load(fixture *f, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/golden/%s", CLG_SOURCE_ROOT, file);
    size_t size;
    f->bytes = tu_read_file(path, &size);
    f->n = 0;
    assert_true(size >= 12 && memcmp(f->bytes, "CLGQFIX1", 8) == 0);
    size_t at = 8;
    while (at + 4 <= size && memcmp(f->bytes + at, "END!", 4) != 0) {
        uint32_t len, kind, count;
        memcpy(&len, f->bytes + at, 4);
        assert_true(len < 64 && at + 4 + len + 8 <= size);
        entry *e = &f->entries[f->n++];
        assert_true(f->n < 256);
        memcpy(e->name, f->bytes + at + 4, len);
        e->name[len] = '\0';
        at += 4 + len;
        memcpy(&kind, f->bytes + at, 4);
        memcpy(&count, f->bytes + at + 4, 4);
        at += 8;
        e->kind = kind;
        e->count = count;
        e->data = f->bytes + at;
        at += (size_t)count * (kind == 0 ? 4 : 1);
        assert_true(at <= size);
    }
    assert_true(at + 4 == size);
}

static const entry *find(const fixture *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->entries[i].name, name))
            return &f->entries[i];
    fail_msg("fixture has no %s", name);
    return NULL;
}

/* A copy of an f32 array (the file's data may be unaligned). */
static float *floats(const fixture *f, const char *name, size_t *n)
{
    const entry *e = find(f, name);
    assert_int_equal(e->kind, 0);
    float *out = tu_xmalloc(e->count * sizeof *out + 1);
    memcpy(out, e->data, e->count * sizeof *out);
    if (n)
        *n = e->count;
    return out;
}

static const uint8_t *bytes(const fixture *f, const char *name, size_t n)
{
    const entry *e = find(f, name);
    assert_int_equal(e->kind, 1);
    assert_int_equal(e->count, n);
    return e->data;
}

static double spacing(float x)
{
    float a = fabsf(x);
    return (double)nextafterf(a, INFINITY) - (double)a;
}

/* ------------------------------------------------------------ the maps */

static const char *const map_names[4] = {"q8_signed", "q8_unsigned", "q4_signed", "q4_unsigned"};

static void map_of(int which, float *out)
{
    clg__qmap_fill(which < 2 ? CLG_Q8 : CLG_Q4, which % 2 == 0, out);
}

static void test_maps(void **state)
{
    (void)state;
    fixture f;
    load(&f, "bnb_maps.bin");
    for (int w = 0; w < 4; w++) {
        size_t n;
        float *bnb = floats(&f, map_names[w], &n);
        float ours[256];
        map_of(w, ours);
        assert_int_equal(n, w < 2 ? 256 : 16);
        size_t equal = 0;
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)ours[i] - bnb[i]) / spacing(bnb[i] != 0 ? bnb[i] : 1.0f);
            worst = d > worst ? d : worst;
            equal += ours[i] == bnb[i];
        }
        print_message("%s: %zu of %zu values equal to bitsandbytes', the others within %.1f fp32 "
                      "spacings\n", map_names[w], equal, n, worst);
        if (w >= 2)
            assert_int_equal(equal, n);
        assert_true(worst <= 2.0);
        free(bnb);
    }
    free(f.bytes);
}

/* ------------------------------------------------------------ blockwise */

/* The device quantizes g as a state: SGD momentum's first buffer is g
 * (signed maps); Adam's first v with beta2 = 0 is g * g (unsigned). */
static void device_quantize(int which, const float *g, size_t n, unsigned *codes, float *absmax)
{
    clg_dtype dtype = which < 2 ? CLG_Q8 : CLG_Q4;
    int uns = which % 2;
    clg_config c = clg_config_init(uns ? CLG_ADAM : CLG_SGD);
    c.state_dtype = dtype;
    c.state_min_size = 0;
    c.momentum = uns ? 0.0f : 0.9f;
    c.beta2 = 0.0f;
    c.weight_decay = 0.0f;
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &c, &m));
    int t;
    OK(clg_model_add_tensor(m, "x", n, 0, &t));
    OK(clg_model_finalize(m));
    clg_grads *gr = NULL;
    OK(clg_grads_create(m, CLG_FP32, &gr));
    OK(clg_grads_upload(gr, 0, g, n, NULL));
    OK(clg_step(m, gr, 1.0f, NULL, NULL));
    size_t nbytes, nscales;
    OK(clg_model_state_format(m, uns, 0, NULL, &nbytes, &nscales));
    unsigned char *raw = tu_xmalloc(nbytes);
    OK(clg_model_download_state_raw(m, uns, 0, raw, nbytes, absmax, nscales, NULL));
    ref_unpack_codes(dtype, raw, n, codes);
    free(raw);
    clg_grads_destroy(gr);
    clg_model_destroy(m);
}

static void blockwise(const fixture *f, int which)
{
    char name[64];
    size_t n;
    snprintf(name, sizeof name, "%s.g", map_names[which]);
    float *g = floats(f, name, &n);
    snprintf(name, sizeof name, "%s.x", map_names[which]);
    float *x = floats(f, name, NULL);
    snprintf(name, sizeof name, "%s.codes", map_names[which]);
    const uint8_t *bcodes = bytes(f, name, n);
    snprintf(name, sizeof name, "%s.absmax", map_names[which]);
    size_t nb;
    float *babs = floats(f, name, &nb);
    snprintf(name, sizeof name, "%s.dequantized", map_names[which]);
    float *bdeq = floats(f, name, NULL);
    size_t block = which < 2 ? 256 : 128;
    assert_int_equal(nb, (n + block - 1) / block);

    unsigned *codes = tu_xmalloc(n * sizeof *codes);
    float *absmax = tu_xmalloc(nb * sizeof *absmax);
    device_quantize(which, g, n, codes, absmax);
    for (size_t b = 0; b < nb; b++)
        if (absmax[b] != babs[b])
            fail_msg("%s: absmax of block %zu: clgrad %.9g, bitsandbytes %.9g", map_names[which],
                     b, (double)absmax[b], (double)babs[b]);
    float ours[256];
    map_of(which, ours);
    size_t k = which < 2 ? 256 : 16;
    ref_qmap map;
    ref_qmap_from_floats(ours, k, &map);
    size_t mismatched = 0, native_worse = 0, native_differs = 0;
    snprintf(name, sizeof name, "%s.codes_cpu_native", map_names[which]);
    int have_native = which < 2;
    const uint8_t *native = have_native ? bytes(f, name, n) : NULL;
    for (size_t i = 0; i < n; i++) {
        double a = absmax[i / block];
        double xn = a > 0 ? x[i] / a : 0.0;
        /* the dequantization of bitsandbytes' code by clgrad's map */
        float deq = ours[bcodes[i]] * babs[i / block];
        double tol = 2 * spacing(bdeq[i]);
        if (fabs((double)deq - bdeq[i]) > (which < 2 ? tol : 0.0))
            fail_msg("%s: element %zu: dequantized %.9g, bitsandbytes %.9g", map_names[which], i,
                     (double)deq, (double)bdeq[i]);
        if (have_native) {
            native_differs += native[i] != bcodes[i];
            double e_ours = fabs(xn - map.v[codes[i]]), e_native = fabs(xn - map.v[native[i]]);
            native_worse += e_native > e_ours;
            if (e_native + 1e-12 < e_ours)
                fail_msg("%s: element %zu: bitsandbytes' CPU code %u is nearer than clgrad's %u",
                         map_names[which], i, native[i], codes[i]);
        }
        if (codes[i] == bcodes[i])
            continue;
        mismatched++;
        double ulps = ref_qboundary_ulps(&map, xn);
        if (ulps > 4.0 || (codes[i] != bcodes[i] + 1u && codes[i] + 1u != bcodes[i]))
            fail_msg("%s: element %zu: clgrad code %u, bitsandbytes %u, %.2f spacings from a "
                     "boundary", map_names[which], i, codes[i], bcodes[i], ulps);
    }
    print_message("%s: %zu elements, %zu codes differ from bitsandbytes' (near a boundary)\n",
                  map_names[which], n, mismatched);
    if (have_native)
        print_message("  its CPU-native quantizer differs from its own nearest codes in %zu, "
                      "farther than clgrad's in %zu\n", native_differs, native_worse);
    free(g);
    free(x);
    free(babs);
    free(bdeq);
    free(codes);
    free(absmax);
}

static void test_blockwise(void **state)
{
    (void)state;
    fixture f;
    load(&f, "bnb_blockwise.bin");
    for (int w = 0; w < 4; w++)
        blockwise(&f, w);
    free(f.bytes);
}

/* ------------------------------------------------------------ AdamW8bit */

static void test_adamw8bit_steps(void **state)
{
    (void)state;
    fixture f;
    load(&f, "bnb_adamw8bit.bin");
    static const size_t sizes[2] = {4396, 100};
    clg_config c = clg_config_init(CLG_ADAMW);
    c.state_dtype = CLG_Q8;
    c.lr = 1e-3f;
    c.weight_decay = 1e-2f;
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &c, &m));
    int t;
    OK(clg_model_add_tensor(m, "big", sizes[0], 0, &t));
    OK(clg_model_add_tensor(m, "small", sizes[1], 0, &t));
    OK(clg_model_finalize(m));
    clg_grads *gr = NULL;
    OK(clg_grads_create(m, CLG_FP32, &gr));
    char name[64];
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "adamw.p0.%d", i);
        float *p0 = floats(&f, name, NULL);
        OK(clg_model_upload_params(m, i, p0, sizes[i], NULL));
        free(p0);
    }
    size_t mismatched = 0, compared = 0;
    float *host = tu_xmalloc(sizes[0] * sizeof *host);
    unsigned char *raw = tu_xmalloc(sizes[0]);
    float absmax[32];
    for (int step = 0; step < 4; step++) {
        for (int i = 0; i < 2; i++) {
            snprintf(name, sizeof name, "adamw.g.%d.%d", step, i);
            float *g = floats(&f, name, NULL);
            OK(clg_grads_upload(gr, i, g, sizes[i], NULL));
            free(g);
        }
        OK(clg_step(m, gr, 1.0f, NULL, NULL));
        for (int i = 0; i < 2; i++) {
            char label[96];
            snprintf(label, sizeof label, "AdamW8bit step %d, tensor %d: params", step + 1, i);
            snprintf(name, sizeof name, "adamw.p.%d.%d", step, i);
            float *want = floats(&f, name, NULL);
            double *wd = tu_xmalloc(sizes[i] * sizeof *wd);
            OK(clg_model_download_params(m, i, host, sizes[i], NULL));
            for (size_t e = 0; e < sizes[i]; e++)
                wd[e] = want[e];
            if (ref_compare(label, host, wd, sizes[i], REF_RTOL, REF_ATOL))
                fail_msg("%s differ from bitsandbytes'", label);
            for (int s = 0; s < 2; s++) {
                snprintf(name, sizeof name, "adamw.%s.%d.%d", s ? "v" : "m", step, i);
                if (i == 1) { /* fp32 states */
                    float *st = floats(&f, name, NULL);
                    OK(clg_model_download_state(m, s, i, host, sizes[i], NULL));
                    for (size_t e = 0; e < sizes[i]; e++)
                        wd[e] = st[e];
                    snprintf(label, sizeof label, "AdamW8bit step %d: fp32 state %d", step + 1, s);
                    if (ref_compare(label, host, wd, sizes[i], REF_RTOL, REF_ATOL))
                        fail_msg("%s differs from bitsandbytes'", label);
                    free(st);
                    continue;
                }
                const uint8_t *bc = bytes(&f, name, sizes[0]);
                snprintf(name, sizeof name, "adamw.%s_absmax.%d.%d", s ? "v" : "m", step, i);
                size_t nb;
                float *ba = floats(&f, name, &nb);
                assert_int_equal(nb, (sizes[0] + 255) / 256);
                OK(clg_model_download_state_raw(m, s, 0, raw, sizes[0], absmax, nb, NULL));
                /* clgrad forms 1 - beta2 in fp32 (1 - 0.999f = 0.00099998713), torch
                 * in double (0.001): v is 1.3e-5 smaller, relatively, in every
                 * element (it cancels in v / absmax); m 2.4e-7 */
                double rtol = s ? 2e-5 : 1e-6;
                for (size_t b = 0; b < nb; b++)
                    if (fabs((double)absmax[b] - ba[b]) > rtol * ba[b])
                        fail_msg("step %d, state %d, block %zu: absmax %.9g, bitsandbytes %.9g",
                                 step + 1, s, b, (double)absmax[b], (double)ba[b]);
                for (size_t e = 0; e < sizes[0]; e++) {
                    compared++;
                    if (raw[e] == bc[e])
                        continue;
                    mismatched++;
                    if (raw[e] != bc[e] + 1 && raw[e] + 1 != bc[e])
                        fail_msg("step %d, state %d, element %zu: code %u, bitsandbytes %u",
                                 step + 1, s, e, raw[e], bc[e]);
                }
                free(ba);
            }
            free(want);
            free(wd);
        }
    }
    print_message("AdamW8bit: %zu codes compared over 4 steps, %zu differ by one (a boundary "
                  "between clgrad's and bitsandbytes' fp32 evaluations of the map)\n",
                  compared, mismatched);
    /* a code that differs at all must be rare: a few per ten thousand */
    assert_true(mismatched * 1000 <= compared);
    free(host);
    free(raw);
    clg_grads_destroy(gr);
    clg_model_destroy(m);
    free(f.bytes);
}

TU_MAIN("qstate_bnb", tu_group_setup, tu_group_teardown, cmocka_unit_test(test_maps),
        cmocka_unit_test(test_blockwise), cmocka_unit_test(test_adamw8bit_steps))
