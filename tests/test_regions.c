/*
 * test_regions.c - unit tests of regions_mark (src/regions.c), the bitmap
 * that proves a region's runs use each of its store cells once and a
 * hyperslab's pieces cover each cell of the caller's plane once. It marks
 * whole words at a time, so the cases are the edges of words: a run inside
 * one word, ending on a word's last bit, crossing one or several words,
 * and an overlap at the head, inside and at the tail of a long run, each
 * refused with the map left as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "regions.h"

#define WORDS 6

/* The map has bits [a, a+n) set, and no other. */
static void assert_only(const uint64_t *map, size_t a, size_t n)
{
    for (size_t i = 0; i < WORDS * 64; i++) {
        int set = (map[i / 64] >> (i % 64)) & 1;
        if (set != (i >= a && i < a + n))
            fail_msg("bit %zu is %d after marking [%zu, %zu)", i, set, a,
                     a + n);
    }
}

static void test_mark_single_runs(void **state)
{
    (void)state;
    static const size_t cases[][2] = {
        {0, 1}, {5, 3}, {63, 1}, {0, 64}, {60, 4}, {60, 5}, {64, 64},
        {1, 127}, {10, 200}, {63, 130}, {0, WORDS * 64}, {7, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint64_t map[WORDS] = {0};
        assert_int_equal(regions_mark(map, cases[k][0], cases[k][1]), 1);
        assert_only(map, cases[k][0], cases[k][1]);
        /* marking it again is an overlap, unless it is empty */
        assert_int_equal(regions_mark(map, cases[k][0], cases[k][1]),
                         cases[k][1] == 0);
        assert_only(map, cases[k][0], cases[k][1]);
    }
}

static void test_mark_neighbours(void **state)
{
    (void)state;
    uint64_t map[WORDS] = {0};
    /* back to back across word edges: all accepted */
    assert_int_equal(regions_mark(map, 0, 40), 1);
    assert_int_equal(regions_mark(map, 40, 24), 1);   /* ends on bit 63 */
    assert_int_equal(regions_mark(map, 64, 1), 1);
    assert_int_equal(regions_mark(map, 65, 150), 1);  /* three words */
    assert_only(map, 0, 215);
}

static void test_mark_overlaps_refused(void **state)
{
    (void)state;
    /* a set bit at the head, in a middle word, at the tail of [30, 250) */
    static const size_t hits[] = {30, 70, 128, 191, 200, 249};
    for (size_t k = 0; k < sizeof hits / sizeof *hits; k++) {
        uint64_t map[WORDS] = {0};
        assert_int_equal(regions_mark(map, hits[k], 1), 1);
        uint64_t before[WORDS];
        memcpy(before, map, sizeof map);
        assert_int_equal(regions_mark(map, 30, 220), 0);
        assert_memory_equal(map, before, sizeof map);
    }
    /* the bits just outside are no overlap */
    uint64_t map[WORDS] = {0};
    assert_int_equal(regions_mark(map, 29, 1), 1);
    assert_int_equal(regions_mark(map, 250, 1), 1);
    assert_int_equal(regions_mark(map, 30, 220), 1);
    assert_only(map, 29, 222);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mark_single_runs),
        cmocka_unit_test(test_mark_neighbours),
        cmocka_unit_test(test_mark_overlaps_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
