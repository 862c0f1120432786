/* ref_quant.h - a double-precision reference of clgrad's blockwise state
 * quantization (Q8, Q4; docs/design.md, "Quantized states"), written from
 * bitsandbytes' published algorithm (create_dynamic_map, blockwise absmax,
 * nearest map value) and torchao's 4-bit maps, not from clgrad's kernel:
 * the maps are evaluated in double from their formulas, absmax and x /
 * absmax in double, and the rounding boundaries are the exact midpoints of
 * the double maps. Tests compare the device's codes and absmax with it. */
#ifndef CLGRAD_TEST_REF_QUANT_H
#define CLGRAD_TEST_REF_QUANT_H

#include "clgrad.h"

#include <stddef.h>

typedef struct ref_qmap {
    size_t n;      /* 256 (Q8) or 16 (Q4) */
    double v[256]; /* ascending */
} ref_qmap;

/* bitsandbytes' create_dynamic_map(is_signed, max_exp_bits, total_bits) in
 * double, its distinct values sorted. */
void ref_dynamic_map(int is_signed, int max_exp_bits, int total_bits, ref_qmap *out);
/* The map of state dtype CLG_Q8/CLG_Q4, signed (m, momentum) or not (v):
 * Q8 dynamic (7 exponent bits), Q4 signed dynamic (3 of 4 bits), Q4
 * unsigned linspace(0, 1, 17) without 0. */
void ref_qmap_for(clg_dtype dtype, int is_signed, ref_qmap *out);
size_t ref_qblock(clg_dtype dtype);

/* The code of xn (already divided by absmax): the nearest map value, ties
 * to the smaller magnitude; xn is clamped to [-1, 1] first. */
unsigned ref_qcode(const ref_qmap *map, double xn);
/* Distance from xn to the nearest rounding boundary (midpoint of two
 * neighbours), in units of the fp32 spacing at that boundary. */
double ref_qboundary_ulps(const ref_qmap *map, double xn);
/* The two codes around xn: map[lo] <= xn <= map[hi] (lo == hi on a value
 * or beyond either end), for stochastic rounding. */
void ref_qneighbours(const ref_qmap *map, double xn, unsigned *lo, unsigned *hi);

/* Blockwise: n elements, blocks of `block` from element 0; absmax[b] the
 * largest |x| of block b, codes of x / absmax (0 / 0 is 0). */
void ref_quantize(const ref_qmap *map, size_t block, const double *x, size_t n, unsigned *codes,
                  double *absmax);
void ref_dequantize(const ref_qmap *map, size_t block, const unsigned *codes,
                    const double *absmax, size_t n, double *out);

/* Device codes against the reference for values x (double) whose blocks'
 * absmax the reference computes itself: a code may differ only by one,
 * where x / absmax lies within tol_ulps (fp32 spacings at the boundary)
 * plus err[i] / absmax of a boundary. err (may be NULL: x is exact) bounds
 * how far the device's fp32 value of x[i] may be from x[i]. */
typedef struct ref_qcheck {
    size_t n;          /* elements compared */
    size_t near;       /* within tol_ulps of a boundary */
    size_t mismatched; /* device code != reference code */
    size_t bad;        /* mismatches not explained by a nearby boundary */
    double worst_ulps; /* the farthest mismatch from its boundary */
} ref_qcheck;
ref_qcheck ref_qcheck_codes(const char *what, const ref_qmap *map, size_t block, const double *x,
                            size_t n, const unsigned *dev_codes, double tol_ulps,
                            const double *err);
/* The distance from xn to the nearest boundary, and the fp32 spacing there. */
double ref_qboundary_dist(const ref_qmap *map, double xn, double *ulp);
/* A map given as fp32 values (clgrad's tables, a fixture's). */
void ref_qmap_from_floats(const float *v, size_t n, ref_qmap *out);

/* Device Q8/Q4 codes as stored (Q4: byte 16g + j holds element 32g + j in
 * its low nibble, 32g + 16 + j in its high one; written from the API's
 * description in clgrad.h). */
void ref_unpack_codes(clg_dtype dtype, const unsigned char *raw, size_t n, unsigned *codes);

#endif /* CLGRAD_TEST_REF_QUANT_H */
