/*
 * define.c - a variable's storage group defined (docs/FORMAT.md; writes
 * format 3 or 4, or on request 2), then its mask and tables written.
 *
 * A reorganised variable V is its placeholder (V itself, never written) and
 * a storage group raster_V holding: attributes that describe V (format
 * version, type, dimension names and ids, base chunk shape, completeness
 * marker); the mask; the index tables (format 3: shared by the regions, each
 * owning a row range); one group per region (`region_<id>`, `region_m<id>`
 * for negative ids) with its counts and pure-chunk store; and
 * `Mixed_Chunks` with the mixed chunks' store. meta_define defines it all
 * in netCDF's define mode; meta_materialize writes the mask and the tables
 * (tables.c) at the first write; the extent and the completeness marker
 * are set at a writer's close.
 */
#include "define.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "compress.h"
#include "convert.h"
#include "error.h"
#include "fileio.h"
#include "integrity.h"
#include "mask.h"
#include "meta.h"
#include "placeholder.h"
#include "regions.h"
#include "state.h"
#include "statsfmt.h"
#include "tables.h"
#include "tilestore.h"

/* Chunks of stores with unlimited dimensions: at most this many bytes (a
 * plane's cells are halved until they fit). Each chunk is written with one
 * pwrite (by HDF5's cache, or by direct.c); on this kernel (6.18, large
 * page-cache folios) 4 MiB pwrites into a fresh file ran 1.5-10x slower
 * every other time while 1 MiB ones stayed at 0.3-0.4 s per GB
 * (docs/PERFORMANCE.md). The pread fast path reads within one chunk at a
 * time. */
#define STORE_CHUNK_BYTES ((size_t)1 << 20)

#define CHUNK_COLUMNS "chunk_id y0 x0 h w mixed offset cells"
#define RUN_COLUMNS "y x len offset"

/* The per-store arrays of v, for its regions (v->regions) plus the mixed
 * store. */
int define_alloc_stores(raster_var *v)
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
            v->store_cells[s] = v->regions[s].pure_store;
            mixed += v->regions[s].mixed_cells;
        } else {
            v->store_cells[s] = mixed;
        }
    }
    if (var_tiled(v)) { /* whole tiles: the mixed ones each once (a
                            loaded variable: meta.c counts them) */
        if (v->lay)
            v->store_cells[v->nregions] = v->lay->mixed_total;
        for (size_t s = 0; s < nstores; s++)
            v->addr[s].tcut = tilestore_cut(v);
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
                          grouped > FORMAT4_GROUP_BUDGET
                      ? 4
                      : 3;
    if (*format >= 4 && groups + 2 > NC_GROUPS_MAX)
        return raster_fail(RASTER_EUNSUPPORTED,
                           "%s: the file has %zu groups, "
                           "netCDF-C counts at most %d, and the variable "
                           "needs 2",
                           name, groups, NC_GROUPS_MAX);
    if (*format < 4 && grouped > NC_GROUPS_MAX)
        return raster_fail(RASTER_EUNSUPPORTED,
                           "%s: %zu regions in format %d "
                           "would take the file to %zu groups; netCDF-C "
                           "counts at most %d (format 4 stores them without "
                           "a group each)",
                           name, nregions, *format, grouped, NC_GROUPS_MAX);
    return RASTER_OK;
}

/* Allocates v with its mesh and layout built from mask values: copied, or
 * taken over when *take is set (then *take is cleared: v owns the mask).
 * v->format is `format` when `groups` is SIZE_MAX (a stored variable),
 * else pick_format's choice for `format` wanted. */
int define_var_new(const char *name, int xtype, int ndims, const int *dimids,
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
        rc = layout_build(v->mesh, mask->values, var_layout_mode(v), &v->lay);
    if (rc == RASTER_OK)
        rc = regions_from_layout(v);
    if (rc == RASTER_OK)
        rc = define_alloc_stores(v);
    if (rc == RASTER_OK && var_tiled(v)) /* writers' tiles (direct.c) */
        rc = tilestore_index(v);
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
static void filtered_chunking(const raster_var *v, size_t cells, size_t *chunk)
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
        return raster_fail_nc(RASTER_EINVAL, st,
                              "%s: its stores are in the "
                              "file already; set compression before netCDF "
                              "leaves define mode (nc_enddef, a write)",
                              v->name);
    if (st != NC_NOERR)
        return tables_ncfail(st, "chunking store of", v->name);
    return compress_apply(g, varid, &v->comp, 0, v->name);
}

/* Group g's variables but its store `data`, when v's stores compress: the
 * tables and the mask (compress_table). */
static int pack_group_tables(raster_var *v, int g)
{
    int n = 0, st;
    int ids[16];
    if ((st = nc_inq_varids(g, &n, NULL)) != NC_NOERR)
        return tables_ncfail(st, "listing the tables of", v->name);
    if (n > (int)(sizeof ids / sizeof *ids))
        return raster_fail(RASTER_EFORMAT,
                           "%s: %d variables in one of its "
                           "groups",
                           v->name, n);
    if (n > 0 && (st = nc_inq_varids(g, NULL, ids)) != NC_NOERR)
        return tables_ncfail(st, "listing the tables of", v->name);
    size_t tile[2] = {v->chunk[v->ndims - 2], v->chunk[v->ndims - 1]};
    int rc = RASTER_OK;
    for (int i = 0; rc == RASTER_OK && i < n; i++) {
        char vn[NC_MAX_NAME + 1];
        if ((st = nc_inq_varname(g, ids[i], vn)) != NC_NOERR)
            return tables_ncfail(st, "listing the tables of", v->name);
        /* the statistics and chunk offsets keep their record chunks,
         * undeflated */
        if (strcmp(vn, "data") != 0 && strcmp(vn, STATS_VAR) != 0 &&
            strcmp(vn, OFFSETS_TABLE) != 0)
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
        return tables_ncfail(st, "listing the groups of", v->name);
    int *gs = raster_reallocarray(NULL, n ? (size_t)n : 1, sizeof *gs);
    if (!gs)
        return raster_fail(RASTER_ENOMEM, "out of memory listing groups");
    if (n > 0 && (st = nc_inq_grps(v->grpid, NULL, gs)) != NC_NOERR)
        rc = tables_ncfail(st, "listing the groups of", v->name);
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
    /* format 5: the variable itself is filtered, below */
    for (size_t s = 0; rc == RASTER_OK && s <= v->nregions && !var_tiled(v);
         s++)
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

/* Defines `data(outer..., cells)` in group g for store s. */
static int define_store(raster_var *v, int g, size_t s)
{
    int rc = RASTER_OK, cells_dim, varid, no = var_nouter(v), st;
    int dims[RASTER_MAX_DIMS];
    int any_unlim = 0;
    size_t chunk[RASTER_MAX_DIMS];
    if (tables_nc_failed(nc_def_dim(g, "cells", v->store_cells[s], &cells_dim),
                         "defining store cells of", v->name, &rc))
        goto fail;
    for (int i = 0; i < no; i++) {
        dims[i] = v->dimids[i];
        any_unlim |= var_nc_dim_unlimited(v->grpid, v->dimids[i]);
    }
    dims[no] = cells_dim;
    if (tables_nc_failed(nc_def_var(g, "data", v->xtype, no + 1, dims, &varid),
                         "defining store data of", v->name, &rc))
        goto fail;
    if (compress_filtered(&v->comp)) {
        /* chunked and filtered below, once its fill value is set */
    } else if (any_unlim) {
        store_chunking(v, v->store_cells[s], chunk);
        if (tables_nc_failed(nc_def_var_chunking(g, varid, NC_CHUNKED, chunk),
                             "chunking store of", v->name, &rc))
            goto fail;
    } else {
        if (tables_nc_failed(
                nc_def_var_chunking(g, varid, NC_CONTIGUOUS, NULL),
                "laying out store of", v->name, &rc))
            goto fail;
    }
    if (tables_nc_failed(
            nc_put_att(g, varid, "_FillValue", v->xtype, 1, v->fill),
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
        return tables_ncfail(st, "describing store of", v->name);
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
    if (tables_nc_failed(nc_def_dim(g, rowdim, rows, &dims[0]),
                         "defining an index of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(nc_def_dim(g, fielddim, fields, &dims[1]),
                         "defining an index of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(nc_def_var(g, name, NC_INT64, 2, dims, &varid),
                         "defining an index of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(
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
    if (tables_nc_failed(nc_def_grp(v->grpid, gname, &g),
                         "defining region group of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(put_int_att(g, NC_GLOBAL, "region_id", id),
                         "describing region of", v->name, &rc))
        goto fail;
    unsigned long long counts[3] = {lay->pure_cells[r], lay->mixed_cells[r],
                                    lay->mixed_off[r]};
    if (tables_nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "pure_cells",
                                              NC_UINT64, 1, &counts[0]),
                         "describing region of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_cells",
                                              NC_UINT64, 1, &counts[1]),
                         "describing region of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_offset",
                                              NC_UINT64, 1, &counts[2]),
                         "describing region of", v->name, &rc))
        goto fail;
    if (v->format >= 3) {
        if (tables_nc_failed(put_rows_att(g, ATT_CHUNK_ROWS, chunk0, nlist),
                             "describing region of", v->name, &rc))
            goto fail;
        if (tables_nc_failed(
                put_rows_att(g, ATT_RUN_ROWS, run0, v->regions[r].nruns),
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

/* The stored statistics (statsfmt.h, docs/FORMAT.md): a row of
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
    if (tables_nc_failed(
            nc_def_dim(v->grpid, STATS_REGION_DIM, v->nregions, &dims[no]),
            "defining the statistics of", v->name, &rc) ||
        tables_nc_failed(
            nc_def_dim(v->grpid, STATS_FIELD_DIM, STATS_FIELDS, &dims[no + 1]),
            "defining the statistics of", v->name, &rc) ||
        tables_nc_failed(
            nc_def_var(v->grpid, STATS_VAR, NC_DOUBLE, no + 2, dims, &id),
            "defining the statistics of", v->name, &rc) ||
        tables_nc_failed(nc_def_var_chunking(v->grpid, id, NC_CHUNKED, chunk),
                         "chunking the statistics of", v->name, &rc) ||
        tables_nc_failed(nc_put_att_text(v->grpid, id, "columns",
                                         strlen(STATS_COLUMNS), STATS_COLUMNS),
                         "describing the statistics of", v->name, &rc))
        return rc;
    v->stats_looked = 1;
    v->stats_var = id;
    return RASTER_OK;
}

/* Format 5: the table where each sealing close keeps the byte offset of
 * every chunk of the variable (tilestore_keep_offsets), growing with its
 * records; chunked a tile row per outer chunk of the variable, so that a
 * reader's one read takes it in a few contiguous chunks. */
static int define_offsets(raster_var *v)
{
    int rc = RASTER_OK, dims[2], id;
    size_t nd = (size_t)v->ndims, th = v->chunk[nd - 2], tw = v->chunk[nd - 1];
    size_t tiles = ((v->ny + th - 1) / th) * ((v->nx + tw - 1) / tw);
    size_t chunk[2] = {tiles < 256 ? 256 : tiles > 65536 ? 65536 : tiles,
                       OFFSETS_FIELDS};
    if (tables_nc_failed(nc_def_dim(v->grpid, OFFSETS_DIM, NC_UNLIMITED,
                                    &dims[0]),
                         "defining the chunk offsets of", v->name, &rc) ||
        tables_nc_failed(nc_def_dim(v->grpid, OFFSETS_DIM "_field",
                                    OFFSETS_FIELDS, &dims[1]),
                         "defining the chunk offsets of", v->name, &rc) ||
        tables_nc_failed(nc_def_var(v->grpid, OFFSETS_TABLE, NC_INT64, 2, dims,
                                    &id),
                         "defining the chunk offsets of", v->name, &rc) ||
        tables_nc_failed(nc_def_var_chunking(v->grpid, id, NC_CHUNKED, chunk),
                         "chunking the chunk offsets of", v->name, &rc) ||
        tables_nc_failed(nc_put_att_text(v->grpid, id, "columns",
                                         strlen("offset bytes"),
                                         "offset bytes"),
                         "describing the chunk offsets of", v->name, &rc))
        return rc;
    return RASTER_OK;
}

/* The mixed chunks' tables in group tg. */
static int define_mixed_tables(raster_var *v, int tg, size_t nmixed,
                               size_t nshares)
{
    int rc = define_table(v, tg, v->format >= 3 ? "mixed_chunks" : "chunks",
                          v->format >= 3 ? "mixed_chunk" : "chunk", nmixed,
                          MIXED_FIELDS, "chunk_id y0 x0 h w");
    if (rc == RASTER_OK)
        rc = define_table(v, tg, "shares", "share", nshares, SHARE_FIELDS,
                          "chunk_id region_id cells offset");
    return rc;
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
    if (v->format >= 5) /* the tables only: the variable holds the values */
        return nmixed == 0 ? RASTER_OK : define_mixed_tables(v, v->grpid,
                                                             nmixed, nshares);
    if (tables_nc_failed(nc_def_grp(v->grpid, MIXED_GROUP, &g),
                         "defining mixed group of", v->name, &rc))
        goto fail;
    unsigned long long n = nmixed;
    if (tables_nc_failed(nc_put_att_ulonglong(g, NC_GLOBAL, "mixed_chunks",
                                              NC_UINT64, 1, &n),
                         "describing mixed chunks of", v->name, &rc))
        goto fail;
    v->store_grp[ms] = g;
    if (nmixed == 0) /* format 4: the store holds the pure chunks too */
        return v->store_cells[ms] > 0 ? define_store(v, g, ms) : RASTER_OK;
    rc = define_mixed_tables(v, v->format >= 3 ? v->grpid : g, nmixed,
                             nshares);
    if (rc == RASTER_OK)
        rc = define_store(v, g, ms);
fail:
    return rc;
}

/* Format 5, a variable adopted from its program (the shim): its chunks
 * must be the tiles, which the program's own chunking (or netCDF's
 * default for it) seldom is, else raster reads it through netCDF and
 * HDF5 lays its chunks out in its own order. The program's storage is
 * kept in ATT_CHUNKING for the shim to report, as netCDF would without
 * raster. A variable netCDF will not rechunk any more keeps its chunks
 * (its reads go through netCDF). */
static int rechunk_adopted(raster_var *v, int parent, int ndims,
                           const size_t *pch)
{
    int storage = NC_CHUNKED, rc = RASTER_OK;
    size_t had[RASTER_MAX_DIMS] = {0};
    if (tables_nc_failed(nc_inq_var_chunking(parent, v->varid, &storage, had),
                         "asking the chunking of", v->name, &rc))
        return rc;
    if (storage == NC_CHUNKED &&
        memcmp(had, pch, (size_t)ndims * sizeof *pch) == 0)
        return RASTER_OK;
    if (nc_def_var_chunking(parent, v->varid, NC_CHUNKED, pch) != NC_NOERR)
        return RASTER_OK;
    unsigned long long rec[RASTER_MAX_DIMS + 1];
    rec[0] = (unsigned long long)storage;
    for (int i = 0; i < ndims; i++)
        rec[i + 1] = storage == NC_CHUNKED ? had[i] : 0;
    tables_nc_failed(nc_put_att_ulonglong(v->grpid, NC_GLOBAL, ATT_CHUNKING,
                                          NC_UINT64, (size_t)ndims + 1, rec),
                     "recording the program's chunking of", v->name, &rc);
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
        st = nc_put_att_text(v->grpid, NC_GLOBAL, "raster_dims", strlen(names),
                             names);
    return st == NC_NOERR ? RASTER_OK
                          : tables_ncfail(st,
                                          "recording the dimension names "
                                          "of",
                                          v->name);
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
        return st == NC_NOERR
                   ? RASTER_OK
                   : tables_ncfail(st, "defining the group of", name);
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
    return st == NC_NOERR
               ? RASTER_OK
               : tables_ncfail(st, "counting the groups of", "a file");
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
        rc = define_var_new(name, xtype, ndims, dimids, chunk,
                            f->write_format, groups,
                            NULL, mask, &v);
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
        NULL,
        (v->lay->nregions ? v->lay->nregions : 1) * REGIONS_SUMMARY_FIELDS,
        sizeof *summary);
    if (!summary) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory describing regions");
        goto fail;
    }
    tables_summary_rows(v, summary);
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
    if (tables_nc_failed(dim_names(parent, ndims, dimids, dimnames),
                         "naming dimensions of", v->name, &rc))
        goto fail;
    rc = define_group(v, parent, name);
    if (rc)
        goto fail;
    if (tables_nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL, ATT_VARIABLE,
                                         strlen(name), name),
                         "describing", v->name, &rc))
        goto fail;
    if (tables_nc_failed(
            put_int_att(v->grpid, NC_GLOBAL, ATT_VERSION, v->format),
            "describing", v->name, &rc))
        goto fail;
    if (tables_nc_failed(put_int_att(v->grpid, NC_GLOBAL, ATT_COMPLETE, 0),
                         "describing", v->name, &rc))
        goto fail;
    if (tables_nc_failed(
            put_int_att(v->grpid, NC_GLOBAL, "raster_type", xtype),
            "describing", v->name, &rc))
        goto fail;
    if (tables_nc_failed(nc_put_att_text(v->grpid, NC_GLOBAL, "raster_dims",
                                         strlen(dimnames), dimnames),
                         "describing", v->name, &rc))
        goto fail;
    /* ids too: a name can be shadowed by a nearer group's dimension */
    if (tables_nc_failed(nc_put_att_int(v->grpid, NC_GLOBAL, "raster_dimids",
                                        NC_INT, (size_t)ndims, dimids),
                         "describing", v->name, &rc))
        goto fail;
    unsigned long long ch[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims; i++)
        ch[i] = chunk[i];
    if (tables_nc_failed(nc_put_att_ulonglong(v->grpid, NC_GLOBAL,
                                              "raster_chunk", NC_UINT64,
                                              (size_t)ndims, ch),
                         "describing", v->name, &rc))
        goto fail;
    /* the narrowest integer type of the ids, uncompressed and contiguous:
     * every open reads the whole mask, and this is its fastest form (and
     * maskio.c's pread); deflated with the tables when the stores are
     * compressed (pack_tables), where its bytes would count */
    int maskid;
    if (tables_nc_failed(nc_def_var(v->grpid, "mask", mask_store_type(mask), 2,
                                    ymx, &maskid),
                         "defining the mask of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(
            nc_def_var_chunking(v->grpid, maskid, NC_CONTIGUOUS, NULL),
            "laying out the mask of", v->name, &rc))
        goto fail;
    if (tables_nc_failed(
            nc_put_att_text(v->grpid, maskid, "long_name", 11, "region mask"),
            "describing the mask of", v->name, &rc))
        goto fail;
    if (meanings) {
        if (tables_nc_failed(nc_put_att_int(v->grpid, maskid, "flag_values",
                                            NC_INT, mask->nnames,
                                            mask->name_ids),
                             "naming the regions of", v->name, &rc))
            goto fail;
        if (tables_nc_failed(nc_put_att_text(v->grpid, maskid, "flag_meanings",
                                             strlen(meanings), meanings),
                             "naming the regions of", v->name, &rc))
            goto fail;
    }
    size_t chunk0 = 0, run0 = 0; /* after the last region: the totals */
    for (size_t r = 0; r < v->lay->nregions && v->format >= 4; r++) {
        chunk0 += tables_summary_at(summary, r, SUMMARY_CHUNK_COUNT);
        run0 += tables_summary_at(summary, r, SUMMARY_RUN_COUNT);
    }
    for (size_t r = 0; r < v->lay->nregions && v->format < 4; r++) {
        chunk0 = tables_summary_at(summary, r, SUMMARY_CHUNK_FIRST);
        run0 = tables_summary_at(summary, r, SUMMARY_RUN_FIRST);
        rc = define_region(v, r, chunk0, run0);
        if (rc)
            goto fail;
        chunk0 += tables_summary_at(summary, r, SUMMARY_CHUNK_COUNT);
        run0 += tables_summary_at(summary, r, SUMMARY_RUN_COUNT);
        const char *rname = raster_mask_region_name(mask, v->lay->ids[r]);
        if (rname)
            if (tables_nc_failed(nc_put_att_text(v->store_grp[r], NC_GLOBAL,
                                                 "region_name", strlen(rname),
                                                 rname),
                                 "naming region of", v->name, &rc))
                goto fail;
    }
    if (v->format >= 3) {
        rc = define_region_tables(v, chunk0, run0);
        if (rc == RASTER_OK)
            rc = tables_summary_io(v, summary, 1);
    }
    if (rc == RASTER_OK)
        rc = define_mixed(v);
    if (rc == RASTER_OK && v->format >= 3)
        rc = tables_sums_io(v, summary, 1);
    /* statistics: not in parallel files, whose ranks would have to agree
     * on every update of them */
    if (rc == RASTER_OK && v->format >= 3 && !f->par && var_nouter(v) > 0)
        rc = define_stats(v);
    if (rc == RASTER_OK && v->format >= 5)
        rc = define_offsets(v);
    if (rc == RASTER_OK)
        rc = pack_tables(v);
    if (rc)
        goto fail;
    /* the placeholder's chunks: the base chunk shape */
    size_t pch[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        size_t len = 0;
        nc_inq_dimlen(parent, dimids[i], &len);
        pch[i] = var_nc_dim_unlimited(parent, dimids[i]) || chunk[i] <= len
                     ? chunk[i]
                     : len;
    }
    if (v->varid >= 0 && v->format >= 5) {
        if ((rc = rechunk_adopted(v, parent, ndims, pch)) != RASTER_OK)
            goto fail;
    } else if (v->varid < 0) {
        /* the placeholder: V itself, with its dimensions and the base chunk
         * shape, never written; it carries V's attributes */
        if (tables_nc_failed(
                nc_def_var(parent, name, xtype, ndims, dimids, &v->varid),
                "defining the placeholder of", v->name, &rc))
            goto fail;
        if (tables_nc_failed(
                nc_def_var_chunking(parent, v->varid, NC_CHUNKED, pch),
                "chunking the placeholder of", v->name, &rc))
            goto fail;
    }
    /* readers and writers without raster refuse it, and are told why
     * (placeholder.c) */
    char gname[NC_MAX_NAME + 1];
    if (tables_nc_failed(nc_inq_grpname(v->grpid, gname),
                         "naming the group of", v->name, &rc))
        goto fail;
    if (v->format >= 5) { /* it holds the values: its tiles are the stores */
        for (size_t s = 0; s <= v->nregions; s++)
            if (v->store_cells[s] > 0) {
                v->store_grp[s] = parent;
                v->store_var[s] = v->varid;
            }
    } else {
        rc = placeholder_mark(parent, v->varid, name);
    }
    /* created here: the settings after the marker, where netCDF's
     * inquiries find them (an adopted placeholder has its own) */
    if (rc == RASTER_OK && varid < 0)
        rc = compress_apply(parent, v->varid, &v->comp, 1, name);
    if (rc == RASTER_OK)
        rc = placeholder_note(parent, v->varid, gname, v->format >= 5);
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

int meta_materialize(raster_var *v)
{
    int varid, st;
    /* collective in a parallel file: done by every rank at raster_close */
    if (v->file->tables_at_close)
        return RASTER_OK;
    if ((st = nc_inq_varid(v->grpid, "mask", &varid)) != NC_NOERR)
        return tables_ncfail(st, "finding the mask of", v->name);
    if ((st = nc_put_var_int(v->grpid, varid, v->mask->values)) != NC_NOERR)
        return tables_ncfail(st, "writing the mask of", v->name);
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
    return st == NC_NOERR
               ? RASTER_OK
               : tables_ncfail(st, "writing the extent of", v->name);
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
            return tables_ncfail(del, "removing the extent of", v->name);
    }
    int st = put_int_att(v->grpid, NC_GLOBAL, ATT_COMPLETE, complete);
    return st == NC_NOERR
               ? RASTER_OK
               : tables_ncfail(st, "writing the completeness marker of",
                               v->name);
}
