/*
 * raster_internal.h - what raster's own preload shim and tools call in
 * libraster beyond the C API of raster.h. Not installed, not part of the
 * API: these calls may change with any release.
 *
 * The shim needs the first eight at run time (it links libraster.so), so
 * libraster.so exports them; rasterbench (linked to libraster.so too)
 * needs raster_read_phases_take. Nothing else of libraster is exported
 * beyond raster.h.
 */
#ifndef RASTER_INTERNAL_H
#define RASTER_INTERNAL_H

#include "raster.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the shim's read-only opens (views) -------------------------------- */

/*! raster_attach_view() :
 *  Wraps a netCDF file the caller opened read-only (ncid) and whose open
 *  did not see raster's storage groups (the preload shim hides them from
 *  its read-only opens, which then cost what the plain file's does). The
 *  raster variables are read through HDF5 alone as raster_open() reads
 *  them, raster opens its own netCDF handle when a call first needs one,
 *  and raster_var_by_varid() takes the caller's ids of the placeholders.
 *  raster_close() leaves ncid open. $RASTER_NO_LEAN set: declined.
 *  @return RASTER_OK and *out; RASTER_EFORMAT when the file cannot be read
 *  this way (no raster variable, a placeholder that does not show its
 *  stores' shape, any check the lean open makes), RASTER_EUNSUPPORTED for
 *  an in-memory file, RASTER_ENETCDF, RASTER_ENOMEM. The caller then opens
 *  the file whole and uses raster_attach(). */
RASTER_API int raster_attach_view(int ncid, raster_file **out);

/*! raster_is_storage_link() :
 *  @return 1 when the hard link `name` of HDF5 group `loc` (a hid_t) leads
 *  to one of raster's storage groups (or one a failed definition left,
 *  which readers skip), 0 otherwise. Only links named as raster names its
 *  groups (raster_*) are looked at: a storage group renamed since is not
 *  recognised (raster_attach_view() refuses a handle that shows one). For
 *  programs that walk a file through HDF5 and want only the program's own
 *  objects; the shim hides storage from netCDF's read-only opens with it. */
RASTER_API int raster_is_storage_link(int64_t loc, const char *name);

/*! raster_var_view_inq() :
 *  For a variable of a view (raster_attach_view), what netCDF's nc_inq_var
 *  answers on the caller's handle for its placeholder: its name (up to
 *  NC_MAX_NAME + 1 bytes), netCDF type, number of dimensions and the
 *  caller's dimension ids; any pointer may be NULL. They come from the
 *  description the view loaded and checked against the placeholder and
 *  the caller's handle: netCDF, asked instead, reads the placeholder's
 *  metadata first (for a 4-D variable netCDF-C 4.9 resolves its dimension
 *  scales for 0.9 M instructions, more than raster's whole point read).
 *  @return RASTER_OK; RASTER_EUNSUPPORTED when the variable is not a
 *  view's or its view was loaded through netCDF (ask netCDF then);
 *  RASTER_EINVAL for a NULL variable. */
RASTER_API int raster_var_view_inq(const raster_var *var, char *name,
                                   int *xtype, int *ndims, int *dimids);

/*! raster_view_var_plain() :
 *  @return 1 when the caller's variable (parent, varid) of view `file`
 *  (raster_attach_view) holds its values (format 5) and the view's
 *  variables are not loaded yet: netCDF's answers about it are raster's,
 *  and asking netCDF loads nothing of raster. 0 otherwise. */
RASTER_API int raster_view_var_plain(const raster_file *file, int parent,
                                     int varid);

/*! raster_view_reads_through() :
 *  @return 1 when netCDF's own read of box start/count/stride (stride may
 *  be NULL; count NULL: the single value at start) of the caller's variable (parent, varid) of view `file`
 *  (raster_attach_view) gives what raster's would at no greater cost, so
 *  the caller reads through netCDF and raster loads nothing: the variable
 *  holds its values (format 5), its view's variables are not loaded yet,
 *  and the box touches at most 16 of its chunks (a point's series: the
 *  load would cost more than the read). 0 otherwise, or for a variable
 *  that is not raster's. Nothing is checked against the variable's shape:
 *  netCDF answers a bad box as it always does. */
RASTER_API int raster_view_reads_through(const raster_file *file, int parent,
                                         int varid, const size_t *start,
                                         const size_t *count,
                                         const ptrdiff_t *stride);

/*! raster_var_program_chunking() :
 *  A format 5 variable the shim adopted is chunked by tile; the storage
 *  and chunk sizes its program (or netCDF's default) gave it before, which
 *  the shim reports for it as netCDF would without raster.
 *  @return 1 with *storage (NC_CHUNKED, NC_CONTIGUOUS, NC_COMPACT) and
 *  sizes[0..ndims) (either may be NULL), 0 when none was kept (the
 *  variable's own chunking is the program's). */
RASTER_API int raster_var_program_chunking(raster_var *var, int *storage,
                                           size_t *sizes);

/* ---- the shim's names and filters --------------------------------------- */

/*! raster_free_name() :
 *  Makes `name` free in group `grpid` for a group, variable or type of
 *  the program: when one of raster's own groups has that name (storage
 *  groups are "raster_<V>"), it is renamed to `name_<k>`, the first free
 *  one. Readers find storage groups by their attributes, not their
 *  names. The shim calls it before the program's nc_def_grp, nc_def_var
 *  and renames. Nothing happens when nothing of raster's has the name.
 *  @return RASTER_OK, RASTER_ENETCDF (netCDF refused the rename: a
 *  read-only file), RASTER_EINVAL. */
RASTER_API int raster_free_name(int grpid, const char *name);

/*! raster_filter_is_placeholder() :
 *  @return 1 when HDF5 filter id `id` is RASTER_FILTER_ID: the shim hides
 *  it from nc_inq_var_filter_ids() and friends, as tools that copy a
 *  file's variables must. */
RASTER_API int raster_filter_is_placeholder(unsigned id);

/* ---- rasterbench -------------------------------------------------------- */

/*! raster_read_phases :
 *  Wall seconds raster_region_read() calls spent in each phase, summed
 *  over the calls counted (raster_read_phases_take). */
typedef struct raster_read_phases {
    double check;  /* the box checked; the file checked unchanged, before
                      and after (integrity) */
    double tables; /* the regions' runs loaded and checked against the
                      stored mask, the stores' metadata loaded (the first
                      read of an open file; later reads find them) */
    double plan;   /* runs walked into pieces, pieces sorted and grouped
                      into spans, chunk offsets looked up, the page cache
                      probed */
    double move;   /* the data read, copied or inflated into the buffer,
                      the buffer's first touch (page faults) included */
    unsigned long reads; /* raster_region_read() calls counted */
} raster_read_phases;

/*! raster_read_phases_take() :
 *  For benchmarks. on = 1 switches on the timing of raster_region_read()'s
 *  phases, process-wide (a few clock reads per call; off, the start, it
 *  costs one test per call); on = 0 switches it off. Stores in *out (may
 *  be NULL) the sums counted since the previous call, and zeroes them. */
RASTER_API void raster_read_phases_take(int on, raster_read_phases *out);

#ifdef __cplusplus
}
#endif

#endif
