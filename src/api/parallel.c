/*
 * parallel.c - the public MPI calls (raster.h, RASTER_MPI): files attached,
 * created and opened on a communicator, collective or independent access,
 * and region reads split over ranks. Compiled only into libraster_mpi; the
 * writes themselves are parwrite.c's.
 */
#include <netcdf.h>
#include <netcdf_par.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "file.h"
#include "meta.h"
#include "parwrite.h"
#include "regions.h"
#include "statstore.h"

/* ---- public: files ------------------------------------------------------ */

int raster_attach_par(int ncid, int writable, MPI_Comm comm,
                      raster_file **out)
{
    if (!out)
        return raster_fail(RASTER_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (comm == MPI_COMM_NULL)
        return raster_fail(RASTER_EINVAL, "communicator is MPI_COMM_NULL");
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
        return par_mpi_fail(mc, "attaching a parallel file");
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
    par->mpiio = par_mpiio_from_env();
    f->par = par;
    f->tables_at_close = 1;
    if (mc != MPI_SUCCESS) {
        raster_abandon(f);
        return par_mpi_fail(mc, "duplicating the communicator");
    }
    if (writable && f->vars) {
        /* writes may come from any rank at any time: mark every variable
         * incomplete now, collectively, rather than at a first write */
        for (raster_var *v = f->vars; v && rc == RASTER_OK; v = v->next) {
            rc = meta_mark_complete(v, 0);
            /* parallel writes keep no statistics: the stored ones would
             * outlive the values they describe */
            if (rc == RASTER_OK)
                rc = statstore_void(v);
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
    int rc = file_start(path, RASTER_WRITE, out);
    if (rc)
        return rc;
    int ncid, st = nc_create_par(path, NC_NETCDF4 | NC_CLOBBER, comm, info,
                                 &ncid);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "creating %s: %s", path,
                              nc_strerror(st));
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
    int rc = file_start(path, mode, out);
    if (rc)
        return rc;
    int ncid, st = nc_open_par(path, mode == RASTER_WRITE ? NC_WRITE
                                                          : NC_NOWRITE,
                               comm, info, &ncid);
    if (st != NC_NOERR)
        return raster_fail_nc(RASTER_ENETCDF, st, "opening %s: %s", path,
                              nc_strerror(st));
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
    if (!v)
        return raster_fail(RASTER_EINVAL, "NULL variable");
    if (!v->file->par)
        return raster_fail(RASTER_EINVAL, "%s: not a parallel file", v->name);
    if (access != NC_COLLECTIVE && access != NC_INDEPENDENT)
        return raster_fail(
            RASTER_EINVAL,
            "%s: access %d is neither NC_COLLECTIVE nor NC_INDEPENDENT",
            v->name, access);
    par_var *pv = par_var_state(v);
    if (!pv)
        return raster_fail(RASTER_ENOMEM, "out of memory");
    pv->access = access;
    return RASTER_OK;
}

int raster_file_set_mpiio(raster_file *f, int mode)
{
    if (!f || !f->par)
        return raster_fail(RASTER_EINVAL, "not a parallel file");
    if (mode < RASTER_MPIIO_AUTO || mode > RASTER_MPIIO_INDEPENDENT)
        return raster_fail(RASTER_EINVAL, "unknown MPI-IO mode %d", mode);
    f->par->mpiio = mode;
    return RASTER_OK;
}

/* ---- public: splitting reads --------------------------------------------- */

int raster_region_split(const raster_var *v, const int32_t *ids, size_t nids,
                        const size_t *ostart, const size_t *ocount, int split,
                        int rank, int nranks, size_t *my_ostart,
                        size_t *my_ocount, int32_t *my_ids, size_t *my_nids)
{
    if (!v || !ids || nids == 0 || !my_ids || !my_nids)
        return raster_fail(RASTER_EINVAL, "NULL argument or no region");
    int no = var_nouter(v);
    if (no > 0 && (!ostart || !ocount || !my_ostart || !my_ocount))
        return raster_fail(RASTER_EINVAL, "NULL outer box");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return raster_fail(RASTER_EINVAL, "rank %d of %d", rank, nranks);
    if (split != RASTER_SPLIT_OUTER && split != RASTER_SPLIT_REGIONS)
        return raster_fail(RASTER_EINVAL, "unknown split %d", split);
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
    if (!v || !ids || nids == 0)
        return raster_fail(RASTER_EINVAL, "NULL argument");
    int rank, size, mc = MPI_Comm_rank(comm, &rank);
    if (mc == MPI_SUCCESS)
        mc = MPI_Comm_size(comm, &size);
    if (mc != MPI_SUCCESS)
        return par_mpi_fail(mc, "splitting a region read");
    size_t os[RASTER_MAX_DIMS], oc[RASTER_MAX_DIMS], n = 0;
    int32_t *mine = my_ids ? my_ids : raster_reallocarray(NULL, nids,
                                                          sizeof *mine);
    if (!mine)
        return raster_fail(RASTER_ENOMEM, "out of memory splitting a read");
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
