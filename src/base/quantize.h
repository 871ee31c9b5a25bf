/*
 * quantize.h - netCDF-4's lossy quantization (nc_def_var_quantize), applied
 * to a buffer of a variable's values before they are stored, so that a
 * raster store holds the same bits plain netCDF would have written.
 */
#ifndef RASTER_QUANTIZE_H
#define RASTER_QUANTIZE_H

#include <stddef.h>

/* RASTER_OK when nc_def_var_quantize would accept (xtype, mode, nsd):
 * NC_NOQUANTIZE with any nsd and type; otherwise NC_FLOAT or NC_DOUBLE,
 * 1 <= nsd <= 7 / 15 decimal digits (BitGroom, Granular BitRound) or
 * 23 / 52 bits (BitRound). Else RASTER_EINVAL (netCDF status NC_EINVAL). */
int quantize_check(int xtype, int mode, int nsd);

/* Quantizes values[0..n) (of netCDF type xtype, native byte order) in
 * place exactly as netCDF-C 4.9 does the buffer of one nc_put_vara /
 * nc_put_vars call: BitGroom shaves the values at even and sets the bits of
 * those at odd indices of this buffer. Values equal (as floating point) to
 * *fill, or to netCDF's default fill value when fill is NULL, are left
 * alone; pass the variable's _FillValue, whether or not fill mode is on, as
 * netCDF does. NC_NOQUANTIZE: nothing changes. n 0: values may be NULL.
 * @return RASTER_OK, or RASTER_EINVAL (see quantize_check). */
int quantize_buffer(int xtype, int mode, int nsd, void *values, size_t n,
                    const void *fill);

/* A quantized copy of src[0..n) in *out (raster_malloc'ed; the caller
 * raster_free()s it), src untouched: a put's values must not change under
 * the caller. `run` is how many values netCDF quantizes as one buffer:
 * 0 (or n) for one nc_put_vara / nc_put_vars call; nc_put_varm puts, and
 * so quantizes, each innermost row (count[last] values) when the last
 * dimension's stride and imap are 1, else each value alone (run 1).
 * n must be a multiple of run. NC_NOQUANTIZE or n 0: *out = NULL, nothing
 * allocated.
 * @return RASTER_OK, RASTER_EINVAL (quantize_check, NULL src or out, n not
 * a multiple of run), RASTER_ENOMEM. */
int quantize_copy(int xtype, int mode, int nsd, const void *src, size_t n,
                  size_t run, const void *fill, void **out);

#endif
