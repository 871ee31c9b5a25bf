/*
 * test_regions.c - unit tests of regions_mark (src/format/regions.c), the bitmap
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

#include "integrity.h"
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

/* CRC32C bit by bit, the definition the table and hardware paths must
 * match. */
static uint32_t crc32c_bitwise(const unsigned char *p, size_t n)
{
    uint32_t r = ~0u;
    for (size_t i = 0; i < n; i++) {
        r ^= p[i];
        for (int k = 0; k < 8; k++)
            r = r & 1 ? (r >> 1) ^ 0x82F63B78u : r >> 1;
    }
    return ~r;
}

/* The checksums of docs/FORMAT.md: CRC32C's check value, every length up
 * to past three hardware blocks (integrity.c), continuation, and the
 * little-endian int64 and tile forms. */
static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u);
    static unsigned char buf[10000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t n = 0; n <= sizeof buf; n += n < 64 ? 1 : 61)
        assert_int_equal(crc32c(0, buf, n), crc32c_bitwise(buf, n));
    assert_int_equal(crc32c(crc32c(0, buf, 5000), buf + 5000, 5000),
                     crc32c_bitwise(buf, 10000));
    long long v[2] = {1, -2};
    static const unsigned char le[16] = {1, 0, 0, 0, 0, 0, 0, 0,
                                         0xfe, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff};
    assert_int_equal(sums_i64(0, v, 2), crc32c_bitwise(le, 16));
    static const unsigned char rows[24] = {7, 0, 0, 0, 0, 0, 0, 0,
                                           1, 0, 0, 0, 0, 0, 0, 0,
                                           0xfe, 0xff, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff};
    assert_int_equal(sums_region_rows(7, v, 2), crc32c_bitwise(rows, 24));
    /* tile 3, 2 x 2 cells of a mask 3 wide: k, then int32 cells */
    int m[6] = {5, -1, 9, 6, 258, 9};
    static const unsigned char tile[24] = {3, 0, 0, 0, 0, 0, 0, 0,
                                           5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
                                           6, 0, 0, 0, 2, 1, 0, 0};
    assert_int_equal(sums_tile(3, m, 3, 2, 2), crc32c_bitwise(tile, 24));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_mark_single_runs),
        cmocka_unit_test(test_mark_neighbours),
        cmocka_unit_test(test_mark_overlaps_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
