/*
 * file.c - the life cycle of an open raster file: create, open (lean or
 * through netCDF), attach to a program's ncid, close and abandon; the
 * registries of live and attached files; finding a file's variables.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkio.h"
#include "error.h"
#include "file.h"
#include "fileio.h"
#include "integrity.h"
#include "lean.h"
#include "meta.h"
#include "ncbind.h"
#include "parwrite.h"
#include "placeholder.h"
#include "raster_internal.h"
#include "state.h"
#include "statstore.h"
#include "tilestore.h"
#include "var.h"

static int scan_groups(raster_file *f, int g)
{
    int n, st, rc;
    if ((st = nc_inq_grps(g, &n, NULL)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "listing groups: %s",
                              nc_strerror(st));
    if (n == 0)
        return RASTER_OK;
    int *ids = raster_reallocarray(NULL, (size_t)n, sizeof *ids);
    if (!ids)
        return raster_fail(RASTER_ENOMEM, "out of memory listing groups");
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
    while (f && (f->caller_ncid & ~0xffff) != (ncid & ~0xffff))
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
    lean_view_free(f, 1); /* its groups before the file's id */
    fileio_close(f);
    fileio_cache_free(f);
    file_locks_destroy(f);
    raster_free(f->path);
    f->magic = DEAD_MAGIC;
    raster_free(f);
}

/* Registers f, loaded with status rc, as attached to its caller's ncid
 * and hands it out; a failed load frees it. */
static int attached_add(int rc, raster_file *f, raster_file **out)
{
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

/* The format of variables a new file defines: $RASTER_FORMAT when it
 * names one raster writes (the shim's programs choose it so), else the
 * default (meta_default_format); a raster_file_set_format() call wins. */
static int default_format(void)
{
    const char *e = getenv("RASTER_FORMAT");
    if (e && e[0] >= '0' + RASTER_FORMAT_OLDEST_WRITTEN &&
        e[0] <= '0' + RASTER_FORMAT_VERSION && e[1] == '\0')
        return e[0] - '0';
    return meta_default_format;
}

static int file_new(int ncid, int own, int writable, const char *path,
                    raster_file **out)
{
    raster_file *f = raster_calloc(1, sizeof *f);
    if (!f)
        return raster_fail(RASTER_ENOMEM, "out of memory opening a file");
    if (file_locks_init(f) != 0) {
        raster_free(f);
        return raster_fail(RASTER_ENOMEM, "no mutex for a file");
    }
    f->magic = FILE_MAGIC;
    f->ncid = ncid;
    f->caller_ncid = ncid;
    f->own_ncid = own;
    f->writable = writable;
    f->fd = -1;
    f->h5 = -1;
    f->write_format = default_format();
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

int file_start(const char *path, int mode, raster_file **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!path)
        return raster_fail(RASTER_EINVAL, "file name is NULL");
    if (mode != RASTER_READ && mode != RASTER_WRITE)
        return raster_fail(RASTER_EINVAL,
                           "mode %d is neither RASTER_READ nor RASTER_WRITE",
                           mode);
    /* before netCDF opens the file: it checks the placeholders' filter */
    return raster_filter_register();
}

int raster_create(const char *path, raster_file **out)
{
    int rc = file_start(path, RASTER_WRITE, out);
    if (rc)
        return rc;
    int ncid, st = nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "creating %s: %s", path,
                              nc_strerror(st));
    rc = file_new(ncid, 1, 1, path, out);
    if (rc)
        raster_nc_close(ncid);
    else
        (*out)->seal = 1; /* nothing kept yet to distrust */
    return rc;
}

/* A writer's seal (integrity.h), looked at before it writes anything: a
 * file with no format 5 variable yet has nothing kept to distrust. */
static void seal_at_open(raster_file *f)
{
    int tiled = 0;
    for (raster_var *v = f->vars; v; v = v->next)
        tiled |= var_tiled(v);
    f->seal = !tiled || !f->path || seal_intact(f) ? 1 : -1;
}

/* Seals to apply once the caller has closed its netCDF handle
 * (raster_nc_closed): the file's path and time, by the caller's ncid. */
typedef struct pending_seal {
    int ncid;
    char *path;
    int64_t t;
    struct pending_seal *next;
} pending_seal;

static pending_seal *pending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static int seal_later(int ncid, const char *path, int64_t t)
{
    pending_seal *p = raster_calloc(1, sizeof *p);
    char *copy = p ? raster_strdup(path) : NULL;
    if (!copy) {
        raster_free(p);
        return raster_fail(RASTER_ENOMEM, "out of memory sealing %s", path);
    }
    *p = (pending_seal){ncid, copy, t, NULL};
    pthread_mutex_lock(&pending_lock);
    p->next = pending;
    pending = p;
    pthread_mutex_unlock(&pending_lock);
    return RASTER_OK;
}

void raster_before_open(const char *path)
{
    seal_before_open(path);
}

int raster_nc_closed(int ncid)
{
    pthread_mutex_lock(&pending_lock);
    pending_seal **at = &pending, *p = NULL;
    while (*at && (*at)->ncid != ncid)
        at = &(*at)->next;
    if (*at) {
        p = *at;
        *at = p->next;
    }
    pthread_mutex_unlock(&pending_lock);
    if (!p)
        return RASTER_OK;
    int rc = seal_stamp(p->path, p->t);
    raster_free(p->path);
    raster_free(p);
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
    if (!f->writable && f->path && f->vars && f->fd < 0) {
        f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        if (f->ident_known) /* a view's: the file it checked */
            return file_unchanged(f);
        file_identity_record(f);
    }
    return RASTER_OK;
}

int raster_open(const char *path, int mode, raster_file **out)
{
    int rc = file_start(path, mode, out);
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
    if (mode == RASTER_WRITE)
        seal_before_open(path); /* netCDF's open writes the file */
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
    if (rc == RASTER_OK && f->writable)
        seal_at_open(f);
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
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
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
        if (!path)
            return raster_fail(RASTER_ENOMEM, "out of memory attaching");
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
    if (rc == RASTER_OK && writable)
        seal_at_open(f);
    return attached_add(rc, f, out);
}

/* The variables of a view checked at its open (lean_view_scan), loaded
 * once, on the first call that needs them: through HDF5 (lean_open), or
 * when that declines (a dimension renamed since, ...) through the file's
 * own netCDF handle, as raster_open() would; RASTER_OK at once for any
 * other file. A load that fails leaves the view without variables. */
static int view_load_netcdf(raster_file *f);

static int view_load(raster_file *f)
{
    if (!atomic_load(&f->view_pending))
        return RASTER_OK;
    int rc = RASTER_OK;
    pthread_mutex_lock(&f->lean_lock);
    if (atomic_load(&f->view_pending)) {
        rc = lean_open(f);
        if (rc && rc != RASTER_ENOMEM) /* lean declined: netCDF's way */
            rc = view_load_netcdf(f);
        lean_view_free(f, 0); /* the groups it kept: loaded */
        if (rc == RASTER_OK)
            rc = ncbind_view(f, f->caller_ncid, 1);
        if (rc) {
            char why[256];
            snprintf(why, sizeof why, "%s", raster_errmsg());
            var_list_free(&f->vars);
            rc = raster_fail(rc, "%s: loading its raster variables: %s",
                             f->path, why);
        }
        atomic_store(&f->view_pending, 0);
    }
    pthread_mutex_unlock(&f->lean_lock);
    return rc;
}

static int view_load_netcdf(raster_file *f)
{
    int ncid, st = nc_open(f->path, NC_NOWRITE, &ncid);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "opening %s: %s", f->path,
                              nc_strerror(st));
    f->ncid = ncid;
    atomic_store(&f->lean, 0);
    int rc = file_load(f);
    if (rc == RASTER_OK && !f->vars)
        rc = raster_fail(RASTER_EFORMAT, "%s holds no raster variable",
                         f->path);
    if (rc) {
        var_list_free(&f->vars);
        raster_nc_close(ncid);
        f->ncid = -1;
        atomic_store(&f->lean, 1);
    }
    return rc;
}

int raster_attach_view(int ncid, raster_file **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (getenv("RASTER_NO_LEAN"))
        return raster_fail(RASTER_EUNSUPPORTED, "RASTER_NO_LEAN is set");
    size_t len;
    int fmt, mode = 0, st = nc_inq_format_extended(ncid, &fmt, &mode);
    if (st == NC_NOERR && (mode & (NC_INMEMORY | NC_DISKLESS)))
        return raster_fail(RASTER_EUNSUPPORTED, "a view needs a file on "
                           "disk");
    if (st == NC_NOERR)
        st = nc_inq_path(ncid, &len, NULL);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "attaching: %s",
                              nc_strerror(st));
    char *path = raster_malloc(len + 1);
    if (!path)
        return raster_fail(RASTER_ENOMEM, "out of memory attaching");
    st = nc_inq_path(ncid, &len, path);
    path[len] = '\0';
    /* the variables load later: by a name a chdir does not change */
    char *full = st == NC_NOERR && path[0] != '/' ? realpath(path, NULL)
                                                  : NULL;
    raster_file *f = NULL;
    int rc = st != NC_NOERR
                 ? raster_fail_nc(RASTER_ENETCDF, st, "attaching: %s",
                                  nc_strerror(st))
                 : file_new(-1, 1, 0, full ? full : path, &f);
    free(full); /* realpath's, not raster_malloc's */
    raster_free(path);
    if (rc == RASTER_OK) {
        /* checked now, loaded on first need; any doubt: loaded now, with
         * the checks a lean open makes */
        f->caller_ncid = ncid;
        rc = lean_view_scan(f, ncid);
        if (rc == RASTER_OK) { /* the file checked is the one read later */
            f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
            file_identity_record(f);
            rc = f->fd >= 0 ? RASTER_OK
                            : raster_fail(RASTER_EIO, "%s: cannot open",
                                          f->path);
        }
        if (rc == RASTER_OK) {
            f->view = 1;
            atomic_store(&f->lean, 1); /* netCDF opened on first need */
            atomic_store(&f->view_pending, 1);
        } else if (rc != RASTER_ENOMEM) {
            rc = lean_open(f);
            if (rc == RASTER_OK)
                rc = ncbind_view(f, ncid, 0);
        }
    }
    if (rc && !f)
        return rc;
    return attached_add(rc, f, out);
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
    int rc = placeholder_fit(fileio_dataset(v->file, v->parent, v->name),
                             v->ndims, len, v->name);
    return rc ? rc : meta_put_extent(v, len);
}

int raster_close(raster_file *f)
{
    if (!f)
        return RASTER_OK;
    if (!live_take(f))
        return raster_fail(RASTER_EINVAL, "raster_close: not an open raster "
                           "file (closed already?)");
    int rc = RASTER_OK;
    /* held-back small writes first; an error is the close's */
    for (raster_var *v = f->vars; v; v = v->next) {
        int r = chunkio_flush(v);
        rc = rc == RASTER_OK ? r : rc;
    }
#ifdef RASTER_MPI
    if (f->par) { /* collective: tables, the same flags on every rank */
        int r = par_before_close(f);
        rc = rc == RASTER_OK ? r : rc;
    }
#endif
    for (raster_var *v = f->vars; v; v = v->next) {
        if (!v->materialized && rc == RASTER_OK)
            rc = meta_materialize(v);
    }
    /* statistics a partial write left stale, from the stores; under a
     * broken seal every record of a format 5 variable (statstore.h) */
    int sealing = f->writable && !f->par && f->path && f->ncid >= 0, tiled = 0;
    for (raster_var *v = f->vars; v; v = v->next)
        tiled |= var_tiled(v);
    sealing = sealing && tiled;
    for (raster_var *v = f->vars; v && rc == RASTER_OK; v = v->next)
        if (v->dirty || (sealing && f->seal < 0 && var_tiled(v)))
            rc = statstore_flush(v);
    if (sealing && rc == RASTER_OK)
        f->seal = 1; /* whatever was distrusted is computed anew */
    int64_t seal_t = 0;
    if (sealing && rc == RASTER_OK)
        rc = seal_put(f, &seal_t);
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
    /* format 5: every chunk's offset kept under the new seal, from the
     * index as the flushed file holds it (tilestore.h) */
    if (seal_t > 0 && !dirty && rc == RASTER_OK) {
        int st = nc_sync(f->ncid);
        if (st != NC_NOERR)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "flushing %s: %s",
                                f->path, nc_strerror(st));
    }
    for (raster_var *v = f->vars; v && seal_t > 0 && rc == RASTER_OK;
         v = v->next)
        if (var_tiled(v))
            rc = tilestore_keep_offsets(v, (long long)seal_t);
    fileio_close(f); /* raster's own HDF5 handle before netCDF's */
    if (f->own_ncid && !f->lean) {
        int st = raster_nc_close(f->ncid);
        if (st != NC_NOERR && rc == RASTER_OK)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "closing %s: %s",
                                f->path ? f->path : "file", nc_strerror(st));
    }
    /* the seal's time on the file once nothing more writes it: now, or
     * after the caller's nc_close (raster_nc_closed) */
    if (seal_t > 0 && rc == RASTER_OK)
        rc = f->own_ncid ? seal_stamp(f->path, seal_t)
                         : seal_later(f->caller_ncid, f->path, seal_t);
    file_free(f);
    return rc;
}

int raster_flush(raster_file *f)
{
    if (!file_ok(f))
        return raster_fail(RASTER_EINVAL, "raster_flush: not an open raster "
                           "file");
    int rc = RASTER_OK;
    for (raster_var *v = f->vars; v; v = v->next) {
        int r = chunkio_flush(v);
        rc = rc == RASTER_OK ? r : rc;
    }
    return rc;
}

int raster_file_ncid(const raster_file *f)
{
    if (!file_ok(f))
        return -1;
    return view_load((raster_file *)f) == RASTER_OK &&
                   file_netcdf((raster_file *)f) == RASTER_OK
               ? f->ncid
               : -1;
}

int raster_set_threads(int n)
{
    if (n < 0)
        return raster_fail(RASTER_EINVAL, "thread count %d is negative", n);
    chunkio_set_threads(n);
    return RASTER_OK;
}

int raster_file_set_format(raster_file *f, int version)
{
    if (!file_ok(f) || !f->writable)
        return raster_fail(
            RASTER_EINVAL,
            "raster_file_set_format needs a file open for writing");
    if (version < RASTER_FORMAT_OLDEST_WRITTEN ||
        version > RASTER_FORMAT_VERSION)
        return raster_fail(RASTER_EUNSUPPORTED,
                           "raster writes format versions %d to %d, not %d",
                           RASTER_FORMAT_OLDEST_WRITTEN, RASTER_FORMAT_VERSION,
                           version);
    f->write_format = version;
    return RASTER_OK;
}

size_t raster_file_nvars(const raster_file *f)
{
    size_t n = 0;
    for (raster_var *v = file_ok(f) && view_load((raster_file *)f) == RASTER_OK ? f->vars
                                                                 : NULL;
         v; v = v->next)
        n++;
    return n;
}

raster_var *raster_file_var(const raster_file *f, size_t i)
{
    raster_var *v = file_ok(f) && view_load((raster_file *)f) == RASTER_OK ? f->vars : NULL;
    while (v && i--)
        v = v->next;
    return v;
}

int raster_var_find(const raster_file *f, const char *name, raster_var **out)
{
    if (!f || !name || !out)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (!file_ok(f))
        return raster_fail(RASTER_EINVAL, "not an open raster file");
    int rc = view_load((raster_file *)f);
    if (rc)
        return rc;
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

/* The view group of the caller's variable (parent, varid) while f's
 * variables are not loaded yet, or NULL. */
static const struct view_group *pending_group(const raster_file *f,
                                              int parent, int varid)
{
    if (!file_ok(f) || !f->view || !atomic_load(&f->view_pending))
        return NULL;
    for (size_t i = 0; i < f->nview; i++)
        if (f->view_groups[i].grp == parent &&
            f->view_groups[i].varid == varid)
            return &f->view_groups[i];
    return NULL;
}

int raster_view_var_plain(const raster_file *f, int parent, int varid)
{
    const struct view_group *g = pending_group(f, parent, varid);
    return g && g->format >= 5;
}

int raster_view_reads_through(const raster_file *f, int parent, int varid,
                              const size_t *start, const size_t *count,
                              const ptrdiff_t *stride)
{
    const struct view_group *g = pending_group(f, parent, varid);
    return g && start && g->format >= 5 && g->nck > 0 &&
           var_few_chunks(g->nck, g->ck, start, count, stride);
}

raster_var *raster_var_by_varid(const raster_file *f, int parent, int varid)
{
    if (file_ok(f) && f->view) { /* the caller's ids: no netCDF needed */
        if (atomic_load(&f->view_pending)) {
            size_t i = 0;
            while (i < f->nview && (f->view_groups[i].grp != parent ||
                                    f->view_groups[i].varid != varid))
                i++;
            /* only a placeholder's call loads the variables */
            if (i == f->nview || view_load((raster_file *)f) != RASTER_OK)
                return NULL;
        }
        for (raster_var *v = f->vars; v; v = v->next)
            if (v->view_parent == parent && v->view_varid == varid)
                return v;
        return NULL;
    }
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

int raster_free_name(int grpid, const char *name)
{
    if (!name)
        return raster_fail(RASTER_EINVAL, "NULL name");
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
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st,
                                  "moving raster's group %s to %s: %s", name,
                                  alias, nc_strerror(st));
        return RASTER_OK;
    }
    return raster_fail(RASTER_EINVAL, "%s: no free name to move raster's "
                       "group to", name);
}
