/*
 * rasterbench_mpi - raster under MPI, measured (run it with mpirun/srun).
 *
 * Reads: every rank opens the raster file (raster_open_par) and reads its
 * share of each case with raster_region_read_par (ranks split the records,
 * or the regions of a multi-region case); per repetition the ranks start
 * together (barrier) and the aggregate time is the slowest rank's.
 * Reported: per-rank medians, the aggregate median and aggregate
 * throughput (all ranks' bytes / aggregate time). Warm: one untimed read
 * first.
 *
 * Writes (--write): record-by-record parallel writes of a CESM-like
 * TEMP(time, z_t, nlat, nlon) float, every rank a band of rows, collective
 * access, one call per record: plain parallel netCDF-4 (chunked like the
 * base chunk) against raster (raster_var_put_typed, exactly the call the
 * preload shim makes for nc_put_vara_float), alternating, medians of the
 * loop plus close.
 *
 * ParallelIO pattern (--pio): an imitation, not ParallelIO itself, of the
 * netCDF calls ParallelIO 2 (the I/O library of CESM) makes when it writes
 * a record of a distributed 3-D float field with its subset rearranger,
 * every rank an I/O task (stride 1) and the grid cut into column strips
 * (POP-like blocks side by side): an I/O task's data is then one region per
 * (level, row), a strip-row of nx / ranks values (at 2 ranks and 320
 * columns: half-rows of 160). Per record set, as in ParallelIO's
 * pio_darray_int.c:
 *   NETCDF4C (write_darray_multi_serial, recv_and_write_data): only I/O
 *   task 0 has the file (nc_create, serial netCDF-4); every other task
 *   sends it its region count, start and count arrays and data
 *   (MPI_Send), and task 0 calls nc_put_vara_float once per region, its
 *   own regions first, then task 1's, ...;
 *   NETCDF4P (write_darray_multi_par): every task has the file
 *   (nc_create_par) and per region calls nc_var_par_access(NC_COLLECTIVE)
 *   and a collective nc_put_vara_float (all tasks the same number of
 *   calls).
 * Plain netCDF (its default chunking, as ParallelIO leaves it) against
 * raster (raster_create / raster_create_par, raster_var_put_typed: the
 * calls the shim makes), alternating, medians of the loop plus close;
 * pio_write_ratio = plain / raster seconds, the lower of the two types.
 * Through the MPI shim itself: --netcdf-only makes only the netCDF calls
 * (run it once without the shim with --json, then under the shim with
 * --baseline that JSON: pio_write_ratio = plain / shim).
 *
 * usage:
 *   rasterbench_mpi --raster FILE --var V --case R[+R..] [--case ..]
 *                   [--reps N] [--split outer|regions]
 *                   [--layout packed|bbox|full] [--json FILE]
 *   rasterbench_mpi --write --mask FILE:VAR --dir DIR [--ntime T]
 *                   [--ndepth K] [--reps N] [--json FILE]
 *   rasterbench_mpi --pio --mask FILE:VAR --dir DIR [--ntime T]
 *                   [--ndepth K] [--reps N] [--json FILE]
 *                   [--netcdf-only [--baseline JSON]]
 *                   (--ndepth defaults to 30 here: 23,040 regions per
 *                   record at 384 rows)
 * Regions are ids or names from the mask's flag_meanings. Exit 0 (ok),
 * 1 (bad input or I/O error), 2 (bad usage).
 */
#include <math.h>
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "raster.h"

#define MAX_REPS 101
#define MAX_CASES 32
#define MAX_IDS 16

static int rank, nranks;

typedef struct options {
    const char *raster, *var, *json, *mask, *dir, *baseline;
    const char *cases[MAX_CASES];
    int ncases, reps, split, layout, write, pio, ndepth_set, netcdf_only;
    size_t ntime, ndepth;
} options;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: rasterbench_mpi --raster FILE --var V --case R[+R..] "
        "[--case ..] [--reps N]\n"
        "                       [--split outer|regions] "
        "[--layout packed|bbox|full] [--json FILE]\n"
        "       rasterbench_mpi --write --mask FILE:VAR --dir DIR "
        "[--ntime T] [--ndepth K] [--reps N]\n"
        "                       [--json FILE]\n"
        "       rasterbench_mpi --pio --mask FILE:VAR --dir DIR "
        "[--ntime T] [--ndepth K] [--reps N]\n"
        "                       [--netcdf-only [--baseline JSON]] "
        "[--json FILE]\n"
        "Run under mpirun or srun; every rank takes part.\n");
}

/* 0, or CLI_EUSAGE after printing why (rank 0). */
static int parse(int argc, char **argv, options *o)
{
    *o = (options){.reps = 5, .split = RASTER_SPLIT_OUTER,
                   .layout = RASTER_LAYOUT_PACKED, .ntime = 12, .ndepth = 8};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--help") == 0) {
            if (rank == 0)
                usage(stdout);
            return -1;
        } else if (strcmp(a, "--write") == 0) {
            o->write = 1;
            takes = 0;
        } else if (strcmp(a, "--pio") == 0) {
            o->pio = 1;
            takes = 0;
        } else if (strcmp(a, "--netcdf-only") == 0) {
            o->netcdf_only = 1;
            takes = 0;
        } else if (!val) {
            break;
        } else if (strcmp(a, "--raster") == 0) {
            o->raster = val;
        } else if (strcmp(a, "--var") == 0) {
            o->var = val;
        } else if (strcmp(a, "--json") == 0) {
            o->json = val;
        } else if (strcmp(a, "--mask") == 0) {
            o->mask = val;
        } else if (strcmp(a, "--dir") == 0) {
            o->dir = val;
        } else if (strcmp(a, "--baseline") == 0) {
            o->baseline = val;
        } else if (strcmp(a, "--case") == 0 && o->ncases < MAX_CASES) {
            o->cases[o->ncases++] = val;
        } else if (strcmp(a, "--reps") == 0) {
            o->reps = atoi(val);
        } else if (strcmp(a, "--ntime") == 0) {
            o->ntime = strtoul(val, NULL, 10);
        } else if (strcmp(a, "--ndepth") == 0) {
            o->ndepth = strtoul(val, NULL, 10);
            o->ndepth_set = 1;
        } else if (strcmp(a, "--split") == 0) {
            if (strcmp(val, "outer") == 0)
                o->split = RASTER_SPLIT_OUTER;
            else if (strcmp(val, "regions") == 0)
                o->split = RASTER_SPLIT_REGIONS;
            else
                goto bad;
        } else if (strcmp(a, "--layout") == 0) {
            if (strcmp(val, "packed") == 0)
                o->layout = RASTER_LAYOUT_PACKED;
            else if (strcmp(val, "bbox") == 0)
                o->layout = RASTER_LAYOUT_BBOX;
            else if (strcmp(val, "full") == 0)
                o->layout = RASTER_LAYOUT_FULL;
            else
                goto bad;
        } else {
            if (rank == 0)
                fprintf(stderr, "rasterbench_mpi: unknown option '%s'; try "
                        "'rasterbench_mpi --help'\n", a);
            return CLI_EUSAGE;
        }
        i += takes;
        continue;
    bad:
        if (rank == 0)
            fprintf(stderr, "rasterbench_mpi: bad value '%s' for %s; try "
                    "'rasterbench_mpi --help'\n", val, a);
        return CLI_EUSAGE;
    }
    int ok = o->reps >= 1 && o->reps <= MAX_REPS &&
             (o->write || o->pio ? o->mask && o->dir && o->ntime > 0 && o->ndepth > 0
                       : o->raster && o->var && o->ncases > 0);
    if (o->pio && !o->ndepth_set)
        o->ndepth = 30;
    if ((o->write && o->pio) || (o->netcdf_only && !o->pio) ||
        (o->baseline && !o->netcdf_only))
        ok = 0;
    if (!ok) {
        if (rank == 0) {
            fprintf(stderr, "rasterbench_mpi: missing or bad arguments "
                    "(reps 1..%d)\n", MAX_REPS);
            usage(stderr);
        }
        return CLI_EUSAGE;
    }
    return 0;
}

/* ---- reads -------------------------------------------------------------- */

typedef struct read_result {
    double agg, mine;           /* medians: slowest rank, this rank */
    double per_rank[1024];      /* rank 0 only: every rank's median */
    unsigned long long bytes;   /* all ranks, one repetition */
} read_result;

static int read_case(raster_var *v, const options *o, const char *spec,
                     read_result *res)
{
    int32_t ids[MAX_IDS];
    size_t nids = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
        if (nids == MAX_IDS || raster_region_lookup(v, t, &ids[nids]) != RASTER_OK) {
            if (rank == 0)
                fprintf(stderr, "rasterbench_mpi: region %s: %s\n", t,
                        raster_errmsg());
            return CLI_EINPUT;
        }
        nids++;
    }
    int nd = raster_var_ndims(v), no = nd - 2;
    size_t shape[32], ostart[32] = {0}, ocount[32], mys[32], myc[32], mynids;
    int32_t myids[MAX_IDS];
    if (raster_var_dims(v, NULL, shape, NULL) != RASTER_OK)
        return CLI_EINPUT;
    for (int i = 0; i < no; i++)
        ocount[i] = shape[i];
    if (raster_region_split(v, ids, nids, ostart, ocount, o->split, rank,
                            nranks, mys, myc, myids, &mynids) != RASTER_OK) {
        fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
        return CLI_EINPUT;
    }
    size_t plane = 0, planes = 1;
    if (mynids > 0 &&
        raster_region_size(v, myids, mynids, o->layout, &plane) != RASTER_OK)
        return CLI_EINPUT;
    for (int i = 0; i < no; i++)
        planes *= myc[i];
    size_t elem = 0;
    switch (raster_var_type(v)) {
    case NC_BYTE: case NC_UBYTE: elem = 1; break;
    case NC_SHORT: case NC_USHORT: elem = 2; break;
    case NC_INT: case NC_UINT: case NC_FLOAT: elem = 4; break;
    default: elem = 8;
    }
    unsigned long long mybytes = mynids ? plane * planes * elem : 0;
    void *out = malloc(mybytes ? mybytes : 1);
    int rc = out ? RASTER_OK : RASTER_ENOMEM;
    double t[MAX_REPS], agg[MAX_REPS];
    for (int r = -1; r < o->reps; r++) { /* r = -1: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rc == RASTER_OK)
            rc = raster_region_read_par(v, ids, nids, ostart, ocount,
                                        o->layout, o->split, MPI_COMM_WORLD,
                                        out, NULL, NULL, NULL, NULL);
        double dt = MPI_Wtime() - t0, slowest;
        MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0) {
            t[r] = dt;
            agg[r] = slowest;
        }
    }
    free(out);
    int bad = rc != RASTER_OK, anybad;
    if (bad)
        fprintf(stderr, "rasterbench_mpi (rank %d): %s: %s\n", rank,
                raster_strerror(rc), raster_errmsg());
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad)
        return CLI_EINPUT;
    res->mine = median(t, o->reps);
    res->agg = median(agg, o->reps);
    MPI_Gather(&res->mine, 1, MPI_DOUBLE, res->per_rank, 1, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    MPI_Allreduce(&mybytes, &res->bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
                  MPI_COMM_WORLD);
    return CLI_OK;
}

static int bench_reads(const options *o)
{
    raster_file *f;
    int rc = raster_open_par(o->raster, RASTER_READ, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &f);
    if (rc != RASTER_OK) {
        if (rank == 0)
            fprintf(stderr, "rasterbench_mpi: %s: %s\n", o->raster,
                    raster_errmsg());
        return CLI_EINPUT;
    }
    raster_var *v;
    if (raster_var_find(f, o->var, &v) != RASTER_OK) {
        if (rank == 0)
            fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
        raster_close(f);
        return CLI_EINPUT;
    }
    FILE *js = NULL;
    if (rank == 0 && o->json && !(js = fopen(o->json, "w")))
        fprintf(stderr, "rasterbench_mpi: cannot write %s\n", o->json);
    if (js) {
        fprintf(js, "{\"ranks\": %d, \"file\": ", nranks);
        cli_json_string(js, o->raster);
        fprintf(js, ", \"var\": ");
        cli_json_string(js, o->var);
        fprintf(js, ", \"split\": \"%s\", \"reps\": %d, \"cases\": [",
                o->split == RASTER_SPLIT_OUTER ? "outer" : "regions", o->reps);
    }
    if (rank == 0)
        printf("%-16s %6s %12s %12s %12s  per-rank medians (s)\n", "case",
               "ranks", "MB", "agg (s)", "MB/s");
    int status = CLI_OK;
    for (int c = 0; c < o->ncases && status == CLI_OK; c++) {
        static read_result res;
        status = read_case(v, o, o->cases[c], &res);
        if (status != CLI_OK || rank != 0)
            continue;
        double mb = (double)res.bytes / 1e6;
        printf("%-16s %6d %12.2f %12.6f %12.1f ", o->cases[c], nranks, mb,
               res.agg, mb / res.agg);
        for (int r = 0; r < nranks && r < 1024; r++)
            printf(" %.6f", res.per_rank[r]);
        printf("\n");
        if (js) {
            fprintf(js, "%s{\"case\": ", c ? ", " : "");
            cli_json_string(js, o->cases[c]);
            fprintf(js, ", \"bytes\": %llu, \"agg_seconds\": %.6f, "
                    "\"agg_MBps\": %.3f, \"rank_seconds\": [", res.bytes,
                    res.agg, mb / res.agg);
            for (int r = 0; r < nranks && r < 1024; r++)
                fprintf(js, "%s%.6f", r ? ", " : "", res.per_rank[r]);
            fprintf(js, "]}");
        }
    }
    if (js) {
        fprintf(js, "]}\n");
        fclose(js);
    }
    raster_close(f);
    return status;
}

/* ---- writes ------------------------------------------------------------- */

/* Reports a failed netCDF call (what names it and its object) with this
 * rank; 1 if st is an error. */
static int nc_failed(int st, const char *what)
{
    if (st == NC_NOERR)
        return 0;
    fprintf(stderr, "rasterbench_mpi (rank %d): %s: %s\n", rank, what,
            nc_strerror(st));
    return 1;
}

/* One record-by-record write of TEMP, plain (mask NULL) or raster; the
 * slowest rank's seconds for the loop and the close, or < 0 on error. */
static double write_once(const options *o, const char *path,
                         const raster_mask *mask, const float *band,
                         size_t y0, size_t y1, size_t ny, size_t nx)
{
    int ncid, dt, dz, dy, dx, vid;
    raster_file *rf = NULL;
    raster_var *rv = NULL;
    size_t chunk[4] = {1, o->ndepth, ny < 50 ? ny : 50, nx < 50 ? nx : 50};
    if (mask) {
        if (raster_create_par(path, MPI_COMM_WORLD, MPI_INFO_NULL, &rf) !=
            RASTER_OK) {
            fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
            return -1.0;
        }
        ncid = raster_file_ncid(rf);
    } else {
        if (nc_failed(nc_create_par(path, NC_NETCDF4 | NC_CLOBBER,
                                    MPI_COMM_WORLD, MPI_INFO_NULL, &ncid),
                      "nc_create_par(output file)"))
            return -1.0;
    }
    if (nc_failed(nc_def_dim(ncid, "time", NC_UNLIMITED, &dt),
                  "nc_def_dim(time)"))
        return -1.0;
    if (nc_failed(nc_def_dim(ncid, "z_t", o->ndepth, &dz), "nc_def_dim(z_t)"))
        return -1.0;
    if (nc_failed(nc_def_dim(ncid, "nlat", ny, &dy), "nc_def_dim(nlat)"))
        return -1.0;
    if (nc_failed(nc_def_dim(ncid, "nlon", nx, &dx), "nc_def_dim(nlon)"))
        return -1.0;
    int d4[4] = {dt, dz, dy, dx};
    if (mask) {
        if (raster_def_var(rf, ncid, "TEMP", NC_FLOAT, 4, d4, chunk, mask,
                           &rv) != RASTER_OK ||
            raster_var_par_access(rv, NC_COLLECTIVE) != RASTER_OK) {
            fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
            return -1.0;
        }
    } else {
        if (nc_failed(nc_def_var(ncid, "TEMP", NC_FLOAT, 4, d4, &vid),
                      "nc_def_var(TEMP)"))
            return -1.0;
        if (nc_failed(nc_def_var_chunking(ncid, vid, NC_CHUNKED, chunk),
                      "nc_def_var_chunking(TEMP)"))
            return -1.0;
        if (nc_failed(nc_var_par_access(ncid, vid, NC_COLLECTIVE),
                      "nc_var_par_access(TEMP)"))
            return -1.0;
    }
    if (nc_failed(nc_enddef(ncid), "nc_enddef(output file)"))
        return -1.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t t = 0; t < o->ntime; t++) {
        size_t start[4] = {t, 0, y0, 0}, count[4] = {1, o->ndepth, y1 - y0, nx};
        if (y1 == y0)
            count[0] = 0;
        if (mask) {
            if (raster_var_put_typed(rv, start, count, NULL, NULL, band,
                                     NC_FLOAT) != RASTER_OK) {
                fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
                return -1.0;
            }
        } else {
            if (nc_failed(nc_put_vara_float(ncid, vid, start, count, band),
                          "nc_put_vara_float(TEMP record)"))
                return -1.0;
        }
    }
    if (mask) {
        if (raster_close(rf) != RASTER_OK) {
            fprintf(stderr, "rasterbench_mpi: %s\n", raster_errmsg());
            return -1.0;
        }
    } else {
        if (nc_failed(nc_close(ncid), "nc_close(output file)"))
            return -1.0;
    }
    double dt_ = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&dt_, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* The mask of --mask FILE:VAR, or NULL (rank 0 says why). */
static raster_mask *load_mask(const options *o)
{
    char *mfile = NULL, *mvar = NULL;
    raster_mask *mask = NULL;
    if (cli_split_spec(o->mask, &mfile, &mvar) != 0 ||
        raster_mask_load(mfile, mvar, &mask) != RASTER_OK) {
        if (rank == 0)
            fprintf(stderr, "rasterbench_mpi: mask %s: %s\n", o->mask,
                    raster_errmsg());
        mask = NULL;
    }
    free(mfile);
    free(mvar);
    return mask;
}

static int bench_writes(const options *o)
{
    raster_mask *mask = load_mask(o);
    if (!mask)
        return CLI_EINPUT;
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    size_t y0 = ny * (size_t)rank / (size_t)nranks;
    size_t y1 = ny * (size_t)(rank + 1) / (size_t)nranks;
    size_t cells = o->ndepth * (y1 - y0) * nx;
    float *band = malloc((cells ? cells : 1) * sizeof *band);
    if (!band) {
        raster_mask_free(mask);
        return CLI_EINPUT;
    }
    const int32_t *m = raster_mask_values(mask);
    for (size_t k = 0; k < o->ndepth; k++)
        for (size_t y = y0; y < y1; y++)
            for (size_t x = 0; x < nx; x++)
                band[(k * (y1 - y0) + (y - y0)) * nx + x] =
                    m[y * nx + x] == 0 ? 9.96921e36f
                                       : (float)(20.0 + 0.01 * (double)x -
                                                 0.1 * (double)k);
    char plain[4096], rast[4096];
    snprintf(plain, sizeof plain, "%s/bench_plain.nc", o->dir);
    snprintf(rast, sizeof rast, "%s/bench_raster.nc", o->dir);
    double tp[MAX_REPS], tr[MAX_REPS];
    int status = CLI_OK;
    for (int r = 0; r < o->reps && status == CLI_OK; r++) {
        tp[r] = write_once(o, plain, NULL, band, y0, y1, ny, nx);
        tr[r] = write_once(o, rast, mask, band, y0, y1, ny, nx);
        int bad = tp[r] < 0 || tr[r] < 0, anybad;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (anybad)
            status = CLI_EINPUT;
    }
    if (status == CLI_OK && rank == 0) {
        double mp = median(tp, o->reps), mr = median(tr, o->reps);
        double mb = (double)(o->ntime * o->ndepth * ny * nx * 4) / 1e6;
        printf("write %zu records of %zu x %zu x %zu float, %d ranks "
               "(bands of rows, collective):\n", o->ntime, o->ndepth, ny, nx,
               nranks);
        printf("  plain netCDF  %.4f s  %8.1f MB/s\n", mp, mb / mp);
        printf("  raster        %.4f s  %8.1f MB/s\n", mr, mb / mr);
        printf("  raster / plain throughput: %.2fx\n", mp / mr);
        if (o->json) {
            FILE *js = fopen(o->json, "w");
            if (js) {
                fprintf(js, "{\"ranks\": %d, \"records\": %zu, \"MB\": %.3f, "
                        "\"plain_seconds\": %.6f, \"raster_seconds\": %.6f, "
                        "\"speedup\": %.3f}\n", nranks, o->ntime, mb, mp, mr,
                        mp / mr);
                fclose(js);
            }
        }
    }
    free(band);
    raster_mask_free(mask);
    return status;
}

/* ---- the ParallelIO pattern (an imitation: see the top) ---------------- */

enum { PIO_NC4C, PIO_NC4P };

/* Where one run of the pattern writes: plain netCDF or raster. */
typedef struct pio_out {
    int ncid, vid, open;
    raster_file *rf;
    raster_var *rv;
} pio_out;

static int pio_fail(const char *what)
{
    fprintf(stderr, "rasterbench_mpi (rank %d): %s: %s\n", rank, what,
            raster_errmsg());
    return 1;
}

/* Creates the file and TEMP(time, z_t, nlat, nlon) float in it; 0 or 1. */
static int pio_create(pio_out *w, const char *path, const raster_mask *mask,
                      int par, size_t nz, size_t ny, size_t nx)
{
    int dt, dz, dy, dx;
    *w = (pio_out){.vid = -1};
    if (mask) {
        int rc = par ? raster_create_par(path, MPI_COMM_WORLD, MPI_INFO_NULL,
                                         &w->rf)
                     : raster_create(path, &w->rf);
        if (rc != RASTER_OK)
            return pio_fail(path);
        w->ncid = raster_file_ncid(w->rf);
    } else if (nc_failed(par ? nc_create_par(path, NC_NETCDF4 | NC_CLOBBER,
                                             MPI_COMM_WORLD, MPI_INFO_NULL,
                                             &w->ncid)
                             : nc_create(path, NC_NETCDF4 | NC_CLOBBER,
                                         &w->ncid),
                         "creating the output file")) {
        return 1;
    }
    w->open = 1;
    if (nc_failed(nc_def_dim(w->ncid, "time", NC_UNLIMITED, &dt),
                  "nc_def_dim(time)") ||
        nc_failed(nc_def_dim(w->ncid, "z_t", nz, &dz), "nc_def_dim(z_t)") ||
        nc_failed(nc_def_dim(w->ncid, "nlat", ny, &dy), "nc_def_dim(nlat)") ||
        nc_failed(nc_def_dim(w->ncid, "nlon", nx, &dx), "nc_def_dim(nlon)"))
        return 1;
    int d4[4] = {dt, dz, dy, dx};
    if (mask) {
        if (raster_def_var(w->rf, w->ncid, "TEMP", NC_FLOAT, 4, d4, NULL,
                           mask, &w->rv) != RASTER_OK)
            return pio_fail("raster_def_var(TEMP)");
    } else if (nc_failed(nc_def_var(w->ncid, "TEMP", NC_FLOAT, 4, d4,
                                    &w->vid), "nc_def_var(TEMP)")) {
        return 1;
    }
    return nc_failed(nc_enddef(w->ncid), "nc_enddef(output file)");
}

/* One region's write as ParallelIO makes it; 0 or 1. */
static int pio_put(pio_out *w, int iotype, const size_t *start,
                   const size_t *count, const float *data)
{
    if (w->rv) {
        if (iotype == PIO_NC4P &&
            raster_var_par_access(w->rv, NC_COLLECTIVE) != RASTER_OK)
            return pio_fail("raster_var_par_access(TEMP)");
        if (raster_var_put_typed(w->rv, start, count, NULL, NULL, data,
                                 NC_FLOAT) != RASTER_OK)
            return pio_fail("raster_var_put_typed(TEMP)");
        return 0;
    }
    if (iotype == PIO_NC4P &&
        nc_failed(nc_var_par_access(w->ncid, w->vid, NC_COLLECTIVE),
                  "nc_var_par_access(TEMP)"))
        return 1;
    return nc_failed(nc_put_vara_float(w->ncid, w->vid, start, count, data),
                     "nc_put_vara_float(TEMP region)");
}

static int pio_close(pio_out *w)
{
    if (!w->open)
        return 0;
    w->open = 0;
    if (w->rf)
        return raster_close(w->rf) != RASTER_OK ? pio_fail("raster_close")
                                                : 0;
    return nc_failed(nc_close(w->ncid), "nc_close(output file)");
}

/* This rank's regions of one record: (level, row) strip-rows of columns
 * [x0, x0 + w), data level by level, row by row. */
typedef struct pio_regions {
    size_t n, x0, w, ny, nz;
    uint64_t *start, *count; /* 4 per region, as ParallelIO sends them */
    float *data;
} pio_regions;

static void pio_set(pio_regions *g, size_t t)
{
    for (size_t k = 0, i = 0; k < g->nz; k++)
        for (size_t y = 0; y < g->ny; y++, i++) {
            uint64_t *s = g->start + 4 * i, *c = g->count + 4 * i;
            s[0] = t, s[1] = k, s[2] = y, s[3] = g->x0;
            c[0] = 1, c[1] = 1, c[2] = 1, c[3] = g->w;
        }
}

/* Writes regions g (start/count already set) through w; 0 or 1. */
static int pio_put_all(pio_out *w, int iotype, const pio_regions *g)
{
    for (size_t i = 0; i < g->n; i++) {
        size_t s[4], c[4];
        for (int d = 0; d < 4; d++)
            s[d] = (size_t)g->start[4 * i + d], c[d] = (size_t)g->count[4 * i + d];
        if (pio_put(w, iotype, s, c, g->data + i * g->w))
            return 1;
    }
    return 0;
}

/* One run of the pattern, plain (mask NULL) or raster: the slowest rank's
 * seconds for the records and the close, or < 0 on error. */
static double pio_once(const options *o, int iotype, const char *path,
                       const raster_mask *mask, pio_regions *mine,
                       pio_regions *other, size_t ny, size_t nx)
{
    pio_out w = {0};
    int bad = 0, has_file = iotype == PIO_NC4P || rank == 0;
    if (has_file)
        bad = pio_create(&w, path, mask, iotype == PIO_NC4P, o->ndepth, ny,
                         nx);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t t = 0; t < o->ntime && !bad; t++) {
        pio_set(mine, t);
        if (iotype == PIO_NC4P) {
            bad = pio_put_all(&w, iotype, mine);
            continue;
        }
        if (rank > 0) { /* send_all_start_count */
            int n = (int)mine->n;
            if (MPI_Send(&n, 1, MPI_INT, 0, 1, MPI_COMM_WORLD) ||
                MPI_Send(mine->start, 4 * n, MPI_UINT64_T, 0, 2,
                         MPI_COMM_WORLD) ||
                MPI_Send(mine->count, 4 * n, MPI_UINT64_T, 0, 3,
                         MPI_COMM_WORLD) ||
                MPI_Send(mine->data, n * (int)mine->w, MPI_FLOAT, 0, 4,
                         MPI_COMM_WORLD))
                bad = 1;
            continue;
        }
        bad = pio_put_all(&w, iotype, mine);
        for (int r = 1; r < nranks && !bad; r++) { /* recv_and_write_data */
            int n;
            MPI_Status st;
            if (MPI_Recv(&n, 1, MPI_INT, r, 1, MPI_COMM_WORLD, &st) ||
                n < 0 || (size_t)n > other->n ||
                MPI_Recv(other->start, 4 * n, MPI_UINT64_T, r, 2,
                         MPI_COMM_WORLD, &st) ||
                MPI_Recv(other->count, 4 * n, MPI_UINT64_T, r, 3,
                         MPI_COMM_WORLD, &st) ||
                MPI_Recv(other->data, n * (int)other->w, MPI_FLOAT, r, 4,
                         MPI_COMM_WORLD, &st)) {
                bad = 1;
                break;
            }
            pio_regions g = *other;
            g.n = (size_t)n;
            g.w = (size_t)other->count[3];
            bad = pio_put_all(&w, iotype, &g);
        }
    }
    bad |= pio_close(&w);
    double dt_ = MPI_Wtime() - t0, slowest;
    int anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&dt_, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return anybad ? -1.0 : slowest;
}

static int pio_alloc(pio_regions *g, size_t n, size_t w)
{
    g->n = n;
    g->w = w;
    g->start = malloc((n ? n : 1) * 4 * sizeof *g->start);
    g->count = malloc((n ? n : 1) * 4 * sizeof *g->count);
    g->data = malloc((n * w > 0 ? n * w : 1) * sizeof *g->data);
    return g->start && g->count && g->data;
}

static void pio_free(pio_regions *g)
{
    free(g->start);
    free(g->count);
    free(g->data);
}

/* The seconds of a --netcdf-only JSON (a run without the shim) into
 * med[io][0]; 0, or 1 after saying why. */
static int pio_baseline(const char *path, double med[2][2])
{
    static const char *keys[2] = {"\"nc4c_netcdf_seconds\":",
                                  "\"nc4p_netcdf_seconds\":"};
    char text[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    for (int io = 0; io < 2; io++) {
        const char *at = strstr(text, keys[io]);
        if (!at || sscanf(at + strlen(keys[io]), "%lf", &med[io][0]) != 1 ||
            !(med[io][0] > 0)) {
            fprintf(stderr, "rasterbench_mpi: %s: no %s (a --netcdf-only "
                    "run's JSON)\n", path, keys[io]);
            return 1;
        }
    }
    return 0;
}

static int bench_pio(const options *o)
{
    raster_mask *mask = load_mask(o);
    if (!mask)
        return CLI_EINPUT;
    size_t ny, nx;
    raster_mask_shape(mask, &ny, &nx);
    /* column strips, the widest first: rank 0 can receive any of them */
    size_t x0 = nx * (size_t)rank / (size_t)nranks;
    size_t x1 = nx * (size_t)(rank + 1) / (size_t)nranks;
    size_t widest = (nx + (size_t)nranks - 1) / (size_t)nranks;
    pio_regions mine = {.x0 = x0, .ny = ny, .nz = o->ndepth};
    pio_regions other = {.ny = ny, .nz = o->ndepth};
    int ok = pio_alloc(&mine, o->ndepth * ny, x1 - x0) &&
             pio_alloc(&other, o->ndepth * ny, widest);
    const int32_t *m = raster_mask_values(mask);
    for (size_t k = 0, i = 0; ok && k < o->ndepth; k++)
        for (size_t y = 0; y < ny; y++, i++)
            for (size_t x = x0; x < x1; x++)
                mine.data[i * mine.w + (x - x0)] =
                    m[y * nx + x] == 0 ? 9.96921e36f
                                       : (float)(20.0 + 0.01 * (double)x -
                                                 0.1 * (double)k +
                                                 0.001 * (double)y);
    int anybad, bad = !ok;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    static const char *names[2] = {"nc4c", "nc4p"};
    double med[2][2] = {{0}};
    int status = anybad ? CLI_EINPUT : CLI_OK;
    for (int io = 0; io < 2 && status == CLI_OK; io++) {
        char plain[4096], rast[4096];
        snprintf(plain, sizeof plain, "%s/pio_%s_plain.nc", o->dir, names[io]);
        snprintf(rast, sizeof rast, "%s/pio_%s_raster.nc", o->dir, names[io]);
        double tp[MAX_REPS], tr[MAX_REPS];
        for (int r = 0; r < o->reps && status == CLI_OK; r++) {
            tp[r] = pio_once(o, io, plain, NULL, &mine, &other, ny, nx);
            tr[r] = o->netcdf_only
                        ? tp[r]
                        : pio_once(o, io, rast, mask, &mine, &other, ny, nx);
            if (tp[r] < 0 || tr[r] < 0)
                status = CLI_EINPUT;
        }
        if (status == CLI_OK) {
            med[io][0] = median(tp, o->reps);
            med[io][1] = median(tr, o->reps);
        }
    }
    /* --netcdf-only: this run is the second column, a --baseline run's
     * (plain netCDF, no shim) the first */
    const char *side = o->netcdf_only ? "shim" : "raster";
    if (status == CLI_OK && rank == 0 && o->netcdf_only) {
        double here[2] = {med[0][0], med[1][0]};
        for (int io = 0; io < 2; io++)
            med[io][0] = med[io][1] = here[io];
        if (o->baseline && pio_baseline(o->baseline, med) != 0)
            status = CLI_EINPUT;
    }
    if (status == CLI_OK && rank == 0 && o->netcdf_only && !o->baseline) {
        printf("ParallelIO pattern (imitation), netCDF calls only, %d ranks: "
               "nc4c %.4f s, nc4p %.4f s\n", nranks, med[0][1], med[1][1]);
        FILE *js = o->json ? fopen(o->json, "w") : NULL;
        if (js) {
            fprintf(js, "{\"ranks\": %d, \"records\": %zu, \"levels\": %zu, "
                    "\"nc4c_netcdf_seconds\": %.6f, \"nc4p_netcdf_seconds\": "
                    "%.6f}\n", nranks, o->ntime, o->ndepth, med[0][1],
                    med[1][1]);
            fclose(js);
        } else if (o->json) {
            fprintf(stderr, "rasterbench_mpi: cannot write %s\n", o->json);
        }
    } else if (status == CLI_OK && rank == 0) {
        size_t calls = o->ndepth * ny * (size_t)nranks;
        printf("ParallelIO pattern (imitation), %d ranks: %zu records, %zu "
               "strip-rows of %zu floats each\n", nranks, o->ntime, calls,
               widest);
        double ratio = 0;
        for (int io = 0; io < 2; io++) {
            double q = med[io][0] / med[io][1];
            ratio = io == 0 || q < ratio ? q : ratio;
            printf("  %s  plain %.4f s  %s %.4f s  plain / %s "
                   "%.2fx  (%.1f / %.1f us per call)\n", names[io],
                   med[io][0], side, med[io][1], side, q,
                   1e6 * med[io][0] / (double)(calls * o->ntime),
                   1e6 * med[io][1] / (double)(calls * o->ntime));
        }
        printf("  pio_write_ratio %.3f (target >= 0.7: %s)\n", ratio,
               ratio >= 0.7 ? "met" : "missed");
        if (o->json) {
            FILE *js = fopen(o->json, "w");
            if (js) {
                fprintf(js, "{\"ranks\": %d, \"records\": %zu, \"levels\": "
                        "%zu, \"calls_per_record\": %zu, \"values_per_call\": "
                        "%zu, \"measured\": \"%s\"", nranks, o->ntime,
                        o->ndepth, calls, widest,
                        o->netcdf_only ? "netCDF calls under the shim against "
                                         "a --baseline run without it"
                                       : "netCDF against libraster's calls");
                for (int io = 0; io < 2; io++)
                    fprintf(js, ", \"%s_plain_seconds\": %.6f, "
                            "\"%s_%s_seconds\": %.6f, \"%s_ratio\": %.3f",
                            names[io], med[io][0], names[io], side,
                            med[io][1], names[io], med[io][0] / med[io][1]);
                fprintf(js, ", \"summary\": {\"pio_write_ratio\": %.3f, "
                        "\"pio_write_ratio_target\": 0.7, "
                        "\"pio_write_ratio_met\": %s}}\n", ratio,
                        ratio >= 0.7 ? "true" : "false");
                if (fclose(js) != 0)
                    fprintf(stderr, "rasterbench_mpi: cannot write %s\n",
                            o->json);
            } else {
                fprintf(stderr, "rasterbench_mpi: cannot write %s\n", o->json);
            }
        }
    }
    pio_free(&mine);
    pio_free(&other);
    raster_mask_free(mask);
    return status;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options o;
    int status = parse(argc, argv, &o);
    if (status == 0)
        status = o.write ? bench_writes(&o)
                 : o.pio ? bench_pio(&o) : bench_reads(&o);
    else if (status < 0)
        status = CLI_OK; /* --help */
    MPI_Finalize();
    return status;
}
