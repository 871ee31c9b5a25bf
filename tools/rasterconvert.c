/*
 * rasterconvert - rewrites a netCDF file with chosen variables stored region
 * by region (the raster layout), or (--restore) a raster file back as plain
 * netCDF-4, or (--upgrade) a raster file's variables of formats 1-4 as
 * format 5 in place (through a temporary file).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netcdf.h>
#include <netcdf_filter.h>

#include "cli.h"
#include "copy.h"
#include "extract.h"
#include "raster.h"
#include "raster_internal.h"

#define MAX_RASTER_DIMS 32

static void usage(FILE *f)
{
    fputs(
"usage: rasterconvert --mask FILE:VAR [--names FILE] [--vars A,B]\n"
"                     [--chunk T,Z,H,W] IN.nc OUT.nc\n"
"                     [--deflate N] [--shuffle] [--quantize MODE,NSD]\n"
"                     [--no-compress] IN.nc OUT.nc\n"
"       rasterconvert --restore IN.nc OUT.nc\n"
"       rasterconvert --upgrade FILE.nc\n"
"\n"
"First form: rewrites netCDF file IN.nc as netCDF-4 file OUT.nc with the\n"
"chosen variables stored in the raster layout (region by region, by the 2-D\n"
"integer mask VAR of netCDF file FILE). Everything else - dimensions, other\n"
"variables (with their chunking, compression, fill value and endianness),\n"
"attributes and groups - is copied unchanged.\n"
"\n"
"  --mask FILE:VAR   region mask (integer, or float with integral values;\n"
"                    _FillValue, missing_value and NaN cells get id 0);\n"
"                    FILE is split at the last ':'\n"
CLI_NAMES_HELP
"  --vars A,B        convert exactly these variables (a name matches in any\n"
"                    group; a path such as /ocean/TEMP names one); each must\n"
"                    be numeric, of 2 to 32 dimensions, with its last two\n"
"                    fixed and of the mask's shape. Default: the data\n"
"                    variables on the mask's grid - such variables with at\n"
"                    least one dimension besides the grid that are no\n"
"                    coordinate (none named like its dimension, in a\n"
"                    coordinates or bounds attribute, with an axis attribute\n"
"                    or latitude/longitude standard_name or units) and not\n"
"                    the mask (named like VAR, or holding its values)\n"
"  --chunk T,Z,H,W   base chunk shape; the last two sizes are the tile. The\n"
"                    sizes apply to a variable's last dimensions (a variable\n"
"                    with fewer dimensions uses the last ones; one with more\n"
"                    gets 1 for its extra outer dimensions); sizes larger\n"
"                    than a fixed dimension are clipped to it. Default: the\n"
"                    input variable's chunk shape when it is chunked, else 1\n"
"                    for each outer dimension and min(50, n) for the grid\n"
"  --buffer BYTES    bound of the data buffer (K, M, G suffixes; default an\n"
"                    eighth of the memory, 64M to 1G). Records converted in\n"
"                    one step lie side by side in each region's store, so\n"
"                    a larger buffer gives longer sequential region reads\n"
"  --format 2-5      raster format version to write (default: 3, or 4 for\n"
"                    a variable of more than 256 regions or whose region\n"
"                    groups would take the file past 16384 groups; 2 for\n"
"                    raster releases that read no version 3; 5, being\n"
"                    built: the variable holds its values, which every\n"
"                    netCDF reader reads). Format 2 or 3 is refused where\n"
"                    netCDF's 32767 groups are too few\n"
"  --weights W       keep weighted sums in the statistics stored with each\n"
"                    converted variable (docs/FORMAT.md), weighted by the\n"
"                    2-D variable W on the grid (e.g. a cell area, TAREA);\n"
"                    not with --format 2\n"
"  --deflate N       store the converted variables deflated at level N (0-9;\n"
"                    0: not deflated) instead of at the input's level\n"
"  --shuffle         and byte-shuffled before deflating\n"
"  --quantize MODE,NSD  quantize the converted float and double variables\n"
"                    as netCDF's nc_def_var_quantize does: MODE bitgroom,\n"
"                    granularbr or bitround, NSD significant digits (bits\n"
"                    for bitround); integer variables are left as they are\n"
"  --no-compress     store every variable, converted or copied, without\n"
"                    filters (no deflate, shuffle, checksum, quantization)\n"
"                    Without these, each converted variable keeps its input\n"
"                    variable's filters (deflate level, shuffle, fletcher32,\n"
"                    quantization, other HDF5 filters) on every store. The\n"
"                    copied (not converted) variables always keep their own\n"
"                    filters; --deflate, --shuffle and --quantize are about\n"
"                    the converted ones only. A variable whose filters raster\n"
"                    cannot store by region stays an ordinary netCDF variable\n"
"                    with its filters, with a warning naming it\n"
"  --verbose         list what is converted on stdout\n"
"  --quiet           print nothing but warnings and errors (no list of the\n"
"                    variables, no progress, no summary)\n"
"  --restore         second form: write a raster file back as plain netCDF-4:\n"
"                    each raster variable becomes an ordinary variable at its\n"
"                    original position, chunked with its base chunk shape\n"
"                    and with the variable's filters\n"
"  --upgrade         third form: rewrite raster file FILE.nc with every raster\n"
"                    variable of format 1 to 4 (a marked placeholder, its\n"
"                    values in raster's storage groups) as format 5 (the\n"
"                    variable holds its values, which every netCDF reader\n"
"                    reads). Each keeps its mask and region names, base\n"
"                    chunk shape, compression, statistics weights and\n"
"                    attributes; the other variables, attributes,\n"
"                    dimensions and groups are copied unchanged (no history\n"
"                    line is added). HDF5 cannot change a variable's\n"
"                    filters in place, so FILE.nc is written anew under a\n"
"                    temporary name in its directory (room for a second\n"
"                    copy needed) and renamed over it, keeping its\n"
"                    permissions and owner (through a symbolic link, the\n"
"                    file it names; other hard links keep the old file);\n"
"                    on any failure FILE.nc is left as it was, byte for\n"
"                    byte. A file with nothing to upgrade (no raster\n"
"                    variable, or all of format 5) is left untouched, exit\n"
"                    status 0. Takes --buffer, --quiet, --verbose only\n"
"  --help            this text\n"
"  --version         print raster's version\n"
"\n"
"Each variable converted or left (and why) is listed on stderr. OUT.nc is\n"
"written under a temporary name in its directory and renamed when\n"
"complete: on any failure no OUT.nc is left; OUT.nc may not be IN.nc or\n"
"the mask file (also through links). Conversions longer than a second\n"
"report progress on stderr: a bar on a terminal, else (a batch job's log)\n"
"a line at every tenth and at least every 10 s. A conversion that\n"
"succeeds ends with a one-line summary on stderr: variables stored by\n"
"region (or restored) and copied, the sizes of IN.nc and OUT.nc, the\n"
"time (--upgrade: \"upgraded N variables to format 5 through a temporary\n"
"file\"). Input files with\n"
"user-defined types (compound, vlen, enum, opaque) are refused.\n"
"\n"
"Exit status: 0 ok, 1 bad input or I/O error, 2 bad usage.\n", f);
}

typedef struct options {
    char *mask_file, *mask_var;
    const char *names; /* --names FILE */
    char **vars;
    size_t nvars;
    size_t chunk[MAX_RASTER_DIMS], nchunk;
    size_t budget;
    int restore, upgrade, verbose;
    int format; /* raster format version to write; 0: the default */
    int deflate;        /* --deflate N; -1: the input's */
    int shuffle;        /* --shuffle */
    int qmode, qnsd;    /* --quantize; qmode -1: the input's */
    int no_compress;    /* --no-compress */
    const char *weights; /* --weights */
    const char *in, *out;
    int argc; /* the command line as typed, for the history line */
    char **argv;
} options;

enum { JOB_PLAIN, JOB_TO_RASTER, JOB_FROM_RASTER, JOB_UPGRADE };

/* One variable's data to copy once everything is defined. */
typedef struct job {
    int kind;
    int in_g, in_v;      /* plain input variable (JOB_PLAIN, JOB_TO_RASTER) */
    int out_g, out_v;    /* plain output variable (JOB_PLAIN, _FROM_) */
    raster_var *rv;      /* raster side (JOB_TO_RASTER, JOB_FROM_RASTER);
                            JOB_UPGRADE: the input variable */
    raster_var *out_rv;  /* JOB_UPGRADE: its format 5 copy */
    size_t align[MAX_RASTER_DIMS]; /* chunk sizes to align blocks with */
    int aligned;
} job;

typedef struct ctx {
    const options *o;
    raster_mask *mask;
    size_t ny, nx;
    int in_ncid, out_ncid;
    raster_file *rf;     /* convert: the output; restore, upgrade: the input */
    raster_file *up;     /* upgrade: the output */
    size_t nold;         /* upgrade: variables of format 1-4 in the input */
    struct stat in_st;   /* upgrade: the file as it was found */
    copy_dimmap dims;
    job *jobs;
    size_t njobs, cap;
    int *vars_used;      /* per --vars name */
    size_t nraster;
    size_t nrefused;     /* variables kept plain: compression refused */
    int probe_ncid;      /* scratch in-memory file for probe_compression */
    raster_file *probe;
    unsigned long long total;
} ctx;

static job *add_job(ctx *c)
{
    if (c->njobs == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        job *j = realloc(c->jobs, cap * sizeof *j);
        if (!j) {
            copy_err("out of memory");
            return NULL;
        }
        c->jobs = j;
        c->cap = cap;
    }
    job *j = &c->jobs[c->njobs++];
    memset(j, 0, sizeof *j);
    return j;
}

static int raster_err(const char *what, int rc)
{
    return copy_err("%s: %s (%s)", what, raster_errmsg(),
                    raster_strerror(rc));
}

/* ---- convert ----------------------------------------------------------- */

/* Does --vars name variable `name` of group path `gpath`? Marks it used. */
static int named(ctx *c, const char *gpath, const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", strcmp(gpath, "/") ? gpath : "",
             name);
    int hit = 0;
    for (size_t i = 0; i < c->o->nvars; i++) {
        const char *want = c->o->vars[i];
        int match;
        if (strchr(want, '/'))
            match = strcmp(want[0] == '/' ? want + 1 : want, path + 1) == 0;
        else
            match = strcmp(want, name) == 0;
        if (match) {
            c->vars_used[i] = 1;
            hit = 1;
        }
    }
    return hit;
}

static int quiet; /* --quiet */

/* Says on stderr what becomes of variable `name` of group `gpath`. */
static void tell(const char *gpath, const char *name, const char *why)
{
    if (quiet)
        return;
    const char *sep = strcmp(gpath, "/") ? "/" : "";
    if (why)
        fprintf(stderr, "rasterconvert: leave %s%s%s: %s\n", sep[0] ?
                gpath + 1 : "", sep, name, why);
    else
        fprintf(stderr, "rasterconvert: convert %s%s%s\n", sep[0] ?
                gpath + 1 : "", sep, name);
}

/* 1: store variable v of group g as a raster variable; 0: copy it plainly;
 * -1: error (a named variable that cannot be converted). Without --vars
 * libraster's rule (raster_var_choose) picks the data variables. */
static int select_var(ctx *c, int g, int v)
{
    char name[NC_MAX_NAME + 1], gpath[1024], tname[NC_MAX_NAME + 1] = "?";
    nc_type xtype;
    int ndims, dimids[NC_MAX_VAR_DIMS], st;
    if ((st = nc_inq_var(g, v, name, &xtype, &ndims, dimids, NULL)) !=
        NC_NOERR)
        return copy_ncerr(st, "%s: reading variable %d", c->o->in, v);
    copy_group_path(g, gpath, sizeof gpath);
    int want = c->o->nvars ? named(c, gpath, name) : -1;
    if (want == 0) {
        tell(gpath, name, "not named by --vars");
        return 0;
    }
    int why, rc = raster_var_choose(g, v, c->mask, c->o->mask_var,
                                    want > 0 ? RASTER_CHOOSE_NAMED
                                             : RASTER_CHOOSE_VALUES, &why);
    if (rc != RASTER_OK)
        return raster_err(name, rc);
    /* the raster format names dimensions; one hidden by a same-named
     * dimension of a nearer group could not be found again */
    char shadowed[NC_MAX_NAME + 1] = "";
    for (int i = 0; i < ndims && i < MAX_RASTER_DIMS && !shadowed[0]; i++) {
        char dn[NC_MAX_NAME + 1];
        int found;
        if (nc_inq_dimname(g, dimids[i], dn) == NC_NOERR &&
            (nc_inq_dimid(g, dn, &found) != NC_NOERR || found != dimids[i]))
            memcpy(shadowed, dn, sizeof dn);
    }
    if (want < 0) { /* automatic choice */
        if (why == RASTER_CHOOSE_DATA && shadowed[0]) {
            char text[NC_MAX_NAME + 64];
            snprintf(text, sizeof text, "dimension %s is hidden by another "
                     "of that name in a nearer group", shadowed);
            tell(gpath, name, text);
            return 0;
        }
        /* a converted variable is told once its compression is settled */
        if (why != RASTER_CHOOSE_DATA)
            tell(gpath, name, raster_choose_reason(why));
        return why == RASTER_CHOOSE_DATA;
    }
    size_t ny = 0, nx = 0;
    if (ndims >= 2) {
        nc_inq_dimlen(g, dimids[ndims - 2], &ny);
        nc_inq_dimlen(g, dimids[ndims - 1], &nx);
    }
    nc_inq_type(g, xtype, tname, NULL);
    switch (why) {
    case RASTER_CHOOSE_DATA: break;
    case RASTER_CHOOSE_TYPE:
        return copy_err("%s: variable %s is of type %s: only numeric "
                        "variables can be stored by region", c->o->in, name,
                        tname);
    case RASTER_CHOOSE_RANK:
        return copy_err("%s: variable %s has %d dimensions: the raster "
                        "layout needs 2 to %d", c->o->in, name, ndims,
                        MAX_RASTER_DIMS);
    case RASTER_CHOOSE_UNLIMITED:
        return copy_err("%s: variable %s has an unlimited grid dimension",
                        c->o->in, name);
    case RASTER_CHOOSE_GRID:
        return copy_err("%s: variable %s has a %zu x %zu grid but the mask "
                        "%s:%s is %zu x %zu", c->o->in, name, ny, nx,
                        c->o->mask_file, c->o->mask_var, c->ny, c->nx);
    default:
        return copy_err("%s: variable %s: %s", c->o->in, name,
                        raster_choose_reason(why));
    }
    if (shadowed[0])
        return copy_err("%s: variable %s uses dimension %s, which a "
                        "same-named dimension of a nearer group hides: the "
                        "raster layout cannot record it", c->o->in, name,
                        shadowed);
    return 1;
}

/* The base chunk shape of a converted variable: --chunk, else the input's
 * chunking, else NULL (raster's default). */
static const size_t *base_chunk(ctx *c, int g, int v, int ndims,
                                const int *dimids, size_t *ch)
{
    int storage = NC_CONTIGUOUS;
    if (c->o->nchunk) {
        int k = (int)c->o->nchunk;
        for (int i = 0; i < ndims; i++) {
            int j = i - (ndims - k); /* align the lists at their ends */
            ch[i] = j >= 0 ? c->o->chunk[j] : 1;
        }
    } else if (copy_is_nc4(g) &&
               nc_inq_var_chunking(g, v, &storage, ch) == NC_NOERR &&
               storage == NC_CHUNKED) {
        /* the input's own chunk shape; one tile over a grid the default
         * would cut is almost surely an accident of default chunking */
        if (ch[ndims - 2] >= c->ny && ch[ndims - 1] >= c->nx &&
            (c->ny > 50 || c->nx > 50)) {
            char name[NC_MAX_NAME + 1] = "?";
            nc_inq_varname(g, v, name);
            copy_err("warning: %s is chunked over its whole %zu x %zu grid "
                     "in %s, so its raster tile is the whole grid and region "
                     "reads gain nothing; give --chunk to choose tiles",
                     name, c->ny, c->nx, c->o->in);
        }
    } else {
        return NULL;
    }
    for (int i = 0; i < ndims; i++) {
        size_t len = 0;
        nc_inq_dimlen(g, dimids[i], &len);
        if (len > 0 && ch[i] > len && !copy_dim_unlimited(g, dimids[i]))
            ch[i] = len;
    }
    return ch;
}

/* ---- compression ------------------------------------------------------- */

/* The filters of input variable (g, v) into *z: 0, or 1 when they do not
 * fit a raster_compression (too many filters or parameters), or -1. */
static int input_compression(int g, int v, raster_compression *z)
{
    memset(z, 0, sizeof *z);
    if (!copy_is_nc4(g))
        return 0;
    int shuffle = 0, deflate = 0, level = 0, f32 = 0, mode = 0, nsd = 0;
    if (nc_inq_var_deflate(g, v, &shuffle, &deflate, &level) == NC_NOERR) {
        z->shuffle = shuffle != 0;
        z->deflate_level = deflate ? level : 0;
    }
    if (nc_inq_var_fletcher32(g, v, &f32) == NC_NOERR)
        z->fletcher32 = f32 != 0;
    if (nc_inq_var_quantize(g, v, &mode, &nsd) == NC_NOERR && mode) {
        z->quantize_mode = mode;
        z->quantize_nsd = nsd;
    }
    size_t nf = 0;
    if (nc_inq_var_filter_ids(g, v, &nf, NULL) != NC_NOERR || nf == 0)
        return 0;
    unsigned *ids = malloc(nf * sizeof *ids);
    if (!ids)
        return copy_err("out of memory");
    int rc = 0, st = nc_inq_var_filter_ids(g, v, &nf, ids);
    if (st != NC_NOERR)
        rc = copy_ncerr(st, "listing a variable's filters");
    for (size_t i = 0; i < nf && rc == 0; i++) {
        /* deflate, shuffle and fletcher32 are read above */
        if (ids[i] == H5Z_FILTER_DEFLATE || ids[i] == H5Z_FILTER_SHUFFLE ||
            ids[i] == H5Z_FILTER_FLETCHER32 ||
            raster_filter_is_placeholder(ids[i]))
            continue;
        size_t np = 0;
        if (z->nfilters == RASTER_MAX_FILTERS ||
            nc_inq_var_filter_info(g, v, ids[i], &np, NULL) != NC_NOERR ||
            np > RASTER_MAX_FILTER_PARAMS) {
            rc = 1;
            break;
        }
        unsigned k = z->nfilters++;
        z->filters[k].id = ids[i];
        z->filters[k].nparams = np;
        if (np && (st = nc_inq_var_filter_info(g, v, ids[i], &np,
                                               z->filters[k].params)) !=
                      NC_NOERR)
            rc = copy_ncerr(st, "reading filter %u", ids[i]);
    }
    free(ids);
    return rc;
}

/* --deflate, --shuffle, --quantize and --no-compress over the input's
 * settings of a converted variable of type xtype. */
static void override_compression(const options *o, nc_type xtype,
                                 raster_compression *z)
{
    if (o->no_compress) {
        memset(z, 0, sizeof *z);
        return;
    }
    if (o->deflate >= 0)
        z->deflate_level = o->deflate;
    if (o->shuffle)
        z->shuffle = 1;
    if (o->qmode >= 0 && (xtype == NC_FLOAT || xtype == NC_DOUBLE)) {
        z->quantize_mode = o->qmode;
        z->quantize_nsd = o->qnsd;
    }
}

static int is_plain(const raster_compression *z)
{
    static const raster_compression plain;
    return memcmp(z, &plain, sizeof plain) == 0;
}

/* Can raster store variable (g, v) by region with compression z? A raster
 * variable cannot be undefined, so the question is put to a scratch
 * in-memory file first. RASTER_OK, RASTER_EUNSUPPORTED (raster_errmsg()
 * says why) or another error. */
static int probe_compression(ctx *c, int g, int v, const size_t *chunk,
                             const raster_compression *z)
{
    int st, rc;
    if (!c->probe) {
        if ((st = nc_create("rasterconvert-probe.nc", NC_NETCDF4 |
                            NC_DISKLESS | NC_CLOBBER, &c->probe_ncid)) !=
            NC_NOERR) {
            c->probe_ncid = -1;
            copy_ncerr(st, "creating a scratch file in memory");
            return RASTER_ENETCDF;
        }
        rc = raster_attach(c->probe_ncid, 1, &c->probe);
        if (rc == RASTER_OK && c->o->format)
            rc = raster_file_set_format(c->probe, c->o->format);
        if (rc != RASTER_OK) {
            raster_err("scratch file", rc);
            return rc;
        }
    }
    /* a group each, so that the variable has its own name in messages */
    nc_type xtype;
    char name[NC_MAX_NAME + 1], gn[32];
    int ndims, dimids[NC_MAX_VAR_DIMS], pd[MAX_RASTER_DIMS], pg;
    static unsigned serial;
    snprintf(gn, sizeof gn, "g%u", serial++);
    if ((st = nc_inq_var(g, v, name, &xtype, &ndims, dimids, NULL)) !=
            NC_NOERR ||
        (st = nc_def_grp(c->probe_ncid, gn, &pg)) != NC_NOERR) {
        copy_ncerr(st, "%s: defining it in a scratch file", name);
        return RASTER_ENETCDF;
    }
    for (int i = 0; i < ndims; i++) {
        char dn[32];
        size_t len = 0;
        nc_inq_dimlen(g, dimids[i], &len);
        snprintf(dn, sizeof dn, "d%d", i);
        if ((st = nc_def_dim(pg, dn, copy_dim_unlimited(g, dimids[i])
                                         ? NC_UNLIMITED : len,
                             &pd[i])) != NC_NOERR) {
            copy_ncerr(st, "%s: defining it in a scratch file", name);
            return RASTER_ENETCDF;
        }
    }
    raster_var *pv;
    rc = raster_def_var(c->probe, pg, name, xtype, ndims, pd, chunk,
                        c->mask, &pv);
    if (rc != RASTER_OK) {
        raster_err("scratch file", rc);
        return rc;
    }
    return raster_var_set_compression(pv, z);
}

static int def_plain(ctx *c, int g, int v, int out);

static int def_raster(ctx *c, int g, int v, int out)
{
    char name[NC_MAX_NAME + 1];
    nc_type xtype;
    int ndims, dimids[NC_MAX_VAR_DIMS], odims[MAX_RASTER_DIMS], natts, st;
    if ((st = nc_inq_var(g, v, name, &xtype, &ndims, dimids, &natts)) !=
        NC_NOERR)
        return copy_ncerr(st, "reading variable %d", v);
    for (int i = 0; i < ndims; i++)
        odims[i] = copy_dimmap_get(&c->dims, dimids[i]);
    size_t ch[MAX_RASTER_DIMS];
    const size_t *chunk = base_chunk(c, g, v, ndims, dimids, ch);
    char gpath[1024], what[512];
    copy_group_path(g, gpath, sizeof gpath);
    raster_compression z;
    int rc = input_compression(g, v, &z);
    if (rc < 0)
        return -1;
    if (c->o->no_compress)
        rc = 0; /* whatever the input had, none is asked for */
    override_compression(c->o, xtype, &z);
    copy_describe_compression(&z, what, sizeof what);
    /* what raster cannot store by region stays plain netCDF, filters and
     * all: said once, never dropped silently */
    const char *refusal = rc ? "more filters or filter parameters than "
                               "raster records" : NULL;
    if (!refusal && !is_plain(&z)) {
        rc = probe_compression(c, g, v, chunk, &z);
        if (rc == RASTER_EUNSUPPORTED)
            refusal = raster_errmsg();
        else if (rc != RASTER_OK)
            return copy_err("%s%s%s: cannot be stored with %s: %s",
                            strcmp(gpath, "/") ? gpath + 1 : "",
                            strcmp(gpath, "/") ? "/" : "", name, what,
                            raster_errmsg());
    }
    if (refusal) {
        copy_err("warning: %s%s%s stays plain netCDF with its own filters: "
                 "raster cannot store it by region with %s: %s",
                 strcmp(gpath, "/") ? gpath + 1 : "",
                 strcmp(gpath, "/") ? "/" : "", name, what, refusal);
        c->nrefused++;
        return def_plain(c, g, v, out);
    }
    raster_var *rv;
    rc = raster_def_var(c->rf, out, name, xtype, ndims, odims, chunk,
                        c->mask, &rv);
    if (rc == RASTER_OK)
        rc = raster_var_set_compression(rv, &z);
    /* 2-D variables keep no statistics */
    if (rc == RASTER_OK && c->o->weights && ndims > 2)
        rc = raster_var_set_stats_weights(rv, c->o->weights);
    if (rc != RASTER_OK)
        return raster_err(name, rc);
    tell(gpath, name, NULL);
    for (int i = 0; i < natts; i++) {
        char aname[NC_MAX_NAME + 1];
        nc_type atype;
        size_t alen;
        void *val;
        if ((st = nc_inq_attname(g, v, i, aname)) != NC_NOERR)
            return copy_ncerr(st, "%s: naming attribute %d", name, i);
        /* netCDF writes these for the quantization set (or none) */
        int skip = 0;
        for (const char *const *q = copy_quantize_atts; *q; q++)
            skip |= strcmp(aname, *q) == 0;
        if (skip)
            continue;
        if (copy_att_read(g, v, aname, &atype, &alen, &val) != 0)
            return -1;
        rc = raster_var_put_att(rv, aname, atype, alen, val);
        copy_att_free(atype, alen, val);
        if (rc != RASTER_OK)
            return raster_err(name, rc);
    }
    job *j = add_job(c);
    if (!j)
        return -1;
    j->kind = JOB_TO_RASTER;
    j->in_g = g;
    j->in_v = v;
    j->rv = rv;
    int storage;
    j->aligned = copy_is_nc4(g) &&
                 nc_inq_var_chunking(g, v, &storage, j->align) == NC_NOERR &&
                 storage == NC_CHUNKED;
    c->total += copy_var_bytes(g, v);
    c->nraster++;
    if (c->o->verbose) {
        size_t used[MAX_RASTER_DIMS];
        char gpath[1024];
        raster_var_dims(rv, NULL, NULL, used);
        copy_group_path(g, gpath, sizeof gpath);
        printf("%s%s%s: raster, base chunk ", strcmp(gpath, "/") ? gpath : "",
               strcmp(gpath, "/") ? "/" : "", name);
        for (int i = 0; i < ndims; i++)
            printf("%s%zu", i ? "," : "", used[i]);
        printf(", %zu regions\n",
               raster_mesh_nregions(raster_var_mesh(rv)));
    }
    return 0;
}

static int def_plain(ctx *c, int g, int v, int out)
{
    int ov;
    if (copy_var_def_as(g, v, out, &c->dims, c->o->no_compress, &ov) != 0)
        return -1;
    job *j = add_job(c);
    if (!j)
        return -1;
    j->kind = JOB_PLAIN;
    j->in_g = g;
    j->in_v = v;
    j->out_g = out;
    j->out_v = ov;
    c->total += copy_var_bytes(g, v);
    return 0;
}

/* Subgroups of g (malloc'd). */
static int subgroups(int g, int **ids, int *n)
{
    int st;
    *ids = NULL;
    if ((st = nc_inq_grps(g, n, NULL)) != NC_NOERR)
        return copy_ncerr(st, "listing groups");
    if (*n == 0)
        return 0;
    *ids = malloc((size_t)*n * sizeof **ids);
    if (!*ids)
        return copy_err("out of memory");
    if ((st = nc_inq_grps(g, NULL, *ids)) != NC_NOERR)
        return copy_ncerr(st, "listing groups");
    return 0;
}

static int convert_group(ctx *c, int in, int out)
{
    int nvars, st;
    if (copy_dims(in, out, &c->dims) != 0 ||
        copy_atts(in, NC_GLOBAL, out, NC_GLOBAL, NULL) != 0)
        return -1;
    /* the input's subgroups are created before any raster variable, whose
     * storage group must not take a name one of them has */
    int *ids, n, rc = 0;
    if (subgroups(in, &ids, &n) != 0) {
        free(ids);
        return -1;
    }
    int *out_ids = malloc((size_t)(n ? n : 1) * sizeof *out_ids);
    if (!out_ids) {
        free(ids);
        return copy_err("out of memory");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        char name[NC_MAX_NAME + 1];
        if ((st = nc_inq_grpname(ids[i], name)) != NC_NOERR ||
            (st = nc_def_grp(out, name, &out_ids[i])) != NC_NOERR)
            rc = copy_ncerr(st, "copying group %s", name);
    }
    if (rc == 0 && (st = nc_inq_nvars(in, &nvars)) != NC_NOERR)
        rc = copy_ncerr(st, "counting variables");
    for (int v = 0; rc == 0 && v < nvars; v++) {
        int sel = select_var(c, in, v);
        if (sel < 0 ||
            (sel ? def_raster(c, in, v, out) : def_plain(c, in, v, out)) != 0)
            rc = -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        rc = convert_group(c, ids[i], out_ids[i]);
    free(ids);
    free(out_ids);
    return rc;
}

/* Copies a plain input variable's data into a raster variable. */
static int fill_raster(ctx *c, const job *j, copy_progress *p)
{
    int ndims = raster_var_ndims(j->rv);
    size_t shape[MAX_RASTER_DIMS], elem;
    int dimids[MAX_RASTER_DIMS], st;
    const char *name = raster_var_name(j->rv);
    if ((st = nc_inq_vardimid(j->in_g, j->in_v, dimids)) != NC_NOERR ||
        (st = nc_inq_type(j->in_g, raster_var_type(j->rv), NULL, &elem)) !=
            NC_NOERR)
        return copy_ncerr(st, "%s: reading the input", name);
    for (int i = 0; i < ndims; i++)
        if ((st = nc_inq_dimlen(j->in_g, dimids[i], &shape[i])) != NC_NOERR)
            return copy_ncerr(st, "%s: reading the input", name);
    copy_blocks *b = malloc(sizeof *b);
    if (!b)
        return copy_err("out of memory");
    copy_blocks_init(b, ndims, shape, elem, c->o->budget,
                     j->aligned ? j->align : NULL);
    void *buf = malloc(b->max_elems * elem);
    int rc = buf ? 0 : copy_err("%s: out of memory for a %zu-byte block",
                                name, b->max_elems * elem);
    while (rc == 0 && copy_blocks_next(b)) {
        if ((st = nc_get_vara(j->in_g, j->in_v, b->start, b->count, buf)) !=
            NC_NOERR) {
            rc = copy_ncerr(st, "reading %s from %s", name, c->o->in);
            break;
        }
        int r = raster_var_put(j->rv, b->start, b->count, NULL, buf);
        if (r != RASTER_OK) {
            rc = raster_err(name, r);
            break;
        }
        copy_progress_add(p, (unsigned long long)copy_blocks_elems(b) * elem);
    }
    free(buf);
    free(b);
    return rc;
}

/* Copies a raster variable's data, in blocks aligned with its base
 * chunks, into a plain output variable (JOB_FROM_RASTER, --restore) or its
 * format 5 copy (JOB_UPGRADE). */
static int drain_raster(ctx *c, const job *j, copy_progress *p)
{
    int ndims = raster_var_ndims(j->rv), st, up = j->kind == JOB_UPGRADE;
    size_t shape[MAX_RASTER_DIMS], chunk[MAX_RASTER_DIMS], elem;
    const char *name = raster_var_name(j->rv);
    int r = raster_var_dims(j->rv, NULL, shape, chunk);
    if (r != RASTER_OK)
        return raster_err(name, r);
    if ((st = nc_inq_type(up ? raster_file_ncid(c->up) : j->out_g,
                          raster_var_type(j->rv), NULL, &elem)) != NC_NOERR)
        return copy_ncerr(st, "%s", name);
    copy_blocks *b = malloc(sizeof *b);
    if (!b)
        return copy_err("out of memory");
    copy_blocks_init(b, ndims, shape, elem, c->o->budget, chunk);
    void *buf = malloc(b->max_elems * elem);
    int rc = buf ? 0 : copy_err("%s: out of memory for a %zu-byte block",
                                name, b->max_elems * elem);
    while (rc == 0 && copy_blocks_next(b)) {
        if ((r = raster_var_get(j->rv, b->start, b->count, NULL, buf)) !=
                RASTER_OK ||
            (up && (r = raster_var_put(j->out_rv, b->start, b->count, NULL,
                                       buf)) != RASTER_OK)) {
            rc = raster_err(name, r);
            break;
        }
        if (!up && (st = nc_put_vara(j->out_g, j->out_v, b->start, b->count,
                                     buf)) != NC_NOERR) {
            rc = copy_ncerr(st, "writing %s", name);
            break;
        }
        copy_progress_add(p, (unsigned long long)copy_blocks_elems(b) * elem);
    }
    free(buf);
    free(b);
    return rc;
}

static int run_jobs(ctx *c)
{
    copy_progress p;
    copy_progress_init(&p, c->total);
    int rc = 0;
    /* plain variables first: the weights of the statistics kept are read
     * when the first record is written */
    for (size_t k = 0; k < 2 * c->njobs && rc == 0; k++) {
        const job *j = &c->jobs[k % c->njobs];
        if ((j->kind == JOB_PLAIN) != (k < c->njobs))
            continue;
        switch (j->kind) {
        case JOB_PLAIN:
            rc = copy_var_data(j->in_g, j->in_v, j->out_g, j->out_v,
                               c->o->budget, &p);
            break;
        case JOB_TO_RASTER: rc = fill_raster(c, j, &p); break;
        default: rc = drain_raster(c, j, &p); break; /* restore, upgrade */
        }
    }
    copy_progress_end(&p);
    return rc;
}

static int convert(ctx *c, copy_out *out)
{
    const options *o = c->o;
    if (copy_check_distinct(o->in, o->out, "input") != 0 ||
        copy_check_distinct(o->mask_file, o->out, "mask file") != 0)
        return -1;
    raster_file *probe;
    int rc = raster_open(o->in, RASTER_READ, &probe);
    if (rc == RASTER_OK || rc == RASTER_EINCOMPLETE) {
        raster_close(probe);
        return copy_err("%s already holds raster variables (convert it back "
                        "with --restore first)", o->in);
    }
    rc = cli_load_mask(o->mask_file, o->mask_var, o->names, &c->mask);
    if (rc != RASTER_OK)
        return copy_err("mask %s:%s: %s", o->mask_file, o->mask_var,
                        raster_errmsg());
    raster_mask_shape(c->mask, &c->ny, &c->nx);
    int st = nc_open(o->in, NC_NOWRITE, &c->in_ncid);
    if (st != NC_NOERR) {
        c->in_ncid = -1;
        return copy_ncerr(st, "cannot open %s", o->in);
    }
    if (copy_check_no_user_types(c->in_ncid, o->in) != 0 ||
        copy_out_begin(out, o->out) != 0)
        return -1;
    rc = raster_create(out->tmp, &c->rf);
    if (rc == RASTER_OK && o->format)
        rc = raster_file_set_format(c->rf, o->format);
    if (rc != RASTER_OK)
        return raster_err(o->out, rc);
    c->out_ncid = raster_file_ncid(c->rf);
    int wv;
    if (o->weights && nc_inq_varid(c->in_ncid, o->weights, &wv) != NC_NOERR)
        return copy_err("%s: no variable %s (--weights)", o->in, o->weights);
    if (convert_group(c, c->in_ncid, c->out_ncid) != 0 ||
        extract_history(c->out_ncid, c->o->argc, c->o->argv) != 0)
        return -1;
    for (size_t i = 0; i < o->nvars; i++)
        if (!c->vars_used[i])
            return copy_err("%s: no variable %s", o->in, o->vars[i]);
    if (c->nraster == 0 && c->nrefused > 0)
        copy_err("warning: %s holds no raster variable: every variable "
                 "chosen stays plain netCDF (above)", o->out);
    else if (c->nraster == 0)
        return copy_err("%s: no data variable on the mask's %zu x %zu grid: "
                        "nothing to convert (--vars names variables to "
                        "convert anyway)", o->in, c->ny, c->nx);
    if (run_jobs(c) != 0)
        return -1;
    rc = raster_close(c->rf);
    c->rf = NULL;
    if (rc != RASTER_OK)
        return raster_err(o->out, rc);
    return 0;
}

/* ---- restore ----------------------------------------------------------- */

/* Sets a restored variable's filters as the raster variable had them:
 * the others first, as netCDF puts shuffle first and deflate after them. */
static int def_filters(int out, int ov, const char *name,
                       const raster_compression *z)
{
    int st;
    for (unsigned i = 0; i < z->nfilters && i < RASTER_MAX_FILTERS; i++)
        if ((st = nc_def_var_filter(out, ov, z->filters[i].id,
                                    z->filters[i].nparams,
                                    z->filters[i].params)) != NC_NOERR)
            return copy_ncerr(st, "%s: filter %u", name, z->filters[i].id);
    if ((z->shuffle || z->deflate_level) &&
        (st = nc_def_var_deflate(out, ov, z->shuffle, z->deflate_level > 0,
                                 z->deflate_level)) != NC_NOERR)
        return copy_ncerr(st, "%s: deflate level %d, shuffle %d", name,
                          z->deflate_level, z->shuffle);
    if (z->fletcher32 &&
        (st = nc_def_var_fletcher32(out, ov, NC_FLETCHER32)) != NC_NOERR)
        return copy_ncerr(st, "%s: fletcher32", name);
    if (z->quantize_mode &&
        (st = nc_def_var_quantize(out, ov, z->quantize_mode,
                                  z->quantize_nsd)) != NC_NOERR)
        return copy_ncerr(st, "%s: quantize mode %d, %d digits", name,
                          z->quantize_mode, z->quantize_nsd);
    return 0;
}

/* The output ids of a raster variable's dimensions (copied before it). */
static int out_dimids(ctx *c, const char *name, int ndims, const int *dimids,
                      int *odims)
{
    for (int i = 0; i < ndims; i++) {
        odims[i] = copy_dimmap_get(&c->dims, dimids[i]);
        if (odims[i] < 0)
            return copy_err("%s: dimension %d was not copied", name,
                            dimids[i]);
    }
    return 0;
}

/* Adds a raster variable's bytes (its shape, in the output's type size)
 * to the progress total. */
static int count_bytes(ctx *c, raster_var *rv, int out, int ndims,
                       const size_t *shape)
{
    size_t elem = 0;
    int st = nc_inq_type(out, raster_var_type(rv), NULL, &elem);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s", raster_var_name(rv));
    unsigned long long bytes = elem;
    for (int i = 0; i < ndims; i++)
        bytes *= shape[i];
    c->total += bytes;
    return 0;
}

/* Defines in `out` a group named as group g (*og its id). */
static int def_subgroup(int g, int out, int *og)
{
    char name[NC_MAX_NAME + 1] = "";
    int st = nc_inq_grpname(g, name);
    if (st == NC_NOERR)
        st = nc_def_grp(out, name, og);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "copying group %s", name);
}

static int def_restored(ctx *c, raster_var *rv, int out)
{
    int ndims = raster_var_ndims(rv), dimids[MAX_RASTER_DIMS];
    int odims[MAX_RASTER_DIMS], ov, st, ag, av;
    size_t shape[MAX_RASTER_DIMS], chunk[MAX_RASTER_DIMS];
    const char *name = raster_var_name(rv);
    int r = raster_var_dims(rv, dimids, shape, chunk);
    if (r != RASTER_OK)
        return raster_err(name, r);
    if (out_dimids(c, name, ndims, dimids, odims) != 0)
        return -1;
    for (int i = 0; i < ndims; i++)
        if (shape[i] > 0 && chunk[i] > shape[i] &&
            !copy_dim_unlimited(raster_var_parent(rv), dimids[i]))
            chunk[i] = shape[i];
    if ((st = nc_def_var(out, name, raster_var_type(rv), ndims, odims,
                         &ov)) != NC_NOERR)
        return copy_ncerr(st, "defining variable %s", name);
    if ((st = nc_def_var_chunking(out, ov, NC_CHUNKED, chunk)) != NC_NOERR)
        return copy_ncerr(st, "%s: chunking", name);
    raster_compression z;
    if ((r = raster_var_compression(rv, &z)) != RASTER_OK)
        return raster_err(name, r);
    if (def_filters(out, ov, name, &z) != 0)
        return -1;
    raster_var_attributes(rv, &ag, &av);
    /* netCDF writes the quantization attribute for the setting itself */
    if (copy_atts(ag, av, out, ov, z.quantize_mode ? copy_quantize_atts
                                                   : NULL) != 0)
        return copy_err("%s: attributes not copied", name);
    job *j = add_job(c);
    if (!j)
        return -1;
    j->kind = JOB_FROM_RASTER;
    j->rv = rv;
    j->out_g = out;
    j->out_v = ov;
    return count_bytes(c, rv, out, ndims, shape);
}

static int restore_group(ctx *c, int in, int out)
{
    int nplain, st, rc = 0;
    if (copy_dims(in, out, &c->dims) != 0 ||
        copy_atts(in, NC_GLOBAL, out, NC_GLOBAL, NULL) != 0)
        return -1;
    if ((st = nc_inq_nvars(in, &nplain)) != NC_NOERR)
        return copy_ncerr(st, "counting variables");
    /* a raster variable's placeholder holds its place: restore it there */
    for (int varid = 0; varid < nplain && rc == 0; varid++) {
        raster_var *rv = raster_var_by_varid(c->rf, in, varid);
        rc = rv ? def_restored(c, rv, out) : def_plain(c, in, varid, out);
    }
    if (rc)
        return rc;
    int *ids, n;
    if (subgroups(in, &ids, &n) != 0) {
        free(ids);
        return -1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        int og;
        if (!raster_is_raster_group(ids[i]) &&
            (rc = def_subgroup(ids[i], out, &og)) == 0)
            rc = restore_group(c, ids[i], og);
    }
    free(ids);
    return rc;
}

static int restore(ctx *c, copy_out *out)
{
    const options *o = c->o;
    if (copy_check_distinct(o->in, o->out, "input") != 0)
        return -1;
    int rc = raster_open(o->in, RASTER_READ, &c->rf);
    if (rc == RASTER_EFORMAT)
        return copy_err("%s is not a raster file: %s", o->in,
                        raster_errmsg());
    if (rc != RASTER_OK)
        return raster_err(o->in, rc);
    c->in_ncid = raster_file_ncid(c->rf);
    if (copy_check_no_user_types(c->in_ncid, o->in) != 0 ||
        copy_out_begin(out, o->out) != 0)
        return -1;
    int st = nc_create(out->tmp, NC_NETCDF4 | NC_CLOBBER, &c->out_ncid);
    if (st != NC_NOERR) {
        c->out_ncid = -1;
        return copy_ncerr(st, "creating %s", o->out);
    }
    if (restore_group(c, c->in_ncid, c->out_ncid) != 0 ||
        extract_history(c->out_ncid, c->o->argc, c->o->argv) != 0 ||
        run_jobs(c) != 0)
        return -1;
    st = nc_close(c->out_ncid);
    c->out_ncid = -1;
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing %s", o->out);
    return 0;
}

/* ---- upgrade ----------------------------------------------------------- */

/* Counts the storage groups of group g and below by format version: *old
 * those of versions 1-4, *cur those of 5 and on. */
static int count_formats(int g, size_t *old, size_t *cur)
{
    int version, st;
    if (raster_is_raster_group(g)) {
        st = nc_get_att_int(g, NC_GLOBAL, "raster_format_version", &version);
        /* a failed definition's group has no version: readers skip it */
        if (st == NC_ENOTATT)
            return 0;
        if (st != NC_NOERR)
            return copy_ncerr(st, "reading a storage group's format version");
        if (version < 5)
            (*old)++;
        else
            (*cur)++;
        return 0;
    }
    int *ids, n, rc = 0;
    if (subgroups(g, &ids, &n) != 0) {
        free(ids);
        return -1;
    }
    for (int i = 0; i < n && rc == 0; i++)
        rc = count_formats(ids[i], old, cur);
    free(ids);
    return rc;
}

/* The weight variable of the statistics `rv` keeps, or NULL (none kept, or
 * kept unweighted). The name is stored once per variable; any region asks. */
static int kept_weights(raster_var *rv, const char **weights)
{
    *weights = NULL;
    const raster_mesh *mesh = raster_var_mesh(rv);
    if (!mesh)
        return raster_err(raster_var_name(rv), RASTER_EFORMAT);
    raster_region_stats first;
    if (raster_mesh_nregions(mesh) == 0 ||
        raster_mesh_region(mesh, 0, &first) != RASTER_OK)
        return 0;
    size_t fresh, stale;
    int r = raster_var_stats_info(rv, first.id, weights, &fresh, &stale);
    if (r == RASTER_ENOTFOUND) { /* the variable keeps no statistics */
        *weights = NULL;
        return 0;
    }
    return r == RASTER_OK ? 0 : raster_err(raster_var_name(rv), r);
}

/* Defines in group `out` of the new file the format 5 copy of raster
 * variable rv: its dimensions, base chunk shape, mask, compression,
 * statistics weights and attributes (the placeholder's note aside: format
 * 5 writes its own). */
static int def_upgraded(ctx *c, raster_var *rv, int out)
{
    int ndims = raster_var_ndims(rv), dimids[MAX_RASTER_DIMS];
    int odims[MAX_RASTER_DIMS], ag, av, natts, st;
    size_t shape[MAX_RASTER_DIMS], chunk[MAX_RASTER_DIMS];
    const char *name = raster_var_name(rv);
    char gpath[1024], what[512];
    copy_group_path(out, gpath, sizeof gpath);
    int r = raster_var_dims(rv, dimids, shape, chunk);
    if (r != RASTER_OK)
        return raster_err(name, r);
    if (out_dimids(c, name, ndims, dimids, odims) != 0)
        return -1;
    const raster_mask *mask = raster_var_mask(rv);
    if (!mask)
        return copy_err("%s: its mask: %s", name, raster_errmsg());
    raster_compression z;
    const char *weights;
    if ((r = raster_var_compression(rv, &z)) != RASTER_OK)
        return raster_err(name, r);
    if (kept_weights(rv, &weights) != 0)
        return -1;
    raster_var *nv;
    r = raster_def_var(c->up, out, name, raster_var_type(rv), ndims, odims,
                       chunk, mask, &nv);
    if (r != RASTER_OK)
        return raster_err(name, r);
    if (!is_plain(&z) && (r = raster_var_set_compression(nv, &z)) !=
                             RASTER_OK) {
        copy_describe_compression(&z, what, sizeof what);
        return copy_err("%s%s%s: cannot be stored in format 5 with its %s: "
                        "%s (%s)", strcmp(gpath, "/") ? gpath + 1 : "",
                        strcmp(gpath, "/") ? "/" : "", name, what,
                        raster_errmsg(), raster_strerror(r));
    }
    if (weights && (r = raster_var_set_stats_weights(nv, weights)) !=
                       RASTER_OK)
        return raster_err(name, r);
    raster_var_attributes(rv, &ag, &av);
    /* the fill mode too (nccopy under the shim writes every variable
     * without fill), as the shim's own format 5 variables keep it */
    int nofill = 0, ng, nvid;
    if ((st = nc_inq_var_fill(ag, av, &nofill, NULL)) != NC_NOERR)
        return copy_ncerr(st, "%s: reading its fill mode", name);
    raster_var_attributes(nv, &ng, &nvid);
    if (nofill && (st = nc_def_var_fill(ng, nvid, NC_NOFILL, NULL)) !=
                      NC_NOERR)
        return copy_ncerr(st, "%s: setting no-fill mode", name);
    if ((st = nc_inq_varnatts(ag, av, &natts)) != NC_NOERR)
        return copy_ncerr(st, "%s: counting attributes", name);
    for (int i = 0; i < natts; i++) {
        char aname[NC_MAX_NAME + 1];
        nc_type atype;
        size_t alen;
        void *val;
        if ((st = nc_inq_attname(ag, av, i, aname)) != NC_NOERR)
            return copy_ncerr(st, "%s: naming attribute %d", name, i);
        /* netCDF writes the quantization attribute for the setting itself */
        int skip = strcmp(aname, RASTER_NOTE_ATT) == 0;
        for (const char *const *q = copy_quantize_atts;
             *q && z.quantize_mode; q++)
            skip |= strcmp(aname, *q) == 0;
        if (skip)
            continue;
        if (copy_att_read(ag, av, aname, &atype, &alen, &val) != 0)
            return -1;
        r = raster_var_put_att(nv, aname, atype, alen, val);
        copy_att_free(atype, alen, val);
        if (r != RASTER_OK)
            return raster_err(name, r);
    }
    if (!quiet)
        fprintf(stderr, "rasterconvert: upgrade %s%s%s\n",
                strcmp(gpath, "/") ? gpath + 1 : "",
                strcmp(gpath, "/") ? "/" : "", name);
    job *j = add_job(c);
    if (!j)
        return -1;
    j->kind = JOB_UPGRADE;
    j->rv = rv;
    j->out_rv = nv;
    if (count_bytes(c, rv, out, ndims, shape) != 0)
        return -1;
    if (c->o->verbose) {
        printf("%s%s%s: format 5, base chunk", strcmp(gpath, "/") ? gpath : "",
               strcmp(gpath, "/") ? "/" : "", name);
        for (int i = 0; i < ndims; i++)
            printf("%s%zu", i ? "," : " ", chunk[i]);
        printf(", %zu regions, %s%s%s\n",
               raster_mesh_nregions(raster_var_mesh(rv)),
               is_plain(&z) ? "no compression" : (
                   copy_describe_compression(&z, what, sizeof what), what),
               weights ? ", statistics weighted by " : "",
               weights ? weights : "");
    }
    return 0;
}

/* The groups of `in` but raster's own first (as convert_group: a storage
 * group must not take a name one of them has), then its variables in
 * their order, then the groups' contents. */
static int upgrade_group(ctx *c, int in, int out)
{
    int nvars, st, rc = 0;
    if (copy_dims(in, out, &c->dims) != 0 ||
        copy_atts(in, NC_GLOBAL, out, NC_GLOBAL, NULL) != 0)
        return -1;
    int *ids, n;
    if (subgroups(in, &ids, &n) != 0) {
        free(ids);
        return -1;
    }
    int *out_ids = malloc((size_t)(n ? n : 1) * sizeof *out_ids);
    if (!out_ids) {
        free(ids);
        return copy_err("out of memory");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        out_ids[i] = -1;
        if (!raster_is_raster_group(ids[i]))
            rc = def_subgroup(ids[i], out, &out_ids[i]);
    }
    if (rc == 0 && (st = nc_inq_nvars(in, &nvars)) != NC_NOERR)
        rc = copy_ncerr(st, "counting variables");
    for (int v = 0; rc == 0 && v < nvars; v++) {
        raster_var *rv = raster_var_by_varid(c->rf, in, v);
        rc = rv ? def_upgraded(c, rv, out) : def_plain(c, in, v, out);
    }
    for (int i = 0; i < n && rc == 0; i++)
        if (out_ids[i] >= 0)
            rc = upgrade_group(c, ids[i], out_ids[i]);
    free(ids);
    free(out_ids);
    return rc;
}

/* 0: FILE's new form written under out->tmp, ready to take its place;
 * 1: nothing to upgrade (said on stderr), FILE untouched; -1: error. */
static int upgrade(ctx *c, copy_out *out)
{
    const options *o = c->o;
    if (stat(o->in, &c->in_st) != 0)
        return copy_err("cannot upgrade %s: %s", o->in, strerror(errno));
    if (!S_ISREG(c->in_st.st_mode))
        return copy_err("cannot upgrade %s: not a regular file", o->in);
    /* netCDF then opens the placeholders' variables as usual */
    int rc = raster_filter_register();
    if (rc != RASTER_OK)
        return raster_err("registering raster's filter", rc);
    int ncid, st = nc_open(o->in, NC_NOWRITE, &ncid);
    if (st != NC_NOERR)
        return copy_ncerr(st, "cannot open %s", o->in);
    size_t old = 0, cur = 0;
    rc = count_formats(ncid, &old, &cur);
    if ((st = nc_close(ncid)) != NC_NOERR && rc == 0)
        rc = copy_ncerr(st, "closing %s", o->in);
    if (rc != 0)
        return -1;
    if (old == 0) {
        if (!quiet && cur == 0)
            fprintf(stderr, "rasterconvert: %s holds no raster variable: "
                    "nothing to upgrade, left as it was\n", o->in);
        else if (!quiet)
            fprintf(stderr, "rasterconvert: %s: its %zu raster variable%s "
                    "of format 5 already: nothing to upgrade, left as it "
                    "was\n", o->in, cur, cur == 1 ? " is" : "s are");
        return 1;
    }
    c->nold = old;
    rc = raster_open(o->in, RASTER_READ, &c->rf);
    if (rc == RASTER_EINCOMPLETE)
        return copy_err("cannot upgrade %s: %s (its writer never closed "
                        "it)", o->in, raster_errmsg());
    if (rc != RASTER_OK)
        return copy_err("cannot upgrade %s: %s (%s)", o->in, raster_errmsg(),
                        raster_strerror(rc));
    c->in_ncid = raster_file_ncid(c->rf);
    if (c->in_ncid < 0)
        return copy_err("cannot upgrade %s: %s", o->in, raster_errmsg());
    /* a symbolic link stays one: the file it names is rewritten */
    char *target = realpath(o->in, NULL);
    if (!target)
        return copy_err("cannot upgrade %s: %s", o->in, strerror(errno));
    rc = copy_check_no_user_types(c->in_ncid, o->in) != 0 ||
         copy_out_begin(out, target) != 0;
    free(target);
    if (rc)
        return -1;
    if (c->in_st.st_nlink > 1)
        copy_err("warning: %s has %lu names (hard links): the others keep "
                 "the file as it was", o->in,
                 (unsigned long)c->in_st.st_nlink - 1);
    if (!quiet)
        fprintf(stderr, "rasterconvert: HDF5 cannot change a variable's "
                "filters in place: %s is written anew through a temporary "
                "file beside it\n", o->in);
    rc = raster_create(out->tmp, &c->up);
    if (rc == RASTER_OK)
        rc = raster_file_set_format(c->up, 5);
    if (rc != RASTER_OK)
        return raster_err(out->tmp, rc);
    c->out_ncid = raster_file_ncid(c->up);
    if (c->out_ncid < 0)
        return copy_err("%s: %s", out->tmp, raster_errmsg());
    if (upgrade_group(c, c->in_ncid, c->out_ncid) != 0 || run_jobs(c) != 0)
        return -1;
    rc = raster_close(c->up);
    c->up = NULL;
    if (rc != RASTER_OK)
        return raster_err(out->tmp, rc);
    return 0;
}

/* Renames the upgraded file over FILE, with FILE's permissions, owner and
 * group, unless FILE changed meanwhile (another writer's work would be
 * lost). */
static int upgrade_commit(const ctx *c, copy_out *out)
{
    struct stat now;
    const struct stat *was = &c->in_st;
    if (stat(c->o->in, &now) != 0) {
        int e = errno;
        copy_out_abort(out);
        return copy_err("%s: %s", c->o->in, strerror(e));
    }
    if (now.st_dev != was->st_dev || now.st_ino != was->st_ino ||
        now.st_size != was->st_size ||
        now.st_mtim.tv_sec != was->st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != was->st_mtim.tv_nsec) {
        copy_out_abort(out);
        return copy_err("%s changed while it was upgraded: left as it is "
                        "now; upgrade it again", c->o->in);
    }
    return copy_out_commit_as(out, was->st_mode,
                              was->st_uid == geteuid() ? (uid_t)-1
                                                       : was->st_uid,
                              was->st_gid == getegid() ? (gid_t)-1
                                                       : was->st_gid);
}

/* ---- main -------------------------------------------------------------- */

static int split_vars(const char *text, options *o)
{
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    o->vars = calloc(n, sizeof *o->vars);
    if (!o->vars)
        return -1;
    const char *p = text;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0)
            return -1;
        o->vars[o->nvars] = strndup(p, len);
        if (!o->vars[o->nvars++])
            return -1;
        if (!e)
            return 0;
        p = e + 1;
    }
}

/* --quantize MODE,NSD; 0 or -1. Whether NSD fits the variable's type
 * (7 digits, 23 bits for float) is netCDF's and raster's to say. */
static int parse_quantize(const char *text, options *o)
{
    static const struct { const char *name; int mode, max; } modes[] = {
        {"bitgroom", NC_QUANTIZE_BITGROOM, NC_QUANTIZE_MAX_DOUBLE_NSD},
        {"granularbr", NC_QUANTIZE_GRANULARBR, NC_QUANTIZE_MAX_DOUBLE_NSD},
        {"bitround", NC_QUANTIZE_BITROUND, NC_QUANTIZE_MAX_DOUBLE_NSB},
    };
    const char *comma = strchr(text, ',');
    if (!comma)
        return -1;
    char *end;
    long nsd = strtol(comma + 1, &end, 10);
    if (end == comma + 1 || *end)
        return -1;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strlen(modes[i].name) == (size_t)(comma - text) &&
            strncasecmp(text, modes[i].name, (size_t)(comma - text)) == 0) {
            if (nsd < 1 || nsd > modes[i].max)
                return -1;
            o->qmode = modes[i].mode;
            o->qnsd = (int)nsd;
            return 0;
        }
    return -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"mask", required_argument, NULL, 'm'},
        {"names", required_argument, NULL, 'n'},
        {"vars", required_argument, NULL, 'v'},
        {"chunk", required_argument, NULL, 'c'},
        {"buffer", required_argument, NULL, 'b'},
        {"format", required_argument, NULL, 'f'},
        {"weights", required_argument, NULL, 'W'},
        {"restore", no_argument, NULL, 'r'},
        {"upgrade", no_argument, NULL, 'u'},
        {"deflate", required_argument, NULL, 'd'},
        {"shuffle", no_argument, NULL, 's'},
        {"quantize", required_argument, NULL, 'q'},
        {"no-compress", no_argument, NULL, 'p'},
        {"verbose", no_argument, NULL, 'w'},
        {"quiet", no_argument, NULL, 'Q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    opterr = 0; /* cli_bad_option() words the message */
    while ((opt = getopt_long(argc, argv, CLI_OPTSTRING(""), longopts, NULL)) != -1) {
        switch (opt) {
        case 'm':
            if (cli_mask_option("rasterconvert", optarg, &o->mask_file,
                                &o->mask_var) != CLI_OK)
                return CLI_EUSAGE;
            break;
        case 'n':
            o->names = optarg;
            break;
        case 'v':
            if (o->vars) {
                fprintf(stderr, "rasterconvert: give --vars once\n");
                return CLI_EUSAGE;
            }
            if (split_vars(optarg, o) != 0) {
                fprintf(stderr, "rasterconvert: --vars wants A,B,... "
                        "(non-empty names), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'c':
            if (cli_parse_sizes(optarg, o->chunk, MAX_RASTER_DIMS,
                                &o->nchunk) != 0 || o->nchunk < 2) {
                fprintf(stderr, "rasterconvert: --chunk wants 2 to %d "
                        "positive integers (T,Z,H,W), got '%s'\n",
                        MAX_RASTER_DIMS, optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'b':
            if (cli_parse_bytes(optarg, &o->budget) != 0) {
                fprintf(stderr, "rasterconvert: --buffer wants a positive "
                        "byte count (e.g. 64M), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'W': o->weights = optarg; break;
        case 'f':
            if (strcmp(optarg, "2") != 0 && strcmp(optarg, "3") != 0 &&
                strcmp(optarg, "4") != 0 && strcmp(optarg, "5") != 0) {
                fprintf(stderr, "rasterconvert: --format wants 2 to 5, "
                        "got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->format = optarg[0] - '0';
            break;
        case 'd': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end || n < 0 || n > 9) {
                fprintf(stderr, "rasterconvert: --deflate wants a level 0 to "
                        "9, got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->deflate = (int)n;
            break;
        }
        case 's': o->shuffle = 1; break;
        case 'q':
            if (parse_quantize(optarg, o) != 0) {
                fprintf(stderr, "rasterconvert: --quantize wants MODE,NSD "
                        "(MODE bitgroom, granularbr or bitround; NSD 1-15 "
                        "digits, 1-52 bits for bitround), got '%s'\n",
                        optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'p': o->no_compress = 1; break;
        case 'r': o->restore = 1; break;
        case 'u': o->upgrade = 1; break;
        case 'w': o->verbose = 1; break;
        case 'Q': quiet = 1; progress_set_quiet(1); break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("rasterconvert (raster) %s\n",
                         raster_version_string());
                  return -1;
        default: return cli_bad_option("rasterconvert", opt, argv);
        }
    }
    if (o->upgrade) {
        if (o->restore || o->mask_file || o->names || o->vars ||
            o->nchunk || o->format || o->weights || o->deflate >= 0 ||
            o->shuffle || o->qmode >= 0 || o->no_compress) {
            fprintf(stderr, "rasterconvert: --upgrade takes no --restore, "
                    "--mask, --names, --vars, --chunk, --format, --weights "
                    "or compression option (each variable keeps its own)\n");
            return CLI_EUSAGE;
        }
        if (argc - optind != 1) {
            fprintf(stderr, "rasterconvert: --upgrade wants one file, got "
                    "%d file arguments (try --help)\n", argc - optind);
            return CLI_EUSAGE;
        }
        o->in = o->out = argv[optind];
        return CLI_OK;
    }
    if (argc - optind != 2) {
        fprintf(stderr, "rasterconvert: want IN.nc and OUT.nc, got %d file "
                "argument%s (try --help)\n", argc - optind,
                argc - optind == 1 ? "" : "s");
        return CLI_EUSAGE;
    }
    o->in = argv[optind];
    o->out = argv[optind + 1];
    if (o->restore && (o->mask_file || o->names || o->vars || o->nchunk ||
                       o->format || o->deflate >= 0 || o->shuffle ||
                       o->qmode >= 0 || o->no_compress)) {
        fprintf(stderr, "rasterconvert: --restore takes no --mask, --names, "
                "--vars, --chunk, --format or compression option (it "
                "restores the variables' own)\n");
        return CLI_EUSAGE;
    }
    if (o->weights && (o->restore || o->format == 2)) {
        fprintf(stderr, "rasterconvert: --weights goes with no --restore or "
                "--format 2 (which keep no statistics)\n");
        return CLI_EUSAGE;
    }
    if (o->no_compress && (o->deflate >= 0 || o->shuffle || o->qmode >= 0)) {
        fprintf(stderr, "rasterconvert: --no-compress goes with no --deflate, "
                "--shuffle or --quantize\n");
        return CLI_EUSAGE;
    }
    if (!o->restore && !o->mask_file) {
        fprintf(stderr, "rasterconvert: --mask FILE:VAR is required (or "
                "--restore or --upgrade; try --help)\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

/* The default data buffer: an eighth of the memory, clamped to 64 MiB -
 * 1 GiB. direct.c writes the records of one step side by side in each
 * store, so the larger the step, the longer the stretch of the file a
 * region read streams when the data is not cached (docs/PERFORMANCE.md). */
static size_t default_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    size_t cap = (size_t)1 << 30;
    if (pages <= 0 || page <= 0)
        return COPY_BLOCK_BYTES;
    size_t eighth = (size_t)pages / 8 * (size_t)page;
    return eighth < COPY_BLOCK_BYTES ? COPY_BLOCK_BYTES
                                     : eighth > cap ? cap : eighth;
}

/* Size of file `path` for the summary ("?" when it cannot be read). */
static void file_size(const char *path, char *buf, size_t len)
{
    struct stat st;
    if (stat(path, &st) == 0)
        progress_human((unsigned long long)st.st_size, buf, len);
    else
        snprintf(buf, len, "?");
}

/* The closing line of a conversion that succeeded. */
static void summary(const ctx *c)
{
    size_t moved = 0, copied = 0;
    for (size_t i = 0; i < c->njobs; i++)
        c->jobs[i].kind == JOB_PLAIN ? copied++ : moved++;
    char in[32], out[32];
    if (c->o->upgrade) {
        progress_human((unsigned long long)c->in_st.st_size, in, sizeof in);
        file_size(c->o->in, out, sizeof out);
        progress_summary("%s (%s -> %s): upgraded %zu variable%s to format "
                         "5 through a temporary file, %zu copied%s",
                         c->o->in, in, out, c->nold, c->nold == 1 ? "" : "s",
                         copied, moved > c->nold ? " (and variables of "
                         "format 5 rewritten as they were)" : "");
        return;
    }
    file_size(c->o->in, in, sizeof in);
    file_size(c->o->out, out, sizeof out);
    progress_summary("%s (%s) -> %s (%s): %zu variable%s %s, %zu copied",
                     c->o->in, in, c->o->out, out, moved,
                     moved == 1 ? "" : "s",
                     c->o->restore ? "restored" : "stored by region", copied);
}

int main(int argc, char **argv)
{
    options o = {.budget = default_budget(), .deflate = -1, .qmode = -1,
                 .argc = argc};
    cli_set_prog("rasterconvert");
    progress_start();
    cli_shim_settings_off();
    /* getopt_long reorders argv: the history line keeps it as typed */
    o.argv = malloc((size_t)argc * sizeof *o.argv);
    if (!o.argv) {
        fprintf(stderr, "rasterconvert: out of memory\n");
        return CLI_EINPUT;
    }
    memcpy(o.argv, argv, (size_t)argc * sizeof *argv);
    int status = parse_args(argc, argv, &o);
    if (status == CLI_OK) {
        ctx c = {.o = &o, .in_ncid = -1, .out_ncid = -1,
                 .probe_ncid = -1};
        copy_out out = {0};
        c.vars_used = calloc(o.nvars ? o.nvars : 1, sizeof *c.vars_used);
        int rc = !c.vars_used ? copy_err("out of memory")
                 : o.upgrade  ? upgrade(&c, &out)
                 : o.restore  ? restore(&c, &out)
                              : convert(&c, &out);
        int untouched = o.upgrade && rc == 1; /* nothing to upgrade */
        if (untouched)
            rc = 0;
        if (o.upgrade && rc != 0) {
            /* the temporary file goes and the failure is told first: after
             * a failed write (EFBIG, ENOSPC) HDF5 1.10 may crash in the
             * abort below or at exit */
            copy_out_abort(&out);
            copy_err("%s left as it was", o.in);
            raster_abandon(c.up); /* set only on failure */
            raster_close(c.rf);
        } else if (o.upgrade) {
            /* FILE is closed before its new form takes its name */
            int r = raster_close(c.rf);
            if (r != RASTER_OK) {
                copy_out_abort(&out);
                rc = raster_err(o.in, r);
                copy_err("%s left as it was", o.in);
            } else if (out.tmp) {
                rc = upgrade_commit(&c, &out); /* says why when it fails */
            }
        } else if (!o.restore && c.rf) {
            raster_close(c.rf); /* failed: the temporary file goes */
        }
        if (o.upgrade) {
            /* done above */
        } else if (o.restore) {
            if (c.out_ncid >= 0)
                nc_close(c.out_ncid);
            raster_close(c.rf);
        } else if (c.in_ncid >= 0) {
            nc_close(c.in_ncid);
        }
        raster_abandon(c.probe); /* leaves the ncid, which was ours */
        if (c.probe_ncid >= 0)
            nc_abort(c.probe_ncid);
        if (rc == 0 && out.tmp)
            rc = copy_out_commit(&out);
        else
            copy_out_abort(&out);
        if (rc == 0 && !untouched)
            summary(&c);
        status = rc == 0 ? CLI_OK : CLI_EINPUT;
        raster_mask_free(c.mask);
        copy_dimmap_free(&c.dims);
        free(c.jobs);
        free(c.vars_used);
    } else if (status < 0) {
        status = CLI_OK; /* --help, --version */
    }
    free(o.argv);
    free(o.mask_file);
    free(o.mask_var);
    for (size_t i = 0; i < o.nvars; i++)
        free(o.vars[i]);
    free(o.vars);
    if (fflush(stdout) != 0 && status == CLI_OK)
        status = CLI_EINPUT;
    return status;
}
