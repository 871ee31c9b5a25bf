/*
 * spans.c - the plan of a transfer and its moves by span.
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
 * scratch buffer), with no HDF5 call per read. From disk, the spans are
 * announced first (spans_announce, spans_bring_in_noted).
 */
#include "spans.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "alloc.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "ncbind.h"
#include "prefetch.h"
#include "tilestore.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static atomic_size_t split_chunk_writes;

size_t chunkio_split_chunk_writes(void)
{
    return atomic_load(&split_chunk_writes);
}

/* Where pieces of store a are cut (cells; 0: nowhere): at chunk
 * boundaries of a store chunked along its cells (a read's span then lies
 * in one chunk: contiguous bytes), at multiples of wcut in a write to a
 * filtered store (write_cuts). */
size_t spans_piece_cut(const store_addr *a, int write)
{
    if (a->tcut) /* format 5: a span moves within one tile */
        return a->tcut;
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

int spans_make(const raster_var *v, const piece *p, size_t n, int write,
               span **out, size_t *nspans)
{
    size_t gap = GAP_BYTES / v->elem, cap = 0, ns = 0;
    size_t stage = STAGE_BYTES / v->elem;
    span *spans = NULL;
    for (size_t i = 0; i < n; i++) {
        /* spans stay within their pieces' cuts; one with strided pieces
         * within one staging buffer (read_staged) */
        size_t ckc = spans_piece_cut(&v->addr[p[i].store], write);
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
            spans[ns++] = (span){.p0 = i,
                                 .p1 = i,
                                 .lo = p[i].soff,
                                 .hi = p[i].soff,
                                 .covered = 0,
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

/* Sorts pieces by (store, store offset). A region's runs come in grid
 * order, which is far from store order in tile-major pure chunks: an LSD
 * radix sort on 11-bit digits of the key takes a few passes over tens of
 * thousands of pieces where qsort took milliseconds. qsort for short lists
 * and keys beyond 64 bits. */
#define RADIX_BITS 11
#define RADIX_MIN 2048

int spans_sort_pieces(piece *p, size_t n)
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

int spans_preadv(int fd, struct iovec *iov, size_t n, off_t off,
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

/* Index in a->addr of the chunk holding cell `cell` of the record with
 * flat outer index `flat`, and the record's position inside that chunk
 * (*inner); -1 when the store was written less far than the dimension. */
long spans_chunk_of(const size_t *full, int no, const store_addr *a,
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
off_t spans_store_offset(const xfer *x, const store_addr *a, size_t cells,
                         size_t flat, uint64_t cell)
{
    size_t elem = x->v->elem, inner;
    if (!a->chunked)
        return (off_t)a->base + (off_t)((flat * cells + cell) * elem);
    long lin = spans_chunk_of(x->full, var_nouter(x->v), a, flat, cell,
                              &inner);
    if (lin >= 0 && a->addr[lin] == CHUNK_UNKNOWN)
        return -2; /* a bug: never served as fill */
    if (lin < 0 || a->addr[lin] < 0)
        return -1;
    return (off_t)a->addr[lin] +
           (off_t)((inner * a->ckc + cell % a->ckc) * elem);
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
    unsigned char *to = spans_plane_ptr(x, plane, p->uoff);
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
 * of strided pieces fits the buffer (spans_make): one read, then each
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
            spans_copy_cells(
                spans_plane_ptr(x, plane, p->uoff + (a - p->soff)),
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
            convert_fill_cells(spans_plane_ptr(x, plane, p->uoff + r * p->ustep),
                             p->len, v->fill, v->elem);
    }
}

/* 1 when span s is read on the fast path from a store with data */
int spans_direct_span(const raster_var *v, const span *s)
{
    return v->addr[s->store].ok && v->addr[s->store].base >= 0;
}

/* 1 when span s would be announced: a direct span, large or in a read of
 * many (x->ann_short) */
static int announced(const xfer *x, const span *s)
{
    return spans_direct_span(x->v, s) &&
           (x->ann_short ||
            (size_t)(s->hi - s->lo) * x->v->elem >= ANNOUNCE_BYTES);
}

/* Notes span s of planes flat.. flat+nb-1 in x->ann for spans_bring_in_noted,
 * when it is large enough for read-ahead to matter (announced at once
 * when the list cannot grow). */
void spans_announce(xfer *x, const span *s, size_t flat, size_t nb)
{
    raster_var *v = x->v;
    const store_addr *a = &v->addr[s->store];
    size_t bytes = (size_t)(s->hi - s->lo) * v->elem;
    if (!announced(x, s))
        return;
    for (size_t b = 0; b < nb; b++) {
        off_t off = spans_store_offset(x, a, v->store_cells[s->store],
                                       flat + b, s->lo);
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
void spans_bring_in_noted(xfer *x)
{
    prefetch_end(spans_bring_in_behind(x, 0));
}

prefetch *spans_bring_in_behind(xfer *x, int flags)
{
    if (x->nann == 0)
        return NULL;
    qsort(x->ann, x->nann, sizeof *x->ann, cmp_range);
    prefetch *p = prefetch_begin(x->v->file->fd, (const off_t(*)[2])x->ann,
                                 x->nann, flags);
    x->nann = 0;
    return p;
}

/* Fast-path read of span s for planes [plane0, plane0+nb) whose store
 * records start at flat outer index `flat`. */
int spans_read_direct(xfer *x, const span *s, size_t flat, size_t plane0,
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
        off_t off = spans_store_offset(x, a, v->store_cells[s->store],
                                       flat + b, s->lo);
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
            x->iov[niov++] = (struct iovec){
                spans_plane_ptr(x, plane0 + b, p->uoff), p->len * elem};
            cursor = p->soff + p->len;
        }
        int rc = spans_preadv(v->file->fd, x->iov, niov, off, v->name);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* One span for nb consecutive outer indices through netCDF. */
int spans_xfer_netcdf(xfer *x, const span *s, const size_t *start,
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
            if (v->format >= 5) {
                rc = tilestore_get(v, s->store, sstart, scount, s->lo, width,
                                   x->tmp);
                if (rc)
                    return rc;
            } else if ((st = nc_get_vara(g, id, sstart, scount, x->tmp)) !=
                       NC_NOERR) {
                return raster_fail_nc(RASTER_ENETCDF, st, "reading %s: %s",
                                      v->name, nc_strerror(st));
            }
            if (no > 0)
                scount[no - 1] = nb;
        }
        convert_fill_cells(x->tmp + exist * width * elem, (nb - exist) * width,
                         v->fill, elem);
    }
    for (size_t b = 0; b < nb; b++) {
        unsigned char *row = x->tmp + b * width * elem;
        for (size_t i = s->p0; i < s->p1; i++) {
            const piece *p = &x->pieces[i];
            unsigned char *u = spans_plane_ptr(x, plane0 + b, p->uoff);
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
            (sstart[no - 1] % ckr ||
             (nb % ckr && sstart[no - 1] + nb < x->full[no - 1])))
            atomic_fetch_add(&split_chunk_writes, 1);
        if (v->format >= 5) {
            rc = tilestore_put(v, s->store, sstart, scount, s->lo, width,
                               x->tmp);
            if (rc)
                return rc;
        } else if ((st = nc_put_vara(g, id, sstart, scount, x->tmp)) !=
                   NC_NOERR) {
            return raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s",
                                  v->name, nc_strerror(st));
        }
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

/* Cuts the pieces at their stores' spans_piece_cut, and strided pieces to fit
 * a staging buffer (spans_make). *out gets the new array (caller frees)
 * when any piece was cut; *pieces then points to it. */
int spans_split_pieces(const raster_var *v, piece **pieces, size_t *n,
                       int write, piece **out)
{
    size_t extra = 0, stage = STAGE_BYTES / v->elem;
    int strided = 0;
    *out = NULL;
    /* the plain pieces' cuts (as many new pieces), and whether a strided
     * piece needs cutting (those grow the array as they go) */
    for (size_t i = 0; i < *n; i++) {
        const piece *p = &(*pieces)[i];
        size_t cut = spans_piece_cut(&v->addr[p->store], write);
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
        size_t cut = spans_piece_cut(&v->addr[p->store], write);
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
int spans_unstride(const raster_var *v, const piece *p, size_t n, piece **out,
                   size_t *nout)
{
    size_t total = 0;
    for (size_t i = 0; i < n && total < SIZE_MAX; i++)
        total = SIZE_MAX - total > (size_t)p[i].rep + 1
                    ? total + (size_t)p[i].rep + 1
                    : SIZE_MAX;
    piece *q = total < SIZE_MAX ? raster_reallocarray(NULL, total, sizeof *q)
                                : NULL;
    if (!q)
        return raster_fail(RASTER_ENOMEM, "out of memory moving data of %s",
                           v->name);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t r = 0; r <= p[i].rep; r++)
            q[k++] = (piece){p[i].soff + r * p[i].sstep,
                             p[i].uoff + r * p[i].ustep,
                             p[i].store,
                             p[i].len,
                             0,
                             0,
                             0};
    *out = q;
    *nout = k;
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

int spans_page_cached(const xfer *x, off_t off)
{
    return fileio_page_cached(x->v->file->fd, off);
}

/* 1 when the request looks cached: the first bytes of the first, middle
 * and last large direct spans, in the box's first and last planes, are
 * all in the page cache. Then announcing the request to the kernel would
 * only cost system calls. Several probes, because the kernel's read-ahead
 * of HDF5's chunk index (which lies among the chunks) can bring one span's
 * start in while the rest is on disk. */
int spans_cached(xfer *x, const span *spans, size_t nspans,
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
            off_t off = spans_store_offset(x, a, v->store_cells[s->store],
                                           flat[e], s->lo);
            if (!span_kept(x, s, off) && !spans_page_cached(x, off))
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
void spans_prefault(unsigned char *buf, size_t bytes)
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
