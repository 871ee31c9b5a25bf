/*
 * chunkio.h - Chunk Data Handler: moves cells between a caller's buffer and
 * raster's stores (chunkio.c plans a transfer and hands it to the movers
 * below it: spans.c, windows.c, fanout.c, inflate.c, writeback.c).
 *
 * A request is a list of pieces, each mapping `len` consecutive cells of a
 * store to `len` consecutive cells of one plane of the caller's buffer, plus
 * a box over the outer dimensions. The caller's buffer holds one plane of
 * `plane_cells` values per outer index of the box, in row-major order.
 */
#ifndef RASTER_CHUNKIO_H
#define RASTER_CHUNKIO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "piece.h"
#include "var.h"
/* the movers' own calls and test hooks, once chunkio.c's: */
#include "fanout.h"
#include "inflate.h"
#include "spans.h"
#include "windows.h"
#include "writeback.h"

/* Reads (write = 0) or writes the pieces for every outer index of the box
 * start/count/stride (outer dimensions only; stride NULL means 1). Sorts
 * `pieces` in place. */
int chunkio_xfer(raster_var *v, piece *pieces, size_t npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, void *buf, size_t plane_cells,
                 int write);

/* Finds whether store s of v can be read with preadv, and its byte
 * offsets (read-only files with an fd), once: chunkio_xfer calls it for
 * the stores a read touches, so opening a file looks up nothing. Not
 * thread-safe (like every call on one file). RASTER_OK, or RASTER_ENOMEM. */
int chunkio_prepare_store(raster_var *v, size_t s);

/* chunkio_prepare_store() for every store of v. */
int chunkio_prepare(raster_var *v);

/* Read-phase timing (raster_read_phases_take): while chunkio_timing is
 * set, chunkio_xfer stores in chunkio_plan_end, on the calling thread, the
 * CLOCK_MONOTONIC seconds at which its planning ended and data began to
 * move. */
extern atomic_int chunkio_timing;
extern _Thread_local double chunkio_plan_end;

/* CLOCK_MONOTONIC in seconds */
double chunkio_clock(void);

/* Whether stores HDF5 keeps deflated (shuffled, checksummed) are read and
 * inflated by raster (1, the default) or through netCDF (0), for files
 * opened from now on: the benchmark's comparison and the tests' check. */
void chunkio_set_inflate(int on);

/* Reads by windows from disk, moved behind the load of their stretches,
 * since the process started (for tests). */
size_t chunkio_behind_reads(void);

/* Reads served by windows since the process started (for tests). */
size_t chunkio_window_reads(void);

/* Reads that moved strided pieces (piece.h) on the direct path since the
 * process started (for tests). */
size_t chunkio_strided_reads(void);
/* Reads of many short staged spans split among threads
 * (fanout_staged_pay), for tests. */
size_t chunkio_staged_threaded(void);

#endif
