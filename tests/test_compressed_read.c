/*
 * test_compressed_read.c - stores HDF5 keeps deflated (shuffled,
 * checksummed) read by raster's own inflater (chunkio.c, unfilter.c)
 * give exactly the values written.
 *
 * A raster variable (time unlimited, z, y, x) is defined, and before any
 * data is written every store gets deflate (level 1 or 9, with or without
 * shuffle, with or without fletcher32) straight through netCDF. Known
 * values are written, the file is closed and opened read-only (lean, and
 * through netCDF with RASTER_NO_LEAN), and region reads (packed, bbox,
 * full; several region sets and outer boxes) and hyperslab reads are
 * compared value by value with what was written. chunkio_chunks_inflated()
 * proves the fast path served them; chunkio_set_inflate(0) gives the
 * netCDF path, which must agree. A chunk with bytes flipped in the file
 * (its deflate stream, its checksum) makes the read fail with
 * RASTER_EFORMAT, never wrong data.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

#include "chunkio.h"
#include "fileio.h"
#include "unfilter.h"
#include "var.h"

#define NT 4
#define NZ 2
#define NY 120
#define NX 150
#define PLANE ((size_t)NY * NX)
#define NREG 4

typedef struct ccase {
    const char *tag;
    int xtype, level, shuffle, fletcher;
    size_t chunk[4]; /* raster_def_var's base chunk shape */
    unsigned other;  /* 4: szip instead, a filter raster leaves to netCDF */
} ccase;

static const ccase cases[] = {
    {"f1s", NC_FLOAT, 1, 1, 0, {1, 1, 20, 25}, 0},
    {"d9k", NC_DOUBLE, 9, 0, 1, {1, 1, 16, 30}, 0},
    {"s1sk", NC_SHORT, 1, 1, 1, {2, 1, 20, 25}, 0},  /* two records a chunk */
    {"i9s", NC_INT, 9, 1, 0, {1, 2, 24, 24}, 0},     /* both levels a chunk */
    /* netCDF applies fletcher32, shuffle, deflate in that order: the
     * checksum is shuffled with the values, 4 bytes past the last whole
     * double left in place */
    {"d1sk", NC_DOUBLE, 1, 1, 1, {1, 1, 30, 30}, 0},
    /* shuffle last to undo: unshuffled straight into the caller's buffer,
     * 8 bytes a value (the SSE2 path) */
    {"d4s", NC_DOUBLE, 4, 1, 0, {1, 1, 20, 25}, 0},
};

static int32_t mask_at(size_t y, size_t x)
{
    if ((x + 3 * y) % 211 == 0)
        return 4; /* a thin diagonal: mixed tiles */
    return y < 50 ? (x < 90 ? 1 : 2) : (x < 40 ? 2 : 3);
}

/* The value written at (t, z, y, x), exact in every type tested. */
static double value(size_t t, size_t z, size_t y, size_t x)
{
    return (double)((t * NZ + z) * 100 + (y * 7 + x) % 97) - 50;
}

static double as_double(const void *buf, int xtype, size_t i)
{
    switch (xtype) {
    case NC_FLOAT: return ((const float *)buf)[i];
    case NC_DOUBLE: return ((const double *)buf)[i];
    case NC_SHORT: return ((const short *)buf)[i];
    default: return ((const int *)buf)[i];
    }
}

static void put_value(void *buf, int xtype, size_t i, double d)
{
    switch (xtype) {
    case NC_FLOAT: ((float *)buf)[i] = (float)d; break;
    case NC_DOUBLE: ((double *)buf)[i] = d; break;
    case NC_SHORT: ((short *)buf)[i] = (short)d; break;
    default: ((int *)buf)[i] = (int)d; break;
    }
}

static const double fillv = -999;

static void file_path(const ccase *c, char *buf, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "%s.nc", c->tag);
    tmpdir_path(buf, len, name);
}

/* Writes the case's file: its stores deflated, every value written. */
static void write_case(const ccase *c)
{
    char path[600];
    file_path(c, path, sizeof path);
    int32_t *m = malloc(PLANE * sizeof *m);
    assert_non_null(m);
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            m[y * NX + x] = mask_at(y, x);
    raster_mask *mask;
    RS(raster_mask_wrap(m, NY, NX, &mask));
    free(m);
    raster_file *rf;
    raster_var *rv;
    RS(raster_create(path, &rf));
    int ncid = raster_file_ncid(rf), d[4];
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(ncid, "z", NZ, &d[1]));
    NC(nc_def_dim(ncid, "y", NY, &d[2]));
    NC(nc_def_dim(ncid, "x", NX, &d[3]));
    RS(raster_def_var(rf, ncid, "v", c->xtype, 4, d, c->chunk, mask, &rv));
    raster_mask_free(mask);
    unsigned char fill[8];
    put_value(fill, c->xtype, 0, fillv);
    RS(raster_var_put_att(rv, "_FillValue", c->xtype, 1, fill));
    /* still in define mode: each store deflated as netCDF would */
    for (size_t s = 0; s <= rv->nregions; s++) {
        int g = rv->store_grp[s], id = rv->store_var[s], storage;
        if (id < 0)
            continue;
        size_t ck[4];
        NC(nc_inq_var_chunking(g, id, &storage, ck));
        assert_int_equal(storage, NC_CHUNKED);
        NC(nc_def_var_chunking(g, id, NC_CHUNKED, ck));
        if (c->other == 4) /* szip, which netCDF takes only alone */
            NC(nc_def_var_szip(g, id, 32, 16));
        else
            NC(nc_def_var_deflate(g, id, c->shuffle, 1, c->level));
        if (c->fletcher)
            NC(nc_def_var_fletcher32(g, id, NC_FLETCHER32));
    }
    size_t n = NT * NZ * PLANE, k = 0;
    unsigned char *buf = malloc(n * type_size(c->xtype));
    assert_non_null(buf);
    for (size_t t = 0; t < NT; t++)
        for (size_t z = 0; z < NZ; z++)
            for (size_t y = 0; y < NY; y++)
                for (size_t x = 0; x < NX; x++)
                    put_value(buf, c->xtype, k++, value(t, z, y, x));
    size_t start[4] = {0, 0, 0, 0}, count[4] = {NT, NZ, NY, NX};
    RS(raster_var_put(rv, start, count, NULL, buf));
    free(buf);
    RS(raster_close(rf));
}

/* Region reads of ids over the outer box in every layout, against the
 * values written. */
static void check_regions(raster_var *rv, int xtype, const int32_t *ids,
                          size_t nids, const size_t *ostart,
                          const size_t *ocount)
{
    int in[NREG + 1] = {0};
    for (size_t i = 0; i < nids; i++)
        in[ids[i]] = 1;
    size_t box[4];
    RS(raster_region_bbox(rv, ids, nids, box));
    for (int layout = RASTER_LAYOUT_PACKED; layout <= RASTER_LAYOUT_FULL;
         layout++) {
        size_t cells;
        RS(raster_region_size(rv, ids, nids, layout, &cells));
        unsigned char *buf = malloc(cells * ocount[0] * ocount[1] *
                                    type_size(xtype));
        assert_non_null(buf);
        RS(raster_region_read(rv, ids, nids, ostart, ocount, layout, buf));
        size_t k = 0;
        for (size_t t = ostart[0]; t < ostart[0] + ocount[0]; t++)
            for (size_t z = ostart[1]; z < ostart[1] + ocount[1]; z++) {
                size_t y0 = layout == RASTER_LAYOUT_BBOX ? box[0] : 0;
                size_t y1 = layout == RASTER_LAYOUT_BBOX ? box[2] : NY;
                size_t x0 = layout == RASTER_LAYOUT_BBOX ? box[1] : 0;
                size_t x1 = layout == RASTER_LAYOUT_BBOX ? box[3] : NX;
                size_t got = 0;
                for (size_t y = y0; y < y1; y++)
                    for (size_t x = x0; x < x1; x++) {
                        int mine = in[mask_at(y, x)];
                        if (layout == RASTER_LAYOUT_PACKED && !mine)
                            continue;
                        double want = mine ? value(t, z, y, x) : fillv;
                        double have = as_double(buf, xtype, k++);
                        got++;
                        if (have != want)
                            fail_msg("layout %d t %zu z %zu (%zu, %zu): "
                                     "read %g, wrote %g", layout, t, z, y,
                                     x, have, want);
                    }
                assert_int_equal(got, cells);
            }
        free(buf);
    }
}

/* Hyperslab reads against the values written. */
static void check_hyperslabs(raster_var *rv, int xtype)
{
    static const size_t boxes[][8] = {
        {0, 0, 0, 0, NT, NZ, NY, NX},  /* everything */
        {1, 1, 33, 17, 2, 1, 40, 101}, /* across regions and chunks */
        {3, 0, 119, 0, 1, 2, 1, NX},   /* the last row */
        {2, 1, 0, 88, 1, 1, NY, 3},    /* a thin column band */
        {0, 0, 0, NX - 1, NT, NZ, NY, 1}, /* the last column: strided */
        {0, 0, 0, NX - 1, NT, NZ, NY, 1}, /* pieces, again from the memo */
    };
    for (size_t b = 0; b < sizeof boxes / sizeof boxes[0]; b++) {
        const size_t *start = boxes[b], *count = boxes[b] + 4;
        size_t n = count[0] * count[1] * count[2] * count[3], k = 0;
        unsigned char *buf = malloc(n * type_size(xtype));
        assert_non_null(buf);
        RS(raster_var_get(rv, start, count, NULL, buf));
        for (size_t t = 0; t < count[0]; t++)
            for (size_t z = 0; z < count[1]; z++)
                for (size_t y = 0; y < count[2]; y++)
                    for (size_t x = 0; x < count[3]; x++) {
                        double want = value(start[0] + t, start[1] + z,
                                            start[2] + y, start[3] + x);
                        double have = as_double(buf, xtype, k++);
                        if (have != want)
                            fail_msg("box %zu (%zu %zu %zu %zu): read %g, "
                                     "wrote %g", b, start[0] + t,
                                     start[1] + z, start[2] + y,
                                     start[3] + x, have, want);
                    }
        free(buf);
    }
}

/* Every read of file `path` of case c, which must be served by raster's
 * inflater (fast = 1; 2: all but store 0, which netCDF must serve) or
 * not at all (0). */
static void check_path(const ccase *c, const char *path, int fast)
{
    raster_file *rf;
    raster_var *rv;
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "v", &rv));
    size_t before = chunkio_chunks_inflated();
    static const int32_t sets[][NREG] = {{1}, {2, 4}, {3}, {1, 2, 3, 4}};
    static const size_t nset[] = {1, 2, 1, 4};
    static const size_t boxes[][4] = {
        {0, 0, NT, NZ}, {1, 1, 1, 1}, {2, 0, 2, 2}, {3, 1, 1, 1}};
    for (size_t i = 0; i < 4; i++)
        for (size_t b = 0; b < 4; b++)
            check_regions(rv, c->xtype, sets[i], nset[i], boxes[b],
                          boxes[b] + 2);
    size_t after_regions = chunkio_chunks_inflated();
    check_hyperslabs(rv, c->xtype);
    size_t after = chunkio_chunks_inflated();
    if (fast) {
        assert_true(after_regions > before);
        assert_true(after > after_regions);
        /* every store read was inflated by raster, none left to netCDF */
        for (size_t s = 0; s <= rv->nregions; s++) {
            int mine = rv->addr[s].ok && rv->addr[s].inflate;
            if (rv->addr[s].prepared && rv->store_cells[s] > 0 &&
                mine != (fast == 1 || s > 0))
                fail_msg("%s: store %zu read %s", c->tag, s,
                         mine ? "by raster" : "through netCDF");
        }
    } else {
        assert_int_equal(after, before);
    }
    RS(raster_close(rf));
}

static void check_file(const ccase *c, int fast)
{
    char path[600];
    file_path(c, path, sizeof path);
    check_path(c, path, fast);
}

/* unshuffle_values against the definition, for every run [first, first
 * + count) of chunks of 1 to 70 values (and 257), each value size: the
 * SSE2 steps, the overlapping last step of a tail and the scalar loop
 * below 16 values. Bytes outside the run stay untouched. */
static void test_unshuffle_runs(void **state)
{
    (void)state;
    static const size_t elems[] = {1, 2, 3, 4, 8};
    unsigned char src[257 * 8], want[257 * 8 + 16], got[257 * 8 + 16];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (size_t e = 0; e < sizeof elems / sizeof *elems; e++) {
        size_t elem = elems[e];
        for (size_t n = 1; n <= 257; n = n < 70 ? n + 1 : 257) {
            for (size_t first = 0; first < n && first < 20; first += 3)
                for (size_t count = 0; first + count <= n; count++) {
                    memset(got, 0xA5, sizeof got);
                    memset(want, 0xA5, sizeof want);
                    for (size_t i = 0; i < count; i++)
                        for (size_t k = 0; k < elem; k++)
                            want[i * elem + k] = src[k * n + first + i];
                    unfilter_unshuffle(got, src, elem, n, first, count);
                    if (memcmp(got, want, sizeof got) != 0)
                        fail_msg("unshuffle elem %zu n %zu first %zu count "
                                 "%zu differs", elem, n, first, count);
                }
            if (n == 257)
                break;
        }
    }
}

static void test_fast_path(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_case(&cases[i]);
        for (int threads = 1; threads <= 2; threads++) {
            raster_set_threads(threads);
            check_file(&cases[i], 1);
        }
        raster_set_threads(0);
    }
}

static void test_not_lean(void **state)
{
    (void)state;
    assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_file(&cases[i], 1);
    assert_int_equal(unsetenv("RASTER_NO_LEAN"), 0);
}

/* The netCDF path (the inflater off) reads the same values. */
static void test_netcdf_path(void **state)
{
    (void)state;
    chunkio_set_inflate(0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_file(&cases[i], 0);
    chunkio_set_inflate(1);
}

/* The stores are filtered as asked (a test of the test: HDF5's own view of
 * a store), and HDF5's Fletcher-32 of known bytes is what unfilter.c
 * computes. */
static void test_filters_seen(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ccase *c = &cases[i];
        char path[600];
        file_path(c, path, sizeof path);
        raster_file *rf;
        raster_var *rv;
        RS(raster_open(path, RASTER_READ, &rf));
        RS(raster_var_find(rf, "v", &rv));
        hid_t did = (hid_t)fileio_store(rv, 0);
        assert_true(did >= 0);
        hid_t dcpl = H5Dget_create_plist(did);
        unsigned char filt[4];
        int n = 0;
        assert_int_equal(fileio_filters(did, dcpl, type_size(c->xtype), filt,
                                        &n), 1);
        assert_int_equal(n, 1 + c->shuffle + c->fletcher);
        H5Pclose(dcpl);
        H5Dclose(did);
        RS(raster_close(rf));
    }
    /* "abcde": words 0x6162, 0x6364, then 0x6500 */
    const unsigned char abc[] = "abcde";
    uint32_t s1 = 0x6162, s2 = s1;
    s1 += 0x6364;
    s2 += s1;
    s1 += 0x6500;
    s2 += s1;
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    assert_int_equal(unfilter_fletcher32(abc, 5), s2 << 16 | s1);
}

/* Flips `n` bytes at `off` of a copy of src written to dst. */
static void corrupt_copy(const char *src, const char *dst, off_t off,
                         size_t n)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    if (!in || !out)
        fail_msg("copying %s to %s: %s", src, dst, strerror(errno));
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, got, out), got);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    int fd = open(dst, O_RDWR);
    assert_true(fd >= 0);
    for (size_t i = 0; i < n; i++) {
        unsigned char b;
        assert_int_equal(pread(fd, &b, 1, off + (off_t)i), 1);
        b ^= 0x5a;
        assert_int_equal(pwrite(fd, &b, 1, off + (off_t)i), 1);
    }
    assert_int_equal(close(fd), 0);
}

/* Store 0 (region 1)'s first chunk: its byte offset and stored size. */
static void first_chunk(const char *path, haddr_t *addr, hsize_t *size)
{
    raster_file *rf;
    raster_var *rv;
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "v", &rv));
    hid_t did = (hid_t)fileio_store(rv, 0);
    assert_true(did >= 0);
    hid_t space = H5Dget_space(did);
    hsize_t off[RASTER_MAX_DIMS + 1];
    unsigned mask = 0;
    assert_true(H5Dget_chunk_info(did, space, 0, off, &mask, addr, size) >=
                0);
    assert_int_equal(mask, 0);
    H5Sclose(space);
    H5Dclose(did);
    RS(raster_close(rf));
}

/* A read of region 1's first record from a damaged copy must fail. */
static void read_fails(const char *path, const char *what)
{
    raster_file *rf;
    raster_var *rv;
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "v", &rv));
    int32_t id = 1;
    size_t cells, ostart[2] = {0, 0}, ocount[2] = {1, 1};
    RS(raster_region_size(rv, &id, 1, RASTER_LAYOUT_PACKED, &cells));
    float *buf = malloc(cells * 8);
    assert_non_null(buf);
    int rc = raster_region_read(rv, &id, 1, ostart, ocount,
                                RASTER_LAYOUT_PACKED, buf);
    if (rc != RASTER_EFORMAT)
        fail_msg("%s: read gave %d (%s), not RASTER_EFORMAT", what, rc,
                 raster_errmsg());
    assert_non_null(strstr(raster_errmsg(), "corrupt"));
    /* a hyperslab over the chunk too: the first record's first level */
    free(buf);
    buf = malloc(PLANE * 8);
    assert_non_null(buf);
    size_t start[4] = {0, 0, 0, 0}, count[4] = {1, 1, NY, NX};
    assert_int_equal(raster_var_get(rv, start, count, NULL, buf),
                     RASTER_EFORMAT);
    free(buf);
    RS(raster_close(rf));
}

/* In a copy of `path`, store 0's first chunk rewritten: (skip = 0) with
 * one value changed and deflated again, its checksum kept: a valid
 * deflate stream whose Fletcher-32 no longer matches; (skip = 1) not
 * deflated, its filter mask saying deflate (the last filter) was skipped,
 * as HDF5 stores a chunk deflate cannot shrink. */
static void rewrite_chunk(const char *path, const char *dst, size_t elem,
                          size_t fletcher, int skip)
{
    raster_file *rf;
    raster_var *rv;
    char name[512];
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "v", &rv));
    hid_t did = (hid_t)fileio_store(rv, 0);
    assert_true(did >= 0);
    assert_true(H5Iget_name(did, name, sizeof name) > 0);
    H5Dclose(did);
    RS(raster_close(rf));
    corrupt_copy(path, dst, 0, 0);
    hid_t fid = H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    did = H5Dopen2(fid, name, H5P_DEFAULT);
    assert_true(did >= 0);
    hid_t space = H5Dget_space(did), dcpl = H5Dget_create_plist(did);
    hsize_t off[RASTER_MAX_DIMS + 1], size, ck[RASTER_MAX_DIMS + 1];
    haddr_t addr;
    unsigned mask;
    int rank = H5Pget_chunk(dcpl, RASTER_MAX_DIMS + 1, ck);
    assert_true(rank > 0);
    assert_true(H5Dget_chunk_info(did, space, 0, off, &mask, &addr, &size) >=
                0);
    uLongf raw = (uLongf)elem;
    for (int d = 0; d < rank; d++)
        raw *= (uLongf)ck[d];
    raw += 4 * fletcher; /* the checksum */
    unsigned char *z = malloc(size), *plain = malloc(raw);
    uLongf zcap = compressBound(raw);
    unsigned char *z2 = malloc(zcap);
    assert_true(z && plain && z2);
    uint32_t filters = 0;
    assert_true(H5Dread_chunk(did, H5P_DEFAULT, off, &filters, z) >= 0);
    uLongf got = raw;
    assert_int_equal(uncompress(plain, &got, z, (uLong)size), Z_OK);
    assert_int_equal(got, raw);
    if (skip) {
        int n = H5Pget_nfilters(dcpl);
        assert_true(n > 0);
        assert_true(H5Dwrite_chunk(did, H5P_DEFAULT, 1u << (n - 1), off, raw,
                                   plain) >= 0);
    } else {
        plain[raw / 3] ^= 0x01; /* a byte of a value (shuffled or not) */
        assert_int_equal(compress2(z2, &zcap, plain, raw, 1), Z_OK);
        assert_true(H5Dwrite_chunk(did, H5P_DEFAULT, 0, off, zcap, z2) >= 0);
    }
    free(z);
    free(z2);
    free(plain);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(did);
    assert_true(H5Fclose(fid) >= 0);
}

static void test_corrupt_chunk(void **state)
{
    (void)state;
    char path[600], bad[600];
    haddr_t addr;
    hsize_t size;
    /* deflate alone: bytes in the middle of the stream */
    file_path(&cases[0], path, sizeof path);
    tmpdir_path(bad, sizeof bad, "bad_stream.nc");
    first_chunk(path, &addr, &size);
    assert_true(size > 16);
    corrupt_copy(path, bad, (off_t)(addr + size / 2), 4);
    read_fails(bad, "a corrupt deflate stream");
    /* the stream's own checksum (adler32, its last 4 bytes) */
    file_path(&cases[1], path, sizeof path);
    tmpdir_path(bad, sizeof bad, "bad_adler.nc");
    first_chunk(path, &addr, &size);
    corrupt_copy(path, bad, (off_t)(addr + size - 2), 1);
    read_fails(bad, "a wrong adler32");
    /* a valid stream, a value changed under fletcher32: only the
     * Fletcher-32 checksum can tell (without and with shuffle) */
    for (size_t c = 1; c <= 4; c += 3) {
        file_path(&cases[c], path, sizeof path);
        tmpdir_path(bad, sizeof bad, "bad_sum.nc");
        rewrite_chunk(path, bad, type_size(cases[c].xtype), 1, 0);
        read_fails(bad, "a wrong Fletcher-32 checksum");
        assert_non_null(strstr(raster_errmsg(), "Fletcher-32"));
    }
    /* fletcher32 over shuffled, deflated data: the stream's first bytes */
    file_path(&cases[2], path, sizeof path);
    tmpdir_path(bad, sizeof bad, "bad_head.nc");
    first_chunk(path, &addr, &size);
    corrupt_copy(path, bad, (off_t)addr + 2, 2);
    read_fails(bad, "a damaged stream under a checksum");
}

/* A chunk HDF5 stored with deflate skipped (its filter mask): the store
 * goes to netCDF, which reads it right; the other stores stay raster's. */
static void test_filter_skipped(void **state)
{
    (void)state;
    for (size_t c = 0; c <= 4; c += 4) {
        char path[600], odd[600];
        file_path(&cases[c], path, sizeof path);
        tmpdir_path(odd, sizeof odd, "skipped.nc");
        rewrite_chunk(path, odd, type_size(cases[c].xtype),
                      (size_t)cases[c].fletcher, 1);
        check_path(&cases[c], odd, 2);
        assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
        check_path(&cases[c], odd, 2);
        assert_int_equal(unsetenv("RASTER_NO_LEAN"), 0);
    }
}

/* Stores through a filter raster does not undo (szip, id 4) go to
 * netCDF, which reads them right. */
static void test_other_filter(void **state)
{
    (void)state;
    static const ccase szip = {"szip", NC_FLOAT, 1, 1, 0, {1, 1, 20, 25}, 4};
    write_case(&szip);
    check_file(&szip, 0);
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_create("compressed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unshuffle_runs),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_not_lean),
        cmocka_unit_test(test_netcdf_path),
        cmocka_unit_test(test_filters_seen),
        cmocka_unit_test(test_corrupt_chunk),
        cmocka_unit_test(test_filter_skipped),
        cmocka_unit_test(test_other_filter),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_remove);
}
