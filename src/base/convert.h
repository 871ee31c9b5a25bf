/*
 * convert.h - conversion of values between netCDF numeric types in memory,
 * exactly as netCDF-4 converts them (libsrc4 nc4_convert_type), and the
 * walk of a box through a caller's imap-laid-out memory.
 *
 * What netCDF-4 does, and therefore what is done here:
 *  - every value is converted with a C cast, whether or not it fits;
 *  - a value outside the destination type's range is counted as a range
 *    error (the call then returns NC_ERANGE) but is still converted and
 *    transferred: integers wrap (two's complement truncation), floating
 *    values are truncated toward zero as x86-64 does it (cvttsd2si: NaN and
 *    values beyond the 32- or 64-bit integer range give the "integer
 *    indefinite" INT_MIN / INT64_MIN, then truncation to the narrower type);
 *    nothing is clamped and the fill value is not used;
 *  - NaN is never a range error; +-Inf is, except into float/double;
 *    the range tests compare the unrounded value with the type's limits as
 *    netCDF writes them (so 127.5 into a byte is a range error, -0.5 into an
 *    unsigned type is one, and float 4294967296.0f into uint is not);
 *  - float/double into int64 goes through a signed 64-bit conversion;
 *    into uint64 as the netCDF in the process does it, asked once on first
 *    use: netCDF 4.9.0 through long long too (2^63 and up give 2^63), 4.9.3
 *    through unsigned long long (exact below 2^64, 0 from there and for
 *    +Inf).
 */
#ifndef RASTER_CONVERT_H
#define RASTER_CONVERT_H

#include <stddef.h>

/* Bytes of one value of numeric netCDF type `xtype` (NC_BYTE .. NC_UINT64,
 * NC_FLOAT, NC_DOUBLE); 0 for any other type. */
size_t convert_type_size(int xtype);

/* Converts `n` values of type `from` at src, `sstep` bytes apart, to type
 * `to` at dst, `dstep` bytes apart (steps may be zero or negative; src and
 * dst must not overlap). Both types must be numeric.
 * @return the number of values out of range of `to`. */
size_t convert_values(const void *src, ptrdiff_t sstep, int from, void *dst,
                      ptrdiff_t dstep, int to, size_t n);

/* Converts the values of a box of `ndims` dimensions of counts `count`
 * between `packed`, the box in row-major order with values of type
 * `ptype`, and the caller's memory `mem` with values of type `mtype` where
 * the box element (k0, .., kn-1) lies sum(k_d * imap[d]) values of `mtype`
 * from `mem` (imap NULL: row-major, as packed). `to_packed` 1 converts mem
 * into packed (a write), 0 packed into mem (a read; mem elements that
 * several box elements share receive the last one in row-major order).
 * @return the number of values out of range of the destination type. */
size_t convert_box(int ndims, const size_t *count, const ptrdiff_t *imap,
                   void *mem, int mtype, void *packed, int ptype,
                   int to_packed);

/* netCDF's default fill value of numeric type xtype, into out[8]. */
void convert_default_fill(int xtype, unsigned char *out);

/* n cells of `elem` bytes set to `fill`. */
void convert_fill_cells(unsigned char *dst, size_t n,
                        const unsigned char *fill, size_t elem);

#endif
