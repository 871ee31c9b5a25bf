/*
 * quantize.c - nc_def_var_quantize's three algorithms, bit for bit as
 * netCDF-C 4.9.0 (bookworm) stores them: its nc4_convert_type quantizes the
 * converted buffer of each put call. The algorithms are Zender's BitGroom
 * (2016), Granular BitRound (Delaunay, Groot & Guillou 2019 digit counting,
 * as NCO does it) and Kloewer et al.'s BitRound (2021):
 *
 *  - BitGroom keeps ceil(nsd * log2 10) + 1 explicit mantissa bits; the
 *    values at even buffer indices have the rest cleared, those at odd
 *    indices (other than +0.0) set, so that the errors cancel on average.
 *  - BitRound keeps nsd explicit bits, rounding half up on the bit pattern
 *    (add half of the last kept bit, then clear).
 *  - Granular BitRound rounds each value as BitRound does, to a number of
 *    bits found from the value's own decimal exponent and nsd.
 *
 * Values equal to the fill value are skipped; +0.0 is never quantized by
 * BitGroom's set step nor by Granular BitRound. NaN and Inf are not skipped
 * (NaN never equals the fill value): their bits change as any value's do.
 *
 * netCDF computes some masks with C operations whose result the language
 * leaves undefined (a shift by a negative or too large count, a double out
 * of int's range converted to int), which x86-64 (netCDF's build for amd64)
 * resolves in hardware: a shift count is taken modulo the operand's width,
 * and such a conversion gives INT_MIN. The functions below do the same with
 * defined operations, so the bits match netCDF on amd64 for every input,
 * including BitGroom's nsd 7 for floats (25 bits wanted of 23: the shift
 * count wraps) and Granular BitRound's NaN and Inf. On other architectures
 * netCDF's own results for those corner cases may differ.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <netcdf.h>

#include "alloc.h"
#include "error.h"
#include "quantize.h"

/* explicit mantissa bits of IEEE single and double */
#define MANT_BITS_FLT 23
#define MANT_BITS_DBL 52

/* log2(10) and log10(2) computed as netCDF computes them (not as log2(10.)
 * or M_LOG2E-based constants): Granular BitRound's floor() of them decides
 * bits, so the last place matters. */
#define LN10_ 2.30258509299404568402
#define LN2_ 0.69314718055994530942
static const double bits_per_digit = LN10_ / LN2_;
static const double digits_per_bit = LN2_ / LN10_;

/* A double (already floored) to int as x86-64's cvttsd2si does: NaN and
 * values out of int's range give INT_MIN. */
static int to_int_x86(double x)
{
    if (!(x >= (double)INT_MIN && x < -(double)INT_MIN))
        return INT_MIN;
    return (int)x;
}

/* All ones shifted left by `count` (an int, maybe negative or >= width) as
 * an x86-64 shift instruction does: the count taken modulo the width. */
static uint32_t ones_shl32(int count)
{
    return UINT32_MAX << ((unsigned)count & 31u);
}

static uint64_t ones_shl64(int count)
{
    return UINT64_MAX << ((unsigned)count & 63u);
}

/* Explicit bits Granular BitRound keeps of `val` (nonzero bit pattern) at
 * nsd digits, as netCDF's unsigned short after its "- 1": the formula of
 * DGG19 (7), (8) on the value's binary exponent and mantissa. */
static unsigned short granular_bits(double val, int nsd)
{
    int e2;
    double mnt = frexp(val, &e2);
    double mabs = fabs(mnt);
    double lg = log10(mabs);
    /* digits before the decimal point; INT_MIN + 1 for NaN, Inf */
    int64_t ndig = (int64_t)to_int_x86(floor(e2 * digits_per_bit + lg)) + 1;
    /* netCDF subtracts in int: wrapping as amd64 does */
    int32_t diff = (int32_t)(uint32_t)(ndig - nsd);
    int64_t qpow = to_int_x86(floor(bits_per_digit * diff));
    unsigned short keep = 0;
    if (mabs != 0.0) { /* -0.0 keeps 0 */
        int64_t k = (int64_t)to_int_x86(floor(e2 - bits_per_digit * lg)) -
                    qpow;
        /* netCDF's abs() of an int, then truncation to 16 bits */
        uint32_t k32 = (uint32_t)k;
        if ((int32_t)k32 < 0)
            k32 = 0u - k32;
        keep = (unsigned short)k32;
    }
    return (unsigned short)(keep - 1u);
}

/* QUANTIZE_FN defines NAME, which quantizes the n values of type FT at p
 * (UT: the unsigned integer of FT's width, MANT: its explicit mantissa
 * bits, SHL: ones_shl of that width). Bits are read and written through
 * memcpy (no value read as an integer through a pointer). BitGroom and
 * BitRound masks are fixed; Granular BitRound's are the value's own.
 * BitGroom shaves even indices and sets odd ones, never grooming +0.0
 * upwards. */
#define QUANTIZE_FN(NAME, FT, UT, MANT, SHL)                                  \
    static void NAME(int mode, int nsd, unsigned char *p, size_t n, FT fill) \
    {                                                                         \
        unsigned short keep =                                                 \
            mode == NC_QUANTIZE_BITGROOM                                      \
                ? (unsigned short)(ceil(nsd * bits_per_digit) + 1)            \
                : (unsigned short)nsd;                                        \
        UT zro = SHL(MANT - (int)keep);                                       \
        UT one = ~zro, half = one & (zro >> 1);                               \
        for (size_t i = 0; i < n; i++, p += sizeof(FT)) {                     \
            FT v;                                                             \
            UT u;                                                             \
            memcpy(&v, p, sizeof v);                                          \
            memcpy(&u, p, sizeof u);                                          \
            if (v == fill)                                                    \
                continue;                                                     \
            if (mode == NC_QUANTIZE_GRANULARBR) {                             \
                if (u == 0u) /* +0.0 */                                       \
                    continue;                                                 \
                keep = granular_bits((double)v, nsd);                         \
                zro = SHL(MANT - (int)keep);                                  \
                half = ~zro & (zro >> 1);                                     \
                u = (u + half) & zro;                                         \
            } else if (mode == NC_QUANTIZE_BITROUND) {                        \
                u = (u + half) & zro;                                         \
            } else if (i % 2 == 0) {                                          \
                u &= zro;                                                     \
            } else if (u != 0u) {                                             \
                u |= one;                                                     \
            }                                                                 \
            memcpy(p, &u, sizeof u);                                          \
        }                                                                     \
    }

QUANTIZE_FN(quantize_float, float, uint32_t, MANT_BITS_FLT, ones_shl32)
QUANTIZE_FN(quantize_double, double, uint64_t, MANT_BITS_DBL, ones_shl64)

int quantize_check(int xtype, int mode, int nsd)
{
    if (mode == NC_NOQUANTIZE)
        return RASTER_OK;
    if (mode != NC_QUANTIZE_BITGROOM && mode != NC_QUANTIZE_GRANULARBR &&
        mode != NC_QUANTIZE_BITROUND)
        return raster_fail(RASTER_EINVAL, "quantize mode %d unknown", mode);
    if (xtype != NC_FLOAT && xtype != NC_DOUBLE)
        return raster_fail(RASTER_EINVAL,
                           "quantize applies to float and double only, not "
                           "type %d", xtype);
    int max;
    if (mode == NC_QUANTIZE_BITROUND)
        max = xtype == NC_FLOAT ? NC_QUANTIZE_MAX_FLOAT_NSB
                                : NC_QUANTIZE_MAX_DOUBLE_NSB;
    else
        max = xtype == NC_FLOAT ? NC_QUANTIZE_MAX_FLOAT_NSD
                                : NC_QUANTIZE_MAX_DOUBLE_NSD;
    if (nsd < 1 || nsd > max)
        return raster_fail(RASTER_EINVAL,
                           "quantize %s: %d is out of 1..%d",
                           mode == NC_QUANTIZE_BITROUND ? "bits" : "digits",
                           nsd, max);
    return RASTER_OK;
}

int quantize_buffer(int xtype, int mode, int nsd, void *values, size_t n,
                    const void *fill)
{
    int rc = quantize_check(xtype, mode, nsd);
    if (rc != RASTER_OK || mode == NC_NOQUANTIZE || n == 0)
        return rc;
    if (!values)
        return raster_fail(RASTER_EINVAL, "quantize: NULL values");
    if (xtype == NC_FLOAT) {
        float fv = NC_FILL_FLOAT;
        if (fill)
            memcpy(&fv, fill, sizeof fv);
        quantize_float(mode, nsd, values, n, fv);
    } else {
        double dv = NC_FILL_DOUBLE;
        if (fill)
            memcpy(&dv, fill, sizeof dv);
        quantize_double(mode, nsd, values, n, dv);
    }
    return RASTER_OK;
}

int quantize_copy(int xtype, int mode, int nsd, const void *src, size_t n,
                  size_t run, const void *fill, void **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "quantize: NULL output");
    *out = NULL;
    int rc = quantize_check(xtype, mode, nsd);
    if (rc != RASTER_OK || mode == NC_NOQUANTIZE || n == 0)
        return rc;
    if (!src)
        return raster_fail(RASTER_EINVAL, "quantize: NULL values");
    if (run == 0)
        run = n;
    if (n % run != 0)
        return raster_fail(RASTER_EINVAL,
                           "quantize: %zu values are not rows of %zu", n,
                           run);
    size_t elem = xtype == NC_FLOAT ? sizeof(float) : sizeof(double);
    void *q = raster_reallocarray(NULL, n, elem);
    if (!q)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory quantizing %zu values", n);
    memcpy(q, src, n * elem);
    /* the settings are checked: no run can fail */
    for (size_t i = 0; i < n; i += run)
        quantize_buffer(xtype, mode, nsd, (char *)q + i * elem, run, fill);
    *out = q;
    return RASTER_OK;
}
