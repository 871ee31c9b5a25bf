/*
 * par.h - the MPI flavour of the shim (shim_mpi.inc, compiled into shim.c
 * for libraster_preload_mpi.so only): wrappers of nc_create_par,
 * nc_open_par, their Fortran forms and nc_var_par_access, and the ranks'
 * agreement on which variables raster takes.
 */
#ifndef RASTER_PRELOAD_PAR_H
#define RASTER_PRELOAD_PAR_H

#ifdef RASTER_MPI
#include "files.h"

/* Before pending variables of sf are adopted (files_adopt): in a parallel
 * file the ranks first compare their pending variables, base chunk shapes
 * and masks (collective). Returns 1 to go on adopting, *varid set to -1:
 * every pending variable, as netCDF's end of definition creates them all
 * (a variable asked for that is not pending: 1 at once, nothing agreed);
 * 0 when nothing is adopted: on disagreement every pending variable stays
 * plain on every rank (one warning, from the file's rank 0). Serial files:
 * always 1, unchanged. */
int par_agree(shim_file *sf, int grpid, int *varid);

/* A variable adopted in a parallel file takes the access the program set
 * on it while it was pending (access < 0: none, netCDF's independent). */
void par_adopted(raster_var *v, int access);
#endif

#endif
