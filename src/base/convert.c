/*
 * convert.c - netCDF-4's numeric conversions (see convert.h for the rules)
 * and the imap walk of a typed transfer.
 *
 * One function per (source, destination) pair, generated below, converts a
 * strided run of values; convert_box() walks the rows of a box.
 */
#include "convert.h"
#include "error.h"

#include <float.h>
#include <math.h>
#include <netcdf.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* ---- one value ---------------------------------------------------------- */

/* Truncation of a floating value to a 32- / 64-bit signed integer as the
 * x86-64 instructions netCDF's casts compile to (cvttsd2si): NaN and values
 * out of range give the integer indefinite value (the most negative one).
 * Written without undefined behaviour: only in-range values are cast. */
static inline int32_t trunc32(double x)
{
    return x > -2147483649.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN;
}

static inline int64_t trunc64(double x)
{
    return x >= -9223372036854775808.0 && x < 9223372036854775808.0
               ? (int64_t)x : INT64_MIN;
}

/* A floating value into uint64 the way the netCDF in this process does it.
 * netCDF 4.9.0 stores it through a long long pointer (trunc64: 2^63 and up
 * give 2^63); a later one (4.9.3 on Debian trixie; the release that changed
 * it is not known here) casts to unsigned long long, which x86-64 compilers
 * emit as cvttsd2si below 2^63 and as cvttsd2si(x - 2^63) with the top bit
 * flipped from there: exact up to 2^64, 0 beyond and for +Inf. Which one is
 * asked of netCDF itself, once, by converting 1e19 in a diskless file. */
static pthread_once_t u64_once = PTHREAD_ONCE_INIT;
static int u64_unsigned; /* 1: the unsigned cast; 0: through long long */

static void probe_u64(void)
{
    int ncid, dim, var;
    size_t at[1] = {0};
    double x = 1e19; /* in uint64's range, beyond int64's */
    unsigned long long got = 0;
    if (nc_create("raster-uint64-probe", NC_NETCDF4 | NC_DISKLESS | NC_CLOBBER,
                  &ncid) != NC_NOERR)
        return; /* unknown: 4.9.0's way */
    int ok = nc_def_dim(ncid, "n", 1, &dim) == NC_NOERR &&
             nc_def_var(ncid, "v", NC_UINT64, 1, &dim, &var) == NC_NOERR &&
             nc_enddef(ncid) == NC_NOERR &&
             nc_put_var1_double(ncid, var, at, &x) == NC_NOERR &&
             nc_get_var1_ulonglong(ncid, var, at, &got) == NC_NOERR;
    (void)raster_nc_close(ncid); /* diskless: nothing is written */
    u64_unsigned = ok && got == 10000000000000000000ULL;
}

static inline uint64_t trunc_u64(double x)
{
    if (!u64_unsigned || !(x >= 9223372036854775808.0))
        return (uint64_t)trunc64(x);
    return (uint64_t)trunc64(x - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
}

/* Range tests, as functions so that the generated code never compares an
 * unsigned value with zero (which -Wtype-limits would flag). */
static inline int out_s(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo || x > hi;
}

static inline int out_u(uint64_t x, uint64_t hi) { return x > hi; }

/* netCDF's test for a floating source: unrounded value against the limits;
 * false for NaN. */
static inline int out_f(double x, double lo, double hi)
{
    return x > hi || x < lo;
}

/* ---- the conversion functions ------------------------------------------ */

typedef size_t (*conv_fn)(const unsigned char *s, ptrdiff_t ss,
                          unsigned char *d, ptrdiff_t ds, size_t n);

#define CONV_FN(NAME, S, D, BAD, VAL)                                         \
    static size_t NAME(const unsigned char *s, ptrdiff_t ss,                  \
                       unsigned char *d, ptrdiff_t ds, size_t n)              \
    {                                                                         \
        size_t bad = 0;                                                       \
        for (size_t i = 0; i < n; i++) {                                      \
            S x;                                                              \
            memcpy(&x, s + (ptrdiff_t)i * ss, sizeof x);                      \
            bad += (size_t)(BAD);                                             \
            D y = (VAL);                                                      \
            memcpy(d + (ptrdiff_t)i * ds, &y, sizeof y);                      \
        }                                                                     \
        return bad;                                                           \
    }

/* Integer sources: signed ones are tested as int64 against [lo, hi],
 * unsigned ones as uint64 against uhi; each destination supplies its
 * lo, hi (for signed sources) and uhi (for unsigned ones). */
#define OUT_SIGNED(x, lo, hi, uhi) out_s((int64_t)(x), (lo), (hi))
#define OUT_UNSIGNED(x, lo, hi, uhi) out_u((uint64_t)(x), (uhi))

#define INT_SOURCE(SN, S, OUT)                                                \
    CONV_FN(conv_##SN##_byte, S, signed char,                                 \
            OUT(x, -128, 127, 127u), (signed char)x)                          \
    CONV_FN(conv_##SN##_ubyte, S, unsigned char,                              \
            OUT(x, 0, 255, 255u), (unsigned char)x)                           \
    CONV_FN(conv_##SN##_short, S, short,                                      \
            OUT(x, -32768, 32767, 32767u), (short)x)                          \
    CONV_FN(conv_##SN##_ushort, S, unsigned short,                            \
            OUT(x, 0, 65535, 65535u), (unsigned short)x)                      \
    CONV_FN(conv_##SN##_int, S, int,                                          \
            OUT(x, INT32_MIN, INT32_MAX, (uint64_t)INT32_MAX), (int)x)        \
    CONV_FN(conv_##SN##_uint, S, unsigned int,                                \
            OUT(x, 0, (int64_t)UINT32_MAX, UINT32_MAX), (unsigned int)x)      \
    CONV_FN(conv_##SN##_int64, S, long long,                                  \
            OUT(x, INT64_MIN, INT64_MAX, (uint64_t)INT64_MAX), (long long)x)  \
    CONV_FN(conv_##SN##_uint64, S, unsigned long long,                        \
            OUT(x, 0, INT64_MAX, UINT64_MAX), (unsigned long long)x)          \
    CONV_FN(conv_##SN##_float, S, float, 0, (float)x)                         \
    CONV_FN(conv_##SN##_double, S, double, 0, (double)x)

INT_SOURCE(byte, signed char, OUT_SIGNED)
INT_SOURCE(ubyte, unsigned char, OUT_UNSIGNED)
INT_SOURCE(short, short, OUT_SIGNED)
INT_SOURCE(ushort, unsigned short, OUT_UNSIGNED)
INT_SOURCE(int, int, OUT_SIGNED)
INT_SOURCE(uint, unsigned int, OUT_UNSIGNED)
INT_SOURCE(int64, long long, OUT_SIGNED)
INT_SOURCE(uint64, unsigned long long, OUT_UNSIGNED)

/* Floating sources. The limits are netCDF's X_*_MAX / X_*_MIN as the
 * comparison sees them: converted to the source's type, which changes only
 * X_UINT_MAX for a float (4294967295U becomes 4294967296.0f), and
 * X_INT64_MAX / X_UINT64_MAX (2^63, 2^64 in either type). `UINT_HI` is that
 * uint limit. */
#define FLOAT_SOURCE(SN, S, UINT_HI)                                          \
    CONV_FN(conv_##SN##_byte, S, signed char,                                 \
            out_f(x, -128.0, 127.0), (signed char)trunc32(x))                 \
    CONV_FN(conv_##SN##_ubyte, S, unsigned char,                              \
            out_f(x, 0.0, 255.0), (unsigned char)trunc32(x))                  \
    CONV_FN(conv_##SN##_short, S, short,                                      \
            out_f(x, -32768.0, 32767.0), (short)trunc32(x))                   \
    CONV_FN(conv_##SN##_ushort, S, unsigned short,                            \
            out_f(x, 0.0, 65535.0), (unsigned short)trunc32(x))               \
    CONV_FN(conv_##SN##_int, S, int,                                          \
            out_f(x, -2147483648.0, 2147483647.0), (int)trunc32(x))           \
    CONV_FN(conv_##SN##_uint, S, unsigned int,                                \
            out_f(x, 0.0, UINT_HI), (unsigned int)trunc64(x))                 \
    CONV_FN(conv_##SN##_int64, S, long long,                                  \
            out_f(x, -9223372036854775808.0, 9223372036854775808.0),          \
            (long long)trunc64(x))                                            \
    CONV_FN(conv_##SN##_uint64, S, unsigned long long,                        \
            out_f(x, 0.0, 18446744073709551616.0),                            \
            (unsigned long long)trunc_u64(x))

FLOAT_SOURCE(float, float, 4294967296.0)
FLOAT_SOURCE(double, double, 4294967295.0)

CONV_FN(conv_float_float, float, float, 0, x)
CONV_FN(conv_float_double, float, double, 0, (double)x)
CONV_FN(conv_double_double, double, double, 0, x)
/* isgreater/isless: no exception on NaN, and NaN is no range error */
CONV_FN(conv_double_float, double, float,
        isgreater(x, (double)FLT_MAX) || isless(x, -(double)FLT_MAX),
        (float)x)

#define ROW(SN)                                                               \
    {conv_##SN##_byte, conv_##SN##_ubyte, conv_##SN##_short,                  \
     conv_##SN##_ushort, conv_##SN##_int, conv_##SN##_uint,                   \
     conv_##SN##_int64, conv_##SN##_uint64, conv_##SN##_float,                \
     conv_##SN##_double}

/* [source][destination], in the order of type_index() */
static const conv_fn table[10][10] = {
    ROW(byte), ROW(ubyte), ROW(short), ROW(ushort), ROW(int),
    ROW(uint), ROW(int64), ROW(uint64), ROW(float), ROW(double),
};

/* Position of a numeric type in `table`, -1 for others. */
static int type_index(int xtype)
{
    switch (xtype) {
    case NC_BYTE: return 0;
    case NC_UBYTE: return 1;
    case NC_SHORT: return 2;
    case NC_USHORT: return 3;
    case NC_INT: return 4;
    case NC_UINT: return 5;
    case NC_INT64: return 6;
    case NC_UINT64: return 7;
    case NC_FLOAT: return 8;
    case NC_DOUBLE: return 9;
    default: return -1;
    }
}

size_t convert_type_size(int xtype)
{
    static const size_t size[10] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
    int i = type_index(xtype);
    return i < 0 ? 0 : size[i];
}

size_t convert_values(const void *src, ptrdiff_t sstep, int from, void *dst,
                      ptrdiff_t dstep, int to, size_t n)
{
    int f = type_index(from), t = type_index(to);
    if (f < 0 || t < 0 || n == 0)
        return 0;
    if (to == NC_UINT64 && (from == NC_FLOAT || from == NC_DOUBLE))
        (void)pthread_once(&u64_once, probe_u64);
    return table[f][t]((const unsigned char *)src, sstep,
                       (unsigned char *)dst, dstep, n);
}

size_t convert_box(int ndims, const size_t *count, const ptrdiff_t *imap,
                   void *mem, int mtype, void *packed, int ptype,
                   int to_packed)
{
    size_t msize = convert_type_size(mtype), psize = convert_type_size(ptype);
    size_t total = 1;
    for (int d = 0; d < ndims; d++)
        total *= count[d];
    if (total == 0 || msize == 0 || psize == 0)
        return 0;
    unsigned char *m = mem, *p = packed;
    if (!imap) /* both row-major: one run */
        return to_packed ? convert_values(m, (ptrdiff_t)msize, mtype, p,
                                          (ptrdiff_t)psize, ptype, total)
                         : convert_values(p, (ptrdiff_t)psize, ptype, m,
                                          (ptrdiff_t)msize, mtype, total);
    /* one run per row of the innermost dimension; `off` is the row's first
     * element in mem, in values of mtype */
    size_t inner = count[ndims - 1], rows = total / inner, bad = 0;
    ptrdiff_t mstep = imap[ndims - 1] * (ptrdiff_t)msize, off = 0;
    size_t k[NC_MAX_VAR_DIMS] = {0};
    for (size_t r = 0; r < rows; r++) {
        unsigned char *mrow = m + off * (ptrdiff_t)msize;
        unsigned char *prow = p + r * inner * psize;
        bad += to_packed ? convert_values(mrow, mstep, mtype, prow,
                                          (ptrdiff_t)psize, ptype, inner)
                         : convert_values(prow, (ptrdiff_t)psize, ptype, mrow,
                                          mstep, mtype, inner);
        for (int d = ndims - 2; d >= 0; d--) {
            off += imap[d];
            if (++k[d] < count[d])
                break;
            off -= imap[d] * (ptrdiff_t)count[d];
            k[d] = 0;
        }
    }
    return bad;
}

/* netCDF's default fill value of a numeric type, in that type. */
void convert_default_fill(int xtype, unsigned char *out)
{
    memset(out, 0, 8);
    switch (xtype) {
    case NC_BYTE: { signed char f = NC_FILL_BYTE; memcpy(out, &f, 1); break; }
    case NC_UBYTE: { unsigned char f = NC_FILL_UBYTE; memcpy(out, &f, 1); break; }
    case NC_SHORT: { short f = NC_FILL_SHORT; memcpy(out, &f, 2); break; }
    case NC_USHORT: { unsigned short f = NC_FILL_USHORT; memcpy(out, &f, 2); break; }
    case NC_INT: { int f = NC_FILL_INT; memcpy(out, &f, 4); break; }
    case NC_UINT: { unsigned f = NC_FILL_UINT; memcpy(out, &f, 4); break; }
    case NC_FLOAT: { float f = NC_FILL_FLOAT; memcpy(out, &f, 4); break; }
    case NC_INT64: { long long f = NC_FILL_INT64; memcpy(out, &f, 8); break; }
    case NC_UINT64: { unsigned long long f = NC_FILL_UINT64; memcpy(out, &f, 8); break; }
    case NC_DOUBLE: { double f = NC_FILL_DOUBLE; memcpy(out, &f, 8); break; }
    default: break;
    }
}

void convert_fill_cells(unsigned char *dst, size_t n,
                        const unsigned char *fill, size_t elem)
{
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * elem, fill, elem);
}
