/*
 * benchwork.c - the measured operations of rasterbench (see benchwork.h).
 * Every timed repetition starts from nothing: it opens the file, allocates
 * its output, reads, and closes, as a program reading one region would.
 */
#include "benchwork.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <netcdf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster.h"
#include "raster_internal.h"
#include "unshuffle.h"

/* The inflater the library was built with (src/meson.build): the floor
 * must inflate as fast as raster can, no faster and no slower. */
#ifdef RASTER_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long long rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long v = -1, val;
    char key[64];
    while (f && fscanf(f, "%63s %lld", key, &val) == 2)
        if (strcmp(key, "rchar:") == 0)
            v = val;
    if (f)
        fclose(f);
    return v;
}

/* Pages of fd's first `size` bytes in the page cache (mincore), or -1. */
static long resident_pages(int fd, off_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    if (size <= 0 || page <= 0)
        return size == 0 ? 0 : -1;
    size_t n = ((size_t)size + (size_t)page - 1) / (size_t)page;
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *vec = malloc(n);
    long in = -1;
    if (m != MAP_FAILED && vec && mincore(m, (size_t)size, vec) == 0) {
        in = 0;
        for (size_t i = 0; i < n; i++)
            in += vec[i] & 1;
    }
    free(vec);
    if (m != MAP_FAILED)
        munmap(m, (size_t)size);
    return in;
}

/* This VM's balloon takes free 2 MiB blocks back from the guest
 * (free page reporting, page_reporting_order 9), and the next process to
 * touch them waits on the host page by page: a read right after a large
 * one zeroed its output at a fraction of the usual speed (raster's cold
 * Atlantic 118-363 ms right after netCDF's bounding-box read, 74-79 ms
 * right after another raster read; 76-90 ms after either with reporting
 * off). Which method came after netCDF's read decided its time, so every
 * method is primed alike (docs/PERFORMANCE.md, "Cold reads"). */
#define PRIME_MAX ((size_t)1 << 30)

void bench_prime_memory(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size <= 0)
        return; /* unprimed: only slower */
    /* its output and its page cache: at most twice the file */
    size_t bytes = (size_t)st.st_size < PRIME_MAX / 2 ? 2 * (size_t)st.st_size
                                                      : PRIME_MAX;
    unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < bytes; i += 4096)
        p[i] = 1;
    (void)munmap(p, bytes);
}

int bench_evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "rasterbench: evicting %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    /* dirty pages are not dropped: written back first */
    int rc = fdatasync(fd) == 0 &&
                     posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0
                 ? 0 : -1;
    /* pages another process maps (or writes) stay: then "cold" is not */
    long left = rc == 0 ? resident_pages(fd, lseek(fd, 0, SEEK_END)) : -1;
    if (left != 0) {
        fprintf(stderr, "rasterbench: %s: %ld pages still cached after "
                "POSIX_FADV_DONTNEED\n", path, left);
        rc = -1;
    }
    close(fd);
    return rc;
}

int bench_rewarm(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    (void)fdatasync(fd);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t cap = (size_t)4 << 20;
    unsigned char *buf = malloc(cap);
    ssize_t n = buf ? 1 : -1;
    for (off_t off = 0; buf && (n = pread(fd, buf, cap, off)) > 0; off += n)
        ;
    free(buf);
    close(fd);
    return n == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const double *v, int n)
{
    double s[BENCH_MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Reports a failed netCDF call (what names it and its object); 1 if st is
 * an error, so that each step reads `if (nc_failed(...)) goto fail;`. */
static int nc_failed(int st, const char *what)
{
    if (st == NC_NOERR)
        return 0;
    fprintf(stderr, "rasterbench: %s: %s\n", what, nc_strerror(st));
    return 1;
}

/* ---- netcdf: the box, then the mask ------------------------------------- */

typedef struct netcdf_state {
    int32_t *mask; /* the box's part of the mask, read once, untimed */
    size_t bh, bw, planes;
} netcdf_state;

static int netcdf_prepare(const bench_job *j, netcdf_state *s)
{
    int ncid = -1, varid;
    s->bh = j->box[2] - j->box[0];
    s->bw = j->box[3] - j->box[1];
    s->mask = malloc(s->bh * s->bw * sizeof *s->mask);
    if (!s->mask)
        return -1;
    size_t start[2] = {j->box[0], j->box[1]}, count[2] = {s->bh, s->bw};
    if (nc_failed(nc_open(j->mask_file, NC_NOWRITE, &ncid),
                  "nc_open(mask file)"))
        goto fail;
    if (nc_failed(nc_inq_varid(ncid, j->mask_var, &varid),
                  "nc_inq_varid(mask variable)"))
        goto fail;
    if (nc_failed(nc_get_vara_int(ncid, varid, start, count, s->mask),
                  "nc_get_vara_int(mask box)"))
        goto fail;
    if (nc_failed(nc_close(ncid), "nc_close(mask file)"))
        goto fail;
    return 0;
fail:
    if (ncid >= 0)
        nc_close(ncid);
    return -1;
}

/* Opens `file` and finds `var`: *nd dimensions (2 to 8), the outer ones'
 * lengths in count[] and their product in *planes. NC_NOERR, or the
 * failed call's status with its name in *what and the file closed again
 * (*ncid -1): quiet, for the view check's message. */
static int outer_dims(const char *file, const char *var, int *ncid,
                      int *varid, int *nd, size_t *count, size_t *planes,
                      const char **what)
{
    int dimids[8], st;
    *planes = 1;
    *what = "nc_open(data file)";
    if ((st = nc_open(file, NC_NOWRITE, ncid)) != NC_NOERR) {
        *ncid = -1;
        return st;
    }
    *what = "nc_inq_varid(variable)";
    if ((st = nc_inq_varid(*ncid, var, varid)) != NC_NOERR)
        goto fail;
    *what = "nc_inq_varndims(variable)";
    if ((st = nc_inq_varndims(*ncid, *varid, nd)) != NC_NOERR)
        goto fail;
    *what = "the variable's rank (2 to 8)";
    if (*nd < 2 || *nd > 8) {
        st = NC_EINVAL;
        goto fail;
    }
    *what = "nc_inq_vardimid(variable)";
    if ((st = nc_inq_vardimid(*ncid, *varid, dimids)) != NC_NOERR)
        goto fail;
    *what = "nc_inq_dimlen(outer dimension)";
    for (int i = 0; i < *nd - 2; i++) {
        if ((st = nc_inq_dimlen(*ncid, dimids[i], &count[i])) != NC_NOERR)
            goto fail;
        *planes *= count[i];
    }
    return NC_NOERR;
fail:
    nc_close(*ncid);
    *ncid = -1;
    return st;
}

/* outer_dims of j's file and variable, a failure reported on stderr: 0,
 * or -1. */
static int open_outer(const bench_job *j, int *ncid, int *varid, int *nd,
                      size_t *count, size_t *planes)
{
    const char *what;
    int st = outer_dims(j->file, j->var, ncid, varid, nd, count, planes,
                        &what);
    return nc_failed(st, what) ? -1 : 0;
}

static int netcdf_once(const bench_job *j, const netcdf_state *s)
{
    int ncid = -1, varid, nd, rc = -1;
    size_t start[8] = {0}, count[8], planes = 1;
    unsigned char *box = NULL, *out = NULL;
    if (open_outer(j, &ncid, &varid, &nd, count, &planes) != 0)
        goto fail;
    start[nd - 2] = j->box[0];
    start[nd - 1] = j->box[1];
    count[nd - 2] = s->bh;
    count[nd - 1] = s->bw;
    size_t bcells = s->bh * s->bw;
    box = malloc(planes * bcells * j->elem);
    out = malloc(planes * j->cells * j->elem);
    if (!box || !out)
        goto fail;
    if (nc_failed(nc_get_vara(ncid, varid, start, count, box),
                  "nc_get_vara(box)"))
        goto fail;
    /* keep the region's values: the mask applied to the box */
    size_t k = 0;
    for (size_t p = 0; p < planes; p++) {
        const unsigned char *src = box + p * bcells * j->elem;
        for (size_t c = 0; c < bcells; c++) {
            int32_t id = s->mask[c];
            int in = 0;
            for (size_t i = 0; i < j->nids; i++)
                in |= id == j->ids[i];
            if (in)
                memcpy(out + k++ * j->elem, src + c * j->elem, j->elem);
        }
    }
    rc = k == planes * j->cells ? 0 : -1;
    if (rc)
        fprintf(stderr, "rasterbench: the mask kept %zu values, not %zu\n", k,
                planes * j->cells);
fail:
    free(box);
    free(out);
    if (ncid >= 0)
        nc_close(ncid);
    return rc;
}

/* ---- raster: the region-read API ---------------------------------------- */

const char *const bench_phase_name[BENCH_PHASES] = {
    "open", "find", "alloc", "check", "tables", "plan", "move", "free",
    "close"};

/* ph (BENCH_PHASES entries): the phases' seconds, as bench_phase_name */
static int raster_once(const bench_job *j, int use_malloc, double *ph)
{
    raster_file *f;
    raster_var *v;
    raster_read_phases rp;
    raster_read_phases_take(1, NULL);
    double t0 = now();
    int rc = raster_open(j->file, RASTER_READ, &f);
    double t1 = now(), t2 = t1, t3 = t1, t4 = t1;
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
        return -1;
    }
    size_t cells = 0, shape[32], ostart[32] = {0};
    void *out = NULL;
    size_t bytes = 0;
    if ((rc = raster_var_find(f, j->var, &v)) == RASTER_OK &&
        (rc = raster_var_dims(v, NULL, shape, NULL)) == RASTER_OK) {
        t2 = now();
        if (use_malloc) { /* the caller's own buffer */
            rc = raster_region_size(v, j->ids, j->nids, RASTER_LAYOUT_PACKED,
                                    &cells);
            size_t planes = 1;
            for (int i = 0; i < raster_var_ndims(v) - 2; i++)
                planes *= shape[i];
            if (rc == RASTER_OK && !(out = malloc(planes * cells * j->elem + 1)))
                rc = RASTER_ENOMEM;
        } else { /* the API's buffer */
            rc = raster_region_alloc(v, j->ids, j->nids, shape,
                                     RASTER_LAYOUT_PACKED, &out, &bytes);
        }
        t3 = now();
        if (rc == RASTER_OK)
            rc = raster_region_read(v, j->ids, j->nids, ostart, shape,
                                    RASTER_LAYOUT_PACKED, out);
        t4 = now();
    }
    raster_read_phases_take(0, &rp);
    if (rc != RASTER_OK)
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
    if (use_malloc)
        free(out);
    else
        raster_region_free(out, bytes);
    double t5 = now();
    if (raster_close(f) != RASTER_OK && rc == RASTER_OK) {
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
        rc = RASTER_EIO;
    }
    double p[BENCH_PHASES] = {t1 - t0, t2 - t1, t3 - t2, rp.check,
                              rp.tables, rp.plan, rp.move, t5 - t4,
                              now() - t5};
    memcpy(ph, p, sizeof p);
    return rc == RASTER_OK ? 0 : -1;
}

/* ---- floor: one pread ----------------------------------------------------- */

/* The floors' output, got as raster_region_alloc() gets raster's callers
 * theirs, so that the floor stays the limit: mapped with huge-page advice,
 * the last one given back kept and zeroed again for the next request of
 * at least half its size (a worker's repetitions). */
static void *floor_kept, *floor_lent;
static size_t floor_kept_len, floor_lent_len;

static void *floor_output(size_t n)
{
    if (floor_kept && floor_kept_len >= n && floor_kept_len / 2 <= n) {
        floor_lent = floor_kept;
        floor_lent_len = floor_kept_len;
        floor_kept = NULL;
        memset(floor_lent, 0, n);
        return floor_lent;
    }
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, n, MADV_HUGEPAGE);
    return p;
}

static void floor_output_done(void *p, size_t n)
{
    if (p == floor_lent) {
        n = floor_lent_len;
        floor_lent = NULL;
    }
    if (floor_kept)
        munmap(floor_kept, floor_kept_len);
    floor_kept = p;
    floor_kept_len = n;
}

static int floor_once(const bench_job *j)
{
    int fd = open(j->file, O_RDONLY);
    if (fd < 0)
        return -1;
    off_t size = lseek(fd, 0, SEEK_END);
    unsigned char *out = size > 0 ? floor_output((size_t)size) : NULL;
    size_t got = 0;
    while (out && got < (size_t)size) {
        ssize_t n = pread(fd, out + got, (size_t)size - got, (off_t)got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (out)
        floor_output_done(out, (size_t)size);
    close(fd);
    return out && got == (size_t)size ? 0 : -1;
}

/* ---- inflate floor: a region's compressed chunks, from memory ------------ */

/* One compressed chunk as HDF5 stores it, and what undoing it gives. */
typedef struct zchunk {
    unsigned char *data;
    size_t csize, raw, elem;
    int shuffle;
} zchunk;

typedef struct zfloor {
    zchunk *ch;
    size_t n, cap, raw_max, decoded;
    size_t *at;        /* each chunk's first byte in the output */
    size_t out_bytes;  /* the region's bytes: what a read hands back */
    unsigned char *out;
    int threads;
} zfloor;

/* Threads as raster's read path takes them (src/move/fanout.c fanout_read_threads,
 * serial flavour): $RASTER_THREADS, else 2 where there are 2 cores. */
static int floor_threads(void)
{
    const char *e = getenv("RASTER_THREADS");
    if (e && *e) {
        char *end;
        long n = strtol(e, &end, 10);
        return *end == '\0' && n >= 1 ? (n > 16 ? 16 : (int)n) : 1;
    }
    return sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
}

/* Reads (untimed) the stored bytes of the chunks of dataset `path` that
 * hold cells [lo, hi) of each record: every chunk along the outer
 * dimensions, the cell chunks the range touches. */
static int zfloor_store(hid_t grp, const char *path, size_t lo, size_t hi,
                        zfloor *z)
{
    hid_t d = H5Dopen2(grp, path, H5P_DEFAULT), dcpl = -1, space = -1,
          type = -1;
    int rc = -1;
    hsize_t dims[H5S_MAX_RANK], cdims[H5S_MAX_RANK];
    if (d < 0) {
        fprintf(stderr, "rasterbench: floor: no dataset %s\n", path);
        return -1;
    }
    if ((dcpl = H5Dget_create_plist(d)) < 0 ||
        (space = H5Dget_space(d)) < 0 || (type = H5Dget_type(d)) < 0)
        goto done;
    int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 1 || H5Sget_simple_extent_dims(space, dims, NULL) < 0 ||
        H5Pget_layout(dcpl) != H5D_CHUNKED ||
        H5Pget_chunk(dcpl, rank, cdims) != rank) {
        fprintf(stderr, "rasterbench: floor: %s is not chunked\n", path);
        goto done;
    }
    int shuffle = 0, deflate = 0, nf = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nf; i++) {
        unsigned flags, cd[8];
        size_t ncd = 8;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd,
                                         0, NULL, NULL);
        if (id == H5Z_FILTER_SHUFFLE && !deflate)
            shuffle = 1;
        else if (id == H5Z_FILTER_DEFLATE)
            deflate = 1;
        else {
            fprintf(stderr, "rasterbench: floor: %s has a filter (%d) the "
                    "floor does not undo\n", path, (int)id);
            goto done;
        }
    }
    if (!deflate) {
        fprintf(stderr, "rasterbench: floor: %s is not deflated\n", path);
        goto done;
    }
    size_t elem = H5Tget_size(type), raw = elem, nouter = 1;
    for (int i = 0; i < rank; i++)
        raw *= (size_t)cdims[i];
    size_t ckc = (size_t)cdims[rank - 1], ngrid[H5S_MAX_RANK];
    for (int i = 0; i < rank - 1; i++) {
        ngrid[i] = (size_t)((dims[i] + cdims[i] - 1) / cdims[i]);
        nouter *= ngrid[i];
    }
    hsize_t off[H5S_MAX_RANK];
    for (size_t o = 0; o < nouter; o++) {
        size_t rest = o;
        for (int i = rank - 2; i >= 0; i--) {
            off[i] = (hsize_t)(rest % ngrid[i]) * cdims[i];
            rest /= ngrid[i];
        }
        for (size_t c = lo / ckc; hi > lo && c <= (hi - 1) / ckc; c++) {
            off[rank - 1] = (hsize_t)(c * ckc);
            hsize_t nbytes = 0;
            uint32_t fmask = 0;
            if (z->n == z->cap) {
                size_t cap = z->cap ? 2 * z->cap : 256;
                zchunk *t = realloc(z->ch, cap * sizeof *t);
                if (!t)
                    goto done;
                z->ch = t;
                z->cap = cap;
            }
            zchunk *k = &z->ch[z->n];
            if (H5Dget_chunk_storage_size(d, off, &nbytes) < 0 ||
                nbytes == 0) {
                fprintf(stderr, "rasterbench: floor: %s: a chunk the region "
                        "needs is not stored\n", path);
                goto done;
            }
            if (!(k->data = malloc((size_t)nbytes)))
                goto done;
            if (H5Dread_chunk(d, H5P_DEFAULT, off, &fmask, k->data) < 0 ||
                fmask != 0) {
                free(k->data);
                fprintf(stderr, "rasterbench: floor: %s: a chunk could not "
                        "be read raw (filter mask %u)\n", path, fmask);
                goto done;
            }
            k->csize = (size_t)nbytes;
            k->raw = raw;
            k->elem = elem;
            k->shuffle = shuffle;
            z->n++;
            z->decoded += raw;
            if (raw > z->raw_max)
                z->raw_max = raw;
        }
    }
    rc = 0;
done:
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Dclose(d);
    return rc;
}

/* The chunks a read of regions j->ids needs, from raster's own metadata:
 * the `raster_regions` summary of the storage group raster_VAR (per
 * region: id, pure_cells, mixed_cells, mixed_offset, ...; docs/FORMAT.md):
 * all of each region's pure store, and the chunks of Mixed_Chunks/data
 * holding its mixed run. */
static int zfloor_prepare(const bench_job *j, zfloor *z)
{
    char name[512];
    int rc = -1;
    int64_t *rows = NULL;
    hid_t f = -1, g = -1, a = -1, sp = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(name, sizeof name, "raster_%s", j->var);
    if ((f = H5Fopen(j->file, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0 ||
        (g = H5Gopen2(f, name, H5P_DEFAULT)) < 0 ||
        (a = H5Aopen(g, "raster_regions", H5P_DEFAULT)) < 0 ||
        (sp = H5Aget_space(a)) < 0) {
        fprintf(stderr, "rasterbench: floor: %s: no group %s with a "
                "raster_regions summary\n", j->file, name);
        goto done;
    }
    hssize_t nv = H5Sget_simple_extent_npoints(sp);
    if (nv < 8 || nv % 8 || !(rows = malloc((size_t)nv * sizeof *rows)) ||
        H5Aread(a, H5T_NATIVE_INT64, rows) < 0)
        goto done;
    /* the mixed runs of all ids, merged into one range per id (the union
     * of chunks is taken by skipping chunks already read) */
    size_t nmix = 0, mlo[BENCH_MAX_IDS], mhi[BENCH_MAX_IDS];
    for (size_t i = 0; i < j->nids; i++) {
        const int64_t *r = NULL;
        for (hssize_t k = 0; k < nv; k += 8)
            if (rows[k] == j->ids[i])
                r = rows + k;
        if (!r) {
            fprintf(stderr, "rasterbench: floor: no region %d\n",
                    (int)j->ids[i]);
            goto done;
        }
        if (r[1] > 0) {
            snprintf(name, sizeof name, "region_%s%lld/data",
                     r[0] < 0 ? "m" : "", (long long)llabs(r[0]));
            if (zfloor_store(g, name, 0, (size_t)r[1], z) != 0)
                goto done;
        }
        if (r[2] > 0) {
            mlo[nmix] = (size_t)r[3];
            mhi[nmix++] = (size_t)(r[3] + r[2]);
        }
    }
    /* sorted, and overlapping cell chunks not taken twice: each range
     * starts past the previous one's last chunk (ranges of different
     * regions never overlap; they may share a chunk) */
    for (size_t i = 1; i < nmix; i++)
        for (size_t k = i; k > 0 && mlo[k] < mlo[k - 1]; k--) {
            size_t t = mlo[k]; mlo[k] = mlo[k - 1]; mlo[k - 1] = t;
            t = mhi[k]; mhi[k] = mhi[k - 1]; mhi[k - 1] = t;
        }
    if (nmix) {
        hid_t d = H5Dopen2(g, "Mixed_Chunks/data", H5P_DEFAULT), dcpl;
        hsize_t cd[H5S_MAX_RANK];
        int rank;
        if (d < 0 || (dcpl = H5Dget_create_plist(d)) < 0) {
            if (d >= 0)
                H5Dclose(d);
            goto done;
        }
        rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, cd);
        H5Pclose(dcpl);
        H5Dclose(d);
        if (rank < 1)
            goto done;
        size_t ckc = (size_t)cd[rank - 1], done_to = 0; /* cells, chunk-aligned */
        for (size_t i = 0; i < nmix; i++) {
            size_t lo = mlo[i] > done_to ? mlo[i] : done_to;
            if (lo >= mhi[i])
                continue;
            if (zfloor_store(g, "Mixed_Chunks/data", lo, mhi[i], z) != 0)
                goto done;
            done_to = (mhi[i] + ckc - 1) / ckc * ckc;
        }
    }
    /* the output: the region's values over every record, as
     * raster_region_alloc() gives them to a caller; chunks fill it in
     * turn (those past its end unshuffle into scratch) */
    hid_t pv = H5Dopen2(f, j->var, H5P_DEFAULT), ps = -1;
    hsize_t dims[H5S_MAX_RANK];
    int prank = pv >= 0 && (ps = H5Dget_space(pv)) >= 0
                    ? H5Sget_simple_extent_dims(ps, dims, NULL)
                    : -1;
    if (ps >= 0)
        H5Sclose(ps);
    if (pv >= 0)
        H5Dclose(pv);
    if (prank < 2)
        goto done;
    size_t planes = 1;
    for (int i = 0; i < prank - 2; i++)
        planes *= (size_t)dims[i];
    z->out_bytes = planes * j->cells * j->elem;
    if (!(z->at = malloc((z->n ? z->n : 1) * sizeof *z->at)))
        goto done;
    for (size_t i = 0, off = 0; i < z->n; off += z->ch[i++].raw)
        z->at[i] = off;
    z->threads = floor_threads();
    if ((size_t)z->threads > z->n)
        z->threads = z->n ? (int)z->n : 1;
    /* raster inflates on one thread below 256 KiB decoded (inflate.c) */
    if (z->decoded < ((size_t)256 << 10))
        z->threads = 1;
    rc = z->n ? 0 : -1;
done:
    free(rows);
    if (sp >= 0)
        H5Sclose(sp);
    if (a >= 0)
        H5Aclose(a);
    if (g >= 0)
        H5Gclose(g);
    if (f >= 0)
        H5Fclose(f);
    return rc;
}

static void zfloor_free(zfloor *z)
{
    free(z->at);
    for (size_t i = 0; i < z->n; i++)
        free(z->ch[i].data);
    free(z->ch);
}

typedef struct zworker {
    const zfloor *z;
    atomic_size_t *next;
    int rc;
} zworker;

/* Takes chunks until none is left: inflate, then unshuffle, each chunk
 * into the output (as raster's inflater does: unshuffle.h). */
static void *zwork(void *arg)
{
    zworker *w = arg;
    const zfloor *z = w->z;
    unsigned char *a = malloc(z->raw_max), *b = malloc(z->raw_max);
#ifdef RASTER_HAVE_LIBDEFLATE
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
#else
    void *d = a; /* zlib keeps no state between calls here */
#endif
    w->rc = a && b && d ? 0 : -1;
    for (size_t i; w->rc == 0 && (i = atomic_fetch_add(w->next, 1)) < z->n;) {
        const zchunk *k = &z->ch[i];
#ifdef RASTER_HAVE_LIBDEFLATE
        size_t got = 0;
        if (libdeflate_zlib_decompress(d, k->data, k->csize, a, k->raw,
                                       &got) != LIBDEFLATE_SUCCESS ||
            got != k->raw)
            w->rc = -1;
#else
        uLongf got = (uLongf)k->raw;
        if (uncompress(a, &got, k->data, (uLong)k->csize) != Z_OK ||
            got != k->raw)
            w->rc = -1;
#endif
        /* into the output while the region's bytes last */
        unsigned char *dst = z->at[i] + k->raw <= z->out_bytes
                                 ? z->out + z->at[i]
                                 : b;
        if (w->rc == 0 && !k->shuffle && dst != b)
            memcpy(dst, a, k->raw);
        if (w->rc == 0 && k->shuffle) /* as a read unshuffles */
            unshuffle_values(dst, a, k->elem, k->raw / k->elem, 0,
                             k->raw / k->elem);
    }
#ifdef RASTER_HAVE_LIBDEFLATE
    if (d)
        libdeflate_free_decompressor(d);
#endif
    free(a);
    free(b);
    return NULL;
}

static int zfloor_once(zfloor *z)
{
    /* the output got as raster_region_alloc() gets it (floor_output):
     * its zeroing or first touch is part of every read */
    z->out = floor_output(z->out_bytes ? z->out_bytes : 1);
    if (!z->out) {
        fprintf(stderr, "rasterbench: floor: no memory for the output\n");
        return -1;
    }
    atomic_size_t next = 0;
    zworker w[16];
    pthread_t tid[16];
    int started[16] = {0}, rc = 0;
    for (int t = 0; t < z->threads; t++)
        w[t] = (zworker){z, &next, 0};
    for (int t = 1; t < z->threads; t++)
        started[t] = pthread_create(&tid[t], NULL, zwork, &w[t]) == 0;
    zwork(&w[0]);
    for (int t = 1; t < z->threads; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    for (int t = 0; t < z->threads; t++)
        rc |= w[t].rc;
    floor_output_done(z->out, z->out_bytes ? z->out_bytes : 1);
    z->out = NULL;
    if (rc)
        fprintf(stderr, "rasterbench: floor: a chunk did not inflate to its "
                "size\n");
    return rc ? -1 : 0;
}

/* ---- statistics: a regional mean series ---------------------------------- */

/* Open, the regions' (TAREA-weighted, when the file has TAREA) mean at
 * every outer index, close: what a user's "Atlantic mean temperature
 * series" costs. Stored statistics serve it where the file keeps them
 * fresh; RASTER_STATS=values in the worker's environment makes it read
 * the values instead. */
static int stats_once(const bench_job *j)
{
    raster_file *f;
    raster_var *v;
    int rc = raster_open(j->file, RASTER_READ, &f);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
        return -1;
    }
    size_t shape[32], ostart[32] = {0}, planes = 1;
    raster_stats *out = NULL;
    int weighted = 0, tv;
    if ((rc = raster_var_find(f, j->var, &v)) == RASTER_OK &&
        (rc = raster_var_dims(v, NULL, shape, NULL)) == RASTER_OK) {
        weighted = nc_inq_varid(raster_file_ncid(f), "TAREA", &tv) ==
                   NC_NOERR;
        for (int i = 0; i < raster_var_ndims(v) - 2; i++)
            planes *= shape[i];
        if (!(out = malloc(planes * sizeof *out)))
            rc = RASTER_ENOMEM;
    }
    if (rc == RASTER_OK)
        rc = raster_region_statistics(v, j->ids, j->nids, ostart, shape,
                                      weighted ? "TAREA" : NULL, out);
    for (size_t i = 0; rc == RASTER_OK && i < planes; i++) /* the series */
        out[i].sum = raster_stats_value(&out[i], RASTER_STAT_MEAN, weighted);
    if (rc != RASTER_OK)
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
    free(out);
    raster_close(f);
    return rc == RASTER_OK ? 0 : -1;
}

/* ---- read: a hyperslab through netCDF (or the shim) ---------------------- */

/* The hyperslab of READ on an open file (count[] holds the outer lengths,
 * n their product). */
static int read_band(const bench_job *j, int ncid, int varid, int nd,
                     size_t *count, size_t n)
{
    size_t start[8] = {0};
    start[nd - 2] = j->hyper[0];
    start[nd - 1] = j->hyper[1];
    count[nd - 2] = j->hyper[2];
    count[nd - 1] = j->hyper[3];
    n *= j->hyper[2] * j->hyper[3];
    void *out = malloc(n * j->elem + 1);
    if (!out)
        return -1;
    int rc = nc_failed(nc_get_vara(ncid, varid, start, count, out),
                       "nc_get_vara(hyperslab)") ? -1 : 0;
    free(out);
    return rc;
}

/* Open-read-close calls a READ repetition times: BENCH_CALLS for a warm
 * band of fewer than 64 columns (one call is a few ms, as noisy as the
 * machine), else 1 (the whole variable; cold runs evict before each). */
static int read_calls(const bench_job *j)
{
    return !j->cold && j->hyper[3] < 64 ? BENCH_CALLS : 1;
}

static int read_once(const bench_job *j)
{
    int ncid = -1, varid, nd, rc = -1;
    size_t count[8], n = 1;
    if (open_outer(j, &ncid, &varid, &nd, count, &n) == 0)
        rc = read_band(j, ncid, varid, nd, count, n);
    if (ncid >= 0)
        nc_close(ncid);
    return rc;
}

/* ---- the view: what a reader without raster gets ------------------------- */

/* nc_get_vara of box (y0 x0 y1 x1, half-open) at outer index p (row-major
 * over outer[0 .. nd-2)) into buf: the status. */
static int box_plane(int ncid, int varid, int nd, const size_t *outer,
                     size_t p, const size_t box[4], void *buf)
{
    size_t start[8], count[8];
    for (int i = nd - 3; i >= 0; i--) {
        start[i] = p % outer[i];
        p /= outer[i];
        count[i] = 1;
    }
    start[nd - 2] = box[0];
    start[nd - 1] = box[1];
    count[nd - 2] = box[2] - box[0];
    count[nd - 1] = box[3] - box[1];
    return nc_get_vara(ncid, varid, start, count, buf);
}

/* Words where planes a and b (cells values of elem bytes, of type t) of
 * outer index p first differ, and in how many values. */
static void describe_diff(const unsigned char *a, const unsigned char *b,
                          size_t cells, size_t elem, nc_type t, size_t p,
                          const size_t box[4], char *msg, size_t len)
{
    size_t first = cells, n = 0;
    for (size_t c = 0; c < cells; c++)
        if (memcmp(a + c * elem, b + c * elem, elem) != 0) {
            first = first < cells ? first : c;
            n++;
        }
    size_t bw = box[3] - box[1];
    int used = snprintf(msg, len, "outer index %zu: %zu of %zu values "
                        "differ, first at row %zu, column %zu", p, n, cells,
                        box[0] + first / bw, box[1] + first % bw);
    if (used < 0 || (size_t)used >= len)
        return;
    if (t == NC_FLOAT) {
        float x, y;
        memcpy(&x, a + first * elem, sizeof x);
        memcpy(&y, b + first * elem, sizeof y);
        snprintf(msg + used, len - (size_t)used, " (%.9g, not %.9g)",
                 (double)y, (double)x);
    } else if (t == NC_DOUBLE) {
        double x, y;
        memcpy(&x, a + first * elem, sizeof x);
        memcpy(&y, b + first * elem, sizeof y);
        snprintf(msg + used, len - (size_t)used, " (%.17g, not %.17g)", y,
                 x);
    }
}

/* The view's side of bench_view_check, the plain file open (ncid pc,
 * variable pv of nd dimensions, outer lengths pout[], type pt): 0, 1 or 2
 * as there, -1 when the plain file's read fails. */
static int view_compare(int pc, int pv, int nd, const size_t *pout,
                        size_t planes, nc_type pt, const char *view,
                        const char *var, const size_t box[4],
                        unsigned char *a, unsigned char *b, size_t elem,
                        char *msg, size_t len)
{
    int vc, vv, vnd, st, rc = 0;
    size_t vout[8], vplanes, cells = (box[2] - box[0]) * (box[3] - box[1]);
    nc_type vt;
    const char *what;
    st = outer_dims(view, var, &vc, &vv, &vnd, vout, &vplanes, &what);
    if (st == NC_NOERR && (st = nc_inq_vartype(vc, vv, &vt)) != NC_NOERR)
        what = "nc_inq_vartype(variable)";
    if (st != NC_NOERR) {
        snprintf(msg, len, "%s: %s", what, nc_strerror(st));
        if (vc >= 0)
            nc_close(vc);
        return 1;
    }
    if (vt != pt || vnd != nd ||
        memcmp(vout, pout, (size_t)(nd - 2) * sizeof *pout) != 0) {
        snprintf(msg, len, "its type or outer dimensions are not the plain "
                 "file's");
        rc = 2;
    }
    for (size_t p = 0; p < planes && rc == 0; p++) {
        if (nc_failed(box_plane(pc, pv, nd, pout, p, box, a),
                      "nc_get_vara(plain file's box)"))
            rc = -1;
        else if ((st = box_plane(vc, vv, nd, pout, p, box, b)) != NC_NOERR) {
            snprintf(msg, len, "nc_get_vara: %s", nc_strerror(st));
            rc = 1;
        } else if (memcmp(a, b, cells * elem) != 0) {
            describe_diff(a, b, cells, elem, pt, p, box, msg, len);
            rc = 2;
        }
    }
    nc_close(vc);
    return rc;
}

int bench_view_check(const char *plain, const char *view, const char *var,
                     const size_t box[4], char *msg, size_t len)
{
    int pc, pv, nd, rc = -1;
    size_t pout[8], planes, elem;
    nc_type pt;
    const char *what;
    msg[0] = '\0';
    if (box[2] <= box[0] || box[3] <= box[1]) {
        fprintf(stderr, "rasterbench: the view check: an empty box\n");
        return -1;
    }
    int st = outer_dims(plain, var, &pc, &pv, &nd, pout, &planes, &what);
    if (nc_failed(st, what))
        return -1;
    size_t cells = (box[2] - box[0]) * (box[3] - box[1]);
    unsigned char *a = NULL, *b = NULL;
    if (nc_failed(nc_inq_vartype(pc, pv, &pt), "nc_inq_vartype(plain)") ||
        nc_failed(nc_inq_type(pc, pt, NULL, &elem), "nc_inq_type(plain)"))
        goto done;
    a = malloc(cells * elem);
    b = malloc(cells * elem);
    if (!a || !b) {
        fprintf(stderr, "rasterbench: the view check: out of memory\n");
        goto done;
    }
    rc = view_compare(pc, pv, nd, pout, planes, pt, view, var, box, a, b,
                      elem, msg, len);
done:
    free(a);
    free(b);
    nc_close(pc);
    return rc;
}

/* ---- small calls: open and close; a point's series ---------------------- */

static int open_once(const bench_job *j)
{
    for (int i = 0; i < BENCH_CALLS; i++) {
        int ncid;
        if (nc_failed(nc_open(j->file, NC_NOWRITE, &ncid), "nc_open") ||
            nc_failed(nc_close(ncid), "nc_close"))
            return -1;
    }
    return 0;
}

/* Every outer index at grid point (hyper[0], hyper[1]): open, read, close
 * (the series of one station across many files). */
static int point_once(const bench_job *j)
{
    unsigned char out[4096];
    for (int i = 0; i < BENCH_CALLS; i++) {
        int ncid = -1, varid, nd;
        size_t start[8] = {0}, count[8], n = 1;
        if (open_outer(j, &ncid, &varid, &nd, count, &n) != 0)
            return -1;
        start[nd - 2] = j->hyper[0];
        start[nd - 1] = j->hyper[1];
        count[nd - 2] = count[nd - 1] = 1;
        int bad = n * j->elem > sizeof out ||
                  nc_failed(nc_get_vara(ncid, varid, start, count, out),
                            "nc_get_vara(point)");
        if (nc_failed(nc_close(ncid), "nc_close") || bad)
            return -1;
    }
    return 0;
}

/* ---- write: record by record (one time record, all levels, per call) ---- */

/* Deterministic field for record (t, z): smooth, fill on land (id 0). */
static void make_field(float *buf, const int32_t *mask, size_t ny, size_t nx,
                       size_t t, size_t z)
{
    for (size_t y = 0; y < ny; y++)
        for (size_t x = 0; x < nx; x++)
            buf[y * nx + x] = mask[y * nx + x] == 0
                                  ? NC_FILL_FLOAT
                                  : (float)(20.0 - 0.5 * (double)z +
                                            0.001 * (double)y +
                                            0.0001 * (double)x + (double)t);
}

static int write_once(const bench_job *j, const int32_t *mask, float *buf,
                      double *seconds)
{
    int ncid = -1, dims[4], varid, rc = -1;
    double t0 = now(), untimed = 0;
    static const char *const names[4] = {"time", "z_t", "nlat", "nlon"};
    if (nc_failed(nc_create(j->file, NC_NETCDF4 | NC_CLOBBER, &ncid),
                  "nc_create(data file)"))
        goto fail;
    for (int i = 0; i < 4; i++)
        if (nc_failed(nc_def_dim(ncid, names[i],
                                 i == 0 ? NC_UNLIMITED : j->shape[i],
                                 &dims[i]),
                      "nc_def_dim(time, z_t, nlat or nlon)"))
            goto fail;
    if (nc_failed(nc_def_var(ncid, j->var, NC_FLOAT, 4, dims, &varid),
                  "nc_def_var(variable)"))
        goto fail;
    if (nc_failed(nc_def_var_chunking(ncid, varid, NC_CHUNKED, j->chunk),
                  "nc_def_var_chunking(variable)"))
        goto fail;
    float fill = NC_FILL_FLOAT;
    if (nc_failed(
            nc_put_att_float(ncid, varid, "_FillValue", NC_FLOAT, 1, &fill),
            "nc_put_att_float(_FillValue)"))
        goto fail;
    if (nc_failed(nc_enddef(ncid), "nc_enddef(data file)"))
        goto fail;
    size_t plane = j->shape[2] * j->shape[3];
    for (size_t t = 0; t < j->shape[0]; t++) {
        double u0 = now();
        for (size_t z = 0; z < j->shape[1]; z++)
            make_field(buf + z * plane, mask, j->shape[2], j->shape[3], t, z);
        untimed += now() - u0;
        size_t start[4] = {t, 0, 0, 0};
        size_t count[4] = {1, j->shape[1], j->shape[2], j->shape[3]};
        if (nc_failed(nc_put_vara_float(ncid, varid, start, count, buf),
                      "nc_put_vara_float(record)"))
            goto fail;
    }
    int st = nc_close(ncid);
    ncid = -1;
    if (nc_failed(st, "nc_close(data file)"))
        goto fail;
    rc = 0;
fail:
    if (ncid >= 0)
        nc_close(ncid);
    *seconds = now() - t0 - untimed;
    return rc;
}

/* BENCH_SMALL_CALLS calls of BENCH_SMALL_VALUES values each (a row cut in
 * pieces, the last of a row shorter when the width is no multiple), plane
 * by plane, record by record, as an I/O layer writing each process's part
 * of the rows does. Creating the file and closing it are timed too. */
static int small_write_once(const bench_job *j, const int32_t *mask,
                            float *buf, double *seconds)
{
    int ncid = -1, dims[4], varid, rc = -1;
    double t0 = now(), untimed = 0;
    static const char *const names[4] = {"time", "z_t", "nlat", "nlon"};
    size_t ny = j->shape[2], nx = j->shape[3], calls = 0;
    if (nc_failed(nc_create(j->file, NC_NETCDF4 | NC_CLOBBER, &ncid),
                  "nc_create(data file)"))
        goto fail;
    for (int i = 0; i < 4; i++)
        if (nc_failed(nc_def_dim(ncid, names[i],
                                 i == 0 ? NC_UNLIMITED : j->shape[i],
                                 &dims[i]),
                      "nc_def_dim"))
            goto fail;
    float fill = NC_FILL_FLOAT;
    if (nc_failed(nc_def_var(ncid, j->var, NC_FLOAT, 4, dims, &varid),
                  "nc_def_var(variable)") ||
        nc_failed(nc_def_var_chunking(ncid, varid, NC_CHUNKED, j->chunk),
                  "nc_def_var_chunking(variable)") ||
        nc_failed(nc_put_att_float(ncid, varid, "_FillValue", NC_FLOAT, 1,
                                   &fill),
                  "nc_put_att_float(_FillValue)") ||
        nc_failed(nc_enddef(ncid), "nc_enddef(data file)"))
        goto fail;
    for (size_t t = 0; t < j->shape[0] && calls < BENCH_SMALL_CALLS; t++)
        for (size_t z = 0; z < j->shape[1] && calls < BENCH_SMALL_CALLS;
             z++) {
            double u0 = now();
            make_field(buf, mask, ny, nx, t, z);
            untimed += now() - u0;
            for (size_t y = 0; y < ny && calls < BENCH_SMALL_CALLS; y++)
                for (size_t x = 0; x < nx && calls < BENCH_SMALL_CALLS;
                     x += BENCH_SMALL_VALUES, calls++) {
                    size_t w = nx - x < BENCH_SMALL_VALUES
                                   ? nx - x : BENCH_SMALL_VALUES;
                    size_t start[4] = {t, z, y, x}, count[4] = {1, 1, 1, w};
                    if (nc_failed(nc_put_vara_float(ncid, varid, start,
                                                    count, buf + y * nx + x),
                                  "nc_put_vara_float(row piece)"))
                        goto fail;
                }
        }
    int st = nc_close(ncid);
    ncid = -1;
    if (nc_failed(st, "nc_close(data file)"))
        goto fail;
    rc = 0;
fail:
    if (ncid >= 0)
        nc_close(ncid);
    *seconds = now() - t0 - untimed;
    return rc;
}

/* ---- the repetitions ------------------------------------------------------ */

int bench_run(const bench_job *j, bench_result *res)
{
    memset(res, 0, sizeof *res);
    netcdf_state ns = {0};
    int32_t *mask = NULL;
    float *field = NULL;
    int ok = 1;
    zfloor zf = {0};
    if (j->method == BENCH_NETCDF && netcdf_prepare(j, &ns) != 0)
        ok = 0;
    if (j->method == BENCH_INFLATE_FLOOR && zfloor_prepare(j, &zf) != 0)
        ok = 0;
    int writes = j->method == BENCH_WRITE || j->method == BENCH_SMALL_WRITE;
    if (ok && writes) {
        size_t cells = j->shape[2] * j->shape[3];
        int ncid, varid;
        mask = malloc(cells * sizeof *mask);
        field = malloc(j->shape[1] * cells * sizeof *field); /* a record */
        ok = mask && field &&
             nc_open(j->mask_file, NC_NOWRITE, &ncid) == NC_NOERR;
        if (ok) {
            ok = nc_inq_varid(ncid, j->mask_var, &varid) == NC_NOERR &&
                 nc_get_var_int(ncid, varid, mask) == NC_NOERR;
            nc_close(ncid);
        }
    }
    /* READ_OPEN: the file opened once, untimed */
    int ncid = -1, varid = -1, nd = 0;
    size_t outer[8], planes = 1;
    if (ok && j->method == BENCH_READ_OPEN &&
        open_outer(j, &ncid, &varid, &nd, outer, &planes) != 0)
        ok = 0;
    /* warm runs read once untimed first; writes need no warming */
    int first = j->cold || writes ? 0 : -1;
    for (int i = first; i < j->reps && ok; i++) {
        /* a page left (another process reading the file) is reported,
         * not fatal: a long run should not die of a neighbour */
        if (j->cold && !writes)
            (void)bench_evict(j->file);
        long long before = rchar();
        double t0 = now(), dt = 0;
        int st;
        switch (j->method) {
        case BENCH_NETCDF: st = netcdf_once(j, &ns); break;
        case BENCH_RASTER:
        case BENCH_RASTER_MALLOC:
            st = raster_once(j, j->method == BENCH_RASTER_MALLOC,
                             res->phase[i >= 0 ? i : 0]);
            res->nphase = BENCH_PHASES;
            break;
        case BENCH_FLOOR: st = floor_once(j); break;
        case BENCH_READ: /* a thin band warm: a few ms a call */
            st = 0;
            for (int c = 0; c < read_calls(j) && st == 0; c++)
                st = read_once(j);
            break;
        case BENCH_INFLATE_FLOOR: st = zfloor_once(&zf); break;
        case BENCH_STATS: st = stats_once(j); break;
        case BENCH_OPEN: st = open_once(j); break;
        case BENCH_POINT: st = point_once(j); break;
        case BENCH_READ_OPEN: /* a call is a few tenths of a ms */
            st = 0;
            for (int c = 0; c < BENCH_CALLS && st == 0; c++)
                st = read_band(j, ncid, varid, nd, outer, planes);
            break;
        case BENCH_SMALL_WRITE:
            st = small_write_once(j, mask, field, &dt);
            break;
        default: st = write_once(j, mask, field, &dt); break;
        }
        if (!writes)
            dt = now() - t0;
        if (j->method == BENCH_OPEN || j->method == BENCH_POINT ||
            j->method == BENCH_READ_OPEN)
            dt /= BENCH_CALLS;
        if (j->method == BENCH_READ)
            dt /= read_calls(j);
        ok = st == 0;
        if (i >= 0)
            res->seconds[i] = dt;
        res->rchar = rchar() - before;
        if (writes)
            unlink(j->file);
    }
    if (ncid >= 0 && nc_failed(nc_close(ncid), "nc_close(data file)"))
        ok = 0;
    free(ns.mask);
    if (j->method == BENCH_INFLATE_FLOOR) { /* what it inflates, read before */
        res->rchar = 0;
        for (size_t i = 0; i < zf.n; i++)
            res->rchar += (long long)zf.ch[i].csize;
    }
    zfloor_free(&zf);
    free(mask);
    free(field);
    res->ok = ok;
    return ok ? 0 : -1;
}
