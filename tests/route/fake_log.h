/* fake_log.h - what test_route_unit's fake libraries record (kept by the
 * fake libnetcdf, fake_netcdf.c). */
#ifndef ROUTE_FAKE_LOG_H
#define ROUTE_FAKE_LOG_H
void route_fake_record(const char *what);
int route_fake_count(const char *what);
void route_fake_reset(void);
/* A function the fake nc_inq_varnatts and nc_inq_var_filter call for ncid
 * ROUTE_FAKE_HOLD_NCID (a test holds a thread inside netCDF with it, or
 * calls netCDF from the program while inside netCDF). */
#define ROUTE_FAKE_HOLD_NCID 0x30000
void route_fake_set_hold(void (*hold)(void));
/* The fake libnetcdf calls nc_inq_varnatts(ncid, 0, nattsp) itself. */
int route_fake_netcdf_varnatts(int ncid, int *nattsp);
#endif
