/*
 * mesh.c - Region Mesh Builder: cuts a 2-D region mask into fixed tiles and
 * turns them into RASTER chunks.
 *
 * A tile whose cells share one id is pure; runs of horizontally adjacent pure
 * tiles of one id in one tile-row merge into one chunk of h x (k*w). Every
 * other tile is mixed and stays a chunk of its own. Each chunk carries its
 * "shares": for every region present, its cell count and the bounding box of
 * those cells, which the index (index.c) folds into per-region statistics.
 *
 * The mask is scanned row by row within each tile-row, so memory is touched
 * in order; only mixed tiles are scanned a second time to count their ids.
 */
#include "mesh.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"

/* Distinct ids a mixed tile may hold before counting switches from a small
 * linear table to sorting the tile's cells. Real masks rarely exceed 4. */
#define SMALL_SHARES 16

typedef struct builder {
    raster_mesh *mesh;
    const int32_t *mask;
    size_t chunk_cap, share_cap;
    struct cell_ref *scratch; /* th * tw entries, for many-id tiles */
} builder;

typedef struct cell_ref {
    int32_t id;
    size_t dy, dx;
} cell_ref;

static int add_chunk(builder *b, size_t y0, size_t x0, size_t h, size_t w,
                     int mixed)
{
    raster_mesh *m = b->mesh;
    int rc = raster_grow(&m->chunks, &b->chunk_cap, m->nchunks + 1,
                         sizeof *m->chunks);
    if (rc)
        return rc;
    m->chunks[m->nchunks++] = (mesh_chunk){.y0 = y0, .x0 = x0, .h = h, .w = w,
                                           .share0 = m->nshares,
                                           .nshares = 0, .mixed = mixed};
    return RASTER_OK;
}

/* Appends one share to the last chunk. */
static int add_share(builder *b, const raster_share *s)
{
    raster_mesh *m = b->mesh;
    int rc = raster_grow(&m->shares, &b->share_cap, m->nshares + 1,
                         sizeof *m->shares);
    if (rc)
        return rc;
    m->shares[m->nshares++] = *s;
    m->chunks[m->nchunks - 1].nshares++;
    return RASTER_OK;
}

static void share_extend(raster_share *s, size_t y, size_t x)
{
    s->cells++;
    if (y < s->y0) s->y0 = y;
    if (y + 1 > s->y1) s->y1 = y + 1;
    if (x < s->x0) s->x0 = x;
    if (x + 1 > s->x1) s->x1 = x + 1;
}

static int cmp_share(const void *a, const void *b)
{
    int32_t x = ((const raster_share *)a)->id, y = ((const raster_share *)b)->id;
    return (x > y) - (x < y);
}

static int cmp_cell(const void *a, const void *b)
{
    const cell_ref *p = a, *q = b;
    if (p->id != q->id)
        return (p->id > q->id) - (p->id < q->id);
    if (p->dy != q->dy)
        return (p->dy > q->dy) - (p->dy < q->dy);
    return (p->dx > q->dx) - (p->dx < q->dx);
}

/* Counts a mixed tile with many ids by sorting its cells by id. The scratch
 * buffer is only allocated when a tile first needs it. */
static int count_by_sorting(builder *b, size_t y0, size_t x0, size_t h,
                            size_t w)
{
    size_t nx = b->mesh->nx, n = 0;
    if (!b->scratch) {
        b->scratch = raster_reallocarray(NULL, b->mesh->tile_h *
                                         b->mesh->tile_w, sizeof *b->scratch);
        if (!b->scratch)
            return raster_fail(RASTER_ENOMEM,
                               "out of memory counting a tile of %zu x %zu",
                               b->mesh->tile_h, b->mesh->tile_w);
    }
    for (size_t dy = 0; dy < h; dy++) {
        const int32_t *row = b->mask + (y0 + dy) * nx + x0;
        for (size_t dx = 0; dx < w; dx++)
            b->scratch[n++] = (cell_ref){row[dx], dy, dx};
    }
    qsort(b->scratch, n, sizeof *b->scratch, cmp_cell);
    for (size_t i = 0; i < n;) {
        raster_share s = {.id = b->scratch[i].id, .cells = 0,
                          .y0 = SIZE_MAX, .x0 = SIZE_MAX, .y1 = 0, .x1 = 0};
        for (; i < n && b->scratch[i].id == s.id; i++)
            share_extend(&s, y0 + b->scratch[i].dy, x0 + b->scratch[i].dx);
        int rc = add_share(b, &s);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* Records the shares of the mixed tile at (y0, x0). */
static int add_mixed_tile(builder *b, size_t y0, size_t x0, size_t h, size_t w)
{
    int rc = add_chunk(b, y0, x0, h, w, 1);
    if (rc)
        return rc;
    raster_share small[SMALL_SHARES];
    size_t nsmall = 0, last = 0, nx = b->mesh->nx;
    for (size_t dy = 0; dy < h; dy++) {
        const int32_t *row = b->mask + (y0 + dy) * nx + x0;
        for (size_t dx = 0; dx < w; dx++) {
            int32_t id = row[dx];
            if (nsmall == 0 || small[last].id != id) {
                size_t k = 0;
                while (k < nsmall && small[k].id != id)
                    k++;
                if (k == nsmall) {
                    if (nsmall == SMALL_SHARES)
                        return count_by_sorting(b, y0, x0, h, w);
                    small[nsmall++] = (raster_share){
                        .id = id, .cells = 0, .y0 = SIZE_MAX,
                        .x0 = SIZE_MAX, .y1 = 0, .x1 = 0};
                }
                last = k;
            }
            share_extend(&small[last], y0 + dy, x0 + dx);
        }
    }
    qsort(small, nsmall, sizeof *small, cmp_share);
    for (size_t k = 0; k < nsmall; k++) {
        rc = add_share(b, &small[k]);
        if (rc)
            return rc;
    }
    return RASTER_OK;
}

/* Turns the tiles of the band of rows [y0, y0+h) into chunks. `first` and
 * `pure` are scratch arrays of one entry per tile column. */
static int build_band(builder *b, size_t y0, size_t h, int32_t *first,
                      unsigned char *pure)
{
    raster_mesh *m = b->mesh;
    size_t nx = m->nx, tw = m->tile_w, ntx = (nx + tw - 1) / tw;

    const int32_t *row = b->mask + y0 * nx;
    for (size_t tx = 0; tx < ntx; tx++) {
        first[tx] = row[tx * tw];
        pure[tx] = 1;
    }
    for (size_t dy = 0; dy < h; dy++) {
        row = b->mask + (y0 + dy) * nx;
        for (size_t tx = 0; tx < ntx; tx++) {
            if (!pure[tx])
                continue;
            size_t x1 = tx * tw + tw < nx ? tx * tw + tw : nx;
            int32_t id = first[tx];
            for (size_t x = tx * tw; x < x1; x++) {
                if (row[x] != id) {
                    pure[tx] = 0;
                    break;
                }
            }
        }
    }

    for (size_t tx = 0; tx < ntx;) {
        size_t x0 = tx * tw;
        if (!pure[tx]) {
            size_t w = x0 + tw < nx ? tw : nx - x0;
            int rc = add_mixed_tile(b, y0, x0, h, w);
            if (rc)
                return rc;
            tx++;
            continue;
        }
        size_t end = tx + 1;
        while (end < ntx && pure[end] && first[end] == first[tx])
            end++;
        size_t x1 = end * tw < nx ? end * tw : nx;
        int rc = add_chunk(b, y0, x0, h, x1 - x0, 0);
        if (rc)
            return rc;
        raster_share s = {.id = first[tx], .cells = h * (x1 - x0),
                          .y0 = y0, .x0 = x0, .y1 = y0 + h, .x1 = x1};
        rc = add_share(b, &s);
        if (rc)
            return rc;
        tx = end;
    }
    return RASTER_OK;
}

static int check_args(const int32_t *mask, size_t ny, size_t nx, size_t th,
                      size_t tw, raster_mesh **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    if (!mask)
        return raster_fail(RASTER_EINVAL, "mask is NULL");
    if (ny == 0 || nx == 0)
        return raster_fail(RASTER_EINVAL, "empty grid %zu x %zu", ny, nx);
    if (th == 0 || tw == 0)
        return raster_fail(RASTER_EINVAL,
                           "tile %zu x %zu: sizes must be at least 1", th, tw);
    if (th > ny || tw > nx)
        return raster_fail(RASTER_EINVAL,
                           "tile %zu x %zu is larger than the grid %zu x %zu",
                           th, tw, ny, nx);
    size_t cells;
    if (raster_mul_overflows(ny, nx, &cells))
        return raster_fail(RASTER_EOVERFLOW,
                           "grid %zu x %zu has too many cells", ny, nx);
    size_t tile_cells;
    if (raster_mul_overflows(th, tw, &tile_cells) ||
        raster_mul_overflows(tile_cells, sizeof(cell_ref), &tile_cells))
        return raster_fail(RASTER_EOVERFLOW, "tile %zu x %zu is too large", th,
                           tw);
    return RASTER_OK;
}

int mesh_cut(const int32_t *mask, size_t ny, size_t nx, size_t tile_h,
             size_t tile_w, raster_mesh **out)
{
    int rc = check_args(mask, ny, nx, tile_h, tile_w, out);
    if (out)
        *out = NULL;
    if (rc)
        return rc;

    raster_mesh *m = raster_calloc(1, sizeof *m);
    size_t ntx = (nx + tile_w - 1) / tile_w;
    int32_t *first = raster_reallocarray(NULL, ntx, sizeof *first);
    unsigned char *pure = raster_malloc(ntx);
    builder b = {.mesh = m, .mask = mask};
    if (!m || !first || !pure) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory building a mesh");
        goto done;
    }
    m->ny = ny;
    m->nx = nx;
    m->tile_h = tile_h;
    m->tile_w = tile_w;
    for (size_t y0 = 0; y0 < ny && rc == RASTER_OK; y0 += tile_h)
        rc = build_band(&b, y0, y0 + tile_h <= ny ? tile_h : ny - y0, first,
                        pure);
done:
    raster_free(first);
    raster_free(pure);
    raster_free(b.scratch);
    if (rc) {
        mesh_release(m);
        return rc;
    }
    *out = m;
    return RASTER_OK;
}

void mesh_release(raster_mesh *mesh)
{
    if (!mesh)
        return;
    raster_free(mesh->chunks);
    raster_free(mesh->shares);
    raster_free(mesh);
}

void raster_mesh_shape(const raster_mesh *mesh, size_t *ny, size_t *nx,
                       size_t *tile_h, size_t *tile_w)
{
    if (ny) *ny = mesh->ny;
    if (nx) *nx = mesh->nx;
    if (tile_h) *tile_h = mesh->tile_h;
    if (tile_w) *tile_w = mesh->tile_w;
}

size_t raster_mesh_nchunks(const raster_mesh *mesh)
{
    return mesh ? mesh->nchunks : 0;
}

int raster_mesh_chunk(const raster_mesh *mesh, size_t i, raster_chunk *out)
{
    if (!mesh || !out)
        return raster_fail(RASTER_EINVAL, "NULL mesh or output");
    if (i >= mesh->nchunks)
        return raster_fail(RASTER_EINVAL,
                           "chunk %zu out of range (mesh has %zu)", i,
                           mesh->nchunks);
    const mesh_chunk *c = &mesh->chunks[i];
    *out = (raster_chunk){.id = i, .y0 = c->y0, .x0 = c->x0, .h = c->h,
                          .w = c->w, .mixed = c->mixed,
                          .nshares = c->nshares,
                          .shares = mesh->shares + c->share0};
    return RASTER_OK;
}
