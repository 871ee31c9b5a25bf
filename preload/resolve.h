/*
 * resolve.h - finding the real netCDF-C functions behind the shim's
 * wrappers, and checking that the program's libnetcdf is of the flavour
 * (serial or MPI) the shim was built for.
 */
#ifndef RASTER_PRELOAD_RESOLVE_H
#define RASTER_PRELOAD_RESOLVE_H

/* libnetcdf's own definition of `name`: the one in RASTER_NETCDF_PATH, the
 * copy raster links (route.c sends the core only calls whose caller uses
 * that copy). NULL when it is not loaded or lacks `name`. Never a wrapper:
 * the lookup searches only that library and its dependencies. */
void *resolve_real(const char *name);

/* 1 when the libnetcdf that defines nc_open is the flavour this shim was
 * built for (libnetcdf_mpi for the MPI flavour, libnetcdf otherwise). Writes
 * the library's path into `path` (size len) for messages. */
int resolve_flavour_ok(char *path, unsigned len);

#endif
