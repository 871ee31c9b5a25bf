/*
 * writeback.c - small writes straight to HDF5, and those held back.
 *
 * A small write into records its stores hold already skips netCDF: one
 * H5Dwrite per run of adjacent pieces, on dataset ids kept open per
 * store. A small write of one plane is held back instead and written
 * with the others as merged blocks (chunkio_flush) before any other
 * transfer of the variable, at raster_flush and at raster_close.
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
        rc = pend_write_blocks(v, q->e, q->n, q->vals, !overlap);
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

/* *done = 1 when written here; 0 (nothing written) to go the usual way. */
int writeback_small(raster_var *v, const piece *p, size_t n,
                    const size_t *ostart, const size_t *ocount,
                    const ptrdiff_t *ostride, const unsigned char *buf,
                    size_t plane_cells, int *done)
{
    int no = var_nouter(v), rc = RASTER_OK;
    size_t planes = 1, cells = 0, bytes;
    *done = 0;
    /* format 5: its stores are tiles of the variable (tilestore.h), which
     * the spans move */
    if (v->file->par || v->file->lean || v->format >= 5 || n == 0 ||
        n > SMALL_PIECES)
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
        rc = pend_add(v, p, n, ostart, buf);
        if (rc == RASTER_OK)
            atomic_fetch_add(&small_writes, 1);
        *done = rc == RASTER_OK;
        return rc;
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
