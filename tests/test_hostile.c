/*
 * test_hostile.c - hostile raster files beyond test_storage_errors.c's
 * corrupted descriptions (issue #8, docs/BAD_INPUTS.md): index tables and
 * stores of another type or shape, stores missing, region groups
 * duplicated, a stored mask of another type, shape or size (huge), grid
 * dimensions pointed at a huge dimension, lying group attributes, and an
 * unlimited dimension stretched far beyond the records a store holds.
 * Each file is either refused with RASTER_EFORMAT and a message, or (where
 * raster does not use what was changed) served with exactly the values
 * written. Opens run in a forked child with an alarm: a crash, a sanitizer
 * report or a hang fails the test instead of ending the run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <hdf5.h>
#include <netcdf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "raster.h"
#include "testutil.h"

enum { T = 2, NY = 10, NX = 12 };
#define CHILD_SECONDS 30

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("hostile");
}

static void std_mask(int32_t *m)
{
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++) {
            int32_t id = x < 5 ? 3 : x < 10 ? 6 : 0;
            if (y >= 7 && x >= 3 && x < 8)
                id = -5;
            m[y * NX + x] = id;
        }
}

static float value_at(size_t i) { return (float)i * 0.5f - 20.0f; }

/* float v(time, y, x), tile 4 x 5, T records; time unlimited or fixed */
static void make_file(const char *path, int unlim)
{
    int32_t mask[NY * NX];
    std_mask(mask);
    float data[T * NY * NX];
    for (size_t i = 0; i < T * NY * NX; i++)
        data[i] = value_at(i);
    static const char *const names[3] = {"time", "y", "x"};
    const size_t shape[3] = {T, NY, NX}, chunk[3] = {1, 4, 5};
    write_raster_file(path, NC_FLOAT, 3, names, shape, unlim, chunk, mask,
                      data);
}

/* In the child: open, and when raster accepts the file, every value it
 * serves (whole reads and region reads) must be the value written (records
 * past the written ones: the fill value). Returns the open status, or 40+
 * for a wrong value or a missing message. */
static int open_and_check(void *arg)
{
    const char *path = arg;
    alarm(CHILD_SECONDS);
    for (int mode = 0; mode < 2; mode++) {
        raster_file *f = (raster_file *)(uintptr_t)1;
        int rc = raster_open(path, mode, &f);
        if (rc != RASTER_OK) {
            if (f != NULL || raster_errmsg()[0] == '\0')
                return 40;
            return rc;
        }
        raster_var *v;
        if (raster_var_find(f, "v", &v))
            return 41;
        /* a read-only open checks tables as reads first use them; the
         * full check covers the ones reads never use */
        if ((rc = raster_var_check(v)) != RASTER_OK) {
            raster_close(f);
            return raster_errmsg()[0] == '\0' ? 40 : rc;
        }
        size_t shape[3];
        if (raster_var_dims(v, NULL, shape, NULL))
            return 42;
        size_t nrec = shape[0] < T + 1 ? shape[0] : T + 1;
        float got[(T + 1) * NY * NX], reg[(T + 1) * NY * NX];
        size_t st[3] = {0, 0, 0}, ct[3] = {nrec, NY, NX};
        if (raster_var_get(v, st, ct, NULL, got))
            return 43;
        for (size_t i = 0; i < nrec * NY * NX; i++)
            if (got[i] != (i < T * NY * NX ? value_at(i) : NC_FILL_FLOAT))
                return 44;
        int32_t mask[NY * NX], ids[4] = {3, 6, 0, -5};
        std_mask(mask);
        for (int r = 0; r < 4; r++) {
            size_t os = 0;
            if (raster_region_read(v, &ids[r], 1, &os, &nrec,
                                   RASTER_LAYOUT_FULL, reg))
                return 45;
            for (size_t i = 0; i < nrec * NY * NX; i++)
                if (reg[i] != (mask[i % (NY * NX)] == ids[r]
                                   ? got[i] : NC_FILL_FLOAT))
                    return 46;
        }
        if (raster_close(f))
            return 47;
    }
    return RASTER_OK;
}

/* ---- the changes ------------------------------------------------------------ */

typedef void (*change_fn)(int root, int g);

static int sub(int g, const char *name)
{
    int s;
    NC(nc_inq_grp_ncid(g, name, &s));
    return s;
}

/* netCDF 4.9 cannot rename the variables of raster's groups (HDF error),
 * so a group is rebuilt instead: region group `name` of g is renamed away
 * and a new one of that name made, with the same region_id and dimensions,
 * its format-2 index tables copied, and then variable `var` ("chunks",
 * "shares" or "data") defined as `type` over `nd` of its dimensions taken in `order`
 * (or left out when nd is 0). */
static void rebuild(int g, const char *name, const char *var, nc_type type,
                    int nd, const int *order)
{
    int old = sub(g, name), ng, id;
    char oldname[64];
    snprintf(oldname, sizeof oldname, "%s_old", name);
    NC(nc_rename_grp(old, oldname));
    NC(nc_def_grp(g, name, &ng));
    if (nc_get_att_int(old, NC_GLOBAL, "region_id", &id) == NC_NOERR)
        NC(nc_put_att_int(ng, NC_GLOBAL, "region_id", NC_INT, 1, &id));
    static const char *const vars[3] = {"chunks", "shares", "data"};
    for (int k = 0; k < 3; k++) {
        int varid, dims[4], vnd, newdims[4];
        nc_type vt;
        if (nc_inq_varid(old, vars[k], &varid) != NC_NOERR)
            continue;
        NC(nc_inq_var(old, varid, NULL, &vt, &vnd, dims, NULL));
        /* dimensions of the old group get twins in the new one; outer
         * dimensions (the file's) are shared */
        for (int i = 0; i < vnd; i++) {
            char dn[NC_MAX_NAME + 1];
            size_t len;
            int twin;
            NC(nc_inq_dim(old, dims[i], dn, &len));
            int local = 0, nlocal, ids[16];
            NC(nc_inq_dimids(old, &nlocal, ids, 0));
            for (int j = 0; j < nlocal; j++)
                local |= ids[j] == dims[i];
            if (!local) {
                newdims[i] = dims[i];
            } else if (nc_inq_dimid(ng, dn, &twin) == NC_NOERR) {
                int nl2, ids2[16], mine = 0;
                NC(nc_inq_dimids(ng, &nl2, ids2, 0));
                for (int j = 0; j < nl2; j++)
                    mine |= ids2[j] == twin;
                if (mine)
                    newdims[i] = twin;
                else
                    NC(nc_def_dim(ng, dn, len, &newdims[i]));
            } else {
                NC(nc_def_dim(ng, dn, len, &newdims[i]));
            }
        }
        int same = strcmp(vars[k], var) != 0, nv;
        if (same) {
            NC(nc_def_var(ng, vars[k], vt, vnd, newdims, &nv));
            if (vt == NC_INT64) {
                long long vals[512];
                size_t n = 1, len;
                for (int i = 0; i < vnd; i++) {
                    NC(nc_inq_dimlen(ng, newdims[i], &len));
                    n *= len;
                }
                assert_true(n <= 512);
                NC(nc_get_var_longlong(old, varid, vals));
                NC(nc_put_var_longlong(ng, nv, vals));
            }
        } else if (nd > 0) {
            int sel[4];
            for (int i = 0; i < nd; i++)
                sel[i] = newdims[order[i]];
            NC(nc_def_var(ng, vars[k], type, nd, sel, &nv));
        }
    }
}

static const int keep2[2] = {0, 1}, swap2[2] = {1, 0}, first1[1] = {0};
static const int last1[1] = {1};

/* Format 3 keeps the index tables in the variable's group g: table `var`
 * is renamed away and a new one defined as `type` over `nd` of its
 * dimensions taken in `order` (or none when nd is 0), left unwritten. */
static void retable(int g, const char *var, nc_type type, int nd,
                    const int *order)
{
    int varid, dims[2], sel[2], nv;
    char old[64];
    NC(nc_inq_varid(g, var, &varid));
    NC(nc_inq_vardimid(g, varid, dims));
    snprintf(old, sizeof old, "%s_old", var);
    NC(nc_rename_var(g, varid, old));
    for (int i = 0; i < nd; i++)
        sel[i] = dims[order[i]];
    if (nd > 0)
        NC(nc_def_var(g, var, type, nd, sel, &nv));
}

static void c_table_int(int r, int g) { (void)r; retable(g, "chunks", NC_INT, 2, keep2); }
static void c_table_1d(int r, int g) { (void)r; retable(g, "runs", NC_INT64, 1, first1); }
static void c_table_swapped(int r, int g) { (void)r; retable(g, "shares", NC_INT64, 2, swap2); }
static void c_table_missing(int r, int g) { (void)r; retable(g, "mixed_chunks", NC_INT64, 0, NULL); }
static void c_runs_double(int r, int g) { (void)r; retable(g, "runs", NC_DOUBLE, 2, keep2); }
static void c_store_double(int r, int g) { (void)r; rebuild(g, "region_3", "data", NC_DOUBLE, 2, keep2); }
static void c_store_swapped(int r, int g) { (void)r; rebuild(g, "Mixed_Chunks", "data", NC_FLOAT, 2, swap2); }
static void c_store_1d(int r, int g) { (void)r; rebuild(g, "region_6", "data", NC_FLOAT, 1, last1); }
static void c_store_missing(int r, int g) { (void)r; rebuild(g, "region_0", "data", NC_FLOAT, 0, NULL); }

/* The stored mask replaced: netCDF can neither rename nor delete it, so
 * apply() unlinks it with HDF5 first (MASK_GONE) and this defines the new
 * one over the grid dimensions y, x (in `order`). */
static void replace_mask(int g, nc_type type, int nd, const int *order,
                         int *newid)
{
    int p, dims[2], sel[2];
    NC(nc_inq_grp_parent(g, &p));
    NC(nc_inq_dimid(p, "y", &dims[0]));
    NC(nc_inq_dimid(p, "x", &dims[1]));
    for (int i = 0; i < nd; i++)
        sel[i] = dims[order[i]];
    NC(nc_def_var(g, "mask", type, nd, sel, newid));
}
static void c_mask_double_frac(int r, int g)
{
    (void)r;
    int varid;
    replace_mask(g, NC_DOUBLE, 2, keep2, &varid);
    double vals[NY * NX];
    int32_t m[NY * NX];
    std_mask(m);
    for (int i = 0; i < NY * NX; i++)
        vals[i] = m[i];
    vals[17] = 3.5; /* not a region id */
    NC(nc_put_var_double(g, varid, vals));
}

static void c_mask_char(int r, int g) { int v; (void)r; replace_mask(g, NC_CHAR, 2, keep2, &v); }
static void c_mask_transposed(int r, int g) { int v; (void)r; replace_mask(g, NC_INT, 2, swap2, &v); }
static void c_mask_1d(int r, int g) { int v; (void)r; replace_mask(g, NC_INT, 1, first1, &v); }

/* The stored mask replaced by one over two huge dimensions, never written:
 * reading it would take 4 TiB. */
static void c_mask_huge(int root, int g)
{
    int varid, d[2], nv;
    NC(nc_def_dim(root, "huge_y", (size_t)1 << 20, &d[0]));
    NC(nc_def_dim(root, "huge_x", (size_t)1 << 20, &d[1]));
    (void)varid;
    NC(nc_def_var(g, "mask", NC_INT, 2, d, &nv));
}

/* raster_dims and raster_dimids pointed at huge grid dimensions */
static void c_grid_huge(int root, int g)
{
    int d[2], ids[3];
    NC(nc_def_dim(root, "hy", (size_t)1 << 30, &d[0]));
    NC(nc_def_dim(root, "hx", (size_t)1 << 30, &d[1]));
    NC(nc_get_att_int(g, NC_GLOBAL, "raster_dimids", ids));
    ids[1] = d[0];
    ids[2] = d[1];
    NC(nc_put_att_int(g, NC_GLOBAL, "raster_dimids", NC_INT, 3, ids));
    NC(nc_put_att_text(g, NC_GLOBAL, "raster_dims", 10, "time/hy/hx"));
}

/* A second group claiming region 3, with data of its own: ignored. */
static void c_region_duplicated(int r, int g)
{
    (void)r;
    int ng, d, varid, id = 3;
    NC(nc_def_grp(g, "region_3_copy", &ng));
    NC(nc_put_att_int(ng, NC_GLOBAL, "region_id", NC_INT, 1, &id));
    NC(nc_def_dim(ng, "cells", 7, &d));
    NC(nc_def_var(ng, "data", NC_FLOAT, 1, &d, &varid));
    float junk[7] = {1, 2, 3, 4, 5, 6, 7};
    NC(nc_put_var_float(ng, varid, junk));
}

/* Region group attributes that lie: format 2 reads serve from them (with
 * the runs), so they are checked and the file refused. */
static void c_counts_lie(int r, int g)
{
    (void)r;
    unsigned long long big = 1ULL << 62, zero = 0;
    int s = sub(g, "region_6");
    NC(nc_put_att_ulonglong(s, NC_GLOBAL, "pure_cells", NC_UINT64, 1, &big));
    NC(nc_put_att_ulonglong(s, NC_GLOBAL, "mixed_offset", NC_UINT64, 1, &big));
    NC(nc_put_att_ulonglong(sub(g, "Mixed_Chunks"), NC_GLOBAL, "mixed_chunks",
                            NC_UINT64, 1, &zero));
}

/* A store's unlimited dimension stretched 2^28 records past the written
 * ones by one record written far away (fill values): before the fix,
 * raster_open indexed every possible chunk (2^28 HDF5 lookups and 2 GiB). */
static void c_sparse_store(int r, int g)
{
    (void)r;
    int s = sub(g, "region_3"), varid;
    NC(nc_inq_varid(s, "data", &varid));
    size_t cells;
    int dims[2];
    NC(nc_inq_vardimid(s, varid, dims));
    NC(nc_inq_dimlen(s, dims[1], &cells));
    float fill[NY * NX];
    for (size_t i = 0; i < cells; i++)
        fill[i] = NC_FILL_FLOAT;
    size_t start[2] = {(size_t)1 << 28, 0}, count[2] = {1, cells};
    NC(nc_put_vara_float(s, varid, start, count, fill));
}

/* Unlinks HDF5 object `obj` of file `path`. */
static void h5_unlink(const char *path, const char *obj)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Ldelete(f, obj, H5P_DEFAULT) >= 0);
    assert_true(H5Fclose(f) >= 0);
}

#define MASK_GONE 2 /* or'ed into apply's unlim: unlink the stored mask */

static void apply(const char *path, int unlim, change_fn fn)
{
    make_file(path, unlim & 1);
    if (unlim & MASK_GONE)
        h5_unlink(path, "/raster_v/mask");
    int ncid, g;
    NC(nc_open(path, NC_WRITE, &ncid));
    NC(nc_inq_grp_ncid(ncid, "raster_v", &g));
    fn(ncid, g);
    NC(nc_close(ncid));
}

static void test_hostile_files(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        change_fn fn;
        int code;   /* RASTER_OK: served, values checked */
        int unlim;  /* -1: both, else only this kind */
        int gone;   /* MASK_GONE: the stored mask is unlinked first */
    } cases[] = {
        {"index table of type int", c_table_int, RASTER_EFORMAT, -1, 0},
        {"index table 1-D", c_table_1d, RASTER_EFORMAT, -1, 0},
        {"shares table transposed", c_table_swapped, RASTER_EFORMAT, -1, 0},
        {"store of type double", c_store_double, RASTER_EFORMAT, -1, 0},
        {"store dimensions swapped", c_store_swapped, RASTER_EFORMAT, -1, 0},
        {"store 1-D", c_store_1d, RASTER_EFORMAT, -1, 0},
        {"store missing", c_store_missing, RASTER_EFORMAT, -1, 0},
        {"index table missing", c_table_missing, RASTER_EFORMAT, -1, 0},
        {"runs table of doubles", c_runs_double, RASTER_EFORMAT, -1, 0},
        {"mask non-integral double", c_mask_double_frac, RASTER_EFORMAT, -1, MASK_GONE},
        {"mask of type char", c_mask_char, RASTER_EFORMAT, -1, MASK_GONE},
        {"mask transposed", c_mask_transposed, RASTER_EFORMAT, -1, MASK_GONE},
        {"mask 1-D", c_mask_1d, RASTER_EFORMAT, -1, MASK_GONE},
        {"mask 2^20 x 2^20, never written", c_mask_huge, RASTER_EFORMAT, -1, MASK_GONE},
        {"grid dimensions 2^30 x 2^30", c_grid_huge, RASTER_EFORMAT, -1, 0},
        {"region group duplicated", c_region_duplicated, RASTER_EFORMAT, -1, 0},
        {"group counts lie", c_counts_lie, RASTER_EFORMAT, -1, 0},
        {"store stretched 2^28 records", c_sparse_store, RASTER_OK, 1, 0},
    };
    char path[600];
    tmpdir_path(path, sizeof path, "hostile.nc");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int unlim = 0; unlim < 2; unlim++) {
            if (cases[i].unlim >= 0 && cases[i].unlim != unlim)
                continue;
            apply(path, unlim | cases[i].gone, cases[i].fn);
            int rc = in_child(cases[i].name, open_and_check, path);
            if (rc != cases[i].code)
                fail_msg("%s (%s): status %d (%s), expected %d (%s)",
                         cases[i].name, unlim ? "unlimited" : "fixed", rc,
                         rc < 40 ? raster_strerror(rc) : "wrong values",
                         cases[i].code, raster_strerror(cases[i].code));
        }
    }
    unlink(path);
}

/* The stretched store is served by netCDF, not indexed chunk by chunk:
 * opening it is quick, and the records in between read as fill values. */
static int far_record_child(void *arg)
{
    alarm(CHILD_SECONDS);
    raster_file *f;
    raster_var *v;
    if (raster_open(arg, RASTER_READ, &f) || raster_var_find(f, "v", &v))
        return 1;
    size_t shape[3];
    if (raster_var_dims(v, NULL, shape, NULL) || shape[0] != ((size_t)1 << 28) + 1)
        return 2;
    /* a record in the middle, and the last one: fill everywhere */
    size_t st[3] = {(size_t)1 << 27, 0, 0}, ct[3] = {1, NY, NX};
    float got[NY * NX];
    for (int k = 0; k < 2; k++) {
        if (raster_var_get(v, st, ct, NULL, got))
            return 3;
        for (size_t i = 0; i < NY * NX; i++)
            if (got[i] != NC_FILL_FLOAT)
                return 4;
        st[0] = (size_t)1 << 28;
    }
    raster_close(f);
    return 0;
}

static void test_sparse_store(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "sparse.nc");
    apply(path, 1, c_sparse_store);
    assert_int_equal(in_child("far record", far_record_child, path), 0);
    unlink(path);
}

/* raster_strerror of codes that are not raster's */
static void test_strerror_unknown(void **state)
{
    (void)state;
    static const int codes[] = {-1, RASTER_ERROR_MAX + 1, 1000, INT32_MIN};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_string_equal(raster_strerror(codes[i]),
                            "unknown raster error code");
}

/* Region lookups by text that is almost a number */
static void test_lookup_text(void **state)
{
    (void)state;
    char path[600];
    tmpdir_path(path, sizeof path, "lookup.nc");
    make_file(path, 0);
    raster_file *f;
    raster_var *v;
    RS(raster_open(path, RASTER_READ, &f));
    RS(raster_var_find(f, "v", &v));
    static const char *const bad[] = {"", " ", "3abc", "3 ", "0x3",
                                      "99999999999", "-2147483649", "+",
                                      "region_3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t id = 12345;
        raster_errmsg_clear();
        assert_int_equal(raster_region_lookup(v, bad[i], &id),
                         RASTER_ENOTFOUND);
        assert_true(raster_errmsg()[0] != '\0');
    }
    int32_t id;
    RS(raster_region_lookup(v, "-5", &id));
    assert_int_equal(id, -5);
    RS(raster_close(f));
    unlink(path);
}

/* A mask whose size overflows is refused before any allocation */
static void test_mask_wrap_overflow(void **state)
{
    (void)state;
    int32_t one = 1;
    raster_mask *m = (raster_mask *)(uintptr_t)1;
    assert_int_equal(raster_mask_wrap(&one, SIZE_MAX / 2, 3, &m),
                     RASTER_EOVERFLOW);
    assert_null(m);
    m = (raster_mask *)(uintptr_t)1;
    assert_int_equal(raster_mask_wrap(&one, (size_t)1 << 32, (size_t)1 << 31,
                                      &m), RASTER_EOVERFLOW);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_sparse_store),
        cmocka_unit_test(test_strerror_unknown),
        cmocka_unit_test(test_lookup_text),
        cmocka_unit_test(test_mask_wrap_overflow),
    };
    return cmocka_run_group_tests(tests, setup_dir, tmpdir_remove);
}
