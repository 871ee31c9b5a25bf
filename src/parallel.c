/*
 * parallel.c - raster on parallel netCDF-4 (MPI-IO under parallel HDF5),
 * compiled only into libraster_mpi.
 *
 * What changes when many ranks write one file:
 *  - Defining is collective in parallel netCDF-4; raster's define sequence
 *    is a pure function of the mask and the chunk shape, so ranks that agree
 *    on those (the shim checks it) make identical calls.
 *  - Writes must never read-modify-write: two ranks' blocks can meet inside
 *    one store run (a tile that straddles their boundary), and a read
 *    through a neighbour's cells followed by a write would put back stale
 *    values. par_put therefore writes exactly the caller's cells: pieces are
 *    merged only when they touch, never across a hole.
 *  - Extending an unlimited dimension is collective (H5Dset_extent; netCDF
 *    4.9 refuses it under NC_INDEPENDENT with NC_ECANTEXTEND). When a
 *    variable's writes are collective, every rank is in the same put, so
 *    one MPI_Allreduce tells each rank, per store, how far the others write
 *    and how many netCDF calls they need. A store that must grow is grown
 *    by one collective call carrying real data of the rank that writes
 *    furthest (the others take part with zero counts); the rest of the data
 *    then moves collectively (every rank makes the same number of calls per
 *    store, padding with zero counts, stores in ascending order) or
 *    independently, chosen from the piece counts or by RASTER_MPIIO.
 *  - The mask and index tables (the mask is deflated, and HDF5 writes
 *    filtered datasets only collectively) and the completeness markers are
 *    written at raster_close, which every rank calls.
 * Once a rank is inside a collective sequence it finishes it even after an
 * error of its own (with zero-count calls), so that an error is reported
 * instead of hanging the other ranks.
 */
#include "parallel.h"

#include <limits.h>
#include <netcdf_par.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "meta.h"
#include "regions.h"

/* Upper bound on the scratch buffer of one netCDF call (as chunkio.c). */
#define SCRATCH_BYTES ((size_t)32 << 20)
/* RASTER_MPIIO=auto: a store's data moves collectively when no rank needs
 * more than this many calls for it. Each collective call synchronises all
 * ranks; with few large calls that costs little and lets MPI-IO aggregate,
 * with many small ones (blocks that cut tiles) independent calls win. */
#define AUTO_COLLECTIVE_MAX_CALLS 4

typedef struct par_var {
    raster_var *v;
    int access;          /* NC_INDEPENDENT (netCDF's default) or NC_COLLECTIVE */
    int nunlim;          /* unlimited outer dimensions */
    int unlim[RASTER_MAX_DIMS];
    uint64_t *ext;       /* per store and unlimited dimension: a lower
                            bound of the store's extent, equal on all ranks */
    struct par_var *next;
} par_var;

struct raster_par {
    MPI_Comm comm;
    int rank, size;
    int mpiio;           /* RASTER_MPIIO_* */
    int closing;         /* inside raster_close: tables may be written */
    par_var *vars;
};

static int mpi_fail(int code, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, msg, &len);
    return raster_fail_nc(RASTER_EIO, NC_EMPI, "%s: %s", what, msg);
}

/* ---- state ------------------------------------------------------------- */

static int mpiio_from_env(void)
{
    const char *s = getenv("RASTER_MPIIO");
    if (s && strcmp(s, "collective") == 0)
        return RASTER_MPIIO_COLLECTIVE;
    if (s && strcmp(s, "independent") == 0)
        return RASTER_MPIIO_INDEPENDENT;
    return RASTER_MPIIO_AUTO;
}

/* The parallel state of v, created on first use (NULL: out of memory). */
static par_var *var_state(raster_var *v)
{
    struct raster_par *par = v->file->par;
    for (par_var *pv = par->vars; pv; pv = pv->next)
        if (pv->v == v)
            return pv;
    par_var *pv = raster_calloc(1, sizeof *pv);
    if (!pv)
        return NULL;
    pv->v = v;
    pv->access = NC_INDEPENDENT;
    for (int d = 0; d < var_nouter(v); d++)
        if (var_nc_dim_unlimited(v->grpid, v->dimids[d]))
            pv->unlim[pv->nunlim++] = d;
    /* 0 is a lower bound of every extent: a store not known to be long
     * enough is grown by a collective call, which is harmless when it
     * already was (netCDF extends only what must grow) */
    size_t n = (v->nregions + 1) * (size_t)(pv->nunlim ? pv->nunlim : 1);
    pv->ext = raster_calloc(n, sizeof *pv->ext);
    if (!pv->ext) {
        raster_free(pv);
        return NULL;
    }
    pv->next = par->vars;
    par->vars = pv;
    return pv;
}

void par_free(raster_file *f)
{
    if (!f || !f->par)
        return;
    struct raster_par *par = f->par;
    while (par->vars) {
        par_var *next = par->vars->next;
        raster_free(par->vars->ext);
        raster_free(par->vars);
        par->vars = next;
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && par->comm != MPI_COMM_NULL)
        MPI_Comm_free(&par->comm);
    raster_free(par);
    f->par = NULL;
}

int par_may_materialize(const raster_file *f)
{
    return !f->par || f->par->closing;
}

int par_put_collective(const raster_var *v)
{
    if (!v->file->par)
        return 0;
    for (par_var *pv = v->file->par->vars; pv; pv = pv->next)
        if (pv->v == v)
            return pv->access == NC_COLLECTIVE;
    return 0;
}

/* ---- the write plan ------------------------------------------------------ */

/* Pieces [p0, p1) of one store that touch end to end: store cells [lo, hi). */
typedef struct run {
    size_t p0, p1;
    uint64_t lo, hi;
} run;

/* One netCDF call's worth of the outer box: nb records along the innermost
 * outer dimension from start[], landing at plane0 of the caller's buffer. */
typedef struct block {
    size_t start[RASTER_MAX_DIMS];
    size_t plane0, nb;
} block;

typedef struct plan {
    raster_var *v;
    const piece *pieces;
    run *runs;
    size_t nruns;
    size_t *first;       /* runs of store s: [first[s], first[s+1]) */
    block *blocks;
    size_t nblocks;
    const unsigned char *data;
    size_t plane_cells;
    unsigned char *tmp;
    size_t tmp_bytes;
} plan;

static int cmp_piece(const void *a, const void *b)
{
    const piece *p = a, *q = b;
    if (p->store != q->store)
        return (p->store > q->store) - (p->store < q->store);
    return (p->soff > q->soff) - (p->soff < q->soff);
}

static void plan_free(plan *pl)
{
    raster_free(pl->runs);
    raster_free(pl->first);
    raster_free(pl->blocks);
    raster_free(pl->tmp);
}

/* Runs, blocks and scratch for this rank's share of the write. */
static int plan_build(plan *pl, raster_var *v, piece *p, size_t np,
                      const size_t *start, const size_t *count,
                      const ptrdiff_t *stride)
{
    size_t nst = v->nregions + 1, cap = 0;
    int no = var_nouter(v);
    pl->first = raster_calloc(nst + 1, sizeof *pl->first);
    if (!pl->first)
        return raster_fail(RASTER_ENOMEM, "out of memory planning a parallel "
                           "write of %s", v->name);
    for (int i = 0; i < no; i++)
        if (count[i] == 0)
            return RASTER_OK; /* an empty outer box writes nothing */
    if (np > 0)
        qsort(p, np, sizeof *p, cmp_piece);
    size_t widest = 0;
    for (size_t i = 0; i < np; i++) {
        run *last = pl->nruns ? &pl->runs[pl->nruns - 1] : NULL;
        if (!last || p[i].store != p[last->p0].store || p[i].soff != last->hi) {
            int rc = raster_grow(&pl->runs, &cap, pl->nruns + 1,
                                 sizeof *pl->runs);
            if (rc)
                return rc;
            last = &pl->runs[pl->nruns++];
            *last = (run){.p0 = i, .p1 = i, .lo = p[i].soff, .hi = p[i].soff};
        }
        last->p1 = i + 1;
        last->hi = p[i].soff + p[i].len;
        if (last->hi - last->lo > widest)
            widest = (size_t)(last->hi - last->lo);
    }
    for (size_t r = 0; r < pl->nruns; r++)
        pl->first[p[pl->runs[r].p0].store + 1]++;
    for (size_t s = 0; s < nst; s++)
        pl->first[s + 1] += pl->first[s];

    /* blocks: the odometer over the outer box, the innermost outer
     * dimension batched when its stride is 1 (as chunkio.c does) */
    size_t total = 1, batch = 1;
    int batched = no > 0 && (!stride || stride[no - 1] == 1);
    if (batched) {
        batch = count[no - 1];
        size_t per = widest * v->elem;
        if (per > 0 && batch > SCRATCH_BYTES / per)
            batch = SCRATCH_BYTES / per ? SCRATCH_BYTES / per : 1;
    }
    for (int i = 0; i < no; i++)
        total *= i == no - 1 ? (count[i] + batch - 1) / batch : count[i];
    if (pl->nruns == 0)
        total = 0;
    pl->blocks = raster_reallocarray(NULL, total ? total : 1,
                                     sizeof *pl->blocks);
    pl->tmp_bytes = widest * v->elem * batch;
    pl->tmp = raster_malloc(pl->tmp_bytes ? pl->tmp_bytes : 1);
    if (!pl->blocks || !pl->tmp)
        return raster_fail(RASTER_ENOMEM, "out of memory planning a parallel "
                           "write of %s", v->name);
    size_t idx[RASTER_MAX_DIMS] = {0}, pmult[RASTER_MAX_DIMS];
    for (int i = no - 1; i >= 0; i--)
        pmult[i] = i == no - 1 ? 1 : pmult[i + 1] * count[i + 1];
    while (pl->nblocks < total) {
        block *b = &pl->blocks[pl->nblocks++];
        b->plane0 = 0;
        b->nb = 1;
        for (int i = 0; i < no; i++) {
            ptrdiff_t step = stride ? stride[i] : 1;
            b->start[i] = start[i] + idx[i] * (size_t)step;
            b->plane0 += idx[i] * pmult[i];
        }
        if (batched)
            b->nb = count[no - 1] - idx[no - 1] < batch
                        ? count[no - 1] - idx[no - 1] : batch;
        for (int d = no - 1; d >= 0; d--) {
            idx[d] += d == no - 1 ? b->nb : 1;
            if (idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
    return RASTER_OK;
}

/* Writes run r for block b through netCDF (whatever access the store has). */
static int put_run(plan *pl, size_t r, size_t b)
{
    raster_var *v = pl->v;
    const run *ru = &pl->runs[r];
    const block *bl = &pl->blocks[b];
    int no = var_nouter(v);
    size_t elem = v->elem, width = (size_t)(ru->hi - ru->lo);
    for (size_t k = 0; k < bl->nb; k++)
        for (size_t i = ru->p0; i < ru->p1; i++) {
            const piece *p = &pl->pieces[i];
            memcpy(pl->tmp + (k * width + (p->soff - ru->lo)) * elem,
                   pl->data + ((bl->plane0 + k) * pl->plane_cells + p->uoff) *
                                  elem,
                   p->len * elem);
        }
    size_t sstart[RASTER_MAX_DIMS + 1], scount[RASTER_MAX_DIMS + 1];
    for (int i = 0; i < no; i++) {
        sstart[i] = bl->start[i];
        scount[i] = 1;
    }
    if (no > 0)
        scount[no - 1] = bl->nb;
    sstart[no] = ru->lo;
    scount[no] = width;
    uint32_t s = pl->pieces[ru->p0].store;
    int st = nc_put_vara(v->store_grp[s], v->store_var[s], sstart, scount,
                         pl->tmp);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "writing %s: %s",
                       v->name, nc_strerror(st));
    return RASTER_OK;
}

/* This rank's part of a collective call that writes nothing. */
static int put_nothing(raster_var *v, size_t s)
{
    size_t zero[RASTER_MAX_DIMS + 1] = {0};
    unsigned char dummy[8] = {0};
    int st = nc_put_vara(v->store_grp[s], v->store_var[s], zero, zero, dummy);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "writing %s: %s",
                       v->name, nc_strerror(st));
    return RASTER_OK;
}

static int set_access(raster_var *v, size_t s, int access)
{
    int st = nc_var_par_access(v->store_grp[s], v->store_var[s], access);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "%s: parallel "
                       "access of a store: %s", v->name, nc_strerror(st));
    return RASTER_OK;
}

/* The first error wins; later ones are dropped. */
#define KEEP(rc, expr)                                                        \
    do {                                                                      \
        int e_ = (expr);                                                      \
        if ((rc) == RASTER_OK)                                                \
            (rc) = e_;                                                        \
    } while (0)

/* Independent: every run of every block, in any order. */
static int put_independent(plan *pl, size_t s, size_t skip_r, size_t skip_b)
{
    for (size_t r = pl->first[s]; r < pl->first[s + 1]; r++)
        for (size_t b = 0; b < pl->nblocks; b++) {
            if (r == skip_r && b == skip_b)
                continue;
            int rc = put_run(pl, r, b);
            if (rc)
                return rc;
        }
    return RASTER_OK;
}

int par_put(raster_var *v, piece *pieces, size_t npieces,
            const size_t *start, const size_t *count, const ptrdiff_t *stride,
            const void *data, size_t plane_cells)
{
    struct raster_par *par = v->file->par;
    par_var *pv = var_state(v);
    if (!pv)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    plan pl = {.v = v, .pieces = pieces, .data = data,
               .plane_cells = plane_cells};
    int rc = plan_build(&pl, v, pieces, npieces, start, count, stride);
    size_t nst = v->nregions + 1;
    if (pv->access != NC_COLLECTIVE) {
        for (size_t s = 0; s < nst && rc == RASTER_OK; s++)
            rc = put_independent(&pl, s, SIZE_MAX, SIZE_MAX);
        plan_free(&pl);
        return rc;
    }
    if (rc) { /* still take part, writing nothing */
        plan_free(&pl);
        pl = (plan){.v = v};
        pl.first = raster_calloc(nst + 1, sizeof *pl.first);
        if (!pl.first)
            return rc; /* nothing left to be done but fail */
    }

    /* per store: calls, bytes, then the end of the box along each
     * unlimited dimension; reduced with MAX over the ranks */
    int nu = pv->nunlim, width = 2 + nu;
    uint64_t *vec = raster_calloc(nst * (size_t)width * 2, sizeof *vec);
    int *writer = raster_reallocarray(NULL, nst * 2, sizeof *writer);
    if (!vec || !writer) {
        raster_free(vec);
        raster_free(writer);
        plan_free(&pl);
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    }
    uint64_t *mine = vec, *all = vec + nst * (size_t)width;
    for (size_t s = 0; s < nst; s++) {
        uint64_t runs = pl.first[s + 1] - pl.first[s], cells = 0;
        for (size_t r = pl.first[s]; r < pl.first[s + 1]; r++)
            cells += pl.runs[r].hi - pl.runs[r].lo;
        uint64_t *m = mine + s * (size_t)width;
        m[0] = runs * pl.nblocks;
        m[1] = cells * v->elem * pl.nblocks;
        for (int u = 0; u < nu && runs > 0; u++) {
            int d = pv->unlim[u];
            ptrdiff_t step = stride ? stride[d] : 1;
            m[2 + u] = start[d] + (count[d] - 1) * (size_t)step + 1;
        }
    }
    int mc = MPI_Allreduce(mine, all, (int)(nst * (size_t)width),
                           MPI_UINT64_T, MPI_MAX, par->comm);
    if (mc != MPI_SUCCESS) {
        /* every rank gets here the same way: nothing was written */
        raster_free(vec);
        raster_free(writer);
        plan_free(&pl);
        return mpi_fail(mc, "agreeing on a parallel write");
    }

    /* decisions, identical on every rank (made from reduced values) */
    int need_writer = 0;
    for (size_t s = 0; s < nst; s++) {
        uint64_t *g = all + s * (size_t)width;
        int grow = 0;
        for (int u = 0; u < nu; u++)
            grow |= g[2 + u] > pv->ext[s * (size_t)nu + (size_t)u];
        int coll = par->mpiio == RASTER_MPIIO_COLLECTIVE ||
                   (par->mpiio == RASTER_MPIIO_AUTO &&
                    g[0] <= AUTO_COLLECTIVE_MAX_CALLS) ||
                   (grow && nu > 1);
        /* writer[s]: -2 collective data, -1 independent, else the rank
         * whose collective call grows the store before independent data */
        writer[s] = coll ? -2 : -1;
        if (!coll && grow) {
            /* the lowest rank writing as far as anyone */
            uint64_t *m = mine + s * (size_t)width;
            writer[nst + s] = m[0] > 0 && m[2] == g[2] ? par->rank : INT_MAX;
            need_writer = 1;
        } else {
            writer[nst + s] = INT_MAX;
        }
    }
    if (need_writer) {
        /* the lowest candidate of each store, reduced in place */
        mc = MPI_Allreduce(MPI_IN_PLACE, writer + nst, (int)nst, MPI_INT,
                           MPI_MIN, par->comm);
        if (mc != MPI_SUCCESS) {
            raster_free(vec);
            raster_free(writer);
            plan_free(&pl);
            return mpi_fail(mc, "agreeing on a parallel write");
        }
        for (size_t s = 0; s < nst; s++)
            if (writer[s] == -1 && writer[nst + s] != INT_MAX)
                writer[s] = writer[nst + s];
    }

    for (size_t s = 0; s < nst; s++) {
        uint64_t *g = all + s * (size_t)width;
        if (v->store_var[s] < 0 || g[0] == 0)
            continue; /* nobody writes this store */
        if (writer[s] == -2) {
            /* collective data: the same number of calls on every rank */
            KEEP(rc, set_access(v, s, NC_COLLECTIVE));
            size_t done = 0;
            for (size_t r = pl.first[s]; r < pl.first[s + 1]; r++)
                for (size_t b = 0; b < pl.nblocks; b++, done++) {
                    int e = rc == RASTER_OK ? put_run(&pl, r, b)
                                            : put_nothing(v, s);
                    KEEP(rc, e);
                }
            for (; done < g[0]; done++)
                KEEP(rc, put_nothing(v, s));
            KEEP(rc, set_access(v, s, NC_INDEPENDENT));
            continue;
        }
        size_t skip_r = SIZE_MAX, skip_b = SIZE_MAX;
        if (writer[s] >= 0) {
            /* grow the store: the writer's last block of its first run
             * reaches the furthest record, so netCDF extends to it */
            KEEP(rc, set_access(v, s, NC_COLLECTIVE));
            if (writer[s] == par->rank && rc == RASTER_OK) {
                skip_r = pl.first[s];
                skip_b = pl.nblocks - 1;
                KEEP(rc, put_run(&pl, skip_r, skip_b));
            } else {
                KEEP(rc, put_nothing(v, s));
            }
            KEEP(rc, set_access(v, s, NC_INDEPENDENT));
        }
        if (rc == RASTER_OK)
            rc = put_independent(&pl, s, skip_r, skip_b);
    }
    /* every store is now at least as long as anyone wrote it */
    for (size_t s = 0; s < nst; s++)
        for (int u = 0; u < nu; u++) {
            uint64_t *e = &pv->ext[s * (size_t)nu + (size_t)u];
            uint64_t want = all[s * (size_t)width + 2 + (size_t)u];
            if (all[s * (size_t)width] > 0 && want > *e)
                *e = want;
        }
    raster_free(vec);
    raster_free(writer);
    plan_free(&pl);
    return rc;
}

/* ---- closing ----------------------------------------------------------- */

static void collective_if_present(int g, const char *name)
{
    int varid;
    if (g >= 0 && nc_inq_varid(g, name, &varid) == NC_NOERR)
        nc_var_par_access(g, varid, NC_COLLECTIVE);
}

int par_before_close(raster_file *f)
{
    struct raster_par *par = f->par;
    int rc = RASTER_OK;
    par->closing = 1;
    size_t n = 0;
    for (raster_var *v = f->vars; v; v = v->next)
        n++;
    /* mask and tables: every rank writes the same values collectively
     * (identical bytes, so overlapping selections are harmless) */
    for (raster_var *v = f->vars; v; v = v->next) {
        if (v->materialized || !f->writable)
            continue;
        collective_if_present(v->grpid, "mask");
        static const char *const shared[4] = {"chunks", "runs",
                                              "mixed_chunks", "shares"};
        for (int t = 0; t < 4; t++)
            collective_if_present(v->grpid, shared[t]);
        for (size_t s = 0; s <= v->nregions; s++) {
            collective_if_present(v->store_grp[s], "runs");
            collective_if_present(v->store_grp[s], "chunks");
            collective_if_present(v->store_grp[s], "shares");
        }
        KEEP(rc, meta_materialize(v));
    }
    /* dirty flags and the outcome must be the same on every rank: the
     * flush and the markers that follow are collective */
    int *flags = raster_calloc(n + 1, sizeof *flags);
    int *out = raster_calloc(n + 1, sizeof *out);
    if (!flags || !out) {
        raster_free(flags);
        raster_free(out);
        flags = out = NULL;
        KEEP(rc, raster_fail(RASTER_ENOMEM, "out of memory closing %s",
                             f->path ? f->path : "a parallel file"));
    }
    size_t i = 0;
    for (raster_var *v = f->vars; flags && v; v = v->next)
        flags[i++] = v->dirty;
    int failed = rc != RASTER_OK, anyfail = failed;
    int mc = MPI_Allreduce(MPI_IN_PLACE, &anyfail, 1, MPI_INT, MPI_MAX,
                           par->comm);
    if (mc == MPI_SUCCESS && flags)
        mc = MPI_Allreduce(flags, out, (int)n + 1, MPI_INT, MPI_MAX,
                           par->comm);
    if (mc != MPI_SUCCESS)
        KEEP(rc, mpi_fail(mc, "closing a parallel file"));
    i = 0;
    for (raster_var *v = f->vars; out && v; v = v->next)
        v->dirty = out[i++];
    raster_free(flags);
    raster_free(out);
    if (rc == RASTER_OK && anyfail)
        rc = raster_fail(RASTER_EIO, "%s: another rank failed to finish its "
                         "raster variables", f->path ? f->path : "file");
    return rc;
}

/* ---- public: files ------------------------------------------------------ */

int raster_attach_par(int ncid, int writable, MPI_Comm comm,
                      raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(comm == MPI_COMM_NULL, RASTER_EINVAL,
                    "communicator is MPI_COMM_NULL");
    raster_file *f = NULL;
    int rc = raster_attach(ncid, writable, &f);
    struct raster_par *par = NULL;
    if (rc == RASTER_OK) {
        par = raster_calloc(1, sizeof *par);
        if (!par)
            rc = raster_fail(RASTER_ENOMEM, "out of memory attaching");
    }
    /* every rank must end up alike: raster on all or on none */
    int codes[2] = {rc, -rc}, agreed[2];
    int mc = MPI_Allreduce(codes, agreed, 2, MPI_INT, MPI_MAX, comm);
    if (mc != MPI_SUCCESS) {
        raster_free(par);
        raster_abandon(f);
        return mpi_fail(mc, "attaching a parallel file");
    }
    if (agreed[0] != RASTER_OK) {
        raster_free(par);
        raster_abandon(f);
        if (rc != RASTER_OK)
            return rc; /* this rank's own message */
        return raster_fail(agreed[0] == -agreed[1] ? agreed[0]
                                                   : RASTER_EFORMAT,
                           "another rank could not load the raster variables "
                           "of this file (%s)", raster_strerror(agreed[0]));
    }
    par->comm = MPI_COMM_NULL;
    mc = MPI_Comm_dup(comm, &par->comm);
    if (mc == MPI_SUCCESS)
        mc = MPI_Comm_rank(par->comm, &par->rank);
    if (mc == MPI_SUCCESS)
        mc = MPI_Comm_size(par->comm, &par->size);
    par->mpiio = mpiio_from_env();
    f->par = par;
    if (mc != MPI_SUCCESS) {
        raster_abandon(f);
        return mpi_fail(mc, "duplicating the communicator");
    }
    if (writable && f->vars) {
        /* writes may come from any rank at any time: mark every variable
         * incomplete now, collectively, rather than at a first write */
        for (raster_var *v = f->vars; v && rc == RASTER_OK; v = v->next) {
            rc = meta_mark_complete(v, 0);
            v->dirty = 1;
        }
        int st = rc == RASTER_OK ? nc_sync(ncid) : NC_NOERR;
        if (st != NC_NOERR)
            rc = raster_fail_nc(RASTER_ENETCDF, st, "flushing completeness "
                                "markers: %s", nc_strerror(st));
        if (rc) {
            raster_abandon(f);
            return rc;
        }
    }
    *out = f;
    return RASTER_OK;
}

int raster_create_par(const char *path, MPI_Comm comm, MPI_Info info,
                      raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!path, RASTER_EINVAL, "file name is NULL");
    int rc = raster_filter_register();
    if (rc)
        return rc;
    int ncid, st = nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, comm, info,
                                 &ncid);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "creating %s: %s",
                       path, nc_strerror(st));
    rc = raster_attach_par(ncid, 1, comm, out);
    if (rc) {
        nc_abort(ncid);
        return rc;
    }
    (*out)->own_ncid = 1;
    return RASTER_OK;
}

int raster_open_par(const char *path, int mode, MPI_Comm comm, MPI_Info info,
                    raster_file **out)
{
    RETURN_ERROR_IF(!out, RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    RETURN_ERROR_IF(!path, RASTER_EINVAL, "file name is NULL");
    RETURN_ERROR_IF(mode != RASTER_READ && mode != RASTER_WRITE,
                    RASTER_EINVAL, "mode %d is neither RASTER_READ nor "
                    "RASTER_WRITE", mode);
    /* before netCDF opens the file: it checks the placeholders' filter */
    int rc = raster_filter_register();
    if (rc)
        return rc;
    int ncid, st = nc_open_par(path, mode == RASTER_WRITE ? NC_WRITE
                                                          : NC_NOWRITE,
                               comm, info, &ncid);
    RETURN_NC_ERROR_IF(st != NC_NOERR, RASTER_ENETCDF, st, "opening %s: %s",
                       path, nc_strerror(st));
    rc = raster_attach_par(ncid, mode == RASTER_WRITE, comm, out);
    if (rc == RASTER_OK && mode == RASTER_READ && !(*out)->vars) {
        raster_abandon(*out);
        *out = NULL;
        rc = raster_fail(RASTER_EFORMAT, "%s holds no raster variable", path);
    }
    if (rc) {
        raster_nc_close(ncid);
        return rc;
    }
    (*out)->own_ncid = 1;
    return RASTER_OK;
}

int raster_file_comm(const raster_file *f, MPI_Comm *comm)
{
    if (comm)
        *comm = f && f->par ? f->par->comm : MPI_COMM_NULL;
    return f && f->par ? 1 : 0;
}

int raster_var_par_access(raster_var *v, int access)
{
    RETURN_ERROR_IF(!v, RASTER_EINVAL, "NULL variable");
    RETURN_ERROR_IF(!v->file->par, RASTER_EINVAL, "%s: not a parallel file",
                    v->name);
    RETURN_ERROR_IF(access != NC_COLLECTIVE && access != NC_INDEPENDENT,
                    RASTER_EINVAL, "%s: access %d is neither NC_COLLECTIVE "
                    "nor NC_INDEPENDENT", v->name, access);
    par_var *pv = var_state(v);
    RETURN_ERROR_IF(!pv, RASTER_ENOMEM, "out of memory");
    pv->access = access;
    return RASTER_OK;
}

int raster_file_set_mpiio(raster_file *f, int mode)
{
    RETURN_ERROR_IF(!f || !f->par, RASTER_EINVAL, "not a parallel file");
    RETURN_ERROR_IF(mode < RASTER_MPIIO_AUTO ||
                    mode > RASTER_MPIIO_INDEPENDENT, RASTER_EINVAL,
                    "unknown MPI-IO mode %d", mode);
    f->par->mpiio = mode;
    return RASTER_OK;
}

/* ---- public: splitting reads --------------------------------------------- */

int raster_region_split(const raster_var *v, const int32_t *ids, size_t nids,
                        const size_t *ostart, const size_t *ocount, int split,
                        int rank, int nranks, size_t *my_ostart,
                        size_t *my_ocount, int32_t *my_ids, size_t *my_nids)
{
    RETURN_ERROR_IF(!v || !ids || nids == 0 || !my_ids || !my_nids,
                    RASTER_EINVAL, "NULL argument or no region");
    int no = var_nouter(v);
    RETURN_ERROR_IF(no > 0 && (!ostart || !ocount || !my_ostart ||
                               !my_ocount), RASTER_EINVAL,
                    "NULL outer box");
    RETURN_ERROR_IF(nranks < 1 || rank < 0 || rank >= nranks, RASTER_EINVAL,
                    "rank %d of %d", rank, nranks);
    RETURN_ERROR_IF(split != RASTER_SPLIT_OUTER &&
                    split != RASTER_SPLIT_REGIONS, RASTER_EINVAL,
                    "unknown split %d", split);
    for (int i = 0; i < no; i++) {
        my_ostart[i] = ostart[i];
        my_ocount[i] = ocount[i];
    }
    *my_nids = 0;
    if (split == RASTER_SPLIT_OUTER) {
        if (no == 0) {
            /* nothing to cut: one rank reads it all */
            if (rank == 0) {
                memcpy(my_ids, ids, nids * sizeof *ids);
                *my_nids = nids;
            }
            return RASTER_OK;
        }
        /* the dimension whose largest share is the smallest fraction of
         * it (the best balance: 10 levels split better than 3 records
         * among 2 ranks); ties go to the outermost */
        int d = 0;
        size_t r = (size_t)nranks;
        for (int i = 1; i < no; i++) {
            size_t ci = (ocount[i] + r - 1) / r, cd = (ocount[d] + r - 1) / r;
            if (ocount[i] > 0 && (ocount[d] == 0 ||
                                  ci * ocount[d] < cd * ocount[i]))
                d = i;
        }
        size_t n = ocount[d];
        size_t lo = n * (size_t)rank / (size_t)nranks;
        size_t hi = n * (size_t)(rank + 1) / (size_t)nranks;
        my_ostart[d] = ostart[d] + lo;
        my_ocount[d] = hi - lo;
        if (hi > lo) {
            memcpy(my_ids, ids, nids * sizeof *ids);
            *my_nids = nids;
        }
        return RASTER_OK;
    }
    /* regions, largest first, each to the least loaded rank */
    size_t *cells = raster_reallocarray(NULL, nids, sizeof *cells);
    size_t *order = raster_reallocarray(NULL, nids, sizeof *order);
    size_t *load = raster_calloc((size_t)nranks, sizeof *load);
    int *owner = raster_reallocarray(NULL, nids, sizeof *owner);
    int rc = RASTER_OK;
    if (!cells || !order || !load || !owner) {
        rc = raster_fail(RASTER_ENOMEM, "out of memory splitting a read");
        goto done;
    }
    for (size_t i = 0; i < nids && rc == RASTER_OK; i++) {
        long pos = regions_pos(v, ids[i]);
        if (pos < 0)
            rc = raster_fail(RASTER_ENOTFOUND, "%s has no region %d",
                             v->name, (int)ids[i]);
        cells[i] = pos >= 0 ? v->regions[pos].pure_cells +
                                  v->regions[pos].mixed_cells
                            : 0;
        order[i] = i;
    }
    if (rc)
        goto done;
    /* insertion sort by cells descending, then position: deterministic */
    for (size_t i = 1; i < nids; i++) {
        size_t k = order[i], j = i;
        while (j > 0 && cells[order[j - 1]] < cells[k]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    for (size_t i = 0; i < nids; i++) {
        int best = 0;
        for (int r = 1; r < nranks; r++)
            if (load[r] < load[best])
                best = r;
        owner[order[i]] = best;
        load[best] += cells[order[i]];
    }
    for (size_t i = 0; i < nids; i++)
        if (owner[i] == rank)
            my_ids[(*my_nids)++] = ids[i];
done:
    raster_free(cells);
    raster_free(order);
    raster_free(load);
    raster_free(owner);
    return rc;
}

int raster_region_read_par(raster_var *v, const int32_t *ids, size_t nids,
                           const size_t *ostart, const size_t *ocount,
                           int layout_kind, int split, MPI_Comm comm,
                           void *out, size_t *my_ostart, size_t *my_ocount,
                           int32_t *my_ids, size_t *my_nids)
{
    RETURN_ERROR_IF(!v || !ids || nids == 0, RASTER_EINVAL, "NULL argument");
    int rank, size, mc = MPI_Comm_rank(comm, &rank);
    if (mc == MPI_SUCCESS)
        mc = MPI_Comm_size(comm, &size);
    if (mc != MPI_SUCCESS)
        return mpi_fail(mc, "splitting a region read");
    size_t os[RASTER_MAX_DIMS], oc[RASTER_MAX_DIMS], n = 0;
    int32_t *mine = my_ids ? my_ids : raster_reallocarray(NULL, nids,
                                                          sizeof *mine);
    RETURN_ERROR_IF(!mine, RASTER_ENOMEM, "out of memory splitting a read");
    int rc = raster_region_split(v, ids, nids, ostart, ocount, split, rank,
                                 size, os, oc, mine, &n);
    if (rc == RASTER_OK && n > 0)
        rc = raster_region_read(v, mine, n, os, oc, layout_kind, out);
    for (int i = 0; rc == RASTER_OK && i < var_nouter(v); i++) {
        if (my_ostart)
            my_ostart[i] = os[i];
        if (my_ocount)
            my_ocount[i] = oc[i];
    }
    if (my_nids)
        *my_nids = rc == RASTER_OK ? n : 0;
    if (mine != my_ids)
        raster_free(mine);
    return rc;
}
