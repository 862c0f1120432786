/* ref_quant.c - the double-precision reference of blockwise state
 * quantization (see ref_quant.h). */
#include "ref_quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Appends v unless it is there already (the padding zeros of a 4-bit
 * dynamic map, and the 0 it adds itself). */
static void add(ref_qmap *m, double v)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i] == v)
            return;
    m->v[m->n++] = v;
}

void ref_dynamic_map(int is_signed, int max_exp_bits, int total_bits, ref_qmap *out)
{
    out->n = 0;
    int non_sign_bits = total_bits - 1;
    int additional = (1 << (non_sign_bits - max_exp_bits)) - 1;
    int last = 0;
    for (int i = 0; i < max_exp_bits; i++) {
        int items = is_signed ? (1 << (i + non_sign_bits - max_exp_bits)) + 1
                              : (1 << (i + non_sign_bits - max_exp_bits + 1)) + 1;
        double scale = pow(10.0, (double)(-(max_exp_bits - 1) + i));
        for (int k = 0; k + 1 < items; k++) {
            /* the mean of two neighbours of linspace(0.1, 1, items) */
            double lo = 0.1 + 0.9 * k / (items - 1), hi = 0.1 + 0.9 * (k + 1) / (items - 1);
            add(out, scale * (lo + hi) / 2);
            if (is_signed)
                add(out, -scale * (lo + hi) / 2);
        }
        last = i;
    }
    if (additional > 0) {
        double scale = pow(10.0, (double)(-(max_exp_bits - 1) + last));
        for (int k = 0; k < additional; k++) {
            double lo = 0.1 + 0.9 * k / additional, hi = 0.1 + 0.9 * (k + 1) / additional;
            add(out, scale * (lo + hi) / 2);
            if (is_signed)
                add(out, -scale * (lo + hi) / 2);
        }
    }
    add(out, 0.0);
    add(out, 1.0);
    qsort(out->v, out->n, sizeof out->v[0], cmp_double);
}

void ref_qmap_for(clg_dtype dtype, int is_signed, ref_qmap *out)
{
    if (dtype == CLG_Q8) {
        ref_dynamic_map(is_signed, 7, 8, out);
    } else if (is_signed) {
        ref_dynamic_map(1, 3, 4, out);
    } else {
        out->n = 16;
        for (int k = 0; k < 16; k++)
            out->v[k] = (k + 1) / 16.0;
    }
}

size_t ref_qblock(clg_dtype dtype) { return dtype == CLG_Q8 ? 256 : 128; }

static double boundary(const ref_qmap *m, size_t c) { return (m->v[c] + m->v[c + 1]) / 2; }

/* The number of boundaries below xn (a boundary equal to xn counts as
 * below a negative xn: ties to the smaller magnitude), by bisection over
 * the exact double midpoints. */
unsigned ref_qcode(const ref_qmap *m, double xn)
{
    xn = xn < -1 ? -1 : xn > 1 ? 1 : xn;
    size_t lo = 0, hi = m->n - 1; /* the answer lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        double b = boundary(m, mid);
        if (xn > b || (xn < 0 && xn == b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return (unsigned)lo;
}

static double spacing(double b)
{
    float bf = (float)fabs(b);
    return (double)nextafterf(bf, INFINITY) - (double)bf;
}

double ref_qboundary_dist(const ref_qmap *m, double xn, double *ulp)
{
    /* the nearest boundary is one of the two around xn's code */
    unsigned c = ref_qcode(m, xn);
    double best = INFINITY;
    *ulp = 1.0;
    for (unsigned k = c > 0 ? c - 1 : 0; k <= c && k + 1 < m->n; k++) {
        double d = fabs(xn - boundary(m, k));
        if (d < best) {
            best = d;
            *ulp = spacing(boundary(m, k));
        }
    }
    return best;
}

double ref_qboundary_ulps(const ref_qmap *m, double xn)
{
    double ulp, d = ref_qboundary_dist(m, xn, &ulp);
    return d / ulp;
}

void ref_qmap_from_floats(const float *v, size_t n, ref_qmap *out)
{
    out->n = n;
    for (size_t i = 0; i < n; i++)
        out->v[i] = v[i];
}

void ref_qneighbours(const ref_qmap *m, double xn, unsigned *lo, unsigned *hi)
{
    xn = xn < -1 ? -1 : xn > 1 ? 1 : xn;
    unsigned c = 0;
    while (c + 1 < m->n && m->v[c + 1] <= xn)
        c++;
    *lo = c;
    *hi = m->v[c] == xn || c + 1 >= m->n || xn < m->v[0] ? c : c + 1;
}

void ref_quantize(const ref_qmap *m, size_t block, const double *x, size_t n, unsigned *codes,
                  double *absmax)
{
    for (size_t b0 = 0; b0 < n; b0 += block) {
        size_t end = b0 + block < n ? b0 + block : n;
        double a = 0;
        for (size_t i = b0; i < end; i++)
            a = fabs(x[i]) > a ? fabs(x[i]) : a;
        absmax[b0 / block] = a;
        for (size_t i = b0; i < end; i++)
            codes[i] = ref_qcode(m, a > 0 ? x[i] / a : 0.0);
    }
}

void ref_dequantize(const ref_qmap *m, size_t block, const unsigned *codes, const double *absmax,
                    size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = m->v[codes[i]] * absmax[i / block];
}

ref_qcheck ref_qcheck_codes(const char *what, const ref_qmap *m, size_t block, const double *x,
                            size_t n, const unsigned *dev, double tol_ulps, const double *err)
{
    ref_qcheck r = {.n = n};
    unsigned *codes = malloc((n ? n : 1) * sizeof *codes);
    double *absmax = malloc(((n + block - 1) / block + 1) * sizeof *absmax);
    if (!codes || !absmax)
        abort();
    ref_quantize(m, block, x, n, codes, absmax);
    size_t shown = 0, emax_block = (size_t)-1;
    double emax = 0;
    for (size_t i = 0; i < n; i++) {
        double a = absmax[i / block];
        double xn = a > 0 ? x[i] / a : 0.0;
        double ulp, dist = ref_qboundary_dist(m, xn, &ulp);
        double ulps = dist / ulp;
        /* the device's x / absmax is off by its x's error over absmax,
         * and relatively by its absmax's (at most the largest error in the
         * block) */
        double e = 0;
        if (err && a > 0) {
            if (i / block != emax_block) {
                emax_block = i / block;
                emax = 0;
                for (size_t j = i; j < n && j / block == emax_block; j++)
                    emax = err[j] > emax ? err[j] : emax;
            }
            e = (err[i] + fabs(xn) * emax) / a;
        }
        int near = dist <= tol_ulps * ulp + e;
        r.near += (size_t)near;
        if (dev[i] == codes[i])
            continue;
        r.mismatched++;
        int adjacent = dev[i] + 1 == codes[i] || codes[i] + 1 == dev[i];
        if (near && adjacent) {
            r.worst_ulps = ulps > r.worst_ulps ? ulps : r.worst_ulps;
            continue;
        }
        r.bad++;
        if (shown++ < 5)
            fprintf(stderr,
                    "%s: element %zu: device code %u, reference %u (x %.12g, x/absmax %.12g, "
                    "%.3g fp32 ulps from a boundary)\n",
                    what, i, dev[i], codes[i], x[i], xn, ulps);
    }
    free(codes);
    free(absmax);
    return r;
}

void ref_unpack_codes(clg_dtype dtype, const unsigned char *raw, size_t n, unsigned *codes)
{
    for (size_t i = 0; i < n; i++)
        codes[i] = dtype == CLG_Q8 ? raw[i]
                   : i % 32 < 16 ? raw[i / 32 * 16 + i % 16] & 15u
                                 : raw[i / 32 * 16 + i % 16] >> 4;
}
