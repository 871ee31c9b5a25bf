/*
 * raster.h - the public interface of libraster.
 *
 * raster stores a gridded netCDF-4/HDF5 variable region by region: a 2-D
 * integer mask over the variable's last two dimensions names a region for
 * every cell, and the grid is cut into RASTER chunks (runs of pure tiles of
 * one region, or single mixed tiles) so that reading one region touches
 * little more than that region's bytes.
 *
 * Everything published by libraster is declared in this file (and in
 * raster_version.h, which it includes); anything not declared here is
 * internal and may change without notice.
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

/* RASTER_VERSION_MAJOR, _MINOR, _RELEASE, _NUMBER (MAJOR * 10000 + MINOR *
 * 100 + RELEASE) and _STRING ("MAJOR.MINOR.RELEASE"), generated from
 * meson.build's project(version:). */
#include "raster_version.h"

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

/*! raster_nc_status() :
 *  @return the netCDF status (NC_NOERR or a negative NC_E* code of
 *  netcdf.h) that a netCDF call would have returned for the calling
 *  thread's most recent failed raster call, so that a shim answers like
 *  netCDF: the status of the netCDF call that failed inside raster, the
 *  status netCDF gives for the same bad request (NC_EINVALCOORDS, NC_EEDGE,
 *  NC_ESTRIDE, NC_ECHAR, ...), or else the nearest one for the raster code
 *  (RASTER_ENOMEM: NC_ENOMEM, RASTER_EINVAL: NC_EINVAL, RASTER_EIO: NC_EIO,
 *  RASTER_ENOTFOUND: NC_ENOTVAR, RASTER_EFORMAT / RASTER_EINCOMPLETE:
 *  NC_ENOTNC, RASTER_EUNSUPPORTED: NC_ENOTBUILT, RASTER_EHDF5: NC_EHDFERR).
 *  A typed transfer (raster_var_put_typed(), raster_var_get_typed()) sets
 *  it even when it succeeds: NC_NOERR, or NC_ERANGE when values were out of
 *  range; after one, raster_nc_status() is exactly what netCDF returns for
 *  the same call. NC_NOERR before any failure. Thread-local like
 *  raster_errmsg(). */
RASTER_API int raster_nc_status(void);

/* ---- Masks ------------------------------------------------------------- */

/* A 2-D region mask read from a netCDF file, with optional region names. */
typedef struct raster_mask raster_mask;

/* A loaded mask holds at most this many distinct region ids. */
#define RASTER_MASK_MAX_IDS (1 << 20)

/*! raster_mask_load() :
 *  Reads 2-D variable `var` of netCDF file `path` as a region mask.
 *  Integer variables of any netCDF type are accepted when every value fits in
 *  int32; float/double variables only when every value is integral and in
 *  int32 range. Cells holding the variable's `_FillValue`, one of its
 *  `missing_value`s (a scalar or a list) or NaN are outside every region:
 *  they get id 0, joining region 0 where the mask has one (POP's land).
 *  A mask of more than RASTER_MASK_MAX_IDS distinct ids is refused. Region
 *  names come from CF `flag_values` and `flag_meanings` attributes when both
 *  are present and have the same length (what regionmask writes, too);
 *  raster_mask_set_names_file() replaces them. Only a regular file is
 *  opened: a FIFO, directory, device or socket is refused without being
 *  opened (it would block or mislead netCDF), and so is a file replaced or
 *  changed while it is read.
 *  @return RASTER_OK and *out set (free with raster_mask_free()), or
 *  RASTER_EINVAL (NULL argument), RASTER_ENOTFOUND (no file or variable),
 *  RASTER_EMASK (not 2-D, a value not integral or outside int32 -- the
 *  message names the file, variable, first such cell and value --, a text
 *  _FillValue or missing_value, too many ids, empty; not a regular file,
 *  or changed while read), RASTER_ENETCDF,
 *  RASTER_ENOMEM, RASTER_EOVERFLOW; *out is then NULL. */
RASTER_API int raster_mask_load(const char *path, const char *var,
                                raster_mask **out);

/*! raster_mask_set_names_file() :
 *  Replaces the mask's region names (all of them) with those of the names
 *  table `path`: a CSV file of lines `id,name` or `id,name,abbreviation`.
 *  Blank lines and text from '#' on are ignored, as is a first line whose
 *  id is not a number (a header); blanks around a field are dropped; a
 *  field in double quotes may hold commas and '#' ("" is a quote). Names
 *  may hold spaces. Lookups (raster_mask_region_by_name()) find a region by
 *  its name or its abbreviation. Ids the mask lacks are allowed (one table
 *  serves several masks). An id given twice, a name or abbreviation two
 *  regions share (compared as lookups compare them), an empty name, or a
 *  name that is a number is refused, and the mask is left unchanged.
 *  @return RASTER_OK, RASTER_EINVAL (NULL argument, or a malformed table;
 *  the message names the file and line), RASTER_ENOTFOUND (no such file),
 *  RASTER_EIO, RASTER_ENOMEM. */
RASTER_API int raster_mask_set_names_file(raster_mask *mask,
                                          const char *path);

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
 *  The mask of a variable of a read-only file (raster_var_mask()) keeps no
 *  values in memory after raster_open(); the first call reads them back
 *  from the file (thread-safe), so call it only while the file is open.
 *  @return the mask's ny*nx row-major ids, owned by the mask, or NULL when
 *  they could not be read back (out of memory, netCDF error). */
RASTER_API const int32_t *raster_mask_values(const raster_mask *mask);

/*! raster_mask_region_name() :
 *  @return the name of region `id` (owned by the mask): its CF flag meaning
 *  or its names-table name; NULL when the mask names no such region. */
RASTER_API const char *raster_mask_region_name(const raster_mask *mask,
                                               int32_t id);

/*! raster_mask_region_abbrev() :
 *  @return the names-table abbreviation of region `id` (owned by the mask),
 *  or NULL when it has none. */
RASTER_API const char *raster_mask_region_abbrev(const raster_mask *mask,
                                                 int32_t id);

/*! raster_mask_region_by_name() :
 *  Looks a region up by its name or abbreviation, case-insensitively,
 *  treating '_' and ' ' alike ("atlantic ocean" finds "Atlantic_Ocean").
 *  @return RASTER_OK and *id set, RASTER_ENOTFOUND, or RASTER_EINVAL (NULL
 *  argument, or a name that regions of different ids share, as a repeated
 *  word of flag_meanings can: the message names two of them). */
RASTER_API int raster_mask_region_by_name(const raster_mask *mask,
                                          const char *name, int32_t *id);

/* ---- Choosing variables ------------------------------------------------ */

/* Why raster_var_choose() stores a variable by region or leaves it plain:
 * RASTER_CHOOSE_DATA stores it, every other value leaves it. */
#define RASTER_CHOOSE_DATA 0        /* a data variable on the mask's grid */
#define RASTER_CHOOSE_TYPE 1        /* not numeric */
#define RASTER_CHOOSE_RANK 2        /* not 2 to 32 dimensions */
#define RASTER_CHOOSE_GRID 3        /* last two dimensions not the mask's */
#define RASTER_CHOOSE_UNLIMITED 4   /* an unlimited grid dimension */
#define RASTER_CHOOSE_NO_OUTER 5    /* only the two grid dimensions */
#define RASTER_CHOOSE_COORDINATE 6  /* 1-D and named like its dimension */
#define RASTER_CHOOSE_AXIS 7        /* has an `axis` attribute */
#define RASTER_CHOOSE_REFERENCED 8  /* named by a coordinates, bounds,
                                       climatology or cell_measures attr. */
#define RASTER_CHOOSE_GEO 9         /* latitude/longitude by standard_name
                                       or CF units (degrees_north, ...) */
#define RASTER_CHOOSE_MASK 10       /* named like the mask variable */
#define RASTER_CHOOSE_MASK_VALUES 11 /* holds the mask's own values */

/* Flags of raster_var_choose(). */
#define RASTER_CHOOSE_NAMED 1  /* the user named it: only the layout's needs
                                  (type, rank, grid) are checked */
#define RASTER_CHOOSE_VALUES 2 /* read a variable of one grid's worth of
                                  cells and leave it when it equals the mask */

/*! raster_var_choose() :
 *  The one rule for which variables raster stores by region when the user
 *  names none (rasterconvert without --vars, the shim without RASTER_VARS):
 *  data variables only. A variable stays plain when it is a coordinate -
 *  1-D and named like its dimension, with an `axis` attribute, with CF
 *  standard_name latitude, longitude, grid_latitude, grid_longitude,
 *  projection_x/y_coordinate, or CF latitude/longitude units, or named in a
 *  `coordinates`, `bounds`, `climatology` or `cell_measures` attribute of
 *  any variable or group of the file (a word or the last part of a path
 *  matches) - when it is named like `mask_var` (its last path part; NULL:
 *  no name), when it has no dimension besides the grid (a 2-D field such as
 *  cell area or terrain height), or when it cannot be stored by region
 *  (not numeric, not 2 to 32 dimensions, last two dimensions not fixed and
 *  of the mask's shape). With RASTER_CHOOSE_NAMED only the last reasons
 *  count; with RASTER_CHOOSE_VALUES a variable whose outer dimensions are
 *  all 1 is read and left when its values equal the mask's ids.
 *  Attributes are read when it is called: call it once a variable's and
 *  its neighbours' attributes are written.
 *  @return RASTER_OK and *why one of RASTER_CHOOSE_* (DATA: store it), or
 *  RASTER_EINVAL (NULL mask or why), RASTER_ENETCDF, RASTER_ENOMEM. */
RASTER_API int raster_var_choose(int ncid, int varid, const raster_mask *mask,
                                 const char *mask_var, int flags, int *why);

/*! raster_choose_reason() :
 *  @return a short phrase for a RASTER_CHOOSE_* value ("coordinate
 *  variable", "not numeric", ...); static, never NULL. */
RASTER_API const char *raster_choose_reason(int why);

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


/* ---- Raster files ------------------------------------------------------ */

/* An open netCDF-4 file holding (or about to hold) raster variables. */
typedef struct raster_file raster_file;
/* One reorganised variable of an open raster file. Owned by its file. */
typedef struct raster_var raster_var;

/* Modes of raster_open(). */
#define RASTER_READ 0
#define RASTER_WRITE 1

/* Layouts of a region read. */
#define RASTER_LAYOUT_PACKED 0 /* only the regions' cells, numpy order */
#define RASTER_LAYOUT_BBOX 1   /* their bounding box, fill outside them */
#define RASTER_LAYOUT_FULL 2   /* the whole grid, fill outside them */

/*! raster_create() :
 *  Creates (clobbering) netCDF-4 file `path` for writing. Define its
 *  dimensions with netCDF on raster_file_ncid(), then raster variables with
 *  raster_def_var(); ordinary netCDF variables may live beside them.
 *  @return RASTER_OK and *out, or RASTER_EINVAL, RASTER_ENETCDF,
 *  RASTER_ENOMEM. */
RASTER_API int raster_create(const char *path, raster_file **out);

/*! raster_open() :
 *  Opens `path` with mode RASTER_READ or RASTER_WRITE and loads every raster
 *  variable in it, checking each one's stored tables against its mask.
 *  In RASTER_READ mode a file of the current format is opened through HDF5
 *  alone, reading only what its region and hyperslab reads need; netCDF
 *  opens it when a call first needs it (raster_file_ncid(), the mask's
 *  values, the mesh). $RASTER_NO_LEAN set: through netCDF from the start.
 *  @return RASTER_OK and *out; RASTER_ENOTFOUND (no such file),
 *  RASTER_ENETCDF (not netCDF), RASTER_EFORMAT (no raster variable, when
 *  reading; or a corrupt one), RASTER_EINCOMPLETE (a variable's writer never
 *  closed the file), RASTER_EUNSUPPORTED (newer format), RASTER_ENOMEM. */
RASTER_API int raster_open(const char *path, int mode, raster_file **out);

/*! raster_attach() :
 *  Wraps a netCDF file the caller opened (ncid), loading its raster
 *  variables; raster_close() then leaves the ncid open. `writable` says
 *  whether the caller opened it for writing. Incomplete variables are
 *  refused as in raster_open(). */
RASTER_API int raster_attach(int ncid, int writable, raster_file **out);

/*! raster_before_open() :
 *  For programs that open a file for writing through netCDF themselves and
 *  then raster_attach() it (the preload shim): call it with the path just
 *  before nc_open, on the same thread. HDF5 writes the file as it opens it
 *  for writing, and raster_attach() needs the modification time it had to
 *  know whether the statistics it keeps of format 5 variables still hold
 *  (docs/FORMAT.md, "The seal"). Without it they are recomputed at close. */
RASTER_API void raster_before_open(const char *path);

/*! raster_nc_closed() :
 *  Tells raster that the caller closed `ncid`, a handle it raster_attach()ed
 *  for writing and raster_close()d before (the preload shim calls it after
 *  nc_close). raster then sets the file's modification time to the seal its
 *  close stored (docs/FORMAT.md, "The seal"), so that the next open trusts
 *  the statistics it keeps of format 5 variables. Not calling it costs a
 *  recomputation of those statistics, never wrong ones.
 *  @return RASTER_OK (also for a handle with nothing to seal), RASTER_EIO. */
RASTER_API int raster_nc_closed(int ncid);



/*! raster_file_for_ncid() :
 *  @return the raster_file attached (raster_attach(), which the preload shim
 *  uses at nc_open/nc_create) to the netCDF file that group `ncid` belongs
 *  to, or NULL. A program running under the shim opens a file with nc_open
 *  and reaches its raster variables with this, sharing the shim's state.
 *  Valid until that file is closed. */
RASTER_API raster_file *raster_file_for_ncid(int ncid);

/*! raster_flush() :
 *  Writes the small writes raster holds back for `file` (writes of a few
 *  values into records that exist are gathered, up to 4 MiB per variable,
 *  and written together; any other transfer of the variable and
 *  raster_close() write them first) into HDF5, as netCDF's own data sits
 *  in HDF5's chunk cache until nc_sync: the preload shim calls it at
 *  nc_sync. @return RASTER_OK, RASTER_EINVAL for a handle that is not
 *  open, or RASTER_ENETCDF (raster_nc_status() NC_EHDFERR) when HDF5
 *  could not take them (they are then dropped, as HDF5 drops a chunk it
 *  cannot write). */
RASTER_API int raster_flush(raster_file *file);

/*! raster_close() :
 *  Writes what is pending (mask, index tables, completeness markers, last),
 *  closes the file if raster opened it and frees every handle of it. NULL is
 *  a no-op. @return RASTER_OK or the first error met (the handle is freed
 *  in any case; a file raster opened whose netCDF close fails is then
 *  abandoned with nc_abort, so nothing of it stays open).
 *  A handle that is not open (closed already, by this or raster_abandon(),
 *  or never returned by an open) gets RASTER_EINVAL and is not touched:
 *  open files are kept in a registry that is checked by address first.
 *  Using a closed file or its variables in other calls is a bug that raster
 *  detects only on a best-effort basis: handles carry a tag that is
 *  poisoned on close and checked on entry (RASTER_EINVAL), but freed memory
 *  may be reused by the allocator, and a new file may even get a closed
 *  one's address, so neither check can be relied on. */
RASTER_API int raster_close(raster_file *file);

/*! raster_abandon() :
 *  Frees the handle without writing anything more (no completeness marker:
 *  variables written since opening stay refused by readers); aborts the
 *  netCDF file if raster opened it. For a writer that gives up (nc_abort).
 *  NULL is a no-op; a handle that is not open gets RASTER_EINVAL, as in
 *  raster_close(). */
RASTER_API int raster_abandon(raster_file *file);

/*! raster_set_threads() :
 *  How many threads one read may use, process-wide, from now on. A read of
 *  16 MiB or more whose stores take the pread fast path is split by plane
 *  among up to `n` threads (they only read the file and copy; no netCDF or
 *  HDF5 call runs on them): the copies out of the page cache and the first
 *  touch of the output's pages then run on several cores. So is a read of
 *  many short spans (a thin band: 128 preads and 2 MiB or more, a handle's
 *  first thin read); with the default count, only when a core is idle at
 *  that moment. 1: every read on the caller's thread. 0 (the start):
 *  $RASTER_THREADS when it holds a count, else 2 on machines of 2 cores or
 *  more, 1 in the MPI flavour (whose ranks share the cores already). At
 *  most 16.
 *  @return RASTER_OK, or RASTER_EINVAL (n < 0). */
RASTER_API int raster_set_threads(int n);


/*! raster_file_set_format() :
 *  Chooses the format version of the raster variables defined in `file`
 *  from now on: 5 (the variable holds its values, which every netCDF
 *  reader reads; being built, issue 41), 4, 3, or 2, which raster
 *  releases before format 3 read (docs/FORMAT.md, "Versioning"). Without
 *  it each variable gets $RASTER_FORMAT when that names one of these, else
 *  3, or 4
 *  when it has more than 256 regions or its region groups would take
 *  the file past 16,384 groups (netCDF-C numbers at most 32,767 groups in
 *  a file); a variable of format 2 or 3 chosen here that would take the
 *  file past 32,767 groups is refused by raster_def_var() with
 *  RASTER_EUNSUPPORTED. Variables already defined keep theirs.
 *  @return RASTER_OK, RASTER_EINVAL (NULL, a file not open for writing),
 *  RASTER_EUNSUPPORTED (a version raster does not write). */
RASTER_API int raster_file_set_format(raster_file *file, int version);

/*! raster_file_ncid() : @return the netCDF id of the file's root group. */
RASTER_API int raster_file_ncid(const raster_file *file);

/*! raster_file_nvars() : @return the number of raster variables. */
RASTER_API size_t raster_file_nvars(const raster_file *file);

/*! raster_file_var() : @return the i-th raster variable, or NULL. */
RASTER_API raster_var *raster_file_var(const raster_file *file, size_t i);

/*! raster_var_find() :
 *  Finds raster variable `name` (the variable's own name).
 *  @return RASTER_OK and *out, RASTER_ENOTFOUND or RASTER_EINVAL. */
RASTER_API int raster_var_find(const raster_file *file, const char *name,
                               raster_var **out);

/*! raster_def_var() :
 *  Defines raster variable `name` in group `parent` (raster_file_ncid() for
 *  the root) over netCDF dimensions `dimids` (2 to 32; the last two are the
 *  grid, of the mask's shape, fixed), holding values of netCDF numeric type
 *  `xtype`. `chunk` is the base chunk shape (its last two sizes are the
 *  tile); NULL chooses 1 for each outer dimension and tiles of
 *  min(50, grid size). The mask is copied. In the file, `name` is an
 *  ordinary netCDF variable of that type and shape that is never written
 *  (the placeholder: it keeps the name, the varid and the attributes), and
 *  the data lives in the group "raster_<name>" (docs/FORMAT.md).
 *  @return RASTER_OK and *out; RASTER_EINVAL (bad argument, name in use,
 *  read-only file), RASTER_EMASK (mask shape differs from the grid),
 *  RASTER_ENETCDF, RASTER_ENOMEM, RASTER_EOVERFLOW, RASTER_EUNSUPPORTED
 *  (format 2 or 3 chosen and too many regions for netCDF's groups:
 *  raster_file_set_format()). */
RASTER_API int raster_def_var(raster_file *file, int parent, const char *name,
                              int xtype, int ndims, const int *dimids,
                              const size_t *chunk, const raster_mask *mask,
                              raster_var **out);

/*! raster_adopt_var() :
 *  Turns variable `varid` of group `parent`, which must exist, be numeric,
 *  have 2 to 32 dimensions with the mask's grid last, and never have been
 *  written, into a raster variable: it stays as the placeholder that keeps
 *  the name, dimensions and attributes, and the data goes to raster's
 *  stores. `chunk` as in raster_def_var(). This is how a program that
 *  defined a variable with netCDF (or the preload shim) hands it to raster.
 *  The variable must have been defined since the file was created or last
 *  opened (HDF5 fixes a dataset's filters when it creates it, and raster's
 *  marker, RASTER_FILTER_ID, must be among them). In format 5 the
 *  variable itself holds the values: it is chunked by the base chunk shape
 *  when it was chunked otherwise (raster_internal.h,
 *  raster_var_program_chunking, keeps what it was).
 *  @return as raster_def_var(); RASTER_EUNSUPPORTED for a variable the
 *  file held before. */
RASTER_API int raster_adopt_var(raster_file *file, int parent, int varid,
                                const size_t *chunk, const raster_mask *mask,
                                raster_var **out);

/*! raster_compression :
 *  How a raster variable's values are stored on disk: netCDF-4's
 *  per-variable settings, which raster applies to every store of the
 *  variable and keeps on its placeholder, where netCDF's own inquiries
 *  (nc_inq_var_deflate, nc_inq_var_quantize, nc_inq_var_fletcher32,
 *  nc_inq_var_filter_ids) find them. All zero: stored plain. */
#define RASTER_MAX_FILTERS 4
#define RASTER_MAX_FILTER_PARAMS 8
typedef struct raster_compression {
    int shuffle;       /* 1: HDF5's byte shuffle before the filters */
    int deflate_level; /* 0: none; 1-9: zlib deflate at that level */
    int fletcher32;    /* 1: a checksum per chunk */
    int quantize_mode; /* NC_NOQUANTIZE (0), NC_QUANTIZE_BITGROOM,
                          NC_QUANTIZE_GRANULARBR or NC_QUANTIZE_BITROUND:
                          the same bits netCDF would store */
    int quantize_nsd;  /* significant digits (BitRound: bits) */
    /* other HDF5 filters (zstd, bzip2, ...), in pipeline order after
     * shuffle and before deflate, as netCDF applies them; never raster's
     * own marker (RASTER_FILTER_ID) */
    unsigned nfilters;
    struct {
        unsigned id;
        size_t nparams;
        unsigned params[RASTER_MAX_FILTER_PARAMS];
    } filters[RASTER_MAX_FILTERS];
} raster_compression;

/*! raster_var_set_compression() :
 *  Stores `var`'s values as `c` says, from now on: allowed while nothing
 *  of the variable has been written and netCDF has not created its stores
 *  (define mode, before nc_enddef). NULL `c`: plain. Settings once set
 *  may be added to (a filter, another deflate level) but not taken off,
 *  as netCDF's own calls.
 *  @return RASTER_OK; RASTER_EINVAL for a written variable or settings
 *  netCDF would refuse (deflate level, quantize on an integer type, a
 *  filter HDF5 does not have); RASTER_EUNSUPPORTED for what raster cannot
 *  honour (filters in a parallel file, taking a filter off), the variable
 *  unchanged. */
RASTER_API int raster_var_set_compression(raster_var *var,
                                          const raster_compression *c);

/*! raster_var_compression() :
 *  Stores `var`'s settings into *out (all zero when stored plain).
 *  @return RASTER_OK, or RASTER_EINVAL for NULL arguments. */
RASTER_API int raster_var_compression(const raster_var *var,
                                      raster_compression *out);

/*! raster_var_by_varid() :
 *  @return the raster variable whose placeholder is variable `varid` of
 *  group `parent`, or NULL when that variable is an ordinary one. */
RASTER_API raster_var *raster_var_by_varid(const raster_file *file, int parent,
                                           int varid);

/*! raster_is_raster_group() :
 *  @return 1 when netCDF group `grpid` is one of raster's own storage groups
 *  (a raster variable's), which tools that copy or list a file skip. */
RASTER_API int raster_is_raster_group(int grpid);

/*! RASTER_FILTER_ID :
 *  The HDF5 filter id in every placeholder's filter pipeline (the netCDF
 *  variable whose data raster stores by region). No filter of that id is
 *  registered anywhere but in raster, so netCDF-C (NC_ENOFILTER), HDF5,
 *  h5py and the PyPI netCDF4 wheel refuse to read or write a placeholder
 *  without raster instead of handing out fill values or losing the write.
 *  HDF5 leaves ids 32768-65535 to applications and never assigns them
 *  (docs/FORMAT.md, "The placeholder's marker"). */
#define RASTER_FILTER_ID 47137

/*! RASTER_NOTE_ATT :
 *  The text attribute every placeholder carries for readers without raster
 *  (ncdump -h, h5py, xarray's attrs): one sentence saying where the data is
 *  and how to read it. Under the shim it is hidden, as the marker is (the
 *  program sees its own attributes only); tools that copy a placeholder's
 *  attributes skip it. */
#define RASTER_NOTE_ATT "raster_note"

/*! raster_filter_register() :
 *  Registers the placeholder filter with the HDF5 library libraster links
 *  (once per process; later calls do nothing). netCDF decides at nc_open
 *  whether a variable's filters are available, so a program that opens a
 *  raster file through netCDF itself and hands it to raster_attach()
 *  calls this first. raster_create(), raster_open() and the shim do it.
 *  @return RASTER_OK, or RASTER_ENETCDF when HDF5 refuses. */
RASTER_API int raster_filter_register(void);


/*! raster_var_rename() :
 *  Renames the variable (its placeholder, as nc_rename_var would) and keeps
 *  its storage group pointing at it; the group keeps its name.
 *  @return RASTER_OK, RASTER_EINVAL (read-only file, empty name),
 *  RASTER_ENETCDF (netCDF refused the name: raster_nc_status() says why),
 *  RASTER_EUNSUPPORTED (a format 5 variable along an unlimited
 *  dimension, for now: the file would be damaged at its close; nothing is
 *  renamed), RASTER_ENOMEM. */
RASTER_API int raster_var_rename(raster_var *var, const char *name);

/*! raster_rename_dim() :
 *  Renames dimension `dimid` of group `ncid` of file `file` (as
 *  nc_rename_dim would) and records the new name in every raster
 *  variable on it (its storage group's raster_dims; readers go by the
 *  ids, so a file renamed without raster reads too). A dimension that
 *  has the name already is only recorded.
 *  @return RASTER_OK, RASTER_EINVAL (read-only file, empty name),
 *  RASTER_ENETCDF (netCDF refused: raster_nc_status() says why). */
RASTER_API int raster_rename_dim(raster_file *file, int ncid, int dimid,
                                 const char *name);


/*! raster_var_put_att() :
 *  Sets attribute `name` of the variable (as nc_put_att would); a
 *  `_FillValue` must have the variable's type and come before any data. */
RASTER_API int raster_var_put_att(raster_var *var, const char *name,
                                  int xtype, size_t len, const void *value);

/*! raster_var_attributes() :
 *  Where the variable's own attributes live (its placeholder): read them
 *  with nc_inq_att / nc_get_att on (*grpid, *varid). */
RASTER_API void raster_var_attributes(const raster_var *var, int *grpid,
                                      int *varid);

/*! raster_var_name(), raster_var_type(), raster_var_ndims() : the
 *  variable's name, netCDF type and number of dimensions. */
RASTER_API const char *raster_var_name(const raster_var *var);
RASTER_API int raster_var_type(const raster_var *var);
RASTER_API int raster_var_ndims(const raster_var *var);

/*! raster_var_parent(), raster_var_varid() : the netCDF group the variable
 *  belongs to, and the varid of its placeholder there (the variable's place
 *  among the group's variables). */
RASTER_API int raster_var_parent(const raster_var *var);
RASTER_API int raster_var_varid(const raster_var *var);

/*! raster_var_dims() :
 *  Stores, for each dimension, its netCDF id (dimids) and current length
 *  (shape) and the base chunk size (chunk); any pointer may be NULL.
 *  @return RASTER_OK or RASTER_ENETCDF. */
RASTER_API int raster_var_dims(const raster_var *var, int *dimids,
                               size_t *shape, size_t *chunk);


/*! raster_var_mesh(), raster_var_mask() : the variable's mesh and mask,
 *  owned by the variable. A file opened read-only loads neither the mask's
 *  values nor the mesh (reads need only each region's runs): the first
 *  raster_var_mesh() call builds the mesh from the stored mask and checks
 *  every stored table against it (as raster_var_check()), and so does the
 *  first raster_var_mask() call; both return NULL when that check fails
 *  (raster_errmsg() says why). Not thread-safe against
 *  other calls on the same file, like netCDF itself. */
RASTER_API const raster_mesh *raster_var_mesh(const raster_var *var);
RASTER_API const raster_mask *raster_var_mask(const raster_var *var);

/*! raster_var_check() :
 *  Checks everything stored for `var` against its stored mask: the region
 *  groups, every index table (chunks, shares, runs) and the store shapes.
 *  raster_open() checks what reads use as they first use it; this is the
 *  whole check, for tools and for the paranoid.
 *  @return RASTER_OK, RASTER_EFORMAT (a table disagrees with the mask),
 *  RASTER_ENOMEM or RASTER_ENETCDF. */
RASTER_API int raster_var_check(raster_var *var);

/*! raster_var_put() :
 *  Writes the hyperslab start/count/stride (one entry per dimension; stride
 *  NULL means 1) from `data`, values of the variable's type in row-major
 *  order, as nc_put_vars would. Unlimited dimensions grow; writing a place
 *  again replaces it.
 *  @return RASTER_OK, RASTER_EINVAL (out of range, read-only file),
 *  RASTER_ENETCDF, RASTER_ENOMEM; raster_nc_status() then says which, as
 *  netCDF would (NC_ESTRIDE, NC_EINVALCOORDS, NC_EEDGE, NC_EPERM, ...). */
RASTER_API int raster_var_put(raster_var *var, const size_t *start,
                              const size_t *count, const ptrdiff_t *stride,
                              const void *data);

/*! raster_var_get() :
 *  Reads the hyperslab start/count/stride into `data` as nc_get_vars would;
 *  cells never written read as the fill value. Only the chunks the request
 *  intersects are read. @return as raster_var_put(), plus RASTER_EIO, and
 *  RASTER_EFORMAT for a table or mask that fails its checks or checksums
 *  (docs/FORMAT.md) or, in a file opened read-only, a file changed on disk
 *  since it was opened (its size, modification time or inode: rewritten
 *  in place, as by `cp other.nc file.nc`; reopen it). */
RASTER_API int raster_var_get(raster_var *var, const size_t *start,
                              const size_t *count, const ptrdiff_t *stride,
                              void *data);

/* ---- Typed transfers (netCDF semantics) ------------------------------- */

/* Memory type of netCDF's _long functions (nc_put_var_long, ...): netCDF
 * passes NC_INT (4) where long is as wide as int and NC_INT64 (10)
 * elsewhere, i.e. NC_INT64 on LP64 systems (Linux x86-64, aarch64). */
#define RASTER_NC_LONG (sizeof(long) == sizeof(int) ? 4 : 10)

/*! raster_var_put_typed() :
 *  Writes the box start/count/stride of the variable from `data`, values of
 *  netCDF type `memtype`, with exactly the result netCDF-C (4.9) gives for
 *  the same call on an ordinary netCDF-4 variable: the same values stored,
 *  the same status (raster_nc_status()). The preload shim forwards every
 *  nc_put_var* call on a raster variable here.
 *
 *  memtype, the netCDF type id of the values in memory, by netCDF function:
 *  _schar NC_BYTE, _uchar and _ubyte NC_UBYTE, _short NC_SHORT, _ushort
 *  NC_USHORT, _int NC_INT, _long RASTER_NC_LONG, _uint NC_UINT, _longlong
 *  NC_INT64, _ulonglong NC_UINT64, _float NC_FLOAT, _double NC_DOUBLE,
 *  _text NC_CHAR (always NC_ECHAR: raster variables are numeric), _string
 *  NC_STRING (NC_EBADTYPE once the box checks pass; as in netCDF-4 a write
 *  still lengthens the unlimited dimensions it reaches), and NC_NAT (0)
 *  for the untyped calls (nc_put_vara ...): the variable's own type.
 *
 *  start is required (NULL: NC_EINVALCOORDS); count NULL means the current
 *  shape and stride NULL all ones, as in netCDF.
 *
 *  imap NULL: the semantics of nc_put_vars, and so of nc_put_var, _var1 and
 *  _vara (nc_put_vars with unit strides): strides must be >= 1
 *  (NC_ESTRIDE), then dimension by dimension start (NC_EINVALCOORDS; equal
 *  to the length only with count 0) and the last strided index (NC_EEDGE)
 *  must lie within the length, unlimited dimensions excepted (they grow);
 *  when any count is 0 only the starts are checked and nothing is written.
 *  All of it before anything is written.
 *  imap non-NULL: the semantics of nc_put_varm, imap[d] being the distance
 *  in memory, in values of memtype, between consecutive elements along
 *  dimension d (any sign; data points at element (0, .., 0)). netCDF checks
 *  strides 1 .. 2^31 - 2, and start and start + count (not the strided
 *  extent) against the current lengths, except for the first dimension
 *  when it is the group's unlimited one (nc_inq_unlimdim); a zero count
 *  then returns NC_NOERR. It then writes row by row:
 *  when a stride carries rows past a fixed length, the rows inside are
 *  written and the call fails with NC_EINVALCOORDS, which is reproduced.
 *  nc_put_varm with imap NULL is nc_put_vara when all strides are 1, and
 *  otherwise nc_put_varm with the row-major map (imap[d] = product of
 *  count[d+1..]): a shim passes imap NULL in the first case and that map
 *  in the second.
 *
 *  Conversion is netCDF-4's (nc4_convert_type): a C cast of every value.
 *  Values out of range of the variable's type make the status NC_ERANGE
 *  but are written all the same, converted as the cast converts them:
 *  integers wrap; floating values are truncated toward zero, and NaN or
 *  values beyond the 32-bit (to byte, short, int and their unsigned kinds)
 *  or 64-bit (to uint, int64, uint64) integer range give that integer's
 *  most negative value before the truncation to the narrower type, as the
 *  x86-64 build of netCDF does (for instance NaN, 1e10 or -1e10 into an
 *  int store -2147483648, into a short 0; 300.5 into a byte 44). Nothing is
 *  clamped and the fill value is not substituted. The range test compares
 *  the unrounded value with the type's limits (127.5 into a byte and -0.5
 *  into an unsigned type are range errors; NaN is never one; +-Inf is
 *  except into float or double; doubles beyond FLT_MAX into float are and
 *  become +-Inf). In-range values are exact casts (float to int truncates).
 *  Conversion keeps one buffer of the request in the variable's type
 *  (none when memtype is the variable's type and the layout row-major).
 *
 *  @return RASTER_OK when netCDF would have written everything; then
 *  raster_nc_status() is NC_NOERR, or NC_ERANGE when values were out of
 *  range (netCDF's return value in that case, the transfer being done).
 *  Otherwise RASTER_EINVAL with raster_nc_status() NC_ECHAR, NC_EBADTYPE,
 *  NC_ESTRIDE, NC_EINVALCOORDS, NC_EEDGE, NC_EHDFERR (a read-only file:
 *  netCDF-4 fails in HDF5's write), NC_EINVAL (NULL data); RASTER_ENOMEM
 *  (NC_ENOMEM); RASTER_ENETCDF (the failed netCDF call's status);
 *  RASTER_EIO. A shim returns raster_nc_status() after every call. */
RASTER_API int raster_var_put_typed(raster_var *var, const size_t *start,
                                    const size_t *count,
                                    const ptrdiff_t *stride,
                                    const ptrdiff_t *imap, const void *data,
                                    int memtype);

/*! raster_var_get_typed() :
 *  Reads the box start/count/stride into `data` as values of `memtype`,
 *  exactly as nc_get_vars (imap NULL; also nc_get_var, _var1, _vara) or
 *  nc_get_varm (imap non-NULL) with that memory type would on an ordinary
 *  netCDF-4 variable; arguments, conversions and statuses as in
 *  raster_var_put_typed(), except that reads check every dimension,
 *  unlimited ones against their current length (nc_get_varm in decreasing
 *  dimension order; nc_get_vars checks the end of every dimension whose
 *  count is not 0, even when another count is), and that cells never
 *  written read as the fill value, converted like any value (a default int
 *  fill read as short is a range error, as in netCDF). With imap, memory
 *  elements that several box elements map to receive the last one in
 *  row-major order. */
RASTER_API int raster_var_get_typed(raster_var *var, const size_t *start,
                                    const size_t *count,
                                    const ptrdiff_t *stride,
                                    const ptrdiff_t *imap, void *data,
                                    int memtype);

/* ---- Region reads ------------------------------------------------------ */

/*! raster_region_lookup() :
 *  Turns `text` into a region id: a decimal id, or a name from the stored
 *  mask's flag_meanings (the names its writer's mask had, blanks in them
 *  stored as '_'), case-insensitive, '_' matching ' '.
 *  @return RASTER_OK, RASTER_ENOTFOUND (no such region), RASTER_EINVAL. */
RASTER_API int raster_region_lookup(const raster_var *var, const char *text,
                                    int32_t *id);

/*! raster_region_size() :
 *  Stores in *cells the values one outer index of a read of regions
 *  ids[0..nids) yields in `layout` (packed: the regions' cells; bbox: their
 *  bounding box; full: the grid).
 *  @return RASTER_OK, RASTER_ENOTFOUND (an id with no cells), RASTER_EINVAL. */
RASTER_API int raster_region_size(const raster_var *var, const int32_t *ids,
                                  size_t nids, int layout, size_t *cells);

/*! raster_region_bbox() :
 *  Stores the regions' bounding box, half-open: box = {y0, x0, y1, x1}. */
RASTER_API int raster_region_bbox(const raster_var *var, const int32_t *ids,
                                  size_t nids, size_t box[4]);

/*! raster_region_cells() :
 *  Stores the grid row (ys) and column (xs) of each packed cell, in packed
 *  order (row-major over the grid); each array holds raster_region_size()
 *  packed entries. */
RASTER_API int raster_region_cells(const raster_var *var, const int32_t *ids,
                                   size_t nids, size_t *ys, size_t *xs);

/*! raster_region_alloc() :
 *  Allocates a buffer for raster_region_read() of regions ids[0..nids) over
 *  an outer box of counts `ocount` in `layout`, and stores its size in
 *  *bytes. Large buffers are mapped with transparent-huge-page advice: a
 *  fresh malloc'd buffer costs a page fault per 4 KiB on first write, which
 *  on virtual machines takes longer than reading the data from the page
 *  cache. The contents are zero. Free with raster_region_free().
 *  @return RASTER_OK, RASTER_ENOTFOUND, RASTER_EINVAL, RASTER_EOVERFLOW,
 *  RASTER_ENOMEM. */
RASTER_API int raster_region_alloc(const raster_var *var, const int32_t *ids,
                                   size_t nids, const size_t *ocount,
                                   int layout, void **out, size_t *bytes);

/*! raster_region_free() : releases a raster_region_alloc() buffer of
 *  `bytes` bytes; NULL is a no-op. The last large one freed (up to 1 GiB
 *  and a sixteenth of the machine's memory) is kept for the next
 *  raster_region_alloc() of at least half its size, which zeroes it: a
 *  fresh mapping's first touch costs more than zeroing, and on virtual
 *  machines that return free memory to their host it varied from read
 *  to read (Southern's warm read 21.8-34.4 ms against 20.6-20.8).
 *  raster_release_memory() gives it back. */
RASTER_API void raster_region_free(void *buf, size_t bytes);

/*! raster_release_memory() :
 *  Gives back to the system the memory raster keeps between calls: the
 *  last region buffer freed and the passing buffers of reads (at most
 *  32 MiB). For a program done reading that goes on to other work. */
RASTER_API void raster_release_memory(void);

/*! raster_region_read() :
 *  Reads regions ids[0..nids) over the outer box ostart/ocount (one entry per
 *  outer dimension; ignored for 2-D variables) into `out`, which holds
 *  prod(ocount) planes of raster_region_size() values of the variable's
 *  type. Packed order is numpy's var[..., isin(mask, ids)]. Only the
 *  regions' bytes are read.
 *  @return RASTER_OK, RASTER_ENOTFOUND, RASTER_EINVAL (box out of range,
 *  bad layout), RASTER_EIO, RASTER_ENETCDF, RASTER_ENOMEM, RASTER_EFORMAT
 *  (as raster_var_get(): damaged tables, or the file changed on disk since
 *  a read-only open). */
RASTER_API int raster_region_read(raster_var *var, const int32_t *ids,
                                  size_t nids, const size_t *ostart,
                                  const size_t *ocount, int layout,
                                  void *out);

/* ---- Regional statistics ----------------------------------------------- */

/* Reductions of one record (one outer index) of a set of regions, in
 * float64. A value is valid when it is neither the variable's fill value
 * nor NaN; only valid values count. The weighted fields take the valid
 * values whose weight is valid too (not the weight variable's fill value,
 * not NaN). min and max are NaN when count is 0. */
typedef struct raster_stats {
    uint64_t count;  /* valid values */
    double sum;      /* their sum */
    double sumsq;    /* the sum of their squares */
    double m2;       /* the sum of squared deviations from their mean */
    double min, max;
    uint64_t wcount; /* valid values with a valid weight */
    double wsum;     /* sum of weight * value over those */
    double wtotal;   /* sum of their weights */
    double wm2;      /* sum of weight * (value - weighted mean)^2 */
} raster_stats;

/* Statistics raster_stats_value() derives. */
#define RASTER_STAT_COUNT 0 /* valid values (weights ignored) */
#define RASTER_STAT_SUM 1   /* sum (with weights: sum of weight * value) */
#define RASTER_STAT_MEAN 2  /* mean (with weights: the weighted mean) */
#define RASTER_STAT_MIN 3   /* minimum (weights ignored) */
#define RASTER_STAT_MAX 4   /* maximum (weights ignored) */
#define RASTER_STAT_STD 5   /* population standard deviation (numpy's
                               ddof=0); with weights sqrt(wm2 / wtotal) */

/*! raster_region_statistics() :
 *  Stores in out[0 .. prod(ocount)) the statistics of regions ids[0..nids)
 *  (together, each cell once) for every outer index of the box
 *  ostart/ocount, row-major (ostart/ocount ignored for 2-D variables, one
 *  raster_stats then). `weights` is NULL or the name of a numeric netCDF
 *  variable over the variable's two grid dimensions, looked up in the
 *  variable's group and then its ancestors (e.g. a cell area, TAREA).
 *  A record comes from the statistics the file keeps (docs/FORMAT.md,
 *  "Stored statistics") when they are fresh for every region asked for
 *  (and, with `weights`, were kept with that variable as it is now: the
 *  CRC32C of its values); the others from the values, read in one
 *  streaming pass over the regions, a few records at a time (at most 8
 *  MiB of values, or one record), never the whole box at once; the
 *  weights are read once, over the regions' bounding box. With the
 *  environment variable RASTER_STATS=values every record comes from the
 *  values (to check stored statistics against the data).
 *  @return RASTER_OK, RASTER_EINVAL (NULL argument, box out of range,
 *  weights not over the grid or not numeric), RASTER_ENOTFOUND (a region
 *  or the weight variable), RASTER_ENOMEM, RASTER_EOVERFLOW, and the
 *  errors of raster_region_read(). */
RASTER_API int raster_region_statistics(raster_var *var,
                                        const int32_t *ids, size_t nids,
                                        const size_t *ostart,
                                        const size_t *ocount,
                                        const char *weights,
                                        raster_stats *out);

/*! raster_var_set_stats_weights() :
 *  Names the weight variable (a numeric netCDF variable over the grid,
 *  e.g. TAREA; not one stored by region) of the statistics the file keeps
 *  for `var` (docs/FORMAT.md, "Stored statistics"): from the next write
 *  on, records written whole also get the weighted sums, with the weights
 *  as they are at that write (write the weights first). The shim sets it
 *  from RASTER_WEIGHTS, rasterconvert from --weights.
 *  @return RASTER_OK, RASTER_EINVAL (NULL, read-only file),
 *  RASTER_EUNSUPPORTED (the variable keeps no statistics: written before
 *  they were kept, format 2, or a parallel file), RASTER_ENETCDF. */
RASTER_API int raster_var_set_stats_weights(raster_var *var,
                                            const char *name);

/*! raster_var_stats_info() :
 *  What the file keeps for region `id` of `var`: the name of the weight
 *  variable of its weighted fields (*weights, owned by var; NULL when
 *  none; `weights` may be NULL), and how many records have fresh
 *  statistics (*fresh) and stale ones (*stale; records of a partial
 *  write not yet recomputed: only in a file whose writer died, or still
 *  open for writing; and every kept record of a format 5 variable whose
 *  file was written without raster since, docs/FORMAT.md, "The seal").
 *  The others were never computed.
 *  @return RASTER_OK, RASTER_EINVAL, RASTER_ENOTFOUND (no such region, or
 *  the variable keeps no statistics), RASTER_ENETCDF, RASTER_ENOMEM. */
RASTER_API int raster_var_stats_info(raster_var *var, int32_t id,
                                     const char **weights, size_t *fresh,
                                     size_t *stale);

/*! raster_stats_merge() :
 *  Folds b into a: the statistics of the union of their cells (Chan's
 *  pairwise update for m2 and wm2). */
RASTER_API void raster_stats_merge(raster_stats *a, const raster_stats *b);

/*! raster_stats_value() :
 *  @return statistic `stat` (RASTER_STAT_*) of s, weighted when
 *  `weighted` is non-zero: NaN when it is undefined (a mean, std, min or
 *  max of no values, or an unknown stat); a sum of no values is 0. */
RASTER_API double raster_stats_value(const raster_stats *s, int stat,
                                     int weighted);

/* ---- Parallel (MPI) ---------------------------------------------------- */

#if defined(RASTER_MPI) && RASTER_MPI
/* Only in libraster_mpi (built against netcdf-mpi and hdf5-openmpi); a
 * program compiles these declarations with -DRASTER_MPI=1 and links
 * libraster_mpi. docs/PARALLEL.md shows how they are used.
 *
 * Parallel files follow parallel netCDF-4's rules: every rank of the
 * communicator makes the same sequence of define calls (raster_def_var,
 * raster_adopt_var, attributes) and the same raster_close; writes on a
 * variable whose access is collective (raster_var_par_access) are made by
 * every rank, possibly with zero counts, in the same order. Reads never
 * need other ranks. Handles are per rank and, as in the serial library,
 * may not be used from several threads at once while writing. */
#include <mpi.h>

/* Data transfer of raster's stores in a collective write
 * (raster_file_set_mpiio(); RASTER_MPIIO=auto|collective|independent). */
#define RASTER_MPIIO_AUTO 0        /* chosen from the piece sizes */
#define RASTER_MPIIO_COLLECTIVE 1  /* MPI-IO collective, two-phase */
#define RASTER_MPIIO_INDEPENDENT 2 /* each rank writes its own pieces */

/*! raster_create_par() :
 *  Creates (clobbering) netCDF-4 file `path` for parallel writing by every
 *  rank of `comm` (collective; nc_create_par with NC_NETCDF4). raster keeps
 *  a duplicate of `comm` until raster_close().
 *  @return as raster_create(), on every rank alike. */
RASTER_API int raster_create_par(const char *path, MPI_Comm comm,
                                 MPI_Info info, raster_file **out);

/*! raster_open_par() :
 *  Opens `path` on every rank of `comm` (collective; nc_open_par). Mode
 *  RASTER_WRITE marks the file's raster variables incomplete until
 *  raster_close() (every rank). Reads use pread on each rank.
 *  @return as raster_open(); if the file cannot be served on some rank,
 *  every rank fails (RASTER_EFORMAT unless all saw the same error). */
RASTER_API int raster_open_par(const char *path, int mode, MPI_Comm comm,
                               MPI_Info info, raster_file **out);

/*! raster_attach_par() :
 *  raster_attach() for an ncid from nc_create_par or nc_open_par over
 *  `comm` (collective). The preload shim uses it. Every rank gets the same
 *  result: if loading fails on any rank, it fails on all.
 *  @return as raster_attach(). */
RASTER_API int raster_attach_par(int ncid, int writable, MPI_Comm comm,
                                 raster_file **out);

/*! raster_file_comm() :
 *  @return 1 and *comm (raster's duplicate, owned by the file) when the
 *  file is parallel, else 0 and MPI_COMM_NULL. */
RASTER_API int raster_file_comm(const raster_file *file, MPI_Comm *comm);

/*! raster_var_par_access() :
 *  Access of the variable's writes as nc_var_par_access: NC_INDEPENDENT
 *  (the default, as netCDF's) or NC_COLLECTIVE. Collective writes are made
 *  by every rank in the same order; only they can extend an unlimited
 *  dimension (an independent write that would have to returns
 *  RASTER_ENETCDF with raster_nc_status() NC_ECANTEXTEND, as netCDF
 *  does). Independent writes of different ranks may share stores: raster
 *  writes exactly the caller's cells, never reads-modifies-writes.
 *  @return RASTER_OK, RASTER_EINVAL (not a parallel file, bad access). */
RASTER_API int raster_var_par_access(raster_var *var, int access);

/*! raster_file_set_mpiio() :
 *  How collective writes move data in raster's stores: RASTER_MPIIO_AUTO
 *  (default, or RASTER_MPIIO from the environment at open), _COLLECTIVE or
 *  _INDEPENDENT. Set it alike on every rank. Extending an unlimited
 *  dimension is collective in any case. Under _AUTO and _INDEPENDENT a
 *  collective write in which every rank writes one plane of at most
 *  64 KiB and no store grows is held back on every rank (no collective
 *  call) and written by each rank independently before its next other
 *  write of the variable, at raster_flush() and at raster_close();
 *  _COLLECTIVE writes every call collectively.
 *  @return RASTER_OK or RASTER_EINVAL. */
RASTER_API int raster_file_set_mpiio(raster_file *file, int mode);

/* How raster_region_split() shares a read among ranks. */
#define RASTER_SPLIT_OUTER 0   /* contiguous blocks of one outer dimension */
#define RASTER_SPLIT_REGIONS 1 /* whole regions, balanced by cell count */

/*! raster_region_split() :
 *  This rank's share of the region read (ids, ostart/ocount) when `nranks`
 *  ranks split it. RASTER_SPLIT_OUTER: the outer dimension that splits
 *  most evenly (the smallest largest-share fraction; ties: the outermost)
 *  is cut into nearly equal contiguous blocks; *my_nids = nids, ids
 *  copied. A
 *  2-D variable, or a rank with an empty block, gets *my_nids = 0 except
 *  that rank 0 reads everything of a 2-D variable. RASTER_SPLIT_REGIONS:
 *  regions are dealt out greedily, largest first, to the least loaded
 *  rank; a rank's my_ids keep the order of ids; the outer box is
 *  unchanged. my_ostart/my_ocount hold one entry per outer dimension,
 *  my_ids nids entries (caller's memory). A rank with *my_nids == 0 reads
 *  nothing. Pure arithmetic: no I/O, no MPI call, thread-safe.
 *  @return RASTER_OK, RASTER_EINVAL, RASTER_ENOTFOUND, RASTER_ENOMEM. */
RASTER_API int raster_region_split(const raster_var *var, const int32_t *ids,
                                   size_t nids, const size_t *ostart,
                                   const size_t *ocount, int split, int rank,
                                   int nranks, size_t *my_ostart,
                                   size_t *my_ocount, int32_t *my_ids,
                                   size_t *my_nids);

/*! raster_region_read_par() :
 *  raster_region_split() for this rank of `comm`, then raster_region_read()
 *  of the share into `out` (sized for the share: raster_region_size() of
 *  my_ids times prod(my_ocount) values). No communication beyond
 *  MPI_Comm_rank/size: every rank reads its own bytes with pread. The
 *  shares are returned through my_* as in raster_region_split(); any of
 *  them may be NULL when not wanted.
 *  @return as raster_region_read(). */
RASTER_API int raster_region_read_par(raster_var *var, const int32_t *ids,
                                      size_t nids, const size_t *ostart,
                                      const size_t *ocount, int layout,
                                      int split, MPI_Comm comm, void *out,
                                      size_t *my_ostart, size_t *my_ocount,
                                      int32_t *my_ids, size_t *my_nids);
#endif /* RASTER_MPI */

/* ---- Passing a mask through nc_def_var_chunking ----------------------- */

/* The paper's route, made safe: a program hands raster a mask by passing, as
 * the `chunksizes` of nc_def_var_chunking(ncid, varid, NC_CHUNKED, spec),
 * an array built by raster_chunkspec(): the tag, the grid shape, the base
 * chunk shape, then the mask. Under the preload shim the variable becomes a
 * raster variable; without it netCDF refuses the call (NC_EBADCHUNK: the tag
 * is no possible chunk size) and writes nothing. Header-only: the program
 * links nothing new. Layout: { TAG, ny, nx, chunk[0..ndims), mask[ny*nx] },
 * mask ids stored as (size_t)(ptrdiff_t)id. */
#define RASTER_CHUNKSPEC_TAG ((size_t)(ptrdiff_t)-0x52415354)
/* The same tag in the int array of nc_def_var_chunking_ints (Fortran). */
#define RASTER_CHUNKSPEC_TAG_INT (-0x52415354)

/*! raster_chunkspec_len() : @return the entries of a chunk spec. */
static inline size_t raster_chunkspec_len(int ndims, size_t ny, size_t nx)
{
    return 3 + (size_t)ndims + ny * nx;
}

/*! raster_chunkspec() :
 *  Fills `spec` (raster_chunkspec_len() entries, caller's memory) for a
 *  variable of `ndims` dimensions with base chunk shape `chunk` and the
 *  row-major `ny` x `nx` region mask `mask`. */
static inline void raster_chunkspec(size_t *spec, int ndims,
                                    const size_t *chunk, const int *mask,
                                    size_t ny, size_t nx)
{
    spec[0] = RASTER_CHUNKSPEC_TAG;
    spec[1] = ny;
    spec[2] = nx;
    for (int i = 0; i < ndims; i++)
        spec[3 + i] = chunk[i];
    for (size_t i = 0; i < ny * nx; i++)
        spec[3 + (size_t)ndims + i] = (size_t)(ptrdiff_t)mask[i];
}

#ifdef __cplusplus
}
#endif

#endif /* RASTER_H */
