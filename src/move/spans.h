/*
 * spans.h - the plan of a transfer and its moves by span (spans.c): the
 * pieces cut and sorted into spans, and a span moved for a run of records
 * by preadv or through netCDF. The transfer's state (xfer) lives here, at
 * the bottom of the movers, so that windows.c, fanout.c, inflate.c and
 * chunkio.c share it without calling back up.
 */
#ifndef RASTER_SPANS_H
#define RASTER_SPANS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "piece.h"
#include "prefetch.h"
#include "var.h"

/* Largest hole (in bytes) read through rather than split around. */
#define GAP_BYTES 4096
/* Fast path: spans whose pieces average fewer bytes than this are read
 * through a staging buffer of STAGE_BYTES (cache-sized) instead of with
 * one iovec per piece. */
#define STAGE_PIECE_BYTES 16384
#define STAGE_BYTES ((size_t)1 << 20)
/* Spans from this size on are announced to the kernel before a read from
 * disk; shorter ones too when the read makes at least ANNOUNCE_READS of
 * them (a hyperslab across the stores: one short read per tile and
 * record, which one at a time would each wait for the disk). */
#define ANNOUNCE_BYTES ((size_t)64 << 10)
#define ANNOUNCE_READS 64

typedef struct span {
    size_t p0, p1;   /* pieces [p0, p1) */
    uint64_t lo, hi; /* store cells [lo, hi) */
    size_t covered;  /* cells the pieces cover */
    uint32_t store;
    int strided; /* holds strided pieces: hi - lo <= STAGE_BYTES */
} span;

/* One transfer: what every mover reads or writes through. */
typedef struct xfer {
    raster_var *v;
    const piece *pieces;
    unsigned char *buf;
    size_t plane_cells;
    unsigned char *tmp;
    size_t tmp_bytes;
    struct iovec *iov;
    size_t iov_cap;
    unsigned char *junk;
    unsigned char *stage; /* read_staged's buffer, STAGE_BYTES */
    int fault;            /* fault the output in first (spans_prefault) */
    int ann_short;        /* announce short spans too (ANNOUNCE_READS) */
    off_t (*ann)[2];      /* byte ranges to announce: offset, length */
    size_t nann, ann_cap;
    size_t full[RASTER_MAX_DIMS]; /* outer shape, for the fast path */
    int cache;               /* a thin read: staged spans kept (fileio_keep) */
    const struct wplan *win; /* moved by windows (windows_read), or NULL */
    struct behind *bh;       /* a read by windows from disk (read_behind) */
} xfer;

/* Cell `cell` of plane `plane` of the caller's buffer. Inline: every
 * mover calls it per piece. */
static inline unsigned char *spans_plane_ptr(const xfer *x, size_t plane,
                                             uint64_t cell)
{
    return x->buf + (plane * x->plane_cells + cell) * x->v->elem;
}

/* memcpy, with the single values of a thin band's pieces (a cell each)
 * copied inline: a call per 4-byte value cost a quarter of such a read;
 * and short runs (a tile's row: 200 bytes on the bench) in 16-byte moves,
 * the last one overlapping: through glibc's call and size dispatch a
 * packed format 5 read was 6% slower. */
static inline void spans_copy_cells(unsigned char *dst,
                                    const unsigned char *src, size_t bytes)
{
    switch (bytes) {
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    default: break;
    }
    if (bytes >= 16 && bytes <= 512) {
        size_t i = 0;
        for (; i + 16 <= bytes; i += 16)
            memcpy(dst + i, src + i, 16);
        if (i < bytes)
            memcpy(dst + bytes - 16, src + bytes - 16, 16);
        return;
    }
    memcpy(dst, src, bytes);
}

/* Where pieces of store a are cut (cells; 0: nowhere): windows.c plans
 * within the same cuts as the spans. */
size_t spans_piece_cut(const store_addr *a, int write);

/* Groups sorted pieces p[0..n) into spans (*out, caller frees). */
int spans_make(const raster_var *v, const piece *p, size_t n, int write,
               span **out, size_t *nspans);

/* Cuts the pieces at their stores' cuts (*out: a new array, or NULL). */
int spans_split_pieces(const raster_var *v, piece **pieces, size_t *n,
                       int write, piece **out);

/* preadv of the whole iovec list at `off`, in IOV_MAX batches (EINTR and
 * short reads retried); RASTER_EIO naming `name`. */
int spans_preadv(int fd, struct iovec *iov, size_t n, off_t off,
                 const char *name);

/* Sorts pieces by (store, store offset). */
int spans_sort_pieces(piece *p, size_t n);

/* Strided pieces as plain ones, for the movers that take no strided
 * pieces (*out, caller frees). */
int spans_unstride(const raster_var *v, const piece *p, size_t n, piece **out,
                   size_t *nout);

/* The chunk of a chunked store holding a record's cell (-1: never
 * written that far), and the record's place in it (*inner). */
long spans_chunk_of(const size_t *full, int no, const store_addr *a,
                    size_t flat, uint64_t cell, size_t *inner);

/* The byte offset of a record's cell (-1: never written, -2: not looked
 * up). */
off_t spans_store_offset(const xfer *x, const store_addr *a, size_t cells,
                         size_t flat, uint64_t cell);

/* 1 when span s is read on the fast path from a store with data. */
int spans_direct_span(const raster_var *v, const span *s);

/* Notes span s of nb records for spans_bring_in_noted. */
void spans_announce(xfer *x, const span *s, size_t flat, size_t nb);

/* Brings the ranges noted in x->ann in from disk (prefetch.c). */
void spans_bring_in_noted(xfer *x);

/* The same load, as prefetch_begin's `flags` say (PREFETCH_BEHIND: on a
 * helper thread, the caller reading behind it: prefetch_wait, then
 * prefetch_end); NULL when nothing was noted or nothing is left to wait
 * for. */
prefetch *spans_bring_in_behind(xfer *x, int flags);

/* 1 when the page cache holds the page at byte `off` of the file. */
int spans_page_cached(const xfer *x, off_t off);

/* 1 when the request looks cached (announcing it would only cost system
 * calls). */
int spans_cached(xfer *x, const span *spans, size_t nspans,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride);

/* Faults in every page of buf[0..bytes), keeping its bytes. */
void spans_prefault(unsigned char *buf, size_t bytes);

/* Span s for nb records by preadv (the fast path). */
int spans_read_direct(xfer *x, const span *s, size_t flat, size_t plane0,
                      size_t nb);

/* Span s for nb records through netCDF (read or write). */
int spans_xfer_netcdf(xfer *x, const span *s, const size_t *start,
                      size_t plane0, size_t nb, int write);

/* Writes through netCDF that carried only some of the records a filtered
 * store's chunk holds (HDF5 then merges the chunk from several calls;
 * chunkio.c's write_cuts keeps whole writes from doing so): for tests. */
size_t chunkio_split_chunk_writes(void);

#endif
