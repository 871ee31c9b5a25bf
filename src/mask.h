/*
 * mask.h - internal view of a region mask, for modules that store or read
 * masks inside raster files.
 */
#ifndef RASTER_MASK_H
#define RASTER_MASK_H

#include "raster.h"

struct raster_mask {
    size_t ny, nx;
    int32_t *values;
    size_t nnames;      /* CF flag names, when the source had them */
    int32_t *name_ids;
    char **names;
};

/* Reads 2-D variable `varid` of an open netCDF group as a mask; `label`
 * names the file in messages. Same checks as raster_mask_load(). */
int mask_read_ncid(int ncid, int varid, const char *label, raster_mask **out);

/* Deep copy of a mask, names included. */
int mask_clone(const raster_mask *src, raster_mask **out);

#endif
