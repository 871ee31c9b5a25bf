/*
 * prefetch.h - a read's byte ranges brought from disk into the page cache
 * ahead of the read.
 *
 * The ranges, sorted by offset, are merged into stretches through holes
 * of up to 1 MiB no longer than the range before them. Stretches from the
 * load minimum on (8 MiB; at most 1 GiB a read) are loaded front to back
 * 8 MiB at a time (sendfile to /dev/null): the kernel's sequential
 * read-ahead then fetches them in large requests, where ranges announced
 * one by one (WILLNEED) came in as 4 KiB pages in the order asked. The
 * other ranges are announced, so that the disk serves them while the long
 * stretches load (docs/PERFORMANCE.md, "Cold reads").
 *
 * The load runs on a helper thread when the caller asks to read behind
 * it (prefetch_wait), else before prefetch_begin returns. Nothing here
 * fails: a range that cannot be loaded is left to the caller's reads,
 * which report the error.
 */
#ifndef RASTER_PREFETCH_H
#define RASTER_PREFETCH_H

#include <stddef.h>
#include <sys/types.h>

typedef struct prefetch prefetch;

/* prefetch_begin's flags. */
/* Load on a helper thread and return at once, the caller reading behind
 * the load with prefetch_wait; without it the load ends before
 * prefetch_begin returns. */
#define PREFETCH_BEHIND 1
/* The last prefetch_tail(fd) bytes of each long stretch are announced
 * (POSIX_FADV_WILLNEED: exactly those bytes), not loaded: the kernel's
 * sequential read-ahead runs up to one and a half windows ahead of the
 * load, so loading to a stretch's end also read that much past it (41
 * MB for the Indian Ocean of the bench file, whose 80 MB lie in 6
 * stretches; 8 MiB windows here), and queued it before the next stretch.
 * For callers whose own reads never read ahead (a mapping between
 * fileio_map_load_begin and _end): a read's own read-ahead, crossing a
 * page that the load's read-ahead marked, would start it again. */
#define PREFETCH_EXACT_ENDS 2

/* Brings ranges r[0..n) (offset, length; sorted by offset) of fd in,
 * as `flags` (PREFETCH_*) say. Returns the load to wait for, or NULL
 * (nothing left to wait for). */
prefetch *prefetch_begin(int fd, const off_t (*r)[2], size_t n, int flags);

/* Bytes at the end of each stretch PREFETCH_EXACT_ENDS announces: one and
 * a half read-ahead windows of fd's block device (its queue's
 * read_ahead_kb), or of 8 MiB where the kernel does not say. */
size_t prefetch_tail(int fd);

/* Returns once every byte the load brings in below `end` is in (the
 * announced ends of PREFETCH_EXACT_ENDS: asked of the disk; a read of
 * them waits in the kernel), or the load stopped (NULL: at once). */
void prefetch_wait(prefetch *p, off_t end);

/* 1 when the load brings byte `off` in (a read of it should wait for the
 * load), 0 when it was announced or p is NULL. */
int prefetch_loads(const prefetch *p, off_t off);

/* 1 when every byte the load brings in below `end` is in (NULL: 1). */
int prefetch_passed(prefetch *p, off_t end);

/* Stops the load where it is, waits for its thread and frees p (NULL:
 * nothing). */
void prefetch_end(prefetch *p);

/* Stretches are loaded from this many bytes on, for reads from now on
 * (0: the default, 8 MiB; tests make it small), and the bytes so loaded
 * since the process started (for tests). */
void prefetch_set_min(size_t bytes);
size_t prefetch_loaded_bytes(void);

/* Bytes of stretch ends announced instead of loaded (PREFETCH_EXACT_ENDS)
 * since the process started (for tests). */
size_t prefetch_ended_bytes(void);

/* prefetch_begin's calls with ranges since the process started (for
 * tests): a read that judged its data on disk made one, a read that found
 * it cached none, so that a test can tell that choice from the load. */
size_t prefetch_begun(void);

/* Loads run behind the caller's reads on a helper thread (1, the
 * default) or before them (0: tests compare the two). */
void prefetch_set_behind(int on);

/* Loads go by sendfile to /dev/null (1, the default) or by pread into a
 * buffer that is dropped (0; what a file system without splice gets). */
void prefetch_set_sendfile(int on);

#endif
