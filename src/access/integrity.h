/*
 * integrity.h - Checksums over raster's tables and the identity of an open
 * file (docs/FORMAT.md, "Checksums"; issue #27).
 *
 * Reads of a read-only file load parts of the tables: a region's rows of
 * `runs`, the `chunks` table, the mask of the tiles a hyperslab touches.
 * Each part carries its own CRC32C (Castagnoli), stored in an attribute
 * when the variable is defined and compared when the part is loaded, so
 * that a read checks exactly the bytes it uses, and damage that keeps every
 * table self-consistent (two mask cells swapped in a mixed tile, two runs'
 * offsets swapped) is refused instead of served.
 */
#ifndef RASTER_INTEGRITY_H
#define RASTER_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#include "var.h"

/* Attribute names (docs/FORMAT.md). The group attribute marks a variable
 * whose tables carry checksums: written by every format-3 writer since
 * 2026-11-26; a file without it is read without them. */
#define SUMS_GROUP_ATT "raster_regions_crc32c" /* NC_UINT, 1: the summary */
#define SUMS_TABLE_ATT "raster_crc32c"         /* NC_UINT on each table */
#define SUMS_STORE_ATT "raster_region_id"      /* NC_INT on region data */

/* CRC32C of n bytes, continuing crc (0 to start). */
uint32_t crc32c(uint32_t crc, const void *buf, size_t n);

/* CRC32C of n int64 values taken as little-endian bytes, continuing crc. */
uint32_t sums_i64(uint32_t crc, const long long *vals, size_t n);

/* A region's rows of a table: its id (as int64) then its rows (n values in
 * all). Binds the rows to the region they describe. */
uint32_t sums_region_rows(int32_t id, const long long *vals, size_t n);

/* Mixed tile k (row-major tile number) of the mask: k (as int64) then its
 * h x w cells row-major as int32, from m with row stride mw. */
uint32_t sums_tile(size_t k, const int *m, size_t mw, size_t h, size_t w);

/* The n values of attribute SUMS_TABLE_ATT of v's table `table` ("runs",
 * "chunks", "mask") into out; RASTER_EFORMAT when absent, of another type
 * or length. Through HDF5 for a lean file, netCDF otherwise. */
int sums_table_att(const raster_var *v, const char *table, size_t n,
                   uint32_t *out);

/* Remembers what f's descriptor refers to (device, inode, size,
 * modification time), for file_unchanged. */
void file_identity_record(raster_file *f);

/* RASTER_OK when f (opened read-only) is still the file it opened: a file
 * rewritten in place since (`cp other.nc` over it keeps the inode but not
 * the size or time) would serve bytes that no longer match the metadata
 * HDF5 and raster hold. RASTER_EFORMAT otherwise. One fstat. */
int file_unchanged(raster_file *f);

/* The seal (docs/FORMAT.md, "The seal"): a format 5 variable holds its
 * values where any HDF5 or netCDF program can write them, which raster's
 * kept statistics would not see. raster's close of a file it wrote sets
 * the file's modification time to a whole second it also stores in each
 * format 5 variable's storage group (SEAL_ATT); a later open finds them
 * equal unless someone wrote the file since (or copied it without its
 * times): then the kept statistics are not used, and the next raster
 * writer recomputes them. */
#define SEAL_ATT "raster_seal" /* NC_INT64: seconds since 1970, 0 broken */

/* 1 when f's seal is intact: every format 5 variable's SEAL_ATT is the
 * file's modification time; 0 when not (an attribute absent or another
 * time, or f has no file). A file open for writing: the time
 * seal_before_open saw on this thread, since HDF5 writes the file as it
 * opens it for writing (none seen: 0). */
int seal_intact(raster_file *f);

/* A read-only file's seal_intact, looked at once (f->seal) and then
 * remembered; for a file without format 5 variables 1. Callers hold
 * f's lazy lock or are the file's only thread. */
int seal_trusted(raster_file *f);

/* Format 5 variable v's SEAL_ATT: the second its last sealing writer
 * stored, 0 when absent or unreadable. */
int64_t seal_of(raster_var *v);

/* Notes path's identity and modification time on this thread, for the
 * seal_intact of the writable open that follows (raster_before_open). */
void seal_before_open(const char *path);

/* Writes SEAL_ATT on each format 5 variable of f through netCDF: the
 * current time (whole seconds) into *t when f->seal is 1, else 0 (a
 * broken seal stays broken). RASTER_OK or RASTER_ENETCDF. */
int seal_put(raster_file *f, int64_t *t);

/* Sets path's modification time to t seconds (seal_put's t, after the
 * file's last write): RASTER_OK, or RASTER_EIO (the seal then stays
 * broken, which costs a recomputation, never stale statistics). */
int seal_stamp(const char *path, int64_t t);

#endif
