/*
 * chunkio.c - Chunk Data Handler.
 *
 * Pieces are sorted by store offset and grouped into spans: runs of pieces
 * of one store whose gaps are small enough that reading through them is
 * cheaper than another call. Each span becomes one netCDF call per block of
 * outer indices (consecutive indices of the innermost outer dimension go in
 * one call). Writes read a span first only when the pieces leave holes in
 * it, so whole-tile and whole-record writes never read.
 *
 * Fast path: in a file opened read-only, a store that HDF5 keeps contiguous,
 * unfiltered and in native byte order is read with preadv at its byte
 * offset, each piece landing straight in the caller's buffer (gaps go to a
 * scratch buffer), with no HDF5 call per read.
 */
#include "chunkio.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkmap.h"
#include "compress.h"
#include "direct.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "meta.h"
#include "ncbind.h"
#include "prefetch.h"
#include "state.h"
#include "threads.h"
#include "unfilter.h"

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
/* Upper bound on the scratch buffer of one netCDF call. */
#define SCRATCH_BYTES ((size_t)32 << 20)

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* store_addr.addr[] entry of a chunk not looked up yet */
#define CHUNK_UNKNOWN INT64_MIN

/* Filtered stores inflated here (chunkio_set_inflate), and the chunks
 * inflated so far (chunkio_chunks_inflated). */
static atomic_int inflate_on = 1;
static atomic_size_t chunks_inflated;
static atomic_size_t split_chunk_writes;
static atomic_size_t strided_reads;
static atomic_size_t staged_threaded;
static atomic_size_t threads_ran; /* read_threaded's helpers that ran */

atomic_int chunkio_timing;
_Thread_local double chunkio_plan_end;

double chunkio_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void chunkio_set_inflate(int on) { atomic_store(&inflate_on, on); }

size_t chunkio_chunks_inflated(void) { return atomic_load(&chunks_inflated); }

size_t chunkio_strided_reads(void) { return atomic_load(&strided_reads); }

size_t chunkio_staged_threaded(void) { return atomic_load(&staged_threaded); }

size_t chunkio_threads_ran(void) { return atomic_load(&threads_ran); }

size_t chunkio_split_chunk_writes(void)
{
    return atomic_load(&split_chunk_writes);
}

typedef struct span {
    size_t p0, p1;  /* pieces [p0, p1) */
    uint64_t lo, hi; /* store cells [lo, hi) */
    size_t covered;  /* cells the pieces cover */
    uint32_t store;
    int strided;     /* holds strided pieces: hi - lo <= STAGE_BYTES */
} span;

/* Where pieces of store a are cut (cells; 0: nowhere): at chunk
 * boundaries of a store chunked along its cells (a read's span then lies
 * in one chunk: contiguous bytes), at multiples of wcut in a write to a
 * filtered store (write_cuts). */
static size_t piece_cut(const store_addr *a, int write)
{
    if (write)
        return a->wcut;
    return a->chunked && a->nckc > 1 ? a->ckc : 0;
}

static int cmp_piece(const void *a, const void *b)
{
    const piece *p = a, *q = b;
    if (p->store != q->store)
        return (p->store > q->store) - (p->store < q->store);
    return (p->soff > q->soff) - (p->soff < q->soff);
}

static int make_spans(const raster_var *v, const piece *p, size_t n,
                      int write, span **out, size_t *nspans)
{
    size_t gap = GAP_BYTES / v->elem, cap = 0, ns = 0;
    size_t stage = STAGE_BYTES / v->elem;
    span *spans = NULL;
    for (size_t i = 0; i < n; i++) {
        /* spans stay within their pieces' cuts; one with strided pieces
         * within one staging buffer (read_staged) */
        size_t ckc = piece_cut(&v->addr[p[i].store], write);
        uint64_t end = piece_send(&p[i]);
        const span *t = ns ? &spans[ns - 1] : NULL;
        if (!t || p[i].store != t->store || p[i].soff > t->hi + gap ||
            (ckc && p[i].soff / ckc != t->lo / ckc) ||
            ((t->strided || p[i].rep) &&
             (end > t->hi ? end : t->hi) - t->lo > stage)) {
            int rc = raster_grow(&spans, &cap, ns + 1, sizeof *spans);
            if (rc) {
                raster_free(spans);
                return rc;
            }
            spans[ns++] = (span){.p0 = i, .p1 = i, .lo = p[i].soff,
                                 .hi = p[i].soff, .covered = 0,
                                 .store = p[i].store};
        }
        span *s = &spans[ns - 1];
        s->p1 = i + 1;
        s->covered += piece_cells(&p[i]);
        s->strided |= p[i].rep > 0;
        if (end > s->hi)
            s->hi = end;
    }
    *out = spans;
    *nspans = ns;
    return RASTER_OK;
}

static void fill_cells(unsigned char *dst, size_t n, const unsigned char *fill,
                       size_t elem)
{
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * elem, fill, elem);
}

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
    if (v->format < 3 || s >= v->nregions)
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
    if (f->writable || f->fd < 0 || !f->path ||
        (!f->lean && v->store_var[s] < 0)) {
        if ((rc = meta_check_store(v, s)) == RASTER_OK)
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

/* Sorts pieces by (store, store offset). A region's runs come in grid
 * order, which is far from store order in tile-major pure chunks: an LSD
 * radix sort on 11-bit digits of the key takes a few passes over tens of
 * thousands of pieces where qsort took milliseconds. qsort for short lists
 * and keys beyond 64 bits. */
#define RADIX_BITS 11
#define RADIX_MIN 2048

static int sort_pieces(piece *p, size_t n)
{
    /* sorted already: a hyperslab's pieces from the tile index's memo */
    size_t i = 1;
    while (i < n && cmp_piece(&p[i - 1], &p[i]) <= 0)
        i++;
    if (i >= n)
        return RASTER_OK;
    uint64_t maxoff = 0;
    uint32_t maxstore = 0;
    for (size_t i = 0; i < n; i++) {
        maxoff = p[i].soff > maxoff ? p[i].soff : maxoff;
        maxstore = p[i].store > maxstore ? p[i].store : maxstore;
    }
    int obits = 0, sbits = 0;
    while (obits < 64 && (maxoff >> obits) != 0)
        obits++;
    while (sbits < 32 && (maxstore >> sbits) != 0)
        sbits++;
    if (n < RADIX_MIN || obits + sbits > 64) {
        qsort(p, n, sizeof *p, cmp_piece);
        return RASTER_OK;
    }
    piece *tmp = raster_reallocarray(NULL, n, sizeof *tmp);
    if (!tmp)
        return raster_fail(RASTER_ENOMEM, "out of memory sorting %zu pieces",
                           n);
    size_t count[1 << RADIX_BITS];
    piece *from = p, *to = tmp;
    for (int shift = 0; shift < obits + sbits; shift += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) {
            uint64_t key = (uint64_t)from[i].store << obits | from[i].soff;
            count[(key >> shift) & ((1u << RADIX_BITS) - 1)]++;
        }
        size_t sum = 0;
        for (size_t d = 0; d < (1u << RADIX_BITS); d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t key = (uint64_t)from[i].store << obits | from[i].soff;
            to[count[(key >> shift) & ((1u << RADIX_BITS) - 1)]++] = from[i];
        }
        piece *t = from;
        from = to;
        to = t;
    }
    if (from != p)
        memcpy(p, from, n * sizeof *p);
    raster_free(tmp);
    return RASTER_OK;
}

/* preadv of the whole iovec list at `off`, in IOV_MAX batches. */
static int preadv_all(int fd, struct iovec *iov, size_t n, off_t off,
                      const char *name)
{
    while (n > 0) {
        int batch = n > IOV_MAX ? IOV_MAX : (int)n;
        size_t want = 0;
        for (int i = 0; i < batch; i++)
            want += iov[i].iov_len;
        ssize_t got = preadv(fd, iov, batch, off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return raster_fail(RASTER_EIO, "reading %s: %s", name,
                               strerror(errno));
        if ((size_t)got < want) {
            /* short read: advance through the vector and go on */
            if (got == 0)
                return raster_fail(RASTER_EIO,
                                   "reading %s: file ends early (truncated?)",
                                   name);
            size_t left = (size_t)got;
            off += got;
            while (left >= iov->iov_len) {
                left -= iov->iov_len;
                iov++;
                n--;
            }
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
            continue;
        }
        off += (off_t)want;
        iov += batch;
        n -= (size_t)batch;
    }
    return RASTER_OK;
}

/* ---- the transfer ------------------------------------------------------ */

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
    int fault;            /* fault the output in before reading (prefault) */
    int ann_short;        /* announce short spans too (ANNOUNCE_READS) */
    off_t (*ann)[2];      /* byte ranges to announce: offset, length */
    size_t nann, ann_cap;
    size_t full[RASTER_MAX_DIMS]; /* outer shape, for the fast path */
    int cache; /* a thin read: staged spans kept (fileio_keep) */
    const struct wplan *win; /* moved by windows (read_windows), or NULL */
    struct behind *bh;       /* a read by windows from disk (read_behind) */
} xfer;

static unsigned char *plane_ptr(const xfer *x, size_t plane, uint64_t cell)
{
    return x->buf + (plane * x->plane_cells + cell) * x->v->elem;
}

/* Index in a->addr of the chunk holding cell `cell` of the record with
 * flat outer index `flat`, and the record's position inside that chunk
 * (*inner); -1 when the store was written less far than the dimension. */
static long chunk_of(const size_t *full, int no, const store_addr *a,
                     size_t flat, uint64_t cell, size_t *inner)
{
    size_t coord[RASTER_MAX_DIMS], lin = 0;
    *inner = 0;
    for (int d = no - 1; d >= 0; d--) {
        coord[d] = flat % full[d];
        flat /= full[d];
    }
    for (int d = 0; d < no; d++) {
        /* a store written less far than the dimension: fill beyond */
        if (coord[d] / a->ck[d] >= a->nck[d])
            return -1;
        lin = lin * a->nck[d] + coord[d] / a->ck[d];
        *inner = *inner * a->ck[d] + coord[d] % a->ck[d];
    }
    return (long)(lin * a->nckc + cell / a->ckc); /* spans never cross cell
                                                     chunks */
}

/* Byte offset of cell `cell` of the record with flat outer index `flat`,
 * -1 when its chunk was never written, -2 when its offset was not looked
 * up. Chunk offsets a read needs were
 * looked up before it started (lookup_chunks). */
static off_t store_offset(const xfer *x, const store_addr *a, size_t cells,
                          size_t flat, uint64_t cell)
{
    size_t elem = x->v->elem, inner;
    if (!a->chunked)
        return (off_t)a->base + (off_t)((flat * cells + cell) * elem);
    long lin = chunk_of(x->full, var_nouter(x->v), a, flat, cell, &inner);
    if (lin >= 0 && a->addr[lin] == CHUNK_UNKNOWN)
        return -2; /* a bug: never served as fill */
    if (lin < 0 || a->addr[lin] < 0)
        return -1;
    return (off_t)a->addr[lin] +
           (off_t)((inner * a->ckc + cell % a->ckc) * elem);
}

/* memcpy, with the single values of a thin band's pieces (a cell each)
 * copied inline: a call per 4-byte value cost a quarter of such a read. */
static inline void copy_cells(unsigned char *dst, const unsigned char *src,
                              size_t bytes)
{
    switch (bytes) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, bytes); break;
    }
}

/* The rows of strided piece p (piece.h) from src, which holds store
 * cells from `lo`, to plane `plane`: a tight loop over a thin band's
 * column, one value a row. */
static void copy_rows(const xfer *x, const piece *p, size_t plane,
                      const unsigned char *src, uint64_t lo)
{
    size_t elem = x->v->elem, bytes = p->len * elem;
    size_t ds = (size_t)p->sstep * elem, du = (size_t)p->ustep * elem;
    const unsigned char *from = src + (p->soff - lo) * elem;
    unsigned char *to = plane_ptr(x, plane, p->uoff);
    size_t rows = (size_t)p->rep + 1;
    switch (bytes) {
    case 4:
        for (size_t r = 0; r < rows; r++, from += ds, to += du)
            memcpy(to, from, 4);
        break;
    case 8:
        for (size_t r = 0; r < rows; r++, from += ds, to += du)
            memcpy(to, from, 8);
        break;
    default:
        for (size_t r = 0; r < rows; r++, from += ds, to += du)
            memcpy(to, from, bytes);
        break;
    }
}

/* The len file bytes at `at` for read_staged: from the span cache when a
 * thin read keeps its spans and holds them (*held = 1: the caller calls
 * fileio_kept_release after copying), else read into x->stage (and kept
 * when the read keeps its spans). */
static int staged_bytes(xfer *x, off_t at, size_t len,
                        const unsigned char **src, int *held)
{
    raster_file *f = x->v->file;
    int kept = x->cache && len <= FILEIO_KEPT_SPAN;
    *src = kept ? fileio_kept(f, at, len) : NULL;
    *held = *src != NULL;
    if (*held)
        return RASTER_OK;
    int rc = fileio_pread(f->fd, x->stage, len, at, x->v->name);
    if (rc == RASTER_OK && kept)
        rc = fileio_keep(f, at, len, x->stage);
    *src = x->stage;
    return rc;
}

/* Span s of one plane through a small staging buffer: long reads of the
 * store, then the pieces copied out. For short pieces this beats a preadv
 * with one iovec per piece, whose per-segment cost in the kernel exceeds
 * the copy itself. `off` is the byte offset of store cell s->lo. A span
 * of strided pieces fits the buffer (make_spans): one read, then each
 * piece's rows. */
static int read_staged(xfer *x, const span *s, size_t plane, off_t off)
{
    raster_var *v = x->v;
    size_t elem = v->elem, cap = STAGE_BYTES / elem, i = s->p0;
    uint64_t lo = s->lo;
    if (s->strided) {
        size_t len = (size_t)(s->hi - s->lo) * elem;
        const unsigned char *src;
        int held, rc = staged_bytes(x, off, len, &src, &held);
        if (rc)
            return rc;
        for (; i < s->p1; i++)
            copy_rows(x, &x->pieces[i], plane, src, lo);
        if (held)
            fileio_kept_release(v->file);
        return RASTER_OK;
    }
    while (i < s->p1) {
        const piece *p = &x->pieces[i];
        if (p->soff > lo) /* skip a hole before the next piece */
            lo = p->soff;
        uint64_t hi = lo + cap < s->hi ? lo + cap : s->hi;
        size_t len = (size_t)(hi - lo) * elem;
        off_t at = off + (off_t)((lo - s->lo) * elem);
        const unsigned char *src;
        int held, rc = staged_bytes(x, at, len, &src, &held);
        if (rc)
            return rc;
        for (; i < s->p1 && x->pieces[i].soff < hi; i++) {
            p = &x->pieces[i];
            uint64_t a = p->soff > lo ? p->soff : lo;
            uint64_t b = p->soff + p->len < hi ? p->soff + p->len : hi;
            copy_cells(plane_ptr(x, plane, p->uoff + (a - p->soff)),
                       src + (a - lo) * elem, (size_t)(b - a) * elem);
            if (p->soff + p->len > hi)
                break; /* the rest of this piece comes with the next read */
        }
        if (held)
            fileio_kept_release(v->file);
        lo = hi;
    }
    return RASTER_OK;
}

/* The fill value in every cell span s's pieces cover in plane `plane`. */
static void fill_span(const xfer *x, const span *s, size_t plane)
{
    const raster_var *v = x->v;
    for (size_t i = s->p0; i < s->p1; i++) {
        const piece *p = &x->pieces[i];
        for (uint64_t r = 0; r <= p->rep; r++)
            fill_cells(plane_ptr(x, plane, p->uoff + r * p->ustep), p->len,
                       v->fill, v->elem);
    }
}

/* 1 when span s is read on the fast path from a store with data */
static int direct_span(const raster_var *v, const span *s)
{
    return v->addr[s->store].ok && v->addr[s->store].base >= 0;
}

/* 1 when span s would be announced: a direct span, large or in a read of
 * many (x->ann_short) */
static int announced(const xfer *x, const span *s)
{
    return direct_span(x->v, s) &&
           (x->ann_short ||
            (size_t)(s->hi - s->lo) * x->v->elem >= ANNOUNCE_BYTES);
}

/* Notes span s of planes flat.. flat+nb-1 in x->ann for bring_in_noted,
 * when it is large enough for read-ahead to matter (announced at once
 * when the list cannot grow). */
static void announce(xfer *x, const span *s, size_t flat, size_t nb)
{
    raster_var *v = x->v;
    const store_addr *a = &v->addr[s->store];
    size_t bytes = (size_t)(s->hi - s->lo) * v->elem;
    if (!announced(x, s))
        return;
    for (size_t b = 0; b < nb; b++) {
        off_t off = store_offset(x, a, v->store_cells[s->store], flat + b,
                                 s->lo);
        if (off < 0)
            continue;
        if (raster_grow(&x->ann, &x->ann_cap, x->nann + 1, sizeof *x->ann))
            (void)posix_fadvise(v->file->fd, off, (off_t)bytes,
                                POSIX_FADV_WILLNEED);
        else
            memcpy(x->ann[x->nann++], ((off_t[2]){off, (off_t)bytes}),
                   sizeof *x->ann);
    }
}

static int cmp_range(const void *a, const void *b)
{
    const off_t *p = a, *q = b;
    return (p[0] > q[0]) - (p[0] < q[0]);
}

/* Brings the noted ranges in from disk ahead of the reads (prefetch.c),
 * in file order: in plane order, a region's request is one range per span
 * and record, hopping between the stores; sorted, it is a few long
 * ranges, since a store's records lie side by side when they were written
 * together (direct.c). */
static void bring_in_noted(xfer *x)
{
    if (x->nann == 0)
        return;
    qsort(x->ann, x->nann, sizeof *x->ann, cmp_range);
    prefetch_end(prefetch_begin(x->v->file->fd, (const off_t(*)[2])x->ann,
                                x->nann, 0));
    x->nann = 0;
}

/* Fast-path read of span s for planes [plane0, plane0+nb) whose store
 * records start at flat outer index `flat`. */
static int read_direct(xfer *x, const span *s, size_t flat, size_t plane0,
                       size_t nb)
{
    raster_var *v = x->v;
    size_t elem = v->elem;
    const store_addr *a = &v->addr[s->store];
    for (size_t b = 0; b < nb; b++) {
        if (a->base < 0) { /* never written: fill */
            fill_span(x, s, plane0 + b);
            continue;
        }
        off_t off = store_offset(x, a, v->store_cells[s->store], flat + b,
                                 s->lo);
        if (off == -2)
            return raster_fail(
                RASTER_EIO,
                "reading %s: a chunk's byte offset was never looked up",
                v->name);
        if (off < 0) { /* a chunk never written: fill */
            fill_span(x, s, plane0 + b);
            continue;
        }
        if (s->strided ||
            s->covered * elem < STAGE_PIECE_BYTES * (s->p1 - s->p0)) {
            int rc = read_staged(x, s, plane0 + b, off);
            if (rc)
                return rc;
            continue;
        }
        size_t niov = 0;
        uint64_t cursor = s->lo;
        for (size_t i = s->p0; i < s->p1; i++) {
            const piece *p = &x->pieces[i];
            int rc = raster_grow(&x->iov, &x->iov_cap, niov + 2,
                                 sizeof *x->iov);
            if (rc)
                return rc;
            if (p->soff > cursor)
                x->iov[niov++] = (struct iovec){x->junk,
                                                (p->soff - cursor) * elem};
            x->iov[niov++] = (struct iovec){plane_ptr(x, plane0 + b, p->uoff),
                                            p->len * elem};
            cursor = p->soff + p->len;
        }
        int rc = preadv_all(v->file->fd, x->iov, niov, off, v->name);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* ---- scattered reads in the caller's order (windows) ------------------ */

/* A packed region's pieces are short (a tile row each, ~200 bytes here)
 * and the stores hold them in another order than the caller's buffer
 * (chunk by chunk, mixed shares apart). Copied out of a staged span in
 * store order, each piece lands a region row away from the last, so the
 * output is written in partial cache lines all over each plane, each line
 * fetched from memory more than once. Windows go the other way: pieces
 * in the caller's order, grouped so that the store bytes each group needs
 * (one contiguous range per span) fit the staging buffer; each range is
 * read with one pread and the pieces copied out in order, so the output
 * is written once, front to back. A window of one piece (pieces that
 * follow on in both the store and the buffer merged) larger than a
 * staging buffer is read straight into the buffer. */

/* Ranges (one per span) one window reads at most. */
#define WIN_RANGES 64
/* Windows read at most this much more than the pieces cover (holes in a
 * span, ranges read again where a band of rows outgrew the stage), else
 * the read keeps its spans. */
#define WIN_SLACK 1.25
/* A window's stage, per reading thread: STAGE_BYTES unless a test sets
 * another (chunkio_set_window_bytes). 1 MiB holds a tile row of the bench
 * file's widest regions (Southern: 11 windows a record, none read twice);
 * 512 KiB did not, and the plan fell back to spans. */
#define WIN_STAGE_BYTES win_stage()
static atomic_size_t win_bytes_set; /* chunkio_set_window_bytes; 0: 1 MiB */
static atomic_size_t window_reads;

void chunkio_set_window_bytes(size_t bytes)
{
    atomic_store(&win_bytes_set, bytes);
}

size_t chunkio_window_reads(void) { return atomic_load(&window_reads); }

static size_t win_stage(void)
{
    size_t n = atomic_load(&win_bytes_set);
    return n ? n : STAGE_BYTES;
}

typedef struct wrange {
    uint32_t store;  /* plan_windows: the span; then the store */
    uint64_t lo, hi; /* store cells [lo, hi), read to stage + at bytes */
    size_t at;
} wrange;

typedef struct wpiece {
    uint64_t uoff;   /* first cell in the plane */
    size_t src;      /* its first byte in the stage (direct: unused) */
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

/* A reading thread's stage: read_staged's, or larger windows' */
static size_t stage_bytes(const wplan *wp)
{
    return wp && wp->stage > STAGE_BYTES ? wp->stage : STAGE_BYTES;
}

static void wplan_free(wplan *wp)
{
    raster_scratch_free(wp->p);
    raster_free(wp->r);
    raster_free(wp->w);
    *wp = (wplan){0};
}

/* The span of piece q (spans sorted by store, then offset). */
static uint32_t span_of(const span *spans, size_t nspans, const piece *q)
{
    size_t lo = 0, hi = nspans;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (spans[mid].store < q->store ||
            (spans[mid].store == q->store && spans[mid].lo <= q->soff))
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* Adds `len` cells from store cell `soff` of span sp to the ranges
 * r[0..*nr) of a window (cov[]: the cells their pieces cover; slot[sp]:
 * the span's range + 1, 0 for none yet): the span's range grows to hold
 * them. Returns the cells the ranges grew by; *open
 * counts the ranges their pieces leave holes in. */
static size_t range_add(wrange *r, size_t *nr, unsigned char *slot,
                        uint32_t sp, uint64_t soff, uint32_t len,
                        uint64_t *cov, size_t *open)
{
    size_t k = slot[sp] ? (size_t)slot[sp] - 1 : *nr;
    if (k == *nr) {
        slot[sp] = (unsigned char)(k + 1);
        r[(*nr)++] = (wrange){sp, soff, soff + len, 0};
        cov[k] = len;
        return len;
    }
    int was_full = cov[k] == r[k].hi - r[k].lo;
    size_t before = (size_t)(r[k].hi - r[k].lo);
    if (soff < r[k].lo)
        r[k].lo = soff;
    if (soff + len > r[k].hi)
        r[k].hi = soff + len;
    cov[k] += len;
    int full = cov[k] == r[k].hi - r[k].lo;
    *open += (size_t)(was_full && !full);
    *open -= (size_t)(!was_full && full);
    return (size_t)(r[k].hi - r[k].lo) - before;
}

/* Plans the windows of pieces p[0..n) (the caller's order, uoff rising;
 * not yet cut at their stores' chunks: cut here; spans[0..nspans) made
 * from the same pieces, cut) for a stage of `stage` bytes. A window ends,
 * where it can, where the ranges its pieces came from are whole (a band
 * of rows done: the pure chunks and the mixed shares of a tile row), so
 * that no store byte is read twice. *use = 1 when planned, 0 when the read
 * keeps its spans (pieces out of order, a store off the fast path, too
 * many bytes read twice). RASTER_OK or RASTER_ENOMEM. */
static int plan_windows(const raster_var *v, const piece *p, size_t n,
                        const span *spans, size_t nspans, size_t stage,
                        wplan *wp, int *use)
{
    size_t elem = v->elem, cap = stage / elem, covered = 0, staged = 0;
    size_t extra = 0;
    memset(wp, 0, sizeof *wp);
    wp->stage = stage;
    *use = 0;
    for (size_t i = 0; i < n; i++) {
        const store_addr *a = &v->addr[p[i].store];
        if (!a->ok || a->inflate || a->base < 0 ||
            (i > 0 && p[i].uoff < p[i - 1].uoff + p[i - 1].len))
            return RASTER_OK;
        size_t cut = piece_cut(a, 0);
        if (cut && p[i].len > 0) {
            uint64_t end = p[i].soff % cut + p[i].len; /* one division */
            if (end > cut)
                extra += (end - 1) / cut;
        }
    }
    /* the pieces cut at chunks, those that follow on in both the store
     * and the plane merged; until its window is placed, an entry holds its
     * store cell in src and its span in range */
    wpiece *q = raster_scratch(n + extra ? n + extra : 1, sizeof *q);
    wrange *r = raster_reallocarray(NULL, WIN_RANGES, sizeof *r);
    uint64_t *cov = raster_reallocarray(NULL, WIN_RANGES, sizeof *cov);
    /* each span's range in the window being planned (a million pieces
     * each looked up: no search); zero between windows */
    unsigned char *slot = raster_calloc(nspans ? nspans : 1, 1);
    size_t nq = 0, wcap = 0, rcap = 0;
    int rc = q && r && cov && slot ? RASTER_OK
                           : raster_fail(RASTER_ENOMEM,
                                         "out of memory reading %s", v->name);
    uint32_t last_store = 0;
    for (size_t i = 0; rc == RASTER_OK && i < n; i++) {
        piece t = p[i];
        size_t cut = piece_cut(&v->addr[t.store], 0);
        while (t.len > 0) {
            /* the chunk along the cells starts at t.soff - rem */
            uint64_t rem = cut ? t.soff % cut : 0;
            uint32_t len = t.len;
            if (cut && rem + t.len > cut)
                len = (uint32_t)(cut - rem);
            if (nq > 0 && last_store == t.store &&
                (!cut || q[nq - 1].src >= t.soff - rem) &&
                q[nq - 1].src + q[nq - 1].len == t.soff &&
                q[nq - 1].uoff + q[nq - 1].len == t.uoff &&
                (uint64_t)q[nq - 1].len + len <= UINT32_MAX) {
                q[nq - 1].len += len;
            } else {
                piece head = {t.soff, t.uoff, t.store, len, 0, 0, 0};
                q[nq++] = (wpiece){t.uoff, (size_t)t.soff, len,
                                   span_of(spans, nspans, &head)};
                last_store = t.store;
            }
            t.soff += len;
            t.uoff += len;
            t.len -= len;
        }
    }
    wp->p = q;
    wp->np = nq;
    for (size_t i = 0; rc == RASTER_OK && i < nq;) {
        /* the window's end: the last clean end before the stage is full
         * (else where it fills) */
        size_t nr = 0, open = 0, width = 0, end = i, clean = i, cwidth = 0;
        for (; end < nq; end++) {
            /* a range lies in its span, so in one chunk along the cells:
             * contiguous bytes in every record */
            uint32_t sp = q[end].range;
            size_t k = slot[sp] ? (size_t)slot[sp] - 1 : nr;
            if (end > i && k == nr && nr == WIN_RANGES)
                break;
            size_t save_nr = nr;
            wrange save = k < nr ? r[k] : (wrange){0};
            uint64_t save_cov = k < nr ? cov[k] : 0;
            size_t save_open = open;
            size_t grow = range_add(r, &nr, slot, sp, q[end].src, q[end].len,
                                    cov, &open);
            if (end > i && width + grow > cap) { /* undo: it starts the next */
                nr = save_nr;
                if (k < nr) {
                    r[k] = save;
                    cov[k] = save_cov;
                } else {
                    slot[sp] = 0;
                }
                open = save_open;
                break;
            }
            width += grow;
            if (open == 0) {
                clean = end + 1;
                cwidth = width;
            }
        }
        /* a clean end that leaves most of the stage unused (a band wider
         * than the stage): cut where it filled, reading a little twice */
        if (end < nq && clean > i && cwidth >= width / 2)
            end = clean;
        /* its ranges, from its pieces */
        for (size_t k = 0; k < nr; k++)
            slot[r[k].store] = 0;
        size_t r0 = wp->nr;
        nr = 0;
        open = 0;
        for (size_t j = i; j < end; j++)
            (void)range_add(r, &nr, slot, q[j].range, q[j].src, q[j].len,
                            cov, &open);
        if ((rc = raster_grow(&wp->r, &rcap, wp->nr + nr, sizeof *wp->r)) ||
            (rc = raster_grow(&wp->w, &wcap, wp->nw + 1, sizeof *wp->w)))
            break;
        size_t at = 0;
        for (size_t k = 0; k < nr; k++) {
            wrange g = r[k];
            g.store = spans[g.store].store;
            g.at = at;
            at += (size_t)(g.hi - g.lo) * elem;
            wp->r[wp->nr++] = g;
        }
        window *w = &wp->w[wp->nw++];
        *w = (window){i, end, r0, wp->nr, end - i == 1 && at > stage};
        if (!w->direct)
            staged += at / elem;
        for (size_t j = i; j < end; j++) { /* placed in the stage */
            size_t k = (size_t)slot[q[j].range] - 1;
            q[j].src = wp->r[r0 + k].at +
                       (size_t)(q[j].src - wp->r[r0 + k].lo) * elem;
            q[j].range = (uint32_t)k;
            covered += q[j].len;
        }
        for (size_t k = 0; k < nr; k++)
            slot[r[k].store] = 0;
        i = end;
    }
    raster_free(r);
    raster_free(cov);
    raster_free(slot);
    if (rc == RASTER_OK && staged <= covered * WIN_SLACK + cap)
        *use = 1;
    return rc;
}

static int cmp_span(const void *a, const void *b)
{
    const span *p = a, *q = b;
    if (p->store != q->store)
        return (p->store > q->store) - (p->store < q->store);
    return (p->lo > q->lo) - (p->lo < q->lo);
}

/* The spans of pieces p[0..n) (any order) when, store by store and chunk
 * by chunk along the cells, they fill one range without holes each (a
 * packed region of a file raster wrote): made without cutting or sorting
 * the pieces, so the spans name no pieces (windows only). *dense = 0, and
 * nothing made, when a range has holes or there are more than WIN_RANGES
 * of them. RASTER_OK or RASTER_ENOMEM. */
static int dense_spans(const raster_var *v, const piece *p, size_t n,
                       span **out, size_t *nout, int *dense)
{
    *out = NULL;
    *nout = 0;
    *dense = 0;
    span *s = raster_reallocarray(NULL, WIN_RANGES, sizeof *s);
    uint64_t ckey[WIN_RANGES]; /* each range's chunk: its first cell */
    if (!s)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    size_t ns = 0, hit = 0;
    for (size_t i = 0; i < n; i++) {
        piece t = p[i];
        size_t cut = piece_cut(&v->addr[t.store], 0);
        while (t.len > 0) {
            /* ranges are keyed by their chunk's first cell (one division
             * per piece: they cost more than the rest of the loop) */
            uint64_t rem = cut ? t.soff % cut : 0, key = cut ? t.soff - rem : 0;
            uint32_t len = t.len;
            if (cut && rem + t.len > cut)
                len = (uint32_t)(cut - rem);
            size_t k = hit;
            /* the range of the last piece first: rows alternate between
             * a few */
            if (k >= ns || s[k].store != t.store || ckey[k] != key)
                for (k = 0; k < ns && (s[k].store != t.store ||
                                       ckey[k] != key);
                     k++)
                    ;
            if (k == ns) {
                if (ns == WIN_RANGES) {
                    raster_free(s);
                    return RASTER_OK;
                }
                ckey[ns] = key;
                s[ns++] = (span){.lo = t.soff, .hi = t.soff,
                                 .store = t.store};
            }
            if (t.soff < s[k].lo)
                s[k].lo = t.soff;
            if (t.soff + len > s[k].hi)
                s[k].hi = t.soff + len;
            s[k].covered += len;
            hit = k;
            t.soff += len;
            t.uoff += len;
            t.len -= len;
        }
    }
    for (size_t k = 0; k < ns; k++)
        if (s[k].hi - s[k].lo != s[k].covered) {
            raster_free(s);
            return RASTER_OK;
        }
    qsort(s, ns, sizeof *s, cmp_span);
    *out = s;
    *nout = ns;
    *dense = 1;
    return RASTER_OK;
}

/* The pieces p[0..n) of a window, every range read, copied from the stage
 * to the plane at `base`. Pieces are short (a tile's row: 200 bytes of
 * floats) and a read has a million of them, so the loop is kept to the
 * copy: elem a constant in each branch, no fill test. */
static inline void copy_pieces(unsigned char *base, const unsigned char *stage,
                               const wpiece *p, size_t n, size_t elem)
{
    for (size_t i = 0; i < n; i++)
        memcpy(base + p[i].uoff * elem, stage + p[i].src,
               (size_t)p[i].len * elem);
}

static void copy_window(unsigned char *base, const unsigned char *stage,
                        const wpiece *p, size_t n, size_t elem)
{
    switch (elem) {
    case 4: copy_pieces(base, stage, p, n, 4); break;
    case 8: copy_pieces(base, stage, p, n, 8); break;
    case 2: copy_pieces(base, stage, p, n, 2); break;
    case 1: copy_pieces(base, stage, p, n, 1); break;
    default: copy_pieces(base, stage, p, n, elem); break;
    }
}

/* The windows of one plane: each store range read with one pread into the
 * stage, its pieces copied out in the plane's order; a direct window read
 * into the plane. `flat` is the record's flat outer index. */
static int read_windows(xfer *x, size_t flat, size_t plane)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    size_t elem = v->elem;
    for (size_t k = 0; k < wp->nw; k++) {
        const window *w = &wp->w[k];
        int fill[WIN_RANGES] = {0};
        for (size_t r = w->r0; r < w->r1; r++) {
            const wrange *g = &wp->r[r];
            const store_addr *a = &v->addr[g->store];
            off_t off = store_offset(x, a, v->store_cells[g->store], flat,
                                     g->lo);
            if (off == -2)
                return raster_fail(RASTER_EIO, "reading %s: a chunk's byte "
                                   "offset was never looked up", v->name);
            if (off == -1) { /* never written: fill */
                fill[r - w->r0] = 1;
                continue;
            }
            size_t bytes = (size_t)(g->hi - g->lo) * elem;
            unsigned char *dst = w->direct
                                     ? plane_ptr(x, plane, wp->p[w->p0].uoff)
                                     : x->stage + g->at;
            int rc = fileio_pread(v->file->fd, dst, bytes, off, v->name);
            if (rc)
                return rc;
        }
        if (w->direct) {
            if (fill[0])
                fill_cells(plane_ptr(x, plane, wp->p[w->p0].uoff),
                           wp->p[w->p0].len, v->fill, elem);
            continue;
        }
        int any_fill = 0;
        for (size_t r = 0; r < w->r1 - w->r0; r++)
            any_fill |= fill[r];
        unsigned char *base = plane_ptr(x, plane, 0);
        if (!any_fill) {
            copy_window(base, x->stage, wp->p + w->p0, w->p1 - w->p0, elem);
            continue;
        }
        for (size_t i = w->p0; i < w->p1; i++) {
            const wpiece *q = &wp->p[i];
            unsigned char *dst = base + q->uoff * elem;
            if (fill[q->range])
                fill_cells(dst, q->len, v->fill, elem);
            else
                memcpy(dst, x->stage + q->src, (size_t)q->len * elem);
        }
    }
    return RASTER_OK;
}

/* ---- reads by windows from disk, behind the load ---------------------- */

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

static atomic_size_t behind_reads;

size_t chunkio_behind_reads(void) { return atomic_load(&behind_reads); }

static int cmp_unit(const void *a, const void *b)
{
    const unit *p = a, *q = b;
    return (p->off > q->off) - (p->off < q->off);
}

/* The fill value in the cells that range r of window k brings to plane
 * `plane` (never written). */
static void fill_range(const xfer *x, size_t k, size_t r, size_t plane)
{
    const wplan *wp = x->win;
    const window *w = &wp->w[k];
    const raster_var *v = x->v;
    if (w->direct) {
        fill_cells(plane_ptr(x, plane, wp->p[w->p0].uoff), wp->p[w->p0].len,
                   v->fill, v->elem);
        return;
    }
    const behind *bh = x->bh;
    for (size_t i = bh->first[r]; i < bh->first[r + 1]; i++)
        fill_cells(plane_ptr(x, plane, bh->p[i].uoff), bh->p[i].len, v->fill,
                   v->elem);
}

/* Notes the units of plane `plane` (flat outer index `flat`) in x->bh,
 * filling those never written at once. */
static int note_windows(xfer *x, size_t flat, size_t plane)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    behind *bh = x->bh;
    for (size_t k = 0; k < wp->nw; k++)
        for (size_t r = wp->w[k].r0; r < wp->w[k].r1; r++) {
            const wrange *g = &wp->r[r];
            off_t off = store_offset(x, &v->addr[g->store],
                                     v->store_cells[g->store], flat, g->lo);
            if (off == -2)
                return raster_fail(RASTER_EIO, "reading %s: a chunk's byte "
                                   "offset was never looked up", v->name);
            if (off == -1)
                fill_range(x, k, r, plane);
            else
                bh->u[bh->n++] = (unit){off, plane, (uint32_t)k,
                                        (uint32_t)r};
        }
    return RASTER_OK;
}

/* Reads unit u and copies its pieces out. */
static int move_unit(xfer *x, const unit *u)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    const window *w = &wp->w[u->win];
    const wrange *g = &wp->r[u->range];
    size_t bytes = (size_t)(g->hi - g->lo) * v->elem;
    if (w->direct)
        return fileio_pread(v->file->fd,
                            plane_ptr(x, u->plane, wp->p[w->p0].uoff), bytes,
                            u->off, v->name);
    int rc = fileio_pread(v->file->fd, x->stage + g->at, bytes, u->off,
                          v->name);
    if (rc == RASTER_OK) {
        const behind *bh = x->bh;
        copy_window(plane_ptr(x, u->plane, 0), x->stage,
                    bh->p + bh->first[u->range],
                    bh->first[u->range + 1] - bh->first[u->range], v->elem);
    }
    return rc;
}

/* One span for nb consecutive outer indices through netCDF. */
static int xfer_netcdf(xfer *x, const span *s, const size_t *start,
                       size_t plane0, size_t nb, int write)
{
    raster_var *v = x->v;
    int no = var_nouter(v), st;
    size_t elem = v->elem, width = (size_t)(s->hi - s->lo);
    size_t sstart[RASTER_MAX_DIMS + 1], scount[RASTER_MAX_DIMS + 1];
    for (int i = 0; i < no; i++) {
        sstart[i] = start[i];
        scount[i] = 1;
    }
    if (no > 0)
        scount[no - 1] = nb;
    sstart[no] = s->lo;
    scount[no] = width;
    int rc = file_netcdf(v->file); /* a lean file's stores get their ids */
    if (rc)
        return rc;
    int g = v->store_grp[s->store], id = v->store_var[s->store];
    if (!x->tmp && !(x->tmp = raster_malloc(x->tmp_bytes)))
        return raster_fail(RASTER_ENOMEM, "out of memory moving data of %s",
                           v->name);
    if (!write || s->covered < width) {
        /* A write with holes reads first; records past the current end of
         * an unlimited dimension do not exist yet and start as fill. */
        size_t exist = nb;
        for (int i = 0; i < no; i++) {
            if (start[i] >= x->full[i])
                exist = 0;
            else if (i == no - 1 && start[i] + nb > x->full[i])
                exist = x->full[i] - start[i];
        }
        if (exist > 0) {
            if (no > 0)
                scount[no - 1] = exist;
            st = nc_get_vara(g, id, sstart, scount, x->tmp);
            if (st != NC_NOERR)
                return raster_fail_nc(RASTER_ENETCDF, st, "reading %s: %s",
                                      v->name, nc_strerror(st));
            if (no > 0)
                scount[no - 1] = nb;
        }
        fill_cells(x->tmp + exist * width * elem, (nb - exist) * width,
                   v->fill, elem);
    }
    for (size_t b = 0; b < nb; b++) {
        unsigned char *row = x->tmp + b * width * elem;
        for (size_t i = s->p0; i < s->p1; i++) {
            const piece *p = &x->pieces[i];
            unsigned char *u = plane_ptr(x, plane0 + b, p->uoff);
            unsigned char *t = row + (p->soff - s->lo) * elem;
            if (write)
                memcpy(t, u, p->len * elem);
            else
                memcpy(u, t, p->len * elem);
        }
    }
    if (write) {
        size_t ckr = v->addr[s->store].ck_records;
        if (no > 0 && ckr > 1 &&
            (sstart[no - 1] % ckr || (nb % ckr && sstart[no - 1] + nb <
                                                      x->full[no - 1])))
            atomic_fetch_add(&split_chunk_writes, 1);
        st = nc_put_vara(g, id, sstart, scount, x->tmp);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s",
                                  v->name, nc_strerror(st));
        if (!v->store_ncw)
            v->store_ncw = raster_calloc(v->nregions + 1, 1);
        if (v->store_ncw) /* else small writes keep to this path */
            v->store_ncw[s->store] = 1;
    }
    return RASTER_OK;
}

/* 1 when piece p must be cut: it crosses a cut (cells; 0: none) or, a
 * strided piece, spans more than `stage` store cells. */
static int needs_cut(const piece *p, size_t cut, size_t stage)
{
    if (p->len == 0)
        return 0;
    uint64_t end = piece_send(p);
    if (cut && p->soff / cut != (end - 1) / cut)
        return 1;
    return p->rep > 0 && end - p->soff > stage;
}

/* Rows [r0, r1) of strided piece p as one piece. */
static piece rows_of(const piece *p, uint64_t r0, uint64_t r1)
{
    piece q = *p;
    q.soff += r0 * p->sstep;
    q.uoff += r0 * p->ustep;
    q.rep = (uint32_t)(r1 - r0 - 1);
    if (q.rep == 0)
        q.sstep = q.ustep = 0;
    return q;
}

/* Appends p to q (n of cap). */
static inline int put_piece(piece **q, size_t *n, size_t *cap, piece p)
{
    int rc = *n < *cap ? RASTER_OK : raster_grow(q, cap, *n + 1, sizeof **q);
    if (rc == RASTER_OK)
        (*q)[(*n)++] = p;
    return rc;
}

/* Appends plain piece p to q (n of cap), cut at multiples of `cut`. */
static int cut_plain(piece **q, size_t *n, size_t *cap, piece p, size_t cut)
{
    while (cut && p.len > 0 && p.soff / cut != (p.soff + p.len - 1) / cut) {
        uint32_t head = (uint32_t)(cut - p.soff % cut);
        int rc = put_piece(q, n, cap,
                           (piece){p.soff, p.uoff, p.store, head, 0, 0, 0});
        if (rc)
            return rc;
        p.soff += head;
        p.uoff += head;
        p.len -= head;
    }
    return put_piece(q, n, cap, p);
}

/* Appends strided piece p to q cut into pieces of rows that each lie
 * within one cut and one staging buffer; a row that cannot (it crosses
 * a cut, or is longer than a buffer) as a plain piece, itself cut. */
static int cut_strided(piece **q, size_t *n, size_t *cap, const piece *p,
                       size_t cut, size_t stage)
{
    uint64_t r0 = 0, rows = (uint64_t)p->rep + 1;
    while (r0 < rows) {
        piece g = rows_of(p, r0, r0 + 1);
        int rc;
        if (needs_cut(&g, cut, 0) || g.len > stage) {
            if ((rc = cut_plain(q, n, cap, g, cut)) != RASTER_OK)
                return rc;
            r0++;
            continue;
        }
        uint64_t r1 = r0 + 1;
        while (r1 < rows) {
            uint64_t e = p->soff + r1 * p->sstep + p->len;
            if ((cut && g.soff / cut != (e - 1) / cut) || e - g.soff > stage)
                break;
            r1++;
        }
        if ((rc = put_piece(q, n, cap, rows_of(p, r0, r1))) != RASTER_OK)
            return rc;
        r0 = r1;
    }
    return RASTER_OK;
}

/* Cuts the pieces at their stores' piece_cut, and strided pieces to fit
 * a staging buffer (make_spans). *out gets the new array (caller frees)
 * when any piece was cut; *pieces then points to it. */
static int split_pieces(const raster_var *v, piece **pieces, size_t *n,
                        int write, piece **out)
{
    size_t extra = 0, stage = STAGE_BYTES / v->elem;
    int strided = 0;
    *out = NULL;
    /* the plain pieces' cuts (as many new pieces), and whether a strided
     * piece needs cutting (those grow the array as they go) */
    for (size_t i = 0; i < *n; i++) {
        const piece *p = &(*pieces)[i];
        size_t cut = piece_cut(&v->addr[p->store], write);
        if (p->rep)
            strided |= needs_cut(p, cut, stage);
        else if (cut && p->len > 0)
            extra += (p->soff + p->len - 1) / cut - p->soff / cut;
    }
    if (extra == 0 && !strided)
        return RASTER_OK;
    size_t k = 0, cap = *n + extra;
    piece *q = raster_reallocarray(NULL, cap, sizeof *q);
    int rc = q ? RASTER_OK : RASTER_ENOMEM;
    for (size_t i = 0; i < *n && rc == RASTER_OK; i++) {
        const piece *p = &(*pieces)[i];
        size_t cut = piece_cut(&v->addr[p->store], write);
        if (!needs_cut(p, cut, stage) && k < cap)
            q[k++] = *p;
        else
            rc = p->rep ? cut_strided(&q, &k, &cap, p, cut, stage)
                        : cut_plain(&q, &k, &cap, *p, cut);
    }
    if (rc) {
        raster_free(q);
        return raster_fail(RASTER_ENOMEM, "out of memory moving data of %s",
                           v->name);
    }
    *out = q;
    *pieces = q;
    *n = k;
    return RASTER_OK;
}

/* Pieces as plain pieces only (each strided one's rows), for the movers
 * that take no strided pieces (windows, inflating, netCDF, writes).
 * *out gets the new array (caller frees). */
static int unstride(const raster_var *v, const piece *p, size_t n,
                    piece **out, size_t *nout)
{
    size_t total = 0;
    for (size_t i = 0; i < n && total < SIZE_MAX; i++)
        total = SIZE_MAX - total > (size_t)p[i].rep + 1
                    ? total + (size_t)p[i].rep + 1 : SIZE_MAX;
    piece *q = total < SIZE_MAX ? raster_reallocarray(NULL, total, sizeof *q)
                                : NULL;
    if (!q)
        return raster_fail(RASTER_ENOMEM, "out of memory moving data of %s",
                           v->name);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t r = 0; r <= p[i].rep; r++)
            q[k++] = (piece){p[i].soff + r * p[i].sstep,
                             p[i].uoff + r * p[i].ustep, p[i].store,
                             p[i].len, 0, 0, 0};
    *out = q;
    *nout = k;
    return RASTER_OK;
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
        if (no > 0 && id >= 0 && compress_filtered(&v->comp)) {
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

/* Finds the byte offset of chunk `lin` of store a (dataset did): an HDF5
 * B-tree lookup. 0 when HDF5 cannot describe it as plain bytes. */
static int lookup_one(const raster_var *v, store_addr *a, hid_t did,
                      size_t lin)
{
    int no = var_nouter(v);
    hsize_t off[RASTER_MAX_DIMS + 1];
    size_t rest = lin / a->nckc;
    off[no] = (hsize_t)((lin % a->nckc) * a->ckc);
    for (int d = no - 1; d >= 0; d--) {
        off[d] = (hsize_t)((rest % a->nck[d]) * a->ck[d]);
        rest /= a->nck[d];
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
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    for (size_t i = 0, j; i < nspans; i = j) {
        uint32_t st = spans[i].store;
        store_addr *a = &v->addr[st];
        for (j = i; j < nspans && spans[j].store == st; j++)
            ;
        if (!a->ok || !a->chunked || a->unknown == 0 || v->file->fd < 0)
            continue; /* later reads of a store find it all known */
        hid_t did = -1;
        int good = 1;
        if (!a->walked) { /* every offset at once, when chunkmap can */
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
                long lin = chunk_of(x->full, no, a, flat, spans[k].lo, &inner);
                if (lin >= 0 && a->addr[lin] == CHUNK_UNKNOWN) {
                    if (did < 0)
                        did = (hid_t)fileio_store(v, st);
                    good = did >= 0 && lookup_one(v, a, did, (size_t)lin);
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
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return RASTER_OK;
}

/* 1 when the span cache holds span s's first staged read at byte `off`
 * (read_staged): it is read without the disk, whatever the page cache
 * holds, and asking costs no system call. */
static int span_kept(const xfer *x, const span *s, off_t off)
{
    raster_var *v = x->v;
    uint64_t cells = s->hi - s->lo, cap = STAGE_BYTES / v->elem;
    size_t len = (size_t)(cells < cap ? cells : cap) * v->elem;
    if (!x->cache || off < 0 || len > FILEIO_KEPT_SPAN)
        return 0;
    if (!fileio_kept(v->file, off, len))
        return 0;
    fileio_kept_release(v->file);
    return 1;
}

static int page_cached(const xfer *x, off_t off)
{
    return fileio_page_cached(x->v->file->fd, off);
}

/* 1 when the request looks cached: the first bytes of the first, middle
 * and last large direct spans, in the box's first and last planes, are
 * all in the page cache. Then announcing the request to the kernel would
 * only cost system calls. Several probes, because the kernel's read-ahead
 * of HDF5's chunk index (which lies among the chunks) can bring one span's
 * start in while the rest is on disk. */
static int cached(xfer *x, const span *spans, size_t nspans,
                  const size_t *ostart, const size_t *ocount,
                  const ptrdiff_t *ostride)
{
    raster_var *v = x->v;
    size_t n = 0, big[3], nbig = 0;
    for (size_t i = 0; i < nspans; i++)
        n += announced(x, &spans[i]);
    if (n == 0 || v->file->fd < 0)
        return 1; /* nothing would be announced anyway */
    for (size_t i = 0, k = 0; i < nspans; i++) {
        if (!announced(x, &spans[i]))
            continue;
        if (k == 0 || k == n / 2 || k == n - 1)
            big[nbig++] = i;
        k++;
    }
    int no = var_nouter(v);
    size_t flat[2] = {0, 0};
    for (int d = 0; d < no; d++) {
        size_t step = ostride ? (size_t)ostride[d] : 1;
        flat[0] = flat[0] * x->full[d] + ostart[d];
        flat[1] = flat[1] * x->full[d] + ostart[d] + (ocount[d] - 1) * step;
    }
    for (size_t k = 0; k < nbig; k++)
        for (int e = 0; e < 2; e++) {
            const span *s = &spans[big[k]];
            const store_addr *a = &v->addr[s->store];
            off_t off = store_offset(x, a, v->store_cells[s->store], flat[e],
                                     s->lo);
            if (!span_kept(x, s, off) && !page_cached(x, off))
                return 0;
        }
    return 1;
}

/* Faults in every page of the read's output, keeping its bytes (the
 * caller may have put fill values there). Cold reads do this after
 * announcing their spans, so that the first touch of fresh pages (zeroing
 * them; on a virtual machine, the host backing them, which took up to
 * 0.5 s for 228 MB on the bench VM) overlaps the disk instead of
 * following each pread's wait (docs/PERFORMANCE.md). Each page is faulted
 * in for writing at once: reading it first maps the shared zero page,
 * and the write that replaces it must then flush the other threads' TLBs
 * (an interprocessor interrupt per page, which on the bench VM made a
 * cold read of 1 GB into fresh memory take 2.5 s instead of 1). */
static void prefault(unsigned char *buf, size_t bytes)
{
    if (bytes == 0)
        return;
    long page = sysconf(_SC_PAGESIZE);
    size_t step = page > 0 ? (size_t)page : 4096;
#ifdef MADV_POPULATE_WRITE
    uintptr_t lo = (uintptr_t)buf & ~(uintptr_t)(step - 1);
    uintptr_t hi = ((uintptr_t)buf + bytes + step - 1) &
                   ~(uintptr_t)(step - 1);
    if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0)
        return; /* Linux 5.14 and later */
#endif
    for (size_t i = 0; i < bytes; i += step)
        (void)__atomic_fetch_add(buf + i, 0, __ATOMIC_RELAXED);
    (void)__atomic_fetch_add(buf + bytes - 1, 0, __ATOMIC_RELAXED);
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
            rc = pass == 1 ? read_windows(x, flat + b, plane0 + b)
                           : note_windows(x, flat + b, plane0 + b);
        for (size_t i = 0; i < nspans && rc == RASTER_OK &&
                           !(pass > 0 && x->win); i++) {
            int direct = !write && v->addr[spans[i].store].ok &&
                         v->file->fd >= 0;
            if (pass == 0) {
                if (direct)
                    announce(x, &spans[i], flat, nb);
            } else {
                rc = direct ? read_direct(x, &spans[i], flat, plane0, nb)
                            : xfer_netcdf(x, &spans[i], start, plane0, nb,
                                          write);
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

/* A read by windows from disk (above): its units noted, sorted by file
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
                                  bh.n, 1);
    prefault(x->buf, planes * x->plane_cells * v->elem);
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
        rc = move_unit(x, &bh.u[i]);
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

/* ---- large reads on several threads ------------------------------------ */

/* Fast-path reads of at least this many bytes are split among threads by
 * plane: the copies out of the page cache (and the first touch of the
 * output's pages) then run on several cores. */
#define THREAD_MIN_BYTES ((size_t)16 << 20)
#define MAX_READ_THREADS 16

static atomic_int threads_set; /* raster_set_threads(); 0: the default */

void chunkio_set_threads(int n) { atomic_store(&threads_set, n); }

/* Online cores, asked once: glibc reads /sys for it (three system calls) */
static long online_cores(void)
{
    static atomic_long cores_seen;
    long cores = atomic_load_explicit(&cores_seen, memory_order_relaxed);
    if (cores == 0) {
        cores = sysconf(_SC_NPROCESSORS_ONLN);
        cores = cores > 0 ? cores : 1;
        atomic_store_explicit(&cores_seen, cores, memory_order_relaxed);
    }
    return cores;
}

/* Threads for one large read: raster_set_threads(), else $RASTER_THREADS
 * (1 = none), else 2 where there are 2 cores or more; 1 in the MPI flavour,
 * whose ranks already share the cores. */
static int read_threads(void)
{
    int set = atomic_load(&threads_set);
    if (set > 0)
        return set > MAX_READ_THREADS ? MAX_READ_THREADS : set;
    const char *e = getenv("RASTER_THREADS");
    if (e && *e) {
        char *end;
        long n = strtol(e, &end, 10);
        if (*end == '\0' && n >= 1)
            return n > MAX_READ_THREADS ? MAX_READ_THREADS : (int)n;
        return 1; /* not a count: no threads (the shim warns) */
    }
#ifdef RASTER_MPI
    return 1;
#else
    return online_cores() >= 2 ? 2 : 1;
#endif
}

/* 1 when the read threads were set (raster_set_threads, $RASTER_THREADS) */
static int threads_chosen(void)
{
    const char *e = getenv("RASTER_THREADS");
    return atomic_load(&threads_set) > 0 || (e && *e);
}

static atomic_int idle_set = -2; /* chunkio_set_idle */

void chunkio_set_idle(int n) { atomic_store(&idle_set, n); }

/* Cores nothing is running on at this instant (the runnable count of
 * /proc/loadavg, the caller included), -1 when unknown. A helper of a
 * thin read pays only on an idle core: on a busy one it took turns with
 * the caller or another program, and the read was 8% slower than on one
 * thread (docs/PERFORMANCE.md). */
static int idle_cores(void)
{
    int forced = atomic_load(&idle_set);
    if (forced >= -1)
        return forced;
    char b[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    (void)close(fd);
    if (n <= 0)
        return -1;
    b[n] = '\0';
    char *p = b, *end; /* "0.50 0.40 0.30 2/345 6789": the fourth field */
    for (int f = 0; f < 3 && p; f++)
        if ((p = strchr(p, ' ')) != NULL)
            p++;
    if (!p)
        return -1;
    long running = strtol(p, &end, 10);
    if (end == p || *end != '/' || running < 1)
        return -1;
    long idle = online_cores() - running;
    return idle > 0 ? (int)idle : 0;
}

/* 1 when a read is worth threads: every span on the fast path, and bytes
 * enough to pay for starting them. */
static int threads_pay(const xfer *x, const span *spans, size_t nspans,
                       const size_t *ocount)
{
    const raster_var *v = x->v;
    size_t planes = 1, cells = 0;
    for (int i = 0; i < var_nouter(v); i++)
        planes *= ocount[i];
    for (size_t i = 0; i < nspans; i++) {
        if (!v->addr[spans[i].store].ok || v->file->fd < 0)
            return 0;
        cells += spans[i].covered;
    }
    return planes >= 2 && cells * v->elem * planes >= THREAD_MIN_BYTES;
}

/* Reads of many short spans (a thin band: a pread of about 10 KB per tile
 * and plane) take threads from this many bytes pread on: their time is the
 * kernel's, a system call and a page-cache copy per span, which 2 cores
 * halve; a thread's start costs about what 0.3 MB of such reads do. */
#define THREAD_MIN_STAGED ((size_t)2 << 20)
#define THREAD_MIN_PREADS 128
/* Spans a thread takes at a time in such a read: the caller's wait for a
 * helper's last turn is about half a turn (16 of the band's spans: about
 * 10 us; a plane of them, 48, made it 25-50 us a band). */
#define STAGED_TURN 16
static atomic_size_t staged_min_set[2]; /* chunkio_set_staged_min; 0: above */

void chunkio_set_staged_min(size_t bytes, size_t reads)
{
    atomic_store(&staged_min_set[0], bytes);
    atomic_store(&staged_min_set[1], reads);
}

/* 1 when a read of many staged spans is worth threads: every span on the
 * fast path, none from the span cache (a handle's repeated thin reads copy
 * a few values out of memory), and enough preads and bytes. */
static int staged_pay(const xfer *x, const span *spans, size_t nspans,
                      const size_t *ocount)
{
    const raster_var *v = x->v;
    size_t planes = 1, bytes = 0, reads = 0;
    if (x->cache || x->win || v->file->fd < 0)
        return 0;
    for (int i = 0; i < var_nouter(v); i++)
        planes *= ocount[i];
    for (size_t i = 0; i < nspans; i++) {
        const span *s = &spans[i];
        if (!v->addr[s->store].ok)
            return 0;
        if (s->strided ||
            s->covered * v->elem < STAGE_PIECE_BYTES * (s->p1 - s->p0)) {
            bytes += (size_t)(s->hi - s->lo) * v->elem;
            reads++;
        }
    }
    size_t min_bytes = atomic_load(&staged_min_set[0]);
    size_t min_reads = atomic_load(&staged_min_set[1]);
    return planes >= 2 &&
           reads * planes >= (min_reads ? min_reads : THREAD_MIN_PREADS) &&
           bytes * planes >= (min_bytes ? min_bytes : THREAD_MIN_STAGED);
}

typedef struct worker {
    xfer x;                    /* its own stage, iovecs and junk */
    const span *spans;
    size_t nspans;
    const size_t *flat, *plane; /* the planes to read: [0, np) */
    size_t np;
    size_t per;                /* spans a turn: a plane's, or fewer */
    atomic_size_t *next;       /* the next turn nobody has taken */
    int rc;
    char msg[512];             /* the error message, from its thread */
} worker;

/* A read thread: takes turns (a plane's spans, or fewer) one at a time
 * until none is left, so that a thread whose vCPU the host holds back
 * reads fewer planes instead of holding the read back (an even split
 * waited for the slower half). */
static void *work(void *arg)
{
    worker *w = arg;
    const xfer *x = &w->x;
    /* a turn: spans [g * per, (g + 1) * per) of plane i */
    size_t groups = w->nspans ? (w->nspans + w->per - 1) / w->per : 1;
    for (size_t u; w->rc == RASTER_OK &&
                   (u = atomic_fetch_add(w->next, 1)) < w->np * groups;) {
        size_t i = u / groups, g = u % groups;
        if (x->fault && g == 0)
            prefault(plane_ptr(x, w->plane[i], 0),
                     x->plane_cells * x->v->elem);
        if (x->win)
            w->rc = read_windows(&w->x, w->flat[i], w->plane[i]);
        size_t k1 = (g + 1) * w->per < w->nspans ? (g + 1) * w->per
                                                 : w->nspans;
        for (size_t k = g * w->per; !x->win && k < k1 && w->rc == RASTER_OK;
             k++)
            w->rc = read_direct(&w->x, &w->spans[k], w->flat[i],
                                w->plane[i], 1);
    }
    if (w->rc)
        snprintf(w->msg, sizeof w->msg, "%s", raster_errmsg());
    return NULL;
}

/* A helper thread's hold on its worker. The thread is detached: when it
 * has not started by the time the caller has taken every plane (the other
 * core busy), the caller cancels it instead of waiting for the scheduler
 * to run it (a join then cost up to a time slice, more than a thin band's
 * whole read); a thread that claimed its worker is waited for. The slot
 * outlives the read until both sides let go of it. */
enum { SLOT_POSTED, SLOT_CLAIMED, SLOT_CANCELLED };
typedef struct wslot {
    atomic_int state;
    atomic_int refs; /* 2: the thread and the caller */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    worker *w; /* touched only once claimed */
} wslot;

static atomic_int helpers_mode; /* chunkio_set_helpers */

void chunkio_set_helpers(int mode) { atomic_store(&helpers_mode, mode); }

static void slot_release(wslot *sl)
{
    if (atomic_fetch_sub(&sl->refs, 1) != 1)
        return;
    pthread_cond_destroy(&sl->cv);
    pthread_mutex_destroy(&sl->mu);
    raster_free(sl);
}

static void *work_thread(void *arg)
{
    wslot *sl = arg;
    int posted = SLOT_POSTED;
    if (atomic_compare_exchange_strong(&sl->state, &posted, SLOT_CLAIMED)) {
        fileio_thread_quiet();
        work(sl->w);
        pthread_mutex_lock(&sl->mu);
        sl->done = 1;
        pthread_cond_signal(&sl->cv);
        pthread_mutex_unlock(&sl->mu);
    }
    slot_release(sl);
    return NULL;
}

/* A cancelled helper may run after the read returned, in this library's
 * code: the library is pinned (never unmapped by dlclose) before the first
 * one starts. Statically linked, this finds the program: harmless. */
static void pin_library(void)
{
    Dl_info info;
    if (dladdr((void *)pin_library, &info) && info.dli_fname)
        (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* A detached thread of team t on worker w: its slot, or NULL (no
 * thread). */
static wslot *slot_start(thread_team *t, worker *w)
{
    static pthread_once_t pinned = PTHREAD_ONCE_INIT;
    (void)pthread_once(&pinned, pin_library);
    wslot *sl = raster_calloc(1, sizeof *sl);
    if (!sl)
        return NULL;
    atomic_init(&sl->state, SLOT_POSTED);
    atomic_init(&sl->refs, 2);
    sl->w = w;
    int ok = pthread_mutex_init(&sl->mu, NULL) == 0;
    if (ok && pthread_cond_init(&sl->cv, NULL) != 0) {
        pthread_mutex_destroy(&sl->mu);
        ok = 0;
    }
    if (!ok) {
        raster_free(sl);
        return NULL;
    }
    pthread_t tid;
    if (atomic_load(&helpers_mode) == 2) /* a test: as if never started */
        atomic_store(&sl->state, SLOT_CANCELLED);
    int started = thread_team_start(t, &tid, 1, work_thread, sl) == 0;
    if (!started) {
        atomic_store(&sl->refs, 1);
        slot_release(sl);
        return NULL;
    }
    return sl;
}

/* After the caller's own share: 1 when the slot's thread had claimed its
 * worker (now finished), 0 when it was cancelled before it started. */
static int slot_finish(wslot *sl)
{
    int state = SLOT_POSTED, ran = 1;
    if (atomic_load(&helpers_mode) == 1)
        state = SLOT_CLAIMED; /* a test: waited for, whenever it starts */
    else if (atomic_compare_exchange_strong(&sl->state, &state,
                                            SLOT_CANCELLED))
        state = SLOT_CANCELLED;
    if (state == SLOT_CANCELLED)
        ran = 0;
    else {
        pthread_mutex_lock(&sl->mu);
        while (!sl->done)
            pthread_cond_wait(&sl->cv, &sl->mu);
        pthread_mutex_unlock(&sl->mu);
    }
    slot_release(sl);
    return ran;
}

/* Reads every plane of the outer box on n threads (the caller's included),
 * each with buffers of its own, each taking the next turn (`per` spans of
 * a plane; a whole plane by windows) in turn. Returns -1 (nothing read)
 * when the plan cannot be made, else a status. */
static int read_threaded(const xfer *x0, const span *spans, size_t nspans,
                         const size_t *ostart, const size_t *ocount,
                         const ptrdiff_t *ostride, int n, size_t per)
{
    raster_var *v = x0->v;
    int no = var_nouter(v);
    size_t np = 1;
    for (int i = 0; i < no; i++)
        np *= ocount[i];
    size_t *flat = raster_reallocarray(NULL, np, 2 * sizeof *flat);
    worker *w = raster_calloc((size_t)n, sizeof *w);
    wslot *slot[MAX_READ_THREADS] = {NULL};
    int rc = RASTER_OK;
    atomic_size_t next = 0;
    if (!flat || !w) {
        raster_free(flat);
        raster_free(w);
        return -1;
    }
    size_t *plane = flat + np;
    for (size_t p = 0; p < np; p++) { /* plane p: its flat outer index */
        size_t rest = p, f = 0, idx[RASTER_MAX_DIMS];
        for (int i = no - 1; i >= 0; i--) {
            idx[i] = rest % ocount[i];
            rest /= ocount[i];
        }
        for (int i = 0; i < no; i++)
            f = f * x0->full[i] + ostart[i] +
                idx[i] * (size_t)(ostride ? ostride[i] : 1);
        flat[p] = f;
        plane[p] = p;
    }
    /* a helper's stage: what read_staged reads at once, at most (a thin
     * band's span: 10 KB, where a fresh 1 MiB cost the helper a mapping) */
    size_t need = stage_bytes(x0->win);
    if (!x0->win) {
        need = 64;
        for (size_t i = 0; i < nspans; i++) {
            size_t b = (size_t)(spans[i].hi - spans[i].lo) * x0->v->elem;
            b = b < STAGE_BYTES ? b : STAGE_BYTES;
            need = b > need ? b : need;
        }
    }
    for (int t = 0; t < n; t++) {
        w[t].x = *x0;
        w[t].x.iov = NULL;
        w[t].x.iov_cap = 0;
        w[t].x.tmp = NULL;
        w[t].x.junk = raster_malloc(GAP_BYTES + 64);
        /* the caller's own stage serves its share */
        w[t].x.stage = t == 0 ? x0->stage : raster_scratch(need, 1);
        w[t].spans = spans;
        w[t].nspans = nspans;
        w[t].flat = flat;
        w[t].plane = plane;
        w[t].np = np;
        /* windows go a plane at a time */
        w[t].per = x0->win || per == 0 || per > nspans ? nspans : per;
        if (w[t].per == 0)
            w[t].per = 1;
        w[t].next = &next;
        if (!w[t].x.junk || !w[t].x.stage)
            rc = -1;
    }
    thread_team team;
    thread_team_begin(&team);
    for (int t = 1; t < n && rc == RASTER_OK; t++)
        slot[t] = slot_start(&team, &w[t]);
    if (rc == RASTER_OK)
        work(&w[0]);
    thread_team_end(&team);
    if (rc == RASTER_OK) {
        for (int t = 1; t < n; t++) {
            /* no thread, or one cancelled: nothing left, or its error */
            if (!slot[t] || !slot_finish(slot[t]))
                work(&w[t]);
            else
                atomic_fetch_add(&threads_ran, 1);
        }
        for (int t = 0; t < n && rc == RASTER_OK; t++)
            if (w[t].rc)
                rc = raster_fail(w[t].rc, "%s", w[t].msg);
    }
    for (int t = 0; t < n; t++) {
        raster_free(w[t].x.junk);
        if (t > 0)
            raster_scratch_free(w[t].x.stage);
        raster_free(w[t].x.iov);
    }
    raster_free(w);
    raster_free(flat);
    return rc;
}

/* ---- filtered stores: chunks read and inflated by raster --------------- */

/* A plane of the box as an inflated chunk serves it: its place in the
 * caller's buffer and its record's position inside the chunk. `key` is
 * the chunk's index along the outer dimensions, SIZE_MAX beyond what the
 * store holds. */
typedef struct iplane {
    size_t key, plane, inner;
} iplane;

/* One chunk to inflate: spans [s0, s1) of one cell chunk of one store,
 * for planes pl[0..np) (all of one key). */
typedef struct ijob {
    size_t s0, s1, np;
    const iplane *pl;
} ijob;

typedef struct ictx {
    const xfer *x;
    const span *spans;
    const ijob *jobs;
    size_t njobs;
    atomic_size_t next;
    atomic_int stop;
} ictx;

static int cmp_iplane(const void *a, const void *b)
{
    const iplane *p = a, *q = b;
    if (p->key != q->key)
        return (p->key > q->key) - (p->key < q->key);
    return (p->plane > q->plane) - (p->plane < q->plane);
}

/* Byte offset in the file of job j's chunk, -1 when it holds nothing
 * (never written, or beyond the store), -2 when not looked up (a bug). */
static int64_t job_chunk(const xfer *x, const span *spans, const ijob *j,
                         size_t *lin)
{
    const store_addr *a = &x->v->addr[spans[j->s0].store];
    if (j->pl[0].key == SIZE_MAX)
        return -1;
    *lin = j->pl[0].key * a->nckc + (size_t)(spans[j->s0].lo / a->ckc);
    int64_t off = a->addr[*lin];
    return off == CHUNK_UNKNOWN ? -2 : off < 0 ? -1 : off;
}

/* Inflates job j's chunk once and copies its pieces into every plane it
 * serves (a shuffled chunk's unshuffled straight into them). */
static int run_ijob(const ictx *c, const ijob *j, unfilter *u)
{
    const xfer *x = c->x;
    raster_var *v = x->v;
    size_t elem = v->elem, lin = 0;
    const span *s0 = &c->spans[j->s0];
    const store_addr *a = &v->addr[s0->store];
    int64_t off = job_chunk(x, c->spans, j, &lin);
    if (off == -2)
        return raster_fail(RASTER_EINTERNAL, "reading %s: a chunk's byte "
                           "offset was never looked up", v->name);
    if (off < 0) { /* fill */
        for (size_t p = 0; p < j->np; p++)
            for (size_t k = j->s0; k < j->s1; k++)
                for (size_t i = c->spans[k].p0; i < c->spans[k].p1; i++)
                    fill_cells(plane_ptr(x, j->pl[p].plane,
                                         x->pieces[i].uoff),
                               x->pieces[i].len, v->fill, elem);
        return RASTER_OK;
    }
    size_t bytes = elem * a->ckc, csize = a->csize[lin];
    for (int d = 0; d < var_nouter(v); d++)
        bytes *= a->ck[d];
    unsigned char *in = unfilter_input(u, csize);
    if (!in)
        return RASTER_ENOMEM;
    int rc = fileio_pread(v->file->fd, in, csize, (off_t)off, v->name);
    const unsigned char *chunk = NULL;
    int shuffled = 0;
    if (rc == RASTER_OK)
        rc = unfilter_chunk_keep_shuffle(u, a->filt, a->nfilt, elem, bytes,
                                         csize, v->name, &chunk, &shuffled);
    if (rc)
        return rc;
    atomic_fetch_add(&chunks_inflated, 1);
    uint64_t first = (s0->lo / a->ckc) * a->ckc; /* the chunk's first cell */
    for (size_t p = 0; p < j->np; p++) {
        size_t rec = j->pl[p].inner * a->ckc; /* the record's first value */
        for (size_t k = j->s0; k < j->s1; k++)
            for (size_t i = c->spans[k].p0, e; i < c->spans[k].p1; i = e) {
                const piece *q = &x->pieces[i];
                /* pieces that follow on in both the store and the plane
                 * (a packed region's rows) taken as one */
                size_t len = q->len;
                for (e = i + 1; e < c->spans[k].p1 &&
                                x->pieces[e].soff == q->soff + len &&
                                x->pieces[e].uoff == q->uoff + len;
                     e++)
                    len += x->pieces[e].len;
                unsigned char *dst = plane_ptr(x, j->pl[p].plane, q->uoff);
                size_t at = rec + (size_t)(q->soff - first);
                /* a shuffled chunk unshuffled straight into place */
                if (shuffled)
                    unfilter_unshuffle(dst, chunk, elem, bytes / elem, at,
                                       len);
                else
                    copy_cells(dst, chunk + at * elem, len * elem);
            }
    }
    return RASTER_OK;
}

typedef struct iworker {
    ictx *c;
    int rc, nc;
    char msg[512];
} iworker;

/* An inflater state: an idle one of the file's, or a new one. */
static unfilter *inflater_take(raster_file *f)
{
    unfilter *u = NULL;
    lazy_lock(f);
    if (f->ninflaters > 0)
        u = f->inflaters[--f->ninflaters];
    lazy_unlock(f);
    return u ? u : unfilter_new();
}

static void inflater_give(raster_file *f, unfilter *u)
{
    if (!u)
        return;
    lazy_lock(f);
    if (f->ninflaters < FILE_INFLATERS) {
        f->inflaters[f->ninflaters++] = u;
        u = NULL;
    }
    lazy_unlock(f);
    unfilter_free(u);
}

static void *iwork(void *arg)
{
    iworker *w = arg;
    ictx *c = w->c;
    unfilter *u = inflater_take(c->x->v->file);
    if (!u)
        w->rc = raster_fail(RASTER_ENOMEM, "out of memory inflating %s",
                            c->x->v->name);
    for (size_t i; w->rc == RASTER_OK && !atomic_load(&c->stop) &&
                   (i = atomic_fetch_add(&c->next, 1)) < c->njobs;)
        w->rc = run_ijob(c, &c->jobs[i], u);
    if (w->rc) {
        atomic_store(&c->stop, 1);
        w->nc = raster_nc_status();
        snprintf(w->msg, sizeof w->msg, "%s", raster_errmsg());
    }
    inflater_give(c->x->v->file, u);
    return NULL;
}

static void *iwork_thread(void *arg)
{
    fileio_thread_quiet();
    return iwork(arg);
}

/* Decoded bytes from which a read's chunks are inflated on several
 * threads: below, starting one costs more than it saves. */
#define INFLATE_THREAD_BYTES ((size_t)256 << 10)

/* Reads spans[0..nspans) (all of stores with a->inflate) for every plane
 * of the outer box: each chunk they touch read with one pread, inflated
 * once, and its pieces copied to every plane it holds, on raster's read
 * threads (each with its own decompressor and buffers; no HDF5 or netCDF
 * call). The byte offsets were looked up before (lookup_chunks). */
static int read_inflated(xfer *x, const span *spans, size_t nspans,
                         const size_t *ostart, const size_t *ocount,
                         const ptrdiff_t *ostride)
{
    raster_var *v = x->v;
    int no = var_nouter(v), rc = RASTER_OK;
    size_t np = 1, nstores = 0, njobs = 0, jcap = 0;
    for (int i = 0; i < no; i++)
        np *= ocount[i];
    for (size_t i = 0; i < nspans; i++)
        nstores += i == 0 || spans[i].store != spans[i - 1].store;
    iplane *pl = raster_reallocarray(NULL, np, nstores * sizeof *pl);
    ijob *jobs = NULL;
    if (!pl)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    size_t decoded = 0;
    for (size_t i = 0, j, st = 0; i < nspans; i = j, st++) {
        const store_addr *a = &v->addr[spans[i].store];
        for (j = i; j < nspans && spans[j].store == spans[i].store; j++)
            ;
        /* the store's planes, grouped by the chunk (along the outer
         * dimensions) that holds them */
        iplane *sp = pl + st * np;
        size_t idx[RASTER_MAX_DIMS] = {0};
        for (size_t p = 0; p < np; p++) {
            size_t flat = 0, inner = 0;
            for (int d = 0; d < no; d++)
                flat = flat * x->full[d] + ostart[d] +
                       idx[d] * (size_t)(ostride ? ostride[d] : 1);
            long lin = chunk_of(x->full, no, a, flat, 0, &inner);
            sp[p] = (iplane){lin < 0 ? SIZE_MAX : (size_t)lin / a->nckc, p,
                             inner};
            for (int d = no - 1; d >= 0; d--) { /* odometer */
                if (++idx[d] < ocount[d])
                    break;
                idx[d] = 0;
            }
        }
        qsort(sp, np, sizeof *sp, cmp_iplane);
        size_t bytes = v->elem * a->ckc;
        for (int d = 0; d < no; d++)
            bytes *= a->ck[d];
        /* a job per cell chunk and outer chunk */
        for (size_t k = i, k1; k < j; k = k1) {
            for (k1 = k; k1 < j && spans[k1].lo / a->ckc ==
                                       spans[k].lo / a->ckc; k1++)
                ;
            for (size_t p = 0, q; p < np; p = q) {
                for (q = p; q < np && sp[q].key == sp[p].key; q++)
                    ;
                if ((rc = raster_grow(&jobs, &jcap, njobs + 1,
                                      sizeof *jobs)) != RASTER_OK)
                    goto done;
                jobs[njobs++] = (ijob){k, k1, q - p, sp + p};
                decoded += bytes;
            }
        }
    }
    /* from disk: the compressed chunks announced to the kernel first */
    size_t lin;
    int64_t first = -1;
    for (size_t i = 0; i < njobs && first < 0; i++)
        first = job_chunk(x, spans, &jobs[i], &lin);
    if (first >= 0 && !page_cached(x, (off_t)first)) {
        for (size_t i = 0; i < njobs; i++) {
            int64_t off = job_chunk(x, spans, &jobs[i], &lin);
            if (off >= 0 && raster_grow(&x->ann, &x->ann_cap, x->nann + 1,
                                        sizeof *x->ann) == RASTER_OK)
                memcpy(x->ann[x->nann++],
                       ((off_t[2]){(off_t)off,
                                   (off_t)v->addr[spans[jobs[i].s0].store]
                                       .csize[lin]}),
                       sizeof *x->ann);
        }
        bring_in_noted(x);
    }
    ictx c = {.x = x, .spans = spans, .jobs = jobs, .njobs = njobs};
    int n = read_threads();
    if (n > (int)njobs)
        n = (int)njobs;
    if (decoded < INFLATE_THREAD_BYTES || n < 1)
        n = 1;
    iworker w[MAX_READ_THREADS] = {{0}};
    pthread_t tid[MAX_READ_THREADS];
    int started[MAX_READ_THREADS] = {0};
    for (int t = 0; t < n; t++)
        w[t].c = &c;
    thread_team team = {0};
    if (n > 1)
        thread_team_begin(&team);
    for (int t = 1; t < n; t++)
        started[t] =
            thread_team_start(&team, &tid[t], 0, iwork_thread, &w[t]) == 0;
    iwork(&w[0]);
    thread_team_end(&team);
    for (int t = 1; t < n; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    /* a thread that did not start: its share went to the others */
    for (int t = 0; t < n && rc == RASTER_OK; t++)
        if (w[t].rc)
            rc = raster_fail_nc(w[t].rc, w[t].nc, "%s", w[t].msg);
done:
    raster_free(jobs);
    raster_free(pl);
    return rc;
}

/* ---- small writes straight to HDF5 -------------------------------------- */

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
    if (rc == RASTER_OK &&
        (rc = raster_grow(&q->e, &q->cap, q->n + n, sizeof *q->e)) ==
            RASTER_OK)
        rc = raster_grow(&q->vals, &q->vcap, (q->cells + cells) * v->elem,
                         1);
    if (rc == RASTER_OK) {
        uint64_t plane = plane_index(v, ostart);
        for (size_t k = 0; k < n; k++) {
            q->e[q->n] = (pent){plane, p[k].soff, q->cells, q->n, p[k].store,
                                p[k].len};
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

int chunkio_hold(raster_var *v, const piece *p, size_t n,
                 const size_t *ostart, const void *buf)
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


/* *done = 1 when written here; 0 (nothing written) to go the usual way. */
static int write_small(raster_var *v, const piece *p, size_t n,
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
    size_t nst = 0;
    for (size_t k = 0; k < n; k++)
        nst += k == 0 || p[k].store != p[k - 1].store;
    hid_t *space = raster_reallocarray(NULL, nst, sizeof *space);
    unsigned char *tmp = raster_malloc(bytes);
    if (!space || !tmp) {
        raster_free(space);
        raster_free(tmp);
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
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
                        ? (hid_t)fileio_store_kept(v, p[a].store) : -1;
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
        for (size_t i = 0; i < nst; i++)
            if (space[i] >= 0)
                H5Sclose(space[i]);
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
        raster_free(space);
        raster_free(tmp);
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
     * selection (outer indices, then cells ascending: sort_pieces) */
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
                H5Dwrite((hid_t)v->store_did[p[a].store], mtype, ms,
                         space[i], H5P_DEFAULT, tmp) < 0)
                rc = raster_fail_nc(RASTER_ENETCDF, NC_EHDFERR,
                                    "writing %s: HDF5 could not write a "
                                    "store", v->name);
            if (ms >= 0)
                H5Sclose(ms);
            k = e;
        }
        a = b;
    }
    for (size_t i = 0; i < nst; i++)
        if (space[i] >= 0)
            H5Sclose(space[i]);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    raster_free(space);
    raster_free(tmp);
    if (fits && rc == RASTER_OK) {
        atomic_fetch_add(&small_writes, 1);
        *done = 1;
    }
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
    /* strided pieces move on the direct path only (read_staged); a large
     * scattered read (windows) or any store read otherwise gets their
     * rows as plain pieces */
    size_t cells = 0;
    int strided = 0, other = write || v->file->fd < 0;
    for (size_t i = 0; i < npieces; i++) {
        const store_addr *a = &v->addr[pieces[i].store];
        cells += piece_cells(&pieces[i]);
        if (pieces[i].rep) {
            strided = 1;
            other |= !a->ok || a->inflate;
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
    if ((rc = unstride(v, pieces, npieces, &rows, &nrows)) != RASTER_OK)
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
    /* a large scattered read: windows (above) */
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
        rc = dense_spans(v, pieces, npieces, &spans, &nspans, &dense);
        if (rc == RASTER_OK && dense)
            rc = plan_windows(v, pieces, npieces, spans, nspans,
                              WIN_STAGE_BYTES, &wp, &use_win);
        if (rc || !use_win) {
            wplan_free(&wp);
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
        rc = split_pieces(v, &pieces, &npieces, write, &split);
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
        rc = sort_pieces(pieces, npieces);
    if (rc) {
        raster_free(copy);
        raster_free(split);
        return rc;
    }
    if (write) {
        int done;
        rc = write_small(v, pieces, npieces, ostart, ocount, ostride, buf,
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
        wplan_free(&wp);
        return rc;
    }
    /* whole store chunks straight to the file; the rest through netCDF */
    if (write) {
        rc = direct_write(v, pieces, &npieces, ostart, ocount, ostride, buf,
                          plane_cells, read_threads() > 1 ? 2 : 1);
        if (rc || npieces == 0) {
            raster_free(split);
            return rc;
        }
    }
    if (!use_win) {
        rc = make_spans(v, pieces, npieces, write, &spans, &nspans);
        if (rc == RASTER_OK && order)
            rc = plan_windows(v, order, split ? ncaller : npieces, spans,
                              nspans, WIN_STAGE_BYTES, &wp, &use_win);
        if (!use_win)
            wplan_free(&wp);
    }
    raster_free(copy);
    if (rc) {
        raster_free(spans);
        raster_free(split);
        wplan_free(&wp);
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
    x.stage = write ? NULL : raster_scratch(stage_bytes(x.win), 1);
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
    /* a write: the records that may exist, without asking netCDF */
    rc = write ? var_write_shape(v, x.full) : var_outer_shape(v, x.full);
    if (rc)
        goto done;
    if (!write &&
        (rc = lookup_chunks(&x, spans, nspans, ostart, ocount, ostride)))
        goto done;
    /* read-phase timing: planning ends here when stores are inflated,
     * else after the page cache probe (cached) below */
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
            rc = read_inflated(&x, fs, nf, ostart, ocount, ostride);
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
            ndirect += direct_span(v, &spans[i]);
        x.ann_short = ndirect * planes >= ANNOUNCE_READS;
    }
    int first =
        write || cached(&x, spans, nspans, ostart, ocount, ostride) ? 1 : 0;
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
        bring_in_noted(&x);
        first = 1;
        x.fault = 1; /* each reading thread faults in its own planes */
    }
    int threads = write ? 1 : read_threads();
    int big = threads > 1 && threads_pay(&x, spans, nspans, ocount);
    int many = threads > 1 && !big && staged_pay(&x, spans, nspans, ocount);
    if (many && !threads_chosen()) { /* the default: idle cores only */
        int idle = idle_cores();
        if (idle == 0)
            many = 0;
        else if (idle > 0 && idle + 1 < threads)
            threads = idle + 1;
    }
    if (big || many) {
        if (many)
            atomic_fetch_add(&staged_threaded, 1);
        int t = read_threaded(&x, spans, nspans, ostart, ocount, ostride,
                              threads, many ? STAGED_TURN : nspans);
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
        prefault(buf, planes * plane_cells * v->elem);
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
    wplan_free(&wp);
    return rc;
}
