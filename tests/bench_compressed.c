/*
 * bench_compressed.c - region reads of a deflated raster file (deflate 1 +
 * shuffle on every store, as CESM writes) by raster's inflater, by the
 * netCDF fallback, and by plain netCDF reading each region's bounding box
 * from the same data deflated in a plain file; and libdeflate against zlib
 * on the file's own chunks. Not a test: prints milliseconds (the median
 * of REPS warm runs).
 *
 * usage: bench_compressed DIR [NT [reuse [fast]]]
 *   reuse: the files DIR has; fast: only raster's inflating reads, many
 *   times (for a profiler)
 */
#include <hdf5.h>
#include <libdeflate.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include <netcdf.h>

#include "raster.h"

#include "chunkio.h"
#include "fileio.h"
#include "unfilter.h"
#include "var.h"

#define NY 900
#define NX 1200
#define PLANE ((size_t)NY * NX)
#define REPS 7
#define NBASIN 5

#define CHECK(x)                                                              \
    do {                                                                      \
        int st_ = (x);                                                        \
        if (st_) {                                                            \
            fprintf(stderr, "%s:%d: %s: %d %s\n", __FILE__, __LINE__, #x,     \
                    st_, raster_errmsg());                                    \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
#define NCCHECK(x)                                                            \
    do {                                                                      \
        int st_ = (x);                                                        \
        if (st_) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,        \
                    nc_strerror(st_));                                        \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return t[n / 2];
}

/* Five basins of irregular outline and an ocean of id 6 around them. */
static int32_t basin(size_t y, size_t x)
{
    double wob = 30 * sin(x / 37.0) + 20 * cos(y / 23.0);
    if (y < 300 + wob && x < 500)
        return 1;
    if (y < 300 + wob)
        return 2;
    if (y < 650 - wob && x < 350 + wob)
        return 3;
    if (y < 650 - wob)
        return 4;
    if (x < 800 + wob)
        return 5;
    return 6;
}

static float field(size_t t, size_t y, size_t x)
{
    /* smooth, with a little noise in the low bits: compresses about as
     * model output does (deflate 1 + shuffle: 1.5x to 3x) */
    unsigned h = (unsigned)(y * 2654435761u ^ x * 40503u ^ t * 97u);
    return (float)(280 + 10 * sin(x / 50.0 + t * 0.1) * cos(y / 40.0) +
                   (h % 1000) * 1e-4);
}

static void write_files(const char *rpath, const char *ppath, size_t nt)
{
    int32_t *m = malloc(PLANE * sizeof *m);
    float *buf = malloc(nt * PLANE * sizeof *buf);
    for (size_t y = 0; y < NY; y++)
        for (size_t x = 0; x < NX; x++)
            m[y * NX + x] = basin(y, x);
    for (size_t t = 0; t < nt; t++)
        for (size_t i = 0; i < PLANE; i++)
            buf[t * PLANE + i] = field(t, i / NX, i % NX);
    raster_mask *mask;
    CHECK(raster_mask_wrap(m, NY, NX, &mask));
    raster_file *rf;
    raster_var *rv;
    CHECK(raster_create(rpath, &rf));
    int ncid = raster_file_ncid(rf), d[3];
    NCCHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &d[0]));
    NCCHECK(nc_def_dim(ncid, "nlat", NY, &d[1]));
    NCCHECK(nc_def_dim(ncid, "nlon", NX, &d[2]));
    CHECK(raster_def_var(rf, ncid, "TEMP", NC_FLOAT, 3, d, NULL, mask, &rv));
    for (size_t s = 0; s <= rv->nregions; s++) {
        if (rv->store_var[s] < 0)
            continue;
        NCCHECK(nc_def_var_deflate(rv->store_grp[s], rv->store_var[s], 1, 1,
                                   1));
    }
    size_t start[3] = {0, 0, 0}, count[3] = {nt, NY, NX};
    CHECK(raster_var_put(rv, start, count, NULL, buf));
    CHECK(raster_close(rf));
    raster_mask_free(mask);

    int nc, v;
    NCCHECK(nc_create(ppath, NC_NETCDF4 | NC_CLOBBER, &nc));
    NCCHECK(nc_def_dim(nc, "time", NC_UNLIMITED, &d[0]));
    NCCHECK(nc_def_dim(nc, "nlat", NY, &d[1]));
    NCCHECK(nc_def_dim(nc, "nlon", NX, &d[2]));
    NCCHECK(nc_def_var(nc, "TEMP", NC_FLOAT, 3, d, &v));
    NCCHECK(nc_def_var_deflate(nc, v, 1, 1, 1));
    NCCHECK(nc_put_vara_float(nc, v, start, count, buf));
    size_t ck[3];
    int storage;
    NCCHECK(nc_inq_var_chunking(nc, v, &storage, ck));
    printf("plain file: netCDF's default chunks %zu x %zu x %zu\n", ck[0],
           ck[1], ck[2]);
    NCCHECK(nc_close(nc));
    free(m);
    free(buf);
}

/* The last raster_read()'s median ms of a read of one record. */
static double one_record_ms;

/* Median ms of a raster region read of basin id, all records. */
static double raster_read(const char *path, int32_t id, size_t nt,
                          size_t *inflated)
{
    raster_file *rf;
    raster_var *rv;
    CHECK(raster_open(path, RASTER_READ, &rf));
    CHECK(raster_var_find(rf, "TEMP", &rv));
    size_t cells, ostart[1] = {0}, ocount[1] = {nt};
    CHECK(raster_region_size(rv, &id, 1, RASTER_LAYOUT_PACKED, &cells));
    float *buf = malloc(cells * nt * sizeof *buf);
    double t[REPS];
    size_t before = chunkio_chunks_inflated();
    CHECK(raster_region_read(rv, &id, 1, ostart, ocount,
                             RASTER_LAYOUT_PACKED, buf)); /* warm */
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        CHECK(raster_region_read(rv, &id, 1, ostart, ocount,
                                 RASTER_LAYOUT_PACKED, buf));
        t[r] = now() - t0;
    }
    *inflated = (chunkio_chunks_inflated() - before) / (REPS + 1);
    /* one record (the last), many times: what a small read costs */
    double t1[REPS];
    ostart[0] = nt - 1;
    ocount[0] = 1;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        for (int k = 0; k < 20; k++)
            CHECK(raster_region_read(rv, &id, 1, ostart, ocount,
                                     RASTER_LAYOUT_PACKED, buf));
        t1[r] = (now() - t0) / 20;
    }
    one_record_ms = median(t1, REPS) * 1e3;
    free(buf);
    CHECK(raster_close(rf));
    return median(t, REPS) * 1e3;
}

/* Median ms of nc_get_vara of basin id's bounding box, all records, then
 * the mask applied (numpy's var[..., mask == id]). */
static double plain_read(const char *ppath, const char *rpath, int32_t id,
                         size_t nt)
{
    raster_file *rf;
    raster_var *rv;
    size_t box[4];
    CHECK(raster_open(rpath, RASTER_READ, &rf));
    CHECK(raster_var_find(rf, "TEMP", &rv));
    CHECK(raster_region_bbox(rv, &id, 1, box));
    CHECK(raster_close(rf));
    size_t h = box[2] - box[0], w = box[3] - box[1];
    float *buf = malloc(nt * h * w * sizeof *buf);
    float *out = malloc(nt * h * w * sizeof *out);
    unsigned char *in = malloc(h * w); /* the mask, as a reader holds it */
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++)
            in[y * w + x] = basin(box[0] + y, box[1] + x) == id;
    double t[REPS];
    for (int r = -1; r < REPS; r++) {
        int nc, v;
        double t0 = now();
        NCCHECK(nc_open(ppath, NC_NOWRITE, &nc));
        NCCHECK(nc_inq_varid(nc, "TEMP", &v));
        size_t start[3] = {0, box[0], box[1]}, count[3] = {nt, h, w};
        NCCHECK(nc_get_vara_float(nc, v, start, count, buf));
        size_t k = 0;
        for (size_t p = 0; p < nt; p++)
            for (size_t y = 0; y < h; y++)
                for (size_t x = 0; x < w; x++)
                    if (in[y * w + x])
                        out[k++] = buf[(p * h + y) * w + x];
        NCCHECK(nc_close(nc));
        if (r >= 0)
            t[r] = now() - t0;
    }
    free(buf);
    free(out);
    free(in);
    return median(t, REPS) * 1e3;
}

/* libdeflate and zlib on every chunk of store 0 (basin 1), from memory:
 * MB/s of output. */
static void inflaters(const char *rpath)
{
    raster_file *rf;
    raster_var *rv;
    CHECK(raster_open(rpath, RASTER_READ, &rf));
    CHECK(raster_var_find(rf, "TEMP", &rv));
    double lib_s = 0, z_s = 0, bytes = 0, stored = 0;
    for (size_t s = 0; s <= rv->nregions; s++) {
        hid_t did = (hid_t)fileio_store(rv, s);
        if (did < 0)
            continue;
        hid_t space = H5Dget_space(did), dcpl = H5Dget_create_plist(did);
        hsize_t n = 0, ck[2];
        H5Dget_num_chunks(did, space, &n);
        H5Pget_chunk(dcpl, 2, ck);
        size_t raw = (size_t)(ck[0] * ck[1]) * 4;
        unsigned char *out = malloc(raw), *sh = malloc(raw);
        struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
        for (hsize_t i = 0; i < n; i++) {
            hsize_t off[2], size;
            haddr_t addr;
            unsigned mask;
            H5Dget_chunk_info(did, space, i, off, &mask, &addr, &size);
            unsigned char *in = malloc(size);
            uint32_t filters;
            if (H5Dread_chunk(did, H5P_DEFAULT, off, &filters, in) < 0)
                exit(1);
            size_t got = 0;
            double t0 = now();
            for (int r = 0; r < 5; r++)
                if (libdeflate_zlib_decompress(d, in, size, out, raw, &got) !=
                    LIBDEFLATE_SUCCESS || got != raw)
                    exit(2);
            double t1 = now();
            for (int r = 0; r < 5; r++) {
                uLongf zl = raw;
                if (uncompress(sh, &zl, in, size) != Z_OK || zl != raw)
                    exit(3);
            }
            double t2 = now();
            if (memcmp(out, sh, raw) != 0)
                exit(4);
            lib_s += t1 - t0;
            z_s += t2 - t1;
            bytes += 5.0 * raw;
            stored += 5.0 * size;
            free(in);
        }
        libdeflate_free_decompressor(d);
        free(out);
        free(sh);
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Dclose(did);
    }
    CHECK(raster_close(rf));
    printf("inflating every chunk of the raster file from memory "
           "(%.1f MB out, ratio %.2f): libdeflate %.0f MB/s, zlib %.0f "
           "MB/s (%.2fx)\n", bytes / 5e6, bytes / stored, bytes / lib_s / 1e6,
           bytes / z_s / 1e6, z_s / lib_s);
}

/* Median ms of the whole variable: raster_var_get (inflater on or off)
 * and nc_get_vara of the plain file. */
static void full_reads(const char *rpath, const char *ppath, size_t nt)
{
    float *buf = malloc(nt * PLANE * sizeof *buf);
    size_t start[3] = {0, 0, 0}, count[3] = {nt, NY, NX};
    double t[3][REPS];
    for (int mode = 0; mode < 3; mode++) {
        chunkio_set_inflate(mode == 0);
        for (int r = -1; r < REPS; r++) {
            double t0 = now();
            if (mode < 2) {
                raster_file *rf;
                raster_var *rv;
                CHECK(raster_open(rpath, RASTER_READ, &rf));
                CHECK(raster_var_find(rf, "TEMP", &rv));
                CHECK(raster_var_get(rv, start, count, NULL, buf));
                CHECK(raster_close(rf));
            } else {
                int nc, v;
                NCCHECK(nc_open(ppath, NC_NOWRITE, &nc));
                NCCHECK(nc_inq_varid(nc, "TEMP", &v));
                NCCHECK(nc_get_vara_float(nc, v, start, count, buf));
                NCCHECK(nc_close(nc));
            }
            if (r >= 0)
                t[mode][r] = now() - t0;
        }
    }
    chunkio_set_inflate(1);
    double a = median(t[0], REPS), b = median(t[1], REPS),
           c = median(t[2], REPS);
    printf("whole variable (open, read, close): raster %.1f ms, fallback "
           "%.1f ms, plain netCDF %.1f ms (plain / raster %.2f)\n", a * 1e3,
           b * 1e3, c * 1e3, c / a);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [NT]\n", argv[0]);
        return 2;
    }
    size_t nt = argc > 2 ? (size_t)atoi(argv[2]) : 12;
    char rpath[4096], ppath[4096];
    snprintf(rpath, sizeof rpath, "%s/bench_deflate.raster.nc", argv[1]);
    snprintf(ppath, sizeof ppath, "%s/bench_deflate.plain.nc", argv[1]);
    if (argc < 4 || strcmp(argv[3], "reuse") != 0)
        write_files(rpath, ppath, nt);
    if (argc > 4 && strcmp(argv[4], "fast") == 0) {
        size_t inflated;
        for (int k = 0; k < 10; k++)
            for (int32_t id = 1; id <= NBASIN; id++)
                raster_read(rpath, id, nt, &inflated);
        return 0;
    }
    printf("grid %d x %d, %zu records of float; raster inflates with %s\n",
           NY, NX, nt, unfilter_inflater());
    inflaters(rpath);
    printf("%-6s %8s %8s %10s %10s %10s %8s %8s\n", "basin", "cells",
           "chunks", "raster ms", "fallback", "plain bbox", "vs plain",
           "vs fallb");
    double lg = 0;
    for (int32_t id = 1; id <= NBASIN; id++) {
        size_t inflated = 0, dummy;
        raster_set_threads(0);
        double fast = raster_read(rpath, id, nt, &inflated);
        double small = one_record_ms;
        chunkio_set_inflate(0);
        double slow = raster_read(rpath, id, nt, &dummy);
        chunkio_set_inflate(1);
        double plain = plain_read(ppath, rpath, id, nt);
        raster_set_threads(1);
        double one = raster_read(rpath, id, nt, &dummy);
        raster_set_threads(0);
        raster_file *rf;
        raster_var *rv;
        size_t cells;
        CHECK(raster_open(rpath, RASTER_READ, &rf));
        CHECK(raster_var_find(rf, "TEMP", &rv));
        CHECK(raster_region_size(rv, &id, 1, RASTER_LAYOUT_PACKED, &cells));
        CHECK(raster_close(rf));
        printf("%-6d %8zu %8zu %10.2f %10.2f %10.2f %7.1fx %7.1fx  "
               "(1 thread %.2f ms; one record %.2f ms)\n", (int)id, cells,
               inflated, fast, slow, plain, plain / fast, slow / fast, one,
               small);
        lg += log(plain / fast);
    }
    printf("geomean speedup vs plain netCDF bbox: %.2fx\n",
           exp(lg / NBASIN));
    full_reads(rpath, ppath, nt);
    return 0;
}
