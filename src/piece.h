/*
 * piece.h - the unit every data path hands to a mover (chunkio.c,
 * direct.c, parwrite.c): `len` consecutive cells of one store to `len`
 * consecutive cells of one plane of the caller's buffer.
 */
#ifndef RASTER_PIECE_H
#define RASTER_PIECE_H

#include <stdint.h>

typedef struct piece {
    uint64_t soff;  /* first cell in the store */
    uint64_t uoff;  /* first cell in the caller's plane */
    uint32_t store;
    uint32_t len;
} piece;

#endif
