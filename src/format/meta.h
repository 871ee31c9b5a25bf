/*
 * meta.h - Metadata Handler: the on-disk description of a reorganised
 * variable (its group, region groups, Mixed_Chunks, index tables, mask and
 * completeness marker), written when the variable is defined (define.c,
 * tables.c) and read back and validated when a file is opened (meta.c).
 * The format is docs/FORMAT.md.
 */
#ifndef RASTER_META_H
#define RASTER_META_H

#include "var.h"
/* the definition's calls, once meta.c's: */
#include "define.h"

#define RASTER_FORMAT_VERSION 5
/* Oldest format version raster still writes (raster_file_set_format()). */
#define RASTER_FORMAT_OLDEST_WRITTEN 2
/* raster_file.write_format when no version was chosen: 3, or 4 for a
 * variable that needs it (meta_define, below). */
#define RASTER_FORMAT_AUTO 0
/* The write_format of files created from now on: RASTER_FORMAT_AUTO; a
 * test hook (the unit tests run again with every file in format 4). */
extern int meta_default_format;
/* The default writes format 4 (no group per region) for a variable of
 * more than this many regions, or whose region groups would take the
 * file past FORMAT4_GROUP_BUDGET groups. */
#define FORMAT4_MIN_REGIONS 256
#define FORMAT4_GROUP_BUDGET 16384
/* netCDF-C (4.9.x and before) numbers a file's groups with a signed
 * 16-bit counter (NC_FILE_INFO_T.next_nc_grpid; the root is 0) and puts
 * the number in the low 16 bits of each group's ncid: defining group
 * number 32,768, or opening a file with that many groups besides the
 * root, overruns it (a crash, not an error). raster never numbers a group
 * past this. */
#define NC_GROUPS_MAX 32767

/* Attribute names on the variable's group. */
#define ATT_VERSION "raster_format_version"
#define ATT_COMPLETE "raster_complete"
#define ATT_VARIABLE "raster_variable"
#define ATT_ABANDONED "raster_abandoned"
/* the variable's shape at a serial writer's close, its placeholder fitted
 * to it (FORMAT.md); removed when a writer marks the variable incomplete */
#define ATT_EXTENT "raster_extent"
/* Format 5, a variable adopted from its program (the shim): the storage
 * and chunk sizes it had before raster chunked it by tile, NC_UINT64,
 * the storage (NC_CHUNKED, NC_CONTIGUOUS, NC_COMPACT) then one size per
 * dimension (0 unless chunked). Absent when they were the tiles. */
#define ATT_CHUNKING "raster_program_chunking"

/* Loads the raster variable stored in group `grpid`, rebuilding its mesh
 * and layout from the stored mask and checking every stored table against
 * them. `need_complete`: refuse a variable without the completeness marker. */
int meta_load(raster_file *f, int grpid, int need_complete, raster_var **out);

/* What src/format/lean.c reads of a variable through HDF5, checked there. */
typedef struct meta_desc {
    const char *name;          /* the placeholder's */
    const char *h5path;        /* HDF5 path of the variable's group */
    int format, xtype, ndims;
    int dimids[RASTER_MAX_DIMS];
    size_t chunk[RASTER_MAX_DIMS];
    size_t outer[RASTER_MAX_DIMS];      /* outer dimension lengths */
    unsigned char unlimited[RASTER_MAX_DIMS];
    size_t ny, nx;
    unsigned char fill[8];
    int sums;                  /* the tables carry checksums (integrity.h) */
    raster_compression comp;   /* the placeholder's (compress.h) */
    int comp_later;            /* comp not read: on first ask (meta_comp) */
    int placeholder_fits;      /* its extent is the variable's shape */
    size_t mixed_tiles;        /* format 5: rows of `mixed_chunks` */
} meta_desc;

/* A read-only variable of format 3 from its description, its mask (taken
 * over: *mask is cleared) and its regions' summary (len values, checked as
 * by meta_load); no netCDF id known yet (file_netcdf binds them). */
int meta_var_lean(raster_file *f, const meta_desc *d, raster_mask **mask,
                  const long long *summary, size_t len, raster_var **out);

/* Builds the mesh and layout of a variable loaded without them (a
 * read-only file of format 2 or 3) from its stored mask, and checks every
 * stored table against them. */
int meta_ensure_layout(raster_var *v);

/* v->comp read from the placeholder when its load left it for later (a
 * view's: reads never need it; nc_inq_var_deflate and the like do). */
int meta_comp(raster_var *v);

/* Checks store s's type and shape, once (loaded lazily: on first use). */
int meta_check_store(raster_var *v, size_t s);

/* Checks, through netCDF, that store s (varid) is the data of region s:
 * the id recorded in the store (files with checksums, integrity.h) or in
 * its group. The Mixed_Chunks store, and format 2, pass. */
int meta_store_region(const raster_var *v, size_t s, int varid);

/* 1 when group `grpid` holds a raster variable. */
int meta_is_raster_group(int grpid);

/* 1 when group `grpid` is a definition raster gave up (see abandon_group). */
int meta_is_abandoned_group(int grpid);

#endif
