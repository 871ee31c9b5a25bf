/*
 * ncapi.h - the one list of netCDF-C data entry points the shim wraps.
 *
 * netCDF-C's typed calls do not funnel through one function (nc_put_var_float
 * never passes through nc_put_vara), so every member of the family must be
 * wrapped. They are generated from two lists: the memory types (suffix, C
 * type, netCDF type of the memory) and the five access kinds, for both
 * directions: 2 x 5 x (14 typed + untyped) = 150 functions.
 */
#ifndef RASTER_NCAPI_H
#define RASTER_NCAPI_H

#include <limits.h>
#include <netcdf.h>

/* nc_put_var_long and friends move C longs: 64-bit on LP64. */
#if LONG_MAX > INT_MAX
#define NCAPI_LONG_TYPE NC_INT64
#else
#define NCAPI_LONG_TYPE NC_INT
#endif

/* X(suffix, C type, netCDF memory type) */
#define NCAPI_MEMTYPES(X)                                                     \
    X(_text, char, NC_CHAR)                                                   \
    X(_schar, signed char, NC_BYTE)                                           \
    X(_uchar, unsigned char, NC_UBYTE)                                        \
    X(_short, short, NC_SHORT)                                                \
    X(_int, int, NC_INT)                                                      \
    X(_long, long, NCAPI_LONG_TYPE)                                           \
    X(_float, float, NC_FLOAT)                                                \
    X(_double, double, NC_DOUBLE)                                             \
    X(_ubyte, unsigned char, NC_UBYTE)                                        \
    X(_ushort, unsigned short, NC_USHORT)                                     \
    X(_uint, unsigned int, NC_UINT)                                           \
    X(_longlong, long long, NC_INT64)                                         \
    X(_ulonglong, unsigned long long, NC_UINT64)                              \
    X(_string, char *, NC_STRING)                                             \
    X(, void, NC_NAT) /* the untyped calls: the variable's own type */

/* The five access kinds: their extra parameters after (ncid, varid), the
 * same as arguments, and how they become shape, start, count, stride, imap
 * and whether the call is a varm one. */
#define NCAPI_KIND_var_PARAMS
#define NCAPI_KIND_var_ARGS
#define NCAPI_KIND_var_SHAPE NCAPI_WHOLE, NULL, NULL, NULL, NULL, 0

#define NCAPI_KIND_var1_PARAMS , const size_t *indexp
#define NCAPI_KIND_var1_ARGS , indexp
#define NCAPI_KIND_var1_SHAPE NCAPI_ONE, indexp, NULL, NULL, NULL, 0

#define NCAPI_KIND_vara_PARAMS , const size_t *startp, const size_t *countp
#define NCAPI_KIND_vara_ARGS , startp, countp
#define NCAPI_KIND_vara_SHAPE NCAPI_BOX, startp, countp, NULL, NULL, 0

#define NCAPI_KIND_vars_PARAMS                                                \
    , const size_t *startp, const size_t *countp, const ptrdiff_t *stridep
#define NCAPI_KIND_vars_ARGS , startp, countp, stridep
#define NCAPI_KIND_vars_SHAPE NCAPI_BOX, startp, countp, stridep, NULL, 0

#define NCAPI_KIND_varm_PARAMS                                                \
    , const size_t *startp, const size_t *countp, const ptrdiff_t *stridep,  \
        const ptrdiff_t *imapp
#define NCAPI_KIND_varm_ARGS , startp, countp, stridep, imapp
#define NCAPI_KIND_varm_SHAPE NCAPI_BOX, startp, countp, stridep, imapp, 1

/* X(kind) over the five kinds */
#define NCAPI_KINDS(X) X(var) X(var1) X(vara) X(vars) X(varm)

#endif
