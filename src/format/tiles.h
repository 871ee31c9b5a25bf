/*
 * tiles.h - Tile index of a read-only variable (format 3): for every tile
 * of the grid, where its cells lie in the stores. A pure tile is one run of
 * its region's pure store; a mixed tile holds each region's share in the
 * mixed store, its cells in row-major order within the tile, so the mask
 * of that one tile says where each cell is.
 *
 * Hyperslab reads use it instead of the regions' runs: a thin band across
 * the grid crosses nearly every region, and loading every region's runs
 * (215,000 on the benchmark's 2400 x 3600 grid) cost more than the read.
 * Here a hyperslab reads the `chunks` table once (a row per chunk and
 * region) and the mask of the tiles it touches; a small first read of a
 * file with checksums only the rows of the regions its tiles' mask names
 * (a partial index, grown by later small reads, replaced by the whole one
 * at the first read of a mixed tile or of many). Every row is checked when
 * it loads (inside the grid, on the tiles, each region's chunks
 * back to back in its stores, every tile covered once), and every cell a
 * read serves is checked against the mask (a pure tile's cells carry its
 * region's id; a mixed tile's cells of each region number exactly its
 * share), so a damaged table or mask is refused, never served. A small
 * box's pieces are kept once checked (the memo in tiles.c), so the same
 * box read again, in any records, is neither read nor checked again: the
 * file cannot change under a read-only handle (file_unchanged).
 */
#ifndef RASTER_TILES_H
#define RASTER_TILES_H

#include <stddef.h>

#include "piece.h"
#include "var.h"

/* Pieces mapping hyperslab start/count/stride (all dimensions; stride
 * NULL means 1) of v's grid to the stores, the caller's plane being
 * count[y] x count[x]; each cell of the plane is covered exactly once.
 * Loads and checks the tile index on first use. *out is the caller's to
 * free (raster_free). */
int tiles_pieces(raster_var *v, const size_t *start, const size_t *count,
                 const ptrdiff_t *stride, piece **out, size_t *n);

/* 1 when v's hyperslab reads go through the tile index: a read-only
 * variable of format 3 and on whose layout is not built. */
int tiles_usable(const raster_var *v);

void tiles_free(raster_var *v);

/* Hyperslab reads whose pieces came from the memo of the last small box
 * (tiles_pieces) since the process started (for tests). */
size_t tiles_memo_hits(void);

/* For tests: 0 with no tile index yet, 1 with a partial one (the rows of
 * the regions reads named), 2 with the whole table's. */
int tiles_state(raster_var *v);

#endif
