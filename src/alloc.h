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
