/*
 * config.h - the shim's settings from the environment, read once:
 *   RASTER_MASK=FILE:VAR   the region mask (zero-code mode)
 *   RASTER_NAMES=FILE      region names for it (a names table, CSV)
 *   RASTER_VARS=A,B        only these variables (default: the data
 *                          variables on the mask's grid, raster_var_choose)
 *   RASTER_CHUNK=..,H,W    base chunk shape override (last sizes apply)
 *   RASTER_LOG=off|warn|info|debug   (default warn)
 */
#ifndef RASTER_PRELOAD_CONFIG_H
#define RASTER_PRELOAD_CONFIG_H

#include <stddef.h>

#include "raster.h"

enum { LOG_OFF, LOG_WARN, LOG_INFO, LOG_DEBUG };

typedef struct shim_config {
    int log_level;
    raster_mask *mask;      /* config_mask()'s: read it through that */
    const char *mask_spec;  /* RASTER_MASK, NULL when unset or empty */
    const char *mask_var;   /* VAR of RASTER_MASK, NULL without one */
    char **vars;            /* NULL: every matching variable */
    size_t nvars;
    size_t chunk[32];       /* RASTER_CHUNK, nchunk sizes */
    int nchunk;
    const char *weights;    /* RASTER_WEIGHTS, NULL when unset or empty */
    /* RASTER_MASK set but unusable. In an MPI job of several ranks the
     * warning waits: the ranks' agreement on a parallel file reports it
     * once for all (preload/par.h), config_report_mask_error() otherwise */
    int mask_failed;
    char mask_error[512];
} shim_config;

/* The settings, read from the environment on first use (thread-safe).
 * The mask is not among them until config_mask() loads it. */
const shim_config *config_get(void);

/* RASTER_MASK's mask, loaded on the first call (thread-safe; never at
 * library load: a program that defines no variable never opens it); NULL
 * without RASTER_MASK, when it cannot be used (one warning), or once its
 * file changed since it was loaded (one warning). It calls netCDF only
 * through libraster, whose calls route.c sends straight to netCDF. */
const raster_mask *config_mask(void);

/* The mask config_mask() loaded, for variables already chosen with it. */
const raster_mask *config_mask_loaded(void);

/* Prints a deferred RASTER_MASK warning, once per process; with
 * `claim` only marks it as reported (someone else reports it). */
void config_report_mask_error(int claim);

/* 1 when RASTER_VARS allows variable `name`: names it, or is unset (then
 * libraster's rule picks the data variables when they are adopted). */
int config_var_chosen(const shim_config *c, const char *name);

/* "raster: ..." on stderr when `level` is enabled. */
void shim_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
