/*
 * test_error.c - unit tests of status codes, raster_strerror(), the
 * per-thread detailed message raster_errmsg(), and the version functions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "raster.h"

static void test_strerror_known(void **state)
{
    (void)state;
    const char *text[RASTER_ERROR_MAX + 1];
    for (int code = 0; code <= RASTER_ERROR_MAX; code++) {
        text[code] = raster_strerror(code);
        assert_non_null(text[code]);
        assert_true(strlen(text[code]) > 0);
        assert_string_not_equal(text[code], "unknown raster error code");
        for (int other = 0; other < code; other++)
            assert_string_not_equal(text[code], text[other]);
    }
    assert_string_equal(raster_strerror(RASTER_OK), "success");
    /* the codes are the documented stable values */
    assert_int_equal(RASTER_OK, 0);
    assert_int_equal(RASTER_EINVAL, 1);
    assert_int_equal(RASTER_ENOMEM, 2);
    assert_int_equal(RASTER_EOVERFLOW, 3);
    assert_int_equal(RASTER_ENETCDF, 4);
    assert_int_equal(RASTER_EHDF5, 5);
    assert_int_equal(RASTER_EIO, 6);
    assert_int_equal(RASTER_EMASK, 7);
    assert_int_equal(RASTER_ENOTFOUND, 8);
    assert_int_equal(RASTER_EFORMAT, 9);
    assert_int_equal(RASTER_EINCOMPLETE, 10);
    assert_int_equal(RASTER_EUNSUPPORTED, 11);
    assert_int_equal(RASTER_EINTERNAL, 12);
    assert_int_equal(RASTER_ERROR_MAX, RASTER_EINTERNAL);
}

static void test_strerror_unknown(void **state)
{
    (void)state;
    const int unknown[] = {-1, 999, RASTER_ERROR_MAX + 1, INT_MIN, INT_MAX,
                           -51 /* NC_ENOTNC: netCDF codes are not ours */};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        assert_string_equal(raster_strerror(unknown[i]),
                            "unknown raster error code");
}

/* A failing call sets the message; a successful call leaves it; the next
 * failure overwrites it; clearing empties it. */
static void test_errmsg_lifecycle(void **state)
{
    (void)state;
    raster_errmsg_clear();
    assert_string_equal(raster_errmsg(), "");

    int32_t mask[4] = {1, 2, 3, 4};
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, 2, 2, 0, 1, &m), RASTER_EINVAL);
    char first[512];
    snprintf(first, sizeof first, "%s", raster_errmsg());
    assert_true(strlen(first) > 0);
    assert_non_null(strstr(first, "tile")); /* says what was wrong */

    assert_int_equal(raster_mesh_build(mask, 2, 2, 1, 1, &m), RASTER_OK);
    assert_string_equal(raster_errmsg(), first);

    raster_region_stats st;
    assert_int_equal(raster_mesh_region_stats(m, 77, &st), RASTER_ENOTFOUND);
    assert_string_not_equal(raster_errmsg(), first);
    assert_non_null(strstr(raster_errmsg(), "77"));
    raster_mesh_free(m);

    /* raster_fail formats and returns the code */
    assert_int_equal(raster_fail(RASTER_EIO, "disk %d of %s", 3, "five"),
                     RASTER_EIO);
    assert_string_equal(raster_errmsg(), "disk 3 of five");

    /* a very long message is truncated, not overflowed */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(raster_fail(RASTER_EINVAL, "%s", big), RASTER_EINVAL);
    size_t len = strlen(raster_errmsg());
    assert_true(len > 0 && len < sizeof big - 1);

    raster_errmsg_clear();
    assert_string_equal(raster_errmsg(), "");
}

/* ---- per-thread messages ----------------------------------------------- */

#define NTHREADS 8

typedef struct worker {
    int index;
    pthread_barrier_t *barrier;
    char initial[512];  /* message seen at thread start */
    char own[512];      /* message after this thread's failure */
    char after[512];    /* message after every thread failed */
    int rc;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    snprintf(w->initial, sizeof w->initial, "%s", raster_errmsg());
    int32_t mask[4] = {0, 0, 0, 0};
    raster_mesh *m = NULL;
    /* each thread a different message: "tile 0 x <index+1>: ..." */
    w->rc = raster_mesh_build(mask, 2, 2, 0, (size_t)w->index + 1, &m);
    snprintf(w->own, sizeof w->own, "%s", raster_errmsg());
    pthread_barrier_wait(w->barrier); /* everyone has failed */
    pthread_barrier_wait(w->barrier); /* main thread has failed again */
    snprintf(w->after, sizeof w->after, "%s", raster_errmsg());
    return NULL;
}

static void test_errmsg_per_thread(void **state)
{
    (void)state;
    /* main thread's message */
    assert_int_equal(raster_fail(RASTER_EMASK, "main thread message"),
                     RASTER_EMASK);

    pthread_barrier_t barrier;
    assert_int_equal(pthread_barrier_init(&barrier, NULL, NTHREADS + 1), 0);
    worker w[NTHREADS];
    pthread_t tid[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].index = i;
        w[i].barrier = &barrier;
        assert_int_equal(pthread_create(&tid[i], NULL, worker_main, &w[i]),
                         0);
    }
    pthread_barrier_wait(&barrier);
    /* every thread has failed: the main thread's message is untouched */
    assert_string_equal(raster_errmsg(), "main thread message");
    /* the main thread fails again while the others hold their messages */
    assert_int_equal(raster_fail(RASTER_EIO, "main thread again"), RASTER_EIO);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(tid[i], NULL), 0);
    pthread_barrier_destroy(&barrier);

    assert_string_equal(raster_errmsg(), "main thread again");
    for (int i = 0; i < NTHREADS; i++) {
        char expect[64];
        snprintf(expect, sizeof expect, "tile 0 x %d", i + 1);
        assert_int_equal(w[i].rc, RASTER_EINVAL);
        /* a new thread starts with no message */
        assert_string_equal(w[i].initial, "");
        assert_non_null(strstr(w[i].own, expect));
        /* neither the other threads nor the main thread changed it */
        assert_string_equal(w[i].after, w[i].own);
    }
}

/* The version meson was configured with (project(version:)), given as the
 * program's argument by tests/meson.build: the library and the generated
 * header must both say that, not merely agree with each other. */
static const char *meson_version;

static void test_version(void **state)
{
    (void)state;
    assert_non_null(meson_version);
    int major, minor, release, end = 0;
    assert_int_equal(sscanf(meson_version, "%d.%d.%d%n", &major, &minor,
                            &release, &end),
                     3);
    assert_int_equal(meson_version[end], '\0');
    int number = major * 10000 + minor * 100 + release;

    assert_non_null(raster_version_string());
    assert_string_equal(raster_version_string(), meson_version);
    assert_int_equal(raster_version_number(), number);
    /* the header a program compiles against says the same */
    assert_string_equal(RASTER_VERSION_STRING, meson_version);
    assert_int_equal(RASTER_VERSION_NUMBER, number);
    assert_int_equal(RASTER_VERSION_MAJOR, major);
    assert_int_equal(RASTER_VERSION_MINOR, minor);
    assert_int_equal(RASTER_VERSION_RELEASE, release);
    /* the same static string every time */
    assert_ptr_equal(raster_version_string(), raster_version_string());
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_error MESON_PROJECT_VERSION\n");
        return 2;
    }
    meson_version = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_known),
        cmocka_unit_test(test_strerror_unknown),
        cmocka_unit_test(test_errmsg_lifecycle),
        cmocka_unit_test(test_errmsg_per_thread),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
