/*
 * alloc.c - allocation wrappers with a failure-injection hook for tests.
 */
#include "alloc.h"

#include "error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SCRATCH_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SCRATCH_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SCRATCH_POISON(p, n) ((void)(p), (void)(n))
#define SCRATCH_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

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

/* ---- scratch blocks ------------------------------------------------------ */

#define SCRATCH_KEPT 8
#define SCRATCH_KEPT_BYTES ((size_t)32 << 20)
/* a block's size sits in front of it; 64 keeps the block on a cache line */
#define SCRATCH_HEAD 64

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *scratch_kept[SCRATCH_KEPT]; /* heads, or NULL */
static size_t scratch_kept_bytes;

static size_t head_size(const unsigned char *head)
{
    size_t n;
    memcpy(&n, head, sizeof n);
    return n;
}

void *raster_scratch(size_t n, size_t elem)
{
    size_t size;
    if (raster_mul_overflows(n, elem, &size) ||
        size > SIZE_MAX - 2 * SCRATCH_HEAD || should_fail())
        return NULL;
    size = (size + SCRATCH_HEAD - 1) / SCRATCH_HEAD * SCRATCH_HEAD;
    unsigned char *head = NULL;
    pthread_mutex_lock(&scratch_lock);
    int best = -1;
    for (int i = 0; i < SCRATCH_KEPT; i++)
        if (scratch_kept[i] && head_size(scratch_kept[i]) >= size &&
            (best < 0 ||
             head_size(scratch_kept[i]) < head_size(scratch_kept[best])))
            best = i;
    if (best >= 0) {
        head = scratch_kept[best];
        scratch_kept[best] = NULL;
        scratch_kept_bytes -= head_size(head);
    }
    pthread_mutex_unlock(&scratch_lock);
    if (head) {
        SCRATCH_UNPOISON(head + SCRATCH_HEAD, head_size(head));
        return head + SCRATCH_HEAD;
    }
    head = aligned_alloc(SCRATCH_HEAD, SCRATCH_HEAD + size);
    if (!head)
        return NULL;
    memcpy(head, &size, sizeof size);
    return head + SCRATCH_HEAD;
}

void raster_scratch_free(void *ptr)
{
    if (!ptr)
        return;
    unsigned char *head = (unsigned char *)ptr - SCRATCH_HEAD;
    size_t size = head_size(head);
    SCRATCH_POISON(ptr, size); /* a use after this is caught (ASan) */
    pthread_mutex_lock(&scratch_lock);
    for (int i = 0; i < SCRATCH_KEPT && head; i++)
        if (!scratch_kept[i] &&
            scratch_kept_bytes + size <= SCRATCH_KEPT_BYTES) {
            scratch_kept[i] = head;
            scratch_kept_bytes += size;
            head = NULL;
        }
    pthread_mutex_unlock(&scratch_lock);
    if (head) {
        SCRATCH_UNPOISON(ptr, size);
        free(head);
    }
}

void raster_scratch_release(void)
{
    unsigned char *gone[SCRATCH_KEPT];
    pthread_mutex_lock(&scratch_lock);
    memcpy(gone, scratch_kept, sizeof gone);
    memset(scratch_kept, 0, sizeof scratch_kept);
    scratch_kept_bytes = 0;
    pthread_mutex_unlock(&scratch_lock);
    for (int i = 0; i < SCRATCH_KEPT; i++)
        if (gone[i]) {
            SCRATCH_UNPOISON(gone[i] + SCRATCH_HEAD, head_size(gone[i]));
            free(gone[i]);
        }
}

size_t raster_scratch_kept(void)
{
    pthread_mutex_lock(&scratch_lock);
    size_t n = scratch_kept_bytes;
    pthread_mutex_unlock(&scratch_lock);
    return n;
}

/* ---- large zeroed buffers ------------------------------------------------ */

/* One freed buffer kept, at most MAPPED_KEPT_MAX bytes and a sixteenth of
 * the machine's memory; handed out again for a request of at least half
 * its size. `lent` remembers the kept buffer handed out, whose mapping
 * may be longer than its caller knows. */
#define MAPPED_KEPT_MAX ((size_t)1 << 30)

static pthread_mutex_t mapped_lock = PTHREAD_MUTEX_INITIALIZER;
static void *mapped_kept, *mapped_lent;
static size_t mapped_kept_len, mapped_lent_len;

static size_t mapped_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    size_t cap = MAPPED_KEPT_MAX;
    if (pages > 0 && size > 0 && (size_t)pages / 16 < cap / (size_t)size)
        cap = (size_t)pages / 16 * (size_t)size;
    return cap;
}

void *raster_mapped(size_t n)
{
    if (n == 0 || should_fail())
        return NULL;
    void *p = NULL;
    pthread_mutex_lock(&mapped_lock);
    if (mapped_kept && !mapped_lent && mapped_kept_len >= n &&
        mapped_kept_len / 2 <= n) {
        p = mapped_lent = mapped_kept;
        mapped_lent_len = mapped_kept_len;
        mapped_kept = NULL;
        mapped_kept_len = 0;
    }
    pthread_mutex_unlock(&mapped_lock);
    if (p) {
        SCRATCH_UNPOISON(p, mapped_lent_len);
        memset(p, 0, n);
        return p;
    }
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, n, MADV_HUGEPAGE); /* advice only */
    return p;
}

/* Unmaps a buffer taken out of the cache (unpoisoned first). */
static void unmap(void *p, size_t len)
{
    if (p) {
        SCRATCH_UNPOISON(p, len);
        (void)munmap(p, len);
    }
}

void raster_unmapped(void *p, size_t n)
{
    if (!p)
        return;
    size_t len = n;
    pthread_mutex_lock(&mapped_lock);
    if (p == mapped_lent) {
        len = mapped_lent_len;
        mapped_lent = NULL;
    }
    if (len <= mapped_cap()) { /* kept: the last one freed */
        void *old = mapped_kept;
        size_t old_len = mapped_kept_len;
        mapped_kept = p;
        mapped_kept_len = len;
        SCRATCH_POISON(p, len);
        p = old;
        len = old_len;
    }
    pthread_mutex_unlock(&mapped_lock);
    unmap(p, len);
}

void raster_mapped_release(void)
{
    pthread_mutex_lock(&mapped_lock);
    void *p = mapped_kept;
    size_t len = mapped_kept_len;
    mapped_kept = NULL;
    mapped_kept_len = 0;
    pthread_mutex_unlock(&mapped_lock);
    unmap(p, len);
}

size_t raster_mapped_kept(void)
{
    pthread_mutex_lock(&mapped_lock);
    size_t n = mapped_kept_len;
    pthread_mutex_unlock(&mapped_lock);
    return n;
}
