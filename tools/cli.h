/*
 * cli.h - helpers shared by raster's command-line tools: argument parsing
 * and JSON string output. Not part of libraster's API.
 */
#ifndef RASTER_CLI_H
#define RASTER_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "raster.h"

/* Names the program in the tools' messages ("rasterconvert: ..."). */
void cli_set_prog(const char *prog);
const char *cli_prog(void);

/* Exit codes shared by every tool. */
#define CLI_OK 0
#define CLI_EINPUT 1 /* bad input or I/O error */
#define CLI_EUSAGE 2 /* bad usage */

/* Turns the shim's settings off for this process (RASTER_MASK, RASTER_VARS,
 * RASTER_CHUNK, RASTER_NAMES): the tools decide themselves what they store
 * by region, and a job that exports the shim with a mask (docs/PARALLEL.md)
 * must not turn the plain files they write (rasterconvert --restore,
 * rasterget --layout full, rastergen) into raster files. Called first in
 * main, before any netCDF call (the shim reads them at its first). */
void cli_shim_settings_off(void);

/* Splits "FILE:VAR" at its last ':' into malloc'd strings; 0 on success,
 * -1 when either part is empty or memory runs out. */
int cli_split_spec(const char *spec, char **file, char **var);

/* The --mask FILE:VAR option of tool `prog`: replaces *file and *var (freeing
 * the old ones); CLI_OK, or CLI_EUSAGE with a message on stderr. */
int cli_mask_option(const char *prog, const char *arg, char **file,
                    char **var);

/* Usage text of --names, shared by the tools that take --mask. */
#define CLI_NAMES_HELP \
"  --names FILE      region names from a CSV table of id,name[,abbreviation]\n" \
"                    lines (a header and # comments allowed); they replace\n" \
"                    the mask's own names (CF flag_meanings); --region takes\n" \
"                    a name or an abbreviation\n"

/* Loads mask `var` of netCDF file `file` with raster_mask_load() and, when
 * `names` is not NULL, replaces its region names with those of that names
 * table (raster_mask_set_names_file()). Returns the raster status; on
 * failure *out is NULL and raster_errmsg() says why. */
int cli_load_mask(const char *file, const char *var, const char *names,
                  raster_mask **out);

/* Parses "A,B,..." of positive sizes into out[0..max); stores the count in
 * *n; 0 on success, -1 on syntax error, zero, or more than max values. */
int cli_parse_sizes(const char *text, size_t *out, size_t max, size_t *n);

/* Parses a whole decimal int32; 0 on success, -1 otherwise. */
int cli_parse_int32(const char *text, int32_t *out);

/* Parses "A,B,..." of non-negative sizes (zero allowed) into out[0..max);
 * stores the count in *n; 0 on success, -1 on syntax error or more than max
 * values. */
int cli_parse_indices(const char *text, size_t *out, size_t max, size_t *n);

/* Parses a byte count with an optional K, M or G suffix (powers of 1024),
 * e.g. "64M"; 0 on success, -1 on syntax error, zero or overflow. */
int cli_parse_bytes(const char *text, size_t *out);

/* getopt_long's option string: opts after ':' (getopt then returns ':' for
 * a missing value, and the tools word the message: cli_bad_option()). */
#define CLI_OPTSTRING(opts) (":" opts)

/* The one-line message for getopt_long's '?' (an unknown option) or ':' (a
 * value missing), e.g. "rasterget: unknown option '--foo'; try 'rasterget
 * --help'", on stderr; returns CLI_EUSAGE. Call with getopt_long's result
 * right after it returned, opterr set to 0. */
int cli_bad_option(const char *prog, int opt, char **argv);

/* Writes `s` as a JSON string literal (quotes included). */
void cli_json_string(FILE *f, const char *s);

#endif
