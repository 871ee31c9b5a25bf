/*
 * files.c - per-file state of the preload shim. Its netCDF calls are
 * netCDF's own functions (CALL_REAL), never the wrappers: it works with
 * the file as netCDF has it, raster's groups and dimensions included.
 */
#include "files.h"

#include <netcdf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "real.h"
#ifdef RASTER_MPI
#include "par.h"
#endif

typedef struct pending {
    int grpid, varid;
    raster_mask *mask; /* owned; NULL: RASTER_MASK's */
    size_t chunk[NC_MAX_VAR_DIMS];
    int has_chunk;
    int own_chunking; /* the program called nc_def_var_chunking on it */
    int par_access;   /* nc_var_par_access before adoption; -1: none */
    struct pending *next;
} pending;

struct shim_file {
    int root;
    raster_file *rf;
    pending *pend;
    int *hidden;        /* files_hidden_dims */
    size_t nhidden;
    int hidden_known;   /* 0: look again */
    int view;           /* netCDF's handle does not show the storage */
    struct shim_file *next;
};

/* netCDF ids: the file in the high 16 bits, the group in the low ones. */
#define ROOT_OF(ncid) ((ncid) & ~0xffff)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shim_file *files;

int files_add(int ncid, raster_file *rf, int view)
{
    shim_file *sf = calloc(1, sizeof *sf);
    if (!sf)
        return NC_ENOMEM;
    sf->root = ROOT_OF(ncid);
    sf->rf = rf;
    sf->view = view;
    pthread_mutex_lock(&lock);
    sf->next = files;
    files = sf;
    pthread_mutex_unlock(&lock);
    return NC_NOERR;
}

shim_file *files_find(int ncid)
{
    pthread_mutex_lock(&lock);
    shim_file *sf = files;
    while (sf && sf->root != ROOT_OF(ncid))
        sf = sf->next;
    pthread_mutex_unlock(&lock);
    return sf;
}

static shim_file *unlink_file(int ncid)
{
    pthread_mutex_lock(&lock);
    shim_file **p = &files;
    while (*p && (*p)->root != ROOT_OF(ncid))
        p = &(*p)->next;
    shim_file *sf = *p;
    if (sf)
        *p = sf->next;
    pthread_mutex_unlock(&lock);
    return sf;
}

static void free_pending(pending *p)
{
    raster_mask_free(p->mask);
    free(p);
}

int files_pend(shim_file *sf, int grpid, int varid, raster_mask *mask,
               const size_t *chunk, int ndims)
{
    pending *p = calloc(1, sizeof *p);
    if (!p) {
        raster_mask_free(mask);
        return NC_ENOMEM;
    }
    p->grpid = grpid;
    p->varid = varid;
    p->mask = mask;
    p->par_access = -1;
    if (chunk) {
        memcpy(p->chunk, chunk, (size_t)ndims * sizeof *chunk);
        p->has_chunk = 1;
    }
    /* a later spec for the same variable replaces an earlier one */
    for (pending **q = &sf->pend; *q; q = &(*q)->next) {
        if ((*q)->grpid == grpid && (*q)->varid == varid) {
            pending *old = *q;
            p->next = old->next;
            *q = p;
            free_pending(old);
            return NC_NOERR;
        }
    }
    /* appended: variables are adopted in the order they were defined, so
     * their storage groups follow the program's order */
    pending **tail = &sf->pend;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    return NC_NOERR;
}

/* The base chunk shape for a pending variable: the spec's, else
 * RASTER_CHUNK's (aligned to the last dimensions), else the chunking the
 * program set itself, else raster's default (NULL: 1 per outer dimension,
 * tiles of 50 x 50). netCDF's own default chunking is not used: it often
 * covers the whole grid, which would leave raster nothing to gain. */
static const size_t *base_chunk(const pending *p, int ndims, size_t *buf)
{
    const shim_config *c = config_get();
    if (p->has_chunk)
        return p->chunk;
    if (c->nchunk > 0) {
        for (int i = 0; i < ndims; i++) {
            int k = c->nchunk - ndims + i;
            buf[i] = k >= 0 ? c->chunk[k] : 1;
        }
        return buf;
    }
    int storage;
    if (p->own_chunking &&
        CALL_REAL(nc_inq_var_chunking, (p->grpid, p->varid, &storage, buf)) ==
            NC_NOERR &&
        storage == NC_CHUNKED)
        return buf;
    return NULL;
}

/* LOG_WARN, or LOG_INFO where another process says it: the ranks of a
 * parallel file adopt alike (par_agree), so a variable one of them keeps
 * plain every rank keeps plain, and the file's rank 0 alone warns. */
static int warn_level(shim_file *sf)
{
#ifdef RASTER_MPI
    MPI_Comm comm;
    int rank = 0;
    if (raster_file_comm(files_raster(sf), &comm) &&
        MPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank != 0)
        return LOG_INFO;
#else
    (void)sf;
#endif
    return LOG_WARN;
}

/* 1 when RASTER_MASK's rule leaves pending variable p plain: without
 * RASTER_VARS only data variables are taken, and a coordinate is known by
 * attributes (its own, or another variable's coordinates) written after
 * nc_def_var, so the rule is asked now, not when it was defined. A chunk
 * spec or RASTER_VARS names the variable: it is taken. */
static int left_plain(shim_file *sf, const pending *p, const char *name)
{
    const shim_config *c = config_get();
    if (p->mask || c->vars || !c->mask)
        return 0;
    int why;
    int rc = raster_var_choose(p->grpid, p->varid, c->mask, c->mask_var, 0,
                               &why);
    if (rc != RASTER_OK) {
        shim_log(warn_level(sf), "%s stays plain netCDF: %s: %s", name,
                 raster_strerror(rc), raster_errmsg());
        return 1;
    }
    if (why == RASTER_CHOOSE_DATA)
        return 0;
    shim_log(LOG_INFO, "%s stays plain netCDF: %s", name,
             raster_choose_reason(why));
    return 1;
}

static void adopt_one(shim_file *sf, pending *p)
{
    const raster_mask *mask = p->mask ? p->mask : config_mask_loaded();
    char name[NC_MAX_NAME + 1] = "?";
    int ndims = 0;
    CALL_REAL(nc_inq_varname, (p->grpid, p->varid, name));
    if (left_plain(sf, p, name))
        return;
    CALL_REAL(nc_inq_varndims, (p->grpid, p->varid, &ndims));
    size_t buf[NC_MAX_VAR_DIMS];
    const size_t *chunk = ndims > 0 && ndims <= NC_MAX_VAR_DIMS
                              ? base_chunk(p, ndims, buf) : NULL;
    raster_var *v;
    int rc = mask ? raster_adopt_var(sf->rf, p->grpid, p->varid, chunk, mask,
                                     &v)
                  : RASTER_EMASK;
    sf->hidden_known = 0; /* its storage group has dimensions */
    if (rc == RASTER_OK) {
        shim_log(LOG_INFO, "%s is stored region by region", name);
        const char *w = config_get()->weights;
#ifdef RASTER_MPI
        par_adopted(v, p->par_access);
        if (raster_file_comm(sf->rf, &(MPI_Comm){MPI_COMM_NULL}))
            w = NULL; /* parallel files keep no statistics */
#endif
        /* a program's variable stays raster's without weighted ones */
        if (w && raster_var_set_stats_weights(v, w) != RASTER_OK)
            shim_log(LOG_WARN, "%s: RASTER_WEIGHTS=%s not kept: %s", name,
                     w, raster_errmsg());
    }
    else
        shim_log(warn_level(sf), "%s stays plain netCDF: %s: %s", name,
                 raster_strerror(rc), mask ? raster_errmsg() : "no mask");
}

void files_adopt(shim_file *sf, int grpid, int varid)
{
#ifdef RASTER_MPI
    /* parallel files: every rank adopts the same variables, or none */
    if (!par_agree(sf, grpid, &varid))
        return;
#endif
    for (pending **q = &sf->pend; *q;) {
        pending *p = *q;
        if (varid >= 0 && (p->grpid != grpid || p->varid != varid)) {
            q = &p->next;
            continue;
        }
        *q = p->next;
        adopt_one(sf, p);
        free_pending(p);
    }
}

/* FNV-1a, 64 bits: a digest to compare between ranks, not a secret. */
static unsigned long long fnv(unsigned long long h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void files_pending_digest(shim_file *sf, unsigned long long *count,
                          unsigned long long *digest)
{
    unsigned long long h = 14695981039346656037ULL, n = 0;
    for (pending *p = sf->pend; p; p = p->next, n++) {
        const raster_mask *mask = p->mask ? p->mask : config_mask_loaded();
        int ndims = 0;
        size_t buf[NC_MAX_VAR_DIMS], zero[NC_MAX_VAR_DIMS] = {0};
        CALL_REAL(nc_inq_varndims, (p->grpid, p->varid, &ndims));
        if (ndims < 0 || ndims > NC_MAX_VAR_DIMS)
            ndims = 0;
        const size_t *chunk = base_chunk(p, ndims, buf);
        h = fnv(h, &p->grpid, sizeof p->grpid);
        h = fnv(h, &p->varid, sizeof p->varid);
        h = fnv(h, chunk ? chunk : zero, (size_t)ndims * sizeof *zero);
        if (mask) {
            size_t ny, nx;
            raster_mask_shape(mask, &ny, &nx);
            h = fnv(h, &ny, sizeof ny);
            h = fnv(h, &nx, sizeof nx);
            h = fnv(h, raster_mask_values(mask), ny * nx * sizeof(int32_t));
        }
    }
    *count = n;
    *digest = h;
}

void files_drop_pending(shim_file *sf, int grpid, int varid)
{
    for (pending **q = &sf->pend; *q;) {
        pending *p = *q;
        if (varid >= 0 && (p->grpid != grpid || p->varid != varid)) {
            q = &p->next;
            continue;
        }
        *q = p->next;
        free_pending(p);
    }
}

raster_file *files_raster(shim_file *sf) { return sf->rf; }

/* Appends the hidden dimensions of group g and the groups below it: every
 * dimension of a raster group and of the groups inside one (`inside`). */
static int find_hidden(int g, int inside, int **ids, size_t *n, size_t *cap)
{
    int nd = 0, ng = 0, st = NC_NOERR;
    inside = inside || raster_is_raster_group(g);
    if (inside)
        st = CALL_REAL(nc_inq_dimids, (g, &nd, NULL, 0));
    if (st == NC_NOERR && *n + (size_t)nd > *cap) {
        size_t want = (*n + (size_t)nd) * 2 + 16;
        int *grown = realloc(*ids, want * sizeof *grown);
        if (!grown)
            return NC_ENOMEM;
        *ids = grown;
        *cap = want;
    }
    if (st == NC_NOERR && nd > 0 &&
        (st = CALL_REAL(nc_inq_dimids, (g, NULL, *ids + *n, 0))) ==
            NC_NOERR)
        *n += (size_t)nd;
    if (st == NC_NOERR)
        st = CALL_REAL(nc_inq_grps, (g, &ng, NULL));
    int *kids = st == NC_NOERR && ng > 0 ? malloc((size_t)ng * sizeof *kids)
                                         : NULL;
    if (ng > 0 && !kids && st == NC_NOERR)
        st = NC_ENOMEM;
    if (kids && (st = CALL_REAL(nc_inq_grps, (g, NULL, kids))) == NC_NOERR)
        for (int i = 0; i < ng && st == NC_NOERR; i++)
            st = find_hidden(kids[i], inside, ids, n, cap);
    free(kids);
    return st;
}

static int ascending(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A view's hidden ids: netCDF takes a dimension's id from the file
 * (_Netcdf4Dimid), so the storage's dimensions, unseen, leave gaps among
 * the ids of the dimensions it shows. The gaps up to the largest shown id
 * are the ones to number around, as find_hidden's would be. */
static int find_gaps(int root, int **ids, size_t *n)
{
    int *shown = NULL;
    size_t count = 0, cap = 0;
    int st = find_hidden(root, 1, &shown, &count, &cap);
    if (st == NC_NOERR && count > 1)
        qsort(shown, count, sizeof *shown, ascending);
    size_t top = count ? (size_t)shown[count - 1] + 1 : 0;
    int *gaps = st == NC_NOERR && top > count
                    ? malloc((top - count) * sizeof *gaps)
                    : NULL;
    if (st == NC_NOERR && top > count && !gaps)
        st = NC_ENOMEM;
    size_t ng = 0, k = 0;
    for (int id = 0; gaps && (size_t)id < top; id++) {
        if (k < count && shown[k] == id)
            k++;
        else
            gaps[ng++] = id;
    }
    free(shown);
    *ids = gaps;
    *n = st == NC_NOERR ? ng : 0;
    return st;
}

int files_hidden_dims(shim_file *sf, const int **ids, size_t *n)
{
    if (!sf->hidden_known) {
        int *found = NULL;
        size_t count = 0, cap = 0;
        int st = sf->view ? find_gaps(sf->root, &found, &count)
                          : find_hidden(sf->root, 0, &found, &count, &cap);
        if (st != NC_NOERR) {
            free(found);
            return st;
        }
        if (count > 1) /* qsort takes no NULL, even for nothing */
            qsort(found, count, sizeof *found, ascending);
        free(sf->hidden);
        sf->hidden = found;
        sf->nhidden = count;
        sf->hidden_known = 1;
    }
    *ids = sf->hidden;
    *n = sf->nhidden;
    return NC_NOERR;
}

int files_pending_access(shim_file *sf, int grpid, int varid, int set)
{
    for (pending *p = sf->pend; p; p = p->next) {
        if (p->grpid == grpid && p->varid == varid) {
            if (set >= 0)
                p->par_access = set;
            return p->par_access;
        }
    }
    return -2;
}

void files_note_chunking(shim_file *sf, int grpid, int varid)
{
    for (pending *p = sf->pend; p; p = p->next)
        if (p->grpid == grpid && p->varid == varid)
            p->own_chunking = 1;
}

raster_var *files_var(shim_file *sf, int grpid, int varid)
{
    if (sf->pend)
        files_adopt(sf, grpid, varid);
    return raster_var_by_varid(sf->rf, grpid, varid);
}

raster_var *files_data_var(shim_file *sf, int grpid, int varid)
{
    if (sf->pend)
        files_adopt(sf, 0, -1);
    return raster_var_by_varid(sf->rf, grpid, varid);
}

raster_var *files_view_var(shim_file *sf, int grpid, int varid)
{
    return sf->view ? raster_var_by_varid(sf->rf, grpid, varid) : NULL;
}

int files_close(int ncid)
{
    shim_file *sf = unlink_file(ncid);
    if (!sf)
        return NC_NOERR;
    files_adopt(sf, 0, -1);
    int rc = raster_close(sf->rf);
    free(sf->hidden);
    free(sf);
    if (rc != RASTER_OK) {
        shim_log(LOG_WARN, "finishing raster variables: %s: %s",
                 raster_strerror(rc), raster_errmsg());
        return NC_EHDFERR;
    }
    return NC_NOERR;
}

void files_forget(int ncid)
{
    shim_file *sf = unlink_file(ncid);
    if (!sf)
        return;
    while (sf->pend) {
        pending *p = sf->pend;
        sf->pend = p->next;
        free_pending(p);
    }
    /* raster_close would write markers: the file is being abandoned, and
     * its variables stay without one, so readers refuse them */
    raster_abandon(sf->rf);
    free(sf->hidden);
    free(sf);
}
