/*
 * test_par_small - small collective writes held back in a parallel file
 * (parwrite.c), checked value by value against plain parallel netCDF.
 *
 * usage: mpirun -np N test_par_small MASK.nc DIR
 * Every rank owns a strip of columns and writes, collectively, through
 * raster and through plain parallel netCDF-4 the same sequence, made so
 * that held-back writes must keep their order with every other write:
 *   record 0: one strip-row per call (ParallelIO's pattern: the first
 *     call grows the stores, the rest are held back), then a box of 200
 *     rows of level 1 (too large to hold: the held rows go first, then it
 *     overwrites them), then rows 10-19 of level 0 again (held, written
 *     at close);
 *   record 1: level 0 only, a strip-row per call (the first grows the
 *     stores again), level 1 left to the fill value;
 *   a rank-dependent mix: rank 0 writes record 1's rows 20-29 again with
 *     one call of 10 rows (one plane, held) while the others write
 *     nothing (a zero count: held too); then rank 0 200 rows (too large)
 *     while the others write one row: held nowhere.
 * It runs twice, RASTER_MPIIO auto (writes must be held: the counter
 * par_held_writes grows) and collective (nothing held). Each raster file,
 * read back on every rank (raster_var_get_typed), must equal the plain
 * file (nc_get_var_float) in every value. Exit 0 when all ranks agree.
 */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parwrite.h"
#include "raster.h"

static int rank, nranks, failures;

#define NZ 2
#define NT 2

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "test_par_small (rank %d): %s: %s\n", rank, what, why);
    failures++;
}

/* A writer: plain netCDF (rv NULL) or raster. */
typedef struct out {
    int ncid, vid;
    raster_file *rf;
    raster_var *rv;
} out;

static void put(out *o, size_t t, size_t k, size_t y, size_t ny, size_t x0,
                size_t w, const float *vals)
{
    size_t start[4] = {t, k, y, x0}, count[4] = {1, 1, ny, w};
    if (o->rv) {
        if (raster_var_put_typed(o->rv, start, count, NULL, NULL, vals,
                                 NC_FLOAT) != RASTER_OK)
            fail("raster_var_put_typed", raster_errmsg());
    } else {
        int st = nc_put_vara_float(o->ncid, o->vid, start, count, vals);
        if (st != NC_NOERR)
            fail("nc_put_vara_float", nc_strerror(st));
    }
}

static float value(int pass, size_t t, size_t k, size_t y, size_t x)
{
    return (float)pass * 1e4f + (float)t * 1000.0f + (float)k * 100.0f +
           (float)y * 0.25f + (float)x * 0.001f;
}

/* The sequence above, strip [x0, x0 + w) of an ny x nx grid. */
static void sequence(out *o, size_t ny, size_t x0, size_t w, float *buf)
{
    for (size_t k = 0; k < NZ; k++)
        for (size_t y = 0; y < ny; y++) {
            for (size_t x = 0; x < w; x++)
                buf[x] = value(1, 0, k, y, x0 + x);
            put(o, 0, k, y, 1, x0, w, buf);
        }
    size_t rows = ny < 200 ? ny : 200;
    for (size_t y = 0; y < rows; y++)
        for (size_t x = 0; x < w; x++)
            buf[y * w + x] = value(2, 0, 1, y, x0 + x);
    put(o, 0, 1, 0, rows, x0, w, buf);
    for (size_t y = 10; y < 20 && y < ny; y++) {
        for (size_t x = 0; x < w; x++)
            buf[x] = value(3, 0, 0, y, x0 + x);
        put(o, 0, 0, y, 1, x0, w, buf);
    }
    for (size_t y = 0; y < ny; y++) {
        for (size_t x = 0; x < w; x++)
            buf[x] = value(1, 1, 0, y, x0 + x);
        put(o, 1, 0, y, 1, x0, w, buf);
    }
    if (ny >= 30) {
        for (size_t y = 0; y < 10; y++)
            for (size_t x = 0; x < w; x++)
                buf[y * w + x] = value(4, 1, 0, 20 + y, x0 + x);
        put(o, 1, 0, 20, rank == 0 ? 10 : 0, x0, w, buf);
    }
    /* one rank too large to hold, the others one row: nobody holds
     * (a rank holding alone would leave the others in a collective call) */
    size_t big = rank == 0 ? rows : 1;
    for (size_t y = 0; y < big; y++)
        for (size_t x = 0; x < w; x++)
            buf[y * w + x] = value(5, 1, 0, y, x0 + x);
    put(o, 1, 0, 0, big, x0, w, buf);
}

/* Writes path (raster when mask is set) with the sequence; 0 or 1. */
static int write_file(const char *path, const raster_mask *mask, int mpiio,
                      size_t ny, size_t nx, float *buf)
{
    out o = {0};
    int d[4], st;
    if (mask) {
        if (raster_create_par(path, MPI_COMM_WORLD, MPI_INFO_NULL, &o.rf) !=
            RASTER_OK) {
            fail(path, raster_errmsg());
            return 1;
        }
        o.ncid = raster_file_ncid(o.rf);
        if (raster_file_set_mpiio(o.rf, mpiio) != RASTER_OK)
            fail("raster_file_set_mpiio", raster_errmsg());
    } else if ((st = nc_create_par(path, NC_NETCDF4 | NC_CLOBBER,
                                   MPI_COMM_WORLD, MPI_INFO_NULL,
                                   &o.ncid)) != NC_NOERR) {
        fail(path, nc_strerror(st));
        return 1;
    }
    if (nc_def_dim(o.ncid, "time", NC_UNLIMITED, &d[0]) != NC_NOERR ||
        nc_def_dim(o.ncid, "z_t", NZ, &d[1]) != NC_NOERR ||
        nc_def_dim(o.ncid, "nlat", ny, &d[2]) != NC_NOERR ||
        nc_def_dim(o.ncid, "nlon", nx, &d[3]) != NC_NOERR) {
        fail(path, "defining the dimensions");
        return 1;
    }
    if (mask) {
        if (raster_def_var(o.rf, o.ncid, "TEMP", NC_FLOAT, 4, d, NULL, mask,
                           &o.rv) != RASTER_OK ||
            raster_var_par_access(o.rv, NC_COLLECTIVE) != RASTER_OK) {
            fail("TEMP", raster_errmsg());
            return 1;
        }
    } else if (nc_def_var(o.ncid, "TEMP", NC_FLOAT, 4, d, &o.vid) !=
                   NC_NOERR ||
               nc_var_par_access(o.ncid, o.vid, NC_COLLECTIVE) != NC_NOERR) {
        fail("TEMP", "nc_def_var / nc_var_par_access");
        return 1;
    }
    if ((st = nc_enddef(o.ncid)) != NC_NOERR)
        fail("nc_enddef", nc_strerror(st));
    size_t x0 = nx * (size_t)rank / (size_t)nranks;
    size_t x1 = nx * (size_t)(rank + 1) / (size_t)nranks;
    sequence(&o, ny, x0, x1 - x0, buf);
    if (mask) {
        if (raster_close(o.rf) != RASTER_OK)
            fail("raster_close", raster_errmsg());
    } else if ((st = nc_close(o.ncid)) != NC_NOERR) {
        fail("nc_close", nc_strerror(st));
    }
    return 0;
}

/* Every value of raster file path against the plain values. */
static void compare(const char *path, const float *plain, size_t n,
                    float *got)
{
    raster_file *f;
    raster_var *v;
    if (raster_open_par(path, RASTER_READ, MPI_COMM_WORLD, MPI_INFO_NULL,
                        &f) != RASTER_OK) {
        fail(path, raster_errmsg());
        return;
    }
    size_t shape[4], start[4] = {0};
    if (raster_var_find(f, "TEMP", &v) != RASTER_OK ||
        raster_var_dims(v, NULL, shape, NULL) != RASTER_OK ||
        shape[0] * shape[1] * shape[2] * shape[3] != n ||
        raster_var_get_typed(v, start, shape, NULL, NULL, got, NC_FLOAT) !=
            RASTER_OK) {
        fail(path, raster_errmsg());
        raster_close(f);
        return;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &plain[i], sizeof *got) != 0 && bad++ == 0)
            first = i;
    if (bad) {
        char why[160];
        snprintf(why, sizeof why, "%zu of %zu values differ from plain "
                 "netCDF, first at %zu (%g, wanted %g)", bad, n, first,
                 (double)got[first], (double)plain[first]);
        fail(path, why);
    }
    raster_close(f);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: test_par_small MASK.nc DIR\n");
        MPI_Finalize();
        return 2;
    }
    raster_mask *mask = NULL;
    if (raster_mask_load(argv[1], "REGION_MASK", &mask) != RASTER_OK) {
        fail(argv[1], raster_errmsg());
        MPI_Finalize();
        return 1;
    }
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    size_t n = NT * NZ * ny * nx;
    float *buf = malloc(ny * nx * sizeof *buf);
    float *plain = malloc(n * sizeof *plain), *got = malloc(n * sizeof *got);
    char pp[4096], rp[4096];
    snprintf(pp, sizeof pp, "%s/small_plain.nc", argv[2]);
    int ncid, st;
    if (!buf || !plain || !got) {
        fail("buffers", "out of memory");
    } else if (!write_file(pp, NULL, 0, ny, nx, buf)) {
        if ((st = nc_open(pp, NC_NOWRITE, &ncid)) != NC_NOERR ||
            (st = nc_get_var_float(ncid, 0, plain)) != NC_NOERR)
            fail(pp, nc_strerror(st));
        else
            nc_close(ncid);
        /* auto: held back; collective: never */
        static const int modes[2] = {RASTER_MPIIO_AUTO,
                                     RASTER_MPIIO_COLLECTIVE};
        for (int m = 0; m < 2 && failures == 0; m++) {
            snprintf(rp, sizeof rp, "%s/small_raster%d.nc", argv[2], m);
            size_t before = par_held_writes();
            if (write_file(rp, mask, modes[m], ny, nx, buf))
                break;
            size_t held = par_held_writes() - before;
            if (m == 0 && held < ny)
                fail(rp, "auto held back fewer writes than a level's rows");
            if (m == 1 && held != 0)
                fail(rp, "RASTER_MPIIO collective held writes back");
            compare(rp, plain, n, got);
        }
    }
    free(buf);
    free(plain);
    free(got);
    raster_mask_free(mask);
    int any;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_par_small: %d ranks, %s\n", nranks,
               any ? "FAILED" : "all values equal to plain netCDF");
    MPI_Finalize();
    return any ? 1 : 0;
}
