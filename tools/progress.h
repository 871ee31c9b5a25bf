/*
 * progress.h - progress reports and the closing summary of the tools that
 * copy data (rasterconvert, rasterget, rastergen). On a terminal a bar
 * redrawn in place; elsewhere (a batch job's log) a line at every tenth of
 * the work and at least every 10 s. Both start once the job has run a
 * second (RASTER_PROGRESS_DELAY=S sets that delay, in seconds; 0 shows
 * them from the start). Not part of libraster's API.
 */
#ifndef RASTER_PROGRESS_H
#define RASTER_PROGRESS_H

#include <stddef.h>

typedef struct copy_progress {
    int tty;                 /* stderr is a terminal: the bar */
    int shown;
    int decile;              /* lines: the last tenth reported */
    unsigned long long total, done;
    double t0, last, delay;
} copy_progress;

/* Turns every report and the summary off (--quiet). */
void progress_set_quiet(int quiet);

/* Starts the clock of the summary's time: call first in main. */
void progress_start(void);

/* Starts a progress count of `total` bytes. */
void copy_progress_init(copy_progress *p, unsigned long long total);
void copy_progress_add(copy_progress *p, unsigned long long bytes);
/* Finishes the bar or the lines (the 100% line when lines were shown). */
void copy_progress_end(copy_progress *p);

/* Prints "PROG: message, T s" on stderr (T since progress_start()) unless
 * quiet: the one-line summary of a job that succeeded. */
void progress_summary(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* "1.5 MiB" (binary units) into buf[len]. */
void progress_human(unsigned long long bytes, char *buf, size_t len);

#endif
