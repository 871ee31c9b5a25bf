/*
 * lean.h - Opening a read-only raster file through HDF5 alone.
 *
 * netCDF's nc_open reads every object of a file (each region group, store,
 * table and dimension: 61 objects in the benchmark file), and nc_close
 * releases them all; for a region read that is most of raster's fixed
 * cost. A region read needs a handful of them: the variable group's
 * attributes, the placeholder's, the dimensions' lengths, the runs and the
 * stores it touches. raster_open() in RASTER_READ mode therefore opens the
 * file here first, with the same checks as the netCDF path (format 3 with
 * its regions' summary only); anything else, or any doubt, and it opens
 * the file through netCDF as before. netCDF is opened later, and the ids
 * bound, by file_netcdf() when a call needs it (docs/ARCHITECTURE.md).
 */
#ifndef RASTER_LEAN_H
#define RASTER_LEAN_H

#include <stddef.h>

#include "var.h"

/* Loads the raster variables of f (f->path, read-only, no netCDF id)
 * through HDF5: f->vars, f->h5 (left open for the fast path), f->lean.
 * Any error leaves f as it was: RASTER_ENOMEM is the caller's error, any
 * other asks for the netCDF path (which gives the file's own errors). */
int lean_open(raster_file *f);

/* Rows [first, first+n) of v's shared runs table into rows (4 per row),
 * the table checked to be int64, n_rows x 4, and to hold them. */
int lean_runs(const raster_var *v, size_t first, size_t n, long long *rows);

/* The rows of index table `name` of v's group ("chunks", tiles.c),
 * checked to be int64 with `fields` columns. */
int lean_table_rows(const raster_var *v, const char *name, size_t fields,
                    size_t *n);

/* Rows [first, first+n) of that table into rows (fields per row). */
int lean_table(const raster_var *v, const char *name, size_t fields,
               size_t first, size_t n, long long *rows);

/* Rows [y0, y0+ny) x columns [x0, x0+nx) of v's stored mask into buf. */
int lean_mask_rows(const raster_var *v, size_t y0, size_t ny, size_t x0,
                   size_t nx, int *buf);

#endif
