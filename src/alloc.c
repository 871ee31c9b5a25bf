/*
 * alloc.c - allocation wrappers with a failure-injection hook for tests.
 */
#include "alloc.h"

#include "error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Atomics only so that threads allocating at once are not a data race. */
static atomic_ulong fail_at;  /* 0: never fail */
static atomic_ulong counter;

static int should_fail(void)
{
    unsigned long n = atomic_fetch_add_explicit(&counter, 1,
                                                memory_order_relaxed) + 1;
    unsigned long target = atomic_load_explicit(&fail_at, memory_order_relaxed);
    return target != 0 && n == target;
}

void raster_alloc_fail_at(unsigned long n)
{
    atomic_store(&counter, 0);
    atomic_store(&fail_at, n);
}

unsigned long raster_alloc_count(void) { return atomic_load(&counter); }

void *raster_malloc(size_t size)
{
    return should_fail() ? NULL : malloc(size ? size : 1);
}

void *raster_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *raster_realloc(void *ptr, size_t size)
{
    return should_fail() ? NULL : realloc(ptr, size ? size : 1);
}

void *raster_reallocarray(void *ptr, size_t n, size_t size)
{
    size_t bytes;
    if (raster_mul_overflows(n, size, &bytes))
        return NULL;
    return raster_realloc(ptr, bytes);
}

void raster_free(void *ptr) { free(ptr); }

char *raster_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = raster_malloc(len);
    if (copy)
        memcpy(copy, s, len);
    return copy;
}

int raster_grow(void *array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return RASTER_OK;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need) {
        if (cap2 > SIZE_MAX / 2)
            return raster_fail(RASTER_EOVERFLOW,
                               "array of %zu entries is too large", need);
        cap2 *= 2;
    }
    void **slot = array;
    void *p = raster_reallocarray(*slot, cap2, elem);
    if (!p)
        return raster_fail(RASTER_ENOMEM,
                           "out of memory growing an array to %zu entries",
                           cap2);
    *slot = p;
    *cap = cap2;
    return RASTER_OK;
}
