/*
 * record_writer - a plain netCDF-C program (it knows nothing of raster)
 * that writes one float variable TEMP(time, nlat, nlon) record by record,
 * as a model writes history, with the record's day in the ordinary
 * variable time. The kill and disk-full tests run it under the shim.
 *
 * usage: record_writer MASKFILE OUT.nc NREC [SYNC [NVARS [NGROUPS]]]
 *   the grid comes from MASKFILE's REGION_MASK; SYNC=1 calls nc_sync after
 *   every record (as models do so that readers see progress); NVARS > 1
 *   writes TEMP_2 .. TEMP_<NVARS> too, NGROUPS empty groups g0, g1, ...
 *   are defined first (the scale test).
 * Value of TEMP at (t, y, x): t * 1000 + (y * nx + x) % 1000, exact in
 * float; TEMP_k's is that plus k * 100000. Exit status 0, or 1 with the failing call and netCDF's message
 * (its code in brackets) on stderr.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>

/* Reports a failed netCDF call (what: the function, then its object in
 * parentheses) with its status in brackets; 1 if st is an error. */
static int nc_failed(int st, const char *what)
{
    if (st == NC_NOERR)
        return 0;
    fprintf(stderr, "record_writer: %s: %s [%d]\n", what, nc_strerror(st), st);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: record_writer MASKFILE OUT.nc NREC [SYNC "
                        "[NVARS [NGROUPS]]]\n");
        return 2;
    }
    size_t nrec = strtoul(argv[3], NULL, 10);
    int sync = argc > 4 && atoi(argv[4]) != 0;
    int nvars = argc > 5 ? atoi(argv[5]) : 1;
    long ngroups = argc > 6 ? atol(argv[6]) : 0;
    if (nvars < 1 || nvars > 100) {
        fprintf(stderr, "record_writer: NVARS must be 1 to 100\n");
        return 2;
    }
    int mid, mvar, mdims[2], ncid, dt, dy, dx, vt, vtemp[100];
    size_t ny, nx;
    if (nc_failed(nc_open(argv[1], NC_NOWRITE, &mid), "nc_open(MASKFILE)"))
        return 1;
    if (nc_failed(nc_inq_varid(mid, "REGION_MASK", &mvar),
                  "nc_inq_varid(REGION_MASK)"))
        return 1;
    if (nc_failed(nc_inq_vardimid(mid, mvar, mdims),
                  "nc_inq_vardimid(REGION_MASK)"))
        return 1;
    if (nc_failed(nc_inq_dimlen(mid, mdims[0], &ny),
                  "nc_inq_dimlen(REGION_MASK rows)"))
        return 1;
    if (nc_failed(nc_inq_dimlen(mid, mdims[1], &nx),
                  "nc_inq_dimlen(REGION_MASK columns)"))
        return 1;
    if (nc_failed(nc_close(mid), "nc_close(MASKFILE)"))
        return 1;
    float *rec = malloc(ny * nx * sizeof *rec);
    if (!rec) {
        fprintf(stderr, "record_writer: out of memory\n");
        return 1;
    }
    if (nc_failed(nc_create(argv[2], NC_NETCDF4 | NC_CLOBBER, &ncid),
                  "nc_create(OUT.nc)"))
        return 1;
    for (long i = 0; i < ngroups; i++) {
        char gname[32];
        int g;
        snprintf(gname, sizeof gname, "g%ld", i);
        if (nc_failed(nc_def_grp(ncid, gname, &g), "nc_def_grp(empty group)"))
            return 1;
    }
    if (nc_failed(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt),
                  "nc_def_dim(time)"))
        return 1;
    if (nc_failed(nc_def_dim(ncid, "nlat", ny, &dy), "nc_def_dim(nlat)"))
        return 1;
    if (nc_failed(nc_def_dim(ncid, "nlon", nx, &dx), "nc_def_dim(nlon)"))
        return 1;
    if (nc_failed(nc_def_var(ncid, "time", NC_DOUBLE, 1, &dt, &vt),
                  "nc_def_var(time)"))
        return 1;
    int d3[3] = {dt, dy, dx};
    float fill = -999.0f;
    for (int k = 0; k < nvars; k++) {
        char name[16] = "TEMP";
        if (k > 0)
            snprintf(name, sizeof name, "TEMP_%d", k + 1);
        if (nc_failed(nc_def_var(ncid, name, NC_FLOAT, 3, d3, &vtemp[k]),
                      "nc_def_var(TEMP)"))
            return 1;
        if (nc_failed(nc_put_att_float(ncid, vtemp[k], "_FillValue", NC_FLOAT,
                                       1, &fill),
                      "nc_put_att_float(TEMP:_FillValue)"))
            return 1;
    }
    if (nc_failed(nc_enddef(ncid), "nc_enddef(OUT.nc)"))
        return 1;
    for (size_t t = 0; t < nrec; t++) {
        size_t start[3] = {t, 0, 0}, count[3] = {1, ny, nx};
        double day = (double)t;
        for (int k = 0; k < nvars; k++) {
            for (size_t i = 0; i < ny * nx; i++)
                rec[i] = (float)(t * 1000 + i % 1000 +
                                 (k > 0 ? (k + 1) * 100000 : 0));
            if (nc_failed(nc_put_vara_float(ncid, vtemp[k], start, count, rec),
                          "nc_put_vara_float(TEMP record)"))
                return 1;
        }
        if (nc_failed(nc_put_var1_double(ncid, vt, &t, &day),
                      "nc_put_var1_double(time)"))
            return 1;
        if (sync && nc_failed(nc_sync(ncid), "nc_sync(OUT.nc)"))
            return 1;
    }
    free(rec);
    if (nc_failed(nc_close(ncid), "nc_close(OUT.nc)"))
        return 1;
    /* a kill that lands after this is not a kill before completion */
    if (printf("closed\n") < 0 || fflush(stdout) != 0)
        return 1;
    return 0;
}
