/*
 * test_storage_errors.c - bad input to the region storage core gives a
 * clear status code and a non-empty raster_errmsg(), never a crash, a leak
 * or a half-written file:
 *  - raster_def_var: mask shape, rank, type, chunk/tile, names in use (a
 *    variable, a group, a storage group), read-only files, NULL arguments;
 *    a failed definition leaves nothing but an abandoned group
 *    (raster_abandoned_<k>_V) that readers ignore;
 *  - raster_adopt_var: wrong grid, rank, type, unlimited grid, unknown
 *    variables, chunks, adopting twice, written variables, read-only files;
 *  - raster_var_put / raster_var_get: boxes out of range, bad strides,
 *    writes to read-only files, a _FillValue after data;
 *  - region reads: unknown ids, layouts, outer boxes, empty id sets;
 *  - raster_open: missing, non-netCDF, plain netCDF, incomplete (marker
 *    cleared, writer killed before closing), truncated and corrupted files
 *    (the storage group's description and tables, the placeholder missing
 *    or of another type or shape, two storage groups for one placeholder),
 *    newer format versions; no descriptor is leaked on failure;
 *  - allocation failure injection (src/base/alloc.h) over opening, reading and
 *    writing.
 * Requests that might crash run in a forked child, so a crash is reported
 * as a failed assertion instead of ending the program.
 *
 * Files live in a private mkdtemp directory under /tmp, removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <netcdf.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "chunkio.h"
#include "fileio.h"
#include "error.h"
#include "meta.h" /* meta_default_format: format 5 files */
#include "raster.h"
#include "tiles.h"
#include "var.h"

#include "testutil.h"

/* ---- temporary directory -------------------------------------------------- */

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("storerr");
}

/* ---- checks ------------------------------------------------------------------ */

/* `call` must return `code` and leave a message. */
#define EXPECT_ERR(code, call)                                                \
    do {                                                                      \
        raster_errmsg_clear();                                                \
        int rc_ = (call);                                                     \
        if (rc_ != (code))                                                    \
            fail_msg("%s:%d: %s returned %d (%s: %s), expected %d (%s)",      \
                     __FILE__, __LINE__, #call, rc_, raster_strerror(rc_),    \
                     raster_errmsg(), (code), raster_strerror(code));         \
        if (raster_errmsg()[0] == '\0')                                       \
            fail_msg("%s:%d: %s: no error message", __FILE__, __LINE__,      \
                     #call);                                                  \
    } while (0)

/* A non-NULL handle value that must be overwritten with NULL on failure. */
static char sentinel_byte;
#define SENTINEL_FILE ((raster_file *)(void *)&sentinel_byte)
#define SENTINEL_VAR ((raster_var *)(void *)&sentinel_byte)

/* Open file descriptors of this process. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* ---- a small reference file --------------------------------------------------- */

enum { T = 2, Z = 3, NY = 10, NX = 12 };

/* Ids -5, 0, 3 and 6, with pure runs and mixed tiles for 4 x 5 tiles. */
static void std_mask(int32_t *m)
{
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++) {
            int32_t id = x < 5 ? 3 : x < 10 ? 6 : 0;
            if (y >= 7 && x >= 3 && x < 8)
                id = -5;
            if (y == 4 && x == 6)
                id = 0;
            m[y * NX + x] = id;
        }
}

static float std_value(size_t i) { return (float)i * 0.25f - 100.0f; }

/* Writes `path`: float v(time, z, y, x) with time unlimited (or fixed of
 * length T), tile 4 x 5, T records written whole; marker set by close. */
static void make_raster_file(const char *path, int unlim)
{
    int32_t mask[NY * NX];
    std_mask(mask);
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = std_value(i);
    static const char *const names[4] = {"time", "z", "y", "x"};
    const size_t shape[4] = {T, Z, NY, NX}, chunk[4] = {1, 1, 4, 5};
    write_raster_file(path, NC_FLOAT, 4, names, shape, unlim, chunk, mask,
                      data);
    free(data);
}

/* Values of v of an open file that differ from std_value. */
static size_t std_mismatches(raster_file *f)
{
    raster_var *v;
    RS(raster_var_find(f, "v", &v));
    float *got = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(got);
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX}, bad = 0;
    RS(raster_var_get(v, st, ct, NULL, got));
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        bad += got[i] != std_value(i);
    free(got);
    return bad;
}

/* Reads v of an open file whole and compares with std_value. */
static void check_std_data(raster_file *f)
{
    raster_var *v;
    RS(raster_var_find(f, "v", &v));
    float *got = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(got);
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
    RS(raster_var_get(v, st, ct, NULL, got));
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        if (got[i] != std_value(i))
            fail_msg("element %zu is %g, expected %g", i, (double)got[i],
                     (double)std_value(i));
    free(got);
}

static void copy_file(const char *from, const char *to, long keep)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_true(in && out);
    char buf[65536];
    long done = 0;
    size_t n;
    while ((keep < 0 || done < keep) &&
           (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (keep >= 0 && done + (long)n > keep)
            n = (size_t)(keep - done);
        assert_int_equal(fwrite(buf, 1, n, out), n);
        done += (long)n;
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

static long file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (long)sb.st_size;
}

/* raster_open(path) must fail with `code` (or any of the alternatives when
 * `alt` is non-zero), leave *out NULL, a message, and no descriptor open. */
/* Uses every variable of f as a reader would: a whole-variable read
 * (every region's runs) and the full check. The first failure's code. */
static int use_all(raster_file *f)
{
    int rc = RASTER_OK;
    for (size_t i = 0; rc == RASTER_OK && i < raster_file_nvars(f); i++) {
        raster_var *v = raster_file_var(f, i);
        size_t shape[8], start[8] = {0}, n = 1, elem;
        int nd = raster_var_ndims(v);
        NC(nc_inq_type(raster_file_ncid(f), raster_var_type(v), NULL, &elem));
        RS(raster_var_dims(v, NULL, shape, NULL));
        for (int d = 0; d < nd; d++)
            n *= shape[d];
        void *buf = malloc(n * elem + 1);
        assert_non_null(buf);
        rc = raster_var_get(v, start, shape, NULL, buf);
        free(buf);
        if (rc == RASTER_OK)
            rc = raster_var_check(v);
    }
    return rc;
}

/* raster_open of a damaged file, then (read-only) a reader's first uses:
 * the damage must be refused before any of it is served. */
static int open_fails(const char *path, int mode)
{
    int fds = count_fds();
    raster_file *f = SENTINEL_FILE;
    raster_errmsg_clear();
    int rc = raster_open(path, mode, &f);
    if (rc == RASTER_OK) {
        rc = use_all(f);
        if (rc != RASTER_OK && raster_errmsg()[0] == '\0')
            fail_msg("%s: code %d but no message", path, rc);
        raster_close(f);
        assert_int_equal(count_fds(), fds);
        return rc;
    }
    assert_null(f);
    if (raster_errmsg()[0] == '\0')
        fail_msg("raster_open(%s): code %d but no message", path, rc);
    assert_int_equal(count_fds(), fds);
    return rc;
}

#define EXPECT_OPEN(code, path)                                               \
    do {                                                                      \
        int rc_ = open_fails((path), RASTER_READ);                            \
        if (rc_ != (code))                                                    \
            fail_msg("%s:%d: raster_open(%s) returned %d (%s: %s), "          \
                     "expected %d (%s)", __FILE__, __LINE__, (path), rc_,      \
                     raster_strerror(rc_), raster_errmsg(), (code),            \
                     raster_strerror(code));                                  \
    } while (0)

/* ---- raster_def_var ------------------------------------------------------------ */

static void test_def_var_errors(void **state)
{
    (void)state;
    char path[600], ro[600];
    tmpdir_path(path, sizeof path, "def.nc");
    tmpdir_path(ro, sizeof ro, "def_ro.nc");
    int32_t mvals[NY * NX], big[(NY + 1) * NX];
    std_mask(mvals);
    memset(big, 0, sizeof big);
    raster_mask *m, *m_tall, *m_wide, *m_transposed;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    RS(raster_mask_wrap(big, NY + 1, NX, &m_tall));
    RS(raster_mask_wrap(big, NY, NX + 1, &m_wide));
    RS(raster_mask_wrap(mvals, NX, NY, &m_transposed));

    raster_file *f;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[4], other, grp, pv;
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(ncid, "z", Z, &d[1]));
    NC(nc_def_dim(ncid, "y", NY, &d[2]));
    NC(nc_def_dim(ncid, "x", NX, &d[3]));
    NC(nc_def_dim(ncid, "other", 7, &other));
    NC(nc_def_var(ncid, "plainvar", NC_INT, 1, &d[1], &pv));
    NC(nc_def_grp(ncid, "agroup", &grp));
    size_t chunk[4] = {1, 1, 4, 5};
    raster_var *v = SENTINEL_VAR;

    /* mask shape matching no variable grid */
    EXPECT_ERR(RASTER_EMASK, raster_def_var(f, ncid, "a", NC_FLOAT, 4, d,
                                            chunk, m_tall, &v));
    assert_null(v);
    EXPECT_ERR(RASTER_EMASK, raster_def_var(f, ncid, "a", NC_FLOAT, 4, d,
                                            chunk, m_wide, &v));
    EXPECT_ERR(RASTER_EMASK, raster_def_var(f, ncid, "a", NC_FLOAT, 4, d,
                                            chunk, m_transposed, &v));
    int dz[3] = {d[0], other, d[3]}; /* grid other x x */
    EXPECT_ERR(RASTER_EMASK, raster_def_var(f, ncid, "a", NC_FLOAT, 3, dz,
                                            NULL, m, &v));
    /* rank */
    int many[33];
    for (int i = 0; i < 33; i++)
        many[i] = i < 31 ? d[1] : d[2 + (i - 31)];
    size_t many_chunk[33];
    for (int i = 0; i < 33; i++)
        many_chunk[i] = 1;
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 1,
                                             &d[3], NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 33,
                                             many, many_chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 0, d,
                                             NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, -1, d,
                                             NULL, m, &v));
    /* non-numeric types */
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_CHAR, 4, d,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_STRING, 4, d,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_NAT, 4, d,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", 99, 4, d, chunk,
                                             m, &v));
    /* chunks: zero, tile larger than the grid */
    size_t bad_chunks[6][4] = {
        {0, 1, 4, 5}, {1, 0, 4, 5}, {1, 1, 0, 5}, {1, 1, 4, 0},
        {1, 1, NY + 1, 5}, {1, 1, 4, NX + 1},
    };
    for (int i = 0; i < 6; i++)
        EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 4,
                                                 d, bad_chunks[i], m, &v));
    /* unknown dimension id, unknown group */
    int dbad[4] = {d[0], 999, d[2], d[3]};
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 4, dbad,
                                             chunk, m, &v));
    raster_errmsg_clear();
    int rc = raster_def_var(f, ncid + 12345, "a", NC_FLOAT, 4, d, chunk, m,
                            &v);
    assert_true(rc == RASTER_EINVAL || rc == RASTER_ENETCDF);
    assert_true(raster_errmsg()[0] != '\0');
    /* names in use: a variable, a group */
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "plainvar", NC_FLOAT, 4,
                                             d, chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "agroup", NC_FLOAT, 4,
                                             d, chunk, m, &v));
    /* NULL arguments */
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(NULL, ncid, "a", NC_FLOAT, 4, d,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, NULL, NC_FLOAT, 4, d,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 4, NULL,
                                             chunk, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 4, d,
                                             chunk, NULL, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_FLOAT, 4, d,
                                             chunk, m, NULL));
    assert_null(v);
    /* a name netCDF refuses: an error, not a crash */
    raster_errmsg_clear();
    rc = raster_def_var(f, ncid, "a/b", NC_FLOAT, 4, d, chunk, m, &v);
    assert_int_not_equal(rc, RASTER_OK);
    assert_true(raster_errmsg()[0] != '\0');
    assert_null(v);

    /* none of the failures defined anything: no variable, no group (not
     * even an abandoned one), and "a" is still free */
    assert_int_equal(raster_file_nvars(f), 0);
    int nvars, ngrps;
    NC(nc_inq_nvars(ncid, &nvars));
    assert_int_equal(nvars, 1); /* plainvar */
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    assert_int_equal(ngrps, 1); /* agroup */
    RS(raster_def_var(f, ncid, "a", NC_FLOAT, 4, d, chunk, m, &v));
    assert_non_null(v);
    /* its placeholder and its storage group */
    int aid, ag;
    NC(nc_inq_varid(ncid, "a", &aid));
    assert_int_equal(aid, 1);
    assert_int_equal(raster_var_varid(v), aid);
    NC(nc_inq_grp_ncid(ncid, "raster_a", &ag));
    assert_int_equal(raster_storage_grp(ncid, "a"), ag);
    /* and now "a" is taken, by a raster variable */
    raster_var *v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "a", NC_DOUBLE, 4, d,
                                             chunk, m, &v2));
    assert_null(v2);
    /* so is "raster_a", by its storage group */
    v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "raster_a", NC_FLOAT, 4,
                                             d, chunk, m, &v2));
    assert_null(v2);
    NC(nc_inq_nvars(ncid, &nvars));
    assert_int_equal(nvars, 2);
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    assert_int_equal(ngrps, 2);
    assert_int_equal(raster_file_nvars(f), 1);
    /* _FillValue of the wrong type or length */
    double dfill = 1.0;
    float ffill[2] = {1.0f, 2.0f};
    EXPECT_ERR(RASTER_EINVAL, raster_var_put_att(v, "_FillValue", NC_DOUBLE,
                                                 1, &dfill));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put_att(v, "_FillValue", NC_FLOAT,
                                                 2, ffill));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put_att(NULL, "units", NC_CHAR, 1,
                                                 "K"));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put_att(v, NULL, NC_CHAR, 1, "K"));
    RS(raster_close(f));
    assert_int_equal(open_fails(path, RASTER_READ), RASTER_OK);

    /* read-only file */
    make_raster_file(ro, 1);
    RS(raster_open(ro, RASTER_READ, &f));
    ncid = raster_file_ncid(f);
    int rd[4];
    NC(nc_inq_dimid(ncid, "time", &rd[0]));
    NC(nc_inq_dimid(ncid, "z", &rd[1]));
    NC(nc_inq_dimid(ncid, "y", &rd[2]));
    NC(nc_inq_dimid(ncid, "x", &rd[3]));
    v = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "w", NC_FLOAT, 4, rd,
                                             chunk, m, &v));
    assert_null(v);
    RS(raster_var_find(f, "v", &v));
    raster_errmsg_clear();
    rc = raster_var_put_att(v, "units", NC_CHAR, 1, "K");
    assert_true(rc == RASTER_EINVAL || rc == RASTER_ENETCDF);
    assert_true(raster_errmsg()[0] != '\0');
    check_std_data(f);
    RS(raster_close(f));

    raster_mask_free(m);
    raster_mask_free(m_tall);
    raster_mask_free(m_wide);
    raster_mask_free(m_transposed);
    unlink(path);
    unlink(ro);
}

/* ---- raster_adopt_var ----------------------------------------------------------- */

static void test_adopt_var_errors(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "adopt_err.nc");
    int32_t mvals[NY * NX], big[(NY + 1) * NX];
    std_mask(mvals);
    memset(big, 0, sizeof big);
    raster_mask *m, *m_tall, *m_transposed;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    RS(raster_mask_wrap(big, NY + 1, NX, &m_tall));
    RS(raster_mask_wrap(mvals, NX, NY, &m_transposed));

    raster_file *f;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[4], other;
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(ncid, "z", Z, &d[1]));
    NC(nc_def_dim(ncid, "y", NY, &d[2]));
    NC(nc_def_dim(ncid, "x", NX, &d[3]));
    NC(nc_def_dim(ncid, "other", 7, &other));
    int good, spare, wrong_grid, one_d, text, str, ugrid;
    NC(nc_def_var(ncid, "good", NC_FLOAT, 4, d, &good));
    NC(nc_put_att_text(ncid, good, "units", 1, "K"));
    NC(nc_def_var(ncid, "spare", NC_INT, 2, &d[2], &spare));
    int dw[3] = {d[0], other, d[3]};
    NC(nc_def_var(ncid, "wrong_grid", NC_FLOAT, 3, dw, &wrong_grid));
    NC(nc_def_var(ncid, "one_d", NC_FLOAT, 1, &d[3], &one_d));
    NC(nc_def_var(ncid, "text", NC_CHAR, 2, &d[2], &text));
    NC(nc_def_var(ncid, "str", NC_STRING, 2, &d[2], &str));
    int du[3] = {d[1], d[0], d[3]}; /* grid (time, x): time unlimited */
    NC(nc_def_var(ncid, "ugrid", NC_FLOAT, 3, du, &ugrid));
    int nvars0;
    NC(nc_inq_nvars(ncid, &nvars0));
    size_t chunk[4] = {1, 1, 4, 5};
    raster_var *v = SENTINEL_VAR;

    /* the grid is not the mask's */
    EXPECT_ERR(RASTER_EMASK, raster_adopt_var(f, ncid, good, chunk, m_tall,
                                              &v));
    assert_null(v);
    v = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EMASK, raster_adopt_var(f, ncid, good, chunk,
                                              m_transposed, &v));
    assert_null(v);
    EXPECT_ERR(RASTER_EMASK, raster_adopt_var(f, ncid, wrong_grid, NULL, m,
                                              &v));
    /* rank (HDF5 holds no more than 32 dimensions, raster's limit too),
     * type, an unlimited grid dimension */
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, one_d, NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, text, NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, str, NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, ugrid, NULL, m, &v));
    /* no such variable, no such group */
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, 99, NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, -1, NULL, m, &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, NC_GLOBAL, NULL, m,
                                               &v));
    raster_errmsg_clear();
    int rc = raster_adopt_var(f, ncid + 12345, good, chunk, m, &v);
    assert_true(rc == RASTER_EINVAL || rc == RASTER_ENETCDF);
    assert_true(raster_errmsg()[0] != '\0');
    /* chunks: zero, tile larger than the grid */
    size_t bad_chunks[4][4] = {
        {0, 1, 4, 5}, {1, 1, 0, 5}, {1, 1, NY + 1, 5}, {1, 1, 4, NX + 1},
    };
    for (int i = 0; i < 4; i++)
        EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good,
                                                   bad_chunks[i], m, &v));
    /* NULL arguments */
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(NULL, ncid, good, chunk, m,
                                               &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good, chunk, NULL,
                                               &v));
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good, chunk, m,
                                               NULL));
    assert_null(v);

    /* none of that changed anything: no raster variable, no group, every
     * variable where it was, good's attribute alone */
    assert_int_equal(raster_file_nvars(f), 0);
    assert_null(raster_var_by_varid(f, ncid, good));
    int nvars, ngrps, natts;
    NC(nc_inq_nvars(ncid, &nvars));
    assert_int_equal(nvars, nvars0);
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    assert_int_equal(ngrps, 0);
    NC(nc_inq_varnatts(ncid, good, &natts));
    assert_int_equal(natts, 1);

    /* adopted once; a second time, or by name, is refused */
    RS(raster_adopt_var(f, ncid, good, chunk, m, &v));
    assert_ptr_equal(raster_var_by_varid(f, ncid, good), v);
    raster_var *v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good, chunk, m, &v2));
    assert_null(v2);
    v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good, NULL, m, &v2));
    assert_null(v2);
    EXPECT_ERR(RASTER_EINVAL, raster_def_var(f, ncid, "good", NC_FLOAT, 4, d,
                                             chunk, m, &v2));
    assert_int_equal(raster_file_nvars(f), 1);
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    assert_int_equal(ngrps, 1);
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = std_value(i);
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
    RS(raster_var_put(v, st, ct, NULL, data));
    free(data);
    RS(raster_close(f));

    /* reopened: adopting the raster variable again is refused, for
     * reading anything is */
    RS(raster_open(path, RASTER_WRITE, &f));
    ncid = raster_file_ncid(f);
    v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, good, chunk, m, &v2));
    assert_null(v2);
    assert_int_equal(raster_file_nvars(f), 1);
    RS(raster_close(f));
    RS(raster_open(path, RASTER_READ, &f));
    ncid = raster_file_ncid(f);
    v2 = SENTINEL_VAR;
    EXPECT_ERR(RASTER_EINVAL, raster_adopt_var(f, ncid, spare, NULL, m, &v2));
    assert_null(v2);
    RS(raster_var_find(f, "good", &v));
    assert_int_equal(raster_var_varid(v), good);
    RS(raster_close(f));
    /* and the file is as it was */
    RS(raster_open(path, RASTER_READ, &f));
    assert_int_equal(raster_file_nvars(f), 1);
    RS(raster_var_find(f, "good", &v));
    float *got = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(got);
    RS(raster_var_get(v, st, ct, NULL, got));
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        assert_true(got[i] == std_value(i));
    free(got);
    RS(raster_close(f));

    raster_mask_free(m);
    raster_mask_free(m_tall);
    raster_mask_free(m_transposed);
    unlink(path);
}

/* A variable that already holds data cannot become a placeholder (which
 * is never written): adopting it is refused, and it stays as it was. */
static void test_adopt_written_var(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "adopt_written.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    raster_mask *m;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    raster_file *f;
    raster_var *v = SENTINEL_VAR;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[2], w;
    NC(nc_def_dim(ncid, "y", NY, &d[0]));
    NC(nc_def_dim(ncid, "x", NX, &d[1]));
    NC(nc_def_var(ncid, "w", NC_INT, 2, d, &w));
    int vals[NY * NX], plain[NY * NX], viaraster[NY * NX];
    for (int i = 0; i < NY * NX; i++)
        vals[i] = i + 1;
    NC(nc_put_var_int(ncid, w, vals));
    raster_errmsg_clear();
    int rc = raster_adopt_var(f, ncid, w, NULL, m, &v);
    raster_mask_free(m);
    size_t differ = 0;
    if (rc == RASTER_OK) {
        size_t st[2] = {0, 0}, ct[2] = {NY, NX};
        RS(raster_var_get(v, st, ct, NULL, viaraster));
        NC(nc_get_var_int(ncid, w, plain));
        for (int i = 0; i < NY * NX; i++)
            differ += plain[i] != viaraster[i];
    }
    RS(raster_close(f));
    unlink(path);
    /* Regression (fixed): src/api/variable.c raster_adopt_var() never checks that the variable was
     * never written (include/raster.h requires it, as it requires the
     * checked type, rank and grid): a written variable is adopted with
     * RASTER_OK, and from then on raster reads fill values where plain
     * netCDF reads the data still stored in the placeholder (all NY*NX
     * cells differ here). HDF5 can tell: H5Dget_space_status() /
     * H5Dget_storage_size() of the variable's dataset. */
    if (rc != RASTER_EINVAL)
        fail_msg("adopting a written variable: %d (%s); %zu cells then read "
                 "differently through raster and plain netCDF", rc,
                 raster_strerror(rc), differ);
    assert_true(raster_errmsg()[0] != '\0');
    assert_true(v == NULL);
}

/* Issue 39: a variable netCDF created already (nc_enddef, nothing
 * written) cannot carry the placeholder's marker: adopting it is refused
 * before anything is made, so no group (not even an abandoned one) is
 * left, and it stays an ordinary variable that reads what is written. */
static void test_adopt_created_var(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "adopt_created.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    raster_mask *m;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    raster_file *f;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[2], c, ngrps;
    NC(nc_def_dim(ncid, "y", NY, &d[0]));
    NC(nc_def_dim(ncid, "x", NX, &d[1]));
    NC(nc_def_var(ncid, "c", NC_INT, 2, d, &c));
    NC(nc_enddef(ncid));
    raster_var *v = SENTINEL_VAR;
    raster_errmsg_clear();
    EXPECT_ERR(RASTER_EUNSUPPORTED, raster_adopt_var(f, ncid, c, NULL, m, &v));
    assert_null(v);
    assert_non_null(strstr(raster_errmsg(), "c was created in the file"));
    NC(nc_inq_grps(ncid, &ngrps, NULL));
    assert_int_equal(ngrps, 0);
    assert_int_equal(raster_file_nvars(f), 0);
    int vals[NY * NX], got[NY * NX];
    for (int i = 0; i < NY * NX; i++)
        vals[i] = 3 * i + 1;
    NC(nc_put_var_int(ncid, c, vals));
    NC(nc_get_var_int(ncid, c, got));
    assert_memory_equal(vals, got, sizeof vals);
    RS(raster_close(f));
    raster_mask_free(m);
    unlink(path);
}

/* ---- definitions that fail half-way ------------------------------------------------ */

/* Names of the groups of g that are not user groups in `keep`: every one
 * must be an abandoned definition of `var` ("raster_abandoned_<k>_<var>",
 * without raster_format_version); returns how many there are. */
static int abandoned_groups(int g, const char *var, const char *keep)
{
    int n, ids[16], found = 0;
    NC(nc_inq_grps(g, &n, NULL));
    assert_true(n <= 16);
    NC(nc_inq_grps(g, NULL, ids));
    for (int i = 0; i < n; i++) {
        char name[NC_MAX_NAME + 1], want[NC_MAX_NAME + 1];
        nc_type type;
        size_t len;
        NC(nc_inq_grpname(ids[i], name));
        if (keep && strcmp(name, keep) == 0)
            continue;
        snprintf(want, sizeof want, "raster_abandoned_%d_%s", found, var);
        if (strcmp(name, want) != 0)
            fail_msg("group %s, expected %s", name, want);
        assert_int_equal(nc_inq_att(ids[i], NC_GLOBAL,
                                    "raster_format_version", &type, &len),
                         NC_ENOTATT);
        found++;
    }
    return found;
}

/* A definition that fails after its storage group exists (the placeholder's
 * name is taken by a user-defined type: raster_def_var looks at variable
 * and group names only, so netCDF refuses the placeholder last): the group
 * is renamed raster_abandoned_<k>_V, loses its version, readers ignore it;
 * nothing else is left and other variables are fine. Refusing the name up
 * front (nothing built) passes too. */
static void test_failed_definition_abandoned(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "abandoned.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    raster_mask *m;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    raster_file *f;
    raster_var *v = SENTINEL_VAR;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[2], tid, one = 1;
    NC(nc_def_dim(ncid, "y", NY, &d[0]));
    NC(nc_def_dim(ncid, "x", NX, &d[1]));
    NC(nc_def_enum(ncid, NC_INT, "v", &tid));
    NC(nc_insert_enum(ncid, tid, "one", &one));
    size_t chunk[2] = {4, 5};
    for (int k = 0; k < 2; k++) {
        raster_errmsg_clear();
        int rc = raster_def_var(f, ncid, "v", NC_FLOAT, 2, d, chunk, m, &v);
        if (rc != RASTER_EINVAL && rc != RASTER_ENETCDF)
            fail_msg("raster_def_var of a name a type has: %d (%s)", rc,
                     raster_strerror(rc));
        assert_true(raster_errmsg()[0] != '\0');
        assert_null(v);
        assert_int_equal(raster_file_nvars(f), 0);
        int nvars;
        NC(nc_inq_nvars(ncid, &nvars));
        assert_int_equal(nvars, 0);
        /* either nothing was made, or one more abandoned group */
        int na = abandoned_groups(ncid, "v", NULL);
        assert_true(na == 0 || na == k + 1);
    }
    raster_var *a;
    RS(raster_def_var(f, ncid, "a", NC_FLOAT, 2, d, chunk, m, &a));
    float vals[NY * NX], got[NY * NX];
    for (int i = 0; i < NY * NX; i++)
        vals[i] = (float)i - 7.5f;
    size_t st[2] = {0, 0}, ct[2] = {NY, NX};
    RS(raster_var_put(a, st, ct, NULL, vals));
    RS(raster_close(f));
    raster_mask_free(m);
    for (int mode = 0; mode < 2; mode++) {
        RS(raster_open(path, mode ? RASTER_WRITE : RASTER_READ, &f));
        assert_int_equal(raster_file_nvars(f), 1);
        RS(raster_var_find(f, "a", &a));
        RS(raster_var_get(a, st, ct, NULL, got));
        assert_memory_equal(got, vals, sizeof vals);
        ncid = raster_file_ncid(f);
        int na = abandoned_groups(ncid, "v", "raster_a");
        assert_true(na == 0 || na == 2);
        RS(raster_close(f));
    }
    unlink(path);
}

/* A definition whose placeholder netCDF refuses to chunk (an unlimited
 * outer dimension's chunk size makes a chunk larger than HDF5's 4 GiB):
 * it fails, and leaves the name free, so a retry with a good chunk shape
 * works and the file has one v. */
static void test_failed_placeholder_leaves_name(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "bad_placeholder.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    raster_mask *m;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    raster_file *f;
    raster_var *v = SENTINEL_VAR;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[4];
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NC(nc_def_dim(ncid, "z", Z, &d[1]));
    NC(nc_def_dim(ncid, "y", NY, &d[2]));
    NC(nc_def_dim(ncid, "x", NX, &d[3]));
    size_t huge[4] = {(size_t)1 << 40, 1, 4, 5}, chunk[4] = {1, 1, 4, 5};
    raster_errmsg_clear();
    int rc = raster_def_var(f, ncid, "v", NC_FLOAT, 4, d, huge, m, &v);
    assert_int_not_equal(rc, RASTER_OK);
    assert_true(raster_errmsg()[0] != '\0');
    assert_null(v);
    assert_int_equal(raster_file_nvars(f), 0);
    int nvars_after_failure;
    NC(nc_inq_nvars(ncid, &nvars_after_failure));
    int na = abandoned_groups(ncid, "v", NULL);
    assert_true(na <= 1);
    raster_errmsg_clear();
    int rc2 = raster_def_var(f, ncid, "v", NC_FLOAT, 4, d, chunk, m, &v);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", raster_errmsg());
    size_t bad = SIZE_MAX;
    if (rc2 == RASTER_OK) {
        float *data = malloc(sizeof(float) * T * Z * NY * NX);
        assert_non_null(data);
        for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
            data[i] = std_value(i);
        size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
        RS(raster_var_put(v, st, ct, NULL, data));
        free(data);
    }
    RS(raster_close(f));
    if (rc2 == RASTER_OK) {
        RS(raster_open(path, RASTER_READ, &f));
        bad = std_mismatches(f);
        RS(raster_close(f));
    }
    raster_mask_free(m);
    unlink(path);
    /* Regression (fixed): src/format/meta.c meta_define() creates the placeholder (nc_def_var)
     * and only then chunks it (nc_def_var_chunking); when the chunking is
     * refused (NC_EBADCHUNK here: outer chunk sizes of unlimited
     * dimensions are not clipped) the group is abandoned but the
     * placeholder stays, a plain variable v full of fill values: the name
     * is taken for good ("name v is already in use") and the file carries
     * a variable nobody defined. */
    if (nvars_after_failure != 0 || rc2 != RASTER_OK)
        fail_msg("after a failed definition the file has %d variable(s); "
                 "redefining v gives %d (%s: %s)", nvars_after_failure, rc2,
                 raster_strerror(rc2), msg);
    assert_int_equal(bad, 0);
}

/* Two storage groups that both name the same placeholder: refused as
 * corrupt (the variable would be listed twice and one store lost). */
static void test_two_groups_one_placeholder(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "two_claims.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    raster_mask *m;
    RS(raster_mask_wrap(mvals, NY, NX, &m));
    raster_file *f;
    raster_var *a, *b;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[2];
    NC(nc_def_dim(ncid, "y", NY, &d[0]));
    NC(nc_def_dim(ncid, "x", NX, &d[1]));
    size_t chunk[2] = {4, 5};
    RS(raster_def_var(f, ncid, "a", NC_FLOAT, 2, d, chunk, m, &a));
    RS(raster_def_var(f, ncid, "b", NC_FLOAT, 2, d, chunk, m, &b));
    raster_mask_free(m);
    float va[NY * NX], vb[NY * NX];
    for (int i = 0; i < NY * NX; i++) {
        va[i] = (float)i;
        vb[i] = -(float)i;
    }
    size_t st[2] = {0, 0}, ct[2] = {NY, NX};
    RS(raster_var_put(a, st, ct, NULL, va));
    RS(raster_var_put(b, st, ct, NULL, vb));
    RS(raster_close(f));
    int nc, g;
    NC(nc_open(path, NC_WRITE, &nc));
    NC(nc_inq_grp_ncid(nc, "raster_b", &g));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", 1, "a"));
    NC(nc_close(nc));
    int rc[2];
    char msg[2][512];
    for (int mode = 0; mode < 2; mode++) {
        rc[mode] = open_fails(path, mode);
        snprintf(msg[mode], sizeof msg[mode], "%s", raster_errmsg());
    }
    unlink(path);
    /* Regression (fixed): src/format/meta.c meta_load() / src/api/file.c scan_groups() never check
     * that a placeholder is claimed by one storage group only: the file
     * opens with two raster variables named "a" (raster_var_find and
     * raster_var_by_varid see the first only), b's placeholder is left
     * a plain variable of fill values and b's data is unreachable. */
    for (int mode = 0; mode < 2; mode++)
        if (rc[mode] != RASTER_EFORMAT)
            fail_msg("two storage groups for one placeholder (%s): "
                     "raster_open gave %d (%s: %s), expected %d",
                     mode ? "write" : "read", rc[mode],
                     raster_strerror(rc[mode]), msg[mode], RASTER_EFORMAT);
}

/* ---- raster_var_put / raster_var_get -------------------------------------------- */

static void test_put_get_errors(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "putget.nc");
    make_raster_file(path, 1);
    raster_file *f;
    raster_var *v;
    RS(raster_open(path, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    float buf[T * Z * NY * NX];
    size_t cnt[4] = {1, 1, 1, 1};
    ptrdiff_t one[4] = {1, 1, 1, 1};

    /* start/count out of range, for gets (and puts on fixed dims) */
    static const struct { size_t start[4], count[4]; int put_too; } bad[] = {
        {{T, 0, 0, 0}, {1, 1, 1, 1}, 0},        /* at the unlimited end */
        {{T + 5, 0, 0, 0}, {1, 1, 1, 1}, 0},    /* beyond it */
        {{0, 0, 0, 0}, {T + 1, 1, 1, 1}, 0},    /* running past it */
        {{0, Z, 0, 0}, {1, 1, 1, 1}, 1},
        {{0, 0, NY, 0}, {1, 1, 1, 1}, 1},
        {{0, 0, 0, NX}, {1, 1, 1, 1}, 1},
        {{0, 0, 0, 0}, {1, Z + 1, 1, 1}, 1},
        {{0, 0, 5, 0}, {1, 1, NY - 4, 1}, 1},
        {{0, 0, 0, 3}, {1, 1, 1, NX}, 1},
        {{0, 0, NY + 1, 0}, {1, 1, 0, 1}, 1},   /* start past the end, count 0 */
        {{0, 0, SIZE_MAX, 0}, {1, 1, 1, 1}, 1},
        {{0, 0, 0, SIZE_MAX}, {1, 1, 1, 2}, 1}, /* start + count overflows */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, bad[i].start,
                                                 bad[i].count, NULL, buf));
        if (bad[i].put_too)
            EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, bad[i].start,
                                                     bad[i].count, NULL, buf));
    }
    /* strides: zero, negative, and one that runs past the end */
    size_t zero[4] = {0, 0, 0, 0};
    for (int d = 0; d < 4; d++) {
        ptrdiff_t s[4] = {1, 1, 1, 1};
        s[d] = 0;
        EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, zero, cnt, s, buf));
        EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, cnt, s, buf));
        s[d] = -1;
        EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, zero, cnt, s, buf));
        EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, cnt, s, buf));
    }
    size_t c2[4] = {1, 1, 6, 1};
    ptrdiff_t s2[4] = {1, 1, 2, 1}; /* rows 0, 2, .., 10: past NY */
    EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, zero, c2, s2, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, c2, s2, buf));
    /* NULL arguments */
    EXPECT_ERR(RASTER_EINVAL, raster_var_get(NULL, zero, cnt, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, NULL, cnt, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, zero, NULL, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_get(v, zero, cnt, one, NULL));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(NULL, zero, cnt, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, NULL, cnt, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, NULL, one, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, cnt, one, NULL));
    /* empty requests at the very end are fine, as in netCDF */
    size_t at_end[4] = {T, 0, NY, NX}, none[4] = {0, 1, 0, 0};
    RS(raster_var_get(v, at_end, none, NULL, buf));
    RS(raster_close(f));

    /* nothing above changed the data or the marker */
    RS(raster_open(path, RASTER_READ, &f));
    check_std_data(f);
    RS(raster_var_find(f, "v", &v));
    /* writes to a read-only file */
    size_t all[4] = {T, Z, NY, NX};
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, all, NULL, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_var_put(v, zero, cnt, NULL, buf));
    check_std_data(f);
    RS(raster_close(f));
    unlink(path);
}

/* Writes along an unlimited dimension whose end (start + count) does not
 * fit in size_t are out of range: refused with RASTER_EINVAL before
 * anything changes; the records already written stay. */
static void test_put_unlimited_wraps(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "wrap.nc");
    make_raster_file(path, 1);
    raster_file *f;
    raster_var *v;
    RS(raster_open(path, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    float buf[2 * Z * NY * NX] = {0};
    static const size_t starts[] = {SIZE_MAX, SIZE_MAX - 1};
    int codes[2];
    size_t lens[2];
    char msgs[2][512];
    for (int i = 0; i < 2; i++) {
        size_t st[4] = {starts[i], 0, 0, 0}, ct[4] = {2, Z, NY, NX};
        raster_errmsg_clear();
        codes[i] = raster_var_put(v, st, ct, NULL, buf);
        snprintf(msgs[i], sizeof msgs[i], "%s", raster_errmsg());
        size_t shape[4];
        RS(raster_var_dims(v, NULL, shape, NULL));
        lens[i] = shape[0];
    }
    RS(raster_close(f));
    RS(raster_open(path, RASTER_READ, &f));
    size_t shape[4];
    RS(raster_var_find(f, "v", &v));
    RS(raster_var_dims(v, NULL, shape, NULL));
    size_t bad = shape[0] == T ? std_mismatches(f) : SIZE_MAX;
    RS(raster_close(f));
    unlink(path);
    for (int i = 0; i < 2; i++) {
        assert_true(codes[i] != RASTER_OK);
        assert_true(msgs[i][0] != '\0');
        /* Regression (fixed): src/api/variable.c var_check_box() (now
         * check_box()) skips every check of an unlimited
         * dimension for writes, so start + count wrapping around size_t
         * reaches netCDF, which fails with an HDF error (RASTER_ENETCDF)
         * after having set the dimension's length to the wrapped end
         * (start SIZE_MAX, count 2 -> length 1; SIZE_MAX - 1 -> 0), and
         * the failed writes overwrite records already in the file with
         * fill values (data loss). */
        if (codes[i] != RASTER_EINVAL || lens[i] != T)
            fail_msg("put at start %zu count 2 of an unlimited dimension of "
                     "length %d: status %d (%s: %s), length then %zu; %zu "
                     "values of the file changed", starts[i], T, codes[i],
                     raster_strerror(codes[i]), msgs[i], lens[i], bad);
    }
    assert_int_equal(bad, 0);
}

/* Grid counts so large that (count - 1) * stride wraps around: must be
 * refused, not read far outside the grid. Run in a child. */
static int huge_stride_child(void *arg)
{
    const char *path = arg;
    raster_file *f;
    raster_var *v;
    if (raster_open(path, RASTER_READ, &f) || raster_var_find(f, "v", &v))
        return 49;
    float buf[16];
    /* (count - 1) * 2 == 2^64 == 0 (mod 2^64): last == start */
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {1, 1, SIZE_MAX / 2 + 2, 1};
    ptrdiff_t sd[4] = {1, 1, 2, 1};
    int rc = raster_var_get(v, st, ct, sd, buf);
    raster_close(f);
    return rc;
}

static void test_stride_overflow(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "overflow.nc");
    make_raster_file(path, 0);
    int rc = in_child("get with count * stride overflowing", huge_stride_child,
                      path);
    /* Regression (fixed): src/api/variable.c var_check_box() (now check_box()): `last = start + (count - 1) * step` can
     * wrap to a small value (count = SIZE_MAX/2 + 2, step 2 gives last ==
     * start), passing the range check; hyperslab_pieces() then walks rows
     * far past the grid (lay->row_seg[y] out of bounds). */
    assert_int_equal(rc, RASTER_EINVAL);
    unlink(path);
}

/* A grid dimension that is unlimited can grow (another variable writes
 * more rows) past the mask: raster_def_var must refuse it, or reads past
 * the mask must be refused; never read outside the layout. In a child. */
static int unlimited_grid_child(void *arg)
{
    const char *path = arg;
    int32_t mask[NY * NX];
    std_mask(mask);
    raster_mask *m;
    raster_file *f;
    raster_var *v;
    if (raster_mask_wrap(mask, NY, NX, &m) || raster_create(path, &f))
        return 40;
    int ncid = raster_file_ncid(f), d[2], p;
    float row[NX] = {0}, *data = calloc(NY * NX, sizeof *data);
    if (!data || nc_def_dim(ncid, "y", NC_UNLIMITED, &d[0]) ||
        nc_def_dim(ncid, "x", NX, &d[1]) ||
        nc_def_var(ncid, "p", NC_FLOAT, 2, d, &p))
        return 41;
    size_t st[2] = {0, 0}, ct[2] = {NY, NX};
    if (nc_put_vara_float(ncid, p, st, ct, data)) /* y is NY long now */
        return 42;
    size_t chunk[2] = {4, 5};
    int rc = raster_def_var(f, ncid, "v", NC_FLOAT, 2, d, chunk, m, &v);
    raster_mask_free(m);
    if (rc == RASTER_OK)
        rc = raster_var_put(v, st, ct, NULL, data);
    if (rc == RASTER_OK) {
        size_t s2[2] = {NY + 2, 0}, c2[2] = {1, NX};
        if (nc_put_vara_float(ncid, p, s2, c2, row)) /* y grows to NY+3 */
            return 43;
        rc = raster_var_get(v, s2, c2, NULL, row);
    }
    raster_close(f);
    free(data);
    return rc;
}

static void test_unlimited_grid_dimension(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "unlimgrid.nc");
    int rc = in_child("unlimited grid dimension", unlimited_grid_child, path);
    unlink(path);
    /* Regression (fixed): src/api/variable.c raster_def_var() accepts an unlimited grid dimension;
     * when another variable grows it past the mask, check_box() (which
     * takes the limit from the dimension's current length) lets a read of
     * row NY+2 through, and hyperslab_pieces() reads lay->row_seg[y] past
     * its ny + 1 entries (heap-buffer-overflow). */
    assert_int_equal(rc, RASTER_EINVAL);
}

/* A _FillValue set after data was written is refused, and changes nothing:
 * neither the attribute nor the fill raster uses. */
static void test_late_fill_value(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "latefill.nc");
    int32_t mask[NY * NX];
    std_mask(mask);
    raster_mask *m;
    RS(raster_mask_wrap(mask, NY, NX, &m));
    raster_file *f;
    raster_var *v;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[2];
    NC(nc_def_dim(ncid, "y", NY, &d[0]));
    NC(nc_def_dim(ncid, "x", NX, &d[1]));
    size_t chunk[2] = {4, 5};
    RS(raster_def_var(f, ncid, "v", NC_INT, 2, d, chunk, m, &v));
    raster_mask_free(m);
    int early = -7;
    RS(raster_var_put_att(v, "_FillValue", NC_INT, 1, &early));
    /* write only the region 3 part of row 0 */
    int vals[5] = {1, 2, 3, 4, 5};
    size_t st[2] = {0, 0}, ct[2] = {1, 5};
    RS(raster_var_put(v, st, ct, NULL, vals));
    int late = 99;
    raster_errmsg_clear();
    int rc = raster_var_put_att(v, "_FillValue", NC_INT, 1, &late);
    if (rc == RASTER_OK)
        fail_msg("a _FillValue after data was accepted");
    assert_true(raster_errmsg()[0] != '\0');
    RS(raster_close(f));

    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    int g, vid, fill = 0;
    raster_var_attributes(v, &g, &vid);
    NC(nc_get_att_int(g, vid, "_FillValue", &fill));
    int all[NY * NX], full[NY * NX];
    size_t whole[2] = {NY, NX};
    RS(raster_var_get(v, st, whole, NULL, all));
    int32_t id = 6;
    RS(raster_region_read(v, &id, 1, NULL, NULL, RASTER_LAYOUT_FULL, full));
    RS(raster_close(f));
    unlink(path);
    /* Regression (fixed): src/api/variable.c raster_var_put_att(): a _FillValue after data is
     * first written to the attribute carrier (which netCDF accepts, it was
     * never written to) and copied into v->fill, and only then refused by
     * the stores (NC_ELATEFILL); the failed call leaves the file claiming
     * the new fill while unwritten cells still read as the old one. */
    assert_int_equal(fill, early);
    for (int i = 0; i < NY * NX; i++) {
        int want = i < 5 ? vals[i] : early;
        assert_int_equal(all[i], want);
        assert_int_equal(full[i], early); /* region 6 unwritten, rest fill */
    }
}

/* ---- region reads -------------------------------------------------------------- */

static void test_region_errors(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "region.nc");
    make_raster_file(path, 1);
    raster_file *f;
    raster_var *v;
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    float buf[T * Z * NY * NX];
    size_t os[2] = {0, 0}, oc[2] = {1, 1}, n, box[4], ys[NY * NX],
           xs[NY * NX];
    int32_t good = 3, unknown = 4, set[3] = {3, 77, 6};

    /* unknown region ids */
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_read(v, &unknown, 1, os, oc,
                                                    RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_read(v, set, 3, os, oc,
                                                    RASTER_LAYOUT_FULL, buf));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_size(v, &unknown, 1,
                                                    RASTER_LAYOUT_PACKED, &n));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_bbox(v, set, 3, box));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_cells(v, &unknown, 1, ys, xs));
    /* unknown layouts */
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, os, oc, 3, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, os, oc, -1,
                                                 buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_size(v, &good, 1, 42, &n));
    /* outer boxes out of range (time is unlimited, length T) */
    static const size_t bad_box[][4] = {
        {T, 0, 1, 1}, {0, 0, T + 1, 1}, {0, Z, 1, 1}, {0, 1, 1, Z},
        {T + 3, 0, 0, 1}, {SIZE_MAX, 0, 1, 1}, {1, 0, SIZE_MAX, 1},
    };
    for (size_t i = 0; i < sizeof bad_box / sizeof bad_box[0]; i++) {
        size_t s[2] = {bad_box[i][0], bad_box[i][1]};
        size_t c[2] = {bad_box[i][2], bad_box[i][3]};
        EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, s, c,
                                                     RASTER_LAYOUT_PACKED,
                                                     buf));
    }
    /* no ids, NULL arguments */
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 0, os, oc,
                                                 RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, NULL, 1, os, oc,
                                                 RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(NULL, &good, 1, os, oc,
                                                 RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, NULL, oc,
                                                 RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, os, NULL,
                                                 RASTER_LAYOUT_PACKED, buf));
    EXPECT_ERR(RASTER_EINVAL, raster_region_read(v, &good, 1, os, oc,
                                                 RASTER_LAYOUT_PACKED, NULL));
    EXPECT_ERR(RASTER_EINVAL, raster_region_size(v, &good, 0,
                                                 RASTER_LAYOUT_PACKED, &n));
    EXPECT_ERR(RASTER_EINVAL, raster_region_size(v, &good, 1,
                                                 RASTER_LAYOUT_PACKED, NULL));
    EXPECT_ERR(RASTER_EINVAL, raster_region_bbox(v, &good, 0, box));
    EXPECT_ERR(RASTER_EINVAL, raster_region_bbox(v, &good, 1, NULL));
    EXPECT_ERR(RASTER_EINVAL, raster_region_cells(v, &good, 0, ys, xs));
    EXPECT_ERR(RASTER_EINVAL, raster_region_cells(v, &good, 1, NULL, xs));
    int32_t id;
    EXPECT_ERR(RASTER_EINVAL, raster_region_lookup(v, NULL, &id));
    EXPECT_ERR(RASTER_EINVAL, raster_region_lookup(v, "3", NULL));
    EXPECT_ERR(RASTER_EINVAL, raster_region_lookup(NULL, "3", &id));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_lookup(v, "Atlantic", &id));
    EXPECT_ERR(RASTER_ENOTFOUND, raster_region_lookup(v, "4", &id));
    /* and a good read still works after all that */
    size_t all[2] = {T, Z};
    RS(raster_region_size(v, &good, 1, RASTER_LAYOUT_PACKED, &n));
    RS(raster_region_read(v, &good, 1, os, all, RASTER_LAYOUT_PACKED, buf));
    int32_t mask[NY * NX];
    std_mask(mask);
    size_t k = 0;
    for (size_t p = 0; p < (size_t)T * Z; p++)
        for (size_t c = 0; c < NY * NX; c++)
            if (mask[c] == 3)
                assert_true(buf[k++] == std_value(p * NY * NX + c));
    assert_int_equal(k, n * T * Z);
    RS(raster_close(f));
    unlink(path);
}

/* ---- raster_open --------------------------------------------------------------- */

static void test_open_bad_files(void **state)
{
    (void)state;
    char path[600], txt[600], empty[600], plain[600], classic[600];
    tmpdir_path(path, sizeof path, "does-not-exist.nc");
    tmpdir_path(txt, sizeof txt, "text.nc");
    tmpdir_path(empty, sizeof empty, "empty.nc");
    tmpdir_path(plain, sizeof plain, "plain.nc");
    tmpdir_path(classic, sizeof classic, "classic.nc");
    EXPECT_OPEN(RASTER_ENOTFOUND, path);
    assert_int_equal(open_fails(path, RASTER_WRITE), RASTER_ENOTFOUND);

    FILE *fp = fopen(txt, "w");
    assert_non_null(fp);
    fputs("netcdf is not this\nhello, world\n", fp);
    fclose(fp);
    EXPECT_OPEN(RASTER_ENETCDF, txt);
    assert_int_equal(open_fails(txt, RASTER_WRITE), RASTER_ENETCDF);
    fp = fopen(empty, "w");
    assert_non_null(fp);
    fclose(fp);
    EXPECT_OPEN(RASTER_ENETCDF, empty);

    /* plain netCDF-4 and classic files raster did not write */
    for (int k = 0; k < 2; k++) {
        const char *p = k ? classic : plain;
        int ncid, d[2], varid;
        NC(nc_create(p, k ? NC_CLOBBER : NC_NETCDF4 | NC_CLOBBER, &ncid));
        NC(nc_def_dim(ncid, "y", NY, &d[0]));
        NC(nc_def_dim(ncid, "x", NX, &d[1]));
        NC(nc_def_var(ncid, "v", NC_FLOAT, 2, d, &varid));
        NC(nc_enddef(ncid));
        float vals[NY * NX] = {0};
        NC(nc_put_var_float(ncid, varid, vals));
        NC(nc_close(ncid));
        EXPECT_OPEN(RASTER_EFORMAT, p);
        /* for writing, a file without raster variables is fine */
        raster_file *f;
        RS(raster_open(p, RASTER_WRITE, &f));
        assert_int_equal(raster_file_nvars(f), 0);
        RS(raster_close(f));
    }
    /* arguments */
    raster_file *f = SENTINEL_FILE;
    EXPECT_ERR(RASTER_EINVAL, raster_open(NULL, RASTER_READ, &f));
    assert_null(f);
    EXPECT_ERR(RASTER_EINVAL, raster_open(plain, RASTER_READ, NULL));
    f = SENTINEL_FILE;
    EXPECT_ERR(RASTER_EINVAL, raster_open(plain, 7, &f));
    assert_null(f);
    EXPECT_ERR(RASTER_EINVAL, raster_create(NULL, &f));
    EXPECT_ERR(RASTER_EINVAL, raster_create(plain, NULL));
    char nodir[700];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir.nc", test_tmpdir);
    f = SENTINEL_FILE;
    EXPECT_ERR(RASTER_ENETCDF, raster_create(nodir, &f));
    assert_null(f);
    assert_int_equal(raster_close(NULL), RASTER_OK);
    unlink(txt);
    unlink(empty);
    unlink(plain);
    unlink(classic);
}

/* Sets an attribute of "raster_v", the storage group of v (or of a subgroup
 * of it). */
static void set_group_att(const char *path, const char *sub, const char *att,
                          nc_type type, size_t len, const void *value)
{
    int ncid, g;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
    if (sub)
        NC(nc_inq_grp_ncid(g, sub, &g));
    NC(nc_put_att(g, NC_GLOBAL, att, type, len, value));
    NC(nc_close(ncid));
}

static void test_incomplete_marker(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "marker.nc");
    make_raster_file(path, 1);
    int zero = 0, two = 2;
    set_group_att(path, NULL, "raster_complete", NC_INT, 1, &zero);
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    assert_int_equal(open_fails(path, RASTER_WRITE), RASTER_EINCOMPLETE);
    set_group_att(path, NULL, "raster_complete", NC_INT, 1, &two);
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    set_group_att(path, NULL, "raster_complete", NC_CHAR, 1, "1");
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    int ncid, g;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
    NC(nc_del_att(g, NC_GLOBAL, "raster_complete"));
    NC(nc_close(ncid));
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    int one = 1;
    set_group_att(path, NULL, "raster_complete", NC_INT, 1, &one);
    raster_file *f;
    RS(raster_open(path, RASTER_READ, &f));
    check_std_data(f);
    RS(raster_close(f));
    unlink(path);
}

/* Children that write and die without raster_close. */
typedef struct writer_args {
    const char *path;
    int sync;   /* nc_sync before dying */
    int reopen; /* rewrite an existing complete file */
} writer_args;

static int dying_writer(void *arg)
{
    const writer_args *a = arg;
    raster_file *f;
    raster_var *v;
    int32_t mask[NY * NX];
    std_mask(mask);
    if (a->reopen) {
        if (raster_open(a->path, RASTER_WRITE, &f) ||
            raster_var_find(f, "v", &v))
            return 40;
    } else {
        raster_mask *m;
        if (raster_mask_wrap(mask, NY, NX, &m) || raster_create(a->path, &f))
            return 41;
        int ncid = raster_file_ncid(f), d[4];
        if (nc_def_dim(ncid, "time", T, &d[0]) ||
            nc_def_dim(ncid, "z", Z, &d[1]) ||
            nc_def_dim(ncid, "y", NY, &d[2]) ||
            nc_def_dim(ncid, "x", NX, &d[3]))
            return 42;
        size_t chunk[4] = {1, 1, 4, 5};
        if (raster_def_var(f, ncid, "v", NC_FLOAT, 4, d, chunk, m, &v))
            return 43;
        raster_mask_free(m);
    }
    /* rewrite record 0 with other values */
    float data[Z * NY * NX];
    for (size_t i = 0; i < (size_t)Z * NY * NX; i++)
        data[i] = -1.0f - (float)i;
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {1, Z, NY, NX};
    if (raster_var_put(v, st, ct, NULL, data))
        return 44;
    if (a->sync && nc_sync(raster_file_ncid(f)) != NC_NOERR)
        return 45;
    _exit(TEST_CHILD_BASE); /* no raster_close: the writer "crashed" */
}

static void test_writer_died(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "died.nc");
    /* a new file, flushed but never closed: refused as incomplete */
    writer_args a = {path, 1, 0};
    assert_int_equal(in_child("new file, synced", dying_writer, &a), 0);
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    /* a new file, not even flushed: refused, whatever HDF5 left behind */
    unlink(path);
    a.sync = 0;
    assert_int_equal(in_child("new file, not synced", dying_writer, &a), 0);
    int rc = open_fails(path, RASTER_READ);
    if (rc != RASTER_EINCOMPLETE && rc != RASTER_ENETCDF &&
        rc != RASTER_EFORMAT)
        fail_msg("a file whose writer died opened with %d (%s)", rc,
                 raster_strerror(rc));
    /* a complete file reopened for writing, rewritten and synced by a
     * writer that then died: refused */
    unlink(path);
    make_raster_file(path, 0);
    a.reopen = 1;
    a.sync = 1;
    assert_int_equal(in_child("rewrite, synced", dying_writer, &a), 0);
    EXPECT_OPEN(RASTER_EINCOMPLETE, path);
    unlink(path);
}

/* A complete file reopened for writing by a writer that dies after
 * rewriting part of it, without syncing: the reader must not be served a
 * mix of old and new data as a complete file. The stores are larger than
 * HDF5's 64 KiB sieve buffer, so rewritten data reaches the disk at once
 * while metadata waits in HDF5's cache. */
enum { BT = 2, BY = 200, BX = 210 };

static float big_value(size_t i) { return (float)(i % 100000) * 0.5f; }

static void make_big_file(const char *path)
{
    int32_t *mask = malloc(sizeof(int32_t) * BY * BX);
    float *data = malloc(sizeof(float) * BT * BY * BX);
    assert_true(mask && data);
    for (size_t y = 0; y < BY; y++)
        for (size_t x = 0; x < BX; x++)
            mask[y * BX + x] = x < 140 ? 1 : x == 140 + y % 7 ? 3 : 2;
    for (size_t i = 0; i < (size_t)BT * BY * BX; i++)
        data[i] = big_value(i);
    static const char *const names[3] = {"time", "y", "x"};
    const size_t shape[3] = {BT, BY, BX}, chunk[3] = {1, 50, 35};
    write_raster_file(path, NC_FLOAT, 3, names, shape, 0, chunk, mask, data);
    free(mask);
    free(data);
}

static int big_rewriter(void *arg)
{
    raster_file *f;
    raster_var *v;
    if (raster_open(arg, RASTER_WRITE, &f) || raster_var_find(f, "v", &v))
        return 40;
    float *data = malloc(sizeof(float) * BY * BX);
    if (!data)
        return 41;
    for (size_t i = 0; i < (size_t)BY * BX; i++)
        data[i] = -1.0f - (float)i;
    size_t st[3] = {0, 0, 0}, ct[3] = {1, BY, BX};
    if (raster_var_put(v, st, ct, NULL, data))
        return 42;
    _exit(TEST_CHILD_BASE); /* dies: no raster_close, no sync */
}

static void test_writer_died_unsynced(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "died_big.nc");
    make_big_file(path);
    assert_int_equal(in_child("rewrite, not synced", big_rewriter, path), 0);
    raster_file *f;
    int rc = raster_open(path, RASTER_READ, &f);
    if (rc == RASTER_OK) {
        raster_var *v;
        RS(raster_var_find(f, "v", &v));
        float *got = malloc(sizeof(float) * BT * BY * BX);
        assert_non_null(got);
        size_t st[3] = {0, 0, 0}, ct[3] = {BT, BY, BX};
        RS(raster_var_get(v, st, ct, NULL, got));
        size_t changed = 0;
        for (size_t i = 0; i < (size_t)BT * BY * BX; i++)
            changed += got[i] != big_value(i);
        free(got);
        RS(raster_close(f));
        /* Regression (fixed): src/api/hyperslab.c var_io(): the first write after raster_open(...,
         * RASTER_WRITE) clears the completeness marker only in HDF5's
         * metadata cache (meta_mark_complete(v, 0) without nc_sync) while
         * large data writes go straight to disk; a writer that dies leaves
         * raster_complete = 1 on disk over rewritten data, and the file is
         * served as complete. */
        if (changed)
            fail_msg("%zu of %d values rewritten by a writer that died "
                     "were served as part of a complete file", changed,
                     BT * BY * BX);
    } else {
        assert_int_equal(rc, RASTER_EINCOMPLETE);
    }
    unlink(path);
}

static int open_truncated_child(void *arg)
{
    const char *path = arg;
    raster_file *f;
    int rc = raster_open(path, RASTER_READ, &f);
    if (rc)
        return rc;
    /* opened: reads must still fail cleanly or succeed */
    raster_var *v;
    if (raster_var_find(f, "v", &v) == RASTER_OK) {
        float buf[T * Z * NY * NX];
        size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
        int32_t id = 3;
        size_t os[2] = {0, 0}, oc[2] = {T, Z};
        (void)raster_var_get(v, st, ct, NULL, buf);
        (void)raster_region_read(v, &id, 1, os, oc, RASTER_LAYOUT_FULL, buf);
    }
    raster_close(f);
    return 0;
}

static void test_truncated(void **state)
{
    (void)state;
    char path[600], cut[600];
    tmpdir_path(path, sizeof path, "whole.nc");
    tmpdir_path(cut, sizeof cut, "cut.nc");
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        long size = file_size(path);
        /* the first half: refused at open */
        copy_file(path, cut, size / 2);
        int rc = open_fails(cut, RASTER_READ);
        if (rc != RASTER_ENETCDF && rc != RASTER_EFORMAT)
            fail_msg("half a raster file: raster_open gave %d (%s)", rc,
                     raster_strerror(rc));
        /* other cuts: never a crash, in a child */
        long cuts[] = {0, 8, 512, 2048, size / 4, size * 3 / 4, size - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            copy_file(path, cut, cuts[i]);
            char what[64];
            snprintf(what, sizeof what, "open of a file cut at %ld of %ld",
                     cuts[i], size);
            rc = in_child(what, open_truncated_child, cut);
            if (rc == RASTER_OK)
                fail_msg("%s: opened as a complete raster file", what);
            if (rc != RASTER_ENETCDF && rc != RASTER_EFORMAT &&
                rc != RASTER_EIO)
                fail_msg("%s: status %d (%s)", what, rc, raster_strerror(rc));
        }
    }
    unlink(path);
    unlink(cut);
}

/* ---- corrupted metadata ------------------------------------------------------ */

typedef void (*corrupt_fn)(int g);

/* Table `var` of group `sub` as format 2 names it, found where format 3
 * keeps it: in the variable's group g, a region's rows starting where its
 * chunk_rows / run_rows attribute says. Sets *tg, *varid and *row0. */
static void find_table(int g, const char *sub, const char *var, int *tg,
                       int *varid, size_t *row0)
{
    int rg;
    NC(nc_inq_grp_ncid(g, sub, &rg));
    *tg = g;
    *row0 = 0;
    if (strcmp(sub, "Mixed_Chunks") == 0) {
        var = strcmp(var, "chunks") == 0 ? "mixed_chunks" : var;
    } else {
        unsigned long long rows[2];
        NC(nc_get_att_ulonglong(rg, NC_GLOBAL, strcmp(var, "runs") == 0
                                    ? "run_rows" : "chunk_rows", rows));
        *row0 = (size_t)rows[0];
    }
    NC(nc_inq_varid(*tg, var, varid));
}

static void put_table_value(int g, const char *sub, const char *var,
                            size_t row, size_t col, long long delta)
{
    int tg, varid;
    size_t row0;
    find_table(g, sub, var, &tg, &varid, &row0);
    size_t idx[2] = {row0 + row, col};
    long long val;
    NC(nc_get_var1_longlong(tg, varid, idx, &val));
    val += delta;
    NC(nc_put_var1_longlong(tg, varid, idx, &val));
}

static void c_region_chunks_offset(int g) { put_table_value(g, "region_3", "chunks", 0, 6, 1); }
static void c_region_chunks_id(int g) { put_table_value(g, "region_6", "chunks", 1, 0, 1); }
static void c_region_chunks_cells(int g) { put_table_value(g, "region_m5", "chunks", 0, 7, -1); }
static void c_region_chunks_huge(int g) { put_table_value(g, "region_0", "chunks", 0, 3, 1LL << 40); }
static void c_mixed_chunks(int g) { put_table_value(g, "Mixed_Chunks", "chunks", 0, 1, 4); }
static void c_mixed_shares(int g) { put_table_value(g, "Mixed_Chunks", "shares", 1, 2, 1); }

/* the runs table (format 2): y x len offset per row */
static void c_runs_offset_high(int g) { put_table_value(g, "region_3", "runs", 0, 3, 1LL << 40); }
static void c_runs_offset_neg(int g) { put_table_value(g, "region_6", "runs", 1, 3, -(1LL << 40)); }
static void c_runs_overlap(int g) { put_table_value(g, "region_3", "runs", 1, 3, -1); }
static void c_runs_len(int g) { put_table_value(g, "region_0", "runs", 0, 2, 1); }
static void c_runs_len_zero(int g) { put_table_value(g, "region_m5", "runs", 0, 2, -1000); }
static void c_runs_y_out(int g) { put_table_value(g, "region_6", "runs", 0, 0, 1LL << 33); }
static void c_runs_x_out(int g) { put_table_value(g, "region_3", "runs", 0, 1, 1000); }
/* region 3's first run (row 0, x 0..4) moved one column right, onto
 * region 6's first cell: every check of region 3 alone still passes */
static void c_runs_shifted(int g) { put_table_value(g, "region_3", "runs", 0, 1, 1); }
static void c_runs_order(int g) /* first run moved below the second */
{
    int rg, varid;
    size_t row0;
    find_table(g, "region_0", "runs", &rg, &varid, &row0);
    long long a[4], b[4];
    size_t s0[2] = {row0, 0}, s1[2] = {row0 + 1, 0}, c[2] = {1, 4};
    NC(nc_get_vara_longlong(rg, varid, s0, c, a));
    NC(nc_get_vara_longlong(rg, varid, s1, c, b));
    NC(nc_put_vara_longlong(rg, varid, s0, c, b));
    NC(nc_put_vara_longlong(rg, varid, s1, c, a));
}
static void c_runs_deleted(int g) /* renamed away: no runs table */
{
    int varid;
    NC(nc_inq_varid(g, "runs", &varid));
    NC(nc_rename_var(g, varid, "gone"));
}
/* format 3: a region's claim on the shared tables' rows */
static void add_rows_att(int g, const char *sub, const char *att, int i,
                         unsigned long long delta)
{
    int rg;
    unsigned long long rows[2];
    NC(nc_inq_grp_ncid(g, sub, &rg));
    NC(nc_get_att_ulonglong(rg, NC_GLOBAL, att, rows));
    rows[i] += delta;
    NC(nc_put_att_ulonglong(rg, NC_GLOBAL, att, NC_UINT64, 2, rows));
}
static void c_run_rows_first(int g) { add_rows_att(g, "region_3", "run_rows", 0, 1); }
static void c_run_rows_count(int g) { add_rows_att(g, "region_6", "run_rows", 1, 1); }
static void c_run_rows_huge(int g) { add_rows_att(g, "region_m5", "run_rows", 1, 1ULL << 62); }
static void c_run_rows_gone(int g)
{
    int rg;
    NC(nc_inq_grp_ncid(g, "region_0", &rg));
    NC(nc_del_att(rg, NC_GLOBAL, "run_rows"));
}
static void c_chunk_rows_first(int g) { add_rows_att(g, "region_6", "chunk_rows", 0, 1); }
static void c_pure_cells(int g)
{
    int rg;
    unsigned long long n;
    NC(nc_inq_grp_ncid(g, "region_3", &rg));
    NC(nc_get_att_ulonglong(rg, NC_GLOBAL, "pure_cells", &n));
    n += 1;
    NC(nc_put_att_ulonglong(rg, NC_GLOBAL, "pure_cells", NC_UINT64, 1, &n));
}
static void c_mixed_offset(int g)
{
    int rg;
    unsigned long long n = 1ULL << 62;
    NC(nc_inq_grp_ncid(g, "region_6", &rg));
    NC(nc_put_att_ulonglong(rg, NC_GLOBAL, "mixed_offset", NC_UINT64, 1, &n));
}
/* format 3: the variable's summary of its regions, 8 values per region */
static void add_summary(int g, size_t row, size_t field, long long delta)
{
    long long v[64];
    size_t len;
    NC(nc_inq_attlen(g, NC_GLOBAL, "raster_regions", &len));
    assert_true(len <= 64 && row * 8 + field < len);
    NC(nc_get_att_longlong(g, NC_GLOBAL, "raster_regions", v));
    v[row * 8 + field] += delta;
    NC(nc_put_att_longlong(g, NC_GLOBAL, "raster_regions", NC_INT64, len, v));
}
static void c_summary_id(int g) { add_summary(g, 0, 0, 77); }
static void c_summary_pure(int g) { add_summary(g, 1, 1, 1); }
static void c_summary_mixed_offset(int g) { add_summary(g, 2, 3, 1); }
static void c_summary_chunk_first(int g) { add_summary(g, 1, 4, 1); }
static void c_summary_run_first(int g) { add_summary(g, 1, 6, 1); }
static void c_summary_run_count(int g) { add_summary(g, 3, 7, -1); }
static void c_summary_short(int g)
{
    long long v[64];
    size_t len;
    NC(nc_inq_attlen(g, NC_GLOBAL, "raster_regions", &len));
    NC(nc_get_att_longlong(g, NC_GLOBAL, "raster_regions", v));
    NC(nc_put_att_longlong(g, NC_GLOBAL, "raster_regions", NC_INT64, len - 1,
                           v));
}
static void c_summary_text(int g)
{
    NC(nc_del_att(g, NC_GLOBAL, "raster_regions"));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_regions", 2, "12"));
}

static void c_region_duplicated(int g) /* a second group claims region 3 */
{
    int rg, id = 3;
    NC(nc_def_grp(g, "region_33", &rg));
    NC(nc_put_att_int(rg, NC_GLOBAL, "region_id", NC_INT, 1, &id));
}

static void c_region_id(int g)
{
    int rg, id = 4;
    NC(nc_inq_grp_ncid(g, "region_3", &rg));
    NC(nc_put_att_int(rg, NC_GLOBAL, "region_id", NC_INT, 1, &id));
}

static void c_region_id_text(int g)
{
    int rg;
    NC(nc_inq_grp_ncid(g, "region_6", &rg));
    NC(nc_put_att_text(rg, NC_GLOBAL, "region_id", 1, "6"));
}

static void c_region_renamed(int g)
{
    int rg;
    NC(nc_inq_grp_ncid(g, "region_m5", &rg));
    NC(nc_rename_grp(rg, "region_m6"));
}

static void c_mixed_renamed(int g)
{
    int rg;
    NC(nc_inq_grp_ncid(g, "Mixed_Chunks", &rg));
    NC(nc_rename_grp(rg, "Mixed"));
}

static void c_mask_cell_moved(int g) /* a cell of region 3 becomes 6 */
{
    int varid, six = 6;
    size_t idx[2] = {0, 4};
    NC(nc_inq_varid(g, "mask", &varid));
    NC(nc_put_var1_int(g, varid, idx, &six));
}

static void c_mask_new_id(int g) /* a region without a group */
{
    int varid, id = 8;
    size_t idx[2] = {9, 11};
    NC(nc_inq_varid(g, "mask", &varid));
    NC(nc_put_var1_int(g, varid, idx, &id));
}

static void c_type(int g)
{
    int t = NC_CHAR;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_type", NC_INT, 1, &t));
}

static void c_type_other(int g) /* a numeric type the stores do not have */
{
    int t = NC_DOUBLE;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_type", NC_INT, 1, &t));
}

static void c_chunk_zero(int g)
{
    unsigned long long ch[4] = {1, 1, 0, 5};
    NC(nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, 4, ch));
}

static void c_chunk_tile(int g) /* another tile: tables no longer match */
{
    unsigned long long ch[4] = {1, 1, 5, 4};
    NC(nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, 4, ch));
}

static void c_chunk_narrow(int g) /* a width dividing the true one */
{
    unsigned long long ch[4] = {1, 1, 4, 1};
    NC(nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, 4, ch));
}

static void c_chunk_big(int g)
{
    unsigned long long ch[4] = {1, 1, NY + 1, 5};
    NC(nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, 4, ch));
}

static void c_chunk_len(int g)
{
    unsigned long long ch[3] = {1, 4, 5};
    NC(nc_put_att_ulonglong(g, NC_GLOBAL, "raster_chunk", NC_UINT64, 3, ch));
}

static void c_dims_missing(int g)
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 14, "time/z/y/nope"));
}

static void c_dims_swapped(int g) /* grid x, y: the mask is y, x */
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 10, "time/z/x/y"));
}

static void c_dims_one(int g)
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 1, "y"));
}

static void c_dims_empty(int g)
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 3, "///"));
}

static void c_dimids_bad(int g)
{
    int ids[4];
    NC(nc_get_att_int(g, NC_GLOBAL, "raster_dimids", ids));
    ids[3] = 999;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, 4, ids));
}

static void c_dimids_swapped(int g) /* ids of y and x swapped, names kept */
{
    int ids[4];
    NC(nc_get_att_int(g, NC_GLOBAL, "raster_dimids", ids));
    int t = ids[2];
    ids[2] = ids[3];
    ids[3] = t;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, 4, ids));
}

static void c_dimids_deleted(int g)
{
    NC(nc_del_att(g, NC_GLOBAL, "raster_dimids"));
}

static void c_version_text(int g)
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_format_version", 1, "1"));
}

/* The placeholder: v in the storage group's parent. */

static int parent_of(int g)
{
    int p;
    NC(nc_inq_grp_parent(g, &p));
    return p;
}

/* Renames the placeholder out of the way; returns the parent. */
static int move_placeholder(int g, const char *to)
{
    int p = parent_of(g), varid;
    NC(nc_inq_varid(p, "v", &varid));
    NC(nc_rename_var(p, varid, to));
    return p;
}

/* Replaces the placeholder by a new variable v of `type` over the
 * dimensions named in dims[0..ndims). */
static void replace_placeholder(int g, nc_type type, int ndims,
                                const char *const *dims)
{
    int p = move_placeholder(g, "v_old"), ids[4], varid;
    for (int i = 0; i < ndims; i++)
        NC(nc_inq_dimid(p, dims[i], &ids[i]));
    NC(nc_def_var(p, "v", type, ndims, ids, &varid));
}

static const char *const std_dims[4] = {"time", "z", "y", "x"};

static void c_placeholder_renamed(int g) { move_placeholder(g, "w"); }

static void c_placeholder_group(int g) /* v is now a group, not a variable */
{
    int p = move_placeholder(g, "w"), ng;
    NC(nc_def_grp(p, "v", &ng));
}

static void c_placeholder_type(int g)
{
    replace_placeholder(g, NC_DOUBLE, 4, std_dims);
}

static void c_placeholder_type_int(int g) /* same size, other type */
{
    replace_placeholder(g, NC_INT, 4, std_dims);
}

static void c_placeholder_grid_swapped(int g)
{
    static const char *const dims[4] = {"time", "z", "x", "y"};
    replace_placeholder(g, NC_FLOAT, 4, dims);
}

static void c_placeholder_fewer_dims(int g)
{
    static const char *const dims[3] = {"time", "y", "x"};
    replace_placeholder(g, NC_FLOAT, 3, dims);
}

static void c_placeholder_other_dim(int g) /* a dimension of equal length */
{
    int p = parent_of(g), z2;
    NC(nc_def_dim(p, "z2", Z, &z2));
    static const char *const dims[4] = {"time", "z2", "y", "x"};
    replace_placeholder(g, NC_FLOAT, 4, dims);
}

static void c_variable_deleted(int g)
{
    NC(nc_del_att(g, NC_GLOBAL, "raster_variable"));
}

static void c_variable_missing(int g) /* names no variable */
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", 1, "w"));
}

static void c_variable_plain(int g) /* names a plain variable of another shape */
{
    int p = parent_of(g), d[2], varid;
    NC(nc_inq_dimid(p, "y", &d[0]));
    NC(nc_inq_dimid(p, "x", &d[1]));
    NC(nc_def_var(p, "plain", NC_FLOAT, 2, d, &varid));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", 5, "plain"));
}

static void c_variable_empty(int g)
{
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", 0, ""));
}

static void c_variable_int(int g)
{
    int one = 1;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_variable", NC_INT, 1, &one));
}

static void c_variable_long(int g) /* longer than any netCDF name */
{
    char name[NC_MAX_NAME + 40];
    memset(name, 'v', sizeof name);
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", sizeof name, name));
}

static void c_dimids_short(int g)
{
    int ids[4];
    NC(nc_get_att_int(g, NC_GLOBAL, "raster_dimids", ids));
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, 3, ids + 1));
}

/* raster_dims and raster_dimids agree with each other, on a dimension of
 * the right length, but not with the placeholder */
static void c_dims_not_placeholder(int g)
{
    int p = parent_of(g), z2, ids[4];
    NC(nc_def_dim(p, "z2", Z, &z2));
    NC(nc_get_att_int(g, NC_GLOBAL, "raster_dimids", ids));
    ids[1] = z2;
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, 4, ids));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 11, "time/z2/y/x"));
}

/* The standard raster file at `path`, then damaged by `fn` through netCDF
 * in the variable's group. */
/* 1: damage_file also drops the checksums (their marker), as in a
 * file written before them: the checks below the checksums then decide,
 * which a file with checksums reaches only for damage done by a writer
 * that computed them (test_integrity.sh checks the checksums). */
static int corrupt_without_sums;

static void damage_file(const char *path, corrupt_fn fn)
{
    int ncid, g;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
    int st = corrupt_without_sums
                 ? nc_del_att(g, NC_GLOBAL, "raster_regions_crc32c")
                 : NC_NOERR;
    assert_true(st == NC_NOERR || st == NC_ENOTATT); /* a second damage */
    fn(g);
    NC(nc_close(ncid));
}

static void make_corrupt_file(const char *path, int unlim, corrupt_fn fn)
{
    make_raster_file(path, unlim);
    damage_file(path, fn);
}

static void test_corrupt_metadata(void **state)
{
    (void)state;
    static const struct { const char *name; corrupt_fn fn; int code; } cases[] = {
        {"region chunks offset", c_region_chunks_offset, RASTER_EFORMAT},
        {"region chunks id", c_region_chunks_id, RASTER_EFORMAT},
        {"region chunks cells", c_region_chunks_cells, RASTER_EFORMAT},
        {"region chunks huge h", c_region_chunks_huge, RASTER_EFORMAT},
        {"Mixed_Chunks chunks", c_mixed_chunks, RASTER_EFORMAT},
        {"Mixed_Chunks shares", c_mixed_shares, RASTER_EFORMAT},
        {"runs offset huge", c_runs_offset_high, RASTER_EFORMAT},
        {"runs offset negative", c_runs_offset_neg, RASTER_EFORMAT},
        {"runs overlapping", c_runs_overlap, RASTER_EFORMAT},
        {"runs length", c_runs_len, RASTER_EFORMAT},
        {"runs length negative", c_runs_len_zero, RASTER_EFORMAT},
        {"runs row outside", c_runs_y_out, RASTER_EFORMAT},
        {"runs column outside", c_runs_x_out, RASTER_EFORMAT},
        {"runs out of order", c_runs_order, RASTER_EFORMAT},
        {"run shifted onto another region", c_runs_shifted, RASTER_EFORMAT},
        {"runs table missing", c_runs_deleted, RASTER_EFORMAT},
        {"run_rows moved", c_run_rows_first, RASTER_EFORMAT},
        {"run_rows one too many", c_run_rows_count, RASTER_EFORMAT},
        {"run_rows huge", c_run_rows_huge, RASTER_EFORMAT},
        {"run_rows missing", c_run_rows_gone, RASTER_EFORMAT},
        {"chunk_rows moved", c_chunk_rows_first, RASTER_EFORMAT},
        {"pure_cells changed", c_pure_cells, RASTER_EFORMAT},
        {"mixed_offset huge", c_mixed_offset, RASTER_EFORMAT},
        {"region group duplicated", c_region_duplicated, RASTER_EFORMAT},
        {"raster_regions id", c_summary_id, RASTER_EFORMAT},
        {"raster_regions pure_cells", c_summary_pure, RASTER_EFORMAT},
        {"raster_regions mixed_offset", c_summary_mixed_offset,
         RASTER_EFORMAT},
        {"raster_regions chunk_first", c_summary_chunk_first, RASTER_EFORMAT},
        {"raster_regions run_first", c_summary_run_first, RASTER_EFORMAT},
        {"raster_regions run_count", c_summary_run_count, RASTER_EFORMAT},
        {"raster_regions short", c_summary_short, RASTER_EFORMAT},
        {"raster_regions as text", c_summary_text, RASTER_EFORMAT},
        {"region_id changed", c_region_id, RASTER_EFORMAT},
        {"region_id as text", c_region_id_text, RASTER_EFORMAT},
        {"region group renamed", c_region_renamed, RASTER_EFORMAT},
        {"Mixed_Chunks renamed", c_mixed_renamed, RASTER_EFORMAT},
        {"mask cell moved", c_mask_cell_moved, RASTER_EFORMAT},
        {"mask new id", c_mask_new_id, RASTER_EFORMAT},
        {"raster_type char", c_type, RASTER_EFORMAT},
        {"raster_type double", c_type_other, RASTER_EFORMAT},
        {"raster_chunk zero", c_chunk_zero, RASTER_EFORMAT},
        {"raster_chunk other tile", c_chunk_tile, RASTER_EFORMAT},
        {"raster_chunk tile > grid", c_chunk_big, RASTER_EFORMAT},
        {"raster_chunk length", c_chunk_len, RASTER_EFORMAT},
        {"raster_dims one", c_dims_one, RASTER_EFORMAT},
        {"raster_dims empty", c_dims_empty, RASTER_EFORMAT},
        {"raster_dimids unknown id", c_dimids_bad, RASTER_EFORMAT},
        {"raster_dimids swapped", c_dimids_swapped, RASTER_EFORMAT},
        {"raster_dimids deleted", c_dimids_deleted, RASTER_EFORMAT},
        {"raster_dimids too short", c_dimids_short, RASTER_EFORMAT},
        {"raster_dims/dimids not the placeholder's", c_dims_not_placeholder,
         RASTER_EFORMAT},
        {"format version as text", c_version_text, RASTER_EFORMAT},
        {"placeholder double", c_placeholder_type, RASTER_EFORMAT},
        {"placeholder int", c_placeholder_type_int, RASTER_EFORMAT},
        {"placeholder grid swapped", c_placeholder_grid_swapped,
         RASTER_EFORMAT},
        {"placeholder 3-D", c_placeholder_fewer_dims, RASTER_EFORMAT},
        {"placeholder other dimension", c_placeholder_other_dim,
         RASTER_EFORMAT},
        {"raster_variable deleted", c_variable_deleted, RASTER_EFORMAT},
        {"raster_variable names a plain variable", c_variable_plain,
         RASTER_EFORMAT},
        {"raster_variable an int", c_variable_int, RASTER_EFORMAT},
        {"raster_variable too long", c_variable_long, RASTER_EFORMAT},
    };
    char path[600];
    tmpdir_path(path, sizeof path, "corrupt.nc");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int unlim = 0; unlim < 2; unlim++) {
            make_corrupt_file(path, unlim, cases[i].fn);
            for (int mode = 0; mode < 2; mode++) {
                int rc = open_fails(path, mode);
                if (rc != cases[i].code)
                    fail_msg("%s (%s, %s): raster_open gave %d (%s: %s), "
                             "expected %d", cases[i].name,
                             unlim ? "unlimited" : "fixed",
                             mode ? "write" : "read", rc, raster_strerror(rc),
                             raster_errmsg(), cases[i].code);
            }
        }
    }
    unlink(path);
}

/* Renames without raster (netCDF's own nc_rename_dim and nc_rename_var,
 * as ncrename does): ids and shapes still agree, so the file reads as
 * written, under the new names; a writable open records them. */
static void c_dim_renamed(int g) /* y becomes lat */
{
    int p = parent_of(g), y;
    NC(nc_inq_dimid(p, "y", &y));
    NC(nc_rename_dim(p, y, "lat"));
}

/* then the dimension, in a second session: netCDF 4.9.0 fails to close a
 * file after renaming a variable and a dimension in one ("Problem with
 * HDF5 dimscales", also in a plain file) */
static void c_var_renamed_then_dim(int g)
{
    move_placeholder(g, "w");
}

/* A second placeholder of the same type and dimensions, so that a search
 * for a renamed one must skip the variable another group names. */
static void add_second_var(const char *path)
{
    int ncid, p, dims[4], varid;
    raster_file *f;
    raster_var *v, *w;
    RS(raster_open(path, RASTER_WRITE, &f));
    RS(raster_var_find(f, "v", &v));
    raster_var_attributes(v, &p, &varid);
    ncid = p;
    NC(nc_inq_vardimid(p, varid, dims));
    int32_t mask[NY * NX];
    std_mask(mask);
    raster_mask *m;
    RS(raster_mask_wrap(mask, NY, NX, &m));
    const size_t chunk[4] = {1, 1, 4, 5};
    RS(raster_def_var(f, ncid, "u", NC_FLOAT, 4, dims, chunk, m, &w));
    raster_mask_free(m);
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = -std_value(i);
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
    RS(raster_var_put(w, st, ct, NULL, data));
    free(data);
    RS(raster_close(f));
}

static void rename_var_in(const char *path, const char *from, const char *to)
{
    int ncid, varid;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_varid(ncid, from, &varid));
    NC(nc_rename_var(ncid, varid, to));
    NC(nc_close(ncid));
}

static void set_variable_att(const char *path, const char *group,
                             const char *name)
{
    int ncid, g;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, group, &g));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_variable", strlen(name), name));
    NC(nc_close(ncid));
}

/* Variable `name` of f holds sign * std_value. */
static void check_values(raster_file *f, const char *name, int sign)
{
    raster_var *v;
    RS(raster_var_find(f, name, &v));
    float *got = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(got);
    size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
    RS(raster_var_get(v, st, ct, NULL, got));
    for (size_t k = 0; k < (size_t)T * Z * NY * NX; k++)
        if (got[k] != (float)sign * std_value(k))
            fail_msg("%s: element %zu is %g, expected %g", name, k,
                     (double)got[k], (double)sign * std_value(k));
    free(got);
}

static void test_renamed_without_raster(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        corrupt_fn fn;
        const char *var, *dims;
        corrupt_fn then; /* a second session's rename, or NULL */
    } cases[] = {
        {"dimension renamed", c_dim_renamed, "v", "time/z/lat/x", NULL},
        {"placeholder renamed", c_placeholder_renamed, "w", "time/z/y/x", NULL},
        {"placeholder and dimension renamed", c_var_renamed_then_dim, "w",
         "time/z/lat/x", c_dim_renamed},
        /* a name was taken from it and given to a group: still a rename */
        {"placeholder renamed, a group of its name", c_placeholder_group, "w",
         "time/z/y/x", NULL},
        /* stored names that are not the ids' are a rename too: the ids rule */
        {"raster_dims unknown name", c_dims_missing, "v", "time/z/y/x", NULL},
        {"raster_dims swapped", c_dims_swapped, "v", "time/z/y/x", NULL},
        {"raster_variable names nothing", c_variable_missing, "v",
         "time/z/y/x", NULL},
        {"raster_variable empty", c_variable_empty, "v", "time/z/y/x", NULL},
    };
    char path[600];
    tmpdir_path(path, sizeof path, "renamed.nc");
    /* format 5 too: its variable, which holds the values, carries no
     * marker; raster's note tells it (once refused the whole file) */
    int saved = meta_default_format;
    for (int f5 = 0; f5 < 2; f5++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        meta_default_format = f5 ? 5 : saved;
        /* format 5, a group of the old name: the writable open's close
         * fails netCDF's flush ("Problem with HDF5 dimscales"), as after
         * a rename through raster (raster_var_rename); not yet known why */
        if (f5 && cases[i].fn == c_placeholder_group)
            continue;
        for (int unlim = 0; unlim < 2; unlim++) {
            for (int mode = 0; mode < 2; mode++) {
                make_corrupt_file(path, unlim, cases[i].fn);
                if (cases[i].then)
                    damage_file(path, cases[i].then);
                raster_file *f;
                raster_var *v;
                int rc = raster_open(path, mode ? RASTER_WRITE : RASTER_READ,
                                     &f);
                if (rc != RASTER_OK)
                    fail_msg("%s (format %d, %s, %s): %s", cases[i].name,
                             f5 ? 5 : 3, unlim ? "unlimited" : "fixed",
                             mode ? "write" : "read", raster_errmsg());
                RS(raster_var_find(f, cases[i].var, &v));
                assert_int_equal(v->format, f5 ? 5 : 3);
                check_values(f, cases[i].var, 1);
                RS(raster_var_find(f, cases[i].var, &v));
                RS(raster_var_check(v));
                if (raster_close(f) != RASTER_OK)
                    fail_msg("%s (format %d, %s, %s): closing: %s",
                             cases[i].name, f5 ? 5 : 3,
                             unlim ? "unlimited" : "fixed",
                             mode ? "write" : "read", raster_errmsg());
                /* a writable open recorded the names the ids now have */
                int ncid, g;
                char text[200] = "";
                size_t len;
                NC(nc_open(path, NC_NOWRITE, &ncid));
                NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
                NC(nc_inq_attlen(g, NC_GLOBAL, "raster_variable", &len));
                assert_true(len < sizeof text);
                NC(nc_get_att_text(g, NC_GLOBAL, "raster_variable", text));
                text[len] = '\0';
                if (mode && strcmp(text, cases[i].var) != 0)
                    fail_msg("%s: raster_variable is %s", cases[i].name, text);
                NC(nc_inq_attlen(g, NC_GLOBAL, "raster_dims", &len));
                assert_true(len < sizeof text);
                NC(nc_get_att_text(g, NC_GLOBAL, "raster_dims", text));
                text[len] = '\0';
                if (mode && strcmp(text, cases[i].dims) != 0)
                    fail_msg("%s: raster_dims is %s", cases[i].name, text);
                NC(nc_close(ncid));
            }
        }
    }
    meta_default_format = saved;
    /* two placeholders of one shape: the renamed one is the one no other
     * group names; both renamed, raster cannot tell them apart */
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        add_second_var(path);
        rename_var_in(path, "v", "w");
        raster_file *f;
        RS(raster_open(path, RASTER_READ, &f));
        check_values(f, "w", 1);
        check_values(f, "u", -1);
        RS(raster_close(f));
        /* as if u were renamed too (netCDF 4.9.0 fails a second
         * nc_rename_var in this file, with or without raster) */
        set_variable_att(path, "raster_u", "gone");
        assert_int_equal(open_fails(path, RASTER_READ), RASTER_EFORMAT);
        if (!strstr(raster_errmsg(), "2 variables could be it"))
            fail_msg("both renamed: %s", raster_errmsg());
    }
    unlink(path);
}

static void c_summary_deleted(int g)
{
    NC(nc_del_att(g, NC_GLOBAL, "raster_regions"));
    NC(nc_del_att(g, NC_GLOBAL, "raster_regions_columns"));
}
static void c_summary_deleted_run_rows(int g)
{
    c_summary_deleted(g);
    c_run_rows_first(g);
}

/* A format 3 file written before the variable's summary of its regions
 * existed: a read-only open takes the regions from their groups, so the
 * data reads back whole, hyperslabs and regions, and a damaged group
 * attribute is refused as before. */
static void test_without_summary(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "nosummary.nc");
    for (int unlim = 0; unlim < 2; unlim++) {
        make_corrupt_file(path, unlim, c_summary_deleted);
        raster_file *f;
        raster_var *v;
        RS(raster_open(path, RASTER_READ, &f));
        check_std_data(f);
        RS(raster_var_find(f, "v", &v));
        int32_t id = 6, mask[NY * NX];
        std_mask(mask);
        size_t n, k = 0, ost[2] = {0, 0}, oct[2] = {T, Z};
        RS(raster_region_size(v, &id, 1, RASTER_LAYOUT_PACKED, &n));
        float *got = malloc(sizeof(float) * T * Z * n);
        assert_non_null(got);
        RS(raster_region_read(v, &id, 1, ost, oct, RASTER_LAYOUT_PACKED, got));
        for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
            if (mask[i % (NY * NX)] == id && got[k++] != std_value(i))
                fail_msg("region 6: value %zu is %g, expected %g", k - 1,
                         (double)got[k - 1], (double)std_value(i));
        assert_int_equal(k, T * Z * n);
        free(got);
        RS(raster_var_check(v));
        RS(raster_close(f));
        make_corrupt_file(path, unlim, c_summary_deleted_run_rows);
        assert_int_equal(open_fails(path, RASTER_READ), RASTER_EFORMAT);
    }
    unlink(path);
}

/* Region 3's store replaced, with HDF5, by a dataset of another type or
 * of one cell more (netCDF cannot rename a variable with dimension
 * scales): refused by the first read (read-only, from HDF5) or at open
 * (writable, through netCDF). */
static void test_store_replaced(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "store.nc");
    static const struct {
        const char *name;
        int type; /* 0 float, 1 double, 2 int */
        int longer;
    } cases[] = {{"doubles", 1, 0}, {"ints", 2, 0}, {"one cell more", 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int unlim = 0; unlim < 2; unlim++) {
            make_raster_file(path, unlim);
            hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
            assert_true(fid >= 0);
            const char *store = "/raster_v/region_3/data";
            hid_t did = H5Dopen2(fid, store, H5P_DEFAULT), space;
            assert_true(did >= 0);
            hsize_t dims[4];
            space = H5Dget_space(did);
            int nd = H5Sget_simple_extent_dims(space, dims, NULL);
            assert_int_equal(nd, 3);
            H5Sclose(space);
            H5Dclose(did);
            assert_true(H5Lmove(fid, store, fid, "/raster_v/region_3/was",
                                H5P_DEFAULT, H5P_DEFAULT) >= 0);
            dims[2] += (hsize_t)cases[i].longer;
            space = H5Screate_simple(nd, dims, NULL);
            hid_t type = cases[i].type == 1   ? H5T_NATIVE_DOUBLE
                         : cases[i].type == 2 ? H5T_NATIVE_INT
                                              : H5T_NATIVE_FLOAT;
            did = H5Dcreate2(fid, store, type, space, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT);
            assert_true(did >= 0);
            H5Dclose(did);
            H5Sclose(space);
            H5Fclose(fid);
            for (int mode = 0; mode < 2; mode++) {
                int rc = open_fails(path, mode);
                if (rc != RASTER_EFORMAT)
                    fail_msg("store of %s (%s, %s): gave %d (%s)",
                             cases[i].name, unlim ? "unlimited" : "fixed",
                             mode ? "write" : "read", rc, raster_errmsg());
            }
            /* read-only: the read itself refuses it, before the check */
            raster_file *f;
            raster_var *v;
            RS(raster_open(path, RASTER_READ, &f));
            RS(raster_var_find(f, "v", &v));
            float *buf = malloc(sizeof(float) * T * Z * NY * NX);
            assert_non_null(buf);
            size_t st[4] = {0}, ct[4] = {T, Z, NY, NX};
            raster_errmsg_clear();
            int rc = raster_var_get(v, st, ct, NULL, buf);
            if (rc != RASTER_EFORMAT ||
                !strstr(raster_errmsg(), "wrong type or shape"))
                fail_msg("store of %s (%s): read gave %d (%s)", cases[i].name,
                         unlim ? "unlimited" : "fixed", rc, raster_errmsg());
            free(buf);
            RS(raster_close(f));
        }
    }
    unlink(path);
}

/* The standard file damaged by fn, opened read-only; the caller closes. */
static void open_corrupt_read(const char *path, int unlim, corrupt_fn fn,
                              raster_file **f, raster_var **v)
{
    make_corrupt_file(path, unlim, fn);
    RS(raster_open(path, RASTER_READ, f));
    RS(raster_var_find(*f, "v", v));
}

/* Stored mask cell (y, x) set to `id`. */
static void set_mask_cell(int g, size_t y, size_t x, int id)
{
    int varid;
    size_t idx[2] = {y, x};
    NC(nc_inq_varid(g, "mask", &varid));
    NC(nc_put_var1_int(g, varid, idx, &id));
}

/* tile (0, 0) is region 3's alone; tile (1, 1) holds regions 6, 0, -5 */
static void c_mask_pure_cell(int g) { set_mask_cell(g, 0, 0, 6); }
static void c_mask_mixed_cell(int g) { set_mask_cell(g, 5, 5, -5); }

/* A read-only file serves hyperslabs from its `chunks` table and stored
 * mask (src/format/tiles.c), each served cell checked against the mask: where the
 * two disagree the read itself refuses the file. The runs of one region
 * (the one with the fewest) pin the tile shape down, so a damaged run of
 * that region is refused by the read too. */
static void test_hyperslab_contradictions(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        corrupt_fn fn;
        int code;
        const char *msg;
    } cases[] = {
        {"mask cell of a pure tile", c_mask_pure_cell, RASTER_EFORMAT,
         "lies in region 3's chunk but the mask says 6"},
        {"mask cell of a mixed tile", c_mask_mixed_cell, RASTER_EFORMAT,
         "more cells in tile (1, 1) than its share"},
        {"pure chunk offset", c_region_chunks_offset, RASTER_EFORMAT,
         "index table `chunks`"},
        /* a hyperslab places cells by `chunks` and the mask, not by runs:
         * the mixed tiles' rows pin the tile shape down, so no region's
         * runs are loaded and the values written are served (the full
         * check below still refuses the file) */
        {"run shifted onto another region", c_runs_shifted, RASTER_OK,
         NULL},
    };
    char path[600];
    tmpdir_path(path, sizeof path, "contra.nc");
    corrupt_without_sums = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int unlim = 0; unlim < 2; unlim++) {
            raster_file *f;
            raster_var *v;
            open_corrupt_read(path, unlim, cases[i].fn, &f, &v);
            size_t shape[4], start[4] = {0};
            RS(raster_var_dims(v, NULL, shape, NULL));
            float *buf = malloc(sizeof(float) * T * Z * NY * NX);
            assert_non_null(buf);
            raster_errmsg_clear();
            int rc = raster_var_get(v, start, shape, NULL, buf);
            if (rc != cases[i].code)
                fail_msg("%s (%s): read gave %d (%s), expected %d",
                         cases[i].name, unlim ? "unlimited" : "fixed", rc,
                         raster_errmsg(), cases[i].code);
            if (cases[i].msg && !strstr(raster_errmsg(), cases[i].msg))
                fail_msg("%s: message \"%s\"", cases[i].name,
                         raster_errmsg());
            for (size_t k = 0; rc == RASTER_OK && k < T * Z * NY * NX; k++)
                if (buf[k] != std_value(k))
                    fail_msg("%s: cell %zu is %g, written %g", cases[i].name,
                             k, buf[k], std_value(k));
            /* the full check compares every table with the mask */
            assert_int_equal(raster_var_check(v), RASTER_EFORMAT);
            free(buf);
            RS(raster_close(f));
        }
    }
    corrupt_without_sums = 0;
    unlink(path);
}

/* Format 5 (src/format/tilestore.c): a read-only file's stores are
 * indexed from the tables, store by store, so a damaged `chunks` row would
 * move a tile's values elsewhere. Region 0's first two pure chunks (tiles
 * (0, 2) and (1, 2)) swap places in its store: with checksums the read
 * refuses the rows; without them the read takes the full check against
 * the mask instead of trusting them. */
static void c5_swap_pure(int g)
{
    long long sum[64];
    size_t len;
    int varid;
    NC(nc_inq_attlen(g, NC_GLOBAL, "raster_regions", &len));
    assert_true(len <= 64);
    NC(nc_get_att_longlong(g, NC_GLOBAL, "raster_regions", sum));
    size_t r = 0;
    while (r * 8 < len && sum[r * 8] != 0)
        r++;
    assert_true(r * 8 < len);
    NC(nc_inq_varid(g, "chunks", &varid));
    size_t first = (size_t)sum[r * 8 + 4], n = (size_t)sum[r * 8 + 5];
    long long rows[16][8];
    assert_true(n <= 16);
    size_t st[2] = {first, 0}, ct[2] = {n, 8}, pure[2], np = 0;
    NC(nc_get_vara_longlong(g, varid, st, ct, &rows[0][0]));
    for (size_t i = 0; i < n && np < 2; i++)
        if (rows[i][5] == 0)
            pure[np++] = i;
    assert_int_equal(np, 2);
    long long t = rows[pure[0]][6];
    rows[pure[0]][6] = rows[pure[1]][6];
    rows[pure[1]][6] = t;
    NC(nc_put_vara_longlong(g, varid, st, ct, &rows[0][0]));
}

/* The mixed store's first tile named one tile to the right. */
static void c5_mixed_moved(int g)
{
    int varid;
    NC(nc_inq_varid(g, "mixed_chunks", &varid));
    size_t idx[2] = {0, 2};
    long long x0;
    NC(nc_get_var1_longlong(g, varid, idx, &x0));
    x0 += 5;
    NC(nc_put_var1_longlong(g, varid, idx, &x0));
}

static void test_format5_tables_damaged(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        corrupt_fn fn;
        int nosums;
        const char *msg;
    } cases[] = {
        {"pure chunks swapped", c5_swap_pure, 0, "checksum"},
        {"pure chunks swapped, no checksums", c5_swap_pure, 1, "chunks"},
        {"mixed tile moved", c5_mixed_moved, 0, "mixed_chunks"},
        {"mixed tile moved, no checksums", c5_mixed_moved, 1, "mixed"},
    };
    char path[600];
    tmpdir_path(path, sizeof path, "f5damaged.nc");
    int saved = meta_default_format;
    meta_default_format = 5;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int unlim = 0; unlim < 2; unlim++) {
            raster_file *f;
            raster_var *v;
            corrupt_without_sums = cases[i].nosums;
            open_corrupt_read(path, unlim, cases[i].fn, &f, &v);
            /* region 0: its pure chunks and its share of tile (1, 1) */
            int32_t id = 0;
            size_t cells, ost[2] = {0, 0}, oct[2] = {T, Z};
            RS(raster_region_size(v, &id, 1, RASTER_LAYOUT_PACKED, &cells));
            float *buf = malloc(sizeof(float) * T * Z * cells);
            assert_non_null(buf);
            raster_errmsg_clear();
            int rc = raster_region_read(v, &id, 1, ost, oct,
                                        RASTER_LAYOUT_PACKED, buf);
            free(buf);
            if (rc != RASTER_EFORMAT || !strstr(raster_errmsg(), cases[i].msg))
                fail_msg("%s (%s): the read gave %d (%s)", cases[i].name,
                         unlim ? "unlimited" : "fixed", rc, raster_errmsg());
            RS(raster_close(f));
        }
    }
    corrupt_without_sums = 0;
    meta_default_format = saved;
    unlink(path);
}

/* The series of every record and level at grid cell (y, x), read from
 * v; RASTER_OK only when each value is the one written. */
static int point_series(raster_var *v, size_t y, size_t x)
{
    size_t st[4] = {0, 0, y, x}, ct[4] = {T, Z, 1, 1};
    float got[T * Z];
    int rc = raster_var_get(v, st, ct, NULL, got);
    for (size_t i = 0; rc == RASTER_OK && i < T * Z; i++)
        if (got[i] != std_value(i * NY * NX + y * NX + x))
            fail_msg("cell (%zu, %zu) plane %zu: %g, written %g", y, x, i,
                     got[i], std_value(i * NY * NX + y * NX + x));
    return rc;
}

typedef struct point_arg {
    raster_var *v;
    int first, failures;
} point_arg;

/* Every cell's series, from cell `first` on, wrapping around. */
static void *point_reader(void *p)
{
    point_arg *a = p;
    for (int k = 0; k < NY * NX; k++) {
        int c = (a->first + k) % (NY * NX);
        size_t st[4] = {0, 0, (size_t)(c / NX), (size_t)(c % NX)};
        size_t ct[4] = {T, Z, 1, 1};
        float got[T * Z];
        if (raster_var_get(a->v, st, ct, NULL, got) != RASTER_OK) {
            a->failures++;
            continue;
        }
        for (size_t i = 0; i < T * Z; i++)
            if (got[i] != std_value(i * NY * NX + (size_t)c)) {
                a->failures++;
                break;
            }
    }
    return NULL;
}

/* A small read of a file with checksums builds a partial tile index: the
 * `chunks` rows of the regions its tiles' mask names, each region's rows
 * checked against their checksum (src/format/tiles.c, load_partial). Every cell's
 * series on a fresh handle and all of them on one, against the values
 * written; damage in the rows of a region is refused by the first read
 * that names it, and a cell whose mask names another region than its
 * tile's rows is refused too. */
static void test_partial_tile_index(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "partial.nc");
    raster_file *f, *g;
    raster_var *v, *w;
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        RS(raster_open(path, RASTER_READ, &g));
        RS(raster_var_find(g, "v", &w));
        for (size_t y = 0; y < NY; y++)
            for (size_t x = 0; x < NX; x++) {
                RS(raster_open(path, RASTER_READ, &f));
                RS(raster_var_find(f, "v", &v));
                assert_int_equal(tiles_state(v), 0);
                RS(point_series(v, y, x));
                /* tiles (1, 0), (1, 1), (2, 0) and (2, 1) are mixed: the
                 * whole index; the others: the partial one */
                int mixed = y >= 4 && x < 10;
                assert_int_equal(tiles_state(v), mixed ? 2 : 1);
                RS(raster_close(f));
                /* one handle: partial, then whole at the first mixed tile */
                RS(point_series(w, NY - 1 - y, NX - 1 - x));
            }
        assert_int_equal(tiles_state(w), 2);
        RS(raster_close(g));
    }
    /* threads reading points on one handle: the partial index grows and
     * is replaced by the whole one while the others read */
    make_raster_file(path, 1);
    RS(raster_open(path, RASTER_READ, &g));
    RS(raster_var_find(g, "v", &w));
    pthread_t th[4];
    point_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (point_arg){w, i * 29, 0};
        assert_int_equal(pthread_create(&th[i], NULL, point_reader, &args[i]),
                         0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    assert_int_equal(tiles_state(w), 2);
    RS(raster_close(g));
    /* region 3's first `chunks` row damaged (checksums kept): a point of
     * region 6's tile (0, 1) is served, one of region 3's tile (0, 0)
     * refused, and the full check refuses the file */
    make_corrupt_file(path, 0, c_region_chunks_offset);
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    RS(point_series(v, 1, 7));
    assert_int_equal(tiles_state(v), 1);
    EXPECT_ERR(RASTER_EFORMAT, point_series(v, 1, 2));
    assert_non_null(strstr(raster_errmsg(), "do not match their checksum"));
    EXPECT_ERR(RASTER_EFORMAT, raster_var_check(v));
    RS(raster_close(f));
    /* the stored mask's cell (0, 0) given region 6 (checksums kept): the
     * cell is refused, its neighbour (0, 1) served */
    make_corrupt_file(path, 0, c_mask_pure_cell);
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    EXPECT_ERR(RASTER_EFORMAT, point_series(v, 0, 0));
    assert_non_null(strstr(raster_errmsg(), "but the mask says 6"));
    RS(point_series(v, 0, 1));
    assert_int_equal(tiles_state(v), 1);
    RS(raster_close(f));
    /* the tile width changed (5 -> 1, dividing it; checksums kept): the
     * rows that pin it refuse the file at the first read */
    make_corrupt_file(path, 0, c_chunk_narrow);
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    EXPECT_ERR(RASTER_EFORMAT, point_series(v, 1, 7));
    RS(raster_close(f));
    unlink(path);
}

/* Copies file `from` over `to` in place, as `cp from to` does (the inode
 * stays, its bytes, size and time change). */
static void copy_over(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "r+b");
    assert_non_null(in);
    assert_non_null(out);
    assert_int_equal(ftruncate(fileno(out), 0), 0);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    assert_int_equal(fclose(in), 0);
    assert_int_equal(fclose(out), 0);
}

/* Issue #27: a file replaced under an open read-only handle. Copied over
 * in place (`cp other.nc file.nc`), the handle's tables and HDF5's cached
 * metadata describe bytes that are gone: raster_region_read served
 * garbage (7e-43) with RASTER_OK. Every read now compares the file's
 * device, inode, size and modification time with those at open and
 * refuses (RASTER_EFORMAT, "changed on disk"). Moved over it (`mv`), the
 * handle keeps the old file, whole: its values are still served. */
static void test_file_replaced_under_reader(void **state)
{
    (void)state;
    char path[600], other[600];
    tmpdir_path(path, sizeof path, "held.nc");
    tmpdir_path(other, sizeof other, "other.nc");
    int32_t mask[NY * NX];
    for (int i = 0; i < NY * NX; i++) /* another mask: other offsets */
        mask[i] = (int32_t)((i * 7) % 5) - 2;
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    float *got = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    assert_non_null(got);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = 1e6f + (float)i;
    static const char *const names[4] = {"time", "z", "y", "x"};
    const size_t shape[4] = {T, Z, NY, NX}, chunk[4] = {1, 1, 3, 3};
    for (int how = 0; how < 2; how++) { /* cp over it, mv over it */
        for (int lean = 0; lean < 2; lean++) {
            make_raster_file(path, 0);
            write_raster_file(other, NC_FLOAT, 4, names, shape, 0, chunk,
                              mask, data);
            if (!lean)
                setenv("RASTER_NO_LEAN", "1", 1);
            raster_file *f;
            raster_var *v;
            RS(raster_open(path, RASTER_READ, &f));
            unsetenv("RASTER_NO_LEAN");
            RS(raster_var_find(f, "v", &v));
            int32_t id = 6;
            size_t os[2] = {0, 0}, oc[2] = {T, Z};
            size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
            RS(raster_region_read(v, &id, 1, os, oc, RASTER_LAYOUT_FULL,
                                  got)); /* before: fine */
            if (how == 0)
                copy_over(other, path);
            else
                assert_int_equal(rename(other, path), 0);
            raster_errmsg_clear();
            int rc = raster_region_read(v, &id, 1, os, oc,
                                        RASTER_LAYOUT_FULL, got);
            int rc2 = raster_var_get(v, st, ct, NULL, got);
            if (how == 0) {
                if (rc != RASTER_EFORMAT || rc2 != RASTER_EFORMAT ||
                    !strstr(raster_errmsg(), "changed on disk"))
                    fail_msg("copied over (%s): region read %d, get %d (%s)",
                             lean ? "lean" : "netCDF", rc, rc2,
                             raster_errmsg());
            } else {
                RS(rc);
                RS(rc2);
                for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
                    if (got[i] != std_value(i))
                        fail_msg("moved over: cell %zu is %g, written %g", i,
                                 got[i], std_value(i));
            }
            RS(raster_close(f));
            unlink(path);
            unlink(other);
        }
    }
    free(data);
    free(got);
}

/* A run of region 3 moved one column onto region 6's cell (0, 5): each
 * region's runs still pass their own checks. Reads that place cells by
 * their runs (bbox and full layouts, several regions, cell coordinates,
 * the bounding box) refuse it against the stored mask; one region packed
 * is its runs' values in order, and right. */
static void test_region_reads_shifted_run(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "shifted.nc");
    corrupt_without_sums = 1; /* the mask check, not the checksum */
    int32_t mask[NY * NX];
    std_mask(mask);
    for (int unlim = 0; unlim < 2; unlim++) {
        raster_file *f;
        raster_var *v;
        open_corrupt_read(path, unlim, c_runs_shifted, &f, &v);
        size_t os[2] = {0, 0}, oc[2] = {T, Z}, n;
        int32_t three = 3, both[2] = {3, 6};
        float *buf = malloc(sizeof(float) * T * Z * NY * NX);
        assert_non_null(buf);
        static const int layouts[2] = {RASTER_LAYOUT_BBOX,
                                       RASTER_LAYOUT_FULL};
        for (int l = 0; l < 2; l++) {
            raster_errmsg_clear();
            assert_int_equal(raster_region_read(v, &three, 1, os, oc,
                                                layouts[l], buf),
                             RASTER_EFORMAT);
            assert_non_null(strstr(raster_errmsg(), "a run of region 3 "
                                   "covers grid cell (0, 5), which the mask "
                                   "gives to region 6"));
        }
        assert_int_equal(raster_region_read(v, both, 2, os, oc,
                                            RASTER_LAYOUT_PACKED, buf),
                         RASTER_EFORMAT);
        size_t box[4], ys[NY * NX], xs[NY * NX];
        assert_int_equal(raster_region_bbox(v, &three, 1, box),
                         RASTER_EFORMAT);
        assert_int_equal(raster_region_cells(v, &three, 1, ys, xs),
                         RASTER_EFORMAT);
        /* region 3 alone, packed: its values in grid order */
        RS(raster_region_size(v, &three, 1, RASTER_LAYOUT_PACKED, &n));
        RS(raster_region_read(v, &three, 1, os, oc, RASTER_LAYOUT_PACKED,
                              buf));
        for (size_t p = 0, k = 0; p < (size_t)T * Z; p++)
            for (size_t c = 0; c < NY * NX; c++)
                if (mask[c] == 3) {
                    if (buf[k] != std_value(p * NY * NX + c))
                        fail_msg("packed value %zu is %g, written %g", k,
                                 buf[k], std_value(p * NY * NX + c));
                    k++;
                }
        free(buf);
        RS(raster_close(f));
    }
    corrupt_without_sums = 0;
    /* with checksums the mask is not read: the shifted run's rows no
     * longer match their checksum, and every read that loads them says
     * so (regions.c, check_mask) */
    for (int unlim = 0; unlim < 2; unlim++) {
        raster_file *f;
        raster_var *v;
        open_corrupt_read(path, unlim, c_runs_shifted, &f, &v);
        size_t os[2] = {0, 0}, oc[2] = {T, Z};
        int32_t three = 3, both[2] = {3, 6};
        float *buf = malloc(sizeof(float) * T * Z * NY * NX);
        assert_non_null(buf);
        raster_errmsg_clear();
        assert_int_equal(raster_region_read(v, both, 2, os, oc,
                                            RASTER_LAYOUT_PACKED, buf),
                         RASTER_EFORMAT);
        assert_non_null(strstr(raster_errmsg(), "do not match their "
                               "checksum"));
        assert_int_equal(raster_region_read(v, &three, 1, os, oc,
                                            RASTER_LAYOUT_BBOX, buf),
                         RASTER_EFORMAT);
        free(buf);
        RS(raster_close(f));
    }
    unlink(path);
}

static void test_newer_format(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "v3.nc");
    make_raster_file(path, 1);
    int six = 6; /* the newest read is 5 */
    set_group_att(path, NULL, "raster_format_version", NC_INT, 1, &six);
    EXPECT_OPEN(RASTER_EUNSUPPORTED, path);
    assert_int_equal(open_fails(path, RASTER_WRITE), RASTER_EUNSUPPORTED);
    int zero = 0;
    set_group_att(path, NULL, "raster_format_version", NC_INT, 1, &zero);
    EXPECT_OPEN(RASTER_EUNSUPPORTED, path);
    /* format 2, written on request, is read, both lazily and for writing;
     * so is format 1 (a format 2 file without runs, in effect) */
    testutil_write_format = 2;
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        raster_file *f;
        RS(raster_open(path, RASTER_READ, &f));
        check_std_data(f);
        RS(raster_close(f));
        RS(raster_open(path, RASTER_WRITE, &f));
        check_std_data(f);
        RS(raster_close(f));
        int one = 1;
        set_group_att(path, NULL, "raster_format_version", NC_INT, 1, &one);
        RS(raster_open(path, RASTER_READ, &f));
        check_std_data(f);
        RS(raster_close(f));
    }
    testutil_write_format = 0;
    /* raster writes only what it can */
    raster_file *f;
    RS(raster_create(path, &f));
    assert_int_equal(raster_file_set_format(f, 1), RASTER_EUNSUPPORTED);
    assert_int_equal(raster_file_set_format(f, 6), RASTER_EUNSUPPORTED);
    RS(raster_file_set_format(f, 5));
    RS(raster_file_set_format(f, 4));
    assert_int_equal(raster_file_set_format(NULL, 3), RASTER_EINVAL);
    RS(raster_file_set_format(f, 3));
    RS(raster_close(f));
    make_raster_file(path, 0);
    RS(raster_open(path, RASTER_READ, &f));
    assert_int_equal(raster_file_set_format(f, 3), RASTER_EINVAL);
    RS(raster_close(f));
    unlink(path);
}

/* Format 4 (no group per region, one shared store): a written file reads
 * back and passes every check; each damage below is refused (EFORMAT)
 * by the read-only open, its reads or the full check, and by a writable
 * open, before any of it is served. */
static void damage_summary(const char *path, size_t field, long long value)
{
    int ncid, g;
    size_t len;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
    NC(nc_inq_attlen(g, NC_GLOBAL, "raster_regions", &len));
    long long *t = malloc(len * sizeof *t);
    assert_non_null(t);
    NC(nc_get_att_longlong(g, NC_GLOBAL, "raster_regions", t));
    t[field] = value;
    NC(nc_put_att_longlong(g, NC_GLOBAL, "raster_regions", NC_INT64, len, t));
    free(t);
    NC(nc_close(ncid));
}

static void test_format4_damage(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "f4.nc");
    testutil_write_format = 4;
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        raster_file *f;
        RS(raster_open(path, RASTER_READ, &f));
        check_std_data(f);
        assert_int_equal(use_all(f), RASTER_OK);
        RS(raster_close(f));
        RS(raster_open(path, RASTER_WRITE, &f));
        check_std_data(f);
        RS(raster_close(f));
    }
    for (int k = 0; k < 8; k++) {
        make_raster_file(path, 1);
        int ncid, g, sub, varid;
        long long row[8];
        size_t start[2] = {0, 0}, count[2] = {1, 8};
        switch (k) {
        case 0: /* a region with pure cells: it would need a group */
            damage_summary(path, 1, 4);
            break;
        case 1: /* mixed_offset moved */
            damage_summary(path, 8 + 3, 7);
            break;
        case 2: /* no summary: nothing else describes the regions */
            NC(nc_open(path, NC_WRITE, &ncid));
            NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
            NC(nc_del_att(g, NC_GLOBAL, "raster_regions"));
            NC(nc_close(ncid));
            break;
        case 3: { /* a region group format 4 does not have */
            NC(nc_open(path, NC_WRITE, &ncid));
            NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
            NC(nc_def_grp(g, "region_3", &sub));
            int three = 3;
            NC(nc_put_att_int(sub, NC_GLOBAL, "region_id", NC_INT, 1, &three));
            NC(nc_close(ncid));
            break;
        }
        case 4: /* told it is format 3: no region groups to find */
        case 5: /* a pure chunk's offset moved in the shared store */
        case 6: /* the store's group renamed */
        case 7: /* runs offset moved */
            NC(nc_open(path, NC_WRITE, &ncid));
            NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
            if (k == 4) {
                int three = 3;
                NC(nc_put_att_int(g, NC_GLOBAL, "raster_format_version",
                                  NC_INT, 1, &three));
            } else if (k == 5) {
                NC(nc_inq_varid(g, "chunks", &varid));
                /* the first row whose chunk is pure */
                for (start[0] = 0;; start[0]++) {
                    NC(nc_get_vara_longlong(g, varid, start, count, row));
                    if (row[5] == 0)
                        break;
                }
                row[6] += 20;
                NC(nc_put_vara_longlong(g, varid, start, count, row));
            } else if (k == 6) {
                NC(nc_inq_grp_ncid(g, "Mixed_Chunks", &sub));
                NC(nc_rename_grp(sub, "Other_Chunks"));
            } else {
                count[1] = 4;
                NC(nc_inq_varid(g, "runs", &varid));
                NC(nc_get_vara_longlong(g, varid, start, count, row));
                row[3] += 1;
                NC(nc_put_vara_longlong(g, varid, start, count, row));
            }
            NC(nc_close(ncid));
            break;
        }
        int rc = open_fails(path, RASTER_READ);
        if (rc != RASTER_EFORMAT)
            fail_msg("format 4 damage %d: read-only gives %d (%s)", k, rc,
                     raster_errmsg());
        rc = open_fails(path, RASTER_WRITE);
        if (rc != RASTER_EFORMAT)
            fail_msg("format 4 damage %d: writable gives %d (%s)", k, rc,
                     raster_errmsg());
    }
    testutil_write_format = 0;
    unlink(path);
}

/* ---- the lean open (src/format/lean.c) ----------------------------------------------- */

/* raster_open(RASTER_READ) through HDF5 alone, or through netCDF when
 * `netcdf` is set (RASTER_NO_LEAN); the file must have been opened the
 * way `want_lean` says. */
static raster_file *open_read(const char *path, int netcdf, int want_lean)
{
    raster_file *f;
    if (netcdf)
        assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
    int rc = raster_open(path, RASTER_READ, &f);
    unsetenv("RASTER_NO_LEAN");
    RS(rc);
    if (f->lean != want_lean)
        fail_msg("%s opened %s", path, f->lean ? "lean" : "through netCDF");
    return f;
}

/* Every region alone, then all together, in every layout over every
 * record, and the variable's shape: the same from files a and b. */
static void same_reads(raster_file *a, raster_file *b, const char *var,
                       const int32_t *ids, size_t nids)
{
    raster_var *va, *vb;
    RS(raster_var_find(a, var, &va));
    RS(raster_var_find(b, var, &vb));
    int nd = raster_var_ndims(va), da[8], db[8];
    size_t sa[8], sb[8], ca[8], cb[8], ost[8] = {0};
    assert_int_equal(nd, raster_var_ndims(vb));
    RS(raster_var_dims(va, da, sa, ca));
    RS(raster_var_dims(vb, db, sb, cb));
    assert_memory_equal(da, db, (size_t)nd * sizeof *da);
    assert_memory_equal(sa, sb, (size_t)nd * sizeof *sa);
    assert_memory_equal(ca, cb, (size_t)nd * sizeof *ca);
    size_t planes = 1, elem = 4;
    for (int i = 0; i < nd - 2; i++)
        planes *= sa[i];
    static const int layouts[3] = {RASTER_LAYOUT_PACKED, RASTER_LAYOUT_BBOX,
                                   RASTER_LAYOUT_FULL};
    for (size_t k = 0; k <= nids; k++) {
        const int32_t *sel = k < nids ? &ids[k] : ids;
        size_t nsel = k < nids ? 1 : nids;
        for (int l = 0; l < 3; l++) {
            size_t na, nb;
            RS(raster_region_size(va, sel, nsel, layouts[l], &na));
            RS(raster_region_size(vb, sel, nsel, layouts[l], &nb));
            assert_int_equal(na, nb);
            unsigned char *ga = malloc(planes * na * elem + 1);
            unsigned char *gb = malloc(planes * na * elem + 1);
            assert_true(ga && gb);
            memset(ga, 0xa5, planes * na * elem);
            memset(gb, 0x5a, planes * na * elem);
            RS(raster_region_read(va, sel, nsel, ost, sa, layouts[l], ga));
            RS(raster_region_read(vb, sel, nsel, ost, sb, layouts[l], gb));
            if (memcmp(ga, gb, planes * na * elem) != 0)
                fail_msg("region %d (of %zu), layout %d: the opens differ",
                         (int)sel[0], nsel, layouts[l]);
            free(ga);
            free(gb);
        }
    }
}

/* A read-only file opens through HDF5 alone and reads, region and
 * hyperslab, as through netCDF; the first call that needs netCDF (the
 * ncid, the mask's values) opens it, binds it, and reads go on the same. */
static void test_lean_open(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "lean.nc");
    static const int32_t ids[4] = {-5, 0, 3, 6};
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        int fds = count_fds();
        raster_file *a = open_read(path, 0, 1), *b = open_read(path, 1, 0);
        same_reads(a, b, "v", ids, 4);
        /* region 6 packed is std_value over its cells */
        raster_var *v;
        RS(raster_var_find(a, "v", &v));
        int32_t mask[NY * NX], six = 6;
        std_mask(mask);
        size_t n, k = 0, ost[2] = {0, 0}, oct[2] = {T, Z};
        RS(raster_region_size(v, &six, 1, RASTER_LAYOUT_PACKED, &n));
        float *got = malloc(sizeof(float) * T * Z * n);
        assert_non_null(got);
        RS(raster_region_read(v, &six, 1, ost, oct, RASTER_LAYOUT_PACKED,
                              got));
        for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
            if (mask[i % (NY * NX)] == six && got[k++] != std_value(i))
                fail_msg("value %zu is %g, expected %g", k - 1,
                         (double)got[k - 1], (double)std_value(i));
        assert_int_equal(k, T * Z * n);
        free(got);
        assert_int_equal(a->lean, 1);
        check_std_data(a); /* a hyperslab: through HDF5 too */
        assert_int_equal(a->lean, 1);
        const int32_t *mv = raster_mask_values(raster_var_mask(v));
        assert_int_equal(a->lean, 0); /* the mask's values: netCDF */
        assert_non_null(mv);
        assert_memory_equal(mv, mask, sizeof mask);
        int ncid = raster_file_ncid(a), varid;
        assert_true(ncid >= 0);
        NC(nc_inq_varid(ncid, "v", &varid));
        assert_int_equal(raster_var_varid(v), varid);
        assert_int_equal(raster_var_parent(v), ncid);
        check_std_data(a);
        same_reads(a, b, "v", ids, 4);
        RS(raster_close(a));
        RS(raster_close(b));
        assert_int_equal(count_fds(), fds);
    }
    unlink(path);
}

/* The ncid asked for first (no read before): bound on the spot. */
static void test_lean_ncid_first(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leanncid.nc");
    make_raster_file(path, 1);
    raster_file *f = open_read(path, 0, 1);
    int ncid = raster_file_ncid(f), dimid;
    assert_true(ncid >= 0);
    NC(nc_inq_dimid(ncid, "time", &dimid));
    assert_int_equal(f->lean, 0);
    check_std_data(f);
    RS(raster_close(f));
    unlink(path);
}

/* Another variable on the unlimited dimension with more records: the
 * dimension is as long as netCDF says (the longest variable on it), from
 * the lean open as through netCDF, and reads agree. */
static void test_lean_unlimited_longer(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leanlonger.nc");
    make_raster_file(path, 1);
    int ncid, dim, varid;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_dimid(ncid, "time", &dim));
    NC(nc_redef(ncid));
    NC(nc_def_var(ncid, "w", NC_DOUBLE, 1, &dim, &varid));
    NC(nc_enddef(ncid));
    double w[T + 2] = {0};
    size_t st = 0, ct = T + 2, len;
    NC(nc_put_vara_double(ncid, varid, &st, &ct, w));
    NC(nc_close(ncid));
    raster_file *a = open_read(path, 0, 1), *b = open_read(path, 1, 0);
    raster_var *v;
    size_t shape[4];
    RS(raster_var_find(a, "v", &v));
    RS(raster_var_dims(v, NULL, shape, NULL));
    assert_int_equal(shape[0], T + 2);
    NC(nc_open(path, NC_NOWRITE, &ncid));
    NC(nc_inq_dimlen(ncid, dim, &len));
    NC(nc_close(ncid));
    assert_int_equal(len, T + 2);
    static const int32_t ids[2] = {3, -5};
    same_reads(a, b, "v", ids, 2);
    RS(raster_close(a));
    RS(raster_close(b));
    unlink(path);
}

/* Files the lean open leaves to netCDF: without the regions' summary
 * (read from the groups), and of format 2; both read as ever. A file it
 * declines for damage gets netCDF's error. */
static void test_lean_declines(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leandecl.nc");
    make_corrupt_file(path, 1, c_summary_deleted);
    raster_file *f = open_read(path, 0, 0);
    check_std_data(f);
    RS(raster_close(f));
    testutil_write_format = 2;
    make_raster_file(path, 0);
    testutil_write_format = 0;
    f = open_read(path, 0, 0);
    check_std_data(f);
    RS(raster_close(f));
    make_corrupt_file(path, 0, c_summary_deleted_run_rows);
    assert_int_equal(open_fails(path, RASTER_READ), RASTER_EFORMAT);
    unlink(path);
}

/* A variable in a subgroup, its dimensions in the root group: found, and
 * read as through netCDF. */
static void test_lean_subgroup(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leansub.nc");
    int32_t mask[NY * NX];
    std_mask(mask);
    raster_mask *m;
    RS(raster_mask_wrap(mask, NY, NX, &m));
    raster_file *f;
    raster_var *v;
    RS(raster_create(path, &f));
    int ncid = raster_file_ncid(f), d[4], g, inner;
    static const char *const names[4] = {"time", "z", "y", "x"};
    const size_t shape[4] = {T, Z, NY, NX}, chunk[4] = {1, 1, 4, 5};
    for (int i = 0; i < 4; i++)
        NC(nc_def_dim(ncid, names[i], i == 0 ? NC_UNLIMITED : shape[i],
                      &d[i]));
    NC(nc_def_grp(ncid, "outer", &g));
    NC(nc_def_grp(g, "inner", &inner));
    RS(raster_def_var(f, inner, "v", NC_FLOAT, 4, d, chunk, m, &v));
    float fill = -7.5f;
    RS(raster_var_put_att(v, "_FillValue", NC_FLOAT, 1, &fill));
    raster_mask_free(m);
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = std_value(i);
    size_t start[4] = {0};
    RS(raster_var_put(v, start, shape, NULL, data));
    free(data);
    RS(raster_close(f));
    raster_file *a = open_read(path, 0, 1), *b = open_read(path, 1, 0);
    static const int32_t ids[4] = {-5, 0, 3, 6};
    same_reads(a, b, "v", ids, 4);
    /* the fill value outside a region: the variable's own */
    RS(raster_var_find(a, "v", &v));
    int32_t three = 3;
    size_t n, ost[2] = {0, 0}, oct[2] = {1, 1};
    RS(raster_region_size(v, &three, 1, RASTER_LAYOUT_FULL, &n));
    float *full = malloc(n * sizeof *full);
    assert_non_null(full);
    RS(raster_region_read(v, &three, 1, ost, oct, RASTER_LAYOUT_FULL, full));
    assert_true(full[NX - 1] == fill); /* column 11 is region 0's */
    free(full);
    RS(raster_close(a));
    RS(raster_close(b));
    unlink(path);
}

/* The outcome of raster_open through HDF5 alone (when it takes the file)
 * and through netCDF: the same status, and then the same reads. */
static void same_outcome(const char *path, const char *what)
{
    raster_file *a = NULL, *b = NULL;
    raster_errmsg_clear();
    int ra = raster_open(path, RASTER_READ, &a);
    assert_int_equal(setenv("RASTER_NO_LEAN", "1", 1), 0);
    int rb = raster_open(path, RASTER_READ, &b);
    unsetenv("RASTER_NO_LEAN");
    if (ra != rb)
        fail_msg("%s: lean open %d, netCDF open %d (%s)", what, ra, rb,
                 raster_errmsg());
    if (ra == RASTER_OK) {
        static const int32_t ids[4] = {-5, 0, 3, 6};
        same_reads(a, b, "v", ids, 4);
        /* a typed read past the records: netCDF's status from both */
        raster_var *va, *vb;
        RS(raster_var_find(a, "v", &va));
        RS(raster_var_find(b, "v", &vb));
        size_t shape[4], st[4] = {0}, ct[4] = {1, 1, 1, 1};
        RS(raster_var_dims(vb, NULL, shape, NULL));
        st[0] = shape[0] + 1;
        float x;
        int ea = raster_var_get_typed(va, st, ct, NULL, NULL, &x, NC_FLOAT);
        int sa = raster_nc_status();
        int eb = raster_var_get_typed(vb, st, ct, NULL, NULL, &x, NC_FLOAT);
        assert_int_equal(ea, eb);
        assert_int_equal(sa, raster_nc_status());
        RS(raster_close(a));
        RS(raster_close(b));
    }
}

/* Damage a lean open must judge as netCDF's open does: a store deleted, a
 * storage group linked twice, the unlimited dimension's own scale (a
 * dimension without a variable) stretched past every variable on it. */
static void test_lean_same_outcome(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leansame.nc");
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        same_outcome(path, "intact");
        hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
        assert_true(fid >= 0);
        assert_true(H5Ldelete(fid, "/raster_v/region_3/data", H5P_DEFAULT) >=
                    0);
        assert_true(H5Fclose(fid) >= 0);
        same_outcome(path, "store deleted");
        make_raster_file(path, unlim);
        fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
        assert_true(fid >= 0);
        assert_true(H5Lcreate_hard(fid, "/raster_v", fid, "/raster_w",
                                   H5P_DEFAULT, H5P_DEFAULT) >= 0);
        assert_true(H5Fclose(fid) >= 0);
        same_outcome(path, "group linked twice");
    }
    make_raster_file(path, 1);
    hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t did = H5Dopen2(fid, "/time", H5P_DEFAULT);
    hsize_t ten = 10;
    assert_true(did >= 0 && H5Dset_extent(did, &ten) >= 0);
    assert_true(H5Dclose(did) >= 0 && H5Fclose(fid) >= 0);
    same_outcome(path, "time scale stretched");
    raster_file *f = open_read(path, 0, 1);
    raster_var *v;
    size_t shape[4];
    RS(raster_var_find(f, "v", &v));
    RS(raster_var_dims(v, NULL, shape, NULL));
    assert_int_equal(shape[0], T);
    RS(raster_close(f));
    unlink(path);
}

typedef struct reader_arg {
    raster_var *v;
    int rounds, failures;
} reader_arg;

/* Region 6 packed, over and over, checked. */
static void *reader(void *p)
{
    reader_arg *r = p;
    int32_t mask[NY * NX], six = 6;
    std_mask(mask);
    size_t n, ost[2] = {0, 0}, oct[2] = {T, Z};
    if (raster_region_size(r->v, &six, 1, RASTER_LAYOUT_PACKED, &n) !=
        RASTER_OK) {
        r->failures++;
        return NULL;
    }
    float *got = malloc(sizeof(float) * T * Z * n);
    for (int i = 0; got && i < r->rounds; i++) {
        if (raster_region_read(r->v, &six, 1, ost, oct, RASTER_LAYOUT_PACKED,
                               got) != RASTER_OK) {
            r->failures++;
            continue;
        }
        size_t k = 0;
        for (size_t c = 0; c < (size_t)T * Z * NY * NX; c++)
            if (mask[c % (NY * NX)] == six && got[k++] != std_value(c)) {
                r->failures++;
                break;
            }
    }
    free(got);
    return NULL;
}

/* 1 when dataset `name` of `path` is deflated. */
static int h5_deflated(const char *path, const char *name)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t did = fid >= 0 ? H5Dopen2(fid, name, H5P_DEFAULT) : -1;
    hid_t dcpl = did >= 0 ? H5Dget_create_plist(did) : -1;
    int found = 0;
    for (int i = 0; dcpl >= 0 && i < H5Pget_nfilters(dcpl); i++) {
        unsigned flags;
        size_t ncd = 0;
        found |= H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, NULL, 0,
                                NULL, NULL) == H5Z_FILTER_DEFLATE;
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (did >= 0)
        H5Dclose(did);
    if (fid >= 0)
        H5Fclose(fid);
    return found;
}

/* A file with deflated stores, tables and mask: opened lean, its stores
 * read through netCDF (which binds it), its tiles' mask through HDF5
 * before and after the binding: every read right, as through netCDF.
 * (It was an nccopy -d1 copy until nccopy refused the placeholder, which
 * made this test skip unseen.) */
static void test_lean_filtered(void **state)
{
    (void)state;
    char copy[600];
    tmpdir_path(copy, sizeof copy, "leandeflated.nc");
    const raster_compression deflate = {.deflate_level = 1};
    testutil_write_compression = &deflate;
    make_raster_file(copy, 1);
    testutil_write_compression = NULL;
    assert_true(h5_deflated(copy, "/raster_v/mask"));
    assert_true(h5_deflated(copy, "/raster_v/Mixed_Chunks/data"));
    raster_file *a = open_read(copy, 0, 1), *b = open_read(copy, 1, 0);
    check_std_data(a);
    check_std_data(a); /* the tile index's mask after the binding */
    static const int32_t ids[4] = {-5, 0, 3, 6};
    same_reads(a, b, "v", ids, 4);
    RS(raster_close(a));
    RS(raster_close(b));
    unlink(copy);
}

/* n threads (at most 4) each reading region 6 of f's "v" `rounds` times
 * while the caller's thread runs during(f) (NULL: nothing): no read of
 * theirs fails or goes wrong. */
static void readers_around(raster_file *f, int n, int rounds,
                           void (*during)(raster_file *))
{
    reader_arg r[4];
    pthread_t t[4];
    assert_true(n >= 1 && n <= 4);
    for (int i = 0; i < n; i++) {
        r[i] = (reader_arg){NULL, rounds, 0};
        RS(raster_var_find(f, "v", &r[i].v));
        assert_int_equal(pthread_create(&t[i], NULL, reader, &r[i]), 0);
    }
    if (during)
        during(f);
    for (int i = 0; i < n; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(r[i].failures, 0);
    }
}

/* The full check, which builds the mesh and layout, and passes. */
static void full_check(raster_file *f)
{
    raster_var *v;
    RS(raster_var_find(f, "v", &v));
    assert_non_null(raster_var_mask(v));
}

/* The full check builds the mesh and layout while other threads make
 * their first region reads of the same handle: every read right, and
 * the check passes. */
static void test_check_while_reading(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "checkreads.nc");
    make_raster_file(path, 1);
    for (int round = 0; round < 20; round++) {
        raster_file *f = open_read(path, round % 2, !(round % 2));
        readers_around(f, 3, 3, full_check);
        check_std_data(f);
        RS(raster_close(f));
    }
    unlink(path);
}

/* Several threads reading regions of a handle just opened, all loading
 * the same runs, store offsets and shape at once: every read right (and,
 * under the sanitizers, nothing loaded twice and lost). */
static void test_concurrent_first_reads(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "firstreads.nc");
    make_raster_file(path, 1);
    for (int round = 0; round < 20; round++) {
        raster_file *f = open_read(path, round % 2, !(round % 2));
        readers_around(f, 4, 3, NULL);
        RS(raster_close(f));
    }
    unlink(path);
}

/* netCDF bound (the ncid asked for), then a hyperslab read. */
static void bind_and_read(raster_file *f)
{
    assert_true(raster_file_ncid(f) >= 0);
    check_std_data(f);
}

/* netCDF opened and bound while another thread reads regions of the same
 * handle: no read of it fails or goes wrong. */
static void test_lean_bind_concurrent(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "leanthreads.nc");
    make_raster_file(path, 1);
    for (int round = 0; round < 5; round++) {
        raster_file *f = open_read(path, 0, 1);
        readers_around(f, 1, 200, bind_and_read);
        assert_int_equal(f->lean, 0);
        RS(raster_close(f));
    }
    unlink(path);
}

/* ---- allocation failures ------------------------------------------------------- */

/* raster_open + raster_region_read + raster_var_get with allocation n
 * failing, for n = 1, 2, ... until everything succeeds. */
static void alloc_read_loop(const char *path)
{
    int32_t mask[NY * NX];
    std_mask(mask);
    float *buf = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(buf);
    int fds = count_fds();
    unsigned long n;
    for (n = 1; n < 100000; n++) {
        raster_file *f = SENTINEL_FILE;
        raster_var *v = NULL;
        int32_t ids[2] = {6, -5};
        size_t os[2] = {0, 1}, oc[2] = {T, 2}, np = 0;
        raster_errmsg_clear();
        raster_alloc_fail_at(n);
        int rc = raster_open(path, RASTER_READ, &f);
        int stage = 0;
        if (rc == RASTER_OK) {
            stage = 1;
            rc = raster_var_find(f, "v", &v);
        }
        if (rc == RASTER_OK)
            rc = raster_region_size(v, ids, 2, RASTER_LAYOUT_PACKED, &np);
        if (rc == RASTER_OK)
            rc = raster_region_read(v, ids, 2, os, oc, RASTER_LAYOUT_PACKED,
                                    buf);
        unsigned long made = raster_alloc_count();
        raster_alloc_fail_at(0);
        if (rc == RASTER_OK) {
            /* the values are right */
            size_t k = 0;
            for (size_t t = 0; t < T; t++)
                for (size_t z = 1; z < 3; z++)
                    for (size_t c = 0; c < NY * NX; c++)
                        if (mask[c] == 6 || mask[c] == -5)
                            assert_true(buf[k++] ==
                                        std_value((t * Z + z) * NY * NX + c));
            assert_int_equal(k, np * T * 2);
            RS(raster_close(f));
            if (made < n)
                break; /* no allocation failed: done */
            fail_msg("allocation %lu of %lu failed but everything succeeded",
                     n, made);
        }
        if (rc != RASTER_ENOMEM && rc != RASTER_ENETCDF)
            fail_msg("allocation %lu failing: status %d (%s: %s)", n, rc,
                     raster_strerror(rc), raster_errmsg());
        if (raster_errmsg()[0] == '\0')
            fail_msg("allocation %lu failing: no message", n);
        if (stage == 0)
            assert_null(f);
        else
            RS(raster_close(f));
        assert_int_equal(count_fds(), fds);
    }
    assert_true(n > 10);
    free(buf);
}

static void test_alloc_failures_read(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "alloc.nc");
    for (int unlim = 0; unlim < 2; unlim++) {
        make_raster_file(path, unlim);
        alloc_read_loop(path);
    }
    unlink(path);
}

/* Writing with allocation n failing: the failing call returns an error,
 * and retrying it afterwards works (a failed definition leaves nothing
 * half-defined behind); the file then reads back right. */
static void test_alloc_failures_write(void **state)
{
    (void)state;
    char path[600], mpath[600];
    tmpdir_path(path, sizeof path, "allocw.nc");
    tmpdir_path(mpath, sizeof mpath, "allocw_mask.nc");
    int32_t mvals[NY * NX];
    std_mask(mvals);
    /* a mask with region names, so that definition allocates for them */
    int fv[4] = {-5, 0, 3, 6};
    write_mask_file(mpath, "m", "y", "x", NY, NX, mvals, 4, fv,
                    "Red_Sea land Indian_Ocean Atlantic_Ocean");
    raster_mask *m;
    RS(raster_mask_load(mpath, "m", &m));
    float *data = malloc(sizeof(float) * T * Z * NY * NX);
    assert_non_null(data);
    for (size_t i = 0; i < (size_t)T * Z * NY * NX; i++)
        data[i] = std_value(i);

    int failures_seen = 0, halfdef = 0;
    char halfdef_msg[1200] = "";
    unsigned long n;
    for (n = 1; n < 100000; n++) {
        raster_file *f = SENTINEL_FILE;
        raster_var *v = SENTINEL_VAR;
        int failed = 0; /* the injected failure was met */
        raster_errmsg_clear();
        raster_alloc_fail_at(n);
        int rc = raster_create(path, &f);
        if (rc != RASTER_OK) {
            raster_alloc_fail_at(0);
            if (rc != RASTER_ENOMEM)
                fail_msg("create, allocation %lu failing: %d (%s)", n, rc,
                         raster_strerror(rc));
            assert_null(f);
            failures_seen++;
            continue;
        }
        int nc = raster_file_ncid(f), dd[4];
        NC(nc_def_dim(nc, "time", NC_UNLIMITED, &dd[0]));
        NC(nc_def_dim(nc, "z", Z, &dd[1]));
        NC(nc_def_dim(nc, "y", NY, &dd[2]));
        NC(nc_def_dim(nc, "x", NX, &dd[3]));
        size_t chunk[4] = {1, 1, 4, 5};
        rc = raster_def_var(f, nc, "v", NC_FLOAT, 4, dd, chunk, m, &v);
        if (rc != RASTER_OK) {
            raster_alloc_fail_at(0);
            failed = 1;
            failures_seen++;
            char msg[512];
            snprintf(msg, sizeof msg, "%s", raster_errmsg());
            if (rc != RASTER_ENOMEM && rc != RASTER_ENETCDF)
                fail_msg("def_var, allocation %lu failing: %d (%s: %s)", n,
                         rc, raster_strerror(rc), msg);
            assert_null(v);
            assert_true(msg[0] != '\0');
            /* retrying works: the failure left nothing half-defined */
            int rc2 = raster_def_var(f, nc, "v", NC_FLOAT, 4, dd, chunk, m,
                                     &v);
            if (rc2 != RASTER_OK) {
                if (halfdef++ == 0)
                    snprintf(halfdef_msg, sizeof halfdef_msg,
                             "def_var failed at allocation %lu (%s); retrying "
                             "gives %d (%s: %s)", n, msg, rc2,
                             raster_strerror(rc2), raster_errmsg());
                RS(raster_close(f));
                continue;
            }
        }
        size_t st[4] = {0, 0, 0, 0}, ct[4] = {T, Z, NY, NX};
        rc = raster_var_put(v, st, ct, NULL, data);
        if (rc != RASTER_OK) {
            raster_alloc_fail_at(0);
            failed = 1;
            failures_seen++;
            if (rc != RASTER_ENOMEM && rc != RASTER_ENETCDF)
                fail_msg("put, allocation %lu failing: %d (%s: %s)", n, rc,
                         raster_strerror(rc), raster_errmsg());
            assert_true(raster_errmsg()[0] != '\0');
            RS(raster_var_put(v, st, ct, NULL, data)); /* retry */
        }
        int crc = raster_close(f);
        unsigned long made = raster_alloc_count();
        raster_alloc_fail_at(0);
        if (crc != RASTER_OK) {
            failed = 1;
            failures_seen++;
        }
        /* reopen: complete and right, unless close itself failed */
        raster_file *g;
        int orc = raster_open(path, RASTER_READ, &g);
        if (crc != RASTER_OK) {
            assert_int_equal(orc, RASTER_EINCOMPLETE);
        } else {
            if (orc != RASTER_OK)
                fail_msg("allocation %lu failing: reopening gives %d (%s: %s)",
                         n, orc, raster_strerror(orc), raster_errmsg());
            check_std_data(g);
            RS(raster_close(g));
            /* one variable, its placeholder v, and one storage group,
             * raster_v; any other group is an abandoned definition */
            int nc, nv, sg;
            NC(nc_open(path, NC_NOWRITE, &nc));
            NC(nc_inq_nvars(nc, &nv));
            assert_int_equal(nv, 1);
            NC(nc_inq_grp_ncid(nc, "raster_v", &sg));
            assert_int_equal(raster_storage_grp(nc, "v"), sg);
            (void)abandoned_groups(nc, "v", "raster_v");
            NC(nc_close(nc));
        }
        if (!failed && made < n)
            break; /* nothing failed any more */
    }
    assert_true(failures_seen > 5);
    /* Regression (fixed): src/format/meta.c meta_define(): a failure after nc_def_grp(parent,
     * name) (out of memory for the region names text, or in
     * define_region() / define_mixed()) returns without removing the
     * half-defined group, so the name stays taken ("name v is already in
     * use") and the file keeps a raster group whose marker is 0. */
    raster_mask_free(m);
    free(data);
    unlink(path);
    unlink(mpath);
    if (halfdef)
        fail_msg("%d failed definitions left the name taken; first: %s",
                 halfdef, halfdef_msg);
}

/* A handle closed twice (issue #27): RASTER_EINVAL, never a double free.
 * Under ASan the second close must not read the freed handle either: open
 * files are known by address (a registry), not by a tag inside them. */
static void test_double_close(void **state)
{
    (void)state;
    char path[600], path2[600];
    tmpdir_path(path, sizeof path, "twice.nc");
    tmpdir_path(path2, sizeof path2, "twice_abandoned.nc");
    make_raster_file(path, 0);
    raster_file *f, *g;
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_close(f));
    EXPECT_ERR(RASTER_EINVAL, raster_close(f));
    EXPECT_ERR(RASTER_EINVAL, raster_abandon(f));
    RS(raster_open(path, RASTER_WRITE, &f));
    RS(raster_close(f));
    EXPECT_ERR(RASTER_EINVAL, raster_close(f));
    RS(raster_create(path2, &g));
    RS(raster_abandon(g));
    EXPECT_ERR(RASTER_EINVAL, raster_close(g));
    EXPECT_ERR(RASTER_EINVAL, raster_abandon(g));
    /* never a file at all */
    EXPECT_ERR(RASTER_EINVAL, raster_close(SENTINEL_FILE));
    /* the registry still knows the files that are open */
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_open(path, RASTER_READ, &g));
    RS(raster_close(f));
    RS(raster_close(g));
    EXPECT_ERR(RASTER_EINVAL, raster_close(f));
    unlink(path);
    unlink(path2);
}

/* A failing HDF5 call in a new thread, its stderr output appended to the
 * file named by `arg`'s path; quiet first when asked. */
typedef struct h5_thread {
    int quiet;
} h5_thread;

static void *failing_h5_call(void *arg)
{
    const h5_thread *t = arg;
    if (t->quiet)
        fileio_thread_quiet();
    char path[600];
    tmpdir_path(path, sizeof path, "no-such-file.h5");
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (fid >= 0)
        H5Fclose(fid);
    H5Eclear2(H5E_DEFAULT); /* HDF5 1.10 frees no thread's stack at exit */
    return NULL;
}

/* What a failing HDF5 call in a new thread prints on stderr. */
static void thread_stderr(int quiet, char *out, size_t len)
{
    char path[600];
    tmpdir_path(path, sizeof path, "stderr.txt");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fd, 2) == 2);
    pthread_t tid;
    h5_thread t = {quiet};
    assert_int_equal(pthread_create(&tid, NULL, failing_h5_call, &t), 0);
    pthread_join(tid, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, len - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

/* Raster's threads never print HDF5-DIAG (issue #27): a thread-safe HDF5
 * keeps its error printing per thread, on in every new thread, whatever
 * netCDF set in the program's. fileio_thread_quiet() is what each thread
 * raster starts calls first. */
static void test_thread_hdf5_quiet(void **state)
{
    (void)state;
    hbool_t safe = 0;
    if (H5is_library_threadsafe(&safe) < 0 || !safe)
        skip(); /* one setting for the process: the program's */
    static char out[1 << 16];
    thread_stderr(0, out, sizeof out);
    /* the control: without it, the thread prints */
    assert_non_null(strstr(out, "HDF5-DIAG"));
    thread_stderr(1, out, sizeof out);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_def_var_errors),
        cmocka_unit_test(test_adopt_var_errors),
        cmocka_unit_test(test_adopt_written_var),
        cmocka_unit_test(test_adopt_created_var),
        cmocka_unit_test(test_failed_definition_abandoned),
        cmocka_unit_test(test_failed_placeholder_leaves_name),
        cmocka_unit_test(test_put_get_errors),
        cmocka_unit_test(test_stride_overflow),
        cmocka_unit_test(test_put_unlimited_wraps),
        cmocka_unit_test(test_unlimited_grid_dimension),
        cmocka_unit_test(test_late_fill_value),
        cmocka_unit_test(test_region_errors),
        cmocka_unit_test(test_open_bad_files),
        cmocka_unit_test(test_incomplete_marker),
        cmocka_unit_test(test_writer_died),
        cmocka_unit_test(test_writer_died_unsynced),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt_metadata),
        cmocka_unit_test(test_two_groups_one_placeholder),
        cmocka_unit_test(test_hyperslab_contradictions),
        cmocka_unit_test(test_format5_tables_damaged),
        cmocka_unit_test(test_partial_tile_index),
        cmocka_unit_test(test_without_summary),
        cmocka_unit_test(test_renamed_without_raster),
        cmocka_unit_test(test_store_replaced),
        cmocka_unit_test(test_region_reads_shifted_run),
        cmocka_unit_test(test_file_replaced_under_reader),
        cmocka_unit_test(test_newer_format),
        cmocka_unit_test(test_format4_damage),
        cmocka_unit_test(test_lean_open),
        cmocka_unit_test(test_lean_ncid_first),
        cmocka_unit_test(test_lean_unlimited_longer),
        cmocka_unit_test(test_lean_declines),
        cmocka_unit_test(test_lean_subgroup),
        cmocka_unit_test(test_lean_same_outcome),
        cmocka_unit_test(test_lean_bind_concurrent),
        cmocka_unit_test(test_concurrent_first_reads),
        cmocka_unit_test(test_lean_filtered),
        cmocka_unit_test(test_check_while_reading),
        cmocka_unit_test(test_alloc_failures_read),
        cmocka_unit_test(test_alloc_failures_write),
        cmocka_unit_test(test_double_close),
        cmocka_unit_test(test_thread_hdf5_quiet),
    };
    return cmocka_run_group_tests(tests, setup_dir, tmpdir_remove);
}
