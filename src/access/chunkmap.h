/*
 * chunkmap.h - every chunk's byte offset in one pass over a dataset's
 * chunk index.
 *
 * HDF5 1.10 answers H5Dget_chunk_info_by_coord by iterating the dataset's
 * whole chunk B-tree, so looking up k chunks of a store of n costs k * n
 * visits (22 M instructions for a thin column band of the bench file, and
 * quadratic in the number of records). chunkmap reads the version-1 B-tree
 * that HDF5 1.8-format files (netCDF-4's) index chunked datasets with,
 * once, straight from the file.
 */
#ifndef RASTER_CHUNKMAP_H
#define RASTER_CHUNKMAP_H

#include <stddef.h>
#include <stdint.h>

/* Fills addr[0..total) with the file offset of every chunk of HDF5
 * dataset `did` (an hid_t), -1 for chunks never written. The dataset has
 * rank no+1, chunk shape ck[0..no] and nck[d] chunks along dimension d;
 * chunk (c0, .., cno) is entry ((c0 * nck[1] + c1) ...) * nck[no] + cno.
 * elem is the element size. fd is the file, open for reading.
 *
 * Returns 1 when every entry was filled, 0 when the index is not one this
 * walks (another layout version or index type, filters, a parse that
 * disagrees with HDF5's own answer for the chunks it checks, a read
 * error): then addr is untouched and the caller asks HDF5 per chunk; -1
 * when memory ran out (addr untouched). */
int chunkmap_read(int fd, int64_t did, int no, const size_t *ck,
                  const size_t *nck, size_t elem, int64_t *addr,
                  size_t total);

/* chunkmap_read() of a filtered dataset: also fills sizes[0..total) with
 * each written chunk's stored bytes. Returns 0 as well when any chunk's
 * filter mask says a filter was skipped, or a size is 0 or larger than
 * a filter makes a chunk. */
int chunkmap_read_sized(int fd, int64_t did, int no, const size_t *ck,
                        const size_t *nck, size_t elem, int64_t *addr,
                        uint32_t *sizes, size_t total);

#endif
