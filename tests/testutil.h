/*
 * testutil.h - helpers shared by the CMocka test programs (testutil.c):
 * a private temporary directory, status checks of netCDF and raster calls,
 * a seeded PRNG, a netCDF mask file writer, lookups in the raster layout
 * (storage groups, text attributes, HDF5 storage of a dataset), and checks
 * of masks, meshes and region statistics. Helpers used by one program stay
 * in its file. RASTER_TEST_ONLY=PATTERN in the environment runs only the
 * tests whose names match it.
 */
#ifndef RASTER_TESTUTIL_H
#define RASTER_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <netcdf.h>

#include "raster.h"

/* ---- temporary directory ------------------------------------------------ */

/* The directory tmpdir_create made; its files are named by tmpdir_path. */
extern char test_tmpdir[256];

/* Makes a fresh /tmp/raster-test-TAG-XXXXXX (mkdtemp); 0, or -1 on error.
 * Call it from a group setup. */
/* Child exit statuses are TEST_CHILD_BASE + the child's result, so that a
 * sanitizer's exit status (1 by default) is not taken for a result. */
#define TEST_CHILD_BASE 200

/* Runs fn(arg) in a forked child and returns its result (0..50); a child
 * killed by a signal (SIGALRM: a hang), or ended by a sanitizer report,
 * fails the test, named by `what`. */
int in_child(const char *what, int (*fn)(void *), void *arg);

int tmpdir_create(const char *tag);

/* Group teardown: removes the files in test_tmpdir, then the directory;
 * rmdir's result. */
int tmpdir_remove(void **state);

/* buf = test_tmpdir/name. */
void tmpdir_path(char *buf, size_t len, const char *name);

/* Drops the file's pages from the page cache (fdatasync, then
 * POSIX_FADV_DONTNEED, again while pages the kernel was still reading in
 * stay), so that the next read finds the file on disk; on a file system
 * without a page cache of its own (tmpfs) nothing changes.
 * Returns the pages left cached (0: all gone; -1: unknown). Fails the
 * test when the file cannot be opened or the kernel refuses the advice. */
long evict_file(const char *path);

/* evict_file, failing the test unless every page is gone (a test whose
 * assertions need the read from disk). */
void evict_cold(const char *path);

/* ---- status checks ------------------------------------------------------ */

/* A netCDF call that must return NC_NOERR. */
#define NC(call)                                                              \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != NC_NOERR)                                                  \
            fail_msg("%s: netCDF: %s", #call, nc_strerror(st_));              \
    } while (0)

/* A raster call that must return RASTER_OK. */
#define RS(call)                                                              \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != RASTER_OK)                                                 \
            fail_msg("%s: %s: %s", #call, raster_strerror(rc_),               \
                     raster_errmsg());                                        \
    } while (0)

/* ---- PRNG (splitmix64), one stream per program -------------------------- */

void rng_seed(uint64_t s);
uint64_t rng_next(void);
/* uniform in [0, n); 0 when n is 0 */
size_t rng_below(size_t n);
/* uniform in [lo, hi] */
size_t rng_range(size_t lo, size_t hi);

/* ---- netCDF mask files -------------------------------------------------- */

/* Writes `path` (netCDF-4) holding int var(ydim, xdim) = vals, with CF
 * flag_values (nflags of them) and flag_meanings attributes. */
void write_mask_file(const char *path, const char *var, const char *ydim,
                     const char *xdim, size_t ny, size_t nx,
                     const int32_t *vals, size_t nflags,
                     const int *flag_values, const char *flag_meanings);

/* ---- raster files ------------------------------------------------------- */

/* Writes `path`: a raster file holding variable "v" of xtype over ndims
 * dimensions named names[] of lengths shape[] (dimension 0 unlimited when
 * unlim), the last two masked by `mask`, chunked `chunk`; data (shape[]
 * whole, row-major) written in one call; closed. */
/* Format version write_raster_file() writes: 0 for the default. */
extern int testutil_write_format;
/* Compression write_raster_file() sets on its variable: NULL for none. */
extern const raster_compression *testutil_write_compression;

void write_raster_file(const char *path, int xtype, int ndims,
                       const char *const *names, const size_t *shape,
                       int unlim, const size_t *chunk, const int32_t *mask,
                       const void *data);

/* ---- the raster layout (docs/FORMAT.md) --------------------------------- */

/* The storage group of raster variable `var` of netCDF group `parent`: the
 * one group there whose raster_format_version is 1 and whose
 * raster_variable names `var` (the test fails unless exactly one does). */
int raster_storage_grp(int parent, const char *var);

/* Text attribute `att` of (grpid, varid) as a NUL-terminated string in buf
 * (the test fails unless it is a text attribute that fits). */
void get_text_att(int grpid, int varid, const char *att, char *buf,
                  size_t len);

/* Bytes HDF5 allocated for dataset `dataset` (an HDF5 path such as "/v" or
 * "/ocean/v") of the closed file `path`: 0 for a variable never written. */
unsigned long long h5_storage_size(const char *path, const char *dataset);

/* Fails the test unless `dataset` of `path` is a marked placeholder: raster's
 * filter, mandatory, every chunk allocated and holding only the marker. */
void h5_check_placeholder(const char *path, const char *dataset);

/* The rank of `dataset` of `path` (-1 on failure), its extent in dims. */
int h5_extent(const char *path, const char *dataset, unsigned long long *dims);

/* ---- masks -------------------------------------------------------------- */

/* qsort / bsearch order of int32_t. */
int cmp_i32(const void *a, const void *b);

/* Distinct ids of the n cells of mask m, ascending, into ids (room for n);
 * returns their number. */
size_t mask_ids(const int32_t *m, size_t n, int32_t *ids);

/* ---- meshes and region statistics --------------------------------------- */

/* Expected statistics of one region (raster_region_stats). */
typedef struct exp_stats {
    int32_t id;
    size_t cells, pure, mixed;
    size_t by0, bx0, by1, bx1; /* exact bbox */
    size_t ty0, tx0, ty1, tx1; /* tile-aligned bbox */
    size_t bbox_cells, bbox_tile_cells, read_cells;
    double drr;
} exp_stats;

/* Every field of st is as in e (the rate within 1e-12). */
void assert_stats(const raster_region_stats *st, const exp_stats *e);

/* Chunk i of m has id i, this offset, shape, kind and number of shares. */
void assert_chunk(const raster_mesh *m, size_t i, size_t y0, size_t x0,
                  size_t h, size_t w, int mixed, size_t nshares);

/* Share k of chunk `chunk` of m is region id with these cells and bbox. */
void assert_share(const raster_mesh *m, size_t chunk, size_t k, int32_t id,
                  size_t cells, size_t y0, size_t x0, size_t y1, size_t x1);

/* The chunk list of region id of m is exactly expect[0..n). */
void assert_region_chunks(const raster_mesh *m, int32_t id,
                          const size_t *expect, size_t n);

/* Bytes of one value (NC_CHAR included), and the CDL name, of a netCDF
 * numeric type. */
size_t type_size(int xtype);
const char *type_name(int xtype);

#endif
