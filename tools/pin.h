/*
 * pin.h - rasterbench's warm cases: the files they read held in the page
 * cache for the duration (a read-only mapping, locked), so that "warm"
 * means what it says on a machine that reclaims cached pages on its own.
 * On this project's VM, DAMON pages out memory it samples as idle; the
 * page cache of a file read a second ago erodes by megabytes a second, and
 * a warm read that met a few evicted pages ran 2-6x slower, on whichever
 * method it fell (docs/PERFORMANCE.md). Every method's file is pinned
 * alike. Not part of libraster.
 */
#ifndef RASTER_PIN_H
#define RASTER_PIN_H

#include <stddef.h>

#define PIN_MAX_FILES 4

typedef struct pinned {
    void *addr[PIN_MAX_FILES];
    size_t len[PIN_MAX_FILES];
    size_t n;
} pinned;

/* Maps and locks each of paths[0..n) (n <= PIN_MAX_FILES), reading what is
 * not cached. A file that cannot be locked (no privilege, too little
 * memory) is left as it is, with one note on stderr per run: the
 * measurement goes on, unpinned. */
void pin_files(const char *const *paths, size_t n, pinned *p);

/* Unlocks and unmaps what pin_files() pinned; cold cases need this, since
 * a locked page survives POSIX_FADV_DONTNEED. */
void unpin_files(pinned *p);

#endif
