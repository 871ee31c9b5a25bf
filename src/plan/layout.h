/*
 * layout.h - Chunk layout planner: where every grid cell of a reorganised
 * variable lies in raster's stores, as a list of segments.
 *
 * Stores, per outer index (one record of the outer dimensions):
 *  - one "pure store" per region (store number = the region's position in
 *    ascending id order): the region's pure chunks back to back in chunk-id
 *    order; inside a chunk, tile after tile, each tile row-major, so a tile
 *    (a fixed netCDF chunk's footprint) is always one contiguous run;
 *  - one "mixed store" (store number = nregions) holding every mixed chunk
 *    once, region-major: for each region in ascending id order, its share
 *    of each mixed chunk it touches (chunk-id order), row-major. A region's
 *    share of one mixed chunk, and its shares of all mixed chunks together,
 *    are each one contiguous run.
 * Shared (format 4, variables with many regions): no pure stores; the
 * one shared store (number nregions) holds, for each region in ascending
 * id order, its pure chunks (chunk-id order, tile by tile as above) and
 * then its mixed shares, so a region's cells are one contiguous run of
 * it (mixed_off, mixed_cells; pure_cells are all 0).
 * Tiles (format 5, the variable's own chunks hold the values): every tile
 * takes tile_h * tile_w store cells, row-major with a row of tile_w cells
 * also when it is an edge tile (an HDF5 chunk is always whole); a pure
 * store holds its region's pure tiles in chunk-id order, the mixed store
 * every mixed tile whole in chunk-id order. pure_cells and mixed_cells
 * count a region's cells as in the other modes; its pure store is
 * pure_store cells (its pure tiles whole), and its cells of a mixed tile
 * are not contiguous (mixed_off is 0).
 * A segment maps `len` consecutive store cells to the grid cells
 * (y, x .. x+len-1). Segments cover every cell once and are kept in grid
 * order (y, then x).
 */
#ifndef RASTER_LAYOUT_H
#define RASTER_LAYOUT_H

#include <stdint.h>

#include "mesh.h"

/* How the stores are laid out: by region (format 3), in one shared store
 * (format 4), in whole tiles (format 5). */
typedef enum layout_mode {
    LAYOUT_REGIONS = 0,
    LAYOUT_SHARED = 1,
    LAYOUT_TILES = 2
} layout_mode;

typedef struct layout_seg {
    uint64_t off;    /* first cell in the store */
    uint32_t store;  /* region position, or nregions for the mixed store */
    uint32_t region; /* position of the cells' region */
    uint32_t y, x, len;
} layout_seg;

typedef struct layout {
    layout_mode mode;
    size_t ny, nx, tile_h, tile_w;
    size_t nregions;
    int32_t *ids;          /* ascending */
    size_t *pure_cells;    /* per region: its cells in pure chunks */
    size_t *pure_store;    /* per region: cells of its pure store (tiles
                              mode: whole tiles; else pure_cells) */
    size_t *mixed_off;     /* per region: start of its run in the mixed store */
    size_t *mixed_cells;   /* per region: length of that run */
    size_t mixed_total;    /* cells of the mixed store */
    size_t nchunks;
    size_t *chunk_off;     /* pure chunk: offset in its region's pure store */
    size_t nshares;
    size_t *share_off;     /* per mesh share of a mixed chunk: offset in the
                              mixed store (pure chunks' shares: unused) */
    layout_seg *segs;      /* grid order */
    size_t nsegs;
    /* segments by region, for a linear pass over one region's runs:
     * region r's are region_segs[region_first[r] .. region_first[r+1]),
     * in grid order */
    size_t *region_first;  /* nregions + 1 */
    size_t *region_segs;   /* nsegs */
} layout;

/* Plans the stores of `mesh`, built from `mask` (same shape). */
int layout_build(const raster_mesh *mesh, const int32_t *mask,
                 layout_mode mode, layout **out);
void layout_free(layout *lay);

/* Position of region `id` in ascending order, or -1. */
long layout_region_pos(const layout *lay, int32_t id);

#endif
