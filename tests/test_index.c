/*
 * test_index.c - unit tests of the Chunk Index Manager (src/plan/index.c):
 * per-region statistics and chunk lists on small hand-made masks whose
 * every number is worked out by hand in the comments.
 *
 * Stats: cells; pure / mixed chunk counts; exact bbox [y0,y1) x [x0,x1);
 * tile-aligned bbox (outward to tile boundaries, clipped to the grid);
 * bbox_cells; bbox_tile_cells; read_cells (pure chunks + mixed chunks
 * touched); data_reduction_rate = bbox_tile_cells / read_cells.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "raster.h"

#include "testutil.h"

/* Region `index` (ascending order) has statistics `e`, found both by index
 * and by id, and chunk list `chunks`. */
static void assert_region(const raster_mesh *m, size_t index,
                          const exp_stats *e, const size_t *chunks,
                          size_t nchunks)
{
    raster_region_stats st;
    memset(&st, 0xff, sizeof st);
    assert_int_equal(raster_mesh_region(m, index, &st), RASTER_OK);
    assert_stats(&st, e);
    memset(&st, 0xff, sizeof st);
    assert_int_equal(raster_mesh_region_stats(m, e->id, &st), RASTER_OK);
    assert_stats(&st, e);
    assert_region_chunks(m, e->id, chunks, nchunks);
    assert_int_equal(nchunks, e->pure + e->mixed);
}

/* The regions' ids in ascending order, and nothing else. */
static void assert_region_ids(const raster_mesh *m, const int32_t *ids,
                              size_t n)
{
    assert_int_equal(raster_mesh_nregions(m), n);
    for (size_t i = 0; i < n; i++) {
        raster_region_stats st;
        assert_int_equal(raster_mesh_region(m, i, &st), RASTER_OK);
        assert_int_equal(st.id, ids[i]);
    }
    raster_region_stats st;
    assert_int_equal(raster_mesh_region(m, n, &st), RASTER_EINVAL);
}

/*
 * Diagonal: 6 x 6, id 1 on the diagonal, 0 elsewhere, tiles 2 x 2 (3 x 3
 * tiles). Tiles on the diagonal are mixed (2 cells of each id), the others
 * pure 0:
 *   tile-row 0: c0 mixed (0,0) 2x2 | c1 pure 0 (0,2) 2x4
 *   tile-row 1: c2 pure 0 (2,0) 2x2 | c3 mixed (2,2) | c4 pure 0 (2,4) 2x2
 *   tile-row 2: c5 pure 0 (4,0) 2x4 | c6 mixed (4,4)
 */
static void test_diagonal(void **state)
{
    (void)state;
    int32_t mask[36];
    for (size_t y = 0; y < 6; y++)
        for (size_t x = 0; x < 6; x++)
            mask[y * 6 + x] = y == x;
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 6, 6, 2, 2, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 7);
    assert_chunk(m, 0, 0, 0, 2, 2, 1, 2);
    assert_chunk(m, 1, 0, 2, 2, 4, 0, 1);
    assert_chunk(m, 2, 2, 0, 2, 2, 0, 1);
    assert_chunk(m, 3, 2, 2, 2, 2, 1, 2);
    assert_chunk(m, 4, 2, 4, 2, 2, 0, 1);
    assert_chunk(m, 5, 4, 0, 2, 4, 0, 1);
    assert_chunk(m, 6, 4, 4, 2, 2, 1, 2);
    /* c0: 0 at (0,1),(1,0); 1 at (0,0),(1,1): both bboxes the whole tile */
    assert_share(m, 0, 0, 0, 2, 0, 0, 2, 2);
    assert_share(m, 0, 1, 1, 2, 0, 0, 2, 2);
    assert_share(m, 6, 1, 1, 2, 4, 4, 6, 6);

    const int32_t ids[] = {0, 1};
    assert_region_ids(m, ids, 2);
    /* 0: 30 cells; pure c1,c2,c4,c5; mixed c0,c3,c6. bbox: (0,1) .. (5,4)
     * and (1,0) .. (4,5) -> whole grid 36; tile box 36; read all 36. */
    exp_stats s0 = {0, 30, 4, 3, 0, 0, 6, 6, 0, 0, 6, 6, 36, 36, 36, 1.0};
    const size_t l0[] = {0, 1, 2, 3, 4, 5, 6};
    assert_region(m, 0, &s0, l0, 7);
    /* 1: 6 cells, only in mixed chunks c0, c3, c6: read 12; bbox whole grid
     * 36; rate 36 / 12 = 3. */
    exp_stats s1 = {1, 6, 0, 3, 0, 0, 6, 6, 0, 0, 6, 6, 36, 36, 12, 3.0};
    const size_t l1[] = {0, 3, 6};
    assert_region(m, 1, &s1, l1, 3);
    raster_mesh_free(m);
}

/*
 * Checkerboard 4 x 6 of ids 3 and -3, tiles 2 x 2: every tile mixed with 2
 * cells of each id, 6 chunks, both regions in all of them.
 */
static void test_checkerboard(void **state)
{
    (void)state;
    int32_t mask[24];
    for (size_t y = 0; y < 4; y++)
        for (size_t x = 0; x < 6; x++)
            mask[y * 6 + x] = (y + x) % 2 ? 3 : -3;
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 4, 6, 2, 2, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 6);
    for (size_t i = 0; i < 6; i++) {
        size_t y0 = i / 3 * 2, x0 = i % 3 * 2;
        assert_chunk(m, i, y0, x0, 2, 2, 1, 2);
        assert_share(m, i, 0, -3, 2, y0, x0, y0 + 2, x0 + 2);
        assert_share(m, i, 1, 3, 2, y0, x0, y0 + 2, x0 + 2);
    }
    const int32_t ids[] = {-3, 3};
    assert_region_ids(m, ids, 2);
    /* -3 at (0,0), 3 at (0,1): 12 cells each; bbox whole grid 24; read 24 */
    exp_stats sa = {-3, 12, 0, 6, 0, 0, 4, 6, 0, 0, 4, 6, 24, 24, 24, 1.0};
    exp_stats sb = {3, 12, 0, 6, 0, 0, 4, 6, 0, 0, 4, 6, 24, 24, 24, 1.0};
    const size_t all[] = {0, 1, 2, 3, 4, 5};
    assert_region(m, 0, &sa, all, 6);
    assert_region(m, 1, &sb, all, 6);

    /* With 1 x 1 tiles nothing merges: 24 pure chunks, 12 per region, read
     * = cells = 12, bbox 24 -> rate 2. */
    raster_mesh_free(m);
    assert_int_equal(raster_mesh_build(mask, 4, 6, 1, 1, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 24);
    exp_stats s1 = {3, 12, 12, 0, 0, 0, 4, 6, 0, 0, 4, 6, 24, 24, 12, 2.0};
    const size_t odd[] = {1, 3, 5, 6, 8, 10, 13, 15, 17, 18, 20, 22};
    assert_region(m, 1, &s1, odd, 12);
    raster_mesh_free(m);
}

/*
 * Negative ids, a region only in a mixed tile, and a tile box larger than
 * the bbox. 4 x 4, tiles 2 x 2:
 *     -7 -7  0  0
 *     -7 -7  0  0
 *     -1 -1 -7  5
 *     -1 -1 -7  5
 *   c0 pure -7 (0,0) 2x2 | c1 pure 0 (0,2) 2x2
 *   c2 pure -1 (2,0) 2x2 | c3 mixed (2,2): -7 x2 in col 2, 5 x2 in col 3
 */
static void test_negative_ids(void **state)
{
    (void)state;
    const int32_t mask[16] = {-7, -7, 0, 0,  -7, -7, 0, 0,
                              -1, -1, -7, 5, -1, -1, -7, 5};
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 4, 4, 2, 2, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 4);
    assert_chunk(m, 0, 0, 0, 2, 2, 0, 1);
    assert_chunk(m, 1, 0, 2, 2, 2, 0, 1);
    assert_chunk(m, 2, 2, 0, 2, 2, 0, 1);
    assert_chunk(m, 3, 2, 2, 2, 2, 1, 2);
    assert_share(m, 3, 0, -7, 2, 2, 2, 4, 3);
    assert_share(m, 3, 1, 5, 2, 2, 3, 4, 4);

    const int32_t ids[] = {-7, -1, 0, 5};
    assert_region_ids(m, ids, 4);
    /* -7: 6 cells; pure c0, mixed c3; bbox [0,4) x [0,3) = 12; tile box
     * [0,4) x [0,4) = 16; read 4 + 4 = 8; rate 2. */
    exp_stats s_7 = {-7, 6, 1, 1, 0, 0, 4, 3, 0, 0, 4, 4, 12, 16, 8, 2.0};
    const size_t l_7[] = {0, 3};
    assert_region(m, 0, &s_7, l_7, 2);
    /* -1: c2 only, [2,4) x [0,2), everything 4. */
    exp_stats s_1 = {-1, 4, 1, 0, 2, 0, 4, 2, 2, 0, 4, 2, 4, 4, 4, 1.0};
    const size_t l_1[] = {2};
    assert_region(m, 1, &s_1, l_1, 1);
    /* 0: c1 only, [0,2) x [2,4). */
    exp_stats s0 = {0, 4, 1, 0, 0, 2, 2, 4, 0, 2, 2, 4, 4, 4, 4, 1.0};
    const size_t l0[] = {1};
    assert_region(m, 2, &s0, l0, 1);
    /* 5: only in the mixed c3: 2 cells, bbox [2,4) x [3,4) = 2, tile box
     * [2,4) x [2,4) = 4, read 4. */
    exp_stats s5 = {5, 2, 0, 1, 2, 3, 4, 4, 2, 2, 4, 4, 2, 4, 4, 1.0};
    const size_t l5[] = {3};
    assert_region(m, 3, &s5, l5, 1);
    raster_mesh_free(m);
}

/* The int32 extremes sort correctly (no subtraction overflow). */
static void test_extreme_ids(void **state)
{
    (void)state;
    const int32_t mask[6] = {INT32_MAX, INT32_MIN, 0,
                             -1, INT32_MAX, INT32_MIN};
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 2, 3, 1, 1, &m), RASTER_OK);
    const int32_t ids[] = {INT32_MIN, -1, 0, INT32_MAX};
    assert_region_ids(m, ids, 4);
    /* INT32_MIN at (0,1) and (1,2): chunks 1 and 5, bbox [0,2) x [1,3) */
    exp_stats smin = {INT32_MIN, 2, 2, 0, 0, 1, 2, 3, 0, 1, 2, 3,
                      4, 4, 2, 2.0};
    const size_t lmin[] = {1, 5};
    assert_region(m, 0, &smin, lmin, 2);
    exp_stats smax = {INT32_MAX, 2, 2, 0, 0, 0, 2, 2, 0, 0, 2, 2,
                      4, 4, 2, 2.0};
    const size_t lmax[] = {0, 4};
    assert_region(m, 3, &smax, lmax, 2);
    raster_mesh_free(m);

    /* The same ids in one mixed tile: shares ascending. */
    assert_int_equal(raster_mesh_build(mask, 2, 3, 2, 3, &m), RASTER_OK);
    assert_chunk(m, 0, 0, 0, 2, 3, 1, 4);
    assert_share(m, 0, 0, INT32_MIN, 2, 0, 1, 2, 3);
    assert_share(m, 0, 1, -1, 1, 1, 0, 2, 1);
    assert_share(m, 0, 2, 0, 1, 0, 2, 1, 3);
    assert_share(m, 0, 3, INT32_MAX, 2, 0, 0, 2, 2);
    raster_mesh_free(m);
}

/*
 * A region whose bbox is not tile-aligned, in a grid that is not a multiple
 * of the tile. 6 x 9, tiles 2 x 3. Region 4 is an L: (1,2),(2,2),(3,2),(4,2)
 * and (4,3)..(4,7); everything else 0.
 *   tile-row 0: c0 mixed (0,0) | c1 pure 0 (0,3) 2x6
 *   tile-row 1: c2 mixed (2,0) | c3 pure 0 (2,3) 2x6
 *   tile-row 2: c4 mixed (4,0) | c5 mixed (4,3) | c6 mixed (4,6)
 */
static void test_l_shape(void **state)
{
    (void)state;
    int32_t mask[6 * 9] = {0};
    for (size_t y = 1; y <= 4; y++)
        mask[y * 9 + 2] = 4;
    for (size_t x = 3; x <= 7; x++)
        mask[4 * 9 + x] = 4;
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 6, 9, 2, 3, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 7);
    assert_chunk(m, 0, 0, 0, 2, 3, 1, 2);
    assert_chunk(m, 1, 0, 3, 2, 6, 0, 1);
    assert_chunk(m, 2, 2, 0, 2, 3, 1, 2);
    assert_chunk(m, 3, 2, 3, 2, 6, 0, 1);
    assert_chunk(m, 4, 4, 0, 2, 3, 1, 2);
    assert_chunk(m, 5, 4, 3, 2, 3, 1, 2);
    assert_chunk(m, 6, 4, 6, 2, 3, 1, 2);
    /* c0: 0 x5 [0,2) x [0,3), 4 at (1,2) */
    assert_share(m, 0, 0, 0, 5, 0, 0, 2, 3);
    assert_share(m, 0, 1, 4, 1, 1, 2, 2, 3);
    /* c2: 0 x4 [2,4) x [0,2), 4 x2 [2,4) x [2,3) */
    assert_share(m, 2, 0, 0, 4, 2, 0, 4, 2);
    assert_share(m, 2, 1, 4, 2, 2, 2, 4, 3);
    /* c4: 0 at (4,0),(4,1),(5,0..2) -> 5 cells [4,6) x [0,3); 4 at (4,2) */
    assert_share(m, 4, 0, 0, 5, 4, 0, 6, 3);
    assert_share(m, 4, 1, 4, 1, 4, 2, 5, 3);
    /* c5: 0 on row 5, 4 on row 4 */
    assert_share(m, 5, 0, 0, 3, 5, 3, 6, 6);
    assert_share(m, 5, 1, 4, 3, 4, 3, 5, 6);
    /* c6: 0 at (4,8),(5,6..8) -> [4,6) x [6,9); 4 at (4,6),(4,7) */
    assert_share(m, 6, 0, 0, 4, 4, 6, 6, 9);
    assert_share(m, 6, 1, 4, 2, 4, 6, 5, 8);

    const int32_t ids[] = {0, 4};
    assert_region_ids(m, ids, 2);
    /* 0: 54 - 9 = 45 cells; pure c1, c3; mixed c0, c2, c4, c5, c6; bbox and
     * tile box the whole grid 54; read 6 + 12 + 6 + 12 + 6 + 6 + 6 = 54. */
    exp_stats s0 = {0, 45, 2, 5, 0, 0, 6, 9, 0, 0, 6, 9, 54, 54, 54, 1.0};
    const size_t l0[] = {0, 1, 2, 3, 4, 5, 6};
    assert_region(m, 0, &s0, l0, 7);
    /* 4: 9 cells; bbox [1,5) x [2,8) = 24 (not aligned); tile box
     * [0,6) x [0,9) = 54; reads 5 mixed tiles = 30; rate 54 / 30 = 1.8. */
    exp_stats s4 = {4, 9, 0, 5, 1, 2, 5, 8, 0, 0, 6, 9, 24, 54, 30, 1.8};
    const size_t l4[] = {0, 2, 4, 5, 6};
    assert_region(m, 1, &s4, l4, 5);
    raster_mesh_free(m);
}

/*
 * A tile box clipped by the grid edge. 7 x 10, tiles 3 x 4 (tile-rows 3, 3,
 * 1 high; tile columns 4, 4, 2 wide). Region 3 at (5,9), (6,8), (6,9);
 * everything else 1.
 *   c0 pure 1 (0,0) 3x10
 *   c1 pure 1 (3,0) 3x8 | c2 mixed (3,8) 3x2
 *   c3 pure 1 (6,0) 1x8 | c4 pure 3 (6,8) 1x2
 */
static void test_clipped_tile_box(void **state)
{
    (void)state;
    int32_t mask[7 * 10];
    for (size_t i = 0; i < 70; i++)
        mask[i] = 1;
    mask[5 * 10 + 9] = 3;
    mask[6 * 10 + 8] = 3;
    mask[6 * 10 + 9] = 3;
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 7, 10, 3, 4, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 5);
    assert_chunk(m, 0, 0, 0, 3, 10, 0, 1);
    assert_chunk(m, 1, 3, 0, 3, 8, 0, 1);
    assert_chunk(m, 2, 3, 8, 3, 2, 1, 2);
    assert_chunk(m, 3, 6, 0, 1, 8, 0, 1);
    assert_chunk(m, 4, 6, 8, 1, 2, 0, 1);
    assert_share(m, 2, 0, 1, 5, 3, 8, 6, 10);
    assert_share(m, 2, 1, 3, 1, 5, 9, 6, 10);

    const int32_t ids[] = {1, 3};
    assert_region_ids(m, ids, 2);
    /* 1: 67 cells; pure c0, c1, c3, mixed c2; bbox = tile box = grid 70;
     * read 30 + 24 + 6 + 8 = 68; rate 70 / 68. */
    exp_stats s1 = {1, 67, 3, 1, 0, 0, 7, 10, 0, 0, 7, 10, 70, 70, 68,
                    70.0 / 68.0};
    const size_t l1[] = {0, 1, 2, 3};
    assert_region(m, 0, &s1, l1, 4);
    /* 3: 3 cells; pure c4, mixed c2; bbox [5,7) x [8,10) = 4; tile box
     * [3,7) x [8,10) = 8 (clipped from [3,9) x [8,12)); read 6 + 2 = 8. */
    exp_stats s3 = {3, 3, 1, 1, 5, 8, 7, 10, 3, 8, 7, 10, 4, 8, 8, 1.0};
    const size_t l3[] = {2, 4};
    assert_region(m, 1, &s3, l3, 2);
    raster_mesh_free(m);
}

/* A region of a few scattered cells in a large uniform sea: the data
 * reduction rate of the paper's Eq. 1 well above 1. 16 x 16, tiles 4 x 4,
 * background 2; region 6 at (1,1) and (14,14). */
static void test_reduction_rate(void **state)
{
    (void)state;
    int32_t mask[256];
    for (size_t i = 0; i < 256; i++)
        mask[i] = 2;
    mask[1 * 16 + 1] = 6;
    mask[14 * 16 + 14] = 6;
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 16, 16, 4, 4, &m), RASTER_OK);
    /* tile-row 0: mixed (0,0), pure (0,4) 4x12; rows 1, 2: one chunk each;
     * row 3: pure (12,0) 4x12, mixed (12,12). */
    assert_int_equal(raster_mesh_nchunks(m), 6);
    assert_chunk(m, 0, 0, 0, 4, 4, 1, 2);
    assert_chunk(m, 1, 0, 4, 4, 12, 0, 1);
    assert_chunk(m, 2, 4, 0, 4, 16, 0, 1);
    assert_chunk(m, 3, 8, 0, 4, 16, 0, 1);
    assert_chunk(m, 4, 12, 0, 4, 12, 0, 1);
    assert_chunk(m, 5, 12, 12, 4, 4, 1, 2);
    /* 6: 2 cells; bbox [1,15) x [1,15) = 196; tile box the grid 256; reads
     * two tiles = 32; rate 256 / 32 = 8. */
    exp_stats s6 = {6, 2, 0, 2, 1, 1, 15, 15, 0, 0, 16, 16, 196, 256, 32,
                    8.0};
    const size_t l6[] = {0, 5};
    assert_region(m, 1, &s6, l6, 2);
    /* 2: 254 cells, 4 pure, 2 mixed, reads everything: rate 1. */
    exp_stats s2 = {2, 254, 4, 2, 0, 0, 16, 16, 0, 0, 16, 16, 256, 256, 256,
                    1.0};
    const size_t l2[] = {0, 1, 2, 3, 4, 5};
    assert_region(m, 0, &s2, l2, 6);
    raster_mesh_free(m);
}

/* Lookups of absent ids; regions in ascending order whatever the order in
 * which the mask first shows them. */
static void test_order_and_lookup(void **state)
{
    (void)state;
    /* ids appear in the order 9, -2, 4, 0, 7, -11 (1 x 1 tiles) */
    const int32_t mask[12] = {9, -2, 4, 0, 7, -11, 9, 9, -2, 4, 0, 7};
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, 2, 6, 1, 1, &m), RASTER_OK);
    const int32_t ids[] = {-11, -2, 0, 4, 7, 9};
    assert_region_ids(m, ids, 6);
    /* 9 at (0,0), (1,0), (1,1): chunks 0 and 6 (row 1 starts 9 9 merged) */
    exp_stats s9 = {9, 3, 2, 0, 0, 0, 2, 2, 0, 0, 2, 2, 4, 4, 3, 4.0 / 3.0};
    const size_t l9[] = {0, 6};
    assert_region(m, 5, &s9, l9, 2);

    raster_region_stats st;
    const size_t *list;
    size_t n;
    const int32_t absent[] = {1, -1, 5, 8, 10, -12, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
        raster_errmsg_clear();
        assert_int_equal(raster_mesh_region_stats(m, absent[i], &st),
                         RASTER_ENOTFOUND);
        assert_true(strlen(raster_errmsg()) > 0);
        assert_int_equal(raster_mesh_region_chunks(m, absent[i], &list, &n),
                         RASTER_ENOTFOUND);
    }
    raster_mesh_free(m);
}

/* Several regions with many chunks each: the pool of chunk lists is shared,
 * so lists must not run into each other. 5 rows of stripes, 1 x 2 tiles. */
static void test_lists_do_not_overlap(void **state)
{
    (void)state;
    enum { NY = 5, NX = 12 };
    int32_t mask[NY * NX];
    /* columns in pairs: ids 0 1 2 0 1 2 -> every tile pure, no merging */
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            mask[y * NX + x] = (int32_t)((x / 2) % 3);
    raster_mesh *m;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 1, 2, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), NY * 6);
    for (int32_t id = 0; id < 3; id++) {
        const size_t *list;
        size_t n;
        assert_int_equal(raster_mesh_region_chunks(m, id, &list, &n),
                         RASTER_OK);
        assert_int_equal(n, 2 * NY);
        for (size_t k = 0; k < n; k++) {
            /* row k/2, tile column id or id + 3 */
            size_t expect = k / 2 * 6 + (size_t)id + (k % 2) * 3;
            assert_int_equal(list[k], expect);
        }
        raster_region_stats st;
        assert_int_equal(raster_mesh_region_stats(m, id, &st), RASTER_OK);
        assert_int_equal(st.cells, 4 * NY);
        assert_int_equal(st.pure_chunks, 2 * NY);
        assert_int_equal(st.read_cells, 4 * NY);
        /* bbox columns [2id, 2id + 8) -> 8 * 5 = 40; rate 40 / 20 = 2 */
        assert_int_equal(st.bbox_x0, 2 * (size_t)id);
        assert_int_equal(st.bbox_x1, 2 * (size_t)id + 8);
        assert_int_equal(st.bbox_tile_cells, 40);
        assert_true(st.data_reduction_rate == 2.0);
    }
    raster_mesh_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diagonal),
        cmocka_unit_test(test_checkerboard),
        cmocka_unit_test(test_negative_ids),
        cmocka_unit_test(test_extreme_ids),
        cmocka_unit_test(test_l_shape),
        cmocka_unit_test(test_clipped_tile_box),
        cmocka_unit_test(test_reduction_rate),
        cmocka_unit_test(test_order_and_lookup),
        cmocka_unit_test(test_lists_do_not_overlap),
    };
    return cmocka_run_group_tests_name("index", tests, NULL, NULL);
}
