/*
 * raster.h - the public interface of libraster.
 *
 * raster stores a gridded netCDF-4/HDF5 variable region by region: a 2-D
 * integer mask over the variable's last two dimensions names a region for
 * every cell, and the grid is cut into RASTER chunks (runs of pure tiles of
 * one region, or single mixed tiles) so that reading one region touches
 * little more than that region's bytes.
 *
 * Everything published by libraster is declared in this file; anything not
 * declared here is internal and may change without notice.
 *
 * Conventions
 *  - Every function that can fail returns an int status: RASTER_OK (0) or a
 *    positive RASTER_E* code. raster_strerror() names a code; raster_errmsg()
 *    gives the detailed message of the calling thread's most recent failure.
 *    raster's codes are positive so they never collide with netCDF's
 *    (NC_NOERR = 0, NC_E* < 0), which the preload shim passes back unchanged.
 *  - Objects are opaque handles created by a build or load call and released
 *    by the matching free call; every free call accepts NULL.
 *  - Pointers returned inside a handle (chunk region lists, names) stay valid
 *    until that handle is freed.
 *  - A handle may be read from several threads at once; building and freeing
 *    must not race with use. The error functions are per thread.
 */
#ifndef RASTER_H
#define RASTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RASTER_BUILDING) && defined(__GNUC__)
#define RASTER_API __attribute__((visibility("default")))
#else
#define RASTER_API
#endif

/* ---- Version ---------------------------------------------------------- */

#define RASTER_VERSION_MAJOR 0
#define RASTER_VERSION_MINOR 1
#define RASTER_VERSION_RELEASE 0
#define RASTER_VERSION_NUMBER                                                  \
    (RASTER_VERSION_MAJOR * 10000 + RASTER_VERSION_MINOR * 100 +              \
     RASTER_VERSION_RELEASE)
#define RASTER_VERSION_STRING "0.1.0"

/*! raster_version_number() :
 *  @return the RASTER_VERSION_NUMBER the running library was built as; compare
 *  with the macro to detect a header/library mismatch. */
RASTER_API int raster_version_number(void);

/*! raster_version_string() :
 *  @return the library's version as "MAJOR.MINOR.RELEASE" (static storage). */
RASTER_API const char *raster_version_string(void);

/* ---- Errors ------------------------------------------------------------ */

/* Status codes. Values are stable once released; new codes are appended. */
#define RASTER_OK 0           /* success */
#define RASTER_EINVAL 1       /* invalid argument (NULL, zero size, ...) */
#define RASTER_ENOMEM 2       /* out of memory */
#define RASTER_EOVERFLOW 3    /* sizes too large to represent */
#define RASTER_ENETCDF 4      /* a netCDF-C call failed */
#define RASTER_EHDF5 5        /* an HDF5 call failed */
#define RASTER_EIO 6          /* an operating-system I/O call failed */
#define RASTER_EMASK 7        /* the mask is unusable (rank, type, values) */
#define RASTER_ENOTFOUND 8    /* no such file, variable or region */
#define RASTER_EFORMAT 9      /* not a raster file, or a corrupt one */
#define RASTER_EINCOMPLETE 10 /* raster file lacks its completeness marker */
#define RASTER_EUNSUPPORTED 11 /* valid request raster does not handle */
#define RASTER_EINTERNAL 12   /* a bug in raster: please report it */
#define RASTER_ERROR_MAX 12

/*! raster_strerror() :
 *  @return a short static English description of `code`; unknown codes give
 *  "unknown raster error code". Never NULL. Thread-safe. */
RASTER_API const char *raster_strerror(int code);

/*! raster_errmsg() :
 *  @return the detailed message of the calling thread's most recent failed
 *  raster call (e.g. "tile height 0: must be at least 1"), or "" when none
 *  failed yet. The text lives in thread-local storage and is overwritten by
 *  the thread's next failure. */
RASTER_API const char *raster_errmsg(void);

/* ---- Masks ------------------------------------------------------------- */

/* A 2-D region mask read from a netCDF file, with optional region names. */
typedef struct raster_mask raster_mask;

/*! raster_mask_load() :
 *  Reads 2-D variable `var` of netCDF file `path` as a region mask.
 *  Integer variables of any netCDF type are accepted when every value fits in
 *  int32; float/double variables only when every value is integral and in
 *  int32 range. Region names come from CF `flag_values` and `flag_meanings`
 *  attributes when both are present and have the same length.
 *  @return RASTER_OK and *out set (free with raster_mask_free()), or
 *  RASTER_EINVAL (NULL argument), RASTER_ENOTFOUND (no file or variable),
 *  RASTER_EMASK (not 2-D, not integral, empty), RASTER_ENETCDF, RASTER_ENOMEM,
 *  RASTER_EOVERFLOW; *out is then NULL. */
RASTER_API int raster_mask_load(const char *path, const char *var,
                                raster_mask **out);

/*! raster_mask_wrap() :
 *  Makes a mask from caller memory: `ny` x `nx` values, row-major, copied.
 *  @return RASTER_OK, RASTER_EINVAL, RASTER_EOVERFLOW or RASTER_ENOMEM. */
RASTER_API int raster_mask_wrap(const int32_t *values, size_t ny, size_t nx,
                                raster_mask **out);

/*! raster_mask_free() : releases a mask; NULL is a no-op. */
RASTER_API void raster_mask_free(raster_mask *mask);

/*! raster_mask_shape() : stores the mask's row and column counts. */
RASTER_API void raster_mask_shape(const raster_mask *mask, size_t *ny,
                                  size_t *nx);

/*! raster_mask_values() :
 *  @return the mask's ny*nx row-major ids, owned by the mask. */
RASTER_API const int32_t *raster_mask_values(const raster_mask *mask);

/*! raster_mask_region_name() :
 *  @return the CF flag meaning of region `id` (owned by the mask), or NULL
 *  when the mask names no such region. */
RASTER_API const char *raster_mask_region_name(const raster_mask *mask,
                                               int32_t id);

/*! raster_mask_region_by_name() :
 *  Looks a region up by its flag meaning, case-insensitively, treating '_'
 *  and ' ' alike ("atlantic ocean" finds "Atlantic_Ocean").
 *  @return RASTER_OK and *id set, RASTER_ENOTFOUND, or RASTER_EINVAL. */
RASTER_API int raster_mask_region_by_name(const raster_mask *mask,
                                          const char *name, int32_t *id);

/* ---- Region mesh ------------------------------------------------------- */

/* The RASTER chunks of a mask cut into fixed tiles, and the index from region
 * id to its chunks. */
typedef struct raster_mesh raster_mesh;

/* One region's share of one chunk: its id, its cell count, and the bounding
 * box of those cells, half-open: rows [y0, y1), columns [x0, x1). */
typedef struct raster_share {
    int32_t id;
    size_t cells;
    size_t y0, x0, y1, x1;
} raster_share;

/* One RASTER chunk: a run of same-id pure tiles of one tile-row merged into
 * `h` x `w` cells, or one mixed tile. `shares` lists every region with cells
 * in the chunk by ascending id (exactly one for a pure chunk). */
typedef struct raster_chunk {
    size_t id;           /* 0-based, row-major over tile-rows then columns */
    size_t y0, x0;       /* offset of the chunk's first cell */
    size_t h, w;         /* shape in cells */
    int mixed;           /* 1 for a mixed tile, 0 for a pure chunk */
    size_t nshares;      /* regions present */
    const raster_share *shares; /* owned by the mesh */
} raster_chunk;

/* Per-region statistics. Bounding boxes are half-open [y0, y1) x [x0, x1). */
typedef struct raster_region_stats {
    int32_t id;
    size_t cells;           /* cells of this region */
    size_t pure_chunks;     /* pure chunks of this region */
    size_t mixed_chunks;    /* mixed chunks with cells of this region */
    size_t bbox_y0, bbox_x0, bbox_y1, bbox_x1;  /* exact bounding box */
    size_t tbox_y0, tbox_x0, tbox_y1, tbox_x1;  /* bbox aligned to the tiles */
    size_t bbox_cells;      /* cells of the exact bounding box */
    size_t bbox_tile_cells; /* cells a tile-chunked read of the bbox touches */
    size_t read_cells;      /* cells of its pure chunks + mixed chunks touched */
    double data_reduction_rate; /* bbox_tile_cells / read_cells (paper Eq. 1) */
} raster_region_stats;

/*! raster_mesh_build() :
 *  Cuts the `ny` x `nx` row-major `mask` into `tile_h` x `tile_w` tiles
 *  (edge tiles smaller), merges same-id pure tiles of each tile-row into
 *  chunks, and indexes every region (ids may be negative or zero). The mask
 *  is not kept.
 *  @return RASTER_OK and *out set (free with raster_mesh_free()), or
 *  RASTER_EINVAL (NULL pointer, zero grid or tile size, tile larger than the
 *  grid), RASTER_EOVERFLOW (ny * nx does not fit), RASTER_ENOMEM. */
RASTER_API int raster_mesh_build(const int32_t *mask, size_t ny, size_t nx,
                                 size_t tile_h, size_t tile_w,
                                 raster_mesh **out);

/*! raster_mesh_free() : releases a mesh; NULL is a no-op. */
RASTER_API void raster_mesh_free(raster_mesh *mesh);

/*! raster_mesh_shape() : stores grid and tile shapes (any pointer may be
 *  NULL). */
RASTER_API void raster_mesh_shape(const raster_mesh *mesh, size_t *ny,
                                  size_t *nx, size_t *tile_h, size_t *tile_w);

/*! raster_mesh_nchunks() : @return the number of chunks. */
RASTER_API size_t raster_mesh_nchunks(const raster_mesh *mesh);

/*! raster_mesh_chunk() :
 *  Stores chunk `i` (0 <= i < nchunks) in *out.
 *  @return RASTER_OK or RASTER_EINVAL (bad index or NULL). */
RASTER_API int raster_mesh_chunk(const raster_mesh *mesh, size_t i,
                                 raster_chunk *out);

/*! raster_mesh_nregions() : @return the number of distinct region ids. */
RASTER_API size_t raster_mesh_nregions(const raster_mesh *mesh);

/*! raster_mesh_region() :
 *  Stores the statistics of the `i`-th region in ascending id order.
 *  @return RASTER_OK or RASTER_EINVAL. */
RASTER_API int raster_mesh_region(const raster_mesh *mesh, size_t i,
                                  raster_region_stats *out);

/*! raster_mesh_region_stats() :
 *  Stores the statistics of region `id`.
 *  @return RASTER_OK, RASTER_ENOTFOUND (no cell has that id), RASTER_EINVAL. */
RASTER_API int raster_mesh_region_stats(const raster_mesh *mesh, int32_t id,
                                        raster_region_stats *out);

/*! raster_mesh_region_chunks() :
 *  Sets *chunks to the ascending ids of the chunks holding cells of region
 *  `id` (pure and mixed; owned by the mesh) and *n to their count.
 *  @return RASTER_OK, RASTER_ENOTFOUND or RASTER_EINVAL. */
RASTER_API int raster_mesh_region_chunks(const raster_mesh *mesh, int32_t id,
                                         const size_t **chunks, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* RASTER_H */
