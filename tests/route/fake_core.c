/*
 * fake_core.c - a stand-in for libraster_shim.so in test_route_unit: the
 * wrappers route.c sends the program's calls to. Each records that the
 * core answered and gives an answer no "real" function gives.
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

int nc_inq_var_filter_ids(int ncid, int varid, size_t *nfiltersp,
                          unsigned int *ids)
{
    (void)ncid, (void)varid, (void)ids;
    route_fake_record("core:nc_inq_var_filter_ids");
    if (nfiltersp)
        *nfiltersp = 200;
    return NC_NOERR;
}
