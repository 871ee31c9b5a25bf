/*
 * mask.c - region masks: loading a 2-D integer (or integral float) variable
 * from a netCDF file, and region names from its CF flag attributes.
 */
#include <fcntl.h>
#include <math.h>
#include <netcdf.h>
#include <string.h>
#include <ctype.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "mask.h"

/* Cells converted per netCDF read: bounds the temporary double buffer. */
#define LOAD_BLOCK_CELLS ((size_t)1 << 20)
/* Masks from this size on get transparent-huge-page advice. */
#define HUGE_ADVICE_BYTES ((size_t)8 << 20)

void raster_mask_free(raster_mask *mask)
{
    if (!mask)
        return;
    for (size_t i = 0; i < mask->nnames; i++)
        raster_free(mask->names[i]);
    raster_free(mask->names);
    raster_free(mask->name_ids);
    raster_free(mask->values);
    if (mask->has_lock)
        pthread_mutex_destroy(&mask->lock);
    raster_free(mask);
}

static int new_mask(size_t ny, size_t nx, raster_mask **out)
{
    size_t cells;
    RETURN_ERROR_IF(ny == 0 || nx == 0, RASTER_EMASK, "mask is empty "
                    "(%zu x %zu)", ny, nx);
    RETURN_ERROR_IF(raster_mul_overflows(ny, nx, &cells) ||
                    cells > SIZE_MAX / sizeof(int32_t),
                    RASTER_EOVERFLOW, "mask %zu x %zu is too large", ny, nx);
    raster_mask *m = raster_calloc(1, sizeof *m);
    if (m)
        m->values = raster_malloc(cells * sizeof(int32_t));
    if (m && m->values && cells * sizeof(int32_t) >= HUGE_ADVICE_BYTES) {
        /* a large mask is written once, front to back: 2 MiB pages cut
         * its page faults (most of the cost of loading it) 500-fold.
         * Only advice: failure changes nothing. */
        uintptr_t a = ((uintptr_t)m->values + 4095) & ~(uintptr_t)4095;
        uintptr_t e = ((uintptr_t)m->values + cells * sizeof(int32_t)) &
                      ~(uintptr_t)4095;
        if (e > a)
            (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
    }
    if (!m || !m->values) {
        raster_mask_free(m);
        return raster_fail(RASTER_ENOMEM, "out of memory for a %zu x %zu "
                           "mask", ny, nx);
    }
    m->ny = ny;
    m->nx = nx;
    *out = m;
    return RASTER_OK;
}

int raster_mask_wrap(const int32_t *values, size_t ny, size_t nx,
                     raster_mask **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!values, RASTER_EINVAL, "mask values are NULL");
    RETURN_ERROR_IF(ny == 0 || nx == 0, RASTER_EINVAL,
                    "empty mask %zu x %zu", ny, nx);
    int rc = new_mask(ny, nx, out);
    if (rc)
        return rc;
    memcpy((*out)->values, values, ny * nx * sizeof(int32_t));
    return RASTER_OK;
}

static int nc_fail(int status, const char *what, const char *path)
{
    int code = status == ENOENT ? RASTER_ENOTFOUND : RASTER_ENETCDF;
    return raster_fail(code, "%s %s: %s", what, path, nc_strerror(status));
}

/* Reads the variable in row blocks as double and checks each value is an
 * integer in int32 range, so every netCDF numeric type takes one path. */
static int load_values(int ncid, int varid, const char *var, raster_mask *m)
{
    size_t rows = LOAD_BLOCK_CELLS / m->nx ? LOAD_BLOCK_CELLS / m->nx : 1;
    if (rows > m->ny)
        rows = m->ny;
    double *buf = raster_reallocarray(NULL, rows * m->nx, sizeof *buf);
    RETURN_ERROR_IF(!buf, RASTER_ENOMEM, "out of memory reading mask %s", var);
    int rc = RASTER_OK;
    for (size_t y0 = 0; y0 < m->ny && rc == RASTER_OK; y0 += rows) {
        size_t n = y0 + rows <= m->ny ? rows : m->ny - y0;
        size_t start[2] = {y0, 0}, count[2] = {n, m->nx};
        int st = nc_get_vara_double(ncid, varid, start, count, buf);
        if (st != NC_NOERR) {
            rc = raster_fail(RASTER_ENETCDF, "reading mask %s: %s", var,
                             nc_strerror(st));
            break;
        }
        int32_t *dst = m->values + y0 * m->nx;
        for (size_t i = 0; i < n * m->nx; i++) {
            double v = buf[i];
            if (!(v >= INT32_MIN && v <= INT32_MAX) || v != floor(v)) {
                rc = raster_fail(RASTER_EMASK, "mask %s: value %g at (%zu, "
                                 "%zu) is not an int32 region id", var, v,
                                 y0 + i / m->nx, i % m->nx);
                break;
            }
            dst[i] = (int32_t)v;
        }
    }
    raster_free(buf);
    return rc;
}

/* An integer mask of at most 32 bits needs no check: netCDF converts it
 * exactly (raster's own stored masks are of the narrowest such type). */
static int load_ints(int ncid, int varid, const char *var, nc_type type,
                     raster_mask *m)
{
    int st;
    if (type == NC_INT) {
        st = nc_get_var_int(ncid, varid, m->values);
        RETURN_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, "reading mask %s: %s",
                        var, nc_strerror(st));
        return RASTER_OK;
    }
    /* narrower types: read raw row blocks and widen here, several times
     * faster than netCDF's own conversion */
    size_t rows = LOAD_BLOCK_CELLS / m->nx ? LOAD_BLOCK_CELLS / m->nx : 1;
    if (rows > m->ny)
        rows = m->ny;
    size_t width = type == NC_SHORT || type == NC_USHORT ? 2 : 1;
    unsigned char *buf = raster_reallocarray(NULL, rows * m->nx, width);
    RETURN_ERROR_IF(!buf, RASTER_ENOMEM, "out of memory reading mask %s", var);
    for (size_t y0 = 0; y0 < m->ny; y0 += rows) {
        size_t n = y0 + rows <= m->ny ? rows : m->ny - y0;
        size_t start[2] = {y0, 0}, count[2] = {n, m->nx};
        if ((st = nc_get_vara(ncid, varid, start, count, buf)) != NC_NOERR) {
            raster_free(buf);
            return raster_fail(RASTER_ENETCDF, "reading mask %s: %s", var,
                               nc_strerror(st));
        }
        int32_t *dst = m->values + y0 * m->nx;
        size_t k = n * m->nx;
        switch (type) {
        case NC_BYTE:
            for (size_t i = 0; i < k; i++)
                dst[i] = ((const signed char *)buf)[i];
            break;
        case NC_UBYTE:
            for (size_t i = 0; i < k; i++)
                dst[i] = buf[i];
            break;
        case NC_SHORT:
            for (size_t i = 0; i < k; i++)
                dst[i] = ((const int16_t *)(const void *)buf)[i];
            break;
        default: /* NC_USHORT */
            for (size_t i = 0; i < k; i++)
                dst[i] = ((const uint16_t *)(const void *)buf)[i];
        }
    }
    raster_free(buf);
    return RASTER_OK;
}

/* Region names from CF flag_values (nvals of them) and flag_meanings (text,
 * NUL-terminated, split at blanks; it is modified). A count or a value that
 * does not fit leaves the mask unnamed. */
static int set_names(raster_mask *m, const long long *vals, size_t nvals,
                     char *text)
{
    m->name_ids = raster_reallocarray(NULL, nvals, sizeof *m->name_ids);
    m->names = raster_calloc(nvals, sizeof *m->names);
    RETURN_ERROR_IF(!m->name_ids || !m->names, RASTER_ENOMEM,
                    "out of memory reading region names");
    char *save = NULL;
    size_t n = 0;
    for (char *tok = strtok_r(text, " \t\n", &save); tok;
         tok = strtok_r(NULL, " \t\n", &save)) {
        if (n == nvals) {
            n++; /* more meanings than values: ignore the names */
            break;
        }
        if (vals[n] < INT32_MIN || vals[n] > INT32_MAX)
            break;
        m->name_ids[n] = (int32_t)vals[n];
        m->names[n] = raster_strdup(tok);
        if (!m->names[n]) {
            m->nnames = n;
            return raster_fail(RASTER_ENOMEM, "out of memory reading names");
        }
        n++;
    }
    if (n == nvals) {
        m->nnames = n;
    } else {
        for (size_t i = 0; i < n && i < nvals; i++)
            raster_free(m->names[i]);
        m->nnames = 0;
    }
    return RASTER_OK;
}

/* Region names from CF flag_values / flag_meanings; absent or inconsistent
 * attributes simply leave the mask unnamed. */
static int load_names(int ncid, int varid, raster_mask *m)
{
    size_t nvals, nchars;
    nc_type type;
    if (nc_inq_att(ncid, varid, "flag_values", &type, &nvals) != NC_NOERR ||
        nc_inq_attlen(ncid, varid, "flag_meanings", &nchars) != NC_NOERR ||
        nvals == 0 || type == NC_CHAR || type == NC_STRING)
        return RASTER_OK;
    nc_type mtype;
    if (nc_inq_atttype(ncid, varid, "flag_meanings", &mtype) != NC_NOERR ||
        mtype != NC_CHAR)
        return RASTER_OK;

    int rc = RASTER_OK;
    long long *vals = raster_reallocarray(NULL, nvals, sizeof *vals);
    char *text = raster_malloc(nchars + 1);
    if (!vals || !text)
        rc = raster_fail(RASTER_ENOMEM, "out of memory reading region names");
    else if (nc_get_att_longlong(ncid, varid, "flag_values", vals) ==
                 NC_NOERR &&
             nc_get_att_text(ncid, varid, "flag_meanings", text) ==
                 NC_NOERR) {
        text[nchars] = '\0';
        rc = set_names(m, vals, nvals, text);
    }
    raster_free(vals);
    raster_free(text);
    return rc;
}

int mask_read_ncid(int ncid, int varid, const char *label, raster_mask **out)
{
    int ndims, dimids[NC_MAX_VAR_DIMS], st;
    nc_type type;
    char var[NC_MAX_NAME + 1];
    *out = NULL;
    if ((st = nc_inq_var(ncid, varid, var, &type, &ndims, dimids, NULL)) !=
        NC_NOERR)
        return nc_fail(st, "describing mask variable in", label);
    RETURN_ERROR_IF(ndims != 2, RASTER_EMASK, "mask %s in %s has %d "
                    "dimensions, not 2", var, label, ndims);
    RETURN_ERROR_IF(type == NC_CHAR || type == NC_STRING || type > NC_STRING,
                    RASTER_EMASK, "mask %s in %s is not numeric", var, label);
    size_t dims[2];
    for (int i = 0; i < 2; i++)
        if ((st = nc_inq_dimlen(ncid, dimids[i], &dims[i])) != NC_NOERR)
            return nc_fail(st, "reading mask dimensions in", label);
    raster_mask *m = NULL;
    int rc = new_mask(dims[0], dims[1], &m);
    if (rc == RASTER_OK)
        rc = type == NC_INT || type == NC_SHORT || type == NC_BYTE ||
                     type == NC_USHORT || type == NC_UBYTE
                 ? load_ints(ncid, varid, var, type, m)
                 : load_values(ncid, varid, var, m);
    if (rc == RASTER_OK)
        rc = load_names(ncid, varid, m);
    if (rc) {
        raster_mask_free(m);
        return rc;
    }
    *out = m;
    return RASTER_OK;
}

int mask_describe_ncid(int ncid, int varid, const char *label,
                       raster_mask **out)
{
    int ndims, dimids[NC_MAX_VAR_DIMS], st;
    nc_type type;
    *out = NULL;
    if ((st = nc_inq_var(ncid, varid, NULL, &type, &ndims, dimids, NULL)) !=
        NC_NOERR)
        return nc_fail(st, "describing the stored mask of", label);
    int stored = 0;
    for (size_t i = 0; i < MASK_STORED_NTYPES; i++)
        stored |= type == mask_stored_types[i];
    RETURN_ERROR_IF(ndims != 2 || !stored, RASTER_EFORMAT,
                    "%s: the stored mask is not a 2-D integer variable",
                    label);
    size_t dims[2];
    for (int i = 0; i < 2; i++)
        if ((st = nc_inq_dimlen(ncid, dimids[i], &dims[i])) != NC_NOERR)
            return nc_fail(st, "reading mask dimensions of", label);
    raster_mask *m;
    int rc = mask_describe(dims[0], dims[1], NULL, 0, NULL, &m);
    if (rc == RASTER_OK && (rc = load_names(ncid, varid, m)) != RASTER_OK)
        raster_mask_free(m);
    if (rc)
        return rc;
    mask_bind_source(m, ncid, varid);
    *out = m;
    return RASTER_OK;
}

const int mask_stored_types[MASK_STORED_NTYPES] = {NC_BYTE, NC_UBYTE,
                                                   NC_SHORT, NC_USHORT,
                                                   NC_INT};

int mask_describe(size_t ny, size_t nx, const long long *vals, size_t nvals,
                  char *meanings, raster_mask **out)
{
    *out = NULL;
    size_t cells;
    RETURN_ERROR_IF(raster_mul_overflows(ny, nx, &cells) ||
                    cells > SIZE_MAX / sizeof(int32_t), RASTER_EFORMAT,
                    "stored mask too large");
    raster_mask *m = raster_calloc(1, sizeof *m);
    RETURN_ERROR_IF(!m, RASTER_ENOMEM, "out of memory describing a mask");
    m->ny = ny;
    m->nx = nx;
    int rc = nvals > 0 && meanings ? set_names(m, vals, nvals, meanings)
                                   : RASTER_OK;
    if (rc) {
        raster_mask_free(m);
        return rc;
    }
    mask_drop_values(m, -1, -1);
    *out = m;
    return RASTER_OK;
}

static const char *file_kind(mode_t mode)
{
    return S_ISFIFO(mode)  ? "a FIFO"
           : S_ISDIR(mode) ? "a directory"
           : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Checks that `path` names a regular file before netCDF opens it: reading a
 * FIFO would block the program, a device or directory would mislead it.
 * The type is known from stat() without opening (an open() of a FIFO can
 * block, or wake its writer); then the file is opened without blocking and
 * held in *fd, its identity in *held. A name stat() cannot see (missing,
 * no permission, a URL) is left to nc_open, which says why (*fd -1). */
static int mask_file_hold(const char *path, int *fd, struct stat *held)
{
    struct stat st;
    *fd = -1;
    if (stat(path, &st) != 0)
        return RASTER_OK;
    if (!S_ISREG(st.st_mode))
        return raster_fail(RASTER_EMASK, "%s is %s, not a mask file", path,
                           file_kind(st.st_mode));
    int h = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (h < 0)
        return RASTER_OK;
    if (fstat(h, held) != 0 || !S_ISREG(held->st_mode) ||
        held->st_dev != st.st_dev || held->st_ino != st.st_ino) {
        close(h);
        return raster_fail(RASTER_EMASK, "%s was replaced while it was "
                           "opened", path);
    }
    *fd = h;
    return RASTER_OK;
}

/* 1 when the file held in fd is unchanged and `path` still names it. */
static int mask_file_unchanged(const char *path, int fd,
                               const struct stat *held)
{
    struct stat now, named;
    return fstat(fd, &now) == 0 && stat(path, &named) == 0 &&
           named.st_dev == held->st_dev && named.st_ino == held->st_ino &&
           now.st_size == held->st_size &&
           now.st_mtim.tv_sec == held->st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == held->st_mtim.tv_nsec;
}

int raster_mask_load(const char *path, const char *var, raster_mask **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!path || !var, RASTER_EINVAL, "NULL file or variable");

    /* netCDF opens by name: held open here, the file checked cannot be
     * swapped for another before netCDF's open without it being seen */
    struct stat held;
    int fd = -1;
    int rc = mask_file_hold(path, &fd, &held);
    if (rc != RASTER_OK)
        return rc;
    int ncid, varid, st;
    st = nc_open(path, NC_NOWRITE, &ncid);
    if (st != NC_NOERR) {
        if (fd >= 0)
            close(fd);
        return nc_fail(st, "opening mask file", path);
    }
    raster_mask *m = NULL;
    if (nc_inq_varid(ncid, var, &varid) != NC_NOERR)
        rc = raster_fail(RASTER_ENOTFOUND, "no variable '%s' in %s", var,
                         path);
    else
        rc = mask_read_ncid(ncid, varid, path, &m);
    st = raster_nc_close(ncid);
    if (rc == RASTER_OK && st != NC_NOERR)
        rc = nc_fail(st, "closing", path);
    if (fd >= 0) {
        if (rc == RASTER_OK && !mask_file_unchanged(path, fd, &held))
            rc = raster_fail(RASTER_EMASK, "%s changed while it was read",
                             path);
        close(fd);
    }
    if (rc) {
        raster_mask_free(m);
        return rc;
    }
    *out = m;
    return RASTER_OK;
}

void raster_mask_shape(const raster_mask *mask, size_t *ny, size_t *nx)
{
    if (ny) *ny = mask->ny;
    if (nx) *nx = mask->nx;
}

void mask_drop_values(raster_mask *m, int grp, int var)
{
    if (!m->has_lock) {
        if (pthread_mutex_init(&m->lock, NULL) != 0)
            return; /* keep the values: correct, only larger */
        m->has_lock = 1;
    }
    m->src_grp = grp;
    m->src_var = var;
    raster_free(m->values);
    m->values = NULL;
}

void mask_bind_source(raster_mask *m, int grp, int var)
{
    if (!m->has_lock)
        return;
    pthread_mutex_lock(&m->lock);
    m->src_grp = grp;
    m->src_var = var;
    pthread_mutex_unlock(&m->lock);
}

const int32_t *raster_mask_values(const raster_mask *mask)
{
    if (!mask || !mask->has_lock)
        return mask ? mask->values : NULL;
    /* a dropped mask: read back once, under the mask's own lock */
    raster_mask *m = (raster_mask *)mask;
    pthread_mutex_lock(&m->lock);
    if (!m->values) {
        int32_t *vals = raster_reallocarray(NULL, m->ny * m->nx,
                                            sizeof *vals);
        if (vals && nc_get_var_int(m->src_grp, m->src_var, vals) == NC_NOERR)
            m->values = vals;
        else
            raster_free(vals);
    }
    pthread_mutex_unlock(&m->lock);
    return m->values;
}

const char *raster_mask_region_name(const raster_mask *mask, int32_t id)
{
    for (size_t i = 0; mask && i < mask->nnames; i++)
        if (mask->name_ids[i] == id)
            return mask->names[i];
    return NULL;
}

/* Case-insensitive equality treating '_' and ' ' alike. */
static int same_name(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = *a == '_' ? ' ' : tolower((unsigned char)*a);
        int cb = *b == '_' ? ' ' : tolower((unsigned char)*b);
        if (ca != cb)
            return 0;
        if (ca == '\0')
            return 1;
    }
}

int raster_mask_region_by_name(const raster_mask *mask, const char *name,
                               int32_t *id)
{
    RETURN_ERROR_IF(!mask || !name || !id, RASTER_EINVAL, "NULL argument");
    for (size_t i = 0; i < mask->nnames; i++) {
        if (same_name(mask->names[i], name)) {
            *id = mask->name_ids[i];
            return RASTER_OK;
        }
    }
    return raster_fail(RASTER_ENOTFOUND, "no region named '%s' in the mask",
                       name);
}

int mask_clone(const raster_mask *src, raster_mask **out)
{
    int rc = raster_mask_wrap(src->values, src->ny, src->nx, out);
    if (rc || src->nnames == 0)
        return rc;
    raster_mask *m = *out;
    m->name_ids = raster_reallocarray(NULL, src->nnames, sizeof *m->name_ids);
    m->names = raster_calloc(src->nnames, sizeof *m->names);
    if (!m->name_ids || !m->names)
        goto oom;
    for (; m->nnames < src->nnames; m->nnames++) {
        m->name_ids[m->nnames] = src->name_ids[m->nnames];
        m->names[m->nnames] = raster_strdup(src->names[m->nnames]);
        if (!m->names[m->nnames])
            goto oom;
    }
    return RASTER_OK;
oom:
    raster_mask_free(m);
    *out = NULL;
    return raster_fail(RASTER_ENOMEM, "out of memory copying a mask");
}
