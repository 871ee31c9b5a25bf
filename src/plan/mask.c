/*
 * mask.c - region masks: loading a 2-D integer (or integral float) variable
 * from a netCDF file (its _FillValue, missing_value and NaN cells outside
 * every region, id 0), and region names from its CF flag attributes or
 * from a names table (CSV).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <netcdf.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "mask.h"
#include "unfilter.h"

/* Cells converted per netCDF read: bounds the temporary double buffer. */
#define LOAD_BLOCK_CELLS ((size_t)1 << 20)
/* Masks from this size on get transparent-huge-page advice. */
#define HUGE_ADVICE_BYTES ((size_t)8 << 20)
/* Most missing values (_FillValue and missing_value together) honoured. */
#define MAX_MISSING 16

static void free_names(raster_mask *m)
{
    for (size_t i = 0; i < m->nnames; i++) {
        raster_free(m->names[i]);
        if (m->abbrevs)
            raster_free(m->abbrevs[i]);
    }
    raster_free(m->names);
    raster_free(m->abbrevs);
    raster_free(m->name_ids);
    m->names = m->abbrevs = NULL;
    m->name_ids = NULL;
    m->nnames = 0;
}

void raster_mask_free(raster_mask *mask)
{
    if (!mask)
        return;
    free_names(mask);
    raster_free(mask->values);
    if (mask->has_lock)
        pthread_mutex_destroy(&mask->lock);
    raster_free(mask);
}

static int new_mask(size_t ny, size_t nx, raster_mask **out)
{
    size_t cells;
    if (ny == 0 || nx == 0)
        return raster_fail(RASTER_EMASK, "mask is empty (%zu x %zu)", ny, nx);
    if (raster_mul_overflows(ny, nx, &cells) ||
        cells > SIZE_MAX / sizeof(int32_t))
        return raster_fail(RASTER_EOVERFLOW, "mask %zu x %zu is too large", ny,
                           nx);
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
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!values)
        return raster_fail(RASTER_EINVAL, "mask values are NULL");
    if (ny == 0 || nx == 0)
        return raster_fail(RASTER_EINVAL, "empty mask %zu x %zu", ny, nx);
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

/* The values a mask variable declares as no data: its _FillValue and its
 * missing_value (a scalar or a list), as doubles; for a float variable,
 * rounded to float as its cells are. A text one cannot be compared with
 * the cells: refused, since a no-data value ignored would become a
 * region. */
static int read_missing(int ncid, int varid, nc_type type, const char *var,
                        const char *label, double *miss, size_t *nmiss)
{
    static const char *const atts[2] = {"_FillValue", "missing_value"};
    *nmiss = 0;
    for (int a = 0; a < 2; a++) {
        nc_type t;
        size_t len;
        int st = nc_inq_att(ncid, varid, atts[a], &t, &len);
        if (st == NC_ENOTATT)
            continue;
        if (st != NC_NOERR)
            return raster_fail(RASTER_ENETCDF, "mask %s in %s: reading %s: "
                               "%s", var, label, atts[a], nc_strerror(st));
        if (t == NC_CHAR || t >= NC_STRING)
            return raster_fail(RASTER_EMASK, "mask %s in %s: %s is not "
                               "numeric", var, label, atts[a]);
        if (len > MAX_MISSING - *nmiss)
            return raster_fail(RASTER_EMASK, "mask %s in %s: %s has %zu "
                               "values, more than the %d no-data values "
                               "raster takes", var, label, atts[a], len,
                               MAX_MISSING);
        st = nc_get_att_double(ncid, varid, atts[a], miss + *nmiss);
        if (st != NC_NOERR)
            return raster_fail(RASTER_ENETCDF, "mask %s in %s: reading %s: "
                               "%s", var, label, atts[a], nc_strerror(st));
        *nmiss += len;
    }
    if (type == NC_FLOAT)
        for (size_t k = 0; k < *nmiss; k++)
            miss[k] = (double)(float)miss[k];
    return RASTER_OK;
}

/* Reads the variable in row blocks as double and checks each value is an
 * integer in int32 range, so every netCDF numeric type takes one path.
 * NaN and the no-data values miss[0..nmiss) become 0 (outside). */
static int load_values(int ncid, int varid, const char *var,
                       const char *label, const double *miss, size_t nmiss,
                       raster_mask *m)
{
    size_t rows = LOAD_BLOCK_CELLS / m->nx ? LOAD_BLOCK_CELLS / m->nx : 1;
    if (rows > m->ny)
        rows = m->ny;
    double *buf = raster_reallocarray(NULL, rows * m->nx, sizeof *buf);
    if (!buf)
        return raster_fail(RASTER_ENOMEM, "out of memory reading mask %s",
                           var);
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
            int missing = isnan(v);
            for (size_t k = 0; k < nmiss && !missing; k++)
                missing = v == miss[k];
            if (missing) {
                dst[i] = 0;
                continue;
            }
            if (!(v >= INT32_MIN && v <= INT32_MAX) || v != floor(v)) {
                rc = raster_fail(RASTER_EMASK, "mask %s in %s: value %.15g "
                                 "at (%zu, %zu) is not an int32 region id: "
                                 "%s", var, label, v, y0 + i / m->nx,
                                 i % m->nx, v == floor(v)
                                     ? "outside the int32 range"
                                     : "not integral");
                break;
            }
            dst[i] = (int32_t)v;
        }
    }
    raster_free(buf);
    return rc;
}

/* A set of int32 ids: open addressing, 0 kept aside so that an empty slot
 * can be 0. */
typedef struct id_set {
    uint32_t *slots;
    size_t cap, used; /* used: slots taken */
    size_t count;     /* ids in the set, 0 included */
    int has_zero;
} id_set;

static size_t id_slot(uint32_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* 0, or -1 when out of memory. */
static int id_set_add(id_set *s, int32_t id)
{
    uint32_t key = (uint32_t)id;
    if (key == 0) {
        s->count += !s->has_zero;
        s->has_zero = 1;
        return 0;
    }
    if ((s->used + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint32_t *slots = raster_calloc(cap, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i])
                continue;
            size_t h = id_slot(s->slots[i], cap);
            while (slots[h])
                h = (h + 1) & (cap - 1);
            slots[h] = s->slots[i];
        }
        raster_free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t h = id_slot(key, s->cap);
    while (s->slots[h]) {
        if (s->slots[h] == key)
            return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = key;
    s->used++;
    s->count++;
    return 0;
}

/* Maps the no-data ids miss[0..nmiss) to 0 and counts the distinct ids,
 * refusing more than RASTER_MASK_MAX_IDS (no mask has that many regions;
 * such a file is a field, not a mask). Runs of one value, the common
 * case, cost one comparison a cell. */
static int finish_ids(raster_mask *m, const char *var, const char *label,
                      const int32_t *miss, size_t nmiss)
{
    id_set set = {0};
    int32_t *v = m->values, prev_in = 0, prev_out = 0;
    size_t cells = m->ny * m->nx;
    int rc = RASTER_OK;
    for (size_t i = 0; i < cells; i++) {
        int32_t x = v[i];
        if (i > 0 && x == prev_in) {
            v[i] = prev_out;
            continue;
        }
        int32_t out = x;
        for (size_t k = 0; k < nmiss; k++)
            if (x == miss[k])
                out = 0;
        v[i] = out;
        prev_in = x;
        prev_out = out;
        if (id_set_add(&set, out) != 0) {
            rc = raster_fail(RASTER_ENOMEM, "out of memory counting the "
                             "region ids of mask %s", var);
            break;
        }
        if (set.count > RASTER_MASK_MAX_IDS) {
            rc = raster_fail(RASTER_EMASK, "mask %s in %s has more than %d "
                             "distinct region ids (the %dth, %d, at (%zu, "
                             "%zu)): not a region mask", var, label,
                             RASTER_MASK_MAX_IDS, RASTER_MASK_MAX_IDS + 1,
                             (int)out, i / m->nx, i % m->nx);
            break;
        }
    }
    raster_free(set.slots);
    return rc;
}

static atomic_size_t direct_loads;

size_t mask_direct_loads(void) { return atomic_load(&direct_loads); }

/* Copies chunk `out` (ck[0] x ck[1] int32 values at cy, cx) into m's
 * values, the part inside the grid. */
static void put_chunk(raster_mask *m, const unsigned char *out,
                      const hsize_t *ck, size_t cy, size_t cx)
{
    size_t h = m->ny - cy < ck[0] ? m->ny - cy : (size_t)ck[0];
    size_t w = m->nx - cx < ck[1] ? m->nx - cx : (size_t)ck[1];
    for (size_t r = 0; r < h; r++)
        memcpy(m->values + (cy + r) * m->nx + cx,
               out + r * (size_t)ck[1] * sizeof *m->values,
               w * sizeof *m->values);
}

/* An int mask file deflated (and shuffled), as mask files usually are,
 * its chunks read with pread where HDF5 says they are and inflated by
 * unfilter.c (as inflate.c reads deflated stores): the
 * bundled 2400 x 3600 POP mask (deflate level 9) took 0.10-0.18 s through
 * netCDF, 60 % of it in zlib, and each shim process that writes loads its
 * RASTER_MASK once. 1 when m->values holds the mask; 0 (nothing to undo,
 * another type or layout, a chunk never written, any HDF5 failure): read
 * it the usual way. */
static int load_ints_direct(int ncid, int varid, const char *path,
                            raster_mask *m)
{
    char name[4096], var[NC_MAX_NAME + 1];
    size_t len;
    if (!path || nc_inq_varname(ncid, varid, var) != NC_NOERR ||
        nc_inq_grpname_full(ncid, &len, NULL) != NC_NOERR ||
        len + strlen(var) + 2 > sizeof name ||
        nc_inq_grpname_full(ncid, &len, name) != NC_NOERR)
        return 0;
    if (len > 1) /* the root group's full name is "/" */
        strcat(name, "/");
    strcat(name, var);
    H5E_auto2_t efunc;
    void *edata;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a failure means "not so" */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1, did = -1, type = -1,
          space = -1, dcpl = -1;
    /* the close degree of netCDF's open of the same file (fileio.c) */
    if (fapl >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_WEAK) >= 0)
        fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fid < 0 && fapl >= 0 &&
        H5Pset_fclose_degree(fapl, H5F_CLOSE_SEMI) >= 0)
        fid = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fid >= 0)
        did = H5Dopen2(fid, name, H5P_DEFAULT);
    if (did >= 0) {
        type = H5Dget_type(did);
        space = H5Dget_space(did);
        dcpl = H5Dget_create_plist(did);
    }
    hsize_t dims[2], ck[2] = {0, 0};
    unsigned char filt[4];
    int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1, ok = 0, deflated = 0;
    if (type >= 0 && space >= 0 && nf >= 1 && nf <= 4 &&
        H5Tequal(type, H5T_NATIVE_INT32) > 0 &&
        H5Sget_simple_extent_ndims(space) == 2 &&
        H5Sget_simple_extent_dims(space, dims, NULL) == 2 &&
        dims[0] == m->ny && dims[1] == m->nx &&
        H5Pget_layout(dcpl) == H5D_CHUNKED &&
        H5Pget_chunk(dcpl, 2, ck) == 2 && ck[0] > 0 && ck[1] > 0) {
        ok = 1;
        for (int i = 0; i < nf && ok; i++) {
            unsigned flags;
            size_t nelem = 0;
            H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags,
                                             &nelem, NULL, 0, NULL, NULL);
            ok = id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE;
            deflated |= id == H5Z_FILTER_DEFLATE;
            filt[i] = (unsigned char)id;
        }
    }
    /* a chunk of at most 64 MiB, its stored bytes at most what deflate
     * can make of it (a hostile file's sizes would have us allocate them) */
    size_t cbytes = (size_t)ck[0] * (size_t)ck[1] * sizeof *m->values;
    ok = ok && deflated && ck[0] <= (1u << 26) && ck[1] <= (1u << 26) &&
         cbytes <= ((size_t)64 << 20);
    unfilter *u = ok ? unfilter_new() : NULL;
    int fd = u ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    ok = u != NULL && fd >= 0;
    for (size_t cy = 0; ok && cy < m->ny; cy += ck[0])
        for (size_t cx = 0; ok && cx < m->nx; cx += ck[1]) {
            hsize_t off[2] = {cy, cx}, csize = 0;
            haddr_t addr = HADDR_UNDEF;
            unsigned fmask = 1;
            unsigned char *in = NULL;
            const unsigned char *out;
            ok = H5Dget_chunk_info_by_coord(did, off, &fmask, &addr,
                                            &csize) >= 0 &&
                 fmask == 0 && /* no filter skipped for this chunk */
                 addr != HADDR_UNDEF && csize > 0 &&
                 csize <= cbytes + cbytes / 2 + 4096 &&
                 (in = unfilter_input(u, (size_t)csize)) != NULL;
            for (size_t got = 0; ok && got < csize;) {
                ssize_t r = pread(fd, in + got, (size_t)csize - got,
                                  (off_t)(addr + got));
                if (r < 0 && errno == EINTR)
                    continue;
                ok = r > 0;
                got += ok ? (size_t)r : 0;
            }
            ok = ok && unfilter_chunk(u, filt, nf, sizeof *m->values, cbytes,
                                      (size_t)csize, var, &out) == RASTER_OK;
            if (ok)
                put_chunk(m, out, ck, cy, cx);
        }
    if (fd >= 0)
        close(fd);
    unfilter_free(u);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (did >= 0)
        H5Dclose(did);
    if (fid >= 0)
        H5Fclose(fid);
    if (fapl >= 0)
        H5Pclose(fapl);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    if (ok)
        atomic_fetch_add(&direct_loads, 1);
    return ok;
}

/* An integer mask of at most 32 bits needs no check: netCDF converts it
 * exactly (raster's own stored masks are of the narrowest such type). */
static int load_ints(int ncid, int varid, const char *var, nc_type type,
                     const char *path, raster_mask *m)
{
    int st;
    if (type == NC_INT && load_ints_direct(ncid, varid, path, m))
        return RASTER_OK;
    if (type == NC_INT) {
        st = nc_get_var_int(ncid, varid, m->values);
        if (st != NC_NOERR)
            return raster_fail(RASTER_ENETCDF, "reading mask %s: %s", var,
                               nc_strerror(st));
        return RASTER_OK;
    }
    /* narrower types: read raw row blocks and widen here, several times
     * faster than netCDF's own conversion */
    size_t rows = LOAD_BLOCK_CELLS / m->nx ? LOAD_BLOCK_CELLS / m->nx : 1;
    if (rows > m->ny)
        rows = m->ny;
    size_t width = type == NC_SHORT || type == NC_USHORT ? 2 : 1;
    unsigned char *buf = raster_reallocarray(NULL, rows * m->nx, width);
    if (!buf)
        return raster_fail(RASTER_ENOMEM, "out of memory reading mask %s",
                           var);
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
    if (!m->name_ids || !m->names)
        return raster_fail(RASTER_ENOMEM,
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
    return mask_read_file(ncid, varid, label, NULL, out);
}

int mask_read_file(int ncid, int varid, const char *label, const char *path,
                   raster_mask **out)
{
    int ndims, dimids[NC_MAX_VAR_DIMS], st;
    nc_type type;
    char var[NC_MAX_NAME + 1];
    *out = NULL;
    if ((st = nc_inq_var(ncid, varid, var, &type, &ndims, dimids, NULL)) !=
        NC_NOERR)
        return nc_fail(st, "describing mask variable in", label);
    if (ndims != 2)
        return raster_fail(RASTER_EMASK,
                           "mask %s in %s has %d dimensions, not 2", var,
                           label, ndims);
    if (type == NC_CHAR || type == NC_STRING || type > NC_STRING)
        return raster_fail(RASTER_EMASK, "mask %s in %s is not numeric", var,
                           label);
    size_t dims[2];
    for (int i = 0; i < 2; i++)
        if ((st = nc_inq_dimlen(ncid, dimids[i], &dims[i])) != NC_NOERR)
            return nc_fail(st, "reading mask dimensions in", label);
    double miss[MAX_MISSING];
    size_t nmiss = 0;
    int rc = read_missing(ncid, varid, type, var, label, miss, &nmiss);
    if (rc)
        return rc;
    raster_mask *m = NULL;
    rc = new_mask(dims[0], dims[1], &m);
    int narrow = type == NC_INT || type == NC_SHORT || type == NC_BYTE ||
                 type == NC_USHORT || type == NC_UBYTE;
    if (rc == RASTER_OK && narrow) {
        /* read as they are; no-data values are then ids to map to 0 (one
         * outside int32 matches no cell) */
        int32_t imiss[MAX_MISSING];
        size_t ni = 0;
        for (size_t k = 0; k < nmiss; k++)
            if (miss[k] >= INT32_MIN && miss[k] <= INT32_MAX &&
                miss[k] == floor(miss[k]))
                imiss[ni++] = (int32_t)miss[k];
        rc = load_ints(ncid, varid, var, type, path, m);
        if (rc == RASTER_OK)
            rc = finish_ids(m, var, label, imiss, ni);
    } else if (rc == RASTER_OK) {
        rc = load_values(ncid, varid, var, label, miss, nmiss, m);
        if (rc == RASTER_OK)
            rc = finish_ids(m, var, label, NULL, 0);
    }
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
    if (ndims != 2 || !stored)
        return raster_fail(RASTER_EFORMAT,
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
    if (raster_mul_overflows(ny, nx, &cells) ||
        cells > SIZE_MAX / sizeof(int32_t))
        return raster_fail(RASTER_EFORMAT, "stored mask too large");
    raster_mask *m = raster_calloc(1, sizeof *m);
    if (!m)
        return raster_fail(RASTER_ENOMEM, "out of memory describing a mask");
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
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!path || !var)
        return raster_fail(RASTER_EINVAL, "NULL file or variable");

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
        rc = mask_read_file(ncid, varid, path, path, &m);
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

const char *raster_mask_region_abbrev(const raster_mask *mask, int32_t id)
{
    for (size_t i = 0; mask && mask->abbrevs && i < mask->nnames; i++)
        if (mask->name_ids[i] == id)
            return mask->abbrevs[i];
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
    if (!mask || !name || !id)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    /* a name two regions share (flag_meanings may repeat a word) names
     * neither: refused rather than resolved to the first */
    size_t found = SIZE_MAX;
    for (size_t i = 0; i < mask->nnames; i++) {
        if (!same_name(mask->names[i], name) &&
            !(mask->abbrevs && mask->abbrevs[i] &&
              same_name(mask->abbrevs[i], name)))
            continue;
        if (found != SIZE_MAX && mask->name_ids[found] != mask->name_ids[i])
            return raster_fail(RASTER_EINVAL, "region name '%s' is "
                               "ambiguous: regions %d and %d both have it; "
                               "give the id", name,
                               (int)mask->name_ids[found],
                               (int)mask->name_ids[i]);
        if (found == SIZE_MAX)
            found = i;
    }
    if (found == SIZE_MAX)
        return raster_fail(RASTER_ENOTFOUND, "no region named '%s' in the "
                           "mask", name);
    *id = mask->name_ids[found];
    return RASTER_OK;
}

/* ---- names table ------------------------------------------------------- */

/* Largest names table read (bytes): a table of 2^20 regions fits. */
#define NAMES_MAX_BYTES ((size_t)256 << 20)

/* One row of a names table. */
typedef struct name_row {
    int32_t id;
    char *name, *abbrev; /* abbrev NULL when none */
    size_t line;
} name_row;

/* A label of a row for duplicate detection: the text folded as same_name
 * compares it. */
typedef struct label_key {
    char *key;
    size_t row;
} label_key;

static int cmp_row_id(const void *a, const void *b)
{
    const name_row *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_label(const void *a, const void *b)
{
    const label_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

/* Whole decimal int32 (an optional sign, digits, nothing else). */
static int parse_id(const char *text, int32_t *out)
{
    const char *p = text + (*text == '-' || *text == '+');
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* Splits one line (NUL-terminated, modified in place) into at most
 * `max` fields: comma-separated, blanks around a field dropped, a field
 * in double quotes may hold commas, '#' and "" for a quote; '#' outside
 * quotes starts a comment. Returns the field count (0: a blank or comment
 * line), or -1 for an unterminated quote or junk after a closing quote;
 * more than `max` fields gives max + 1. */
static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (n == 0 && (*p == '\0' || *p == '#'))
            return 0;
        char *field = p, *w = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *w++ = *p++;
                }
            }
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ',' && *p != '#' && *p != '\0')
                return -1;
        } else {
            while (*p && *p != ',' && *p != '#')
                p++;
            w = p;
            while (w > field && (w[-1] == ' ' || w[-1] == '\t'))
                w--;
        }
        char stop = *p;
        *w = '\0';
        if (n == max)
            return max + 1;
        fields[n++] = field;
        if (stop != ',')
            return n;
        p++;
    }
}

static void free_rows(name_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        raster_free(rows[i].name);
        raster_free(rows[i].abbrev);
    }
    raster_free(rows);
}

/* Reads all of `path` into a NUL-terminated buffer. */
static int read_text(const char *path, char **out, size_t *len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return raster_fail(errno == ENOENT ? RASTER_ENOTFOUND : RASTER_EIO,
                           "names table %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = raster_malloc(cap + 1);
    int rc = buf ? RASTER_OK
                 : raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                               path);
    while (rc == RASTER_OK) {
        if (n == cap) {
            char *nb = cap < NAMES_MAX_BYTES ? raster_realloc(buf, 2 * cap + 1)
                                             : NULL;
            if (!nb) {
                rc = cap < NAMES_MAX_BYTES
                         ? raster_fail(RASTER_ENOMEM, "out of memory "
                                       "reading %s", path)
                         : raster_fail(RASTER_EINVAL, "names table %s is "
                                       "larger than %zu bytes", path,
                                       NAMES_MAX_BYTES);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = raster_fail(RASTER_EIO, "reading names table %s: %s",
                                 path, strerror(errno));
            break;
        }
    }
    if (fclose(f) != 0 && rc == RASTER_OK)
        rc = raster_fail(RASTER_EIO, "closing names table %s: %s", path,
                         strerror(errno));
    if (rc == RASTER_OK && memchr(buf, '\0', n))
        rc = raster_fail(RASTER_EINVAL, "names table %s is not text (it "
                         "holds a NUL byte)", path);
    if (rc) {
        raster_free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return RASTER_OK;
}

/* Parses the table's rows; a header line (a first row whose id is not a
 * number) is skipped. */
static int parse_rows(const char *path, char *text, name_row **out,
                      size_t *nout)
{
    size_t cap = 0, n = 0, line = 0;
    name_row *rows = NULL;
    int rc = RASTER_OK, seen_row = 0;
    char *p = text;
    if ((unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3; /* a UTF-8 byte-order mark, as spreadsheets write */
    while (*p && rc == RASTER_OK) {
        line++;
        char *eol = strchr(p, '\n');
        char *next = eol ? eol + 1 : p + strlen(p);
        if (eol)
            *eol = '\0';
        if (eol && eol > p && eol[-1] == '\r')
            eol[-1] = '\0';
        char *f[3];
        int nf = split_fields(p, f, 3);
        p = next;
        if (nf == 0)
            continue;
        int32_t id;
        if (nf > 0 && !seen_row && parse_id(f[0], &id) != 0) {
            seen_row = 1; /* the header */
            continue;
        }
        seen_row = 1;
        if (nf < 2 || nf > 3) {
            rc = raster_fail(RASTER_EINVAL, "names table %s line %zu: %s; "
                             "want id,name[,abbreviation]", path, line,
                             nf < 0 ? "an unterminated quote or text after "
                                      "a closing quote"
                                    : nf < 2 ? "one field" : "more than "
                                                             "three fields");
            break;
        }
        if (parse_id(f[0], &id) != 0) {
            rc = raster_fail(RASTER_EINVAL, "names table %s line %zu: id "
                             "'%s' is not a whole number in int32 range",
                             path, line, f[0]);
            break;
        }
        int32_t numeric;
        for (int k = 1; k < nf && rc == RASTER_OK; k++) {
            if (k == 1 && f[k][0] == '\0')
                rc = raster_fail(RASTER_EINVAL, "names table %s line %zu: "
                                 "region %d has an empty name", path, line,
                                 (int)id);
            else if (parse_id(f[k], &numeric) == 0)
                /* --region 12 means id 12: a name "12" could not be used */
                rc = raster_fail(RASTER_EINVAL, "names table %s line %zu: "
                                 "%s '%s' is a number, which --region "
                                 "would take for an id", path, line,
                                 k == 1 ? "name" : "abbreviation", f[k]);
        }
        if (rc)
            break;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            name_row *nr = raster_reallocarray(rows, nc, sizeof *nr);
            if (!nr) {
                rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                                 path);
                break;
            }
            rows = nr;
            cap = nc;
        }
        name_row *r = &rows[n];
        r->id = id;
        r->line = line;
        r->name = raster_strdup(f[1]);
        r->abbrev = nf == 3 && f[2][0] ? raster_strdup(f[2]) : NULL;
        n++;
        if (!r->name || (nf == 3 && f[2][0] && !r->abbrev))
            rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s",
                             path);
    }
    if (rc == RASTER_OK && n == 0)
        rc = raster_fail(RASTER_EINVAL, "names table %s names no region",
                         path);
    if (rc) {
        free_rows(rows, n);
        return rc;
    }
    *out = rows;
    *nout = n;
    return RASTER_OK;
}

/* Refuses an id given twice, and a name or abbreviation (compared as
 * --region compares them) that two regions share. Sorts `rows` by id. */
static int check_rows(const char *path, name_row *rows, size_t n)
{
    qsort(rows, n, sizeof *rows, cmp_row_id);
    for (size_t i = 1; i < n; i++)
        if (rows[i].id == rows[i - 1].id) {
            size_t a = rows[i - 1].line, b = rows[i].line;
            return raster_fail(RASTER_EINVAL, "names table %s: region id %d "
                               "is given twice (lines %zu and %zu)", path,
                               (int)rows[i].id, a < b ? a : b, a < b ? b : a);
        }
    size_t nk = 0;
    label_key *keys = raster_reallocarray(NULL, 2 * n, sizeof *keys);
    int rc = keys ? RASTER_OK
                  : raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                                path);
    for (size_t i = 0; i < n && rc == RASTER_OK; i++) {
        for (int k = 0; k < 2 && rc == RASTER_OK; k++) {
            const char *text = k ? rows[i].abbrev : rows[i].name;
            if (!text)
                continue;
            char *key = raster_strdup(text);
            if (!key) {
                rc = raster_fail(RASTER_ENOMEM, "out of memory checking %s",
                                 path);
                break;
            }
            for (char *c = key; *c; c++)
                *c = *c == '_' ? ' ' : (char)tolower((unsigned char)*c);
            keys[nk].key = key;
            keys[nk++].row = i;
        }
    }
    if (rc == RASTER_OK)
        qsort(keys, nk, sizeof *keys, cmp_label);
    for (size_t i = 1; i < nk && rc == RASTER_OK; i++) {
        const name_row *x = &rows[keys[i - 1].row], *y = &rows[keys[i].row];
        if (x != y && strcmp(keys[i - 1].key, keys[i].key) == 0) {
            const name_row *a = x->line < y->line ? x : y;
            const name_row *b = a == x ? y : x;
            rc = raster_fail(RASTER_EINVAL, "names table %s: regions %d "
                             "(line %zu) and %d (line %zu) share the name "
                             "'%s'", path, (int)a->id, a->line, (int)b->id,
                             b->line, keys[i].key);
        }
    }
    for (size_t i = 0; i < nk; i++)
        raster_free(keys[i].key);
    raster_free(keys);
    return rc;
}

int raster_mask_set_names_file(raster_mask *mask, const char *path)
{
    if (!mask || !path)
        return raster_fail(RASTER_EINVAL, "NULL mask or names table");
    char *text;
    size_t len;
    int rc = read_text(path, &text, &len);
    if (rc)
        return rc;
    name_row *rows = NULL;
    size_t n = 0;
    rc = parse_rows(path, text, &rows, &n);
    raster_free(text);
    if (rc == RASTER_OK)
        rc = check_rows(path, rows, n);
    int32_t *ids = NULL;
    char **names = NULL, **abbrevs = NULL;
    if (rc == RASTER_OK) {
        ids = raster_reallocarray(NULL, n, sizeof *ids);
        names = raster_reallocarray(NULL, n, sizeof *names);
        abbrevs = raster_reallocarray(NULL, n, sizeof *abbrevs);
        if (!ids || !names || !abbrevs)
            rc = raster_fail(RASTER_ENOMEM, "out of memory reading %s", path);
    }
    if (rc) {
        raster_free(ids);
        raster_free(names);
        raster_free(abbrevs);
        free_rows(rows, n);
        return rc;
    }
    /* the table replaces the file's names entirely: a mix of the two could
     * give one name to two regions */
    free_names(mask);
    for (size_t i = 0; i < n; i++) {
        ids[i] = rows[i].id;
        names[i] = rows[i].name;
        abbrevs[i] = rows[i].abbrev;
    }
    raster_free(rows);
    mask->name_ids = ids;
    mask->names = names;
    mask->abbrevs = abbrevs;
    mask->nnames = n;
    return RASTER_OK;
}

int mask_clone(const raster_mask *src, raster_mask **out)
{
    int rc = raster_mask_wrap(src->values, src->ny, src->nx, out);
    if (rc || src->nnames == 0)
        return rc;
    raster_mask *m = *out;
    size_t n = src->nnames;
    m->name_ids = raster_reallocarray(NULL, n, sizeof *m->name_ids);
    m->names = raster_calloc(n, sizeof *m->names);
    if (src->abbrevs)
        m->abbrevs = raster_calloc(n, sizeof *m->abbrevs);
    int ok = m->name_ids && m->names && (!src->abbrevs || m->abbrevs);
    for (size_t i = 0; ok && i < n; i++) {
        m->nnames = i + 1; /* what free_names frees if this one fails */
        m->name_ids[i] = src->name_ids[i];
        m->names[i] = raster_strdup(src->names[i]);
        if (m->abbrevs && src->abbrevs[i])
            m->abbrevs[i] = raster_strdup(src->abbrevs[i]);
        ok = m->names[i] && (!m->abbrevs || !src->abbrevs[i] ||
                             m->abbrevs[i]);
    }
    if (ok)
        return RASTER_OK;
    raster_mask_free(m);
    *out = NULL;
    return raster_fail(RASTER_ENOMEM, "out of memory copying a mask");
}
