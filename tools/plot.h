/*
 * plot.h - rasterstat --plot: a region mesh drawn as a PNG picture, after
 * the RASTER paper's Fig. 3. Not part of libraster's API.
 */
#ifndef RASTER_PLOT_H
#define RASTER_PLOT_H

#include <stddef.h>

#include "raster.h"

/* What a plot turned out like, for the tool's report. */
typedef struct plot_info {
    size_t width, height;   /* the whole picture, in pixels */
    size_t map_x, map_y;    /* top-left pixel of the map part */
    size_t map_w, map_h;    /* its size */
    size_t px_per_cell;     /* each cell drawn as n x n pixels (1 or more) */
    size_t cells_per_px;    /* each pixel the majority of n x n cells */
    int outlines;           /* chunk outlines drawn (tiles big enough) */
    size_t labelled;        /* regions with their id or name on the map */
} plot_info;

/* Draws the mesh of `mask` (regions in colour, land/0 grey; chunk outlines;
 * mixed chunks hatched; region ids or names on the map where they fit; a
 * legend with id, name and cell share; a title with `title`, the grid, the
 * tiles and the chunks) and writes it to `path` as an RGB PNG, through a
 * temporary file beside it. Row 0 of the mask is at the bottom of the
 * picture. The picture is at most about 1200 pixels on the map's longer
 * side: small grids are enlarged (up to 8 px per cell), large ones reduced
 * (one pixel per k x k cells, the majority id). Prints a message on stderr
 * and returns -1 on failure, 0 on success (and fills *info, if not NULL). */
int plot_mesh_png(const char *path, const char *title,
                  const raster_mask *mask, const raster_mesh *mesh,
                  plot_info *info);

#endif
