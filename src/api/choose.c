/*
 * choose.c - which variables of a file are data variables that raster
 * stores by region, and why the others stay plain. rasterconvert and the
 * preload shim both ask here, so the two choose alike.
 *
 * Coordinates (latitude/longitude grids, bounds, cell measures) often have
 * the mask's grid too; storing them by region would make every reader of
 * the grid go through raster and gains nothing, so they stay plain.
 */
#include <netcdf.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "error.h"
#include "var.h"

/* Cells compared per read when a variable's values are checked against
 * the mask: bounds the temporary buffer. */
#define VALUES_BLOCK_CELLS ((size_t)1 << 16)

/* Attributes whose words name other variables that are not data. */
static const char *const naming_atts[] = {
    "coordinates", "bounds", "climatology", "cell_measures",
};

/* CF's latitude/longitude units (CF conventions, section 4.1 and 4.2). */
static const char *const geo_units[] = {
    "degrees_north", "degree_north", "degree_N", "degrees_N", "degreeN",
    "degreesN", "degrees_east", "degree_east", "degree_E", "degrees_E",
    "degreeE", "degreesE",
};

static const char *const geo_names[] = {
    "latitude", "longitude", "grid_latitude", "grid_longitude",
    "projection_x_coordinate", "projection_y_coordinate",
    "projection_x_angular_coordinate", "projection_y_angular_coordinate",
};

static const char *const reasons[] = {
    [RASTER_CHOOSE_DATA] = "data variable on the mask's grid",
    [RASTER_CHOOSE_TYPE] = "not numeric",
    [RASTER_CHOOSE_RANK] = "not of 2 to 32 dimensions",
    [RASTER_CHOOSE_GRID] = "last two dimensions are not the mask's grid",
    [RASTER_CHOOSE_UNLIMITED] = "unlimited grid dimension",
    [RASTER_CHOOSE_NO_OUTER] = "grid only, no outer dimension",
    [RASTER_CHOOSE_COORDINATE] = "coordinate variable",
    [RASTER_CHOOSE_AXIS] = "has an axis attribute",
    [RASTER_CHOOSE_REFERENCED] = "named in a coordinates, bounds, "
                                 "climatology or cell_measures attribute",
    [RASTER_CHOOSE_GEO] = "latitude/longitude (standard_name or units)",
    [RASTER_CHOOSE_MASK] = "the mask variable",
    [RASTER_CHOOSE_MASK_VALUES] = "holds the mask's values",
};

const char *raster_choose_reason(int why)
{
    if (why < 0 || why >= (int)(sizeof reasons / sizeof *reasons))
        return "unknown reason";
    return reasons[why];
}

/* Text attribute `att` of (g, v), char or a single string, into *out
 * (free with raster_free()); *out NULL when absent or not text.
 * RASTER_OK, RASTER_ENOMEM or RASTER_ENETCDF (with a message). */
static int text_att(int g, int v, const char *att, char **out)
{
    nc_type type;
    size_t len;
    int st;
    *out = NULL;
    if (nc_inq_att(g, v, att, &type, &len) != NC_NOERR)
        return RASTER_OK;
    if (type == NC_CHAR) {
        char *all = raster_malloc(len + 1);
        if (!all)
            return raster_fail(RASTER_ENOMEM,
                               "out of memory reading attribute %s", att);
        if ((st = nc_get_att_text(g, v, att, all)) != NC_NOERR) {
            raster_free(all);
            return raster_fail_nc(RASTER_ENETCDF, st, "reading attribute "
                                  "%s: %s", att, nc_strerror(st));
        }
        all[len] = '\0';
        *out = all;
        return RASTER_OK;
    }
    if (type != NC_STRING || len != 1)
        return RASTER_OK;
    char *s = NULL;
    st = nc_get_att_string(g, v, att, &s);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "reading attribute %s: %s",
                              att, nc_strerror(st));
    *out = raster_strdup(s ? s : "");
    nc_free_string(1, &s);
    if (!*out)
        return raster_fail(RASTER_ENOMEM, "out of memory reading attribute %s",
                           att);
    return RASTER_OK;
}

/* 1 when attribute `att` of (g, v) is text found in `list`, 0 when not; a
 * RASTER_E* code negated on failure. */
static int att_in(int g, int v, const char *att, const char *const *list,
                  size_t n, int nocase)
{
    char *text;
    int rc = text_att(g, v, att, &text);
    if (rc != RASTER_OK)
        return -rc;
    int hit = 0;
    for (size_t i = 0; text && i < n && !hit; i++)
        hit = nocase ? strcasecmp(text, list[i]) == 0
                     : strcmp(text, list[i]) == 0;
    raster_free(text);
    return hit;
}

/* 1 when a blank-separated word of `text`, or its part after the last '/'
 * (a CF path), is `name`. */
static int names(const char *text, const char *name)
{
    size_t n = strlen(name);
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n')
            e++;
        const char *base = p;
        for (const char *q = p; q < e; q++)
            if (*q == '/')
                base = q + 1;
        if ((size_t)(e - base) == n && n && memcmp(base, name, n) == 0)
            return 1;
        p = e;
    }
    return 0;
}

/* 1 when one of the naming attributes of (g, v) names `name`, 0 when
 * none does; a RASTER_E* code negated on failure. */
static int named_by(int g, int v, const char *name)
{
    for (size_t i = 0; i < sizeof naming_atts / sizeof *naming_atts; i++) {
        char *text;
        int rc = text_att(g, v, naming_atts[i], &text);
        if (rc != RASTER_OK)
            return -rc;
        int hit = text && names(text, name);
        raster_free(text);
        if (hit)
            return 1;
    }
    return 0;
}

/* 1 when a variable (or the global attributes) of group g or one below it
 * names `name`, 0 when none does; raster's own storage groups are skipped.
 * A RASTER_E* code negated on failure. CF finds named variables by
 * proximity; any group's word counts here, so a coordinate is never taken
 * for data. */
static int referenced(int g, const char *name, int depth)
{
    int nvars, ngrps, st;
    if (depth > 64)
        return 0; /* netCDF groups nest no deeper in practice */
    if ((st = nc_inq_nvars(g, &nvars)) != NC_NOERR)
        return -raster_fail_nc(RASTER_ENETCDF, st, "counting variables: %s",
                               nc_strerror(st));
    int hit = named_by(g, NC_GLOBAL, name);
    for (int v = 0; v < nvars && hit == 0; v++)
        hit = named_by(g, v, name);
    if (hit != 0)
        return hit;
    if ((st = nc_inq_grps(g, &ngrps, NULL)) != NC_NOERR)
        return -raster_fail_nc(RASTER_ENETCDF, st, "listing groups: %s",
                               nc_strerror(st));
    if (ngrps == 0)
        return 0;
    int *ids = raster_calloc((size_t)ngrps, sizeof *ids);
    if (!ids)
        return -raster_fail(RASTER_ENOMEM, "out of memory listing groups");
    if ((st = nc_inq_grps(g, NULL, ids)) != NC_NOERR)
        hit = -raster_fail_nc(RASTER_ENETCDF, st, "listing groups: %s",
                              nc_strerror(st));
    for (int i = 0; i < ngrps && hit == 0; i++)
        if (!raster_is_raster_group(ids[i]))
            hit = referenced(ids[i], name, depth + 1);
    raster_free(ids);
    return hit;
}

/* 1 when every outer dimension of (g, v) has length 1 and its one grid of
 * values equals the mask's ids; 0 otherwise; a RASTER_E* code negated (with
 * a message) on failure. */
static int holds_mask(int g, int v, int ndims, const int *dimids,
                      const raster_mask *mask)
{
    size_t len, ny, nx;
    int st;
    for (int i = 0; i < ndims - 2; i++) {
        if ((st = nc_inq_dimlen(g, dimids[i], &len)) != NC_NOERR)
            return -raster_fail_nc(RASTER_ENETCDF, st, "reading a dimension: "
                                   "%s", nc_strerror(st));
        if (len != 1)
            return 0;
    }
    const int32_t *ids = raster_mask_values(mask);
    if (!ids)
        return -raster_fail(RASTER_ENOMEM, "the mask's values are not "
                            "available");
    raster_mask_shape(mask, &ny, &nx);
    size_t rows = VALUES_BLOCK_CELLS / nx ? VALUES_BLOCK_CELLS / nx : 1;
    double *buf = raster_malloc((rows < ny ? rows : ny) * nx * sizeof *buf);
    if (!buf)
        return -raster_fail(RASTER_ENOMEM, "out of memory comparing a "
                            "variable with the mask");
    size_t start[RASTER_MAX_DIMS] = {0}, count[RASTER_MAX_DIMS];
    for (int i = 0; i < ndims - 2; i++)
        count[i] = 1;
    count[ndims - 1] = nx;
    int same = 1;
    for (size_t y = 0; y < ny && same == 1; y += rows) {
        size_t n = ny - y < rows ? ny - y : rows;
        start[ndims - 2] = y;
        count[ndims - 2] = n;
        st = nc_get_vara_double(g, v, start, count, buf);
        if (st == NC_ERANGE) /* a value no int32 holds: not the mask */
            same = 0;
        else if (st != NC_NOERR)
            same = -raster_fail_nc(RASTER_ENETCDF, st, "reading values to "
                                   "compare with the mask: %s",
                                   nc_strerror(st));
        for (size_t i = 0; i < n * nx && same == 1; i++)
            same = buf[i] == (double)ids[y * nx + i];
    }
    raster_free(buf);
    return same;
}

int raster_var_choose(int ncid, int varid, const raster_mask *mask,
                      const char *mask_var, int flags, int *why)
{
    if (!why)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *why = RASTER_CHOOSE_DATA;
    if (!mask)
        return raster_fail(RASTER_EINVAL, "no mask");
    char name[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dimids[NC_MAX_VAR_DIMS], st;
    st = nc_inq_var(ncid, varid, name, &type, &ndims, dimids, NULL);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "variable %d: %s", varid,
                              nc_strerror(st));
    int named = (flags & RASTER_CHOOSE_NAMED) != 0;
    if (!named) {
        /* what it is comes first: a reason a reader recognises */
        char dim[NC_MAX_NAME + 1];
        if (ndims == 1 && nc_inq_dimname(ncid, dimids[0], dim) == NC_NOERR &&
            strcmp(dim, name) == 0) {
            *why = RASTER_CHOOSE_COORDINATE;
            return RASTER_OK;
        }
        if (mask_var) {
            const char *base = strrchr(mask_var, '/');
            if (strcmp(base ? base + 1 : mask_var, name) == 0) {
                *why = RASTER_CHOOSE_MASK;
                return RASTER_OK;
            }
        }
        if (nc_inq_att(ncid, varid, "axis", NULL, NULL) == NC_NOERR) {
            *why = RASTER_CHOOSE_AXIS;
            return RASTER_OK;
        }
        int geo = att_in(ncid, varid, "standard_name", geo_names,
                         sizeof geo_names / sizeof *geo_names, 0);
        if (geo == 0)
            geo = att_in(ncid, varid, "units", geo_units,
                         sizeof geo_units / sizeof *geo_units, 1);
        if (geo < 0)
            return -geo;
        if (geo) {
            *why = RASTER_CHOOSE_GEO;
            return RASTER_OK;
        }
    }
    if (type < NC_BYTE || type > NC_UINT64 || type == NC_CHAR ||
        type == NC_STRING) {
        *why = RASTER_CHOOSE_TYPE;
        return RASTER_OK;
    }
    if (ndims < 2 || ndims > RASTER_MAX_DIMS) {
        *why = RASTER_CHOOSE_RANK;
        return RASTER_OK;
    }
    size_t ny, nx, my, mx;
    int unlimited[NC_MAX_DIMS], nunlim = 0;
    raster_mask_shape(mask, &my, &mx);
    if ((st = nc_inq_dimlen(ncid, dimids[ndims - 2], &ny)) != NC_NOERR ||
        (st = nc_inq_dimlen(ncid, dimids[ndims - 1], &nx)) != NC_NOERR ||
        (st = nc_inq_unlimdims(ncid, &nunlim, NULL)) != NC_NOERR ||
        nunlim > NC_MAX_DIMS ||
        (st = nc_inq_unlimdims(ncid, NULL, unlimited)) != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st ? st : NC_EMAXDIMS,
                              "%s: reading its dimensions", name);
    /* dimensions of the groups above are unlimited in their own group */
    for (int g = ncid, up; nc_inq_grp_parent(g, &up) == NC_NOERR;) {
        int n = 0;
        g = up;
        if (nc_inq_unlimdims(g, &n, NULL) == NC_NOERR && n > 0 &&
            nunlim + n <= NC_MAX_DIMS &&
            nc_inq_unlimdims(g, NULL, unlimited + nunlim) == NC_NOERR)
            nunlim += n;
    }
    if (ny != my || nx != mx) {
        *why = RASTER_CHOOSE_GRID;
        return RASTER_OK;
    }
    for (int i = 0; i < nunlim; i++)
        if (unlimited[i] == dimids[ndims - 2] ||
            unlimited[i] == dimids[ndims - 1]) {
            *why = RASTER_CHOOSE_UNLIMITED;
            return RASTER_OK;
        }
    if (named)
        return RASTER_OK;
    /* the file-wide scan last: only for what could be stored by region */
    int root = ncid, parent;
    while (nc_inq_grp_parent(root, &parent) == NC_NOERR)
        root = parent;
    int ref = referenced(root, name, 0);
    if (ref < 0)
        return -ref; /* the message is set */
    if (ref) {
        *why = RASTER_CHOOSE_REFERENCED;
        return RASTER_OK;
    }
    if (ndims == 2) {
        *why = RASTER_CHOOSE_NO_OUTER;
        return RASTER_OK;
    }
    if (flags & RASTER_CHOOSE_VALUES) {
        int same = holds_mask(ncid, varid, ndims, dimids, mask);
        if (same < 0)
            return -same; /* the message is set */
        if (same)
            *why = RASTER_CHOOSE_MASK_VALUES;
    }
    return RASTER_OK;
}
