/*
 * mesh.h - internal layout of a raster_mesh, shared by the Region Mesh
 * Builder (mesh.c) and the Chunk Index Manager (index.c).
 */
#ifndef RASTER_MESH_H
#define RASTER_MESH_H

#include "raster.h"

/* A chunk as stored: its shares are mesh->shares[share0 .. share0+nshares). */
typedef struct mesh_chunk {
    size_t y0, x0, h, w;
    size_t share0, nshares;
    int mixed;
} mesh_chunk;

struct region_entry;

struct raster_mesh {
    size_t ny, nx, tile_h, tile_w;
    mesh_chunk *chunks;
    size_t nchunks;
    raster_share *shares;     /* per chunk, ascending id */
    size_t nshares;
    /* Chunk Index Manager state (index.c) */
    struct region_entry **regions; /* ascending id */
    size_t nregions;
    struct region_entry *by_id;    /* uthash head */
    size_t *region_chunks;         /* pool of every region's chunk list */
};

#endif
