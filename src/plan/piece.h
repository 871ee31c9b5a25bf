/*
 * piece.h - the unit every data path hands to a mover (chunkio.c,
 * direct.c, parwrite.c): `len` consecutive cells of one store to `len`
 * consecutive cells of one plane of the caller's buffer.
 *
 * A strided piece (rep > 0) is rep + 1 such rows, row r at store cell
 * soff + r * sstep and plane cell uoff + r * ustep (sstep, ustep >= len):
 * a column of a thin band through a tile is one piece, not one a value.
 * Only read-only hyperslab reads make them (tiles.c); spans.c moves
 * them on its direct path and turns them back into plain pieces for any
 * other (spans_unstride).
 */
#ifndef RASTER_PIECE_H
#define RASTER_PIECE_H

#include <stdint.h>

/* 32 bytes: a full grid's pieces are walked several times per read, and
 * wider ones made such reads measurably slower (docs/PERFORMANCE.md). */
typedef struct piece {
    uint64_t soff;  /* first cell in the store */
    uint64_t uoff;  /* first cell in the caller's plane */
    uint32_t store;
    uint32_t len;
    uint32_t rep;   /* further rows (0: a plain piece) */
    uint16_t sstep; /* store cells from one row to the next */
    uint16_t ustep; /* plane cells from one row to the next */
} piece;

/* Largest row step of a strided piece. */
#define PIECE_STEP_MAX UINT16_MAX

/* Cells piece p moves. */
static inline uint64_t piece_cells(const piece *p)
{
    return (uint64_t)p->len * ((uint64_t)p->rep + 1);
}

/* One past p's last store cell. */
static inline uint64_t piece_send(const piece *p)
{
    return p->soff + (uint64_t)p->rep * p->sstep + p->len;
}

#endif
