/*
 * inflate.h - filtered stores read and inflated by raster (inflate.c):
 * the reads of stores HDF5 keeps deflated, without an HDF5 call.
 */
#ifndef RASTER_INFLATE_H
#define RASTER_INFLATE_H

#include <stddef.h>

#include "spans.h"

/* Reads spans[0..nspans) (all of stores with a->inflate, their chunks'
 * offsets looked up) for every plane of the outer box. */
int inflate_read(xfer *x, const span *spans, size_t nspans,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride);

/* Chunks raster has inflated since the process started: the tests' proof
 * that the fast path served a read. */
size_t chunkio_chunks_inflated(void);

#endif
