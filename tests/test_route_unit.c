/*
 * test_route_unit.c - unit tests of the preload library's routing by caller
 * (preload/route.c), in CMocka.
 *
 * route.c is built here against stand-ins (tests/route/): a fake libnetcdf
 * (RASTER_NETCDF_PATH names it, so it is "the system copy"), a fake shim
 * core (RASTER_SHIM_CORE, opened from route's own directory) and a fake
 * libraster (it defines raster_version_number), a fake libhdf5 (by its
 * file name). Each fake records who answered, and the core and netCDF
 * answer differently, so every test knows where a call went: the
 * program's calls to the core; the calls of libraster, the core, libnetcdf
 * and libhdf5, and every call made inside a call routed to netCDF or the
 * core, straight to netCDF.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "route/fake_hdf5.h"
#include "route/fake_log.h"
#include "route/fake_raster.h"

static int setup(void **state)
{
    (void)state;
    route_fake_reset();
    return 0;
}

/* The program's own call goes to the shim core, arguments unchanged. */
static void test_program_call_reaches_core(void **state)
{
    (void)state;
    int natts = -1;
    assert_int_equal(nc_inq_varnatts(0x10000, 0, &natts), NC_NOERR);
    assert_int_equal(natts, 100);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 0);
    /* an optional pointer stays NULL on the way */
    assert_int_equal(nc_inq_varnatts(0x10000, 0, NULL), NC_NOERR);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 2);
}

/* libraster's call goes straight to netCDF, never to the core; netCDF's
 * status reaches libraster unchanged. */
static void test_libraster_call_goes_straight(void **state)
{
    (void)state;
    int natts = -1;
    assert_int_equal(fake_raster_varnatts(0x10000, &natts), NC_NOERR);
    assert_int_equal(natts, 7);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 0);
    natts = -1;
    assert_int_equal(fake_raster_varnatts(-1, &natts), NC_EBADID);
    assert_int_equal(natts, -1);
    /* and the program's next call is the core's again */
    assert_int_equal(nc_inq_varnatts(0x10000, 0, &natts), NC_NOERR);
    assert_int_equal(natts, 100);
}

/* A call netCDF makes inside one of libraster's goes straight to netCDF
 * too (route.c's thread-local depth). */
static void test_nested_in_libraster_goes_straight(void **state)
{
    (void)state;
    unsigned id = 0;
    assert_int_equal(fake_raster_filter(0x10000, &id), NC_NOERR);
    assert_int_equal(id, 307);
    assert_int_equal(route_fake_count("real:nc_inq_var_filter_ids"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_var_filter_ids"), 0);
    assert_int_equal(route_fake_count("real:nc_inq_var_filter(saw real)"), 1);
    /* the depth is back to 0: the program's call is the core's */
    size_t n = 0;
    assert_int_equal(nc_inq_var_filter_ids(0x10000, 0, &n, NULL), NC_NOERR);
    assert_int_equal(n, 200);
}

/* A call netCDF makes inside one of the program's (passed to netCDF: the
 * core wraps no nc_inq_var_filter here) goes straight to netCDF, not to
 * the core: only the program's own calls are the core's. */
static void test_nested_in_program_call_goes_straight(void **state)
{
    (void)state;
    unsigned id = 0;
    assert_int_equal(nc_inq_var_filter(0x10000, 0, &id, NULL, NULL),
                     NC_NOERR);
    assert_int_equal(id, 307);
    assert_int_equal(route_fake_count("real:nc_inq_var_filter_ids"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_var_filter_ids"), 0);
    assert_int_equal(route_fake_count("real:nc_inq_var_filter(saw real)"), 1);
}

/* libnetcdf's own call of an exported function, outside any call routed
 * to it, goes straight to netCDF: its caller is a libnetcdf. */
static void test_netcdf_call_goes_straight(void **state)
{
    (void)state;
    int natts = -1;
    assert_int_equal(route_fake_netcdf_varnatts(0x10000, &natts), NC_NOERR);
    assert_int_equal(natts, 7);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 0);
}

/* So does a libhdf5's (known by its file name, libhdf5*). */
static void test_hdf5_call_goes_straight(void **state)
{
    (void)state;
    int natts = -1;
    assert_int_equal(fake_hdf5_varnatts(0x10000, &natts), NC_NOERR);
    assert_int_equal(natts, 7);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 0);
    /* netCDF's status unchanged */
    assert_int_equal(fake_hdf5_varnatts(-1, &natts), NC_EBADID);
}

/* And the shim core's own netCDF call, which would otherwise come back to
 * the core's wrapper of the same name. */
static void test_core_call_goes_straight(void **state)
{
    (void)state;
    int natts = -1;
    /* the program's first call opens the core beside the router */
    assert_int_equal(nc_inq_varnatts(0x10000, 0, &natts), NC_NOERR);
    assert_int_equal(natts, 100);
    void *core = dlopen("libroute_fake_core.so", RTLD_LAZY | RTLD_NOLOAD);
    assert_non_null(core);
    int (*core_varnatts)(int, int *) =
        (int (*)(int, int *))dlsym(core, "fake_core_varnatts");
    assert_non_null(core_varnatts);
    route_fake_reset();
    natts = -1;
    assert_int_equal(core_varnatts(0x10000, &natts), NC_NOERR);
    assert_int_equal(natts, 7);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 0);
    dlclose(core);
}

static int natts_inside;

/* Run inside netCDF's nc_inq_var_filter: a call with the program's return
 * address, as a tail call netCDF makes shows. */
static void program_call_inside(void)
{
    natts_inside = -1;
    if (nc_inq_varnatts(0x10000, 0, &natts_inside) != NC_NOERR)
        natts_inside = -2;
}

/* Inside a program's call routed to the system copy, every call on the
 * thread goes straight to netCDF, whatever its return address. */
static void test_inside_program_call_goes_straight(void **state)
{
    (void)state;
    unsigned id = 0;
    route_fake_set_hold(program_call_inside);
    int st = nc_inq_var_filter(ROUTE_FAKE_HOLD_NCID, 0, &id, NULL, NULL);
    route_fake_set_hold(NULL);
    assert_int_equal(st, NC_NOERR);
    assert_int_equal(natts_inside, 7);
    assert_int_equal(route_fake_count("real:nc_inq_varnatts"), 1);
    assert_int_equal(route_fake_count("core:nc_inq_varnatts"), 0);
    /* and after it, the program's call is the core's again */
    int natts = -1;
    assert_int_equal(nc_inq_varnatts(0x10000, 0, &natts), NC_NOERR);
    assert_int_equal(natts, 100);
}

static sem_t entered, released;

/* Called inside netCDF, inside libraster's call, on the other thread. */
static void hold(void)
{
    sem_post(&entered);
    sem_wait(&released);
}

static void *raster_in_thread(void *arg)
{
    int *natts = arg;
    if (fake_raster_varnatts(ROUTE_FAKE_HOLD_NCID, natts) != NC_NOERR)
        *natts = -2;
    return NULL;
}

/* The depth is per thread: while another thread is inside a libraster call,
 * the program's call on this one is still the core's. */
static void test_depth_is_per_thread(void **state)
{
    (void)state;
    int theirs = -1, mine = -1;
    pthread_t t;
    assert_int_equal(sem_init(&entered, 0, 0), 0);
    assert_int_equal(sem_init(&released, 0, 0), 0);
    route_fake_set_hold(hold);
    assert_int_equal(pthread_create(&t, NULL, raster_in_thread, &theirs), 0);
    assert_int_equal(sem_wait(&entered), 0);
    int st = nc_inq_varnatts(0x10000, 0, &mine);
    sem_post(&released);
    assert_int_equal(pthread_join(t, NULL), 0);
    route_fake_set_hold(NULL);
    assert_int_equal(st, NC_NOERR);
    assert_int_equal(mine, 100);
    assert_int_equal(theirs, 7);
    sem_destroy(&entered);
    sem_destroy(&released);
}

int main(void)
{
    /* an LD_PRELOAD of the real shim would come first in the global scope
     * and take the program's calls from the routing under test */
    Dl_info info;
    if (!dladdr(dlsym(RTLD_DEFAULT, "nc_inq_varnatts"), &info) ||
        !info.dli_fname || !strstr(info.dli_fname, "libroute_under_test")) {
        fprintf(stderr, "nc_inq_varnatts is not the routing under test's "
                "(%s): skipped\n", info.dli_fname ? info.dli_fname : "?");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_program_call_reaches_core, setup),
        cmocka_unit_test_setup(test_libraster_call_goes_straight, setup),
        cmocka_unit_test_setup(test_nested_in_libraster_goes_straight, setup),
        cmocka_unit_test_setup(test_nested_in_program_call_goes_straight,
                               setup),
        cmocka_unit_test_setup(test_netcdf_call_goes_straight, setup),
        cmocka_unit_test_setup(test_hdf5_call_goes_straight, setup),
        cmocka_unit_test_setup(test_core_call_goes_straight, setup),
        cmocka_unit_test_setup(test_inside_program_call_goes_straight,
                               setup),
        cmocka_unit_test_setup(test_depth_is_per_thread, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
