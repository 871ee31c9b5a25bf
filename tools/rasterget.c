/*
 * rasterget - writes one region (or a set of regions) of a raster variable
 * to a new netCDF-4 file, packed (only the regions' cells), as their
 * bounding box or as the whole grid (fill value outside the regions).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <netcdf.h>

#include "cli.h"
#include "copy.h"
#include "extract.h"
#include "raster.h"
#include "stat.h"

#define MAX_RASTER_DIMS 32

static void usage(FILE *f)
{
    fputs(
"usage: rasterget FILE --var V --region ID|NAME [--region ...]\n"
"                 [--layout packed|bbox|full] [--start S,..] [--count C,..]\n"
"                 -o OUT.nc\n"
"       rasterget FILE --var V --region R [--region ...] [--start/--count]\n"
"                 --stat mean|sum|min|max|std|count [--weights W]\n"
"                 (-o OUT.nc | --json)\n"
"\n"
"Reads regions of raster variable V of raster file FILE (written by raster,\n"
"e.g. by rasterconvert) and writes them to the new netCDF-4 file OUT.nc.\n"
"\n"
"  --var V           the raster variable (its name; a path such as\n"
"                    /ocean/TEMP when several groups hold one of that name)\n"
"  --region R        a region id, or a name from the mask's CF flag_meanings\n"
"                    (case-insensitive, '_' or ' '); repeat for a set\n"
"  --layout L        packed (default): V(outer..., cell) holding exactly the\n"
"                      regions' cells in numpy order (var[..., isin(mask,\n"
"                      ids)]), with int64 cell_y(cell) and cell_x(cell), the\n"
"                      grid row and column of each cell;\n"
"                    bbox: V(outer..., Y, X) over the regions' bounding box,\n"
"                      fill value outside the regions;\n"
"                    full: V(outer..., Y, X) over the whole grid, fill value\n"
"                      outside the regions\n"
"  --start S,..      first index of each outer dimension (default: 0s)\n"
"  --count C,..      records of each outer dimension (default: to the end)\n"
"  -o, --output F    the file to write (written under a temporary name and\n"
"                    renamed when complete; never FILE itself, also through\n"
"                    a link)\n"
"  --buffer BYTES    bound of the data buffer (K, M, G suffixes; default 64M;\n"
"                    at least one record is read at a time)\n"
"  --quiet           no progress and no summary (errors only)\n"
"  --stat S          instead of the values, statistic S of the regions' valid\n"
"                    cells (not the fill value, not NaN) at every outer\n"
"                    index, in float64: count, sum, mean, min, max or std\n"
"                    (population standard deviation, numpy's ddof=0).\n"
"                    OUT.nc then holds V(outer...) as double (NaN where\n"
"                    undefined) with cell_methods \"area: S where REGION\"\n"
"  --weights W       weight S by the 2-D variable W of FILE on the grid\n"
"                    (e.g. a cell area): mean = sum(w*x)/sum(w), sum =\n"
"                    sum(w*x), std = sqrt(sum(w*(x-mean)^2)/sum(w)), over\n"
"                    cells whose weight is valid too; min, max, count\n"
"                    ignore weights\n"
"  --json            with --stat: print one JSON object on stdout instead\n"
"                    of writing a file: {\"var\", \"regions\" (names), \"ids\",\n"
"                    \"stat\", \"weights\", \"dims\" (outer dimension names),\n"
"                    \"start\", \"values\" (nested lists over the outer\n"
"                    dimensions, null where undefined)}\n"
"  --help            this text\n"
"  --version         print raster's version\n"
"\n"
"The output keeps V's type and attributes (_FillValue too), the names of its\n"
"dimensions (outer ones with the selected lengths; unlimited stays\n"
"unlimited), the 1-D coordinate variables of those dimensions (sliced) and\n"
"the input's global attributes, with a line added to history. It is\n"
"CF-complete: the variables V depends on come along (those its coordinates\n"
"attribute names, e.g. XLAT XLONG XTIME or TLAT TLONG time; char variables\n"
"along its first dimension, e.g. Times; bounds; grid_mapping), their outer\n"
"dimensions sliced as V's, their grid dimensions cut to the box (bbox) or\n"
"gathered cell by cell (packed); names that cannot come along are dropped\n"
"from coordinates. A packed output's int list variable cell(cell) holds\n"
"each cell's index in the grid flattened row-major, with compress naming\n"
"the grid dimensions (CF compression by gathering: CF software scatters it\n"
"back to the grid). V also gets raster_regions (the ids),\n"
"raster_layout, raster_start (outer start indices) and, for bbox and full,\n"
"the bounding box in grid indices, half-open: raster_bbox_y0, raster_bbox_x0,\n"
"raster_bbox_y1, raster_bbox_x1. A bbox output's cell (i, j) is grid cell\n"
"(raster_bbox_y0 + i, raster_bbox_x0 + j).\n"
"\n"
"Reads longer than a second report progress on stderr: a bar on a\n"
"terminal, else (a batch job's log) a line at every tenth and at least\n"
"every 10 s. An extract that succeeds ends with a one-line summary on\n"
"stderr: cells, regions, records, layout, output and its size, time.\n"
"\n"
"Exit status: 0 ok, 1 bad input or I/O error, 2 bad usage.\n", f);
}

typedef struct options {
    const char *file, *var, *out;
    char **regions;
    size_t nregions;
    int layout;
    size_t start[MAX_RASTER_DIMS], count[MAX_RASTER_DIMS];
    size_t nstart, ncount;
    int has_start, has_count;
    size_t budget;
    int argc; /* the command line, for the history line */
    char **argv;
    int stat;            /* RASTER_STAT_*, -1: values, not a statistic */
    const char *weights; /* --weights */
    int json;            /* --json */
} options;

static const char *layout_names[] = {"packed", "bbox", "full"};

static int raster_err(const char *what, int rc)
{
    return copy_err("%s: %s (%s)", what, raster_errmsg(),
                    raster_strerror(rc));
}

/* Finds V by name, or by path when it holds a '/'. */
static int find_var(raster_file *f, const char *file, const char *want,
                    raster_var **out)
{
    *out = NULL;
    for (size_t i = 0; i < raster_file_nvars(f); i++) {
        raster_var *v = raster_file_var(f, i);
        const char *name = raster_var_name(v);
        if (strchr(want, '/')) {
            char gpath[1024], path[2048];
            copy_group_path(raster_var_parent(v), gpath, sizeof gpath);
            snprintf(path, sizeof path, "%s/%s",
                     strcmp(gpath, "/") ? gpath : "", name);
            if (strcmp(want[0] == '/' ? want + 1 : want, path + 1) != 0)
                continue;
        } else if (strcmp(want, name) != 0) {
            continue;
        }
        *out = v;
        return 0;
    }
    fprintf(stderr, "rasterget: no raster variable '%s' in %s (it has:",
            want, file);
    for (size_t i = 0; i < raster_file_nvars(f); i++)
        fprintf(stderr, " %s", raster_var_name(raster_file_var(f, i)));
    fprintf(stderr, ")\n");
    return -1;
}

static int put_ll(int g, int v, const char *name, long long value)
{
    int st = nc_put_att_longlong(g, v, name, NC_INT64, 1, &value);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing attribute %s", name);
}

typedef struct job {
    const options *o;
    raster_file *file;
    raster_var *v;
    int32_t *ids;
    size_t nids;
    int nouter;
    size_t shape[MAX_RASTER_DIMS];
    int dimids[MAX_RASTER_DIMS];
    size_t ostart[MAX_RASTER_DIMS], ocount[MAX_RASTER_DIMS];
    size_t plane, box[4], elem;
    size_t *cy, *cx; /* packed: each cell's grid row and column */
    int out, ovar;
} job;

/* Defines the output file's dimensions, variables and attributes. */
static int define(job *j, int in)
{
    const options *o = j->o;
    int out = j->out, st, parent = raster_var_parent(j->v);
    int nd = j->nouter, odims[MAX_RASTER_DIMS + 1];
    const char *name = raster_var_name(j->v);
    char dname[NC_MAX_NAME + 1];
    for (int i = 0; i < j->nouter; i++) {
        if ((st = nc_inq_dimname(parent, j->dimids[i], dname)) != NC_NOERR)
            return copy_ncerr(st, "naming dimension %d", i);
        size_t len = copy_dim_unlimited(parent, j->dimids[i]) ? NC_UNLIMITED
                                                              : j->ocount[i];
        if ((st = nc_def_dim(out, dname, len, &odims[i])) != NC_NOERR)
            return copy_ncerr(st, "defining dimension %s", dname);
    }
    int grid_dims[2];
    if (o->layout == RASTER_LAYOUT_PACKED) {
        if ((st = nc_def_dim(out, "cell", j->plane, &odims[nd++])) !=
            NC_NOERR)
            return copy_ncerr(st, "defining dimension cell");
        /* the whole grid's dimensions, which the list variable names */
        for (int k = 0; k < 2; k++)
            if ((st = nc_inq_dimname(parent, j->dimids[j->nouter + k],
                                     dname)) != NC_NOERR ||
                (st = nc_def_dim(out, dname, j->shape[j->nouter + k],
                                 &grid_dims[k])) != NC_NOERR)
                return copy_ncerr(st, "defining grid dimension %s", dname);
    } else {
        for (int k = 0; k < 2; k++) {
            int d = j->dimids[j->nouter + k];
            size_t len = o->layout == RASTER_LAYOUT_BBOX
                             ? j->box[2 + k] - j->box[k]
                             : j->shape[j->nouter + k];
            if ((st = nc_inq_dimname(parent, d, dname)) != NC_NOERR ||
                (st = nc_def_dim(out, dname, len, &odims[nd++])) != NC_NOERR)
                return copy_ncerr(st, "defining grid dimension %s", dname);
            grid_dims[k] = odims[nd - 1];
        }
    }
    if ((st = nc_def_var(out, name, raster_var_type(j->v), nd, odims,
                         &j->ovar)) != NC_NOERR)
        return copy_ncerr(st, "defining variable %s", name);
    int ag, av;
    raster_var_attributes(j->v, &ag, &av);
    if (copy_atts(ag, av, out, j->ovar, NULL) != 0)
        return -1;
    int *ids = malloc(j->nids * sizeof *ids);
    if (!ids)
        return copy_err("out of memory");
    for (size_t i = 0; i < j->nids; i++)
        ids[i] = (int)j->ids[i];
    st = nc_put_att_int(out, j->ovar, "raster_regions", NC_INT, j->nids, ids);
    free(ids);
    if (st != NC_NOERR)
        return copy_ncerr(st, "writing attribute raster_regions");
    const char *lname = layout_names[o->layout];
    if ((st = nc_put_att_text(out, j->ovar, "raster_layout", strlen(lname),
                              lname)) != NC_NOERR)
        return copy_ncerr(st, "writing attribute raster_layout");
    if (j->nouter > 0) {
        long long s[MAX_RASTER_DIMS];
        for (int i = 0; i < j->nouter; i++)
            s[i] = (long long)j->ostart[i];
        if ((st = nc_put_att_longlong(out, j->ovar, "raster_start", NC_INT64,
                                      (size_t)j->nouter, s)) != NC_NOERR)
            return copy_ncerr(st, "writing attribute raster_start");
    }
    if (o->layout != RASTER_LAYOUT_PACKED &&
        (put_ll(out, j->ovar, "raster_bbox_y0", (long long)j->box[0]) ||
         put_ll(out, j->ovar, "raster_bbox_x0", (long long)j->box[1]) ||
         put_ll(out, j->ovar, "raster_bbox_y1", (long long)j->box[2]) ||
         put_ll(out, j->ovar, "raster_bbox_x1", (long long)j->box[3])))
        return -1;
    /* coordinates of the outer dimensions, and of the grid for bbox/full */
    for (int i = 0; i < j->nouter; i++) {
        int cg, cv;
        if (copy_find_coord(parent, j->dimids[i], &cg, &cv) &&
            copy_coord_slice(cg, cv, j->ostart[i], j->ocount[i], out, odims[i]))
            return -1;
    }
    if (o->layout != RASTER_LAYOUT_PACKED) {
        for (int k = 0; k < 2; k++) {
            int cg, cv, d = j->dimids[j->nouter + k];
            size_t s = o->layout == RASTER_LAYOUT_BBOX ? j->box[k] : 0;
            size_t n = o->layout == RASTER_LAYOUT_BBOX
                           ? j->box[2 + k] - j->box[k]
                           : j->shape[j->nouter + k];
            if (copy_find_coord(parent, d, &cg, &cv) &&
                copy_coord_slice(cg, cv, s, n, out, odims[j->nouter + k]))
                return -1;
        }
    }
    /* what V depends on (CF): its coordinates, time, bounds, ... */
    extract_sel sel = {
        .file = j->file, .layout = o->layout, .nouter = j->nouter,
        .dimids = j->dimids, .shape = j->shape, .ostart = j->ostart,
        .ocount = j->ocount, .box = j->box, .ncells = j->plane,
        .cy = j->cy, .cx = j->cx, .out = out, .odims = odims,
        .cell_dim = odims[j->nouter],
        .grid_dims = {grid_dims[0], grid_dims[1]}};
    if (o->layout == RASTER_LAYOUT_PACKED &&
        extract_list_variable(&sel, "cell") != 0)
        return -1;
    if (extract_dependencies(&sel, ag, av) != 0)
        return -1;
    /* the input's global attributes, and where the data came from */
    if (copy_atts(in, NC_GLOBAL, out, NC_GLOBAL, NULL) != 0)
        return -1;
    if ((st = nc_put_att_text(out, NC_GLOBAL, "raster_source",
                              strlen(o->file), o->file)) != NC_NOERR)
        return copy_ncerr(st, "writing attribute raster_source");
    return extract_history(out, o->argc, o->argv);
}

/* Writes cell_y/cell_x of a packed output. */
static int write_cells(job *j)
{
    int st, cy, cx, dim;
    const char *ynote = "grid row (index along the grid's first dimension) "
                        "of each cell";
    const char *xnote = "grid column (index along the grid's second "
                        "dimension) of each cell";
    if ((st = nc_inq_dimid(j->out, "cell", &dim)) != NC_NOERR ||
        (st = nc_def_var(j->out, "cell_y", NC_INT64, 1, &dim, &cy)) !=
            NC_NOERR ||
        (st = nc_def_var(j->out, "cell_x", NC_INT64, 1, &dim, &cx)) !=
            NC_NOERR ||
        (st = nc_put_att_text(j->out, cy, "long_name", strlen(ynote),
                              ynote)) != NC_NOERR ||
        (st = nc_put_att_text(j->out, cx, "long_name", strlen(xnote),
                              xnote)) != NC_NOERR)
        return copy_ncerr(st, "defining cell_y/cell_x");
    if (j->plane == 0)
        return 0;
    long long *buf = malloc(j->plane * sizeof *buf);
    if (!buf)
        return copy_err("out of memory for %zu cells", j->plane);
    for (size_t i = 0; i < j->plane; i++)
        buf[i] = (long long)j->cy[i];
    st = nc_put_var_longlong(j->out, cy, buf);
    for (size_t i = 0; st == NC_NOERR && i < j->plane; i++)
        buf[i] = (long long)j->cx[i];
    if (st == NC_NOERR)
        st = nc_put_var_longlong(j->out, cx, buf);
    free(buf);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing cell_y/cell_x");
}

/* Reads the regions record block by record block and writes them. */
static int write_data(job *j)
{
    size_t plane_bytes = j->plane * j->elem;
    int nd = j->nouter + (j->o->layout == RASTER_LAYOUT_PACKED ? 1 : 2);
    size_t tail[2];
    if (j->o->layout == RASTER_LAYOUT_PACKED) {
        tail[0] = j->plane;
    } else {
        size_t cells_x = j->o->layout == RASTER_LAYOUT_BBOX
                             ? j->box[3] - j->box[1]
                             : j->shape[j->nouter + 1];
        tail[0] = cells_x ? j->plane / cells_x : 0;
        tail[1] = cells_x;
    }
    if (plane_bytes == 0)
        return 0;
    copy_blocks *b = malloc(sizeof *b);
    if (!b)
        return copy_err("out of memory");
    copy_blocks_init(b, j->nouter, j->ocount, plane_bytes, j->o->budget,
                     NULL);
    void *buf = malloc(b->max_elems * plane_bytes);
    int rc = buf ? 0 : copy_err("out of memory for %zu bytes",
                                b->max_elems * plane_bytes);
    unsigned long long total = plane_bytes;
    for (int i = 0; i < j->nouter; i++)
        total *= j->ocount[i];
    copy_progress p;
    copy_progress_init(&p, total);
    while (rc == 0 && copy_blocks_next(b)) {
        size_t os[MAX_RASTER_DIMS + 1], start[MAX_RASTER_DIMS + 2],
            count[MAX_RASTER_DIMS + 2];
        for (int i = 0; i < j->nouter; i++) {
            os[i] = j->ostart[i] + b->start[i];
            start[i] = b->start[i];
            count[i] = b->count[i];
        }
        for (int i = j->nouter; i < nd; i++) {
            start[i] = 0;
            count[i] = tail[i - j->nouter];
        }
        int r = raster_region_read(j->v, j->ids, j->nids, os, b->count,
                                   j->o->layout, buf);
        if (r != RASTER_OK) {
            rc = raster_err(raster_var_name(j->v), r);
            break;
        }
        int st = nc_put_vara(j->out, j->ovar, start, count, buf);
        if (st != NC_NOERR)
            rc = copy_ncerr(st, "writing %s", j->o->out);
        copy_progress_add(&p, copy_blocks_elems(b) * plane_bytes);
    }
    copy_progress_end(&p);
    free(buf);
    free(b);
    return rc;
}

/* Checks and completes --start/--count; -1 with a message. */
static int outer_box(job *j)
{
    const options *o = j->o;
    const char *name = raster_var_name(j->v);
    if (o->has_start && o->nstart != (size_t)j->nouter)
        return copy_err("--start has %zu values but %s has %d outer "
                        "dimension%s", o->nstart, name, j->nouter,
                        j->nouter == 1 ? "" : "s");
    if (o->has_count && o->ncount != (size_t)j->nouter)
        return copy_err("--count has %zu values but %s has %d outer "
                        "dimension%s", o->ncount, name, j->nouter,
                        j->nouter == 1 ? "" : "s");
    for (int i = 0; i < j->nouter; i++) {
        size_t len = j->shape[i];
        j->ostart[i] = o->has_start ? o->start[i] : 0;
        if (o->has_start && j->ostart[i] >= len)
            return copy_err("%s: start %zu is out of range in outer "
                            "dimension %d (length %zu)", name, j->ostart[i],
                            i, len);
        j->ocount[i] = o->has_count ? o->count[i] : len - j->ostart[i];
        if (j->ocount[i] > len - j->ostart[i])
            return copy_err("%s: start %zu + count %zu runs past the length "
                            "%zu of outer dimension %d", name, j->ostart[i],
                            j->ocount[i], len, i);
    }
    return 0;
}

/* The closing line of an extract that succeeded (the output's size and
 * the time added when it is printed). */
static char summary[1024];

static int run(const options *o, raster_file **fp, copy_out *out, int *outid)
{
    if (o->out && copy_check_distinct(o->file, o->out, "input") != 0)
        return -1;
    int rc = raster_open(o->file, RASTER_READ, fp);
    if (rc == RASTER_EFORMAT)
        return copy_err("%s is not a raster file: %s", o->file,
                        raster_errmsg());
    if (rc != RASTER_OK)
        return raster_err(o->file, rc);
    job j = {.o = o};
    if (find_var(*fp, o->file, o->var, &j.v) != 0)
        return -1;
    const char *name = raster_var_name(j.v);
    j.nouter = raster_var_ndims(j.v) - 2;
    if ((rc = raster_var_dims(j.v, j.dimids, j.shape, NULL)) != RASTER_OK)
        return raster_err(name, rc);
    j.ids = malloc(o->nregions * sizeof *j.ids);
    if (!j.ids)
        return copy_err("out of memory");
    for (size_t i = 0; i < o->nregions; i++) {
        int32_t id;
        if ((rc = raster_region_lookup(j.v, o->regions[i], &id)) !=
            RASTER_OK) {
            free(j.ids);
            return copy_err("%s: unknown region '%s': %s", name,
                            o->regions[i], raster_errmsg());
        }
        size_t k = 0;
        while (k < j.nids && j.ids[k] != id)
            k++;
        if (k == j.nids)
            j.ids[j.nids++] = id;
    }
    int st = -1;
    if (outer_box(&j) != 0)
        goto done;
    stat_req sr = {.file = o->file, .in_ncid = raster_file_ncid(*fp),
                   .v = j.v, .ids = j.ids, .nids = j.nids,
                   .ostart = j.ostart, .ocount = j.ocount, .stat = o->stat,
                   .weights = o->weights};
    if (o->json) {
        st = stat_write_json(&sr, stdout);
        goto done;
    }
    if ((rc = raster_region_size(j.v, j.ids, j.nids, o->layout, &j.plane)) !=
            RASTER_OK ||
        (rc = raster_region_bbox(j.v, j.ids, j.nids, j.box)) != RASTER_OK) {
        raster_err(name, rc);
        goto done;
    }
    j.elem = 0;
    nc_inq_type(raster_file_ncid(*fp), raster_var_type(j.v), NULL, &j.elem);
    j.file = *fp;
    if (o->layout == RASTER_LAYOUT_PACKED && j.plane > 0) {
        j.cy = malloc(j.plane * sizeof *j.cy);
        j.cx = malloc(j.plane * sizeof *j.cx);
        if (!j.cy || !j.cx) {
            copy_err("out of memory for %zu cells", j.plane);
            goto done;
        }
        if ((rc = raster_region_cells(j.v, j.ids, j.nids, j.cy, j.cx)) !=
            RASTER_OK) {
            raster_err(name, rc);
            goto done;
        }
    }
    if (copy_out_begin(out, o->out) != 0)
        goto done;
    if ((st = nc_create(out->tmp, NC_NETCDF4 | NC_CLOBBER, outid)) !=
        NC_NOERR) {
        *outid = -1;
        st = copy_ncerr(st, "creating %s", o->out);
        goto done;
    }
    j.out = *outid;
    if (o->stat >= 0) {
        st = stat_write_nc(&sr, j.out);
        goto close;
    }
    st = define(&j, raster_file_ncid(*fp));
    if (st == 0 && o->layout == RASTER_LAYOUT_PACKED)
        st = write_cells(&j);
    if (st == 0)
        st = write_data(&j);
close:
    if (st == 0) {
        int s = nc_close(*outid);
        *outid = -1;
        if (s != NC_NOERR)
            st = copy_ncerr(s, "writing %s", o->out);
    }
    if (st == 0) {
        size_t records = 1;
        for (int i = 0; i < j.nouter; i++)
            records *= j.ocount[i];
        snprintf(summary, sizeof summary,
                 "%s: %zu cells of %zu region%s x %zu record%s, %s -> %s",
                 name, j.plane, j.nids, j.nids == 1 ? "" : "s", records,
                 records == 1 ? "" : "s", layout_names[o->layout], o->out);
    }
done:
    free(j.ids);
    free(j.cy);
    free(j.cx);
    return st;
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"var", required_argument, NULL, 'v'},
        {"region", required_argument, NULL, 'r'},
        {"layout", required_argument, NULL, 'l'},
        {"start", required_argument, NULL, 's'},
        {"count", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"buffer", required_argument, NULL, 'b'},
        {"quiet", no_argument, NULL, 'q'},
        {"stat", required_argument, NULL, 'S'},
        {"weights", required_argument, NULL, 'W'},
        {"json", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    opterr = 0; /* cli_bad_option() words the message */
    while ((opt = getopt_long(argc, argv, CLI_OPTSTRING("o:"), longopts, NULL)) != -1) {
        switch (opt) {
        case 'v': o->var = optarg; break;
        case 'r': o->regions[o->nregions++] = optarg; break;
        case 'o': o->out = optarg; break;
        case 'l':
            o->layout = -1;
            for (int i = 0; i < 3; i++)
                if (strcmp(optarg, layout_names[i]) == 0)
                    o->layout = i;
            if (o->layout < 0) {
                fprintf(stderr, "rasterget: --layout wants packed, bbox or "
                        "full, got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 's':
            if (cli_parse_indices(optarg, o->start, MAX_RASTER_DIMS,
                                  &o->nstart) != 0) {
                fprintf(stderr, "rasterget: --start wants S,.. (integers "
                        ">= 0), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->has_start = 1;
            break;
        case 'c':
            if (cli_parse_sizes(optarg, o->count, MAX_RASTER_DIMS,
                                &o->ncount) != 0) {
                fprintf(stderr, "rasterget: --count wants C,.. (integers "
                        ">= 1), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            o->has_count = 1;
            break;
        case 'b':
            if (cli_parse_bytes(optarg, &o->budget) != 0) {
                fprintf(stderr, "rasterget: --buffer wants a positive byte "
                        "count (e.g. 64M), got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'q': progress_set_quiet(1); break;
        case 'S':
            if ((o->stat = stat_parse(optarg)) < 0) {
                fprintf(stderr, "rasterget: --stat wants mean, sum, min, "
                        "max, std or count, got '%s'\n", optarg);
                return CLI_EUSAGE;
            }
            break;
        case 'W': o->weights = optarg; break;
        case 'J': o->json = 1; break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("rasterget (raster) %s\n", raster_version_string());
                  return -1;
        default: return cli_bad_option("rasterget", opt, argv);
        }
    }
    if (optind < argc)
        o->file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "rasterget: unexpected argument '%s'\n",
                argv[optind]);
        return CLI_EUSAGE;
    }
    if ((o->json || o->weights) && o->stat < 0) {
        fprintf(stderr, "rasterget: --json and --weights go with --stat "
                "(try --help)\n");
        return CLI_EUSAGE;
    }
    if (o->json && o->out) {
        fprintf(stderr, "rasterget: --json prints on stdout: no -o\n");
        return CLI_EUSAGE;
    }
    if (!o->file || !o->var || !o->nregions || (!o->out && !o->json)) {
        fprintf(stderr, "rasterget: FILE, --var, --region and -o (or, "
                "with --stat, --json) are required (try --help)\n");
        return CLI_EUSAGE;
    }
    return CLI_OK;
}

int main(int argc, char **argv)
{
    options o = {.budget = COPY_BLOCK_BYTES, .layout = RASTER_LAYOUT_PACKED,
                 .argc = argc, .stat = -1};
    cli_set_prog("rasterget");
    progress_start();
    cli_shim_settings_off();
    /* at most one --region per argument; the command line as typed for the
     * history line (getopt_long reorders argv) */
    o.regions = calloc((size_t)argc, sizeof *o.regions);
    o.argv = malloc((size_t)argc * sizeof *o.argv);
    if (o.argv)
        memcpy(o.argv, argv, (size_t)argc * sizeof *argv);
    if (!o.regions || !o.argv) {
        free(o.regions);
        free(o.argv);
        fprintf(stderr, "rasterget: out of memory\n");
        return CLI_EINPUT;
    }
    int status = parse_args(argc, argv, &o);
    if (status == CLI_OK) {
        raster_file *f = NULL;
        copy_out out = {0};
        int outid = -1;
        int rc = run(&o, &f, &out, &outid);
        if (outid >= 0)
            nc_close(outid);
        raster_close(f);
        if (rc == 0 && out.tmp) /* --json writes no file */
            rc = copy_out_commit(&out);
        else
            copy_out_abort(&out);
        struct stat st;
        char size[32] = "?";
        if (rc == 0 && o.out && stat(o.out, &st) == 0)
            progress_human((unsigned long long)st.st_size, size, sizeof size);
        if (rc == 0 && o.out) /* --json's stdout is the answer alone */
            progress_summary("%s (%s)", summary, size);
        status = rc == 0 ? CLI_OK : CLI_EINPUT;
    } else if (status < 0) {
        status = CLI_OK;
    }
    free(o.regions);
    free(o.argv);
    if (fflush(stdout) != 0 && status == CLI_OK)
        status = CLI_EINPUT;
    return status;
}
