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

/* A view's open (raster_attach_view): the storage groups of f, whose
 * caller's handle `ncid` shows none, are checked without loading them
 * (complete, each placeholder of the extent recorded at the last serial
 * close, ATT_EXTENT), and each placeholder's caller ids are kept in
 * f->view_groups; lean_open() loads the variables on first need. Any doubt
 * declines (RASTER_EFORMAT): the caller loads the file now instead. */
int lean_view_scan(raster_file *f, int ncid);

/* A storage group lean_view_scan checked: its placeholder's ids in the
 * caller's handle (group, varid), its HDF5 path, its variable's name and
 * the group itself (hid_t), kept open for the load, which then neither
 * walks the root's links again nor reads what the scan read; and what a
 * read needs to know before the load (raster_view_reads_through). */
struct view_group {
    int grp, varid;
    char *path, *name;
    int64_t gid;
    int format;  /* the storage group's format version */
    int nck;     /* the placeholder's rank when chunked, else 0 */
    size_t ck[RASTER_MAX_DIMS]; /* and its chunk shape */
};

/* Closes the groups lean_view_scan kept open (before the file's HDF5
 * id closes); with `all`, frees the records too (none left). */
void lean_view_free(raster_file *f, int all);

#endif
