/*
 * tilestore.c - format 5's stores as tiles of the variable (tilestore.h).
 */
#include "tilestore.h"

#include <fcntl.h>
#include <hdf5.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkmap.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "ncbind.h"
#include "tables.h"

/* Store of mesh chunk c: its region's position, or nregions when mixed. */
static size_t chunk_store(const raster_var *v, const mesh_chunk *c)
{
    if (c->mixed)
        return v->nregions;
    return (size_t)layout_region_pos(v->lay, v->mesh->shares[c->share0].id);
}

int tilestore_index(raster_var *v)
{
    if (v->stile) /* whole, or lazy (below): readers may hold either */
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

/* ---- the index from the tables (read-only, no layout) ---------------- */

#define TILE_NONE SIZE_MAX

/* Each store's tile count from the region summary (a pure store is its
 * pure tiles whole) and the mixed store's (one tile per `mixed_chunks`
 * row), every tile unset until its store is indexed: a read of one region
 * reads the rows of that region and of the mixed tiles only, where the
 * mesh and layout cost a whole pass over the mask. */
static int lazy_begin(raster_var *v)
{
    size_t tc = tilestore_cut(v), ns = v->nregions + 1;
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t ntiles = th && tw ? ((v->ny + th - 1) / th) * ((v->nx + tw - 1) / tw)
                             : 0;
    size_t *first = raster_calloc(ns + 1, sizeof *first);
    unsigned char *done = raster_calloc(ns, 1);
    size_t *tiles = NULL;
    int rc = first && done ? RASTER_OK
                           : raster_fail(RASTER_ENOMEM, "out of memory "
                                         "indexing %s", v->name);
    for (size_t s = 0; s < ns && rc == RASTER_OK; s++) {
        size_t cells = s < v->nregions ? v->regions[s].pure_store
                                       : v->store_cells[s];
        if (tc == 0 || cells % tc != 0 || cells / tc > ntiles - first[s])
            rc = raster_fail(RASTER_EFORMAT, "%s: store %zu holds %zu cells, "
                             "not whole tiles of its grid", v->name, s,
                             cells);
        else
            first[s + 1] = first[s] + cells / tc;
    }
    if (rc == RASTER_OK &&
        !(tiles = raster_reallocarray(NULL, first[ns] ? first[ns] : 1,
                                      sizeof *tiles)))
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                         v->name);
    if (rc) {
        raster_free(first);
        raster_free(done);
        return rc;
    }
    for (size_t i = 0; i < first[ns]; i++)
        tiles[i] = TILE_NONE;
    v->stile = tiles;
    v->stile_first = first;
    v->stile_done = done;
    return RASTER_OK;
}

/* Places tile (ty, tx) at store s's position k: each position once. */
static int place(raster_var *v, size_t s, size_t k, size_t ty, size_t tx)
{
    size_t tw = v->chunk[v->ndims - 1], ntx = (v->nx + tw - 1) / tw;
    if (k >= v->stile_first[s + 1] - v->stile_first[s] ||
        v->stile[v->stile_first[s] + k] != TILE_NONE)
        return raster_fail(RASTER_EFORMAT, "%s: index table: tile (%zu, %zu) "
                           "is out of its store or takes a place twice",
                           v->name, ty, tx);
    v->stile[v->stile_first[s] + k] = ty * ntx + tx;
    return RASTER_OK;
}

int tilestore_row_tiles(const raster_var *v, const long long *f, int many,
                        size_t *ty, size_t *tx, size_t *nt)
{
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    unsigned long long y0 = (unsigned long long)f[1],
                       x0 = (unsigned long long)f[2],
                       h = (unsigned long long)f[3],
                       w = (unsigned long long)f[4];
    if (y0 >= v->ny || x0 >= v->nx || y0 % th || x0 % tw || w == 0 ||
        w > v->nx - x0 || (w % tw && x0 + w != v->nx) ||
        h != (v->ny - y0 < th ? v->ny - y0 : th) || (!many && w > tw))
        return raster_fail(RASTER_EFORMAT, "%s: index table: a chunk at "
                           "(%llu, %llu) is off the tiles", v->name, y0, x0);
    *ty = (size_t)y0 / th;
    *tx = (size_t)x0 / tw;
    *nt = ((size_t)w + tw - 1) / tw;
    return RASTER_OK;
}

/* Region r's pure store from its rows of `chunks` (checksummed). */
static int lazy_region(raster_var *v, size_t r)
{
    size_t first = v->regions[r].chunk0, count = v->regions[r].chunk_rows;
    size_t tc = tilestore_cut(v);
    if (count == 0)
        return raster_fail(RASTER_EFORMAT, "%s: region %d has no rows of "
                           "`chunks`", v->name, (int)v->regions[r].id);
    long long *rows = raster_reallocarray(NULL, count,
                                          CHUNK_FIELDS * sizeof *rows);
    uint32_t *sums = v->sums ? raster_reallocarray(NULL, v->nregions,
                                                   sizeof *sums)
                             : NULL;
    int rc = rows && (sums || !v->sums)
                 ? fileio_table(v, "chunks", CHUNK_FIELDS, first, count, rows)
                 : raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name);
    if (rc == RASTER_OK && v->sums &&
        (rc = sums_table_att(v, "chunks", v->nregions, sums)) == RASTER_OK &&
        sums_region_rows(v->regions[r].id, rows, count * CHUNK_FIELDS) !=
            sums[r])
        rc = raster_fail(RASTER_EFORMAT, "%s: index table `chunks`: the rows "
                         "of region %d do not match their checksum", v->name,
                         (int)v->regions[r].id);
    for (size_t i = 0; i < count && rc == RASTER_OK; i++) {
        const long long *f = rows + i * CHUNK_FIELDS;
        size_t ty, tx, nt;
        if (f[5] != 0 && f[5] != 1)
            rc = raster_fail(RASTER_EFORMAT, "%s: index table `chunks`: row "
                             "%zu is neither pure nor mixed", v->name,
                             first + i);
        if (rc || f[5] == 1) /* a mixed tile: the mixed store's */
            continue;
        if ((rc = tilestore_row_tiles(v, f, 1, &ty, &tx, &nt)) != RASTER_OK)
            break;
        if (f[6] < 0 || (unsigned long long)f[6] % tc)
            rc = raster_fail(RASTER_EFORMAT, "%s: index table `chunks`: row "
                             "%zu starts inside a tile", v->name, first + i);
        for (size_t j = 0; j < nt && rc == RASTER_OK; j++)
            rc = place(v, r, (size_t)((unsigned long long)f[6] / tc) + j, ty,
                       tx + j);
    }
    raster_free(rows);
    raster_free(sums);
    return rc;
}

int tilestore_mixed_rows(raster_var *v, size_t n, long long **out)
{
    *out = NULL;
    long long *rows = raster_reallocarray(NULL, n ? n : 1,
                                          MIXED_FIELDS * sizeof *rows);
    uint32_t sum;
    int rc = !rows ? raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                                 v->name)
             : n > 0 ? fileio_table(v, "mixed_chunks", MIXED_FIELDS, 0, n,
                                    rows)
                     : RASTER_OK;
    if (rc == RASTER_OK && n > 0 && v->sums &&
        (rc = sums_table_att(v, "mixed_chunks", 1, &sum)) == RASTER_OK &&
        sums_i64(0, rows, n * MIXED_FIELDS) != sum)
        rc = raster_fail(RASTER_EFORMAT, "%s: index table `mixed_chunks` does "
                         "not match its checksum", v->name);
    if (rc)
        raster_free(rows);
    else
        *out = rows;
    return rc;
}

/* The mixed store from `mixed_chunks` (checksummed): its k-th row is the
 * store's k-th tile. */
static int lazy_mixed(raster_var *v)
{
    size_t s = v->nregions, n = v->stile_first[s + 1] - v->stile_first[s];
    if (n == 0)
        return RASTER_OK;
    long long *rows;
    int rc = tilestore_mixed_rows(v, n, &rows);
    for (size_t k = 0; k < n && rc == RASTER_OK; k++) {
        size_t ty, tx, nt;
        if ((rc = tilestore_row_tiles(v, rows + k * MIXED_FIELDS, 0, &ty, &tx,
                                      &nt)) == RASTER_OK)
            rc = place(v, s, k, ty, tx);
    }
    raster_free(rows);
    return rc;
}

int tilestore_index_store(raster_var *v, size_t s)
{
    /* the whole index, or the layout to build it from; a lazy index once
     * begun stays (a layout built later, for raster_var_mesh, does not
     * replace what other threads read) */
    if (!v->stile_done && (v->stile || v->lay))
        return tilestore_index(v);
    /* writable: its tables may be unwritten yet; without checksums only
     * the full check vouches for them (chunkio.c builds the layout) */
    if (v->file->writable || !v->sums)
        return raster_fail(RASTER_EINVAL, "%s: tiles indexed before the "
                           "layout", v->name);
    lazy_lock(v->file);
    int rc = v->stile ? RASTER_OK : lazy_begin(v);
    if (rc == RASTER_OK && !v->stile_done[s]) {
        rc = s < v->nregions ? lazy_region(v, s) : lazy_mixed(v);
        /* every place of the store filled, each once (place) */
        for (size_t i = v->stile_first[s];
             rc == RASTER_OK && i < v->stile_first[s + 1]; i++)
            if (v->stile[i] == TILE_NONE)
                rc = raster_fail(RASTER_EFORMAT, "%s: index table: store %zu "
                                 "has tiles no chunk names", v->name, s);
        if (rc == RASTER_OK)
            v->stile_done[s] = 1;
        else /* unset again, for a clean retry */
            for (size_t i = v->stile_first[s]; i < v->stile_first[s + 1]; i++)
                v->stile[i] = TILE_NONE;
    }
    lazy_unlock(v->file);
    return rc;
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

/* Looks at the variable once: vaddr_state 1 when it is chunked as its
 * tiles and holds plain bytes or filters inflate.c undoes (deflate,
 * shuffle, fletcher32), else -1 (the stores are netCDF's). */
static void probe_variable(raster_var *v)
{
    v->vaddr_state = -1;
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* probes never print */
    hid_t did = (hid_t)fileio_placeholder(v);
    hid_t dcpl = did >= 0 ? H5Dget_create_plist(did) : -1;
    size_t total = 1;
    int plain = dcpl >= 0 && fileio_plain(did, dcpl, v->elem);
    int filtered = dcpl >= 0 && !plain &&
                   fileio_filters(did, dcpl, v->elem, v->vfilt, &v->vnfilt);
    int ok = (plain || filtered) && tile_chunked(v, did, dcpl);
    if (plain)
        v->vnfilt = 0;
    for (int i = 0; ok && i < v->ndims; i++)
        ok = !raster_mul_overflows(total, v->vnck[i], &total);
    if (ok)
        v->vaddr_state = 1;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (did >= 0)
        H5Dclose(did);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
}

/* Bytes of one chunk of the variable, as HDF5 keeps it unfiltered. */
static size_t chunk_bytes(const raster_var *v)
{
    size_t bytes = v->elem;
    for (int i = 0; i < v->ndims; i++)
        bytes *= v->vck[i]; /* no overflow: a chunk HDF5 made */
    return bytes;
}

static atomic_size_t kept_hits;

size_t tilestore_kept_hits(void) { return atomic_load(&kept_hits); }

/* The offsets the last sealing writer kept (OFFSETS_TABLE,
 * tilestore_keep_offsets) into v->vaddr (and vsize) of `total` chunks: 1
 * when they are trusted, 0 when not: a writable file, a broken seal
 * (someone wrote the file since), a table absent, of another length, kept
 * under another seal or not matching its checksum, or a row that is not
 * a whole chunk inside the file or "-1 0" (never written). Then the index
 * is walked. */
static int kept_offsets(raster_var *v, size_t total)
{
    raster_file *f = v->file;
    struct stat st;
    if (f->writable || f->fd < 0 || !seal_trusted(f) ||
        fstat(f->fd, &st) != 0)
        return 0;
    long long seal = (long long)seal_of(v), kept = 0;
    hid_t d = seal > 0 ? (hid_t)fileio_var_dataset(v, OFFSETS_TABLE) : -1;
    hid_t space = d >= 0 ? H5Dget_space(d) : -1;
    hid_t type = d >= 0 ? H5Dget_type(d) : -1;
    hsize_t dims[2];
    uint32_t sum = 0;
    long long *rows = NULL;
    int ok = space >= 0 && type >= 0 &&
             H5Sget_simple_extent_ndims(space) == 2 &&
             H5Sget_simple_extent_dims(space, dims, NULL) == 2 &&
             dims[0] == total && dims[1] == OFFSETS_FIELDS &&
             fileio_holds(type, NC_INT64) == 1 &&
             fileio_att(d, SEAL_ATT, NC_INT64, &kept, 1, NULL) == 0 &&
             kept == seal &&
             fileio_att(d, SUMS_TABLE_ATT, NC_UINT, &sum, 1, NULL) == 0 &&
             (rows = raster_reallocarray(NULL, total ? total : 1,
                                         OFFSETS_FIELDS * sizeof *rows));
    if (ok && total > 0)
        ok = H5Dread(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                     rows) >= 0;
    if (ok)
        ok = sums_i64(sums_i64(0, &kept, 1), rows, total * OFFSETS_FIELDS) ==
             sum;
    size_t bytes = chunk_bytes(v), most = bytes + bytes / 2 + 4096;
    for (size_t i = 0; ok && i < total; i++) {
        long long at = rows[2 * i], n = rows[2 * i + 1];
        if (at == -1 && n == 0) {
            v->vaddr[i] = -1;
        } else if (at >= 0 && n > 0 &&
                   (v->vnfilt > 0 ? (size_t)n <= most : (size_t)n == bytes) &&
                   n <= (long long)st.st_size &&
                   at <= (long long)st.st_size - n) {
            v->vaddr[i] = at;
        } else {
            ok = 0;
        }
        if (ok && v->vsize)
            v->vsize[i] = (uint32_t)n;
    }
    raster_free(rows);
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (d >= 0)
        H5Dclose(d);
    if (ok)
        atomic_fetch_add(&kept_hits, 1);
    return ok;
}

/* Every chunk's offset (and stored size) into vaddr (vsize): kept by the
 * last sealing writer when they can be trusted (a read-only file), else
 * from one walk of the variable's chunk index through fd (chunkmap.c).
 * vaddr_state 2, or 3 when neither can (its chunks are then looked up one
 * by one). RASTER_OK or RASTER_ENOMEM. */
static int walk_variable(raster_var *v, int fd)
{
    size_t total = 1;
    for (int i = 0; i < v->ndims; i++)
        total *= v->vnck[i]; /* no overflow: probe_variable */
    v->vaddr = raster_reallocarray(NULL, total ? total : 1, sizeof *v->vaddr);
    if (v->vaddr && v->vnfilt > 0)
        v->vsize = raster_calloc(total ? total : 1, sizeof *v->vsize);
    if (!v->vaddr || (v->vnfilt > 0 && !v->vsize)) {
        raster_free(v->vaddr);
        v->vaddr = NULL;
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    }
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* kept: one read of a table, where a cold walk reads every node of
     * the index (Indian of the bench file: 267 nodes, 6.8 ms) */
    int ok = kept_offsets(v, total);
    hid_t did = ok ? -1 : (hid_t)fileio_placeholder(v);
    /* the walk first: HDF5's count of the chunks (for a variable never
     * written, which has no index to walk) iterates its whole index, one
     * cold random read per node */
    if (!ok && did >= 0)
        ok = chunkmap_read_sized(fd, did, v->ndims - 1, v->vck, v->vnck,
                                 v->elem, v->vaddr, v->vsize, total) == 1;
    hid_t space = !ok && did >= 0 ? H5Dget_space(did) : -1;
    hsize_t nchunks = 0;
    if (space >= 0 && H5Dget_num_chunks(did, space, &nchunks) >= 0 &&
        nchunks == 0) { /* never written */
        for (size_t i = 0; i < total; i++)
            v->vaddr[i] = -1;
        ok = 1;
    }
    if (space >= 0)
        H5Sclose(space);
    if (did >= 0)
        H5Dclose(did);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    v->vaddr_state = ok ? 2 : 3;
    if (!ok) {
        raster_free(v->vaddr);
        raster_free(v->vsize);
        v->vaddr = NULL;
        v->vsize = NULL;
    }
    return RASTER_OK;
}

int tilestore_keep_offsets(raster_var *v, long long seal)
{
    int id, st;
    if (v->grpid < 0 || !v->file->path ||
        nc_inq_varid(v->grpid, OFFSETS_TABLE, &id) != NC_NOERR)
        return RASTER_OK; /* a variable defined before the table */
    /* looked at afresh: the writes since any earlier look moved them */
    raster_free(v->vaddr);
    raster_free(v->vsize);
    v->vaddr = NULL;
    v->vsize = NULL;
    probe_variable(v);
    int fd = v->vaddr_state == 1 ? open(v->file->path, O_RDONLY | O_CLOEXEC)
                                 : -1;
    int rc = fd >= 0 ? walk_variable(v, fd) : RASTER_OK;
    if (fd >= 0)
        (void)close(fd);
    size_t total = 1;
    for (int i = 0; i < v->ndims; i++)
        total *= v->vnck[i];
    long long kept = 0, *rows = NULL;
    if (rc == RASTER_OK && v->vaddr_state == 2 &&
        !(rows = raster_reallocarray(NULL, total ? total : 1,
                                     OFFSETS_FIELDS * sizeof *rows)))
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s", v->name);
    if (rows) {
        size_t bytes = chunk_bytes(v);
        for (size_t i = 0; i < total; i++) {
            rows[2 * i] = v->vaddr[i];
            rows[2 * i + 1] = v->vaddr[i] < 0 ? 0
                              : v->vsize       ? (long long)v->vsize[i]
                                               : (long long)bytes;
        }
        size_t start[2] = {0, 0}, count[2] = {total, OFFSETS_FIELDS};
        unsigned sum = sums_i64(sums_i64(0, &seal, 1), rows,
                                total * OFFSETS_FIELDS);
        if ((total > 0 &&
             (st = nc_put_vara_longlong(v->grpid, id, start, count, rows)) !=
                 NC_NOERR) ||
            (st = nc_put_att_uint(v->grpid, id, SUMS_TABLE_ATT, NC_UINT, 1,
                                  &sum)) != NC_NOERR)
            rc = tables_ncfail(st, "keeping the chunk offsets of", v->name);
        else
            kept = seal;
        raster_free(rows);
    }
    /* the rows are trusted under this seal only when this walk wrote them
     * (0: under none) */
    if (rc == RASTER_OK &&
        (st = nc_put_att_longlong(v->grpid, id, SEAL_ATT, NC_INT64, 1,
                                  &kept)) != NC_NOERR)
        rc = tables_ncfail(st, "keeping the chunk offsets of", v->name);
    raster_free(v->vaddr);
    raster_free(v->vsize);
    v->vaddr = NULL;
    v->vsize = NULL;
    v->vaddr_state = 0;
    return rc;
}

int tilestore_prepare(raster_var *v, size_t s)
{
    int rc = tilestore_index_store(v, s);
    if (rc == RASTER_OK && v->vaddr_state == 0)
        probe_variable(v);
    if (rc || v->vaddr_state < 1)
        return rc;
    store_addr *a = &v->addr[s];
    int no = var_nouter(v);
    size_t outer = 1;
    size_t nk = v->stile_first[s + 1] - v->stile_first[s];
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
        outer *= v->vnck[i]; /* no overflow: probe_variable */
    }
    a->ckc = tilestore_cut(v);
    a->nckc = nk;
    raster_free(a->addr);
    raster_free(a->csize);
    a->csize = NULL;
    size_t n = outer * nk, bytes = v->elem * tilestore_cut(v);
    for (int i = 0; i < no; i++)
        bytes *= a->ck[i];
    a->addr = raster_reallocarray(NULL, n ? n : 1, sizeof *a->addr);
    a->csize = raster_reallocarray(NULL, n ? n : 1, sizeof *a->csize);
    if (!a->addr || !a->csize)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    /* looked up when a read first needs them: one chunk at a time for a
     * read of a few (a point's series), the variable's whole index in one
     * walk otherwise (tilestore_walk) */
    for (size_t i = 0; i < n; i++) {
        a->addr[i] = CHUNK_UNKNOWN;
        a->csize[i] = (uint32_t)bytes;
    }
    a->unknown = n;
    a->walked = 0;
    a->chunked = 1;
    a->ok = 1;
    /* a chunk holds its tile's planes of several records: read whole,
     * once, undone (a filtered variable) and copied to each (inflate.c) */
    a->inflate = bytes <= UINT32_MAX;
    a->nfilt = v->vnfilt;
    memcpy(a->filt, v->vfilt, sizeof a->filt);
    return RASTER_OK;
}

int tilestore_walk(raster_var *v, size_t s, int *got)
{
    *got = 0;
    int rc = v->vaddr_state == 1 ? walk_variable(v, v->file->fd) : RASTER_OK;
    store_addr *a = &v->addr[s];
    if (rc || v->vaddr_state != 2 || !a->addr)
        return rc;
    size_t ntile = v->vnck[var_nouter(v)] * v->vnck[var_nouter(v) + 1];
    size_t nk = a->nckc, k0 = v->stile_first[s], outer = 1;
    for (int i = 0; i < var_nouter(v); i++)
        outer *= a->nck[i];
    /* store chunk (outer chunk o, its tile k): the variable's chunk o of
     * that tile; a chunk holds the planes of its outer chunk, each a tile
     * of tile_h x tile_w cells, as a store chunk's ck x ckc cells */
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < nk; k++) {
            size_t at = o * ntile + v->stile[k0 + k];
            a->addr[o * nk + k] = v->vaddr[at];
            if (v->vsize)
                a->csize[o * nk + k] = v->vsize[at];
        }
    a->unknown = 0;
    *got = 1;
    return RASTER_OK;
}

void tilestore_chunk_origin(const raster_var *v, size_t s, size_t lin,
                            uint64_t *off)
{
    const store_addr *a = &v->addr[s];
    int no = var_nouter(v);
    size_t th = v->chunk[no], tw = v->chunk[no + 1];
    size_t ntx = (v->nx + tw - 1) / tw;
    size_t t = v->stile[v->stile_first[s] + lin % a->nckc];
    size_t rest = lin / a->nckc;
    for (int d = no - 1; d >= 0; d--) {
        off[d] = (uint64_t)((rest % a->nck[d]) * a->ck[d]);
        rest /= a->nck[d];
    }
    off[no] = (uint64_t)(t / ntx * th);
    off[no + 1] = (uint64_t)(t % ntx * tw);
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
    int rc = tilestore_index_store(v, s);
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
