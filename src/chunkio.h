/*
 * chunkio.h - Chunk Data Handler: moves cells between a caller's buffer and
 * raster's stores.
 *
 * A request is a list of pieces, each mapping `len` consecutive cells of a
 * store to `len` consecutive cells of one plane of the caller's buffer, plus
 * a box over the outer dimensions. The caller's buffer holds one plane of
 * `plane_cells` values per outer index of the box, in row-major order.
 */
#ifndef RASTER_CHUNKIO_H
#define RASTER_CHUNKIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "var.h"

typedef struct piece {
    uint64_t soff;  /* first cell in the store */
    uint64_t uoff;  /* first cell in the caller's plane */
    uint32_t store;
    uint32_t len;
} piece;

/* Reads (write = 0) or writes the pieces for every outer index of the box
 * start/count/stride (outer dimensions only; stride NULL means 1). Sorts
 * `pieces` in place. */
int chunkio_xfer(raster_var *v, piece *pieces, size_t npieces,
                 const size_t *ostart, const size_t *ocount,
                 const ptrdiff_t *ostride, void *buf, size_t plane_cells,
                 int write);

/* Finds whether store s of v can be read with preadv, and its byte
 * offsets (read-only files with an fd), once: chunkio_xfer calls it for
 * the stores a read touches, so opening a file looks up nothing. Not
 * thread-safe (like every call on one file). RASTER_OK, or RASTER_ENOMEM. */
int chunkio_prepare_store(raster_var *v, size_t s);

/* chunkio_prepare_store() for every store of v. */
int chunkio_prepare(raster_var *v);

/* 1 when variable `varname` of netCDF group `grpid` has storage in the
 * file (data written), 0 when it has none, -1 when HDF5 cannot tell (no
 * path, in-memory file). */
int chunkio_has_data(int grpid, const char *varname);

/* Releases per-file resources of the fast path (HDF5 handle, fd); the
 * HDF5 handle is closed before netCDF closes the file. */
void chunkio_file_close(raster_file *f);

/* raster's own HDF5 id (hid_t) on f's file, opened on first use and
 * shared with netCDF's: read-write when f is writable. -1 when HDF5
 * cannot open it. */
int64_t chunkio_file_h5(raster_file *f);

/* Store s of v's dataset (hid_t) through chunkio_file_h5, or -1; the
 * caller closes it. Errors are printed unless the caller has turned
 * HDF5's printing off. */
int64_t chunkio_store_h5(raster_var *v, size_t s);

/* Dataset `rel` of v's group ("mask", "region_3/data") (hid_t) through
 * chunkio_file_h5, by netCDF ids or, in a lean file, by path; or -1. The
 * caller closes it. */
int64_t chunkio_var_dataset_h5(raster_var *v, const char *rel);

/* Dataset `name` of netCDF group grpid (hid_t) through chunkio_file_h5,
 * or -1; the caller closes it. */
int64_t chunkio_dataset_h5(raster_file *f, int grpid, const char *name);

/* pread of exactly len bytes at off (EINTR retried); RASTER_EIO naming
 * `name` on an error or a file that ends early. */
int chunkio_pread_all(int fd, unsigned char *buf, size_t len, off_t off,
                      const char *name);

/* 1 when the page holding byte `off` of fd is in the page cache (a
 * non-blocking read of it succeeds); 0 when not, or where the kernel
 * cannot tell (no RWF_NOWAIT). */
int chunkio_page_cached(int fd, off_t off);

/* 1 when HDF5 type h5type (hid_t) holds values of netCDF type xtype, in
 * any byte order; 0 when not; -1 for types this does not judge (text). */
int chunkio_h5_holds(int64_t h5type, int xtype);

/* The native memory type (hid_t) of numeric netCDF type xtype, or -1. */
int64_t chunkio_h5_mem_type(int xtype);

/* Values of attribute `name` of HDF5 object obj, of netCDF type xtype (an
 * HDF5 type holding exactly it), 1 to cap of them: 0 and *n (when not
 * NULL) when read, -1 when absent or anything else. */
int chunkio_h5_att(int64_t obj, const char *name, int xtype, void *buf,
                   size_t cap, size_t *n);

/* 1 when dataset `did` (creation property list `dcpl`) holds plain bytes
 * raster can move itself: no filters, the native type of `elem` bytes. */
int chunkio_h5_plain(int64_t did, int64_t dcpl, size_t elem);

/* Threads of large fast-path reads from now on (raster_set_threads);
 * 0: the default. */
void chunkio_set_threads(int n);

/* Called first in every thread raster starts: HDF5 prints its error stack
 * (HDF5-DIAG on stderr) unless told not to, and a thread-safe HDF5 keeps
 * that setting per thread, so netCDF's silencing of the program's thread
 * does not reach raster's. Raster reports its failures itself. */
void chunkio_thread_quiet(void);

#endif
