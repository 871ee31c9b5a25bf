/*
 * rasterbench - region reads measured side by side on the same data:
 *   netcdf  the plain chunked file: nc_get_vara of the region's bounding box
 *           over the outer records, then the mask applied to keep the
 *           region's values (what a user does today; netCDF's default
 *           chunk cache);
 *   raster  the raster file: raster_region_read, packed layout;
 *   floor   pread of exactly the region's bytes from one contiguous file
 *           (written once, beside the raster file): the physical limit.
 * Each measurement runs in a child process, so its peak memory (wait4
 * rusage) is its own; the bytes it read come from /proc/self/io (rchar).
 * Warm runs read once before timing; cold runs evict the files with
 * posix_fadvise(POSIX_FADV_DONTNEED) before each repetition. Medians.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "raster.h"

#define MAX_REPS 101
#define MAX_IDS 16

typedef struct options {
    const char *plain, *raster, *var, *json;
    char *cases[64];
    int ncases;
    int reps, cold;
} options;

typedef struct result {
    double seconds[MAX_REPS];
    long long rchar; /* bytes read by the last repetition */
    long peak_kb;
    int ok;
} result;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long long rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long v = -1;
    char key[64];
    long long val;
    while (f && fscanf(f, "%63s %lld", key, &val) == 2)
        if (strcmp(key, "rchar:") == 0)
            v = val;
    if (f)
        fclose(f);
    return v;
}

static void evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_REPS];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* What one case reads: the regions, their bounding box, the records. */
typedef struct region_case {
    int32_t ids[MAX_IDS];
    size_t nids, cells, box[4], records;
    int ndims;
    size_t shape[32];
    size_t elem;
} region_case;

/* ---- the three methods (run in a child) --------------------------------- */

static int read_netcdf(const options *o, const region_case *c,
                       const int32_t *mask, size_t nx)
{
    int ncid, varid;
    if (nc_open(o->plain, NC_NOWRITE, &ncid) != NC_NOERR ||
        nc_inq_varid(ncid, o->var, &varid) != NC_NOERR)
        return -1;
    size_t start[32] = {0}, count[32];
    int nd = c->ndims;
    for (int i = 0; i < nd - 2; i++)
        count[i] = c->shape[i];
    start[nd - 2] = c->box[0];
    start[nd - 1] = c->box[1];
    count[nd - 2] = c->box[2] - c->box[0];
    count[nd - 1] = c->box[3] - c->box[1];
    size_t bcells = count[nd - 2] * count[nd - 1];
    unsigned char *box = malloc(c->records * bcells * c->elem);
    unsigned char *out = malloc(c->records * c->cells * c->elem);
    int rc = -1;
    if (box && out && nc_get_vara(ncid, varid, start, count, box) == NC_NOERR) {
        /* keep the region's values: the mask applied to the box */
        size_t k = 0;
        for (size_t r = 0; r < c->records; r++)
            for (size_t y = c->box[0]; y < c->box[2]; y++)
                for (size_t x = c->box[1]; x < c->box[3]; x++) {
                    int32_t id = mask[y * nx + x];
                    int in = 0;
                    for (size_t i = 0; i < c->nids; i++)
                        in |= id == c->ids[i];
                    if (in)
                        memcpy(out + k++ * c->elem,
                               box + (r * bcells +
                                      (y - c->box[0]) * count[nd - 1] +
                                      (x - c->box[1])) * c->elem,
                               c->elem);
                }
        rc = k == c->records * c->cells ? 0 : -1;
    }
    free(box);
    free(out);
    nc_close(ncid);
    return rc;
}

static int read_raster(const options *o, const region_case *c)
{
    raster_file *f;
    raster_var *v;
    if (raster_open(o->raster, RASTER_READ, &f) != RASTER_OK)
        return -1;
    int rc = -1;
    size_t ostart[32] = {0};
    void *out = malloc(c->records * c->cells * c->elem);
    if (out && raster_var_find(f, o->var, &v) == RASTER_OK &&
        raster_region_read(v, c->ids, c->nids, ostart, c->shape,
                           RASTER_LAYOUT_PACKED, out) == RASTER_OK)
        rc = 0;
    free(out);
    raster_close(f);
    return rc;
}

static int read_floor(const char *path, const region_case *c)
{
    size_t bytes = c->records * c->cells * c->elem;
    unsigned char *out = malloc(bytes);
    int fd = open(path, O_RDONLY);
    int rc = -1;
    if (out && fd >= 0) {
        size_t got = 0;
        while (got < bytes) {
            ssize_t n = pread(fd, out + got, bytes - got, (off_t)got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        rc = got == bytes ? 0 : -1;
    }
    if (fd >= 0)
        close(fd);
    free(out);
    return rc;
}

/* Runs one method `reps` times in a child; fills *res. */
static void measure(const options *o, const region_case *c, int method,
                    const int32_t *mask, size_t nx, const char *floor_path,
                    result *res)
{
    int fds[2];
    memset(res, 0, sizeof *res);
    if (pipe(fds) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        result r;
        memset(&r, 0, sizeof r);
        const char *file = method == 0 ? o->plain
                           : method == 1 ? o->raster : floor_path;
        int ok = 1;
        for (int i = -1; i < o->reps && ok; i++) { /* i = -1: warm-up */
            if (o->cold)
                evict(file);
            long long before = rchar();
            double t0 = now();
            int st = method == 0 ? read_netcdf(o, c, mask, nx)
                     : method == 1 ? read_raster(o, c)
                                   : read_floor(floor_path, c);
            double dt = now() - t0;
            ok = st == 0;
            if (i >= 0)
                r.seconds[i] = dt;
            r.rchar = rchar() - before;
        }
        r.ok = ok;
        ssize_t w = write(fds[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return;
    }
    ssize_t n = read(fds[0], res, sizeof *res);
    close(fds[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) == pid) {
        res->peak_kb = ru.ru_maxrss;
        if (n != (ssize_t)sizeof *res || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            res->ok = 0;
    }
}

/* ---- driver -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs(
"usage: rasterbench --plain PLAIN.nc --raster RASTER.nc --var V\n"
"                   [--case R[+R...]]... [--reps N] [--cold] [--json FILE]\n"
"\n"
"Reads regions of variable V three ways on the same data, each in its own\n"
"process, and prints median times, bytes read and peak memory:\n"
"  netcdf  PLAIN.nc (chunked netCDF-4): nc_get_vara of the bounding box of\n"
"          the regions over all records, then the mask applied (netCDF's\n"
"          default chunk cache);\n"
"  raster  RASTER.nc (rasterconvert of PLAIN.nc): raster_region_read,\n"
"          packed;\n"
"  floor   pread of exactly the regions' bytes from one contiguous file,\n"
"          written once beside RASTER.nc (the physical limit).\n"
"\n"
"  --case R+R   a region or a set of regions (ids or names); repeatable;\n"
"               default: every region with at least 1% of the cells\n"
"  --reps N     timed repetitions after one warm-up (default 5)\n"
"  --cold       evict the files (posix_fadvise DONTNEED) before each read\n"
"  --json FILE  also write the results as JSON\n"
"\n"
"Exit status: 0 ok, 1 bad input or a failed read, 2 bad usage.\n", f);
}

static int parse_case(raster_var *v, char *text, region_case *c)
{
    char *save = NULL;
    c->nids = 0;
    for (char *tok = strtok_r(text, "+", &save); tok;
         tok = strtok_r(NULL, "+", &save)) {
        if (c->nids == MAX_IDS ||
            raster_region_lookup(v, tok, &c->ids[c->nids]) != RASTER_OK) {
            fprintf(stderr, "rasterbench: no region '%s'\n", tok);
            return -1;
        }
        c->nids++;
    }
    return c->nids ? 0 : -1;
}

/* Writes the case's packed data into `path`: the floor's contiguous file. */
static int write_floor(raster_var *v, const region_case *c, const char *path)
{
    size_t bytes = c->records * c->cells * c->elem, ostart[32] = {0};
    void *buf = malloc(bytes ? bytes : 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc = -1;
    if (buf && fd >= 0 &&
        raster_region_read(v, c->ids, c->nids, ostart, c->shape,
                           RASTER_LAYOUT_PACKED, buf) == RASTER_OK &&
        write(fd, buf, bytes) == (ssize_t)bytes && fsync(fd) == 0)
        rc = 0;
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"plain", required_argument, NULL, 'p'},
        {"raster", required_argument, NULL, 'r'},
        {"var", required_argument, NULL, 'v'},
        {"case", required_argument, NULL, 'c'},
        {"reps", required_argument, NULL, 'n'},
        {"cold", no_argument, NULL, 'C'},
        {"json", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    options o = {.reps = 5};
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'p': o.plain = optarg; break;
        case 'r': o.raster = optarg; break;
        case 'v': o.var = optarg; break;
        case 'c':
            if (o.ncases < 64)
                o.cases[o.ncases++] = optarg;
            break;
        case 'n': o.reps = atoi(optarg); break;
        case 'C': o.cold = 1; break;
        case 'j': o.json = optarg; break;
        case 'h': usage(stdout); return CLI_OK;
        default: usage(stderr); return CLI_EUSAGE;
        }
    }
    if (!o.plain || !o.raster || !o.var || optind < argc || o.reps < 1 ||
        o.reps > MAX_REPS - 1) {
        fprintf(stderr, "rasterbench: --plain, --raster and --var are "
                "required; --reps 1..%d (try --help)\n", MAX_REPS - 1);
        return CLI_EUSAGE;
    }
    raster_file *f;
    raster_var *v;
    int rc = raster_open(o.raster, RASTER_READ, &f);
    if (rc == RASTER_OK)
        rc = raster_var_find(f, o.var, &v);
    if (rc != RASTER_OK) {
        fprintf(stderr, "rasterbench: %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        return CLI_EINPUT;
    }
    const raster_mesh *mesh = raster_var_mesh(v);
    const raster_mask *mask = raster_var_mask(v);
    size_t ny, nx, shape[32], elem = 0, records = 1;
    int nd = raster_var_ndims(v);
    raster_mask_shape(mask, &ny, &nx);
    raster_var_dims(v, NULL, shape, NULL);
    nc_inq_type(raster_file_ncid(f), raster_var_type(v), NULL, &elem);
    for (int i = 0; i < nd - 2; i++)
        records *= shape[i];
    /* default cases: every region with at least 1% of the cells */
    char defaults[64][16];
    if (o.ncases == 0) {
        for (size_t i = 0; i < raster_mesh_nregions(mesh) && o.ncases < 64;
             i++) {
            raster_region_stats s;
            raster_mesh_region(mesh, i, &s);
            if (s.cells * 100 >= ny * nx) {
                snprintf(defaults[o.ncases], 16, "%d", (int)s.id);
                o.cases[o.ncases] = defaults[o.ncases];
                o.ncases++;
            }
        }
    }
    char floor_path[4096];
    snprintf(floor_path, sizeof floor_path, "%s.floor", o.raster);
    FILE *json = o.json ? fopen(o.json, "w") : NULL;
    if (o.json && !json) {
        fprintf(stderr, "rasterbench: %s: %s\n", o.json, strerror(errno));
        raster_close(f);
        return CLI_EINPUT;
    }
    if (json)
        fprintf(json, "{\"plain\":\"%s\",\"raster\":\"%s\",\"var\":\"%s\","
                "\"cache\":\"%s\",\"reps\":%d,\"cases\":[", o.plain,
                o.raster, o.var, o.cold ? "cold" : "warm", o.reps);
    printf("%s reads of %s, %zu records of %zu x %zu, median of %d\n",
           o.cold ? "cold" : "warm", o.var, records, ny, nx, o.reps);
    printf("%-30s %9s %6s %12s %12s %9s %9s %9s %8s %8s\n", "regions",
           "cells", "DRR", "netcdf_B", "raster_B", "netcdf_s", "raster_s",
           "floor_s", "speedup", "mem");
    int status = CLI_OK;
    for (int k = 0; k < o.ncases && status == CLI_OK; k++) {
        region_case c = {.records = records, .ndims = nd, .elem = elem};
        memcpy(c.shape, shape, sizeof shape);
        char label[256];
        snprintf(label, sizeof label, "%s", o.cases[k]);
        char text[256];
        snprintf(text, sizeof text, "%s", o.cases[k]);
        if (parse_case(v, text, &c) != 0 ||
            raster_region_size(v, c.ids, c.nids, RASTER_LAYOUT_PACKED,
                               &c.cells) != RASTER_OK ||
            raster_region_bbox(v, c.ids, c.nids, c.box) != RASTER_OK ||
            write_floor(v, &c, floor_path) != 0) {
            fprintf(stderr, "rasterbench: case %s: %s\n", label,
                    raster_errmsg());
            status = CLI_EINPUT;
            break;
        }
        /* names for the label, and the paper's DRR of a single region */
        if (c.nids == 1) {
            const char *name = raster_mask_region_name(mask, c.ids[0]);
            if (name)
                snprintf(label, sizeof label, "%s", name);
        }
        double drr = 0;
        raster_region_stats st;
        if (c.nids == 1 &&
            raster_mesh_region_stats(mesh, c.ids[0], &st) == RASTER_OK)
            drr = st.data_reduction_rate;
        result r[3];
        for (int m = 0; m < 3; m++)
            measure(&o, &c, m, raster_mask_values(mask), nx, floor_path,
                    &r[m]);
        if (!r[0].ok || !r[1].ok || !r[2].ok) {
            fprintf(stderr, "rasterbench: case %s: a read failed\n", label);
            status = CLI_EINPUT;
            break;
        }
        double t[3];
        for (int m = 0; m < 3; m++)
            t[m] = median(r[m].seconds, o.reps);
        printf("%-30.30s %9zu %6.2f %12lld %12lld %9.4f %9.4f %9.4f %7.2fx "
               "%7.2fx\n", label, c.cells, drr, r[0].rchar, r[1].rchar, t[0],
               t[1], t[2], t[0] / t[1],
               (double)r[0].peak_kb / (double)r[1].peak_kb);
        if (json) {
            static const char *names[3] = {"netcdf", "raster", "floor"};
            for (int m = 0; m < 3; m++)
                fprintf(json, "%s{\"case\":\"%s\",\"method\":\"%s\","
                        "\"cache\":\"%s\",\"cells\":%zu,\"median_s\":%.6f,"
                        "\"bytes_read\":%lld,\"peak_rss\":%ld}",
                        k || m ? "," : "", label, names[m],
                        o.cold ? "cold" : "warm", c.cells, t[m], r[m].rchar,
                        r[m].peak_kb * 1024L);
        }
    }
    printf("(speedup = netcdf time / raster time; mem = netcdf peak RSS / "
           "raster peak RSS; bytes from /proc/self/io rchar)\n");
    if (json) {
        fprintf(json, "]}\n");
        if (fclose(json) != 0)
            status = CLI_EINPUT;
    }
    unlink(floor_path);
    raster_close(f);
    return status;
}
