/*
 * variable.h - what the data paths (hyperslab.c, region.c) take from
 * variable.c besides the public API.
 */
#ifndef RASTER_VARIABLE_H
#define RASTER_VARIABLE_H

#include <stddef.h>

#include "var.h"

/* Checks start/count/stride (stride may be NULL) of a read against v's
 * shape, or of a write, which may extend unlimited outer dimensions. The
 * grid is bounded by the mask. Failures record netCDF's status for the
 * same request (strides first, then dimension by dimension: NC_ESTRIDE,
 * NC_EINVALCOORDS, NC_EEDGE). */
int var_check_read(const raster_var *v, const size_t *start,
                   const size_t *count, const ptrdiff_t *stride);
int var_check_write(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride);

#endif
