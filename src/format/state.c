/*
 * state.c - making and freeing raster's in-memory state of an open file
 * and its variables (var.h): locks, the outer shape, freeing.
 */
#include <netcdf.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "regions.h"
#include "tiles.h"
#include "state.h"

/* 1 when dimension `dimid` (visible from grpid) is unlimited. */
int var_nc_dim_unlimited(int grpid, int dimid)
{
    for (int g = grpid;;) {
        int n, ids[NC_MAX_DIMS];
        if (nc_inq_unlimdims(g, &n, NULL) == NC_NOERR && n > 0 &&
            n <= NC_MAX_DIMS && nc_inq_unlimdims(g, &n, ids) == NC_NOERR)
            for (int i = 0; i < n; i++)
                if (ids[i] == dimid)
                    return 1;
        int parent;
        if (nc_inq_grp_parent(g, &parent) != NC_NOERR)
            return 0;
        g = parent;
    }
}

int var_dim_unlimited(const raster_var *v, int d)
{
    if (d >= var_nouter(v))
        return 0; /* the grid never is */
    return v->file && v->file->lean ? v->unlimited[d]
                                    : var_nc_dim_unlimited(v->grpid,
                                                         v->dimids[d]);
}

static int outer_from_netcdf(const raster_var *v, size_t *shape)
{
    for (int i = 0; i < var_nouter(v); i++) {
        int st = nc_inq_dimlen(v->grpid, v->dimids[i], &shape[i]);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "reading dimension lengths of %s: %s", v->name, nc_strerror(st));
    }
    return RASTER_OK;
}

static int write_shape_load(raster_var *v)
{
    int no = var_nouter(v), rc = RASTER_OK;
    lazy_lock(v->file);
    if (!v->wshape_known) {
        rc = outer_from_netcdf(v, v->wshape);
        for (int i = 0; i < no && rc == RASTER_OK; i++)
            v->wunlim[i] = (unsigned char)var_dim_unlimited(v, i);
        v->wshape[no] = v->ny;
        v->wshape[no + 1] = v->nx;
        v->wshape_known = rc == RASTER_OK;
    }
    lazy_unlock(v->file);
    return rc;
}

int var_write_shape(raster_var *v, size_t *shape)
{
    int rc = v->wshape_known ? RASTER_OK : write_shape_load(v);
    if (rc == RASTER_OK) {
        lazy_lock(v->file);
        memcpy(shape, v->wshape, (size_t)v->ndims * sizeof *shape);
        lazy_unlock(v->file);
    }
    return rc;
}

int var_write_unlimited(raster_var *v, int d)
{
    if (!v->wshape_known && write_shape_load(v) != RASTER_OK)
        return 0;
    return d < var_nouter(v) && v->wunlim[d];
}

void var_wrote(raster_var *v, const size_t *start, const size_t *count,
               const ptrdiff_t *stride)
{
    if (!v->wshape_known)
        return;
    lazy_lock(v->file);
    for (int i = 0; i < var_nouter(v); i++) {
        size_t end = count[i] == 0 ? 0
                     : start[i] + (count[i] - 1) * (size_t)(stride ? stride[i]
                                                                   : 1) + 1;
        if (v->wunlim[i] && end > v->wshape[i])
            v->wshape[i] = end;
    }
    lazy_unlock(v->file);
}

int var_outer_shape(const raster_var *v, size_t *shape)
{
    size_t n = (size_t)var_nouter(v) * sizeof *shape;
    if (v->file && v->file->lean) { /* looked up at the lean open */
        memcpy(shape, v->outer, n);
        return RASTER_OK;
    }
    if (!v->file || v->file->writable)
        return outer_from_netcdf(v, shape);
    /* A read-only file: looked up once. For an unlimited dimension netCDF
     * scans every variable using it (half of a point read through the
     * shim). The handle keeps the shape it first saw: records another
     * handle of this process appends later (which marks the variable
     * incomplete) are refused as beyond it, never read as fill. The cache
     * is the only thing written through the const pointer. */
    raster_var *c = (raster_var *)v;
    int rc = RASTER_OK;
    lazy_lock(c->file);
    if (!c->outer_known && (rc = outer_from_netcdf(v, c->outer)) == RASTER_OK)
        c->outer_known = 1;
    if (rc == RASTER_OK)
        memcpy(shape, c->outer, n);
    lazy_unlock(c->file);
    return rc;
}

/* 1 when every outer extent of the box ends inside shape. */
static int box_inside(const raster_var *v, const size_t *shape,
                      const size_t *start, const size_t *count,
                      const ptrdiff_t *stride)
{
    for (int i = 0; i < var_nouter(v); i++) {
        if (count[i] == 0)
            continue;
        size_t step = stride ? (size_t)stride[i] : 1, span;
        if (start[i] >= shape[i] ||
            raster_mul_overflows(count[i] - 1, step, &span) ||
            span >= shape[i] - start[i])
            return 0;
    }
    return 1;
}

int var_read_shape(const raster_var *v, const size_t *start,
                   const size_t *count, const ptrdiff_t *stride,
                   size_t *shape)
{
    if (!v->file || !v->file->writable)
        return var_outer_shape(v, shape);
    /* the cache is the only thing written through the const pointer */
    raster_var *c = (raster_var *)v;
    int rc = RASTER_OK;
    lazy_lock(c->file);
    if (!c->outer_known || !box_inside(v, c->outer, start, count, stride)) {
        rc = outer_from_netcdf(v, c->outer);
        c->outer_known = rc == RASTER_OK;
    }
    if (rc == RASTER_OK)
        memcpy(shape, c->outer, (size_t)var_nouter(v) * sizeof *shape);
    lazy_unlock(c->file);
    return rc;
}

void var_list_free(raster_var **list)
{
    while (*list) {
        raster_var *next = (*list)->next;
        var_free(*list);
        *list = next;
    }
}

void var_pend_free(raster_var *v)
{
    if (!v->pend)
        return;
    raster_free(v->pend->e);
    raster_free(v->pend->vals);
    raster_free(v->pend);
    v->pend = NULL;
}

void var_free(raster_var *v)
{
    if (!v)
        return;
    var_pend_free(v);
    raster_free(v->store_ncw);
    fileio_close_stores(v);
    raster_free(v->h5path);
    for (size_t s = 0; v->addr && s <= v->nregions; s++) {
        raster_free(v->addr[s].addr);
        raster_free(v->addr[s].ck);
        raster_free(v->addr[s].csize);
    }
    raster_free(v->addr);
    raster_free(v->name);
    raster_mask_free(v->mask);
    raster_mesh_free(v->mesh);
    layout_free(v->lay);
    regions_free(v);
    tiles_free(v);
    raster_free(v->stile); /* format 5's tiles (tilestore.h) */
    raster_free(v->stile_first);
    raster_free(v->stile_done);
    raster_free(v->vaddr);
    raster_free(v->vsize);
    raster_free(v->sum_runs);
    raster_free(v->stats_weights);
    raster_free(v->stats_cellreg);
    raster_free(v->stats_runs);
    raster_free(v->stats_last_hit);
    raster_free(v->stats_w);
    raster_free(v->stats_wcrcs);
    raster_free(v->stats_stale);
    raster_free(v->store_grp);
    raster_free(v->store_var);
    raster_free(v->store_cells);
    v->magic = DEAD_MAGIC;
    raster_free(v);
}

int file_locks_init(raster_file *f)
{
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (err)
        return err;
    err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    if (!err && (err = pthread_mutex_init(&f->lazy_lock, &attr)) == 0 &&
        (err = pthread_mutex_init(&f->lean_lock, NULL)) != 0)
        pthread_mutex_destroy(&f->lazy_lock);
    pthread_mutexattr_destroy(&attr);
    return err;
}

void file_locks_destroy(raster_file *f)
{
    pthread_mutex_destroy(&f->lean_lock);
    pthread_mutex_destroy(&f->lazy_lock);
}
