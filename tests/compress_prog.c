/*
 * compress_prog.c - a netCDF-C program for test_compress.sh (issue #23):
 * it sets a variable's compression after something that makes the shim
 * adopt the variable at once (a rename), so the settings must reach the
 * stores through the shim's nc_def_var_deflate and friends.
 *
 *   compress_prog FILE late         V(y=4, x=5) float renamed W, then
 *                                   deflate 3 + shuffle, fletcher32; values
 *   compress_prog FILE late-quantize the same with nc_def_var_quantize
 *   compress_prog FILE comp VAR     prints VAR's compression as raster
 *                                   gives it, from the shim's handle of a
 *                                   read-only nc_open (under the shim: a
 *                                   view, which reads it on this first
 *                                   ask) and from raster_open's
 *
 * Exits 1 (saying why) when a netCDF call fails.
 */
#include <netcdf.h>
#include <stdio.h>
#include <string.h>

#include "raster.h"

static int check(int st, const char *what)
{
    if (st != NC_NOERR) {
        fprintf(stderr, "compress_prog: %s: %s\n", what, nc_strerror(st));
        return 1;
    }
    return 0;
}

static void print_comp(const char *how, const raster_compression *c)
{
    printf("%s: deflate %d shuffle %d fletcher32 %d filters %u quantize "
           "%d/%d\n", how, c->deflate_level, c->shuffle, c->fletcher32,
           c->nfilters, c->quantize_mode, c->quantize_nsd);
}

/* VAR's compression through the program's own handle (the shim's state)
 * and through raster_open: 1 when either is missing. */
static int comp(const char *path, const char *name)
{
    int ncid;
    raster_file *f;
    raster_var *v;
    raster_compression c;
    if (check(nc_open(path, NC_NOWRITE, &ncid), "open"))
        return 1;
    f = raster_file_for_ncid(ncid);
    if (!f || raster_var_find(f, name, &v) != RASTER_OK ||
        raster_var_compression(v, &c) != RASTER_OK) {
        fprintf(stderr, "compress_prog: no raster state for %s: %s\n",
                name, raster_errmsg());
        nc_close(ncid);
        return 1;
    }
    print_comp("handle", &c);
    nc_close(ncid);
    if (raster_open(path, RASTER_READ, &f) != RASTER_OK ||
        raster_var_find(f, name, &v) != RASTER_OK ||
        raster_var_compression(v, &c) != RASTER_OK) {
        fprintf(stderr, "compress_prog: raster_open: %s\n", raster_errmsg());
        return 1;
    }
    print_comp("open", &c);
    raster_close(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[2], "comp") == 0)
        return comp(argv[1], argv[3]);
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
