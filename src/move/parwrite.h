/*
 * parwrite.h - the writer of the MPI flavour (parwrite.c) and a parallel
 * file's MPI state. Only libraster_mpi compiles it; the core calls it
 * under `#ifdef RASTER_MPI` and only for files with f->par set.
 */
#ifndef RASTER_PARWRITE_H
#define RASTER_PARWRITE_H

#ifdef RASTER_MPI

#include "piece.h"
#include "var.h"

#include <mpi.h>

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
    par_var *vars;
};

/* Writes the pieces (from hyperslab_pieces) of the box start/count/stride
 * in a parallel file: extension of unlimited dimensions collectively,
 * data collectively or independently (raster_var_par_access, RASTER_MPIIO).
 * Sorts `pieces`. A collective write takes part even with no pieces. */
int par_put(raster_var *v, piece *pieces, size_t npieces,
            const size_t *start, const size_t *count, const ptrdiff_t *stride,
            const void *data, size_t plane_cells);

/* Format 5 in a parallel file: the box written to the variable itself,
 * which holds the values, with the access the program chose
 * (raster_var_par_access), as netCDF would write it without raster;
 * HDF5 then places the chunks. */
int par_put_tiled(raster_var *v, const size_t *start, const size_t *count,
                  const ptrdiff_t *stride, const void *data);

/* Collective writes held back since the process started (the tests'
 * proof that the path served them). */
size_t par_held_writes(void);

/* 1 when a write of nothing must still reach par_put (the variable's
 * writes are collective, so the other ranks wait for this one). */
int par_put_collective(const raster_var *v);

/* At raster_close of a parallel file, on every rank: mask and tables
 * written collectively, the completeness work made identical on all ranks. */
int par_before_close(raster_file *f);

/* The MPI state of v in its parallel file, made on first use; NULL when
 * out of memory. */
par_var *par_var_state(raster_var *v);

/* RASTER_MPIIO from the environment: a RASTER_MPIIO_* mode. */
int par_mpiio_from_env(void);

/* RASTER_EIO with MPI's message for `code`, naming `what`. */
int par_mpi_fail(int code, const char *what);

/* Frees the MPI state of f (NULL-safe). */
void par_free(raster_file *f);

#endif /* RASTER_MPI */
#endif
