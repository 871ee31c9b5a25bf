/*
 * error.h - internal error plumbing: set the thread's detailed message (and
 * the netCDF status a shim reports for it) and return a code in one
 * statement.
 */
#ifndef RASTER_ERROR_H
#define RASTER_ERROR_H

#include "raster.h"

/* Records a printf-style message for raster_errmsg() and returns `code`.
 * The thread's netCDF status (raster_nc_status()) becomes the usual one for
 * `code` (RASTER_ENOMEM: NC_ENOMEM, RASTER_EINVAL: NC_EINVAL, ...). */
int raster_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* As raster_fail(), recording `nc_status` (an NC_E* code) as the netCDF
 * status: the status of the netCDF call that failed, or the one netCDF
 * gives for the same bad request. */
int raster_fail_nc(int code, int nc_status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* nc_close(ncid), and nc_abort(ncid) when that fails: netCDF keeps a file
 * whose close failed (a damaged or hostile one) open, with its HDF5
 * objects, and its id is then lost to the caller. Returns nc_close's
 * status. */
int raster_nc_close(int ncid);

/* Sets the thread's netCDF status without touching the message (a typed
 * transfer that succeeded: NC_NOERR, or NC_ERANGE). */
void raster_nc_status_set(int nc_status);

/* The netCDF status raster_fail() records for `code`. */
int raster_nc_status_of(int code);

/* Clears the calling thread's message (used by tests). */
void raster_errmsg_clear(void);

#endif
