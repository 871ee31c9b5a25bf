/*
 * test_typed.c - typed transfers (raster_var_put_typed,
 * raster_var_get_typed) and netCDF statuses (raster_nc_status) checked
 * against netCDF-C itself.
 *
 * Every case is run twice: on a raster variable and on an ordinary netCDF-4
 * variable of the same type and shape in a plain file, the latter through
 * netCDF's own typed functions (nc_put_vars_short, nc_get_varm_uchar, ...,
 * and the untyped nc_put_vars / nc_get_varm). The two must agree exactly:
 *  - the status (raster_nc_status() against netCDF's return value, and the
 *    raster return code RASTER_OK exactly when netCDF transferred
 *    everything: NC_NOERR or NC_ERANGE);
 *  - the bytes stored (the whole variable read back raw from both files),
 *    and the bytes a read leaves in the caller's buffer (both buffers
 *    prefilled with the same pattern, so untouched bytes count too).
 * Covered: every variable type x every memory kind (text, schar, uchar,
 * short, int, long, float, double, ubyte, ushort, uint, longlong,
 * ulonglong, string, untyped) for writes and reads, with values chosen to
 * be out of range in every direction (negative into unsigned, NaN and
 * +-Inf into integers, fractions at the limits, wrap-arounds); imap layouts
 * (transposed, strided, gapped, reversed, broadcast) against nc_*_varm;
 * bad start / count / stride in both the vars and the varm forms, in
 * writable and read-only files; fill values converted on reads; the status
 * of the untyped raster_var_put / raster_var_get; thread-locality.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <netcdf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raster.h"

#include "testutil.h"

#define NY 4
#define NX 5
#define NREC 4
#define NCELL (NREC * NY * NX)
#define NTYPES 10
#define BUFVALS 4096 /* values in the scratch buffers */

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("typed");
}

/* ---- types and memory kinds --------------------------------------------- */

static const int var_types[NTYPES] = {NC_BYTE, NC_UBYTE, NC_SHORT, NC_USHORT,
                                      NC_INT, NC_UINT, NC_INT64, NC_UINT64,
                                      NC_FLOAT, NC_DOUBLE};



/* One kind per netCDF function family; the untyped one first, so that
 * every variable holds data before the conversions start. */
enum { K_NAT, K_TEXT, K_SCHAR, K_UCHAR, K_SHORT, K_INT, K_LONG, K_FLOAT,
       K_DOUBLE, K_UBYTE, K_USHORT, K_UINT, K_LONGLONG, K_ULONGLONG,
       K_STRING, NKINDS };

typedef int (*put_fn)(int, int, const size_t *, const size_t *,
                      const ptrdiff_t *, const ptrdiff_t *, void *, int);
typedef int (*get_fn)(int, int, const size_t *, const size_t *,
                      const ptrdiff_t *, const ptrdiff_t *, void *, int);

/* nc_put_vars_SUF / nc_put_varm_SUF (varm) and the get pair. */
#define NC_CALLS(SUF)                                                         \
    static int put_##SUF(int nc, int v, const size_t *s, const size_t *c,     \
                         const ptrdiff_t *st, const ptrdiff_t *im, void *d,   \
                         int varm)                                            \
    {                                                                         \
        return varm ? nc_put_varm_##SUF(nc, v, s, c, st, im, d)               \
                    : nc_put_vars_##SUF(nc, v, s, c, st, d);                  \
    }                                                                         \
    static int get_##SUF(int nc, int v, const size_t *s, const size_t *c,     \
                         const ptrdiff_t *st, const ptrdiff_t *im, void *d,   \
                         int varm)                                            \
    {                                                                         \
        return varm ? nc_get_varm_##SUF(nc, v, s, c, st, im, d)               \
                    : nc_get_vars_##SUF(nc, v, s, c, st, d);                  \
    }

NC_CALLS(text)
NC_CALLS(schar)
NC_CALLS(uchar)
NC_CALLS(short)
NC_CALLS(int)
NC_CALLS(long)
NC_CALLS(float)
NC_CALLS(double)
NC_CALLS(ubyte)
NC_CALLS(ushort)
NC_CALLS(uint)
NC_CALLS(longlong)
NC_CALLS(ulonglong)
NC_CALLS(string)

static int put_nat(int nc, int v, const size_t *s, const size_t *c,
                   const ptrdiff_t *st, const ptrdiff_t *im, void *d, int varm)
{
    return varm ? nc_put_varm(nc, v, s, c, st, im, d)
                : nc_put_vars(nc, v, s, c, st, d);
}

static int get_nat(int nc, int v, const size_t *s, const size_t *c,
                   const ptrdiff_t *st, const ptrdiff_t *im, void *d, int varm)
{
    return varm ? nc_get_varm(nc, v, s, c, st, im, d)
                : nc_get_vars(nc, v, s, c, st, d);
}

static const struct kind {
    const char *name;
    int memtype; /* what raster is passed */
    size_t size; /* bytes per value in memory; 0: the variable's */
    put_fn put;
    get_fn get;
} kinds[NKINDS] = {
    [K_NAT] = {"untyped", NC_NAT, 0, put_nat, get_nat},
    [K_TEXT] = {"text", NC_CHAR, 1, put_text, get_text},
    [K_SCHAR] = {"schar", NC_BYTE, 1, put_schar, get_schar},
    [K_UCHAR] = {"uchar", NC_UBYTE, 1, put_uchar, get_uchar},
    [K_SHORT] = {"short", NC_SHORT, sizeof(short), put_short, get_short},
    [K_INT] = {"int", NC_INT, sizeof(int), put_int, get_int},
    [K_LONG] = {"long", RASTER_NC_LONG, sizeof(long), put_long, get_long},
    [K_FLOAT] = {"float", NC_FLOAT, sizeof(float), put_float, get_float},
    [K_DOUBLE] = {"double", NC_DOUBLE, sizeof(double), put_double,
                  get_double},
    [K_UBYTE] = {"ubyte", NC_UBYTE, 1, put_ubyte, get_ubyte},
    [K_USHORT] = {"ushort", NC_USHORT, sizeof(unsigned short), put_ushort,
                  get_ushort},
    [K_UINT] = {"uint", NC_UINT, sizeof(unsigned), put_uint, get_uint},
    [K_LONGLONG] = {"longlong", NC_INT64, sizeof(long long), put_longlong,
                    get_longlong},
    [K_ULONGLONG] = {"ulonglong", NC_UINT64, sizeof(unsigned long long),
                     put_ulonglong, get_ulonglong},
    [K_STRING] = {"string", NC_STRING, sizeof(char *), put_string,
                  get_string},
};

static size_t kind_size(int k, int vtype)
{
    return kinds[k].size ? kinds[k].size : type_size(vtype);
}

/* ---- test values -------------------------------------------------------- */

/* Floating values at and around every limit netCDF tests. */
static const double fvals[] = {
    NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, -0.7, 1.5, 127.4, 127.5,
    127.9, 128.0, -128.0, -128.5, -128.9, -129.0, 255.0, 255.5, 255.99,
    256.0, 300.5, -300.5, 32767.5, 32768.0, -32768.9, -32769.0, 65535.9,
    65536.0, 2147483647.0, 2147483647.5, 2147483648.0, -2147483648.0,
    -2147483648.5, -2147483649.0, 4294967295.0, 4294967295.5, 4294967296.0,
    4294967297.0, 1e10, -1e10, 9.2e18, 9223372036854775807.0,
    -9223372036854775808.0, -9.3e18, 1e19, 18446744073709551615.0,
    18446744073709551616.0, 3.0e19, 1e20, 3.4e38, 3.402823466e38, 3.5e38,
    -3.5e38, 1e300, -1e300, 1e-40, 1e-320, 16777217.0, 9007199254740993.0,
    123.456, -0.0001, -1.0, 42.0,
};
#define NFVALS (sizeof fvals / sizeof *fvals)

#define I(x) ((unsigned long long)(x))
/* Integer values (two's complement bit patterns) at every limit. */
static const unsigned long long ivals[] = {
    0, 1, I(-1LL), 2, I(-2LL), 100, 127, 128, I(-128LL), I(-129LL), 200, 255,
    256, I(-255LL), I(-256LL), 1000, 32767, 32768, I(-32768LL), I(-32769LL),
    65535, 65536, I(-65535LL), I(-65536LL), 100000, 2147483647, 2147483648ULL,
    I(-2147483647LL - 1), I(-2147483649LL), 4294967295ULL, 4294967296ULL,
    1ULL << 40, I(-(1LL << 40)), 9223372036854775807ULL,
    I(-9223372036854775807LL - 1), 18446744073709551615ULL,
    (1ULL << 63) + 12345, 16777217, 9007199254740993ULL, 123456789,
    I(-123456789LL), 4294967295ULL * 3,
};
#define NIVALS (sizeof ivals / sizeof *ivals)

/* The i-th test value of numeric type xtype at out. */
static void test_value(int xtype, size_t i, void *out)
{
    unsigned long long u = ivals[i % NIVALS];
    long long s = (long long)u;
    double d = fvals[i % NFVALS];
    switch (xtype) {
    case NC_BYTE: { signed char v = (signed char)s; memcpy(out, &v, 1); }
        break;
    case NC_UBYTE: { unsigned char v = (unsigned char)u; memcpy(out, &v, 1); }
        break;
    case NC_SHORT: { short v = (short)s; memcpy(out, &v, 2); } break;
    case NC_USHORT: {
        unsigned short v = (unsigned short)u;
        memcpy(out, &v, 2);
    } break;
    case NC_INT: { int v = (int)s; memcpy(out, &v, 4); } break;
    case NC_UINT: { unsigned v = (unsigned)u; memcpy(out, &v, 4); } break;
    case NC_INT64: memcpy(out, &s, 8); break;
    case NC_UINT64: memcpy(out, &u, 8); break;
    case NC_FLOAT: { float v = (float)d; memcpy(out, &v, 4); } break;
    default: memcpy(out, &d, 8); break;
    }
}

/* n values of kind k (variable type vtype) into buf, from value `seed`. */
static void fill_values(int k, int vtype, void *buf, size_t n, size_t seed)
{
    if (k == K_TEXT) {
        for (size_t i = 0; i < n; i++)
            ((char *)buf)[i] = (char)('a' + (i + seed) % 26);
        return;
    }
    if (k == K_STRING) {
        for (size_t i = 0; i < n; i++)
            ((const char **)buf)[i] = "12";
        return;
    }
    int t = kinds[k].memtype == NC_NAT ? vtype : kinds[k].memtype;
    for (size_t i = 0; i < n; i++)
        test_value(t, i + seed, (unsigned char *)buf + i * type_size(t));
}

/* ---- a raster file and a plain netCDF-4 file side by side --------------- */

typedef struct pair {
    raster_file *rf;
    raster_var *rv[NTYPES];
    int nc, nv[NTYPES];
    char rpath[512], npath[512];
} pair;

static const int32_t mask_vals[NY * NX] = {
    1, 1, 1, 2, 2,
    1, 1, 2, 2, 2,
    3, 3, 3, 2, 2,
    3, 3, 3, 3, 2,
};

static void var_name(char *buf, size_t len, int xtype)
{
    snprintf(buf, len, "v_%s", type_name(xtype));
}

/* Variables v_<type> (t unlimited, y, x) in both files, base chunk 1 x 2 x 3
 * (mixed and pure raster chunks). */
static void pair_create(pair *p, const char *name)
{
    char buf[64];
    snprintf(buf, sizeof buf, "r-%s.nc", name);
    tmpdir_path(p->rpath, sizeof p->rpath, buf);
    snprintf(buf, sizeof buf, "n-%s.nc", name);
    tmpdir_path(p->npath, sizeof p->npath, buf);
    RS(raster_create(p->rpath, &p->rf));
    NC(nc_create(p->npath, NC_NETCDF4 | NC_CLOBBER, &p->nc));
    int rnc = raster_file_ncid(p->rf), rd[3], nd[3];
    const char *dn[3] = {"t", "y", "x"};
    const size_t len[3] = {NC_UNLIMITED, NY, NX};
    for (int i = 0; i < 3; i++) {
        NC(nc_def_dim(rnc, dn[i], len[i], &rd[i]));
        NC(nc_def_dim(p->nc, dn[i], len[i], &nd[i]));
    }
    raster_mask *m;
    RS(raster_mask_wrap(mask_vals, NY, NX, &m));
    const size_t chunk[3] = {1, 2, 3};
    for (int t = 0; t < NTYPES; t++) {
        var_name(buf, sizeof buf, var_types[t]);
        RS(raster_def_var(p->rf, rnc, buf, var_types[t], 3, rd, chunk, m,
                          &p->rv[t]));
        NC(nc_def_var(p->nc, buf, var_types[t], 3, nd, &p->nv[t]));
        NC(nc_def_var_chunking(p->nc, p->nv[t], NC_CHUNKED, chunk));
    }
    raster_mask_free(m);
    NC(nc_enddef(p->nc));
}

static void pair_close(pair *p)
{
    RS(raster_close(p->rf));
    NC(nc_close(p->nc));
}

/* Reopens both files, read-only or for writing. */
static void pair_reopen(pair *p, int writable)
{
    pair_close(p);
    RS(raster_open(p->rpath, writable ? RASTER_WRITE : RASTER_READ, &p->rf));
    NC(nc_open(p->npath, writable ? NC_WRITE : NC_NOWRITE, &p->nc));
    for (int t = 0; t < NTYPES; t++) {
        char name[64];
        var_name(name, sizeof name, var_types[t]);
        RS(raster_var_find(p->rf, name, &p->rv[t]));
        NC(nc_inq_varid(p->nc, name, &p->nv[t]));
    }
}

/* ---- comparisons -------------------------------------------------------- */

static char context[512];

/* The raster call returned rc; netCDF returned ncst for the same call. */
static void expect_status(int rc, int ncst)
{
    int rst = raster_nc_status();
    int ok = ncst == NC_NOERR || ncst == NC_ERANGE;
    if (rst != ncst || (rc == RASTER_OK) != ok)
        fail_msg("%s: netCDF returned %d (%s); raster returned %d (%s), "
                 "status %d (%s): %s", context, ncst, nc_strerror(ncst), rc,
                 raster_strerror(rc), rst, nc_strerror(rst), raster_errmsg());
}

static void expect_same_bytes(const void *a, const void *b, size_t n,
                              size_t elem, const char *what)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            fail_msg("%s: %s differ from netCDF's at value %zu (byte %zu: "
                     "raster 0x%02x, netCDF 0x%02x)", context, what,
                     i / elem, i, x[i], y[i]);
}

/* The whole of variable t, read raw, is the same in both files, and so are
 * the lengths of its dimensions. */
static void expect_same_stored(const pair *p, int t)
{
    size_t rshape[3], nlen;
    RS(raster_var_dims(p->rv[t], NULL, rshape, NULL));
    int tdim;
    NC(nc_inq_dimid(p->nc, "t", &tdim));
    NC(nc_inq_dimlen(p->nc, tdim, &nlen));
    if (rshape[0] != nlen)
        fail_msg("%s: %zu records in raster, %zu in netCDF", context,
                 rshape[0], nlen);
    size_t n = nlen * NY * NX, es = type_size(var_types[t]);
    assert_true(n <= BUFVALS);
    static unsigned char a[BUFVALS * 8], b[BUFVALS * 8];
    memset(a, 0x5a, n * es);
    memset(b, 0x5a, n * es);
    size_t start[3] = {0, 0, 0}, count[3] = {nlen, NY, NX};
    if (n > 0) {
        RS(raster_var_get(p->rv[t], start, count, NULL, a));
        NC(nc_get_vara(p->nc, p->nv[t], start, count, b));
    }
    expect_same_bytes(a, b, n * es, es, "stored values");
}

/* A write of the box through raster and netCDF; then the stored values. */
static void put_both(pair *p, int t, int k, const size_t *start,
                     const size_t *count, const ptrdiff_t *stride,
                     const ptrdiff_t *imap, void *data, int varm)
{
    int ncst = kinds[k].put(p->nc, p->nv[t], start, count, stride, imap, data,
                            varm);
    int rc = raster_var_put_typed(p->rv[t], start, count, stride,
                                  varm ? imap : NULL, data, kinds[k].memtype);
    expect_status(rc, ncst);
    expect_same_stored(p, t);
}

/* A read of the box through both into buffers of `nvals` values prefilled
 * alike; the statuses and every byte of the buffers agree. `base`: offset
 * in values of element (0, .., 0) in the buffers. */
static void get_both(pair *p, int t, int k, const size_t *start,
                     const size_t *count, const ptrdiff_t *stride,
                     const ptrdiff_t *imap, size_t nvals, size_t base,
                     int varm)
{
    static unsigned char a[BUFVALS * 8], b[BUFVALS * 8];
    size_t es = kind_size(k, var_types[t]);
    assert_true(nvals <= BUFVALS);
    memset(a, 0xa5, nvals * es);
    memset(b, 0xa5, nvals * es);
    int ncst = kinds[k].get(p->nc, p->nv[t], start, count, stride, imap,
                            b + base * es, varm);
    int rc = raster_var_get_typed(p->rv[t], start, count, stride,
                                  varm ? imap : NULL, a + base * es,
                                  kinds[k].memtype);
    expect_status(rc, ncst);
    expect_same_bytes(a, b, nvals * es, es, "values read");
}

/* ---- every type pair ---------------------------------------------------- */

/* Every variable type written from every kind, each time read back into
 * every kind, whole records (nc_put_vars / nc_get_vars, NULL stride). */
static void test_all_pairs(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "pairs");
    static unsigned char src[NCELL * 8];
    const size_t start[3] = {0, 0, 0}, count[3] = {NREC, NY, NX};
    for (int t = 0; t < NTYPES; t++) {
        for (int k = 0; k < NKINDS; k++) {
            fill_values(k, var_types[t], src, NCELL, 0);
            snprintf(context, sizeof context, "put %s into %s",
                     kinds[k].name, type_name(var_types[t]));
            put_both(&p, t, k, start, count, NULL, NULL, src, 0);
            for (int k2 = 0; k2 < NKINDS; k2++) {
                snprintf(context, sizeof context, "get %s as %s (after a put "
                         "of %s)", type_name(var_types[t]), kinds[k2].name,
                         kinds[k].name);
                get_both(&p, t, k2, start, count, NULL, NULL, NCELL, 0, 0);
            }
        }
    }
    /* the same reads through the pread fast path of a read-only file */
    pair_reopen(&p, 0);
    for (int t = 0; t < NTYPES; t++)
        for (int k = 0; k < NKINDS; k++) {
            snprintf(context, sizeof context, "read-only get %s as %s",
                     type_name(var_types[t]), kinds[k].name);
            get_both(&p, t, k, start, count, NULL, NULL, NCELL, 0, 0);
        }
    pair_close(&p);
}

/* ---- imap layouts ------------------------------------------------------- */

typedef struct map_case {
    const char *name;
    size_t start[3], count[3];
    ptrdiff_t stride[3], imap[3];
} map_case;

static const map_case map_cases[] = {
    {"transposed", {0, 1, 0}, {2, 3, 5}, {1, 1, 1}, {1, 2, 6}},
    {"strided and transposed", {0, 0, 1}, {2, 2, 2}, {2, 3, 3}, {1, 2, 4}},
    {"gaps between values", {1, 0, 0}, {1, 4, 5}, {1, 1, 1}, {0, 12, 2}},
    {"reversed", {2, 0, 0}, {1, 4, 5}, {1, 1, 1}, {0, -5, -1}},
    {"rows reversed, strided", {0, 1, 0}, {3, 2, 3}, {1, 2, 2}, {6, -3, 1}},
    {"broadcast row", {3, 0, 0}, {1, 4, 5}, {1, 1, 1}, {0, 0, 1}},
    {"contiguous map, strided", {0, 0, 0}, {2, 2, 3}, {2, 3, 2}, {6, 3, 1}},
    {"contiguous map", {1, 1, 1}, {2, 3, 4}, {1, 1, 1}, {12, 4, 1}},
    /* y: 1, 4 (past 4): netCDF moves the rows inside, then NC_EINVALCOORDS */
    {"stride past the grid", {0, 1, 0}, {2, 2, 3}, {1, 3, 2}, {6, 3, 1}},
    {"stride past the grid, transposed", {0, 0, 1}, {2, 3, 3}, {1, 2, 2},
     {1, 2, 6}},
    /* records 2 and 5: a put extends t, a get reads fill or fails */
    {"records strided past the end", {2, 0, 0}, {2, 2, 2}, {3, 1, 4},
     {4, 2, 1}},
};

/* Values a box with this map spans, and the offset of element 0. */
static void map_extent(const map_case *c, size_t *nvals, size_t *base)
{
    ptrdiff_t lo = 0, hi = 0;
    for (int d = 0; d < 3; d++) {
        ptrdiff_t far = (ptrdiff_t)(c->count[d] - 1) * c->imap[d];
        if (far < 0)
            lo += far;
        else
            hi += far;
    }
    *base = (size_t)-lo;
    *nvals = (size_t)(hi - lo + 1);
}

static void test_imap(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "imap");
    static unsigned char src[BUFVALS * 8];
    const size_t start[3] = {0, 0, 0}, count[3] = {NREC, NY, NX};
    for (int t = 0; t < NTYPES; t++) {
        fill_values(K_NAT, var_types[t], src, NCELL, 7);
        snprintf(context, sizeof context, "initial put of %s",
                 type_name(var_types[t]));
        put_both(&p, t, K_NAT, start, count, NULL, NULL, src, 0);
    }
    size_t ncases = sizeof map_cases / sizeof *map_cases;
    for (int t = 0; t < NTYPES; t++) {
        for (int k = 0; k < NKINDS; k++) {
            for (size_t c = 0; c < ncases; c++) {
                const map_case *mc = &map_cases[c];
                size_t nvals, base, es = kind_size(k, var_types[t]);
                map_extent(mc, &nvals, &base);
                fill_values(k, var_types[t], src, nvals, c + (size_t)k);
                snprintf(context, sizeof context, "varm put %s into %s, %s",
                         kinds[k].name, type_name(var_types[t]), mc->name);
                put_both(&p, t, k, mc->start, mc->count, mc->stride, mc->imap,
                         src + base * es, 1);
                snprintf(context, sizeof context, "varm get %s as %s, %s",
                         type_name(var_types[t]), kinds[k].name, mc->name);
                get_both(&p, t, k, mc->start, mc->count, mc->stride, mc->imap,
                         nvals, base, 1);
                /* the same box without the map, as nc_*_vars */
                snprintf(context, sizeof context, "vars get %s as %s, %s",
                         type_name(var_types[t]), kinds[k].name, mc->name);
                size_t n = mc->count[0] * mc->count[1] * mc->count[2];
                get_both(&p, t, k, mc->start, mc->count, mc->stride, NULL, n,
                         0, 0);
            }
        }
    }
    pair_reopen(&p, 0);
    for (int t = 0; t < NTYPES; t++)
        for (int k = 0; k < NKINDS; k++)
            for (size_t c = 0; c < ncases; c++) {
                const map_case *mc = &map_cases[c];
                size_t nvals, base;
                map_extent(mc, &nvals, &base);
                snprintf(context, sizeof context, "read-only varm get %s as "
                         "%s, %s", type_name(var_types[t]), kinds[k].name,
                         mc->name);
                get_both(&p, t, k, mc->start, mc->count, mc->stride,
                         mc->imap, nvals, base, 1);
            }
    pair_close(&p);
}

/* ---- bad arguments ------------------------------------------------------ */

#define BIG_STRIDE ((ptrdiff_t)1 << 31)

typedef struct arg_case {
    const char *name;
    int no_start, no_count, no_stride;
    size_t start[3], count[3];
    ptrdiff_t stride[3];
} arg_case;

/* The record dimension holds NREC records when the cases start; some
 * writes extend it, identically in both files. */
static const arg_case arg_cases[] = {
    {"start at the end of y", 0, 0, 1, {0, 4, 0}, {1, 1, 1}, {0}},
    {"start at the end of y, count 0", 0, 0, 1, {0, 4, 0}, {1, 0, 1}, {0}},
    {"start past the end of y, count 0", 0, 0, 1, {0, 5, 0}, {1, 0, 1}, {0}},
    {"start + count past x", 0, 0, 1, {0, 0, 3}, {1, 1, 3}, {0}},
    {"count past x", 0, 0, 1, {0, 0, 0}, {1, 1, 6}, {0}},
    {"stride 0", 0, 0, 0, {0, 0, 0}, {1, 1, 1}, {1, 1, 0}},
    {"stride -1", 0, 0, 0, {0, 0, 0}, {1, 1, 1}, {1, 1, -1}},
    {"stride 2^31, count 1", 0, 0, 0, {0, 0, 0}, {1, 1, 1},
     {1, 1, BIG_STRIDE}},
    {"stride 2^31 - 2, count 1", 0, 0, 0, {0, 0, 0}, {1, 1, 1},
     {1, 1, BIG_STRIDE - 2}},
    {"stride 2^31 - 1, count 1", 0, 0, 0, {0, 0, 0}, {1, 1, 1},
     {1, 1, BIG_STRIDE - 1}},
    {"stride runs past x", 0, 0, 0, {0, 0, 1}, {1, 1, 3}, {1, 1, 2}},
    {"stride runs past y", 0, 0, 0, {0, 0, 0}, {1, 3, 2}, {1, 2, 1}},
    {"stride fits", 0, 0, 0, {0, 1, 0}, {2, 2, 2}, {1, 2, 3}},
    {"count 0 in y, count past x", 0, 0, 1, {0, 0, 0}, {1, 0, 6}, {0}},
    {"zero record count, start past the records", 0, 0, 1, {NREC + 3, 0, 0},
     {0, 1, 1}, {0}},
    {"start past y, zero record count", 0, 0, 1, {0, 5, 0}, {0, 1, 1}, {0}},
    {"record past the end and count past x", 0, 0, 1, {NREC + 1, 0, 0},
     {1, 1, 6}, {0}},
    {"no start", 1, 0, 1, {0}, {1, 1, 1}, {0}},
    {"no count", 0, 1, 1, {0, 0, 0}, {0}, {0}},
    {"no count, start inside", 0, 1, 1, {0, 1, 0}, {0}, {0}},
    {"record at the end", 0, 0, 1, {NREC, 0, 0}, {1, 2, 2}, {0}},
    {"records strided past the end", 0, 0, 0, {1, 0, 0}, {2, 1, 1},
     {5, 1, 1}},
    {"records past the end, count 0 elsewhere", 0, 0, 1, {NREC + 9, 0, 0},
     {1, 0, 1}, {0}},
};

/* A row-major map of the box (what nc_put_varm does with imap NULL). */
static void rowmajor_map(const size_t *count, ptrdiff_t *imap)
{
    ptrdiff_t run = 1;
    for (int d = 2; d >= 0; d--) {
        imap[d] = run;
        run *= (ptrdiff_t)(count[d] ? count[d] : 1);
    }
}

static void run_arg_cases(pair *p, const char *label)
{
    static unsigned char src[BUFVALS * 8];
    const int tsel[2] = {4 /* int */, 9 /* double */};
    const int ksel[6] = {K_NAT, K_DOUBLE, K_SHORT, K_UCHAR, K_TEXT, K_STRING};
    for (size_t c = 0; c < sizeof arg_cases / sizeof *arg_cases; c++) {
        const arg_case *ac = &arg_cases[c];
        for (int ti = 0; ti < 2; ti++) {
            int t = tsel[ti];
            for (int ki = 0; ki < 6; ki++) {
                int k = ksel[ki];
                for (int varm = 0; varm < 2; varm++) {
                    size_t shape[3], count[3];
                    ptrdiff_t imap[3];
                    RS(raster_var_dims(p->rv[t], NULL, shape, NULL));
                    const size_t *cnt = ac->no_count ? shape : ac->count;
                    memcpy(count, cnt, sizeof count);
                    rowmajor_map(count, imap);
                    size_t n = count[0] * count[1] * count[2];
                    if (n == 0)
                        n = 1;
                    assert_true(n <= BUFVALS);
                    const size_t *start = ac->no_start ? NULL : ac->start;
                    const size_t *count_arg = ac->no_count ? NULL : ac->count;
                    const ptrdiff_t *stride = ac->no_stride ? NULL
                                                            : ac->stride;
                    const char *form = varm ? "varm" : "vars";
                    fill_values(k, var_types[t], src, n, c);
                    snprintf(context, sizeof context, "%s%s put %s into %s: "
                             "%s", label, form, kinds[k].name,
                             type_name(var_types[t]), ac->name);
                    put_both(p, t, k, start, count_arg, stride, imap, src,
                             varm);
                    snprintf(context, sizeof context, "%s%s get %s as %s: %s",
                             label, form, type_name(var_types[t]),
                             kinds[k].name, ac->name);
                    get_both(p, t, k, start, count_arg, stride, imap, n, 0,
                             varm);
                }
            }
        }
    }
}

static void test_bad_arguments(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "args");
    static unsigned char src[NCELL * 8];
    const size_t start[3] = {0, 0, 0}, count[3] = {NREC, NY, NX};
    for (int t = 0; t < NTYPES; t++) {
        fill_values(K_NAT, var_types[t], src, NCELL, 3);
        snprintf(context, sizeof context, "initial put of %s",
                 type_name(var_types[t]));
        put_both(&p, t, K_NAT, start, count, NULL, NULL, src, 0);
    }
    run_arg_cases(&p, "");
    /* read-only: writes fail in HDF5 for netCDF-4 (NC_EHDFERR) unless a
     * check fails first */
    pair_reopen(&p, 0);
    run_arg_cases(&p, "read-only ");
    pair_close(&p);
}

/* A string write into a numeric variable fails (NC_EBADTYPE) only after
 * netCDF-4 extended the record dimension to the box: raster does too. */
static void test_string_put_extends(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "string");
    static unsigned char src[NCELL * 8];
    const size_t start[3] = {0, 0, 0}, count[3] = {2, NY, NX};
    fill_values(K_NAT, NC_SHORT, src, NCELL, 0);
    snprintf(context, sizeof context, "initial put");
    put_both(&p, 2, K_NAT, start, count, NULL, NULL, src, 0);
    const size_t s1[3] = {4, 1, 1}, c1[3] = {2, 2, 2};
    const ptrdiff_t st1[3] = {2, 1, 2}, im1[3] = {4, 2, 1};
    fill_values(K_STRING, NC_SHORT, src, 8, 0);
    for (int varm = 0; varm < 2; varm++) {
        snprintf(context, sizeof context, "%s string put past the records",
                 varm ? "varm" : "vars");
        put_both(&p, 2, K_STRING, s1, c1, st1, im1, src, varm);
        for (int k = 0; k < NKINDS; k++) {
            const size_t s2[3] = {0, 0, 0}, c2[3] = {7, NY, NX};
            snprintf(context, sizeof context, "get as %s after a string put",
                     kinds[k].name);
            get_both(&p, 2, k, s2, c2, NULL, NULL, 7 * NY * NX, 0, 0);
        }
        const size_t s3[3] = {8, 0, 0}, c3[3] = {1, 1, 1};
        snprintf(context, sizeof context, "%s string put, one record",
                 varm ? "varm" : "vars");
        put_both(&p, 2, K_STRING, s3, c3, NULL, im1, src, varm);
    }
    pair_close(&p);
}

/* ---- fill values -------------------------------------------------------- */

/* Cells never written read as the fill value, converted (and range-checked)
 * like data; records beyond a variable's own extent but within the record
 * dimension read as fill too. */
static void test_fill_conversion(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "fill");
    static unsigned char src[NCELL * 8];
    const size_t pstart[3] = {0, 1, 1}, pcount[3] = {1, 2, 3};
    for (int t = 0; t < NTYPES; t++) {
        fill_values(K_NAT, var_types[t], src, 6, 40);
        snprintf(context, sizeof context, "partial put of %s",
                 type_name(var_types[t]));
        put_both(&p, t, K_NAT, pstart, pcount, NULL, NULL, src, 0);
    }
    /* one variable takes the record dimension to 4 records */
    const size_t rstart[3] = {3, 0, 0}, rcount[3] = {1, NY, NX};
    fill_values(K_NAT, NC_UINT64, src, NY * NX, 0);
    snprintf(context, sizeof context, "record 3 of uint64");
    put_both(&p, 7, K_NAT, rstart, rcount, NULL, NULL, src, 0);

    const size_t start[3] = {0, 0, 0}, count[3] = {NREC, NY, NX};
    const ptrdiff_t stride[3] = {1, 1, 1}, imap[3] = {1, NREC * NX, NREC};
    for (int pass = 0; pass < 2; pass++) {
        for (int t = 0; t < NTYPES; t++)
            for (int k = 0; k < NKINDS; k++) {
                snprintf(context, sizeof context, "%sget of %s with fill as "
                         "%s", pass ? "read-only " : "",
                         type_name(var_types[t]), kinds[k].name);
                get_both(&p, t, k, start, count, NULL, NULL, NCELL, 0, 0);
                snprintf(context, sizeof context, "%stransposed get of %s "
                         "with fill as %s", pass ? "read-only " : "",
                         type_name(var_types[t]), kinds[k].name);
                get_both(&p, t, k, start, count, stride, imap, NCELL, 0, 1);
            }
        pair_reopen(&p, 0);
    }
    pair_close(&p);
}

/* ---- the untyped raster calls ------------------------------------------- */

/* raster_var_put / raster_var_get record netCDF's status for the bad boxes
 * they refuse (nc_put_vars / nc_get_vars on the plain variable). */
static void test_untyped_status(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "untyped");
    static unsigned char src[NCELL * 8];
    const size_t start[3] = {0, 0, 0}, count[3] = {NREC, NY, NX};
    fill_values(K_NAT, NC_INT, src, NCELL, 0);
    snprintf(context, sizeof context, "initial put");
    put_both(&p, 4, K_NAT, start, count, NULL, NULL, src, 0);
    const struct {
        const char *name;
        size_t start[3], count[3];
        ptrdiff_t stride[3];
    } cases[] = {
        {"start at the end of y", {0, 4, 0}, {1, 1, 1}, {1, 1, 1}},
        {"start past the end of x", {0, 0, 6}, {1, 1, 1}, {1, 1, 1}},
        {"start + count past x", {0, 0, 3}, {1, 1, 3}, {1, 1, 1}},
        {"stride 0", {0, 0, 0}, {1, 1, 1}, {1, 0, 1}},
        {"stride -2 after a bad start", {0, 9, 0}, {1, 1, 1}, {1, 1, -2}},
        {"stride past y", {0, 1, 0}, {1, 2, 1}, {1, 3, 1}},
        {"record past the end (read)", {NREC + 1, 0, 0}, {1, 1, 1},
         {1, 1, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (int write = 0; write < 2; write++) {
            snprintf(context, sizeof context, "raster_var_%s: %s",
                     write ? "put" : "get", cases[c].name);
            int ncst, rc;
            if (write) {
                ncst = nc_put_vars(p.nc, p.nv[4], cases[c].start,
                                   cases[c].count, cases[c].stride, src);
                rc = raster_var_put(p.rv[4], cases[c].start, cases[c].count,
                                    cases[c].stride, src);
            } else {
                static int a[NCELL];
                ncst = nc_get_vars(p.nc, p.nv[4], cases[c].start,
                                   cases[c].count, cases[c].stride, a);
                rc = raster_var_get(p.rv[4], cases[c].start, cases[c].count,
                                    cases[c].stride, a);
            }
            if (ncst == NC_NOERR) /* an untyped success leaves the status */
                assert_int_equal(rc, RASTER_OK);
            else
                expect_status(rc, ncst);
        }
    }
    pair_close(&p);
}

/* ---- the status is per thread ------------------------------------------- */

static void *other_thread(void *arg)
{
    int *out = arg;
    out[0] = raster_nc_status(); /* untouched by the main thread's failure */
    raster_var_put_typed(NULL, NULL, NULL, NULL, NULL, NULL, NC_INT);
    out[1] = raster_nc_status();
    return NULL;
}

static void test_status_per_thread(void **state)
{
    (void)state;
    pair p;
    pair_create(&p, "thread");
    const size_t start[3] = {0, 9, 0}, count[3] = {1, 1, 1};
    int v = 1;
    assert_int_equal(raster_var_put_typed(p.rv[4], start, count, NULL, NULL,
                                          &v, NC_INT), RASTER_EINVAL);
    assert_int_equal(raster_nc_status(), NC_EINVALCOORDS);
    int seen[2];
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other_thread, seen), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(seen[0], NC_NOERR);
    assert_int_equal(seen[1], NC_EINVAL);
    assert_int_equal(raster_nc_status(), NC_EINVALCOORDS);
    /* a typed success resets it; an untyped success leaves it */
    const size_t ok[3] = {0, 0, 0};
    assert_int_equal(raster_var_put(p.rv[4], ok, count, NULL, &v), RASTER_OK);
    assert_int_equal(raster_nc_status(), NC_EINVALCOORDS);
    double big = 1e12;
    assert_int_equal(raster_var_put_typed(p.rv[4], ok, count, NULL, NULL,
                                          &big, NC_DOUBLE), RASTER_OK);
    assert_int_equal(raster_nc_status(), NC_ERANGE);
    assert_int_equal(raster_var_put_typed(p.rv[4], ok, count, NULL, NULL, &v,
                                          NC_NAT), RASTER_OK);
    assert_int_equal(raster_nc_status(), NC_NOERR);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_pairs),
        cmocka_unit_test(test_imap),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_string_put_extends),
        cmocka_unit_test(test_fill_conversion),
        cmocka_unit_test(test_untyped_status),
        cmocka_unit_test(test_status_per_thread),
    };
    return cmocka_run_group_tests(tests, setup_dir, tmpdir_remove);
}
