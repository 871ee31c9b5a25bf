/*
 * index.h - Chunk Index Manager: region id -> the chunks holding its cells,
 * with per-region statistics, built from a mesh's chunks and shares.
 */
#ifndef RASTER_INDEX_H
#define RASTER_INDEX_H

#include "mesh.h"

/* Builds mesh->regions / by_id / region_chunks from mesh->chunks and
 * mesh->shares. On failure leaves the index empty and returns the code. */
int region_index_build(raster_mesh *mesh);

/* Releases the index part of a mesh; safe on an empty index. */
void region_index_free(raster_mesh *mesh);

/* The region with `id`, or NULL. */
const raster_region_stats *region_index_find(const raster_mesh *mesh,
                                             int32_t id, const size_t **chunks,
                                             size_t *nchunks);

/* The i-th region in ascending id order (i < mesh->nregions). */
const raster_region_stats *region_index_at(const raster_mesh *mesh, size_t i);

#endif
