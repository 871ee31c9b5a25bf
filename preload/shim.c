/*
 * shim.c - the shim core (libraster_shim.so): netCDF-C entry points that
 * hand chosen variables to libraster and pass everything else through
 * unchanged. The preload library (route.c) opens this library RTLD_LOCAL and
 * calls these wrappers only for callers whose libnetcdf is the one libraster
 * links; calls through any other libnetcdf copy never come here.
 *
 * Only the program's own calls come here: route.c sends the calls of
 * libraster, of this library, of libnetcdf and of libhdf5 (and every call
 * made inside one routed here) straight to netCDF. Every wrapper asks
 * whether the call is raster's business: the shim is active and the file or
 * variable is one raster manages. If not, it calls the real function
 * (real.h: resolved once each, on first use) and returns its result
 * untouched.
 */
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_mem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "files.h"
#include "hide.h"
#include "ncapi.h"
#include "raster.h"
#include "raster_internal.h"
#include "real.h"
#include "resolve.h"

#define SHIM_API __attribute__((visibility("default")))

/* The Fortran interface's chunking call; libnetcdf exports it but netcdf.h
 * does not declare it. */
int nc_def_var_chunking_ints(int ncid, int varid, int contiguous,
                             int *chunksizesp);
int nc_inq_var_chunking_ints(int ncid, int varid, int *storagep,
                             int *chunksizesp);

/* ---- activation -------------------------------------------------------- */

static int active = -1; /* -1 unknown, 0 pass-through, 1 active */
static pthread_once_t activation = PTHREAD_ONCE_INIT;

static void activate(void)
{
    char path[512];
    if (!resolve_flavour_ok(path, sizeof path)) {
        shim_log(LOG_WARN, "%s is not the netCDF flavour this shim was built "
#ifdef RASTER_MPI
                 "for (MPI); use libraster_preload.so. "
#else
                 "for (serial); use libraster_preload_mpi.so. "
#endif
                 "Passing everything through", path[0] ? path : "libnetcdf");
        active = 0;
    } else {
        config_get(); /* the environment; the mask waits for its first need */
        /* netCDF checks filters at open: with raster's registered, a
         * placeholder opens as an ordinary variable */
        if (raster_filter_register() != RASTER_OK)
            shim_log(LOG_WARN, "%s; raster files opened in this process "
                     "read as unreadable placeholders", raster_errmsg());
        active = 1;
    }
}

/* 1 when this call may be raster's: the shim is active. */
static int shim_on(void)
{
    pthread_once(&activation, activate);
    return active == 1;
}

/* ---- opening and closing ----------------------------------------------- */

/* After a successful create/open: attach raster to netCDF-4 files. An open
 * of a file whose raster variables cannot be served fails here, closed. */
static int after_open(int status, int ncid, int writable, const char *path,
                      int creating)
{
    if (status != NC_NOERR)
        return status;
    int format;
    int st = nc_inq_format(ncid, &format);
    if (st != NC_NOERR)
        return status;
    if (creating) /* a RASTER_MASK warning an MPI job held back */
        config_report_mask_error(0);
    if (format != NC_FORMAT_NETCDF4) {
        /* info, not a warning: a model writes many files raster rightly
         * leaves alone */
        if (creating && config_get()->mask_spec)
            shim_log(LOG_INFO, "%s is not a netCDF-4 file (raster needs "
                     "groups); its variables stay plain", path);
        return status;
    }
    raster_file *rf;
    int rc = raster_attach(ncid, writable, &rf);
    if (rc != RASTER_OK) {
        shim_log(LOG_WARN, "%s: %s: %s", path, raster_strerror(rc),
                 raster_errmsg());
        CALL_REAL(nc_close, (ncid));
        return rc == RASTER_EINCOMPLETE ? NC_EHDFERR : NC_ENOTNC;
    }
    if (!writable && raster_file_nvars(rf) == 0) {
        raster_close(rf);
        return status;
    }
    if (files_add(ncid, rf, 0) != NC_NOERR) {
        raster_close(rf);
        shim_log(LOG_WARN, "%s: out of memory; raster variables unavailable",
                 path);
    }
    return status;
}

SHIM_API int nc_create(const char *path, int cmode, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc_create, (path, cmode, ncidp));
    return on && ncidp ? after_open(st, *ncidp, 1, path, 1) : st;
}

SHIM_API int nc__create(const char *path, int cmode, size_t initialsz,
                        size_t *chunksizehintp, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc__create, (path, cmode, initialsz, chunksizehintp,
                                    ncidp));
    return on && ncidp ? after_open(st, *ncidp, 1, path, 1) : st;
}

/* A read-only open of a file on disk, with raster's storage groups kept
 * out of netCDF's view (hide.c): netCDF then opens what the plain file
 * holds, at the plain file's cost, and raster reads the storage through
 * HDF5 (raster_attach_view). A file raster cannot read that way is opened
 * again whole, as any writable open is. The serial flavour only: a file
 * written in parallel may keep its placeholder shorter than its data. */
static int view_wanted(int mode)
{
#ifdef RASTER_MPI
    (void)mode;
    return 0;
#else
    return !(mode & (NC_WRITE | NC_DISKLESS | NC_INMEMORY)) &&
           hide_install();
#endif
}

static int open_real(const char *path, int mode, size_t *hint, int *ncidp)
{
    return hint ? CALL_REAL(nc__open, (path, mode, hint, ncidp))
                : CALL_REAL(nc_open, (path, mode, ncidp));
}

static int open_view(const char *path, int mode, size_t *hint, int *ncidp)
{
    hide_begin();
    int st = open_real(path, mode, hint, ncidp);
    size_t hidden = hide_end();
    if (st != NC_NOERR)
        return st;
    if (hidden == 0) /* no storage raster named: looked for as ever */
        return after_open(st, *ncidp, 0, path, 0);
    raster_file *rf;
    int rc = raster_attach_view(*ncidp, &rf);
    if (rc == RASTER_OK && files_add(*ncidp, rf, 1) == NC_NOERR)
        return st;
    if (rc == RASTER_OK)
        raster_close(rf);
    else
        shim_log(LOG_DEBUG, "%s: opened whole: %s", path, raster_errmsg());
    CALL_REAL(nc_close, (*ncidp));
    st = open_real(path, mode, hint, ncidp);
    return after_open(st, *ncidp, 0, path, 0);
}

SHIM_API int nc_open(const char *path, int mode, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    if (on && ncidp && view_wanted(mode))
        return open_view(path, mode, NULL, ncidp);
    if (on && (mode & NC_WRITE)) /* its time before netCDF writes it */
        raster_before_open(path);
    int st = CALL_REAL(nc_open, (path, mode, ncidp));
    return on && ncidp
               ? after_open(st, *ncidp, (mode & NC_WRITE) != 0, path, 0)
               : st;
}

SHIM_API int nc__open(const char *path, int mode, size_t *chunksizehintp,
                      int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    if (on && ncidp && chunksizehintp && view_wanted(mode))
        return open_view(path, mode, chunksizehintp, ncidp);
    if (on && (mode & NC_WRITE))
        raster_before_open(path);
    int st = CALL_REAL(nc__open, (path, mode, chunksizehintp, ncidp));
    return on && ncidp
               ? after_open(st, *ncidp, (mode & NC_WRITE) != 0, path, 0)
               : st;
}

SHIM_API int nc__create_mp(const char *path, int cmode, size_t initialsz,
                           int basepe, size_t *chunksizehintp, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc__create_mp, (path, cmode, initialsz, basepe,
                                       chunksizehintp, ncidp));
    return on && ncidp ? after_open(st, *ncidp, 1, path, 1) : st;
}

SHIM_API int nc__open_mp(const char *path, int mode, int basepe,
                         size_t *chunksizehintp, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc__open_mp, (path, mode, basepe, chunksizehintp,
                                     ncidp));
    return on && ncidp
               ? after_open(st, *ncidp, (mode & NC_WRITE) != 0, path, 0)
               : st;
}

/* In-memory files: raster works through netCDF there (no byte offsets). */
SHIM_API int nc_create_mem(const char *path, int mode, size_t initialsize,
                           int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc_create_mem, (path, mode, initialsize, ncidp));
    return on && ncidp ? after_open(st, *ncidp, 1, path, 1) : st;
}

SHIM_API int nc_open_mem(const char *path, int mode, size_t size,
                         void *memory, int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc_open_mem, (path, mode, size, memory, ncidp));
    return on && ncidp
               ? after_open(st, *ncidp, (mode & NC_WRITE) != 0, path, 0)
               : st;
}

SHIM_API int nc_open_memio(const char *path, int mode, NC_memio *info,
                           int *ncidp)
{
    int on = shim_on(); /* first: registers raster's filter */
    int st = CALL_REAL(nc_open_memio, (path, mode, info, ncidp));
    return on && ncidp
               ? after_open(st, *ncidp, (mode & NC_WRITE) != 0, path, 0)
               : st;
}

SHIM_API int nc_close(int ncid)
{
    int st = NC_NOERR, ours = shim_on() && files_find(ncid);
    if (ours)
        st = files_close(ncid);
    int real = CALL_REAL(nc_close, (ncid));
    /* the seal raster's close stored, now that nothing more writes the
     * file (a failure only costs a recomputation of its statistics) */
    if (ours && real == NC_NOERR && raster_nc_closed(ncid) != RASTER_OK)
        shim_log(LOG_DEBUG, "sealing: %s", raster_errmsg());
    return real != NC_NOERR ? real : st;
}

SHIM_API int nc_abort(int ncid)
{
    shim_file *sf = shim_on() ? files_find(ncid) : NULL;
    if (sf) {
        /* HDF5 writes its cached chunks at the close nc_abort makes of a
         * netCDF-4 file in data mode: raster's held-back writes too */
        if (files_raster(sf))
            raster_flush(files_raster(sf));
        files_forget(ncid);
    }
    return CALL_REAL(nc_abort, (ncid));
}

/* Pending variables become raster ones before the definition ends. */
static void adopt_all(int ncid)
{
    shim_file *sf = shim_on() ? files_find(ncid) : NULL;
    if (sf)
        files_adopt(sf, 0, -1);
}

SHIM_API int nc_enddef(int ncid)
{
    adopt_all(ncid);
    return CALL_REAL(nc_enddef, (ncid));
}

SHIM_API int nc__enddef(int ncid, size_t h_minfree, size_t v_align,
                        size_t v_minfree, size_t r_align)
{
    adopt_all(ncid);
    return CALL_REAL(nc__enddef, (ncid, h_minfree, v_align, v_minfree,
                                  r_align));
}

SHIM_API int nc_sync(int ncid)
{
    adopt_all(ncid);
    /* raster's held-back small writes into HDF5 before netCDF flushes */
    shim_file *sf = shim_on() ? files_find(ncid) : NULL;
    int st = NC_NOERR;
    if (sf && files_raster(sf) &&
        raster_flush(files_raster(sf)) != RASTER_OK)
        st = raster_nc_status();
    int real = CALL_REAL(nc_sync, (ncid));
    return real != NC_NOERR ? real : st;
}

/* ---- names and dimension ids the program sees --------------------------- */

/* Storage groups are named raster_<V>: a program may want that name for a
 * group, variable or type of its own (nothing in netCDF's names stops it).
 * Then raster's group moves to a free name first (readers find storage by
 * its attributes), and the program's call goes on as without the shim. */
static void free_name(int grpid, const char *name)
{
    if (!name || !shim_on() || !files_find(grpid))
        return;
    int rc = raster_free_name(grpid, name);
    if (rc != RASTER_OK)
        shim_log(LOG_WARN, "%s: %s: %s", name, raster_strerror(rc),
                 raster_errmsg());
}

/* netCDF-4 numbers dimensions across the file, so the dimensions of
 * raster's groups (cells, chunk, run, ...) take ids among the program's:
 * a dimension the program adds later gets an id past them, and a loop
 * over ids 0..ndims-1 (netCDF-3 style) would meet them. The shim numbers
 * the program's dimensions densely, in netCDF's order, without raster's:
 * the ids the same program sees in the plain file. Every call that takes
 * or gives a dimension id translates it (dims_in, dims_out); libraster
 * and netCDF's own calls see netCDF's ids. A file without raster
 * variables keeps netCDF's ids. */

/* The hidden ids of the file of ncid, or none. */
static size_t hidden_dims(shim_file *sf, const int **ids)
{
    size_t n = 0;
    *ids = NULL;
    if (!sf)
        return 0;
    int st = files_hidden_dims(sf, ids, &n);
    if (st != NC_NOERR) {
        shim_log(LOG_WARN, "listing raster's dimensions: %s",
                 nc_strerror(st));
        return 0;
    }
    return n;
}

/* How many of the ascending hidden[0..n) are <= id (a file of many
 * regions hides a `cells` dimension per region). */
static size_t hidden_upto(const int *hidden, size_t n, int id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hidden[mid] <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* netCDF's id of the program's dimension `id`: the id-th one not hidden
 * (the fixed point of id + hidden ids at or below it). */
static int dim_in(const int *hidden, size_t n, int id)
{
    if (id < 0 || n == 0)
        return id;
    size_t k = 0, next;
    while ((next = hidden_upto(hidden, n, id + (int)k)) != k)
        k = next;
    return id + (int)k;
}

/* The program's id of netCDF's dimension `id`; -1 for a hidden one. */
static int dim_out(const int *hidden, size_t n, int id)
{
    if (id < 0 || n == 0)
        return id;
    size_t below = hidden_upto(hidden, n, id);
    if (below > 0 && hidden[below - 1] == id)
        return -1;
    return id - (int)below;
}

static void dims_in(shim_file *sf, int n, const int *ids, int *out)
{
    const int *hidden;
    size_t nh = hidden_dims(sf, &hidden);
    for (int i = 0; i < n; i++)
        out[i] = dim_in(hidden, nh, ids[i]);
}

/* In place; NC_EBADDIM when one is hidden (reachable from raster's own
 * groups only). */
static int dims_out(int ncid, int n, int *ids)
{
    const int *hidden;
    size_t nh = hidden_dims(files_find(ncid), &hidden);
    int st = NC_NOERR;
    for (int i = 0; nh && i < n; i++)
        if (ids[i] >= 0 && (ids[i] = dim_out(hidden, nh, ids[i])) == -1)
            st = NC_EBADDIM;
    return st;
}

/* netCDF's id of the program's dimension id of ncid's file. */
static int real_dim(int ncid, int id)
{
    if (!shim_on())
        return id;
    const int *hidden;
    size_t nh = hidden_dims(files_find(ncid), &hidden);
    return dim_in(hidden, nh, id);
}

SHIM_API int nc_def_dim(int ncid, const char *name, size_t len, int *idp)
{
    int id, st = CALL_REAL(nc_def_dim, (ncid, name, len, &id));
    if (st == NC_NOERR && shim_on())
        st = dims_out(ncid, 1, &id);
    if (st == NC_NOERR && idp)
        *idp = id;
    return st;
}

SHIM_API int nc_inq_dimid(int ncid, const char *name, int *idp)
{
    int id, st = CALL_REAL(nc_inq_dimid, (ncid, name, &id));
    if (st == NC_NOERR && shim_on())
        st = dims_out(ncid, 1, &id);
    if (st == NC_NOERR && idp)
        *idp = id;
    return st;
}

SHIM_API int nc_inq_dim(int ncid, int dimid, char *name, size_t *lenp)
{
    int real = real_dim(ncid, dimid);
    return CALL_REAL(nc_inq_dim, (ncid, real, name, lenp));
}

SHIM_API int nc_inq_dimname(int ncid, int dimid, char *name)
{
    int real = real_dim(ncid, dimid);
    return CALL_REAL(nc_inq_dimname, (ncid, real, name));
}

SHIM_API int nc_inq_dimlen(int ncid, int dimid, size_t *lenp)
{
    int real = real_dim(ncid, dimid);
    return CALL_REAL(nc_inq_dimlen, (ncid, real, lenp));
}

/* A dimension of raster variables keeps its name in their storage groups
 * too (readers go by ids, and take renames without raster as well). */
SHIM_API int nc_rename_dim(int ncid, int dimid, const char *name)
{
    int real = real_dim(ncid, dimid);
    int st = CALL_REAL(nc_rename_dim, (ncid, real, name));
    shim_file *sf = st == NC_NOERR && shim_on() ? files_find(ncid) : NULL;
    if (sf) {
        int rc = raster_rename_dim(files_raster(sf), ncid, real, name);
        if (rc != RASTER_OK)
            shim_log(LOG_WARN, "renaming dimension %s: %s: %s", name,
                     raster_strerror(rc), raster_errmsg());
    }
    return st;
}

SHIM_API int nc_inq_dimids(int ncid, int *ndims, int *dimids,
                           int include_parents)
{
    int n = 0, st = CALL_REAL(nc_inq_dimids, (ncid, &n, dimids,
                                              include_parents));
    if (st == NC_NOERR && dimids && shim_on())
        st = dims_out(ncid, n, dimids);
    if (st == NC_NOERR && ndims)
        *ndims = n;
    return st;
}

SHIM_API int nc_inq_unlimdims(int ncid, int *nunlimdimsp, int *unlimdimidsp)
{
    int n = 0, st = CALL_REAL(nc_inq_unlimdims, (ncid, &n, unlimdimidsp));
    if (st == NC_NOERR && unlimdimidsp && shim_on())
        st = dims_out(ncid, n, unlimdimidsp);
    if (st == NC_NOERR && nunlimdimsp)
        *nunlimdimsp = n;
    return st;
}

SHIM_API int nc_inq_unlimdim(int ncid, int *unlimdimidp)
{
    int id, st = CALL_REAL(nc_inq_unlimdim, (ncid, &id));
    if (st == NC_NOERR && shim_on())
        st = dims_out(ncid, 1, &id);
    if (st == NC_NOERR && unlimdimidp)
        *unlimdimidp = id;
    return st;
}

SHIM_API int nc_inq(int ncid, int *ndimsp, int *nvarsp, int *nattsp,
                    int *unlimdimidp)
{
    int id, st = CALL_REAL(nc_inq, (ncid, ndimsp, nvarsp, nattsp, &id));
    if (st == NC_NOERR && shim_on())
        st = dims_out(ncid, 1, &id);
    if (st == NC_NOERR && unlimdimidp)
        *unlimdimidp = id;
    return st;
}

/* Dimension ids renumbered as the program knows them, and the attribute
 * count without the placeholder's note (note_attnum, below). */
static int note_attnum(int ncid, int varid);

/* A view's placeholder, asked for anything but its attribute count,
 * answered from raster's checked description (raster_var_view_inq):
 * netCDF would first read the placeholder's metadata, which for a 4-D
 * variable costs more than a point's whole read. 1 when answered (*st
 * its status), 0 to ask netCDF. The view's variables load here when
 * they have not yet, but for a variable that holds its values (format
 * 5): netCDF reads its metadata for its own reads of it (a point's
 * series, data_target) anyway. */
static int inq_view(int ncid, int varid, char *name, nc_type *xtypep,
                    int *ndimsp, int *dimidsp, int *st)
{
    shim_file *sf = shim_on() ? files_find(ncid) : NULL;
    raster_var *rv =
        sf && !raster_view_var_plain(files_raster(sf), ncid, varid)
            ? files_view_var(sf, ncid, varid)
            : NULL;
    int type, n, ids[NC_MAX_VAR_DIMS];
    if (!rv || raster_var_ndims(rv) > NC_MAX_VAR_DIMS ||
        raster_var_view_inq(rv, name, &type, &n, ids) != RASTER_OK)
        return 0;
    *st = NC_NOERR;
    if (xtypep)
        *xtypep = (nc_type)type;
    if (ndimsp)
        *ndimsp = n;
    if (dimidsp) {
        memcpy(dimidsp, ids, (size_t)n * sizeof *ids);
        *st = dims_out(ncid, n, dimidsp);
    }
    return 1;
}

static int inq_var(int ncid, int varid, char *name, nc_type *xtypep,
                   int *ndimsp, int *dimidsp, int *nattsp)
{
    int st;
    if (!nattsp && inq_view(ncid, varid, name, xtypep, ndimsp, dimidsp, &st))
        return st;
    int note = nattsp ? note_attnum(ncid, varid) : -1;
    int n = 0;
    st = CALL_REAL(nc_inq_var, (ncid, varid, name, xtypep, &n, dimidsp,
                                nattsp));
    if (st == NC_NOERR && dimidsp && shim_on())
        st = dims_out(ncid, n, dimidsp);
    if (st == NC_NOERR && ndimsp)
        *ndimsp = n;
    if (st == NC_NOERR && note >= 0)
        (*nattsp)--;
    return st;
}

/* netCDF's own nc_inq_varname and the others call its nc_inq_var
 * directly, past the shim: each is wrapped. */
SHIM_API int nc_inq_var(int ncid, int varid, char *name, nc_type *xtypep,
                        int *ndimsp, int *dimidsp, int *nattsp)
{
    return inq_var(ncid, varid, name, xtypep, ndimsp, dimidsp, nattsp);
}

SHIM_API int nc_inq_varname(int ncid, int varid, char *name)
{
    return inq_var(ncid, varid, name, NULL, NULL, NULL, NULL);
}

SHIM_API int nc_inq_vartype(int ncid, int varid, nc_type *xtypep)
{
    return inq_var(ncid, varid, NULL, xtypep, NULL, NULL, NULL);
}

SHIM_API int nc_inq_varndims(int ncid, int varid, int *ndimsp)
{
    return inq_var(ncid, varid, NULL, NULL, ndimsp, NULL, NULL);
}

SHIM_API int nc_inq_vardimid(int ncid, int varid, int *dimidsp)
{
    return inq_var(ncid, varid, NULL, NULL, NULL, dimidsp, NULL);
}

SHIM_API int nc_def_grp(int parent_ncid, const char *name, int *new_ncid)
{
    free_name(parent_ncid, name);
    return CALL_REAL(nc_def_grp, (parent_ncid, name, new_ncid));
}

SHIM_API int nc_rename_grp(int grpid, const char *name)
{
    int parent = -1;
    if (shim_on() && files_find(grpid) &&
        nc_inq_grp_parent(grpid, &parent) != NC_NOERR)
        parent = -1;
    if (parent != -1)
        free_name(parent, name);
    return CALL_REAL(nc_rename_grp, (grpid, name));
}

SHIM_API int nc_def_compound(int ncid, size_t size, const char *name,
                             nc_type *typeidp)
{
    free_name(ncid, name);
    return CALL_REAL(nc_def_compound, (ncid, size, name, typeidp));
}

SHIM_API int nc_def_vlen(int ncid, const char *name, nc_type base_typeid,
                         nc_type *xtypep)
{
    free_name(ncid, name);
    return CALL_REAL(nc_def_vlen, (ncid, name, base_typeid, xtypep));
}

SHIM_API int nc_def_enum(int ncid, nc_type base_typeid, const char *name,
                         nc_type *typeidp)
{
    free_name(ncid, name);
    return CALL_REAL(nc_def_enum, (ncid, base_typeid, name, typeidp));
}

SHIM_API int nc_def_opaque(int ncid, size_t size, const char *name,
                           nc_type *xtypep)
{
    free_name(ncid, name);
    return CALL_REAL(nc_def_opaque, (ncid, size, name, xtypep));
}

/* ---- defining ----------------------------------------------------------- */

/* 1 when variable varid of grpid may fit RASTER_MASK: numeric, 2+ dims,
 * the last two of the mask's shape, and allowed by RASTER_VARS. Without
 * RASTER_VARS, whether it is a data variable (raster_var_choose) is asked
 * when it is adopted, once its attributes are written (files.c). */
static int eligible(int grpid, int varid, const raster_mask *mask)
{
    char name[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dimids[NC_MAX_VAR_DIMS];
    size_t ny, nx, my, mx;
    if (CALL_REAL(nc_inq_var, (grpid, varid, name, &type, &ndims, NULL,
                               NULL)) != NC_NOERR ||
        ndims < 2 || ndims > NC_MAX_VAR_DIMS ||
        type < NC_BYTE || type > NC_UINT64 || type == NC_CHAR ||
        type == NC_STRING ||
        CALL_REAL(nc_inq_vardimid, (grpid, varid, dimids)) != NC_NOERR ||
        CALL_REAL(nc_inq_dimlen, (grpid, dimids[ndims - 2], &ny)) !=
            NC_NOERR ||
        CALL_REAL(nc_inq_dimlen, (grpid, dimids[ndims - 1], &nx)) !=
            NC_NOERR)
        return 0;
    raster_mask_shape(mask, &my, &mx);
    return ny == my && nx == mx && config_var_chosen(config_get(), name);
}

/* RASTER_MASK's mask for a variable being defined in sf, loaded now if
 * this is its first need. A mask that cannot be used is reported at once
 * for a file of one process (in an MPI job the ranks of a parallel file
 * report it together, preload/shim_mpi.inc). */
static const raster_mask *mask_for_define(shim_file *sf)
{
    const raster_mask *mask = config_mask();
#ifdef RASTER_MPI
    MPI_Comm comm;
    if (!mask && !raster_file_comm(files_raster(sf), &comm))
        config_report_mask_error(0);
#else
    (void)sf;
#endif
    return mask;
}

SHIM_API int nc_def_var(int ncid, const char *name, nc_type xtype, int ndims,
                        const int *dimidsp, int *varidp)
{
    int own_id; /* varidp is optional */
    int *idp = varidp ? varidp : &own_id;
    int real[NC_MAX_VAR_DIMS];
    if (shim_on() && dimidsp && ndims > 0 && ndims <= NC_MAX_VAR_DIMS) {
        dims_in(files_find(ncid), ndims, dimidsp, real);
        dimidsp = real;
    }
    free_name(ncid, name);
    int st = CALL_REAL(nc_def_var, (ncid, name, xtype, ndims, dimidsp, idp));
    if (st != NC_NOERR || !shim_on())
        return st;
    shim_file *sf = files_find(ncid);
    if (sf && ndims >= 2 && config_get()->mask_spec) {
        const raster_mask *mask = mask_for_define(sf);
        if (mask && eligible(ncid, *idp, mask))
            files_pend(sf, ncid, *idp, NULL, NULL, 0);
    }
    return st;
}

/* Queues a variable given a mask through its chunk spec; sets the
 * placeholder's chunking to the base chunk shape. */
static int adopt_spec(int ncid, int varid, int32_t *ids, size_t ny, size_t nx,
                      const size_t *chunk, int ndims)
{
    raster_mask *mask = NULL;
    int rc = raster_mask_wrap(ids, ny, nx, &mask);
    free(ids);
    if (rc != RASTER_OK)
        return NC_ENOMEM;
    shim_file *sf = files_find(ncid);
    if (!sf) {
        raster_mask_free(mask);
        shim_log(LOG_WARN, "variable %d: raster needs a netCDF-4 file; chunk "
                 "spec refused", varid);
        return NC_EBADCHUNK;
    }
    int st = CALL_REAL(nc_def_var_chunking, (ncid, varid, NC_CHUNKED, chunk));
    if (st != NC_NOERR) {
        raster_mask_free(mask);
        return st;
    }
    return files_pend(sf, ncid, varid, mask, chunk, ndims);
}

/* A tagged chunk spec (include/raster.h) as nc_def_var_chunking's size_t
 * array or as the Fortran interface's int one: exactly one is set. */
typedef struct spec_array {
    const size_t *sizes;
    const int *ints;
} spec_array;

/* Entry i of the spec (an int entry as its signed value). */
static size_t spec_at(spec_array spec, size_t i)
{
    return spec.sizes ? spec.sizes[i] : (size_t)(ptrdiff_t)spec.ints[i];
}

/* Adopts variable varid by its chunk spec: the grid shape, the base chunk
 * shape, then the mask. Returns an NC status. */
static int parse_spec(int ncid, int varid, spec_array spec)
{
    int ndims, dimids[NC_MAX_VAR_DIMS];
    size_t ny, nx;
    int ok = CALL_REAL(nc_inq_var, (ncid, varid, NULL, NULL, &ndims, NULL,
                                    NULL)) == NC_NOERR &&
             ndims >= 2 && ndims <= NC_MAX_VAR_DIMS &&
             CALL_REAL(nc_inq_vardimid, (ncid, varid, dimids)) == NC_NOERR &&
             CALL_REAL(nc_inq_dimlen, (ncid, dimids[ndims - 2], &ny)) ==
                 NC_NOERR &&
             CALL_REAL(nc_inq_dimlen, (ncid, dimids[ndims - 1], &nx)) ==
                 NC_NOERR;
    if (!ok || spec_at(spec, 1) != ny || spec_at(spec, 2) != nx) {
        shim_log(LOG_WARN, "chunk spec for variable %d does not match its "
                 "grid; refused", varid);
        return NC_EBADCHUNK;
    }
    size_t chunk[NC_MAX_VAR_DIMS];
    for (int i = 0; i < ndims; i++)
        chunk[i] = spec_at(spec, 3 + (size_t)i);
    int32_t *ids = malloc(ny * nx * sizeof *ids);
    if (!ids)
        return NC_ENOMEM;
    for (size_t i = 0; i < ny * nx; i++)
        ids[i] = (int32_t)(ptrdiff_t)spec_at(spec, 3 + (size_t)ndims + i);
    return adopt_spec(ncid, varid, ids, ny, nx, chunk, ndims);
}

SHIM_API int nc_def_var_chunking(int ncid, int varid, int storage,
                                 const size_t *chunksizesp)
{
    if (!shim_on())
        return CALL_REAL(nc_def_var_chunking, (ncid, varid, storage,
                                               chunksizesp));
    if (storage == NC_CHUNKED && chunksizesp &&
        chunksizesp[0] == RASTER_CHUNKSPEC_TAG)
        return parse_spec(ncid, varid, (spec_array){.sizes = chunksizesp});
    int st = CALL_REAL(nc_def_var_chunking, (ncid, varid, storage,
                                             chunksizesp));
    shim_file *sf = files_find(ncid);
    if (st == NC_NOERR && sf)
        files_note_chunking(sf, ncid, varid);
    return st;
}

SHIM_API int nc_def_var_chunking_ints(int ncid, int varid, int contiguous,
                                      int *chunksizesp)
{
    if (!shim_on())
        return CALL_REAL(nc_def_var_chunking_ints, (ncid, varid, contiguous,
                                                    chunksizesp));
    if (!contiguous && chunksizesp &&
        chunksizesp[0] == RASTER_CHUNKSPEC_TAG_INT)
        return parse_spec(ncid, varid, (spec_array){.ints = chunksizesp});
    int st = CALL_REAL(nc_def_var_chunking_ints, (ncid, varid, contiguous,
                                                  chunksizesp));
    shim_file *sf = files_find(ncid);
    if (st == NC_NOERR && sf)
        files_note_chunking(sf, ncid, varid);
    return st;
}

/* A format 5 variable is chunked by tile: its program is told the storage
 * it gave the variable (or netCDF's default for it), as without raster.
 * 1 when raster keeps it: *storage, and sizes[0..*n) to report (n 0 unless
 * chunked). */
static int program_chunking(int ncid, int varid, int *storage, size_t *sizes,
                            int *n)
{
    shim_file *sf;
    raster_var *v = varid >= 0 && shim_on() && (sf = files_find(ncid))
                        ? raster_var_by_varid(files_raster(sf), ncid, varid)
                        : NULL;
    if (!v || !raster_var_program_chunking(v, storage, sizes) ||
        CALL_REAL(nc_inq_varndims, (ncid, varid, n)) != NC_NOERR)
        return 0;
    if (*storage != NC_CHUNKED)
        *n = 0;
    return 1;
}

SHIM_API int nc_inq_var_chunking(int ncid, int varid, int *storagep,
                                 size_t *chunksizesp)
{
    int storage, n;
    size_t sizes[NC_MAX_VAR_DIMS];
    if (!program_chunking(ncid, varid, &storage, sizes, &n))
        return CALL_REAL(nc_inq_var_chunking,
                         (ncid, varid, storagep, chunksizesp));
    if (storagep)
        *storagep = storage;
    for (int i = 0; chunksizesp && i < n; i++)
        chunksizesp[i] = sizes[i];
    return NC_NOERR;
}

SHIM_API int nc_inq_var_chunking_ints(int ncid, int varid, int *storagep,
                                      int *chunksizesp)
{
    int storage, n;
    size_t sizes[NC_MAX_VAR_DIMS];
    if (!program_chunking(ncid, varid, &storage, sizes, &n))
        return CALL_REAL(nc_inq_var_chunking_ints,
                         (ncid, varid, storagep, chunksizesp));
    for (int i = 0; chunksizesp && i < n; i++)
        if (sizes[i] > INT_MAX)
            return NC_ERANGE;
    if (storagep)
        *storagep = storage;
    for (int i = 0; chunksizesp && i < n; i++)
        chunksizesp[i] = (int)sizes[i];
    return NC_NOERR;
}

/* ---- hiding raster's own groups ----------------------------------------- */

/* 1 when group grpid is one of raster's own or lies inside one (a region
 * group: "raster_TEMP/region_1"). */
static int hidden_group(int grpid)
{
    int h = 0, g = grpid;
    for (int depth = 0; !h && depth < 4096; depth++) {
        h = raster_is_raster_group(g);
        if (nc_inq_grp_parent(g, &g) != NC_NOERR)
            break;
    }
    return h;
}

SHIM_API int nc_inq_grps(int ncid, int *numgrps, int *ncids)
{
    if (!shim_on() || !files_find(ncid))
        return CALL_REAL(nc_inq_grps, (ncid, numgrps, ncids));
    int n, st = CALL_REAL(nc_inq_grps, (ncid, &n, NULL));
    if (st != NC_NOERR)
        return st;
    int *all = malloc((size_t)(n ? n : 1) * sizeof *all);
    if (!all)
        return NC_ENOMEM;
    st = CALL_REAL(nc_inq_grps, (ncid, NULL, all));
    int kept = 0;
    for (int i = 0; st == NC_NOERR && i < n; i++) {
        if (hidden_group(all[i]))
            continue;
        if (ncids)
            ncids[kept] = all[i];
        kept++;
    }
    free(all);
    if (st == NC_NOERR && numgrps)
        *numgrps = kept;
    return st;
}

/* The answer of a lookup by name that found group g (status st): one of
 * raster's own groups does not exist for the program. */
static int group_found(int st, int ncid, int g, int *grp_ncid)
{
    if (st == NC_NOERR && shim_on() && files_find(ncid) && hidden_group(g))
        return NC_ENOGRP;
    if (st == NC_NOERR && grp_ncid)
        *grp_ncid = g;
    return st;
}

SHIM_API int nc_inq_grp_ncid(int ncid, const char *name, int *grp_ncid)
{
    int g = -1, st = CALL_REAL(nc_inq_grp_ncid, (ncid, name, &g));
    return group_found(st, ncid, g, grp_ncid);
}

SHIM_API int nc_inq_ncid(int ncid, const char *name, int *grp_ncid)
{
    int g = -1, st = CALL_REAL(nc_inq_ncid, (ncid, name, &g));
    return group_found(st, ncid, g, grp_ncid);
}

SHIM_API int nc_inq_grp_full_ncid(int ncid, const char *full_name,
                                  int *grp_ncid)
{
    int g = -1, st = CALL_REAL(nc_inq_grp_full_ncid, (ncid, full_name, &g));
    return group_found(st, ncid, g, grp_ncid);
}

/* ---- attributes --------------------------------------------------------- */

/* The raster variable a call on (ncid, varid) concerns, or NULL: netCDF's
 * alone. A rename adopts the variable first when it is still pending (a
 * data call adopts every pending variable of the file: data_target). */
static raster_var *call_target(int ncid, int varid)
{
    if (varid < 0 || !shim_on())
        return NULL;
    shim_file *sf = files_find(ncid);
    return sf ? files_var(sf, ncid, varid) : NULL;
}

/* The raster variable whose attribute `name` raster keeps itself (only
 * _FillValue), or NULL: the attribute is netCDF's alone. A variable still
 * pending is not adopted here: its placeholder takes the fill value, which
 * adoption reads, and adoption waits for the program's other settings
 * (its nc_def_var_deflate and the like, which nccopy sets after the
 * attributes; issue #23). */
static raster_var *att_target(int ncid, int varid, const char *name)
{
    shim_file *sf;
    if (!name || strcmp(name, "_FillValue") != 0 || varid < 0 ||
        !shim_on() || !(sf = files_find(ncid)))
        return NULL;
    return raster_var_by_varid(files_raster(sf), ncid, varid);
}

static int put_raster_att(raster_var *v, const char *name, nc_type xtype,
                          size_t len, const void *op)
{
    int rc = raster_var_put_att(v, name, xtype, len, op);
    return rc == RASTER_OK ? NC_NOERR : raster_nc_status();
}

SHIM_API int nc_put_att(int ncid, int varid, const char *name, nc_type xtype,
                        size_t len, const void *op)
{
    raster_var *v = att_target(ncid, varid, name);
    if (v)
        return put_raster_att(v, name, xtype, len, op);
    return CALL_REAL(nc_put_att, (ncid, varid, name, xtype, len, op));
}

/* ---- compression -------------------------------------------------------- */

/* A program's compression call on a variable raster has adopted already
 * (issue #23; adoption normally waits for these calls, files.c): raster
 * puts the settings on the stores and the placeholder, or refuses what it
 * cannot honour, saying so, where netCDF would have taken it. A variable
 * not adopted yet gets it from netCDF; adoption reads it there. */
static raster_var *adopted(int ncid, int varid)
{
    shim_file *sf;
    if (varid < 0 || !shim_on() || !(sf = files_find(ncid)))
        return NULL;
    return raster_var_by_varid(files_raster(sf), ncid, varid);
}

static int set_compression(raster_var *v, const raster_compression *c)
{
    int rc = raster_var_set_compression(v, c);
    if (rc == RASTER_OK)
        return NC_NOERR;
    shim_log(LOG_WARN, "compressing %s: %s: %s", raster_var_name(v),
             raster_strerror(rc), raster_errmsg());
    int st = raster_nc_status();
    return st != NC_NOERR ? st : NC_EFILTER;
}

SHIM_API int nc_def_var_deflate(int ncid, int varid, int shuffle,
                                int deflate, int deflate_level)
{
    raster_var *v = adopted(ncid, varid);
    raster_compression c;
    if (!v || raster_var_compression(v, &c) != RASTER_OK)
        return CALL_REAL(nc_def_var_deflate, (ncid, varid, shuffle, deflate,
                                              deflate_level));
    c.shuffle = shuffle != 0;
    if (deflate)
        c.deflate_level = deflate_level;
    return set_compression(v, &c);
}

SHIM_API int nc_def_var_fletcher32(int ncid, int varid, int fletcher32)
{
    raster_var *v = adopted(ncid, varid);
    raster_compression c;
    if (!v || raster_var_compression(v, &c) != RASTER_OK)
        return CALL_REAL(nc_def_var_fletcher32, (ncid, varid, fletcher32));
    c.fletcher32 = fletcher32 != 0;
    return set_compression(v, &c);
}

SHIM_API int nc_def_var_filter(int ncid, int varid, unsigned int id,
                               size_t nparams, const unsigned int *params)
{
    raster_var *v = adopted(ncid, varid);
    raster_compression c;
    if (!v || raster_var_compression(v, &c) != RASTER_OK)
        return CALL_REAL(nc_def_var_filter, (ncid, varid, id, nparams,
                                             params));
    if (nparams > RASTER_MAX_FILTER_PARAMS || (nparams && !params))
        return NC_EINVAL;
    /* deflate, shuffle and fletcher32 by id are fields of their own */
    if (id == H5Z_FILTER_DEFLATE && nparams >= 1) {
        c.deflate_level = (int)params[0];
    } else if (id == H5Z_FILTER_SHUFFLE) {
        c.shuffle = 1;
    } else if (id == H5Z_FILTER_FLETCHER32) {
        c.fletcher32 = 1;
    } else {
        unsigned i = 0;
        while (i < c.nfilters && c.filters[i].id != id)
            i++; /* netCDF replaces a filter's parameters */
        if (i == c.nfilters && c.nfilters == RASTER_MAX_FILTERS) {
            shim_log(LOG_WARN, "compressing %s: raster keeps at most %d "
                     "filters", raster_var_name(v), RASTER_MAX_FILTERS);
            return NC_EFILTER;
        }
        if (i == c.nfilters)
            c.nfilters++;
        c.filters[i].id = id;
        c.filters[i].nparams = nparams;
        if (nparams)
            memcpy(c.filters[i].params, params, nparams * sizeof *params);
    }
    return set_compression(v, &c);
}

SHIM_API int nc_def_var_quantize(int ncid, int varid, int quantize_mode,
                                 int nsd)
{
    raster_var *v = adopted(ncid, varid);
    raster_compression c;
    if (!v || raster_var_compression(v, &c) != RASTER_OK)
        return CALL_REAL(nc_def_var_quantize, (ncid, varid, quantize_mode,
                                               nsd));
    c.quantize_mode = quantize_mode;
    c.quantize_nsd = nsd;
    return set_compression(v, &c);
}

/* ---- the placeholder's marker filter ------------------------------------ */

#define SHIM_MAX_FILTERS 32 /* HDF5's limit on one pipeline */

/* A placeholder's filter list, raster's marker (RASTER_FILTER_ID) left out:
 * under the shim the variable is the program's, whose filters are its own
 * (ncdump -s prints no _Filter for it, nccopy copies no marker). Any
 * variable may be asked: only placeholders carry the marker. */
static int visible_filter_ids(int ncid, int varid, size_t *nfiltersp,
                              unsigned int *ids)
{
    if (!shim_on())
        return CALL_REAL(nc_inq_var_filter_ids, (ncid, varid, nfiltersp,
                                                 ids));
    size_t n = 0;
    int st = CALL_REAL(nc_inq_var_filter_ids, (ncid, varid, &n, NULL));
    if (st != NC_NOERR || n == 0) {
        if (st == NC_NOERR && nfiltersp)
            *nfiltersp = 0;
        return st;
    }
    unsigned int *all = malloc(n * sizeof *all);
    if (!all)
        return NC_ENOMEM;
    st = CALL_REAL(nc_inq_var_filter_ids, (ncid, varid, NULL, all));
    size_t kept = 0;
    for (size_t i = 0; st == NC_NOERR && i < n; i++) {
        if (raster_filter_is_placeholder(all[i]))
            continue;
        if (ids)
            ids[kept] = all[i];
        kept++;
    }
    free(all);
    if (st == NC_NOERR && nfiltersp)
        *nfiltersp = kept;
    return st;
}

SHIM_API int nc_inq_var_filter_ids(int ncid, int varid, size_t *nfiltersp,
                                   unsigned int *ids)
{
    return visible_filter_ids(ncid, varid, nfiltersp, ids);
}

SHIM_API int nc_inq_var_filter_info(int ncid, int varid, unsigned int id,
                                    size_t *nparamsp, unsigned int *params)
{
    if (shim_on() && raster_filter_is_placeholder(id))
        return NC_ENOFILTER;
    return CALL_REAL(nc_inq_var_filter_info, (ncid, varid, id, nparamsp,
                                              params));
}

/* The older call names the first filter, as the program sees the list; a
 * variable without one gets netCDF's answer: id 0. */
SHIM_API int nc_inq_var_filter(int ncid, int varid, unsigned int *idp,
                               size_t *nparamsp, unsigned int *params)
{
    unsigned int ids[SHIM_MAX_FILTERS];
    size_t n = 0;
    int st = visible_filter_ids(ncid, varid, &n, NULL);
    if (!shim_on() || st != NC_NOERR || n > SHIM_MAX_FILTERS)
        return CALL_REAL(nc_inq_var_filter, (ncid, varid, idp, nparamsp,
                                             params));
    if (n == 0) {
        if (idp)
            *idp = 0;
        return NC_NOERR;
    }
    st = visible_filter_ids(ncid, varid, NULL, ids);
    if (st != NC_NOERR)
        return st;
    if (idp)
        *idp = ids[0];
    return CALL_REAL(nc_inq_var_filter_info, (ncid, varid, ids[0], nparamsp,
                                              params));
}

/* A renamed raster variable keeps its storage group pointing at it. */
SHIM_API int nc_rename_var(int ncid, int varid, const char *name)
{
    free_name(ncid, name);
    raster_var *v = call_target(ncid, varid);
    if (!v)
        return CALL_REAL(nc_rename_var, (ncid, varid, name));
    int rc = raster_var_rename(v, name);
    return rc == RASTER_OK ? NC_NOERR : raster_nc_status();
}

/* ---- the placeholder's note ---------------------------------------------- */

/* Every placeholder carries RASTER_NOTE_ATT for readers without raster.
 * Under the shim the variable shows only the program's attributes: the note
 * is left out of the counts, numbers and names netCDF gives. */

static int is_note(const char *name)
{
    return name && strcmp(name, RASTER_NOTE_ATT) == 0;
}

/* The note's attribute number on variable varid, or -1 (not a raster
 * variable, or a placeholder written before notes). A variable still
 * pending has no note; it is not adopted here (call_target would), as
 * adoption waits for the program's attributes (files.c). */
static int note_attnum(int ncid, int varid)
{
    shim_file *sf;
    if (varid < 0 || !shim_on() || !(sf = files_find(ncid)))
        return -1;
    raster_var *v = raster_var_by_varid(files_raster(sf), ncid, varid);
    int num;
    if (!v || CALL_REAL(nc_inq_attid, (ncid, varid, RASTER_NOTE_ATT,
                                       &num)) != NC_NOERR)
        return -1;
    return num;
}

SHIM_API int nc_inq_varnatts(int ncid, int varid, int *nattsp)
{
    int note = nattsp ? note_attnum(ncid, varid) : -1;
    int st = CALL_REAL(nc_inq_varnatts, (ncid, varid, nattsp));
    if (st == NC_NOERR && note >= 0)
        (*nattsp)--;
    return st;
}

SHIM_API int nc_inq_attname(int ncid, int varid, int attnum, char *name)
{
    int note = attnum >= 0 ? note_attnum(ncid, varid) : -1;
    return CALL_REAL(nc_inq_attname, (ncid, varid,
                                      note >= 0 && attnum >= note ? attnum + 1
                                                                  : attnum,
                                      name));
}

SHIM_API int nc_inq_attid(int ncid, int varid, const char *name, int *idp)
{
    int note = note_attnum(ncid, varid), id;
    if (note >= 0 && is_note(name))
        return NC_ENOTATT;
    int st = CALL_REAL(nc_inq_attid, (ncid, varid, name, &id));
    if (st == NC_NOERR && idp)
        *idp = note >= 0 && id > note ? id - 1 : id;
    return st;
}

/* By name: the note is not there. */
#define NOTE_HIDDEN(ncid, varid, name)                                        \
    (is_note(name) && note_attnum((ncid), (varid)) >= 0)

SHIM_API int nc_inq_att(int ncid, int varid, const char *name,
                        nc_type *xtypep, size_t *lenp)
{
    if (NOTE_HIDDEN(ncid, varid, name))
        return NC_ENOTATT;
    return CALL_REAL(nc_inq_att, (ncid, varid, name, xtypep, lenp));
}

SHIM_API int nc_inq_atttype(int ncid, int varid, const char *name,
                            nc_type *xtypep)
{
    if (NOTE_HIDDEN(ncid, varid, name))
        return NC_ENOTATT;
    return CALL_REAL(nc_inq_atttype, (ncid, varid, name, xtypep));
}

SHIM_API int nc_inq_attlen(int ncid, int varid, const char *name,
                           size_t *lenp)
{
    if (NOTE_HIDDEN(ncid, varid, name))
        return NC_ENOTATT;
    return CALL_REAL(nc_inq_attlen, (ncid, varid, name, lenp));
}

SHIM_API int nc_del_att(int ncid, int varid, const char *name)
{
    if (NOTE_HIDDEN(ncid, varid, name))
        return NC_ENOTATT;
    return CALL_REAL(nc_del_att, (ncid, varid, name));
}

SHIM_API int nc_rename_att(int ncid, int varid, const char *name,
                           const char *newname)
{
    if (NOTE_HIDDEN(ncid, varid, name))
        return NC_ENOTATT;
    if (NOTE_HIDDEN(ncid, varid, newname))
        return NC_ENAMEINUSE;
    return CALL_REAL(nc_rename_att, (ncid, varid, name, newname));
}

/* Attribute `name` of (ncid, varid), of atomic type xtype (not a string)
 * and length len, read with netCDF's own functions and put onto raster
 * variable v as nc_put_att's wrapper puts it. */
static int copy_raster_att(int ncid, int varid, const char *name,
                           nc_type xtype, size_t len, raster_var *v)
{
    size_t size;
    int st = CALL_REAL(nc_inq_type, (ncid, xtype, NULL, &size));
    if (st != NC_NOERR)
        return st;
    void *value = malloc(len > 0 ? len * size : 1);
    if (!value)
        return NC_ENOMEM;
    st = CALL_REAL(nc_get_att, (ncid, varid, name, value));
    if (st == NC_NOERR)
        st = put_raster_att(v, name, xtype, len, value);
    free(value);
    return st;
}

SHIM_API int nc_copy_att(int ncid_in, int varid_in, const char *name,
                         int ncid_out, int varid_out)
{
    if (NOTE_HIDDEN(ncid_in, varid_in, name))
        return NC_ENOTATT;
    /* a _FillValue copied onto a raster variable reaches its stores, as
     * one put with nc_put_att does. netCDF copies everything else, and
     * what raster cannot hold (a string or user type, which netCDF refuses
     * as a fill value of a numeric variable); its own nested calls go
     * straight to netCDF (route.c). */
    raster_var *v = ncid_in == ncid_out && varid_in == varid_out
                        ? NULL /* netCDF's no-op */
                        : att_target(ncid_out, varid_out, name);
    if (v) {
        nc_type xtype;
        size_t len;
        int st = CALL_REAL(nc_inq_att, (ncid_in, varid_in, name, &xtype,
                                        &len));
        if (st != NC_NOERR)
            return st;
        if (xtype > NC_NAT && xtype <= NC_MAX_ATOMIC_TYPE &&
            xtype != NC_STRING)
            return copy_raster_att(ncid_in, varid_in, name, xtype, len, v);
    }
    return CALL_REAL(nc_copy_att, (ncid_in, varid_in, name, ncid_out,
                                   varid_out));
}

/* nc_get_att and its typed family (ncapi.h) */
#define NOTE_GET_ATT(fn, params, args)                                        \
    SHIM_API int fn params                                                    \
    {                                                                         \
        if (NOTE_HIDDEN(ncid, varid, name))                                   \
            return NC_ENOTATT;                                                \
        return CALL_REAL(fn, args);                                           \
    }
#define NOTE_GET_ATTS(sfx, ctype, memtype)                                    \
    NCAPI_GET_ATT(NOTE_GET_ATT, sfx, ctype, memtype)
NCAPI_MEMTYPES(NOTE_GET_ATTS)

/* ---- data: the generated family ----------------------------------------- */

enum { NCAPI_WHOLE, NCAPI_ONE, NCAPI_BOX };

/* One data call on raster variable v, in netCDF's terms: libraster's typed
 * transfer follows netCDF's semantics and reports netCDF's status. */
static int data_call(raster_var *v, int put, int shape, const size_t *start,
                     const size_t *count, const ptrdiff_t *stride,
                     const ptrdiff_t *imap, int varm, void *buf, int memtype)
{
    size_t zero[NC_MAX_VAR_DIMS] = {0}, ones[NC_MAX_VAR_DIMS];
    ptrdiff_t map[NC_MAX_VAR_DIMS];
    int nd = raster_var_ndims(v);
    if (shape == NCAPI_WHOLE) {
        start = zero;  /* count NULL: the current shape */
    } else if (shape == NCAPI_ONE) {
        for (int i = 0; i < nd; i++)
            ones[i] = 1;
        count = ones;
    }
    if (varm && !imap && stride && count) {
        /* nc_put_varm without a map is nc_put_vara for unit strides, else
         * a varm with the row-major map */
        int unit = 1;
        for (int i = 0; i < nd; i++)
            unit &= stride[i] == 1;
        if (!unit) {
            ptrdiff_t m = 1;
            for (int i = nd - 1; i >= 0; i--) {
                map[i] = m;
                m *= (ptrdiff_t)count[i];
            }
            imap = map;
        }
    }
    int rc = put ? raster_var_put_typed(v, start, count, stride, imap, buf,
                                        memtype)
                 : raster_var_get_typed(v, start, count, stride, imap, buf,
                                        memtype);
    int st = raster_nc_status();
    if (rc != RASTER_OK && st == NC_NOERR)
        st = NC_EHDFERR;
    /* a bad request is netCDF's business, answered with netCDF's status
     * and no word, as without the shim; anything else (a damaged file
     * found now, I/O, memory) gets raster's reason, which the status
     * cannot carry */
    if (rc != RASTER_OK && rc != RASTER_EINVAL)
        shim_log(LOG_WARN, "%s %s: %s: %s", put ? "writing" : "reading",
                 raster_var_name(v), raster_strerror(rc), raster_errmsg());
    return st;
}

/* The raster variable a data call moves, or NULL: netCDF's alone. A data
 * call, on any variable, adopts every pending variable of the file, as
 * netCDF ends the definition there (a data call on a coordinate written
 * before the fields ends it too). NULL also for a read that goes to
 * netCDF untouched: a small box of a variable that
 * holds its values, in a read-only file whose raster variables are not
 * loaded yet (raster_view_reads_through), so a point's series costs what
 * it costs without the shim. Shapes as data_call's (a map places values
 * in memory, not in the file). */
static raster_var *data_target(int ncid, int varid, int get, int shape,
                               const size_t *start, const size_t *count,
                               const ptrdiff_t *stride,
                               const ptrdiff_t *imap, int varm)
{
    (void)imap;
    (void)varm;
    shim_file *sf;
    if (varid < 0 || !shim_on() || !(sf = files_find(ncid)))
        return NULL;
    if (get && shape != NCAPI_WHOLE &&
        raster_view_reads_through(files_raster(sf), ncid, varid, start,
                                  shape == NCAPI_ONE ? NULL : count, stride))
        return NULL;
    return files_data_var(sf, ncid, varid);
}

#define NCAPI_CONST_put const
#define NCAPI_CONST_get

#define NCAPI_DEFINE(dir, kind, sfx, ctype, memtype)                          \
    SHIM_API int nc_##dir##_##kind##sfx(int ncid, int varid                   \
                                        NCAPI_KIND_##kind##_PARAMS,           \
                                        NCAPI_CONST_##dir ctype *data)        \
    {                                                                         \
        raster_var *v = data_target(ncid, varid, #dir[0] == 'g',              \
                                    NCAPI_KIND_##kind##_SHAPE);               \
        if (v)                                                                \
            return data_call(v, #dir[0] == 'p', NCAPI_KIND_##kind##_SHAPE,    \
                             (void *)data, memtype);                          \
        return CALL_REAL(nc_##dir##_##kind##sfx,                              \
                         (ncid, varid NCAPI_KIND_##kind##_ARGS, data));       \
    }

#define NCAPI_PUT_KINDS(sfx, ctype, memtype)                                  \
    NCAPI_DATA_CALLS(NCAPI_DEFINE, sfx, ctype, memtype)

NCAPI_MEMTYPES(NCAPI_PUT_KINDS)

#ifdef RASTER_MPI
/* nc_create_par, nc_open_par, nc_var_par_access, ...: the MPI flavour */
#include "shim_mpi.inc"
#endif
