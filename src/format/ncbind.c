/*
 * ncbind.c - netCDF ids for a file opened through HDF5 alone (lean.c).
 *
 * A lean open reads and checks raster's tables through HDF5 and leaves
 * netCDF closed. A call that needs netCDF (a read of a store HDF5 cannot
 * hand to pread, the full check of the tables, a write of attributes, a
 * program's ncid) opens it here and finds each variable's objects by the
 * names the lean open found them under. The file must be the one the
 * lean open read: its descriptor's identity (device, inode, size,
 * modification time) is checked first, so the names lead to the same
 * objects; every id is found before any is set.
 */
#include "ncbind.h"

#include <netcdf.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "var.h"

/* The netCDF ids of one variable, found before any is set. */
typedef struct ids {
    int grpid, parent, varid, maskvar;
    int *store_grp, *store_var;
} ids;

static int find_ids(int ncid, const raster_var *v, ids *out)
{
    int st = nc_inq_grp_full_ncid(ncid, v->h5path, &out->grpid);
    if (st == NC_NOERR)
        st = nc_inq_grp_parent(out->grpid, &out->parent);
    if (st == NC_NOERR)
        st = nc_inq_varid(out->parent, v->name, &out->varid);
    if (st == NC_NOERR)
        st = nc_inq_varid(out->grpid, "mask", &out->maskvar);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_EFORMAT, st, "%s: %s: netCDF does not "
                              "see what HDF5 saw (%s)", v->file->path,
                              v->name, nc_strerror(st));
    for (size_t s = 0; s <= v->nregions; s++) {
        out->store_grp[s] = out->store_var[s] = -1;
        if (var_tiled(v) && v->store_cells[s] > 0) { /* the variable */
            out->store_grp[s] = out->parent;
            out->store_var[s] = out->varid;
        }
        /* format 4: one store, Mixed_Chunks, for every region */
        if ((s < v->nregions && v->format >= 4) || var_tiled(v))
            continue;
        char rel[48];
        fileio_store_path(v, s, rel, sizeof rel);
        *strchr(rel, '/') = '\0';
        st = nc_inq_grp_ncid(out->grpid, rel, &out->store_grp[s]);
        if (st == NC_NOERR && v->store_cells[s] > 0)
            st = nc_inq_varid(out->store_grp[s], "data", &out->store_var[s]);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_EFORMAT, st, "%s: %s: store %zu: "
                                  "netCDF does not see what HDF5 saw (%s)",
                                  v->file->path, v->name, s,
                                  nc_strerror(st));
    }
    return RASTER_OK;
}

/* Opens netCDF on lean file f and sets every variable's ids. Readers on
 * other threads keep the HDF5 handle and fd they use; f->lean is cleared
 * last. */
static int bind_netcdf(raster_file *f)
{
    int rc = file_unchanged(f);
    if (rc)
        return rc;
    size_t n = 0, cells = 0;
    for (raster_var *v = f->vars; v; v = v->next) {
        n++;
        cells += v->nregions + 1;
    }
    ids *all = raster_calloc(n ? n : 1, sizeof *all);
    int *stores = raster_reallocarray(NULL, 2 * (cells ? cells : 1),
                                      sizeof *stores);
    if (!all || !stores) {
        raster_free(all);
        raster_free(stores);
        return raster_fail(RASTER_ENOMEM, "out of memory opening %s",
                           f->path);
    }
    int ncid, st = nc_open(f->path, NC_NOWRITE, &ncid);
    if (st != NC_NOERR)
        rc = raster_fail_nc(RASTER_ENETCDF, st, "opening %s: %s", f->path,
                            nc_strerror(st));
    size_t i = 0, at = 0;
    for (raster_var *v = f->vars; rc == RASTER_OK && v; v = v->next, i++) {
        all[i].store_grp = stores + at;
        all[i].store_var = stores + cells + at;
        at += v->nregions + 1;
        rc = find_ids(ncid, v, &all[i]);
    }
    i = 0;
    for (raster_var *v = f->vars; rc == RASTER_OK && v; v = v->next, i++) {
        memcpy(v->store_grp, all[i].store_grp,
               (v->nregions + 1) * sizeof *v->store_grp);
        memcpy(v->store_var, all[i].store_var,
               (v->nregions + 1) * sizeof *v->store_var);
        v->grpid = all[i].grpid;
        v->parent = all[i].parent;
        v->varid = all[i].varid;
        mask_bind_source(v->mask, all[i].grpid, all[i].maskvar);
    }
    raster_free(all);
    raster_free(stores);
    if (rc) {
        if (st == NC_NOERR)
            raster_nc_close(ncid);
        return rc;
    }
    f->ncid = ncid;
    atomic_store_explicit(&f->lean, 0, memory_order_release);
    return RASTER_OK;
}
/* The variables of a view checked at its open (lean_view_scan), loaded
 * once, on the first call that needs them; RASTER_OK at once otherwise.
 * A load that fails leaves the view without variables. */
int file_netcdf(raster_file *f)
{
    if (!f || !atomic_load_explicit(&f->lean, memory_order_acquire))
        return RASTER_OK;
    pthread_mutex_lock(&f->lean_lock);
    int rc = atomic_load_explicit(&f->lean, memory_order_relaxed) ? bind_netcdf(f)
                                                              : RASTER_OK;
    pthread_mutex_unlock(&f->lean_lock);
    return rc;
}

/* The caller's ids of v's placeholder in handle ncid, whose open must
 * not have seen v's storage group, and which must show the placeholder as
 * the stores hold the variable (the lean open compared its extent and
 * dimension ids; netCDF takes both from the file). */
static int view_ids(int ncid, raster_var *v, int checked)
{
    char parent[4096]; /* lean.c's longest path */
    size_t n = 0;
    if (v->h5path) { /* loaded lean: its storage group's path */
        const char *slash = strrchr(v->h5path, '/');
        n = slash ? (size_t)(slash - v->h5path) : 0;
        if (n >= sizeof parent)
            return raster_fail(RASTER_EFORMAT, "%s: path too long", v->name);
        memcpy(parent, v->h5path, n);
        parent[n] = '\0';
    } else { /* through netCDF: its group's */
        int st = nc_inq_grpname_full(v->parent, &n, NULL);
        if (st == NC_NOERR && n >= sizeof parent)
            return raster_fail(RASTER_EFORMAT, "%s: path too long", v->name);
        if (st == NC_NOERR)
            st = nc_inq_grpname_full(v->parent, NULL, parent);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "%s: %s", v->name,
                                  nc_strerror(st));
        n = strcmp(parent, "/") == 0 ? 0 : n;
    }
    int g = ncid, varid, seen;
    if (!checked && !v->placeholder_fits)
        return raster_fail(RASTER_EFORMAT, "%s: %s: the placeholder is not "
                           "the variable's shape", v->file->path, v->name);
    if (!checked && v->h5path &&
        nc_inq_grp_full_ncid(ncid, v->h5path, &seen) == NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: %s: the caller's handle "
                           "shows the storage", v->file->path, v->name);
    int st = n ? nc_inq_grp_full_ncid(ncid, parent, &g) : NC_NOERR;
    if (st == NC_NOERR)
        st = nc_inq_varid(g, v->name, &varid);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_EFORMAT, st, "%s: %s: the caller's "
                              "handle does not show it (%s)", v->file->path,
                              v->name, nc_strerror(st));
    v->view_parent = g;
    v->view_varid = varid;
    return RASTER_OK;
}

int ncbind_view(raster_file *f, int ncid, int checked)
{
    for (raster_var *v = f->vars; v; v = v->next) {
        int rc = view_ids(ncid, v, checked);
        if (rc)
            return rc;
    }
    f->view = 1;
    f->caller_ncid = ncid;
    return RASTER_OK;
}
