/*
 * test_mask.c - unit tests of region masks (src/plan/mask.c): loading 2-D mask
 * variables of every netCDF numeric type from netCDF-4 and classic files,
 * the errors for unusable masks and files, CF region names
 * (flag_values / flag_meanings), raster_mask_wrap, a mask larger than the
 * loader's read block, and allocation failure while loading; no-data cells
 * (_FillValue, missing_value, NaN: id 0), regionmask-style float masks,
 * the limits on ids, and names tables (raster_mask_set_names_file).
 *
 * Files are written with netCDF-C into a private mkdtemp directory under
 * /tmp that the group teardown removes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>

#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "mask.h"
#include "raster.h"

#include "testutil.h"

/* A non-NULL handle value that must be overwritten with NULL on failure. */
static char sentinel_byte;
#define SENTINEL ((raster_mask *)(void *)&sentinel_byte)

/* test_tmpdir/name, in a buffer the next call overwrites. */
static const char *path_of(const char *name)
{
    static char buf[512];
    tmpdir_path(buf, sizeof buf, name);
    return buf;
}

static int mkdir_or_exists(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("mask");
}

/* What make_file writes: one variable `var` of `type` over `ndims`
 * dimensions (named d0, d1, ...; dims[i] == 0 makes an unlimited one),
 * filled from ivals (via nc_put_var_longlong) or dvals (nc_put_var_double),
 * and optional CF flag attributes. */
typedef struct spec {
    int cmode;
    const char *var;
    nc_type type;
    int ndims;
    size_t dims[3];
    const long long *ivals;
    const double *dvals;
    nc_type flag_type;          /* 0: no flag_values */
    size_t nflags;
    const long long *flag_values;
    const char *flag_meanings;  /* NULL: none */
} spec;

static void make_file(const char *path, const spec *s)
{
    int ncid, dimids[3], varid;
    NC(nc_create(path, s->cmode | NC_CLOBBER, &ncid));
    for (int i = 0; i < s->ndims; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%d", i);
        NC(nc_def_dim(ncid, name, s->dims[i] ? s->dims[i] : NC_UNLIMITED,
                      &dimids[i]));
    }
    NC(nc_def_var(ncid, s->var, s->type, s->ndims, dimids, &varid));
    if (s->flag_type) {
        /* nc_put_att_longlong converts to flag_type */
        NC(nc_put_att_longlong(ncid, varid, "flag_values", s->flag_type,
                               s->nflags, s->flag_values));
    }
    if (s->flag_meanings)
        NC(nc_put_att_text(ncid, varid, "flag_meanings",
                           strlen(s->flag_meanings), s->flag_meanings));
    NC(nc_enddef(ncid));
    size_t n = 1;
    for (int i = 0; i < s->ndims; i++)
        n *= s->dims[i];
    if (n > 0) {
        if (s->type == NC_CHAR) {
            char *text = malloc(n);
            assert_non_null(text);
            memset(text, '1', n);
            NC(nc_put_var_text(ncid, varid, text));
            free(text);
        } else if (s->type == NC_STRING) {
            const char **strs = malloc(n * sizeof *strs);
            assert_non_null(strs);
            for (size_t i = 0; i < n; i++)
                strs[i] = "1";
            NC(nc_put_var_string(ncid, varid, strs));
            free(strs);
        } else if (s->ivals) {
            NC(nc_put_var_longlong(ncid, varid, s->ivals));
        } else if (s->dvals && s->type == NC_FLOAT) {
            /* as float, so that NaN and infinities are stored as such
             * (nc_put_var_double reports NC_ERANGE for them) */
            float *f = malloc(n * sizeof *f);
            assert_non_null(f);
            for (size_t i = 0; i < n; i++)
                f[i] = (float)s->dvals[i];
            NC(nc_put_var_float(ncid, varid, f));
            free(f);
        } else if (s->dvals) {
            NC(nc_put_var_double(ncid, varid, s->dvals));
        }
    }
    NC(nc_close(ncid));
}

/* Loads `var` from `path` expecting failure `code`: *out reset to NULL and
 * a message that contains `needle` (when not NULL). */
static void expect_load_error(const char *path, const char *var, int code,
                              const char *needle)
{
    raster_mask *m = SENTINEL;
    raster_errmsg_clear();
    int rc = raster_mask_load(path, var, &m);
    if (rc != code)
        fail_msg("loading %s:%s: status %d (%s), expected %d; message '%s'",
                 path ? path : "(null)", var ? var : "(null)", rc,
                 raster_strerror(rc), code, raster_errmsg());
    assert_null(m);
    assert_true(strlen(raster_errmsg()) > 0);
    if (needle && !strstr(raster_errmsg(), needle))
        fail_msg("message '%s' lacks '%s'", raster_errmsg(), needle);
}

static raster_mask *load_ok(const char *path, const char *var)
{
    raster_mask *m = SENTINEL;
    int rc = raster_mask_load(path, var, &m);
    if (rc != RASTER_OK)
        fail_msg("loading %s:%s: status %d: %s", path, var, rc,
                 raster_errmsg());
    assert_non_null(m);
    assert_true(m != SENTINEL);
    return m;
}

/* ---- every numeric type ------------------------------------------------ */

typedef struct type_case {
    const char *name;
    int cmode;
    nc_type type;
    int is_float;
    size_t nvals;
    long long ivals[8];
    double dvals[8];
} type_case;

static void check_type_case(const type_case *tc)
{
    enum { NY = 3, NX = 4 };
    long long iv[NY * NX];
    double dv[NY * NX];
    int32_t expect[NY * NX];
    for (size_t i = 0; i < NY * NX; i++) {
        /* every listed value appears, in varying positions */
        size_t k = (i * 5 + 1) % tc->nvals;
        iv[i] = tc->ivals[k];
        dv[i] = tc->dvals[k];
        expect[i] = tc->is_float ? (int32_t)tc->dvals[k]
                                 : (int32_t)tc->ivals[k];
    }
    spec s = {.cmode = tc->cmode, .var = "REGION_MASK", .type = tc->type,
              .ndims = 2, .dims = {NY, NX}};
    if (tc->is_float)
        s.dvals = dv;
    else
        s.ivals = iv;
    char file[64];
    snprintf(file, sizeof file, "type_%s.nc", tc->name);
    make_file(path_of(file), &s);

    raster_mask *m = load_ok(path_of(file), "REGION_MASK");
    size_t ny = 0, nx = 0;
    raster_mask_shape(m, &ny, &nx);
    assert_int_equal(ny, NY);
    assert_int_equal(nx, NX);
    const int32_t *v = raster_mask_values(m);
    assert_non_null(v);
    for (size_t i = 0; i < NY * NX; i++) {
        if (v[i] != expect[i])
            fail_msg("%s: cell %zu = %d, expected %d", tc->name, i, (int)v[i],
                     (int)expect[i]);
    }
    /* no flag attributes: no names */
    assert_null(raster_mask_region_name(m, expect[0]));
    int32_t id = 12345;
    assert_int_equal(raster_mask_region_by_name(m, "Land", &id),
                     RASTER_ENOTFOUND);
    raster_mask_free(m);
}

static void test_load_types(void **state)
{
    (void)state;
    const int nc4 = NC_NETCDF4, classic = 0, cdf5 = NC_64BIT_DATA;
    const type_case cases[] = {
        {"int_nc4", nc4, NC_INT, 0, 6,
         {INT32_MIN, INT32_MAX, 0, -1, 6, -5}, {0}},
        {"int_classic", classic, NC_INT, 0, 6,
         {INT32_MIN, INT32_MAX, 0, -1, 6, -5}, {0}},
        {"short_nc4", nc4, NC_SHORT, 0, 5, {-32768, 32767, 0, -14, 10}, {0}},
        {"short_classic", classic, NC_SHORT, 0, 5,
         {-32768, 32767, 0, -14, 10}, {0}},
        {"byte_nc4", nc4, NC_BYTE, 0, 5, {-128, 127, 0, -1, 2}, {0}},
        {"byte_classic", classic, NC_BYTE, 0, 5, {-128, 127, 0, -1, 2}, {0}},
        {"ubyte_nc4", nc4, NC_UBYTE, 0, 4, {0, 255, 128, 6}, {0}},
        {"ubyte_cdf5", cdf5, NC_UBYTE, 0, 4, {0, 255, 128, 6}, {0}},
        {"ushort_nc4", nc4, NC_USHORT, 0, 3, {0, 65535, 7}, {0}},
        {"uint_nc4", nc4, NC_UINT, 0, 3, {0, INT32_MAX, 11}, {0}},
        {"int64_nc4", nc4, NC_INT64, 0, 5,
         {INT32_MIN, INT32_MAX, 0, -13, 9}, {0}},
        {"int64_cdf5", cdf5, NC_INT64, 0, 5,
         {INT32_MIN, INT32_MAX, 0, -13, 9}, {0}},
        {"uint64_nc4", nc4, NC_UINT64, 0, 4, {0, INT32_MAX, 1, 10}, {0}},
        {"float_nc4", nc4, NC_FLOAT, 1, 6, {0},
         {-16777216.0, 16777216.0, 0.0, -5.0, 6.0, 1e6}},
        {"float_classic", classic, NC_FLOAT, 1, 6, {0},
         {-16777216.0, 16777216.0, 0.0, -5.0, 6.0, 1e6}},
        {"double_nc4", nc4, NC_DOUBLE, 1, 6, {0},
         {-2147483648.0, 2147483647.0, -0.0, 2.0, -14.0, 1e9}},
        {"double_classic", classic, NC_DOUBLE, 1, 6, {0},
         {-2147483648.0, 2147483647.0, -0.0, 2.0, -14.0, 1e9}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_type_case(&cases[i]);
}

/* ---- unusable values --------------------------------------------------- */

/* A 4 x 5 mask of type `type` that is fine except the value `bad` at
 * (by, bx): EMASK with the position "(by, bx)" in the message. */
static void check_bad_value(const char *name, int cmode, nc_type type,
                            int is_float, long long ibad, double dbad,
                            size_t by, size_t bx)
{
    enum { NY = 4, NX = 5 };
    long long iv[NY * NX];
    double dv[NY * NX];
    for (size_t i = 0; i < NY * NX; i++) {
        iv[i] = (long long)(i % 3);
        dv[i] = (double)(i % 3);
    }
    iv[by * NX + bx] = ibad;
    dv[by * NX + bx] = dbad;
    spec s = {.cmode = cmode, .var = "m", .type = type, .ndims = 2,
              .dims = {NY, NX}};
    if (is_float)
        s.dvals = dv;
    else
        s.ivals = iv;
    char file[64], pos[32];
    snprintf(file, sizeof file, "bad_%s.nc", name);
    snprintf(pos, sizeof pos, "(%zu, %zu)", by, bx);
    make_file(path_of(file), &s);
    expect_load_error(path_of(file), "m", RASTER_EMASK, pos);
}

static void test_bad_values(void **state)
{
    (void)state;
    const int nc4 = NC_NETCDF4;
    check_bad_value("float_frac", nc4, NC_FLOAT, 1, 0, 2.5, 1, 2);
    check_bad_value("float_frac_classic", 0, NC_FLOAT, 1, 0, -0.25, 3, 4);
    check_bad_value("float_inf", nc4, NC_FLOAT, 1, 0, INFINITY, 0, 0);
    check_bad_value("double_ninf", nc4, NC_DOUBLE, 1, 0, -INFINITY, 0, 4);
    check_bad_value("double_frac", nc4, NC_DOUBLE, 1, 0, 1.0 + 1e-9, 1, 1);
    check_bad_value("double_big", nc4, NC_DOUBLE, 1, 0, 2147483648.0, 2, 3);
    check_bad_value("double_small", nc4, NC_DOUBLE, 1, 0, -2147483649.0, 0,
                    1);
    check_bad_value("float_big", nc4, NC_FLOAT, 1, 0, 4294967296.0, 3, 3);
    check_bad_value("int64_big", nc4, NC_INT64, 0, (long long)INT32_MAX + 1,
                    0, 0, 3);
    check_bad_value("int64_small", nc4, NC_INT64, 0,
                    (long long)INT32_MIN - 1, 0, 2, 2);
    check_bad_value("int64_huge", nc4, NC_INT64, 0, INT64_MIN, 0, 1, 4);
    check_bad_value("uint64_big", nc4, NC_UINT64, 0, 4294967296LL, 0, 3, 0);
    check_bad_value("uint_big", nc4, NC_UINT, 0, (long long)INT32_MAX + 1, 0,
                    1, 0);
}

/* ---- unusable variables and files -------------------------------------- */

static void test_bad_shapes_and_types(void **state)
{
    (void)state;
    long long vals[2 * 3 * 4];
    for (size_t i = 0; i < 24; i++)
        vals[i] = (long long)i;

    spec one_d = {.cmode = NC_NETCDF4, .var = "m", .type = NC_INT,
                  .ndims = 1, .dims = {7}, .ivals = vals};
    make_file(path_of("rank1.nc"), &one_d);
    expect_load_error(path_of("rank1.nc"), "m", RASTER_EMASK, "1 dim");

    spec three_d = {.cmode = NC_NETCDF4, .var = "m", .type = NC_INT,
                    .ndims = 3, .dims = {2, 3, 4}, .ivals = vals};
    make_file(path_of("rank3.nc"), &three_d);
    expect_load_error(path_of("rank3.nc"), "m", RASTER_EMASK, "3 dim");

    spec scalar = {.cmode = 0, .var = "m", .type = NC_INT, .ndims = 0,
                   .ivals = vals};
    make_file(path_of("rank0.nc"), &scalar);
    expect_load_error(path_of("rank0.nc"), "m", RASTER_EMASK, NULL);

    spec chars = {.cmode = NC_NETCDF4, .var = "m", .type = NC_CHAR,
                  .ndims = 2, .dims = {3, 4}};
    make_file(path_of("char.nc"), &chars);
    expect_load_error(path_of("char.nc"), "m", RASTER_EMASK, NULL);

    spec chars_classic = chars;
    chars_classic.cmode = 0;
    make_file(path_of("char_classic.nc"), &chars_classic);
    expect_load_error(path_of("char_classic.nc"), "m", RASTER_EMASK, NULL);

    spec strings = {.cmode = NC_NETCDF4, .var = "m", .type = NC_STRING,
                    .ndims = 2, .dims = {3, 4}};
    make_file(path_of("string.nc"), &strings);
    expect_load_error(path_of("string.nc"), "m", RASTER_EMASK, NULL);

    /* 2-D but empty: an unlimited dimension with no records */
    spec empty = {.cmode = NC_NETCDF4, .var = "m", .type = NC_INT,
                  .ndims = 2, .dims = {0, 4}};
    make_file(path_of("empty.nc"), &empty);
    expect_load_error(path_of("empty.nc"), "m", RASTER_EMASK, NULL);

    /* missing variable, missing file, not netCDF */
    expect_load_error(path_of("rank1.nc"), "REGION_MASK", RASTER_ENOTFOUND,
                      "REGION_MASK");
    expect_load_error(path_of("no-such-file.nc"), "m", RASTER_ENOTFOUND,
                      "no-such-file.nc");
    FILE *f = fopen(path_of("text.nc"), "w");
    assert_non_null(f);
    fputs("this is not a netCDF file\nREGION_MASK = 1, 2, 3;\n", f);
    fclose(f);
    expect_load_error(path_of("text.nc"), "m", RASTER_ENETCDF, "text.nc");

    /* NULL arguments */
    expect_load_error(NULL, "m", RASTER_EINVAL, NULL);
    expect_load_error(path_of("rank1.nc"), NULL, RASTER_EINVAL, NULL);
    raster_errmsg_clear();
    assert_int_equal(raster_mask_load(path_of("rank1.nc"), "m", NULL),
                     RASTER_EINVAL);
    assert_true(strlen(raster_errmsg()) > 0);
}

/* ---- region names ------------------------------------------------------ */

static const long long pop_values[] = {0, 1, 2, 6, -5};
static const char pop_meanings[] =
    "Land Southern_Ocean Pacific_Ocean Atlantic_Ocean Red_Sea";

static void make_named(const char *file, nc_type flag_type, size_t nflags,
                       const char *meanings)
{
    long long vals[3 * 4] = {0, 1, 2, 6, -5, 0, 1, 2, 6, -5, 0, 0};
    spec s = {.cmode = NC_NETCDF4, .var = "REGION_MASK", .type = NC_INT,
              .ndims = 2, .dims = {3, 4}, .ivals = vals,
              .flag_type = flag_type, .nflags = nflags,
              .flag_values = pop_values, .flag_meanings = meanings};
    make_file(path_of(file), &s);
}

static void test_names(void **state)
{
    (void)state;
    const nc_type flag_types[] = {NC_INT, NC_BYTE, NC_SHORT, NC_INT64};
    for (size_t t = 0; t < 4; t++) {
        make_named("names.nc", flag_types[t], 5, pop_meanings);
        raster_mask *m = load_ok(path_of("names.nc"), "REGION_MASK");
        assert_string_equal(raster_mask_region_name(m, 0), "Land");
        assert_string_equal(raster_mask_region_name(m, 1), "Southern_Ocean");
        assert_string_equal(raster_mask_region_name(m, 2), "Pacific_Ocean");
        assert_string_equal(raster_mask_region_name(m, 6), "Atlantic_Ocean");
        assert_string_equal(raster_mask_region_name(m, -5), "Red_Sea");
        assert_null(raster_mask_region_name(m, 3));
        assert_null(raster_mask_region_name(m, 5));

        int32_t id = 999;
        assert_int_equal(raster_mask_region_by_name(m, "Atlantic_Ocean", &id),
                         RASTER_OK);
        assert_int_equal(id, 6);
        id = 999;
        assert_int_equal(raster_mask_region_by_name(m, "atlantic ocean", &id),
                         RASTER_OK);
        assert_int_equal(id, 6);
        id = 999;
        assert_int_equal(raster_mask_region_by_name(m, "ATLANTIC_ocean", &id),
                         RASTER_OK);
        assert_int_equal(id, 6);
        assert_int_equal(raster_mask_region_by_name(m, "red sea", &id),
                         RASTER_OK);
        assert_int_equal(id, -5);
        assert_int_equal(raster_mask_region_by_name(m, "LAND", &id),
                         RASTER_OK);
        assert_int_equal(id, 0);

        /* no prefix, suffix or partial matches */
        const char *wrong[] = {"atlantic", "Atlantic_Ocean_", "Atlantic_Ocea",
                               "AtlanticOcean", " Land", "", "Arctic"};
        for (size_t k = 0; k < sizeof wrong / sizeof *wrong; k++) {
            id = 999;
            raster_errmsg_clear();
            assert_int_equal(raster_mask_region_by_name(m, wrong[k], &id),
                             RASTER_ENOTFOUND);
            assert_int_equal(id, 999);
            assert_true(strlen(raster_errmsg()) > 0);
        }
        assert_int_equal(raster_mask_region_by_name(m, NULL, &id),
                         RASTER_EINVAL);
        assert_int_equal(raster_mask_region_by_name(m, "Land", NULL),
                         RASTER_EINVAL);
        assert_int_equal(raster_mask_region_by_name(NULL, "Land", &id),
                         RASTER_EINVAL);

        /* the values are still right */
        assert_int_equal(raster_mask_values(m)[3], 6);
        assert_int_equal(raster_mask_values(m)[4], -5);
        raster_mask_free(m);
    }

    /* Meanings separated by runs of blanks, tabs and newlines. */
    make_named("names_ws.nc", NC_INT, 3,
               "  Land\t\tSouthern_Ocean \n Pacific_Ocean  ");
    raster_mask *m = load_ok(path_of("names_ws.nc"), "REGION_MASK");
    assert_string_equal(raster_mask_region_name(m, 0), "Land");
    assert_string_equal(raster_mask_region_name(m, 1), "Southern_Ocean");
    assert_string_equal(raster_mask_region_name(m, 2), "Pacific_Ocean");
    assert_null(raster_mask_region_name(m, 6));
    raster_mask_free(m);
}

/* Names are all or nothing: inconsistent attributes leave the mask unnamed
 * but loadable. */
static void test_names_inconsistent(void **state)
{
    (void)state;
    struct {
        const char *file;
        nc_type type;
        size_t nflags;
        const char *meanings;
    } cases[] = {
        {"fewer_meanings.nc", NC_INT, 5,
         "Land Southern_Ocean Pacific_Ocean Atlantic_Ocean"},
        {"more_meanings.nc", NC_INT, 4, pop_meanings},
        {"no_meanings.nc", NC_INT, 5, NULL},
        {"no_values.nc", 0, 0, pop_meanings},
        {"char_values.nc", NC_CHAR, 5, pop_meanings},
        {"blank_meanings.nc", NC_INT, 5, "   "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].type == NC_CHAR) {
            /* flag_values as text: write by hand */
            long long vals[12] = {0};
            spec s = {.cmode = NC_NETCDF4, .var = "REGION_MASK",
                      .type = NC_INT, .ndims = 2, .dims = {3, 4},
                      .ivals = vals, .flag_meanings = cases[i].meanings};
            make_file(path_of(cases[i].file), &s);
            int ncid, varid;
            NC(nc_open(path_of(cases[i].file), NC_WRITE, &ncid));
            NC(nc_inq_varid(ncid, "REGION_MASK", &varid));
            NC(nc_redef(ncid));
            NC(nc_put_att_text(ncid, varid, "flag_values", 9, "0 1 2 6 5"));
            NC(nc_close(ncid));
        } else {
            make_named(cases[i].file, cases[i].type, cases[i].nflags,
                       cases[i].meanings);
        }
        raster_mask *m = load_ok(path_of(cases[i].file), "REGION_MASK");
        for (size_t k = 0; k < 5; k++)
            if (raster_mask_region_name(m, (int32_t)pop_values[k]))
                fail_msg("%s: region %lld named '%s'", cases[i].file,
                         pop_values[k],
                         raster_mask_region_name(m, (int32_t)pop_values[k]));
        int32_t id;
        assert_int_equal(raster_mask_region_by_name(m, "Land", &id),
                         RASTER_ENOTFOUND);
        size_t ny, nx;
        raster_mask_shape(m, &ny, &nx);
        assert_int_equal(ny, 3);
        assert_int_equal(nx, 4);
        raster_mask_free(m);
    }

    /* A flag value outside int32: no names either. */
    const long long wide[] = {0, 1, 2, 4294967296LL, -5};
    long long vals[12] = {0};
    spec s = {.cmode = NC_NETCDF4, .var = "REGION_MASK", .type = NC_INT,
              .ndims = 2, .dims = {3, 4}, .ivals = vals,
              .flag_type = NC_INT64, .nflags = 5, .flag_values = wide,
              .flag_meanings = pop_meanings};
    make_file(path_of("wide_values.nc"), &s);
    raster_mask *m = load_ok(path_of("wide_values.nc"), "REGION_MASK");
    assert_null(raster_mask_region_name(m, 0));
    assert_null(raster_mask_region_name(m, 1));
    raster_mask_free(m);
}

/* ---- raster_mask_wrap --------------------------------------------------- */

static void test_wrap(void **state)
{
    (void)state;
    int32_t vals[6] = {3, -1, 0, INT32_MIN, INT32_MAX, 7};
    raster_mask *m = SENTINEL;
    assert_int_equal(raster_mask_wrap(vals, 2, 3, &m), RASTER_OK);
    assert_non_null(m);
    assert_true(m != SENTINEL);
    size_t ny = 0, nx = 0;
    raster_mask_shape(m, &ny, &nx);
    assert_int_equal(ny, 2);
    assert_int_equal(nx, 3);
    const int32_t *v = raster_mask_values(m);
    assert_true(v != vals); /* a copy ... */
    vals[0] = 100;          /* ... that later changes do not reach */
    const int32_t expect[6] = {3, -1, 0, INT32_MIN, INT32_MAX, 7};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(v[i], expect[i]);
    assert_null(raster_mask_region_name(m, 3));
    int32_t id;
    assert_int_equal(raster_mask_region_by_name(m, "x", &id),
                     RASTER_ENOTFOUND);
    raster_mask_shape(m, NULL, NULL);
    raster_mask_free(m);
    raster_mask_free(NULL);

    struct {
        const int32_t *values;
        size_t ny, nx;
        int code;
    } bad[] = {
        {NULL, 2, 3, RASTER_EINVAL},
        {vals, 0, 3, RASTER_EINVAL},
        {vals, 2, 0, RASTER_EINVAL},
        /* sizes that overflow: caught before the 6-value array is read */
        {vals, SIZE_MAX / 2, SIZE_MAX / 2, RASTER_EOVERFLOW},
        {vals, 1, SIZE_MAX / 2, RASTER_EOVERFLOW}, /* cells * 4 overflows */
        {vals, SIZE_MAX / 8, 3, RASTER_EOVERFLOW},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        m = SENTINEL;
        raster_errmsg_clear();
        int rc = raster_mask_wrap(bad[i].values, bad[i].ny, bad[i].nx, &m);
        if (rc != bad[i].code)
            fail_msg("bad wrap %zu: status %d, expected %d", i, rc,
                     bad[i].code);
        assert_null(m);
        assert_true(strlen(raster_errmsg()) > 0);
    }
    raster_errmsg_clear();
    assert_int_equal(raster_mask_wrap(vals, 2, 3, NULL), RASTER_EINVAL);
    assert_true(strlen(raster_errmsg()) > 0);

    /* allocation failure while wrapping */
    for (unsigned long n = 1; n <= 2; n++) {
        m = SENTINEL;
        raster_alloc_fail_at(n);
        int rc = raster_mask_wrap(vals, 2, 3, &m);
        raster_alloc_fail_at(0);
        assert_int_equal(rc, RASTER_ENOMEM);
        assert_null(m);
    }
}

/* ---- masks larger than one read block ---------------------------------- */

static int32_t big_value(size_t y, size_t x)
{
    return (int32_t)((y * 1000 + x * 7) % 2003) - 1001;
}

/* 1100 x 1000 = 1.1M cells: more than the 1M-cell (1 << 20) read block, so
 * the loader reads 1048 rows, then 52. */
static void test_large_mask(void **state)
{
    (void)state;
    enum { NY = 1100, NX = 1000 };
    int32_t *vals = malloc((size_t)NY * NX * sizeof *vals);
    float *fvals = malloc((size_t)NY * NX * sizeof *fvals);
    assert_non_null(vals);
    assert_non_null(fvals);
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            fvals[y * NX + x] = (float)(vals[y * NX + x] = big_value(y, x));
    /* a non-integral value in the second block */
    fvals[1050 * NX + 7] = 0.5f;

    int ncid, dims[2], varid, fvarid;
    NC(nc_create(path_of("large.nc"), NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "nlat", NY, &dims[0]));
    NC(nc_def_dim(ncid, "nlon", NX, &dims[1]));
    NC(nc_def_var(ncid, "REGION_MASK", NC_INT, 2, dims, &varid));
    NC(nc_def_var(ncid, "bad", NC_FLOAT, 2, dims, &fvarid));
    NC(nc_enddef(ncid));
    NC(nc_put_var_int(ncid, varid, vals));
    NC(nc_put_var_float(ncid, fvarid, fvals));
    NC(nc_close(ncid));

    raster_mask *m = load_ok(path_of("large.nc"), "REGION_MASK");
    size_t ny, nx;
    raster_mask_shape(m, &ny, &nx);
    assert_int_equal(ny, NY);
    assert_int_equal(nx, NX);
    const int32_t *v = raster_mask_values(m);
    for (size_t i = 0; i < (size_t)NY * NX; i++)
        if (v[i] != vals[i])
            fail_msg("cell (%zu, %zu) = %d, expected %d", i / NX, i % NX,
                     (int)v[i], (int)vals[i]);
    raster_mask_free(m);
    expect_load_error(path_of("large.nc"), "bad", RASTER_EMASK,
                      "(1050, 7)");
    char want[1024];
    snprintf(want, sizeof want, "mask bad in %s: value 0.5 at (1050, 7) is "
             "not an int32 region id: not integral", path_of("large.nc"));
    expect_load_error(path_of("large.nc"), "bad", RASTER_EMASK, want);
    free(vals);
    free(fvals);

    /* Rows wider than the block: 3 x 1100000 bytes, read a row at a time;
     * a bad value in the last row. */
    enum { WY = 3, WX = 1100000 };
    signed char *bytes = malloc((size_t)WY * WX);
    double *dbl = malloc((size_t)WY * WX * sizeof *dbl);
    assert_non_null(bytes);
    assert_non_null(dbl);
    for (size_t i = 0; i < (size_t)WY * WX; i++) {
        bytes[i] = (signed char)((int)(i % 251) - 125);
        dbl[i] = (double)bytes[i];
    }
    dbl[2 * (size_t)WX + 1099999] = 1e12;
    NC(nc_create(path_of("wide.nc"), NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "y", WY, &dims[0]));
    NC(nc_def_dim(ncid, "x", WX, &dims[1]));
    NC(nc_def_var(ncid, "m", NC_BYTE, 2, dims, &varid));
    NC(nc_def_var(ncid, "d", NC_DOUBLE, 2, dims, &fvarid));
    NC(nc_enddef(ncid));
    NC(nc_put_var_schar(ncid, varid, bytes));
    NC(nc_put_var_double(ncid, fvarid, dbl));
    NC(nc_close(ncid));
    m = load_ok(path_of("wide.nc"), "m");
    raster_mask_shape(m, &ny, &nx);
    assert_int_equal(ny, WY);
    assert_int_equal(nx, WX);
    v = raster_mask_values(m);
    for (size_t i = 0; i < (size_t)WY * WX; i++)
        if (v[i] != bytes[i])
            fail_msg("wide cell %zu = %d, expected %d", i, (int)v[i],
                     (int)bytes[i]);
    raster_mask_free(m);
    expect_load_error(path_of("wide.nc"), "d", RASTER_EMASK, "(2, 1099999)");
    /* the message names the file, the variable and the value too */
    char want2[1024];
    snprintf(want2, sizeof want2, "mask d in %s: value 1000000000000 at (2, "
             "1099999) is not an int32 region id: outside the int32 range",
             path_of("wide.nc"));
    expect_load_error(path_of("wide.nc"), "d", RASTER_EMASK, want2);
    free(bytes);
    free(dbl);
}

static const char *write_text(const char *name, const char *text)
{
    FILE *f = fopen(path_of(name), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
    return path_of(name);
}

static void expect_lookup(const raster_mask *m, const char *name, int32_t id)
{
    int32_t got = 12345;
    int rc = raster_mask_region_by_name(m, name, &got);
    if (rc != RASTER_OK || got != id)
        fail_msg("'%s': status %d (%s), id %d, expected %d", name, rc,
                 raster_errmsg(), (int)got, (int)id);
}

/* ---- no-data cells ------------------------------------------------------ */

/* Writes a 3 x 4 mask `var` of `type` from `vals` (as double) into `file`,
 * with a _FillValue (when has_fill) and missing_value (nmiss values of
 * miss_type; 0: none). Returns the file's path (path_of's buffer). */
static const char *make_nodata(const char *file, nc_type type,
                               const double *vals, int has_fill, double fill,
                               nc_type miss_type, size_t nmiss,
                               const double *miss)
{
    int ncid, dims[2], varid;
    NC(nc_create(path_of(file), NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "y", 3, &dims[0]));
    NC(nc_def_dim(ncid, "x", 4, &dims[1]));
    NC(nc_def_var(ncid, "m", type, 2, dims, &varid));
    if (has_fill) {
        /* _FillValue must have the variable's type: via a buffer of it */
        unsigned char buf[8];
        switch (type) {
        case NC_BYTE: *(signed char *)buf = (signed char)fill; break;
        case NC_UBYTE: *buf = (unsigned char)fill; break;
        case NC_SHORT: *(short *)(void *)buf = (short)fill; break;
        case NC_INT: *(int *)(void *)buf = (int)fill; break;
        case NC_INT64: *(long long *)(void *)buf = (long long)fill; break;
        case NC_FLOAT: *(float *)(void *)buf = (float)fill; break;
        default: *(double *)(void *)buf = fill; break;
        }
        NC(nc_put_att(ncid, varid, "_FillValue", type, 1, buf));
    }
    if (nmiss)
        NC(nc_put_att_double(ncid, varid, "missing_value", miss_type, nmiss,
                             miss));
    NC(nc_enddef(ncid));
    if (type == NC_INT64) {
        long long iv[12];
        for (size_t i = 0; i < 12; i++)
            iv[i] = (long long)vals[i];
        NC(nc_put_var_longlong(ncid, varid, iv));
    } else if (type == NC_FLOAT) {
        float fv[12];
        for (size_t i = 0; i < 12; i++)
            fv[i] = (float)vals[i];
        NC(nc_put_var_float(ncid, varid, fv));
    } else {
        NC(nc_put_var_double(ncid, varid, vals));
    }
    NC(nc_close(ncid));
    return path_of(file);
}

/* The mask's cells are `want`, and the mesh built from it knows exactly
 * the ids of `want` (no region for a no-data value). */
static void expect_cells(raster_mask *m, const int32_t *want,
                         int32_t absent)
{
    const int32_t *v = raster_mask_values(m);
    assert_non_null(v);
    for (size_t i = 0; i < 12; i++)
        if (v[i] != want[i])
            fail_msg("cell (%zu, %zu) = %d, expected %d", i / 4, i % 4,
                     (int)v[i], (int)want[i]);
    raster_mesh *mesh = NULL;
    assert_int_equal(raster_mesh_build(v, 3, 4, 3, 4, &mesh), RASTER_OK);
    raster_region_stats st;
    assert_int_equal(raster_mesh_region_stats(mesh, absent, &st),
                     RASTER_ENOTFOUND);
    size_t cells0 = 0;
    for (size_t i = 0; i < 12; i++)
        cells0 += want[i] == 0;
    if (cells0) {
        assert_int_equal(raster_mesh_region_stats(mesh, 0, &st), RASTER_OK);
        assert_int_equal(st.cells, cells0);
    }
    raster_mesh_free(mesh);
}

static void test_nodata(void **state)
{
    (void)state;
    const double F = -2147483647.0; /* NC_FILL_INT, what ncgen leaves */
    /* an int mask with _FillValue cells: they become 0 (POP's land) */
    const double iv[12] = {1, 1, F, 2, 0, F, 2, 2, F, F, 3, 3};
    const int32_t iwant[12] = {1, 1, 0, 2, 0, 0, 2, 2, 0, 0, 3, 3};
    raster_mask *m = load_ok(make_nodata("fill_int.nc", NC_INT, iv, 1, F, 0,
                                         0, NULL), "m");
    expect_cells(m, iwant, -2147483647);
    raster_mask_free(m);

    /* a _FillValue no cell holds changes nothing */
    const double plain[12] = {1, 1, 7, 2, 0, 7, 2, 2, 7, 7, 3, 3};
    const int32_t pwant[12] = {1, 1, 7, 2, 0, 7, 2, 2, 7, 7, 3, 3};
    m = load_ok(make_nodata("fill_unused.nc", NC_INT, plain, 1, -9, 0, 0,
                            NULL), "m");
    expect_cells(m, pwant, -9);
    raster_mask_free(m);

    /* short: _FillValue -1 and a missing_value list {-99, -98} (of another
     * type, as netCDF allows) */
    const double sv[12] = {5, -1, -99, 5, -98, 6, 6, -1, 0, 6, -98, 5};
    const int32_t swant[12] = {5, 0, 0, 5, 0, 6, 6, 0, 0, 6, 0, 5};
    const double smiss[2] = {-99, -98};
    m = load_ok(make_nodata("miss_short.nc", NC_SHORT, sv, 1, -1, NC_INT, 2,
                            smiss), "m");
    expect_cells(m, swant, -99);
    raster_mask_free(m);

    /* missing_value alone, on a ubyte mask (255) */
    const double bv[12] = {255, 1, 1, 255, 2, 2, 2, 2, 255, 1, 1, 1};
    const int32_t bwant[12] = {0, 1, 1, 0, 2, 2, 2, 2, 0, 1, 1, 1};
    const double bmiss = 255;
    m = load_ok(make_nodata("miss_ubyte.nc", NC_UBYTE, bv, 0, 0, NC_UBYTE, 1,
                            &bmiss), "m");
    expect_cells(m, bwant, 255);
    raster_mask_free(m);

    /* int64: NC_FILL_INT64 would be outside int32, but is no data */
    const double lf = -9223372036854775806.0;
    const double lv[12] = {4, 4, lf, 4, 8, 8, lf, 8, 4, 4, 4, 4};
    const int32_t lwant[12] = {4, 4, 0, 4, 8, 8, 0, 8, 4, 4, 4, 4};
    m = load_ok(make_nodata("fill_int64.nc", NC_INT64, lv, 1, lf, 0, 0, NULL),
                "m");
    expect_cells(m, lwant, 4 + 8);
    raster_mask_free(m);

    /* float: _FillValue 1e20f, missing_value 1e20 as double (equal once
     * rounded to float) and NaN */
    const double fv[12] = {1e20, 3, 3, NAN, 3, 1e20, 3, 3, 0, 0, NAN, 3};
    const int32_t fwant[12] = {0, 3, 3, 0, 3, 0, 3, 3, 0, 0, 0, 3};
    const double fmiss = 1e20;
    m = load_ok(make_nodata("fill_float.nc", NC_FLOAT, fv, 1, 1e20, NC_DOUBLE,
                            1, &fmiss), "m");
    expect_cells(m, fwant, 7);
    raster_mask_free(m);

    /* a text missing_value cannot be compared with the cells: refused */
    const char *path = make_nodata("miss_text.nc", NC_INT, plain, 0, 0, 0, 0,
                                   NULL);
    int ncid, varid;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_varid(ncid, "m", &varid));
    NC(nc_redef(ncid));
    NC(nc_put_att_text(ncid, varid, "missing_value", 2, "-1"));
    NC(nc_close(ncid));
    expect_load_error(path, "m", RASTER_EMASK, "missing_value is not numeric");

    /* infinity is not no data: refused, naming the cell */
    const double inf[12] = {1, 1, 1, 1, 1, 1, INFINITY, 1, 1, 1, 1, 1};
    expect_load_error(make_nodata("inf.nc", NC_DOUBLE, inf, 0, 0, 0, 0, NULL),
                      "m", RASTER_EMASK, "value inf at (1, 2)");
}

/* What regionmask's mask() gives, written by xarray: float64, NaN outside
 * every region (and _FillValue NaN), integral region numbers inside,
 * standard_name "region", flag_values (int64) and flag_meanings of the
 * abbreviations. */
static void test_regionmask_style(void **state)
{
    (void)state;
    const double vals[12] = {NAN, 0, 0, NAN, 1, 1, 5, NAN, NAN, 5, 5, NAN};
    const int32_t want[12] = {0, 0, 0, 0, 1, 1, 5, 0, 0, 5, 5, 0};
    const char *path = make_nodata("regionmask.nc", NC_DOUBLE, vals, 1, NAN,
                                   0, 0, NULL);
    int ncid, varid;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_varid(ncid, "m", &varid));
    NC(nc_redef(ncid));
    NC(nc_put_att_text(ncid, varid, "standard_name", 6, "region"));
    const long long flags[3] = {0, 1, 5};
    NC(nc_put_att_longlong(ncid, varid, "flag_values", NC_INT64, 3, flags));
    const char *meanings = "NWN NEN S.Asia";
    NC(nc_put_att_text(ncid, varid, "flag_meanings", strlen(meanings),
                       meanings));
    NC(nc_close(ncid));
    raster_mask *m = load_ok(path, "m");
    /* region 0 (NWN) and the NaN cells merge: what the mask says */
    expect_cells(m, want, 2);
    assert_string_equal(raster_mask_region_name(m, 5), "S.Asia");
    int32_t id = -1;
    assert_int_equal(raster_mask_region_by_name(m, "nen", &id), RASTER_OK);
    assert_int_equal(id, 1);
    raster_mask_free(m);

    /* a fractional value among the NaNs: refused, naming file, variable,
     * cell and value */
    const double frac[12] = {NAN, 0, 0, NAN, 1, 1, 5, NAN, NAN, 5, 2.25, NAN};
    path = make_nodata("regionmask_frac.nc", NC_DOUBLE, frac, 1, NAN, 0, 0,
                       NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "mask m in %s: value 2.25 at (2, 2) is not an "
             "int32 region id: not integral", path);
    expect_load_error(path, "m", RASTER_EMASK, msg);
    /* and one outside int32 */
    const double big[12] = {NAN, 0, 0, 3e9, 1, 1, 5, NAN, NAN, 5, 5, NAN};
    path = make_nodata("regionmask_big.nc", NC_DOUBLE, big, 1, NAN, 0, 0,
                       NULL);
    snprintf(msg, sizeof msg, "mask m in %s: value 3000000000 at (0, 3) is "
             "not an int32 region id: outside the int32 range", path);
    expect_load_error(path, "m", RASTER_EMASK, msg);
}

/* More than RASTER_MASK_MAX_IDS distinct ids: refused at the first id too
 * many; exactly that many load. */
static void test_too_many_ids(void **state)
{
    (void)state;
    enum { NY = 1025, NX = 1024 };
    int32_t *vals = malloc((size_t)NY * NX * sizeof *vals);
    assert_non_null(vals);
    for (size_t i = 0; i < (size_t)NY * NX; i++)
        vals[i] = (int32_t)i - 5; /* negative ids too */
    int ncid, dims[2], varid, okid;
    NC(nc_create(path_of("many.nc"), NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "y", NY, &dims[0]));
    NC(nc_def_dim(ncid, "x", NX, &dims[1]));
    NC(nc_def_var(ncid, "many", NC_INT, 2, dims, &varid));
    NC(nc_def_var(ncid, "limit", NC_INT, 2, dims, &okid));
    NC(nc_enddef(ncid));
    NC(nc_put_var_int(ncid, varid, vals));
    /* the last row repeats -5: 2^20 distinct ids */
    for (size_t i = (size_t)RASTER_MASK_MAX_IDS; i < (size_t)NY * NX; i++)
        vals[i] = -5;
    NC(nc_put_var_int(ncid, okid, vals));
    NC(nc_close(ncid));
    expect_load_error(path_of("many.nc"), "many", RASTER_EMASK,
                      "more than 1048576 distinct region ids");
    expect_load_error(path_of("many.nc"), "many", RASTER_EMASK,
                      "(1024, 0)");
    raster_mask *m = load_ok(path_of("many.nc"), "limit");
    const int32_t *v = raster_mask_values(m);
    for (size_t i = 0; i < (size_t)NY * NX; i++)
        if (v[i] != vals[i])
            fail_msg("cell %zu = %d, expected %d", i, (int)v[i],
                     (int)vals[i]);
    raster_mask_free(m);
    free(vals);
}

/* ---- names tables -------------------------------------------------------- */

/* raster_mask_set_names_file(m, table) fails with `code` and a message
 * holding `needle`, leaving m's names as they were (Atlantic_Ocean = 6). */
static void expect_table_error(raster_mask *m, const char *table, int code,
                               const char *needle)
{
    raster_errmsg_clear();
    int rc = raster_mask_set_names_file(m, table);
    if (rc != code)
        fail_msg("%s: status %d (%s), expected %d", table, rc,
                 raster_errmsg(), code);
    if (needle && !strstr(raster_errmsg(), needle))
        fail_msg("%s: message '%s' lacks '%s'", table, raster_errmsg(),
                 needle);
    expect_lookup(m, "Atlantic_Ocean", 6);
    assert_string_equal(raster_mask_region_name(m, -5), "Red_Sea");
}

static void test_names_table(void **state)
{
    (void)state;
    make_named("table_mask.nc", NC_INT, 5, pop_meanings);
    raster_mask *m = load_ok(path_of("table_mask.nc"), "REGION_MASK");

    /* a BOM, a header, comments, CRLF, quotes, spaces, an id the mask
     * lacks, abbreviations (one empty) */
    const char *good = write_text("good.csv",
        "\xEF\xBB\xBFid,name,abbrev\r\n"
        "# provinces of the test grid\r\n"
        "\r\n"
        "0, Hubei , HB\r\n"
        "1,\"Hunan, south\",HN   # a comment\r\n"
        "  2 ,Inner Mongolia,\r\n"
        "6,\"The \"\"Quoted\"\" One\",Q1\r\n"
        "-5,Red_Sea\r\n"
        "42,Not In The Mask,NX\r\n");
    assert_int_equal(raster_mask_set_names_file(m, good), RASTER_OK);
    assert_string_equal(raster_mask_region_name(m, 0), "Hubei");
    assert_string_equal(raster_mask_region_name(m, 1), "Hunan, south");
    assert_string_equal(raster_mask_region_name(m, 2), "Inner Mongolia");
    assert_string_equal(raster_mask_region_name(m, 6), "The \"Quoted\" One");
    assert_string_equal(raster_mask_region_name(m, -5), "Red_Sea");
    assert_string_equal(raster_mask_region_abbrev(m, 0), "HB");
    assert_string_equal(raster_mask_region_abbrev(m, 1), "HN");
    assert_null(raster_mask_region_abbrev(m, 2));
    assert_null(raster_mask_region_abbrev(m, -5));
    assert_null(raster_mask_region_abbrev(m, 3));
    expect_lookup(m, "hubei", 0);
    expect_lookup(m, "HB", 0);
    expect_lookup(m, "hn", 1);
    expect_lookup(m, "Inner Mongolia", 2);
    expect_lookup(m, "inner_mongolia", 2);
    expect_lookup(m, "red sea", -5);
    expect_lookup(m, "q1", 6);
    expect_lookup(m, "not in the mask", 42);
    /* the file's names are gone: the table replaces them */
    int32_t id = 77;
    assert_int_equal(raster_mask_region_by_name(m, "Atlantic_Ocean", &id),
                     RASTER_ENOTFOUND);
    assert_int_equal(id, 77);
    /* the values are untouched */
    assert_int_equal(raster_mask_values(m)[3], 6);
    raster_mask_free(m);

    /* no header, two columns */
    m = load_ok(path_of("table_mask.nc"), "REGION_MASK");
    assert_int_equal(raster_mask_set_names_file(m, write_text("plain.csv",
                         "6,Hubei\n2,Hunan")), RASTER_OK);
    expect_lookup(m, "Hubei", 6);
    expect_lookup(m, "Hunan", 2);
    assert_null(raster_mask_region_name(m, 0));
    raster_mask_free(m);

    /* errors: each leaves the file's names in place */
    m = load_ok(path_of("table_mask.nc"), "REGION_MASK");
    struct {
        const char *file, *text;
        const char *needle;
    } bad[] = {
        {"dup_id.csv", "id,name\n1,A\n2,B\n# x\n1,C\n",
         "region id 1 is given twice (lines 2 and 5)"},
        {"dup_name.csv", "1,Inner Mongolia\n2,B\n3,inner_MONGOLIA\n",
         "regions 1 (line 1) and 3 (line 3) share the name 'inner mongolia'"},
        {"dup_abbrev.csv", "1,A,X\n2,B,x\n", "share the name 'x'"},
        {"name_abbrev.csv", "1,A,B\n2,B\n", "share the name 'b'"},
        {"one_field.csv", "1,A\n2\n", "line 2: one field"},
        {"four_fields.csv", "1,A,B,C\n", "line 1: more than three fields"},
        {"bad_id.csv", "id,name\n1,A\nx2,B\n", "line 3: id 'x2' is not"},
        {"big_id.csv", "1,A\n2147483648,B\n", "line 2: id '2147483648'"},
        {"frac_id.csv", "1,A\n2.5,B\n", "line 2: id '2.5'"},
        {"quote.csv", "1,A\n2,\"B\n", "line 2: an unterminated quote"},
        {"after_quote.csv", "1,\"A\"x\n", "line 1: an unterminated quote or "
                                           "text after a closing quote"},
        {"empty_name.csv", "1,A\n2,,B\n", "line 2: region 2 has an empty name"},
        {"numeric_name.csv", "1,A\n2,17\n", "line 2: name '17' is a number"},
        {"numeric_abbrev.csv", "1,A,-3\n", "abbreviation '-3' is a number"},
        {"empty.csv", "# nothing\n\n", "names no region"},
        {"header_only.csv", "id,name\n", "names no region"},
        {"nul.csv", NULL, "not text"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path;
        if (bad[i].text) {
            path = write_text(bad[i].file, bad[i].text);
        } else {
            FILE *f = fopen(path_of(bad[i].file), "wb");
            assert_non_null(f);
            fwrite("1,A\0\n", 1, 5, f);
            fclose(f);
            path = path_of(bad[i].file);
        }
        char needle[1024];
        snprintf(needle, sizeof needle, "names table %s", path);
        expect_table_error(m, path, RASTER_EINVAL, needle);
        expect_table_error(m, path, RASTER_EINVAL, bad[i].needle);
    }
    expect_table_error(m, path_of("no-such.csv"), RASTER_ENOTFOUND,
                       "no-such.csv");
    assert_int_equal(mkdir_or_exists(path_of("a_dir.csv")), 0);
    expect_table_error(m, path_of("a_dir.csv"), RASTER_EIO, "a_dir.csv");
    assert_int_equal(rmdir(path_of("a_dir.csv")), 0); /* teardown unlinks */
    expect_table_error(m, NULL, RASTER_EINVAL, NULL);
    assert_int_equal(raster_mask_set_names_file(NULL, path_of("good.csv")),
                     RASTER_EINVAL);
    raster_mask_free(m);
}

/* A word flag_meanings repeats names two regions: looking it up is an
 * error naming both, never the first of them silently. */
static void test_ambiguous_meanings(void **state)
{
    (void)state;
    long long vals[12] = {0, 1, 2, 6, -5, 0, 1, 2, 6, -5, 0, 0};
    spec s = {.cmode = NC_NETCDF4, .var = "REGION_MASK", .type = NC_INT,
              .ndims = 2, .dims = {3, 4}, .ivals = vals, .flag_type = NC_INT,
              .nflags = 5, .flag_values = pop_values,
              .flag_meanings = "Land Ocean Ocean Atlantic land"};
    make_file(path_of("ambiguous.nc"), &s);
    raster_mask *m = load_ok(path_of("ambiguous.nc"), "REGION_MASK");
    int32_t id = 99;
    raster_errmsg_clear();
    assert_int_equal(raster_mask_region_by_name(m, "ocean", &id),
                     RASTER_EINVAL);
    assert_int_equal(id, 99);
    assert_non_null(strstr(raster_errmsg(), "regions 1 and 2 both have it"));
    assert_int_equal(raster_mask_region_by_name(m, "LAND", &id),
                     RASTER_EINVAL);
    assert_non_null(strstr(raster_errmsg(), "regions 0 and -5"));
    expect_lookup(m, "atlantic", 6);
    /* the ids still name their regions */
    assert_string_equal(raster_mask_region_name(m, 2), "Ocean");
    raster_mask_free(m);
}

/* ---- allocation failure ------------------------------------------------ */

static void load_failure_loop(const char *path, const char *var,
                              int expect_names)
{
    unsigned long n;
    raster_mask *m = NULL;
    for (n = 1; n < 100000; n++) {
        m = SENTINEL;
        raster_alloc_fail_at(n);
        int rc = raster_mask_load(path, var, &m);
        unsigned long made = raster_alloc_count();
        raster_alloc_fail_at(0);
        if (rc == RASTER_OK) {
            if (made != n - 1)
                fail_msg("%s: failing allocation %lu of %lu was ignored",
                         path, n, made);
            break;
        }
        if (rc != RASTER_ENOMEM)
            fail_msg("%s: allocation %lu failed: status %d (%s): %s", path,
                     n, rc, raster_strerror(rc), raster_errmsg());
        assert_null(m);
    }
    assert_non_null(m);
    assert_true(n > 2);
    if (expect_names) {
        assert_string_equal(raster_mask_region_name(m, 6), "Atlantic_Ocean");
        assert_string_equal(raster_mask_region_name(m, -5), "Red_Sea");
    }
    assert_int_equal(raster_mask_values(m)[3], 6);
    raster_mask_free(m);
}

static void test_load_alloc_failure(void **state)
{
    (void)state;
    make_named("alloc_names.nc", NC_INT, 5, pop_meanings);
    load_failure_loop(path_of("alloc_names.nc"), "REGION_MASK", 1);
    /* inconsistent names: the name arrays are allocated, then dropped */
    make_named("alloc_fewer.nc", NC_INT, 5, "Land Southern_Ocean");
    load_failure_loop(path_of("alloc_fewer.nc"), "REGION_MASK", 0);

    /* a names table: every failure leaves the file's names in place */
    char table[512];
    snprintf(table, sizeof table, "%s", write_text("alloc.csv",
             "id,name,abbrev\n6,Hubei Province,HB\n2,Hunan\n"));
    raster_mask *m = load_ok(path_of("alloc_names.nc"), "REGION_MASK");
    unsigned long n;
    for (n = 1; n < 100000; n++) {
        raster_alloc_fail_at(n);
        int rc = raster_mask_set_names_file(m, table);
        raster_alloc_fail_at(0);
        if (rc == RASTER_OK)
            break;
        if (rc != RASTER_ENOMEM)
            fail_msg("allocation %lu failed: status %d: %s", n, rc,
                     raster_errmsg());
        expect_lookup(m, "Atlantic_Ocean", 6);
    }
    assert_true(n > 5);
    expect_lookup(m, "hubei province", 6);
    expect_lookup(m, "hb", 6);
    raster_mask_free(m);
}

/* Deflated int masks are inflated from their chunks (mask.c,
 * load_ints_direct): every value as netCDF reads it, edge chunks that
 * reach past the grid included, shuffled or not, with a _FillValue cell
 * and a negative id; a big-endian, an unfiltered and a short mask go the
 * netCDF way, with the same values. */
static void test_deflated_direct(void **state)
{
    (void)state;
    enum { NY = 23, NX = 17 };
    static int32_t vals[NY * NX], got[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        vals[i] = (int32_t)((i * 7919) % 11) - 3;
    vals[5] = -999; /* the _FillValue: region 0 */
    struct {
        const char *name;
        int shuffle, deflate, endian, type, direct;
    } cases[] = {
        {"dfl_shuf.nc", 1, 9, NC_ENDIAN_NATIVE, NC_INT, 1},
        {"dfl.nc", 0, 1, NC_ENDIAN_NATIVE, NC_INT, 1},
        {"dfl_big.nc", 1, 5, NC_ENDIAN_BIG, NC_INT, 0},
        {"plain.nc", 0, 0, NC_ENDIAN_NATIVE, NC_INT, 0},
        {"dfl_short.nc", 1, 5, NC_ENDIAN_NATIVE, NC_SHORT, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int ncid, dims[2], varid, fill = -999;
        size_t ck[2] = {5, 4}; /* 23 x 17: partial chunks at both edges */
        NC(nc_create(path_of(cases[c].name), NC_NETCDF4 | NC_CLOBBER,
                     &ncid));
        NC(nc_def_dim(ncid, "nlat", NY, &dims[0]));
        NC(nc_def_dim(ncid, "nlon", NX, &dims[1]));
        NC(nc_def_var(ncid, "REGION_MASK", cases[c].type, 2, dims, &varid));
        NC(nc_def_var_chunking(ncid, varid, NC_CHUNKED, ck));
        if (cases[c].deflate)
            NC(nc_def_var_deflate(ncid, varid, cases[c].shuffle, 1,
                                  cases[c].deflate));
        NC(nc_def_var_endian(ncid, varid, cases[c].endian));
        if (cases[c].type == NC_INT)
            NC(nc_put_att_int(ncid, varid, "_FillValue", NC_INT, 1, &fill));
        NC(nc_enddef(ncid));
        NC(nc_put_var_int(ncid, varid, vals));
        NC(nc_close(ncid));
        size_t before = mask_direct_loads();
        raster_mask *m = load_ok(path_of(cases[c].name), "REGION_MASK");
        assert_int_equal(mask_direct_loads() - before, cases[c].direct);
        NC(nc_open(path_of(cases[c].name), NC_NOWRITE, &ncid));
        NC(nc_get_var_int(ncid, 0, got));
        NC(nc_close(ncid));
        const int32_t *v = raster_mask_values(m);
        for (size_t i = 0; i < NY * NX; i++) {
            int32_t want = cases[c].type == NC_INT && got[i] == fill
                               ? 0 : got[i];
            if (v[i] != want)
                fail_msg("%s: cell (%zu, %zu) = %d, netCDF %d",
                         cases[c].name, i / NX, i % NX, (int)v[i],
                         (int)got[i]);
        }
        raster_mask_free(m);
    }
    /* a chunk's stored bytes damaged: the direct read gives up, netCDF
     * reads it and reports the damage (docs/BAD_INPUTS.md E35) */
    hid_t f = H5Fopen(path_of("dfl_shuf.nc"), H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t d = H5Dopen2(f, "/REGION_MASK", H5P_DEFAULT);
    assert_true(d >= 0);
    hsize_t off[2] = {10, 8}, size = 0;
    haddr_t addr = HADDR_UNDEF;
    unsigned fm = 0;
    assert_true(H5Dget_chunk_info_by_coord(d, off, &fm, &addr, &size) >= 0);
    assert_true(addr != HADDR_UNDEF && size > 4);
    H5Dclose(d);
    H5Fclose(f);
    FILE *fp = fopen(path_of("dfl_shuf.nc"), "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, (long)addr + 2, SEEK_SET), 0);
    for (hsize_t i = 2; i < size; i++)
        fputc(0x5a, fp);
    assert_int_equal(fclose(fp), 0);
    size_t before = mask_direct_loads();
    expect_load_error(path_of("dfl_shuf.nc"), "REGION_MASK", RASTER_ENETCDF,
                      "HDF error");
    assert_int_equal(mask_direct_loads(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_types),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_bad_shapes_and_types),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_names_inconsistent),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_large_mask),
        cmocka_unit_test(test_deflated_direct),
        cmocka_unit_test(test_load_alloc_failure),
        cmocka_unit_test(test_nodata),
        cmocka_unit_test(test_regionmask_style),
        cmocka_unit_test(test_too_many_ids),
        cmocka_unit_test(test_names_table),
        cmocka_unit_test(test_ambiguous_meanings),
    };
    return cmocka_run_group_tests_name("mask", tests, setup_dir,
                                       tmpdir_remove);
}
