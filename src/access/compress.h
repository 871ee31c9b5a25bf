/*
 * compress.h - a raster variable's compression (raster_compression,
 * raster.h): checked, applied to a store or placeholder through netCDF,
 * and read back from a placeholder through netCDF or HDF5 (issue #23).
 */
#ifndef RASTER_COMPRESS_H
#define RASTER_COMPRESS_H

#include <stdint.h>

#include "raster.h"

/* 1 when c asks for an HDF5 filter on the stores (shuffle, deflate,
 * fletcher32 or another filter): they are then chunked (define.c). Quantize
 * alone is not a filter: raster quantizes the caller's buffer. */
int compress_filtered(const raster_compression *c);

/* 1 when c compresses the stores (deflate, or another HDF5 filter: zstd,
 * bzip2, ...): the variable's tables and stored mask are then deflated
 * too (compress_table). Shuffle or fletcher32 alone compress nothing. */
int compress_packs(const raster_compression *c);

/* Chunks table or mask varid of group g (2-D, netCDF define mode) and
 * deflates it at level 1 with shuffle (docs/FORMAT.md, "Compressed
 * stores"): `tile` (rows, columns), the base chunk shape of the grid, for
 * the mask, whose chunks are whole tiles; NULL for a table, chunked by
 * rows. A dimension of length 0 leaves it as it is (nothing is stored). */
int compress_table(int g, int varid, const size_t *tile, const char *name);

/* 1 when c is all zero: stored plain. */
int compress_plain(const raster_compression *c);

/* Checks c for variable `name` of type xtype: RASTER_EINVAL for what
 * netCDF would refuse (a deflate level outside 0-9, quantize on an integer
 * type or with significant digits out of range, a filter HDF5 does not
 * have, raster's own marker, too many filters or parameters);
 * RASTER_EUNSUPPORTED for what raster cannot honour: filters or quantize
 * in a parallel file (`parallel` 1), quantize until src/base/quantize.c lands. */
int compress_check(const raster_compression *c, int xtype, int parallel,
                   const char *name);

/* Puts c's filters on variable varid of group g (netCDF define mode,
 * before its dataset is created), and with `quantize` its quantize
 * setting too (the placeholder, never a store). NC_ELATEDEF (created
 * already) is RASTER_EINVAL. */
int compress_apply(int g, int varid, const raster_compression *c,
                   int quantize, const char *name);

/* The settings of variable varid of group g (a placeholder) through
 * netCDF, leaving out raster's marker. */
int compress_inq_nc(int g, int varid, raster_compression *c,
                    const char *name);

/* The same from HDF5 dataset `did` (a placeholder, lean open): its filter
 * pipeline and netCDF's quantize attribute. */
int compress_inq_h5(int64_t did, raster_compression *c, const char *name);

#endif
