/*
 * define.h - a variable's storage group defined (define.c): the group,
 * description, mask, region groups and stores in netCDF's define mode,
 * then the mask and tables written at the first write; the marker and
 * extent a writer's close sets. meta.c builds a stored variable with the
 * same constructor (define_var_new).
 */
#ifndef RASTER_DEFINE_H
#define RASTER_DEFINE_H

#include <stddef.h>

#include "var.h"

/* The group of the mixed chunks' store. */
#define MIXED_GROUP "Mixed_Chunks"

/* Defines the group and stores of a raster variable `name` of group
 * `parent`, in format f->write_format, or with RASTER_FORMAT_AUTO in 3,
 * or 4 when it has more than FORMAT4_MIN_REGIONS regions or its region
 * groups would take the file past FORMAT4_GROUP_BUDGET groups; a format
 * of 2 or 3 chosen explicitly that would take the file past
 * NC_GROUPS_MAX groups is RASTER_EUNSUPPORTED, before anything is
 * defined. varid >= 0 adopts that existing, never-written variable as the
 * placeholder; -1 creates the placeholder (last, so that a failure leaves
 * only an abandoned group). Copies the mask. `comp` (NULL: plain, checked
 * by the caller) goes on every store, and on a placeholder created here;
 * an adopted one carries it already. */
int meta_define(raster_file *f, int parent, int varid, const char *name,
                int xtype, int ndims, const int *dimids, const size_t *chunk,
                const raster_mask *mask, const raster_compression *comp,
                raster_var **out);

/* Puts `c` (checked by the caller) on the defined stores and the
 * placeholder of v, whose settings are plain: netCDF define mode, before
 * the datasets are created (NC_ELATEDEF is RASTER_EINVAL). */
int meta_set_compression(raster_var *v, const raster_compression *c);

/* Writes the data part of the metadata (mask, index tables) once the file
 * can take data; a no-op after the first call. */
int meta_materialize(raster_var *v);

/* Records shape (v->ndims lengths) as the variable's extent at a serial
 * close, after its placeholder was fitted to it (ATT_EXTENT). */
int meta_put_extent(raster_var *v, const size_t *shape);

/* Sets (1) or clears (0) the completeness marker. */
int meta_mark_complete(raster_var *v, int complete);

/* Records the current names of v's dimensions in its raster_dims (after a
 * rename: the ids are what readers use, the names follow them). */
int meta_store_dim_names(raster_var *v);

/* Allocates v with its mesh and layout built from mask values: copied, or
 * taken over when *take is set. v->format is `format` when `groups` is
 * SIZE_MAX (a stored variable, meta_load), else the format a new variable
 * gets. */
int define_var_new(const char *name, int xtype, int ndims, const int *dimids,
                   const size_t *chunk, int format, size_t groups,
                   raster_mask **take, const raster_mask *mask,
                   raster_var **out);

/* The per-store arrays of v, for its regions plus the mixed store. */
int define_alloc_stores(raster_var *v);

#endif
