/*
 * benchwork.h - the measured operations of rasterbench. Each runs inside a
 * worker: rasterbench executes itself with --worker, so that a method's
 * peak memory (wait4 rusage) and bytes read (/proc/self/io) are its own,
 * and so that shim methods run with LD_PRELOAD set from process start.
 */
#ifndef RASTER_BENCHWORK_H
#define RASTER_BENCHWORK_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_IDS 16
#define BENCH_MAX_REPS 101
/* OPEN, POINT: operations per timed repetition (a seconds[] entry is the
 * mean of one operation; one open takes well under a millisecond) */
#define BENCH_CALLS 20
#define BENCH_SMALL_CALLS 20000
#define BENCH_SMALL_VALUES 160

typedef enum bench_method {
    BENCH_NETCDF,     /* plain file: nc_get_vara of the box, mask applied */
    BENCH_RASTER,     /* raster file: raster_region_read, packed */
    BENCH_FLOOR,      /* pread of exactly the region's bytes */
    BENCH_READ,       /* open, nc_get_vara of a hyperslab, close (plain,
                       * or via shim); a warm thin band BENCH_CALLS times
                       * per rep */
    BENCH_WRITE,      /* nc_put_vara record by record (plain, or via shim) */
    BENCH_RASTER_MALLOC, /* raster, into a malloc'd buffer */
    BENCH_INFLATE_FLOOR, /* the region's compressed chunks (read untimed
                          * from the raster file), inflated and unshuffled
                          * from memory on raster's read threads */
    BENCH_STATS,      /* raster file: the regions' mean over the grid at
                       * every outer index (raster_region_statistics,
                       * weighted by TAREA when the file has it) */
    BENCH_OPEN,       /* nc_open + nc_close, BENCH_CALLS times per rep */
    BENCH_POINT,      /* open, nc_get_vara of every outer index at one grid
                       * point (hyper[0], hyper[1]), close; BENCH_CALLS
                       * times per rep */
    BENCH_READ_OPEN,  /* READ's hyperslab, the file opened once untimed;
                       * BENCH_CALLS times per rep */
    BENCH_SMALL_WRITE,/* BENCH_SMALL_CALLS nc_put_vara_float of
                       * BENCH_SMALL_VALUES values (a row piece each) into
                       * a new file of WRITE's shape, create to close */
    BENCH_NMETHODS
} bench_method;

/* What a worker does; the same fields travel on its command line. */
typedef struct bench_job {
    bench_method method;
    const char *file;       /* the file read, or written (WRITE);
                             * INFLATE_FLOOR: the raster file */
    const char *var;
    const char *mask_file, *mask_var; /* NETCDF: the mask, read untimed */
    int32_t ids[BENCH_MAX_IDS];
    size_t nids;
    size_t box[4];          /* NETCDF: y0 x0 y1 x1 of the regions' box */
    size_t cells;           /* NETCDF, FLOOR: cells per plane */
    size_t hyper[4];        /* READ: y0 x0 h w over all outer indices */
    size_t shape[4];        /* WRITE: time z y x; READ/NETCDF: outer too */
    size_t chunk[4];        /* WRITE: chunk shape of the variable */
    size_t elem;            /* bytes per value (float: 4) */
    int reps, cold;
} bench_job;

/* The phases of a raster region read (BENCH_RASTER, BENCH_RASTER_MALLOC):
 * raster_open, raster_var_find, raster_region_alloc (or the caller's
 * malloc), raster_region_read's own (raster_read_phases: check, tables,
 * plan, move), raster_region_free, raster_close. */
#define BENCH_PHASES 9
extern const char *const bench_phase_name[BENCH_PHASES];

typedef struct bench_result {
    double seconds[BENCH_MAX_REPS];
    double phase[BENCH_MAX_REPS][BENCH_PHASES]; /* per repetition */
    int nphase;             /* BENCH_PHASES when phase[] holds times */
    long long rchar;        /* bytes read by the last repetition;
                             * INFLATE_FLOOR: the compressed bytes it
                             * inflates (read before timing) */
    long peak_kb;           /* filled by the parent from wait4 */
    int ok;
} bench_result;

/* Runs `job` in this process: one untimed warm-up (warm runs), then
 * job->reps timed repetitions. 0 on success; -1 with a message on stderr. */
int bench_run(const bench_job *job, bench_result *res);

/* Evicts a file from the page cache (fdatasync, POSIX_FADV_DONTNEED) and
 * checks that none of its pages stayed (mincore). 0, or -1 with a message
 * on stderr (then a cold measurement is not quite cold). */
int bench_evict(const char *path);

/* Touches fresh memory, twice the size of file `path` up to 1 GiB, and
 * gives it back (benchwork.c): run in the parent right before each cold
 * repetition's worker, so that no method fills memory the VM's host has
 * just taken back. */
void bench_prime_memory(const char *path);

/* Evicts a file from the page cache and reads it back in order, so that
 * the kernel holds it as its read-ahead does (large folios); the warm
 * cases start from this state for every file they read: a file's earlier
 * history (written in small pieces, or read back by posix_fadvise(
 * WILLNEED), as raster's cold reads do) leaves it in 4 KiB pages, on
 * which the same warm pread costs the kernel about twice as much
 * (docs/PERFORMANCE.md). 0, or -1 when it could not be read. */
int bench_rewarm(const char *path);

double bench_median(const double *v, int n);

/* Reads variable `var` of files `plain` and `view` over box (y0 x0 y1 x1,
 * half-open) at every outer index, outer index by outer index, with
 * netCDF's own calls: what a reader without raster gets, when the process
 * runs without the shim (rasterbench runs it in a child, LD_PRELOAD
 * unset). 0: equal, value by value (bytes: NaN payloads and the sign of
 * zero count); 1: `view` cannot be opened or read; 2: its values (or its
 * type or outer shape) differ; msg says how (netCDF's message, or the
 * first difference). -1: the plain file failed (a message on stderr). */
int bench_view_check(const char *plain, const char *view, const char *var,
                     const size_t box[4], char *msg, size_t len);

#endif
