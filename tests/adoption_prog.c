/*
 * adoption_prog - a plain netCDF-C program (it knows nothing of raster)
 * that defines and writes float variables on a 60 x 70 grid in the call
 * orders real programs use, for test_adoption_order.sh (issue 39). Under
 * the shim with a mask every variable named below must be stored by
 * region whatever the order: raster adopts them where netCDF ends the
 * definition, whoever ends it.
 *
 * usage: adoption_prog MODE OUT.nc        (serial build)
 *        mpirun -np N adoption_prog_mpi MODE OUT.nc
 * MODE (variables A and B of (time, y, x), two records each, unless said):
 *   noenddef    define A, B; write A, B; never nc_enddef
 *   enddef      the same with nc_enddef before the writes
 *   reverse     define A, B; write B, then A (no nc_enddef)
 *   after       define A; write A; define B (netCDF re-enters define mode
 *               itself); write B
 *   redef       define A; nc_enddef; write A; nc_redef; define B;
 *               nc_enddef; write B
 *   redef_open  as redef without the second nc_enddef
 *   coord_first coordinates time(time) and lat(y) with attributes, A and
 *               B; time and lat written first, then B and A
 *   settings    A: _FillValue, then deflate 2 + shuffle; B defined, then
 *               quantize (BitGroom, 3 digits) and a _FillValue; B written
 *               first (the serial flavour: HDF5 writes no filters in
 *               parallel)
 *   settings2   A and B defined; B: deflate 1, A: fletcher32 and a
 *               _FillValue, set after both definitions; A written first
 *   nodata      define A, B; nc_close with no data written
 *   twofiles    OUT.nc and OUT.nc.2 open at once, A and B in each,
 *               definitions and writes interleaved across the files
 *   late_att    A, B and a 3-D depth(time, y, x); A gets the attribute
 *               coordinates = "depth" only after the first data call
 *               (docs/SHIM.md: depth has been taken as data by then)
 * Values: A at (t, y, x) is t * 10000 + y * 100 + x, B that plus 0.5,
 * depth that plus 0.25. Exit status 0, or 1 with the failing call and
 * netCDF's message on stderr.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef ADOPTION_MPI
#include <mpi.h>
#include <netcdf_par.h>
#endif

#define NY 60
#define NX 70
#define NREC 2

static int failed(int st, const char *what)
{
    if (st == NC_NOERR)
        return 0;
    fprintf(stderr, "adoption_prog: %s: %s [%d]\n", what, nc_strerror(st), st);
    return 1;
}

/* This process's rows: all of them serially, a band per rank in MPI. */
static size_t row0 = 0, nrows = NY;

/* A file being written: its id and its dimensions. */
typedef struct file {
    int ncid, dt, dy, dx;
} file;

static int create(const char *path, file *f)
{
#ifdef ADOPTION_MPI
    if (failed(nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &f->ncid),
               "nc_create_par"))
        return 1;
#else
    if (failed(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &f->ncid),
               "nc_create"))
        return 1;
#endif
    if (failed(nc_def_dim(f->ncid, "time", NC_UNLIMITED, &f->dt),
               "nc_def_dim"))
        return 1;
    if (failed(nc_def_dim(f->ncid, "y", NY, &f->dy), "nc_def_dim"))
        return 1;
    if (failed(nc_def_dim(f->ncid, "x", NX, &f->dx), "nc_def_dim"))
        return 1;
    return 0;
}

static int define(file *f, const char *name, int *varid)
{
    int dims[3] = {f->dt, f->dy, f->dx};
    if (failed(nc_def_var(f->ncid, name, NC_FLOAT, 3, dims, varid),
               "nc_def_var"))
        return 1;
#ifdef ADOPTION_MPI
    if (failed(nc_var_par_access(f->ncid, *varid, NC_COLLECTIVE),
               "nc_var_par_access"))
        return 1;
#endif
    if (failed(nc_put_att_text(f->ncid, *varid, "units", 4, "degC"),
               "nc_put_att_text"))
        return 1;
    return 0;
}

/* Writes NREC records of variable varid, whose values are offset by add. */
static int write_var(file *f, int varid, float add)
{
    static float buf[NY * NX];
    for (size_t t = 0; t < NREC; t++) {
        for (size_t y = 0; y < nrows; y++)
            for (size_t x = 0; x < NX; x++)
                buf[y * NX + x] = (float)(t * 10000 + (row0 + y) * 100 + x) +
                                  add;
        size_t start[3] = {t, row0, 0}, count[3] = {1, nrows, NX};
        if (failed(nc_put_vara_float(f->ncid, varid, start, count, buf),
                   "nc_put_vara_float"))
            return 1;
    }
    return 0;
}

static int settings(file *f, int a, int b, int second)
{
    float fa = -999.0f, fb = -1.0e30f;
    if (!second) {
        if (failed(
                nc_put_att_float(f->ncid, a, "_FillValue", NC_FLOAT, 1, &fa),
                "nc_put_att_float"))
            return 1;
        if (failed(nc_def_var_deflate(f->ncid, a, 1, 1, 2),
                   "nc_def_var_deflate"))
            return 1;
        if (define(f, "B", &b))
            return 1;
        if (failed(nc_def_var_quantize(f->ncid, b, NC_QUANTIZE_BITGROOM, 3),
                   "nc_def_var_quantize"))
            return 1;
        if (failed(
                nc_put_att_float(f->ncid, b, "_FillValue", NC_FLOAT, 1, &fb),
                "nc_put_att_float"))
            return 1;
        if (write_var(f, b, 0.5f))
            return 1;
        return write_var(f, a, 0.0f);
    }
    if (failed(nc_def_var_deflate(f->ncid, b, 0, 1, 1), "nc_def_var_deflate"))
        return 1;
    if (failed(nc_def_var_fletcher32(f->ncid, a, NC_FLETCHER32),
               "nc_def_var_fletcher32"))
        return 1;
    if (failed(nc_put_att_float(f->ncid, a, "_FillValue", NC_FLOAT, 1, &fa),
               "nc_put_att_float"))
        return 1;
    if (write_var(f, a, 0.0f))
        return 1;
    return write_var(f, b, 0.5f);
}

static int coord_first(file *f)
{
    int vt, vlat, a, b;
    if (failed(nc_def_var(f->ncid, "time", NC_DOUBLE, 1, &f->dt, &vt),
               "nc_def_var"))
        return 1;
    if (failed(
            nc_put_att_text(f->ncid, vt, "units", 19, "days since 2000-1-1"),
            "nc_put_att_text"))
        return 1;
    if (failed(nc_def_var(f->ncid, "lat", NC_DOUBLE, 1, &f->dy, &vlat),
               "nc_def_var"))
        return 1;
    if (failed(nc_put_att_text(f->ncid, vlat, "units", 13, "degrees_north"),
               "nc_put_att_text"))
        return 1;
    if (define(f, "A", &a))
        return 1;
    if (define(f, "B", &b))
        return 1;
#ifdef ADOPTION_MPI
    if (failed(nc_var_par_access(f->ncid, vt, NC_COLLECTIVE),
               "nc_var_par_access"))
        return 1;
    if (failed(nc_var_par_access(f->ncid, vlat, NC_COLLECTIVE),
               "nc_var_par_access"))
        return 1;
#endif
    double days[NREC] = {0.5, 1.5}, lat[NY];
    for (int y = 0; y < NY; y++)
        lat[y] = -89.5 + 3.0 * y;
    size_t s0 = 0, nt = NREC, ny = NY;
    if (failed(nc_put_vara_double(f->ncid, vt, &s0, &nt, days),
               "nc_put_vara_double"))
        return 1;
    if (failed(nc_put_vara_double(f->ncid, vlat, &s0, &ny, lat),
               "nc_put_vara_double"))
        return 1;
    if (write_var(f, b, 0.5f))
        return 1;
    return write_var(f, a, 0.0f);
}

static int two_files(const char *path)
{
    char second[4096];
    snprintf(second, sizeof second, "%s.2", path);
    file f1, f2;
    int a1, b1, a2, b2;
    if (create(path, &f1))
        return 1;
    if (create(second, &f2))
        return 1;
    if (define(&f1, "A", &a1))
        return 1;
    if (define(&f2, "A", &a2))
        return 1;
    if (define(&f1, "B", &b1))
        return 1;
    if (define(&f2, "B", &b2))
        return 1;
    if (write_var(&f1, a1, 0.0f))
        return 1;
    if (write_var(&f2, b2, 0.5f))
        return 1;
    if (write_var(&f1, b1, 0.5f))
        return 1;
    if (write_var(&f2, a2, 0.0f))
        return 1;
    if (failed(nc_close(f2.ncid), "nc_close"))
        return 1;
    if (failed(nc_close(f1.ncid), "nc_close"))
        return 1;
    return 0;
}

static int late_att(file *f)
{
    int a, b, d;
    if (define(f, "A", &a))
        return 1;
    if (define(f, "B", &b))
        return 1;
    if (define(f, "depth", &d))
        return 1;
    if (write_var(f, a, 0.0f))
        return 1;
    if (failed(nc_put_att_text(f->ncid, a, "coordinates", 5, "depth"),
               "nc_put_att_text"))
        return 1;
    if (write_var(f, b, 0.5f))
        return 1;
    return write_var(f, d, 0.25f);
}

static int run(const char *mode, const char *path)
{
    if (strcmp(mode, "twofiles") == 0)
        return two_files(path);
    file f;
    int a, b = -1;
    if (create(path, &f))
        return 1;
    if (strcmp(mode, "coord_first") == 0 || strcmp(mode, "late_att") == 0) {
        if (strcmp(mode, "coord_first") == 0 ? coord_first(&f) : late_att(&f))
            return 1;
        if (failed(nc_close(f.ncid), "nc_close"))
            return 1;
        return 0;
    }
    if (define(&f, "A", &a))
        return 1;
    if (strcmp(mode, "settings") == 0) {
        if (settings(&f, a, b, 0))
            return 1;
    } else if (strcmp(mode, "after") == 0 || strcmp(mode, "redef") == 0 ||
               strcmp(mode, "redef_open") == 0) {
        if (strcmp(mode, "after") != 0)
            if (failed(nc_enddef(f.ncid), "nc_enddef"))
                return 1;
        if (write_var(&f, a, 0.0f))
            return 1;
        if (strcmp(mode, "after") != 0)
            if (failed(nc_redef(f.ncid), "nc_redef"))
                return 1;
        if (define(&f, "B", &b))
            return 1;
        if (strcmp(mode, "redef") == 0)
            if (failed(nc_enddef(f.ncid), "nc_enddef"))
                return 1;
        if (write_var(&f, b, 0.5f))
            return 1;
    } else {
        if (define(&f, "B", &b))
            return 1;
        if (strcmp(mode, "settings2") == 0) {
            if (settings(&f, a, b, 1))
                return 1;
        } else if (strcmp(mode, "enddef") == 0) {
            if (failed(nc_enddef(f.ncid), "nc_enddef"))
                return 1;
            if (write_var(&f, a, 0.0f))
                return 1;
            if (write_var(&f, b, 0.5f))
                return 1;
        } else if (strcmp(mode, "reverse") == 0) {
            if (write_var(&f, b, 0.5f))
                return 1;
            if (write_var(&f, a, 0.0f))
                return 1;
        } else if (strcmp(mode, "noenddef") == 0) {
            if (write_var(&f, a, 0.0f))
                return 1;
            if (write_var(&f, b, 0.5f))
                return 1;
        } else if (strcmp(mode, "nodata") != 0) {
            fprintf(stderr, "adoption_prog: unknown mode %s\n", mode);
            return 2;
        }
    }
    if (failed(nc_close(f.ncid), "nc_close"))
        return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: adoption_prog MODE OUT.nc\n");
        return 2;
    }
#ifdef ADOPTION_MPI
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    row0 = NY * (size_t)rank / (size_t)size;
    nrows = NY * (size_t)(rank + 1) / (size_t)size - row0;
    int rc = run(argv[1], argv[2]);
    MPI_Finalize();
    return rc;
#else
    return run(argv[1], argv[2]);
#endif
}
