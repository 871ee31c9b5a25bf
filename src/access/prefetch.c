/*
 * prefetch.c - a read's byte ranges brought into the page cache ahead of
 * it: long stretches loaded front to back, the rest announced
 * (prefetch.h).
 */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "threads.h"

/* Holes merged into a stretch (no longer than the range before them, so
 * at most half of what is loaded is waste); stretches loaded from
 * load_min bytes on, at most LOAD_MAX bytes a read (beyond it the page
 * cache could drop the first before the read reaches them), LOAD_STEP at
 * a time (8 MiB, the read-ahead window here: Atlantic's 111 MB stretch
 * took 41-42 ms in 8 MiB preads, 52 and 68 ms in 32 and 128 MiB ones). Neighbours less than ANNOUNCE_GAP
 * bytes apart are announced as one. */
#define LOAD_HOLE ((off_t)1 << 20)
#define LOAD_MIN ((size_t)8 << 20)
#define LOAD_MAX ((off_t)1 << 30)
#define LOAD_STEP ((size_t)8 << 20)
#define ANNOUNCE_GAP ((off_t)4096)

static atomic_size_t load_min = LOAD_MIN;
static atomic_size_t loaded_bytes;
static atomic_size_t ended_bytes;
static atomic_size_t begun;
static atomic_int behind_on = 1;
static atomic_int sendfile_on = 1;

void prefetch_set_min(size_t bytes)
{
    atomic_store(&load_min, bytes ? bytes : LOAD_MIN);
}

size_t prefetch_loaded_bytes(void) { return atomic_load(&loaded_bytes); }

size_t prefetch_ended_bytes(void) { return atomic_load(&ended_bytes); }

size_t prefetch_begun(void) { return atomic_load(&begun); }

void prefetch_set_behind(int on) { atomic_store(&behind_on, on); }

void prefetch_set_sendfile(int on) { atomic_store(&sendfile_on, on); }

struct prefetch {
    int fd;
    off_t tail;    /* each long stretch's end announced, not loaded */
    off_t (*s)[2]; /* the long stretches: offset, length */
    size_t ns;
    int sink;           /* /dev/null, where sendfile drops what it loads */
    unsigned char *buf; /* else LOAD_STEP bytes pread drops them in */
    int threaded;       /* loading on tid; lock and moved initialised */
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t moved;
    atomic_llong done; /* every loaded byte below it is in (written under
                          lock) */
    int stop;          /* prefetch_end: stop at the next step (under lock) */
    int waiting;       /* a caller waits on `moved` (under lock) */
};

/* The end of the stretch that starts at range i: the ranges that follow
 * on through holes of up to LOAD_HOLE bytes no longer than the range
 * before them; *hi its last byte + 1. */
static size_t stretch_end(const off_t (*r)[2], size_t n, size_t i, off_t *hi)
{
    off_t end = r[i][0] + r[i][1], prev = r[i][1];
    size_t j = i + 1;
    for (; j < n; j++) {
        off_t hole = r[j][0] - end;
        if (hole > LOAD_HOLE || hole > prev)
            break;
        if (r[j][0] + r[j][1] > end)
            end = r[j][0] + r[j][1];
        prev = r[j][1];
    }
    *hi = end;
    return j;
}

/* Announces ranges i..j-1 to the kernel (WILLNEED), neighbours less than
 * ANNOUNCE_GAP apart as one. */
static void announce_ranges(int fd, const off_t (*r)[2], size_t i, size_t j)
{
    off_t lo = r[i][0], hi = lo + r[i][1];
    for (size_t k = i + 1; k <= j; k++) {
        if (k < j && r[k][0] <= hi + ANNOUNCE_GAP) {
            if (r[k][0] + r[k][1] > hi)
                hi = r[k][0] + r[k][1];
            continue;
        }
        (void)posix_fadvise(fd, lo, hi - lo, POSIX_FADV_WILLNEED);
        if (k < j) {
            lo = r[k][0];
            hi = lo + r[k][1];
        }
    }
}

/* Drops the pages of [lo, hi) that are in the page cache, where they are
 * few (at most an eighth), before the load: they are the metadata that
 * the open and the chunk lookups read, which HDF5 keeps among the chunks,
 * and a read-ahead window that meets a cached page gives up large folios
 * for 4 KiB pages for the rest of the window (Linux's
 * page_cache_ra_order). Atlantic's 93 MB stretch, 14 pages cached in 7
 * islands, loaded in 53-67 ms with them and 39-47 ms without
 * (docs/PERFORMANCE.md, "Cold reads"). The load brings them back at once;
 * a stretch largely cached is left as it is. Counted with cachestat
 * (Linux 6.5, where page cache folios grew large; nothing is dropped
 * without it): mincore's page by page look took 1.2 ms for 100 MB. */
#if !defined(SYS_cachestat) && defined(__linux__)
#define SYS_cachestat 451 /* the same on every architecture; older headers
                             lack it, older kernels say ENOSYS */
#endif
static void drop_islands(int fd, off_t lo, off_t hi)
{
#ifdef SYS_cachestat
    struct {
        uint64_t off, len;
    } range = {(uint64_t)lo, (uint64_t)(hi - lo)};
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted,
            nr_recently_evicted;
    } cs;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0 && syscall(SYS_cachestat, fd, &range, &cs, 0) == 0 &&
        cs.nr_cache > 0 && cs.nr_cache <= range.len / (uint64_t)ps / 8)
        (void)posix_fadvise(fd, lo, hi - lo, POSIX_FADV_DONTNEED);
#else
    (void)fd, (void)lo, (void)hi;
#endif
}

/* Publishes that every loaded byte below `done` is in; 1 when the load
 * is to stop. */
static int advance(prefetch *p, off_t done)
{
    if (!p->threaded)
        return 0;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->done, done);
    int stop = p->stop;
    if (p->waiting)
        pthread_cond_broadcast(&p->moved);
    pthread_mutex_unlock(&p->lock);
    return stop;
}

/* Brings n bytes from lo in (fewer at the end of the file; -1 on an
 * error). sendfile to /dev/null reads them into the page cache as a
 * pread does, through the same read-ahead, without copying them out:
 * Pacific's 204 MB stretch loaded in 85-88 ms against 100 by pread, while
 * the caller copies behind it. Where sendfile cannot (a file system
 * without splice), pread into a dropped buffer. */
static ssize_t load_step(prefetch *p, off_t lo, size_t n)
{
    for (;;) {
        ssize_t got = -1;
        if (p->sink >= 0) {
            off_t at = lo;
            got = sendfile(p->sink, p->fd, &at, n);
            if (got < 0 && errno != EINTR) {
                (void)close(p->sink); /* pread from now on */
                p->sink = -1;
            }
        } else if (p->buf || (p->buf = raster_scratch(LOAD_STEP, 1))) {
            got = pread(p->fd, p->buf, n, lo);
        } else {
            return -1;
        }
        if (got >= 0 || errno != EINTR)
            return got;
    }
}

/* Loads the stretches front to back, on the helper thread or in
 * prefetch_begin; a failed pread ends the load (the caller's own read of
 * those bytes reports it). */
static void *load(void *arg)
{
    prefetch *p = arg;
    for (size_t i = 0; i < p->ns; i++) {
        off_t lo = p->s[i][0], hi = lo + p->s[i][1];
        if (advance(p, lo))
            break;
        drop_islands(p->fd, lo, hi);
        off_t end = hi;
        if (p->tail > 0)
            hi = hi - lo > p->tail ? hi - p->tail : lo;
        while (lo < hi) {
            size_t n = (size_t)(hi - lo) < LOAD_STEP ? (size_t)(hi - lo)
                                                     : LOAD_STEP;
            ssize_t got = load_step(p, lo, n);
            if (got <= 0)
                break;
            atomic_fetch_add(&loaded_bytes, (size_t)got);
            lo += got;
            if (advance(p, lo))
                break;
        }
        if (lo < hi)
            break;
        /* the end, exactly; WILLNEED reads at most a window a call */
        if (end > lo)
            atomic_fetch_add(&ended_bytes, (size_t)(end - lo));
        for (; lo < end; lo += (off_t)LOAD_STEP)
            (void)posix_fadvise(p->fd, lo,
                                end - lo < (off_t)LOAD_STEP ? end - lo
                                                            : (off_t)LOAD_STEP,
                                POSIX_FADV_WILLNEED);
        if (advance(p, end))
            break;
    }
    (void)advance(p, INT64_MAX);
    return NULL;
}

static void release(prefetch *p)
{
    if (p->sink >= 0)
        (void)close(p->sink);
    raster_scratch_free(p->buf);
    raster_free(p->s);
    raster_free(p);
}

/* Announces the ranges outside the long stretches p->s (all of them when
 * p is NULL), stretch by stretch as prefetch_begin made them. */
static void announce_short(const prefetch *p, int fd, const off_t (*r)[2],
                           size_t n)
{
    size_t k = 0;
    for (size_t i = 0, j; i < n; i = j) {
        off_t hi;
        j = stretch_end(r, n, i, &hi);
        if (p && k < p->ns && p->s[k][0] == r[i][0])
            k++;
        else
            announce_ranges(fd, r, i, j);
    }
}

/* Starts the load on a helper thread; 0 when it runs. */
static int start_thread(prefetch *p)
{
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&p->moved, NULL) == 0) {
        p->threaded = 1;
        if (thread_start(&p->tid, 0, load, p) == 0)
            return 0;
        p->threaded = 0;
        pthread_cond_destroy(&p->moved);
    }
    pthread_mutex_destroy(&p->lock);
    return -1;
}

size_t prefetch_tail(int fd)
{
    struct stat st;
    unsigned long kb = 0;
    /* a partition's queue is its disk's, one level up */
    for (int up = 0; up < 2 && kb == 0 && fstat(fd, &st) == 0; up++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/%squeue/read_ahead_kb",
                 major(st.st_dev), minor(st.st_dev), up ? "../" : "");
        FILE *in = fopen(path, "re");
        if (!in)
            continue;
        if (fscanf(in, "%lu", &kb) != 1 || kb > (1UL << 20))
            kb = 0;
        (void)fclose(in);
    }
    size_t window = kb > 0 ? (size_t)kb << 10 : LOAD_STEP;
    return window + window / 2;
}

prefetch *prefetch_begin(int fd, const off_t (*r)[2], size_t n, int flags)
{
    int behind = flags & PREFETCH_BEHIND;
    if (n == 0 || fd < 0)
        return NULL;
    atomic_fetch_add(&begun, 1);
    /* the long stretches (no more than there are ranges) */
    size_t min = atomic_load(&load_min);
    off_t budget = LOAD_MAX;
    prefetch *p = raster_malloc(sizeof *p);
    if (p) {
        *p = (prefetch){.fd = fd, .sink = -1};
        if (flags & PREFETCH_EXACT_ENDS)
            p->tail = (off_t)prefetch_tail(fd);
        p->s = raster_reallocarray(NULL, n, sizeof *p->s);
    }
    for (size_t i = 0, j; p && p->s && i < n; i = j) {
        off_t lo = r[i][0], hi;
        j = stretch_end(r, n, i, &hi);
        if ((size_t)(hi - lo) >= min && hi - lo <= budget) {
            budget -= hi - lo;
            memcpy(p->s[p->ns++], ((off_t[2]){lo, hi - lo}), sizeof *p->s);
        }
    }
    if (p && p->ns > 0) {
        if (atomic_load(&sendfile_on))
            p->sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (p->sink < 0)
            p->buf = raster_scratch(LOAD_STEP, 1);
    }
    if (p && (p->ns == 0 || (p->sink < 0 && !p->buf))) {
        release(p); /* nothing long enough, or no memory: all announced */
        p = NULL;
    }
    int threaded = p && behind && atomic_load(&behind_on) &&
                   start_thread(p) == 0;
    /* the short stretches announced: once the helper loads, else first,
     * so that the disk serves them while the long ones load (announcing
     * Atlantic's 29 took 2.5 ms: not before the helper starts) */
    announce_short(p, fd, r, n);
    if (threaded) {
        /* the helper running before the caller goes on: Arctic's, started
         * while the caller faulted in its output, first ran 4.3 ms later,
         * when the prefault ended */
        prefetch_wait(p, p->s[0][0]);
        return p;
    }
    if (p) {
        (void)load(p); /* here, before the caller's reads */
        release(p);
    }
    return NULL;
}

int prefetch_loads(const prefetch *p, off_t off)
{
    size_t lo = 0, hi = p ? p->ns : 0;
    while (lo < hi) { /* the first stretch that ends after off */
        size_t mid = lo + (hi - lo) / 2;
        if (p->s[mid][0] + p->s[mid][1] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return p && lo < p->ns && p->s[lo][0] <= off;
}

int prefetch_passed(prefetch *p, off_t end)
{
    return !p || atomic_load(&p->done) >= end;
}

void prefetch_wait(prefetch *p, off_t end)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->done) < end) {
        p->waiting = 1;
        pthread_cond_wait(&p->moved, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

void prefetch_end(prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->tid, NULL);
    pthread_cond_destroy(&p->moved);
    pthread_mutex_destroy(&p->lock);
    release(p);
}
