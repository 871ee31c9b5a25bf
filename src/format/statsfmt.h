/*
 * statsfmt.h - the stored statistics' dataset as docs/FORMAT.md ("Stored
 * statistics") lays it out: its names and columns. define.c makes it,
 * statstore.c (move/) fills and reads it.
 */
#ifndef RASTER_STATSFMT_H
#define RASTER_STATSFMT_H

/* The dataset: double stats(outer..., stats_region, stats_field). */
#define STATS_VAR "stats"
#define STATS_REGION_DIM "stats_region"
#define STATS_FIELD_DIM "stats_field"
#define STATS_WEIGHTS_ATT "weights" /* text: the weight variable's name */
#define STATS_VOID_ATT "void"       /* int: written by a writer keeping none */
#define STATS_COLUMNS "state count sum sumsq m2 min max wcount wsum wtotal " \
                      "wm2 weights_crc32c"
enum {
    SF_STATE, SF_COUNT, SF_SUM, SF_SUMSQ, SF_M2, SF_MIN, SF_MAX, SF_WCOUNT,
    SF_WSUM, SF_WTOTAL, SF_WM2, SF_WCRC, STATS_FIELDS
};
/* SF_STATE: fresh, stale, or anything else (netCDF's default fill value:
 * never computed) */
#define STATS_FRESH 1
#define STATS_STALE 2

#endif
