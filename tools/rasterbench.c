/*
 * rasterbench - raster against netCDF and against the physical floor, on
 * the same data in one run (definitions in docs/PERFORMANCE.md):
 *   region cases  netcdf (plain file: nc_get_vara of the regions' bounding
 *                 box, then the mask applied), raster (raster_region_read,
 *                 packed), floor (pread of exactly the regions' bytes from
 *                 one contiguous file);
 *   shim cases    a whole-variable read, a thin column band and a
 *                 record-by-record write, each by an ordinary netCDF call
 *                 sequence, once on the plain file and once through the
 *                 preload shim on the raster file; and the small calls:
 *                 open and close, the band read on an open file, a point's
 *                 series (open, read, close), 20,000 writes of 160 values;
 *   compressed    the same data deflated (level 1 + shuffle, as CESM
 *                 writes): file sizes, the five basins' region reads
 *                 (netcdf, raster, and the floor: inflating exactly the
 *                 regions' compressed chunks from memory), and the
 *                 whole-variable read and the thin column band, plain
 *                 against the shim.
 * Every measurement runs in a worker: rasterbench executes itself with
 * --worker, so a method's peak memory (wait4) and bytes read (rchar) are its
 * own. With no file arguments it generates (once, cached) a CESM-like
 * dataset with rastergen and converts it with rasterconvert.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchwork.h"
#include "cli.h"
#include "raster.h"

#define PROG "rasterbench"
#define MAX_CASES 64
#define MAX_RESULTS 512

static char exe_path[PATH_MAX], exe_dir[PATH_MAX];

typedef struct options {
    const char *plain, *raster, *var, *json, *dir, *mask, *size, *chunk;
    const char *preload;
    const char *baseline; /* --baseline-raster: "today's" raster file */
    const char *peers_venv, *peers_source; /* --peers: bench_peers.py's */
    char *cases[MAX_CASES];
    int ncases, reps, warm, cold, shim, write;
    int only_write; /* --only-write: the record-by-record write alone */
    int compressed; /* the compressed case (generated data only) */
    int only_compressed; /* --only-compressed: that case alone */
    int generated;  /* the data is rasterbench's own (prepare_dataset) */
    int peers;      /* --peers: xarray, ncregions, ADIOS2 (bench_peers.py) */
    size_t thin;
} options;

/* One region case: the regions, what they cover. */
typedef struct region_case {
    char label[128];
    int32_t ids[BENCH_MAX_IDS];
    size_t nids, cells, box[4];
    int multi;
} region_case;

/* One measured line of the report. */
typedef struct record {
    char kase[128];
    char method[32], cache[8], kind[16]; /* kind: single, multi, full, ... */
    double median;
    long long bytes;
    long peak;
    size_t region_bytes;
    long long file_bytes; /* peers' writers: the file's size (else 0) */
    double check;         /* peers: the sum of the values read (else NaN) */
    double phase[BENCH_PHASES]; /* raster reads: each phase's median */
    int nphase;           /* BENCH_PHASES when phase[] holds them, else 0 */
    double pair;          /* cold raster: the median over repetitions of
                             raster's time / the floor's next to it;
                             ncregions_read: the median over rounds of
                             its fastest repetition / the C worker's in
                             the process before (bench_peers.py) */
} record;

static record results[MAX_RESULTS];
static size_t nresults;

/* ---- running workers ------------------------------------------------------ */

static const char *method_name[BENCH_NMETHODS] = {
    "netcdf", "raster", "floor", "read", "write", "raster_malloc",
    "inflate_floor", "stats", "open", "point", "read_open", "small_write"};

static void join_sizes(char *buf, size_t len, const size_t *v, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? "," : "",
                                 v[i]);
}

/* In a child, before exec: no shim and none of the shim's settings
 * (rasterbench itself may run under an exported LD_PRELOAD, as
 * docs/PARALLEL.md's Slurm jobs do). */
static void clean_env(void)
{
    unsetenv("LD_PRELOAD");
    unsetenv("RASTER_MASK");
    unsetenv("RASTER_VARS");
    unsetenv("RASTER_CHUNK");
}

/* Runs job j in a worker (with LD_PRELOAD = preload when set, and the
 * RASTER_* settings of env[]); fills *res, peak memory included. */
static int run_worker(const bench_job *j, const char *preload,
                      char *const *env, bench_result *res)
{
    char m[8], ids[256] = "", box[128], cells[32], hyper[128], shape[128],
        chunk[128], elem[16], reps[16], cold[4];
    snprintf(m, sizeof m, "%d", (int)j->method);
    for (size_t i = 0, used = 0; i < j->nids; i++)
        used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%d",
                                 i ? "," : "", (int)j->ids[i]);
    if (j->nids == 0)
        snprintf(ids, sizeof ids, "-");
    join_sizes(box, sizeof box, j->box, 4);
    join_sizes(hyper, sizeof hyper, j->hyper, 4);
    join_sizes(shape, sizeof shape, j->shape, 4);
    join_sizes(chunk, sizeof chunk, j->chunk, 4);
    snprintf(cells, sizeof cells, "%zu", j->cells);
    snprintf(elem, sizeof elem, "%zu", j->elem);
    snprintf(reps, sizeof reps, "%d", j->reps);
    snprintf(cold, sizeof cold, "%d", j->cold);
    char *argv[] = {exe_path, "--worker", m, (char *)j->file, (char *)j->var,
                    (char *)(j->mask_file ? j->mask_file : "-"),
                    (char *)(j->mask_var ? j->mask_var : "-"), ids, box,
                    cells, hyper, shape, chunk, elem, reps, cold, NULL};
    int fds[2];
    memset(res, 0, sizeof *res);
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        clean_env();
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv(exe_path, argv);
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    char text[32768]; /* up to 100 repetitions of times and phases */
    size_t got = 0;
    ssize_t n;
    while (got < sizeof text - 1 &&
           (n = read(fds[0], text + got, sizeof text - 1 - got)) > 0)
        got += (size_t)n;
    text[got] = '\0';
    close(fds[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    res->peak_kb = ru.ru_maxrss;
    /* "ok RCHAR t0 t1 ..." */
    char *p = text, *end;
    if (strncmp(p, "ok ", 3) != 0)
        return -1;
    p += 3;
    res->rchar = strtoll(p, &end, 10);
    for (int i = 0; i < j->reps; i++) {
        p = end;
        res->seconds[i] = strtod(p, &end);
        if (end == p)
            return -1;
    }
    /* " phases P..." (BENCH_PHASES per repetition), from raster methods */
    if (strncmp(end, " phases", 7) == 0) {
        end += 7;
        for (int i = 0; i < j->reps; i++)
            for (int k = 0; k < BENCH_PHASES; k++) {
                p = end;
                res->phase[i][k] = strtod(p, &end);
                if (end == p)
                    return -1;
            }
        res->nphase = BENCH_PHASES;
    }
    res->ok = 1;
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs argv[0] (from PATH, or a path) without raster (clean_env), its
 * stdout into out[0 .. len) (NUL-terminated; the rest dropped) or, out
 * NULL, to /dev/null. Its exit status (127: it could not be run), or -1;
 * *seconds: fork to exit, wall clock; *peak_kb its peak RSS. */
static int run_clean(char *const *argv, char *out, size_t len,
                     double *seconds, long *peak_kb)
{
    int fds[2] = {-1, -1};
    if (out ? pipe(fds) != 0 : (fds[1] = open("/dev/null", O_WRONLY)) < 0)
        return -1;
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (fds[0] >= 0)
            close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        clean_env();
        execvp(argv[0], argv);
        fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    char sink[4096]; /* what does not fit: read, so the child never blocks */
    while (pid > 0 && out) {
        int room = got + 1 < len;
        ssize_t n = read(fds[0], room ? out + got : sink,
                         room ? len - 1 - got : sizeof sink);
        if (n <= 0)
            break;
        if (room)
            got += (size_t)n;
    }
    if (out) {
        out[got] = '\0';
        close(fds[0]);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return -1;
    *seconds = now_s() - t0;
    *peak_kb = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* --worker METHOD FILE VAR MASKFILE MASKVAR IDS BOX CELLS HYPER SHAPE CHUNK
 *          ELEM REPS COLD */
static int worker_main(int argc, char **argv)
{
    if (argc != 16)
        return CLI_EUSAGE;
    bench_job j = {.method = (bench_method)atoi(argv[2]), .file = argv[3],
                   .var = argv[4],
                   .mask_file = strcmp(argv[5], "-") ? argv[5] : NULL,
                   .mask_var = strcmp(argv[6], "-") ? argv[6] : NULL};
    size_t n;
    if (strcmp(argv[7], "-") != 0) {
        char *save = NULL;
        for (char *t = strtok_r(argv[7], ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
            if (j.nids == BENCH_MAX_IDS || cli_parse_int32(t, &j.ids[j.nids]))
                return CLI_EUSAGE;
            j.nids++;
        }
    }
    if (cli_parse_indices(argv[8], j.box, 4, &n) ||
        cli_parse_indices(argv[9], &j.cells, 1, &n) ||
        cli_parse_indices(argv[10], j.hyper, 4, &n) ||
        cli_parse_indices(argv[11], j.shape, 4, &n) ||
        cli_parse_indices(argv[12], j.chunk, 4, &n) ||
        cli_parse_indices(argv[13], &j.elem, 1, &n))
        return CLI_EUSAGE;
    j.reps = atoi(argv[14]);
    j.cold = atoi(argv[15]);
    if (j.method >= BENCH_NMETHODS || j.reps < 1 ||
        j.reps >= BENCH_MAX_REPS)
        return CLI_EUSAGE;
    bench_result r;
    if (bench_run(&j, &r) != 0)
        return CLI_EINPUT;
    printf("ok %lld", r.rchar);
    for (int i = 0; i < j.reps; i++)
        printf(" %.9f", r.seconds[i]);
    if (r.nphase == BENCH_PHASES) {
        printf(" phases");
        for (int i = 0; i < j.reps; i++)
            for (int k = 0; k < BENCH_PHASES; k++)
                printf(" %.9f", r.phase[i][k]);
    }
    printf("\n");
    return fflush(stdout) == 0 ? CLI_OK : CLI_EINPUT;
}

/* --view-check PLAIN RASTER VAR Y0,X0,Y1,X1: bench_view_check in this
 * process (the parent runs it through run_clean: no shim), its verdict on
 * stdout as one line, "equal", "unreadable MESSAGE" or "differ MESSAGE". */
static int view_check_main(int argc, char **argv)
{
    size_t box[4], n;
    char msg[512];
    if (argc != 6 || cli_parse_indices(argv[5], box, 4, &n) != 0 || n != 4)
        return CLI_EUSAGE;
    int rc = bench_view_check(argv[2], argv[3], argv[4], box, msg,
                              sizeof msg);
    if (rc < 0)
        return CLI_EINPUT;
    printf("%s %s\n", rc == 0 ? "equal" : rc == 1 ? "unreadable" : "differ",
           msg);
    return fflush(stdout) == 0 ? CLI_OK : CLI_EINPUT;
}

/* ---- the dataset ---------------------------------------------------------- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Runs a sibling tool (rastergen, rasterconvert), or nccopy, with its
 * arguments. */
static int run_tool(char *const *argv)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv); /* nccopy from PATH; the others by path */
        fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                   WEXITSTATUS(status) == 0
               ? 0
               : -1;
}

static int make_dir(const char *dir)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* The bundled mask, from a build tree or an installed prefix. */
static const char *default_mask(void)
{
    static char path[PATH_MAX + 64];
    static const char *const where[] = {
        "%s/../../datasets/masks/pop_basins_2400x3600.nc",
        "%s/../share/raster/masks/pop_basins_2400x3600.nc"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, where[i], exe_dir);
        if (file_exists(path)) {
            strcat(path, ":REGION_MASK");
            return path;
        }
    }
    return NULL;
}

static const char *default_preload(void)
{
    static char path[PATH_MAX + 64];
    static const char *const where[] = {
        "%s/../preload/libraster_preload.so",
        "%s/../lib/libraster_preload.so",
        "%s/../lib/x86_64-linux-gnu/libraster_preload.so"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, where[i], exe_dir);
        if (file_exists(path))
            return path;
    }
    return NULL;
}

/* Generates (once) the plain and raster files of the dataset in o->dir. */
/* Converts `plain` (its REGION_MASK the mask, `var` the variable) into
 * `raster` with rasterconvert, once: a file already there is the cache. */
static int convert_once(const char *plain, const char *raster,
                        const char *var)
{
    if (file_exists(raster))
        return 0;
    char tmp[2 * PATH_MAX], tool[PATH_MAX + 32], maskspec[2 * PATH_MAX];
    printf("converting to %s\n", raster);
    snprintf(tool, sizeof tool, "%s/rasterconvert", exe_dir);
    snprintf(maskspec, sizeof maskspec, "%s:REGION_MASK", plain);
    snprintf(tmp, sizeof tmp, "%s.tmp", raster);
    /* the statistics weighted by the cells' areas when the data has them
     * (rastergen's TAREA): the regional means users take */
    int nc, tv, area = 0;
    if (nc_open(plain, NC_NOWRITE, &nc) == NC_NOERR) {
        area = nc_inq_varid(nc, "TAREA", &tv) == NC_NOERR;
        nc_close(nc);
    }
    char *argv[10] = {tool, "--mask", maskspec, "--vars", (char *)var};
    int n = 5;
    if (area) {
        argv[n++] = "--weights";
        argv[n++] = "TAREA";
    }
    argv[n++] = (char *)plain;
    argv[n++] = tmp;
    argv[n] = NULL;
    if (run_tool(argv) != 0 || rename(tmp, raster) != 0) {
        fprintf(stderr, PROG ": converting %s failed\n", plain);
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* o->dir, defaulted: $RASTER_BENCH_DIR, $XDG_CACHE_HOME/raster/bench or
 * ~/.cache/raster/bench. */
static void default_dir(options *o)
{
    static char cache[PATH_MAX];
    if (o->dir)
        return;
    const char *env = getenv("RASTER_BENCH_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(cache, sizeof cache, "%s", env);
    else if (xdg && *xdg)
        snprintf(cache, sizeof cache, "%s/raster/bench", xdg);
    else
        snprintf(cache, sizeof cache, "%s/.cache/raster/bench",
                 home ? home : "/tmp");
    o->dir = cache;
}

static int prepare_dataset(options *o, char *plain, char *raster, size_t len)
{
    default_dir(o);
    if (!o->mask && !(o->mask = default_mask())) {
        fprintf(stderr, PROG ": the bundled mask was not found; give "
                "--mask FILE:VAR\n");
        return -1;
    }
    if (make_dir(o->dir) != 0) {
        fprintf(stderr, PROG ": cannot create %s: %s\n", o->dir,
                strerror(errno));
        return -1;
    }
    /* the file name says what made it */
    char tag[256], chunk[64];
    const char *base = strrchr(o->mask, '/');
    base = base ? base + 1 : o->mask;
    snprintf(chunk, sizeof chunk, "%s", o->chunk ? o->chunk : "default");
    for (char *p = chunk; *p; p++)
        if (*p == ',')
            *p = 'x';
    snprintf(tag, sizeof tag, "cesm_%s_%.*s_%s", o->size,
             (int)strcspn(base, ".:"), base, chunk);
    snprintf(plain, len, "%s/%s.nc", o->dir, tag);
    snprintf(raster, len, "%s/%s.raster.nc", o->dir, tag);
    char tool[PATH_MAX + 32], tmp[2 * PATH_MAX];
    if (!file_exists(plain)) {
        printf("generating %s (once; cached in %s)\n", plain, o->dir);
        snprintf(tool, sizeof tool, "%s/rastergen", exe_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", plain);
        char *argv[16] = {tool, "--kind", "cesm", "--mask", (char *)o->mask,
                          "--size", (char *)o->size};
        int k = 7;
        if (strcmp(o->size, "medium") == 0) {
            /* ~1 GB as 3 records of 10 levels: records to write one by
             * one, 30 planes to read */
            argv[k++] = "--ntime";
            argv[k++] = "3";
            argv[k++] = "--ndepth";
            argv[k++] = "10";
        }
        if (o->chunk) {
            argv[k++] = "--chunk";
            argv[k++] = (char *)o->chunk;
        }
        argv[k++] = tmp;
        argv[k] = NULL;
        if (run_tool(argv) != 0 || rename(tmp, plain) != 0) {
            fprintf(stderr, PROG ": generating %s failed\n", plain);
            unlink(tmp);
            return -1;
        }
    }
    if (convert_once(plain, raster, "TEMP") != 0)
        return -1;
    o->plain = plain;
    o->raster = raster;
    o->var = "TEMP";
    o->generated = 1;
    return 0;
}

/* The compressed copies of the dataset (once, cached beside it): the plain
 * file deflated at level 1 with shuffle by nccopy (its chunks kept), as
 * CESM writes its history files, and that converted by rasterconvert,
 * which keeps the input's filters on every store. */
static int prepare_compressed(const options *o, char *plain, char *raster,
                              size_t len)
{
    size_t base = strlen(o->plain);
    if (base > 3 && strcmp(o->plain + base - 3, ".nc") == 0)
        base -= 3;
    snprintf(plain, len, "%.*s.d1s.nc", (int)base, o->plain);
    snprintf(raster, len, "%.*s.d1s.raster.nc", (int)base, o->plain);
    char tmp[2 * PATH_MAX];
    if (!file_exists(plain)) {
        printf("compressing to %s (nccopy -d 1 -s; once)\n", plain);
        snprintf(tmp, sizeof tmp, "%s.tmp", plain);
        char *argv[] = {"nccopy", "-d", "1", "-s", (char *)o->plain, tmp,
                        NULL};
        if (run_tool(argv) != 0 || rename(tmp, plain) != 0) {
            fprintf(stderr, PROG ": nccopy -d 1 -s %s failed\n", o->plain);
            unlink(tmp);
            return -1;
        }
    }
    return convert_once(plain, raster, o->var);
}

/* ---- cases ---------------------------------------------------------------- */

static const char *const basins[5] = {"Southern_Ocean", "Pacific_Ocean",
                                      "Indian_Ocean", "Atlantic_Ocean",
                                      "Arctic_Ocean"};
/* the paper's three-region sets, as positions in basins[] */
static const int paper_sets[5][3] = {
    {4, 1, 2}, {1, 2, 3}, {2, 3, 0}, {3, 1, 0}, {0, 1, 4}};

static void short_name(const raster_var *v, int32_t id, char *buf, size_t len)
{
    const char *name = raster_mask_region_name(raster_var_mask(v), id);
    if (!name) {
        snprintf(buf, len, "%d", (int)id);
        return;
    }
    size_t n = strcspn(name, "_ ");
    snprintf(buf, len, "%.*s", (int)n, name);
}

static int finish_case(raster_var *v, region_case *c)
{
    c->label[0] = '\0';
    for (size_t i = 0; i < c->nids; i++) {
        char s[64];
        short_name(v, c->ids[i], s, sizeof s);
        size_t used = strlen(c->label);
        snprintf(c->label + used, sizeof c->label - used, "%s%s",
                 i ? "+" : "", s);
    }
    c->multi = c->nids > 1;
    return raster_region_size(v, c->ids, c->nids, RASTER_LAYOUT_PACKED,
                              &c->cells) == RASTER_OK &&
                   raster_region_bbox(v, c->ids, c->nids, c->box) ==
                       RASTER_OK
               ? 0
               : -1;
}

/* The five basins and the paper's sets when the mask names them; else the
 * five largest regions (id 0, land, aside) and consecutive triples. */
static int default_cases(raster_var *v, region_case *cases, int *n)
{
    int32_t single[5];
    int found = 0;
    for (int i = 0; i < 5; i++)
        found += raster_region_lookup(v, basins[i], &single[found]) ==
                 RASTER_OK;
    if (found < 5) {
        const raster_mesh *mesh = raster_var_mesh(v);
        if (!mesh)
            return -1;
        found = 0;
        for (int k = 0; k < 5; k++) {
            size_t best = 0;
            int32_t id = 0;
            for (size_t i = 0; i < raster_mesh_nregions(mesh); i++) {
                raster_region_stats s;
                raster_mesh_region(mesh, i, &s);
                int taken = s.id == 0;
                for (int m = 0; m < found; m++)
                    taken |= single[m] == s.id;
                if (!taken && s.cells > best) {
                    best = s.cells;
                    id = s.id;
                }
            }
            if (best == 0)
                break;
            single[found++] = id;
        }
    }
    *n = 0;
    for (int i = 0; i < found; i++) {
        cases[*n].ids[0] = single[i];
        cases[*n].nids = 1;
        if (finish_case(v, &cases[(*n)++]) != 0)
            return -1;
    }
    for (int s = 0; found == 5 && s < 5; s++) {
        for (int k = 0; k < 3; k++)
            cases[*n].ids[k] = single[paper_sets[s][k]];
        cases[*n].nids = 3;
        if (finish_case(v, &cases[(*n)++]) != 0)
            return -1;
    }
    return 0;
}

static int parse_case(raster_var *v, const char *text, region_case *c)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    c->nids = 0;
    for (char *tok = strtok_r(buf, "+", &save); tok;
         tok = strtok_r(NULL, "+", &save)) {
        if (c->nids == BENCH_MAX_IDS ||
            raster_region_lookup(v, tok, &c->ids[c->nids]) != RASTER_OK) {
            fprintf(stderr, PROG ": no region '%s'\n", tok);
            return -1;
        }
        c->nids++;
    }
    return c->nids ? finish_case(v, c) : -1;
}

/* The case's packed data, written once as the floor's contiguous file. */
static int write_floor(raster_var *v, const region_case *c, size_t records,
                       size_t elem, const size_t *shape, const char *path)
{
    size_t bytes = records * c->cells * elem, ostart[32] = {0};
    void *buf = malloc(bytes ? bytes : 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc = -1;
    if (buf && fd >= 0 &&
        raster_region_read(v, c->ids, c->nids, ostart, shape,
                           RASTER_LAYOUT_PACKED, buf) == RASTER_OK &&
        write(fd, buf, bytes) == (ssize_t)bytes && fsync(fd) == 0)
        rc = 0;
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

static void add_record(const char *kase, const char *method,
                       const char *cache, const char *kind,
                       const bench_result *r, int reps, size_t region_bytes)
{
    if (nresults == MAX_RESULTS)
        return;
    record *x = &results[nresults++];
    snprintf(x->kase, sizeof x->kase, "%s", kase);
    snprintf(x->method, sizeof x->method, "%s", method);
    snprintf(x->cache, sizeof x->cache, "%s", cache);
    snprintf(x->kind, sizeof x->kind, "%s", kind);
    x->median = bench_median(r->seconds, reps);
    x->bytes = r->rchar;
    x->peak = r->peak_kb * 1024L;
    x->region_bytes = region_bytes;
    x->file_bytes = 0;
    x->check = NAN;
    x->pair = NAN;
    x->nphase = r->nphase == BENCH_PHASES ? BENCH_PHASES : 0;
    for (int k = 0; k < x->nphase; k++) {
        double v[BENCH_MAX_REPS];
        for (int i = 0; i < reps; i++)
            v[i] = r->phase[i][k];
        x->phase[k] = bench_median(v, reps);
    }
}

/* The raster record just added (add_record's order: netcdf, raster, ...) */
static const record *add_record_last(void)
{
    for (size_t i = nresults; i-- > 0;)
        if (strcmp(results[i].method, "raster") == 0 ||
            strcmp(results[i].method, "raster_deflated") == 0)
            return &results[i];
    return NULL;
}

/* A raster read's phases (JSON phases_s), in ms, under its table row. */
static void print_phases(const record *x)
{
    if (!x || x->nphase != BENCH_PHASES)
        return;
    printf("  raster phases, ms:");
    for (int k = 0; k < BENCH_PHASES; k++)
        printf(" %s %.2f", bench_phase_name[k], x->phase[k] * 1e3);
    printf("\n");
}

static const record *find(const char *kase, const char *method,
                          const char *cache)
{
    for (size_t i = 0; i < nresults; i++)
        if (strcmp(results[i].kase, kase) == 0 &&
            strcmp(results[i].method, method) == 0 &&
            strcmp(results[i].cache, cache) == 0)
            return &results[i];
    return NULL;
}

/* ---- summary -------------------------------------------------------------- */

/* The summary: one row per field, its target and which side meets it,
 * printed and written to JSON from this one list. */
#define SUMMARY_FIELDS(X)                                                    \
    X(single, "single_speedup_geomean", 8, 1)                                \
    X(multi, "multi_speedup_geomean", 8, 1)                                  \
    X(floor_max, "floor_ratio_max", 1.3, 0) /* issue #25 item 4 */           \
    X(cold_single, "cold_speedup_geomean", 2.5, 1)                           \
    X(cold_floor_max, "cold_floor_ratio_max", 1.5, 0)                        \
    X(mem_max, "packed_mem_ratio_max", 1.1, 0)                               \
    X(full, "full_read_ratio", 1.0, 1)                                       \
    X(thin, "thin_hyperslab_ratio", 1.0, 1)                                  \
    X(open, "open_ratio", 0.8, 1)                                            \
    X(thin_open, "thin_hyperslab_open_ratio", 1.5, 1)                        \
    X(point, "point_series_ratio", 0.8, 1)                                   \
    X(write, "write_ratio", 1.0, 1)                                          \
    X(small_write, "small_write_ratio", 0.7, 1)                              \
    X(zsize, "compressed_size_ratio", 1.1, 0)                                \
    X(zspeed, "compressed_speedup_geomean", 6, 1)                            \
    X(zfloor_max, "compressed_floor_ratio_max", 1.5, 0)                      \
    X(zfull, "compressed_full_read_ratio", 1.0, 1)                           \
    X(zthin, "compressed_thin_ratio", 1.0, 1)                                \
    X(py_mean, "python_mean_speedup_geomean", 30, 1)                         \
    X(py_mem_max, "python_mem_ratio_max", 1.2, 0)                            \
    X(py_over_max, "python_overhead_ratio_max", 1.15, 0)                     \
    X(adios2, "adios2_speedup_geomean", 10, 1)                               \
    X(xarray, "xarray_speedup_geomean", 20, 1)                               \
    X(stats_mean, "stats_mean_speedup_geomean", 100, 1)                      \
    X(data_mean, "data_mean_speedup_geomean", 8, 1)                          \
    X(view_open, "view_open_ratio", 0.25, 1) /* issue 41 */                  \
    X(view_read, "view_read_ratio", 0.5, 1)                                  \
    X(view_size, "view_size_ratio", 1.01, 0)

typedef struct summary {
#define SUMMARY_MEMBER(m, name, target, at_least) double m;
    SUMMARY_FIELDS(SUMMARY_MEMBER)
#undef SUMMARY_MEMBER
} summary;

typedef struct summary_row {
    const char *name;
    double v, target;
    int at_least;
} summary_row;

/* s as rows, in SUMMARY_FIELDS order; returns how many. */
static size_t summary_rows(const summary *s, summary_row *rows)
{
    size_t n = 0;
#define SUMMARY_ROW(m, name, target, at_least)                               \
    rows[n++] = (summary_row){name, s->m, target, at_least};
    SUMMARY_FIELDS(SUMMARY_ROW)
#undef SUMMARY_ROW
    return n;
}

#define SUMMARY_MAX 32

/* The compressed case's files and their sizes (0: not measured). */
static char zplain[PATH_MAX + 64], zraster[PATH_MAX + 64];
static long long zplain_bytes, zraster_bytes;

/* Without raster (issue 41): the raster file's and --baseline-raster's
 * sizes (0: not measured), the first message a read of the raster file
 * without raster gave, and how its basins' values compared. */
static long long view_raster_bytes, view_baseline_bytes;
static char view_error[512];
static int view_equal_n, view_differ_n, view_unread_n;

#define ZCASE_FULL "full variable, deflated"
#define VIEW_NCDUMP "ncdump -h"
/* the small calls through the shim (issue 25) */
#define CASE_OPEN "open and close"
#define CASE_THIN_OPEN "thin band, file open"
#define CASE_POINT "point series"
#define CASE_SMALL_WRITE "small writes"
#define ZCASE_THIN "thin band, deflated"

static double ratio_of(const char *kase, const char *a, const char *b,
                       const char *cache)
{
    const record *x = find(kase, a, cache), *y = find(kase, b, cache);
    return x && y && y->median > 0 ? x->median / y->median : NAN;
}

/* The geometric mean over the single-region cases of the ratio of method
 * a's warm median to method b's (NaN when no case has both). */
static double geomean_of(const char *a, const char *b)
{
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < nresults; i++) {
        const record *x = &results[i];
        if (strcmp(x->method, a) != 0 || strcmp(x->cache, "warm") != 0)
            continue;
        double r = ratio_of(x->kase, a, b, "warm");
        if (!isnan(r) && r > 0) {
            sum += log(r);
            n++;
        }
    }
    return n ? exp(sum / n) : NAN;
}

/* The peers' fields (bench_peers.py's records; NaN when not run). The
 * Python layer is held to the C API's region read of the same case
 * (ncregions_read: the same raw packed values, as numpy), and region()
 * (decoded, with its coordinates) to region size plus 100 MiB of
 * interpreter and libraries. */
/* The geometric mean over the cases of kind `kind` of view_plain's warm
 * median / view_raster's; a case the raster file did not give without
 * raster (no view_raster record: unreadable, or other values) counts 0,
 * and so makes it 0. NaN when no case was measured. */
static double view_ratio(const char *kind)
{
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < nresults; i++) {
        const record *x = &results[i];
        if (strcmp(x->method, "view_plain") != 0 ||
            strcmp(x->kind, kind) != 0)
            continue;
        double r = ratio_of(x->kase, "view_plain", "view_raster", "warm");
        if (!(r > 0))
            return 0;
        sum += log(r);
        n++;
    }
    return n ? exp(sum / n) : NAN;
}

static void summarize_peers(summary *s)
{
    s->py_mean = geomean_of("xarray_netcdf4_mean", "ncregions_mean");
    s->adios2 = geomean_of("adios2_records", "raster");
    s->xarray = geomean_of("xarray_netcdf4", "raster");
    /* the area-weighted mean series (issue #26): xarray's where().weighted()
     * .mean() against raster_region_statistics, kept and from the values */
    s->stats_mean = geomean_of("xarray_netcdf4_wmean", "stats_stored");
    s->data_mean = geomean_of("xarray_netcdf4_wmean", "stats_values");
    for (size_t i = 0; i < nresults; i++) {
        const record *x = &results[i];
        if (strcmp(x->method, "ncregions") != 0)
            continue;
        /* against the C worker timed by turns with it (the median of
         * the rounds' ratios, bench_peers.py), else against the region
         * case's raster record */
        const record *py = find(x->kase, "ncregions_read", "warm");
        double over = py && !isnan(py->pair)
                          ? py->pair
                          : ratio_of(x->kase, "ncregions_read", "raster",
                                     "warm");
        if (!isnan(over) && (isnan(s->py_over_max) || over > s->py_over_max))
            s->py_over_max = over;
        double mem = (double)x->peak /
                     ((double)x->region_bytes + 100.0 * 1048576.0);
        if (isnan(s->py_mem_max) || mem > s->py_mem_max)
            s->py_mem_max = mem;
    }
}

static summary summarize(void)
{
    summary s;
#define SUMMARY_NAN(m, name, target, at_least) s.m = NAN;
    SUMMARY_FIELDS(SUMMARY_NAN)
#undef SUMMARY_NAN
    double zsum = 0;
    int zn = 0;
    double lsum[2][2] = {{0, 0}, {0, 0}}; /* [cold][multi] */
    int ln[2][2] = {{0, 0}, {0, 0}};
    for (size_t i = 0; i < nresults; i++) {
        const record *x = &results[i];
        int multi = strcmp(x->kind, "multi") == 0;
        if (strcmp(x->method, "raster_deflated") == 0 &&
            strcmp(x->cache, "warm") == 0) {
            double sp = ratio_of(x->kase, "netcdf_deflated",
                                 "raster_deflated", "warm");
            double fl = ratio_of(x->kase, "raster_deflated", "inflate_floor",
                                 "warm");
            if (!isnan(sp)) {
                zsum += log(sp);
                zn++;
            }
            if (!isnan(fl) && (isnan(s.zfloor_max) || fl > s.zfloor_max))
                s.zfloor_max = fl;
            continue;
        }
        if (strcmp(x->method, "raster") != 0 ||
            (!multi && strcmp(x->kind, "single") != 0))
            continue;
        int cold = strcmp(x->cache, "cold") == 0;
        double sp = ratio_of(x->kase, "netcdf", "raster", x->cache);
        double fl = cold && !isnan(x->pair)
                        ? x->pair
                        : ratio_of(x->kase, "raster", "floor", x->cache);
        if (!isnan(sp)) {
            lsum[cold][multi] += log(sp);
            ln[cold][multi]++;
        }
        if (!multi && !isnan(fl)) {
            double *m = cold ? &s.cold_floor_max : &s.floor_max;
            if (isnan(*m) || fl > *m)
                *m = fl;
        }
        double mem = (double)x->peak /
                     ((double)x->region_bytes + 32.0 * 1048576.0);
        if (isnan(s.mem_max) || mem > s.mem_max)
            s.mem_max = mem;
    }
    if (ln[0][0]) s.single = exp(lsum[0][0] / ln[0][0]);
    if (ln[0][1]) s.multi = exp(lsum[0][1] / ln[0][1]);
    if (ln[1][0]) s.cold_single = exp(lsum[1][0] / ln[1][0]);
    s.full = ratio_of("full variable", "plain", "shim", "warm");
    s.thin = ratio_of("thin column band", "plain", "shim", "warm");
    s.write = ratio_of("record-by-record write", "plain", "shim", "warm");
    s.open = ratio_of(CASE_OPEN, "plain", "shim", "warm");
    s.thin_open = ratio_of(CASE_THIN_OPEN, "plain", "shim", "warm");
    s.point = ratio_of(CASE_POINT, "plain", "shim", "warm");
    s.small_write = ratio_of(CASE_SMALL_WRITE, "plain", "shim", "warm");
    if (zn)
        s.zspeed = exp(zsum / zn);
    if (zplain_bytes > 0 && zraster_bytes > 0)
        s.zsize = (double)zraster_bytes / (double)zplain_bytes;
    s.zfull = ratio_of(ZCASE_FULL, "plain", "shim", "warm");
    s.zthin = ratio_of(ZCASE_THIN, "plain", "shim", "warm");
    summarize_peers(&s);
    s.view_open = view_ratio("view_open");
    s.view_read = view_ratio("view_read");
    if (view_raster_bytes > 0 && view_baseline_bytes > 0)
        s.view_size = (double)view_raster_bytes / (double)view_baseline_bytes;
    return s;
}

static void json_number(FILE *f, double v)
{
    if (isnan(v))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void print_summary(const summary *s)
{
    summary_row rows[SUMMARY_MAX];
    size_t n = summary_rows(s, rows);
    printf("\nsummary                            value   target\n");
    for (size_t i = 0; i < n; i++) {
        const char *mark = isnan(rows[i].v) ? "not measured"
                           : (rows[i].at_least ? rows[i].v >= rows[i].target
                                               : rows[i].v <= rows[i].target)
                               ? "met"
                               : "MISSED";
        printf("%-30s %9.3f   %s %-4g %s\n", rows[i].name, rows[i].v,
               rows[i].at_least ? ">=" : "<=", rows[i].target, mark);
    }
}

/* The dataset's "view" object: what issue 41's fields were taken from. */
static void write_json_view(FILE *f, const options *o)
{
    fprintf(f, ",\"view\":{\"raster_bytes\":%lld", view_raster_bytes);
    if (o->baseline) {
        fputs(",\"baseline_raster\":", f);
        cli_json_string(f, o->baseline);
        fprintf(f, ",\"baseline_bytes\":%lld", view_baseline_bytes);
    }
    fprintf(f, ",\"equal\":%d,\"differ\":%d,\"unreadable\":%d",
            view_equal_n, view_differ_n, view_unread_n);
    if (view_error[0]) {
        fputs(",\"error\":", f);
        cli_json_string(f, view_error);
    }
    fputc('}', f);
}

static int write_json(const options *o, const summary *s, const size_t *shape,
                      int nd, size_t elem)
{
    FILE *f = fopen(o->json, "w");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", o->json, strerror(errno));
        return -1;
    }
    fputs("{\"dataset\":{\"plain\":", f);
    cli_json_string(f, o->plain);
    fputs(",\"raster\":", f);
    cli_json_string(f, o->raster);
    fputs(",\"var\":", f);
    cli_json_string(f, o->var);
    fputs(",\"shape\":[", f);
    size_t bytes = elem;
    for (int i = 0; i < nd; i++) {
        fprintf(f, "%s%zu", i ? "," : "", shape[i]);
        bytes *= shape[i];
    }
    fprintf(f, "],\"bytes\":%zu,\"reps\":%d,\"cpus\":%ld", bytes, o->reps,
            sysconf(_SC_NPROCESSORS_ONLN));
    if (zplain_bytes > 0) {
        fputs(",\"compressed\":{\"plain\":", f);
        cli_json_string(f, zplain);
        fputs(",\"raster\":", f);
        cli_json_string(f, zraster);
        fprintf(f, ",\"filters\":\"deflate 1, shuffle\",\"plain_bytes\":%lld,"
                "\"raster_bytes\":%lld}", zplain_bytes, zraster_bytes);
    }
    write_json_view(f, o);
    fputs("}", f);
    fputs(",\"cases\":[", f);
    for (size_t i = 0; i < nresults; i++) {
        const record *x = &results[i];
        fputs(i ? ",{\"case\":" : "{\"case\":", f);
        cli_json_string(f, x->kase);
        fprintf(f, ",\"kind\":\"%s\",\"method\":\"%s\",\"cache\":\"%s\","
                "\"median_s\":%.9f,\"bytes_read\":%lld,\"peak_rss\":%ld,"
                "\"region_bytes\":%zu", x->kind, x->method, x->cache,
                x->median, x->bytes, x->peak, x->region_bytes);
        if (x->file_bytes > 0)
            fprintf(f, ",\"file_bytes\":%lld", x->file_bytes);
        if (!isnan(x->pair))
            fprintf(f, ",\"%s\":%.4f",
                    strcmp(x->cache, "cold") == 0 ? "floor_pair_ratio"
                                                  : "paired_ratio",
                    x->pair);
        if (!isnan(x->check)) {
            fputs(",\"check\":", f);
            fprintf(f, "%.17g", x->check);
        }
        for (int k = 0; k < x->nphase; k++)
            fprintf(f, "%s\"%s\":%.6f%s", k ? "," : ",\"phases_s\":{",
                    bench_phase_name[k], x->phase[k],
                    k == x->nphase - 1 ? "}" : "");
        fputc('}', f);
    }
    fputs("],\"summary\":{", f);
    summary_row rows[SUMMARY_MAX];
    size_t n = summary_rows(s, rows);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\"%s\":", i ? "," : "", rows[i].name);
        json_number(f, rows[i].v);
    }
    fputs("}}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Writes the mask raster file variable `v` stores as int variable "mask"
 * of a new netCDF file `path` (for the netcdf method, which applies a mask
 * it reads with netCDF). */
static int write_stored_mask(raster_var *v, const char *path)
{
    const raster_mask *m = raster_var_mask(v);
    if (!m) {
        fprintf(stderr, PROG ": %s: %s\n", raster_var_name(v),
                raster_errmsg());
        return -1;
    }
    size_t ny, nx;
    raster_mask_shape(m, &ny, &nx);
    int ncid, dims[2], var, st;
    if ((st = nc_create(path, NC_NETCDF4 | NC_CLOBBER, &ncid)) != NC_NOERR) {
        fprintf(stderr, PROG ": %s: %s\n", path, nc_strerror(st));
        return -1;
    }
    if ((st = nc_def_dim(ncid, "y", ny, &dims[0])) == NC_NOERR &&
        (st = nc_def_dim(ncid, "x", nx, &dims[1])) == NC_NOERR &&
        (st = nc_def_var(ncid, "mask", NC_INT, 2, dims, &var)) == NC_NOERR)
        st = nc_put_var_int(ncid, var, raster_mask_values(m));
    int cst = nc_close(ncid);
    if (st == NC_NOERR)
        st = cst;
    if (st != NC_NOERR) {
        fprintf(stderr, PROG ": writing %s: %s\n", path, nc_strerror(st));
        unlink(path);
        return -1;
    }
    return 0;
}

/* ---- driver --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs(
"usage: rasterbench [--dir DIR] [--mask FILE:VAR] [--size SIZE] [--chunk C]\n"
"                   [--case R[+R...]]... [--reps N] [--warm|--cold]\n"
"                   [--no-shim] [--no-write] [--only-write] [--thin W]\n"
"                   [--no-compressed|--only-compressed] [--json FILE]\n"
"                   [--peers [--peers-venv DIR] [--peers-source DIR]]\n"
"                   [--baseline-raster FILE]\n"
"       rasterbench --plain PLAIN.nc --raster RASTER.nc --var V [options]\n"
"       mpirun -np N rasterbench --mpi ARGS   (rasterbench_mpi, docs/PARALLEL.md)\n"
"\n"
"Measures, on the same data in one run, each in its own process (median\n"
"time, bytes read, peak memory):\n"
"  region cases  netcdf: nc_get_vara of the regions' bounding box over all\n"
"                records, then the mask applied (netCDF's default chunk\n"
"                cache); raster: raster_region_read, packed; floor: pread\n"
"                of exactly the regions' bytes from one contiguous file\n"
"  full variable, thin column band (W columns, all rows), record-by-record\n"
"                write: the same netCDF calls on the plain file and through\n"
"                the preload shim on the raster file\n"
"  small calls   (warm) open and close; the thin band read on an open file;\n"
"                a point's series (open, every record and level at one\n"
"                ocean cell, close); 20,000 nc_put_vara_float of 160\n"
"                values each (pieces of rows), plain against the shim\n"
"  compressed    the generated data deflated (nccopy -d 1 -s, as CESM\n"
"                writes) and converted (filters kept): file sizes; the\n"
"                single-region cases by netcdf and raster, against the\n"
"                inflate floor (the regions' compressed chunks, read\n"
"                beforehand, inflated on raster's read threads); the whole\n"
"                variable and the thin column band, plain against the shim\n"
"  without raster (warm; no shim, as every other reader): ncdump -h of\n"
"                each file, and nc_get_vara of each single region's\n"
"                bounding box, every record, its values checked against\n"
"                the plain file's (issue 41's view)\n"
"\n"
"Without --plain/--raster it generates (once, cached in DIR) a CESM-like\n"
"file with rastergen on the mask (default: the bundled 2400 x 3600 POP\n"
"basins, size medium: 3 records x 10 levels, 1.04 GB, chunks 1 x 10 x 50\n"
"x 50) and converts it.\n"
"\n"
"  --dir DIR      cache (default $RASTER_BENCH_DIR, else\n"
"                 $XDG_CACHE_HOME/raster/bench or ~/.cache/raster/bench)\n"
"  --mask F:V     region mask of the generated data; with --plain, the\n"
"                 mask the netcdf method applies when PLAIN.nc has no\n"
"                 REGION_MASK (default: the one RASTER.nc stores)\n"
"  --size SIZE    tiny, small, medium (default) or paper (rastergen)\n"
"  --chunk C      rastergen's --chunk (e.g. 30,50,50)\n"
"  --case R+R     a region or a set of regions (ids or names); repeatable.\n"
"                 Default: the five basins and the paper's three-region\n"
"                 sets, or the five largest regions\n"
"  --reps N       timed repetitions (default 5; warm runs read once first)\n"
"  --warm/--cold  only page-cache-hot, or only evicted (POSIX_FADV_DONTNEED\n"
"                 before each repetition), runs; default both. The\n"
"                 region cases alternate the methods, one repetition each\n"
"  --no-shim      skip the shim cases; --no-write skips the write only\n"
"  --only-write   only the writes (record by record, small; plain vs shim)\n"
"  --compressed   the compressed case (the default; generated data only);\n"
"  --no-compressed  skips it; --only-compressed runs it alone\n"
"  --preload SO   the shim (default: found beside the tools)\n"
"  --thin W       width of the thin column band (default 1)\n"
"  --peers        also the peers, warm, on the single-region cases\n"
"                 (bench_peers.py): xarray + netCDF4 and + h5netcdf\n"
"                 (where(mask == r, drop=True).load(), where().mean()),\n"
"                 ncregions (region(), reduce(how=\"mean\")), ADIOS2 BP5\n"
"                 (one block per record: bounding box + mask; one block\n"
"                 per tile: the region's blocks) and the ADIOS2 writers'\n"
"                 cost. Needs a venv made once from PyPI (skipped when it\n"
"                 cannot be made)\n"
"  --peers-venv DIR   that venv (default $RASTER_PEERS_VENV, else\n"
"                 DIR/peers-venv of --dir)\n"
"  --peers-source DIR the raster checkout whose ncregions it installs\n"
"                 (default $RASTER_SOURCE, else the one built from)\n"
"  --baseline-raster FILE  \"today's\" raster file of the same data:\n"
"                 view_size_ratio is the raster file's size / its size\n"
"                 (without it, not measured)\n"
"  --json FILE    also write the results and the summary as JSON\n"
"  --help, --version\n"
"\n"
"Exit status: 0 ok, 1 bad input, a failed measurement or, without raster,\n"
"other values than the plain file's; 2 bad usage.\n",
        f);
}

/* Pause before each cold repetition: on the bench VM, a method that
 * followed a large read right away ran up to 3x slower (the floor right
 * after a raster read of Pacific: 0.14-0.24 s in 3 of 4, first 0.074 s;
 * with 0.3 s between them, 0.076-0.080 s in 6 of 7). */
#define COLD_PAUSE_NS 300000000L

/* Runs jobs[0..n) (same reps) into r[]: the methods take turns, one
 * repetition each, in jobs' order and then backwards (netcdf, raster,
 * floor, rmalloc, rmalloc, floor, raster, netcdf, ...: neighbours stay
 * neighbours, and none always goes first), each in a worker
 * of its own (a warm one reads once untimed first), so that what drifts
 * within a minute weighs on every method alike: a disk that slows or
 * speeds up (the cold floor moved 130-920 ms for the same bytes in one
 * hour here), or the kernel's supply of huge pages for a fresh output
 * (the warm inflate floor of one basin took 0.075 s in one run and 0.119
 * s in the next). Medians of those. */
static int run_methods(const bench_job *jobs, int n, bench_result *r,
                       const char *label)
{
    int reps = jobs[0].reps;
    for (int k = 0; k < n; k++)
        memset(&r[k], 0, sizeof r[k]);
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < n; i++) {
            int k = rep % 2 ? n - 1 - i : i;
            bench_job j = jobs[k];
            bench_result one;
            j.reps = 1;
            if (j.cold) { /* let the I/O before it drain (COLD_PAUSE_NS) */
                struct timespec pause = {0, COLD_PAUSE_NS};
                while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
                    continue;
                bench_prime_memory(j.file);
            }
            if (run_worker(&j, NULL, NULL, &one) != 0) {
                fprintf(stderr, PROG ": %s: the %s read failed\n", label,
                        method_name[j.method]);
                return -1;
            }
            r[k].seconds[rep] = one.seconds[0];
            memcpy(r[k].phase[rep], one.phase[0], sizeof one.phase[0]);
            r[k].nphase = one.nphase;
            r[k].rchar = one.rchar;
            r[k].ok = one.ok;
            if (one.peak_kb > r[k].peak_kb)
                r[k].peak_kb = one.peak_kb;
        }
    return 0;
}

/* The median over repetitions i of a[i] / b[i]: a cold read against the
 * floor's, run next to it (run_methods), so that each ratio is taken
 * within a second of disk behaviour. A ratio of the two medians can set a
 * raster repetition from a fast minute against a floor one from a slow
 * minute (the cold floor moved 130-920 ms for the same bytes in one
 * hour); a median of ratios cancels such drift pair by pair. */
static double pair_ratio(const double *a, const double *b, int n)
{
    double q[BENCH_MAX_REPS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (b[i] > 0)
            q[m++] = a[i] / b[i];
    return m ? bench_median(q, m) : NAN;
}

static int measure_regions(const options *o, raster_var *v,
                           const region_case *cases, int ncases,
                           size_t records, size_t elem, const size_t *shape,
                           const char *mask_file, const char *mask_var)
{
    /* one per process: two runs on one cache must not write each other's */
    char floor_path[PATH_MAX + 32];
    snprintf(floor_path, sizeof floor_path, "%s.floor.%ld", o->raster,
             (long)getpid());
    printf("%-24s %5s %9s %8s %8s %8s %8s %7s %6s %12s %12s %7s\n",
           "regions", "cache", "cells", "netcdf_s", "raster_s", "floor_s",
           "rmalloc", "speedup", "floor", "netcdf_B", "raster_B", "mem");
    int status = 0;
    /* every warm case first, from files read back in order (bench_rewarm:
     * the same page-cache state for each file), then every cold one */
    for (int cold = 0; cold < 2 && status == 0; cold++) {
        if ((cold && !o->cold) || (!cold && !o->warm))
            continue;
        if (!cold && (bench_rewarm(o->plain) || bench_rewarm(o->raster))) {
            fprintf(stderr, PROG ": reading the files in failed\n");
            status = -1;
        }
        for (int k = 0; k < ncases && status == 0; k++) {
            const region_case *c = &cases[k];
            if (write_floor(v, c, records, elem, shape, floor_path) != 0 ||
                (!cold && bench_rewarm(floor_path) != 0)) {
                fprintf(stderr, PROG ": %s: writing the floor file failed\n",
                        c->label);
                status = -1;
                break;
            }
            size_t region_bytes = records * c->cells * elem;
            const char *cache = cold ? "cold" : "warm";
            bench_result r[4];
            static const bench_method methods[4] = {
                BENCH_NETCDF, BENCH_RASTER, BENCH_FLOOR, BENCH_RASTER_MALLOC};
            bench_job jobs[4];
            for (int k = 0; k < 4; k++) {
                bench_method m = methods[k];
                jobs[k] = (bench_job){.method = m,
                                      .file = m == BENCH_NETCDF ? o->plain
                                              : m == BENCH_FLOOR ? floor_path
                                                                 : o->raster,
                                      .var = o->var, .mask_file = mask_file,
                                      .mask_var = mask_var, .nids = c->nids,
                                      .cells = c->cells, .elem = elem,
                                      .reps = o->reps, .cold = cold};
                memcpy(jobs[k].ids, c->ids, sizeof jobs[k].ids);
                memcpy(jobs[k].box, c->box, sizeof jobs[k].box);
            }
            if (run_methods(jobs, 4, r, c->label) != 0) {
                status = -1;
                break;
            }
            for (int k = 0; k < 4; k++)
                add_record(c->label, method_name[methods[k]], cache,
                           c->multi ? "multi" : "single", &r[k], o->reps,
                           region_bytes);
            double t[4];
            for (int k = 0; k < 4; k++)
                t[k] = bench_median(r[k].seconds, o->reps);
            double fl = t[1] / t[2];
            if (cold) {
                fl = pair_ratio(r[1].seconds, r[2].seconds, o->reps);
                for (size_t i = 0; i < nresults; i++)
                    if (strcmp(results[i].kase, c->label) == 0 &&
                        strcmp(results[i].method, "raster") == 0 &&
                        strcmp(results[i].cache, "cold") == 0)
                        results[i].pair = fl;
            }
            printf("%-24.24s %5s %9zu %8.4f %8.4f %8.4f %8.4f %6.2fx %5.2fx "
                   "%12lld %12lld %6.2fx\n", c->label, cache, c->cells, t[0],
                   t[1], t[2], t[3], t[0] / t[1], fl, r[0].rchar,
                   r[1].rchar, (double)r[1].peak_kb * 1024.0 /
                       ((double)region_bytes + 32.0 * 1048576.0));
            print_phases(add_record_last());
        }
    }
    unlink(floor_path);
    printf("(speedup = netcdf/raster; floor = raster/floor (cold: the median "
           "of raster/floor over\n repetitions run side by side); rmalloc = "
           "raster into a malloc'd buffer\n instead of raster_region_alloc's; "
           "mem = "
           "raster peak RSS / (region bytes + 32 MiB); bytes: rchar)\n");
    return status;
}

/* The regional mean series (every outer index) of each single-region
 * case, warm: from the statistics the raster file keeps, and from the
 * values (RASTER_STATS=values), beside the region read it replaces. */
static int measure_stats(const options *o, const region_case *cases,
                         int ncases, size_t records, size_t elem)
{
    static char values_env[] = "RASTER_STATS=values";
    char *env[] = {values_env, NULL};
    printf("\n%-24s %5s %9s %9s %9s %9s\n", "regional mean series",
           "cache", "cells", "stored_s", "values_s", "read_s");
    for (int k = 0; k < ncases; k++) {
        const region_case *c = &cases[k];
        if (c->multi)
            continue;
        bench_job j = {.method = BENCH_STATS, .file = o->raster,
                       .var = o->var, .nids = c->nids, .cells = c->cells,
                       .elem = elem, .reps = o->reps};
        memcpy(j.ids, c->ids, sizeof j.ids);
        bench_result r[2];
        for (int m = 0; m < 2; m++)
            if (run_worker(&j, NULL, m ? env : NULL, &r[m]) != 0) {
                fprintf(stderr, PROG ": %s: the regional mean (%s) "
                        "failed\n", c->label, m ? "values" : "stored");
                return -1;
            }
        size_t region_bytes = records * c->cells * elem;
        add_record(c->label, "stats_stored", "warm", "stats", &r[0],
                   o->reps, region_bytes);
        add_record(c->label, "stats_values", "warm", "stats", &r[1],
                   o->reps, region_bytes);
        const record *rd = find(c->label, "raster", "warm");
        printf("%-24.24s %5s %9zu %9.4f %9.4f %9.4f\n", c->label, "warm",
               c->cells, bench_median(r[0].seconds, o->reps),
               bench_median(r[1].seconds, o->reps),
               rd ? rd->median : NAN);
    }
    printf("(stored: from the statistics the file keeps; values: "
           "RASTER_STATS=values,\n one pass over the region; read: "
           "raster_region_read of the region)\n");
    return 0;
}

/* ---- without raster: what every other reader gets (issue 41) ------------ */

/* ncdump -h runs per repetition and file: one takes 10-200 ms, as noisy as
 * the machine, so a repetition is the mean of a few, as the small calls'
 * (BENCH_CALLS) */
#define VIEW_NCDUMP_CALLS 4

/* One repetition of `ncdump -h` (PATH's ncdump, run without raster) on
 * the plain file (argv[0]) and the raster file (argv[1]), the files by
 * turns, each first in every other call; the mean run's seconds in t[],
 * a failed run's exit status kept in st[], the peak RSS in peak[]. */
static void ncdump_rep(char *argv[2][4], double t[2], int st[2],
                       long peak[2])
{
    t[0] = t[1] = 0;
    for (int c = 0; c < VIEW_NCDUMP_CALLS; c++)
        for (int i = 0; i < 2; i++) {
            int f = (c + i) % 2;
            double sec = 0;
            long kb = 0;
            int rc = run_clean(argv[f], NULL, 0, &sec, &kb);
            if (rc != 0 && st[f] == 0)
                st[f] = rc;
            t[f] += sec / VIEW_NCDUMP_CALLS;
            if (kb > peak[f])
                peak[f] = kb;
        }
}

/* view_open_ratio's runs: records view_plain and view_raster (kind
 * view_open), the latter only when ncdump -h read the raster file. No
 * ncdump, or one that fails on the plain file: not measured (no record),
 * said, and the run goes on. */
static void measure_view_open(const options *o)
{
    char *argv[2][4] = {{"ncdump", "-h", (char *)o->plain, NULL},
                        {"ncdump", "-h", (char *)o->raster, NULL}};
    bench_result r[2];
    int st[2] = {0, 0};
    double t[2];
    long peak[2] = {0, 0};
    memset(r, 0, sizeof r);
    ncdump_rep(argv, t, st, peak); /* warm-up, untimed */
    for (int rep = 0; rep < o->reps && st[0] == 0; rep++) {
        ncdump_rep(argv, t, st, peak);
        r[0].seconds[rep] = t[0];
        r[1].seconds[rep] = t[1];
    }
    r[0].peak_kb = peak[0];
    r[1].peak_kb = peak[1];
    if (st[0] != 0) {
        printf("%-24s %5s (not measured: ncdump -h of the plain file %s)\n",
               VIEW_NCDUMP, "warm",
               st[0] == 127 ? "could not run" : "failed");
        return;
    }
    add_record(VIEW_NCDUMP, "view_plain", "warm", "view_open", &r[0],
               o->reps, 0);
    double a = bench_median(r[0].seconds, o->reps);
    if (st[1] != 0) {
        printf("%-24s %5s %9.4f %9s %7.2fx %12s %12s  ncdump failed "
               "(exit %d)\n", VIEW_NCDUMP, "warm", a, "-", 0.0, "-", "-",
               st[1]);
        return;
    }
    add_record(VIEW_NCDUMP, "view_raster", "warm", "view_open", &r[1],
               o->reps, 0);
    double b = bench_median(r[1].seconds, o->reps);
    printf("%-24s %5s %9.4f %9.4f %7.2fx %12s %12s\n", VIEW_NCDUMP, "warm",
           a, b, a / b, "-", "-");
}

/* bench_view_check of case c's box in a child without raster
 * (--view-check): 0 equal, 1 unreadable, 2 differ (msg says how), -1 the
 * check itself failed. */
static int view_check(const options *o, const region_case *c, char *msg,
                      size_t len)
{
    char box[128], out[1024];
    join_sizes(box, sizeof box, c->box, 4);
    char *argv[] = {exe_path, "--view-check", (char *)o->plain,
                    (char *)o->raster, (char *)o->var, box, NULL};
    double sec;
    long kb;
    static const char *const verdict[3] = {"equal", "unreadable", "differ"};
    if (run_clean(argv, out, sizeof out, &sec, &kb) != 0)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(verdict[k]);
        if (strncmp(out, verdict[k], n) == 0 &&
            (out[n] == ' ' || out[n] == '\0')) {
            snprintf(msg, len, "%s", out[n] ? out + n + 1 : "");
            return k;
        }
    }
    return -1;
}

/* The raster file's view, read without raster, of one single-region
 * case's bounding box: checked against the plain file's values, then (if
 * equal) timed against it. */
static int measure_view_case(const options *o, const region_case *c,
                             size_t elem)
{
    char msg[512];
    int verdict = view_check(o, c, msg, sizeof msg);
    if (verdict < 0) {
        fprintf(stderr, PROG ": %s: checking the view failed\n", c->label);
        return -1;
    }
    /* every outer index, the box: what a foreign reader asks of the file */
    bench_job jobs[2];
    for (int k = 0; k < 2; k++)
        jobs[k] = (bench_job){.method = BENCH_READ,
                              .file = k ? o->raster : o->plain,
                              .var = o->var, .elem = elem, .reps = o->reps,
                              .hyper = {c->box[0], c->box[1],
                                        c->box[2] - c->box[0],
                                        c->box[3] - c->box[1]}};
    bench_result r[2];
    char what[160];
    snprintf(what, sizeof what, "%.100s, without raster", c->label);
    /* only a view that gives the plain file's values is timed */
    if (run_methods(jobs, verdict == 0 ? 2 : 1, r, what) != 0)
        return -1;
    add_record(c->label, "view_plain", "warm", "view_read", &r[0], o->reps,
               0);
    double a = bench_median(r[0].seconds, o->reps);
    if (verdict == 0) {
        view_equal_n++;
        add_record(c->label, "view_raster", "warm", "view_read", &r[1],
                   o->reps, 0);
        double b = bench_median(r[1].seconds, o->reps);
        printf("%-24.24s %5s %9.4f %9.4f %7.2fx %12lld %12lld  equal\n",
               c->label, "warm", a, b, a / b, r[0].rchar, r[1].rchar);
        return 0;
    }
    printf("%-24.24s %5s %9.4f %9s %7.2fx %12lld %12s  %s\n", c->label,
           "warm", a, "-", 0.0, r[0].rchar, "-",
           verdict == 1 ? "unreadable" : "VALUES DIFFER");
    if (verdict == 2) { /* a wrong value is a failure, said every time */
        view_differ_n++;
        printf("  the raster file's values without raster are not the plain "
               "file's: %s\n", msg);
        fprintf(stderr, PROG ": %s: without raster, the raster file's "
                "values are not the plain file's: %s\n", c->label, msg);
    } else if (view_unread_n++ == 0) /* the usual today: said once */
        printf("  the raster file's %s without raster: %s\n", o->var, msg);
    if (!view_error[0])
        snprintf(view_error, sizeof view_error, "%s", msg);
    return 0;
}

/* Issue 41's fields: the two files read by programs without raster
 * (ncdump -h; nc_get_vara of each single region's bounding box), each in
 * a child with LD_PRELOAD unset: this process links libraster and may
 * itself run under an exported shim, and the figure is what a foreign
 * reader sees. Warm, from files read back in order (bench_rewarm). */
static int measure_view(const options *o, const region_case *cases,
                        int ncases, size_t elem)
{
    if (bench_rewarm(o->plain) || bench_rewarm(o->raster)) {
        fprintf(stderr, PROG ": reading the files in failed\n");
        return -1;
    }
    printf("\n%-24s %5s %9s %9s %8s %12s %12s  %s\n", "without raster",
           "cache", "plain_s", "raster_s", "ratio", "plain_B", "raster_B",
           "values");
    measure_view_open(o);
    for (int k = 0; k < ncases; k++)
        if (!cases[k].multi && measure_view_case(o, &cases[k], elem) != 0)
            return -1;
    printf("(no shim: ncdump -h from PATH, %d runs a repetition, and "
           "nc_get_vara of each\n region's bounding box, every record; "
           "ratio = plain/raster, 0 when the raster\n file did not give "
           "the plain file's values)\n", VIEW_NCDUMP_CALLS);
    return 0;
}

/* j's hyperslab narrowed to the thin column band: o->thin columns in the
 * middle of the grid, all rows. */
static void thin_band(bench_job *j, const options *o, size_t nx)
{
    size_t w = o->thin < nx ? o->thin : nx;
    j->hyper[1] = nx / 2 < nx - w ? nx / 2 : nx - w;
    j->hyper[3] = w;
}

/* plain (no shim) against shim (LD_PRELOAD) for one READ or WRITE job. */
static int measure_pair(const options *o, const char *label,
                        const char *cache, bench_job j, const char *shim_file,
                        char *const *shim_env)
{
    bench_result plain, shim;
    const char *plain_file = j.file;
    if (run_worker(&j, NULL, NULL, &plain) != 0) {
        fprintf(stderr, PROG ": %s: the plain run failed\n", label);
        return -1;
    }
    j.file = shim_file;
    if (run_worker(&j, o->preload, shim_env, &shim) != 0) {
        fprintf(stderr, PROG ": %s: the shim run failed\n", label);
        return -1;
    }
    (void)plain_file;
    const char *kind = j.method == BENCH_WRITE ? "write" : "read";
    add_record(label, "plain", cache, kind, &plain, o->reps, 0);
    add_record(label, "shim", cache, kind, &shim, o->reps, 0);
    double a = bench_median(plain.seconds, o->reps);
    double b = bench_median(shim.seconds, o->reps);
    printf("%-24s %5s %9.4f %9.4f %7.2fx %12lld %12lld %7.1f %7.1f\n", label,
           cache, a, b, a / b, plain.rchar, shim.rchar,
           (double)plain.peak_kb / 1024.0, (double)shim.peak_kb / 1024.0);
    return 0;
}

/* The point of the point series: the cell of a region (mask id not 0)
 * nearest the middle of the grid along its middle column, else the first
 * one; in yx[0], yx[1]. 0, or -1 with a message. */
static int ocean_point(const char *mask_file, const char *mask_var,
                       size_t ny, size_t nx, size_t *yx)
{
    int ncid, varid, st;
    int32_t *m = malloc(ny * nx * sizeof *m);
    if (!m || (st = nc_open(mask_file, NC_NOWRITE, &ncid)) != NC_NOERR) {
        fprintf(stderr, PROG ": reading the mask: %s\n",
                m ? nc_strerror(st) : "out of memory");
        free(m);
        return -1;
    }
    if ((st = nc_inq_varid(ncid, mask_var, &varid)) == NC_NOERR)
        st = nc_get_var_int(ncid, varid, m);
    nc_close(ncid);
    int rc = -1;
    for (size_t d = 0; st == NC_NOERR && d <= ny / 2 && rc; d++)
        for (int s = -1; s <= 1 && rc; s += 2) {
            size_t y = s < 0 ? ny / 2 - d : ny / 2 + d;
            if (y < ny && m[y * nx + nx / 2] != 0) {
                yx[0] = y;
                yx[1] = nx / 2;
                rc = 0;
            }
        }
    for (size_t c = 0; st == NC_NOERR && rc && c < ny * nx; c++)
        if (m[c] != 0) {
            yx[0] = c / nx;
            yx[1] = c % nx;
            rc = 0;
        }
    if (rc)
        fprintf(stderr, PROG ": reading the mask: %s\n",
                st ? nc_strerror(st) : "no cell of any region");
    free(m);
    return rc;
}

static int measure_shim(const options *o, size_t ny, size_t nx, size_t elem,
                        const size_t *shape, int nd, const char *mask_spec,
                        const char *mask_file, const char *mask_var)
{
    if (!o->preload) {
        printf("\n(shim cases skipped: libraster_preload.so not found; give "
               "--preload)\n");
        return 0;
    }
    printf("\n%-24s %5s %9s %9s %8s %12s %12s %7s %7s\n", "through the shim",
           "cache", "plain_s", "shim_s", "ratio", "plain_B", "shim_B",
           "plainMB", "shimMB");
    int status = 0;
    for (int cold = 0; cold < 2 && status == 0 && !o->only_write; cold++) {
        if ((cold && !o->cold) || (!cold && !o->warm))
            continue;
        /* the warm cases from files read back in order, as the region
         * cases' (bench_rewarm): the cold region cases before left the
         * raster file in the small pages raster's cold reads announce */
        if (!cold && (bench_rewarm(o->plain) || bench_rewarm(o->raster))) {
            fprintf(stderr, PROG ": reading the files in failed\n");
            return -1;
        }
        const char *cache = cold ? "cold" : "warm";
        bench_job j = {.method = BENCH_READ, .file = o->plain, .var = o->var,
                       .elem = elem, .reps = o->reps, .cold = cold,
                       .hyper = {0, 0, ny, nx}};
        status = measure_pair(o, "full variable", cache, j, o->raster, NULL);
        thin_band(&j, o, nx);
        if (status == 0)
            status = measure_pair(o, "thin column band", cache, j, o->raster,
                                  NULL);
        if (cold || status)
            continue;
        /* the small calls, warm */
        bench_job b = j;
        b.method = BENCH_READ_OPEN;
        status = measure_pair(o, CASE_THIN_OPEN, cache, b, o->raster, NULL);
        b.method = BENCH_OPEN;
        if (status == 0)
            status = measure_pair(o, CASE_OPEN, cache, b, o->raster, NULL);
        b.method = BENCH_POINT;
        b.hyper[0] = ny / 2;
        b.hyper[1] = nx / 2;
        if (status == 0 && (!mask_file || !mask_var ||
                            ocean_point(mask_file, mask_var, ny, nx,
                                        b.hyper) == 0))
            status = measure_pair(o, CASE_POINT, cache, b, o->raster, NULL);
    }
    if (status == 0 && o->write && o->warm && nd == 4) {
        static char env_mask[PATH_MAX + 64], env_vars[NC_MAX_NAME + 16];
        snprintf(env_mask, sizeof env_mask, "RASTER_MASK=%s", mask_spec);
        snprintf(env_vars, sizeof env_vars, "RASTER_VARS=%s", o->var);
        char *env[] = {env_mask, env_vars, NULL};
        char plain_out[PATH_MAX + 32], shim_out[PATH_MAX + 32];
        snprintf(plain_out, sizeof plain_out, "%s.write-plain.nc", o->raster);
        snprintf(shim_out, sizeof shim_out, "%s.write-shim.nc", o->raster);
        bench_job j = {.method = BENCH_WRITE, .file = plain_out,
                       .var = o->var, .mask_file = mask_file,
                       .mask_var = mask_var, .elem = elem, .reps = o->reps};
        memcpy(j.shape, shape, 4 * sizeof *shape);
        /* the plain file's own chunk shape */
        int ncid, varid, storage;
        if (nc_open(o->plain, NC_NOWRITE, &ncid) != NC_NOERR ||
            nc_inq_varid(ncid, o->var, &varid) != NC_NOERR ||
            nc_inq_var_chunking(ncid, varid, &storage, j.chunk) != NC_NOERR ||
            storage != NC_CHUNKED) {
            j.chunk[0] = 1;
            j.chunk[1] = shape[1];
            j.chunk[2] = ny < 50 ? ny : 50;
            j.chunk[3] = nx < 50 ? nx : 50;
        }
        nc_close(ncid);
        status = measure_pair(o, "record-by-record write", "warm", j,
                              shim_out, env);
        j.method = BENCH_SMALL_WRITE;
        if (status == 0)
            status = measure_pair(o, CASE_SMALL_WRITE, "warm", j, shim_out,
                                  env);
    }
    printf("(ratio = plain time / shim time; MB: peak RSS)\n");
    return status;
}

static long long file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* The compressed case: the single-region cases (the five basins by
 * default) read warm (and cold) by netcdf and raster from the deflated
 * files, against the inflate floor (warm: it reads nothing), and the whole
 * variable and the thin column band, plain against the shim. */
static int measure_compressed(const options *o, const region_case *cases,
                              int ncases, size_t records, size_t elem,
                              size_t ny, size_t nx, const char *mask_file,
                              const char *mask_var)
{
    if (prepare_compressed(o, zplain, zraster, sizeof zplain) != 0)
        return -1;
    zplain_bytes = file_bytes(zplain);
    zraster_bytes = file_bytes(zraster);
    printf("\ncompressed (deflate 1 + shuffle): plain %.1f MB, raster %.1f "
           "MB (%.3f)\n", (double)zplain_bytes / 1e6,
           (double)zraster_bytes / 1e6,
           (double)zraster_bytes / (double)zplain_bytes);
    printf("%-24s %5s %9s %8s %8s %8s %7s %6s %12s %12s %12s\n",
           "regions, deflated", "cache", "cells", "netcdf_s", "raster_s",
           "ifloor_s", "speedup", "floor", "netcdf_B", "raster_B",
           "ifloor_B");
    int status = 0;
    /* warm cases first, from files read back in order (bench_rewarm) */
    for (int cold = 0; cold < 2 && status == 0; cold++) {
        if ((cold && !o->cold) || (!cold && !o->warm))
            continue;
        if (!cold && (bench_rewarm(zplain) || bench_rewarm(zraster))) {
            fprintf(stderr, PROG ": reading the deflated files in failed\n");
            status = -1;
        }
        for (int k = 0; k < ncases && status == 0; k++) {
            const region_case *c = &cases[k];
            if (c->multi)
                continue;
            size_t region_bytes = records * c->cells * elem;
            const char *cache = cold ? "cold" : "warm";
            static const bench_method methods[3] = {
                BENCH_NETCDF, BENCH_RASTER, BENCH_INFLATE_FLOOR};
            bench_result r[3];
            int nm = cold ? 2 : 3; /* the floor reads no file */
            bench_job jobs[3];
            for (int m = 0; m < nm; m++) {
                jobs[m] = (bench_job){.method = methods[m],
                                      .file = m == 0 ? zplain : zraster,
                                      .var = o->var, .mask_file = mask_file,
                                      .mask_var = mask_var, .nids = c->nids,
                                      .cells = c->cells, .elem = elem,
                                      .reps = o->reps, .cold = cold};
                memcpy(jobs[m].ids, c->ids, sizeof jobs[m].ids);
                memcpy(jobs[m].box, c->box, sizeof jobs[m].box);
            }
            char what[96];
            snprintf(what, sizeof what, "%.80s, deflated", c->label);
            if (run_methods(jobs, nm, r, what) != 0) {
                status = -1;
                break;
            }
            static const char *const zname[3] = {
                "netcdf_deflated", "raster_deflated", "inflate_floor"};
            for (int m = 0; m < nm; m++)
                add_record(c->label, zname[m], cache, "compressed", &r[m],
                           o->reps, region_bytes);
            double t0 = bench_median(r[0].seconds, o->reps),
                   t1 = bench_median(r[1].seconds, o->reps);
            printf("%-24.24s %5s %9zu %8.4f %8.4f ", c->label, cache,
                   c->cells, t0, t1);
            if (cold) /* the floor reads no file: warm only */
                printf("%8s %6.2fx %6s %12lld %12lld %12s\n", "-", t0 / t1,
                       "-", r[0].rchar, r[1].rchar, "-");
            else {
                double t2 = bench_median(r[2].seconds, o->reps);
                printf("%8.4f %6.2fx %5.2fx %12lld %12lld %12lld\n", t2,
                       t0 / t1, t1 / t2, r[0].rchar, r[1].rchar, r[2].rchar);
            }
            print_phases(add_record_last());
        }
    }
    printf("(ifloor = inflating and unshuffling exactly the regions' "
           "compressed chunks, read\n beforehand, on raster's read threads; "
           "floor = raster/ifloor; ifloor_B: the\n compressed bytes it "
           "inflates)\n");
    if (status == 0 && o->preload && o->warm) {
        printf("%-24s %5s %9s %9s %8s %12s %12s %7s %7s\n",
               "through the shim", "cache", "plain_s", "shim_s", "ratio",
               "plain_B", "shim_B", "plainMB", "shimMB");
        bench_job j = {.method = BENCH_READ, .file = zplain, .var = o->var,
                       .elem = elem, .reps = o->reps, .cold = 0,
                       .hyper = {0, 0, ny, nx}};
        status = measure_pair(o, ZCASE_FULL, "warm", j, zraster, NULL);
        thin_band(&j, o, nx);
        if (status == 0)
            status = measure_pair(o, ZCASE_THIN, "warm", j, zraster, NULL);
    }
    return status;
}

/* ---- peers ---------------------------------------------------------------- */

/* bench_peers.py: beside the tools (a build tree's tools/ holds a copy),
 * or in an installed prefix's share/raster. */
static const char *peers_script(void)
{
    static char path[PATH_MAX + 64];
    static const char *const where[] = {"%s/bench_peers.py",
                                        "%s/../share/raster/bench_peers.py"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, where[i], exe_dir);
        if (file_exists(path))
            return path;
    }
    return NULL;
}

/* The checkout bench_peers.py pip-installs ncregions from: --peers-source,
 * else $RASTER_SOURCE, else the one this rasterbench was built from when
 * it is still there; NULL: none (the ncregions methods are skipped). */
static const char *peers_source(const options *o)
{
    static char path[PATH_MAX + 32];
    const char *env = getenv("RASTER_SOURCE");
    const char *cand[] = {o->peers_source, env && *env ? env : NULL,
#ifdef RASTER_SOURCE_ROOT
                          RASTER_SOURCE_ROOT,
#endif
                          NULL};
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++) {
        if (!cand[i])
            continue;
        snprintf(path, sizeof path, "%s/pyproject.toml", cand[i]);
        if (file_exists(path))
            return cand[i];
    }
    return NULL;
}

/* Reads bench_peers.py's records ("record CASE METHOD KIND MEDIAN RCHAR
 * PEAK REGION_BYTES FILE_BYTES CHECK [PAIR]", tab-separated) into
 * results[]. */
static int read_peer_records(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *field[12], *save = NULL;
        int n = 0;
        line[strcspn(line, "\n")] = '\0';
        for (char *t = strtok_r(line, "\t", &save); t && n < 12;
             t = strtok_r(NULL, "\t", &save))
            field[n++] = t;
        if ((n != 10 && n != 11) || strcmp(field[0], "record") != 0 ||
            nresults == MAX_RESULTS) {
            rc = -1;
            break;
        }
        bench_result r = {.rchar = strtoll(field[5], NULL, 10),
                          .peak_kb = strtol(field[6], NULL, 10) / 1024};
        r.seconds[0] = strtod(field[4], NULL);
        add_record(field[1], field[2], "warm", field[3], &r, 1,
                   (size_t)strtoull(field[7], NULL, 10));
        results[nresults - 1].peak = strtol(field[6], NULL, 10);
        results[nresults - 1].file_bytes = strtoll(field[8], NULL, 10);
        results[nresults - 1].check = strtod(field[9], NULL);
        if (n == 11)
            results[nresults - 1].pair = strtod(field[10], NULL);
    }
    fclose(f);
    return rc;
}

/* --peers: the single-region cases read by xarray (netCDF4, h5netcdf),
 * ncregions and ADIOS2, each in its own process, warm (bench_peers.py
 * under its own venv, made once from PyPI). Not being able to make that
 * venv (no network, no venv module) skips them: their summary fields say
 * "not measured". */
static int measure_peers(options *o, const region_case *cases, int ncases,
                         size_t records, size_t elem, const char *mask_spec)
{
    const char *script = peers_script();
    if (!script) {
        fprintf(stderr, PROG ": --peers: bench_peers.py not found beside "
                "%s\n", exe_path);
        return -1;
    }
    /* warm, from files read back in order, as the other warm cases (the
     * cold cases before them leave small pages behind) */
    if (bench_rewarm(o->plain) || bench_rewarm(o->raster)) {
        fprintf(stderr, PROG ": --peers: reading the files in failed\n");
        return -1;
    }
    static char venv[PATH_MAX + 32];
    char out[] = "/tmp/rasterbench-peers-XXXXXX";
    const char *env = getenv("RASTER_PEERS_VENV");
    if (o->peers_venv)
        snprintf(venv, sizeof venv, "%s", o->peers_venv);
    else if (env && *env)
        snprintf(venv, sizeof venv, "%s", env);
    else {
        default_dir(o);
        if (make_dir(o->dir) != 0) {
            fprintf(stderr, PROG ": cannot create %s: %s\n", o->dir,
                    strerror(errno));
            return -1;
        }
        snprintf(venv, sizeof venv, "%s/peers-venv", o->dir);
    }
    int fd = mkstemp(out);
    if (fd < 0) {
        fprintf(stderr, PROG ": --peers: %s\n", strerror(errno));
        return -1;
    }
    close(fd);
    const char *py = getenv("PYTHON");
    char reps[16], elems[16], ids[MAX_CASES][16], bytes[MAX_CASES][32];
    char *argv[32 + 4 * MAX_CASES];
    int k = 0;
    argv[k++] = (char *)(py && *py ? py : "python3");
    argv[k++] = (char *)script;
    argv[k++] = "--plain";
    argv[k++] = (char *)o->plain;
    argv[k++] = "--raster";
    argv[k++] = (char *)o->raster;
    argv[k++] = "--var";
    argv[k++] = (char *)o->var;
    argv[k++] = "--mask";
    argv[k++] = (char *)mask_spec;
    snprintf(reps, sizeof reps, "%d", o->reps);
    argv[k++] = "--reps";
    argv[k++] = reps;
    argv[k++] = "--venv";
    argv[k++] = venv;
    argv[k++] = "--out";
    argv[k++] = out;
    /* its ncregions_read alternates with this program's raster worker */
    snprintf(elems, sizeof elems, "%zu", elem);
    argv[k++] = "--rasterbench";
    argv[k++] = exe_path;
    argv[k++] = "--elem";
    argv[k++] = elems;
    const char *src = peers_source(o);
    if (src) {
        argv[k++] = "--source";
        argv[k++] = (char *)src;
    }
    int nsingle = 0;
    for (int i = 0; i < ncases; i++) {
        if (cases[i].multi)
            continue;
        snprintf(ids[i], sizeof ids[i], "%d", (int)cases[i].ids[0]);
        snprintf(bytes[i], sizeof bytes[i], "%zu",
                 records * cases[i].cells * elem);
        argv[k++] = "--case";
        argv[k++] = ids[i];
        argv[k++] = (char *)cases[i].label;
        argv[k++] = bytes[i];
        nsingle++;
    }
    argv[k] = NULL;
    printf("\n");
    if (nsingle == 0) {
        printf("(peers skipped: they read single regions; no --case is "
               "one)\n");
        unlink(out);
        return 0;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("LD_PRELOAD");
        execvp(argv[0], argv);
        fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    int status, rc = -1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 77) {
            printf("(peers skipped: bench_peers.py could not make its venv; "
                   "see above)\n");
            rc = 0;
        } else if (WEXITSTATUS(status) == 0) {
            rc = read_peer_records(out);
            if (rc != 0)
                fprintf(stderr, PROG ": --peers: bad records in %s\n", out);
        }
    }
    if (rc != 0)
        fprintf(stderr, PROG ": --peers: bench_peers.py failed\n");
    else
        printf("(peers: warm, median of %d; bytes: rchar of the last "
               "repetition; check: sum of the values read)\n", o->reps);
    unlink(out);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0)
        return worker_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "--view-check") == 0)
        return view_check_main(argc, argv);
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    if (n <= 0) {
        fprintf(stderr, PROG ": cannot find its own executable\n");
        return CLI_EINPUT;
    }
    exe_path[n] = '\0';
    snprintf(exe_dir, sizeof exe_dir, "%s", exe_path);
    *strrchr(exe_dir, '/') = '\0';
    if (argc > 1 && strcmp(argv[1], "--mpi") == 0) {
        /* the parallel benchmark is its own program, linked to the MPI
         * flavour (docs/PARALLEL.md): run it with the other arguments */
        char mpi[PATH_MAX + 32];
        snprintf(mpi, sizeof mpi, "%s/rasterbench_mpi", exe_dir);
        argv[1] = mpi;
        execv(mpi, argv + 1);
        fprintf(stderr, PROG ": --mpi needs %s (the MPI build): %s\n", mpi,
                strerror(errno));
        return CLI_EINPUT;
    }

    static const struct option longopts[] = {
        {"plain", required_argument, NULL, 'p'},
        {"raster", required_argument, NULL, 'r'},
        {"var", required_argument, NULL, 'v'},
        {"case", required_argument, NULL, 'c'},
        {"reps", required_argument, NULL, 'n'},
        {"cold", no_argument, NULL, 'C'},
        {"warm", no_argument, NULL, 'W'},
        {"json", required_argument, NULL, 'j'},
        {"dir", required_argument, NULL, 'd'},
        {"mask", required_argument, NULL, 'm'},
        {"size", required_argument, NULL, 's'},
        {"chunk", required_argument, NULL, 'k'},
        {"preload", required_argument, NULL, 'P'},
        {"no-shim", no_argument, NULL, 'S'},
        {"no-write", no_argument, NULL, 'w'},
        {"only-write", no_argument, NULL, 'O'},
        {"thin", required_argument, NULL, 't'},
        {"compressed", no_argument, NULL, 'Z'},
        {"no-compressed", no_argument, NULL, 'z'},
        {"only-compressed", no_argument, NULL, 'o'},
        {"peers", no_argument, NULL, 'e'},
        {"peers-venv", required_argument, NULL, 'E'},
        {"peers-source", required_argument, NULL, 'u'},
        {"baseline-raster", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    options o = {.reps = 5, .size = "medium", .shim = 1, .write = 1,
                 .thin = 1, .compressed = 1};
    int opt, warm_only = 0, cold_only = 0;
    opterr = 0; /* cli_bad_option() words the message */
    while ((opt = getopt_long(argc, argv, CLI_OPTSTRING(""), longopts, NULL)) != -1) {
        switch (opt) {
        case 'p': o.plain = optarg; break;
        case 'r': o.raster = optarg; break;
        case 'v': o.var = optarg; break;
        case 'c':
            if (o.ncases == MAX_CASES) {
                fprintf(stderr, PROG ": at most %d --case\n", MAX_CASES);
                return CLI_EUSAGE;
            }
            o.cases[o.ncases++] = optarg;
            break;
        case 'n': o.reps = atoi(optarg); break;
        case 'C': cold_only = 1; break;
        case 'W': warm_only = 1; break;
        case 'j': o.json = optarg; break;
        case 'd': o.dir = optarg; break;
        case 'm': o.mask = optarg; break;
        case 's': o.size = optarg; break;
        case 'k': o.chunk = optarg; break;
        case 'P': o.preload = optarg; break;
        case 'S': o.shim = 0; break;
        case 'w': o.write = 0; break;
        case 'O': o.only_write = 1; break;
        case 'Z': o.compressed = 1; break;
        case 'z': o.compressed = 0; break;
        case 'o': o.only_compressed = o.compressed = 1; break;
        case 'e': o.peers = 1; break;
        case 'E': o.peers_venv = optarg; break;
        case 'u': o.peers_source = optarg; break;
        case 'b': o.baseline = optarg; break;
        case 't':
            if (cli_parse_sizes(optarg, &o.thin, 1, &(size_t){0}) != 0) {
                fprintf(stderr, PROG ": --thin wants a positive width\n");
                return CLI_EUSAGE;
            }
            break;
        case 'h': usage(stdout); return CLI_OK;
        case 'V': printf(PROG " (raster) %s\n", raster_version_string());
                  return CLI_OK;
        default: return cli_bad_option("rasterbench", opt, argv);
        }
    }
    o.warm = !cold_only || warm_only;
    o.cold = !warm_only || cold_only;
    if (optind < argc || o.reps < 1 || o.reps >= BENCH_MAX_REPS ||
        (!o.plain != !o.raster) || (o.plain && !o.var)) {
        fprintf(stderr, PROG ": --plain, --raster and --var go together; "
                "--reps 1..%d (try --help)\n", BENCH_MAX_REPS - 1);
        return CLI_EUSAGE;
    }
    if (o.only_compressed && (o.only_write || o.plain)) {
        fprintf(stderr, PROG ": --only-compressed measures the generated "
                "data's compressed case: not with --only-write or --plain\n");
        return CLI_EUSAGE;
    }
    if (o.peers && (o.only_write || o.only_compressed)) {
        fprintf(stderr, PROG ": --peers is measured beside the region "
                "cases: not with --only-write or --only-compressed\n");
        return CLI_EUSAGE;
    }
    if (o.only_write && (!o.shim || !o.write || cold_only)) {
        fprintf(stderr, PROG ": --only-write measures the (warm) write "
                "through the shim: not with --no-shim, --no-write or "
                "--cold\n");
        return CLI_EUSAGE;
    }
    char plain[PATH_MAX + 64], rasterf[PATH_MAX + 64];
    if (!o.plain && prepare_dataset(&o, plain, rasterf, sizeof plain) != 0)
        return CLI_EINPUT;
    if (o.shim && !o.preload) {
        const char *env = getenv("RASTER_PRELOAD");
        o.preload = env && *env ? env : default_preload();
    }
    if (!o.shim)
        o.preload = NULL;
    view_raster_bytes = file_bytes(o.raster);
    if (o.baseline && (view_baseline_bytes = file_bytes(o.baseline)) <= 0) {
        fprintf(stderr, PROG ": --baseline-raster %s: %s\n", o.baseline,
                view_baseline_bytes < 0 ? strerror(errno) : "empty");
        return CLI_EINPUT;
    }

    raster_file *f;
    raster_var *v;
    int rc = raster_open(o.raster, RASTER_READ, &f);
    if (rc == RASTER_OK)
        rc = raster_var_find(f, o.var, &v);
    if (rc != RASTER_OK) {
        fprintf(stderr, PROG ": %s: %s\n", raster_strerror(rc),
                raster_errmsg());
        return CLI_EINPUT;
    }
    size_t shape[32], elem = 0, records = 1;
    int nd = raster_var_ndims(v);
    raster_var_dims(v, NULL, shape, NULL);
    nc_inq_type(raster_file_ncid(f), raster_var_type(v), NULL, &elem);
    for (int i = 0; i < nd - 2; i++)
        records *= shape[i];
    size_t ny = shape[nd - 2], nx = shape[nd - 1];
    /* the mask the netcdf method applies: the plain file's own, else the
     * one named by --mask, else the one the raster file stores (written to
     * a scratch file beside it: the method reads a netCDF variable) */
    char mask_spec[PATH_MAX + 64], *mask_file = NULL, *mask_var = NULL;
    char mask_scratch[PATH_MAX + 16] = "";
    int ncid, mid;
    mask_spec[0] = '\0';
    if (nc_open(o.plain, NC_NOWRITE, &ncid) == NC_NOERR) {
        if (nc_inq_varid(ncid, "REGION_MASK", &mid) == NC_NOERR)
            snprintf(mask_spec, sizeof mask_spec, "%s:REGION_MASK", o.plain);
        nc_close(ncid);
    }
    if (!mask_spec[0] && o.mask)
        snprintf(mask_spec, sizeof mask_spec, "%s", o.mask);
    if (!mask_spec[0]) {
        snprintf(mask_scratch, sizeof mask_scratch, "%s.mask", o.raster);
        if (write_stored_mask(v, mask_scratch) != 0) {
            raster_close(f);
            return CLI_EINPUT;
        }
        snprintf(mask_spec, sizeof mask_spec, "%s:mask", mask_scratch);
    }
    if (cli_split_spec(mask_spec, &mask_file, &mask_var)) {
        fprintf(stderr, PROG ": bad mask '%s'\n", mask_spec);
        if (mask_scratch[0])
            unlink(mask_scratch);
        raster_close(f);
        return CLI_EINPUT;
    }
    region_case cases[MAX_CASES];
    int ncases = 0, status = CLI_OK;
    if (o.ncases) {
        for (int k = 0; k < o.ncases && status == CLI_OK; k++)
            if (parse_case(v, o.cases[k], &cases[ncases++]) != 0)
                status = CLI_EINPUT;
    } else if (default_cases(v, cases, &ncases) != 0) {
        fprintf(stderr, PROG ": %s\n", raster_errmsg());
        status = CLI_EINPUT;
    }
    if (status == CLI_OK) {
        printf("%s: %s", o.raster, o.var);
        for (int i = 0; i < nd; i++)
            printf("%s%zu", i ? " x " : " ", shape[i]);
        printf(" (%zu records of %zu x %zu, %.2f GB), median of %d\n",
               records, ny, nx, (double)(records * ny * nx * elem) / 1e9,
               o.reps);
        if (!o.only_write && !o.only_compressed &&
            (measure_regions(&o, v, cases, ncases, records, elem, shape,
                             mask_file, mask_var) != 0 ||
             (o.warm && measure_stats(&o, cases, ncases, records, elem)) ||
             (o.warm && measure_view(&o, cases, ncases, elem))))
            status = CLI_EINPUT;
    }
    /* after the region cases: the Python route is held to their raster
     * reads of the same regions */
    if (status == CLI_OK && o.peers &&
        measure_peers(&o, cases, ncases, records, elem, mask_spec) != 0)
        status = CLI_EINPUT;
    raster_close(f);
    if (status == CLI_OK && o.shim && !o.only_compressed &&
        measure_shim(&o, ny, nx, elem, shape, nd, mask_spec, mask_file,
                     mask_var) != 0)
        status = CLI_EINPUT;
    if (status == CLI_OK && o.compressed && !o.only_write) {
        if (!o.generated)
            printf("\n(compressed case skipped: it uses the generated "
                   "data, not --plain/--raster)\n");
        else if (measure_compressed(&o, cases, ncases, records, elem, ny, nx,
                                    mask_file, mask_var) != 0)
            status = CLI_EINPUT;
    }
    summary s = summarize();
    if (status == CLI_OK)
        print_summary(&s);
    if (status == CLI_OK && o.json && write_json(&o, &s, shape, nd, elem))
        status = CLI_EINPUT;
    /* a view that gives other values than the plain file's: a failure,
     * reported after the summary it is part of */
    if (status == CLI_OK && view_differ_n > 0) {
        fprintf(stderr, PROG ": without raster, %d region(s) read other "
                "values than the plain file's\n", view_differ_n);
        status = CLI_EINPUT;
    }
    if (mask_scratch[0])
        unlink(mask_scratch);
    free(mask_file);
    free(mask_var);
    return status;
}
