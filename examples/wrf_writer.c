/*
 * wrf_writer - a plain netCDF-C program writing WRF-like output: T2(Time,
 * south_north, west_east), one nc_put_vara_float per record, plus its
 * coordinates XLAT and XLONG. Under libraster_preload.so with
 * RASTER_MASK=admin.nc:REGION_MASK T2 is stored by country or province;
 * the coordinates stay plain netCDF.
 *
 * usage: wrf_writer MASKFILE OUT.nc [NTIME]
 */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != NC_NOERR) {                                                \
            fprintf(stderr, "wrf_writer: %s: %s\n", #call, nc_strerror(st_)); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wrf_writer MASKFILE OUT.nc [NTIME]\n");
        return 2;
    }
    size_t ntime = argc > 3 ? strtoul(argv[3], NULL, 10) : 4;
    int mid, mvar, mdims[2];
    size_t ny, nx;
    CHECK(nc_open(argv[1], NC_NOWRITE, &mid));
    CHECK(nc_inq_varid(mid, "REGION_MASK", &mvar));
    CHECK(nc_inq_vardimid(mid, mvar, mdims));
    CHECK(nc_inq_dimlen(mid, mdims[0], &ny));
    CHECK(nc_inq_dimlen(mid, mdims[1], &nx));
    CHECK(nc_close(mid));

    float *t2 = malloc(ny * nx * sizeof *t2);
    float *lat = malloc(ny * nx * sizeof *lat);
    float *lon = malloc(ny * nx * sizeof *lon);
    if (!t2 || !lat || !lon)
        return 1;
    int ncid, dt, dy, dx, vt2, vlat, vlon;
    CHECK(nc_create(argv[2], NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "Time", NC_UNLIMITED, &dt));
    CHECK(nc_def_dim(ncid, "south_north", ny, &dy));
    CHECK(nc_def_dim(ncid, "west_east", nx, &dx));
    int d2[2] = {dy, dx}, d3[3] = {dt, dy, dx};
    CHECK(nc_def_var(ncid, "XLAT", NC_FLOAT, 2, d2, &vlat));
    CHECK(nc_def_var(ncid, "XLONG", NC_FLOAT, 2, d2, &vlon));
    CHECK(nc_def_var(ncid, "T2", NC_FLOAT, 3, d3, &vt2));
    CHECK(nc_put_att_text(ncid, vt2, "description", 11, "TEMP at 2 M"));
    CHECK(nc_put_att_text(ncid, vt2, "units", 1, "K"));
    CHECK(nc_put_att_text(ncid, vt2, "coordinates", 10, "XLONG XLAT"));
    CHECK(nc_put_att_text(ncid, vlat, "units", 12, "degree_north"));
    CHECK(nc_put_att_text(ncid, vlon, "units", 11, "degree_east"));
    CHECK(nc_enddef(ncid));
    for (size_t y = 0; y < ny; y++)
        for (size_t x = 0; x < nx; x++) {
            lat[y * nx + x] = 30.0f + 40.0f * (float)y / (float)ny;
            lon[y * nx + x] = -20.0f + 60.0f * (float)x / (float)nx;
        }
    CHECK(nc_put_var_float(ncid, vlat, lat));
    CHECK(nc_put_var_float(ncid, vlon, lon));
    for (size_t t = 0; t < ntime; t++) {
        for (size_t i = 0; i < ny * nx; i++)
            t2[i] = 288.0f - 0.5f * (lat[i] - 30.0f) +
                    3.0f * sinf(lon[i] * 0.1f + (float)t);
        size_t start[3] = {t, 0, 0}, count[3] = {1, ny, nx};
        CHECK(nc_put_vara_float(ncid, vt2, start, count, t2));
    }
    CHECK(nc_close(ncid));
    free(t2);
    free(lat);
    free(lon);
    return 0;
}
