/*
 * chunkio.c - Chunk Data Handler: a transfer planned and handed to its
 * movers.
 *
 * chunkio_xfer prepares the stores a read touches (whether each can be
 * read without HDF5, and where: prepare_store), looks up the byte offsets
 * of the chunks it needs (lookup_chunks), plans its pieces into spans
 * (spans.c) or, for a large read of short pieces, windows (windows.c),
 * and moves them: deflated stores by inflate.c, large reads split among
 * threads by fanout.c, a read by windows from disk behind the load
 * (read_behind), the rest record by record (walk_box). Writes go first to
 * writeback.c (small ones), then whole store chunks to direct.c, the rest
 * through netCDF.
 */
#include "chunkio.h"

#include <hdf5.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "chunkmap.h"
#include "compress.h"
#include "direct.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "meta.h"
#include "prefetch.h"
#include "state.h"
#include "tilestore.h"

/* Upper bound on the scratch buffer of one netCDF call. */
#define SCRATCH_BYTES ((size_t)32 << 20)

/* Filtered stores inflated here (chunkio_set_inflate) */
static atomic_int inflate_on = 1;
static atomic_size_t strided_reads;
static atomic_size_t staged_threaded;
static atomic_size_t window_reads;
static atomic_size_t behind_reads;

atomic_int chunkio_timing;
_Thread_local double chunkio_plan_end;

double chunkio_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void chunkio_set_inflate(int on) { atomic_store(&inflate_on, on); }

size_t chunkio_strided_reads(void) { return atomic_load(&strided_reads); }

size_t chunkio_staged_threaded(void) { return atomic_load(&staged_threaded); }

size_t chunkio_window_reads(void) { return atomic_load(&window_reads); }

size_t chunkio_behind_reads(void) { return atomic_load(&behind_reads); }

/* ---- byte addresses of contiguous stores (read-only files) ------------ */

/* A chunked store whose chunks hold whole rows of cells: sets up its
 * table of chunk byte offsets, every entry CHUNK_UNKNOWN until a read first
 * needs it (lookup_chunks). Anything unexpected leaves the store to
 * netCDF. */
static int prepare_chunks(raster_var *v, size_t s, hid_t did, hid_t dcpl)
{
    int no = var_nouter(v);
    hsize_t ck[RASTER_MAX_DIMS + 1], dims[RASTER_MAX_DIMS + 1];
    hid_t space = H5Dget_space(did);
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank != no + 1 || H5Pget_chunk(dcpl, rank, ck) != rank ||
        H5Sget_simple_extent_dims(space, dims, NULL) != rank ||
        ck[no] == 0 || dims[no] != v->store_cells[s]) {
        if (space >= 0)
            H5Sclose(space);
        return RASTER_OK;
    }
    store_addr *a = &v->addr[s];
    size_t total = 1;
    int sparse = 0;
    raster_free(a->ck);
    a->ck = raster_reallocarray(NULL, no > 0 ? 2 * (size_t)no : 1,
                                sizeof *a->ck);
    if (!a->ck) {
        H5Sclose(space);
        return raster_fail(RASTER_ENOMEM, "out of memory indexing the chunks "
                           "of %s", v->name);
    }
    a->nck = a->ck + no;
    for (int i = 0; i < no; i++) {
        a->ck[i] = (size_t)ck[i];
        a->nck[i] = ck[i] ? (size_t)((dims[i] + ck[i] - 1) / ck[i]) : 0;
        sparse |= ck[i] == 0 ||
                  raster_mul_overflows(total, a->nck[i], &total);
    }
    a->ckc = (size_t)ck[no];
    a->nckc = (size_t)((dims[no] + ck[no] - 1) / ck[no]);
    sparse |= raster_mul_overflows(total, a->nckc, &total);
    /* A store far longer than the chunks it holds (an unlimited dimension
     * stretched by a stray or hostile write): indexing every possible chunk
     * would take minutes and gigabytes; netCDF serves it instead. */
    hsize_t nalloc = 0;
    if (!sparse && total > 4096 &&
        (H5Dget_num_chunks(did, space, &nalloc) < 0 || /* not H5S_ALL */
         total / 4 > (size_t)nalloc))
        sparse = 1;
    if (sparse) {
        H5Sclose(space);
        return RASTER_OK;
    }
    a->addr = raster_reallocarray(NULL, total ? total : 1, sizeof *a->addr);
    if (a->inflate && a->addr) {
        raster_free(a->csize);
        a->csize = raster_calloc(total ? total : 1, sizeof *a->csize);
    }
    if (!a->addr || (a->inflate && !a->csize)) {
        H5Sclose(space);
        return raster_fail(RASTER_ENOMEM, "out of memory indexing the chunks "
                           "of %s", v->name);
    }
    for (size_t lin = 0; lin < total; lin++)
        a->addr[lin] = CHUNK_UNKNOWN;
    a->unknown = total;
    H5Sclose(space);
    a->ok = 1;
    a->chunked = 1;
    return RASTER_OK;
}

/* meta_store_region()'s check from store s's HDF5 dataset: the region id
 * recorded in it (files with checksums, integrity.h), or in its group. */
static int store_region_h5(raster_var *v, size_t s, hid_t did)
{
    if (v->format < 3 || s >= v->nregions || var_tiled(v))
        return RASTER_OK;
    if (!v->sums && !v->file->lean) /* through netCDF, open already */
        return meta_store_region(v, s, v->store_var[s]);
    char path[4096], grp[48];
    hid_t obj = did;
    if (!v->sums) { /* a lean file without checksums: the group's id */
        fileio_store_path(v, s, grp, sizeof grp);
        *strchr(grp, '/') = '\0';
        if ((size_t)snprintf(path, sizeof path, "%s/%s", v->h5path, grp) >=
            sizeof path)
            return raster_fail(RASTER_EFORMAT, "%s: path too long", v->name);
        obj = H5Gopen2((hid_t)fileio_h5(v->file), path, H5P_DEFAULT);
    }
    const char *name = v->sums ? SUMS_STORE_ATT : "region_id";
    int id = 0, ok = fileio_att(obj, name, NC_INT, &id, 1, NULL) == 0;
    if (obj >= 0 && obj != did)
        H5Gclose(obj);
    if (!ok || id != v->regions[s].id)
        return raster_fail(RASTER_EFORMAT, "%s: the group of region %d "
                           "holds the data of another region, or says "
                           "nothing of it", v->name, (int)v->regions[s].id);
    return RASTER_OK;
}

/* meta_check_store()'s checks from store s's HDF5 dataset: its type, its
 * cells, its outer extents within the variable's (a store of unlimited
 * records may be shorter). Through netCDF the first inquiry about a
 * variable reads all its metadata and attributes: for the fifteen stores
 * a thin band crosses, a twentieth of the read. */
static int check_store_h5(raster_var *v, size_t s, hid_t did)
{
    int no = var_nouter(v), ok = 0;
    size_t outer[RASTER_MAX_DIMS];
    hsize_t dims[RASTER_MAX_DIMS + 1];
    hid_t type = H5Dget_type(did), space = H5Dget_space(did);
    int holds = type >= 0 ? fileio_holds(type, v->xtype) : 0;
    if (holds < 0) {
        ok = -1;
    } else if (holds && space >= 0 &&
               H5Sget_simple_extent_ndims(space) == no + 1 &&
               H5Sget_simple_extent_dims(space, dims, NULL) == no + 1 &&
               dims[no] == v->store_cells[s] &&
               var_outer_shape(v, outer) == RASTER_OK) {
        ok = 1;
        for (int i = 0; i < no; i++)
            ok &= var_dim_unlimited(v, i) ? dims[i] <= outer[i]
                                          : dims[i] == outer[i];
    }
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (ok < 0)
        return meta_check_store(v, s);
    if (!ok)
        return raster_fail(RASTER_EFORMAT,
                           "%s: data of store %zu of the wrong type or shape",
                           v->name, s);
    return store_region_h5(v, s, did);
}

/* Records whether store s can be read with pread, and where. HDF5 errors
 * only disable the fast path; running out of memory is an error. The
 * store's type and shape are checked from HDF5 when it is opened here,
 * through netCDF otherwise and when netCDF will read it. */
static int prepare_store(raster_var *v, size_t s);

int chunkio_prepare_store(raster_var *v, size_t s)
{
    lazy_lock(v->file);
    int rc = prepare_store(v, s);
    lazy_unlock(v->file);
    return rc;
}

static int prepare_store(raster_var *v, size_t s)
{
    raster_file *f = v->file;
    store_addr *a = &v->addr[s];
    if (a->prepared)
        return RASTER_OK;
    int rc;
    if (f->lean && v->store_cells[s] == 0) { /* an empty store */
        a->prepared = 1;
        return RASTER_OK;
    }
    /* format 5: its tiles from the mesh when writable or when its tables
     * carry no checksums (checked whole against the mask: a moved row
     * would move values); else from the tables (tilestore.h) */
    if (var_tiled(v) && (f->writable || !v->sums) &&
        (rc = meta_ensure_layout(v)) != RASTER_OK)
        return rc;
    if (f->writable || f->fd < 0 || !f->path ||
        (!f->lean && v->store_var[s] < 0)) {
        if ((rc = meta_check_store(v, s)) == RASTER_OK)
            a->prepared = 1;
        return rc;
    }
    if (var_tiled(v)) { /* the stores are the variable's tiles */
        if ((rc = tilestore_prepare(v, s)) == RASTER_OK)
            a->prepared = 1;
        return rc;
    }
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* probes never print */
    hid_t did = (hid_t)fileio_store(v, s);
    rc = did >= 0 ? check_store_h5(v, s, did) : meta_check_store(v, s);
    if (did >= 0 && rc == RASTER_OK) {
        hid_t dcpl = H5Dget_create_plist(did);
        int plain = fileio_plain(did, dcpl, v->elem);
        /* chunks deflated (shuffled, checksummed): inflated here */
        a->inflate = !plain && atomic_load(&inflate_on) &&
                     fileio_filters(did, dcpl, v->elem, a->filt, &a->nfilt);
        H5D_layout_t layout = plain || a->inflate ? H5Pget_layout(dcpl)
                                                  : H5D_LAYOUT_ERROR;
        if (a->inflate && layout != H5D_CHUNKED)
            a->inflate = 0;
        if (!plain && !a->inflate) /* read through netCDF: its view
                                      checked too */
            rc = meta_check_store(v, s);
        if (rc != RASTER_OK) {
            /* refused: nothing read */
        } else if (!plain && !a->inflate) {
            /* netCDF's */
        } else if (layout == H5D_CONTIGUOUS) {
            haddr_t addr = H5Dget_offset(did);
            a->ok = 1;
            a->base = addr == HADDR_UNDEF ? -1 : (int64_t)addr;
        } else if (layout == H5D_CHUNKED) {
            rc = prepare_chunks(v, s, did, dcpl);
            if (rc == RASTER_OK && a->inflate && !a->ok) {
                a->inflate = 0; /* netCDF's after all */
                rc = meta_check_store(v, s);
            }
        }
        if (dcpl >= 0)
            H5Pclose(dcpl);
    }
    if (did >= 0)
        H5Dclose(did);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    if (rc == RASTER_OK)
        a->prepared = 1;
    return rc;
}

int chunkio_prepare(raster_var *v)
{
    int rc = RASTER_OK;
    for (size_t s = 0; s <= v->nregions && rc == RASTER_OK; s++)
        rc = chunkio_prepare_store(v, s);
    return rc;
}

/* A write through netCDF moves at most SCRATCH_BYTES per call, so a wide
 * span gets few records of the innermost outer dimension per call. When a
 * filtered store's chunk holds several of those records, HDF5 would then
 * merge each chunk from several calls, inflating and deflating it again
 * each time its cache (far smaller than a store) let it go. Cutting the
 * span instead, at whole chunks, lets every call carry all the records of
 * its chunks: each chunk deflated once. Sets wcut (and *zck, the records
 * of the innermost outer dimension a chunk holds) for store s. */
static int write_cuts(raster_var *v, size_t s, size_t *zck)
{
    store_addr *a = &v->addr[s];
    int no = var_nouter(v);
    if (!a->wsized) {
        a->wcut = 0;
        a->ck_records = 1;
        int g = v->store_grp[s], id = v->store_var[s], storage;
        size_t ck[RASTER_MAX_DIMS + 1];
        /* format 5: spans move within a tile (tilestore.h) */
        if (no > 0 && id >= 0 && v->format < 5 &&
            compress_filtered(&v->comp)) {
            int st = nc_inq_var_chunking(g, id, &storage, ck);
            if (st != NC_NOERR)
                return raster_fail_nc(RASTER_ENETCDF, st, "%s: %s", v->name,
                                      nc_strerror(st));
            if (storage == NC_CHUNKED && ck[no - 1] > 1 && ck[no] > 0) {
                size_t w = SCRATCH_BYTES / (v->elem * ck[no - 1]);
                a->wcut = w > ck[no] ? w - w % ck[no] : ck[no];
                a->ck_records = ck[no - 1];
            }
        }
        a->wsized = 1;
    }
    if (a->ck_records > *zck)
        *zck = a->ck_records;
    return RASTER_OK;
}

/* Finds the byte offset of chunk `lin` of store s (dataset did: format
 * 5's, the variable): an HDF5 B-tree lookup. 0 when HDF5 cannot describe
 * it as plain bytes. */
static int lookup_one(const raster_var *v, size_t s, hid_t did, size_t lin)
{
    store_addr *a = &v->addr[s];
    int no = var_nouter(v);
    hsize_t off[RASTER_MAX_DIMS + 1];
    if (var_tiled(v)) {
        uint64_t o[RASTER_MAX_DIMS + 1];
        tilestore_chunk_origin(v, s, lin, o);
        for (int d = 0; d < v->ndims; d++)
            off[d] = (hsize_t)o[d];
    } else {
        size_t rest = lin / a->nckc;
        off[no] = (hsize_t)((lin % a->nckc) * a->ckc);
        for (int d = no - 1; d >= 0; d--) {
            off[d] = (hsize_t)((rest % a->nck[d]) * a->ck[d]);
            rest /= a->nck[d];
        }
    }
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    unsigned mask = 0;
    if (H5Dget_chunk_info_by_coord(did, off, &mask, &addr, &size) < 0 ||
        mask != 0)
        return 0;
    if (a->inflate && addr != HADDR_UNDEF) {
        /* no larger than a filter makes a chunk (a hostile size would
         * have us allocate it) */
        size_t bytes = v->elem * a->ckc;
        for (int d = 0; d < no; d++)
            bytes *= a->ck[d];
        if (size == 0 || size > bytes + bytes / 2 + 4096 ||
            size > UINT32_MAX)
            return 0;
        a->csize[lin] = (uint32_t)size;
    }
    a->addr[lin] = addr == HADDR_UNDEF ? -1 : (int64_t)addr;
    a->unknown--;
    return 1;
}

/* Fills a->addr in one pass over store did's chunk index (chunkmap.c):
 * 1 on success, 0 when the store's offsets are to be looked up per chunk,
 * -1 when memory ran out. */
static int walk_chunks(const raster_var *v, store_addr *a, hid_t did)
{
    int no = var_nouter(v);
    size_t ck[RASTER_MAX_DIMS + 1], nck[RASTER_MAX_DIMS + 1], total = a->nckc;
    for (int d = 0; d < no; d++) {
        ck[d] = a->ck[d];
        nck[d] = a->nck[d];
        total *= a->nck[d]; /* cannot overflow: addr[] has this many */
    }
    ck[no] = a->ckc;
    nck[no] = a->nckc;
    /* an inflated store's chunks: their stored sizes too */
    int got = chunkmap_read_sized(v->file->fd, did, no, ck, nck, v->elem,
                                  a->addr, a->inflate ? a->csize : NULL,
                                  total);
    if (got == 1)
        a->unknown = 0;
    return got;
}

/* Looks up, before a read moves any data, the byte offsets of the chunks
 * it will touch that no read has needed yet: one B-tree lookup per chunk,
 * so a small region's read pays for its own chunks, not for every chunk of
 * the stores it touches (540 lookups, 17 M instructions, for the Indian
 * Ocean of the bench file with 1 MiB chunks). On the caller's thread: the
 * reading threads make no HDF5 call. A store HDF5 cannot describe as plain
 * bytes goes to netCDF, as a whole. */
static int lookup_unlocked(xfer *x, const span *spans, size_t nspans,
                           const size_t *ostart, const size_t *ocount,
                           const ptrdiff_t *ostride);

static int lookup_chunks(xfer *x, const span *spans, size_t nspans,
                         const size_t *ostart, const size_t *ocount,
                         const ptrdiff_t *ostride)
{
    lazy_lock(x->v->file);
    int rc = lookup_unlocked(x, spans, nspans, ostart, ocount, ostride);
    lazy_unlock(x->v->file);
    return rc;
}

static int lookup_unlocked(xfer *x, const span *spans, size_t nspans,
                           const size_t *ostart, const size_t *ocount,
                           const ptrdiff_t *ostride)
{
    raster_var *v = x->v;
    int no = var_nouter(v);
    size_t positions = 1;
    for (int d = 0; d < no; d++)
        positions *= ocount[d]; /* at most the caller's planes */
    /* HDF5's error printing is turned off around the first lookup only:
     * a warm read, whose stores are all known, makes no HDF5 call */
    H5E_auto2_t efunc = NULL;
    void *edata = NULL;
    int quiet = 0;
    for (size_t i = 0, j; i < nspans; i = j) {
        uint32_t st = spans[i].store;
        store_addr *a = &v->addr[st];
        for (j = i; j < nspans && spans[j].store == st; j++)
            ;
        if (!a->ok || !a->chunked || a->unknown == 0 || v->file->fd < 0)
            continue; /* later reads of a store find it all known */
        if (!quiet) {
            H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
            H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
            quiet = 1;
        }
        hid_t did = -1;
        int good = 1;
        if (var_tiled(v) && !a->walked) {
            /* format 5: the variable's whole index, walked once for every
             * store (HDF5 1.10 looks a chunk up by iterating them all) */
            int got, rc = tilestore_walk(v, st, &got);
            if (rc) {
                H5Eset_auto2(H5E_DEFAULT, efunc, edata);
                return rc;
            }
            a->walked = 1;
            if (got)
                continue;
        } else if (!a->walked && !var_tiled(v)) {
            /* every offset at once, when chunkmap can */
            did = (hid_t)fileio_store(v, st);
            int got = did >= 0 ? walk_chunks(v, a, did) : 0;
            if (got < 0) {
                H5Dclose(did);
                H5Eset_auto2(H5E_DEFAULT, efunc, edata);
                return raster_fail(RASTER_ENOMEM, "out of memory reading "
                                   "the chunk index of %s", v->name);
            }
            a->walked = 1;
            if (got == 1) {
                H5Dclose(did);
                continue;
            }
        }
        for (size_t k = i; k < j && good; k++) {
            /* spans come in store order: one pass per cell chunk */
            if (k > i && spans[k].lo / a->ckc == spans[k - 1].lo / a->ckc)
                continue;
            size_t idx[RASTER_MAX_DIMS] = {0};
            for (size_t p = 0; p < positions && good; p++) {
                size_t flat = 0, inner;
                for (int d = 0; d < no; d++) {
                    size_t step = ostride ? (size_t)ostride[d] : 1;
                    flat = flat * x->full[d] + ostart[d] + idx[d] * step;
                }
                long lin = spans_chunk_of(x->full, no, a, flat, spans[k].lo,
                                          &inner);
                if (lin >= 0 && a->addr[lin] == CHUNK_UNKNOWN) {
                    if (did < 0)
                        did = var_tiled(v) ? (hid_t)fileio_placeholder(v)
                                           : (hid_t)fileio_store(v, st);
                    good = did >= 0 && lookup_one(v, st, did, (size_t)lin);
                }
                for (int d = no - 1; d >= 0; d--) { /* odometer */
                    if (++idx[d] < ocount[d])
                        break;
                    idx[d] = 0;
                }
            }
        }
        if (did >= 0)
            H5Dclose(did);
        if (!good) {
            a->ok = 0; /* before any of its bytes moved: netCDF serves it */
            if (a->inflate) { /* a filter skipped, or a size in doubt */
                a->inflate = 0;
                int rc = meta_check_store(v, st); /* netCDF's view */
                if (rc) {
                    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
                    return rc;
                }
            }
        }
    }
    if (quiet)
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return RASTER_OK;
}

static int cmp_unit(const void *a, const void *b)
{
    const unit *p = a, *q = b;
    return (p->off > q->off) - (p->off < q->off);
}

/* One walk over the outer box (odometer; dimension no-1 advances by
 * `batch` when batched): pass 0 announces the direct spans, pass 1 moves
 * the data, pass 2 (windows only) notes the ranges for read_behind. */
static int walk_box(xfer *x, const span *spans, size_t nspans,
                    const size_t *ostart, const size_t *ocount,
                    const ptrdiff_t *ostride, size_t batch, int batched,
                    int pass, int write)
{
    raster_var *v = x->v;
    int no = var_nouter(v), rc = RASTER_OK;
    size_t idx[RASTER_MAX_DIMS] = {0}, pmult[RASTER_MAX_DIMS];
    for (int i = no - 1; i >= 0; i--)
        pmult[i] = i == no - 1 ? 1 : pmult[i + 1] * ocount[i + 1];
    for (;;) {
        size_t start[RASTER_MAX_DIMS], plane0 = 0, flat = 0, nb = 1;
        for (int i = 0; i < no; i++) {
            ptrdiff_t step = ostride ? ostride[i] : 1;
            start[i] = ostart[i] + idx[i] * (size_t)step;
            plane0 += idx[i] * pmult[i];
            flat = flat * x->full[i] + start[i];
        }
        if (batched)
            nb = ocount[no - 1] - idx[no - 1] < batch
                     ? ocount[no - 1] - idx[no - 1] : batch;
        for (size_t b = 0; pass > 0 && x->win && b < nb && rc == RASTER_OK;
             b++)
            rc = pass == 1 ? windows_read(x, flat + b, plane0 + b)
                           : windows_note(x, flat + b, plane0 + b);
        for (size_t i = 0; i < nspans && rc == RASTER_OK &&
                           !(pass > 0 && x->win); i++) {
            int direct = !write && v->addr[spans[i].store].ok &&
                         v->file->fd >= 0;
            if (pass == 0) {
                if (direct)
                    spans_announce(x, &spans[i], flat, nb);
            } else {
                rc = direct ? spans_read_direct(x, &spans[i], flat, plane0, nb)
                            : spans_xfer_netcdf(x, &spans[i], start, plane0,
                                                nb, write);
            }
        }
        if (rc)
            return rc;
        int d = no - 1; /* advance */
        for (; d >= 0; d--) {
            idx[d] += (d == no - 1) ? nb : 1;
            if (idx[d] < ocount[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            return RASTER_OK;
    }
}

/* A read by windows from disk (windows.h): its units noted, sorted by file
 * offset and moved behind the load, the output faulted in while the load
 * starts. */
static int read_behind(xfer *x, const size_t *ostart, const size_t *ocount,
                       const ptrdiff_t *ostride, size_t batch, int batched)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    int no = var_nouter(v), rc = RASTER_OK;
    size_t planes = 1, nu;
    for (int i = 0; i < no; i++)
        planes *= ocount[i];
    behind bh = {0};
    if (!raster_mul_overflows(planes, wp->nr, &nu)) {
        bh.u = raster_reallocarray(NULL, nu ? nu : 1, sizeof *bh.u);
        bh.p = raster_scratch(wp->np ? wp->np : 1, sizeof *bh.p);
        bh.first = raster_calloc(wp->nr + 1, sizeof *bh.first);
        x->ann = raster_reallocarray(NULL, nu ? nu : 1, sizeof *x->ann);
    }
    if (!bh.u || !bh.p || !bh.first || !x->ann) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s", v->name);
        goto done;
    }
    /* the pieces range by range (a counting sort), in the caller's order
     * within each */
    for (size_t k = 0; k < wp->nw; k++)
        for (size_t i = wp->w[k].p0; i < wp->w[k].p1; i++)
            bh.first[wp->w[k].r0 + wp->p[i].range + 1]++;
    for (size_t r = 0; r < wp->nr; r++)
        bh.first[r + 1] += bh.first[r];
    for (size_t k = 0; k < wp->nw; k++)
        for (size_t i = wp->w[k].p0; i < wp->w[k].p1; i++)
            bh.p[bh.first[wp->w[k].r0 + wp->p[i].range]++] = wp->p[i];
    for (size_t r = wp->nr; r > 0; r--) /* each back to its start */
        bh.first[r] = bh.first[r - 1];
    bh.first[0] = 0;
    x->bh = &bh;
    if ((rc = walk_box(x, NULL, 0, ostart, ocount, ostride, batch, batched, 2,
                       0)))
        goto done;
    qsort(bh.u, bh.n, sizeof *bh.u, cmp_unit);
    for (size_t i = 0; i < bh.n; i++) {
        const wrange *g = &wp->r[bh.u[i].range];
        memcpy(x->ann[i],
               ((off_t[2]){bh.u[i].off, (off_t)((g->hi - g->lo) * v->elem)}),
               sizeof *x->ann);
    }
    prefetch *pf = prefetch_begin(v->file->fd, (const off_t(*)[2])x->ann,
                                  bh.n, PREFETCH_BEHIND);
    spans_prefault(x->buf, planes * x->plane_cells * v->elem);
    /* the units the load brings in (l) in file order, behind it; the
     * announced ones (a: mixed shares, each record's apart) while it has
     * not passed the next, so that few are left when it ends */
    size_t l = 0, a = 0;
    while (rc == RASTER_OK) {
        while (l < bh.n && !prefetch_loads(pf, x->ann[l][0]))
            l++;
        while (a < bh.n && prefetch_loads(pf, x->ann[a][0]))
            a++;
        if (l == bh.n && a == bh.n)
            break;
        int take_l = l < bh.n &&
                     (a == bh.n ||
                      prefetch_passed(pf, x->ann[l][0] + x->ann[l][1]));
        size_t i = take_l ? l++ : a++;
        if (take_l)
            prefetch_wait(pf, x->ann[i][0] + x->ann[i][1]);
        rc = windows_move_unit(x, &bh.u[i]);
    }
    prefetch_end(pf);
    atomic_fetch_add(&behind_reads, 1);
done:
    x->bh = NULL;
    raster_free(bh.u);
    raster_scratch_free(bh.p);
    raster_free(bh.first);
    return rc;
}

static int xfer_pieces(raster_var *v, piece *pieces, size_t npieces,
                       const size_t *ostart, const size_t *ocount,
                       const ptrdiff_t *ostride, void *buf,
                       size_t plane_cells, int write, size_t cells);

/* 1 when a read of `cells` cells in n pieces goes by windows: large, and
 * its pieces short on average */
static int wants_windows(const raster_var *v, size_t cells, size_t n)
{
    return cells * v->elem >= WIN_STAGE_BYTES &&
           cells * v->elem < STAGE_PIECE_BYTES * n;
}

int chunkio_xfer(raster_var *v, piece *pieces, size_t npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, void *buf, size_t plane_cells,
                 int write)
{
    int no = var_nouter(v), rc;
    for (int i = 0; i < no; i++)
        if (ocount[i] == 0)
            return RASTER_OK;
    if (npieces == 0)
        return RASTER_OK;
    /* the stores this read touches: byte offsets on first use */
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; !write && i < npieces; i++) {
        if (pieces[i].store == last)
            continue;
        last = pieces[i].store;
        if ((rc = chunkio_prepare_store(v, last)) != RASTER_OK)
            return rc;
    }
    /* strided pieces move on the direct path (read_staged) and out of
     * plain chunks (inflate.c: a thin band's column through format 5's
     * tiles); a large scattered read (windows) or any store read
     * otherwise gets their rows as plain pieces */
    size_t cells = 0;
    int strided = 0, other = write || v->file->fd < 0;
    for (size_t i = 0; i < npieces; i++) {
        const store_addr *a = &v->addr[pieces[i].store];
        cells += piece_cells(&pieces[i]);
        if (pieces[i].rep) {
            strided = 1;
            other |= !a->ok || (a->inflate && a->nfilt != 0);
        }
    }
    if (strided && !other)
        other = wants_windows(v, cells, npieces);
    if (strided && !other)
        atomic_fetch_add(&strided_reads, 1);
    if (!strided || !other)
        return xfer_pieces(v, pieces, npieces, ostart, ocount, ostride, buf,
                           plane_cells, write, cells);
    piece *rows = NULL;
    size_t nrows = 0;
    if ((rc = spans_unstride(v, pieces, npieces, &rows, &nrows)) != RASTER_OK)
        return rc;
    rc = xfer_pieces(v, rows, nrows, ostart, ocount, ostride, buf,
                     plane_cells, write, cells);
    raster_free(rows);
    return rc;
}

/* chunkio_xfer once the stores are prepared (`cells`: the cells the
 * pieces cover); strided pieces only for the direct path. */
static int xfer_pieces(raster_var *v, piece *pieces, size_t npieces,
                       const size_t *ostart, const size_t *ocount,
                       const ptrdiff_t *ostride, void *buf,
                       size_t plane_cells, int write, size_t cells)
{
    int no = var_nouter(v), rc = RASTER_OK;
    size_t zck = 1; /* records of a write's filtered chunks */
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; write && i < npieces; i++) {
        if (pieces[i].store == last)
            continue;
        last = pieces[i].store;
        if ((rc = write_cuts(v, last, &zck)) != RASTER_OK)
            return rc;
    }
    /* a large scattered read: windows (windows.c) */
    span *spans = NULL;
    size_t nspans = 0;
    wplan wp = {0};
    int use_win = 0, want_win = 0;
    if (!write && v->file->fd >= 0) {
        want_win = wants_windows(v, cells, npieces);
    }
    /* pieces that fill dense ranges: windows and spans from the caller's
     * order as it is, the pieces neither cut nor sorted (a packed read of
     * Southern spent a third of its planning on those) */
    if (want_win) {
        int dense;
        rc = windows_dense_spans(v, pieces, npieces, &spans, &nspans, &dense);
        if (rc == RASTER_OK && dense)
            rc = windows_plan(v, pieces, npieces, spans, nspans,
                              WIN_STAGE_BYTES, &wp, &use_win);
        if (rc || !use_win) {
            windows_wplan_free(&wp);
            raster_free(spans);
            spans = NULL;
            nspans = 0;
            if (rc)
                return rc;
        }
    }
    piece *split = NULL, *caller = pieces;
    size_t ncaller = npieces;
    if (!use_win)
        rc = spans_split_pieces(v, &pieces, &npieces, write, &split);
    if (rc)
        return rc;
    /* else windows planned from the caller's order: its own array when
     * the cut pieces went to a new one, else a copy made before the sort */
    piece *order = NULL, *copy = NULL;
    if (want_win && !use_win) {
        if (split)
            order = caller;
        else if ((order = copy = raster_reallocarray(NULL, npieces,
                                                     sizeof *copy)) != NULL)
            memcpy(copy, pieces, npieces * sizeof *copy);
        else
            rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                             v->name);
    }
    if (rc == RASTER_OK && !use_win)
        rc = spans_sort_pieces(pieces, npieces);
    if (rc) {
        raster_free(copy);
        raster_free(split);
        return rc;
    }
    if (write) {
        int done;
        rc = writeback_small(v, pieces, npieces, ostart, ocount, ostride, buf,
                             plane_cells, &done);
        if (rc || done) {
            raster_free(split);
            return rc;
        }
    }
    /* what small writes held back goes first, in order */
    if (v->pend && (rc = chunkio_flush(v)) != RASTER_OK) {
        raster_free(copy);
        raster_free(split);
        raster_free(spans);
        windows_wplan_free(&wp);
        return rc;
    }
    /* whole store chunks straight to the file; the rest through netCDF */
    if (write) {
        rc = direct_write(v, pieces, &npieces, ostart, ocount, ostride, buf,
                          plane_cells, fanout_read_threads() > 1 ? 2 : 1);
        if (rc || npieces == 0) {
            raster_free(split);
            return rc;
        }
    }
    if (!use_win) {
        rc = spans_make(v, pieces, npieces, write, &spans, &nspans);
        if (rc == RASTER_OK && order)
            rc = windows_plan(v, order, split ? ncaller : npieces, spans,
                              nspans, WIN_STAGE_BYTES, &wp, &use_win);
        if (!use_win)
            windows_wplan_free(&wp);
    }
    raster_free(copy);
    if (rc) {
        raster_free(spans);
        raster_free(split);
        windows_wplan_free(&wp);
        return rc;
    }

    xfer x = {.v = v, .pieces = pieces, .buf = buf,
              .plane_cells = plane_cells, .win = use_win ? &wp : NULL};
    size_t widest = 0;
    for (size_t i = 0; i < nspans; i++)
        if (spans[i].hi - spans[i].lo > widest)
            widest = (size_t)(spans[i].hi - spans[i].lo);
    /* outer indices per call: the innermost outer dimension when its stride
     * is 1, as many as the scratch bound allows */
    size_t batch = 1;
    int batched = no > 0 && (!ostride || ostride[no - 1] == 1);
    if (batched) {
        batch = ocount[no - 1];
        size_t per = widest * v->elem;
        if (per > 0 && batch > SCRATCH_BYTES / per)
            batch = SCRATCH_BYTES / per ? SCRATCH_BYTES / per : 1;
        if (batch < ocount[no - 1] && batch > zck)
            batch -= batch % zck; /* whole chunks per call */
    }
    x.tmp_bytes = widest * v->elem * batch; /* allocated when first used */
    x.junk = raster_malloc(GAP_BYTES + 64);
    x.stage = write ? NULL : raster_scratch(windows_stage_bytes(x.win), 1);
    if (!write && !v->file->writable) { /* a thin read keeps its spans */
        size_t bytes = plane_cells * v->elem;
        for (int i = 0; i < no && bytes <= FILEIO_KEPT_READ; i++)
            if (raster_mul_overflows(bytes, ocount[i], &bytes))
                bytes = SIZE_MAX;
        /* from a handle's second thin read on: a program that opens,
         * reads once and closes (a point's series over many files) only
         * paid for copying spans it never read again (11 M instructions
         * of a one-column band's 26 M) */
        if (bytes <= FILEIO_KEPT_READ &&
            atomic_fetch_add(&v->file->thin_reads, 1) > 0) {
            if ((rc = fileio_cache_on(v->file)))
                goto done;
            x.cache = 1;
        }
    }
    if (!x.junk || (!write && !x.stage)) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory moving data of %s",
                         v->name);
        goto done;
    }
    /* the records that may exist, without asking netCDF (a write), or
     * lengths that hold the box (a read: var_check_read looked them up) */
    rc = write ? var_write_shape(v, x.full)
               : var_read_shape(v, ostart, ocount, ostride, x.full);
    if (rc)
        goto done;
    if (!write &&
        (rc = lookup_chunks(&x, spans, nspans, ostart, ocount, ostride)))
        goto done;
    /* read-phase timing: planning ends here when stores are inflated,
     * else after the page cache probe (spans_cached) below */
    int timing = atomic_load_explicit(&chunkio_timing, memory_order_relaxed);
    if (timing)
        chunkio_plan_end = chunkio_clock();
    /* spans of filtered stores raster inflates itself, first; the rest
     * (moved to the front, in order) as before */
    size_t nspans0 = nspans;
    if (!write && v->file->fd >= 0) {
        size_t nf = 0;
        for (size_t i = 0; i < nspans; i++)
            nf += v->addr[spans[i].store].ok &&
                  v->addr[spans[i].store].inflate;
        if (nf > 0) {
            span *fs = raster_reallocarray(NULL, nf, sizeof *fs);
            if (!fs) {
                rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                                 v->name);
                goto done;
            }
            size_t k = 0, rest = 0;
            for (size_t i = 0; i < nspans; i++) {
                const store_addr *a = &v->addr[spans[i].store];
                if (a->ok && a->inflate)
                    fs[k++] = spans[i];
                else
                    spans[rest++] = spans[i];
            }
            nspans = rest;
            rc = inflate_read(&x, fs, nf, ostart, ocount, ostride);
            raster_free(fs);
            if (rc || nspans == 0)
                goto done;
        }
    }

    /* Reads walk the outer box twice: first only announcing every large
     * span of every plane (POSIX_FADV_WILLNEED), so that from disk the
     * kernel reads the whole request ahead in large requests while the
     * second walk copies (in the page cache this costs next to nothing);
     * in a read of many short spans, those too, so that the disk serves
     * them side by side instead of one synchronous pread at a time. */
    if (!write) {
        size_t planes = 1, ndirect = 0;
        for (int i = 0; i < no; i++)
            planes *= ocount[i];
        for (size_t i = 0; i < nspans; i++)
            ndirect += spans_direct_span(v, &spans[i]);
        x.ann_short = ndirect * planes >= ANNOUNCE_READS;
    }
    int first = write || spans_cached(&x, spans, nspans, ostart, ocount,
                                      ostride)
                    ? 1
                    : 0;
    if (timing && nspans == nspans0)
        chunkio_plan_end = chunkio_clock();
    if (x.win)
        atomic_fetch_add(&window_reads, 1);
    if (first == 0 && x.win) { /* from disk, by windows */
        rc = read_behind(&x, ostart, ocount, ostride, batch, batched);
        goto done;
    }
    if (first == 0) { /* from disk: announce, then fault the output in */
        rc = walk_box(&x, spans, nspans, ostart, ocount, ostride, batch,
                      batched, 0, write);
        if (rc)
            goto done;
        spans_bring_in_noted(&x);
        first = 1;
        x.fault = 1; /* each reading thread faults in its own planes */
    }
    int threads = write ? 1 : fanout_read_threads();
    int big = threads > 1 && fanout_threads_pay(&x, spans, nspans, ocount);
    int many = threads > 1 && !big &&
               fanout_staged_pay(&x, spans, nspans, ocount);
    if (many && !fanout_threads_chosen()) { /* the default: idle cores only */
        int idle = fanout_idle_cores();
        if (idle == 0)
            many = 0;
        else if (idle > 0 && idle + 1 < threads)
            threads = idle + 1;
    }
    if (big || many) {
        if (many)
            atomic_fetch_add(&staged_threaded, 1);
        int t = fanout_read_threaded(&x, spans, nspans, ostart, ocount,
                                     ostride, threads,
                                     many ? STAGED_TURN : nspans);
        if (t >= 0) {
            rc = t;
            goto done;
        }
        /* no plan: one thread after all */
    }
    if (x.fault) {
        size_t planes = 1;
        for (int i = 0; i < no; i++)
            planes *= ocount[i];
        spans_prefault(buf, planes * plane_cells * v->elem);
    }
    for (int pass = first; pass < 2 && rc == RASTER_OK; pass++)
        rc = walk_box(&x, spans, nspans, ostart, ocount, ostride, batch,
                      batched, pass, write);
done:
    raster_free(x.tmp);
    raster_free(x.junk);
    raster_scratch_free(x.stage);
    raster_free(x.iov);
    raster_free(x.ann);
    raster_free(spans);
    raster_free(split);
    windows_wplan_free(&wp);
    return rc;
}
