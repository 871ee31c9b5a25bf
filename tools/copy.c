/*
 * copy.c - plain netCDF copying for the command-line tools (see copy.h).
 */
#include "copy.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "raster.h"
#include <unistd.h>

#include <netcdf_filter.h>

int copy_err(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_prog());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

int copy_ncerr(int status, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_prog());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, ": %s\n", nc_strerror(status));
    return -1;
}

/* ---- output through a temporary file ----------------------------------- */

/* The temporary file to remove when a signal ends the program. */
static char sig_tmp[PATH_MAX];
static volatile sig_atomic_t sig_armed;

static void on_signal(int sig)
{
    if (sig_armed)
        unlink(sig_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

int copy_check_distinct(const char *in, const char *out, const char *what)
{
    struct stat si, so;
    if (stat(out, &so) != 0 || stat(in, &si) != 0)
        return 0;
    if (si.st_dev == so.st_dev && si.st_ino == so.st_ino)
        return copy_err("%s is the %s %s itself: writing it would replace "
                        "it; give another output file", out, what, in);
    return 0;
}

int copy_out_begin(copy_out *o, const char *final)
{
    o->final = o->tmp = NULL;
    struct stat st;
    if (final[0] == '\0')
        return copy_err("empty output file name");
    if (stat(final, &st) == 0 && S_ISDIR(st.st_mode))
        return copy_err("%s is a directory", final);
    const char *slash = strrchr(final, '/');
    const char *base = slash ? slash + 1 : final;
    if (base[0] == '\0')
        return copy_err("%s names a directory, not a file", final);
    size_t dirlen = slash ? (size_t)(slash - final) + 1 : 0;
    size_t len = dirlen + strlen(base) + 16;
    o->final = strdup(final);
    o->tmp = malloc(len);
    if (!o->final || !o->tmp || len > sizeof sig_tmp) {
        copy_out_abort(o);
        return copy_err("%s: name too long or out of memory", final);
    }
    snprintf(o->tmp, len, "%.*s.%s.tmpXXXXXX", (int)dirlen, final, base);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        copy_out_abort(o);
        return copy_err("cannot create a file beside %s: %s", final,
                        strerror(e));
    }
    close(fd);
    memcpy(sig_tmp, o->tmp, strlen(o->tmp) + 1);
    sig_armed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* SIGPIPE too: a tool whose stderr goes to a pipe that closed (`| head`)
     * dies writing its progress, and left its temporary file behind */
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            fprintf(stderr, "%s: warning: a signal may leave %s behind: %s\n",
                    cli_prog(), o->tmp, strerror(errno));
    return 0;
}

int copy_out_commit(copy_out *o)
{
    mode_t mask = umask(0);
    umask(mask);
    return copy_out_commit_as(o, 0666 & ~mask, (uid_t)-1, (gid_t)-1);
}

int copy_out_commit_as(copy_out *o, mode_t mode, uid_t uid, gid_t gid)
{
    /* the owner first: chown clears the set-user-id and set-group-id bits
     * that chmod then restores; a user who may not give the file away
     * (only root may) still keeps its group when a member of it */
    if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
        chown(o->tmp, uid, gid) != 0 &&
        (gid == (gid_t)-1 || chown(o->tmp, (uid_t)-1, gid) != 0))
        fprintf(stderr, "%s: warning: %s now belongs to you: cannot give "
                "it back to user %ld, group %ld: %s\n", cli_prog(),
                o->final, (long)uid, (long)gid, strerror(errno));
    if (chmod(o->tmp, mode & 07777) != 0 || rename(o->tmp, o->final) != 0) {
        int e = errno;
        copy_err("cannot write %s: %s", o->final, strerror(e));
        copy_out_abort(o);
        return -1;
    }
    sig_armed = 0;
    free(o->tmp);
    free(o->final);
    o->tmp = o->final = NULL;
    return 0;
}

void copy_out_abort(copy_out *o)
{
    if (o->tmp)
        unlink(o->tmp);
    sig_armed = 0;
    free(o->tmp);
    free(o->final);
    o->tmp = o->final = NULL;
}

/* ---- blocks ------------------------------------------------------------ */

void copy_blocks_init(copy_blocks *b, int ndims, const size_t *shape,
                      size_t elem, size_t budget, const size_t *align)
{
    b->ndims = ndims;
    b->first = 1;
    b->done = 0;
    if (elem == 0)
        elem = 1;
    size_t inner = elem;
    int k = ndims;
    for (int i = 0; i < ndims; i++) {
        b->shape[i] = shape[i];
        b->start[i] = b->count[i] = 0;
        if (shape[i] == 0)
            b->done = 1;
    }
    /* innermost dimensions taken whole while they fit */
    while (k > 0 && shape[k - 1] <= budget / inner) {
        inner *= shape[k - 1] ? shape[k - 1] : 1;
        k--;
    }
    for (int i = k; i < ndims; i++)
        b->step[i] = shape[i];
    if (k > 0) {
        size_t s = budget / inner;
        if (s < 1)
            s = 1;
        if (align && align[k - 1] > 0 && s > align[k - 1])
            s -= s % align[k - 1];
        b->step[k - 1] = s;
        for (int i = 0; i < k - 1; i++)
            b->step[i] = 1;
    }
    b->max_elems = 1;
    for (int i = 0; i < ndims; i++)
        b->max_elems *= b->step[i] ? b->step[i] : 1;
}

int copy_blocks_next(copy_blocks *b)
{
    if (b->done)
        return 0;
    if (b->first) {
        b->first = 0;
    } else {
        int i = b->ndims - 1;
        for (; i >= 0; i--) {
            b->start[i] += b->step[i];
            if (b->start[i] < b->shape[i])
                break;
            b->start[i] = 0;
        }
        if (i < 0) {
            b->done = 1;
            return 0;
        }
    }
    for (int i = 0; i < b->ndims; i++) {
        size_t left = b->shape[i] - b->start[i];
        b->count[i] = b->step[i] < left ? b->step[i] : left;
    }
    return 1;
}

size_t copy_blocks_elems(const copy_blocks *b)
{
    size_t n = 1;
    for (int i = 0; i < b->ndims; i++)
        n *= b->count[i];
    return n;
}

/* ---- netCDF helpers ---------------------------------------------------- */

int copy_dimmap_set(copy_dimmap *m, int from, int to)
{
    if (from < 0)
        return copy_err("bad dimension id %d", from);
    if ((size_t)from >= m->n) {
        size_t n = (size_t)from + 16;
        int *t = realloc(m->to, n * sizeof *t);
        if (!t)
            return copy_err("out of memory");
        for (size_t i = m->n; i < n; i++)
            t[i] = -1;
        m->to = t;
        m->n = n;
    }
    m->to[from] = to;
    return 0;
}

int copy_dimmap_get(const copy_dimmap *m, int from)
{
    return from >= 0 && (size_t)from < m->n ? m->to[from] : -1;
}

void copy_dimmap_free(copy_dimmap *m)
{
    free(m->to);
    m->to = NULL;
    m->n = 0;
}

int copy_is_numeric(nc_type t)
{
    switch (t) {
    case NC_BYTE: case NC_UBYTE: case NC_SHORT: case NC_USHORT: case NC_INT:
    case NC_UINT: case NC_INT64: case NC_UINT64: case NC_FLOAT:
    case NC_DOUBLE:
        return 1;
    default:
        return 0;
    }
}

int copy_dim_unlimited(int grp, int dimid)
{
    for (int g = grp;;) {
        int n = 0;
        if (nc_inq_unlimdims(g, &n, NULL) == NC_NOERR && n > 0) {
            int *ids = malloc((size_t)n * sizeof *ids);
            int hit = 0;
            if (ids && nc_inq_unlimdims(g, &n, ids) == NC_NOERR)
                for (int i = 0; i < n; i++)
                    hit |= ids[i] == dimid;
            free(ids);
            if (hit)
                return 1;
        }
        int parent;
        if (nc_inq_grp_parent(g, &parent) != NC_NOERR)
            return 0;
        g = parent;
    }
}

void copy_group_path(int grp, char *buf, size_t len)
{
    size_t n;
    if (len == 0)
        return;
    buf[0] = '\0';
    if (nc_inq_grpname_full(grp, &n, NULL) != NC_NOERR)
        return;
    char *full = malloc(n + 1);
    if (full && nc_inq_grpname_full(grp, &n, full) == NC_NOERR) {
        full[n] = '\0';
        snprintf(buf, len, "%s", full);
    }
    free(full);
}

/* Group ids of `grp` (malloc'd, *n of them); NULL with *n = 0 when none. */
static int list_groups(int grp, int **ids, int *n)
{
    *ids = NULL;
    int st = nc_inq_grps(grp, n, NULL);
    if (st != NC_NOERR)
        return copy_ncerr(st, "listing groups");
    if (*n == 0)
        return 0;
    *ids = malloc((size_t)*n * sizeof **ids);
    if (!*ids)
        return copy_err("out of memory");
    if ((st = nc_inq_grps(grp, NULL, *ids)) != NC_NOERR) {
        free(*ids);
        *ids = NULL;
        return copy_ncerr(st, "listing groups");
    }
    return 0;
}

int copy_check_no_user_types(int grp, const char *file)
{
    int ntypes = 0;
    if (nc_inq_typeids(grp, &ntypes, NULL) == NC_NOERR && ntypes > 0) {
        char path[1024], name[NC_MAX_NAME + 1] = "?";
        int *t = malloc((size_t)ntypes * sizeof *t);
        if (t && nc_inq_typeids(grp, NULL, t) == NC_NOERR)
            nc_inq_type(grp, t[0], name, NULL);
        free(t);
        copy_group_path(grp, path, sizeof path);
        return copy_err("%s: group %s defines user-defined type '%s': "
                        "user-defined (compound, vlen, enum, opaque) types "
                        "are not supported", file, path, name);
    }
    int *ids, n;
    if (list_groups(grp, &ids, &n) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = copy_check_no_user_types(ids[i], file);
    free(ids);
    return rc;
}

int copy_dims(int in, int out, copy_dimmap *m)
{
    int n, st;
    if ((st = nc_inq_dimids(in, &n, NULL, 0)) != NC_NOERR)
        return copy_ncerr(st, "listing dimensions");
    if (n == 0)
        return 0;
    int *ids = malloc((size_t)n * sizeof *ids);
    if (!ids)
        return copy_err("out of memory");
    int rc = 0;
    if ((st = nc_inq_dimids(in, NULL, ids, 0)) != NC_NOERR)
        rc = copy_ncerr(st, "listing dimensions");
    for (int i = 0; i < n && rc == 0; i++) {
        char name[NC_MAX_NAME + 1];
        size_t len;
        int outid;
        if ((st = nc_inq_dim(in, ids[i], name, &len)) != NC_NOERR) {
            rc = copy_ncerr(st, "reading dimension %d", ids[i]);
            break;
        }
        if (copy_dim_unlimited(in, ids[i]))
            len = NC_UNLIMITED;
        if ((st = nc_def_dim(out, name, len, &outid)) != NC_NOERR) {
            rc = copy_ncerr(st, "defining dimension %s", name);
            break;
        }
        rc = copy_dimmap_set(m, ids[i], outid);
    }
    free(ids);
    return rc;
}

static int skipped(const char *name, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(name, *skip) == 0)
            return 1;
    return 0;
}

int copy_atts(int in, int invar, int out, int outvar, const char *const *skip)
{
    int natts, st;
    if ((st = nc_inq_varnatts(in, invar, &natts)) != NC_NOERR)
        return copy_ncerr(st, "counting attributes");
    for (int i = 0; i < natts; i++) {
        char name[NC_MAX_NAME + 1];
        if ((st = nc_inq_attname(in, invar, i, name)) != NC_NOERR)
            return copy_ncerr(st, "naming attribute %d", i);
        /* a placeholder's note describes the raster file, not a copy */
        if (skipped(name, skip) || strcmp(name, RASTER_NOTE_ATT) == 0)
            continue;
        if ((st = nc_copy_att(in, invar, name, out, outvar)) != NC_NOERR)
            return copy_ncerr(st, "copying attribute %s", name);
    }
    return 0;
}

int copy_att_read(int grp, int var, const char *name, nc_type *xtype,
                  size_t *len, void **value)
{
    size_t size;
    int st;
    *value = NULL;
    if ((st = nc_inq_att(grp, var, name, xtype, len)) != NC_NOERR ||
        (st = nc_inq_type(grp, *xtype, NULL, &size)) != NC_NOERR)
        return copy_ncerr(st, "reading attribute %s", name);
    *value = calloc(*len ? *len : 1, size);
    if (!*value)
        return copy_err("out of memory reading attribute %s", name);
    if ((st = nc_get_att(grp, var, name, *value)) != NC_NOERR) {
        free(*value);
        *value = NULL;
        return copy_ncerr(st, "reading attribute %s", name);
    }
    return 0;
}

void copy_att_free(nc_type xtype, size_t len, void *value)
{
    if (value && xtype == NC_STRING)
        nc_free_string(len, value);
    free(value);
}

int copy_is_nc4(int ncid)
{
    int fmt;
    return nc_inq_format(ncid, &fmt) == NC_NOERR &&
           (fmt == NC_FORMAT_NETCDF4 || fmt == NC_FORMAT_NETCDF4_CLASSIC);
}

const char *const copy_quantize_atts[] = {NC_QUANTIZE_BITGROOM_ATT_NAME,
    NC_QUANTIZE_GRANULARBR_ATT_NAME, NC_QUANTIZE_BITROUND_ATT_NAME, NULL};

/* Copies the storage settings of (in, v) to (out, ov); nothing for
 * netCDF-3 inputs; no filters with `plain`. `quantized` is set when
 * quantization was copied (its attribute is then written by netCDF, not
 * copied). */
static int copy_storage(int in, int v, int out, int ov, int ndims,
                        const int *dimids, const char *name, int plain,
                        int *quantized)
{
    int st, storage;
    *quantized = 0;
    int nofill = 0;
    if (nc_inq_var_fill(in, v, &nofill, NULL) == NC_NOERR && nofill &&
        (st = nc_def_var_fill(out, ov, NC_NOFILL, NULL)) != NC_NOERR)
        return copy_ncerr(st, "%s: setting no-fill mode", name);
    if (!copy_is_nc4(in) || ndims == 0)
        return 0;
    size_t *chunks = malloc((size_t)ndims * sizeof *chunks);
    if (!chunks)
        return copy_err("out of memory");
    st = nc_inq_var_chunking(in, v, &storage, chunks);
    if (st == NC_NOERR) {
        int unlim = 0;
        for (int i = 0; i < ndims; i++)
            unlim |= copy_dim_unlimited(in, dimids[i]);
        if (storage == NC_CHUNKED)
            st = nc_def_var_chunking(out, ov, NC_CHUNKED, chunks);
        else if ((storage == NC_CONTIGUOUS || storage == NC_COMPACT) &&
                 !unlim)
            st = nc_def_var_chunking(out, ov, storage, NULL);
    }
    free(chunks);
    if (st != NC_NOERR)
        return copy_ncerr(st, "%s: copying the chunking", name);
    int endian = NC_ENDIAN_NATIVE;
    if (nc_inq_var_endian(in, v, &endian) == NC_NOERR &&
        endian != NC_ENDIAN_NATIVE &&
        (st = nc_def_var_endian(out, ov, endian)) != NC_NOERR)
        return copy_ncerr(st, "%s: copying endianness", name);
    if (plain)
        return 0;
    int shuffle = 0, deflate = 0, level = 0;
    if (nc_inq_var_deflate(in, v, &shuffle, &deflate, &level) == NC_NOERR &&
        (shuffle || deflate) &&
        (st = nc_def_var_deflate(out, ov, shuffle, deflate, level)) !=
            NC_NOERR)
        return copy_ncerr(st, "%s: copying deflate/shuffle", name);
    int f32 = 0;
    if (nc_inq_var_fletcher32(in, v, &f32) == NC_NOERR && f32 &&
        (st = nc_def_var_fletcher32(out, ov, f32)) != NC_NOERR)
        return copy_ncerr(st, "%s: copying fletcher32", name);
    int qmode = 0, nsd = 0;
    if (nc_inq_var_quantize(in, v, &qmode, &nsd) == NC_NOERR && qmode) {
        if ((st = nc_def_var_quantize(out, ov, qmode, nsd)) != NC_NOERR)
            return copy_ncerr(st, "%s: copying quantization", name);
        *quantized = 1;
    }
    /* filters other than deflate (1), shuffle (2), fletcher32 (3) */
    size_t nf = 0;
    if (nc_inq_var_filter_ids(in, v, &nf, NULL) != NC_NOERR || nf == 0)
        return 0;
    unsigned int *ids = malloc(nf * sizeof *ids);
    if (!ids)
        return copy_err("out of memory");
    int rc = 0;
    if (nc_inq_var_filter_ids(in, v, &nf, ids) != NC_NOERR)
        nf = 0;
    for (size_t i = 0; i < nf && rc == 0; i++) {
        if (ids[i] <= 3)
            continue;
        size_t np = 0;
        unsigned int *params = NULL;
        st = nc_inq_var_filter_info(in, v, ids[i], &np, NULL);
        if (st == NC_NOERR && np > 0) {
            params = malloc(np * sizeof *params);
            st = params ? nc_inq_var_filter_info(in, v, ids[i], &np, params)
                        : NC_ENOMEM;
        }
        if (st == NC_NOERR)
            st = nc_def_var_filter(out, ov, ids[i], np, params);
        if (st != NC_NOERR)
            rc = copy_ncerr(st, "%s: copying filter %u", name, ids[i]);
        free(params);
    }
    free(ids);
    return rc;
}

int copy_var_def(int in, int invar, int out, const copy_dimmap *m,
                 int *outvar)
{
    return copy_var_def_as(in, invar, out, m, 0, outvar);
}

int copy_var_def_as(int in, int invar, int out, const copy_dimmap *m,
                    int plain, int *outvar)
{
    char name[NC_MAX_NAME + 1];
    nc_type xtype;
    int ndims, st;
    int dimids[NC_MAX_VAR_DIMS], odims[NC_MAX_VAR_DIMS];
    if ((st = nc_inq_var(in, invar, name, &xtype, &ndims, dimids, NULL)) !=
        NC_NOERR)
        return copy_ncerr(st, "reading variable %d", invar);
    if (xtype > NC_MAX_ATOMIC_TYPE)
        return copy_err("%s: user-defined types are not supported", name);
    for (int i = 0; i < ndims; i++) {
        odims[i] = copy_dimmap_get(m, dimids[i]);
        if (odims[i] < 0)
            return copy_err("%s: dimension %d was not copied", name,
                            dimids[i]);
    }
    if ((st = nc_def_var(out, name, xtype, ndims, odims, outvar)) !=
        NC_NOERR)
        return copy_ncerr(st, "defining variable %s", name);
    int quantized;
    if (copy_storage(in, invar, out, *outvar, ndims, dimids, name, plain,
                     &quantized) != 0)
        return -1;
    /* stored plain, the values stay as quantized as they were, but the
     * attribute would claim a setting the copy does not have */
    if (copy_atts(in, invar, out, *outvar,
                  quantized || plain ? copy_quantize_atts : NULL) != 0)
        return copy_err("%s: attributes not copied", name);
    return 0;
}

/* Shape and element size of a variable; -1 on error (message printed). */
static int var_shape(int grp, int var, int *ndims, size_t *shape,
                     size_t *elem, nc_type *xtype)
{
    int dimids[NC_MAX_VAR_DIMS], st;
    if ((st = nc_inq_var(grp, var, NULL, xtype, ndims, dimids, NULL)) !=
            NC_NOERR ||
        (st = nc_inq_type(grp, *xtype, NULL, elem)) != NC_NOERR)
        return copy_ncerr(st, "reading variable %d", var);
    for (int i = 0; i < *ndims; i++)
        if ((st = nc_inq_dimlen(grp, dimids[i], &shape[i])) != NC_NOERR)
            return copy_ncerr(st, "reading dimension %d", dimids[i]);
    return 0;
}

unsigned long long copy_var_bytes(int grp, int var)
{
    int ndims;
    size_t shape[NC_MAX_VAR_DIMS], elem;
    nc_type xtype;
    if (var_shape(grp, var, &ndims, shape, &elem, &xtype) != 0)
        return 0;
    unsigned long long n = elem;
    for (int i = 0; i < ndims; i++)
        n *= shape[i];
    return n;
}

int copy_var_data(int in, int invar, int out, int outvar, size_t budget,
                  copy_progress *p)
{
    int ndims, st, storage = NC_CONTIGUOUS;
    size_t shape[NC_MAX_VAR_DIMS], chunks[NC_MAX_VAR_DIMS], elem;
    nc_type xtype;
    char name[NC_MAX_NAME + 1] = "?";
    nc_inq_varname(in, invar, name);
    if (var_shape(in, invar, &ndims, shape, &elem, &xtype) != 0)
        return -1;
    if (ndims > 0 && copy_is_nc4(in) &&
        nc_inq_var_chunking(in, invar, &storage, chunks) != NC_NOERR)
        storage = NC_CONTIGUOUS;
    copy_blocks *b = malloc(sizeof *b);
    if (!b)
        return copy_err("out of memory");
    copy_blocks_init(b, ndims, shape, elem, budget,
                     storage == NC_CHUNKED ? chunks : NULL);
    void *buf = malloc(b->max_elems * elem);
    int rc = 0;
    if (!buf)
        rc = copy_err("%s: out of memory for a %zu-byte block", name,
                      b->max_elems * elem);
    while (rc == 0 && copy_blocks_next(b)) {
        size_t n = copy_blocks_elems(b);
        if ((st = nc_get_vara(in, invar, b->start, b->count, buf)) !=
            NC_NOERR) {
            rc = copy_ncerr(st, "reading %s", name);
            break;
        }
        st = nc_put_vara(out, outvar, b->start, b->count, buf);
        if (xtype == NC_STRING)
            nc_free_string(n, buf);
        if (st != NC_NOERR) {
            rc = copy_ncerr(st, "writing %s", name);
            break;
        }
        if (p)
            copy_progress_add(p, (unsigned long long)n * elem);
    }
    free(buf);
    free(b);
    return rc;
}

void copy_describe_compression(const raster_compression *z, char *buf,
                               size_t len)
{
    static const char *const qname[] = {"", "bitgroom", "granularbr",
                                        "bitround"};
    size_t n = 0;
    buf[0] = '\0';
    const char *parts[4 + RASTER_MAX_FILTERS];
    char text[4 + RASTER_MAX_FILTERS][48];
    int np = 0;
    if (z->deflate_level) {
        snprintf(text[np], sizeof text[np], "deflate level %d",
                 z->deflate_level);
        parts[np] = text[np];
        np++;
    }
    if (z->shuffle)
        parts[np++] = "shuffle";
    if (z->fletcher32)
        parts[np++] = "fletcher32";
    if (z->quantize_mode) {
        snprintf(text[np], sizeof text[np], "quantize %s,%d",
                 z->quantize_mode >= 1 && z->quantize_mode <= 3
                     ? qname[z->quantize_mode] : "?", z->quantize_nsd);
        parts[np] = text[np];
        np++;
    }
    for (unsigned i = 0; i < z->nfilters && i < RASTER_MAX_FILTERS; i++) {
        snprintf(text[np], sizeof text[np], "filter %u", z->filters[i].id);
        parts[np] = text[np];
        np++;
    }
    if (np == 0)
        parts[np++] = "none";
    for (int i = 0; i < np && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
                              parts[i]);
}

/* ---- coordinates -------------------------------------------------------- */

/* The 1-D coordinate variable of dimension `dimid` seen from group `g`: a
 * variable named after the dimension, over it alone, of an atomic type. */
int copy_find_coord(int g, int dimid, int *cg, int *cv)
{
    char name[NC_MAX_NAME + 1];
    if (nc_inq_dimname(g, dimid, name) != NC_NOERR)
        return 0;
    for (;;) {
        int v, nd, d;
        nc_type t;
        if (nc_inq_varid(g, name, &v) == NC_NOERR &&
            nc_inq_varndims(g, v, &nd) == NC_NOERR && nd == 1 &&
            nc_inq_var(g, v, NULL, &t, NULL, &d, NULL) == NC_NOERR &&
            d == dimid && t <= NC_MAX_ATOMIC_TYPE) {
            *cg = g;
            *cv = v;
            return 1;
        }
        int parent;
        if (nc_inq_grp_parent(g, &parent) != NC_NOERR)
            return 0;
        g = parent;
    }
}

/* Defines and fills coordinate variable (cg, cv) sliced to [start,
 * start+count) over output dimension odim. */
int copy_coord_slice(int cg, int cv, size_t start, size_t count, int out,
                     int odim)
{
    char name[NC_MAX_NAME + 1];
    nc_type t;
    size_t elem;
    int ov, st;
    if ((st = nc_inq_var(cg, cv, name, &t, NULL, NULL, NULL)) != NC_NOERR ||
        (st = nc_inq_type(cg, t, NULL, &elem)) != NC_NOERR)
        return copy_ncerr(st, "reading a coordinate variable");
    if (nc_inq_varid(out, name, &ov) == NC_NOERR)
        return 0; /* name taken (by the variable itself): skip */
    if ((st = nc_def_var(out, name, t, 1, &odim, &ov)) != NC_NOERR)
        return copy_ncerr(st, "defining coordinate %s", name);
    if (copy_atts(cg, cv, out, ov, NULL) != 0)
        return -1;
    if (count == 0)
        return 0;
    void *buf = calloc(count, elem);
    if (!buf)
        return copy_err("out of memory");
    st = nc_get_vara(cg, cv, &start, &count, buf);
    if (st == NC_NOERR) {
        st = nc_put_vara(out, ov, (size_t[]){0}, &count, buf);
        if (t == NC_STRING)
            nc_free_string(count, buf);
    }
    free(buf);
    return st == NC_NOERR ? 0 : copy_ncerr(st, "copying coordinate %s", name);
}
