/*
 * parallel.h - hooks of the MPI flavour (parallel.c) into the serial core.
 * Only libraster_mpi compiles parallel.c; the hooks are called under
 * `#ifdef RASTER_MPI` and only for files with f->par set.
 */
#ifndef RASTER_PARALLEL_H
#define RASTER_PARALLEL_H

#ifdef RASTER_MPI

#include "chunkio.h"
#include "var.h"

/* Writes the pieces (from hyperslab_pieces) of the box start/count/stride
 * in a parallel file: extension of unlimited dimensions collectively,
 * data collectively or independently (raster_var_par_access, RASTER_MPIIO).
 * Sorts `pieces`. A collective write takes part even with no pieces. */
int par_put(raster_var *v, piece *pieces, size_t npieces,
            const size_t *start, const size_t *count, const ptrdiff_t *stride,
            const void *data, size_t plane_cells);

/* 1 when a write of nothing must still reach par_put (the variable's
 * writes are collective, so the other ranks wait for this one). */
int par_put_collective(const raster_var *v);

/* 0 while mask and index tables must wait for raster_close (writing them
 * is collective in a parallel file), 1 when they may be written now. */
int par_may_materialize(const raster_file *f);

/* At raster_close of a parallel file, on every rank: mask and tables
 * written collectively, the completeness work made identical on all ranks. */
int par_before_close(raster_file *f);

/* Frees the MPI state of f (NULL-safe). */
void par_free(raster_file *f);

#endif /* RASTER_MPI */
#endif
