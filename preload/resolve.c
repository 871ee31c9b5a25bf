/*
 * resolve.c - real-function lookup for the shim core (libraster_shim.so).
 *
 * The core is opened RTLD_LOCAL by the preload library (route.c) only for
 * callers whose libnetcdf is RASTER_NETCDF_PATH, the one libraster links;
 * so the real functions are that library's own, looked up on a handle to
 * it. The global scope is no guide here: it holds the preload library's
 * wrappers and, in a program that loaded no libnetcdf globally, nothing.
 */
#include "resolve.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef RASTER_NETCDF_PATH
#error "RASTER_NETCDF_PATH (the libnetcdf raster links) must be defined"
#endif

static void *netcdf;  /* handle on RASTER_NETCDF_PATH, kept for good */
static pthread_once_t netcdf_once = PTHREAD_ONCE_INIT;

static void open_netcdf(void)
{
    /* NOLOAD: the core's own dependency has loaded it; a path names the
     * loaded object even when it was loaded under its soname */
    netcdf = dlopen(RASTER_NETCDF_PATH, RTLD_LAZY | RTLD_NOLOAD);
}

void *resolve_real(const char *name)
{
    if (pthread_once(&netcdf_once, open_netcdf) != 0 || !netcdf)
        return NULL;
    /* dlsym on a handle searches the object and its dependencies, never
     * the global scope where the preload library's wrappers are */
    return dlsym(netcdf, name);
}

int resolve_flavour_ok(char *path, unsigned len)
{
    Dl_info info;
    void *real = resolve_real("nc_open");
    path[0] = '\0';
    if (!real || !dladdr(real, &info) || !info.dli_fname)
        return 0;
    snprintf(path, len, "%s", info.dli_fname);
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    int is_mpi = strstr(base, "netcdf_mpi") != NULL;
#ifdef RASTER_MPI
    return is_mpi;
#else
    return !is_mpi;
#endif
}
