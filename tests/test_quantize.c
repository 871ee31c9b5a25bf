/*
 * test_quantize.c - unit tests of src/base/quantize.c against netCDF itself:
 * for each quantize mode, float and double, several nsd, with and without
 * a _FillValue (also NaN), the values one nc_put_vara stores through a
 * variable with nc_def_var_quantize equal quantize_buffer's bit for bit
 * (zeros of both signs, subnormals, extremes, NaN with payloads, Inf, fill
 * values); writes starting mid-variable (BitGroom's parity follows the
 * buffer); nc_put_varm's rows; the copy leaves its source alone; and
 * the settings netCDF refuses are refused alike.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "quantize.h"
#include "raster.h"

#include "testutil.h"

#define NVAL 64 /* values per buffer */
#define PAD 5   /* variable length beyond the buffer */

static const int modes[] = {NC_QUANTIZE_BITGROOM, NC_QUANTIZE_GRANULARBR,
                            NC_QUANTIZE_BITROUND};
/* digits (BitGroom, Granular BitRound), bits (BitRound) */
static const int nsd_flt_digits[] = {1, 2, 3, 6, 7};
static const int nsd_dbl_digits[] = {1, 3, 6, 7, 10, 14, 15};
static const int nsd_flt_bits[] = {1, 3, 7, 12, 22, 23};
static const int nsd_dbl_bits[] = {1, 3, 15, 30, 51, 52};

enum { FILL_DEFAULT, FILL_CUSTOM, FILL_NAN, NFILLS };
static const float custom_fill_f = -999.0f;
static const double custom_fill_d = -999.0;

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("quantize");
}

static float f_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double d_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* NVAL floats: the corner cases first, then random bit patterns (some of
 * them NaN) and random values of every magnitude. */
static void float_data(float *v)
{
    const float fixed[] = {
        0.0f, -0.0f, 1.0f, -1.0f, 3.14159265f, -2.718281828f, 0.1f,
        123456.789f, 9.9999999f, 1e-30f, -1e30f, FLT_MIN, -FLT_MIN,
        1e-40f /* subnormal */, f_bits(1u) /* smallest subnormal */,
        f_bits(0x807fffffu), FLT_MAX, -FLT_MAX, NAN, -NAN,
        f_bits(0x7f800001u) /* NaN, payload in the low bit only */,
        f_bits(0x7fffffffu), f_bits(0xffbfffffu), INFINITY, -INFINITY,
        NC_FILL_FLOAT, -NC_FILL_FLOAT, custom_fill_f, 0.0f, 1.0f};
    size_t nf = sizeof fixed / sizeof fixed[0], i;
    memcpy(v, fixed, sizeof fixed);
    for (i = nf; i < NVAL; i++) {
        if (i % 2)
            v[i] = f_bits((uint32_t)rng_next());
        else
            v[i] = (float)ldexp((double)(rng_next() >> 11) / 9007199254740992.0,
                                (int)rng_range(0, 260) - 140) *
                   (rng_next() & 1 ? -1.0f : 1.0f);
    }
}

static void double_data(double *v)
{
    const double fixed[] = {
        0.0, -0.0, 1.0, -1.0, 3.141592653589793, -2.718281828459045, 0.1,
        123456.789, 9.99999999999999, 1e-300, -1e300, DBL_MIN, -DBL_MIN,
        1e-310 /* subnormal */, d_bits(1u), FLT_MAX, DBL_MAX, -DBL_MAX, NAN,
        -NAN, d_bits(0x7ff0000000000001ull), d_bits(0x7fffffffffffffffull),
        INFINITY, -INFINITY, NC_FILL_DOUBLE, NC_FILL_FLOAT, custom_fill_d,
        (double)custom_fill_f, 0.0, 1.0};
    size_t nf = sizeof fixed / sizeof fixed[0], i;
    memcpy(v, fixed, sizeof fixed);
    for (i = nf; i < NVAL; i++) {
        if (i % 2)
            v[i] = d_bits(rng_next());
        else
            v[i] = ldexp((double)(rng_next() >> 11) / 9007199254740992.0,
                         (int)rng_range(0, 2100) - 1060) *
                   (rng_next() & 1 ? -1.0 : 1.0);
    }
}

/* The fill value of variant `fv` in type xtype into buf; NULL for the
 * default (no _FillValue attribute). */
static const void *fill_of(int xtype, int fv, unsigned char *buf)
{
    if (fv == FILL_DEFAULT)
        return NULL;
    if (xtype == NC_FLOAT) {
        float f = fv == FILL_CUSTOM ? custom_fill_f : NAN;
        memcpy(buf, &f, sizeof f);
    } else {
        double d = fv == FILL_CUSTOM ? custom_fill_d : NAN;
        memcpy(buf, &d, sizeof d);
    }
    return buf;
}

/* What netCDF stores for in[0..n) written by one nc_put_vara at `off` of
 * a quantized variable of length off + n + PAD: read back into out. */
static void netcdf_stores(int xtype, int mode, int nsd, const void *fill,
                          const void *in, size_t n, size_t off, void *out)
{
    char path[512];
    int ncid, dim, var;
    size_t elem = xtype == NC_FLOAT ? 4 : 8;
    unsigned char copy[NVAL * 8];
    tmpdir_path(path, sizeof path, "q.nc");
    NC(nc_create(path, NC_CLOBBER | NC_NETCDF4 | NC_DISKLESS, &ncid));
    NC(nc_def_dim(ncid, "x", off + n + PAD, &dim));
    NC(nc_def_var(ncid, "v", xtype, 1, &dim, &var));
    if (fill)
        NC(nc_def_var_fill(ncid, var, NC_FILL, fill));
    NC(nc_def_var_quantize(ncid, var, mode, nsd));
    NC(nc_enddef(ncid));
    memcpy(copy, in, n * elem);
    size_t start = off, count = n;
    NC(nc_put_vara(ncid, var, &start, &count, copy));
    NC(nc_get_vara(ncid, var, &start, &count, out));
    NC(nc_close(ncid));
}

/* Bit equality, naming the first value that differs. */
static void assert_same_bits(int xtype, const void *in, const void *want,
                             const void *got, size_t n, const char *what)
{
    size_t elem = xtype == NC_FLOAT ? 4 : 8;
    if (memcmp(want, got, n * elem) == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = 0, b = 0, c = 0;
        memcpy(&a, (const char *)in + i * elem, elem);
        memcpy(&b, (const char *)want + i * elem, elem);
        memcpy(&c, (const char *)got + i * elem, elem);
        if (b != c)
            fail_msg("%s: value %zu (bits %#llx): netCDF stores %#llx, "
                     "quantize_buffer %#llx",
                     what, i, (unsigned long long)a, (unsigned long long)b,
                     (unsigned long long)c);
    }
}

/* Every nsd of mode for xtype, every fill variant, at offsets 0, 1, 4, 7:
 * netCDF's stored bits equal quantize_buffer's on the same buffer. */
static void check_type(int xtype)
{
    unsigned char in[NVAL * 8], want[NVAL * 8], got[NVAL * 8], fb[8];
    size_t elem = xtype == NC_FLOAT ? 4 : 8;
    const size_t offs[] = {0, 1, 4, 7};
    size_t ncase = 0;
    rng_seed(20211003u + (uint64_t)xtype);
    for (size_t m = 0; m < 3; m++) {
        int mode = modes[m];
        const int *nsds;
        size_t nn;
        if (mode == NC_QUANTIZE_BITROUND) {
            nsds = xtype == NC_FLOAT ? nsd_flt_bits : nsd_dbl_bits;
            nn = xtype == NC_FLOAT ? sizeof nsd_flt_bits / sizeof(int)
                                   : sizeof nsd_dbl_bits / sizeof(int);
        } else {
            nsds = xtype == NC_FLOAT ? nsd_flt_digits : nsd_dbl_digits;
            nn = xtype == NC_FLOAT ? sizeof nsd_flt_digits / sizeof(int)
                                   : sizeof nsd_dbl_digits / sizeof(int);
        }
        for (size_t k = 0; k < nn; k++)
            for (int fv = 0; fv < NFILLS; fv++)
                for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
                    if (xtype == NC_FLOAT)
                        float_data((float *)(void *)in);
                    else
                        double_data((double *)(void *)in);
                    const void *fill = fill_of(xtype, fv, fb);
                    netcdf_stores(xtype, mode, nsds[k], fill, in, NVAL,
                                  offs[o], want);
                    memcpy(got, in, NVAL * elem);
                    RS(quantize_buffer(xtype, mode, nsds[k], got, NVAL,
                                       fill));
                    char what[128];
                    snprintf(what, sizeof what,
                             "%s mode %d nsd %d fill %d offset %zu",
                             xtype == NC_FLOAT ? "float" : "double", mode,
                             nsds[k], fv, offs[o]);
                    assert_same_bits(xtype, in, want, got, NVAL, what);
                    /* something happened: not a no-op that matches a
                     * no-op netCDF (BitRound at all bits excepted) */
                    int all_bits = mode == NC_QUANTIZE_BITROUND &&
                                   nsds[k] == (xtype == NC_FLOAT ? 23 : 52);
                    if (!all_bits)
                        assert_true(memcmp(in, got, NVAL * elem) != 0);
                    ncase++;
                }
    }
    assert_true(ncase > 100);
}

static void test_float_bits(void **state)
{
    (void)state;
    check_type(NC_FLOAT);
}

static void test_double_bits(void **state)
{
    (void)state;
    check_type(NC_DOUBLE);
}

/* A write starting at an odd index of the variable: netCDF grooms by the
 * index in the call's buffer (the first value is shaved), not by the
 * index in the variable. Two puts of one variable, halves of odd length. */
static void test_parity_follows_buffer(void **state)
{
    (void)state;
    float in[NVAL], want[NVAL], got[NVAL], byvar[NVAL + 1];
    rng_seed(7);
    for (size_t i = 0; i < NVAL; i++) /* no zeros, no specials */
        in[i] = (float)(1.0 + (double)rng_below(1000000) / 7.0);
    char path[512];
    int ncid, dim, var;
    tmpdir_path(path, sizeof path, "parity.nc");
    NC(nc_create(path, NC_CLOBBER | NC_NETCDF4, &ncid));
    NC(nc_def_dim(ncid, "x", NVAL, &dim));
    NC(nc_def_var(ncid, "v", NC_FLOAT, 1, &dim, &var));
    NC(nc_def_var_quantize(ncid, var, NC_QUANTIZE_BITGROOM, 3));
    NC(nc_enddef(ncid));
    size_t s0 = 0, c0 = 13, s1 = 13, c1 = NVAL - 13;
    NC(nc_put_vara_float(ncid, var, &s0, &c0, in));
    NC(nc_put_vara_float(ncid, var, &s1, &c1, in + 13));
    NC(nc_close(ncid));
    NC(nc_open(path, NC_NOWRITE, &ncid));
    NC(nc_get_var_float(ncid, var, want));
    NC(nc_close(ncid));

    memcpy(got, in, sizeof in);
    RS(quantize_buffer(NC_FLOAT, NC_QUANTIZE_BITGROOM, 3, got, 13, NULL));
    RS(quantize_buffer(NC_FLOAT, NC_QUANTIZE_BITGROOM, 3, got + 13,
                       NVAL - 13, NULL));
    assert_same_bits(NC_FLOAT, in, want, got, NVAL, "two puts");

    /* by the variable's index the second put would differ */
    memcpy(byvar, in, sizeof in);
    RS(quantize_buffer(NC_FLOAT, NC_QUANTIZE_BITGROOM, 3, byvar, NVAL, NULL));
    assert_true(memcmp(byvar + 13, want + 13, (NVAL - 13) * sizeof(float)) !=
                0);
}

/* nc_put_varm quantizes what it puts: each innermost row when the last
 * dimension's stride and imap are 1 (one nc_put_vara per row), else each
 * value alone, even for the natural imap; quantize_copy's `run` says so.
 * Rows of odd length (5), so that rows and the whole buffer differ. */
static void test_varm_runs(void **state)
{
    (void)state;
    enum { NY = 3, NX = 5 };
    float in[NY * NX], want[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        in[i] = 1.0f + (float)i / 7.0f;
    char path[512];
    int ncid, dims[2], var;
    tmpdir_path(path, sizeof path, "varm.nc");
    NC(nc_create(path, NC_CLOBBER | NC_NETCDF4 | NC_DISKLESS, &ncid));
    NC(nc_def_dim(ncid, "y", NY, &dims[0]));
    NC(nc_def_dim(ncid, "x", NX, &dims[1]));
    NC(nc_def_var(ncid, "v", NC_FLOAT, 2, dims, &var));
    NC(nc_def_var_quantize(ncid, var, NC_QUANTIZE_BITGROOM, 2));
    NC(nc_enddef(ncid));
    const size_t start[2] = {0, 0}, count[2] = {NY, NX};
    const ptrdiff_t one[2] = {1, 1}, natural[2] = {NX, 1},
                    transposed[2] = {1, NY};
    float tin[NY * NX]; /* in, transposed: memory for imap {1, NY} */
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            tin[x * NY + y] = in[y * NX + x];
    const struct {
        const ptrdiff_t *imap;
        const float *mem;
        size_t run;
        const char *what;
    } cases[] = {
        {NULL, in, 0, "vars: one buffer"},
        {natural, in, NX, "varm, natural imap: rows"},
        {transposed, tin, 1, "varm, transposed: each value"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].imap)
            NC(nc_put_varm_float(ncid, var, start, count, one, cases[c].imap,
                                 cases[c].mem));
        else
            NC(nc_put_vars_float(ncid, var, start, count, one, in));
        NC(nc_get_var_float(ncid, var, want));
        void *q = NULL, *whole = NULL;
        RS(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITGROOM, 2, in, NY * NX,
                         cases[c].run, NULL, &q));
        assert_same_bits(NC_FLOAT, in, want, q, NY * NX, cases[c].what);
        /* and the cases are told apart */
        RS(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITGROOM, 2, in, NY * NX,
                         cases[c].run ? 0 : NX, NULL, &whole));
        assert_true(memcmp(q, whole, sizeof in) != 0);
        raster_free(whole);
        raster_free(q);
    }
    NC(nc_close(ncid));
}

/* quantize_copy: the source is untouched, the copy quantized; nothing is
 * allocated without quantization; allocation failure is reported. */
static void test_copy(void **state)
{
    (void)state;
    double in[NVAL], keep[NVAL], want[NVAL];
    rng_seed(11);
    double_data(in);
    memcpy(keep, in, sizeof in);
    memcpy(want, in, sizeof in);
    RS(quantize_buffer(NC_DOUBLE, NC_QUANTIZE_GRANULARBR, 4, want, NVAL,
                       NULL));
    void *q = NULL;
    RS(quantize_copy(NC_DOUBLE, NC_QUANTIZE_GRANULARBR, 4, in, NVAL, 0, NULL,
                     &q));
    assert_non_null(q);
    assert_memory_equal(in, keep, sizeof in);
    assert_memory_equal(q, want, sizeof want);
    raster_free(q);

    q = in;
    RS(quantize_copy(NC_DOUBLE, NC_NOQUANTIZE, 0, in, NVAL, 0, NULL, &q));
    assert_null(q);
    q = in;
    RS(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITROUND, 3, in, 0, 0, NULL, &q));
    assert_null(q);

    raster_alloc_fail_at(1);
    int rc = quantize_copy(NC_DOUBLE, NC_QUANTIZE_BITROUND, 3, in, NVAL, 0,
                           NULL, &q);
    raster_alloc_fail_at(0);
    assert_int_equal(rc, RASTER_ENOMEM);
    assert_null(q);
    assert_memory_equal(in, keep, sizeof in);

    assert_int_equal(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITROUND, 3, NULL,
                                   4, 0, NULL, &q),
                     RASTER_EINVAL);
    assert_int_equal(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITROUND, 3, in, 4,
                                   0, NULL, NULL),
                     RASTER_EINVAL);
    /* rows that do not divide the values */
    assert_int_equal(quantize_copy(NC_FLOAT, NC_QUANTIZE_BITGROOM, 3, in, 10,
                                   4, NULL, &q),
                     RASTER_EINVAL);
    assert_null(q);
}

/* netCDF's answer to nc_def_var_quantize(xtype, mode, nsd). */
static int netcdf_accepts(int xtype, int mode, int nsd)
{
    char path[512];
    int ncid, dim, var;
    tmpdir_path(path, sizeof path, "check.nc");
    NC(nc_create(path, NC_CLOBBER | NC_NETCDF4 | NC_DISKLESS, &ncid));
    NC(nc_def_dim(ncid, "x", 4, &dim));
    NC(nc_def_var(ncid, "v", xtype, 1, &dim, &var));
    int st = nc_def_var_quantize(ncid, var, mode, nsd);
    NC(nc_close(ncid));
    return st;
}

/* Every setting netCDF refuses (nsd out of range, integer types, unknown
 * modes) is RASTER_EINVAL with NC_EINVAL, the buffer untouched; the limits
 * themselves are accepted by both. */
static void test_errors(void **state)
{
    (void)state;
    static const struct {
        int xtype, mode, nsd;
    } cases[] = {
        {NC_FLOAT, NC_QUANTIZE_BITGROOM, 0},
        {NC_FLOAT, NC_QUANTIZE_BITGROOM, -1},
        {NC_FLOAT, NC_QUANTIZE_BITGROOM, 8},
        {NC_FLOAT, NC_QUANTIZE_GRANULARBR, 8},
        {NC_FLOAT, NC_QUANTIZE_BITROUND, 24},
        {NC_FLOAT, NC_QUANTIZE_BITROUND, 0},
        {NC_DOUBLE, NC_QUANTIZE_BITGROOM, 16},
        {NC_DOUBLE, NC_QUANTIZE_GRANULARBR, 0},
        {NC_DOUBLE, NC_QUANTIZE_BITROUND, 53},
        {NC_DOUBLE, 4, 3},
        {NC_FLOAT, -1, 3},
        {NC_INT, NC_QUANTIZE_BITGROOM, 3},
        {NC_SHORT, NC_QUANTIZE_BITROUND, 3},
        {NC_INT64, NC_QUANTIZE_GRANULARBR, 3},
        {NC_UBYTE, NC_QUANTIZE_BITGROOM, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char buf[32], keep[32];
        for (size_t b = 0; b < sizeof buf; b++)
            buf[b] = (unsigned char)(0x3f + b);
        memcpy(keep, buf, sizeof buf);
        size_t n = sizeof buf / 8;
        assert_int_equal(netcdf_accepts(cases[i].xtype, cases[i].mode,
                                        cases[i].nsd),
                         NC_EINVAL);
        assert_int_equal(quantize_buffer(cases[i].xtype, cases[i].mode,
                                         cases[i].nsd, buf, n, NULL),
                         RASTER_EINVAL);
        assert_int_equal(raster_nc_status(), NC_EINVAL);
        assert_memory_equal(buf, keep, sizeof buf);
    }
    static const struct {
        int xtype, mode, nsd;
    } limits[] = {
        {NC_FLOAT, NC_QUANTIZE_BITGROOM, 7},
        {NC_FLOAT, NC_QUANTIZE_GRANULARBR, 1},
        {NC_FLOAT, NC_QUANTIZE_BITROUND, 23},
        {NC_DOUBLE, NC_QUANTIZE_GRANULARBR, 15},
        {NC_DOUBLE, NC_QUANTIZE_BITROUND, 52},
        {NC_INT, NC_NOQUANTIZE, 0}, /* nothing asked: fine for any type */
        {NC_DOUBLE, NC_NOQUANTIZE, 99},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        assert_int_equal(netcdf_accepts(limits[i].xtype, limits[i].mode,
                                        limits[i].nsd),
                         NC_NOERR);
        assert_int_equal(quantize_check(limits[i].xtype, limits[i].mode,
                                        limits[i].nsd),
                         RASTER_OK);
    }
    /* no quantization: the buffer (even an integer one) is untouched */
    int32_t ints[3] = {1, 2, 3};
    RS(quantize_buffer(NC_INT, NC_NOQUANTIZE, 0, ints, 3, NULL));
    assert_int_equal(ints[1], 2);
    /* values NULL: refused unless there are none */
    assert_int_equal(quantize_buffer(NC_FLOAT, NC_QUANTIZE_BITROUND, 3, NULL,
                                     1, NULL),
                     RASTER_EINVAL);
    RS(quantize_buffer(NC_FLOAT, NC_QUANTIZE_BITROUND, 3, NULL, 0, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_bits),
        cmocka_unit_test(test_double_bits),
        cmocka_unit_test(test_parity_follows_buffer),
        cmocka_unit_test(test_varm_runs),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("quantize", tests, setup_dir,
                                       tmpdir_remove);
}
