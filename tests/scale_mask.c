/*
 * scale_mask - writes a netCDF-4 file holding one 2-D int mask
 * REGION_MASK(nlat, nlon) of many small block regions, for the scale
 * tests (issue #27): block (by, bx) of BH x BW cells has id
 * 1 + by * ceil(NX / BW) + bx, so the mask has ceil(NY/BH) * ceil(NX/BW)
 * regions.
 *
 * usage: scale_mask OUT.nc NY NX BH BW
 * Exit status 0, or 1 with the failing call on stderr.
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
    fprintf(stderr, "scale_mask: %s: %s [%d]\n", what, nc_strerror(st), st);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: scale_mask OUT.nc NY NX BH BW\n");
        return 2;
    }
    size_t ny = strtoul(argv[2], NULL, 10), nx = strtoul(argv[3], NULL, 10);
    size_t bh = strtoul(argv[4], NULL, 10), bw = strtoul(argv[5], NULL, 10);
    if (!ny || !nx || !bh || !bw) {
        fprintf(stderr, "scale_mask: sizes must be positive\n");
        return 2;
    }
    size_t ncol = (nx + bw - 1) / bw;
    int *mask = malloc(ny * nx * sizeof *mask);
    if (!mask) {
        fprintf(stderr, "scale_mask: out of memory\n");
        return 1;
    }
    for (size_t y = 0; y < ny; y++)
        for (size_t x = 0; x < nx; x++)
            mask[y * nx + x] = (int)(1 + (y / bh) * ncol + x / bw);
    int ncid, dims[2], var;
    if (nc_failed(nc_create(argv[1], NC_NETCDF4 | NC_CLOBBER, &ncid),
                  "nc_create(OUT.nc)"))
        return 1;
    if (nc_failed(nc_def_dim(ncid, "nlat", ny, &dims[0]), "nc_def_dim(nlat)"))
        return 1;
    if (nc_failed(nc_def_dim(ncid, "nlon", nx, &dims[1]), "nc_def_dim(nlon)"))
        return 1;
    if (nc_failed(nc_def_var(ncid, "REGION_MASK", NC_INT, 2, dims, &var),
                  "nc_def_var(REGION_MASK)"))
        return 1;
    if (nc_failed(nc_enddef(ncid), "nc_enddef(OUT.nc)"))
        return 1;
    if (nc_failed(nc_put_var_int(ncid, var, mask),
                  "nc_put_var_int(REGION_MASK)"))
        return 1;
    if (nc_failed(nc_close(ncid), "nc_close(OUT.nc)"))
        return 1;
    free(mask);
    printf("%zu regions\n", ((ny + bh - 1) / bh) * ncol);
    return 0;
}
