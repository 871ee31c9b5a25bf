/*
 * lean.c - Opening a read-only raster file through HDF5 alone (lean.h).
 *
 * It reads what netCDF's path reads of a format-3 variable (meta_load, in
 * its lazy read-only form) and checks the same things, from the objects
 * netCDF-4 writes underneath: its group's attributes, the placeholder
 * dataset and its `_FillValue`, the dimension scales (each carries the
 * netCDF id `_Netcdf4Dimid`; each variable its dimension ids,
 * `_Netcdf4Coordinates`) and the stored mask's shape and names. The
 * length of an unlimited dimension is netCDF's: the longest extent among
 * the datasets attached to its scale (REFERENCE_LIST).
 */
#include "lean.h"

#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "compress.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "mask.h"
#include "maskio.h"
#include "meta.h"
#include "raster_internal.h"
#include "regions.h"
#include "state.h"

#define PATH_BYTES 4096
#define LEAN_FAIL(...) raster_fail(RASTER_EFORMAT, __VA_ARGS__)

/* An open attribute: its id, file type and number of values. */
typedef struct att {
    hid_t id, type;
    hssize_t n;
} att;

/* Opens attribute `name` of obj; 0, or -1 when absent or unreadable (t
 * then holds nothing to close). */
static int att_open(hid_t obj, const char *name, att *t)
{
    t->id = t->type = -1;
    t->n = -1;
    /* no H5Aexists first (a second lookup): lean_open and lean_view_scan,
     * the only callers, turn HDF5's error printing off */
    if ((t->id = H5Aopen(obj, name, H5P_DEFAULT)) < 0)
        return -1;
    hid_t space = H5Aget_space(t->id);
    t->type = H5Aget_type(t->id);
    t->n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (space >= 0)
        H5Sclose(space);
    if (t->type < 0 || t->n < 0) {
        if (t->type >= 0)
            H5Tclose(t->type);
        H5Aclose(t->id);
        t->id = t->type = -1;
        return -1;
    }
    return 0;
}

static void att_close(att *t)
{
    if (t->type >= 0)
        H5Tclose(t->type);
    if (t->id >= 0)
        H5Aclose(t->id);
    t->id = t->type = -1;
}

/* One value of netCDF type xtype. */
static int att_one(hid_t obj, const char *name, int xtype, void *value)
{
    size_t n;
    return fileio_att(obj, name, xtype, value, 1, &n);
}

/* A text (NC_CHAR) attribute: a fixed-length HDF5 string, *text
 * NUL-terminated (caller frees), *len its length. RASTER_EFORMAT when
 * absent or anything else. */
static int att_text(hid_t obj, const char *name, char **out, size_t *len)
{
    *out = NULL;
    att t;
    if (att_open(obj, name, &t) != 0)
        return RASTER_EFORMAT;
    char *text = NULL;
    size_t size = H5Tget_size(t.type);
    int rc = RASTER_EFORMAT;
    if (H5Tget_class(t.type) == H5T_STRING &&
        H5Tis_variable_str(t.type) == 0 && size > 0 && t.n == 1) {
        if (!(text = raster_malloc(size + 1))) {
            rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                             name);
        } else if (H5Aread(t.id, t.type, text) < 0) {
            raster_free(text);
            text = NULL;
        } else {
            text[size] = '\0';
            *len = size;
            rc = RASTER_OK;
        }
    }
    att_close(&t);
    *out = text;
    return rc;
}

/* 1 when obj's `_Netcdf4Coordinates` (the dimension ids netCDF gives a
 * variable) are ids[0..n). */
static int coords_are(hid_t obj, const int *ids, int n)
{
    int got[RASTER_MAX_DIMS];
    size_t len;
    return fileio_att(obj, "_Netcdf4Coordinates", NC_INT, got,
                          RASTER_MAX_DIMS, &len) == 0 &&
           len == (size_t)n && memcmp(got, ids, (size_t)n * sizeof *ids) == 0;
}

/* netCDF's length of the unlimited dimension of `scale`: the longest
 * extent along it among the variables on it (nc4_find_dim_len): the
 * datasets attached to the scale, and the scale itself when it is a
 * coordinate variable, not a dimension alone (its NAME says which). */
static int unlimited_len(hid_t scale, hsize_t own, hsize_t *len)
{
    static const char alone[] = "This is a netCDF dimension but not a "
                                "netCDF variable";
    char *name = NULL;
    size_t nlen = 0;
    int rc = att_text(scale, "NAME", &name, &nlen);
    if (rc == RASTER_ENOMEM)
        return rc;
    *len = name && strncmp(name, alone, sizeof alone - 1) == 0 ? 0 : own;
    raster_free(name);
    att t;
    if (H5Aexists(scale, "REFERENCE_LIST") <= 0)
        return RASTER_OK; /* used by no other variable */
    if (att_open(scale, "REFERENCE_LIST", &t) != 0)
        return RASTER_EFORMAT;
    typedef struct {
        hobj_ref_t ref;
        int index;
    } attached;
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(attached));
    hssize_t n = t.n;
    attached *list = n > 0 ? raster_reallocarray(NULL, (size_t)n,
                                                 sizeof *list)
                           : NULL;
    rc = RASTER_EFORMAT;
    if (n > 0 && !list)
        rc = raster_fail(RASTER_ENOMEM, "out of memory reading a dimension");
    else if (mt >= 0 && list &&
        H5Tinsert(mt, "dataset", HOFFSET(attached, ref),
                  H5T_STD_REF_OBJ) >= 0 &&
        H5Tinsert(mt, "dimension", HOFFSET(attached, index),
                  H5T_NATIVE_INT) >= 0 &&
        H5Aread(t.id, mt, list) >= 0) {
        rc = RASTER_OK;
        for (hssize_t i = 0; i < n && rc == RASTER_OK; i++) {
            hid_t d = H5Rdereference2(scale, H5P_DEFAULT, H5R_OBJECT,
                                      &list[i].ref);
            hsize_t dims[RASTER_MAX_DIMS + 1], maxdims[RASTER_MAX_DIMS + 1];
            int rank = d >= 0 && H5Iget_type(d) == H5I_DATASET
                           ? fileio_extent(d, dims, maxdims)
                           : -1;
            if (rank <= list[i].index || list[i].index < 0)
                rc = RASTER_EFORMAT;
            else if (dims[list[i].index] > *len)
                *len = dims[list[i].index];
            if (d >= 0)
                H5Oclose(d);
        }
    }
    raster_free(list);
    att_close(&t);
    if (mt >= 0)
        H5Tclose(mt);
    return rc;
}

/* The dimension `name` with netCDF id `dimid` visible from group path
 * `grp` (it or an ancestor holds its scale): its length and whether it is
 * unlimited. */
static int find_dim(hid_t fid, const char *grp,
                    const char *name, int dimid, size_t *len,
                    unsigned char *unlimited)
{
    char path[PATH_BYTES];
    snprintf(path, sizeof path, "%s", grp);
    for (;;) {
        char obj[PATH_BYTES];
        int root = strcmp(path, "/") == 0;
        if ((size_t)snprintf(obj, sizeof obj, "%s/%s", root ? "" : path,
                             name) >= sizeof obj)
            return RASTER_EFORMAT;
        if (H5Lexists(fid, obj, H5P_DEFAULT) > 0) {
            hid_t d = H5Dopen2(fid, obj, H5P_DEFAULT);
            int id = -1, rc = RASTER_EFORMAT;
            hsize_t dims[RASTER_MAX_DIMS + 1], maxdims[RASTER_MAX_DIMS + 1];
            if (d >= 0 && att_one(d, "_Netcdf4Dimid", NC_INT, &id) == 0 &&
                id == dimid && fileio_extent(d, dims, maxdims) == 1) {
                hsize_t n = dims[0];
                *unlimited = maxdims[0] == H5S_UNLIMITED;
                if (*unlimited)
                    rc = unlimited_len(d, dims[0], &n);
                else
                    rc = RASTER_OK;
                *len = (size_t)n;
            }
            if (d >= 0)
                H5Dclose(d);
            if (rc != RASTER_EFORMAT)
                return rc;
        }
        if (root)
            return RASTER_EFORMAT;
        char *slash = strrchr(path, '/');
        if (slash == path)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
}

/* 1 when link `name` of g is an object of HDF5 kind `kind` (H5O_TYPE_GROUP,
 * H5O_TYPE_DATASET). */
static int is_kind(hid_t g, const char *name, H5O_type_t kind)
{
    /* the object header's type: opening a dataset to ask costs several
     * times more (its layout, dataspace and fill value are read) */
#if H5_VERSION_GE(1, 12, 0)
    H5O_info2_t oi;
    herr_t st = H5Oget_info_by_name3(g, name, &oi, H5O_INFO_BASIC,
                                     H5P_DEFAULT);
#elif H5_VERSION_GE(1, 10, 3)
    H5O_info_t oi;
    herr_t st = H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC,
                                     H5P_DEFAULT);
#else
    H5O_info_t oi;
    herr_t st = H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT);
#endif
    return st >= 0 && oi.type == kind;
}

/* The stored mask: 2-D over the grid, an integer type netCDF gives a
 * stored mask, on the grid's dimensions; its names. */
static int load_mask(hid_t g, const meta_desc *d, raster_mask **mask,
                     hid_t *keep)
{
    *keep = -1;
    /* anything but a dataset fails to open (errors are off) */
    hid_t m = H5Dopen2(g, "mask", H5P_DEFAULT);
    hid_t type = m >= 0 ? H5Dget_type(m) : -1;
    hsize_t dims[RASTER_MAX_DIMS + 1], maxdims[RASTER_MAX_DIMS + 1];
    int ok = type >= 0 &&
             fileio_holds_any(type, mask_stored_types, MASK_STORED_NTYPES) &&
             fileio_extent(m, dims, maxdims) == 2 && dims[0] == d->ny &&
             dims[1] == d->nx && coords_are(m, d->dimids + d->ndims - 2, 2);
    int rc = ok ? RASTER_OK
                         : LEAN_FAIL("%s: stored mask not of its grid",
                                     d->name);
    /* names as mask.c reads them: flag_values of any numeric type */
    long long *vals = NULL;
    char *meanings = NULL;
    size_t nvals = 0, nchars = 0;
    att t;
    if (rc == RASTER_OK && att_open(m, "flag_values", &t) == 0) {
        H5T_class_t c = H5Tget_class(t.type);
        if (t.n > 0 && (c == H5T_INTEGER || c == H5T_FLOAT)) {
            vals = raster_reallocarray(NULL, (size_t)t.n, sizeof *vals);
            if (!vals)
                rc = raster_fail(RASTER_ENOMEM, "out of memory reading "
                                 "region names");
            else if (H5Aread(t.id, H5T_NATIVE_LLONG, vals) >= 0)
                nvals = (size_t)t.n;
        }
        att_close(&t);
        if (nvals && att_text(m, "flag_meanings", &meanings, &nchars) ==
                         RASTER_ENOMEM)
            rc = RASTER_ENOMEM;
    }
    if (rc == RASTER_OK)
        rc = mask_describe(d->ny, d->nx, vals, meanings ? nvals : 0,
                           meanings, mask);
    raster_free(vals);
    raster_free(meanings);
    if (type >= 0)
        H5Tclose(type);
    if (m >= 0 && rc == RASTER_OK)
        *keep = m; /* for maskio_probe, once the variable exists */
    else if (m >= 0)
        H5Dclose(m);
    return rc;
}

/* The placeholder `d->name` of group path `parent`: the stored type,
 * rank and dimension ids, not a dimension scale; its fill value. */
static int load_placeholder(hid_t fid, const char *parent, meta_desc *d,
                            int view)
{
    char path[PATH_BYTES];
    if ((size_t)snprintf(path, sizeof path, "%s/%s",
                         strcmp(parent, "/") ? parent : "", d->name) >=
        sizeof path)
        return LEAN_FAIL("%s: path too long", d->name);
    hid_t p = H5Dopen2(fid, path, H5P_DEFAULT); /* errors are off */
    hid_t type = p >= 0 ? H5Dget_type(p) : -1;
    hsize_t dims[RASTER_MAX_DIMS + 1], maxdims[RASTER_MAX_DIMS + 1];
    int ok = type >= 0 && fileio_holds(type, d->xtype) == 1 &&
             fileio_extent(p, dims, maxdims) == d->ndims &&
             coords_are(p, d->dimids, d->ndims) &&
             H5Aexists(p, "_Netcdf4Dimid") == 0;
    /* a placeholder written in parallel, or one another variable's later
     * records outgrew, is shorter than the variable */
    d->placeholder_fits = ok;
    for (int i = 0; ok && i < d->ndims; i++)
        d->placeholder_fits &= dims[i] == d->outer[i];
    /* its _FillValue when of its type and one value, as meta_load takes
     * it (refusing it unreadable); netCDF's default otherwise */
    convert_default_fill(d->xtype, d->fill);
    att t;
    /* opened without asking first (a second lookup); one that fails to
     * open must then be absent */
    if (ok && att_open(p, "_FillValue", &t) != 0) {
        ok = H5Aexists(p, "_FillValue") == 0;
    } else if (ok) {
        if (fileio_holds(t.type, d->xtype) == 1 && t.n == 1)
            ok = H5Aread(t.id, (hid_t)fileio_mem_type(d->xtype),
                         d->fill) >= 0;
        att_close(&t);
    }
    /* its compression (issue #23): the stores have the same; a view's
     * reads never need it (the stores' own filters decide how they are
     * read), so it waits for the first question (meta_comp) */
    d->comp_later = ok && view;
    int rc = ok && !view ? compress_inq_h5(p, &d->comp, d->name) : RASTER_OK;
    if (type >= 0)
        H5Tclose(type);
    if (p >= 0)
        H5Dclose(p);
    if (rc)
        return rc;
    return ok ? RASTER_OK
              : LEAN_FAIL("%s: its placeholder variable is missing or of "
                          "another type or shape", d->name);
}

/* 1 when dimension id `dim` of the caller's handle is unlimited: netCDF
 * lists a group's own, so grp and its ancestors are asked. */
static int view_unlimited(int grp, int dim)
{
    for (;;) {
        int n = 0, ids[NC_MAX_DIMS];
        if (nc_inq_unlimdims(grp, &n, NULL) != NC_NOERR || n < 0 ||
            n > NC_MAX_DIMS || nc_inq_unlimdims(grp, NULL, ids) != NC_NOERR)
            return -1;
        for (int i = 0; i < n; i++)
            if (ids[i] == dim)
                return 1;
        if (nc_inq_grp_parent(grp, &grp) != NC_NOERR)
            return 0; /* the root asked */
    }
}

/* A view's dimensions (find_dim's answers) from the caller's handle,
 * which netCDF opened with everything but the storage and keeps in
 * memory (asking about the placeholder itself would have netCDF read its
 * metadata, a load of its own): each name found as netCDF finds it from
 * the placeholder's group pgrp, with the id the description records (the
 * ids the placeholder's dimensions have in the file, coords_are), its
 * length and whether it is unlimited. A handle that numbers them
 * otherwise is declined (view_load then opens the file whole). */
static int view_dims(int pgrp, meta_desc *d, char *const *names)
{
    for (int i = 0; i < d->ndims; i++) {
        int id, u;
        size_t len;
        if (nc_inq_dimid(pgrp, names[i], &id) != NC_NOERR ||
            id != d->dimids[i] ||
            nc_inq_dimlen(pgrp, id, &len) != NC_NOERR ||
            (u = view_unlimited(pgrp, id)) < 0)
            return RASTER_EFORMAT;
        d->outer[i] = len;
        d->unlimited[i] = (unsigned char)u;
    }
    return RASTER_OK;
}

/* The description attributes of group g (meta.c, load_description); a
 * view's dimensions from the caller's group pgrp of the placeholder
 * (view_dims), else (pgrp -1) from their HDF5 scales. */
static int load_description(hid_t fid, int pgrp, hid_t g,
                            const char *path, meta_desc *d, char *names,
                            int scanned)
{
    /* a view's scan found it complete (check_storage) */
    int version = 0, complete = scanned;
    if (att_one(g, ATT_VERSION, NC_INT, &version) != 0 || version < 3 ||
        version > RASTER_FORMAT_VERSION ||
        (!scanned &&
         att_one(g, ATT_COMPLETE, NC_INT, &complete) != 0) || complete != 1 ||
        att_one(g, "raster_type", NC_INT, &d->xtype) != 0 ||
        convert_type_size(d->xtype) == 0)
        return raster_fail(RASTER_EFORMAT,
                           "%s: not a complete variable of format 3 to 5",
                           path);
    d->format = version;
    char *save = NULL, *dimnames[RASTER_MAX_DIMS];
    d->ndims = 0;
    for (char *tok = strtok_r(names, "/", &save); tok;
         tok = strtok_r(NULL, "/", &save)) {
        if (d->ndims == RASTER_MAX_DIMS)
            return raster_fail(RASTER_EFORMAT, "%s: too many dimensions",
                               path);
        dimnames[d->ndims++] = tok;
    }
    unsigned long long ch[RASTER_MAX_DIMS];
    size_t n1, n2;
    if (d->ndims < 2 ||
        fileio_att(g, "raster_dimids", NC_INT, d->dimids, RASTER_MAX_DIMS,
                   &n1) != 0 ||
        n1 != (size_t)d->ndims ||
        fileio_att(g, "raster_chunk", NC_UINT64, ch, RASTER_MAX_DIMS, &n2) !=
            0 ||
        n2 != (size_t)d->ndims)
        return raster_fail(RASTER_EFORMAT, "%s: unreadable description", path);
    if (pgrp >= 0 && view_dims(pgrp, d, dimnames) != RASTER_OK)
        return raster_fail(RASTER_EFORMAT, "%s: dimensions not the "
                           "placeholder's", path);
    for (int i = 0; i < d->ndims; i++) {
        int rc = pgrp >= 0 ? RASTER_OK
                           : find_dim(fid, path, dimnames[i],
                                      d->dimids[i], &d->outer[i],
                                      &d->unlimited[i]);
        if (rc == RASTER_ENOMEM)
            return rc;
        if (rc || ch[i] == 0 || ch[i] > SIZE_MAX)
            return raster_fail(RASTER_EFORMAT,
                               "%s: dimension %s or chunk unusable", path,
                               dimnames[i]);
        d->chunk[i] = (size_t)ch[i];
    }
    /* the grid: the last two dimensions, fixed, the tile inside it */
    int nd = d->ndims;
    d->ny = d->outer[nd - 2];
    d->nx = d->outer[nd - 1];
    if (d->unlimited[nd - 2] || d->unlimited[nd - 1] || d->ny == 0 ||
        d->nx == 0 || d->ny > UINT32_MAX || d->nx > UINT32_MAX ||
        d->chunk[nd - 2] > d->ny || d->chunk[nd - 1] > d->nx)
        return raster_fail(RASTER_EFORMAT, "%s: grid unusable", path);
    return RASTER_OK;
}

/* The variable of raster group g (HDF5 path `path`, in group `parent`);
 * `scanned`: its name, when a view's scan read it (and found the group
 * complete), else NULL. */
static int load_var(raster_file *f, hid_t fid, hid_t g, const char *path,
                    const char *parent, const char *scanned,
                    raster_var **out)
{
    meta_desc d;
    memset(&d, 0, sizeof d);
    d.h5path = path;
    size_t nlen = 0, dlen = 0;
    char *name = NULL, *dims = NULL;
    long long *summary = NULL;
    raster_mask *mask = NULL;
    hid_t maskd = -1;
    int rc = RASTER_OK;
    if (scanned) {
        nlen = strlen(scanned);
        if (!(name = raster_malloc(nlen + 1)))
            rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", path);
        else
            memcpy(name, scanned, nlen + 1);
    } else {
        rc = att_text(g, ATT_VARIABLE, &name, &nlen);
    }
    if (rc == RASTER_OK)
        rc = att_text(g, "raster_dims", &dims, &dlen);
    if (rc == RASTER_OK &&
        (nlen > NC_MAX_NAME || strlen(name) != nlen || strlen(dims) != dlen ||
         dlen >= RASTER_MAX_DIMS * (NC_MAX_NAME + 1) + 1))
        rc = LEAN_FAIL("%s: no variable name or dimensions", path);
    d.name = name;
    /* a view: the placeholder's group in the caller's handle */
    int pgrp = -1;
    if (rc == RASTER_OK && f->view &&
        nc_inq_grp_full_ncid(f->caller_ncid, parent, &pgrp) != NC_NOERR)
        rc = LEAN_FAIL("%s: the caller's handle has no group %s", path,
                       parent);
    if (rc == RASTER_OK)
        rc = load_description(fid, pgrp, g, path, &d, dims, scanned != NULL);
    if (rc == RASTER_OK)
        rc = load_placeholder(fid, parent, &d, f->view);
    if (rc == RASTER_OK)
        rc = load_mask(g, &d, &mask, &maskd);
    /* the summary: as many rows as it says, each naming a region group */
    size_t len = 0;
    att t = {-1, -1, -1};
    if (rc == RASTER_OK && att_open(g, REGIONS_SUMMARY, &t) != 0)
        t.n = -1;
    hssize_t np = t.n;
    if (rc == RASTER_OK && np > 0 &&
        !(summary = raster_reallocarray(NULL, (size_t)np, sizeof *summary)))
        rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", path);
    /* read from the open attribute, as fileio_att reads one (its type) */
    if (rc == RASTER_OK &&
        (np <= 0 || fileio_holds(t.type, NC_INT64) != 1 ||
         H5Aread(t.id, (hid_t)fileio_mem_type(NC_INT64), summary) < 0))
        rc = LEAN_FAIL("%s: no regions' summary", path);
    else if (rc == RASTER_OK)
        len = (size_t)np;
    att_close(&t);
    /* its checksum, when the file has one (integrity.h) */
    unsigned crc;
    if (rc == RASTER_OK && att_open(g, SUMS_GROUP_ATT, &t) == 0) {
        d.sums = 1;
        int ok = fileio_holds(t.type, NC_UINT) == 1 && t.n == 1 &&
                 H5Aread(t.id, H5T_NATIVE_UINT, &crc) >= 0 &&
                 crc == sums_i64(0, summary, len);
        att_close(&t);
        if (!ok)
            rc = LEAN_FAIL("%s: attribute %s does not match its checksum %s",
                           d.name, REGIONS_SUMMARY, SUMS_GROUP_ATT);
    }
    /* format 5: its mixed tiles, as many as `mixed_chunks` has rows */
    if (rc == RASTER_OK && d.format >= 5 &&
        H5Lexists(g, "mixed_chunks", H5P_DEFAULT) > 0) {
        hid_t md = H5Dopen2(g, "mixed_chunks", H5P_DEFAULT);
        hid_t ms = md >= 0 ? H5Dget_space(md) : -1;
        hsize_t dims[2];
        if (ms < 0 || H5Sget_simple_extent_ndims(ms) != 2 ||
            H5Sget_simple_extent_dims(ms, dims, NULL) != 2)
            rc = LEAN_FAIL("%s: unreadable mixed_chunks", path);
        else
            d.mixed_tiles = (size_t)dims[0];
        if (ms >= 0)
            H5Sclose(ms);
        if (md >= 0)
            H5Dclose(md);
    }
    raster_var *v = NULL;
    if (rc == RASTER_OK)
        rc = meta_var_lean(f, &d, &mask, summary, len, &v);
    /* the stores' dataset ids, kept open once a read opens them
     * (fileio_store) */
    if (rc == RASTER_OK &&
        !(v->store_did = raster_reallocarray(NULL, v->nregions + 1,
                                             sizeof *v->store_did)))
        rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", path);
    for (size_t s = 0; rc == RASTER_OK && s <= v->nregions; s++)
        v->store_did[s] = -1;
    /* how maskio reads the mask, while its dataset is open */
    if (rc == RASTER_OK && maskd >= 0)
        maskio_probe(v, maskd);
    if (maskd >= 0)
        H5Dclose(maskd);
    /* each region's group, and each store with cells (meta.c,
     * load_store); the stores' type and shape when first read. A view
     * (the shim's read-only open) leaves this to its reads: two HDF5
     * lookups per region were a third of the load, a point's read opens
     * one store, and a store missing then fails that read (fileio_store
     * finds nothing; netCDF's binding, ncbind.c, refuses the file) */
    /* format 4: no region groups, one store for all; 5: the variable */
    for (size_t r = v && v->format >= 4 ? v->nregions : 0;
         v && !var_tiled(v) &&
         rc == RASTER_OK && !f->view && r <= v->nregions; r++) {
        char store[48], gname[48];
        fileio_store_path(v, r, store, sizeof store);
        snprintf(gname, sizeof gname, "%.*s", (int)(strchr(store, '/') - store),
                 store);
        if (!is_kind(g, gname, H5O_TYPE_GROUP) ||
            (v->store_cells[r] > 0 && H5Lexists(g, store, H5P_DEFAULT) <= 0))
            rc = LEAN_FAIL("%s: no group %s or its data", path, gname);
    }
    if (rc && v) {
        var_free(v);
        v = NULL;
    }
    raster_mask_free(mask);
    raster_free(summary);
    raster_free(name);
    raster_free(dims);
    *out = v;
    return rc;
}

/* 1 when HDF5 paths a and b name objects of one group. */
static int same_parent(const char *a, const char *b)
{
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    return sa - a == sb - b && strncmp(a, b, (size_t)(sa - a)) == 0;
}

/* Loads the variable of raster group c (path, in group parent) onto the
 * end of f's list. */
static int add_var(raster_file *f, hid_t fid, hid_t c, const char *path,
                   const char *parent, const char *scanned)
{
    raster_var *v = NULL;
    int rc = load_var(f, fid, c, path, parent, scanned, &v);
    raster_var **tail = &f->vars;
    /* two groups claiming one placeholder (scan_groups refuses) */
    for (; rc == RASTER_OK && *tail; tail = &(*tail)->next)
        if (strcmp((*tail)->name, v->name) == 0 &&
            same_parent((*tail)->h5path, path))
            rc = LEAN_FAIL("%s: claimed twice", v->name);
    if (rc == RASTER_OK)
        *tail = v;
    else
        var_free(v);
    return rc;
}

/* A view's variables from the storage groups lean_view_scan checked,
 * recorded and kept open: walking the root's links again cost a tenth of
 * the load. The file is the one checked (its identity, file_unchanged,
 * is checked again before any value is read). */
static int load_recorded(raster_file *f, hid_t fid)
{
    int rc = RASTER_OK;
    for (size_t i = 0; rc == RASTER_OK && i < f->nview; i++) {
        const struct view_group *r = &f->view_groups[i];
        const char *slash = strrchr(r->path, '/');
        char parent[PATH_BYTES];
        if (!slash || (size_t)(slash - r->path) >= sizeof parent)
            return LEAN_FAIL("%s: path unusable", r->path);
        snprintf(parent, sizeof parent, "%.*s",
                 slash == r->path ? 1 : (int)(slash - r->path), r->path);
        /* its version attribute is read first thing (load_description) */
        rc = add_var(f, fid, (hid_t)r->gid, r->path, parent, r->name);
    }
    return rc;
}

typedef struct walk {
    raster_file *f;
    hid_t fid;
    const char *path; /* of the group iterated */
    int rc;
} walk;

static int walk_group(walk *w, hid_t g, const char *path);

/* One link of a group: raster groups load, other groups are searched
 * (abandoned definitions skipped), anything netCDF would not open as a
 * plain object leaves the file to netCDF. */
static herr_t visit(hid_t g, const char *name, const H5L_info_t *info,
                    void *arg)
{
    walk *w = arg;
    if (info->type != H5L_TYPE_HARD) {
        w->rc = LEAN_FAIL("%s: a link that is not an object", name);
        return -1;
    }
    char path[PATH_BYTES];
    if ((size_t)snprintf(path, sizeof path, "%s/%s",
                         strcmp(w->path, "/") ? w->path : "", name) >=
        sizeof path) {
        w->rc = LEAN_FAIL("%s: path too long", name);
        return -1;
    }
    /* a view's storage is named raster_* (lean_view_scan took no other),
     * and every other group is one the caller's netCDF shows: the rest
     * need no look at their object header (a tenth of a load) */
    int grp;
    if (w->f->view && strncmp(name, "raster_", 7) != 0 &&
        nc_inq_grp_full_ncid(w->f->caller_ncid, path, &grp) != NC_NOERR)
        return 0;
    if (!is_kind(g, name, H5O_TYPE_GROUP))
        return 0;
    hid_t c = H5Gopen2(g, name, H5P_DEFAULT);
    if (c < 0) {
        w->rc = LEAN_FAIL("%s: unreadable group", path);
        return -1;
    }
    if (H5Aexists(c, ATT_VERSION) > 0) {
        w->rc = add_var(w->f, w->fid, c, path, w->path, NULL);
    } else if (H5Aexists(c, ATT_ABANDONED) <= 0) {
        w->rc = walk_group(w, c, path);
    }
    H5Gclose(c);
    return w->rc == RASTER_OK ? 0 : -1;
}

/* The links of group g in netCDF's order: creation order where the group
 * tracks it, else by name. */
static int walk_group(walk *w, hid_t g, const char *path)
{
    walk inner = *w;
    inner.path = path;
    inner.rc = RASTER_OK;
    hid_t gcpl = H5Gget_create_plist(g);
    unsigned order = 0;
    if (gcpl < 0 || H5Pget_link_creation_order(gcpl, &order) < 0)
        order = 0;
    if (gcpl >= 0)
        H5Pclose(gcpl);
    H5_index_t index = order & H5P_CRT_ORDER_TRACKED ? H5_INDEX_CRT_ORDER
                                                     : H5_INDEX_NAME;
    hsize_t at = 0;
    if (H5Literate(g, index, H5_ITER_INC, &at, visit, &inner) < 0 &&
        inner.rc == RASTER_OK)
        inner.rc = LEAN_FAIL("%s: unreadable group", path);
    return inner.rc;
}

static int netcdf_started = NC_EINTERNAL;
static void start_netcdf(void) { netcdf_started = nc_initialize(); }

int lean_open(raster_file *f)
{
    if (!f->path || f->writable || f->vars)
        return raster_fail(RASTER_EINVAL, "no file for a lean open");
    /* netCDF's own start first: it turns HDF5's error printing off, which
     * must not happen later inside a call that turned it off for a while
     * and then restores what it found */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int rc = pthread_once(&once, start_netcdf) == 0 ? netcdf_started : -1;
    if (rc != NC_NOERR)
        return raster_fail(RASTER_ENETCDF, "netCDF did not start: %s",
                           nc_strerror(rc));
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures only decline */
    hid_t fid = (hid_t)fileio_h5(f), root = -1;
    int recorded = f->view && f->view_groups;
    if (fid < 0 ||
        (!recorded && (root = H5Gopen2(fid, "/", H5P_DEFAULT)) < 0))
        rc = LEAN_FAIL("%s: not an HDF5 file", f->path);
    walk w = {f, fid, "/", RASTER_OK};
    if (rc == RASTER_OK && recorded)
        rc = load_recorded(f, fid);
    else if (rc == RASTER_OK)
        rc = walk_group(&w, root, "/");
    if (root >= 0)
        H5Gclose(root);
    if (rc == RASTER_OK && !f->vars)
        rc = LEAN_FAIL("%s holds no raster variable", f->path);
    if (rc == RASTER_OK && f->fd < 0) {
        f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
        if (f->fd < 0)
            rc = raster_fail(RASTER_EIO, "%s: cannot open", f->path);
        else if (f->ident_known) /* a view's: the file it checked */
            rc = file_unchanged(f);
        else
            file_identity_record(f);
    }
    if (rc) {
        var_list_free(&f->vars);
        fileio_close(f);
    } else {
        f->lean = 1;
        f->ncid = -1;
    }
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return rc;
}

int raster_is_storage_link(int64_t loc, const char *name)
{
    /* raster names every group it makes raster_*: other links are not
     * looked at (each look opens the object, a tenth of a plain open) */
    if (!name || strncmp(name, "raster_", 7) != 0)
        return 0;
    /* an object without the attribute answers 0, a failure below 0 */
    return H5Aexists_by_name((hid_t)loc, name, ATT_VERSION, H5P_DEFAULT) > 0 ||
           H5Aexists_by_name((hid_t)loc, name, ATT_ABANDONED, H5P_DEFAULT) > 0;
}

/* ---- views: the storage checked now, the variables loaded on first need */

typedef struct scan {
    raster_file *f;
    int grp;   /* the caller's netCDF group whose HDF5 group is walked */
    const char *path; /* its HDF5 path */
    int rc;
} scan;

/* Records placeholder (grp, varid) and its storage group: link `link` of
 * group path `parent`, open as gid, of variable `var` (both taken). */
static int add_key(raster_file *f, int grp, int varid, const char *parent,
                   const char *link, char *var, hid_t gid,
                   const struct view_group *shape)
{
    struct view_group *groups =
        raster_reallocarray(f->view_groups, f->nview + 1, sizeof *groups);
    if (groups)
        f->view_groups = groups;
    size_t len = strlen(parent) + strlen(link) + 2;
    char *path = groups ? raster_malloc(len) : NULL;
    if (!path) {
        raster_free(var);
        H5Gclose(gid);
        return raster_fail(RASTER_ENOMEM, "out of memory opening %s",
                           f->path);
    }
    snprintf(path, len, "%s/%s", strcmp(parent, "/") ? parent : "", link);
    struct view_group *r = &groups[f->nview++];
    *r = *shape;
    r->grp = grp;
    r->varid = varid;
    r->path = path;
    r->name = var;
    r->gid = gid;
    return RASTER_OK;
}

void lean_view_free(raster_file *f, int all)
{
    for (size_t i = 0; f->view_groups && i < f->nview; i++) {
        struct view_group *r = &f->view_groups[i];
        if (r->gid > 0)
            H5Gclose((hid_t)r->gid);
        r->gid = 0;
        if (all) {
            raster_free(r->path);
            raster_free(r->name);
        }
    }
    if (all) {
        raster_free(f->view_groups);
        f->view_groups = NULL;
        f->nview = 0;
    }
}

/* A storage group the caller's open did not see: complete, with the
 * extent its last serial close recorded, and a placeholder of that extent
 * (so that the caller's netCDF shows the variable's shape). */
static int check_storage(scan *s, hid_t parent, hid_t g, const char *name,
                         int *kept)
{
    int complete = 0;
    unsigned long long ext[RASTER_MAX_DIMS];
    size_t n = 0, nlen = 0;
    char *var = NULL;
    int rc = att_one(g, ATT_COMPLETE, NC_INT, &complete) == 0 &&
                     complete == 1 &&
                     fileio_att(g, ATT_EXTENT, NC_UINT64, ext,
                                RASTER_MAX_DIMS, &n) == 0 &&
                     n >= 2
                 ? att_text(g, ATT_VARIABLE, &var, &nlen)
                 : LEAN_FAIL("%s: not complete, or no extent", name);
    hid_t p = rc == RASTER_OK && strlen(var) == nlen
                  ? H5Dopen2(parent, var, H5P_DEFAULT) /* errors are off */
                  : -1;
    hsize_t dims[RASTER_MAX_DIMS + 1], maxdims[RASTER_MAX_DIMS + 1];
    int same = p >= 0 && fileio_extent(p, dims, maxdims) == (int)n;
    for (size_t i = 0; same && i < n; i++)
        same = dims[i] == ext[i];
    /* the format and the chunk shape, for reads before the load (a
     * version or a layout it cannot tell: read by loading) */
    struct view_group shape = {0};
    if (same && att_one(g, ATT_VERSION, NC_INT, &shape.format) != 0)
        shape.format = 0;
    /* the plist copy only where it serves: a variable holding its values */
    hid_t dcpl = same && shape.format >= 5 ? H5Dget_create_plist(p) : -1;
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
        H5Pget_chunk(dcpl, (int)n, dims) == (int)n) {
        shape.nck = (int)n;
        for (size_t i = 0; i < n; i++)
            shape.ck[i] = (size_t)dims[i];
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (p >= 0)
        H5Dclose(p);
    int varid;
    if (rc == RASTER_OK &&
        (!same || nc_inq_varid(s->grp, var, &varid) != NC_NOERR))
        rc = LEAN_FAIL("%s: placeholder not of the recorded extent", name);
    if (rc == RASTER_OK) { /* the name and the group go to the record */
        *kept = 1;
        return add_key(s->f, s->grp, varid, s->path, name, var, g, &shape);
    }
    raster_free(var);
    return rc;
}

static herr_t scan_link(hid_t g, const char *name, const H5L_info_t *info,
                        void *arg)
{
    scan *s = arg;
    if (info->type != H5L_TYPE_HARD || strncmp(name, "raster_", 7) != 0 ||
        !is_kind(g, name, H5O_TYPE_GROUP))
        return 0;
    hid_t c = H5Gopen2(g, name, H5P_DEFAULT);
    if (c < 0) {
        s->rc = LEAN_FAIL("%s: unreadable group", name);
        return -1;
    }
    int kept = 0;
    if (H5Aexists(c, ATT_VERSION) > 0)
        s->rc = check_storage(s, g, c, name, &kept);
    if (!kept)
        H5Gclose(c);
    return s->rc == RASTER_OK ? 0 : -1;
}

/* The storage groups beside the objects of the caller's group grp (and of
 * the groups below it): every one raster names, checked; a group the
 * caller's handle shows must not be raster's. */
static int scan_group(raster_file *f, hid_t fid, int grp)
{
    size_t len;
    char *path = NULL;
    int ng = 0, rc = RASTER_OK;
    if (nc_inq_grpname_full(grp, &len, NULL) != NC_NOERR ||
        !(path = raster_malloc(len + 1)) ||
        nc_inq_grpname_full(grp, NULL, path) != NC_NOERR ||
        nc_inq_grps(grp, &ng, NULL) != NC_NOERR) {
        raster_free(path);
        return path ? LEAN_FAIL("%s: a group netCDF cannot name", f->path)
                    : raster_fail(RASTER_ENOMEM, "out of memory opening %s",
                                  f->path);
    }
    hid_t g = H5Gopen2(fid, path, H5P_DEFAULT);
    scan s = {f, grp, path, RASTER_OK};
    hsize_t at = 0;
    if (g < 0 || (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &at, scan_link,
                             &s) < 0 &&
                  s.rc == RASTER_OK))
        s.rc = LEAN_FAIL("%s: unreadable group", f->path);
    raster_free(path);
    if (g >= 0)
        H5Gclose(g);
    int *kids = s.rc == RASTER_OK && ng > 0
                    ? raster_reallocarray(NULL, (size_t)ng, sizeof *kids)
                    : NULL;
    if (s.rc == RASTER_OK && ng > 0 && !kids)
        s.rc = raster_fail(RASTER_ENOMEM, "out of memory opening %s",
                           f->path);
    if (kids && nc_inq_grps(grp, NULL, kids) != NC_NOERR)
        s.rc = LEAN_FAIL("%s: unreadable groups", f->path);
    for (int i = 0; kids && s.rc == RASTER_OK && i < ng; i++) {
        nc_type type;
        size_t n;
        if (nc_inq_att(kids[i], NC_GLOBAL, ATT_VERSION, &type, &n) ==
            NC_NOERR)
            s.rc = LEAN_FAIL("%s: a storage group the caller sees",
                             f->path);
        else
            s.rc = scan_group(f, fid, kids[i]);
    }
    raster_free(kids);
    rc = s.rc;
    return rc;
}

int lean_view_scan(raster_file *f, int ncid)
{
    if (!f->path || f->writable || f->vars)
        return raster_fail(RASTER_EINVAL, "no file for a view");
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures only decline */
    hid_t fid = (hid_t)fileio_h5(f);
    int rc = fid < 0 ? LEAN_FAIL("%s: not an HDF5 file", f->path)
                     : scan_group(f, fid, ncid);
    if (rc == RASTER_OK && f->nview == 0)
        rc = LEAN_FAIL("%s holds no raster variable", f->path);
    if (rc)
        lean_view_free(f, 1);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    return rc;
}
