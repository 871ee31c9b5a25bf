/*
 * test_mesh.c - unit tests of the Region Mesh Builder (src/plan/mesh.c) and of
 * the statistics the Chunk Index Manager derives from its chunks.
 *
 *  - the paper's Table 1 (DESIGN.md worked example), exactly, on a 4 x 80
 *    band and on an 80 x 80 grid whose rows 76..79 hold the band;
 *  - edge tiles smaller than the tile;
 *  - property tests on thousands of seeded random masks, each checked
 *    against a brute-force recomputation from the mask;
 *  - many ids per tile (the sorting path of mesh.c) and single-region masks;
 *  - bad input, and allocation failure at every allocation of a build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "raster.h"

#include "testutil.h"

/* ------------------------------------------------------------------------ */
/* Checking helpers: they print the case being checked (a seed, a shape) so
 * that a failing property test can be reproduced. */

static char ctx[256] = "";

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c))                                                             \
            fail_msg("[%s] check failed: %s (line %d)", ctx, #c, __LINE__);  \
    } while (0)

#define CHECK_EQ(a, b)                                                        \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_)                                                         \
            fail_msg("[%s] %s = %lld, expected %s = %lld (line %d)", ctx,     \
                     #a, a_, #b, b_, __LINE__);                               \
    } while (0)

/* What the checked meshes contained, so the property tests can show they
 * exercised merging, mixed tiles, the sorting path and edge tiles. */
static struct {
    size_t merged;      /* pure chunks wider than one tile */
    size_t mixed;       /* mixed chunks */
    size_t many_shares; /* mixed chunks with more than 16 ids */
    size_t edge_pure;   /* pure chunks ending in a narrow edge tile */
    size_t short_rows;  /* chunks of a short last tile-row */
} seen;

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* One cell of the mask, for recounting a chunk or a grid by sorting. */
typedef struct cell {
    int32_t id;
    size_t y, x;
} cell;

static int cmp_cell_id(const void *a, const void *b)
{
    const cell *p = a, *q = b;
    return (p->id > q->id) - (p->id < q->id);
}

/* (region index, chunk id) pairs: the expected index table. */
typedef struct pair {
    size_t region, chunk;
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *p = a, *q = b;
    if (p->region != q->region)
        return (p->region > q->region) - (p->region < q->region);
    return (p->chunk > q->chunk) - (p->chunk < q->chunk);
}

/* Brute-force per-region truth computed from the mask alone. */
typedef struct truth {
    int32_t id;
    size_t cells;
    size_t y0, x0, y1, x1;
    size_t pure, mixed, read;
} truth;

static size_t find_region(const int32_t *ids, size_t n, int32_t id)
{
    const int32_t *p = bsearch(&id, ids, n, sizeof *ids, cmp_i32);
    CHECK(p != NULL);
    return (size_t)(p - ids);
}

/*
 * Checks every documented property of `m` against `mask`:
 * shape; chunks in row-major order with ids 0..n-1, inside the grid,
 * aligned to tiles, heights = tile height except the last tile-row, covering
 * every cell exactly once; a pure chunk has one share whose id is every cell
 * in it and a width that is a multiple of the tile width unless it ends at
 * the grid edge; a mixed chunk is exactly one tile with >= 2 shares; shares
 * ascend by id and their counts and bounding boxes match a recount; no two
 * horizontally adjacent pure chunks share an id; per-region statistics and
 * chunk lists match a brute-force recomputation and add up.
 */
static void verify_mesh(const int32_t *mask, size_t ny, size_t nx, size_t th,
                        size_t tw, const raster_mesh *m)
{
    size_t gny = 0, gnx = 0, gth = 0, gtw = 0;
    raster_mesh_shape(m, &gny, &gnx, &gth, &gtw);
    CHECK_EQ(gny, ny);
    CHECK_EQ(gnx, nx);
    CHECK_EQ(gth, th);
    CHECK_EQ(gtw, tw);
    raster_mesh_shape(m, NULL, NULL, NULL, NULL); /* any pointer may be NULL */

    size_t ncells = ny * nx;
    /* Distinct ids, ascending. */
    int32_t *ids = malloc(ncells * sizeof *ids);
    CHECK(ids != NULL);
    size_t nids = mask_ids(mask, ncells, ids);

    truth *tr = calloc(nids, sizeof *tr);
    CHECK(tr != NULL);
    for (size_t r = 0; r < nids; r++) {
        tr[r].id = ids[r];
        tr[r].y0 = tr[r].x0 = SIZE_MAX;
    }
    for (size_t y = 0; y < ny; y++) {
        for (size_t x = 0; x < nx; x++) {
            truth *t = &tr[find_region(ids, nids, mask[y * nx + x])];
            t->cells++;
            if (y < t->y0) t->y0 = y;
            if (x < t->x0) t->x0 = x;
            if (y + 1 > t->y1) t->y1 = y + 1;
            if (x + 1 > t->x1) t->x1 = x + 1;
        }
    }

    unsigned char *cover = calloc(ncells, 1);
    cell *cells = malloc(ncells * sizeof *cells);
    raster_share *rec = malloc(ncells * sizeof *rec);
    size_t npairs = 0, pairs_cap = 64;
    pair *pairs = malloc(pairs_cap * sizeof *pairs);
    CHECK(cover && cells && rec && pairs);

    size_t nch = raster_mesh_nchunks(m);
    CHECK(nch >= 1);
    size_t area = 0, nmixed = 0;
    raster_chunk prev = {0};
    for (size_t i = 0; i < nch; i++) {
        raster_chunk c;
        memset(&c, 0xA5, sizeof c);
        CHECK_EQ(raster_mesh_chunk(m, i, &c), RASTER_OK);
        CHECK_EQ(c.id, i);
        CHECK(c.h >= 1 && c.w >= 1);
        CHECK(c.y0 < ny && c.x0 < nx);
        CHECK(c.h <= ny - c.y0 && c.w <= nx - c.x0);
        CHECK_EQ(c.y0 % th, 0);
        CHECK_EQ(c.x0 % tw, 0);
        CHECK_EQ(c.h, min_sz(th, ny - c.y0));
        CHECK(c.mixed == 0 || c.mixed == 1);
        CHECK(c.shares != NULL);

        /* Row-major order: each chunk starts where the previous ended, or
         * at column 0 of the next tile-row. */
        if (i == 0) {
            CHECK_EQ(c.y0, 0);
            CHECK_EQ(c.x0, 0);
        } else if (c.y0 == prev.y0) {
            CHECK_EQ(c.x0, prev.x0 + prev.w);
        } else {
            CHECK_EQ(prev.x0 + prev.w, nx);
            CHECK_EQ(c.y0, prev.y0 + prev.h);
            CHECK_EQ(c.x0, 0);
        }
        if (i == nch - 1) {
            CHECK_EQ(c.y0 + c.h, ny);
            CHECK_EQ(c.x0 + c.w, nx);
        }

        /* Coverage and recount of the chunk's cells. */
        size_t n = 0;
        for (size_t y = c.y0; y < c.y0 + c.h; y++) {
            for (size_t x = c.x0; x < c.x0 + c.w; x++) {
                CHECK_EQ(cover[y * nx + x], 0);
                cover[y * nx + x] = 1;
                cells[n++] = (cell){mask[y * nx + x], y, x};
            }
        }
        area += n;
        qsort(cells, n, sizeof *cells, cmp_cell_id);
        size_t nrec = 0;
        for (size_t k = 0; k < n; k++) {
            if (nrec == 0 || rec[nrec - 1].id != cells[k].id)
                rec[nrec++] = (raster_share){cells[k].id, 0, SIZE_MAX,
                                             SIZE_MAX, 0, 0};
            raster_share *s = &rec[nrec - 1];
            s->cells++;
            if (cells[k].y < s->y0) s->y0 = cells[k].y;
            if (cells[k].x < s->x0) s->x0 = cells[k].x;
            if (cells[k].y + 1 > s->y1) s->y1 = cells[k].y + 1;
            if (cells[k].x + 1 > s->x1) s->x1 = cells[k].x + 1;
        }
        CHECK_EQ(c.nshares, nrec);
        for (size_t k = 0; k < nrec; k++) {
            const raster_share *s = &c.shares[k];
            if (k > 0)
                CHECK(c.shares[k - 1].id < s->id);
            CHECK_EQ(s->id, rec[k].id);
            CHECK_EQ(s->cells, rec[k].cells);
            CHECK_EQ(s->y0, rec[k].y0);
            CHECK_EQ(s->x0, rec[k].x0);
            CHECK_EQ(s->y1, rec[k].y1);
            CHECK_EQ(s->x1, rec[k].x1);
        }

        if (c.h < th)
            seen.short_rows++;
        if (c.mixed) {
            nmixed++;
            seen.mixed++;
            if (c.nshares > 16)
                seen.many_shares++;
            CHECK(c.nshares >= 2);
            CHECK_EQ(c.w, min_sz(tw, nx - c.x0)); /* exactly one tile */
        } else {
            CHECK_EQ(c.nshares, 1);
            CHECK_EQ(c.shares[0].cells, c.h * c.w);
            CHECK(c.w % tw == 0 || c.x0 + c.w == nx);
            if (c.w > tw)
                seen.merged++;
            if (c.w % tw != 0)
                seen.edge_pure++;
            if (i > 0 && prev.y0 == c.y0 && !prev.mixed)
                CHECK(prev.shares[0].id != c.shares[0].id);
        }

        for (size_t k = 0; k < nrec; k++) {
            if (npairs == pairs_cap) {
                pairs_cap *= 2;
                pairs = realloc(pairs, pairs_cap * sizeof *pairs);
                CHECK(pairs != NULL);
            }
            size_t r = find_region(ids, nids, rec[k].id);
            pairs[npairs++] = (pair){r, i};
            if (c.mixed)
                tr[r].mixed++;
            else
                tr[r].pure++;
            tr[r].read += c.h * c.w;
        }
        prev = c;
    }
    CHECK_EQ(area, ncells);
    for (size_t k = 0; k < ncells; k++)
        CHECK_EQ(cover[k], 1);

    raster_chunk dummy;
    CHECK_EQ(raster_mesh_chunk(m, nch, &dummy), RASTER_EINVAL);

    /* Regions: ascending, statistics and chunk lists exact. */
    qsort(pairs, npairs, sizeof *pairs, cmp_pair);
    CHECK_EQ(raster_mesh_nregions(m), nids);
    size_t sum_cells = 0, sum_pure = 0, pos = 0;
    for (size_t r = 0; r < nids; r++) {
        raster_region_stats st, st2;
        CHECK_EQ(raster_mesh_region(m, r, &st), RASTER_OK);
        CHECK_EQ(raster_mesh_region_stats(m, tr[r].id, &st2), RASTER_OK);
        const truth *t = &tr[r];
        CHECK_EQ(st.id, t->id);
        CHECK_EQ(st2.id, t->id);
        CHECK_EQ(st.cells, t->cells);
        CHECK_EQ(st.pure_chunks, t->pure);
        CHECK_EQ(st.mixed_chunks, t->mixed);
        CHECK_EQ(st.bbox_y0, t->y0);
        CHECK_EQ(st.bbox_x0, t->x0);
        CHECK_EQ(st.bbox_y1, t->y1);
        CHECK_EQ(st.bbox_x1, t->x1);
        CHECK_EQ(st.bbox_cells, (t->y1 - t->y0) * (t->x1 - t->x0));
        /* tile-aligned box: outward to tile boundaries, clipped to the grid */
        size_t ty0 = t->y0 / th * th, tx0 = t->x0 / tw * tw;
        size_t ty1 = min_sz((t->y1 + th - 1) / th * th, ny);
        size_t tx1 = min_sz((t->x1 + tw - 1) / tw * tw, nx);
        CHECK_EQ(st.tbox_y0, ty0);
        CHECK_EQ(st.tbox_x0, tx0);
        CHECK_EQ(st.tbox_y1, ty1);
        CHECK_EQ(st.tbox_x1, tx1);
        CHECK(st.tbox_y0 <= st.bbox_y0 && st.tbox_x0 <= st.bbox_x0);
        CHECK(st.tbox_y1 >= st.bbox_y1 && st.tbox_x1 >= st.bbox_x1);
        CHECK_EQ(st.bbox_tile_cells, (ty1 - ty0) * (tx1 - tx0));
        CHECK_EQ(st.read_cells, t->read);
        CHECK(st.bbox_tile_cells >= st.read_cells);
        CHECK(st.bbox_cells <= st.bbox_tile_cells);
        CHECK(st.cells <= st.bbox_cells);
        CHECK(st.cells <= st.read_cells);
        CHECK(st.data_reduction_rate >= 1.0);
        CHECK(fabs(st.data_reduction_rate -
                   (double)st.bbox_tile_cells / (double)st.read_cells) <
              1e-12);
        /* both lookups give the same statistics */
        CHECK_EQ(st2.cells, st.cells);
        CHECK_EQ(st2.pure_chunks, st.pure_chunks);
        CHECK_EQ(st2.mixed_chunks, st.mixed_chunks);
        CHECK_EQ(st2.bbox_y0, st.bbox_y0);
        CHECK_EQ(st2.bbox_x1, st.bbox_x1);
        CHECK_EQ(st2.tbox_y1, st.tbox_y1);
        CHECK_EQ(st2.read_cells, st.read_cells);
        CHECK_EQ(st2.bbox_tile_cells, st.bbox_tile_cells);

        const size_t *list = NULL;
        size_t nlist = 0;
        CHECK_EQ(raster_mesh_region_chunks(m, t->id, &list, &nlist),
                 RASTER_OK);
        CHECK_EQ(nlist, st.pure_chunks + st.mixed_chunks);
        CHECK(list != NULL);
        for (size_t k = 0; k < nlist; k++) {
            CHECK(pos < npairs);
            CHECK_EQ(pairs[pos].region, r);
            CHECK_EQ(list[k], pairs[pos].chunk);
            pos++;
        }
        sum_cells += st.cells;
        sum_pure += st.pure_chunks;
    }
    CHECK_EQ(pos, npairs);
    CHECK_EQ(sum_cells, ncells);
    CHECK_EQ(sum_pure, nch - nmixed);

    raster_region_stats st;
    CHECK_EQ(raster_mesh_region(m, nids, &st), RASTER_EINVAL);
    /* an id absent from the mask: above the largest, below the smallest,
     * or in a gap */
    int32_t absent = 0;
    int have_absent = 0;
    if (ids[nids - 1] < INT32_MAX) {
        absent = ids[nids - 1] + 1;
        have_absent = 1;
    } else if (ids[0] > INT32_MIN) {
        absent = ids[0] - 1;
        have_absent = 1;
    } else {
        for (size_t k = 1; k < nids && !have_absent; k++) {
            if ((int64_t)ids[k] - ids[k - 1] > 1) {
                absent = ids[k - 1] + 1;
                have_absent = 1;
            }
        }
    }
    if (have_absent) {
        const size_t *list;
        size_t nlist;
        CHECK(bsearch(&absent, ids, nids, sizeof *ids, cmp_i32) == NULL);
        CHECK_EQ(raster_mesh_region_stats(m, absent, &st), RASTER_ENOTFOUND);
        CHECK_EQ(raster_mesh_region_chunks(m, absent, &list, &nlist),
                 RASTER_ENOTFOUND);
    }

    free(pairs);
    free(rec);
    free(cells);
    free(cover);
    free(tr);
    free(ids);
}

/* ------------------------------------------------------------------------ */
/* The paper's Table 1. */

#define OCEAN 2 /* POP Pacific */
#define LAND 0

/*
 * Writes the Table 1 band into rows [y, y+4) of an nx = 80 mask:
 *   cols  0-27  Ocean           cols 32-51  Land
 *   cols 28-31  mixed tile A    cols 52-55  mixed tile B
 *   cols 56-63  Ocean           cols 64-67  mixed tile C
 *   cols 68-79  Ocean
 * Tile A: cols 28,29 Ocean, cols 30,31 Land (8 + 8 cells).
 * Tile B: Land but Ocean at (y+1,54), (y+1,55), (y+2,55): 13 Land, 3 Ocean.
 * Tile C: Ocean but Land at (y+3,64), (y+3,65): 14 Ocean, 2 Land.
 */
static void fill_band(int32_t *mask, size_t y)
{
    const size_t nx = 80;
    for (size_t dy = 0; dy < 4; dy++) {
        int32_t *row = mask + (y + dy) * nx;
        for (size_t x = 0; x < nx; x++) {
            int32_t id;
            if (x < 28) id = OCEAN;
            else if (x < 30) id = OCEAN;   /* tile A, Ocean half */
            else if (x < 32) id = LAND;    /* tile A, Land half */
            else if (x < 52) id = LAND;
            else if (x < 56) id = LAND;    /* tile B, mostly Land */
            else if (x < 64) id = OCEAN;
            else if (x < 68) id = OCEAN;   /* tile C, mostly Ocean */
            else id = OCEAN;
            row[x] = id;
        }
    }
    mask[(y + 1) * nx + 54] = OCEAN;
    mask[(y + 1) * nx + 55] = OCEAN;
    mask[(y + 2) * nx + 55] = OCEAN;
    mask[(y + 3) * nx + 64] = LAND;
    mask[(y + 3) * nx + 65] = LAND;
}

typedef struct exp_chunk {
    size_t y0, x0, h, w;
    int mixed;
    size_t nshares;
    raster_share sh[2];
} exp_chunk;

/* The 7 chunks of the band at row y, paper numbers 1..7 = our ids
 * first..first+6. Shares ascend by id: Land (0) before Ocean (2). */
static void band_chunks(size_t y, exp_chunk out[7])
{
    /* paper 1: (76,0) 4x28 Ocean pure; 4 * 28 = 112 cells */
    out[0] = (exp_chunk){y, 0, 4, 28, 0, 1,
                         {{OCEAN, 112, y, 0, y + 4, 28}}};
    /* paper 2: (76,28) 4x4 mixed; Land cols 30-31, Ocean cols 28-29 */
    out[1] = (exp_chunk){y, 28, 4, 4, 1, 2,
                         {{LAND, 8, y, 30, y + 4, 32},
                          {OCEAN, 8, y, 28, y + 4, 30}}};
    /* paper 3: (76,32) 4x20 Land pure; 80 cells */
    out[2] = (exp_chunk){y, 32, 4, 20, 0, 1,
                         {{LAND, 80, y, 32, y + 4, 52}}};
    /* paper 4: (76,52) 4x4 mixed; Ocean (y+1,54),(y+1,55),(y+2,55) */
    out[3] = (exp_chunk){y, 52, 4, 4, 1, 2,
                         {{LAND, 13, y, 52, y + 4, 56},
                          {OCEAN, 3, y + 1, 54, y + 3, 56}}};
    /* paper 5: (76,56) 4x8 Ocean pure; 32 cells */
    out[4] = (exp_chunk){y, 56, 4, 8, 0, 1,
                         {{OCEAN, 32, y, 56, y + 4, 64}}};
    /* paper 6: (76,64) 4x4 mixed; Land (y+3,64),(y+3,65) */
    out[5] = (exp_chunk){y, 64, 4, 4, 1, 2,
                         {{LAND, 2, y + 3, 64, y + 4, 66},
                          {OCEAN, 14, y, 64, y + 4, 68}}};
    /* paper 7: (76,68) 4x12 Ocean pure; 48 cells */
    out[6] = (exp_chunk){y, 68, 4, 12, 0, 1,
                         {{OCEAN, 48, y, 68, y + 4, 80}}};
}

/* Chunk `id` of m is e, shares and all. */
static void assert_chunk_is(const raster_mesh *m, size_t id,
                            const exp_chunk *e)
{
    assert_chunk(m, id, e->y0, e->x0, e->h, e->w, e->mixed, e->nshares);
    for (size_t k = 0; k < e->nshares; k++)
        assert_share(m, id, k, e->sh[k].id, e->sh[k].cells, e->sh[k].y0,
                     e->sh[k].x0, e->sh[k].y1, e->sh[k].x1);
}

static void assert_region(const raster_mesh *m, size_t index,
                          const exp_stats *e)
{
    raster_region_stats st;
    assert_int_equal(raster_mesh_region(m, index, &st), RASTER_OK);
    assert_stats(&st, e);
    memset(&st, 0, sizeof st);
    assert_int_equal(raster_mesh_region_stats(m, e->id, &st), RASTER_OK);
    assert_stats(&st, e);
}

/* Table 1 on its own: a 4 x 80 grid, tiles 4 x 4, chunk ids 0..6. */
static void test_table1_band(void **state)
{
    (void)state;
    int32_t mask[4 * 80];
    fill_band(mask, 0);
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, 4, 80, 4, 4, &m), RASTER_OK);
    assert_non_null(m);

    assert_int_equal(raster_mesh_nchunks(m), 7);
    exp_chunk e[7];
    band_chunks(0, e);
    for (size_t i = 0; i < 7; i++)
        assert_chunk_is(m, i, &e[i]);

    /* Index: Ocean -> paper 1,2,4,5,6,7; Land -> paper 2,3,4,6. */
    const size_t ocean[] = {0, 1, 3, 4, 5, 6};
    const size_t land[] = {1, 2, 3, 5};
    assert_region_chunks(m, OCEAN, ocean, 6);
    assert_region_chunks(m, LAND, land, 4);

    assert_int_equal(raster_mesh_nregions(m), 2);
    /* Land (index 0, id 0):
     *   cells 8 (A) + 80 + 13 (B) + 2 (C) = 103; pure 1 (paper 3); mixed 3.
     *   bbox rows 0..3, cols 30 (tile A) .. 65 (tile C) -> [0,4) x [30,66),
     *   4 * 36 = 144 cells; tile-aligned [0,4) x [28,68) = 4 * 40 = 160.
     *   read: 16 + 80 + 16 + 16 = 128; rate 160 / 128 = 1.25. */
    exp_stats land_st = {LAND, 103, 1, 3, 0, 30, 4, 66, 0, 28, 4, 68,
                         144, 160, 128, 1.25};
    /* Ocean (index 1, id 2):
     *   cells 112 + 8 (A) + 3 (B) + 32 + 14 (C) + 48 = 217; pure 3, mixed 3.
     *   bbox = tile box = the whole band [0,4) x [0,80): 320 cells.
     *   read: 112 + 16 + 16 + 32 + 16 + 48 = 240; rate 320 / 240 = 4/3. */
    exp_stats ocean_st = {OCEAN, 217, 3, 3, 0, 0, 4, 80, 0, 0, 4, 80,
                          320, 320, 240, 320.0 / 240.0};
    assert_region(m, 0, &land_st);
    assert_region(m, 1, &ocean_st);

    snprintf(ctx, sizeof ctx, "table 1 band");
    verify_mesh(mask, 4, 80, 4, 4, m);
    raster_mesh_free(m);
}

/* Table 1 inside an 80 x 80 grid: rows 0..75 all Land (19 tile-rows of one
 * 4 x 80 Land chunk each: ids 0..18), rows 76..79 the band (ids 19..25). */
static void test_table1_grid(void **state)
{
    (void)state;
    const size_t n = 80;
    int32_t *mask = malloc(n * n * sizeof *mask);
    assert_non_null(mask);
    for (size_t i = 0; i < 76 * n; i++)
        mask[i] = LAND;
    fill_band(mask, 76);

    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, n, n, 4, 4, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 19 + 7);
    for (size_t i = 0; i < 19; i++) {
        exp_chunk land_row = {4 * i, 0, 4, 80, 0, 1,
                              {{LAND, 320, 4 * i, 0, 4 * i + 4, 80}}};
        assert_chunk_is(m, i, &land_row);
    }
    exp_chunk e[7];
    band_chunks(76, e);
    for (size_t i = 0; i < 7; i++)
        assert_chunk_is(m, 19 + i, &e[i]); /* paper chunk k = our id 18 + k */

    /* Ocean -> paper 1,2,4,5,6,7 = 19,20,22,23,24,25;
     * Land -> rows 0..75 (0..18), then paper 2,3,4,6 = 20,21,22,24. */
    const size_t ocean[] = {19, 20, 22, 23, 24, 25};
    size_t land[19 + 4];
    for (size_t i = 0; i < 19; i++)
        land[i] = i;
    land[19] = 20;
    land[20] = 21;
    land[21] = 22;
    land[22] = 24;
    assert_region_chunks(m, OCEAN, ocean, 6);
    assert_region_chunks(m, LAND, land, 23);

    assert_int_equal(raster_mesh_nregions(m), 2);
    /* Land: cells 76 * 80 + 103 = 6183; pure 19 + 1 = 20, mixed 3.
     *   bbox = tile box = the whole grid: 6400 cells.
     *   read: 19 * 320 + 128 = 6208; rate 6400 / 6208. */
    exp_stats land_st = {LAND, 6183, 20, 3, 0, 0, 80, 80, 0, 0, 80, 80,
                         6400, 6400, 6208, 6400.0 / 6208.0};
    /* Ocean: as in the band, shifted to rows [76,80). */
    exp_stats ocean_st = {OCEAN, 217, 3, 3, 76, 0, 80, 80, 76, 0, 80, 80,
                          320, 320, 240, 320.0 / 240.0};
    assert_region(m, 0, &land_st);
    assert_region(m, 1, &ocean_st);

    snprintf(ctx, sizeof ctx, "table 1 grid");
    verify_mesh(mask, n, n, 4, 4, m);
    raster_mesh_free(m);
    free(mask);
}

/* ------------------------------------------------------------------------ */
/* Edge tiles smaller than the tile. */

/* 10 x 11 grid, tiles 4 x 3: tile-rows of heights 4, 4, 2; tile columns of
 * widths 3, 3, 3, 2. */
static void test_edge_tiles(void **state)
{
    (void)state;
    enum { NY = 10, NX = 11 };
    int32_t mask[NY * NX];
    raster_mesh *m;

    /* One id: one chunk per tile-row, full width 11 (3 + 3 + 3 + 2). */
    for (size_t i = 0; i < NY * NX; i++)
        mask[i] = 5;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 4, 3, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 3);
    exp_chunk one[3] = {
        {0, 0, 4, 11, 0, 1, {{5, 44, 0, 0, 4, 11}}},
        {4, 0, 4, 11, 0, 1, {{5, 44, 4, 0, 8, 11}}},
        {8, 0, 2, 11, 0, 1, {{5, 22, 8, 0, 10, 11}}},
    };
    for (size_t i = 0; i < 3; i++)
        assert_chunk_is(m, i, &one[i]);
    snprintf(ctx, sizeof ctx, "edge one id");
    verify_mesh(mask, NY, NX, 4, 3, m);
    raster_mesh_free(m);

    /* Columns 9-10 (the narrow edge tile column) id 7: per tile-row a
     * 9-wide chunk of 5 and a 2-wide chunk of 7. Region 7: 20 cells, bbox
     * [0,10) x [9,11); its tile box is clipped to the grid: x1 = 11, not 12,
     * y1 = 10, not 12. */
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 9; x < NX; x++)
            mask[y * NX + x] = 7;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 4, 3, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 6);
    exp_chunk two[6] = {
        {0, 0, 4, 9, 0, 1, {{5, 36, 0, 0, 4, 9}}},
        {0, 9, 4, 2, 0, 1, {{7, 8, 0, 9, 4, 11}}},
        {4, 0, 4, 9, 0, 1, {{5, 36, 4, 0, 8, 9}}},
        {4, 9, 4, 2, 0, 1, {{7, 8, 4, 9, 8, 11}}},
        {8, 0, 2, 9, 0, 1, {{5, 18, 8, 0, 10, 9}}},
        {8, 9, 2, 2, 0, 1, {{7, 4, 8, 9, 10, 11}}},
    };
    for (size_t i = 0; i < 6; i++)
        assert_chunk_is(m, i, &two[i]);
    exp_stats s7 = {7, 20, 3, 0, 0, 9, 10, 11, 0, 9, 10, 11, 20, 20, 20, 1.0};
    assert_region(m, 1, &s7);
    snprintf(ctx, sizeof ctx, "edge columns");
    verify_mesh(mask, NY, NX, 4, 3, m);
    raster_mesh_free(m);

    /* The bottom-right 2 x 2 edge tile mixed (one cell 9): last tile-row is
     * a 2 x 9 pure chunk then the 2 x 2 mixed tile. */
    for (size_t i = 0; i < NY * NX; i++)
        mask[i] = 5;
    mask[9 * NX + 10] = 9;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 4, 3, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 4);
    exp_chunk three[4] = {
        {0, 0, 4, 11, 0, 1, {{5, 44, 0, 0, 4, 11}}},
        {4, 0, 4, 11, 0, 1, {{5, 44, 4, 0, 8, 11}}},
        {8, 0, 2, 9, 0, 1, {{5, 18, 8, 0, 10, 9}}},
        {8, 9, 2, 2, 1, 2, {{5, 3, 8, 9, 10, 11}, {9, 1, 9, 10, 10, 11}}},
    };
    for (size_t i = 0; i < 4; i++)
        assert_chunk_is(m, i, &three[i]);
    /* Region 9: one cell at (9,10); tile box [8,10) x [9,11) = 4 cells;
     * reads the 4-cell mixed tile; rate 1. */
    exp_stats s9 = {9, 1, 0, 1, 9, 10, 10, 11, 8, 9, 10, 11, 1, 4, 4, 1.0};
    assert_region(m, 1, &s9);
    snprintf(ctx, sizeof ctx, "edge mixed");
    verify_mesh(mask, NY, NX, 4, 3, m);
    raster_mesh_free(m);

    /* Tile as large as the grid: one tile; and 1 x 1 tiles. */
    assert_int_equal(raster_mesh_build(mask, NY, NX, NY, NX, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 1);
    exp_chunk whole = {0, 0, NY, NX, 1, 2,
                       {{5, 109, 0, 0, 10, 11}, {9, 1, 9, 10, 10, 11}}};
    assert_chunk_is(m, 0, &whole);
    snprintf(ctx, sizeof ctx, "edge whole");
    verify_mesh(mask, NY, NX, NY, NX, m);
    raster_mesh_free(m);

    assert_int_equal(raster_mesh_build(mask, NY, NX, 1, 1, &m), RASTER_OK);
    /* rows 0..8: one chunk each; row 9: 0..9 of 5, then the 9 */
    assert_int_equal(raster_mesh_nchunks(m), 9 + 2);
    exp_chunk last = {9, 10, 1, 1, 0, 1, {{9, 1, 9, 10, 10, 11}}};
    assert_chunk_is(m, 10, &last);
    snprintf(ctx, sizeof ctx, "edge 1x1");
    verify_mesh(mask, NY, NX, 1, 1, m);
    raster_mesh_free(m);

    /* 1 x 1 grid */
    int32_t single = -3;
    assert_int_equal(raster_mesh_build(&single, 1, 1, 1, 1, &m), RASTER_OK);
    exp_chunk sc = {0, 0, 1, 1, 0, 1, {{-3, 1, 0, 0, 1, 1}}};
    assert_chunk_is(m, 0, &sc);
    snprintf(ctx, sizeof ctx, "1x1 grid");
    verify_mesh(&single, 1, 1, 1, 1, m);
    raster_mesh_free(m);
}

/* ------------------------------------------------------------------------ */
/* Property tests on random masks. */

static uint64_t rng;

static uint64_t rnd(void) /* xorshift64* */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}

static size_t rnd_in(size_t lo, size_t hi) /* inclusive */
{
    return lo + (size_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* Picks `n` distinct ids, mostly small (negative, zero, positive), now and
 * then the int32 extremes. */
static void pick_ids(int32_t *ids, size_t n)
{
    for (size_t k = 0; k < n;) {
        int32_t id;
        unsigned r = (unsigned)(rnd() % 20);
        if (r == 0) id = INT32_MIN;
        else if (r == 1) id = INT32_MAX;
        else if (n > 12) id = (int32_t)rnd_in(0, 2000) - 1000;
        else id = (int32_t)rnd_in(0, 16) - 8;
        size_t j = 0;
        while (j < k && ids[j] != id)
            j++;
        if (j == k)
            ids[k++] = id;
    }
}

/* Fills a random mask in one of several styles. */
static void random_mask(int32_t *mask, size_t ny, size_t nx, int style,
                        const int32_t *ids, size_t nids)
{
    switch (style) {
    case 0: /* independent cells */
        for (size_t i = 0; i < ny * nx; i++)
            mask[i] = ids[rnd() % nids];
        break;
    case 1: { /* blocks of a random size, one id each, some noise */
        size_t bh = rnd_in(1, ny), bw = rnd_in(1, nx);
        size_t noise = rnd() % 3 == 0 ? (size_t)rnd_in(20, 200) : 0;
        size_t nby = (ny + bh - 1) / bh, nbx = (nx + bw - 1) / bw;
        int32_t *block = malloc(nby * nbx * sizeof *block);
        assert_non_null(block);
        for (size_t i = 0; i < nby * nbx; i++)
            block[i] = ids[rnd() % nids];
        for (size_t y = 0; y < ny; y++)
            for (size_t x = 0; x < nx; x++)
                mask[y * nx + x] = block[(y / bh) * nbx + x / bw];
        free(block);
        if (noise)
            for (size_t i = 0; i < ny * nx; i++)
                if (rnd() % noise == 0)
                    mask[i] = ids[rnd() % nids];
        break;
    }
    default: { /* one background id painted with random rectangles */
        int32_t bg = ids[rnd() % nids];
        for (size_t i = 0; i < ny * nx; i++)
            mask[i] = bg;
        size_t nrect = rnd_in(0, 8);
        for (size_t r = 0; r < nrect; r++) {
            size_t y0 = rnd_in(0, ny - 1), x0 = rnd_in(0, nx - 1);
            size_t y1 = rnd_in(y0 + 1, ny), x1 = rnd_in(x0 + 1, nx);
            int32_t id = ids[rnd() % nids];
            for (size_t y = y0; y < y1; y++)
                for (size_t x = x0; x < x1; x++)
                    mask[y * nx + x] = id;
        }
        break;
    }
    }
}

static void run_random_case(uint64_t seed, size_t max_side, size_t max_ids)
{
    rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    size_t ny = rnd_in(1, max_side), nx = rnd_in(1, max_side);
    /* Tile sizes 1..grid, half the time small so that pure runs form. */
    size_t th = rnd() % 2 ? rnd_in(1, ny) : rnd_in(1, min_sz(ny, 6));
    size_t tw = rnd() % 2 ? rnd_in(1, nx) : rnd_in(1, min_sz(nx, 6));
    size_t nids = rnd_in(1, max_ids);
    int style = (int)(rnd() % 3);
    int32_t ids[64];
    pick_ids(ids, nids);
    int32_t *mask = malloc(ny * nx * sizeof *mask);
    assert_non_null(mask);
    random_mask(mask, ny, nx, style, ids, nids);

    snprintf(ctx, sizeof ctx,
             "seed %" PRIu64 ": %zu x %zu, tile %zu x %zu, %zu ids, style %d",
             seed, ny, nx, th, tw, nids, style);
    raster_mesh *m = NULL;
    int rc = raster_mesh_build(mask, ny, nx, th, tw, &m);
    CHECK_EQ(rc, RASTER_OK);
    CHECK(m != NULL);
    verify_mesh(mask, ny, nx, th, tw, m);
    raster_mesh_free(m);
    free(mask);
}

static void test_random_masks(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    for (uint64_t seed = 1; seed <= 3000; seed++)
        run_random_case(seed, 70, 6);
    print_message("random masks: %zu merged pure chunks, %zu mixed, %zu "
                  "narrow-edge pure, %zu in short last tile-rows\n",
                  seen.merged, seen.mixed, seen.edge_pure, seen.short_rows);
    assert_true(seen.merged > 1000);
    assert_true(seen.mixed > 1000);
    assert_true(seen.edge_pure > 100);
    assert_true(seen.short_rows > 1000);
}

/* Up to 40 ids per mask: tiles with more than 16 ids take the sorting path,
 * including tiles where the 17th id shows up after part of the tile was
 * counted. */
static void test_random_masks_many_ids(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    for (uint64_t seed = 100001; seed <= 100600; seed++)
        run_random_case(seed, 40, 40);
    print_message("many ids: %zu mixed chunks with more than 16 ids\n",
                  seen.many_shares);
    assert_true(seen.many_shares > 100);
}

/* ------------------------------------------------------------------------ */
/* Many ids per tile, and a single region. */

/* A permutation of 0..n-1 (a coprime stride), shifted to be centred on 0. */
static int32_t perm_id(size_t i, size_t n)
{
    return (int32_t)((i * 29) % n) - (int32_t)(n / 2);
}

static void test_every_cell_own_region(void **state)
{
    (void)state;
    /* 8 x 8 grid, one 8 x 8 tile, 64 distinct ids (29 is coprime to 64):
     * one mixed chunk with 64 one-cell shares ordered by id. */
    enum { N = 8 };
    int32_t mask[N * N];
    for (size_t i = 0; i < N * N; i++)
        mask[i] = perm_id(i, N * N);
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, N, N, N, N, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 1);
    raster_chunk c;
    assert_int_equal(raster_mesh_chunk(m, 0, &c), RASTER_OK);
    assert_int_equal(c.mixed, 1);
    assert_int_equal(c.nshares, N * N);
    for (size_t k = 0; k < N * N; k++) {
        const raster_share *s = &c.shares[k];
        assert_int_equal(s->id, (int32_t)k - N * N / 2);
        /* where is id k? the cell i with (i * 29) % 64 == k */
        size_t i = 0;
        while (perm_id(i, N * N) != s->id)
            i++;
        assert_int_equal(s->cells, 1);
        assert_int_equal(s->y0, i / N);
        assert_int_equal(s->x0, i % N);
        assert_int_equal(s->y1, i / N + 1);
        assert_int_equal(s->x1, i % N + 1);
    }
    assert_int_equal(raster_mesh_nregions(m), N * N);
    for (size_t k = 0; k < N * N; k++) {
        raster_region_stats st;
        assert_int_equal(raster_mesh_region(m, k, &st), RASTER_OK);
        assert_int_equal(st.id, (int32_t)k - N * N / 2);
        assert_int_equal(st.cells, 1);
        assert_int_equal(st.pure_chunks, 0);
        assert_int_equal(st.mixed_chunks, 1);
        assert_int_equal(st.bbox_cells, 1);
        assert_int_equal(st.bbox_tile_cells, 64);
        assert_int_equal(st.read_cells, 64);
        assert_true(st.data_reduction_rate == 1.0);
        const size_t only[] = {0};
        assert_region_chunks(m, st.id, only, 1);
    }
    snprintf(ctx, sizeof ctx, "64 ids in one tile");
    verify_mesh(mask, N, N, N, N, m);
    raster_mesh_free(m);

    /* 12 x 10 grid, every cell its own id, tiles 5 x 4: 20-id tiles (sorting
     * path), 8- and 10-id edge tiles (small path), a 2 x 2 corner. */
    enum { NY = 12, NX = 10 };
    int32_t big[NY * NX];
    for (size_t i = 0; i < NY * NX; i++)
        big[i] = perm_id(i, NY * NX) * 1000;
    assert_int_equal(raster_mesh_build(big, NY, NX, 5, 4, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 9);
    assert_int_equal(raster_mesh_nregions(m), NY * NX);
    snprintf(ctx, sizeof ctx, "every cell its own id, 12 x 10 / 5 x 4");
    verify_mesh(big, NY, NX, 5, 4, m);
    raster_mesh_free(m);
}

/* A 4 x 5 tile whose first 16 cells hold 16 distinct ids, then repeats,
 * then a 17th id in the last cell: counting switches to sorting after most
 * of the tile was counted and must start over cleanly. */
static void test_switch_to_sorting(void **state)
{
    (void)state;
    int32_t mask[4 * 5];
    for (int32_t i = 0; i < 16; i++)
        mask[i] = 100 + i;      /* cells 0..15; cell 15 = (3,0) holds 115 */
    mask[16] = 100;             /* (3,1) */
    mask[17] = 101;             /* (3,2) */
    mask[18] = 115;             /* (3,3) */
    mask[19] = -1;              /* (3,4): the 17th id */
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, 4, 5, 4, 5, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 1);
    raster_chunk c;
    assert_int_equal(raster_mesh_chunk(m, 0, &c), RASTER_OK);
    assert_int_equal(c.mixed, 1);
    assert_int_equal(c.nshares, 17);
    /* -1: (3,4) */
    assert_int_equal(c.shares[0].id, -1);
    assert_int_equal(c.shares[0].cells, 1);
    assert_int_equal(c.shares[0].y0, 3);
    assert_int_equal(c.shares[0].x0, 4);
    /* 100: (0,0) and (3,1) -> [0,4) x [0,2) */
    assert_int_equal(c.shares[1].id, 100);
    assert_int_equal(c.shares[1].cells, 2);
    assert_int_equal(c.shares[1].y0, 0);
    assert_int_equal(c.shares[1].x0, 0);
    assert_int_equal(c.shares[1].y1, 4);
    assert_int_equal(c.shares[1].x1, 2);
    /* 101: (0,1) and (3,2) -> [0,4) x [1,3) */
    assert_int_equal(c.shares[2].id, 101);
    assert_int_equal(c.shares[2].cells, 2);
    assert_int_equal(c.shares[2].x0, 1);
    assert_int_equal(c.shares[2].x1, 3);
    /* 115: (3,0) and (3,3) -> [3,4) x [0,4) */
    assert_int_equal(c.shares[16].id, 115);
    assert_int_equal(c.shares[16].cells, 2);
    assert_int_equal(c.shares[16].y0, 3);
    assert_int_equal(c.shares[16].x0, 0);
    assert_int_equal(c.shares[16].y1, 4);
    assert_int_equal(c.shares[16].x1, 4);
    snprintf(ctx, sizeof ctx, "switch to sorting");
    verify_mesh(mask, 4, 5, 4, 5, m);
    raster_mesh_free(m);

    /* Exactly 16 ids (the small table full, no switch). */
    int32_t sixteen[4 * 4];
    for (int32_t i = 0; i < 16; i++)
        sixteen[i] = 15 - i;
    assert_int_equal(raster_mesh_build(sixteen, 4, 4, 4, 4, &m), RASTER_OK);
    assert_int_equal(raster_mesh_chunk(m, 0, &c), RASTER_OK);
    assert_int_equal(c.nshares, 16);
    for (size_t k = 0; k < 16; k++)
        assert_int_equal(c.shares[k].id, (int32_t)k);
    snprintf(ctx, sizeof ctx, "16 ids");
    verify_mesh(sixteen, 4, 4, 4, 4, m);
    raster_mesh_free(m);
}

/* One id everywhere: one pure chunk per tile-row, full width. */
static void test_single_region(void **state)
{
    (void)state;
    enum { NY = 37, NX = 53 };
    int32_t *mask = malloc(NY * NX * sizeof *mask);
    assert_non_null(mask);
    for (size_t i = 0; i < NY * NX; i++)
        mask[i] = -4;
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 5, 7, &m), RASTER_OK);
    /* ceil(37 / 5) = 8 tile-rows, the last 2 rows high */
    assert_int_equal(raster_mesh_nchunks(m), 8);
    for (size_t i = 0; i < 8; i++) {
        size_t h = i < 7 ? 5 : 2;
        exp_chunk e = {5 * i, 0, h, NX, 0, 1,
                       {{-4, h * NX, 5 * i, 0, 5 * i + h, NX}}};
        assert_chunk_is(m, i, &e);
    }
    assert_int_equal(raster_mesh_nregions(m), 1);
    exp_stats s = {-4, NY * NX, 8, 0, 0, 0, NY, NX, 0, 0, NY, NX,
                   NY * NX, NY * NX, NY * NX, 1.0};
    assert_region(m, 0, &s);
    const size_t all[] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_region_chunks(m, -4, all, 8);
    snprintf(ctx, sizeof ctx, "single region");
    verify_mesh(mask, NY, NX, 5, 7, m);
    raster_mesh_free(m);
    free(mask);
}

/* ------------------------------------------------------------------------ */
/* Bad input. */

/* A non-NULL handle value that is never dereferenced. */
static char sentinel_byte;
#define SENTINEL ((raster_mesh *)(void *)&sentinel_byte)

static void expect_build_error(const int32_t *mask, size_t ny, size_t nx,
                               size_t th, size_t tw, int code)
{
    raster_mesh *out = SENTINEL; /* must be reset to NULL */
    raster_errmsg_clear();
    assert_int_equal(raster_mesh_build(mask, ny, nx, th, tw, &out), code);
    assert_null(out);
    assert_true(strlen(raster_errmsg()) > 0);
    /* NULL out as well: no crash, still an error */
    raster_errmsg_clear();
    assert_int_equal(raster_mesh_build(mask, ny, nx, th, tw, NULL),
                     RASTER_EINVAL);
    assert_true(strlen(raster_errmsg()) > 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    int32_t mask[6] = {1, 1, 1, 2, 2, 2}; /* 2 x 3 */
    expect_build_error(NULL, 2, 3, 1, 1, RASTER_EINVAL);
    expect_build_error(mask, 0, 3, 1, 1, RASTER_EINVAL);
    expect_build_error(mask, 2, 0, 1, 1, RASTER_EINVAL);
    expect_build_error(mask, 0, 0, 1, 1, RASTER_EINVAL);
    expect_build_error(mask, 2, 3, 0, 1, RASTER_EINVAL);
    expect_build_error(mask, 2, 3, 1, 0, RASTER_EINVAL);
    expect_build_error(mask, 2, 3, 3, 1, RASTER_EINVAL); /* th > ny */
    expect_build_error(mask, 2, 3, 1, 4, RASTER_EINVAL); /* tw > nx */
    /* a "negative" tile size is a huge size_t: larger than the grid */
    expect_build_error(mask, 2, 3, (size_t)-1, 1, RASTER_EINVAL);
    expect_build_error(mask, 2, 3, 1, (size_t)-1, RASTER_EINVAL);
    /* ny * nx overflows size_t: must be caught before the (one-element)
     * mask is touched */
    int32_t dummy = 0;
    expect_build_error(&dummy, SIZE_MAX / 2, SIZE_MAX / 2, 1, 1,
                       RASTER_EOVERFLOW);
    expect_build_error(&dummy, SIZE_MAX, 2, 1, 1, RASTER_EOVERFLOW);
    expect_build_error(&dummy, 3, SIZE_MAX / 2, 1, 1, RASTER_EOVERFLOW);

    /* Accessors on a good mesh. */
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, 2, 3, 1, 2, &m), RASTER_OK);
    assert_int_equal(raster_mesh_nchunks(m), 2);
    raster_chunk c;
    raster_errmsg_clear();
    assert_int_equal(raster_mesh_chunk(m, 2, &c), RASTER_EINVAL);
    assert_true(strlen(raster_errmsg()) > 0);
    assert_int_equal(raster_mesh_chunk(m, SIZE_MAX, &c), RASTER_EINVAL);
    assert_int_equal(raster_mesh_chunk(m, 0, NULL), RASTER_EINVAL);
    assert_int_equal(raster_mesh_chunk(NULL, 0, &c), RASTER_EINVAL);

    raster_region_stats st;
    assert_int_equal(raster_mesh_nregions(m), 2);
    raster_errmsg_clear();
    assert_int_equal(raster_mesh_region(m, 2, &st), RASTER_EINVAL);
    assert_true(strlen(raster_errmsg()) > 0);
    assert_int_equal(raster_mesh_region(m, 0, NULL), RASTER_EINVAL);
    assert_int_equal(raster_mesh_region(NULL, 0, &st), RASTER_EINVAL);

    raster_errmsg_clear();
    assert_int_equal(raster_mesh_region_stats(m, 3, &st), RASTER_ENOTFOUND);
    assert_true(strlen(raster_errmsg()) > 0);
    assert_int_equal(raster_mesh_region_stats(m, 0, &st), RASTER_ENOTFOUND);
    assert_int_equal(raster_mesh_region_stats(m, INT32_MIN, &st),
                     RASTER_ENOTFOUND);
    assert_int_equal(raster_mesh_region_stats(m, 1, NULL), RASTER_EINVAL);
    assert_int_equal(raster_mesh_region_stats(NULL, 1, &st), RASTER_EINVAL);

    const size_t *list;
    size_t n;
    raster_errmsg_clear();
    assert_int_equal(raster_mesh_region_chunks(m, 3, &list, &n),
                     RASTER_ENOTFOUND);
    assert_true(strlen(raster_errmsg()) > 0);
    assert_int_equal(raster_mesh_region_chunks(m, 1, NULL, &n),
                     RASTER_EINVAL);
    assert_int_equal(raster_mesh_region_chunks(m, 1, &list, NULL),
                     RASTER_EINVAL);
    assert_int_equal(raster_mesh_region_chunks(NULL, 1, &list, &n),
                     RASTER_EINVAL);
    assert_int_equal(raster_mesh_region_chunks(m, 2, &list, &n), RASTER_OK);
    assert_int_equal(n, 1);
    assert_int_equal(list[0], 1);

    raster_mesh_free(m);
    raster_mesh_free(NULL);
    assert_int_equal(raster_mesh_nchunks(NULL), 0);
    assert_int_equal(raster_mesh_nregions(NULL), 0);
}

/* ------------------------------------------------------------------------ */
/* Allocation failure at every allocation of a build. */

static void alloc_failure_loop(const int32_t *mask, size_t ny, size_t nx,
                               size_t th, size_t tw, const char *what)
{
    unsigned long n;
    raster_mesh *m = NULL;
    for (n = 1; n < 1000000; n++) {
        m = SENTINEL;
        raster_errmsg_clear();
        raster_alloc_fail_at(n);
        int rc = raster_mesh_build(mask, ny, nx, th, tw, &m);
        unsigned long made = raster_alloc_count();
        raster_alloc_fail_at(0);
        if (rc == RASTER_OK) {
            /* every allocation succeeded only when the failing one was past
             * the last: the build made n - 1 allocations */
            if (made != n - 1)
                fail_msg("%s: failing allocation %lu of %lu was ignored "
                         "(build returned RASTER_OK)", what, n, made);
            break;
        }
        if (rc != RASTER_ENOMEM)
            fail_msg("%s: allocation %lu failed: status %d (%s), expected "
                     "RASTER_ENOMEM", what, n, rc, raster_strerror(rc));
        assert_null(m);
        assert_true(strlen(raster_errmsg()) > 0);
    }
    assert_non_null(m);
    assert_true(n > 4); /* mesh, two scratch arrays, chunks, ... */
    snprintf(ctx, sizeof ctx, "%s after %lu allocation failures", what,
             n - 1);
    verify_mesh(mask, ny, nx, th, tw, m);
    raster_mesh_free(m);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    /* Table 1 grid: mixed tiles, 26 chunks, 2 regions. */
    int32_t *mask = malloc(80 * 80 * sizeof *mask);
    assert_non_null(mask);
    for (size_t i = 0; i < 76 * 80; i++)
        mask[i] = LAND;
    fill_band(mask, 76);
    alloc_failure_loop(mask, 80, 80, 4, 4, "table 1 grid");
    /* With 1 x 1 tiles: 6400 - ... chunks, the arrays grow many times. */
    alloc_failure_loop(mask, 80, 80, 1, 1, "table 1 grid, 1 x 1 tiles");
    free(mask);

    /* Every cell its own id: 576 regions (the hash table expands), 36-id
     * tiles (the sorting path). */
    enum { N = 24 };
    int32_t many[N * N];
    for (size_t i = 0; i < N * N; i++)
        many[i] = perm_id(i, N * N);
    alloc_failure_loop(many, N, N, 6, 6, "576 ids");
    raster_alloc_fail_at(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table1_band),
        cmocka_unit_test(test_table1_grid),
        cmocka_unit_test(test_edge_tiles),
        cmocka_unit_test(test_random_masks),
        cmocka_unit_test(test_random_masks_many_ids),
        cmocka_unit_test(test_every_cell_own_region),
        cmocka_unit_test(test_switch_to_sorting),
        cmocka_unit_test(test_single_region),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests_name("mesh", tests, NULL, NULL);
}
