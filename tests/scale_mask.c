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

#define CHECK(call)                                                           \
    do {                                                                      \
        int st_ = (call);                                                     \
        if (st_ != NC_NOERR) {                                                \
            fprintf(stderr, "scale_mask: %s: %s [%d]\n", #call,               \
                    nc_strerror(st_), st_);                                   \
            return 1;                                                         \
        }                                                                     \
    } while (0)

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
    CHECK(nc_create(argv[1], NC_NETCDF4 | NC_CLOBBER, &ncid));
    CHECK(nc_def_dim(ncid, "nlat", ny, &dims[0]));
    CHECK(nc_def_dim(ncid, "nlon", nx, &dims[1]));
    CHECK(nc_def_var(ncid, "REGION_MASK", NC_INT, 2, dims, &var));
    CHECK(nc_enddef(ncid));
    CHECK(nc_put_var_int(ncid, var, mask));
    CHECK(nc_close(ncid));
    free(mask);
    printf("%zu regions\n", ((ny + bh - 1) / bh) * ncol);
    return 0;
}
