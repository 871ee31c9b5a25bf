/*
 * test_alloc.c - scratch blocks: a freed block comes back to the next
 * caller that fits in it (the smallest such), never to two callers at
 * once, not at all to a larger request; the failure hook counts them;
 * threads taking and freeing at once each keep their own; released, none
 * is kept; what is kept is bounded. Large zeroed buffers: the last one
 * freed comes back zeroed.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#include "alloc.h"

static void test_reused(void **state)
{
    (void)state;
    unsigned char *a = raster_scratch(100000, 1);
    assert_non_null(a);
    memset(a, 0xab, 100000);
    raster_scratch_free(a);
    assert_int_equal(raster_scratch_kept(), 100032); /* whole cache lines */
    /* a smaller request takes the block just freed */
    unsigned char *b = raster_scratch(50000, 1);
    assert_ptr_equal(b, a);
    /* while b is out, an equal request gets another block */
    unsigned char *c = raster_scratch(50000, 1);
    assert_non_null(c);
    assert_ptr_not_equal(c, b);
    memset(c, 0x11, 50000);
    memset(b, 0x22, 50000);
    for (size_t i = 0; i < 50000; i++)
        assert_int_equal(c[i], 0x11);
    raster_scratch_free(b);
    raster_scratch_free(c);
    raster_scratch_free(NULL);
}

static void test_smallest_fit(void **state)
{
    (void)state;
    unsigned char *big = raster_scratch(1 << 20, 1);
    unsigned char *small = raster_scratch(1 << 16, 1);
    assert_non_null(big);
    assert_non_null(small);
    raster_scratch_free(big);
    raster_scratch_free(small);
    /* both kept: the smaller one serves a request both fit */
    unsigned char *got = raster_scratch(1000, 1);
    assert_ptr_equal(got, small);
    /* a request larger than every kept block is not served from them */
    unsigned char *large = raster_scratch(2 << 20, 1);
    assert_non_null(large);
    assert_ptr_not_equal(large, big);
    large[(2 << 20) - 1] = 1; /* all of it is the caller's */
    raster_scratch_free(got);
    raster_scratch_free(large);
    assert_int_equal(raster_scratch_kept(), (1 << 20) + (1 << 16) + (2 << 20));
    /* released, none is kept */
    raster_scratch_release();
    assert_int_equal(raster_scratch_kept(), 0);
}

static void test_bounded(void **state)
{
    (void)state;
    /* a block beyond what is kept in all goes back at once */
    unsigned char *huge = raster_scratch((size_t)40 << 20, 1);
    assert_non_null(huge);
    raster_scratch_free(huge);
    assert_int_equal(raster_scratch_kept(), 0);
    /* and no more blocks are kept than there are places */
    unsigned char *p[12];
    for (int i = 0; i < 12; i++)
        assert_non_null(p[i] = raster_scratch(4096, 1));
    for (int i = 0; i < 12; i++)
        raster_scratch_free(p[i]);
    assert_int_equal(raster_scratch_kept(), 8 * 4096);
}

static void test_overflow_and_hook(void **state)
{
    (void)state;
    assert_null(raster_scratch(SIZE_MAX / 2, 4));
    assert_null(raster_scratch(SIZE_MAX - 16, 1));
    raster_alloc_fail_at(1);
    assert_null(raster_scratch(10, 1));
    unsigned char *p = raster_scratch(10, 1); /* only the first fails */
    assert_non_null(p);
    assert_int_equal(raster_alloc_count(), 2);
    raster_alloc_fail_at(0);
    raster_scratch_free(p);
}

#define ROUNDS 20000

static void *take_and_mark(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        size_t n = 4096 + (size_t)(i % 7) * 1000;
        unsigned char *p = raster_scratch(n, 1);
        if (!p)
            return (void *)1;
        memset(p, (int)me, n);
        for (size_t k = 0; k < n; k += 257)
            if (p[k] != (unsigned char)me) /* handed to two threads */
                return (void *)1;
        raster_scratch_free(p);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        assert_int_equal(
            pthread_create(&t[i], NULL, take_and_mark, (void *)(i + 1)), 0);
    for (int i = 0; i < 4; i++) {
        void *ret;
        assert_int_equal(pthread_join(t[i], &ret), 0);
        assert_null(ret);
    }
}

/* Large buffers: zeros, also when the one kept comes back (after being
 * written); kept for a request of half its size or more only, and not
 * for a larger one; the kept one handed out once at a time, and its
 * whole mapping kept again when freed with the smaller size asked; the
 * last one freed kept; released, none; the failure hook counts them. */
static void test_mapped(void **state)
{
    (void)state;
    enum { MB = 1 << 20 };
    unsigned char *a = raster_mapped(8 * MB);
    assert_non_null(a);
    for (size_t i = 0; i < 8 * MB; i += 4093)
        assert_int_equal(a[i], 0);
    memset(a, 0x5a, 8 * MB);
    raster_unmapped(a, 8 * MB);
    assert_int_equal(raster_mapped_kept(), 8 * MB);
    unsigned char *b = raster_mapped(9 * MB); /* larger: fresh */
    assert_ptr_not_equal(b, a);
    raster_unmapped(b, 9 * MB); /* the last freed is kept, a unmapped */
    assert_int_equal(raster_mapped_kept(), 9 * MB);
    unsigned char *c = raster_mapped(4 * MB); /* less than half: fresh */
    assert_ptr_not_equal(c, b);
    unsigned char *d = raster_mapped(5 * MB); /* the kept one, zeroed */
    assert_ptr_equal(d, b);
    assert_int_equal(raster_mapped_kept(), 0);
    for (size_t i = 0; i < 5 * MB; i++)
        if (d[i] != 0)
            fail_msg("a kept buffer handed out again: byte %zu is %d", i,
                     d[i]);
    unsigned char *e = raster_mapped(5 * MB); /* d is out: fresh */
    assert_ptr_not_equal(e, d);
    raster_unmapped(e, 5 * MB);
    raster_unmapped(d, 5 * MB); /* its whole 9 MiB kept again */
    assert_int_equal(raster_mapped_kept(), 9 * MB);
    raster_unmapped(c, 4 * MB);
    assert_int_equal(raster_mapped_kept(), 4 * MB);
    raster_mapped_release();
    assert_int_equal(raster_mapped_kept(), 0);
    raster_unmapped(NULL, 0);
    raster_alloc_fail_at(1);
    assert_null(raster_mapped(MB));
    raster_alloc_fail_at(0);
    assert_null(raster_mapped(0));
}

/* each test starts with nothing kept */
static int release(void **state)
{
    (void)state;
    raster_scratch_release();
    raster_mapped_release();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_reused, release),
        cmocka_unit_test_setup(test_smallest_fit, release),
        cmocka_unit_test_setup(test_bounded, release),
        cmocka_unit_test_setup(test_overflow_and_hook, release),
        cmocka_unit_test_setup(test_threads, release),
        cmocka_unit_test_setup(test_mapped, release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
