/*
 * fileio.h - Access to a raster file's bytes below netCDF: raster's own
 * HDF5 handle on the file, its datasets by netCDF ids or by path, the
 * HDF5 type and attribute checks the format needs, raster's tables read
 * through HDF5, and POSIX reads. Every module that reads the file without
 * netCDF comes here; this module knows no region, run or tile.
 */
#ifndef RASTER_FILEIO_H
#define RASTER_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>
#include <sys/types.h>

#include "var.h"

/* What HDF5 holds of variable `varname` of netCDF group `grpid`: 0 no
 * dataset yet (netCDF creates it when the definition ends), 1 a dataset
 * without storage, 2 one with data written, -1 when HDF5 cannot tell (no
 * path, in-memory file). */
enum { FILEIO_NOT_CREATED, FILEIO_CREATED, FILEIO_HAS_DATA };
int fileio_dataset_state(int grpid, const char *varname);

/* Releases per-file resources of the fast path (HDF5 handle, fd); the
 * HDF5 handle is closed before netCDF closes the file. */
void fileio_close(raster_file *f);

/* raster's own HDF5 id (hid_t) on f's file, opened on first use and
 * shared with netCDF's: read-write when f is writable. -1 when HDF5
 * cannot open it. */
int64_t fileio_h5(raster_file *f);

/* Store s of v's dataset (hid_t) through fileio_h5, or -1; the
 * caller closes it. Errors are printed unless the caller has turned
 * HDF5's printing off. */
int64_t fileio_store(raster_var *v, size_t s);

/* Store s of v's dataset like fileio_store, but kept open in v (one open
 * per store and handle, not per call); the caller does not close it.
 * fileio_close_stores (by fileio_close, before raster's HDF5 handle
 * closes) closes them. -1 when it cannot be opened (or out of memory). */
int64_t fileio_store_kept(raster_var *v, size_t s);
void fileio_close_stores(raster_var *v);

/* Dataset `rel` of v's group ("mask", "region_3/data") (hid_t) through
 * fileio_h5, by netCDF ids or, in a lean file, by path; or -1. The
 * caller closes it. */
int64_t fileio_var_dataset(raster_var *v, const char *rel);

/* v's own netCDF variable's dataset (the placeholder, which holds the
 * values in format 5) through fileio_h5, by netCDF ids or, in a lean
 * file, by path; or -1. The caller closes it. */
int64_t fileio_placeholder(raster_var *v);

/* Dataset `name` of netCDF group grpid (hid_t) through fileio_h5,
 * or -1; the caller closes it. */
int64_t fileio_dataset(raster_file *f, int grpid, const char *name);

/* pread of exactly len bytes at off (EINTR retried); RASTER_EIO naming
 * `name` on an error or a file that ends early. */
int fileio_pread(int fd, unsigned char *buf, size_t len, off_t off,
                      const char *name);

/* 1 when the page holding byte `off` of fd is in the page cache (a
 * non-blocking read of it succeeds); 0 when not, or where the kernel
 * cannot tell (no RWF_NOWAIT). */
int fileio_page_cached(int fd, off_t off);

/* 1 when HDF5 type h5type (hid_t) holds values of netCDF type xtype, in
 * any byte order; 0 when not; -1 for types this does not judge (text). */
int fileio_holds(int64_t h5type, int xtype);

/* The native memory type (hid_t) of numeric netCDF type xtype, or -1. */
int64_t fileio_mem_type(int xtype);

/* Values of attribute `name` of HDF5 object obj, of netCDF type xtype (an
 * HDF5 type holding exactly it), 1 to cap of them: 0 and *n (when not
 * NULL) when read, -1 when absent or anything else. */
int fileio_att(int64_t obj, const char *name, int xtype, void *buf,
                   size_t cap, size_t *n);

/* 1 when dataset `did` (creation property list `dcpl`) holds plain bytes
 * raster can move itself: no filters, the native type of `elem` bytes. */
int fileio_plain(int64_t did, int64_t dcpl, size_t elem);

/* The file offset of contiguous dataset `did` when its bytes are the
 * native type of `elem` bytes, as HDF5 itself would read them; -1
 * otherwise. H5Dget_offset gives an address only to a contiguous layout
 * (not chunked, compact or virtual, nor one stored in external files, nor
 * one not yet allocated), and a contiguous layout is read without
 * filters: no creation property list needed (its copy and close cost
 * 33 K instructions). */
int64_t fileio_contiguous(int64_t did, size_t elem);

/* The dataset of table `name` of v kept open for the reads that follow
 * (the `chunks` table of a lean read-only file; v->chunks_did), or -1:
 * then the caller opens what it needs itself. */
int64_t fileio_table_kept(raster_var *v, const char *name);

/* Filters raster can undo itself (inflate.c). */
#define FILEIO_MAX_FILTERS 3

/* 1 when dataset `did` (creation property list `dcpl`) holds values of
 * the native type of `elem` bytes through filters raster can undo: 1 to
 * FILEIO_MAX_FILTERS of deflate, shuffle (of `elem`-byte values) and
 * fletcher32, each once; filt[0..*nfilt) gets their HDF5 ids in the
 * pipeline's order (the order they are applied when writing). 0 for
 * anything else (filt and *nfilt untouched). */
int fileio_filters(int64_t did, int64_t dcpl, size_t elem,
                   unsigned char *filt, int *nfilt);

/* Bytes [off, off+len) of read-only file f through a mapping of the
 * whole file (made at the first call, kept until fileio_close), or NULL
 * when f is writable, the range lies past the file's end as it was
 * mapped, or the file cannot be mapped: the caller then preads. Plain
 * chunks are copied straight out of the page cache this way, where a
 * pread into a staging buffer copied them twice (a quarter of a warm
 * format 5 region read). fileio_mapping 0 (a test hook) maps nothing. */
const unsigned char *fileio_map(raster_file *f, off_t off, size_t len);
extern int fileio_mapping;

/* Ranges fileio_map has handed out since the process started (tests). */
size_t fileio_map_hits(void);

/* Before a read from the mapping: a file that shrank since it was mapped
 * is read by pread from then on (a mapped page past the end of the file
 * kills the process with SIGBUS). Shrinking during the read itself is not
 * caught (docs/BAD_INPUTS.md). RASTER_OK. */
int fileio_map_check(raster_file *f);

/* 1 when fileio_map will hand out f's bytes (the mapping made now, when
 * first asked), 0 when reads of f pread. */
int fileio_map_ready(raster_file *f);

/* While a load brings a cold read's chunks in (prefetch.h), between
 * fileio_map_load_begin and _end (counted: reads of several threads
 * nest), a fault on f's mapping reads nothing ahead (MADV_RANDOM): the
 * load brought in what the copy touches, and the pages past a stretch
 * that the load's own read-ahead marked would otherwise start a further
 * window of read-ahead from the fault, beyond the stretch (8 MiB a
 * stretch here). Advice only: nothing fails. */
void fileio_map_load_begin(raster_file *f);
void fileio_map_load_end(raster_file *f);

/* Lets go of the pages of bytes [off, off+len) of f's mapping: they stay
 * in the page cache but leave the process's resident set, which would
 * otherwise grow by every chunk a read touched (a region read's memory is
 * the region's size, not the file's). */
void fileio_map_release(raster_file *f, off_t off, size_t len);

/* Called first in every thread raster starts: HDF5 prints its error stack
 * (HDF5-DIAG on stderr) unless told not to, and a thread-safe HDF5 keeps
 * that setting per thread, so netCDF's silencing of the program's thread
 * does not reach raster's. Raster reports its failures itself. */
void fileio_thread_quiet(void);

/* Name of the group of region `id`: region_<id>, region_m<-id>. */
void fileio_group_name(int32_t id, char *buf, size_t len);

/* Store s's dataset relative to the variable's group: "region_<id>/data"
 * (fileio_group_name) or "Mixed_Chunks/data" (s == nregions). */
void fileio_store_path(const raster_var *v, size_t s, char *buf,
                        size_t len);

/* The rows of index table `name` of v's group ("chunks", tiles.c),
 * checked to be int64 with `fields` columns. */
int fileio_table_rows(const raster_var *v, const char *name, size_t fields,
                    size_t *n);

/* Rows [first, first+n) of that table into rows (fields per row). */
int fileio_table(const raster_var *v, const char *name, size_t fields,
               size_t first, size_t n, long long *rows);

/* Rows [y0, y0+ny) x columns [x0, x0+nx) of v's stored mask into buf. */
int fileio_mask_rows(const raster_var *v, size_t y0, size_t ny, size_t x0,
                   size_t nx, int *buf);

/* Rank of dataset d (hid_t) and its dims and maxdims (RASTER_MAX_DIMS + 1
 * each); -1 when unreadable. */
int fileio_extent(hid_t d, hsize_t *dims, hsize_t *maxdims);

/* 1 when HDF5 type `type` (hid_t) holds one of the netCDF types[0..n). */
int fileio_holds_any(hid_t type, const int *types, size_t n);

/* The span cache of a read-only file (fileio.c): what thin reads pread,
 * kept in the process. fileio_cache_on makes it (a thin read starts;
 * RASTER_ENOMEM); without it the calls below keep nothing. */
#define FILEIO_KEPT_SPAN ((size_t)64 << 10) /* longest read kept */
#define FILEIO_KEPT_READ ((size_t)8 << 20)  /* largest read that keeps */
int fileio_cache_on(raster_file *f);
void fileio_cache_free(raster_file *f);

/* Bytes [off, off+len) of f kept, with the cache locked until
 * fileio_kept_release; NULL (unlocked) when not kept. */
const unsigned char *fileio_kept(raster_file *f, off_t off, size_t len);
void fileio_kept_release(raster_file *f);

/* Keeps a copy of bytes [off, off+len) of f (read into `bytes`), up to
 * FILEIO_KEPT_SPAN of them. */
int fileio_keep(raster_file *f, off_t off, size_t len,
                const unsigned char *bytes);

/* The same for a whole chunk of a format 5 variable, up to
 * FILEIO_KEPT_CHUNK bytes: a thin band reads a few cells of each chunk it
 * touches, netCDF's chunk cache keeps the chunk for the next read. */
#define FILEIO_KEPT_CHUNK ((size_t)1 << 20)
int fileio_keep_chunk(raster_file *f, off_t off, size_t len,
                      const unsigned char *bytes);

/* fileio_pread of f's fd through the cache. */
int fileio_pread_kept(raster_file *f, unsigned char *buf, size_t len,
                      off_t off, const char *name);

/* Reads served from the cache since the process started (tests). */
size_t fileio_kept_hits(void);

#endif
