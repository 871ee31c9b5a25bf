/*
 * bandwidth.h - rasterstat --measure-bw / --bw: this machine's sequential
 * and random read bandwidth, for the RASTER paper's Eq. 2 (predicted I/O
 * speedup = data reduction rate x sequential / random bandwidth). Not part
 * of libraster's API.
 */
#ifndef RASTER_BANDWIDTH_H
#define RASTER_BANDWIDTH_H

#include <stddef.h>

/* Default scratch file size; RASTER_BW_MB overrides it (in MiB). */
#define BW_DEFAULT_MB 256

/* Bandwidth figures in MB/s (10^6 bytes per second), measured or given. */
typedef struct bw_figures {
    double seq_mbs, rand_mbs;
    int measured;           /* 0: given with --bw */
    /* the rest only when measured */
    char dir[256];          /* where the scratch file was */
    size_t file_bytes;      /* scratch file size */
    size_t seq_read_bytes;  /* size of one sequential read */
    size_t rand_read_bytes; /* size of one random read (a tile's bytes) */
    size_t rand_reads;      /* random reads timed */
    double seq_secs, rand_secs;
    double resident;        /* share of the file still cached after the
                             * evictions (mincore), 0..1; -1 unknown */
    int in_memory;          /* scratch directory on tmpfs/ramfs */
} bw_figures;

/* Parses "SEQ,RAND" (MB/s, positive finite numbers) into *f; 0 on success,
 * -1 on a syntax error. */
int bw_parse(const char *text, bw_figures *f);

/* Measures on a scratch file of RASTER_BW_MB MiB (default BW_DEFAULT_MB) in
 * RASTER_BW_DIR, else $TMPDIR, else /tmp: written once with fsync, then,
 * each time after fdatasync and posix_fadvise(POSIX_FADV_DONTNEED), read
 * whole in 4 MiB reads (sequential), and in reads of `rand_bytes` (rounded
 * up to whole 4 KiB pages, at least one) at distinct random offsets aligned
 * to that size (random; at most about 3 s of reads). The file is unlinked
 * as soon as it is open, so nothing is left behind. Prints a message on
 * stderr and returns -1 on failure; 0 and *f filled on success. */
int bw_measure(size_t rand_bytes, bw_figures *f);

#endif
