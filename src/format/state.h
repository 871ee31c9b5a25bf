/*
 * state.h - making and freeing the state var.h describes: a file's locks,
 * a variable's outer shape (looked up once in a read-only file), freeing
 * variables with everything they hold.
 */
#ifndef RASTER_STATE_H
#define RASTER_STATE_H

#include <stddef.h>

#include "var.h"

/* Initialises f's locks (file_new; 0 or an errno). */
int file_locks_init(raster_file *f);
void file_locks_destroy(raster_file *f);

/* 1 when v's dimension d is unlimited (a lean file: as its open found). */
int var_dim_unlimited(const raster_var *v, int d);

/* Outer dimension lengths of v right now (unlimited ones grow). */
int var_outer_shape(const raster_var *v, size_t *shape);

/* Outer dimension lengths for a read of the outer box start/count/stride
 * (stride may be NULL): var_outer_shape's, except that a writable file
 * asks netCDF only when the lengths it last saw do not hold the box. A
 * read inside them is placed and filled exactly as with today's lengths
 * (dimensions only grow), and netCDF's length of an unlimited dimension
 * costs a scan of every dataset on it. */
int var_read_shape(const raster_var *v, const size_t *start,
                   const size_t *count, const ptrdiff_t *stride,
                   size_t *shape);

/* A writable file: v's whole shape for a write (the grid too): fixed
 * lengths, and along unlimited dimensions at least the records any store
 * of v holds (see var.h); looked up once. */
int var_write_shape(raster_var *v, size_t *shape);

/* 1 when v's dimension d is unlimited, in a writable file (cached with
 * var_write_shape; 0 on a failed lookup). */
int var_write_unlimited(raster_var *v, int d);

/* After a write of the box start/count/stride (stride may be NULL):
 * records up to its end exist. */
void var_wrote(raster_var *v, const size_t *start, const size_t *count,
               const ptrdiff_t *stride);

/* 1 when dimension `dimid`, seen from group `grpid`, is unlimited. */
int var_nc_dim_unlimited(int grpid, int dimid);

/* Frees the small writes v holds back, unwritten (writeback.c's flush has
 * written them; var_free drops them). */
void var_pend_free(raster_var *v);

void var_free(raster_var *v);

/* Frees every variable of a file's list and empties it. */
void var_list_free(raster_var **list);

#endif
