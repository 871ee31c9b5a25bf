/*
 * compress.c - a raster variable's compression (issue #23): the settings
 * netCDF-4 keeps per variable, which raster puts on every store and keeps
 * on the placeholder so that netCDF's inquiries find them there.
 */
#include "compress.h"

#include <hdf5.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdio.h>
#include <string.h>

#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "quantize.h"

int compress_filtered(const raster_compression *c)
{
    return c && (c->shuffle || c->deflate_level || c->fletcher32 ||
                 c->nfilters);
}

int compress_plain(const raster_compression *c)
{
    return !compress_filtered(c) && (!c || !c->quantize_mode);
}

int compress_packs(const raster_compression *c)
{
    return c && (c->deflate_level || c->nfilters);
}

static int apply_fail(int st, const char *what, const char *name);

/* Bytes of a table's or the mask's chunk at most (but one row or tile at
 * least): see compress_table. */
#define TABLE_CHUNK_BYTES ((size_t)64 << 10)

int compress_table(int g, int varid, const size_t *tile, const char *name)
{
    int nd = 0, dims[2], st;
    nc_type xtype;
    size_t len[2] = {0, 0}, elem = 0;
    if ((st = nc_inq_varndims(g, varid, &nd)) != NC_NOERR || nd != 2 ||
        (st = nc_inq_vardimid(g, varid, dims)) != NC_NOERR ||
        (st = nc_inq_dimlen(g, dims[0], &len[0])) != NC_NOERR ||
        (st = nc_inq_dimlen(g, dims[1], &len[1])) != NC_NOERR ||
        (st = nc_inq_vartype(g, varid, &xtype)) != NC_NOERR ||
        (st = nc_inq_type(g, xtype, NULL, &elem)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "%s: describing a table "
                              "to compress: %s", name, nc_strerror(st));
    if (len[0] == 0 || len[1] == 0 || elem == 0)
        return RASTER_OK;
    size_t chunk[2];
    if (tile) {
        /* k x k tiles, the most that fit in TABLE_CHUNK_BYTES: a thin
         * band's read inflates only the chunks of its columns */
        size_t k = 1, th = tile[0] ? tile[0] : 1, tw = tile[1] ? tile[1] : 1;
        while ((k + 1) * th * (k + 1) * tw * elem <= TABLE_CHUNK_BYTES &&
               (k * th < len[0] || k * tw < len[1]))
            k++;
        chunk[0] = k * th < len[0] ? k * th : len[0];
        chunk[1] = k * tw < len[1] ? k * tw : len[1];
    } else {
        size_t rows = TABLE_CHUNK_BYTES / (len[1] * elem);
        rows = rows < 1 ? 1 : rows;
        chunk[0] = rows < len[0] ? rows : len[0];
        chunk[1] = len[1];
    }
    if ((st = nc_def_var_chunking(g, varid, NC_CHUNKED, chunk)) != NC_NOERR)
        return apply_fail(st, "chunking of its tables", name);
    if ((st = nc_def_var_deflate(g, varid, 1, 1, 1)) != NC_NOERR)
        return apply_fail(st, "deflate on its tables", name);
    return RASTER_OK;
}

/* 1 for the filters raster_compression names by field, not in filters[] */
static int named_filter(unsigned id)
{
    return id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE ||
           id == H5Z_FILTER_FLETCHER32;
}

int compress_check(const raster_compression *c, int xtype, int parallel,
                   const char *name)
{
    if (!c)
        return RASTER_OK;
    if (c->deflate_level < 0 || c->deflate_level > 9)
        return raster_fail_nc(RASTER_EINVAL, NC_EINVAL,
                              "%s: deflate level %d is not 0 to 9", name,
                              c->deflate_level);
    if (c->nfilters > RASTER_MAX_FILTERS)
        return raster_fail(RASTER_EINVAL, "%s: %u filters: raster keeps at "
                           "most %d besides deflate, shuffle and fletcher32",
                           name, c->nfilters, RASTER_MAX_FILTERS);
    for (unsigned i = 0; i < c->nfilters; i++) {
        unsigned id = c->filters[i].id;
        if (c->filters[i].nparams > RASTER_MAX_FILTER_PARAMS)
            return raster_fail(RASTER_EINVAL, "%s: filter %u has %zu "
                               "parameters: at most %d", name, id,
                               c->filters[i].nparams,
                               RASTER_MAX_FILTER_PARAMS);
        if (id == RASTER_FILTER_ID || named_filter(id))
            return raster_fail_nc(RASTER_EINVAL, NC_EFILTER,
                                  "%s: filter %u belongs in its own field "
                                  "(or is raster's marker)", name, id);
        if (H5Zfilter_avail((H5Z_filter_t)id) <= 0)
            return raster_fail_nc(RASTER_EINVAL, NC_ENOFILTER,
                                  "%s: HDF5 in this process has no filter "
                                  "%u", name, id);
    }
    /* exactly what nc_def_var_quantize refuses (quantize.c) */
    if (c->quantize_mode &&
        quantize_check(xtype, c->quantize_mode, c->quantize_nsd) != RASTER_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", raster_errmsg());
        return raster_fail_nc(RASTER_EINVAL, NC_EINVAL, "%s: %s", name, why);
    }
    if (parallel && !compress_plain(c))
        return raster_fail(RASTER_EUNSUPPORTED, "%s: HDF5 writes filtered "
                           "datasets only collectively; raster keeps a "
                           "parallel file's stores plain", name);
    return RASTER_OK;
}

static int apply_fail(int st, const char *what, const char *name)
{
    if (st == NC_ELATEDEF)
        return raster_fail_nc(RASTER_EINVAL, st, "%s: its stores are in the "
                              "file already; set %s before netCDF leaves "
                              "define mode (nc_enddef, a write)", name, what);
    return raster_fail_nc(st == NC_EINVAL || st == NC_ENOFILTER ||
                                  st == NC_EFILTER
                              ? RASTER_EINVAL : RASTER_ENETCDF,
                          st, "%s: setting %s: %s", name, what,
                          nc_strerror(st));
}

/* In netCDF's order of a pipeline: fletcher32 and shuffle first (netCDF
 * puts them there whenever they are set), the other filters, deflate. */
int compress_apply(int g, int varid, const raster_compression *c,
                   int quantize, const char *name)
{
    int st;
    if (c->fletcher32 &&
        (st = nc_def_var_fletcher32(g, varid, NC_FLETCHER32)) != NC_NOERR)
        return apply_fail(st, "fletcher32", name);
    if (c->shuffle && !c->deflate_level &&
        (st = nc_def_var_deflate(g, varid, 1, 0, 0)) != NC_NOERR)
        return apply_fail(st, "shuffle", name);
    for (unsigned i = 0; i < c->nfilters; i++)
        if ((st = nc_def_var_filter(g, varid, c->filters[i].id,
                                    c->filters[i].nparams,
                                    c->filters[i].params)) != NC_NOERR)
            return apply_fail(st, "a filter", name);
    if (c->deflate_level &&
        (st = nc_def_var_deflate(g, varid, c->shuffle ? 1 : 0, 1,
                                 c->deflate_level)) != NC_NOERR)
        return apply_fail(st, "deflate", name);
    if (quantize && c->quantize_mode &&
        (st = nc_def_var_quantize(g, varid, c->quantize_mode,
                                  c->quantize_nsd)) != NC_NOERR)
        return apply_fail(st, "quantize", name);
    return RASTER_OK;
}

static int inq_fail(int st, const char *name)
{
    return raster_fail_nc(RASTER_ENETCDF, st, "%s: reading its compression: "
                          "%s", name, nc_strerror(st));
}

/* Adds filter `id` with its parameters to c->filters. */
static int add_filter(raster_compression *c, unsigned id, size_t nparams,
                      const unsigned *params, const char *name)
{
    if (c->nfilters >= RASTER_MAX_FILTERS ||
        nparams > RASTER_MAX_FILTER_PARAMS)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: more filters or "
                           "parameters than raster keeps (%d, %d)", name,
                           RASTER_MAX_FILTERS, RASTER_MAX_FILTER_PARAMS);
    c->filters[c->nfilters].id = id;
    c->filters[c->nfilters].nparams = nparams;
    if (nparams)
        memcpy(c->filters[c->nfilters].params, params,
               nparams * sizeof *params);
    c->nfilters++;
    return RASTER_OK;
}

int compress_inq_nc(int g, int varid, raster_compression *c,
                    const char *name)
{
    memset(c, 0, sizeof *c);
    int shuffle = 0, deflate = 0, level = 0, f32 = 0, st;
    if ((st = nc_inq_var_deflate(g, varid, &shuffle, &deflate, &level)) !=
            NC_NOERR ||
        (st = nc_inq_var_fletcher32(g, varid, &f32)) != NC_NOERR)
        return inq_fail(st, name);
    c->shuffle = shuffle != 0;
    c->deflate_level = deflate ? level : 0;
    c->fletcher32 = f32 != 0;
    int mode = 0, nsd = 0;
    st = nc_inq_var_quantize(g, varid, &mode, &nsd);
    if (st != NC_NOERR)
        return inq_fail(st, name);
    c->quantize_mode = mode;
    c->quantize_nsd = mode ? nsd : 0;
    size_t nf = 0;
    unsigned ids[RASTER_MAX_FILTERS + 8];
    if ((st = nc_inq_var_filter_ids(g, varid, &nf, NULL)) != NC_NOERR)
        return inq_fail(st, name);
    if (nf > sizeof ids / sizeof *ids)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: %zu filters: more than "
                           "raster keeps", name, nf);
    if (nf && (st = nc_inq_var_filter_ids(g, varid, NULL, ids)) != NC_NOERR)
        return inq_fail(st, name);
    for (size_t i = 0; i < nf; i++) {
        if (ids[i] == RASTER_FILTER_ID || named_filter(ids[i]))
            continue;
        size_t np = 0;
        unsigned params[RASTER_MAX_FILTER_PARAMS];
        if ((st = nc_inq_var_filter_info(g, varid, ids[i], &np, NULL)) !=
            NC_NOERR)
            return inq_fail(st, name);
        if (np > RASTER_MAX_FILTER_PARAMS)
            return add_filter(c, ids[i], np, NULL, name); /* refuses */
        if (np && (st = nc_inq_var_filter_info(g, varid, ids[i], &np,
                                               params)) != NC_NOERR)
            return inq_fail(st, name);
        int rc = add_filter(c, ids[i], np, params, name);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

int compress_inq_h5(int64_t did, raster_compression *c, const char *name)
{
    memset(c, 0, sizeof *c);
    hid_t dcpl = H5Dget_create_plist((hid_t)did);
    int n = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
    int rc = n < 0 ? raster_fail(RASTER_EHDF5, "%s: HDF5 gives no filters "
                                 "of its placeholder", name)
                   : RASTER_OK;
    for (int i = 0; rc == RASTER_OK && i < n; i++) {
        unsigned flags, cd[RASTER_MAX_FILTER_PARAMS + 1];
        size_t ncd = sizeof cd / sizeof *cd;
        char fname[8];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd,
                                         sizeof fname, fname, NULL);
        if (id < 0)
            rc = raster_fail(RASTER_EHDF5, "%s: HDF5 gives no filter %d of "
                             "its placeholder", name, i);
        else if (id == H5Z_FILTER_SHUFFLE)
            c->shuffle = 1;
        else if (id == H5Z_FILTER_FLETCHER32)
            c->fletcher32 = 1;
        else if (id == H5Z_FILTER_DEFLATE)
            c->deflate_level = ncd >= 1 ? (int)cd[0] : 0;
        else if (id != RASTER_FILTER_ID)
            rc = add_filter(c, (unsigned)id, ncd, cd, name);
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    /* quantize: netCDF records it in an attribute of the variable */
    static const struct {
        int mode;
        const char *att;
    } q[] = {{NC_QUANTIZE_BITGROOM, NC_QUANTIZE_BITGROOM_ATT_NAME},
             {NC_QUANTIZE_GRANULARBR, NC_QUANTIZE_GRANULARBR_ATT_NAME},
             {NC_QUANTIZE_BITROUND, NC_QUANTIZE_BITROUND_ATT_NAME}};
    for (size_t i = 0; rc == RASTER_OK && i < sizeof q / sizeof *q; i++) {
        if (H5Aexists((hid_t)did, q[i].att) <= 0)
            continue;
        int nsd = 0;
        if (fileio_att(did, q[i].att, NC_INT, &nsd, 1, NULL) != 0)
            rc = raster_fail(RASTER_EFORMAT, "%s: unreadable %s", name,
                             q[i].att);
        c->quantize_mode = q[i].mode;
        c->quantize_nsd = nsd;
    }
    return rc;
}
