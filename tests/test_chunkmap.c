/*
 * test_chunkmap.c - chunkmap_read against HDF5's own per-chunk answers.
 *
 * A netCDF-4 variable shaped like a store (records x cells, chunked one
 * record by a part of the cells) is written with holes, in more chunks
 * than one B-tree node holds, so the walk descends through inner nodes.
 * Every chunk's offset from the walk must equal H5Dget_chunk_info_by_coord's,
 * and a walk that cannot be trusted (another chunk shape, a filtered
 * dataset, another file's bytes) must say so and leave the table alone.
 */
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "chunkmap.h"

#define NREC 150
#define NCELLS 400
#define CKC 100
#define NCKC (NCELLS / CKC)
#define TOTAL (NREC * NCKC)

/* Chunk (t, c) is left unwritten for these: holes inside the index
 * (none when holes_off: every slot written, the walk's own count is
 * trusted without HDF5's). */
static int holes_off;
static int hole(size_t t, size_t c)
{
    return !holes_off && t % 7 == 3 && c == 2;
}

/* Writes v(time, cells) chunk by chunk; deflate when `filtered`. */
static void make_file(const char *path, int filtered)
{
    int ncid, dims[2], varid;
    NC(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]));
    NC(nc_def_dim(ncid, "cells", NCELLS, &dims[1]));
    NC(nc_def_var(ncid, "v", NC_FLOAT, 2, dims, &varid));
    size_t chunk[2] = {1, CKC};
    NC(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunk));
    NC(nc_def_var_fill(ncid, varid, NC_NOFILL, NULL));
    if (filtered)
        NC(nc_def_var_deflate(ncid, varid, 0, 1, 1));
    NC(nc_enddef(ncid));
    float buf[CKC];
    for (size_t t = 0; t < NREC; t++)
        for (size_t c = 0; c < NCKC; c++) {
            if (hole(t, c))
                continue;
            for (size_t i = 0; i < CKC; i++)
                buf[i] = (float)(t * NCELLS + c * CKC + i);
            size_t start[2] = {t, c * CKC}, count[2] = {1, CKC};
            NC(nc_put_vara_float(ncid, varid, start, count, buf));
        }
    NC(nc_close(ncid));
}

typedef struct opened {
    hid_t fid, did;
    int fd;
} opened;

static opened open_var(const char *path)
{
    opened o;
    o.fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(o.fid >= 0);
    o.did = H5Dopen2(o.fid, "v", H5P_DEFAULT);
    assert_true(o.did >= 0);
    o.fd = open(path, O_RDONLY);
    assert_true(o.fd >= 0);
    return o;
}

static void close_var(opened *o)
{
    H5Dclose(o->did);
    H5Fclose(o->fid);
    close(o->fd);
}

static const size_t ck[2] = {1, CKC}, nck[2] = {NREC, NCKC};

static void walk_matches_hdf5(void)
{
    char path[512];
    tmpdir_path(path, sizeof path, "walk.nc");
    make_file(path, 0);
    opened o = open_var(path);
    int64_t *addr = malloc(TOTAL * sizeof *addr);
    assert_non_null(addr);
    assert_int_equal(chunkmap_read(o.fd, o.did, 1, ck, nck, sizeof(float),
                                   addr, TOTAL),
                     1);
    size_t holes = 0;
    for (size_t t = 0; t < NREC; t++)
        for (size_t c = 0; c < NCKC; c++) {
            hsize_t off[2] = {t, c * CKC};
            haddr_t a = HADDR_UNDEF;
            hsize_t size = 0;
            unsigned mask = 0;
            assert_true(H5Dget_chunk_info_by_coord(o.did, off, &mask, &a,
                                                   &size) >= 0);
            int64_t want = a == HADDR_UNDEF ? -1 : (int64_t)a;
            assert_int_equal(addr[t * NCKC + c], want);
            assert_int_equal(want == -1, hole(t, c));
            holes += want == -1;
            /* and the bytes there are the chunk's values */
            if (want >= 0) {
                float first;
                assert_int_equal(pread(o.fd, &first, sizeof first, want),
                                 (ssize_t)sizeof first);
                assert_true(first == (float)(t * NCELLS + c * CKC));
            }
        }
    assert_int_equal(holes, holes_off ? 0 : (NREC + 3) / 7);
    free(addr);
    close_var(&o);
}

static void test_walk_matches_hdf5(void **state)
{
    (void)state;
    walk_matches_hdf5();
}

static void test_walk_whole_store(void **state)
{
    (void)state;
    holes_off = 1;
    walk_matches_hdf5();
    holes_off = 0;
}

/* A walk that is refused leaves addr untouched. */
static void expect_refused(const opened *o, const size_t *k,
                           const size_t *n, size_t total)
{
    int64_t *addr = malloc(total * sizeof *addr);
    assert_non_null(addr);
    for (size_t i = 0; i < total; i++)
        addr[i] = 77;
    assert_int_equal(chunkmap_read(o->fd, o->did, 1, k, n, sizeof(float),
                                   addr, total),
                     0);
    for (size_t i = 0; i < total; i++)
        assert_int_equal(addr[i], 77);
    free(addr);
}

static void test_refuses_what_it_cannot_trust(void **state)
{
    (void)state;
    char path[512], other[512];
    tmpdir_path(path, sizeof path, "refuse.nc");
    tmpdir_path(other, sizeof other, "filtered.nc");
    make_file(path, 0);
    make_file(other, 1);

    opened o = open_var(path);
    /* a chunk shape the dataset does not have */
    size_t k2[2] = {1, CKC / 2}, n2[2] = {NREC, 2 * NCKC};
    expect_refused(&o, k2, n2, NREC * 2 * NCKC);
    /* the element size is part of the layout */
    int64_t one[TOTAL];
    assert_int_equal(chunkmap_read(o.fd, o.did, 1, ck, nck, 8, one, TOTAL),
                     0);
    /* another file's bytes at the object header's address */
    int fd = o.fd;
    o.fd = open("/dev/zero", O_RDONLY);
    assert_true(o.fd >= 0);
    expect_refused(&o, ck, nck, TOTAL);
    close(o.fd);
    o.fd = fd;
    close_var(&o);

    /* compressed chunks are not plain bytes */
    opened f = open_var(other);
    expect_refused(&f, ck, nck, TOTAL);
    close_var(&f);
}

/* The same variable written by HDF5 alone: the superblock's version
 * (0 by default, 2 with 1.8's format) and a user block decide where
 * chunkmap finds the sizes of addresses and lengths. */
static void make_h5(const char *path, int latest, hsize_t userblock)
{
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
    assert_true(fcpl >= 0 && fapl >= 0);
    if (userblock)
        assert_true(H5Pset_userblock(fcpl, userblock) >= 0);
    /* 1.8's format: superblock version 2, still the version-1 B-tree
     * (later formats index chunks otherwise, which chunkmap declines) */
    if (latest)
        assert_true(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18,
                                         H5F_LIBVER_V18) >= 0);
    hid_t fid = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    assert_true(fid >= 0);
    hsize_t dims[2] = {NREC, NCELLS}, chunk[2] = {1, CKC};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(H5Pset_chunk(dcpl, 2, chunk) >= 0);
    hid_t did = H5Dcreate2(fid, "v", H5T_NATIVE_FLOAT, space, H5P_DEFAULT,
                           dcpl, H5P_DEFAULT);
    assert_true(did >= 0);
    float *buf = malloc(NREC * NCELLS * sizeof *buf);
    assert_non_null(buf);
    for (size_t i = 0; i < NREC * NCELLS; i++)
        buf[i] = (float)i;
    assert_true(H5Dwrite(did, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL,
                         H5P_DEFAULT, buf) >= 0);
    free(buf);
    H5Dclose(did);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(fid);
    H5Pclose(fcpl);
    H5Pclose(fapl);
}

static void test_superblock_versions(void **state)
{
    (void)state;
    char path[512];
    tmpdir_path(path, sizeof path, "plain.h5");
    for (int latest = 1; latest >= 0; latest--) {
        make_h5(path, latest, 0);
        opened o = open_var(path);
        unsigned char sb[9];
        assert_int_equal(pread(o.fd, sb, sizeof sb, 0), (ssize_t)sizeof sb);
        /* the versions this test means to cover */
        assert_true(latest ? sb[8] >= 2 : sb[8] == 0);
        int64_t *addr = malloc(TOTAL * sizeof *addr);
        assert_non_null(addr);
        assert_int_equal(chunkmap_read(o.fd, o.did, 1, ck, nck,
                                       sizeof(float), addr, TOTAL),
                         1);
        for (size_t t = 0; t < NREC; t++)
            for (size_t c = 0; c < NCKC; c++) {
                hsize_t off[2] = {t, c * CKC}, size = 0;
                haddr_t a = HADDR_UNDEF;
                unsigned mask = 0;
                assert_true(H5Dget_chunk_info_by_coord(o.did, off, &mask, &a,
                                                       &size) >= 0);
                assert_int_equal(addr[t * NCKC + c], (int64_t)a);
            }
        free(addr);
        close_var(&o);
    }
    /* a user block: addresses are not file offsets, the walk declines */
    make_h5(path, 0, 512);
    opened u = open_var(path);
    expect_refused(&u, ck, nck, TOTAL);
    close_var(&u);
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_create("chunkmap");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_matches_hdf5),
        cmocka_unit_test(test_walk_whole_store),
        cmocka_unit_test(test_refuses_what_it_cannot_trust),
        cmocka_unit_test(test_superblock_versions),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_remove);
}
