/*
 * direct.h - whole store chunks written straight to the file with HDF5's
 * H5Dwrite_chunk, bypassing netCDF's copy and HDF5's chunk cache.
 */
#ifndef RASTER_DIRECT_H
#define RASTER_DIRECT_H

#include <stddef.h>

#include "chunkio.h"

/* Writes every store chunk that the write of `pieces` (sorted by store
 * and store offset) over the outer box ostart/ocount (stride 1) covers
 * entirely, when the store allows it (serial file, chunked, unfiltered,
 * native type of v's size). On return *pieces / *npieces are what is left
 * for the netCDF path; *owned is an array to free (NULL when none was
 * made; *pieces then still points into the caller's array). `threads` 2
 * overlaps gathering the next chunk with writing the current one on a
 * second thread. RASTER_OK, or an error (nothing is left then). */
int direct_write(raster_var *v, piece **pieces, size_t *npieces,
                 piece **owned, const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, const void *buf,
                 size_t plane_cells, int threads);

/* Chunks written with H5Dwrite_chunk since the process started. */
size_t direct_chunks_written(void);

#endif
