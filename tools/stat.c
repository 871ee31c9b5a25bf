/*
 * stat.c - rasterget --stat: one regional statistic per outer index
 * (raster_region_statistics), written as a netCDF series with CF
 * cell_methods or printed as one JSON object.
 */
#include "stat.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <netcdf.h>

#include "cli.h"
#include "copy.h"

#define MAX_OUTER 32

static const char *const names[] = {"count", "sum", "mean", "min", "max",
                                    "std"};
/* CF cell_methods method of each; count has none */
static const char *const cf_methods[] = {NULL, "sum", "mean", "minimum",
                                         "maximum", "standard_deviation"};

int stat_parse(const char *name)
{
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

const char *stat_name(int stat)
{
    return stat >= 0 && stat < (int)(sizeof names / sizeof *names)
               ? names[stat]
               : "?";
}

/* The statistic at every outer index (malloc'd, *n values). */
static int compute(const stat_req *r, double **vals, size_t *n)
{
    int no = raster_var_ndims(r->v) - 2;
    size_t planes = 1;
    for (int i = 0; i < no; i++)
        planes *= r->ocount[i];
    *vals = NULL;
    *n = planes;
    raster_stats *s = malloc((planes ? planes : 1) * sizeof *s);
    double *x = malloc((planes ? planes : 1) * sizeof *x);
    if (!s || !x) {
        free(s);
        free(x);
        return copy_err("out of memory for %zu records", planes);
    }
    int rc = raster_region_statistics(r->v, r->ids, r->nids, r->ostart,
                                      r->ocount, r->weights, s);
    if (rc != RASTER_OK) {
        free(s);
        free(x);
        return copy_err("%s: %s (%s)", raster_var_name(r->v),
                        raster_errmsg(), raster_strerror(rc));
    }
    for (size_t i = 0; i < planes; i++)
        x[i] = raster_stats_value(&s[i], r->stat, r->weights != NULL);
    free(s);
    *vals = x;
    return 0;
}

/* The region's name in the mask, else its id, in buf. */
static const char *region_label(const stat_req *r, size_t i, char *buf,
                                size_t len)
{
    const char *nm = raster_mask_region_name(raster_var_mask(r->v),
                                             r->ids[i]);
    if (nm)
        return nm;
    snprintf(buf, len, "%d", (int)r->ids[i]);
    return buf;
}

/* cell_methods: V's own, then "area: METHOD where REGIONS" (regions'
 * names, blanks as '_', joined by "_or_"), the weights in a CF
 * comment. */
static int cell_methods(const stat_req *r, int ag, int av, int out, int ov)
{
    const char *m = cf_methods[r->stat];
    if (!m)
        return 0;
    size_t len = 0, cap;
    char *old = NULL;
    if (nc_inq_attlen(ag, av, "cell_methods", &len) == NC_NOERR) {
        old = calloc(len + 1, 1);
        if (!old || nc_get_att_text(ag, av, "cell_methods", old) != NC_NOERR)
            len = 0;
    }
    cap = len + 128 + (NC_MAX_NAME + 8) * r->nids +
          (r->weights ? strlen(r->weights) : 0);
    char *text = malloc(cap), lbl[32];
    if (!text) {
        free(old);
        return copy_err("out of memory");
    }
    size_t k = (size_t)snprintf(text, cap, "%s%sarea: %s where ",
                                len ? old : "", len ? " " : "", m);
    for (size_t i = 0; i < r->nids && k < cap; i++) {
        /* a CF area type is one word */
        size_t at = k + (i ? 4 : 0);
        k += (size_t)snprintf(text + k, cap - k, "%s%s", i ? "_or_" : "",
                              region_label(r, i, lbl, sizeof lbl));
        for (size_t j = at; j < k && j < cap; j++)
            if (text[j] == ' ')
                text[j] = '_';
    }
    if (r->weights && k < cap)
        snprintf(text + k, cap - k, " (comment: weighted by %s)",
                 r->weights);
    int st = nc_put_att_text(out, ov, "cell_methods", strlen(text), text);
    free(text);
    free(old);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing cell_methods");
}

int stat_write_nc(const stat_req *r, int out)
{
    raster_var *v = r->v;
    int no = raster_var_ndims(v) - 2, parent = raster_var_parent(v), st;
    int dimids[MAX_OUTER + 2], odims[MAX_OUTER];
    size_t shape[MAX_OUTER + 2];
    if (raster_var_dims(v, dimids, shape, NULL) != RASTER_OK)
        return copy_err("%s: %s", raster_var_name(v), raster_errmsg());
    char dname[NC_MAX_NAME + 1];
    for (int i = 0; i < no; i++) {
        if ((st = nc_inq_dimname(parent, dimids[i], dname)) != NC_NOERR)
            return copy_ncerr(st, "naming dimension %d", i);
        size_t len = copy_dim_unlimited(parent, dimids[i]) ? NC_UNLIMITED
                                                           : r->ocount[i];
        if ((st = nc_def_dim(out, dname, len, &odims[i])) != NC_NOERR)
            return copy_ncerr(st, "defining dimension %s", dname);
    }
    const char *name = raster_var_name(v);
    int ov, ag, av;
    if ((st = nc_def_var(out, name, NC_DOUBLE, no, odims, &ov)) != NC_NOERR)
        return copy_ncerr(st, "defining %s", name);
    raster_var_attributes(v, &ag, &av);
    /* the values' encoding and grid is not the series': left out; a
     * count or a weighted sum has other units */
    static const char *const skip[] = {
        "_FillValue", "missing_value", "valid_range", "valid_min",
        "valid_max", "scale_factor", "add_offset", "cell_methods",
        "coordinates", "grid_mapping", "cell_measures", "units", NULL};
    if (copy_atts(ag, av, out, ov, skip) != 0)
        return -1;
    int keep_units = r->stat != RASTER_STAT_COUNT &&
                     !(r->weights && r->stat == RASTER_STAT_SUM);
    if (keep_units && nc_inq_att(ag, av, "units", NULL, NULL) == NC_NOERR &&
        (st = nc_copy_att(ag, av, "units", out, ov)) != NC_NOERR)
        return copy_ncerr(st, "copying units");
    double nan = NAN;
    if ((st = nc_def_var_fill(out, ov, 0, &nan)) != NC_NOERR)
        return copy_ncerr(st, "defining the fill value");
    if (cell_methods(r, ag, av, out, ov) != 0)
        return -1;
    int *ids = malloc(r->nids * sizeof *ids);
    if (!ids)
        return copy_err("out of memory");
    for (size_t i = 0; i < r->nids; i++)
        ids[i] = (int)r->ids[i];
    const char *sn = stat_name(r->stat);
    if ((st = nc_put_att_int(out, ov, "raster_regions", NC_INT, r->nids,
                             ids)) != NC_NOERR ||
        (st = nc_put_att_text(out, ov, "raster_stat", strlen(sn), sn)) !=
            NC_NOERR ||
        (r->weights &&
         (st = nc_put_att_text(out, ov, "raster_weights",
                               strlen(r->weights), r->weights)) !=
             NC_NOERR)) {
        free(ids);
        return copy_ncerr(st, "writing attributes of %s", name);
    }
    free(ids);
    for (int i = 0; i < no; i++) {
        int cg, cv;
        if (copy_find_coord(parent, dimids[i], &cg, &cv) &&
            copy_coord_slice(cg, cv, r->ostart[i], r->ocount[i], out, odims[i]))
            return -1;
    }
    if (copy_atts(r->in_ncid, NC_GLOBAL, out,
                  NC_GLOBAL, NULL) != 0)
        return -1;
    if ((st = nc_put_att_text(out, NC_GLOBAL, "raster_source",
                              strlen(r->file), r->file)) != NC_NOERR)
        return copy_ncerr(st, "writing attribute raster_source");
    double *x;
    size_t n;
    if (compute(r, &x, &n) != 0)
        return -1;
    size_t start[MAX_OUTER] = {0};
    if ((st = nc_enddef(out)) == NC_NOERR && n > 0)
        st = nc_put_vara_double(out, ov, start, r->ocount, x);
    free(x);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing %s", name);
}

/* A JSON string of s. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Nested lists of x over dimensions count[d..no). */
static void json_values(FILE *f, const double *x, const size_t *count,
                        int d, int no, size_t *k)
{
    if (d == no) {
        if (isfinite(x[*k]))
            fprintf(f, "%.17g", x[*k]);
        else
            fputs("null", f);
        (*k)++;
        return;
    }
    fputc('[', f);
    for (size_t i = 0; i < count[d]; i++) {
        if (i)
            fputs(", ", f);
        json_values(f, x, count, d + 1, no, k);
    }
    fputc(']', f);
}

int stat_write_json(const stat_req *r, FILE *f)
{
    raster_var *v = r->v;
    int no = raster_var_ndims(v) - 2, parent = raster_var_parent(v);
    int dimids[MAX_OUTER + 2];
    if (raster_var_dims(v, dimids, NULL, NULL) != RASTER_OK)
        return copy_err("%s: %s", raster_var_name(v), raster_errmsg());
    double *x;
    size_t n, k = 0;
    if (compute(r, &x, &n) != 0)
        return -1;
    char lbl[32], dname[NC_MAX_NAME + 1];
    fputs("{\"var\": ", f);
    json_str(f, raster_var_name(v));
    fputs(", \"regions\": [", f);
    for (size_t i = 0; i < r->nids; i++) {
        fputs(i ? ", " : "", f);
        json_str(f, region_label(r, i, lbl, sizeof lbl));
    }
    fputs("], \"ids\": [", f);
    for (size_t i = 0; i < r->nids; i++)
        fprintf(f, "%s%d", i ? ", " : "", (int)r->ids[i]);
    fputs("], \"stat\": ", f);
    json_str(f, stat_name(r->stat));
    fputs(", \"weights\": ", f);
    if (r->weights)
        json_str(f, r->weights);
    else
        fputs("null", f);
    fputs(", \"dims\": [", f);
    for (int i = 0; i < no; i++) {
        if (nc_inq_dimname(parent, dimids[i], dname) != NC_NOERR)
            snprintf(dname, sizeof dname, "dim%d", i);
        fputs(i ? ", " : "", f);
        json_str(f, dname);
    }
    fputs("], \"start\": [", f);
    for (int i = 0; i < no; i++)
        fprintf(f, "%s%zu", i ? ", " : "", r->ostart[i]);
    fputs("], \"values\": ", f);
    json_values(f, x, r->ocount, 0, no, &k);
    fputs("}\n", f);
    free(x);
    return 0;
}

/* A JSON number, null when not finite. */
static void json_num(double x)
{
    if (isfinite(x))
        printf("%.17g", x);
    else
        fputs("null", stdout);
}

/* One region of one variable: its line or JSON object. */
static int report_region(raster_var *v, int32_t id, const size_t *shape,
                         int json, int first)
{
    const char *w = NULL, *name = raster_mask_region_name(raster_var_mask(v),
                                                          id);
    size_t fresh = 0, stale = 0, n = 1;
    int no = raster_var_ndims(v) - 2;
    /* the region exists (the caller found it): ENOTFOUND says the
     * variable keeps no statistics */
    int rc = raster_var_stats_info(v, id, &w, &fresh, &stale);
    if (rc != RASTER_OK && rc != RASTER_ENOTFOUND)
        return copy_err("%s: %s", raster_var_name(v), raster_errmsg());
    for (int i = 0; i < no; i++)
        n *= shape[i];
    raster_stats *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return copy_err("out of memory for %zu records", n);
    size_t start[MAX_OUTER] = {0};
    rc = raster_region_statistics(v, &id, 1, start, shape, w, s);
    if (rc != RASTER_OK) {
        free(s);
        return copy_err("%s: %s", raster_var_name(v), raster_errmsg());
    }
    raster_stats all = {.min = NAN, .max = NAN};
    for (size_t i = 0; i < n; i++)
        raster_stats_merge(&all, &s[i]);
    free(s);
    double mean = raster_stats_value(&all, RASTER_STAT_MEAN, 0);
    double wmean = raster_stats_value(&all, RASTER_STAT_MEAN, 1);
    double sd = raster_stats_value(&all, RASTER_STAT_STD, 0);
    if (json) {
        printf("%s{\"id\": %d, \"name\": ", first ? "" : ", ", (int)id);
        if (name)
            json_str(stdout, name);
        else
            fputs("null", stdout);
        printf(", \"fresh\": %zu, \"stale\": %zu, \"count\": %llu, "
               "\"mean\": ", fresh, stale, (unsigned long long)all.count);
        json_num(mean);
        fputs(", \"min\": ", stdout);
        json_num(raster_stats_value(&all, RASTER_STAT_MIN, 0));
        fputs(", \"max\": ", stdout);
        json_num(raster_stats_value(&all, RASTER_STAT_MAX, 0));
        fputs(", \"std\": ", stdout);
        json_num(sd);
        fputs(", \"weighted_mean\": ", stdout);
        if (w)
            json_num(wmean);
        else
            fputs("null", stdout);
        fputs("}", stdout);
    } else {
        printf("%6d %-20.20s %7zu %7zu %12llu %14.7g %14.7g %14.7g %14.7g",
               (int)id, name ? name : "-", fresh, stale,
               (unsigned long long)all.count, mean,
               raster_stats_value(&all, RASTER_STAT_MIN, 0),
               raster_stats_value(&all, RASTER_STAT_MAX, 0), sd);
        if (w)
            printf(" %14.7g", wmean);
        printf("\n");
    }
    return 0;
}

static int report(raster_file *f, const char *file, const char *var,
                  char *const *regions, size_t nregions, int json)
{
    int found = 0, st = 0;
    if (json)
        printf("[");
    for (size_t i = 0; i < raster_file_nvars(f) && st == 0; i++) {
        raster_var *v = raster_file_var(f, i);
        if (var && strcmp(var, raster_var_name(v)) != 0)
            continue;
        size_t shape[MAX_OUTER + 2], records = 1;
        int no = raster_var_ndims(v) - 2;
        if (raster_var_dims(v, NULL, shape, NULL) != RASTER_OK)
            return copy_err("%s: %s", raster_var_name(v), raster_errmsg());
        for (int d = 0; d < no; d++)
            records *= shape[d];
        /* the regions: those named, else the mesh's */
        const raster_mesh *mesh = NULL;
        size_t n = nregions;
        if (!n) {
            if (!(mesh = raster_var_mesh(v)))
                return copy_err("%s: %s", raster_var_name(v),
                                raster_errmsg());
            n = raster_mesh_nregions(mesh);
        }
        const char *w = NULL;
        size_t fr, sl;
        int32_t id0 = 0;
        if (mesh) {
            raster_region_stats rs;
            raster_mesh_region(mesh, 0, &rs);
            id0 = rs.id;
        } else if (raster_region_lookup(v, regions[0], &id0) != RASTER_OK) {
            return copy_err("%s: unknown region '%s': %s",
                            raster_var_name(v), regions[0], raster_errmsg());
        }
        int kept = raster_var_stats_info(v, id0, &w, &fr, &sl) == RASTER_OK;
        if (json) {
            printf("%s{\"var\": ", found ? ", " : "");
            json_str(stdout, raster_var_name(v));
            printf(", \"kept\": %s, \"weights\": ", kept ? "true" : "false");
            if (w)
                json_str(stdout, w);
            else
                fputs("null", stdout);
            printf(", \"records\": %zu, \"regions\": [", records);
        } else {
            printf("%s%s: %zu records; statistics %s%s%s\n", found ? "\n" : "",
                   raster_var_name(v), records,
                   kept ? "kept" : "not kept (computed from the data)",
                   w ? ", weighted by " : "", w ? w : "");
            printf("%6s %-20s %7s %7s %12s %14s %14s %14s %14s%s\n", "id",
                   "name", "fresh", "stale", "count", "mean", "min", "max",
                   "std", w ? "          wmean" : "");
        }
        found++;
        for (size_t k = 0; k < n && st == 0; k++) {
            int32_t id;
            if (mesh) {
                raster_region_stats rs;
                raster_mesh_region(mesh, k, &rs);
                id = rs.id;
            } else if (raster_region_lookup(v, regions[k], &id) != RASTER_OK) {
                st = copy_err("%s: unknown region '%s': %s",
                              raster_var_name(v), regions[k],
                              raster_errmsg());
                break;
            }
            st = report_region(v, id, shape, json, k == 0);
        }
        if (json && st == 0)
            printf("]}");
    }
    if (json && st == 0)
        printf("]\n");
    if (st == 0 && var && !found)
        st = copy_err("no raster variable '%s' in %s", var, file);
    return st;
}

int stat_report(raster_file *f, const char *file, const char *var,
                char *const *regions, size_t nregions, int json)
{
    int st = report(f, file, var, regions, nregions, json);
    if (fflush(stdout) != 0 && st == 0)
        st = copy_err("writing the report: %s", strerror(errno));
    return st == 0 ? CLI_OK : CLI_EINPUT;
}
