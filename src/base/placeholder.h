/*
 * placeholder.h - the filter that marks a placeholder (placeholder.c):
 * readers and writers without raster refuse the variable; raster, which
 * registers the filter (raster_filter_register(), raster.h), defines and
 * opens it as an ordinary variable.
 */
#ifndef RASTER_PLACEHOLDER_H
#define RASTER_PLACEHOLDER_H

#include <stddef.h>
#include <stdint.h>

#include "raster.h"

/* Puts the marker filter on variable varid of group parent (netCDF's
 * define mode, before the variable's dataset is created). */
int placeholder_mark(int parent, int varid, const char *name);

/* The failure of adopting variable `name` whose dataset netCDF created
 * already: RASTER_EUNSUPPORTED, with the reason. */
int placeholder_too_late(const char *name);

/* Puts RASTER_NOTE_ATT on the placeholder varid of group parent, naming
 * its storage group `group`; `holds`: the variable holds its values
 * (format 5), else they are in the group. */
int placeholder_note(int parent, int varid, const char *group, int holds);

/* Extends placeholder dataset `did` (an HDF5 id) to the variable's extent
 * `len` (its dimensions' lengths): netCDF never writes a placeholder, so
 * along an unlimited dimension it stays empty, and h5py-based readers
 * (h5netcdf) would pad it with fill values where HDF5 holds no marker.
 * Closes `did`. */
int placeholder_fit(int64_t did, int ndims, const size_t *len,
                    const char *name);

#endif
