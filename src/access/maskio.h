/*
 * maskio.h - Rectangles of a read-only variable's stored mask read with
 * pread at the mask's byte offset.
 *
 * A hyperslab read needs the mask of the tiles it touches (tiles.c). The
 * stored mask is contiguous and row-major, and through netCDF HDF5 reads it
 * in 64 KiB sieve windows: a 50-column band of the 3600-column benchmark
 * grid cost 8.6 MB of reads for 120 KB of mask (0.9 ms, a fifth of the
 * thin-band read). Here each narrow row is one pread of its own bytes, and
 * rows nearly as wide as the grid are read as one span.
 */
#ifndef RASTER_MASKIO_H
#define RASTER_MASKIO_H

#include <stddef.h>
#include <stdint.h>

#include "var.h"

/* 1 when v's stored mask can be read here: a read-only file with an fd, the
 * mask contiguous, written, unfiltered and of a native signed integer type
 * of 1, 2 or 4 bytes. Looked up once per variable; HDF5 errors only make it
 * 0 (the caller reads through netCDF instead). */
int maskio_usable(raster_var *v);

/* maskio_usable's look at the mask, from its HDF5 dataset did (an hid_t)
 * that the caller has open (lean.c, loading the variable): 0 HDF5 calls
 * more. maskio_usable still wants the file's fd. */
void maskio_probe(raster_var *v, int64_t did);

/* Rows [y0, y0 + ny) x columns [x0, x0 + nx) of the mask into buf (ny * nx
 * ints, row-major). maskio_usable(v) must be 1. RASTER_OK, RASTER_EIO or
 * RASTER_ENOMEM. */
int maskio_rows(raster_var *v, size_t y0, size_t ny, size_t x0, size_t nx,
                int *buf);

/* What maskio_rows(v, ., ny, ., nx, .) costs, in bytes copied, a pread
 * counted as MASKIO_PREAD_BYTES: for choosing between reading a band of
 * tiles whole and reading only the tiles that need it. Measured on the
 * bench VM (page cache, 2,000 reads): a pread of 50 bytes 0.32 us, of
 * 180 KB 2.5 us, so one call costs what copying about 27 KB does; 2,560
 * read a thin band's mixed tiles a row per call (979 preads of 50 bytes
 * a band, a third of its system calls). */
#define MASKIO_PREAD_BYTES 16384
size_t maskio_cost(const raster_var *v, size_t ny, size_t nx);

/* Announcing the rows a hyperslab read will take from a mask on disk
 * (POSIX_FADV_WILLNEED), so that the disk reads them together instead of
 * one synchronous pread per row: a thin band's mask is a thousand rows of
 * 50 bytes. Rows are gathered into byte ranges, neighbours less than a
 * page apart merged. */
typedef struct maskio_plan {
    raster_var *v;
    int64_t lo, hi; /* the range being gathered; lo == hi: none */
} maskio_plan;

/* 0 when the mask of rows [y0, y1) at column x looks cached (its first,
 * middle and last row are in the page cache) and nothing needs announcing;
 * else 1 and p is ready for maskio_plan_rows. maskio_usable(v) must be 1. */
int maskio_plan_begin(raster_var *v, maskio_plan *p, size_t y0, size_t y1,
                      size_t x);

/* Adds rows [y0, y0 + ny) x columns [x0, x0 + nx), in ascending rows. */
void maskio_plan_rows(maskio_plan *p, size_t y0, size_t ny, size_t x0,
                      size_t nx);

/* Announces what is still gathered. */
void maskio_plan_end(maskio_plan *p);

#endif
