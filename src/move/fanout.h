/*
 * fanout.h - large reads split by plane among raster's threads
 * (fanout.c), and how many threads a read gets: chunkio.c asks whether a
 * read pays for them and hands it over; inflate.c takes as many.
 */
#ifndef RASTER_FANOUT_H
#define RASTER_FANOUT_H

#include <stddef.h>

#include "spans.h"

/* Threads of one read at most: more asked for are taken as this many. */
#define MAX_READ_THREADS 16
/* Spans a thread takes at a time in such a read: the caller's wait for a
 * helper's last turn is about half a turn (16 of the band's spans: about
 * 10 us; a plane of them, 48, made it 25-50 us a band). */
#define STAGED_TURN 16

/* Threads for one large read: raster_set_threads(), else $RASTER_THREADS,
 * else 2 where there are 2 cores or more; 1 in the MPI flavour. */
int fanout_read_threads(void);

/* 1 when the read threads were set (raster_set_threads, $RASTER_THREADS)
 * rather than left to the default. */
int fanout_threads_chosen(void);

/* Cores nothing is running on at this instant, -1 when unknown. */
int fanout_idle_cores(void);

/* 1 when a large read is worth threads. */
int fanout_threads_pay(const xfer *x, const span *spans, size_t nspans,
                       const size_t *ocount);

/* 1 when a read of many short staged spans is worth threads. */
int fanout_staged_pay(const xfer *x, const span *spans, size_t nspans,
                      const size_t *ocount);

/* Reads every plane of the outer box on n threads, `per` spans a turn.
 * -1 (nothing read) when the plan cannot be made, else a status. */
int fanout_read_threaded(const xfer *x0, const span *spans, size_t nspans,
                         const size_t *ostart, const size_t *ocount,
                         const ptrdiff_t *ostride, int n, size_t per);

/* Threads of large fast-path reads from now on (raster_set_threads);
 * 0: the default. */
void chunkio_set_threads(int n);

/* For tests, the least bytes and preads a read of many short staged spans
 * makes to be split among threads (0: the defaults, 2 MiB and 128). */
void chunkio_set_staged_min(size_t bytes, size_t reads);
/* Helper threads of plane-split reads that took part (not cancelled
 * before they started: fanout_read_threaded), for tests. */
size_t chunkio_threads_ran(void);
/* For tests: 0 helpers as scheduled (the default), 1 the caller waits for
 * every helper to run, 2 every helper cancelled before it starts. */
void chunkio_set_helpers(int mode);
/* For tests: the idle cores a thin read's default threads see (-1:
 * unknown), instead of /proc/loadavg's; -2 gives it back. */
void chunkio_set_idle(int n);

#endif
