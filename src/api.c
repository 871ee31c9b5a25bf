/*
 * api.c - the public file, variable and region-read API: argument checks,
 * turning requests into pieces over the layout, and handing them to the
 * Chunk Data Handler.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkio.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "index.h"
#include "integrity.h"
#include "meta.h"
#include "parwrite.h"
#include "placeholder.h"
#include "regions.h"
#include "lean.h"
#include "tiles.h"

#define DEFAULT_TILE 50

/* ---- files -------------------------------------------------------------- */

static int scan_groups(raster_file *f, int g)
{
    int n, st, rc;
    if ((st = nc_inq_grps(g, &n, NULL)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "listing groups: %s",
                              nc_strerror(st));
    if (n == 0)
        return RASTER_OK;
    int *ids = raster_reallocarray(NULL, (size_t)n, sizeof *ids);
    RETURN_ERROR_IF(!ids, RASTER_ENOMEM, "out of memory listing groups");
    rc = nc_inq_grps(g, NULL, ids) == NC_NOERR ? RASTER_OK
         : raster_fail(RASTER_ENETCDF, "listing groups");
    for (int i = 0; i < n && rc == RASTER_OK; i++) {
        if (meta_is_raster_group(ids[i])) {
            raster_var *v;
            rc = meta_load(f, ids[i], 1, &v);
            if (rc == RASTER_OK &&
                raster_var_by_varid(f, v->parent, v->varid)) {
                rc = raster_fail(RASTER_EFORMAT, "two storage groups claim "
                                 "variable %s", v->name);
                var_free(v);
            } else if (rc == RASTER_OK) {
                /* keep file order: append */
                raster_var **tail = &f->vars;
                while (*tail)
                    tail = &(*tail)->next;
                *tail = v;
            }
        } else if (!meta_is_abandoned_group(ids[i])) {
            rc = scan_groups(f, ids[i]);
        }
    }
    raster_free(ids);
    return rc;
}

/* Files attached to an ncid, so that a program using the region-read API
 * finds the state the shim (or another part of it) attached. */
static pthread_mutex_t attached_lock = PTHREAD_MUTEX_INITIALIZER;
static raster_file *attached;

static void attached_remove(raster_file *f)
{
    pthread_mutex_lock(&attached_lock);
    for (raster_file **p = &attached; *p; p = &(*p)->next_attached) {
        if (*p == f) {
            *p = f->next_attached;
            break;
        }
    }
    pthread_mutex_unlock(&attached_lock);
}

raster_file *raster_file_for_ncid(int ncid)
{
    pthread_mutex_lock(&attached_lock);
    raster_file *f = attached;
    while (f && (f->ncid & ~0xffff) != (ncid & ~0xffff))
        f = f->next_attached;
    pthread_mutex_unlock(&attached_lock);
    return f;
}

/* Open files (issue #27): raster_close and raster_abandon take their
 * handle out of this set first and refuse one that is not in it, so a
 * file closed twice gets RASTER_EINVAL, not a double free. Only the
 * pointer is compared, never read: no use after free either. Best effort:
 * a new file may get a closed one's address (include/raster.h). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static raster_file *live;

static void live_add(raster_file *f)
{
    pthread_mutex_lock(&live_lock);
    f->next_live = live;
    live = f;
    pthread_mutex_unlock(&live_lock);
}

/* 1 when f was open (it no longer is registered), 0 when it was not. */
static int live_take(const raster_file *f)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (raster_file **p = &live; *p; p = &(*p)->next_live) {
        if (*p == f) {
            *p = f->next_live;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
    return found;
}

static void file_free(raster_file *f)
{
    live_take(f); /* a failed open's: not taken yet */
    /* files opened in parallel are registered even when raster owns them */
    attached_remove(f);
#ifdef RASTER_MPI
    par_free(f);
#endif
    var_list_free(&f->vars);
    fileio_close(f);
    file_locks_destroy(f);
    raster_free(f->path);
    f->magic = DEAD_MAGIC;
    raster_free(f);
}

static int file_new(int ncid, int own, int writable, const char *path,
                    raster_file **out)
{
    raster_file *f = raster_calloc(1, sizeof *f);
    RETURN_ERROR_IF(!f, RASTER_ENOMEM, "out of memory opening a file");
    if (file_locks_init(f) != 0) {
        raster_free(f);
        return raster_fail(RASTER_ENOMEM, "no mutex for a file");
    }
    f->magic = FILE_MAGIC;
    f->ncid = ncid;
    f->own_ncid = own;
    f->writable = writable;
    f->fd = -1;
    f->h5 = -1;
    f->write_format = meta_default_format;
    if (path) {
        f->path = raster_strdup(path);
        if (!f->path) {
            file_locks_destroy(f);
            raster_free(f);
            return raster_fail(RASTER_ENOMEM, "out of memory opening %s",
                               path);
        }
    }
    live_add(f);
    *out = f;
    return RASTER_OK;
}

int raster_create(const char *path, raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!path, RASTER_EINVAL, "file name is NULL");
    int rc = raster_filter_register();
    if (rc)
        return rc;
    int ncid, st = nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "creating %s: %s",
                       path, nc_strerror(st));
    rc = file_new(ncid, 1, 1, path, out);
    if (rc)
        raster_nc_close(ncid);
    return rc;
}

/* Loads the raster variables of an open file into f. */
static int file_load(raster_file *f)
{
    int rc = scan_groups(f, f->ncid);
    if (rc)
        return rc;
    /* without an fd the netCDF path serves every read; the stores' byte
     * offsets are looked up when a read first touches a store */
    if (!f->writable && f->path && f->vars) {
        f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        file_identity_record(f);
    }
    return RASTER_OK;
}

int raster_open(const char *path, int mode, raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!path, RASTER_EINVAL, "file name is NULL");
    RETURN_ERROR_IF(mode != RASTER_READ && mode != RASTER_WRITE,
                    RASTER_EINVAL, "mode %d is neither RASTER_READ nor "
                    "RASTER_WRITE", mode);
    /* before netCDF opens the file: it checks the placeholders' filter */
    int rc = raster_filter_register();
    if (rc)
        return rc;
    if (mode == RASTER_READ && getenv("RASTER_NO_LEAN") == NULL) {
        /* through HDF5 alone when the file allows (lean.h); netCDF's own
         * open otherwise, which also gives the errors */
        raster_file *f;
        rc = file_new(-1, 1, 0, path, &f);
        if (rc)
            return rc;
        rc = lean_open(f);
        if (rc == RASTER_OK) {
            *out = f;
            return RASTER_OK;
        }
        file_free(f);
        if (rc == RASTER_ENOMEM)
            return rc;
    }
    int ncid, st = nc_open(path, mode == RASTER_WRITE ? NC_WRITE : NC_NOWRITE,
                           &ncid);
    if (st != NC_NOERR)
        return raster_fail_nc(st == ENOENT ? RASTER_ENOTFOUND
                                           : RASTER_ENETCDF,
                              st, "opening %s: %s", path, nc_strerror(st));
    raster_file *f;
    rc = file_new(ncid, 1, mode == RASTER_WRITE, path, &f);
    if (rc) {
        raster_nc_close(ncid);
        return rc;
    }
    rc = file_load(f);
    if (rc == RASTER_OK && mode == RASTER_READ && !f->vars)
        rc = raster_fail(RASTER_EFORMAT, "%s holds no raster variable", path);
    if (rc) {
        raster_nc_close(ncid);
        file_free(f);
        return rc;
    }
    *out = f;
    return RASTER_OK;
}

int raster_attach(int ncid, int writable, raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    size_t len;
    char *path = NULL;
    int fmt, mode = 0;
    /* in-memory and diskless files have a name but no file behind it: no
     * path, so no pread of whatever file bears that name */
    int in_memory = nc_inq_format_extended(ncid, &fmt, &mode) != NC_NOERR ||
                    (mode & (NC_INMEMORY | NC_DISKLESS)) != 0;
    if (!in_memory && nc_inq_path(ncid, &len, NULL) == NC_NOERR) {
        path = raster_malloc(len + 1);
        RETURN_ERROR_IF(!path, RASTER_ENOMEM, "out of memory attaching");
        if (nc_inq_path(ncid, &len, path) != NC_NOERR)
            path[0] = '\0';
        path[len] = '\0';
    }
    raster_file *f;
    int rc = file_new(ncid, 0, writable, path && path[0] ? path : NULL, &f);
    raster_free(path);
    if (rc)
        return rc;
    rc = file_load(f);
    if (rc) {
        file_free(f);
        return rc;
    }
    pthread_mutex_lock(&attached_lock);
    f->next_attached = attached;
    attached = f;
    pthread_mutex_unlock(&attached_lock);
    *out = f;
    return RASTER_OK;
}

/* The placeholder of v at v's extent, so that every part of it a reader
 * without raster can ask for holds the marker (placeholder.c). Parallel
 * files keep it as netCDF made it: HDF5 extends a dataset only
 * collectively there. */
static int fit_placeholder(raster_var *v)
{
    if (v->file->par)
        return RASTER_OK;
    size_t len[RASTER_MAX_DIMS];
    for (int i = 0; i < v->ndims; i++) {
        int st = nc_inq_dimlen(v->parent, v->dimids[i], &len[i]);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "%s: dimension %d: %s",
                                  v->name, i, nc_strerror(st));
    }
    return placeholder_fit(fileio_dataset(v->file, v->parent, v->name),
                           v->ndims, len, v->name);
}

int raster_close(raster_file *f)
{
    if (!f)
        return RASTER_OK;
    if (!live_take(f))
        return raster_fail(RASTER_EINVAL, "raster_close: not an open raster "
                           "file (closed already?)");
    int rc = RASTER_OK;
#ifdef RASTER_MPI
    if (f->par) /* collective: tables, and the same flags on every rank */
        rc = par_before_close(f);
#endif
    for (raster_var *v = f->vars; v; v = v->next) {
        if (!v->materialized && rc == RASTER_OK)
            rc = meta_materialize(v);
    }
    int dirty = 0;
    for (raster_var *v = f->vars; v; v = v->next)
        dirty |= v->dirty;
    for (raster_var *v = f->vars; v && dirty && rc == RASTER_OK; v = v->next)
        if (v->dirty)
            rc = fit_placeholder(v);
    if (dirty && rc == RASTER_OK) {
        /* data first, then the markers, so a marker never precedes data */
        int st = nc_sync(f->ncid);
        if (st != NC_NOERR)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "flushing %s: %s",
                                f->path ? f->path : "file", nc_strerror(st));
        for (raster_var *v = f->vars; v && rc == RASTER_OK; v = v->next)
            if (v->dirty)
                rc = meta_mark_complete(v, 1);
    }
    fileio_close(f); /* raster's own HDF5 handle before netCDF's */
    if (f->own_ncid && !f->lean) {
        int st = raster_nc_close(f->ncid);
        if (st != NC_NOERR && rc == RASTER_OK)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "closing %s: %s",
                                f->path ? f->path : "file", nc_strerror(st));
    }
    file_free(f);
    return rc;
}

int raster_file_ncid(const raster_file *f)
{
    if (!file_ok(f))
        return -1;
    return file_netcdf((raster_file *)f) == RASTER_OK ? f->ncid : -1;
}

int raster_set_threads(int n)
{
    RETURN_ERROR_IF(n < 0, RASTER_EINVAL, "thread count %d is negative", n);
    chunkio_set_threads(n);
    return RASTER_OK;
}

int raster_file_set_format(raster_file *f, int version)
{
    RETURN_ERROR_IF(!file_ok(f) || !f->writable, RASTER_EINVAL,
                    "raster_file_set_format needs a file open for writing");
    RETURN_ERROR_IF(version < RASTER_FORMAT_OLDEST_WRITTEN ||
                    version > RASTER_FORMAT_VERSION, RASTER_EUNSUPPORTED,
                    "raster writes format versions %d to %d, not %d",
                    RASTER_FORMAT_OLDEST_WRITTEN, RASTER_FORMAT_VERSION,
                    version);
    f->write_format = version;
    return RASTER_OK;
}

size_t raster_file_nvars(const raster_file *f)
{
    size_t n = 0;
    for (raster_var *v = file_ok(f) ? f->vars : NULL; v; v = v->next)
        n++;
    return n;
}

raster_var *raster_file_var(const raster_file *f, size_t i)
{
    raster_var *v = file_ok(f) ? f->vars : NULL;
    while (v && i--)
        v = v->next;
    return v;
}

int raster_var_find(const raster_file *f, const char *name, raster_var **out)
{
    RETURN_ERROR_IF(!f || !name || !out, RASTER_EINVAL, "NULL argument");
    RETURN_ERROR_IF(!file_ok(f), RASTER_EINVAL, "not an open raster file");
    for (raster_var *v = f->vars; v; v = v->next) {
        if (strcmp(v->name, name) == 0) {
            *out = v;
            return RASTER_OK;
        }
    }
    *out = NULL;
    return raster_fail(RASTER_ENOTFOUND, "no raster variable '%s' in %s",
                       name, f->path ? f->path : "the file");
}

/* ---- defining ----------------------------------------------------------- */

/* raster_def_var() and raster_adopt_var(): varid -1 creates the
 * placeholder variable, >= 0 adopts it. */
static int define(raster_file *f, int parent, int varid, const char *name,
                  int xtype, int ndims, const int *dimids, const size_t *chunk,
                  const raster_mask *mask, raster_var **out)
{
    RETURN_ERROR_IF(!f->writable, RASTER_EINVAL, "file is read-only");
    RETURN_ERROR_IF(convert_type_size(xtype) == 0, RASTER_EINVAL,
                    "type %d of %s is not a netCDF numeric type", xtype, name);
    RETURN_ERROR_IF(ndims < 2 || ndims > RASTER_MAX_DIMS, RASTER_EINVAL,
                    "%s has %d dimensions: raster needs 2 to %d", name, ndims,
                    RASTER_MAX_DIMS);
    size_t len[RASTER_MAX_DIMS], ch[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        int st = nc_inq_dimlen(parent, dimids[i], &len[i]);
        RETURN_ERROR_IF(st != NC_NOERR, RASTER_EINVAL, "%s: dimension id "
                        "%d: %s", name, dimids[i], nc_strerror(st));
    }
    size_t ny = len[ndims - 2], nx = len[ndims - 1];
    RETURN_ERROR_IF(var_nc_dim_unlimited(parent, dimids[ndims - 2]) ||
                    var_nc_dim_unlimited(parent, dimids[ndims - 1]),
                    RASTER_EINVAL, "%s: a grid dimension is unlimited; the "
                    "mask fixes the grid", name);
    RETURN_ERROR_IF(ny != mask->ny || nx != mask->nx, RASTER_EMASK,
                    "mask is %zu x %zu but the grid of %s is %zu x %zu",
                    mask->ny, mask->nx, name, ny, nx);
    for (int i = 0; i < ndims; i++) {
        if (chunk) {
            ch[i] = chunk[i];
        } else if (i < ndims - 2) {
            ch[i] = 1;
        } else {
            ch[i] = len[i] < DEFAULT_TILE ? len[i] : DEFAULT_TILE;
        }
        RETURN_ERROR_IF(ch[i] == 0, RASTER_EINVAL, "%s: chunk size %d is 0",
                        name, i);
    }
    RETURN_ERROR_IF(ch[ndims - 2] > ny || ch[ndims - 1] > nx, RASTER_EINVAL,
                    "%s: tile %zu x %zu is larger than the grid %zu x %zu",
                    name, ch[ndims - 2], ch[ndims - 1], ny, nx);
    /* the placeholder is chunked so (fixed dimensions clipped): HDF5 takes
     * chunks below 4 GiB only; checked before anything is created */
    double chunk_bytes = (double)convert_type_size(xtype);
    for (int i = 0; i < ndims; i++) {
        int unlim = var_nc_dim_unlimited(parent, dimids[i]);
        chunk_bytes *= (double)(unlim || ch[i] <= len[i] ? ch[i] : len[i]);
    }
    RETURN_ERROR_IF(chunk_bytes >= 4294967296.0, RASTER_EINVAL,
                    "%s: base chunk of %.0f bytes is larger than HDF5's "
                    "4 GiB chunk limit", name, chunk_bytes);
    raster_var *v;
    int rc = meta_define(f, parent, varid, name, xtype, ndims, dimids, ch,
                         mask, &v);
    if (rc)
        return rc;
    raster_var **tail = &f->vars;
    while (*tail)
        tail = &(*tail)->next;
    *tail = v;
    *out = v;
    return RASTER_OK;
}

int raster_def_var(raster_file *f, int parent, const char *name, int xtype,
                   int ndims, const int *dimids, const size_t *chunk,
                   const raster_mask *mask, raster_var **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!f || !name || !dimids || !mask, RASTER_EINVAL,
                    "NULL argument");
    RETURN_ERROR_IF(!file_ok(f), RASTER_EINVAL, "not an open raster file");
    int other;
    RETURN_ERROR_IF(nc_inq_varid(parent, name, &other) == NC_NOERR ||
                    nc_inq_grp_ncid(parent, name, &other) == NC_NOERR,
                    RASTER_EINVAL, "name %s is already in use", name);
    return define(f, parent, -1, name, xtype, ndims, dimids, chunk, mask,
                  out);
}

int raster_adopt_var(raster_file *f, int parent, int varid,
                     const size_t *chunk, const raster_mask *mask,
                     raster_var **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!f || !mask, RASTER_EINVAL, "NULL argument");
    RETURN_ERROR_IF(!file_ok(f), RASTER_EINVAL, "not an open raster file");
    char name[NC_MAX_NAME + 1];
    int xtype, ndims, dimids[NC_MAX_VAR_DIMS];
    int st = nc_inq_varndims(parent, varid, &ndims);
    RETURN_ERROR_IF(st != NC_NOERR, RASTER_EINVAL, "variable %d: %s", varid,
                    nc_strerror(st));
    RETURN_ERROR_IF(ndims < 2 || ndims > RASTER_MAX_DIMS, RASTER_EINVAL,
                    "variable %d has %d dimensions: raster needs 2 to %d",
                    varid, ndims, RASTER_MAX_DIMS);
    st = nc_inq_var(parent, varid, name, &xtype, NULL, dimids, NULL);
    RETURN_ERROR_IF(st != NC_NOERR, RASTER_EINVAL, "variable %d: %s", varid,
                    nc_strerror(st));
    RETURN_ERROR_IF(raster_var_by_varid(f, parent, varid) != NULL,
                    RASTER_EINVAL, "%s is a raster variable already", name);
    RETURN_ERROR_IF(fileio_has_data(parent, name) == 1, RASTER_EINVAL,
                    "%s holds data already; raster takes only variables "
                    "never written", name);
    return define(f, parent, varid, name, xtype, ndims, dimids, chunk, mask,
                  out);
}

raster_var *raster_var_by_varid(const raster_file *f, int parent, int varid)
{
    if (!file_ok(f) || file_netcdf((raster_file *)f) != RASTER_OK)
        return NULL;
    for (raster_var *v = f ? f->vars : NULL; v; v = v->next)
        if (v->parent == parent && v->varid == varid)
            return v;
    return NULL;
}

int raster_is_raster_group(int grpid)
{
    return meta_is_raster_group(grpid) || meta_is_abandoned_group(grpid);
}

int raster_abandon(raster_file *f)
{
    if (!f)
        return RASTER_OK;
    if (!live_take(f))
        return raster_fail(RASTER_EINVAL, "raster_abandon: not an open "
                           "raster file (closed already?)");
    int rc = RASTER_OK;
    if (f->own_ncid && !f->lean) {
        int st = nc_abort(f->ncid);
        if (st != NC_NOERR)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "abandoning %s: %s",
                                f->path ? f->path : "file", nc_strerror(st));
    }
    file_free(f);
    return rc;
}

int raster_var_rename(raster_var *v, const char *name)
{
    RETURN_ERROR_IF(!var_ok(v) || !name || !*name, RASTER_EINVAL,
                    "NULL argument or a closed file's variable");
    RETURN_ERROR_IF(!v->file->writable, RASTER_EINVAL, "%s: file is "
                    "read-only", v->name);
    char *copy = raster_strdup(name);
    RETURN_ERROR_IF(!copy, RASTER_ENOMEM, "out of memory renaming %s",
                    v->name);
    /* the placeholder first: netCDF checks the new name */
    int st = nc_rename_var(v->parent, v->varid, name);
    if (st == NC_NOERR)
        st = nc_put_att_text(v->grpid, NC_GLOBAL, ATT_VARIABLE, strlen(name),
                             name);
    if (st != NC_NOERR) {
        raster_free(copy);
        return raster_fail_nc(RASTER_ENETCDF, st, "renaming %s to %s: %s",
                              v->name, name, nc_strerror(st));
    }
    raster_free(v->name);
    v->name = copy;
    return RASTER_OK;
}

int raster_rename_dim(raster_file *f, int ncid, int dimid, const char *name)
{
    RETURN_ERROR_IF(!file_ok(f) || !name || !*name, RASTER_EINVAL,
                    "NULL argument or a closed file");
    RETURN_ERROR_IF(!f->writable, RASTER_EINVAL, "renaming a dimension: "
                    "file is read-only");
    /* renamed already (the shim renames first, as netCDF would) */
    char now[NC_MAX_NAME + 1];
    int st = nc_inq_dimname(ncid, dimid, now);
    if (st == NC_NOERR && strcmp(now, name) != 0)
        st = nc_rename_dim(ncid, dimid, name);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "renaming "
                       "dimension %d to %s: %s", dimid, name,
                       nc_strerror(st));
    /* the ids are what readers use; the names follow them (FORMAT.md) */
    for (raster_var *v = f->vars; v; v = v->next) {
        int uses = 0;
        for (int i = 0; i < v->ndims; i++)
            uses |= v->dimids[i] == dimid;
        int rc = uses ? meta_store_dim_names(v) : RASTER_OK;
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

int raster_free_name(int grpid, const char *name)
{
    RETURN_ERROR_IF(!name, RASTER_EINVAL, "NULL name");
    int g;
    if (nc_inq_grp_ncid(grpid, name, &g) != NC_NOERR ||
        !raster_is_raster_group(g))
        return RASTER_OK;
    /* readers find storage groups by their attributes, never by name */
    for (int i = 1; i < 10000; i++) {
        char alias[NC_MAX_NAME + 1];
        int other;
        snprintf(alias, sizeof alias, "%.*s_%d", NC_MAX_NAME - 6, name, i);
        if (nc_inq_grp_ncid(grpid, alias, &other) == NC_NOERR ||
            nc_inq_varid(grpid, alias, &other) == NC_NOERR ||
            nc_inq_typeid(grpid, alias, &other) == NC_NOERR)
            continue;
        int st = nc_rename_grp(g, alias);
        RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "moving "
                           "raster's group %s to %s: %s", name, alias,
                           nc_strerror(st));
        return RASTER_OK;
    }
    return raster_fail(RASTER_EINVAL, "%s: no free name to move raster's "
                       "group to", name);
}

int raster_var_put_att(raster_var *v, const char *name, int xtype, size_t len,
                       const void *value)
{
    RETURN_ERROR_IF(!var_ok(v) || !name, RASTER_EINVAL,
                    "NULL argument or a closed file's variable");
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    int is_fill = strcmp(name, "_FillValue") == 0;
    RETURN_ERROR_IF(is_fill && (xtype != v->xtype || len != 1),
                    RASTER_EINVAL, "%s: _FillValue must be one value of the "
                    "variable's type", v->name);
    int st;
    /* A fill value goes to the stores first: they refuse it once they hold
     * data, and then the variable must keep its old one. */
    for (size_t s = 0; is_fill && s <= v->nregions; s++) {
        if (v->store_var[s] < 0)
            continue;
        st = nc_put_att(v->store_grp[s], v->store_var[s], "_FillValue",
                        xtype, 1, value);
        RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st,
                           "%s: fill value: %s", v->name, nc_strerror(st));
    }
    st = nc_put_att(v->parent, v->varid, name, xtype, len, value);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st,
                       "%s: attribute %s: %s", v->name, name,
                       nc_strerror(st));
    if (is_fill)
        memcpy(v->fill, value, v->elem);
    return RASTER_OK;
}

void raster_var_attributes(const raster_var *v, int *grpid, int *varid)
{
    int ok = file_netcdf(v->file) == RASTER_OK;
    if (grpid) *grpid = ok ? v->parent : -1;
    if (varid) *varid = ok ? v->varid : -1;
}

const char *raster_var_name(const raster_var *v) { return v->name; }
int raster_var_type(const raster_var *v) { return v->xtype; }
int raster_var_ndims(const raster_var *v) { return v->ndims; }
int raster_var_varid(const raster_var *v)
{
    return file_netcdf(v->file) == RASTER_OK ? v->varid : -1;
}
int raster_var_parent(const raster_var *v)
{
    return file_netcdf(v->file) == RASTER_OK ? v->parent : -1;
}
const raster_mesh *raster_var_mesh(const raster_var *v)
{
    /* read-only files load without a mesh: build it on first request */
    if (!v || meta_ensure_layout((raster_var *)v) != RASTER_OK)
        return NULL;
    return v->mesh;
}
const raster_mask *raster_var_mask(const raster_var *v)
{
    /* what a caller reads off the mask must agree with what reads serve:
     * a read-only file's mask comes with the full check */
    if (!v || meta_ensure_layout((raster_var *)v) != RASTER_OK)
        return NULL;
    return v->mask;
}

int raster_var_check(raster_var *v)
{
    RETURN_ERROR_IF(!v, RASTER_EINVAL, "NULL variable");
    return meta_ensure_layout(v);
}

int raster_var_dims(const raster_var *v, int *dimids, size_t *shape,
                    size_t *chunk)
{
    RETURN_ERROR_IF(!v, RASTER_EINVAL, "NULL variable");
    for (int i = 0; i < v->ndims; i++) {
        if (dimids)
            dimids[i] = v->dimids[i];
        if (chunk)
            chunk[i] = v->chunk[i];
    }
    if (!shape)
        return RASTER_OK;
    if (v->file->writable) { /* records may have been added */
        for (int i = 0; i < v->ndims; i++) {
            int st = nc_inq_dimlen(v->grpid, v->dimids[i], &shape[i]);
            RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "%s: %s",
                               v->name, nc_strerror(st));
        }
        return RASTER_OK;
    }
    /* the grid is the mask's; the outer shape looked up once */
    int rc = var_outer_shape(v, shape);
    if (rc)
        return rc;
    shape[v->ndims - 2] = v->ny;
    shape[v->ndims - 1] = v->nx;
    return RASTER_OK;
}

/* ---- hyperslabs --------------------------------------------------------- */

/* Largest index a write may reach along an unlimited dimension: far beyond
 * any real file, and small enough that index arithmetic cannot wrap. */
#define MAX_RECORD_INDEX ((size_t)1 << 48)

/* Checks start/count/stride against the current shape; writes may extend
 * unlimited outer dimensions. Grid dimensions are bounded by the mask.
 * Failures record netCDF's status for the same request (strides first, then
 * dimension by dimension: NC_ESTRIDE, NC_EINVALCOORDS, NC_EEDGE). */
static int check_box(const raster_var *v, const size_t *start,
                     const size_t *count, const ptrdiff_t *stride, int write)
{
    size_t shape[RASTER_MAX_DIMS];
    int rc = raster_var_dims(v, NULL, shape, NULL);
    if (rc)
        return rc;
    shape[v->ndims - 2] = v->ny;
    shape[v->ndims - 1] = v->nx;
    for (int i = 0; stride && i < v->ndims; i++)
        RETURN_NC_ERROR_IF(stride[i] < 1, RASTER_EINVAL, NC_ESTRIDE,
                           "%s: stride %td in dimension %d", v->name,
                           stride[i], i);
    for (int i = 0; i < v->ndims; i++) {
        ptrdiff_t step = stride ? stride[i] : 1;
        size_t limit = shape[i];
        if (write && i < v->ndims - 2 &&
            var_nc_dim_unlimited(v->grpid, v->dimids[i]))
            limit = MAX_RECORD_INDEX;
        RETURN_NC_ERROR_IF(start[i] > limit || (start[i] == limit &&
                                                count[i] > 0),
                           RASTER_EINVAL, NC_EINVALCOORDS, "%s: start %zu "
                           "beyond length %zu in dimension %d", v->name,
                           start[i], limit, i);
        if (count[i] == 0)
            continue;
        /* last = start + (count - 1) * step, refusing any wrap-around */
        size_t span;
        RETURN_NC_ERROR_IF(raster_mul_overflows(count[i] - 1, (size_t)step,
                                                &span) ||
                           span >= limit - start[i], RASTER_EINVAL, NC_EEDGE,
                           "%s: start %zu count %zu stride %td run past "
                           "length %zu in dimension %d", v->name, start[i],
                           count[i], step, limit, i);
    }
    return RASTER_OK;
}

/* First run of `runs` (grid order) on row y or later. */
static size_t first_run_from(const region_run *runs, size_t n, size_t y)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (runs[mid].y < y)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int push_piece(piece **p, size_t *cap, size_t *np, piece pc)
{
    int rc = raster_grow(p, cap, *np + 1, sizeof **p);
    if (rc == RASTER_OK)
        (*p)[(*np)++] = pc;
    return rc;
}

/* Checks that the pieces of a hyperslab cover each cell of the caller's
 * plane exactly once. Each region's runs are checked alone as they load;
 * only all of them show that no two regions claim one cell, and a read-only
 * file's runs are not compared with its mask until the full check. Without
 * this, a run moved onto another region's cells would serve one region's
 * value for another's cell. Costs a bit per cell of the plane. */
static int check_cover(const raster_var *v, const piece *p, size_t np,
                       const size_t *start, const size_t *count,
                       const ptrdiff_t *stride)
{
    if (v->lay) /* runs derived from the mask: they tile it */
        return RASTER_OK;
    int dy = v->ndims - 2, dx = v->ndims - 1;
    size_t cx = count[dx], cells = count[dy] * cx, total = 0;
    uint64_t *map = raster_calloc(cells / 64 + 1, sizeof *map);
    RETURN_ERROR_IF(!map, RASTER_ENOMEM, "out of memory reading %s",
                    v->name);
    int rc = RASTER_OK;
    for (size_t i = 0; i < np && rc == RASTER_OK; i++) {
        if (!regions_mark(map, p[i].uoff, p[i].len)) {
            size_t sy = stride ? (size_t)stride[dy] : 1;
            size_t sx = stride ? (size_t)stride[dx] : 1;
            rc = raster_fail(RASTER_EFORMAT, "%s: two regions claim grid "
                             "cell (%zu, %zu)", v->name,
                             start[dy] + p[i].uoff / cx * sy,
                             start[dx] + p[i].uoff % cx * sx);
        }
        total += p[i].len;
    }
    raster_free(map);
    if (rc == RASTER_OK && total != cells)
        rc = raster_fail(RASTER_EFORMAT, "%s: the regions cover %zu of the "
                         "%zu grid cells read", v->name, total, cells);
    return rc;
}

/* A hyperslab's rows [ys, yend) with stride sy, columns [xs, xend) with
 * stride sx, cx columns wide in the caller's plane. */
typedef struct slab_box {
    size_t ys, yend, sy, xs, xend, sx, cx;
} slab_box;

/* Appends the pieces of run u inside box b. */
static int run_pieces(const region_run *u, const slab_box *b, piece **p,
                      size_t *cap, size_t *np)
{
    if ((u->y - b->ys) % b->sy != 0)
        return RASTER_OK;
    size_t i = (u->y - b->ys) / b->sy;
    size_t lo = u->x > b->xs ? u->x : b->xs;
    size_t hi = u->x + u->len < b->xend ? u->x + u->len : b->xend;
    if (lo >= hi)
        return RASTER_OK;
    if (b->sx > 1) /* first wanted column at or after lo */
        lo = b->xs + (lo - b->xs + b->sx - 1) / b->sx * b->sx;
    int rc = RASTER_OK;
    for (; lo < hi && rc == RASTER_OK; lo += (b->sx > 1 ? b->sx : hi - lo)) {
        size_t len = b->sx > 1 ? 1 : hi - lo;
        rc = push_piece(p, cap, np, (piece){
            .soff = u->off + (lo - u->x),
            .uoff = i * b->cx + (lo - b->xs) / b->sx, .store = u->store,
            .len = (uint32_t)len});
    }
    return rc;
}

/* Pieces mapping the grid rectangle of a hyperslab to the stores, the
 * caller's plane being count[y] x count[x]: from the tile index in a
 * read-only file (a band across the grid touches only its tiles), from
 * the layout's segments of its rows in a writer (grid order: the rows
 * found by a binary search, no pass over every region), else from every
 * region's runs. */
static int hyperslab_pieces(raster_var *v, const size_t *start,
                            const size_t *count, const ptrdiff_t *stride,
                            piece **out, size_t *n)
{
    if (tiles_usable(v))
        return tiles_pieces(v, start, count, stride, out, n);
    int dy = v->ndims - 2, dx = v->ndims - 1, rc = RASTER_OK;
    size_t ys = start[dy], cy = count[dy], xs = start[dx], cx = count[dx];
    size_t sy = stride ? (size_t)stride[dy] : 1;
    size_t sx = stride ? (size_t)stride[dx] : 1;
    size_t xend = cx ? xs + (cx - 1) * sx + 1 : xs;
    size_t yend = cy ? ys + (cy - 1) * sy + 1 : ys;
    slab_box box = {ys, yend, sy, xs, xend, sx, cx};
    size_t cap = 0, np = 0;
    piece *p = NULL;
    *out = NULL;
    *n = 0;
    const layout *lay = v->table_from_layout ? v->lay : NULL;
    if (lay && cx > 0) {
        size_t lo = 0, hi = lay->nsegs;
        while (lo < hi) { /* the first segment of row ys */
            size_t mid = lo + (hi - lo) / 2;
            if (lay->segs[mid].y < ys)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < lay->nsegs && lay->segs[k].y < yend &&
                            rc == RASTER_OK; k++) {
            const layout_seg *g = &lay->segs[k];
            region_run u = {g->y, g->x, g->len, g->store, g->off};
            rc = run_pieces(&u, &box, &p, &cap, &np);
        }
    }
    for (size_t r = 0; r < v->nregions && rc == RASTER_OK && cx > 0 && !lay;
         r++) {
        const region_run *runs;
        size_t nr;
        if ((rc = regions_runs(v, r, &runs, &nr)) != RASTER_OK)
            break;
        const size_t *bx = v->regions[r].box;
        if (bx[0] >= yend || bx[2] <= ys || bx[1] >= xend || bx[3] <= xs)
            continue;
        for (size_t k = first_run_from(runs, nr, ys);
             k < nr && runs[k].y < yend && rc == RASTER_OK; k++)
            rc = run_pieces(&runs[k], &box, &p, &cap, &np);
    }
    if (rc == RASTER_OK && cx > 0 && cy > 0)
        rc = check_cover(v, p, np, start, count, stride);
    if (rc) {
        raster_free(p);
        return rc;
    }
    *out = p;
    *n = np;
    return RASTER_OK;
}

static int var_io(raster_var *v, const size_t *start, const size_t *count,
                  const ptrdiff_t *stride, void *data, int write)
{
    RETURN_ERROR_IF(!var_ok(v) || !start || !count || !data, RASTER_EINVAL,
                    "NULL argument");
    RETURN_NC_ERROR_IF(write && !v->file->writable, RASTER_EINVAL, NC_EPERM,
                       "%s: file is read-only", v->name);
    int rc = check_box(v, start, count, stride, write);
    if (rc)
        return rc;
    /* a file rewritten under the handle: its tables no longer describe it */
    if (!write && (rc = file_unchanged(v->file)) != RASTER_OK)
        return rc;
    if (!v->materialized && (rc = meta_materialize(v)) != RASTER_OK)
        return rc;
    if (write && !v->dirty) {
        /* appending: incomplete until close, and on disk before any data,
         * so a writer that dies leaves a file that is refused */
        rc = meta_mark_complete(v, 0);
        if (rc)
            return rc;
        int st = nc_sync(v->file->ncid);
        RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "%s: flushing "
                           "the completeness marker: %s", v->name,
                           nc_strerror(st));
        v->dirty = 1;
    }
    piece *p;
    size_t n;
    rc = hyperslab_pieces(v, start, count, stride, &p, &n);
    if (rc)
        return rc;
    int no = var_nouter(v);
#ifdef RASTER_MPI
    if (write && v->file->par) /* no read-through; collective extension */
        rc = par_put(v, p, n, start, count, stride, data,
                     count[no] * count[no + 1]);
    else
#endif
    rc = chunkio_xfer(v, p, n, start, count, stride, data,
                      count[no] * count[no + 1], write);
    raster_free(p);
    /* and while it was read */
    if (rc == RASTER_OK && !write)
        rc = file_unchanged(v->file);
    return rc;
}

int raster_var_put(raster_var *v, const size_t *start, const size_t *count,
                   const ptrdiff_t *stride, const void *data)
{
    return var_io(v, start, count, stride, (void *)data, 1);
}

int raster_var_get(raster_var *v, const size_t *start, const size_t *count,
                   const ptrdiff_t *stride, void *data)
{
    return var_io(v, start, count, stride, data, 0);
}

/* ---- typed transfers: netCDF's conversions and statuses ---------------- */

/* A failed typed transfer: RASTER_EINVAL with netCDF's status. */
#define TYPED_FAIL(ncst, ...)                                                 \
    raster_fail_nc(RASTER_EINVAL, (ncst), __VA_ARGS__)

/* netCDF's X_INT_MAX: nc_put_varm refuses strides from here on. */
#define NC_VARM_STRIDE_LIMIT 2147483647UL

/* 1 when dimension d of v is unlimited. */
static int dim_unlimited(const raster_var *v, int d)
{
    return var_dim_unlimited(v, d);
}

/* 1 when a box of counts cnt laid out by imap is plain row-major. */
static int imap_is_rowmajor(int nd, const size_t *cnt, const ptrdiff_t *imap)
{
    size_t run = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (cnt[d] > 1 && (imap[d] < 0 || (size_t)imap[d] != run))
            return 0;
        run *= cnt[d];
    }
    return 1;
}

/* Bound checks of dimension d: start within the length (NC_EINVALCOORDS),
 * then, when `check_end`, the end: the last strided index (NC4_put_vars,
 * NC4_get_vars) or, for `varm`, start + count (NCDEFAULT_put_varm,
 * NCDEFAULT_get_varm) within the length (NC_EEDGE). */
static int check_dim(const raster_var *v, int d, size_t start, size_t cnt,
                     ptrdiff_t step, size_t len, int check_end, int varm)
{
    RETURN_NC_ERROR_IF(start > len || (start == len && cnt > 0),
                       RASTER_EINVAL, NC_EINVALCOORDS, "%s: start %zu beyond "
                       "length %zu in dimension %d", v->name, start, len, d);
    if (!check_end || cnt == 0)
        return RASTER_OK;
    size_t span;
    int past = varm ? cnt > len - start
                    : raster_mul_overflows(cnt - 1, (size_t)step, &span) ||
                          span >= len - start;
    RETURN_NC_ERROR_IF(past, RASTER_EINVAL, NC_EEDGE, "%s: start %zu count "
                       "%zu stride %td run past length %zu in dimension %d",
                       v->name, start, cnt, step, len, d);
    return RASTER_OK;
}

/* netCDF-4's checks of nc_put_vars / nc_get_vars (NC4_put_vars,
 * NC4_get_vars): every stride first, then dimension by dimension; a put
 * skips unlimited dimensions and, when any count is 0, the edge checks. */
static int check_vars(const raster_var *v, const size_t *start,
                      const size_t *cnt, const ptrdiff_t *str,
                      const size_t *shape, int zero, int write)
{
    for (int d = 0; d < v->ndims; d++)
        RETURN_NC_ERROR_IF(str[d] <= 0, RASTER_EINVAL, NC_ESTRIDE,
                           "%s: stride %td in dimension %d", v->name, str[d],
                           d);
    for (int d = 0; d < v->ndims; d++) {
        if (write && dim_unlimited(v, d))
            continue;
        int rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d],
                           write ? !zero : 1, 0);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* netCDF's checks of nc_put_varm / nc_get_varm (NCDEFAULT_put_varm,
 * NCDEFAULT_get_varm): strides 1 .. X_INT_MAX - 1, then start + count
 * (not the strided extent) against the current lengths: a put in
 * increasing dimension order skipping the record dimension, a get in
 * decreasing order. */
static int check_varm(const raster_var *v, const size_t *start,
                      const size_t *cnt, const ptrdiff_t *str,
                      const size_t *shape, int write)
{
    int nd = v->ndims, rc;
    for (int d = 0; d < nd; d++)
        RETURN_NC_ERROR_IF(str[d] == 0 || (unsigned long)str[d] >=
                                              NC_VARM_STRIDE_LIMIT,
                           RASTER_EINVAL, NC_ESTRIDE, "%s: stride %td in "
                           "dimension %d", v->name, str[d], d);
    if (write) {
        /* NC_is_recvar: the first dimension is the group's unlimited one */
        int unlimid = -1, isrec = 0;
        if (nc_inq_unlimdim(v->parent, &unlimid) == NC_NOERR && unlimid >= 0)
            isrec = v->dimids[0] == unlimid;
        for (int d = isrec; d < nd; d++)
            if ((rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d], 1,
                                1)))
                return rc;
    } else {
        for (int d = nd - 1; d >= 0; d--)
            if ((rc = check_dim(v, d, start[d], cnt[d], str[d], shape[d], 1,
                                1)))
                return rc;
    }
    return RASTER_OK;
}

/* netCDF-4 extends the unlimited dimensions a write reaches before it
 * converts, so a string write that fails to convert still lengthens them.
 * Writing the fill value at the box's last element does the same: that
 * element lies beyond the old end, where every cell reads as fill. */
static int string_put_extend(raster_var *v, const size_t *start,
                             const size_t *cnt, const ptrdiff_t *str,
                             const size_t *shape)
{
    size_t last[RASTER_MAX_DIMS], one[RASTER_MAX_DIMS];
    int grow = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (cnt[d] == 0)
            return RASTER_OK;
        last[d] = start[d] + (cnt[d] - 1) * (size_t)str[d];
        one[d] = 1;
        grow |= dim_unlimited(v, d) && last[d] >= shape[d];
    }
    return grow ? var_io(v, last, one, NULL, v->fill, 1) : RASTER_OK;
}

static int typed_io(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride, const ptrdiff_t *imap,
                    void *data, int memtype, int write)
{
    RETURN_NC_ERROR_IF(!var_ok(v), RASTER_EINVAL, NC_EINVAL,
                       "NULL variable, or a closed file's");
    /* a put's checks ask netCDF (NC_is_recvar) before it is refused as a
     * write to a read-only file: a lean one binds first */
    int rc = write ? file_netcdf(v->file) : RASTER_OK;
    if (rc)
        return rc;
    /* NC_check_nulls, before the dispatch layer looks at types */
    RETURN_NC_ERROR_IF(!start, RASTER_EINVAL, NC_EINVALCOORDS,
                       "%s: no start given", v->name);
    int nd = v->ndims;
    if (memtype == NC_NAT)
        memtype = v->xtype;
    RETURN_NC_ERROR_IF(memtype == NC_CHAR, RASTER_EINVAL, NC_ECHAR,
                       "%s: text cannot be converted to or from numbers",
                       v->name);
    RETURN_NC_ERROR_IF(memtype != NC_STRING && convert_type_size(memtype) == 0,
                       RASTER_EINVAL, NC_EBADTYPE, "%s: memory type %d is not "
                       "a netCDF atomic type", v->name, memtype);
    size_t shape[RASTER_MAX_DIMS], cnt[RASTER_MAX_DIMS];
    ptrdiff_t str[RASTER_MAX_DIMS];
    if ((rc = raster_var_dims(v, NULL, shape, NULL)))
        return rc;
    int zero = 0, clipped = 0;
    for (int d = 0; d < nd; d++) {
        cnt[d] = count ? count[d] : shape[d]; /* NC_check_nulls */
        str[d] = stride ? stride[d] : 1;
        zero |= cnt[d] == 0;
    }
    if (!imap) {
        if ((rc = check_vars(v, start, cnt, str, shape, zero, write)))
            return rc;
    } else {
        if ((rc = check_varm(v, start, cnt, str, shape, write)))
            return rc;
        if (zero) { /* nc_put_varm / nc_get_varm stop here */
            raster_nc_status_set(NC_NOERR);
            return RASTER_OK;
        }
        /* nc_*_varm then moves row by row, each row checked on its own:
         * rows a stride carries past a (fixed, or for a get any) length
         * fail with NC_EINVALCOORDS, the others are transferred. */
        for (int d = 0; d < nd; d++) {
            if (write && dim_unlimited(v, d))
                continue;
            size_t ok = start[d] >= shape[d] ? 0
                        : (shape[d] - start[d] - 1) / (size_t)str[d] + 1;
            if (ok < cnt[d]) {
                cnt[d] = ok;
                clipped = 1;
            }
        }
    }
    if (memtype == NC_STRING) {
        if (write && v->file->writable && (rc = string_put_extend(v, start,
                                                                  cnt, str,
                                                                  shape)))
            return rc;
        return TYPED_FAIL(clipped ? NC_EINVALCOORDS : NC_EBADTYPE,
                          "%s: strings cannot be converted to or from "
                          "numbers", v->name);
    }
    /* netCDF-4 finds out only when HDF5 refuses the write */
    if (write && !v->file->writable)
        return TYPED_FAIL(clipped ? NC_EINVALCOORDS : NC_EHDFERR,
                          "%s: file is read-only", v->name);

    size_t total = 1, bad = 0;
    for (int d = 0; d < nd; d++)
        RETURN_NC_ERROR_IF(raster_mul_overflows(total, cnt[d], &total),
                           RASTER_ENOMEM, NC_ENOMEM, "%s: request too large",
                           v->name);
    if (total > 0) {
        RETURN_NC_ERROR_IF(!data, RASTER_EINVAL, NC_EINVAL,
                           "%s: NULL data", v->name);
        if (memtype == v->xtype &&
            (!imap || imap_is_rowmajor(nd, cnt, imap))) {
            rc = var_io(v, start, cnt, str, data, write);
        } else {
            void *tmp = raster_reallocarray(NULL, total, v->elem);
            RETURN_NC_ERROR_IF(!tmp, RASTER_ENOMEM, NC_ENOMEM, "%s: out of "
                               "memory converting %zu values", v->name,
                               total);
            if (write) {
                bad = convert_box(nd, cnt, imap, data, memtype, tmp, v->xtype,
                                  1);
                rc = var_io(v, start, cnt, str, tmp, 1);
            } else {
                rc = var_io(v, start, cnt, str, tmp, 0);
                if (rc == RASTER_OK)
                    bad = convert_box(nd, cnt, imap, data, memtype, tmp,
                                      v->xtype, 0);
            }
            raster_free(tmp);
        }
        if (rc)
            return rc;
    }
#ifdef RASTER_MPI
    /* a collective write of nothing still takes part in the collective
     * calls of the ranks that write something */
    else if (write && par_put_collective(v) &&
             (rc = var_io(v, start, cnt, str, v->fill, 1)) != RASTER_OK)
        return rc;
#endif
    if (clipped)
        return TYPED_FAIL(NC_EINVALCOORDS, "%s: a stride carries the request "
                          "past a dimension's length; the rows inside it were "
                          "transferred", v->name);
    raster_nc_status_set(bad ? NC_ERANGE : NC_NOERR);
    return RASTER_OK;
}

int raster_var_put_typed(raster_var *v, const size_t *start,
                         const size_t *count, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, const void *data, int memtype)
{
    return typed_io(v, start, count, stride, imap, (void *)data, memtype, 1);
}

int raster_var_get_typed(raster_var *v, const size_t *start,
                         const size_t *count, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, void *data, int memtype)
{
    return typed_io(v, start, count, stride, imap, data, memtype, 0);
}

/* ---- regions ------------------------------------------------------------ */

int raster_region_lookup(const raster_var *v, const char *text, int32_t *id)
{
    RETURN_ERROR_IF(!v || !text || !id, RASTER_EINVAL, "NULL argument");
    char *end;
    long long n = strtoll(text, &end, 10);
    if (end != text && *end == '\0' && n >= INT32_MIN && n <= INT32_MAX) {
        RETURN_ERROR_IF(regions_pos(v, (int32_t)n) < 0, RASTER_ENOTFOUND,
                        "%s has no region %lld", v->name, n);
        *id = (int32_t)n;
        return RASTER_OK;
    }
    int rc = raster_mask_region_by_name(v->mask, text, id);
    if (rc == RASTER_OK && regions_pos(v, *id) < 0)
        rc = raster_fail(RASTER_ENOTFOUND, "region '%s' (%d) has no cells "
                         "in %s", text, (int)*id, v->name);
    return rc;
}

/* Marks the chosen regions in sel[nregions] (caller frees) and, with
 * `runs` set, makes sure their runs (and so their boxes) are known. */
/* Marks the regions ids[0..nids) in *sel (one flag per region position);
 * with `runs`, loads their runs, and with `placed` (a read that puts
 * cells where their runs say) checks them against the stored mask. */
static int select_regions(const raster_var *v, const int32_t *ids,
                          size_t nids, int runs, int placed,
                          unsigned char **sel)
{
    *sel = NULL;
    RETURN_ERROR_IF(!v || !ids || nids == 0, RASTER_EINVAL,
                    "no region given");
    unsigned char *s = raster_calloc(v->nregions, 1);
    RETURN_ERROR_IF(!s, RASTER_ENOMEM, "out of memory selecting regions");
    for (size_t i = 0; i < nids; i++) {
        long pos = regions_pos(v, ids[i]);
        if (pos < 0) {
            raster_free(s);
            return raster_fail(RASTER_ENOTFOUND, "%s has no region %d",
                               v->name, (int)ids[i]);
        }
        s[pos] = 1;
    }
    for (size_t r = 0; runs && r < v->nregions; r++) {
        const region_run *u;
        size_t n;
        int rc = s[r] ? regions_runs((raster_var *)v, r, &u, &n) : RASTER_OK;
        if (rc == RASTER_OK && s[r] && placed)
            rc = regions_check_mask((raster_var *)v, r);
        if (rc) {
            raster_free(s);
            return rc;
        }
    }
    *sel = s;
    return RASTER_OK;
}

static void sel_bbox(const raster_var *v, const unsigned char *sel,
                     size_t box[4])
{
    box[0] = box[1] = SIZE_MAX;
    box[2] = box[3] = 0;
    for (size_t r = 0; r < v->nregions; r++) {
        if (!sel[r])
            continue;
        const size_t *b = v->regions[r].box;
        if (b[0] < box[0]) box[0] = b[0];
        if (b[1] < box[1]) box[1] = b[1];
        if (b[2] > box[2]) box[2] = b[2];
        if (b[3] > box[3]) box[3] = b[3];
    }
}

static size_t sel_cells(const raster_var *v, const unsigned char *sel)
{
    size_t n = 0;
    for (size_t r = 0; r < v->nregions; r++)
        if (sel[r])
            n += v->regions[r].pure_cells + v->regions[r].mixed_cells;
    return n;
}

/* Walks the runs of the selected regions (runs loaded) in grid order,
 * calling visit(run, arg) for each: a merge of the regions' lists. */
static int walk_runs(const raster_var *v, const unsigned char *sel,
                     void (*visit)(const region_run *, void *), void *arg)
{
    size_t k = 0, *head = raster_calloc(v->nregions, sizeof *head);
    RETURN_ERROR_IF(!head, RASTER_ENOMEM, "out of memory ordering regions");
    size_t *list = raster_calloc(v->nregions, sizeof *list);
    if (!list) {
        raster_free(head);
        return raster_fail(RASTER_ENOMEM, "out of memory ordering regions");
    }
    for (size_t r = 0; r < v->nregions; r++)
        if (sel[r])
            list[k++] = r;
    for (;;) {
        const region_run *best = NULL;
        size_t bi = 0;
        for (size_t i = 0; i < k; i++) {
            const region_info *ri = &v->regions[list[i]];
            if (head[i] == ri->nruns)
                continue;
            const region_run *u = &ri->runs[head[i]];
            if (!best || u->y < best->y || (u->y == best->y && u->x < best->x)) {
                best = u;
                bi = i;
            }
        }
        if (!best)
            break;
        /* one region alone: the rest of its row, with no comparisons */
        const region_info *ri = &v->regions[list[bi]];
        do {
            visit(&ri->runs[head[bi]], arg);
            head[bi]++;
        } while (k == 1 && head[bi] < ri->nruns);
    }
    raster_free(head);
    raster_free(list);
    return RASTER_OK;
}

int raster_region_bbox(const raster_var *v, const int32_t *ids, size_t nids,
                       size_t box[4])
{
    RETURN_ERROR_IF(!box, RASTER_EINVAL, "NULL box");
    unsigned char *sel;
    int rc = select_regions(v, ids, nids, 1, 1, &sel);
    if (rc)
        return rc;
    sel_bbox(v, sel, box);
    raster_free(sel);
    return RASTER_OK;
}

int raster_region_size(const raster_var *v, const int32_t *ids, size_t nids,
                       int layout_kind, size_t *cells)
{
    RETURN_ERROR_IF(!cells, RASTER_EINVAL, "NULL output");
    unsigned char *sel;
    int bbox = layout_kind == RASTER_LAYOUT_BBOX;
    int rc = select_regions(v, ids, nids, bbox, bbox, &sel);
    if (rc)
        return rc;
    size_t box[4];
    switch (layout_kind) {
    case RASTER_LAYOUT_PACKED: *cells = sel_cells(v, sel); break;
    case RASTER_LAYOUT_BBOX:
        sel_bbox(v, sel, box);
        *cells = (box[2] - box[0]) * (box[3] - box[1]);
        break;
    case RASTER_LAYOUT_FULL: *cells = v->ny * v->nx; break;
    default:
        rc = raster_fail(RASTER_EINVAL, "unknown layout %d", layout_kind);
    }
    raster_free(sel);
    return rc;
}

typedef struct cells_walk {
    size_t *ys, *xs, k;
} cells_walk;

static void visit_cells(const region_run *u, void *arg)
{
    cells_walk *w = arg;
    for (uint32_t j = 0; j < u->len; j++, w->k++) {
        w->ys[w->k] = u->y;
        w->xs[w->k] = u->x + j;
    }
}

int raster_region_cells(const raster_var *v, const int32_t *ids, size_t nids,
                        size_t *ys, size_t *xs)
{
    RETURN_ERROR_IF(!ys || !xs, RASTER_EINVAL, "NULL output");
    unsigned char *sel;
    int rc = select_regions(v, ids, nids, 1, 1, &sel);
    if (rc)
        return rc;
    cells_walk w = {ys, xs, 0};
    rc = walk_runs(v, sel, visit_cells, &w);
    raster_free(sel);
    return rc;
}

typedef struct pieces_walk {
    piece *p;
    size_t np;
    uint64_t cursor;  /* packed: cells so far */
    int packed;
    size_t box0, box1, bw;
} pieces_walk;

static void visit_pieces(const region_run *u, void *arg)
{
    pieces_walk *w = arg;
    uint64_t uoff = w->packed ? w->cursor
                              : (u->y - w->box0) * w->bw + (u->x - w->box1);
    w->p[w->np++] = (piece){.soff = u->off, .uoff = uoff, .store = u->store,
                            .len = u->len};
    w->cursor += u->len;
}

int raster_region_read(raster_var *v, const int32_t *ids, size_t nids,
                       const size_t *ostart, const size_t *ocount,
                       int layout_kind, void *out)
{
    RETURN_ERROR_IF(!v || !out || (var_nouter(v) > 0 && (!ostart || !ocount)),
                    RASTER_EINVAL, "NULL argument");
    RETURN_ERROR_IF(layout_kind != RASTER_LAYOUT_PACKED &&
                    layout_kind != RASTER_LAYOUT_BBOX &&
                    layout_kind != RASTER_LAYOUT_FULL, RASTER_EINVAL,
                    "unknown layout %d", layout_kind);
    /* the outer box, checked as a hyperslab over the whole grid */
    size_t start[RASTER_MAX_DIMS] = {0}, count[RASTER_MAX_DIMS];
    int no = var_nouter(v);
    for (int i = 0; i < no; i++) {
        start[i] = ostart[i];
        count[i] = ocount[i];
    }
    count[no] = v->ny;
    count[no + 1] = v->nx;
    int rc = check_box(v, start, count, NULL, 0);
    if (rc == RASTER_OK) /* rewritten under the handle (integrity.h) */
        rc = file_unchanged(v->file);
    if (rc)
        return rc;
    unsigned char *sel;
    /* one region packed is its runs in order, wherever they lie; every
     * other read places cells by their runs */
    rc = select_regions(v, ids, nids, 1,
                        layout_kind != RASTER_LAYOUT_PACKED || nids > 1, &sel);
    if (rc)
        return rc;
    size_t box[4] = {0, 0, v->ny, v->nx}, plane = v->ny * v->nx;
    if (layout_kind == RASTER_LAYOUT_BBOX) {
        sel_bbox(v, sel, box);
        plane = (box[2] - box[0]) * (box[3] - box[1]);
    } else if (layout_kind == RASTER_LAYOUT_PACKED) {
        plane = sel_cells(v, sel);
    }
    size_t planes = 1;
    for (int i = 0; i < no; i++)
        planes *= ocount[i];
    if (layout_kind != RASTER_LAYOUT_PACKED) /* fill outside the regions */
        for (size_t i = 0; i < planes * plane; i++)
            memcpy((unsigned char *)out + i * v->elem, v->fill, v->elem);

    size_t np = 0;
    for (size_t r = 0; r < v->nregions; r++)
        np += sel[r] ? v->regions[r].nruns : 0;
    pieces_walk w = {.p = raster_reallocarray(NULL, np ? np : 1,
                                              sizeof *w.p),
                     .packed = layout_kind == RASTER_LAYOUT_PACKED,
                     .box0 = box[0], .box1 = box[1], .bw = box[3] - box[1]};
    if (!w.p) {
        raster_free(sel);
        return raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                           v->name);
    }
    rc = walk_runs(v, sel, visit_pieces, &w);
    raster_free(sel);
    if (rc == RASTER_OK && !v->materialized)
        rc = meta_materialize(v);
    if (rc == RASTER_OK)
        rc = chunkio_xfer(v, w.p, w.np, start, count, NULL, out, plane, 0);
    raster_free(w.p);
    if (rc == RASTER_OK) /* and while it was read */
        rc = file_unchanged(v->file);
    return rc;
}

/* Buffers from this size on are mapped (with huge-page advice), smaller
 * ones come from malloc; raster_region_free() tells them apart by size. */
#define MAPPED_BYTES ((size_t)2 << 20)

int raster_region_alloc(const raster_var *v, const int32_t *ids, size_t nids,
                        const size_t *ocount, int layout_kind, void **out,
                        size_t *bytes)
{
    RETURN_ERROR_IF(!v || !out || !bytes || (var_nouter(v) > 0 && !ocount),
                    RASTER_EINVAL, "NULL argument");
    *out = NULL;
    *bytes = 0;
    size_t n;
    int rc = raster_region_size(v, ids, nids, layout_kind, &n);
    if (rc)
        return rc;
    RETURN_ERROR_IF(raster_mul_overflows(n, v->elem, &n), RASTER_EOVERFLOW,
                    "%s: region buffer too large", v->name);
    for (int i = 0; i < var_nouter(v); i++)
        RETURN_ERROR_IF(raster_mul_overflows(n, ocount[i], &n),
                        RASTER_EOVERFLOW, "%s: region buffer too large",
                        v->name);
    void *p;
    if (n >= MAPPED_BYTES) {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
        if (p == MAP_FAILED)
            p = NULL;
        else
            (void)madvise(p, n, MADV_HUGEPAGE); /* advice only */
    } else {
        p = raster_calloc(1, n);
    }
    RETURN_ERROR_IF(!p, RASTER_ENOMEM, "%s: no memory for %zu bytes",
                    v->name, n);
    *out = p;
    *bytes = n;
    return RASTER_OK;
}

void raster_region_free(void *buf, size_t bytes)
{
    if (!buf)
        return;
    if (bytes >= MAPPED_BYTES)
        munmap(buf, bytes);
    else
        raster_free(buf);
}
