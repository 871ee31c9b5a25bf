/*
 * layout.c - Chunk layout planner (see layout.h for the store layout).
 *
 * Offsets are assigned in chunk-id order, then segments are emitted in grid
 * order band by band, so no sort is needed: for each row of a tile-row band
 * the band's chunks are visited left to right; a pure chunk gives one
 * segment per tile, a mixed chunk one segment per run of equal ids.
 */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "index.h"

void layout_free(layout *lay)
{
    if (!lay)
        return;
    raster_free(lay->ids);
    raster_free(lay->pure_cells);
    raster_free(lay->pure_store);
    raster_free(lay->mixed_off);
    raster_free(lay->mixed_cells);
    raster_free(lay->chunk_off);
    raster_free(lay->share_off);
    raster_free(lay->segs);
    raster_free(lay->region_first);
    raster_free(lay->region_segs);
    raster_free(lay);
}

long layout_region_pos(const layout *lay, int32_t id)
{
    size_t lo = 0, hi = lay->nregions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lay->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < lay->nregions && lay->ids[lo] == id ? (long)lo : -1;
}

static int push_seg(layout *lay, size_t *cap, layout_seg seg)
{
    int rc = raster_grow(&lay->segs, cap, lay->nsegs + 1, sizeof seg);
    if (rc)
        return rc;
    lay->segs[lay->nsegs++] = seg;
    return RASTER_OK;
}

/* Tiles mode: every tile whole, pure ones in their region's store, mixed
 * ones in the mixed store, each in chunk-id order; a mixed chunk's shares
 * all start at its tile. */
static void assign_tiles(layout *lay, const raster_mesh *m)
{
    size_t tile = lay->tile_h * lay->tile_w, mixed = 0;
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        if (!c->mixed) {
            size_t r = (size_t)layout_region_pos(lay, m->shares[c->share0].id);
            lay->chunk_off[ci] = lay->pure_store[r];
            lay->pure_store[r] += (c->w + lay->tile_w - 1) / lay->tile_w * tile;
            lay->pure_cells[r] += c->h * c->w;
            continue;
        }
        for (size_t k = 0; k < c->nshares; k++) {
            const raster_share *s = &m->shares[c->share0 + k];
            lay->mixed_cells[(size_t)layout_region_pos(lay, s->id)] += s->cells;
            lay->share_off[c->share0 + k] = mixed;
        }
        mixed += tile;
    }
    lay->mixed_total = mixed;
}

/* Store offsets of every pure chunk and every mixed share; with `shared`
 * a region's pure chunks go to the shared store ahead of its shares. */
static void assign_offsets(layout *lay, const raster_mesh *m, int shared,
                           size_t *run)
{
    size_t *cursor = lay->pure_cells; /* accumulates to the totals */
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        for (size_t k = 0; k < c->nshares; k++) {
            const raster_share *s = &m->shares[c->share0 + k];
            size_t r = (size_t)layout_region_pos(lay, s->id);
            if (c->mixed) {
                lay->mixed_cells[r] += s->cells;
            } else {
                lay->chunk_off[ci] = cursor[r];
                cursor[r] += s->cells;
            }
        }
    }
    size_t total = 0;
    for (size_t r = 0; r < lay->nregions; r++) {
        lay->mixed_off[r] = total;
        if (shared) { /* its pure cells first, then its shares */
            lay->mixed_cells[r] += lay->pure_cells[r];
            run[r] = total + lay->pure_cells[r];
            lay->pure_cells[r] = 0;
        }
        total += lay->mixed_cells[r];
    }
    lay->mixed_total = total;
    if (shared) {
        for (size_t ci = 0; ci < m->nchunks; ci++) {
            const mesh_chunk *c = &m->chunks[ci];
            if (!c->mixed) /* its offset within the region's pure part */
                lay->chunk_off[ci] += lay->mixed_off[(size_t)layout_region_pos(
                    lay, m->shares[c->share0].id)];
        }
    }
    /* second pass: each share's place inside its region's mixed run; `run`
     * has room for nregions entries */
    for (size_t r = 0; r < lay->nregions && !shared; r++)
        run[r] = lay->mixed_off[r];
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        if (!c->mixed)
            continue;
        for (size_t k = 0; k < c->nshares; k++) {
            const raster_share *s = &m->shares[c->share0 + k];
            size_t r = (size_t)layout_region_pos(lay, s->id);
            lay->share_off[c->share0 + k] = run[r];
            run[r] += s->cells;
        }
    }
}

/* Index of `id` among the shares of mixed chunk `c` (ascending ids). */
static size_t share_of(const raster_mesh *m, const mesh_chunk *c, int32_t id)
{
    size_t lo = c->share0, hi = c->share0 + c->nshares;
    while (lo + 1 < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->shares[mid].id <= id)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Segments of row y of the band whose chunks are [c0, c1). `done[s]` counts
 * the cells of mixed share s already emitted in earlier rows. */
static int emit_row(layout *lay, const raster_mesh *m, const int32_t *mask,
                    size_t c0, size_t c1, size_t y, size_t *done, size_t *cap)
{
    uint32_t mixed_store = (uint32_t)lay->nregions;
    int tiles = lay->mode == LAYOUT_TILES;
    size_t tw = lay->tile_w, th = lay->tile_h;
    for (size_t ci = c0; ci < c1; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        size_t dy = y - c->y0;
        if (!c->mixed) {
            uint32_t region = (uint32_t)layout_region_pos(
                lay, m->shares[c->share0].id);
            uint32_t store = lay->mode == LAYOUT_SHARED ? mixed_store : region;
            for (size_t x = c->x0; x < c->x0 + c->w; x += tw) {
                size_t w = x + tw <= c->x0 + c->w ? tw : c->x0 + c->w - x;
                /* a tile whole (rows of tw) or packed (rows of w) */
                size_t off = tiles ? lay->chunk_off[ci] +
                                         (x - c->x0) / tw * th * tw + dy * tw
                                   : lay->chunk_off[ci] + c->h * (x - c->x0) +
                                         dy * w;
                int rc = push_seg(lay, cap, (layout_seg){off, store, region,
                                  (uint32_t)y, (uint32_t)x, (uint32_t)w});
                if (rc)
                    return rc;
            }
            continue;
        }
        const int32_t *row = mask + y * lay->nx;
        for (size_t x = c->x0; x < c->x0 + c->w;) {
            size_t end = x + 1;
            while (end < c->x0 + c->w && row[end] == row[x])
                end++;
            size_t s = share_of(m, c, row[x]);
            uint32_t region = (uint32_t)layout_region_pos(lay, row[x]);
            size_t off = tiles ? lay->share_off[s] + dy * tw + (x - c->x0)
                               : lay->share_off[s] + done[s];
            int rc = push_seg(lay, cap, (layout_seg){
                off, mixed_store, region, (uint32_t)y, (uint32_t)x,
                (uint32_t)(end - x)});
            if (rc)
                return rc;
            done[s] += end - x;
            x = end;
        }
    }
    return RASTER_OK;
}

/* Groups the segments by region (a counting sort, grid order kept). */
static int index_regions(layout *lay)
{
    size_t nr = lay->nregions;
    lay->region_first = raster_calloc(nr + 1, sizeof *lay->region_first);
    lay->region_segs = raster_reallocarray(NULL, lay->nsegs ? lay->nsegs : 1,
                                           sizeof *lay->region_segs);
    if (!lay->region_first || !lay->region_segs)
        return raster_fail(RASTER_ENOMEM, "out of memory planning a layout");
    for (size_t i = 0; i < lay->nsegs; i++)
        lay->region_first[lay->segs[i].region + 1]++;
    for (size_t r = 0; r < nr; r++)
        lay->region_first[r + 1] += lay->region_first[r];
    size_t *next = raster_reallocarray(NULL, nr ? nr : 1, sizeof *next);
    if (!next)
        return raster_fail(RASTER_ENOMEM, "out of memory planning a layout");
    memcpy(next, lay->region_first, nr * sizeof *next);
    for (size_t i = 0; i < lay->nsegs; i++)
        lay->region_segs[next[lay->segs[i].region]++] = i;
    raster_free(next);
    return RASTER_OK;
}

int layout_build(const raster_mesh *m, const int32_t *mask, layout_mode mode,
                 layout **out)
{
    *out = NULL;
    if (m->ny > UINT32_MAX || m->nx > UINT32_MAX || m->nregions >= UINT32_MAX)
        return raster_fail(RASTER_EOVERFLOW,
                           "grid %zu x %zu is too large to lay out", m->ny,
                           m->nx);
    layout *lay = raster_calloc(1, sizeof *lay);
    size_t *done = NULL;
    int rc = RASTER_OK;
    if (!lay)
        return raster_fail(RASTER_ENOMEM, "out of memory planning a layout");
    lay->mode = mode;
    lay->ny = m->ny;
    lay->nx = m->nx;
    lay->tile_h = m->tile_h;
    lay->tile_w = m->tile_w;
    lay->nregions = m->nregions;
    lay->nchunks = m->nchunks;
    lay->nshares = m->nshares;
    size_t nr = m->nregions;
    lay->ids = raster_reallocarray(NULL, nr, sizeof *lay->ids);
    lay->pure_cells = raster_calloc(nr, sizeof(size_t));
    lay->pure_store = raster_calloc(nr, sizeof(size_t));
    lay->mixed_off = raster_calloc(nr, sizeof(size_t));
    lay->mixed_cells = raster_calloc(nr, sizeof(size_t));
    lay->chunk_off = raster_calloc(m->nchunks, sizeof(size_t));
    lay->share_off = raster_calloc(m->nshares, sizeof(size_t));
    done = raster_calloc(m->nshares, sizeof *done);
    if (!lay->ids || !lay->pure_cells || !lay->pure_store || !lay->mixed_off ||
        !lay->mixed_cells || !lay->chunk_off || !lay->share_off ||
        !done) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory planning a layout");
        goto done;
    }
    for (size_t r = 0; r < nr; r++)
        lay->ids[r] = region_index_at(m, r)->id;
    if (mode == LAYOUT_TILES) {
        assign_tiles(lay, m);
    } else { /* done: room for nregions, nshares >= nregions */
        assign_offsets(lay, m, mode == LAYOUT_SHARED, done);
        memcpy(lay->pure_store, lay->pure_cells, nr * sizeof(size_t));
    }
    memset(done, 0, m->nshares * sizeof *done);

    size_t cap = 0;
    for (size_t c0 = 0; c0 < m->nchunks && rc == RASTER_OK;) {
        size_t c1 = c0 + 1, y0 = m->chunks[c0].y0, h = m->chunks[c0].h;
        while (c1 < m->nchunks && m->chunks[c1].y0 == y0)
            c1++;
        for (size_t y = y0; y < y0 + h && rc == RASTER_OK; y++)
            rc = emit_row(lay, m, mask, c0, c1, y, done, &cap);
        c0 = c1;
    }
    if (rc == RASTER_OK)
        rc = index_regions(lay);
done:
    raster_free(done);
    if (rc) {
        layout_free(lay);
        return rc;
    }
    *out = lay;
    return RASTER_OK;
}
