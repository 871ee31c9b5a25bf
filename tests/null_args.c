/*
 * null_args - a plain netCDF-C program (it knows nothing of raster) that
 * calls netCDF's define and inquire functions with each optional pointer
 * argument NULL, one at a time and all at once, and prints every status
 * and every value it got. test_null_args.sh runs it without the shim and
 * under the shim with RASTER_MASK set, and the two outputs must be equal:
 * a wrapper that dereferences an optional pointer crashes here, one that
 * answers differently shows in the diff.
 *
 * usage: null_args MASKFILE MASKVAR OUT.nc
 *   OUT.nc (netCDF-4) gets temp(time, y, x) on MASKVAR's grid (a raster
 *   variable under the shim), a 0-d variable defined with a NULL varidp, a
 *   1-d one, attributes and a group. The inquiries run while defining,
 *   after the data is written, and on OUT.nc reopened read-only.
 * Exit status 0; 1 when a call that must succeed fails.
 */
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdio.h>
#include <string.h>

/* 1 (with a message) when a call that must succeed failed. */
static int failed(int st, const char *call)
{
    if (st != NC_NOERR)
        fprintf(stderr, "null_args: %s: %s\n", call, nc_strerror(st));
    return st != NC_NOERR;
}
#define FAILED(call) failed((call), #call)

/* Bit i of `nulls` set: the call gets NULL for its i-th optional pointer.
 * Each inquiry runs with none, each one alone, then all of them NULL. */
#define P(i, ptr) ((nulls >> (i)) & 1 ? NULL : (ptr))
#define FOR_NULLS(k)                                                          \
    for (unsigned nulls = 0, step_ = 0; step_ <= (unsigned)(k) + 1;           \
         step_++, nulls = step_ <= (unsigned)(k) ? 1u << (step_ - 1)          \
                                                 : (1u << (k)) - 1)

/* Group ids differ between runs in the file's part (the high bits): the
 * group's part is printed. */
#define GRP(id) ((id) & 0xffff)

static const char *stage = "";

static void head(const char *call, unsigned nulls, int st)
{
    printf("%s %s nulls=%x: %d", stage, call, nulls, st);
}

static void ints(const char *what, const int *v, int n)
{
    printf(" %s=", what);
    for (int i = 0; i < n && i < 16; i++)
        printf("%s%d", i ? "," : "", v[i]);
}

static void sizes(const char *what, const size_t *v, int n)
{
    printf(" %s=", what);
    for (int i = 0; i < n && i < 16; i++)
        printf("%s%zu", i ? "," : "", v[i]);
}

static void bytes(const char *what, const void *p, size_t n)
{
    const unsigned char *b = p;
    printf(" %s=", what);
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
}

/* The file (or group) as a whole. */
static void inq_group(int ncid)
{
    FOR_NULLS(4) {
        int nd = -7, nv = -7, na = -7, ul = -7;
        int st = nc_inq(ncid, P(0, &nd), P(1, &nv), P(2, &na), P(3, &ul));
        head("nc_inq", nulls, st);
        printf(" ndims=%d nvars=%d natts=%d unlim=%d\n", nd, nv, na, ul);
    }
    int n = -7;
    printf("%s nc_inq_ndims NULL: %d\n", stage, nc_inq_ndims(ncid, NULL));
    printf("%s nc_inq_nvars NULL: %d\n", stage, nc_inq_nvars(ncid, NULL));
    printf("%s nc_inq_natts NULL: %d\n", stage, nc_inq_natts(ncid, NULL));
    printf("%s nc_inq_unlimdim NULL: %d\n", stage,
           nc_inq_unlimdim(ncid, NULL));
    printf("%s nc_inq_format NULL: %d\n", stage, nc_inq_format(ncid, NULL));
    FOR_NULLS(2) {
        int f = -7, m = -7;
        int st = nc_inq_format_extended(ncid, P(0, &f), P(1, &m));
        head("nc_inq_format_extended", nulls, st);
        printf(" format=%d mode=%x\n", f, (unsigned)m);
    }
    FOR_NULLS(2) {
        size_t len = 7;
        char path[4096] = "-";
        int st = nc_inq_path(ncid, P(0, &len), P(1, path));
        head("nc_inq_path", nulls, st);
        const char *base = strrchr(path, '/');
        printf(" len=%zu name=%s\n", len, base ? base + 1 : path);
    }
    FOR_NULLS(2) {
        int ids[16] = {0};
        n = -7;
        int st = nc_inq_unlimdims(ncid, P(0, &n), P(1, ids));
        head("nc_inq_unlimdims", nulls, st);
        printf(" n=%d", n);
        ints("ids", ids, 4);
        printf("\n");
    }
    for (int parents = 0; parents <= 1; parents++) {
        FOR_NULLS(2) {
            int ids[16] = {0};
            n = -7;
            int st = nc_inq_dimids(ncid, P(0, &n), P(1, ids), parents);
            head(parents ? "nc_inq_dimids(parents)" : "nc_inq_dimids",
                 nulls, st);
            printf(" n=%d", n);
            ints("ids", ids, 8);
            printf("\n");
        }
    }
    FOR_NULLS(2) {
        int ids[16] = {0};
        n = -7;
        int st = nc_inq_varids(ncid, P(0, &n), P(1, ids));
        head("nc_inq_varids", nulls, st);
        printf(" n=%d", n);
        ints("ids", ids, 8);
        printf("\n");
    }
    FOR_NULLS(2) {
        int ids[16] = {0};
        n = -7;
        int st = nc_inq_grps(ncid, P(0, &n), P(1, ids));
        head("nc_inq_grps", nulls, st);
        printf(" n=%d names=", n);
        /* ids are numbered in the order netCDF finds groups in the file,
         * raster's hidden ones among them: names compare */
        for (int i = 0; i < 16 && ids[i]; i++) {
            char name[NC_MAX_NAME + 1] = "?";
            nc_inq_grpname(ids[i], name);
            printf("%s%s", i ? "," : "", name);
        }
        printf("\n");
    }
    FOR_NULLS(2) {
        int ids[16] = {0};
        n = -7;
        int st = nc_inq_typeids(ncid, P(0, &n), P(1, ids));
        head("nc_inq_typeids", nulls, st);
        printf(" n=%d\n", n);
    }
    printf("%s nc_inq_grpname NULL: %d\n", stage, nc_inq_grpname(ncid, NULL));
    FOR_NULLS(2) {
        size_t len = 7;
        char name[256] = "-";
        int st = nc_inq_grpname_full(ncid, P(0, &len), P(1, name));
        head("nc_inq_grpname_full", nulls, st);
        printf(" len=%zu name=%s\n", len, name);
    }
    printf("%s nc_inq_grpname_len NULL: %d\n", stage,
           nc_inq_grpname_len(ncid, NULL));
    printf("%s nc_inq_grp_parent NULL: %d\n", stage,
           nc_inq_grp_parent(ncid, NULL));
    /* lookups by name: the user's group, and a raster storage group name
     * (hidden under the shim, absent without it) */
    const char *names[] = {"sub", "raster_temp", "nosuch"};
    for (int i = 0; i < 3; i++) {
        int g = -7;
        int st = nc_inq_grp_ncid(ncid, names[i], &g);
        printf("%s nc_inq_grp_ncid %s: %d %d\n", stage, names[i], st,
               st ? g : GRP(g));
        printf("%s nc_inq_grp_ncid %s NULL: %d\n", stage, names[i],
               nc_inq_grp_ncid(ncid, names[i], NULL));
        printf("%s nc_inq_ncid %s NULL: %d\n", stage, names[i],
               nc_inq_ncid(ncid, names[i], NULL));
        char full[64];
        snprintf(full, sizeof full, "/%s", names[i]);
        printf("%s nc_inq_grp_full_ncid %s NULL: %d\n", stage, full,
               nc_inq_grp_full_ncid(ncid, full, NULL));
    }
    FOR_NULLS(2) {
        char name[256] = "-";
        size_t size = 7;
        int st = nc_inq_type(ncid, NC_INT, P(0, name), P(1, &size));
        head("nc_inq_type", nulls, st);
        printf(" name=%s size=%zu\n", name, size);
    }
}

static void inq_dims(int ncid)
{
    int n = 0, ids[16];
    if (nc_inq_dimids(ncid, &n, ids, 0) != NC_NOERR)
        n = 0;
    for (int d = 0; d < n && d < 16; d++) {
        FOR_NULLS(2) {
            char name[256] = "-";
            size_t len = 7;
            int st = nc_inq_dim(ncid, ids[d], P(0, name), P(1, &len));
            head("nc_inq_dim", nulls, st);
            printf(" dim=%d name=%s len=%zu\n", ids[d], name, len);
        }
        printf("%s nc_inq_dimname %d NULL: %d\n", stage, ids[d],
               nc_inq_dimname(ncid, ids[d], NULL));
        printf("%s nc_inq_dimlen %d NULL: %d\n", stage, ids[d],
               nc_inq_dimlen(ncid, ids[d], NULL));
    }
    printf("%s nc_inq_dimid y NULL: %d\n", stage,
           nc_inq_dimid(ncid, "y", NULL));
}

static void inq_atts(int ncid, int varid)
{
    int natts = 0;
    if (nc_inq_varnatts(ncid, varid, &natts) != NC_NOERR)
        natts = 0;
    for (int a = 0; a < natts; a++) {
        char name[NC_MAX_NAME + 1] = "";
        if (nc_inq_attname(ncid, varid, a, name) != NC_NOERR)
            continue;
        printf("%s nc_inq_attname %d.%d NULL: %d\n", stage, varid, a,
               nc_inq_attname(ncid, varid, a, NULL));
        FOR_NULLS(2) {
            nc_type t = -7;
            size_t len = 7;
            int st = nc_inq_att(ncid, varid, name, P(0, &t), P(1, &len));
            head("nc_inq_att", nulls, st);
            printf(" %d.%s type=%d len=%zu\n", varid, name, t, len);
        }
        printf("%s nc_inq_atttype %s NULL: %d\n", stage, name,
               nc_inq_atttype(ncid, varid, name, NULL));
        printf("%s nc_inq_attlen %s NULL: %d\n", stage, name,
               nc_inq_attlen(ncid, varid, name, NULL));
        printf("%s nc_inq_attid %s NULL: %d\n", stage, name,
               nc_inq_attid(ncid, varid, name, NULL));
    }
}

static void inq_var(int ncid, int varid)
{
    FOR_NULLS(5) {
        char name[256] = "-";
        nc_type t = -7;
        int nd = -7, na = -7, dims[NC_MAX_VAR_DIMS] = {0};
        int st = nc_inq_var(ncid, varid, P(0, name), P(1, &t), P(2, &nd),
                            P(3, dims), P(4, &na));
        head("nc_inq_var", nulls, st);
        printf(" var=%d name=%s type=%d ndims=%d natts=%d", varid, name, t,
               nd, na);
        ints("dims", dims, 4);
        printf("\n");
    }
    printf("%s nc_inq_varname %d NULL: %d\n", stage, varid,
           nc_inq_varname(ncid, varid, NULL));
    printf("%s nc_inq_vartype %d NULL: %d\n", stage, varid,
           nc_inq_vartype(ncid, varid, NULL));
    printf("%s nc_inq_varndims %d NULL: %d\n", stage, varid,
           nc_inq_varndims(ncid, varid, NULL));
    printf("%s nc_inq_vardimid %d NULL: %d\n", stage, varid,
           nc_inq_vardimid(ncid, varid, NULL));
    printf("%s nc_inq_varnatts %d NULL: %d\n", stage, varid,
           nc_inq_varnatts(ncid, varid, NULL));
    char name[NC_MAX_NAME + 1] = "";
    if (nc_inq_varname(ncid, varid, name) == NC_NOERR) {
        int id = -7;
        int st = nc_inq_varid(ncid, name, &id);
        printf("%s nc_inq_varid %s: %d %d\n", stage, name, st, id);
        printf("%s nc_inq_varid %s NULL: %d\n", stage, name,
               nc_inq_varid(ncid, name, NULL));
    }
    FOR_NULLS(2) {
        int storage = -7;
        size_t chunks[NC_MAX_VAR_DIMS] = {0};
        int st = nc_inq_var_chunking(ncid, varid, P(0, &storage),
                                     P(1, chunks));
        head("nc_inq_var_chunking", nulls, st);
        printf(" var=%d storage=%d", varid, storage);
        sizes("chunks", chunks, 4);
        printf("\n");
    }
    FOR_NULLS(2) {
        int nofill = -7;
        unsigned char fill[32];
        memset(fill, 0xab, sizeof fill);
        int st = nc_inq_var_fill(ncid, varid, P(0, &nofill), P(1, fill));
        head("nc_inq_var_fill", nulls, st);
        printf(" var=%d nofill=%d", varid, nofill);
        bytes("fill", fill, 8);
        printf("\n");
    }
    FOR_NULLS(3) {
        int shuffle = -7, deflate = -7, level = -7;
        int st = nc_inq_var_deflate(ncid, varid, P(0, &shuffle),
                                    P(1, &deflate), P(2, &level));
        head("nc_inq_var_deflate", nulls, st);
        printf(" var=%d shuffle=%d deflate=%d level=%d\n", varid, shuffle,
               deflate, level);
    }
    printf("%s nc_inq_var_fletcher32 %d NULL: %d\n", stage, varid,
           nc_inq_var_fletcher32(ncid, varid, NULL));
    printf("%s nc_inq_var_endian %d NULL: %d\n", stage, varid,
           nc_inq_var_endian(ncid, varid, NULL));
    FOR_NULLS(2) {
        int opt = -7, ppb = -7;
        int st = nc_inq_var_szip(ncid, varid, P(0, &opt), P(1, &ppb));
        head("nc_inq_var_szip", nulls, st);
        printf(" var=%d options=%d ppb=%d\n", varid, opt, ppb);
    }
    unsigned ids[8] = {0};
    size_t nf = 0;
    FOR_NULLS(2) {
        size_t n = 7;
        unsigned got[8] = {0};
        int st = nc_inq_var_filter_ids(ncid, varid, P(0, &n), P(1, got));
        head("nc_inq_var_filter_ids", nulls, st);
        printf(" var=%d n=%zu first=%u\n", varid, n, got[0]);
        if (nulls == 0 && st == NC_NOERR && n <= 8) {
            nf = n;
            memcpy(ids, got, sizeof ids);
        }
    }
    for (size_t f = 0; f < nf; f++) {
        FOR_NULLS(2) {
            size_t n = 7;
            unsigned params[16] = {0};
            int st = nc_inq_var_filter_info(ncid, varid, ids[f], P(0, &n),
                                            P(1, params));
            head("nc_inq_var_filter_info", nulls, st);
            printf(" var=%d filter=%u n=%zu first=%u\n", varid, ids[f], n,
                   params[0]);
        }
    }
    FOR_NULLS(2) {
        int mode = -7, nsd = -7;
        int st = nc_inq_var_quantize(ncid, varid, P(0, &mode), P(1, &nsd));
        head("nc_inq_var_quantize", nulls, st);
        printf(" var=%d mode=%d nsd=%d\n", varid, mode, nsd);
    }
    inq_atts(ncid, varid);
}

/* Every inquiry on the file, its group and its variables. */
static void inq_all(int ncid)
{
    inq_group(ncid);
    inq_dims(ncid);
    inq_atts(ncid, NC_GLOBAL);
    int nvars = 0;
    if (nc_inq_nvars(ncid, &nvars) == NC_NOERR)
        for (int v = 0; v < nvars; v++)
            inq_var(ncid, v);
    int sub;
    if (nc_inq_grp_ncid(ncid, "sub", &sub) == NC_NOERR) {
        inq_group(sub);
        inq_dims(sub);
        inq_var(sub, 0);
    }
}

/* The raster variable's values, read with NULL counts and strides. */
static int check_data(int ncid, int varid, size_t nrec, size_t ny,
                      size_t nx)
{
    static float buf[2 * 1024 * 1024];
    size_t start[3] = {0, 0, 0}, total = nrec * ny * nx;
    if (total > sizeof buf / sizeof *buf)
        return 1;
    memset(buf, 0, sizeof buf);
    int st = nc_get_vara_float(ncid, varid, start, NULL, buf);
    double sum = 0;
    size_t bad = 0;
    for (size_t i = 0; i < total; i++) {
        sum += buf[i];
        bad += buf[i] != (float)(i % 1000);
    }
    printf("%s nc_get_vara_float count NULL: %d sum=%.0f bad=%zu\n", stage,
           st, sum, bad);
    memset(buf, 0, sizeof buf);
    st = nc_get_vars_float(ncid, varid, start, NULL, NULL, buf);
    bad = 0;
    for (size_t i = 0; i < total; i++)
        bad += buf[i] != (float)(i % 1000);
    printf("%s nc_get_vars_float count, stride NULL: %d bad=%zu\n", stage,
           st, bad);
    printf("%s nc_get_vara_float start NULL: %d\n", stage,
           nc_get_vara_float(ncid, varid, NULL, NULL, buf));
    printf("%s nc_get_var1_float index NULL: %d\n", stage,
           nc_get_var1_float(ncid, varid, NULL, buf));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: null_args MASKFILE MASKVAR OUT.nc\n");
        return 2;
    }
    int mid, mvar, mdims[2];
    size_t ny, nx, nrec = 2;
    if (FAILED(nc_open(argv[1], NC_NOWRITE, &mid)))
        return 1;
    if (FAILED(nc_inq_varid(mid, argv[2], &mvar)))
        return 1;
    if (FAILED(nc_inq_vardimid(mid, mvar, mdims)))
        return 1;
    if (FAILED(nc_inq_dimlen(mid, mdims[0], &ny)))
        return 1;
    if (FAILED(nc_inq_dimlen(mid, mdims[1], &nx)))
        return 1;
    if (FAILED(nc_close(mid)))
        return 1;

    /* ncidp is not optional in netCDF's documentation, but its code
     * checks it: the shim must not be the one to crash */
    printf("open nc_open NULL ncidp: %d\n",
           nc_open(argv[1], NC_NOWRITE, NULL));
    int ncid, dt, dy, dx, dims[3], temp, lev, sub;
    if (FAILED(nc_create(argv[3], NC_NETCDF4 | NC_CLOBBER, &ncid)))
        return 1;
    if (FAILED(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt)))
        return 1;
    if (FAILED(nc_def_dim(ncid, "y", ny, &dy)))
        return 1;
    if (FAILED(nc_def_dim(ncid, "x", nx, &dx)))
        return 1;
    stage = "define";
    printf("%s nc_def_dim NULL idp: %d\n", stage,
           nc_def_dim(ncid, "z", 3, NULL));
    dims[0] = dt;
    dims[1] = dy;
    dims[2] = dx;
    if (FAILED(nc_def_var(ncid, "temp", NC_FLOAT, 3, dims, &temp)))
        return 1;
    printf("%s nc_def_var_chunking NULL sizes (chunked): %d\n", stage,
           nc_def_var_chunking(ncid, temp, NC_CHUNKED, NULL));
    size_t chunk[3] = {1, (ny + 1) / 2, (nx + 1) / 2};
    if (FAILED(nc_def_var_chunking(ncid, temp, NC_CHUNKED, chunk)))
        return 1;
    float fill = -1;
    if (FAILED(nc_put_att_float(ncid, temp, "_FillValue", NC_FLOAT, 1, &fill)))
        return 1;
    if (FAILED(nc_put_att_text(ncid, temp, "units", 1, "K")))
        return 1;
    /* netCDF allows a NULL varidp: the shim must too, mask or not */
    printf("%s nc_def_var 0-d NULL varidp: %d\n", stage,
           nc_def_var(ncid, "scalar", NC_INT, 0, NULL, NULL));
    printf("%s nc_def_var 3-d NULL varidp: %d\n", stage,
           nc_def_var(ncid, "temp2", NC_FLOAT, 3, dims, NULL));
    int dz;
    if (FAILED(nc_inq_dimid(ncid, "z", &dz)))
        return 1;
    if (FAILED(nc_def_var(ncid, "lev", NC_DOUBLE, 1, &dz, &lev)))
        return 1;
    printf("%s nc_def_var_chunking contiguous NULL sizes: %d\n", stage,
           nc_def_var_chunking(ncid, lev, NC_CONTIGUOUS, NULL));
    printf("%s nc_def_var_fill NULL value: %d\n", stage,
           nc_def_var_fill(ncid, lev, 0, NULL));
    printf("%s nc_def_var_chunking NULL sizes (chunked): %d\n", stage,
           nc_def_var_chunking(ncid, temp, NC_CHUNKED, NULL));
    if (FAILED(nc_put_att_text(ncid, NC_GLOBAL, "title", 4, "null")))
        return 1;
    if (FAILED(nc_def_grp(ncid, "sub", &sub)))
        return 1;
    printf("%s nc_def_grp NULL id: %d\n", stage,
           nc_def_grp(ncid, "sub2", NULL));
    if (FAILED(nc_def_var(sub, "w", NC_SHORT, 2, dims + 1, NULL)))
        return 1;
    inq_all(ncid);
    if (FAILED(nc_enddef(ncid)))
        return 1;

    /* data: the raster variable written (adopted under the shim), then
     * everything asked again */
    static float buf[2 * 1024 * 1024];
    if (nrec * ny * nx > sizeof buf / sizeof *buf) {
        fprintf(stderr, "null_args: grid too large\n");
        return 1;
    }
    for (size_t i = 0; i < nrec * ny * nx; i++)
        buf[i] = (float)(i % 1000);
    size_t start[3] = {0, 0, 0}, count[3] = {nrec, ny, nx};
    if (FAILED(nc_put_vara_float(ncid, temp, start, count, buf)))
        return 1;
    int one = 42;
    if (FAILED(nc_put_var_int(ncid, 1, &one)))
        return 1;
    stage = "written";
    inq_all(ncid);
    if (check_data(ncid, temp, nrec, ny, nx))
        return 1;
    if (FAILED(nc_close(ncid)))
        return 1;

    stage = "reopened";
    if (FAILED(nc_open(argv[3], NC_NOWRITE, &ncid)))
        return 1;
    inq_all(ncid);
    if (check_data(ncid, temp, nrec, ny, nx))
        return 1;
    if (FAILED(nc_close(ncid)))
        return 1;
    return 0;
}
