/*
 * testutil.c - helpers shared by the CMocka test programs; see testutil.h.
 */
#include "testutil.h"

int testutil_write_format = 0;
const raster_compression *testutil_write_compression = NULL;

#include <stdlib.h>

#include "meta.h"

/* TESTUTIL_FORMAT=4 in the environment: every file the test creates is
 * written in that format (tests/meson.build runs test_storage so). */
__attribute__((constructor)) static void testutil_format_from_env(void)
{
    const char *e = getenv("TESTUTIL_FORMAT");
    if (e && *e)
        meta_default_format = atoi(e);
}

/* RASTER_TEST_ONLY=PATTERN runs only the tests whose names match it (one
 * test run many times over, e.g. beside a CPU hog). */
__attribute__((constructor)) static void testutil_filter_from_env(void)
{
    const char *e = getenv("RASTER_TEST_ONLY");
    if (e && *e)
        cmocka_set_test_filter(e);
}

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/vfs.h>
#endif
#include <sys/wait.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- temporary directory ------------------------------------------------ */

char test_tmpdir[256];

int tmpdir_create(const char *tag)
{
    snprintf(test_tmpdir, sizeof test_tmpdir, "/tmp/raster-test-%s-XXXXXX",
             tag);
    return mkdtemp(test_tmpdir) ? 0 : -1;
}

int tmpdir_remove(void **state)
{
    (void)state;
    DIR *d = opendir(test_tmpdir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", test_tmpdir, e->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(test_tmpdir);
}

void tmpdir_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", test_tmpdir, name);
}

/* Pages of fd's file in the page cache: cachestat (Linux 6.5, no I/O),
 * else mincore over a mapping of it; -1 when neither can tell. */
static long cached_pages(int fd)
{
#ifdef __linux__
#ifndef SYS_cachestat
#define SYS_cachestat 451 /* the same on every architecture */
#endif
    struct {
        uint64_t off, len; /* len 0: to the end of the file */
    } range = {0, 0};
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted,
            nr_recently_evicted;
    } cs;
    if (syscall(SYS_cachestat, fd, &range, &cs, 0) == 0)
        return (long)cs.nr_cache;
#endif
    struct stat st;
    long ps = sysconf(_SC_PAGESIZE);
    if (fstat(fd, &st) != 0 || ps <= 0)
        return -1;
    if (st.st_size == 0)
        return 0;
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    size_t np = ((size_t)st.st_size + (size_t)ps - 1) / (size_t)ps;
    unsigned char *vec = malloc(np);
    long n = -1;
    if (vec && mincore(m, (size_t)st.st_size, vec) == 0) {
        n = 0;
        for (size_t i = 0; i < np; i++)
            n += vec[i] & 1;
    }
    free(vec);
    (void)munmap(m, (size_t)st.st_size);
    return n;
}

/* Rounds of DONTNEED while pages stay cached, 2 ms apart: a page the
 * kernel is still reading in (read-ahead an earlier read started) is
 * locked, and DONTNEED passes it by; the next round drops it. */
#define EVICT_ROUNDS 1000

long evict_file(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        fail_msg("%s: cannot open it to evict it", path);
    int keeps = 0; /* tmpfs and ramfs keep their pages: no wait */
#ifdef __linux__
    struct statfs fs;
    keeps = fstatfs(fd, &fs) == 0 &&
            (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
#endif
    long left = -1;
    for (int round = 0; round < EVICT_ROUNDS; round++) {
        (void)fdatasync(fd);
        int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (rc != 0) {
            close(fd);
            fail_msg("%s: posix_fadvise(DONTNEED): error %d", path, rc);
        }
        left = cached_pages(fd);
        if (left <= 0 || keeps) /* gone, or cannot tell */
            break;
        (void)usleep(2000);
    }
    close(fd);
    return left;
}

void evict_cold(const char *path)
{
    long left = evict_file(path);
    if (left > 0)
        fail_msg("%s: %ld pages still cached after eviction (a file "
                 "system without a page cache of its own, such as tmpfs?): "
                 "a read from disk cannot be tested",
                 path, left);
}

/* ---- PRNG (splitmix64) -------------------------------------------------- */

static uint64_t rng_state;

void rng_seed(uint64_t s) { rng_state = s * 0x9E3779B97F4A7C15ULL + 7; }

uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

size_t rng_below(size_t n) { return n ? (size_t)(rng_next() % n) : 0; }

size_t rng_range(size_t lo, size_t hi)
{
    return lo + rng_below(hi - lo + 1);
}

/* ---- netCDF mask files -------------------------------------------------- */

void write_mask_file(const char *path, const char *var, const char *ydim,
                     const char *xdim, size_t ny, size_t nx,
                     const int32_t *vals, size_t nflags,
                     const int *flag_values, const char *flag_meanings)
{
    int ncid, dims[2], varid;
    NC(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, ydim, ny, &dims[0]));
    NC(nc_def_dim(ncid, xdim, nx, &dims[1]));
    NC(nc_def_var(ncid, var, NC_INT, 2, dims, &varid));
    NC(nc_put_att_int(ncid, varid, "flag_values", NC_INT, nflags,
                      flag_values));
    NC(nc_put_att_text(ncid, varid, "flag_meanings", strlen(flag_meanings),
                       flag_meanings));
    NC(nc_enddef(ncid));
    NC(nc_put_var_int(ncid, varid, vals));
    NC(nc_close(ncid));
}

/* ---- raster files ------------------------------------------------------- */

void write_raster_file(const char *path, int xtype, int ndims,
                       const char *const *names, const size_t *shape,
                       int unlim, const size_t *chunk, const int32_t *mask,
                       const void *data)
{
    assert_true(ndims >= 2 && ndims <= 8);
    raster_mask *m;
    RS(raster_mask_wrap(mask, shape[ndims - 2], shape[ndims - 1], &m));
    raster_file *f;
    raster_var *v;
    RS(raster_create(path, &f));
    if (testutil_write_format)
        RS(raster_file_set_format(f, testutil_write_format));
    int ncid = raster_file_ncid(f), d[8];
    for (int i = 0; i < ndims; i++)
        NC(nc_def_dim(ncid, names[i],
                      i == 0 && unlim ? NC_UNLIMITED : shape[i], &d[i]));
    RS(raster_def_var(f, ncid, "v", xtype, ndims, d, chunk, m, &v));
    if (testutil_write_compression)
        RS(raster_var_set_compression(v, testutil_write_compression));
    raster_mask_free(m);
    size_t start[8] = {0};
    RS(raster_var_put(v, start, shape, NULL, data));
    RS(raster_close(f));
}

/* ---- the raster layout (docs/FORMAT.md) --------------------------------- */

int raster_storage_grp(int parent, const char *var)
{
    int n, found = -1, nfound = 0;
    NC(nc_inq_grps(parent, &n, NULL));
    int *ids = malloc((n ? (size_t)n : 1) * sizeof *ids);
    assert_non_null(ids);
    NC(nc_inq_grps(parent, NULL, ids));
    for (int i = 0; i < n; i++) {
        int version = 0;
        nc_type type;
        size_t len;
        char name[NC_MAX_NAME + 1];
        if (nc_inq_att(ids[i], NC_GLOBAL, "raster_format_version", &type,
                       &len) != NC_NOERR)
            continue;
        assert_int_equal(type, NC_INT);
        assert_int_equal(len, 1);
        NC(nc_get_att_int(ids[i], NC_GLOBAL, "raster_format_version",
                          &version));
        assert_int_equal(version, testutil_write_format ? testutil_write_format
                                  : meta_default_format ? meta_default_format
                                                        : 3);
        get_text_att(ids[i], NC_GLOBAL, "raster_variable", name, sizeof name);
        if (strcmp(name, var) == 0) {
            found = ids[i];
            nfound++;
        }
    }
    free(ids);
    if (nfound != 1)
        fail_msg("%d raster storage groups hold variable %s", nfound, var);
    return found;
}

void get_text_att(int grpid, int varid, const char *att, char *buf,
                  size_t len)
{
    nc_type type;
    size_t n;
    NC(nc_inq_att(grpid, varid, att, &type, &n));
    if (type != NC_CHAR || n >= len)
        fail_msg("attribute %s: type %d, length %zu", att, (int)type, n);
    NC(nc_get_att_text(grpid, varid, att, buf));
    buf[n] = '\0';
}

unsigned long long h5_storage_size(const char *path, const char *dataset)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0)
        fail_msg("H5Fopen(%s) failed", path);
    hid_t did = H5Dopen2(fid, dataset, H5P_DEFAULT);
    if (did < 0) {
        H5Fclose(fid);
        fail_msg("H5Dopen2(%s, %s) failed", path, dataset);
    }
    unsigned long long size = H5Dget_storage_size(did);
    H5Dclose(did);
    H5Fclose(fid);
    return size;
}

/* Fails the test unless dataset `dataset` of `path` is a marked placeholder
 * (src/base/placeholder.c): raster's filter first and mandatory, its chunks
 * allocated early and every one of them the 8-byte marker, no data. In a
 * run writing format 5 (TESTUTIL_FORMAT=5), unless it holds its values:
 * no raster filter at all. */
void h5_check_placeholder(const char *path, const char *dataset)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid < 0)
        fail_msg("H5Fopen(%s) failed", path);
    hid_t did = H5Dopen2(fid, dataset, H5P_DEFAULT);
    hid_t dcpl = did >= 0 ? H5Dget_create_plist(did) : -1;
    hid_t space = did >= 0 ? H5Dget_space(did) : -1;
    if (dcpl < 0 || space < 0)
        fail_msg("%s: cannot open %s", path, dataset);
    if (meta_default_format == 5) {
        for (int i = 0; i < H5Pget_nfilters(dcpl); i++)
            if (H5Pget_filter2(dcpl, (unsigned)i, NULL, NULL, NULL, 0, NULL,
                               NULL) == RASTER_FILTER_ID)
                fail_msg("%s: %s carries raster's filter in format 5", path,
                         dataset);
        H5Sclose(space);
        H5Pclose(dcpl);
        H5Dclose(did);
        H5Fclose(fid);
        return;
    }
    unsigned flags = 1;
    size_t ncd = 0;
    H5D_alloc_time_t when;
    int rank = H5Sget_simple_extent_ndims(space);
    hsize_t dims[H5S_MAX_RANK], chunk[H5S_MAX_RANK], nchunks = 0, expect = 1;
    if (H5Pget_nfilters(dcpl) < 1 ||
        H5Pget_filter2(dcpl, 0, &flags, &ncd, NULL, 0, NULL, NULL) !=
            RASTER_FILTER_ID)
        fail_msg("%s: %s does not carry raster's filter first", path,
                 dataset);
    if (flags & H5Z_FLAG_OPTIONAL)
        fail_msg("%s: %s: raster's filter is optional", path, dataset);
    if (H5Pget_alloc_time(dcpl, &when) < 0 || when != H5D_ALLOC_TIME_EARLY)
        fail_msg("%s: %s is not allocated early", path, dataset);
    if (rank < 1 || H5Sget_simple_extent_dims(space, dims, NULL) < 0 ||
        H5Pget_chunk(dcpl, rank, chunk) != rank)
        fail_msg("%s: %s: no extent or chunks", path, dataset);
    for (int i = 0; i < rank; i++)
        expect *= (dims[i] + chunk[i] - 1) / chunk[i];
    hid_t type = H5Dget_type(did);
    size_t bytes = type >= 0 ? H5Tget_size(type) : 0;
    if (type >= 0)
        H5Tclose(type);
    for (int i = 0; i < rank; i++)
        bytes *= chunk[i];
    if (expect > 0 && H5Dget_num_chunks(did, space, &nchunks) < 0)
        fail_msg("%s: %s: HDF5 cannot count its chunks", path, dataset);
    if (nchunks != expect)
        fail_msg("%s: %s has %llu chunks allocated of %llu", path, dataset,
                 (unsigned long long)nchunks, (unsigned long long)expect);
    if (H5Dget_storage_size(did) != (bytes < 8 ? bytes : 8) * expect)
        fail_msg("%s: %s stores %llu bytes, not %llu markers", path, dataset,
                 (unsigned long long)H5Dget_storage_size(did),
                 (unsigned long long)expect);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Dclose(did);
    H5Fclose(fid);
}

int h5_extent(const char *path, const char *dataset, unsigned long long *dims)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t did = fid >= 0 ? H5Dopen2(fid, dataset, H5P_DEFAULT) : -1;
    hid_t space = did >= 0 ? H5Dget_space(did) : -1;
    hsize_t d[H5S_MAX_RANK];
    int rank = space >= 0 ? H5Sget_simple_extent_dims(space, d, NULL) : -1;
    for (int i = 0; i < rank; i++)
        dims[i] = d[i];
    if (space >= 0)
        H5Sclose(space);
    if (did >= 0)
        H5Dclose(did);
    if (fid >= 0)
        H5Fclose(fid);
    return rank;
}

/* ---- masks -------------------------------------------------------------- */

int cmp_i32(const void *a, const void *b)
{
    int32_t p = *(const int32_t *)a, q = *(const int32_t *)b;
    return (p > q) - (p < q);
}

size_t mask_ids(const int32_t *m, size_t n, int32_t *ids)
{
    memcpy(ids, m, n * sizeof *ids);
    qsort(ids, n, sizeof *ids, cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || ids[k - 1] != ids[i])
            ids[k++] = ids[i];
    return k;
}

/* ---- meshes and region statistics --------------------------------------- */

void assert_stats(const raster_region_stats *st, const exp_stats *e)
{
    assert_int_equal(st->id, e->id);
    assert_int_equal(st->cells, e->cells);
    assert_int_equal(st->pure_chunks, e->pure);
    assert_int_equal(st->mixed_chunks, e->mixed);
    assert_int_equal(st->bbox_y0, e->by0);
    assert_int_equal(st->bbox_x0, e->bx0);
    assert_int_equal(st->bbox_y1, e->by1);
    assert_int_equal(st->bbox_x1, e->bx1);
    assert_int_equal(st->tbox_y0, e->ty0);
    assert_int_equal(st->tbox_x0, e->tx0);
    assert_int_equal(st->tbox_y1, e->ty1);
    assert_int_equal(st->tbox_x1, e->tx1);
    assert_int_equal(st->bbox_cells, e->bbox_cells);
    assert_int_equal(st->bbox_tile_cells, e->bbox_tile_cells);
    assert_int_equal(st->read_cells, e->read_cells);
    assert_true(fabs(st->data_reduction_rate - e->drr) < 1e-12);
}

void assert_chunk(const raster_mesh *m, size_t i, size_t y0, size_t x0,
                  size_t h, size_t w, int mixed, size_t nshares)
{
    raster_chunk c;
    assert_int_equal(raster_mesh_chunk(m, i, &c), RASTER_OK);
    assert_int_equal(c.id, i);
    assert_int_equal(c.y0, y0);
    assert_int_equal(c.x0, x0);
    assert_int_equal(c.h, h);
    assert_int_equal(c.w, w);
    assert_int_equal(c.mixed, mixed);
    assert_int_equal(c.nshares, nshares);
}

void assert_share(const raster_mesh *m, size_t chunk, size_t k, int32_t id,
                  size_t cells, size_t y0, size_t x0, size_t y1, size_t x1)
{
    raster_chunk c;
    assert_int_equal(raster_mesh_chunk(m, chunk, &c), RASTER_OK);
    assert_true(k < c.nshares);
    assert_int_equal(c.shares[k].id, id);
    assert_int_equal(c.shares[k].cells, cells);
    assert_int_equal(c.shares[k].y0, y0);
    assert_int_equal(c.shares[k].x0, x0);
    assert_int_equal(c.shares[k].y1, y1);
    assert_int_equal(c.shares[k].x1, x1);
}

void assert_region_chunks(const raster_mesh *m, int32_t id,
                          const size_t *expect, size_t n)
{
    const size_t *list = NULL;
    size_t nlist = 12345;
    assert_int_equal(raster_mesh_region_chunks(m, id, &list, &nlist),
                     RASTER_OK);
    assert_int_equal(nlist, n);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(list[k], expect[k]);
}

size_t type_size(int xtype)
{
    switch (xtype) {
    case NC_BYTE: case NC_UBYTE: case NC_CHAR: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    default: return 8;
    }
}

const char *type_name(int xtype)
{
    switch (xtype) {
    case NC_BYTE: return "byte";
    case NC_UBYTE: return "ubyte";
    case NC_SHORT: return "short";
    case NC_USHORT: return "ushort";
    case NC_INT: return "int";
    case NC_UINT: return "uint";
    case NC_INT64: return "int64";
    case NC_UINT64: return "uint64";
    case NC_FLOAT: return "float";
    case NC_DOUBLE: return "double";
    default: return "?";
    }
}

int in_child(const char *what, int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* CMocka's handlers would carry on with the next tests in the
         * child: let a crash (or an alarm) end the child instead */
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
                                   SIGSYS, SIGALRM};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        int r = fn(arg);
        _exit(TEST_CHILD_BASE + (r >= 0 && r < 50 ? r : 50));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("%s: ended by signal %d (%s)", what, WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "a hang" : "a crash");
    if (!WIFEXITED(status))
        fail_msg("%s: did not exit", what);
    if (WEXITSTATUS(status) < TEST_CHILD_BASE)
        fail_msg("%s: ended with status %d (a sanitizer report?)", what,
                 WEXITSTATUS(status));
    return WEXITSTATUS(status) - TEST_CHILD_BASE;
}
