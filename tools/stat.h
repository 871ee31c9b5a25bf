/*
 * stat.h - rasterget --stat: a regional statistic as a series over the
 * outer dimensions, written as netCDF (CF cell_methods) or as JSON.
 */
#ifndef RASTER_TOOL_STAT_H
#define RASTER_TOOL_STAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "raster.h"

/* What one --stat run computes. */
typedef struct stat_req {
    const char *file;      /* the input, for raster_source */
    int in_ncid;           /* its root group, for global attributes */
    raster_var *v;
    const int32_t *ids;
    size_t nids;
    const size_t *ostart, *ocount; /* one entry per outer dimension */
    int stat;              /* RASTER_STAT_* */
    const char *weights;   /* NULL: unweighted */
} stat_req;

/* RASTER_STAT_* of `name` (mean, sum, min, max, std, count); -1 if none. */
int stat_parse(const char *name);

/* The name stat_parse() takes for `stat`. */
const char *stat_name(int stat);

/* Computes the series and writes it to the netCDF file open as `out`
 * (define mode): the outer dimensions, their 1-D coordinate variables
 * (sliced), V as double with cell_methods. 0, or -1 with a message. */
int stat_write_nc(const stat_req *r, int out);

/* Computes the series and prints it as one JSON object on `f`. 0, or -1
 * with a message. */
int stat_write_json(const stat_req *r, FILE *f);

/* rasterstat --stats: for each raster variable of `f` (or `var` alone)
 * and each region (or those named in regions[0..nregions)): the records
 * with fresh and stale stored statistics, and count, mean, min, max, std
 * (and the weighted mean with the weights kept) over all records, as
 * tables or one JSON array on stdout. CLI_OK, CLI_EINPUT. */
int stat_report(raster_file *f, const char *file, const char *var,
                char *const *regions, size_t nregions, int json);

#endif
