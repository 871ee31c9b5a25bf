/*
 * direct.c - whole store chunks written straight to the file.
 *
 * Through netCDF a write is copied three times: raster gathers the cells
 * into store order, netCDF/HDF5 copy that into HDF5's chunk cache, and the
 * kernel copies the cache into the page cache. A store chunk that a write
 * covers entirely needs none of HDF5's merging, so it is gathered once
 * into a chunk buffer and handed to H5Dwrite_chunk, which writes it where
 * the chunk lives (and evicts any cached copy of it, so netCDF never sees
 * a stale one).
 *
 * netCDF must still know how long the unlimited dimensions are: a store
 * that the write extends is extended by netCDF itself, with the fill value
 * written at one cell of a chunk that is then overwritten here (a write of
 * zero cells extends nothing in netCDF 4.9).
 *
 * Format 5 (tilestore.h): the stores are lists of the variable's tiles
 * and the variable's own dataset holds the values, chunked as its tiles.
 * A tile a write covers entirely is then one chunk of that dataset
 * (every record its outer sizes hold), gathered with its padding (cells
 * past the grid's edge) set to the fill value as HDF5 would, and written
 * in store order: HDF5 allocates a chunk where it is first written, so a
 * region's tiles lie side by side. Whatever their size: that order is the
 * point, and through netCDF they reach the file in the order its chunk
 * cache lets them go.
 *
 * With two threads, the caller's thread gathers chunk k+1 while a writer
 * thread writes chunk k. HDF5 is not thread-safe here: while the writer
 * holds a chunk, the caller's thread makes no HDF5 or netCDF call, and the
 * writer is joined before any other.
 */
#include "direct.h"

#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "layout.h"
#include "mesh.h"
#include "threads.h"

/* Smaller chunks stay with netCDF: HDF5's chunk cache holds them until a
 * flush, which costs little at their size, and a writer whose small file
 * fills the disk then sees the error where plain netCDF reports it (at
 * nc_sync or nc_close, tests/test_diskfull.sh) rather than at the write.
 * Store chunks are 0.5-1 MiB once a record exceeds 1 MiB (define.c). */
#define DIRECT_MIN_BYTES ((size_t)256 << 10)

static atomic_size_t chunks_written;

size_t direct_chunks_written(void) { return atomic_load(&chunks_written); }

static atomic_size_t bytes_reserved;
int direct_reserve = 1;

size_t direct_bytes_reserved(void) { return atomic_load(&bytes_reserved); }

#ifdef RASTER_MPI

/* The MPI flavour's HDF5 writes through MPI-IO: everything goes through
 * netCDF there. */
int direct_write(raster_var *v, piece *pieces, size_t *npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, const void *buf,
                 size_t plane_cells, int threads)
{
    (void)v, (void)pieces, (void)npieces, (void)ostart, (void)ocount;
    (void)ostride, (void)buf, (void)plane_cells, (void)threads;
    return RASTER_OK;
}

#else

/* One store the write touches, as HDF5 lays it out. Format 5: the
 * variable's dataset, which every store of the write shares (dwrite's
 * `shared`, closed once), its chunk shape the outer sizes and the tile. */
typedef struct dstore {
    uint32_t store;
    hid_t did;                          /* -1: not written directly */
    int rank;                           /* the dataset's */
    hsize_t ck[RASTER_MAX_DIMS + 1];    /* chunk shape, cells (tile) last */
    hsize_t dims[RASTER_MAX_DIMS + 1];  /* extent before this write */
    int unlim[RASTER_MAX_DIMS];
    size_t bytes;                       /* one chunk */
    size_t c0, c1;                      /* its whole chunks: cks[c0, c1) */
} dstore;

/* A cell chunk of a store covered entirely, with the pieces that overlap
 * it (the first and the last may reach into the neighbouring chunks; in
 * format 5 a piece lies in one tile). */
typedef struct dchunk {
    size_t cell;    /* index along the cells; format 5: the tile's place
                       in its store */
    size_t p0, p1;  /* pieces [p0, p1) */
} dchunk;

/* Everything one direct write needs. */
typedef struct dwrite {
    raster_var *v;
    int tiled;                      /* format 5 (var_tiled) */
    hid_t shared;                   /* format 5: the variable's dataset,
                                       every st[].did, or -1 */
    const size_t *ostart, *ocount;
    const unsigned char *buf;
    size_t plane_cells;
    size_t pmult[RASTER_MAX_DIMS];  /* planes per step of each outer dim */
    dstore *st;
    size_t nst;
    piece *p;        /* the caller's pieces, sorted */
    size_t np;
    dchunk *cks;
    size_t nck;
} dwrite;

/* 1 when the box starts and ends on chunk boundaries along every outer
 * dimension (or ends at a fixed dimension's end), so that each chunk it
 * touches along them is covered entirely. */
static int box_aligned(const dwrite *w, const dstore *d)
{
    int no = var_nouter(w->v);
    for (int i = 0; i < no; i++) {
        hsize_t end = w->ostart[i] + w->ocount[i];
        if (w->ostart[i] % d->ck[i] != 0)
            return 0;
        if (end % d->ck[i] != 0 && (d->unlim[i] || end != d->dims[i]))
            return 0;
    }
    return 1;
}

/* Opens store d->store of v and keeps it in d->did when it can be written
 * directly: chunked, plain bytes (fileio_plain), chunks of at least
 * DIRECT_MIN_BYTES, the box aligned to them; else d->did is -1. HDF5
 * failures here only mean "not directly". */
static void open_store(const dwrite *w, dstore *d)
{
    raster_var *v = w->v;
    int no = var_nouter(v), ok = 0;
    hid_t did = (hid_t)fileio_store(v, d->store);
    d->did = -1;
    if (did < 0)
        return;
    hid_t dcpl = H5Dget_create_plist(did);
    hid_t space = H5Dget_space(did);
    hsize_t maxdims[RASTER_MAX_DIMS + 1];
    if (dcpl >= 0 && space >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
        fileio_plain(did, dcpl, v->elem) &&
        H5Sget_simple_extent_ndims(space) == no + 1 &&
        H5Pget_chunk(dcpl, no + 1, d->ck) == no + 1 &&
        H5Sget_simple_extent_dims(space, d->dims, maxdims) == no + 1) {
        ok = 1;
        d->rank = no + 1;
        d->bytes = v->elem;
        for (int i = 0; i <= no && ok; i++) {
            if (i < no)
                d->unlim[i] = maxdims[i] == H5S_UNLIMITED;
            ok = d->ck[i] > 0 &&
                 !raster_mul_overflows(d->bytes, (size_t)d->ck[i], &d->bytes);
        }
        ok = ok && d->bytes >= DIRECT_MIN_BYTES &&
             d->dims[no] == v->store_cells[d->store] && box_aligned(w, d);
    }
    if (space >= 0) H5Sclose(space);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (ok)
        d->did = did;
    else
        H5Dclose(did);
}

/* The distinct stores of the (sorted) pieces, each opened and probed
 * (format 5: only listed, open_tiled opens them once their whole tiles
 * are known). Returns the number with a dataset to write directly. */
static int open_stores(dwrite *w, const piece *p, size_t n, size_t *usable)
{
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        ns += i == 0 || p[i].store != p[i - 1].store;
    w->st = raster_calloc(ns, sizeof *w->st);
    if (!w->st)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           w->v->name);
    *usable = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && p[i].store == p[i - 1].store)
            continue;
        dstore *d = &w->st[w->nst++];
        d->store = p[i].store;
        d->did = -1;
        if (!w->tiled)
            open_store(w, d);
        *usable += d->did >= 0;
    }
    return RASTER_OK;
}

static dstore *store_of(const dwrite *w, uint32_t store)
{
    for (size_t i = 0; i < w->nst; i++)
        if (w->st[i].store == store)
            return &w->st[i];
    return NULL;
}

/* ---- format 5: tiles as the variable's chunks ------------------------- */

/* A tile's grid box: its first row and column, and its rows and columns
 * in the grid (an edge tile's are fewer than the tile's). */
typedef struct dtile {
    size_t y0, x0, h, w;
} dtile;

/* Tile k of store s (v->stile, built at definition). */
static dtile tile_at(const raster_var *v, uint32_t s, size_t k)
{
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t ntx = (v->nx + tw - 1) / tw, t = v->stile[v->stile_first[s] + k];
    dtile b = {t / ntx * th, t % ntx * tw, 0, 0};
    b.h = v->ny - b.y0 < th ? v->ny - b.y0 : th;
    b.w = v->nx - b.x0 < tw ? v->nx - b.x0 : tw;
    return b;
}

/* How many of tile cells [lo, hi) (rows of tw) lie in the grid. */
static size_t grid_cells(uint64_t lo, uint64_t hi, size_t tw, const dtile *b)
{
    size_t n = 0;
    for (uint64_t r = lo / tw; r * tw < hi && r < b->h; r++) {
        uint64_t a = lo > r * tw ? lo - r * tw : 0;
        uint64_t e = hi - r * tw < tw ? hi - r * tw : tw;
        e = e < b->w ? e : b->w;
        n += e > a ? (size_t)(e - a) : 0;
    }
    return n;
}

/* Lists the tiles of store d that pieces [a, b) (all of d, sorted, each
 * within one tile: spans_split_pieces cuts them so) cover entirely, in
 * w->cks[d->c0, d->c1): every cell of the tile in the grid, and no piece
 * reaching past it or into its padding (those stay with netCDF). */
static int find_tiles_of(dwrite *w, dstore *d, size_t a, size_t b,
                         size_t *cap)
{
    const raster_var *v = w->v;
    size_t tw = v->chunk[v->ndims - 1], tc = tw * v->chunk[v->ndims - 2];
    size_t ntiles = d->store <= v->nregions
                        ? v->stile_first[d->store + 1] -
                              v->stile_first[d->store]
                        : 0;
    d->c0 = d->c1 = w->nck;
    for (size_t i = a, j; i < b; i = j) {
        uint64_t k = w->p[i].soff / tc, base = k * tc;
        int ok = k < ntiles;
        dtile t = ok ? tile_at(v, d->store, (size_t)k) : (dtile){0, 0, 0, 0};
        size_t cells = 0, grid = 0;
        for (j = i; j < b && w->p[j].soff / tc == k; j++) {
            const piece *q = &w->p[j];
            ok = ok && q->rep == 0 && q->soff + q->len <= base + tc;
            cells += q->len;
            if (ok)
                grid += grid_cells(q->soff - base, q->soff + q->len - base,
                                   tw, &t);
        }
        if (!ok || cells != grid || grid != t.h * t.w)
            continue;
        int rc = raster_grow(&w->cks, cap, w->nck + 1, sizeof *w->cks);
        if (rc)
            return rc;
        w->cks[w->nck++] = (dchunk){(size_t)k, i, j};
        d->c1 = w->nck;
    }
    return RASTER_OK;
}

/* Opens the variable's dataset for the stores with whole tiles (w->shared,
 * their did) when those can be written as its chunks: chunked as the base
 * chunk shape's tile, plain bytes (fileio_plain: a filtered variable's
 * chunks are netCDF's to deflate), of the grid's extent, the box aligned
 * to its outer chunks. Else nothing is written directly (w->nck 0). HDF5
 * failures here only mean "not directly". */
static void open_tiled(dwrite *w)
{
    raster_var *v = w->v;
    int nd = v->ndims, no = var_nouter(v), ok = 0;
    hid_t did = (hid_t)fileio_placeholder(v);
    hid_t dcpl = did >= 0 ? H5Dget_create_plist(did) : -1;
    hid_t space = did >= 0 ? H5Dget_space(did) : -1;
    hsize_t maxdims[RASTER_MAX_DIMS + 1];
    dstore t = {.rank = nd};
    if (dcpl >= 0 && space >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
        fileio_plain(did, dcpl, v->elem) &&
        H5Sget_simple_extent_ndims(space) == nd &&
        H5Pget_chunk(dcpl, nd, t.ck) == nd &&
        H5Sget_simple_extent_dims(space, t.dims, maxdims) == nd &&
        t.ck[no] == v->chunk[no] && t.ck[no + 1] == v->chunk[no + 1] &&
        t.dims[no] == v->ny && t.dims[no + 1] == v->nx) {
        ok = 1;
        t.bytes = v->elem;
        for (int i = 0; i < nd && ok; i++) {
            if (i < no)
                t.unlim[i] = maxdims[i] == H5S_UNLIMITED;
            ok = t.ck[i] > 0 &&
                 !raster_mul_overflows(t.bytes, (size_t)t.ck[i], &t.bytes);
        }
        ok = ok && box_aligned(w, &t);
    }
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (!ok) {
        if (did >= 0)
            H5Dclose(did);
        w->nck = 0;
        return;
    }
    w->shared = did;
    for (size_t k = 0; k < w->nst; k++) {
        dstore *d = &w->st[k];
        if (d->c1 == d->c0)
            continue;
        t.store = d->store;
        t.c0 = d->c0;
        t.c1 = d->c1;
        *d = t;
        d->did = did;
    }
}

/* Cells [*lo, *hi) of chunk c of store d that piece q covers. */
static size_t overlap(const dstore *d, int no, size_t c, const piece *q,
                      uint64_t *lo, uint64_t *hi)
{
    uint64_t c0 = (uint64_t)c * d->ck[no], c1 = c0 + d->ck[no];
    *lo = q->soff > c0 ? q->soff : c0;
    *hi = q->soff + q->len < c1 ? q->soff + q->len : c1;
    return *hi > *lo ? (size_t)(*hi - *lo) : 0;
}

/* Adds chunk c of store d, overlapped by pieces [i, j), to w->cks when
 * they cover it entirely. A piece reaching past both of its ends (longer
 * than a chunk) keeps the chunk with netCDF, so that what is left of each
 * piece after the direct writes is one run (see leave_rest). */
static int add_if_whole(dwrite *w, dstore *d, size_t c, size_t i, size_t j,
                        size_t *cap)
{
    int no = var_nouter(w->v);
    size_t covered = 0, first = c * (size_t)d->ck[no];
    size_t want = (size_t)d->dims[no] - first < d->ck[no]
                      ? (size_t)d->dims[no] - first : (size_t)d->ck[no];
    for (size_t k = i; k < j; k++) {
        uint64_t lo, hi;
        covered += overlap(d, no, c, &w->p[k], &lo, &hi);
        if (w->p[k].soff < first && w->p[k].soff + w->p[k].len > first + want)
            return RASTER_OK;
    }
    if (covered != want)
        return RASTER_OK;
    int rc = raster_grow(&w->cks, cap, w->nck + 1, sizeof *w->cks);
    if (rc)
        return rc;
    w->cks[w->nck++] = (dchunk){c, i, j};
    d->c1 = w->nck;
    return RASTER_OK;
}

/* Lists the cell chunks of store d that pieces [a, b) (all of d, sorted)
 * cover entirely, in w->cks[d->c0, d->c1). */
static int find_whole_of(dwrite *w, dstore *d, size_t a, size_t b,
                         size_t *cap)
{
    int no = var_nouter(w->v);
    uint64_t ckc = d->ck[no];
    size_t c = (size_t)(w->p[a].soff / ckc);
    d->c0 = d->c1 = w->nck;
    for (size_t i = a; i < b;) {
        uint64_t hi = (uint64_t)(c + 1) * ckc;
        size_t j = i;
        while (j < b && w->p[j].soff < hi)
            j++;
        int rc = add_if_whole(w, d, c, i, j, cap);
        if (rc)
            return rc;
        if (w->p[j - 1].soff + w->p[j - 1].len > hi) {
            i = j - 1; /* it goes on into the next chunk */
            c++;
        } else if ((i = j) < b) {
            c = (size_t)(w->p[i].soff / ckc);
        }
    }
    return RASTER_OK;
}

/* The whole chunks of every store written directly. */
static int find_whole(dwrite *w)
{
    size_t cap = 0;
    for (size_t a = 0; a < w->np;) {
        size_t b = a + 1;
        while (b < w->np && w->p[b].store == w->p[a].store)
            b++;
        dstore *d = store_of(w, w->p[a].store);
        int rc = !d               ? RASTER_OK
                 : w->tiled       ? find_tiles_of(w, d, a, b, &cap)
                 : d->did >= 0    ? find_whole_of(w, d, a, b, &cap)
                                  : RASTER_OK;
        if (rc)
            return rc;
        a = b;
    }
    return RASTER_OK;
}

/* After the direct writes: takes what they wrote out of the pieces (in
 * place, the cells of each direct chunk off each piece overlapping it,
 * which leaves one run per piece: add_if_whole) and drops the empty
 * ones; returns how many are left for netCDF. */
static size_t leave_rest(dwrite *w)
{
    int no = var_nouter(w->v);
    for (size_t k = 0; k < w->nck; k++) {
        const dchunk *c = &w->cks[k];
        if (w->tiled) { /* its pieces lie in the tile: all went direct */
            for (size_t i = c->p0; i < c->p1; i++)
                w->p[i].len = 0;
            continue;
        }
        const dstore *d = store_of(w, w->p[c->p0].store);
        for (size_t i = c->p0; i < c->p1; i++) {
            piece *q = &w->p[i];
            uint64_t lo, hi;
            if (overlap(d, no, c->cell, q, &lo, &hi) == 0)
                continue;
            if (lo == q->soff) { /* the head went direct */
                q->uoff += hi - lo;
                q->len -= (uint32_t)(hi - lo);
                q->soff = hi;
            } else { /* the tail went direct */
                q->len -= (uint32_t)(hi - lo);
            }
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < w->np; i++)
        if (w->p[i].len > 0)
            w->p[n++] = w->p[i];
    return n;
}

/* 1 when the box reaches past store d's end along an unlimited
 * dimension; new[] gets the extent it needs. */
static int needs_growth(const dwrite *w, const dstore *d, hsize_t *new)
{
    int no = var_nouter(w->v), grow = 0;
    for (int i = 0; i < d->rank; i++) {
        hsize_t end = i < no ? w->ostart[i] + w->ocount[i] : 0;
        new[i] = d->dims[i];
        if (i < no && d->unlim[i] && d->dims[i] < end) {
            new[i] = end;
            grow = 1;
        }
    }
    return grow;
}

/* The first cell of whole chunk c of store d along the dataset's
 * dimensions after the outer ones: its cell, or in format 5 its tile's
 * first row and column. */
static void chunk_origin(const dwrite *w, const dstore *d, const dchunk *c,
                         hsize_t *off)
{
    int no = var_nouter(w->v);
    if (w->tiled) {
        dtile b = tile_at(w->v, d->store, c->cell);
        off[no] = b.y0;
        off[no + 1] = b.x0;
    } else {
        off[no] = (hsize_t)c->cell * d->ck[no];
    }
}

/* netCDF extends store d to the end of the box, writing the fill value at
 * one cell of the box's last record in d's first whole chunk (which the
 * direct write then replaces): netCDF's own record count (which extends
 * coordinate variables at close) is then what a write through it would
 * make. Costs a chunk of fill in HDF5's cache. */
static int extend_by_netcdf(const dwrite *w, const dstore *d)
{
    raster_var *v = w->v;
    int no = var_nouter(v);
    size_t start[RASTER_MAX_DIMS + 1], one[RASTER_MAX_DIMS + 1];
    hsize_t off[RASTER_MAX_DIMS + 1];
    chunk_origin(w, d, &w->cks[d->c0], off);
    for (int i = 0; i < d->rank; i++) {
        start[i] = i >= no      ? (size_t)off[i]
                   : d->unlim[i] ? w->ostart[i] + w->ocount[i] - 1
                                 : w->ostart[i];
        one[i] = 1;
    }
    int st = nc_put_vara(v->store_grp[d->store], v->store_var[d->store],
                         start, one, v->fill);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "extending %s: %s", v->name,
                              nc_strerror(st));
    return RASTER_OK;
}

/* Extends every store the box reaches past the end of: the one with the
 * smallest chunks through netCDF (which then knows the new record count),
 * the others with H5Dset_extent on the dataset netCDF shares (netCDF asks
 * HDF5 for a variable's extent at every access, so it sees the change). */
static int extend_stores(const dwrite *w)
{
    hsize_t new[RASTER_MAX_DIMS + 1];
    const dstore *small = NULL;
    for (size_t k = 0; k < w->nst; k++) {
        const dstore *d = &w->st[k];
        if (d->did >= 0 && d->c1 > d->c0 && needs_growth(w, d, new) &&
            (!small || d->bytes < small->bytes))
            small = d;
    }
    if (!small)
        return RASTER_OK;
    int rc = extend_by_netcdf(w, small);
    /* format 5: that was the one dataset */
    for (size_t k = 0; k < w->nst && rc == RASTER_OK && !w->tiled; k++) {
        const dstore *d = &w->st[k];
        if (d == small || d->did < 0 || d->c1 == d->c0 ||
            !needs_growth(w, d, new))
            continue;
        if (H5Dset_extent(d->did, new) < 0)
            return raster_fail_nc(
                RASTER_ENETCDF, NC_EHDFERR,
                "extending %s: HDF5 could not extend a store", w->v->name);
    }
    return rc;
}

/* ---- gathering one chunk ----------------------------------------------- */

/* A chunk to write: its store, its outer chunk coordinates, its cells. */
typedef struct dtask {
    const dstore *d;
    hsize_t kc[RASTER_MAX_DIMS];  /* outer chunk index along each dim */
    const dchunk *c;
} dtask;

static void fill_bytes(unsigned char *dst, size_t n, const unsigned char *fill,
                       size_t elem)
{
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * elem, fill, elem);
}

/* A piece is a tile row (50 cells, 14 KB from the next in the caller's
 * grid): the hardware finds no stream in them, and the gather waited on
 * memory. Asking for the head of the piece GATHER_AHEAD on (longer
 * pieces stream by themselves) took the bench record's gather from 48
 * to 30 ms (8 ahead: 45, 16: 35, 64: 30). */
#define GATHER_AHEAD 32
#define PREFETCH_BYTES 320

static void prefetch_piece(const dwrite *w, const piece *f, size_t plane)
{
    size_t elem = w->v->elem;
    const unsigned char *src = w->buf + (plane * w->plane_cells + f->uoff) *
                                            elem;
    size_t bytes = (size_t)f->len * elem;
    if (bytes > PREFETCH_BYTES)
        bytes = PREFETCH_BYTES;
    for (size_t b = 0; b < bytes; b += 64)
        __builtin_prefetch(src + b, 0, 0);
}

/* The caller's plane of row r of chunk t's outer extent (row-major);
 * 0 when it lies past a fixed dimension's end (the box ends there). */
static int plane_of(const dwrite *w, const dtask *t, size_t r, size_t *plane)
{
    const dstore *d = t->d;
    size_t rest = r;
    int inside = 1;
    *plane = 0;
    for (int i = var_nouter(w->v) - 1; i >= 0; i--) {
        size_t o = (size_t)(t->kc[i] * d->ck[i]) + rest % d->ck[i];
        rest /= d->ck[i];
        inside &= o < w->ostart[i] + w->ocount[i];
        *plane += (o - w->ostart[i]) * w->pmult[i];
    }
    return inside;
}

/* Format 5: copies the caller's cells of tile t into `out` as the
 * variable's chunk holds them (row-major over the chunk's outer extent,
 * then the tile's rows of tw cells); its cells past the grid's edge, and
 * planes past a fixed dimension's end, get the fill value, as HDF5 would
 * give them. */
static void gather_tile(const dwrite *w, const dtask *t, unsigned char *out)
{
    const raster_var *v = w->v;
    const dstore *d = t->d;
    int no = var_nouter(v);
    size_t elem = v->elem, th = (size_t)d->ck[no], tw = (size_t)d->ck[no + 1];
    size_t tc = th * tw, rows = 1;
    uint64_t base = (uint64_t)t->c->cell * tc;
    dtile b = tile_at(v, d->store, t->c->cell);
    for (int i = 0; i < no; i++)
        rows *= (size_t)d->ck[i];
    for (size_t r = 0; r < rows; r++) {
        unsigned char *tile = out + r * tc * elem;
        size_t plane;
        if (!plane_of(w, t, r, &plane)) {
            fill_bytes(tile, tc, v->fill, elem);
            continue;
        }
        for (size_t i = t->c->p0; i < t->c->p1; i++) {
            const piece *p = &w->p[i];
            if (i + GATHER_AHEAD < t->c->p1)
                prefetch_piece(w, &w->p[i + GATHER_AHEAD], plane);
            memcpy(tile + (p->soff - base) * elem,
                   w->buf + (plane * w->plane_cells + p->uoff) * elem,
                   (size_t)p->len * elem);
        }
        if (b.w < tw)
            for (size_t y = 0; y < b.h; y++)
                fill_bytes(tile + (y * tw + b.w) * elem, tw - b.w, v->fill,
                           elem);
        if (b.h < th)
            fill_bytes(tile + b.h * tw * elem, (th - b.h) * tw, v->fill,
                       elem);
    }
}

/* Copies the caller's cells of chunk t into `out` in the chunk's order
 * (row-major over the chunk's outer extent, then its cells); parts of an
 * edge chunk beyond the dataset get the fill value, as HDF5 would. */
static void gather(const dwrite *w, const dtask *t, unsigned char *out)
{
    if (w->tiled) {
        gather_tile(w, t, out);
        return;
    }
    const raster_var *v = w->v;
    const dstore *d = t->d;
    int no = var_nouter(v);
    size_t elem = v->elem, ckc = (size_t)d->ck[no], rows = 1;
    size_t cell0 = t->c->cell * ckc;
    size_t ncell = (size_t)d->dims[no] - cell0 < ckc
                       ? (size_t)d->dims[no] - cell0 : ckc;
    for (int i = 0; i < no; i++)
        rows *= (size_t)d->ck[i];
    for (size_t r = 0; r < rows; r++) {
        unsigned char *row = out + r * ckc * elem;
        size_t plane;
        if (!plane_of(w, t, r, &plane)) { /* past a fixed dimension's end */
            fill_bytes(row, ckc, v->fill, elem);
            continue;
        }
        for (size_t i = t->c->p0; i < t->c->p1; i++) {
            const piece *p = &w->p[i];
            uint64_t lo, hi; /* the first and last may reach out */
            if (i + GATHER_AHEAD < t->c->p1)
                prefetch_piece(w, &w->p[i + GATHER_AHEAD], plane);
            overlap(d, no, t->c->cell, p, &lo, &hi);
            memcpy(row + (lo - cell0) * elem,
                   w->buf + (plane * w->plane_cells + p->uoff +
                             (lo - p->soff)) * elem,
                   (size_t)(hi - lo) * elem);
        }
        if (ncell < ckc)
            fill_bytes(row + ncell * elem, ckc - ncell, v->fill, elem);
    }
}

/* ---- writing, on this thread or a writer thread ------------------------- */

/* One chunk buffer and what it holds. */
typedef struct slot {
    unsigned char *buf;
    hid_t did;
    hsize_t off[RASTER_MAX_DIMS + 1];
    size_t bytes;
    int full;
} slot;

static int write_slot(const slot *s, const char *name)
{
    if (H5Dwrite_chunk(s->did, H5P_DEFAULT, 0, s->off, s->bytes, s->buf) < 0)
        return raster_fail_nc(
            RASTER_ENETCDF, NC_EHDFERR,
            "writing %s: HDF5 could not write a chunk of %zu bytes", name,
            s->bytes);
    atomic_fetch_add(&chunks_written, 1);
    return RASTER_OK;
}

/* Two slots handed between the gathering thread and the writer. */
typedef struct dpipe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot slot[2];
    int done;        /* no more chunks will come */
    int rc, ncst;    /* the writer's first error, its netCDF status */
    char msg[512];   /* and message (thread-local on the writer) */
    const char *name;
} dpipe;

static void *writer(void *arg)
{
    dpipe *p = arg;
    H5E_auto2_t efunc;
    void *edata;
    /* a thread-safe HDF5 keeps one error stack per thread */
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    int i = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->slot[i].full && !p->done)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->slot[i].full)
            break;
        int failed = p->rc != RASTER_OK;
        pthread_mutex_unlock(&p->mu);
        /* after an error the chunks still handed over are dropped */
        int rc = failed ? RASTER_OK : write_slot(&p->slot[i], p->name);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            p->rc = rc;
            p->ncst = raster_nc_status();
            snprintf(p->msg, sizeof p->msg, "%s", raster_errmsg());
        }
        p->slot[i].full = 0;
        pthread_cond_broadcast(&p->cv);
        i ^= 1;
    }
    pthread_mutex_unlock(&p->mu);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return NULL;
}

/* A stretch of the write order: the whole chunks w->cks[a, b) of store d. */
typedef struct dleg {
    const dstore *d;
    size_t a, b;
} dleg;

/* Steps t to the box's next outer chunk (odometer); 0, back at the
 * first, when it was the last. */
static int next_outer(const dwrite *w, dtask *t)
{
    const dstore *d = t->d;
    for (int i = var_nouter(w->v) - 1; i >= 0; i--) {
        hsize_t end = (w->ostart[i] + w->ocount[i] + d->ck[i] - 1) / d->ck[i];
        if (++t->kc[i] < end)
            return 1;
        t->kc[i] = w->ostart[i] / d->ck[i];
    }
    return 0;
}

static void first_task(const dwrite *w, const dleg *g, dtask *t)
{
    t->d = g->d;
    t->c = w->cks + g->a;
    for (int i = 0; i < var_nouter(w->v); i++)
        t->kc[i] = w->ostart[i] / g->d->ck[i];
}

/* The write order's walk: leg g, its chunk t. */
typedef struct dwalk {
    const dleg *legs;
    size_t nlegs, g;
    dtask t;
} dwalk;

static int walk_first(const dwrite *w, const dleg *legs, size_t nlegs,
                      dwalk *k)
{
    k->legs = legs;
    k->nlegs = nlegs;
    k->g = 0;
    if (nlegs > 0)
        first_task(w, &legs[0], &k->t);
    return nlegs > 0;
}

/* Steps k to the next chunk to write; 0 when all are. HDF5 places each
 * chunk at the end of the file as it is first written. Formats 3 and 4:
 * leg by leg, the outer chunks of the box innermost, then the cell
 * chunks: a write of many records lays one cell chunk's records side by
 * side, so a region's share of a store is one long stretch of the file
 * across those records, which a cold read takes in one stream. Format 5:
 * the outer chunks outermost, then leg by leg, the tiles innermost: a
 * region's tiles of one record (outer chunk) follow on in the file, as
 * format 5's reader batches them (inflate.c: chunks that follow on and
 * serve the same planes). */
static int walk_next(const dwrite *w, dwalk *k)
{
    dtask *t = &k->t;
    if (!w->tiled) {
        if (next_outer(w, t) || ++t->c < w->cks + k->legs[k->g].b)
            return 1;
    } else if (++t->c < w->cks + k->legs[k->g].b) {
        return 1;
    }
    if (++k->g < k->nlegs) {
        hsize_t kc[RASTER_MAX_DIMS];
        memcpy(kc, t->kc, sizeof kc);
        first_task(w, &k->legs[k->g], t);
        if (w->tiled) /* the same outer chunk */
            memcpy(t->kc, kc, sizeof kc);
        return 1;
    }
    if (!w->tiled)
        return 0;
    /* format 5: every store's tiles of this outer chunk written; the
     * next outer chunk's, from the first leg */
    k->g = 0;
    if (!next_outer(w, t))
        return 0;
    t->d = k->legs[0].d;
    t->c = w->cks + k->legs[0].a;
    return 1;
}

/* Store position of the region that owns each tile of v's mixed store
 * (*owner[place], the caller frees; NULL without a mesh): of the regions
 * with cells in the tile, the one with the fewest cells in all, ties to
 * the lower position. Format 5 writes a mixed tile after its owner's pure
 * tiles, so that a cold read of a region takes both in one stretch; the
 * smallest region, for which a tile far away costs the most, gets it
 * (a coast's tiles go to the sea, not to the land). */
static int mixed_owners(const raster_var *v, uint32_t **owner)
{
    const raster_mesh *m = v->mesh;
    size_t s = v->nregions, n = v->stile_first[s + 1] - v->stile_first[s];
    *owner = NULL;
    if (!m || !v->lay || n == 0)
        return RASTER_OK;
    if (!(*owner = raster_reallocarray(NULL, n, sizeof **owner)))
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    /* the mixed store's tiles in mesh-chunk order (tilestore_index) */
    size_t k = 0, tw = m->tile_w;
    for (size_t ci = 0; ci < m->nchunks && k < n; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        if (!c->mixed)
            continue;
        uint32_t best = (uint32_t)s;
        size_t best_cells = SIZE_MAX;
        for (size_t i = c->share0; i < c->share0 + c->nshares; i++) {
            long pos = layout_region_pos(v->lay, m->shares[i].id);
            if (pos < 0 || (size_t)pos >= s)
                continue;
            const region_info *r = &v->regions[pos];
            size_t cells = r->pure_cells + r->mixed_cells;
            if (cells < best_cells ||
                (cells == best_cells && (uint32_t)pos < best)) {
                best = (uint32_t)pos;
                best_cells = cells;
            }
        }
        for (size_t x = 0; x < c->w && k < n; x += tw)
            (*owner)[k++] = best;
    }
    for (; k < n; k++) /* a mesh that does not match: no owner */
        (*owner)[k] = (uint32_t)s;
    return RASTER_OK;
}

typedef struct owned {
    uint32_t owner;
    dchunk c;
} owned;

static int cmp_owned(const void *a, const void *b)
{
    const owned *p = a, *q = b;
    if (p->owner != q->owner)
        return (p->owner > q->owner) - (p->owner < q->owner);
    return (p->c.cell > q->c.cell) - (p->c.cell < q->c.cell);
}

/* Format 5's order: store by store, each region's pure tiles followed by
 * the mixed tiles it owns (mixed_owners; w->cks of the mixed store sorted
 * so), mixed tiles without an owner in this write last. *legs: at most
 * 3 * nst + 1 of them (caller frees). */
static int plan_tiled_legs(const dwrite *w, dleg **legs, size_t *n)
{
    const raster_var *v = w->v;
    const dstore *m = store_of(w, (uint32_t)v->nregions);
    if (m && (m->did < 0 || m->c1 == m->c0))
        m = NULL;
    uint32_t *owner = NULL;
    owned *o = NULL; /* w->cks[m->c0 + i] and its owner: o[i] */
    int rc = m ? mixed_owners(v, &owner) : RASTER_OK;
    if (rc == RASTER_OK && owner) {
        size_t nm = m->c1 - m->c0, nt = v->stile_first[v->nregions + 1] -
                                        v->stile_first[v->nregions];
        if (!(o = raster_reallocarray(NULL, nm, sizeof *o))) {
            rc = raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                             v->name);
        } else {
            for (size_t i = 0; i < nm; i++) {
                const dchunk *c = &w->cks[m->c0 + i];
                o[i] = (owned){c->cell < nt ? owner[c->cell]
                                            : (uint32_t)v->nregions, *c};
            }
            qsort(o, nm, sizeof *o, cmp_owned);
            for (size_t i = 0; i < nm; i++)
                w->cks[m->c0 + i] = o[i].c;
        }
    }
    raster_free(owner);
    *n = 0;
    *legs = rc ? NULL : raster_reallocarray(NULL, 3 * w->nst + 1,
                                            sizeof **legs);
    if (rc == RASTER_OK && !*legs)
        rc = raster_fail(RASTER_ENOMEM, "out of memory writing %s", v->name);
    size_t q = m ? m->c0 : 0;
    for (size_t k = 0; rc == RASTER_OK && k < w->nst; k++) {
        const dstore *d = &w->st[k];
        if (d == m)
            continue;
        size_t a = q;
        while (o && q < m->c1 && o[q - m->c0].owner < d->store)
            q++;
        if (q > a) /* owned by regions this write has no pure tiles of */
            (*legs)[(*n)++] = (dleg){m, a, q};
        if (d->did >= 0 && d->c1 > d->c0)
            (*legs)[(*n)++] = (dleg){d, d->c0, d->c1};
        for (a = q; o && q < m->c1 && o[q - m->c0].owner == d->store;)
            q++;
        if (q > a)
            (*legs)[(*n)++] = (dleg){m, a, q};
    }
    if (rc == RASTER_OK && m && q < m->c1)
        (*legs)[(*n)++] = (dleg){m, q, m->c1};
    raster_free(o);
    return rc;
}

/* The order of the whole chunks: region by region, its pure store, then
 * the mixed store's chunks up to the one holding the end of its mixed run
 * (those not written yet). A region's pure store then lies between the
 * mixed chunks that hold its mixed run, so that its cells of all records
 * are one stretch of the file instead of two far apart. Format 5:
 * plan_tiled_legs. *legs: at most 2 * nst + 1 of them (caller frees). */
static int plan_legs(const dwrite *w, dleg **legs, size_t *n)
{
    const raster_var *v = w->v;
    if (w->tiled)
        return plan_tiled_legs(w, legs, n);
    *n = 0;
    *legs = raster_reallocarray(NULL, 2 * w->nst + 1, sizeof **legs);
    if (!*legs)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s", v->name);
    const dstore *m = store_of(w, (uint32_t)v->nregions);
    if (m && (m->did < 0 || m->c1 == m->c0))
        m = NULL;
    size_t pos = m ? m->c0 : 0, ckc = m ? (size_t)m->ck[var_nouter(v)] : 1;
    for (size_t k = 0; k < w->nst; k++) { /* stores ascend: pure ones first */
        const dstore *d = &w->st[k];
        if (d == m)
            continue;
        if (d->did >= 0 && d->c1 > d->c0)
            (*legs)[(*n)++] = (dleg){d, d->c0, d->c1};
        if (!m || d->store >= v->nregions ||
            v->regions[d->store].mixed_cells == 0)
            continue;
        const region_info *r = &v->regions[d->store];
        size_t last = (r->mixed_off + r->mixed_cells - 1) / ckc, q = pos;
        while (q < m->c1 && w->cks[q].cell <= last)
            q++;
        if (q > pos)
            (*legs)[(*n)++] = (dleg){m, pos, q};
        pos = q;
    }
    if (m && pos < m->c1)
        (*legs)[(*n)++] = (dleg){m, pos, m->c1};
    return RASTER_OK;
}

static void slot_set(const dwrite *w, const dtask *t, slot *s)
{
    int no = var_nouter(w->v);
    s->did = t->d->did;
    s->bytes = t->d->bytes;
    for (int i = 0; i < no; i++)
        s->off[i] = t->kc[i] * t->d->ck[i];
    chunk_origin(w, t->d, t->c, s->off);
}

/* Every whole chunk, gathered and written on this thread. */
static int run_serial(const dwrite *w, const dleg *legs, size_t nlegs,
                      slot *s)
{
    dwalk k;
    for (int more = walk_first(w, legs, nlegs, &k); more;
         more = walk_next(w, &k)) {
        gather(w, &k.t, s->buf);
        slot_set(w, &k.t, s);
        int rc = write_slot(s, w->v->name);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* Hands chunk t to the writer through the next free slot *i; 0 when the
 * writer has failed (nothing more is gathered). */
static int hand_over(const dwrite *w, dpipe *p, const dtask *t, int *i)
{
    slot *s = &p->slot[*i];
    pthread_mutex_lock(&p->mu);
    while (s->full && p->rc == RASTER_OK)
        pthread_cond_wait(&p->cv, &p->mu);
    int failed = p->rc != RASTER_OK;
    pthread_mutex_unlock(&p->mu);
    if (failed)
        return 0;
    gather(w, t, s->buf); /* the writer is busy with the other slot */
    slot_set(w, t, s);
    pthread_mutex_lock(&p->mu);
    s->full = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    *i ^= 1;
    return 1;
}

/* Every whole chunk: gathered here, written by a writer thread. -1 when
 * the thread cannot start (nothing written then). */
static int run_piped(const dwrite *w, const dleg *legs, size_t nlegs,
                     slot *slots)
{
    dpipe p = {.mu = PTHREAD_MUTEX_INITIALIZER,
               .cv = PTHREAD_COND_INITIALIZER, .rc = RASTER_OK,
               .name = w->v->name};
    p.slot[0] = slots[0];
    p.slot[1] = slots[1];
    pthread_t tid;
    if (thread_start(&tid, 0, writer, &p) != 0)
        return -1;
    int i = 0;
    dwalk k;
    for (int more = walk_first(w, legs, nlegs, &k); more;
         more = walk_next(w, &k))
        if (!hand_over(w, &p, &k.t, &i))
            break;
    pthread_mutex_lock(&p.mu);
    p.done = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    pthread_join(tid, NULL);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    if (p.rc)
        return raster_fail_nc(p.rc, p.ncst, "%s", p.msg);
    return RASTER_OK;
}

/* Bytes of the whole chunks this write appends: those of outer chunks
 * past a store's extent before the write (HDF5 allocates them at the end
 * of the file; chunks that exist already are rewritten in place). */
static size_t new_bytes(const dwrite *w)
{
    int no = var_nouter(w->v);
    size_t total = 0;
    for (size_t k = 0; k < w->nst; k++) {
        const dstore *d = &w->st[k];
        if (d->did < 0 || d->c1 == d->c0)
            continue;
        size_t all = 1, old = 1;
        for (int i = 0; i < no; i++) {
            size_t a = (size_t)(w->ostart[i] / d->ck[i]);
            size_t b = (size_t)((w->ostart[i] + w->ocount[i] + d->ck[i] - 1) /
                                d->ck[i]);
            size_t e = d->unlim[i]
                           ? (size_t)((d->dims[i] + d->ck[i] - 1) / d->ck[i])
                           : b;
            all *= b - a;
            old *= e > a ? (e < b ? e : b) - a : 0;
        }
        size_t n = (all - old) * (d->c1 - d->c0), bytes;
        if (raster_mul_overflows(n, d->bytes, &bytes) ||
            bytes > SIZE_MAX - total)
            return 0;
        total += bytes;
    }
    return total;
}

/* Reserves the file blocks the appended chunks will take (fallocate,
 * the file's size unchanged) before they are written: ext4 then writes
 * them into allocated blocks instead of reserving and mapping delayed
 * ones page by page, a third less time in pwrite (a 1 GiB write of
 * 0.75 MB chunks, 0.20 -> 0.13 s). A hint only: any failure (no
 * fallocate on this file system, a full disk) leaves the writes as they
 * were, which then report what they meet. */
static void reserve_space(const dwrite *w)
{
    if (!direct_reserve)
        return;
    size_t n = new_bytes(w);
    hid_t fid = n ? (hid_t)fileio_h5(w->v->file) : -1;
    if (fid < 0)
        return;
    /* only the POSIX driver's handle is a file descriptor (a diskless
     * file's is its memory) */
    hid_t fapl = H5Fget_access_plist(fid);
    int sec2 = fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2;
    if (fapl >= 0)
        H5Pclose(fapl);
    haddr_t eoa;
    int *fd = NULL;
    if (!sec2 || H5Fget_eoa(fid, &eoa) < 0 ||
        H5Fget_vfd_handle(fid, H5P_DEFAULT, (void **)&fd) < 0 || !fd ||
        *fd < 0 || eoa > (haddr_t)INT64_MAX || n > (size_t)INT64_MAX)
        return;
    if (fallocate(*fd, FALLOC_FL_KEEP_SIZE, (off_t)eoa, (off_t)n) == 0)
        atomic_fetch_add(&bytes_reserved, n);
}

/* Extends the stores, then writes every whole chunk. */
static int write_whole(const dwrite *w, int threads)
{
    size_t bytes = 0;
    int rc = extend_stores(w);
    if (rc)
        return rc;
    reserve_space(w);
    for (size_t k = 0; k < w->nst; k++)
        if (w->st[k].did >= 0 && w->st[k].c1 > w->st[k].c0)
            bytes = w->st[k].bytes > bytes ? w->st[k].bytes : bytes;
    dleg *legs;
    size_t nlegs;
    if ((rc = plan_legs(w, &legs, &nlegs)) != RASTER_OK)
        return rc;
    slot slots[2] = {{0}};
    int nslots = threads > 1 ? 2 : 1;
    rc = -1;
    for (int i = 0; i < nslots; i++)
        if (!(slots[i].buf = raster_malloc(bytes)))
            rc = raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                             w->v->name);
    if (rc == -1 && nslots == 2)
        rc = run_piped(w, legs, nlegs, slots);
    if (rc == -1) /* one thread asked for, or no thread to be had */
        rc = run_serial(w, legs, nlegs, &slots[0]);
    for (int i = 0; i < nslots; i++)
        raster_free(slots[i].buf);
    raster_free(legs);
    return rc;
}

static void dwrite_free(dwrite *w)
{
    if (w->shared >= 0)
        H5Dclose(w->shared);
    for (size_t k = 0; k < w->nst && w->shared < 0; k++)
        if (w->st[k].did >= 0)
            H5Dclose(w->st[k].did);
    raster_free(w->st);
    raster_free(w->cks);
}

/* The steps of direct_write, on the caller's sorted pieces w->p. */
static int plan_and_write(dwrite *w, int threads)
{
    size_t usable = 0;
    int rc = open_stores(w, w->p, w->np, &usable);
    if (rc || (usable == 0 && !w->tiled))
        return rc;
    if ((rc = find_whole(w)) != RASTER_OK)
        return rc;
    /* format 5: the dataset opened only for a write with whole tiles */
    if (w->tiled && w->nck > 0)
        open_tiled(w);
    return w->nck > 0 ? write_whole(w, threads) : RASTER_OK;
}

int direct_write(raster_var *v, piece *pieces, size_t *npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, const void *buf,
                 size_t plane_cells, int threads)
{
    int no = var_nouter(v), tiled = var_tiled(v);
    if (!v->file->writable || v->file->par || !v->file->path || no == 0)
        return RASTER_OK;
    for (int i = 0; ostride && i < no; i++)
        if (ostride[i] != 1)
            return RASTER_OK;
    /* format 5: whole tiles go direct whatever their size, but only from
     * a box that starts on the variable's outer chunks (its tiles'
     * numbers from definition) */
    for (int i = 0; tiled && i < no; i++)
        if (!v->stile || v->chunk[i] == 0 || ostart[i] % v->chunk[i] != 0)
            return RASTER_OK;
    /* a box smaller than the smallest chunk written directly covers none:
     * small writes skip opening and probing their stores (a third of
     * their cost before) */
    size_t bytes = plane_cells * v->elem;
    for (int i = 0; i < no && bytes < DIRECT_MIN_BYTES; i++)
        if (raster_mul_overflows(bytes, ocount[i], &bytes))
            bytes = DIRECT_MIN_BYTES;
    if (bytes < DIRECT_MIN_BYTES && !tiled)
        return RASTER_OK;
    dwrite w = {.v = v, .tiled = tiled, .shared = -1, .ostart = ostart,
                .ocount = ocount, .buf = buf, .plane_cells = plane_cells,
                .p = pieces, .np = *npieces};
    for (int i = no - 1; i >= 0; i--)
        w.pmult[i] = i == no - 1 ? 1 : w.pmult[i + 1] * ocount[i + 1];
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are handled here */
    /* no HDF5 id on the file: everything through netCDF */
    int rc = fileio_h5(v->file) < 0 ? RASTER_OK
                                           : plan_and_write(&w, threads);
    if (rc == RASTER_OK && w.nck > 0)
        *npieces = leave_rest(&w);
    dwrite_free(&w);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return rc;
}

#endif
