/*
 * reduce.h - the float64 reductions of values per region (reduce.c):
 * what stored statistics (statstore.c) and raster_region_statistics
 * (stats.c) compute, so that both give the same bits.
 */
#ifndef RASTER_REDUCE_H
#define RASTER_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "raster.h"

/* Converts n values of type xtype to double, NaN where a value is `fill`
 * (floating types compared as values, others byte for byte). */
void stats_to_double(const void *src, int xtype, size_t elem,
                     const unsigned char *fill, double *dst, size_t n);

/* The statistics of n values x[] (NaN: not valid) with weights w[] (NULL:
 * none; NaN: not valid) per region: cell i belongs to region reg[i]
 * (NULL: all to region 0; negative: to none); out[0..nreg).
 * RASTER_OK or RASTER_ENOMEM. */
int stats_cells(const double *x, const double *w, const int32_t *reg, size_t n,
                size_t nreg, raster_stats *out);

/* A run of consecutive grid cells (row-major) of one region: cells
 * [start, start + len) of region position reg. */
typedef struct stats_run {
    size_t start;
    uint32_t len;
    int32_t reg;
} stats_run;

/* Test hook: 0 makes float statistics skip the vector paths that take
 * blocks two (AVX2, reduce.c run_pair) or four (AVX-512, run_quad) at
 * once, 2 keeps them to two, 1 (the default) takes the widest the CPU
 * has, so that tests can compare their bits with the scalar path's.
 * statstore_paired(): the blocks taken at once (2 or 4), 0 for the scalar
 * path. */
extern int statstore_pair_blocks;
int statstore_paired(void);

/* stats_cells over n raw values of netCDF type xtype (elem bytes each, the
 * fill value `fill` left out as NaN is), converted a slice at a time,
 * over the cells of runs[0..nruns) (their regions). */
int stats_cells_raw(const void *raw, int xtype, size_t elem,
                    const unsigned char *fill, const double *w,
                    const stats_run *runs, size_t nruns, size_t nreg,
                    raster_stats *out);

#endif
