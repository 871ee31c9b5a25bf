/*
 * statstore.c - statistics kept in the file (docs/FORMAT.md, "Stored
 * statistics"): a writer computes each whole record's per-region
 * statistics from the values it stores, marks the regions of records a
 * partial write touches stale, and recomputes those at close from the
 * stores; readers take fresh ones instead of reading the data. Also the
 * float64 reductions raster_region_statistics shares.
 */
#include "statstore.h"

#include <math.h>
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "chunkio.h"
#include "convert.h"
#include "error.h"
#include "integrity.h"
#include "ncbind.h"
#include "regions.h"
#include "state.h"

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

void stats_to_double(const void *src, int xtype, size_t elem,
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

/* Per region: the sums first, then the deviations from the mean, as
 * numpy's std computes them (two passes over x). Values are summed plainly
 * in blocks of BLOCK (partial sums p*), the blocks' sums compensated: as
 * accurate as compensating every value, at a fraction of its cost. */
#define BLOCK 128
typedef struct acc {
    ksum sum, sq, ws, wt, m2, wm2;
    uint64_t n, wn;
    double lo, hi, mean, wmean;
} acc;

/* First pass over n values of one region (a run of cells): locals in
 * registers, folded into c's compensated sums every BLOCK values. */
static void run_sums(acc *c, const double *x, const double *w, size_t n)
{
    double lo = c->lo, hi = c->hi;
    uint64_t cnt = 0, wcnt = 0;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        double s = 0, q = 0, ws = 0, wt = 0;
        for (size_t i = b; i < e; i++) {
            double v = x[i];
            if (isnan(v))
                continue;
            cnt++;
            s += v;
            q += v * v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            if (w && !isnan(w[i])) {
                wcnt++;
                ws += w[i] * v;
                wt += w[i];
            }
        }
        ksum_add(&c->sum, s);
        ksum_add(&c->sq, q);
        ksum_add(&c->ws, ws);
        ksum_add(&c->wt, wt);
    }
    c->lo = lo;
    c->hi = hi;
    c->n += cnt;
    c->wn += wcnt;
}

/* Second pass: the deviations from c's means. */
static void run_devs(acc *c, const double *x, const double *w, size_t n)
{
    double mean = c->mean, wmean = c->wmean;
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        double m2 = 0, wm2 = 0;
        for (size_t i = b; i < e; i++) {
            double v = x[i];
            if (isnan(v))
                continue;
            m2 += (v - mean) * (v - mean);
            if (w && !isnan(w[i]))
                wm2 += w[i] * (v - wmean) * (v - wmean);
        }
        ksum_add(&c->m2, m2);
        ksum_add(&c->wm2, wm2);
    }
}

/* Calls fn on each run of consecutive cells of one region. */
static void each_run(acc *a, const double *x, const double *w,
                     const int32_t *reg, size_t n,
                     void (*fn)(acc *, const double *, const double *,
                                size_t))
{
    for (size_t i = 0; i < n;) {
        int32_t r = reg ? reg[i] : 0;
        size_t j = reg ? i + 1 : n;
        while (j < n && reg[j] == r)
            j++;
        if (r >= 0)
            fn(&a[r], x + i, w ? w + i : NULL, j - i);
        i = j;
    }
}

int stats_cells(const double *x, const double *w, const int32_t *reg,
                size_t n, size_t nreg, raster_stats *out)
{
    acc one, *a = nreg == 1 ? &one : raster_calloc(nreg, sizeof *a);
    if (!a)
        return raster_fail(RASTER_ENOMEM, "out of memory for statistics of "
                           "%zu regions", nreg);
    if (nreg == 1)
        memset(a, 0, sizeof *a);
    for (size_t r = 0; r < nreg; r++) {
        a[r].lo = INFINITY;
        a[r].hi = -INFINITY;
    }
    each_run(a, x, w, reg, n, run_sums);
    for (size_t r = 0; r < nreg; r++) {
        double wt = ksum_get(&a[r].wt);
        a[r].mean = a[r].n ? ksum_get(&a[r].sum) / (double)a[r].n : 0;
        a[r].wmean = wt != 0 ? ksum_get(&a[r].ws) / wt : 0;
    }
    each_run(a, x, w, reg, n, run_devs);
    for (size_t r = 0; r < nreg; r++) {
        const acc *c = &a[r];
        out[r] = (raster_stats){.count = c->n, .min = NAN, .max = NAN,
                                .wcount = c->wn};
        if (c->n == 0)
            continue;
        out[r].sum = ksum_get(&c->sum);
        out[r].sumsq = ksum_get(&c->sq);
        out[r].m2 = ksum_get(&c->m2);
        out[r].min = c->lo;
        out[r].max = c->hi;
        out[r].wsum = ksum_get(&c->ws);
        out[r].wtotal = ksum_get(&c->wt);
        out[r].wm2 = ksum_get(&c->wm2);
    }
    if (a != &one)
        raster_free(a);
    return RASTER_OK;
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

/* ---- the dataset ------------------------------------------------------- */

/* Finds v's stats dataset once (-1: none, or not of the shape it must
 * have: then it is ignored, the statistics being computable from the
 * data), and the name of the weights it was kept with. */
static int lookup(raster_var *v)
{
    if (v->stats_looked)
        return RASTER_OK;
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    lazy_lock(v->file);
    if (v->stats_looked) {
        lazy_unlock(v->file);
        return RASTER_OK;
    }
    int id, nd, dims[RASTER_MAX_DIMS + 2], no = var_nouter(v), ok = 0;
    size_t len[2] = {0, 0};
    nc_type t;
    if (nc_inq_varid(v->grpid, STATS_VAR, &id) == NC_NOERR &&
        nc_inq_varndims(v->grpid, id, &nd) == NC_NOERR && nd == no + 2 &&
        nc_inq_var(v->grpid, id, NULL, &t, NULL, dims, NULL) == NC_NOERR &&
        t == NC_DOUBLE &&
        nc_inq_dimlen(v->grpid, dims[no], &len[0]) == NC_NOERR &&
        nc_inq_dimlen(v->grpid, dims[no + 1], &len[1]) == NC_NOERR &&
        len[0] == v->nregions && len[1] == STATS_FIELDS) {
        ok = 1;
        for (int i = 0; i < no; i++)
            ok &= dims[i] == v->dimids[i];
        size_t vl;
        if (nc_inq_attlen(v->grpid, id, STATS_VOID_ATT, &vl) == NC_NOERR)
            ok = 0; /* a writer that keeps none wrote since */
    }
    size_t wl;
    if (ok && !v->stats_weights &&
        nc_inq_attlen(v->grpid, id, STATS_WEIGHTS_ATT, &wl) == NC_NOERR &&
        wl > 0 && wl <= NC_MAX_NAME) {
        char *name = raster_calloc(wl + 1, 1);
        if (name &&
            nc_get_att_text(v->grpid, id, STATS_WEIGHTS_ATT, name) == NC_NOERR)
            v->stats_weights = name;
        else
            raster_free(name);
    }
    v->stats_var = ok ? id : -1;
    v->stats_looked = 1;
    lazy_unlock(v->file);
    return RASTER_OK;
}

int statstore_void(raster_var *v)
{
    int rc = lookup(v);
    if (rc || v->stats_var < 0)
        return rc;
    int one = 1;
    int st = nc_put_att_int(v->grpid, v->stats_var, STATS_VOID_ATT, NC_INT,
                            1, &one);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: voiding its "
                              "statistics: %s", v->name, nc_strerror(st));
    v->stats_var = -1;
    return RASTER_OK;
}

int raster_var_set_stats_weights(raster_var *v, const char *name)
{
    if (!var_ok(v) || !name || !*name)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (!v->file->writable)
        return raster_fail(RASTER_EINVAL, "%s: file is read-only", v->name);
    int rc = lookup(v);
    if (rc)
        return rc;
    if (v->stats_var < 0)
        return raster_fail(RASTER_EUNSUPPORTED, "%s keeps no statistics "
                           "(written before they were kept, format 2, or "
                           "a parallel file)", v->name);
    char *copy = raster_malloc(strlen(name) + 1);
    if (!copy)
        return raster_fail(RASTER_ENOMEM, "out of memory");
    strcpy(copy, name);
    int st = nc_put_att_text(v->grpid, v->stats_var, STATS_WEIGHTS_ATT,
                             strlen(name), name);
    if (st != NC_NOERR) {
        raster_free(copy);
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: naming the weights "
                              "of its statistics: %s", v->name,
                              nc_strerror(st));
    }
    raster_free(v->stats_weights);
    v->stats_weights = copy;
    v->stats_wread = 0; /* read again at the next whole-record write */
    return RASTER_OK;
}

int statstore_weights_var(raster_var *v, const char *name, int *g,
                          int *wv, nc_type *t, size_t *wel,
                          unsigned char *fill)
{
    int nd, st, dims[NC_MAX_VAR_DIMS];
    for (*g = v->parent;;) {
        if (nc_inq_varid(*g, name, wv) == NC_NOERR)
            break;
        int parent;
        if (nc_inq_grp_parent(*g, &parent) != NC_NOERR)
            return raster_fail(RASTER_ENOTFOUND, "no weight variable '%s' "
                               "for %s", name, v->name);
        *g = parent;
    }
    size_t len[2];
    if ((st = nc_inq_varndims(*g, *wv, &nd)) != NC_NOERR ||
        (nd == 2 &&
         ((st = nc_inq_var(*g, *wv, NULL, t, NULL, dims, NULL)) != NC_NOERR ||
          (st = nc_inq_dimlen(*g, dims[0], &len[0])) != NC_NOERR ||
          (st = nc_inq_dimlen(*g, dims[1], &len[1])) != NC_NOERR)))
        return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s", name,
                              nc_strerror(st));
    if (nd != 2)
        return raster_fail(RASTER_EINVAL, "weights %s have %d dimensions, "
                           "not the grid's 2", name, nd);
    if ((*wel = convert_type_size(*t)) == 0)
        return raster_fail(RASTER_EINVAL, "weights %s are not numeric",
                           name);
    if (len[0] != v->ny || len[1] != v->nx)
        return raster_fail(RASTER_EINVAL, "weights %s are %zu x %zu, the "
                           "grid of %s %zu x %zu", name, len[0], len[1],
                           v->name, v->ny, v->nx);
    int nofill = 0;
    if ((st = nc_inq_var_fill(*g, *wv, &nofill, fill)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "weights %s: %s", name,
                              nc_strerror(st));
    return RASTER_OK;
}

/* statstore_weights under the file's lock. */
static int weights_nc(raster_var *v, const char *name, double **w,
                      uint32_t *crc)
{
    int g, wv, st;
    nc_type t;
    size_t wel, n = v->ny * v->nx;
    unsigned char fill[8];
    int rc = statstore_weights_var(v, name, &g, &wv, &t, &wel, fill);
    if (rc)
        return rc;
    unsigned char *raw = raster_reallocarray(NULL, n, wel);
    double *x = raster_reallocarray(NULL, n, sizeof *x);
    if (!raw || !x) {
        raster_free(raw);
        raster_free(x);
        return raster_fail(RASTER_ENOMEM, "out of memory reading weights "
                           "%s", name);
    }
    if ((st = nc_get_var(g, wv, raw)) != NC_NOERR) {
        raster_free(raw);
        raster_free(x);
        return raster_fail_nc(RASTER_ENETCDF, st, "reading weights %s: %s",
                              name, nc_strerror(st));
    }
    stats_to_double(raw, t, wel, fill, x, n);
    raster_free(raw);
    *crc = crc32c(0, x, n * sizeof *x);
    *w = x;
    return RASTER_OK;
}

int statstore_weights(raster_var *v, const char *name, double **w,
                      uint32_t *crc)
{
    *w = NULL;
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    lazy_lock(v->file);
    rc = weights_nc(v, name, w, crc);
    lazy_unlock(v->file);
    return rc;
}

/* ---- writers ----------------------------------------------------------- */

/* Each region's weight checksum (v->stats_wcrcs): CRC32C of the doubles
 * of v->stats_w at the region's cells in grid order (its runs), which is
 * the order raster_region_cells gives them, so that a reader checks one
 * region's weights by reading that region's alone (statstore_region_crc),
 * not the grid. */
static int region_crcs(raster_var *v)
{
    raster_free(v->stats_wcrcs);
    v->stats_wcrcs = raster_reallocarray(NULL, v->nregions ? v->nregions : 1,
                                         sizeof *v->stats_wcrcs);
    if (!v->stats_wcrcs)
        return raster_fail(RASTER_ENOMEM, "out of memory for the "
                           "statistics of %s", v->name);
    for (size_t r = 0; r < v->nregions; r++) {
        const region_run *u;
        size_t n;
        int rc = regions_runs(v, r, &u, &n);
        if (rc)
            return rc;
        uint32_t c = 0;
        for (size_t i = 0; i < n; i++)
            c = crc32c(c, v->stats_w + u[i].y * v->nx + u[i].x,
                       u[i].len * sizeof *v->stats_w);
        v->stats_wcrcs[r] = c;
    }
    return RASTER_OK;
}

uint32_t statstore_region_crc(const double *w, size_t n)
{
    return crc32c(0, w, n * sizeof *w);
}

/* A writer's region position of every grid cell, and its weights. */
static int writer_state(raster_var *v)
{
    size_t n = v->ny * v->nx;
    if (!v->stats_cellreg) {
        const int32_t *m = raster_mask_values(v->mask);
        if (!m)
            return raster_fail(RASTER_EINTERNAL, "%s: no mask values",
                               v->name);
        int32_t *reg = raster_reallocarray(NULL, n, sizeof *reg);
        if (!reg)
            return raster_fail(RASTER_ENOMEM, "out of memory for the "
                               "statistics of %s", v->name);
        for (size_t i = 0; i < n; i++)
            reg[i] = (int32_t)regions_pos(v, m[i]);
        v->stats_cellreg = reg;
    }
    if (v->stats_wread == 0) {
        /* weights that cannot be read (not written yet, misnamed) leave
         * the weighted fields unkept: queries compute them from data */
        v->stats_wread = -1;
        uint32_t whole;
        if (v->stats_weights &&
            statstore_weights(v, v->stats_weights, &v->stats_w, &whole) ==
                RASTER_OK) {
            int rc = region_crcs(v);
            if (rc)
                return rc;
            v->stats_wread = 1;
        }
    }
    return RASTER_OK;
}

static void encode(const raster_stats *s, int weighted, uint32_t wcrc,
                   double *row)
{
    row[SF_STATE] = STATS_FRESH;
    row[SF_COUNT] = (double)s->count;
    row[SF_SUM] = s->sum;
    row[SF_SUMSQ] = s->sumsq;
    row[SF_M2] = s->m2;
    row[SF_MIN] = s->min;
    row[SF_MAX] = s->max;
    row[SF_WCOUNT] = weighted ? (double)s->wcount : 0;
    row[SF_WSUM] = weighted ? s->wsum : 0;
    row[SF_WTOTAL] = weighted ? s->wtotal : 0;
    row[SF_WM2] = weighted ? s->wm2 : 0;
    row[SF_WCRC] = weighted ? (double)wcrc : -1;
}

static void decode(const double *row, raster_stats *s)
{
    *s = (raster_stats){.count = (uint64_t)row[SF_COUNT],
                        .sum = row[SF_SUM], .sumsq = row[SF_SUMSQ],
                        .m2 = row[SF_M2], .min = row[SF_MIN],
                        .max = row[SF_MAX],
                        .wcount = (uint64_t)row[SF_WCOUNT],
                        .wsum = row[SF_WSUM], .wtotal = row[SF_WTOTAL],
                        .wm2 = row[SF_WM2]};
    if (s->count == 0)
        s->min = s->max = NAN;
}

static int put_rows(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride, const double *rows)
{
    int st = nc_put_vars_double(v->grpid, v->stats_var, start, count, stride,
                                rows);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: writing its "
                              "statistics: %s", v->name, nc_strerror(st));
    return RASTER_OK;
}

/* Whole records: fresh statistics from the values written. */
static int whole_records(raster_var *v, const size_t *start,
                         const size_t *count, const ptrdiff_t *stride,
                         const unsigned char *data, size_t nrec)
{
    int no = var_nouter(v), rc = writer_state(v);
    if (rc)
        return rc;
    size_t ncell = v->ny * v->nx, nreg = v->nregions;
    size_t row = nreg * STATS_FIELDS;
    double *x = raster_reallocarray(NULL, ncell, sizeof *x);
    double *rows = raster_reallocarray(NULL, nrec, row * sizeof *rows);
    raster_stats *s = raster_reallocarray(NULL, nreg, sizeof *s);
    if (!x || !rows || !s) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                         "of %s", v->name);
        goto out;
    }
    int weighted = v->stats_wread == 1;
    for (size_t k = 0; k < nrec; k++) {
        stats_to_double(data + k * ncell * v->elem, v->xtype, v->elem,
                        v->fill, x, ncell);
        if ((rc = stats_cells(x, weighted ? v->stats_w : NULL,
                              v->stats_cellreg, ncell, nreg, s)) != RASTER_OK)
            goto out;
        for (size_t r = 0; r < nreg; r++)
            encode(&s[r], weighted, weighted ? v->stats_wcrcs[r] : 0,
                   rows + k * row + r * STATS_FIELDS);
    }
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    ptrdiff_t sd[RASTER_MAX_DIMS + 2];
    for (int i = 0; i < no; i++) {
        st[i] = start[i];
        ct[i] = count[i];
        sd[i] = stride ? stride[i] : 1;
    }
    st[no] = st[no + 1] = 0;
    ct[no] = nreg;
    ct[no + 1] = STATS_FIELDS;
    sd[no] = sd[no + 1] = 1;
    rc = put_rows(v, st, ct, sd, rows);
out:
    raster_free(x);
    raster_free(rows);
    raster_free(s);
    return rc;
}

/* A partial write: the regions it touched marked stale in every record
 * of the box, and the records remembered for statstore_flush. */
static int partial_records(raster_var *v, const size_t *start,
                           const size_t *count, const ptrdiff_t *stride,
                           size_t nrec)
{
    int no = var_nouter(v), rc = writer_state(v);
    if (rc)
        return rc;
    size_t nreg = v->nregions;
    unsigned char *hit = raster_calloc(nreg ? nreg : 1, 1);
    double *marks = raster_reallocarray(NULL, nrec, sizeof *marks);
    if (!hit || !marks) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                         "of %s", v->name);
        goto out;
    }
    ptrdiff_t sy = stride ? stride[no] : 1, sx = stride ? stride[no + 1] : 1;
    for (size_t i = 0; i < count[no]; i++)
        for (size_t j = 0; j < count[no + 1]; j++) {
            size_t y = start[no] + i * (size_t)sy;
            size_t x = start[no + 1] + j * (size_t)sx;
            int32_t r = v->stats_cellreg[y * v->nx + x];
            if (r >= 0)
                hit[r] = 1;
        }
    for (size_t k = 0; k < nrec; k++)
        marks[k] = STATS_STALE;
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    ptrdiff_t sd[RASTER_MAX_DIMS + 2];
    for (int i = 0; i < no; i++) {
        st[i] = start[i];
        ct[i] = count[i];
        sd[i] = stride ? stride[i] : 1;
    }
    ct[no] = ct[no + 1] = 1;
    sd[no] = sd[no + 1] = 1;
    st[no + 1] = SF_STATE;
    for (size_t r = 0; r < nreg && rc == RASTER_OK; r++) {
        if (!hit[r])
            continue;
        st[no] = r;
        rc = put_rows(v, st, ct, sd, marks);
    }
    /* the records, for the recomputation at close */
    size_t idx[RASTER_MAX_DIMS] = {0};
    for (size_t k = 0; k < nrec && rc == RASTER_OK; k++) {
        if ((rc = raster_grow((void **)&v->stats_stale, &v->cap_stale,
                              (v->nstale + 1) * (size_t)no,
                              sizeof *v->stats_stale)) != RASTER_OK)
            break;
        size_t *c = v->stats_stale + v->nstale * (size_t)no;
        for (int i = 0; i < no; i++)
            c[i] = start[i] + idx[i] * (size_t)sd[i];
        v->nstale++;
        for (int i = no - 1; i >= 0; i--) {
            if (++idx[i] < count[i])
                break;
            idx[i] = 0;
        }
    }
out:
    raster_free(hit);
    raster_free(marks);
    return rc;
}

int statstore_written(raster_var *v, const size_t *start, const size_t *count,
                      const ptrdiff_t *stride, const void *data)
{
    int rc = lookup(v);
    if (rc || v->stats_var < 0)
        return rc;
    int no = var_nouter(v);
    size_t nrec = 1;
    for (int i = 0; i < no; i++)
        nrec *= count[i];
    if (nrec == 0 || count[no] == 0 || count[no + 1] == 0)
        return RASTER_OK;
    if (count[no] == v->ny && count[no + 1] == v->nx)
        return whole_records(v, start, count, stride, data, nrec);
    return partial_records(v, start, count, stride, nrec);
}

static int cmp_rec_no; /* outer dimensions, for qsort's comparison */
static int cmp_rec(const void *a, const void *b)
{
    return memcmp(a, b, (size_t)cmp_rec_no * sizeof(size_t));
}

/* Reads record `rec` of region r (position) packed into buf; *cells. */
static int read_region(raster_var *v, size_t r, const size_t *rec,
                       void *buf, size_t *cells)
{
    const region_run *u;
    size_t n;
    int rc = regions_runs(v, r, &u, &n);
    if (rc)
        return rc;
    piece *p = raster_reallocarray(NULL, n ? n : 1, sizeof *p);
    if (!p)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    uint64_t cursor = 0;
    for (size_t i = 0; i < n; i++) {
        p[i] = (piece){.soff = u[i].off, .uoff = cursor,
                       .store = u[i].store, .len = u[i].len};
        cursor += u[i].len;
    }
    size_t ones[RASTER_MAX_DIMS];
    for (int i = 0; i < var_nouter(v); i++)
        ones[i] = 1;
    rc = chunkio_xfer(v, p, n, rec, ones, NULL, buf, (size_t)cursor, 0);
    raster_free(p);
    *cells = (size_t)cursor;
    return rc;
}

int statstore_flush(raster_var *v)
{
    if (v->nstale == 0 || v->stats_var < 0)
        return RASTER_OK;
    int no = var_nouter(v), rc = writer_state(v);
    if (rc)
        return rc;
    cmp_rec_no = no; /* raster_close: the caller's thread alone */
    qsort(v->stats_stale, v->nstale, (size_t)no * sizeof(size_t), cmp_rec);
    size_t nreg = v->nregions, maxcells = 0;
    for (size_t r = 0; r < nreg; r++) {
        size_t c = v->regions[r].pure_cells + v->regions[r].mixed_cells;
        maxcells = c > maxcells ? c : maxcells;
    }
    double *state = raster_reallocarray(NULL, nreg ? nreg : 1,
                                        sizeof *state);
    unsigned char *buf = raster_reallocarray(NULL, maxcells ? maxcells : 1,
                                             v->elem);
    double *x = raster_reallocarray(NULL, maxcells ? maxcells : 1,
                                    sizeof *x);
    double *w = raster_reallocarray(NULL, maxcells ? maxcells : 1,
                                    sizeof *w);
    if (!state || !buf || !x || !w) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                         "of %s", v->name);
        goto out;
    }
    int weighted = v->stats_wread == 1;
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    for (size_t k = 0; k < v->nstale && rc == RASTER_OK; k++) {
        const size_t *rec = v->stats_stale + k * (size_t)no;
        if (k > 0 && cmp_rec(rec, rec - no) == 0)
            continue;
        for (int i = 0; i < no; i++) {
            st[i] = rec[i];
            ct[i] = 1;
        }
        st[no] = 0;
        st[no + 1] = SF_STATE;
        ct[no] = nreg;
        ct[no + 1] = 1;
        int s = nc_get_vara_double(v->grpid, v->stats_var, st, ct, state);
        if (s != NC_NOERR) {
            rc = raster_fail_nc(RASTER_ENETCDF, s, "%s: reading its "
                                "statistics: %s", v->name, nc_strerror(s));
            break;
        }
        for (size_t r = 0; r < nreg && rc == RASTER_OK; r++) {
            if (state[r] != STATS_STALE)
                continue; /* rewritten whole since */
            size_t cells = 0;
            if ((rc = read_region(v, r, rec, buf, &cells)) != RASTER_OK)
                break;
            stats_to_double(buf, v->xtype, v->elem, v->fill, x, cells);
            const region_run *u;
            size_t n, c = 0;
            if (weighted &&
                (rc = regions_runs(v, r, &u, &n)) == RASTER_OK)
                for (size_t i = 0; i < n; i++)
                    for (uint32_t j = 0; j < u[i].len; j++)
                        w[c++] = v->stats_w[u[i].y * v->nx + u[i].x + j];
            raster_stats one;
            if (rc == RASTER_OK)
                rc = stats_cells(x, weighted ? w : NULL, NULL, cells, 1,
                                 &one);
            double row[STATS_FIELDS];
            if (rc)
                break;
            encode(&one, weighted, weighted ? v->stats_wcrcs[r] : 0, row);
            st[no] = r;
            st[no + 1] = 0;
            ct[no] = 1;
            ct[no + 1] = STATS_FIELDS;
            if (rc == RASTER_OK)
                rc = put_rows(v, st, ct, NULL, row);
        }
    }
    if (rc == RASTER_OK)
        v->nstale = 0;
out:
    raster_free(state);
    raster_free(buf);
    raster_free(x);
    raster_free(w);
    return rc;
}

/* ---- readers ----------------------------------------------------------- */

int statstore_get(raster_var *v, const int32_t *ids, size_t nids,
                  const size_t *ostart, const size_t *ocount,
                  const char *weights, const uint32_t *wcrc, raster_stats *out,
                  unsigned char *done)
{
    int rc = lookup(v);
    if (rc || v->stats_var < 0)
        return rc;
    if (weights && (!v->stats_weights || strcmp(weights, v->stats_weights)))
        return RASTER_OK;
    int no = var_nouter(v);
    size_t nreg = v->nregions, rowlen = nreg * STATS_FIELDS;
    unsigned char *sel = raster_calloc(nreg ? nreg : 1, 1);
    if (!sel)
        return raster_fail(RASTER_ENOMEM, "out of memory");
    for (size_t i = 0; i < nids; i++) {
        long pos = regions_pos(v, ids[i]);
        if (pos < 0) {
            raster_free(sel);
            return raster_fail(RASTER_ENOTFOUND, "%s has no region %d",
                               v->name, (int)ids[i]);
        }
        sel[pos] = 1;
    }
    /* blocks of records along the last outer dimension, 8 MiB of rows */
    size_t last = ocount[no - 1], blk = ((size_t)8 << 20) /
                                        (rowlen * sizeof(double) + 1);
    blk = blk < 1 ? 1 : blk > last ? last : blk;
    double *rows = raster_reallocarray(NULL, blk ? blk : 1,
                                       rowlen * sizeof *rows);
    if (!rows) {
        raster_free(sel);
        return raster_fail(RASTER_ENOMEM, "out of memory");
    }
    size_t planes = 1, idx[RASTER_MAX_DIMS] = {0}, k0 = 0;
    for (int i = 0; i < no; i++)
        planes *= ocount[i];
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    while (k0 < planes && last > 0) {
        for (int i = 0; i < no; i++) {
            st[i] = ostart[i] + idx[i];
            ct[i] = 1;
        }
        size_t k = last - idx[no - 1] < blk ? last - idx[no - 1] : blk;
        ct[no - 1] = k;
        st[no] = st[no + 1] = 0;
        ct[no] = nreg;
        ct[no + 1] = STATS_FIELDS;
        lazy_lock(v->file);
        int s = nc_get_vara_double(v->grpid, v->stats_var, st, ct, rows);
        lazy_unlock(v->file);
        if (s == NC_EINVALCOORDS || s == NC_EEDGE) {
            break; /* records past the stored ones: left to the data */
        } else if (s != NC_NOERR) {
            rc = raster_fail_nc(RASTER_ENETCDF, s, "%s: reading its "
                                "statistics: %s", v->name, nc_strerror(s));
            break;
        }
        for (size_t j = 0; j < k; j++) {
            const double *rw = rows + j * rowlen;
            raster_stats m = {.min = NAN, .max = NAN}, one;
            int fresh = 1;
            for (size_t r = 0; r < nreg && fresh; r++) {
                if (!sel[r])
                    continue;
                const double *f = rw + r * STATS_FIELDS;
                fresh = f[SF_STATE] == STATS_FRESH &&
                        (!weights || f[SF_WCRC] == (double)wcrc[r]);
                decode(f, &one);
                if (!weights) { /* as the data path leaves them */
                    one.wcount = 0;
                    one.wsum = one.wtotal = one.wm2 = 0;
                }
                raster_stats_merge(&m, &one);
            }
            if (fresh) {
                out[k0 + j] = m;
                done[k0 + j] = 1;
            }
        }
        k0 += k;
        for (int i = no - 1; i >= 0; i--) {
            idx[i] += i == no - 1 ? k : 1;
            if (idx[i] < ocount[i])
                break;
            idx[i] = 0;
        }
    }
    raster_free(sel);
    raster_free(rows);
    return rc;
}

int raster_var_stats_info(raster_var *v, int32_t id, const char **weights,
                          size_t *fresh, size_t *stale)
{
    if (!var_ok(v) || !fresh || !stale)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    *fresh = *stale = 0;
    if (weights)
        *weights = NULL;
    int rc = lookup(v);
    if (rc)
        return rc;
    long pos = regions_pos(v, id);
    if (pos < 0)
        return raster_fail(RASTER_ENOTFOUND, "%s has no region %d", v->name,
                           (int)id);
    if (v->stats_var < 0)
        return raster_fail(RASTER_ENOTFOUND, "%s keeps no statistics",
                           v->name);
    if (weights)
        *weights = v->stats_weights;
    int no = var_nouter(v);
    size_t shape[RASTER_MAX_DIMS], n = 1;
    if ((rc = var_outer_shape(v, shape)) != RASTER_OK)
        return rc;
    for (int i = 0; i < no; i++)
        n *= shape[i];
    if (n == 0)
        return RASTER_OK;
    double *state = raster_reallocarray(NULL, n, sizeof *state);
    if (!state)
        return raster_fail(RASTER_ENOMEM, "out of memory");
    size_t st[RASTER_MAX_DIMS + 2] = {0}, ct[RASTER_MAX_DIMS + 2];
    for (int i = 0; i < no; i++)
        ct[i] = shape[i];
    st[no] = (size_t)pos;
    st[no + 1] = SF_STATE;
    ct[no] = ct[no + 1] = 1;
    lazy_lock(v->file);
    int s = nc_get_vara_double(v->grpid, v->stats_var, st, ct, state);
    lazy_unlock(v->file);
    if (s != NC_NOERR) {
        raster_free(state);
        return raster_fail_nc(RASTER_ENETCDF, s, "%s: reading its "
                              "statistics: %s", v->name, nc_strerror(s));
    }
    for (size_t i = 0; i < n; i++) {
        *fresh += state[i] == STATS_FRESH;
        *stale += state[i] == STATS_STALE;
    }
    raster_free(state);
    return RASTER_OK;
}
