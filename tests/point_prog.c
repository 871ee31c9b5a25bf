/*
 * point_prog.c - a netCDF-C program for test_shim.sh: a point's series as
 * rasterbench times it (open; the variable's id, rank and dimensions;
 * every outer index at grid cell (Y, X) in one read; close), its values
 * printed one a line, run with and without the shim and compared.
 *
 *   point_prog FILE VAR Y X        as rasterbench
 *   point_prog FILE VAR Y X T Z    a 4-D variable's first T records and Z
 *                                  levels, with nothing asked about it
 *
 * Exits 1 when a netCDF call fails.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>

static void check(int st, const char *what)
{
    if (st != NC_NOERR) {
        fprintf(stderr, "point_prog: %s: %s\n", what, nc_strerror(st));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: point_prog FILE VAR Y X [T Z]\n");
        return 2;
    }
    int ncid, varid, nd = 4, dimids[NC_MAX_VAR_DIMS];
    size_t start[NC_MAX_VAR_DIMS] = {0}, count[NC_MAX_VAR_DIMS], n = 1;
    check(nc_open(argv[1], NC_NOWRITE, &ncid), "nc_open");
    check(nc_inq_varid(ncid, argv[2], &varid), "nc_inq_varid");
    if (argc == 7) {
        count[0] = strtoul(argv[5], NULL, 10);
        count[1] = strtoul(argv[6], NULL, 10);
        n = count[0] * count[1];
    } else {
        check(nc_inq_varndims(ncid, varid, &nd), "nc_inq_varndims");
        if (nd < 2) {
            fprintf(stderr, "point_prog: %s has fewer than 2 dimensions\n",
                    argv[2]);
            return 1;
        }
        check(nc_inq_vardimid(ncid, varid, dimids), "nc_inq_vardimid");
        for (int i = 0; i < nd - 2; i++) {
            check(nc_inq_dimlen(ncid, dimids[i], &count[i]),
                  "nc_inq_dimlen");
            n *= count[i];
        }
    }
    start[nd - 2] = strtoul(argv[3], NULL, 10);
    start[nd - 1] = strtoul(argv[4], NULL, 10);
    count[nd - 2] = count[nd - 1] = 1;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        fprintf(stderr, "point_prog: out of memory\n");
        return 1;
    }
    check(nc_get_vara_double(ncid, varid, start, count, v), "nc_get_vara");
    for (size_t i = 0; i < n; i++)
        printf("%.9g\n", v[i]);
    free(v);
    check(nc_close(ncid), "nc_close");
    return 0;
}
