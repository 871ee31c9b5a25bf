/*
 * test_layout.c - unit tests of the Chunk Layout Planner (src/plan/layout.c)
 * in its three modes: by region (format 3), shared (format 4) and whole
 * tiles (format 5).
 *
 *  - every mode, on seeded random masks with edge tiles: each grid cell is
 *    in exactly one segment, of its own region; no store cell serves two
 *    grid cells; every offset lies in its store; segments in grid order;
 *  - whole tiles: a pure tile's cell (y, x) is at its tile's start plus
 *    (y - y0) * tile_w + (x - x0), tiles of a region in chunk-id order, and
 *    a mixed tile's the same in the mixed store; the stores hold whole
 *    tiles (edge ones too);
 *  - by region: a region's shares of the mixed store are one run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "mesh.h"
#include "raster.h"

static char ctx[128];

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c))                                                             \
            fail_msg("[%s] check failed: %s (line %d)", ctx, #c, __LINE__);  \
    } while (0)

static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* A mask of blobs: rectangles of a few ids painted over a background, so
 * that there are pure tiles, mixed tiles and pure chunks of several tiles. */
static int32_t *random_mask(size_t ny, size_t nx, int nids)
{
    int32_t *m = malloc(ny * nx * sizeof *m);
    for (size_t i = 0; i < ny * nx; i++)
        m[i] = 0;
    int blobs = 1 + (int)(rng() % 6);
    for (int b = 0; b < blobs; b++) {
        size_t y0 = rng() % ny, x0 = rng() % nx;
        size_t h = 1 + rng() % ny, w = 1 + rng() % nx;
        int32_t id = (int32_t)(rng() % (uint32_t)nids) - 1; /* -1 too */
        for (size_t y = y0; y < ny && y < y0 + h; y++)
            for (size_t x = x0; x < nx && x < x0 + w; x++)
                m[y * nx + x] = id;
    }
    return m;
}

static size_t store_size(const layout *lay, uint32_t s)
{
    return s < lay->nregions ? lay->pure_store[s] : lay->mixed_total;
}

/* The checks every mode passes. */
static void check_common(const layout *lay, const int32_t *mask)
{
    size_t ny = lay->ny, nx = lay->nx;
    unsigned char *seen = calloc(ny * nx, 1);
    unsigned char **used = calloc(lay->nregions + 1, sizeof *used);
    for (size_t s = 0; s <= lay->nregions; s++)
        used[s] = calloc(store_size(lay, (uint32_t)s) + 1, 1);
    for (size_t i = 0; i < lay->nsegs; i++) {
        const layout_seg *g = &lay->segs[i];
        CHECK(g->store <= lay->nregions);
        CHECK(g->len > 0 && g->x + g->len <= nx && g->y < ny);
        CHECK(g->off + g->len <= store_size(lay, g->store));
        if (i > 0) {
            const layout_seg *p = &lay->segs[i - 1];
            CHECK(p->y < g->y || (p->y == g->y && p->x + p->len <= g->x));
        }
        for (uint32_t k = 0; k < g->len; k++) {
            size_t cell = (size_t)g->y * nx + g->x + k;
            CHECK(!seen[cell]);
            seen[cell] = 1;
            CHECK(lay->ids[g->region] == mask[cell]);
            CHECK(!used[g->store][g->off + k]);
            used[g->store][g->off + k] = 1;
        }
    }
    for (size_t c = 0; c < ny * nx; c++)
        CHECK(seen[c]);
    /* region_segs: each region's segments, in grid order */
    for (size_t r = 0; r < lay->nregions; r++)
        for (size_t j = lay->region_first[r]; j < lay->region_first[r + 1];
             j++)
            CHECK(lay->segs[lay->region_segs[j]].region == r);
    for (size_t s = 0; s <= lay->nregions; s++)
        free(used[s]);
    free(used);
    free(seen);
}

/* Whole tiles: where each cell is, from the mesh's chunks alone. */
static void check_tiles(const layout *lay, const raster_mesh *m,
                        const int32_t *mask)
{
    size_t th = lay->tile_h, tw = lay->tile_w, tile = th * tw;
    size_t *pure = calloc(lay->nregions, sizeof *pure), mixed = 0;
    size_t ny = lay->ny, nx = lay->nx;
    /* expected store and offset of each grid cell */
    uint64_t *want = malloc(ny * nx * sizeof *want);
    uint32_t *wstore = malloc(ny * nx * sizeof *wstore);
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        for (size_t x0 = c->x0; x0 < c->x0 + c->w; x0 += tw) {
            uint32_t s;
            size_t base;
            if (c->mixed) {
                s = (uint32_t)lay->nregions;
                base = mixed;
                mixed += tile;
            } else {
                s = (uint32_t)layout_region_pos(lay,
                                                mask[c->y0 * nx + c->x0]);
                base = pure[s];
                pure[s] += tile;
            }
            for (size_t y = c->y0; y < c->y0 + c->h; y++)
                for (size_t x = x0; x < x0 + tw && x < c->x0 + c->w; x++) {
                    want[y * nx + x] = base + (y - c->y0) * tw + (x - x0);
                    wstore[y * nx + x] = s;
                }
        }
    }
    for (size_t r = 0; r < lay->nregions; r++)
        CHECK(lay->pure_store[r] == pure[r] && lay->mixed_off[r] == 0);
    CHECK(lay->mixed_total == mixed);
    for (size_t i = 0; i < lay->nsegs; i++) {
        const layout_seg *g = &lay->segs[i];
        for (uint32_t k = 0; k < g->len; k++) {
            size_t cell = (size_t)g->y * nx + g->x + k;
            CHECK(g->store == wstore[cell]);
            CHECK(g->off + k == want[cell]);
        }
    }
    /* mixed_cells: the region's cells in mixed tiles */
    size_t *cells = calloc(lay->nregions, sizeof *cells);
    for (size_t i = 0; i < lay->nsegs; i++)
        if (lay->segs[i].store == lay->nregions)
            cells[lay->segs[i].region] += lay->segs[i].len;
    size_t *pcells = calloc(lay->nregions, sizeof *pcells);
    for (size_t i = 0; i < lay->nsegs; i++)
        if (lay->segs[i].store != lay->nregions)
            pcells[lay->segs[i].region] += lay->segs[i].len;
    for (size_t r = 0; r < lay->nregions; r++)
        CHECK(lay->mixed_cells[r] == cells[r] &&
              lay->pure_cells[r] == pcells[r]);
    free(pcells);
    free(cells);
    free(want);
    free(wstore);
    free(pure);
}

/* By region: each region's mixed segments fill [mixed_off, +mixed_cells),
 * its pure store holds exactly its pure cells. */
static void check_regions(const layout *lay)
{
    for (size_t r = 0; r < lay->nregions; r++)
        CHECK(lay->pure_store[r] == lay->pure_cells[r]);
    for (size_t r = 0; r < lay->nregions; r++) {
        size_t n = 0;
        for (size_t i = 0; i < lay->nsegs; i++) {
            const layout_seg *g = &lay->segs[i];
            if (g->region != r || g->store != lay->nregions)
                continue;
            CHECK(g->off >= lay->mixed_off[r] &&
                  g->off + g->len <= lay->mixed_off[r] + lay->mixed_cells[r]);
            n += g->len;
        }
        CHECK(n == lay->mixed_cells[r]);
    }
}

static void test_modes_random(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 300; seed++) {
        rng_state = seed;
        size_t ny = 1 + rng() % 40, nx = 1 + rng() % 40;
        size_t th = 1 + rng() % 9, tw = 1 + rng() % 9;
        th = th > ny ? ny : th; /* the mesh takes tiles within the grid */
        tw = tw > nx ? nx : tw;
        int32_t *mask = random_mask(ny, nx, 2 + (int)(rng() % 5));
        raster_mesh *m = NULL;
        assert_int_equal(raster_mesh_build(mask, ny, nx, th, tw, &m),
                         RASTER_OK);
        for (int mode = LAYOUT_REGIONS; mode <= LAYOUT_TILES; mode++) {
            snprintf(ctx, sizeof ctx, "seed %u, %zu x %zu, tile %zu x %zu, "
                     "mode %d", seed, ny, nx, th, tw, mode);
            layout *lay = NULL;
            assert_int_equal(layout_build(m, mask, (layout_mode)mode, &lay),
                             RASTER_OK);
            CHECK(lay->mode == (layout_mode)mode);
            check_common(lay, mask);
            if (mode == LAYOUT_TILES)
                check_tiles(lay, m, mask);
            if (mode == LAYOUT_REGIONS)
                check_regions(lay);
            layout_free(lay);
        }
        raster_mesh_free(m);
        free(mask);
    }
}

/* A 5 x 7 grid of 3 x 4 tiles: edge tiles 2 rows high and 3 wide, stored
 * whole (12 cells) in tiles mode. */
static void test_tiles_edges(void **state)
{
    (void)state;
    enum { NY = 5, NX = 7 };
    int32_t mask[NY * NX];
    for (int i = 0; i < NY * NX; i++)
        mask[i] = 1;
    mask[4 * NX + 6] = 2; /* the bottom-right tile is mixed */
    raster_mesh *m = NULL;
    assert_int_equal(raster_mesh_build(mask, NY, NX, 3, 4, &m), RASTER_OK);
    layout *lay = NULL;
    assert_int_equal(layout_build(m, mask, LAYOUT_TILES, &lay), RASTER_OK);
    snprintf(ctx, sizeof ctx, "edges");
    /* region 1: three pure tiles (two in the first band, one below),
     * 12 + 9 + 8 cells, stored whole */
    assert_int_equal(lay->pure_store[0], 3 * 12);
    assert_int_equal(lay->pure_cells[0], 12 + 9 + 8);
    assert_int_equal(lay->pure_store[1], 0);
    assert_int_equal(lay->mixed_total, 12);
    assert_int_equal(lay->mixed_cells[0], 5);
    assert_int_equal(lay->mixed_cells[1], 1);
    /* cell (4, 6): the mixed tile's row 1, column 2 */
    for (size_t i = 0; i < lay->nsegs; i++) {
        const layout_seg *g = &lay->segs[i];
        if (g->y == 4 && g->x <= 6 && g->x + g->len > 6) {
            assert_int_equal(g->store, 2);
            assert_int_equal(g->off + (6 - g->x), 1 * 4 + 2);
        }
        if (g->y == 1 && g->x == 4) /* second tile of band 0, row 1 */
            assert_int_equal(g->off, 12 + 4);
    }
    check_common(lay, mask);
    check_tiles(lay, m, mask);
    layout_free(lay);
    raster_mesh_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_random),
        cmocka_unit_test(test_tiles_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
