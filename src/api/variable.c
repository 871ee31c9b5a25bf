/*
 * variable.c - a raster variable as the public API shows it: defining
 * (new or adopting a never-written netCDF variable), renaming, attributes,
 * its description (dimensions, mesh, mask) and the check of a box of it.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "compress.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "meta.h"
#include "ncbind.h"
#include "placeholder.h"
#include "raster_internal.h"
#include "state.h"
#include "var.h"
#include "variable.h"

#define DEFAULT_TILE 50

/* Largest index a write may reach along an unlimited dimension: far beyond
 * any real file, and small enough that index arithmetic cannot wrap. */
#define MAX_RECORD_INDEX ((size_t)1 << 48)

/* raster_def_var() and raster_adopt_var(): varid -1 creates the
 * placeholder variable, >= 0 adopts it. */
static int define(raster_file *f, int parent, int varid, const char *name,
                  int xtype, int ndims, const int *dimids, const size_t *chunk,
                  const raster_mask *mask, const raster_compression *comp,
                  raster_var **out)
{
    if (!f->writable)
        return raster_fail(RASTER_EINVAL, "file is read-only");
    if (convert_type_size(xtype) == 0)
        return raster_fail(RASTER_EINVAL,
                           "type %d of %s is not a netCDF numeric type", xtype,
                           name);
    if (ndims < 2 || ndims > RASTER_MAX_DIMS)
        return raster_fail(RASTER_EINVAL,
                           "%s has %d dimensions: raster needs 2 to %d", name,
                           ndims, RASTER_MAX_DIMS);
    size_t len[RASTER_MAX_DIMS], ch[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        int st = nc_inq_dimlen(parent, dimids[i], &len[i]);
        if (st != NC_NOERR)
            return raster_fail(RASTER_EINVAL, "%s: dimension id %d: %s", name,
                               dimids[i], nc_strerror(st));
    }
    size_t ny = len[ndims - 2], nx = len[ndims - 1];
    if (var_nc_dim_unlimited(parent, dimids[ndims - 2]) ||
        var_nc_dim_unlimited(parent, dimids[ndims - 1]))
        return raster_fail(
            RASTER_EINVAL,
            "%s: a grid dimension is unlimited; the mask fixes the grid",
            name);
    if (ny != mask->ny || nx != mask->nx)
        return raster_fail(RASTER_EMASK,
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
        if (ch[i] == 0)
            return raster_fail(RASTER_EINVAL, "%s: chunk size %d is 0", name,
                               i);
    }
    if (ch[ndims - 2] > ny || ch[ndims - 1] > nx)
        return raster_fail(
            RASTER_EINVAL,
            "%s: tile %zu x %zu is larger than the grid %zu x %zu", name,
            ch[ndims - 2], ch[ndims - 1], ny, nx);
    /* the placeholder is chunked so (fixed dimensions clipped): HDF5 takes
     * chunks below 4 GiB only; checked before anything is created */
    double chunk_bytes = (double)convert_type_size(xtype);
    for (int i = 0; i < ndims; i++) {
        int unlim = var_nc_dim_unlimited(parent, dimids[i]);
        chunk_bytes *= (double)(unlim || ch[i] <= len[i] ? ch[i] : len[i]);
    }
    if (chunk_bytes >= 4294967296.0)
        return raster_fail(RASTER_EINVAL,
                           "%s: base chunk of %.0f bytes is larger than "
                           "HDF5's 4 GiB chunk limit",
                           name, chunk_bytes);
    raster_var *v;
    int rc = meta_define(f, parent, varid, name, xtype, ndims, dimids, ch,
                         mask, comp, &v);
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
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!f || !name || !dimids || !mask)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (!file_ok(f))
        return raster_fail(RASTER_EINVAL, "not an open raster file");
    int other;
    if (nc_inq_varid(parent, name, &other) == NC_NOERR ||
        nc_inq_grp_ncid(parent, name, &other) == NC_NOERR)
        return raster_fail(RASTER_EINVAL, "name %s is already in use", name);
    return define(f, parent, -1, name, xtype, ndims, dimids, chunk, mask,
                  NULL, out);
}

int raster_adopt_var(raster_file *f, int parent, int varid,
                     const size_t *chunk, const raster_mask *mask,
                     raster_var **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!f || !mask)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    if (!file_ok(f))
        return raster_fail(RASTER_EINVAL, "not an open raster file");
    char name[NC_MAX_NAME + 1];
    int xtype, ndims, dimids[NC_MAX_VAR_DIMS];
    int st = nc_inq_varndims(parent, varid, &ndims);
    if (st != NC_NOERR)
        return raster_fail(RASTER_EINVAL, "variable %d: %s", varid,
                           nc_strerror(st));
    if (ndims < 2 || ndims > RASTER_MAX_DIMS)
        return raster_fail(
            RASTER_EINVAL,
            "variable %d has %d dimensions: raster needs 2 to %d", varid,
            ndims, RASTER_MAX_DIMS);
    st = nc_inq_var(parent, varid, name, &xtype, NULL, dimids, NULL);
    if (st != NC_NOERR)
        return raster_fail(RASTER_EINVAL, "variable %d: %s", varid,
                           nc_strerror(st));
    if (raster_var_by_varid(f, parent, varid) != NULL)
        return raster_fail(RASTER_EINVAL, "%s is a raster variable already",
                           name);
    if (!f->writable)
        return raster_fail(RASTER_EINVAL, "file is read-only");
    int state = fileio_dataset_state(parent, name);
    if (state == FILEIO_HAS_DATA)
        return raster_fail(
            RASTER_EINVAL,
            "%s holds data already; raster takes only variables never written",
            name);
    /* refused before anything is made: no group is left behind */
    if (state == FILEIO_CREATED)
        return placeholder_too_late(name);
    /* the program's compression (nc_def_var_deflate and the like on it)
     * goes on every store; what raster cannot honour leaves it to netCDF
     * (the shim keeps it plain and says so) */
    raster_compression comp;
    int rc = compress_inq_nc(parent, varid, &comp, name);
    if (rc == RASTER_OK)
        rc = compress_check(&comp, xtype, f->par != NULL, name);
    if (rc)
        return rc;
    return define(f, parent, varid, name, xtype, ndims, dimids, chunk, mask,
                  &comp, out);
}

int raster_var_program_chunking(raster_var *v, int *storage, size_t *sizes)
{
    if (!var_ok(v) || !var_tiled(v))
        return 0;
    unsigned long long rec[RASTER_MAX_DIMS + 1];
    size_t want = (size_t)v->ndims + 1, n = 0;
    int ok;
    if (v->grpid >= 0) {
        nc_type t;
        ok = nc_inq_att(v->grpid, NC_GLOBAL, ATT_CHUNKING, &t, &n) ==
                 NC_NOERR && t == NC_UINT64 && n == want &&
             nc_get_att_ulonglong(v->grpid, NC_GLOBAL, ATT_CHUNKING, rec) ==
                 NC_NOERR;
    } else { /* a lean file's (lean.c): through HDF5 */
        hid_t fid = (hid_t)fileio_h5(v->file);
        H5E_auto2_t efunc;
        void *edata;
        H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        hid_t g = fid >= 0 && v->h5path ? H5Gopen2(fid, v->h5path, H5P_DEFAULT)
                                        : -1;
        ok = g >= 0 && fileio_att(g, ATT_CHUNKING, NC_UINT64, rec,
                                  RASTER_MAX_DIMS + 1, &n) == 0 &&
             n == want;
        if (g >= 0)
            H5Gclose(g);
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    }
    if (!ok || (rec[0] != NC_CHUNKED && rec[0] != NC_CONTIGUOUS &&
                rec[0] != NC_COMPACT))
        return 0;
    if (storage)
        *storage = (int)rec[0];
    for (int i = 0; sizes && i < v->ndims; i++)
        sizes[i] = (size_t)rec[i + 1];
    return 1;
}

int raster_var_rename(raster_var *v, const char *name)
{
    if (!var_ok(v) || !name || !*name)
        return raster_fail(RASTER_EINVAL,
                           "NULL argument or a closed file's variable");
    if (!v->file->writable)
        return raster_fail(RASTER_EINVAL, "%s: file is read-only", v->name);
    /* one along an unlimited dimension: netCDF-C 4.9.0 then fails the
     * close's flush with an HDF error and the file loses that dimension
     * (found in the twenty-third session; cause not yet known): refused
     * until it is */
    int unlimited = 0;
    for (int d = 0; d < var_nouter(v) && var_tiled(v); d++)
        unlimited |= var_nc_dim_unlimited(v->parent, v->dimids[d]);
    if (unlimited)
        return raster_fail_nc(RASTER_EUNSUPPORTED, NC_EINVAL,
                              "%s: renaming a format 5 variable with an "
                              "unlimited dimension is not supported yet "
                              "(rename it in a copy made without raster, "
                              "or write it in format 3)",
                              v->name);
    char *copy = raster_strdup(name);
    if (!copy)
        return raster_fail(RASTER_ENOMEM, "out of memory renaming %s",
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
    if (!file_ok(f) || !name || !*name)
        return raster_fail(RASTER_EINVAL, "NULL argument or a closed file");
    if (!f->writable)
        return raster_fail(RASTER_EINVAL,
                           "renaming a dimension: file is read-only");
    /* renamed already (the shim renames first, as netCDF would) */
    char now[NC_MAX_NAME + 1];
    int st = nc_inq_dimname(ncid, dimid, now);
    if (st == NC_NOERR && strcmp(now, name) != 0)
        st = nc_rename_dim(ncid, dimid, name);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st,
                              "renaming dimension %d to %s: %s", dimid, name,
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

int raster_var_put_att(raster_var *v, const char *name, int xtype, size_t len,
                       const void *value)
{
    if (!var_ok(v) || !name)
        return raster_fail(RASTER_EINVAL,
                           "NULL argument or a closed file's variable");
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    int is_fill = strcmp(name, "_FillValue") == 0;
    if (is_fill && (xtype != v->xtype || len != 1))
        return raster_fail(
            RASTER_EINVAL,
            "%s: _FillValue must be one value of the variable's type",
            v->name);
    int st;
    /* A fill value goes to the stores first: they refuse it once they hold
     * data, and then the variable must keep its old one. */
    for (size_t s = 0; is_fill && s <= v->nregions; s++) {
        if (v->store_var[s] < 0)
            continue;
        st = nc_put_att(v->store_grp[s], v->store_var[s], "_FillValue",
                        xtype, 1, value);
        if (st != NC_NOERR)
            return raster_fail_nc(RASTER_ENETCDF, st, "%s: fill value: %s",
                                  v->name, nc_strerror(st));
    }
    st = nc_put_att(v->parent, v->varid, name, xtype, len, value);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: attribute %s: %s",
                              v->name, name, nc_strerror(st));
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
    if (!v)
        return raster_fail(RASTER_EINVAL, "NULL variable");
    return meta_ensure_layout(v);
}

int raster_var_view_inq(const raster_var *v, char *name, int *xtype,
                        int *ndims, int *dimids)
{
    if (!v)
        return raster_fail(RASTER_EINVAL, "NULL variable");
    /* loaded lean as a view: load_var checked the type and rank against
     * the placeholder, and its dimension ids against both the placeholder's
     * scales and the caller's handle (lean.c, view_dims); the caller's
     * varid was found by this name (ncbind.c, view_ids) */
    if (!v->file->view || !v->h5path)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: not a variable of a "
                           "view loaded lean", v->name);
    if (name)
        memcpy(name, v->name, strlen(v->name) + 1);
    if (xtype)
        *xtype = (int)v->xtype;
    if (ndims)
        *ndims = v->ndims;
    for (int i = 0; dimids && i < v->ndims; i++)
        dimids[i] = v->dimids[i];
    return RASTER_OK;
}

int raster_var_dims(const raster_var *v, int *dimids, size_t *shape,
                    size_t *chunk)
{
    if (!v)
        return raster_fail(RASTER_EINVAL, "NULL variable");
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
            if (st != NC_NOERR)
                return raster_fail_nc(RASTER_ENETCDF, st, "%s: %s", v->name,
                                      nc_strerror(st));
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

/* Checks start/count/stride against shape (v's outer lengths filled in;
 * an unlimited one a write may extend raised to MAX_RECORD_INDEX); the
 * grid is the mask's. Failures record netCDF's status for the same request
 * (strides first, then dimension by dimension: NC_ESTRIDE,
 * NC_EINVALCOORDS, NC_EEDGE). */
static int check_box(const raster_var *v, size_t *shape, const size_t *start,
                     const size_t *count, const ptrdiff_t *stride)
{
    shape[v->ndims - 2] = v->ny;
    shape[v->ndims - 1] = v->nx;
    for (int i = 0; stride && i < v->ndims; i++)
        if (stride[i] < 1)
            return raster_fail_nc(RASTER_EINVAL, NC_ESTRIDE,
                                  "%s: stride %td in dimension %d", v->name,
                                  stride[i], i);
    for (int i = 0; i < v->ndims; i++) {
        ptrdiff_t step = stride ? stride[i] : 1;
        size_t limit = shape[i];
        if (start[i] > limit || (start[i] == limit && count[i] > 0))
            return raster_fail_nc(
                RASTER_EINVAL, NC_EINVALCOORDS,
                "%s: start %zu beyond length %zu in dimension %d", v->name,
                start[i], limit, i);
        if (count[i] == 0)
            continue;
        /* last = start + (count - 1) * step, refusing any wrap-around */
        size_t span;
        if (raster_mul_overflows(count[i] - 1, (size_t)step, &span) ||
            span >= limit - start[i])
            return raster_fail_nc(RASTER_EINVAL, NC_EEDGE,
                                  "%s: start %zu count %zu stride %td run "
                                  "past length %zu in dimension %d",
                                  v->name, start[i], count[i], step, limit, i);
    }
    return RASTER_OK;
}

int var_check_read(const raster_var *v, const size_t *start,
                   const size_t *count, const ptrdiff_t *stride)
{
    size_t shape[RASTER_MAX_DIMS];
    /* lengths that hold the box: netCDF asked only past the last seen */
    int rc = var_read_shape(v, start, count, stride, shape);
    return rc ? rc : check_box(v, shape, start, count, stride);
}

int var_check_write(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride)
{
    size_t shape[RASTER_MAX_DIMS];
    /* no record count needed (see var.h: wshape) */
    int rc = var_write_shape(v, shape);
    if (rc)
        return rc;
    for (int i = 0; i < var_nouter(v); i++)
        if (var_write_unlimited(v, i))
            shape[i] = MAX_RECORD_INDEX;
    return check_box(v, shape, start, count, stride);
}

/* 1 when a and b ask for the same (filters compared up to their count). */
static int same_compression(const raster_compression *a,
                            const raster_compression *b)
{
    if (a->shuffle != b->shuffle || a->deflate_level != b->deflate_level ||
        a->fletcher32 != b->fletcher32 ||
        a->quantize_mode != b->quantize_mode ||
        a->quantize_nsd != b->quantize_nsd || a->nfilters != b->nfilters)
        return 0;
    for (unsigned i = 0; i < a->nfilters; i++)
        if (a->filters[i].id != b->filters[i].id ||
            a->filters[i].nparams != b->filters[i].nparams ||
            memcmp(a->filters[i].params, b->filters[i].params,
                   a->filters[i].nparams * sizeof *a->filters[i].params))
            return 0;
    return 1;
}

int raster_var_set_compression(raster_var *v, const raster_compression *c)
{
    if (!var_ok(v))
        return raster_fail(RASTER_EINVAL, "not a raster variable");
    static const raster_compression plain;
    raster_compression want = c ? *c : plain;
    /* netCDF's flags: any nonzero value sets them */
    want.shuffle = want.shuffle != 0;
    want.fletcher32 = want.fletcher32 != 0;
    if (!want.quantize_mode)
        want.quantize_nsd = 0;
    int rc = meta_comp(v);
    if (rc)
        return rc;
    if (same_compression(&v->comp, &want))
        return RASTER_OK;
    if (!v->file->writable)
        return raster_fail(RASTER_EINVAL, "%s: file is read-only", v->name);
    if (v->comp_fixed)
        return raster_fail_nc(RASTER_EINVAL, NC_ELATEDEF, "%s: written (or "
                              "in the file before this open): its stores' "
                              "filters are fixed", v->name);
    rc = compress_check(&want, v->xtype, v->file->par != NULL, v->name);
    if (rc)
        return rc;
    /* netCDF adds filters to a variable, and changes their parameters,
     * but takes none off */
    const raster_compression *o = &v->comp;
    int kept = (!o->shuffle || want.shuffle) &&
               (!o->fletcher32 || want.fletcher32) &&
               (!o->deflate_level || want.deflate_level) &&
               o->nfilters <= want.nfilters;
    for (unsigned i = 0; kept && i < o->nfilters; i++)
        kept = o->filters[i].id == want.filters[i].id;
    if (!kept)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: that takes a filter "
                           "off its stores, which netCDF cannot", v->name);
    return meta_set_compression(v, &want);
}

int raster_var_compression(const raster_var *v, raster_compression *out)
{
    if (!var_ok(v) || !out)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    int rc = meta_comp((raster_var *)v);
    if (rc)
        return rc;
    *out = v->comp;
    return RASTER_OK;
}
