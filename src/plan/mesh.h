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

/* The mesh of a mask without its region index (index.c builds that in
 * raster_mesh_build): chunks and shares, checked arguments. */
int mesh_cut(const int32_t *mask, size_t ny, size_t nx, size_t tile_h,
             size_t tile_w, raster_mesh **out);

/* Frees what mesh_cut made (NULL-safe); raster_mesh_free frees the index
 * too. */
void mesh_release(raster_mesh *mesh);

#endif
