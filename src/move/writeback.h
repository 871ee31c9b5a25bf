/*
 * writeback.h - small writes straight to HDF5 (writeback.c): written at
 * once, or held back and flushed as merged blocks. chunkio.c sends writes
 * here first; parwrite.c holds its small collective writes here too.
 */
#ifndef RASTER_WRITEBACK_H
#define RASTER_WRITEBACK_H

#include <stddef.h>

#include "piece.h"
#include "var.h"

/* Writes pieces p[0..n) (sorted) of the box straight to HDF5 when the
 * write is small and its records exist, or holds a one-plane box back:
 * *done = 1; else *done = 0 and nothing is written. */
int writeback_small(raster_var *v, const piece *p, size_t n,
                    const size_t *ostart, const size_t *ocount,
                    const ptrdiff_t *ostride, const unsigned char *buf,
                    size_t plane_cells, int *done);

/* Small writes since the process started that went to HDF5 straight, one
 * H5Dwrite per store (the tests' proof that the path served them). */
size_t chunkio_small_writes(void);

/* Writes the small writes v holds back (writeback.c) to its stores:
 * before any other transfer of v, at raster_flush and raster_close.
 * Held-back values are dropped on an error (as HDF5 drops a chunk it
 * cannot write), which is returned. */
int chunkio_flush(raster_var *v);

/* 1 when v's small one-plane writes can be held back: only its first outer
 * dimension may be unlimited. */
int chunkio_holdable(raster_var *v);

/* Holds back pieces p[0..n) of the one-plane box at ostart (values in buf,
 * laid out as the caller's plane) to be written by chunkio_flush; flushes
 * when 4 MiB are held. The parallel writer's small collective writes
 * (parwrite.c) come here; the serial ones are held by chunkio_xfer. */
int chunkio_hold(raster_var *v, const piece *p, size_t n, const size_t *ostart,
                 const void *buf);

#endif
