/*
 * stats.c - regional statistics (raster_region_statistics): count, sums,
 * spread, extremes and weighted sums of a set of regions per outer index
 * in float64: from the statistics the file keeps (statstore.c) where they
 * are fresh, else in one streaming pass over region reads of a few
 * records at a time.
 */
#include <math.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "integrity.h"
#include "ncbind.h"
#include "regions.h"
#include "stats.h"
#include "state.h"
#include "statstore.h"
#include "var.h"

/* Values read per block: the bound of the pass's memory. */
size_t stats_block_bytes = (size_t)8 << 20;
int stats_use_stored = 1;

/* RASTER_STATS=values: every record from the values, the stored
 * statistics ignored (to check them against the data, or to time the
 * pass over the data). */
static int stored_allowed(void)
{
    const char *e = getenv("RASTER_STATS");
    return stats_use_stored && !(e && strcmp(e, "values") == 0);
}

/* A weight variable as found from v's group up (statstore_weights_var):
 * where it is, its type, value size and fill value, and the raster
 * variable it is when it is stored by region itself. */
typedef struct weight_var {
    int g, wv;
    nc_type t;
    size_t wel;
    unsigned char fill[8];
    raster_var *rw;
} weight_var;

static int weight_find(raster_var *v, const char *name, weight_var *w)
{
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    lazy_lock(v->file);
    rc = statstore_weights_var(v, name, &w->g, &w->wv, &w->t, &w->wel,
                               w->fill);
    lazy_unlock(v->file);
    w->rw = rc ? NULL : raster_var_by_varid(v->file, w->g, w->wv);
    return rc;
}

/* The weights' box start/count (2-D) into raw: through raster when they
 * are stored by region, else through netCDF under the file's lock (a
 * handle may be read from several threads, raster.h; raster_var_get's
 * threads take the lock themselves). */
static int weight_box(raster_var *v, const weight_var *w, const char *name,
                      const size_t *start, const size_t *count, void *raw)
{
    if (w->rw)
        return raster_var_get(w->rw, start, count, NULL, raw);
    lazy_lock(v->file);
    int st = nc_get_vara(w->g, w->wv, start, count, raw);
    lazy_unlock(v->file);
    return st == NC_NOERR ? RASTER_OK
                          : raster_fail_nc(RASTER_ENETCDF, st, "reading "
                                           "weights %s: %s", name,
                                           nc_strerror(st));
}

/* Reads weight variable `name` at the packed cells of the selected
 * regions (ys/xs of raster_region_cells), as doubles, NaN where its
 * value is its fill value or NaN. netCDF is called under the file's lock
 * (a handle may be read from several threads, raster.h), but not
 * raster_var_get, whose threads take it. */
static int read_weights(raster_var *v, const int32_t *ids, size_t nids,
                        const char *name, size_t n, double *w)
{
    weight_var wv;
    int rc = weight_find(v, name, &wv);
    if (rc)
        return rc;
    size_t wel = wv.wel;
    size_t box[4];
    if ((rc = raster_region_bbox(v, ids, nids, box)) != RASTER_OK)
        return rc;
    size_t bh = box[2] - box[0], bw = box[3] - box[1];
    size_t *ys = raster_reallocarray(NULL, n ? n : 1, sizeof *ys);
    size_t *xs = raster_reallocarray(NULL, n ? n : 1, sizeof *xs);
    unsigned char *raw = raster_reallocarray(NULL, bh * bw, wel);
    if (!ys || !xs || !raw) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory reading weights %s",
                         name);
        goto out;
    }
    if ((rc = raster_region_cells(v, ids, nids, ys, xs)) != RASTER_OK)
        goto out;
    size_t start[2] = {box[0], box[1]}, count[2] = {bh, bw};
    if ((rc = weight_box(v, &wv, name, start, count, raw)) != RASTER_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        size_t k = (ys[i] - box[0]) * bw + (xs[i] - box[1]);
        stats_to_double(raw + k * wel, wv.t, wel, wv.fill, &w[i], 1);
    }
out:
    raster_free(ys);
    raster_free(xs);
    raster_free(raw);
    return rc;
}

/* The weight checksum of the region at position pos
 * (statstore_region_crc): its runs' weights, read a band of rows of its
 * bounding box at a time and converted a slice at a time, taken in
 * order; no array of the region's cells. */
#define WEIGHT_BAND_BYTES ((size_t)4 << 20)
static int region_weight_crc(raster_var *v, size_t pos, const char *name,
                             uint32_t *crc)
{
    weight_var wv;
    *crc = 0;
    int rc = weight_find(v, name, &wv);
    const region_run *u;
    size_t n;
    if (rc || (rc = regions_runs(v, pos, &u, &n)) != RASTER_OK || n == 0)
        return rc;
    size_t wel = wv.wel;
    size_t x0 = SIZE_MAX, x1 = 0;
    for (size_t i = 0; i < n; i++) {
        /* grid order, as the table is written: the bands below rely on
         * it (a table out of order is not read at all) */
        if (i > 0 && (u[i].y < u[i - 1].y ||
                      (u[i].y == u[i - 1].y && u[i].x < u[i - 1].x)))
            return raster_fail(RASTER_EFORMAT, "%s: the runs of a region are "
                               "out of order", v->name);
        x0 = u[i].x < x0 ? u[i].x : x0;
        x1 = u[i].x + u[i].len > x1 ? u[i].x + u[i].len : x1;
    }
    size_t bw = x1 - x0, band = WEIGHT_BAND_BYTES / (bw * wel);
    band = band ? band : 1;
    unsigned char *raw = raster_reallocarray(NULL, band * bw, wel);
    if (!raw)
        return raster_fail(RASTER_ENOMEM, "out of memory reading weights "
                           "%s", name);
    double buf[1024];
    uint32_t c = 0;
    for (size_t i = 0; i < n && rc == RASTER_OK;) {
        /* the rows [y0, y0 + rows) from run i's on */
        size_t y0 = u[i].y, rows = u[n - 1].y + 1 - y0;
        rows = rows < band ? rows : band;
        size_t start[2] = {y0, x0}, count[2] = {rows, bw};
        rc = weight_box(v, &wv, name, start, count, raw);
        for (; rc == RASTER_OK && i < n && u[i].y < y0 + rows; i++)
            for (size_t k = 0; k < u[i].len; k += 1024) {
                size_t m = u[i].len - k < 1024 ? u[i].len - k : 1024;
                size_t at = (u[i].y - y0) * bw + (u[i].x - x0) + k;
                stats_to_double(raw + at * wel, wv.t, wel, wv.fill, buf, m);
                c = crc32c(c, buf, m * sizeof *buf);
            }
    }
    raster_free(raw);
    *crc = c;
    return rc;
}

/* The weight checksum of each region of ids, in *crcs by region
 * position, so that taking a small region's kept statistics reads its
 * weights, not the grid's. */
static int region_weight_crcs(raster_var *v, const int32_t *ids,
                              size_t nids, const char *name, uint32_t **crcs)
{
    *crcs = raster_calloc(v->nregions ? v->nregions : 1, sizeof **crcs);
    if (!*crcs)
        return raster_fail(RASTER_ENOMEM, "out of memory");
    int rc = RASTER_OK;
    for (size_t i = 0; i < nids && rc == RASTER_OK; i++) {
        long pos = regions_pos(v, ids[i]);
        if (pos < 0)
            return raster_fail(RASTER_ENOTFOUND, "%s has no region %d",
                               v->name, (int)ids[i]);
        rc = region_weight_crc(v, (size_t)pos, name, &(*crcs)[pos]);
    }
    return rc;
}

int raster_region_statistics(raster_var *v, const int32_t *ids,
                             size_t nids, const size_t *ostart,
                             const size_t *ocount, const char *weights,
                             raster_stats *out)
{
    if (!var_ok(v) || !ids || !out ||
        (var_nouter(v) > 0 && (!ostart || !ocount)))
        return raster_fail(RASTER_EINVAL, "NULL argument");
    int no = var_nouter(v);
    size_t plane, planes = 1;
    int rc = raster_region_size(v, ids, nids, RASTER_LAYOUT_PACKED, &plane);
    if (rc)
        return rc;
    for (int i = 0; i < no; i++)
        if (raster_mul_overflows(planes, ocount[i], &planes))
            return raster_fail(RASTER_EOVERFLOW, "%s: too many records",
                               v->name);
    size_t rec_bytes;
    if (raster_mul_overflows(plane, v->elem, &rec_bytes))
        return raster_fail(RASTER_EOVERFLOW, "%s: region too large",
                           v->name);
    /* a block: up to `blk` records along the last outer dimension */
    size_t last = no > 0 ? ocount[no - 1] : 1;
    size_t blk = rec_bytes ? stats_block_bytes / rec_bytes : last;
    if (blk < 1)
        blk = 1;
    if (blk > last)
        blk = last;
    unsigned char *done = NULL;
    unsigned char *buf = raster_reallocarray(NULL, blk * plane, v->elem);
    double *x = raster_reallocarray(NULL, plane ? plane : 1, sizeof *x);
    double *w = weights ? raster_reallocarray(NULL, plane ? plane : 1,
                                              sizeof *w)
                        : NULL;
    if (!buf || !x || (weights && !w)) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for statistics of "
                         "%s", v->name);
        goto out;
    }
    done = raster_calloc(planes ? planes : 1, 1);
    if (!done) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for statistics of "
                         "%s", v->name);
        goto out;
    }
    /* stored statistics first; with weights only when kept with the same
     * weights (their CRC32C); any doubt leaves a record to the data */
    size_t left = planes;
    if (stored_allowed() && no > 0 && planes > 0) {
        uint32_t *wcrc = NULL;
        int usable = !weights ||
                     region_weight_crcs(v, ids, nids, weights, &wcrc) ==
                         RASTER_OK;
        if (usable)
            rc = statstore_get(v, ids, nids, ostart, ocount, weights, wcrc,
                               out, done);
        raster_free(wcrc);
        if (rc != RASTER_OK)
            goto out;
        for (size_t i = 0; i < planes; i++)
            left -= done[i];
    }
    if (left > 0 && weights &&
        (rc = read_weights(v, ids, nids, weights, plane, w)) != RASTER_OK)
        goto out;
    size_t os[RASTER_MAX_DIMS] = {0}, oc[RASTER_MAX_DIMS] = {0};
    size_t idx[RASTER_MAX_DIMS] = {0}; /* offset in the box, outer dims */
    size_t k0 = 0;
    while (k0 < planes && left > 0) {
        for (int i = 0; i < no; i++) {
            os[i] = ostart[i] + idx[i];
            oc[i] = 1;
        }
        size_t k = 1;
        if (no > 0) {
            k = ocount[no - 1] - idx[no - 1];
            if (k > blk)
                k = blk;
            oc[no - 1] = k;
        }
        size_t todo = 0;
        for (size_t r = 0; r < k; r++)
            todo += !done[k0 + r];
        if (todo > 0 &&
            (rc = raster_region_read(v, ids, nids, os, oc,
                                     RASTER_LAYOUT_PACKED, buf)) !=
                RASTER_OK)
            goto out;
        for (size_t r = 0; r < k && todo > 0; r++) {
            if (done[k0 + r])
                continue;
            stats_to_double(buf + r * rec_bytes, v->xtype, v->elem, v->fill,
                            x, plane);
            if ((rc = stats_cells(x, w, NULL, plane, 1, &out[k0 + r])) !=
                RASTER_OK)
                goto out;
        }
        left -= todo;
        k0 += k;
        /* advance the index, last outer dimension by k */
        for (int i = no - 1; i >= 0; i--) {
            idx[i] += i == no - 1 ? k : 1;
            if (idx[i] < ocount[i])
                break;
            idx[i] = 0;
        }
    }
    /* a box with a zero count reads nothing but is still checked */
    if (planes == 0) {
        size_t c0[RASTER_MAX_DIMS] = {0};
        rc = raster_region_read(v, ids, nids, ostart, c0,
                                RASTER_LAYOUT_PACKED, buf);
    }
out:
    raster_free(buf);
    raster_free(x);
    raster_free(w);
    raster_free(done);
    return rc;
}
