/*
 * hide.c - keeps raster's storage groups out of the shim's read-only
 * netCDF opens.
 *
 * nc_open reads every object of a netCDF-4 file, and a raster variable's
 * storage (its region groups, tables and stores) costs three times the
 * plain file's whole open (docs/PERFORMANCE.md, "Small calls"). libnetcdf
 * walks each group with H5Literate; hide_install() points libnetcdf's
 * import of it here (imports.c), and while hide_begin() is in force on the
 * calling thread the walk skips the links to storage groups, so netCDF
 * builds the plain file's view. raster then reads the storage through
 * HDF5 (raster_attach_view). Any other walk, and every other thread's,
 * goes straight to HDF5.
 */
#include "hide.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>

#include "imports.h"
#include "raster.h"
#include "raster_internal.h"
#include "resolve.h"

/* H5Literate's three names (1.10 has the first; 1.12 and on have all
 * three, the first being 1.12's own), each with a callback that takes a
 * link info starting with the link's type. */
typedef herr_t (*link_fn)(hid_t g, const char *name, const void *info,
                          void *data);
typedef herr_t (*iterate_fn)(hid_t g, H5_index_t idx, H5_iter_order_t order,
                             hsize_t *at, link_fn op, void *data);

enum { ITER_PLAIN, ITER_V1, ITER_V2, ITER_NAMES };
static const char *const iterate_names[ITER_NAMES] = {
    "H5Literate", "H5Literate1", "H5Literate2"};
static iterate_fn real_iterate[ITER_NAMES];

static _Thread_local int hiding;
static _Thread_local size_t hidden;
static int installed;

typedef struct wrapped {
    link_fn op;
    void *data;
} wrapped;

typedef struct link_head {
    H5L_type_t type; /* the first member of every H5L_info*_t */
} link_head;

static herr_t skip_storage(hid_t g, const char *name, const void *info,
                           void *data)
{
    const wrapped *w = data;
    if (((const link_head *)info)->type == H5L_TYPE_HARD &&
        raster_is_storage_link((int64_t)g, name) == 1) {
        hidden++;
        return 0;
    }
    return w->op(g, name, info, w->data);
}

static herr_t iterate(int which, hid_t g, H5_index_t idx,
                      H5_iter_order_t order, hsize_t *at, link_fn op,
                      void *data)
{
    if (!hiding || !op)
        return real_iterate[which](g, idx, order, at, op, data);
    wrapped w = {op, data};
    return real_iterate[which](g, idx, order, at, skip_storage, &w);
}

static herr_t iterate_plain(hid_t g, H5_index_t idx, H5_iter_order_t order,
                            hsize_t *at, link_fn op, void *data)
{
    return iterate(ITER_PLAIN, g, idx, order, at, op, data);
}

static herr_t iterate_v1(hid_t g, H5_index_t idx, H5_iter_order_t order,
                         hsize_t *at, link_fn op, void *data)
{
    return iterate(ITER_V1, g, idx, order, at, op, data);
}

static herr_t iterate_v2(hid_t g, H5_index_t idx, H5_iter_order_t order,
                         hsize_t *at, link_fn op, void *data)
{
    return iterate(ITER_V2, g, idx, order, at, op, data);
}

static iterate_fn const hooks[ITER_NAMES] = {iterate_plain, iterate_v1,
                                              iterate_v2};

/* libnetcdf's link map, and the H5Literate* its own lookups reach. */
static void install(void)
{
    Dl_info info;
    struct link_map *map = NULL;
    void *netcdf_fn = resolve_real("nc_inq_libvers");
    if (!netcdf_fn ||
        !dladdr1(netcdf_fn, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return;
    int any = 0, failed = 0;
    for (int i = 0; i < ITER_NAMES; i++) {
        real_iterate[i] = (iterate_fn)resolve_real(iterate_names[i]);
        if (!real_iterate[i])
            continue;
        int n = imports_replace(map, iterate_names[i], (void *)hooks[i]);
        failed |= n < 0;
        any |= n > 0;
    }
    /* a slot written before a failure still reaches HDF5 (real_iterate
     * is set first); only views need every slot */
    installed = any && !failed;
}

int hide_install(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
    return installed;
}

void hide_begin(void)
{
    hidden = 0;
    hiding = installed;
}

size_t hide_end(void)
{
    hiding = 0;
    return hidden;
}
