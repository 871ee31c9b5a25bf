/*
 * resolve.h - finding the real netCDF-C functions behind the shim's
 * wrappers, and checking that the program's libnetcdf is of the flavour
 * (serial or MPI) the shim was built for.
 */
#ifndef RASTER_PRELOAD_RESOLVE_H
#define RASTER_PRELOAD_RESOLVE_H

/* The next definition of `name` after the shim: dlsym(RTLD_NEXT), else a
 * search of every loaded object (libnetcdf opened with RTLD_LOCAL, as Python
 * extension modules do, is invisible to RTLD_NEXT). NULL when no loaded
 * object defines it. Never `self`, the shim's own wrapper. */
void *resolve_real(const char *name, void *self);

/* 1 when the libnetcdf that defines nc_open is the flavour this shim was
 * built for (libnetcdf_mpi for the MPI flavour, libnetcdf otherwise). Writes
 * the library's path into `path` (size len) for messages. */
int resolve_flavour_ok(char *path, unsigned len);

#endif
