/*
 * writeback.c - small writes straight to HDF5, and those held back.
 *
 * A small write into records its stores hold already skips netCDF: one
 * H5Dwrite per run of adjacent pieces, on dataset ids kept open per
 * store. A small write of one plane is held back instead and written
 * with the others as merged blocks (chunkio_flush) before any other
 * transfer of the variable, at raster_flush and at raster_close. Format 5
 * writes its stores' pieces as boxes of the variable's tiles (below).
 */
#include "writeback.h"

#include <hdf5.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "state.h"

/* Small writes (issue 25): a write of at most SMALL_BYTES, into records
 * that every store it touches holds already, goes to HDF5 straight, one
 * H5Dwrite per run of adjacent pieces (no read first for the holes
 * between them), on dataset ids kept open per store. Through netCDF each span
 * cost a transfer property list, a scan of every dataset on the record
 * dimension for its length, and where pieces left holes a read: about ten
 * times a plain netCDF call of the same size. A write that extends a store
 * stays with netCDF, which then knows the record count (as direct.c's).
 * HDF5 shares one dataset, and its chunk cache, between netCDF's handle
 * and raster's, so either sees the other's writes. */
#define SMALL_BYTES ((size_t)64 << 10)
#define SMALL_PIECES 512

static atomic_size_t small_writes;

size_t chunkio_small_writes(void) { return atomic_load(&small_writes); }

/* Small writes of one plane are held back, up to PEND_BYTES of values per
 * variable, and written together (chunkio_flush): sorted by store, record
 * and cell, pieces that follow each other in a store - the rest of a row
 * cut in two by the writer, the next row of a tile - become one block, so
 * that a writer's many short rows cost a few H5Dwrite calls per tile band
 * instead of several per call. Any other transfer of the variable, and
 * raster_flush (nc_sync under the shim) and raster_close, write them
 * first, in the order given. */
#define PEND_BYTES ((size_t)4 << 20)

/* 1 when v's planes can be numbered by one index: only its first outer
 * dimension may be unlimited (the others' lengths are fixed). */
static int holdable(raster_var *v)
{
    size_t shape[RASTER_MAX_DIMS];
    if (var_write_shape(v, shape) != RASTER_OK)
        return 0;
    for (int d = 1; d < var_nouter(v); d++)
        if (var_write_unlimited(v, d))
            return 0;
    return 1;
}

int chunkio_holdable(raster_var *v) { return holdable(v); }

static uint64_t plane_index(const raster_var *v, const size_t *ostart)
{
    uint64_t k = 0;
    for (int d = 0; d < var_nouter(v); d++)
        k = k * (d == 0 ? 1 : v->wshape[d]) + ostart[d];
    return k;
}

static void plane_start(const raster_var *v, uint64_t k, hsize_t *start)
{
    for (int d = var_nouter(v) - 1; d > 0; d--) {
        start[d] = k % v->wshape[d];
        k /= v->wshape[d];
    }
    if (var_nouter(v) > 0)
        start[0] = k;
}

static int pend_add(raster_var *v, const piece *p, size_t n,
                    const size_t *ostart, const unsigned char *buf)
{
    lazy_lock(v->file);
    int rc = RASTER_OK;
    if (!v->pend && !(v->pend = raster_calloc(1, sizeof *v->pend)))
        rc = raster_fail(RASTER_ENOMEM, "out of memory writing %s", v->name);
    struct pend_write *q = v->pend;
    size_t cells = 0;
    for (size_t k = 0; k < n; k++)
        cells += p[k].len;
    if (rc == RASTER_OK && (rc = raster_grow(&q->e, &q->cap, q->n + n,
                                             sizeof *q->e)) == RASTER_OK)
        rc = raster_grow(&q->vals, &q->vcap, (q->cells + cells) * v->elem, 1);
    if (rc == RASTER_OK) {
        uint64_t plane = plane_index(v, ostart);
        for (size_t k = 0; k < n; k++) {
            q->e[q->n] = (pent){plane, p[k].soff,  q->cells,
                                q->n,  p[k].store, p[k].len};
            memcpy(q->vals + q->cells * v->elem, buf + p[k].uoff * v->elem,
                   p[k].len * v->elem);
            q->cells += p[k].len;
            q->n++;
        }
        if (q->cells * v->elem >= PEND_BYTES)
            rc = chunkio_flush(v);
    }
    lazy_unlock(v->file);
    return rc;
}

static int cmp_pent(const void *a, const void *b)
{
    const pent *x = a, *y = b;
    if (x->store != y->store)
        return (x->store > y->store) - (x->store < y->store);
    if (x->outer != y->outer)
        return (x->outer > y->outer) - (x->outer < y->outer);
    if (x->soff != y->soff)
        return (x->soff > y->soff) - (x->soff < y->soff);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_seq(const void *a, const void *b)
{
    const pent *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

int chunkio_hold(raster_var *v, const piece *p, size_t n, const size_t *ostart,
                 const void *buf)
{
    return n ? pend_add(v, p, n, ostart, buf) : RASTER_OK;
}

/* ---- format 5: pieces as boxes of the variable's tiles ----------------- */

/* Format 5 (tilestore.h): the stores are lists of the variable's tiles and
 * its own dataset holds the values, so a piece of a store is written there
 * as the part of its tile it covers: store cell lo lies in tile k = lo / tc
 * of store s (tile number v->stile[v->stile_first[s] + k], row-major over
 * the tile grid), at the tile's row lo % tc / tw and column lo % tw (tc =
 * th * tw cells a tile). A tile's pieces go in one H5Dwrite: its rows'
 * runs merged into rectangles (runs that follow on in a row, and a run
 * under one of the same columns), those selected as one union in the file
 * and, at the same places, in a staging box of the rows and columns they
 * span. HDF5 then maps the memory selection to the chunk by its shape,
 * where a selection of another shape (a flat buffer) is mapped cell by
 * cell. Cells past the grid's edge of an edge tile are never written. */

/* Largest staging box of one H5Dwrite: beyond it (many planes, blocks far
 * apart in a tile) each rectangle is written on its own. */
#define TILE_STAGE_BYTES ((size_t)4 << 20)

/* Tile cells [a, a + len) (rows of tw), their values from src on, the
 * next plane's pstep bytes further (twrite). */
typedef struct tpart {
    uint64_t a;
    size_t len;
    const unsigned char *src;
} tpart;

/* Tile row `row`, columns [c0, c1), in the grid; plane 0's values at src. */
typedef struct tseg {
    size_t row, c0, c1;
    const unsigned char *src;
} tseg;

/* Rows [r0, r1) and columns [c0, c1) of a tile. */
typedef struct tblock {
    size_t r0, r1, c0, c1;
} tblock;

/* One format-5 write: the variable's dataset, its dataspace, the outer box
 * (every plane of it written alike) and scratch kept from tile to tile. */
typedef struct twrite {
    raster_var *v;
    hid_t did, fspace, mtype;
    hsize_t ostart[RASTER_MAX_DIMS], ocount[RASTER_MAX_DIMS];
    size_t planes, pstep;
    tseg *seg;
    tblock *blk;
    size_t *open; /* 2 * segcap: the rectangles reaching the row above */
    size_t nseg, segcap, nblk, blkcap, opencap;
    unsigned char *stage;
    size_t stagecap;
} twrite;

/* The variable's dataset, every store's in format 5, kept open in slot 0
 * of store_did (closed with the stores' by fileio_close_stores), or -1. */
static hid_t tiled_dataset(raster_var *v)
{
    if (!v->store_did) {
        int64_t *d = raster_reallocarray(NULL, v->nregions + 1, sizeof *d);
        if (!d)
            return -1;
        for (size_t s = 0; s <= v->nregions; s++)
            d[s] = -1;
        v->store_did = d;
    }
    if (v->store_did[0] < 0)
        v->store_did[0] = fileio_placeholder(v);
    return (hid_t)v->store_did[0];
}

static int twrite_failed(const raster_var *v)
{
    return raster_fail_nc(RASTER_ENETCDF, NC_EHDFERR,
                          "writing %s: HDF5 could not write the variable",
                          v->name);
}

/* Opens w for v's dataset (its id kept, its dataspace w's own). */
static int twrite_begin(twrite *w, raster_var *v)
{
    memset(w, 0, sizeof *w);
    w->v = v;
    w->did = tiled_dataset(v);
    w->mtype = (hid_t)fileio_mem_type(v->xtype);
    w->fspace = w->did >= 0 ? H5Dget_space(w->did) : -1;
    w->planes = 1;
    return w->fspace >= 0 && w->mtype >= 0 ? RASTER_OK : twrite_failed(v);
}

static void twrite_end(twrite *w)
{
    if (w->fspace >= 0)
        H5Sclose(w->fspace);
    raster_free(w->seg);
    raster_free(w->blk);
    raster_free(w->open);
    raster_free(w->stage);
}

/* Cuts parts[0..n) of a tile whose grid part is h rows of wc columns into
 * runs of its rows inside the grid, w->seg. The parts come ascending and
 * apart (sorted pieces of one hyperslab, or held-back ones that do not
 * overlap), so the runs do too: checked, since the union selections count
 * on it. */
static int tile_segs(twrite *w, const tpart *parts, size_t n, size_t tw,
                     size_t h, size_t wc)
{
    size_t elem = w->v->elem;
    w->nseg = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = parts[i].a, end = a + parts[i].len;
        for (uint64_t r = a / tw; r * tw < end && r < h; r++) {
            size_t c0 = (size_t)(r * tw > a ? 0 : a - r * tw);
            size_t c1 = (size_t)(end - r * tw < tw ? end - r * tw : tw);
            c1 = c1 < wc ? c1 : wc;
            if (c0 >= c1) /* past the grid's edge only */
                continue;
            const tseg *q = w->nseg ? &w->seg[w->nseg - 1] : NULL;
            if (q && (q->row > r || (q->row == r && q->c1 > c0)))
                return raster_fail(RASTER_EINVAL, "%s: small writes of a "
                                   "tile out of order", w->v->name);
            int rc = raster_grow(&w->seg, &w->segcap, w->nseg + 1,
                                 sizeof *w->seg);
            if (rc)
                return rc;
            w->seg[w->nseg++] =
                (tseg){(size_t)r, c0, c1,
                       parts[i].src + (r * tw + c0 - a) * elem};
        }
    }
    return RASTER_OK;
}

/* The rectangles w->blk that cover the runs exactly: a row's runs that
 * follow on merged, and one below a rectangle of the same columns in the
 * row above added to it (whole rows of a tile are one rectangle). */
static int tile_blocks(twrite *w)
{
    int rc = raster_grow(&w->blk, &w->blkcap, w->nseg, sizeof *w->blk);
    if (rc == RASTER_OK)
        rc = raster_grow(&w->open, &w->opencap, 2 * w->nseg,
                         sizeof *w->open);
    if (rc)
        return rc;
    size_t *open = w->open, *next = w->open + w->nseg, nopen = 0;
    size_t prow = 0;
    w->nblk = 0;
    for (size_t i = 0; i < w->nseg;) {
        size_t row = w->seg[i].row, j = 0, nnext = 0;
        int above = nopen > 0 && prow + 1 == row;
        while (i < w->nseg && w->seg[i].row == row) {
            size_t c0 = w->seg[i].c0, c1 = w->seg[i].c1;
            for (i++; i < w->nseg && w->seg[i].row == row &&
                      w->seg[i].c0 == c1;
                 i++)
                c1 = w->seg[i].c1;
            while (above && j < nopen && w->blk[open[j]].c0 < c0)
                j++;
            tblock *b = above && j < nopen ? &w->blk[open[j]] : NULL;
            if (b && b->c0 == c0 && b->c1 == c1) {
                b->r1 = row + 1;
                next[nnext++] = open[j++];
            } else {
                w->blk[w->nblk] = (tblock){row, row + 1, c0, c1};
                next[nnext++] = w->nblk++;
            }
        }
        size_t *t = open; /* this row's rectangles are the next's above */
        open = next;
        next = t;
        nopen = nnext;
        prow = row;
    }
    return RASTER_OK;
}

/* Writes rectangles blk[b0, b1) of the tile at grid row y0, column x0,
 * every plane of the box: their runs gathered into a staging box of the
 * rows and columns they span, then one H5Dwrite with the rectangles
 * selected alike in the file and in that box. */
static int tile_put(twrite *w, size_t y0, size_t x0, size_t b0, size_t b1)
{
    raster_var *v = w->v;
    int no = var_nouter(v), nd = v->ndims;
    size_t elem = v->elem;
    size_t r0 = w->blk[b0].r0, r1 = w->blk[b0].r1;
    size_t c0 = w->blk[b0].c0, c1 = w->blk[b0].c1;
    for (size_t b = b0 + 1; b < b1; b++) {
        const tblock *k = &w->blk[b];
        r0 = k->r0 < r0 ? k->r0 : r0;
        r1 = k->r1 > r1 ? k->r1 : r1;
        c0 = k->c0 < c0 ? k->c0 : c0;
        c1 = k->c1 > c1 ? k->c1 : c1;
    }
    size_t bh = r1 - r0, bw = c1 - c0;
    int rc = raster_grow(&w->stage, &w->stagecap, w->planes * bh * bw * elem,
                         1);
    if (rc)
        return rc;
    /* a run lies in one rectangle: those inside the box are the ones */
    for (size_t i = 0; i < w->nseg; i++) {
        const tseg *q = &w->seg[i];
        if (q->row < r0 || q->row >= r1 || q->c0 < c0 || q->c1 > c1)
            continue;
        for (size_t pl = 0; pl < w->planes; pl++)
            memcpy(w->stage + ((pl * bh + q->row - r0) * bw + q->c0 - c0) *
                                  elem,
                   q->src + pl * w->pstep, (q->c1 - q->c0) * elem);
    }
    hsize_t fstart[RASTER_MAX_DIMS], mstart[RASTER_MAX_DIMS],
        one[RASTER_MAX_DIMS], block[RASTER_MAX_DIMS], mdims[RASTER_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        one[d] = 1;
        fstart[d] = d < no ? w->ostart[d] : 0;
        mstart[d] = 0;
        block[d] = mdims[d] = d < no ? w->ocount[d] : 0;
    }
    mdims[no] = bh;
    mdims[no + 1] = bw;
    hid_t ms = H5Screate_simple(nd, mdims, NULL);
    int ok = ms >= 0;
    for (size_t b = b0; b < b1 && ok; b++) {
        const tblock *k = &w->blk[b];
        H5S_seloper_t op = b == b0 ? H5S_SELECT_SET : H5S_SELECT_OR;
        fstart[no] = y0 + k->r0;
        fstart[no + 1] = x0 + k->c0;
        mstart[no] = k->r0 - r0;
        mstart[no + 1] = k->c0 - c0;
        block[no] = k->r1 - k->r0;
        block[no + 1] = k->c1 - k->c0;
        ok = H5Sselect_hyperslab(w->fspace, op, fstart, NULL, one, block) >=
                 0 &&
             (b1 - b0 == 1 || /* one rectangle: the whole box */
              H5Sselect_hyperslab(ms, op, mstart, NULL, one, block) >= 0);
    }
    ok = ok && H5Dwrite(w->did, w->mtype, ms, w->fspace, H5P_DEFAULT,
                        w->stage) >= 0;
    if (ms >= 0)
        H5Sclose(ms);
    return ok ? RASTER_OK : twrite_failed(v);
}

/* Writes parts[0..n) of tile k of store s, every plane of w's box. */
static int tile_write(twrite *w, uint32_t s, uint64_t k, const tpart *parts,
                      size_t n)
{
    raster_var *v = w->v;
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t ntx = (v->nx + tw - 1) / tw;
    if (s > v->nregions || k >= v->stile_first[s + 1] - v->stile_first[s])
        return raster_fail(RASTER_EINVAL, "%s: a small write past the tiles "
                           "of store %u", v->name, (unsigned)s);
    for (size_t i = 0; i < n; i++)
        if (parts[i].a + parts[i].len > th * tw)
            return raster_fail(RASTER_EINVAL, "%s: a small write across "
                               "tiles of store %u", v->name, (unsigned)s);
    size_t t = v->stile[v->stile_first[s] + (size_t)k];
    size_t y0 = t / ntx * th, x0 = t % ntx * tw;
    size_t h = v->ny - y0 < th ? v->ny - y0 : th;
    size_t wc = v->nx - x0 < tw ? v->nx - x0 : tw;
    int rc = tile_segs(w, parts, n, tw, h, wc);
    if (rc || w->nseg == 0 || (rc = tile_blocks(w)) != RASTER_OK)
        return rc;
    size_t r0 = w->seg[0].row, r1 = w->seg[w->nseg - 1].row + 1, c0 = tw,
           c1 = 0;
    for (size_t b = 0; b < w->nblk; b++) {
        c0 = w->blk[b].c0 < c0 ? w->blk[b].c0 : c0;
        c1 = w->blk[b].c1 > c1 ? w->blk[b].c1 : c1;
    }
    if (w->nblk == 1 ||
        w->planes * (r1 - r0) * (c1 - c0) * v->elem <= TILE_STAGE_BYTES)
        return tile_put(w, y0, x0, 0, w->nblk);
    for (size_t b = 0; b < w->nblk && rc == RASTER_OK; b++)
        rc = tile_put(w, y0, x0, b, b + 1);
    return rc;
}

/* Format 5's flush: held-back entries e[0..n) (sorted by store, plane and
 * cell), those of one tile and plane in one write when merge is set, else
 * one by one. */
static int pend_write_tiles(raster_var *v, const pent *e, size_t n,
                            const unsigned char *vals, int merge)
{
    twrite w;
    int rc = twrite_begin(&w, v), no = var_nouter(v);
    size_t tc = v->chunk[v->ndims - 2] * v->chunk[v->ndims - 1], pcap = 0;
    tpart *parts = NULL;
    for (int d = 0; d < no; d++)
        w.ocount[d] = 1;
    for (size_t k = 0; k < n && rc == RASTER_OK;) {
        uint64_t tile = e[k].soff / tc;
        size_t j = k + 1;
        while (merge && j < n && e[j].store == e[k].store &&
               e[j].outer == e[k].outer && e[j].soff / tc == tile)
            j++;
        if ((rc = raster_grow(&parts, &pcap, j - k, sizeof *parts)))
            break;
        for (size_t i = k; i < j; i++)
            parts[i - k] = (tpart){e[i].soff - tile * tc, e[i].len,
                                   vals + e[i].voff * v->elem};
        plane_start(v, e[k].outer, w.ostart);
        rc = tile_write(&w, e[k].store, tile, parts, j - k);
        k = j;
    }
    raster_free(parts);
    twrite_end(&w);
    return rc;
}

/* Writes held-back entries e[0..n) as blocks of cells adjacent in their
 * store (none overlapping: merge set), or one by one. */
static int pend_write_blocks(raster_var *v, const pent *e, size_t n,
                             const unsigned char *vals, int merge)
{
    int no = var_nouter(v), rc = RASTER_OK;
    hid_t mtype = (hid_t)fileio_mem_type(v->xtype);
    size_t bcap = 0;
    unsigned char *tmp = NULL;
    for (size_t k = 0; k < n && rc == RASTER_OK;) {
        size_t j = k + 1, cells = e[k].len;
        while (merge && j < n && e[j].store == e[k].store &&
               e[j].outer == e[k].outer &&
               e[j].soff == e[j - 1].soff + e[j - 1].len)
            cells += e[j++].len;
        if ((rc = raster_grow(&tmp, &bcap, cells * v->elem, 1)) != RASTER_OK)
            break;
        for (size_t i = k, m = 0; i < j; m += e[i].len, i++)
            memcpy(tmp + m * v->elem, vals + e[i].voff * v->elem,
                   e[i].len * v->elem);
        hsize_t start[RASTER_MAX_DIMS + 1], count[RASTER_MAX_DIMS + 1],
            block[RASTER_MAX_DIMS + 1], hm = cells;
        plane_start(v, e[k].outer, start);
        for (int d = 0; d <= no; d++)
            count[d] = block[d] = 1;
        start[no] = e[k].soff;
        block[no] = cells;
        if (v->file->par) {
            /* a parallel file's (parwrite.c holds them back): through
             * netCDF, independently (a store's access is independent
             * between parwrite.c's collective sequences) */
            size_t ns[RASTER_MAX_DIMS + 1], nn[RASTER_MAX_DIMS + 1];
            for (int d = 0; d <= no; d++) {
                ns[d] = (size_t)start[d];
                nn[d] = (size_t)block[d];
            }
            int st = nc_put_vara(v->store_grp[e[k].store],
                                 v->store_var[e[k].store], ns, nn, tmp);
            if (st != NC_NOERR)
                rc = raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s",
                                    v->name, nc_strerror(st));
            k = j;
            continue;
        }
        hid_t did = (hid_t)fileio_store_kept(v, e[k].store);
        hid_t fs = did >= 0 ? H5Dget_space(did) : -1;
        hid_t ms = H5Screate_simple(1, &hm, NULL);
        if (mtype < 0 || fs < 0 || ms < 0 ||
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count,
                                block) < 0 ||
            H5Dwrite(did, mtype, ms, fs, H5P_DEFAULT, tmp) < 0)
            rc = raster_fail_nc(RASTER_ENETCDF, NC_EHDFERR,
                                "writing %s: HDF5 could not write a store",
                                v->name);
        if (fs >= 0)
            H5Sclose(fs);
        if (ms >= 0)
            H5Sclose(ms);
        k = j;
    }
    raster_free(tmp);
    return rc;
}

int chunkio_flush(raster_var *v)
{
    if (!v->pend)
        return RASTER_OK;
    lazy_lock(v->file);
    struct pend_write *q = v->pend;
    int rc = RASTER_OK;
    if (q && q->n > 0) {
        qsort(q->e, q->n, sizeof *q->e, cmp_pent);
        int overlap = 0; /* cells written twice: in the order given */
        for (size_t k = 1; k < q->n && !overlap; k++)
            overlap = q->e[k].store == q->e[k - 1].store &&
                      q->e[k].outer == q->e[k - 1].outer &&
                      q->e[k].soff < q->e[k - 1].soff + q->e[k - 1].len;
        if (overlap)
            qsort(q->e, q->n, sizeof *q->e, cmp_seq);
        H5E_auto2_t efunc;
        void *edata;
        H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        rc = var_tiled(v) && !v->file->par
                 ? pend_write_tiles(v, q->e, q->n, q->vals, !overlap)
                 : pend_write_blocks(v, q->e, q->n, q->vals, !overlap);
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    }
    /* the buffers go once written: a writer that stops writing small
     * pieces keeps no 4 MiB per variable */
    var_pend_free(v);
    lazy_unlock(v->file);
    return rc;
}

/* writeback_small's way out, whether it wrote or held back: the stores'
 * dataspaces closed, HDF5's error printing as it was, the buffers freed. */
static void small_done(hid_t *space, size_t nst, unsigned char *tmp,
                       H5E_auto2_t efunc, void *edata)
{
    for (size_t i = 0; i < nst; i++)
        if (space[i] >= 0)
            H5Sclose(space[i]);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    raster_free(space);
    raster_free(tmp);
}

/* A box of one plane is held back (pend_add): *done = 1 once it is. */
static int hold_small(raster_var *v, const piece *p, size_t n,
                      const size_t *ostart, const unsigned char *buf,
                      int *done)
{
    int rc = pend_add(v, p, n, ostart, buf);
    if (rc == RASTER_OK)
        atomic_fetch_add(&small_writes, 1);
    *done = rc == RASTER_OK;
    return rc;
}

/* 1 when netCDF has written v's dataset in this handle (format 5: every
 * store is that one dataset; see var.h's store_ncw). */
static int tiled_written(const raster_var *v)
{
    for (size_t s = 0; v->store_ncw && s <= v->nregions; s++)
        if (v->store_ncw[s])
            return 1;
    return 0;
}

/* writeback_small in format 5: the pieces (each in one tile: spans.c cuts
 * them there) written to the variable's dataset as parts of their tiles,
 * when netCDF has written it once and its records hold the box; a box of
 * one plane held back. */
static int tiled_small(raster_var *v, const piece *p, size_t n,
                       const size_t *ostart, const size_t *ocount,
                       const unsigned char *buf, size_t plane_cells,
                       size_t planes, int *done)
{
    int no = var_nouter(v), nd = v->ndims;
    size_t tc = v->chunk[nd - 2] * v->chunk[nd - 1];
    if (!v->stile || tc == 0 || !tiled_written(v))
        return RASTER_OK;
    for (size_t k = 0; k < n; k++)
        if (p[k].store > v->nregions || p[k].len == 0 ||
            p[k].soff / tc != (p[k].soff + p[k].len - 1) / tc ||
            p[k].soff / tc >= v->stile_first[p[k].store + 1] -
                                  v->stile_first[p[k].store])
            return RASTER_OK;
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are handled here */
    /* records beyond the dataset's extent stay with netCDF, which then
     * knows their count (as direct.c's) */
    hid_t did = tiled_dataset(v);
    hid_t space = did >= 0 ? H5Dget_space(did) : -1;
    hsize_t dims[RASTER_MAX_DIMS];
    int fits = space >= 0 && H5Sget_simple_extent_ndims(space) == nd &&
               H5Sget_simple_extent_dims(space, dims, NULL) == nd &&
               dims[no] == v->ny && dims[no + 1] == v->nx;
    for (int d = 0; d < no && fits; d++)
        fits = ostart[d] + ocount[d] <= dims[d];
    if (space >= 0)
        H5Sclose(space);
    int rc = RASTER_OK;
    if (fits && planes == 1 && holdable(v)) {
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
        return hold_small(v, p, n, ostart, buf, done);
    }
    /* written now: after what is held back */
    if (fits && v->pend && (rc = chunkio_flush(v)) != RASTER_OK)
        fits = 0;
    twrite w = {.fspace = -1};
    tpart *parts = NULL;
    size_t pcap = 0;
    if (fits && (rc = twrite_begin(&w, v)) == RASTER_OK) {
        for (int d = 0; d < no; d++) {
            w.ostart[d] = ostart[d];
            w.ocount[d] = ocount[d];
        }
        w.planes = planes;
        w.pstep = plane_cells * v->elem;
        /* pieces sorted by store and cell: a tile's follow on */
        for (size_t k = 0; k < n && rc == RASTER_OK;) {
            uint64_t tile = p[k].soff / tc;
            size_t j = k + 1;
            while (j < n && p[j].store == p[k].store &&
                   p[j].soff / tc == tile)
                j++;
            if ((rc = raster_grow(&parts, &pcap, j - k, sizeof *parts)))
                break;
            for (size_t i = k; i < j; i++)
                parts[i - k] = (tpart){p[i].soff - tile * tc, p[i].len,
                                       buf + p[i].uoff * v->elem};
            rc = tile_write(&w, p[k].store, tile, parts, j - k);
            k = j;
        }
    }
    twrite_end(&w);
    raster_free(parts);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    if (fits && rc == RASTER_OK) {
        atomic_fetch_add(&small_writes, 1);
        *done = 1;
    }
    return rc;
}

/* *done = 1 when written here; 0 (nothing written) to go the usual way. */
int writeback_small(raster_var *v, const piece *p, size_t n,
                    const size_t *ostart, const size_t *ocount,
                    const ptrdiff_t *ostride, const unsigned char *buf,
                    size_t plane_cells, int *done)
{
    int no = var_nouter(v), rc = RASTER_OK;
    size_t planes = 1, cells = 0, bytes;
    *done = 0;
    if (v->file->par || v->file->lean || n == 0 || n > SMALL_PIECES)
        return RASTER_OK;
    for (int i = 0; i < no; i++) {
        if (ostride && ostride[i] != 1)
            return RASTER_OK;
        planes *= ocount[i]; /* a buffer this size exists */
    }
    for (size_t k = 0; k < n; k++)
        cells += p[k].len;
    if (raster_mul_overflows(cells * v->elem, planes, &bytes) ||
        bytes > SMALL_BYTES || bytes == 0)
        return RASTER_OK;
    hid_t mtype = (hid_t)fileio_mem_type(v->xtype);
    if (mtype < 0 || fileio_h5(v->file) < 0)
        return RASTER_OK;
    if (var_tiled(v))
        return tiled_small(v, p, n, ostart, ocount, buf, plane_cells, planes,
                           done);
    size_t nst = 0;
    for (size_t k = 0; k < n; k++)
        nst += k == 0 || p[k].store != p[k - 1].store;
    hid_t *space = raster_reallocarray(NULL, nst, sizeof *space);
    unsigned char *tmp = raster_malloc(bytes);
    if (!space || !tmp) {
        raster_free(space);
        raster_free(tmp);
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s", v->name);
    }
    for (size_t i = 0; i < nst; i++)
        space[i] = -1;
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are handled here */
    /* first every store's dataset, holding the box's records already */
    int fits = 1;
    for (size_t a = 0, i = 0; a < n && fits; i++) {
        size_t b = a + 1;
        while (b < n && p[b].store == p[a].store)
            b++;
        /* netCDF must have written the store once (see var.h) */
        hid_t did = v->store_ncw && v->store_ncw[p[a].store]
                        ? (hid_t)fileio_store_kept(v, p[a].store)
                        : -1;
        hsize_t dims[RASTER_MAX_DIMS + 1];
        space[i] = did >= 0 ? H5Dget_space(did) : -1;
        fits = space[i] >= 0 &&
               H5Sget_simple_extent_ndims(space[i]) == no + 1 &&
               H5Sget_simple_extent_dims(space[i], dims, NULL) == no + 1 &&
               dims[no] == v->store_cells[p[a].store];
        for (int d = 0; d < no && fits; d++)
            fits = ostart[d] + ocount[d] <= dims[d];
        a = b;
    }
    /* a box of one plane is held back (see pend_add), the rest written */
    if (fits && planes == 1 && holdable(v)) {
        small_done(space, nst, tmp, efunc, edata);
        return hold_small(v, p, n, ostart, buf, done);
    }
    /* written now: after what is held back */
    if (fits && v->pend && (rc = chunkio_flush(v)) != RASTER_OK)
        fits = 0;
    /* then one H5Dwrite per store: its pieces in the order HDF5 walks the
     * selection (outer indices, then cells ascending: spans_sort_pieces) */
    for (size_t a = 0, i = 0; a < n && fits && rc == RASTER_OK; i++) {
        size_t b = a + 1;
        while (b < n && p[b].store == p[a].store)
            b++;
        hsize_t start[RASTER_MAX_DIMS + 1], count[RASTER_MAX_DIMS + 1],
            block[RASTER_MAX_DIMS + 1];
        for (int d = 0; d < no; d++) {
            start[d] = ostart[d];
            count[d] = 1;
            block[d] = ocount[d];
        }
        count[no] = 1;
        /* the store's pieces as blocks: pieces adjacent in the store
         * (cut at a chunk edge, or runs of two regions of a mixed tile)
         * one block each; HDF5 maps a selection of several blocks to
         * chunks cell by cell, of one block at once, so the blocks are
         * written one by one */
        for (size_t k = a; k < b && rc == RASTER_OK;) {
            size_t e = k + 1;
            while (e < b && p[e].soff == p[e - 1].soff + p[e - 1].len)
                e++;
            size_t m = 0;
            for (size_t pl = 0; pl < planes; pl++)
                for (size_t q = k; q < e; q++) {
                    memcpy(tmp + m * v->elem,
                           buf + (pl * plane_cells + p[q].uoff) * v->elem,
                           p[q].len * v->elem);
                    m += p[q].len;
                }
            start[no] = p[k].soff;
            block[no] = (hsize_t)(p[e - 1].soff + p[e - 1].len - p[k].soff);
            hsize_t hm = m;
            hid_t ms = H5Screate_simple(1, &hm, NULL);
            if (ms < 0 ||
                H5Sselect_hyperslab(space[i], H5S_SELECT_SET, start, NULL,
                                    count, block) < 0 ||
                H5Dwrite((hid_t)v->store_did[p[a].store], mtype, ms, space[i],
                         H5P_DEFAULT, tmp) < 0)
                rc = raster_fail_nc(RASTER_ENETCDF, NC_EHDFERR,
                                    "writing %s: HDF5 could not write a "
                                    "store",
                                    v->name);
            if (ms >= 0)
                H5Sclose(ms);
            k = e;
        }
        a = b;
    }
    small_done(space, nst, tmp, efunc, edata);
    if (fits && rc == RASTER_OK) {
        atomic_fetch_add(&small_writes, 1);
        *done = 1;
    }
    return rc;
}
