/*
 * regions.h - Region table of a reorganised variable: its regions (ids,
 * cell counts, where each one's cells lie in the stores) and, per region,
 * its runs: the region's cells in grid order as row runs mapped to store
 * cells.
 *
 * Runs are all a read needs. A writer derives them from the layout; a
 * read-only file loads each region's `runs` table from the file only when a
 * read first touches that region, checking it before use, so opening a file
 * reads no mask and builds no mesh (docs/FORMAT.md, "runs").
 */
#ifndef RASTER_REGIONS_H
#define RASTER_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#include "var.h"

/* Fills v's region table from its layout (v->lay, v->mesh): writers, and
 * files without runs tables. */
int regions_from_layout(raster_var *v);

/* Fills v's region table from the region groups among the children of
 * the variable's group g (attributes only; runs stay on disk until first
 * needed) and stores each region's group id in grps[] (room for every
 * child group). v->ny and v->nx must be set. Checks ids, counts, offsets. */
int regions_from_file(raster_var *v, int g, int *grps);

/* Fills v's region table from the rows of a summary (below), len values,
 * with the same checks as regions_from_file(); finding each region's group
 * is the caller's (src/format/lean.c). v->ny, v->nx and v->format must be set. */
int regions_from_summary(raster_var *v, const long long *t, size_t len);

/* Format 3: the variable group's summary of its regions, attribute
 * raster_regions (int64), REGIONS_SUMMARY_FIELDS per region in ascending
 * id order: what each region group's attributes say, read in one
 * attribute instead of every region group's (docs/FORMAT.md). */
#define REGIONS_SUMMARY "raster_regions"
#define REGIONS_SUMMARY_FIELDS 8
enum regions_summary_field {
    SUMMARY_ID, SUMMARY_PURE_CELLS, SUMMARY_MIXED_CELLS, SUMMARY_MIXED_OFFSET,
    SUMMARY_CHUNK_FIRST, SUMMARY_CHUNK_COUNT, SUMMARY_RUN_FIRST,
    SUMMARY_RUN_COUNT
};
#define REGIONS_SUMMARY_COLUMNS                                               \
    "region_id pure_cells mixed_cells mixed_offset chunk_first chunk_count "  \
    "run_first run_count"

/* Checks the summary t (len values, read from group g) against its
 * checksum, when the file has one, and sets v->sums then (integrity.h). */
int regions_summary_sum(raster_var *v, int g, const long long *t,
                        size_t len);

/* Position of region `id` in v's ascending table, or -1. */
long regions_pos(const raster_var *v, int32_t id);

/* The runs of region at position r in grid order, derived or loaded (and
 * checked) on first use, then kept. */
int regions_runs(raster_var *v, size_t r, const region_run **runs,
                 size_t *n);

/* The stored mask's varid, checked to be 2-D over v's grid. */
int regions_mask_var(const raster_var *v, int *varid);

/* Rows [y0, y0+ny) x columns [x0, x0+nx) of the stored mask into buf
 * (ny * nx ints); RASTER_EFORMAT for a value out of int's range. varid -1
 * (regions_mask_var of a lean file) reads through HDF5, also after the
 * file has been bound to netCDF. */
int regions_mask_rows(const raster_var *v, int varid, size_t y0, size_t ny,
                      size_t x0, size_t nx, int *buf);

/* Checks, once, that every loaded run of region r lies on cells the
 * stored mask gives to r. Each region's runs are checked alone as they
 * load (in the grid, in order, covering its store cells once), but only
 * the mask shows a run moved onto another region's cells: a read that
 * places cells by their runs (bbox and full layouts, several regions in
 * grid order, cell coordinates) would put the values there. Runs derived
 * from the mask (v->lay), or checked against their checksums (v->sums),
 * need no check. */
int regions_check_mask(raster_var *v, size_t r);

/* Marks bits [a, a+n) of map; 0 (nothing marked) when one of them was
 * set already. */
int regions_mark(uint64_t *map, size_t a, size_t n);

/* Fields of a row of a region's `runs` table: y x len offset, the offset
 * counting the region's pure store cells first, then its mixed run. */
#define REGIONS_RUN_FIELDS 4

/* Rows of region r's `runs` table (runs known) into rows[nruns * 4]. */
void regions_table_rows(const raster_var *v, size_t r, long long *rows);

void regions_free(raster_var *v);

#endif
