/*
 * chunkio.h - Chunk Data Handler: moves cells between a caller's buffer and
 * raster's stores.
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

/* Threads of large fast-path reads from now on (raster_set_threads);
 * 0: the default. */
void chunkio_set_threads(int n);

/* Whether stores HDF5 keeps deflated (shuffled, checksummed) are read and
 * inflated by raster (1, the default) or through netCDF (0), for files
 * opened from now on: the benchmark's comparison and the tests' check. */
void chunkio_set_inflate(int on);

/* The staging buffer of a read by windows (chunkio.c: scattered reads
 * copied out in the caller's order), for reads from now on; 0: the
 * default, 1 MiB. Tests make it small to plan many windows on small data.
 */
void chunkio_set_window_bytes(size_t bytes);

/* Reads by windows from disk, moved behind the load of their stretches,
 * since the process started (for tests). */
size_t chunkio_behind_reads(void);

/* Reads served by windows since the process started (for tests). */
size_t chunkio_window_reads(void);

/* Reads that moved strided pieces (piece.h) on the direct path since the
 * process started (for tests). */
size_t chunkio_strided_reads(void);
/* Reads of many short staged spans split among threads (staged_pay), and
 * for tests the least bytes and preads such a read makes (0: the
 * defaults, 2 MiB and 128). */
size_t chunkio_staged_threaded(void);
void chunkio_set_staged_min(size_t bytes, size_t reads);
/* Helper threads of plane-split reads that took part (not cancelled
 * before they started: read_threaded), for tests. */
size_t chunkio_threads_ran(void);
/* For tests: 0 helpers as scheduled (the default), 1 the caller waits for
 * every helper to run, 2 every helper cancelled before it starts. */
void chunkio_set_helpers(int mode);
/* For tests: the idle cores a thin read's default threads see (-1:
 * unknown), instead of /proc/loadavg's; -2 gives it back. */
void chunkio_set_idle(int n);

/* Chunks raster has inflated since the process started: the tests' proof
 * that the fast path served a read. */
size_t chunkio_chunks_inflated(void);

/* Writes through netCDF so far that carried only some of the records a
 * filtered store's chunk holds (HDF5 then merges the chunk from several
 * calls; write_cuts keeps whole writes from doing so): for tests. */
size_t chunkio_split_chunk_writes(void);

/* Small writes since the process started that went to HDF5 straight, one
 * H5Dwrite per store (the tests' proof that the path served them). */
size_t chunkio_small_writes(void);

/* Writes the small writes v holds back (chunkio.c) to its stores: before
 * any other transfer of v, at raster_flush and raster_close. Held-back
 * values are dropped on an error (as HDF5 drops a chunk it cannot
 * write), which is returned. */
int chunkio_flush(raster_var *v);

/* 1 when v's small one-plane writes can be held back: only its first outer
 * dimension may be unlimited. */
int chunkio_holdable(raster_var *v);

/* Holds back pieces p[0..n) of the one-plane box at ostart (values in buf,
 * laid out as the caller's plane) to be written by chunkio_flush; flushes
 * when 4 MiB are held. The parallel writer's small collective writes
 * (parwrite.c) come here; the serial ones are held by chunkio_xfer. */
int chunkio_hold(raster_var *v, const piece *p, size_t n,
                 const size_t *ostart, const void *buf);

#endif
