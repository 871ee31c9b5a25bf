/*
 * benchwork.c - the measured operations of rasterbench (see benchwork.h).
 * Every timed repetition starts from nothing: it opens the file, allocates
 * its output, reads, and closes, as a program reading one region would.
 */
#include "benchwork.h"

#include <fcntl.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "raster.h"

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

void bench_evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
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

static int netcdf_once(const bench_job *j, const netcdf_state *s)
{
    int ncid = -1, varid, nd, rc = -1;
    size_t start[8] = {0}, count[8], planes = 1;
    unsigned char *box = NULL, *out = NULL;
    if (nc_failed(nc_open(j->file, NC_NOWRITE, &ncid), "nc_open(data file)"))
        goto fail;
    if (nc_failed(nc_inq_varid(ncid, j->var, &varid),
                  "nc_inq_varid(variable)"))
        goto fail;
    if (nc_failed(nc_inq_varndims(ncid, varid, &nd),
                  "nc_inq_varndims(variable)"))
        goto fail;
    if (nd < 2 || nd > 8)
        goto fail;
    int dimids[8];
    if (nc_failed(nc_inq_vardimid(ncid, varid, dimids),
                  "nc_inq_vardimid(variable)"))
        goto fail;
    for (int i = 0; i < nd - 2; i++) {
        if (nc_failed(nc_inq_dimlen(ncid, dimids[i], &count[i]),
                      "nc_inq_dimlen(outer dimension)"))
            goto fail;
        planes *= count[i];
    }
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

static int raster_once(const bench_job *j, int use_malloc)
{
    raster_file *f;
    raster_var *v;
    int rc = raster_open(j->file, RASTER_READ, &f);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
        return -1;
    }
    size_t cells = 0, shape[32], ostart[32] = {0};
    void *out = NULL;
    size_t bytes = 0;
    if ((rc = raster_var_find(f, j->var, &v)) == RASTER_OK &&
        (rc = raster_var_dims(v, NULL, shape, NULL)) == RASTER_OK) {
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
        if (rc == RASTER_OK)
            rc = raster_region_read(v, j->ids, j->nids, ostart, shape,
                                    RASTER_LAYOUT_PACKED, out);
    }
    if (rc != RASTER_OK)
        fprintf(stderr, "rasterbench: %s: %s\n", j->file, raster_errmsg());
    if (use_malloc)
        free(out);
    else
        raster_region_free(out, bytes);
    raster_close(f);
    return rc == RASTER_OK ? 0 : -1;
}

/* ---- floor: one pread ----------------------------------------------------- */

static int floor_once(const bench_job *j)
{
    int fd = open(j->file, O_RDONLY);
    if (fd < 0)
        return -1;
    off_t size = lseek(fd, 0, SEEK_END);
    /* the buffer raster_region_alloc() gives raster's callers, so that the
     * floor stays the limit */
    unsigned char *out = NULL;
    if (size > 0) {
        out = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (out == MAP_FAILED)
            out = NULL;
        else
            (void)madvise(out, (size_t)size, MADV_HUGEPAGE);
    }
    size_t got = 0;
    while (out && got < (size_t)size) {
        ssize_t n = pread(fd, out + got, (size_t)size - got, (off_t)got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (out)
        munmap(out, (size_t)size);
    close(fd);
    return out && got == (size_t)size ? 0 : -1;
}

/* ---- read: a hyperslab through netCDF (or the shim) ---------------------- */

static int read_once(const bench_job *j)
{
    int ncid = -1, varid, nd, rc = -1, dimids[8];
    size_t start[8] = {0}, count[8], n = 1;
    void *out = NULL;
    if (nc_failed(nc_open(j->file, NC_NOWRITE, &ncid), "nc_open(data file)"))
        goto fail;
    if (nc_failed(nc_inq_varid(ncid, j->var, &varid),
                  "nc_inq_varid(variable)"))
        goto fail;
    if (nc_failed(nc_inq_varndims(ncid, varid, &nd),
                  "nc_inq_varndims(variable)"))
        goto fail;
    if (nd < 2 || nd > 8)
        goto fail;
    if (nc_failed(nc_inq_vardimid(ncid, varid, dimids),
                  "nc_inq_vardimid(variable)"))
        goto fail;
    for (int i = 0; i < nd - 2; i++) {
        if (nc_failed(nc_inq_dimlen(ncid, dimids[i], &count[i]),
                      "nc_inq_dimlen(outer dimension)"))
            goto fail;
        n *= count[i];
    }
    start[nd - 2] = j->hyper[0];
    start[nd - 1] = j->hyper[1];
    count[nd - 2] = j->hyper[2];
    count[nd - 1] = j->hyper[3];
    n *= j->hyper[2] * j->hyper[3];
    out = malloc(n * j->elem + 1);
    if (!out)
        goto fail;
    if (nc_failed(nc_get_vara(ncid, varid, start, count, out),
                  "nc_get_vara(hyperslab)"))
        goto fail;
    rc = 0;
fail:
    free(out);
    if (ncid >= 0)
        nc_close(ncid);
    return rc;
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

/* ---- the repetitions ------------------------------------------------------ */

int bench_run(const bench_job *j, bench_result *res)
{
    memset(res, 0, sizeof *res);
    netcdf_state ns = {0};
    int32_t *mask = NULL;
    float *field = NULL;
    int ok = 1;
    if (j->method == BENCH_NETCDF && netcdf_prepare(j, &ns) != 0)
        ok = 0;
    if (ok && j->method == BENCH_WRITE) {
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
    /* warm runs read once untimed first; writes need no warming */
    int first = j->cold || j->method == BENCH_WRITE ? 0 : -1;
    for (int i = first; i < j->reps && ok; i++) {
        if (j->cold && j->method != BENCH_WRITE)
            bench_evict(j->file);
        long long before = rchar();
        double t0 = now(), dt = 0;
        int st;
        switch (j->method) {
        case BENCH_NETCDF: st = netcdf_once(j, &ns); break;
        case BENCH_RASTER: st = raster_once(j, 0); break;
        case BENCH_RASTER_MALLOC: st = raster_once(j, 1); break;
        case BENCH_FLOOR: st = floor_once(j); break;
        case BENCH_READ: st = read_once(j); break;
        default: st = write_once(j, mask, field, &dt); break;
        }
        if (j->method != BENCH_WRITE)
            dt = now() - t0;
        ok = st == 0;
        if (i >= 0)
            res->seconds[i] = dt;
        res->rchar = rchar() - before;
        if (j->method == BENCH_WRITE)
            unlink(j->file);
    }
    free(ns.mask);
    free(mask);
    free(field);
    res->ok = ok;
    return ok ? 0 : -1;
}
