/*
 * alloc.h - the one allocator every raster module uses, so tests can make
 * the Nth allocation fail and check that each error path cleans up.
 */
#ifndef RASTER_ALLOC_H
#define RASTER_ALLOC_H

#include <stddef.h>

void *raster_malloc(size_t size);
void *raster_calloc(size_t n, size_t size);
void *raster_realloc(void *ptr, size_t size);
/* realloc of n * size bytes; NULL (ptr untouched) when the product overflows */
void *raster_reallocarray(void *ptr, size_t n, size_t size);
void raster_free(void *ptr);
char *raster_strdup(const char *s);

/* Scratch: a read's large passing buffers (its stages, its plan, the rows
 * of a table before they are checked, its load buffer). Fresh ones cost
 * a page fault per 4 KiB at every read, and glibc gave the pages back at
 * close, so every read paid them again: 500 faults, 0.5-0.7 ms of
 * Indian's 9 ms region read (docs/PERFORMANCE.md, "Warm reads and the
 * floor", fifteenth session). A freed block is kept for the next read
 * instead (8 blocks and 32 MiB in all, process-wide; any thread), the
 * smallest that fits handed out first. Only raster_scratch_free() frees
 * one, and none is reallocated. Counted by the failure hook like any
 * allocation. */
void *raster_scratch(size_t n, size_t size); /* n * size bytes, or NULL */
void raster_scratch_free(void *ptr);
/* Frees every kept block. */
void raster_scratch_release(void);
/* Test hook: the bytes of the blocks kept now. */
size_t raster_scratch_kept(void);

/* Large buffers (raster_region_alloc's): n bytes of zeros, mapped with
 * transparent-huge-page advice, or NULL. raster_unmapped() (n: the size
 * asked for) keeps the last one freed, up to 1 GiB and a sixteenth of the
 * machine's memory, and raster_mapped() hands it out again, zeroed, for a
 * request of half its size or more: a fresh mapping's first touch made
 * the bench VM's host fault its pages in (free page reporting), and
 * Southern's warm read took 21.8-34.4 ms into fresh memory against
 * 20.6-20.8 into a kept buffer zeroed (docs/PERFORMANCE.md, "Warm reads
 * and the floor", sixteenth session). Counted by the failure hook. */
void *raster_mapped(size_t n);
void raster_unmapped(void *p, size_t n);
/* Unmaps the kept buffer. */
void raster_mapped_release(void);
/* Test hook: the bytes of the kept buffer. */
size_t raster_mapped_kept(void);

/* Makes *array (of *cap elements of `elem` bytes) hold at least `need`,
 * doubling; RASTER_OK, or RASTER_ENOMEM / RASTER_EOVERFLOW with a message
 * (the array is then untouched). */
int raster_grow(void *array, size_t *cap, size_t need, size_t elem);

/* Test hook: allocation number `n` from now (1 = the next) fails, and every
 * one after it succeeds again; 0 disarms. Not thread-safe: tests only. */
void raster_alloc_fail_at(unsigned long n);
/* Test hook: number of allocations since the last raster_alloc_fail_at(). */
unsigned long raster_alloc_count(void);

/* a * b into *out; 0 when it fits, 1 on overflow */
static inline int raster_mul_overflows(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

#endif
