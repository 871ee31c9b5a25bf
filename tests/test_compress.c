/*
 * test_compress.c - a raster variable's compression (issue #23):
 * raster_var_set_compression / raster_var_compression, the stores' HDF5
 * filters and chunk shape, and raster_adopt_var taking a placeholder's own
 * settings.
 *
 * Round trips: every numeric type x deflate 1/4/9 x shuffle off/on, and
 * fletcher32 (alone and with deflate): a raster file and a plain netCDF-4
 * file get the same variables with the same settings and the same writes
 * (whole variable, then an overwritten strided box); both are closed and
 * reopened read-only (raster's lean open) and read-write, and every read
 * (whole variable, strided hyperslabs, region reads) must equal plain
 * netCDF's element by element. The stores must carry the filters (netCDF's
 * inquiries on each store), and be chunked; raster_var_compression must
 * answer the settings after each reopen, and the placeholder answer them
 * to netCDF's inquiries. Whole records of a filtered store never take
 * direct.c's H5Dwrite_chunk path (a plain one does). The tables and the
 * stored mask are deflated (level 1, shuffle) when the stores are, plain
 * otherwise; reads through the lean and the netCDF open and the full check
 * work on both, and maskio.c's pread declines a deflated mask. Adoption takes the
 * placeholder's deflate, shuffle and fletcher32; a quantized placeholder
 * is refused until raster quantizes. Error paths: a written variable, bad deflate
 * levels, quantize on an integer type, raster's marker or an unknown
 * filter, a read-only file, after nc_enddef, changing settings once set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raster.h"

#include "chunkio.h"
#include "direct.h"
#include "maskio.h"
#include "testutil.h"
#include "var.h"

#define NT 3
#define NY 24
#define NX 30
#define NCELL (NT * NY * NX)
#define NTYPES 10

static const int var_types[NTYPES] = {NC_BYTE, NC_UBYTE, NC_SHORT, NC_USHORT,
                                      NC_INT, NC_UINT, NC_INT64, NC_UINT64,
                                      NC_FLOAT, NC_DOUBLE};

static int32_t mask_vals[NY * NX];

static int setup(void **state)
{
    (void)state;
    /* four regions of uneven shapes: pure and mixed tiles */
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            mask_vals[y * NX + x] = x < 11 ? 1 : y < 9 ? 2 : (x + y) % 7 ? 3 : 4;
    return tmpdir_create("compress");
}

/* Value i of a smooth field (compressible), in type xtype, into out. */
static void value(int xtype, size_t i, double bias, void *out)
{
    size_t t = i / (NY * NX), y = i / NX % NY, x = i % NX;
    double d = (double)(y * 3 + x) * 0.5 + (double)t * 2.25 + bias;
    switch (xtype) {
    case NC_BYTE: *(signed char *)out = (signed char)((long)d % 100); break;
    case NC_UBYTE: *(unsigned char *)out = (unsigned char)((long)d % 200); break;
    case NC_SHORT: *(short *)out = (short)(d * 10 - 300); break;
    case NC_USHORT: *(unsigned short *)out = (unsigned short)(d * 10); break;
    case NC_INT: *(int *)out = (int)(d * 1000 - 50000); break;
    case NC_UINT: *(unsigned *)out = (unsigned)(d * 1000); break;
    case NC_INT64: *(long long *)out = (long long)(d * 1e6) - 7; break;
    case NC_UINT64: *(unsigned long long *)out = (unsigned long long)(d * 1e6); break;
    case NC_FLOAT: *(float *)out = (float)(d * 0.1 - 3); break;
    default: *(double *)out = d * 0.01 - 1; break;
    }
}

static void fill_buf(int xtype, void *buf, size_t n, double bias)
{
    size_t es = type_size(xtype);
    for (size_t i = 0; i < n; i++)
        value(xtype, i, bias, (char *)buf + i * es);
}

/* One set of settings of the round trips. */
typedef struct setting {
    int shuffle, level, fletcher32;
} setting;

/* the first is plain: the sizes of the others are checked against it */
static const setting settings[] = {
    {0, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0, 4, 0}, {1, 4, 0}, {0, 9, 0}, {1, 9, 0},
    {0, 0, 1}, {1, 4, 1},
};
#define NSETTINGS (sizeof settings / sizeof *settings)

static raster_compression comp_of(const setting *s)
{
    raster_compression c;
    memset(&c, 0, sizeof c);
    c.shuffle = s->shuffle;
    c.deflate_level = s->level;
    c.fletcher32 = s->fletcher32;
    return c;
}

static void expect_comp(const raster_compression *got,
                        const raster_compression *want, const char *what)
{
    if (memcmp(got, want, sizeof *got) != 0)
        fail_msg("%s: compression shuffle %d deflate %d fletcher32 %d "
                 "quantize %d/%d filters %u, not %d %d %d", what,
                 got->shuffle, got->deflate_level, got->fletcher32,
                 got->quantize_mode, got->quantize_nsd, got->nfilters,
                 want->shuffle, want->deflate_level, want->fletcher32);
}

/* netCDF's own answers on variable varid of g are s's. */
static void expect_nc_settings(int g, int varid, const setting *s,
                               const char *what)
{
    int sh = -1, de = -1, lv = -1, f32 = -1;
    NC(nc_inq_var_deflate(g, varid, &sh, &de, &lv));
    NC(nc_inq_var_fletcher32(g, varid, &f32));
    if (sh != s->shuffle || de != (s->level > 0) ||
        (s->level && lv != s->level) || f32 != s->fletcher32)
        fail_msg("%s: netCDF says shuffle %d deflate %d level %d fletcher32 "
                 "%d, not %d %d %d", what, sh, de, lv, f32, s->shuffle,
                 s->level, s->fletcher32);
}

/* HDF5 paths of the stores check_stores finds, for their sizes */
static char store_paths[256][NC_MAX_NAME * 4];
static size_t nstore_paths;

/* Every store "data" under group g (its subgroups, recursively) carries
 * s's filters and is chunked; returns how many there are. */
static int check_stores(int g, const setting *s, const char *what)
{
    int found = 0, varid, n;
    if (nc_inq_varid(g, "data", &varid) == NC_NOERR) {
        size_t len;
        assert_true(nstore_paths < 256);
        NC(nc_inq_grpname_full(g, &len, NULL));
        assert_true(len + 6 < sizeof store_paths[0]);
        NC(nc_inq_grpname_full(g, &len, store_paths[nstore_paths]));
        strcat(store_paths[nstore_paths++], "/data");
        int storage;
        size_t ck[NC_MAX_VAR_DIMS];
        expect_nc_settings(g, varid, s, what);
        NC(nc_inq_var_chunking(g, varid, &storage, ck));
        if (s->level || s->shuffle || s->fletcher32) {
            assert_int_equal(storage, NC_CHUNKED);
            assert_int_equal(ck[0], 1); /* one record per chunk */
        } else {
            assert_int_equal(storage, NC_CONTIGUOUS);
        }
        found++;
    }
    NC(nc_inq_grps(g, &n, NULL));
    int ids[64];
    assert_true(n <= 64);
    NC(nc_inq_grps(g, NULL, ids));
    for (int i = 0; i < n; i++)
        found += check_stores(ids[i], s, what);
    return found;
}

/* The tables and stored mask of storage group g and its subgroups
 * (everything but the stores "data"): deflated at level 1 with shuffle and
 * chunked when the stores compress (deflate), plain and contiguous as ever
 * otherwise. Returns how many there are. */
static int check_tables(int g, int packed, const char *what)
{
    int found = 0, n, ids[64];
    NC(nc_inq_varids(g, &n, NULL));
    assert_true(n <= 64);
    NC(nc_inq_varids(g, NULL, ids));
    for (int i = 0; i < n; i++) {
        char name[NC_MAX_NAME + 1];
        NC(nc_inq_varname(g, ids[i], name));
        if (strcmp(name, "data") == 0)
            continue;
        int nd, dims[2], sh = -1, de = -1, lv = -1, f32 = -1, storage;
        size_t rows, ck[2];
        NC(nc_inq_varndims(g, ids[i], &nd));
        if (nd != 2)
            continue; /* a dimension's own variable */
        NC(nc_inq_vardimid(g, ids[i], dims));
        NC(nc_inq_dimlen(g, dims[0], &rows));
        NC(nc_inq_var_deflate(g, ids[i], &sh, &de, &lv));
        NC(nc_inq_var_fletcher32(g, ids[i], &f32));
        NC(nc_inq_var_chunking(g, ids[i], &storage, ck));
        int want = packed && rows > 0; /* nothing stored: left plain */
        if (sh != want || de != want || (want && lv != 1) || f32 != 0 ||
            storage != (want ? NC_CHUNKED : NC_CONTIGUOUS))
            fail_msg("%s: table %s: shuffle %d deflate %d level %d "
                     "fletcher32 %d storage %d, want %s", what, name, sh, de,
                     lv, f32, storage, want ? "deflate 1 + shuffle, chunked"
                                            : "plain, contiguous");
        if (want && strcmp(name, "mask") != 0)
            assert_true(ck[0] * ck[1] * 8 <= ((size_t)64 << 10) ||
                        ck[0] == 1);
        found++;
    }
    NC(nc_inq_grps(g, &n, NULL));
    assert_true(n <= 64);
    NC(nc_inq_grps(g, NULL, ids));
    for (int i = 0; i < n; i++)
        found += check_tables(ids[i], packed, what);
    return found;
}

typedef struct pair {
    char rpath[300], npath[300];
    raster_file *rf;
    raster_var *rv[NTYPES];
    int nc, nv[NTYPES];
} pair;

static void var_name(char *buf, size_t len, int xtype)
{
    snprintf(buf, len, "v_%s", type_name(xtype));
}

/* Both files with v_<type>(t, y, x) for every type, compressed by s. */
static void pair_create(pair *p, size_t k)
{
    const setting *s = &settings[k];
    char buf[64];
    snprintf(buf, sizeof buf, "r%zu.nc", k);
    tmpdir_path(p->rpath, sizeof p->rpath, buf);
    snprintf(buf, sizeof buf, "n%zu.nc", k);
    tmpdir_path(p->npath, sizeof p->npath, buf);
    RS(raster_create(p->rpath, &p->rf));
    if (testutil_write_format)
        RS(raster_file_set_format(p->rf, testutil_write_format));
    NC(nc_create(p->npath, NC_NETCDF4 | NC_CLOBBER, &p->nc));
    int rnc = raster_file_ncid(p->rf), rd[3], nd[3];
    const char *dn[3] = {"t", "y", "x"};
    const size_t len[3] = {NT, NY, NX};
    for (int i = 0; i < 3; i++) {
        NC(nc_def_dim(rnc, dn[i], len[i], &rd[i]));
        NC(nc_def_dim(p->nc, dn[i], len[i], &nd[i]));
    }
    raster_mask *m;
    RS(raster_mask_wrap(mask_vals, NY, NX, &m));
    const size_t chunk[3] = {1, 6, 5};
    raster_compression c = comp_of(s);
    for (int t = 0; t < NTYPES; t++) {
        var_name(buf, sizeof buf, var_types[t]);
        RS(raster_def_var(p->rf, rnc, buf, var_types[t], 3, rd, chunk, m,
                          &p->rv[t]));
        RS(raster_var_set_compression(p->rv[t], &c));
        raster_compression got;
        RS(raster_var_compression(p->rv[t], &got));
        expect_comp(&got, &c, "after set");
        NC(nc_def_var(p->nc, buf, var_types[t], 3, nd, &p->nv[t]));
        NC(nc_def_var_chunking(p->nc, p->nv[t], NC_CHUNKED, chunk));
        if (s->fletcher32)
            NC(nc_def_var_fletcher32(p->nc, p->nv[t], NC_FLETCHER32));
        if (s->level || s->shuffle)
            NC(nc_def_var_deflate(p->nc, p->nv[t], s->shuffle, s->level > 0,
                                  s->level));
    }
    raster_mask_free(m);
    NC(nc_enddef(p->nc));
}

static void pair_open(pair *p, int writable)
{
    RS(raster_open(p->rpath, writable ? RASTER_WRITE : RASTER_READ, &p->rf));
    NC(nc_open(p->npath, writable ? NC_WRITE : NC_NOWRITE, &p->nc));
    for (int t = 0; t < NTYPES; t++) {
        char name[64];
        var_name(name, sizeof name, var_types[t]);
        RS(raster_var_find(p->rf, name, &p->rv[t]));
        NC(nc_inq_varid(p->nc, name, &p->nv[t]));
    }
}

static void pair_close(pair *p)
{
    RS(raster_close(p->rf));
    NC(nc_close(p->nc));
}

static void expect_same(const void *a, const void *b, size_t n, size_t es,
                        const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, es))
            fail_msg("%s: value %zu differs from plain netCDF's", what, i);
}

/* Every read of both files agrees: the whole variable, strided boxes,
 * regions. */
static void compare_reads(pair *p, const char *what)
{
    static unsigned char a[NCELL * 8], b[NCELL * 8];
    for (int t = 0; t < NTYPES; t++) {
        size_t es = type_size(var_types[t]);
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s %s", what, type_name(var_types[t]));
        const size_t s0[3] = {0, 0, 0}, c0[3] = {NT, NY, NX};
        RS(raster_var_get(p->rv[t], s0, c0, NULL, a));
        NC(nc_get_vara(p->nc, p->nv[t], s0, c0, b));
        expect_same(a, b, NCELL, es, ctx);
        const size_t s1[3] = {1, 3, 4}, c1[3] = {2, 7, 9};
        const ptrdiff_t st[3] = {1, 3, 2};
        memset(a, 0, sizeof a);
        RS(raster_var_get(p->rv[t], s1, c1, st, a));
        NC(nc_get_vars(p->nc, p->nv[t], s1, c1, st, b));
        expect_same(a, b, 2 * 7 * 9, es, ctx);
        /* a thin band of every row: the mask of every mixed tile it
         * crosses, read deflated when the stores are */
        const size_t s2[3] = {0, 0, 13}, c2[3] = {NT, NY, 2};
        RS(raster_var_get(p->rv[t], s2, c2, NULL, a));
        NC(nc_get_vara(p->nc, p->nv[t], s2, c2, b));
        expect_same(a, b, NT * NY * 2, es, ctx);
        /* regions 3 and 4 of records 1..2, packed: plain's cells in
         * row-major order */
        const int32_t ids[2] = {3, 4};
        const size_t os[1] = {1}, oc[1] = {2};
        RS(raster_region_read(p->rv[t], ids, 2, os, oc, RASTER_LAYOUT_PACKED,
                              a));
        NC(nc_get_vara(p->nc, p->nv[t], s0, c0, b));
        size_t k = 0;
        for (size_t r = 1; r < 3; r++)
            for (size_t i = 0; i < NY * NX; i++)
                if (mask_vals[i] == 3 || mask_vals[i] == 4) {
                    if (memcmp(a + k * es, b + (r * NY * NX + i) * es, es))
                        fail_msg("%s: region value %zu differs", ctx, k);
                    k++;
                }
    }
}

static void put_both(pair *p, double bias, int box)
{
    static unsigned char buf[NCELL * 8];
    for (int t = 0; t < NTYPES; t++) {
        fill_buf(var_types[t], buf, NCELL, bias);
        if (!box) {
            const size_t s0[3] = {0, 0, 0}, c0[3] = {NT, NY, NX};
            RS(raster_var_put(p->rv[t], s0, c0, NULL, buf));
            NC(nc_put_vara(p->nc, p->nv[t], s0, c0, buf));
        } else {
            const size_t s1[3] = {0, 2, 1}, c1[3] = {3, 10, 14};
            const ptrdiff_t st[3] = {1, 2, 2};
            RS(raster_var_put(p->rv[t], s1, c1, st, buf));
            NC(nc_put_vars(p->nc, p->nv[t], s1, c1, st, buf));
        }
    }
}

/* The settings as raster_var_compression and netCDF's inquiries on the
 * placeholder and stores of the closed file answer them. */
static void check_file(pair *p, size_t k)
{
    const setting *s = &settings[k];
    raster_compression want = comp_of(s);
    for (int t = 0; t < NTYPES; t++) {
        raster_compression got;
        RS(raster_var_compression(p->rv[t], &got));
        expect_comp(&got, &want, "reopened");
    }
    /* the file through netCDF alone (raster's filter registered) */
    int nc;
    nstore_paths = 0;
    RS(raster_filter_register());
    NC(nc_open(p->rpath, NC_NOWRITE, &nc));
    for (int t = 0; t < NTYPES; t++) {
        char name[64];
        int varid;
        var_name(name, sizeof name, var_types[t]);
        NC(nc_inq_varid(nc, name, &varid));
        expect_nc_settings(nc, varid, s, "placeholder");
        int g = raster_storage_grp(nc, name);
        assert_true(check_stores(g, s, name) >= 1);
        /* the mask and the chunks and runs tables at least */
        assert_true(check_tables(g, s->level > 0, name) >= 3);
    }
    NC(nc_close(nc));
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    fclose(f);
    return size;
}

static void test_round_trips(void **state)
{
    (void)state;
    long plain_size = 0;
    for (size_t k = 0; k < NSETTINGS; k++) {
        pair p;
        pair_create(&p, k);
        put_both(&p, 0, 0);
        put_both(&p, 5.5, 1);
        compare_reads(&p, "written");
        pair_close(&p);
        pair_open(&p, 0);
        check_file(&p, k);
        compare_reads(&p, "read-only");
        pair_close(&p);
        pair_open(&p, 1);
        check_file(&p, k);
        compare_reads(&p, "read-write");
        put_both(&p, -2.0, 1);
        compare_reads(&p, "rewritten");
        pair_close(&p);
        pair_open(&p, 0);
        compare_reads(&p, "reread");
        for (int t = 0; t < NTYPES; t++) {
            RS(raster_var_check(p.rv[t]));
            /* maskio.c's pread serves a plain mask only: a deflated one is
             * read through HDF5 (the reads above) */
            assert_int_equal(maskio_usable(p.rv[t]), settings[k].level == 0);
        }
        pair_close(&p);
        /* the same through netCDF from the start */
        assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
        pair_open(&p, 0);
        compare_reads(&p, "netCDF open");
        for (int t = 0; t < NTYPES; t++)
            RS(raster_var_check(p.rv[t]));
        pair_close(&p);
        assert_int_equal(unsetenv("RASTER_NO_LEAN"), 0);
        /* the stores really compress: fewer bytes than the plain file's
         * (the files' sizes are mostly metadata at this size) */
        long size = file_size(p.rpath);
        unsigned long long stored = 0;
        for (size_t i = 0; i < nstore_paths; i++)
            stored += h5_storage_size(p.rpath, store_paths[i]);
        if (k == 0)
            plain_size = (long)stored;
        print_message("shuffle %d deflate %d fletcher32 %d: raster file "
                      "%ld bytes (stores %llu), netCDF %ld\n",
                      settings[k].shuffle, settings[k].level,
                      settings[k].fletcher32, size, stored,
                      file_size(p.npath));
        if (settings[k].level)
            assert_true(stored < (unsigned long long)plain_size / 2);
    }
}

/* Format 2 keeps each region's tables in its own group: deflated there
 * too, and read back equal through both opens. */
static void test_format2_tables(void **state)
{
    (void)state;
    int was = testutil_write_format;
    testutil_write_format = 2; /* pair_create's, and raster_storage_grp's */
    for (size_t k = 0; k < 3; k++) { /* plain, deflate 1, deflate 1 + shuffle */
        pair p;
        pair_create(&p, k);
        put_both(&p, 0, 0);
        put_both(&p, 1.5, 1);
        pair_close(&p);
        pair_open(&p, 0);
        compare_reads(&p, "format 2");
        for (int t = 0; t < NTYPES; t++)
            RS(raster_var_check(p.rv[t]));
        pair_close(&p);
        assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
        pair_open(&p, 0);
        compare_reads(&p, "format 2, netCDF open");
        pair_close(&p);
        assert_int_equal(unsetenv("RASTER_NO_LEAN"), 0);
        int nc;
        RS(raster_filter_register());
        NC(nc_open(p.rpath, NC_NOWRITE, &nc));
        /* the mask, and chunks and runs in each of the four region groups */
        assert_true(check_tables(raster_storage_grp(nc, "v_float"),
                                 settings[k].level > 0, "format 2") >= 9);
        NC(nc_close(nc));
    }
    testutil_write_format = was;
}

/* ---- adoption ----------------------------------------------------------- */

/* A program's variable with deflate, shuffle and fletcher32 set, adopted:
 * its stores get them, the placeholder keeps them. */
static void test_adopt(void **state)
{
    (void)state;
    char path[300];
    tmpdir_path(path, sizeof path, "adopt.nc");
    raster_file *rf;
    RS(raster_create(path, &rf));
    int nc = raster_file_ncid(rf), d[3], varid;
    NC(nc_def_dim(nc, "t", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(nc, "y", NY, &d[1]));
    NC(nc_def_dim(nc, "x", NX, &d[2]));
    NC(nc_def_var(nc, "v", NC_FLOAT, 3, d, &varid));
    NC(nc_def_var_deflate(nc, varid, 1, 1, 5));
    NC(nc_def_var_fletcher32(nc, varid, NC_FLETCHER32));
    raster_mask *m;
    RS(raster_mask_wrap(mask_vals, NY, NX, &m));
    raster_var *v;
    RS(raster_adopt_var(rf, nc, varid, NULL, m, &v));
    raster_mask_free(m);
    raster_compression got, want;
    memset(&want, 0, sizeof want);
    want.shuffle = 1;
    want.deflate_level = 5;
    want.fletcher32 = 1;
    RS(raster_var_compression(v, &got));
    expect_comp(&got, &want, "adopted");
    static float buf[NCELL], back[NCELL];
    fill_buf(NC_FLOAT, buf, NCELL, 1.0);
    const size_t s0[3] = {0, 0, 0}, c0[3] = {NT, NY, NX};
    RS(raster_var_put(v, s0, c0, NULL, buf));
    RS(raster_close(rf));
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "v", &v));
    RS(raster_var_compression(v, &got));
    expect_comp(&got, &want, "adopted, lean");
    RS(raster_var_get(v, s0, c0, NULL, back));
    expect_same(buf, back, NCELL, sizeof *buf, "adopted");
    RS(raster_close(rf));
    NC(nc_open(path, NC_NOWRITE, &nc));
    const setting s = {1, 5, 1};
    NC(nc_inq_varid(nc, "v", &varid));
    expect_nc_settings(nc, varid, &s, "adopted placeholder");
    assert_true(check_stores(raster_storage_grp(nc, "v"), &s, "v") >= 1);
    assert_true(check_tables(raster_storage_grp(nc, "v"), 1, "v") >= 3);
    NC(nc_close(nc));
}

/* A placeholder with a filter HDF5 lacks is refused (the shim keeps such a
 * variable plain netCDF); nothing is defined. */
static void test_adopt_refused(void **state)
{
    (void)state;
    char path[300];
    tmpdir_path(path, sizeof path, "adopt-refused.nc");
    raster_file *rf;
    RS(raster_create(path, &rf));
    int nc = raster_file_ncid(rf), d[2], varid;
    NC(nc_def_dim(nc, "y", NY, &d[0]));
    NC(nc_def_dim(nc, "x", NX, &d[1]));
    NC(nc_def_var(nc, "q", NC_DOUBLE, 2, d, &varid));
    NC(nc_def_var_quantize(nc, varid, NC_QUANTIZE_BITGROOM, 3));
    raster_mask *m;
    RS(raster_mask_wrap(mask_vals, NY, NX, &m));
    raster_var *v = NULL;
    int rc = raster_adopt_var(rf, nc, varid, NULL, m, &v);
    if (rc == RASTER_OK) { /* once raster quantizes (src/base/quantize.c) */
        raster_compression got;
        RS(raster_var_compression(v, &got));
        assert_int_equal(got.quantize_mode, NC_QUANTIZE_BITGROOM);
        assert_int_equal(got.quantize_nsd, 3);
    } else {
        assert_int_equal(rc, RASTER_EUNSUPPORTED);
        assert_null(v);
        assert_int_equal(raster_file_nvars(rf), 0);
    }
    raster_mask_free(m);
    RS(raster_close(rf));
}

/* ---- direct chunk writes ------------------------------------------------ */

#define BY 200
#define BX 200

/* A new file `path` with d(t unlimited, y BY, x BX), double, of one
 * region over the whole grid, base chunk shape `chunk`, its stores
 * deflated at `level` (0: plain) with or without shuffle. */
static raster_var *one_region_file(const char *path, const size_t *chunk,
                                   int level, int shuffle, raster_file **rf)
{
    static int32_t one[BY * BX];
    for (size_t i = 0; i < BY * BX; i++)
        one[i] = 1;
    RS(raster_create(path, rf));
    int nc = raster_file_ncid(*rf), d[3];
    NC(nc_def_dim(nc, "t", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(nc, "y", BY, &d[1]));
    NC(nc_def_dim(nc, "x", BX, &d[2]));
    raster_mask *m;
    RS(raster_mask_wrap(one, BY, BX, &m));
    raster_var *v;
    RS(raster_def_var(*rf, nc, "d", NC_DOUBLE, 3, d, chunk, m, &v));
    raster_mask_free(m);
    raster_compression c;
    memset(&c, 0, sizeof c);
    c.deflate_level = level;
    c.shuffle = shuffle;
    RS(raster_var_set_compression(v, &c));
    return v;
}

/* Whole records of one big region: chunks of 320 KB, which direct.c
 * writes with H5Dwrite_chunk when plain; filtered, they must go through
 * netCDF (HDF5 deflates them), and read back equal. */
static void direct_case(int level, size_t *went)
{
    char path[300];
    tmpdir_path(path, sizeof path, level ? "direct-d.nc" : "direct-p.nc");
    raster_file *rf;
    const size_t chunk[3] = {1, 50, 50};
    raster_var *v = one_region_file(path, chunk, level, 0, &rf);
    static double buf[2 * BY * BX], back[2 * BY * BX];
    for (size_t i = 0; i < 2 * BY * BX; i++)
        buf[i] = (double)(i % 977) * 0.25;
    const size_t s0[3] = {0, 0, 0}, c0[3] = {2, BY, BX};
    size_t before = direct_chunks_written();
    RS(raster_var_put(v, s0, c0, NULL, buf));
    *went = direct_chunks_written() - before;
    RS(raster_close(rf));
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "d", &v));
    RS(raster_var_get(v, s0, c0, NULL, back));
    expect_same(buf, back, 2 * BY * BX, sizeof *buf, "direct case");
    RS(raster_close(rf));
}

static void test_direct_skips_filtered(void **state)
{
    (void)state;
    size_t plain, deflated;
    direct_case(0, &plain);
    direct_case(6, &deflated);
    assert_true(plain > 0); /* the case is one direct.c takes */
    assert_int_equal(deflated, 0);
}

/* ---- store chunks of whole tiles ---------------------------------------- */

/* A filtered store is chunked as the variable is along the outer
 * dimensions (here 2 records) and in whole tiles along the cells, as many
 * as fit 64 KiB (meta.c, filtered_chunking): 2 x 50 x 50 doubles (40 KB),
 * one tile. A one-column band of one record then inflates one chunk per
 * tile row, 4 x 40 KB, where chunks of a whole record's store (320 KB,
 * one chunk) made it inflate everything. */
static void test_band_inflates_tiles(void **state)
{
    (void)state;
    char path[300];
    tmpdir_path(path, sizeof path, "band.nc");
    raster_file *rf;
    const size_t tile[3] = {2, 50, 50};
    raster_var *v = one_region_file(path, tile, 1, 1, &rf);
    static double buf[2 * BY * BX];
    for (size_t i = 0; i < 2 * BY * BX; i++)
        buf[i] = (double)(i % 977) * 0.25;
    const size_t s0[3] = {0, 0, 0}, c0[3] = {2, BY, BX};
    RS(raster_var_put(v, s0, c0, NULL, buf));
    RS(raster_close(rf));

    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "d", &v));
    const size_t b0[3] = {1, 0, 120}, b1[3] = {1, BY, 1};
    double band[BY];
    size_t before = chunkio_chunks_inflated();
    RS(raster_var_get(v, b0, b1, NULL, band));
    assert_int_equal(chunkio_chunks_inflated() - before, BY / 50);
    size_t stores = 0;
    for (size_t i = 0; i <= v->nregions; i++)
        if (v->addr[i].prepared && v->store_cells[i] > 0) {
            assert_int_equal(v->addr[i].ck[0], 2);
            assert_int_equal(v->addr[i].ckc, 50 * 50); /* one tile */
            stores++;
        }
    assert_int_equal(stores, 1);
    for (size_t y = 0; y < BY; y++)
        if (band[y] != buf[BY * BX + y * BX + 120])
            fail_msg("band row %zu: %g, wrote %g", y, band[y],
                     buf[BY * BX + y * BX + 120]);
    RS(raster_close(rf));
}

/* A filtered store whose chunks hold all 4 levels of a record, wider
 * than one netCDF call carries with all 4 (32 MiB of doubles: 1.1 M
 * cells x 4 levels is 35 MB): the write cuts the store rather than the
 * levels, so no chunk is merged from several calls (HDF5 would inflate and
 * deflate it again for each). */
#define WY 1000
#define WX 1100
static void test_write_whole_chunks(void **state)
{
    (void)state;
    char path[300];
    tmpdir_path(path, sizeof path, "wide.nc");
    int32_t *one = malloc((size_t)WY * WX * sizeof *one);
    double *buf = malloc((size_t)4 * WY * WX * sizeof *buf);
    assert_non_null(one);
    assert_non_null(buf);
    for (size_t i = 0; i < (size_t)WY * WX; i++)
        one[i] = 1;
    for (size_t i = 0; i < (size_t)4 * WY * WX; i++)
        buf[i] = (double)(i % 1013) * 0.5;
    raster_file *rf;
    RS(raster_create(path, &rf));
    int nc = raster_file_ncid(rf), d[4];
    NC(nc_def_dim(nc, "t", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(nc, "z", 4, &d[1]));
    NC(nc_def_dim(nc, "y", WY, &d[2]));
    NC(nc_def_dim(nc, "x", WX, &d[3]));
    raster_mask *m;
    RS(raster_mask_wrap(one, WY, WX, &m));
    raster_var *v;
    const size_t tile[4] = {1, 4, 50, 50};
    RS(raster_def_var(rf, nc, "w", NC_DOUBLE, 4, d, tile, m, &v));
    raster_mask_free(m);
    raster_compression c;
    memset(&c, 0, sizeof c);
    c.deflate_level = 1;
    RS(raster_var_set_compression(v, &c));
    const size_t s0[4] = {0, 0, 0, 0}, c0[4] = {1, 4, WY, WX};
    size_t before = chunkio_split_chunk_writes();
    RS(raster_var_put(v, s0, c0, NULL, buf));
    assert_int_equal(chunkio_split_chunk_writes() - before, 0);
    RS(raster_close(rf));
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "w", &v));
    double *back = malloc((size_t)4 * WY * WX * sizeof *back);
    assert_non_null(back);
    RS(raster_var_get(v, s0, c0, NULL, back));
    expect_same(buf, back, (size_t)4 * WY * WX, sizeof *buf, "wide store");
    RS(raster_close(rf));
    free(back);
    free(buf);
    free(one);
}

/* ---- errors ------------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    char path[300];
    tmpdir_path(path, sizeof path, "errors.nc");
    raster_file *rf;
    RS(raster_create(path, &rf));
    int nc = raster_file_ncid(rf), d[2];
    NC(nc_def_dim(nc, "y", NY, &d[0]));
    NC(nc_def_dim(nc, "x", NX, &d[1]));
    raster_mask *m;
    RS(raster_mask_wrap(mask_vals, NY, NX, &m));
    raster_var *vi, *vf, *vw;
    RS(raster_def_var(rf, nc, "i", NC_INT, 2, d, NULL, m, &vi));
    RS(raster_def_var(rf, nc, "f", NC_FLOAT, 2, d, NULL, m, &vf));
    RS(raster_def_var(rf, nc, "w", NC_SHORT, 2, d, NULL, m, &vw));
    raster_mask_free(m);
    raster_compression c, got, plain;
    memset(&plain, 0, sizeof plain);
    /* bad levels, quantize on an integer, bad quantize, filters */
    const int levels[] = {-1, 10, 99};
    for (size_t i = 0; i < 3; i++) {
        c = plain;
        c.deflate_level = levels[i];
        assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
        assert_int_equal(raster_nc_status(), NC_EINVAL);
    }
    c = plain;
    c.quantize_mode = NC_QUANTIZE_BITGROOM;
    c.quantize_nsd = 3;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    c.quantize_nsd = 8; /* a float keeps 7 digits at most */
    assert_int_equal(raster_var_set_compression(vf, &c), RASTER_EINVAL);
    c.quantize_mode = 7;
    c.quantize_nsd = 3;
    assert_int_equal(raster_var_set_compression(vf, &c), RASTER_EINVAL);
    c = plain;
    c.nfilters = 1;
    c.filters[0].id = RASTER_FILTER_ID;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    c.filters[0].id = 40001; /* registered nowhere */
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    c.filters[0].id = H5Z_FILTER_DEFLATE; /* has its own field */
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    c.nfilters = RASTER_MAX_FILTERS + 1;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    /* none of that changed anything */
    RS(raster_var_compression(vi, &got));
    expect_comp(&got, &plain, "after refusals");
    /* NULL settings: plain, already */
    RS(raster_var_set_compression(vi, NULL));
    /* set once, the same again is fine; another level and fletcher32 may
     * be added; nothing may be taken off */
    c = plain;
    c.deflate_level = 2;
    c.shuffle = 1;
    RS(raster_var_set_compression(vi, &c));
    RS(raster_var_set_compression(vi, &c));
    c.deflate_level = 3;
    RS(raster_var_set_compression(vi, &c));
    c.fletcher32 = 1;
    RS(raster_var_set_compression(vi, &c));
    raster_compression full = c;
    c.shuffle = 0;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EUNSUPPORTED);
    c = full;
    c.deflate_level = 0;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EUNSUPPORTED);
    assert_int_equal(raster_var_set_compression(vi, NULL),
                     RASTER_EUNSUPPORTED);
    RS(raster_var_compression(vi, &got));
    expect_comp(&got, &full, "added to");
    /* written: fixed */
    short vals[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        vals[i] = (short)i;
    const size_t s0[2] = {0, 0}, c0[2] = {NY, NX};
    RS(raster_var_put(vw, s0, c0, NULL, vals));
    c = plain;
    c.deflate_level = 1;
    assert_int_equal(raster_var_set_compression(vw, &c), RASTER_EINVAL);
    /* after nc_enddef the datasets exist: netCDF refuses filters */
    assert_int_equal(raster_var_set_compression(vf, &c), RASTER_EINVAL);
    assert_int_equal(raster_nc_status(), NC_ELATEDEF);
    RS(raster_var_compression(vf, &got));
    expect_comp(&got, &plain, "refused after enddef");
    /* NULL arguments */
    assert_int_equal(raster_var_set_compression(NULL, &c), RASTER_EINVAL);
    assert_int_equal(raster_var_compression(vf, NULL), RASTER_EINVAL);
    assert_int_equal(raster_var_compression(NULL, &got), RASTER_EINVAL);
    RS(raster_close(rf));
    /* read-only: refused; asking is fine */
    RS(raster_open(path, RASTER_READ, &rf));
    RS(raster_var_find(rf, "i", &vi));
    RS(raster_var_compression(vi, &got));
    expect_comp(&got, &full, "added to, reopened");
    c.deflate_level = 5;
    assert_int_equal(raster_var_set_compression(vi, &c), RASTER_EINVAL);
    RS(raster_close(rf));
    /* read-write: in the file before this open, fixed */
    RS(raster_open(path, RASTER_WRITE, &rf));
    RS(raster_var_find(rf, "f", &vf));
    assert_int_equal(raster_var_set_compression(vf, &c), RASTER_EINVAL);
    RS(raster_close(rf));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_format2_tables),
        cmocka_unit_test(test_adopt),
        cmocka_unit_test(test_adopt_refused),
        cmocka_unit_test(test_direct_skips_filtered),
        cmocka_unit_test(test_band_inflates_tiles),
        cmocka_unit_test(test_write_whole_chunks),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_remove);
}
