/*
 * placeholder.c - the marker that makes a placeholder refuse readers and
 * writers without raster.
 *
 * A placeholder (docs/FORMAT.md) is the netCDF variable V whose data lives
 * in raster_V. Read by a program without raster it would hand out fill
 * values as if they were the data, and a write to it would be lost to
 * raster. So its HDF5 filter pipeline names a filter only raster registers
 * (RASTER_FILTER_ID): netCDF-C (4.8 and on) marks a variable whose filter
 * is unavailable at open as unreadable and unwritable (NC_ENOFILTER), and
 * HDF5 itself refuses to write such a dataset or read its allocated chunks.
 * Registered here, the filter lets netCDF define and open placeholders as
 * ordinary variables; it moves no data: raster never reads or writes a
 * placeholder's values, so the filter fails in both directions and an
 * accidental transfer is an error, never silent.
 */
#include "placeholder.h"

#include <hdf5.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "raster_internal.h"

/* The name HDF5 stores in the pipeline message: what h5dump, h5py and
 * HDF5's "required filter ... is not registered" show. */
#define FILTER_NAME                                                           \
    "raster placeholder: the data is stored by region in the group "          \
    "raster_<name>; read it with raster (libraster, its LD_PRELOAD shim, "    \
    "or rasterconvert --restore)"

/* What the filter stores for a chunk of fill values (HDF5 allocates
 * chunks early in parallel files, and filters their fill values). */
static const char marker[8] = "RASTER\0\1";

/* At dataset creation: the filter's parameters become the element size and
 * the fill value's bytes (what an allocated chunk holds), chunks are
 * allocated early, and the filter becomes mandatory. netCDF defines every
 * filter as optional (so that filters on variable-length types are
 * skipped); mandatory, HDF5 refuses to write where the filter is missing
 * instead of skipping it, so h5py cannot write a placeholder either. */
static herr_t set_local(hid_t dcpl, hid_t type, hid_t space)
{
    (void)space;
    size_t elem = H5Tget_size(type);
    unsigned cd[4] = {0, 0, 0, 0};
    H5D_fill_value_t defined;
    if (elem == 0 || elem > 2 * sizeof cd[0] ||
        H5Pfill_value_defined(dcpl, &defined) < 0)
        return -1;
    cd[0] = (unsigned)elem;
    /* every chunk allocated (the fill value's marker) as the extent grows:
     * HDF5 fills unallocated chunks without asking the filter, so h5py
     * would read them as fill values where it cannot read the marker */
    if (H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0)
        return -1;
    /* an undefined fill value: HDF5 fills with zero bytes */
    if (defined != H5D_FILL_VALUE_UNDEFINED &&
        H5Pget_fill_value(dcpl, type, &cd[1]) < 0)
        return -1;
    /* filters ahead of the marker (issue #23): netCDF puts fletcher32 and
     * shuffle first whatever the order they were set in, and a program's
     * deflate set before raster adopted its variable precedes the marker
     * too. The chunk of fill values then reaches the marker transformed,
     * so it cannot be recognised: a fourth parameter says so. */
    int n = H5Pget_nfilters(dcpl), ahead = 0;
    for (int i = 0; i < n; i++) {
        unsigned flags, fcd[8];
        size_t nfcd = 8;
        char name[8];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nfcd,
                                         fcd, sizeof name, name, NULL);
        if (id < 0)
            return -1;
        if (id == RASTER_FILTER_ID)
            break;
        ahead++;
    }
    cd[3] = (unsigned)ahead;
    return H5Pmodify_filter(dcpl, RASTER_FILTER_ID, H5Z_FLAG_MANDATORY,
                            ahead ? 4 : 3, cd);
}

/* Decoding always fails: a placeholder's values are in raster_V. Encoding
 * accepts only a chunk of fill values (an allocation) and stores the
 * marker; real data fails, so a write that raster would not see is an
 * error, never silently kept or dropped. */
static size_t refuse(unsigned flags, size_t cd_nelmts,
                     const unsigned cd_values[], size_t nbytes,
                     size_t *buf_size, void **buf)
{
    if ((flags & H5Z_FLAG_REVERSE) || cd_nelmts < 3 || cd_values[0] == 0 ||
        cd_values[0] > 2 * sizeof cd_values[0] ||
        (nbytes % cd_values[0] && !(cd_nelmts >= 4 && cd_values[3] > 0)))
        return 0;
    size_t elem = cd_values[0];
    const unsigned char *fill = (const unsigned char *)&cd_values[1];
    const unsigned char *p = *buf;
    /* behind other filters (set_local) the bytes are theirs, not values:
     * only the marker is stored. Programs without raster still cannot
     * read (decoding fails) nor write (the filter is mandatory there). */
    int behind = cd_nelmts >= 4 && cd_values[3] > 0;
    for (size_t i = 0; !behind && i < nbytes; i += elem)
        if (memcmp(p + i, fill, elem) != 0)
            return 0;
    size_t n = *buf_size < sizeof marker ? *buf_size : sizeof marker;
    memcpy(*buf, marker, n);
    return n;
}

static const H5Z_class2_t filter_class = {
    H5Z_CLASS_T_VERS, RASTER_FILTER_ID, 1, 1, FILTER_NAME, NULL,
    set_local, refuse};

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_status = RASTER_OK;

static void register_once(void)
{
    if (H5Zfilter_avail(RASTER_FILTER_ID) > 0)
        return; /* registered by another copy of raster in this process */
    if (H5Zregister(&filter_class) < 0)
        register_status = RASTER_ENETCDF;
}

int raster_filter_register(void)
{
    pthread_once(&registered, register_once);
    if (register_status != RASTER_OK)
        return raster_fail(register_status, "HDF5 refused to register "
                           "raster's placeholder filter %d", RASTER_FILTER_ID);
    return RASTER_OK;
}

int placeholder_too_late(const char *name)
{
    return raster_fail_nc(RASTER_EUNSUPPORTED, NC_ELATEDEF, "%s was created "
                          "in the file before: HDF5 fixes a variable's "
                          "filters then, so it cannot be marked as a "
                          "placeholder; define the variable anew", name);
}

int placeholder_mark(int parent, int varid, const char *name)
{
    int rc = raster_filter_register();
    if (rc)
        return rc;
    int st = nc_def_var_filter(parent, varid, RASTER_FILTER_ID, 0, NULL);
    if (st == NC_ELATEDEF)
        return placeholder_too_late(name);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "marking the placeholder "
                              "of %s: %s", name, nc_strerror(st));
    return RASTER_OK;
}

int placeholder_note(int parent, int varid, const char *group, int holds)
{
    char text[NC_MAX_NAME + 256];
    if (holds)
        snprintf(text, sizeof text, "Laid out by region: its chunks are "
                 "indexed region by region in the group %s beside it. Any "
                 "netCDF reader reads it; raster reads a region's chunks "
                 "alone.", group);
    else
        snprintf(text, sizeof text, "Stored by region in the group %s "
                 "beside this variable, which holds no values; read it with "
                 "raster: its LD_PRELOAD shim (libraster_preload.so), the "
                 "libraster C API, or rasterconvert --restore for a plain "
                 "copy.", group);
    int st = nc_put_att_text(parent, varid, RASTER_NOTE_ATT, strlen(text),
                             text);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "noting the placeholder "
                              "in %s: %s", group, nc_strerror(st));
    return RASTER_OK;
}

int raster_filter_is_placeholder(unsigned id)
{
    return id == RASTER_FILTER_ID;
}

int placeholder_fit(int64_t did, int ndims, const size_t *len,
                    const char *name)
{
    hsize_t cur[H5S_MAX_RANK], want[H5S_MAX_RANK];
    hid_t space = did >= 0 ? H5Dget_space((hid_t)did) : -1;
    int n = space >= 0 ? H5Sget_simple_extent_dims(space, cur, NULL) : -1;
    if (space >= 0)
        H5Sclose(space);
    int grow = 0;
    for (int i = 0; n == ndims && i < n; i++) {
        want[i] = cur[i] > len[i] ? cur[i] : len[i];
        grow |= want[i] != cur[i];
    }
    /* allocated early, the new chunks get the marker at once */
    int extended = !grow || H5Dset_extent((hid_t)did, want) >= 0;
    if (did >= 0)
        H5Dclose((hid_t)did);
    if (n != ndims)
        return raster_fail(RASTER_EHDF5, "%s: HDF5 gives no extent for its "
                           "placeholder", name);
    if (!extended)
        return raster_fail(RASTER_EHDF5, "%s: HDF5 could not extend its "
                           "placeholder", name);
    return RASTER_OK;
}
