/*
 * test_direct_writes.c - store chunks written straight to the file
 * (src/access/direct.c) hold what netCDF would have written.
 *
 * The same writes go to a raster variable (raster_var_put) and to a plain
 * netCDF-4 variable; both are then compared element by element, through
 * netCDF in the open writable file and after reopening (the pread fast
 * path). The variable is double(time unlimited, z = 3, 768, 1120), so a
 * large region's store chunks are cut along the cells and another's are
 * two levels deep (an edge chunk along z): records written whole go
 * direct; partial boxes, a box not aligned to the chunks along z and a
 * record skipped (fill) go through netCDF. direct_chunks_written() tells
 * whether the direct path ran. Each runs with 1 and 2 threads. Error
 * paths: failed allocations, a file size limit (the write fails with
 * netCDF's HDF5 status), a read-only file. Records written in one call
 * lie side by side in each store, and read back right from disk. Small
 * writes (160 values) go to HDF5 straight (chunkio_small_writes()); thin
 * reads of the file reopened keep their spans (fileio_kept_hits()).
 * In format 5 (the variable holds its values, chunked as its tiles) the
 * whole tiles are the variable's own chunks, written store by store with
 * their padding set to the fill value (test_direct_format5).
 */
#include <hdf5.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "alloc.h"
#include "chunkio.h"
#include "fileio.h"
#include "direct.h"
#include "error.h"
#include "tiles.h"
#include "var.h"

#define NT 5
#define NZ 3
#define NY 768
#define NX 1120
#define PLANE ((size_t)NY * NX)
#define RECORD ((size_t)NZ * PLANE)

static const double fillv = -999.0;

/* Region 1 left of column 820, region 2 right of it, with a diagonal of
 * region 3 making mixed tiles. */
static int32_t *make_mask(void)
{
    int32_t *m = malloc(PLANE * sizeof *m);
    assert_non_null(m);
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            m[y * NX + x] = (x + 2 * y) % 997 == 0 ? 3 : x < 820 ? 1 : x < 1050 ? 2 : 4;
    return m;
}

/* The value a write number `tag` puts at (t, z, y, x). */
static double value(int tag, size_t t, size_t z, size_t y, size_t x)
{
    return tag * 1e7 + (double)(((t * NZ + z) * NY + y) * NX + x) * 0.25;
}

/* Both files, open for writing. */
typedef struct pair {
    raster_file *rf;
    raster_var *rv;
    int pid, pvar;
    char rpath[600], ppath[600];
} pair;

/* Both files, the raster one in format `format` (0: the default) with
 * its variable chunked as `chunk`. */
static void pair_create_as(pair *p, const char *tag, int format,
                           const size_t *chunk)
{
    char name[64];
    snprintf(name, sizeof name, "%s.raster.nc", tag);
    tmpdir_path(p->rpath, sizeof p->rpath, name);
    snprintf(name, sizeof name, "%s.plain.nc", tag);
    tmpdir_path(p->ppath, sizeof p->ppath, name);
    int32_t *vals = make_mask();
    raster_mask *m;
    RS(raster_mask_wrap(vals, NY, NX, &m));
    free(vals);
    RS(raster_create(p->rpath, &p->rf));
    if (format)
        RS(raster_file_set_format(p->rf, format));
    int ncid = raster_file_ncid(p->rf), d[4];
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(ncid, "z_t", NZ, &d[1]));
    NC(nc_def_dim(ncid, "nlat", NY, &d[2]));
    NC(nc_def_dim(ncid, "nlon", NX, &d[3]));
    RS(raster_def_var(p->rf, ncid, "v", NC_DOUBLE, 4, d, chunk, m, &p->rv));
    raster_mask_free(m);
    RS(raster_var_put_att(p->rv, "_FillValue", NC_DOUBLE, 1, &fillv));

    NC(nc_create(p->ppath, NC_NETCDF4 | NC_CLOBBER, &p->pid));
    NC(nc_def_dim(p->pid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(p->pid, "z_t", NZ, &d[1]));
    NC(nc_def_dim(p->pid, "nlat", NY, &d[2]));
    NC(nc_def_dim(p->pid, "nlon", NX, &d[3]));
    NC(nc_def_var(p->pid, "v", NC_DOUBLE, 4, d, &p->pvar));
    NC(nc_put_att_double(p->pid, p->pvar, "_FillValue", NC_DOUBLE, 1,
                         &fillv));
    NC(nc_enddef(p->pid));
}

static void pair_create(pair *p, const char *tag)
{
    /* odd tiles: pieces straddle cell chunks */
    static const size_t chunk[4] = {1, 1, 25, 7};
    pair_create_as(p, tag, 0, chunk);
}

/* Writes box start/count with values of `tag` to both files; returns how
 * many chunks went direct. */
static size_t put_both(pair *p, int tag, const size_t *start,
                       const size_t *count)
{
    size_t n = count[0] * count[1] * count[2] * count[3], k = 0;
    double *buf = malloc(n * sizeof *buf);
    assert_non_null(buf);
    for (size_t t = 0; t < count[0]; t++)
        for (size_t z = 0; z < count[1]; z++)
            for (size_t y = 0; y < count[2]; y++)
                for (size_t x = 0; x < count[3]; x++)
                    buf[k++] = value(tag, start[0] + t, start[1] + z,
                                     start[2] + y, start[3] + x);
    size_t before = direct_chunks_written();
    RS(raster_var_put(p->rv, start, count, NULL, buf));
    size_t went = direct_chunks_written() - before;
    NC(nc_put_vara_double(p->pid, p->pvar, start, count, buf));
    free(buf);
    return went;
}

/* The raster variable reads exactly as the plain one, all records. */
static void compare(raster_var *rv, int pid, int pvar)
{
    int dim;
    size_t nt;
    NC(nc_inq_dimid(pid, "time", &dim));
    NC(nc_inq_dimlen(pid, dim, &nt));
    size_t shape[4];
    RS(raster_var_dims(rv, NULL, shape, NULL));
    assert_int_equal(shape[0], nt);
    double *a = malloc(RECORD * sizeof *a), *b = malloc(RECORD * sizeof *b);
    assert_true(a && b);
    for (size_t t = 0; t < nt; t++) {
        size_t start[4] = {t, 0, 0, 0}, count[4] = {1, NZ, NY, NX};
        RS(raster_var_get(rv, start, count, NULL, a));
        NC(nc_get_vara_double(pid, pvar, start, count, b));
        for (size_t i = 0; i < RECORD; i++)
            if (a[i] != b[i])
                fail_msg("record %zu cell %zu: raster %g, netCDF %g", t, i,
                         a[i], b[i]);
    }
    free(a);
    free(b);
}

/* Both files reopened read-only (raster's reads then take the pread fast
 * path) and compared; the caller closes them. */
static void reopen_compared(pair *p)
{
    RS(raster_open(p->rpath, RASTER_READ, &p->rf));
    RS(raster_var_find(p->rf, "v", &p->rv));
    NC(nc_open(p->ppath, NC_NOWRITE, &p->pid));
    NC(nc_inq_varid(p->pid, "v", &p->pvar));
    compare(p->rv, p->pid, p->pvar);
}

static void scenario(int threads)
{
    RS(raster_set_threads(threads));
    pair p;
    char tag[32];
    snprintf(tag, sizeof tag, "direct%d", threads);
    pair_create(&p, tag);

    /* record 0 whole: every big chunk direct */
    size_t s0[4] = {0, 0, 0, 0}, c0[4] = {1, NZ, NY, NX};
    assert_true(put_both(&p, 1, s0, c0) > 0);
    /* record 1: a partial box through netCDF (chunks cached), then the
     * whole record direct: no stale cached chunk may survive */
    size_t s1[4] = {1, 0, 10, 5}, c1[4] = {1, NZ, 190, 900};
    assert_int_equal(put_both(&p, 2, s1, c1), 0);
    size_t s1w[4] = {1, 0, 0, 0};
    assert_true(put_both(&p, 3, s1w, c0) > 0);
    /* record 3, levels 0-1: extends over record 2 (fill); aligned to
     * every store's chunks along z */
    size_t s3[4] = {3, 0, 0, 0}, c3[4] = {1, 2, NY, NX};
    assert_true(put_both(&p, 4, s3, c3) > 0);
    /* record 4, levels 1-2: region 2's two-level chunks are not aligned
     * (netCDF), region 1's one-level ones are (direct) */
    size_t s4[4] = {4, 1, 0, 0}, c4[4] = {1, 2, NY, NX};
    assert_true(put_both(&p, 5, s4, c4) > 0);
    /* then a partial write into a chunk written directly */
    size_t s5[4] = {4, 1, 100, 100}, c5[4] = {1, 1, 3, 400};
    assert_int_equal(put_both(&p, 6, s5, c5), 0);
    compare(p.rv, p.pid, p.pvar);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));

    /* reopened: the fast path reads the directly written chunks */
    reopen_compared(&p);
    RS(raster_var_check(p.rv));
    /* a read-only file refuses writes before any reaches the stores */
    double one = 1.0;
    size_t os[4] = {0, 0, 0, 0}, oc[4] = {1, 1, 1, 1};
    size_t before = direct_chunks_written();
    assert_int_equal(raster_var_put(p.rv, os, oc, NULL, &one), RASTER_EINVAL);
    assert_int_equal(direct_chunks_written(), before);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
    RS(raster_set_threads(0));
}

static void test_direct_one_thread(void **state)
{
    (void)state;
    scenario(1);
}

static void test_direct_two_threads(void **state)
{
    (void)state;
    scenario(2);
}

/* Failed allocations anywhere in a direct write: an error with a message
 * and nothing leaked; the write then succeeds and reads back right. */
static void test_direct_alloc_failures(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        RS(raster_set_threads(threads));
        pair p;
        pair_create(&p, threads == 1 ? "alloc1" : "alloc2");
        size_t s[4] = {0, 0, 0, 0}, c[4] = {1, NZ, NY, NX};
        double *buf = malloc(RECORD * sizeof *buf);
        assert_non_null(buf);
        for (size_t i = 0; i < RECORD; i++)
            buf[i] = value(7, 0, 0, 0, 0) + (double)i;
        RS(raster_var_put(p.rv, s, c, NULL, buf)); /* materialized */
        int failed = 0;
        for (unsigned long n = 1; n < 200; n++) {
            raster_errmsg_clear();
            raster_alloc_fail_at(n);
            int rc = raster_var_put(p.rv, s, c, NULL, buf);
            raster_alloc_fail_at(0);
            if (rc == RASTER_OK)
                break;
            assert_int_equal(rc, RASTER_ENOMEM);
            assert_true(raster_errmsg()[0] != '\0');
            failed++;
        }
        assert_true(failed > 0);
        NC(nc_put_vara_double(p.pid, p.pvar, s, c, buf));
        compare(p.rv, p.pid, p.pvar);
        free(buf);
        RS(raster_close(p.rf));
        NC(nc_close(p.pid));
        unlink(p.rpath);
        unlink(p.ppath);
    }
    RS(raster_set_threads(0));
}

/* In a child under a file size limit: a whole-record write (direct)
 * fails with netCDF's HDF5 status, as a write through netCDF would. */
static int write_past_limit(void *arg)
{
    int threads = *(int *)arg;
    if (raster_set_threads(threads) != RASTER_OK)
        return 1;
    signal(SIGXFSZ, SIG_IGN); /* writes fail with EFBIG instead */
    pair p;
    pair_create(&p, threads == 1 ? "limit1" : "limit2");
    struct rlimit lim = {8 << 20, 8 << 20};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 2;
    double *buf = calloc(RECORD, sizeof *buf);
    if (!buf)
        return 3;
    size_t c[4] = {1, NZ, NY, NX}, before = direct_chunks_written();
    int rc = RASTER_OK;
    for (size_t t = 0; t < 4 && rc == RASTER_OK; t++) {
        size_t s[4] = {t, 0, 0, 0};
        rc = raster_var_put(p.rv, s, c, NULL, buf);
    }
    free(buf);
    if (rc != RASTER_ENETCDF)
        return 4;
    if (raster_nc_status() != NC_EHDFERR || raster_errmsg()[0] == '\0')
        return 5;
    if (direct_chunks_written() == before)
        return 6; /* the direct path never ran */
    return 0;
}

static void test_direct_file_limit(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++)
        assert_int_equal(in_child("direct write past RLIMIT_FSIZE",
                                  write_past_limit, &threads), 0);
}

/* Both files created, three whole records of values `tag` written (they
 * go direct), both closed. */
static void three_records(pair *p, const char *name, int tag)
{
    pair_create(p, name);
    size_t s[4] = {0, 0, 0, 0}, c[4] = {3, NZ, NY, NX};
    assert_true(put_both(p, tag, s, c) > 0);
    RS(raster_close(p->rf));
    NC(nc_close(p->pid));
}

/* Reopens both files, compares them, closes and removes them. */
static void compared_and_removed(pair *p)
{
    reopen_compared(p);
    RS(raster_close(p->rf));
    NC(nc_close(p->pid));
    unlink(p->rpath);
    unlink(p->ppath);
}

/* Records written in one call lie side by side in each store: chunk
 * (t, z, c) of a store is followed in the file by chunk (t, z+1, c), so
 * that a region read from disk streams each cell chunk's records. Then
 * the file, evicted from the page cache, reads back right (the path that
 * announces the request to the kernel in file order). */
static void test_direct_records_side_by_side(void **state)
{
    (void)state;
    RS(raster_set_threads(2));
    pair p;
    three_records(&p, "sidebyside", 8);

    hid_t fid = H5Fopen(p.rpath, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t did = H5Dopen2(fid, "/raster_v/region_1/data", H5P_DEFAULT);
    assert_true(did >= 0);
    hid_t dcpl = H5Dget_create_plist(did), space = H5Dget_space(did);
    hsize_t ck[3], dims[3];
    assert_int_equal(H5Pget_chunk(dcpl, 3, ck), 3);
    assert_int_equal(H5Sget_simple_extent_dims(space, dims, NULL), 3);
    assert_true(ck[0] == 1 && ck[1] == 1 && ck[2] < dims[2]); /* cut */
    size_t adjacent = 0;
    for (hsize_t cell = 0; cell + ck[2] <= dims[2]; cell += ck[2]) {
        haddr_t prev_end = HADDR_UNDEF;
        for (hsize_t t = 0; t < 3; t++)
            for (hsize_t z = 0; z < NZ; z++) {
                hsize_t off[3] = {t, z, cell}, size;
                unsigned mask;
                haddr_t addr;
                assert_true(H5Dget_chunk_info_by_coord(did, off, &mask,
                                                       &addr, &size) >= 0);
                if (prev_end != HADDR_UNDEF) {
                    if (addr != prev_end)
                        fail_msg("chunk (%llu, %llu, %llu) at %llu, not "
                                 "after the one before (%llu)",
                                 (unsigned long long)t, (unsigned long long)z,
                                 (unsigned long long)cell,
                                 (unsigned long long)addr,
                                 (unsigned long long)prev_end);
                    adjacent++;
                }
                prev_end = addr + size;
            }
    }
    assert_true(adjacent >= 3 * NZ - 1);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Dclose(did);
    H5Fclose(fid);

    evict_file(p.rpath);
    compared_and_removed(&p);
    RS(raster_set_threads(0));
}

/* The whole file's bytes. */
static unsigned char *file_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    unsigned char *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* 1 when the file system of `path`'s directory takes fallocate. */
static int can_fallocate(const char *path)
{
    char probe[700];
    snprintf(probe, sizeof probe, "%s.probe", path);
    int fd = open(probe, O_CREAT | O_RDWR | O_TRUNC, 0600), ok = 0;
    if (fd >= 0) {
        ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
        close(fd);
        unlink(probe);
    }
    return ok;
}

/* A direct write reserves the file blocks of the chunks it appends
 * before writing them (direct.c, reserve_space): the file holds the same
 * bytes as one written without the reservation, and no reserved block is
 * left past its end (what was reserved is what the chunks took; HDF5
 * 1.10 also cuts a file to its end of allocation at close). */
static void test_direct_reserve(void **state)
{
    (void)state;
    RS(raster_set_threads(2));
    pair a, b;
    size_t before = direct_bytes_reserved();
    three_records(&a, "reserved", 9);
    size_t reserved = direct_bytes_reserved() - before;
    direct_reserve = 0;
    three_records(&b, "unreserved", 9);
    direct_reserve = 1;
    assert_int_equal(direct_bytes_reserved() - before, reserved);
    if (can_fallocate(a.rpath)) {
        /* the big stores' chunks of three records: all but the small
         * stores' (netCDF) and the mixed tiles' */
        assert_true(reserved > 3 * RECORD * sizeof(double) / 2);
        struct stat st;
        assert_int_equal(stat(a.rpath, &st), 0);
        long long used = (long long)st.st_blocks * 512;
        long long size = ((long long)st.st_size + 4095) / 4096 * 4096;
        if (used > size + (64 << 10))
            fail_msg("%lld bytes allocated to a file of %lld", used,
                     (long long)st.st_size);
    } else {
        print_message("no fallocate here: nothing reserved\n");
        assert_int_equal(reserved, 0);
    }
    size_t la, lb;
    unsigned char *ba = file_bytes(a.rpath, &la), *bb = file_bytes(b.rpath, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba);
    free(bb);
    compared_and_removed(&a);
    compared_and_removed(&b);
    RS(raster_set_threads(0));
}

/* Chunks of dataset `path` in file fid: their addresses, sizes and cell
 * offsets (the last coordinate); returns how many. */
static size_t chunks_of(hid_t fid, const char *path, haddr_t *addr,
                        hsize_t *size, hsize_t *cell, size_t cap)
{
    hid_t did = H5Dopen2(fid, path, H5P_DEFAULT);
    assert_true(did >= 0);
    hid_t space = H5Dget_space(did);
    hsize_t n;
    assert_true(H5Dget_num_chunks(did, space, &n) >= 0);
    assert_true(n <= cap);
    for (hsize_t i = 0; i < n; i++) {
        hsize_t off[3];
        unsigned mask;
        assert_true(H5Dget_chunk_info(did, space, i, off, &mask, &addr[i],
                                      &size[i]) >= 0);
        cell[i] = off[2];
    }
    H5Sclose(space);
    H5Dclose(did);
    return (size_t)n;
}

static unsigned long long att_u64(hid_t fid, const char *group,
                                  const char *name)
{
    unsigned long long v = 0;
    hid_t aid = H5Aopen_by_name(fid, group, name, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(aid >= 0);
    assert_true(H5Aread(aid, H5T_NATIVE_ULLONG, &v) >= 0);
    H5Aclose(aid);
    return v;
}

/* A region's pure store lies between the mixed-store chunks that hold its
 * mixed run (direct.c writes them region by region): the stretch of the
 * file from the first to the last of those chunks holds no chunk of
 * another region's pure store. */
static void test_direct_region_stretch(void **state)
{
    (void)state;
    pair p;
    three_records(&p, "stretch", 9);

    enum { CAP = 8192 };
    static haddr_t addr[CAP], oaddr[CAP];
    static hsize_t size[CAP], cell[CAP], osize[CAP], ocell[CAP];
    hid_t fid = H5Fopen(p.rpath, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t mdid = H5Dopen2(fid, "/raster_v/Mixed_Chunks/data", H5P_DEFAULT);
    assert_true(mdid >= 0);
    hid_t dcpl = H5Dget_create_plist(mdid);
    hsize_t ck[3];
    assert_int_equal(H5Pget_chunk(dcpl, 3, ck), 3);
    H5Pclose(dcpl);
    H5Dclose(mdid);
    assert_true(ck[2] * sizeof(double) >= ((size_t)256 << 10)); /* direct */
    unsigned long long moff = att_u64(fid, "/raster_v/region_2",
                                      "mixed_offset");
    unsigned long long mcells = att_u64(fid, "/raster_v/region_2",
                                        "mixed_cells");
    assert_true(mcells > 0);
    /* the stretch: region 2's pure chunks and the mixed chunks of its run */
    haddr_t lo = HADDR_UNDEF, hi = 0;
    size_t n = chunks_of(fid, "/raster_v/region_2/data", addr, size, cell,
                         CAP);
    size_t m = chunks_of(fid, "/raster_v/Mixed_Chunks/data", oaddr, osize,
                         ocell, CAP);
    assert_true(n > 0 && m > 0);
    for (size_t i = 0; i < n + m; i++) {
        int mixed = i >= n;
        haddr_t a = mixed ? oaddr[i - n] : addr[i];
        hsize_t sz = mixed ? osize[i - n] : size[i], c0 = mixed ? ocell[i - n] : 0;
        if (mixed && (c0 + ck[2] <= moff || c0 >= moff + mcells))
            continue; /* holds none of region 2's run */
        lo = a < lo ? a : lo;
        hi = a + sz > hi ? a + sz : hi;
    }
    static const char *const others[] = {"/raster_v/region_1/data",
                                         "/raster_v/region_4/data"};
    for (int k = 0; k < 2; k++) {
        size_t no = chunks_of(fid, others[k], addr, size, cell, CAP);
        assert_true(no > 0);
        for (size_t i = 0; i < no; i++)
            if (addr[i] >= lo && addr[i] < hi)
                fail_msg("a chunk of %s at %llu lies in region 2's stretch "
                         "[%llu, %llu)", others[k],
                         (unsigned long long)addr[i], (unsigned long long)lo,
                         (unsigned long long)hi);
    }
    H5Fclose(fid);
    compared_and_removed(&p);
}

/* Small writes (issue 25; chunkio.c write_small): many writes of 160
 * values, as an I/O layer cuts rows, go to HDF5 straight where the records
 * exist and through netCDF where they extend a store; strided ones and
 * typed ones too. The raster variable then reads exactly as the plain one,
 * element by element, in the open file (netCDF's reads see HDF5's writes)
 * and reopened (the pread fast path); and the variable's record count,
 * cached for writes, follows them. */
static void test_small_writes(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "small");
    size_t s0[4] = {0, 0, 0, 0}, c0[4] = {1, NZ, NY, NX};
    put_both(&p, 1, s0, c0); /* record 0 in every store */
    size_t before = chunkio_small_writes(), calls = 0;
    /* record 0, level 1, rows 100-139: half-rows and a row's rest */
    for (size_t y = 100; y < 140; y++)
        for (size_t x = 0; x < NX; x += 160, calls++) {
            size_t s[4] = {0, 1, y, x}, c[4] = {1, 1, 1, NX - x < 160 ? NX - x : 160};
            put_both(&p, 2 + (int)(y % 5), s, c);
        }
    /* all straight to HDF5 (the records exist) but the first into each
     * store netCDF has not written yet (record 0 went direct): five */
    size_t got = chunkio_small_writes() - before;
    assert_true(got < calls && calls - got <= 5);
    /* held back: a read sees them; the same cells written twice keep the
     * later values, in either order of cells */
    double one[160], back[160];
    size_t os[4] = {0, 1, 120, 0}, oc[4] = {1, 1, 1, 160};
    RS(raster_var_get(p.rv, os, oc, NULL, back));
    for (int i = 0; i < 160; i++)
        assert_true(back[i] == value(2 + 120 % 5, 0, 1, 120, (size_t)i));
    for (int pass = 0; pass < 2; pass++) {
        size_t ws[4] = {0, 1, 121, pass ? 0 : 40}, wc[4] = {1, 1, 1, 120};
        for (int i = 0; i < 120; i++)
            one[i] = 1000.0 * (pass + 1) + i;
        RS(raster_var_put(p.rv, ws, wc, NULL, one));
        NC(nc_put_vara_double(p.pid, p.pvar, ws, wc, one));
    }
    RS(raster_flush(p.rf));
    RS(raster_flush(p.rf)); /* nothing left: a no-op */
    /* record 2 (record 1 left as fill): the first write into each store
     * extends it through netCDF, later ones go straight */
    before = chunkio_small_writes();
    for (size_t y = 700; y < 720; y++)
        for (size_t x = 0; x < NX; x += 160) {
            size_t s[4] = {2, 0, y, x}, c[4] = {1, 1, 1, NX - x < 160 ? NX - x : 160};
            put_both(&p, 7, s, c);
        }
    size_t straight = chunkio_small_writes() - before;
    assert_true(straight > 0 && straight < 20 * 7);
    /* two levels at once, a small box across tiles */
    size_t s2[4] = {2, 1, 300, 810}, c2[4] = {1, 2, 3, 40};
    put_both(&p, 8, s2, c2);
    /* strided along x (not this path) and typed (float values) */
    double vals[80];
    for (int i = 0; i < 80; i++)
        vals[i] = value(9, 0, 2, 50, (size_t)i);
    size_t ss[4] = {0, 2, 50, 3}, sc[4] = {1, 1, 1, 80};
    ptrdiff_t sd[4] = {1, 1, 1, 3};
    RS(raster_var_put_typed(p.rv, ss, sc, sd, NULL, vals, NC_DOUBLE));
    NC(nc_put_vars_double(p.pid, p.pvar, ss, sc, sd, vals));
    float fv[160];
    for (int i = 0; i < 160; i++)
        fv[i] = (float)(i * 0.5);
    size_t fs[4] = {2, 2, 5, 900}, fc[4] = {1, 1, 1, 160};
    RS(raster_var_put_typed(p.rv, fs, fc, NULL, NULL, fv, NC_FLOAT));
    NC(nc_put_vara_float(p.pid, p.pvar, fs, fc, fv));
    size_t shape[4];
    RS(raster_var_dims(p.rv, NULL, shape, NULL));
    assert_int_equal(shape[0], 3);
    compare(p.rv, p.pid, p.pvar);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    /* reopened read-only: thin bands read three times, the handle's first
     * thin read keeping nothing (the second finds nothing kept), the
     * third from the span cache (chunkio.c), and columns enough to empty
     * it, all as the plain file reads */
    reopen_compared(&p);
    double *a = malloc(3 * NZ * NY * sizeof *a), *b = malloc(3 * NZ * NY * sizeof *b);
    assert_true(a && b);
    for (size_t x = 0; x < NX; x += 7) {
        size_t bs[4] = {0, 0, 0, x}, bc[4] = {3, NZ, NY, 1};
        size_t hits = fileio_kept_hits();
        for (int again = 0; again < (x < 50 ? 3 : 1); again++) {
            RS(raster_var_get(p.rv, bs, bc, NULL, a));
            NC(nc_get_vara_double(p.pid, p.pvar, bs, bc, b));
            for (size_t i = 0; i < 3 * NZ * NY; i++)
                if (a[i] != b[i])
                    fail_msg("column %zu value %zu: raster %g, netCDF %g", x,
                             i, a[i], b[i]);
            if (x == 0 && again == 1 && fileio_kept_hits() != hits)
                fail_msg("the handle's first thin read kept spans");
        }
        if (x < 50)
            assert_true(fileio_kept_hits() > hits);
    }
    free(a);
    free(b);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
}

/* One box read from both files as memtype, twice (the second time from
 * the tile index's memo), compared element by element. */
/* The plain file's values of the box into b, as memtype; netCDF's status */
static int plain_box(const pair *p, const size_t *start, const size_t *count,
                     const ptrdiff_t *stride, nc_type memtype, void *b)
{
    return memtype == NC_DOUBLE
               ? nc_get_vars_double(p->pid, p->pvar, start, count, stride, b)
           : memtype == NC_FLOAT
               ? nc_get_vars_float(p->pid, p->pvar, start, count, stride, b)
               : nc_get_vars_int(p->pid, p->pvar, start, count, stride, b);
}

/* a and b, n values of sz bytes of the box, equal value by value */
static void same_box(const unsigned char *a, const unsigned char *b,
                     size_t n, size_t sz, const size_t *start,
                     const size_t *count, nc_type memtype)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i * sz, b + i * sz, sz) != 0)
            fail_msg("box (%zu %zu %zu %zu) x (%zu %zu %zu %zu) type %d "
                     "value %zu differs", start[0], start[1], start[2],
                     start[3], count[0], count[1], count[2], count[3],
                     (int)memtype, i);
}

static void band_compared(pair *p, const size_t *start, const size_t *count,
                          const ptrdiff_t *stride, nc_type memtype)
{
    size_t n = count[0] * count[1] * count[2] * count[3];
    size_t sz = memtype == NC_DOUBLE ? 8 : 4;
    unsigned char *a = malloc(n * sz), *b = malloc(n * sz);
    assert_true(a && b);
    for (int again = 0; again < 2; again++) {
        size_t hits = tiles_memo_hits();
        memset(a, 0xa5, n * sz);
        RS(raster_var_get_typed(p->rv, start, count, stride, NULL, a,
                                memtype));
        int st = raster_nc_status();
        int want = plain_box(p, start, count, stride, memtype, b);
        assert_int_equal(st, want);
        same_box(a, b, n, sz, start, count, memtype);
        if (again)
            assert_true(tiles_memo_hits() > hits);
    }
    free(a);
    free(b);
}

/* A box of a band test: start, count and stride of the 4 dimensions */
typedef struct band_box {
    size_t start[4], count[4];
    ptrdiff_t stride[4];
} band_box;

/* A pair named `name` with records 0 and 2 written (1 never: fill), both
 * files closed. */
static void records_0_and_2(pair *p, const char *name)
{
    pair_create(p, name);
    size_t s0[4] = {0, 0, 0, 0}, c0[4] = {1, NZ, NY, NX};
    put_both(p, 1, s0, c0);
    s0[0] = 2;
    put_both(p, 2, s0, c0);
    RS(raster_close(p->rf));
    NC(nc_close(p->pid));
}

/* Thin bands and strided boxes of the reopened file (strided pieces,
 * piece.h) read as the plain file: a column at either edge, columns
 * through the mixed tiles of the diagonal, two columns within a tile and
 * across a tile and a region boundary, row and column strides, typed
 * reads, and a record never written (fill). The tiles are 25 x 7 and the
 * stores cut along cells across them, so pieces are cut too. */
static void test_strided_bands(void **state)
{
    (void)state;
    pair p;
    records_0_and_2(&p, "strided");
    reopen_compared(&p);
    size_t before = chunkio_strided_reads();
    static const band_box boxes[] = {
        {{0, 0, 0, 0}, {3, NZ, NY, 1}, {1, 1, 1, 1}},        /* column 0 */
        {{0, 0, 0, NX - 1}, {3, NZ, NY, 1}, {1, 1, 1, 1}},   /* last column */
        {{0, 0, 0, 500}, {3, NZ, NY, 1}, {1, 1, 1, 1}},      /* mixed tiles */
        {{0, 1, 3, 1}, {3, 2, NY - 3, 2}, {1, 1, 1, 1}},     /* in a tile */
        {{0, 0, 0, 6}, {3, NZ, NY, 2}, {1, 1, 1, 1}},        /* across tiles */
        {{0, 0, 0, 819}, {3, NZ, NY, 2}, {1, 1, 1, 1}},      /* regions 1, 2 */
        {{0, 0, 1, 1049}, {3, NZ, 255, 1}, {1, 1, 3, 1}},    /* rows by 3 */
        {{2, 0, 5, 3}, {1, NZ, 150, 60}, {1, 1, 5, 17}},     /* both strided */
        {{0, 2, 0, 700}, {3, 1, NY, 40}, {1, 1, 1, 9}},      /* columns by 9 */
        {{1, 0, 0, 33}, {1, NZ, NY, 1}, {1, 1, 1, 1}},       /* fill only */
    };
    static const nc_type types[] = {NC_DOUBLE, NC_FLOAT, NC_INT};
    for (size_t k = 0; k < sizeof boxes / sizeof boxes[0]; k++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            band_compared(&p, boxes[k].start, boxes[k].count,
                          boxes[k].stride, types[t]);
    /* the same columns record by record: the memo holds the grid box */
    for (size_t t = 0; t < 3; t++) {
        size_t st[4] = {t, 0, 0, 500}, ct[4] = {1, NZ, NY, 1};
        band_compared(&p, st, ct, NULL, NC_DOUBLE);
    }
    assert_true(chunkio_strided_reads() > before);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
}

/* One box of the read-only pair from a fresh raster handle (a handle's
 * first thin read keeps no spans: read_threaded can take it) as memtype,
 * against plain netCDF element by element; the status of the read. */
static int fresh_band(pair *p, const size_t *start, const size_t *count,
                      const ptrdiff_t *stride, nc_type memtype, int fail_at)
{
    size_t n = count[0] * count[1] * count[2] * count[3];
    size_t sz = memtype == NC_DOUBLE ? 8 : 4;
    unsigned char *a = malloc(n * sz), *b = malloc(n * sz);
    assert_true(a && b);
    RS(raster_open(p->rpath, RASTER_READ, &p->rf));
    RS(raster_var_find(p->rf, "v", &p->rv));
    memset(a, 0xa5, n * sz);
    raster_errmsg_clear();
    raster_alloc_fail_at((unsigned long)fail_at);
    int rc = raster_var_get_typed(p->rv, start, count, stride, NULL, a,
                                  memtype);
    raster_alloc_fail_at(0);
    if (rc == RASTER_OK) {
        int want = plain_box(p, start, count, stride, memtype, b);
        assert_int_equal(want, NC_NOERR);
        same_box(a, b, n, sz, start, count, memtype);
    }
    RS(raster_close(p->rf));
    free(a);
    free(b);
    return rc;
}

/* Thin bands of many short spans (a staged pread a tile and plane) split
 * among 2 and 3 read threads (chunkio.c staged_pay, its thresholds
 * lowered to this small file's bands), warm and from disk, against plain
 * netCDF element by element: columns through pure and mixed tiles and at
 * the edges, two columns across a tile and a region boundary, rows
 * strided, a record never written (fill), double, float and int reads. Helpers that run and
 * helpers cancelled before they start (the caller reads every plane) give
 * the same values; one thread splits nothing, nor the default threads
 * when no core is idle. Then every allocation of a threaded band read
 * failing in turn: the values, or RASTER_ENOMEM. */
static void test_threaded_bands(void **state)
{
    (void)state;
    pair p;
    records_0_and_2(&p, "threaded");
    NC(nc_open(p.ppath, NC_NOWRITE, &p.pid));
    NC(nc_inq_varid(p.pid, "v", &p.pvar));
    static const band_box boxes[] = {
        {{0, 0, 0, 0}, {3, NZ, NY, 1}, {1, 1, 1, 1}},     /* column 0 */
        {{0, 0, 0, NX - 1}, {3, NZ, NY, 1}, {1, 1, 1, 1}}, /* last column */
        {{0, 0, 0, 500}, {3, NZ, NY, 1}, {1, 1, 1, 1}},   /* mixed tiles */
        {{0, 0, 0, 819}, {3, NZ, NY, 2}, {1, 1, 1, 1}},   /* regions 1, 2 */
        {{0, 0, 1, 1049}, {3, NZ, 255, 1}, {1, 1, 3, 1}}, /* rows by 3 */
        {{1, 0, 0, 33}, {2, NZ, NY, 1}, {1, 1, 1, 1}},    /* fill, then data */
    };
    static const nc_type types[] = {NC_DOUBLE, NC_FLOAT, NC_INT};
    const size_t nb = sizeof boxes / sizeof boxes[0];
    chunkio_set_staged_min(1, 1);
    for (int threads = 1; threads <= 3; threads++)
        for (int mode = 1; mode <= 2; mode++) {
            RS(raster_set_threads(threads));
            chunkio_set_helpers(mode);
            size_t split = chunkio_staged_threaded();
            size_t ran = chunkio_threads_ran();
            for (size_t k = 0; k < nb; k++)
                for (size_t t = 0; t < 3; t++) {
                    if (t == 1) /* from disk: announced, output faulted in
                                   by the thread that takes a plane first */
                        evict_file(p.rpath);
                    RS(fresh_band(&p, boxes[k].start, boxes[k].count,
                                  boxes[k].stride, types[t], 0));
                }
            if (threads == 1) {
                assert_int_equal(chunkio_staged_threaded(), split);
            } else {
                assert_int_equal(chunkio_staged_threaded() - split, nb * 3);
                /* waited for: every helper ran; cancelled: none */
                assert_int_equal(chunkio_threads_ran() - ran,
                                 mode == 1 ? nb * 3 * (size_t)(threads - 1)
                                           : 0);
            }
        }
    /* the default threads split only with a core idle (or not known) */
    const char *env = getenv("RASTER_THREADS");
    char *saved = env ? strdup(env) : NULL;
    unsetenv("RASTER_THREADS");
    RS(raster_set_threads(0));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int idle = -1; idle <= 1; idle++) {
        chunkio_set_idle(idle);
        size_t split = chunkio_staged_threaded();
        RS(fresh_band(&p, boxes[2].start, boxes[2].count, boxes[2].stride,
                      NC_DOUBLE, 0));
        assert_int_equal(chunkio_staged_threaded() - split,
                         idle != 0 && cores >= 2 ? 1 : 0);
    }
    chunkio_set_idle(-2);
    if (saved)
        setenv("RASTER_THREADS", saved, 1);
    free(saved);
    /* the default thresholds: this file's bands are too small to split */
    RS(raster_set_threads(2));
    chunkio_set_staged_min(0, 0);
    size_t split = chunkio_staged_threaded();
    RS(fresh_band(&p, boxes[2].start, boxes[2].count, boxes[2].stride,
                  NC_DOUBLE, 0));
    assert_int_equal(chunkio_staged_threaded(), split);
    /* allocations failing one by one in a split read */
    chunkio_set_staged_min(1, 1);
    chunkio_set_helpers(1);
    RS(raster_set_threads(2));
    int failed = 0, rc = RASTER_ENOMEM;
    for (int n = 1; n < 400 && rc != RASTER_OK; n++) {
        split = chunkio_staged_threaded();
        rc = fresh_band(&p, boxes[2].start, boxes[2].count, boxes[2].stride,
                        NC_FLOAT, n);
        if (rc != RASTER_OK) {
            assert_int_equal(rc, RASTER_ENOMEM);
            assert_true(raster_errmsg()[0] != '\0');
            failed++;
        }
    }
    assert_int_equal(rc, RASTER_OK);
    assert_true(failed > 0);
    assert_true(chunkio_staged_threaded() > split);
    chunkio_set_staged_min(0, 0);
    chunkio_set_helpers(0);
    RS(raster_set_threads(0));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
}

/* ---- format 5: the variable's own chunks -------------------------------- */

/* Tiles of 50 x 48 (edge tiles of 18 rows and of 16 columns), two levels
 * a chunk (the second chunk along z an edge one: its second level lies
 * past z's end). */
#define F5_TH 50
#define F5_TW 48
#define F5_NTY ((NY + F5_TH - 1) / F5_TH)
#define F5_NTX ((NX + F5_TW - 1) / F5_TW)
#define F5_CHUNK_CELLS ((size_t)2 * F5_TH * F5_TW)
static const size_t f5_chunk[4] = {1, 2, F5_TH, F5_TW};

/* Tiles whose grid cells box rows [y0, y0 + ny) x columns [x0, x0 + nx)
 * holds entirely. */
static size_t tiles_inside(size_t y0, size_t ny, size_t x0, size_t nx)
{
    size_t n = 0;
    for (size_t ty = 0; ty < F5_NTY; ty++)
        for (size_t tx = 0; tx < F5_NTX; tx++) {
            size_t a = ty * F5_TH, b = tx * F5_TW;
            size_t h = NY - a < F5_TH ? NY - a : F5_TH;
            size_t w = NX - b < F5_TW ? NX - b : F5_TW;
            n += a >= y0 && a + h <= y0 + ny && b >= x0 && b + w <= x0 + nx;
        }
    return n;
}

/* Variable `avar` of netCDF file aid reads as `bvar` of bid, every record,
 * element by element. */
static void compare_plain(int aid, int avar, int bid, int bvar,
                          const char *what)
{
    int dim;
    size_t na, nb;
    NC(nc_inq_dimid(aid, "time", &dim));
    NC(nc_inq_dimlen(aid, dim, &na));
    NC(nc_inq_dimid(bid, "time", &dim));
    NC(nc_inq_dimlen(bid, dim, &nb));
    assert_int_equal(na, nb);
    double *a = malloc(RECORD * sizeof *a), *b = malloc(RECORD * sizeof *b);
    assert_true(a && b);
    for (size_t t = 0; t < na; t++) {
        size_t start[4] = {t, 0, 0, 0}, count[4] = {1, NZ, NY, NX};
        NC(nc_get_vara_double(aid, avar, start, count, a));
        NC(nc_get_vara_double(bid, bvar, start, count, b));
        for (size_t i = 0; i < RECORD; i++)
            if (a[i] != b[i])
                fail_msg("%s: record %zu cell %zu: %g, plain netCDF %g",
                         what, t, i, a[i], b[i]);
    }
    free(a);
    free(b);
}

/* Store position (regions by ascending id, as the mask's 1-4 are) of the
 * owner of the tile at row ty, column tx of the grid, when mixed: of its
 * regions, the one with the fewest cells in the whole mask (ties to the
 * lower id); -1 when the tile is pure. */
static int tile_owner(const int32_t *mask, const size_t *cells, size_t ty,
                      size_t tx)
{
    int seen[5] = {0}, n = 0, best = -1;
    for (size_t y = ty * F5_TH; y < NY && y < (ty + 1) * F5_TH; y++)
        for (size_t x = tx * F5_TW; x < NX && x < (tx + 1) * F5_TW; x++)
            n += !seen[mask[y * NX + x]]++;
    if (n < 2)
        return -1;
    for (int id = 1; id <= 4; id++)
        if (seen[id] && (best < 0 || cells[id] < cells[best]))
            best = id;
    return best - 1;
}

/* The order of record 0's chunks as written (for each of its two chunks
 * along z, store by store, each store's tiles in order): each region's
 * pure tiles, then the mixed tiles it owns (tile_owner), side by side in
 * the file for the large majority, so that a cold read of a region takes
 * them in one stretch. Then the corner tile's chunks as HDF5 holds them:
 * its cells past the grid's edge, and its level past z's end, the fill
 * value. */
static void check_f5_chunks(const char *path, const size_t *stile,
                            const size_t *first, size_t nregions)
{
    int32_t *mask = make_mask();
    size_t cells[5] = {0};
    for (size_t i = 0; i < PLANE; i++)
        cells[mask[i]]++;
    assert_int_equal(nregions, 4);
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t did = H5Dopen2(fid, "/v", H5P_DEFAULT);
    assert_true(did >= 0);
    hid_t dcpl = H5Dget_create_plist(did);
    hsize_t ck[4];
    assert_int_equal(H5Pget_chunk(dcpl, 4, ck), 4);
    assert_true(ck[0] == 1 && ck[1] == 2 && ck[2] == F5_TH && ck[3] == F5_TW);
    H5Pclose(dcpl);
    size_t pairs = 0, adjacent = 0, owned = 0;
    for (hsize_t z = 0; z < NZ; z += 2)
        for (size_t r = 0; r < nregions; r++) {
            /* region r's pure store, then the mixed store's tiles it owns */
            haddr_t prev_end = HADDR_UNDEF;
            for (size_t s = r; s <= nregions; s += nregions - r) {
                for (size_t k = first[s]; k < first[s + 1]; k++) {
                    size_t t = stile[k], ty = t / F5_NTX, tx = t % F5_NTX;
                    int own = tile_owner(mask, cells, ty, tx);
                    assert_true((own < 0) == (s < nregions));
                    if (s == nregions && own != (int)r)
                        continue;
                    owned += s == nregions;
                    hsize_t off[4] = {0, z, ty * F5_TH, tx * F5_TW}, size;
                    unsigned fmask;
                    haddr_t addr;
                    assert_true(H5Dget_chunk_info_by_coord(
                                    did, off, &fmask, &addr, &size) >= 0);
                    assert_true(addr != HADDR_UNDEF);
                    assert_int_equal(size, F5_CHUNK_CELLS * sizeof(double));
                    pairs += prev_end != HADDR_UNDEF;
                    adjacent += addr == prev_end;
                    prev_end = addr + size;
                }
                if (s == nregions)
                    break;
            }
        }
    print_message("format 5 chunks: %zu of %zu tiles after the one before "
                  "in their region's stretch (%zu mixed ones)\n",
                  adjacent, pairs, owned);
    size_t nmixed = first[nregions + 1] - first[nregions];
    assert_true(pairs > 100 && nmixed > 0);
    assert_int_equal(owned, nmixed * ((NZ + 1) / 2));
    assert_true(adjacent >= pairs * 9 / 10);
    free(mask);
    /* the corner tile: 18 of its 50 rows, 16 of its 48 columns */
    double *chunk = malloc(F5_CHUNK_CELLS * sizeof *chunk);
    assert_non_null(chunk);
    size_t y0 = (F5_NTY - 1) * F5_TH, x0 = (F5_NTX - 1) * F5_TW;
    for (hsize_t z0 = 0; z0 < NZ; z0 += 2) {
        hsize_t off[4] = {0, z0, y0, x0};
        uint32_t filters = 0;
        assert_true(H5Dread_chunk(did, H5P_DEFAULT, off, &filters, chunk) >=
                    0);
        for (size_t z = 0; z < 2; z++)
            for (size_t y = 0; y < F5_TH; y++)
                for (size_t x = 0; x < F5_TW; x++) {
                    int in = z0 + z < NZ && y0 + y < NY && x0 + x < NX;
                    double want = in ? value(1, 0, z0 + z, y0 + y, x0 + x)
                                     : fillv;
                    double got = chunk[(z * F5_TH + y) * F5_TW + x];
                    if (got != want)
                        fail_msg("corner chunk (z %llu) cell %zu %zu %zu: "
                                 "%g, not %g", (unsigned long long)z0, z, y,
                                 x, got, want);
                }
    }
    free(chunk);
    H5Dclose(did);
    H5Fclose(fid);
}

/* Format 5: whole tiles go straight to the variable's chunks (every tile
 * of a whole-record write, whatever their size), tiles covered in part
 * through netCDF; the values read back as the plain file's through raster
 * and through netCDF, in the open file and reopened; record 0's chunks lie
 * store by store. */
static void scenario_format5(int threads)
{
    RS(raster_set_threads(threads));
    pair p;
    char tag[32];
    snprintf(tag, sizeof tag, "format5_%d", threads);
    pair_create_as(&p, tag, 5, f5_chunk);
    assert_int_equal(p.rv->format, 5);
    const size_t whole = (size_t)F5_NTY * F5_NTX; /* tiles of a record */

    /* record 0 whole: each tile's two chunks along z */
    size_t s0[4] = {0, 0, 0, 0}, c0[4] = {1, NZ, NY, NX};
    assert_int_equal(put_both(&p, 1, s0, c0), 2 * whole);
    /* record 1: level 0 of a box through netCDF (not aligned to the
     * chunks' two levels: their halves cached), then the whole record
     * direct: no stale cached chunk may survive */
    size_t s1[4] = {1, 0, 10, 5}, c1[4] = {1, 1, 190, 900};
    assert_int_equal(put_both(&p, 2, s1, c1), 0);
    size_t s1w[4] = {1, 0, 0, 0};
    assert_int_equal(put_both(&p, 3, s1w, c0), 2 * whole);
    /* a box of record 1, every level: its whole tiles direct, the tiles
     * it cuts through netCDF */
    size_t s1b[4] = {1, 0, 10, 5}, c1b[4] = {1, NZ, 190, 900};
    size_t inside = tiles_inside(10, 190, 5, 900);
    assert_true(inside > 0 && inside < whole);
    assert_int_equal(put_both(&p, 4, s1b, c1b), 2 * inside);
    /* record 3, levels 0-1: extends over record 2 (fill) */
    size_t s3[4] = {3, 0, 0, 0}, c3[4] = {1, 2, NY, NX};
    assert_int_equal(put_both(&p, 5, s3, c3), whole);
    /* record 4, levels 1-2: not aligned to the chunks (netCDF) */
    size_t s4[4] = {4, 1, 0, 0}, c4[4] = {1, 2, NY, NX};
    assert_int_equal(put_both(&p, 6, s4, c4), 0);
    /* record 4, level 2: the edge chunks along z, their second level past
     * z's end */
    size_t s4e[4] = {4, 2, 0, 0}, c4e[4] = {1, 1, NY, NX};
    assert_int_equal(put_both(&p, 7, s4e, c4e), whole);
    /* records 5 and 6 in one call, the grid's lower right part (edge
     * tiles) */
    size_t s5[4] = {5, 0, 300, 500}, c5[4] = {2, NZ, NY - 300, NX - 500};
    assert_int_equal(put_both(&p, 8, s5, c5),
                     2 * 2 * tiles_inside(300, NY - 300, 500, NX - 500));
    /* then a partial write into a chunk written directly */
    size_t s6[4] = {4, 2, 100, 100}, c6[4] = {1, 1, 3, 400};
    assert_int_equal(put_both(&p, 9, s6, c6), 0);
    compare(p.rv, p.pid, p.pvar);
    int rid = raster_file_ncid(p.rf), rvar;
    NC(nc_inq_varid(rid, "v", &rvar));
    compare_plain(rid, rvar, p.pid, p.pvar, "the open file through netCDF");

    /* the tiles of each store, for the chunks' order */
    raster_var *v = p.rv;
    size_t ns = v->nregions + 1, nt = v->stile_first[ns];
    size_t *stile = malloc(nt * sizeof *stile);
    size_t *first = malloc((ns + 1) * sizeof *first);
    assert_true(stile && first);
    memcpy(stile, v->stile, nt * sizeof *stile);
    memcpy(first, v->stile_first, (ns + 1) * sizeof *first);
    assert_int_equal(nt, whole);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    check_f5_chunks(p.rpath, stile, first, ns - 1);
    free(stile);
    free(first);

    /* reopened: raster's reads (the variable's chunks by pread) and plain
     * netCDF's of the variable itself */
    reopen_compared(&p);
    RS(raster_var_check(p.rv));
    NC(nc_open(p.rpath, NC_NOWRITE, &rid));
    NC(nc_inq_varid(rid, "v", &rvar));
    compare_plain(rid, rvar, p.pid, p.pvar, "reopened through netCDF");
    NC(nc_close(rid));
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
    RS(raster_set_threads(0));
}

static void test_direct_format5(void **state)
{
    (void)state;
    scenario_format5(1);
    scenario_format5(2);
}

/* Format 5 with failed allocations anywhere in a direct write: an error
 * with a message and nothing leaked; then the write succeeds, direct, and
 * reads back right. */
static void test_direct_format5_alloc_failures(void **state)
{
    (void)state;
    for (int threads = 1; threads <= 2; threads++) {
        RS(raster_set_threads(threads));
        pair p;
        pair_create_as(&p, threads == 1 ? "f5alloc1" : "f5alloc2", 5,
                       f5_chunk);
        size_t s[4] = {0, 0, 0, 0}, c[4] = {1, NZ, NY, NX};
        double *buf = malloc(RECORD * sizeof *buf);
        assert_non_null(buf);
        for (size_t i = 0; i < RECORD; i++)
            buf[i] = value(7, 0, 0, 0, 0) + (double)i;
        RS(raster_var_put(p.rv, s, c, NULL, buf)); /* materialized */
        int failed = 0;
        size_t before = direct_chunks_written();
        for (unsigned long n = 1; n < 200; n++) {
            raster_errmsg_clear();
            raster_alloc_fail_at(n);
            int rc = raster_var_put(p.rv, s, c, NULL, buf);
            raster_alloc_fail_at(0);
            if (rc == RASTER_OK)
                break;
            assert_int_equal(rc, RASTER_ENOMEM);
            assert_true(raster_errmsg()[0] != '\0');
            failed++;
        }
        assert_true(failed > 0);
        assert_true(direct_chunks_written() > before);
        NC(nc_put_vara_double(p.pid, p.pvar, s, c, buf));
        compare(p.rv, p.pid, p.pvar);
        free(buf);
        RS(raster_close(p.rf));
        NC(nc_close(p.pid));
        unlink(p.rpath);
        unlink(p.ppath);
    }
    RS(raster_set_threads(0));
}

/* ---- format 5: small writes as parts of the variable's tiles ---------- */

/* Row y of record t, level z, columns [x0, x1), written to both files in
 * pieces of 160 values, the first `first` long (so that pieces start
 * anywhere in a tile); returns the calls made. */
static size_t row_pieces(pair *p, int tag, size_t t, size_t z, size_t y,
                         size_t x0, size_t x1, size_t first)
{
    size_t calls = 0;
    for (size_t x = x0; x < x1; calls++) {
        size_t w = x == x0 ? first : 160;
        w = w < x1 - x ? w : x1 - x;
        size_t s[4] = {t, z, y, x}, c[4] = {1, 1, 1, w};
        put_both(p, tag, s, c);
        x += w;
    }
    return calls;
}

/* The small writes since `before` that went straight to HDF5 are at least
 * `want` (all but those netCDF had to make: the variable's first write,
 * or one past its records). */
static void straight_at_least(size_t before, size_t want, const char *what)
{
    size_t got = chunkio_small_writes() - before;
    if (got < want)
        fail_msg("%s: %zu small writes went straight, not %zu", what, got,
                 want);
}

/* The corner tile's chunk (levels 0 and 1 of record 0) as HDF5 holds it:
 * its cells past the grid's edge never written, the fill value. */
static void corner_padding_fill(const char *path)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t did = H5Dopen2(fid, "/v", H5P_DEFAULT);
    assert_true(did >= 0);
    double *chunk = malloc(F5_CHUNK_CELLS * sizeof *chunk);
    assert_non_null(chunk);
    size_t y0 = (F5_NTY - 1) * F5_TH, x0 = (F5_NTX - 1) * F5_TW;
    hsize_t off[4] = {0, 0, y0, x0};
    uint32_t filters = 0;
    assert_true(H5Dread_chunk(did, H5P_DEFAULT, off, &filters, chunk) >= 0);
    size_t inside = 0;
    for (size_t z = 0; z < 2; z++)
        for (size_t y = 0; y < F5_TH; y++)
            for (size_t x = 0; x < F5_TW; x++) {
                double got = chunk[(z * F5_TH + y) * F5_TW + x];
                if (y0 + y < NY && x0 + x < NX)
                    inside += got != fillv;
                else if (got != fillv)
                    fail_msg("corner chunk: padding cell %zu %zu %zu holds "
                             "%g", z, y, x, got);
            }
    assert_true(inside > 0); /* the small writes reached this tile */
    free(chunk);
    H5Dclose(did);
    H5Fclose(fid);
}

/* The statistics the reopened raster file keeps of every region and
 * record (t, z) are those of the plain file's values: count, sum (exact:
 * the values are quarters below 2^30, their sums below 2^53), min, max;
 * none stale. */
static void stats_compared(pair *p)
{
    static const int32_t ids[4] = {1, 2, 3, 4};
    int32_t *mask = make_mask();
    double *b = malloc(PLANE * sizeof *b);
    assert_non_null(b);
    int dim;
    size_t nt;
    NC(nc_inq_dimid(p->pid, "time", &dim));
    NC(nc_inq_dimlen(p->pid, dim, &nt));
    for (size_t r = 0; r < 4; r++) {
        size_t fresh = 0, stale = 0;
        RS(raster_var_stats_info(p->rv, ids[r], NULL, &fresh, &stale));
        assert_int_equal(stale, 0);
        assert_true(fresh > 0);
    }
    for (size_t t = 0; t < nt; t++)
        for (size_t z = 0; z < NZ; z++) {
            size_t s[4] = {t, z, 0, 0}, c[4] = {1, 1, NY, NX};
            NC(nc_get_vara_double(p->pid, p->pvar, s, c, b));
            for (size_t r = 0; r < 4; r++) {
                uint64_t n = 0;
                double sum = 0, lo = 0, hi = 0;
                for (size_t i = 0; i < PLANE; i++) {
                    if (mask[i] != ids[r] || b[i] == fillv)
                        continue;
                    lo = n == 0 || b[i] < lo ? b[i] : lo;
                    hi = n == 0 || b[i] > hi ? b[i] : hi;
                    sum += b[i];
                    n++;
                }
                raster_stats st;
                RS(raster_region_statistics(p->rv, &ids[r], 1, s, c, NULL,
                                            &st));
                if (st.count != n || st.sum != sum ||
                    (n && (st.min != lo || st.max != hi)))
                    fail_msg("record %zu level %zu region %d: kept count "
                             "%llu sum %.17g min %g max %g, the values' "
                             "%llu %.17g %g %g", t, z, (int)ids[r],
                             (unsigned long long)st.count, st.sum, st.min,
                             st.max, (unsigned long long)n, sum, lo, hi);
            }
        }
    free(b);
    free(mask);
}

/* Format 5's small writes (writeback.c): rows cut in pieces of 160 values
 * at any column, as an I/O layer writes, go to the variable's own dataset
 * as parts of its tiles (edge tiles and the chunks' edge along z
 * included), held back when of one plane, else written at once; the first
 * write and the first past the variable's records go through netCDF. The
 * raster file then reads exactly as the plain one, element by element,
 * through raster and through netCDF, with the writes held back read first
 * and flushed at raster_close; the statistics it keeps are the values'. */
static void test_small_writes_format5(void **state)
{
    (void)state;
    pair p;
    pair_create_as(&p, "small5", 5, f5_chunk);
    assert_int_equal(p.rv->format, 5);
    /* record 0, level 0: the top rows and the bottom edge tiles' rows; the
     * first call extends the variable through netCDF, the rest are held */
    size_t before = chunkio_small_writes(), calls = 0;
    for (size_t y = 0; y < NY; y = y == 59 ? NY - 28 : y + 1)
        calls += row_pieces(&p, 1, 0, 0, y, 0, NX, y * 37 % 160 + 1);
    /* rows of one start and ragged ends, and every other row: parts of
     * a tile that are not one rectangle */
    for (size_t y = 300; y < 340; y++)
        calls += row_pieces(&p, 1, 0, 0, y, 96, 106 + y % 4 * 9, 160);
    for (size_t y = 400; y < 440; y += 2)
        calls += row_pieces(&p, 1, 0, 0, y, 100, 300, 70);
    straight_at_least(before, calls - 1, "record 0, level 0");
    assert_non_null(p.rv->pend);
    /* a read of held-back cells writes them first */
    double a[3 * 500], b[3 * 500];
    size_t rs[4] = {0, 0, 30, 333}, rc[4] = {1, 1, 3, 500};
    RS(raster_var_get(p.rv, rs, rc, NULL, a));
    assert_null(p.rv->pend);
    NC(nc_get_vara_double(p.pid, p.pvar, rs, rc, b));
    for (size_t i = 0; i < 3 * 500; i++)
        if (a[i] != b[i])
            fail_msg("held-back cell %zu read %g, not %g", i, a[i], b[i]);
    /* level 1, every row: more than the 4 MiB held at once (a flush while
     * writing); then cells written twice, held back, keep the later
     * values in either order */
    before = chunkio_small_writes();
    calls = 0;
    for (size_t y = 0; y < NY; y++)
        calls += row_pieces(&p, 2 + (int)(y % 3), 0, 1, y, 0, NX,
                            (y * 53 + 7) % 160 + 1);
    for (int pass = 0; pass < 2; pass++) {
        size_t s[4] = {0, 1, 100 + (size_t)pass, pass ? 0 : 40},
               c[4] = {1, 1, 1, 120};
        put_both(&p, 5 + pass, s, c);
        put_both(&p, 7 + pass, pass ? (size_t[4]){0, 1, 100, 10}
                                    : (size_t[4]){0, 1, 101, 30},
                 c);
        calls += 2;
    }
    straight_at_least(before, calls, "record 0, level 1");
    /* level 2 (the chunks' edge along z): three columns down every row in
     * the right edge tiles, and two across a tile edge (columns 47 | 48) */
    before = chunkio_small_writes();
    calls = 0;
    for (size_t y = 0; y < NY; y++, calls += 2) {
        size_t s[4] = {0, 2, y, NX - 9}, c[4] = {1, 1, 1, 3};
        put_both(&p, 9, s, c);
        size_t s2[4] = {0, 2, y, 47}, c2[4] = {1, 1, 1, 2};
        put_both(&p, 10, s2, c2);
    }
    straight_at_least(before, calls, "record 0, level 2");
    /* every level of a small box at once (not held back) */
    before = chunkio_small_writes();
    size_t bs[4] = {0, 0, 740, 990}, bc[4] = {1, NZ, 4, 130};
    put_both(&p, 11, bs, bc);
    straight_at_least(before, 1, "a box of three levels");
    assert_null(p.rv->pend);
    /* record 2 (record 1 left as fill): the first write extends the
     * variable through netCDF, the others are held */
    before = chunkio_small_writes();
    calls = 0;
    for (size_t y = 10; y < 20; y++)
        calls += row_pieces(&p, 12, 2, 0, y, 500, NX, y % 7 + 1);
    straight_at_least(before, calls - 1, "record 2");
    compare(p.rv, p.pid, p.pvar);
    RS(raster_flush(p.rf));
    int rid = raster_file_ncid(p.rf), rvar;
    NC(nc_inq_varid(rid, "v", &rvar));
    compare_plain(rid, rvar, p.pid, p.pvar, "small writes through netCDF");
    /* held back at raster_close */
    for (size_t y = 760; y < NY; y++)
        row_pieces(&p, 13, 2, 1, y, 0, NX, 160);
    assert_non_null(p.rv->pend);
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    corner_padding_fill(p.rpath);
    reopen_compared(&p);
    stats_compared(&p);
    NC(nc_open(p.rpath, NC_NOWRITE, &rid));
    NC(nc_inq_varid(rid, "v", &rvar));
    compare_plain(rid, rvar, p.pid, p.pvar, "reopened through netCDF");
    NC(nc_close(rid));
    RS(raster_close(p.rf));
    NC(nc_close(p.pid));
    unlink(p.rpath);
    unlink(p.ppath);
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_create("direct");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_one_thread),
        cmocka_unit_test(test_direct_two_threads),
        cmocka_unit_test(test_direct_alloc_failures),
        cmocka_unit_test(test_direct_file_limit),
        cmocka_unit_test(test_direct_records_side_by_side),
        cmocka_unit_test(test_direct_reserve),
        cmocka_unit_test(test_direct_region_stretch),
        cmocka_unit_test(test_small_writes),
        cmocka_unit_test(test_strided_bands),
        cmocka_unit_test(test_threaded_bands),
        cmocka_unit_test(test_direct_format5),
        cmocka_unit_test(test_direct_format5_alloc_failures),
        cmocka_unit_test(test_small_writes_format5),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_remove);
}
