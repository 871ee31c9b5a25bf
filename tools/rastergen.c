/*
 * rastergen - writes plain chunked netCDF-4 test datasets on the grid of a
 * region mask: CESM POP-like ocean fields (time x z_t x nlat x nlon) or
 * WRF-like surface fields (Time x south_north x west_east), smooth
 * large-scale structure plus seeded deterministic noise, _FillValue where
 * the mask is 0, and the mask itself copied in as REGION_MASK.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <time.h>

#include <netcdf.h>

#include "cli.h"
#include "copy.h"
#include "raster.h"

#define PROG "rastergen"
#define FILL_F NC_FILL_FLOAT /* 9.96921e+36f, as in CESM POP output */
#define BAND_BYTES ((size_t)16 << 20)
#define BASIS_CACHE_BYTES ((size_t)64 << 20)

static void usage(FILE *f)
{
    fputs(
"usage: rastergen --kind cesm|wrf --mask FILE:VAR --size SIZE [options] OUT.nc\n"
"\n"
"Writes a plain chunked netCDF-4 file of synthetic fields on the grid of the\n"
"2-D region mask VAR of netCDF file FILE: smooth large-scale structure plus\n"
"deterministic noise from a seeded generator, _FillValue (9.96921e+36f) on\n"
"every cell where the mask is 0 (land), CF attributes, coordinates, and the\n"
"mask copied in as REGION_MASK (int32, with its attributes), so that\n"
"`rasterconvert --mask OUT.nc:REGION_MASK` can use the file's own mask.\n"
"\n"
"  --kind cesm       CESM POP-like ocean history file: TEMP (and SALT)\n"
"                    (time, z_t, nlat, nlon) float; time unlimited; z_t in cm;\n"
"                    TAREA (nlat, nlon), each cell's area in cm^2\n"
"  --kind wrf        WRF-like surface output: T2 (and Q2, PSFC)\n"
"                    (Time, south_north, west_east) float; Time unlimited,\n"
"                    hourly records; XTIME and Times\n"
"  --mask FILE:VAR   the region mask (integer, or float with integral values;\n"
"                    FILE is split at the last ':'). Coordinate variables\n"
"                    named in its `coordinates` attribute (e.g. lat/lon,\n"
"                    XLAT/XLONG) are copied; without that attribute, its\n"
"                    latitude and longitude variables on the mask's grid\n"
"                    (1-D over one of its dimensions, or 2-D; found by\n"
"                    standard_name, units or name); without either, a\n"
"                    regular lat/lon grid is made up\n"
"  --size SIZE       bytes per variable, by choosing records (and levels):\n"
"                      tiny    ~3 MB    unit tests (cesm: 3 levels x 2 records\n"
"                                       on a 384x320 grid; at least one level\n"
"                                       and record on big grids)\n"
"                      small   ~32 MB   the demo\n"
"                      medium  ~1 GiB   benchmarks (cesm: 30 levels)\n"
"                      paper   ~2.2 GB  as the RASTER paper's 0.1-degree CESM\n"
"                                       files (cesm: 62 levels, as POP)\n"
"                    not needed when --ntime (and, for cesm, --ndepth) say it\n"
"  --ntime N         number of records (overrides --size)\n"
"  --ndepth N        cesm: number of z_t levels (overrides --size)\n"
"  --vars A,B        variables to write (cesm: TEMP, SALT; wrf: T2, Q2,\n"
"                    PSFC); default TEMP resp. T2\n"
"  --chunk C,...     chunk shape of the variables: H,W (the grid; 1 record\n"
"                    and, for cesm, every level), Z,H,W (cesm) or the full\n"
"                    shape (T,Z,H,W resp. T,H,W). Sizes larger than a fixed\n"
"                    dimension are clipped to it. Default 1 x z_t x 50 x 50\n"
"                    (cesm) resp. 1 x 50 x 50 (wrf), min(50, n) on small grids\n"
"  --seed S          seed of the noise (unsigned 64-bit; default 1). The same\n"
"                    arguments give the same values, whatever the chunking\n"
"  --dry-run         check the arguments and the mask, print the plan, write\n"
"                    nothing\n"
"  --quiet           print nothing but errors\n"
"  --help            this text\n"
"  --version         print raster's version\n"
"\n"
"Before writing, the plan (shape, chunks, bytes) is printed on stdout. Data\n"
"are written band by band (whole chunks: one chunk-row of the grid, or a few,\n"
"of one chunk's records), so memory stays near one band (tens of MB),\n"
"whatever the file size. OUT.nc is written under a temporary name in its\n"
"directory and renamed when complete: on any failure, or on SIGINT/SIGTERM,\n"
"no OUT.nc and no temporary file are left. A progress bar is shown on a\n"
"terminal for runs longer than a second.\n"
"\n"
"Exit status: 0 ok, 1 bad input or I/O error, 2 bad usage.\n", f);
}

/* ---- what can be written ------------------------------------------------ */

enum { KIND_CESM, KIND_WRF };
enum { F_TEMP, F_SALT, F_T2, F_Q2, F_PSFC, NFIELDS };

typedef struct field_def {
    const char *name, *long_name, *units;
    int kind;
} field_def;

static const field_def fields[NFIELDS] = {
    [F_TEMP] = {"TEMP", "Potential Temperature", "degC", KIND_CESM},
    [F_SALT] = {"SALT", "Salinity", "gram/kilogram", KIND_CESM},
    [F_T2] = {"T2", "TEMP at 2 M", "K", KIND_WRF},
    [F_Q2] = {"Q2", "QV at 2 M", "kg kg-1", KIND_WRF},
    [F_PSFC] = {"PSFC", "SFC PRESSURE", "Pa", KIND_WRF},
};

typedef struct size_def {
    const char *name;
    double bytes;  /* target bytes per variable */
    size_t levels; /* cesm: preferred number of levels */
} size_def;

static const size_def sizes[] = {
    {"tiny", 3e6, 3},
    {"small", 32e6, 10},
    {"medium", 1073741824.0, 30},
    {"paper", 2.2e9, 62},
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---- options ------------------------------------------------------------ */

typedef struct options {
    int kind; /* -1 until given */
    char *mask_file, *mask_var;
    const char *mask_spec;
    int size; /* index in sizes[], -1 until given */
    size_t ntime, ndepth;
    int vars[NFIELDS];
    size_t nvars;
    size_t chunk[4], nchunk;
    uint64_t seed;
    int dry_run, quiet;
    const char *out;
} options;

/* ---- the grid's coordinates --------------------------------------------- */

/* A coordinate variable of the mask file (or a made-up one). */
typedef struct coord {
    char name[NC_MAX_NAME + 1];
    int in_var;   /* variable in the mask file, -1 when made up */
    nc_type type;
    int ndims;    /* 1 or 2 */
    int axis;     /* 1-D: 0 = along rows (y), 1 = along columns (x) */
    int is_lat, is_lon;
    double *data; /* ny, nx or ny*nx values */
} coord;

#define MAX_COORDS 8

/* Everything the writer needs. */
typedef struct gen {
    const options *o;
    raster_mask *mask;
    const int32_t *ids;
    size_t ny, nx, nz, nt;
    size_t chunk[4]; /* full rank */
    int rank;        /* 4 cesm, 3 wrf */
    int clipped;
    int mask_nc;     /* mask file, open */
    int mask_varid;
    int mask_dims[2];
    coord coords[MAX_COORDS];
    size_t ncoords;
    const coord *lat, *lon;
    double *depth_m; /* nz level depths (m) */
    float *basis[NFIELDS]; /* whole-grid bases when they fit (see plan) */
    int cached;
    char *history;
    /* output */
    int nc;
    int dim[4];      /* time, [z_t,] y, x (as rank) */
    int strlen_dim;  /* wrf: DateStrLen */
    int varids[NFIELDS];
} gen;

static const char *dim_names[2][4] = {
    [KIND_CESM] = {"time", "z_t", "nlat", "nlon"},
    [KIND_WRF] = {"Time", "south_north", "west_east", NULL},
};

/* ---- deterministic noise ------------------------------------------------ */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Approximately standard normal noise for value number `n` of stream `key`:
 * a counter-based hash, so values do not depend on the order of writing.
 * The sum of four 16-bit uniforms (Irwin-Hall), scaled to unit variance. */
static double noise(uint64_t key, uint64_t n)
{
    uint64_t h = splitmix64(key + n);
    double s = (double)(h & 0xffff) + (double)((h >> 16) & 0xffff) +
               (double)((h >> 32) & 0xffff) + (double)(h >> 48);
    return (s / 65536.0 - 2.0) * 1.7320508075688772;
}

/* ---- the fields --------------------------------------------------------- */

#define DEG (3.14159265358979323846 / 180.0)
#define TWO_PI 6.28318530717958647692

/* The surface (or 2-D) field f is, at each cell and record t,
 *     s0 + p1 cos(a1 w) + q1 sin(a1 w) + p2 cos(a2 w) + q2 sin(a2 w) + u(t)
 * clamped to the field's range, with w = 2 pi t / period (12 monthly records
 * for cesm, a seasonal cycle; 24 hourly records for wrf, a diurnal cycle).
 * The per-cell coefficients (the basis: NB floats) hold the large-scale
 * structure: a meridional profile and a few planetary waves, some of them
 * travelling; they are computed once per cell (or once per band), so a
 * record costs a few multiply-adds per cell. */
#define NB 5

static const double freq[NFIELDS][2] = {
    [F_TEMP] = {1.0, 0.5}, [F_SALT] = {1.0, 0.0}, [F_T2] = {1.0, 0.05},
    [F_Q2] = {1.0, 0.1}, [F_PSFC] = {1.0, 0.3},
};

static double period(int f) { return fields[f].kind == KIND_CESM ? 12 : 24; }

/* Basis of field f at latitude/longitude (degrees). */
static void cell_basis(int f, double lat, double lon, float *b)
{
    double phi = lat * DEG, lam = lon * DEG;
    double c = cos(phi), s = sin(phi), a = fabs(lat);
    double v[NB] = {0, 0, 0, 0, 0};
    switch (f) {
    case F_TEMP: /* 28 c^2 - 1.5 + 1.5 c sin(3 lam + w) - 2 s cos(w)
                    + 0.8 sin(2 phi) cos(2 lam - w/2)
                    + 0.6 cos(5 lam + 3 phi) */
        v[0] = 28.0 * c * c - 1.5 + 0.6 * cos(5.0 * lam + 3.0 * phi);
        v[1] = 1.5 * c * sin(3.0 * lam) - 2.0 * s;
        v[2] = 1.5 * c * cos(3.0 * lam);
        v[3] = 0.8 * sin(2.0 * phi) * cos(2.0 * lam);
        v[4] = 0.8 * sin(2.0 * phi) * sin(2.0 * lam);
        break;
    case F_SALT: /* subtropical maxima, fresher equator and poles,
                    + 0.3 c sin(2 lam + w) + 0.2 cos(4 lam - 2 phi) */
        v[0] = 34.0 + 1.8 * exp(-((a - 25.0) / 12.0) * ((a - 25.0) / 12.0)) -
               0.6 * exp(-(lat / 8.0) * (lat / 8.0)) +
               0.2 * cos(4.0 * lam - 2.0 * phi);
        v[1] = 0.3 * c * sin(2.0 * lam);
        v[2] = 0.3 * c * cos(2.0 * lam);
        break;
    case F_T2: { /* 300 - 0.75 (|lat| - 15) - 5 cos(w + lam) (local solar
                    time) + 3 sin(3 lam + 2 phi - w/20)
                    + 1.5 cos(7 lam - 4 phi) */
        double k = 3.0 * lam + 2.0 * phi;
        v[0] = 300.0 - 0.75 * (a - 15.0) + 1.5 * cos(7.0 * lam - 4.0 * phi);
        v[1] = -5.0 * cos(lam);
        v[2] = 5.0 * sin(lam);
        v[3] = 3.0 * sin(k);
        v[4] = -3.0 * cos(k);
        break;
    }
    case F_Q2: { /* e (1 + 0.1 sin(w + lam) + 0.25 sin(2 lam + 3 phi - w/10)),
                    e = 0.018 exp(-(|lat| - 15) / 18) */
        double e = 0.018 * exp(-(a - 15.0) / 18.0), k = 2.0 * lam + 3.0 * phi;
        v[0] = e;
        v[1] = 0.1 * e * sin(lam);
        v[2] = 0.1 * e * cos(lam);
        v[3] = 0.25 * e * sin(k);
        v[4] = -0.25 * e * cos(k);
        break;
    }
    case F_PSFC: { /* 101325 + 400 cos(5 lam - phi)
                      + 800 sin(2 lam + 3 phi - 0.3 w) + 150 sin(2 w) */
        double k = 2.0 * lam + 3.0 * phi;
        v[0] = 101325.0 + 400.0 * cos(5.0 * lam - phi);
        v[3] = 800.0 * sin(k);
        v[4] = -800.0 * cos(k);
        break;
    }
    default:
        break;
    }
    for (int i = 0; i < NB; i++)
        b[i] = (float)v[i];
}

/* The part of field f that is the same in every cell. */
static double uniform_term(int f, double w)
{
    return f == F_PSFC ? 150.0 * sin(2.0 * w) : 0.0;
}

static double clamp_surface(int f, double v)
{
    if (f == F_TEMP && v < -1.8)
        return -1.8; /* sea water freezes */
    if (f == F_Q2 && v < 2e-4)
        return 2e-4;
    return v;
}

/* Deep value and the depth decay for the cesm fields; the noise amplitude
 * for every field. */
static double deep_value(int f) { return f == F_TEMP ? 1.5 : 34.7; }
static double decay_depth(int f) { return f == F_TEMP ? 700.0 : 500.0; }
static double noise_amp(int f)
{
    switch (f) {
    case F_TEMP: return 0.05;
    case F_SALT: return 0.01;
    case F_T2: return 0.3;
    case F_Q2: return 2e-4;
    default: return 30.0;
    }
}

/* POP-like layer midpoints (m): 5 m at the top, about 5.4 km at the bottom,
 * layers thickening downward. */
static double level_depth(size_t k, size_t n)
{
    if (n <= 1)
        return 5.0;
    double r = (double)k / (double)(n - 1);
    return 5.0 + 5370.0 * (0.85 * r * r + 0.15 * r);
}

static double coord_at(const coord *c, size_t y, size_t x, size_t nx)
{
    if (c->ndims == 2)
        return c->data[y * nx + x];
    return c->data[c->axis == 0 ? y : x];
}

/* Stores the basis of field f for rows [y0, y0 + rows) in b (rows x nx x NB
 * floats); NAN marks the cells where the mask is 0. */
static void compute_basis(const gen *g, int f, size_t y0, size_t rows,
                          float *b)
{
    size_t nx = g->nx;
    for (size_t y = 0; y < rows; y++)
        for (size_t x = 0; x < nx; x++) {
            float *cb = b + (y * nx + x) * NB;
            if (g->ids[(y0 + y) * nx + x] == 0) {
                cb[0] = NAN;
                continue;
            }
            cell_basis(f, coord_at(g->lat, y0 + y, x, nx),
                       coord_at(g->lon, y0 + y, x, nx), cb);
        }
}

/* Fills buf (count_t x nz x rows x nx floats, starting at record t0 and row
 * y0) with field f from the band's basis b. `surf` holds rows x nx floats of
 * scratch. */
static void compute_band(const gen *g, int f, size_t t0, size_t count_t,
                         size_t y0, size_t rows, const float *b, float *buf,
                         float *surf)
{
    size_t nx = g->nx, nz = g->nz, ny = g->ny, n = rows * nx;
    uint64_t key = splitmix64(g->o->seed * 0x100000001b3ULL + (uint64_t)f);
    double amp = noise_amp(f);
    for (size_t t = t0; t < t0 + count_t; t++) {
        float *rec = buf + (t - t0) * nz * n;
        double w = TWO_PI * (double)t / period(f);
        double c1 = cos(freq[f][0] * w), s1 = sin(freq[f][0] * w);
        double c2 = cos(freq[f][1] * w), s2 = sin(freq[f][1] * w);
        double u = uniform_term(f, w);
        for (size_t i = 0; i < n; i++) {
            const float *cb = b + i * NB;
            surf[i] = isnan(cb[0]) ? NAN
                : (float)clamp_surface(f, cb[0] + cb[1] * c1 + cb[2] * s1 +
                                              cb[3] * c2 + cb[4] * s2 + u);
        }
        for (size_t z = 0; z < nz; z++) {
            float *lev = rec + z * n;
            double deep = 0, fac = 1;
            if (g->rank == 4) {
                deep = deep_value(f);
                fac = exp(-g->depth_m[z] / decay_depth(f));
            }
            uint64_t base = ((uint64_t)t * nz + z) * ny * nx + y0 * nx;
            for (size_t i = 0; i < n; i++) {
                if (isnan(surf[i])) {
                    lev[i] = FILL_F;
                    continue;
                }
                double v = g->rank == 4 ? deep + (surf[i] - deep) * fac
                                        : surf[i];
                v += amp * noise(key, base + i);
                if (f == F_Q2 && v < 1e-5)
                    v = 1e-5;
                lev[i] = (float)v;
            }
        }
    }
}

/* ---- argument parsing --------------------------------------------------- */

static int parse_count(const char *flag, const char *text, size_t *out)
{
    size_t n;
    if (cli_parse_sizes(text, out, 1, &n) != 0) {
        fprintf(stderr, PROG ": %s wants a positive integer, got '%s'\n",
                flag, text);
        return -1;
    }
    return 0;
}

static int parse_vars(const char *text, options *o)
{
    o->nvars = 0;
    const char *p = text;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int found = -1;
        for (int f = 0; f < NFIELDS; f++)
            if (strlen(fields[f].name) == len &&
                strncmp(fields[f].name, p, len) == 0)
                found = f;
        if (found < 0) {
            fprintf(stderr, PROG ": --vars: unknown variable '%.*s' (cesm: "
                    "TEMP, SALT; wrf: T2, Q2, PSFC)\n", (int)len, p);
            return -1;
        }
        for (size_t i = 0; i < o->nvars; i++)
            if (o->vars[i] == found) {
                fprintf(stderr, PROG ": --vars: %s given twice\n",
                        fields[found].name);
                return -1;
            }
        if (o->nvars == NFIELDS)
            return -1;
        o->vars[o->nvars++] = found;
        if (!e)
            return 0;
        p = e + 1;
    }
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"kind", required_argument, NULL, 'k'},
        {"mask", required_argument, NULL, 'm'},
        {"size", required_argument, NULL, 's'},
        {"ntime", required_argument, NULL, 't'},
        {"ndepth", required_argument, NULL, 'z'},
        {"vars", required_argument, NULL, 'v'},
        {"chunk", required_argument, NULL, 'c'},
        {"seed", required_argument, NULL, 'S'},
        {"dry-run", no_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    opterr = 0; /* cli_bad_option() words the message */
    while ((opt = getopt_long(argc, argv, CLI_OPTSTRING(""), longopts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            if (strcmp(optarg, "cesm") == 0)
                o->kind = KIND_CESM;
            else if (strcmp(optarg, "wrf") == 0)
                o->kind = KIND_WRF;
            else {
                fprintf(stderr, PROG ": --kind wants cesm or wrf, got '%s'\n",
                        optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'm':
            if (cli_mask_option(PROG, optarg, &o->mask_file,
                                &o->mask_var) != CLI_OK)
                return CLI_EUSAGE;
            o->mask_spec = optarg;
            break;
        case 's':
            o->size = -1;
            for (size_t i = 0; i < NSIZES; i++)
                if (strcmp(optarg, sizes[i].name) == 0)
                    o->size = (int)i;
            if (o->size < 0) {
                fprintf(stderr, PROG ": --size wants tiny, small, medium or "
                        "paper, got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 't':
            if (parse_count("--ntime", optarg, &o->ntime) != 0)
                return CLI_EUSAGE;
            break;
        case 'z':
            if (parse_count("--ndepth", optarg, &o->ndepth) != 0)
                return CLI_EUSAGE;
            break;
        case 'v':
            if (parse_vars(optarg, o) != 0)
                return CLI_EUSAGE;
            break;
        case 'c':
            if (cli_parse_sizes(optarg, o->chunk, 4, &o->nchunk) != 0 ||
                o->nchunk < 2) {
                fprintf(stderr, PROG ": --chunk wants 2 to 4 positive "
                        "integers (H,W; Z,H,W; T,Z,H,W or T,H,W), got '%s'\n",
                        optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'S': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (optarg[0] < '0' || optarg[0] > '9' || errno || *end != '\0') {
                fprintf(stderr, PROG ": --seed wants an unsigned 64-bit "
                        "integer, got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->seed = (uint64_t)v;
            break;
        }
        case 'n': o->dry_run = 1; break;
        case 'q': o->quiet = 1; progress_set_quiet(1); break;
        case 'h': usage(stdout); return -1;
        case 'V': printf(PROG " (raster) %s\n", raster_version_string());
                  return -1;
        default: return cli_bad_option("rastergen", opt, argv);
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, PROG ": want one output file, got %d file "
                "arguments (try --help)\n", argc - optind);
        return CLI_EUSAGE;
    }
    o->out = argv[optind];
    if (o->kind < 0) {
        fprintf(stderr, PROG ": --kind cesm|wrf is required (try --help)\n");
        return CLI_EUSAGE;
    }
    if (!o->mask_file) {
        fprintf(stderr, PROG ": --mask FILE:VAR is required (try --help)\n");
        return CLI_EUSAGE;
    }
    if (o->kind == KIND_WRF && o->ndepth) {
        fprintf(stderr, PROG ": --ndepth goes with --kind cesm (wrf fields "
                "are 2-D)\n");
        return CLI_EUSAGE;
    }
    if (o->size < 0 &&
        !(o->ntime && (o->kind == KIND_WRF || o->ndepth))) {
        fprintf(stderr, PROG ": --size tiny|small|medium|paper is required "
                "(or --ntime%s)\n",
                o->kind == KIND_CESM ? " and --ndepth" : "");
        return CLI_EUSAGE;
    }
    int rank = o->kind == KIND_CESM ? 4 : 3;
    if (o->nchunk > (size_t)rank) {
        fprintf(stderr, PROG ": --chunk: %zu sizes for a %d-D variable\n",
                o->nchunk, rank);
        return CLI_EUSAGE;
    }
    if (o->nvars == 0) {
        o->vars[0] = o->kind == KIND_CESM ? F_TEMP : F_T2;
        o->nvars = 1;
    }
    for (size_t i = 0; i < o->nvars; i++)
        if (fields[o->vars[i]].kind != o->kind) {
            fprintf(stderr, PROG ": --vars: %s is not a %s variable\n",
                    fields[o->vars[i]].name,
                    o->kind == KIND_CESM ? "cesm" : "wrf");
            return CLI_EUSAGE;
        }
    return CLI_OK;
}

/* ---- the mask and its coordinates --------------------------------------- */

static int has_text_att(int nc, int var, const char *att,
                        const char *const *vals)
{
    nc_type t;
    size_t len;
    if (nc_inq_att(nc, var, att, &t, &len) != NC_NOERR || t != NC_CHAR ||
        len == 0 || len > 256)
        return 0;
    char buf[257];
    if (nc_get_att_text(nc, var, att, buf) != NC_NOERR)
        return 0;
    buf[len] = '\0';
    for (const char *const *v = vals; *v; v++)
        if (strcmp(buf, *v) == 0)
            return 1;
    return 0;
}

/* Classifies coordinate c as latitude or longitude by standard_name,
 * units, or (last) name. */
static void classify(int nc, coord *c)
{
    static const char *const lat_sn[] = {"latitude", NULL};
    static const char *const lon_sn[] = {"longitude", NULL};
    static const char *const lat_u[] = {"degrees_north", "degree_north",
        "degree_N", "degrees_N", "degreeN", "degreesN", NULL};
    static const char *const lon_u[] = {"degrees_east", "degree_east",
        "degree_E", "degrees_E", "degreeE", "degreesE", NULL};
    c->is_lat = has_text_att(nc, c->in_var, "standard_name", lat_sn) ||
                has_text_att(nc, c->in_var, "units", lat_u);
    c->is_lon = has_text_att(nc, c->in_var, "standard_name", lon_sn) ||
                has_text_att(nc, c->in_var, "units", lon_u);
    if (!c->is_lat && !c->is_lon) {
        if (strncasecmp(c->name, "lat", 3) == 0 ||
            strncasecmp(c->name, "xlat", 4) == 0 ||
            strncasecmp(c->name, "tlat", 4) == 0)
            c->is_lat = 1;
        else if (strncasecmp(c->name, "lon", 3) == 0 ||
                 strncasecmp(c->name, "xlong", 5) == 0 ||
                 strncasecmp(c->name, "tlong", 5) == 0)
            c->is_lon = 1;
    }
}

static int name_taken(const gen *g, const char *name)
{
    static const char *const fixed[] = {"REGION_MASK", "time", "z_t", "Time",
        "XTIME", "Times", NULL};
    for (const char *const *p = fixed; *p; p++)
        if (strcmp(*p, name) == 0)
            return 1;
    for (int f = 0; f < NFIELDS; f++)
        if (strcmp(fields[f].name, name) == 0)
            return 1;
    for (size_t i = 0; i < g->ncoords; i++)
        if (strcmp(g->coords[i].name, name) == 0)
            return 1;
    return 0;
}

/* Reads the coordinate variables named in the mask's `coordinates`
 * attribute; a named variable that does not lie on the mask's grid is an
 * error (the grids do not match). */
static int load_coords(gen *g)
{
    int nc = g->mask_nc;
    nc_type t;
    size_t len;
    if (nc_inq_att(nc, g->mask_varid, "coordinates", &t, &len) != NC_NOERR ||
        t != NC_CHAR || len == 0)
        return 0;
    char *text = malloc(len + 1);
    if (!text)
        return copy_err("out of memory");
    int st = nc_get_att_text(nc, g->mask_varid, "coordinates", text);
    if (st != NC_NOERR) {
        free(text);
        return copy_ncerr(st, "%s: reading %s:coordinates", g->o->mask_file,
                          g->o->mask_var);
    }
    text[len] = '\0';
    int rc = 0;
    char *save = NULL;
    for (char *name = strtok_r(text, " \t\n", &save); name && rc == 0;
         name = strtok_r(NULL, " \t\n", &save)) {
        int v, nd, dims[NC_MAX_VAR_DIMS];
        nc_type type;
        if (nc_inq_varid(nc, name, &v) != NC_NOERR) {
            fprintf(stderr, PROG ": warning: %s:%s names coordinate %s, which "
                    "the file does not have; ignored\n", g->o->mask_file,
                    g->o->mask_var, name);
            continue;
        }
        if ((st = nc_inq_var(nc, v, NULL, &type, &nd, dims, NULL)) !=
            NC_NOERR) {
            rc = copy_ncerr(st, "%s: coordinate %s", g->o->mask_file, name);
            break;
        }
        if (nd == 0)
            continue; /* a scalar coordinate: not about the grid */
        coord *c = &g->coords[g->ncoords];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", name);
        c->in_var = v;
        c->type = type;
        c->ndims = nd;
        size_t shape[2] = {0, 0};
        for (int d = 0; d < nd && d < 2 && st == NC_NOERR; d++)
            st = nc_inq_dimlen(nc, dims[d], &shape[d]);
        if (st != NC_NOERR) {
            rc = copy_ncerr(st, "%s: coordinate %s", g->o->mask_file, name);
            break;
        }
        if (nd == 1 && (dims[0] == g->mask_dims[0] ||
                        (dims[0] != g->mask_dims[1] && shape[0] == g->ny &&
                         shape[0] != g->nx)))
            c->axis = 0;
        else if (nd == 1 && (dims[0] == g->mask_dims[1] || shape[0] == g->nx))
            c->axis = 1;
        else if (!(nd == 2 && shape[0] == g->ny && shape[1] == g->nx)) {
            char sh[64] = "";
            for (int d = 0; d < nd && d < 2; d++)
                snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%s%zu",
                         d ? " x " : "", shape[d]);
            rc = copy_err("%s: coordinate %s (%s%s) does not match the "
                          "mask's %zu x %zu grid", g->o->mask_file, name,
                          sh, nd > 2 ? " x ..." : "", g->ny, g->nx);
            break;
        }
        if (type == NC_CHAR || type == NC_STRING || type > NC_STRING) {
            rc = copy_err("%s: coordinate %s is not numeric",
                          g->o->mask_file, name);
            break;
        }
        if (g->ncoords == MAX_COORDS) {
            rc = copy_err("%s: more than %d coordinates named in %s",
                          g->o->mask_file, MAX_COORDS, g->o->mask_var);
            break;
        }
        if (name_taken(g, name)) {
            rc = copy_err("%s: coordinate %s has the name of a variable "
                          PROG " writes", g->o->mask_file, name);
            break;
        }
        size_t n = nd == 2 ? g->ny * g->nx : shape[0];
        c->data = malloc(n * sizeof *c->data);
        if (!c->data) {
            rc = copy_err("out of memory");
            break;
        }
        g->ncoords++;
        if ((st = nc_get_var_double(nc, v, c->data)) != NC_NOERR) {
            rc = copy_ncerr(st, "%s: reading coordinate %s", g->o->mask_file,
                            name);
            break;
        }
        classify(nc, c);
        if (c->is_lat && !g->lat)
            g->lat = c;
        else if (c->is_lon && !g->lon)
            g->lon = c;
    }
    free(text);
    return rc;
}

/* When the mask's `coordinates` attribute gave no latitude or no
 * longitude: the mask file's own variables on its grid that are one (by
 * standard_name, units or name), 1-D over one of the mask's dimensions
 * (lat(lat), lon(lon)) or 2-D over both (TLAT, XLAT), as CF software
 * finds them; the first of each. */
static int scan_coords(gen *g)
{
    int nc = g->mask_nc, nv, st;
    if ((st = nc_inq_nvars(nc, &nv)) != NC_NOERR)
        return copy_ncerr(st, "%s: listing variables", g->o->mask_file);
    for (int v = 0; v < nv && (!g->lat || !g->lon); v++) {
        int nd, dims[NC_MAX_VAR_DIMS];
        nc_type type;
        coord c = {.in_var = v};
        if (v == g->mask_varid ||
            nc_inq_var(nc, v, c.name, &type, &nd, dims, NULL) != NC_NOERR ||
            type == NC_CHAR || type >= NC_STRING || name_taken(g, c.name))
            continue;
        if (nd == 1 && (dims[0] == g->mask_dims[0] ||
                        dims[0] == g->mask_dims[1]))
            c.axis = dims[0] == g->mask_dims[1];
        else if (!(nd == 2 && dims[0] == g->mask_dims[0] &&
                   dims[1] == g->mask_dims[1]))
            continue;
        classify(nc, &c);
        if (!((c.is_lat && !g->lat) || (c.is_lon && !g->lon)))
            continue;
        if (g->ncoords == MAX_COORDS)
            return copy_err("%s: too many coordinates", g->o->mask_file);
        c.type = type;
        c.ndims = nd;
        size_t n = nd == 2 ? g->ny * g->nx : c.axis ? g->nx : g->ny;
        if (!(c.data = malloc(n * sizeof *c.data)))
            return copy_err("out of memory");
        coord *k = &g->coords[g->ncoords++];
        *k = c;
        if ((st = nc_get_var_double(nc, v, k->data)) != NC_NOERR)
            return copy_ncerr(st, "%s: reading coordinate %s",
                              g->o->mask_file, k->name);
        if (k->is_lat)
            g->lat = k;
        else
            g->lon = k;
    }
    return 0;
}

/* Makes up coordinates for a mask file without usable ones: a regular
 * lat/lon grid (cesm: 1-D lat, lon as the bundled basin masks, columns from
 * 320E; wrf: 2-D XLAT, XLONG over 20-55N, 130-60W). */
static int make_coords(gen *g)
{
    int wrf = g->o->kind == KIND_WRF;
    const char *names[2] = {wrf ? "XLAT" : "lat", wrf ? "XLONG" : "lon"};
    for (int k = 0; k < 2; k++) {
        if ((k == 0 && g->lat) || (k == 1 && g->lon))
            continue;
        if (g->ncoords == MAX_COORDS)
            return copy_err("too many coordinates");
        char name[NC_MAX_NAME + 1];
        snprintf(name, sizeof name, "%s", names[k]);
        while (name_taken(g, name) && strlen(name) < NC_MAX_NAME)
            strcat(name, "_");
        coord *c = &g->coords[g->ncoords];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", name);
        c->in_var = -1;
        c->type = wrf ? NC_FLOAT : NC_DOUBLE;
        c->ndims = wrf ? 2 : 1;
        c->axis = k;
        c->is_lat = k == 0;
        c->is_lon = k == 1;
        size_t n = wrf ? g->ny * g->nx : (k == 0 ? g->ny : g->nx);
        c->data = malloc(n * sizeof *c->data);
        if (!c->data)
            return copy_err("out of memory");
        g->ncoords++;
        for (size_t y = 0; y < (wrf || k == 0 ? g->ny : 1); y++)
            for (size_t x = 0; x < (wrf || k == 1 ? g->nx : 1); x++) {
                double v;
                if (wrf)
                    v = k == 0
                            ? 20.0 + 35.0 * ((double)y + 0.5) / (double)g->ny
                            : -130.0 + 70.0 * ((double)x + 0.5) / (double)g->nx;
                else if (k == 0)
                    v = -79.0 + 168.0 * ((double)y + 0.5) / (double)g->ny;
                else
                    v = fmod(320.0 + 360.0 * ((double)x + 0.5) / (double)g->nx,
                             360.0);
                c->data[wrf ? y * g->nx + x : (k == 0 ? y : x)] = v;
            }
        if (k == 0)
            g->lat = c;
        else
            g->lon = c;
    }
    return 0;
}

static int open_mask(gen *g)
{
    const options *o = g->o;
    int rc = raster_mask_load(o->mask_file, o->mask_var, &g->mask);
    if (rc != RASTER_OK)
        return copy_err("mask %s: %s: %s", o->mask_spec, raster_strerror(rc),
                        raster_errmsg());
    raster_mask_shape(g->mask, &g->ny, &g->nx);
    g->ids = raster_mask_values(g->mask);
    int st = nc_open(o->mask_file, NC_NOWRITE, &g->mask_nc);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s", o->mask_file);
    st = nc_inq_varid(g->mask_nc, o->mask_var, &g->mask_varid);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s: %s", o->mask_file, o->mask_var);
    st = nc_inq_vardimid(g->mask_nc, g->mask_varid, g->mask_dims);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s: %s", o->mask_file, o->mask_var);
    if (load_coords(g) != 0 || scan_coords(g) != 0 || make_coords(g) != 0)
        return -1;
    return 0;
}

/* ---- the plan ----------------------------------------------------------- */

static int plan(gen *g)
{
    const options *o = g->o;
    int cesm = o->kind == KIND_CESM;
    g->rank = cesm ? 4 : 3;
    double level_bytes = (double)g->ny * (double)g->nx * 4.0;
    double n = 1;
    if (o->size >= 0) {
        n = floor(sizes[o->size].bytes / level_bytes + 0.5);
        if (n < 1)
            n = 1;
    }
    if (cesm) {
        g->nz = o->ndepth;
        if (!g->nz) {
            double pref = (double)sizes[o->size].levels;
            g->nz = (size_t)(n < pref ? n : pref);
        }
    } else {
        g->nz = 1;
    }
    g->nt = o->ntime;
    if (!g->nt) {
        double t = floor(n / (double)g->nz + 0.5);
        g->nt = t < 1 ? 1 : (size_t)t;
    }
    /* chunk shape: defaults, then --chunk on the last dimensions */
    size_t *ch = g->chunk;
    size_t full[4];
    if (cesm) {
        size_t c[4] = {1, g->nz, g->ny < 50 ? g->ny : 50,
                       g->nx < 50 ? g->nx : 50};
        size_t f[4] = {g->nt, g->nz, g->ny, g->nx};
        memcpy(ch, c, sizeof c);
        memcpy(full, f, sizeof f);
    } else {
        size_t c[3] = {1, g->ny < 50 ? g->ny : 50, g->nx < 50 ? g->nx : 50};
        size_t f[3] = {g->nt, g->ny, g->nx};
        memcpy(ch, c, sizeof c);
        memcpy(full, f, sizeof f);
    }
    for (size_t i = 0; i < o->nchunk; i++)
        ch[(size_t)g->rank - o->nchunk + i] = o->chunk[i];
    for (int d = 1; d < g->rank; d++)
        if (ch[d] > full[d]) {
            ch[d] = full[d];
            g->clipped = 1;
        }
    /* sizes that overflow or that HDF5 cannot chunk */
    size_t total = 4, cbytes = 4;
    for (int d = 0; d < g->rank; d++) {
        if (__builtin_mul_overflow(total, full[d], &total) ||
            __builtin_mul_overflow(cbytes, ch[d], &cbytes))
            return copy_err("the variable is too large (%zu x %zu cells, "
                            "%zu records)", g->ny, g->nx, g->nt);
    }
    if (cbytes >= ((size_t)4 << 30))
        return copy_err("chunks of %zu bytes: HDF5 chunks must be smaller "
                        "than 4 GiB", cbytes);
    /* the fields' bases of the whole grid, computed once, when they are
     * small (every wrf grid of the bundled masks, cesm up to ~800 x 800) */
    g->cached = g->ny * g->nx * NB * sizeof(float) * o->nvars <=
                BASIS_CACHE_BYTES;
    g->depth_m = malloc(g->nz * sizeof *g->depth_m);
    if (!g->depth_m)
        return copy_err("out of memory");
    for (size_t k = 0; k < g->nz; k++)
        g->depth_m[k] = level_depth(k, g->nz);
    return 0;
}

static size_t var_bytes(const gen *g)
{
    return g->nt * g->nz * g->ny * g->nx * sizeof(float);
}

/* Rows per band: whole chunk-rows, about BAND_BYTES of one chunk's records. */
static size_t band_rows(const gen *g)
{
    size_t ch = g->chunk[g->rank - 2];
    size_t ct = g->chunk[0] < g->nt ? g->chunk[0] : g->nt;
    size_t row_bytes = ct * g->nz * ch * g->nx * sizeof(float);
    size_t k = row_bytes ? BAND_BYTES / row_bytes : 1;
    if (k < 1)
        k = 1;
    if (!g->cached) {
        /* a band's basis too stays within BAND_BYTES */
        size_t kb = BAND_BYTES / (ch * g->nx * NB * sizeof(float));
        if (kb < k)
            k = kb < 1 ? 1 : kb;
    }
    size_t rows = k * ch;
    return rows < g->ny ? rows : g->ny;
}

/* "123.4 MB" (decimal units, as disk sizes are quoted). */
static const char *human(double bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

static void print_plan(const gen *g)
{
    const options *o = g->o;
    const char *const *dn = dim_names[o->kind];
    char shape[256], chunk[64];
    size_t full[4] = {g->nt, g->nz, g->ny, g->nx};
    int r = g->rank;
    size_t fd[4];
    if (r == 4)
        memcpy(fd, full, sizeof fd);
    else {
        fd[0] = g->nt;
        fd[1] = g->ny;
        fd[2] = g->nx;
    }
    shape[0] = chunk[0] = '\0';
    for (int d = 0; d < r; d++) {
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape),
                 "%s%s=%zu", d ? ", " : "", dn[d], fd[d]);
        snprintf(chunk + strlen(chunk), sizeof chunk - strlen(chunk),
                 "%s%zu", d ? " x " : "", g->chunk[d]);
    }
    size_t vb = var_bytes(g);
    size_t rows = band_rows(g);
    size_t ct = g->chunk[0] < g->nt ? g->chunk[0] : g->nt;
    size_t band = ct * g->nz * rows * g->nx * sizeof(float);
    size_t land = 0;
    for (size_t i = 0; i < g->ny * g->nx; i++)
        land += g->ids[i] == 0;
    printf("%s %s: %s, grid %zu x %zu of %s (%.1f%% id 0, filled), seed "
           "%" PRIu64 "\n", o->dry_run ? "would write" : "writing", o->out,
           o->kind == KIND_CESM ? "cesm" : "wrf", g->ny, g->nx, o->mask_spec,
           100.0 * (double)land / (double)(g->ny * g->nx), o->seed);
    char h1[32], h2[32], h3[32];
    for (size_t i = 0; i < o->nvars; i++)
        printf("  %s(%s) float, chunks %s: %zu bytes (%s)\n",
               fields[o->vars[i]].name, shape, chunk, vb,
               human((double)vb, h1, sizeof h1));
    printf("  data %s in %zu variable%s%s; written in bands of %zu rows "
           "(%s buffer)\n", human((double)vb * (double)o->nvars, h2,
           sizeof h2), o->nvars, o->nvars == 1 ? "" : "s",
           g->clipped ? " (--chunk clipped to the dimensions)" : "", rows,
           human((double)band, h3, sizeof h3));
    fflush(stdout);
}

/* ---- writing ------------------------------------------------------------ */

static int put_text(int nc, int var, const char *name, const char *text)
{
    int st = nc_put_att_text(nc, var, name, strlen(text), text);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing attribute %s", name);
    return 0;
}

static int put_float(int nc, int var, const char *name, float v)
{
    int st = nc_put_att_float(nc, var, name, NC_FLOAT, 1, &v);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing attribute %s", name);
    return 0;
}

/* Defines REGION_MASK (int32) with the mask variable's attributes: copied
 * as they are for an int mask; for other types, value attributes are
 * converted to int and fill/missing values dropped. */
static int define_mask(gen *g, int *varid)
{
    int nc = g->nc, in = g->mask_nc, iv = g->mask_varid;
    int dims[2] = {g->dim[g->rank - 2], g->dim[g->rank - 1]};
    int st = nc_def_var(nc, "REGION_MASK", NC_INT, 2, dims, varid);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining REGION_MASK");
    size_t mch[2] = {g->ny < 512 ? g->ny : 512, g->nx < 512 ? g->nx : 512};
    st = nc_def_var_chunking(nc, *varid, NC_CHUNKED, mch);
    if (st != NC_NOERR)
        return copy_ncerr(st, "REGION_MASK chunking");
    st = nc_def_var_deflate(nc, *varid, 1, 1, 1);
    if (st != NC_NOERR)
        return copy_ncerr(st, "REGION_MASK deflate");
    nc_type t;
    st = nc_inq_vartype(in, iv, &t);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s", g->o->mask_var);
    int natts;
    st = nc_inq_varnatts(in, iv, &natts);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s", g->o->mask_var);
    static const char *const valued[] = {"valid_min", "valid_max",
        "valid_range", "flag_values", "flag_masks", "actual_range", NULL};
    for (int i = 0; i < natts; i++) {
        char name[NC_MAX_NAME + 1];
        st = nc_inq_attname(in, iv, i, name);
        if (st != NC_NOERR)
            return copy_ncerr(st, "%s", g->o->mask_var);
        if (t == NC_INT) {
            st = nc_copy_att(in, iv, name, nc, *varid);
            if (st != NC_NOERR)
                return copy_ncerr(st, "copying %s:%s", g->o->mask_var, name);
            continue;
        }
        if (strcmp(name, "_FillValue") == 0 ||
            strcmp(name, "missing_value") == 0)
            continue;
        int is_valued = 0;
        for (const char *const *p = valued; *p; p++)
            is_valued |= strcmp(*p, name) == 0;
        if (!is_valued) {
            st = nc_copy_att(in, iv, name, nc, *varid);
            if (st != NC_NOERR)
                return copy_ncerr(st, "copying %s:%s", g->o->mask_var, name);
            continue;
        }
        size_t len;
        st = nc_inq_attlen(in, iv, name, &len);
        if (st != NC_NOERR)
            return copy_ncerr(st, "%s:%s", g->o->mask_var, name);
        int *v = malloc((len ? len : 1) * sizeof *v);
        if (!v)
            return copy_err("out of memory");
        int st = nc_get_att_int(in, iv, name, v);
        if (st == NC_NOERR)
            st = nc_put_att_int(nc, *varid, name, NC_INT, len, v);
        free(v);
        if (st != NC_NOERR)
            return copy_ncerr(st, "copying %s:%s as int", g->o->mask_var,
                              name);
    }
    /* made-up coordinates: say so in the mask's coordinates attribute */
    if (nc_inq_att(nc, *varid, "coordinates", NULL, NULL) != NC_NOERR) {
        char buf[2 * NC_MAX_NAME + 2];
        snprintf(buf, sizeof buf, "%s %s", g->lon->name, g->lat->name);
        if (put_text(nc, *varid, "coordinates", buf) != 0)
            return -1;
    }
    return 0;
}

static int define_coords(gen *g, int *varids)
{
    int nc = g->nc, st;
    int ydim = g->dim[g->rank - 2], xdim = g->dim[g->rank - 1];
    for (size_t i = 0; i < g->ncoords; i++) {
        coord *c = &g->coords[i];
        int dims[2] = {ydim, xdim};
        if (c->ndims == 1)
            dims[0] = c->axis == 0 ? ydim : xdim;
        st = nc_def_var(nc, c->name, c->type, c->ndims, dims, &varids[i]);
        if (st != NC_NOERR)
            return copy_ncerr(st, "defining %s", c->name);
        if (c->in_var >= 0) {
            if (copy_atts(g->mask_nc, c->in_var, nc, varids[i], NULL) != 0)
                return -1;
            continue;
        }
        int v = varids[i];
        if (g->o->kind == KIND_WRF) {
            int ft = 104;
            st = nc_put_att_int(nc, v, "FieldType", NC_INT, 1, &ft);
            if (st != NC_NOERR)
                return copy_ncerr(st, "FieldType");
            if (put_text(nc, v, "MemoryOrder", "XY ") != 0 ||
                put_text(nc, v, "description", c->is_lat ?
                         "LATITUDE, SOUTH IS NEGATIVE" :
                         "LONGITUDE, WEST IS NEGATIVE") != 0 ||
                put_text(nc, v, "stagger", "") != 0)
                return -1;
        }
        if (put_text(nc, v, "long_name", c->is_lat ?
                     "latitude of cell centre (made up by " PROG ")" :
                     "longitude of cell centre (made up by " PROG ")") != 0 ||
            put_text(nc, v, "standard_name",
                     c->is_lat ? "latitude" : "longitude") != 0 ||
            put_text(nc, v, "units",
                     c->is_lat ? "degrees_north" : "degrees_east") != 0)
            return -1;
    }
    return 0;
}

/* cesm: TAREA(nlat, nlon), double, POP's name, units and long name. */
static int define_area(gen *g, int *varid)
{
    int dims[2] = {g->dim[g->rank - 2], g->dim[g->rank - 1]};
    int st = nc_def_var(g->nc, "TAREA", NC_DOUBLE, 2, dims, varid);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining TAREA");
    char coords[2 * NC_MAX_NAME + 2];
    snprintf(coords, sizeof coords, "%s %s", g->lon->name, g->lat->name);
    if (put_text(g->nc, *varid, "long_name", "area of T cells") != 0 ||
        put_text(g->nc, *varid, "units", "centimeter^2") != 0 ||
        put_text(g->nc, *varid, "coordinates", coords) != 0)
        return -1;
    return 0;
}

static int define_fields(gen *g)
{
    int nc = g->nc, cesm = g->o->kind == KIND_CESM;
    int st;
    char coords[3 * NC_MAX_NAME + 16];
    snprintf(coords, sizeof coords, cesm ? "%s %s z_t time" : "%s %s XTIME",
             g->lon->name, g->lat->name);
    for (size_t i = 0; i < g->o->nvars; i++) {
        int f = g->o->vars[i], v;
        const field_def *fd = &fields[f];
        st = nc_def_var(nc, fd->name, NC_FLOAT, g->rank, g->dim, &v);
        if (st != NC_NOERR)
            return copy_ncerr(st, "defining %s", fd->name);
        g->varids[f] = v;
        st = nc_def_var_chunking(nc, v, NC_CHUNKED, g->chunk);
        if (st != NC_NOERR)
            return copy_ncerr(st, "chunking %s", fd->name);
        float fill = FILL_F;
        st = nc_def_var_fill(nc, v, NC_FILL, &fill);
        if (st != NC_NOERR)
            return copy_ncerr(st, "%s fill value", fd->name);
        if (!cesm) {
            int ft = 104;
            st = nc_put_att_int(nc, v, "FieldType", NC_INT, 1, &ft);
            if (st != NC_NOERR)
                return copy_ncerr(st, "FieldType");
            if (put_text(nc, v, "MemoryOrder", "XY ") != 0 ||
                put_text(nc, v, "description", fd->long_name) != 0)
                return -1;
        }
        if (put_text(nc, v, "long_name", fd->long_name) != 0 ||
            put_text(nc, v, "units", fd->units) != 0 ||
            put_text(nc, v, "coordinates", coords) != 0)
            return -1;
        if (cesm) {
            if (put_text(nc, v, "grid_loc", "3111") != 0 ||
                put_text(nc, v, "cell_methods", "time: mean") != 0 ||
                put_float(nc, v, "missing_value", fill) != 0)
                return -1;
        } else if (put_text(nc, v, "stagger", "") != 0) {
            return -1;
        }
    }
    return 0;
}

static int put_globals(gen *g)
{
    int nc = g->nc, cesm = g->o->kind == KIND_CESM;
    char title[512];
    snprintf(title, sizeof title, "Synthetic %s on the grid of %s",
             cesm ? "CESM POP-like ocean history fields" :
                    "WRF-like surface output",
             g->o->mask_spec);
    char comment[512];
    snprintf(comment, sizeof comment,
             "Synthetic values, not model output: smooth large-scale "
             "structure (meridional profile, %s cycle, planetary waves%s) "
             "plus deterministic noise (seed %" PRIu64 "); _FillValue where "
             "REGION_MASK == 0. Size preset: %s.",
             cesm ? "seasonal" : "diurnal",
             cesm ? ", exponential decay with depth" : "", g->o->seed,
             g->o->size >= 0 ? sizes[g->o->size].name : "none");
    if (put_text(nc, NC_GLOBAL, "Conventions", "CF-1.8") != 0 ||
        put_text(nc, NC_GLOBAL, "title", title) != 0 ||
        put_text(nc, NC_GLOBAL, "source", PROG " (raster)") != 0 ||
        put_text(nc, NC_GLOBAL, "history", g->history) != 0 ||
        put_text(nc, NC_GLOBAL, "comment", comment) != 0)
        return -1;
    unsigned long long seed = g->o->seed;
    int st = nc_put_att_ulonglong(nc, NC_GLOBAL, "rastergen_seed", NC_UINT64,
                                  1, &seed);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing rastergen_seed");
    if (cesm)
        return 0;
    /* WRF namelist attributes of an admin mask's grid */
    static const char *const wrf_atts[] = {"MAP_PROJ", "MAP_PROJ_CHAR",
        "CEN_LAT", "CEN_LON", "TRUELAT1", "TRUELAT2", "STAND_LON", "DX",
        "DY", "WEST_EAST_GRID_DIMENSION", "SOUTH_NORTH_GRID_DIMENSION", NULL};
    for (const char *const *p = wrf_atts; *p; p++)
        if (nc_inq_att(g->mask_nc, NC_GLOBAL, *p, NULL, NULL) == NC_NOERR) {
            st = nc_copy_att(g->mask_nc, NC_GLOBAL, *p, nc, NC_GLOBAL);
            if (st != NC_NOERR)
                return copy_ncerr(st, "copying global attribute %s", *p);
        }
    return 0;
}

/* Civil date of day number `days` since 1970-01-01 (Howard Hinnant's
 * algorithm). */
static void civil(long days, int *y, int *m, int *d)
{
    days += 719468;
    long era = (days >= 0 ? days : days - 146096) / 146097;
    long doe = days - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Defines and writes the time and depth coordinates. */
static int define_time(gen *g, int *tvar, int *zvar, int *svar)
{
    int nc = g->nc, st;
    *zvar = *svar = -1;
    if (g->o->kind == KIND_CESM) {
        st = nc_def_var(nc, "time", NC_DOUBLE, 1, &g->dim[0], tvar);
        if (st != NC_NOERR)
            return copy_ncerr(st, "defining time");
        if (put_text(nc, *tvar, "long_name", "time") != 0 ||
            put_text(nc, *tvar, "units", "days since 0001-01-01 00:00:00") !=
                0 ||
            put_text(nc, *tvar, "calendar", "noleap") != 0 ||
            put_text(nc, *tvar, "comment", "middle of monthly means") != 0)
            return -1;
        st = nc_def_var(nc, "z_t", NC_FLOAT, 1, &g->dim[1], zvar);
        if (st != NC_NOERR)
            return copy_ncerr(st, "defining z_t");
        if (put_text(nc, *zvar, "long_name",
                     "depth from surface to midpoint of layer") != 0 ||
            put_text(nc, *zvar, "units", "centimeters") != 0 ||
            put_text(nc, *zvar, "positive", "down") != 0)
            return -1;
        return 0;
    }
    st = nc_def_dim(nc, "DateStrLen", 19, &g->strlen_dim);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining DateStrLen");
    int dims[2] = {g->dim[0], g->strlen_dim};
    st = nc_def_var(nc, "Times", NC_CHAR, 2, dims, svar);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining Times");
    st = nc_def_var(nc, "XTIME", NC_FLOAT, 1, &g->dim[0], tvar);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining XTIME");
    int ft = 0;
    st = nc_put_att_int(nc, *tvar, "FieldType", NC_INT, 1, &ft);
    if (st != NC_NOERR)
        return copy_ncerr(st, "FieldType");
    if (put_text(nc, *tvar, "MemoryOrder", "0  ") != 0 ||
        put_text(nc, *tvar, "description",
                 "minutes since 2000-01-01 00:00:00") != 0 ||
        put_text(nc, *tvar, "long_name", "time") != 0 ||
        put_text(nc, *tvar, "units", "minutes since 2000-01-01 00:00:00") !=
            0 ||
        put_text(nc, *tvar, "calendar", "standard") != 0 ||
        put_text(nc, *tvar, "stagger", "") != 0)
        return -1;
    return 0;
}

static int write_time(gen *g, int tvar, int zvar, int svar)
{
    int nc = g->nc, st;
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30,
                                  31};
    for (size_t t = 0; t < g->nt; t++) {
        size_t start[2] = {t, 0}, count[2] = {1, 19};
        if (g->o->kind == KIND_CESM) {
            double day = 365.0 * (double)(t / 12);
            for (size_t m = 0; m < t % 12; m++)
                day += mdays[m];
            day += mdays[t % 12] / 2.0;
            st = nc_put_var1_double(nc, tvar, start, &day);
            if (st != NC_NOERR)
                return copy_ncerr(st, "writing time");
            continue;
        }
        float minutes = (float)(60.0 * (double)t);
        st = nc_put_var1_float(nc, tvar, start, &minutes);
        if (st != NC_NOERR)
            return copy_ncerr(st, "writing XTIME");
        int y, m, d;
        civil(10957 + (long)(t / 24), &y, &m, &d); /* 2000-01-01 */
        char stamp[32];
        snprintf(stamp, sizeof stamp, "%04d-%02d-%02d_%02d:00:00", y, m, d,
                 (int)(t % 24));
        st = nc_put_vara_text(nc, svar, start, count, stamp);
        if (st != NC_NOERR)
            return copy_ncerr(st, "writing Times");
    }
    if (zvar >= 0) {
        float *z = malloc(g->nz * sizeof *z);
        if (!z)
            return copy_err("out of memory");
        for (size_t k = 0; k < g->nz; k++)
            z[k] = (float)(100.0 * g->depth_m[k]);
        st = nc_put_var_float(nc, zvar, z);
        free(z);
        if (st != NC_NOERR)
            return copy_ncerr(st, "writing z_t");
    }
    return 0;
}

static int write_fields(gen *g, copy_progress *p)
{
    size_t rows_max = band_rows(g), nx = g->nx, nz = g->nz;
    size_t ct = g->chunk[0] < g->nt ? g->chunk[0] : g->nt;
    float *buf = malloc(ct * nz * rows_max * nx * sizeof *buf);
    float *surf = malloc(rows_max * nx * sizeof *surf);
    float *scratch = NULL;
    int rc = 0;
    if (!buf || !surf)
        rc = copy_err("out of memory (a band of %zu bytes)",
                      ct * nz * rows_max * nx * sizeof *buf);
    for (size_t i = 0; rc == 0 && i < g->o->nvars; i++) {
        int f = g->o->vars[i];
        float **b = g->cached ? &g->basis[f] : (i == 0 ? &scratch : NULL);
        if (!b)
            continue;
        size_t cells = (g->cached ? g->ny : rows_max) * nx;
        *b = malloc(cells * NB * sizeof **b);
        if (!*b)
            rc = copy_err("out of memory");
        else if (g->cached)
            compute_basis(g, f, 0, g->ny, *b);
    }
    for (size_t t0 = 0; rc == 0 && t0 < g->nt; t0 += ct) {
        size_t nt = g->nt - t0 < ct ? g->nt - t0 : ct;
        for (size_t y0 = 0; rc == 0 && y0 < g->ny; y0 += rows_max) {
            size_t rows = g->ny - y0 < rows_max ? g->ny - y0 : rows_max;
            size_t start[4], count[4];
            if (g->rank == 4) {
                size_t s[4] = {t0, 0, y0, 0}, c[4] = {nt, nz, rows, nx};
                memcpy(start, s, sizeof s);
                memcpy(count, c, sizeof c);
            } else {
                size_t s[3] = {t0, y0, 0}, c[3] = {nt, rows, nx};
                memcpy(start, s, sizeof s);
                memcpy(count, c, sizeof c);
            }
            for (size_t i = 0; rc == 0 && i < g->o->nvars; i++) {
                int f = g->o->vars[i];
                const float *b;
                if (g->cached) {
                    b = g->basis[f] + y0 * nx * NB;
                } else {
                    compute_basis(g, f, y0, rows, scratch);
                    b = scratch;
                }
                compute_band(g, f, t0, nt, y0, rows, b, buf, surf);
                int st = nc_put_vara_float(g->nc, g->varids[f], start, count,
                                           buf);
                if (st != NC_NOERR)
                    rc = copy_ncerr(st, "writing %s records %zu-%zu rows "
                                    "%zu-%zu", fields[f].name, t0,
                                    t0 + nt - 1, y0, y0 + rows - 1);
                else
                    copy_progress_add(p, nt * nz * rows * nx * sizeof *buf);
            }
        }
    }
    free(buf);
    free(surf);
    free(scratch);
    return rc;
}

/* The latitude of cell (y, x), from the 1-D or 2-D latitude. */
static double lat_at(const gen *g, size_t y, size_t x)
{
    const coord *c = g->lat;
    return c->ndims == 1 ? c->data[y] : c->data[y * g->nx + x];
}

/* cesm: TAREA, each cell's area on a sphere of the Earth's radius (cm^2,
 * as POP writes it), from the latitudes of the cell's row and its
 * neighbours and an even longitude step (360 / nx degrees): the weights
 * a regional mean takes (raster_region_statistics, rasterbench). */
static double *cell_areas(const gen *g)
{
    const double r = 6.371e8, d2r = M_PI / 180.0;
    double *a = malloc(g->ny * g->nx * sizeof *a);
    if (!a)
        return NULL;
    double dlon = 2.0 * M_PI / (double)g->nx;
    for (size_t y = 0; y < g->ny; y++)
        for (size_t x = 0; x < g->nx; x++) {
            double phi = lat_at(g, y, x);
            /* the cell's edges halfway to its neighbours (mirrored at the
             * grid's first and last rows) */
            double lo = y > 0 ? lat_at(g, y - 1, x)
                              : 2 * phi - (g->ny > 1 ? lat_at(g, 1, x) : phi - 1);
            double hi = y + 1 < g->ny ? lat_at(g, y + 1, x)
                                      : 2 * phi - (g->ny > 1 ? lat_at(g, y - 1, x) : phi + 1);
            double s = (phi + lo) / 2, n = (phi + hi) / 2;
            if (s > 90) s = 90;
            if (s < -90) s = -90;
            if (n > 90) n = 90;
            if (n < -90) n = -90;
            a[y * g->nx + x] = r * r * dlon * fabs(sin(n * d2r) - sin(s * d2r));
        }
    return a;
}

static int write_file(gen *g, const char *path)
{
    const char *const *dn = dim_names[g->o->kind];
    int st = nc_create(path, NC_NETCDF4 | NC_CLOBBER, &g->nc);
    if (st != NC_NOERR)
        return copy_ncerr(st, "creating %s", g->o->out);
    int cesm = g->o->kind == KIND_CESM;
    st = nc_def_dim(g->nc, dn[0], NC_UNLIMITED, &g->dim[0]);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining %s", dn[0]);
    if (cesm) {
        st = nc_def_dim(g->nc, dn[1], g->nz, &g->dim[1]);
        if (st != NC_NOERR)
            return copy_ncerr(st, "defining %s", dn[1]);
    }
    st = nc_def_dim(g->nc, dn[cesm ? 2 : 1], g->ny, &g->dim[g->rank - 2]);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining %s", dn[cesm ? 2 : 1]);
    st = nc_def_dim(g->nc, dn[cesm ? 3 : 2], g->nx, &g->dim[g->rank - 1]);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining %s", dn[cesm ? 3 : 2]);
    int tvar, zvar, svar, mvar, avar = -1, cvars[MAX_COORDS];
    if (define_time(g, &tvar, &zvar, &svar) != 0 ||
        define_coords(g, cvars) != 0 || define_mask(g, &mvar) != 0 ||
        (cesm && define_area(g, &avar) != 0) ||
        define_fields(g) != 0 || put_globals(g) != 0)
        return -1;
    st = nc_enddef(g->nc);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing the header of %s", g->o->out);
    if (write_time(g, tvar, zvar, svar) != 0)
        return -1;
    for (size_t i = 0; i < g->ncoords; i++) {
        st = nc_put_var_double(g->nc, cvars[i], g->coords[i].data);
        if (st != NC_NOERR)
            return copy_ncerr(st, "writing %s", g->coords[i].name);
    }
    st = nc_put_var_int(g->nc, mvar, g->ids);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing REGION_MASK");
    if (avar >= 0) {
        double *area = cell_areas(g);
        if (!area)
            return copy_err("out of memory");
        st = nc_put_var_double(g->nc, avar, area);
        free(area);
        if (st != NC_NOERR)
            return copy_ncerr(st, "writing TAREA");
    }
    copy_progress prog;
    copy_progress_init(&prog, (unsigned long long)var_bytes(g) *
                                  g->o->nvars);
    int rc = write_fields(g, &prog);
    copy_progress_end(&prog);
    if (rc != 0)
        return -1;
    st = nc_close(g->nc);
    g->nc = -1;
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing %s", g->o->out);
    return 0;
}

/* The command line, for the history attribute (arguments with spaces or
 * quotes single-quoted). */
static char *command_line(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++)
        len += 4 * strlen(argv[i]) + 3;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int quote = a[0] == '\0' || strpbrk(a, " \t\n'\"\\$*?;&|<>()") != NULL;
        if (i)
            *p++ = ' ';
        if (quote)
            *p++ = '\'';
        for (; *a; a++) {
            if (quote && *a == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = *a;
            }
        }
        if (quote)
            *p++ = '\'';
    }
    *p = '\0';
    return s;
}

/* Fails when the output's file system has clearly too little space. */
static int check_space(const gen *g)
{
    const char *out = g->o->out, *slash = strrchr(out, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - out) + 1, out);
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0)
        return 0; /* the create will say what is wrong */
    double avail = (double)sv.f_bavail * (double)sv.f_frsize;
    double need = (double)var_bytes(g) * (double)g->o->nvars;
    if (need > avail)
        return copy_err("%s needs about %.3g GB, %s has %.3g GB free", out,
                        need / 1e9, dir, avail / 1e9);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    options o = {.kind = -1, .size = -1, .seed = 1};
    cli_set_prog(PROG);
    cli_shim_settings_off();
    int status = parse_args(argc, argv, &o);
    if (status != CLI_OK) {
        free(o.mask_file);
        free(o.mask_var);
        return status < 0 ? CLI_OK : status;
    }
    gen g = {.o = &o, .mask_nc = -1, .nc = -1};
    copy_out out = {0};
    double t0 = now();
    int rc = 0;
    g.history = command_line(argc, argv);
    if (!g.history)
        rc = copy_err("out of memory");
    if (rc == 0)
        rc = open_mask(&g);
    if (rc == 0)
        rc = plan(&g);
    if (rc == 0 && !o.quiet)
        print_plan(&g);
    if (rc == 0 && !o.dry_run) {
        rc = check_space(&g);
        if (rc == 0)
            rc = copy_out_begin(&out, o.out);
        if (rc == 0)
            rc = write_file(&g, out.tmp);
        if (g.nc >= 0)
            nc_close(g.nc);
        if (rc == 0)
            rc = copy_out_commit(&out);
        else
            copy_out_abort(&out);
        if (rc == 0 && !o.quiet) {
            double dt = now() - t0;
            double b = (double)var_bytes(&g) * (double)o.nvars;
            char hb[32];
            printf("wrote %s: %s of data in %.2f s (%.0f MB/s)\n", o.out,
                   human(b, hb, sizeof hb), dt, dt > 0 ? b / 1e6 / dt : 0.0);
        }
    }
    if (g.mask_nc >= 0)
        nc_close(g.mask_nc);
    raster_mask_free(g.mask);
    for (size_t i = 0; i < g.ncoords; i++)
        free(g.coords[i].data);
    free(g.depth_m);
    for (int f = 0; f < NFIELDS; f++)
        free(g.basis[f]);
    free(g.history);
    free(o.mask_file);
    free(o.mask_var);
    status = rc == 0 ? CLI_OK : CLI_EINPUT;
    if (fflush(stdout) != 0 && status == CLI_OK) {
        perror(PROG ": writing output");
        status = CLI_EINPUT;
    }
    return status;
}
