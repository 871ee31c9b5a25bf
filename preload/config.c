/*
 * config.c - environment settings and logging for the preload shim.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static shim_config config = {.log_level = LOG_WARN};
static pthread_once_t once = PTHREAD_ONCE_INIT;

void shim_log(int level, const char *fmt, ...)
{
    if (level > config.log_level || config.log_level == LOG_OFF)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "raster: %s\n", line);
}

static void read_log_level(void)
{
    const char *s = getenv("RASTER_LOG");
    if (!s || !*s || strcmp(s, "warn") == 0)
        config.log_level = LOG_WARN;
    else if (strcmp(s, "off") == 0)
        config.log_level = LOG_OFF;
    else if (strcmp(s, "info") == 0)
        config.log_level = LOG_INFO;
    else if (strcmp(s, "debug") == 0)
        config.log_level = LOG_DEBUG;
    else {
        config.log_level = LOG_WARN;
        shim_log(LOG_WARN, "RASTER_LOG=%s is not off|warn|info|debug; using "
                 "warn", s);
    }
}

static void read_vars(void)
{
    const char *s = getenv("RASTER_VARS");
    if (!s || !*s)
        return;
    char *copy = strdup(s);
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    config.vars = calloc(n, sizeof *config.vars);
    if (!copy || !config.vars) {
        free(copy);
        free(config.vars);
        config.vars = NULL;
        shim_log(LOG_WARN, "out of memory reading RASTER_VARS; ignoring it");
        return;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        config.vars[config.nvars++] = tok;
    /* `copy` lives as long as the process: the names point into it; only
     * commas (no name): nothing points into it, and config.vars stays set,
     * so that no variable is chosen (rather than every data variable) */
    if (config.nvars == 0)
        free(copy);
}

static void read_chunk(void)
{
    const char *s = getenv("RASTER_CHUNK");
    if (!s || !*s)
        return;
    const char *p = s;
    int n = 0;
    while (*p) {
        char *end;
        errno = 0;
        /* strtoull takes "-1" (as 2^64 - 1) and saturates on overflow:
         * only plain digits, in range, are sizes */
        unsigned long long v = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10)
                                                      : 0;
        if (*p < '0' || *p > '9' || v == 0 || errno == ERANGE ||
            v > SIZE_MAX || (*end && *end != ',')) {
            shim_log(LOG_WARN, "RASTER_CHUNK=%s is not a list of positive "
                     "sizes; ignoring it", s);
            config.nchunk = 0;
            return;
        }
        if (n == 32) {
            shim_log(LOG_WARN, "RASTER_CHUNK=%s has more than 32 sizes; "
                     "ignoring it", s);
            config.nchunk = 0;
            return;
        }
        config.chunk[n++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    config.nchunk = n >= 2 ? n : 0;
    if (n < 2)
        shim_log(LOG_WARN, "RASTER_CHUNK=%s needs at least H,W; ignoring it",
                 s);
}

/* RASTER_THREADS is read by the library (fanout.c); a value it cannot
 * use means one thread, said once here. */
static void check_threads(void)
{
    const char *s = getenv("RASTER_THREADS");
    if (!s || !*s)
        return;
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (*end || n < 1 || errno == ERANGE)
        shim_log(LOG_WARN, "RASTER_THREADS=%s is not a positive count; "
                 "reading with one thread", s);
}

static atomic_int mask_error_reported;

void config_report_mask_error(int claim)
{
    if (config.mask_failed && !atomic_exchange(&mask_error_reported, 1) &&
        !claim)
        shim_log(LOG_WARN, "%s", config.mask_error);
}

/* 1 in an MPI job of several ranks (MPI flavour): one rank that cannot read
 * the mask must not print a warning of its own while every rank falls
 * back together (the agreement on the file reports it once). */
static int defer_mask_error(void)
{
#ifdef RASTER_MPI
    int init = 0, size = 1;
    if (MPI_Initialized(&init) == MPI_SUCCESS && init &&
        MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS)
        return size > 1;
#endif
    return 0;
}

static void read_mask_spec(void)
{
    const char *s = getenv("RASTER_MASK");
    if (!s || !*s) {
        const char *names = getenv("RASTER_NAMES");
        if (names && *names)
            shim_log(LOG_WARN, "RASTER_NAMES=%s without RASTER_MASK; "
                     "ignoring it", names);
        return;
    }
    config.mask_spec = s;
}

/* The mask file's identity when it was loaded: a file replaced or rewritten
 * since (another inode, size or time) no longer describes the variables
 * defined from then on. */
static struct stat mask_stat;
static char *mask_file;
static atomic_int mask_stale;
static pthread_once_t mask_once = PTHREAD_ONCE_INIT;

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void load_mask(void)
{
    const char *s = config.mask_spec;
    if (!s)
        return;
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1]) {
        shim_log(LOG_WARN, "RASTER_MASK=%s is not FILE:VAR; variables stay "
                 "plain netCDF", s);
        return;
    }
    config.mask_var = colon + 1;
    mask_file = strndup(s, (size_t)(colon - s));
    if (!mask_file) {
        shim_log(LOG_WARN, "out of memory reading RASTER_MASK; variables "
                 "stay plain netCDF");
        return;
    }
    shim_log(LOG_DEBUG, "loading mask %s", s);
    /* RASTER_NAMES: a names table replacing the mask's own names. One
     * that cannot be used fails the mask: regions named otherwise than
     * asked would be stored for good */
    const char *names = getenv("RASTER_NAMES");
    if (names && !*names)
        names = NULL;
    /* raster_mask_load opens nothing but a regular file (a FIFO, device or
     * directory would block or mislead it) */
    int known = stat(mask_file, &mask_stat) == 0;
    int rc = raster_mask_load(mask_file, colon + 1, &config.mask);
    if (rc == RASTER_OK && names &&
        (rc = raster_mask_set_names_file(config.mask, names)) != RASTER_OK)
        raster_mask_free(config.mask);
    const char *why = rc == RASTER_OK ? NULL : raster_errmsg();
    struct stat after;
    if (rc == RASTER_OK && (!known || stat(mask_file, &after) != 0 ||
                            !same_file(&after, &mask_stat))) {
        raster_mask_free(config.mask);
        rc = RASTER_EMASK;
        why = "the file changed while it was read";
    }
    if (rc != RASTER_OK) {
        config.mask_failed = 1;
        snprintf(config.mask_error, sizeof config.mask_error,
                 "cannot use RASTER_MASK=%s%s%s (%s: %s); variables stay "
                 "plain netCDF", s, names ? " with RASTER_NAMES=" : "",
                 names ? names : "", raster_strerror(rc), why);
        if (!defer_mask_error())
            config_report_mask_error(0);
        config.mask = NULL;
    } else {
        size_t ny, nx;
        raster_mask_shape(config.mask, &ny, &nx);
        shim_log(LOG_INFO, "mask %s: %zu x %zu", s, ny, nx);
    }
}

const raster_mask *config_mask(void)
{
    config_get();
    if (!config.mask_spec)
        return NULL;
    pthread_once(&mask_once, load_mask);
    if (!config.mask || atomic_load(&mask_stale))
        return NULL;
    struct stat now;
    if (stat(mask_file, &now) == 0 && same_file(&now, &mask_stat))
        return config.mask;
    if (!atomic_exchange(&mask_stale, 1))
        shim_log(LOG_WARN, "RASTER_MASK=%s changed since it was loaded; "
                 "variables defined from now on stay plain netCDF",
                 config.mask_spec);
    return NULL;
}

const raster_mask *config_mask_loaded(void)
{
    config_get();
    if (config.mask_spec)
        pthread_once(&mask_once, load_mask); /* done already: pending
                                                 variables came from it */
    return config.mask;
}

/* RASTER_WEIGHTS: the weight variable of the statistics kept for every
 * variable adopted (raster_var_set_stats_weights). */
static void read_weights(void)
{
    const char *s = getenv("RASTER_WEIGHTS");
    if (!s || !*s)
        return;
    config.weights = strdup(s); /* kept for the process's life */
    if (!config.weights)
        shim_log(LOG_WARN, "out of memory reading RASTER_WEIGHTS; ignoring "
                 "it");
}

static void init(void)
{
    read_log_level();
    read_vars();
    read_weights();
    read_chunk();
    check_threads();
    read_mask_spec(); /* the mask itself is loaded on first need */
}

const shim_config *config_get(void)
{
    pthread_once(&once, init);
    return &config;
}

int config_var_chosen(const shim_config *c, const char *name)
{
    if (!c->vars)
        return 1;
    for (size_t i = 0; i < c->nvars; i++)
        if (strcmp(c->vars[i], name) == 0)
            return 1;
    return 0;
}
