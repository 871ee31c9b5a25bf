/*
 * unfilter.h - undoing HDF5's deflate, shuffle and fletcher32 filters on
 * a chunk's stored bytes, without HDF5: the read path's inflater
 * (inflate.c), one state per reading thread.
 */
#ifndef RASTER_UNFILTER_H
#define RASTER_UNFILTER_H

#include <stddef.h>
#include <stdint.h>

/* One thread's decompressor and buffers. */
typedef struct unfilter unfilter;

/* A new state, or NULL when memory ran out. */
unfilter *unfilter_new(void);

void unfilter_free(unfilter *u);

/* A buffer of at least `bytes` for a chunk's stored bytes (valid until
 * the next call on u), or NULL (RASTER_ENOMEM set). */
unsigned char *unfilter_input(unfilter *u, size_t bytes);

/* Undoes filters filt[0..nfilt) (HDF5 ids, in the order they were
 * applied when writing) on the `csize` bytes unfilter_input() gave,
 * which must give exactly `chunk_bytes` bytes of `elem`-byte values:
 * *out points to them (in u, valid until the next call). A corrupt
 * deflate stream, a checksum that does not match, or a wrong size is
 * RASTER_EFORMAT (netCDF status NC_EHDFERR, as netCDF's own read gives)
 * naming `name`; RASTER_ENOMEM. */
int unfilter_chunk(unfilter *u, const unsigned char *filt, int nfilt,
                   size_t elem, size_t chunk_bytes, size_t csize,
                   const char *name, const unsigned char **out);

/* As unfilter_chunk, but a shuffle that is the last filter to undo (the
 * first applied, as netCDF applies it) is left to the caller: then
 * *shuffled is 1 and *out holds the shuffled bytes, which
 * unfilter_unshuffle() takes apart straight into the caller's buffer
 * (saving a pass over every byte); else *shuffled is 0. */
int unfilter_chunk_keep_shuffle(unfilter *u, const unsigned char *filt,
                                int nfilt, size_t elem, size_t chunk_bytes,
                                size_t csize, const char *name,
                                const unsigned char **out, int *shuffled);

/* Values [first, first + count) of the `n` `elem`-byte values whose bytes
 * src holds shuffled (byte k of every value together), unshuffled into
 * dst (count * elem bytes). n * elem must be the whole of src. */
void unfilter_unshuffle(unsigned char *dst, const unsigned char *src,
                        size_t elem, size_t n, size_t first, size_t count);

/* The inflater built in: "libdeflate" or "zlib". */
const char *unfilter_inflater(void);

/* HDF5's Fletcher-32 of n bytes (H5_checksum_fletcher32's definition). */
uint32_t unfilter_fletcher32(const unsigned char *p, size_t n);

#endif
