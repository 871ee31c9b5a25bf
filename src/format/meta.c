/*
 * meta.c - Metadata Handler (docs/FORMAT.md; reads formats 1 to 4): a
 * variable's storage group found, loaded and checked. Its definition is
 * define.c's, its index tables tables.c's.
 *
 * Writable files rebuild the mesh and layout from the stored mask and
 * compare every stored table with them at open; read-only files read
 * attributes only and are checked as reads first use each part
 * (regions.c), the full check on demand (meta_ensure_layout).
 */
#include "meta.h"

#include <hdf5.h>
#include <netcdf_filter.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compress.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "mask.h"
#include "ncbind.h"
#include "raster_internal.h"
#include "regions.h"
#include "state.h"
#include "tables.h"
#include "tilestore.h"

int meta_default_format = RASTER_FORMAT_AUTO;

int meta_is_raster_group(int grpid)
{
    nc_type type;
    size_t len;
    return nc_inq_att(grpid, NC_GLOBAL, ATT_VERSION, &type, &len) ==
           NC_NOERR;
}

int meta_is_abandoned_group(int grpid)
{
    nc_type type;
    size_t len;
    return nc_inq_att(grpid, NC_GLOBAL, ATT_ABANDONED, &type, &len) ==
           NC_NOERR;
}

static int get_int_att(int g, const char *name, int *value)
{
    nc_type type;
    size_t len;
    if (nc_inq_att(g, NC_GLOBAL, name, &type, &len) != NC_NOERR || len != 1 ||
        type != NC_INT)
        return -1;
    return nc_get_att_int(g, NC_GLOBAL, name, value) == NC_NOERR ? 0 : -1;
}

/* Finds the store of group g (region group or Mixed_Chunks). Its type and
 * shape are checked now, or with `lazy` when a read first touches it
 * (meta_check_store): netCDF reads a variable's HDF5 metadata and all its
 * attributes on the first inquiry about it, which for every store of a
 * file was a fifth of raster_open. */
static int load_store(raster_var *v, int g, size_t s, int lazy)
{
    v->store_grp[s] = g;
    if (v->store_cells[s] == 0)
        return RASTER_OK;
    int varid;
    if (nc_inq_varid(g, "data", &varid) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: data of store %zu missing",
                           v->name, s);
    v->store_var[s] = varid;
    return lazy ? RASTER_OK : meta_check_store(v, s);
}

static int check_store(raster_var *v, size_t s);

/* Format 5: the mixed store holds every mixed tile whole, nmixed of them
 * (the rows of `mixed_chunks`). */
static int tiled_mixed_store(raster_var *v, size_t nmixed)
{
    size_t cells;
    if (raster_mul_overflows(nmixed, tilestore_cut(v), &cells) ||
        nmixed > v->ny * v->nx)
        return raster_fail(RASTER_EFORMAT, "%s: %zu mixed chunks", v->name,
                           nmixed);
    v->store_cells[v->nregions] = cells;
    return RASTER_OK;
}

/* Format 5: each store with cells is the variable itself (tilestore.h),
 * the mixed tiles counted from `mixed_chunks` (no such table: none). */
static int tiled_stores(raster_var *v)
{
    size_t nmixed = 0;
    int dim, st = nc_inq_dimid(v->grpid, "mixed_chunk", &dim);
    if (st == NC_NOERR)
        st = nc_inq_dimlen(v->grpid, dim, &nmixed);
    else if (st == NC_EBADDIM)
        st = NC_NOERR;
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_EFORMAT, st, "%s: unreadable mixed "
                              "chunks: %s", v->name, nc_strerror(st));
    int rc = tiled_mixed_store(v, nmixed);
    if (rc)
        return rc;
    for (size_t s = 0; s <= v->nregions; s++)
        if (v->store_cells[s] > 0) {
            v->store_grp[s] = v->parent;
            v->store_var[s] = v->varid;
        }
    return RASTER_OK;
}

int meta_check_store(raster_var *v, size_t s)
{
    lazy_lock(v->file);
    int rc = check_store(v, s);
    lazy_unlock(v->file);
    return rc;
}

static int check_store(raster_var *v, size_t s)
{
    if (v->addr[s].checked)
        return RASTER_OK;
    int rc = file_netcdf(v->file);
    if (rc)
        return rc;
    /* format 5: the stores are tiles of the variable itself */
    if (v->store_var[s] < 0 || v->format >= 5)
        return RASTER_OK;
    int g = v->store_grp[s], varid = v->store_var[s], ndims;
    int dimids[RASTER_MAX_DIMS + 1];
    nc_type type;
    size_t cells;
    int no = var_nouter(v);
    if (nc_inq_varndims(g, varid, &ndims) != NC_NOERR || ndims != no + 1 ||
        nc_inq_var(g, varid, NULL, &type, NULL, dimids, NULL) != NC_NOERR ||
        type != v->xtype ||
        nc_inq_dimlen(g, dimids[no], &cells) != NC_NOERR ||
        cells != v->store_cells[s])
        return raster_fail(RASTER_EFORMAT, "%s: data of store %zu of the "
                           "wrong type or shape", v->name, s);
    for (int i = 0; i < no; i++)
        if (dimids[i] != v->dimids[i])
            return raster_fail(RASTER_EFORMAT,
                               "%s: store %zu has the wrong outer dimensions",
                               v->name, s);
    if ((rc = meta_store_region(v, s, varid)) != RASTER_OK)
        return rc;
    v->addr[s].checked = 1;
    return RASTER_OK;
}

int meta_store_region(const raster_var *v, size_t s, int varid)
{
    if (v->format < 3 || s >= v->nregions || var_tiled(v))
        return RASTER_OK;
    int id = 0, g = v->store_grp[s];
    nc_type type;
    size_t len;
    /* with checksums, the id inside the store (define_store); else the
     * group's: a read finds a region's group by the name its id gives */
    int ok = v->sums
                 ? nc_inq_att(g, varid, SUMS_STORE_ATT, &type, &len) ==
                           NC_NOERR &&
                       type == NC_INT && len == 1 &&
                       nc_get_att_int(g, varid, SUMS_STORE_ATT, &id) ==
                           NC_NOERR
                 : get_int_att(g, "region_id", &id) == 0;
    if (!ok || id != v->regions[s].id)
        return raster_fail(RASTER_EFORMAT, "%s: the group of region %d "
                           "holds the data of another region, or says "
                           "nothing of it", v->name, (int)v->regions[s].id);
    return RASTER_OK;
}

/* Reads the description attributes of group g into the arguments;
 * *renamed is 1 when a dimension's name is no longer the one stored. */
static int load_description(int g, const char *name, int *format,
                            int *xtype, int *ndims, int *dimids,
                            size_t *chunk, int *renamed)
{
    int version;
    if (get_int_att(g, ATT_VERSION, &version) != 0)
        return raster_fail(RASTER_EFORMAT, "%s: unreadable format version",
                           name);
    if (version < 1 || version > RASTER_FORMAT_VERSION)
        return raster_fail(
            RASTER_EUNSUPPORTED,
            "%s: raster format version %d (this raster reads 1 to %d)", name,
            version, RASTER_FORMAT_VERSION);
    *format = version;
    if (get_int_att(g, "raster_type", xtype) != 0 ||
        convert_type_size(*xtype) == 0)
        return raster_fail(RASTER_EFORMAT,
                           "%s: missing or unsupported value type", name);
    size_t len;
    nc_type type;
    char dims[RASTER_MAX_DIMS * (NC_MAX_NAME + 1) + 1];
    if (nc_inq_att(g, NC_GLOBAL, "raster_dims", &type, &len) != NC_NOERR ||
        type != NC_CHAR || len == 0 || len >= sizeof dims)
        return raster_fail(RASTER_EFORMAT, "%s: missing dimension names",
                           name);
    if (nc_get_att_text(g, NC_GLOBAL, "raster_dims", dims) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: unreadable dimensions", name);
    dims[len] = '\0';
    *ndims = 0;
    char *save = NULL, *dimnames[RASTER_MAX_DIMS];
    for (char *tok = strtok_r(dims, "/", &save); tok;
         tok = strtok_r(NULL, "/", &save)) {
        if (*ndims == RASTER_MAX_DIMS)
            return raster_fail(RASTER_EFORMAT, "%s: too many dimensions",
                               name);
        dimnames[*ndims] = tok;
        (*ndims)++;
    }
    if (*ndims < 2)
        return raster_fail(RASTER_EFORMAT, "%s: fewer than 2 dimensions",
                           name);
    /* each stored id must name a visible dimension; the ids rule and the
     * names only record them: a dimension renamed without raster (ncrename,
     * netCDF's own nc_rename_dim) keeps its id, and the placeholder, mask
     * and stores are checked against the ids and their lengths */
    if (nc_inq_att(g, NC_GLOBAL, "raster_dimids", &type, &len) != NC_NOERR ||
        type != NC_INT || len != (size_t)*ndims ||
        nc_get_att_int(g, NC_GLOBAL, "raster_dimids", dimids) != NC_NOERR)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: missing dimension ids, or %d of them for %d dimension names",
            name, (int)len, *ndims);
    *renamed = 0;
    for (int i = 0; i < *ndims; i++) {
        char dn[NC_MAX_NAME + 1];
        if (nc_inq_dimname(g, dimids[i], dn) != NC_NOERR)
            return raster_fail(RASTER_EFORMAT,
                               "%s: no dimension of id %d (stored as '%s')",
                               name, dimids[i], dimnames[i]);
        *renamed |= strcmp(dn, dimnames[i]) != 0;
    }
    unsigned long long ch[RASTER_MAX_DIMS];
    if (nc_inq_att(g, NC_GLOBAL, "raster_chunk", &type, &len) != NC_NOERR ||
        type != NC_UINT64 || len != (size_t)*ndims ||
        nc_get_att_ulonglong(g, NC_GLOBAL, "raster_chunk", ch) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: missing chunk shape", name);
    for (int i = 0; i < *ndims; i++) {
        if (ch[i] == 0 || ch[i] > SIZE_MAX)
            return raster_fail(RASTER_EFORMAT, "%s: bad chunk size %llu", name,
                               ch[i]);
        chunk[i] = (size_t)ch[i];
    }
    return RASTER_OK;
}

/* Children of g that carry a region_id: region groups. */
static size_t count_region_groups(int g)
{
    int n = 0;
    nc_type type;
    size_t len, count = 0;
    if (nc_inq_grps(g, &n, NULL) != NC_NOERR)
        return SIZE_MAX;
    int *ids = raster_reallocarray(NULL, n > 0 ? (size_t)n : 1, sizeof *ids);
    if (!ids || nc_inq_grps(g, NULL, ids) != NC_NOERR)
        count = SIZE_MAX;
    for (int i = 0; i < n && count != SIZE_MAX; i++)
        count += nc_inq_att(ids[i], NC_GLOBAL, "region_id", &type, &len) ==
                 NC_NOERR;
    raster_free(ids);
    return count;
}

/* 1 when region group rg's cell counts are those of the layout's ri. */
static int same_counts(int rg, const region_info *ri)
{
    static const char *const names[3] = {"pure_cells", "mixed_cells",
                                         "mixed_offset"};
    size_t want[3] = {ri->pure_cells, ri->mixed_cells, ri->mixed_off};
    for (int i = 0; i < 3; i++) {
        nc_type type;
        size_t len;
        unsigned long long got;
        if (nc_inq_att(rg, NC_GLOBAL, names[i], &type, &len) != NC_NOERR ||
            type != NC_UINT64 || len != 1 ||
            nc_get_att_ulonglong(rg, NC_GLOBAL, names[i], &got) != NC_NOERR ||
            got != want[i])
            return 0;
    }
    return 1;
}

/* A read-only variable of format 2 or 3: regions from the region groups'
 * attributes, runs left on disk, no mask values, no mesh. */
static int var_lazy(const char *name, int g, int maskid, int format,
                    int xtype, int ndims, const int *dimids,
                    const size_t *chunk, size_t ny, size_t nx,
                    raster_var **out)
{
    *out = NULL;
    raster_var *v = raster_calloc(1, sizeof *v);
    if (!v)
        return raster_fail(RASTER_ENOMEM, "out of memory loading %s", name);
    v->magic = VAR_MAGIC;
    int rc = RASTER_OK, *grps = NULL, n = 0;
    v->name = raster_strdup(name);
    if (!v->name) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", name);
        goto fail;
    }
    v->format = format;
    v->grpid = g;
    v->xtype = xtype;
    v->elem = convert_type_size(xtype);
    v->ndims = ndims;
    memcpy(v->dimids, dimids, (size_t)ndims * sizeof *dimids);
    memcpy(v->chunk, chunk, (size_t)ndims * sizeof *chunk);
    convert_default_fill(xtype, v->fill);
    v->ny = ny;
    v->nx = nx;
    rc = mask_describe_ncid(g, maskid, name, &v->mask);
    if (rc == RASTER_OK && nc_inq_grps(g, &n, NULL) != NC_NOERR)
        rc = raster_fail(RASTER_EFORMAT, "%s: unreadable groups", name);
    if (rc)
        goto fail;
    grps = raster_reallocarray(NULL, n > 0 ? (size_t)n : 1, sizeof *grps);
    if (!grps) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", name);
        goto fail;
    }
    rc = regions_from_file(v, g, format < 4 ? grps : NULL);
    if (rc == RASTER_OK)
        rc = define_alloc_stores(v);
    for (size_t r = 0; rc == RASTER_OK && r < v->nregions && format < 4; r++)
        v->store_grp[r] = grps[r];
    raster_free(grps);
    if (rc)
        goto fail;
    *out = v;
    return RASTER_OK;
fail:
    var_free(v);
    return rc;
}

int meta_var_lean(raster_file *f, const meta_desc *d, raster_mask **mask,
                  const long long *summary, size_t len, raster_var **out)
{
    *out = NULL;
    raster_var *v = raster_calloc(1, sizeof *v);
    if (!v)
        return raster_fail(RASTER_ENOMEM, "out of memory loading %s", d->name);
    v->magic = VAR_MAGIC;
    int rc = RASTER_OK;
    v->name = raster_strdup(d->name);
    v->h5path = raster_strdup(d->h5path);
    if (!v->name || !v->h5path) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory loading %s", d->name);
        goto fail;
    }
    v->file = f;
    v->format = d->format;
    v->grpid = v->parent = v->varid = -1;
    v->xtype = d->xtype;
    v->elem = convert_type_size(d->xtype);
    v->ndims = d->ndims;
    memcpy(v->dimids, d->dimids, (size_t)d->ndims * sizeof *d->dimids);
    memcpy(v->chunk, d->chunk, (size_t)d->ndims * sizeof *d->chunk);
    memcpy(v->fill, d->fill, sizeof v->fill);
    memcpy(v->outer, d->outer, (size_t)var_nouter(v) * sizeof *v->outer);
    memcpy(v->unlimited, d->unlimited, sizeof v->unlimited);
    v->outer_known = 1;
    v->ny = d->ny;
    v->nx = d->nx;
    v->materialized = 1;
    v->sums = d->sums;
    v->comp = d->comp;
    v->comp_later = d->comp_later;
    v->comp_fixed = 1;
    v->placeholder_fits = d->placeholder_fits;
    v->mask = *mask;
    *mask = NULL;
    rc = regions_from_summary(v, summary, len);
    if (rc == RASTER_OK)
        rc = define_alloc_stores(v);
    if (rc == RASTER_OK && var_tiled(v)) /* whole mixed tiles (tilestore.h) */
        rc = tiled_mixed_store(v, d->mixed_tiles);
    if (rc)
        goto fail;
    *out = v;
    return RASTER_OK;
fail:
    var_free(v);
    return rc;
}

/* 1 when variable varid of parent has type xtype and dimension ids
 * dimids[0..ndims) and carries raster's marker filter, or (format 5,
 * `holds`: the variable holds its values, no marker) raster's note. */
static int marked_placeholder(int parent, int varid, int xtype, int ndims,
                              const int *dimids, int holds)
{
    int t, nd, ids[NC_MAX_VAR_DIMS];
    unsigned int filters[32];
    size_t nf = 0;
    if (nc_inq_varndims(parent, varid, &nd) != NC_NOERR || nd != ndims ||
        nc_inq_var(parent, varid, NULL, &t, NULL, ids, NULL) != NC_NOERR ||
        t != xtype || memcmp(ids, dimids, (size_t)nd * sizeof *ids) != 0)
        return 0;
    if (holds) {
        nc_type at;
        size_t len;
        return nc_inq_att(parent, varid, RASTER_NOTE_ATT, &at, &len) ==
                   NC_NOERR && at == NC_CHAR;
    }
    if (nc_inq_var_filter_ids(parent, varid, &nf, NULL) != NC_NOERR ||
        nf > sizeof filters / sizeof *filters ||
        nc_inq_var_filter_ids(parent, varid, NULL, filters) != NC_NOERR)
        return 0;
    for (size_t i = 0; i < nf; i++)
        if (raster_filter_is_placeholder(filters[i]))
            return 1;
    return 0;
}

/* 1 when a storage group of parent names variable `name` as its own. */
static int claimed(int parent, const char *name)
{
    int n = 0, *ids = NULL, hit = 0;
    if (nc_inq_grps(parent, &n, NULL) != NC_NOERR || n <= 0 ||
        !(ids = raster_reallocarray(NULL, (size_t)n, sizeof *ids)) ||
        nc_inq_grps(parent, NULL, ids) != NC_NOERR)
        n = 0;
    for (int i = 0; i < n && !hit; i++) {
        char got[NC_MAX_NAME + 1];
        nc_type type;
        size_t len;
        hit = meta_is_raster_group(ids[i]) &&
              nc_inq_att(ids[i], NC_GLOBAL, ATT_VARIABLE, &type, &len) ==
                  NC_NOERR && type == NC_CHAR && len == strlen(name) &&
              nc_get_att_text(ids[i], NC_GLOBAL, ATT_VARIABLE, got) ==
                  NC_NOERR && memcmp(got, name, len) == 0;
    }
    raster_free(ids);
    return hit;
}

/* The placeholder of a storage group describing variable `name` of group
 * parent: the variable of that name (its type and shape checked by the
 * caller); when none has it, the variable was renamed without raster
 * (ncrename, netCDF's own nc_rename_var), and it is the one variable of
 * parent that carries raster's marker (`holds`, format 5: raster's note),
 * has the stored type and dimension ids, and that no storage group names.
 * *varid and `found` (its name) are set. */
static int find_placeholder(int parent, const char *name, int xtype,
                            int ndims, const int *dimids, int holds,
                            int *varid, char *found)
{
    if (nc_inq_varid(parent, name, varid) == NC_NOERR) {
        strcpy(found, name);
        return RASTER_OK;
    }
    int nvars = 0, hits = 0;
    if (nc_inq_nvars(parent, &nvars) != NC_NOERR)
        nvars = 0;
    for (int i = 0; i < nvars; i++) {
        char vn[NC_MAX_NAME + 1];
        if (!marked_placeholder(parent, i, xtype, ndims, dimids, holds) ||
            nc_inq_varname(parent, i, vn) != NC_NOERR || claimed(parent, vn))
            continue;
        if (hits++ == 0) {
            *varid = i;
            strcpy(found, vn);
        }
    }
    if (hits > 1)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: its placeholder variable is missing, and %d variables could "
            "be it, renamed without raster; rename it back to %s",
            name, hits, name);
    if (hits == 0)
        return raster_fail(RASTER_EFORMAT,
                           "%s: its placeholder variable is missing or of "
                           "another type or shape",
                           name);
    return RASTER_OK;
}

/* After a rename without raster: the variable takes its placeholder's
 * name `found`, and a writable file records the new names. */
static int adopt_new_names(raster_var *v, const char *found, int renamed)
{
    int placeholder_renamed = strcmp(found, v->name) != 0;
    if (placeholder_renamed) {
        char *copy = raster_strdup(found);
        if (!copy)
            return raster_fail(RASTER_ENOMEM, "out of memory loading %s",
                               found);
        raster_free(v->name);
        v->name = copy;
    }
    if (!v->file->writable)
        return RASTER_OK;
    int st = placeholder_renamed
                 ? nc_put_att_text(v->grpid, NC_GLOBAL, ATT_VARIABLE,
                                   strlen(found), found)
                 : NC_NOERR;
    if (st != NC_NOERR)
        return tables_ncfail(st, "recording the new name of", found);
    return renamed ? meta_store_dim_names(v) : RASTER_OK;
}

int meta_load(raster_file *f, int g, int need_complete, raster_var **out)
{
    *out = NULL;
    char name[NC_MAX_NAME + 1];
    size_t nlen;
    nc_type ntype;
    /* an empty name (netCDF 4.9.0 reads one back as one stray byte) names
     * no variable: as after a rename, find_placeholder looks for it */
    if (nc_inq_att(g, NC_GLOBAL, ATT_VARIABLE, &ntype, &nlen) != NC_NOERR ||
        ntype != NC_CHAR || nlen > NC_MAX_NAME ||
        nc_get_att_text(g, NC_GLOBAL, ATT_VARIABLE, name) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT,
                           "raster group without a readable %s attribute",
                           ATT_VARIABLE);
    name[nlen] = '\0';
    int complete = 0;
    if (get_int_att(g, ATT_COMPLETE, &complete) != 0)
        complete = 0;
    if (need_complete && complete != 1)
        return raster_fail(RASTER_EINCOMPLETE,
                           "%s: the file was not closed after writing (no "
                           "completeness marker); refusing to serve it",
                           name);
    int xtype = 0, ndims = 0, dimids[RASTER_MAX_DIMS], maskid, format = 0;
    size_t chunk[RASTER_MAX_DIMS];
    int renamed = 0;
    int rc = load_description(g, name, &format, &xtype, &ndims, dimids,
                              chunk, &renamed);
    if (rc)
        return rc;
    if (nc_inq_varid(g, "mask", &maskid) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: no stored mask", name);
    int mdims[2], mnd;
    size_t gy = 0, gx = 0;
    if (nc_inq_varndims(g, maskid, &mnd) != NC_NOERR || mnd != 2 ||
        nc_inq_vardimid(g, maskid, mdims) != NC_NOERR ||
        mdims[0] != dimids[ndims - 2] || mdims[1] != dimids[ndims - 1] ||
        nc_inq_dimlen(g, dimids[ndims - 2], &gy) != NC_NOERR ||
        nc_inq_dimlen(g, dimids[ndims - 1], &gx) != NC_NOERR || gy == 0 ||
        gx == 0 || chunk[ndims - 2] > gy || chunk[ndims - 1] > gx ||
        gy > UINT32_MAX || gx > UINT32_MAX ||
        var_nc_dim_unlimited(g, dimids[ndims - 2]) ||
        var_nc_dim_unlimited(g, dimids[ndims - 1]))
        return raster_fail(RASTER_EFORMAT,
                           "%s: stored mask does not match the variable's "
                           "grid or tile, or the grid is unlimited",
                           name);
    raster_var *v;
    /* read-only files of format 2 and 3 are served from the regions' runs: no
     * mask to read, no mesh to build; the tables are checked as they are
     * first used */
    int lazy = !f->writable && format >= 2;
    if (lazy) {
        rc = var_lazy(name, g, maskid, format, xtype, ndims, dimids, chunk, gy,
                      gx, &v);
    } else {
        raster_mask *mask;
        rc = mask_read_ncid(g, maskid, name, &mask);
        if (rc == RASTER_EMASK) {
            char why[256];
            snprintf(why, sizeof why, "%s", raster_errmsg());
            return raster_fail(RASTER_EFORMAT, "%s: stored mask unusable: %s",
                               name, why);
        }
        if (rc)
            return rc;
        rc = define_var_new(name, xtype, ndims, dimids, chunk, format,
                            SIZE_MAX, &mask, mask, &v);
        raster_mask_free(mask); /* NULL when v took it */
    }
    if (rc)
        return rc;
    v->format = format;
    v->file = f;
    v->grpid = g;
    v->materialized = 1;
    if (nc_inq_grp_parent(g, &v->parent) != NC_NOERR) {
        rc = raster_fail(RASTER_EFORMAT, "%s: no parent group", name);
        goto fail;
    }
    /* the placeholder variable: same name, type and dimensions */
    char found[NC_MAX_NAME + 1];
    rc = find_placeholder(v->parent, name, xtype, ndims, dimids,
                          var_tiled(v), &v->varid, found);
    if (rc == RASTER_OK)
        rc = adopt_new_names(v, found, renamed);
    if (rc)
        goto fail;
    int ptype, pndims, pdims[NC_MAX_VAR_DIMS];
    if (nc_inq_varndims(v->parent, v->varid, &pndims) != NC_NOERR ||
        pndims != ndims ||
        nc_inq_var(v->parent, v->varid, NULL, &ptype, NULL, pdims, NULL) !=
            NC_NOERR || ptype != xtype ||
        memcmp(pdims, dimids, (size_t)ndims * sizeof *pdims) != 0) {
        rc = raster_fail(RASTER_EFORMAT, "%s: its placeholder variable is "
                         "missing or of another type or shape", name);
        goto fail;
    }
    nc_type ftype;
    size_t flen;
    if (nc_inq_att(v->parent, v->varid, "_FillValue", &ftype, &flen) ==
            NC_NOERR && ftype == xtype && flen == 1 &&
        nc_get_att(v->parent, v->varid, "_FillValue", v->fill) != NC_NOERR) {
        rc = raster_fail(RASTER_EFORMAT, "%s: unreadable fill value", name);
        goto fail;
    }
    /* its compression, as the placeholder keeps it (issue #23) */
    v->comp_fixed = 1;
    if ((rc = compress_inq_nc(v->parent, v->varid, &v->comp, name)) !=
        RASTER_OK)
        goto fail;
    /* format 4 has no region groups: its summary is all */
    for (size_t r = 0; r < v->nregions && rc == RASTER_OK && format < 4;
         r++) {
        char gname[32];
        int rg = v->store_grp[r], id;
        fileio_group_name(v->regions[r].id, gname, sizeof gname);
        /* a region from the summary was found by its group's name */
        int summarised = v->regions[r].chunk_rows > 0;
        if ((!lazy && (nc_inq_grp_ncid(g, gname, &rg) != NC_NOERR ||
                       !same_counts(rg, &v->regions[r]))) ||
            (!summarised && (get_int_att(rg, "region_id", &id) != 0 ||
                             id != v->regions[r].id))) {
            rc = raster_fail(RASTER_EFORMAT, "%s: region group %s missing or "
                             "inconsistent", name, gname);
            break;
        }
        rc = load_store(v, rg, r, lazy);
    }
    if (rc == RASTER_OK && var_tiled(v)) {
        rc = tiled_stores(v);
    } else if (rc == RASTER_OK) {
        int mg;
        if (nc_inq_grp_ncid(g, MIXED_GROUP, &mg) != NC_NOERR)
            rc = raster_fail(RASTER_EFORMAT, "%s: no %s group", name,
                             MIXED_GROUP);
        else
            rc = load_store(v, mg, v->nregions, lazy);
    }
    if (rc == RASTER_OK && !lazy &&
        count_region_groups(g) != (format < 4 ? v->nregions : 0))
        rc = raster_fail(RASTER_EFORMAT, "%s: more region groups than the "
                         "mask has regions", name);
    if (rc == RASTER_OK && !lazy)
        rc = tables_io(v, 0);
    if (rc)
        goto fail;
    /* mesh and layout hold all a read needs; a file that cannot change
     * gives the mask back on demand */
    if (!f->writable && !lazy)
        mask_drop_values(v->mask, g, maskid);
    *out = v;
    return RASTER_OK;
fail:
    var_free(v);
    return rc;
}

static int ensure_layout(raster_var *v);

int meta_ensure_layout(raster_var *v)
{
    lazy_lock(v->file);
    int rc = ensure_layout(v);
    lazy_unlock(v->file);
    return rc;
}

static int ensure_layout(raster_var *v)
{
    if (v->lay)
        return RASTER_OK;
    int rc = file_netcdf(v->file); /* the mask's values, the tables */
    if (rc)
        return rc;
    const int32_t *ids = raster_mask_values(v->mask);
    if (!ids)
        return raster_fail(RASTER_ENOMEM, "%s: cannot read its mask back",
                           v->name);
    /* The check runs on a twin sharing v's stores and mask: readers on
     * other threads go on using v's loaded region table and runs, which
     * stay; only the mesh and layout are published, once checked. */
    raster_var t = *v;
    t.regions = NULL;
    t.nregions = 0;
    t.table_from_layout = 0;
    t.mesh = NULL;
    t.lay = NULL;
    rc = raster_mesh_build(ids, v->ny, v->nx, v->chunk[v->ndims - 2],
                           v->chunk[v->ndims - 1], &t.mesh);
    if (rc == RASTER_OK)
        rc = layout_build(t.mesh, ids, var_layout_mode(v), &t.lay);
    /* the region table from the layout must equal the one loaded */
    if (rc == RASTER_OK)
        rc = regions_from_layout(&t);
    /* the summary names each region's group: count them all here */
    size_t n = v->nregions, groups = v->format < 4 ? n : 0;
    if (rc == RASTER_OK &&
        (t.nregions != n || count_region_groups(v->grpid) != groups))
        rc = raster_fail(RASTER_EFORMAT, "%s: %zu region groups, the mask has "
                         "%zu regions", v->name, n, t.nregions);
    for (size_t r = 0; rc == RASTER_OK && r < n; r++) {
        const region_info *a = &v->regions[r], *b = &t.regions[r];
        int id; /* a summarised region's group attributes, unread so far */
        if (a->id != b->id || a->pure_cells != b->pure_cells ||
            a->pure_store != b->pure_store ||
            a->mixed_cells != b->mixed_cells || a->mixed_off != b->mixed_off ||
            (v->format < 4 &&
             (!same_counts(v->store_grp[r], b) ||
              get_int_att(v->store_grp[r], "region_id", &id) != 0 ||
              id != b->id)))
            rc = raster_fail(RASTER_EFORMAT, "%s: region %d does not match "
                             "the stored mask", v->name, (int)a->id);
    }
    for (size_t s = 0; rc == RASTER_OK && s <= n; s++)
        rc = meta_check_store(v, s);
    if (rc == RASTER_OK)
        rc = tables_io(&t, 0); /* every stored table against the layout */
    regions_free(&t);
    if (rc) {
        layout_free(t.lay);
        raster_mesh_free(t.mesh);
        return rc;
    }
    v->mesh = t.mesh;
    v->lay = t.lay; /* last: a reader that sees it finds the runs checked */
    return RASTER_OK;
}

int meta_comp(raster_var *v)
{
    lazy_lock(v->file);
    int rc = RASTER_OK;
    if (v->comp_later) {
        /* the placeholder: v's name beside its storage group */
        char path[4096];
        const char *slash = strrchr(v->h5path, '/');
        int len = slash ? (int)(slash - v->h5path) : 0;
        H5E_auto2_t efunc;
        void *edata;
        H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        hid_t fid = (hid_t)fileio_h5(v->file), p = -1;
        if (slash && fid >= 0 &&
            (size_t)snprintf(path, sizeof path, "%.*s/%s", len, v->h5path,
                             v->name) < sizeof path)
            p = H5Dopen2(fid, path, H5P_DEFAULT);
        raster_compression c;
        rc = p < 0 ? raster_fail(RASTER_EFORMAT, "%s: its placeholder "
                                 "cannot be opened", v->name)
                   : compress_inq_h5(p, &c, v->name);
        if (p >= 0)
            H5Dclose(p);
        H5Eset_auto2(H5E_DEFAULT, efunc, edata);
        if (rc == RASTER_OK) {
            v->comp = c;
            v->comp_later = 0;
        }
    }
    lazy_unlock(v->file);
    return rc;
}
