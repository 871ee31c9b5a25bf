/*
 * preload.c - placeholder for the LD_PRELOAD shim.
 *
 * It wraps nothing yet: preloading it must leave every program unchanged,
 * which the test suite checks (ncdump output with and without it). The shim
 * issue replaces this file with the generated netCDF-C wrappers.
 */
#include "raster.h"

/* Keeps libraster loaded with the shim, as the real shim will need it. */
__attribute__((visibility("default"))) int raster_preload_version(void)
{
    return raster_version_number();
}
