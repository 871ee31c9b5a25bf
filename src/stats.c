/*
 * stats.c - regional statistics (raster_region_statistics): count, sum, sum of
 * squares, spread, extremes and weighted sums of a set of regions per
 * outer index, computed in float64 in one streaming pass over region
 * reads of a few records at a time.
 */
#include <math.h>
#include <netcdf.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "convert.h"
#include "error.h"
#include "ncbind.h"
#include "stats.h"
#include "var.h"

/* Values read per block: the bound of the pass's memory. */
size_t stats_block_bytes = (size_t)8 << 20;

/* Neumaier's compensated sum: plain double sums of a million values lose
 * up to 1e-10 relative, near the 1e-9 the statistics promise. */
typedef struct ksum {
    double s, c;
} ksum;

static void ksum_add(ksum *k, double x)
{
    double t = k->s + x;
    if (fabs(k->s) >= fabs(x))
        k->c += (k->s - t) + x;
    else
        k->c += (x - t) + k->s;
    k->s = t;
}

static double ksum_get(const ksum *k) { return k->s + k->c; }

static void stats_empty(raster_stats *s)
{
    memset(s, 0, sizeof *s);
    s->min = s->max = NAN;
}

/* The statistics of n values x[] (NaN: not valid) with weights w[] (NULL:
 * none; NaN: not valid), in two passes: sums first, then the deviations
 * from the mean, as numpy's std computes them. */
static void stats_plane(const double *x, const double *w, size_t n,
                        raster_stats *s)
{
    ksum sum = {0, 0}, sq = {0, 0}, ws = {0, 0}, wt = {0, 0};
    uint64_t count = 0, wcount = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (isnan(v))
            continue;
        count++;
        ksum_add(&sum, v);
        ksum_add(&sq, v * v);
        if (v < lo)
            lo = v;
        if (v > hi)
            hi = v;
        if (w && !isnan(w[i])) {
            wcount++;
            ksum_add(&ws, w[i] * v);
            ksum_add(&wt, w[i]);
        }
    }
    stats_empty(s);
    s->count = count;
    s->wcount = wcount;
    if (count == 0)
        return;
    s->sum = ksum_get(&sum);
    s->sumsq = ksum_get(&sq);
    s->min = lo;
    s->max = hi;
    s->wsum = ksum_get(&ws);
    s->wtotal = ksum_get(&wt);
    double mean = s->sum / (double)count;
    double wmean = s->wtotal != 0 ? s->wsum / s->wtotal : 0;
    ksum m2 = {0, 0}, wm2 = {0, 0};
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        if (isnan(v))
            continue;
        ksum_add(&m2, (v - mean) * (v - mean));
        if (w && !isnan(w[i]))
            ksum_add(&wm2, w[i] * (v - wmean) * (v - wmean));
    }
    s->m2 = ksum_get(&m2);
    s->wm2 = ksum_get(&wm2);
}

void raster_stats_merge(raster_stats *a, const raster_stats *b)
{
    if (!a || !b || b->count == 0)
        return;
    if (a->count == 0) {
        *a = *b;
        return;
    }
    double na = (double)a->count, nb = (double)b->count;
    double d = b->sum / nb - a->sum / na;
    a->m2 += b->m2 + d * d * na * nb / (na + nb);
    if (b->wtotal != 0 && a->wtotal != 0) {
        double wa = a->wtotal, wb = b->wtotal;
        double wd = b->wsum / wb - a->wsum / wa;
        a->wm2 += b->wm2 + wd * wd * wa * wb / (wa + wb);
    } else {
        a->wm2 += b->wm2;
    }
    a->count += b->count;
    a->sum += b->sum;
    a->sumsq += b->sumsq;
    a->wcount += b->wcount;
    a->wsum += b->wsum;
    a->wtotal += b->wtotal;
    if (b->min < a->min)
        a->min = b->min;
    if (b->max > a->max)
        a->max = b->max;
}

double raster_stats_value(const raster_stats *s, int stat, int weighted)
{
    if (!s)
        return NAN;
    switch (stat) {
    case RASTER_STAT_COUNT: return (double)s->count;
    case RASTER_STAT_SUM: return weighted ? s->wsum : s->sum;
    case RASTER_STAT_MIN: return s->count ? s->min : NAN;
    case RASTER_STAT_MAX: return s->count ? s->max : NAN;
    case RASTER_STAT_MEAN:
        if (weighted)
            return s->wtotal != 0 ? s->wsum / s->wtotal : NAN;
        return s->count ? s->sum / (double)s->count : NAN;
    case RASTER_STAT_STD:
        if (weighted)
            return s->wtotal != 0 ? sqrt(s->wm2 / s->wtotal) : NAN;
        return s->count ? sqrt(s->m2 / (double)s->count) : NAN;
    default: return NAN;
    }
}

/* Converts n values of the variable's type to double, NaN where a value
 * is the fill value `fill` (compared as values for floating types, so
 * -0.0 matches a 0.0 fill, byte for byte otherwise). */
static void to_double(const void *src, int xtype, size_t elem,
                      const unsigned char *fill, double *dst, size_t n)
{
    (void)convert_values(src, (ptrdiff_t)elem, xtype, dst, sizeof *dst,
                         NC_DOUBLE, n);
    const unsigned char *p = src;
    if (xtype == NC_FLOAT) {
        float f;
        memcpy(&f, fill, sizeof f);
        for (size_t i = 0; i < n; i++)
            if (dst[i] == (double)f)
                dst[i] = NAN;
    } else if (xtype == NC_DOUBLE) {
        double f;
        memcpy(&f, fill, sizeof f);
        for (size_t i = 0; i < n; i++)
            if (dst[i] == f)
                dst[i] = NAN;
    } else {
        for (size_t i = 0; i < n; i++)
            if (memcmp(p + i * elem, fill, elem) == 0)
                dst[i] = NAN;
    }
}

/* The weight variable `name`, seen from the variable's group upwards. */
static int find_weights(const raster_var *v, const char *name, int *grp,
                        int *varid)
{
    int g = v->parent;
    for (;;) {
        if (nc_inq_varid(g, name, varid) == NC_NOERR) {
            *grp = g;
            return RASTER_OK;
        }
        int parent;
        if (nc_inq_grp_parent(g, &parent) != NC_NOERR)
            return raster_fail(RASTER_ENOTFOUND, "no weight variable '%s' "
                               "for %s", name, v->name);
        g = parent;
    }
}

/* Reads weight variable `name` at the packed cells of the selected
 * regions (ys/xs of raster_region_cells), as doubles, NaN where its
 * value is its fill value or NaN. */
static int read_weights(raster_var *v, const int32_t *ids, size_t nids,
                        const char *name, size_t n, double *w)
{
    int rc = file_netcdf(v->file);
    int g = -1, wv = -1, nd, st;
    if (rc)
        return rc;
    if ((rc = find_weights(v, name, &g, &wv)) != RASTER_OK)
        return rc;
    nc_type t;
    int dims[NC_MAX_VAR_DIMS];
    if ((st = nc_inq_varndims(g, wv, &nd)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s", name,
                              nc_strerror(st));
    if (nd != 2)
        return raster_fail(RASTER_EINVAL, "weights %s have %d dimensions, "
                           "not the grid's 2", name, nd);
    if ((st = nc_inq_var(g, wv, NULL, &t, NULL, dims, NULL)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s", name,
                              nc_strerror(st));
    size_t wel = convert_type_size(t), len[2];
    if (wel == 0)
        return raster_fail(RASTER_EINVAL, "weights %s are not numeric",
                           name);
    for (int k = 0; k < 2; k++)
        if ((st = nc_inq_dimlen(g, dims[k], &len[k])) != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s",
                                  name, nc_strerror(st));
    if (len[0] != v->ny || len[1] != v->nx)
        return raster_fail(RASTER_EINVAL, "weights %s are %zu x %zu, the "
                           "grid of %s %zu x %zu", name, len[0], len[1],
                           v->name, v->ny, v->nx);
    unsigned char fill[8];
    int nofill = 0;
    if ((st = nc_inq_var_fill(g, wv, &nofill, fill)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s", name,
                              nc_strerror(st));
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
    /* weights stored by region themselves are read through raster */
    raster_var *rw = raster_var_by_varid(v->file, g, wv);
    if (rw) {
        if ((rc = raster_var_get(rw, start, count, NULL, raw)) != RASTER_OK)
            goto out;
    } else if ((st = nc_get_vara(g, wv, start, count, raw)) != NC_NOERR) {
        rc = raster_fail_nc(RASTER_ENETCDF, st, "reading weights %s: %s",
                            name, nc_strerror(st));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (ys[i] - box[0]) * bw + (xs[i] - box[1]);
        to_double(raw + k * wel, t, wel, fill, &w[i], 1);
    }
out:
    raster_free(ys);
    raster_free(xs);
    raster_free(raw);
    return rc;
}

int raster_region_statistics(raster_var *v, const int32_t *ids, size_t nids,
                        const size_t *ostart, const size_t *ocount,
                        const char *weights, raster_stats *out)
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
    if (weights &&
        (rc = read_weights(v, ids, nids, weights, plane, w)) != RASTER_OK)
        goto out;
    size_t os[RASTER_MAX_DIMS] = {0}, oc[RASTER_MAX_DIMS] = {0};
    size_t idx[RASTER_MAX_DIMS] = {0}; /* offset in the box, outer dims */
    size_t done = 0;
    while (done < planes) {
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
        if (plane > 0 &&
            (rc = raster_region_read(v, ids, nids, os, oc,
                                     RASTER_LAYOUT_PACKED, buf)) !=
                RASTER_OK)
            goto out;
        for (size_t r = 0; r < k; r++) {
            to_double(buf + r * rec_bytes, v->xtype, v->elem, v->fill, x,
                      plane);
            stats_plane(x, w, plane, &out[done + r]);
        }
        done += k;
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
    return rc;
}
