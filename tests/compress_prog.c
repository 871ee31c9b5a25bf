/*
 * compress_prog.c - a netCDF-C program for test_compress.sh (issue #23):
 * it sets a variable's compression after something that makes the shim
 * adopt the variable at once (a rename), so the settings must reach the
 * stores through the shim's nc_def_var_deflate and friends.
 *
 *   compress_prog FILE late         V(y=4, x=5) float renamed W, then
 *                                   deflate 3 + shuffle, fletcher32; values
 *   compress_prog FILE late-quantize the same with nc_def_var_quantize
 *
 * Exits 1 (saying why) when a netCDF call fails.
 */
#include <netcdf.h>
#include <stdio.h>
#include <string.h>

static int check(int st, const char *what)
{
    if (st != NC_NOERR) {
        fprintf(stderr, "compress_prog: %s: %s\n", what, nc_strerror(st));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "late") != 0 &&
                      strcmp(argv[2], "late-quantize") != 0)) {
        fprintf(stderr, "usage: compress_prog FILE late|late-quantize\n");
        return 2;
    }
    int quantize = strcmp(argv[2], "late-quantize") == 0;
    int nc, d[2], v;
    float vals[20];
    for (int i = 0; i < 20; i++)
        vals[i] = (float)i * 1.2345678f;
    if (check(nc_create(argv[1], NC_NETCDF4 | NC_CLOBBER, &nc), "create") ||
        check(nc_def_dim(nc, "y", 4, &d[0]), "def_dim") ||
        check(nc_def_dim(nc, "x", 5, &d[1]), "def_dim") ||
        check(nc_def_var(nc, "V", NC_FLOAT, 2, d, &v), "def_var") ||
        check(nc_rename_var(nc, v, "W"), "rename_var") ||
        check(nc_def_var_deflate(nc, v, 1, 1, 3), "def_var_deflate") ||
        check(nc_def_var_fletcher32(nc, v, NC_FLETCHER32),
              "def_var_fletcher32") ||
        (quantize && check(nc_def_var_quantize(nc, v, NC_QUANTIZE_BITGROOM,
                                               3), "def_var_quantize")) ||
        check(nc_put_var_float(nc, v, vals), "put_var") ||
        check(nc_close(nc), "close"))
        return 1;
    return 0;
}
