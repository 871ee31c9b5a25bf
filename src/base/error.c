/*
 * error.c - status codes, their descriptions, and the per-thread detailed
 * message of the last failure.
 */
#include "error.h"

#include <netcdf.h>
#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_msg[512];
static _Thread_local int last_nc = NC_NOERR;

static const char *const descriptions[RASTER_ERROR_MAX + 1] = {
    [RASTER_OK] = "success",
    [RASTER_EINVAL] = "invalid argument",
    [RASTER_ENOMEM] = "out of memory",
    [RASTER_EOVERFLOW] = "size too large to represent",
    [RASTER_ENETCDF] = "netCDF call failed",
    [RASTER_EHDF5] = "HDF5 call failed",
    [RASTER_EIO] = "I/O error",
    [RASTER_EMASK] = "unusable region mask",
    [RASTER_ENOTFOUND] = "not found",
    [RASTER_EFORMAT] = "not a raster file or corrupt raster file",
    [RASTER_EINCOMPLETE] = "incomplete raster file (no completeness marker)",
    [RASTER_EUNSUPPORTED] = "unsupported by raster",
    [RASTER_EINTERNAL] = "internal error in raster",
};

const char *raster_strerror(int code)
{
    if (code < 0 || code > RASTER_ERROR_MAX)
        return "unknown raster error code";
    return descriptions[code];
}

const char *raster_errmsg(void) { return last_msg; }

void raster_errmsg_clear(void) { last_msg[0] = '\0'; }

int raster_nc_status_of(int code)
{
    switch (code) {
    case RASTER_OK: return NC_NOERR;
    case RASTER_ENOMEM: return NC_ENOMEM;
    case RASTER_ENETCDF: return NC_EHDFERR; /* when the call's own is lost */
    case RASTER_EHDF5: return NC_EHDFERR;
    case RASTER_EIO: return NC_EIO;
    case RASTER_ENOTFOUND: return NC_ENOTVAR;
    case RASTER_EFORMAT: return NC_ENOTNC;
    case RASTER_EINCOMPLETE: return NC_ENOTNC;
    case RASTER_EUNSUPPORTED: return NC_ENOTBUILT;
    case RASTER_EINTERNAL: return NC_EINTERNAL;
    default: return NC_EINVAL; /* EINVAL, EOVERFLOW, EMASK, unknown */
    }
}

int raster_nc_status(void) { return last_nc; }

void raster_nc_status_set(int nc_status) { last_nc = nc_status; }

int raster_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    last_nc = raster_nc_status_of(code);
    return code;
}

int raster_fail_nc(int code, int nc_status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    last_nc = nc_status;
    return code;
}

int raster_nc_close(int ncid)
{
    int st = nc_close(ncid);
    if (st != NC_NOERR)
        (void)nc_abort(ncid); /* its status adds nothing to nc_close's */
    return st;
}

int raster_version_number(void) { return RASTER_VERSION_NUMBER; }

const char *raster_version_string(void) { return RASTER_VERSION_STRING; }
