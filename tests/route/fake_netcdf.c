/*
 * fake_netcdf.c - a stand-in for the system libnetcdf in test_route_unit:
 * the copy route.c is built against (RASTER_NETCDF_PATH names this file).
 * Its functions record that "real" netCDF answered; nc_inq_var_filter
 * calls the exported nc_inq_var_filter_ids, as netCDF-C does, so that the
 * nested call comes back through the router, and so does
 * route_fake_netcdf_varnatts, a call netCDF makes outside any call routed
 * to it.
 */
#include <netcdf.h>
#include <netcdf_filter.h>
#include <string.h>

#include "fake_log.h"

static char seen[64][48];
static int nseen;

void route_fake_record(const char *what)
{
    if (nseen < 64) {
        strncpy(seen[nseen], what, sizeof seen[0] - 1);
        nseen++;
    }
}

int route_fake_count(const char *what)
{
    int n = 0;
    for (int i = 0; i < nseen; i++)
        n += strcmp(seen[i], what) == 0;
    return n;
}

void route_fake_reset(void) { nseen = 0; }

static void (*hold_fn)(void);

void route_fake_set_hold(void (*hold)(void)) { hold_fn = hold; }

const char *nc_inq_libvers(void) { return "fake netCDF"; }

int nc_inq_varnatts(int ncid, int varid, int *nattsp)
{
    (void)varid;
    route_fake_record("real:nc_inq_varnatts");
    if (ncid == ROUTE_FAKE_HOLD_NCID && hold_fn)
        hold_fn();
    if (ncid < 0)
        return NC_EBADID;
    if (nattsp)
        *nattsp = 7;
    return NC_NOERR;
}

int nc_inq_var_filter_ids(int ncid, int varid, size_t *nfiltersp,
                          unsigned int *ids)
{
    (void)ncid, (void)varid, (void)ids;
    route_fake_record("real:nc_inq_var_filter_ids");
    if (nfiltersp)
        *nfiltersp = 1;
    return NC_NOERR;
}

int nc_inq_var_filter(int ncid, int varid, unsigned int *idp,
                      size_t *nparamsp, unsigned int *params)
{
    (void)nparamsp, (void)params;
    if (ncid == ROUTE_FAKE_HOLD_NCID && hold_fn)
        hold_fn();
    size_t n = 0;
    /* through the exported symbol (interposable): back to the router */
    int st = nc_inq_var_filter_ids(ncid, varid, &n, NULL);
    route_fake_record(n == 1 ? "real:nc_inq_var_filter(saw real)"
                             : "real:nc_inq_var_filter(saw core)");
    if (idp)
        *idp = 307;
    return st; /* not a tail call: the nested call returns here */
}

int route_fake_netcdf_varnatts(int ncid, int *nattsp)
{
    int st = nc_inq_varnatts(ncid, 0, nattsp);
    /* no tail call: the return address must be this library's */
    __asm__ volatile("" ::: "memory");
    return st;
}
