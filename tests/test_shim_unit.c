/*
 * test_shim_unit.c - unit tests of the shim core's wrappers (preload/shim.c,
 * files.c, config.c) without netCDF or libraster.
 *
 * The seam is resolve.h: this program does not link resolve.c but defines
 * resolve_real() itself, which hands the wrappers a table of fake "real"
 * netCDF functions. Each fake records its arguments and answers from a small
 * fake world (below). libraster is replaced by recording mocks, and the few
 * netCDF functions the core calls without wrapping them are fakes too, so
 * every answer a test checks comes from here and nothing touches a file.
 *
 * The fake world: "plain.nc" is a classic file (ncid 0x10000); "raster.nc"
 * is a netCDF-4 file (ncid 0x20000) with raster variable 3 (attributes
 * units, raster_note, long_name; filters 307, RASTER_FILTER_ID, 32015),
 * plain variable 1 (units, long_name; filter 307) and variable 4 (raster's
 * filter only); its groups are 0x20005 (raster's storage group, holding
 * dimensions 4 and 5) and 0x20006 (the program's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <stdlib.h>
#include <string.h>

#include "ncapi.h" /* nc_def_var_chunking_ints */
#include "raster_internal.h"
#include "resolve.h"

#define PLAIN 0x10000
#define RFILE 0x20000
#define STORE_GRP 0x20005 /* raster's storage group */
#define USER_GRP 0x20006
#define RVAR 3            /* the raster variable */
#define PVAR 1            /* a plain variable of the raster file */
#define MARKED 4          /* a variable with raster's filter only */

/* ---- what the fakes saw ------------------------------------------------- */

typedef struct call {
    const char *fn;
    int ncid, varid;
    const void *p[6];
    long long i[3];
} call;

static call calls[64];
static int ncalls;

static call *record(const char *fn, int ncid, int varid)
{
    assert_true(ncalls < 64);
    call *c = &calls[ncalls++];
    memset(c, 0, sizeof *c);
    c->fn = fn;
    c->ncid = ncid;
    c->varid = varid;
    return c;
}

/* The number of recorded calls of fn. */
static int count(const char *fn)
{
    int n = 0;
    for (int i = 0; i < ncalls; i++)
        n += strcmp(calls[i].fn, fn) == 0;
    return n;
}

/* The last recorded call of fn (fails when there is none). */
static call *last(const char *fn)
{
    for (int i = ncalls - 1; i >= 0; i--)
        if (strcmp(calls[i].fn, fn) == 0)
            return &calls[i];
    fail_msg("%s was not called", fn);
    return NULL;
}

/* Forced answers: a fake returns `forced` when set (0: its normal answer). */
static int forced;
static int attach_rc;   /* raster_attach's status */
static size_t nvars = 1; /* raster_file_nvars */
static int typed_rc;    /* raster_var_get_typed / put_typed */
static int nc_status;   /* raster_nc_status */
static int hide_on;     /* hide_install: opens may hide the storage */
static size_t hidden_n; /* hide_end: storage groups the open skipped */
static int view_rc;     /* raster_attach_view's status */
static int view_inq_rc; /* raster_var_view_inq's status */
static int through;     /* raster_view_reads_through's answer */
static size_t through_count[2]; /* the count it was last asked about */

static int setup(void **state)
{
    (void)state;
    ncalls = 0;
    forced = attach_rc = typed_rc = nc_status = 0;
    nvars = 1;
    hide_on = view_rc = view_inq_rc = through = 0;
    hidden_n = 0;
    return 0;
}

/* ---- fake real netCDF functions ---------------------------------------- */

static int fake_open(const char *path, int mode, int *ncidp)
{
    call *c = record("nc_open", -1, -1);
    c->p[0] = path;
    c->p[1] = ncidp;
    c->i[0] = mode;
    if (forced)
        return forced;
    if (strcmp(path, "missing.nc") == 0) /* netCDF says so by errno */
        return ENOENT;
    *ncidp = strcmp(path, "plain.nc") == 0 ? PLAIN : RFILE;
    return NC_NOERR;
}

static int fake_close(int ncid)
{
    record("nc_close", ncid, -1);
    return forced ? forced : NC_NOERR;
}

static int fake_get_vara_float(int ncid, int varid, const size_t *start,
                               const size_t *count_, float *buf)
{
    call *c = record("nc_get_vara_float", ncid, varid);
    c->p[0] = start;
    c->p[1] = count_;
    c->p[2] = buf;
    if (forced)
        return forced;
    buf[0] = 42.0f;
    return NC_NOERR;
}

static int fake_get_var1_float(int ncid, int varid, const size_t *index,
                               float *buf)
{
    call *c = record("nc_get_var1_float", ncid, varid);
    c->p[0] = index;
    buf[0] = 43.0f;
    return forced ? forced : NC_NOERR;
}

static int fake_get_varm_double(int ncid, int varid, const size_t *start,
                                const size_t *count_, const ptrdiff_t *stride,
                                const ptrdiff_t *imap, double *buf)
{
    call *c = record("nc_get_varm_double", ncid, varid);
    c->p[0] = start;
    c->p[1] = count_;
    c->p[2] = stride;
    c->p[3] = imap;
    c->p[4] = buf;
    return forced ? forced : NC_NOERR;
}

static int fake_put_var1_int(int ncid, int varid, const size_t *index,
                             const int *value)
{
    call *c = record("nc_put_var1_int", ncid, varid);
    c->p[0] = index;
    c->p[1] = value;
    c->i[0] = *value;
    return forced ? forced : NC_NOERR;
}

static int fake_inq_var(int ncid, int varid, char *name, nc_type *xtypep,
                        int *ndimsp, int *dimidsp, int *nattsp)
{
    call *c = record("nc_inq_var", ncid, varid);
    c->p[0] = name;
    c->p[1] = xtypep;
    c->p[2] = ndimsp;
    c->p[3] = dimidsp;
    c->p[4] = nattsp;
    if (forced)
        return forced;
    if (name)
        strcpy(name, varid == RVAR ? "TEMP" : "other");
    if (xtypep)
        *xtypep = NC_FLOAT;
    if (ndimsp)
        *ndimsp = 2;
    if (dimidsp) { /* netCDF's ids: 4 and 5 are raster's */
        dimidsp[0] = 3;
        dimidsp[1] = 6;
    }
    if (nattsp)
        *nattsp = varid == RVAR ? 3 : 2;
    return NC_NOERR;
}

/* The attributes of a variable in netCDF's numbering. */
static const char *const rvar_atts[] = {"units", RASTER_NOTE_ATT,
                                        "long_name"};
static const char *const pvar_atts[] = {"units", "long_name"};

static int natts_of(int varid, const char *const **names)
{
    *names = varid == RVAR ? rvar_atts : pvar_atts;
    return varid == RVAR ? 3 : 2;
}

static int fake_inq_varnatts(int ncid, int varid, int *nattsp)
{
    call *c = record("nc_inq_varnatts", ncid, varid);
    c->p[0] = nattsp;
    const char *const *names;
    if (forced)
        return forced;
    if (nattsp)
        *nattsp = natts_of(varid, &names);
    return NC_NOERR;
}

static int fake_inq_attid(int ncid, int varid, const char *name, int *idp)
{
    call *c = record("nc_inq_attid", ncid, varid);
    c->p[0] = name;
    c->p[1] = idp;
    const char *const *names;
    int n = natts_of(varid, &names);
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) {
            if (idp)
                *idp = i;
            return NC_NOERR;
        }
    return NC_ENOTATT;
}

static int fake_inq_attname(int ncid, int varid, int attnum, char *name)
{
    call *c = record("nc_inq_attname", ncid, varid);
    c->i[0] = attnum;
    const char *const *names;
    int n = natts_of(varid, &names);
    if (attnum < 0 || attnum >= n)
        return NC_ENOTATT;
    if (name)
        strcpy(name, names[attnum]);
    return NC_NOERR;
}

static int fake_inq_att(int ncid, int varid, const char *name,
                        nc_type *xtypep, size_t *lenp)
{
    call *c = record("nc_inq_att", ncid, varid);
    c->p[0] = name;
    c->p[1] = xtypep;
    c->p[2] = lenp;
    if (forced)
        return forced;
    /* a fill value is one float, everything else five characters */
    int fill = strcmp(name, "_FillValue") == 0;
    if (xtypep)
        *xtypep = fill ? NC_FLOAT : NC_CHAR;
    if (lenp)
        *lenp = fill ? 1 : 5;
    return NC_NOERR;
}

static int fake_get_att(int ncid, int varid, const char *name, void *value)
{
    call *c = record("nc_get_att", ncid, varid);
    c->p[0] = name;
    if (forced)
        return forced;
    if (strcmp(name, "_FillValue") == 0)
        *(float *)value = -3.0f;
    else
        memcpy(value, "hello", 5);
    return NC_NOERR;
}

static int fake_inq_type(int ncid, nc_type xtype, char *name, size_t *sizep)
{
    record("nc_inq_type", ncid, -1);
    assert_null(name);
    *sizep = xtype == NC_FLOAT ? 4 : 1;
    return NC_NOERR;
}

static int fake_get_att_text(int ncid, int varid, const char *name,
                             char *value)
{
    call *c = record("nc_get_att_text", ncid, varid);
    c->p[0] = name;
    c->p[1] = value;
    return NC_NOERR;
}

static int fake_put_att(int ncid, int varid, const char *name, nc_type xtype,
                        size_t len, const void *op)
{
    call *c = record("nc_put_att", ncid, varid);
    c->p[0] = name;
    c->p[1] = op;
    c->i[0] = xtype;
    c->i[1] = (long long)len;
    return NC_NOERR;
}

/* netCDF's nc_copy_att puts with the exported nc_put_att, which route.c
 * sends straight to netCDF (its caller is libnetcdf). */
static int fake_copy_att(int ncid_in, int varid_in, const char *name,
                         int ncid_out, int varid_out)
{
    record("nc_copy_att", ncid_in, varid_in);
    float fill = -1.0f;
    return fake_put_att(ncid_out, varid_out, name, NC_FLOAT, 1, &fill);
}

static const unsigned rvar_filters[] = {307, RASTER_FILTER_ID, 32015};
static const unsigned pvar_filters[] = {307};
static const unsigned marked_filters[] = {RASTER_FILTER_ID};

static int fake_inq_var_filter_ids(int ncid, int varid, size_t *nfiltersp,
                                   unsigned *ids)
{
    call *c = record("nc_inq_var_filter_ids", ncid, varid);
    c->p[0] = nfiltersp;
    c->p[1] = ids;
    const unsigned *f = varid == RVAR ? rvar_filters
                        : varid == MARKED ? marked_filters : pvar_filters;
    size_t n = varid == RVAR ? 3 : 1;
    if (forced)
        return forced;
    if (nfiltersp)
        *nfiltersp = n;
    if (ids)
        memcpy(ids, f, n * sizeof *ids);
    return NC_NOERR;
}

static int fake_inq_var_filter_info(int ncid, int varid, unsigned id,
                                    size_t *nparamsp, unsigned *params)
{
    call *c = record("nc_inq_var_filter_info", ncid, varid);
    c->i[0] = id;
    if (nparamsp)
        *nparamsp = 1;
    if (params)
        params[0] = 9;
    return NC_NOERR;
}

static int fake_inq_dimid(int ncid, const char *name, int *idp)
{
    call *c = record("nc_inq_dimid", ncid, -1);
    c->p[0] = name;
    if (forced)
        return forced;
    if (strcmp(name, "lon") != 0)
        return NC_EBADDIM;
    *idp = 6; /* netCDF's id, past raster's 4 and 5 */
    return NC_NOERR;
}

static int fake_inq_dimids(int ncid, int *ndims, int *dimids, int parents)
{
    (void)parents;
    record("nc_inq_dimids", ncid, -1);
    int n = ncid == STORE_GRP ? 2 : 0;
    if (ndims)
        *ndims = n;
    if (dimids && n) {
        dimids[0] = 4;
        dimids[1] = 5;
    }
    return NC_NOERR;
}

static int fake_inq_grps(int ncid, int *numgrps, int *ncids)
{
    record("nc_inq_grps", ncid, -1);
    int n = ncid == RFILE || ncid == PLAIN ? 2 : 0;
    if (numgrps)
        *numgrps = n;
    if (ncids && n) {
        ncids[0] = ncid + 5;
        ncids[1] = ncid + 6;
    }
    return NC_NOERR;
}

static int fake_inq_grp_ncid(int ncid, const char *name, int *grp)
{
    call *c = record("nc_inq_grp_ncid", ncid, -1);
    c->p[0] = name;
    if (strcmp(name, "raster_TEMP") == 0)
        *grp = STORE_GRP;
    else if (strcmp(name, "sub") == 0)
        *grp = USER_GRP;
    else
        return NC_ENOGRP;
    return NC_NOERR;
}

static int fake_inq_vardimid(int ncid, int varid, int *dimids)
{
    record("nc_inq_vardimid", ncid, varid);
    dimids[0] = 3; /* netCDF's ids */
    dimids[1] = 6;
    return NC_NOERR;
}

/* The grid: dimension 3 has 2 cells, dimension 6 has 3. */
static int fake_inq_dimlen(int ncid, int dimid, size_t *lenp)
{
    record("nc_inq_dimlen", ncid, -1)->i[0] = dimid;
    if (dimid != 3 && dimid != 6)
        return NC_EBADDIM;
    *lenp = dimid == 3 ? 2 : 3;
    return NC_NOERR;
}

static int fake_def_var_chunking(int ncid, int varid, int storage,
                                 const size_t *chunks)
{
    call *c = record("nc_def_var_chunking", ncid, varid);
    c->p[0] = chunks;
    c->i[0] = storage;
    if (chunks) {
        c->i[1] = (long long)chunks[0];
        c->i[2] = (long long)chunks[1];
    }
    return forced ? forced : NC_NOERR;
}

/* Called by files.c, which the core does not wrap. */
static int fake_inq_varname(int ncid, int varid, char *name)
{
    (void)ncid;
    (void)varid;
    strcpy(name, "TEMP");
    return NC_NOERR;
}

static int fake_inq_varndims(int ncid, int varid, int *ndimsp)
{
    (void)ncid;
    (void)varid;
    *ndimsp = 2;
    return NC_NOERR;
}

static int fake_inq_var_chunking(int ncid, int varid, int *storagep,
                                 size_t *chunks)
{
    (void)ncid;
    (void)varid;
    (void)chunks;
    *storagep = NC_CONTIGUOUS;
    return NC_NOERR;
}

/* ---- the seam: resolve.h ------------------------------------------------ */

static const struct {
    const char *name;
    void *fn;
} reals[] = {
    {"nc_open", (void *)fake_open},
    {"nc_close", (void *)fake_close},
    {"nc_get_vara_float", (void *)fake_get_vara_float},
    {"nc_get_varm_double", (void *)fake_get_varm_double},
    {"nc_get_var1_float", (void *)fake_get_var1_float},
    {"nc_put_var1_int", (void *)fake_put_var1_int},
    {"nc_inq_var", (void *)fake_inq_var},
    {"nc_inq_varnatts", (void *)fake_inq_varnatts},
    {"nc_inq_attid", (void *)fake_inq_attid},
    {"nc_inq_attname", (void *)fake_inq_attname},
    {"nc_inq_att", (void *)fake_inq_att},
    {"nc_get_att_text", (void *)fake_get_att_text},
    {"nc_put_att", (void *)fake_put_att},
    {"nc_copy_att", (void *)fake_copy_att},
    {"nc_get_att", (void *)fake_get_att},
    {"nc_inq_type", (void *)fake_inq_type},
    {"nc_inq_varname", (void *)fake_inq_varname},
    {"nc_inq_varndims", (void *)fake_inq_varndims},
    {"nc_inq_var_chunking", (void *)fake_inq_var_chunking},
    {"nc_inq_var_filter_ids", (void *)fake_inq_var_filter_ids},
    {"nc_inq_var_filter_info", (void *)fake_inq_var_filter_info},
    {"nc_inq_dimid", (void *)fake_inq_dimid},
    {"nc_inq_dimids", (void *)fake_inq_dimids},
    {"nc_inq_grps", (void *)fake_inq_grps},
    {"nc_inq_grp_ncid", (void *)fake_inq_grp_ncid},
    {"nc_def_var_chunking", (void *)fake_def_var_chunking},
    {"nc_inq_vardimid", (void *)fake_inq_vardimid},
    {"nc_inq_dimlen", (void *)fake_inq_dimlen},
};

void *resolve_real(const char *name)
{
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        if (strcmp(reals[i].name, name) == 0)
            return reals[i].fn;
    return NULL; /* e.g. nc_def_opaque: the wrapper says NC_EINTERNAL */
}

int resolve_flavour_ok(char *path, unsigned len)
{
    strncpy(path, "fake libnetcdf", len);
    path[len - 1] = '\0';
    return 1;
}

/* ---- netCDF functions the core calls without wrapping them --------------- */

int nc_inq_format(int ncid, int *formatp)
{
    record("nc_inq_format", ncid, -1);
    *formatp = ncid == PLAIN ? NC_FORMAT_CLASSIC : NC_FORMAT_NETCDF4;
    return NC_NOERR;
}

int nc_inq_grp_parent(int ncid, int *parent)
{
    if ((ncid & 0xffff) == 0)
        return NC_ENOGRP;
    *parent = ncid & ~0xffff;
    return NC_NOERR;
}

const char *nc_strerror(int status)
{
    (void)status;
    return "fake netCDF error";
}

/* ---- libraster, mocked -------------------------------------------------- */

static int file_storage, var_storage;
#define FAKE_RF ((raster_file *)&file_storage)
#define FAKE_VAR ((raster_var *)&var_storage)

int raster_attach(int ncid, int writable, raster_file **out)
{
    call *c = record("raster_attach", ncid, -1);
    c->i[0] = writable;
    if (attach_rc)
        return attach_rc;
    *out = FAKE_RF;
    return RASTER_OK;
}

int raster_attach_view(int ncid, raster_file **out)
{
    record("raster_attach_view", ncid, -1);
    if (view_rc)
        return view_rc;
    *out = FAKE_RF;
    return RASTER_OK;
}

/* hide.c, mocked: the hook on libnetcdf is the integration tests' */
int hide_install(void) { return hide_on; }
void hide_begin(void) { record("hide_begin", -1, -1); }
size_t hide_end(void) { return hidden_n; }

size_t raster_file_nvars(const raster_file *file)
{
    assert_ptr_equal(file, FAKE_RF);
    return nvars;
}

int raster_close(raster_file *file)
{
    assert_ptr_equal(file, FAKE_RF);
    record("raster_close", -1, -1);
    return RASTER_OK;
}

void raster_before_open(const char *path)
{
    (void)path;
    record("raster_before_open", -1, -1);
}

int raster_nc_closed(int ncid)
{
    record("raster_nc_closed", ncid, -1);
    return RASTER_OK;
}

int raster_flush(raster_file *file)
{
    assert_ptr_equal(file, FAKE_RF);
    record("raster_flush", -1, -1);
    return RASTER_OK;
}

int raster_abandon(raster_file *file)
{
    assert_ptr_equal(file, FAKE_RF);
    record("raster_abandon", -1, -1);
    return RASTER_OK;
}

raster_var *raster_var_by_varid(const raster_file *file, int parent,
                                int varid)
{
    assert_ptr_equal(file, FAKE_RF);
    return parent == RFILE && varid == RVAR ? FAKE_VAR : NULL;
}

int raster_filter_is_placeholder(unsigned id) { return id == RASTER_FILTER_ID; }
int raster_var_program_chunking(raster_var *var, int *storage, size_t *sizes)
{
    (void)var, (void)storage, (void)sizes;
    return 0; /* format 3's placeholder: netCDF answers */
}
int raster_filter_register(void) { return RASTER_OK; }
int raster_is_raster_group(int grpid) { return grpid == STORE_GRP; }
int raster_nc_status(void) { return nc_status; }
const char *raster_errmsg(void) { return "fake message"; }
const char *raster_strerror(int code)
{
    (void)code;
    return "fake error";
}
const char *raster_var_name(const raster_var *var)
{
    (void)var;
    return "TEMP";
}
int raster_var_ndims(const raster_var *var)
{
    assert_ptr_equal(var, FAKE_VAR);
    return 2;
}

int raster_view_var_plain(const raster_file *file, int parent, int varid)
{
    assert_ptr_equal(file, FAKE_RF);
    record("raster_view_var_plain", parent, varid);
    return through && parent == RFILE && varid == RVAR;
}

int raster_view_reads_through(const raster_file *file, int parent,
                              int varid, const size_t *start,
                              const size_t *count, const ptrdiff_t *stride)
{
    assert_ptr_equal(file, FAKE_RF);
    assert_non_null(start);
    (void)stride;
    record("raster_view_reads_through", parent, varid);
    if (count) /* NULL: a single value */
        memcpy(through_count, count, sizeof through_count);
    else
        through_count[0] = through_count[1] = 1;
    return through && parent == RFILE && varid == RVAR;
}

/* a view's placeholder, its dimensions 5 and 6 in netCDF's numbering */
int raster_var_view_inq(const raster_var *var, char *name, int *xtype,
                        int *ndims, int *dimids)
{
    assert_ptr_equal(var, FAKE_VAR);
    record("raster_var_view_inq", -1, -1);
    if (view_inq_rc)
        return view_inq_rc;
    if (name)
        strcpy(name, "TEMP");
    if (xtype)
        *xtype = NC_FLOAT;
    if (ndims)
        *ndims = 2;
    if (dimids) {
        dimids[0] = 5;
        dimids[1] = 6;
    }
    return RASTER_OK;
}

int raster_var_get_typed(raster_var *var, const size_t *start,
                         const size_t *count_, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, void *data, int memtype)
{
    assert_ptr_equal(var, FAKE_VAR);
    call *c = record("raster_var_get_typed", -1, -1);
    c->p[0] = start;
    c->p[1] = count_;
    c->p[2] = stride;
    c->p[3] = imap;
    c->p[4] = data;
    c->i[0] = memtype;
    c->i[1] = (long long)count_[0];
    c->i[2] = (long long)count_[1];
    if (typed_rc)
        return typed_rc;
    ((float *)data)[0] = 7.25f;
    return RASTER_OK;
}

int raster_var_put_typed(raster_var *var, const size_t *start,
                         const size_t *count_, const ptrdiff_t *stride,
                         const ptrdiff_t *imap, const void *data, int memtype)
{
    (void)start, (void)count_, (void)stride, (void)imap, (void)data;
    assert_ptr_equal(var, FAKE_VAR);
    record("raster_var_put_typed", -1, -1)->i[0] = memtype;
    return typed_rc;
}

int raster_var_put_att(raster_var *var, const char *name, int xtype,
                       size_t len, const void *value)
{
    assert_ptr_equal(var, FAKE_VAR);
    call *c = record("raster_var_put_att", -1, -1);
    c->p[0] = name;
    c->i[0] = xtype;
    c->i[1] = (long long)len;
    c->i[2] = (long long)*(const float *)value;
    return RASTER_OK;
}

int raster_var_compression(const raster_var *var, raster_compression *out)
{
    (void)var;
    memset(out, 0, sizeof *out);
    return RASTER_OK;
}
int raster_var_set_compression(raster_var *var, const raster_compression *c)
{
    (void)var;
    (void)c;
    return RASTER_OK;
}
int raster_var_rename(raster_var *var, const char *name)
{
    (void)var, (void)name;
    return RASTER_OK;
}
int raster_rename_dim(raster_file *file, int ncid, int dimid, const char *name)
{
    (void)file, (void)ncid, (void)dimid, (void)name;
    return RASTER_OK;
}
int raster_free_name(int grpid, const char *name)
{
    (void)grpid, (void)name;
    return RASTER_OK;
}

static int mask_storage;
#define FAKE_MASK ((raster_mask *)&mask_storage)
static int32_t wrapped[6]; /* the mask a chunk spec handed raster */
static size_t wrapped_ny, wrapped_nx;

int raster_mask_wrap(const int32_t *values, size_t ny, size_t nx,
                     raster_mask **out)
{
    assert_true(ny * nx <= 6);
    memcpy(wrapped, values, ny * nx * sizeof *values);
    wrapped_ny = ny;
    wrapped_nx = nx;
    *out = FAKE_MASK;
    return RASTER_OK;
}

void raster_mask_free(raster_mask *mask)
{
    if (mask) {
        assert_ptr_equal(mask, FAKE_MASK);
        record("raster_mask_free", -1, -1);
    }
}

int raster_adopt_var(raster_file *file, int parent, int varid,
                     const size_t *chunk, const raster_mask *mask,
                     raster_var **out)
{
    assert_ptr_equal(file, FAKE_RF);
    call *c = record("raster_adopt_var", parent, varid);
    c->p[0] = mask;
    c->i[0] = chunk ? (long long)chunk[0] : -1;
    c->i[1] = chunk ? (long long)chunk[1] : -1;
    *out = FAKE_VAR;
    return RASTER_OK;
}

/* Reached only through RASTER_WEIGHTS, which these tests do not set. */
int raster_var_set_stats_weights(raster_var *var, const char *name)
{
    (void)var, (void)name;
    record("raster_var_set_stats_weights", -1, -1);
    return RASTER_OK;
}

/* Reached only through RASTER_MASK, which these tests do not set. */
int raster_var_choose(int ncid, int varid, const raster_mask *mask,
                      const char *mask_var, int flags, int *why)
{
    (void)ncid, (void)varid, (void)mask, (void)mask_var, (void)flags,
        (void)why;
    return RASTER_EINVAL;
}
const char *raster_choose_reason(int why)
{
    (void)why;
    return "fake";
}
int raster_mask_load(const char *path, const char *var, raster_mask **out)
{
    (void)path, (void)var, (void)out;
    return RASTER_EINVAL;
}
int raster_mask_set_names_file(raster_mask *mask, const char *path)
{
    (void)mask, (void)path;
    return RASTER_EINVAL;
}
void raster_mask_shape(const raster_mask *mask, size_t *ny, size_t *nx)
{
    (void)mask;
    *ny = *nx = 0;
}
const int32_t *raster_mask_values(const raster_mask *mask)
{
    (void)mask;
    return NULL;
}

/* ---- helpers ------------------------------------------------------------ */

static int open_raster(void)
{
    int ncid = -1;
    assert_int_equal(nc_open("raster.nc", NC_NOWRITE, &ncid), NC_NOERR);
    assert_int_equal(ncid, RFILE);
    return ncid;
}

/* raster_close, netCDF's close, then the seal (raster_nc_closed): in
 * that order, for the program's ncid. */
static void close_raster(int ncid)
{
    int closes = count("raster_close"), sealed = count("raster_nc_closed");
    assert_int_equal(nc_close(ncid), NC_NOERR);
    assert_int_equal(count("raster_close"), closes + 1);
    assert_int_equal(last("nc_close")->ncid, ncid);
    assert_int_equal(count("raster_nc_closed"), sealed + 1);
    assert_int_equal(last("raster_nc_closed")->ncid, ncid);
    assert_ptr_equal(&calls[ncalls - 1], last("raster_nc_closed"));
    assert_true(last("nc_close") < last("raster_nc_closed") &&
                last("raster_close") < last("nc_close"));
}

/* ---- tests -------------------------------------------------------------- */

/* An ordinary file: every call reaches netCDF with the program's own
 * arguments (the same pointers, NULL optional ones still NULL), and the
 * program gets netCDF's answer. */
static void test_plain_file_passes_through(void **state)
{
    (void)state;
    int ncid = -1;
    assert_int_equal(nc_open("plain.nc", NC_NOWRITE, &ncid), NC_NOERR);
    assert_int_equal(ncid, PLAIN);
    assert_string_equal(last("nc_open")->p[0], "plain.nc");
    assert_ptr_equal(last("nc_open")->p[1], &ncid);
    assert_int_equal(last("nc_open")->i[0], NC_NOWRITE);
    assert_int_equal(count("raster_attach"), 0); /* classic: not raster's */

    size_t start[2] = {1, 2}, cnt[2] = {1, 1};
    float f = 0;
    assert_int_equal(nc_get_vara_float(ncid, 2, start, cnt, &f), NC_NOERR);
    call *c = last("nc_get_vara_float");
    assert_int_equal(c->ncid, PLAIN);
    assert_int_equal(c->varid, 2);
    assert_ptr_equal(c->p[0], start);
    assert_ptr_equal(c->p[1], cnt);
    assert_ptr_equal(c->p[2], &f);
    assert_true(f == 42.0f);

    double d[1];
    assert_int_equal(nc_get_varm_double(ncid, 2, start, cnt, NULL, NULL, d),
                     NC_NOERR);
    c = last("nc_get_varm_double");
    assert_null(c->p[2]);
    assert_null(c->p[3]);
    assert_ptr_equal(c->p[4], d);

    int v = 17;
    assert_int_equal(nc_put_var1_int(ncid, 2, start, &v), NC_NOERR);
    c = last("nc_put_var1_int");
    assert_ptr_equal(c->p[0], start);
    assert_ptr_equal(c->p[1], &v);
    assert_int_equal(c->i[0], 17);

    /* every optional output NULL */
    assert_int_equal(nc_inq_var(ncid, 2, NULL, NULL, NULL, NULL, NULL),
                     NC_NOERR);
    c = last("nc_inq_var");
    assert_null(c->p[0]);
    assert_null(c->p[1]);
    assert_null(c->p[3]);
    assert_null(c->p[4]);
    assert_int_equal(nc_inq_varnatts(ncid, PVAR, NULL), NC_NOERR);
    assert_null(last("nc_inq_varnatts")->p[0]);
    assert_int_equal(nc_inq_att(ncid, PVAR, "units", NULL, NULL), NC_NOERR);
    assert_null(last("nc_inq_att")->p[1]);
    assert_null(last("nc_inq_att")->p[2]);
    assert_int_equal(nc_def_var_chunking(ncid, 2, NC_CONTIGUOUS, NULL),
                     NC_NOERR);
    assert_null(last("nc_def_var_chunking")->p[0]);
    assert_int_equal(last("nc_def_var_chunking")->i[0], NC_CONTIGUOUS);
    int g = -1;
    assert_int_equal(nc_inq_grp_ncid(ncid, "sub", NULL), NC_NOERR);
    assert_int_equal(nc_inq_grp_ncid(ncid, "sub", &g), NC_NOERR);
    assert_int_equal(g, USER_GRP);

    /* netCDF's answers unchanged: no note, no hidden dimension here */
    int natts = -1, id = -1;
    assert_int_equal(nc_inq_varnatts(ncid, RVAR, &natts), NC_NOERR);
    assert_int_equal(natts, 3);
    assert_int_equal(nc_inq_dimid(ncid, "lon", &id), NC_NOERR);
    assert_int_equal(id, 6);

    assert_int_equal(nc_close(ncid), NC_NOERR);
    assert_int_equal(last("nc_close")->ncid, PLAIN);
    assert_int_equal(count("raster_close"), 0);
}

/* A read-only netCDF-4 file without raster variables is left alone. */
static void test_netcdf4_without_raster_vars(void **state)
{
    (void)state;
    nvars = 0;
    int ncid = -1, natts = -1;
    assert_int_equal(nc_open("other.nc", NC_NOWRITE, &ncid), NC_NOERR);
    assert_int_equal(count("raster_attach"), 1);
    assert_int_equal(last("raster_attach")->i[0], 0); /* not writable */
    assert_int_equal(count("raster_close"), 1);       /* let go at once */
    assert_int_equal(nc_inq_varnatts(ncid, RVAR, &natts), NC_NOERR);
    assert_int_equal(natts, 3);                       /* nothing hidden */
    assert_int_equal(nc_close(ncid), NC_NOERR);
    assert_int_equal(count("raster_close"), 1);
}

/* netCDF's error codes reach the program unchanged; outputs untouched. */
static void test_errors_propagate(void **state)
{
    (void)state;
    int ncid = -5;
    assert_int_equal(nc_open("missing.nc", NC_NOWRITE, &ncid), ENOENT);
    assert_int_equal(ncid, -5);
    assert_int_equal(count("raster_attach"), 0);

    ncid = open_raster();
    int id = -7, g = -7;
    assert_int_equal(nc_inq_dimid(ncid, "nope", &id), NC_EBADDIM);
    assert_int_equal(id, -7);
    assert_int_equal(nc_inq_grp_ncid(ncid, "nope", &g), NC_ENOGRP);
    assert_int_equal(g, -7);

    size_t start[2] = {0, 0}, cnt[2] = {1, 1};
    float f = -3;
    forced = NC_EINVALCOORDS;
    assert_int_equal(nc_get_vara_float(ncid, PVAR, start, cnt, &f),
                     NC_EINVALCOORDS);
    assert_true(f == -3.0f);
    int natts = -9;
    forced = NC_ENOTVAR;
    assert_int_equal(nc_inq_varnatts(ncid, 99, &natts), NC_ENOTVAR);
    assert_int_equal(natts, -9);
    forced = 0;

    /* libraster's refusal of a raster variable's read: netCDF's status */
    typed_rc = RASTER_EINVAL;
    nc_status = NC_EEDGE;
    assert_int_equal(nc_get_vara_float(ncid, RVAR, start, cnt, &f), NC_EEDGE);
    /* a failure without a netCDF status still fails */
    nc_status = NC_NOERR;
    typed_rc = RASTER_EIO;
    assert_int_equal(nc_get_vara_float(ncid, RVAR, start, cnt, &f),
                     NC_EHDFERR);
    typed_rc = 0;
    assert_int_equal(count("nc_get_vara_float"), 1); /* only PVAR's */

    /* a real function the library lacks: an error, not a crash */
    nc_type t = 0;
    assert_int_equal(nc_def_opaque(ncid, 8, "blob", &t), NC_EINTERNAL);
    assert_int_equal(t, 0);

    /* netCDF's close fails: its status wins */
    forced = NC_EHDFERR;
    assert_int_equal(nc_close(ncid), NC_EHDFERR);
    forced = 0;
    assert_int_equal(count("raster_close"), 1);

    /* a raster file left incomplete: refused at open, and closed */
    attach_rc = RASTER_EINCOMPLETE;
    ncid = -5;
    assert_int_equal(nc_open("raster.nc", NC_NOWRITE, &ncid), NC_EHDFERR);
    assert_int_equal(last("nc_close")->ncid, RFILE);
    attach_rc = RASTER_ENETCDF;
    assert_int_equal(nc_open("raster.nc", NC_WRITE, &ncid), NC_ENOTNC);
    assert_int_equal(count("nc_close"), 3);
    attach_rc = 0;
}

/* raster's marker filter is left out of every filter answer. */
static void test_filter_hidden(void **state)
{
    (void)state;
    int ncid = open_raster();
    size_t n = 0;
    unsigned ids[4] = {0, 0, 0, 0};
    assert_int_equal(nc_inq_var_filter_ids(ncid, RVAR, &n, NULL), NC_NOERR);
    assert_int_equal(n, 2);
    assert_int_equal(nc_inq_var_filter_ids(ncid, RVAR, NULL, ids), NC_NOERR);
    assert_int_equal(ids[0], 307);
    assert_int_equal(ids[1], 32015);
    assert_int_equal(ids[2], 0);
    assert_int_equal(nc_inq_var_filter_ids(ncid, RVAR, NULL, NULL), NC_NOERR);

    size_t np = 0;
    unsigned params[2] = {0, 0};
    int before = count("nc_inq_var_filter_info");
    assert_int_equal(nc_inq_var_filter_info(ncid, RVAR, RASTER_FILTER_ID,
                                            &np, params),
                     NC_ENOFILTER);
    assert_int_equal(count("nc_inq_var_filter_info"), before);

    unsigned first = 0;
    assert_int_equal(nc_inq_var_filter(ncid, RVAR, &first, &np, params),
                     NC_NOERR);
    assert_int_equal(first, 307);
    assert_int_equal(last("nc_inq_var_filter_info")->i[0], 307);
    assert_int_equal(np, 1);
    assert_int_equal(params[0], 9);

    /* raster's filter alone: no filter at all, as netCDF says it (id 0) */
    first = 99;
    assert_int_equal(nc_inq_var_filter_ids(ncid, MARKED, &n, ids), NC_NOERR);
    assert_int_equal(n, 0);
    assert_int_equal(nc_inq_var_filter(ncid, MARKED, &first, NULL, NULL),
                     NC_NOERR);
    assert_int_equal(first, 0);

    /* the program's own filters are all there */
    assert_int_equal(nc_inq_var_filter_ids(ncid, PVAR, &n, ids), NC_NOERR);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 307);

    forced = NC_ENOTVAR;
    n = 5;
    assert_int_equal(nc_inq_var_filter_ids(ncid, 99, &n, NULL), NC_ENOTVAR);
    assert_int_equal(n, 5);
    forced = 0;
    close_raster(ncid);
}

/* The placeholder's note is not among a raster variable's attributes. */
static void test_note_hidden(void **state)
{
    (void)state;
    int ncid = open_raster();
    int natts = -1, id = -1;
    char name[NC_MAX_NAME + 1] = "";
    assert_int_equal(nc_inq_varnatts(ncid, RVAR, &natts), NC_NOERR);
    assert_int_equal(natts, 2);
    assert_int_equal(nc_inq_var(ncid, RVAR, NULL, NULL, NULL, NULL, &natts),
                     NC_NOERR);
    assert_int_equal(natts, 2);
    assert_int_equal(nc_inq_attname(ncid, RVAR, 0, name), NC_NOERR);
    assert_string_equal(name, "units");
    assert_int_equal(nc_inq_attname(ncid, RVAR, 1, name), NC_NOERR);
    assert_string_equal(name, "long_name");
    assert_int_equal(last("nc_inq_attname")->i[0], 2); /* netCDF's number */
    assert_int_equal(nc_inq_attname(ncid, RVAR, 2, name), NC_ENOTATT);
    assert_int_equal(nc_inq_attid(ncid, RVAR, "long_name", &id), NC_NOERR);
    assert_int_equal(id, 1);
    assert_int_equal(nc_inq_attid(ncid, RVAR, "units", &id), NC_NOERR);
    assert_int_equal(id, 0);

    /* by name it does not exist, and netCDF is not asked for it */
    int gets = count("nc_get_att_text"), inqs = count("nc_inq_att");
    char text[8];
    id = -4;
    assert_int_equal(nc_inq_attid(ncid, RVAR, RASTER_NOTE_ATT, &id),
                     NC_ENOTATT);
    assert_int_equal(id, -4);
    assert_int_equal(nc_inq_att(ncid, RVAR, RASTER_NOTE_ATT, NULL, NULL),
                     NC_ENOTATT);
    assert_int_equal(nc_get_att_text(ncid, RVAR, RASTER_NOTE_ATT, text),
                     NC_ENOTATT);
    assert_int_equal(nc_del_att(ncid, RVAR, RASTER_NOTE_ATT), NC_ENOTATT);
    assert_int_equal(nc_rename_att(ncid, RVAR, "units", RASTER_NOTE_ATT),
                     NC_ENAMEINUSE);
    assert_int_equal(count("nc_get_att_text"), gets);
    assert_int_equal(count("nc_inq_att"), inqs);
    assert_int_equal(nc_get_att_text(ncid, RVAR, "units", text), NC_NOERR);
    assert_ptr_equal(last("nc_get_att_text")->p[1], text);

    /* a plain variable of the same file keeps netCDF's counts */
    assert_int_equal(nc_inq_varnatts(ncid, PVAR, &natts), NC_NOERR);
    assert_int_equal(natts, 2);
    assert_int_equal(nc_inq_attname(ncid, PVAR, 1, name), NC_NOERR);
    assert_string_equal(name, "long_name");
    assert_int_equal(last("nc_inq_attname")->i[0], 1);
    close_raster(ncid);
}

/* nc_copy_att: a _FillValue copied onto a raster variable is read with
 * netCDF's own functions and reaches raster as a put of it would; other
 * copies are netCDF's (its nested put goes straight to netCDF: route.c). */
static void test_copy_att(void **state)
{
    (void)state;
    int ncid = open_raster();
    int puts = count("nc_put_att"), copies = count("nc_copy_att");
    int raster_puts = count("raster_var_put_att");
    assert_int_equal(nc_copy_att(PLAIN, PVAR, "_FillValue", ncid, RVAR),
                     NC_NOERR);
    assert_int_equal(count("nc_copy_att"), copies);
    assert_int_equal(count("nc_put_att"), puts);
    assert_int_equal(last("nc_inq_att")->ncid, PLAIN);
    assert_int_equal(last("nc_inq_att")->varid, PVAR);
    assert_string_equal(last("nc_get_att")->p[0], "_FillValue");
    assert_int_equal(last("nc_get_att")->ncid, PLAIN);
    assert_int_equal(count("raster_var_put_att"), raster_puts + 1);
    call *c = last("raster_var_put_att");
    assert_string_equal(c->p[0], "_FillValue");
    assert_int_equal(c->i[0], NC_FLOAT);
    assert_int_equal(c->i[1], 1);
    assert_int_equal(c->i[2], -3); /* the source's value */

    /* netCDF's error reading the source reaches the program; raster is
     * left alone */
    forced = NC_ENOTATT;
    assert_int_equal(nc_copy_att(PLAIN, PVAR, "_FillValue", ncid, RVAR),
                     NC_ENOTATT);
    forced = 0;
    assert_int_equal(count("raster_var_put_att"), raster_puts + 1);
    assert_int_equal(count("nc_copy_att"), copies);

    /* onto a plain variable, another attribute, or itself: netCDF's */
    assert_int_equal(nc_copy_att(PLAIN, PVAR, "_FillValue", ncid, PVAR),
                     NC_NOERR);
    assert_int_equal(count("nc_copy_att"), copies + 1);
    assert_int_equal(count("nc_put_att"), puts + 1);
    assert_int_equal(last("nc_put_att")->varid, PVAR);
    assert_int_equal(nc_copy_att(PLAIN, PVAR, "units", ncid, RVAR),
                     NC_NOERR);
    assert_int_equal(count("nc_copy_att"), copies + 2);
    assert_int_equal(nc_copy_att(ncid, RVAR, "_FillValue", ncid, RVAR),
                     NC_NOERR);
    assert_int_equal(count("nc_copy_att"), copies + 3);
    assert_int_equal(count("raster_var_put_att"), raster_puts + 1);

    /* the placeholder's note is not there to copy */
    assert_int_equal(nc_copy_att(ncid, RVAR, RASTER_NOTE_ATT, ncid, PVAR),
                     NC_ENOTATT);
    assert_int_equal(count("nc_copy_att"), copies + 3);
    close_raster(ncid);
}

/* Data calls on a raster variable go to libraster's typed transfers with
 * the program's arguments; other variables' go to netCDF. */
static void test_raster_variable_data(void **state)
{
    (void)state;
    int ncid = open_raster();
    size_t start[2] = {3, 4}, cnt[2] = {2, 5};
    float f[10] = {0};
    assert_int_equal(nc_get_vara_float(ncid, RVAR, start, cnt, f), NC_NOERR);
    call *c = last("raster_var_get_typed");
    assert_ptr_equal(c->p[0], start);
    assert_ptr_equal(c->p[1], cnt);
    assert_null(c->p[2]);
    assert_null(c->p[3]);
    assert_ptr_equal(c->p[4], f);
    assert_int_equal(c->i[0], NC_FLOAT);
    assert_true(f[0] == 7.25f);
    assert_int_equal(count("nc_get_vara_float"), 0);

    /* var1: a count of ones */
    assert_int_equal(nc_get_var1_float(ncid, RVAR, start, f), NC_NOERR);
    c = last("raster_var_get_typed");
    assert_ptr_equal(c->p[0], start);
    assert_int_equal(c->i[1], 1);
    assert_int_equal(c->i[2], 1);
    int v = 3;
    assert_int_equal(nc_put_var1_int(ncid, RVAR, start, &v), NC_NOERR);
    assert_int_equal(last("raster_var_put_typed")->i[0], NC_INT);
    assert_int_equal(count("nc_put_var1_int"), 0);

    assert_int_equal(nc_get_vara_float(ncid, PVAR, start, cnt, f), NC_NOERR);
    assert_int_equal(last("nc_get_vara_float")->varid, PVAR);
    assert_true(f[0] == 42.0f);

    /* a _FillValue of a raster variable reaches its stores */
    float fill = 1e20f;
    assert_int_equal(nc_put_att(ncid, RVAR, "_FillValue", NC_FLOAT, 1, &fill),
                     NC_NOERR);
    assert_int_equal(count("nc_put_att"), 0);
    assert_int_equal(nc_put_att(ncid, RVAR, "units", NC_CHAR, 1, "K"),
                     NC_NOERR);
    assert_int_equal(count("nc_put_att"), 1);
    close_raster(ncid);
}

/* raster's storage groups and their dimensions do not exist for the
 * program. */
static void test_groups_and_dims_hidden(void **state)
{
    (void)state;
    int ncid = open_raster();
    int n = -1, ids[2] = {-1, -1}, g = -2;
    assert_int_equal(nc_inq_grps(ncid, &n, ids), NC_NOERR);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], USER_GRP);
    assert_int_equal(ids[1], -1);
    assert_int_equal(nc_inq_grps(ncid, NULL, NULL), NC_NOERR);
    assert_int_equal(nc_inq_grp_ncid(ncid, "raster_TEMP", &g), NC_ENOGRP);
    assert_int_equal(g, -2);
    assert_int_equal(nc_inq_grp_ncid(ncid, "sub", &g), NC_NOERR);
    assert_int_equal(g, USER_GRP);

    /* netCDF's 6 is the program's 4 (4 and 5 are raster's) */
    int id = -1, dims[2] = {-1, -1};
    assert_int_equal(nc_inq_dimid(ncid, "lon", &id), NC_NOERR);
    assert_int_equal(id, 4);
    assert_int_equal(nc_inq_var(ncid, RVAR, NULL, NULL, NULL, dims, NULL),
                     NC_NOERR);
    assert_int_equal(dims[0], 3);
    assert_int_equal(dims[1], 4);
    close_raster(ncid);
}

/* The chunk-spec route (include/raster.h): a tagged spec hands raster the
 * variable's mask and base chunk shape; netCDF gets the chunk shape only,
 * and the variable is adopted when the file closes. */
/* The test's chunk spec: a 2 x 3 mask, base chunk 1 x 3. */
static const int spec_mask[6] = {1, 1, 2, -3, 2, 2};
static const size_t spec_chunk[2] = {1, 3};

/* Opens raster.nc for writing and gives variable varid the chunk spec. */
static int open_with_spec(int varid, size_t *spec)
{
    raster_chunkspec(spec, 2, spec_chunk, spec_mask, 2, 3);
    int ncid = -1;
    assert_int_equal(nc_open("raster.nc", NC_WRITE, &ncid), NC_NOERR);
    assert_int_equal(nc_def_var_chunking(ncid, varid, NC_CHUNKED, spec),
                     NC_NOERR);
    return ncid;
}

static void test_chunk_spec(void **state)
{
    (void)state;
    const int *mask = spec_mask;
    size_t spec[3 + 2 + 6];
    int ncid = open_with_spec(2, spec);
    call *c = last("nc_def_var_chunking");
    assert_int_equal(c->i[0], NC_CHUNKED);
    assert_int_equal(c->i[1], 1);
    assert_int_equal(c->i[2], 3);
    assert_int_equal(wrapped_ny, 2);
    assert_int_equal(wrapped_nx, 3);
    for (int i = 0; i < 6; i++)
        assert_int_equal(wrapped[i], mask[i]);
    assert_int_equal(count("raster_adopt_var"), 0); /* pending */

    /* the Fortran form, ints; a later spec replaces the earlier one */
    int ispec[3 + 2 + 6] = {RASTER_CHUNKSPEC_TAG_INT, 2, 3, 2, 1,
                            7, 7, 7, -1, 7, 7};
    assert_int_equal(nc_def_var_chunking_ints(ncid, 2, 0, ispec), NC_NOERR);
    assert_int_equal(last("nc_def_var_chunking")->i[1], 2);
    assert_int_equal(last("nc_def_var_chunking")->i[2], 1);
    assert_int_equal(wrapped[3], -1);
    assert_int_equal(wrapped[5], 7);
    assert_int_equal(count("raster_mask_free"), 1); /* the first one's */

    /* a spec of another grid is refused; netCDF never sees it */
    int chunkings = count("nc_def_var_chunking");
    spec[1] = 5;
    assert_int_equal(nc_def_var_chunking(ncid, 2, NC_CHUNKED, spec),
                     NC_EBADCHUNK);
    ispec[2] = 4;
    assert_int_equal(nc_def_var_chunking_ints(ncid, 2, 0, ispec),
                     NC_EBADCHUNK);
    assert_int_equal(count("nc_def_var_chunking"), chunkings);

    /* adopted at close with the last spec's mask and chunk shape */
    close_raster(ncid);
    c = last("raster_adopt_var");
    assert_int_equal(c->ncid, RFILE);
    assert_int_equal(c->varid, 2);
    assert_ptr_equal(c->p[0], FAKE_MASK);
    assert_int_equal(c->i[0], 2);
    assert_int_equal(c->i[1], 1);
    assert_int_equal(count("raster_mask_free"), 2);

    /* not a netCDF-4 file: refused, the mask freed */
    spec[1] = 2;
    assert_int_equal(nc_open("plain.nc", NC_WRITE, &ncid), NC_NOERR);
    assert_int_equal(nc_def_var_chunking(ncid, 2, NC_CHUNKED, spec),
                     NC_EBADCHUNK);
    assert_int_equal(count("raster_mask_free"), 3);
    assert_int_equal(nc_close(ncid), NC_NOERR);
}

/* Issue 39: netCDF ends the definition at a data call on any variable
 * (and creates every variable's dataset then), so the shim adopts every
 * pending variable first, before the call reaches netCDF: here two given
 * by chunk specs, at a read of a plain variable. */
static void test_data_call_adopts_all(void **state)
{
    (void)state;
    size_t spec[3 + 2 + 6];
    int ncid = open_with_spec(2, spec);
    assert_int_equal(nc_def_var_chunking(ncid, 5, NC_CHUNKED, spec),
                     NC_NOERR);
    assert_int_equal(count("raster_adopt_var"), 0); /* pending */
    size_t start[2] = {0, 0}, cnt[2] = {1, 1};
    float f[1] = {0};
    assert_int_equal(nc_get_vara_float(ncid, PVAR, start, cnt, f), NC_NOERR);
    assert_int_equal(count("raster_adopt_var"), 2);
    /* in definition order, both before netCDF's own call */
    int seen = 0;
    for (int i = 0; i < ncalls; i++) {
        if (strcmp(calls[i].fn, "raster_adopt_var") == 0)
            assert_int_equal(calls[i].varid, seen++ == 0 ? 2 : 5);
        if (strcmp(calls[i].fn, "nc_get_vara_float") == 0)
            assert_int_equal(seen, 2);
    }
    assert_int_equal(last("nc_get_vara_float")->varid, PVAR);
    /* nothing left to adopt at close */
    close_raster(ncid);
    assert_int_equal(count("raster_adopt_var"), 2);
}

/* A read-only open hides the storage from netCDF and attaches a view; a
 * file without storage is left alone; a file the view cannot take is
 * opened again whole; a writable open never hides. */
static void test_view_open(void **state)
{
    (void)state;
    hide_on = 1;
    hidden_n = 2;
    int ncid = open_raster();
    assert_int_equal(count("hide_begin"), 1);
    assert_int_equal(count("nc_open"), 1);
    assert_int_equal(count("raster_attach_view"), 1);
    assert_int_equal(last("raster_attach_view")->ncid, RFILE);
    assert_int_equal(count("raster_attach"), 0);
    size_t start[2] = {0, 0}, cnt[2] = {1, 1};
    float f = 0;
    assert_int_equal(nc_get_vara_float(ncid, RVAR, start, cnt, &f), NC_NOERR);
    assert_int_equal(count("raster_var_get_typed"), 1); /* raster's read */
    assert_int_equal(count("raster_view_reads_through"), 1);
    /* a small read raster would give to netCDF anyway: netCDF's own call,
     * nothing of raster loaded; a single value's count is ones */
    through = 1;
    assert_int_equal(nc_get_vara_float(ncid, RVAR, start, cnt, &f), NC_NOERR);
    assert_int_equal(count("raster_var_get_typed"), 1);
    assert_int_equal(count("nc_get_vara_float"), 1);
    assert_int_equal(last("nc_get_vara_float")->varid, RVAR);
    through_count[0] = through_count[1] = 0;
    assert_int_equal(nc_get_var1_float(ncid, RVAR, start, &f), NC_NOERR);
    assert_int_equal(count("nc_get_var1_float"), 1);
    assert_true(f == 43.0f);
    assert_int_equal(through_count[0], 1);
    assert_int_equal(through_count[1], 1);
    /* a write is never asked about */
    int before = count("raster_view_reads_through");
    (void)nc_put_vara_float(ncid, RVAR, start, cnt, &f);
    assert_int_equal(count("raster_view_reads_through"), before);
    through = 0;

    /* the placeholder described by raster, not by netCDF (which would
     * read its metadata first); every pointer optional */
    char name[NC_MAX_NAME + 1] = "";
    nc_type type = NC_NAT;
    int nd = -1, dims[2] = {-1, -1}, natts = -1;
    assert_int_equal(nc_inq_varname(ncid, RVAR, name), NC_NOERR);
    assert_string_equal(name, "TEMP");
    assert_int_equal(nc_inq_vartype(ncid, RVAR, &type), NC_NOERR);
    assert_int_equal(type, NC_FLOAT);
    assert_int_equal(nc_inq_varndims(ncid, RVAR, &nd), NC_NOERR);
    assert_int_equal(nd, 2);
    /* renumbered as the program knows them: this view shows netCDF's
     * dimensions 4 and 5 only (fake_inq_dimids), so 0-3 are gaps the
     * program does not count: netCDF's 5 is its 1, 6 its 2 */
    assert_int_equal(nc_inq_vardimid(ncid, RVAR, dims), NC_NOERR);
    assert_int_equal(dims[0], 1);
    assert_int_equal(dims[1], 2);
    assert_int_equal(nc_inq_var(ncid, RVAR, NULL, NULL, NULL, NULL, NULL),
                     NC_NOERR);
    assert_int_equal(count("nc_inq_var") + count("nc_inq_vardimid"), 0);
    assert_int_equal(count("raster_var_view_inq"), 5);
    /* its attribute count is netCDF's; so is an ordinary variable */
    assert_int_equal(nc_inq_var(ncid, RVAR, NULL, NULL, NULL, NULL, &natts),
                     NC_NOERR);
    assert_int_equal(count("nc_inq_var"), 1);
    assert_int_equal(nc_inq_varndims(ncid, 2, &nd), NC_NOERR);
    assert_int_equal(count("nc_inq_var"), 2);
    assert_int_equal(count("raster_var_view_inq"), 5);
    /* a view raster cannot vouch for: netCDF's answer */
    view_inq_rc = RASTER_EUNSUPPORTED;
    nd = -1;
    assert_int_equal(nc_inq_varndims(ncid, RVAR, &nd), NC_NOERR);
    assert_int_equal(nd, 2);
    assert_int_equal(count("nc_inq_var"), 3);
    /* a variable holding its values, not loaded yet: netCDF's answer */
    view_inq_rc = 0;
    through = 1;
    assert_int_equal(nc_inq_varndims(ncid, RVAR, &nd), NC_NOERR);
    assert_int_equal(count("nc_inq_var"), 4);
    assert_int_equal(count("raster_var_view_inq"), 6); /* as before it */
    assert_int_equal(last("raster_view_var_plain")->varid, RVAR);
    close_raster(ncid);

    setup(NULL);
    hide_on = 1; /* hidden_n 0: an ordinary file */
    assert_int_equal(nc_open("plain.nc", NC_NOWRITE, &ncid), NC_NOERR);
    assert_int_equal(count("raster_attach_view") + count("raster_attach"), 0);
    assert_int_equal(nc_close(ncid), NC_NOERR);
    assert_int_equal(count("raster_close"), 0);

    /* nothing hidden in a netCDF-4 file (its storage renamed since):
     * raster looks for storage as without views */
    setup(NULL);
    hide_on = 1;
    ncid = open_raster();
    assert_int_equal(count("nc_open"), 1);
    assert_int_equal(count("raster_attach_view"), 0);
    assert_int_equal(count("raster_attach"), 1);
    close_raster(ncid);

    setup(NULL);
    hide_on = 1;
    hidden_n = 1;
    view_rc = RASTER_EFORMAT;
    ncid = open_raster();
    assert_int_equal(count("nc_open"), 2); /* the view, then whole */
    assert_int_equal(count("nc_close"), 1);
    assert_int_equal(count("raster_attach"), 1);
    assert_int_equal(last("raster_attach")->i[0], 0);
    close_raster(ncid);

    setup(NULL);
    hide_on = 1;
    hidden_n = 1;
    assert_int_equal(nc_open("raster.nc", NC_WRITE, &ncid), NC_NOERR);
    assert_int_equal(count("hide_begin"), 0);
    assert_int_equal(count("raster_attach"), 1);
    assert_int_equal(last("raster_attach")->i[0], 1);
    close_raster(ncid);
}

int main(void)
{
    /* the shim's settings come from the environment: none here */
    const char *const settings[] = {"RASTER_MASK", "RASTER_NAMES",
                                    "RASTER_VARS", "RASTER_CHUNK",
                                    "RASTER_WEIGHTS"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        unsetenv(settings[i]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_plain_file_passes_through, setup),
        cmocka_unit_test_setup(test_netcdf4_without_raster_vars, setup),
        cmocka_unit_test_setup(test_view_open, setup),
        cmocka_unit_test_setup(test_errors_propagate, setup),
        cmocka_unit_test_setup(test_filter_hidden, setup),
        cmocka_unit_test_setup(test_note_hidden, setup),
        cmocka_unit_test_setup(test_copy_att, setup),
        cmocka_unit_test_setup(test_raster_variable_data, setup),
        cmocka_unit_test_setup(test_groups_and_dims_hidden, setup),
        cmocka_unit_test_setup(test_chunk_spec, setup),
        cmocka_unit_test_setup(test_data_call_adopts_all, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
