/*
 * real.h - calling netCDF's own functions from the shim core (shim.c,
 * files.c): the definitions in RASTER_NETCDF_PATH (resolve_real), never a
 * wrapper. Calls the core makes by name would also reach netCDF (route.c
 * sends the core's calls straight there), but through the router; these
 * say what happens and cost no lookup of the caller.
 */
#ifndef RASTER_PRELOAD_REAL_H
#define RASTER_PRELOAD_REAL_H

#include <netcdf.h>
#include <stdatomic.h>

#include "resolve.h"

/* The real function `name`, resolved once into *slot (a racing second
 * store writes the same value). NULL when libnetcdf lacks it. */
static inline void *real_fn(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (!fn) {
        fn = resolve_real(name);
        atomic_store_explicit(slot, fn, memory_order_release);
    }
    return fn;
}

/* The status of netCDF's own `name` called with `args` (each use site keeps
 * its own resolved pointer); NC_EINTERNAL when libnetcdf lacks it. */
#define CALL_REAL(name, args)                                                 \
    ({                                                                        \
        static _Atomic(void *) slot_;                                         \
        __typeof__(&name) fn_ = (__typeof__(&name))real_fn(&slot_, #name);    \
        fn_ ? fn_ args : NC_EINTERNAL;                                        \
    })

#endif
