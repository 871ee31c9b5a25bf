/*
 * tilestore.h - format 5's stores: tiles of the variable itself.
 *
 * In format 5 the variable's own netCDF variable, chunked with the base
 * chunk shape, holds the values, so every netCDF and HDF5 reader reads
 * them without raster. raster's stores are lists of its tiles (layout.h,
 * LAYOUT_TILES): store r, region r's pure store, its pure tiles in
 * chunk-id order; store nregions every mixed tile in chunk-id order. A
 * tile is tile_h x tile_w store cells, row-major in rows of tile_w cells,
 * as HDF5 keeps a chunk (an edge tile's cells past the grid hold nothing).
 * Store cells within one tile move through netCDF as the box of the
 * tile's rows they cover.
 */
#ifndef RASTER_TILESTORE_H
#define RASTER_TILESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "var.h"

/* Builds v's tiles of each store (v->stile) from its mesh and layout
 * (a writer's, at definition). */
int tilestore_index(raster_var *v);

/* Store s's tiles: from the mesh and layout when v has them, else (a
 * read-only variable) from the tables, store by store: a pure store from
 * its region's rows of `chunks`, the mixed store from `mixed_chunks`,
 * each checked against its checksum and to name every tile of the store
 * once. A writable variable, or tables without checksums, need the
 * layout first (meta_ensure_layout): RASTER_EINVAL without it. */
int tilestore_index_store(raster_var *v, size_t s);

/* Tile cells of a format 5 store: where spans are cut (0: not format 5). */
static inline size_t tilestore_cut(const raster_var *v)
{
    return v->format >= 5 ? v->chunk[v->ndims - 2] * v->chunk[v->ndims - 1]
                          : 0;
}

/* Rows [0, n) of `mixed_chunks` (MIXED_FIELDS each; tables.h), checked
 * against their checksum when the variable carries them, in a new array
 * *rows (the caller frees it). */
int tilestore_mixed_rows(raster_var *v, size_t n, long long **rows);

/* The tiles a `chunks` or `mixed_chunks` row f names (chunk_id y0 x0 h w
 * ...): *nt tiles from tile (*ty, *tx), left to right, checked to be
 * whole tiles of the grid (many 0: exactly one). RASTER_EFORMAT when not. */
int tilestore_row_tiles(const raster_var *v, const long long *f, int many,
                        size_t *ty, size_t *tx, size_t *nt);

/* Read-only files: makes store s a chunked store (v->addr[s]: a store
 * chunk is one of the variable's chunks, its byte offset CHUNK_UNKNOWN
 * until looked up) when the variable is chunked as its tiles
 * (tile_h x tile_w, any outer sizes) and holds plain bytes or filters
 * inflate.c undoes; else leaves the store to netCDF (tilestore_get).
 * RASTER_OK, or RASTER_ENOMEM. */
int tilestore_prepare(raster_var *v, size_t s);

/* Every chunk offset of prepared store s from one walk of the variable's
 * chunk index (walked once for all stores): *got 1, or 0 when it cannot
 * be walked (look them up one by one). RASTER_OK or RASTER_ENOMEM. */
int tilestore_walk(raster_var *v, size_t s, int *got);

/* A sealing close (docs/FORMAT.md, "The seal"), after the file's data is
 * flushed: walks the variable's chunk index and keeps every chunk's
 * offset and stored bytes in OFFSETS_TABLE, with its checksum and `seal`,
 * the second the close stores; read-only readers under that seal then
 * read the table instead of walking the index (one read against a cold
 * read per index node). When the walk cannot be made the table is kept
 * under seal 0, which no reader trusts. Nothing for a variable defined
 * without the table. RASTER_OK or an error. */
int tilestore_keep_offsets(raster_var *v, long long seal);

/* Variables whose chunk offsets came from OFFSETS_TABLE since the process
 * started (for tests). */
size_t tilestore_kept_hits(void);

/* The variable's coordinates (ndims of them) of store s's chunk lin
 * (row-major over its outer chunks, then its tiles), for a lookup by
 * H5Dget_chunk_info_by_coord. */
void tilestore_chunk_origin(const raster_var *v, size_t s, size_t lin,
                            uint64_t *off);

/* Moves cells [lo, lo + width) of store s, which lie in one tile, for the
 * outer box ostart/ocount (stride 1), between buf (the box's planes in
 * order, width cells each) and the variable, through netCDF. get: cells
 * past the grid's edge read as the fill value. put: no other cell of the
 * file changes. RASTER_OK or an error. */
int tilestore_get(raster_var *v, size_t s, const size_t *ostart,
                  const size_t *ocount, uint64_t lo, size_t width, void *buf);
int tilestore_put(raster_var *v, size_t s, const size_t *ostart,
                  const size_t *ocount, uint64_t lo, size_t width,
                  const void *buf);

#endif
