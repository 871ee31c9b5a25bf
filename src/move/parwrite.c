/*
 * parwrite.c - raster's writes to parallel netCDF-4 files (MPI-IO under
 * parallel HDF5), compiled only into libraster_mpi.
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
 *  - Small one-plane writes are held back (issue #25: ParallelIO's
 *    NETCDF4P type writes a record as thousands of collective calls of
 *    one strip-row each, and every store such a row touches cost a
 *    collective netCDF call of its own, 4-5 times plain netCDF). When the
 *    reduction shows that no rank's write grows a store and every rank's
 *    box is one plane of at most HOLD_BYTES (in the default
 *    RASTER_MPIIO=auto, or independent), every rank keeps its pieces
 *    (chunkio_hold) and makes no collective call; the held pieces are
 *    written by this rank alone, merged where they touch, with independent
 *    netCDF calls (chunkio_flush) before its next other write of the
 *    variable, at raster_flush and at raster_close. The stores are never
 *    filtered here (a filtered variable stays plain netCDF in parallel:
 *    HDF5 writes filtered datasets only collectively), so independent
 *    writes are allowed.
 * Once a rank is inside a collective sequence it finishes it even after an
 * error of its own (with zero-count calls), so that an error is reported
 * instead of hanging the other ranks.
 */
#include "parwrite.h"

#include <limits.h>
#include <netcdf_par.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "chunkio.h"
#include "error.h"
#include "meta.h"
#include "state.h"

/* Upper bound on the scratch buffer of one netCDF call (as chunkio.c). */
#define SCRATCH_BYTES ((size_t)32 << 20)
/* RASTER_MPIIO=auto: a store's data moves collectively when no rank needs
 * more than this many calls for it. Each collective call synchronises all
 * ranks; with few large calls that costs little and lets MPI-IO aggregate,
 * with many small ones (blocks that cut tiles) independent calls win. */
#define AUTO_COLLECTIVE_MAX_CALLS 4
/* A collective write of one plane up to this size on every rank is held
 * back (see the top); as chunkio.c's small writes. */
#define HOLD_BYTES ((size_t)64 << 10)

int par_mpi_fail(int code, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, msg, &len);
    return raster_fail_nc(RASTER_EIO, NC_EMPI, "%s: %s", what, msg);
}

/* ---- state ------------------------------------------------------------- */

int par_mpiio_from_env(void)
{
    const char *s = getenv("RASTER_MPIIO");
    if (s && strcmp(s, "collective") == 0)
        return RASTER_MPIIO_COLLECTIVE;
    if (s && strcmp(s, "independent") == 0)
        return RASTER_MPIIO_INDEPENDENT;
    return RASTER_MPIIO_AUTO;
}

/* The parallel state of v, created on first use (NULL: out of memory). */
par_var *par_var_state(raster_var *v)
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
        if (!last || p[i].store != p[last->p0].store ||
            p[i].soff != last->hi) {
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
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s", v->name,
                              nc_strerror(st));
    return RASTER_OK;
}

/* This rank's part of a collective call that writes nothing. */
static int put_nothing(raster_var *v, size_t s)
{
    size_t zero[RASTER_MAX_DIMS + 1] = {0};
    unsigned char dummy[8] = {0};
    int st = nc_put_vara(v->store_grp[s], v->store_var[s], zero, zero, dummy);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s", v->name,
                              nc_strerror(st));
    return RASTER_OK;
}

static int set_access(raster_var *v, size_t s, int access)
{
    int st = nc_var_par_access(v->store_grp[s], v->store_var[s], access);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st,
                              "%s: parallel access of a store: %s", v->name,
                              nc_strerror(st));
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

static atomic_size_t held_writes;

size_t par_held_writes(void) { return atomic_load(&held_writes); }

/* 1 when this rank's part of a collective write may be held back: one
 * plane (or nothing) of at most HOLD_BYTES, a variable chunkio can hold,
 * unfiltered stores, RASTER_MPIIO not forcing collective transfers. */
static int may_hold(raster_var *v, const piece *p, size_t n,
                    const size_t *count)
{
    const raster_compression *c = &v->comp;
    if (v->file->par->mpiio == RASTER_MPIIO_COLLECTIVE || c->shuffle ||
        c->deflate_level || c->fletcher32 || c->nfilters ||
        !chunkio_holdable(v))
        return 0;
    int no = var_nouter(v);
    for (int i = 0; i < no; i++)
        if (count[i] == 0)
            return 1; /* writes nothing */
    for (int i = 0; i < no; i++)
        if (count[i] != 1)
            return 0;
    size_t cells = 0;
    for (size_t k = 0; k < n; k++)
        cells += p[k].len;
    return cells <= HOLD_BYTES / v->elem;
}

int par_put(raster_var *v, piece *pieces, size_t npieces,
            const size_t *start, const size_t *count, const ptrdiff_t *stride,
            const void *data, size_t plane_cells)
{
    struct raster_par *par = v->file->par;
    par_var *pv = par_var_state(v);
    if (!pv)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    plan pl = {.v = v, .pieces = pieces, .data = data,
               .plane_cells = plane_cells};
    int rc = plan_build(&pl, v, pieces, npieces, start, count, stride);
    size_t nst = v->nregions + 1;
    if (pv->access != NC_COLLECTIVE) {
        /* after what this rank held back, in order */
        if (rc == RASTER_OK && v->pend)
            rc = chunkio_flush(v);
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
    /* and last, 1 when this rank's write cannot be held back */
    size_t nvec = nst * (size_t)width + 1;
    uint64_t *vec = raster_calloc(nvec * 2, sizeof *vec);
    int *writer = raster_reallocarray(NULL, nst * 2, sizeof *writer);
    if (!vec || !writer) {
        raster_free(vec);
        raster_free(writer);
        plan_free(&pl);
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    }
    uint64_t *mine = vec, *all = vec + nvec;
    mine[nvec - 1] = rc != RASTER_OK || !may_hold(v, pieces, npieces, count);
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
    int mc = MPI_Allreduce(mine, all, (int)nvec, MPI_UINT64_T, MPI_MAX,
                           par->comm);
    if (mc != MPI_SUCCESS) {
        /* every rank gets here the same way: nothing was written */
        raster_free(vec);
        raster_free(writer);
        plan_free(&pl);
        return par_mpi_fail(mc, "agreeing on a parallel write");
    }
    /* held back on every rank when every rank can and no store grows */
    int grows = 0;
    for (size_t s = 0; s < nst; s++)
        for (int u = 0; u < nu; u++)
            grows |= all[s * (size_t)width + 2 + (size_t)u] >
                     pv->ext[s * (size_t)nu + (size_t)u];
    if (!all[nvec - 1] && !grows) {
        raster_free(vec);
        raster_free(writer);
        plan_free(&pl);
        int hr = chunkio_hold(v, pieces, npieces, start, data);
        if (hr == RASTER_OK)
            atomic_fetch_add(&held_writes, 1);
        return hr;
    }
    /* this rank's held writes go first; an error of theirs still leaves
     * this rank in the collective calls below */
    if (v->pend)
        KEEP(rc, chunkio_flush(v));

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
            return par_mpi_fail(mc, "agreeing on a parallel write");
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

int par_put_tiled(raster_var *v, const size_t *start, const size_t *count,
                  const ptrdiff_t *stride, const void *data)
{
    par_var *pv = par_var_state(v);
    if (!pv)
        return raster_fail(RASTER_ENOMEM, "out of memory writing %s",
                           v->name);
    int st = nc_var_par_access(v->parent, v->varid, pv->access);
    if (st == NC_NOERR)
        st = nc_put_vars(v->parent, v->varid, start, count, stride, data);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "writing %s: %s", v->name,
                              nc_strerror(st));
    return RASTER_OK;
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
    f->tables_at_close = 0; /* inside raster_close: written now */
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
        KEEP(rc, par_mpi_fail(mc, "closing a parallel file"));
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

