/*
 * test_choose.c - unit tests of raster_var_choose (src/api/choose.c), the rule
 * for which variables are data stored by region: every reason on one
 * netCDF-4 file (coordinates by dimension name, axis, standard_name, CF
 * units, coordinates/bounds/cell_measures words of any group, char and
 * string attributes, CF paths, the mask by name and by values, 2-D fields,
 * type, rank, grid, unlimited grid), what naming a variable changes, and
 * the errors, and allocation failures (never a wrong answer).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <netcdf.h>
#include <string.h>

#include "alloc.h"
#include "raster.h"

#include "testutil.h"

#define NY 3
#define NX 4

static const int32_t mask_ids_[NY * NX] = {1, 1, 2, 2, 1, 3, 3, 2,
                                           0, 0, 3, 3};

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_create("choose");
}

static int def(int g, const char *name, nc_type t, int n, const int *dims)
{
    int v;
    NC(nc_def_var(g, name, t, n, dims, &v));
    return v;
}

static void text(int g, int v, const char *att, const char *val)
{
    NC(nc_put_att_text(g, v, att, strlen(val), val));
}

/* The reason for variable `path` ("name" or "sub/name") of file ncid. */
static int why_of(int ncid, const char *path, const raster_mask *m,
                  const char *mask_var, int flags)
{
    int g = ncid, v, why = -1;
    const char *slash = strchr(path, '/');
    char grp[NC_MAX_NAME + 1];
    if (slash) {
        memcpy(grp, path, (size_t)(slash - path));
        grp[slash - path] = '\0';
        NC(nc_inq_grp_ncid(ncid, grp, &g));
        path = slash + 1;
    }
    NC(nc_inq_varid(g, path, &v));
    RS(raster_var_choose(g, v, m, mask_var, flags, &why));
    return why;
}

static void test_reasons(void **state)
{
    (void)state;
    char path[512];
    tmpdir_path(path, sizeof path, "choose.nc");
    int ncid, dt, dz, dy, dx, d1, dd;
    NC(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid));
    NC(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt));
    NC(nc_def_dim(ncid, "z", 2, &dz));
    NC(nc_def_dim(ncid, "y", NY, &dy));
    NC(nc_def_dim(ncid, "x", NX, &dx));
    NC(nc_def_dim(ncid, "one", 1, &d1));
    NC(nc_def_dim(ncid, "d2", 2, &dd));
    int tyx[3] = {dt, dy, dx}, zyx[3] = {dz, dy, dx}, yx[2] = {dy, dx};
    int oyx[3] = {d1, dy, dx}, ztx[3] = {dz, dt, dx}, tzd[3] = {dt, dz, dd};
    int vtime = def(ncid, "time", NC_DOUBLE, 1, &dt);
    int t = def(ncid, "t", NC_FLOAT, 3, tyx);
    text(ncid, t, "coordinates", "lon3  time\tlat_words");
    text(ncid, t, "cell_measures", "area: cm");
    def(ncid, "lat3", NC_FLOAT, 3, tyx);
    text(ncid, def(ncid, "lon3", NC_FLOAT, 3, tyx), "standard_name",
         "grid_longitude");
    text(ncid, def(ncid, "ulat", NC_FLOAT, 3, tyx), "units", "DEGREES_NORTH");
    text(ncid, def(ncid, "ukelvin", NC_FLOAT, 3, tyx), "units", "K");
    text(ncid, def(ncid, "ax", NC_FLOAT, 3, zyx), "axis", "Z");
    def(ncid, "cm", NC_FLOAT, 3, zyx);
    def(ncid, "area", NC_DOUBLE, 2, yx);
    def(ncid, "mymask", NC_INT, 3, tyx);
    def(ncid, "ch", NC_CHAR, 3, tyx);
    def(ncid, "og", NC_FLOAT, 3, tzd);
    def(ncid, "ug", NC_FLOAT, 3, ztx);
    def(ncid, "scalar", NC_INT, 0, NULL);
    int mv = def(ncid, "mv", NC_INT, 3, oyx);
    int mv2 = def(ncid, "mv2", NC_SHORT, 3, oyx);
    def(ncid, "glob3", NC_FLOAT, 3, tyx);
    def(ncid, "bnd3", NC_FLOAT, 3, tyx);
    int sub;
    NC(nc_def_grp(ncid, "sub", &sub));
    int w = def(sub, "w", NC_FLOAT, 3, tyx);
    /* a string attribute, and a CF path naming the root's lat3 */
    const char *words = "../nothing /lat3";
    NC(nc_put_att_string(sub, w, "coordinates", 1, &words));
    text(sub, w, "bounds", "bnd3");
    text(sub, NC_GLOBAL, "coordinates", "glob3");
    NC(nc_enddef(ncid));
    double times[NY] = {0, 1, 2};
    NC(nc_put_vara_double(ncid, vtime, (size_t[]){0}, (size_t[]){NY}, times));
    NC(nc_put_var_int(ncid, mv, mask_ids_));
    short other[NY * NX];
    for (int i = 0; i < NY * NX; i++)
        other[i] = (short)mask_ids_[i];
    other[NY * NX - 1] = 7;
    NC(nc_put_var_short(ncid, mv2, other));

    raster_mask *m;
    RS(raster_mask_wrap(mask_ids_, NY, NX, &m));
    const char *mv_ = "dir/mymask";
    struct { const char *var; int why, named; } rows[] = {
        {"time", RASTER_CHOOSE_COORDINATE, RASTER_CHOOSE_RANK},
        {"t", RASTER_CHOOSE_DATA, RASTER_CHOOSE_DATA},
        {"lat3", RASTER_CHOOSE_REFERENCED, RASTER_CHOOSE_DATA},
        {"lon3", RASTER_CHOOSE_GEO, RASTER_CHOOSE_DATA},
        {"ulat", RASTER_CHOOSE_GEO, RASTER_CHOOSE_DATA},
        {"ukelvin", RASTER_CHOOSE_DATA, RASTER_CHOOSE_DATA},
        {"ax", RASTER_CHOOSE_AXIS, RASTER_CHOOSE_DATA},
        {"cm", RASTER_CHOOSE_REFERENCED, RASTER_CHOOSE_DATA},
        {"area", RASTER_CHOOSE_NO_OUTER, RASTER_CHOOSE_DATA},
        {"mymask", RASTER_CHOOSE_MASK, RASTER_CHOOSE_DATA},
        {"ch", RASTER_CHOOSE_TYPE, RASTER_CHOOSE_TYPE},
        {"og", RASTER_CHOOSE_GRID, RASTER_CHOOSE_GRID},
        {"ug", RASTER_CHOOSE_UNLIMITED, RASTER_CHOOSE_UNLIMITED},
        {"scalar", RASTER_CHOOSE_RANK, RASTER_CHOOSE_RANK},
        {"mv", RASTER_CHOOSE_MASK_VALUES, RASTER_CHOOSE_DATA},
        {"mv2", RASTER_CHOOSE_DATA, RASTER_CHOOSE_DATA},
        {"glob3", RASTER_CHOOSE_REFERENCED, RASTER_CHOOSE_DATA},
        {"bnd3", RASTER_CHOOSE_REFERENCED, RASTER_CHOOSE_DATA},
        {"sub/w", RASTER_CHOOSE_DATA, RASTER_CHOOSE_DATA},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        int got = why_of(ncid, rows[i].var, m, mv_, RASTER_CHOOSE_VALUES);
        if (got != rows[i].why)
            fail_msg("%s: reason %d (%s), wanted %d", rows[i].var, got,
                     raster_choose_reason(got), rows[i].why);
        got = why_of(ncid, rows[i].var, m, mv_, RASTER_CHOOSE_NAMED);
        if (got != rows[i].named)
            fail_msg("%s named: reason %d (%s), wanted %d", rows[i].var, got,
                     raster_choose_reason(got), rows[i].named);
    }
    /* without RASTER_CHOOSE_VALUES the values are not read; without a mask
     * name no variable is the mask by name */
    assert_int_equal(why_of(ncid, "mv", m, mv_, 0), RASTER_CHOOSE_DATA);
    assert_int_equal(why_of(ncid, "mymask", m, NULL, 0), RASTER_CHOOSE_DATA);
    /* a mask of another grid: only the grid differs */
    raster_mask *m2;
    RS(raster_mask_wrap(mask_ids_, NX, NY, &m2));
    assert_int_equal(why_of(ncid, "t", m2, NULL, 0), RASTER_CHOOSE_GRID);

    /* each allocation failing in turn: RASTER_ENOMEM, never a reason */
    struct { const char *var; int flags, why; } loops[] = {
        {"sub/w", RASTER_CHOOSE_VALUES, RASTER_CHOOSE_DATA},
        {"lat3", 0, RASTER_CHOOSE_REFERENCED},
        {"mv", RASTER_CHOOSE_VALUES, RASTER_CHOOSE_MASK_VALUES},
    };
    for (size_t i = 0; i < sizeof loops / sizeof *loops; i++) {
        int g = ncid, v;
        const char *name = loops[i].var;
        if (strchr(name, '/')) {
            NC(nc_inq_grp_ncid(ncid, "sub", &g));
            name = strchr(name, '/') + 1;
        }
        NC(nc_inq_varid(g, name, &v));
        unsigned long n;
        for (n = 1; n < 10000; n++) {
            int why = -1;
            raster_alloc_fail_at(n);
            int rc = raster_var_choose(g, v, m, mv_, loops[i].flags, &why);
            unsigned long made = raster_alloc_count();
            raster_alloc_fail_at(0);
            if (rc == RASTER_OK) {
                if (made != n - 1)
                    fail_msg("%s: failing allocation %lu of %lu ignored",
                             loops[i].var, n, made);
                assert_int_equal(why, loops[i].why);
                break;
            }
            if (rc != RASTER_ENOMEM)
                fail_msg("%s: allocation %lu failed: %s: %s", loops[i].var,
                         n, raster_strerror(rc), raster_errmsg());
        }
        assert_true(n > 1);
    }

    /* errors */
    int why = 99;
    assert_int_equal(raster_var_choose(ncid, t, m, NULL, 0, NULL),
                     RASTER_EINVAL);
    assert_int_equal(raster_var_choose(ncid, t, NULL, NULL, 0, &why),
                     RASTER_EINVAL);
    assert_int_equal(raster_var_choose(ncid, 999, m, NULL, 0, &why),
                     RASTER_ENETCDF);
    NC(nc_close(ncid));
    assert_int_equal(raster_var_choose(ncid, t, m, NULL, 0, &why),
                     RASTER_ENETCDF);
    raster_mask_free(m);
    raster_mask_free(m2);
}

static void test_reason_text(void **state)
{
    (void)state;
    for (int i = RASTER_CHOOSE_DATA; i <= RASTER_CHOOSE_MASK_VALUES; i++) {
        const char *s = raster_choose_reason(i);
        assert_non_null(s);
        assert_string_not_equal(s, "unknown reason");
        for (int j = 0; j < i; j++)
            assert_string_not_equal(s, raster_choose_reason(j));
    }
    assert_string_equal(raster_choose_reason(-1), "unknown reason");
    assert_string_equal(raster_choose_reason(RASTER_CHOOSE_MASK_VALUES + 1),
                        "unknown reason");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_reason_text),
    };
    return cmocka_run_group_tests_name("choose", tests, setup_dir,
                                       tmpdir_remove);
}
