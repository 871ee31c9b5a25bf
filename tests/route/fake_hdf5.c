/*
 * fake_hdf5.c - a stand-in for a libhdf5 in test_route_unit (its file name
 * begins with "libhdf5", which is how route.c knows one): a netCDF call
 * from it goes straight to netCDF.
 */
#include <netcdf.h>

#include "fake_hdf5.h"

int fake_hdf5_varnatts(int ncid, int *nattsp)
{
    int st = nc_inq_varnatts(ncid, 0, nattsp);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return st;
}
