/*
 * inflate.c - filtered stores: chunks read and inflated by raster.
 *
 * A store HDF5 keeps deflated (shuffled, checksummed: fileio_filters) is
 * read without HDF5: each chunk the pieces touch read with one pread,
 * undone once (unfilter.c) and copied to every record it holds, the
 * chunks shared among raster's threads, each with its own decompressor
 * and buffers. The chunks' byte offsets and stored sizes were looked up
 * before (chunkio.c); from disk they are announced to the kernel first.
 */
#include "inflate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "alloc.h"
#include "convert.h"
#include "error.h"
#include "fanout.h"
#include "fileio.h"
#include "threads.h"
#include "unfilter.h"

/* The chunks inflated so far (chunkio_chunks_inflated). */
static atomic_size_t chunks_inflated;

size_t chunkio_chunks_inflated(void) { return atomic_load(&chunks_inflated); }

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

/* Plain chunks (no filter: format 5) that follow on in the file, all
 * serving the same planes: jobs order[j0 .. j1) of one pread. j1 = j0 + 1
 * for a chunk on its own (and for one never written). */
typedef struct ibatch {
    size_t j0, j1;
} ibatch;

typedef struct ictx {
    const xfer *x;
    const span *spans;
    const ijob *jobs;
    size_t njobs;
    const size_t *order;   /* batched: jobs in file order */
    const ibatch *batches; /* NULL: each job on its own */
    size_t nbatches;
    prefetch *pf;          /* a cold read's load, read behind */
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

/* The pieces from i on (before `end`) that follow on in both the store
 * and the plane (a packed region's rows), taken as one: *len cells;
 * returns the index past them. A strided piece (piece.h: a thin band's
 * column through a tile) is taken alone, *len cells a row. */
static size_t piece_run(const xfer *x, size_t i, size_t end, size_t *len)
{
    const piece *q = &x->pieces[i];
    size_t e = i + 1;
    *len = q->len;
    for (; !q->rep && e < end && !x->pieces[e].rep &&
           x->pieces[e].soff == q->soff + *len &&
           x->pieces[e].uoff == q->uoff + *len;
         e++)
        *len += x->pieces[e].len;
    return e;
}

/* Pieces ahead whose destination a copy asks the caches for. */
#define COPY_AHEAD 6

/* Asks the caches for piece q's destination in `plane`, to be written
 * soon: a packed region's pieces are rows of a tile, each in another row
 * of the plane, and each copy waited on its own cache misses (3% of a
 * warm format 5 region read of the bench's Indian basin). */
static inline void announce_write(const xfer *x, size_t plane,
                                  const piece *q)
{
    const unsigned char *d = spans_plane_ptr(x, plane, q->uoff);
    size_t bytes = (size_t)q->len * x->v->elem;
    for (size_t o = 0; o < bytes + 63; o += 64)
        __builtin_prefetch(d + o, 1, 0);
}

/* Copies job j's pieces out of its chunk (decoded, at `chunk`, of `cells`
 * values; still shuffled when `shuffled`: unshuffled straight into place)
 * into the planes at positions [p0, p1) it serves. */
static void copy_out(const ictx *c, const ijob *j, const unsigned char *chunk,
                     size_t p0, size_t p1, int shuffled, size_t cells)
{
    const xfer *x = c->x;
    size_t elem = x->v->elem;
    const span *s0 = &c->spans[j->s0];
    const store_addr *a = &x->v->addr[s0->store];
    uint64_t first = (s0->lo / a->ckc) * a->ckc; /* the chunk's first cell */
    for (size_t p = p0; p < p1; p++) {
        size_t rec = j->pl[p].inner * a->ckc; /* the record's first value */
        for (size_t k = j->s0; k < j->s1; k++)
            for (size_t i = c->spans[k].p0, e, len; i < c->spans[k].p1;
                 i = e) {
                e = piece_run(x, i, c->spans[k].p1, &len);
                const piece *q = &x->pieces[i];
                unsigned char *dst = spans_plane_ptr(x, j->pl[p].plane,
                                                     q->uoff);
                if (i + COPY_AHEAD < c->spans[k].p1)
                    announce_write(x, j->pl[p].plane,
                                   &x->pieces[i + COPY_AHEAD]);
                size_t at = rec + (size_t)(q->soff - first);
                for (uint32_t r = 0; r <= q->rep; r++) {
                    if (shuffled)
                        unfilter_unshuffle(dst, chunk, elem, cells, at, len);
                    else
                        spans_copy_cells(dst, chunk + at * elem, len * elem);
                    at += q->sstep;
                    dst += (size_t)q->ustep * elem;
                }
            }
    }
}

/* A chunk stored as it is (format 5's, no filter) whose pieces are long
 * (long_pieces): its bytes from the first wanted to the last read with one
 * preadv straight into every plane they serve, the cells no plane wants
 * into `junk` (chunk bytes long), with no copy out of a staging buffer. */
static int read_plain(const ictx *c, const ijob *j, int64_t off,
                      unsigned char *junk, struct iovec **iovp, size_t *cap)
{
    const xfer *x = c->x;
    raster_var *v = x->v;
    size_t elem = v->elem, niov = 0;
    const span *s0 = &c->spans[j->s0];
    const store_addr *a = &v->addr[s0->store];
    uint64_t first = (s0->lo / a->ckc) * a->ckc; /* the chunk's first cell */
    /* planes in file order: sorted by plane, their records ascend too */
    size_t start = j->pl[0].inner * a->ckc, cursor = start;
    int rc = RASTER_OK;
    for (size_t p = 0; p < j->np && rc == RASTER_OK; p++) {
        size_t rec = j->pl[p].inner * a->ckc;
        for (size_t k = j->s0; k < j->s1 && rc == RASTER_OK; k++)
            for (size_t i = c->spans[k].p0, e, len; i < c->spans[k].p1;
                 i = e) {
                e = piece_run(x, i, c->spans[k].p1, &len);
                const piece *q = &x->pieces[i];
                size_t at = rec + (size_t)(q->soff - first);
                if ((rc = raster_grow(iovp, cap, niov + 2, sizeof **iovp)))
                    break;
                struct iovec *iov = *iovp;
                if (at > cursor)
                    iov[niov++] = (struct iovec){junk, (at - cursor) * elem};
                iov[niov++] = (struct iovec){
                    spans_plane_ptr(x, j->pl[p].plane, q->uoff), len * elem};
                cursor = at + len;
            }
    }
    if (rc == RASTER_OK)
        rc = spans_preadv(v->file->fd, *iovp, niov,
                          (off_t)off + (off_t)(start * elem), v->name);
    return rc;
}

/* Bytes a piece of a plain chunk moves, on average, from which
 * read_plain reads them straight into place: the kernel's copy of each
 * iovec costs as much as a short copy out of a staging buffer, and a
 * column through a tile is a value an iovec (a thin band read through the
 * shim took 8.5 ms in iovecs where netCDF took 7.2). */
#define PLAIN_PIECE_BYTES 1024

/* 1 when job j's pieces are long enough for read_plain. */
static int long_pieces(const ictx *c, const ijob *j)
{
    size_t n = 0, cells = 0;
    for (size_t k = j->s0; k < j->s1; k++) {
        n += c->spans[k].p1 - c->spans[k].p0;
        for (size_t i = c->spans[k].p0; i < c->spans[k].p1; i++) {
            if (c->x->pieces[i].rep) /* rows apart: read_plain takes none */
                return 0;
            cells += c->x->pieces[i].len;
        }
    }
    return n > 0 && cells * c->x->v->elem >= n * PLAIN_PIECE_BYTES;
}

/* A plain chunk of a thin read (x->cache: the handle's second thin read
 * on): from the file's span cache, else read whole and kept there, then
 * copied out; `in` has room for the chunk. */
static int read_kept(const ictx *c, const ijob *j, int64_t off, size_t bytes,
                     unsigned char *in)
{
    raster_file *f = c->x->v->file;
    const unsigned char *k = fileio_kept(f, (off_t)off, bytes);
    if (k) {
        copy_out(c, j, k, 0, j->np, 0, 0);
        fileio_kept_release(f);
        return RASTER_OK;
    }
    int rc = fileio_pread(f->fd, in, bytes, (off_t)off, c->x->v->name);
    if (rc == RASTER_OK)
        rc = fileio_keep_chunk(f, (off_t)off, bytes, in);
    if (rc == RASTER_OK)
        copy_out(c, j, in, 0, j->np, 0, 0);
    return rc;
}

/* Inflates job j's chunk once and copies its pieces into every plane it
 * serves (a shuffled chunk's unshuffled straight into them). `longp`: 1
 * or 0 when the caller knows long_pieces(c, j), else -1. */
static int run_ijob(const ictx *c, const ijob *j, unfilter *u,
                    struct iovec **iov, size_t *iov_cap, int longp)
{
    const xfer *x = c->x;
    raster_var *v = x->v;
    size_t elem = v->elem, lin = 0;
    const span *s0 = &c->spans[j->s0];
    const store_addr *a = &v->addr[s0->store];
    int64_t off = job_chunk(x, c->spans, j, &lin);
    if (off == -2)
        return raster_fail(RASTER_EINTERNAL,
                           "reading %s: a chunk's byte "
                           "offset was never looked up",
                           v->name);
    if (off < 0) { /* fill */
        for (size_t p = 0; p < j->np; p++)
            for (size_t k = j->s0; k < j->s1; k++)
                for (size_t i = c->spans[k].p0; i < c->spans[k].p1; i++)
                    for (uint32_t r = 0; r <= x->pieces[i].rep; r++)
                        convert_fill_cells(
                            spans_plane_ptr(x, j->pl[p].plane,
                                            x->pieces[i].uoff +
                                                (uint64_t)r *
                                                    x->pieces[i].ustep),
                            x->pieces[i].len, v->fill, elem);
        return RASTER_OK;
    }
    size_t bytes = elem * a->ckc, csize = a->csize[lin];
    for (int d = 0; d < var_nouter(v); d++)
        bytes *= a->ck[d];
    unsigned char *in = unfilter_input(u, csize);
    if (!in)
        return RASTER_ENOMEM;
    prefetch_wait(c->pf, (off_t)off + (off_t)csize);
    if (a->nfilt == 0 && csize == bytes) { /* nothing to undo */
        atomic_fetch_add(&chunks_inflated, 1);
        /* a thin read's chunks kept whole: its next read copies a few
         * cells of each again, where mapping and letting go of a chunk
         * each time cost more (a thin band on an open file: 1.2 against
         * 0.3 ms) */
        if (c->x->cache)
            return read_kept(c, j, off, bytes, in);
        const unsigned char *m = fileio_map(v->file, (off_t)off, bytes);
        if (m) {
            copy_out(c, j, m, 0, j->np, 0, 0);
            fileio_map_release(v->file, (off_t)off, bytes);
            return RASTER_OK;
        }
        if (longp < 0)
            longp = long_pieces(c, j);
        if (longp)
            return read_plain(c, j, off, in, iov, iov_cap);
        int rc = fileio_pread(v->file->fd, in, bytes, (off_t)off, v->name);
        if (rc == RASTER_OK)
            copy_out(c, j, in, 0, j->np, 0, 0);
        return rc;
    }
    int rc = fileio_pread(v->file->fd, in, csize, (off_t)off, v->name);
    const unsigned char *chunk = NULL;
    int shuffled = 0;
    if (rc == RASTER_OK)
        rc = unfilter_chunk_keep_shuffle(u, a->filt, a->nfilt, elem, bytes,
                                         csize, v->name, &chunk, &shuffled);
    if (rc)
        return rc;
    atomic_fetch_add(&chunks_inflated, 1);
    copy_out(c, j, chunk, 0, j->np, shuffled, bytes / elem);
    return RASTER_OK;
}

typedef struct iworker {
    ictx *c;
    int rc, nc;
    char msg[512];
    struct iovec *iov; /* read_plain's, kept from chunk to chunk */
    size_t iov_cap;
} iworker;

/* Batch b: its chunks read with one pread, then copied out plane by plane
 * (a chunk's planes lie a whole plane of the caller's buffer apart: row
 * after row of one chunk into ten planes missed the TLB at every row);
 * chunks of long pieces (its first one's, as all of a batch serve the same
 * planes) each read straight into place instead. */
static int run_batch(const ictx *c, const ibatch *b, unfilter *u,
                     iworker *w)
{
    const ijob *j0 = &c->jobs[c->order[b->j0]];
    int longp = long_pieces(c, j0);
    if (b->j1 - b->j0 == 1 || longp) { /* one by one */
        int rc = RASTER_OK;
        for (size_t q = b->j0; q < b->j1 && rc == RASTER_OK; q++)
            rc = run_ijob(c, &c->jobs[c->order[q]], u, &w->iov, &w->iov_cap,
                          q == b->j0 ? longp : -1);
        return rc;
    }
    raster_var *v = c->x->v;
    const store_addr *a = &v->addr[c->spans[j0->s0].store];
    size_t lin, bytes = v->elem * a->ckc, n = b->j1 - b->j0;
    for (int d = 0; d < var_nouter(v); d++)
        bytes *= a->ck[d];
    int64_t off = job_chunk(c->x, c->spans, j0, &lin);
    prefetch_wait(c->pf, (off_t)off + (off_t)(n * bytes));
    /* the batch's bytes: from the file's mapping, else read into staging */
    const unsigned char *src = fileio_map(v->file, (off_t)off, n * bytes);
    int rc = RASTER_OK, mapped = src != NULL;
    if (!mapped) {
        unsigned char *stage = unfilter_input(u, n * bytes);
        if (!stage)
            return RASTER_ENOMEM;
        rc = fileio_pread(v->file->fd, stage, n * bytes, (off_t)off, v->name);
        src = stage;
    }
    for (size_t p = 0; rc == RASTER_OK && p < j0->np; p++)
        for (size_t q = b->j0; q < b->j1; q++)
            copy_out(c, &c->jobs[c->order[q]], src + (q - b->j0) * bytes, p,
                     p + 1, 0, 0);
    if (mapped)
        fileio_map_release(v->file, (off_t)off, n * bytes);
    if (rc == RASTER_OK)
        atomic_fetch_add(&chunks_inflated, n);
    return rc;
}

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
    size_t n = c->batches ? c->nbatches : c->njobs;
    for (size_t i; w->rc == RASTER_OK && !atomic_load(&c->stop) &&
                   (i = atomic_fetch_add(&c->next, 1)) < n;)
        w->rc = c->batches ? run_batch(c, &c->batches[i], u, w)
                           : run_ijob(c, &c->jobs[i], u, &w->iov,
                                      &w->iov_cap, -1);
    raster_free(w->iov);
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

/* Bytes of one batch of plain chunks: a few of them, in the caches while
 * they are copied out plane by plane. */
#define BATCH_BYTES ((size_t)2 << 20)

typedef struct joff {
    int64_t off;
    size_t job;
} joff;

static int cmp_joff(const void *a, const void *b)
{
    const joff *p = a, *q = b;
    if (p->off != q->off)
        return (p->off > q->off) - (p->off < q->off);
    return (p->job > q->job) - (p->job < q->job);
}

/* When every job's chunk is plain (format 5's, no filter): the jobs in
 * file order (*order) and cut into batches of chunks that follow on in
 * the file and serve the same planes (*batches, *nb). Nothing set when
 * some chunk is filtered. */
static int plan_batches(const xfer *x, const span *spans, const ijob *jobs,
                        size_t njobs, size_t **order, ibatch **batches,
                        size_t *nb)
{
    raster_var *v = x->v;
    size_t bytes = 0, lin;
    for (size_t i = 0; i < njobs; i++) {
        const store_addr *a = &v->addr[spans[jobs[i].s0].store];
        size_t b = v->elem * a->ckc;
        for (int d = 0; d < var_nouter(v); d++)
            b *= a->ck[d];
        if (a->nfilt != 0 || (i > 0 && b != bytes))
            return RASTER_OK;
        bytes = b;
    }
    joff *jo = raster_reallocarray(NULL, njobs ? njobs : 1, sizeof *jo);
    *order = raster_reallocarray(NULL, njobs ? njobs : 1, sizeof **order);
    *batches = raster_reallocarray(NULL, njobs ? njobs : 1, sizeof **batches);
    if (!jo || !*order || !*batches) {
        raster_free(jo);
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    }
    for (size_t i = 0; i < njobs; i++)
        jo[i] = (joff){job_chunk(x, spans, &jobs[i], &lin), i};
    qsort(jo, njobs, sizeof *jo, cmp_joff);
    *nb = 0;
    for (size_t i = 0; i < njobs; i++) {
        (*order)[i] = jo[i].job;
        const ijob *p = i ? &jobs[jo[i - 1].job] : NULL, *q = &jobs[jo[i].job];
        ibatch *t = *nb ? &(*batches)[*nb - 1] : NULL;
        if (t && jo[i].off >= 0 && jo[i - 1].off >= 0 &&
            jo[i].off == jo[i - 1].off + (int64_t)bytes &&
            q->np == p->np && q->pl[0].key == p->pl[0].key &&
            (t->j1 - t->j0 + 1) * bytes <= BATCH_BYTES)
            t->j1++;
        else
            (*batches)[(*nb)++] = (ibatch){i, i + 1};
    }
    raster_free(jo);
    return RASTER_OK;
}

/* Decoded bytes from which a read's chunks are inflated on several
 * threads: below, starting one costs more than it saves. */
#define INFLATE_THREAD_BYTES ((size_t)256 << 10)

/* Reads spans[0..nspans) (all of stores with a->inflate) for every plane
 * of the outer box: each chunk they touch read with one pread, inflated
 * once, and its pieces copied to every plane it holds, on raster's read
 * threads (each with its own decompressor and buffers; no HDF5 or netCDF
 * call). The byte offsets were looked up before (lookup_chunks). */
int inflate_read(xfer *x, const span *spans, size_t nspans,
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
    size_t *order = NULL, nb = 0; /* plain chunks' batches (plan_batches) */
    ibatch *batches = NULL;
    prefetch *pf = NULL; /* a cold read's load */
    int exact = 0;       /* it reads stretches to their ends exactly */
    if (!pl)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s", v->name);
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
            long lin = spans_chunk_of(x->full, no, a, flat, 0, &inner);
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
            for (k1 = k;
                 k1 < j && spans[k1].lo / a->ckc == spans[k].lo / a->ckc; k1++)
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
    if ((rc = fileio_map_check(v->file)) != RASTER_OK)
        goto done;
    /* from disk: the chunks brought in by a helper thread, in file order,
     * the workers reading behind it (as windows.c's reads do) */
    size_t lin;
    int64_t first = -1;
    for (size_t i = 0; i < njobs && first < 0; i++)
        first = job_chunk(x, spans, &jobs[i], &lin);
    if (first >= 0 && !spans_page_cached(x, (off_t)first)) {
        for (size_t i = 0; i < njobs; i++) {
            int64_t off = job_chunk(x, spans, &jobs[i], &lin);
            if (off >= 0 && raster_grow(&x->ann, &x->ann_cap, x->nann + 1,
                                        sizeof *x->ann) == RASTER_OK)
                memcpy(
                    x->ann[x->nann++],
                    ((off_t[2]){
                        (off_t)off,
                        (off_t)v->addr[spans[jobs[i].s0].store].csize[lin]}),
                    sizeof *x->ann);
        }
        /* plain chunks copied from the mapping, which reads nothing
         * ahead meanwhile: each stretch read to its end exactly */
        exact = v->addr[spans[0].store].nfilt == 0 &&
                fileio_map_ready(v->file);
        if (exact)
            fileio_map_load_begin(v->file);
        pf = spans_bring_in_behind(
            x, PREFETCH_BEHIND | (exact ? PREFETCH_EXACT_ENDS : 0));
    }
    /* a thin read's chunks one by one, each kept (read_kept) */
    if (!x->cache &&
        (rc = plan_batches(x, spans, jobs, njobs, &order, &batches, &nb)))
        goto done;
    ictx c = {.x = x, .spans = spans, .jobs = jobs, .njobs = njobs,
              .order = order, .batches = batches, .nbatches = nb, .pf = pf};
    int n = fanout_read_threads();
    if (n > (int)(batches ? nb : njobs))
        n = (int)(batches ? nb : njobs);
    /* a thin read's plain chunks, kept, are copies, not reads: threads
     * woken for them cost more than they share (a filtered store's are
     * still inflated, on every thread) */
    int copies = x->cache && njobs > 0 && v->addr[spans[0].store].nfilt == 0;
    if (decoded < INFLATE_THREAD_BYTES || n < 1 || copies)
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
        started[t] = thread_team_start(&team, &tid[t], 0, iwork_thread,
                                       &w[t]) == 0;
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
    prefetch_end(pf);
    if (exact)
        fileio_map_load_end(v->file);
    raster_free(order);
    raster_free(batches);
    raster_free(jobs);
    raster_free(pl);
    return rc;
}
