/*
 * tilestore.c - format 5's stores as tiles of the variable (tilestore.h).
 */
#include "tilestore.h"

#include <hdf5.h>
#include <string.h>

#include "alloc.h"
#include "chunkmap.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "ncbind.h"

/* Store of mesh chunk c: its region's position, or nregions when mixed. */
static size_t chunk_store(const raster_var *v, const mesh_chunk *c)
{
    if (c->mixed)
        return v->nregions;
    return (size_t)layout_region_pos(v->lay, v->mesh->shares[c->share0].id);
}

int tilestore_index(raster_var *v)
{
    if (v->stile)
        return RASTER_OK;
    if (!v->mesh || !v->lay) /* the caller builds them (meta.h) */
        return raster_fail(RASTER_EINVAL, "%s: tiles indexed before the "
                           "layout", v->name);
    const raster_mesh *m = v->mesh;
    size_t tw = m->tile_w, th = m->tile_h, ntx = (m->nx + tw - 1) / tw;
    size_t ns = v->nregions + 1, n = 0;
    size_t *first = raster_calloc(ns + 1, sizeof *first);
    if (!first)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        size_t k = (m->chunks[ci].w + tw - 1) / tw;
        first[chunk_store(v, &m->chunks[ci]) + 1] += k;
        n += k;
    }
    for (size_t s = 0; s < ns; s++)
        first[s + 1] += first[s];
    size_t *tiles = raster_reallocarray(NULL, n ? n : 1, sizeof *tiles);
    size_t *next = raster_reallocarray(NULL, ns, sizeof *next);
    if (!tiles || !next) {
        raster_free(tiles);
        raster_free(next);
        raster_free(first);
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    }
    memcpy(next, first, ns * sizeof *next);
    /* chunk-id order: each store's tiles in the order layout.c gave them
     * their cells */
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        size_t s = chunk_store(v, c);
        for (size_t x = c->x0; x < c->x0 + c->w; x += tw)
            tiles[next[s]++] = c->y0 / th * ntx + x / tw;
    }
    raster_free(next);
    v->stile = tiles;
    v->stile_first = first;
    return RASTER_OK;
}

/* The variable's chunk shape and counts (vck, vnck) when it is chunked
 * as its tiles: 1, else 0. */
static int tile_chunked(raster_var *v, hid_t did, hid_t dcpl)
{
    int nd = v->ndims;
    hsize_t ck[RASTER_MAX_DIMS], dims[RASTER_MAX_DIMS];
    hid_t space = H5Dget_space(did);
    int ok = space >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
             H5Pget_chunk(dcpl, nd, ck) == nd &&
             H5Sget_simple_extent_ndims(space) == nd &&
             H5Sget_simple_extent_dims(space, dims, NULL) == nd &&
             ck[nd - 2] == v->chunk[nd - 2] && ck[nd - 1] == v->chunk[nd - 1] &&
             dims[nd - 2] == v->ny && dims[nd - 1] == v->nx;
    for (int i = 0; ok && i < nd; i++) {
        v->vck[i] = (size_t)ck[i];
        v->vnck[i] = ck[i] ? (size_t)((dims[i] + ck[i] - 1) / ck[i]) : 0;
        ok = ck[i] > 0;
    }
    if (space >= 0)
        H5Sclose(space);
    return ok;
}

/* Walks the variable's chunk index once (chunkmap.c): vaddr_state 1 with
 * every chunk's offset, or -1 (the stores are netCDF's). */
static int walk_variable(raster_var *v)
{
    v->vaddr_state = -1;
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* probes never print */
    hid_t did = (hid_t)fileio_placeholder(v);
    hid_t dcpl = did >= 0 ? H5Dget_create_plist(did) : -1;
    size_t total = 1;
    /* plain bytes, or filters inflate.c undoes (deflate, shuffle,
     * fletcher32) */
    int plain = dcpl >= 0 && fileio_plain(did, dcpl, v->elem);
    int filtered = dcpl >= 0 && !plain &&
                   fileio_filters(did, dcpl, v->elem, v->vfilt, &v->vnfilt);
    int rc = RASTER_OK, ok = (plain || filtered) && tile_chunked(v, did, dcpl);
    if (plain)
        v->vnfilt = 0;
    for (int i = 0; ok && i < v->ndims; i++)
        ok = !raster_mul_overflows(total, v->vnck[i], &total);
    if (ok && (!(v->vaddr = raster_reallocarray(NULL, total ? total : 1,
                                                sizeof *v->vaddr)) ||
               (filtered && !(v->vsize = raster_calloc(total ? total : 1,
                                                       sizeof *v->vsize)))))
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                         v->name);
    hsize_t nchunks = 0;
    hid_t space = ok && v->vaddr ? H5Dget_space(did) : -1;
    if (space >= 0 && H5Dget_num_chunks(did, space, &nchunks) >= 0 &&
        nchunks == 0) { /* never written: no index to walk */
        for (size_t i = 0; i < total; i++)
            v->vaddr[i] = -1;
    } else if (ok && v->vaddr && rc == RASTER_OK) {
        ok = chunkmap_read_sized(v->file->fd, did, v->ndims - 1, v->vck,
                                 v->vnck, v->elem, v->vaddr, v->vsize,
                                 total) == 1;
    }
    if (space >= 0)
        H5Sclose(space);
    if (ok) {
        v->vaddr_state = 1;
    } else {
        raster_free(v->vaddr);
        raster_free(v->vsize);
        v->vaddr = NULL;
        v->vsize = NULL;
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (did >= 0)
        H5Dclose(did);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return rc;
}

int tilestore_prepare(raster_var *v, size_t s)
{
    int rc = tilestore_index(v);
    if (rc == RASTER_OK && v->vaddr_state == 0)
        rc = walk_variable(v);
    if (rc || v->vaddr_state != 1)
        return rc;
    store_addr *a = &v->addr[s];
    int no = var_nouter(v);
    size_t ntile = v->vnck[no] * v->vnck[no + 1], outer = 1;
    size_t k0 = v->stile_first[s], nk = v->stile_first[s + 1] - k0;
    raster_free(a->ck);
    a->ck = raster_reallocarray(NULL, no > 0 ? 2 * (size_t)no : 1,
                                sizeof *a->ck);
    if (!a->ck)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    a->nck = a->ck + no;
    for (int i = 0; i < no; i++) {
        a->ck[i] = v->vck[i];
        a->nck[i] = v->vnck[i];
        outer *= v->vnck[i]; /* no overflow: vaddr has outer * ntile */
    }
    a->ckc = tilestore_cut(v);
    a->nckc = nk;
    raster_free(a->addr);
    raster_free(a->csize);
    size_t n = outer * nk, bytes = v->elem * tilestore_cut(v);
    for (int i = 0; i < no; i++)
        bytes *= a->ck[i];
    a->addr = raster_reallocarray(NULL, n ? n : 1, sizeof *a->addr);
    a->csize = raster_reallocarray(NULL, n ? n : 1, sizeof *a->csize);
    if (!a->addr || !a->csize)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    /* store chunk (outer chunk o, its tile k): the variable's chunk o of
     * that tile; a chunk holds the planes of its outer chunk, each a tile
     * of tile_h x tile_w cells, as a store chunk's ck x ckc cells */
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < nk; k++) {
            size_t at = o * ntile + v->stile[k0 + k];
            a->addr[o * nk + k] = v->vaddr[at];
            a->csize[o * nk + k] = v->vsize ? v->vsize[at] : (uint32_t)bytes;
        }
    a->unknown = 0;
    a->walked = 1;
    a->chunked = 1;
    a->ok = 1;
    /* a chunk holds its tile's planes of several records: read whole,
     * once, undone (a filtered variable) and copied to each (inflate.c) */
    a->inflate = bytes <= UINT32_MAX;
    a->nfilt = v->vnfilt;
    memcpy(a->filt, v->vfilt, sizeof a->filt);
    return RASTER_OK;
}

/* Where cells [lo, lo + width) of store s lie: the grid box of the tile's
 * rows [r0, r1) (rows past the grid's edge left out: r1 may be <= r0),
 * columns [x0, x0 + w), and `a`, lo's cell within the tile. */
typedef struct tbox {
    size_t y0, x0, w, r0, r1, a;
} tbox;

static int tile_box(raster_var *v, size_t s, uint64_t lo, size_t width,
                    tbox *b)
{
    int rc = tilestore_index(v);
    if (rc)
        return rc;
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t tc = th * tw, ntx = (v->nx + tw - 1) / tw;
    uint64_t k = lo / tc;
    b->a = (size_t)(lo % tc);
    if (width == 0 || b->a + width > tc ||
        k >= v->stile_first[s + 1] - v->stile_first[s])
        return raster_fail(RASTER_EINVAL, "%s: cells %llu..%llu are not in "
                           "one tile of store %zu", v->name,
                           (unsigned long long)lo,
                           (unsigned long long)(lo + width), s);
    size_t t = v->stile[v->stile_first[s] + k];
    b->y0 = t / ntx * th;
    b->x0 = t % ntx * tw;
    size_t h = v->ny - b->y0 < th ? v->ny - b->y0 : th;
    b->w = v->nx - b->x0 < tw ? v->nx - b->x0 : tw;
    b->r0 = b->a / tw;
    b->r1 = (b->a + width - 1) / tw + 1;
    if (b->r1 > h)
        b->r1 = h;
    return RASTER_OK;
}

/* The box's planes and its netCDF start and count. */
static size_t box_of(const raster_var *v, const tbox *b, const size_t *ostart,
                     const size_t *ocount, size_t *start, size_t *count)
{
    int no = var_nouter(v);
    size_t planes = 1;
    for (int i = 0; i < no; i++) {
        start[i] = ostart[i];
        count[i] = ocount[i];
        planes *= ocount[i];
    }
    start[no] = b->y0 + b->r0;
    count[no] = b->r1 - b->r0;
    start[no + 1] = b->x0;
    count[no + 1] = b->w;
    return planes;
}

/* Copies the box's cells (rows [r0, r1) of w cells, every plane) to
 * buf's (width per plane, from tile cell a); cells past the grid's edge
 * get the fill value. */
static void reshape(const raster_var *v, const tbox *b, size_t planes,
                    size_t width, unsigned char *buf,
                    const unsigned char *box)
{
    size_t tw = v->chunk[v->ndims - 1], elem = v->elem;
    size_t rows = b->r1 > b->r0 ? b->r1 - b->r0 : 0;
    for (size_t p = 0; p < planes; p++) {
        unsigned char *u = buf + p * width * elem;
        const unsigned char *t = box + p * rows * b->w * elem;
        for (size_t i = 0; i < width;) {
            size_t q = b->a + i, row = q / tw, col = q % tw;
            size_t n = tw - col < width - i ? tw - col : width - i;
            size_t real = col < b->w ? (b->w - col < n ? b->w - col : n) : 0;
            if (row >= b->r1)
                real = 0;
            if (real)
                memcpy(u + i * elem, t + ((row - b->r0) * b->w + col) * elem,
                       real * elem);
            convert_fill_cells(u + (i + real) * elem, n - real, v->fill,
                               elem);
            i += n;
        }
    }
}

static int nc_failed(const raster_var *v, int st, const char *what)
{
    return raster_fail_nc(RASTER_ENETCDF, st, "%s %s: %s", what, v->name,
                          nc_strerror(st));
}

/* get (put = 0) or put of the box into or from box[]. */
static int move_box(raster_var *v, const size_t *start, const size_t *count,
                    void *box, int put)
{
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    int st = put ? nc_put_vara(v->parent, v->varid, start, count, box)
                 : nc_get_vara(v->parent, v->varid, start, count, box);
    return st == NC_NOERR ? RASTER_OK
                          : nc_failed(v, st, put ? "writing" : "reading");
}

int tilestore_get(raster_var *v, size_t s, const size_t *ostart,
                  const size_t *ocount, uint64_t lo, size_t width, void *buf)
{
    tbox b;
    size_t start[RASTER_MAX_DIMS], count[RASTER_MAX_DIMS];
    int rc = tile_box(v, s, lo, width, &b);
    if (rc)
        return rc;
    size_t planes = box_of(v, &b, ostart, ocount, start, count);
    if (b.r1 <= b.r0 || planes == 0) { /* only cells past the edge */
        convert_fill_cells(buf, planes * width, v->fill, v->elem);
        return RASTER_OK;
    }
    unsigned char *box =
        raster_reallocarray(NULL, planes * (b.r1 - b.r0) * b.w, v->elem);
    if (!box)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    rc = move_box(v, start, count, box, 0);
    if (rc == RASTER_OK)
        reshape(v, &b, planes, width, buf, box);
    raster_free(box);
    return rc;
}

/* Writes rows [r0, r1), columns [c0, c1) of the tile (every plane) from
 * buf, whose cell i is the tile's cell a + i. */
static int put_part(raster_var *v, const tbox *b, size_t planes,
                    size_t width, const unsigned char *buf, size_t *start,
                    size_t *count, size_t r0, size_t r1, size_t c0,
                    size_t c1)
{
    int no = var_nouter(v);
    size_t tw = v->chunk[v->ndims - 1], elem = v->elem;
    size_t rows = r1 - r0, cols = c1 - c0;
    unsigned char *box = raster_reallocarray(NULL, planes * rows * cols, elem);
    if (!box)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    for (size_t p = 0; p < planes; p++)
        for (size_t r = r0; r < r1; r++)
            memcpy(box + ((p * rows + r - r0) * cols) * elem,
                   buf + (p * width + r * tw + c0 - b->a) * elem,
                   cols * elem);
    start[no] = b->y0 + r0;
    count[no] = rows;
    start[no + 1] = b->x0 + c0;
    count[no + 1] = cols;
    int rc = move_box(v, start, count, box, 1);
    raster_free(box);
    return rc;
}

int tilestore_put(raster_var *v, size_t s, const size_t *ostart,
                  const size_t *ocount, uint64_t lo, size_t width,
                  const void *buf)
{
    tbox b;
    size_t start[RASTER_MAX_DIMS], count[RASTER_MAX_DIMS];
    int rc = tile_box(v, s, lo, width, &b);
    if (rc)
        return rc;
    size_t planes = box_of(v, &b, ostart, ocount, start, count);
    if (b.r1 <= b.r0 || planes == 0)
        return RASTER_OK;
    /* only the cells given change: a partly covered first or last row is
     * a box of its own, the whole rows between one box (no read first, so
     * records not written yet need not exist) */
    size_t tw = v->chunk[v->ndims - 1], end = b.a + width;
    for (size_t r = b.r0; r < b.r1 && rc == RASTER_OK;) {
        size_t c0 = r == b.r0 ? b.a % tw : 0;
        size_t c1 = end < (r + 1) * tw ? end - r * tw : tw;
        c1 = c1 < b.w ? c1 : b.w;
        size_t r1 = r + 1;
        if (c0 == 0 && c1 == b.w) /* whole rows: as many as follow */
            while (r1 < b.r1 && end >= r1 * tw + b.w)
                r1++;
        if (c0 < c1)
            rc = put_part(v, &b, planes, width, buf, start, count, r, r1, c0,
                          c1);
        r = r1;
    }
    return rc;
}
