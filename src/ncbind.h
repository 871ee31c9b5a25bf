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

#endif
