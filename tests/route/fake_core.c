/*
 * fake_core.c - a stand-in for libraster_shim.so in test_route_unit: the
 * wrappers route.c sends the program's calls to. Each records that the
 * core answered and gives an answer no "real" function gives;
 * fake_core_varnatts is a netCDF call of the core's own.
 */
#include <netcdf.h>
#include <netcdf_filter.h>

#include "fake_log.h"

int nc_inq_varnatts(int ncid, int varid, int *nattsp)
{
    (void)ncid, (void)varid;
    route_fake_record("core:nc_inq_varnatts");
    if (nattsp)
        *nattsp = 100;
    return NC_NOERR;
}

/* Through the exported symbol: the router's, first in the global scope. */
int fake_core_varnatts(int ncid, int *nattsp)
{
    int st = nc_inq_varnatts(ncid, 0, nattsp);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return st;
}

int nc_inq_var_filter_ids(int ncid, int varid, size_t *nfiltersp,
                          unsigned int *ids)
{
    (void)ncid, (void)varid, (void)ids;
    route_fake_record("core:nc_inq_var_filter_ids");
    if (nfiltersp)
        *nfiltersp = 200;
    return NC_NOERR;
}
