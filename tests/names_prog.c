/*
 * names_prog.c - a netCDF-C program for test_transparency.sh: the calls
 * about names and dimension ids that issue #27 found leaking raster's
 * storage, run with and without the shim and compared.
 *
 *   names_prog rename-dim FILE OLD NEW   nc_rename_dim in the root group
 *   names_prog rename-var FILE OLD NEW   nc_rename_var in the root group
 *   names_prog def-grp FILE NAME         a group NAME with a variable
 *   names_prog def-var FILE NAME         a variable NAME (root, 1-D)
 *   names_prog lookup FILE PATH...       nc_inq_grp_full_ncid and friends
 *   names_prog add-dim FILE NAME LEN     a dimension, in append mode
 *   names_prog dims FILE                 every dimension id 0..63, as a
 *                                        netCDF-3 style loop sees them
 *   names_prog poke FILE GRP VAR I J V   sets VAR[I][J] of group GRP
 *
 * Prints what it finds on stdout; exits 1 when a netCDF call fails.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(int st, const char *what)
{
    if (st != NC_NOERR) {
        fprintf(stderr, "names_prog: %s: %s\n", what, nc_strerror(st));
        exit(1);
    }
    return st;
}

static int open_write(const char *path)
{
    int ncid;
    check(nc_open(path, NC_WRITE, &ncid), path);
    return ncid;
}

static int rename_dim(const char *path, const char *from, const char *to)
{
    int ncid = open_write(path), id;
    check(nc_inq_dimid(ncid, from, &id), from);
    check(nc_rename_dim(ncid, id, to), "nc_rename_dim");
    return check(nc_close(ncid), "nc_close");
}

static int rename_var(const char *path, const char *from, const char *to)
{
    int ncid = open_write(path), id;
    check(nc_inq_varid(ncid, from, &id), from);
    check(nc_rename_var(ncid, id, to), "nc_rename_var");
    return check(nc_close(ncid), "nc_close");
}

static int def_grp(const char *path, const char *name)
{
    int ncid = open_write(path), g, d, v;
    check(nc_redef(ncid), "nc_redef");
    check(nc_def_grp(ncid, name, &g), "nc_def_grp");
    check(nc_def_dim(g, "n", 3, &d), "nc_def_dim");
    check(nc_def_var(g, "mine", NC_INT, 1, &d, &v), "nc_def_var");
    check(nc_enddef(ncid), "nc_enddef");
    int vals[3] = {7, 8, 9};
    check(nc_put_var_int(g, v, vals), "nc_put_var_int");
    return check(nc_close(ncid), "nc_close");
}

static int def_var(const char *path, const char *name)
{
    int ncid = open_write(path), d, v;
    check(nc_redef(ncid), "nc_redef");
    check(nc_def_dim(ncid, "n2", 2, &d), "nc_def_dim");
    check(nc_def_var(ncid, name, NC_INT, 1, &d, &v), "nc_def_var");
    check(nc_enddef(ncid), "nc_enddef");
    int vals[2] = {5, 6};
    check(nc_put_var_int(ncid, v, vals), "nc_put_var_int");
    return check(nc_close(ncid), "nc_close");
}

static int lookup(const char *path, int n, char **paths)
{
    int ncid, g;
    check(nc_open(path, NC_NOWRITE, &ncid), path);
    for (int i = 0; i < n; i++) {
        printf("full %s: %s\n", paths[i],
               nc_strerror(nc_inq_grp_full_ncid(ncid, paths[i], &g)));
        if (!strchr(paths[i], '/')) {
            printf("grp %s: %s\n", paths[i],
                   nc_strerror(nc_inq_grp_ncid(ncid, paths[i], &g)));
            printf("ncid %s: %s\n", paths[i],
                   nc_strerror(nc_inq_ncid(ncid, paths[i], &g)));
        }
    }
    int ng;
    check(nc_inq_grps(ncid, &ng, NULL), "nc_inq_grps");
    printf("groups: %d\n", ng);
    return check(nc_close(ncid), "nc_close");
}

static int add_dim(const char *path, const char *name, size_t len)
{
    int ncid = open_write(path), id;
    check(nc_redef(ncid), "nc_redef");
    check(nc_def_dim(ncid, name, len, &id), "nc_def_dim");
    printf("defined %s as %d\n", name, id);
    return check(nc_close(ncid), "nc_close");
}

static int dims(const char *path)
{
    int ncid, ndims, nvars, unlim, ids[NC_MAX_DIMS];
    check(nc_open(path, NC_NOWRITE, &ncid), path);
    check(nc_inq(ncid, &ndims, &nvars, NULL, &unlim), "nc_inq");
    printf("ndims %d nvars %d unlimited %d\n", ndims, nvars, unlim);
    for (int d = 0; d < 64; d++) {
        char name[NC_MAX_NAME + 1];
        size_t len;
        int st = nc_inq_dim(ncid, d, name, &len);
        if (st == NC_NOERR)
            printf("dim %d: %s %zu\n", d, name, len);
        else
            printf("dim %d: %s\n", d, nc_strerror(st));
    }
    int n;
    check(nc_inq_dimids(ncid, &n, ids, 1), "nc_inq_dimids");
    for (int i = 0; i < n; i++)
        printf("dimids[%d] = %d\n", i, ids[i]);
    check(nc_inq_unlimdims(ncid, &n, ids), "nc_inq_unlimdims");
    for (int i = 0; i < n; i++)
        printf("unlimited[%d] = %d\n", i, ids[i]);
    for (int v = 0; v < nvars; v++) {
        char name[NC_MAX_NAME + 1];
        int nd;
        check(nc_inq_var(ncid, v, name, NULL, &nd, ids, NULL), "nc_inq_var");
        printf("var %s:", name);
        for (int i = 0; i < nd; i++)
            printf(" %d", ids[i]);
        check(nc_inq_vardimid(ncid, v, ids), "nc_inq_vardimid");
        for (int i = 0; i < nd; i++)
            printf(" %d", ids[i]);
        printf("\n");
    }
    return check(nc_close(ncid), "nc_close");
}

static int poke(const char *path, const char *grp, const char *var,
                size_t i, size_t j, long long value)
{
    int ncid = open_write(path), g, v;
    check(nc_inq_grp_full_ncid(ncid, grp, &g), grp);
    check(nc_inq_varid(g, var, &v), var);
    size_t at[2] = {i, j};
    check(nc_put_var1_longlong(g, v, at, &value), "nc_put_var1_longlong");
    return check(nc_close(ncid), "nc_close");
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "rename-dim") == 0)
        return rename_dim(argv[2], argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "rename-var") == 0)
        return rename_var(argv[2], argv[3], argv[4]);
    if (argc >= 4 && strcmp(argv[1], "def-grp") == 0)
        return def_grp(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "def-var") == 0)
        return def_var(argv[2], argv[3]);
    if (argc >= 3 && strcmp(argv[1], "lookup") == 0)
        return lookup(argv[2], argc - 3, argv + 3);
    if (argc >= 5 && strcmp(argv[1], "add-dim") == 0)
        return add_dim(argv[2], argv[3], strtoul(argv[4], NULL, 10));
    if (argc >= 3 && strcmp(argv[1], "dims") == 0)
        return dims(argv[2]);
    if (argc >= 8 && strcmp(argv[1], "poke") == 0)
        return poke(argv[2], argv[3], argv[4], strtoul(argv[5], NULL, 10),
                    strtoul(argv[6], NULL, 10), strtoll(argv[7], NULL, 10));
    fprintf(stderr, "usage: names_prog rename-dim|rename-var|def-grp|def-var|lookup|"
            "add-dim|dims|poke FILE ...\n");
    return 2;
}
