/*
 * regions.c - Region table of a reorganised variable and each region's runs
 * (see regions.h). Runs loaded from a file are checked before any use: in
 * the grid, in strict grid order, and covering the region's store cells
 * exactly once, so a damaged table can neither address memory outside the
 * caller's buffer nor leave cells of it unwritten.
 */
#include "regions.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "index.h"
#include "integrity.h"

#define RUN_FIELDS REGIONS_RUN_FIELDS

void regions_free(raster_var *v)
{
    for (size_t r = 0; v->regions && r < v->nregions; r++)
        raster_free(v->regions[r].runs);
    raster_free(v->regions);
    v->regions = NULL;
    v->nregions = 0;
}

long regions_pos(const raster_var *v, int32_t id)
{
    size_t lo = 0, hi = v->nregions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->regions[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->nregions && v->regions[lo].id == id ? (long)lo : -1;
}

int regions_from_layout(raster_var *v)
{
    const layout *lay = v->lay;
    v->ny = lay->ny;
    v->nx = lay->nx;
    v->regions = raster_calloc(lay->nregions, sizeof *v->regions);
    if (!v->regions)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory indexing regions of %s", v->name);
    v->nregions = lay->nregions;
    v->table_from_layout = 1;
    for (size_t r = 0; r < lay->nregions; r++) {
        region_info *ri = &v->regions[r];
        const raster_region_stats *st = region_index_at(v->mesh, r);
        ri->id = lay->ids[r];
        ri->pure_cells = lay->pure_cells[r];
        ri->pure_store = lay->pure_store[r];
        ri->mixed_cells = lay->mixed_cells[r];
        ri->mixed_off = lay->mixed_off[r];
        ri->box[0] = st->bbox_y0;
        ri->box[1] = st->bbox_x0;
        ri->box[2] = st->bbox_y1;
        ri->box[3] = st->bbox_x1;
    }
    for (size_t i = 0; i < lay->nsegs; i++)
        v->regions[lay->segs[i].region].nruns++;
    return RASTER_OK;
}

static int get_count(int g, const char *name, size_t *out)
{
    nc_type type;
    size_t len;
    unsigned long long value;
    if (nc_inq_att(g, NC_GLOBAL, name, &type, &len) != NC_NOERR ||
        type != NC_UINT64 || len != 1 ||
        nc_get_att_ulonglong(g, NC_GLOBAL, name, &value) != NC_NOERR ||
        value > SIZE_MAX / 2)
        return -1;
    *out = (size_t)value;
    return 0;
}

static int cmp_region(const void *a, const void *b)
{
    const region_info *p = a, *q = b;
    return (p->id > q->id) - (p->id < q->id);
}

/* Regions from the rows of a summary (regions.h), values checked; their
 * groups are the caller's to find. */
static int parse_summary(raster_var *v, const long long *t, size_t n)
{
    for (size_t r = 0; r < n; r++) {
        const long long *row = t + r * REGIONS_SUMMARY_FIELDS;
        int ok = row[SUMMARY_ID] >= INT32_MIN && row[SUMMARY_ID] <= INT32_MAX;
        for (int i = SUMMARY_PURE_CELLS; i < REGIONS_SUMMARY_FIELDS; i++)
            ok &= row[i] >= 0 && (unsigned long long)row[i] <= SIZE_MAX / 2;
        region_info *ri = &v->regions[r];
        if (ok) {
            ri->id = (int32_t)row[SUMMARY_ID];
            ri->pure_cells = (size_t)row[SUMMARY_PURE_CELLS];
            ri->mixed_cells = (size_t)row[SUMMARY_MIXED_CELLS];
            /* format 5: the column holds its pure store's cells */
            ri->mixed_off = var_tiled(v) ? 0
                                         : (size_t)row[SUMMARY_MIXED_OFFSET];
            ri->pure_store = var_tiled(v) ? (size_t)row[SUMMARY_MIXED_OFFSET]
                                          : ri->pure_cells;
            ri->chunk0 = (size_t)row[SUMMARY_CHUNK_FIRST];
            ri->chunk_rows = (size_t)row[SUMMARY_CHUNK_COUNT];
            ri->run0 = (size_t)row[SUMMARY_RUN_FIRST];
            ri->run_rows = (size_t)row[SUMMARY_RUN_COUNT];
            /* format 4: every cell in the shared store */
            ok = ri->pure_cells + ri->mixed_cells > 0 && ri->chunk_rows > 0 &&
                 (!var_shared(v) || ri->pure_cells == 0) &&
                 ri->run_rows > 0 &&
                 ri->run_rows <= ri->pure_cells + ri->mixed_cells;
        }
        if (!ok)
            return raster_fail(
                RASTER_EFORMAT,
                "%s: row %zu of %s is unusable or names no region group",
                v->name, r, REGIONS_SUMMARY);
    }
    return RASTER_OK;
}

/* Format 3: the regions from the variable group's summary attribute
 * (regions.h), each region's group found by the name its id gives, the
 * group id riding in nruns as below. *nr stays 0 when the file has no
 * summary (written before it existed): the caller reads the groups. */
static int from_summary(raster_var *v, int g, size_t nchildren, size_t *nr)
{
    nc_type type;
    size_t len;
    *nr = 0;
    int groups = v->format < 4; /* format 4: no region groups */
    if (nc_inq_att(g, NC_GLOBAL, REGIONS_SUMMARY, &type, &len) != NC_NOERR) {
        if (!groups)
            return raster_fail(RASTER_EFORMAT, "%s: no attribute %s", v->name,
                               REGIONS_SUMMARY);
        return RASTER_OK;
    }
    if (type != NC_INT64 || len == 0 || len % REGIONS_SUMMARY_FIELDS != 0 ||
        (groups && len / REGIONS_SUMMARY_FIELDS > nchildren) ||
        /* format 4: each region at least one cell */ len /
                REGIONS_SUMMARY_FIELDS >
            v->ny * v->nx)
        return raster_fail(RASTER_EFORMAT,
                           "%s: attribute %s of the wrong type or length",
                           v->name, REGIONS_SUMMARY);
    if (!groups) { /* v->regions has room for the groups only */
        region_info *all = raster_calloc(len / REGIONS_SUMMARY_FIELDS,
                                         sizeof *all);
        if (!all)
            return raster_fail(RASTER_ENOMEM, "out of memory indexing regions "
                               "of %s", v->name);
        raster_free(v->regions);
        v->regions = all;
    }
    long long *t = raster_reallocarray(NULL, len, sizeof *t);
    if (!t)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory indexing regions of %s", v->name);
    int rc = RASTER_OK, st = nc_get_att_longlong(g, NC_GLOBAL,
                                                 REGIONS_SUMMARY, t);
    if (st != NC_NOERR)
        rc = raster_fail_nc(RASTER_ENETCDF, st, "%s: reading %s: %s", v->name,
                            REGIONS_SUMMARY, nc_strerror(st));
    size_t n = len / REGIONS_SUMMARY_FIELDS;
    if (rc == RASTER_OK)
        rc = regions_summary_sum(v, g, t, len);
    if (rc == RASTER_OK)
        rc = parse_summary(v, t, n);
    raster_free(t);
    for (size_t r = 0; r < n && rc == RASTER_OK && !groups; r++)
        v->regions[r].nruns = (size_t)-1; /* no group */
    for (size_t r = 0; r < n && rc == RASTER_OK && groups; r++) {
        region_info *ri = &v->regions[r];
        char name[32];
        int gid;
        fileio_group_name(ri->id, name, sizeof name);
        if (nc_inq_grp_ncid(g, name, &gid) != NC_NOERR)
            rc = raster_fail(RASTER_EFORMAT, "%s: row %zu of %s is unusable "
                             "or names no region group", v->name, r,
                             REGIONS_SUMMARY);
        else
            ri->nruns = (size_t)gid; /* group id, until sorted */
    }
    if (rc == RASTER_OK)
        *nr = n;
    return rc;
}

int regions_summary_sum(raster_var *v, int g, const long long *t,
                        size_t len)
{
    nc_type type;
    size_t n;
    unsigned crc;
    if (nc_inq_att(g, NC_GLOBAL, SUMS_GROUP_ATT, &type, &n) != NC_NOERR)
        return RASTER_OK; /* written before checksums */
    v->sums = 1;
    if (type != NC_UINT || n != 1 ||
        nc_get_att_uint(g, NC_GLOBAL, SUMS_GROUP_ATT, &crc) != NC_NOERR ||
        crc != sums_i64(0, t, len))
        return raster_fail(RASTER_EFORMAT, "%s: attribute %s does not match "
                           "its checksum %s", v->name, REGIONS_SUMMARY,
                           SUMS_GROUP_ATT);
    return RASTER_OK;
}

/* Sorts the first nr regions by id (handing out the group ids riding in
 * nruns to grps, when given) and checks them together: ids distinct, runs
 * and mixed runs back to back in id order, the grid covered exactly. */
static int finish_regions(raster_var *v, size_t nr, int *grps)
{
    v->nregions = nr;
    qsort(v->regions, nr, sizeof *v->regions, cmp_region);
    size_t total = 0, mixed = 0, run0 = 0;
    for (size_t r = 0; r < nr; r++) {
        region_info *ri = &v->regions[r];
        if (grps)
            grps[r] = (int)ri->nruns;
        ri->nruns = 0;
        if (v->format >= 3 && ri->run0 != run0)
            return raster_fail(
                RASTER_EFORMAT,
                "%s: the runs of region %d are not where its run_rows say",
                v->name, (int)ri->id);
        run0 += ri->run_rows;
        if ((r > 0 && ri->id == v->regions[r - 1].id) ||
            ri->mixed_off != (var_tiled(v) ? 0 : mixed) ||
            ri->pure_store < ri->pure_cells)
            return raster_fail(RASTER_EFORMAT,
                               "%s: region %d is stored twice or its mixed "
                               "cells are misplaced",
                               v->name, (int)ri->id);
        mixed += ri->mixed_cells;
        total += ri->pure_cells + ri->mixed_cells;
        if (total > v->ny * v->nx)
            break;
    }
    if (nr == 0 || total != v->ny * v->nx)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: its regions do not cover the %zu x %zu grid exactly", v->name,
            v->ny, v->nx);
    return RASTER_OK;
}

int regions_from_file(raster_var *v, int g, int *grps)
{
    int n, st;
    if ((st = nc_inq_grps(g, &n, NULL)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st,
                              "%s: listing region groups: %s", v->name,
                              nc_strerror(st));
    int *ids = raster_reallocarray(NULL, n > 0 ? (size_t)n : 1, sizeof *ids);
    v->regions = raster_calloc(n > 0 ? (size_t)n : 1, sizeof *v->regions);
    int rc = RASTER_OK;
    if (!ids || !v->regions) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing regions of "
                         "%s", v->name);
        goto done;
    }
    if (n > 0 && (st = nc_inq_grps(g, NULL, ids)) != NC_NOERR) {
        rc = raster_fail_nc(RASTER_ENETCDF, st, "%s: listing region groups: "
                            "%s", v->name, nc_strerror(st));
        goto done;
    }
    /* the region groups are the children carrying region_id; their
     * group ids ride along in nruns until sorted */
    size_t nr = 0;
    if (v->format >= 3 &&
        (rc = from_summary(v, g, (size_t)n, &nr)) != RASTER_OK)
        goto done;
    for (int i = 0, summarised = nr > 0; i < n && !summarised; i++) {
        nc_type type;
        size_t len;
        int id;
        if (nc_inq_att(ids[i], NC_GLOBAL, "region_id", &type, &len) !=
            NC_NOERR)
            continue;
        region_info *ri = &v->regions[nr];
        char want[32], got[NC_MAX_NAME + 1];
        if (type != NC_INT || len != 1 ||
            nc_get_att_int(ids[i], NC_GLOBAL, "region_id", &id) != NC_NOERR ||
            nc_inq_grpname(ids[i], got) != NC_NOERR ||
            (fileio_group_name(id, want, sizeof want), strcmp(want, got)) ||
            get_count(ids[i], "pure_cells", &ri->pure_cells) != 0 ||
            get_count(ids[i], "mixed_cells", &ri->mixed_cells) != 0 ||
            get_count(ids[i], "mixed_offset", &ri->mixed_off) != 0 ||
            ri->pure_cells + ri->mixed_cells == 0) {
            rc = raster_fail(RASTER_EFORMAT, "%s: region group %d is "
                             "unreadable or inconsistent", v->name, i);
            goto done;
        }
        ri->pure_store = ri->pure_cells; /* a group: up to format 3 */
        if (v->format >= 3) {
            unsigned long long rows[2];
            if (nc_inq_att(ids[i], NC_GLOBAL, "run_rows", &type, &len) !=
                    NC_NOERR || type != NC_UINT64 || len != 2 ||
                nc_get_att_ulonglong(ids[i], NC_GLOBAL, "run_rows", rows) !=
                    NC_NOERR || rows[1] == 0 ||
                rows[1] > ri->pure_cells + ri->mixed_cells) {
                rc = raster_fail(RASTER_EFORMAT, "%s: region group %d has "
                                 "no usable run_rows", v->name, i);
                goto done;
            }
            ri->run0 = (size_t)rows[0];
            ri->run_rows = (size_t)rows[1];
        }
        ri->id = id;
        ri->nruns = (size_t)ids[i]; /* group id, until sorted */
        nr++;
    }
    rc = finish_regions(v, nr, grps);
done:
    raster_free(ids);
    return rc;
}

int regions_from_summary(raster_var *v, const long long *t, size_t len)
{
    if (len == 0 || len % REGIONS_SUMMARY_FIELDS != 0)
        return raster_fail(RASTER_EFORMAT,
                           "%s: attribute %s of the wrong type or length",
                           v->name, REGIONS_SUMMARY);
    size_t n = len / REGIONS_SUMMARY_FIELDS;
    v->regions = raster_calloc(n, sizeof *v->regions);
    if (!v->regions)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory indexing regions of %s", v->name);
    int rc = parse_summary(v, t, n);
    return rc ? rc : finish_regions(v, n, NULL);
}

/* Runs of region r from the layout's segments (writers): its own
 * segments only, through the layout's per-region index, so listing every
 * region's runs is one pass over the segments, not one per region. */
static int runs_from_layout(raster_var *v, size_t r)
{
    region_info *ri = &v->regions[r];
    const layout *lay = v->lay;
    size_t first = lay->region_first[r], n = lay->region_first[r + 1] - first;
    region_run *runs = raster_reallocarray(NULL, n ? n : 1, sizeof *runs);
    if (!runs)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory listing region %d of %s",
                           (int)ri->id, v->name);
    for (size_t k = 0; k < n; k++) {
        const layout_seg *s = &lay->segs[lay->region_segs[first + k]];
        runs[k] = (region_run){s->y, s->x, s->len, s->store, s->off};
    }
    ri->runs = runs;
    return RASTER_OK;
}

int regions_mark(uint64_t *map, size_t a, size_t n)
{
    if (n == 0)
        return 1;
    /* whole words at once: a hyperslab across every region checks each
     * of its runs here (215,000 on the benchmark's grid) */
    size_t w = a / 64, last = (a + n - 1) / 64;
    uint64_t head = ~0ULL << (a % 64), tail = ~0ULL >> (63 - (a + n - 1) % 64);
    if (w == last) {
        uint64_t bits = head & tail;
        if (map[w] & bits)
            return 0;
        map[w] |= bits;
        return 1;
    }
    if ((map[w] & head) || (map[last] & tail))
        return 0;
    for (size_t i = w + 1; i < last; i++)
        if (map[i])
            return 0;
    map[w] |= head;
    for (size_t i = w + 1; i < last; i++)
        map[i] = ~0ULL;
    map[last] |= tail;
    return 1;
}

/* Checks and converts the `runs` table rows of region r. A hyperslab
 * across the grid loads every region's runs, so this loop is kept tight:
 * the fields are compared as unsigned (a negative one is then huge), and
 * since runs come in grid order the box's rows are the first and last. */
static int check_runs(raster_var *v, size_t r, const long long *rows,
                      size_t n, region_run *runs)
{
    region_info *ri = &v->regions[r];
    const unsigned long long ny = v->ny, nx = v->nx, pure = ri->pure_store;
    /* the region's cell numbering: its pure store, then its run of the
     * mixed store (format 5: the whole mixed store, of whole tiles) */
    const unsigned long long want = ri->pure_cells + ri->mixed_cells;
    const unsigned long long cells =
        pure + (var_tiled(v) ? v->store_cells[v->nregions] : ri->mixed_cells);
    const uint32_t mixed_store = (uint32_t)v->nregions;
    const uint64_t mixed_base = ri->mixed_off - pure;
    uint64_t *map = raster_calloc((cells + 63) / 64, sizeof *map);
    if (!map)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory checking region %d of %s",
                           (int)ri->id, v->name);
    unsigned long long py = 0, pend = 0, sum = 0, x0 = ULLONG_MAX, x1 = 0;
    int rc = RASTER_OK;
    for (size_t i = 0; i < n; i++) {
        const long long *f = rows + i * RUN_FIELDS;
        unsigned long long y = (unsigned long long)f[0];
        unsigned long long x = (unsigned long long)f[1];
        unsigned long long len = (unsigned long long)f[2];
        unsigned long long off = (unsigned long long)f[3];
        /* len - 1 wraps for len 0; a run lies in the pure store or in
         * the mixed run, not both */
        if (y >= ny || x >= nx || len - 1 >= nx - x || off >= cells ||
            len > cells - off ||
            (i > 0 && (y < py || (y == py && x < pend))) ||
            (off < pure && off + len > pure) ||
            !regions_mark(map, (size_t)off, (size_t)len)) {
            rc = raster_fail(RASTER_EFORMAT, "%s: run %zu of region %d is "
                             "out of range, out of order or overlapping",
                             v->name, i, (int)ri->id);
            break;
        }
        py = y;
        pend = x + len;
        sum += len;
        int in_pure = off < pure;
        runs[i] = (region_run){
            .y = (uint32_t)y, .x = (uint32_t)x, .len = (uint32_t)len,
            .store = in_pure ? (uint32_t)r : mixed_store,
            .off = in_pure ? (uint64_t)off : mixed_base + (uint64_t)off};
        x0 = x < x0 ? x : x0;
        x1 = pend > x1 ? pend : x1;
    }
    raster_free(map);
    if (rc == RASTER_OK && sum != want)
        rc = raster_fail(RASTER_EFORMAT, "%s: the runs of region %d cover "
                         "%llu of its %llu cells", v->name, (int)ri->id, sum,
                         want);
    if (rc == RASTER_OK && n > 0) {
        ri->box[0] = runs[0].y;
        ri->box[1] = (size_t)x0;
        ri->box[2] = (size_t)py + 1;
        ri->box[3] = (size_t)x1;
    }
    return rc;
}

/* Region r's rows of `runs` against their checksum (integrity.h): each
 * row may pass check_runs and still be wrong, as when the offsets of two
 * runs of one length are swapped. The checksums load with the first
 * region's runs; the caller holds the lazy lock. */
static int check_runs_sum(raster_var *v, size_t r, const long long *rows,
                          size_t n)
{
    if (!v->sum_runs) {
        uint32_t *sums = raster_reallocarray(NULL, v->nregions,
                                             sizeof *sums);
        if (!sums)
            return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                               v->name);
        int rc = sums_table_att(v, "runs", v->nregions, sums);
        if (rc) {
            raster_free(sums);
            return rc;
        }
        v->sum_runs = sums;
    }
    const region_info *ri = &v->regions[r];
    if (sums_region_rows(ri->id, rows, n * RUN_FIELDS) != v->sum_runs[r])
        return raster_fail(RASTER_EFORMAT, "%s: the runs of region %d do "
                           "not match their checksum", v->name, (int)ri->id);
    return RASTER_OK;
}

/* Region r's runs from the file: its own table (format 2) or its rows of
 * the shared one (format 3), checked before use. */
static int runs_from_file(raster_var *v, size_t r)
{
    region_info *ri = &v->regions[r];
    int lean = v->file && v->file->lean; /* through HDF5 (src/format/lean.c) */
    int shared = v->format >= 3;
    int g = shared ? v->grpid : v->store_grp[r], varid = -1, ndims;
    int dimids[2], st;
    nc_type type;
    size_t n = ri->run_rows, fields = 0, cells = ri->pure_cells +
                                                ri->mixed_cells;
    if (!lean &&
        (nc_inq_varid(g, "runs", &varid) != NC_NOERR ||
         nc_inq_var(g, varid, NULL, &type, &ndims, dimids, NULL) !=
             NC_NOERR ||
         type != NC_INT64 || ndims != 2 ||
         nc_inq_dimlen(g, dimids[0], &n) != NC_NOERR ||
         nc_inq_dimlen(g, dimids[1], &fields) != NC_NOERR ||
         fields != RUN_FIELDS || n == 0 ||
         (shared ? ri->run0 + ri->run_rows > n : n > cells)))
        return raster_fail(RASTER_EFORMAT, "%s: runs of region %d missing or "
                           "of the wrong type or shape", v->name, (int)ri->id);
    size_t start[2] = {shared ? ri->run0 : 0, 0};
    if (shared)
        n = ri->run_rows;
    size_t count[2] = {n, RUN_FIELDS};
    long long *rows = raster_scratch(n * RUN_FIELDS, sizeof *rows);
    region_run *runs = raster_reallocarray(NULL, n, sizeof *runs);
    int rc = RASTER_OK;
    if (!rows || !runs)
        rc = raster_fail(RASTER_ENOMEM, "out of memory reading region %d of "
                         "%s", (int)ri->id, v->name);
    else if (lean)
        rc = fileio_table(v, "runs", REGIONS_RUN_FIELDS, start[0], n, rows);
    else if ((st = nc_get_vara_longlong(g, varid, start, count, rows)) !=
             NC_NOERR)
        rc = raster_fail_nc(RASTER_ENETCDF, st, "%s: reading runs of region "
                            "%d: %s", v->name, (int)ri->id, nc_strerror(st));
    if (rc == RASTER_OK && shared && v->sums)
        rc = check_runs_sum(v, r, rows, n);
    if (rc == RASTER_OK)
        rc = check_runs(v, r, rows, n, runs);
    raster_scratch_free(rows);
    if (rc) {
        raster_free(runs);
        return rc;
    }
    ri->runs = runs;
    ri->nruns = n;
    return RASTER_OK;
}

int regions_runs(raster_var *v, size_t r, const region_run **runs, size_t *n)
{
    region_info *ri = &v->regions[r];
    int rc = RASTER_OK;
    lazy_lock(v->file);
    if (!ri->runs)
        rc = v->table_from_layout ? runs_from_layout(v, r)
                                  : runs_from_file(v, r);
    *runs = ri->runs;
    *n = ri->nruns;
    lazy_unlock(v->file);
    return rc;
}

/* Rows of the stored mask read per netCDF call, at most this many bytes
 * of int. */
#define MASK_BLOCK_BYTES ((size_t)4 << 20)

int regions_mask_var(const raster_var *v, int *varid)
{
    if (v->file && v->file->lean) { /* checked at the lean open */
        *varid = -1;
        return RASTER_OK;
    }
    int nd, dims[2];
    size_t my = 0, mx = 0;
    if (nc_inq_varid(v->grpid, "mask", varid) != NC_NOERR ||
        nc_inq_varndims(v->grpid, *varid, &nd) != NC_NOERR || nd != 2 ||
        nc_inq_vardimid(v->grpid, *varid, dims) != NC_NOERR ||
        nc_inq_dimlen(v->grpid, dims[0], &my) != NC_NOERR ||
        nc_inq_dimlen(v->grpid, dims[1], &mx) != NC_NOERR || my != v->ny ||
        mx != v->nx)
        return raster_fail(RASTER_EFORMAT,
                           "%s: no stored mask of its %zu x %zu grid", v->name,
                           v->ny, v->nx);
    return RASTER_OK;
}

int regions_mask_rows(const raster_var *v, int varid, size_t y0, size_t ny,
                      size_t x0, size_t nx, int *buf)
{
    if (varid < 0) /* found at a lean open: through HDF5 for good */
        return fileio_mask_rows(v, y0, ny, x0, nx, buf);
    size_t start[2] = {y0, x0}, count[2] = {ny, nx};
    int st = nc_get_vara_int(v->grpid, varid, start, count, buf);
    /* a value out of int's range is a damaged mask */
    if (st != NC_NOERR)
        return raster_fail_nc(
            st == NC_ERANGE ? RASTER_EFORMAT : RASTER_ENETCDF, st,
            "%s: reading its stored mask: %s", v->name, nc_strerror(st));
    return RASTER_OK;
}

static int check_mask(raster_var *v, size_t r);

int regions_check_mask(raster_var *v, size_t r)
{
    lazy_lock(v->file);
    int rc = check_mask(v, r);
    lazy_unlock(v->file);
    return rc;
}

static int check_mask(raster_var *v, size_t r)
{
    region_info *ri = &v->regions[r];
    /* with checksums, the runs were checked against theirs as they
     * loaded (check_runs_sum): a run moved since it was written is
     * refused there, and reading the mask over the regions' boxes was
     * 10-13 ms of a three-basin read of the bench file */
    if (v->lay || ri->on_mask || v->sums)
        return RASTER_OK;
    const region_run *runs;
    size_t n;
    int rc = regions_runs(v, r, &runs, &n), varid;
    if (rc)
        return rc;
    if ((rc = regions_mask_var(v, &varid)) != RASTER_OK)
        return rc;
    /* the mask over the region's box, a block of rows at a time */
    size_t x0 = ri->box[1], bw = ri->box[3] - ri->box[1];
    size_t rows = MASK_BLOCK_BYTES / (bw * sizeof(int));
    rows = rows < 1 ? 1 : rows;
    int *m = raster_reallocarray(NULL, rows * bw, sizeof *m);
    if (!m)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory checking region %d of %s",
                           (int)ri->id, v->name);
    size_t k = 0;
    for (size_t y0 = ri->box[0]; y0 < ri->box[2] && rc == RASTER_OK;
         y0 += rows) {
        size_t y1 = y0 + rows < ri->box[2] ? y0 + rows : ri->box[2];
        if ((rc = regions_mask_rows(v, varid, y0, y1 - y0, x0, bw, m)))
            break;
        for (; k < n && runs[k].y < y1 && rc == RASTER_OK; k++) {
            const int *row = m + (runs[k].y - y0) * bw + (runs[k].x - x0);
            for (size_t i = 0; i < runs[k].len; i++)
                if (row[i] != ri->id) {
                    rc = raster_fail(RASTER_EFORMAT, "%s: a run of region "
                                     "%d covers grid cell (%u, %zu), which "
                                     "the mask gives to region %d", v->name,
                                     (int)ri->id, runs[k].y, runs[k].x + i,
                                     row[i]);
                    break;
                }
        }
    }
    raster_free(m);
    if (rc == RASTER_OK)
        ri->on_mask = 1;
    return rc;
}

void regions_table_rows(const raster_var *v, size_t r, long long *rows)
{
    const region_info *ri = &v->regions[r];
    for (size_t i = 0; i < ri->nruns; i++) {
        const region_run *u = &ri->runs[i];
        /* offsets in the region's own cell numbering: its pure store, then
         * its run of the mixed store */
        uint64_t off = u->store == r ? u->off
                                     : ri->pure_store + u->off - ri->mixed_off;
        long long f[RUN_FIELDS] = {u->y, u->x, u->len, (long long)off};
        memcpy(rows + i * RUN_FIELDS, f, sizeof f);
    }
}
