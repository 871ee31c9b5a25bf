/*
 * tiles.c - tile index of a read-only variable and hyperslab pieces from it
 * (see tiles.h).
 */
#include "tiles.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "maskio.h"
#include "regions.h"
#include "tables.h"
#include "tilestore.h"

#define TILE_UNSET UINT32_MAX
#define TILE_MIXED (UINT32_MAX - 1)
#define MASK_BLOCK ((size_t)4 << 20) /* bytes of mask per netCDF call */

/* A region's share of a mixed tile. */
typedef struct tile_share {
    int32_t id;
    uint64_t off;   /* its first cell in the mixed store */
    uint64_t cells;
} tile_share;

struct tile_index {
    size_t th, tw, nty, ntx;
    uint32_t *kind;     /* per tile: a pure tile's region position, or
                           TILE_MIXED */
    uint64_t *off;      /* pure: the store cell of its first cell; mixed:
                           its first share in share[] */
    uint32_t *nshare;   /* mixed: its shares, ascending ids */
    tile_share *share;
    size_t max_shares;  /* of one tile */
    int maskvar;
    uint32_t *sum;      /* mixed tiles: the CRC32C of their mask
                           (integrity.h); NULL in files without them */
    struct piece_memo *memo; /* the last small box's pieces (tiles_pieces) */
    /* partial (load_partial): only the rows of the regions a read's tiles
     * name are marked; NULL once the whole table is */
    unsigned char *loaded; /* per region: its rows marked */
    uint32_t *csum;        /* per region: its rows' checksum */
    int pins;              /* marked rows fixing the tile's height (1)
                              and width (2), shape_pinned */
};

/* The pieces of the last small hyperslab read (its grid box: start,
 * count, stride of y and x), sorted by store and offset: a program that
 * reads the same box record after record, or again, takes them from here
 * without reading and checking the tiles' mask again (the file cannot
 * change under a read-only handle: file_unchanged). Under lazy_lock. */
struct piece_memo {
    size_t box[6];
    piece *p;
    size_t n;
};

/* Boxes of at most MEMO_PIECES pieces and MEMO_BYTES of plane are kept
 * (and only such boxes get strided pieces): a thin band's is a few
 * hundred pieces, and larger reads go by windows in the caller's order
 * (chunkio.c), which a sorted list would undo. */
#define MEMO_PIECES 8192
#define MEMO_BYTES ((size_t)512 << 10)

static atomic_size_t memo_hits;

size_t tiles_memo_hits(void) { return atomic_load(&memo_hits); }

static void memo_free(struct piece_memo *m)
{
    if (m) {
        raster_free(m->p);
        raster_free(m);
    }
}

void tiles_free(raster_var *v)
{
    struct tile_index *t = v->tiles;
    if (!t)
        return;
    raster_free(t->kind);
    raster_free(t->off);
    raster_free(t->nshare);
    raster_free(t->share);
    raster_free(t->sum);
    memo_free(t->memo);
    raster_free(t->loaded);
    raster_free(t->csum);
    raster_free(t);
    v->tiles = NULL;
}

int tiles_state(raster_var *v)
{
    lazy_lock(v->file);
    int st = !v->tiles ? 0 : v->tiles->loaded ? 1 : 2;
    lazy_unlock(v->file);
    return st;
}

int tiles_usable(const raster_var *v)
{
    /* format 5 without checksums: only the full check vouches for its
     * tables, and the regions' runs are then read from the layout */
    return !v->table_from_layout && v->format >= 3 &&
           (!var_tiled(v) || v->sums) && !v->file->writable;
}

/* RASTER_EFORMAT with "V: index table `chunks`: <message>". */
static int bad_table(const raster_var *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int bad_table(const raster_var *v, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return raster_fail(RASTER_EFORMAT, "%s: index table `chunks`: %s",
                       v->name, msg);
}

/* Region r's rows of the shared `chunks` table (attribute chunk_rows). */
static int chunk_rows(const raster_var *v, size_t r, size_t *first,
                      size_t *count)
{
    nc_type type;
    size_t len;
    unsigned long long rows[2];
    int g = v->store_grp[r];
    if (v->regions[r].chunk_rows > 0) { /* from the variable's summary */
        *first = v->regions[r].chunk0;
        *count = v->regions[r].chunk_rows;
        return RASTER_OK;
    }
    if (nc_inq_att(g, NC_GLOBAL, "chunk_rows", &type, &len) != NC_NOERR ||
        type != NC_UINT64 || len != 2 ||
        nc_get_att_ulonglong(g, NC_GLOBAL, "chunk_rows", rows) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: region %d has no usable "
                           "chunk_rows", v->name, (int)v->regions[r].id);
    *first = (size_t)rows[0];
    *count = (size_t)rows[1];
    return RASTER_OK;
}

/* The rows of the `chunks` table, checked to be int64 with CHUNK_FIELDS
 * columns, and its varid: -1 for a lean file's (through HDF5). */
static int table_rows(const raster_var *v, int *varid, size_t *n)
{
    *varid = -1;
    if (v->file->lean)
        return fileio_table_rows(v, "chunks", CHUNK_FIELDS, n);
    int ndims, dimids[2];
    nc_type type;
    size_t fields = 0;
    return nc_inq_varid(v->grpid, "chunks", varid) == NC_NOERR &&
                   nc_inq_var(v->grpid, *varid, NULL, &type, &ndims, NULL,
                              NULL) == NC_NOERR &&
                   type == NC_INT64 && ndims == 2 &&
                   nc_inq_vardimid(v->grpid, *varid, dimids) == NC_NOERR &&
                   nc_inq_dimlen(v->grpid, dimids[0], n) == NC_NOERR &&
                   nc_inq_dimlen(v->grpid, dimids[1], &fields) == NC_NOERR &&
                   fields == CHUNK_FIELDS
               ? RASTER_OK
               : RASTER_EFORMAT;
}

/* Each region's rows of `chunks` (counts[r] of them) against their
 * checksums (integrity.h). */
static int check_sums(raster_var *v, const long long *rows,
                      const size_t *counts)
{
    uint32_t *sums = raster_reallocarray(NULL, v->nregions, sizeof *sums);
    if (!sums)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    int rc = sums_table_att(v, "chunks", v->nregions, sums);
    for (size_t r = 0, i = 0; r < v->nregions && rc == RASTER_OK; r++) {
        if (sums_region_rows(v->regions[r].id, rows + i * CHUNK_FIELDS,
                             counts[r] * CHUNK_FIELDS) != sums[r])
            rc = bad_table(v, "the rows of region %d do not match their "
                           "checksum", (int)v->regions[r].id);
        i += counts[r];
    }
    raster_free(sums);
    return rc;
}

/* The mask checksums of the mixed tiles, in tile order, into t->sum[k]. */
static int load_tile_sums(raster_var *v, struct tile_index *t)
{
    size_t ntiles = t->nty * t->ntx, nmixed = 0;
    for (size_t k = 0; k < ntiles; k++)
        nmixed += t->kind[k] == TILE_MIXED;
    t->sum = raster_calloc(ntiles, sizeof *t->sum);
    uint32_t *got = raster_reallocarray(NULL, nmixed ? nmixed : 1,
                                        sizeof *got);
    int rc = t->sum && got ? RASTER_OK
                           : raster_fail(RASTER_ENOMEM, "out of memory "
                                         "indexing %s", v->name);
    if (rc == RASTER_OK && nmixed > 0)
        rc = sums_table_att(v, "mask", nmixed, got);
    for (size_t k = 0, i = 0; k < ntiles && rc == RASTER_OK; k++)
        if (t->kind[k] == TILE_MIXED)
            t->sum[k] = got[i++];
    raster_free(got);
    return rc;
}

/* The whole `chunks` table, its rows checked to be region by region as
 * the regions' chunk_rows say; counts[r] gets region r's rows. */
static int read_table(raster_var *v, long long **out, size_t *nrows,
                      size_t *counts)
{
    int varid, st;
    size_t n = 0, next = 0;
    if (table_rows(v, &varid, &n) != RASTER_OK || n == 0)
        return bad_table(v, "missing or of the wrong type or shape");
    for (size_t r = 0; r < v->nregions; r++) {
        size_t first = 0, count = 0;
        int rc = chunk_rows(v, r, &first, &count);
        if (rc)
            return rc;
        if (first != next || count == 0 || count > n - next)
            return bad_table(v, "region %d's rows are not where chunk_rows "
                             "says", (int)v->regions[r].id);
        next += count;
        counts[r] = count;
    }
    if (next != n)
        return bad_table(v, "%zu rows, its regions have %zu", n, next);
    long long *rows = raster_reallocarray(NULL, n, CHUNK_FIELDS * sizeof *rows);
    if (!rows)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    size_t start[2] = {0, 0}, cnt[2] = {n, CHUNK_FIELDS};
    if (varid < 0 &&
        (st = fileio_table(v, "chunks", CHUNK_FIELDS, 0, n, rows)) != RASTER_OK) {
        raster_free(rows);
        return st;
    }
    if (varid >= 0 && (st = nc_get_vara_longlong(v->grpid, varid, start, cnt,
                                                 rows)) != NC_NOERR) {
        raster_free(rows);
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: reading its index "
                              "table: %s", v->name, nc_strerror(st));
    }
    if (v->sums && (st = check_sums(v, rows, counts)) != RASTER_OK) {
        raster_free(rows);
        return st;
    }
    *out = rows;
    *nrows = n;
    return RASTER_OK;
}

/* One row, as unsigned (a negative field is then huge, and refused). */
typedef struct row {
    unsigned long long id, y0, x0, h, w, mixed, off, cells;
} row;

static row row_at(const long long *rows, size_t i)
{
    const long long *f = rows + i * CHUNK_FIELDS;
    return (row){(unsigned long long)f[0], (unsigned long long)f[1],
                 (unsigned long long)f[2], (unsigned long long)f[3],
                 (unsigned long long)f[4], (unsigned long long)f[5],
                 (unsigned long long)f[6], (unsigned long long)f[7]};
}

/* Checks the rows of region r ([i0, i1)) and marks their tiles: pure
 * chunks claim their tiles, mixed ones count a share. Each region's pure
 * chunks lie back to back in its store in chunk-id order, its mixed shares
 * back to back in its run of the mixed store: so no store cell serves two
 * grid cells. */
static int mark_region(raster_var *v, struct tile_index *t, size_t r,
                       const long long *rows, size_t i0, size_t i1)
{
    const region_info *ri = &v->regions[r];
    unsigned long long pure = 0, mixed = ri->mixed_off;
    unsigned long long ny = v->ny, nx = v->nx, th = t->th, tw = t->tw;
    if (v->format >= 4) { /* one run: its pure chunks, then its shares */
        unsigned long long npure = 0;
        for (size_t i = i0; i < i1; i++)
            if (!row_at(rows, i).mixed) /* wraps only if a row is bad */
                npure += row_at(rows, i).cells;
        pure = ri->mixed_off;
        mixed = ri->mixed_off + npure;
    }
    const unsigned long long pure_end = v->format >= 4 ? mixed
                                                       : ri->pure_cells;
    for (size_t i = i0; i < i1; i++) {
        row c = row_at(rows, i);
        unsigned long long hh = ny - c.y0 < th ? ny - c.y0 : th;
        int bad = c.y0 >= ny || c.x0 >= nx || c.y0 % th || c.x0 % tw ||
                  (i > i0 && c.id <= (unsigned long long)rows[(i - 1) *
                                                              CHUNK_FIELDS]) ||
                  c.h != hh || c.w == 0 || c.w > nx - c.x0 ||
                  (c.w % tw && c.x0 + c.w != nx) || c.mixed > 1;
        if (!bad && c.mixed) {
            unsigned long long ww = nx - c.x0 < tw ? nx - c.x0 : tw;
            bad = c.w != ww || c.cells == 0 || c.cells > c.h * c.w ||
                  c.off != mixed;
            mixed += c.cells;
        } else if (!bad) {
            bad = c.cells != c.h * c.w || c.off != pure;
            pure += c.cells;
        }
        if (bad)
            return bad_table(v, "row %zu (region %d) is out of the grid, off "
                             "the tiles or out of place", i,
                             (int)ri->id);
        size_t ty = (size_t)(c.y0 / th);
        for (size_t tx = (size_t)(c.x0 / tw);
             tx * tw < c.x0 + c.w; tx++) {
            size_t k = ty * t->ntx + tx;
            if (c.mixed && t->kind[k] == TILE_UNSET) {
                t->kind[k] = TILE_MIXED;
                t->nshare[k] = 0;
            }
            if (c.mixed ? t->kind[k] != TILE_MIXED
                        : t->kind[k] != TILE_UNSET)
                return bad_table(v, "tile (%zu, %zu) is claimed twice", ty,
                                 tx);
            if (c.mixed) {
                t->nshare[k]++;
            } else {
                t->kind[k] = (uint32_t)r;
                t->off[k] = (uint64_t)(c.off + c.h * (tx * tw - c.x0));
            }
        }
    }
    if (pure != pure_end || mixed != ri->mixed_off + ri->mixed_cells)
        return bad_table(v, "the chunks of region %d do not add up to its "
                         "cells", (int)ri->id);
    return RASTER_OK;
}

/* Second pass over the mixed rows: each tile's shares, in region order. */
static int fill_shares(raster_var *v, struct tile_index *t,
                       const long long *rows, size_t n, const size_t *counts)
{
    size_t ntiles = t->nty * t->ntx, total = 0;
    for (size_t k = 0; k < ntiles; k++) {
        if (t->kind[k] == TILE_UNSET)
            return bad_table(v, "tile (%zu, %zu) belongs to no chunk",
                             k / t->ntx, k % t->ntx);
        if (t->kind[k] != TILE_MIXED)
            continue;
        t->off[k] = total;
        total += t->nshare[k];
        if (t->nshare[k] > t->max_shares)
            t->max_shares = t->nshare[k];
        t->nshare[k] = 0; /* counts again below */
    }
    t->share = raster_reallocarray(NULL, total ? total : 1, sizeof *t->share);
    if (!t->share)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    size_t r = 0, end = 0;
    for (size_t i = 0; i < n; i++) {
        while (i >= end) /* the region of row i */
            end += counts[r++];
        row c = row_at(rows, i);
        if (!c.mixed)
            continue;
        size_t k = (size_t)(c.y0 / t->th) * t->ntx + (size_t)(c.x0 / t->tw);
        t->share[t->off[k] + t->nshare[k]++] = (tile_share){
            v->regions[r - 1].id, (uint64_t)c.off, (uint64_t)c.cells};
    }
    for (size_t k = 0; k < ntiles; k++) {
        if (t->kind[k] != TILE_MIXED)
            continue;
        size_t ty = k / t->ntx, tx = k % t->ntx, cells = 0;
        size_t h = v->ny - ty * t->th < t->th ? v->ny - ty * t->th : t->th;
        size_t w = v->nx - tx * t->tw < t->tw ? v->nx - tx * t->tw : t->tw;
        for (size_t s = 0; s < t->nshare[k]; s++)
            cells += (size_t)t->share[t->off[k] + s].cells;
        if (cells != h * w)
            return bad_table(v, "the shares of tile (%zu, %zu) cover %zu of "
                             "its %zu cells", ty, tx, cells, h * w);
    }
    return RASTER_OK;
}

/* The tile shape comes from raster_chunk, which nothing else in the
 * `chunks` table pins down: a damaged width dividing the true one fits
 * every row of a file without mixed tiles. So the runs of one region with
 * pure cells (the one with the fewest runs) must start where this index
 * puts their first cells. */
static int check_tile(raster_var *v, const struct tile_index *t)
{
    size_t best = SIZE_MAX, ntiles = t->nty * t->ntx;
    unsigned char *pure = NULL;
    if (v->format >= 4) { /* pure_cells are all 0: ask the tiles */
        pure = raster_calloc(v->nregions ? v->nregions : 1, 1);
        if (!pure)
            return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name);
        for (size_t k = 0; k < ntiles; k++)
            if (t->kind[k] < v->nregions)
                pure[t->kind[k]] = 1;
    }
    for (size_t r = 0; r < v->nregions; r++)
        if ((pure ? pure[r] : v->regions[r].pure_cells > 0) &&
            (best == SIZE_MAX ||
             v->regions[r].run_rows < v->regions[best].run_rows))
            best = r;
    raster_free(pure);
    if (best == SIZE_MAX)
        return RASTER_OK; /* all mixed: their rows pin the tile down */
    const region_run *runs;
    size_t n;
    int rc = regions_runs(v, best, &runs, &n);
    for (size_t i = 0; i < n && rc == RASTER_OK; i++) {
        const region_run *u = &runs[i];
        size_t ty = u->y / t->th, tx = u->x / t->tw, k = ty * t->ntx + tx;
        /* its runs in pure tiles (format 4: in the shared store too) */
        if (v->format >= 4 ? t->kind[k] == TILE_MIXED : u->store != best)
            continue;
        size_t w = v->nx - tx * t->tw < t->tw ? v->nx - tx * t->tw : t->tw;
        if (t->kind[k] != best ||
            t->off[k] + (u->y - ty * t->th) * w + (u->x - tx * t->tw) !=
                u->off)
            rc = bad_table(v, "region %d's cell (%u, %u) is not where its "
                           "chunks and the %zu x %zu tile put it",
                           (int)v->regions[best].id, u->y, u->x, t->th,
                           t->tw);
    }
    return rc;
}

/* 1 when the rows just checked (mark_region) fix the tile shape
 * themselves: a row that does not end at the grid's last row is exactly
 * one tile high, pinning th, and a mixed row not at the grid's right edge
 * exactly one tile wide, pinning tw (pure rows may span several tiles).
 * Then check_tile's cross-check with a region's runs (the tile index's
 * costliest step) adds nothing. *pins collects the two across calls
 * (bit 1: height, bit 2: width). */
static int shape_pinned(const raster_var *v, const struct tile_index *t,
                        const long long *rows, size_t n, int *pins)
{
    for (size_t i = 0; i < n && *pins != 3; i++) {
        row c = row_at(rows, i);
        if (c.y0 + c.h < v->ny && c.h == t->th)
            *pins |= 1;
        if (c.mixed && c.x0 + c.w < v->nx && c.w == t->tw)
            *pins |= 2;
    }
    return *pins == 3;
}

/* A new tile index of v in v->tiles, every tile unset (TILE_UNSET): its
 * shape checked, the per-tile arrays allocated. */
static int index_new(raster_var *v, struct tile_index **out)
{
    int nd = v->ndims, maskvar;
    size_t th = v->chunk[nd - 2], tw = v->chunk[nd - 1];
    if (th == 0 || tw == 0 || th > v->ny || tw > v->nx)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: tile %zu x %zu does not fit its %zu x %zu grid", v->name, th,
            tw, v->ny, v->nx);
    int rc = regions_mask_var(v, &maskvar);
    if (rc)
        return rc;
    struct tile_index *t = raster_calloc(1, sizeof *t);
    if (!t)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    v->tiles = t;
    t->th = th;
    t->tw = tw;
    t->nty = (v->ny + th - 1) / th;
    t->ntx = (v->nx + tw - 1) / tw;
    t->maskvar = maskvar;
    size_t ntiles = t->nty * t->ntx;
    t->kind = raster_reallocarray(NULL, ntiles, sizeof *t->kind);
    /* not cleared (a per-cell cost a point's read noticed): a tile's off
     * and nshare are set when its rows mark it (mark_region), and read
     * only for tiles marked */
    t->off = raster_reallocarray(NULL, ntiles, sizeof *t->off);
    t->nshare = raster_reallocarray(NULL, ntiles, sizeof *t->nshare);
    if (!t->kind || !t->off || !t->nshare) {
        tiles_free(v);
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    }
    memset(t->kind, 0xff, ntiles * sizeof *t->kind); /* TILE_UNSET */
    *out = t;
    return RASTER_OK;
}

static int load(raster_var *v)
{
    struct tile_index *t;
    int rc = index_new(v, &t);
    if (rc)
        return rc;
    size_t n = 0;
    size_t *counts = raster_calloc(v->nregions ? v->nregions : 1,
                                   sizeof *counts);
    long long *rows = NULL;
    if (!counts)
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s", v->name);
    else
        rc = read_table(v, &rows, &n, counts);
    for (size_t r = 0, i = 0; r < v->nregions && rc == RASTER_OK; r++) {
        rc = mark_region(v, t, r, rows, i, i + counts[r]);
        i += counts[r];
    }
    if (rc == RASTER_OK)
        rc = fill_shares(v, t, rows, n, counts);
    if (rc == RASTER_OK && v->sums)
        rc = load_tile_sums(v, t);
    int pins = 0;
    if (rc == RASTER_OK && !shape_pinned(v, t, rows, n, &pins))
        rc = check_tile(v, t);
    raster_free(rows);
    raster_free(counts);
    if (rc)
        tiles_free(v);
    return rc;
}

/* ---- format 5: every tile whole in one store ---------------------------- */

/* Format 5 (tilestore.h) keeps each tile whole in one store, a pure tile
 * in its region's, a mixed one in the mixed store, its cell (dy, dx) at
 * the tile's first store cell + dy * tw + dx: a hyperslab's pieces need
 * no mask. t->kind: the store's region position, or TILE_MIXED; t->off:
 * the tile's first store cell. From the `chunks` rows of the pure tiles
 * and `mixed_chunks`, checksummed (tiles_usable), each tile once. */
static int mark5(raster_var *v, struct tile_index *t, size_t k, uint32_t kind,
                 uint64_t off)
{
    if (t->kind[k] != TILE_UNSET)
        return bad_table(v, "tile (%zu, %zu) is claimed twice", k / t->ntx,
                         k % t->ntx);
    t->kind[k] = kind;
    t->off[k] = off;
    return RASTER_OK;
}

static int load5_mixed(raster_var *v, struct tile_index *t)
{
    uint64_t tc = (uint64_t)t->th * t->tw;
    size_t n = (size_t)(v->store_cells[v->nregions] / tc);
    long long *rows;
    int rc = tilestore_mixed_rows(v, n, &rows);
    for (size_t i = 0; i < n && rc == RASTER_OK; i++) {
        size_t ty, tx, nt;
        if ((rc = tilestore_row_tiles(v, rows + i * MIXED_FIELDS, 0, &ty, &tx,
                                      &nt)) == RASTER_OK)
            rc = mark5(v, t, ty * t->ntx + tx, TILE_MIXED, i * tc);
    }
    raster_free(rows);
    return rc;
}

static int load5(raster_var *v)
{
    struct tile_index *t;
    int rc = index_new(v, &t);
    if (rc)
        return rc;
    uint64_t tc = (uint64_t)t->th * t->tw;
    size_t n = 0;
    size_t *counts = raster_calloc(v->nregions ? v->nregions : 1,
                                   sizeof *counts);
    long long *rows = NULL;
    rc = counts ? read_table(v, &rows, &n, counts)
                : raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                              v->name);
    for (size_t r = 0, i = 0; r < v->nregions && rc == RASTER_OK; r++) {
        uint64_t cells = v->regions[r].pure_store;
        for (size_t e = i + counts[r]; i < e && rc == RASTER_OK; i++) {
            row c = row_at(rows, i);
            if (c.mixed == 1) /* its tile is the mixed store's */
                continue;
            size_t ty, tx, nt;
            if (c.mixed != 0 ||
                tilestore_row_tiles(v, rows + i * CHUNK_FIELDS, 1, &ty, &tx,
                                    &nt) != RASTER_OK ||
                c.off % tc || c.off > cells || nt > (cells - c.off) / tc) {
                rc = bad_table(v, "row %zu (region %d) is out of the grid, "
                               "off the tiles or out of its store", i,
                               (int)v->regions[r].id);
                break;
            }
            size_t k = ty * t->ntx + tx;
            for (size_t j = 0; j < nt && rc == RASTER_OK; j++)
                rc = mark5(v, t, k + j, (uint32_t)r, c.off + j * tc);
        }
    }
    if (rc == RASTER_OK)
        rc = load5_mixed(v, t);
    for (size_t k = 0; rc == RASTER_OK && k < t->nty * t->ntx; k++)
        if (t->kind[k] == TILE_UNSET)
            rc = bad_table(v, "tile (%zu, %zu) belongs to no chunk",
                           k / t->ntx, k % t->ntx);
    raster_free(rows);
    raster_free(counts);
    if (rc)
        tiles_free(v);
    return rc;
}

/* ---- pieces of a hyperslab --------------------------------------------- */

typedef struct slab {
    size_t ys, yend, sy, xs, xend, sx, cx;
    size_t maxstep; /* a strided piece's rows lie within a tile's cells */
    piece *p;
    size_t np, cap;
    /* the mask row discover() read last (w cells at (y, x)), served
     * again to the read instead of a second pread of it */
    const int *seen;
    size_t seen_y, seen_x, seen_w;
} slab;

/* push's other cases: store cells soff.. as the next row of the last
 * piece (piece.h) when they lie as far on from its last row as rows lie
 * apart (a band's column through a pure tile, or a mixed tile's cells of
 * one share at a steady step, becomes one piece), else a new piece. */
static __attribute__((noinline)) int push_row(slab *s, uint32_t store,
                                              uint64_t soff, uint64_t uoff,
                                              size_t len)
{
    piece *q = s->np ? &s->p[s->np - 1] : NULL;
    if (s->maxstep && q && q->store == store && q->len == len &&
        soff > q->soff && uoff > q->uoff && q->rep < UINT32_MAX) {
        uint64_t ds = q->rep ? q->sstep : soff - q->soff;
        uint64_t du = q->rep ? q->ustep : uoff - q->uoff;
        uint64_t next = (uint64_t)q->rep + 1;
        /* rows further apart would be cells of other tiles met by
         * chance: a piece spanning stores' worth of cells */
        if (ds >= len && du >= len && ds <= s->maxstep &&
            du <= PIECE_STEP_MAX &&
            soff == q->soff + next * ds && uoff == q->uoff + next * du) {
            q->sstep = (uint16_t)ds;
            q->ustep = (uint16_t)du;
            q->rep++;
            return RASTER_OK;
        }
    }
    int rc = raster_grow(&s->p, &s->cap, s->np + 1, sizeof *s->p);
    if (rc == RASTER_OK)
        s->p[s->np++] = (piece){.soff = soff, .uoff = uoff, .store = store,
                                .len = (uint32_t)len};
    return rc;
}

/* Appends store cells soff.. for plane cell uoff.., merged into the last
 * piece when both continue it (inline: a mixed tile pushes cell by
 * cell), else push_row. */
static inline int push(slab *s, uint32_t store, uint64_t soff, uint64_t uoff,
                       size_t len)
{
    piece *q = s->np ? &s->p[s->np - 1] : NULL;
    if (q && q->soff + q->len == soff && q->uoff + q->len == uoff &&
        q->store == store && q->rep == 0 &&
        (uint64_t)q->len + len <= UINT32_MAX) {
        q->len += (uint32_t)len;
        return RASTER_OK;
    }
    return push_row(s, store, soff, uoff, len);
}

/* A tile's extent along a dimension of length n from a0 (edge tiles are
 * smaller). */
static size_t tile_extent(size_t a0, size_t tile, size_t n)
{
    return n - a0 < tile ? n - a0 : tile;
}

/* First wanted index >= a along a dimension sampled from `from` by
 * `step`. */
static size_t first_at(size_t a, size_t from, size_t step)
{
    return a <= from ? from : from + (a - from + step - 1) / step * step;
}

/* 1 when the slab serves a column of the tile columns [x0, x0 + w) */
static int cols_served(const slab *s, size_t x0, size_t w)
{
    return first_at(x0, s->xs, s->sx) < x0 + w;
}

/* Pieces of pure tile k (region r) at rows [y0, y0+h) x cols [x0, x0+w)
 * of the grid. m holds the tile's mask rows [my0, my1) (stride mw), and
 * every served cell in them is checked. */
static int pure_tile(raster_var *v, slab *s, size_t k, size_t y0, size_t h,
                     size_t x0, size_t w, const int *m, size_t mw,
                     size_t my0, size_t my1)
{
    const struct tile_index *t = v->tiles;
    uint32_t r = t->kind[k];
    int32_t id = v->regions[r].id;
    /* format 4: every region's pure chunks are in the shared store */
    uint32_t store = v->format >= 4 ? (uint32_t)v->nregions : r;
    size_t a = first_at(x0, s->xs, s->sx);
    size_t b = x0 + w < s->xend ? x0 + w : s->xend;
    for (size_t y = first_at(y0, s->ys, s->sy); y < y0 + h && y < s->yend;
         y += s->sy) {
        const int *mrow = m + (y - my0) * mw;
        size_t i = (y - s->ys) / s->sy;
        for (size_t x = a; x < b && y >= my0 && y < my1; x += s->sx)
            if (mrow[x - x0] != id)
                return raster_fail(RASTER_EFORMAT, "%s: grid cell (%zu, "
                                   "%zu) lies in region %d's chunk but the "
                                   "mask says %d", v->name, y, x, (int)id,
                                   mrow[x - x0]);
        /* a tile row is contiguous in the store: one piece when every
         * column is wanted */
        for (size_t x = a; x < b; x += s->sx) {
            size_t len = s->sx == 1 ? b - a : 1;
            int rc = push(s, store, t->off[k] + (y - y0) * w + (x - x0),
                          i * s->cx + (x - s->xs) / s->sx, len);
            if (rc)
                return rc;
            if (s->sx == 1)
                break;
        }
    }
    return RASTER_OK;
}

/* Index into sh of region id's share (in *cur), else RASTER_EFORMAT for
 * the cell (y, x) the mask gives a region the tile has no share of. */
static int find_share(const raster_var *v, const tile_share *sh, size_t ns,
                      size_t *cur, int32_t id, size_t y, size_t x)
{
    /* a tile's shares are in ascending region order (fill_shares): a
     * binary search, since one tile may hold thousands of regions */
    size_t c = 0, hi = ns;
    while (c < hi) {
        size_t mid = c + (hi - c) / 2;
        if (sh[mid].id < id)
            c = mid + 1;
        else
            hi = mid;
    }
    if (c == ns || sh[c].id != id)
        return raster_fail(RASTER_EFORMAT, "%s: grid cell (%zu, %zu) of "
                           "region %d is not in its tile's shares", v->name,
                           y, x, (int)id);
    *cur = c;
    return RASTER_OK;
}

static int over_share(const raster_var *v, int32_t id, size_t y0, size_t x0)
{
    const struct tile_index *t = v->tiles;
    return raster_fail(RASTER_EFORMAT, "%s: region %d has more cells in tile "
                       "(%zu, %zu) than its share", v->name, (int)id,
                       y0 / t->th, x0 / t->tw);
}

/* Counts columns [a, b) of a mixed tile's row y (mask row mrow, the tile
 * from column x0) by region, serving none of them. */
static int count_cells(const raster_var *v, const tile_share *sh, size_t ns,
                       size_t *cur, uint64_t *used, const int *mrow,
                       size_t a, size_t b, size_t y, size_t x0)
{
    size_t c = *cur;
    for (size_t dx = a; dx < b; dx++) {
        int32_t id = mrow[dx];
        if (sh[c].id != id) { /* cells of one region come in runs */
            int rc = find_share(v, sh, ns, &c, id, y, x0 + dx);
            if (rc)
                return rc;
        }
        used[c]++;
    }
    *cur = c;
    return RASTER_OK;
}

/* Pieces of mixed tile k: every cell of the tile is numbered within its
 * region's share (row-major), whether served or not; the counts must be
 * the shares' sizes. used[] has room for the tile's shares. */
static int mixed_tile(raster_var *v, slab *s, size_t k, size_t y0, size_t h,
                      size_t x0, size_t w, const int *m, size_t mw,
                      uint64_t *used)
{
    const struct tile_index *t = v->tiles;
    const tile_share *sh = t->share + t->off[k];
    size_t ns = t->nshare[k], cur = 0;
    uint32_t store = (uint32_t)v->nregions;
    /* the mask places every cell of a mixed tile: two cells swapped keep
     * every count below, only the checksum tells */
    if (t->sum && sums_tile(k, m, mw, h, w) != t->sum[k])
        return raster_fail(RASTER_EFORMAT, "%s: the stored mask of tile "
                           "(%zu, %zu) does not match its checksum", v->name,
                           k / t->ntx, k % t->ntx);
    memset(used, 0, ns * sizeof *used);
    for (size_t dy = 0; dy < h; dy++) {
        size_t y = y0 + dy;
        int row_wanted = y >= s->ys && y < s->yend &&
                         (y - s->ys) % s->sy == 0;
        size_t i = row_wanted ? (y - s->ys) / s->sy : 0;
        const int *mrow = m + dy * mw;
        /* the row's columns the read serves, [a, b); the others are only
         * counted (a thin band serves one cell of each tile row) */
        size_t a = w, b = w;
        if (row_wanted && s->xs < x0 + w && s->xend > x0) {
            a = s->xs > x0 ? s->xs - x0 : 0;
            b = s->xend < x0 + w ? s->xend - x0 : w;
        }
        int rc = count_cells(v, sh, ns, &cur, used, mrow, 0, a, y, x0);
        for (size_t dx = a; dx < b && rc == RASTER_OK; dx++) {
            int32_t id = mrow[dx];
            if (sh[cur].id != id && (rc = find_share(v, sh, ns, &cur, id, y,
                                                     x0 + dx)) != RASTER_OK)
                break;
            if (used[cur] >= sh[cur].cells)
                return over_share(v, sh[cur].id, y0, x0);
            uint64_t soff = sh[cur].off + used[cur]++;
            size_t x = x0 + dx;
            if ((x - s->xs) % s->sx == 0)
                rc = push(s, store, soff, i * s->cx + (x - s->xs) / s->sx, 1);
        }
        if (rc == RASTER_OK)
            rc = count_cells(v, sh, ns, &cur, used, mrow, b, w, y, x0);
        if (rc)
            return rc;
        for (size_t q = 0; q < ns; q++)
            if (used[q] > sh[q].cells)
                return over_share(v, sh[q].id, y0, x0);
    }
    for (size_t q = 0; q < ns; q++)
        if (used[q] != sh[q].cells)
            return raster_fail(RASTER_EFORMAT, "%s: region %d has %llu cells "
                               "in tile (%zu, %zu), its share %llu", v->name,
                               (int)sh[q].id, (unsigned long long)used[q],
                               y0 / t->th, x0 / t->tw,
                               (unsigned long long)sh[q].cells);
    return RASTER_OK;
}

/* Pieces of tile rows [tb, te) x tile columns [tx0, tx1), whose mask
 * (from grid row tb * th and column bx0, bw wide) is in band. */
static int tile_rows(raster_var *v, slab *s, size_t tb, size_t te,
                     size_t bx0, size_t bw, size_t tx0, size_t tx1,
                     const int *band, uint64_t *used)
{
    const struct tile_index *t = v->tiles;
    int rc = RASTER_OK;
    for (size_t ty = tb; ty < te && rc == RASTER_OK; ty++) {
        size_t y0 = ty * t->th, h = tile_extent(y0, t->th, v->ny);
        if (first_at(y0, s->ys, s->sy) >= y0 + h)
            continue; /* the stride steps over this tile row */
        const int *rows = band + (y0 - tb * t->th) * bw;
        for (size_t tx = tx0; tx < tx1 && rc == RASTER_OK; tx++) {
            size_t x0 = tx * t->tw;
            size_t w = tile_extent(x0, t->tw, v->nx);
            if (!cols_served(s, x0, w))
                continue;
            size_t k = ty * t->ntx + tx;
            const int *m = rows + (x0 - bx0);
            rc = t->kind[k] == TILE_MIXED
                     ? mixed_tile(v, s, k, y0, h, x0, w, m, bw, used)
                     : pure_tile(v, s, k, y0, h, x0, w, m, bw, y0, y0 + h);
        }
    }
    return rc;
}

/* Tile row ty from a mask read with pread (maskio.h): only the mask a
 * tile needs (a mixed tile's whole, the first served row of a pure one,
 * enough to tell a tile given to the wrong region), or the band of the
 * tile row whole when that costs less. buf has room for the band. */
static int tile_row_direct(raster_var *v, slab *s, size_t ty, size_t bx0,
                           size_t bw, size_t tx0, size_t tx1, int *buf,
                           uint64_t *used)
{
    const struct tile_index *t = v->tiles;
    size_t y0 = ty * t->th, h = tile_extent(y0, t->th, v->ny);
    size_t yf = first_at(y0, s->ys, s->sy), each = 0;
    if (yf >= y0 + h || yf >= s->yend)
        return RASTER_OK; /* the stride steps over this tile row */
    for (size_t tx = tx0; tx < tx1; tx++) {
        size_t x0 = tx * t->tw, w = tile_extent(x0, t->tw, v->nx);
        if (cols_served(s, x0, w))
            each += maskio_cost(v, t->kind[ty * t->ntx + tx] == TILE_MIXED
                                       ? h : 1, w);
    }
    int rc;
    if (each >= maskio_cost(v, h, bw)) {
        rc = maskio_rows(v, y0, h, bx0, bw, buf);
        return rc ? rc : tile_rows(v, s, ty, ty + 1, bx0, bw, tx0, tx1, buf,
                                   used);
    }
    rc = RASTER_OK;
    for (size_t tx = tx0; tx < tx1 && rc == RASTER_OK; tx++) {
        size_t x0 = tx * t->tw, w = tile_extent(x0, t->tw, v->nx);
        if (!cols_served(s, x0, w))
            continue;
        size_t k = ty * t->ntx + tx;
        if (t->kind[k] == TILE_MIXED) {
            rc = maskio_rows(v, y0, h, x0, w, buf);
            if (rc == RASTER_OK)
                rc = mixed_tile(v, s, k, y0, h, x0, w, buf, w, used);
        } else {
            if (s->seen && s->seen_y == yf && s->seen_x == x0 &&
                s->seen_w == w)
                memcpy(buf, s->seen, w * sizeof *buf);
            else
                rc = maskio_rows(v, yf, 1, x0, w, buf);
            if (rc == RASTER_OK)
                rc = pure_tile(v, s, k, y0, h, x0, w, buf, w, yf, yf + 1);
        }
    }
    return rc;
}

/* Reads of fewer tile rows take their mask without announcing it: the
 * probes would cost more than they save (a point's time series). */
#define ANNOUNCE_TILE_ROWS 4

/* A read from disk: the mask rows tile_row_direct will take announced to
 * the kernel first (maskio_plan). A tile row holding a touched mixed tile
 * needs its rows of the band, any other its first served row. */
static void announce_mask(raster_var *v, const slab *s, size_t tx0,
                          size_t tx1, size_t bx0, size_t bw, size_t ty_end)
{
    const struct tile_index *t = v->tiles;
    maskio_plan p;
    if (!maskio_plan_begin(v, &p, s->ys, s->yend, bx0))
        return;
    for (size_t ty = s->ys / t->th; ty < ty_end; ty++) {
        size_t y0 = ty * t->th, h = tile_extent(y0, t->th, v->ny);
        size_t yf = first_at(y0, s->ys, s->sy);
        if (yf >= y0 + h || yf >= s->yend)
            continue;
        int mixed = 0;
        for (size_t tx = tx0; tx < tx1 && !mixed; tx++) {
            size_t x0 = tx * t->tw, w = tile_extent(x0, t->tw, v->nx);
            mixed = t->kind[ty * t->ntx + tx] == TILE_MIXED &&
                    cols_served(s, x0, w);
        }
        if (mixed)
            maskio_plan_rows(&p, y0, h, bx0, bw);
        else
            maskio_plan_rows(&p, yf, 1, bx0, bw);
    }
    maskio_plan_end(&p);
}

static int cmp_store_off(const void *a, const void *b)
{
    const piece *p = a, *q = b;
    if (p->store != q->store)
        return (p->store > q->store) - (p->store < q->store);
    return (p->soff > q->soff) - (p->soff < q->soff);
}

/* A copy of the memo's pieces in *out when it holds box; 0 when not. */
static int memo_take(const raster_var *v, const size_t *box, piece **out,
                     size_t *n, int *rc)
{
    const struct piece_memo *m = v->tiles->memo;
    if (!m || memcmp(m->box, box, sizeof m->box) != 0)
        return 0;
    piece *p = raster_reallocarray(NULL, m->n, sizeof *p);
    if (!p) {
        *rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                          v->name);
        return 1;
    }
    memcpy(p, m->p, m->n * sizeof *p);
    atomic_fetch_add(&memo_hits, 1);
    *out = p;
    *n = m->n;
    *rc = RASTER_OK;
    return 1;
}

/* The memo set to box's pieces p (sorted in place) when small enough;
 * nothing when memory is short: the memo only saves work. */
static void memo_put(raster_var *v, const size_t *box, piece *p, size_t n)
{
    struct tile_index *t = v->tiles;
    if (n > MEMO_PIECES || box[1] * box[4] > MEMO_BYTES / v->elem)
        return;
    qsort(p, n, sizeof *p, cmp_store_off);
    piece *copy = raster_reallocarray(NULL, n ? n : 1, sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, p, n * sizeof *p);
    if (!t->memo && !(t->memo = raster_calloc(1, sizeof *t->memo))) {
        raster_free(copy);
        return;
    }
    raster_free(t->memo->p);
    memcpy(t->memo->box, box, sizeof t->memo->box);
    t->memo->p = copy;
    t->memo->n = n;
}

/* ---- the partial index ------------------------------------------------ */

/* A small read of a file with checksums (a point's series, a short band)
 * marks only the rows of the regions its tiles' mask names: each
 * region's rows are read alone and checked against their checksum before
 * any is trusted, then checked as load() checks them (mark_region). What
 * only the whole table shows, a tile claimed by two regions' rows that
 * each match their checksum, is not looked for: those rows are as the
 * writer wrote them, and the writer gives each tile to one chunk. A read
 * touching a mixed tile, or more tiles than PARTIAL_TILES, builds the
 * whole index instead (mixed tiles' mask checksums are numbered over all
 * mixed tiles). */
#define PARTIAL_TILES 16

/* 1 when slab s spans at most PARTIAL_TILES tiles of v's tile shape. */
static int few_tiles(const raster_var *v, const slab *s)
{
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    if (th == 0 || tw == 0)
        return 0; /* load() refuses it */
    size_t rows = (s->yend - 1) / th - s->ys / th + 1;
    size_t cols = (s->xend - 1) / tw - s->xs / tw + 1;
    return rows <= PARTIAL_TILES && cols <= PARTIAL_TILES / rows;
}

static int partial_usable(const raster_var *v)
{
    return v->sums && v->file->lean && v->format >= 3 &&
           maskio_usable((raster_var *)v);
}

static int load_partial(raster_var *v)
{
    struct tile_index *t;
    int rc = index_new(v, &t);
    if (rc)
        return rc;
    size_t nr = v->nregions ? v->nregions : 1;
    t->loaded = raster_calloc(nr, 1);
    t->csum = raster_reallocarray(NULL, nr, sizeof *t->csum);
    if (!t->loaded || !t->csum)
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s", v->name);
    else
        rc = sums_table_att(v, "chunks", v->nregions, t->csum);
    if (rc)
        tiles_free(v);
    return rc;
}

/* Marks region r's rows of `chunks`, checked against their checksum. */
static int load_region(raster_var *v, struct tile_index *t, size_t r)
{
    size_t first = 0, count = 0;
    int rc = chunk_rows(v, r, &first, &count);
    if (rc)
        return rc;
    if (count == 0)
        return bad_table(v, "region %d has no rows",
                         (int)v->regions[r].id);
    long long *rows = raster_reallocarray(NULL, count,
                                          CHUNK_FIELDS * sizeof *rows);
    if (!rows)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    /* fileio_table checks the rows lie in the table */
    rc = fileio_table(v, "chunks", CHUNK_FIELDS, first, count, rows);
    if (rc == RASTER_OK &&
        sums_region_rows(v->regions[r].id, rows, count * CHUNK_FIELDS) !=
            t->csum[r])
        rc = bad_table(v, "the rows of region %d do not match their "
                       "checksum", (int)v->regions[r].id);
    if (rc == RASTER_OK)
        rc = mark_region(v, t, r, rows, 0, count);
    if (rc == RASTER_OK)
        shape_pinned(v, t, rows, count, &t->pins);
    raster_free(rows);
    if (rc == RASTER_OK)
        t->loaded[r] = 1;
    return rc;
}

/* The tile shape pinned by marked rows (shape_pinned): the rows of the
 * region with mixed cells and the fewest rows marked when it is not yet.
 * *pinned 0 when they do not pin it (the whole index then checks it). */
static int pin_shape(raster_var *v, struct tile_index *t, int *pinned)
{
    size_t best = SIZE_MAX;
    for (size_t r = 0; t->pins != 3 && r < v->nregions; r++)
        if (!t->loaded[r] && v->regions[r].mixed_cells > 0 &&
            v->regions[r].chunk_rows > 0 &&
            (best == SIZE_MAX ||
             v->regions[r].chunk_rows < v->regions[best].chunk_rows))
            best = r;
    int rc = t->pins == 3 || best == SIZE_MAX ? RASTER_OK
                                               : load_region(v, t, best);
    *pinned = t->pins == 3;
    return rc;
}

/* The tiles a read serves, in a partial index: each one not yet known is
 * given its regions from its first served mask row (maskio_rows). *whole
 * is set when the read needs the whole index instead. */
static int discover(raster_var *v, slab *s, size_t ty0, size_t ty1,
                    size_t tx0, size_t tx1, int *whole, int **seen)
{
    struct tile_index *t = v->tiles;
    *whole = 0;
    if ((ty1 - ty0) * (tx1 - tx0) > PARTIAL_TILES) {
        *whole = 1;
        return RASTER_OK;
    }
    int *row = raster_reallocarray(NULL, t->tw, sizeof *row);
    int rc = row ? RASTER_OK
                 : raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                               v->name);
    for (size_t ty = ty0; ty < ty1 && rc == RASTER_OK && !*whole; ty++) {
        size_t y0 = ty * t->th, h = tile_extent(y0, t->th, v->ny);
        size_t yf = first_at(y0, s->ys, s->sy);
        if (yf >= y0 + h || yf >= s->yend)
            continue; /* the stride steps over this tile row */
        for (size_t tx = tx0; tx < tx1 && rc == RASTER_OK && !*whole;
             tx++) {
            size_t x0 = tx * t->tw, w = tile_extent(x0, t->tw, v->nx);
            size_t k = ty * t->ntx + tx;
            if (!cols_served(s, x0, w) || t->kind[k] < v->nregions)
                continue; /* not read, or known pure */
            if (t->kind[k] == TILE_UNSET &&
                (rc = maskio_rows(v, yf, 1, x0, w, row)) == RASTER_OK) {
                s->seen = row;
                s->seen_y = yf;
                s->seen_x = x0;
                s->seen_w = w;
                for (size_t x = 0; x < w && rc == RASTER_OK; x++) {
                    if (x > 0 && row[x] == row[x - 1])
                        continue;
                    long r = regions_pos(v, row[x]);
                    if (r < 0)
                        rc = raster_fail(RASTER_EFORMAT, "%s: the mask gives "
                                         "grid cell (%zu, %zu) region %d, "
                                         "which the file does not hold",
                                         v->name, yf, x0 + x, row[x]);
                    else if (!t->loaded[r])
                        rc = load_region(v, t, (size_t)r);
                }
                if (rc == RASTER_OK && t->kind[k] == TILE_UNSET)
                    rc = bad_table(v, "tile (%zu, %zu) belongs to no chunk "
                                   "of the regions its mask names", ty, tx);
            }
            *whole = rc == RASTER_OK && t->kind[k] == TILE_MIXED;
        }
    }
    *seen = row; /* the caller frees it, after the read */
    int pinned = 1;
    if (rc == RASTER_OK && !*whole)
        rc = pin_shape(v, t, &pinned);
    if (rc == RASTER_OK && !pinned)
        *whole = 1;
    return rc;
}

/* Format 5's pieces of slab s (load5): tile by tile, each wanted row
 * of a tile one piece (every column wanted) or one per cell. */
static int pieces5(raster_var *v, slab *s)
{
    const struct tile_index *t = v->tiles;
    int rc = RASTER_OK;
    for (size_t ty = s->ys / t->th; ty * t->th < s->yend && rc == RASTER_OK;
         ty++) {
        size_t y0 = ty * t->th, h = tile_extent(y0, t->th, v->ny);
        for (size_t tx = s->xs / t->tw; tx * t->tw < s->xend && rc == RASTER_OK;
             tx++) {
            size_t x0 = tx * t->tw, w = tile_extent(x0, t->tw, v->nx);
            size_t k = ty * t->ntx + tx;
            uint32_t store = t->kind[k] == TILE_MIXED ? (uint32_t)v->nregions
                                                      : t->kind[k];
            size_t a = first_at(x0, s->xs, s->sx);
            size_t b = x0 + w < s->xend ? x0 + w : s->xend;
            for (size_t y = first_at(y0, s->ys, s->sy);
                 y < y0 + h && y < s->yend && rc == RASTER_OK; y += s->sy) {
                size_t i = (y - s->ys) / s->sy;
                for (size_t x = a; x < b && rc == RASTER_OK;
                     x += s->sx == 1 ? b - a : s->sx)
                    rc = push(s, store, t->off[k] + (y - y0) * t->tw + (x - x0),
                              i * s->cx + (x - s->xs) / s->sx,
                              s->sx == 1 ? b - a : 1);
            }
        }
    }
    return rc;
}

int tiles_pieces(raster_var *v, const size_t *start, const size_t *count,
                 const ptrdiff_t *stride, piece **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int dy = v->ndims - 2, dx = v->ndims - 1, rc;
    if (count[dy] == 0 || count[dx] == 0)
        return RASTER_OK;
    size_t box[6] = {start[dy], count[dy], stride ? (size_t)stride[dy] : 1,
                     start[dx], count[dx], stride ? (size_t)stride[dx] : 1};
    slab s = {.ys = start[dy], .sy = stride ? (size_t)stride[dy] : 1,
              .xs = start[dx], .sx = stride ? (size_t)stride[dx] : 1,
              .cx = count[dx]};
    s.yend = s.ys + (count[dy] - 1) * s.sy + 1;
    s.xend = s.xs + (count[dx] - 1) * s.sx + 1;
    /* a partial index changes as reads mark more regions, or is replaced
     * by the whole one: reads on it hold the lock throughout; the whole
     * index never changes once built. A box read before is in the memo
     * (the index it was read through still stands: replacing an index
     * drops its memo). */
    lazy_lock(v->file);
    if (var_tiled(v)) { /* no mask to read: the index never changes */
        rc = v->tiles ? RASTER_OK : load5(v);
        lazy_unlock(v->file);
        if (rc)
            return rc;
        s.maxstep = count[dy] * count[dx] > MEMO_BYTES / v->elem ? 0
                    : v->tiles->th * v->tiles->tw < PIECE_STEP_MAX
                        ? v->tiles->th * v->tiles->tw
                        : PIECE_STEP_MAX;
        if ((rc = pieces5(v, &s)) != RASTER_OK) {
            raster_free(s.p);
            return rc;
        }
        *out = s.p;
        *n = s.np;
        return RASTER_OK;
    }
    rc = v->tiles ? RASTER_OK
                  : few_tiles(v, &s) && partial_usable(v) ? load_partial(v)
                                                          : load(v);
    if (rc == RASTER_OK && memo_take(v, box, out, n, &rc)) {
        lazy_unlock(v->file);
        return rc;
    }
    int whole = 0, locked = rc == RASTER_OK && v->tiles->loaded;
    int *seen = NULL;
    if (locked) {
        const struct tile_index *p = v->tiles;
        rc = discover(v, &s, s.ys / p->th, (s.yend - 1) / p->th + 1,
                      s.xs / p->tw, (s.xend - 1) / p->tw + 1, &whole, &seen);
        if (whole)
            s.seen = NULL; /* the whole index's read reads its own */
        if (rc == RASTER_OK && whole) {
            tiles_free(v);
            rc = load(v);
        }
    }
    if (!locked || whole || rc)
        lazy_unlock(v->file);
    locked = locked && !whole && rc == RASTER_OK;
    if (rc) {
        raster_free(seen);
        return rc;
    }
    const struct tile_index *t = v->tiles;
    s.maxstep = t->th * t->tw < PIECE_STEP_MAX ? t->th * t->tw
                                                : PIECE_STEP_MAX;
    /* a large box goes by windows (windows.c), which take plain pieces:
     * merging rows there would only be undone */
    if (count[dy] * count[dx] > MEMO_BYTES / v->elem)
        s.maxstep = 0;
    size_t tx0 = s.xs / t->tw, tx1 = (s.xend - 1) / t->tw + 1;
    size_t bx0 = tx0 * t->tw;
    size_t bx1 = tx1 * t->tw < v->nx ? tx1 * t->tw : v->nx, bw = bx1 - bx0;
    /* the mask of several tile rows per netCDF call (a call costs more
     * than the 50 x 50 cells of a thin band's tile), up to MASK_BLOCK; one
     * tile row at a time when read with pread */
    size_t ty_end = (s.yend - 1) / t->th + 1, per = t->th * bw;
    int direct = maskio_usable(v);
    if (direct && ty_end - s.ys / t->th >= ANNOUNCE_TILE_ROWS)
        announce_mask(v, &s, tx0, tx1, bx0, bw, ty_end);
    size_t block = direct ? 1 : MASK_BLOCK / (per * sizeof(int));
    block = block < 1 ? 1 : block;
    int *band = raster_reallocarray(NULL, per * block, sizeof *band);
    uint64_t *used = raster_reallocarray(NULL, t->max_shares + 1,
                                         sizeof *used);
    rc = band && used ? RASTER_OK
                      : raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                                    v->name);
    for (size_t tb = s.ys / t->th; rc == RASTER_OK && tb < ty_end;
         tb += block) {
        size_t yb = tb * t->th, te = tb + block < ty_end ? tb + block : ty_end;
        size_t ye = te * t->th < v->ny ? te * t->th : v->ny;
        if (direct) {
            rc = tile_row_direct(v, &s, tb, bx0, bw, tx0, tx1, band, used);
            continue;
        }
        rc = regions_mask_rows(v, t->maskvar, yb, ye - yb, bx0, bw, band);
        if (rc == RASTER_OK)
            rc = tile_rows(v, &s, tb, te, bx0, bw, tx0, tx1, band, used);
    }
    raster_free(band);
    raster_free(used);
    raster_free(seen);
    if (rc == RASTER_OK) {
        if (!locked)
            lazy_lock(v->file);
        memo_put(v, box, s.p, s.np);
        locked = 1;
    }
    if (locked)
        lazy_unlock(v->file);
    if (rc) {
        raster_free(s.p);
        return rc;
    }
    *out = s.p;
    *n = s.np;
    return RASTER_OK;
}
