/* fake_raster.h - the fake libraster's calls (fake_raster.c). */
#ifndef ROUTE_FAKE_RASTER_H
#define ROUTE_FAKE_RASTER_H
int fake_raster_varnatts(int ncid, int *nattsp);
int fake_raster_filter(int ncid, unsigned *idp);
#endif
