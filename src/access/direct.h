/*
 * direct.h - whole store chunks written straight to the file with HDF5's
 * H5Dwrite_chunk, bypassing netCDF's copy and HDF5's chunk cache.
 */
#ifndef RASTER_DIRECT_H
#define RASTER_DIRECT_H

#include <stddef.h>

#include "piece.h"
#include "var.h"

/* Writes every store chunk that the write of `pieces` (sorted by store
 * and store offset) over the outer box ostart/ocount (stride 1) covers
 * entirely, when the store allows it (serial file, chunked, unfiltered,
 * native type of v's size, chunks of 256 KiB or more). Format 5: every
 * tile it covers entirely, whatever its size, as the variable's chunk,
 * store by store, when the variable is chunked as its tiles and
 * unfiltered (each piece lies in one tile: spans_split_pieces). On
 * return the first *npieces pieces (rewritten in place: no copy of a
 * list that holds a piece per tile row) are what is left for the netCDF
 * path. `threads` 2 overlaps gathering the next chunk with writing the
 * current one on a second thread. RASTER_OK, or an error (the pieces are
 * then unchanged, though some chunks may have been written). */
int direct_write(raster_var *v, piece *pieces, size_t *npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, const void *buf,
                 size_t plane_cells, int threads);

/* Chunks written with H5Dwrite_chunk since the process started. */
size_t direct_chunks_written(void);

/* Bytes reserved (fallocate) for chunks a write appends, since the
 * process started; direct_reserve 0 (a test hook) reserves none. */
size_t direct_bytes_reserved(void);
extern int direct_reserve;

#endif
