/*
 * cesm_writer - a plain netCDF-C program writing CESM-like ocean output, as
 * CESM's I/O layer does: one nc_put_vara call per record. TEMP is written
 * with the typed nc_put_vara_float, SALT with the untyped nc_put_vara (as
 * ParallelIO does). It knows nothing of raster: run it under
 * libraster_preload.so with RASTER_MASK=grid.nc:REGION_MASK.
 *
 * usage: cesm_writer MASKFILE OUT.nc [NTIME NDEPTH]
 * The grid (nlat x nlon) and land (REGION_MASK == 0) come from MASKFILE.
 *
 * Built with -DUSE_RASTER_SPEC it is the paper's route instead: TEMP's mask
 * goes in through nc_def_var_chunking, built by the header-only helper in
 * raster.h (the lines under USE_RASTER_SPEC; no new link dependency). Under
 * the shim TEMP is stored by region; without it that call fails loudly.
 */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef USE_RASTER_SPEC
#include "raster.h"
#endif

#define CHECK(call)                                                           \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != NC_NOERR) {                                                \
            fprintf(stderr, "cesm_writer: %s: %s\n", #call,                   \
                    nc_strerror(st_));                                        \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cesm_writer MASKFILE OUT.nc [NTIME NDEPTH]\n");
        return 2;
    }
    size_t ntime = argc > 3 ? strtoul(argv[3], NULL, 10) : 3;
    size_t ndepth = argc > 4 ? strtoul(argv[4], NULL, 10) : 4;
    int mid, mvar, mdims[2];
    size_t ny, nx;
    CHECK(nc_open(argv[1], NC_NOWRITE, &mid));
    CHECK(nc_inq_varid(mid, "REGION_MASK", &mvar));
    CHECK(nc_inq_vardimid(mid, mvar, mdims));
    CHECK(nc_inq_dimlen(mid, mdims[0], &ny));
    CHECK(nc_inq_dimlen(mid, mdims[1], &nx));
    int *mask = malloc(ny * nx * sizeof *mask);
    float *temp = malloc(ndepth * ny * nx * sizeof *temp);
    double *salt = malloc(ndepth * ny * nx * sizeof *salt);
    if (!mask || !temp || !salt)
        return 1;
    CHECK(nc_get_var_int(mid, mvar, mask));
    CHECK(nc_close(mid));

    int ncid, dt, dz, dy, dx, vtemp, vsalt, vtime, vz;
    CHECK(nc_create(argv[2], NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt));
    CHECK(nc_def_dim(ncid, "z_t", ndepth, &dz));
    CHECK(nc_def_dim(ncid, "nlat", ny, &dy));
    CHECK(nc_def_dim(ncid, "nlon", nx, &dx));
    CHECK(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dt, &vtime));
    CHECK(nc_put_att_text(ncid, vtime, "units", 21, "days since 0001-01-01"));
    CHECK(nc_def_var(ncid, "z_t", NC_FLOAT, 1, &dz, &vz));
    int d4[4] = {dt, dz, dy, dx};
    CHECK(nc_def_var(ncid, "TEMP", NC_FLOAT, 4, d4, &vtemp));
    size_t chunk[4] = {1, ndepth, ny < 50 ? ny : 50, nx < 50 ? nx : 50};
#ifdef USE_RASTER_SPEC
    size_t *spec = malloc(raster_chunkspec_len(4, ny, nx) * sizeof *spec);
    if (!spec)
        return 1;
    raster_chunkspec(spec, 4, chunk, mask, ny, nx);
    CHECK(nc_def_var_chunking(ncid, vtemp, NC_CHUNKED, spec));
    free(spec);
#else
    CHECK(nc_def_var_chunking(ncid, vtemp, NC_CHUNKED, chunk));
#endif
    float ffill = 9.96921e36f;
    CHECK(nc_put_att_float(ncid, vtemp, "_FillValue", NC_FLOAT, 1, &ffill));
    CHECK(nc_put_att_text(ncid, vtemp, "long_name", 21,
                          "Potential Temperature"));
    CHECK(nc_put_att_text(ncid, vtemp, "units", 4, "degC"));
    CHECK(nc_def_var(ncid, "SALT", NC_DOUBLE, 4, d4, &vsalt));
    CHECK(nc_def_var_chunking(ncid, vsalt, NC_CHUNKED, chunk));
    double dfill = 9.969209968386869e36;
    CHECK(nc_put_att_double(ncid, vsalt, "_FillValue", NC_DOUBLE, 1, &dfill));
    CHECK(nc_put_att_text(ncid, vsalt, "units", 13, "gram/kilogram"));
    CHECK(nc_enddef(ncid));

    for (size_t k = 0; k < ndepth; k++) {
        float z = 5.0f + 10.0f * (float)k;
        CHECK(nc_put_var1_float(ncid, vz, &k, &z));
    }
    for (size_t t = 0; t < ntime; t++) {
        double day = 365.0 * (double)t;
        CHECK(nc_put_var1_double(ncid, vtime, &t, &day));
        for (size_t k = 0; k < ndepth; k++)
            for (size_t y = 0; y < ny; y++)
                for (size_t x = 0; x < nx; x++) {
                    size_t i = (k * ny + y) * nx + x;
                    int land = mask[y * nx + x] == 0;
                    double lat = -79.0 + 168.0 * (double)y / (double)ny;
                    temp[i] = land ? ffill
                                   : (float)(28 * cos(lat * M_PI / 180) -
                                             0.5 * (double)k + 0.1 * (double)t +
                                             0.001 * (double)x);
                    salt[i] = land ? dfill
                                   : 34.5 + 0.01 * (double)k + 1e-4 * (double)(y + t);
                }
        size_t start[4] = {t, 0, 0, 0}, count[4] = {1, ndepth, ny, nx};
        CHECK(nc_put_vara_float(ncid, vtemp, start, count, temp));
        CHECK(nc_put_vara(ncid, vsalt, start, count, salt));
    }
    CHECK(nc_close(ncid));
    free(mask);
    free(temp);
    free(salt);
    return 0;
}
