/*
 * imports.h - redirecting one loaded library's calls of a function
 * (imports.c).
 */
#ifndef RASTER_IMPORTS_H
#define RASTER_IMPORTS_H

#include <link.h>

/* Points every import slot of `map`'s library for symbol `name` at `fn`.
 * @return how many slots now call fn (0: the library does not import
 * name), or -1 when the library's tables could not be read or written (or
 * the target is not x86-64 or AArch64); slots written before a failure
 * keep fn. */
int imports_replace(struct link_map *map, const char *name, void *fn);

#endif
