/*
 * tables.h - a variable's index tables (tables.c): the regions' summary,
 * `chunks`, `runs`, `mixed_chunks`, `shares` and their checksums, written
 * from the layout or checked against it. The lowest of the metadata
 * modules: define.c and meta.c report netCDF failures through it too.
 */
#ifndef RASTER_TABLES_H
#define RASTER_TABLES_H

#include <stddef.h>

#include "regions.h"
#include "var.h"

#define CHUNK_FIELDS 8 /* chunk_id y0 x0 h w mixed offset cells */
#define MIXED_FIELDS 5 /* chunk_id y0 x0 h w */
#define SHARE_FIELDS 4 /* chunk_id region_id cells offset */
/* Format 5: the byte offset and stored bytes of every chunk of the
 * variable, as its last sealing writer left them (tilestore.h). */
#define OFFSETS_TABLE "chunk_offsets"
#define OFFSETS_DIM "vchunk"
#define OFFSETS_FIELDS 2 /* offset bytes */
/* Format 3: rows (first, count) of the shared tables owned by a region. */
#define ATT_CHUNK_ROWS "chunk_rows"
#define ATT_RUN_ROWS "run_rows"

/* Writes (write = 1) or verifies every index table of v. */
int tables_io(raster_var *v, int write);

/* The regions' summary (regions.h) from the layout: REGIONS_SUMMARY_FIELDS
 * per region in rows[], their rows of the shared tables back to back. */
void tables_summary_rows(const raster_var *v, long long *rows);

/* Row `field` of region r in summary rows[]. */
size_t tables_summary_at(const long long *rows, size_t r,
                         enum regions_summary_field field);

/* Format 3 and 4: writes or checks the summary attribute. */
int tables_summary_io(raster_var *v, const long long *rows, int write);

/* Format 3 and 4: writes or checks the tables' checksums. */
int tables_sums_io(raster_var *v, const long long *summary, int write);

/* RASTER_ENETCDF for netCDF status st, "<what> <name>: <netCDF's text>". */
int tables_ncfail(int st, const char *what, const char *name);

/* 1, with *rc set and the failure recorded, when st is an error. */
int tables_nc_failed(int st, const char *what, const char *name, int *rc);

#endif
