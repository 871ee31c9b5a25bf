/*
 * meta.c - Metadata Handler (docs/FORMAT.md; writes format 3 or, on
 * request, 2; reads 1 to 3).
 *
 * A reorganised variable V is its placeholder (V itself, never written) and
 * a storage group raster_V holding: attributes that describe V (format
 * version, type, dimension names and ids, base chunk shape, completeness
 * marker); the mask; the index tables (format 3: shared by the regions, each
 * owning a row range); one group per region (`region_<id>`, `region_m<id>`
 * for negative ids) with its counts and pure-chunk store; and
 * `Mixed_Chunks` with the mixed chunks' store. Writable files rebuild the
 * mesh and layout from the stored mask and compare every stored table with
 * them at open; read-only files read attributes only and are checked as
 * reads first use each part (regions.c), the full check on demand.
 */
#include "meta.h"

#include <ctype.h>
#include <inttypes.h>
#include <netcdf_filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "compress.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "mask.h"
#include "ncbind.h"
#include "placeholder.h"
#include "regions.h"
#include "state.h"
#include "statstore.h"

#define CHUNK_FIELDS 8 /* chunk_id y0 x0 h w mixed offset cells */
#define MIXED_FIELDS 5 /* chunk_id y0 x0 h w */
#define SHARE_FIELDS 4 /* chunk_id region_id cells offset */
/* Chunks of stores with unlimited dimensions: at most this many bytes (a
 * plane's cells are halved until they fit). Each chunk is written with one
 * pwrite (by HDF5's cache, or by direct.c); on this kernel (6.18, large
 * page-cache folios) 4 MiB pwrites into a fresh file ran 1.5-10x slower
 * every other time while 1 MiB ones stayed at 0.3-0.4 s per GB
 * (docs/PERFORMANCE.md). The pread fast path reads within one chunk at a
 * time. */
#define STORE_CHUNK_BYTES ((size_t)1 << 20)
#define MIXED_GROUP "Mixed_Chunks"
#define CHUNK_COLUMNS "chunk_id y0 x0 h w mixed offset cells"
#define RUN_COLUMNS "y x len offset"
/* Format 3: rows (first, count) of the shared tables owned by a region. */
#define ATT_CHUNK_ROWS "chunk_rows"
#define ATT_RUN_ROWS "run_rows"

int meta_default_format = RASTER_FORMAT_AUTO;

static int meta_ncfail(int st, const char *what, const char *name)
{
    return raster_fail_nc(RASTER_ENETCDF, st, "%s %s: %s", what, name,
                          nc_strerror(st));
}

/* 1, with rc set and the failure recorded, when netCDF status st is an
 * error: the long define sequences check every step with
 * `if (nc_failed(call, what, v->name, &rc)) goto fail;`. */
static int nc_failed(int st, const char *what, const char *name, int *rc)
{
    if (st == NC_NOERR)
        return 0;
    *rc = meta_ncfail(st, what, name);
    return 1;
}

/* The per-store arrays of v, for its regions (v->regions) plus the mixed
 * store. */
static int alloc_stores(raster_var *v)
{
    size_t nstores = v->nregions + 1;
    v->store_grp = raster_reallocarray(NULL, nstores, sizeof(int));
    v->store_var = raster_reallocarray(NULL, nstores, sizeof(int));
    v->store_cells = raster_reallocarray(NULL, nstores, sizeof(size_t));
    v->addr = raster_calloc(nstores, sizeof *v->addr);
    if (!v->store_grp || !v->store_var || !v->store_cells || !v->addr)
        return raster_fail(RASTER_ENOMEM, "out of memory defining %s",
                           v->name);
    size_t mixed = 0;
    for (size_t s = 0; s < nstores; s++) {
        v->store_grp[s] = v->store_var[s] = -1;
        if (s < v->nregions) {
            v->store_cells[s] = v->regions[s].pure_cells;
            mixed += v->regions[s].mixed_cells;
        } else {
            v->store_cells[s] = mixed;
        }
    }
    return RASTER_OK;
}

/* The format of a new variable of `nregions` regions (meta.h, at
 * meta_define) in a file whose groups netCDF numbers up to `groups`. */
static int pick_format(const char *name, int want, size_t nregions,
                       size_t groups, int *format)
{
    /* its group, its region groups (up to format 3) and Mixed_Chunks */
    size_t grouped = groups + nregions + 2;
    *format = want;
    if (want == RASTER_FORMAT_AUTO)
        *format = nregions > FORMAT4_MIN_REGIONS ||
                  grouped > FORMAT4_GROUP_BUDGET ? 4 : 3;
    if (*format >= 4 && groups + 2 > NC_GROUPS_MAX)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: the file has %zu groups, "
                           "netCDF-C counts at most %d, and the variable "
                           "needs 2", name, groups, NC_GROUPS_MAX);
    if (*format < 4 && grouped > NC_GROUPS_MAX)
        return raster_fail(RASTER_EUNSUPPORTED, "%s: %zu regions in format %d "
                           "would take the file to %zu groups; netCDF-C "
                           "counts at most %d (format 4 stores them without "
                           "a group each)", name, nregions, *format, grouped,
                           NC_GROUPS_MAX);
    return RASTER_OK;
}

/* Allocates v with its mesh and layout built from mask values: copied, or
 * taken over when *take is set (then *take is cleared: v owns the mask).
 * v->format is `format` when `groups` is SIZE_MAX (a stored variable),
 * else pick_format's choice for `format` wanted. */
static int var_new(const char *name, int xtype, int ndims, const int *dimids,
                   const size_t *chunk, int format, size_t groups,
                   raster_mask **take, const raster_mask *mask,
                   raster_var **out)
{
    *out = NULL;
    raster_var *v = raster_calloc(1, sizeof *v);
    if (!v)
        return raster_fail(RASTER_ENOMEM, "out of memory defining %s", name);
    v->magic = VAR_MAGIC;
    int rc = RASTER_OK;
    v->name = raster_strdup(name);
    if (!v->name) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory defining %s", name);
        goto fail;
    }
    if (take) {
        v->mask = *take;
        *take = NULL;
    } else if ((rc = mask_clone(mask, &v->mask)) != RASTER_OK) {
        goto fail;
    }
    v->xtype = xtype;
    v->elem = convert_type_size(xtype);
    v->ndims = ndims;
    memcpy(v->dimids, dimids, (size_t)ndims * sizeof *dimids);
    memcpy(v->chunk, chunk, (size_t)ndims * sizeof *chunk);
    convert_default_fill(xtype, v->fill);
    rc = raster_mesh_build(mask->values, mask->ny, mask->nx, chunk[ndims - 2],
                           chunk[ndims - 1], &v->mesh);
    v->format = format;
    if (rc == RASTER_OK && groups != SIZE_MAX)
        rc = pick_format(name, format, v->mesh->nregions, groups, &v->format);
    if (rc == RASTER_OK)
        rc = layout_build(v->mesh, mask->values, v->format >= 4, &v->lay);
    if (rc == RASTER_OK)
        rc = regions_from_layout(v);
    if (rc == RASTER_OK)
        rc = alloc_stores(v);
    if (rc)
        goto fail;
    *out = v;
    return RASTER_OK;
fail:
    var_free(v);
    return rc;
}

/* Chunk shape of a store with unlimited outer dimensions: one record of
 * each unlimited dimension, the fixed outer dimensions whole and all
 * cells, halved from the outside in (fixed dimensions first, the cells
 * last) until it fits STORE_CHUNK_BYTES. A record written whole covers
 * whole chunks, so HDF5 never reads a chunk back to merge it, and a file
 * of many records does not get a chunk per plane (which would make the
 * chunk index, read at every open, long). */
static void store_chunking(const raster_var *v, size_t cells, size_t *chunk)
{
    int no = var_nouter(v);
    size_t bytes = cells * v->elem, outer[RASTER_MAX_DIMS];
    int have = var_outer_shape(v, outer) == RASTER_OK;
    for (int i = 0; i < no; i++) {
        int unlim = var_nc_dim_unlimited(v->grpid, v->dimids[i]);
        chunk[i] = unlim || !have || outer[i] == 0 ? 1 : outer[i];
        bytes *= chunk[i];
    }
    chunk[no] = cells;
    for (int i = 0; i <= no && bytes > STORE_CHUNK_BYTES; i++) {
        while (chunk[i] > 1 && bytes > STORE_CHUNK_BYTES) {
            size_t half = (chunk[i] + 1) / 2;
            bytes = bytes / chunk[i] * half;
            chunk[i] = half;
        }
    }
}

/* Chunk shape of a filtered store (issue #23): HDF5 filters only chunked
 * datasets. Along the outer dimensions the variable's own chunk shape
 * (what the program or the input file chose, halved from the outside in
 * while one tile of it exceeds STORE_CHUNK_BYTES); along the cells whole
 * tiles, as many as fit ZCHUNK_BYTES (at least one; the store's cells when
 * fewer). Every store is a run of tiles, so a chunk starts on a tile: a
 * hyperslab (a thin band) inflates only the tiles it touches, over the
 * records netCDF would inflate for the same chunk shape, and a region read
 * inflates its own chunks and no other region's. Each chunk costs a fixed
 * ~10 us to inflate (libdeflate builds its tables per deflate block): 10 KB
 * chunks inflated at 0.67 GB/s, 40 KB at 1.45, 100 KB and up at about 2
 * (docs/PERFORMANCE.md, "Compressed store chunks"). */
#define ZCHUNK_BYTES ((size_t)64 << 10)
static void filtered_chunking(const raster_var *v, size_t cells,
                              size_t *chunk)
{
    int no = var_nouter(v);
    size_t tile = v->chunk[v->ndims - 2] * v->chunk[v->ndims - 1];
    size_t bytes = tile * v->elem;
    for (int i = 0; i < no; i++) {
        chunk[i] = v->chunk[i] ? v->chunk[i] : 1;
        bytes *= chunk[i];
    }
    for (int i = 0; i < no && bytes > STORE_CHUNK_BYTES; i++) {
        while (chunk[i] > 1 && bytes > STORE_CHUNK_BYTES) {
            size_t half = (chunk[i] + 1) / 2;
            bytes = bytes / chunk[i] * half;
            chunk[i] = half;
        }
    }
    size_t k = ZCHUNK_BYTES / bytes;
    size_t want = tile * (k ? k : 1);
    chunk[no] = cells == 0 ? 1 : cells < want ? cells : want;
}

/* Chunks store varid of group g as filtered_chunking says and puts v's
 * filters on it. */
static int filter_store(raster_var *v, int g, int varid, size_t s)
{
    size_t chunk[RASTER_MAX_DIMS + 1];
    filtered_chunking(v, v->store_cells[s], chunk);
    int st = nc_def_var_chunking(g, varid, NC_CHUNKED, chunk);
    if (st == NC_ELATEDEF)
        return raster_fail_nc(RASTER_EINVAL, st, "%s: its stores are in the "
                              "file already; set compression before netCDF "
                              "leaves define mode (nc_enddef, a write)",
                              v->name);
    if (st != NC_NOERR)
        return meta_ncfail(st, "chunking store of", v->name);
    return compress_apply(g, varid, &v->comp, 0, v->name);
}

/* Group g's variables but its store `data`, when v's stores compress: the
 * tables and the mask (compress_table). */
static int pack_group_tables(raster_var *v, int g)
{
    int n = 0, st;
    int ids[16];
    if ((st = nc_inq_varids(g, &n, NULL)) != NC_NOERR)
        return meta_ncfail(st, "listing the tables of", v->name);
    if (n > (int)(sizeof ids / sizeof *ids))
        return raster_fail(RASTER_EFORMAT, "%s: %d variables in one of its "
                           "groups", v->name, n);
    if (n > 0 && (st = nc_inq_varids(g, NULL, ids)) != NC_NOERR)
        return meta_ncfail(st, "listing the tables of", v->name);
    size_t tile[2] = {v->chunk[v->ndims - 2], v->chunk[v->ndims - 1]};
    int rc = RASTER_OK;
    for (int i = 0; rc == RASTER_OK && i < n; i++) {
        char vn[NC_MAX_NAME + 1];
        if ((st = nc_inq_varname(g, ids[i], vn)) != NC_NOERR)
            return meta_ncfail(st, "listing the tables of", v->name);
        /* the statistics keep their record chunks, undeflated */
        if (strcmp(vn, "data") != 0 && strcmp(vn, STATS_VAR) != 0)
            rc = compress_table(g, ids[i], strcmp(vn, "mask") ? NULL : tile,
                                v->name);
    }
    return rc;
}

/* Deflates every table of v and its stored mask (in its group, and in
 * the region and mixed groups of format 2) when its stores compress;
 * plain variables keep them as they always were. */
static int pack_tables(raster_var *v)
{
    if (!compress_packs(&v->comp))
        return RASTER_OK;
    int rc = pack_group_tables(v, v->grpid), n = 0, st;
    if (rc)
        return rc;
    if ((st = nc_inq_grps(v->grpid, &n, NULL)) != NC_NOERR)
        return meta_ncfail(st, "listing the groups of", v->name);
    int *gs = raster_reallocarray(NULL, n ? (size_t)n : 1, sizeof *gs);
    if (!gs)
        return raster_fail(RASTER_ENOMEM, "out of memory listing groups");
    if (n > 0 && (st = nc_inq_grps(v->grpid, NULL, gs)) != NC_NOERR)
        rc = meta_ncfail(st, "listing the groups of", v->name);
    for (int i = 0; rc == RASTER_OK && i < n; i++)
        rc = pack_group_tables(v, gs[i]);
    raster_free(gs);
    return rc;
}

int meta_set_compression(raster_var *v, const raster_compression *c)
{
    raster_compression was = v->comp;
    v->comp = *c;
    int rc = RASTER_OK;
    for (size_t s = 0; rc == RASTER_OK && s <= v->nregions; s++)
        if (v->store_var[s] >= 0 && compress_filtered(c))
            rc = filter_store(v, v->store_grp[s], v->store_var[s], s);
    if (rc == RASTER_OK && v->grpid >= 0)
        rc = pack_tables(v);
    if (rc == RASTER_OK)
        rc = compress_apply(v->parent, v->varid, c, 1, v->name);
    if (rc)
        v->comp = was; /* NC_ELATEDEF comes at the first store */
    return rc;
}

static int put_int_att(int g, int varid, const char *name, int value);
static int sums_io(raster_var *v, const long long *summary, int write);

/* Defines `data(outer..., cells)` in group g for store s. */
static int define_store(raster_var *v, int g, size_t s)
{
    int rc = RASTER_OK, cells_dim, varid, no = var_nouter(v), st;
    int dims[RASTER_MAX_DIMS];
    int any_unlim = 0;
    size_t chunk[RASTER_MAX_DIMS];
    if (nc_failed(nc_def_dim(g, "cells", v->store_cells[s], &cells_dim),
                  "defining store cells of", v->name, &rc))
        goto fail;
    for (int i = 0; i < no; i++) {
        dims[i] = v->dimids[i];
        any_unlim |= var_nc_dim_unlimited(v->grpid, v->dimids[i]);
    }
    dims[no] = cells_dim;
    if (nc_failed(nc_def_var(g, "data", v->xtype, no + 1, dims, &varid),
                  "defining store data of", v->name, &rc))
        goto fail;
    if (compress_filtered(&v->comp)) {
        /* chunked and filtered below, once its fill value is set */
    } else if (any_unlim) {
        store_chunking(v, v->store_cells[s], chunk);
        if (nc_failed(nc_def_var_chunking(g, varid, NC_CHUNKED, chunk),
                      "chunking store of", v->name, &rc))
            goto fail;
    } else {
        if (nc_failed(nc_def_var_chunking(g, varid, NC_CONTIGUOUS, NULL),
                      "laying out store of", v->name, &rc))
            goto fail;
    }
    if (nc_failed(nc_put_att(g, varid, "_FillValue", v->xtype, 1, v->fill),
                  "setting store fill value of", v->name, &rc))
        goto fail;
    if (compress_filtered(&v->comp) &&
        (rc = filter_store(v, g, varid, s)) != RASTER_OK)
        goto fail;
    /* which region's data this is, inside the store itself: groups renamed
     * along with their attributes still carry their own (integrity.h) */
    if (v->format >= 3 && s < v->lay->nregions &&
        (st = put_int_att(g, varid, SUMS_STORE_ATT, v->lay->ids[s])) !=
            NC_NOERR)
        return meta_ncfail(st, "describing store of", v->name);
    v->store_grp[s] = g;
    v->store_var[s] = varid;
fail:
    return rc;
}

static int put_int_att(int g, int varid, const char *name, int value)
{
    return nc_put_att_int(g, varid, name, NC_INT, 1, &value);
}

/* Defines an int64 index table `name`(`rows` x `fields`) in group g, with
 * its dimensions `rowdim` and `<rowdim>_field` and a `columns` attribute. */
static int define_table(raster_var *v, int g, const char *name,
                        const char *rowdim, size_t rows, size_t fields,
                        const char *columns)
{
    int rc = RASTER_OK, dims[2], varid;
    char fielddim[NC_MAX_NAME + 1];
    snprintf(fielddim, sizeof fielddim, "%s_field", rowdim);
    if (nc_failed(nc_def_dim(g, rowdim, rows, &dims[0]),
                  "defining an index of", v->name, &rc))
        goto fail;
    if (nc_failed(nc_def_dim(g, fielddim, fields, &dims[1]),
                  "defining an index of", v->name, &rc))
        goto fail;
    if (nc_failed(nc_def_var(g, name, NC_INT64, 2, dims, &varid),
                  "defining an index of", v->name, &rc))
        goto fail;
    if (nc_failed(
            nc_put_att_text(g, varid, "columns", strlen(columns), columns),
            "describing an index of", v->name, &rc))
        goto fail;
fail:
    return rc;
}

/* Rows [first, first + count) of a table shared by all regions (format 3)
 * belong to the region whose group carries them as attribute `name`. */
static int put_rows_att(int g, const char *name, size_t first, size_t count)
{
    unsigned long long rows[2] = {first, count};
    return nc_put_att_ulonglong(g, NC_GLOBAL, name, NC_UINT64, 2, rows);
}

/* Region r's group: its description and its store; with format 2 also its
 * own index tables, with format 3 the rows of the shared ones it owns
 * (chunk rows from chunk0, runs from run0). */
static int define_region(raster_var *v, size_t r, size_t chunk0, size_t run0)
{
    int rc = RASTER_OK, g;
    char gname[32];
    const layout *lay = v->lay;
    size_t nlist;
    const size_t *list;
    int32_t id = lay->ids[r];
    raster_mesh_region_chunks(v->mesh, id, &list, &nlist);
    fileio_group_name(id, gname, sizeof gname);
    if (nc_failed(nc_def_grp(v->grpid, gname, &g), "defining region group of",
                  v->name, &rc))
        goto fail;
    if (nc_failed(put_int_att(g, NC_GLOBAL, "region_id", id),
                  "describing region of", v->name, &rc))
        goto fail;
    unsigned long long counts[3] = {lay->pure_cells[r], lay->mixed_cells[r],
                                    lay->mixed_off[r]};
    if (nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "pure_cells", NC_UINT64,
                                       1, &counts[0]),
                  "describing region of", v->name, &rc))
        goto fail;
    if (nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_cells", NC_UINT64,
                                       1, &counts[1]),
                  "describing region of", v->name, &rc))
        goto fail;
    if (nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_offset", NC_UINT64,
                                       1, &counts[2]),
                  "describing region of", v->name, &rc))
        goto fail;
    if (v->format >= 3) {
        if (nc_failed(put_rows_att(g, ATT_CHUNK_ROWS, chunk0, nlist),
                      "describing region of", v->name, &rc))
            goto fail;
        if (nc_failed(put_rows_att(g, ATT_RUN_ROWS, run0, v->regions[r].nruns),
                      "describing region of", v->name, &rc))
            goto fail;
    } else {
        rc = define_table(v, g, "chunks", "chunk", nlist, CHUNK_FIELDS,
                          CHUNK_COLUMNS);
        if (rc == RASTER_OK)
            rc = define_table(v, g, "runs", "run", v->regions[r].nruns,
                              REGIONS_RUN_FIELDS, RUN_COLUMNS);
    }
    if (rc)
        goto fail;
    if (lay->pure_cells[r] > 0)
        rc = define_store(v, g, r);
    else
        v->store_grp[r] = g;
fail:
    return rc;
}

/* Format 3: the regions' index tables, shared, in the variable's group
 * (one table each instead of one per region: netCDF opens every dataset
 * of a file at nc_open, so fewer datasets open faster). */
static int define_region_tables(raster_var *v, size_t nchunk_rows,
                                size_t nrun_rows)
{
    int rc = define_table(v, v->grpid, "chunks", "chunk", nchunk_rows,
                          CHUNK_FIELDS, CHUNK_COLUMNS);
    if (rc == RASTER_OK)
        rc = define_table(v, v->grpid, "runs", "run", nrun_rows,
                          REGIONS_RUN_FIELDS, RUN_COLUMNS);
    return rc;
}

/* The stored statistics (statstore.h, docs/FORMAT.md): a row of
 * STATS_FIELDS doubles per record and region, chunked a record at a time;
 * records never computed hold netCDF's default fill value, whose state is
 * neither fresh nor stale (and that no reader masks a 0 for). */
static int define_stats(raster_var *v)
{
    int rc = RASTER_OK, no = var_nouter(v), dims[RASTER_MAX_DIMS], id;
    size_t chunk[RASTER_MAX_DIMS];
    for (int i = 0; i < no; i++) {
        dims[i] = v->dimids[i];
        chunk[i] = 1;
    }
    chunk[no] = v->nregions;
    chunk[no + 1] = STATS_FIELDS;
    if (nc_failed(nc_def_dim(v->grpid, STATS_REGION_DIM, v->nregions,
                             &dims[no]),
                  "defining the statistics of", v->name, &rc) ||
        nc_failed(nc_def_dim(v->grpid, STATS_FIELD_DIM, STATS_FIELDS,
                             &dims[no + 1]),
                  "defining the statistics of", v->name, &rc) ||
        nc_failed(nc_def_var(v->grpid, STATS_VAR, NC_DOUBLE, no + 2, dims,
                             &id),
                  "defining the statistics of", v->name, &rc) ||
        nc_failed(nc_def_var_chunking(v->grpid, id, NC_CHUNKED, chunk),
                  "chunking the statistics of", v->name, &rc) ||
        nc_failed(nc_put_att_text(v->grpid, id, "columns",
                                  strlen(STATS_COLUMNS), STATS_COLUMNS),
                  "describing the statistics of", v->name, &rc))
        return rc;
    v->stats_looked = 1;
    v->stats_var = id;
    return RASTER_OK;
}

static int define_mixed(raster_var *v)
{
    int rc = RASTER_OK, g;
    size_t nmixed = 0, nshares = 0;
    for (size_t c = 0; c < v->mesh->nchunks; c++) {
        if (v->mesh->chunks[c].mixed) {
            nmixed++;
            nshares += v->mesh->chunks[c].nshares;
        }
    }
    size_t ms = v->lay->nregions;
    if (nc_failed(nc_def_grp(v->grpid, MIXED_GROUP, &g),
                  "defining mixed group of", v->name, &rc))
        goto fail;
    unsigned long long n = nmixed;
    if (nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_chunks", NC_UINT64,
                                       1, &n),
                  "describing mixed chunks of", v->name, &rc))
        goto fail;
    v->store_grp[ms] = g;
    if (nmixed == 0) /* format 4: the store holds the pure chunks too */
        return v->store_cells[ms] > 0 ? define_store(v, g, ms) : RASTER_OK;
    int tg = v->format >= 3 ? v->grpid : g;
    rc = define_table(v, tg, v->format >= 3 ? "mixed_chunks" : "chunks",
                      v->format >= 3 ? "mixed_chunk" : "chunk", nmixed,
                      MIXED_FIELDS, "chunk_id y0 x0 h w");
    if (rc == RASTER_OK)
        rc = define_table(v, tg, "shares", "share", nshares, SHARE_FIELDS,
                          "chunk_id region_id cells offset");
    if (rc == RASTER_OK)
        rc = define_store(v, g, ms);
fail:
    return rc;
}

/* netCDF cannot delete a group: a half-defined one loses the attribute that
 * marks it as raster's and is renamed out of the way, so the name is free
 * again (for a retry, or for a plain variable) and readers ignore it. */
static void abandon_group(int g, const char *name)
{
    nc_del_att(g, NC_GLOBAL, ATT_VERSION);
    put_int_att(g, NC_GLOBAL, ATT_ABANDONED, 1); /* still raster's: hidden */
    for (int i = 0; i < 1000; i++) {
        char alias[NC_MAX_NAME + 1];
        snprintf(alias, sizeof alias, "raster_abandoned_%d_%.200s", i, name);
        if (nc_rename_grp(g, alias) == NC_NOERR)
            return;
    }
}

/* The '/'-separated names of dimensions dimids[0..ndims) (raster_dims);
 * `out` holds RASTER_MAX_DIMS * (NC_MAX_NAME + 1) bytes. An NC status. */
static int dim_names(int grp, int ndims, const int *dimids, char *out)
{
    out[0] = '\0';
    for (int i = 0; i < ndims; i++) {
        char dn[NC_MAX_NAME + 1];
        int st = nc_inq_dimname(grp, dimids[i], dn);
        if (st != NC_NOERR)
            return st;
        if (i)
            strcat(out, "/");
        strcat(out, dn);
    }
    return NC_NOERR;
}

int meta_store_dim_names(raster_var *v)
{
    char names[RASTER_MAX_DIMS * (NC_MAX_NAME + 1)];
    int st = dim_names(v->grpid, v->ndims, v->dimids, names);
    if (st == NC_NOERR)
        st = nc_put_att_text(v->grpid, NC_GLOBAL, "raster_dims",
                             strlen(names), names);
    return st == NC_NOERR ? RASTER_OK
                          : meta_ncfail(st, "recording the dimension names "
                                        "of", v->name);
}

/* Creates the variable's group, "raster_<name>", or with a number appended
 * when a group of that name exists already. */
static int define_group(raster_var *v, int parent, const char *name)
{
    char gname[NC_MAX_NAME + 1];
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            snprintf(gname, sizeof gname, "raster_%.240s", name);
        else
            snprintf(gname, sizeof gname, "raster_%.240s_%d", name, i);
        int other, st;
        /* groups, variables and types share one namespace */
        if (nc_inq_grp_ncid(parent, gname, &other) == NC_NOERR ||
            nc_inq_varid(parent, gname, &other) == NC_NOERR)
            continue;
        st = nc_def_grp(parent, gname, &v->grpid);
        return st == NC_NOERR ? RASTER_OK
                              : meta_ncfail(st, "defining the group of", name);
    }
    return raster_fail(RASTER_EINVAL, "%s: no free group name", name);
}

/* NC_BYTE, NC_SHORT or NC_INT: the narrowest type holding every id. */
static nc_type mask_store_type(const raster_mask *mask)
{
    int32_t lo = 0, hi = 0;
    size_t n = mask->ny * mask->nx;
    for (size_t i = 0; i < n; i++) {
        int32_t id = mask->values[i];
        lo = id < lo ? id : lo;
        hi = id > hi ? id : hi;
    }
    if (lo >= -128 && hi <= 127)
        return NC_BYTE;
    return lo >= -32768 && hi <= 32767 ? NC_SHORT : NC_INT;
}

/* The variable's summary of its regions (regions.h) from the layout:
 * rows[] gets REGIONS_SUMMARY_FIELDS per region, its rows of the shared
 * tables (format 3) back to back in id order. Writers place the regions'
 * table rows by it, and the checks compare with it. */
static void summary_rows(const raster_var *v, long long *rows)
{
    const layout *lay = v->lay;
    size_t chunk0 = 0, run0 = 0;
    for (size_t r = 0; r < lay->nregions; r++) {
        size_t nlist;
        const size_t *list;
        raster_mesh_region_chunks(v->mesh, lay->ids[r], &list, &nlist);
        long long row[REGIONS_SUMMARY_FIELDS] = {
            lay->ids[r], (long long)lay->pure_cells[r],
            (long long)lay->mixed_cells[r], (long long)lay->mixed_off[r],
            (long long)chunk0, (long long)nlist, (long long)run0,
            (long long)v->regions[r].nruns};
        memcpy(rows + r * REGIONS_SUMMARY_FIELDS, row, sizeof row);
        chunk0 += nlist;
        run0 += v->regions[r].nruns;
    }
}

/* Row `field` of region r in summary rows[]. */
static size_t summary_at(const long long *rows, size_t r,
                         enum regions_summary_field field)
{
    return (size_t)rows[r * REGIONS_SUMMARY_FIELDS + (size_t)field];
}

/* Format 3: writes (write=1) or checks against the file (write=0) the
 * summary rows[] (summary_rows). A file written before the summary
 * existed has none: nothing to check. */
static int summary_io(raster_var *v, const long long *rows, int write)
{
    size_t n = v->lay->nregions * REGIONS_SUMMARY_FIELDS;
    int rc = RASTER_OK;
    if (write) {
        if (nc_failed(nc_put_att_longlong(v->grpid, NC_GLOBAL, REGIONS_SUMMARY,
                                          NC_INT64, n, rows),
                      "describing regions of", v->name, &rc))
            goto fail;
        if (nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL,
                                      REGIONS_SUMMARY "_columns",
                                      strlen(REGIONS_SUMMARY_COLUMNS),
                                      REGIONS_SUMMARY_COLUMNS),
                      "describing regions of", v->name, &rc))
            goto fail;
        return RASTER_OK;
    }
    nc_type type;
    size_t len;
    if (nc_inq_att(v->grpid, NC_GLOBAL, REGIONS_SUMMARY, &type, &len) !=
        NC_NOERR) { /* format 4: the only description of its regions */
        if (v->format >= 4)
            return raster_fail(RASTER_EFORMAT, "%s: no attribute %s", v->name,
                               REGIONS_SUMMARY);
        return RASTER_OK;
    }
    long long *got = raster_reallocarray(NULL, n, sizeof *got);
    if (!got)
        return raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                           v->name);
    int same = type == NC_INT64 && len == n &&
               nc_get_att_longlong(v->grpid, NC_GLOBAL, REGIONS_SUMMARY,
                                   got) == NC_NOERR &&
               memcmp(got, rows, n * sizeof *got) == 0;
    raster_free(got);
    if (!same)
        return raster_fail(RASTER_EFORMAT,
                           "%s: attribute %s does not match the stored mask",
                           v->name, REGIONS_SUMMARY);
    return RASTER_OK;
fail:
    return rc;
}

/* *top: the highest number netCDF has given a group of the file of
 * group g so far (the low 16 bits of its ncid, meta.h): groups are never
 * deleted, so this is how many it has numbered besides the root. */
static int groups_numbered(int g, size_t *top)
{
    int parent;
    while (nc_inq_grp_parent(g, &parent) == NC_NOERR)
        g = parent;
    size_t cap = 0, n = 0;
    int *stack = NULL, st = NC_NOERR;
    *top = 0;
    /* depth-first over every group, iteratively: a file may nest deeply */
    if (raster_grow(&stack, &cap, 1, sizeof *stack) != RASTER_OK)
        return raster_fail(RASTER_ENOMEM, "out of memory counting groups");
    stack[n++] = g;
    while (n > 0) {
        int cur = stack[--n], k = 0;
        if ((size_t)(cur & 0xffff) > *top)
            *top = (size_t)(cur & 0xffff);
        if ((st = nc_inq_grps(cur, &k, NULL)) != NC_NOERR)
            break;
        if (k == 0)
            continue;
        if (raster_grow(&stack, &cap, n + (size_t)k, sizeof *stack) !=
            RASTER_OK) {
            raster_free(stack);
            return raster_fail(RASTER_ENOMEM, "out of memory counting groups");
        }
        if ((st = nc_inq_grps(cur, NULL, stack + n)) != NC_NOERR)
            break;
        n += (size_t)k;
    }
    raster_free(stack);
    return st == NC_NOERR ? RASTER_OK
                          : meta_ncfail(st, "counting the groups of", "a file");
}

int meta_define(raster_file *f, int parent, int varid, const char *name,
                int xtype, int ndims, const int *dimids, const size_t *chunk,
                const raster_mask *mask, const raster_compression *comp,
                raster_var **out)
{
    *out = NULL;
    raster_var *v;
    size_t groups;
    int rc = groups_numbered(parent, &groups);
    if (rc == RASTER_OK)
        rc = var_new(name, xtype, ndims, dimids, chunk, f->write_format,
                     groups, NULL, mask, &v);
    if (rc)
        return rc;
    v->file = f;
    v->parent = parent;
    v->varid = varid; /* -1: the placeholder is created last, below */
    if (comp)
        v->comp = *comp;
    v->grpid = -1;
    /* everything that can fail for want of memory comes before the group
     * exists, so that failures after it are netCDF's alone */
    char *meanings = NULL;
    long long *summary = raster_reallocarray(
        NULL, (v->lay->nregions ? v->lay->nregions : 1) *
                  REGIONS_SUMMARY_FIELDS, sizeof *summary);
    if (!summary) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory describing regions");
        goto fail;
    }
    summary_rows(v, summary);
    /* an adopted placeholder may carry a fill value already */
    nc_type ftype;
    size_t flen;
    if (varid >= 0 &&
        nc_inq_att(parent, varid, "_FillValue", &ftype, &flen) == NC_NOERR &&
        ftype == xtype && flen == 1 &&
        nc_get_att(parent, varid, "_FillValue", v->fill) != NC_NOERR) {
        rc = raster_fail(RASTER_ENETCDF, "%s: unreadable _FillValue", name);
        goto fail;
    }
    if (mask->nnames > 0) {
        size_t len = 1;
        for (size_t i = 0; i < mask->nnames; i++)
            len += strlen(mask->names[i]) + 1;
        meanings = raster_malloc(len);
        if (!meanings) {
            rc = raster_fail(RASTER_ENOMEM, "out of memory naming regions");
            goto fail;
        }
        /* flag_meanings are blank-separated words: a names-table name
         * "Hubei Province" is stored as Hubei_Province, which lookups
         * treat alike */
        char *w = meanings;
        for (size_t i = 0; i < mask->nnames; i++) {
            if (i)
                *w++ = ' ';
            for (const char *c = mask->names[i]; *c; c++)
                *w++ = isspace((unsigned char)*c) ? '_' : *c;
        }
        *w = '\0';
    }
    int ymx[2] = {dimids[ndims - 2], dimids[ndims - 1]};
    char dimnames[RASTER_MAX_DIMS * (NC_MAX_NAME + 1)];
    if (nc_failed(dim_names(parent, ndims, dimids, dimnames),
                  "naming dimensions of", v->name, &rc))
        goto fail;
    rc = define_group(v, parent, name);
    if (rc)
        goto fail;
    if (nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL, ATT_VARIABLE,
                                  strlen(name), name),
                  "describing", v->name, &rc))
        goto fail;
    if (nc_failed(put_int_att(v->grpid, NC_GLOBAL, ATT_VERSION, v->format),
                  "describing", v->name, &rc))
        goto fail;
    if (nc_failed(put_int_att(v->grpid, NC_GLOBAL, ATT_COMPLETE, 0),
                  "describing", v->name, &rc))
        goto fail;
    if (nc_failed(put_int_att(v->grpid, NC_GLOBAL, "raster_type", xtype),
                  "describing", v->name, &rc))
        goto fail;
    if (nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL, "raster_dims",
                                  strlen(dimnames), dimnames),
                  "describing", v->name, &rc))
        goto fail;
    /* ids too: a name can be shadowed by a nearer group's dimension */
    if (nc_failed(nc_put_att_int(v->grpid, NC_GLOBAL, "raster_dimids", NC_INT,
                                 (size_t)ndims, dimids),
                  "describing", v->name, &rc))
        goto fail;
    unsigned long long ch[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims; i++)
        ch[i] = chunk[i];
    if (nc_failed(nc_put_att_ulonglong(v->grpid, NC_GLOBAL, "raster_chunk",
                                       NC_UINT64, (size_t)ndims, ch),
                  "describing", v->name, &rc))
        goto fail;
    /* the narrowest integer type of the ids, uncompressed and contiguous:
     * every open reads the whole mask, and this is its fastest form (and
     * maskio.c's pread); deflated with the tables when the stores are
     * compressed (pack_tables), where its bytes would count */
    int maskid;
    if (nc_failed(nc_def_var(v->grpid, "mask", mask_store_type(mask), 2, ymx,
                             &maskid),
                  "defining the mask of", v->name, &rc))
        goto fail;
    if (nc_failed(nc_def_var_chunking(v->grpid, maskid, NC_CONTIGUOUS, NULL),
                  "laying out the mask of", v->name, &rc))
        goto fail;
    if (nc_failed(
            nc_put_att_text(v->grpid, maskid, "long_name", 11, "region mask"),
            "describing the mask of", v->name, &rc))
        goto fail;
    if (meanings) {
        if (nc_failed(nc_put_att_int(v->grpid, maskid, "flag_values", NC_INT,
                                     mask->nnames, mask->name_ids),
                      "naming the regions of", v->name, &rc))
            goto fail;
        if (nc_failed(nc_put_att_text(v->grpid, maskid, "flag_meanings",
                                      strlen(meanings), meanings),
                      "naming the regions of", v->name, &rc))
            goto fail;
    }
    size_t chunk0 = 0, run0 = 0; /* after the last region: the totals */
    for (size_t r = 0; r < v->lay->nregions && v->format >= 4; r++) {
        chunk0 += summary_at(summary, r, SUMMARY_CHUNK_COUNT);
        run0 += summary_at(summary, r, SUMMARY_RUN_COUNT);
    }
    for (size_t r = 0; r < v->lay->nregions && v->format < 4; r++) {
        chunk0 = summary_at(summary, r, SUMMARY_CHUNK_FIRST);
        run0 = summary_at(summary, r, SUMMARY_RUN_FIRST);
        rc = define_region(v, r, chunk0, run0);
        if (rc)
            goto fail;
        chunk0 += summary_at(summary, r, SUMMARY_CHUNK_COUNT);
        run0 += summary_at(summary, r, SUMMARY_RUN_COUNT);
        const char *rname = raster_mask_region_name(mask, v->lay->ids[r]);
        if (rname)
            if (nc_failed(nc_put_att_text(v->store_grp[r], NC_GLOBAL,
                                          "region_name", strlen(rname), rname),
                          "naming region of", v->name, &rc))
                goto fail;
    }
    if (v->format >= 3) {
        rc = define_region_tables(v, chunk0, run0);
        if (rc == RASTER_OK)
            rc = summary_io(v, summary, 1);
    }
    if (rc == RASTER_OK)
        rc = define_mixed(v);
    if (rc == RASTER_OK && v->format >= 3)
        rc = sums_io(v, summary, 1);
    /* statistics: not in parallel files, whose ranks would have to agree
     * on every update of them */
    if (rc == RASTER_OK && v->format >= 3 && !f->par && var_nouter(v) > 0)
        rc = define_stats(v);
    if (rc == RASTER_OK)
        rc = pack_tables(v);
    if (rc)
        goto fail;
    if (v->varid < 0) {
        /* the placeholder: V itself, with its dimensions and the base chunk
         * shape, never written; it carries V's attributes */
        size_t pch[RASTER_MAX_DIMS];
        for (int i = 0; i < ndims; i++) {
            size_t len = 0;
            nc_inq_dimlen(parent, dimids[i], &len);
            pch[i] = var_nc_dim_unlimited(parent, dimids[i]) || chunk[i] <= len
                         ? chunk[i] : len;
        }
        if (nc_failed(
                nc_def_var(parent, name, xtype, ndims, dimids, &v->varid),
                "defining the placeholder of", v->name, &rc))
            goto fail;
        if (nc_failed(nc_def_var_chunking(parent, v->varid, NC_CHUNKED, pch),
                      "chunking the placeholder of", v->name, &rc))
            goto fail;
    }
    /* readers and writers without raster refuse it, and are told why
     * (placeholder.c) */
    char gname[NC_MAX_NAME + 1];
    if (nc_failed(nc_inq_grpname(v->grpid, gname), "naming the group of",
                  v->name, &rc))
        goto fail;
    rc = placeholder_mark(parent, v->varid, name);
    /* created here: the settings after the marker, where netCDF's
     * inquiries find them (an adopted placeholder has its own) */
    if (rc == RASTER_OK && varid < 0)
        rc = compress_apply(parent, v->varid, &v->comp, 1, name);
    if (rc == RASTER_OK)
        rc = placeholder_note(parent, v->varid, gname);
    if (rc)
        goto fail;
    raster_free(meanings);
    raster_free(summary);
    v->dirty = 1;
    *out = v;
    return RASTER_OK;
fail:
    raster_free(meanings);
    raster_free(summary);
    if (v->grpid >= 0)
        abandon_group(v->grpid, name);
    var_free(v);
    return rc;
}

/* The rows of region r's index table, or of the mixed tables. */
static void region_rows(const raster_var *v, size_t r, long long *rows)
{
    const raster_mesh *m = v->mesh;
    const layout *lay = v->lay;
    size_t nlist;
    const size_t *list;
    raster_mesh_region_chunks(m, lay->ids[r], &list, &nlist);
    for (size_t i = 0; i < nlist; i++) {
        const mesh_chunk *c = &m->chunks[list[i]];
        long long *row = rows + i * CHUNK_FIELDS;
        size_t off = lay->chunk_off[list[i]], cells = c->h * c->w;
        if (c->mixed) {
            for (size_t k = c->share0; k < c->share0 + c->nshares; k++)
                if (m->shares[k].id == lay->ids[r]) {
                    off = lay->share_off[k];
                    cells = m->shares[k].cells;
                }
        }
        long long vals[CHUNK_FIELDS] = {(long long)list[i], (long long)c->y0,
            (long long)c->x0, (long long)c->h, (long long)c->w, c->mixed,
            (long long)off, (long long)cells};
        memcpy(row, vals, sizeof vals);
    }
}

static void mixed_rows(const raster_var *v, long long *chunks,
                       long long *shares)
{
    const raster_mesh *m = v->mesh;
    size_t nc = 0, ns = 0;
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        if (!c->mixed)
            continue;
        long long vals[MIXED_FIELDS] = {(long long)ci, (long long)c->y0,
            (long long)c->x0, (long long)c->h, (long long)c->w};
        memcpy(chunks + nc++ * MIXED_FIELDS, vals, sizeof vals);
        for (size_t k = c->share0; k < c->share0 + c->nshares; k++) {
            long long sv[SHARE_FIELDS] = {(long long)ci, m->shares[k].id,
                (long long)m->shares[k].cells,
                (long long)v->lay->share_off[k]};
            memcpy(shares + ns++ * SHARE_FIELDS, sv, sizeof sv);
        }
    }
}

/* Where one index table's rows lie: table `name` of group g, whose
 * total rows are `total`; the rows in question start at `row0`. Format 2
 * keeps a table per region (row0 0, total its rows), format 3 one shared
 * by all regions. */
typedef struct table_ref {
    int g;
    const char *name;
    size_t row0, total;
} table_ref;

/* Writes (write=1) or checks against the file (write=0) rows
 * [t.row0, t.row0 + n) of an index table, whose expected content is
 * rows[0 .. n*fields). */
static int table_io(raster_var *v, table_ref t, size_t n, size_t fields,
                    const long long *rows, int write)
{
    int varid, st, ndims, dimids[2];
    nc_type type;
    const char *name = t.name;
    if ((st = nc_inq_varid(t.g, name, &varid)) != NC_NOERR)
        return raster_fail(RASTER_EFORMAT, "%s: index table '%s' missing",
                           v->name, name);
    size_t start[2] = {t.row0, 0}, count[2] = {n, fields};
    if (write) {
        st = n ? nc_put_vara_longlong(t.g, varid, start, count, rows)
               : NC_NOERR;
        return st == NC_NOERR ? RASTER_OK : meta_ncfail(st, "writing index of",
                                                   v->name);
    }
    size_t len[2] = {0, 0};
    if ((st = nc_inq_var(t.g, varid, NULL, &type, &ndims, dimids, NULL)) !=
            NC_NOERR || type != NC_INT64 || ndims != 2 ||
        nc_inq_dimlen(t.g, dimids[0], &len[0]) != NC_NOERR ||
        nc_inq_dimlen(t.g, dimids[1], &len[1]) != NC_NOERR ||
        len[0] != t.total || len[1] != fields || t.row0 + n > t.total)
        return raster_fail(RASTER_EFORMAT, "%s: index table '%s' has the "
                           "wrong type or shape", v->name, name);
    long long *got = raster_reallocarray(NULL, n > 0 ? n * fields : 1,
                                         sizeof *got);
    if (!got)
        return raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                           v->name);
    st = n ? nc_get_vara_longlong(t.g, varid, start, count, got) : NC_NOERR;
    int same = st == NC_NOERR &&
               memcmp(got, rows, n * fields * sizeof *got) == 0;
    raster_free(got);
    if (st != NC_NOERR)
        return meta_ncfail(st, "reading index of", v->name);
    if (!same)
        return raster_fail(
            RASTER_EFORMAT,
            "%s: index table '%s' does not match the stored mask", v->name,
            name);
    return RASTER_OK;
}

/* Format 3: checks that region r's group claims rows [first, first+count)
 * of a shared table in attribute `att`. */
static int rows_att_io(raster_var *v, size_t r, const char *att,
                       size_t first, size_t count, int write)
{
    int g = v->store_grp[r];
    if (write || v->format >= 4) /* written at definition; format 4: no
                                    region group, the summary says it */
        return RASTER_OK;
    nc_type type;
    size_t len;
    unsigned long long got[2];
    if (nc_inq_att(g, NC_GLOBAL, att, &type, &len) != NC_NOERR ||
        type != NC_UINT64 || len != 2 ||
        nc_get_att_ulonglong(g, NC_GLOBAL, att, got) != NC_NOERR ||
        got[0] != first || got[1] != count)
        return raster_fail(RASTER_EFORMAT,
                           "%s: region %d's %s do not match the stored mask",
                           v->name, (int)v->regions[r].id, att);
    return RASTER_OK;
}

/* Writes or verifies the runs table of region r (format 2). */
static int runs_io(raster_var *v, size_t r, table_ref t, int write)
{
    const region_run *runs;
    size_t n;
    int rc = regions_runs(v, r, &runs, &n);
    if (rc)
        return rc;
    long long *rows = raster_reallocarray(NULL, n * REGIONS_RUN_FIELDS,
                                          sizeof *rows);
    if (!rows)
        return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                           v->name);
    regions_table_rows(v, r, rows);
    rc = table_io(v, t, n, REGIONS_RUN_FIELDS, rows, write);
    raster_free(rows);
    return rc;
}

/* Rows of the shared tables (format 3 and 4) gathered per netCDF call:
 * one call per region made writing or checking 100,000 regions' tables
 * take seconds. */
#define TABLE_BATCH_BYTES ((size_t)4 << 20)

/* A batch of consecutive rows of one shared table: rows [row0, row0 + n)
 * held in buf (room for cap rows). */
typedef struct batch {
    table_ref t;
    size_t fields, n, cap;
    long long *buf;
} batch;

static int batch_flush(raster_var *v, batch *b, int write)
{
    int rc = b->n ? table_io(v, b->t, b->n, b->fields, b->buf, write)
                  : RASTER_OK;
    b->t.row0 += b->n;
    b->n = 0;
    return rc;
}

/* Room for `more` rows at the end of b: flushed first when full. */
static int batch_room(raster_var *v, batch *b, size_t more, int write)
{
    if (b->n + more > b->cap) {
        int rc = batch_flush(v, b, write);
        if (rc)
            return rc;
    }
    if (more > b->cap) { /* one region's rows alone */
        size_t cap = b->cap;
        if (raster_grow(&b->buf, &cap, more, b->fields * sizeof *b->buf) !=
            RASTER_OK)
            return raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name);
        b->cap = cap;
    }
    return RASTER_OK;
}

/* Format 3 and 4: writes or verifies the regions' rows of the shared
 * `chunks` and `runs` tables, in id order, a batch per netCDF call. */
static int shared_tables_io(raster_var *v, const long long *sum,
                            size_t nchunk_rows, size_t nrun_rows, int write)
{
    size_t per = TABLE_BATCH_BYTES / sizeof(long long);
    batch c = {{v->grpid, "chunks", 0, nchunk_rows}, CHUNK_FIELDS, 0,
               per / CHUNK_FIELDS, NULL};
    batch u = {{v->grpid, "runs", 0, nrun_rows}, REGIONS_RUN_FIELDS, 0,
               per / REGIONS_RUN_FIELDS, NULL};
    c.buf = raster_reallocarray(NULL, c.cap, CHUNK_FIELDS * sizeof *c.buf);
    u.buf = raster_reallocarray(NULL, u.cap,
                                REGIONS_RUN_FIELDS * sizeof *u.buf);
    int rc = !c.buf || !u.buf
                 ? raster_fail(RASTER_ENOMEM, "out of memory indexing %s",
                               v->name)
                 : RASTER_OK;
    for (size_t r = 0; r < v->lay->nregions && rc == RASTER_OK; r++) {
        size_t n = summary_at(sum, r, SUMMARY_CHUNK_COUNT);
        const region_run *runs;
        size_t nruns;
        rc = batch_room(v, &c, n, write);
        if (rc == RASTER_OK) {
            region_rows(v, r, c.buf + c.n * CHUNK_FIELDS);
            rc = rows_att_io(v, r, ATT_CHUNK_ROWS, c.t.row0 + c.n, n, write);
            c.n += n;
        }
        if (rc == RASTER_OK)
            rc = regions_runs(v, r, &runs, &nruns);
        if (rc == RASTER_OK)
            rc = batch_room(v, &u, nruns, write);
        if (rc == RASTER_OK) {
            regions_table_rows(v, r, u.buf + u.n * REGIONS_RUN_FIELDS);
            rc = rows_att_io(v, r, ATT_RUN_ROWS, u.t.row0 + u.n, nruns,
                             write);
            u.n += nruns;
        }
    }
    if (rc == RASTER_OK)
        rc = batch_flush(v, &c, write);
    if (rc == RASTER_OK)
        rc = batch_flush(v, &u, write);
    raster_free(c.buf);
    raster_free(u.buf);
    return rc;
}

/* Format 3: writes (write=1, at definition) or checks against the file
 * (write=0, the full check; nothing to check in a file written before
 * them) the checksums of the tables (integrity.h, docs/FORMAT.md): the
 * summary's, each region's rows of `runs` and of `chunks`, `mixed_chunks`
 * and `shares` whole, and each mixed tile of the mask. */
static int sums_io(raster_var *v, const long long *summary, int write)
{
    const raster_mesh *m = v->mesh;
    size_t nr = v->lay->nregions, nmixed = 0, nshares = 0, maxrows = 1;
    nc_type type;
    size_t len;
    if (!write && nc_inq_att(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT, &type,
                             &len) != NC_NOERR)
        return RASTER_OK;
    for (size_t c = 0; c < m->nchunks; c++)
        if (m->chunks[c].mixed) {
            nmixed++;
            nshares += m->chunks[c].nshares;
        }
    for (size_t r = 0; r < nr; r++)
        if (v->regions[r].nruns * REGIONS_RUN_FIELDS > maxrows)
            maxrows = v->regions[r].nruns * REGIONS_RUN_FIELDS;
    if (m->nchunks * CHUNK_FIELDS > maxrows)
        maxrows = m->nchunks * CHUNK_FIELDS;
    if (nshares * SHARE_FIELDS > maxrows)
        maxrows = nshares * SHARE_FIELDS;
    /* want[]: the summary's, runs and chunks per region, mixed_chunks,
     * shares, the mask's mixed tiles */
    size_t nwant = 1 + 2 * nr + 2 + nmixed;
    uint32_t *want = raster_reallocarray(NULL, nwant, sizeof *want);
    uint32_t *got = raster_reallocarray(NULL, nwant, sizeof *got);
    long long *rows = raster_reallocarray(NULL, maxrows, sizeof *rows);
    long long *shares = raster_reallocarray(NULL, nshares * SHARE_FIELDS + 1,
                                            sizeof *shares);
    const int32_t *ids = raster_mask_values(v->mask);
    int rc = RASTER_OK;
    if (!want || !got || !rows || !shares || !ids) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory checksumming %s",
                         v->name);
        goto done;
    }
    uint32_t *w_runs = want + 1, *w_chunks = want + 1 + nr;
    uint32_t *w_mixed = want + 1 + 2 * nr, *w_tiles = w_mixed + 2;
    want[0] = sums_i64(0, summary, nr * REGIONS_SUMMARY_FIELDS);
    for (size_t r = 0; r < nr && rc == RASTER_OK; r++) {
        const region_run *runs;
        size_t n, nlist;
        const size_t *list;
        if ((rc = regions_runs(v, r, &runs, &n)) != RASTER_OK)
            break;
        regions_table_rows(v, r, rows);
        w_runs[r] = sums_region_rows(v->lay->ids[r], rows,
                                     n * REGIONS_RUN_FIELDS);
        raster_mesh_region_chunks(m, v->lay->ids[r], &list, &nlist);
        region_rows(v, r, rows);
        w_chunks[r] = sums_region_rows(v->lay->ids[r], rows,
                                       nlist * CHUNK_FIELDS);
    }
    if (rc)
        goto done;
    mixed_rows(v, rows, shares);
    w_mixed[0] = sums_i64(0, rows, nmixed * MIXED_FIELDS);
    w_mixed[1] = sums_i64(0, shares, nshares * SHARE_FIELDS);
    size_t th = v->chunk[v->ndims - 2], tw = v->chunk[v->ndims - 1];
    size_t ntx = (v->nx + tw - 1) / tw, k = 0;
    for (size_t c = 0; c < m->nchunks; c++) {
        const mesh_chunk *ch = &m->chunks[c];
        if (ch->mixed)
            w_tiles[k++] = sums_tile(ch->y0 / th * ntx + ch->x0 / tw,
                                     (const int *)ids + ch->y0 * v->nx +
                                         ch->x0, v->nx, ch->h, ch->w);
    }
    /* (table, its checksums) */
    struct { const char *table; const uint32_t *w; size_t n; } t[] = {
        {"runs", w_runs, nr}, {"chunks", w_chunks, nr},
        {"mixed_chunks", w_mixed, nmixed ? 1 : 0},
        {"shares", w_mixed + 1, nmixed ? 1 : 0},
        {"mask", w_tiles, nmixed}};
    if (write) {
        int st = nc_put_att_uint(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT,
                                 NC_UINT, 1, want);
        for (size_t i = 0; i < sizeof t / sizeof *t && st == NC_NOERR; i++) {
            int varid;
            if (t[i].n > 0 && /* no mixed tables without mixed tiles */
                nc_inq_varid(v->grpid, t[i].table, &varid) == NC_NOERR)
                st = nc_put_att_uint(v->grpid, varid, SUMS_TABLE_ATT,
                                     NC_UINT, t[i].n, t[i].w);
        }
        if (st != NC_NOERR)
            rc = meta_ncfail(st, "checksumming", v->name);
        goto done;
    }
    int same = type == NC_UINT && len == 1 &&
               nc_get_att_uint(v->grpid, NC_GLOBAL, SUMS_GROUP_ATT, got) ==
                   NC_NOERR && got[0] == want[0];
    const char *bad = same ? NULL : SUMS_GROUP_ATT;
    for (size_t i = 0; i < sizeof t / sizeof *t && !bad; i++) {
        if (t[i].n == 0)
            continue;
        if ((rc = sums_table_att(v, t[i].table, t[i].n, got)) != RASTER_OK)
            goto done;
        if (memcmp(got, t[i].w, t[i].n * sizeof *got) != 0)
            bad = t[i].table;
    }
    if (bad)
        rc = raster_fail(RASTER_EFORMAT, "%s: checksums of '%s' do not match "
                         "the stored mask", v->name, bad);
done:
    raster_free(want);
    raster_free(got);
    raster_free(rows);
    raster_free(shares);
    return rc;
}

/* Writes or verifies every index table of v. */
static int tables_io(raster_var *v, int write)
{
    const raster_mesh *m = v->mesh;
    size_t maxrows = m->nchunks > m->nshares ? m->nchunks : m->nshares;
    long long *rows = raster_reallocarray(NULL, maxrows * CHUNK_FIELDS,
                                          sizeof *rows);
    long long *shares = raster_reallocarray(NULL, m->nshares * SHARE_FIELDS,
                                            sizeof *shares);
    size_t nr = v->lay->nregions;
    long long *sum = raster_reallocarray(
        NULL, (nr ? nr : 1) * REGIONS_SUMMARY_FIELDS, sizeof *sum);
    int rc = RASTER_OK, shared = v->format >= 3;
    if (!rows || !shares || !sum) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %s", v->name);
        goto done;
    }
    /* format 3: the regions' rows back to back in id order */
    summary_rows(v, sum);
    size_t nchunk_rows = 0, nrun_rows = 0; /* the shared tables' lengths */
    if (nr > 0) {
        nchunk_rows = summary_at(sum, nr - 1, SUMMARY_CHUNK_FIRST) +
                      summary_at(sum, nr - 1, SUMMARY_CHUNK_COUNT);
        nrun_rows = summary_at(sum, nr - 1, SUMMARY_RUN_FIRST) +
                    summary_at(sum, nr - 1, SUMMARY_RUN_COUNT);
    }
    if (shared)
        rc = shared_tables_io(v, sum, nchunk_rows, nrun_rows, write);
    /* formats 1 and 2: each region's own tables in its group */
    for (size_t r = 0; r < nr && rc == RASTER_OK && !shared; r++) {
        size_t n = summary_at(sum, r, SUMMARY_CHUNK_COUNT);
        region_rows(v, r, rows);
        table_ref ct = {v->store_grp[r], "chunks", 0, n};
        table_ref rt = {v->store_grp[r], "runs", 0, v->regions[r].nruns};
        rc = table_io(v, ct, n, CHUNK_FIELDS, rows, write);
        if (rc == RASTER_OK && v->format >= 2)
            rc = runs_io(v, r, rt, write);
    }
    size_t nmixed = 0, nms = 0;
    for (size_t c = 0; c < m->nchunks; c++)
        if (m->chunks[c].mixed) {
            nmixed++;
            nms += m->chunks[c].nshares;
        }
    if (rc == RASTER_OK && nmixed > 0) {
        int g = shared ? v->grpid : v->store_grp[v->lay->nregions];
        mixed_rows(v, rows, shares);
        rc = table_io(v, (table_ref){g, shared ? "mixed_chunks" : "chunks", 0,
                                     nmixed}, nmixed, MIXED_FIELDS, rows,
                      write);
        if (rc == RASTER_OK)
            rc = table_io(v, (table_ref){g, "shares", 0, nms}, nms,
                          SHARE_FIELDS, shares, write);
    }
    if (rc == RASTER_OK && shared && !write)
        rc = summary_io(v, sum, 0);
    if (rc == RASTER_OK && shared && !write)
        rc = sums_io(v, sum, 0);
done:
    raster_free(rows);
    raster_free(shares);
    raster_free(sum);
    return rc;
}

int meta_materialize(raster_var *v)
{
    int varid, st;
    /* collective in a parallel file: done by every rank at raster_close */
    if (v->file->tables_at_close)
        return RASTER_OK;
    if ((st = nc_inq_varid(v->grpid, "mask", &varid)) != NC_NOERR)
        return meta_ncfail(st, "finding the mask of", v->name);
    if ((st = nc_put_var_int(v->grpid, varid, v->mask->values)) != NC_NOERR)
        return meta_ncfail(st, "writing the mask of", v->name);
    int rc = tables_io(v, 1);
    if (rc == RASTER_OK)
        v->materialized = 1;
    return rc;
}

int meta_put_extent(raster_var *v, const size_t *shape)
{
    unsigned long long ext[RASTER_MAX_DIMS];
    for (int i = 0; i < v->ndims; i++)
        ext[i] = shape[i];
    int st = nc_put_att_ulonglong(v->grpid, NC_GLOBAL, ATT_EXTENT, NC_UINT64,
                                  (size_t)v->ndims, ext);
    return st == NC_NOERR ? RASTER_OK
                          : meta_ncfail(st, "writing the extent of", v->name);
}

int meta_mark_complete(raster_var *v, int complete)
{
    nc_type type;
    size_t len;
    /* records a writer adds may outgrow the placeholder (a parallel one
     * never extends it): the extent holds only until the next close */
    if (!complete &&
        nc_inq_att(v->grpid, NC_GLOBAL, ATT_EXTENT, &type, &len) == NC_NOERR) {
        int del = nc_del_att(v->grpid, NC_GLOBAL, ATT_EXTENT);
        if (del != NC_NOERR)
            return meta_ncfail(del, "removing the extent of", v->name);
    }
    int st = put_int_att(v->grpid, NC_GLOBAL, ATT_COMPLETE, complete);
    return st == NC_NOERR ? RASTER_OK
                          : meta_ncfail(st, "writing the completeness marker of",
                                  v->name);
}

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
    if (v->store_var[s] < 0)
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
    if (v->format < 3 || s >= v->nregions)
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
        rc = alloc_stores(v);
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
        rc = alloc_stores(v);
    if (rc)
        goto fail;
    *out = v;
    return RASTER_OK;
fail:
    var_free(v);
    return rc;
}

/* 1 when variable varid of parent carries raster's marker filter and has
 * type xtype and dimension ids dimids[0..ndims). */
static int marked_placeholder(int parent, int varid, int xtype, int ndims,
                              const int *dimids)
{
    int t, nd, ids[NC_MAX_VAR_DIMS];
    unsigned int filters[32];
    size_t nf = 0;
    if (nc_inq_varndims(parent, varid, &nd) != NC_NOERR || nd != ndims ||
        nc_inq_var(parent, varid, NULL, &t, NULL, ids, NULL) != NC_NOERR ||
        t != xtype || memcmp(ids, dimids, (size_t)nd * sizeof *ids) != 0 ||
        nc_inq_var_filter_ids(parent, varid, &nf, NULL) != NC_NOERR ||
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
 * parent that carries raster's marker, has the stored type and dimension
 * ids, and that no storage group names. *varid and `found` (its name) are
 * set. */
static int find_placeholder(int parent, const char *name, int xtype,
                            int ndims, const int *dimids, int *varid,
                            char *found)
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
        if (!marked_placeholder(parent, i, xtype, ndims, dimids) ||
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
        return meta_ncfail(st, "recording the new name of", found);
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
        rc = var_new(name, xtype, ndims, dimids, chunk, format, SIZE_MAX,
                     &mask, mask, &v);
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
    rc = find_placeholder(v->parent, name, xtype, ndims, dimids, &v->varid,
                          found);
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
    if (rc == RASTER_OK) {
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
        rc = layout_build(t.mesh, ids, v->format >= 4, &t.lay);
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
