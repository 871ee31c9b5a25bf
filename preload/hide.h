/*
 * hide.h - raster's storage groups kept out of netCDF's read-only opens
 * (hide.c).
 */
#ifndef RASTER_PRELOAD_HIDE_H
#define RASTER_PRELOAD_HIDE_H

#include <stddef.h>

/* Points libnetcdf's H5Literate imports at hide.c (once). 1 when every
 * one it has was replaced, so that opens can hide; 0 otherwise (other
 * targets, an unreadable library: opens see everything, as before). */
int hide_install(void);

/* Around one netCDF open on the calling thread: while in force, netCDF's
 * walks of the file's groups skip raster's storage groups. hide_end()
 * returns how many it skipped (0: the file has no raster variable). */
void hide_begin(void);
size_t hide_end(void);

#endif
