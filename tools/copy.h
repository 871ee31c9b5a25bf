/*
 * copy.h - plain netCDF copying for the command-line tools (rasterconvert,
 * rasterget): dimensions, attributes, variable definitions with their
 * storage settings, data in bounded blocks, output written to a temporary
 * file that is renamed into place only when complete (progress reports: progress.h).
 * Not part of libraster's API.
 *
 * Every function that can fail prints one message on stderr, prefixed with
 * the program name set by cli_set_prog(), and returns -1; 0 on success.
 */
#ifndef RASTER_COPY_H
#define RASTER_COPY_H

#include <netcdf.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli.h"
#include "progress.h"
#include "raster.h"

/* Default bound of the data buffer of one copy step. */
#define COPY_BLOCK_BYTES ((size_t)64 << 20)

/* Prints "PROG: message\n" on stderr; returns -1. */
int copy_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "PROG: message: nc_strerror(status)\n"; returns -1. */
int copy_ncerr(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- output through a temporary file ----------------------------------- */

/* An output file being written as `tmp` beside its final path. */
typedef struct copy_out {
    char *final;
    char *tmp;
} copy_out;

/* -1 with a message when `out` exists and is the file `in` names (the
 * same device and inode, through symbolic and hard links): the output
 * renamed into place would replace the input. `what` names `in` in the
 * message ("input", "mask file"). 0 otherwise, also when `out` does not
 * exist yet. */
int copy_check_distinct(const char *in, const char *out, const char *what);

/* Reserves a temporary name beside `final` (same directory, hidden name)
 * and arranges for it to be removed if the program is interrupted
 * (SIGINT, SIGTERM, SIGHUP). Refuses a `final` that is a directory. */
int copy_out_begin(copy_out *o, const char *final);

/* Gives the finished temporary file the usual permissions (0666 less the
 * umask) and renames it to the final path. On failure removes it. */
int copy_out_commit(copy_out *o);

/* copy_out_commit() that gives the file the permission bits `mode`
 * (07777 kept) and, where the caller may, owner `uid` and group `gid`
 * (-1: left) instead: a file rewritten in place keeps its own. An owner
 * or group that cannot be given back is said in a warning, not an error. */
int copy_out_commit_as(copy_out *o, mode_t mode, uid_t uid, gid_t gid);

/* Removes the temporary file (if any) and frees the names. */
void copy_out_abort(copy_out *o);

/* ---- blocks ------------------------------------------------------------ */

/* Walks an n-D box in row-major blocks of at most `budget` bytes (at least
 * one element): the innermost dimensions whole, the next one cut. */
typedef struct copy_blocks {
    int ndims;
    int first, done;
    size_t shape[NC_MAX_VAR_DIMS];
    size_t step[NC_MAX_VAR_DIMS];
    size_t start[NC_MAX_VAR_DIMS];
    size_t count[NC_MAX_VAR_DIMS];
    size_t max_elems; /* elements of the largest block */
} copy_blocks;

/* `align` (may be NULL): per-dimension sizes (e.g. chunk sizes) a cut
 * dimension's step is rounded down to a multiple of when it exceeds them. */
void copy_blocks_init(copy_blocks *b, int ndims, const size_t *shape,
                      size_t elem, size_t budget, const size_t *align);

/* Moves to the next block (the first on the first call): start/count set.
 * Returns 1, or 0 when the box is exhausted (an empty box has no block; a
 * 0-D box has one). */
int copy_blocks_next(copy_blocks *b);

/* Elements of the current block. */
size_t copy_blocks_elems(const copy_blocks *b);

/* ---- netCDF helpers ---------------------------------------------------- */

/* Input dimension id -> output dimension id. */
typedef struct copy_dimmap {
    int *to;
    size_t n;
} copy_dimmap;

int copy_dimmap_set(copy_dimmap *m, int from, int to);
/* The mapped id, or -1. */
int copy_dimmap_get(const copy_dimmap *m, int from);
void copy_dimmap_free(copy_dimmap *m);

/* 1 for the ten netCDF numeric types. */
int copy_is_numeric(nc_type xtype);

/* 1 when dimension `dimid`, visible from group `grp`, is unlimited. */
int copy_dim_unlimited(int grp, int dimid);

/* Full path of group `grp` ("/" for the root) in buf[NC_MAX_NAME*8]. */
void copy_group_path(int grp, char *buf, size_t len);

/* Fails when any group of the file (from `grp` down) defines a user-defined
 * type, which the tools do not copy. */
int copy_check_no_user_types(int grp, const char *file);

/* Defines the dimensions of group `in` in group `out` (same names, lengths,
 * unlimited status, order) and records them in `m`. */
int copy_dims(int in, int out, copy_dimmap *m);

/* Copies every attribute of (in, invar) to (out, outvar) with nc_copy_att;
 * NC_GLOBAL for group attributes. Attributes named in `skip` (NULL-ended,
 * may be NULL) are left out. */
int copy_atts(int in, int invar, int out, int outvar, const char *const *skip);

/* Reads attribute `name` of (grp, var) into a malloc'd buffer (*value; for
 * NC_STRING an array of strings to release with copy_att_free()). */
int copy_att_read(int grp, int var, const char *name, nc_type *xtype,
                  size_t *len, void **value);
void copy_att_free(nc_type xtype, size_t len, void *value);

/* 1 when the file of `ncid` is netCDF-4 (storage settings exist). */
int copy_is_nc4(int ncid);

/* Defines in `out` a copy of plain variable `invar` of group `in`: name,
 * type, mapped dimensions, storage settings (chunking or contiguous or
 * compact, deflate, shuffle, fletcher32, szip and other filters, endianness,
 * fill mode, quantization) and attributes. */
int copy_var_def(int in, int invar, int out, const copy_dimmap *m,
                 int *outvar);

/* copy_var_def() with `plain` 1: no filters (deflate, shuffle,
 * fletcher32, quantization, others) and no quantization attribute; the
 * chunking, endianness and fill mode kept. */
int copy_var_def_as(int in, int invar, int out, const copy_dimmap *m,
                    int plain, int *outvar);

/* The attributes netCDF writes for nc_def_var_quantize() (NULL-ended): a
 * copy that sets quantization itself, or none, leaves them out. */
extern const char *const copy_quantize_atts[];

/* "deflate level 4, shuffle, ..." (or "none") into buf[len]: filters for
 * messages and tables. */
void copy_describe_compression(const raster_compression *z, char *buf,
                               size_t len);

/* Bytes of the data of variable `var` (its dimensions' current lengths). */
unsigned long long copy_var_bytes(int grp, int var);

/* Copies the data of plain variable (in, invar) to (out, outvar), in blocks
 * of at most `budget` bytes aligned with the input's chunks. */
int copy_var_data(int in, int invar, int out, int outvar, size_t budget,
                  copy_progress *p);

/* ---- coordinates -------------------------------------------------------- */

/* The 1-D coordinate variable of dimension `dimid` seen from group `g`
 * (from g up through its ancestors): a variable named after the dimension,
 * over it alone, of an atomic type. 1 and (*cg, *cv) when found, else 0. */
int copy_find_coord(int g, int dimid, int *cg, int *cv);

/* Defines in `out` coordinate variable (cg, cv) over out's dimension odim
 * and fills it with its values [start, start+count) (netCDF-4 output: no
 * define-mode switching); a name out already has is left alone. 0, or -1
 * with a message. */
int copy_coord_slice(int cg, int cv, size_t start, size_t count, int out,
                     int odim);

#endif
