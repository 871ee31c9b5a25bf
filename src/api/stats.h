/*
 * stats.h - regional statistics (raster_region_statistics, raster.h): the
 * internal knob the tests turn.
 */
#ifndef RASTER_STATS_H
#define RASTER_STATS_H

#include <stddef.h>

/* Bytes of values one block of the streaming pass reads (at least one
 * record is read); tests make it small to cross block boundaries. */
extern size_t stats_block_bytes;

/* 0: statistics always from the data, never the stored ones (tests). */
extern int stats_use_stored;

#endif
