/*
 * bandwidth.c - sequential and random read bandwidth of this machine, for
 * the RASTER paper's Eq. 2. A region read from a RASTER file is a few long
 * reads (sequential); a chunked netCDF read of the same region is many
 * chunk-sized reads (random): the predicted speedup is the data reduction
 * rate times the ratio of the two bandwidths.
 *
 * Both passes are cold: the scratch file is written and synced, then before
 * each pass fdatasync + posix_fadvise(POSIX_FADV_DONTNEED) drops its pages
 * from this kernel's page cache, and mincore() checks how many stayed. What
 * a hypervisor or a container's host caches below this kernel cannot be
 * seen from here; the caller says so.
 */
#include "bandwidth.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define SEQ_READ ((size_t)4 << 20)
#define SEQ_MAX_SECS 8.0   /* stop the sequential pass after this long */
#define RAND_MAX_SECS 3.0  /* and the random one */
#define RAND_MIN_READS 16
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

int bw_parse(const char *text, bw_figures *f)
{
    memset(f, 0, sizeof *f);
    char *end;
    errno = 0;
    double a = strtod(text, &end);
    if (end == text || *end != ',' || errno)
        return -1;
    const char *p = end + 1;
    double b = strtod(p, &end);
    if (end == p || *end != '\0' || errno)
        return -1;
    if (!isfinite(a) || !isfinite(b) || a <= 0 || b <= 0)
        return -1;
    f->seq_mbs = a;
    f->rand_mbs = b;
    f->resident = -1;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int fail(const char *what, const char *dir)
{
    fprintf(stderr, "rasterstat: measuring bandwidth in %s: %s: %s\n", dir,
            what, strerror(errno));
    return -1;
}

/* Drops the file's pages from the page cache; returns the share of its
 * pages still resident afterwards (0..1), or -1 when mincore fails. */
static double evict(int fd, size_t bytes)
{
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return -1;
    size_t resident = 0;
    long sys = sysconf(_SC_PAGESIZE);
    size_t sys_pages = (bytes + (size_t)sys - 1) / (size_t)sys;
    unsigned char *vec = malloc(sys_pages);
    double share = -1;
    if (vec && mincore(map, bytes, vec) == 0) {
        for (size_t i = 0; i < sys_pages; i++)
            resident += vec[i] & 1;
        share = (double)resident / (double)sys_pages;
    }
    free(vec);
    munmap(map, bytes);
    return share;
}

static int read_fully(int fd, unsigned char *buf, size_t n, size_t off)
{
    while (n > 0) {
        ssize_t got = pread(fd, buf, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = EIO;
            return -1;
        }
        buf += got;
        n -= (size_t)got;
        off += (size_t)got;
    }
    return 0;
}

int bw_measure(size_t rand_bytes, bw_figures *f)
{
    memset(f, 0, sizeof *f);
    f->measured = 1;
    f->resident = -1;
    size_t mb = BW_DEFAULT_MB;
    const char *env = getenv("RASTER_BW_MB");
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(env, &end, 10);
        if (errno || *end || v < 1 || v > 65536 || env[0] == '-') {
            fprintf(stderr, "rasterstat: RASTER_BW_MB wants a size in MiB "
                    "from 1 to 65536, got '%s'\n", env);
            return -1;
        }
        mb = v;
    }
    const char *dir = getenv("RASTER_BW_DIR");
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    f->file_bytes = mb << 20;
    f->seq_read_bytes = SEQ_READ;
    size_t block = rand_bytes < PAGE ? PAGE
        : (rand_bytes + PAGE - 1) / PAGE * PAGE;
    if (block > f->file_bytes / 8) /* keep some room for randomness */
        block = f->file_bytes / 8 / PAGE * PAGE;
    f->rand_read_bytes = block;

    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/.rasterstat-bw.XXXXXX", dir)
        >= sizeof path) {
        errno = ENAMETOOLONG;
        return fail("scratch file name", dir);
    }
    int fd = mkstemp(path);
    if (fd < 0)
        return fail("cannot create a scratch file", dir);
    unlink(path); /* gone when closed, whatever happens */
    struct statfs sfs;
    if (fstatfs(fd, &sfs) == 0)
        f->in_memory = (unsigned long)sfs.f_type == TMPFS_MAGIC_ ||
                       (unsigned long)sfs.f_type == RAMFS_MAGIC_;

    int rc = -1;
    size_t nblocks = f->file_bytes / block;
    size_t *perm = malloc(nblocks * sizeof *perm);
    unsigned char *buf = NULL;
    if (!perm || posix_memalign((void **)&buf, PAGE, SEQ_READ) != 0) {
        errno = ENOMEM;
        fail("scratch buffer", dir);
        goto out;
    }

    /* Write it: random bytes (nothing a file system could compress or
     * deduplicate), then make it durable so eviction can drop it. */
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < SEQ_READ / 8; i++) {
        uint64_t v = xorshift(&seed);
        memcpy(buf + 8 * i, &v, 8);
    }
    for (size_t off = 0; off < f->file_bytes; off += SEQ_READ) {
        size_t n = f->file_bytes - off < SEQ_READ ? f->file_bytes - off
                                                  : SEQ_READ;
        for (size_t p = 0; p < n; p += PAGE) /* every page distinct */
            memcpy(buf + p, &off, sizeof off);
        size_t done = 0;
        while (done < n) {
            ssize_t w = pwrite(fd, buf + done, n - done,
                               (off_t)(off + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                fail("writing the scratch file", dir);
                goto out;
            }
            done += (size_t)w;
        }
    }
    if (fsync(fd) != 0) {
        fail("fsync of the scratch file", dir);
        goto out;
    }

    /* Sequential: the whole file in long reads, in order. */
    double res = evict(fd, f->file_bytes);
    f->resident = res;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t seq_bytes = 0;
    double t0 = now(), t1 = t0;
    for (size_t off = 0; off < f->file_bytes; off += SEQ_READ) {
        size_t n = f->file_bytes - off < SEQ_READ ? f->file_bytes - off
                                                  : SEQ_READ;
        if (read_fully(fd, buf, n, off) != 0) {
            fail("reading the scratch file", dir);
            goto out;
        }
        seq_bytes += n;
        t1 = now();
        if (t1 - t0 > SEQ_MAX_SECS)
            break;
    }
    f->seq_secs = t1 - t0;

    /* Random: one tile's bytes at a time, at distinct offsets in random
     * order, without readahead. */
    res = evict(fd, f->file_bytes);
    if (res > f->resident)
        f->resident = res;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    for (size_t i = 0; i < nblocks; i++)
        perm[i] = i;
    for (size_t i = nblocks; i > 1; i--) {
        size_t j = (size_t)(xorshift(&seed) % i);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    size_t reads = 0;
    t0 = now();
    t1 = t0;
    for (size_t i = 0; i < nblocks; i++) {
        if (read_fully(fd, buf, block, perm[i] * block) != 0) {
            fail("reading the scratch file", dir);
            goto out;
        }
        reads++;
        t1 = now();
        if (t1 - t0 > RAND_MAX_SECS && reads >= RAND_MIN_READS)
            break;
    }
    f->rand_secs = t1 - t0;
    f->rand_reads = reads;
    /* a clock too coarse for a pass that fast: count it as 1 us */
    f->seq_mbs = (double)seq_bytes / 1e6 /
                 (f->seq_secs > 1e-6 ? f->seq_secs : 1e-6);
    f->rand_mbs = (double)(reads * block) / 1e6 /
                  (f->rand_secs > 1e-6 ? f->rand_secs : 1e-6);
    rc = 0;
out:
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    free(perm);
    free(buf);
    return rc;
}
