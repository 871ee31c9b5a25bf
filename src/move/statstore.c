/*
 * statstore.c - statistics kept in the file (docs/FORMAT.md, "Stored
 * statistics"): a writer computes each whole record's per-region
 * statistics from the values it stores, marks the regions of records a
 * partial write touches stale, and recomputes those at close from the
 * stores; readers take fresh ones instead of reading the data. The
 * reductions themselves are reduce.c's.
 */
#include "statstore.h"

#include <math.h>
#include <pthread.h>
#include <netcdf.h>
#include <stdio.h>
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
#include "threads.h"

/* ---- the dataset ------------------------------------------------------- */

/* Format 5: 1 when the file's seal (integrity.h) lets its kept statistics
 * be used; a read-only file's is looked at once, at first need. */
static int sealed(raster_var *v)
{
    return !var_tiled(v) || seal_trusted(v->file);
}

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
    v->stats_all_stale = ok && !sealed(v);
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
/* Each cell's region position (-1: none), for partial writes: one
 * search per change of value (neighbours mostly share a region). */
static int cell_regions(raster_var *v)
{
    if (v->stats_cellreg)
        return RASTER_OK;
    size_t n = v->ny * v->nx;
    const int32_t *m = raster_mask_values(v->mask);
    if (!m)
        return raster_fail(RASTER_EINTERNAL, "%s: no mask values", v->name);
    int32_t *reg = raster_reallocarray(NULL, n, sizeof *reg);
    if (!reg)
        return raster_fail(RASTER_ENOMEM, "out of memory for the "
                           "statistics of %s", v->name);
    for (size_t i = 0; i < n; i++)
        reg[i] = i > 0 && m[i] == m[i - 1] ? reg[i - 1]
                                           : (int32_t)regions_pos(v, m[i]);
    v->stats_cellreg = reg;
    return RASTER_OK;
}

/* The grid's runs of one region (cells of no region left out), cut where
 * the region changes and at every multiple of UINT32_MAX cells (a run's
 * length is 32 bits): straight from the mask, one region search per
 * change of value, without a grid of positions (a whole-record writer
 * needs none; this was 40 ms of the bench grid's first write). */
static int grid_runs(raster_var *v)
{
    if (v->stats_runs)
        return RASTER_OK;
    size_t n = v->ny * v->nx, k = 0, cap = 0;
    const int32_t *m = raster_mask_values(v->mask);
    if (!m)
        return raster_fail(RASTER_EINTERNAL, "%s: no mask values", v->name);
    stats_run *u = NULL;
    int rc = RASTER_OK;
    for (size_t base = 0; base < n && rc == RASTER_OK; base += UINT32_MAX) {
        size_t end = n - base < UINT32_MAX ? n : base + UINT32_MAX;
        int32_t cur = (int32_t)regions_pos(v, m[base]);
        size_t from = base; /* the open run: [from, i) of region cur */
        for (size_t i = base + 1; i <= end; i++) {
            /* eight cells at a time while none changes value */
            while (i + 8 <= end) {
                uint32_t d = 0;
                for (size_t j = 0; j < 8; j++)
                    d |= (uint32_t)(m[i + j] ^ m[i + j - 1]);
                if (d)
                    break;
                i += 8;
            }
            if (i < end && m[i] == m[i - 1])
                continue;
            int32_t r = i < end ? (int32_t)regions_pos(v, m[i]) : -2;
            if (r == cur)
                continue;
            if (cur >= 0 &&
                (rc = raster_grow(&u, &cap, k + 1, sizeof *u)) !=
                    RASTER_OK)
                break;
            if (cur >= 0)
                u[k++] = (stats_run){from, (uint32_t)(i - from), cur};
            cur = r;
            from = i;
        }
    }
    if (rc == RASTER_OK && !u) /* no cell of any region: none, kept */
        rc = raster_grow(&u, &cap, 1, sizeof *u);
    if (rc) {
        raster_free(u);
        return rc;
    }
    v->stats_runs = u;
    v->stats_nruns = k;
    return RASTER_OK;
}

int statstore_grid_runs(raster_var *v, const stats_run **runs, size_t *n)
{
    int rc = grid_runs(v);
    *runs = rc ? NULL : v->stats_runs;
    *n = rc ? 0 : v->stats_nruns;
    return rc;
}

static int writer_state(raster_var *v)
{
    int rc = grid_runs(v);
    if (rc)
        return rc;
    if (v->stats_wread == 0) {
        /* weights that cannot be read (not written yet, misnamed) leave
         * the weighted fields unkept: queries compute them from data */
        v->stats_wread = -1;
        uint32_t whole;
        if (v->stats_weights &&
            statstore_weights(v, v->stats_weights, &v->stats_w, &whole) ==
                RASTER_OK) {
            if ((rc = region_crcs(v)) != RASTER_OK)
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

/* Whole records: fresh statistics from the values written, their rows
 * computed (pure arithmetic on the caller's values and the writer's
 * state: no netCDF) and then stored. */
static int whole_rows(const raster_var *v, const unsigned char *data,
                      size_t k0, size_t k1, double *rows)
{
    size_t ncell = v->ny * v->nx, nreg = v->nregions;
    size_t row = nreg * STATS_FIELDS;
    raster_stats *s = raster_reallocarray(NULL, nreg, sizeof *s);
    if (!s)
        return raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                           "of %s", v->name);
    int weighted = v->stats_wread == 1, rc = RASTER_OK;
    for (size_t k = k0; k < k1 && rc == RASTER_OK; k++) {
        rc = stats_cells_raw(data + k * ncell * v->elem, v->xtype, v->elem,
                             v->fill, weighted ? v->stats_w : NULL,
                             v->stats_runs, v->stats_nruns, nreg, s);
        for (size_t r = 0; rc == RASTER_OK && r < nreg; r++)
            encode(&s[r], weighted, weighted ? v->stats_wcrcs[r] : 0,
                   rows + k * row + r * STATS_FIELDS);
    }
    raster_free(s);
    return rc;
}

static int put_whole_rows(raster_var *v, const size_t *start,
                          const size_t *count, const ptrdiff_t *stride,
                          const double *rows)
{
    int no = var_nouter(v);
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    ptrdiff_t sd[RASTER_MAX_DIMS + 2];
    for (int i = 0; i < no; i++) {
        st[i] = start[i];
        ct[i] = count[i];
        sd[i] = stride ? stride[i] : 1;
    }
    st[no] = st[no + 1] = 0;
    ct[no] = v->nregions;
    ct[no + 1] = STATS_FIELDS;
    sd[no] = sd[no + 1] = 1;
    return put_rows(v, st, ct, sd, rows);
}

/* A partial write: the regions it touched marked stale in every record
 * of the box, and the records remembered for statstore_flush. */
static int partial_records(raster_var *v, const size_t *start,
                           const size_t *count, const ptrdiff_t *stride,
                           size_t nrec)
{
    int no = var_nouter(v), rc = writer_state(v);
    if (rc == RASTER_OK)
        rc = cell_regions(v);
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
    /* one record, whose regions this session marked already (the 20,000
     * small writes of a record by ParallelIO): nothing to do */
    int same = nrec == 1 && v->stats_last_ok && v->stats_last_hit &&
               memcmp(v->stats_last, start, (size_t)no * sizeof *start) == 0;
    for (size_t r = 0; same && r < nreg; r++)
        if (hit[r] && !v->stats_last_hit[r])
            same = 0;
    if (same)
        goto out;
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
    /* remembered: the record, and the regions marked in it */
    v->stats_last_ok = 0;
    if (rc == RASTER_OK && nrec == 1) {
        if (!v->stats_last_hit ||
            memcmp(v->stats_last, start, (size_t)no * sizeof *start) != 0) {
            raster_free(v->stats_last_hit);
            v->stats_last_hit = raster_calloc(nreg ? nreg : 1, 1);
            memcpy(v->stats_last, start, (size_t)no * sizeof *start);
        }
        for (size_t r = 0; v->stats_last_hit && r < nreg; r++)
            v->stats_last_hit[r] |= hit[r];
        v->stats_last_ok = v->stats_last_hit != NULL;
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

/* A write's statistics: whole records' rows computed on a thread of
 * their own while the write moves the values (2 cores: the arithmetic of
 * a record, about 20 ms of the bench grid, then costs the write nothing),
 * stored when it is done; a partial write's records marked stale. */
/* Threads computing a write's rows: the records split between them. */
#define ROW_THREADS 2

typedef struct rows_part {
    struct statstore_job *job;
    size_t k0, k1;
    pthread_t tid;
    int started;
    int rc, nc; /* the thread's outcome, its message below */
    char msg[512];
} rows_part;

struct statstore_job {
    raster_var *v;
    size_t start[RASTER_MAX_DIMS + 2], count[RASTER_MAX_DIMS + 2];
    ptrdiff_t stride[RASTER_MAX_DIMS + 2];
    int strided, whole;
    const unsigned char *data;
    size_t nrec;
    double *rows;
    rows_part part[ROW_THREADS];
};

static void *rows_thread(void *arg)
{
    rows_part *t = arg;
    t->rc = whole_rows(t->job->v, t->job->data, t->k0, t->k1, t->job->rows);
    if (t->rc) {
        t->nc = raster_nc_status();
        snprintf(t->msg, sizeof t->msg, "%s", raster_errmsg());
    }
    return NULL;
}

int statstore_begin(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride, const void *data,
                    statstore_job **out)
{
    *out = NULL;
    int rc = lookup(v);
    if (rc || v->stats_var < 0)
        return rc;
    int no = var_nouter(v);
    size_t nrec = 1;
    for (int i = 0; i < no; i++)
        nrec *= count[i];
    if (nrec == 0 || count[no] == 0 || count[no + 1] == 0)
        return RASTER_OK;
    statstore_job *j = raster_calloc(1, sizeof *j);
    if (!j)
        return raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                           "of %s", v->name);
    j->v = v;
    j->data = data;
    j->nrec = nrec;
    j->strided = stride != NULL;
    for (int i = 0; i < no + 2; i++) { /* the grid's two too */
        j->start[i] = start[i];
        j->count[i] = count[i];
        j->stride[i] = stride ? stride[i] : 1;
    }
    j->whole = count[no] == v->ny && count[no + 1] == v->nx;
    if (j->whole) {
        /* the writer's state (weights through netCDF) on this thread */
        if ((rc = writer_state(v)) != RASTER_OK ||
            !(j->rows = raster_reallocarray(NULL, nrec, v->nregions *
                                            STATS_FIELDS * sizeof(double)))) {
            raster_free(j);
            return rc ? rc : raster_fail(RASTER_ENOMEM, "out of memory for "
                                         "the statistics of %s", v->name);
        }
        /* the records in ROW_THREADS parts (the write itself keeps a
         * core busy too: the parts share the other) */
        for (int t = 0; t < ROW_THREADS; t++) {
            rows_part *pt = &j->part[t];
            pt->job = j;
            pt->k0 = nrec * (size_t)t / ROW_THREADS;
            pt->k1 = nrec * (size_t)(t + 1) / ROW_THREADS;
            pt->started = pt->k0 < pt->k1 &&
                          thread_start(&pt->tid, 0, rows_thread, pt) == 0;
        }
    }
    *out = j;
    return RASTER_OK;
}

int statstore_end(statstore_job *j, int write_rc)
{
    if (!j)
        return write_rc;
    raster_var *v = j->v;
    int rc = RASTER_OK;
    if (j->whole) {
        for (int t = 0; t < ROW_THREADS; t++) {
            rows_part *pt = &j->part[t];
            if (pt->started)
                pthread_join(pt->tid, NULL);
            else if (write_rc == RASTER_OK && pt->k0 < pt->k1)
                rows_thread(pt); /* no thread: here, after the write */
            if (pt->rc && rc == RASTER_OK)
                rc = raster_fail_nc(pt->rc, pt->nc, "%s", pt->msg);
        }
        if (write_rc == RASTER_OK && rc == RASTER_OK)
            rc = put_whole_rows(v, j->start, j->count,
                                j->strided ? j->stride : NULL, j->rows);
        v->stats_last_ok = 0; /* its rows may be fresh now: mark again */
    } else if (write_rc == RASTER_OK) {
        rc = partial_records(v, j->start, j->count,
                             j->strided ? j->stride : NULL, j->nrec);
    }
    raster_free(j->rows);
    raster_free(j);
    return write_rc ? write_rc : rc;
}

static int cmp_rec_no; /* outer dimensions, for qsort's comparison */
static int cmp_rec(const void *a, const void *b)
{
    return memcmp(a, b, (size_t)cmp_rec_no * sizeof(size_t));
}

/* Reads record `rec` of every region into plane (the whole grid, v's
 * type): one transfer of every region's runs, each to its grid cells. */
static int read_record(raster_var *v, const size_t *rec, void *plane)
{
    size_t np = 0;
    for (size_t r = 0; r < v->nregions; r++) {
        const region_run *u;
        size_t n;
        int rc = regions_runs(v, r, &u, &n);
        if (rc)
            return rc;
        np += n;
    }
    piece *p = raster_reallocarray(NULL, np ? np : 1, sizeof *p);
    if (!p)
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    size_t k = 0;
    for (size_t r = 0; r < v->nregions; r++) {
        const region_run *u;
        size_t n;
        int rc = regions_runs(v, r, &u, &n);
        if (rc) {
            raster_free(p);
            return rc;
        }
        for (size_t i = 0; i < n && k < np; i++)
            p[k++] = (piece){.soff = u[i].off,
                             .uoff = (uint64_t)u[i].y * v->nx + u[i].x,
                             .store = u[i].store, .len = u[i].len};
    }
    size_t ones[RASTER_MAX_DIMS];
    for (int i = 0; i < var_nouter(v); i++)
        ones[i] = 1;
    int rc = chunkio_xfer(v, p, k, rec, ones, NULL, plane, v->ny * v->nx, 0);
    raster_free(p);
    return rc;
}

/* Every record of v stale: a writer's repair of a broken seal. */
static int all_records(raster_var *v)
{
    int no = var_nouter(v);
    size_t shape[RASTER_MAX_DIMS], n = 1, idx[RASTER_MAX_DIMS] = {0};
    int rc = var_outer_shape(v, shape);
    for (int i = 0; i < no && rc == RASTER_OK; i++)
        n *= shape[i];
    v->nstale = 0;
    for (size_t k = 0; k < n && rc == RASTER_OK; k++) {
        if ((rc = raster_grow((void **)&v->stats_stale, &v->cap_stale,
                              (k + 1) * (size_t)no,
                              sizeof *v->stats_stale)) != RASTER_OK)
            break;
        memcpy(v->stats_stale + k * (size_t)no, idx,
               (size_t)no * sizeof *idx);
        v->nstale++;
        for (int i = no - 1; i >= 0; i--) {
            if (++idx[i] < shape[i])
                break;
            idx[i] = 0;
        }
    }
    return rc;
}

int statstore_flush(raster_var *v)
{
    int rc = v->file->writable ? lookup(v) : RASTER_OK;
    if (rc == RASTER_OK && v->stats_all_stale && v->stats_var >= 0 &&
        v->file->writable && var_nouter(v) > 0)
        rc = all_records(v);
    if (rc || v->nstale == 0 || v->stats_var < 0)
        return rc;
    int no = var_nouter(v);
    if ((rc = writer_state(v)) != RASTER_OK)
        return rc;
    cmp_rec_no = no; /* raster_close: the caller's thread alone */
    qsort(v->stats_stale, v->nstale, (size_t)no * sizeof(size_t), cmp_rec);
    size_t nreg = v->nregions, ncell = v->ny * v->nx;
    unsigned char *plane = raster_reallocarray(NULL, ncell ? ncell : 1,
                                               v->elem);
    double *rows = raster_reallocarray(NULL, nreg ? nreg : 1,
                                       STATS_FIELDS * sizeof *rows);
    if (!plane || !rows) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory for the statistics "
                         "of %s", v->name);
        goto out;
    }
    /* a stale record read whole, once, and every region's row written
     * anew from it (those that were fresh get what they had) */
    size_t st[RASTER_MAX_DIMS + 2], ct[RASTER_MAX_DIMS + 2];
    for (size_t k = 0; k < v->nstale && rc == RASTER_OK; k++) {
        const size_t *rec = v->stats_stale + k * (size_t)no;
        if (k > 0 && cmp_rec(rec, rec - no) == 0)
            continue;
        if ((rc = read_record(v, rec, plane)) == RASTER_OK)
            rc = whole_rows(v, plane, 0, 1, rows);
        for (int i = 0; i < no; i++) {
            st[i] = rec[i];
            ct[i] = 1;
        }
        st[no] = st[no + 1] = 0;
        ct[no] = nreg;
        ct[no + 1] = STATS_FIELDS;
        if (rc == RASTER_OK)
            rc = put_rows(v, st, ct, NULL, rows);
    }
    if (rc == RASTER_OK) {
        v->nstale = 0;
        v->stats_all_stale = 0; /* every record computed anew */
    }
    v->stats_last_ok = 0;
out:
    raster_free(plane);
    raster_free(rows);
    return rc;
}

/* ---- readers ----------------------------------------------------------- */

int statstore_get(raster_var *v, const int32_t *ids, size_t nids,
                  const size_t *ostart, const size_t *ocount,
                  const char *weights, const uint32_t *wcrc, raster_stats *out,
                  unsigned char *done)
{
    int rc = lookup(v);
    if (rc || v->stats_var < 0 || v->stats_all_stale)
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
    if (v->stats_all_stale) { /* the seal is broken: none is used */
        *stale += *fresh;
        *fresh = 0;
    }
    raster_free(state);
    return RASTER_OK;
}
