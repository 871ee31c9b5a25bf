/*
 * extract.c - the CF-completing part of rasterget (see extract.h) and the
 * history line of rasterget and rasterconvert.
 */
#include "extract.h"

#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netcdf.h>

#include "copy.h"

#define MAX_DEPS 256

/* How a dependency's dimension maps to the output. */
enum { DIM_OUTER, DIM_Y, DIM_X, DIM_OTHER };

typedef struct worklist {
    char names[MAX_DEPS][NC_MAX_NAME + 1];
    size_t n;
} worklist;

static void push(worklist *w, const char *name, size_t len)
{
    if (len == 0 || len > NC_MAX_NAME || w->n == MAX_DEPS)
        return;
    for (size_t i = 0; i < w->n; i++)
        if (strlen(w->names[i]) == len && !strncmp(w->names[i], name, len))
            return;
    memcpy(w->names[w->n], name, len);
    w->names[w->n++][len] = '\0';
}

/* Text attribute `att` of (grp, var) as a malloc'd C string, or NULL. */
static char *text_att(int grp, int var, const char *att)
{
    nc_type t;
    size_t len;
    if (nc_inq_att(grp, var, att, &t, &len) != NC_NOERR)
        return NULL;
    if (t == NC_STRING && len >= 1) {
        char **s = calloc(len, sizeof *s);
        char *r = NULL;
        if (s && nc_get_att_string(grp, var, att, s) == NC_NOERR) {
            r = s[0] ? strdup(s[0]) : NULL;
            nc_free_string(len, s);
        }
        free(s);
        return r;
    }
    if (t != NC_CHAR)
        return NULL;
    char *r = malloc(len + 1);
    if (r && nc_get_att_text(grp, var, att, r) != NC_NOERR) {
        free(r);
        return NULL;
    }
    if (r)
        r[len] = '\0';
    return r;
}

/* Pushes the blank-separated names of attribute `att` of (grp, var). A
 * grid_mapping of CF's extended form ("crs: x y") names no single variable
 * and is left alone. */
static void push_att_names(worklist *w, int grp, int var, const char *att)
{
    char *s = text_att(grp, var, att);
    if (!s || strchr(s, ':')) {
        free(s);
        return;
    }
    for (char *p = s; *p;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        char *q = p;
        while (*q && !isspace((unsigned char)*q))
            q++;
        push(w, p, (size_t)(q - p));
        p = q;
    }
    free(s);
}

/* Variable `name` seen from group `grp` (it, then its ancestors). */
static int lookup(int grp, const char *name, int *g, int *v)
{
    for (;;) {
        if (nc_inq_varid(grp, name, v) == NC_NOERR) {
            *g = grp;
            return 1;
        }
        int parent;
        if (nc_inq_grp_parent(grp, &parent) != NC_NOERR)
            return 0;
        grp = parent;
    }
}

/* The output dimension for input dimension `dimid` copied whole: one of
 * that name and length, defined when missing; -1 when the name is taken by
 * one of another length (the variable is then not copied). */
static int whole_dim(int in, int dimid, int out)
{
    char name[NC_MAX_NAME + 1];
    size_t len, olen;
    int od;
    if (nc_inq_dim(in, dimid, name, &len) != NC_NOERR)
        return -1;
    if (nc_inq_dimid(out, name, &od) == NC_NOERR)
        return nc_inq_dimlen(out, od, &olen) == NC_NOERR && olen == len
                   ? od : -1;
    if (nc_def_dim(out, name,
                   copy_dim_unlimited(in, dimid) ? NC_UNLIMITED : len,
                   &od) != NC_NOERR)
        return -1;
    return od;
}

/* Reads box start/count of (g, v), through libraster when it is a raster
 * variable. */
static int read_box(const extract_sel *s, int g, int v, const size_t *start,
                    const size_t *count, void *buf)
{
    raster_var *rv = raster_var_by_varid(s->file, g, v);
    if (rv) {
        int rc = raster_var_get(rv, start, count, NULL, buf);
        return rc == RASTER_OK
                   ? 0
                   : copy_err("reading %s: %s", raster_var_name(rv),
                              raster_errmsg());
    }
    int st = nc_get_vara(g, v, start, count, buf);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "reading a coordinate");
}

/* One dependency's copy plan. */
typedef struct plan {
    int g, v, nd, type;
    size_t elem;
    int kind[NC_MAX_VAR_DIMS];
    size_t start[NC_MAX_VAR_DIMS], count[NC_MAX_VAR_DIMS];
    int odims[NC_MAX_VAR_DIMS];
    int ond;
    int gathered; /* packed: y, x adjacent, replaced by the cell dimension */
    int lead;     /* dimensions before the grid: one block per index */
} plan;

/* Works out how (g, v) maps to the output; 0 when it cannot be copied. */
static int make_plan(const extract_sel *s, int g, int v, plan *p)
{
    int dimids[NC_MAX_VAR_DIMS];
    nc_type t;
    if (nc_inq_var(g, v, NULL, &t, &p->nd, dimids, NULL) != NC_NOERR ||
        t > NC_MAX_ATOMIC_TYPE ||
        nc_inq_type(g, t, NULL, &p->elem) != NC_NOERR)
        return 0;
    p->g = g;
    p->v = v;
    p->type = t;
    p->gathered = 0;
    int y = -1, x = -1;
    for (int k = 0; k < p->nd; k++) {
        p->kind[k] = DIM_OTHER;
        for (int i = 0; i < s->nouter; i++) {
            if (dimids[k] != s->dimids[i])
                continue;
            p->kind[k] = DIM_OUTER;
            p->start[k] = s->ostart[i];
            p->count[k] = s->ocount[i];
            p->odims[k] = s->odims[i];
        }
        if (dimids[k] == s->dimids[s->nouter]) {
            p->kind[k] = DIM_Y;
            y = k;
        }
        if (dimids[k] == s->dimids[s->nouter + 1]) {
            p->kind[k] = DIM_X;
            x = k;
        }
    }
    /* packed: no cell dimension to gather y, x along unless adjacent */
    if (s->layout == RASTER_LAYOUT_PACKED && y >= 0 && x >= 0) {
        if (x != y + 1)
            return 0;
        p->gathered = 1;
    }
    for (int k = 0; k < p->nd; k++) {
        int gi = p->kind[k] == DIM_Y ? 0 : 1;
        if (p->kind[k] == DIM_OTHER) {
            p->start[k] = 0;
            if (nc_inq_dimlen(g, dimids[k], &p->count[k]) != NC_NOERR ||
                (p->odims[k] = whole_dim(g, dimids[k], s->out)) < 0)
                return 0;
        } else if (p->kind[k] != DIM_OUTER) {
            int sliced = s->layout == RASTER_LAYOUT_BBOX || p->gathered;
            p->start[k] = sliced ? s->box[gi] : 0;
            p->count[k] = sliced ? s->box[2 + gi] - s->box[gi]
                                 : s->shape[s->nouter + gi];
            p->odims[k] = s->grid_dims[gi];
        }
    }
    /* one block per index of the dimensions before the grid */
    p->lead = y >= 0 ? y : x >= 0 ? x : 0;
    if (x >= 0 && x < p->lead)
        p->lead = x;
    p->ond = 0;
    for (int k = 0; k < p->nd; k++) {
        if (p->gathered && k == x)
            continue;
        p->odims[p->ond++] = p->gathered && k == y ? s->cell_dim : p->odims[k];
    }
    return 1;
}

/* Gathers the cells from a block [y box][x box][trail] into out. */
static void gather(const extract_sel *s, const unsigned char *in,
                   unsigned char *out, size_t unit)
{
    size_t w = s->box[3] - s->box[1];
    for (size_t c = 0; c < s->ncells; c++)
        memcpy(out + c * unit,
               in + ((s->cy[c] - s->box[0]) * w + (s->cx[c] - s->box[1])) *
                        unit,
               unit);
}

static int copy_data(const extract_sel *s, const plan *p, int ov)
{
    size_t start[NC_MAX_VAR_DIMS], count[NC_MAX_VAR_DIMS];
    size_t ostart[NC_MAX_VAR_DIMS], ocount[NC_MAX_VAR_DIMS];
    size_t idx[NC_MAX_VAR_DIMS] = {0}, block = 1, unit = p->elem;
    for (int k = 0; k < p->nd; k++) {
        if (p->count[k] == 0)
            return 0;
        if (k >= p->lead)
            block *= p->count[k];
        /* a gathered block's trailing dimensions move with each cell */
        if (p->gathered && k > p->lead + 1)
            unit *= p->count[k];
    }
    if (p->gathered && s->ncells == 0)
        return 0;
    unsigned char *buf = malloc(block * p->elem);
    unsigned char *gbuf = p->gathered ? malloc(s->ncells * unit) : NULL;
    int rc = 0;
    if (!buf || (p->gathered && !gbuf))
        rc = copy_err("out of memory for a coordinate block");
    for (int more = 1; rc == 0 && more;) {
        int o = 0;
        for (int k = 0; k < p->nd; k++) {
            start[k] = p->start[k] + (k < p->lead ? idx[k] : 0);
            count[k] = k < p->lead ? 1 : p->count[k];
            if (p->gathered && k == p->lead + 1)
                continue;
            ostart[o] = k < p->lead ? idx[k] : 0;
            ocount[o++] = p->gathered && k == p->lead ? s->ncells : count[k];
        }
        if ((rc = read_box(s, p->g, p->v, start, count, buf)) != 0)
            break;
        if (p->gathered)
            gather(s, buf, gbuf, unit);
        int st = nc_put_vara(s->out, ov, ostart, ocount,
                             p->gathered ? gbuf : buf);
        if (p->type == NC_STRING)
            nc_free_string(block, (char **)buf);
        if (st != NC_NOERR)
            rc = copy_ncerr(st, "writing a coordinate");
        /* next index of the lead dimensions, row-major */
        more = 0;
        for (int k = p->lead - 1; k >= 0 && !more; k--) {
            if (++idx[k] < p->count[k])
                more = 1;
            else
                idx[k] = 0;
        }
    }
    free(buf);
    free(gbuf);
    return rc;
}

/* Copies dependency `name` when it exists and fits; pushes its bounds. */
static int copy_dep(const extract_sel *s, int grp, const char *name,
                    worklist *w)
{
    int g, v, ov;
    if (!lookup(grp, name, &g, &v))
        return 0;
    push_att_names(w, g, v, "bounds");
    push_att_names(w, g, v, "climatology");
    if (nc_inq_varid(s->out, name, &ov) == NC_NOERR)
        return 0; /* there already (the variable, an outer coordinate) */
    plan p;
    if (!make_plan(s, g, v, &p))
        return 0;
    int st = nc_def_var(s->out, name, p.type, p.ond, p.odims, &ov);
    if (st != NC_NOERR)
        return copy_ncerr(st, "defining %s", name);
    if (copy_atts(g, v, s->out, ov, NULL) != 0)
        return -1;
    return copy_data(s, &p, ov);
}

/* Character variables along the first outer dimension with no grid
 * dimension (WRF's Times(Time, DateStrLen)), in `grp` and its ancestors. */
static void push_times(const extract_sel *s, int grp, worklist *w)
{
    if (s->nouter == 0)
        return;
    for (;;) {
        int nv;
        if (nc_inq_nvars(grp, &nv) != NC_NOERR)
            return;
        for (int v = 0; v < nv; v++) {
            int nd, d[NC_MAX_VAR_DIMS], ok = 1;
            nc_type t;
            char name[NC_MAX_NAME + 1];
            if (nc_inq_var(grp, v, name, &t, &nd, d, NULL) != NC_NOERR ||
                t != NC_CHAR || nd < 1 || d[0] != s->dimids[0])
                continue;
            for (int k = 1; k < nd; k++)
                if (d[k] == s->dimids[s->nouter] ||
                    d[k] == s->dimids[s->nouter + 1])
                    ok = 0;
            if (ok)
                push(w, name, strlen(name));
        }
        int parent;
        if (nc_inq_grp_parent(grp, &parent) != NC_NOERR)
            return;
        grp = parent;
    }
}

/* Keeps in attribute `att` of output variable `v` the names the output
 * holds; deletes it when none is left. */
static int prune_att(int out, int v, const char *att)
{
    char *s = text_att(out, v, att);
    if (!s || strchr(s, ':')) {
        free(s);
        return 0;
    }
    size_t n = strlen(s), o = 0;
    char *kept = malloc(n + 1);
    if (!kept) {
        free(s);
        return copy_err("out of memory");
    }
    for (char *p = s; *p;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        char *q = p;
        while (*q && !isspace((unsigned char)*q))
            q++;
        char c = *q;
        *q = '\0';
        int id;
        if (q > p && nc_inq_varid(out, p, &id) == NC_NOERR) {
            if (o)
                kept[o++] = ' ';
            memcpy(kept + o, p, (size_t)(q - p));
            o += (size_t)(q - p);
        }
        *q = c;
        p = q;
    }
    kept[o] = '\0';
    int st = NC_NOERR;
    if (o == 0)
        st = nc_del_att(out, v, att);
    else if (strcmp(kept, s) != 0)
        st = nc_put_att_text(out, v, att, o, kept);
    free(kept);
    free(s);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "rewriting attribute %s", att);
}

int extract_dependencies(const extract_sel *s, int grp, int var)
{
    worklist *w = calloc(1, sizeof *w);
    if (!w)
        return copy_err("out of memory");
    push_att_names(w, grp, var, "coordinates");
    push_att_names(w, grp, var, "grid_mapping");
    push_att_names(w, grp, var, "bounds");
    for (int i = 0; i < s->nouter + 2; i++) {
        char name[NC_MAX_NAME + 1];
        if (nc_inq_dimname(grp, s->dimids[i], name) == NC_NOERR)
            push(w, name, strlen(name));
    }
    push_times(s, grp, w);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < w->n; i++) /* w grows with bounds */
        rc = copy_dep(s, grp, w->names[i], w);
    free(w);
    int nv;
    if (rc == 0 && nc_inq_nvars(s->out, &nv) != NC_NOERR)
        rc = copy_err("listing the output's variables");
    static const char *const atts[] = {"coordinates", "bounds", "climatology",
                                       "grid_mapping"};
    for (int v = 0; rc == 0 && v < nv; v++)
        for (size_t a = 0; rc == 0 && a < sizeof atts / sizeof *atts; a++)
            rc = prune_att(s->out, v, atts[a]);
    return rc;
}

int extract_list_variable(const extract_sel *s, const char *name)
{
    size_t ny = s->shape[s->nouter], nx = s->shape[s->nouter + 1];
    char yname[NC_MAX_NAME + 1], xname[NC_MAX_NAME + 1];
    char compress[2 * NC_MAX_NAME + 2];
    const char *note = "index of each cell in the grid flattened row-major "
                       "(CF compression by gathering)";
    int big = nx != 0 && ny > (size_t)INT_MAX / nx, st, v;
    if ((st = nc_inq_dimname(s->out, s->grid_dims[0], yname)) != NC_NOERR ||
        (st = nc_inq_dimname(s->out, s->grid_dims[1], xname)) != NC_NOERR)
        return copy_ncerr(st, "naming the grid dimensions");
    snprintf(compress, sizeof compress, "%s %s", yname, xname);
    if ((st = nc_def_var(s->out, name, big ? NC_INT64 : NC_INT, 1,
                         &s->cell_dim, &v)) != NC_NOERR ||
        (st = nc_put_att_text(s->out, v, "compress", strlen(compress),
                              compress)) != NC_NOERR ||
        (st = nc_put_att_text(s->out, v, "long_name", strlen(note), note)) !=
            NC_NOERR)
        return copy_ncerr(st, "defining list variable %s", name);
    if (s->ncells == 0)
        return 0;
    long long *idx = malloc(s->ncells * sizeof *idx);
    if (!idx)
        return copy_err("out of memory for %zu cells", s->ncells);
    for (size_t c = 0; c < s->ncells; c++)
        idx[c] = (long long)(s->cy[c] * nx + s->cx[c]);
    st = nc_put_var_longlong(s->out, v, idx);
    free(idx);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing list variable %s",
                                            name);
}

/* Appends word `a` to buf, single-quoted when it holds anything but
 * characters a shell leaves alone. */
static size_t quote_word(char *buf, const char *a)
{
    size_t n = 0;
    int plain = *a != '\0';
    for (const char *p = a; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./:=,+-@%", *p))
            plain = 0;
    if (plain) {
        n = strlen(a);
        if (buf)
            memcpy(buf, a, n);
        return n;
    }
    if (buf)
        buf[n] = '\'';
    n++;
    for (const char *p = a; *p; p++) {
        if (*p == '\'') {
            if (buf)
                memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            if (buf)
                buf[n] = *p;
            n++;
        }
    }
    if (buf)
        buf[n] = '\'';
    return n + 1;
}

int extract_history(int ncid, int argc, char **argv)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    /* the reproducible-builds convention: a fixed time makes two runs'
     * outputs byte for byte the same (the tests compare them) */
    const char *fixed = getenv("SOURCE_DATE_EPOCH");
    if (fixed && *fixed) {
        char *end;
        long long t = strtoll(fixed, &end, 10);
        if (*end == '\0' && t >= 0)
            now = (time_t)t;
    }
    if (now == (time_t)-1 || !gmtime_r(&now, &tm) ||
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ:", &tm) == 0)
        return copy_err("no time for the history line");
    char *old = text_att(ncid, NC_GLOBAL, "history");
    size_t len = strlen(stamp) + (old ? strlen(old) + 1 : 0);
    for (int i = 0; i < argc; i++)
        len += 1 + quote_word(NULL, argv[i]);
    char *line = malloc(len + 1);
    if (!line) {
        free(old);
        return copy_err("out of memory");
    }
    size_t n = strlen(stamp);
    memcpy(line, stamp, n);
    for (int i = 0; i < argc; i++) {
        line[n++] = ' ';
        n += quote_word(line + n, argv[i]);
    }
    if (old) {
        line[n++] = '\n';
        memcpy(line + n, old, strlen(old));
        n += strlen(old);
    }
    int st = nc_put_att_text(ncid, NC_GLOBAL, "history", n, line);
    free(line);
    free(old);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "writing attribute history");
}
