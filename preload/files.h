/*
 * files.h - what the shim knows about each open netCDF-4 file: its raster
 * state (libraster's raster_file, attached to the program's ncid) and the
 * variables waiting to become raster variables.
 *
 * A chosen variable is first defined by netCDF exactly as the program asked
 * (it becomes the placeholder). It is handed to raster when the definition
 * ends, whoever ends it: nc_enddef, the first data call on any variable of
 * the file (netCDF-4 ends define mode there itself), nc_sync or nc_close.
 * Every pending variable of the file is adopted then, before netCDF creates
 * its dataset, so the program's own settings (chunking, compression, fill
 * value, attributes), made after nc_def_var, are seen.
 */
#ifndef RASTER_PRELOAD_FILES_H
#define RASTER_PRELOAD_FILES_H

#include "raster.h"

typedef struct shim_file shim_file;

/* Registers file `ncid` (a root id). `rf` is owned from now on. `view`:
 * netCDF's handle does not show raster's storage (raster_attach_view). */
int files_add(int ncid, raster_file *rf, int view);

/* The state of the file holding group `ncid`, or NULL. */
shim_file *files_find(int ncid);

/* Finishes the file's raster work (pending variables, completeness markers)
 * and forgets it; returns a netCDF status. */
int files_close(int ncid);

/* Drops the file's state without writing anything (nc_abort). */
void files_forget(int ncid);

/* Queues variable (grpid, varid) for raster. `mask` is owned (NULL: the
 * RASTER_MASK one); `chunk` (may be NULL) is an explicit base chunk shape of
 * ndims sizes. */
int files_pend(shim_file *sf, int grpid, int varid, raster_mask *mask,
               const size_t *chunk, int ndims);

/* Hands pending variables to raster: one (varid >= 0) or every one of the
 * group's file (varid < 0). A variable raster cannot take stays plain with
 * one warning. */
void files_adopt(shim_file *sf, int grpid, int varid);

/* Records that the program set the chunking of pending (grpid, varid)
 * itself: its sizes become the base chunk shape. */
void files_note_chunking(shim_file *sf, int grpid, int varid);

/* The raster variable behind (grpid, varid), adopting it first if pending;
 * NULL for ordinary variables. */
raster_var *files_var(shim_file *sf, int grpid, int varid);

/* A data call on any variable of the file: netCDF ends the definition at
 * it (and creates every variable's dataset, whose filters HDF5 fixes
 * then), so every pending variable is adopted first. Then as files_var,
 * adopting nothing else. In a parallel file it is collective, as netCDF's
 * own end of definition is. */
raster_var *files_data_var(shim_file *sf, int grpid, int varid);

/* The raster variable behind (grpid, varid) of a view (a read-only open
 * whose handle does not show the storage), or NULL; adopts nothing. */
raster_var *files_view_var(shim_file *sf, int grpid, int varid);

/* The pending variables of the file as a count and a 64-bit digest of
 * their groups, varids, base chunk shapes and masks: ranks of a parallel
 * job compare them before defining anything (preload/par.h). */
void files_pending_digest(shim_file *sf, unsigned long long *count,
                          unsigned long long *digest);

/* Every pending variable (varid < 0) or one stays plain netCDF. */
void files_drop_pending(shim_file *sf, int grpid, int varid);

/* nc_var_par_access of a pending variable: records `set` (>= 0) and
 * returns the access recorded (-1: none), or -2 when it is not pending. */
int files_pending_access(shim_file *sf, int grpid, int varid, int set);

/* The file's raster state. */
raster_file *files_raster(shim_file *sf);

/* The netCDF ids of the dimensions inside raster's own groups (storage
 * groups and the groups below them), ascending: *n of them in *ids (owned
 * by sf, valid until the next call). netCDF numbers dimensions across the
 * whole file, so these sit among the program's; the shim hides them and
 * numbers the program's densely (shim.c). Found on first need and again
 * after raster defined variables. NC status. netCDF's ids: it asks netCDF
 * itself, not the wrappers. */
int files_hidden_dims(shim_file *sf, const int **ids, size_t *n);

#endif
