/*
 * file.h - what the MPI calls (parallel.c) take from file.c besides the
 * public API.
 */
#ifndef RASTER_FILE_H
#define RASTER_FILE_H

#include "var.h"

/* The checks every create and open makes first: `out` and `path` given
 * (*out cleared), `mode` RASTER_READ or RASTER_WRITE (a create passes
 * RASTER_WRITE), raster's filter registered before netCDF opens the file
 * (it checks the placeholders' filter). RASTER_OK or the error. */
int file_start(const char *path, int mode, raster_file **out);

#endif
