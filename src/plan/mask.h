/*
 * mask.h - internal view of a region mask, for modules that store or read
 * masks inside raster files.
 */
#ifndef RASTER_MASK_H
#define RASTER_MASK_H

#include <pthread.h>

#include "raster.h"

struct raster_mask {
    size_t ny, nx;
    int32_t *values;    /* NULL while dropped (see mask_drop_values) */
    /* where dropped values are read back from: a mask of a read-only file
     * keeps no values resident (they cost 4 bytes a cell, more than all
     * else an open file holds); the first raster_mask_values() call
     * reloads them */
    int src_grp, src_var;
    pthread_mutex_t lock;
    int has_lock;
    size_t nnames;      /* region names: CF flag names, or a names table */
    int32_t *name_ids;
    char **names;
    char **abbrevs;     /* NULL, or nnames entries (NULL: none); only a
                         * names table gives them */
};

/* Reads 2-D variable `varid` of an open netCDF group as a mask; `label`
 * names the file in messages. Same checks as raster_mask_load(). */
int mask_read_ncid(int ncid, int varid, const char *label, raster_mask **out);

/* mask_read_ncid of a mask whose file is `path` (NULL: unknown): an int
 * mask deflated there is inflated by unfilter.c straight from its chunks
 * (pread where HDF5 says they are) instead of through netCDF and zlib. */
int mask_read_file(int ncid, int varid, const char *label, const char *path,
                   raster_mask **out);

/* Masks loaded that way since the process started (the tests' proof). */
size_t mask_direct_loads(void);

/* A mask stored by raster (2-D, integer) without its values: shape and
 * names now, values on the first raster_mask_values() call. */
int mask_describe_ncid(int ncid, int varid, const char *label,
                       raster_mask **out);

/* The netCDF types a stored mask may have (all read into int). */
#define MASK_STORED_NTYPES 5
extern const int mask_stored_types[MASK_STORED_NTYPES];

/* A stored mask described without netCDF (src/format/lean.c): its shape, and its
 * names from flag_values (nvals) and flag_meanings (modified) when given.
 * It holds no values and reads none back until the file's netCDF ids are
 * bound to it (mask_bind_source). */
int mask_describe(size_t ny, size_t nx, const long long *vals, size_t nvals,
                  char *meanings, raster_mask **out);

/* Drops the values of a mask read from (grp, var) of a file that stays
 * open and unchanged; raster_mask_values() reads them back on demand. */
void mask_drop_values(raster_mask *m, int grp, int var);

/* Points a mask without values (mask_drop_values) at (grp, var) to read
 * them back from, under its lock: a lean file's mask once netCDF is open. */
void mask_bind_source(raster_mask *m, int grp, int var);

/* Deep copy of a mask, names included. */
int mask_clone(const raster_mask *src, raster_mask **out);

#endif
