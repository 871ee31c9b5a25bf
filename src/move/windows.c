/*
 * windows.c - scattered reads in the caller's order (windows).
 *
 * A packed region's pieces are short (a tile row each, ~200 bytes here)
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
 * staging buffer is read straight into the buffer.
 *
 * From disk, each range of each window of each plane is a unit: noted
 * here (windows_note), put in file order and moved behind the load by
 * chunkio.c (read_behind), each moved here (windows_move_unit).
 */
#include "windows.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"

/* Ranges (one per span) one window reads at most. */
#define WIN_RANGES 64
/* Windows read at most this much more than the pieces cover (holes in a
 * span, ranges read again where a band of rows outgrew the stage), else
 * the read keeps its spans. */
#define WIN_SLACK 1.25
static atomic_size_t win_bytes_set; /* chunkio_set_window_bytes; 0: 1 MiB */

void chunkio_set_window_bytes(size_t bytes)
{
    atomic_store(&win_bytes_set, bytes);
}

size_t windows_stage(void)
{
    size_t n = atomic_load(&win_bytes_set);
    return n ? n : STAGE_BYTES;
}

/* A reading thread's stage: read_staged's, or larger windows' */
size_t windows_stage_bytes(const wplan *wp)
{
    return wp && wp->stage > STAGE_BYTES ? wp->stage : STAGE_BYTES;
}

void windows_wplan_free(wplan *wp)
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
int windows_plan(const raster_var *v, const piece *p, size_t n,
                 const span *spans, size_t nspans, size_t stage, wplan *wp,
                 int *use)
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
        size_t cut = spans_piece_cut(a, 0);
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
    int rc = q && r && cov && slot
                 ? RASTER_OK
                 : raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                               v->name);
    uint32_t last_store = 0;
    for (size_t i = 0; rc == RASTER_OK && i < n; i++) {
        piece t = p[i];
        size_t cut = spans_piece_cut(&v->addr[t.store], 0);
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
            (void)range_add(r, &nr, slot, q[j].range, q[j].src, q[j].len, cov,
                            &open);
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
int windows_dense_spans(const raster_var *v, const piece *p, size_t n,
                        span **out, size_t *nout, int *dense)
{
    *out = NULL;
    *nout = 0;
    *dense = 0;
    span *s = raster_reallocarray(NULL, WIN_RANGES, sizeof *s);
    uint64_t ckey[WIN_RANGES]; /* each range's chunk: its first cell */
    if (!s)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s", v->name);
    size_t ns = 0, hit = 0;
    for (size_t i = 0; i < n; i++) {
        piece t = p[i];
        size_t cut = spans_piece_cut(&v->addr[t.store], 0);
        while (t.len > 0) {
            /* ranges are keyed by their chunk's first cell (one division
             * per piece: they cost more than the rest of the loop) */
            uint64_t rem = cut ? t.soff % cut : 0,
                     key = cut ? t.soff - rem : 0;
            uint32_t len = t.len;
            if (cut && rem + t.len > cut)
                len = (uint32_t)(cut - rem);
            size_t k = hit;
            /* the range of the last piece first: rows alternate between
             * a few */
            if (k >= ns || s[k].store != t.store || ckey[k] != key)
                for (k = 0;
                     k < ns && (s[k].store != t.store || ckey[k] != key); k++)
                    ;
            if (k == ns) {
                if (ns == WIN_RANGES) {
                    raster_free(s);
                    return RASTER_OK;
                }
                ckey[ns] = key;
                s[ns++] = (span){.lo = t.soff, .hi = t.soff, .store = t.store};
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
int windows_read(xfer *x, size_t flat, size_t plane)
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
            off_t off = spans_store_offset(x, a, v->store_cells[g->store],
                                           flat, g->lo);
            if (off == -2)
                return raster_fail(RASTER_EIO,
                                   "reading %s: a chunk's byte "
                                   "offset was never looked up",
                                   v->name);
            if (off == -1) { /* never written: fill */
                fill[r - w->r0] = 1;
                continue;
            }
            size_t bytes = (size_t)(g->hi - g->lo) * elem;
            unsigned char *dst = w->direct ? spans_plane_ptr(x, plane,
                                                             wp->p[w->p0].uoff)
                                           : x->stage + g->at;
            int rc = fileio_pread(v->file->fd, dst, bytes, off, v->name);
            if (rc)
                return rc;
        }
        if (w->direct) {
            if (fill[0])
                convert_fill_cells(spans_plane_ptr(x, plane, wp->p[w->p0].uoff),
                                 wp->p[w->p0].len, v->fill, elem);
            continue;
        }
        int any_fill = 0;
        for (size_t r = 0; r < w->r1 - w->r0; r++)
            any_fill |= fill[r];
        unsigned char *base = spans_plane_ptr(x, plane, 0);
        if (!any_fill) {
            copy_window(base, x->stage, wp->p + w->p0, w->p1 - w->p0, elem);
            continue;
        }
        for (size_t i = w->p0; i < w->p1; i++) {
            const wpiece *q = &wp->p[i];
            unsigned char *dst = base + q->uoff * elem;
            if (fill[q->range])
                convert_fill_cells(dst, q->len, v->fill, elem);
            else
                memcpy(dst, x->stage + q->src, (size_t)q->len * elem);
        }
    }
    return RASTER_OK;
}

/* The fill value in the cells that range r of window k brings to plane
 * `plane` (never written). */
static void fill_range(const xfer *x, size_t k, size_t r, size_t plane)
{
    const wplan *wp = x->win;
    const window *w = &wp->w[k];
    const raster_var *v = x->v;
    if (w->direct) {
        convert_fill_cells(spans_plane_ptr(x, plane, wp->p[w->p0].uoff),
                         wp->p[w->p0].len, v->fill, v->elem);
        return;
    }
    const behind *bh = x->bh;
    for (size_t i = bh->first[r]; i < bh->first[r + 1]; i++)
        convert_fill_cells(spans_plane_ptr(x, plane, bh->p[i].uoff),
                         bh->p[i].len, v->fill, v->elem);
}

/* Notes the units of plane `plane` (flat outer index `flat`) in x->bh,
 * filling those never written at once. */
int windows_note(xfer *x, size_t flat, size_t plane)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    behind *bh = x->bh;
    for (size_t k = 0; k < wp->nw; k++)
        for (size_t r = wp->w[k].r0; r < wp->w[k].r1; r++) {
            const wrange *g = &wp->r[r];
            off_t off = spans_store_offset(
                x, &v->addr[g->store], v->store_cells[g->store], flat, g->lo);
            if (off == -2)
                return raster_fail(RASTER_EIO,
                                   "reading %s: a chunk's byte "
                                   "offset was never looked up",
                                   v->name);
            if (off == -1)
                fill_range(x, k, r, plane);
            else
                bh->u[bh->n++] = (unit){off, plane, (uint32_t)k, (uint32_t)r};
        }
    return RASTER_OK;
}

/* Reads unit u and copies its pieces out. */
int windows_move_unit(xfer *x, const unit *u)
{
    raster_var *v = x->v;
    const wplan *wp = x->win;
    const window *w = &wp->w[u->win];
    const wrange *g = &wp->r[u->range];
    size_t bytes = (size_t)(g->hi - g->lo) * v->elem;
    if (w->direct)
        return fileio_pread(v->file->fd,
                            spans_plane_ptr(x, u->plane, wp->p[w->p0].uoff),
                            bytes, u->off, v->name);
    int rc = fileio_pread(v->file->fd, x->stage + g->at, bytes, u->off,
                          v->name);
    if (rc == RASTER_OK) {
        const behind *bh = x->bh;
        copy_window(spans_plane_ptr(x, u->plane, 0), x->stage,
                    bh->p + bh->first[u->range],
                    bh->first[u->range + 1] - bh->first[u->range], v->elem);
    }
    return rc;
}
