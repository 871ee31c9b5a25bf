/*
 * fake_raster.c - a stand-in for libraster in test_route_unit: it defines
 * raster_version_number (how route.c knows libraster) and makes netCDF
 * calls as libraster does.
 */
#include <netcdf.h>
#include <netcdf_filter.h>

#include "fake_raster.h"

unsigned raster_version_number(void) { return 1; }

int fake_raster_varnatts(int ncid, int *nattsp)
{
    int st = nc_inq_varnatts(ncid, 0, nattsp);
    /* no tail call: the return address must be this library's */
    __asm__ volatile("" ::: "memory");
    return st;
}

int fake_raster_filter(int ncid, unsigned *idp)
{
    int st = nc_inq_var_filter(ncid, 0, idp, NULL, NULL);
    __asm__ volatile("" ::: "memory");
    return st;
}
