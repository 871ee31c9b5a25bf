/*
 * suggest.h - rasterstat --suggest-tile: builds the mesh of a mask for a set
 * of candidate tile shapes, scores each (data reduction rate against chunk
 * count and tile size) and prints the table with the recommendation. Not
 * part of libraster's API.
 */
#ifndef RASTER_SUGGEST_H
#define RASTER_SUGGEST_H

#include <stddef.h>
#include <stdint.h>

#include "raster.h"

/* Default per-request overhead, in bytes of transfer it is worth. */
#define SUGGEST_DEFAULT_OVERHEAD (64 * 1024)

typedef struct suggest_opts {
    const char *file, *var; /* what the mask belongs to, for the output */
    int is_file;            /* 1: a raster file's variable, 0: a mask */
    size_t base_h, base_w;  /* the current tile (--chunk, or the file's); 0
                             * when none */
    size_t elem;            /* bytes per value */
    size_t outer;           /* values per cell in one chunk: the product of
                             * the chunk's outer sizes (1 for 2-D) */
    size_t overhead;        /* per-request overhead in bytes */
    const int32_t *ids;     /* regions to score; all when nids is 0 */
    size_t nids;
    int json;
} suggest_opts;

/* Scores the candidates for `mask` and prints the table (or JSON) on
 * stdout. @return CLI_OK, or CLI_EINPUT after a message on stderr (grid too
 * small to compare tiles, out of memory). */
int suggest_tile(const raster_mask *mask, const suggest_opts *o);

#endif
