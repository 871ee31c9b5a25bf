/* fake_hdf5.h - the fake libhdf5's netCDF call (fake_hdf5.c). */
#ifndef ROUTE_FAKE_HDF5_H
#define ROUTE_FAKE_HDF5_H
int fake_hdf5_varnatts(int ncid, int *nattsp);
#endif
