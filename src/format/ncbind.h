/*
 * ncbind.h - netCDF ids for a file opened through HDF5 alone (lean.c).
 */
#ifndef RASTER_NCBIND_H
#define RASTER_NCBIND_H

#include "var.h"

/* Opens netCDF on a file opened lean and binds its variables' netCDF ids
 * (ncbind.c); RASTER_OK at once for any other file. Every path that calls
 * netCDF on a variable's ids goes through it first. */
int file_netcdf(raster_file *f);

/* Binds lean file f as a view of the caller's handle `ncid`, whose netCDF
 * open did not see raster's storage groups (the shim's read-only opens):
 * each variable's placeholder ids there (raster_var_by_varid compares
 * them), after checking that the placeholder shows the stores' type,
 * dimension ids and lengths (`checked`: lean_view_scan() checked both
 * already). RASTER_EFORMAT when one does not. */
int ncbind_view(raster_file *f, int ncid, int checked);

#endif
