/*
 * windows.h - scattered reads in the caller's order (windows.c): the
 * window plan of a large read of short pieces, a plane read by windows,
 * and the units of a read by windows from disk that chunkio.c moves
 * behind the load (read_behind).
 */
#ifndef RASTER_WINDOWS_H
#define RASTER_WINDOWS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spans.h"

/* A window's stage, per reading thread: STAGE_BYTES unless a test sets
 * another (chunkio_set_window_bytes). 1 MiB holds a tile row of the bench
 * file's widest regions (Southern: 11 windows a record, none read twice);
 * 512 KiB did not, and the plan fell back to spans. */
#define WIN_STAGE_BYTES windows_stage()

typedef struct wrange {
    uint32_t store;  /* windows_plan: the span; then the store */
    uint64_t lo, hi; /* store cells [lo, hi), read to stage + at bytes */
    size_t at;
} wrange;

typedef struct wpiece {
    uint64_t uoff; /* first cell in the plane */
    size_t src;    /* its first byte in the stage (direct: unused) */
    uint32_t len, range;
} wpiece;

typedef struct window {
    size_t p0, p1, r0, r1; /* wpieces, wranges */
    int direct;            /* one piece, read straight into the plane */
} window;

typedef struct wplan {
    wpiece *p;
    wrange *r;
    window *w;
    size_t np, nr, nw;
    size_t stage; /* the stage's bytes the windows were planned for */
} wplan;

/* From disk, a read by windows goes in file order behind the load of its
 * long stretches (prefetch.c, on a helper thread): each range of each
 * window of each plane (a unit) is read once the load has passed it, and
 * the window's pieces that come from it copied out. In plane order the
 * move waited for the whole load, since a region's planes hop between the
 * stretches of its stores: Atlantic's 111 MB took 51-58 ms to load and 16
 * more to move after it (docs/PERFORMANCE.md, "Cold reads"). */
typedef struct unit {
    off_t off;           /* the range's first byte in the file */
    size_t plane;        /* in the caller's buffer */
    uint32_t win, range; /* in the window plan (range: of all) */
} unit;

typedef struct behind {
    unit *u;
    size_t n;
    wpiece *p;     /* the plan's pieces, range by range */
    size_t *first; /* range r's: p[first[r] .. first[r + 1]) */
} behind;

/* The stage windows are planned for (WIN_STAGE_BYTES). */
size_t windows_stage(void);

/* A reading thread's stage: read_staged's, or larger windows'. */
size_t windows_stage_bytes(const wplan *wp);

void windows_wplan_free(wplan *wp);

/* Plans the windows of pieces p[0..n) in the caller's order over
 * spans[0..nspans); *use = 0 when the read keeps its spans. */
int windows_plan(const raster_var *v, const piece *p, size_t n,
                 const span *spans, size_t nspans, size_t stage, wplan *wp,
                 int *use);

/* The spans of pieces that fill dense ranges, made without cutting or
 * sorting them (*dense = 0: they do not). */
int windows_dense_spans(const raster_var *v, const piece *p, size_t n,
                        span **out, size_t *nout, int *dense);

/* One plane (flat outer index `flat`) read by x->win's windows. */
int windows_read(xfer *x, size_t flat, size_t plane);

/* Notes one plane's units in x->bh, filling those never written. */
int windows_note(xfer *x, size_t flat, size_t plane);

/* Reads unit u and copies its pieces out. */
int windows_move_unit(xfer *x, const unit *u);

/* The staging buffer of a read by windows, for reads from now on; 0: the
 * default, 1 MiB. Tests make it small to plan many windows on small data.
 */
void chunkio_set_window_bytes(size_t bytes);

#endif
