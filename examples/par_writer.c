/*
 * par_writer - a plain parallel netCDF-4 program (MPI) writing CESM-like
 * ocean output the way CESM's and WRF's I/O layers do on many nodes: every
 * rank creates the file with nc_create_par, defines the same variables and
 * writes its own block of the grid, one nc_put_vara per record. It knows
 * nothing of raster: run it under libraster_preload_mpi.so with
 * RASTER_MASK=grid.nc:REGION_MASK.
 *
 * usage: mpirun -np N par_writer MASKFILE OUT.nc [options]
 *   --decomp rows|blocks|uneven|idle   how ranks share the grid (rows):
 *       rows    bands of whole rows, nearly equal
 *       blocks  a 2-D grid of px x py blocks (px*py = N)
 *       uneven  bands of columns, rank r weighted r+1
 *       idle    odd ranks write nothing (zero-count calls), even ranks
 *               share the rows
 *   --access collective|independent    nc_var_par_access (collective)
 *   --ntime T  --ndepth K              records and levels (3, 4)
 *   --fixed-time    time is a fixed dimension (independent access cannot
 *                   extend an unlimited one)
 *   --deflate N     TEMP deflated at level N with shuffle (HDF5 writes
 *                   filtered datasets collectively only)
 *   --time-json FILE   rank 0 writes {"seconds": S}: the record loop and
 *                      nc_close, slowest rank
 * Values depend only on (record, level, row, column): every decomposition
 * writes the same file.
 */
#include <math.h>
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != NC_NOERR) {                                                \
            fprintf(stderr, "par_writer (rank %d): %s: %s\n", rank, #call,    \
                    nc_strerror(st_));                                        \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

static int rank, nranks;

/* [lo, hi) of n split into parts by weights w (sum W), part i */
static void cut(size_t n, int parts, int i, int weighted, size_t *lo,
                size_t *hi)
{
    size_t W = 0, before = 0;
    for (int j = 0; j < parts; j++) {
        size_t w = weighted ? (size_t)j + 1 : 1;
        W += w;
        if (j < i)
            before += w;
    }
    size_t mine = weighted ? (size_t)i + 1 : 1;
    *lo = n * before / W;
    *hi = n * (before + mine) / W;
}

/* This rank's block of the ny x nx grid: rows [y0,y1), columns [x0,x1). */
static void my_block(const char *decomp, size_t ny, size_t nx, size_t *y0,
                     size_t *y1, size_t *x0, size_t *x1)
{
    *y0 = 0, *y1 = ny, *x0 = 0, *x1 = nx;
    if (strcmp(decomp, "rows") == 0) {
        cut(ny, nranks, rank, 0, y0, y1);
    } else if (strcmp(decomp, "blocks") == 0) {
        int px = 1;
        for (int d = 1; d * d <= nranks; d++)
            if (nranks % d == 0)
                px = d;
        int py = nranks / px;
        cut(ny, py, rank / px, 0, y0, y1);
        cut(nx, px, rank % px, 0, x0, x1);
    } else if (strcmp(decomp, "uneven") == 0) {
        cut(nx, nranks, rank, 1, x0, x1);
    } else { /* idle: odd ranks nothing, even ranks share the rows */
        int workers = (nranks + 1) / 2;
        if (rank % 2) {
            *y1 = *y0; /* empty */
        } else {
            cut(ny, workers, rank / 2, 0, y0, y1);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: par_writer MASKFILE OUT.nc [--decomp "
                    "rows|blocks|uneven|idle] [--access collective|"
                    "independent] [--ntime T] [--ndepth K] [--fixed-time] [--deflate N] "
                    "[--time-json FILE]\n");
        MPI_Finalize();
        return 2;
    }
    const char *decomp = "rows", *json = NULL;
    int access = NC_COLLECTIVE, fixed_time = 0, deflate = 0;
    size_t ntime = 3, ndepth = 4;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--decomp") == 0 && i + 1 < argc)
            decomp = argv[++i];
        else if (strcmp(argv[i], "--access") == 0 && i + 1 < argc)
            access = strcmp(argv[++i], "independent") == 0 ? NC_INDEPENDENT
                                                           : NC_COLLECTIVE;
        else if (strcmp(argv[i], "--ntime") == 0 && i + 1 < argc)
            ntime = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ndepth") == 0 && i + 1 < argc)
            ndepth = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--fixed-time") == 0)
            fixed_time = 1;
        else if (strcmp(argv[i], "--deflate") == 0 && i + 1 < argc)
            deflate = atoi(argv[++i]);
        else if (strcmp(argv[i], "--time-json") == 0 && i + 1 < argc)
            json = argv[++i];
        else {
            if (rank == 0)
                fprintf(stderr, "par_writer: unknown option %s\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (strcmp(decomp, "rows") && strcmp(decomp, "blocks") &&
        strcmp(decomp, "uneven") && strcmp(decomp, "idle")) {
        if (rank == 0)
            fprintf(stderr, "par_writer: unknown decomposition %s\n", decomp);
        MPI_Finalize();
        return 2;
    }

    /* every rank reads the mask (a small file) for the grid and land */
    int mid, mvar, mdims[2];
    size_t ny, nx;
    CHECK(nc_open(argv[1], NC_NOWRITE, &mid));
    CHECK(nc_inq_varid(mid, "REGION_MASK", &mvar));
    CHECK(nc_inq_vardimid(mid, mvar, mdims));
    CHECK(nc_inq_dimlen(mid, mdims[0], &ny));
    CHECK(nc_inq_dimlen(mid, mdims[1], &nx));
    int *mask = malloc(ny * nx * sizeof *mask);
    if (!mask)
        MPI_Abort(MPI_COMM_WORLD, 1);
    CHECK(nc_get_var_int(mid, mvar, mask));
    CHECK(nc_close(mid));

    size_t y0, y1, x0, x1;
    my_block(decomp, ny, nx, &y0, &y1, &x0, &x1);
    size_t by = y1 - y0, bx = x1 - x0, cells = by * bx;
    float *temp = malloc((ndepth * cells + 1) * sizeof *temp);
    double *salt = malloc((ndepth * cells + 1) * sizeof *salt);
    float *ssh = malloc((cells + 1) * sizeof *ssh);
    if (!temp || !salt || !ssh)
        MPI_Abort(MPI_COMM_WORLD, 1);

    int ncid, dt, dz, dy, dx, vtemp, vsalt, vssh, vtime, vz;
    CHECK(nc_create_par(argv[2], NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &ncid));
    CHECK(nc_def_dim(ncid, "time", fixed_time ? ntime : NC_UNLIMITED, &dt));
    CHECK(nc_def_dim(ncid, "z_t", ndepth, &dz));
    CHECK(nc_def_dim(ncid, "nlat", ny, &dy));
    CHECK(nc_def_dim(ncid, "nlon", nx, &dx));
    CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dt, &vtime));
    CHECK(nc_put_att_text(ncid, vtime, "units", 21, "days since 0001-01-01"));
    CHECK(nc_def_var(ncid, "z_t", NC_FLOAT, 1, &dz, &vz));
    int d4[4] = {dt, dz, dy, dx}, d3[3] = {dt, dy, dx};
    size_t chunk[4] = {1, ndepth, ny < 50 ? ny : 50, nx < 50 ? nx : 50};
    CHECK(nc_def_var(ncid, "TEMP", NC_FLOAT, 4, d4, &vtemp));
    CHECK(nc_def_var_chunking(ncid, vtemp, NC_CHUNKED, chunk));
    if (deflate > 0)
        CHECK(nc_def_var_deflate(ncid, vtemp, 1, 1, deflate));
    float ffill = 9.96921e36f;
    CHECK(nc_put_att_float(ncid, vtemp, "_FillValue", NC_FLOAT, 1, &ffill));
    CHECK(nc_put_att_text(ncid, vtemp, "units", 4, "degC"));
    CHECK(nc_def_var(ncid, "SALT", NC_DOUBLE, 4, d4, &vsalt));
    CHECK(nc_def_var_chunking(ncid, vsalt, NC_CHUNKED, chunk));
    double dfill = 9.969209968386869e36;
    CHECK(nc_put_att_double(ncid, vsalt, "_FillValue", NC_DOUBLE, 1, &dfill));
    CHECK(nc_def_var(ncid, "SSH", NC_FLOAT, 3, d3, &vssh));
    size_t chunk3[3] = {1, chunk[2], chunk[3]};
    CHECK(nc_def_var_chunking(ncid, vssh, NC_CHUNKED, chunk3));
    CHECK(nc_put_att_float(ncid, vssh, "_FillValue", NC_FLOAT, 1, &ffill));
    /* as ParallelIO does: the access is set right after the definition */
    CHECK(nc_var_par_access(ncid, vtemp, access));
    CHECK(nc_var_par_access(ncid, vsalt, access));
    CHECK(nc_var_par_access(ncid, vssh, access));
    CHECK(nc_var_par_access(ncid, vtime, NC_COLLECTIVE));
    CHECK(nc_var_par_access(ncid, vz, NC_COLLECTIVE));
    CHECK(nc_enddef(ncid));

    /* coordinates: rank 0 writes, the others take part with nothing */
    size_t zero = 0;
    float zval[64];
    for (size_t k = 0; k < ndepth && k < 64; k++)
        zval[k] = 5.0f + 10.0f * (float)k;
    size_t zc = rank == 0 ? (ndepth < 64 ? ndepth : 64) : 0;
    CHECK(nc_put_vara_float(ncid, vz, &zero, &zc, zval));

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t t = 0; t < ntime; t++) {
        double day = 365.0 * (double)t;
        size_t one = rank == 0 ? 1 : 0;
        CHECK(nc_put_vara_double(ncid, vtime, &t, &one, &day));
        for (size_t k = 0; k < ndepth; k++)
            for (size_t y = y0; y < y1; y++)
                for (size_t x = x0; x < x1; x++) {
                    size_t i = (k * by + (y - y0)) * bx + (x - x0);
                    int land = mask[y * nx + x] == 0;
                    double lat = -79.0 + 168.0 * (double)y / (double)ny;
                    temp[i] = land ? ffill
                                   : (float)(28 * cos(lat * M_PI / 180) -
                                             0.5 * (double)k + 0.1 * (double)t +
                                             0.001 * (double)x);
                    salt[i] = land ? dfill
                                   : 34.5 + 0.01 * (double)k +
                                         1e-4 * (double)(y + t);
                    if (k == 0)
                        ssh[(y - y0) * bx + (x - x0)] =
                            land ? ffill
                                 : (float)(0.01 * (double)(x + y) -
                                           0.3 * (double)t);
                }
        size_t start[4] = {t, 0, y0, x0}, count[4] = {1, ndepth, by, bx};
        size_t s3[3] = {t, y0, x0}, c3[3] = {1, by, bx};
        if (cells == 0) /* nothing of the grid: zero counts */
            count[0] = c3[0] = 0;
        if (cells > 0 || access == NC_COLLECTIVE) {
            CHECK(nc_put_vara_float(ncid, vtemp, start, count, temp));
            CHECK(nc_put_vara(ncid, vsalt, start, count, salt));
            CHECK(nc_put_vara_float(ncid, vssh, s3, c3, ssh));
        }
    }
    CHECK(nc_close(ncid)); /* timed too: raster finishes its tables here */
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && json) {
        FILE *fp = fopen(json, "w");
        if (fp) {
            fprintf(fp, "{\"seconds\": %.6f}\n", slowest);
            fclose(fp);
        }
    }
    free(mask);
    free(temp);
    free(salt);
    free(ssh);
    MPI_Finalize();
    return 0;
}
