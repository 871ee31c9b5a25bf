/*
 * extract.h - what makes a rasterget extract CF-complete: the variables the
 * extracted variable depends on (its `coordinates`, the coordinate and
 * `Times`-style variables of its outer dimensions, `bounds`, the grid
 * mapping), sliced to the selection and, for the packed layout, gathered
 * cell by cell; the packed layout's CF list variable ("compression by
 * gathering", CF 8.2); and the global `history` line both tools append.
 * Not part of libraster's API. Failures print one message (copy_err) and
 * return -1.
 */
#ifndef RASTER_EXTRACT_H
#define RASTER_EXTRACT_H

#include <stddef.h>

#include "raster.h"

/* The selection an extract holds, in input and output terms. */
typedef struct extract_sel {
    raster_file *file; /* the input (its raster variables read through it) */
    int layout;        /* RASTER_LAYOUT_* */
    int nouter;
    const int *dimids;    /* input dimension ids: outer..., y, x */
    const size_t *shape;  /* their lengths */
    const size_t *ostart; /* outer selection */
    const size_t *ocount;
    const size_t *box;    /* the regions' bbox: y0, x0, y1, x1 */
    size_t ncells;        /* packed: the cells, in output order */
    const size_t *cy, *cx;
    int out;              /* output ncid */
    const int *odims;     /* output dims of the outer dimensions */
    int cell_dim;         /* packed: the output's cell dimension */
    int grid_dims[2];     /* output dims of y and x (packed: full length) */
} extract_sel;

/* Copies into the output every variable the extracted variable (whose
 * attributes are those of variable `var` of group `grp`) depends on and that fits the selection, then drops from
 * the `coordinates`, `bounds` and `grid_mapping` attributes of the output's
 * variables the names it does not hold. */
int extract_dependencies(const extract_sel *s, int grp, int var);

/* Defines and writes the packed layout's list variable `name` over the cell
 * dimension: the index of each cell in the grid flattened row-major, with
 * `compress` naming the grid dimensions (CF 8.2). */
int extract_list_variable(const extract_sel *s, const char *name);

/* Prepends "YYYY-MM-DDTHH:MM:SSZ: argv..." (words with shell specials
 * quoted) as a line to global attribute `history` of `ncid` (the newest
 * first, as NCO and CDO do). The time is SOURCE_DATE_EPOCH's when that is
 * set (seconds since 1970), else now. */
int extract_history(int ncid, int argc, char **argv);

#endif
