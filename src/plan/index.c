/*
 * index.c - Chunk Index Manager: the table from region id to the chunks that
 * hold its cells (a mixed chunk is listed under every region present in it),
 * and the per-region statistics derived from it, including the paper's data
 * reduction rate (Eq. 1): tile-aligned bounding-box cells / cells read.
 */
#include "index.h"

#include <stdlib.h>

#include "alloc.h"
#include "error.h"

#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) raster_malloc(sz)
#define uthash_free(ptr, sz) raster_free(ptr)
/* `hash_oom` is a local of the function using the HASH_* macro. */
#define uthash_nonfatal_oom(elt) (hash_oom = 1)
#include <uthash.h>

typedef struct region_entry {
    int32_t id; /* hash key */
    raster_region_stats stats;
    size_t chunk0, nchunks; /* slice of mesh->region_chunks */
    UT_hash_handle hh;
} region_entry;

static int cmp_entry(const void *a, const void *b)
{
    int32_t x = (*(region_entry *const *)a)->id;
    int32_t y = (*(region_entry *const *)b)->id;
    return (x > y) - (x < y);
}

static size_t align_down(size_t v, size_t step) { return v / step * step; }

static size_t align_up(size_t v, size_t step, size_t limit)
{
    size_t up = (v + step - 1) / step * step;
    return up < limit ? up : limit;
}

/* Folds one chunk's share into its region's statistics. */
static void account(region_entry *e, const mesh_chunk *c,
                    const raster_share *s)
{
    raster_region_stats *st = &e->stats;
    if (e->nchunks == 0) {
        st->bbox_y0 = s->y0;
        st->bbox_x0 = s->x0;
        st->bbox_y1 = s->y1;
        st->bbox_x1 = s->x1;
    }
    e->nchunks++;
    st->cells += s->cells;
    if (c->mixed)
        st->mixed_chunks++;
    else
        st->pure_chunks++;
    st->read_cells += c->h * c->w;
    if (s->y0 < st->bbox_y0) st->bbox_y0 = s->y0;
    if (s->x0 < st->bbox_x0) st->bbox_x0 = s->x0;
    if (s->y1 > st->bbox_y1) st->bbox_y1 = s->y1;
    if (s->x1 > st->bbox_x1) st->bbox_x1 = s->x1;
}

static void finish(const raster_mesh *m, raster_region_stats *st)
{
    st->tbox_y0 = align_down(st->bbox_y0, m->tile_h);
    st->tbox_x0 = align_down(st->bbox_x0, m->tile_w);
    st->tbox_y1 = align_up(st->bbox_y1, m->tile_h, m->ny);
    st->tbox_x1 = align_up(st->bbox_x1, m->tile_w, m->nx);
    st->bbox_cells = (st->bbox_y1 - st->bbox_y0) * (st->bbox_x1 - st->bbox_x0);
    st->bbox_tile_cells =
        (st->tbox_y1 - st->tbox_y0) * (st->tbox_x1 - st->tbox_x0);
    st->data_reduction_rate =
        (double)st->bbox_tile_cells / (double)st->read_cells;
}

int region_index_build(raster_mesh *m)
{
    int hash_oom = 0;
    int rc = RASTER_OK;

    /* Pass 1: one entry per distinct id, with its statistics. */
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        for (size_t k = 0; k < c->nshares; k++) {
            const raster_share *s = &m->shares[c->share0 + k];
            region_entry *e;
            HASH_FIND(hh, m->by_id, &s->id, sizeof s->id, e);
            if (!e) {
                e = raster_calloc(1, sizeof *e);
                if (!e) {
                    rc = raster_fail(RASTER_ENOMEM, "out of memory indexing "
                                     "region %d", (int)s->id);
                    goto fail;
                }
                e->id = s->id;
                e->stats.id = s->id;
                HASH_ADD(hh, m->by_id, id, sizeof e->id, e);
                if (hash_oom) {
                    raster_free(e);
                    rc = raster_fail(RASTER_ENOMEM, "out of memory indexing "
                                     "region %d", (int)s->id);
                    goto fail;
                }
                m->nregions++;
            }
            account(e, c, s);
        }
    }

    /* Ascending order for listing, and one pool for all chunk lists. */
    m->regions = raster_reallocarray(NULL, m->nregions, sizeof *m->regions);
    m->region_chunks = raster_reallocarray(NULL, m->nshares,
                                           sizeof *m->region_chunks);
    if (!m->regions || !m->region_chunks) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory indexing %zu regions",
                         m->nregions);
        goto fail;
    }
    size_t i = 0, next = 0;
    for (region_entry *e = m->by_id; e; e = e->hh.next)
        m->regions[i++] = e;
    qsort(m->regions, m->nregions, sizeof *m->regions, cmp_entry);
    for (i = 0; i < m->nregions; i++) {
        region_entry *e = m->regions[i];
        finish(m, &e->stats);
        e->chunk0 = next;
        next += e->nchunks;
        e->nchunks = 0;
    }

    /* Pass 2: chunk lists, ascending because chunks are visited in order. */
    for (size_t ci = 0; ci < m->nchunks; ci++) {
        const mesh_chunk *c = &m->chunks[ci];
        for (size_t k = 0; k < c->nshares; k++) {
            region_entry *e;
            HASH_FIND(hh, m->by_id, &m->shares[c->share0 + k].id,
                      sizeof(int32_t), e);
            m->region_chunks[e->chunk0 + e->nchunks++] = ci;
        }
    }
    return RASTER_OK;

fail:
    region_index_free(m);
    return rc;
}

void region_index_free(raster_mesh *m)
{
    region_entry *e, *tmp;
    HASH_ITER(hh, m->by_id, e, tmp) {
        HASH_DEL(m->by_id, e);
        raster_free(e);
    }
    raster_free(m->regions);
    raster_free(m->region_chunks);
    m->regions = NULL;
    m->region_chunks = NULL;
    m->nregions = 0;
}

const raster_region_stats *region_index_find(const raster_mesh *m, int32_t id,
                                             const size_t **chunks,
                                             size_t *nchunks)
{
    region_entry *e;
    HASH_FIND(hh, m->by_id, &id, sizeof id, e);
    if (!e)
        return NULL;
    if (chunks)
        *chunks = m->region_chunks + e->chunk0;
    if (nchunks)
        *nchunks = e->nchunks;
    return &e->stats;
}

const raster_region_stats *region_index_at(const raster_mesh *m, size_t i)
{
    return &m->regions[i]->stats;
}

size_t raster_mesh_nregions(const raster_mesh *mesh)
{
    return mesh ? mesh->nregions : 0;
}

int raster_mesh_region(const raster_mesh *mesh, size_t i,
                       raster_region_stats *out)
{
    if (!mesh || !out)
        return raster_fail(RASTER_EINVAL, "NULL mesh or output");
    if (i >= mesh->nregions)
        return raster_fail(RASTER_EINVAL,
                           "region index %zu out of range (mesh has %zu)", i,
                           mesh->nregions);
    *out = *region_index_at(mesh, i);
    return RASTER_OK;
}

int raster_mesh_region_stats(const raster_mesh *mesh, int32_t id,
                             raster_region_stats *out)
{
    if (!mesh || !out)
        return raster_fail(RASTER_EINVAL, "NULL mesh or output");
    const raster_region_stats *st = region_index_find(mesh, id, NULL, NULL);
    if (!st)
        return raster_fail(RASTER_ENOTFOUND, "no region %d in the mask",
                           (int)id);
    *out = *st;
    return RASTER_OK;
}

int raster_mesh_region_chunks(const raster_mesh *mesh, int32_t id,
                              const size_t **chunks, size_t *n)
{
    if (!mesh || !chunks || !n)
        return raster_fail(RASTER_EINVAL, "NULL mesh or output");
    if (!region_index_find(mesh, id, chunks, n))
        return raster_fail(RASTER_ENOTFOUND, "no region %d in the mask",
                           (int)id);
    return RASTER_OK;
}

/* The public mesh is the cut (mesh.c) with its region index: built
 * together, freed together. */
int raster_mesh_build(const int32_t *mask, size_t ny, size_t nx,
                      size_t tile_h, size_t tile_w, raster_mesh **out)
{
    int rc = mesh_cut(mask, ny, nx, tile_h, tile_w, out);
    if (rc == RASTER_OK && (rc = region_index_build(*out)) != RASTER_OK) {
        raster_mesh_free(*out);
        *out = NULL;
    }
    return rc;
}

void raster_mesh_free(raster_mesh *mesh)
{
    if (!mesh)
        return;
    region_index_free(mesh);
    mesh_release(mesh);
}
