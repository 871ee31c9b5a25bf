/*
 * statstore.h - statistics kept in the file (docs/FORMAT.md, "Stored
 * statistics"): the `stats` dataset of a storage group, kept by writes,
 * marked stale by partial ones and recomputed at close. The float64
 * reductions they and raster_region_statistics share are reduce.h's.
 */
#ifndef RASTER_STATSTORE_H
#define RASTER_STATSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "statsfmt.h"
#include "var.h"
/* the reductions, once statstore.c's: */
#include "reduce.h"

/* Test hook: v's grid runs as whole-record statistics take them (built
 * from the mask on first use; freed with v). */
int statstore_grid_runs(raster_var *v, const stats_run **runs, size_t *n);

/* The statistics of a write of box start/count/stride of `data` (v's
 * type, as stored): statstore_begin before the write starts computing a
 * whole record's rows beside it (*job NULL: nothing to keep), and
 * statstore_end after it stores them (or marks a partial write's records
 * stale) when write_rc is RASTER_OK, and frees the job; it returns
 * write_rc, else its own status. */
typedef struct statstore_job statstore_job;
int statstore_begin(raster_var *v, const size_t *start, const size_t *count,
                    const ptrdiff_t *stride, const void *data,
                    statstore_job **job);
int statstore_end(statstore_job *job, int write_rc);

/* Marks v's statistics void (attribute STATS_VOID_ATT; readers then
 * ignore them) before a writer that cannot keep them writes: a parallel
 * one. Collective there, as every attribute write. */
int statstore_void(raster_var *v);

/* Recomputes, from the stores, the statistics a partial write of this
 * session left stale (raster_close of a writable file). */
int statstore_flush(raster_var *v);

/* The weight variable `name` over v's grid as doubles (NaN: its fill
 * value or NaN), malloc'd in *w (ny * nx), and their CRC32C in *crc.
 * RASTER_ENOTFOUND, RASTER_EINVAL (not 2-D over the grid, not numeric),
 * RASTER_ENETCDF. */
int statstore_weights(raster_var *v, const char *name, double **w,
                      uint32_t *crc);

/* Finds the weight variable `name` from v's group upwards: its group *g,
 * id *wv, type *t, value size *wel and fill value (fill[8]), checked to be
 * 2-D over v's grid and numeric. The caller holds the file's lazy_lock.
 * RASTER_ENOTFOUND, RASTER_EINVAL, RASTER_ENETCDF. */
int statstore_weights_var(raster_var *v, const char *name, int *g, int *wv,
                          nc_type *t, size_t *wel, unsigned char *fill);

/* Fills, from the stored statistics, out[i] for every record i of the box
 * whose regions ids all have fresh ones (with weights: computed with the
 * same weights, wcrc[r] the region at position r's weight checksum now,
 * statstore_region_crc), merged over the regions, and sets done[i];
 * other records are left alone. */
int statstore_get(raster_var *v, const int32_t *ids, size_t nids,
                  const size_t *ostart, const size_t *ocount,
                  const char *weights, const uint32_t *wcrc,
                  raster_stats *out, unsigned char *done);

/* The checksum the statistics keep of a region's weights: CRC32C of its
 * n cells' weights w (doubles, NaN for the weights' fill) in the order
 * raster_region_cells gives the cells. */
uint32_t statstore_region_crc(const double *w, size_t n);

#endif
