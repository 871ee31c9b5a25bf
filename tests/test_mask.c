/*
 * test_mask.c - unit tests of region masks (src/mask.c): loading 2-D mask
 * variables of every netCDF numeric type from netCDF-4 and classic files,
 * the errors for unusable masks and files, CF region names
 * (flag_values / flag_meanings), raster_mask_wrap, a mask larger than the
 * loader's read block, and allocation failure while loading.
 *
 * Files are written with netCDF-C into a private mkdtemp directory under
 * /tmp that the group teardown removes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
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
    check_bad_value("float_nan", nc4, NC_FLOAT, 1, 0, NAN, 2, 0);
    check_bad_value("float_inf", nc4, NC_FLOAT, 1, 0, INFINITY, 0, 0);
    check_bad_value("double_nan", nc4, NC_DOUBLE, 1, 0, NAN, 3, 1);
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
    free(bytes);
    free(dbl);
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
        cmocka_unit_test(test_load_alloc_failure),
    };
    return cmocka_run_group_tests_name("mask", tests, setup_dir,
                                       tmpdir_remove);
}
